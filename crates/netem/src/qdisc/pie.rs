//! PIE, Proportional Integral controller Enhanced (RFC 8033), as Linux's `sch_pie` runs it
//! (`net/sched/sch_pie.c`, `include/net/pie.h`) with its default of timestamps for the queue
//! delay (`dq_rate_estimator` off).
//!
//! - **Queue delay** is the sojourn of the last dequeued packet (zero if it left the queue
//!   empty).
//! - **Every `tupdate`** (15 ms) the drop probability moves by
//!   `alpha·(qdelay − target) + beta·(qdelay − qdelay_old)` (alpha 0.125/s, beta 1.25/s,
//!   delays in seconds), with Linux's scaling of both gains by the size of `p`: halved below
//!   10 %, then divided by 4 more for each further decade below 1 %, 0.1 %, … down to 10⁻⁶.
//!   A rise is capped at 2 % once `p` ≥ 10 %; 2 % is added when the delay exceeds 250 ms;
//!   two consecutive zero delays decay `p` by 1/64; low delay twice with `p` = 0 re-arms the
//!   burst allowance.
//! - **On arrival** (`pie_drop_early`): no early drop while burst allowance remains (150 ms,
//!   consumed by the time between dequeues), while `qdelay < target/2` and `p < 20 %`, or
//!   with less than two MTUs queued. Otherwise the de-randomised drop of RFC 8033 §5.1: the
//!   accumulated probability must reach 0.85 before a random drop can happen and forces one at
//!   8.5. With `ecn`, an ECN-capable packet picked while `p ≤ 10 %` is CE-marked and queued.
//! - Limit 1000 packets (tail drop beyond, counted as queue-full drops).
//!
//! # Differences from Linux
//!
//! - Linux arms the update timer half a second after the qdisc is created (`HZ/2`) and then
//!   every `tupdate` jiffies (15 ms is 4 jiffies, i.e. 16 ms, at `HZ=250`). Here the first
//!   update is at 500 ms of link time and then exactly every `tupdate`.
//! - `p` is an `f64` (Linux: a u64 scaled by 2⁵⁶, which may exceed 1 before saturating at
//!   2⁶⁴; that headroom — up to 256 — is kept, and draws treat anything ≥ 1 as certain).
//! - The departure-rate estimator (`dq_rate_estimator`) is not implemented.

use std::collections::VecDeque;
use std::time::Duration;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::{count_aqm_drop, count_tail_drop, mark_ce, next_tick, Packet};
use crate::link::{EnqueueResult, LinkStats};

/// PIE's parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PieConfig {
    /// Target queue delay (Linux default 15 ms).
    pub target: Duration,
    /// Probability update period (Linux default 15 ms).
    pub tupdate: Duration,
    /// Hard limit in packets (Linux default 1000).
    pub limit_packets: u64,
    /// Integral gain in 1/s (Linux default 2/16 = 0.125).
    pub alpha: f64,
    /// Proportional gain in 1/s (Linux default 20/16 = 1.25).
    pub beta: f64,
    /// CE-mark ECN-capable packets instead of dropping while `p` ≤ 10 % (Linux default off).
    pub ecn: bool,
    /// Scale the probability by packet size / MTU (Linux default off).
    pub bytemode: bool,
    /// The MTU for the two-MTU rule and byte mode (1500 IP bytes).
    pub mtu: u32,
}

impl Default for PieConfig {
    fn default() -> Self {
        PieConfig {
            target: Duration::from_millis(15),
            tupdate: Duration::from_millis(15),
            limit_packets: 1000,
            alpha: 0.125,
            beta: 1.25,
            ecn: false,
            bytemode: false,
            mtu: 1500,
        }
    }
}

/// When Linux first runs the update timer after creating the qdisc (`HZ / 2`).
pub const FIRST_UPDATE: Duration = Duration::from_millis(500);
const BURST_ALLOWANCE: Duration = Duration::from_millis(150);
/// Linux's `u64` probability saturates at 2⁶⁴ = 256 · `MAX_PROB`.
const PROB_CEILING: f64 = 256.0;

/// PIE's variables (`struct pie_vars`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PieVars {
    pub(crate) qdelay: Duration,
    pub(crate) qdelay_old: Duration,
    pub(crate) burst_time: Duration,
    pub(crate) dq_tstamp: Option<Duration>,
    pub(crate) prob: f64,
    pub(crate) accu_prob: f64,
}

impl PieVars {
    fn new() -> Self {
        PieVars {
            qdelay: Duration::ZERO,
            qdelay_old: Duration::ZERO,
            burst_time: BURST_ALLOWANCE,
            dq_tstamp: None,
            prob: 0.0,
            accu_prob: 0.0,
        }
    }

    /// `pie_vars_init`: re-arms the burst allowance (keeps `p` and the delays).
    fn reset(&mut self) {
        self.burst_time = BURST_ALLOWANCE;
        self.dq_tstamp = None;
        self.accu_prob = 0.0;
    }
}

/// The PIE discipline.
#[derive(Debug)]
pub(crate) struct Pie<T> {
    params: PieConfig,
    pub(crate) vars: PieVars,
    queue: VecDeque<Packet<T>>,
    backlog: u64,
    next_update: Option<Duration>,
    rng: ChaCha8Rng,
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

impl<T> Pie<T> {
    pub(crate) fn new(params: PieConfig, rng: ChaCha8Rng) -> Self {
        Pie {
            params,
            vars: PieVars::new(),
            queue: VecDeque::new(),
            backlog: 0,
            next_update: Some(FIRST_UPDATE),
            rng,
        }
    }

    /// `pie_drop_early`: whether the arriving packet of `size` bytes is picked for drop (or
    /// mark), with `backlog` bytes queued before it.
    pub(crate) fn drop_early(&mut self, backlog: u64, size: u32) -> bool {
        let v = &mut self.vars;
        let mtu = self.params.mtu;
        if !v.burst_time.is_zero() {
            return false;
        }
        if v.qdelay < self.params.target / 2 && v.prob < 0.2 {
            return false;
        }
        if backlog < 2 * u64::from(mtu) {
            return false;
        }
        let local = if self.params.bytemode && size <= mtu {
            f64::from(size) * (v.prob / f64::from(mtu))
        } else {
            v.prob
        };
        if local == 0.0 {
            v.accu_prob = 0.0;
        } else {
            v.accu_prob += local;
        }
        if v.accu_prob < 0.85 {
            return false;
        }
        if v.accu_prob >= 8.5 {
            return true;
        }
        if self.rng.random::<f64>() < local {
            v.accu_prob = 0.0;
            return true;
        }
        false
    }

    pub(crate) fn enqueue(
        &mut self,
        now: Duration,
        mut p: Packet<T>,
        stats: &mut LinkStats,
    ) -> EnqueueResult {
        if self.queue.len() as u64 >= self.params.limit_packets {
            count_tail_drop(p.len(), stats);
            self.vars.accu_prob = 0.0;
            return EnqueueResult::DroppedQueueFull;
        }
        let accept = !self.drop_early(self.backlog, p.meta.ip_bytes)
            || (self.params.ecn && self.vars.prob <= 0.1 && mark_ce(&mut p, stats));
        if !accept {
            count_aqm_drop(&p, stats);
            self.vars.accu_prob = 0.0;
            return EnqueueResult::DroppedAqm;
        }
        p.enqueued = now;
        self.backlog += p.len();
        self.queue.push_back(p);
        EnqueueResult::Accepted
    }

    pub(crate) fn dequeue(&mut self, now: Duration, _stats: &mut LinkStats) -> Option<Packet<T>> {
        let p = self.queue.pop_front()?;
        self.backlog -= p.len();
        // `pie_process_dequeue` with timestamps.
        let v = &mut self.vars;
        v.qdelay = now.saturating_sub(p.enqueued);
        let dtime = v
            .dq_tstamp
            .map_or(Duration::ZERO, |t| now.saturating_sub(t));
        v.dq_tstamp = Some(now);
        if self.backlog == 0 {
            v.qdelay = Duration::ZERO;
        }
        if !dtime.is_zero() {
            v.burst_time = v.burst_time.saturating_sub(dtime);
        }
        Some(p)
    }

    pub(crate) fn len(&self) -> (u64, u64) {
        (self.queue.len() as u64, self.backlog)
    }

    pub(crate) fn next_timer(&self) -> Option<Duration> {
        self.next_update
    }

    /// The update due at `at`; at a fixed point (empty, `p` = 0, both delays zero) the no-op
    /// updates up to `horizon` are skipped.
    pub(crate) fn on_timer(&mut self, at: Duration, horizon: Duration) {
        self.calculate_probability();
        let v = &self.vars;
        let fixed = self.backlog == 0
            && v.prob == 0.0
            && v.qdelay.is_zero()
            && v.qdelay_old.is_zero()
            && v.burst_time == BURST_ALLOWANCE
            && v.dq_tstamp.is_none();
        let horizon = if fixed { horizon } else { at };
        self.next_update = next_tick(at, self.params.tupdate, horizon);
    }

    /// `pie_calculate_probability` with timestamps.
    pub(crate) fn calculate_probability(&mut self) {
        let params = &self.params;
        let v = &mut self.vars;
        let qdelay = v.qdelay;
        let qdelay_old = v.qdelay_old;
        let mut update_prob = !(qdelay.is_zero() && self.backlog != 0);
        let (mut alpha, mut beta) = (params.alpha, params.beta);
        if v.prob < 0.1 {
            alpha /= 2.0;
            beta /= 2.0;
            let mut power = 100.0;
            while v.prob < 1.0 / power && power <= 1e6 {
                alpha /= 4.0;
                beta /= 4.0;
                power *= 10.0;
            }
        }
        let mut delta =
            alpha * (secs(qdelay) - secs(params.target)) + beta * (secs(qdelay) - secs(qdelay_old));
        if delta > 0.02 && v.prob >= 0.1 {
            delta = 0.02;
        }
        if qdelay > Duration::from_millis(250) {
            delta += 0.02;
        }
        v.prob += delta;
        if delta > 0.0 {
            if v.prob > PROB_CEILING {
                v.prob = PROB_CEILING;
                update_prob = false;
            }
        } else if v.prob < 0.0 {
            v.prob = 0.0;
        }
        if qdelay.is_zero() && qdelay_old.is_zero() && update_prob {
            v.prob -= v.prob / 64.0;
        }
        v.qdelay = qdelay;
        if qdelay < params.target / 2 && v.qdelay_old < params.target / 2 && v.prob == 0.0 {
            v.reset();
        }
        v.qdelay_old = qdelay;
    }
}

#[cfg(test)]
mod tests;
