//! `sweep.json` beside results.jsonl: what the results were computed from.
//!
//! Resuming keys on run ids (`p0-r1`), which say nothing about the scenario. Without this
//! record, `--resume` after editing the scenario would silently mix results of two different
//! experiments in one summary. Repetitions may change (adding reps to a sweep is legitimate
//! and keeps existing seeds), so only the base seed and the sweep points are compared.

use std::path::Path;

use anyhow::{bail, Context};
use serde_json::{json, Value};

use crate::files::write_atomic;

/// File name inside the results directory.
pub const MANIFEST_FILE: &str = "sweep.json";

/// The record for a loaded scenario.
pub fn manifest(loaded: &scenario::LoadedScenario) -> anyhow::Result<Value> {
    Ok(json!({
        "scenario": loaded.name,
        "base_seed": loaded.base_seed,
        "points": serde_json::to_value(&loaded.points).context("cannot serialise the sweep points")?,
    }))
}

/// When resuming, checks that `dir` was produced by the same scenario; then (re)writes the record.
pub fn check_and_write(
    dir: &Path,
    loaded: &scenario::LoadedScenario,
    resume: bool,
) -> anyhow::Result<()> {
    let path = dir.join(MANIFEST_FILE);
    let current = manifest(loaded)?;
    if resume && path.exists() {
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let stored: Value = serde_json::from_str(&text)
            .with_context(|| format!("{} is not valid JSON", path.display()))?;
        if stored != current {
            bail!(
                "{} holds results of a different scenario, seed or sweep (see {}); resume with the same settings, or choose another --out",
                dir.display(),
                path.display()
            );
        }
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut text = serde_json::to_string_pretty(&current)?;
    text.push('\n');
    write_atomic(&path, text.as_bytes())
}
