//! Merging the results directories of a sweep's shards into one, identical to a local sweep.
//!
//! The shards' directories are checked before anything is written: every one holds a shard
//! (`shard.json`) of the same sweep (`sweep.json` byte-identical, same shard count,
//! repetitions and run count), every shard index appears exactly once, and every shard holds
//! exactly its own runs, each once. The merged directory is then written through
//! [`OpenSweep`] — the lines copied as stored, the series files alongside — and finalised like
//! any sweep: `results.jsonl` in run order, `summary.csv`, the Parquet files.
//!
//! Bound: one shard's results.jsonl text at a time (at most
//! [`results::store::MAX_RESULTS_BYTES`]), plus one parsed line; the ids of every run (the
//! sweep's run list). Every file is read without following links and only if it is a regular
//! file, so a link to another file, a FIFO or `/dev/zero` in a shard's directory is an error.

use results::layout::ResultsLayout;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use scenario::model::SweepPoint;
use scenario::LoadedScenario;
use serde::Deserialize;

use crate::distributed::OpenSweep;
use crate::error::ExperimentError;
use crate::runner::{Sweep, SweepOutcome};
use crate::shard::{self, Shard, ShardManifest};
use results::layout::{DECLARED_FIGURES_FILE, MANIFEST_FILE};

/// Largest `figures.json` merged: 50 figures per scenario, a few hundred bytes each, and one
/// short index list per point.
const MAX_DECLARED_FIGURES_BYTES: u64 = 64 * 1024 * 1024;

/// A merged sweep: its scenario (rebuilt from the shards' records) and how it ended.
#[derive(Debug)]
pub struct Merged {
    /// The sweep's scenario as `sweep.json` and `shard.json` record it (no warnings).
    pub loaded: LoadedScenario,
    /// The finalised sweep (always [`SweepOutcome::Finished`]).
    pub outcome: SweepOutcome,
}

/// `sweep.json` read back (what [`crate::manifest::Manifest`] writes).
#[derive(Deserialize)]
struct StoredManifest {
    scenario: String,
    base_seed: u64,
    points: Vec<SweepPoint>,
}

/// One shard's directory, checked.
struct ShardDir {
    dir: PathBuf,
    record: ShardManifest,
}

fn refuse(message: String) -> ExperimentError {
    ExperimentError::Merge(message)
}

/// Merges the shard directories `shards` into `out` (which must not hold results yet).
pub fn merge(out: &Path, shards: &[PathBuf]) -> Result<Merged, ExperimentError> {
    let Some(first) = shards.first() else {
        return Err(refuse("no shard directories given".into()));
    };
    let manifest_of = |dir: &Path| {
        let path = dir.join(MANIFEST_FILE);
        fsutil::read_bounded(&path, crate::files::MAX_RECORD_BYTES).map_err(|e| {
            refuse(format!(
                "cannot read {}: {e}; is {} a results directory of `quiclab sim --shard`?",
                path.display(),
                dir.display()
            ))
        })
    };
    let manifest = manifest_of(first)?;
    let mut dirs: Vec<ShardDir> = Vec::new();
    let mut seen_paths = BTreeMap::new();
    for dir in shards {
        if !dir.is_dir() {
            return Err(refuse(format!(
                "{} is not a shard's directory (not a directory): give the --out directories of `quiclab sim --shard`",
                dir.display()
            )));
        }
        let real = dir
            .canonicalize()
            .map_err(ExperimentError::io("cannot open", dir))?;
        if let Some(earlier) = seen_paths.insert(real, dir.clone()) {
            return Err(refuse(format!(
                "{} and {} are the same directory; give each shard's directory once",
                earlier.display(),
                dir.display()
            )));
        }
        let record = shard::read(dir)?.ok_or_else(|| {
            refuse(format!(
                "{} is not a shard's directory (no {}): run the shards with `quiclab sim --shard INDEX/COUNT --out DIR`",
                dir.display(),
                results::layout::SHARD_FILE
            ))
        })?;
        if manifest_of(dir)? != manifest {
            return Err(refuse(format!(
                "{} and {} hold shards of different sweeps (their {MANIFEST_FILE} differ: scenario, seed or sweep points); merge shards of one sweep only",
                first.display(),
                dir.display()
            )));
        }
        if let Some(other) = dirs.first() {
            let (a, b) = (&other.record, &record);
            if (a.shards, a.reps, a.runs) != (b.shards, b.reps, b.runs) {
                return Err(refuse(format!(
                    "{} is a shard of {} shards, {} repetitions, {} runs but {} of {} shards, {} repetitions, {} runs; merge shards of one sweep only",
                    other.dir.display(), a.shards, a.reps, a.runs,
                    dir.display(), b.shards, b.reps, b.runs
                )));
            }
        }
        if let Some(twin) = dirs.iter().find(|d| d.record.shard == record.shard) {
            return Err(refuse(format!(
                "{} and {} both hold shard {}/{}; give each shard once",
                twin.dir.display(),
                dir.display(),
                record.shard,
                record.shards
            )));
        }
        dirs.push(ShardDir {
            dir: dir.clone(),
            record,
        });
    }
    let count = dirs[0].record.shards;
    let missing: Vec<String> = (0..count)
        .filter(|i| !dirs.iter().any(|d| d.record.shard == *i))
        .map(|i| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        return Err(refuse(format!(
            "shard {} missing: give the directories of all {count} shards",
            missing.join(", ")
        )));
    }
    let stored: StoredManifest =
        serde_json::from_slice(&manifest).map_err(|source| ExperimentError::Json {
            what: format!("cannot parse {}", first.join(MANIFEST_FILE).display()),
            source,
        })?;
    let loaded = LoadedScenario {
        name: stored.scenario,
        base_seed: stored.base_seed,
        reps: dirs[0].record.reps,
        point_reps: Vec::new(),
        points: stored.points,
        warnings: Vec::new(),
    };
    let runs = loaded.runs();
    if runs.len() != dirs[0].record.runs {
        return Err(refuse(format!(
            "{} records {} runs, but its sweep has {}; the shard directories are inconsistent",
            first.join(results::layout::SHARD_FILE).display(),
            dirs[0].record.runs,
            runs.len()
        )));
    }
    let rank: BTreeMap<&str, usize> = runs
        .iter()
        .enumerate()
        .map(|(k, r)| (r.id.as_str(), k))
        .collect();
    // Check every shard before writing anything; keep nothing but the verdict (a shard's
    // lines as `Value`s are ten times its text), and read each file again to copy it.
    for d in &dirs {
        check_shard(d, &rank)?;
    }
    let series = dirs
        .iter()
        .any(|d| ResultsLayout::new(&d.dir).series_dir().is_dir());
    let sweep = Sweep {
        loaded: &loaded,
        out,
        resume: false,
        series,
    };
    let open = OpenSweep::open(&sweep)?;
    // The declared figures are no part of sweep.json (a figure changes no result): the first
    // shard's record carries over.
    if let Some(first) = dirs.first() {
        let declared = first.dir.join(DECLARED_FIGURES_FILE);
        match fsutil::read_bounded(&declared, MAX_DECLARED_FIGURES_BYTES) {
            Ok(bytes) => crate::files::write_atomic(&out.join(DECLARED_FIGURES_FILE), &bytes)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(ExperimentError::io("cannot read", &declared)(e)),
        }
    }
    for d in &dirs {
        let path = ResultsLayout::new(&d.dir).results();
        let text = crate::files::read_results(&path)?;
        for raw in text.lines() {
            let line: serde_json::Value =
                serde_json::from_str(raw).map_err(|source| ExperimentError::Json {
                    what: format!("cannot parse {}", path.display()),
                    source,
                })?;
            let id = line.get("id").and_then(serde_json::Value::as_str);
            let csv = match id {
                Some(id) if series => {
                    let file = ResultsLayout::new(&d.dir).series(id);
                    match fsutil::read_bounded(&file, crate::files::MAX_SERIES_FILE_BYTES) {
                        Ok(bytes) => Some(bytes),
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                        Err(e) => return Err(ExperimentError::io("cannot read", &file)(e)),
                    }
                }
                _ => None,
            };
            open.record_stored(&line, csv.as_deref())?;
        }
    }
    let outcome = open.finish()?;
    Ok(Merged { loaded, outcome })
}

/// Checks one shard's results.jsonl: whole, each line a run of this shard, each run of the
/// shard exactly once.
fn check_shard(d: &ShardDir, rank: &BTreeMap<&str, usize>) -> Result<(), ExperimentError> {
    let shard = d.record.shard().unwrap_or(Shard { index: 0, count: 1 });
    let path = ResultsLayout::new(&d.dir).results();
    let text = crate::files::read_results(&path)?;
    let resume = format!(
        "finish it with its `quiclab sim ... --shard {shard} --out {}` command plus --resume",
        d.dir.display()
    );
    if !text.is_empty() && !text.ends_with('\n') {
        return Err(refuse(format!(
            "{} ends in a partial line (the shard was interrupted); {resume}",
            path.display()
        )));
    }
    let mut seen = BTreeSet::new();
    for (n, raw) in text.lines().enumerate() {
        let line: serde_json::Value = serde_json::from_str(raw).map_err(|e| {
            refuse(format!(
                "{}:{}: not a results line: {e}",
                path.display(),
                n + 1
            ))
        })?;
        let Some(id) = line.get("id").and_then(serde_json::Value::as_str) else {
            return Err(refuse(format!(
                "{}:{}: a results line without an id",
                path.display(),
                n + 1
            )));
        };
        let Some(&k) = rank.get(id) else {
            return Err(refuse(format!(
                "{}:{}: run {id} is not a run of this sweep",
                path.display(),
                n + 1
            )));
        };
        if !shard.holds(k) {
            return Err(refuse(format!(
                "{}:{}: run {id} belongs to shard {}/{}, not {shard}",
                path.display(),
                n + 1,
                k % shard.count,
                shard.count
            )));
        }
        if !seen.insert(id.to_string()) {
            return Err(refuse(format!(
                "{}:{}: run {id} appears twice (the shard was not finished); {resume}",
                path.display(),
                n + 1
            )));
        }
    }
    let lacking: Vec<&str> = rank
        .iter()
        .filter(|(id, &k)| shard.holds(k) && !seen.contains(**id))
        .map(|(id, _)| *id)
        .collect();
    if !lacking.is_empty() {
        let shown: Vec<&str> = lacking.iter().take(5).copied().collect();
        return Err(refuse(format!(
            "{} (shard {shard}) lacks {} of its runs ({}{}); {resume}",
            d.dir.display(),
            lacking.len(),
            shown.join(", "),
            if lacking.len() > shown.len() {
                ", …"
            } else {
                ""
            }
        )));
    }
    Ok(())
}
