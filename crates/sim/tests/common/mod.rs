//! Scenario builders for engine tests (independent of the TOML parser).

#![allow(dead_code)]

use std::time::Duration;

use cc::config::{CcConfig, CommonCcConfig, RenoCounting};
use netem::config::{LinkConfig, QueueLimit, RateProfile};
use scenario::model::*;

pub fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

pub fn link(rate_bps: u64, delay: Duration, queue_pkts: Option<u64>) -> LinkConfig {
    let mut l = LinkConfig::ideal();
    l.rate = RateProfile::Fixed(rate_bps);
    l.delay = delay;
    l.queue = QueueLimit { packets: queue_pkts, bytes: None };
    l
}

pub fn newreno() -> CcChoice {
    CcChoice::Ours(CcConfig::NewReno {
        counting: RenoCounting::Exact,
        common: CommonCcConfig { initial_window_packets: 10, loss_reduction_factor: 0.5, minimum_window_packets: 2 },
    })
}

pub fn flow(name: &str, workload: Workload) -> FlowSpec {
    FlowSpec {
        name: name.into(),
        stack: Stack::Quic,
        workload,
        start: Duration::ZERO,
        stop: None,
        cc: newreno(),
        quic: QuicKnobs {
            mtu: 1500,
            mtu_discovery: false,
            initial_rtt: ms(333),
            stream_window: 16_000_000,
            conn_window: 24_000_000,
            send_window: 32_000_000,
            ack_ratio: None,
            max_ack_delay: None,
            zero_rtt: false,
        },
        client_access: DuplexLink { up: LinkConfig::ideal(), down: LinkConfig::ideal() },
        server_access: DuplexLink { up: LinkConfig::ideal(), down: LinkConfig::ideal() },
    }
}

pub fn dumbbell(rate_bps: u64, one_way: Duration, queue: u64, flows: Vec<FlowSpec>, duration: Duration) -> Scenario {
    Scenario {
        name: "test".into(),
        duration,
        sample_interval: ms(100),
        measure_from: Duration::ZERO,
        measure_until: None,
        bottleneck: DuplexLink { up: link(rate_bps, one_way, Some(queue)), down: link(rate_bps, one_way, Some(queue)) },
        flows,
        cross: vec![],
    }
}

pub fn run(s: &Scenario, seed: u64) -> sim::RunResult {
    let point = SweepPoint { axes: vec![], scenario: s.clone() };
    let spec = RunSpec { id: "p0-r0".into(), point: 0, rep: 0, seed };
    sim::run(&point, &spec, &sim::RunOptions { series: true, ..Default::default() }).expect("run")
}
