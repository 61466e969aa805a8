//! `sweep.json` beside results.jsonl: what the results were computed from.
//!
//! Resuming keys on run ids (`p0-r1`), which say nothing about the scenario. Without this
//! record, resuming after editing the scenario would silently mix results of two different
//! experiments in one summary. Repetitions may change (adding reps to a sweep is legitimate
//! and keeps existing seeds), so only the base seed and the sweep points are compared.

use std::path::Path;

use scenario::LoadedScenario;
use serde_json::{json, Value};

use crate::error::ExperimentError;
use crate::files::{create_dir, write_atomic};

/// File name inside the results directory.
pub const MANIFEST_FILE: &str = "sweep.json";

/// The record for a loaded scenario.
pub fn manifest(loaded: &LoadedScenario) -> Result<Value, ExperimentError> {
    let points = serde_json::to_value(&loaded.points).map_err(|source| ExperimentError::Json {
        what: "cannot serialise the sweep points".into(),
        source,
    })?;
    Ok(json!({
        "scenario": loaded.name,
        "base_seed": loaded.base_seed,
        "points": points,
    }))
}

/// When resuming, checks that `dir` was produced by the same scenario; then (re)writes the record.
pub fn check_and_write(
    dir: &Path,
    loaded: &LoadedScenario,
    resume: bool,
) -> Result<(), ExperimentError> {
    let path = dir.join(MANIFEST_FILE);
    let current = manifest(loaded)?;
    if resume && path.exists() {
        let text =
            std::fs::read_to_string(&path).map_err(ExperimentError::io("cannot read", &path))?;
        let stored: Value =
            serde_json::from_str(&text).map_err(|source| ExperimentError::Json {
                what: format!("{} is not valid JSON", path.display()),
                source,
            })?;
        if stored != current {
            return Err(ExperimentError::DifferentSweep {
                dir: dir.to_path_buf(),
                manifest: path,
            });
        }
    }
    create_dir(dir)?;
    let mut text =
        serde_json::to_string_pretty(&current).map_err(|source| ExperimentError::Json {
            what: "cannot serialise the manifest".into(),
            source,
        })?;
    text.push('\n');
    write_atomic(&path, text.as_bytes())
}
