//! qlog files whose failures are kept instead of lost, for the simulator and the real endpoints.
//!
//! quinn only logs a qlog write that fails (and `BufWriter` discards the error of its final
//! flush), so a missing or truncated qlog would go unnoticed. [`QlogFile`] records the first
//! failure of each file, and a file that cannot be created, in a [`QlogErrors`] sink its owner
//! reports: the simulator keeps one sink per flow (many flows run in parallel threads), the
//! endpoints one per process.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Instant;

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

    /// A quinn qlog stream titled `title` writing into this file, with times relative to `start`.
    pub fn into_stream(self, title: String, start: Instant) -> Option<quinn_proto::QlogStream> {
        let mut q = quinn_proto::QlogConfig::default();
        q.writer(Box::new(self))
            .title(Some(title))
            .start_time(start);
        q.into_stream()
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
            let mut q = QlogFile::new(Full, PathBuf::from("full.qlog"), errors.clone());
            // Bigger than BufWriter's buffer, so the write reaches the failing file.
            assert!(q.write_all(&[b'x'; 20_000]).is_err());
            assert!(q.write_all(&[b'y'; 20_000]).is_err());
        }
        let errs = errors.take();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(errs[0].contains("full.qlog"), "{errs:?}");
        assert!(errs[0].contains("no space left"), "{errs:?}");
        assert!(errors.take().is_empty(), "taken");
    }

    #[test]
    fn an_error_in_the_final_flush_is_recorded() {
        let errors = QlogErrors::default();
        {
            let mut q = QlogFile::new(Full, PathBuf::from("flush.qlog"), errors.clone());
            // Fits in the buffer: only the flush on drop reaches the file.
            q.write_all(b"{}").expect("buffered");
            assert!(errors.to_vec().is_empty(), "nothing written yet");
        }
        assert_eq!(errors.to_vec().len(), 1);
    }

    #[test]
    fn a_flusher_reaches_the_file_while_it_is_open_and_not_after() {
        let errors = QlogErrors::default();
        let mut q = QlogFile::new(Full, PathBuf::from("open.qlog"), errors.clone());
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
        let created = QlogFile::create(file.join("client.qlog"), &errors);
        tmp.remove().expect("clean up");
        assert!(created.is_none());
        let errs = errors.take();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(errs[0].starts_with("cannot create qlog"), "{errs:?}");
    }
}
