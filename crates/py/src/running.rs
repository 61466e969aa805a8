//! Long work without the GIL, interruptible from Python.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use pyo3::prelude::*;

/// How often the calling thread looks for a pending Python signal (Ctrl-C, a notebook's
/// interrupt) while the work runs: short enough to feel immediate, long enough to cost nothing.
const SIGNAL_POLL: Duration = Duration::from_millis(100);

/// Runs `work` on a scoped thread with the GIL released and returns its result.
///
/// While it runs, the calling thread checks for Python signals; on one (KeyboardInterrupt) it
/// sets the stop flag `work` receives, waits for `work` to return (the runner starts no new run
/// once the flag is set; runs in progress finish) and raises the signal's exception. A panic in
/// `work` (a bug outside any run: runs catch their own) becomes a [`crate::errors::RunError`].
pub fn interruptible<T: Send>(
    py: Python<'_>,
    work: impl FnOnce(&AtomicBool) -> T + Send,
) -> PyResult<T> {
    let stop = AtomicBool::new(false);
    // Set to true (and notified) when `work` returns: the calling thread sleeps on it without
    // the GIL instead of polling (a panic in `work` never sets it: `is_finished` sees that).
    let finished = (Mutex::new(false), Condvar::new());
    std::thread::scope(|scope| {
        let (finished, stop) = (&finished, &stop);
        let handle = scope.spawn(move || {
            let out = work(stop);
            *finished.0.lock().unwrap_or_else(|p| p.into_inner()) = true;
            finished.1.notify_all();
            out
        });
        let mut interrupted = None;
        loop {
            let done = py.detach(|| {
                let guard = finished.0.lock().unwrap_or_else(|p| p.into_inner());
                let (guard, _) = finished
                    .1
                    .wait_timeout_while(guard, SIGNAL_POLL, |done| !*done)
                    .unwrap_or_else(|p| p.into_inner());
                *guard
            });
            if done || handle.is_finished() {
                break;
            }
            if interrupted.is_none() {
                if let Err(e) = py.check_signals() {
                    stop.store(true, Ordering::SeqCst);
                    interrupted = Some(e);
                }
            }
        }
        let joined = py.detach(|| handle.join());
        if let Some(e) = interrupted {
            return Err(e);
        }
        joined.map_err(|payload| {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".into());
            crate::errors::RunError::new_err(format!("quiclab panicked: {what}"))
        })
    })
}
