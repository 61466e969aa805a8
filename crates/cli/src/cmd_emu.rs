//! `quiclab emu` (being built).

use clap::Args;

use crate::exit::{self, Exit};

/// Options of `quiclab emu`.
#[derive(Debug, Clone, Args)]
pub struct EmuArgs {}

/// Runs `quiclab emu`.
pub fn run(_args: &EmuArgs) -> anyhow::Result<Exit> {
    anyhow::bail!("quiclab emu is not built yet");
    #[allow(unreachable_code)]
    Ok(exit::FAILURE)
}
