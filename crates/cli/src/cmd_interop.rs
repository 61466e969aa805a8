//! `quiclab interop`: download a body from every server peer with every client peer (each pair
//! with the best protocol they share), in the emulator or on loopback, and print a pass/fail
//! matrix. Peers are described by `peers/*.toml` (see peers/README.md).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use interop::{Certs, Loopback, Matrix, MatrixConfig, Peer};
use netem::config::{LinkConfig, LossConfig, QueueLimit, RateProfile};
use units::Rate;

use crate::exit::{self, Exit};

/// Options of `quiclab interop`.
#[derive(Debug, Clone, Args)]
pub struct InteropArgs {
    /// Client peers to use (comma-separated names; default: every peer with a client role).
    #[arg(long, value_delimiter = ',')]
    pub clients: Vec<String>,
    /// Server peers to use (comma-separated names; default: every peer with a server role).
    #[arg(long, value_delimiter = ',')]
    pub servers: Vec<String>,
    /// Body size to download.
    #[arg(long, default_value = "1MB")]
    pub size: String,
    /// Bottleneck rate in each direction ("10Mbit"; default: unlimited).
    #[arg(long)]
    pub rate: Option<String>,
    /// One-way delay in each direction ("15ms" gives a 30 ms base RTT).
    #[arg(long, default_value = "0ms")]
    pub delay: String,
    /// Random (Bernoulli) packet loss in each direction ("1%").
    #[arg(long, default_value = "0%")]
    pub loss: String,
    /// Bottleneck queue in packets (default: one bandwidth-delay product, at least 16).
    #[arg(long)]
    pub queue: Option<u64>,
    /// Downloads per pair.
    #[arg(long, default_value_t = 1)]
    pub repetitions: usize,
    /// Time limit of one download.
    #[arg(long, default_value = "60s")]
    pub timeout: String,
    /// Print the matrix as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Keep server and client logs here, one directory per pair (default: a new private directory
    /// in $TMPDIR, mode 0700, printed on stderr).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Run both ends on this host over 127.0.0.1 (no namespaces, no link emulation).
    #[arg(long)]
    pub loopback: bool,
    /// Directory of peer descriptions (default: ./peers, else the repository's).
    #[arg(long)]
    pub peers: Option<PathBuf>,
    /// Directory of the test PKI (default: ./certs, else the repository's).
    #[arg(long)]
    pub certs: Option<PathBuf>,
    /// First server port (each download uses the next one).
    #[arg(long, default_value_t = 14433)]
    pub base_port: u16,
    /// Seed of the emulated link's loss model.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// List the peers, whether they are installed and their versions, then exit.
    #[arg(long)]
    pub list: bool,
}

/// Runs `quiclab interop`.
pub fn run(args: &InteropArgs) -> anyhow::Result<Exit> {
    let peers_dir = locate(args.peers.as_deref(), "peers")?;
    let all = interop::load_dir(&peers_dir)?;
    let cfg = matrix_config(args, &peers_dir)?;
    if args.list {
        print_list(&all, &cfg);
        return Ok(exit::SUCCESS);
    }
    let servers = interop::select(&all, &args.servers, |p| p.spec.server.is_some())?;
    let clients = interop::select(&all, &args.clients, |p| p.spec.client.is_some())?;
    let cfg = MatrixConfig {
        out_dir: out_dir(args)?,
        ..cfg
    };

    let mut progress = |what: &str| {
        eprintln!("interop: {what}");
        let _ = std::io::stderr().flush();
    };
    let matrix = if args.loopback {
        interop::run_matrix(&Loopback, &servers, &clients, &cfg, &mut progress)
    } else {
        let spec = topology_spec(args)?;
        let topology = emu::Topology::create(&spec).context(
            "creating the emulator topology (needs root; use --loopback to run without it)",
        )?;
        let space = interop::Emulated {
            topology: &topology,
            client: 0,
            server: 0,
        };
        let m = interop::run_matrix(&space, &servers, &clients, &cfg, &mut progress);
        topology
            .shutdown()
            .context("tearing down the emulator topology")?;
        m
    };
    print_matrix(&matrix, args, &cfg)?;
    Ok(if matrix.any_failed() {
        exit::FAILURE
    } else {
        exit::SUCCESS
    })
}

/// `explicit`, else `./<name>` if it exists, else the repository's `<name>` (for `cargo run`
/// and the tests, which run from the crate directory).
pub(crate) fn locate(explicit: Option<&Path>, name: &str) -> anyhow::Result<PathBuf> {
    let candidates: Vec<PathBuf> = match explicit {
        Some(p) => vec![p.to_owned()],
        None => vec![
            PathBuf::from(name),
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../..")
                .join(name),
        ],
    };
    candidates
        .iter()
        .find(|p| p.is_dir())
        .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()))
        .with_context(|| format!("no {name} directory (tried {candidates:?}); pass --{name} DIR"))
}

fn matrix_config(args: &InteropArgs, peers_dir: &Path) -> anyhow::Result<MatrixConfig> {
    let size = units::parse_size(&args.size).with_context(|| format!("--size {}", args.size))?;
    let timeout = units::parse_duration(&args.timeout)
        .with_context(|| format!("--timeout {}", args.timeout))?;
    if args.repetitions == 0 {
        anyhow::bail!("--repetitions must be at least 1");
    }
    let certs_dir = locate(args.certs.as_deref(), "certs")?;
    let certs = Certs::from_dir(&certs_dir).context("reading the test PKI")?;
    Ok(MatrixConfig {
        size,
        repetitions: args.repetitions,
        timeout,
        ready_timeout: Duration::from_secs(15),
        // Set by `run` once the peers are selected (see `out_dir`): `--list` creates nothing.
        out_dir: PathBuf::new(),
        certs,
        peers_dir: peers_dir.to_owned(),
        peers_home: interop::peers_home(),
        quiclab: std::env::current_exe().context("locating the quiclab binary")?,
        base_port: args.base_port,
    })
}

/// Creates the log directory: `--out` (made absolute, created if missing), else a fresh private
/// directory kept for the user. This command runs as root, so the default is never a predictable
/// name in the shared temp dir: `$TMPDIR/quiclab-interop-<random>`, created atomically with mode
/// 0700 (an existing path is never reused).
fn out_dir(args: &InteropArgs) -> anyhow::Result<PathBuf> {
    match &args.out {
        Some(d) => {
            let d = if d.is_absolute() {
                d.clone()
            } else {
                std::env::current_dir()?.join(d)
            };
            fsutil::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
            Ok(d)
        }
        None => {
            let d = fsutil::PrivateDir::new("quiclab-interop-")
                .context("creating a private log directory")?
                .keep();
            eprintln!("interop: logs in {}", d.display());
            Ok(d)
        }
    }
}

/// The same link in both directions, from --rate, --delay, --loss and --queue.
fn link_config(args: &InteropArgs) -> anyhow::Result<LinkConfig> {
    let mut link = LinkConfig::ideal();
    link.delay =
        units::parse_duration(&args.delay).with_context(|| format!("--delay {}", args.delay))?;
    let p =
        units::parse_probability(&args.loss).with_context(|| format!("--loss {}", args.loss))?;
    if p > 0.0 {
        link.loss = LossConfig::Bernoulli { p };
    }
    if let Some(rate) = &args.rate {
        match units::parse_rate(rate).with_context(|| format!("--rate {rate}"))? {
            Rate::Unlimited => {}
            Rate::Bps(bps) => {
                link.rate = RateProfile::Fixed(bps);
                // One BDP of 1500-byte packets over the base RTT, so a single flow can fill
                // the link without the queue adding more than one RTT of delay.
                let rtt = 2.0 * link.delay.as_secs_f64();
                let bdp_packets = (bps as f64 * rtt / 8.0 / 1500.0).ceil() as u64;
                link.queue = QueueLimit {
                    packets: Some(args.queue.unwrap_or(bdp_packets.max(16))),
                    bytes: None,
                };
            }
        }
    }
    if let (Some(q), RateProfile::Unlimited) = (args.queue, &link.rate) {
        link.queue.packets = Some(q);
    }
    Ok(link)
}

fn topology_spec(args: &InteropArgs) -> anyhow::Result<emu::TopologySpec> {
    let link = link_config(args)?;
    let mut spec = emu::TopologySpec::new(link.clone(), link);
    spec.seed = args.seed;
    Ok(spec)
}

fn print_list(all: &[Peer], cfg: &MatrixConfig) {
    let mut vars = interop::Vars::default();
    vars.set("peers_home", cfg.peers_home.to_string_lossy())
        .set("peers_dir", cfg.peers_dir.to_string_lossy())
        .set("quiclab", cfg.quiclab.to_string_lossy());
    for p in all {
        let roles: Vec<String> = [
            p.spec
                .server
                .as_ref()
                .map(|s| format!("server {}", protocols(&s.protocols))),
            p.spec
                .client
                .as_ref()
                .map(|c| format!("client {}", protocols(&c.protocols))),
        ]
        .into_iter()
        .flatten()
        .collect();
        let state = match interop::check_installed(p, &vars) {
            Ok(()) => interop::version(p, &vars).unwrap_or_else(|| "installed".into()),
            Err(why) => format!("not installed: {why}"),
        };
        println!("{:<12} {:<40} {}", p.name(), roles.join("; "), state);
    }
}

fn protocols(ps: &[interop::Protocol]) -> String {
    ps.iter().map(|p| p.alpn()).collect::<Vec<_>>().join(",")
}

fn print_matrix(matrix: &Matrix, args: &InteropArgs, cfg: &MatrixConfig) -> anyhow::Result<()> {
    if args.json {
        let mut j = matrix.to_json();
        j["settings"] = serde_json::json!({
            "size_bytes": cfg.size,
            "rate": args.rate,
            "delay": args.delay,
            "loss": args.loss,
            "repetitions": cfg.repetitions,
            "mode": if args.loopback { "loopback" } else { "emulator" },
            "out_dir": cfg.out_dir,
        });
        println!("{}", serde_json::to_string_pretty(&j)?);
    } else {
        let link = if args.loopback {
            "loopback".to_owned()
        } else {
            format!(
                "emulator: {} each way, {} one-way delay, {} loss",
                args.rate.as_deref().unwrap_or("unlimited"),
                args.delay,
                args.loss
            )
        };
        println!(
            "interop: {} per download, {} repetition(s), {link}",
            units::format_size(cfg.size),
            cfg.repetitions
        );
        print!("{}", matrix.render_text());
        println!("(rows: clients, columns: servers; times are means; * = timed by the runner around the client process; logs: {})", cfg.out_dir.display());
    }
    Ok(())
}
