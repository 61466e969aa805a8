//! The QUIC research model's cases: seed 001's four cases with INET's configuration,
//! Mathis up to 2% loss, and the model-vs-quinn cross-check.
//!
//! The scenarios are written as scenario-file text and loaded through the registry, the way a
//! user would configure the model: every model knob is a `flow.<key>`, and the cross-check runs
//! the *same* text with only `stack` changed, so "configured alike" is literally true.

use std::path::Path;
use std::time::Duration;

use scenario::model::Scenario;

use super::cases::{
    loss_models, mathis_bps, CaseRun, Grid, LossKind, LossPoint, Measure, FAIR_SHARE_SENDERS,
};
use super::DrawnAt;

/// UDP payload bytes per packet in the Mathis cases: MTU 1280 − 28 (seed 001's
/// maxQuicPacketSize = 1252 B).
const SEG: f64 = 1252.0;

/// IPv4 + UDP header bytes in front of the QUIC packet (what the link cases measure).
const IP_UDP: f64 = 28.0;

/// The model configured as INET's QUIC module (seed 001, §III; INET's `Quic.ned` and
/// `NewRenoCongestionController`): no pacing, credit once half the window is consumed and
/// piggy-backed on the next packet, windows large enough never to limit, and INET's NewReno:
/// bytes acknowledged during a recovery period count towards the next increase
/// (`reno_profile = "inet"`) and one packet goes out at once on entering recovery
/// (`send_one_on_loss`, INET's `allowOnePacket`).
const INET: &str = r#"stack = "quic-model"
pacing = false
reno_profile = "inet"
send_one_on_loss = true
fc_threshold = 0.5
fc_immediate = false
stream_window = "64MB"
conn_window = "128MB"
send_window = "64MB"
"#;

/// Loads one scenario from `text`; the cases are fixed, so an error is a bug (named with the
/// text, which says which key the registry refused).
fn load(case: &str, text: &str) -> Scenario {
    let file = format!("validate/{case}.toml");
    match scenario::parse_str(text, &file, Path::new("."), &[], &[]) {
        Ok(mut l) if l.points.len() == 1 => l.points.remove(0).scenario,
        Ok(l) => panic!("{file}: {} points, expected 1", l.points.len()),
        Err(e) => panic!("{file}: {e}\n{text}"),
    }
}

/// `[run]` section of a case.
fn run_section(
    duration: Duration,
    sample: Duration,
    from: Duration,
    until: Option<Duration>,
) -> String {
    let mut s = format!(
        "[run]\nduration = \"{}us\"\nsample_interval = \"{}us\"\nmeasure_from = \"{}us\"\n",
        duration.as_micros(),
        sample.as_micros(),
        from.as_micros()
    );
    if let Some(u) = until {
        s.push_str(&format!("measure_until = \"{}us\"\n", u.as_micros()));
    }
    s
}

/// A `[link]` section: both directions alike.
fn link_section(rate: &str, one_way_ms: f64, queue: &str) -> String {
    format!(
        "[link]\nrate = \"{rate}\"\ndelay = \"{}us\"\nqueue = \"{queue}\"\n",
        (one_way_ms * 1e3).round() as u64
    )
}

/// Periodic loss in the data direction only (Mathis' assumption (c)).
fn periodic_up(p: f64) -> String {
    format!("[link.up]\nloss = {{ model = \"periodic\", p = {p} }}\n")
}

/// The link's periodic rate that reproduces INET's `periodicSendLoss` at rate `p`: INET's
/// sender counts its outgoing packets and drops one once more than 1/p have passed, so one in
/// every 1/p + 1 is lost ("exactly one packet is dropped after 1/p packets were transmitted
/// successfully", seed 001 §IV.B (b)); the link drops every round(1/p_link)-th packet.
fn inet_periodic(p: f64) -> f64 {
    1.0 / (1.0 / p + 1.0)
}

/// How a Mathis-style run recovers from a loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Recovery {
    /// INET's NewReno and loss counter (the configuration Mathis is checked with).
    Inet,
    /// RFC 9002 as quinn (the model's default): no growth while recovering, nothing sent
    /// until the bytes in flight fall under the reduced window; the link drops every 1/p-th.
    Rfc9002,
}

/// Link bandwidth (Fig. 3): 100 Mbit/s, 1 ms, 23-packet queue, saturated sender;
/// TPmax = (MTU − 28)/MTU · BW over 3–8 s.
pub fn link_bandwidth(grid: Grid) -> Vec<CaseRun> {
    let mtus: &[u16] = match grid {
        Grid::Full => &[1280, 1452, 1500, 9000],
        Grid::Quick => &[1280, 9000],
    };
    mtus.iter()
        .map(|&mtu| {
            let text = format!(
                "{}{}[[flow]]\nname = \"sender\"\ncc = \"newreno\"\nmtu = {mtu}\n{INET}",
                run_section(
                    Duration::from_secs(8),
                    Duration::from_secs(1),
                    Duration::from_secs(3),
                    Some(Duration::from_secs(8))
                ),
                link_section("100Mbit", 1.0, "23pkt"),
            );
            CaseRun {
                case: "model-link-bandwidth",
                label: format!("MTU {mtu}"),
                expected_bps: (f64::from(mtu) - IP_UDP) / f64::from(mtu) * 100e6,
                scenario: load("model-link-bandwidth", &text),
                seed: 1,
                measure: Measure::WindowPayloadThroughput,
                loss: None,
                drawn_at: Some(DrawnAt::new(f64::from(mtu), "")),
            }
        })
        .collect()
}

/// A Mathis-style run: INET's assumptions (NewReno exact counting, ACK every packet, no pacing,
/// periodic loss on the data direction, a 100 Gbit/s bottleneck, S = 1252 B), `cycles` loss
/// cycles of sqrt(2/(3p)) round trips.
fn mathis_run(
    case: &'static str,
    rtt_ms: f64,
    p: f64,
    cycles: f64,
    recovery: Recovery,
) -> Scenario {
    let cycle = rtt_ms / 1e3 * (2.0 / (3.0 * p)).sqrt();
    let duration = Duration::from_secs_f64((cycles * cycle).max(3.0));
    let (link_p, profile) = match recovery {
        Recovery::Inet => (inet_periodic(p), INET.to_string()),
        Recovery::Rfc9002 => (
            p,
            INET.replace("reno_profile = \"inet\"", "reno_profile = \"rfc9002\"")
                .replace("send_one_on_loss = true", "send_one_on_loss = false"),
        ),
    };
    let text = format!(
        "{}{}{}[[flow]]\nname = \"sender\"\ncc = \"newreno\"\nmtu = 1280\nreceiver_ack_ratio = 1\n{profile}",
        run_section(
            duration,
            Duration::from_secs_f64(10.0 * rtt_ms / 1e3),
            Duration::ZERO,
            None
        ),
        link_section("100Gbit", rtt_ms / 2.0, "unlimited"),
        periodic_up(link_p),
    );
    load(case, &text)
}

/// Mathis (Fig. 4): the paper's grid, RTT 2–100 ms × p ∈ {0.1, 0.02, 0.005}%.
pub fn mathis(grid: Grid) -> Vec<CaseRun> {
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
            runs.push(CaseRun {
                case: "model-mathis",
                label: format!("RTT {rtt} ms, p {}%", p * 100.0),
                expected_bps: mathis_bps(SEG, rtt / 1e3, p),
                scenario: mathis_run("model-mathis", rtt, p, 40.0, Recovery::Inet),
                seed: 1,
                measure: Measure::PayloadThroughputAfterFirstLoss,
                loss: None,
                drawn_at: Some(DrawnAt::new(rtt, format!("p = {}%", p * 100.0))),
            });
        }
    }
    runs
}

/// Mathis up to 2% loss, at RTT 20, 40 and 60 ms and periodic loss 0.2–2% (INET's
/// `examples/quic/congestion/throughput_validation.py` compares p = 0.8, 1, 2% at these RTTs
/// with Mathis, base RTT, S = 1252 B), in two configurations:
///
/// - `INET`: the model configured as INET's module (its NewReno counts the bytes acknowledged
///   while recovering, one packet goes out at once on entering recovery, INET's loss counter),
///   checked against Mathis itself.
/// - `RFC 9002`: the model's default recovery (quinn's), checked against the whole-round
///   sawtooth with RFC 9002's 1.5 recovery round trips (`sawtooth_with_recovery_bps`, the
///   reference of the quinn and TCP high-loss cases, docs/validation.md): Mathis' continuous
///   sawtooth leaves out the round in which the drop happens and the recovery rounds.
///
/// Mathis', PFTK's and the sawtooth's errors and the measured loss cycle are printed beside
/// every point.
pub fn high_loss(grid: Grid) -> Vec<CaseRun> {
    let (ps, rtts): (&[f64], &[f64]) = match grid {
        Grid::Full => (&[0.002, 0.005, 0.008, 0.01, 0.02], &[20.0, 40.0, 60.0]),
        Grid::Quick => (&[0.005, 0.02], &[20.0]),
    };
    let mut runs = Vec::new();
    for (recovery, name) in [(Recovery::Inet, "INET"), (Recovery::Rfc9002, "RFC 9002")] {
        for &p in ps {
            for &rtt in rtts {
                let models = loss_models(
                    scenario::model::Stack::Quic,
                    LossKind::Periodic,
                    SEG,
                    rtt / 1e3,
                    p,
                );
                runs.push(CaseRun {
                    case: "model-high-loss",
                    label: format!("{name}, periodic p {}%, RTT {rtt} ms", p * 100.0),
                    expected_bps: match recovery {
                        Recovery::Inet => models.mathis_bps,
                        Recovery::Rfc9002 => models.sawtooth_bps,
                    },
                    // 400 cycles as the quinn/TCP high-loss cases: a stable mean at small
                    // windows.
                    scenario: mathis_run("model-high-loss", rtt, p, 400.0, recovery),
                    seed: 1,
                    measure: Measure::PayloadThroughputAfterFirstLoss,
                    loss: Some(LossPoint {
                        kind: LossKind::Periodic,
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

/// Flow-control limit (Fig. 5): CC off, unlimited bottleneck, one stream;
/// GP = initialMaxStreamData / RTT, application bytes from 1 s to 4 s.
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
            // INET's flow control with the stream window under test; the connection window
            // stays large so only the stream limits (seed 001 validated the connection level
            // the same way).
            let text = format!(
                "{}{}[[flow]]\nname = \"sender\"\ncc = \"none\"\nmtu = 1500\n\
                 stack = \"quic-model\"\npacing = false\nfc_threshold = 0.5\nfc_immediate = false\n\
                 stream_window = {w}\nconn_window = \"128MB\"\nsend_window = \"64MB\"\n",
                run_section(
                    Duration::from_secs(4),
                    Duration::from_secs(1),
                    Duration::from_secs(1),
                    None
                ),
                link_section("unlimited", rtt / 2.0, "unlimited"),
            );
            runs.push(CaseRun {
                case: "model-flow-control",
                label: format!("window {} kB, RTT {rtt} ms", w / 1000),
                expected_bps: w as f64 * 8.0 / (rtt / 1e3),
                scenario: load("model-flow-control", &text),
                seed: 1,
                measure: Measure::WindowGoodput,
                loss: None,
                drawn_at: Some(DrawnAt::new(rtt, format!("{} kB", w / 1000))),
            });
        }
    }
    runs
}

/// Fair share (Fig. 6): 10 Mbit/s, 10 ms; three staggered model senders plus random UDP.
pub fn fair_share(grid: Grid) -> Vec<CaseRun> {
    let reps = match grid {
        Grid::Full => 100,
        Grid::Quick => 4,
    };
    let mut text = format!(
        "{}{}",
        run_section(
            Duration::from_secs(180),
            Duration::from_secs(1),
            Duration::ZERO,
            None
        ),
        // One BDP of 1500-byte packets: 10 Mbit/s × 20 ms = 25 kB ≈ 17 packets.
        link_section("10Mbit", 10.0, "17pkt"),
    );
    for (i, (start, stop)) in FAIR_SHARE_SENDERS.iter().enumerate() {
        text.push_str(&format!(
            "[[flow]]\nname = \"sender{}\"\ncc = \"newreno\"\nmtu = 1500\nstart = \"{start}s\"\nstop = \"{stop}s\"\n{INET}",
            i + 1
        ));
    }
    text.push_str(
        "[[cross]]\nname = \"random-udp\"\ndirection = \"up\"\npattern = \"uniform\"\n\
         size_min = \"100B\"\nsize_max = \"1000B\"\ngap_min = \"25ms\"\ngap_max = \"100ms\"\n",
    );
    let s = load("model-fair-share", &text);
    (0..reps)
        .map(|rep| CaseRun {
            case: "model-fair-share",
            label: format!("rep {rep}"),
            expected_bps: (1500.0 - IP_UDP) / 1500.0 * 10e6,
            scenario: s.clone(),
            seed: 1000 + rep,
            measure: Measure::FairShareBins,
            loss: None,
            drawn_at: None,
        })
        .collect()
}

/// One path of the model-vs-quinn cross-check.
#[derive(Debug, Clone, Copy)]
pub struct CrossPath {
    /// Label in the report.
    pub name: &'static str,
    /// Bottleneck rate (scenario syntax).
    pub rate: &'static str,
    /// One-way delay, ms.
    pub one_way_ms: f64,
    /// Random loss both ways (0 for none).
    pub loss: f64,
    /// Download size (scenario syntax).
    pub size: &'static str,
    /// Run limit, s.
    pub duration_s: u64,
    /// Repetitions (random loss needs several; the comparison is of the means).
    pub reps: u64,
    /// Extra flow keys for both stacks (shared keys only).
    pub keys: &'static str,
}

/// The four paths of the issue: a clean 10 Mbit/s 30 ms path (one-BDP queue, the QUIC interop
/// runner's default), the same with 2% random loss both ways (the runner's "transferloss"
/// rate), 1 Gbit/s 40 ms, and a GEO path (20 Mbit/s, 600 ms RTT).
pub const CROSS_PATHS: [CrossPath; 4] = [
    CrossPath {
        name: "clean 10 Mbit/s 30 ms",
        rate: "10Mbit",
        one_way_ms: 15.0,
        loss: 0.0,
        size: "10MB",
        duration_s: 60,
        reps: 1,
        keys: "",
    },
    CrossPath {
        name: "2% loss 10 Mbit/s 30 ms",
        rate: "10Mbit",
        one_way_ms: 15.0,
        loss: 0.02,
        size: "2MB",
        duration_s: 120,
        reps: 20,
        keys: "",
    },
    CrossPath {
        name: "1 Gbit/s 40 ms",
        rate: "1Gbit",
        one_way_ms: 20.0,
        loss: 0.0,
        size: "200MB",
        duration_s: 60,
        reps: 1,
        // The windows of quiclab's 1 Gbit/s bench (scenarios/bench/): with quinn's 16/24 MB
        // defaults slow start overshoots a 5 MB BDP so far that quinn's receive buffer refuses
        // the out-of-order data ("too many gaps in stream buffer", a quinn limit the model has
        // not) and the connection fails.
        keys: "stream_window = \"9MB\"\nconn_window = \"10MB\"\nsend_window = \"16MB\"\n",
    },
    CrossPath {
        name: "GEO 20 Mbit/s 600 ms",
        rate: "20Mbit",
        one_way_ms: 300.0,
        loss: 0.0,
        size: "20MB",
        duration_s: 120,
        reps: 1,
        keys: "",
    },
];

/// The cross-check's controllers: NewReno (exact counting) and CUBIC with HyStart++, ours on
/// both stacks.
pub const CROSS_CCS: [&str; 2] = ["newreno", "cubic"];

/// Model vs quinn configured alike (pacing on, ACK ratio 1:2, 25 ms ACK delay — quinn's and the
/// model's defaults — and the same controller): a download on each path; goodput and completion
/// time within 5% (compared in `lib.rs`, in (quinn, model) pairs per repetition).
pub fn model_vs_quic(grid: Grid) -> Vec<CaseRun> {
    let paths: Vec<CrossPath> = match grid {
        Grid::Full => CROSS_PATHS.to_vec(),
        // The test suite: the clean path and a shortened loss path.
        Grid::Quick => vec![
            CROSS_PATHS[0],
            CrossPath {
                reps: 6,
                ..CROSS_PATHS[1]
            },
        ],
    };
    let mut runs = Vec::new();
    for path in &paths {
        for cc in CROSS_CCS {
            for rep in 0..path.reps {
                for stack in ["quic", "quic-model"] {
                    let mut text = format!(
                        "{}{}",
                        run_section(
                            Duration::from_secs(path.duration_s),
                            Duration::from_secs(1),
                            Duration::ZERO,
                            None
                        ),
                        link_section(path.rate, path.one_way_ms, "1bdp"),
                    );
                    if path.loss > 0.0 {
                        text.push_str(&format!("loss = {}\n", path.loss));
                    }
                    // Only shared keys: the same text configures both stacks alike.
                    text.push_str(&format!(
                        "[[flow]]\nname = \"download\"\nstack = \"{stack}\"\napp = \"download\"\n\
                         size = \"{}\"\ncc = \"{cc}\"\nmtu = 1500\n{}",
                        path.size, path.keys
                    ));
                    runs.push(CaseRun {
                        case: "model-vs-quic",
                        label: format!("{}, {cc}|{stack}", path.name),
                        expected_bps: f64::NAN,
                        scenario: load("model-vs-quic", &text),
                        seed: 1 + rep,
                        measure: Measure::DownloadGoodput,
                        loss: None,
                        drawn_at: None,
                    });
                }
            }
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;
    use scenario::Choice;

    #[test]
    fn case_texts_configure_the_model_as_inet() {
        // Every grid loads (a refused key would panic naming it).
        let all: Vec<CaseRun> = [
            link_bandwidth(Grid::Full),
            mathis(Grid::Quick),
            high_loss(Grid::Full),
            flow_control(Grid::Quick),
            fair_share(Grid::Quick),
            model_vs_quic(Grid::Full),
        ]
        .concat();
        assert!(!all.is_empty());
        let m = &mathis(Grid::Quick)[0].scenario;
        assert_eq!(m.flows[0].stack().name(), "quic-model");
        // INET's counter: one dropped after 1000 delivered, i.e. every 1001st.
        assert!(matches!(
            m.bottleneck.up.loss,
            netem::config::LossConfig::Periodic { p } if (1.0 / p - 1001.0).abs() < 1e-6
        ));
        assert!(
            m.flows[0]
                .quic_model()
                .expect("a quic_model flow")
                .send_one_on_loss
        );
        assert!(matches!(
            m.flows[0].cc,
            scenario::model::CcChoice::Ours(congestion::config::CcConfig::NewReno {
                counting: congestion::config::RenoCounting::Inet,
                ..
            })
        ));
        // The RFC 9002 reference runs keep the model's default recovery and the link's 1/p.
        let rfc = high_loss(Grid::Quick)
            .into_iter()
            .find(|r| r.label.starts_with("RFC 9002"))
            .expect("an RFC 9002 point");
        assert!(
            !rfc.scenario.flows[0]
                .quic_model()
                .expect("a quic_model flow")
                .send_one_on_loss
        );
        assert!(matches!(
            rfc.scenario.bottleneck.up.loss,
            netem::config::LossConfig::Periodic { p } if (p - 0.005).abs() < 1e-12
        ));
        assert!(matches!(
            m.bottleneck.down.loss,
            netem::config::LossConfig::None
        ));
        // The cross-check's two texts differ in the stack only.
        let x = model_vs_quic(Grid::Quick);
        assert_eq!(x[0].scenario.flows[0].stack().name(), "quic");
        assert_eq!(x[1].scenario.flows[0].stack().name(), "quic-model");
        assert_eq!(x[0].scenario.flows[0].cc, x[1].scenario.flows[0].cc);
        assert_eq!(x[0].scenario.bottleneck, x[1].scenario.bottleneck);
    }
}
