//! DualPI2, the coupled dual-queue AQM for L4S (RFC 9332), as Linux's `sch_dualpi2` runs it
//! (Linux 6.17+, `net/sched/sch_dualpi2.c`), with Linux's defaults.
//!
//! - **Classification:** ECT(1) and CE packets go to the L queue (Linux's `ecn_mask` of
//!   ECT(1)), everything else to the classic (C) queue.
//! - **PI2 core:** every `tupdate` (16 ms, first one `tupdate` after creation) the base
//!   probability `p'` moves by `alpha·(qdelay − target) + beta·(qdelay − qdelay_old)` with
//!   alpha 41/256 ≈ 0.16 /s, beta 819/256 ≈ 3.2 /s and target 15 ms, where `qdelay` is the
//!   larger of the two queues' head-of-line sojourn times (Linux; RFC 9332 uses the classic
//!   queue's), clamped to [0, 1].
//! - **Coupling:** classic packets are dropped (Not-ECT) or marked (ECT(0)) with `p_C = p'²`
//!   (two independent draws, both below `p'`); L packets are marked with `p_CL = k·p'` (k = 2).
//!   When `k·p'` exceeds 1 (overload) L packets are treated like classic ones: dropped with
//!   `p'²` (`drop_overload`, the default), else marked.
//! - **Step AQM on L:** an L packet whose sojourn exceeds `step_threshold` (1 ms) is marked,
//!   so `p_L = max(p_CL, step)` (RFC 9332 §2.4).
//! - No mark or drop while the whole qdisc holds less than two MTUs (after the dequeue).
//! - Decisions are taken at **dequeue** (Linux's default `drop_early` off); a dropped packet is
//!   followed by another dequeue at the same instant.
//! - **Scheduler:** Linux's WRR "C protection": a credit starting at `mtu·(wc − wl)` (weights
//!   wc = 10 %, wl = 90 %) chooses L while ≤ 0 or the C queue is empty; sending from L while C
//!   waits adds `wc·len`, sending from C while L waits subtracts `wl·len`; it resets when both
//!   queues are empty. The C queue thus gets at least about 10 % of the bytes under load.
//! - Limit 10000 packets and memory `limit · 2 · mtu` over both queues; beyond: queue-full
//!   drop.
//!
//! # Differences from Linux
//!
//! - Probabilities are `f64` in [0, 1] (Linux: `u32` scaled by 2³² − 1) and a draw "below p" is
//!   `U < p` for a uniform `U` in [0, 1).
//! - No GSO splitting (packets arrive one at a time here), no tc filters or `skb->priority`
//!   classification, the ECN mask is fixed to ECT(1); memory counts IP bytes; MTU 1500.

use std::collections::VecDeque;
use std::time::Duration;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::{count_aqm_drop, count_tail_drop, mark_ce, next_tick, Ecn, Packet};
use crate::link::{EnqueueResult, LinkStats};

/// DualPI2's parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DualPi2Config {
    /// Hard limit in packets over both queues (Linux default 10000).
    pub limit_packets: u64,
    /// PI2 target queue delay (Linux default 15 ms).
    pub target: Duration,
    /// Probability update period (Linux default 16 ms).
    pub tupdate: Duration,
    /// Integral gain in 1/s (Linux default 41/256 = 0.16015625).
    pub alpha: f64,
    /// Proportional gain in 1/s (Linux default 819/256 = 3.19921875).
    pub beta: f64,
    /// L queue step threshold on the sojourn time (Linux default 1 ms).
    pub step_threshold: Duration,
    /// Apply the step only when at least this many packets were in the L queue on arrival
    /// (Linux default 0: always).
    pub min_qlen_step: u64,
    /// Coupling factor k between the queues (Linux default 2).
    pub coupling_factor: u8,
    /// On overload (k·p' > 1) drop L packets with p'² (true, Linux default) or only mark them.
    pub drop_overload: bool,
    /// Decide at enqueue instead of dequeue (Linux default false).
    pub drop_early: bool,
    /// Weight of the classic queue in the WRR scheduler, percent (Linux default 10).
    pub c_protection_percent: u8,
    /// The MTU for the two-MTU rule, the memory limit and the scheduler credit (1500).
    pub mtu: u32,
}

impl Default for DualPi2Config {
    fn default() -> Self {
        DualPi2Config {
            limit_packets: 10_000,
            target: Duration::from_millis(15),
            tupdate: Duration::from_millis(16),
            alpha: 41.0 / 256.0,
            beta: 819.0 / 256.0,
            step_threshold: Duration::from_millis(1),
            min_qlen_step: 0,
            coupling_factor: 2,
            drop_overload: true,
            drop_early: false,
            c_protection_percent: 10,
            mtu: 1500,
        }
    }
}

/// A packet's place: the L queue (with whether the step applies) or the classic queue.
#[derive(Debug)]
struct Entry<T> {
    p: Packet<T>,
    apply_step: bool,
}

/// The DualPI2 discipline.
#[derive(Debug)]
pub(crate) struct DualPi2<T> {
    params: DualPi2Config,
    l_queue: VecDeque<Entry<T>>,
    c_queue: VecDeque<Entry<T>>,
    backlog: u64,
    memory: u64,
    memory_limit: u64,
    /// The base probability p'.
    pub(crate) prob: f64,
    pub(crate) last_qdelay: Duration,
    credit: i64,
    credit_init: i64,
    next_update: Option<Duration>,
    rng: ChaCha8Rng,
}

impl<T> DualPi2<T> {
    pub(crate) fn new(params: DualPi2Config, rng: ChaCha8Rng) -> Self {
        let wc = i64::from(params.c_protection_percent.min(100));
        let credit_init = i64::from(params.mtu) * (wc - (100 - wc));
        DualPi2 {
            memory_limit: params.limit_packets * 2 * u64::from(params.mtu),
            next_update: Some(params.tupdate),
            l_queue: VecDeque::new(),
            c_queue: VecDeque::new(),
            backlog: 0,
            memory: 0,
            prob: 0.0,
            last_qdelay: Duration::ZERO,
            credit: credit_init,
            credit_init,
            params,
            rng,
        }
    }

    fn qlen(&self) -> u64 {
        (self.l_queue.len() + self.c_queue.len()) as u64
    }

    fn roll(&mut self, p: f64) -> bool {
        self.rng.random::<f64>() < p
    }

    /// `must_drop`: the PI2 decision for a packet (marking it if it survives as ECN-capable).
    fn must_drop(&mut self, p: &mut Packet<T>, in_l: bool, stats: &mut LinkStats) -> bool {
        if self.backlog < 2 * u64::from(self.params.mtu) {
            return false;
        }
        let prob = self.prob;
        let l_prob = prob * f64::from(self.params.coupling_factor);
        let overload = l_prob > 1.0;
        if !in_l {
            // p_C = p'²: two draws; overload drops even ECN-capable packets.
            if self.roll(prob) && self.roll(prob) {
                if overload || p.meta.ecn == Ecn::NotEct {
                    return true;
                }
                mark_ce(p, stats);
            }
            return false;
        }
        if overload {
            if self.params.drop_overload && self.roll(prob) && self.roll(prob) {
                return true;
            }
            mark_ce(p, stats);
            return false;
        }
        if self.roll(l_prob) {
            if p.meta.ecn == Ecn::NotEct {
                return true;
            }
            mark_ce(p, stats);
        }
        false
    }

    pub(crate) fn enqueue(
        &mut self,
        now: Duration,
        mut p: Packet<T>,
        stats: &mut LinkStats,
    ) -> EnqueueResult {
        if self.qlen() >= self.params.limit_packets || self.memory + p.len() > self.memory_limit {
            count_tail_drop(p.len(), stats);
            return EnqueueResult::DroppedQueueFull;
        }
        let in_l = matches!(p.meta.ecn, Ecn::Ect1 | Ecn::Ce);
        if self.params.drop_early && self.must_drop(&mut p, in_l, stats) {
            count_aqm_drop(&p, stats);
            return EnqueueResult::DroppedAqm;
        }
        p.enqueued = now;
        self.memory += p.len();
        self.backlog += p.len();
        if in_l {
            let apply_step = self.l_queue.len() as u64 >= self.params.min_qlen_step;
            self.l_queue.push_back(Entry { p, apply_step });
        } else {
            self.c_queue.push_back(Entry {
                p,
                apply_step: false,
            });
        }
        EnqueueResult::Accepted
    }

    /// `dequeue_packet`: the WRR choice; returns the entry, whether it is from L, and the
    /// credit change to apply if it is sent.
    fn pick(&mut self) -> Option<(Entry<T>, bool, i64)> {
        let (c_len, l_len) = (self.c_queue.len(), self.l_queue.len());
        let wc = i64::from(self.params.c_protection_percent.min(100));
        let (e, in_l, change) = if l_len > 0 && (c_len == 0 || self.credit <= 0) {
            let e = self.l_queue.pop_front()?;
            let change = if c_len > 0 { wc } else { 0 };
            (e, true, change)
        } else if c_len > 0 {
            let e = self.c_queue.pop_front()?;
            let change = if l_len > 0 { -(100 - wc) } else { 0 };
            (e, false, change)
        } else {
            self.credit = self.credit_init;
            return None;
        };
        self.backlog -= e.p.len();
        self.memory -= e.p.len();
        let len = e.p.len() as i64;
        Some((e, in_l, change * len))
    }

    pub(crate) fn dequeue(&mut self, now: Duration, stats: &mut LinkStats) -> Option<Packet<T>> {
        loop {
            let (mut e, in_l, change) = self.pick()?;
            if !self.params.drop_early && self.must_drop(&mut e.p, in_l, stats) {
                count_aqm_drop(&e.p, stats);
                continue;
            }
            if in_l && e.apply_step && now.saturating_sub(e.p.enqueued) > self.params.step_threshold
            {
                if e.p.meta.ecn == Ecn::NotEct {
                    count_aqm_drop(&e.p, stats);
                    continue;
                }
                mark_ce(&mut e.p, stats);
            }
            self.credit += change;
            return Some(e.p);
        }
    }

    pub(crate) fn len(&self) -> (u64, u64) {
        (self.qlen(), self.backlog)
    }

    pub(crate) fn next_timer(&self) -> Option<Duration> {
        self.next_update
    }

    /// `calculate_probability` at `at`; idle at p' = 0 the no-op updates up to `horizon` are
    /// skipped.
    pub(crate) fn on_timer(&mut self, at: Duration, horizon: Duration) {
        let head = |q: &VecDeque<Entry<T>>| {
            q.front()
                .map_or(Duration::ZERO, |e| at.saturating_sub(e.p.enqueued))
        };
        let qdelay = head(&self.l_queue).max(head(&self.c_queue));
        let s = |d: Duration| d.as_secs_f64();
        let delta = self.params.alpha * (s(qdelay) - s(self.params.target))
            + self.params.beta * (s(qdelay) - s(self.last_qdelay));
        self.last_qdelay = qdelay;
        self.prob = (self.prob + delta).clamp(0.0, 1.0);
        if !self.params.drop_overload {
            self.prob = self
                .prob
                .min(1.0 / f64::from(self.params.coupling_factor.max(1)));
        }
        let idle = self.qlen() == 0 && self.prob == 0.0 && self.last_qdelay.is_zero();
        let horizon = if idle { horizon } else { at };
        self.next_update = next_tick(at, self.params.tupdate, horizon);
    }
}

#[cfg(test)]
mod tests;
