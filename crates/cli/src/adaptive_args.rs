//! `--until-ci` / `--until-resolved` and their limits: repetitions until the answer is clear
//! (`experiment::adaptive`), shared by `quiclab sim`, `quiclab emu` and `quiclab reproduce`.

use clap::Args;
use experiment::adaptive::{Rule, Target};
use scenario::LoadedScenario;

/// Most repetitions a point gets when `--max-reps` is not given.
pub const DEFAULT_MAX_REPS: u32 = 100;

/// Options of adaptive repetitions.
#[derive(Debug, Clone, Default, Args)]
pub struct AdaptiveArgs {
    /// Add repetitions in batches until the 95% interval of each judged metric's mean is within
    /// ± this fraction of the mean at every point, e.g. `2%` (points that differ only in their
    /// variant grow together, so they stay paired).
    #[arg(long, value_name = "PCT", conflicts_with = "until_resolved")]
    pub until_ci: Option<String>,
    /// With variants: add repetitions until each variant's paired difference from the first
    /// variant has a 95% interval that excludes zero or is within ± this fraction of the
    /// baseline's mean (a difference that small would not matter), e.g. `1%`.
    #[arg(long, value_name = "PCT")]
    pub until_resolved: Option<String>,
    /// A metric to judge by, as a dotted path (`flows.0.completion_s`; repeatable) [default:
    /// flow 0's completion time if it is a download, else its goodput].
    #[arg(long = "judge", value_name = "METRIC")]
    pub judge: Vec<String>,
    /// Most repetitions per point with --until-ci or --until-resolved [default: 100].
    #[arg(long, value_name = "N")]
    pub max_reps: Option<u32>,
    /// Repetitions added per round [default: the first batch, run.reps].
    #[arg(long, value_name = "N")]
    pub batch: Option<u32>,
}

impl AdaptiveArgs {
    /// The rule asked for, or `None` without `--until-ci` / `--until-resolved`; an error names
    /// the option at fault.
    pub fn rule(&self, loaded: &LoadedScenario) -> Result<Option<Rule>, String> {
        let target = match (&self.until_ci, &self.until_resolved) {
            (Some(pct), _) => Target::RelativeHalfWidth(fraction("--until-ci", pct)?),
            (None, Some(pct)) => Target::Resolved(fraction("--until-resolved", pct)?),
            (None, None) => {
                let stray = [
                    (!self.judge.is_empty(), "--judge"),
                    (self.max_reps.is_some(), "--max-reps"),
                    (self.batch.is_some(), "--batch"),
                ];
                if let Some((_, name)) = stray.iter().find(|(set, _)| *set) {
                    return Err(format!(
                        "{name} has no effect without --until-ci or --until-resolved"
                    ));
                }
                return Ok(None);
            }
        };
        let metrics = if self.judge.is_empty() {
            default_metric(loaded).into_iter().collect()
        } else {
            self.judge.clone()
        };
        let rule = Rule {
            target,
            metrics,
            max_reps: self.max_reps.unwrap_or(DEFAULT_MAX_REPS.max(loaded.reps)),
            batch: self.batch.unwrap_or(loaded.reps.max(1)),
        };
        rule.check(loaded.reps).map_err(|e| e.to_string())?;
        Ok(Some(rule))
    }
}

/// `2%` or `0.02` as a fraction in (0, 1].
fn fraction(option: &str, text: &str) -> Result<f64, String> {
    let f = units::parse_probability(text).map_err(|e| format!("{option} {text}: {}", e.0))?;
    if f > 0.0 {
        Ok(f)
    } else {
        Err(format!("{option} {text}: the target must be above 0"))
    }
}

/// Flow 0's completion time if it is a download at the first point, else its goodput.
fn default_metric(loaded: &LoadedScenario) -> Option<String> {
    let flow = loaded.points.first()?.scenario.flows.first()?;
    Some(if flow.workload.name() == "download" {
        "flows.0.completion_s".to_string()
    } else {
        "flows.0.goodput_bps".to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loaded(flow: &str) -> LoadedScenario {
        scenario::parse_str(
            &format!("[run]\nreps = 4\n[[flow]]\n{flow}\n"),
            "a.toml",
            std::path::Path::new("."),
            &[],
            &[],
        )
        .expect("valid")
    }

    #[test]
    fn options_become_a_rule_with_defaults_from_the_scenario() {
        let l = loaded("app = \"download\"\nsize = \"1MB\"");
        let args = AdaptiveArgs {
            until_ci: Some("2%".into()),
            ..AdaptiveArgs::default()
        };
        let rule = args.rule(&l).expect("valid").expect("a rule");
        assert_eq!(rule.target, Target::RelativeHalfWidth(0.02));
        assert_eq!(rule.metrics, ["flows.0.completion_s"]);
        assert_eq!((rule.max_reps, rule.batch), (DEFAULT_MAX_REPS, 4));
        let bulk = loaded("app = \"bulk\"");
        let rule = args.rule(&bulk).expect("valid").expect("a rule");
        assert_eq!(rule.metrics, ["flows.0.goodput_bps"]);
        let resolved = AdaptiveArgs {
            until_resolved: Some("0.01".into()),
            judge: vec!["flows.0.ttfb_s".into()],
            max_reps: Some(30),
            batch: Some(2),
            ..AdaptiveArgs::default()
        };
        let rule = resolved.rule(&l).expect("valid").expect("a rule");
        assert_eq!(rule.target, Target::Resolved(0.01));
        assert_eq!((rule.max_reps, rule.batch), (30, 2));
        assert_eq!(AdaptiveArgs::default().rule(&l), Ok(None));
    }

    #[test]
    fn bad_options_name_themselves() {
        let l = loaded("app = \"bulk\"");
        let e = |a: AdaptiveArgs| a.rule(&l).expect_err("refused");
        assert_eq!(
            e(AdaptiveArgs {
                max_reps: Some(5),
                ..AdaptiveArgs::default()
            }),
            "--max-reps has no effect without --until-ci or --until-resolved"
        );
        let zero = e(AdaptiveArgs {
            until_ci: Some("0%".into()),
            ..AdaptiveArgs::default()
        });
        assert!(zero.starts_with("--until-ci 0%: "), "{zero}");
        let junk = e(AdaptiveArgs {
            until_ci: Some("two".into()),
            ..AdaptiveArgs::default()
        });
        assert!(junk.starts_with("--until-ci two: "), "{junk}");
        let few = e(AdaptiveArgs {
            until_ci: Some("2%".into()),
            max_reps: Some(3),
            ..AdaptiveArgs::default()
        });
        assert!(few.contains("at least run.reps (4)"), "{few}");
    }
}
