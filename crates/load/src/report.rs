//! Renders a [`Summary`] as text or JSON, and a latency histogram in HDR's percentile format.

use std::fmt::Write as _;

use hdrhistogram::Histogram;

use crate::metrics::{Distribution, Summary};

/// The `report --type` choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportType {
    /// Human-readable table.
    Text,
    /// The [`Summary`] as pretty JSON.
    Json,
    /// HDR histogram percentile distribution of latency (milliseconds).
    Hdr,
}

/// Renders the human-readable report.
pub fn text(s: &Summary) -> String {
    let mut o = String::new();
    let dist = |d: &Distribution| {
        format!(
            "{:.3}, {:.3}, {:.3}, {:.3}, {:.3}, {:.3}, {:.3}, {}",
            d.min, d.mean, d.p50, d.p90, d.p95, d.p99, d.max, d.n
        )
    };
    let short = |d: &Distribution| {
        if d.n == 0 {
            "-".to_string()
        } else {
            format!("{:.3}, {:.3}, {:.3}  (n = {})", d.mean, d.p50, d.p99, d.n)
        }
    };
    // Writing to a String cannot fail.
    let _ = writeln!(
        o,
        "Requests       [total, sent, successes]            {}, {}, {}",
        s.requests, s.sent, s.successes
    );
    let _ = writeln!(
        o,
        "Rate           [requested, achieved] req/s         {:.2}, {:.2}",
        s.rate.requested, s.rate.achieved
    );
    let _ = writeln!(
        o,
        "Throughput     [successes/s, Mbit/s]               {:.2}, {:.3}",
        s.throughput.successes_per_s, s.throughput.mbit_in_per_s
    );
    let _ = writeln!(
        o,
        "Duration       [attack, wait] s                    {:.3}, {:.3}",
        s.duration_s, s.wait_s
    );
    let _ = writeln!(
        o,
        "Latency ms     [min, mean, 50, 90, 95, 99, max, n] {}",
        dist(&s.latency_ms)
    );
    let _ = writeln!(
        o,
        "Service ms     [min, mean, 50, 90, 95, 99, max, n] {}",
        dist(&s.service_ms)
    );
    let _ = writeln!(
        o,
        "Lateness ms    [min, mean, 50, 90, 95, 99, max, n] {}",
        dist(&s.lateness_ms)
    );
    let phases = &s.phases_ms;
    for (name, d) in [
        ("Connect ms", &phases.connect),
        ("TLS ms", &phases.tls),
        ("QUIC hs ms", &phases.quic_handshake),
        ("TTFB ms", &phases.ttfb),
    ] {
        let _ = writeln!(
            o,
            "{name:<15}[mean, 50, 99]                      {}",
            short(d)
        );
    }
    let _ = writeln!(
        o,
        "Bytes          [in, out]                           {}, {}",
        s.throughput.bytes_in, s.throughput.bytes_out
    );
    let _ = writeln!(
        o,
        "Success        [ratio]                             {:.2}%",
        s.success_ratio * 100.0
    );
    let _ = writeln!(
        o,
        "Not on time    [skipped, late]                     {}, {}",
        s.not_sent_on_time.skipped, s.not_sent_on_time.late
    );
    let codes: Vec<String> = s
        .status_codes
        .iter()
        .map(|(code, n)| format!("{code}:{n}"))
        .collect();
    let _ = writeln!(
        o,
        "Status codes   [code:count]                        {}",
        codes.join("  ")
    );
    let _ = writeln!(o, "Error set:");
    for e in &s.errors {
        let _ = writeln!(o, "{:>8} × {}", e.count, e.error);
    }
    o
}

/// Renders the summary as pretty JSON (the documented, stable shape).
pub fn json(s: &Summary) -> String {
    // A Summary holds only numbers, strings and maps with string keys: it always serializes.
    serde_json::to_string_pretty(s).unwrap_or_default() + "\n"
}

/// HDR's "percentile distribution" text (as HdrHistogram's `outputPercentileDistribution` and
/// vegeta's `report -type=hdrplot`), for a microsecond histogram, printed in milliseconds.
pub fn hdr(h: &Histogram<u64>) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{:>12} {:>14} {:>10} {:>14}\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    if h.is_empty() {
        return o;
    }
    let ms = |us: u64| us as f64 / 1e3;
    let mut total = 0u64;
    for v in h.iter_quantiles(5) {
        total += v.count_since_last_iteration();
        let q = v.quantile_iterated_to();
        if q < 1.0 {
            let _ = writeln!(
                o,
                "{:12.3} {:2.12} {:10} {:14.2}",
                ms(v.value_iterated_to()),
                q,
                total,
                1.0 / (1.0 - q)
            );
        } else {
            let _ = writeln!(
                o,
                "{:12.3} {:2.12} {:10}",
                ms(v.value_iterated_to()),
                q,
                total
            );
        }
    }
    let _ = writeln!(
        o,
        "#[Mean    = {:12.3}, StdDeviation   = {:12.3}]",
        h.mean() / 1e3,
        h.stdev() / 1e3
    );
    let _ = writeln!(
        o,
        "#[Max     = {:12.3}, Total count    = {:12}]",
        ms(h.max()),
        h.len()
    );
    // HDR's sub-bucket count: the power of two covering 2 × 10^digits.
    let sub_buckets = (2 * 10u64.pow(u32::from(h.sigfig()))).next_power_of_two();
    let _ = writeln!(
        o,
        "#[Buckets = {:12}, SubBuckets     = {:12}]",
        h.buckets(),
        sub_buckets
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Metrics;
    use crate::record::tests::sample;

    fn known() -> Metrics {
        let mut m = Metrics::new();
        for seq in 0..100u64 {
            let mut r = sample(seq);
            r.intended_ns = seq * 10_000_000;
            r.sent_ns = Some(r.intended_ns);
            r.latency_ns = (seq + 1) * 1_000_000; // 1..=100 ms
            r.error = None;
            r.status = Some(if seq < 98 { 200 } else { 502 });
            m.add(&r);
        }
        m
    }

    #[test]
    fn text_report_shows_the_figures() {
        let t = text(&known().summary());
        assert!(
            t.contains("Requests       [total, sent, successes]            100, 100, 98"),
            "{t}"
        );
        assert!(
            t.contains("Success        [ratio]                             98.00%"),
            "{t}"
        );
        assert!(t.contains("200:98  502:2"), "{t}");
        // p50 of 1..=100 ms is 50 ms.
        assert!(
            t.contains("Latency ms     [min, mean, 50, 90, 95, 99, max, n] 1.000, 50.5"),
            "{t}"
        );
        assert!(
            t.contains("Rate           [requested, achieved] req/s         100.00, 100.00"),
            "{t}"
        );
    }

    #[test]
    fn json_report_has_the_documented_shape() {
        let v: serde_json::Value = serde_json::from_str(&json(&known().summary())).unwrap();
        assert_eq!(v["requests"], 100);
        assert_eq!(v["successes"], 98);
        assert_eq!(v["success_ratio"], 0.98);
        assert_eq!(v["status_codes"]["502"], 2);
        // HDR reports the top of the 0.1%-wide bucket holding 99 ms.
        let p99 = v["latency_ms"]["p99"].as_f64().unwrap();
        assert!((99.0..99.1).contains(&p99), "{p99}");
        assert_eq!(v["rate"]["requested"], 100.0);
        for key in [
            "not_sent_on_time",
            "duration_s",
            "wait_s",
            "throughput",
            "service_ms",
            "lateness_ms",
            "phases_ms",
            "errors",
        ] {
            assert!(v.get(key).is_some(), "missing {key}");
        }
        assert!(v["phases_ms"]["quic_handshake"]["mean"].is_number());
    }

    #[test]
    fn hdr_output_is_monotonic_and_complete() {
        let m = known();
        let out = hdr(m.latency_histogram());
        let rows: Vec<(f64, f64, u64)> = out
            .lines()
            .skip(2)
            .take_while(|l| !l.starts_with('#'))
            .map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (
                    f[0].parse().unwrap(),
                    f[1].parse().unwrap(),
                    f[2].parse().unwrap(),
                )
            })
            .collect();
        assert!(rows.len() > 10);
        assert!(rows
            .windows(2)
            .all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
        let last = rows.last().unwrap();
        assert_eq!((last.1, last.2), (1.0, 100));
        assert!((last.0 - 100.0).abs() < 0.1);
        assert!(out.contains("#[Max     ="));
    }
}
