//! The observation window of the scalable controllers (DCTCP, Prague): bytes delivered and
//! bytes reported CE-marked since the window started, the window ending once a packet sent
//! after its start is acknowledged (Linux: `snd_una` reaching the `snd_nxt` of the start).

/// Counts of one observation window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CeWindow {
    /// Packet number the next packet sent will have (`snd_nxt`).
    next_pn: u64,
    /// The window ends when a packet numbered at least this is acknowledged.
    end_pn: u64,
    /// Bytes newly acknowledged in this window.
    delivered: u64,
    /// Of those, bytes the receiver reported CE-marked.
    delivered_ce: u64,
}

/// What a finished window saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WindowCounts {
    /// Bytes acknowledged.
    pub delivered: u64,
    /// Bytes acknowledged with a CE report.
    pub delivered_ce: u64,
}

impl CeWindow {
    /// A packet numbered `pn` was sent.
    pub(crate) fn on_sent(&mut self, pn: u64) {
        self.next_pn = self.next_pn.max(pn.saturating_add(1));
    }

    /// One ACK's feedback: `acked` bytes, `ce` of them CE-marked.
    pub(crate) fn on_feedback(&mut self, acked: u64, ce: u64) {
        self.delivered = self.delivered.saturating_add(acked);
        self.delivered_ce = self.delivered_ce.saturating_add(ce.min(acked));
    }

    /// Whether acknowledging up to `largest_acked` ends the window.
    pub(crate) fn elapsed(&self, largest_acked: Option<u64>) -> bool {
        largest_acked.is_some_and(|l| l >= self.end_pn)
    }

    /// Ends the window: returns its counts and starts the next one at `snd_nxt`.
    pub(crate) fn restart(&mut self) -> WindowCounts {
        let counts = WindowCounts {
            delivered: self.delivered,
            delivered_ce: self.delivered_ce,
        };
        self.end_pn = self.next_pn;
        self.delivered = 0;
        self.delivered_ce = 0;
        counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_ends_when_data_sent_after_its_start_is_acknowledged() {
        let mut w = CeWindow::default();
        // Linux starts the first window at connection setup: the first ACK ends it.
        assert!(w.elapsed(Some(0)));
        for pn in 0..10 {
            w.on_sent(pn);
        }
        w.on_feedback(5000, 1000);
        let c = w.restart();
        assert_eq!((c.delivered, c.delivered_ce), (5000, 1000));
        assert!(
            !w.elapsed(Some(9)),
            "packets 0-9 were sent before the start"
        );
        w.on_feedback(2000, 3000);
        assert!(w.elapsed(Some(10)));
        assert_eq!(
            w.restart().delivered_ce,
            2000,
            "CE never exceeds what was acked"
        );
        assert!(!w.elapsed(None));
    }
}
