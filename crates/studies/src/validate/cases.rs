//! The four validation cases of seed 001 (REFERENCES.md), each as a list of runs and a check.

use std::time::Duration;

use congestion::config::CcConfig;
use netem::config::{LossConfig, RateProfile};
use scenario::model::{CcChoice, CrossPattern, CrossSpec, FlowSpec, Scenario, Stack, Workload};

use scenario::builder::*;

use super::DrawnAt;

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
    /// High-loss cases: the reference models and the path, for the report's detail.
    pub loss: Option<LossPoint>,
    /// Where the point sits in the paper's figure of the case, if the paper draws one.
    pub drawn_at: Option<DrawnAt>,
}

/// What a high-loss point compares with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LossPoint {
    /// Periodic or random loss.
    pub kind: LossKind,
    /// Loss probability.
    pub p: f64,
    /// Base round-trip time in seconds.
    pub rtt_s: f64,
    /// The reference models at this point.
    pub models: LossModels,
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
    /// Application goodput of a download (first packet → last byte) and its completion time
    /// (the model-vs-quinn cross-check compares both).
    DownloadGoodput,
    /// A queue discipline's behaviour, judged by [`super::aqm::judge`].
    Aqm(super::aqm::AqmCheck),
}

/// IPv4 + TCP + timestamps option: the TCP model's per-segment header bytes.
pub const IP_TCP_TS: u64 = 52;

/// Per-packet header bytes in front of the transport payload the cases measure.
fn header_bytes(stack: Stack) -> f64 {
    match stack {
        Stack::Quic | Stack::QuicModel | Stack::Quiche => f64::from(netem::wire::IPV4_UDP_OVERHEAD),
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
        (Stack::Tcp, "high-loss") => "tcp-high-loss",
        (Stack::Tcp, b) => b,
        (Stack::QuicModel, "link-bandwidth") => "model-link-bandwidth",
        (Stack::QuicModel, "mathis") => "model-mathis",
        (Stack::QuicModel, "fair-share") => "model-fair-share",
        (Stack::QuicModel, "high-loss") => "model-high-loss",
        (Stack::QuicModel, b) => b,
        (Stack::Quiche, b) => b,
    }
}

/// A saturated sender on the client for `stack`.
fn sender(stack: Stack, name: &str, mtu: u16, cc: CcChoice) -> FlowSpec {
    match stack {
        Stack::Quic => bulk_flow(name, mtu, cc),
        Stack::Quiche => scenario::builder::on_stack(bulk_flow(name, mtu, cc), Stack::Quiche),
        Stack::QuicModel => {
            scenario::builder::quic_model(name, Workload::Bulk { upload: true }, mtu, cc)
        }
        Stack::Tcp => {
            let mut f = tcp_flow(name, Workload::Bulk { upload: true }, mtu, cc);
            // The models assume the receiver never limits the sender.
            if let Some(t) = f.tcp_mut() {
                t.receive_window_max = 64_000_000;
                t.send_buffer = 64_000_000;
            }
            f
        }
    }
}

/// Mathis' assumption: the receiver acknowledges every packet (quinn asked by an ACK_FREQUENCY
/// frame, TCP without delayed ACKs; the research model keeps its own receiver knobs).
fn ack_every_packet(f: &mut FlowSpec) {
    if let Some(q) = f.quic_mut() {
        q.common.ack_ratio = Some(1);
    }
    if let Some(t) = f.tcp_mut() {
        t.delayed_ack = false;
    }
}

/// MTU and payload bytes per packet of the Mathis cases: S = 1252 B for QUIC (MTU 1280, seed 001),
/// MSS = 1448 B for TCP (MTU 1500 with timestamps).
fn mss(stack: Stack) -> (u16, f64) {
    match stack {
        Stack::Quic | Stack::QuicModel | Stack::Quiche => (1280, 1252.0),
        Stack::Tcp => (1500, 1448.0),
    }
}

/// Tolerances of the validation cases (the design notes' REFERENCES.md).
pub const TOL_LINK_BANDWIDTH: f64 = 0.01;
pub const TOL_FLOW_CONTROL: f64 = 0.02;
pub const TOL_MATHIS: f64 = 0.10;
/// Loss up to 2%: within 10% of the whole-round sawtooth with recovery round trips, as Mathis at
/// low loss (docs/validation.md justifies it).
pub const TOL_HIGH_LOSS: f64 = 0.10;
pub const MIN_JAIN: f64 = 0.95;
/// QUIC and TCP with the same controller on a clean path: goodputs within 5%.
pub const TOL_QUIC_VS_TCP: f64 = 0.05;
/// The QUIC research model and quinn configured alike: goodput and completion time within 5%.
pub const TOL_MODEL_VS_QUIC: f64 = 0.05;

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
                loss: None,
                drawn_at: Some(DrawnAt::new(f64::from(mtu), "")),
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
            let (mtu, seg) = mss(stack);
            let mut f = sender(stack, "sender", mtu, newreno_exact());
            ack_every_packet(&mut f);
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
                expected_bps: mathis_bps(seg, rtt / 1e3, p),
                scenario: s,
                seed: 1,
                measure: Measure::PayloadThroughputAfterFirstLoss,
                loss: None,
                drawn_at: Some(DrawnAt::new(rtt, format!("p = {}%", p * 100.0))),
            });
        }
    }
    runs
}

/// How the high-loss cases lose packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossKind {
    /// Exactly one drop every 1/p packets (Mathis' assumption).
    Periodic,
    /// Independent drops with probability p (PFTK's assumption).
    Random,
}

/// Reference models of bulk throughput under loss, in bit/s of payload.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LossModels {
    /// Mathis et al.: S/RTT · sqrt(3/(2p)).
    pub mathis_bps: f64,
    /// Padhye et al. (PFTK, SIGCOMM 1998), full model with timeouts, b = 1 packet per ACK.
    pub pftk_bps: f64,
    /// The whole-round sawtooth with the stack's recovery round trips
    /// ([`sawtooth_with_recovery_bps`]); for random loss times [`RANDOM_LOSS_GAIN`].
    pub sawtooth_bps: f64,
}

/// Mathis' square-root law: payload bit/s for segment size `seg` bytes.
pub fn mathis_bps(seg: f64, rtt_s: f64, p: f64) -> f64 {
    8.0 * seg / rtt_s * (3.0 / (2.0 * p)).sqrt()
}

/// PFTK's approximate model (Padhye et al. 1998, eq. 33), b packets per ACK, first timeout
/// `t0_s`: 1 / (RTT·sqrt(2bp/3) + T0·min(1, 3·sqrt(3bp/8))·p·(1 + 32p²)) packets per second.
pub fn pftk_bps(seg: f64, rtt_s: f64, t0_s: f64, p: f64, b: f64) -> f64 {
    let denom = rtt_s * (2.0 * b * p / 3.0).sqrt()
        + t0_s * (3.0 * (3.0 * b * p / 8.0).sqrt()).min(1.0) * p * (1.0 + 32.0 * p * p);
    8.0 * seg / denom
}

/// Mathis' deterministic sawtooth counted in whole round trips, with `r` round trips of loss
/// recovery per cycle in which the window does not grow, ACK every packet, one segment per round
/// trip of growth. With h = W/2: the window takes the values h, h+1, …, 2h in h + 1 rounds (the
/// last is the round in which the drop happens; Mathis' continuous sawtooth leaves it out), then
/// r rounds of recovery send h segments each, so a cycle carries N = 1/p = 1.5·h·(h+1) + r·h
/// segments in h + 1 + r round trips.
pub fn sawtooth_with_recovery_bps(seg: f64, rtt_s: f64, p: f64, r: f64) -> f64 {
    let n = 1.0 / p;
    // 1.5·h² + (1.5 + r)·h − n = 0
    let (a, b) = (1.5, 1.5 + r);
    let h = (-b + (b * b + 4.0 * a * n).sqrt()) / (2.0 * a);
    8.0 * seg * n / ((h + 1.0 + r) * rtt_s)
}

/// Random loss gives longer and shorter cycles whose average throughput exceeds the periodic
/// sawtooth's: Mathis et al. (1997) measured C = 1.31 for random loss against sqrt(3/2) = 1.22 for
/// periodic loss, ACK every packet.
pub const RANDOM_LOSS_GAIN: f64 = 1.31 / 1.224_744_871;

/// Round trips without window growth per loss cycle that a stack's loss recovery implies, with an
/// ACK per packet and no reordering: one to recover (a packet sent after the reduction must be
/// acknowledged before the window grows again); RFC 9002 senders (quinn) additionally send nothing
/// until the bytes in flight fall under the halved window, another half round trip.
pub fn recovery_rtts(stack: Stack) -> f64 {
    match stack {
        // The research model follows RFC 9002 like quinn.
        Stack::Quic | Stack::QuicModel | Stack::Quiche => 1.5,
        Stack::Tcp => 1.0,
    }
}

/// The first retransmission timeout the stacks use on a steady path (PFTK's T0): Linux's
/// RTO = SRTT + max(4·RTTVAR, rto_min) ≈ RTT + 200 ms; RFC 9002's PTO = SRTT + 4·RTTVAR +
/// max_ack_delay ≈ RTT + 25 ms once RTTVAR has settled.
pub fn first_timeout_s(stack: Stack, rtt_s: f64) -> f64 {
    match stack {
        Stack::Quic | Stack::QuicModel | Stack::Quiche => rtt_s + 0.025,
        Stack::Tcp => rtt_s + 0.200,
    }
}

/// The three reference models for one point.
pub fn loss_models(stack: Stack, kind: LossKind, seg: f64, rtt_s: f64, p: f64) -> LossModels {
    let gain = match kind {
        LossKind::Periodic => 1.0,
        LossKind::Random => RANDOM_LOSS_GAIN,
    };
    LossModels {
        mathis_bps: mathis_bps(seg, rtt_s, p),
        pftk_bps: pftk_bps(seg, rtt_s, first_timeout_s(stack, rtt_s), p, 1.0),
        sawtooth_bps: gain * sawtooth_with_recovery_bps(seg, rtt_s, p, recovery_rtts(stack)),
    }
}

/// Loss up to 2%: Mathis' set-up (NewReno exact counting, ACK every packet, a
/// bottleneck that never limits, loss in the data direction only) with periodic and random loss;
/// compared with Mathis, PFTK and the sawtooth with recovery round trips.
pub fn high_loss(grid: Grid, stack: Stack) -> Vec<CaseRun> {
    let (kinds, ps, rtts): (&[LossKind], &[f64], &[f64]) = match grid {
        Grid::Full => (
            &[LossKind::Periodic, LossKind::Random],
            &[0.002, 0.005, 0.01, 0.02],
            &[20.0, 80.0],
        ),
        Grid::Quick => (&[LossKind::Periodic, LossKind::Random], &[0.02], &[20.0]),
    };
    let (mtu, seg) = mss(stack);
    let mut runs = Vec::new();
    for &kind in kinds {
        for &p in ps {
            for &rtt in rtts {
                let mut f = sender(stack, "sender", mtu, newreno_exact());
                ack_every_packet(&mut f);
                // 400 loss cycles of sqrt(2/(3p)) round trips: enough drops for a stable mean
                // under random loss; the first quarter after slow start is skipped as transient.
                let cycle = rtt / 1e3 * (2.0 / (3.0 * p)).sqrt();
                let duration = Duration::from_secs_f64((400.0 * cycle).max(3.0));
                let mut s = scenario(
                    "high-loss",
                    link(100_000_000_000, ms(rtt / 2.0), None),
                    vec![f],
                    duration,
                );
                s.bottleneck.up.loss = match kind {
                    LossKind::Periodic => LossConfig::Periodic { p },
                    LossKind::Random => LossConfig::Bernoulli { p },
                };
                s.sample_interval = ms(10.0 * rtt);
                let models = loss_models(stack, kind, seg, rtt / 1e3, p);
                runs.push(CaseRun {
                    case: case_name(stack, "high-loss"),
                    label: format!(
                        "{} p {}%, RTT {rtt} ms",
                        match kind {
                            LossKind::Periodic => "periodic",
                            LossKind::Random => "random",
                        },
                        p * 100.0
                    ),
                    // PFTK models Reno without SACK, whose timeouts SACK and RACK-TLP avoid (it is
                    // −20%…+40% off both stacks at 2%): it is shown, the sawtooth is the check.
                    expected_bps: models.sawtooth_bps,
                    scenario: s,
                    seed: 1,
                    measure: Measure::PayloadThroughputAfterFirstLoss,
                    loss: Some(LossPoint {
                        kind,
                        p,
                        rtt_s: rtt / 1e3,
                        models,
                    }),
                    drawn_at: None,
                });
            }
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
            if let Some(q) = f.quic_mut() {
                q.common.stream_window = w;
            }
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
                loss: None,
                drawn_at: Some(DrawnAt::new(rtt, format!("{} kB", w / 1000))),
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
            loss: None,
            drawn_at: None,
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
                loss: None,
                drawn_at: None,
            });
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a / b - 1.0).abs() < 1e-3
    }

    #[test]
    fn mathis_and_pftk_match_hand_computed_values() {
        // sqrt(3/(2·0.01)) = 12.247 segments per 100 ms round trip.
        assert!(close(mathis_bps(1000.0, 0.1, 0.01), 8.0 * 1000.0 * 122.474));
        // RTT·sqrt(2p/3) = 0.0081650; T0·3·sqrt(3p/8)·p·(1 + 32p²) = 0.3 · 0.18371 · 0.01 · 1.0032.
        let denom = 0.008_165_0 + 0.3 * 0.183_712 * 0.01 * 1.0032;
        assert!(close(pftk_bps(1000.0, 0.1, 0.3, 0.01, 1.0), 8000.0 / denom));
        // At low loss PFTK tends to Mathis' constant sqrt(3/2).
        let ratio = pftk_bps(1.0, 0.1, 0.3, 1e-7, 1.0) / mathis_bps(1.0, 0.1, 1e-7);
        assert!((ratio - 1.0).abs() < 0.01, "{ratio}");
    }

    #[test]
    fn whole_round_sawtooth_matches_a_hand_counted_cycle() {
        // p = 2%, one recovery round: h = 5 (windows 5..10 over 6 rounds carry 45 segments, the
        // recovery round 5 more: 50 = 1/p), so a cycle lasts 5 + 1 + 1 = 7 round trips.
        let bps = sawtooth_with_recovery_bps(1448.0, 0.02, 0.02, 1.0);
        assert!(close(bps, 50.0 * 1448.0 * 8.0 / (7.0 * 0.02)), "{bps}");
        // Without recovery and with many segments per cycle it approaches Mathis.
        let ratio = sawtooth_with_recovery_bps(1.0, 0.1, 1e-6, 0.0) / mathis_bps(1.0, 0.1, 1e-6);
        assert!((ratio - 1.0).abs() < 0.01, "{ratio}");
    }
}
