//! ECN in the research model (RFC 9000 §13.4, RFC 9002 §7.1 and B.7): the receiver counts the
//! codepoints of the packets it receives per packet-number space and reports them in ACK_ECN
//! frames; the sender sends ECT(0) while the path validates, checks each ACK's counts against
//! what it newly acknowledges, and treats a rise of the CE count as a congestion event. The
//! codepoint is the controller's (`CcConfig::ect`): ECT(1) for Prague, ECT(0) otherwise.

use super::wire::EcnCounts;

/// Spaces: Initial, Handshake, application data.
const SPACES: usize = 3;

/// One endpoint's ECN state on its path.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct EcnPath {
    /// Packets leave ECT(0): the flow asked for ECN and validation has not failed.
    sending: bool,
    /// An ECT or CE packet arrived: ACK frames carry the counts from now on.
    receiving: bool,
    /// Per space: codepoints of the packets received (duplicates not counted).
    received: [EcnCounts; SPACES],
    /// Per space: the peer's counts as last validated.
    feedback: [EcnCounts; SPACES],
    /// CE-marked packets received.
    ce_received: u64,
    /// The ECT codepoint this endpoint sends.
    ect: netem::Ecn,
}

/// What one ACK frame's counts mean for the sender.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct EcnFeedback {
    /// Rise of the ECN-CE count: packets the network marked since the last valid ACK.
    pub ce_increase: u64,
}

impl EcnPath {
    /// The state of an endpoint whose flow has ECN `enabled`, sending `ect`.
    pub(crate) fn new(enabled: bool, ect: netem::Ecn) -> Self {
        EcnPath {
            sending: enabled,
            ect,
            ..EcnPath::default()
        }
    }

    /// The codepoint the next packet leaves with.
    pub(crate) fn codepoint(&self) -> netem::Ecn {
        if self.sending {
            self.ect
        } else {
            netem::Ecn::NotEct
        }
    }

    /// Packets still leave ECN-capable.
    pub(crate) fn sending(&self) -> bool {
        self.sending
    }

    /// CE-marked packets received.
    pub(crate) fn ce_received(&self) -> u64 {
        self.ce_received
    }

    /// A new (not duplicate) packet of `space` arrived with `ecn`.
    pub(crate) fn on_packet(&mut self, space: usize, ecn: netem::Ecn) {
        if ecn == netem::Ecn::NotEct {
            return;
        }
        self.receiving = true;
        if ecn == netem::Ecn::Ce {
            self.ce_received += 1;
        }
        if let Some(c) = self.received.get_mut(space) {
            c.count(ecn);
        }
    }

    /// The counts an ACK frame of `space` carries (an ACK_ECN frame), once any ECT or CE
    /// packet arrived on the path.
    pub(crate) fn ack_counts(&self, space: usize) -> Option<EcnCounts> {
        if self.receiving {
            self.received.get(space).copied()
        } else {
            None
        }
    }

    /// An ACK frame of `space` with `counts` newly acknowledged `newly_ect` packets this
    /// endpoint sent ECN-capable, its largest among them (RFC 9000 §13.4.2.1). Validation
    /// fails, and the sender stops marking, when the frame has no counts, a count went down,
    /// or the count of the codepoint sent and the CE count rose by less than `newly_ect`.
    /// Returns the CE rise when valid.
    pub(crate) fn on_ack(
        &mut self,
        space: usize,
        counts: Option<EcnCounts>,
        newly_ect: u64,
    ) -> EcnFeedback {
        if !self.sending || newly_ect == 0 {
            return EcnFeedback::default();
        }
        let Some(last) = self.feedback.get(space).copied() else {
            return EcnFeedback::default();
        };
        let valid = counts.filter(|c| {
            c.ect0 >= last.ect0
                && c.ect1 >= last.ect1
                && c.ce >= last.ce
                && sent_rise(self.ect, *c, last) + (c.ce - last.ce) >= newly_ect
        });
        let Some(c) = valid else {
            self.sending = false;
            return EcnFeedback::default();
        };
        self.feedback[space] = c;
        EcnFeedback {
            ce_increase: c.ce - last.ce,
        }
    }
}

/// The rise of the count of the codepoint `ect` from `last` to `now` (both already checked
/// not to go down).
fn sent_rise(ect: netem::Ecn, now: EcnCounts, last: EcnCounts) -> u64 {
    match ect {
        netem::Ecn::Ect1 => now.ect1 - last.ect1,
        _ => now.ect0 - last.ect0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(ect0: u64, ce: u64) -> Option<EcnCounts> {
        Some(EcnCounts { ect0, ect1: 0, ce })
    }

    #[test]
    fn the_receiver_counts_codepoints_per_space_once_it_sees_ect() {
        let mut r = EcnPath::new(true, netem::Ecn::Ect0);
        r.on_packet(2, netem::Ecn::NotEct);
        assert_eq!(r.ack_counts(2), None, "no ECN seen, plain ACK frames");
        r.on_packet(2, netem::Ecn::Ect0);
        r.on_packet(2, netem::Ecn::Ce);
        r.on_packet(0, netem::Ecn::Ect0);
        assert_eq!(r.ack_counts(2), counts(1, 1));
        assert_eq!(r.ack_counts(0), counts(1, 0));
        assert_eq!(r.ack_counts(1), counts(0, 0));
        assert_eq!(r.ce_received(), 1);
    }

    #[test]
    fn valid_counts_report_the_ce_rise() {
        let mut s = EcnPath::new(true, netem::Ecn::Ect0);
        assert_eq!(s.on_ack(2, counts(3, 0), 3).ce_increase, 0);
        assert_eq!(s.on_ack(2, counts(5, 2), 4).ce_increase, 2);
        assert_eq!(s.on_ack(2, counts(6, 2), 1).ce_increase, 0);
        assert!(s.sending());
        assert_eq!(s.codepoint(), netem::Ecn::Ect0);
    }

    #[test]
    fn an_ect1_sender_validates_against_the_ect1_count() {
        let mut s = EcnPath::new(true, netem::Ecn::Ect1);
        assert_eq!(s.codepoint(), netem::Ecn::Ect1);
        let c = |ect1, ce| Some(EcnCounts { ect0: 0, ect1, ce });
        assert_eq!(s.on_ack(2, c(3, 1), 4).ce_increase, 1);
        assert!(s.sending());
        s.on_ack(2, counts(9, 1), 2);
        assert!(
            !s.sending(),
            "ECT(0) counts do not acknowledge ECT(1) packets"
        );
    }

    #[test]
    fn validation_fails_on_missing_falling_or_short_counts() {
        let mut missing = EcnPath::new(true, netem::Ecn::Ect0);
        missing.on_ack(2, None, 1);
        assert!(!missing.sending(), "an ACK without counts of ECT packets");
        assert_eq!(missing.codepoint(), netem::Ecn::NotEct);

        let mut falling = EcnPath::new(true, netem::Ecn::Ect0);
        falling.on_ack(2, counts(5, 1), 6);
        falling.on_ack(2, counts(4, 3), 1);
        assert!(!falling.sending(), "the ECT(0) count went down");

        let mut short = EcnPath::new(true, netem::Ecn::Ect0);
        short.on_ack(2, counts(2, 0), 3);
        assert!(
            !short.sending(),
            "a bleaching path: fewer marks than packets"
        );

        let mut off = EcnPath::new(false, netem::Ecn::Ect0);
        assert_eq!(off.on_ack(2, None, 0), EcnFeedback::default());
        assert!(!off.sending());
        let mut nothing_new = EcnPath::new(true, netem::Ecn::Ect0);
        nothing_new.on_ack(2, None, 0);
        assert!(
            nothing_new.sending(),
            "only ACKs of ECT packets are checked"
        );
    }
}
