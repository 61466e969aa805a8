//! The knobs both QUIC stacks share: quinn ([`QuicKnobs`](crate::quic::QuicKnobs)) and the
//! research model ([`QuicModelKnobs`](crate::quicmodel::QuicModelKnobs)) embed one
//! [`QuicCommonKnobs`], flattened, so each field is the scenario key `flow.<field>` of both
//! stacks and means the same in each (the two stacks can be configured alike and
//! cross-checked).

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// QUIC knobs with one meaning in both QUIC stacks. Serialized field names are the scenario
/// keys (`flow.<field>`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct QuicCommonKnobs {
    /// RTT estimate before the first sample (RFC 9002: 333 ms).
    pub initial_rtt: Duration,
    /// Per-stream receive window (bytes): the initial MAX_STREAM_DATA, and the window kept
    /// open ahead of the consumed offset afterwards.
    pub stream_window: u64,
    /// Connection receive window (bytes): the initial MAX_DATA, and the window kept open.
    pub conn_window: u64,
    /// The data sender's buffer (bytes): unacknowledged plus unsent stream data it holds.
    pub send_window: u64,
    /// ACK ratio 1:n the data sender requests with an ACK_FREQUENCY frame (draft
    /// ietf-quic-ack-frequency); `None`: no request (quinn acknowledges every second
    /// ack-eliciting packet, the model's receiver uses its `receiver_ack_ratio`).
    pub ack_ratio: Option<u32>,
    /// Max ACK delay the data sender requests with an ACK_FREQUENCY frame; `None`: no request
    /// (quinn: 25 ms, the model's receiver uses its `ack_delay`).
    pub max_ack_delay: Option<Duration>,
    /// Resume the second and later connections of a download with 0-RTT.
    pub zero_rtt: bool,
    /// Address-validation tokens (RFC 9000 §8.1.3): the server sends NEW_TOKEN frames once it
    /// has validated the client's address, and the client presents one in the Initial of its
    /// next connection, so the server may send more than three times the bytes it received
    /// before the handshake completes. On by default, as quinn with its default features
    /// (two tokens per connection, a token log against replay, a client token cache) and
    /// Chrome's QUIC stack (google/quiche's server issues address tokens in NEW_TOKEN, its
    /// client presents them). The model puts no NEW_TOKEN frames on the wire (quinn's two
    /// frames are about 100 bytes): its server starts with the address validated.
    #[serde(default = "default_true")]
    pub address_token: bool,
    /// ECN (RFC 9000 §13.4): packets leave ECT(0), the receiver counts the codepoints it gets
    /// and reports them in ACK_ECN frames, and the sender validates the counts and treats a
    /// rise in CE as a congestion event. Off: packets leave Not-ECT and ACKs carry no counts.
    /// quinn itself always tries ECN where its socket can; off is the default here so that a
    /// path without an ECN-marking queue behaves as before and the other stacks match.
    #[serde(default)]
    pub ecn: bool,
}

/// serde's default of knobs that are on unless set (knob tables written before they existed).
fn default_true() -> bool {
    true
}

impl Default for QuicCommonKnobs {
    /// quinn's 333 ms initial RTT, windows generous enough (16 MB per stream, 24 MB per
    /// connection, 32 MB send buffer) to limit only when set, no ACK_FREQUENCY request, no
    /// 0-RTT, address tokens on, no ECN.
    fn default() -> Self {
        QuicCommonKnobs {
            initial_rtt: Duration::from_millis(333),
            stream_window: 16_000_000,
            conn_window: 24_000_000,
            send_window: 32_000_000,
            ack_ratio: None,
            max_ack_delay: None,
            zero_rtt: false,
            address_token: true,
            ecn: false,
        }
    }
}
