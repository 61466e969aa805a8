//! Human-readable text for the terminal: one run's summary and a sweep's table.

use std::fmt::Write;

use report::{si, SummaryRow};
use results::{Flow, Link, Run};

/// Per-flow metrics shown in a sweep's table (the full set goes to summary.csv).
const TABLE_METRICS: [&str; 3] = ["goodput_bps", "completion_s", "packets_lost"];

/// Shown for a value the engine did not measure (never a 0).
const ABSENT: &str = "–";

/// A few lines describing one run: per flow, per bottleneck direction, per cross source.
pub fn run_summary(r: &Run) -> String {
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
        flow_lines(&mut s, f);
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

fn flow_lines(s: &mut String, f: &Flow) {
    let _ = writeln!(s, "flow {} ({}, {})", f.name, f.stack, f.workload);
    let opt = |v: Option<f64>, unit: &str| v.map_or_else(|| ABSENT.to_string(), |x| si(x, unit));
    let _ = writeln!(
        s,
        "  delivered {}  goodput {}  completion {}  handshake {}",
        si(f.bytes_delivered as f64, "B"),
        opt(f.goodput_bps, "bit/s"),
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
    if let Some(m) = &f.model {
        // The research model's own figures (seed 001's ACK ratio and I-bit, seed 000's delay).
        let ratio = m
            .achieved_ack_ratio
            .map_or_else(|| ABSENT.to_string(), |r| format!("1:{r:.2}"));
        let _ = writeln!(
            s,
            "  model: ACK ratio {ratio} ({} ACKs), I-bit packets {}, one-way delay mean {} p95 {}, limited by cwnd {} / flow control {} / application {}",
            count(f.ack_frames_sent),
            m.ibit_packets_sent,
            opt(m.one_way_delay_mean_s, "s"),
            opt(m.one_way_delay_p95_s, "s"),
            si(m.cwnd_limited_s, "s"),
            si(m.flow_control_limited_s, "s"),
            si(m.app_limited_s, "s"),
        );
    }
    if let Some(e) = &f.error {
        let _ = writeln!(s, "  error: {e}");
    }
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
pub fn sweep_table(rows: &[SummaryRow], flow_names: &[String]) -> String {
    let metrics: Vec<String> = (0..flow_names.len())
        .flat_map(|i| TABLE_METRICS.iter().map(move |m| format!("flows.{i}.{m}")))
        .collect();
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
        s.push_str(&report::render_table(rows, &metric_refs));
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
        let text = run_summary(&run);
        assert!(text.contains("ran 2.000 s"), "{text}");
        assert!(!text.contains("events"), "{text}");
        assert!(text.contains("goodput –"), "{text}");
        assert!(text.contains("packets sent 100, lost – (–)"), "{text}");
        let sim = Run {
            events: Some(42),
            ..run
        };
        assert!(run_summary(&sim).contains("simulated 2.000 s · 42 events"));
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
                one_way_delay_mean_s: Some(0.02),
                ..results::ModelFlow::default()
            }),
            ..Flow::default()
        };
        let run = Run {
            flows: vec![flow.clone(), Flow::default()],
            ..Run::default()
        };
        let text = run_summary(&run);
        assert_eq!(text.matches("  model: ").count(), 1, "{text}");
        assert!(
            text.contains("model: ACK ratio 1:2.00 (50 ACKs), I-bit packets 3, one-way delay mean 20.00 ms p95 –"),
            "{text}"
        );
    }

    #[test]
    fn sweep_table_selects_main_metrics_per_flow() {
        let row = |metric: &str, v: f64| SummaryRow {
            point: 0,
            axes: vec![("link.loss".into(), "1%".into())],
            metric: metric.into(),
            summary: report::summarize(&[v, v]).expect("finite values"),
        };
        let rows = [
            row("flows.0.goodput_bps", 1e6),
            row("flows.0.ack_frames_sent", 3.0),
            row("flows.1.completion_s", 0.5),
        ];
        let t = sweep_table(&rows, &["a".into(), "b".into()]);
        assert!(t.starts_with("flows.0 = a, flows.1 = b\n"), "{t}");
        assert!(
            t.contains("flows.0.goodput_bps") && t.contains("flows.1.completion_s"),
            "{t}"
        );
        assert!(!t.contains("ack_frames_sent"), "{t}");
    }
}
