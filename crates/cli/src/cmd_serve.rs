//! `quiclab serve` (being built).

use clap::Args;

use crate::exit::{self, Exit};

/// Options of `quiclab serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {}

/// Runs `quiclab serve`.
pub fn run(_args: &ServeArgs) -> anyhow::Result<Exit> {
    anyhow::bail!("quiclab serve is not built yet");
    #[allow(unreachable_code)]
    Ok(exit::FAILURE)
}
