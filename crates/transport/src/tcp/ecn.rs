//! RFC 3168 ECN as Linux runs it (`include/net/tcp_ecn.h`, `net/ipv4/tcp_input.c`): the
//! handshake's negotiation, the receiver's echo of CE with ECE until it sees CWR, and what each
//! outgoing segment carries. The sender's reduction in answer to ECE lives in the sender.
//!
//! Linux 6.18 has the Accurate ECN code, but its `net.ipv4.tcp_ecn` accepts only 0–2 (values
//! 3–5, which negotiate AccECN, came later), so a 6.18 kernel negotiates RFC 3168 ECN at most;
//! the model does the same.

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
}

/// What the receiver owes after a data segment's ECN processing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct EcnAck {
    /// Acknowledge the next two segments at once (tcp_enter_quickack_mode(sk, 2)).
    pub quickack: bool,
    /// Acknowledge this segment at once (CWR on data: the sender's window may be tiny).
    pub now: bool,
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
                now: false
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
