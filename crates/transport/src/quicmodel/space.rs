//! Packet-number spaces (RFC 9000 §12.3) and the sender's record of each packet it sent: when,
//! how large, whether it counts in flight, and the frames to repeat if it is lost.
//!
//! Records live in a deque indexed by packet number (every number is recorded, ACK-only
//! packets too), so finding the record of an acknowledged number is O(1). The frames of all
//! records share one second deque; both are trimmed from the front as soon as the oldest
//! packets are acknowledged or declared lost, so memory is bounded by what is in flight.

use std::collections::VecDeque;
use std::time::Duration;

use crate::rate::TxState;

/// The three packet-number spaces; 0-RTT and 1-RTT share `Data`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SpaceId {
    /// Initial packets.
    Initial = 0,
    /// Handshake packets.
    Handshake = 1,
    /// 0-RTT and 1-RTT packets.
    Data = 2,
}

impl SpaceId {
    /// Every space in sending order.
    pub(crate) const ALL: [SpaceId; 3] = [SpaceId::Initial, SpaceId::Handshake, SpaceId::Data];
}

/// A frame worth repeating when its packet is lost (RFC 9000 §13.3): the model retransmits
/// frames, never packets. ACK and PADDING are not recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SentFrame {
    /// Stream bytes (index into the endpoint's send streams).
    Stream {
        /// Send-stream index.
        stream: u32,
        /// Offset.
        offset: u64,
        /// Bytes.
        len: u16,
        /// FIN bit.
        fin: bool,
    },
    /// Crypto bytes of this space.
    Crypto {
        /// Offset.
        offset: u32,
        /// Bytes.
        len: u32,
    },
    /// MAX_DATA (resent with the current value).
    MaxData,
    /// MAX_STREAM_DATA of a receive-stream index (resent with the current value).
    MaxStreamData(u32),
    /// DATA_BLOCKED at a limit.
    DataBlocked(u64),
    /// STREAM_DATA_BLOCKED of a send-stream index at a limit.
    StreamDataBlocked(u32, u64),
    /// HANDSHAKE_DONE.
    HandshakeDone,
    /// ACK_FREQUENCY.
    AckFrequency,
    /// The NEW_CONNECTION_ID frames of the first 1-RTT packet.
    NewConnectionIds,
}

/// The record of one sent packet.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SentPacket {
    /// When it was sent.
    pub time: Duration,
    /// UDP payload bytes it accounts for in flight (its share of the datagram).
    pub size: u32,
    /// Contains a frame other than ACK, PADDING or CONNECTION_CLOSE.
    pub ack_eliciting: bool,
    /// Counts towards bytes in flight (ack-eliciting or padded).
    pub in_flight: bool,
    /// Still waiting for an acknowledgement or a loss declaration.
    pub outstanding: bool,
    /// Acknowledged (rather than declared lost) once settled.
    pub acked: bool,
    /// Sent ECT(0).
    pub ect: bool,
    /// The delivery-rate sampler's snapshot at sending (in-flight packets, and only while a
    /// controller uses rate samples).
    pub tx: TxState,
    /// Index of its first frame in the frame log.
    frame_start: u64,
    /// Frames it recorded.
    nframes: u16,
    /// Largest packet number its ACK frame acknowledged (u64::MAX: no ACK frame), so the
    /// receiver can forget ranges the peer has seen acknowledged.
    pub ack_largest: u64,
}

/// The sender's records of one space.
#[derive(Debug, Default)]
pub(crate) struct SentLog {
    /// Packet number of `packets[0]`.
    base: u64,
    packets: VecDeque<SentPacket>,
    /// Absolute index of `frames[0]`.
    frame_base: u64,
    frames: VecDeque<SentFrame>,
    /// Next packet number.
    pub next_pn: u64,
}

impl SentLog {
    /// Starts recording packet `next_pn`'s frames; returns its number.
    pub(crate) fn begin(&mut self) -> u64 {
        if self.packets.is_empty() {
            self.base = self.next_pn;
        }
        self.next_pn
    }

    /// Records a frame of the packet being built.
    pub(crate) fn push_frame(&mut self, f: SentFrame) {
        self.frames.push_back(f);
    }

    fn frame_start_of_next(&self) -> u64 {
        match self.packets.back() {
            Some(p) => p.frame_start + u64::from(p.nframes),
            None => self.frame_base,
        }
    }

    /// Commits the packet being built.
    pub(crate) fn commit(
        &mut self,
        time: Duration,
        size: u32,
        ack_eliciting: bool,
        in_flight: bool,
        ack_largest: u64,
    ) -> u64 {
        let frame_start = self.frame_start_of_next();
        let nframes = (self.frame_base + self.frames.len() as u64 - frame_start) as u16;
        let pn = self.next_pn;
        self.packets.push_back(SentPacket {
            time,
            size,
            ack_eliciting,
            in_flight,
            outstanding: true,
            acked: false,
            ect: false,
            tx: TxState::default(),
            frame_start,
            nframes,
            ack_largest,
        });
        self.next_pn += 1;
        pn
    }

    /// The record of `pn`, if still kept.
    pub(crate) fn get(&self, pn: u64) -> Option<&SentPacket> {
        let i = pn.checked_sub(self.base)?;
        self.packets.get(usize::try_from(i).ok()?)
    }

    /// Mutable record of `pn`.
    pub(crate) fn get_mut(&mut self, pn: u64) -> Option<&mut SentPacket> {
        let i = pn.checked_sub(self.base)?;
        self.packets.get_mut(usize::try_from(i).ok()?)
    }

    /// The frames of a record.
    pub(crate) fn frames_of(&self, p: &SentPacket) -> impl Iterator<Item = SentFrame> + '_ {
        let start = (p.frame_start - self.frame_base) as usize;
        self.frames
            .range(start..start + usize::from(p.nframes))
            .copied()
    }

    /// Lowest packet number kept.
    pub(crate) fn base(&self) -> u64 {
        self.base
    }

    /// Records kept (for iteration by number from `base`).
    pub(crate) fn len(&self) -> usize {
        self.packets.len()
    }

    /// Record at position `i` from the base.
    pub(crate) fn at(&self, i: usize) -> &SentPacket {
        &self.packets[i]
    }

    /// Drops settled records (acknowledged or lost) from the front.
    pub(crate) fn trim(&mut self) {
        while self.packets.front().is_some_and(|p| !p.outstanding) {
            self.packets.pop_front();
            self.base += 1;
        }
        let keep_from = self
            .packets
            .front()
            .map_or(self.frame_base + self.frames.len() as u64, |p| {
                p.frame_start
            });
        while self.frame_base < keep_from && !self.frames.is_empty() {
            self.frames.pop_front();
            self.frame_base += 1;
        }
        if self.packets.is_empty() {
            self.base = self.next_pn;
        }
    }

    /// Forgets every record (keys discarded); returns the in-flight bytes they held.
    pub(crate) fn discard(&mut self) -> u64 {
        let bytes = self
            .packets
            .iter()
            .filter(|p| p.outstanding && p.in_flight)
            .map(|p| u64::from(p.size))
            .sum();
        self.frame_base += self.frames.len() as u64;
        self.frames.clear();
        self.packets.clear();
        self.base = self.next_pn;
        bytes
    }

    /// Number of the oldest outstanding ack-eliciting packet.
    pub(crate) fn oldest_ack_eliciting(&self) -> Option<u64> {
        self.packets
            .iter()
            .position(|p| p.outstanding && p.ack_eliciting)
            .map(|i| self.base + i as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_found_by_number_and_trimmed() {
        let mut log = SentLog::default();
        for k in 0..5u64 {
            let pn = log.begin();
            assert_eq!(pn, k);
            log.push_frame(SentFrame::Stream {
                stream: 0,
                offset: k * 100,
                len: 100,
                fin: false,
            });
            log.commit(Duration::from_millis(k), 1200, true, true, u64::MAX);
        }
        let p = *log.get(3).unwrap();
        assert_eq!(
            log.frames_of(&p).collect::<Vec<_>>(),
            vec![SentFrame::Stream {
                stream: 0,
                offset: 300,
                len: 100,
                fin: false
            }]
        );
        log.get_mut(0).unwrap().outstanding = false;
        log.get_mut(1).unwrap().outstanding = false;
        log.get_mut(3).unwrap().outstanding = false;
        log.trim();
        assert_eq!(log.base(), 2);
        assert!(log.get(1).is_none());
        let p = *log.get(4).unwrap();
        assert_eq!(log.frames_of(&p).count(), 1);
        assert_eq!(log.discard(), 2400);
    }
}
