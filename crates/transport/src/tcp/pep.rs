//! A split-connection PEP (like PEPsal) on one connection: a transparent proxy that answers the
//! client's SYN at once as if it were the server (leg A), opens its own connection to the
//! server (leg B, RFC 3135 §2.2 "split connection"), and relays the byte stream both ways.
//!
//! TLS stays end to end (PEPsal splits TCP, not TLS), so the PEP only moves byte counts. Per
//! direction it holds at most `buffer` bytes: read from the incoming leg and not yet
//! acknowledged by the outgoing leg's peer. A full buffer stops the reads, so the incoming
//! leg's unread data closes its receive window instead of the PEP growing without bound.
//! A FIN is passed on once every byte before it has been relayed; a reset (or a leg that gives
//! up) resets the other leg.
//!
//! Leg B uses the client's connection number: a transparent proxy keeps the client's address
//! and port (PEPsal with TPROXY), so a capture on either leg shows the same 4-tuple, which is
//! what the engine draws. The legs never meet on one link, so nothing is ambiguous.

use std::time::Duration;

use super::endpoint::Endpoint;
use super::segment::Segment;
use super::{Params, TcpFlowConfig, TcpFlowError, TcpKnobs};
use crate::agent::{Side, Transmit};
use crate::cc_adapter::CcChoice;

/// Index of the client → server direction in per-direction arrays.
const UP: usize = 0;
/// Index of the server → client direction.
const DOWN: usize = 1;

/// Most bytes a flow's PEP held at once, per direction, over all its connections.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PepHeld {
    /// Client → server bytes.
    pub upstream: u64,
    /// Server → client bytes.
    pub downstream: u64,
}

/// What the PEP's endpoints run with, derived once from the flow's configuration.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PepParams {
    /// The PEP's own controller, windows and send buffer; everything else from the flow.
    pub p: Params,
    /// Bytes held per direction.
    pub buffer: u64,
}

impl PepParams {
    /// `None` without a PEP; an error for knobs the PEP cannot run with.
    pub(crate) fn from_config(cfg: &TcpFlowConfig) -> Result<Option<PepParams>, TcpFlowError> {
        let Some(pep) = &cfg.pep else { return Ok(None) };
        if pep.buffer == 0 {
            return Err(TcpFlowError::Invalid("PEP buffer must be positive".into()));
        }
        // The PEP box keeps Linux's default `tcp_ecn = 2`: it accepts ECN from the client but
        // does not ask for it towards the server.
        let own = TcpKnobs {
            receive_window_max: pep.receive_window_max,
            send_buffer: pep.send_buffer,
            ecn: false,
            ..cfg.knobs
        };
        let mut p = Params::new(&own, CcChoice::Ours(pep.cc))
            .map_err(|TcpFlowError::Invalid(m)| TcpFlowError::Invalid(format!("PEP: {m}")))?;
        // The PEP's legs draw from their own stream of the flow's seed.
        p.seed = crate::seeded::sub_seed(cfg.seed, 1);
        Ok(Some(PepParams {
            p,
            buffer: pep.buffer,
        }))
    }
}

/// The PEP's two legs of one connection and the relay between them.
#[derive(Debug)]
pub(crate) struct Split {
    /// Leg A: the PEP's end of the client's connection (it answers as the server).
    a: Endpoint,
    /// Leg B: the PEP's own connection to the server.
    b: Endpoint,
    buffer: u64,
    /// Per direction: bytes written into the outgoing leg so far.
    relayed: [u64; 2],
    /// Per direction: most bytes held at once.
    max_held: [u64; 2],
    /// Per direction: the FIN has been passed on.
    fin_relayed: [bool; 2],
}

impl Split {
    /// Intercepts the client's SYN `syn`: accepts it on leg A and starts leg B's handshake.
    pub(crate) fn new(pp: PepParams, syn: &Segment, now: Duration) -> Split {
        Split {
            a: Endpoint::accept(syn.conn, pp.p, syn, now),
            b: Endpoint::connect(syn.conn, pp.p, now),
            buffer: pp.buffer,
            relayed: [0; 2],
            max_held: [0; 2],
            fin_relayed: [false; 2],
        }
    }

    /// The leg a segment from `from` belongs to.
    pub(crate) fn leg(&mut self, from: Side) -> Option<&mut Endpoint> {
        match from {
            Side::Client => Some(&mut self.a),
            Side::Server => Some(&mut self.b),
            Side::Middle => None,
        }
    }

    /// The leg whose sender carries the flow's data towards `receiver` (for the report).
    pub(crate) fn leg_towards(&self, receiver: Side) -> &Endpoint {
        if receiver == Side::Client {
            &self.a
        } else {
            &self.b
        }
    }

    /// Most bytes held at once, per direction.
    pub(crate) fn max_held(&self) -> PepHeld {
        PepHeld {
            upstream: self.max_held[UP],
            downstream: self.max_held[DOWN],
        }
    }

    /// Moves what the buffer has room for from each leg to the other, and passes on FINs and
    /// resets.
    pub(crate) fn relay(&mut self, now: Duration) {
        // Nobody is left to talk to on the other side.
        if self.a.is_closed() {
            self.b.reset();
        }
        if self.b.is_closed() {
            self.a.reset();
        }
        let d = &mut Dir {
            relayed: &mut self.relayed[UP],
            max_held: &mut self.max_held[UP],
            fin: &mut self.fin_relayed[UP],
        };
        d.pump(&mut self.a, &mut self.b, self.buffer, now);
        let d = &mut Dir {
            relayed: &mut self.relayed[DOWN],
            max_held: &mut self.max_held[DOWN],
            fin: &mut self.fin_relayed[DOWN],
        };
        d.pump(&mut self.b, &mut self.a, self.buffer, now);
    }

    /// Timers of both legs due at `now`.
    pub(crate) fn on_timeout(&mut self, now: Duration) {
        for ep in [&mut self.a, &mut self.b] {
            if ep.poll_timeout().is_some_and(|t| t <= now) {
                ep.on_timeout(now);
            }
        }
    }

    /// Earliest timer of either leg.
    pub(crate) fn poll_timeout(&self) -> Option<Duration> {
        [self.a.poll_timeout(), self.b.poll_timeout()]
            .into_iter()
            .flatten()
            .min()
    }

    /// The next segment of either leg, addressed to that leg's peer.
    pub(crate) fn poll_transmit(&mut self, now: Duration) -> Option<Transmit> {
        if let Some(mut t) = self.a.poll_transmit(now) {
            t.to = Side::Client;
            return Some(t);
        }
        let mut t = self.b.poll_transmit(now)?;
        t.to = Side::Server;
        Some(t)
    }
}

/// One direction's relay state, borrowed out of [`Split`] so both legs can be borrowed too.
struct Dir<'a> {
    relayed: &'a mut u64,
    max_held: &'a mut u64,
    fin: &'a mut bool,
}

impl Dir<'_> {
    fn pump(&mut self, from: &mut Endpoint, to: &mut Endpoint, buffer: u64, now: Duration) {
        let held = self.relayed.saturating_sub(to.acked_bytes());
        let n = from.take_readable_max(buffer.saturating_sub(held), now);
        if n > 0 {
            to.write(n);
            *self.relayed += n;
        }
        *self.max_held = (*self.max_held).max(self.relayed.saturating_sub(to.acked_bytes()));
        // The FIN comes after the relayed bytes: only once nothing is left unread.
        if !*self.fin && from.fin_received() && from.unread() == 0 {
            *self.fin = true;
            to.close();
        }
    }
}
