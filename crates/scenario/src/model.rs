//! The resolved scenario: what the engines consume. All units are base units (see `netem::config`).
//! This module is the contract between the parser and the engines; the parser fills it, the
//! engines never see TOML.

use std::time::Duration;

use netem::config::LinkConfig;
use serde::{Deserialize, Serialize};
use transport::flow::FlowPlan;

/// The transports own their knob types; the scenario embeds them (re-exported here so the
/// engines name them through the scenario model).
pub use transport::cc_adapter::CcChoice;
pub use transport::quic::QuicKnobs;
pub use transport::quic_common::QuicCommonKnobs;
pub use transport::quiche::QuicheKnobs;
pub use transport::quicmodel::{FcUpdate, QuicModelKnobs, StreamScheduler};
pub use transport::tcp::{HttpVersion, PepPosition, PepSpec, TcpKnobs, TlsMode};
pub use transport::workload::Workload;

/// One fully resolved run: a scenario with every sweep axis fixed, plus its seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    /// Free-form name (defaults to the file stem).
    pub name: String,
    /// Hard stop of the simulation (virtual time).
    pub duration: Duration,
    /// Period of time-series samples (cwnd, RTT, queue) and width of throughput bins.
    pub sample_interval: Duration,
    /// Start of the measurement window used for `goodput_window_bps` (e.g. to skip slow start).
    pub measure_from: Duration,
    /// End of the measurement window (`None` = end of the flow).
    pub measure_until: Option<Duration>,
    /// The bottleneck link, one config per direction.
    pub bottleneck: DuplexLink,
    /// Transport flows.
    pub flows: Vec<FlowSpec>,
    /// Cross-traffic sources crossing the bottleneck.
    pub cross: Vec<CrossSpec>,
    /// Latency probes between the client and the server of a flow.
    pub probes: Vec<ProbeSpec>,
    /// The figures the scenario asks for (`[[figure]]`); the engines ignore them. Not part of
    /// the serialised scenario (`sweep.json`, which resuming compares: a figure changes no
    /// result); the results directory keeps them in `figures.json`.
    #[serde(skip)]
    pub figures: Vec<FigureSpec>,
}

/// A link with its two directions: `up` is client → server, `down` is server → client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DuplexLink {
    /// Client → server.
    pub up: LinkConfig,
    /// Server → client.
    pub down: LinkConfig,
}

/// Which transport implementation carries a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Stack {
    /// The real quinn-proto state machine driven in virtual time.
    Quic,
    /// quiclab's Linux-like TCP model (with TLS modelled as message exchanges).
    Tcp,
    /// quiclab's QUIC research model (`quic-model`): RFC 9000/9002 semantics and real wire
    /// sizes without cryptography, with INET's and ModQUIC's knobs. Simulator only.
    QuicModel,
    /// Cloudflare's quiche QUIC library in virtual time (link-time interposition of its clock
    /// and random bytes). Simulator only.
    Quiche,
}

choice::names!(Stack { Quic = "quic", Tcp = "tcp", QuicModel = "quic-model", Quiche = "quiche" });

/// One transport flow between a client on the left and a server on the right of the dumbbell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowSpec {
    /// Unique name (used in results and file names).
    pub name: String,
    /// What the application does.
    pub workload: Workload,
    /// When the client starts its first connection.
    pub start: Duration,
    /// When a bulk flow stops sending (`None` = until the end of the run).
    pub stop: Option<Duration>,
    /// Congestion controller of this flow's senders.
    pub cc: CcChoice,
    /// The transport implementation with the knobs only it has.
    pub transport: FlowTransport,
    /// Client-side access link (client ↔ bottleneck).
    pub client_access: DuplexLink,
    /// Server-side access link (bottleneck ↔ server).
    pub server_access: DuplexLink,
}

/// A flow's transport implementation and its knobs: one variant per stack, so a TCP flow cannot
/// carry QUIC knobs (nor a QUIC flow a PEP).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum FlowTransport {
    /// quinn-proto with its knobs.
    Quic(QuicKnobs),
    /// The TCP model with its knobs and an optional split-connection PEP on the path.
    Tcp {
        /// TCP model knobs.
        knobs: TcpKnobs,
        /// A split-connection PEP on this flow's path, if any.
        pep: Option<PepSpec>,
    },
    /// The QUIC research model with its knobs.
    QuicModel(QuicModelKnobs),
    /// quiche with its knobs.
    Quiche(QuicheKnobs),
}

impl FlowTransport {
    /// The stack this transport belongs to.
    pub fn stack(&self) -> Stack {
        match self {
            FlowTransport::Quic(_) => Stack::Quic,
            FlowTransport::Tcp { .. } => Stack::Tcp,
            FlowTransport::QuicModel(_) => Stack::QuicModel,
            FlowTransport::Quiche(_) => Stack::Quiche,
        }
    }

    /// IP MTU of the flow's path (every stack has one).
    pub fn mtu(&self) -> u16 {
        match self {
            FlowTransport::Quic(k) => k.mtu,
            FlowTransport::Tcp { knobs, .. } => knobs.mtu,
            FlowTransport::QuicModel(k) => k.mtu,
            FlowTransport::Quiche(k) => k.mtu,
        }
    }
}

impl FlowSpec {
    /// What every transport builds this flow from besides its own knobs.
    pub fn plan(&self) -> FlowPlan {
        FlowPlan {
            name: self.name.clone(),
            workload: self.workload,
            start: self.start,
            stop: self.stop,
            cc: self.cc,
        }
    }

    /// The flow's stack.
    pub fn stack(&self) -> Stack {
        self.transport.stack()
    }

    /// IP MTU of the flow's path.
    pub fn mtu(&self) -> u16 {
        self.transport.mtu()
    }

    /// quinn's knobs, on a `quic` flow.
    pub fn quic(&self) -> Option<&QuicKnobs> {
        match &self.transport {
            FlowTransport::Quic(k) => Some(k),
            _ => None,
        }
    }

    /// quinn's knobs to change, on a `quic` flow.
    pub fn quic_mut(&mut self) -> Option<&mut QuicKnobs> {
        match &mut self.transport {
            FlowTransport::Quic(k) => Some(k),
            _ => None,
        }
    }

    /// The TCP model's knobs, on a `tcp` flow.
    pub fn tcp(&self) -> Option<&TcpKnobs> {
        match &self.transport {
            FlowTransport::Tcp { knobs, .. } => Some(knobs),
            _ => None,
        }
    }

    /// The TCP model's knobs to change, on a `tcp` flow.
    pub fn tcp_mut(&mut self) -> Option<&mut TcpKnobs> {
        match &mut self.transport {
            FlowTransport::Tcp { knobs, .. } => Some(knobs),
            _ => None,
        }
    }

    /// The research model's knobs, on a `quic-model` flow.
    pub fn quic_model(&self) -> Option<&QuicModelKnobs> {
        match &self.transport {
            FlowTransport::QuicModel(k) => Some(k),
            _ => None,
        }
    }

    /// The research model's knobs to change, on a `quic-model` flow.
    pub fn quic_model_mut(&mut self) -> Option<&mut QuicModelKnobs> {
        match &mut self.transport {
            FlowTransport::QuicModel(k) => Some(k),
            _ => None,
        }
    }

    /// quiche's knobs, on a `quiche` flow.
    pub fn quiche(&self) -> Option<&QuicheKnobs> {
        match &self.transport {
            FlowTransport::Quiche(k) => Some(k),
            _ => None,
        }
    }

    /// The PEP on this flow's path (only a `tcp` flow can have one).
    pub fn pep(&self) -> Option<&PepSpec> {
        match &self.transport {
            FlowTransport::Tcp { pep, .. } => pep.as_ref(),
            _ => None,
        }
    }
}

pub use crate::figure::{AxisScale, FigureKind, FigureSpec};
/// Cross-traffic sources live in netem, where both engines generate them.
pub use netem::cross::{CrossPattern, CrossSpec};
pub use netem::probe::{ProbeMessage, ProbeSpec};

/// One point of a sweep: the axis values that produced it (for tables) and the scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    /// `key = value` pairs of the sweep axes, in axis order (empty without a sweep).
    pub axes: Vec<(String, String)>,
    /// The resolved scenario of this point.
    pub scenario: Scenario,
}

/// One run to execute: a sweep point, a repetition index and the seed derived from both.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    /// Stable identifier: `p{point}-r{rep}`; resume keys on it.
    pub id: String,
    /// Index into `LoadedScenario::points`.
    pub point: usize,
    /// Repetition index, from 0.
    pub rep: u32,
    /// Seed of this run (see `scenario::run_seed`).
    pub seed: u64,
}
