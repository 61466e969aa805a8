//! Latency probes in virtual time: requests leave the client of the probe's flow on the probe's
//! schedule, cross that flow's links as UDP datagrams of their own, and the server side echoes
//! them at once ([`netem::probe`] holds the datagram and the account both engines share).

use std::time::Duration;

use netem::probe::{ProbeLog, ProbeMessage, ProbeSpec};
use netem::wire::IPV4_UDP_OVERHEAD;
use netem::Ecn;
use transport::agent::Side;

use crate::engine::{Ev, Owner, Packet, Sim};

/// One probe during a run.
pub(crate) struct ProbeRun {
    pub(crate) spec: ProbeSpec,
    pub(crate) log: ProbeLog,
    /// Number of the next request.
    next_seq: u64,
}

impl ProbeRun {
    pub(crate) fn new(spec: ProbeSpec) -> ProbeRun {
        ProbeRun {
            spec,
            log: ProbeLog::default(),
            next_seq: 0,
        }
    }

    /// When the next request leaves, if before `end`.
    pub(crate) fn next_time(&self, end: Duration) -> Option<Duration> {
        self.spec.send_time(self.next_seq, end)
    }
}

fn nanos(t: Duration) -> u64 {
    u64::try_from(t.as_nanos()).unwrap_or(u64::MAX)
}

impl Sim {
    /// Sends probe `p`'s next request and schedules the one after it.
    pub(crate) fn on_probe(&mut self, p: usize) {
        let now = self.now;
        let run = &mut self.probes[p];
        let message = ProbeMessage {
            seq: run.next_seq,
            sent_ns: nanos(now),
            reflected_ns: 0,
        };
        run.next_seq += 1;
        run.log.on_sent();
        let pkt = probe_packet(
            p,
            run.spec.flow,
            true,
            message.encode(run.spec.payload),
            now,
        );
        if let Some(t) = run.next_time(self.end) {
            self.push(t, Ev::Probe(p as u32));
        }
        self.forward(pkt);
    }

    /// A probe datagram reached the end of its path: the server echoes a request, the client
    /// records an echo.
    pub(crate) fn deliver_probe(&mut self, p: usize, mut pkt: Packet) {
        let now = nanos(self.now);
        if !pkt.up {
            self.probes[p].log.on_echo(&pkt.payload, now);
            return;
        }
        if ProbeMessage::reflect(&mut pkt.payload, now) {
            let flow = self.probes[p].spec.flow;
            let echo = probe_packet(p, flow, false, pkt.payload, self.now);
            self.forward(echo);
        }
    }
}

/// A probe datagram at the start of its path: a request (`up`) or an echo.
fn probe_packet(p: usize, flow: usize, up: bool, payload: Vec<u8>, now: Duration) -> Packet {
    let len = payload.len() as u32;
    let (from, to) = if up {
        (Side::Client, Side::Server)
    } else {
        (Side::Server, Side::Client)
    };
    Packet {
        owner: Owner::Probe {
            probe: p as u32,
            flow: flow as u32,
        },
        up,
        from,
        to,
        hop: 0,
        wire_len: len + IPV4_UDP_OVERHEAD,
        payload_len: len,
        header_len: IPV4_UDP_OVERHEAD,
        ecn: Ecn::NotEct,
        sent_at: now,
        payload,
    }
}
