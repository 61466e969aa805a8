//! `quiclab trace`: writes a synthetic Mahimahi packet-delivery trace (`link.mahimahi_trace`)
//! from a path's mean rate, spread and burstiness (`netem::synth`), and prints what it holds.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use netem::synth::TraceSpec;

use crate::exit::{self, Exit};

/// Options of `quiclab trace`.
#[derive(Debug, Clone, Args)]
pub struct TraceArgs {
    /// The trace file to write (created new: an existing file is not replaced).
    pub out: PathBuf,
    /// Mean capacity over the trace, e.g. "13Mbit".
    #[arg(long, value_parser = parse_rate)]
    pub mean: u64,
    /// Length of the trace, which repeats with this period (1 s to 1 h).
    #[arg(long, default_value = "120s", value_parser = units::parse_duration)]
    pub duration: Duration,
    /// Standard deviation of the natural log of the capacity level (0 = constant; 0.6 spans
    /// about ×7 between its 5th and 95th percentile).
    #[arg(long, default_value_t = 0.0)]
    pub level_sd: f64,
    /// How often the level is redrawn.
    #[arg(long, default_value = "100ms", value_parser = units::parse_duration)]
    pub level_step: Duration,
    /// Correlation time of the level.
    #[arg(long, default_value = "1s", value_parser = units::parse_duration)]
    pub level_memory: Duration,
    /// Opportunities are released once per burst (1 ms: a cellular TTI; a few ms: Wi-Fi
    /// aggregation).
    #[arg(long, default_value = "1ms", value_parser = units::parse_duration)]
    pub burst: Duration,
    /// Mean time between outages (none when absent).
    #[arg(long, value_parser = units::parse_duration)]
    pub outage_every: Option<Duration>,
    /// Mean length of an outage.
    #[arg(long, default_value = "200ms", value_parser = units::parse_duration)]
    pub outage_length: Duration,
    /// Seed of the trace's random draws.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

fn parse_rate(text: &str) -> Result<u64, String> {
    match units::parse_rate(text).map_err(|e| e.to_string())? {
        units::Rate::Bps(b) if b > 0 => Ok(b),
        _ => Err(format!(
            "{text}: the mean must be a positive rate such as \"13Mbit\""
        )),
    }
}

/// Runs `quiclab trace`.
pub fn run(args: &TraceArgs) -> anyhow::Result<Exit> {
    let spec = TraceSpec {
        mean_bps: args.mean as f64,
        duration: args.duration,
        level_sd: args.level_sd,
        level_step: args.level_step,
        level_memory: args.level_memory,
        burst: args.burst,
        outage_every: args.outage_every,
        outage_length: args.outage_length,
    };
    let (text, s) = match spec.generate(args.seed) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: quiclab trace: {e}");
            return Ok(exit::BAD_INPUT);
        }
    };
    let mut file = fsutil::create_new(&args.out)
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.out.display()))?;
    file.write_all(text.as_bytes())?;
    let [p5, p50, p95] = s.per_second_p5_p50_p95.map(|b| b / 1e6);
    println!(
        "{}: {} opportunities of 1500 B over {:?}: mean {:.2} Mbit/s; per second p5 {p5:.2}, \
         p50 {p50:.2}, p95 {p95:.2} Mbit/s; {} ms of outage",
        args.out.display(),
        s.opportunities,
        args.duration,
        s.mean_bps / 1e6,
        s.outage_ms
    );
    Ok(exit::SUCCESS)
}
