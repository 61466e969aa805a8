//! CoDel, Controlled Delay (RFC 8289), as Linux's `sch_codel` runs it (`include/net/codel.h`,
//! `codel_impl.h`).
//!
//! Every packet is timestamped on arrival; decisions are taken at dequeue from its sojourn time:
//!
//! - The sojourn is "above target" when it is at least `target` **and** more than one MTU of
//!   bytes is still queued behind the packet (Linux's `backlog <= mtu` rule: one packet cannot
//!   be a standing queue).
//! - Once above target continuously for `interval` (the first dequeue strictly after
//!   `first_above_time = t_first + interval`), CoDel enters the dropping state and drops (or, with
//!   `ecn`, CE-marks an ECN-capable packet) the packet at the head.
//! - In the dropping state the next drop is due at `drop_next`, advanced by the control law
//!   `interval / sqrt(count)` from the *previous due time*; several drops may happen in one
//!   dequeue if the next packet is also overdue. Leaving: the first packet below target.
//! - Re-entry: if the state is re-entered less than `16 · interval` after the last `drop_next`
//!   and more than one drop happened in the last cycle, `count` resumes at `count − lastcount`
//!   instead of 1 (RFC 8289 §5.5 uses the same rule).
//! - `ce_threshold`: independently of the above, a returned ECN-capable packet whose sojourn is
//!   above it is CE-marked (Linux's DCTCP-style shallow marking; off by default).
//!
//! Defaults are Linux's: target 5 ms, interval 100 ms, limit 1000 packets (tail drop beyond,
//! counted as queue-full drops), `ecn` off, `ce_threshold` off, MTU 1500 IP bytes.
//!
//! # Differences from Linux
//!
//! - `1/sqrt(count)` is Linux's: a 16-bit fixed-point reciprocal square root refined by one
//!   Newton step per increment of `count` (`codel_Newton_step`), and the control law scales the
//!   interval by it (`reciprocal_scale`). So the second drop follows the first by
//!   `interval · 65535/65536`, the third by about `interval / 2` (not `/√2`), and the spacing
//!   converges to `interval/√count` within 1 % from the fifth drop on. RFC 8289's pseudocode
//!   computes the square root exactly; Linux (and ns-3) do not, and we follow Linux.
//! - Times are nanoseconds instead of Linux's 1024 ns units; the MTU is 1500 IP bytes (Linux's
//!   1514 includes the Ethernet header, which its lengths count and ours do not).
//! - Recent kernels define a cap of 256 drops per dequeue (`CODEL_MAX_DROPS_PER_DEQUEUE`);
//!   it is not modelled (the loop ends anyway: the queue is finite).

use std::collections::VecDeque;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{count_aqm_drop, count_tail_drop, mark_ce, Packet};
use crate::link::{EnqueueResult, LinkStats};

/// CoDel's parameters (shared with FQ-CoDel).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CodelConfig {
    /// Acceptable standing sojourn time (Linux default 5 ms).
    pub target: Duration,
    /// Window over which the sojourn must stay above target before dropping, and the control
    /// law's base spacing (Linux default 100 ms).
    pub interval: Duration,
    /// Hard limit in packets; arrivals beyond it are tail-dropped (Linux default 1000).
    pub limit_packets: u64,
    /// CE-mark ECN-capable packets instead of dropping them (Linux default off for `codel`).
    pub ecn: bool,
    /// Mark ECN-capable packets whose sojourn exceeds this, independently of the control law
    /// (Linux's `ce_threshold`; default off).
    pub ce_threshold: Option<Duration>,
    /// A backlog of at most this many IP bytes behind the packet never counts as a standing
    /// queue (Linux's `mtu`: the device MTU, 1500 IP bytes here).
    pub mtu: u32,
}

impl Default for CodelConfig {
    fn default() -> Self {
        CodelConfig {
            target: Duration::from_millis(5),
            interval: Duration::from_millis(100),
            limit_packets: 1000,
            ecn: false,
            ce_threshold: None,
            mtu: 1500,
        }
    }
}

/// `rec_inv_sqrt` is stored in 16 bits; shifted left by this it is a Q0.32 fraction.
const REC_INV_SQRT_SHIFT: u32 = 16;

/// CoDel's per-queue state (`struct codel_vars`).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct CodelVars {
    /// Drops (and marks) since entering the dropping state, as adjusted by re-entry.
    pub(crate) count: u32,
    /// `count` when the dropping state was last entered.
    pub(crate) lastcount: u32,
    pub(crate) dropping: bool,
    /// `1/sqrt(count)` in Q0.16.
    pub(crate) rec_inv_sqrt: u16,
    /// When the sojourn will have been above target for a whole interval; `None` = below.
    pub(crate) first_above_time: Option<Duration>,
    /// When the next drop is due (or the last one was).
    pub(crate) drop_next: Duration,
    /// Sojourn of the last packet looked at.
    pub(crate) ldelay: Duration,
}

impl CodelVars {
    /// One Newton-Raphson step towards `1/sqrt(count)`: `y' = y/2 · (3 − count·y²)`, in the
    /// fixed point Linux uses (`codel_Newton_step`).
    pub(crate) fn newton_step(&mut self) {
        let invsqrt = u64::from(self.rec_inv_sqrt) << REC_INV_SQRT_SHIFT;
        let invsqrt2 = (invsqrt * invsqrt) >> 32;
        let mut val = (3u64 << 32).wrapping_sub(u64::from(self.count).wrapping_mul(invsqrt2));
        val >>= 2; // avoids overflow in the multiplication below
        val = val.wrapping_mul(invsqrt) >> (32 - 2 + 1);
        self.rec_inv_sqrt = (val >> REC_INV_SQRT_SHIFT) as u16;
    }
}

/// `t + interval · rec_inv_sqrt` (`codel_control_law` with `reciprocal_scale`).
pub(crate) fn control_law(t: Duration, interval: Duration, rec_inv_sqrt: u16) -> Duration {
    let scale = u128::from(rec_inv_sqrt) << REC_INV_SQRT_SHIFT;
    let ns = (interval.as_nanos() * scale) >> 32;
    t + Duration::from_nanos(ns as u64)
}

/// The queue CoDel pops from: a FIFO (CoDel) or one flow's queue (FQ-CoDel).
pub(crate) trait CodelQueue<T> {
    /// Removes the head packet, updating every byte and packet count.
    fn pop(&mut self) -> Option<Packet<T>>;
    /// IP bytes still queued in the whole discipline (after the pop).
    fn backlog(&self) -> u64;
}

/// `codel_should_drop`: is the packet's sojourn above target, and has it been for an interval?
fn should_drop<T>(
    p: Option<&Packet<T>>,
    backlog: u64,
    vars: &mut CodelVars,
    params: &CodelConfig,
    now: Duration,
) -> bool {
    let Some(p) = p else {
        vars.first_above_time = None;
        return false;
    };
    vars.ldelay = now.saturating_sub(p.enqueued);
    if vars.ldelay < params.target || backlog <= u64::from(params.mtu) {
        // Went below: stay below for at least an interval before dropping again.
        vars.first_above_time = None;
        return false;
    }
    match vars.first_above_time {
        None => {
            vars.first_above_time = Some(now + params.interval);
            false
        }
        Some(t) => now > t,
    }
}

/// `codel_dequeue`: the next packet to send from `q`, dropping (or marking) as CoDel decides.
pub(crate) fn codel_dequeue<T>(
    q: &mut impl CodelQueue<T>,
    vars: &mut CodelVars,
    params: &CodelConfig,
    now: Duration,
    stats: &mut LinkStats,
) -> Option<Packet<T>> {
    let mut cur = q.pop();
    if cur.is_none() {
        vars.dropping = false;
        return None;
    }
    let drop = should_drop(cur.as_ref(), q.backlog(), vars, params, now);
    if vars.dropping {
        if !drop {
            vars.dropping = false;
        } else if now >= vars.drop_next {
            // Possibly several drops in a row if the next packet is overdue too.
            while vars.dropping && now >= vars.drop_next {
                vars.count = vars.count.wrapping_add(1);
                vars.newton_step();
                let p = cur.as_mut()?;
                if params.ecn && mark_ce(p, stats) {
                    vars.drop_next =
                        control_law(vars.drop_next, params.interval, vars.rec_inv_sqrt);
                    break;
                }
                count_aqm_drop(p, stats);
                cur = q.pop();
                if should_drop(cur.as_ref(), q.backlog(), vars, params, now) {
                    vars.drop_next =
                        control_law(vars.drop_next, params.interval, vars.rec_inv_sqrt);
                } else {
                    vars.dropping = false;
                }
            }
        }
    } else if drop {
        let p = cur.as_mut()?;
        if !(params.ecn && mark_ce(p, stats)) {
            count_aqm_drop(p, stats);
            cur = q.pop();
            should_drop(cur.as_ref(), q.backlog(), vars, params, now);
        }
        vars.dropping = true;
        // Re-entering soon after the last cycle: resume near the drop rate that controlled it.
        let delta = vars.count.wrapping_sub(vars.lastcount);
        if delta > 1 && now < vars.drop_next + 16 * params.interval {
            vars.count = delta;
            vars.newton_step();
        } else {
            vars.count = 1;
            vars.rec_inv_sqrt = u16::MAX;
        }
        vars.lastcount = vars.count;
        vars.drop_next = control_law(now, params.interval, vars.rec_inv_sqrt);
    }
    if let Some(p) = cur.as_mut() {
        if params.ce_threshold.is_some_and(|th| vars.ldelay > th) {
            mark_ce(p, stats);
        }
    }
    cur
}

/// The CoDel discipline: one FIFO with one CoDel state.
#[derive(Debug)]
pub(crate) struct Codel<T> {
    params: CodelConfig,
    vars: CodelVars,
    fifo: Fifo<T>,
}

/// A FIFO with its byte count.
#[derive(Debug)]
struct Fifo<T> {
    queue: VecDeque<Packet<T>>,
    bytes: u64,
}

impl<T> CodelQueue<T> for Fifo<T> {
    fn pop(&mut self) -> Option<Packet<T>> {
        let p = self.queue.pop_front()?;
        self.bytes -= p.len();
        Some(p)
    }
    fn backlog(&self) -> u64 {
        self.bytes
    }
}

impl<T> Codel<T> {
    pub(crate) fn new(params: CodelConfig) -> Self {
        Codel {
            params,
            vars: CodelVars::default(),
            fifo: Fifo {
                queue: VecDeque::new(),
                bytes: 0,
            },
        }
    }

    pub(crate) fn enqueue(
        &mut self,
        now: Duration,
        mut p: Packet<T>,
        stats: &mut LinkStats,
    ) -> EnqueueResult {
        if self.fifo.queue.len() as u64 >= self.params.limit_packets {
            count_tail_drop(p.len(), stats);
            return EnqueueResult::DroppedQueueFull;
        }
        p.enqueued = now;
        self.fifo.bytes += p.len();
        self.fifo.queue.push_back(p);
        EnqueueResult::Accepted
    }

    pub(crate) fn dequeue(&mut self, now: Duration, stats: &mut LinkStats) -> Option<Packet<T>> {
        codel_dequeue(&mut self.fifo, &mut self.vars, &self.params, now, stats)
    }

    pub(crate) fn len(&self) -> (u64, u64) {
        (self.fifo.queue.len() as u64, self.fifo.bytes)
    }
}

#[cfg(test)]
mod tests;
