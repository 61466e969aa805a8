//! The simulator benchmark (`quiclab bench`): how fast the simulator runs, as ratios that
//! compare across machines.
//!
//! The scenarios (the same two downloads for quinn, the TCP model and the QUIC research model)
//! are compiled in (from `scenarios/bench/`) so the benchmark measures the
//! same thing from any working directory. Wall-clock time is the point here; it is printed,
//! never stored with results.

use std::path::Path;
use std::time::{Duration, Instant};

use results::Run;
use serde::Serialize;

/// Why a benchmark row could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A benchmark scenario (or an override) does not resolve.
    #[error("{0}")]
    Scenario(String),
    /// The runner failed.
    #[error(transparent)]
    Experiment(#[from] experiment::ExperimentError),
    /// The run itself failed.
    #[error("{file}: run failed: {message}")]
    Run {
        /// The scenario.
        file: String,
        /// The engine's error.
        message: String,
    },
}

/// The fixed benchmark scenarios: (file name for messages, text).
pub const SCENARIOS: [(&str, &str); 12] = [
    (
        "scenarios/bench/download-10mbit.toml",
        include_str!("../../../scenarios/bench/download-10mbit.toml"),
    ),
    (
        "scenarios/bench/download-1gbit.toml",
        include_str!("../../../scenarios/bench/download-1gbit.toml"),
    ),
    (
        "scenarios/bench/tcp-download-10mbit.toml",
        include_str!("../../../scenarios/bench/tcp-download-10mbit.toml"),
    ),
    (
        "scenarios/bench/tcp-download-1gbit.toml",
        include_str!("../../../scenarios/bench/tcp-download-1gbit.toml"),
    ),
    (
        "scenarios/bench/model-download-10mbit.toml",
        include_str!("../../../scenarios/bench/model-download-10mbit.toml"),
    ),
    (
        "scenarios/bench/model-download-1gbit.toml",
        include_str!("../../../scenarios/bench/model-download-1gbit.toml"),
    ),
    (
        "scenarios/bench/tcp-bbr-download-1gbit.toml",
        include_str!("../../../scenarios/bench/tcp-bbr-download-1gbit.toml"),
    ),
    (
        "scenarios/bench/tcp-bbr3-download-1gbit.toml",
        include_str!("../../../scenarios/bench/tcp-bbr3-download-1gbit.toml"),
    ),
    (
        "scenarios/bench/model-bbr-download-1gbit.toml",
        include_str!("../../../scenarios/bench/model-bbr-download-1gbit.toml"),
    ),
    (
        "scenarios/bench/model-bbr3-download-1gbit.toml",
        include_str!("../../../scenarios/bench/model-bbr3-download-1gbit.toml"),
    ),
    (
        "scenarios/bench/quiche-download-10mbit.toml",
        include_str!("../../../scenarios/bench/quiche-download-10mbit.toml"),
    ),
    (
        "scenarios/bench/quiche-download-1gbit.toml",
        include_str!("../../../scenarios/bench/quiche-download-1gbit.toml"),
    ),
];

/// The scale rows' scenario: N bulk flows on one bottleneck (`flow.count`, `flow.stack` set
/// per row).
pub const SCALE: (&str, &str) = (
    "scenarios/bench/scale.toml",
    include_str!("../../../scenarios/bench/scale.toml"),
);

/// Flow counts of the scale rows.
pub const SCALE_FLOWS: [u32; 3] = [10, 100, 1000];

/// Where a scale row's steady-state window starts. The row runs the scenario twice, to its
/// end and to here; the difference is the cost of the packets in between alone. By 1 s the
/// flows' handshakes, slow starts and first allocations are over: at 1,000 flows each flow
/// sends only ~400 packets in 3 s, so its set-up is spread over 100× fewer packets than at 10
/// flows, which the whole-run figure counts as a cost per packet.
pub const SCALE_WARM_UP: &str = "1s";

/// Stacks of the scale rows.
pub const SCALE_STACKS: [&str; 2] = ["quic", "tcp"];

/// Figures of one scale row: N flows of one stack sharing the bottleneck.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct ScaleFigures {
    /// `flow.stack` of every flow.
    pub stack: String,
    /// Number of flows.
    pub flows: u32,
    /// The run's speed figures.
    pub figures: BenchFigures,
    /// Wall time per packet the flows' endpoints sent (ns).
    pub wall_ns_per_packet: f64,
    /// Wall time per packet after [`SCALE_WARM_UP`] (ns): the whole run less the same run cut
    /// there, per packet sent in between. `None` when the difference is not positive (a
    /// disturbed measurement).
    #[serde(default)]
    pub steady_ns_per_packet: Option<f64>,
    /// Peak resident memory the run added, divided by the flow count (bytes); `None` where
    /// `/proc/self/status` cannot be read.
    pub memory_per_flow_bytes: Option<f64>,
}

/// Speed figures of one scenario.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct BenchFigures {
    /// Scenario name.
    pub scenario: String,
    /// Virtual time the run covered.
    pub simulated_s: f64,
    /// Best wall time over the repetitions (the least disturbed by other load).
    pub wall_s: f64,
    /// Repetitions measured.
    pub repetitions: u32,
    /// Simulated seconds per wall second.
    pub sim_per_wall: f64,
    /// Datagrams (flows and cross traffic) per wall second.
    pub datagrams_per_s: f64,
    /// Packets the flows' endpoints sent per wall second: QUIC packets of every kind for
    /// quinn and the research model (a datagram may coalesce several during the handshake),
    /// segments for the TCP model, counted at both ends (data and ACKs).
    pub packets_per_s: f64,
    /// Simulator events per wall second.
    pub events_per_s: f64,
    /// Whether every flow finished without error; if not, the figures time a truncated run.
    pub complete: bool,
}

/// One scale row in this process: the scale scenario with `flows` flows of `stack`.
/// Run it in a fresh process (as `quiclab bench` does, one child per row), so that the peak
/// memory it reports is that row's alone: an allocator keeps freed memory, so within one
/// process a later row would reuse an earlier row's pages.
pub fn scale_row(
    stack: &str,
    flows: u32,
    reps: u32,
    crypto: &str,
    warnings: &mut Vec<String>,
) -> Result<ScaleFigures, BenchError> {
    let mut overrides = vec![format!("flow.stack={stack}"), format!("flow.count={flows}")];
    if stack == "quic" {
        overrides.push(format!("flow.crypto={crypto}"));
    }
    // Memory before the run: the process as started (this is a fresh child process).
    let baseline = memory::current_rss();
    let figures = bench_one(SCALE.0, SCALE.1, reps, &overrides, warnings)?;
    let memory_per_flow_bytes = baseline
        .zip(memory::peak_rss())
        .map(|(base, peak)| peak.saturating_sub(base) as f64 / f64::from(flows));
    // After the memory reading, so the shorter run cannot change the peak.
    overrides.push(format!("run.duration={SCALE_WARM_UP}"));
    let warm_up = bench_one(SCALE.0, SCALE.1, reps, &overrides, warnings)?;
    Ok(ScaleFigures {
        stack: stack.to_string(),
        flows,
        wall_ns_per_packet: figures.wall_s * 1e9 / packets_sent(&figures).max(1.0),
        steady_ns_per_packet: steady_ns_per_packet(&figures, &warm_up),
        memory_per_flow_bytes,
        figures,
    })
}

/// Packets the flows' endpoints sent in a run.
fn packets_sent(f: &BenchFigures) -> f64 {
    f.packets_per_s * f.wall_s
}

/// Wall ns per packet of the part of `full` that `warm_up` (the same run, cut earlier) does
/// not cover.
fn steady_ns_per_packet(full: &BenchFigures, warm_up: &BenchFigures) -> Option<f64> {
    let packets = packets_sent(full) - packets_sent(warm_up);
    let wall = full.wall_s - warm_up.wall_s;
    (packets > 0.0 && wall > 0.0).then(|| wall * 1e9 / packets)
}

/// One line of text for a scale row.
pub fn render_scale(r: &ScaleFigures) -> String {
    format!(
        "scale {:<4} {:>5} flows  simulated {}  wall {}  {:.1} sim-s/wall-s  {}  {:.0} ns/packet  after {SCALE_WARM_UP} {}  memory/flow {}",
        r.stack,
        r.flows,
        units::si(r.figures.simulated_s, "s"),
        units::si(r.figures.wall_s, "s"),
        r.figures.sim_per_wall,
        units::si(r.figures.packets_per_s, "packets/s"),
        r.wall_ns_per_packet,
        r.steady_ns_per_packet
            .map_or_else(|| "n/a".to_string(), |ns| format!("{ns:.0} ns/packet")),
        r.memory_per_flow_bytes
            .map_or_else(|| "n/a".to_string(), |b| units::si(b, "B")),
    )
}

/// The growth of wall time per packet from the fewest to the most flows, one line per stack.
pub fn render_growth(rows: &[ScaleFigures]) -> Vec<String> {
    let mut lines = Vec::new();
    for stack in SCALE_STACKS {
        let row = |n: u32| rows.iter().find(|r| r.stack == stack && r.flows == n);
        let (lo, hi) = (SCALE_FLOWS[0], SCALE_FLOWS[SCALE_FLOWS.len() - 1]);
        if let (Some(a), Some(b)) = (row(lo), row(hi)) {
            let steady = a
                .steady_ns_per_packet
                .zip(b.steady_ns_per_packet)
                .map_or_else(|| "n/a".to_string(), |(a, b)| format!("{:.2}×", b / a));
            lines.push(format!(
                "scale {stack:<4} wall time per packet, {hi} vs {lo} flows: {:.2}× (whole run), {steady} (after {SCALE_WARM_UP})",
                b.wall_ns_per_packet / a.wall_ns_per_packet
            ));
        }
    }
    lines
}

/// `flow.crypto=<mode>` for a scenario whose flows are quinn's; nothing for the other stacks
/// (the key is quinn's only, so setting it on them would be an error).
pub fn crypto_override(file: &str, text: &str, mode: &str) -> Result<Vec<String>, BenchError> {
    let loaded = scenario::parse_str(text, file, Path::new("."), &[], &[])
        .map_err(|e| BenchError::Scenario(e.to_string()))?;
    let quinn = loaded
        .points
        .iter()
        .flat_map(|p| &p.scenario.flows)
        .all(|f| f.stack() == scenario::model::Stack::Quic);
    Ok(if quinn {
        vec![format!("flow.crypto={mode}")]
    } else {
        Vec::new()
    })
}

/// The process's resident memory, from `/proc/self/status` (Linux).
pub mod memory {
    /// A `kB` field of /proc/self/status, in bytes.
    fn status_bytes(field: &str) -> Option<u64> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let line = status.lines().find(|l| l.starts_with(field))?;
        let kb: u64 = line[field.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(kb * 1024)
    }

    /// Resident memory now.
    pub fn current_rss() -> Option<u64> {
        status_bytes("VmRSS:")
    }

    /// Peak resident memory since the process started.
    pub fn peak_rss() -> Option<u64> {
        status_bytes("VmHWM:")
    }
}

/// Runs one scenario `reps` times on this thread and keeps the best wall time. A flow that
/// failed or did not finish is named in `warnings` (the figures then time a truncated run).
pub fn bench_one(
    file: &str,
    text: &str,
    reps: u32,
    overrides: &[String],
    warnings: &mut Vec<String>,
) -> Result<BenchFigures, BenchError> {
    let loaded = scenario::parse_str(text, file, Path::new("."), overrides, &[])
        .map_err(|e| BenchError::Scenario(e.to_string()))?;
    let no_run = || BenchError::Scenario(format!("{file}: benchmark scenario has no run"));
    let spec = loaded.runs().into_iter().next().ok_or_else(no_run)?;
    let point = loaded.points.get(spec.point).ok_or_else(no_run)?;
    // Series on, as `quiclab sim` records them by default: measure what users get.
    let job = experiment::Job {
        point,
        spec: &spec,
        outputs: experiment::RunOutputs {
            series: true,
            ..Default::default()
        },
    };
    let engine = sim::SimEngine::default();
    let mut best = Duration::MAX;
    let mut last = None;
    for _ in 0..reps {
        // One repetition at a time on this thread, so the wall time is one run's.
        let start = Instant::now();
        let result = experiment::run_in_memory(
            &engine,
            std::slice::from_ref(&job),
            &experiment::Sequential,
            &(),
        )?
        .pop()
        .ok_or_else(no_run)?
        .map_err(|e| BenchError::Run {
            file: file.to_string(),
            message: experiment::error::chain(&e),
        })?;
        best = best.min(start.elapsed());
        last = Some(result);
    }
    let result = last.ok_or_else(no_run)?;
    for f in result
        .flows
        .iter()
        .filter(|f| f.error.is_some() || incomplete_download(f))
    {
        let why = f
            .error
            .as_deref()
            .unwrap_or("did not complete before run.duration");
        warnings.push(format!(
            "{}: flow {}: {why}; the figures time a truncated run",
            loaded.name, f.name
        ));
    }
    Ok(figures(&loaded.name, &result, best, reps))
}

/// Ratios of one run's work to its wall time.
fn figures(name: &str, r: &Run, wall: Duration, reps: u32) -> BenchFigures {
    let wall_s = wall.as_secs_f64().max(1e-9); // a zero-length measurement must not divide by zero
    let datagrams: u64 = r
        .flows
        .iter()
        .map(|f| f.datagrams_sent.iter().flatten().sum::<u64>())
        .sum::<u64>()
        + r.cross.iter().map(|c| c.sent_packets).sum::<u64>();
    BenchFigures {
        packets_per_s: packets(r) as f64 / wall_s,
        scenario: name.to_string(),
        simulated_s: r.end_s,
        wall_s,
        repetitions: reps,
        sim_per_wall: r.end_s / wall_s,
        datagrams_per_s: datagrams as f64 / wall_s,
        events_per_s: r.events.unwrap_or(0) as f64 / wall_s,
        complete: r
            .flows
            .iter()
            .all(|f| f.error.is_none() && !incomplete_download(f)),
    }
}

/// A download that did not finish (bulk flows run to the end of the run by design).
fn incomplete_download(f: &results::Flow) -> bool {
    f.workload == "download" && f.completion_s.is_none()
}

/// Packets sent by the flows' endpoints: the data sender's packets plus the receiver's (its
/// datagrams: pure ACKs and flow-control updates, one packet each after the handshake).
fn packets(r: &Run) -> u64 {
    r.flows
        .iter()
        .map(|f| {
            let receiver_datagrams = match f.workload.as_str() {
                // A bulk upload's receiver is the server; otherwise the client.
                "bulk-up" => f.datagrams_sent[1],
                _ => f.datagrams_sent[0],
            };
            f.packets_sent.unwrap_or(0) + receiver_datagrams.unwrap_or(0)
        })
        .sum()
}

/// One line of text for a scenario's figures.
pub fn render_figures(f: &BenchFigures) -> String {
    format!(
        "{:<18} simulated {}  wall {} (best of {})  {:.1} sim-s/wall-s  {}  {}  {}",
        f.scenario,
        units::si(f.simulated_s, "s"),
        units::si(f.wall_s, "s"),
        f.repetitions,
        f.sim_per_wall,
        units::si(f.packets_per_s, "packets/s"),
        units::si(f.datagrams_per_s, "datagrams/s"),
        units::si(f.events_per_s, "events/s"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use scenario::Choice;

    #[test]
    fn bench_scenarios_parse() {
        for (file, text) in SCENARIOS {
            let l = scenario::parse_str(text, file, Path::new("."), &[], &[]);
            assert!(l.is_ok(), "{file}: {:?}", l.err());
        }
    }

    /// A benchmark whose download dies early would report flattering, meaningless speeds.
    #[test]
    fn bench_downloads_complete() {
        for (file, text) in SCENARIOS {
            let f = bench_one(file, text, 1, &[], &mut Vec::new()).expect("bench runs");
            assert!(f.complete, "{file} did not complete");
            assert!(
                f.simulated_s > 1.0
                    && f.datagrams_per_s > 0.0
                    && f.packets_per_s >= f.datagrams_per_s * 0.5
                    && f.events_per_s > 0.0,
                "{f:?}"
            );
        }
    }

    /// A scale row runs N flows of the stack asked for and counts their packets.
    #[test]
    fn scale_rows_run_the_flows_asked_for() {
        let short = format!(
            "{}\n",
            SCALE.1.replace("duration = \"3s\"", "duration = \"300ms\"")
        );
        assert_ne!(
            short.trim(),
            SCALE.1.trim(),
            "the scale scenario's duration moved"
        );
        for stack in SCALE_STACKS {
            let overrides = [format!("flow.stack={stack}"), "flow.count=3".to_string()];
            let loaded = scenario::parse_str(&short, SCALE.0, Path::new("."), &overrides, &[])
                .expect("parses");
            let flows = &loaded.points[0].scenario.flows;
            assert_eq!(flows.len(), 3);
            assert!(flows.iter().all(|f| f.stack().name() == stack));
            let f = bench_one(SCALE.0, &short, 1, &overrides, &mut Vec::new()).expect("runs");
            assert!(f.packets_per_s > 0.0 && f.simulated_s > 0.2, "{f:?}");
            // The steady-state figure subtracts the same run cut earlier.
            let cut = [&overrides[..], &["run.duration=100ms".to_string()]].concat();
            let warm_up = bench_one(SCALE.0, &short, 1, &cut, &mut Vec::new()).expect("runs");
            assert!(warm_up.simulated_s < 0.11, "{warm_up:?}");
            assert!(
                packets_sent(&warm_up) < packets_sent(&f),
                "{warm_up:?} {f:?}"
            );
        }
        assert!(memory::current_rss().is_some_and(|b| b > 0));
        assert!(memory::peak_rss() >= memory::current_rss());
    }

    /// The steady-state figure is the later part's wall time over its packets, and absent when
    /// a disturbed measurement makes the difference meaningless.
    #[test]
    fn steady_state_is_the_difference_per_packet() {
        let fig = |wall_s: f64, packets: f64| BenchFigures {
            scenario: "s".into(),
            simulated_s: 1.0,
            wall_s,
            repetitions: 1,
            sim_per_wall: 1.0 / wall_s,
            datagrams_per_s: packets / wall_s,
            packets_per_s: packets / wall_s,
            events_per_s: packets / wall_s,
            complete: true,
        };
        let got = steady_ns_per_packet(&fig(3.0, 3000.0), &fig(1.0, 500.0)).unwrap();
        assert!((got - 2e9 / 2500.0).abs() < 1e-3, "{got}");
        assert_eq!(
            steady_ns_per_packet(&fig(1.0, 3000.0), &fig(1.5, 500.0)),
            None
        );
        assert_eq!(
            steady_ns_per_packet(&fig(3.0, 500.0), &fig(1.0, 500.0)),
            None
        );
    }

    /// quiche's rows time quinn's two downloads (quiche has no send window to set).
    #[test]
    fn quiche_rows_are_quinns_downloads_on_quiche() {
        let load = |i: usize| {
            let (file, text) = SCENARIOS[i];
            let l = scenario::parse_str(text, file, Path::new("."), &[], &[]).expect("parses");
            l.points[0].scenario.clone()
        };
        for (quinn, quiche) in [(0, 10), (1, 11)] {
            let (q, c) = (load(quinn), load(quiche));
            assert_eq!(c.flows[0].stack(), scenario::model::Stack::Quiche);
            assert_eq!((&q.bottleneck, q.duration), (&c.bottleneck, c.duration));
            let (qf, cf) = (&q.flows[0], &c.flows[0]);
            assert_eq!((qf.workload, qf.cc), (cf.workload, cf.cc));
            let (qk, ck) = (
                qf.quic().expect("a quic flow"),
                cf.quiche().expect("a quiche flow"),
            );
            assert_eq!(
                (qk.common.stream_window, qk.common.conn_window, qk.mtu),
                (ck.stream_window, ck.conn_window, ck.mtu)
            );
        }
    }

    /// The model's rows time the same two downloads as quinn's: only the stack differs.
    #[test]
    fn model_rows_are_quinns_downloads_on_the_model() {
        let load = |i: usize| {
            let (file, text) = SCENARIOS[i];
            let l = scenario::parse_str(text, file, Path::new("."), &[], &[]).expect("parses");
            l.points[0].scenario.clone()
        };
        for (quinn, model) in [(0, 4), (1, 5)] {
            let (q, m) = (load(quinn), load(model));
            assert_eq!(m.flows[0].stack(), scenario::model::Stack::QuicModel);
            assert_eq!((&q.bottleneck, q.duration), (&m.bottleneck, m.duration));
            let (qf, mf) = (&q.flows[0], &m.flows[0]);
            assert_eq!((qf.workload, qf.cc), (mf.workload, mf.cc));
            let (qk, mk) = (
                qf.quic().expect("a quic flow"),
                mf.quic_model().expect("a model flow"),
            );
            assert_eq!(
                (
                    qk.common.stream_window,
                    qk.common.conn_window,
                    qk.common.send_window
                ),
                (
                    mk.common.stream_window,
                    mk.common.conn_window,
                    mk.common.send_window
                )
            );
        }
    }
}
