//! `quiclab compare`: maps flags onto `analysis::compare` and prints its rows (a Markdown table or
//! JSON) and its warnings.

use clap::Args;

use crate::exit::{self, Exit};

/// Options of `quiclab compare`.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// Results to compare: `LABEL=DIR` or `DIR` (a results directory or a results.jsonl file).
    /// The first one is the reference of the ratio column.
    #[arg(required = true, num_args = 2..)]
    pub sources: Vec<String>,
    /// Dotted metric path inside each run (repeatable), e.g. `flows.0.goodput_bps`.
    #[arg(long = "metric", default_value = "flows.0.completion_s")]
    pub metrics: Vec<String>,
    /// Only runs whose sweep axes match `KEY=VALUE` (repeatable).
    #[arg(long = "where")]
    pub filters: Vec<String>,
    /// Print the rows as one JSON array instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Runs `quiclab compare`.
pub fn run(args: &CompareArgs) -> anyhow::Result<Exit> {
    let comparison = analysis::compare::compare(&args.sources, &args.metrics, &args.filters)?;
    if args.json {
        println!("{}", serde_json::to_string(&comparison.rows)?);
    } else {
        print!("{}", analysis::compare::render(&comparison.rows));
    }
    for w in &comparison.missing {
        eprintln!("warning: {w}");
    }
    Ok(exit::SUCCESS)
}
