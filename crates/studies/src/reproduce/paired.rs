//! A study's paired comparisons: at each x value of an experiment, each protocol against its
//! baseline, repetition r against repetition r. The protocols of a point are variants of one
//! sweep point, so they share their seeds (common random numbers, docs/statistics.md) and the
//! difference of a pair is a measurement of the difference between the protocols.

use std::collections::BTreeMap;
use std::fmt::Write;

use analysis::inference;
use analysis::paired::{paired_rows, render_paired_with, PairedRow, PairedSet};

use super::combine::PointInfo;
use super::registry::{Experiment, Reading};

/// A sweep's numeric metrics by point, then metric path, as (repetition, value) pairs
/// (`experiment::summary::values`).
pub type PointValues = BTreeMap<usize, BTreeMap<String, Vec<(u32, f64)>>>;

/// Label of the download time of a study without metric columns.
const DOWNLOAD: &str = "download time";

/// One quantity an experiment compares: the name that pairs it across protocols (its unit
/// comes from the suffix), the label the table shows, and where a reading finds it.
struct Quantity {
    key: &'static str,
    label: &'static str,
    path: fn(&Reading, &'static str) -> String,
}

/// The experiment's quantities: its columns that are means (a ratio of two means has no
/// paired form), or without columns the measured connection's download time.
fn quantities(e: &Experiment) -> Vec<Quantity> {
    if e.columns.is_empty() {
        return vec![Quantity {
            key: "completion_s",
            label: DOWNLOAD,
            path: |r, key| format!("flows.{}.connections.{}.{key}", r.flow, r.connection),
        }];
    }
    e.columns
        .iter()
        .filter(|c| c.per.is_none())
        .map(|c| Quantity {
            key: c.metric,
            label: c.header,
            path: |r, key| format!("flows.{}.{key}", r.flow),
        })
        .collect()
}

/// (baseline, variant) pairs: the experiment's relative comparisons, or without them every
/// protocol against the first one.
fn pairs(e: &Experiment, protocols: &[&'static str]) -> Vec<(&'static str, &'static str)> {
    let relative = e.relative_comparisons();
    if !relative.is_empty() {
        return relative;
    }
    match protocols.split_first() {
        Some((first, rest)) => rest.iter().map(|p| (*first, *p)).collect(),
        None => Vec::new(),
    }
}

/// The paired rows of one experiment, the p-values Holm-adjusted across them (an experiment is
/// one family of tests); empty when it has a single protocol.
pub fn experiment_rows(e: &Experiment, info: &[PointInfo], values: &PointValues) -> Vec<PairedRow> {
    let quantities = quantities(e);
    let mut set = PairedSet::new();
    let mut protocols: Vec<&'static str> = Vec::new();
    for (point, pi) in info.iter().enumerate() {
        if pi.experiment != e.name {
            continue;
        }
        let Some(metrics) = values.get(&point) else {
            continue;
        };
        for rd in pi.readings {
            if !protocols.contains(&rd.protocol) {
                protocols.push(rd.protocol);
            }
            let axes = [
                (pi.parameter.clone(), pi.x.clone()),
                (
                    analysis::paired::VARIANT_AXIS.to_string(),
                    rd.protocol.to_string(),
                ),
            ];
            for q in &quantities {
                for &(rep, v) in metrics.get(&(q.path)(rd, q.key)).into_iter().flatten() {
                    set.add(&axes, rep, q.key, v);
                }
            }
        }
    }
    let wanted = pairs(e, &protocols);
    let mut baselines: Vec<&str> = wanted.iter().map(|(b, _)| *b).collect();
    baselines.dedup();
    let mut rows: Vec<PairedRow> = Vec::new();
    for b in baselines {
        // A baseline the runs do not have (an experiment run with fewer variants) has no rows.
        let Ok(mine) = paired_rows(&set, Some(b)) else {
            continue;
        };
        rows.extend(
            mine.into_iter()
                .filter(|r| wanted.contains(&(b, r.variant.as_str()))),
        );
    }
    // Point by point, in the order of the requested comparisons.
    let order = |r: &PairedRow| {
        wanted
            .iter()
            .position(|(b, v)| *b == r.baseline && *v == r.variant)
    };
    let x_order: Vec<&str> = info
        .iter()
        .filter(|pi| pi.experiment == e.name)
        .map(|pi| pi.x.as_str())
        .collect();
    rows.sort_by_key(|r| {
        let x = r.point.first().map(|(_, x)| x.as_str()).unwrap_or_default();
        (
            x_order.iter().position(|p| *p == x),
            order(r),
            quantity_index(&quantities, &r.metric),
        )
    });
    let t = inference::holm(&rows.iter().map(|r| r.p_t).collect::<Vec<_>>());
    let w = inference::holm(&rows.iter().map(|r| r.p_wilcoxon).collect::<Vec<_>>());
    for ((r, t), w) in rows.iter_mut().zip(t).zip(w) {
        r.p_t_holm = t;
        r.p_wilcoxon_holm = w;
    }
    rows
}

fn quantity_index(quantities: &[Quantity], key: &str) -> Option<usize> {
    quantities.iter().position(|q| q.key == key)
}

/// The paired comparisons of every experiment as Markdown: one table per experiment that has
/// two protocols or more.
pub fn markdown(experiments: &[&Experiment], info: &[PointInfo], values: &PointValues) -> String {
    let mut s = String::new();
    for e in experiments {
        let rows = experiment_rows(e, info, values);
        if rows.is_empty() {
            continue;
        }
        let quantities = quantities(e);
        let label = |key: &str| {
            quantities
                .iter()
                .find(|q| q.key == key)
                .map_or_else(|| key.to_string(), |q| q.label.to_string())
        };
        let _ = writeln!(
            s,
            "### {}: paired comparisons\n\nEach protocol against its baseline at the same x, \
             repetition r against repetition r (the protocols of a point share their seeds): mean \
             difference with its Student-t 95% interval, ratio of the means with a bootstrap 95% \
             interval, paired t and Wilcoxon signed-rank p-values Holm-adjusted across this \
             table, Cohen's d_z.\n",
            e.name
        );
        s.push_str(&render_paired_with(&rows, &label));
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reproduce::registry::{Column, Reading};

    const A: &[Reading] = &[Reading {
        protocol: "a",
        flow: 0,
        connection: 0,
    }];
    const B: &[Reading] = &[Reading {
        protocol: "b",
        flow: 0,
        connection: 1,
    }];
    const RATE: &[Column] = &[
        Column {
            header: "rate (Mbit/s)",
            metric: "goodput_bps",
            per: None,
            scale: 1e-6,
            decimals: 2,
        },
        Column {
            header: "ACKs per packet",
            metric: "acks",
            per: Some("packets"),
            scale: 1.0,
            decimals: 2,
        },
    ];

    fn experiment(columns: &'static [Column]) -> Experiment {
        Experiment {
            name: "e",
            file: "e.toml",
            text: "",
            variants: &[],
            columns,
            comparisons: &[],
            set: &[],
        }
    }

    fn info(x: &str, readings: &'static [Reading]) -> PointInfo {
        PointInfo {
            experiment: "e",
            parameter: "link.loss".into(),
            x: x.into(),
            readings,
        }
    }

    #[test]
    fn readings_pair_by_repetition_at_each_x_and_match_scipy() {
        // b's download is its second connection's; a's its first. Differences b − a at x=1%:
        // 0.5, 0.7, 0.3, 0.6 → mean 0.525, sd 0.17078, t 6.148 (scipy.stats.ttest_rel:
        // p = 0.0086565), Student-t interval [0.25325, 0.79675].
        let a = [1.0, 2.0, 1.5, 1.2];
        let b = [1.5, 2.7, 1.8, 1.8];
        let mut values = PointValues::new();
        let fill = |conn: usize, xs: &[f64]| {
            let m: BTreeMap<String, Vec<(u32, f64)>> = [(
                format!("flows.0.connections.{conn}.completion_s"),
                xs.iter().enumerate().map(|(r, v)| (r as u32, *v)).collect(),
            )]
            .into();
            m
        };
        values.insert(0, fill(0, &a));
        values.insert(1, fill(1, &b));
        let e = experiment(&[]);
        let rows = experiment_rows(&e, &[info("1%", A), info("1%", B)], &values);
        assert_eq!(rows.len(), 1, "{rows:?}");
        let r = &rows[0];
        assert_eq!((r.variant.as_str(), r.baseline.as_str()), ("b", "a"));
        assert_eq!(r.n_pairs, 4);
        assert!((r.diff - 0.525).abs() < 1e-12, "{r:?}");
        let (lo, hi) = r.diff_ci.expect("an interval");
        assert!(
            (lo - 0.25325).abs() < 1e-4 && (hi - 0.79675).abs() < 1e-4,
            "{r:?}"
        );
        assert!((r.p_t.expect("p") - 0.008_656_53).abs() < 1e-8, "{r:?}");
        let md = markdown(&[&e], &[info("1%", A), info("1%", B)], &values);
        assert!(md.contains("download time"), "{md}");
        assert!(md.contains("b − a"), "{md}");
    }

    #[test]
    fn ratio_columns_are_not_paired_and_single_protocols_give_nothing() {
        let mut values = PointValues::new();
        values.insert(
            0,
            [
                ("flows.0.goodput_bps".to_string(), vec![(0, 1.0), (1, 2.0)]),
                ("flows.0.acks".to_string(), vec![(0, 1.0), (1, 2.0)]),
            ]
            .into(),
        );
        let e = experiment(RATE);
        assert!(experiment_rows(&e, &[info("0%", A)], &values).is_empty());
        assert_eq!(quantities(&e).len(), 1, "the ratio column is left out");
    }
}
