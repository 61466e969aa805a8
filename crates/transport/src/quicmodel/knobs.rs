//! Knobs of the QUIC research model. Serialized field names are the scenario keys
//! (`flow.<field>`); `mtu` and the [`QuicCommonKnobs`] it shares with the quinn stack mean the
//! same thing in both, so the two stacks can be configured alike and cross-checked.
//!
//! Defaults are quinn's behaviour (so `stack = "quic-model"` with no other key is comparable to
//! `stack = "quic"`); INET's and ModQUIC's behaviour are one or two keys away (see each field).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::quic_common::QuicCommonKnobs;

/// How the data receiver grants flow-control credit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FcUpdate {
    /// Send MAX_DATA / MAX_STREAM_DATA once the application has consumed `fc_threshold` of the
    /// window since the last update (quinn: 1/8; INET: 1/2).
    Threshold,
    /// Attach fresh MAX_DATA / MAX_STREAM_DATA to every ACK (ModQUIC).
    EveryAck,
}

choice::names!(FcUpdate { Threshold = "threshold", EveryAck = "every-ack" });

/// Which stream's data goes into the next packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StreamScheduler {
    /// One packet's worth per stream in turn (quinn's default fairness).
    RoundRobin,
    /// The lowest open stream until it has nothing left to send.
    Fifo,
}

choice::names!(StreamScheduler { RoundRobin = "round-robin", Fifo = "fifo" });

/// QUIC research-model knobs. Serialized field names are the scenario keys (`flow.<field>`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuicModelKnobs {
    /// IP MTU of the path (bytes); the largest UDP payload is `mtu − 28`.
    pub mtu: u16,
    /// The knobs the model shares with quinn (`flow.initial_rtt`, the windows, ACK frequency,
    /// 0-RTT, address tokens). Its windows are kept open ahead of the consumed offset (grown by
    /// auto-tuning if on).
    #[serde(flatten)]
    pub common: QuicCommonKnobs,
    /// The receiver's own ACK ratio: ACK at once after this many ack-eliciting packets
    /// (RFC 9000 §13.2.2 and quinn: 2; INET's `numReceivedAckElicitingsBeforeAck`).
    pub receiver_ack_ratio: u32,
    /// The receiver's ACK timer: an ack-eliciting packet is acknowledged at most this late
    /// (quinn and RFC 9000's max_ack_delay: 25 ms).
    pub ack_delay: Duration,
    /// ACK at once when a packet arrives out of order or fills a gap (RFC 9000 §13.2.1). When
    /// the sender requests an ACK frequency it sends, as quinn, a reordering threshold of 2
    /// (ACK at once only when the gap lets it declare a loss), or 0 with this off.
    pub ack_on_reorder: bool,
    /// Acknowledge non-ack-eliciting packets (the data receiver's ACKs) in every
    /// ack-eliciting packet sent anyway (INET's `bundleAckForNonAckElicitingPackets`); off: as
    /// quinn, at most once per RTT + max ACK delay. They never trigger an ACK on their own.
    pub bundle_acks: bool,
    /// The I-bit: the sender marks the last packet it can send before it becomes congestion-
    /// or flow-control-blocked, and the receiver acknowledges a marked packet at once.
    pub ibit: bool,
    /// When the receiver grants credit: `threshold` or `every-ack`.
    pub fc_update: FcUpdate,
    /// threshold: fraction of the window the application must consume before an update
    /// (quinn 0.125, INET 0.5).
    pub fc_threshold: f64,
    /// threshold: send the update in a packet of its own at once (quinn) rather than
    /// piggy-backed on the next packet that goes out anyway (INET's default).
    pub fc_immediate: bool,
    /// Receive-window auto-tuning: double a window (up to 16× its initial value) when it is
    /// consumed in less than two RTTs.
    pub window_autotuning: bool,
    /// Stream scheduler of the sender.
    pub scheduler: StreamScheduler,
    /// Send-queue limit (bytes): the application stops writing when this much data is written
    /// but not yet acknowledged (INET's `sendQueueLimit`); `None`: only `send_window` limits.
    pub send_queue_limit: Option<u64>,
    /// The application resumes writing when acknowledgements drain the queue below this
    /// fraction of the limit (INET's `sendQueueLowWaterRatio`: 0.4).
    pub send_queue_low_water: f64,
    /// On entering a recovery period, send one packet at once whatever the congestion window
    /// (RFC 9002 Appendix B.6's MaybeSendOnePacket; INET's NewReno); off: as quinn, nothing
    /// until the bytes in flight fall below the reduced window.
    pub send_one_on_loss: bool,
    /// Pace sending as quinn: 1.25·cwnd/sRTT with bursts of 2 ms at that rate (10 to 256
    /// packets); off: send whenever the window allows (INET).
    pub pacing: bool,
}

impl Default for QuicModelKnobs {
    /// quinn's behaviour: 1500-byte MTU, 333 ms initial RTT, quinn's windows, ACK every second
    /// ack-eliciting packet or after 25 ms, credit every 1/8 window sent at once, round-robin
    /// streams, pacing on, no I-bit, no send-queue limit, no extra packet on entering recovery.
    fn default() -> Self {
        QuicModelKnobs {
            mtu: 1500,
            common: QuicCommonKnobs::default(),
            receiver_ack_ratio: 2,
            ack_delay: Duration::from_millis(25),
            ack_on_reorder: true,
            bundle_acks: false,
            ibit: false,
            fc_update: FcUpdate::Threshold,
            fc_threshold: 0.125,
            fc_immediate: true,
            window_autotuning: false,
            scheduler: StreamScheduler::RoundRobin,
            send_queue_limit: None,
            send_queue_low_water: 0.4,
            send_one_on_loss: false,
            pacing: true,
        }
    }
}
