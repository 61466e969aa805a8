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
}

impl Stack {
    /// The value of `flow.stack` that selects this stack.
    pub fn name(self) -> &'static str {
        match self {
            Stack::Quic => "quic",
            Stack::Tcp => "tcp",
            Stack::QuicModel => "quic-model",
        }
    }
}

/// One transport flow between a client on the left and a server on the right of the dumbbell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowSpec {
    /// Unique name (used in results and file names).
    pub name: String,
    /// Transport implementation.
    pub stack: Stack,
    /// What the application does.
    pub workload: Workload,
    /// When the client starts its first connection.
    pub start: Duration,
    /// When a bulk flow stops sending (`None` = until the end of the run).
    pub stop: Option<Duration>,
    /// Congestion controller of this flow's senders.
    pub cc: CcChoice,
    /// QUIC transport knobs (used when `stack` is `Quic`).
    pub quic: QuicKnobs,
    /// TCP model knobs (used when `stack` is `Tcp`).
    pub tcp: TcpKnobs,
    /// QUIC research-model knobs (used when `stack` is `QuicModel`). Absent in a `sweep.json`
    /// written before the model existed: the defaults.
    #[serde(default)]
    pub quic_model: QuicModelKnobs,
    /// A split-connection PEP on this (TCP) flow's path, if any.
    pub pep: Option<PepSpec>,
    /// Client-side access link (client ↔ bottleneck).
    pub client_access: DuplexLink,
    /// Server-side access link (bottleneck ↔ server).
    pub server_access: DuplexLink,
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
}

/// Cross-traffic sources live in netem, where both engines generate them.
pub use netem::cross::{CrossPattern, CrossSpec};

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
