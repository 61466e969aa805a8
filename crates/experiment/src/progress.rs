//! Progress reporting: the runner says what happened, the caller decides how to show it
//! (the CLI draws an indicatif bar; a Python binding could update a notebook widget).

/// Receives a sweep's progress; called from worker threads, hence `Sync`.
///
/// Every method has a do-nothing default, and `()` implements the trait for callers that do not
/// want progress.
pub trait Progress: Sync {
    /// Before any run starts: `total` runs, `done` of which were already complete (resumed).
    fn begin(&self, total: usize, done: usize) {
        let _ = (total, done);
    }

    /// One run ended: `error` is `None` when its result was recorded.
    fn finished(&self, id: &str, error: Option<&str>) {
        let _ = (id, error);
    }

    /// Every run ended or the sweep stopped; nothing more will be reported.
    fn end(&self) {}
}

impl Progress for () {}
