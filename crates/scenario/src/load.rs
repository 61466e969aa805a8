//! Entry points: a file (or text) plus command-line overrides and axes → sweep points → runs.

use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::{At, Errors, ScenarioError};
use crate::input::read_regular;
use crate::limits::MAX_SCENARIO_BYTES;
use crate::model::{RunSpec, SweepPoint};
use crate::paths::parse_key;
use crate::resolve::resolve;
use crate::sweep::{merge_axes, parse_cli_axis, path_error, product, take_file_axes, MAX_RUNS};
use crate::tree::{parse_arg_value, parse_document, Val};

/// A scenario file with its sweep expanded: what a CLI needs to schedule runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadedScenario {
    /// `run.name`, or the file name without `.toml`.
    pub name: String,
    /// `run.seed`; every run's seed is derived from it (see [`run_seed`]).
    pub base_seed: u64,
    /// `run.reps`: repetitions of every point.
    pub reps: u32,
    /// One resolved scenario per combination of sweep values (one point without a sweep).
    pub points: Vec<SweepPoint>,
    /// Accepted input that is probably not what was meant (a bare probability ≥ 0.05), each
    /// with its place (`file:line:col` or the command-line argument); the CLI prints them.
    pub warnings: Vec<String>,
}

impl LoadedScenario {
    /// Every run, point by point, repetitions in order: ids `p{point}-r{rep}`.
    pub fn runs(&self) -> Vec<RunSpec> {
        let mut runs = Vec::with_capacity(self.points.len() * self.reps as usize);
        for point in 0..self.points.len() {
            for rep in 0..self.reps {
                runs.push(RunSpec {
                    id: format!("p{point}-r{rep}"),
                    point,
                    rep,
                    seed: run_seed(self.base_seed, point, rep),
                });
            }
        }
        runs
    }
}

/// SplitMix64's output function: a bijection on u64 that spreads every input bit.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The seed of repetition `rep` of sweep point `point`:
/// `mix(mix(mix(base) ^ point) ^ rep)` with SplitMix64's mix, so neighbouring runs get
/// unrelated seeds and a run's seed never depends on how many points or reps there are.
pub fn run_seed(base_seed: u64, point: usize, rep: u32) -> u64 {
    splitmix64(splitmix64(splitmix64(base_seed) ^ point as u64) ^ u64::from(rep))
}

/// Loads a scenario file. `overrides` are `key=value` (`--set`), `extra_axes` are
/// `key=v1,v2,...` (`--sweep`, replacing a `[sweep]` axis of the same key).
pub fn load(
    path: &Path,
    overrides: &[String],
    extra_axes: &[String],
) -> Result<LoadedScenario, ScenarioError> {
    let file_name = path.display().to_string();
    let text = read_regular(path, MAX_SCENARIO_BYTES).map_err(|e| ScenarioError {
        file: file_name.clone(),
        line: None,
        column: None,
        message: format!("cannot read the scenario: {}", e.0),
        allowed: Vec::new(),
        allowed_title: String::new(),
    })?;
    let base_dir = path.parent().unwrap_or_else(|| Path::new("."));
    parse_str(&text, &file_name, base_dir, overrides, extra_axes)
}

/// Parses scenario text. `file_name` is used in errors and (without `.toml`) as the default
/// name; relative paths in the scenario (rate traces) are resolved against `base_dir`.
pub fn parse_str(
    text: &str,
    file_name: &str,
    base_dir: &Path,
    overrides: &[String],
    extra_axes: &[String],
) -> Result<LoadedScenario, ScenarioError> {
    let errors = Errors {
        file: file_name.into(),
        warnings: Default::default(),
    };
    let mut root = parse_document(text, &errors)?;
    let mut axes = take_file_axes(&mut root, &errors)?;
    let cli_axes = extra_axes
        .iter()
        .map(|a| parse_cli_axis(a, &errors))
        .collect::<Result<Vec<_>, _>>()?;
    merge_axes(&mut axes, cli_axes);

    for arg in overrides {
        let at = At::Arg(Arc::from(format!("--set {arg}")));
        let (key, value) = arg
            .split_once('=')
            .ok_or_else(|| errors.at(&at, "expected key=value"))?;
        let key = parse_key(key).map_err(|e| path_error(&errors, &at, e))?;
        key.set(&mut root, &parse_arg_value(value, &at), &at)
            .map_err(|e| path_error(&errors, &at, e))?;
        // A value fixed on the command line wins over an axis of the same key.
        axes.retain(|a| a.key.text != key.text);
    }

    let default_name = Path::new(file_name).file_stem().map_or_else(
        || file_name.to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    let mut points = Vec::new();
    let mut meta = None;
    for combo in product(&axes, &errors)? {
        let mut tree = root.clone();
        let mut labels = Vec::new();
        for (axis, &i) in axes.iter().zip(&combo) {
            let value = &axis.values[i];
            axis.key
                .set(&mut tree, value, &value.at)
                .map_err(|e| path_error(&errors, &value.at, e))?;
            labels.push((axis.key.text.clone(), value.val.to_string()));
        }
        let (scenario, m) = resolve(&tree, &default_name, base_dir, &errors)?;
        meta.get_or_insert(m);
        points.push(SweepPoint {
            axes: labels,
            scenario,
        });
    }
    let meta = meta.ok_or_else(|| errors.whole("internal: the sweep produced no point"))?;
    let runs = (points.len() as u64).saturating_mul(u64::from(meta.reps));
    if runs > MAX_RUNS {
        // Points are capped far below MAX_RUNS, so `run.reps` was set: point at it.
        let reps_at = match root.get("run").map(|e| &e.node.val) {
            Some(Val::Table(t)) => t.get("reps").map(|e| e.node.at.clone()),
            _ => None,
        };
        let error = |m: String| match &reps_at {
            Some(at) => errors.at(at, m),
            None => errors.whole(m),
        };
        return Err(error(format!(
            "{} points × run.reps = {} is {runs} runs; a sweep has at most {MAX_RUNS} runs: use fewer repetitions or points",
            points.len(),
            meta.reps
        )));
    }
    let name = points
        .first()
        .map_or(default_name, |p| p.scenario.name.clone());
    Ok(LoadedScenario {
        name,
        base_seed: meta.seed,
        reps: meta.reps,
        points,
        warnings: errors.warnings.take(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_matches_the_reference_output() {
        // The first output of the reference SplitMix64 generator seeded with 0.
        assert_eq!(splitmix64(0), 0xE220_A839_7B1D_CDAF);
    }
}
