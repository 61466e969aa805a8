//! A deterministic fluid ACK clock for tests: each round sends one window of full packets at
//! once and acknowledges all of them one RTT later in a single ACK frame.

use std::time::Duration;

use crate::{CongestionController, RttSample};

/// Virtual time and packet numbering of the loop.
pub(crate) struct Fluid {
    pub(crate) now: Duration,
    next_pn: u64,
    last_send: Duration,
}

impl Fluid {
    /// A loop at time zero with nothing sent.
    pub(crate) fn new() -> Self {
        Self {
            now: Duration::ZERO,
            next_pn: 0,
            last_send: Duration::ZERO,
        }
    }

    /// One round with a constant RTT sample; returns the ACK time.
    pub(crate) fn round(
        &mut self,
        cc: &mut dyn CongestionController,
        mds: u64,
        rtt: Duration,
    ) -> Duration {
        self.round_with(cc, mds, rtt, false)
    }

    /// One round; sending starts 1 µs after `now` so it lies after a loss declared at `now`.
    pub(crate) fn round_with(
        &mut self,
        cc: &mut dyn CongestionController,
        mds: u64,
        rtt: Duration,
        app_limited: bool,
    ) -> Duration {
        let packets = (cc.window() / mds).clamp(1, 1_000_000);
        let sent = self.now + Duration::from_micros(1);
        let first = self.next_pn;
        for pn in first..first + packets {
            cc.on_sent(sent, mds, pn);
        }
        self.next_pn = first + packets;
        let acked = sent + rtt;
        let sample = RttSample {
            latest: rtt,
            smoothed: rtt,
            min: rtt,
        };
        for _ in 0..packets {
            cc.on_ack(acked, sent, mds, app_limited, &sample);
        }
        cc.on_end_acks(acked, 0, app_limited, Some(self.next_pn - 1));
        self.now = acked;
        self.last_send = sent;
        acked
    }

    /// Declares the loss of one packet of the most recent round, detected now.
    pub(crate) fn loss(&mut self, cc: &mut dyn CongestionController, mds: u64, persistent: bool) {
        cc.on_congestion_event(self.now, self.last_send, persistent, mds);
    }
}
