//! Aligned plain-text tables of summaries for the terminal.

use super::csv::axis_names;
use super::si::si_pair;
use super::SummaryRow;

/// A table with columns: each axis, `metric`, `n`, `mean ± ci95`, for rows whose metric is in
/// `metrics` (all rows when `metrics` is empty), in the order of `rows`.
///
/// The unit and scale are guessed from the metric's suffix (`_bps`, `_bytes`, `_s`, `_ms`,
/// `_us`, `_ns`); other metrics are printed without a unit.
pub fn render_table(rows: &[SummaryRow], metrics: &[&str]) -> String {
    let chosen: Vec<&SummaryRow> = rows
        .iter()
        .filter(|r| metrics.is_empty() || metrics.contains(&r.metric.as_str()))
        .collect();
    let axes = axis_names(chosen.iter().copied());

    let mut header: Vec<String> = axes.clone();
    header.extend(["metric", "n", "mean ± ci95"].map(String::from));
    let mut cells: Vec<Vec<String>> = vec![header];
    for r in &chosen {
        let mut line: Vec<String> = axes
            .iter()
            .map(|name| {
                let v = r.axes.iter().find(|(k, _)| k == name);
                v.map(|(_, v)| v.clone()).unwrap_or_default()
            })
            .collect();
        let (scale, unit) = unit_for(&r.metric);
        let s = &r.summary;
        line.push(r.metric.clone());
        line.push(s.n.to_string());
        line.push(si_pair(s.mean * scale, s.ci95_half_width() * scale, unit));
        cells.push(line);
    }
    layout(&cells, axes.len() + 1)
}

/// Pads columns to equal width; the column at `right` (n) is right-aligned, the rest left.
fn layout(cells: &[Vec<String>], right: usize) -> String {
    let cols = cells.first().map_or(0, Vec::len);
    // Width in chars, not bytes: "±" and "µ" are multi-byte.
    let width = |s: &str| s.chars().count();
    let widths: Vec<usize> = (0..cols)
        .map(|c| cells.iter().map(|line| width(&line[c])).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for (i, line) in cells.iter().enumerate() {
        let mut text = String::new();
        for (c, cell) in line.iter().enumerate() {
            if c > 0 {
                text.push_str("  ");
            }
            let pad = " ".repeat(widths[c] - width(cell));
            if c == right {
                text.push_str(&pad);
                text.push_str(cell);
            } else {
                text.push_str(cell);
                text.push_str(&pad);
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
        if i == 0 {
            let total: usize = widths.iter().sum::<usize>() + 2 * cols.saturating_sub(1);
            out.push_str(&"-".repeat(total));
            out.push('\n');
        }
    }
    out
}

/// Scale to the base unit and the unit name implied by a metric's suffix.
fn unit_for(metric: &str) -> (f64, &'static str) {
    const SUFFIXES: [(&str, f64, &str); 6] = [
        ("_bps", 1.0, "bit/s"),
        ("_bytes", 1.0, "B"),
        ("_ns", 1e-9, "s"),
        ("_us", 1e-6, "s"),
        ("_ms", 1e-3, "s"),
        ("_s", 1.0, "s"),
    ];
    SUFFIXES
        .iter()
        .find(|(suffix, _, _)| metric.ends_with(suffix))
        .map_or((1.0, ""), |&(_, scale, unit)| (scale, unit))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::summarize;

    fn row(axes: &[(&str, &str)], metric: &str, values: &[f64]) -> SummaryRow {
        SummaryRow {
            point: 0,
            axes: axes
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            metric: metric.to_owned(),
            summary: summarize(values).unwrap(),
        }
    }

    #[test]
    fn renders_aligned_columns_with_units() {
        let rows = [
            row(&[("loss", "0%")], "goodput_bps", &[9e6, 10e6, 11e6]),
            row(&[("loss", "5%")], "goodput_bps", &[2e6]),
            row(&[("loss", "5%")], "rtt_ms", &[20.0]),
            row(&[("loss", "5%")], "acks", &[1234.0]),
        ];
        let table = render_table(&rows, &["goodput_bps", "acks"]);
        // t(0.975, 2) = 4.302653; half = 4.302653 · 1e6 / sqrt(3) = 2.484e6.
        let want = "\
loss  metric       n  mean ± ci95
------------------------------------------
0%    goodput_bps  3  10.00 ± 2.484 Mbit/s
5%    goodput_bps  1  2.000 ± 0 Mbit/s
5%    acks         1  1.234 ± 0 k
";
        assert_eq!(table, want);
    }

    #[test]
    fn empty_filter_keeps_all_and_scales_units() {
        let table = render_table(&[row(&[], "rtt_ms", &[20.0])], &[]);
        assert!(table.contains("rtt_ms  1  20.00 ± 0 ms"), "{table}");
    }
}
