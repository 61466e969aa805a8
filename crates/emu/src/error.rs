//! Errors of the emulator.

use std::io;

/// Everything that can go wrong while building, running or removing an emulated topology.
#[derive(Debug, thiserror::Error)]
pub enum EmuError {
    /// A command (`ip ...`) could not be started or exited unsuccessfully.
    #[error("`{command}` failed: {message}")]
    Command {
        /// The command line, for the message.
        command: String,
        /// Its stderr, or why it could not run.
        message: String,
    },
    /// A system call failed.
    #[error("{what}: {source}")]
    Sys {
        /// What was being done.
        what: String,
        /// The OS error.
        source: io::Error,
    },
    /// The emulator needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) for namespaces and raw sockets.
    #[error("the emulator needs root privileges (network namespaces and raw sockets)")]
    NotRoot,
    /// The requested topology is not supported.
    #[error("unsupported topology: {0}")]
    Unsupported(String),
    /// The forwarder thread stopped with an error or panicked.
    #[error("forwarder failed: {0}")]
    Forwarder(String),
    /// A scenario feature the emulator cannot reproduce.
    #[error("scenario key `{key}` is not supported by the emulator: {why}")]
    UnsupportedScenario {
        /// The scenario key.
        key: String,
        /// Why.
        why: String,
    },
    /// The run was stopped (Ctrl-C, SIGTERM) and torn down.
    #[error("interrupted")]
    Interrupted,
    /// An endpoint process failed or produced unusable output.
    #[error("endpoint: {0}")]
    Endpoint(String),
}

impl EmuError {
    /// A failed system call, with the current `errno`.
    pub(crate) fn last_os(what: impl Into<String>) -> Self {
        EmuError::Sys {
            what: what.into(),
            source: io::Error::last_os_error(),
        }
    }

    /// A failed I/O operation.
    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> Self {
        EmuError::Sys {
            what: what.into(),
            source,
        }
    }
}
