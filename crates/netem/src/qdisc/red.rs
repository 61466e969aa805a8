//! RED, Random Early Detection (Floyd & Jacobson 1993; RFC 2309), with adaptive RED (Floyd,
//! Gummadi & Shenker 2001), as Linux's `sch_red` runs it (`net/sched/sch_red.c`,
//! `include/net/red.h`).
//!
//! - **Average queue** in bytes, updated at every arrival from the bytes queued:
//!   `avg ← avg + W·(backlog − avg)`, `W = 2^−wlog`. After an idle period (the queue found empty
//!   at a dequeue), the first arrival instead decays it as if `m = idle / (avpkt·8 / bandwidth)`
//!   packets had arrived to an empty queue: `avg ← avg·(1 − W)^m`.
//! - **Decision**: below `min` nothing; at or above `max` every packet is dropped ("hard
//!   mark"); in between the probability `p_b = max_p·(avg − min)/(max − min)` is spread with
//!   Linux's count method: a uniform `R` is drawn when the region is entered and after every
//!   mark, and the packet is marked once `count·p_b ≥ R`, so the gaps between marks are
//!   uniform on `1..1/p_b` (the mean marking rate is `2·p_b/(1 + p_b)`, as in the paper).
//! - **ECN**: with `ecn`, an early mark CE-marks an ECN-capable packet (drops a Not-ECT one);
//!   a hard mark CE-marks too unless `harddrop`.
//! - **Gentle** (ns-2's `gentle_`, an extension Linux does not have; off by default): between
//!   `max` and `2·max` the probability rises linearly from `max_p` to 1 instead of jumping.
//! - **Adaptive** (`adaptive`): every 500 ms (the first at 500 ms), `max_p += min(0.01,
//!   max_p/4)` if `avg` is above `min + 0.6·(max − min)` and `max_p ≤ 0.5`, `max_p ·= 0.9` if
//!   below `min + 0.4·(max − min)` and `max_p ≥ 0.01` (Linux's integer fifths of the range).
//! - **Limit** in bytes (Linux's child `bfifo`): an arrival that would exceed it is a
//!   queue-full drop, after the RED decision (which may already have dropped it).
//!
//! # Differences from Linux
//!
//! - Linux keeps `avg` in fixed point and approximates the idle decay with a table that `tc`
//!   fills (`Stab`, a power-of-two shift per idle time, i.e. `2^−x` where the formula has
//!   `e^−x`); here the paper's formula is computed exactly. `tc`'s parameters (`burst`,
//!   `avpkt`, `bandwidth`, `probability`) map onto these through [`wlog_for_burst`].
//! - A packet that RED CE-marks but the byte limit then drops is counted as a queue-full drop
//!   only, not also as a mark (Linux's counters count both).
//! - Idle starts when a dequeue finds the queue empty, i.e. when the serializer finishes the
//!   last packet (Linux: when the last packet is handed to the driver).

use std::collections::VecDeque;
use std::time::Duration;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::{count_aqm_drop, count_tail_drop, mark_ce, next_tick, NominalRate, Packet};
use crate::link::{EnqueueResult, LinkStats};

/// RED's parameters (no Linux defaults exist; these are `tc-red(8)`'s example:
/// `limit 400000 min 30000 max 90000 avpkt 1000 burst 55 probability 0.02`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RedConfig {
    /// Hard limit on queued IP bytes.
    pub limit_bytes: u64,
    /// Average queue (bytes) where early marking starts.
    pub min_bytes: u64,
    /// Average queue (bytes) from which every packet is dropped (or marked).
    pub max_bytes: u64,
    /// Marking probability at `max_bytes` (the starting value if `adaptive`).
    pub max_p: f64,
    /// EWMA weight `W = 2^−wlog` (from `tc`'s `burst`: see [`wlog_for_burst`]).
    pub wlog: u8,
    /// Typical packet size in bytes, for the idle-time decay.
    pub avpkt: u32,
    /// Rate in bit/s for the idle-time decay; `None` = the link's rate (its highest step).
    pub bandwidth: Option<u64>,
    /// CE-mark ECN-capable packets instead of dropping them.
    pub ecn: bool,
    /// With `ecn`, still drop (not mark) above `max_bytes`.
    pub harddrop: bool,
    /// Adapt `max_p` every 500 ms (adaptive RED).
    pub adaptive: bool,
    /// Gentle RED between `max_bytes` and twice it (not in Linux).
    pub gentle: bool,
}

impl Default for RedConfig {
    fn default() -> Self {
        RedConfig {
            limit_bytes: 400_000,
            min_bytes: 30_000,
            max_bytes: 90_000,
            max_p: 0.02,
            wlog: 5, // wlog_for_burst(30_000, 55, 1000)
            avpkt: 1000,
            bandwidth: None,
            ecn: false,
            harddrop: false,
            adaptive: false,
            gentle: false,
        }
    }
}

/// `tc`'s choice of `wlog` for a burst of `burst` packets of `avpkt` bytes with threshold
/// `min_bytes` (`tc_red_eval_ewma`): the largest `W = 2^−wlog` with
/// `burst + 1 − min/avpkt ≤ (1 − (1 − W)^burst) / W`; `None` if the burst is smaller than
/// `min/avpkt` or no `wlog` below 32 fits.
pub fn wlog_for_burst(min_bytes: u64, burst: u32, avpkt: u32) -> Option<u8> {
    let a = f64::from(burst) + 1.0 - min_bytes as f64 / f64::from(avpkt.max(1));
    if a < 1.0 {
        return None; // tc: "burst is too small"
    }
    let mut w: f64 = 0.5;
    for wlog in 1..32u8 {
        if a <= (1.0 - (1.0 - w).powi(burst as i32)) / w {
            return Some(wlog);
        }
        w /= 2.0;
    }
    None
}

/// The adaptation period (Linux: `HZ / 2`), also the first adaptation's time.
pub const ADAPT_PERIOD: Duration = Duration::from_millis(500);

/// What `red_action` decided for an arrival.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    Pass,
    Early,
    Hard,
}

/// The RED discipline.
#[derive(Debug)]
pub(crate) struct Red<T> {
    params: RedConfig,
    queue: VecDeque<Packet<T>>,
    backlog: u64,
    /// Average queue in bytes.
    pub(crate) qavg: f64,
    /// Packets since the last mark in the early region; −1 outside it.
    pub(crate) qcount: i64,
    /// The uniform draw the count is compared with.
    pub(crate) q_r: f64,
    /// Start of the current idle period.
    idle_since: Option<Duration>,
    /// `max_p` now (adaptive RED changes it).
    pub(crate) max_p: f64,
    /// Transmission time of an `avpkt` packet, seconds (0 on an unlimited link).
    xmit_time: f64,
    next_adapt: Option<Duration>,
    rng: ChaCha8Rng,
}

impl<T> Red<T> {
    pub(crate) fn new(params: RedConfig, rate: NominalRate, rng: ChaCha8Rng) -> Self {
        let bw = params.bandwidth.or(rate).unwrap_or(0);
        let xmit_time = if bw == 0 {
            0.0
        } else {
            f64::from(params.avpkt) * 8.0 / bw as f64
        };
        Red {
            max_p: params.max_p,
            next_adapt: params.adaptive.then_some(ADAPT_PERIOD),
            params,
            queue: VecDeque::new(),
            backlog: 0,
            qavg: 0.0,
            qcount: -1,
            q_r: 0.0,
            // Linux starts idle when the qdisc is created empty.
            idle_since: Some(Duration::ZERO),
            xmit_time,
            rng,
        }
    }

    fn w(&self) -> f64 {
        (-f64::from(self.params.wlog)).exp2()
    }

    /// The average after idling from `since` to `now`.
    fn idle_qavg(&self, since: Duration, now: Duration) -> f64 {
        if self.xmit_time == 0.0 {
            return 0.0;
        }
        let m = now.saturating_sub(since).as_secs_f64() / self.xmit_time;
        self.qavg * (1.0 - self.w()).powf(m)
    }

    /// `p_b` for an average in the early (or gentle) region.
    fn p_b(&self, qavg: f64) -> f64 {
        let (min, max) = (self.params.min_bytes as f64, self.params.max_bytes as f64);
        if qavg < max {
            self.max_p * (qavg - min) / (max - min).max(1.0)
        } else {
            self.max_p + (1.0 - self.max_p) * (qavg - max) / max.max(1.0)
        }
    }

    /// `red_action` on the current average.
    pub(crate) fn action(&mut self) -> Action {
        let (min, max) = (self.params.min_bytes as f64, self.params.max_bytes as f64);
        let early_end = if self.params.gentle { 2.0 * max } else { max };
        if self.qavg < min {
            self.qcount = -1;
            return Action::Pass;
        }
        if self.qavg >= early_end {
            self.qcount = -1;
            return Action::Hard;
        }
        self.qcount += 1;
        if self.qcount == 0 {
            self.q_r = self.rng.random::<f64>();
        } else if self.p_b(self.qavg) * self.qcount as f64 >= self.q_r {
            self.qcount = 0;
            self.q_r = self.rng.random::<f64>();
            return Action::Early;
        }
        Action::Pass
    }

    pub(crate) fn enqueue(
        &mut self,
        now: Duration,
        mut p: Packet<T>,
        stats: &mut LinkStats,
    ) -> EnqueueResult {
        self.qavg = match self.idle_since.take() {
            Some(since) => self.idle_qavg(since, now),
            None => self.qavg + (self.backlog as f64 - self.qavg) * self.w(),
        };
        let can_mark = self.params.ecn && p.meta.ecn.can_mark();
        let mark = match self.action() {
            Action::Pass => false,
            Action::Early if can_mark => true,
            Action::Hard if can_mark && !self.params.harddrop => true,
            Action::Early | Action::Hard => {
                count_aqm_drop(&p, stats);
                return EnqueueResult::DroppedAqm;
            }
        };
        if self.backlog + p.len() > self.params.limit_bytes {
            count_tail_drop(p.len(), stats);
            return EnqueueResult::DroppedQueueFull;
        }
        if mark {
            mark_ce(&mut p, stats);
        }
        p.enqueued = now;
        self.backlog += p.len();
        self.queue.push_back(p);
        EnqueueResult::Accepted
    }

    pub(crate) fn dequeue(&mut self, now: Duration, _stats: &mut LinkStats) -> Option<Packet<T>> {
        match self.queue.pop_front() {
            Some(p) => {
                self.backlog -= p.len();
                Some(p)
            }
            None => {
                self.idle_since.get_or_insert(now);
                None
            }
        }
    }

    pub(crate) fn len(&self) -> (u64, u64) {
        (self.queue.len() as u64, self.backlog)
    }

    pub(crate) fn next_timer(&self) -> Option<Duration> {
        self.next_adapt
    }

    /// Adaptive RED's step at `at`; while idle with nothing left to adapt, the ticks up to
    /// `horizon` are skipped (the average only decays while idle).
    pub(crate) fn on_timer(&mut self, at: Duration, horizon: Duration) {
        let qavg = match self.idle_since {
            Some(since) => self.idle_qavg(since, at),
            None => self.qavg,
        }
        .floor();
        let (min, max) = (self.params.min_bytes, self.params.max_bytes);
        let fifth = max.saturating_sub(min).max(1) / 5;
        let (target_min, target_max) = ((min + 2 * fifth) as f64, (min + 3 * fifth) as f64);
        if qavg > target_max && self.max_p <= 0.5 {
            self.max_p += (self.max_p / 4.0).min(0.01);
        } else if qavg < target_min && self.max_p >= 0.01 {
            self.max_p *= 0.9;
        }
        let quiet = self.idle_since.is_some() && self.max_p < 0.01 && qavg <= target_max;
        let horizon = if quiet { horizon } else { at };
        self.next_adapt = next_tick(at, ADAPT_PERIOD, horizon);
    }
}

#[cfg(test)]
mod tests;
