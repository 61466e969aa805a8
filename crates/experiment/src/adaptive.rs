//! Repetitions until the answer is clear: a sweep that adds repetitions to its points in batches
//! until each chosen metric's 95% interval is narrow enough, or (with variants) until each
//! variant's paired difference from the baseline is resolved.
//!
//! Points are decided in **groups**: the points that differ only in their variant. A group
//! runs the same repetitions for all its variants (so every repetition stays paired) and stops
//! as a whole. Each round runs the pending repetitions of every open group (an ordinary resumed
//! sweep, so the results directory holds them as any sweep's), then looks at each open group's
//! values *up to its current repetition count* and either closes it with a reason or grows it by
//! a batch. The decisions depend only on the results of runs, which are deterministic, and on
//! the repetition counts the rule itself set, so re-running the same command after an
//! interruption repeats the same decisions and resumes where it stopped.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use scenario::LoadedScenario;
use serde_json::Value;

use crate::error::ExperimentError;
use crate::executor::{Executor, Stop};
use crate::progress::Progress;
use crate::runner::{run_sweep, Sweep, SweepOutcome};
use engine::Engine;
use results::layout::ResultsLayout;
use results::store::ResultsStore;

/// What "clear" means.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    /// Every chosen metric's 95% Student-t half-width is at most this fraction of its mean
    /// (`0.02`: ±2%), at every point of the group.
    RelativeHalfWidth(f64),
    /// Every variant's paired difference from the baseline (the group's first variant), for
    /// every chosen metric, has a 95% interval that excludes zero, or one narrower than ± this
    /// fraction of the baseline's mean (a difference that small would not matter).
    Resolved(f64),
}

/// The rule: target, metrics, limits.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// What to reach.
    pub target: Target,
    /// Dotted metric paths (`flows.0.completion_s`) the target applies to.
    pub metrics: Vec<String>,
    /// Most repetitions a point gets.
    pub max_reps: u32,
    /// Repetitions added to an open group per round.
    pub batch: u32,
}

/// Why a group stopped.
#[derive(Debug, Clone, PartialEq)]
pub enum Reason {
    /// The target was reached.
    Reached,
    /// `max_reps` repetitions ran and the target was not reached.
    MaxReps,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Reason::Reached => "target reached",
            Reason::MaxReps => "max reps",
        })
    }
}

/// One group's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupOutcome {
    /// The sweep values the group's points share (every axis but `variant`).
    pub axes: Vec<(String, String)>,
    /// Its points.
    pub points: Vec<usize>,
    /// Repetitions each of its points ran.
    pub reps: u32,
    /// Why it stopped.
    pub reason: Reason,
    /// The worst value of the criterion when it stopped, per metric: the relative half-width
    /// (`RelativeHalfWidth`) or, with `Resolved`, the relative half-width of the least resolved
    /// difference (0 when every difference excludes zero); `None`: not measurable (fewer than
    /// two values, or a mean of 0).
    pub worst: Vec<(String, Option<f64>)>,
}

/// How an adaptive sweep ended.
#[derive(Debug, Clone)]
pub struct AdaptiveOutcome {
    /// The last round's outcome: `Finished` when every group stopped (its summary rows and
    /// failures are the whole sweep's), `Interrupted` when a stop was requested (re-running the
    /// same command resumes).
    pub last: SweepOutcome,
    /// Per group in point order, when every group stopped; empty when interrupted.
    pub groups: Vec<GroupOutcome>,
    /// Repetitions of each point in the last round (`LoadedScenario::point_reps`).
    pub point_reps: Vec<u32>,
}

/// Why a rule is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RuleError {
    /// No metric to judge by.
    #[error("name at least one metric to judge the repetitions by")]
    NoMetric,
    /// The target is not a positive fraction.
    #[error("the target must be a positive fraction, got {0}")]
    Target(f64),
    /// Fewer than two repetitions can never give an interval.
    #[error("--max-reps must be at least 2 and at least run.reps ({reps}), got {max}")]
    MaxReps {
        /// run.reps.
        reps: u32,
        /// What was asked.
        max: u32,
    },
    /// A batch of 0 would never add anything.
    #[error("the batch must be at least 1")]
    Batch,
}

impl Rule {
    /// Checks the rule against the sweep's starting repetitions.
    pub fn check(&self, reps: u32) -> Result<(), RuleError> {
        if self.metrics.is_empty() {
            return Err(RuleError::NoMetric);
        }
        let (Target::RelativeHalfWidth(t) | Target::Resolved(t)) = self.target;
        if !(t.is_finite() && t > 0.0) {
            return Err(RuleError::Target(t));
        }
        if self.max_reps < 2 || self.max_reps < reps {
            return Err(RuleError::MaxReps {
                reps,
                max: self.max_reps,
            });
        }
        if self.batch == 0 {
            return Err(RuleError::Batch);
        }
        Ok(())
    }
}

/// A group of points: the sweep values its points share (every axis but `variant`) and the
/// points.
pub type Group = (Vec<(String, String)>, Vec<usize>);

/// The groups of `loaded`'s points: points with the same axes apart from `variant`, in the
/// order of their first point; the first variant of a group is its baseline.
pub fn groups(loaded: &LoadedScenario) -> Vec<Group> {
    let mut out: Vec<Group> = Vec::new();
    for (i, p) in loaded.points.iter().enumerate() {
        let axes: Vec<(String, String)> = p
            .axes
            .iter()
            .filter(|(k, _)| k != scenario::VARIANT_AXIS)
            .cloned()
            .collect();
        match out.iter_mut().find(|(a, _)| *a == axes) {
            Some((_, members)) => members.push(i),
            None => out.push((axes, vec![i])),
        }
    }
    out
}

/// Values of `metrics` by point, metric and repetition (below each point's count), from the
/// stored lines.
type Values = BTreeMap<usize, BTreeMap<String, BTreeMap<u32, f64>>>;

fn values(
    loaded: &LoadedScenario,
    out: &Path,
    metrics: &[String],
) -> Result<Values, ExperimentError> {
    let runs = loaded.runs();
    let wanted: BTreeMap<&str, (usize, u32)> = runs
        .iter()
        .map(|r| (r.id.as_str(), (r.point, r.rep)))
        .collect();
    let paths: Vec<&str> = metrics.iter().map(String::as_str).collect();
    let mut v = Values::new();
    ResultsStore::open(out)?.for_each_result(|line: Value| {
        let Some(&(point, rep)) = line
            .get("id")
            .and_then(Value::as_str)
            .and_then(|id| wanted.get(id))
        else {
            return;
        };
        let found = analysis::metrics_from_runs(std::slice::from_ref(&line), &paths);
        for m in metrics {
            if let Some(&x) = found.get(m.as_str()).and_then(|xs| xs.first()) {
                v.entry(point)
                    .or_default()
                    .entry(m.clone())
                    .or_default()
                    .insert(rep, x);
            }
        }
    })?;
    Ok(v)
}

/// Relative 95% half-width of the mean of `xs` (`None` below two values or for a mean of 0
/// with some spread; 0 for identical values).
fn relative_half_width(xs: &[f64]) -> Option<f64> {
    let s = analysis::summarize(xs).ok()?;
    if s.n < 2 {
        return None;
    }
    let hw = s.ci95_half_width();
    if hw == 0.0 {
        return Some(0.0);
    }
    (s.mean != 0.0).then(|| hw / s.mean.abs())
}

/// The group's worst criterion value per metric (see [`GroupOutcome::worst`]).
fn judge(rule: &Rule, members: &[usize], values: &Values) -> Vec<(String, Option<f64>)> {
    let empty = BTreeMap::new();
    let of = |p: usize, m: &str| -> &BTreeMap<u32, f64> {
        values.get(&p).and_then(|v| v.get(m)).unwrap_or(&empty)
    };
    rule.metrics
        .iter()
        .map(|m| {
            let worst = match rule.target {
                Target::RelativeHalfWidth(_) => members
                    .iter()
                    .map(|&p| relative_half_width(&of(p, m).values().copied().collect::<Vec<_>>()))
                    .try_fold(0.0_f64, |w, x| x.map(|x| w.max(x))),
                Target::Resolved(effect) => {
                    let Some((&base, others)) = members.split_first() else {
                        return (m.clone(), None);
                    };
                    if others.is_empty() {
                        // Nothing to compare: judge the lone point by its own interval.
                        relative_half_width(&of(base, m).values().copied().collect::<Vec<_>>())
                    } else {
                        let b = of(base, m);
                        let base_mean =
                            analysis::summarize(&b.values().copied().collect::<Vec<_>>())
                                .ok()
                                .map(|s| s.mean.abs());
                        others
                            .iter()
                            .map(|&p| {
                                let d: Vec<f64> = of(p, m)
                                    .iter()
                                    .filter_map(|(r, x)| b.get(r).map(|y| x - y))
                                    .collect();
                                let s = analysis::summarize(&d).ok().filter(|s| s.n >= 2)?;
                                let hw = s.ci95_half_width();
                                if s.mean.abs() > hw {
                                    return Some(0.0); // excludes zero: resolved
                                }
                                let scale = base_mean.filter(|b| *b > 0.0)?;
                                // Below `effect` is resolved; report it relative to the effect.
                                Some(if hw / scale <= effect {
                                    0.0
                                } else {
                                    hw / scale
                                })
                            })
                            .try_fold(0.0_f64, |w, x| x.map(|x| w.max(x)))
                    }
                }
            };
            (m.clone(), worst)
        })
        .collect()
}

fn reached(rule: &Rule, worst: &[(String, Option<f64>)]) -> bool {
    let target = match rule.target {
        Target::RelativeHalfWidth(t) => t,
        Target::Resolved(_) => 0.0,
    };
    worst.iter().all(|(_, w)| w.is_some_and(|w| w <= target))
}

/// Runs `sweep` (its `loaded.reps` are the first batch of every point) under `rule`, round by
/// round, and writes `stopping.csv` with each group's outcome. `report` is told about every
/// round (`round`, open groups, runs to do).
pub fn run_adaptive(
    sweep: &Sweep<'_>,
    rule: &Rule,
    engine: &dyn Engine,
    executor: &dyn Executor,
    stop: &Stop<'_>,
    progress: &dyn Progress,
    report: &dyn Fn(usize, usize, usize),
) -> Result<AdaptiveOutcome, ExperimentError> {
    rule.check(sweep.loaded.reps)
        .map_err(|e| ExperimentError::Adaptive(e.to_string()))?;
    let groups = groups(sweep.loaded);
    let mut loaded = sweep.loaded.clone();
    loaded.point_reps = vec![loaded.reps; loaded.points.len()];
    let mut open: Vec<bool> = vec![true; groups.len()];
    let mut outcomes: Vec<Option<GroupOutcome>> = vec![None; groups.len()];
    let mut resume = sweep.resume;
    for round in 1.. {
        let open_count = open.iter().filter(|o| **o).count();
        let todo = loaded.runs().len();
        report(round, open_count, todo);
        let this = Sweep {
            loaded: &loaded,
            resume,
            ..*sweep
        };
        let outcome = run_sweep(&this, engine, executor, stop, progress)?;
        resume = true;
        if matches!(outcome, SweepOutcome::Interrupted { .. }) {
            return Ok(AdaptiveOutcome {
                last: outcome,
                groups: Vec::new(),
                point_reps: loaded.point_reps,
            });
        }
        let values = values(&loaded, sweep.out, &rule.metrics)?;
        let point_reps = loaded.point_reps.clone();
        for (g, (axes, members)) in groups.iter().enumerate() {
            if !open[g] {
                continue;
            }
            let reps = point_reps[members[0]];
            let worst = judge(rule, members, &values);
            let reason = if reached(rule, &worst) {
                Some(Reason::Reached)
            } else if reps >= rule.max_reps {
                Some(Reason::MaxReps)
            } else {
                None
            };
            match reason {
                Some(reason) => {
                    open[g] = false;
                    outcomes[g] = Some(GroupOutcome {
                        axes: axes.clone(),
                        points: members.clone(),
                        reps,
                        reason,
                        worst,
                    });
                }
                None => {
                    let next = reps.saturating_add(rule.batch).min(rule.max_reps);
                    for &p in members {
                        loaded.point_reps[p] = next;
                    }
                }
            }
        }
        if open.iter().all(|o| !o) {
            let groups: Vec<GroupOutcome> = outcomes.into_iter().flatten().collect();
            write_stopping(sweep.out, rule, &groups)?;
            return Ok(AdaptiveOutcome {
                last: outcome,
                groups,
                point_reps,
            });
        }
    }
    unreachable!("the rounds end when every group has stopped")
}

/// `stopping.csv`: per group, its axes, repetitions, reason and criterion per metric.
fn write_stopping(out: &Path, rule: &Rule, groups: &[GroupOutcome]) -> Result<(), ExperimentError> {
    let mut axis_names: Vec<String> = Vec::new();
    for g in groups {
        for (k, _) in &g.axes {
            if !axis_names.contains(k) {
                axis_names.push(k.clone());
            }
        }
    }
    let mut header: Vec<String> = axis_names.clone();
    header.extend(["points", "reps", "reason"].map(String::from));
    header.extend(rule.metrics.iter().cloned());
    let rows = groups.iter().map(|g| {
        let mut row: Vec<String> = axis_names
            .iter()
            .map(|k| {
                g.axes
                    .iter()
                    .find(|(a, _)| a == k)
                    .map_or_else(String::new, |(_, v)| v.clone())
            })
            .collect();
        row.push(
            g.points
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(" "),
        );
        row.push(g.reps.to_string());
        row.push(g.reason.to_string());
        row.extend(
            g.worst
                .iter()
                .map(|(_, w)| w.map_or_else(String::new, |w| format!("{w:.6}"))),
        );
        row
    });
    let text = tables::csv(header, rows);
    let path = ResultsLayout::new(out).stopping();
    fsutil::write_atomic(&path, text.as_bytes()).map_err(ExperimentError::io("cannot write", &path))
}

#[cfg(test)]
mod tests;
