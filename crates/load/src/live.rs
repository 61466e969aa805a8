//! Counters of a running attack, shared with a progress display.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use crate::metrics::{Metrics, Summary};

/// Live state of one attack: what the scheduler did and what has completed.
#[derive(Debug)]
pub struct LiveStats {
    started: Instant,
    scheduled: AtomicU64,
    inflight: AtomicU64,
    metrics: Mutex<Metrics>,
}

impl Default for LiveStats {
    fn default() -> Self {
        Self::new()
    }
}

impl LiveStats {
    /// Fresh counters, with the clock starting now.
    pub fn new() -> Self {
        Self {
            started: Instant::now(),
            scheduled: AtomicU64::new(0),
            inflight: AtomicU64::new(0),
            metrics: Mutex::new(Metrics::new()),
        }
    }

    pub(crate) fn scheduled_one(&self) {
        self.scheduled.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn started_one(&self) {
        self.inflight.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn finished_one(&self) {
        self.inflight.fetch_sub(1, Ordering::Relaxed);
    }

    /// Runs `f` on the metrics of completed requests.
    pub fn with_metrics<T>(&self, f: impl FnOnce(&mut Metrics) -> T) -> T {
        // A panic elsewhere cannot leave Metrics half-updated in a harmful way: keep going.
        let mut guard = self.metrics.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut guard)
    }

    /// Summary of the requests completed so far.
    pub fn summary(&self) -> Summary {
        self.with_metrics(|m| m.summary())
    }

    /// One progress line: elapsed, scheduled, achieved rate, in flight, success, p50/p99.
    pub fn line(&self) -> String {
        let elapsed = self.started.elapsed().as_secs_f64();
        let scheduled = self.scheduled.load(Ordering::Relaxed);
        let inflight = self.inflight.load(Ordering::Relaxed);
        let s = self.summary();
        format!(
            "{elapsed:6.1}s  sent {scheduled:>8}  rate {:8.1}/s  in-flight {inflight:>5}  ok {:6.2}%  p50 {:8.2} ms  p99 {:8.2} ms  late+skipped {}",
            s.rate.achieved,
            s.success_ratio * 100.0,
            s.latency_ms.p50,
            s.latency_ms.p99,
            s.not_sent_on_time.total,
        )
    }
}
