//! `quiclab keys`: the scenario reference, rendered by the scenario crate's registry.

use crate::exit::{self, Exit};

/// Prints every scenario key with its type, default and documentation (Markdown).
pub fn run() -> anyhow::Result<Exit> {
    print!("{}", scenario::render_docs());
    Ok(exit::SUCCESS)
}
