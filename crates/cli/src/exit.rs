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

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> Self {
        ExitCode::from(e.0)
    }
}
