//! Time series of one run (`series/<id>.csv`): goodput (under the bottleneck's capacity), cwnd,
//! sRTT, bytes in flight, one line per flow, and the bottleneck queues and their queue delay,
//! panels stacked over the run's time.

use std::collections::BTreeMap;
use std::path::Path;

use crate::chart::{self, Panel, PanelChart};
use crate::data::{ResultsDir, RunData};
use crate::error::FigureError;
use crate::metric;
use crate::{Figure, FigureKind, FigureSize};

/// Figure width and height per panel, px.
pub const WIDTH: u32 = 960;
/// See [`WIDTH`].
pub const PANEL_H: u32 = 170;

/// Per-flow columns drawn, each in its own panel: (column, panel label without unit).
const FLOW_PANELS: [(&str, &str); 4] = [
    ("goodput_bps", "goodput (in order)"),
    ("cwnd_bytes", "cwnd"),
    ("srtt_ms", "sRTT"),
    ("in_flight_bytes", "in flight"),
];
/// Queue columns, drawn together in the last panel (the same values repeat on every flow's row).
const QUEUE_COLUMNS: [(&str, &str); 2] = [
    ("queue_down_packets", "queue down"),
    ("queue_up_packets", "queue up"),
];
/// The bottleneck's capacity per bin, drawn over the flows' goodput.
const CAPACITY_COLUMNS: [(&str, &str); 2] = [
    ("capacity_down_bps", "capacity down"),
    ("capacity_up_bps", "capacity up"),
];
/// Mean queue delay per bin, drawn together in a panel of their own.
const QUEUE_DELAY_COLUMNS: [(&str, &str); 2] = [
    ("queue_delay_down_mean_ms", "queue delay down"),
    ("queue_delay_up_mean_ms", "queue delay up"),
];

/// The panel label of a time-series column drawn by the run figure, if it is one.
pub(crate) fn column_label(col: &str) -> Option<&'static str> {
    FLOW_PANELS
        .iter()
        .chain(&QUEUE_COLUMNS)
        .chain(&QUEUE_DELAY_COLUMNS)
        .find(|(c, _)| *c == col)
        .map(|(_, name)| *name)
}

/// A bottleneck column as one line: the first flow's rows (the link's values repeat on every
/// flow's row of a bin), leaving out bins where it was not measured; `None` if never measured.
fn link_line(table: &SeriesTable, col: &str, first: &str) -> Option<Vec<(f64, f64)>> {
    let values = table.columns.get(col)?;
    let pts: Vec<(f64, f64)> = table
        .t
        .iter()
        .zip(values)
        .zip(&table.flow)
        .filter(|((_, v), fl)| *fl == first && v.is_finite())
        .map(|((t, v), _)| (*t, *v))
        .collect();
    (!pts.is_empty()).then_some(pts)
}

/// A series file as columns: name → values, plus the flow of each row.
#[derive(Debug, Clone, Default)]
pub struct SeriesTable {
    /// `t_s` of each row.
    pub t: Vec<f64>,
    /// `flow` of each row.
    pub flow: Vec<String>,
    /// Every other numeric column by header name.
    pub columns: BTreeMap<String, Vec<f64>>,
}

/// Reads a series CSV (any columns; `t_s` and `flow` required).
pub fn read(path: &Path) -> Result<SeriesTable, FigureError> {
    let bad = |message: String| FigureError::Csv {
        path: path.to_path_buf(),
        message,
    };
    let mut rdr = csv::Reader::from_path(path).map_err(|e| bad(e.to_string()))?;
    let headers = rdr.headers().map_err(|e| bad(e.to_string()))?.clone();
    let t_col = headers
        .iter()
        .position(|h| h == "t_s")
        .ok_or_else(|| bad("no t_s column".into()))?;
    let f_col = headers
        .iter()
        .position(|h| h == "flow")
        .ok_or_else(|| bad("no flow column".into()))?;
    let mut table = SeriesTable::default();
    for (line, rec) in rdr.records().enumerate() {
        let rec = rec.map_err(|e| bad(e.to_string()))?;
        let num = |i: usize| -> Result<f64, FigureError> {
            rec.get(i).unwrap_or_default().parse::<f64>().map_err(|_| {
                bad(format!(
                    "line {}: column {} is not a number",
                    line + 2,
                    i + 1
                ))
            })
        };
        table.t.push(num(t_col)?);
        table
            .flow
            .push(rec.get(f_col).unwrap_or_default().to_string());
        for (i, h) in headers.iter().enumerate() {
            if i != t_col && i != f_col {
                let v = rec
                    .get(i)
                    .unwrap_or_default()
                    .parse::<f64>()
                    .unwrap_or(f64::NAN);
                table.columns.entry(h.to_string()).or_default().push(v);
            }
        }
    }
    Ok(table)
}

/// The run of point `p` whose main metric is the median of the point's runs that have a
/// series file (the lower middle for an even count): a typical run, not a lucky or unlucky one.
pub fn representative(d: &ResultsDir, p: usize) -> Option<&RunData> {
    let runs: Vec<&RunData> = d
        .runs_of(p)
        .into_iter()
        .filter(|r| d.series.contains(&r.id))
        .collect();
    let key = [
        "flows.0.completion_s",
        "flows.0.window_goodput_bps",
        "flows.0.goodput_bps",
    ]
    .into_iter()
    .find(|k| runs.iter().any(|r| r.metrics.contains_key(*k)));
    let Some(key) = key else {
        return runs.first().copied();
    };
    let mut with: Vec<(&RunData, f64)> = runs
        .iter()
        .filter_map(|r| r.metrics.get(key).map(|v| (*r, *v)))
        .collect();
    with.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.rep.cmp(&b.0.rep)));
    with.get(with.len().saturating_sub(1) / 2)
        .map(|(r, _)| *r)
        .or_else(|| runs.first().copied())
}

/// The time-series figure of run `id`.
pub fn figure(d: &ResultsDir, id: &str, size: FigureSize) -> Result<Figure, FigureError> {
    let table = read(&d.series_path(id))?;
    let mut flows: Vec<String> = Vec::new();
    for f in &table.flow {
        if !flows.contains(f) {
            flows.push(f.clone());
        }
    }
    let first = flows.first().cloned().unwrap_or_default();
    let mut panels = Vec::new();
    for (col, name) in FLOW_PANELS {
        let Some(values) = table.columns.get(col) else {
            continue;
        };
        // Goodput is drawn under the link's capacity, where the series has it.
        let capacity: Vec<(&str, Vec<(f64, f64)>)> = if col == "goodput_bps" {
            CAPACITY_COLUMNS
                .iter()
                .filter_map(|(c, label)| Some((*label, link_line(&table, c, &first)?)))
                .collect()
        } else {
            Vec::new()
        };
        let max = values
            .iter()
            .copied()
            .chain(capacity.iter().flat_map(|(_, p)| p.iter().map(|p| p.1)))
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max);
        let sc = metric::scale(col, max);
        let mut lines: Vec<(String, Vec<(f64, f64)>)> = flows
            .iter()
            .map(|f| {
                let pts = table
                    .t
                    .iter()
                    .zip(values)
                    .zip(&table.flow)
                    .filter(|(_, fl)| *fl == f)
                    // An sRTT of 0 is "no RTT sample yet", not a measured zero.
                    .filter(|((_, v), _)| col != "srtt_ms" || **v > 0.0)
                    .map(|((t, v), _)| (*t, v * sc.factor))
                    .collect();
                (f.clone(), pts)
            })
            .collect();
        // Beside the in-order goodput, the rate at which payload arrived: a bin right after a
        // repaired loss delivers everything held behind the hole at once, so goodput can exceed
        // the capacity there while the arrival rate cannot.
        if col == "goodput_bps" {
            if let Some(arrivals) = table.columns.get("payload_throughput_bps") {
                for f in &flows {
                    let pts: Vec<(f64, f64)> = table
                        .t
                        .iter()
                        .zip(arrivals)
                        .zip(&table.flow)
                        .filter(|((_, v), fl)| *fl == f && v.is_finite())
                        .map(|((t, v), _)| (*t, v * sc.factor))
                        .collect();
                    if !pts.is_empty() {
                        lines.push((format!("{f} arrival rate"), pts));
                    }
                }
            }
        }
        for (label, pts) in capacity {
            let pts = pts.into_iter().map(|(t, v)| (t, v * sc.factor)).collect();
            lines.push((label.to_string(), pts));
        }
        panels.push(Panel {
            y_label: metric::axis_label(name, &sc),
            lines,
        });
    }
    let mut queue_lines = Vec::new();
    for (col, name) in QUEUE_COLUMNS {
        let Some(values) = table.columns.get(col) else {
            continue;
        };
        // One sample per time: the queue is the same on every flow's row of a bin.
        let pts: Vec<(f64, f64)> = table
            .t
            .iter()
            .zip(values)
            .zip(&table.flow)
            .filter(|(_, fl)| **fl == first)
            .map(|((t, v), _)| (*t, *v))
            .collect();
        queue_lines.push((name.to_string(), pts));
    }
    if !queue_lines.is_empty() {
        panels.push(Panel {
            y_label: "queue [packets]".into(),
            lines: queue_lines,
        });
    }
    let delay_lines: Vec<(String, Vec<(f64, f64)>)> = QUEUE_DELAY_COLUMNS
        .iter()
        .filter_map(|(c, label)| Some((label.to_string(), link_line(&table, c, &first)?)))
        .collect();
    if !delay_lines.is_empty() {
        panels.push(Panel {
            y_label: "queue delay [ms]".into(),
            lines: delay_lines,
        });
    }
    let point = d.runs.iter().find(|r| r.id == id).map(|r| r.point);
    let axes = point
        .and_then(|p| d.points.get(p))
        .map(|p| crate::sweep::key_label(&p.axes))
        .filter(|s| s != "all runs");
    let title = match &axes {
        Some(a) => format!("run {id} ({a})"),
        None => format!("run {id}"),
    };
    let panels_n = panels.len();
    let svg = chart::panel_chart(
        &PanelChart {
            title: title.clone(),
            x_label: "time [s]".into(),
            panels,
        },
        size.panels_canvas(WIDTH, PANEL_H, panels_n),
    )?;
    Ok(Figure {
        id: format!("series-{}", metric::slug(id)),
        title,
        caption: format!(
            "Time series of run {id}, one sample per bin: goodput at the data receiver (bytes the \
             application could read in order; the bin after a repaired loss releases what waited \
             behind the hole, so it can exceed the capacity) beside the rate at which payload \
             arrived, under the bottleneck's capacity over the bin; the data sender's cwnd, sRTT \
             and bytes in flight per flow; the bottleneck queues in packets and the mean queue delay of the \
             packets that left them in the bin."
        ),
        svg,
        kind: FigureKind::Series,
        missing_runs: 0,
    })
}
