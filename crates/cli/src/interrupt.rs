//! Ctrl-C for sweeps and load tests: the first press stops starting runs, the second aborts.
//!
//! The flag itself lives in the experiment library ([`experiment::interrupt::CTRL_C`]), which
//! polls it; taking over SIGINT is the binary's business, so the handler is installed here.

use std::sync::OnceLock;

use anyhow::Context;

use crate::exit;

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
        if experiment::interrupt::CTRL_C.request() {
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
    experiment::interrupt::ctrl_c_requested()
}
