//! What BBR v1 ([`crate::bbr`]) and BBRv3 ([`crate::bbr3`]) share: Linux's fixed-point units,
//! the windowed maximum filter, the pacing-rate and send-quantum (TSO goal) arithmetic, the
//! BDP, the in-network estimate at the next departure time and the seeded random stream.
//!
//! Units as Linux's `tcp_bbr.c`: windows in packets, bandwidth in packets per µs scaled by
//! 2^24, gains scaled by 256, times in µs.

pub(crate) mod filter;

use std::time::Duration;

/// Bandwidth fixed point: packets per µs scaled by 2^24.
pub(crate) const BW_SCALE: u32 = 24;
pub(crate) const BW_UNIT: u64 = 1 << BW_SCALE;
/// Gain fixed point: 256 = 1.0.
pub(crate) const BBR_SCALE: u32 = 8;
pub(crate) const BBR_UNIT: u64 = 1 << BBR_SCALE;
/// Pace 1% below the estimate, to drain queues at the bottleneck.
const PACING_MARGIN_PERCENT: u64 = 1;
/// Below this pacing rate (bit/s) the TSO goal is one segment.
const MIN_TSO_RATE: u64 = 1_200_000;
/// Linux's default `sk_pacing_shift`: TSO bursts of about 1 ms at the pacing rate.
const PACING_SHIFT: u32 = 10;
/// GSO_LEGACY_MAX_SIZE − 1 − MAX_TCP_HEADER (320 bytes on x86-64).
const TSO_MAX_BYTES: u64 = 65_536 - 1 - 320;
/// The TSO goal's ceiling, in segments.
const TSO_MAX_SEGS: u64 = 0x7F;

/// Whole microseconds.
pub(crate) fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// Whole milliseconds.
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// `rate` (packets/µs · 2^24) of `mss`-byte packets times `gain`, in bytes per second, 1%
/// below (the pacing margin).
pub(crate) fn rate_bytes_per_sec(rate: u64, mss: u64, gain: u64) -> u64 {
    let mut r = u128::from(rate) * u128::from(mss);
    r *= u128::from(gain);
    r >>= BBR_SCALE;
    r *= u128::from(1_000_000 / 100 * (100 - PACING_MARGIN_PERCENT));
    u64::try_from(r >> BW_SCALE).unwrap_or(u64::MAX)
}

/// The nominal bandwidth of `cwnd` packets per `rtt_us`, in BBR's units (the initial pacing
/// rate's base before any bandwidth sample).
pub(crate) fn window_per_rtt(cwnd: u64, rtt_us: u64) -> u64 {
    cwnd * BW_UNIT / rtt_us.max(1)
}

/// Segments per TSO burst (BBR's send quantum): about 1 ms at the pacing rate (bytes per
/// second), at least 2 segments (1 below 1.2 Mbit/s), at most 127 and 64 KiB − 321 bytes.
pub(crate) fn tso_segs_goal(pacing_rate: u64, mss: u64) -> u64 {
    let min_segs = if pacing_rate < (MIN_TSO_RATE >> 3) {
        1
    } else {
        2
    };
    let bytes = (pacing_rate >> PACING_SHIFT).min(TSO_MAX_BYTES);
    (bytes / mss.max(1)).max(min_segs).min(TSO_MAX_SEGS)
}

/// ⌈bw · min_rtt · gain⌉ in packets; `fallback` before any RTT sample.
pub(crate) fn bdp(bw: u64, min_rtt_us: Option<u64>, gain: u64, fallback: u64) -> u64 {
    let Some(min_rtt) = min_rtt_us else {
        return fallback;
    };
    let w = u128::from(bw) * u128::from(min_rtt);
    let bdp = ((w * u128::from(gain)) >> BBR_SCALE).div_ceil(u128::from(BW_UNIT));
    u64::try_from(bdp).unwrap_or(u64::MAX)
}

/// Packets `bw` delivers in `us` microseconds (rounded down).
pub(crate) fn packets_in(bw: u64, us: u64) -> u64 {
    u64::try_from((u128::from(bw) * u128::from(us)) >> BW_SCALE).unwrap_or(u64::MAX)
}

/// Packets still in the network when the next segment may leave: the pacing layer may hold
/// it back past `now` until `next_departure`, and meanwhile `bw` drains the network.
/// `departing`: packets of the segment leaving at that time to count in (a TSO goal while
/// the gain raises in-flight data, else 0).
pub(crate) fn packets_in_net_at_edt(
    now: Duration,
    next_departure: Duration,
    bw: u64,
    inflight_now: u64,
    departing: u64,
) -> u64 {
    let edt = next_departure.max(now);
    let interval_delivered = packets_in(bw, micros(edt - now));
    (inflight_now + departing).saturating_sub(interval_delivered)
}

/// A deterministic random stream from the controller's seed (SplitMix64), so a run stays a
/// pure function of the run seed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SeededRng(u64);

impl SeededRng {
    pub(crate) fn new(seed: u64) -> Self {
        SeededRng(seed)
    }

    /// The next 32 random bits.
    pub(crate) fn next_u32(&mut self) -> u32 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 32) as u32
    }

    /// Uniform in `0..n` the way Linux's `prandom_u32_max` maps a 32-bit draw.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        (u64::from(self.next_u32()) * n) >> 32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 45 packets per 10 ms of 1000 B at gain 1 is 4.5 MB/s, paced 1% below; its TSO goal
    /// is 4.455 MB/s >> 10 = 4350 B = 4 segments (the fixed point rounds the rate down).
    #[test]
    fn rates_bdp_and_send_quantum() {
        let bw = 45 * BW_UNIT / 10_000;
        assert_eq!(rate_bytes_per_sec(bw, 1000, BBR_UNIT), 4_454_972);
        assert_eq!(tso_segs_goal(4_454_972, 1000), 4);
        assert_eq!(tso_segs_goal(100_000, 1000), 1, "below 1.2 Mbit/s");
        assert_eq!(bdp(bw, Some(10_000), BBR_UNIT, 10), 45);
        assert_eq!(bdp(bw, Some(10_000), BBR_UNIT / 2, 10), 23, "rounded up");
        assert_eq!(bdp(bw, None, BBR_UNIT, 10), 10);
        // 2 ms until the next departure drain 8 of 30 packets (9 less the fixed point's
        // rounding down).
        let ms = Duration::from_millis(1);
        assert_eq!(packets_in_net_at_edt(ms, 3 * ms, bw, 30, 0), 22);
        assert_eq!(packets_in_net_at_edt(3 * ms, ms, bw, 30, 2), 32);
    }

    #[test]
    fn the_random_stream_is_a_function_of_the_seed() {
        let draws = |seed| {
            let mut r = SeededRng::new(seed);
            (0..8).map(|_| r.below(7)).collect::<Vec<_>>()
        };
        assert_eq!(draws(1), draws(1));
        assert_ne!(draws(1), draws(2));
        assert!(draws(3).iter().all(|&d| d < 7));
    }
}
