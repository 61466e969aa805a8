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
            "\n{}",
            FIRST_MESSAGE.get().copied().unwrap_or(DEFAULT_FIRST)
        );
    })
    .context("cannot install the Ctrl-C handler")
}

/// What the first Ctrl-C does where runs are left to finish (sim sweeps, load tests).
const DEFAULT_FIRST: &str =
    "Ctrl-C: letting running runs finish, starting no new ones (Ctrl-C again to abort)";

static FIRST_MESSAGE: OnceLock<&'static str> = OnceLock::new();

/// Replaces what the first Ctrl-C prints, for commands where it does something else (the
/// emulator tears the current run down). The first call wins.
pub fn set_first_message(message: &'static str) {
    let _ = FIRST_MESSAGE.set(message);
}

/// What stopped the command, for its last message.
pub fn stop_cause() -> &'static str {
    if emu::term_requested() {
        "terminated (SIGTERM)"
    } else {
        "interrupted (Ctrl-C)"
    }
}

/// Whether a stop was requested.
pub fn requested() -> bool {
    experiment::interrupt::ctrl_c_requested()
}
