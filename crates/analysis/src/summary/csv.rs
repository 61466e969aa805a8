//! `summary.csv`: one line per (sweep point, metric) with n, mean, sd, CI95 and order statistics.

use std::path::Path;

use super::SummaryRow;
use crate::error::{Error, Result};

/// Writes [`summary_csv`] of `rows` to `path` atomically (temporary file, then rename), so an
/// interrupted report never leaves a half-written summary behind.
pub fn write_summary_csv(path: &Path, rows: &[SummaryRow]) -> Result<()> {
    fsutil::write_atomic(path, summary_csv(rows).as_bytes()).map_err(Error::io(path))
}

/// The CSV text: `point`, one column per axis name (union in first-seen order; empty where a row
/// lacks the axis), `metric`, `n`, `mean`, `sd`, `ci95_low`, `ci95_high`, `min`, `median`, `max`.
///
/// Floats use Rust's shortest round-trip formatting, so the text is exact and deterministic.
/// `sd`, `ci95_low` and `ci95_high` are empty for a single run (no spread to estimate), and
/// `ci95_low` is clipped at 0 for a metric none of whose values is negative
/// ([`Summary::ci95`](crate::Summary::ci95)).
pub fn summary_csv(rows: &[SummaryRow]) -> String {
    let axes = axis_names(rows);
    let mut header = vec!["point"];
    header.extend(axes.iter().map(String::as_str));
    header.extend([
        "metric",
        "n",
        "mean",
        "sd",
        "ci95_low",
        "ci95_high",
        "min",
        "median",
        "max",
    ]);
    let mut records = Vec::with_capacity(rows.len());
    for row in rows {
        let s = &row.summary;
        let mut fields = vec![row.point.to_string()];
        for name in &axes {
            let value = row
                .axes
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone());
            fields.push(value.unwrap_or_default());
        }
        fields.push(row.metric.clone());
        fields.push(s.n.to_string());
        let ci = s.ci95();
        let sd = (s.n > 1).then_some(s.sd);
        for x in [
            Some(s.mean),
            sd,
            ci.map(|c| c.0),
            ci.map(|c| c.1),
            Some(s.min),
            Some(s.median),
            Some(s.max),
        ] {
            fields.push(x.map(|x| x.to_string()).unwrap_or_default());
        }
        records.push(fields);
    }
    tables::csv(header, records)
}

/// Union of axis names over all rows, in the order they are first seen.
pub(crate) fn axis_names<'a>(rows: impl IntoIterator<Item = &'a SummaryRow>) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for (name, _) in rows.into_iter().flat_map(|r| &r.axes) {
        if !names.contains(name) {
            names.push(name.clone());
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::summarize;
    use crate::testutil::TempDir;

    fn row(point: usize, axes: &[(&str, &str)], metric: &str, values: &[f64]) -> SummaryRow {
        SummaryRow {
            point,
            axes: axes
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            metric: metric.to_owned(),
            summary: summarize(values).unwrap(),
        }
    }

    #[test]
    fn header_and_rows() {
        let rows = [
            row(
                0,
                &[("loss", "0.01")],
                "goodput_bps",
                &[1.0, 2.0, 3.0, 4.0, 5.0],
            ),
            row(
                1,
                &[("loss", "0.02"), ("stack", "tcp,cubic")],
                "rtt_s",
                &[0.5],
            ),
        ];
        let text = summary_csv(&rows);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "point,loss,stack,metric,n,mean,sd,ci95_low,ci95_high,min,median,max"
        );
        let f: Vec<&str> = lines[1].split(',').collect();
        assert_eq!(f[..6], ["0", "0.01", "", "goodput_bps", "5", "3"]);
        let low: f64 = f[7].parse().unwrap();
        assert!((low - (3.0 - 1.963_243)).abs() < 1e-4, "{low}");
        assert_eq!(f[9..], ["1", "3", "5"]);
        assert_eq!(lines[2], "1,0.02,\"tcp,cubic\",rtt_s,1,0.5,,,,0.5,0.5,0.5");
        assert_eq!(lines.len(), 3);
    }

    #[test]
    fn lower_end_clipped_for_a_metric_never_negative() {
        // Student-t: 0.4 − 0.68 < 0; no lost-packet count is negative, so the file says 0.
        let text = summary_csv(&[row(0, &[], "lost", &[0.0, 0.0, 1.0, 0.0, 1.0])]);
        let f: Vec<&str> = text.lines().nth(1).unwrap().split(',').collect();
        assert_eq!(f[5], "0", "{text}");
        let high: f64 = f[6].parse().unwrap();
        assert!((high - 1.080_087).abs() < 1e-5, "{text}");
    }

    #[test]
    fn quotes_embedded_quotes() {
        let text = summary_csv(&[row(0, &[("label", "a\"b")], "x", &[1.0])]);
        assert!(
            text.lines().nth(1).unwrap().starts_with("0,\"a\"\"b\",x,"),
            "{text}"
        );
    }

    #[test]
    fn writes_file_without_leftover_tmp() {
        let dir = TempDir::new("csv");
        let path = dir.path().join("summary.csv");
        let rows = [row(0, &[], "x", &[1.0])];
        write_summary_csv(&path, &rows).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), summary_csv(&rows));
        assert!(!path.with_extension("csv.tmp").exists());
    }
}
