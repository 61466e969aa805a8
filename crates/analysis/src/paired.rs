//! Paired comparisons of a sweep's variants: at every sweep point (the values of the axes other
//! than `variant`), each variant against a baseline variant, repetition r of one paired with
//! repetition r of the other (see docs/statistics.md for what the pairing does and does not
//! share), for every metric. The rows feed `comparisons.csv` and `quiclab compare`'s paired
//! table; the p-values are Holm-adjusted across all rows given to [`paired_rows`].

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::inference::{self, BOOTSTRAP_SEED};

/// The sweep axis whose values are the variants (`scenario::variant::VARIANT_AXIS`).
pub const VARIANT_AXIS: &str = "variant";

/// Why paired comparisons could not be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PairedError {
    /// `--baseline` names no variant of the results.
    #[error("baseline {name:?} is not a variant here (variants: {})", .variants.join(", "))]
    UnknownBaseline {
        /// The name asked for.
        name: String,
        /// The variants there are.
        variants: Vec<String>,
    },
}

/// Observations of a sweep with a variant axis, collected one value at a time.
#[derive(Debug, Default, Clone)]
pub struct PairedSet {
    /// Variants in the order first seen (the scenario's order when runs are added in run
    /// order).
    variants: Vec<String>,
    /// Points (axes without `variant`) in the order first seen.
    points: Vec<Vec<(String, String)>>,
    point_index: BTreeMap<Vec<(String, String)>, usize>,
    /// Metrics in the order first seen.
    metrics: Vec<String>,
    metric_index: BTreeMap<String, usize>,
    /// (point, metric, variant) → value per repetition; the first value of a repetition wins.
    cells: BTreeMap<(usize, usize, usize), BTreeMap<u32, f64>>,
}

fn index_of<K: Ord + Clone>(list: &mut Vec<K>, index: &mut BTreeMap<K, usize>, key: &K) -> usize {
    if let Some(&i) = index.get(key) {
        return i;
    }
    list.push(key.clone());
    index.insert(key.clone(), list.len() - 1);
    list.len() - 1
}

impl PairedSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the `value` of `metric` measured by repetition `rep` at the sweep point `axes`
    /// (all its axes, `variant` among them). Points without a `variant` axis and values that
    /// are not finite are ignored.
    pub fn add(&mut self, axes: &[(String, String)], rep: u32, metric: &str, value: f64) {
        let Some((_, variant)) = axes.iter().find(|(k, _)| k == VARIANT_AXIS) else {
            return;
        };
        if !value.is_finite() {
            return;
        }
        let variant = match self.variants.iter().position(|v| v == variant) {
            Some(i) => i,
            None => {
                self.variants.push(variant.clone());
                self.variants.len() - 1
            }
        };
        let point: Vec<(String, String)> = axes
            .iter()
            .filter(|(k, _)| k != VARIANT_AXIS)
            .cloned()
            .collect();
        let point = index_of(&mut self.points, &mut self.point_index, &point);
        let metric = index_of(
            &mut self.metrics,
            &mut self.metric_index,
            &metric.to_string(),
        );
        self.cells
            .entry((point, metric, variant))
            .or_default()
            .entry(rep)
            .or_insert(value);
    }

    /// The variants, in the order first seen.
    pub fn variants(&self) -> &[String] {
        &self.variants
    }

    /// Whether anything can be compared: at least two variants.
    pub fn has_pairs(&self) -> bool {
        self.variants.len() >= 2
    }
}

/// One variant against the baseline at one point, for one metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairedRow {
    /// The sweep point: its axes other than `variant`, in sweep order.
    pub point: Vec<(String, String)>,
    /// Dotted metric path.
    pub metric: String,
    /// The variant compared.
    pub variant: String,
    /// The baseline variant.
    pub baseline: String,
    /// Repetitions both measured the metric in.
    pub n_pairs: usize,
    /// Mean of the paired differences, variant − baseline.
    pub diff: f64,
    /// Student-t 95% interval of the mean difference.
    pub diff_ci: Option<(f64, f64)>,
    /// Mean of the variant over mean of the baseline.
    pub ratio: Option<f64>,
    /// Percentile bootstrap 95% interval of the ratio.
    pub ratio_ci: Option<(f64, f64)>,
    /// Paired t-test p-value.
    pub p_t: Option<f64>,
    /// Wilcoxon signed-rank p-value.
    pub p_wilcoxon: Option<f64>,
    /// `p_t` Holm-adjusted across all rows.
    pub p_t_holm: Option<f64>,
    /// `p_wilcoxon` Holm-adjusted across all rows.
    pub p_wilcoxon_holm: Option<f64>,
    /// Cohen's d_z.
    pub effect_size: Option<f64>,
}

/// The repetitions of one variant paired with the baseline's at one point, for one metric.
#[derive(Debug, Clone, PartialEq)]
pub struct Pairs<'a> {
    /// The sweep point (axes other than `variant`).
    pub point: &'a [(String, String)],
    /// Dotted metric path.
    pub metric: &'a str,
    /// The variant.
    pub variant: &'a str,
    /// The baseline variant.
    pub baseline: &'a str,
    /// The variant's values, repetition by repetition.
    pub variant_values: Vec<f64>,
    /// The baseline's values of the same repetitions.
    pub baseline_values: Vec<f64>,
}

impl PairedSet {
    /// The index of `baseline` (the first variant when None).
    fn baseline_index(&self, baseline: Option<&str>) -> std::result::Result<usize, PairedError> {
        match baseline {
            None => Ok(0),
            Some(name) => self.variants.iter().position(|v| v == name).ok_or_else(|| {
                PairedError::UnknownBaseline {
                    name: name.to_string(),
                    variants: self.variants.clone(),
                }
            }),
        }
    }

    /// Every variant's repetitions paired with `baseline`'s (the first variant when None),
    /// point by point (in the order first seen) and metric by metric. A (point, metric,
    /// variant) with no repetition in common with the baseline is left out.
    pub fn pairs(
        &self,
        baseline: Option<&str>,
    ) -> std::result::Result<Vec<Pairs<'_>>, PairedError> {
        let base = self.baseline_index(baseline)?;
        let mut out = Vec::new();
        for (p, point) in self.points.iter().enumerate() {
            for (m, metric) in self.metrics.iter().enumerate() {
                let Some(reference) = self.cells.get(&(p, m, base)) else {
                    continue;
                };
                for (v, variant) in self.variants.iter().enumerate() {
                    if v == base {
                        continue;
                    }
                    let Some(values) = self.cells.get(&(p, m, v)) else {
                        continue;
                    };
                    let (a, b): (Vec<f64>, Vec<f64>) = values
                        .iter()
                        .filter_map(|(rep, x)| reference.get(rep).map(|y| (*x, *y)))
                        .unzip();
                    if a.is_empty() {
                        continue;
                    }
                    out.push(Pairs {
                        point,
                        metric,
                        variant,
                        baseline: &self.variants[base],
                        variant_values: a,
                        baseline_values: b,
                    });
                }
            }
        }
        Ok(out)
    }
}

/// Every variant against `baseline` (the first variant when None), point by point (in the
/// order first seen) and metric by metric, with the p-values Holm-adjusted across all rows. A
/// (point, metric, variant) with no repetition paired with the baseline has no row.
pub fn paired_rows(
    set: &PairedSet,
    baseline: Option<&str>,
) -> std::result::Result<Vec<PairedRow>, PairedError> {
    let mut rows = Vec::new();
    for pairs in set.pairs(baseline)? {
        let Ok(stats) = inference::paired(
            &pairs.variant_values,
            &pairs.baseline_values,
            BOOTSTRAP_SEED,
        ) else {
            continue;
        };
        rows.push(PairedRow {
            point: pairs.point.to_vec(),
            metric: pairs.metric.to_string(),
            variant: pairs.variant.to_string(),
            baseline: pairs.baseline.to_string(),
            n_pairs: stats.n,
            diff: stats.diff,
            diff_ci: stats.diff_ci,
            ratio: stats.ratio,
            ratio_ci: stats.ratio_ci,
            p_t: stats.p_t,
            p_wilcoxon: stats.p_wilcoxon,
            p_t_holm: None,
            p_wilcoxon_holm: None,
            effect_size: stats.effect_size,
        });
    }
    let t = inference::holm(&rows.iter().map(|r| r.p_t).collect::<Vec<_>>());
    let w = inference::holm(&rows.iter().map(|r| r.p_wilcoxon).collect::<Vec<_>>());
    for ((r, t), w) in rows.iter_mut().zip(t).zip(w) {
        r.p_t_holm = t;
        r.p_wilcoxon_holm = w;
    }
    Ok(rows)
}

/// The text of `comparisons.csv`: one column per point axis (union in first-seen order, empty
/// where a row lacks it), then `metric`, `variant`, `baseline`, `n_pairs`, `diff`, `diff_low`,
/// `diff_high`, `ratio`, `ratio_low`, `ratio_high`, `p_t`, `p_wilcoxon`, `p_t_holm`,
/// `p_wilcoxon_holm`, `effect_size`. Absent quantities are empty fields; floats use the
/// shortest round-trip formatting, so the text is exact and deterministic.
pub fn comparisons_csv(rows: &[PairedRow]) -> String {
    let mut axes: Vec<&str> = Vec::new();
    for (k, _) in rows.iter().flat_map(|r| &r.point) {
        if !axes.contains(&k.as_str()) {
            axes.push(k);
        }
    }
    let mut header: Vec<&str> = axes.clone();
    header.extend([
        "metric",
        "variant",
        "baseline",
        "n_pairs",
        "diff",
        "diff_low",
        "diff_high",
        "ratio",
        "ratio_low",
        "ratio_high",
        "p_t",
        "p_wilcoxon",
        "p_t_holm",
        "p_wilcoxon_holm",
        "effect_size",
    ]);
    let num = |x: Option<f64>| x.map(|x| x.to_string()).unwrap_or_default();
    let records = rows.iter().map(|r| {
        let mut f: Vec<String> = axes
            .iter()
            .map(|name| {
                r.point
                    .iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default()
            })
            .collect();
        f.extend([
            r.metric.clone(),
            r.variant.clone(),
            r.baseline.clone(),
            r.n_pairs.to_string(),
            r.diff.to_string(),
            num(r.diff_ci.map(|c| c.0)),
            num(r.diff_ci.map(|c| c.1)),
            num(r.ratio),
            num(r.ratio_ci.map(|c| c.0)),
            num(r.ratio_ci.map(|c| c.1)),
            num(r.p_t),
            num(r.p_wilcoxon),
            num(r.p_t_holm),
            num(r.p_wilcoxon_holm),
            num(r.effect_size),
        ]);
        f
    });
    tables::csv(header, records)
}

/// Writes [`comparisons_csv`] of `rows` to `path` atomically.
pub fn write_comparisons_csv(path: &Path, rows: &[PairedRow]) -> Result<()> {
    fsutil::write_atomic(path, comparisons_csv(rows).as_bytes()).map_err(Error::io(path))
}

/// The rows as a Markdown table: difference with its interval in the metric's unit, ratio with
/// its bootstrap interval, Holm-adjusted p-values, Cohen's d_z.
pub fn render_paired(rows: &[PairedRow]) -> String {
    render_paired_with(rows, &|metric| metric.to_string())
}

/// Headers of a paired table, and whether each column is numeric (right-aligned).
pub const PAIRED_HEADERS: [(&str, bool); 9] = [
    ("point", false),
    ("metric", false),
    ("variant − baseline", false),
    ("pairs", true),
    ("difference [95% CI]", false),
    ("ratio [95% CI]", false),
    ("p (t, Holm)", true),
    ("p (Wilcoxon, Holm)", true),
    ("d_z", true),
];

/// One row's cells under [`PAIRED_HEADERS`], the metric shown as `metric_label` (its unit
/// still comes from the metric's name): `–` for what cannot be computed.
pub fn paired_cells(r: &PairedRow, metric_label: String) -> [String; 9] {
    use crate::format;
    let dash = || "–".to_string();
    let point: Vec<String> = r.point.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let diff = format::diff_with_interval(&r.metric, r.diff, r.diff_ci);
    let ratio = format::ratio_with_interval(r.ratio, r.ratio_ci);
    [
        point.join(" "),
        metric_label,
        format!("{} − {}", r.variant, r.baseline),
        r.n_pairs.to_string(),
        diff,
        ratio,
        r.p_t_holm.map(format::p_value).unwrap_or_else(dash),
        r.p_wilcoxon_holm.map(format::p_value).unwrap_or_else(dash),
        r.effect_size.map(format::sig4).unwrap_or_else(dash),
    ]
}

/// [`render_paired`] with each metric shown as `label(metric)` (its unit still comes from the
/// metric's name).
pub fn render_paired_with(rows: &[PairedRow], label: &dyn Fn(&str) -> String) -> String {
    use tables::Align::{Left, Right};
    let mut t = tables::Markdown::with_columns(
        PAIRED_HEADERS.map(|(h, numeric)| (h, if numeric { Right } else { Left })),
    );
    for r in rows {
        t.row(paired_cells(r, label(&r.metric)));
    }
    t.render()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::TempDir;

    fn axes(rtt: &str, variant: &str) -> Vec<(String, String)> {
        vec![
            ("link.rtt".to_string(), rtt.to_string()),
            (VARIANT_AXIS.to_string(), variant.to_string()),
        ]
    }

    fn set() -> PairedSet {
        let mut s = PairedSet::new();
        let quic = [1.0, 2.0, 3.0, 4.0];
        let tcp = [1.5, 2.9, 3.2, 4.9];
        for (rep, (q, t)) in quic.iter().zip(tcp).enumerate() {
            s.add(&axes("20ms", "quic"), rep as u32, "completion_s", *q);
            s.add(&axes("20ms", "tcp"), rep as u32, "completion_s", t);
            s.add(&axes("20ms", "tcp"), rep as u32, "completion_s", 100.0);
        }
        // Rep 9 of tcp has no partner; at 200ms only quic ran.
        s.add(&axes("20ms", "tcp"), 9, "completion_s", 50.0);
        s.add(&axes("200ms", "quic"), 0, "completion_s", 9.0);
        s
    }

    #[test]
    fn rows_pair_by_repetition_and_adjust_across_rows() {
        let rows = paired_rows(&set(), None).unwrap();
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert_eq!((r.variant.as_str(), r.baseline.as_str()), ("tcp", "quic"));
        assert_eq!(r.point, [("link.rtt".to_string(), "20ms".to_string())]);
        // The first value of a repetition counts (not the 100.0), rep 9 has no partner.
        assert_eq!(r.n_pairs, 4);
        assert!((r.diff - 0.625).abs() < 1e-12, "{}", r.diff);
        // scipy.stats.ttest_rel([1.5, 2.9, 3.2, 4.9], [1, 2, 3, 4]).pvalue
        assert!(
            (r.p_t.unwrap() - 0.034_932_701_484_079_63).abs() < 1e-12,
            "{:?}",
            r.p_t
        );
        // One row: Holm changes nothing.
        assert_eq!(r.p_t_holm, r.p_t);
        // Swapping the baseline flips the sign.
        let flipped = paired_rows(&set(), Some("tcp")).unwrap();
        assert!((flipped[0].diff + 0.625).abs() < 1e-12);
        let err = paired_rows(&set(), Some("udp")).unwrap_err().to_string();
        assert!(err.contains("quic, tcp"), "{err}");
    }

    #[test]
    fn csv_has_the_documented_columns_and_empty_absent_fields() {
        let mut s = set();
        s.add(&axes("200ms", "tcp"), 0, "completion_s", 8.0);
        let rows = paired_rows(&s, None).unwrap();
        let text = comparisons_csv(&rows);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "link.rtt,metric,variant,baseline,n_pairs,diff,diff_low,diff_high,ratio,ratio_low,\
             ratio_high,p_t,p_wilcoxon,p_t_holm,p_wilcoxon_holm,effect_size"
        );
        // One pair at 200ms: a difference and a ratio, no interval, no test.
        assert_eq!(
            lines[2],
            "200ms,completion_s,tcp,quic,1,-1,,,0.8888888888888888,,,,,,,"
        );
        // Holm across both rows: the 20ms p-value is the only one, so it stays.
        assert_eq!(rows[0].p_t_holm, rows[0].p_t);
        let dir = TempDir::new("paired");
        let path = dir.path().join("comparisons.csv");
        write_comparisons_csv(&path, &rows).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        let table = render_paired(&rows);
        assert!(
            table.contains("| link.rtt=200ms | completion_s | tcp − quic | 1 | -1.000 s [–] |"),
            "{table}"
        );
    }

    #[test]
    fn without_a_variant_axis_nothing_is_compared() {
        let mut s = PairedSet::new();
        s.add(&[("link.rtt".into(), "1ms".into())], 0, "x", 1.0);
        assert!(!s.has_pairs());
        assert_eq!(paired_rows(&s, None).unwrap(), []);
    }
}
