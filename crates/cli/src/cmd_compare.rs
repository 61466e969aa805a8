//! `quiclab compare`: maps flags onto `analysis::compare` and prints its tables (Markdown) or
//! the whole comparison (JSON), and its warnings.

use clap::Args;

use crate::exit::{self, Exit};

/// Options of `quiclab compare`.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// Results to compare: `LABEL=DIR` or `DIR` (a results directory or a results.jsonl file).
    /// The first one is the reference of the ratio column and of the unpaired tests. One
    /// directory is enough when its sweep has variants: they are compared with each other.
    #[arg(required = true, num_args = 1..)]
    pub sources: Vec<String>,
    /// Dotted metric path inside each run (repeatable), e.g. `flows.0.goodput_bps`.
    #[arg(long = "metric", default_value = "flows.0.completion_s")]
    pub metrics: Vec<String>,
    /// Only runs whose sweep axes match `KEY=VALUE` (repeatable).
    #[arg(long = "where")]
    pub filters: Vec<String>,
    /// The variant the others are compared with (paired, repetition by repetition); default:
    /// the first variant of the scenario.
    #[arg(long)]
    pub baseline: Option<String>,
    /// Also print harm (Ware et al.): the baseline is the run without a competitor (e.g. a
    /// variant with `flow.1.count=0`), each other variant the run with it; per pair
    /// (alone − with)/alone where more is better, (with − alone)/with where less is.
    #[arg(long)]
    pub harm: bool,
    /// Print the comparison as one JSON object (`rows`, `paired`, `unpaired`, `missing`)
    /// instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// Runs `quiclab compare`.
pub fn run(args: &CompareArgs) -> anyhow::Result<Exit> {
    let comparison = analysis::compare::compare(
        &args.sources,
        &args.metrics,
        &args.filters,
        args.baseline.as_deref(),
    )?;
    if args.json {
        println!("{}", serde_json::to_string(&comparison)?);
    } else {
        print!("{}", analysis::compare::render_all(&comparison));
        if args.harm {
            for table in &comparison.paired {
                let alone = table.harm.first().map_or("", |r| r.alone.as_str());
                println!(
                    "\nHarm: variants of {} against {alone} (the run without the competitor), repetitions matched by index; 0 = no harm, 1 = all of it, < 0 = helped\n",
                    table.source
                );
                print!("{}", analysis::harm::render(&table.harm));
            }
        }
    }
    for w in &comparison.missing {
        eprintln!("warning: {w}");
    }
    Ok(exit::SUCCESS)
}
