//! `quiclab merge OUT SHARD_DIR...`: joins the results directories of a sweep's shards
//! (`quiclab sim --shard i/n`) into one, identical to a local sweep of the same scenario.

use std::path::PathBuf;

use clap::Args;

use crate::exit::{self, Exit};
use crate::sweep;

/// Options of `quiclab merge`.
#[derive(Debug, Clone, Args)]
pub struct MergeArgs {
    /// The merged results directory (must not hold results yet).
    pub out: PathBuf,
    /// The shards' results directories, every shard of the sweep exactly once, in any order.
    #[arg(required = true, value_name = "SHARD_DIR")]
    pub shards: Vec<PathBuf>,
    /// Machine-readable output on stdout: the summary rows as one JSON line.
    #[arg(long)]
    pub json: bool,
    /// Exit 0 even if some runs failed (they are still listed).
    #[arg(long)]
    pub allow_failures: bool,
}

/// Runs `quiclab merge`.
pub fn run(args: &MergeArgs) -> anyhow::Result<Exit> {
    let merged = match experiment::merge::merge(&args.out, &args.shards) {
        Ok(m) => m,
        // Shards that do not fit together are bad input, like a bad scenario.
        Err(e @ experiment::ExperimentError::Merge(_)) => {
            eprintln!("error: {e}");
            return Ok(exit::BAD_INPUT);
        }
        Err(e) => return Err(e.into()),
    };
    let s = experiment::Sweep {
        loaded: &merged.loaded,
        out: &args.out,
        resume: false,
        series: false,
    };
    sweep::report(
        &s,
        merged.outcome,
        args.json,
        sweep::OnFailure::from_flag(args.allow_failures),
    )
}
