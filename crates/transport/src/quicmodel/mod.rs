//! The QUIC research model (`stack = "quic-model"`): a sans-IO QUIC transport with the knobs of
//! INET's QUIC module and ModQUIC that no production stack exposes (receiver ACK ratio and
//! timer, the I-bit, flow-control update policies, stream scheduler, send-queue limit), shaped
//! like the TCP model and implementing [`FlowAgent`](crate::agent::FlowAgent).
//!
//! No cryptography, but real sizes on the wire, so link accounting matches quinn where both are
//! configured alike.

mod knobs;

pub use knobs::{FcUpdate, QuicModelKnobs, StreamScheduler};

use crate::flow::FlowPlan;

/// Everything needed to build one flow of the model.
#[derive(Debug, Clone)]
pub struct QuicModelFlowConfig {
    /// Name, workload, start, stop and controller (ours only).
    pub plan: FlowPlan,
    /// The model's knobs.
    pub knobs: QuicModelKnobs,
}

/// Errors building a flow.
#[derive(Debug, thiserror::Error)]
pub enum QuicModelFlowError {
    /// A knob outside what the model supports.
    #[error("{0}")]
    Invalid(String),
}

/// Both ends of every connection of one flow.
pub struct QuicModelFlow {
    _config: QuicModelFlowConfig,
}

impl QuicModelFlow {
    /// Builds the flow (validating the knobs).
    pub fn new(config: QuicModelFlowConfig) -> Result<Self, QuicModelFlowError> {
        let _ = config;
        Err(QuicModelFlowError::Invalid(
            "the QUIC research model is being built (issue 12)".into(),
        ))
    }
}
