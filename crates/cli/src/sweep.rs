//! Several runs into a results directory: parallel execution, resume, Ctrl-C, then the summary.
//!
//! Layout of the directory: `results.jsonl` (one line per run, in run order once finished),
//! `series/<id>.csv`, `summary.csv` and `sweep.json` (what the results were computed from).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{bail, Context};
use rayon::prelude::*;
use report::ResultsStore;
use scenario::model::RunSpec;
use scenario::LoadedScenario;

use crate::cmd_sim::SimArgs;
use crate::exit::{self, Exit};
use crate::files::write_atomic;
use crate::progress::Progress;
use crate::{interrupt, manifest, summary, traces};

/// Runs `runs` of `loaded` into `out` and summarises them.
pub fn run(
    args: &SimArgs,
    loaded: &LoadedScenario,
    runs: &[RunSpec],
    out: &Path,
) -> anyhow::Result<Exit> {
    let Begun {
        store,
        todo,
        skipped,
    } = begin(out, loaded, runs, args.resume)?;

    let series_dir = if args.no_series {
        None
    } else {
        Some(out.join("series"))
    };
    if let Some(dir) = &series_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    interrupt::install()?;
    let ctx = RunContext {
        args,
        loaded,
        store: &store,
        series_dir,
        per_run_traces: runs.len() > 1,
    };
    let failures = execute_all(&ctx, &todo, runs.len(), skipped)?;

    if interrupt::requested() {
        let complete = store.completed_ids()?.intersection(&ids(runs)).count();
        eprintln!(
            "interrupted: {complete} of {} runs are in {}; to finish, run:\n  {}",
            runs.len(),
            store.path().display(),
            resume_command(out)
        );
        return Ok(exit::INTERRUPTED);
    }
    // Run order, not finish order, so the file is the same for any --jobs.
    let order: Vec<String> = runs.iter().map(|r| r.id.clone()).collect();
    store.finalize(&order)?;
    summary::write_and_print(out, loaded, runs, &store, args.json)?;
    eprintln!("results in {}", out.display());

    if failures.is_empty() {
        return Ok(exit::SUCCESS);
    }
    let list: Vec<&str> = failures.iter().map(|(id, _)| id.as_str()).collect();
    eprintln!(
        "{} of {} runs failed ({}); they are not in results.jsonl, so --resume retries them",
        failures.len(),
        runs.len(),
        list.join(", ")
    );
    Ok(exit::FAILURE)
}

/// What every worker needs to execute and record one run.
struct RunContext<'a> {
    args: &'a SimArgs,
    loaded: &'a LoadedScenario,
    store: &'a ResultsStore,
    series_dir: Option<PathBuf>,
    /// Several runs: trace file names carry the run id.
    per_run_traces: bool,
}

/// Executes `todo` on a pool of `--jobs` threads; returns the failed runs (id, message) in run order.
fn execute_all(
    ctx: &RunContext<'_>,
    todo: &[&RunSpec],
    total: usize,
    skipped: usize,
) -> anyhow::Result<Vec<(String, String)>> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(ctx.args.jobs.map_or(0, usize::from)) // 0 = one per core
        .build()
        .context("cannot start the worker threads")?;
    let progress = Progress::new(total, skipped);
    let failures = Mutex::new(Vec::new());
    pool.install(|| {
        // One run per task: runs are long and uneven, so rayon's default batching would leave
        // threads idle near the end.
        todo.par_iter().with_max_len(1).for_each(|spec| {
            if interrupt::requested() {
                return;
            }
            if let Err(e) = execute(ctx, spec) {
                progress.message(&format!("run {} failed: {e:#}", spec.id));
                failures
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push((spec.id.clone(), format!("{e:#}")));
            }
            progress.finished();
        });
    });
    progress.finish();
    let mut failures = failures.into_inner().unwrap_or_else(|p| p.into_inner());
    let rank: std::collections::BTreeMap<&str, usize> = todo
        .iter()
        .enumerate()
        .map(|(i, r)| (r.id.as_str(), i))
        .collect();
    failures.sort_by_key(|(id, _)| rank.get(id.as_str()).copied());
    Ok(failures)
}

/// Runs one spec and records it: series first, then the results line, so a run that counts as
/// complete (its line exists) always has its series too.
fn execute(ctx: &RunContext<'_>, spec: &RunSpec) -> anyhow::Result<()> {
    let point = ctx
        .loaded
        .points
        .get(spec.point)
        .with_context(|| format!("run {} refers to a missing sweep point", spec.id))?;
    let trace_id = ctx.per_run_traces.then_some(spec.id.as_str());
    let opts = traces::options(ctx.args, trace_id, ctx.series_dir.is_some())?;
    let result = sim::run(point, spec, &opts)?;
    if let Some(dir) = &ctx.series_dir {
        write_atomic(
            &dir.join(format!("{}.csv", spec.id)),
            result.series_csv().as_bytes(),
        )?;
    }
    let line = serde_json::to_value(&result).context("cannot serialise the result")?;
    ctx.store.append(&line)?;
    Ok(())
}

fn ids(runs: &[RunSpec]) -> BTreeSet<String> {
    runs.iter().map(|r| r.id.clone()).collect()
}

/// Whether `results.jsonl` exists and is not empty.
/// A results directory opened for a sweep: the store, the runs still to do, and how many were
/// already done (shared by `quiclab sim` and `quiclab emu`).
pub struct Begun<'a> {
    /// The results store of the directory.
    pub store: ResultsStore,
    /// Runs not yet in the store, in run order.
    pub todo: Vec<&'a RunSpec>,
    /// Runs found complete (resumed).
    pub skipped: usize,
}

/// Opens `out` for `runs`: refuses to mix with earlier results unless `resume`, checks or writes
/// the manifest, and lists what is left to run.
pub fn begin<'a>(
    out: &Path,
    loaded: &LoadedScenario,
    runs: &'a [RunSpec],
    resume: bool,
) -> anyhow::Result<Begun<'a>> {
    let results = out.join(report::store::RESULTS_FILE);
    if !resume && has_results(&results)? {
        bail!(
            "{} already holds results; add --resume to complete that sweep, or choose another --out",
            out.display()
        );
    }
    manifest::check_and_write(out, loaded, resume)?;
    let store = ResultsStore::open(out)?;
    let done = store.completed_ids()?;
    let todo: Vec<&RunSpec> = runs.iter().filter(|r| !done.contains(&r.id)).collect();
    let skipped = runs.len() - todo.len();
    if skipped > 0 {
        eprintln!("resuming: {skipped} of {} runs already done", runs.len());
    }
    Ok(Begun {
        store,
        todo,
        skipped,
    })
}

fn has_results(path: &Path) -> anyhow::Result<bool> {
    match std::fs::metadata(path) {
        Ok(m) => Ok(m.len() > 0),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e).with_context(|| format!("cannot inspect {}", path.display())),
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

    #[test]
    fn missing_results_file_is_no_results() {
        let p =
            std::env::temp_dir().join(format!("quiclab-none-{}/results.jsonl", std::process::id()));
        assert!(!has_results(&p).expect("not found is not an error"));
    }
}
