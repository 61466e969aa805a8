//! Helpers for the disciplines' tests.

use std::time::Duration;

use super::{Ecn, Packet, PacketMeta};
use crate::config::{LinkConfig, RateProfile};
use crate::link::{Delivery, Link};
use crate::qdisc::QdiscConfig;

pub(crate) fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

pub(crate) fn us(x: u64) -> Duration {
    Duration::from_micros(x)
}

/// A packet as a discipline sees it, enqueued at zero.
pub(crate) fn pkt(item: u64, bytes: u32, flow: u64, ecn: Ecn) -> Packet<u64> {
    Packet {
        item,
        meta: meta(bytes, flow, ecn),
        enqueued: Duration::ZERO,
        marked: false,
    }
}

pub(crate) fn meta(ip_bytes: u32, flow: u64, ecn: Ecn) -> PacketMeta {
    PacketMeta {
        ip_bytes,
        flow,
        ecn,
    }
}

/// A link at `rate` bit/s, no delay, running `qdisc`.
pub(crate) fn link(rate: u64, qdisc: QdiscConfig, seed: u64) -> Link<u64> {
    let mut c = LinkConfig::ideal();
    c.rate = RateProfile::Fixed(rate);
    c.qdisc = qdisc;
    Link::new(c, seed)
}

/// Offers `arrivals` (item = index) and polls the way an engine does: at every wakeup before
/// each arrival, then until empty.
pub(crate) fn drive(
    link: &mut Link<u64>,
    arrivals: &[(Duration, PacketMeta)],
) -> Vec<Delivery<u64>> {
    let mut out = Vec::new();
    for (i, (t, m)) in arrivals.iter().enumerate() {
        while let Some(w) = link.next_wakeup().filter(|w| w < t) {
            while let Some(d) = link.poll(w) {
                out.push(d);
            }
        }
        let _ = link.enqueue_packet(*t, *m, i as u64);
    }
    while let Some(w) = link.next_wakeup() {
        while let Some(d) = link.poll(w) {
            out.push(d);
        }
    }
    out
}

/// Offers `arrivals` and polls only at the arrivals and at `extra` times (a lazy caller).
pub(crate) fn drive_lazily(
    link: &mut Link<u64>,
    arrivals: &[(Duration, PacketMeta)],
    extra: &[Duration],
) -> Vec<Delivery<u64>> {
    let mut out = Vec::new();
    let mut extra = extra.iter().peekable();
    for (i, (t, m)) in arrivals.iter().enumerate() {
        while let Some(e) = extra.next_if(|e| *e <= t) {
            while let Some(d) = link.poll(*e) {
                out.push(d);
            }
        }
        let _ = link.enqueue_packet(*t, *m, i as u64);
    }
    while let Some(d) = link.poll(Duration::MAX) {
        out.push(d);
    }
    out
}

/// Items missing from `out` among `0..n` (dropped, in order).
pub(crate) fn missing(out: &[Delivery<u64>], n: u64) -> Vec<u64> {
    let mut seen = vec![false; n as usize];
    for d in out {
        seen[d.item as usize] = true;
    }
    (0..n).filter(|i| !seen[*i as usize]).collect()
}

/// Bursts of `per_burst` packets of `bytes` every `gap`, `bursts` times, cycling through the
/// ECN codepoints in `ecns` and flows `0..flows`: idle gaps longer than any timer period, so a
/// lazy caller's polls fall far apart while packets wait.
pub(crate) fn bursts(
    bursts: u64,
    per_burst: u64,
    gap: Duration,
    bytes: u32,
    ecns: &[Ecn],
    flows: u64,
) -> Vec<(Duration, PacketMeta)> {
    let mut out = Vec::new();
    for b in 0..bursts {
        for i in 0..per_burst {
            let k = b * per_burst + i;
            let ecn = ecns[(k % ecns.len() as u64) as usize];
            out.push((gap * b as u32 + us(i * 10), meta(bytes, k % flows, ecn)));
        }
    }
    out
}
