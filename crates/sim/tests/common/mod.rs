//! Shorthands for engine tests; scenarios come from `scenario::builder`.

#![allow(dead_code)]

use std::time::Duration;

pub use scenario::builder::{dumbbell as build_dumbbell, newreno_exact};
use scenario::model::*;

pub fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

pub fn flow(name: &str, workload: Workload) -> FlowSpec {
    let mut f = scenario::builder::flow(name, workload, 1500, newreno_exact());
    f.quic_mut().expect("a quic flow").common.stream_window = 16_000_000;
    f.quic_mut().expect("a quic flow").common.conn_window = 24_000_000;
    f.quic_mut().expect("a quic flow").common.send_window = 32_000_000;
    f
}

pub fn dumbbell(
    rate_bps: u64,
    one_way: Duration,
    queue: u64,
    flows: Vec<FlowSpec>,
    duration: Duration,
) -> Scenario {
    let mut s = build_dumbbell(rate_bps, one_way, queue, flows, duration);
    s.sample_interval = ms(100);
    s
}

pub fn run(s: &Scenario, seed: u64) -> results::Run {
    let point = SweepPoint {
        axes: vec![],
        scenario: s.clone(),
    };
    let spec = RunSpec {
        id: "p0-r0".into(),
        point: 0,
        rep: 0,
        seed,
    };
    sim::run(
        &point,
        &spec,
        &sim::RunOptions {
            series: true,
            ..Default::default()
        },
    )
    .expect("run")
}

/// tshark's `field` of the frames of `pcap` matching `filter`; `decode_as` adds tshark
/// arguments before the filter (e.g. `["-d", "udp.port==443,data"]`).
pub fn tshark(
    pcap: &std::path::Path,
    decode_as: &[&str],
    filter: &str,
    field: &str,
) -> Vec<String> {
    let out = std::process::Command::new("tshark")
        .args(["-n", "-r"])
        .arg(pcap)
        .args(decode_as)
        .args(["-Y", filter, "-T", "fields", "-e", field])
        .output()
        .expect("tshark must be installed (scripts/setup.sh)");
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}
