//! The validation suite: the analytic cases of seed 001 (REFERENCES.md) run through the real
//! simulator, compared with theory, with a pass/fail verdict per point.
//!
//! `quiclab validate` runs the full grids; the test suite runs [`Grid::Quick`].

pub mod aqm;
pub mod cases;
pub mod drawn;
pub mod model;

use analysis::stats::jain_index;
use experiment::{EngineError, Executor, ExperimentError, Job, Progress, RunOutputs};
use scenario::model::{RunSpec, Stack, SweepPoint};
use serde::Serialize;
use sim::SimEngine;

pub use cases::Grid;
use cases::{CaseRun, Measure, FAIR_SHARE_SENDERS};
pub use drawn::{DrawnAt, PaperFigure};

/// Names of the cases, in the order they run: seed 001's four for QUIC, then the TCP model's
/// counterparts and the QUIC-vs-TCP cross-check, then the QUIC research model's: seed
/// 001's four with INET's configuration, Mathis up to 2%, and the model-vs-quinn cross-check;
/// then the queue disciplines' ([`aqm`]).
pub const CASES: [&str; 24] = [
    "link-bandwidth",
    "mathis",
    "high-loss",
    "flow-control",
    "fair-share",
    "tcp-link-bandwidth",
    "tcp-mathis",
    "tcp-high-loss",
    "tcp-fair-share",
    "quic-vs-tcp",
    "model-link-bandwidth",
    "model-mathis",
    "model-high-loss",
    "model-flow-control",
    "model-fair-share",
    "model-vs-quic",
    "codel-control-law",
    "codel-standing-queue",
    "red-average-queue",
    "pie-target",
    "fq-codel-sparse",
    "fq-codel-rtt-fairness",
    "aqm-ecn",
    "dualpi2-l4s",
];

/// One checked point.
#[derive(Debug, Clone, Serialize)]
pub struct PointResult {
    pub case: String,
    pub label: String,
    /// Expected value (bit/s; for fair share, Jain's index 1 and the per-sender share).
    pub expected: f64,
    pub measured: f64,
    /// Relative error (measured / expected − 1), or for fair share 1 − Jain's index.
    pub error: f64,
    /// Allowed |error| (fair share: 1 − minimum Jain's index).
    pub tolerance: f64,
    pub pass: bool,
    /// Extra detail (per-sender rates with CI95 for fair share, transport errors).
    pub note: String,
    /// Unit of `expected` and `measured`: `bit/s`, `s`, or empty for a plain number (Jain's
    /// index).
    pub unit: String,
    /// Where the point sits in the paper's figure of its case, if the paper draws one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drawn_at: Option<DrawnAt>,
}

/// Everything `quiclab validate` prints.
#[derive(Debug, Clone, Serialize)]
pub struct ValidationReport {
    pub points: Vec<PointResult>,
    /// The cases the paper draws, drawn as it does (for the study reports).
    #[serde(skip)]
    pub figures: Vec<PaperFigure>,
}

impl ValidationReport {
    /// True when every point is inside its tolerance.
    pub fn passed(&self) -> bool {
        !self.points.is_empty() && self.points.iter().all(|p| p.pass)
    }

    /// Human-readable table.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let mut last = "";
        for p in &self.points {
            if p.case != last {
                out.push_str(&format!(
                    "\n== {} ==\n{:<28} {:>16} {:>16} {:>9} {:>7}  verdict\n",
                    p.case, "point", "expected", "measured", "error", "tol"
                ));
                last = &p.case;
            }
            let (e, m) = if p.unit.is_empty() {
                (format!("{:.4}", p.expected), format!("{:.4}", p.measured))
            } else if p.unit == "s" {
                (
                    format!("{:.3} s", p.expected),
                    format!("{:.3} s", p.measured),
                )
            } else {
                (
                    units::si(p.expected, &p.unit),
                    units::si(p.measured, &p.unit),
                )
            };
            out.push_str(&format!(
                "{:<28} {:>16} {:>16} {:>+8.2}% {:>6.1}%  {}{}\n",
                p.label,
                e,
                m,
                p.error * 100.0,
                p.tolerance * 100.0,
                if p.pass { "PASS" } else { "FAIL" },
                if p.note.is_empty() {
                    String::new()
                } else {
                    format!("  ({})", p.note)
                }
            ));
        }
        let failed = self.points.iter().filter(|p| !p.pass).count();
        out.push_str(&format!(
            "\n{} points, {} passed, {} failed\n",
            self.points.len(),
            self.points.len() - failed,
            failed
        ));
        out
    }
}

/// Builds the runs of the selected cases.
pub fn plan(grid: Grid, only: &[String]) -> Vec<CaseRun> {
    let want = |c: &str| only.is_empty() || only.iter().any(|o| o == c);
    let mut runs = Vec::new();
    if want("link-bandwidth") {
        runs.extend(cases::link_bandwidth(grid, Stack::Quic));
    }
    if want("mathis") {
        runs.extend(cases::mathis(grid, Stack::Quic));
    }
    if want("high-loss") {
        runs.extend(cases::high_loss(grid, Stack::Quic));
    }
    if want("flow-control") {
        runs.extend(cases::flow_control(grid));
    }
    if want("fair-share") {
        runs.extend(cases::fair_share(grid, Stack::Quic));
    }
    if want("tcp-link-bandwidth") {
        runs.extend(cases::link_bandwidth(grid, Stack::Tcp));
    }
    if want("tcp-mathis") {
        runs.extend(cases::mathis(grid, Stack::Tcp));
    }
    if want("tcp-high-loss") {
        runs.extend(cases::high_loss(grid, Stack::Tcp));
    }
    if want("tcp-fair-share") {
        runs.extend(cases::fair_share(grid, Stack::Tcp));
    }
    if want("quic-vs-tcp") {
        runs.extend(cases::quic_vs_tcp(grid));
    }
    if want("model-link-bandwidth") {
        runs.extend(model::link_bandwidth(grid));
    }
    if want("model-mathis") {
        runs.extend(model::mathis(grid));
    }
    if want("model-high-loss") {
        runs.extend(model::high_loss(grid));
    }
    if want("model-flow-control") {
        runs.extend(model::flow_control(grid));
    }
    if want("model-fair-share") {
        runs.extend(model::fair_share(grid));
    }
    if want("model-vs-quic") {
        runs.extend(model::model_vs_quic(grid));
    }
    runs.extend(aqm::plan(&want));
    runs
}

/// Share of the time after the first slow-start exit skipped as transient in the Mathis cases.
const MATHIS_SETTLE_FRACTION: f64 = 0.25;

/// What one run measured.
struct Measured {
    value: f64,
    error: Option<String>,
    /// Mean loss cycle after the first congestion event, in base round trips (time between
    /// congestion events); `None` without two events.
    cycle_rtts: Option<f64>,
    /// Fair share: per flow, per 1-s bin end time, UDP throughput.
    bins: Vec<(String, f64, f64)>,
    /// Download completion time of the measured flow, s.
    completion_s: Option<f64>,
    /// The first flow's result, for the cross-check's mechanism detail.
    flow: Option<results::Flow>,
}

/// The simulator's inputs for one case run: a single-point sweep and its spec.
fn job_inputs(run: &CaseRun) -> (SweepPoint, RunSpec) {
    let point = SweepPoint {
        axes: vec![],
        scenario: run.scenario.clone(),
    };
    let spec = RunSpec {
        id: run.label.clone(),
        point: 0,
        rep: 0,
        seed: run.seed,
    };
    (point, spec)
}

/// Whether a case reads the time series (recording them costs time the others need not pay).
fn needs_series(run: &CaseRun) -> bool {
    matches!(
        run.measure,
        Measure::PayloadThroughputAfterFirstLoss
            | Measure::FairShareBins
            | Measure::Aqm(aqm::AqmCheck::SteadyDelay { .. })
    )
}

/// The figure `run` checks, read from its result.
fn measure(run: &CaseRun, result: Result<results::Run, EngineError>) -> Measured {
    let result = match result {
        Ok(r) => r,
        Err(e) => {
            return Measured {
                value: f64::NAN,
                error: Some(e.to_string()),
                cycle_rtts: None,
                bins: vec![],
                completion_s: None,
                flow: None,
            }
        }
    };
    let flow = &result.flows[0];
    let error = result.flows.iter().find_map(|f| f.error.clone());
    let value = match run.measure {
        Measure::WindowPayloadThroughput => flow.window_payload_throughput_bps.unwrap_or(f64::NAN),
        Measure::WindowGoodput => flow.window_goodput_bps.unwrap_or(f64::NAN),
        Measure::PayloadThroughputAfterFirstLoss => {
            let bin = run.scenario.sample_interval.as_secs_f64();
            match flow.first_congestion_s {
                Some(first_loss) => {
                    // Periodic loss hits slow start late (after 1/p packets), so the window
                    // first halves down from far above its steady state over a few cycles; the
                    // first quarter of the time after slow start is that transient, not the
                    // sawtooth the model describes.
                    let t0 = first_loss + MATHIS_SETTLE_FRACTION * (result.end_s - first_loss);
                    let v: Vec<f64> = result
                        .series
                        .iter()
                        .filter(|r| r.t_s - bin >= t0 - 1e-9)
                        .map(|r| r.payload_throughput_bps)
                        .collect();
                    if v.is_empty() {
                        f64::NAN
                    } else {
                        v.iter().sum::<f64>() / v.len() as f64
                    }
                }
                None => f64::NAN,
            }
        }
        Measure::FairShareBins | Measure::Aqm(_) => 0.0,
        Measure::DownloadGoodput => flow.goodput_bps.unwrap_or(f64::NAN),
    };
    let bins = result
        .series
        .iter()
        .map(|r| (r.flow.clone(), r.t_s, r.payload_throughput_bps))
        .collect();
    let cycle_rtts = match (run.loss, flow.first_congestion_s, flow.congestion_events) {
        (Some(lp), Some(first), Some(events)) if events >= 2 => {
            Some((result.end_s - first) / (events - 1) as f64 / lp.rtt_s)
        }
        _ => None,
    };
    Measured {
        value,
        error,
        cycle_rtts,
        bins,
        completion_s: flow.completion_s,
        flow: (run.measure == Measure::DownloadGoodput).then(|| flow.clone()),
    }
}

/// Runs the plan through the experiment library on `executor` and checks every point.
pub fn run(
    grid: Grid,
    only: &[String],
    executor: &dyn Executor,
    progress: &dyn Progress,
) -> Result<ValidationReport, ExperimentError> {
    let runs = plan(grid, only);
    let inputs: Vec<(SweepPoint, RunSpec)> = runs.iter().map(job_inputs).collect();
    let jobs: Vec<Job<'_>> = runs
        .iter()
        .zip(&inputs)
        .map(|(r, (point, spec))| Job {
            point,
            spec,
            outputs: RunOutputs {
                series: needs_series(r),
                ..Default::default()
            },
        })
        .collect();
    let results = experiment::run_in_memory(&SimEngine::default(), &jobs, executor, progress)?;
    let mut points = Vec::new();
    // The queue disciplines' runs are judged one by one on their whole result (and reported
    // last, as they are listed).
    let mut aqm_points = Vec::new();
    let mut other = Vec::new();
    for (r, result) in runs.iter().zip(results) {
        match (r.measure, result) {
            (Measure::Aqm(check), Ok(result)) => aqm_points.push(aqm::judge(r, check, &result)),
            (Measure::Aqm(_), Err(e)) => aqm_points.push(aqm::failed(r, &e.to_string())),
            (_, result) => other.push((r, result)),
        }
    }
    let runs: Vec<&CaseRun> = other.iter().map(|(r, _)| *r).collect();
    let measured: Vec<Measured> = other
        .into_iter()
        .map(|(r, result)| measure(r, result))
        .collect();
    // Fair-share runs are judged together per case; QUIC-vs-TCP runs in (quic, tcp) pairs.
    let mut fair: Vec<(&'static str, f64, Vec<&Measured>)> = Vec::new();
    let mut pending_quic: Option<(&CaseRun, &Measured)> = None;
    // Model vs quinn: per path and controller, the repetitions of each stack.
    let mut cross: Vec<(String, Vec<&Measured>, Vec<&Measured>)> = Vec::new();
    for (&r, m) in runs.iter().zip(&measured) {
        if r.case == "model-vs-quic" {
            let (label, stack) = r.label.rsplit_once('|').unwrap_or((&r.label, "quic"));
            let i = match cross.iter().position(|(l, _, _)| l == label) {
                Some(i) => i,
                None => {
                    cross.push((label.to_string(), vec![], vec![]));
                    cross.len() - 1
                }
            };
            if stack == "quic-model" {
                cross[i].2.push(m);
            } else {
                cross[i].1.push(m);
            }
            continue;
        }
        if r.measure == Measure::FairShareBins {
            match fair.iter_mut().find(|(c, _, _)| *c == r.case) {
                Some((_, _, v)) => v.push(m),
                None => fair.push((r.case, r.expected_bps, vec![m])),
            }
            continue;
        }
        if r.case == "quic-vs-tcp" {
            match pending_quic.take() {
                None => pending_quic = Some((r, m)),
                Some((qr, qm)) => points.push(compare_pair(qr, qm, r, m)),
            }
            continue;
        }
        let tol = match r.case {
            "link-bandwidth" | "tcp-link-bandwidth" | "model-link-bandwidth" => {
                cases::TOL_LINK_BANDWIDTH
            }
            "flow-control" | "model-flow-control" => cases::TOL_FLOW_CONTROL,
            "high-loss" | "tcp-high-loss" | "model-high-loss" => cases::TOL_HIGH_LOSS,
            _ => cases::TOL_MATHIS,
        };
        let error = m.value / r.expected_bps - 1.0;
        points.push(PointResult {
            case: r.case.into(),
            label: r.label.clone(),
            expected: r.expected_bps,
            measured: m.value,
            error,
            tolerance: tol,
            pass: m.error.is_none() && error.abs() <= tol,
            note: m
                .error
                .clone()
                .or_else(|| {
                    r.loss
                        .map(|lp| loss_detail(&lp, m, r.case == "model-high-loss"))
                })
                .unwrap_or_default(),
            unit: "bit/s".into(),
            drawn_at: r.drawn_at.clone(),
        });
    }
    let mut figures = drawn::per_point_figures(&points);
    for (case, tp_max, reps) in &fair {
        points.extend(check_fair_share(case, reps, *tp_max));
        let bins: Vec<&[(String, f64, f64)]> = reps.iter().map(|m| m.bins.as_slice()).collect();
        figures.push(drawn::fair_share_figure(
            case,
            &FAIR_SHARE_SENDERS,
            *tp_max,
            &bins,
        ));
    }
    for (label, quic, model) in &cross {
        points.extend(compare_model(label, quic, model));
    }
    points.extend(aqm_points);
    Ok(ValidationReport { points, figures })
}

/// Mean of `f` over the runs where it is defined.
fn mean_of(ms: &[&Measured], f: impl Fn(&Measured) -> Option<f64>) -> Option<f64> {
    let v: Vec<f64> = ms
        .iter()
        .filter_map(|m| f(m))
        .filter(|x| x.is_finite())
        .collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The counters that explain a difference between the stacks (means over the repetitions):
/// packets sent and declared lost by the data sender, congestion events, ACK frames the receiver
/// sent, and the datagrams each side sent.
fn mechanism(ms: &[&Measured]) -> String {
    let c = |f: fn(&results::Flow) -> Option<u64>| {
        mean_of(ms, |m| m.flow.as_ref().and_then(f).map(|v| v as f64))
            .map_or_else(|| "n/a".into(), |v| format!("{v:.0}"))
    };
    format!(
        "sent {} lost {} cong {} acks {} dgrams c/s {}/{}",
        c(|f| f.packets_sent),
        c(|f| f.packets_lost),
        c(|f| f.congestion_events),
        c(|f| f.ack_frames_sent),
        c(|f| f.datagrams_sent[0]),
        c(|f| f.datagrams_sent[1]),
    )
}

/// Model vs quinn on one path and controller: goodput and completion time, means over the
/// repetitions, quinn as the reference; the note carries both stacks' counters.
fn compare_model(label: &str, quic: &[&Measured], model: &[&Measured]) -> Vec<PointResult> {
    let failed = quic
        .iter()
        .chain(model)
        .find_map(|m| m.error.clone())
        .or_else(|| {
            quic.iter()
                .chain(model)
                .any(|m| m.completion_s.is_none())
                .then(|| "a download did not complete".to_string())
        });
    let detail = format!(
        "{} reps; quinn: {}; model: {}",
        quic.len().min(model.len()),
        mechanism(quic),
        mechanism(model)
    );
    let tol = cases::TOL_MODEL_VS_QUIC;
    let point = |what: &str, unit: &str, q: Option<f64>, m: Option<f64>| {
        let (q, m) = (q.unwrap_or(f64::NAN), m.unwrap_or(f64::NAN));
        let error = m / q - 1.0;
        PointResult {
            case: "model-vs-quic".into(),
            label: format!("{label}: {what}"),
            expected: q,
            measured: m,
            error,
            tolerance: tol,
            pass: failed.is_none() && error.abs() <= tol,
            note: failed.clone().unwrap_or_else(|| detail.clone()),
            unit: unit.into(),
            drawn_at: None,
        }
    };
    vec![
        point(
            "goodput",
            "bit/s",
            mean_of(quic, |m| Some(m.value)),
            mean_of(model, |m| Some(m.value)),
        ),
        point(
            "completion",
            "s",
            mean_of(quic, |m| m.completion_s),
            mean_of(model, |m| m.completion_s),
        ),
    ]
}

/// The high-loss points' detail: every reference model's error and the measured loss cycle
/// against Mathis' (the mechanism behind a deviation: round trips without growth per cycle).
fn loss_detail(lp: &cases::LossPoint, m: &Measured, with_sawtooth: bool) -> String {
    let err = |model: f64| (m.value / model - 1.0) * 100.0;
    let mathis_cycle = (2.0 / (3.0 * lp.p)).sqrt();
    let cycle = m
        .cycle_rtts
        .map(|c| format!("cycle {c:.1} RTT vs Mathis {mathis_cycle:.1}"))
        .unwrap_or_else(|| "cycle n/a".into());
    let sawtooth = if with_sawtooth {
        format!(", sawtooth {:+.1}%", err(lp.models.sawtooth_bps))
    } else {
        String::new()
    };
    format!(
        "vs Mathis {:+.1}%, PFTK {:+.1}%{sawtooth}; {cycle}",
        err(lp.models.mathis_bps),
        err(lp.models.pftk_bps),
    )
}

/// Share of TPmax the active senders must use together in every phase.
const FAIR_SHARE_MIN_UTILISATION: f64 = 0.9;

/// Seconds skipped at the start of each phase while the senders converge.
const FAIR_SHARE_SETTLE_S: f64 = 5.0;

/// QUIC's goodput is the reference; TCP's must be within the tolerance of it.
fn compare_pair(quic: &CaseRun, qm: &Measured, _tcp: &CaseRun, tm: &Measured) -> PointResult {
    let error = tm.value / qm.value - 1.0;
    let label = quic.label.trim_end_matches(" quic").to_string();
    let failed = qm.error.clone().or_else(|| tm.error.clone());
    PointResult {
        case: "quic-vs-tcp".into(),
        label: format!("{label}: tcp vs quic"),
        expected: qm.value,
        measured: tm.value,
        error,
        tolerance: cases::TOL_QUIC_VS_TCP,
        pass: failed.is_none() && error.abs() <= cases::TOL_QUIC_VS_TCP,
        note: failed
            .unwrap_or_else(|| "expected = QUIC goodput, measured = TCP goodput, 5-30 s".into()),
        unit: "bit/s".into(),
        drawn_at: None,
    }
}

fn check_fair_share(case: &str, reps: &[&Measured], tp_max: f64) -> Vec<PointResult> {
    // Phase boundaries are the senders' start and stop times.
    let mut edges: Vec<u64> = FAIR_SHARE_SENDERS
        .iter()
        .flat_map(|&(a, b)| [a, b])
        .collect();
    edges.sort_unstable();
    edges.dedup();
    let mut out = Vec::new();
    for w in edges.windows(2) {
        let (a, b) = (w[0] as f64, w[1] as f64);
        let active: Vec<usize> = FAIR_SHARE_SENDERS
            .iter()
            .enumerate()
            .filter(|(_, &(s, e))| (s as f64) <= a && (e as f64) >= b)
            .map(|(i, _)| i)
            .collect();
        if active.is_empty() {
            continue;
        }
        // Per flow: the mean rate over the phase in each repetition.
        let per_flow: Vec<Vec<f64>> = active
            .iter()
            .map(|&i| {
                let name = format!("sender{}", i + 1);
                reps.iter()
                    .map(|m| {
                        let v: Vec<f64> = m
                            .bins
                            .iter()
                            .filter(|(f, t, _)| {
                                *f == name && *t - 1.0 >= a + FAIR_SHARE_SETTLE_S && *t <= b
                            })
                            .map(|(_, _, x)| *x)
                            .collect();
                        v.iter().sum::<f64>() / v.len().max(1) as f64
                    })
                    .collect()
            })
            .collect();
        let means: Vec<f64> = per_flow
            .iter()
            .map(|v| v.iter().sum::<f64>() / v.len().max(1) as f64)
            .collect();
        let jain = jain_index(&means).unwrap_or(0.0);
        // Jain's index is 1 for a lone sender whatever it achieves, so the phase must also
        // use the link: the active senders together reach at least this share of TPmax.
        let total: f64 = means.iter().sum();
        let utilised = total >= FAIR_SHARE_MIN_UTILISATION * tp_max;
        let detail: Vec<String> = active
            .iter()
            .zip(&per_flow)
            .map(|(&i, v)| match analysis::summarize(v) {
                Ok(s) => format!(
                    "s{}: {} ± {}",
                    i + 1,
                    units::si(s.mean, "bit/s"),
                    units::si(s.ci95_half_width(), "bit/s")
                ),
                Err(_) => format!("s{}: n/a", i + 1),
            })
            .collect();
        let failed = reps.iter().find_map(|m| m.error.clone());
        out.push(PointResult {
            case: case.into(),
            label: format!("{}-{} s, {} active", w[0], w[1], active.len()),
            expected: 1.0,
            measured: jain,
            error: 1.0 - jain,
            tolerance: 1.0 - cases::MIN_JAIN,
            pass: failed.is_none() && jain >= cases::MIN_JAIN && utilised,
            note: format!(
                "Jain over {} reps; total {} (min {:.0}% of TPmax); fair share {} each; {}",
                reps.len(),
                units::si(total, "bit/s"),
                FAIR_SHARE_MIN_UTILISATION * 100.0,
                units::si(tp_max / active.len() as f64, "bit/s"),
                failed.unwrap_or_else(|| detail.join(", "))
            ),
            unit: String::new(),
            drawn_at: None,
        });
    }
    out
}
