//! Aligned plain-text tables of summaries for the terminal.

use super::csv::axis_names;
use super::SummaryRow;

/// A table with columns: each axis, `metric`, `n/N`, `mean ± ci95`, for rows whose metric is in
/// `metrics` (all rows when `metrics` is empty), in the order of `rows`.
///
/// `n` is the runs that measured the metric, `N` the runs at the point (the most runs any
/// metric of that point has: every run has `end_s`), so runs that did not complete are visible
/// rather than silently left out of the mean. The unit and scale are guessed from the metric's
/// suffix (`_bps`, `_bytes`, `_s`, `_ms`, `_us`, `_ns`); fractions (Jain's index, shares,
/// utilisation, ratios) print with four decimals and other unitless metrics are counts, printed
/// as integers (one decimal for a fractional mean), never with an SI prefix.
///
/// The interval is [`Summary::ci95`](crate::Summary::ci95): a single run prints `± –` (no
/// interval), and a metric that was never negative prints `mean [0, high]` where the Student-t
/// interval would reach below 0.
pub fn render_table(rows: &[SummaryRow], metrics: &[&str]) -> String {
    let runs = runs_per_point(rows);
    let chosen: Vec<&SummaryRow> = rows
        .iter()
        .filter(|r| metrics.is_empty() || metrics.contains(&r.metric.as_str()))
        .collect();
    let axes = axis_names(chosen.iter().copied());

    let mut header: Vec<String> = axes.clone();
    header.extend(["metric", "n/N", "mean ± ci95"].map(String::from));
    let mut cells: Vec<Vec<String>> = vec![header];
    for r in &chosen {
        let mut line: Vec<String> = axes
            .iter()
            .map(|name| {
                let v = r.axes.iter().find(|(k, _)| k == name);
                v.map(|(_, v)| v.clone()).unwrap_or_default()
            })
            .collect();
        let s = &r.summary;
        line.push(r.metric.clone());
        let total = runs.get(&r.point).copied().unwrap_or(s.n).max(s.n);
        line.push(format!("{}/{total}", s.n));
        line.push(crate::format::mean_ci(&r.metric, s.mean, s.ci95()));
        cells.push(line);
    }
    layout(&cells, axes.len() + 1)
}

/// Runs per sweep point: the largest `n` of any metric at the point.
fn runs_per_point(rows: &[SummaryRow]) -> std::collections::BTreeMap<usize, usize> {
    let mut runs = std::collections::BTreeMap::new();
    for r in rows {
        let n = runs.entry(r.point).or_insert(0);
        *n = (*n).max(r.summary.n);
    }
    runs
}

/// One line per (point, completion metric) that fewer than all of the point's runs measured:
/// those runs did not complete within `run.duration` (a download without a completion time).
/// A point where no run completed has no row of its own; it is found through the other points
/// (the flow exists there — it has `bytes_delivered` — but has no completion time); `expected`
/// names completion metrics the caller knows should be there (the downloads' `flows.N.completion_s`),
/// so a sweep where no run of a download completed is warned about too.
pub fn incomplete_warnings(rows: &[SummaryRow], expected: &[String]) -> Vec<String> {
    use std::collections::{BTreeMap, BTreeSet};
    let runs = runs_per_point(rows);
    let completion: BTreeSet<&str> = rows
        .iter()
        .map(|r| r.metric.as_str())
        .filter(|m| m.ends_with("completion_s"))
        .chain(expected.iter().map(String::as_str))
        .collect();
    /// A point's axes and `n` per metric.
    type Point<'a> = (&'a [(String, String)], BTreeMap<&'a str, usize>);
    let mut at: BTreeMap<usize, Point> = BTreeMap::new();
    for r in rows {
        let e = at.entry(r.point).or_insert((&r.axes, BTreeMap::new()));
        e.1.insert(r.metric.as_str(), r.summary.n);
    }
    let mut out = Vec::new();
    for (point, (axes, metrics)) in &at {
        let total = runs.get(point).copied().unwrap_or(0);
        for m in &completion {
            // The flow's own row tells that it exists at this point (`flows.N.` prefix).
            let flow = m.rsplit_once('.').map_or("", |(f, _)| f);
            let exists = metrics.contains_key(format!("{flow}.bytes_delivered").as_str())
                || metrics.contains_key(m);
            let n = metrics.get(m).copied().unwrap_or(0);
            if exists && n < total {
                let axes: Vec<String> = axes.iter().map(|(k, v)| format!("{k}={v}")).collect();
                out.push(format!(
                    "point {point} ({}): {m} in {n} of {total} runs; {} did not complete within run.duration",
                    axes.join(", "),
                    total - n
                ));
            }
        }
    }
    out
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
            at(1, "goodput_bps", &[2e6]),
            at(1, "rtt_ms", &[20.0]),
            at(1, "acks", &[1234.0]),
        ];
        let table = render_table(&rows, &["goodput_bps", "acks"]);
        // t(0.975, 2) = 4.302653; half = 4.302653 · 1e6 / sqrt(3) = 2.484e6.
        let want = "\
loss  metric       n/N  mean ± ci95
--------------------------------------------
0%    goodput_bps  3/3  10.00 ± 2.484 Mbit/s
5%    goodput_bps  1/1  2.000 Mbit/s ± –
5%    acks         1/1  1234 ± –
";
        assert_eq!(table, want);
    }

    fn at(point: usize, metric: &str, values: &[f64]) -> SummaryRow {
        SummaryRow {
            point,
            ..row(
                &[("loss", if point == 0 { "0%" } else { "5%" })],
                metric,
                values,
            )
        }
    }

    #[test]
    fn n_of_runs_counts_as_integers_and_incomplete_runs_warned() {
        // Regression: tables showed n without N, runs that did not complete vanished silently,
        // and a mean of 0.6 lost packets printed as "600.0 m". Intervals of counts and times
        // that the t interval would take below 0 start at 0.
        let rows = [
            at(0, "end_s", &[1.0, 1.0, 1.0, 1.0, 1.0]),
            at(0, "flows.0.completion_s", &[1.0, 2.0, 3.0]),
            at(0, "flows.0.packets_lost", &[1.0, 0.0, 1.0, 0.0, 1.0]),
            at(
                0,
                "flows.0.packets_sent",
                &[1200.0, 1200.0, 1200.0, 1200.0, 1200.0],
            ),
            at(0, "fairness.jain", &[0.95, 0.95, 0.95, 0.95, 0.95]),
            at(0, "links.down.lost_packets", &[0.0, 1.0, 1.0, 0.0, 1.0]),
            at(1, "end_s", &[1.0, 1.0]),
            at(1, "flows.0.completion_s", &[1.0, 1.0]),
            // No run at point 2 completed: no completion row there at all.
            SummaryRow {
                point: 2,
                ..row(&[("loss", "20%")], "end_s", &[9.0, 9.0])
            },
            SummaryRow {
                point: 2,
                ..row(&[("loss", "20%")], "flows.0.bytes_delivered", &[5.0, 5.0])
            },
        ];
        let t = render_table(
            &rows,
            &[
                "flows.0.completion_s",
                "flows.0.packets_lost",
                "flows.0.packets_sent",
                "fairness.jain",
                "links.down.lost_packets",
            ],
        );
        assert!(
            t.contains("links.down.lost_packets  5/5  0.6 [0, 1.3] packets"),
            "{t}"
        );
        assert!(t.contains("n/N"), "{t}");
        assert!(
            t.contains("flows.0.completion_s     3/5  2.000 s [0 s, 4.484 s]"),
            "{t}"
        );
        assert!(t.contains("flows.0.completion_s     2/2"), "{t}");
        assert!(
            t.contains("flows.0.packets_lost     5/5  0.6 [0, 1.3]"),
            "{t}"
        );
        assert!(t.contains("flows.0.packets_sent     5/5  1200 ± 0"), "{t}");
        assert!(
            t.contains("fairness.jain            5/5  0.9500 ± 0"),
            "{t}"
        );
        assert!(!t.contains(" m\n") && !t.contains(" k\n"), "{t}");
        let w = incomplete_warnings(&rows, &[]);
        assert_eq!(
            w,
            [
                "point 0 (loss=0%): flows.0.completion_s in 3 of 5 runs; 2 did not complete within run.duration",
                "point 2 (loss=20%): flows.0.completion_s in 0 of 2 runs; 2 did not complete within run.duration"
            ]
        );
    }

    #[test]
    fn a_download_that_never_completed_is_warned_when_expected() {
        let rows = [
            at(0, "end_s", &[3.0, 3.0]),
            at(0, "flows.0.bytes_delivered", &[5.0, 5.0]),
        ];
        assert!(incomplete_warnings(&rows, &[]).is_empty());
        assert_eq!(
            incomplete_warnings(&rows, &["flows.0.completion_s".into()]),
            ["point 0 (loss=0%): flows.0.completion_s in 0 of 2 runs; 2 did not complete within run.duration"]
        );
    }

    #[test]
    fn empty_filter_keeps_all_and_scales_units() {
        let table = render_table(&[row(&[], "rtt_ms", &[20.0])], &[]);
        assert!(table.contains("rtt_ms  1/1  20.00 ms ± –"), "{table}");
    }
}
