//! Queue limit expressions (`"25pkt"`, `"64KB"`, `"1.5bdp+5pkt"`, `"unlimited"`) and their
//! resolution once the link rate and the path's base RTT are known.

use std::time::Duration;

use netem::config::QueueLimit;

use crate::units::{parse_packets, parse_size, UnitError};

/// A parsed queue expression: the sum of its terms, still in mixed units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct QueueSpec {
    /// `"unlimited"`: no limit at all.
    pub unlimited: bool,
    /// Sum of the `pkt` terms.
    pub packets: u64,
    /// Sum of the byte terms.
    pub bytes: u64,
    /// Sum of the `bdp` multiples.
    pub bdp: f64,
}

/// Parses a queue expression; a bare number is rejected because packets and bytes are both
/// plausible readings of it.
pub(crate) fn parse_queue(text: &str) -> Result<QueueSpec, UnitError> {
    let mut spec = QueueSpec {
        unlimited: false,
        packets: 0,
        bytes: 0,
        bdp: 0.0,
    };
    if text.trim().eq_ignore_ascii_case("unlimited") {
        spec.unlimited = true;
        return Ok(spec);
    }
    for term in text.split('+').map(str::trim) {
        if let Some(num) = term
            .strip_suffix("bdp")
            .or_else(|| term.strip_suffix("BDP"))
        {
            let m: f64 = num.trim().parse().map_err(|_| {
                UnitError(format!("{term:?} is not a BDP multiple (e.g. \"1.5bdp\")"))
            })?;
            if !(m.is_finite() && m >= 0.0) {
                return Err(UnitError(format!(
                    "{term:?}: the BDP multiple must be positive"
                )));
            }
            spec.bdp += m;
        } else if term.ends_with("pkt") || term.ends_with("pkts") || term.ends_with("packets") {
            spec.packets = spec.packets.saturating_add(parse_packets(term)?);
        } else if term
            .trim_start_matches(|c: char| c.is_ascii_digit() || c == '.')
            .trim()
            .is_empty()
        {
            return Err(UnitError(format!(
                "{term:?} needs a unit: pkt, B/KB/MB or bdp (e.g. \"25pkt\", \"1bdp\")"
            )));
        } else {
            let bytes = parse_size(term).map_err(|e| {
                UnitError(format!(
                    "{e}; queue terms are pkt, B/KB/MB or bdp, joined with +"
                ))
            })?;
            spec.bytes = spec.bytes.saturating_add(bytes);
        }
    }
    Ok(spec)
}

/// Bandwidth-delay product in bytes: `rate × base_rtt / 8`.
pub(crate) fn bdp_bytes(rate_bps: u64, base_rtt: Duration) -> u64 {
    let bits = u128::from(rate_bps) * base_rtt.as_nanos() / 1_000_000_000;
    u64::try_from(bits / 8).unwrap_or(u64::MAX)
}

impl QueueSpec {
    /// The limit for a link of `rate_bps` (`None` = unlimited rate) on a path with `base_rtt`.
    ///
    /// Only packet terms give a packet limit; anything with bytes or BDP gives a byte limit in
    /// which packet terms count `mtu` bytes each. A BDP term on an unlimited link is an
    /// unlimited queue (the product is infinite).
    pub(crate) fn resolve(
        &self,
        rate_bps: Option<u64>,
        base_rtt: Duration,
        mtu: u64,
    ) -> QueueLimit {
        let unlimited = QueueLimit {
            packets: None,
            bytes: None,
        };
        if self.unlimited || (self.bdp > 0.0 && rate_bps.is_none()) {
            return unlimited;
        }
        if self.bytes == 0 && self.bdp == 0.0 {
            return QueueLimit {
                packets: Some(self.packets),
                bytes: None,
            };
        }
        let bdp = rate_bps.map_or(0, |r| bdp_bytes(r, base_rtt));
        let from_bdp = (self.bdp * bdp as f64).round() as u64;
        let bytes = self
            .bytes
            .saturating_add(from_bdp)
            .saturating_add(self.packets.saturating_mul(mtu));
        QueueLimit {
            packets: None,
            bytes: Some(bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RTT: Duration = Duration::from_millis(30);

    #[test]
    fn packets_only_is_a_packet_limit() {
        let q = parse_queue("25pkt").expect("valid");
        assert_eq!(
            q.resolve(Some(10_000_000), RTT, 1500),
            QueueLimit {
                packets: Some(25),
                bytes: None
            }
        );
    }

    #[test]
    fn one_bdp_of_the_interop_path_is_25_full_packets() {
        let q = parse_queue("1bdp").expect("valid");
        // 10 Mbit/s × 30 ms = 37,500 B = 25 × 1500 B.
        assert_eq!(
            q.resolve(Some(10_000_000), RTT, 1500),
            QueueLimit {
                packets: None,
                bytes: Some(37_500)
            }
        );
    }

    #[test]
    fn mixed_terms_add_up_in_bytes() {
        let q = parse_queue("1.5bdp + 5pkt").expect("valid");
        let want = 56_250 + 5 * 1500;
        assert_eq!(
            q.resolve(Some(10_000_000), RTT, 1500),
            QueueLimit {
                packets: None,
                bytes: Some(want)
            }
        );
        let q = parse_queue("64KB").expect("valid");
        assert_eq!(
            q.resolve(None, RTT, 1500),
            QueueLimit {
                packets: None,
                bytes: Some(64_000)
            }
        );
    }

    #[test]
    fn bdp_of_an_unlimited_link_is_unlimited() {
        let q = parse_queue("1bdp").expect("valid");
        assert_eq!(
            q.resolve(None, RTT, 1500),
            QueueLimit {
                packets: None,
                bytes: None
            }
        );
        let q = parse_queue("unlimited").expect("valid");
        assert_eq!(
            q.resolve(Some(1), RTT, 1500),
            QueueLimit {
                packets: None,
                bytes: None
            }
        );
    }

    #[test]
    fn bad_expressions() {
        for bad in ["25", "1.5", "xbdp", "5pkt+", "10 furlongs", "-1bdp"] {
            assert!(parse_queue(bad).is_err(), "{bad} should be rejected");
        }
    }
}
