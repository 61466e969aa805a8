//! `quiclab bench emu`: fidelity and speed of the emulator, measured with UDP probes between a
//! client and a server namespace through the forwarder.
//!
//! Every figure compares what the receiver saw (kernel receive timestamps, sequence numbers)
//! with what the link was configured to do; nothing is taken from the forwarder's own view
//! except the model's loss decisions, used to show that the emulator adds no loss of its own.

use std::collections::BTreeSet;
use std::net::{SocketAddr, SocketAddrV4};
use std::time::Duration;

use netem::config::{LossConfig, QueueLimit, RateProfile};
use netem::qdisc::{FqCodelConfig, QdiscConfig};
use netem::LinkConfig;
use quantile::quantile;
use serde::Serialize;

use netem::wire::IPV4_UDP_OVERHEAD;

use crate::error::EmuError;
use crate::forwarder::WaitMode;
use crate::topology::{Topology, TopologySpec};
use crate::udp::{self, ProbeRx};

/// UDP payload of a 1500-byte IP packet.
const FULL_PAYLOAD: usize = 1500 - IPV4_UDP_OVERHEAD as usize;
const IP_BITS: f64 = 1500.0 * 8.0;

/// How long and how hard to measure.
#[derive(Debug, Clone, Copy)]
pub struct BenchOptions {
    /// Shorter measurements (`--quick`).
    pub quick: bool,
    /// Waiting strategy for the measurements other than the delay comparison.
    pub wait: WaitMode,
}

/// Achieved rate at one configured rate.
#[derive(Debug, Clone, Serialize)]
pub struct RateFigure {
    /// Configured rate (IP layer).
    pub configured_bps: f64,
    /// Rate measured at the receiver from the spacing of back-to-back packets.
    pub achieved_bps: f64,
    /// achieved / configured.
    pub ratio: f64,
    /// |ratio − 1| ≤ 2%.
    pub within_2_percent: bool,
    /// Packets the measurement is based on.
    pub packets: usize,
}

/// One-way delay error distribution (µs).
#[derive(Debug, Clone, Serialize)]
pub struct DelayFigure {
    /// What was measured (`15ms @ 100Mbit/s, sleep` or `baseline`).
    pub label: String,
    /// Waiting strategy of the forwarder.
    pub wait: WaitMode,
    /// Configured one-way delay (ms).
    pub configured_ms: f64,
    /// Error quantiles: measured − configured − serialization (µs).
    pub p50_us: f64,
    /// 99th percentile (µs).
    pub p99_us: f64,
    /// 99.9th percentile (µs).
    pub p999_us: f64,
    /// Largest error (µs).
    pub max_us: f64,
    /// Samples.
    pub samples: usize,
    /// p99 within 200 µs.
    pub p99_within_200us: bool,
    /// The forwarder's own share: release time − scheduled delivery time, p50/p99/p99.9 (µs,
    /// 5 µs buckets).
    pub forwarder_lateness_us: [f64; 3],
    /// Whether the forwarder ran under SCHED_FIFO.
    pub realtime_priority: bool,
}

/// Measured loss against the configured rate.
#[derive(Debug, Clone, Serialize)]
pub struct LossFigure {
    /// Loss model.
    pub model: String,
    /// Configured (stationary) loss rate.
    pub configured: f64,
    /// Measured loss rate (probes not received / sent).
    pub measured: f64,
    /// Binomial 95% interval around the configured rate for this many probes.
    pub interval: (f64, f64),
    /// Whether the measurement is inside it.
    pub inside: bool,
    /// Probes sent.
    pub sent: u64,
    /// Probes missing that the link model did not drop (the emulator's own losses).
    pub unexplained_losses: i64,
}

/// Highest forwarding rate with the link model active.
#[derive(Debug, Clone, Serialize)]
pub struct ThroughputFigure {
    /// Packets per second delivered.
    pub pps: f64,
    /// Gbit/s of 1500-byte IP packets.
    pub gbps: f64,
    /// Target: ≥ 1 Gbit/s.
    pub reaches_1_gbps: bool,
    /// Probes sent / received.
    pub sent: u64,
    /// Probes received.
    pub received: usize,
    /// Most packets that waited in the link's queue at once (0: every packet went straight to
    /// the serializer, so the discipline decided nothing).
    pub max_queue_packets: u64,
}

/// All figures of `quiclab bench emu`.
#[derive(Debug, Clone, Serialize)]
pub struct EmuBench {
    /// Achieved vs configured rate.
    pub rate: Vec<RateFigure>,
    /// Delay error, both waiting strategies, plus the no-impairment baselines.
    pub delay: Vec<DelayFigure>,
    /// Loss fidelity.
    pub loss: Vec<LossFigure>,
    /// Forwarding speed.
    pub throughput: ThroughputFigure,
    /// Forwarding speed with FQ-CoDel (Linux's defaults) on the link: every packet hashed,
    /// queued per flow and scheduled by DRR with CoDel's state per queue.
    pub throughput_fq_codel: ThroughputFigure,
}

fn base(delay: Duration) -> LinkConfig {
    LinkConfig {
        delay,
        ..LinkConfig::ideal()
    }
}

fn spec(up: LinkConfig, wait: WaitMode) -> TopologySpec {
    TopologySpec {
        wait,
        ..TopologySpec::new(up, base(Duration::from_millis(1)))
    }
}

/// Sends `count` probes at `pps` from client to server and returns what arrived.
fn run_probes(
    topo: &Topology,
    payload: usize,
    pps: f64,
    count: u64,
) -> Result<(u64, Vec<ProbeRx>), EmuError> {
    let dst = SocketAddrV4::new(topo.server_addr(0), 9000);
    let server = udp::udp_in(topo.server_ns(0), dst)?;
    let client = udp::udp_in(topo.client_ns(0), SocketAddrV4::new(topo.client_addr(0), 0))?;
    let seconds = if pps > 0.0 { count as f64 / pps } else { 5.0 };
    let deadline = Duration::from_secs_f64(seconds + 5.0);
    std::thread::scope(|s| {
        let rx = s.spawn(|| udp::receive_probes(&server, Duration::from_millis(400), deadline));
        let sent = udp::send_paced(&client, SocketAddr::V4(dst), payload, pps, count);
        let got = rx
            .join()
            .unwrap_or_else(|_| Err(EmuError::Forwarder("receiver thread panicked".into())));
        Ok((sent?, got?))
    })
}

/// Achieved rate at `rate_bps` (one measurement of [`run`]).
pub fn rate_figure(rate_bps: u64, opts: BenchOptions) -> Result<RateFigure, EmuError> {
    let up = LinkConfig {
        rate: RateProfile::Fixed(rate_bps),
        // A deep queue (120 ms at 1 Gbit/s) bridges the probe sender's own scheduling gaps on
        // a shared machine, so the link stays backlogged and the spacing measures the emulator.
        queue: QueueLimit {
            packets: Some(10_000),
            bytes: None,
        },
        ..base(Duration::from_millis(1))
    };
    let topo = Topology::create(&spec(up, opts.wait))?;
    let seconds = if opts.quick { 0.6 } else { 2.0 };
    let link_pps = rate_bps as f64 / IP_BITS;
    // Offer 20% more than the link carries so it never idles; at least a few packets.
    let count = ((link_pps * seconds * 1.2) as u64).max(12);
    let (_, rx) = run_probes(&topo, FULL_PAYLOAD, link_pps * 1.2, count)?;
    topo.shutdown()?;
    // Skip the first packets: the queue is still building, spacing may include sender gaps.
    let skip = (rx.len() / 10).max(1);
    let steady = rx.get(skip..).unwrap_or(&[]);
    let achieved = match (steady.first(), steady.last()) {
        (Some(a), Some(b)) if b.rx_ns > a.rx_ns => {
            // Every packet after the first finished serializing inside the interval.
            let bits: f64 = steady[1..]
                .iter()
                .map(|p| ((p.len + IPV4_UDP_OVERHEAD as usize) * 8) as f64)
                .sum();
            bits / ((b.rx_ns - a.rx_ns) as f64 / 1e9)
        }
        _ => 0.0,
    };
    let ratio = achieved / rate_bps as f64;
    Ok(RateFigure {
        configured_bps: rate_bps as f64,
        achieved_bps: achieved,
        ratio,
        within_2_percent: (ratio - 1.0).abs() <= 0.02,
        packets: steady.len(),
    })
}

/// Delay error at 100 Mbit/s with `delay_ms` (one measurement of [`run`]).
pub fn delay_figure(delay_ms: u64, wait: WaitMode, quick: bool) -> Result<DelayFigure, EmuError> {
    let rate = 100_000_000u64;
    let up = LinkConfig {
        rate: RateProfile::Fixed(rate),
        ..base(Duration::from_millis(delay_ms))
    };
    let topo = Topology::create(&spec(up, wait))?;
    // 10% load: the error measured is the emulator's, not queueing behind other probes.
    let pps = 0.1 * rate as f64 / IP_BITS;
    let count = (pps * if quick { 1.0 } else { 3.0 }) as u64;
    let (_, rx) = run_probes(&topo, FULL_PAYLOAD, pps, count)?;
    let fwd = topo.shutdown()?;
    let late = |q| fwd.release_lateness.quantile_us(q).unwrap_or(f64::NAN);
    let serialization_ns = IP_BITS / rate as f64 * 1e9;
    let configured_ns = delay_ms as f64 * 1e6;
    let mut errors: Vec<f64> = rx
        .iter()
        .map(|r| (r.rx_ns as f64 - r.sent_ns as f64 - configured_ns - serialization_ns) / 1e3)
        .collect();
    errors.sort_by(f64::total_cmp);
    let p99 = quantile(&errors, 0.99);
    Ok(DelayFigure {
        label: if delay_ms == 0 {
            "baseline (no delay)".into()
        } else {
            format!("{delay_ms}ms @ 100Mbit/s")
        },
        wait,
        configured_ms: delay_ms as f64,
        p50_us: quantile(&errors, 0.5),
        p99_us: p99,
        p999_us: quantile(&errors, 0.999),
        max_us: errors.last().copied().unwrap_or(f64::NAN),
        samples: errors.len(),
        p99_within_200us: p99.abs() <= 200.0,
        forwarder_lateness_us: [late(0.5), late(0.99), late(0.999)],
        realtime_priority: fwd.realtime_priority,
    })
}

fn loss_figure(
    name: &str,
    loss: LossConfig,
    configured: f64,
    opts: BenchOptions,
) -> Result<LossFigure, EmuError> {
    let up = LinkConfig {
        loss,
        ..base(Duration::from_millis(1))
    };
    let topo = Topology::create(&spec(up, opts.wait))?;
    let n: u64 = if opts.quick { 5_000 } else { 20_000 };
    let (sent, rx) = run_probes(&topo, 200, 20_000.0, n)?;
    let model_lost = topo.link_stats().0.lost_packets;
    topo.shutdown()?;
    // Distinct sequence numbers: a duplicated probe must not hide a lost one.
    let received = rx.iter().map(|p| p.seq).collect::<BTreeSet<_>>().len() as u64;
    let missing = sent.saturating_sub(received);
    let measured = missing as f64 / sent.max(1) as f64;
    let half = 1.96 * (configured * (1.0 - configured) / sent.max(1) as f64).sqrt();
    let interval = ((configured - half).max(0.0), configured + half);
    Ok(LossFigure {
        model: name.to_string(),
        configured,
        measured,
        interval,
        inside: measured >= interval.0 && measured <= interval.1,
        sent,
        unexplained_losses: missing as i64 - model_lost as i64,
    })
}

/// Highest forwarding rate with `qdisc` on the link (one measurement of [`run`]). Without a
/// discipline the link has no rate limit. With one it serializes at 3 Gbit/s, just above what
/// the forwarder carries here: packets then wait behind the serializer in bursts and pass
/// through the discipline (an idle serializer would let them bypass it, as Linux does).
pub fn throughput_figure(
    opts: BenchOptions,
    qdisc: QdiscConfig,
) -> Result<ThroughputFigure, EmuError> {
    let rate = if qdisc == QdiscConfig::DropTail {
        RateProfile::Unlimited
    } else {
        RateProfile::Fixed(3_000_000_000)
    };
    let up = LinkConfig {
        qdisc,
        rate,
        ..base(Duration::from_millis(1))
    };
    let topo = Topology::create(&spec(up, opts.wait))?;
    // Offered far above what the path can carry (the probe sender batches with sendmmsg);
    // what arrives is what the forwarder (and the CPUs it shares with both ends) carry.
    let pps = 400_000.0;
    let count = (pps * if opts.quick { 1.0 } else { 2.0 }) as u64;
    let (sent, rx) = run_probes(&topo, FULL_PAYLOAD, pps, count)?;
    let max_queue_packets = topo.link_stats().0.max_queue_packets;
    topo.shutdown()?;
    let rate = match (rx.first(), rx.last()) {
        (Some(a), Some(b)) if b.rx_ns > a.rx_ns => {
            (rx.len() - 1) as f64 / ((b.rx_ns - a.rx_ns) as f64 / 1e9)
        }
        _ => 0.0,
    };
    let gbps = rate * IP_BITS / 1e9;
    Ok(ThroughputFigure {
        pps: rate,
        gbps,
        reaches_1_gbps: gbps >= 1.0,
        sent,
        received: rx.len(),
        max_queue_packets,
    })
}

/// Runs every measurement (about a minute; `quick` well under 30 s).
pub fn run(opts: BenchOptions) -> Result<EmuBench, EmuError> {
    let rates = [1_000_000u64, 10_000_000, 100_000_000, 1_000_000_000];
    let rate = rates
        .iter()
        .map(|&r| rate_figure(r, opts))
        .collect::<Result<Vec<_>, _>>()?;
    let mut delay = Vec::new();
    for wait in [WaitMode::Sleep, WaitMode::Spin] {
        delay.push(delay_figure(0, wait, opts.quick)?);
        delay.push(delay_figure(15, wait, opts.quick)?);
    }
    let (gp, gr, gh, target) = (0.00125, 0.125, 0.5, 0.05);
    let gk = netem::loss::gilbert_elliott_k_for_target(gp, gr, gh, target)
        .map_err(|e| EmuError::Unsupported(e.to_string()))?;
    let loss = vec![
        loss_figure(
            "Bernoulli 1%",
            LossConfig::Bernoulli { p: 0.01 },
            0.01,
            opts,
        )?,
        loss_figure(
            "Bernoulli 5%",
            LossConfig::Bernoulli { p: 0.05 },
            0.05,
            opts,
        )?,
        loss_figure(
            "Gilbert-Elliott 5% (p=0.00125 r=0.125 h=0.5)",
            LossConfig::GilbertElliott {
                p: gp,
                r: gr,
                k: gk,
                h: gh,
            },
            netem::loss::gilbert_elliott_mean_loss(gp, gr, gk, gh),
            opts,
        )?,
    ];
    let throughput = throughput_figure(opts, QdiscConfig::DropTail)?;
    let throughput_fq_codel =
        throughput_figure(opts, QdiscConfig::FqCodel(FqCodelConfig::default()))?;
    Ok(EmuBench {
        rate,
        delay,
        loss,
        throughput,
        throughput_fq_codel,
    })
}
fn mark(ok: bool) -> &'static str {
    if ok {
        "ok"
    } else {
        "MISSED"
    }
}

/// The measurements as one text table: measurement, configured, measured, target, verdict.
pub fn render_text(b: &EmuBench) -> String {
    use std::fmt::Write;

    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<52} {:>14} {:>32} {:>14} {:>7}",
        "measurement", "configured", "measured", "target", "verdict"
    );
    for r in &b.rate {
        let _ = writeln!(
            s,
            "{:<52} {:>14} {:>32} {:>14} {:>7}",
            "UDP rate (1500 B packets)",
            units::si(r.configured_bps, "bit/s"),
            format!(
                "{} ({:.2}%)",
                units::si(r.achieved_bps, "bit/s"),
                100.0 * r.ratio
            ),
            "within 2%",
            mark(r.within_2_percent)
        );
    }
    for d in &b.delay {
        let _ = writeln!(
            s,
            "{:<52} {:>14} {:>32} {:>14} {:>7}",
            format!("one-way delay error, {} ({:?})", d.label, d.wait).to_lowercase(),
            format!("{} ms", d.configured_ms),
            format!(
                "p50 {:.0} p99 {:.0} p99.9 {:.0} µs",
                d.p50_us, d.p99_us, d.p999_us
            ),
            "p99 ≤ 200 µs",
            if d.configured_ms == 0.0 {
                "-"
            } else {
                mark(d.p99_within_200us)
            }
        );
        let _ = writeln!(
            s,
            "{:<52} {:>14} {:>32}",
            "  of which forwarder release lateness",
            "",
            format!(
                "p50 {:.0} p99 {:.0} p99.9 {:.0} µs",
                d.forwarder_lateness_us[0], d.forwarder_lateness_us[1], d.forwarder_lateness_us[2]
            ),
        );
    }
    for l in &b.loss {
        let _ = writeln!(
            s,
            "{:<52} {:>14} {:>32} {:>14} {:>7}",
            format!("loss, {}", l.model),
            format!("{:.3}%", 100.0 * l.configured),
            format!(
                "{:.3}% (CI {:.2}–{:.2}%)",
                100.0 * l.measured,
                100.0 * l.interval.0,
                100.0 * l.interval.1
            ),
            "inside 95% CI",
            mark(l.inside)
        );
    }
    for (label, t) in [
        ("max forwarding rate (1 ms delay, model on)", &b.throughput),
        (
            "  FQ-CoDel active (3 Gbit/s serializer)",
            &b.throughput_fq_codel,
        ),
    ] {
        let _ = writeln!(
            s,
            "{:<52} {:>14} {:>32} {:>14} {:>7}",
            format!("{label}, queue ≤ {} pkt", t.max_queue_packets),
            "unlimited",
            format!("{} ({:.2} Gbit/s)", units::si(t.pps, "pkt/s"), t.gbps),
            "≥ 1 Gbit/s",
            mark(t.reaches_1_gbps)
        );
    }
    s
}
