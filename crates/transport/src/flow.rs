//! The part of a flow's description every transport shares: who it is, what the application
//! does, when it runs and which congestion controller its senders use. Each transport adds its
//! own knob struct ([`TcpKnobs`](crate::tcp::TcpKnobs), [`QuicKnobs`](crate::quic::QuicKnobs)).

use std::time::Duration;

use crate::cc_adapter::CcChoice;
use crate::workload::Workload;

/// What every transport flow is built from besides its own knobs.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowPlan {
    /// Flow name (results, qlog file names).
    pub name: String,
    /// The application workload.
    pub workload: Workload,
    /// When the client starts its first connection.
    pub start: Duration,
    /// When a bulk sender stops (`None` = until the end of the run).
    pub stop: Option<Duration>,
    /// Congestion controller of the flow's senders.
    pub cc: CcChoice,
}
