//! CDFs of completion times: one figure per flow (per metric `flows.N.…completion_s`), one curve
//! per sweep point, at most [`CURVES`] curves per figure.

use crate::chart::{self, Cdf, CdfChart};
use crate::data::ResultsDir;
use crate::error::FigureError;
use crate::metric;
use std::collections::BTreeSet;

use crate::sweep::{axis_set, key_label, n_of_n, varying_axes};
use crate::{Figure, FigureKind, FigureSize};

/// Most curves in one CDF figure (more are split over several figures).
pub const CURVES: usize = 10;
/// Figure size, px.
pub const SIZE: (u32, u32) = (960, 480);
/// A log x axis when the largest value is this many times the smallest.
const LOG_RATIO: f64 = 100.0;

/// Completion-time metrics present in the directory (`flows.*.completion_s` and, where the
/// schema has them, per-connection completions).
pub fn completion_metrics(d: &ResultsDir) -> Vec<String> {
    let available = crate::available_metrics(d);
    let pats = [
        "flows.*.completion_s".to_string(),
        "flows.*.connections.*.completion_s".to_string(),
    ];
    // A flow's only connection has the flow's own completion time: its CDF would repeat.
    metric::expand(&pats, &available)
        .0
        .into_iter()
        .filter(|m| {
            let segs: Vec<&str> = m.split('.').collect();
            segs.len() != 5
                || available.contains(&format!(
                    "{}.{}.connections.1.completion_s",
                    segs[0], segs[1]
                ))
        })
        .collect()
}

/// The CDF figures of `metrics` (completion times by default).
pub fn figures(
    d: &ResultsDir,
    metrics: &[String],
    size: FigureSize,
) -> Result<Vec<Figure>, FigureError> {
    let axes = varying_axes(d);
    let mut out = Vec::new();
    for m in metrics {
        let mut curves = Vec::new();
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut group_sets: Vec<BTreeSet<&str>> = Vec::new();
        let mut curve_axes: Vec<Vec<(String, String)>> = Vec::new();
        let mut curve_points: Vec<&crate::data::PointData> = Vec::new();
        for p in &d.points {
            let runs = d.runs_of(p.index);
            if runs.is_empty() {
                continue;
            }
            let values: Vec<f64> = runs.iter().filter_map(|r| r.value(m)).collect();
            let key: Vec<(String, String)> = p
                .axes
                .iter()
                .filter(|(k, _)| axes.contains(k))
                .cloned()
                .collect();
            // Points with the same axes go in one figure (the experiments of a study apart).
            let set = axis_set(p);
            let g = match group_sets.iter().position(|s| *s == set) {
                Some(g) => g,
                None => {
                    group_sets.push(set);
                    groups.push(Vec::new());
                    groups.len() - 1
                }
            };
            groups[g].push(curves.len());
            curve_axes.push(key.clone());
            curve_points.push(p);
            curves.push(Cdf {
                label: if key.is_empty() {
                    format!("point {}", p.index)
                } else {
                    key_label(&key)
                },
                note: n_of_n(&[(values.len(), runs.len())]),
                values,
                runs: runs.len(),
            });
        }
        if curves.iter().all(|c| c.values.is_empty()) {
            continue;
        }
        let all: Vec<f64> = curves.iter().flat_map(|c| c.values.clone()).collect();
        let max = all.iter().copied().fold(0.0, f64::max);
        let min_pos = all
            .iter()
            .copied()
            .filter(|v| *v > 0.0)
            .fold(f64::MAX, f64::min);
        let log_x = min_pos < f64::MAX && max / min_pos >= LOG_RATIO;
        let sc = metric::scale(m, max);
        for c in &mut curves {
            for v in &mut c.values {
                *v *= sc.factor;
            }
        }
        // Inside a group, label curves by the axes that vary there; the ones constant in the
        // group (a study's experiment) go in the title.
        let mut chunks: Vec<(String, String, Vec<Cdf>)> = Vec::new();
        for g in &groups {
            // The flows as this group's points name them.
            let names = ResultsDir::flow_names_of(g.iter().map(|&i| curve_points[i]));
            let label = metric::label(m, &names);
            let first = &curve_axes[g[0]];
            let (constant, _): (Vec<&(String, String)>, Vec<_>) = first
                .iter()
                .partition(|kv| g.iter().all(|&i| curve_axes[i].contains(kv)));
            let members: Vec<Cdf> = g
                .iter()
                .map(|&i| {
                    let key: Vec<(String, String)> = curve_axes[i]
                        .iter()
                        .filter(|kv| !constant.contains(kv))
                        .cloned()
                        .collect();
                    let mut c = curves[i].clone();
                    if !key.is_empty() {
                        c.label = key_label(&key);
                    }
                    c
                })
                .collect();
            let context: Vec<(String, String)> = constant.into_iter().cloned().collect();
            let parts = members.chunks(CURVES).count();
            for (k, chunk) in members.chunks(CURVES).enumerate() {
                if chunk.iter().any(|c| !c.values.is_empty()) {
                    let mut ctx = if context.is_empty() || groups.len() == 1 {
                        String::new()
                    } else {
                        format!(" — {}", key_label(&context))
                    };
                    if parts > 1 {
                        ctx.push_str(&format!(" ({}/{parts})", k + 1));
                    }
                    chunks.push((label.clone(), ctx, chunk.to_vec()));
                }
            }
        }
        let parts = chunks.len();
        for (i, (label, ctx, chunk)) in chunks.into_iter().enumerate() {
            let title = format!("CDF of {label}{ctx}");
            let missing: usize = chunk.iter().map(|c| c.runs - c.values.len()).sum();
            let mut foot =
                "empirical CDF over the n runs (of N recorded) that completed".to_string();
            if missing > 0 {
                foot.push_str(&format!(" · ⚠ {missing} run(s) did not complete"));
            }
            if log_x {
                foot.push_str(" · log x axis");
            }
            let print = size.is_print();
            let (x_name, curves) = if print {
                let curves = chunk
                    .into_iter()
                    .map(|c| Cdf {
                        label: crate::sweep::values_only(&c.label),
                        ..c
                    })
                    .collect();
                (metric::without_context(&label), curves)
            } else {
                (label.clone(), chunk)
            };
            let c = CdfChart {
                title: if print { String::new() } else { title.clone() },
                x_label: metric::axis_label(&x_name, &sc),
                log_x,
                curves,
                footnote: if print { String::new() } else { foot.clone() },
            };
            let svg = chart::cdf_chart(&c, size.canvas(SIZE))?;
            let mut id = format!("cdf-{}", metric::slug(m));
            if parts > 1 {
                id.push_str(&format!("-{}", i + 1));
            }
            out.push(Figure {
                id,
                title,
                caption: format!("{foot}; one curve per sweep point."),
                svg,
                kind: FigureKind::Cdf,
                missing_runs: missing,
            });
        }
    }
    Ok(out)
}
