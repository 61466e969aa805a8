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
use crate::variant::{
    from_defs, refuse_variant_key, select, take_file_variants, Variant, VariantDef, VARIANT_AXIS,
};

/// A scenario file with its sweep expanded: what a CLI needs to schedule runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadedScenario {
    /// `run.name`, or the file name without `.toml`.
    pub name: String,
    /// `run.seed`; every run's seed is derived from it (see [`run_seed`]).
    pub base_seed: u64,
    /// `run.reps`: repetitions of every point.
    pub reps: u32,
    /// Repetitions of each point when they differ between points (adaptive repetitions add
    /// runs to some points); empty: `reps` for every point.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub point_reps: Vec<u32>,
    /// One resolved scenario per combination of sweep values (one point without a sweep).
    pub points: Vec<SweepPoint>,
    /// Accepted input that is probably not what was meant (a bare probability ≥ 0.05, a key
    /// that has no effect at some sweep points), each once, with its place (`file:line:col` or the command-line argument); the CLI prints them.
    pub warnings: Vec<String>,
}

impl LoadedScenario {
    /// Every run, point by point, repetitions in order: ids `p{point}-r{rep}`.
    pub fn runs(&self) -> Vec<RunSpec> {
        let mut runs = Vec::new();
        for point in 0..self.points.len() {
            for rep in 0..self.reps_of(point) {
                runs.push(self.run(point, rep));
            }
        }
        runs
    }

    /// Repetitions of `point`: its entry of `point_reps`, or `reps`.
    pub fn reps_of(&self, point: usize) -> u32 {
        self.point_reps.get(point).copied().unwrap_or(self.reps)
    }

    /// Repetition `rep` of sweep point `point` (which must exist); `rep` may exceed `run.reps`
    /// (adaptive repetitions add runs beyond it with the same rule).
    pub fn run(&self, point: usize, rep: u32) -> RunSpec {
        RunSpec {
            id: format!("p{point}-r{rep}"),
            point,
            rep,
            seed: run_seed(self.base_seed, &self.points[point].axes, rep),
        }
    }
}

/// SplitMix64's output function: a bijection on u64 that spreads every input bit.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// FNV-1a over `bytes`: a stable hash (the standard library's may change between releases,
/// and seeds must not).
fn fnv1a(bytes: impl IntoIterator<Item = u8>) -> u64 {
    bytes.into_iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// What identifies a sweep point for its seed: its `key = value` pairs *except the variant*,
/// taken by key and value (sorted by key), so the variants of a point share their randomness
/// and a point's key does not depend on which other points, axes order or variants exist.
/// A point without sweep values has key 0.
pub fn point_key(axes: &[(String, String)]) -> u64 {
    let mut pairs: Vec<&(String, String)> =
        axes.iter().filter(|(k, _)| k != VARIANT_AXIS).collect();
    pairs.sort();
    pairs.iter().fold(0, |h, (k, v)| {
        let pair = k.bytes().chain(std::iter::once(b'=')).chain(v.bytes());
        splitmix64(h ^ fnv1a(pair))
    })
}

/// The seed of repetition `rep` of the sweep point labelled `axes`:
/// `mix(mix(mix(base) ^ point_key(axes)) ^ rep)` with SplitMix64's mix (see [`point_key`]).
/// Variants of a point get the same seeds (common random numbers), and a run's seed never
/// depends on how many points, variants or repetitions there are.
pub fn run_seed(base_seed: u64, axes: &[(String, String)], rep: u32) -> u64 {
    splitmix64(splitmix64(splitmix64(base_seed) ^ point_key(axes)) ^ u64::from(rep))
}

/// What the command line (or a program) adds to a scenario file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inputs {
    /// `key=value` overrides (`--set`), applied after a variant's own overrides.
    pub overrides: Vec<String>,
    /// Sweep axes `key=v1,v2,...` (`--vary`), replacing a `[sweep]` axis of the same key.
    pub axes: Vec<String>,
    /// Names of the variants to run (`--variant a,b`, each entry may hold several names
    /// separated by commas); empty: every variant.
    pub variants: Vec<String>,
    /// Variants defined by the program instead of `[[variant]]` tables (a file that declares
    /// its own as well is refused: one list of variants per scenario).
    pub defined_variants: Vec<VariantDef>,
}

/// Loads a scenario file. `overrides` are `key=value` (`--set`), `extra_axes` are
/// `key=v1,v2,...` (`--vary`, replacing a `[sweep]` axis of the same key).
pub fn load(
    path: &Path,
    overrides: &[String],
    extra_axes: &[String],
) -> Result<LoadedScenario, ScenarioError> {
    load_with(
        path,
        &Inputs {
            overrides: overrides.to_vec(),
            axes: extra_axes.to_vec(),
            ..Inputs::default()
        },
    )
}

/// Loads a scenario file with everything the command line adds (see [`Inputs`]).
pub fn load_with(path: &Path, inputs: &Inputs) -> Result<LoadedScenario, ScenarioError> {
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
    parse_with(&text, &file_name, base_dir, inputs)
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
    parse_with(
        text,
        file_name,
        base_dir,
        &Inputs {
            overrides: overrides.to_vec(),
            axes: extra_axes.to_vec(),
            ..Inputs::default()
        },
    )
}

/// One `--set`: the key, its value and the argument it came from.
struct Set {
    key: crate::paths::KeyPath,
    node: crate::tree::Node,
    at: At,
}

/// Parses scenario text with everything the command line adds (see [`Inputs`]).
///
/// Each point's tree is the file, then the variant's overrides, then `--set`, then the sweep
/// axes' values; points are ordered variant by variant (the `variant` axis varies slowest),
/// then by the sweep axes in file order.
pub fn parse_with(
    text: &str,
    file_name: &str,
    base_dir: &Path,
    inputs: &Inputs,
) -> Result<LoadedScenario, ScenarioError> {
    let errors = Errors::new(file_name);
    let mut root = parse_document(text, &errors)?;
    let mut axes = take_file_axes(&mut root, &errors)?;
    let file_variants = take_file_variants(&mut root, &errors)?;
    let figure_drafts = crate::figure::take_file_figures(&mut root, &errors)?;
    let variants = match (file_variants, inputs.defined_variants.is_empty()) {
        (None, true) => None,
        (Some(v), true) => Some(v),
        (None, false) => Some(from_defs(&inputs.defined_variants, &errors)?),
        (Some(v), false) => {
            return Err(errors.at(
                &v[0].at,
                "the file declares [[variant]] tables and the program defines its own variants: one list of variants per scenario",
            ))
        }
    };
    let variants: Vec<Option<Variant>> = match variants {
        Some(v) => select(v, &inputs.variants, &errors)?
            .into_iter()
            .map(Some)
            .collect(),
        None if inputs.variants.iter().any(|v| !v.trim().is_empty()) => {
            let at = At::Arg(Arc::from(format!(
                "--variant {}",
                inputs.variants.join(",")
            )));
            return Err(errors.at(
                &at,
                format!("{file_name} declares no [[variant]] to pick from"),
            ));
        }
        None => vec![None],
    };
    let cli_axes = inputs
        .axes
        .iter()
        .map(|a| parse_cli_axis(a, &errors))
        .collect::<Result<Vec<_>, _>>()?;
    merge_axes(&mut axes, cli_axes);

    let mut sets = Vec::new();
    for arg in &inputs.overrides {
        let at = At::Arg(Arc::from(format!("--set {arg}")));
        let (key, value) = arg
            .split_once('=')
            .ok_or_else(|| errors.at(&at, "expected key=value"))?;
        refuse_variant_key(key, &at, &errors)?;
        let key = parse_key(key).map_err(|e| path_error(&errors, &at, e))?;
        // Written into a scratch copy now, so a bad path is reported even without points.
        key.set(&mut root.clone(), &parse_arg_value(value, &at), &at)
            .map_err(|e| path_error(&errors, &at, e))?;
        // A value fixed on the command line wins over an axis of the same key.
        axes.retain(|a| a.key.text != key.text);
        sets.push(Set {
            node: parse_arg_value(value, &at),
            key,
            at,
        });
    }
    // A variant that sets a swept key would silently lose to the axis (or win over it): either
    // way half of the sweep would be mislabelled.
    for v in variants.iter().flatten() {
        for o in &v.set {
            if let Some(a) = axes.iter().find(|a| a.key.text == o.key.text) {
                return Err(errors.at(
                    &o.at,
                    format!(
                        "variant {:?} sets {}, which is also a sweep axis ({} values): a key is either swept or set by variants",
                        v.name,
                        o.key.text,
                        a.values.len()
                    ),
                ));
            }
        }
    }

    let default_name = Path::new(file_name).file_stem().map_or_else(
        || file_name.to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    let mut axis_names: Vec<String> = Vec::new();
    if variants.iter().any(Option::is_some) {
        axis_names.push(VARIANT_AXIS.to_string());
    }
    axis_names.extend(axes.iter().map(|a| a.key.text.clone()));
    let figures = crate::figure::check_axes(figure_drafts, &axis_names, &errors)?;
    let combos = product(&axes, &errors)?;
    if combos.len().saturating_mul(variants.len()) > crate::sweep::MAX_POINTS {
        return Err(errors.whole(format!(
            "{} variants × {} sweep points is more than {} points",
            variants.len(),
            combos.len(),
            crate::sweep::MAX_POINTS
        )));
    }
    let mut points = Vec::new();
    let mut meta = None;
    for variant in &variants {
        let mut base = root.clone();
        if let Some(v) = variant {
            for o in &v.set {
                o.key
                    .set(&mut base, &o.node, &o.at)
                    .map_err(|e| path_error(&errors, &o.at, e))?;
            }
        }
        for s in &sets {
            s.key
                .set(&mut base, &s.node, &s.at)
                .map_err(|e| path_error(&errors, &s.at, e))?;
        }
        *errors.variant.borrow_mut() = variant.as_ref().map(|v| v.name.clone());
        for combo in &combos {
            let mut tree = base.clone();
            let mut labels = Vec::new();
            if let Some(v) = variant {
                labels.push((VARIANT_AXIS.to_string(), v.name.to_string()));
            }
            for (axis, &i) in axes.iter().zip(combo) {
                let value = &axis.values[i];
                axis.key
                    .set(&mut tree, value, &value.at)
                    .map_err(|e| path_error(&errors, &value.at, e))?;
                labels.push((axis.key.text.clone(), value.val.to_string()));
            }
            let (mut scenario, m) =
                resolve(&tree, &default_name, base_dir, &errors).map_err(|mut e| {
                    // An error that only this variant's overrides bring out names it.
                    if let Some(v) = variant {
                        if !e.message.contains(&format!("variant {:?}", v.name)) {
                            e.message.push_str(&format!(" (in variant {:?})", v.name));
                        }
                    }
                    e
                })?;
            scenario.figures = figures.clone();
            meta.get_or_insert(m);
            points.push(SweepPoint {
                axes: labels,
                scenario,
            });
        }
    }
    *errors.variant.borrow_mut() = None;
    errors.finish_key_uses()?;
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
        point_reps: Vec::new(),
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
