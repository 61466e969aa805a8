//! `[[figure]]` tables: the figures a scenario asks for, drawn by `plot`, `report` and
//! `reproduce` before their defaults.
//!
//! A figure names what it draws (a metric, or time-series columns), against which sweep axis,
//! with one line per value of which axes, over which points, and on which scales. The axes are
//! checked here against the sweep (a figure over an axis that is not swept cannot be drawn); the
//! metrics are checked when the figure is drawn, against what the runs measured.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{At, Errors, ScenarioError};
use crate::names::check_key_name;
use crate::read::{check_keys, expected};
use crate::tree::{Node, Table, Val};

/// Most `[[figure]]` tables in a scenario.
pub const MAX_FIGURES: usize = 50;

choice::choice! {
    /// What a declared figure draws.
    #[derive(Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum FigureKind {
        /// A metric's mean with its 95% interval against the sweep axis `x`.
        Line = "line",
        /// A metric's distribution over the repetitions of each point.
        Cdf = "cdf",
        /// Time series of a representative run of each point, one panel per column.
        Series = "series",
    }
}

choice::choice! {
    /// How an axis of a declared figure is scaled.
    #[derive(Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum AxisScale {
        /// Logarithmic where the values are positive and spread over two decades, else linear.
        Auto = "auto",
        /// Linear.
        Linear = "linear",
        /// Logarithmic (every value drawn must be positive).
        Log = "log",
    }
}

/// One `[[figure]]` of a scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FigureSpec {
    /// File stem of the figure (unique in the scenario).
    pub name: String,
    /// What it draws.
    pub kind: FigureKind,
    /// `line` and `cdf`: metric paths or `*` patterns of the runs' results; `series`: columns
    /// of the time series (`cwnd_bytes`, `srtt_ms`, …), one panel each.
    pub y: Vec<String>,
    /// `line`: the sweep axis on x.
    pub x: Option<String>,
    /// Axes whose values make the lines; empty: every other axis that varies.
    pub series: Vec<String>,
    /// Only the points whose axis takes one of these values (`where` in the file).
    pub filter: Vec<(String, Vec<String>)>,
    /// Scale of the x axis (`line`).
    pub x_scale: AxisScale,
    /// Scale of the y axis (`line`).
    pub y_scale: AxisScale,
    /// Title (default: made from what is drawn).
    pub title: Option<String>,
    /// `series`: the flow whose rows are drawn (default: the first flow).
    pub flow: Option<String>,
    /// `series`: the time axis ends here (default: the end of the run).
    pub until: Option<Duration>,
}

impl FigureSpec {
    /// Whether this is a time-series figure that draws the point labelled `axes` (so the
    /// point's runs must record their series).
    pub fn draws_series_of(&self, axes: &[(String, String)]) -> bool {
        self.kind == FigureKind::Series
            && self
                .filter
                .iter()
                .all(|(k, vs)| axes.iter().any(|(ak, av)| ak == k && vs.contains(av)))
    }
}

/// A parsed `[[figure]]` with the positions its axis names are checked at.
pub(crate) struct FigureDraft {
    pub spec: FigureSpec,
    at: At,
    /// The x axis as written.
    x_ref: Option<At>,
    /// Axes named by `series` and `where`, as written.
    axis_refs: Vec<(String, At)>,
}

/// Takes the `[[figure]]` tables out of the root, checked on their own.
pub(crate) fn take_file_figures(
    root: &mut Table,
    errors: &Errors,
) -> Result<Vec<FigureDraft>, ScenarioError> {
    let Some(pos) = root.entries.iter().position(|e| e.key == "figure") else {
        return Ok(Vec::new());
    };
    let entry = root.entries.remove(pos);
    let Val::Array(items) = &entry.node.val else {
        return Err(errors.at(
            &entry.node.at,
            format!(
                "figure: {}; write [[figure]]",
                expected("an array of tables", &entry.node.val)
            ),
        ));
    };
    if items.len() > MAX_FIGURES {
        return Err(errors.at(
            &items[MAX_FIGURES].at,
            format!("a scenario has at most {MAX_FIGURES} [[figure]] tables"),
        ));
    }
    let mut out: Vec<FigureDraft> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let Val::Table(t) = &item.val else {
            return Err(errors.at(
                &item.at,
                format!("figure.{i}: {}", expected("a table", &item.val)),
            ));
        };
        let draft = figure(t, &item.at, i, errors)?;
        if out.iter().any(|d| d.spec.name == draft.spec.name) {
            return Err(errors.at(
                &draft.at,
                format!("two figures are named {:?}", draft.spec.name),
            ));
        }
        out.push(draft);
    }
    Ok(out)
}

/// Checks the axes the figures name against the sweep's `axes` and returns the specs. The x
/// axis of a line figure must be swept. A `series` or `where` axis that is not swept here is
/// left out with a warning: a study's file names the `variant` axis its study adds, and the
/// same file run alone has none.
pub(crate) fn check_axes(
    drafts: Vec<FigureDraft>,
    axes: &[String],
    errors: &Errors,
) -> Result<Vec<FigureSpec>, ScenarioError> {
    let mut out = Vec::new();
    for mut d in drafts {
        if let (Some(x), Some(at)) = (&d.spec.x, &d.x_ref) {
            if !axes.contains(x) {
                let message = if axes.is_empty() {
                    format!("figure {:?} draws against the axis {x:?}, but the scenario sweeps nothing: add a [sweep]", d.spec.name)
                } else {
                    format!(
                        "figure {:?} draws against the axis {x:?}, which is not swept",
                        d.spec.name
                    )
                };
                return Err(errors
                    .at(at, message)
                    .with_allowed_titled("axes of this sweep", axes));
            }
        }
        for (axis, at) in &d.axis_refs {
            if !axes.contains(axis) {
                errors.warn(
                    at,
                    format!(
                        "figure {:?} names the axis {axis:?}, which is not swept here: the figure is drawn without it",
                        d.spec.name
                    ),
                );
            }
        }
        d.spec.series.retain(|a| axes.contains(a));
        d.spec.filter.retain(|(a, _)| axes.contains(a));
        out.push(d.spec);
    }
    Ok(out)
}

fn figure(t: &Table, at: &At, index: usize, errors: &Errors) -> Result<FigureDraft, ScenarioError> {
    let path = format!("figure.{index}");
    check_keys(t, "figure[]", &path, &[], errors)?;
    let string = |key: &str| -> Result<Option<(String, At)>, ScenarioError> {
        match t.get(key) {
            None => Ok(None),
            Some(e) => match &e.node.val {
                Val::Str(s) if !s.trim().is_empty() => {
                    Ok(Some((s.trim().to_string(), e.node.at.clone())))
                }
                Val::Str(_) => Err(errors.at(&e.node.at, format!("{path}.{key} is empty"))),
                other => Err(errors.at(
                    &e.node.at,
                    format!("{path}.{key}: {}", expected("a string", other)),
                )),
            },
        }
    };
    let list = |key: &str| -> Result<Vec<(String, At)>, ScenarioError> {
        let Some(e) = t.get(key) else {
            return Ok(Vec::new());
        };
        let items: Vec<&Node> = match &e.node.val {
            Val::Array(a) => a.iter().collect(),
            _ => vec![&e.node],
        };
        if items.is_empty() {
            return Err(errors.at(
                &e.node.at,
                format!("{path}.{key} is empty: leave it out for the default"),
            ));
        }
        items
            .into_iter()
            .map(|n| match &n.val {
                Val::Str(s) if !s.trim().is_empty() => Ok((s.trim().to_string(), n.at.clone())),
                other => Err(errors.at(
                    &n.at,
                    format!(
                        "{path}.{key}: {}",
                        expected("a non-empty string or an array of them", other)
                    ),
                )),
            })
            .collect()
    };
    let kind = match string("kind")? {
        None => FigureKind::Line,
        Some((s, a)) => pick::<FigureKind>(&s, &a, &format!("{path}.kind"), errors)?,
    };
    let x_scale = match string("x_scale")? {
        None => AxisScale::Auto,
        Some((s, a)) => pick::<AxisScale>(&s, &a, &format!("{path}.x_scale"), errors)?,
    };
    let y_scale = match string("y_scale")? {
        None => AxisScale::Linear,
        Some((s, a)) => pick::<AxisScale>(&s, &a, &format!("{path}.y_scale"), errors)?,
    };
    let name = match string("name")? {
        Some((n, a)) => {
            check_key_name(&n, &format!("{path}.name"), &a, errors)?;
            n
        }
        None => format!("figure{index}"),
    };
    let y = list("y")?;
    if y.is_empty() {
        return Err(errors.at(
            at,
            format!("missing key {path}.y: the metric (line, cdf) or the time-series columns (series) to draw"),
        ));
    }
    let x = string("x")?;
    let mut axis_refs = Vec::new();
    match (kind, &x) {
        (FigureKind::Line, None) => {
            return Err(errors.at(
                at,
                format!(
                    "missing key {path}.x: a line figure draws its metric against a sweep axis"
                ),
            ))
        }
        (FigureKind::Line, Some(_)) => {}
        (_, Some((_, a))) => {
            return Err(errors.at(
                a,
                format!(
                "{path}.x has no effect on a {} figure: only a line figure has a sweep axis on x",
                kind_name(kind)
            ),
            ))
        }
        (_, None) => {}
    }
    let series = list("series")?;
    axis_refs.extend(series.iter().cloned());
    let mut filter = Vec::new();
    if let Some(e) = t.get("where") {
        let Val::Table(w) = &e.node.val else {
            return Err(errors.at(
                &e.node.at,
                format!(
                    "{path}.where: {}; write where = {{ \"axis\" = \"value\" }}",
                    expected("a table", &e.node.val)
                ),
            ));
        };
        for we in &w.entries {
            let one = |n: &Node| -> Result<String, ScenarioError> {
                match &n.val {
                    Val::Str(s) => Ok(s.clone()),
                    Val::Int(i) => Ok(i.to_string()),
                    Val::Float(f) => Ok(f.to_string()),
                    Val::Bool(b) => Ok(b.to_string()),
                    other => Err(errors.at(
                        &n.at,
                        format!(
                            "{path}.where.{}: {}",
                            we.key,
                            expected("an axis value", other)
                        ),
                    )),
                }
            };
            let values = match &we.node.val {
                Val::Array(items) if items.is_empty() => {
                    return Err(errors.at(
                        &we.node.at,
                        format!("{path}.where.{} lists no value", we.key),
                    ))
                }
                Val::Array(items) => items.iter().map(one).collect::<Result<Vec<_>, _>>()?,
                _ => vec![one(&we.node)?],
            };
            axis_refs.push((we.key.clone(), we.key_at.clone()));
            filter.push((we.key.clone(), values));
        }
    }
    let only_series = |key: &str| -> Result<(), ScenarioError> {
        match t.get(key) {
            Some(e) if kind != FigureKind::Series => Err(errors.at(
                &e.node.at,
                format!("{path}.{key} has no effect on a {} figure: it selects what a series figure draws", kind_name(kind)),
            )),
            _ => Ok(()),
        }
    };
    only_series("flow")?;
    only_series("until")?;
    let until = match t.get("until") {
        None => None,
        Some(e) => match &e.node.val {
            Val::Str(s) => Some(
                units::parse_duration(s)
                    .map_err(|m| errors.at(&e.node.at, format!("{path}.until: {m}")))?,
            ),
            other => {
                return Err(errors.at(
                    &e.node.at,
                    format!(
                        "{path}.until: {}",
                        expected("a duration such as \"5s\"", other)
                    ),
                ))
            }
        },
    };
    if kind != FigureKind::Line {
        for key in ["x_scale", "y_scale"] {
            if let Some(e) = t.get(key) {
                return Err(errors.at(
                    &e.node.at,
                    format!("{path}.{key} has no effect on a {} figure: only a line figure's axes are scaled", kind_name(kind)),
                ));
            }
        }
    }
    let x_ref = x.as_ref().map(|(_, a)| a.clone());
    Ok(FigureDraft {
        spec: FigureSpec {
            name,
            kind,
            y: y.into_iter().map(|(s, _)| s).collect(),
            x: x.map(|(s, _)| s),
            series: series.into_iter().map(|(s, _)| s).collect(),
            filter,
            x_scale,
            y_scale,
            title: string("title")?.map(|(s, _)| s),
            flow: string("flow")?.map(|(s, _)| s),
            until,
        },
        at: at.clone(),
        x_ref,
        axis_refs,
    })
}

fn kind_name(kind: FigureKind) -> &'static str {
    use choice::Choice;
    kind.name()
}

/// The variant of `T` named `s`, or an error listing the names.
fn pick<T: choice::Choice>(
    s: &str,
    at: &At,
    path: &str,
    errors: &Errors,
) -> Result<T, ScenarioError> {
    T::from_name(s).ok_or_else(|| {
        errors
            .at(at, format!("{path} = {s:?} is not allowed"))
            .with_allowed(T::NAMES)
    })
}
