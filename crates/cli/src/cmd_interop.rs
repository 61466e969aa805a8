//! `quiclab interop` (being built).

use clap::Args;

use crate::exit::{self, Exit};

/// Options of `quiclab interop`.
#[derive(Debug, Clone, Args)]
pub struct InteropArgs {}

/// Runs `quiclab interop`.
pub fn run(_args: &InteropArgs) -> anyhow::Result<Exit> {
    anyhow::bail!("quiclab interop is not built yet");
    #[allow(unreachable_code)]
    Ok(exit::FAILURE)
}
