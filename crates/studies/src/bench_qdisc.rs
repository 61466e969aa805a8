//! The queue disciplines' cost per packet (`quiclab bench --only qdisc`): the link model alone,
//! without any transport, so what differs between rows is the discipline. Sixteen flows offer
//! 1500-byte packets at 110% of a 1 Gbit/s link (half of them ECT(0), so marking and dropping
//! both run) for a fixed number of packets; each row is the best of its repetitions.

use std::time::{Duration, Instant};

use netem::config::{LinkConfig, QueueLimit, RateProfile};
use netem::qdisc::{CodelConfig, DualPi2Config, FqCodelConfig, PieConfig, RedConfig};
use netem::{Ecn, Link, PacketMeta, QdiscConfig};
use serde::Serialize;

/// One discipline's figures.
#[derive(Debug, Clone, Serialize)]
pub struct QdiscCost {
    /// The discipline (`link.qdisc` name).
    pub discipline: &'static str,
    /// Packets offered.
    pub packets: u64,
    /// Packets delivered (the rest were dropped).
    pub delivered: u64,
    /// Wall time per offered packet, ns (best repetition).
    pub ns_per_packet: f64,
    /// `ns_per_packet` over drop-tail's.
    pub vs_droptail: f64,
}

/// The disciplines measured, with Linux's defaults and ECN marking where Linux offers it.
fn disciplines() -> [(&'static str, QdiscConfig); 6] {
    [
        ("droptail", QdiscConfig::DropTail),
        (
            "red",
            QdiscConfig::Red(RedConfig {
                ecn: true,
                ..RedConfig::default()
            }),
        ),
        (
            "codel",
            QdiscConfig::Codel(CodelConfig {
                ecn: true,
                ..CodelConfig::default()
            }),
        ),
        ("fq_codel", QdiscConfig::FqCodel(FqCodelConfig::default())),
        (
            "pie",
            QdiscConfig::Pie(PieConfig {
                ecn: true,
                ..PieConfig::default()
            }),
        ),
        ("dualpi2", QdiscConfig::DualPi2(DualPi2Config::default())),
    ]
}

const RATE_BPS: u64 = 1_000_000_000;
const PACKET: u32 = 1500;
const FLOWS: u64 = 16;

/// Offers `packets` to a link running `qdisc`; returns (wall time, delivered).
fn run_once(qdisc: &QdiscConfig, packets: u64) -> (Duration, u64) {
    let config = LinkConfig {
        rate: RateProfile::Fixed(RATE_BPS),
        queue: QueueLimit {
            packets: Some(1000),
            bytes: None,
        },
        qdisc: qdisc.clone(),
        ..LinkConfig::ideal()
    };
    let mut link: Link<u64> = Link::new(config, 1);
    // 110% load: one packet every 1/1.1 of its serialization time.
    let gap_ns = u64::from(PACKET) * 8 * 1_000_000_000 / RATE_BPS * 10 / 11;
    let mut delivered = 0u64;
    let start = Instant::now();
    for i in 0..packets {
        let now = Duration::from_nanos(i * gap_ns);
        while let Some(t) = link.next_wakeup().filter(|t| *t <= now) {
            while link.poll(t).is_some() {
                delivered += 1;
            }
            if link.next_wakeup() == Some(t) {
                break;
            }
        }
        let meta = PacketMeta {
            ip_bytes: PACKET,
            flow: (i % FLOWS).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            ecn: if i % 2 == 0 { Ecn::Ect0 } else { Ecn::NotEct },
        };
        let _ = link.enqueue_packet(now, meta, i);
    }
    (start.elapsed(), delivered)
}

/// Every discipline's cost, best of `reps`, for `packets` offered packets each.
pub fn qdisc_costs(packets: u64, reps: u32) -> Vec<QdiscCost> {
    let mut rows: Vec<QdiscCost> = disciplines()
        .iter()
        .map(|(name, q)| {
            let (best, delivered) = (0..reps.max(1))
                .map(|_| run_once(q, packets))
                .min_by_key(|(t, _)| *t)
                .unwrap_or((Duration::ZERO, 0));
            QdiscCost {
                discipline: name,
                packets,
                delivered,
                ns_per_packet: best.as_nanos() as f64 / packets.max(1) as f64,
                vs_droptail: 1.0,
            }
        })
        .collect();
    let base = rows.first().map_or(1.0, |r| r.ns_per_packet.max(1e-9));
    for r in &mut rows {
        r.vs_droptail = r.ns_per_packet / base;
    }
    rows
}

/// A table row for the terminal and docs/performance.md.
pub fn render(r: &QdiscCost) -> String {
    format!(
        "| {} | {} | {} | {:.0} | {:.2}× |",
        r.discipline, r.packets, r.delivered, r.ns_per_packet, r.vs_droptail
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// At 110% load every discipline delivers about the link's share and drops or marks the
    /// rest; drop-tail's queue stays full, so it delivers the most of all.
    #[test]
    fn every_discipline_carries_the_link_rate() {
        let rows = qdisc_costs(20_000, 1);
        assert_eq!(rows.len(), 6);
        for r in &rows {
            let share = r.delivered as f64 / r.packets as f64;
            assert!(
                (0.80..=0.92).contains(&share),
                "{}: delivered {share:.3} of the offered packets",
                r.discipline
            );
            assert!(r.ns_per_packet > 0.0);
        }
    }
}
