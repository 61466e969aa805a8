//! Setting up the emulator for a command: leftovers of killed runs removed, Ctrl-C and SIGTERM
//! tearing the current run down, and the engine itself. `emu`, `calibrate` and `reproduce`
//! share it so they prepare the machine and stop alike.

use anyhow::Context;

use crate::interrupt;

/// Whether the user asked to stop (Ctrl-C or SIGTERM).
pub fn stop_requested() -> bool {
    interrupt::requested() || emu::term_requested()
}

/// Removes namespaces, processes, log directories and lock files of dead quiclab runs and
/// says what was removed; `quiet_when_clean` keeps silent when there was nothing.
pub fn clean_up_leftovers(quiet_when_clean: bool) -> anyhow::Result<()> {
    let cleaned = emu::cleanup_stale().context("cannot clean up after earlier runs")?;
    if !cleaned.namespaces.is_empty() || cleaned.lock_files > 0 || !cleaned.log_dirs.is_empty() {
        eprintln!(
            "removed leftovers of killed runs: {} namespaces ({}), {} processes, {} log \
             directories, {} lock files",
            cleaned.namespaces.len(),
            cleaned.namespaces.join(", "),
            cleaned.processes,
            cleaned.log_dirs.len(),
            cleaned.lock_files
        );
    } else if !quiet_when_clean {
        eprintln!("nothing to clean up");
    }
    Ok(())
}

/// Installs the stop handlers. The emulator polls the stop flag inside a run: the first
/// Ctrl-C tears the current run down (it does not let it finish, unlike simulator sweeps).
pub fn install_stop_handlers() -> anyhow::Result<()> {
    interrupt::set_first_message(
        "Ctrl-C: stopping the current run and removing its emulated network; finished runs are \
         kept (Ctrl-C again to abort)",
    );
    interrupt::install()?;
    emu::install_term_handler();
    Ok(())
}

/// The emulator engine, with this binary as the endpoints' program and the stop handlers'
/// flag; traces only where asked.
pub fn engine(traces: Traces, wait: emu::WaitMode) -> anyhow::Result<emu::EmuEngine> {
    Ok(emu::EmuEngine {
        quiclab: std::env::current_exe().context("cannot locate the quiclab binary")?,
        pcap: traces.pcap,
        qlog: traces.qlog,
        keylog: traces.keylog,
        stop: Some(stop_requested),
        wait,
    })
}

/// Where the emulator writes packet captures, qlogs and TLS keys (none by default).
#[derive(Debug, Default, Clone)]
pub struct Traces {
    /// `--pcap`.
    pub pcap: Option<std::path::PathBuf>,
    /// `--qlog`.
    pub qlog: Option<std::path::PathBuf>,
    /// `--keylog`.
    pub keylog: Option<std::path::PathBuf>,
}
