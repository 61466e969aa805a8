//! The QUIC research model (`stack = "quic-model"`): a sans-IO QUIC transport with the knobs of
//! INET's QUIC module and ModQUIC that no production stack exposes (receiver ACK ratio and
//! timer, the I-bit, flow-control update policies, stream scheduler, send-queue limit), shaped
//! like the TCP model and implementing [`FlowAgent`](crate::agent::FlowAgent).
//!
//! No cryptography, but real sizes on the wire (see [`wire`]), so link accounting matches quinn
//! where both are configured alike. Semantics: RFC 9000 (packet-number spaces, ACK frames with
//! ranges and ACK delay, streams with stream and connection flow control, retransmission of
//! frames, never of packets), RFC 9002 (loss detection, PTO with backoff, persistent
//! congestion, RTT estimation), draft-ietf-quic-ack-frequency (ACK_FREQUENCY), quinn's pacer and
//! quinn's handshake flight sizes; congestion control is the shared `congestion` crate.
//!
//! Layers, bottom up, one job each: [`wire`] (frames, real sizes, the model's encoding),
//! `ranges` (range sets), `space` (packet-number spaces and sent-packet records), `ack` (the
//! receiver's ACK policy), `recovery` (RTT, loss detection, PTO, persistent congestion),
//! `pacing`, `flowctl` (receive credit and its update policies), `streams` (send and receive
//! halves, scheduler, send buffer and send-queue limit), `connection` (one endpoint: handshake,
//! packet assembly, timers), `app` (the workloads), `metrics` (one-way delay histogram) and
//! `flow` ([`QuicModelConnections`], both ends of every connection, driven by the shared
//! [`FlowDriver`](crate::driver::FlowDriver) as [`QuicModelFlow`]) and `qlog` (each
//! endpoint's qlog in quinn's schema, with its frames).
//!
//! # Against quinn (0.11, as quiclab configures it)
//!
//! Matched: the handshake's packet sizes (measured on quiclab's quinn, [`handshake_sizes`]: a
//! 278-byte ClientHello padded to the full datagram, the server's 1472-byte first flight, the client's
//! Finished, HANDSHAKE_DONE with two session tickets, four NEW_CONNECTION_IDs per side, 0-RTT
//! on resumption), the anti-amplification limit, packet-number lengths, STREAM frames without a
//! length field when they fill the packet, the request line `GET <n>\n` per stream, the ACK
//! policy (every second ack-eliciting packet, 25 ms timer, at once on reordering), bundling of
//! ACKs into data packets at most once per RTT + max_ack_delay, ACK_FREQUENCY (threshold n − 1,
//! requested delay min(configured, max(RTT, 25 ms)), reordering threshold 2, re-sent when the
//! delay moves by more than 20%), credit updates at 1/8 of the window sent at once, the send
//! buffer, the pacer, RFC 9002 loss detection, PTO and persistent congestion, probes exempt
//! from the window but paced, congestion events counted per loss batch, and the `congestion` crate's
//! controllers driven as quiclab's quinn adapter drives them.
//!
//! Different: the window gate lets a packet go while bytes in flight plus one full packet fit
//! the window (INET's rule); quinn needs them to stay strictly below it, one packet less when
//! the window is a whole number of packets. Only the data sender sends ACK_FREQUENCY. No
//! RETIRE_CONNECTION_ID exchange, no NEW_TOKEN, no key updates. Application data written
//! instantly (no 64 KiB write chunks).
//!
//! # BBR and BBRv3
//!
//! A controller that works from delivery-rate samples (its `uses_rate_samples`: BBR, BBRv3)
//! gets what the TCP model gives it, from the same sampler (`crate::rate`): a sample per ACK
//! frame after loss detection, with the recovery state (RFC 9002 §7.3.2's recovery period as
//! Recovery, an ECN-CE reduction as CWR, persistent congestion as a timeout's Loss, since that
//! is the TCP event it stands for), a report per packet declared lost, the transmission-start
//! event and application-limited marking; and 1-RTT packets are paced at its rate, one
//! departure time per packet (RFC 9002 §7.7 allows any pacer), where quinn's token bucket would
//! allow 2 ms bursts. Other controllers run exactly as without any of it. A QUIC sender's
//! samples differ from TCP's in three ways, handled so:
//!
//! - An ACK frame may acknowledge many packets in several ranges: it gives one sample, defined
//!   by the packet with the highest delivered count at its send, as a stretch ACK does in TCP.
//! - QUIC never reuses a packet number and cannot renege an acknowledgement: every sample is
//!   unambiguous (no retransmission flag) and TCP's SACK-reneging case never arises.
//! - The frame reports its ACK delay: a frame the receiver held is marked delayed, in place of
//!   Linux's guess from a lone runt segment; the sample's RTT stays the raw one, as RFC 9002's
//!   and Linux's minimum RTT are.
//!
//! The idle timeout is quinn's default (30 s, restarted by every packet received and the first
//! ack-eliciting packet sent after it); a connection that times out fails the flow with
//! `Client connection lost: timed out` (or `Server …`), as the quinn flow reports it.
//!
//! Not modelled: stream-count limits (MAX_STREAMS), connection migration, key updates, MTU
//! discovery, ECN, retry, version negotiation, cryptography.

mod ack;
mod app;
mod connection;
mod ecn;
mod flow;
mod flowctl;
mod knobs;
mod pacing;
mod qlog;
mod ranges;
mod recovery;
mod space;
mod streams;
pub mod wire;

use std::path::PathBuf;
use std::time::Duration;

use congestion::config::CcConfig;

pub use flow::{QuicModelConnections, QuicModelFlow};

/// The CRYPTO bytes of each handshake flight the model sends, `[full, resumed]` where the
/// flight differs on resumption (measured on quinn; a test checks them against quinn's pcap).
pub mod handshake_sizes {
    pub use super::connection::{
        CLIENT_FINISHED, CLIENT_HELLO, SERVER_HANDSHAKE, SERVER_HELLO, SESSION_TICKETS,
    };
}
pub use knobs::{FcUpdate, QuicModelKnobs, StreamScheduler};

use crate::cc_adapter::CcChoice;
use crate::flow::FlowPlan;
use netem::wire::IPV4_UDP_OVERHEAD;

/// Everything needed to build one flow of the model.
#[derive(Debug, Clone)]
pub struct QuicModelFlowConfig {
    /// Name, workload, start, stop and controller (ours only).
    pub plan: FlowPlan,
    /// The model's knobs.
    pub knobs: QuicModelKnobs,
    /// Seed of the controllers' random choices (BBR's gain-cycle phase, BBRv3's probe
    /// waits), from the run seed.
    pub seed: u64,
    /// Directory for one qlog file per connection and side (`<flow>-<side>-<n>.sqlog`).
    pub qlog_dir: Option<PathBuf>,
}

/// Errors building a flow.
#[derive(Debug, thiserror::Error)]
pub enum QuicModelFlowError {
    /// A knob outside what the model supports.
    #[error("{0}")]
    Invalid(String),
}

/// Smallest IP MTU: QUIC needs 1200-byte UDP payloads (RFC 9000 §14).
pub const MIN_MTU: u16 = 1200 + IPV4_UDP_OVERHEAD as u16;
/// Largest flow-control window or buffer (QUIC varints end at 2^62).
const MAX_WINDOW: u64 = (1 << 62) - 1;
/// RFC 9000 §18.2: max_ack_delay values of 2^14 ms or more are invalid.
const MAX_ACK_DELAY: Duration = Duration::from_millis(1 << 14);

/// Parameters both endpoints of a flow share, validated once.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Params {
    /// The knobs.
    pub knobs: QuicModelKnobs,
    /// Largest UDP payload.
    pub max_udp: u32,
    /// Congestion controller.
    pub cc: CcConfig,
    /// Seed of the controllers' random choices; each endpoint derives its own from it.
    pub seed: u64,
}

impl Params {
    /// Validates the knobs (messages name the scenario key and the allowed values).
    pub(crate) fn new(k: &QuicModelKnobs, cc: CcChoice) -> Result<Params, QuicModelFlowError> {
        let bad = |m: String| Err(QuicModelFlowError::Invalid(m));
        let CcChoice::Ours(cc) = cc else {
            return bad(
                "flow.cc: the quic-model stack uses quiclab's controllers (none, newreno, \
                 newreno-approx, reno-linux, cubic, cubic-hystart, bbr, bbr3…), not quinn's"
                    .into(),
            );
        };
        if k.mtu < MIN_MTU {
            return bad(format!(
                "flow.mtu = {}: the quic-model stack needs at least {MIN_MTU} (1200-byte UDP payloads)",
                k.mtu
            ));
        }
        for (name, v) in [
            ("flow.stream_window", k.common.stream_window),
            ("flow.conn_window", k.common.conn_window),
            ("flow.send_window", k.common.send_window),
        ] {
            if v == 0 || v > MAX_WINDOW {
                return bad(format!("{name} = {v}: allowed 1 ..= 2^62 − 1 bytes"));
            }
        }
        if k.common.initial_rtt.is_zero() {
            return bad("flow.initial_rtt must be positive".into());
        }
        if k.receiver_ack_ratio == 0 || k.common.ack_ratio == Some(0) {
            return bad("flow.receiver_ack_ratio / flow.ack_ratio: allowed 1 or more".into());
        }
        if k.ack_delay >= MAX_ACK_DELAY
            || k.common.max_ack_delay.is_some_and(|d| d >= MAX_ACK_DELAY)
        {
            return bad("flow.ack_delay / flow.max_ack_delay: allowed below 16.384 s".into());
        }
        if !(k.fc_threshold > 0.0 && k.fc_threshold <= 1.0) {
            return bad(format!(
                "flow.fc_threshold = {}: allowed 0 < fraction ≤ 1",
                k.fc_threshold
            ));
        }
        if !(0.0..1.0).contains(&k.send_queue_low_water) {
            return bad(format!(
                "flow.send_queue_low_water = {}: allowed 0 ≤ fraction < 1",
                k.send_queue_low_water
            ));
        }
        if k.send_queue_limit == Some(0) {
            return bad("flow.send_queue_limit: allowed 1 byte or more".into());
        }
        Ok(Params {
            knobs: *k,
            max_udp: u32::from(k.mtu) - IPV4_UDP_OVERHEAD,
            cc,
            seed: 0,
        })
    }
}
