//! `quiclab get` (being built).

use clap::Args;

use crate::exit::{self, Exit};

/// Options of `quiclab get`.
#[derive(Debug, Clone, Args)]
pub struct GetArgs {}

/// Runs `quiclab get`.
pub fn run(_args: &GetArgs) -> anyhow::Result<Exit> {
    anyhow::bail!("quiclab get is not built yet");
    #[allow(unreachable_code)]
    Ok(exit::FAILURE)
}
