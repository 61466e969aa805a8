//! Load through the emulator (`quiclab load attack|sweep --via SCENARIO`). The scenario's path
//! (`emu::path`: its bottleneck, its first flow's access links and MTU) joins a client and a
//! server namespace through the forwarder; a server peer (`peers/*.toml`: `quiclab serve`,
//! quic-go, nginx, …) runs in the server namespace, started as the interop matrix starts it
//! ([`crate::serve`]), and the caller's load generator runs in-process on a thread inside the
//! client namespace ([`EmulatedPath::run`], through `emu::Topology::run_in`), so its sockets and
//! its runtime's threads are the client namespace's. Nothing reaches the host's network: the
//! target is the server namespace's address.
//!
//! Teardown: the server and the namespaces go when the path is closed or dropped (after the
//! attack ends, fails, or is stopped by Ctrl-C or SIGTERM); a process killed outside that
//! leaves the namespaces to the next run's (or `quiclab emu --cleanup`'s) clean-up, which
//! removes only what a dead run's lock record proves quiclab's.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::{Certs, Emulated, PairConfig, Peer, Protocol};

/// Port of the server peer inside its namespace (the namespace is the run's own, so any port
/// is free).
const SERVER_PORT: u16 = 4433;
/// How long a server peer may take to become ready.
const READY_TIMEOUT: Duration = Duration::from_secs(15);

/// What to build: the path of a scenario and a server peer behind it.
#[derive(Debug, Clone, Default)]
pub struct ViaOptions {
    /// The scenario whose path (`link.*`, the first flow's access links and MTU) is emulated;
    /// its flows are not run.
    pub scenario: PathBuf,
    /// `KEY=VALUE` overrides of the scenario.
    pub set: Vec<String>,
    /// The server peer (a `peers/*.toml` with a server role).
    pub server: String,
    /// Size of the page every request fetches, bytes.
    pub size: Option<u64>,
    /// Seed of the link models (default: the scenario's `run.seed`).
    pub seed: Option<u64>,
    /// Kernel TCP's congestion controller on the path (default: the host's).
    pub tcp_cc: Option<String>,
    /// Keep the server's logs here (default: a private temporary directory, removed at the
    /// end).
    pub server_logs: Option<PathBuf>,
    /// Directory of peer descriptions.
    pub peers: PathBuf,
    /// Directory of the test PKI the servers use.
    pub certs: PathBuf,
    /// The `quiclab` binary (the `quiclab` server peer runs it).
    pub quiclab: PathBuf,
}

/// Why the path could not be set up or run: the user's input or the machine.
#[derive(Debug, thiserror::Error)]
pub enum ViaError {
    /// Bad input: the scenario, the peer, the protocols, the size.
    #[error("{0}")]
    BadInput(String),
    /// Anything else (not root, namespaces, the server failing to start).
    #[error("{0}")]
    Failed(String),
}

/// `context: error` as a [`ViaError::Failed`].
fn failed(context: &str) -> impl FnOnce(&dyn std::fmt::Display) -> ViaError + '_ {
    move |e| ViaError::Failed(format!("{context}: {e}"))
}

/// A live emulated path with a server peer behind it. Dropping it stops the server and removes
/// the namespaces; [`EmulatedPath::close`] does the same and returns the forwarder's counters.
pub struct EmulatedPath {
    /// Declared before the topology: fields drop in order, so the server stops first.
    server: Option<crate::Server>,
    topology: Option<emu::Topology>,
    /// The server's logs when not kept (`--server-logs`): removed after the topology.
    _private: Option<fsutil::PrivateDir>,
    /// The URL of the page (`https://10.99.2.1:4433/<size>` for most peers).
    pub url: String,
    /// What the path is, for the record: scenario, overrides, seed, server, links.
    pub description: serde_json::Value,
    /// What setting up said on the way (scenario warnings, leftovers removed, the path built),
    /// one line each, for the caller to show.
    pub notes: Vec<String>,
}

impl EmulatedPath {
    /// Builds the path of `args.scenario`, starts the server peer for `protocols` (every one
    /// must be one it serves; the first is the one it is started for) and waits until it is
    /// ready.
    pub fn open(args: &ViaOptions, protocols: &[Protocol]) -> Result<EmulatedPath, ViaError> {
        let file = &args.scenario;
        let Some(&first) = protocols.first() else {
            return Err(ViaError::BadInput("no HTTP version to serve".into()));
        };
        let mut notes = Vec::new();
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
        notes.extend(loaded.warnings.iter().map(|w| format!("warning: {w}")));
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

        let peers_dir = args.peers.clone();
        let all = crate::load_dir(&peers_dir).map_err(|e| ViaError::BadInput(e.to_string()))?;
        let peer = crate::select(&all, std::slice::from_ref(&args.server), |p| {
            p.spec.server.is_some()
        })
        .map_err(|e| ViaError::BadInput(format!("--server: {e}")))?[0]
            .clone();
        check_protocols(&peer, protocols)?;
        let cfg = PairConfig {
            size,
            protocol: first,
            port: SERVER_PORT,
            // A download's limit; serving has none (the server runs until the path closes).
            timeout: Duration::from_secs(60),
            ready_timeout: READY_TIMEOUT,
            out_dir: PathBuf::new(),
            certs: Certs::from_dir(&args.certs).map_err(|e| failed("reading the test PKI")(&e))?,
            peers_dir: peers_dir.clone(),
            peers_home: crate::peers_home(),
            quiclab: args.quiclab.clone(),
        };
        let mut vars = crate::Vars::default();
        vars.set("peers_home", cfg.peers_home.to_string_lossy())
            .set("peers_dir", cfg.peers_dir.to_string_lossy())
            .set("quiclab", cfg.quiclab.to_string_lossy());
        crate::check_installed(&peer, &vars).map_err(|why| {
            ViaError::BadInput(format!(
                "server peer {} is not installed: {why} (scripts/install-peers.sh installs it)",
                peer.name()
            ))
        })?;

        // What a killed run left behind (only what a dead run's lock proves quiclab's).
        let cleaned =
            emu::cleanup_stale().map_err(|e| failed("cannot clean up after earlier runs")(&e))?;
        if !cleaned.namespaces.is_empty() {
            notes.push(format!(
                "removed leftovers of killed runs: {} namespaces ({})",
                cleaned.namespaces.len(),
                cleaned.namespaces.join(", ")
            ));
        }
        emu::install_term_handler();
        let topology = emu::Topology::create(&spec).map_err(|e| {
            failed("creating the emulated path (needs root: network namespaces)")(&e)
        })?;
        let tcp_cc = emu::path::tcp_congestion_control(&topology, args.tcp_cc.as_deref())
            .map_err(|e| ViaError::BadInput(format!("--tcp-cc: {e}")))?;
        let (private, dir) = match &args.server_logs {
            Some(d) => {
                let d = absolute(d).map_err(|e| failed("current directory")(&e))?;
                fsutil::create_dir_all(&d)
                    .map_err(|e| failed(&format!("cannot create {}", d.display()))(&e))?;
                (None, d)
            }
            None => {
                let p = topology
                    .private_dir()
                    .map_err(|e| ViaError::Failed(e.to_string()))?;
                let d = p.path().to_path_buf();
                (Some(p), d)
            }
        };
        let space = Emulated {
            topology: &topology,
            client: 0,
            server: 0,
        };
        let server = crate::serve(&space, &peer, &dir, &cfg).map_err(|e| {
            ViaError::Failed(format!("server peer {} did not start: {e}", peer.name()))
        })?;
        let url = server.url.clone();
        notes.push(format!(
            "via {}: emulated path {} (client {}, server {} at {}), server {}, kernel TCP {}",
            file.display(),
            topology.run_id(),
            topology.client_ns(0),
            topology.server_ns(0),
            topology.server_addr(0),
            peer.name(),
            tcp_cc
        ));
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
            notes,
        })
    }

    /// Runs `f` (the load generator) on a thread inside the client namespace.
    pub fn run<R: Send>(&self, f: impl FnOnce() -> R + Send) -> Result<R, ViaError> {
        let topology = self
            .topology
            .as_ref()
            .ok_or_else(|| ViaError::Failed("the emulated path is closed".into()))?;
        topology
            .run_in(topology.client_ns(0), f)
            .map_err(|e| ViaError::Failed(e.to_string()))
    }

    /// The forwarder's counters so far.
    pub fn counters(&self) -> emu::ForwarderReport {
        self.topology
            .as_ref()
            .map(emu::Topology::forwarder_report)
            .unwrap_or_default()
    }

    /// Stops the server, removes the namespaces and returns the forwarder's final counters.
    pub fn close(mut self) -> Result<emu::ForwarderReport, ViaError> {
        if let Some(mut s) = self.server.take() {
            s.proc.stop(Duration::from_secs(2));
        }
        let topology = self
            .topology
            .take()
            .ok_or_else(|| ViaError::Failed("the emulated path is closed".into()))?;
        topology
            .shutdown()
            .map_err(|e| failed("tearing down the emulated path")(&e))
    }
}

/// Every requested protocol must be one the server peer serves.
fn check_protocols(peer: &Peer, protocols: &[Protocol]) -> Result<(), ViaError> {
    let served = peer
        .spec
        .server
        .as_ref()
        .map(|s| s.protocols.clone())
        .unwrap_or_default();
    for &p in protocols {
        if !served.contains(&p) {
            let names: Vec<&str> = served.iter().map(|p| p.version()).collect();
            return Err(ViaError::BadInput(format!(
                "--http {}: server peer {} serves HTTP {} only",
                p.version(),
                peer.name(),
                names.join(", ")
            )));
        }
    }
    Ok(())
}

fn absolute(p: &Path) -> std::io::Result<PathBuf> {
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
