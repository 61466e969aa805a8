//! A study as one sweep: every (experiment, variant, x) becomes a point of a single
//! `LoadedScenario`, so the study runs through the experiment library once — one results directory, one
//! pool of workers over all points, and `--resume` for free.

use scenario::LoadedScenario;

use super::registry::{Experiment, Reading, Study};

/// Axis name under which a point records its experiment.
pub const EXPERIMENT_AXIS: &str = "experiment";
/// Axis name of the protocol variant: the scenario crate's variant axis (one home).
pub const VARIANT_AXIS: &str = scenario::VARIANT_AXIS;

/// What one point of the combined sweep is, for the table.
#[derive(Debug, Clone)]
pub struct PointInfo {
    /// Experiment name.
    pub experiment: &'static str,
    /// The swept key of the experiment's file (e.g. `link.down.loss`).
    pub parameter: String,
    /// Its value at this point, as written in the file (quotes removed).
    pub x: String,
    /// The rows to read from this point's runs.
    pub readings: &'static [Reading],
}

/// The combined sweep and, index for index, what each of its points is.
#[derive(Debug)]
pub struct Combined {
    /// The sweep handed to `experiment::run_sweep`.
    pub loaded: LoadedScenario,
    /// One entry per point of `loaded`.
    pub info: Vec<PointInfo>,
}

/// Builds the combined sweep of `study` restricted to `experiments`, with `user` overrides
/// applied after each variant's own (so an explicit `--set` wins) and `reps` repetitions
/// (`None`: the files' own `run.reps`, the largest if they differ).
pub fn combine(
    study: &Study,
    experiments: &[&'static Experiment],
    user: &[String],
    reps: Option<u32>,
) -> Result<Combined, scenario::ScenarioError> {
    let mut points = Vec::new();
    let mut info = Vec::new();
    let mut file_reps = 1;
    let mut warnings = Vec::new();
    for e in experiments {
        // The experiment's variants are scenario variants: the `variant` axis comes first,
        // then the file's swept key, points variant by variant (the order, and so every run's
        // seed, is the one the study has always had).
        let loaded = e.load(user, &[])?;
        file_reps = file_reps.max(loaded.reps);
        for w in loaded.warnings {
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        }
        for mut p in loaded.points {
            let label = p
                .axes
                .first()
                .filter(|(k, _)| k == VARIANT_AXIS)
                .map(|(_, v)| v.clone())
                .unwrap_or_default();
            let v = e.variant(&label).ok_or_else(|| scenario::ScenarioError {
                file: e.file.to_string(),
                line: None,
                column: None,
                message: format!("internal: point without a registered variant ({label:?})"),
                allowed: Vec::new(),
                allowed_title: String::new(),
            })?;
            let (parameter, x) = p.axes.get(1).cloned().unwrap_or_default();
            info.push(PointInfo {
                experiment: e.name,
                parameter,
                x: unquote(&x),
                readings: v.readings,
            });
            let mut axes = vec![(EXPERIMENT_AXIS.to_string(), e.name.to_string())];
            axes.append(&mut p.axes);
            p.axes = axes;
            points.push(p);
        }
    }
    Ok(Combined {
        loaded: LoadedScenario {
            name: study.name.to_string(),
            base_seed: study.seed,
            reps: reps.unwrap_or(file_reps),
            point_reps: Vec::new(),
            points,
            warnings,
        },
        info,
    })
}

/// A TOML string value as written (`"2%"`) without its quotes; other values unchanged.
fn unquote(v: &str) -> String {
    v.strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(v)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reproduce::registry as studies;
    use scenario::Choice;

    #[test]
    fn points_carry_experiment_variant_and_x() {
        let study = studies::find("seed003").expect("seed003 is registered");
        let bern: Vec<&'static Experiment> = study
            .experiments
            .iter()
            .filter(|e| e.name == "bernoulli")
            .collect();
        let c = combine(study, &bern, &[], Some(2)).expect("valid files");
        // 5 loss rates × 4 protocol variants.
        assert_eq!(c.loaded.points.len(), 20);
        assert_eq!(c.info.len(), 20);
        assert_eq!(c.loaded.runs().len(), 40);
        let p = &c.loaded.points[5];
        assert_eq!(p.axes[0], ("experiment".into(), "bernoulli".into()));
        assert_eq!(p.axes[1], ("variant".into(), "quic-0rtt".into()));
        assert_eq!(c.info[5].x, "2%");
        assert_eq!(c.info[5].parameter, "link.down.loss");
        assert_eq!(c.info[5].readings[0].connection, 1);
        // The TCP variants really are TCP.
        assert_eq!(c.loaded.points[10].scenario.flows[0].stack().name(), "tcp");
    }

    #[test]
    fn unquote_strips_only_string_quotes() {
        assert_eq!(unquote("\"2%\""), "2%");
        assert_eq!(unquote("0.5"), "0.5");
    }
}
