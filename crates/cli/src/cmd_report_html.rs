//! `quiclab report`: one self-contained `DIR/report.html` (inline SVG and CSS, no script, no
//! network fetch) with the scenario, warnings, a table with n/N and every figure.

use std::path::PathBuf;

use clap::Args;

use crate::exit::{self, Exit};

/// Options of `quiclab report`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Results directory (written by `quiclab sim`, `emu` or `reproduce`).
    pub dir: PathBuf,
    /// Also draw throughput against delay (repeatable; as `quiclab plot --tradeoff`).
    #[arg(long = "tradeoff", value_name = "METRIC:FLOW", value_parser = figures::tradeoff::TradeoffSpec::parse)]
    pub tradeoffs: Vec<figures::tradeoff::TradeoffSpec>,
}

/// Runs `quiclab report`.
pub fn run(args: &ReportArgs) -> anyhow::Result<Exit> {
    let path = figures::write_report(&args.dir, &args.tradeoffs, &[])?;
    println!("{}", path.display());
    Ok(exit::SUCCESS)
}
