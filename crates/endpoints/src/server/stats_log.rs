//! `--stats-file`: one JSON line per finished connection, written by the server (the sender of
//! downloads, whose congestion state is the interesting one).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Mutex;
use std::time::SystemTime;

use serde::Serialize;

use crate::stats::TransportSnapshot;

/// One finished connection as logged by the server.
#[derive(Debug, Clone, Serialize)]
pub struct ConnectionRecord {
    /// Seconds since the Unix epoch when the connection finished.
    pub unix_time_s: f64,
    /// HTTP version ("1.1", "2", "3").
    pub http: &'static str,
    /// The client's address.
    pub peer: SocketAddr,
    /// Requests served on the connection.
    pub requests: u64,
    /// Response body bytes the server handed to the transport.
    pub body_bytes_sent: u64,
    /// Request body bytes received (uploads).
    pub body_bytes_received: u64,
    /// Connection lifetime in seconds (accept to close).
    pub duration_s: f64,
    /// Transport statistics just before close.
    pub transport: Option<TransportSnapshot>,
}

/// Appends connection records to a file, one JSON object per line.
#[derive(Debug)]
pub struct StatsLog {
    file: Mutex<File>,
}

impl StatsLog {
    /// Opens (appends to) the stats file.
    pub fn open(path: &Path) -> std::io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Self {
            file: Mutex::new(file),
        })
    }

    /// Appends one record; a failed write is reported once per call, never fatal.
    pub fn write(&self, record: &ConnectionRecord) {
        let Ok(mut line) = serde_json::to_string(record) else {
            return;
        };
        line.push('\n');
        if let Ok(mut f) = self.file.lock() {
            if let Err(e) = f.write_all(line.as_bytes()) {
                tracing::warn!("stats file write failed: {e}");
            }
        }
    }
}

/// Seconds since the Unix epoch, now.
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
