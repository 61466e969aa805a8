//! Counters of a running attack, shared with a progress display.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use crate::metrics::{Metrics, Summary};

/// Live state of one attack: what the scheduler did and what has completed.
///
/// Each attack thread accumulates its completed requests in its own [`Metrics`] (registered
/// with [`LiveStats::shard`]), locked once per batch by that thread alone, so finishing a request
/// touches no lock or cache line another thread uses; [`LiveStats::summary`] merges them.
#[derive(Debug)]
pub struct LiveStats {
    started: Instant,
    scheduled: AtomicU64,
    inflight: AtomicU64,
    shards: Mutex<Vec<Arc<Mutex<Metrics>>>>,
}

impl Default for LiveStats {
    fn default() -> Self {
        Self::new()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic elsewhere cannot leave Metrics half-updated in a harmful way: keep going.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl LiveStats {
    /// Fresh counters, with the clock starting now.
    pub fn new() -> Self {
        Self {
            started: Instant::now(),
            scheduled: AtomicU64::new(0),
            inflight: AtomicU64::new(0),
            shards: Mutex::new(Vec::new()),
        }
    }

    /// A new accumulator for one attack thread, included in every later summary.
    pub fn shard(&self) -> Arc<Mutex<Metrics>> {
        let m = Arc::new(Mutex::new(Metrics::new()));
        lock(&self.shards).push(m.clone());
        m
    }

    pub(crate) fn scheduled(&self, n: u64) {
        self.scheduled.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn started(&self, n: u64) {
        self.inflight.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn finished(&self, n: u64) {
        self.inflight.fetch_sub(n, Ordering::Relaxed);
    }

    /// The merged metrics of every request completed so far.
    pub fn metrics(&self) -> Metrics {
        let shards = lock(&self.shards).clone();
        let mut all = Metrics::new();
        for shard in &shards {
            all.merge(&lock(shard));
        }
        all
    }

    /// Summary of the requests completed so far.
    pub fn summary(&self) -> Summary {
        self.metrics().summary()
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
