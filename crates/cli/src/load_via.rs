//! `quiclab load attack|sweep --via SCENARIO`: load through the emulator. The scenario's path
//! (`emu::path`: its bottleneck, its first flow's access links and MTU) joins a client and a
//! server namespace through the forwarder; a server peer (`peers/*.toml`: `quiclab serve`,
//! quic-go, nginx, …) runs in the server namespace, started as the interop matrix starts it
//! (`interop::serve`), and the load generator runs in-process on a thread inside the client
//! namespace (`emu::Topology::run_in`), so its sockets and its runtime's threads are the client
//! namespace's. Nothing reaches the host's network: the target is the server namespace's address.
//!
//! Teardown: the server and the namespaces go when the attack ends, fails, or is stopped by
//! Ctrl-C or SIGTERM (the attack stops scheduling and drains first); a second Ctrl-C exits at
//! once and leaves the namespaces to the next `--via` run's (or `quiclab emu --cleanup`'s)
//! clean-up, which removes only what a dead run's lock record proves quiclab's.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use endpoints::client::HttpVersion;
use interop::{Certs, Emulated, PairConfig, Peer, Protocol};

use crate::cmd_interop::locate;

/// Port of the server peer inside its namespace (the namespace is the run's own, so any port
/// is free).
const SERVER_PORT: u16 = 4433;
/// How long a server peer may take to become ready.
const READY_TIMEOUT: Duration = Duration::from_secs(15);

/// The `--via` options of `quiclab load attack` and `quiclab load sweep`.
#[derive(Debug, Clone, Default, Args)]
pub struct ViaArgs {
    /// Load through the emulator (root): a client and a server namespace joined through the
    /// forwarder with this scenario's path (`link.*`, the first flow's access links and MTU;
    /// flows are not run), the `--server` peer in the server namespace, the load generator in
    /// the client namespace. Targets are generated: GET the server's `--size`-byte page.
    #[arg(long, value_name = "SCENARIO", conflicts_with_all = ["urls", "targets"])]
    pub via: Option<PathBuf>,
    /// With --via: override a scenario key, e.g. `--set link.loss=1%` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE", requires = "via")]
    pub set: Vec<String>,
    /// With --via: the server peer (a `peers/*.toml` with a server role: quiclab, quic-go,
    /// nginx, …).
    #[arg(long, value_name = "PEER", default_value = "quiclab")]
    pub server: String,
    /// With --via: size of the page every request fetches (e.g. 11000, 11kB).
    #[arg(long, value_name = "BYTES", value_parser = units::parse_size, requires = "via")]
    pub size: Option<u64>,
    /// With --via: seed of the link models [default: the scenario's `run.seed`].
    #[arg(long, requires = "via")]
    pub seed: Option<u64>,
    /// With --via: kernel TCP's congestion controller on the path (reno, cubic, bbr, …; a route attribute in both namespaces)
    /// [default: the host's default, recorded in emulator.json]. QUIC servers keep their own.
    #[arg(long, value_name = "NAME", requires = "via")]
    pub tcp_cc: Option<String>,
    /// With --via: keep the server's logs (command, stdout, stderr, key log) in DIR [default: a
    /// private temporary directory, removed at the end].
    #[arg(long, value_name = "DIR", requires = "via")]
    pub server_logs: Option<PathBuf>,
    /// With --via: directory of peer descriptions [default: ./peers, else the repository's].
    #[arg(long, value_name = "DIR", requires = "via")]
    pub peers: Option<PathBuf>,
    /// With --via: directory of the test PKI the servers use [default: ./certs, else the
    /// repository's].
    #[arg(long, value_name = "DIR", requires = "via")]
    pub certs: Option<PathBuf>,
}

/// Why `--via` could not set up: the user's input (exit 2) or the machine.
#[derive(Debug)]
pub enum ViaError {
    /// Bad input: the scenario, the peer, the protocols, the size.
    BadInput(String),
    /// Anything else (not root, namespaces, the server failing to start).
    Failed(anyhow::Error),
}

impl From<anyhow::Error> for ViaError {
    fn from(e: anyhow::Error) -> Self {
        ViaError::Failed(e)
    }
}

/// A live emulated path with a server peer behind it. Dropping it stops the server and removes
/// the namespaces; [`EmulatedPath::close`] does the same and returns the forwarder's counters.
pub struct EmulatedPath {
    /// Declared before the topology: fields drop in order, so the server stops first.
    server: Option<interop::Server>,
    topology: Option<emu::Topology>,
    /// The server's logs when not kept (`--server-logs`): removed after the topology.
    _private: Option<fsutil::PrivateDir>,
    /// The URL of the page (`https://10.99.2.1:4433/<size>` for most peers).
    pub url: String,
    /// What the path is, for the record: scenario, overrides, seed, server, links.
    pub description: serde_json::Value,
}

/// The peer server protocol of an HTTP version.
fn protocol(http: HttpVersion) -> Protocol {
    match http {
        HttpVersion::H1 => Protocol::Http11,
        HttpVersion::H2 => Protocol::H2,
        HttpVersion::H3 => Protocol::H3,
    }
}

impl EmulatedPath {
    /// Builds the path of `args.via`, starts the server peer for `http` (every version must be
    /// one it serves) and waits until it is ready.
    pub fn open(args: &ViaArgs, http: &[HttpVersion]) -> Result<EmulatedPath, ViaError> {
        let Some(file) = &args.via else {
            return Err(ViaError::Failed(anyhow::anyhow!("internal: no --via")));
        };
        let Some(size) = args.size else {
            return Err(ViaError::BadInput(
                "--via needs --size BYTES (the page every request fetches, e.g. --size 11000)"
                    .into(),
            ));
        };
        if size == 0 {
            return Err(ViaError::BadInput("--size must be at least 1 byte".into()));
        }
        let mut overrides = args.set.clone();
        if let Some(seed) = args.seed {
            overrides.push(format!("run.seed={seed}"));
        }
        let loaded =
            scenario::load(file, &overrides, &[]).map_err(|e| ViaError::BadInput(e.to_string()))?;
        for w in &loaded.warnings {
            eprintln!("warning: {w}");
        }
        if loaded.points.len() != 1 {
            return Err(ViaError::BadInput(format!(
                "{}: the scenario sweeps {} points; --via takes one path (fix its axes with --set)",
                file.display(),
                loaded.points.len()
            )));
        }
        let point = &loaded.points[0];
        let seed = loaded.runs().first().map_or(1, |r| r.seed);
        let spec = emu::path::topology_spec(&point.scenario, seed, emu::WaitMode::Sleep)
            .map_err(|e| ViaError::BadInput(format!("{}: {e}", file.display())))?;

        let peers_dir = locate(args.peers.as_deref(), "peers")?;
        let all = interop::load_dir(&peers_dir).map_err(|e| ViaError::BadInput(e.to_string()))?;
        let peer = interop::select(&all, std::slice::from_ref(&args.server), |p| {
            p.spec.server.is_some()
        })
        .map_err(|e| ViaError::BadInput(format!("--server: {e}")))?[0]
            .clone();
        check_protocols(&peer, http)?;
        let certs_dir = locate(args.certs.as_deref(), "certs")?;
        let cfg = PairConfig {
            size,
            protocol: protocol(http[0]),
            port: SERVER_PORT,
            // A download's limit; serving has none (the server runs until the path closes).
            timeout: Duration::from_secs(60),
            ready_timeout: READY_TIMEOUT,
            out_dir: PathBuf::new(),
            certs: Certs::from_dir(&certs_dir).context("reading the test PKI")?,
            peers_dir: peers_dir.clone(),
            peers_home: interop::peers_home(),
            quiclab: std::env::current_exe().context("locating the quiclab binary")?,
        };
        let mut vars = interop::Vars::default();
        vars.set("peers_home", cfg.peers_home.to_string_lossy())
            .set("peers_dir", cfg.peers_dir.to_string_lossy())
            .set("quiclab", cfg.quiclab.to_string_lossy());
        interop::check_installed(&peer, &vars).map_err(|why| {
            ViaError::BadInput(format!(
                "server peer {} is not installed: {why} (scripts/install-peers.sh installs it)",
                peer.name()
            ))
        })?;

        // What a killed run left behind (only what a dead run's lock proves quiclab's).
        let cleaned = emu::cleanup_stale().context("cannot clean up after earlier runs")?;
        if !cleaned.namespaces.is_empty() {
            eprintln!(
                "removed leftovers of killed runs: {} namespaces ({})",
                cleaned.namespaces.len(),
                cleaned.namespaces.join(", ")
            );
        }
        emu::install_term_handler();
        let topology = emu::Topology::create(&spec)
            .context("creating the emulated path (needs root: network namespaces)")?;
        let tcp_cc = emu::path::tcp_congestion_control(&topology, args.tcp_cc.as_deref())
            .map_err(|e| ViaError::BadInput(format!("--tcp-cc: {e}")))?;
        let (private, dir) = match &args.server_logs {
            Some(d) => {
                let d = absolute(d)?;
                fsutil::create_dir_all(&d)
                    .with_context(|| format!("cannot create {}", d.display()))?;
                (None, d)
            }
            None => {
                let p = topology.private_dir().map_err(anyhow::Error::from)?;
                let d = p.path().to_path_buf();
                (Some(p), d)
            }
        };
        let space = Emulated {
            topology: &topology,
            client: 0,
            server: 0,
        };
        let server = interop::serve(&space, &peer, &dir, &cfg).map_err(|e| {
            ViaError::Failed(anyhow::anyhow!(
                "server peer {} did not start: {e}",
                peer.name()
            ))
        })?;
        let url = server.url.clone();
        eprintln!(
            "via {}: emulated path {} (client {}, server {} at {}), server {}, kernel TCP {}",
            file.display(),
            topology.run_id(),
            topology.client_ns(0),
            topology.server_ns(0),
            topology.server_addr(0),
            peer.name(),
            tcp_cc
        );
        let description = serde_json::json!({
            "scenario": file,
            "set": args.set,
            "seed": seed,
            "server": peer.name(),
            "size_bytes": size,
            "url": url,
            "run_id": topology.run_id(),
            "namespaces": topology.namespaces(),
            "mtu": spec.mtu,
            "kernel_tcp_cc": tcp_cc,
            "up": spec.up,
            "down": spec.down,
            "client_access": spec.client_access,
            "server_access": spec.server_access,
        });
        Ok(EmulatedPath {
            server: Some(server),
            topology: Some(topology),
            _private: private,
            url,
            description,
        })
    }

    /// Runs `f` (the load generator) on a thread inside the client namespace.
    pub fn run<R: Send>(&self, f: impl FnOnce() -> R + Send) -> anyhow::Result<R> {
        let topology = self
            .topology
            .as_ref()
            .context("internal: the path is closed")?;
        Ok(topology.run_in(topology.client_ns(0), f)?)
    }

    /// The forwarder's counters so far.
    pub fn counters(&self) -> emu::ForwarderReport {
        self.topology
            .as_ref()
            .map(emu::Topology::forwarder_report)
            .unwrap_or_default()
    }

    /// Stops the server, removes the namespaces and returns the forwarder's final counters.
    pub fn close(mut self) -> anyhow::Result<emu::ForwarderReport> {
        if let Some(mut s) = self.server.take() {
            s.proc.stop(Duration::from_secs(2));
        }
        let topology = self.topology.take().context("internal: closed twice")?;
        topology
            .shutdown()
            .context("tearing down the emulated path")
    }
}

/// Every requested HTTP version must be one the server peer serves.
fn check_protocols(peer: &Peer, http: &[HttpVersion]) -> Result<(), ViaError> {
    let served = peer
        .spec
        .server
        .as_ref()
        .map(|s| s.protocols.clone())
        .unwrap_or_default();
    for &h in http {
        if !served.contains(&protocol(h)) {
            let names: Vec<&str> = served.iter().map(|p| p.version()).collect();
            return Err(ViaError::BadInput(format!(
                "--http {}: server peer {} serves HTTP {} only",
                h.label(),
                peer.name(),
                names.join(", ")
            )));
        }
    }
    Ok(())
}

fn absolute(p: &Path) -> anyhow::Result<PathBuf> {
    Ok(if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()?.join(p)
    })
}

/// Per-direction counters of the bottleneck between two snapshots (one attack of a sweep).
pub fn link_delta(
    before: &emu::ForwarderReport,
    after: &emu::ForwarderReport,
) -> serde_json::Value {
    let one = |b: &netem::LinkStats, a: &netem::LinkStats| {
        let (b, a) = (b.to_result(0.0, 0), a.to_result(0.0, 0));
        serde_json::json!({
            "offered_packets": a.offered_packets - b.offered_packets,
            "forwarded_packets": a.forwarded_packets - b.forwarded_packets,
            "forwarded_bytes": a.forwarded_bytes - b.forwarded_bytes,
            "lost_packets": a.lost_packets - b.lost_packets,
            "dropped_queue_packets": a.dropped_queue_packets - b.dropped_queue_packets,
            "max_queue_packets": a.max_queue_packets,
        })
    };
    serde_json::json!({
        "up": one(&before.up, &after.up),
        "down": one(&before.down, &after.down),
    })
}

/// One line about the path's counters for stderr.
pub fn summary_line(r: &emu::ForwarderReport) -> String {
    let dir = |s: &netem::LinkStats| {
        let l = s.to_result(0.0, 0);
        format!(
            "{} forwarded, {} lost, {} queue drops",
            l.forwarded_packets, l.lost_packets, l.dropped_queue_packets
        )
    };
    format!(
        "emulated path: up {}; down {}; forwarder release lateness p50 {} µs, p99 {} µs",
        dir(&r.up),
        dir(&r.down),
        r.release_lateness
            .quantile_us(0.5)
            .map_or("–".into(), |v| format!("{v:.0}")),
        r.release_lateness
            .quantile_us(0.99)
            .map_or("–".into(), |v| format!("{v:.0}")),
    )
}
