//! `--stats-file`: one JSON line per finished connection, written by the server (the sender of
//! downloads, whose congestion state is the interesting one).

use std::fs::File;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

pub use crate::stats::unix_now;
use crate::stats::TransportSnapshot;

/// One finished connection as logged by the server; the emulator reads it back into this type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConnectionRecord {
    /// Seconds since the Unix epoch when the connection finished.
    pub unix_time_s: f64,
    /// HTTP version ("1.1", "2", "3").
    pub http: String,
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
    /// qlog files of this server process that could not be created or fully written since the
    /// previous record (empty when none, or no qlog).
    #[serde(default)]
    pub qlog_errors: Vec<String>,
}

/// Why a stats file could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The stats file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A complete line is not a connection record.
    #[error("{path}:{line}: not a connection record: {source}")]
    Parse {
        /// The stats file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What serde said.
        source: serde_json::Error,
    },
}

/// Largest stats file read back: one line of a few hundred bytes per connection, and a flow
/// has at most a million connections.
pub const MAX_STATS_BYTES: u64 = 1 << 30;

/// Reads a stats file back: every record, in order. A missing file is no record; a last line
/// without its newline (the server stopped mid-write) is ignored. A link or a special file is
/// refused, and so is a file above [`MAX_STATS_BYTES`].
pub fn read_records(path: &Path) -> Result<Vec<ConnectionRecord>, ReadError> {
    let text = match fsutil::read_to_string_bounded(path, MAX_STATS_BYTES) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(ReadError::Io {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    complete
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|source| ReadError::Parse {
                path: path.to_path_buf(),
                line: i + 1,
                source,
            })
        })
        .collect()
}

/// Appends connection records to a file, one JSON object per line.
#[derive(Debug)]
pub struct StatsLog {
    file: Mutex<File>,
}

impl StatsLog {
    /// Opens (appends to) the stats file; a link or a special file there is refused.
    pub fn open(path: &Path) -> std::io::Result<Self> {
        let file = fsutil::open_append(path, fsutil::OUTPUT_MODE)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::QuicStatsSnapshot;

    fn record(n: u64) -> ConnectionRecord {
        ConnectionRecord {
            unix_time_s: 1.5,
            http: "3".into(),
            peer: "10.99.1.1:5000".parse().expect("addr"),
            requests: n,
            body_bytes_sent: 1000,
            body_bytes_received: 0,
            duration_s: 0.25,
            transport: Some(TransportSnapshot::Quic(QuicStatsSnapshot {
                sent_packets: 7,
                ..QuicStatsSnapshot::default()
            })),
            qlog_errors: vec!["qlog x not fully written".into()],
        }
    }

    #[test]
    fn records_read_back_as_written() {
        // Private (random name, 0700): tests run as root, a predictable /tmp name is plantable.
        let scratch = fsutil::PrivateDir::new("quiclab-stats-").expect("scratch");
        let path = scratch.path().join("stats.jsonl");
        let log = StatsLog::open(&path).expect("open");
        log.write(&record(1));
        log.write(&record(2));
        // A record cut short when the server was killed.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(b"{\"unix_time"))
            .expect("append");
        let back = read_records(&path).expect("read");
        assert_eq!(back, vec![record(1), record(2)]);
    }

    #[test]
    fn a_missing_file_has_no_records_and_garbage_is_an_error() {
        let scratch = fsutil::PrivateDir::new("quiclab-stats-").expect("scratch");
        let path = scratch.path().join("stats-bad.jsonl");
        assert!(read_records(&path).expect("missing").is_empty());
        std::fs::write(&path, "not json\n").expect("write");
        let err = read_records(&path).expect_err("garbage");
        assert!(
            err.to_string().contains(":1: not a connection record"),
            "{err}"
        );
    }

    #[test]
    fn planted_links_and_fifos_are_refused_for_stats_and_key_logs() {
        let scratch = fsutil::PrivateDir::new("quiclab-stats-").expect("scratch");
        let victim = scratch.path().join("victim");
        std::fs::write(&victim, "precious").expect("write");
        let stats = scratch.path().join("server-0.stats.jsonl");
        std::os::unix::fs::symlink(&victim, &stats).expect("link");
        let err = StatsLog::open(&stats).expect_err("link");
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert!(read_records(&stats).is_err(), "a linked stats file is read");
        let keys = scratch.path().join("keys.log");
        std::os::unix::fs::symlink(&victim, &keys).expect("link");
        let err = crate::tls::FileKeyLog::open(&keys).expect_err("link");
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(std::fs::read_to_string(&victim).expect("read"), "precious");
        let fifo = scratch.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().expect("utf-8")).expect("c string");
        // SAFETY: mkfifo with a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(StatsLog::open(&fifo).is_err(), "a FIFO is opened");
        assert!(read_records(&fifo).is_err(), "a FIFO is read");
    }
}
