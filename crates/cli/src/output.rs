//! Human-readable text for the terminal: one run's summary and a sweep's table.

use std::fmt::Write;

use analysis::SummaryRow;
use results::{Flow, Link, Run};
use units::si;

/// Per-flow metrics shown in a sweep's table (the full set goes to summary.csv).
const TABLE_METRICS: [&str; 3] = ["goodput_bps", "completion_s", "packets_lost"];

/// The scenario's measurement window and duration, which the summaries honour.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    /// `run.measure_from`, s.
    pub from_s: f64,
    /// `run.measure_until`, s (None: the end of the run).
    pub until_s: Option<f64>,
    /// `run.duration`, s.
    pub duration_s: f64,
}

impl Window {
    /// The window of one scenario (one sweep point).
    pub fn of(s: &scenario::model::Scenario) -> Window {
        Window {
            from_s: s.measure_from.as_secs_f64(),
            until_s: s.measure_until.map(|d| d.as_secs_f64()),
            duration_s: s.duration.as_secs_f64(),
        }
    }

    /// Whether the scenario sets a window narrower than the whole run.
    pub fn is_set(&self) -> bool {
        self.from_s > 0.0 || self.until_s.is_some()
    }
}

/// Shown for a value the engine did not measure (never a 0).
const ABSENT: &str = "–";

/// A few lines describing one run: per flow, per bottleneck direction, per cross source, and
/// fairness between the flows. With a measurement window (`run.measure_from` /
/// `measure_until`) the goodput shown first is the window's.
pub fn run_summary(r: &Run, window: &Window) -> String {
    let mut s = String::new();
    // Only the simulator counts events; the emulator's run simply took its time.
    let time = match r.events {
        Some(n) => format!("simulated {} · {n} events", si(r.end_s, "s")),
        None => format!("ran {}", si(r.end_s, "s")),
    };
    let _ = writeln!(
        s,
        "scenario {} · run {} · seed {} · {time}",
        r.scenario, r.id, r.seed,
    );
    for (k, v) in &r.axes {
        let _ = writeln!(s, "  {k} = {v}");
    }
    for f in &r.flows {
        flow_lines(&mut s, f, window, r.end_s);
    }
    if let Some(fair) = &r.fairness {
        fairness_line(&mut s, fair, window);
    }
    for (name, l) in &r.links {
        link_line(&mut s, name, l);
    }
    for c in &r.cross {
        let _ = writeln!(
            s,
            "cross {}: sent {} packets ({}), delivered {}",
            c.name,
            c.sent_packets,
            si(c.sent_bytes as f64, "B"),
            c.delivered_packets
        );
    }
    for w in &r.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    s
}

/// A count, or [`ABSENT`].
fn count(v: Option<u64>) -> String {
    v.map_or_else(|| ABSENT.to_string(), |n| n.to_string())
}

fn flow_lines(s: &mut String, f: &Flow, window: &Window, end_s: f64) {
    let _ = writeln!(s, "flow {} ({}, {})", f.name, f.stack, f.workload);
    let opt = |v: Option<f64>, unit: &str| v.map_or_else(|| ABSENT.to_string(), |x| si(x, unit));
    let share = f
        .share
        .map(|x| format!(", share {:.1}%", 100.0 * x))
        .unwrap_or_default();
    let goodput = if window.is_set() {
        format!(
            "goodput in measurement window {} – {} {} (whole flow {}){share}",
            si(window.from_s, "s"),
            si(window.until_s.unwrap_or(end_s).min(end_s), "s"),
            opt(f.window_goodput_bps, "bit/s"),
            opt(f.goodput_bps, "bit/s"),
        )
    } else {
        format!("goodput {}{share}", opt(f.goodput_bps, "bit/s"))
    };
    let _ = writeln!(
        s,
        "  delivered {}  {goodput}  completion {}  handshake {}",
        si(f.bytes_delivered as f64, "B"),
        opt(f.completion_s, "s"),
        opt(f.handshake_s, "s"),
    );
    let _ = writeln!(
        s,
        "  packets sent {}, lost {} ({})",
        count(f.packets_sent),
        count(f.packets_lost),
        match (f.packets_lost, f.packets_sent) {
            (Some(lost), Some(sent)) => percent(lost as f64, sent as f64),
            _ => ABSENT.to_string(),
        }
    );
    if let Some(d) = &f.one_way_delay {
        let _ = writeln!(
            s,
            "  one-way delay mean {} p50 {} p95 {} max {}",
            si(d.mean_s, "s"),
            si(d.p50_s, "s"),
            si(d.p95_s, "s"),
            si(d.max_s, "s"),
        );
    }
    if let Some(m) = &f.model {
        // The research model's own figures (seed 001's ACK ratio and I-bit).
        let ratio = m
            .achieved_ack_ratio
            .map_or_else(|| ABSENT.to_string(), |r| format!("1:{r:.2}"));
        let _ = writeln!(
            s,
            "  model: ACK ratio {ratio} ({} ACKs), I-bit packets {}, limited by cwnd {} / flow control {} / application {}",
            count(f.ack_frames_sent),
            m.ibit_packets_sent,
            si(m.cwnd_limited_s, "s"),
            si(m.flow_control_limited_s, "s"),
            si(m.app_limited_s, "s"),
        );
    }
    if let Some(e) = &f.error {
        let _ = writeln!(s, "  error: {e}");
    }
    if f.workload == "download" && f.completion_s.is_none() && f.error.is_none() {
        let _ = writeln!(
            s,
            "warning: flow {} did not complete within run.duration ({})",
            f.name,
            si(window.duration_s, "s")
        );
    }
}

fn fairness_line(s: &mut String, f: &results::Fairness, window: &Window) {
    let over = if window.is_set() {
        "measurement window"
    } else {
        "whole run"
    };
    let jain = f
        .jain
        .map_or_else(|| ABSENT.to_string(), |j| format!("{j:.4}"));
    let bins = match (f.bins, f.jain_bins_mean, f.jain_bins_min) {
        (Some(n), Some(mean), Some(min)) => {
            format!("; per {n} sample bins mean {mean:.4}, min {min:.4}")
        }
        _ => String::new(),
    };
    let _ = writeln!(s, "fairness ({over}): Jain's index {jain}{bins}");
}

fn link_line(s: &mut String, name: &str, st: &Link) {
    let _ = writeln!(
        s,
        "{name}: utilisation {}, queue drops {}, losses {}, forwarded {} packets, max queue {} packets",
        percent(st.utilisation, 1.0),
        st.dropped_queue_packets,
        st.lost_packets + st.blackout_packets,
        st.forwarded_packets,
        st.max_queue_packets,
    );
}

/// `part / whole` as a percentage with two decimals; [`ABSENT`] when `whole` is zero.
fn percent(part: f64, whole: f64) -> String {
    if whole == 0.0 {
        ABSENT.to_string()
    } else {
        format!("{:.2}%", 100.0 * part / whole)
    }
}

/// The main per-flow metrics of a sweep with mean ± CI95 per point, plus which flow each
/// `flows.N` index is (metric paths carry indices, readers want names).
///
/// With a measurement window (`windowed`) the goodput column is the window's
/// (`window_goodput_bps`); with several flows Jain's index is a row too. Runs that did not
/// complete within `run.duration` are counted (n/N) and warned about below the table.
/// `downloads` are the completion metrics expected at every point (`flows.N.completion_s` of
/// the download flows), so that a download no run completed is warned about as well.
pub fn sweep_table(
    rows: &[SummaryRow],
    flow_names: &[String],
    windowed: bool,
    downloads: &[String],
) -> String {
    let mut metrics: Vec<String> = (0..flow_names.len())
        .flat_map(|i| {
            TABLE_METRICS.iter().map(move |m| match *m {
                "goodput_bps" if windowed => format!("flows.{i}.window_goodput_bps"),
                m => format!("flows.{i}.{m}"),
            })
        })
        .collect();
    if flow_names.len() > 1 {
        metrics.push("fairness.jain".into());
    }
    let metric_refs: Vec<&str> = metrics.iter().map(String::as_str).collect();
    let mut s = String::new();
    if flow_names.len() > 1 {
        let legend: Vec<String> = flow_names
            .iter()
            .enumerate()
            .map(|(i, n)| format!("flows.{i} = {n}"))
            .collect();
        let _ = writeln!(s, "{}", legend.join(", "));
    }
    // An empty list would mean "every metric" to render_table; with no flows there is nothing to show.
    if !metric_refs.is_empty() {
        s.push_str(&analysis::render_table(rows, &metric_refs));
    }
    for w in analysis::incomplete_warnings(rows, downloads) {
        let _ = writeln!(s, "warning: {w}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_handles_zero_denominator() {
        assert_eq!(percent(1.0, 0.0), ABSENT);
        assert_eq!(percent(1.0, 4.0), "25.00%");
    }

    #[test]
    fn absent_values_print_as_a_dash_never_zero() {
        let run = Run {
            id: "p0-r0".into(),
            end_s: 2.0,
            flows: vec![Flow {
                name: "f".into(),
                bytes_delivered: 10,
                packets_sent: Some(100),
                ..Flow::default()
            }],
            ..Run::default()
        };
        let text = run_summary(&run, &window(0.0, None));
        assert!(text.contains("ran 2.000 s"), "{text}");
        assert!(!text.contains("events"), "{text}");
        assert!(text.contains("goodput –"), "{text}");
        assert!(text.contains("packets sent 100, lost – (–)"), "{text}");
        let sim = Run {
            events: Some(42),
            ..run
        };
        assert!(run_summary(&sim, &window(0.0, None)).contains("simulated 2.000 s · 42 events"));
    }

    #[test]
    fn model_flows_get_a_line_of_their_own() {
        let flow = Flow {
            name: "m".into(),
            stack: "quic-model".into(),
            ack_frames_sent: Some(50),
            model: Some(results::ModelFlow {
                achieved_ack_ratio: Some(2.0),
                ibit_packets_sent: 3,
                ..results::ModelFlow::default()
            }),
            ..Flow::default()
        };
        let run = Run {
            flows: vec![flow.clone(), Flow::default()],
            ..Run::default()
        };
        let text = run_summary(&run, &window(0.0, None));
        assert_eq!(text.matches("  model: ").count(), 1, "{text}");
        assert!(
            text.contains("model: ACK ratio 1:2.00 (50 ACKs), I-bit packets 3, limited by cwnd"),
            "{text}"
        );
    }

    fn window(from_s: f64, until_s: Option<f64>) -> Window {
        Window {
            from_s,
            until_s,
            duration_s: 5.0,
        }
    }

    #[test]
    fn run_summary_honours_the_measurement_window_and_shows_fairness() {
        // Regression: the console summary printed whole-run goodput and ignored
        // measure_from / measure_until.
        let flow = |name: &str, g: f64, w: f64, share: f64| Flow {
            name: name.into(),
            workload: "bulk-down".into(),
            goodput_bps: Some(g),
            window_goodput_bps: Some(w),
            share: Some(share),
            ..Flow::default()
        };
        let run = Run {
            end_s: 5.0,
            flows: vec![flow("a", 4e6, 6e6, 0.6), flow("b", 3e6, 4e6, 0.4)],
            fairness: Some(results::Fairness {
                jain: Some(0.9615),
                jain_bins_mean: Some(0.9),
                jain_bins_min: Some(0.7),
                bins: Some(30),
            }),
            ..Run::default()
        };
        let text = run_summary(&run, &window(1.0, Some(4.0)));
        assert!(
            text.contains("goodput in measurement window 1.000 s – 4.000 s 6.000 Mbit/s (whole flow 4.000 Mbit/s), share 60.0%"),
            "{text}"
        );
        assert!(
            text.contains("fairness (measurement window): Jain's index 0.9615; per 30 sample bins mean 0.9000, min 0.7000"),
            "{text}"
        );
        // Without a window the whole flow is the figure, as before.
        let text = run_summary(&run, &window(0.0, None));
        assert!(text.contains("goodput 4.000 Mbit/s"), "{text}");
        assert!(!text.contains("measurement window 0"), "{text}");
    }

    #[test]
    fn a_download_that_did_not_complete_is_warned() {
        let run = Run {
            end_s: 5.0,
            flows: vec![Flow {
                name: "d".into(),
                workload: "download".into(),
                bytes_delivered: 10,
                ..Flow::default()
            }],
            ..Run::default()
        };
        let text = run_summary(&run, &window(0.0, None));
        assert!(
            text.contains("warning: flow d did not complete within run.duration (5.000 s)"),
            "{text}"
        );
    }

    #[test]
    fn sweep_table_uses_window_goodput_and_warns_about_incomplete_runs() {
        let row = |point: usize, metric: &str, v: &[f64]| SummaryRow {
            point,
            axes: vec![("link.loss".into(), format!("{point}%"))],
            metric: metric.into(),
            summary: analysis::summarize(v).expect("finite values"),
        };
        let rows = [
            row(0, "end_s", &[1.0, 1.0, 1.0]),
            row(0, "flows.0.goodput_bps", &[1e6, 1e6, 1e6]),
            row(0, "flows.0.window_goodput_bps", &[2e6, 2e6, 2e6]),
            row(0, "flows.0.completion_s", &[1.0, 1.0]),
            row(0, "fairness.jain", &[0.9, 0.9, 0.9]),
        ];
        let names = ["a".to_string(), "b".to_string()];
        let t = sweep_table(&rows, &names, true, &[]);
        assert!(t.contains("flows.0.window_goodput_bps"), "{t}");
        assert!(!t.contains("flows.0.goodput_bps"), "{t}");
        assert!(t.contains("fairness.jain"), "{t}");
        assert!(
            t.contains("warning: point 0 (link.loss=0%): flows.0.completion_s in 2 of 3 runs; 1 did not complete within run.duration"),
            "{t}"
        );
        let t = sweep_table(&rows, &names, false, &[]);
        assert!(
            t.contains("flows.0.goodput_bps") && !t.contains("window_goodput"),
            "{t}"
        );
    }

    #[test]
    fn sweep_table_selects_main_metrics_per_flow() {
        let row = |metric: &str, v: f64| SummaryRow {
            point: 0,
            axes: vec![("link.loss".into(), "1%".into())],
            metric: metric.into(),
            summary: analysis::summarize(&[v, v]).expect("finite values"),
        };
        let rows = [
            row("flows.0.goodput_bps", 1e6),
            row("flows.0.ack_frames_sent", 3.0),
            row("flows.1.completion_s", 0.5),
        ];
        let t = sweep_table(&rows, &["a".into(), "b".into()], false, &[]);
        assert!(t.starts_with("flows.0 = a, flows.1 = b\n"), "{t}");
        assert!(
            t.contains("flows.0.goodput_bps") && t.contains("flows.1.completion_s"),
            "{t}"
        );
        assert!(!t.contains("ack_frames_sent"), "{t}");
    }
}
