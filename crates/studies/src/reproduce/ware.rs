//! Ware et al.'s model of one BBR flow's share against loss-based flows (IMC 2019, "Modeling
//! BBR's Interactions with Loss-Based Congestion Control", §4), the prediction the
//! bbr-coexistence study is read against.
//!
//! In a buffer of X bandwidth-delay products, BBR is held by its in-flight cap (twice its
//! estimate of the BDP, which the loss-based flows' standing queue inflates), not by its rate.
//! The model gives the loss-based flows' fraction of the link as p = ½ − 1/(2X) − 4N/q (N BBR
//! flows, q the buffer in packets), so BBR has 1 − p of it while it is not in PROBE_RTT. Every
//! 10 s BBR spends q/c + 200 ms + l in PROBE_RTT (the queue drains, then 200 ms at four
//! packets, then one round trip; c the link in packets per second, l the base RTT), sending
//! next to nothing. The share does not depend on the number of loss-based flows.

use std::time::Duration;

/// BBR's PROBE_RTT period: how often its min-RTT estimate expires.
const PROBE_RTT_INTERVAL_S: f64 = 10.0;
/// Time BBR holds four packets in flight in PROBE_RTT.
const PROBE_RTT_HOLD_S: f64 = 0.2;

/// A bottleneck as the model sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Path {
    /// Link rate, bit/s.
    pub rate_bps: f64,
    /// Base round-trip time.
    pub rtt: Duration,
    /// Packet size on the wire, bytes.
    pub packet_bytes: f64,
}

impl Path {
    /// Packets per second the link carries (c).
    fn packets_per_s(&self) -> f64 {
        self.rate_bps / 8.0 / self.packet_bytes
    }

    /// One bandwidth-delay product in packets.
    fn bdp_packets(&self) -> f64 {
        self.packets_per_s() * self.rtt.as_secs_f64()
    }
}

/// The fraction of the link the model gives `bbr_flows` BBR flows together in a buffer of
/// `buffer_bdp` BDPs, clipped to [0, 1]; `None` for a buffer of no size.
pub fn bbr_share(path: &Path, buffer_bdp: f64, bbr_flows: u32) -> Option<f64> {
    if buffer_bdp <= 0.0 || !buffer_bdp.is_finite() {
        return None;
    }
    let c = path.packets_per_s();
    let q = buffer_bdp * path.bdp_packets();
    let l = path.rtt.as_secs_f64();
    let loss_based = 0.5 - 1.0 / (2.0 * buffer_bdp) - 4.0 * f64::from(bbr_flows) / q;
    let probing = (q / c + PROBE_RTT_HOLD_S + l) / PROBE_RTT_INTERVAL_S;
    Some(((1.0 - loss_based).min(1.0) * (1.0 - probing)).clamp(0.0, 1.0))
}

/// The bbr-coexistence study's path: 10 Mbit/s, 40 ms, 1500-byte packets (the paper's Fig. 2
/// and 8a).
pub const STUDY_PATH: Path = Path {
    rate_bps: 10e6,
    rtt: Duration::from_millis(40),
    packet_bytes: 1500.0,
};

/// The model's BBR share on the study's path for a `link.queue` value such as `"8bdp"`.
pub fn study_prediction(x: &str) -> Option<f64> {
    let bdp: f64 = x.strip_suffix("bdp")?.parse().ok()?;
    bbr_share(&STUDY_PATH, bdp, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_buffers_leave_bbr_about_half_less_its_probe_rtt_time() {
        // 64 BDP: p = ½ − 1/128 − 4/2133.3; PROBE_RTT (2.56 + 0.2 + 0.04) s of every 10 s.
        let q = 64.0 * 10e6 / 8.0 / 1500.0 * 0.04;
        let p = 0.5 - 1.0 / 128.0 - 4.0 / q;
        let want = (1.0 - p) * (1.0 - (q / (10e6 / 12000.0) + 0.24) / 10.0);
        let got = study_prediction("64bdp").expect("a buffer");
        assert!((got - want).abs() < 1e-12, "{got} vs {want}");
        assert!((0.35..0.40).contains(&got), "{got}");
    }

    #[test]
    fn shallow_buffers_give_bbr_the_link_but_its_probe_rtt_time() {
        // 1 BDP: p < 0, so BBR's share is capped at the whole link.
        let got = study_prediction("1bdp").expect("a buffer");
        let probing = (33.333_333 / 833.333_333 + 0.24) / 10.0;
        assert!((got - (1.0 - probing)).abs() < 1e-6, "{got}");
    }

    #[test]
    fn the_share_falls_as_the_buffer_grows() {
        let xs = ["2bdp", "4bdp", "8bdp", "16bdp", "32bdp"];
        let shares: Vec<f64> = xs.iter().filter_map(|x| study_prediction(x)).collect();
        assert_eq!(shares.len(), xs.len());
        assert!(shares.windows(2).all(|w| w[1] < w[0]), "{shares:?}");
        assert_eq!(study_prediction("deep"), None);
        assert_eq!(study_prediction("0bdp"), None);
    }
}
