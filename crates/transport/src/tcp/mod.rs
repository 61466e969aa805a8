//! A sans-IO, Linux-like TCP model implementing [`FlowAgent`](crate::agent::FlowAgent): three-way
//! handshake, TLS 1.2 / 1.3 modelled as message exchanges of realistic sizes, SACK loss recovery
//! (RFC 6675) or NewReno (RFC 6582), RTO with backoff (RFC 6298), delayed ACKs with Linux's
//! quick-ACK start, receive-window autotuning with window scaling, and the shared congestion
//! controllers of the `congestion` crate.
//!
//! Receivers offer only the buffer space unread data leaves free, and senders facing a zero
//! window run the persist timer with zero-window probes (RFC 9293 §3.8.6).
//!
//! Layers, bottom up: [`segment`] (wire format), `rtt`, `scoreboard`, `sender` and `receiver`
//! (the two halves of a connection), `endpoint` (handshake and glue), `app` (the byte-stream
//! scripts of TLS and the workloads), `pep` (a split-connection proxy's two legs and the relay
//! between them) and `flow` ([`TcpConnections`], both ends of every connection and the PEP,
//! driven by the shared [`FlowDriver`](crate::driver::FlowDriver) as [`TcpFlow`]).
//!
//! ECN (`ecn`): RFC 3168 negotiation and feedback as Linux 6.18 runs them (no Accurate ECN:
//! that kernel cannot negotiate it); the sender's CWR reduction uses PRR like fast recovery.
//!
//! Pacing (`sender`): Linux's internal pacing (no fq qdisc), only while the controller gives a
//! pacing rate (BBR, Prague). Delivery-rate sampling (the crate's `rate` module, shared with
//! the QUIC research model) as Linux's `tcp_rate.c` feeds the controllers that need it (BBR).
//!
//! Not modelled: TSO/GRO, tail-loss probes and RACK
//! (a tail loss waits for the RTO), PRR (RFC 6675's pipe rule limits recovery sending), D-SACK
//! undo, HTTP/2 and TLS record overhead inside the byte stream.

mod app;
mod ecn;
mod endpoint;
mod flow;
mod knobs;
mod pep;
mod receiver;
mod rtt;
mod scoreboard;
pub mod segment;
mod sender;

use congestion::config::CcConfig;

pub use flow::{TcpConnections, TcpFlow};
pub use knobs::{HttpVersion, LossRecovery, PepPosition, PepSpec, TcpKnobs, TlsMode};
pub use pep::PepHeld;

use crate::cc_adapter::CcChoice;
use crate::flow::FlowPlan;

/// Everything needed to build one TCP flow: the shared plan, the TCP knobs and the PEP.
#[derive(Debug, Clone)]
pub struct TcpFlowConfig {
    /// Name, workload, start, stop and controller (ours only: quinn's exist only in QUIC).
    pub plan: FlowPlan,
    /// The model's knobs.
    pub knobs: TcpKnobs,
    /// A split-connection PEP on the path (the engine routes the client's and the server's
    /// segments to `Side::Middle`); `None`: end to end.
    pub pep: Option<PepSpec>,
    /// Seed of the controllers' random choices (BBR's gain-cycle phase), from the run seed.
    pub seed: u64,
}

/// Errors building a flow.
#[derive(Debug, thiserror::Error)]
pub enum TcpFlowError {
    /// A knob outside what the model supports.
    #[error("{0}")]
    Invalid(String),
}

/// Smallest MSS accepted (Linux's tcp_min_snd_mss is 48; smaller makes no sense here either).
const MIN_MSS: u16 = 48;
/// Linux's tcp_syn_retries.
const SYN_RETRIES: u32 = 6;
/// Linux's tcp_retries2: timeouts of one segment before the connection is given up.
const DATA_RETRIES: u32 = 15;

/// Per-endpoint parameters derived once from the configuration: the knobs (windows clamped to
/// what window scaling can express) plus what follows from them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Params {
    /// The knobs, with `receive_window_max` at most 1 GiB and `initial_receive_window` at most
    /// `receive_window_max`.
    pub knobs: TcpKnobs,
    /// Maximum segment size (data bytes).
    pub mss: u32,
    /// Congestion controller.
    pub controller: CcConfig,
    /// Window scale shift that lets `receive_window_max` fit 16 bits.
    pub wscale: u8,
    /// SYN / SYN-ACK retransmissions before giving up.
    pub syn_retries: u32,
    /// Consecutive RTO backoffs before giving up.
    pub max_backoffs: u32,
    /// Seed of the controllers' random choices; each endpoint derives its own from it.
    pub seed: u64,
}

impl Params {
    /// Validates the knobs and derives the parameters.
    pub(crate) fn new(knobs: &TcpKnobs, cc: CcChoice) -> Result<Params, TcpFlowError> {
        let invalid = |m: String| Err(TcpFlowError::Invalid(m));
        let CcChoice::Ours(controller) = cc else {
            return invalid("TCP flows use quiclab's controllers, not quinn's".into());
        };
        let overhead = 40 + if knobs.timestamps { 12 } else { 0 };
        let mss = knobs.mtu.saturating_sub(overhead);
        if mss < MIN_MSS {
            return invalid(format!(
                "TCP needs an MSS of at least {MIN_MSS} bytes; MTU {} gives {mss}",
                knobs.mtu
            ));
        }
        if knobs.receive_window_max == 0
            || knobs.initial_receive_window == 0
            || knobs.send_buffer == 0
        {
            return invalid("TCP windows and the send buffer must be positive".into());
        }
        if knobs.initial_rto.is_zero() {
            return invalid("TCP initial RTO must be positive".into());
        }
        if knobs.delayed_ack && knobs.delayed_ack_timeout.is_zero() {
            return invalid("TCP delayed-ACK timeout must be positive".into());
        }
        // RFC 7323 caps the shift at 14 (windows up to 1 GiB).
        let max = knobs.receive_window_max.min(65_535 << 14);
        let mut wscale = 0u8;
        while (max >> wscale) > 65_535 {
            wscale += 1;
        }
        Ok(Params {
            knobs: TcpKnobs {
                receive_window_max: max,
                initial_receive_window: knobs.initial_receive_window.min(max),
                ..*knobs
            },
            mss: u32::from(mss),
            controller,
            wscale,
            syn_retries: SYN_RETRIES,
            max_backoffs: DATA_RETRIES,
            seed: 0,
        })
    }
}

/// Parameters for unit tests of the connection halves.
#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;

    /// Linux's defaults with a 6 MiB window cap (window scaling in use) and CUBIC without
    /// HyStart (the tests count segments of a plain slow start).
    pub(crate) fn params() -> Params {
        let knobs = TcpKnobs {
            receive_window_max: 6 << 20,
            initial_receive_window: 64 * 1024,
            ..TcpKnobs::default()
        };
        let cc = CcChoice::Ours(CcConfig::Cubic {
            hystart: false,
            profile: congestion::config::CubicProfile::Linux,
            common: congestion::config::CommonCcConfig {
                initial_window_packets: 10,
                loss_reduction_factor: 0.7,
                minimum_window_packets: 2,
            },
        });
        match Params::new(&knobs, cc) {
            Ok(p) => p,
            Err(e) => panic!("test parameters invalid: {e}"),
        }
    }
}
