//! Seed 001's validation cases as the paper draws them (its Figs. 3–6): the measured value against
//! the swept parameter, over the analytic curve it is checked against. The tolerance charts of a
//! study report show how far each point is from its expectation; these show what a reader of the
//! paper compares — the model's dots on the equation's line.

use serde::Serialize;

use super::PointResult;

/// Where a validation point sits in its paper figure: the swept parameter (x, in the figure's
/// unit) and the series it belongs to (empty for a figure with one series).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DrawnAt {
    /// The swept parameter.
    pub x: f64,
    /// The series (e.g. `p = 0.1%`).
    pub series: String,
}

impl DrawnAt {
    /// A point at `x` of `series`.
    pub fn new(x: f64, series: impl Into<String>) -> Self {
        DrawnAt {
            x,
            series: series.into(),
        }
    }
}

/// One series of a [`PaperFigure`]: the law as a line through (x, y), a NaN y breaking it (a
/// step between phases), and the measured (x, mean, 95% low, 95% high), low = high for a single
/// run. The chart's own type, so the report draws it as it is.
pub use figures::chart::AnalyticSeries as DrawnSeries;

/// A validation case drawn as the paper draws it.
#[derive(Debug, Clone, PartialEq)]
pub struct PaperFigure {
    /// The case.
    pub case: String,
    /// Title (the paper's figure and what it shows).
    pub title: String,
    /// x axis label.
    pub x_label: String,
    /// y axis label.
    pub y_label: String,
    /// Logarithmic axes (the 1/RTT laws are straight lines on them).
    pub log: bool,
    /// What the lines and dots are.
    pub footnote: String,
    /// The series.
    pub series: Vec<DrawnSeries>,
}

/// How each drawable case is drawn: (case suffix, title, x label, log axes, footnote).
const DRAWN_CASES: [(&str, &str, &str, bool, &str); 3] = [
    (
        "link-bandwidth",
        "Fig. 3: throughput against the MTU, 100 Mbit/s link",
        "MTU (bytes)",
        false,
        "line: Eq. (1), the link rate times the share of each packet that is QUIC payload; \
         dots: measured",
    ),
    (
        "mathis",
        "Fig. 4: throughput against the RTT under periodic loss",
        "RTT (ms)",
        true,
        "lines: Eq. (2), Mathis et al. (straight on log-log axes); dots: measured",
    ),
    (
        "flow-control",
        "Fig. 5: goodput against the RTT, limited by stream flow control",
        "RTT (ms)",
        true,
        "lines: Eq. (3), initialMaxData / RTT (straight on log-log axes); dots: measured",
    ),
];

/// The figures of the cases among `points` that have one (points carrying a [`DrawnAt`]), in
/// the order the cases appear.
pub fn per_point_figures(points: &[PointResult]) -> Vec<PaperFigure> {
    let mut cases: Vec<&str> = Vec::new();
    for p in points.iter().filter(|p| p.drawn_at.is_some()) {
        if !cases.contains(&p.case.as_str()) {
            cases.push(&p.case);
        }
    }
    let mut out = Vec::new();
    for case in cases {
        let Some(&(_, title, x_label, log, footnote)) = DRAWN_CASES.iter().find(|(suffix, ..)| {
            case == *suffix
                || case
                    .strip_suffix(suffix)
                    .is_some_and(|prefix| prefix.ends_with('-'))
        }) else {
            continue;
        };
        let mut series: Vec<DrawnSeries> = Vec::new();
        for p in points.iter().filter(|p| p.case == case) {
            let Some(at) = &p.drawn_at else { continue };
            let i = match series.iter().position(|s| s.label == at.series) {
                Some(i) => i,
                None => {
                    series.push(DrawnSeries {
                        label: at.series.clone(),
                        expected: Vec::new(),
                        measured: Vec::new(),
                    });
                    series.len() - 1
                }
            };
            let mbit = |v: f64| v / 1e6;
            series[i].expected.push((at.x, mbit(p.expected)));
            if p.measured.is_finite() {
                let m = mbit(p.measured);
                series[i].measured.push((at.x, m, m, m));
            }
        }
        for s in &mut series {
            s.expected.sort_by(|a, b| a.0.total_cmp(&b.0));
            if s.label.is_empty() {
                s.label = "measured".into();
            }
        }
        out.push(PaperFigure {
            case: case.to_string(),
            title: title.to_string(),
            x_label: x_label.to_string(),
            y_label: if case.ends_with("flow-control") {
                "goodput (Mbit/s)"
            } else {
                "throughput (Mbit/s)"
            }
            .to_string(),
            log,
            footnote: footnote.to_string(),
            series,
        });
    }
    out
}

/// Fig. 6: each sender's throughput per second, mean over the repetitions with its 95% interval,
/// over its fair share (the link's maximum divided by the senders active at the time).
/// `senders` are the (start, stop) seconds of each sender; `bins` per repetition hold
/// (sender name `senderN`, bin end time in s, bit/s).
pub fn fair_share_figure(
    case: &str,
    senders: &[(u64, u64)],
    tp_max_bps: f64,
    bins: &[&[(String, f64, f64)]],
) -> PaperFigure {
    let mut edges: Vec<u64> = senders.iter().flat_map(|&(a, b)| [a, b]).collect();
    edges.sort_unstable();
    edges.dedup();
    let series = senders
        .iter()
        .enumerate()
        .map(|(i, &(start, stop))| {
            let name = format!("sender{}", i + 1);
            // The fair share, phase by phase, broken between phases.
            let mut expected = Vec::new();
            for w in edges.windows(2) {
                let (a, b) = (w[0], w[1]);
                if a < start || b > stop {
                    continue;
                }
                let active = senders.iter().filter(|&&(s, e)| s <= a && e >= b).count();
                let share = tp_max_bps / active as f64 / 1e6;
                expected.push((a as f64, share));
                expected.push((b as f64, share));
                expected.push((b as f64, f64::NAN));
            }
            // Per bin end time: the repetitions' values.
            let mut per_bin: Vec<(f64, Vec<f64>)> = Vec::new();
            for rep in bins {
                for (flow, t, bps) in rep.iter() {
                    // Only the seconds it sends: the zeros before its start and after its stop
                    // carry nothing.
                    let active = *t > start as f64 && *t <= stop as f64;
                    if *flow != name || !bps.is_finite() || !active {
                        continue;
                    }
                    match per_bin.iter_mut().find(|(bt, _)| bt == t) {
                        Some((_, v)) => v.push(bps / 1e6),
                        None => per_bin.push((*t, vec![bps / 1e6])),
                    }
                }
            }
            per_bin.sort_by(|a, b| a.0.total_cmp(&b.0));
            let measured = per_bin
                .iter()
                .filter_map(|(t, v)| {
                    let s = analysis::summarize(v).ok()?;
                    Some((*t - 0.5, s.mean, s.ci95_low.max(0.0), s.ci95_high))
                })
                .collect();
            DrawnSeries {
                label: format!("sender {} ({start}–{stop} s)", i + 1),
                expected,
                measured,
            }
        })
        .collect();
    PaperFigure {
        case: case.to_string(),
        title: "Fig. 6: throughput of three senders sharing a 10 Mbit/s link".into(),
        x_label: "time (s)".into(),
        y_label: "throughput (Mbit/s)".into(),
        log: false,
        footnote: format!(
            "lines: the fair share (the link's maximum over the senders active); dots: mean per \
             second over {} repetitions, bars: its 95% interval",
            bins.len()
        ),
        series,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(case: &str, x: f64, series: &str, expected: f64, measured: f64) -> PointResult {
        PointResult {
            case: case.into(),
            label: format!("{series} {x}"),
            expected,
            measured,
            error: measured / expected - 1.0,
            tolerance: 0.05,
            pass: true,
            note: String::new(),
            unit: "bit/s".into(),
            drawn_at: Some(DrawnAt::new(x, series)),
        }
    }

    #[test]
    fn points_become_one_series_per_parameter_in_x_order() {
        let points = vec![
            point("model-mathis", 100.0, "p = 0.1%", 1e6, 1.1e6),
            point("model-mathis", 2.0, "p = 0.1%", 50e6, 49e6),
            point("model-mathis", 2.0, "p = 0.005%", 200e6, 190e6),
            point("model-high-loss", 2.0, "", 1e6, 1e6),
        ];
        let figs = per_point_figures(&points);
        assert_eq!(figs.len(), 1, "model-high-loss has no paper figure");
        let f = &figs[0];
        assert!(f.title.starts_with("Fig. 4") && f.log);
        assert_eq!(f.series.len(), 2);
        assert_eq!(f.series[0].expected, vec![(2.0, 50.0), (100.0, 1.0)]);
        assert_eq!(f.series[0].measured[0], (100.0, 1.1, 1.1, 1.1));
        assert_eq!(f.series[1].label, "p = 0.005%");
    }

    #[test]
    fn the_fair_share_steps_with_the_senders_active() {
        let senders = [(0, 2), (1, 3)];
        let rep: Vec<(String, f64, f64)> = vec![
            ("sender1".into(), 1.0, 10e6),
            ("sender1".into(), 2.0, 5e6),
            ("sender1".into(), 3.0, 0.0),
            ("sender2".into(), 1.0, 0.0),
            ("sender2".into(), 2.0, 5e6),
            ("sender2".into(), 3.0, 10e6),
        ];
        let other: Vec<(String, f64, f64)> = vec![("sender1".into(), 1.0, 8e6)];
        let f = fair_share_figure("fair-share", &senders, 10e6, &[&rep, &other]);
        let s1 = &f.series[0];
        // Alone from 0 to 1 s (10 Mbit/s), then shared (5).
        assert_eq!(s1.expected[0], (0.0, 10.0));
        assert_eq!(s1.expected[3], (1.0, 5.0));
        assert!(s1.expected[2].1.is_nan());
        // Second 0–1: two repetitions, mean 9 with an interval; second 1–2: one, no spread.
        let (t, mean, lo, hi) = s1.measured[0];
        assert_eq!((t, mean), (0.5, 9.0));
        assert!(lo < 9.0 && hi > 9.0);
        assert_eq!(s1.measured[1], (1.5, 5.0, 5.0, 5.0));
        // Nothing drawn outside a sender's active seconds.
        assert_eq!(s1.measured.len(), 2);
        assert_eq!(f.series[1].measured[0].0, 1.5);
        assert_eq!(f.series[1].label, "sender 2 (1–3 s)");
    }
}
