//! `quiclab bench`: maps flags onto `studies::bench` (the simulator) and `emu::bench` (the
//! emulator) and prints their figures.

use anyhow::Context;
use clap::Args;
use studies::bench::{self, ScaleFigures, SCALE, SCALE_FLOWS, SCALE_STACKS, SCENARIOS};

use crate::exit::{self, Exit};

/// What `quiclab bench` measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BenchTarget {
    /// The simulator's speed (the default).
    Sim,
    /// The real-time emulator's fidelity (rate, delay, loss) and forwarding speed (needs root).
    Emu,
}

/// Options of `quiclab bench`.
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// What to benchmark.
    #[arg(value_enum)]
    pub target: Option<BenchTarget>,
    /// One repetition per scenario instead of three.
    #[arg(long)]
    pub quick: bool,
    /// Print the figures as one JSON line.
    #[arg(long)]
    pub json: bool,
    /// Also run the scale rows: 10, 100 and 1,000 flows sharing one bottleneck (QUIC and TCP).
    #[arg(long)]
    pub scale: bool,
    /// Only the rows whose scenario name contains this text (e.g. `1gbit`, `scale`, `qdisc`).
    #[arg(long, value_name = "TEXT")]
    pub only: Option<String>,
    /// `flow.crypto` of the quinn rows: `tls` (the default) or `none` (the null AEAD).
    #[arg(long, value_name = "MODE", default_value = "tls")]
    pub crypto: String,
    /// Internal: run one scale row (stack, flow count) in this fresh process and print its
    /// figures as JSON, so its peak memory is its own.
    #[arg(long, hide = true, num_args = 2, value_names = ["STACK", "FLOWS"])]
    pub scale_row: Option<Vec<String>>,
}

/// Prints the warnings a benchmark row collected.
fn warn(warnings: &mut Vec<String>) {
    for w in warnings.drain(..) {
        eprintln!("warning: {w}");
    }
}

/// Runs `quiclab bench`.
pub fn run(args: &BenchArgs) -> anyhow::Result<Exit> {
    if args.target == Some(BenchTarget::Emu) {
        return bench_emu::run(args.quick, args.json);
    }
    let reps = if args.quick { 1 } else { 3 };
    let mut warnings = Vec::new();
    if let Some([stack, flows]) = args.scale_row.as_deref() {
        let flows: u32 = flows.parse().context("--scale-row: flow count")?;
        let row = bench::scale_row(stack, flows, reps, &args.crypto, &mut warnings)?;
        warn(&mut warnings);
        println!("{}", serde_json::to_string(&row)?);
        return Ok(exit::SUCCESS);
    }
    let wanted = |name: &str| args.only.as_deref().is_none_or(|o| name.contains(o));
    let mut all = Vec::new();
    for (file, text) in SCENARIOS {
        if !wanted(file) {
            continue;
        }
        let overrides = bench::crypto_override(file, text, &args.crypto)?;
        let figures = bench::bench_one(file, text, reps, &overrides, &mut warnings)?;
        warn(&mut warnings);
        if !args.json {
            println!("{}", bench::render_figures(&figures));
        }
        all.push(figures);
    }
    // The JSON of the default run stays the scenarios' array (scripts/bench-sim-compare.py);
    // the discipline rows join it when asked for by name.
    let mut qdiscs = Vec::new();
    let named = args.only.as_deref().is_some_and(|o| "qdisc".contains(o));
    if wanted("qdisc") && (!args.json || named) {
        let packets = if args.quick { 200_000 } else { 1_000_000 };
        qdiscs = studies::bench_qdisc::qdisc_costs(packets, reps);
        if !args.json {
            println!(
                "queue disciplines alone (16 flows at 110% of 1 Gbit/s, half ECT(0)):\n\
                 | discipline | packets offered | delivered | ns / packet | vs drop-tail |\n\
                 |---|---:|---:|---:|---:|"
            );
            for r in &qdiscs {
                println!("{}", studies::bench_qdisc::render(r));
            }
        }
    }
    let mut scale = Vec::new();
    if args.scale || args.only.as_deref().is_some_and(|o| SCALE.0.contains(o)) {
        for stack in SCALE_STACKS {
            for flows in SCALE_FLOWS {
                let row = scale_row_in_child(stack, flows, args.quick, &args.crypto)?;
                if !args.json {
                    println!("{}", bench::render_scale(&row));
                }
                scale.push(row);
            }
        }
        if !args.json {
            for line in bench::render_growth(&scale) {
                println!("{line}");
            }
        }
    }
    if args.json {
        if args.scale || !qdiscs.is_empty() {
            println!(
                "{}",
                serde_json::to_string(
                    &serde_json::json!({ "scenarios": all, "scale": scale, "qdisc": qdiscs })
                )?
            );
        } else {
            println!("{}", serde_json::to_string(&all)?);
        }
    }
    Ok(exit::SUCCESS)
}

/// One scale row, run by a child `quiclab bench --scale-row` so that the peak memory it
/// reports is that row's alone (an allocator keeps freed memory, so within one process a
/// later row would reuse an earlier row's pages).
fn scale_row_in_child(
    stack: &str,
    flows: u32,
    quick: bool,
    crypto: &str,
) -> anyhow::Result<ScaleFigures> {
    let exe = std::env::current_exe().context("cannot find the quiclab binary")?;
    let mut cmd = std::process::Command::new(exe);
    cmd.args([
        "bench",
        "--scale-row",
        stack,
        &flows.to_string(),
        "--crypto",
        crypto,
    ]);
    if quick {
        cmd.arg("--quick");
    }
    let out = cmd.output().context("cannot run a scale row")?;
    if !out.status.success() {
        anyhow::bail!(
            "scale row {stack} × {flows} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    serde_json::from_slice(&out.stdout).context("scale row output")
}

/// `quiclab bench emu`: the emulator's fidelity and speed figures as one table.
mod bench_emu {
    use emu::bench::BenchOptions;
    use emu::WaitMode;

    use crate::exit::{self, Exit};

    /// Runs the measurements and prints them (table or one JSON line).
    pub fn run(quick: bool, json: bool) -> anyhow::Result<Exit> {
        if let Err(e) = emu::cleanup_stale() {
            anyhow::bail!("cannot prepare the emulator: {e}");
        }
        let started = std::time::Instant::now();
        let figures = emu::bench::run(BenchOptions {
            quick,
            wait: WaitMode::Sleep,
        })?;
        if json {
            println!("{}", serde_json::to_string(&figures)?);
        } else {
            print!("{}", emu::bench::render_text(&figures));
            println!("(measured in {:.1} s)", started.elapsed().as_secs_f64());
        }
        Ok(exit::SUCCESS)
    }
}
