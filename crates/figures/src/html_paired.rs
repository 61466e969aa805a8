//! The report's paired comparisons: with variants, each variant against the first at every
//! sweep point, repetition r against repetition r (the variants of a point share their seeds),
//! for the metrics the results table shows; the same rows as `comparisons.csv`, in words.

use std::fmt::Write;

use analysis::paired::{paired_cells, paired_rows, PairedRow, PairedSet, PAIRED_HEADERS};

use crate::data::ResultsDir;
use crate::html::escape;
use crate::metric;

/// The paired rows of the report's metrics (`metrics`: dotted paths), p-values Holm-adjusted
/// across them; empty without two variants.
pub fn rows(d: &ResultsDir, metrics: &[String]) -> Vec<PairedRow> {
    let mut set = PairedSet::new();
    for r in &d.runs {
        let Some(point) = d.points.get(r.point) else {
            continue;
        };
        for m in metrics {
            if let Some(v) = r.value(m) {
                set.add(&point.axes, r.rep, m, v);
            }
        }
    }
    // The first variant is the baseline, so no name can be unknown.
    paired_rows(&set, None).unwrap_or_default()
}

/// The section (heading, explanation, table), or nothing without two variants.
pub fn section(o: &mut String, d: &ResultsDir, metrics: &[String]) {
    let rows = rows(d, metrics);
    let Some(first) = rows.first() else {
        return;
    };
    let names = d.flow_names();
    let _ = writeln!(
        o,
        "<h2 id=\"paired\">Paired comparisons</h2>\n<p>Each variant against <b>{}</b> at the same \
         sweep point, repetition r against repetition r (the variants of a point share their \
         seeds): mean difference with its Student-t 95% interval, ratio of the means with a \
         bootstrap 95% interval, paired t and Wilcoxon signed-rank p-values Holm-adjusted across \
         this table, Cohen's d_z. Every metric is in <code>comparisons.csv</code>.</p>",
        escape(&first.baseline)
    );
    let _ = write!(o, "<div class=\"scroll\"><table class=\"results\"><tr>");
    for (h, _) in PAIRED_HEADERS {
        let _ = write!(o, "<th>{}</th>", escape(h));
    }
    let _ = writeln!(o, "</tr>");
    for r in &rows {
        let _ = write!(o, "<tr>");
        let cells = paired_cells(r, metric::label(&r.metric, &names));
        for (cell, (_, numeric)) in cells.iter().zip(PAIRED_HEADERS) {
            let class = if numeric { " class=\"num\"" } else { "" };
            let _ = write!(o, "<td{class}>{}</td>", escape(cell));
        }
        let _ = writeln!(o, "</tr>");
    }
    let _ = writeln!(o, "</table></div>");
}
