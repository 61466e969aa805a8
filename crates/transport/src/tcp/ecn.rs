//! RFC 3168 ECN as Linux runs it (`include/net/tcp_ecn.h`, `net/ipv4/tcp_input.c`): the
//! handshake's negotiation, the receiver's echo of CE with ECE until it sees CWR, and what each
//! outgoing segment carries. The sender's reduction in answer to ECE lives in the sender.
//!
//! Linux 6.18 has the Accurate ECN code, but its `net.ipv4.tcp_ecn` accepts only 0–2 (values
//! 3–5, which negotiate AccECN, came later), so a 6.18 kernel negotiates RFC 3168 ECN at most;
//! the model does the same.
//!
//! A controller that needs ECN (DCTCP, Prague; Linux's `TCP_CONG_NEEDS_ECN`) changes three
//! things, as in Linux: every segment leaves ECN-capable (SYN, SYN-ACK, pure ACKs and
//! retransmissions too, not only new data), with the controller's codepoint; and the receiver
//! runs DCTCP's CE state machine (`dctcp_ece_ack_update`) instead of RFC 3168's echo: ECE
//! reflects whether the latest data segment was CE-marked, and when that changes the ACK goes
//! out at once, preceded by any ACK held back for earlier segments with the old ECE, so each
//! ACK's ECE covers exactly the data it acknowledges. Linux 6.18 sends ECT(0) for DCTCP; the
//! model gives Prague ECT(1) (the L4STeam kernel's choice) over the same feedback, since
//! AccECN, which Prague uses there, is not negotiated by 6.18.

use super::segment::{Segment, CWR, ECE, SYN};

/// One endpoint's ECN state.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct EcnState {
    /// Negotiated (Linux's TCP_ECN_OK): new data leaves ECT(0) and ECE/CWR carry feedback.
    ok: bool,
    /// A CE mark arrived and the peer's CWR has not (TCP_ECN_DEMAND_CWR): every outgoing
    /// segment carries ECE.
    demand_cwr: bool,
    /// An ECT or CE data segment arrived (TCP_ECN_SEEN).
    seen: bool,
    /// CE-marked data segments received.
    ce_received: u64,
    /// The controller needs ECN: ECT on every segment, DCTCP's CE echo.
    scalable: bool,
    /// Codepoint of an ECN-capable segment.
    ect: Option<netem::Ecn>,
    /// DCTCP's CE state: the latest data segment was CE-marked.
    ce_state: bool,
}

/// What the receiver owes after a data segment's ECN processing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct EcnAck {
    /// Acknowledge the next two segments at once (tcp_enter_quickack_mode(sk, 2)).
    pub quickack: bool,
    /// Acknowledge this segment at once (CWR on data: the sender's window may be tiny; or
    /// DCTCP's CE state changed).
    pub now: bool,
    /// DCTCP's CE state changed: an ACK held back for earlier segments goes out first, up to
    /// the data before this segment, with this ECE.
    pub prior_ece: Option<bool>,
}

/// Flags of the client's SYN: ECE | CWR when it asks for ECN. A retransmitted SYN asks no
/// more (tcp_ecn_clear_syn with Linux's default `tcp_ecn_fallback = 1`), in case a middlebox
/// drops ECN-setup SYNs.
pub(crate) fn syn_flags(request: bool, retransmission: bool) -> u8 {
    if request && !retransmission {
        ECE | CWR
    } else {
        0
    }
}

impl EcnState {
    /// A server's state for the SYN `syn`: ECN when it asked with both ECE and CWR (Linux
    /// accepts by default, `tcp_ecn = 2`).
    pub(crate) fn for_syn(syn: &Segment) -> Self {
        EcnState {
            ok: syn.has(ECE | CWR),
            ..EcnState::default()
        }
    }

    /// A client that asked: ECN when the SYN-ACK agrees with ECE and without CWR.
    pub(crate) fn for_syn_ack(asked: bool, syn_ack: &Segment) -> Self {
        EcnState {
            ok: asked && syn_ack.has(ECE) && !syn_ack.has(CWR),
            ..EcnState::default()
        }
    }

    /// The sender's controller `cc`: its codepoint and whether it needs ECN.
    pub(crate) fn with_controller(mut self, cc: &congestion::CcConfig) -> Self {
        self.scalable = cc.needs_ecn();
        self.ect = Some(crate::cc_adapter::ect_codepoint(cc));
        self
    }

    /// The IP codepoint of an outgoing segment: ECN-capable for new data once ECN is
    /// negotiated (tcp_ecn_send), and for every segment with a controller that needs ECN
    /// (the SYN before negotiation too, as `tcp_ecn_send_syn` does for it).
    pub(crate) fn codepoint(&self, new_data: bool, syn: bool) -> netem::Ecn {
        let capable = if self.scalable {
            self.ok || syn
        } else {
            self.ok && new_data
        };
        match self.ect {
            Some(ect) if capable => ect,
            _ => netem::Ecn::NotEct,
        }
    }

    /// ECN is in use on the connection.
    pub(crate) fn ok(&self) -> bool {
        self.ok
    }

    /// CE-marked data segments received.
    pub(crate) fn ce_received(&self) -> u64 {
        self.ce_received
    }

    /// The ECE flag of a SYN-ACK (agreement) or of any later segment (the echo).
    pub(crate) fn outgoing_flags(&self, syn: bool) -> u8 {
        if self.ok && (syn || self.demand_cwr) {
            ECE
        } else {
            0
        }
    }

    /// A segment with data arrived with the IP codepoint `ecn` (tcp_ecn_accept_cwr, then
    /// tcp_data_ecn_check, in Linux's order).
    pub(crate) fn on_data(&mut self, seg: &Segment, ecn: netem::Ecn) -> EcnAck {
        let mut ack = EcnAck::default();
        if !self.ok || seg.has(SYN) {
            return ack;
        }
        if seg.has(CWR) {
            self.demand_cwr = false;
            ack.now = true;
        }
        if self.scalable {
            self.dctcp_on_data(ecn, &mut ack);
            return ack;
        }
        match ecn {
            netem::Ecn::NotEct => {
                // Linux: after ECT was seen, a Not-ECT segment is probably a retransmission,
                // and the sender waits for its ACK.
                ack.quickack = self.seen;
            }
            netem::Ecn::Ce => {
                self.ce_received += 1;
                if !self.demand_cwr {
                    // Do not delay ACKs: the sender may have a very small window.
                    ack.quickack = true;
                    self.demand_cwr = true;
                }
                self.seen = true;
            }
            netem::Ecn::Ect0 | netem::Ecn::Ect1 => self.seen = true,
        }
        ack
    }

    /// DCTCP's receiver (`dctcp_ece_ack_update`): ECE follows the CE state of the latest data
    /// segment; a change is acknowledged at once. A Not-ECT segment (the sender lost ECN)
    /// leaves the state alone and, after ECT was seen, asks for quick ACKs as RFC 3168's does.
    fn dctcp_on_data(&mut self, ecn: netem::Ecn, ack: &mut EcnAck) {
        let ce = match ecn {
            netem::Ecn::NotEct => {
                ack.quickack = self.seen;
                return;
            }
            netem::Ecn::Ce => {
                self.ce_received += 1;
                true
            }
            netem::Ecn::Ect0 | netem::Ecn::Ect1 => false,
        };
        self.seen = true;
        if ce != self.ce_state {
            ack.prior_ece = Some(self.ce_state);
            ack.now = true;
        }
        self.ce_state = ce;
        self.demand_cwr = ce;
    }

    /// ECE on an incoming non-SYN segment means the peer saw CE (tcp_ecn_rcv_ecn_echo).
    pub(crate) fn echoed(&self, seg: &Segment) -> bool {
        self.ok && seg.has(ECE) && !seg.has(SYN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::segment::ACK;

    fn seg(flags: u8, len: u32) -> Segment {
        Segment {
            flags,
            len,
            ..Segment::default()
        }
    }

    #[test]
    fn negotiation_follows_rfc_3168() {
        assert_eq!(syn_flags(true, false), ECE | CWR);
        assert_eq!(syn_flags(true, true), 0, "a retransmitted SYN falls back");
        assert_eq!(syn_flags(false, false), 0);
        assert!(EcnState::for_syn(&seg(SYN | ECE | CWR, 0)).ok());
        assert!(
            !EcnState::for_syn(&seg(SYN | ECE, 0)).ok(),
            "ECE alone is no request"
        );
        assert!(EcnState::for_syn_ack(true, &seg(SYN | ACK | ECE, 0)).ok());
        assert!(!EcnState::for_syn_ack(true, &seg(SYN | ACK | ECE | CWR, 0)).ok());
        assert!(!EcnState::for_syn_ack(false, &seg(SYN | ACK | ECE, 0)).ok());
        assert!(!EcnState::for_syn_ack(true, &seg(SYN | ACK, 0)).ok());
        let server = EcnState::for_syn(&seg(SYN | ECE | CWR, 0));
        assert_eq!(server.outgoing_flags(true), ECE, "the SYN-ACK agrees");
        assert_eq!(server.outgoing_flags(false), 0, "no echo before a CE mark");
        assert_eq!(EcnState::default().outgoing_flags(true), 0);
    }

    #[test]
    fn ce_is_echoed_until_cwr_with_quick_acks() {
        let mut r = EcnState::for_syn(&seg(SYN | ECE | CWR, 0));
        assert_eq!(
            r.on_data(&seg(ACK, 100), netem::Ecn::Ect0),
            EcnAck::default()
        );
        let first = r.on_data(&seg(ACK, 100), netem::Ecn::Ce);
        assert_eq!(
            first,
            EcnAck {
                quickack: true,
                now: false,
                prior_ece: None
            }
        );
        assert_eq!(r.outgoing_flags(false), ECE);
        // A second mark before CWR changes nothing but the count.
        assert_eq!(r.on_data(&seg(ACK, 100), netem::Ecn::Ce), EcnAck::default());
        assert_eq!(r.ce_received(), 2);
        assert_eq!(
            r.outgoing_flags(false),
            ECE,
            "ECE persists on every segment"
        );
        let cwr = r.on_data(&seg(ACK | CWR, 100), netem::Ecn::Ect0);
        assert!(cwr.now, "CWR on data is acknowledged at once");
        assert_eq!(r.outgoing_flags(false), 0, "CWR ends the echo");
        // CWR and CE on one segment: the new mark is echoed again.
        r.on_data(&seg(ACK | CWR, 100), netem::Ecn::Ce);
        assert_eq!(r.outgoing_flags(false), ECE);
    }

    fn dctcp() -> congestion::CcConfig {
        congestion::CcConfig::Dctcp {
            common: congestion::CommonCcConfig {
                initial_window_packets: 10,
                loss_reduction_factor: 0.5,
                minimum_window_packets: 2,
            },
        }
    }

    #[test]
    fn dctcp_echoes_exactly_the_marked_segments_and_acks_each_change_at_once() {
        let mut r = EcnState::for_syn(&seg(SYN | ECE | CWR, 0)).with_controller(&dctcp());
        assert_eq!(
            r.on_data(&seg(ACK, 100), netem::Ecn::Ect0),
            EcnAck::default()
        );
        assert_eq!(r.outgoing_flags(false), 0);
        let to_ce = r.on_data(&seg(ACK, 100), netem::Ecn::Ce);
        assert_eq!(
            to_ce,
            EcnAck {
                quickack: false,
                now: true,
                prior_ece: Some(false)
            },
            "the held-back ACK goes out without ECE, then this one at once"
        );
        assert_eq!(r.outgoing_flags(false), ECE);
        assert_eq!(r.on_data(&seg(ACK, 100), netem::Ecn::Ce), EcnAck::default());
        // CWR does not end the echo: only an unmarked segment does.
        let cwr = r.on_data(&seg(ACK | CWR, 100), netem::Ecn::Ce);
        assert!(cwr.now && cwr.prior_ece.is_none());
        assert_eq!(r.outgoing_flags(false), ECE);
        let back = r.on_data(&seg(ACK, 100), netem::Ecn::Ect0);
        assert_eq!(back.prior_ece, Some(true));
        assert_eq!(r.outgoing_flags(false), 0);
        assert_eq!(r.ce_received(), 3);
    }

    #[test]
    fn codepoints_come_from_the_controller() {
        let classic = EcnState::for_syn(&seg(SYN | ECE | CWR, 0));
        assert_eq!(
            classic.codepoint(true, false),
            netem::Ecn::NotEct,
            "no controller yet"
        );
        let cubic = congestion::CcConfig::None;
        let classic = classic.with_controller(&cubic);
        assert_eq!(classic.codepoint(true, false), netem::Ecn::Ect0);
        assert_eq!(
            classic.codepoint(false, false),
            netem::Ecn::NotEct,
            "ACKs and retransmissions"
        );
        let d = EcnState::for_syn(&seg(SYN | ECE | CWR, 0)).with_controller(&dctcp());
        assert_eq!(
            d.codepoint(false, false),
            netem::Ecn::Ect0,
            "DCTCP: every segment"
        );
        let prague = congestion::CcConfig::Prague {
            common: congestion::CommonCcConfig {
                initial_window_packets: 10,
                loss_reduction_factor: 0.5,
                minimum_window_packets: 2,
            },
        };
        let p = EcnState::default().with_controller(&prague);
        assert_eq!(
            p.codepoint(false, true),
            netem::Ecn::Ect1,
            "Prague's SYN is ECT(1)"
        );
        assert_eq!(
            p.codepoint(true, false),
            netem::Ecn::NotEct,
            "not negotiated"
        );
    }

    #[test]
    fn not_ect_after_ect_asks_for_quick_acks_and_echo_needs_negotiation() {
        let mut r = EcnState::for_syn(&seg(SYN | ECE | CWR, 0));
        assert!(!r.on_data(&seg(ACK, 100), netem::Ecn::NotEct).quickack);
        r.on_data(&seg(ACK, 100), netem::Ecn::Ect0);
        assert!(r.on_data(&seg(ACK, 100), netem::Ecn::NotEct).quickack);
        let mut off = EcnState::default();
        assert_eq!(
            off.on_data(&seg(ACK, 100), netem::Ecn::Ce),
            EcnAck::default()
        );
        assert_eq!(off.outgoing_flags(false), 0);
        assert!(!off.echoed(&seg(ACK | ECE, 0)));
        assert!(r.echoed(&seg(ACK | ECE, 0)));
        assert!(!r.echoed(&seg(SYN | ACK | ECE, 0)));
    }
}
