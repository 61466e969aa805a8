//! qlog: one JSON-SEQ file (`.sqlog`) per connection and side, in one schema for quinn (the
//! simulator's and the real endpoints') and the QUIC research model, and files whose write
//! failures are kept instead of lost.
//!
//! # The files
//!
//! qlog 0.3 as qvis and the `qlog` crate read it (draft-ietf-quic-qlog-main-schema and
//! draft-ietf-quic-qlog-quic-events of that version): RFC 7464 JSON text sequences (each record
//! is 0x1E, one JSON text, `\n`), a header record naming the vantage point (`client` or
//! `server`) and the time base, then one record per event with its `time` in milliseconds. The
//! events are `transport:packet_sent` and `transport:packet_received` (header, sizes and
//! frames), `recovery:packet_lost` and `recovery:metrics_updated` (RTTs in milliseconds, window
//! and bytes in flight in bytes); [`schema`] types them once for both stacks.
//!
//! # Frames from quinn
//!
//! quinn-proto 0.11.19 (the newest release) logs packets without their frames. quiclab adds
//! them without forking quinn: the connection's packet keys are wrapped ([`tap`]) so that the
//! plaintext of every packet sealed or opened is parsed into frames ([`frames`]) and handed to
//! the qlog writer, which adds them to quinn's record of that packet ([`quinn`]). The other
//! ways were a dissector that re-derives the keys from the TLS key log (HKDF labels, header
//! protection, AEAD, key updates, packet-number recovery: a second QUIC receiver, and only
//! where the key log exists), and a patched copy of quinn-proto (a fork to carry across
//! releases). The tap sees exactly the bytes quinn sees, in both engines and with
//! `crypto = "none"`, and forwards every call, so a run's packets and results do not change.
//!
//! # Write failures
//!
//! quinn only logs a qlog write that fails (and `BufWriter` discards the error of its final
//! flush), so a missing or truncated qlog would go unnoticed. [`QlogFile`] records the first
//! failure of each file, and a file that cannot be created, in a [`QlogErrors`] sink its owner
//! reports: the simulator keeps one sink per flow (many flows run in parallel threads), the
//! endpoints one per process.

pub mod frames;
pub mod quinn;
pub mod schema;
pub mod tap;

pub use quinn::QuinnTrace;
pub use schema::Vantage;
pub use tap::{AcceptSlot, FrameTap, TapClientConfig, TapServerConfig};

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, Weak};

/// A shareable list of qlog problems (files that could not be created or fully written).
#[derive(Debug, Clone, Default)]
pub struct QlogErrors(Arc<Mutex<Vec<String>>>);

impl QlogErrors {
    /// Logs a problem and keeps it for the owner's report.
    pub fn record(&self, message: String) {
        tracing::warn!("{message}");
        self.lock().push(message);
    }

    /// The problems recorded so far, leaving them in place.
    pub fn to_vec(&self) -> Vec<String> {
        self.lock().clone()
    }

    /// Takes the problems recorded since the previous call.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.lock())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        // A panic while pushing cannot leave a Vec of strings inconsistent.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A buffered qlog file that records its first write failure, and the failure of its final
/// flush when the last handle drops, in a [`QlogErrors`] sink.
pub struct QlogFile(Arc<Mutex<Inner>>);

struct Inner {
    out: BufWriter<Box<dyn Write + Send>>,
    path: PathBuf,
    failed: bool,
    errors: QlogErrors,
}

impl Inner {
    /// Records the first error of this file; later ones repeat it and are not recorded again.
    fn check<T>(&mut self, r: std::io::Result<T>) -> std::io::Result<T> {
        if let Err(e) = &r {
            if !self.failed {
                self.failed = true;
                self.errors.record(format!(
                    "qlog {} not fully written: {e}",
                    self.path.display()
                ));
            }
        }
        r
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let r = self.out.flush();
        self.check(r)
    }
}

impl Drop for Inner {
    /// `BufWriter` would discard the error of its final flush.
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

impl QlogFile {
    /// Wraps `inner` (written to `path`, named in error messages) with failures going to `errors`.
    pub fn new(inner: impl Write + Send + 'static, path: PathBuf, errors: QlogErrors) -> Self {
        QlogFile(Arc::new(Mutex::new(Inner {
            out: BufWriter::new(Box::new(inner)),
            path,
            failed: false,
            errors,
        })))
    }

    /// Creates the file at `path` (replacing a file or link there, never following a link), or
    /// records why it cannot be created in `errors`.
    pub fn create(path: PathBuf, errors: &QlogErrors) -> Option<Self> {
        match fsutil::create_replacing(&path, fsutil::OUTPUT_MODE) {
            Ok(f) => Some(QlogFile::new(f, path, errors.clone())),
            Err(e) => {
                errors.record(format!("cannot create qlog {}: {e}", path.display()));
                None
            }
        }
    }

    /// A handle that can flush this file while quinn owns it, without keeping it open.
    pub fn flusher(&self) -> QlogFlusher {
        QlogFlusher(Arc::downgrade(&self.0))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // The writer's state stays usable after a panic elsewhere; at worst a line is cut.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Write for QlogFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut inner = self.lock();
        let r = inner.out.write(buf);
        inner.check(r)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.lock().flush()
    }
}

/// Flushes a [`QlogFile`] that may already be closed: lets the owner of a connection learn of
/// a failed write before its report, while quinn still holds the file.
#[derive(Clone)]
pub struct QlogFlusher(Weak<Mutex<Inner>>);

impl QlogFlusher {
    /// Whether the file is still open (some handle to it is alive).
    pub fn is_open(&self) -> bool {
        self.0.strong_count() > 0
    }

    /// Flushes the file if it is still open (a closed file flushed itself when it closed);
    /// a failure goes to the file's sink.
    pub fn flush(&self) {
        if let Some(inner) = self.0.upgrade() {
            let _ = inner.lock().unwrap_or_else(PoisonError::into_inner).flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A disk that is always full.
    struct Full;

    impl Write for Full {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("no space left on device"))
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_failed_qlog_write_is_recorded_once() {
        let errors = QlogErrors::default();
        {
            let mut q = QlogFile::new(Full, PathBuf::from("full.sqlog"), errors.clone());
            // Bigger than BufWriter's buffer, so the write reaches the failing file.
            assert!(q.write_all(&[b'x'; 20_000]).is_err());
            assert!(q.write_all(&[b'y'; 20_000]).is_err());
        }
        let errs = errors.take();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(errs[0].contains("full.sqlog"), "{errs:?}");
        assert!(errs[0].contains("no space left"), "{errs:?}");
        assert!(errors.take().is_empty(), "taken");
    }

    #[test]
    fn an_error_in_the_final_flush_is_recorded() {
        let errors = QlogErrors::default();
        {
            let mut q = QlogFile::new(Full, PathBuf::from("flush.sqlog"), errors.clone());
            // Fits in the buffer: only the flush on drop reaches the file.
            q.write_all(b"{}").expect("buffered");
            assert!(errors.to_vec().is_empty(), "nothing written yet");
        }
        assert_eq!(errors.to_vec().len(), 1);
    }

    #[test]
    fn a_flusher_reaches_the_file_while_it_is_open_and_not_after() {
        let errors = QlogErrors::default();
        let mut q = QlogFile::new(Full, PathBuf::from("open.sqlog"), errors.clone());
        let flusher = q.flusher();
        assert!(flusher.is_open());
        q.write_all(b"{}").expect("buffered");
        flusher.flush();
        assert_eq!(
            errors.take().len(),
            1,
            "the buffered bytes met the full disk"
        );
        drop(q);
        assert!(!flusher.is_open());
        flusher.flush();
        assert!(
            errors.take().is_empty(),
            "a closed file is not flushed again"
        );
    }

    #[test]
    fn an_uncreatable_qlog_is_recorded() {
        let errors = QlogErrors::default();
        let tmp = fsutil::PrivateDir::new("qlog-not-a-dir-").expect("temp dir");
        let file = tmp.path().join("file");
        std::fs::write(&file, b"a file, not a directory").expect("write");
        let created = QlogFile::create(file.join("client.sqlog"), &errors);
        tmp.remove().expect("clean up");
        assert!(created.is_none());
        let errs = errors.take();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(errs[0].starts_with("cannot create qlog"), "{errs:?}");
    }
}
