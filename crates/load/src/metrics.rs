//! Streaming aggregation of results records into HDR histograms and counters.
//!
//! Memory is constant in the number of requests: every distribution is an HDR histogram
//! (3 significant digits, microsecond units) and error messages are grouped with a cap.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::record::ResultRecord;

/// Distinct error messages kept; further ones are counted under [`OTHER_ERRORS`].
const MAX_ERROR_GROUPS: usize = 64;
/// The group that collects error messages beyond [`MAX_ERROR_GROUPS`].
pub const OTHER_ERRORS: &str = "(other errors)";

/// Accumulates records; turn it into a [`Summary`] at any time.
#[derive(Debug, Clone)]
pub struct Metrics {
    requests: u64,
    sent: u64,
    successes: u64,
    skipped: u64,
    late: u64,
    first_intended: u64,
    last_intended: u64,
    first_sent: u64,
    last_sent: u64,
    last_done: u64,
    bytes_in: u64,
    bytes_out: u64,
    latency: Histogram<u64>,
    service: Histogram<u64>,
    lateness: Histogram<u64>,
    connect: Histogram<u64>,
    tls: Histogram<u64>,
    quic_handshake: Histogram<u64>,
    ttfb: Histogram<u64>,
    /// Latency sum (µs) and count per whole second of the intended send time: the batches of
    /// the mean's batch-means interval. One entry per second the attack schedules (a day-long
    /// attack holds 86,400, about 3 MB).
    latency_batches: BTreeMap<u64, (u64, u64)>,
    status: BTreeMap<u16, u64>,
    errors: BTreeMap<String, u64>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

fn histogram() -> Histogram<u64> {
    // 1 µs to 1 h at 3 significant digits (0.1% relative precision, ~180 kB); longer values are
    // clamped to 1 h, far beyond any request timeout.
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("constant, valid histogram bounds")
}

fn micros(ns: u64) -> u64 {
    ns / 1_000
}

impl Metrics {
    /// An empty accumulator.
    pub fn new() -> Self {
        Self {
            requests: 0,
            sent: 0,
            successes: 0,
            skipped: 0,
            late: 0,
            first_intended: u64::MAX,
            last_intended: 0,
            first_sent: u64::MAX,
            last_sent: 0,
            last_done: 0,
            bytes_in: 0,
            bytes_out: 0,
            latency: histogram(),
            service: histogram(),
            lateness: histogram(),
            connect: histogram(),
            tls: histogram(),
            quic_handshake: histogram(),
            ttfb: histogram(),
            latency_batches: BTreeMap::new(),
            status: BTreeMap::new(),
            errors: BTreeMap::new(),
        }
    }

    /// Adds one record (in any order).
    pub fn add(&mut self, r: &ResultRecord) {
        self.requests += 1;
        self.first_intended = self.first_intended.min(r.intended_ns);
        self.last_intended = self.last_intended.max(r.intended_ns);
        if let Some(error) = &r.error {
            let key = if self.errors.len() < MAX_ERROR_GROUPS || self.errors.contains_key(error) {
                error.clone()
            } else {
                OTHER_ERRORS.to_string()
            };
            *self.errors.entry(key).or_insert(0) += 1;
        }
        let Some(sent) = r.sent_ns else {
            self.skipped += 1;
            return;
        };
        self.sent += 1;
        self.late += u64::from(r.late);
        self.first_sent = self.first_sent.min(sent);
        self.last_sent = self.last_sent.max(sent);
        self.last_done = self
            .last_done
            .max(r.intended_ns.saturating_add(r.latency_ns));
        self.bytes_in += r.bytes_in;
        self.bytes_out += r.bytes_out;
        self.successes += u64::from(r.is_success());
        if let Some(code) = r.status {
            *self.status.entry(code).or_insert(0) += 1;
        }
        self.latency.saturating_record(micros(r.latency_ns));
        let batch = self
            .latency_batches
            .entry(r.intended_ns / 1_000_000_000)
            .or_insert((0, 0));
        batch.0 = batch.0.saturating_add(micros(r.latency_ns));
        batch.1 += 1;
        self.lateness
            .saturating_record(micros(sent.saturating_sub(r.intended_ns)));
        let phases = [
            (&mut self.service, r.service_ns),
            (&mut self.connect, r.connect_ns),
            (&mut self.tls, r.tls_ns),
            (&mut self.quic_handshake, r.quic_handshake_ns),
            (&mut self.ttfb, r.ttfb_ns),
        ];
        for (hist, value) in phases {
            if let Some(ns) = value {
                hist.saturating_record(micros(ns));
            }
        }
    }

    /// Adds everything `other` accumulated, as if its records had been added here: each attack
    /// thread keeps its own accumulator (no lock or shared cache line per request) and the
    /// summary merges them.
    pub fn merge(&mut self, other: &Metrics) {
        self.requests += other.requests;
        self.sent += other.sent;
        self.successes += other.successes;
        self.skipped += other.skipped;
        self.late += other.late;
        self.first_intended = self.first_intended.min(other.first_intended);
        self.last_intended = self.last_intended.max(other.last_intended);
        self.first_sent = self.first_sent.min(other.first_sent);
        self.last_sent = self.last_sent.max(other.last_sent);
        self.last_done = self.last_done.max(other.last_done);
        self.bytes_in += other.bytes_in;
        self.bytes_out += other.bytes_out;
        let pairs = [
            (&mut self.latency, &other.latency),
            (&mut self.service, &other.service),
            (&mut self.lateness, &other.lateness),
            (&mut self.connect, &other.connect),
            (&mut self.tls, &other.tls),
            (&mut self.quic_handshake, &other.quic_handshake),
            (&mut self.ttfb, &other.ttfb),
        ];
        for (mine, theirs) in pairs {
            // Same bounds on both sides (one constructor), so adding cannot fail.
            let _ = mine.add(theirs);
        }
        for (second, (sum, n)) in &other.latency_batches {
            let batch = self.latency_batches.entry(*second).or_insert((0, 0));
            batch.0 = batch.0.saturating_add(*sum);
            batch.1 += n;
        }
        for (code, n) in &other.status {
            *self.status.entry(*code).or_insert(0) += n;
        }
        for (error, n) in &other.errors {
            let key = if self.errors.len() < MAX_ERROR_GROUPS || self.errors.contains_key(error) {
                error.clone()
            } else {
                OTHER_ERRORS.to_string()
            };
            *self.errors.entry(key).or_insert(0) += n;
        }
    }

    /// Requests seen so far.
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// The latency histogram (microseconds, from the intended send time).
    pub fn latency_histogram(&self) -> &Histogram<u64> {
        &self.latency
    }

    /// Half-width of the 95% interval of the mean latency, by batch means: the mean of each
    /// second's requests is one observation, and Student's t runs over those. Requests under load
    /// queue behind one another, so their latencies are correlated and an interval that treated
    /// them as independent would be too narrow; one-second batches of hundreds of requests are
    /// close to independent. None with fewer than two batches.
    fn latency_mean_ci95_ms(&self) -> Option<f64> {
        let means: Vec<f64> = self
            .latency_batches
            .values()
            .filter(|(_, n)| *n > 0)
            .map(|(sum, n)| *sum as f64 / *n as f64 / 1e3)
            .collect();
        if means.len() < 2 {
            return None;
        }
        let s = analysis::stats::summarize(&means).ok()?;
        Some((s.ci95_high - s.ci95_low) / 2.0)
    }

    /// The report of everything added so far.
    pub fn summary(&self) -> Summary {
        let secs = |ns: u64| ns as f64 / 1e9;
        let span = |first: u64, last: u64| {
            if last > first && first != u64::MAX {
                secs(last - first)
            } else {
                0.0
            }
        };
        let per_second = |count: u64, seconds: f64| {
            if count > 1 && seconds > 0.0 {
                (count - 1) as f64 / seconds
            } else {
                0.0
            }
        };
        let duration_s = span(self.first_intended, self.last_intended);
        let sent_span = span(self.first_sent, self.last_sent);
        let busy_s = span(self.first_intended, self.last_done);
        let ratio = |n: u64, d: u64| if d > 0 { n as f64 / d as f64 } else { 0.0 };
        let over_busy = |x: f64| if busy_s > 0.0 { x / busy_s } else { 0.0 };
        Summary {
            requests: self.requests,
            sent: self.sent,
            successes: self.successes,
            success_ratio: ratio(self.successes, self.requests),
            not_sent_on_time: NotSentOnTime {
                skipped: self.skipped,
                late: self.late,
                total: self.skipped + self.late,
            },
            duration_s,
            wait_s: if self.last_done > self.last_sent && self.sent > 0 {
                secs(self.last_done - self.last_sent)
            } else {
                0.0
            },
            rate: Rates {
                requested: per_second(self.requests, duration_s),
                achieved: per_second(self.sent, sent_span),
            },
            throughput: Throughput {
                successes_per_s: over_busy(self.successes as f64),
                bytes_in_per_s: over_busy(self.bytes_in as f64),
                mbit_in_per_s: over_busy(self.bytes_in as f64 * 8.0 / 1e6),
                bytes_in: self.bytes_in,
                bytes_out: self.bytes_out,
            },
            latency_ms: Distribution::of(&self.latency),
            latency_mean_ci95_ms: self.latency_mean_ci95_ms(),
            service_ms: Distribution::of(&self.service),
            lateness_ms: Distribution::of(&self.lateness),
            phases_ms: Phases {
                connect: Distribution::of(&self.connect),
                tls: Distribution::of(&self.tls),
                quic_handshake: Distribution::of(&self.quic_handshake),
                ttfb: Distribution::of(&self.ttfb),
            },
            status_codes: self
                .status
                .iter()
                .map(|(code, n)| (code.to_string(), *n))
                .collect(),
            errors: self
                .errors
                .iter()
                .map(|(error, count)| ErrorCount {
                    error: error.clone(),
                    count: *count,
                })
                .collect(),
        }
    }
}

/// The report of a results stream (the stable `report --type json` shape).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Scheduled requests (records).
    pub requests: u64,
    /// Requests actually sent.
    pub sent: u64,
    /// Sent requests answered 2xx/3xx without error.
    pub successes: u64,
    /// successes / requests (not-sent requests count as failures).
    pub success_ratio: f64,
    /// Requests the generator could not send on schedule.
    pub not_sent_on_time: NotSentOnTime,
    /// From the first to the last intended send time.
    pub duration_s: f64,
    /// From the last actual send to the last completion.
    pub wait_s: f64,
    /// Requested and achieved send rates.
    pub rate: Rates,
    /// Completed work per second, from the first intended send to the last completion.
    pub throughput: Throughput,
    /// Latency from the intended send time to completion.
    pub latency_ms: Distribution,
    /// Half-width of the 95% interval of `latency_ms.mean` by batch means over one-second
    /// batches of the schedule (absent for an attack shorter than two seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_mean_ci95_ms: Option<f64>,
    /// Latency from the actual send to completion.
    pub service_ms: Distribution,
    /// Actual minus intended send time.
    pub lateness_ms: Distribution,
    /// Connection-setup phases and time to first byte.
    pub phases_ms: Phases,
    /// Count per HTTP status code.
    pub status_codes: BTreeMap<String, u64>,
    /// Count per error message.
    pub errors: Vec<ErrorCount>,
}

/// Requests that missed their schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotSentOnTime {
    /// Never sent (the in-flight cap was reached or the attack was stopped).
    pub skipped: u64,
    /// Sent later than the late threshold.
    pub late: u64,
    /// skipped + late.
    pub total: u64,
}

/// Send rates in requests per second: (n − 1) / (last − first send time).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rates {
    /// From the intended send times.
    pub requested: f64,
    /// From the actual send times.
    pub achieved: f64,
}

/// Work done per second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    /// Successful requests per second.
    pub successes_per_s: f64,
    /// Response bytes per second.
    pub bytes_in_per_s: f64,
    /// Response megabits per second.
    pub mbit_in_per_s: f64,
    /// Total response bytes.
    pub bytes_in: u64,
    /// Total request bytes.
    pub bytes_out: u64,
}

/// Connection phases and time to first byte.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Phases {
    /// TCP connect.
    pub connect: Distribution,
    /// TLS handshake over TCP.
    pub tls: Distribution,
    /// QUIC handshake.
    pub quic_handshake: Distribution,
    /// Time to first response byte.
    pub ttfb: Distribution,
}

/// A distribution in milliseconds (all zero when `n` is 0).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Distribution {
    /// Number of values.
    pub n: u64,
    /// Smallest value.
    pub min: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Standard deviation (population), for the mean's confidence interval.
    #[serde(default)]
    pub sd: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest value.
    pub max: f64,
}

impl Distribution {
    /// Summarises a microsecond histogram in milliseconds.
    pub fn of(h: &Histogram<u64>) -> Self {
        let ms = |us: u64| us as f64 / 1e3;
        if h.is_empty() {
            return Self {
                n: 0,
                min: 0.0,
                mean: 0.0,
                sd: 0.0,
                p50: 0.0,
                p90: 0.0,
                p95: 0.0,
                p99: 0.0,
                max: 0.0,
            };
        }
        Self {
            n: h.len(),
            min: ms(h.min()),
            mean: h.mean() / 1e3,
            sd: h.stdev() / 1e3,
            p50: ms(h.value_at_quantile(0.50)),
            p90: ms(h.value_at_quantile(0.90)),
            p95: ms(h.value_at_quantile(0.95)),
            p99: ms(h.value_at_quantile(0.99)),
            max: ms(h.max()),
        }
    }
}

/// One error message and how often it occurred.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorCount {
    /// The message.
    pub error: String,
    /// Occurrences.
    pub count: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::tests::sample;

    /// Exact percentile by the nearest-rank definition (`quantile`), the one HDR histograms use.
    fn exact(sorted: &[u64], q: f64) -> u64 {
        sorted[quantile::nearest_rank(sorted.len() as u64, q) as usize - 1]
    }

    #[test]
    fn hdr_percentiles_match_exact_ones_within_precision() {
        // A skewed, known data set: 1..=10_000 µs squared-ish spread plus outliers.
        let mut values: Vec<u64> = (1..=10_000u64).map(|i| 100 + i * i / 50).collect();
        values.extend([5_000_000, 9_000_000]);
        let mut m = Metrics::new();
        for (seq, v) in values.iter().enumerate() {
            let mut r = sample(seq as u64);
            r.latency_ns = v * 1_000;
            m.add(&r);
        }
        values.sort_unstable();
        let h = m.latency_histogram();
        for q in [0.5, 0.9, 0.95, 0.99, 0.999] {
            let want = exact(&values, q) as f64;
            let got = h.value_at_quantile(q) as f64;
            assert!(
                (got - want).abs() <= want * 0.001 + 1.0,
                "q{q}: hdr {got} exact {want}"
            );
        }
        let d = m.summary().latency_ms;
        assert_eq!(d.n, values.len() as u64);
        let mean = values.iter().sum::<u64>() as f64 / values.len() as f64 / 1e3;
        assert!((d.mean - mean).abs() < mean * 0.001, "{} vs {mean}", d.mean);
        assert!((d.max - 9_000.0).abs() < 9.0);
        assert!((d.min - 0.100).abs() < 0.001);
    }

    #[test]
    fn counts_rates_and_groups() {
        let mut m = Metrics::new();
        for seq in 0..101 {
            let mut r = sample(seq);
            r.intended_ns = seq * 10_000_000; // 100/s over 1 s
            r.sent_ns = Some(r.intended_ns + 1_000);
            r.latency_ns = 2_000_000;
            r.error = None;
            if seq % 10 == 0 {
                r.status = Some(500);
            }
            if seq == 5 {
                r.sent_ns = None;
                r.status = None;
                r.error = Some("not sent: max in-flight (1) reached".into());
            }
            if seq == 6 {
                r.late = true;
            }
            m.add(&r);
        }
        let s = m.summary();
        assert_eq!((s.requests, s.sent), (101, 100));
        assert_eq!(s.successes, 100 - 11);
        assert_eq!(
            (s.not_sent_on_time.skipped, s.not_sent_on_time.late),
            (1, 1)
        );
        assert!((s.rate.requested - 100.0).abs() < 1e-9);
        assert!((s.rate.achieved - 99.0 / 1.0).abs() < 1e-9);
        assert_eq!(s.status_codes.get("500"), Some(&11));
        assert_eq!(s.errors.len(), 1);
        assert!((s.duration_s - 1.0).abs() < 1e-12);
        assert!((s.wait_s - 0.001999).abs() < 1e-9);
    }

    #[test]
    fn the_mean_latency_interval_comes_from_one_second_batches() {
        // Ten seconds at 100/s; every request of second k waits k + 1 ms, as when a queue builds
        // up and drains slowly: latencies within a second are identical, not independent.
        let mut m = Metrics::new();
        for seq in 0..1000u64 {
            let mut r = sample(seq);
            r.latency_ns = (seq / 100 + 1) * 1_000_000;
            m.add(&r);
        }
        let s = m.summary();
        // Batch means 1..10 ms: sd 3.028, t(0.975, 9) = 2.262, half-width 2.166 ms.
        let half = s.latency_mean_ci95_ms.expect("ten batches");
        assert!((half - 2.166).abs() < 0.002, "{half}");
        // Requests taken as independent would claim an interval ten times narrower.
        let naive = 1.96 * s.latency_ms.sd / (s.latency_ms.n as f64).sqrt();
        assert!(half > 10.0 * naive, "{half} vs {naive}");
        // Under two seconds there is nothing to estimate the spread from.
        let mut short = Metrics::new();
        for seq in 0..50 {
            short.add(&sample(seq));
        }
        assert_eq!(short.summary().latency_mean_ci95_ms, None);
    }

    #[test]
    fn error_groups_are_capped() {
        let mut m = Metrics::new();
        for seq in 0..200 {
            let mut r = sample(seq);
            r.error = Some(format!("error number {seq}"));
            m.add(&r);
        }
        let s = m.summary();
        assert_eq!(s.errors.len(), MAX_ERROR_GROUPS + 1);
        let other = s.errors.iter().find(|e| e.error == OTHER_ERRORS).unwrap();
        assert_eq!(other.count, 200 - MAX_ERROR_GROUPS as u64);
    }

    #[test]
    fn per_thread_accumulators_merge_into_the_single_one() {
        let records: Vec<ResultRecord> = (0..3000u64)
            .map(|seq| {
                let mut r = sample(seq);
                r.intended_ns = seq * 100_000;
                r.sent_ns = (seq % 97 != 0).then_some(r.intended_ns + seq % 13 * 1_000);
                r.latency_ns = 50_000 + seq * seq % 7_919 * 1_000;
                r.service_ns = r.sent_ns.map(|_| 40_000 + seq % 101 * 1_000);
                r.connect_ns = (seq % 50 == 0).then_some(seq * 10);
                r.tls_ns = (seq % 50 == 0).then_some(seq * 20);
                r.ttfb_ns = Some(30_000 + seq % 11 * 1_000);
                r.late = seq % 31 == 0;
                r.status = r.sent_ns.map(|_| if seq % 17 == 0 { 503 } else { 200 });
                r.error = (seq % 23 == 0).then(|| format!("error {}", seq % 5));
                r.bytes_in = 11_000;
                r.bytes_out = seq % 3;
                r
            })
            .collect();
        let mut single = Metrics::new();
        let mut shards = [Metrics::new(), Metrics::new(), Metrics::new()];
        for r in &records {
            single.add(r);
            shards[(r.seq * 7 % 3) as usize].add(r);
        }
        let mut merged = Metrics::new();
        for shard in &shards {
            merged.merge(shard);
        }
        assert_eq!(merged.summary(), single.summary());
        assert_eq!(merged.latency_histogram(), single.latency_histogram());
        // Merging nothing changes nothing.
        merged.merge(&Metrics::new());
        assert_eq!(merged.summary(), single.summary());
    }
}
