//! The study's result table: one row per (experiment, x value, protocol), from the sweep's
//! summary rows, as Markdown (for people and docs) and CSV (for plots).

use std::collections::BTreeMap;
use std::fmt::Write;

use tables::{Align, Markdown};

use analysis::{Summary, SummaryRow};

use super::combine::PointInfo;
use super::registry::{Column, Comparison, Experiment};

/// Runs attempted at a sweep point (its repetitions; adaptive repetitions differ by point).
pub type Attempted<'a> = &'a dyn Fn(usize) -> u32;

/// One line of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Index of its sweep point.
    pub point: usize,
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
                point,
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

/// The table as GitHub Markdown: times in seconds (download) and milliseconds (handshake);
/// `n/N` = runs whose download completed / runs attempted (`attempted` per point).
pub fn markdown(rows: &[Row], attempted: Attempted<'_>) -> String {
    let mut t = Markdown::with_columns([
        ("experiment", Align::Left),
        ("parameter", Align::Left),
        ("x", Align::Left),
        ("protocol", Align::Left),
        ("n/N", Align::Right),
        ("download time (s)", Align::Right),
        ("± 95% CI (s)", Align::Right),
        ("handshake (ms)", Align::Right),
        ("first byte (ms)", Align::Right),
    ]);
    for r in rows {
        t.row([
            r.experiment.clone(),
            r.parameter.clone(),
            r.x.clone(),
            r.protocol.clone(),
            format!("{}/{}", r.download.map_or(0, |d| d.n), attempted(r.point)),
            fixed(r.download.map(|d| d.mean), 1.0, 3),
            fixed(r.download.map(|d| d.ci95_half_width()), 1.0, 3),
            fixed(r.handshake_mean_s, 1e3, 2),
            fixed(r.ttfb_mean_s, 1e3, 2),
        ]);
    }
    t.render()
}

/// One line per row where fewer than `attempted` runs completed: how many completed, how many
/// were recorded (the others failed), so no incomplete point goes unnoticed.
pub fn incomplete(rows: &[Row], attempted: Attempted<'_>) -> Vec<String> {
    rows.iter()
        .filter_map(|r| {
            let attempted = attempted(r.point) as usize;
            let n = r.download.map_or(0, |d| d.n);
            (n < attempted).then(|| {
                format!(
                    "{} {}={} {}: {n} of {attempted} runs completed the download within run.duration ({} recorded{})",
                    r.experiment,
                    r.parameter,
                    r.x,
                    r.protocol,
                    r.runs,
                    if r.runs < attempted { ", the others failed" } else { "" }
                )
            })
        })
        .collect()
}

/// The table as CSV, seconds throughout, full precision.
pub fn csv(rows: &[Row]) -> String {
    tables::csv(
        [
            "experiment",
            "parameter",
            "x",
            "protocol",
            "runs",
            "n",
            "download_mean_s",
            "download_ci95_s",
            "download_sd_s",
            "handshake_mean_s",
            "ttfb_mean_s",
        ],
        rows.iter().map(|r| {
            [
                r.experiment.clone(),
                r.parameter.clone(),
                r.x.clone(),
                r.protocol.clone(),
                r.runs.to_string(),
                r.download.map_or(0, |d| d.n).to_string(),
                fixed(r.download.map(|d| d.mean), 1.0, 6),
                fixed(r.download.map(|d| d.ci95_half_width()), 1.0, 6),
                fixed(r.download.map(|d| d.sd), 1.0, 6),
                fixed(r.handshake_mean_s, 1.0, 6),
                fixed(r.ttfb_mean_s, 1.0, 6),
            ]
        }),
    )
}

/// `v × scale` with `decimals` places; `-` in Markdown terms for a missing value is left to the
/// reader, so an absent value is an empty cell.
fn fixed(v: Option<f64>, scale: f64, decimals: usize) -> String {
    v.map_or_else(String::new, |x| format!("{:.*}", decimals, x * scale))
}

/// One cell of a metrics table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cell {
    /// Runs the value is over.
    pub n: usize,
    /// Mean (or ratio of means), in the column's unit.
    pub mean: f64,
    /// 95% Student-t half-width, in the column's unit (`None` for ratios and single runs).
    pub ci95: Option<f64>,
}

/// One line of a metrics table: an (experiment, x, protocol) with a cell per column.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricRow {
    /// Index of its sweep point.
    pub point: usize,
    /// Experiment name.
    pub experiment: String,
    /// The swept key.
    pub parameter: String,
    /// Its value.
    pub x: String,
    /// Protocol variant.
    pub protocol: String,
    /// Runs recorded at the point.
    pub runs: usize,
    /// One cell per column of the experiment (`None`: the stack does not report the metric).
    pub cells: Vec<Option<Cell>>,
}

/// The metrics rows in point order: the columns of `experiments` (matched by name).
pub fn metric_rows(
    info: &[PointInfo],
    summary: &[SummaryRow],
    experiments: &[&Experiment],
) -> Vec<MetricRow> {
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
        let columns: &[Column] = experiments
            .iter()
            .find(|e| e.name == pi.experiment)
            .map_or(&[], |e| e.columns);
        for rd in pi.readings {
            let get = |m: &str| {
                metrics
                    .get(format!("flows.{}.{m}", rd.flow).as_str())
                    .copied()
            };
            let runs = get("bytes_delivered").map_or(0, |s| s.n);
            let cells = columns
                .iter()
                .map(|c| {
                    let num = metrics.get(c.path(rd.flow).as_str()).copied()?;
                    match c.per {
                        None => Some(Cell {
                            n: num.n,
                            mean: num.mean * c.scale,
                            ci95: (num.n > 1).then(|| num.ci95_half_width() * c.scale),
                        }),
                        Some(per) => {
                            let den = get(per)?;
                            (den.mean > 0.0).then(|| Cell {
                                n: num.n.min(den.n),
                                mean: num.mean / den.mean * c.scale,
                                ci95: None,
                            })
                        }
                    }
                })
                .collect();
            out.push(MetricRow {
                point,
                experiment: pi.experiment.to_string(),
                parameter: pi.parameter.clone(),
                x: pi.x.clone(),
                protocol: rd.protocol.to_string(),
                runs,
                cells,
            });
        }
    }
    out
}

/// Least-squares line through `(x, y)`: R² (the squared correlation), or `None` with fewer
/// than three points or no variance.
pub fn r_squared(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    if points.len() < 3 {
        return None;
    }
    let (mx, my) = (
        points.iter().map(|p| p.0).sum::<f64>() / n,
        points.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let syy: f64 = points.iter().map(|p| (p.1 - my).powi(2)).sum();
    (sxx > 0.0 && syy > 0.0).then(|| sxy * sxy / (sxx * syy))
}

/// The means of `protocol`'s rows of `experiment` in column `col`, by x value (x order kept).
fn series<'a>(
    rows: &'a [MetricRow],
    experiment: &str,
    protocol: &str,
    col: usize,
) -> Vec<(&'a str, f64)> {
    rows.iter()
        .filter(|r| r.experiment == experiment && r.protocol == protocol)
        .filter_map(|r| {
            r.cells
                .get(col)
                .copied()
                .flatten()
                .map(|c| (r.x.as_str(), c.mean))
        })
        .collect()
}

/// Pairs of the two protocols' means at the x values both have.
fn paired(a: &[(&str, f64)], b: &[(&str, f64)]) -> Vec<(String, f64, f64)> {
    a.iter()
        .filter_map(|(x, va)| {
            b.iter()
                .find(|(xb, _)| xb == x)
                .map(|(_, vb)| (x.to_string(), *va, *vb))
        })
        .collect()
}

/// Runs of a metrics row that have every one of its values (its `n` of `n/N`); an empty cell
/// is a metric the stack does not report, not a run that did not complete, and is left out.
fn complete_runs(r: &MetricRow) -> usize {
    r.cells
        .iter()
        .flatten()
        .map(|c| c.n)
        .min()
        .unwrap_or(r.runs)
        .min(r.runs)
}

/// One line per metrics row with fewer than `attempted` runs that measured every column.
pub fn metric_incomplete(rows: &[MetricRow], attempted: Attempted<'_>) -> Vec<String> {
    rows.iter()
        .filter_map(|r| {
            let attempted = attempted(r.point) as usize;
            let n = complete_runs(r);
            (n < attempted).then(|| {
                format!(
                    "{} {}={} {}: {n} of {attempted} runs measured every column ({} recorded{})",
                    r.experiment,
                    r.parameter,
                    r.x,
                    r.protocol,
                    r.runs,
                    if r.runs < attempted {
                        ", the others failed"
                    } else {
                        ""
                    }
                )
            })
        })
        .collect()
}

/// The metrics tables as Markdown: one table per experiment, then its comparisons; `n/N` = runs
/// that measured every column / runs attempted (`attempted` per point).
pub fn metric_markdown(
    experiments: &[&Experiment],
    rows: &[MetricRow],
    attempted: Attempted<'_>,
) -> String {
    let mut s = String::new();
    for e in experiments {
        let mine: Vec<&MetricRow> = rows.iter().filter(|r| r.experiment == e.name).collect();
        let Some(first) = mine.first() else { continue };
        let _ = writeln!(
            s,
            "### {} (`{}`, x = `{}`)\n",
            e.name, e.file, first.parameter
        );
        let mut t = Markdown::with_columns([
            ("x", Align::Left),
            ("protocol", Align::Left),
            ("n/N", Align::Right),
        ]);
        for c in e.columns {
            t.column(c.header, Align::Right)
                .column("± 95% CI", Align::Right);
        }
        for r in &mine {
            let mut cells = vec![
                r.x.clone(),
                r.protocol.clone(),
                format!("{}/{}", complete_runs(r), attempted(r.point)),
            ];
            for (c, cell) in e.columns.iter().zip(&r.cells) {
                cells.push(fixed(cell.map(|v| v.mean), 1.0, c.decimals));
                cells.push(fixed(cell.and_then(|v| v.ci95), 1.0, c.decimals));
            }
            t.row(cells);
        }
        s.push_str(&t.render());
        s.push('\n');
        s.push_str(&comparisons_markdown(e, rows));
        s.push_str(&model_markdown(e, rows));
    }
    s
}

/// An experiment's comparisons as Markdown.
fn comparisons_markdown(e: &Experiment, rows: &[MetricRow]) -> String {
    let mut s = String::new();
    let relative = e.relative_comparisons();
    if !relative.is_empty() {
        let Some(col) = e.columns.first() else {
            return s;
        };
        let _ = writeln!(
            s,
            "Relative difference in {} (variant / baseline − 1):\n",
            col.header
        );
        let mut t = Markdown::new(["x"]);
        for (b, v) in &relative {
            t.column(format!("{v} vs {b}"), Align::Right);
        }
        let xs: Vec<String> = {
            let mut xs: Vec<String> = Vec::new();
            for r in rows.iter().filter(|r| r.experiment == e.name) {
                if !xs.contains(&r.x) {
                    xs.push(r.x.clone());
                }
            }
            xs
        };
        let mut sums = vec![(0.0, 0usize); relative.len()];
        for x in &xs {
            let mut cells = vec![x.clone()];
            for (i, (b, v)) in relative.iter().enumerate() {
                let pairs = paired(&series(rows, e.name, v, 0), &series(rows, e.name, b, 0));
                cells.push(match pairs.iter().find(|(px, _, _)| px == x) {
                    Some((_, vv, bv)) if *bv != 0.0 => {
                        let d = vv / bv - 1.0;
                        sums[i].0 += d;
                        sums[i].1 += 1;
                        format!("{:+.2}%", d * 100.0)
                    }
                    _ => String::new(),
                });
            }
            t.row(cells);
        }
        let mut mean = vec!["mean over x".to_string()];
        for (sum, n) in &sums {
            mean.push(if *n > 0 {
                format!("{:+.2}%", sum / *n as f64 * 100.0)
            } else {
                String::new()
            });
        }
        t.row(mean);
        s.push_str(&t.render());
        s.push('\n');
    }
    let fits: Vec<(&str, &str)> = e
        .comparisons
        .iter()
        .filter_map(|c| match c {
            Comparison::R2 { a, b } => Some((*a, *b)),
            _ => None,
        })
        .collect();
    if !fits.is_empty() {
        s.push_str("R² of a linear fit across the x values (per column):\n\n");
        let mut t = Markdown::new(["column"]);
        for (a, b) in &fits {
            t.column(format!("{a} vs {b}"), Align::Right);
        }
        for (i, c) in e.columns.iter().enumerate() {
            let mut cells = vec![c.header.to_string()];
            for (a, b) in &fits {
                let pts: Vec<(f64, f64)> =
                    paired(&series(rows, e.name, a, i), &series(rows, e.name, b, i))
                        .into_iter()
                        .map(|(_, x, y)| (x, y))
                        .collect();
                cells.push(match r_squared(&pts) {
                    Some(r2) => format!("{:.0}%", r2 * 100.0),
                    None => "n/a".to_string(),
                });
            }
            t.row(cells);
        }
        s.push_str(&t.render());
        s.push('\n');
    }
    s
}

/// The model comparisons of `e`: per x, each model's prediction of the first column and each
/// protocol's measured mean with its difference from the prediction (in the column's unit).
fn model_markdown(e: &Experiment, rows: &[MetricRow]) -> String {
    let mut s = String::new();
    let Some(col) = e.columns.first() else {
        return s;
    };
    let mine: Vec<&MetricRow> = rows.iter().filter(|r| r.experiment == e.name).collect();
    let mut xs: Vec<&str> = Vec::new();
    let mut protocols: Vec<&str> = Vec::new();
    for r in &mine {
        if !xs.contains(&r.x.as_str()) {
            xs.push(&r.x);
        }
        if !protocols.contains(&r.protocol.as_str()) {
            protocols.push(&r.protocol);
        }
    }
    for c in e.comparisons {
        let Comparison::Model { name, predict } = c else {
            continue;
        };
        let _ = writeln!(s, "{} against {name} (measured − model):\n", col.header);
        let mut t = Markdown::with_columns([("x", Align::Left), ("model", Align::Right)]);
        for p in &protocols {
            t.column(*p, Align::Right).column("− model", Align::Right);
        }
        for x in &xs {
            // The model predicts the metric itself; the table shows it in the column's unit.
            let model = predict(x).map(|v| v * col.scale);
            let mut cells = vec![x.to_string(), fixed(model, 1.0, col.decimals)];
            for p in &protocols {
                let measured = mine
                    .iter()
                    .find(|r| r.x == *x && r.protocol == *p)
                    .and_then(|r| r.cells.first().copied().flatten())
                    .map(|c| c.mean);
                cells.push(fixed(measured, 1.0, col.decimals));
                cells.push(match (measured, model) {
                    (Some(m), Some(v)) => format!("{:+.*}", col.decimals, m - v),
                    _ => String::new(),
                });
            }
            t.row(cells);
        }
        s.push_str(&t.render());
        s.push('\n');
    }
    s
}

/// The metrics rows as CSV, one line per (row, column), full precision in the column's unit.
pub fn metric_csv(experiments: &[&Experiment], rows: &[MetricRow]) -> String {
    let mut records = Vec::new();
    for r in rows {
        let Some(e) = experiments.iter().find(|e| e.name == r.experiment) else {
            continue;
        };
        for (c, cell) in e.columns.iter().zip(&r.cells) {
            records.push([
                r.experiment.clone(),
                r.parameter.clone(),
                r.x.clone(),
                r.protocol.clone(),
                r.runs.to_string(),
                c.header.to_string(),
                cell.map_or(0, |v| v.n).to_string(),
                fixed(cell.map(|v| v.mean), 1.0, 6),
                fixed(cell.and_then(|v| v.ci95), 1.0, 6),
            ]);
        }
    }
    tables::csv(
        [
            "experiment",
            "parameter",
            "x",
            "protocol",
            "runs",
            "metric",
            "n",
            "mean",
            "ci95",
        ],
        records,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reproduce::registry::Reading;

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
            summary: analysis::summarize(values).expect("finite"),
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
        let md = markdown(&r, &|_| 4);
        // n/N: 2 downloads completed of the 4 runs attempted (3 recorded, one failed).
        assert!(
            md.contains("| bernoulli | link.down.loss | 2% | quic-0rtt | 2/4 | 2.000 |"),
            "{md}"
        );
        assert_eq!(
            incomplete(&r, &|_| 4),
            ["bernoulli link.down.loss=2% quic-0rtt: 2 of 4 runs completed the download within run.duration (3 recorded, the others failed)"]
        );
        assert_eq!(
            incomplete(&r, &|_| 3),
            ["bernoulli link.down.loss=2% quic-0rtt: 2 of 3 runs completed the download within run.duration (3 recorded)"]
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
    fn r_squared_of_a_line_is_one_and_of_noise_less() {
        let line: Vec<(f64, f64)> = (0..5)
            .map(|i| (f64::from(i), 3.0 * f64::from(i) + 1.0))
            .collect();
        assert!((r_squared(&line).expect("fit") - 1.0).abs() < 1e-12);
        // Imperfect correlation: sxy = 8, sxx = syy = 10, so r² = 64/100.
        let pts = [(1.0, 2.0), (2.0, 1.0), (3.0, 4.0), (4.0, 3.0), (5.0, 5.0)];
        assert!((r_squared(&pts).expect("fit") - 0.64).abs() < 1e-9);
        assert!(r_squared(&pts[..2]).is_none());
        assert!(r_squared(&[(1.0, 1.0), (1.0, 2.0), (1.0, 3.0)]).is_none());
    }

    #[test]
    fn metric_rows_read_columns_ratios_and_comparisons() {
        const COLS: &[Column] = &[
            Column {
                header: "rate (Mbit/s)",
                metric: "window_goodput_bps",
                per: None,
                scale: 1e-6,
                decimals: 3,
            },
            Column {
                header: "acks (%)",
                metric: "ack_frames_sent",
                per: Some("packets_sent"),
                scale: 100.0,
                decimals: 1,
            },
        ];
        const CMP: &[Comparison] = &[
            Comparison::Relative {
                baseline: "a",
                variant: "b",
            },
            Comparison::R2 { a: "a", b: "b" },
        ];
        const RA: &[Reading] = &[Reading {
            protocol: "a",
            flow: 0,
            connection: 0,
        }];
        const RB: &[Reading] = &[Reading {
            protocol: "b",
            flow: 0,
            connection: 0,
        }];
        let e = Experiment {
            name: "e",
            file: "f.toml",
            text: "",
            variants: &[],
            columns: COLS,
            comparisons: CMP,
            set: &[],
        };
        let mut info = Vec::new();
        let mut summary = Vec::new();
        for (i, x) in ["1", "2", "3"].iter().enumerate() {
            for (j, rd) in [RA, RB].iter().enumerate() {
                let point = info.len();
                info.push(PointInfo {
                    experiment: "e",
                    parameter: "k".into(),
                    x: (*x).into(),
                    readings: rd,
                });
                let rate = 1e6 * (i as f64 + 1.0) * (1.0 + j as f64 * 0.1);
                summary.push(row(point, "flows.0.bytes_delivered", &[1.0, 1.0]));
                summary.push(row(point, "flows.0.window_goodput_bps", &[rate, rate]));
                summary.push(row(point, "flows.0.ack_frames_sent", &[50.0, 50.0]));
                if j == 0 {
                    summary.push(row(point, "flows.0.packets_sent", &[100.0, 100.0]));
                }
            }
        }
        let r = metric_rows(&info, &summary, &[&e]);
        assert_eq!(r.len(), 6);
        assert_eq!(r[0].cells[0].map(|c| c.mean), Some(1.0));
        assert_eq!(r[0].cells[1].map(|c| c.mean), Some(50.0));
        // b has no packets_sent: its ratio cell is empty, not a division by zero.
        assert_eq!(r[1].cells[1], None);
        let md = metric_markdown(&[&e], &r, &|_| 2);
        // b's empty ratio cell is a metric its stack lacks, not an incomplete run.
        assert!(md.contains("| 2 | b | 2/2 | 2.200 | 0.000 |"), "{md}");
        assert!(metric_incomplete(&r, &|_| 2).is_empty());
        // With three runs attempted, two is incomplete.
        let md = metric_markdown(&[&e], &r, &|_| 3);
        assert!(md.contains("| 1 | a | 2/3 |"), "{md}");
        assert!(metric_incomplete(&r, &|_| 3).iter().any(|l| l.starts_with(
            "e k=1 a: 2 of 3 runs measured every column (2 recorded, the others failed)"
        )));
        assert!(md.contains("| mean over x | +10.00% |"), "{md}");
        assert!(md.contains("| rate (Mbit/s) | 100% |"), "{md}");
        assert!(md.contains("| acks (%) | n/a |"), "{md}");
        let csv = metric_csv(&[&e], &r);
        assert!(csv.contains("e,k,1,a,2,acks (%),2,50.000000,\n"), "{csv}");
    }

    #[test]
    fn csv_fields_with_commas_are_quoted() {
        let row = Row {
            point: 0,
            experiment: "e".into(),
            parameter: "k".into(),
            x: "1".into(),
            protocol: "tcp,tls".into(),
            runs: 1,
            download: None,
            handshake_mean_s: None,
            ttfb_mean_s: None,
        };
        let text = csv(&[row]);
        assert_eq!(text.lines().nth(1), Some("e,k,1,\"tcp,tls\",1,0,,,,,"));
    }

    #[test]
    fn a_model_comparison_puts_the_prediction_beside_each_protocol() {
        fn half(x: &str) -> Option<f64> {
            (x == "1bdp").then_some(0.5)
        }
        const MODEL: &[Comparison] = &[Comparison::Model {
            name: "a model",
            predict: half,
        }];
        const SHARE: &[Column] = &[Column {
            header: "share (%)",
            metric: "share",
            per: None,
            scale: 100.0,
            decimals: 1,
        }];
        let e = Experiment {
            name: "e",
            file: "f.toml",
            text: "",
            variants: &[],
            columns: SHARE,
            comparisons: MODEL,
            set: &[],
        };
        let row = |x: &str, protocol: &str, mean: f64| MetricRow {
            experiment: "e".into(),
            parameter: "link.queue".into(),
            x: x.into(),
            protocol: protocol.into(),
            point: 0,
            runs: 3,
            cells: vec![Some(Cell {
                n: 3,
                mean,
                ci95: None,
            })],
        };
        let rows = [row("1bdp", "tcp", 47.0), row("2bdp", "tcp", 40.0)];
        let md = model_markdown(&e, &rows);
        assert!(md.contains("share (%) against a model"), "{md}");
        assert!(md.contains("| 1bdp | 50.0 | 47.0 | -3.0 |"), "{md}");
        assert!(md.contains("| 2bdp |  | 40.0 |  |"), "{md}");
    }
}
