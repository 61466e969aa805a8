//! A sweep into a results directory from the command line: runs the experiment library's
//! runner with the terminal's progress and Ctrl-C, then prints its outcome.
//!
//! Shared by `quiclab sim`, `quiclab emu` and `quiclab reproduce`, which only differ in the
//! engine and executor they hand over.

use std::path::Path;

use experiment::{Engine, Executor, Shard, Sweep, SweepOutcome};

use crate::exit::{self, Exit};
use crate::progress::Progress;
use crate::{interrupt, output};

/// What makes a finished sweep exit non-zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnFailure {
    /// A run without a result, or a run with a flow that reported an error: exit 1.
    Fail,
    /// Both are reported, and the exit status stays 0 (`--allow-failures`).
    Allow,
    /// Only runs without a result exit 1; failed flows are reported (`quiclab reproduce`,
    /// whose tables count what completed).
    RunsOnly,
}

impl OnFailure {
    /// `--allow-failures` or not.
    pub fn from_flag(allow_failures: bool) -> Self {
        if allow_failures {
            OnFailure::Allow
        } else {
            OnFailure::Fail
        }
    }
}

/// Runs `sweep` with `engine` on `executor`, stopping on Ctrl-C or when `stop` says so, then
/// prints the summary (a table, or its rows as one JSON line with `json`) and what failed.
pub fn run(
    sweep: &Sweep<'_>,
    engine: &dyn Engine,
    executor: &dyn Executor,
    stop: fn() -> bool,
    json: bool,
    on_failure: OnFailure,
) -> anyhow::Result<Exit> {
    run_shard(sweep, None, engine, executor, stop, json, on_failure)
}

/// [`run`] for one shard of the sweep (`None`: all of it).
pub fn run_shard(
    sweep: &Sweep<'_>,
    shard: Option<Shard>,
    engine: &dyn Engine,
    executor: &dyn Executor,
    stop: fn() -> bool,
    json: bool,
    on_failure: OnFailure,
) -> anyhow::Result<Exit> {
    interrupt::install()?;
    let progress = Progress::default();
    let outcome = experiment::run_sweep_shard(sweep, shard, engine, executor, &stop, &progress)?;
    if let (Some(s), SweepOutcome::Finished { .. }) = (shard, &outcome) {
        eprintln!(
            "shard {s} of the sweep is in {}; when every shard is done: quiclab merge OUT SHARD_DIR...",
            sweep.out.display()
        );
    }
    report(sweep, outcome, json, on_failure)
}

/// [`run`] with repetitions added until `rule` is met (`experiment::adaptive`): prints each
/// round, then why each group of points stopped, then the sweep's outcome as [`run`] does.
/// Returns the exit status and each point's repetitions at the end.
pub fn run_adaptive(
    sweep: &Sweep<'_>,
    rule: &experiment::adaptive::Rule,
    engine: &dyn Engine,
    executor: &dyn Executor,
    stop: fn() -> bool,
    json: bool,
    on_failure: OnFailure,
) -> anyhow::Result<(Exit, Vec<u32>)> {
    interrupt::install()?;
    let progress = Progress::default();
    let target = match rule.target {
        experiment::adaptive::Target::RelativeHalfWidth(t) => {
            format!("each mean's 95% interval within ±{}", percent(t))
        }
        experiment::adaptive::Target::Resolved(t) => format!(
            "each paired difference's 95% interval excluding 0 or within ±{} of the baseline",
            percent(t)
        ),
    };
    eprintln!(
        "repetitions until {target} for {} (batches of {}, at most {} per point)",
        rule.metrics.join(", "),
        rule.batch,
        rule.max_reps
    );
    let round = |n: usize, open: usize, runs: usize| {
        eprintln!("round {n}: {open} group(s) of points open, {runs} runs in the sweep");
    };
    let outcome = experiment::adaptive::run_adaptive(
        sweep, rule, engine, executor, &stop, &progress, &round,
    )?;
    for g in &outcome.groups {
        let point = if g.axes.is_empty() {
            "the point".to_string()
        } else {
            g.axes
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let worst: Vec<String> = g
            .worst
            .iter()
            .map(|(m, w)| match (rule.target, w) {
                (_, None) => format!("{m} not measurable"),
                (experiment::adaptive::Target::Resolved(_), Some(w)) if *w == 0.0 => {
                    format!("{m} resolved")
                }
                (experiment::adaptive::Target::Resolved(_), Some(w)) => format!(
                    "{m}: least resolved difference ±{} of the baseline",
                    percent(*w)
                ),
                (experiment::adaptive::Target::RelativeHalfWidth(_), Some(w)) => {
                    format!("{m} ±{}", percent(*w))
                }
            })
            .collect();
        eprintln!(
            "{point}: {} reps, {} ({})",
            g.reps,
            g.reason,
            worst.join(", ")
        );
    }
    if !outcome.groups.is_empty() {
        eprintln!(
            "why each group stopped: {}",
            results::layout::ResultsLayout::new(sweep.out)
                .stopping()
                .display()
        );
    }
    let code = report(sweep, outcome.last, json, on_failure)?;
    Ok((code, outcome.point_reps))
}

/// A fraction as a percentage with up to three significant decimals: `2%`, `0.35%`.
fn percent(f: f64) -> String {
    let p = f * 100.0;
    let text = format!("{p:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}%")
}

/// At most this many failed runs are listed one by one (a sweep of 1000 failing runs would
/// bury the summary).
const LISTED: usize = 10;

/// Prints how a sweep ended (the summary table or JSON rows, failures, how to resume) and
/// returns the exit status.
pub fn report(
    sweep: &Sweep<'_>,
    outcome: SweepOutcome,
    json: bool,
    on_failure: OnFailure,
) -> anyhow::Result<Exit> {
    match outcome {
        SweepOutcome::Interrupted {
            total,
            complete,
            results,
        } => {
            eprintln!(
                "interrupted: {complete} of {total} runs are in {}; to finish, run:\n  {}",
                results.display(),
                resume_command(sweep.out)
            );
            Ok(exit::stopped())
        }
        SweepOutcome::Finished {
            total,
            failures,
            rows,
        } => {
            if json {
                println!("{}", serde_json::to_string(&rows)?);
            } else {
                let flows = experiment::summary::flow_names(sweep.loaded);
                let windowed = sweep
                    .loaded
                    .points
                    .iter()
                    .any(|p| output::Window::of(&p.scenario).is_set());
                let mut downloads: Vec<String> = Vec::new();
                for p in &sweep.loaded.points {
                    for (i, f) in p.scenario.flows.iter().enumerate() {
                        let m = format!("flows.{i}.completion_s");
                        if f.workload.name() == "download" && !downloads.contains(&m) {
                            downloads.push(m);
                        }
                    }
                }
                print!(
                    "{}",
                    output::sweep_table(&rows, &flows, windowed, &downloads)
                );
            }
            eprintln!("results in {}", sweep.out.display());
            let flow_errors = experiment::flow_errors::in_dir(sweep.out)?;
            for f in flow_errors.iter().take(LISTED) {
                let flows: Vec<String> = f
                    .flows
                    .iter()
                    .map(|(name, error)| format!("flow {name}: {error}"))
                    .collect();
                eprintln!("run {} failed: {}", f.id, flows.join("; "));
            }
            if flow_errors.len() > LISTED {
                eprintln!(
                    "… and {} more runs with a failed flow",
                    flow_errors.len() - LISTED
                );
            }
            if !flow_errors.is_empty() {
                eprintln!(
                    "{} of {total} runs had a flow that failed; their results are in results.jsonl (flows.N.error)",
                    flow_errors.len()
                );
            }
            for f in failures.iter().take(LISTED) {
                eprintln!("run {} failed: {}", f.id, f.message);
            }
            if failures.len() > LISTED {
                eprintln!(
                    "… and {} more runs without a result",
                    failures.len() - LISTED
                );
            }
            let (recorded, retried): (Vec<_>, Vec<_>) = failures.iter().partition(|f| f.recorded);
            let ids = |fs: &[&experiment::Failure]| {
                fs.iter()
                    .map(|f| f.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            if !retried.is_empty() {
                eprintln!(
                    "{} of {total} runs failed ({}); they are not in results.jsonl, so --resume retries them",
                    retried.len(),
                    ids(&retried)
                );
            }
            if !recorded.is_empty() {
                eprintln!(
                    "{} of {total} runs crashed the engine ({}); results.jsonl holds an error record for each and --resume skips them (delete those lines to retry)",
                    recorded.len(),
                    ids(&recorded)
                );
            }
            let failed = match on_failure {
                OnFailure::RunsOnly => failures.len(),
                OnFailure::Fail | OnFailure::Allow => {
                    let mut failed: std::collections::BTreeSet<&str> =
                        failures.iter().map(|f| f.id.as_str()).collect();
                    failed.extend(flow_errors.iter().map(|f| f.id.as_str()));
                    failed.len()
                }
            };
            if failed == 0 {
                return Ok(exit::SUCCESS);
            }
            if on_failure == OnFailure::Allow {
                eprintln!(
                    "warning: {failed} of {total} runs failed; exit status 0 (--allow-failures)"
                );
                return Ok(exit::SUCCESS);
            }
            eprintln!(
                "error: {failed} of {total} runs failed (exit status {}; --allow-failures exits 0)",
                exit::FAILURE.0
            );
            Ok(exit::FAILURE)
        }
    }
}

/// This invocation's command line with `--resume` (and `--out`) added, quoted for a POSIX shell.
fn resume_command(out: &Path) -> String {
    let mut words: Vec<String> = std::env::args().collect();
    if !words.iter().any(|w| w == "--resume") {
        words.push("--resume".into());
    }
    if !words
        .iter()
        .any(|w| w == "--out" || w.starts_with("--out="))
    {
        words.push("--out".into());
        words.push(out.display().to_string());
    }
    words
        .iter()
        .map(|w| shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}

fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=,:%+@".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_leaves_plain_words_alone() {
        assert_eq!(shell_quote("--set"), "--set");
        assert_eq!(shell_quote("link.loss=1%"), "link.loss=1%");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
