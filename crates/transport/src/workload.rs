//! What the application on a flow does, and the few facts every transport derives from it.
//! One type for every transport: the engines and the scenario format share it.

use serde::{Deserialize, Serialize};

use crate::agent::Side;

/// What the application on a flow does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Workload {
    /// Saturated sender with a discard receiver. `upload = true`: client sends (seed 001's
    /// traffic generator on the client); `false`: server sends.
    Bulk {
        /// `true`: the client sends.
        upload: bool,
    },
    /// The client requests `size` bytes, split evenly over `streams` concurrent streams; the
    /// server answers on each stream. Repeated `connections` times in sequence (the second and
    /// later connections may use 0-RTT resumption).
    Download {
        /// Total bytes requested per connection.
        size: u64,
        /// Concurrent streams the size is split over.
        streams: u32,
        /// Connections made one after the other.
        connections: u32,
    },
}

impl Default for Workload {
    /// The scenario format's default: the client uploads as fast as allowed.
    fn default() -> Self {
        Workload::Bulk { upload: true }
    }
}

/// The size of a request for as many bytes as the server sends before the flow stops.
pub const UNBOUNDED_REQUEST: u64 = u64::MAX;

impl Workload {
    /// The workload's name in results: `bulk-up`, `bulk-down` or `download`.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Bulk { upload: true } => "bulk-up",
            Workload::Bulk { upload: false } => "bulk-down",
            Workload::Download { .. } => "download",
        }
    }

    /// What a client asks for on each new connection: the requests (one stream each) and the
    /// bytes each asks for, [`UNBOUNDED_REQUEST`] for a bulk download (sent until the flow
    /// stops). An upload asks for nothing.
    pub fn client_requests(self) -> (u32, u64) {
        match self {
            Workload::Bulk { upload: true } => (0, 0),
            Workload::Bulk { upload: false } => (1, UNBOUNDED_REQUEST),
            Workload::Download { size, streams, .. } => {
                let streams = streams.max(1);
                (streams, size.div_ceil(u64::from(streams)))
            }
        }
    }

    /// The side whose application sends the data.
    pub fn data_sender(self) -> Side {
        match self {
            Workload::Bulk { upload: true } => Side::Client,
            _ => Side::Server,
        }
    }

    /// The side whose application receives the data.
    pub fn data_receiver(self) -> Side {
        self.data_sender().opposite()
    }

    /// Connections (download rounds) made one after the other; at least one.
    pub fn connections(self) -> u32 {
        match self {
            Workload::Download { connections, .. } => connections.max(1),
            Workload::Bulk { .. } => 1,
        }
    }

    /// Whether this is a sized download (which completes) rather than a bulk transfer.
    pub fn is_download(self) -> bool {
        matches!(self, Workload::Download { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_workload_has_its_results_name() {
        let download = Workload::Download {
            size: 1,
            streams: 1,
            connections: 1,
        };
        assert_eq!(Workload::Bulk { upload: true }.name(), "bulk-up");
        assert_eq!(Workload::Bulk { upload: false }.name(), "bulk-down");
        assert_eq!(download.name(), "download");
    }
}
