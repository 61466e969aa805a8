//! The process exit codes quiclab uses, in one place so scripts can rely on them.

use std::process::ExitCode;

/// An exit status returned by a subcommand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exit(pub u8);

/// Everything ran and succeeded.
pub const SUCCESS: Exit = Exit(0);
/// Some run failed, or an I/O problem stopped the command.
pub const FAILURE: Exit = Exit(1);
/// The scenario (file or overrides) is invalid; matches clap's code for usage errors.
pub const BAD_INPUT: Exit = Exit(2);
/// Stopped by Ctrl-C (128 + SIGINT, as shells report it).
pub const INTERRUPTED: Exit = Exit(130);
/// Stopped by SIGTERM (128 + SIGTERM), for the commands that turn it into a clean stop.
pub const TERMINATED: Exit = Exit(143);

/// The code of a command that stopped on request: [`TERMINATED`] if SIGTERM arrived (the
/// emulator's handler), else [`INTERRUPTED`] (Ctrl-C).
pub fn stopped() -> Exit {
    if emu::term_requested() {
        TERMINATED
    } else {
        INTERRUPTED
    }
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> Self {
        ExitCode::from(e.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_codes_are_128_plus_the_signal() {
        // SIGINT is 2, SIGTERM 15 on every Linux architecture.
        assert_eq!(INTERRUPTED, Exit(128 + 2));
        assert_eq!(TERMINATED, Exit(128 + 15));
        // Without SIGTERM, a stop is Ctrl-C's.
        assert_eq!(stopped(), INTERRUPTED);
    }
}
