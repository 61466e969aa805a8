//! Ctrl-C handling for sweeps: the first press stops starting runs, the second aborts.
//!
//! Finished runs are already appended durably when they end, so stopping early never loses
//! completed work; letting running ones finish keeps their (possibly long) work too.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use anyhow::Context;

use crate::exit;

/// Set by the first Ctrl-C; workers check it before starting a run.
static STOP: AtomicBool = AtomicBool::new(false);

/// Installs the handler once per process (ctrlc runs it on its own thread, so printing there is
/// safe). Later calls return the first call's outcome, so several sweeps in one process (all the
/// studies of `quiclab reproduce`) share it.
pub fn install() -> anyhow::Result<()> {
    static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
    INSTALLED
        .get_or_init(|| set_handler().map_err(|e| format!("{e:#}")))
        .clone()
        .map_err(anyhow::Error::msg)
}

fn set_handler() -> anyhow::Result<()> {
    ctrlc::set_handler(|| {
        if STOP.swap(true, Ordering::SeqCst) {
            eprintln!(
                "\nsecond Ctrl-C: aborting; runs in progress are lost, finished runs are kept"
            );
            std::process::exit(i32::from(exit::INTERRUPTED.0));
        }
        eprintln!(
            "\nCtrl-C: letting running runs finish, starting no new ones (Ctrl-C again to abort)"
        );
    })
    .context("cannot install the Ctrl-C handler")
}

/// Whether a stop was requested.
pub fn requested() -> bool {
    STOP.load(Ordering::SeqCst)
}
