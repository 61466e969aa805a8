//! Sweep tables: one row per (rate, HTTP version) attack, as Markdown and CSV (seed 004's table:
//! rate, protocol, mean latency, throughput, success).

use std::fmt::Write as _;

use crate::metrics::Summary;

/// One finished attack of a sweep.
#[derive(Debug, Clone)]
pub struct SweepPoint {
    /// Requested rate (requests per second).
    pub rate: f64,
    /// HTTP version label (`1.1`, `2`, `3`).
    pub http: String,
    /// Results file name, relative to the sweep directory.
    pub file: String,
    /// The attack's report.
    pub summary: Summary,
}

/// The results file name of one sweep point, e.g. `h3-r100.jsonl`.
pub fn file_name(http: &str, rate: f64) -> String {
    format!("h{http}-r{rate}.jsonl")
}

/// The attack label of one sweep point, e.g. `h3-100/s`.
pub fn attack_name(http: &str, rate: f64) -> String {
    format!("h{http}-{rate}/s")
}

const HEADER: [&str; 11] = [
    "rate_per_s",
    "http",
    "requests",
    "achieved_rate_per_s",
    "mean_latency_ms",
    "p50_latency_ms",
    "p99_latency_ms",
    "throughput_mbit_s",
    "successes_per_s",
    "success_pct",
    "not_sent_on_time",
];

fn cells(p: &SweepPoint) -> [String; 11] {
    let s = &p.summary;
    [
        format!("{}", p.rate),
        p.http.clone(),
        s.requests.to_string(),
        format!("{:.2}", s.rate.achieved),
        format!("{:.3}", s.latency_ms.mean),
        format!("{:.3}", s.latency_ms.p50),
        format!("{:.3}", s.latency_ms.p99),
        format!("{:.3}", s.throughput.mbit_in_per_s),
        format!("{:.2}", s.throughput.successes_per_s),
        format!("{:.2}", s.success_ratio * 100.0),
        s.not_sent_on_time.total.to_string(),
    ]
}

/// The table as CSV (header row first).
pub fn csv(points: &[SweepPoint]) -> String {
    let mut o = HEADER.join(",") + "\n";
    for p in points {
        o += &cells(p).join(",");
        o.push('\n');
    }
    o
}

/// The table as GitHub Markdown.
pub fn markdown(points: &[SweepPoint]) -> String {
    let titles = [
        "rate (req/s)",
        "HTTP",
        "requests",
        "achieved (req/s)",
        "mean latency (ms)",
        "p50 (ms)",
        "p99 (ms)",
        "throughput (Mbit/s)",
        "successes/s",
        "success %",
        "not on time",
    ];
    let mut o = format!("| {} |\n|", titles.join(" | "));
    for _ in titles {
        o += "---:|";
    }
    o.push('\n');
    for p in points {
        let _ = writeln!(o, "| {} |", cells(p).join(" | "));
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Metrics;
    use crate::record::tests::sample;

    fn point(rate: f64, http: &str) -> SweepPoint {
        let mut m = Metrics::new();
        for seq in 0..10 {
            let mut r = sample(seq);
            r.error = None;
            m.add(&r);
        }
        SweepPoint {
            rate,
            http: http.into(),
            file: file_name(http, rate),
            summary: m.summary(),
        }
    }

    #[test]
    fn tables_have_one_row_per_point() {
        let points = [point(50.0, "1.1"), point(100.0, "3")];
        let c = csv(&points);
        let lines: Vec<&str> = c.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("rate_per_s,http,requests"));
        assert!(lines[2].starts_with("100,3,10,"), "{}", lines[2]);
        assert!(lines[2].contains(",100.00,0"), "{}", lines[2]);
        let md = markdown(&points);
        assert_eq!(md.lines().count(), 4);
        assert!(md.lines().nth(2).unwrap().starts_with("| 50 | 1.1 | 10 |"));
        assert_eq!(file_name("1.1", 50.0), "h1.1-r50.jsonl");
    }
}
