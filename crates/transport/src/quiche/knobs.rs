//! The knobs of a quiche flow (`stack = "quiche"`): the scenario keys quiche can honour.
//! Serialized field names are the keys (`flow.<field>`), and each means what it means for
//! quinn; keys quiche has no equivalent for are refused by the scenario resolver.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::quic_common::QuicCommonKnobs;
use netem::wire::IPV4_UDP_OVERHEAD;

/// Smallest IP MTU: 1200 B of UDP payload (RFC 9000 §14) plus 28 B of IPv4 and UDP headers.
pub const MIN_MTU: u16 = 1228;
/// Largest IP MTU: quiche's largest UDP payload is its 65527-byte receive limit (RFC 9000's
/// max_udp_payload_size bound), and the IPv4 Total Length caps the datagram at 65535 B.
pub const MAX_MTU: u16 = 65_535;

/// quiche's knobs. Defaults match quinn's stack ([`QuicCommonKnobs`]), so the same scenario
/// configures both alike.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuicheKnobs {
    /// IP MTU of the path; the max UDP payload is `mtu - 28` (IPv4 + UDP headers), sent and
    /// accepted.
    pub mtu: u16,
    /// Let quiche probe for a larger MTU (DPLPMTUD, `Config::discover_pmtu`).
    pub mtu_discovery: bool,
    /// RTT estimate before the first sample (`Config::set_initial_rtt`).
    pub initial_rtt: Duration,
    /// Per-stream receive window (bytes): the initial MAX_STREAM_DATA and quiche's largest
    /// stream window (its window auto-tuning cannot grow past it).
    pub stream_window: u64,
    /// Connection receive window (bytes): the initial MAX_DATA and quiche's largest
    /// connection window.
    pub conn_window: u64,
    /// Resume the second and later connections of a download with 0-RTT (a session ticket
    /// from the previous connection, early data enabled on both ends).
    pub zero_rtt: bool,
    /// The max_ack_delay transport parameter both ends advertise, in whole milliseconds
    /// (`None`: quiche's 25 ms). quiche has no ACK_FREQUENCY frame: its receiver acknowledges
    /// at once anyway, and the sender adds this to its probe timeout, as quinn's sender does
    /// with the delay it requests.
    #[serde(default)]
    pub max_ack_delay: Option<Duration>,
}

impl Default for QuicheKnobs {
    /// A 1500-byte MTU, no MTU discovery, and quinn's common defaults (333 ms initial RTT,
    /// 16 MB stream and 24 MB connection windows, no 0-RTT).
    fn default() -> Self {
        let common = QuicCommonKnobs::default();
        QuicheKnobs {
            mtu: 1500,
            mtu_discovery: false,
            initial_rtt: common.initial_rtt,
            stream_window: common.stream_window,
            conn_window: common.conn_window,
            zero_rtt: common.zero_rtt,
            max_ack_delay: common.max_ack_delay,
        }
    }
}

/// A knob value quiche cannot run with, named by its scenario key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("flow.{field}: {message}")]
pub struct QuicheKnobError {
    /// The knob's field (its scenario key without `flow.`).
    pub field: &'static str,
    /// Why the value is refused.
    pub message: String,
}

/// Largest QUIC varint (RFC 9000 §16): the largest window a transport parameter can carry.
const MAX_VARINT: u64 = (1 << 62) - 1;

impl QuicheKnobs {
    /// Largest UDP payload: the IP MTU less the IPv4 and UDP headers.
    pub fn max_udp_payload(&self) -> usize {
        usize::from(self.mtu.saturating_sub(IPV4_UDP_OVERHEAD as u16))
    }

    /// The bounds quiche needs, for the scenario resolver and the flow itself.
    pub fn validate(&self) -> Result<(), QuicheKnobError> {
        if !(MIN_MTU..=MAX_MTU).contains(&self.mtu) {
            return Err(QuicheKnobError {
                field: "mtu",
                message: format!(
                    "{} is not within {MIN_MTU} and {MAX_MTU} (QUIC needs 1200-byte UDP payloads; IPv4 caps a datagram at 65535 B)",
                    self.mtu
                ),
            });
        }
        for (field, v) in [
            ("stream_window", self.stream_window),
            ("conn_window", self.conn_window),
        ] {
            if v == 0 || v > MAX_VARINT {
                return Err(QuicheKnobError {
                    field,
                    message: format!(
                        "{v} B is not within 1 B and 2^62 − 1 B (the largest QUIC varint)"
                    ),
                });
            }
        }
        if let Some(d) = self.max_ack_delay {
            if d.subsec_nanos() % 1_000_000 != 0 || d >= Duration::from_millis(1 << 14) {
                return Err(QuicheKnobError {
                    field: "max_ack_delay",
                    message: format!(
                        "{d:?}: quiche advertises whole milliseconds below 16384 ms (RFC 9000's limit)"
                    ),
                });
            }
        }
        if self.initial_rtt.is_zero() {
            return Err(QuicheKnobError {
                field: "initial_rtt",
                message: "must be above zero".into(),
            });
        }
        Ok(())
    }
}
