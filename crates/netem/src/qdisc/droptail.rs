//! Drop-tail: a FIFO that drops an arrival when accepting it would exceed the link's
//! [`QueueLimit`] in packets or IP bytes (the packet in service does not count).
//!
//! This is the link's behaviour from before queue disciplines existed, operation for operation:
//! no random draws, no state beyond the FIFO, so runs with the default discipline are
//! byte-identical to earlier versions.

use std::collections::VecDeque;
use std::time::Duration;

use super::{count_tail_drop, Packet};
use crate::config::QueueLimit;
use crate::link::{EnqueueResult, LinkStats};

/// The drop-tail FIFO.
#[derive(Debug)]
pub(crate) struct DropTail<T> {
    limit: QueueLimit,
    queue: VecDeque<Packet<T>>,
    bytes: u64,
}

impl<T> DropTail<T> {
    pub(crate) fn new(limit: QueueLimit) -> Self {
        DropTail {
            limit,
            queue: VecDeque::new(),
            bytes: 0,
        }
    }

    pub(crate) fn enqueue(
        &mut self,
        _now: Duration,
        p: Packet<T>,
        stats: &mut LinkStats,
    ) -> EnqueueResult {
        let packets = self.queue.len() as u64 + 1;
        let bytes = self.bytes + p.len();
        let over_packets = self.limit.packets.is_some_and(|max| packets > max);
        let over_bytes = self.limit.bytes.is_some_and(|max| bytes > max);
        if over_packets || over_bytes {
            count_tail_drop(p.len(), stats);
            return EnqueueResult::DroppedQueueFull;
        }
        self.queue.push_back(p);
        self.bytes = bytes;
        EnqueueResult::Accepted
    }

    pub(crate) fn dequeue(&mut self, _now: Duration, _stats: &mut LinkStats) -> Option<Packet<T>> {
        let p = self.queue.pop_front()?;
        self.bytes -= p.len();
        Some(p)
    }

    pub(crate) fn len(&self) -> (u64, u64) {
        (self.queue.len() as u64, self.bytes)
    }
}
