//! `quiclab`: run scenarios in the simulator, sweep them, benchmark the engine.
//!
//! Each subcommand lives in its own module and returns the process exit code, so adding one
//! (e.g. `validate`) is one enum variant plus one match arm.

mod adaptive_args;
mod alloc;
mod cmd_bench;
mod cmd_calibrate;
mod cmd_compare;
mod cmd_emu;
mod cmd_get;
mod cmd_interop;
mod cmd_load;
mod cmd_load_paper;
mod cmd_merge;
mod cmd_pep;
mod cmd_plot;
mod cmd_report_html;
mod cmd_reproduce;
mod cmd_serve;
mod cmd_sim;
mod cmd_trace;
mod cmd_validate;
mod emu_setup;
#[cfg(test)]
mod emu_walk;
mod exit;
mod interrupt;
mod keys;
mod output;
mod progress;
mod root;
mod sweep;
mod via_args;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Simulations allocate a buffer per datagram; mimalloc makes that markedly cheaper than glibc
/// (entered through its plain functions where alignment allows: see [`alloc`]).
#[global_allocator]
static GLOBAL: alloc::Mimalloc = alloc::Mimalloc;

/// Top-level command line.
#[derive(Debug, Parser)]
#[command(
    name = "quiclab",
    version,
    about = "A laboratory for transport-protocol performance"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
enum Command {
    /// Run a scenario (or a sweep of it) in the deterministic simulator.
    Sim(cmd_sim::SimArgs),
    /// Measure the simulator's speed on two fixed downloads.
    Bench(cmd_bench::BenchArgs),
    /// Join the results directories of a sweep's shards (`sim --shard i/n`) into one.
    Merge(cmd_merge::MergeArgs),
    /// Run seed 001's analytic validation cases (exit 1 if any point is out of tolerance).
    Validate(cmd_validate::ValidateArgs),
    /// Print every scenario key with its type, default and documentation.
    Keys,
    /// Run a seed study's grid (quick by default, `--full` for >= 20 repetitions) and tabulate it.
    Reproduce(cmd_reproduce::ReproduceArgs),
    /// Compare one metric across results directories (e.g. sim vs emu): medians, 95% CIs, ratios.
    Compare(cmd_compare::CompareArgs),
    /// Run a scenario in real time: namespaces, the userspace link emulator, real stacks.
    Emu(cmd_emu::EmuArgs),
    /// Run the calibration matrix in both engines and tabulate emu/sim ratios.
    Calibrate(cmd_calibrate::CalibrateArgs),
    /// Download between every third-party client and server through the emulator (pass/fail matrix).
    Interop(cmd_interop::InteropArgs),
    /// Serve generated bodies over HTTP/1.1 and HTTP/2 (TCP + TLS) and HTTP/3 (QUIC) on one port.
    Serve(cmd_serve::ServeArgs),
    /// Fetch a URL over HTTP/1.1, HTTP/2 or HTTP/3 and report timings and transport statistics.
    Get(cmd_get::GetArgs),
    /// Constant-rate (open model) HTTP/1.1, HTTP/2 and HTTP/3 load testing.
    Load(Box<cmd_load::LoadArgs>),
    /// The emulator's split-connection TCP proxy, run inside a PEP namespace.
    #[command(hide = true)]
    Pep(cmd_pep::PepArgs),
    /// Draw a results directory's figures (SVG): metrics vs sweep axes with 95% CIs, CDFs, time series.
    Plot(cmd_plot::PlotArgs),
    /// Write DIR/report.html: one self-contained page with tables (n/N), warnings and figures.
    Report(cmd_report_html::ReportArgs),
    /// Write a synthetic Mahimahi trace (link.mahimahi_trace) from a mean rate, spread and burstiness.
    Trace(cmd_trace::TraceArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Sim(args) => cmd_sim::run(&args),
        Command::Bench(args) => cmd_bench::run(&args),
        Command::Merge(args) => cmd_merge::run(&args),
        Command::Keys => keys::run(),
        Command::Validate(args) => cmd_validate::run(&args),
        Command::Reproduce(args) => cmd_reproduce::run(&args),
        Command::Compare(args) => cmd_compare::run(&args),
        Command::Emu(args) => cmd_emu::run(&args),
        Command::Calibrate(args) => cmd_calibrate::run(&args),
        Command::Interop(args) => cmd_interop::run(&args),
        Command::Serve(args) => cmd_serve::run(&args),
        Command::Get(args) => cmd_get::run(&args),
        Command::Load(args) => cmd_load::run(&args),
        Command::Pep(args) => cmd_pep::run(&args),
        Command::Plot(args) => cmd_plot::run(&args),
        Command::Report(args) => cmd_report_html::run(&args),
        Command::Trace(args) => cmd_trace::run(&args),
    };
    match result {
        Ok(code) => code.into(),
        Err(e) => {
            eprintln!("error: {e:#}");
            exit::FAILURE.into()
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    #[test]
    fn the_command_line_is_consistent() {
        // Every id named in `conflicts_with_all` and the like must exist.
        Cli::command().debug_assert();
    }

    #[test]
    fn a_config_file_excludes_every_quic_flag_of_serve_and_get() {
        for cmd in ["serve", "get"] {
            for id in crate::cmd_serve::QUIC_FLAGS {
                let flag = format!("--{}", id.replace('_', "-"));
                let mut args = vec!["quiclab", cmd, "--config", "c.json", &flag];
                // A valid value, so the conflict is what clap reports.
                let value = match *id {
                    "mtu_discovery" | "no_gso" | "no_address_token" | "early_response" | "ecn" => {
                        None
                    }
                    "quic_cc" => Some("cubic"),
                    "initial_rtt" => Some("100ms"),
                    "qlog_dir" => Some("q"),
                    _ => Some("1300"),
                };
                args.extend(value);
                let err = Cli::command()
                    .try_get_matches_from(&args)
                    .expect_err(&format!("{cmd} --config with {flag}"));
                assert_eq!(
                    err.kind(),
                    clap::error::ErrorKind::ArgumentConflict,
                    "{cmd} {flag}: {err}"
                );
            }
        }
    }
}
