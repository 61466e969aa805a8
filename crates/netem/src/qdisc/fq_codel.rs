//! FQ-CoDel, flow-queue CoDel (RFC 8290), as Linux's `sch_fq_codel` runs it.
//!
//! - **Classification:** packets are hashed on [`crate::qdisc::PacketMeta::flow`] (the engine's
//!   5-tuple hash) into `flows` buckets (default 1024) with Linux's `reciprocal_scale`; each
//!   bucket is a FIFO with its own CoDel state ([`super::codel`]), sharing the parameters.
//! - **Scheduling:** deficit round robin with a `quantum` of bytes (default one MTU). A bucket
//!   that becomes active joins the *new* list with a full quantum; dequeue serves the new list
//!   before the old one; a bucket whose deficit is used up gets another quantum and moves to the
//!   tail of the old list; a new bucket found empty moves to the old list (if that is not empty)
//!   so a flow cannot stay "new" forever, an old one found empty leaves the lists. Sparse flows
//!   (one packet now and then) thus always go out before the backlogged ones.
//! - **CoDel per bucket**, at dequeue, with the *whole* qdisc's backlog for the MTU rule (as
//!   Linux passes `sch->qstats.backlog`). ECN is on by default: ECN-capable packets are marked
//!   instead of dropped. `ce_threshold` as in CoDel.
//! - **Overflow:** when an arrival takes the qdisc past `limit_packets` (default 10240) or
//!   `memory_limit` (default 32 MiB), Linux's `fq_codel_drop` finds the bucket with the largest
//!   byte backlog and drops from its head until half its backlog is gone or `drop_batch`
//!   (default 64) packets are; the bucket's CoDel `count` grows by the number dropped. These
//!   are queue-full drops ([`crate::link::LinkStats::dropped_queue_packets`]); the arrival itself
//!   is reported dropped only if its own bucket was emptied.
//!
//! # Differences from Linux
//!
//! - The hash is a fixed 64-bit mixer of `flow` keyed by a value drawn once from the link's
//!   qdisc stream, standing in for the kernel's per-boot random `jhash` key: which flows share
//!   a bucket depends on the run's seed, as it depends on the boot on Linux.
//! - Quantum and MTU are 1500 IP bytes (Linux: 1514 with the Ethernet header); memory is
//!   counted in IP bytes, not `truesize`. No external classifiers or `skb->priority` override.

use std::collections::VecDeque;
use std::time::Duration;

use rand::RngCore;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::codel::{codel_dequeue, CodelConfig, CodelQueue, CodelVars};
use super::{count_tail_drop, Packet};
use crate::link::{EnqueueResult, LinkStats};

/// FQ-CoDel's parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FqCodelConfig {
    /// Number of hash buckets (Linux default 1024).
    pub flows: u32,
    /// DRR quantum in IP bytes (Linux default: the MTU).
    pub quantum: u32,
    /// Hard limit in packets over all buckets (Linux default 10240).
    pub limit_packets: u64,
    /// Limit on queued IP bytes (Linux default 32 MiB, counted there in `truesize`).
    pub memory_limit: u64,
    /// Most packets one overflow drops from the fattest bucket (Linux default 64).
    pub drop_batch: u32,
    /// Per-bucket CoDel: target 5 ms, interval 100 ms, `ecn` **on**, `ce_threshold` off, MTU
    /// 1500 (its `limit_packets` is not used: `limit_packets` above is the limit).
    pub codel: CodelConfig,
}

impl Default for FqCodelConfig {
    fn default() -> Self {
        FqCodelConfig {
            flows: 1024,
            quantum: 1500,
            limit_packets: 10 * 1024,
            memory_limit: 32 << 20,
            drop_batch: 64,
            codel: CodelConfig {
                ecn: true,
                ..CodelConfig::default()
            },
        }
    }
}

/// Which list a bucket is linked on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum List {
    None,
    New,
    Old,
}

#[derive(Debug)]
struct Flow<T> {
    queue: VecDeque<Packet<T>>,
    backlog: u64,
    deficit: i64,
    list: List,
    cvars: CodelVars,
}

/// The counts shared by all buckets.
#[derive(Debug, Default)]
struct Totals {
    packets: u64,
    backlog: u64,
    memory: u64,
}

/// One bucket seen by CoDel: pops update the bucket's and the qdisc's counts.
struct BucketQueue<'a, T> {
    queue: &'a mut VecDeque<Packet<T>>,
    backlog: &'a mut u64,
    totals: &'a mut Totals,
}

impl<T> CodelQueue<T> for BucketQueue<'_, T> {
    fn pop(&mut self) -> Option<Packet<T>> {
        let p = self.queue.pop_front()?;
        *self.backlog -= p.len();
        self.totals.packets -= 1;
        self.totals.backlog -= p.len();
        self.totals.memory -= p.len();
        Some(p)
    }
    fn backlog(&self) -> u64 {
        self.totals.backlog
    }
}

/// The FQ-CoDel discipline.
#[derive(Debug)]
pub(crate) struct FqCodel<T> {
    params: FqCodelConfig,
    flows: Vec<Flow<T>>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    totals: Totals,
    hash_key: u64,
    /// Buckets that became active (Linux's `new_flow_count`).
    new_flow_count: u64,
}

/// SplitMix64's finalizer: a bijective mixer, so distinct flow hashes stay distinct.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl<T> FqCodel<T> {
    pub(crate) fn new(mut params: FqCodelConfig, mut rng: ChaCha8Rng) -> Self {
        params.flows = params.flows.max(1);
        let flows = (0..params.flows)
            .map(|_| Flow {
                queue: VecDeque::new(),
                backlog: 0,
                deficit: 0,
                list: List::None,
                cvars: CodelVars::default(),
            })
            .collect();
        FqCodel {
            params,
            flows,
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            totals: Totals::default(),
            hash_key: rng.next_u64(),
            new_flow_count: 0,
        }
    }

    /// The bucket of a flow hash: `reciprocal_scale` of a 32-bit hash, as Linux does.
    pub(crate) fn bucket(&self, flow: u64) -> u32 {
        let h32 = mix(flow ^ self.hash_key) >> 32;
        ((h32 * u64::from(self.params.flows)) >> 32) as u32
    }

    pub(crate) fn enqueue(
        &mut self,
        now: Duration,
        mut p: Packet<T>,
        stats: &mut LinkStats,
    ) -> EnqueueResult {
        let idx = self.bucket(p.meta.flow);
        p.enqueued = now;
        let len = p.len();
        let flow = &mut self.flows[idx as usize];
        flow.queue.push_back(p);
        flow.backlog += len;
        self.totals.backlog += len;
        if flow.list == List::None {
            flow.list = List::New;
            flow.deficit = i64::from(self.params.quantum);
            self.new_flows.push_back(idx);
            self.new_flow_count += 1;
        }
        self.totals.memory += len;
        self.totals.packets += 1;
        let memory_limited = self.totals.memory > self.params.memory_limit;
        if self.totals.packets <= self.params.limit_packets && !memory_limited {
            return EnqueueResult::Accepted;
        }
        let queued_before = self.flows[idx as usize].queue.len();
        let (fat, dropped) = self.drop_from_fattest(stats);
        if fat == idx && dropped == queued_before {
            EnqueueResult::DroppedQueueFull
        } else {
            EnqueueResult::Accepted
        }
    }

    /// `fq_codel_drop`: drops up to half the backlog (at most `drop_batch` packets, at least
    /// one) from the head of the bucket with the most bytes queued (the first such bucket on a
    /// tie); returns the bucket and how many packets went.
    fn drop_from_fattest(&mut self, stats: &mut LinkStats) -> (u32, usize) {
        let mut max_backlog = 0;
        let mut idx = 0;
        for (i, f) in self.flows.iter().enumerate() {
            if f.backlog > max_backlog {
                max_backlog = f.backlog;
                idx = i;
            }
        }
        let threshold = max_backlog / 2;
        let flow = &mut self.flows[idx];
        let mut len = 0;
        let mut dropped = 0;
        while let Some(p) = flow.queue.pop_front() {
            len += p.len();
            dropped += 1;
            count_tail_drop(p.len(), stats);
            if dropped >= self.params.drop_batch.max(1) as usize || len >= threshold {
                break;
            }
        }
        // Tell CoDel to signal harder on this flow too.
        flow.cvars.count = flow.cvars.count.wrapping_add(dropped as u32);
        flow.backlog -= len;
        self.totals.backlog -= len;
        self.totals.memory -= len;
        self.totals.packets -= dropped as u64;
        (idx as u32, dropped)
    }

    pub(crate) fn dequeue(&mut self, now: Duration, stats: &mut LinkStats) -> Option<Packet<T>> {
        loop {
            let (idx, from_new) = match self.new_flows.front() {
                Some(&i) => (i, true),
                None => (*self.old_flows.front()?, false),
            };
            let flow = &mut self.flows[idx as usize];
            if flow.deficit <= 0 {
                flow.deficit += i64::from(self.params.quantum);
                self.pop_list(from_new);
                self.flows[idx as usize].list = List::Old;
                self.old_flows.push_back(idx);
                continue;
            }
            let mut q = BucketQueue {
                queue: &mut flow.queue,
                backlog: &mut flow.backlog,
                totals: &mut self.totals,
            };
            let Some(p) = codel_dequeue(&mut q, &mut flow.cvars, &self.params.codel, now, stats)
            else {
                // Empty: a new bucket takes one pass through the old list (so it cannot stay
                // new forever), an old one leaves.
                self.pop_list(from_new);
                if from_new && !self.old_flows.is_empty() {
                    self.flows[idx as usize].list = List::Old;
                    self.old_flows.push_back(idx);
                } else {
                    self.flows[idx as usize].list = List::None;
                }
                continue;
            };
            flow.deficit -= p.len() as i64;
            return Some(p);
        }
    }

    fn pop_list(&mut self, from_new: bool) {
        if from_new {
            self.new_flows.pop_front();
        } else {
            self.old_flows.pop_front();
        }
    }

    pub(crate) fn len(&self) -> (u64, u64) {
        (self.totals.packets, self.totals.backlog)
    }
}

#[cfg(test)]
mod tests;
