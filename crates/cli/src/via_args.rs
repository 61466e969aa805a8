//! The `--via` flags of `quiclab load attack` and `quiclab load sweep`, mapped onto
//! `interop::via` (the emulated path and its server peer) and `load::sweep::Through`.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use endpoints::client::HttpVersion;
use interop::via::{EmulatedPath, ViaError, ViaOptions};
use interop::Protocol;

use crate::cmd_interop::locate;

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

/// The peer protocol of an HTTP version.
fn protocol(http: HttpVersion) -> Protocol {
    match http {
        HttpVersion::H1 => Protocol::Http11,
        HttpVersion::H2 => Protocol::H2,
        HttpVersion::H3 => Protocol::H3,
    }
}

/// Opens the path of `args` for `http`; `Ok(Err(message))` is bad input (exit 2), the notes
/// of setting up are printed.
pub fn open(
    args: &ViaArgs,
    http: &[HttpVersion],
) -> anyhow::Result<Result<Option<EmulatedPath>, String>> {
    let Some(scenario) = args.via.clone() else {
        return Ok(Ok(None));
    };
    let options = ViaOptions {
        scenario,
        set: args.set.clone(),
        server: args.server.clone(),
        size: args.size,
        seed: args.seed,
        tcp_cc: args.tcp_cc.clone(),
        server_logs: args.server_logs.clone(),
        peers: locate(args.peers.as_deref(), "peers")?,
        certs: locate(args.certs.as_deref(), "certs")?,
        quiclab: std::env::current_exe().context("locating the quiclab binary")?,
    };
    let protocols: Vec<Protocol> = http.iter().copied().map(protocol).collect();
    match EmulatedPath::open(&options, &protocols) {
        Ok(p) => {
            for n in &p.notes {
                eprintln!("{n}");
            }
            Ok(Ok(Some(p)))
        }
        Err(ViaError::BadInput(e)) => Ok(Err(e)),
        Err(e @ ViaError::Failed(_)) => Err(e.into()),
    }
}

/// A sweep's attacks through the emulated path: each runs in the client namespace and is
/// recorded with the bottleneck's counters during it.
pub struct Through<'a>(pub &'a EmulatedPath);

impl load::sweep::Through for Through<'_> {
    fn attack(
        &self,
        attack: &mut (dyn FnMut() -> Result<load::metrics::Summary, load::client::RunError> + Send),
    ) -> Result<
        (
            Result<load::metrics::Summary, load::client::RunError>,
            serde_json::Value,
        ),
        load::sweep::SweepError,
    > {
        let before = self.0.counters();
        let outcome = self
            .0
            .run(attack)
            .map_err(|e| load::sweep::SweepError::Through(e.to_string()))?;
        let link = interop::via::link_delta(&before, &self.0.counters());
        Ok((outcome, link))
    }

    fn description(&self) -> serde_json::Value {
        self.0.description.clone()
    }
}
