//! The `loss` key: a probability shorthand or a table naming a loss model.

use netem::config::LossConfig;
use netem::loss::gilbert_elliott_k_for_target;

use choice::Choice;

use crate::choices::LossModel;
use crate::error::ScenarioError;
use crate::read::{probability_of, Reader};
use crate::tree::Val;

/// Resolves `loss` from the reader's table (`None` when unset).
pub(crate) fn loss(r: &Reader<'_>) -> Result<LossConfig, ScenarioError> {
    let Some(node) = r.node("loss")? else {
        return Ok(LossConfig::None);
    };
    let table = match &node.val {
        Val::Table(t) => t,
        other => {
            let p = probability_of(other)
                .map_err(|m| r.errors.at(&node.at, format!("link.loss: {m}")))?;
            r.warn_bare_probability(&r.path_of("loss"), &node, p);
            return Ok(if p == 0.0 {
                LossConfig::None
            } else {
                LossConfig::Bernoulli { p }
            });
        }
    };
    let t = Reader::new(table, &node.at, "link.loss", &r.path_of("loss"), r.errors)?;
    let model = t
        .choice::<LossModel>("model")?
        .unwrap_or(LossModel::Bernoulli);
    check_model_keys(&t, model)?;
    let cfg = match model {
        LossModel::None => LossConfig::None,
        LossModel::Bernoulli => LossConfig::Bernoulli { p: req(&t, "p")? },
        LossModel::Periodic => {
            let p = req(&t, "p")?;
            if p == 0.0 {
                return Err(t.errors.at(
                    &node.at,
                    "periodic loss needs p > 0 (one drop every 1/p packets)",
                ));
            }
            LossConfig::Periodic { p }
        }
        LossModel::Bounded => {
            let max_burst = t.uint_in("max_burst", 1, u64::from(u32::MAX))?;
            let max_burst = u32::try_from(t.required("max_burst", max_burst)?).unwrap_or(u32::MAX);
            LossConfig::BoundedBernoulli {
                p: req(&t, "p")?,
                max_burst,
            }
        }
        LossModel::GilbertElliott => gilbert_elliott(&t)?,
    };
    cfg.validate()
        .map_err(|e| r.errors.at(&node.at, e.to_string()))?;
    Ok(cfg)
}

/// The keys each loss model reads; any other key would be silently ignored (e.g. `gamma` on a
/// Bernoulli model), so it is an error.
fn model_keys(model: LossModel) -> &'static [&'static str] {
    match model {
        LossModel::None => &["model"],
        LossModel::Bernoulli | LossModel::Periodic => &["model", "p"],
        LossModel::Bounded => &["model", "p", "max_burst"],
        LossModel::GilbertElliott => &["model", "p", "r", "k", "h", "gamma", "beta", "target"],
    }
}

/// Refuses keys of the loss table that `model` does not use.
fn check_model_keys(t: &Reader<'_>, model: LossModel) -> Result<(), ScenarioError> {
    let allowed = model_keys(model);
    let model = model.name();
    for key in ["p", "r", "k", "h", "gamma", "beta", "target", "max_burst"] {
        if allowed.contains(&key) {
            continue;
        }
        if let Some(e) = t.entry(key) {
            return Err(t
                .errors
                .at(
                    &e.key_at,
                    format!(
                        "{} does not apply to the {model} loss model",
                        t.path_of(key)
                    ),
                )
                .with_allowed_titled(&format!("keys of the {model} model"), allowed));
        }
    }
    Ok(())
}

fn req(t: &Reader<'_>, key: &str) -> Result<f64, ScenarioError> {
    let v = t.probability(key)?;
    t.required(key, v)
}

/// Either (p, r, k, h) or (gamma, beta, h, target); mixing the two forms is an error because
/// one of the values would silently be ignored.
fn gilbert_elliott(t: &Reader<'_>) -> Result<LossConfig, ScenarioError> {
    let second_form = ["gamma", "beta", "target"]
        .iter()
        .any(|k| t.entry(k).is_some());
    let h = req(t, "h")?;
    if !second_form {
        return Ok(LossConfig::GilbertElliott {
            p: req(t, "p")?,
            r: req(t, "r")?,
            k: req(t, "k")?,
            h,
        });
    }
    if let Some(k) = ["p", "r", "k"].into_iter().find(|k| t.entry(k).is_some()) {
        let at = t
            .entry(k)
            .map_or_else(|| t.at().clone(), |e| e.key_at.clone());
        return Err(t.errors.at(
            &at,
            "use either p, r, k, h or gamma, beta, h, target, not both",
        ));
    }
    let p = 1.0 - req(t, "gamma")?;
    let r = 1.0 - req(t, "beta")?;
    let target = req(t, "target")?;
    let k = gilbert_elliott_k_for_target(p, r, h, target).map_err(|e| {
        let at = t
            .entry("target")
            .map_or_else(|| t.at().clone(), |e| e.node.at.clone());
        t.errors.at(&at, e.to_string())
    })?;
    Ok(LossConfig::GilbertElliott { p, r, k, h })
}
