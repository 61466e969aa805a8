//! `quiclab pep` (hidden): the emulator's split-connection TCP proxy, run inside a PEP
//! namespace whose netfilter rules hand it the client's connections (see `emu`'s `pep`
//! module). One JSON line per relayed connection goes to `--stats-file`.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use endpoints::pep::{PepConfig, DEFAULT_MAX_CONNECTIONS};

use crate::cmd_serve::{parse_bytes, read_config};
use crate::exit::{self, Exit};

/// Options of `quiclab pep`.
#[derive(Debug, Clone, Args)]
pub struct PepArgs {
    /// Take the relay's configuration from this JSON file (a serialized `PepConfig`, as the
    /// emulator writes it; `-` reads standard input) instead of the flags below, except
    /// `--stats-file` and `--ready-file`.
    #[arg(long, conflicts_with_all = ["listen", "upstream", "tcp_cc", "buffer", "max_connections"])]
    config: Option<PathBuf>,
    /// Listener address: the TPROXY target port (bound with IP_TRANSPARENT), or with
    /// `--upstream` the address clients connect to.
    #[arg(long, default_value = "0.0.0.0:4480")]
    listen: SocketAddr,
    /// Relay every connection to this address instead of its original destination
    /// (non-transparent; for tests and debugging).
    #[arg(long)]
    upstream: Option<SocketAddr>,
    /// Kernel congestion control of both legs (cubic, reno, …).
    #[arg(long)]
    tcp_cc: Option<String>,
    /// Bytes held per direction (read from one leg, not yet acknowledged on the other).
    #[arg(long, default_value = "4MiB", value_parser = parse_bytes)]
    buffer: u64,
    /// Relayed connections open at once; more are reset.
    #[arg(long, default_value_t = DEFAULT_MAX_CONNECTIONS)]
    max_connections: usize,
    /// Append one JSON line per finished connection (both legs' TCP_INFO, bytes, bytes held).
    #[arg(long)]
    stats_file: Option<PathBuf>,
    /// Write the bound address to this file once the listener accepts.
    #[arg(long)]
    ready_file: Option<PathBuf>,
}

/// Runs the relay until SIGINT/SIGTERM.
pub fn run(args: &PepArgs) -> anyhow::Result<Exit> {
    let log = match &args.stats_file {
        Some(p) => {
            Some(fsutil::create_new(p).with_context(|| format!("creating {}", p.display()))?)
        }
        None => None,
    };
    let cfg = match &args.config {
        Some(path) => read_config(path)?,
        None => PepConfig {
            listen: args.listen,
            upstream: args.upstream,
            cc: args.tcp_cc.clone(),
            buffer: args.buffer,
            max_connections: args.max_connections,
        },
    };
    let ready_file = args.ready_file.clone();
    let summary = endpoints::pep::run_until_signal(cfg, log, move |addr| {
        if let Some(path) = &ready_file {
            // Write then rename, so a watcher never reads a half-written file; the temporary
            // name is created exclusively (a planted link is an error, not a target).
            let tmp = path.with_extension("tmp");
            match std::fs::remove_file(&tmp) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
            use std::io::Write as _;
            fsutil::create_new(&tmp)?.write_all(format!("{addr}\n").as_bytes())?;
            std::fs::rename(&tmp, path)?;
        }
        Ok(())
    })
    .context("quiclab pep")?;
    eprintln!(
        "quiclab pep: {} relayed, {} refused, {} failed",
        summary.relayed, summary.refused, summary.failed
    );
    Ok(exit::SUCCESS)
}
