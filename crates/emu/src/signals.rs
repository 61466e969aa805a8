//! SIGTERM as a stop request (Ctrl-C is handled by the CLI): a run then tears its topology
//! down instead of dying with its namespaces still in place.

use std::sync::atomic::{AtomicBool, Ordering};

static TERM: AtomicBool = AtomicBool::new(false);

extern "C" fn on_term(_: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    TERM.store(true, Ordering::SeqCst);
}

/// Installs the SIGTERM handler (idempotent).
pub fn install_term_handler() {
    // SAFETY: installs a handler that only performs an atomic store.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_term as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut());
    }
}

/// Whether SIGTERM arrived.
pub fn term_requested() -> bool {
    TERM.load(Ordering::SeqCst)
}
