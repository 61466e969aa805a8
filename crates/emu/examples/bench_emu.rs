//! Runs the emulator benchmark without the CLI: `cargo run -p emu --example bench_emu [quick]
//! [only=rate|delay|throughput]` (the parts are for investigating one figure).
use emu::bench::{self, BenchOptions};
use emu::WaitMode;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "quick");
    let only = args.iter().find_map(|a| a.strip_prefix("only="));
    let opts = BenchOptions {
        quick,
        wait: WaitMode::Sleep,
    };
    let out = match only {
        Some("throughput") => bench::throughput_figure(opts, netem::qdisc::QdiscConfig::DropTail)
            .map(|t| serde_json::json!(t)),
        Some("delay") => [WaitMode::Sleep, WaitMode::Spin]
            .into_iter()
            .flat_map(|w| [0, 15].map(|d| bench::delay_figure(d, w, quick)))
            .collect::<Result<Vec<_>, _>>()
            .map(|v| serde_json::json!(v)),
        Some("rate") => [1_000_000_000u64]
            .into_iter()
            .map(|r| bench::rate_figure(r, opts))
            .collect::<Result<Vec<_>, _>>()
            .map(|v| serde_json::json!(v)),
        _ => bench::run(opts).map(|b| serde_json::json!(b)),
    };
    match out {
        Ok(v) => println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default()),
        Err(e) => eprintln!("error: {e}"),
    }
}
