//! Scenarios built in code (ns-3's "helpers"): the validation suite, benchmarks and tests use
//! these to state exactly the knobs a model assumes, without going through TOML.

use std::time::Duration;

use crate::model::{
    CcChoice, DuplexLink, FcUpdate, FlowSpec, FlowTransport, QuicCommonKnobs, QuicKnobs,
    QuicModelKnobs, QuicheKnobs, Scenario, Stack, TcpKnobs, Workload,
};
use congestion::config::{CcConfig, CommonCcConfig, RenoCounting};
use netem::config::{LinkConfig, LossConfig, QueueLimit, RateProfile};

/// Milliseconds as a Duration.
pub fn ms(v: f64) -> Duration {
    Duration::from_secs_f64(v / 1e3)
}

/// One link direction with a fixed rate, delay and packet-limited drop-tail queue.
pub fn link(rate_bps: u64, one_way: Duration, queue_packets: Option<u64>) -> LinkConfig {
    let mut l = LinkConfig::ideal();
    l.rate = RateProfile::Fixed(rate_bps);
    l.delay = one_way;
    l.queue = QueueLimit {
        packets: queue_packets,
        bytes: None,
    };
    l
}

/// NewReno as seed 001 configures it (exact byte counting, IW 10, β = 0.5).
pub fn newreno_exact() -> CcChoice {
    CcChoice::Ours(CcConfig::NewReno {
        counting: RenoCounting::Exact,
        common: CommonCcConfig {
            initial_window_packets: 10,
            loss_reduction_factor: 0.5,
            minimum_window_packets: 2,
        },
    })
}

/// CUBIC (RFC 9438) with HyStart++, IW 10, β = 0.7.
pub fn cubic_hystart() -> CcChoice {
    CcChoice::Ours(CcConfig::Cubic {
        hystart: true,
        profile: congestion::config::CubicProfile::Rfc9438,
        common: CommonCcConfig {
            initial_window_packets: 10,
            loss_reduction_factor: 0.7,
            minimum_window_packets: 2,
        },
    })
}

/// CUBIC as Linux's `tcp_cubic.c` with Linux's HyStart, IW 10 (TCP's default; what kernel TCP
/// runs in the emulator).
pub fn linux_cubic() -> CcChoice {
    CcChoice::Ours(CcConfig::Cubic {
        hystart: true,
        profile: congestion::config::CubicProfile::Linux,
        common: CommonCcConfig {
            initial_window_packets: 10,
            loss_reduction_factor: 0.7,
            minimum_window_packets: 2,
        },
    })
}

/// Reno as Linux's `tcp_reno_cong_avoid`, IW 10 (TCP's `newreno` default).
pub fn linux_reno() -> CcChoice {
    CcChoice::Ours(CcConfig::NewReno {
        counting: RenoCounting::Linux,
        common: CommonCcConfig {
            initial_window_packets: 10,
            loss_reduction_factor: 0.5,
            minimum_window_packets: 2,
        },
    })
}

/// A saturated QUIC sender on the client (seed 001's traffic generator → discard server).
pub fn bulk_flow(name: &str, mtu: u16, cc: CcChoice) -> FlowSpec {
    // The default MTU discovery is off: the models assume a fixed packet size. Windows are
    // larger than the defaults so they never limit a model's sender.
    let knobs = QuicKnobs {
        mtu,
        common: roomy_windows(),
        ..QuicKnobs::default()
    };
    with_transport(
        name,
        Workload::Bulk { upload: true },
        cc,
        FlowTransport::Quic(knobs),
    )
}

/// A flow of `transport` starting at zero with ideal access links.
pub fn with_transport(
    name: &str,
    workload: Workload,
    cc: CcChoice,
    transport: FlowTransport,
) -> FlowSpec {
    FlowSpec {
        name: name.into(),
        workload,
        start: Duration::ZERO,
        stop: None,
        cc,
        transport,
        client_access: DuplexLink {
            up: LinkConfig::ideal(),
            down: LinkConfig::ideal(),
        },
        server_access: DuplexLink {
            up: LinkConfig::ideal(),
            down: LinkConfig::ideal(),
        },
    }
}

/// The QUIC stacks' common defaults with windows that never limit a model's sender.
fn roomy_windows() -> QuicCommonKnobs {
    QuicCommonKnobs {
        stream_window: 64_000_000,
        conn_window: 128_000_000,
        send_window: 64_000_000,
        ..QuicCommonKnobs::default()
    }
}

/// A TCP flow with Linux-like defaults.
pub fn tcp_flow(name: &str, workload: Workload, mtu: u16, cc: CcChoice) -> FlowSpec {
    let transport = FlowTransport::Tcp {
        knobs: TcpKnobs::with_mtu(mtu),
        pep: None,
    };
    with_transport(name, workload, cc, transport)
}

/// `f` carried by `stack`: unchanged if it already is, else with the knobs this module gives
/// that stack ([`bulk_flow`], [`tcp_flow`], [`quic_model`]) at the flow's MTU.
pub fn on_stack(f: FlowSpec, stack: Stack) -> FlowSpec {
    if f.stack() == stack {
        return f;
    }
    let mtu = f.mtu();
    let transport = match stack {
        Stack::Quic => bulk_flow("", mtu, f.cc).transport,
        Stack::Tcp => tcp_flow("", f.workload, mtu, f.cc).transport,
        Stack::QuicModel => FlowTransport::QuicModel(model_knobs(mtu)),
        Stack::Quiche => FlowTransport::Quiche(QuicheKnobs {
            mtu,
            stream_window: roomy_windows().stream_window,
            conn_window: roomy_windows().conn_window,
            ..QuicheKnobs::default()
        }),
    };
    FlowSpec { transport, ..f }
}

/// The research model's knobs of [`quic_model`]: quinn's behaviour, windows that never limit
/// (those of [`bulk_flow`]).
pub fn model_knobs(mtu: u16) -> QuicModelKnobs {
    QuicModelKnobs {
        mtu,
        common: roomy_windows(),
        ..QuicModelKnobs::default()
    }
}

/// A flow of the QUIC research model (`stack = "quic-model"`) with the given workload and
/// otherwise the knobs of [`bulk_flow`] (quinn's behaviour, windows that never limit).
pub fn quic_model(name: &str, workload: Workload, mtu: u16, cc: CcChoice) -> FlowSpec {
    let transport = FlowTransport::QuicModel(model_knobs(mtu));
    with_transport(name, workload, cc, transport)
}

/// The research model configured with INET's assumptions (seed 001): ACK every ack-eliciting
/// packet, no pacing, flow-control credit after half a window piggy-backed on the next packet;
/// windows as in [`bulk_flow`].
pub fn inet_model_knobs(mtu: u16) -> QuicModelKnobs {
    QuicModelKnobs {
        receiver_ack_ratio: 1,
        pacing: false,
        fc_update: FcUpdate::Threshold,
        fc_threshold: 0.5,
        fc_immediate: false,
        ..model_knobs(mtu)
    }
}

/// A symmetric dumbbell around `bottleneck`.
pub fn scenario(
    name: &str,
    bottleneck: LinkConfig,
    flows: Vec<FlowSpec>,
    duration: Duration,
) -> Scenario {
    Scenario {
        name: name.into(),
        duration,
        sample_interval: ms(1000.0),
        measure_from: Duration::ZERO,
        measure_until: None,
        bottleneck: DuplexLink {
            up: bottleneck.clone(),
            down: bottleneck,
        },
        flows,
        cross: vec![],
        probes: vec![],
        figures: vec![],
    }
}

/// Periodic loss in the data direction only (seed 001's Mathis assumption (c)).
pub fn with_periodic_loss_up(mut s: Scenario, p: f64) -> Scenario {
    s.bottleneck.up.loss = LossConfig::Periodic { p };
    s
}

/// A flow with the given workload and otherwise the same knobs as [`bulk_flow`].
pub fn flow(name: &str, workload: Workload, mtu: u16, cc: CcChoice) -> FlowSpec {
    FlowSpec {
        workload,
        ..bulk_flow(name, mtu, cc)
    }
}

/// A symmetric dumbbell with a fixed-rate bottleneck and a packet-limited queue.
pub fn dumbbell(
    rate_bps: u64,
    one_way: Duration,
    queue_packets: u64,
    flows: Vec<FlowSpec>,
    duration: Duration,
) -> Scenario {
    scenario(
        "dumbbell",
        link(rate_bps, one_way, Some(queue_packets)),
        flows,
        duration,
    )
}
