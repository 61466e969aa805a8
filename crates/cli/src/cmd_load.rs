//! `quiclab load` (being built).

use clap::Args;

use crate::exit::{self, Exit};

/// Options of `quiclab load`.
#[derive(Debug, Clone, Args)]
pub struct LoadArgs {}

/// Runs `quiclab load`.
pub fn run(_args: &LoadArgs) -> anyhow::Result<Exit> {
    anyhow::bail!("quiclab load is not built yet");
    #[allow(unreachable_code)]
    Ok(exit::FAILURE)
}
