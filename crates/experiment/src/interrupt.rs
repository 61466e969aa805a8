//! Stopping a sweep early: a flag the runner polls before starting each run.
//!
//! Finished runs are appended durably when they end, so stopping never loses completed work;
//! runs already executing finish and are kept too. Installing a signal handler is the binary's
//! job (a library must not take over SIGINT); it sets [`CTRL_C`].

use std::sync::atomic::{AtomicBool, Ordering};

/// A request to stop starting runs, settable from any thread (a signal-handler thread included).
#[derive(Debug, Default)]
pub struct StopFlag(AtomicBool);

impl StopFlag {
    /// A flag not yet set.
    pub const fn new() -> Self {
        StopFlag(AtomicBool::new(false))
    }

    /// Sets the flag; returns whether it was already set (a second Ctrl-C, say).
    pub fn request(&self) -> bool {
        self.0.swap(true, Ordering::SeqCst)
    }

    /// Whether a stop was requested.
    pub fn is_requested(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// The process-wide flag the binary's Ctrl-C handler sets.
pub static CTRL_C: StopFlag = StopFlag::new();

/// Whether Ctrl-C was pressed (a plain `fn`, so engines that take a `fn() -> bool` can poll it).
pub fn ctrl_c_requested() -> bool {
    CTRL_C.is_requested()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_reports_the_previous_state() {
        let f = StopFlag::new();
        assert!(!f.is_requested());
        assert!(!f.request());
        assert!(f.is_requested());
        assert!(f.request());
    }
}
