//! Shards: one sweep split over independent jobs (a Slurm array, a Kubernetes indexed Job),
//! each running every n-th run into its own results directory, merged afterwards.
//!
//! Run `k` of the sweep (its position in run order, [`scenario::LoadedScenario::runs`]) belongs
//! to shard `k mod n`. Dealing runs out round-robin keeps the shards' work even when points
//! differ in cost (a sweep over link rates has slow points and fast ones next to each other),
//! and it needs nothing but the run list, which every shard computes from the same scenario.
//!
//! A shard's directory holds the usual `sweep.json` (byte-identical across the shards of one
//! sweep: the merge checks that) and `shard.json` ([`ShardManifest`]): which shard it is, of
//! how many, and the repetitions the run list was built with (`sweep.json` leaves them out, so
//! the merge needs them to know every run of the sweep).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::ExperimentError;
use results::layout::SHARD_FILE;

/// Shard `index` of `count` (0-based: `0/4` … `3/4`), as `--shard INDEX/COUNT` writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// Which shard, from 0 (Slurm's `SLURM_ARRAY_TASK_ID` with `--array=0-(N-1)`, Kubernetes'
    /// `JOB_COMPLETION_INDEX`).
    pub index: usize,
    /// How many shards the sweep is split into, at least 1.
    pub count: usize,
}

/// Why a `--shard` value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid shard {given:?}: {why}; expected INDEX/COUNT with 0 <= INDEX < COUNT, e.g. 0/4")]
pub struct ShardParseError {
    /// The text as given.
    pub given: String,
    /// What is wrong with it.
    pub why: &'static str,
}

impl Shard {
    /// Shard `index` of `count`, if `index < count`.
    pub fn new(index: usize, count: usize) -> Option<Shard> {
        (index < count).then_some(Shard { index, count })
    }

    /// Whether run number `run` (position in run order) belongs to this shard.
    pub fn holds(&self, run: usize) -> bool {
        run % self.count == self.index
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl std::str::FromStr for Shard {
    type Err = ShardParseError;

    fn from_str(s: &str) -> Result<Shard, ShardParseError> {
        let refuse = |why| ShardParseError {
            given: s.to_string(),
            why,
        };
        let (i, n) = s.split_once('/').ok_or_else(|| refuse("no '/'"))?;
        let index: usize = i
            .trim()
            .parse()
            .map_err(|_| refuse("INDEX is not a non-negative integer"))?;
        let count: usize = n
            .trim()
            .parse()
            .map_err(|_| refuse("COUNT is not a positive integer"))?;
        if count == 0 {
            return Err(refuse("COUNT is 0"));
        }
        Shard::new(index, count).ok_or_else(|| refuse("INDEX is not below COUNT"))
    }
}

/// `shard.json`: what a shard's directory holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardManifest {
    /// Which shard, from 0.
    pub shard: usize,
    /// Of how many.
    pub shards: usize,
    /// Repetitions per sweep point the run list was built with.
    pub reps: u32,
    /// Runs of the whole sweep (all shards together).
    pub runs: usize,
}

impl ShardManifest {
    /// The shard this record describes.
    pub fn shard(&self) -> Option<Shard> {
        Shard::new(self.shard, self.shards)
    }
}

/// Reads `dir/shard.json`; `None` when the directory is not a shard's.
pub fn read(dir: &Path) -> Result<Option<ShardManifest>, ExperimentError> {
    let path = dir.join(SHARD_FILE);
    let Some(text) = crate::files::read_record(&path)? else {
        return Ok(None);
    };
    let record: ShardManifest =
        serde_json::from_slice(&text).map_err(|source| ExperimentError::Json {
            what: format!("cannot parse {}", path.display()),
            source,
        })?;
    if record.shard().is_none() {
        return Err(ExperimentError::BadShardRecord {
            path,
            why: format!(
                "shard {} of {} is not a shard (0 <= shard < shards)",
                record.shard, record.shards
            ),
        });
    }
    Ok(Some(record))
}

/// Checks that `dir` is (or can become) the directory of exactly this shard, then writes its
/// record. A directory that holds another shard's runs, or a whole sweep's, is refused: merging
/// it later would count its runs twice or miss some.
pub fn check_and_write(dir: &Path, wanted: Option<&ShardManifest>) -> Result<(), ExperimentError> {
    let stored = read(dir)?;
    if stored.as_ref() != wanted {
        let describe = |m: Option<&ShardManifest>| match m {
            Some(m) => format!("shard {}/{} of {} runs", m.shard, m.shards, m.runs),
            None => "a whole sweep".to_string(),
        };
        // A fresh directory (no results yet) takes any record; otherwise they must agree.
        let has_results = dir
            .join(results::layout::RESULTS_FILE)
            .metadata()
            .is_ok_and(|m| m.len() > 0);
        if has_results {
            return Err(ExperimentError::DifferentShard {
                dir: dir.to_path_buf(),
                stored: describe(stored.as_ref()),
                wanted: describe(wanted),
            });
        }
    }
    let path = dir.join(SHARD_FILE);
    match wanted {
        Some(m) => {
            let mut text =
                serde_json::to_string_pretty(m).map_err(|source| ExperimentError::Json {
                    what: "cannot serialise the shard record".into(),
                    source,
                })?;
            text.push('\n');
            crate::files::write_atomic(&path, text.as_bytes())
        }
        None => match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(ExperimentError::io("cannot remove", &path)(e)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_deal_runs_round_robin() {
        let s: Shard = "1/3".parse().expect("valid");
        assert_eq!(s, Shard { index: 1, count: 3 });
        assert_eq!(s.to_string(), "1/3");
        let held: Vec<usize> = (0..8).filter(|&k| s.holds(k)).collect();
        assert_eq!(held, [1, 4, 7]);
        for bad in ["3/3", "1", "a/2", "1/0", "-1/2", "1/b", ""] {
            let e = bad.parse::<Shard>().expect_err(bad);
            assert!(e.to_string().contains("INDEX/COUNT"), "{e}");
        }
    }

    #[test]
    fn a_directory_keeps_its_shard() {
        let tmp = fsutil::PrivateDir::new("quiclab-shard-").expect("dir");
        let dir = tmp.path();
        let one = ShardManifest {
            shard: 0,
            shards: 2,
            reps: 1,
            runs: 4,
        };
        let other = ShardManifest { shard: 1, ..one };
        check_and_write(dir, Some(&one)).expect("fresh");
        assert_eq!(read(dir).expect("read"), Some(one.clone()));
        // No results yet: the directory may still change its mind.
        check_and_write(dir, Some(&other)).expect("still empty");
        std::fs::write(dir.join("results.jsonl"), "{\"id\":\"p0-r1\"}\n").expect("results");
        check_and_write(dir, Some(&other)).expect("same shard");
        let e = check_and_write(dir, Some(&one)).expect_err("another shard");
        assert!(e.to_string().contains("shard 1/2"), "{e}");
        let e = check_and_write(dir, None).expect_err("a whole sweep");
        assert!(e.to_string().contains("a whole sweep"), "{e}");
        tmp.remove().expect("clean up");
    }
}
