//! The four validation cases of seed 001 (REFERENCES.md), each as a list of runs and a check.

use std::time::Duration;

use cc::config::CcConfig;
use netem::config::RateProfile;
use scenario::model::{CcChoice, CrossPattern, CrossSpec, FlowSpec, Scenario, Stack, Workload};

use scenario::builder::*;

/// How much of each grid to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grid {
    /// Every point and repetition of REFERENCES.md.
    Full,
    /// A reduced grid for the test suite (a few points, few repetitions).
    Quick,
}

/// One simulated run of a case, with what to measure from it.
#[derive(Debug, Clone)]
pub struct CaseRun {
    /// Case name ("link-bandwidth", ...).
    pub case: &'static str,
    /// Point label, e.g. "MTU 1500" or "RTT 20 ms, p 0.1%".
    pub label: String,
    /// Analytic expectation in bit/s (UDP payload or application bytes, per case).
    pub expected_bps: f64,
    pub scenario: Scenario,
    pub seed: u64,
    pub measure: Measure,
}

/// Which figure of a run is compared with the expectation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Measure {
    /// UDP payload throughput at the receiver inside the scenario's measurement window.
    WindowPayloadThroughput,
    /// Application goodput inside the measurement window.
    WindowGoodput,
    /// Payload throughput in steady state: from the first congestion event plus a settling
    /// quarter of the remaining time to the end of the run, using the series bins after that.
    PayloadThroughputAfterFirstLoss,
    /// Per-flow UDP throughput per 1-s bin (fair share; judged across repetitions).
    FairShareBins,
}

/// IPv4 + TCP + timestamps option: the TCP model's per-segment header bytes.
pub const IP_TCP_TS: u64 = 52;

/// Per-packet header bytes in front of the transport payload the cases measure.
fn header_bytes(stack: Stack) -> f64 {
    match stack {
        Stack::Quic => f64::from(netem::wire::IPV4_UDP_OVERHEAD),
        Stack::Tcp => IP_TCP_TS as f64,
    }
}

/// Case names get a `tcp-` prefix for the TCP model.
fn case_name(stack: Stack, base: &'static str) -> &'static str {
    match (stack, base) {
        (Stack::Quic, b) => b,
        (Stack::Tcp, "link-bandwidth") => "tcp-link-bandwidth",
        (Stack::Tcp, "mathis") => "tcp-mathis",
        (Stack::Tcp, "fair-share") => "tcp-fair-share",
        (Stack::Tcp, b) => b,
    }
}

/// A saturated sender on the client for `stack`.
fn sender(stack: Stack, name: &str, mtu: u16, cc: CcChoice) -> FlowSpec {
    match stack {
        Stack::Quic => bulk_flow(name, mtu, cc),
        Stack::Tcp => {
            let mut f = tcp_flow(name, Workload::Bulk { upload: true }, mtu, cc);
            // The models assume the receiver never limits the sender.
            f.tcp.receive_window_max = 64_000_000;
            f.tcp.send_buffer = 64_000_000;
            f
        }
    }
}

/// Tolerances of REFERENCES.md / the issue.
pub const TOL_LINK_BANDWIDTH: f64 = 0.01;
pub const TOL_FLOW_CONTROL: f64 = 0.02;
pub const TOL_MATHIS: f64 = 0.10;
pub const MIN_JAIN: f64 = 0.95;
/// QUIC and TCP with the same controller on a clean path: goodputs within 5% (issue 3).
pub const TOL_QUIC_VS_TCP: f64 = 0.05;

/// Link bandwidth: 100 Mbit/s, 1 ms, 23-packet queue; TPmax = (MTU − 28)/MTU × BW over 3–8 s.
pub fn link_bandwidth(grid: Grid, stack: Stack) -> Vec<CaseRun> {
    let mtus: &[u16] = match grid {
        Grid::Full => &[1280, 1452, 1500, 9000],
        Grid::Quick => &[1280, 9000],
    };
    mtus.iter()
        .map(|&mtu| {
            let mut s = scenario(
                "link-bandwidth",
                link(100_000_000, ms(1.0), Some(23)),
                vec![sender(stack, "sender", mtu, newreno_exact())],
                Duration::from_secs(8),
            );
            s.measure_from = Duration::from_secs(3);
            s.measure_until = Some(Duration::from_secs(8));
            CaseRun {
                case: case_name(stack, "link-bandwidth"),
                label: format!("MTU {mtu}"),
                expected_bps: (f64::from(mtu) - header_bytes(stack)) / f64::from(mtu) * 100e6,
                scenario: s,
                seed: 1,
                measure: Measure::WindowPayloadThroughput,
            }
        })
        .collect()
}

/// Mathis: NewReno exact counting, periodic loss one way, ACK every packet, 100 Gbit/s,
/// S = 1252 B; TP = S/RTT · sqrt(3/(2p)), measured after the first exit from slow start.
/// For TCP: delayed ACK off (an ACK per segment) and S = MSS = 1448 bytes (MTU 1500, timestamps).
pub fn mathis(grid: Grid, stack: Stack) -> Vec<CaseRun> {
    let rtts: Vec<f64> = match grid {
        Grid::Full => [2.0, 4.0]
            .into_iter()
            .chain((2..=25).map(|k| 4.0 * f64::from(k)))
            .collect(),
        Grid::Quick => vec![2.0, 20.0, 100.0],
    };
    let ps: &[f64] = match grid {
        Grid::Full => &[0.001, 0.0002, 0.00005],
        Grid::Quick => &[0.001, 0.00005],
    };
    let mut runs = Vec::new();
    for &p in ps {
        for &rtt in &rtts {
            let (mtu, seg) = match stack {
                Stack::Quic => (1280, 1252.0),
                Stack::Tcp => (1500, 1448.0),
            };
            let mut f = sender(stack, "sender", mtu, newreno_exact());
            f.quic.ack_ratio = Some(1);
            f.tcp.delayed_ack = false;
            // A loss cycle lasts sqrt(2/(3p)) RTTs; 40 cycles, the first quarter skipped as transient.
            let cycle = rtt / 1e3 * (2.0 / (3.0 * p)).sqrt();
            let duration = Duration::from_secs_f64((40.0 * cycle).max(3.0));
            let mut s = with_periodic_loss_up(
                scenario(
                    "mathis",
                    link(100_000_000_000, ms(rtt / 2.0), None),
                    vec![f],
                    duration,
                ),
                p,
            );
            s.sample_interval = ms(10.0 * rtt);
            runs.push(CaseRun {
                case: case_name(stack, "mathis"),
                label: format!("RTT {rtt} ms, p {}%", p * 100.0),
                expected_bps: 8.0 * seg / (rtt / 1e3) * (3.0 / (2.0 * p)).sqrt(),
                scenario: s,
                seed: 1,
                measure: Measure::PayloadThroughputAfterFirstLoss,
            });
        }
    }
    runs
}

/// Flow-control limit: no CC, unlimited bottleneck, one stream; GP = window / RTT.
pub fn flow_control(grid: Grid) -> Vec<CaseRun> {
    let rtts: Vec<f64> = match grid {
        Grid::Full => [2.0, 4.0]
            .into_iter()
            .chain((1..=10).map(|k| 10.0 * f64::from(k)))
            .collect(),
        Grid::Quick => vec![2.0, 50.0, 100.0],
    };
    let windows: &[u64] = match grid {
        Grid::Full => &[65_000, 100_000, 140_000],
        Grid::Quick => &[65_000, 140_000],
    };
    let mut runs = Vec::new();
    for &w in windows {
        for &rtt in &rtts {
            let mut f = bulk_flow("sender", 1500, CcChoice::Ours(CcConfig::None));
            f.quic.stream_window = w;
            let mut l = link(1, ms(rtt / 2.0), None);
            l.rate = RateProfile::Unlimited;
            let mut s = scenario("flow-control", l, vec![f], Duration::from_secs(4));
            s.measure_from = Duration::from_secs(1);
            runs.push(CaseRun {
                case: "flow-control",
                label: format!("window {} kB, RTT {rtt} ms", w / 1000),
                expected_bps: w as f64 * 8.0 / (rtt / 1e3),
                scenario: s,
                seed: 1,
                measure: Measure::WindowGoodput,
            });
        }
    }
    runs
}

/// Start/stop times of the three fair-share senders (seconds).
pub const FAIR_SHARE_SENDERS: [(u64, u64); 3] = [(20, 120), (40, 160), (80, 180)];

/// Fair share: 10 Mbit/s, 10 ms; three staggered senders plus random UDP; repetitions.
pub fn fair_share(grid: Grid, stack: Stack) -> Vec<CaseRun> {
    let reps = match grid {
        Grid::Full => 100,
        Grid::Quick => 4,
    };
    let mtu = 1500;
    // One BDP of 1500-byte packets: 10 Mbit/s × 20 ms = 25 kB ≈ 17 packets.
    let bottleneck = link(10_000_000, ms(10.0), Some(17));
    let flows = FAIR_SHARE_SENDERS
        .iter()
        .enumerate()
        .map(|(i, &(start, stop))| {
            let mut f = sender(stack, &format!("sender{}", i + 1), mtu, newreno_exact());
            f.start = Duration::from_secs(start);
            f.stop = Some(Duration::from_secs(stop));
            f
        })
        .collect();
    let mut s = scenario("fair-share", bottleneck, flows, Duration::from_secs(180));
    s.cross.push(CrossSpec {
        name: "random-udp".into(),
        up: true,
        start: Duration::ZERO,
        stop: None,
        pattern: CrossPattern::Uniform {
            payload_min: 100,
            payload_max: 1000,
            gap_min: ms(25.0),
            gap_max: ms(100.0),
        },
    });
    (0..reps)
        .map(|rep| CaseRun {
            case: case_name(stack, "fair-share"),
            label: format!("rep {rep}"),
            expected_bps: (f64::from(mtu) - header_bytes(stack)) / f64::from(mtu) * 10e6,
            scenario: s.clone(),
            seed: 1000 + rep,
            measure: Measure::FairShareBins,
        })
        .collect()
}

/// QUIC and TCP running the same controller on a clean 10 Mbit/s, 30 ms RTT, one-BDP path:
/// bulk goodput from 5 s to 30 s must agree within 5% (run in pairs, compared in `lib.rs`).
pub fn quic_vs_tcp(grid: Grid) -> Vec<CaseRun> {
    let controllers: Vec<(&str, CcChoice)> = match grid {
        Grid::Full | Grid::Quick => vec![("newreno", newreno_exact()), ("cubic", cubic_hystart())],
    };
    let mut runs = Vec::new();
    for (name, cc) in controllers {
        for stack in [Stack::Quic, Stack::Tcp] {
            // 10 Mbit/s × 30 ms = 37.5 kB = 25 packets of 1500 B.
            let mut s = scenario(
                "quic-vs-tcp",
                link(10_000_000, ms(15.0), Some(25)),
                vec![sender(stack, "sender", 1500, cc)],
                Duration::from_secs(30),
            );
            s.measure_from = Duration::from_secs(5);
            runs.push(CaseRun {
                case: "quic-vs-tcp",
                label: format!(
                    "{name} {}",
                    if stack == Stack::Quic { "quic" } else { "tcp" }
                ),
                expected_bps: f64::NAN,
                scenario: s,
                seed: 1,
                measure: Measure::WindowGoodput,
            });
        }
    }
    runs
}
