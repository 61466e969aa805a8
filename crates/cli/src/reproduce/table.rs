//! The study's result table: one row per (experiment, x value, protocol), from the sweep's
//! summary rows, as Markdown (for people and docs) and CSV (for plots).

use std::collections::BTreeMap;
use std::fmt::Write;

use report::{Summary, SummaryRow};

use super::combine::PointInfo;

/// One line of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Experiment name.
    pub experiment: String,
    /// The swept key.
    pub parameter: String,
    /// Its value.
    pub x: String,
    /// Protocol variant.
    pub protocol: String,
    /// Runs recorded at the point (a failed run is not recorded).
    pub runs: usize,
    /// Download time over the runs whose download completed (n = how many did).
    pub download: Option<Summary>,
    /// Mean handshake time of the measured connection.
    pub handshake_mean_s: Option<f64>,
    /// Mean time to the first response byte of the measured connection.
    pub ttfb_mean_s: Option<f64>,
}

/// The table rows in point order, readings in registry order within a point.
pub fn rows(info: &[PointInfo], summary: &[SummaryRow]) -> Vec<Row> {
    let mut by_point: BTreeMap<usize, BTreeMap<&str, &Summary>> = BTreeMap::new();
    for r in summary {
        by_point
            .entry(r.point)
            .or_default()
            .insert(r.metric.as_str(), &r.summary);
    }
    let empty = BTreeMap::new();
    let mut out = Vec::new();
    for (point, pi) in info.iter().enumerate() {
        let metrics = by_point.get(&point).unwrap_or(&empty);
        for rd in pi.readings {
            let conn = |m: &str| {
                metrics
                    .get(format!("flows.{}.connections.{}.{m}", rd.flow, rd.connection).as_str())
                    .copied()
            };
            // bytes_delivered exists in every recorded run, finished or not.
            let runs = metrics
                .get(format!("flows.{}.bytes_delivered", rd.flow).as_str())
                .map_or(0, |s| s.n);
            out.push(Row {
                experiment: pi.experiment.to_string(),
                parameter: pi.parameter.clone(),
                x: pi.x.clone(),
                protocol: rd.protocol.to_string(),
                runs,
                download: conn("completion_s").copied(),
                handshake_mean_s: conn("handshake_s").map(|s| s.mean),
                ttfb_mean_s: conn("time_to_first_byte_s").map(|s| s.mean),
            });
        }
    }
    out
}

/// The table as GitHub Markdown: times in seconds (download) and milliseconds (handshake).
pub fn markdown(rows: &[Row]) -> String {
    let mut s = String::from(
        "| experiment | parameter | x | protocol | runs | n | download time (s) | ± 95% CI (s) | handshake (ms) | first byte (ms) |\n\
         |---|---|---|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.experiment,
            r.parameter,
            r.x,
            r.protocol,
            r.runs,
            r.download.map_or(0, |d| d.n),
            fixed(r.download.map(|d| d.mean), 1.0, 3),
            fixed(r.download.map(|d| d.ci95_half_width()), 1.0, 3),
            fixed(r.handshake_mean_s, 1e3, 2),
            fixed(r.ttfb_mean_s, 1e3, 2),
        );
    }
    s
}

/// The table as CSV, seconds throughout, full precision.
pub fn csv(rows: &[Row]) -> String {
    let mut s = String::from(
        "experiment,parameter,x,protocol,runs,n,download_mean_s,download_ci95_s,download_sd_s,handshake_mean_s,ttfb_mean_s\n",
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{}",
            field(&r.experiment),
            field(&r.parameter),
            field(&r.x),
            field(&r.protocol),
            r.runs,
            r.download.map_or(0, |d| d.n),
            fixed(r.download.map(|d| d.mean), 1.0, 6),
            fixed(r.download.map(|d| d.ci95_half_width()), 1.0, 6),
            fixed(r.download.map(|d| d.sd), 1.0, 6),
            fixed(r.handshake_mean_s, 1.0, 6),
            fixed(r.ttfb_mean_s, 1.0, 6),
        );
    }
    s
}

/// `v × scale` with `decimals` places; `-` in Markdown terms for a missing value is left to the
/// reader, so an absent value is an empty cell.
fn fixed(v: Option<f64>, scale: f64, decimals: usize) -> String {
    v.map_or_else(String::new, |x| format!("{:.*}", decimals, x * scale))
}

/// A CSV field, quoted when it holds a comma or a quote (protocol labels may).
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd_reproduce::studies::Reading;

    const READ: &[Reading] = &[Reading {
        protocol: "quic-0rtt",
        flow: 0,
        connection: 1,
    }];

    fn row(point: usize, metric: &str, values: &[f64]) -> SummaryRow {
        SummaryRow {
            point,
            axes: Vec::new(),
            metric: metric.into(),
            summary: report::summarize(values).expect("finite"),
        }
    }

    #[test]
    fn reads_the_chosen_connection_and_counts_unfinished_runs() {
        let info = vec![PointInfo {
            experiment: "bernoulli",
            parameter: "link.down.loss".into(),
            x: "2%".into(),
            readings: READ,
        }];
        let summary = vec![
            row(0, "flows.0.bytes_delivered", &[1.0, 1.0, 1.0]),
            // Connection 0 must be ignored: 0-RTT is measured on the second connection.
            row(0, "flows.0.connections.0.completion_s", &[9.0, 9.0]),
            row(0, "flows.0.connections.1.completion_s", &[1.0, 3.0]),
            row(0, "flows.0.connections.1.handshake_s", &[0.002, 0.004]),
        ];
        let r = rows(&info, &summary);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].runs, 3);
        let d = r[0].download.expect("completed downloads");
        assert_eq!((d.n, d.mean), (2, 2.0));
        let md = markdown(&r);
        assert!(
            md.contains("| bernoulli | link.down.loss | 2% | quic-0rtt | 3 | 2 | 2.000 |"),
            "{md}"
        );
        assert!(md.contains("| 3.00 |  |"), "{md}");
        let csv = csv(&r);
        assert_eq!(csv.lines().count(), 2);
        assert!(
            csv.lines().nth(1).is_some_and(
                |l| l.starts_with("bernoulli,link.down.loss,2%,quic-0rtt,3,2,2.000000,")
            ),
            "{csv}"
        );
    }

    #[test]
    fn point_without_runs_gives_empty_cells() {
        let info = vec![PointInfo {
            experiment: "e",
            parameter: "k".into(),
            x: "1".into(),
            readings: READ,
        }];
        let r = rows(&info, &[]);
        assert_eq!(r[0].runs, 0);
        assert!(r[0].download.is_none());
        assert!(csv(&r).ends_with("e,k,1,quic-0rtt,0,0,,,,,\n"));
    }

    #[test]
    fn csv_fields_with_commas_are_quoted() {
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("plain"), "plain");
    }
}
