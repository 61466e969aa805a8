//! Ctrl-C handling for sweeps: the first press stops starting runs, the second aborts.
//!
//! Finished runs are already appended durably when they end, so stopping early never loses
//! completed work; letting running ones finish keeps their (possibly long) work too.

use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context;

use crate::exit;

/// Set by the first Ctrl-C; workers check it before starting a run.
static STOP: AtomicBool = AtomicBool::new(false);

/// Installs the handler (ctrlc runs it on its own thread, so printing there is safe).
pub fn install() -> anyhow::Result<()> {
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
