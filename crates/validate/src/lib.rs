//! quiclab's validation suite: the analytic cases of seed 001 (REFERENCES.md) run through the
//! real simulator, compared with theory, with a pass/fail verdict per point.
//!
//! `quiclab validate` runs the full grids; the test suite runs [`Grid::Quick`].

pub mod cases;

use rayon::prelude::*;
use report::stats::jain_index;
use scenario::model::{RunSpec, SweepPoint};
use serde::Serialize;

pub use cases::Grid;
use cases::{CaseRun, Measure, FAIR_SHARE_SENDERS};

/// Names of the cases, in the order they run.
pub const CASES: [&str; 4] = ["link-bandwidth", "mathis", "flow-control", "fair-share"];

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
}

/// Everything `quiclab validate` prints.
#[derive(Debug, Clone, Serialize)]
pub struct ValidationReport {
    pub points: Vec<PointResult>,
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
                out.push_str(&format!("\n== {} ==\n{:<28} {:>16} {:>16} {:>9} {:>7}  verdict\n", p.case, "point", "expected", "measured", "error", "tol"));
                last = &p.case;
            }
            let (e, m) = if p.case == "fair-share" {
                (format!("{:.4}", p.expected), format!("{:.4}", p.measured))
            } else {
                (report::si(p.expected, "bit/s"), report::si(p.measured, "bit/s"))
            };
            out.push_str(&format!(
                "{:<28} {:>16} {:>16} {:>+8.2}% {:>6.1}%  {}{}\n",
                p.label,
                e,
                m,
                p.error * 100.0,
                p.tolerance * 100.0,
                if p.pass { "PASS" } else { "FAIL" },
                if p.note.is_empty() { String::new() } else { format!("  ({})", p.note) }
            ));
        }
        let failed = self.points.iter().filter(|p| !p.pass).count();
        out.push_str(&format!("\n{} points, {} passed, {} failed\n", self.points.len(), self.points.len() - failed, failed));
        out
    }
}

/// Builds the runs of the selected cases.
pub fn plan(grid: Grid, only: &[String]) -> Vec<CaseRun> {
    let want = |c: &str| only.is_empty() || only.iter().any(|o| o == c);
    let mut runs = Vec::new();
    if want("link-bandwidth") {
        runs.extend(cases::link_bandwidth(grid));
    }
    if want("mathis") {
        runs.extend(cases::mathis(grid));
    }
    if want("flow-control") {
        runs.extend(cases::flow_control(grid));
    }
    if want("fair-share") {
        runs.extend(cases::fair_share(grid));
    }
    runs
}

/// What one run measured.
struct Measured {
    value: f64,
    error: Option<String>,
    /// Fair share: per flow, per 1-s bin end time, UDP throughput.
    bins: Vec<(String, f64, f64)>,
}

fn execute(run: &CaseRun) -> Measured {
    let point = SweepPoint { axes: vec![], scenario: run.scenario.clone() };
    let spec = RunSpec { id: run.label.clone(), point: 0, rep: 0, seed: run.seed };
    let series = matches!(run.measure, Measure::PayloadThroughputAfterFirstLoss | Measure::FairShareBins);
    let result = match sim::run(&point, &spec, &sim::RunOptions { series, ..Default::default() }) {
        Ok(r) => r,
        Err(e) => return Measured { value: f64::NAN, error: Some(e.to_string()), bins: vec![] },
    };
    let flow = &result.flows[0];
    let error = result.flows.iter().find_map(|f| f.error.clone());
    let value = match run.measure {
        Measure::WindowPayloadThroughput => flow.window_payload_throughput_bps.unwrap_or(f64::NAN),
        Measure::WindowGoodput => flow.window_goodput_bps.unwrap_or(f64::NAN),
        Measure::PayloadThroughputAfterFirstLoss => {
            let bin = run.scenario.sample_interval.as_secs_f64();
            match flow.first_congestion_s {
                Some(t0) => {
                    let v: Vec<f64> = result.series.iter().filter(|r| r.t_s - bin >= t0 - 1e-9).map(|r| r.payload_throughput_bps).collect();
                    if v.is_empty() { f64::NAN } else { v.iter().sum::<f64>() / v.len() as f64 }
                }
                None => f64::NAN,
            }
        }
        Measure::FairShareBins => 0.0,
    };
    let bins = result.series.iter().map(|r| (r.flow.clone(), r.t_s, r.payload_throughput_bps)).collect();
    Measured { value, error, bins }
}

/// Runs the plan on the current rayon pool and checks every point.
pub fn run(grid: Grid, only: &[String], progress: &(dyn Fn(usize, usize) + Sync)) -> ValidationReport {
    let runs = plan(grid, only);
    let total = runs.len();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let measured: Vec<Measured> = runs
        .par_iter()
        .map(|r| {
            let m = execute(r);
            progress(done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1, total);
            m
        })
        .collect();
    let mut points = Vec::new();
    let mut fair: Vec<&Measured> = Vec::new();
    let mut fair_expected = 0.0;
    for (r, m) in runs.iter().zip(&measured) {
        if r.measure == Measure::FairShareBins {
            fair.push(m);
            fair_expected = r.expected_bps;
            continue;
        }
        let tol = match r.case {
            "link-bandwidth" => cases::TOL_LINK_BANDWIDTH,
            "flow-control" => cases::TOL_FLOW_CONTROL,
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
            note: m.error.clone().unwrap_or_default(),
        });
    }
    if !fair.is_empty() {
        points.extend(check_fair_share(&fair, fair_expected));
    }
    ValidationReport { points }
}

/// Share of TPmax the active senders must use together in every phase.
const FAIR_SHARE_MIN_UTILISATION: f64 = 0.9;

/// Seconds skipped at the start of each phase while the senders converge.
const FAIR_SHARE_SETTLE_S: f64 = 5.0;

fn check_fair_share(reps: &[&Measured], tp_max: f64) -> Vec<PointResult> {
    // Phase boundaries are the senders' start and stop times.
    let mut edges: Vec<u64> = FAIR_SHARE_SENDERS.iter().flat_map(|&(a, b)| [a, b]).collect();
    edges.sort_unstable();
    edges.dedup();
    let mut out = Vec::new();
    for w in edges.windows(2) {
        let (a, b) = (w[0] as f64, w[1] as f64);
        let active: Vec<usize> = FAIR_SHARE_SENDERS.iter().enumerate().filter(|(_, &(s, e))| (s as f64) <= a && (e as f64) >= b).map(|(i, _)| i).collect();
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
                        let v: Vec<f64> = m.bins.iter().filter(|(f, t, _)| *f == name && *t - 1.0 >= a + FAIR_SHARE_SETTLE_S && *t <= b).map(|(_, _, x)| *x).collect();
                        v.iter().sum::<f64>() / v.len().max(1) as f64
                    })
                    .collect()
            })
            .collect();
        let means: Vec<f64> = per_flow.iter().map(|v| v.iter().sum::<f64>() / v.len().max(1) as f64).collect();
        let jain = jain_index(&means).unwrap_or(0.0);
        // Jain's index is 1 for a lone sender whatever it achieves, so the phase must also
        // use the link: the active senders together reach at least this share of TPmax.
        let total: f64 = means.iter().sum();
        let utilised = total >= FAIR_SHARE_MIN_UTILISATION * tp_max;
        let detail: Vec<String> = active
            .iter()
            .zip(&per_flow)
            .map(|(&i, v)| match report::summarize(v) {
                Ok(s) => format!("s{}: {} ± {}", i + 1, report::si(s.mean, "bit/s"), report::si(s.ci95_half_width(), "bit/s")),
                Err(_) => format!("s{}: n/a", i + 1),
            })
            .collect();
        let failed = reps.iter().find_map(|m| m.error.clone());
        out.push(PointResult {
            case: "fair-share".into(),
            label: format!("{}-{} s, {} active", w[0], w[1], active.len()),
            expected: 1.0,
            measured: jain,
            error: 1.0 - jain,
            tolerance: 1.0 - cases::MIN_JAIN,
            pass: failed.is_none() && jain >= cases::MIN_JAIN && utilised,
            note: format!("Jain over {} reps; total {} (min {:.0}% of TPmax); fair share {} each; {}", reps.len(), report::si(total, "bit/s"), FAIR_SHARE_MIN_UTILISATION * 100.0, report::si(tp_max / active.len() as f64, "bit/s"), failed.unwrap_or_else(|| detail.join(", "))),
        });
    }
    out
}
