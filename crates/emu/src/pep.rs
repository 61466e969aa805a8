//! The split-connection TCP proxy (PEP) of a flow with `flow.pep`: a namespace of its own
//! inserted between the flow's host and the router, on the side of the bottleneck the scenario
//! names, running `quiclab pep` (the relay in `endpoints::pep`).
//!
//! ```text
//! client-side:  client eth0 ── to-host [ql<run>-p<i>] to-router ── c<i> router ── s<i> ── server
//! server-side:  client ── c<i> router s<i> ── to-router [ql<run>-p<i>] to-host ── eth0 server
//! ```
//!
//! Inserted after the topology exists: the host's `eth0` (the router port's veth peer, whose
//! MAC the forwarder routes by) moves into the PEP namespace as `to-router`, and a new veth pair
//! joins the PEP (`to-host`) to a new `eth0` in the host. The forwarder never notices.
//!
//! In the PEP namespace the kernel routes (`ip_forward`; no addresses, static neighbours), so
//! QUIC's UDP and everything else passes untouched. TCP arriving from the client's direction is
//! diverted by netfilter TPROXY to the relay's listener (PEPsal's design: the packet keeps its
//! addresses, the kernel's TCP answers the client at once as if it were the server); packets of
//! the relay's own transparent sockets are marked and delivered locally by a policy route. The
//! relay connects onward from the client's address and port, so both legs carry the same
//! 4-tuple, as in the simulator's captures.
//!
//! The PEP's knobs become kernel settings of its namespace with the one translation endpoints
//! use ([`crate::kernel_tcp::settings`]): `pep_receive_window_max` and `pep_send_buffer` give
//! `tcp_rmem` / `tcp_wmem`, `pep_initial_window` the `initcwnd` of its routes (both legs),
//! `pep_cc` the relay's `TCP_CONGESTION`; `pep_buffer` bounds the relay per direction.

use std::fs::File;
use std::io::BufWriter;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ::results::FlowConfig;
use endpoints::pep::{PepConfig, PepConnectionRecord};
use netem::pcap::{LinkType, PcapWriter};
use scenario::model::{CcChoice, FlowSpec, PepPosition, PepSpec, Scenario};

use crate::error::EmuError;
use crate::forwarder::Side;
use crate::kernel_tcp;
use crate::netns;
use crate::offload::{self, Offload};
use crate::packet_socket::PacketSocket;
use crate::topology::{host_mac, mac_text, ChildHandle, Topology};

/// Port of the relay's listener inside the PEP namespace (TPROXY's target; never on the wire).
pub const RELAY_PORT: u16 = 4480;

/// Relayed connections one flow's PEP holds at once; more are reset. A flow opens at most a
/// few (HTTP/1.1's parallel connections), so this only bounds a misbehaving client.
pub const MAX_CONNECTIONS: usize = 64;

/// The PEP's interface toward its host and toward the router.
const TO_HOST: &str = "to-host";
const TO_ROUTER: &str = "to-router";

/// Firewall mark and routing table of the local-delivery policy route.
const MARK: &str = "0x1";
const TABLE: &str = "100";

/// How long the relay may take to listen.
const READY_TIMEOUT: Duration = Duration::from_secs(10);

fn unsupported(key: &str, why: impl Into<String>) -> EmuError {
    EmuError::UnsupportedScenario {
        key: key.to_string(),
        why: why.into(),
    }
}

/// Checks a flow's PEP (nothing without one); the PEP's side access link sits on the far side
/// of the emulated PEP (between it and the bottleneck) and is reported as an approximation.
pub fn check(f: &FlowSpec, warnings: &mut Vec<String>) -> Result<(), EmuError> {
    let Some(pep) = f.pep() else { return Ok(()) };
    kernel_tcp::pep_controller(pep)?;
    let ideal = netem::config::LinkConfig::ideal();
    let (key, access) = match pep.position {
        PepPosition::ClientSide => ("flow.client_access", &f.client_access),
        PepPosition::ServerSide => ("flow.server_access", &f.server_access),
    };
    if access.up != ideal || access.down != ideal {
        warnings.push(format!(
            "flow {}: {key} is applied between the PEP and the bottleneck (the emulator's PEP sits between the router and the host), not between the PEP and the host",
            f.name
        ));
    }
    Ok(())
}

/// The flow as its PEP's connections run it: the PEP's controller (with its initial window),
/// receive-window cap and send buffer; SACK, timestamps, minimum RTO and delayed ACKs the
/// flow's, as the simulator's PEP takes them (`PepParams`).
pub fn as_pep_flow(f: &FlowSpec, pep: &PepSpec) -> FlowSpec {
    let mut g = f.clone();
    g.cc = CcChoice::Ours(pep.cc);
    if let Some(t) = g.tcp_mut() {
        t.receive_window_max = pep.receive_window_max;
        t.send_buffer = pep.send_buffer;
        t.initial_receive_window = t.initial_receive_window.min(pep.receive_window_max);
    }
    g
}

/// One flow's PEP namespace, once wired.
#[derive(Debug, Clone)]
pub struct PepSite {
    /// Index of the flow.
    pub flow: usize,
    /// The PEP namespace (`ql<run>-p<flow>`).
    pub ns: String,
    /// Which side of the bottleneck it sits on.
    pub position: PepPosition,
    /// `TCP_CONGESTION` of the relay's sockets.
    pub cc: &'static str,
    /// `pep_buffer`, bytes per direction.
    pub buffer: u64,
    /// What the kernel holds in the PEP namespace, read back after setting it.
    pub config: FlowConfig,
}

/// Wires a PEP namespace for every flow with `flow.pep` (in flow order).
pub fn insert_all(topo: &mut Topology, s: &Scenario) -> Result<Vec<PepSite>, EmuError> {
    let mut sites = Vec::new();
    for (i, f) in s.flows.iter().enumerate() {
        if let Some(pep) = f.pep() {
            sites.push(insert(topo, i, f, pep)?);
        }
    }
    Ok(sites)
}

/// Inserts flow `i`'s PEP between its host and the router (see the module doc).
fn insert(topo: &mut Topology, i: usize, f: &FlowSpec, pep: &PepSpec) -> Result<PepSite, EmuError> {
    let cc = kernel_tcp::pep_controller(pep)?;
    let side = match pep.position {
        PepPosition::ClientSide => Side::Client,
        PepPosition::ServerSide => Side::Server,
    };
    let other = match side {
        Side::Client => Side::Server,
        Side::Server => Side::Client,
    };
    let host = topo.ns_name(side, i);
    let host_addr = topo.addr_of(side, i);
    let ns = format!("ql{}-p{i}", topo.run_id());
    topo.add_namespace(&ns)?;
    let kernel = kernel_tcp::settings(&as_pep_flow(f, pep))
        .ok_or_else(|| unsupported("flow.pep", "a PEP needs a TCP flow"))?;
    let mut sysctls = vec![
        ("net.ipv6.conf.all.disable_ipv6", "1".to_string()),
        ("net.ipv6.conf.default.disable_ipv6", "1".to_string()),
        ("net.ipv4.ip_forward", "1".to_string()),
        // The relay's packets carry the client's and the server's addresses on both sides.
        ("net.ipv4.conf.all.rp_filter", "0".to_string()),
        ("net.ipv4.conf.default.rp_filter", "0".to_string()),
    ];
    sysctls.extend(kernel.sysctls.iter().cloned());
    kernel_tcp::write_sysctls(&ns, sysctls)?;
    // Take the host's router-facing interface (its MAC is what the forwarder routes by) ...
    netns::ip(&["-n", &host, "link", "set", "eth0", "netns", &ns])?;
    netns::ip(&["-n", &ns, "link", "set", "eth0", "name", TO_ROUTER])?;
    // ... and give the host a new eth0 facing the PEP.
    let pep_mac = mac_text(pep_mac(side, i));
    // The new pair keeps the topology's MTU (the one every interface of the run has).
    let mtu = link_mtu(&ns, TO_ROUTER)?.to_string();
    netns::ip(&[
        "-n",
        &ns,
        "link",
        "add",
        TO_HOST,
        "address",
        &pep_mac,
        "mtu",
        &mtu,
        "type",
        "veth",
        "peer",
        "name",
        "eth0",
        "address",
        &mac_text(host_mac(side, i)),
        "mtu",
        &mtu,
        "netns",
        &host,
    ])?;
    netns::ip(&[
        "-n",
        &host,
        "addr",
        "add",
        &format!("{host_addr}/16"),
        "dev",
        "eth0",
    ])?;
    netns::in_netns(&host, || {
        // As on every host: software checksums and no segmentation offload, so the frames the
        // PEP forwards to the router are complete and at most one MTU.
        offload::disable("eth0", Offload::TxChecksum)?;
        offload::disable("eth0", Offload::Tso)?;
        offload::disable("eth0", Offload::Gso)
    })?;
    netns::in_netns(&ns, || {
        for dev in [TO_ROUTER, TO_HOST] {
            offload::disable(dev, Offload::TxChecksum)?;
            offload::disable(dev, Offload::Tso)?;
            offload::disable(dev, Offload::Gso)?;
        }
        Ok(())
    })?;
    for (n, dev) in [
        (&ns, TO_ROUTER),
        (&ns, TO_HOST),
        (&ns, "lo"),
        (&host, "eth0"),
    ] {
        netns::ip(&["-n", n, "link", "set", dev, "up"])?;
    }
    // Static neighbours, as everywhere in the topology (ARP never crosses the delayed path):
    // the host reaches the other side through the PEP's MAC; the PEP knows both.
    let neigh = |n: &str, addr: String, mac: String, dev: &str| {
        netns::ip(&[
            "-n",
            n,
            "neigh",
            "replace",
            &addr,
            "lladdr",
            &mac,
            "dev",
            dev,
            "nud",
            "permanent",
        ])
    };
    neigh(
        &ns,
        host_addr.to_string(),
        mac_text(host_mac(side, i)),
        TO_HOST,
    )?;
    for k in 0..topo.hosts(other) {
        let addr = topo.addr_of(other, k).to_string();
        neigh(&host, addr.clone(), pep_mac.clone(), "eth0")?;
        neigh(&ns, addr, mac_text(host_mac(other, k)), TO_ROUTER)?;
    }
    // Routes carry the PEP's initial window (and the flow's rto_min / quickack) for both legs.
    let host_route = format!("{host_addr}/32");
    for (dst, dev) in [(host_route.as_str(), TO_HOST), ("10.99.0.0/16", TO_ROUTER)] {
        let mut args: Vec<&str> = vec!["-n", &ns, "route", "replace", dst, "dev", dev];
        args.extend(kernel.route.iter().map(String::as_str));
        netns::ip(&args)?;
    }
    // Marked packets (the relay's own connections) are delivered locally whatever their address.
    netns::ip(&["-n", &ns, "rule", "add", "fwmark", MARK, "lookup", TABLE])?;
    netns::ip(&[
        "-n",
        &ns,
        "route",
        "add",
        "local",
        "0.0.0.0/0",
        "dev",
        "lo",
        "table",
        TABLE,
    ])?;
    let from_client = match side {
        Side::Client => TO_HOST,
        Side::Server => TO_ROUTER,
    };
    nft(&ns, &ruleset(from_client))?;
    let mut config = kernel_tcp::read_back(&ns, &host_route)?;
    config.cc = Some(cc.to_string());
    config.hystart = transport::linux_config::hystart(&CcChoice::Ours(pep.cc));
    Ok(PepSite {
        flow: i,
        ns,
        position: pep.position,
        cc,
        buffer: pep.buffer,
        config,
    })
}

/// MTU of interface `dev` in namespace `ns`.
fn link_mtu(ns: &str, dev: &str) -> Result<u64, EmuError> {
    let shown = netns::ip(&["-n", ns, "-j", "link", "show", dev])?;
    let links: serde_json::Value = serde_json::from_str(&shown).unwrap_or_default();
    links
        .get(0)
        .and_then(|l| l.get("mtu"))
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(|| EmuError::Command {
            command: format!("ip -n {ns} -j link show {dev}"),
            message: format!("no MTU in {shown:?}"),
        })
}

/// MAC of the PEP's interface toward its host (`P` in the third byte).
fn pep_mac(side: Side, index: usize) -> [u8; 6] {
    let mut m = host_mac(side, index);
    m[2] = 0x50;
    m
}

/// The PEP namespace's netfilter rules: TCP from the client's direction goes to the relay's
/// listener (TPROXY), and packets of the relay's transparent sockets are marked for local
/// delivery. TCP is never forwarded: without a listening relay TPROXY finds no socket and
/// lets the SYN through, so a connection would silently bypass the PEP; dropped, the client
/// retries. Everything else (UDP: QUIC, cross traffic) is forwarded untouched.
fn ruleset(from_client: &str) -> String {
    format!(
        "table ip quiclab_pep {{\n\
         \tchain prerouting {{\n\
         \t\ttype filter hook prerouting priority mangle; policy accept;\n\
         \t\tmeta l4proto tcp socket transparent 1 meta mark set {MARK} accept\n\
         \t\tiifname \"{from_client}\" meta l4proto tcp tproxy to :{RELAY_PORT} meta mark set {MARK} accept\n\
         \t}}\n\
         \tchain forward {{\n\
         \t\ttype filter hook forward priority filter; policy accept;\n\
         \t\tmeta l4proto tcp drop\n\
         \t}}\n\
         }}\n"
    )
}

/// Loads `rules` with `nft -f -` inside namespace `ns`.
fn nft(ns: &str, rules: &str) -> Result<(), EmuError> {
    let rules = rules.to_string();
    netns::in_netns(ns, move || {
        use std::io::Write as _;
        let failed = |message: String| EmuError::Command {
            command: "nft -f -".into(),
            message,
        };
        // The child inherits the calling thread's network namespace.
        let mut child = Command::new("nft")
            .args(["-f", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                failed(format!(
                    "cannot run nft (install nftables: scripts/setup.sh): {e}"
                ))
            })?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(rules.as_bytes())
                .map_err(|e| failed(e.to_string()))?;
        }
        let out = child
            .wait_with_output()
            .map_err(|e| failed(e.to_string()))?;
        if !out.status.success() {
            return Err(failed(
                String::from_utf8_lossy(&out.stderr).trim().to_string(),
            ));
        }
        Ok(())
    })
}

/// A flow's PEP as it ran: the kernel settings of its namespace and the relay's connections.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PepOutcome {
    /// Index of the flow.
    pub flow: usize,
    /// The PEP namespace it ran in.
    pub namespace: String,
    /// Effective settings of the PEP's connections, read back from the kernel (`tcp_rmem`,
    /// `tcp_wmem`, route `initcwnd` / `rto_min` / `quickack`, SACK, timestamps) and the relay's
    /// `TCP_CONGESTION`.
    pub config: FlowConfig,
    /// `pep_buffer`: bytes the relay holds per direction.
    pub buffer_bytes: u64,
    /// Relayed connections one PEP holds at once (64; more are reset).
    pub max_connections: usize,
    /// One record per connection the relay handled, in the order they ended.
    pub connections: Vec<PepConnectionRecord>,
}

impl PepSite {
    /// The outcome, with the connections the relay logged into `work`.
    pub fn outcome(&self, work: &Path) -> PepOutcome {
        PepOutcome {
            flow: self.flow,
            namespace: self.ns.clone(),
            config: self.config.clone(),
            buffer_bytes: self.buffer,
            max_connections: MAX_CONNECTIONS,
            connections: records(work, self.flow),
        }
    }
}

/// Starts the relay in `site`'s namespace and waits until it listens.
pub fn start(
    topo: &Topology,
    site: &PepSite,
    quiclab: &Path,
    work: &Path,
    log: std::fs::File,
) -> Result<ChildHandle, EmuError> {
    let ready = work.join(format!("pep-{}.ready", site.flow));
    let _ = std::fs::remove_file(&ready);
    let stats = stats_path(work, site.flow);
    let _ = std::fs::remove_file(&stats);
    let config = crate::runner::config_file(
        work,
        &format!("pep-{}.config.json", site.flow),
        &PepConfig {
            listen: SocketAddr::from(([0, 0, 0, 0], RELAY_PORT)),
            upstream: None,
            cc: Some(site.cc.into()),
            buffer: site.buffer,
            max_connections: MAX_CONNECTIONS,
        },
    )?;
    let mut cmd = Command::new(quiclab);
    cmd.arg("pep")
        .arg("--config")
        .arg(config)
        .arg("--stats-file")
        .arg(&stats)
        .arg("--ready-file")
        .arg(&ready)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log);
    let child = topo.spawn(&site.ns, &mut cmd)?;
    let deadline = Instant::now() + READY_TIMEOUT;
    while !ready.exists() {
        if let Ok(Some(status)) = child.try_wait() {
            let err = std::fs::read_to_string(work.join(format!("pep-{}.err", site.flow)))
                .unwrap_or_default();
            return Err(EmuError::Endpoint(format!(
                "PEP of flow {} exited ({status}) before it listened: {}",
                site.flow,
                err.trim()
            )));
        }
        if Instant::now() > deadline {
            return Err(EmuError::Endpoint(format!(
                "PEP of flow {} not listening after {READY_TIMEOUT:?}",
                site.flow
            )));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(child)
}

/// A capture of both legs inside a PEP namespace: every frame either way on the interface
/// toward the client (`pep-<i>-client-leg.pcap`) and toward the server
/// (`pep-<i>-server-leg.pcap`). With the same 4-tuple on both legs, the split shows as two
/// handshakes with their own sequence numbers, window scales and timestamps.
#[derive(Debug)]
pub struct PepCapture {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Largest frame captured (the forwarder's receive buffer: any MTU up to 64 KiB).
const SNAPLEN: usize = 65_536 + 64;

impl PepCapture {
    /// Starts capturing in `site`'s namespace into `dir`.
    pub fn start(site: &PepSite, dir: &Path) -> Result<PepCapture, EmuError> {
        fsutil::create_dir_all(dir)
            .map_err(|e| EmuError::io(format!("cannot create {}", dir.display()), e))?;
        let (client_dev, server_dev) = match site.position {
            PepPosition::ClientSide => (TO_HOST, TO_ROUTER),
            PepPosition::ServerSide => (TO_ROUTER, TO_HOST),
        };
        let mut outputs = Vec::new();
        for (dev, leg) in [(client_dev, "client-leg"), (server_dev, "server-leg")] {
            let path = dir.join(format!("pep-{}-{leg}.pcap", site.flow));
            // Unlinked if present (never followed), then created exclusively.
            let file = fsutil::create_replacing(&path, 0o600)
                .map_err(|e| EmuError::io(format!("cannot create {}", path.display()), e))?;
            let w = PcapWriter::with_link_type(
                BufWriter::with_capacity(1 << 20, file),
                LinkType::Ethernet,
                0,
                SNAPLEN as u32,
            )
            .map_err(|e| EmuError::io(format!("cannot write {}", path.display()), e))?;
            let sock = netns::in_netns(&site.ns, move || PacketSocket::open_capture(dev))?;
            outputs.push((sock, w));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name(format!("pep-capture-{}", site.flow))
            .spawn(move || capture_loop(outputs, &flag))
            .map_err(|e| EmuError::io("cannot start the PEP capture", e))?;
        Ok(PepCapture {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for PepCapture {
    /// Stops the capture and flushes its files.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn capture_loop(mut outputs: Vec<(PacketSocket, PcapWriter<BufWriter<File>>)>, stop: &AtomicBool) {
    let mut buf = vec![0u8; SNAPLEN];
    while !stop.load(Ordering::Relaxed) {
        let mut fds: Vec<libc::pollfd> = outputs
            .iter()
            .map(|(s, _)| libc::pollfd {
                fd: s.raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        // SAFETY: poll on a valid pollfd array with its length. The timeout bounds how long a
        // stop request waits.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 50) };
        for (sock, w) in &mut outputs {
            // Interfaces vanish at teardown: an error ends this socket's capture, not the run.
            while let Ok(Some(rx)) = sock.recv(&mut buf) {
                let t = if rx.realtime_ns == 0 {
                    unix_ns()
                } else {
                    rx.realtime_ns
                };
                let _ = w.write_unix_ns(t, &buf[..rx.len.min(buf.len())]);
            }
        }
    }
    for (_, w) in outputs {
        let _ = w.finish();
    }
}

fn unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Where flow `i`'s relay logs its connections.
pub fn stats_path(work: &Path, i: usize) -> std::path::PathBuf {
    work.join(format!("pep-{i}.stats.jsonl"))
}

/// The relay's connection records of flow `i` (none if it logged none).
pub fn records(work: &Path, i: usize) -> Vec<PepConnectionRecord> {
    fsutil::read_to_string_bounded(
        &stats_path(work, i),
        endpoints::server::stats_log::MAX_STATS_BYTES,
    )
    .unwrap_or_default()
    .lines()
    .filter_map(|l| serde_json::from_str(l).ok())
    .collect()
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::{SocketAddr, SocketAddrV4, TcpListener, TcpStream};
    use std::time::Duration;

    use super::*;
    use crate::kernel_tcp::{pep_controller, settings};
    use crate::mapping::check_supported;
    use crate::udp;
    use crate::TopologySpec;

    const TCP: &str = r#"
[run]
duration = "10s"

[link]
rate = "10Mbit"
delay = "5ms"

[[flow]]
name = "dl"
stack = "tcp"
app = "download"
size = "100kB"
cc = "cubic"
"#;

    fn scenario(overrides: &[&str]) -> Result<Scenario, String> {
        let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        scenario::parse_str(TCP, "pep.toml", Path::new("."), &overrides, &[])
            .map(|l| l.points[0].scenario.clone())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn pep_scenarios_map_and_unsupported_keys_are_refused_by_name() {
        for position in ["client-side", "server-side"] {
            let s = scenario(&[
                &format!("flow.pep=\"{position}\""),
                "flow.pep_cc=\"newreno\"",
                "flow.pep_initial_window=\"100pkt\"",
                "flow.pep_buffer=\"256KiB\"",
                "flow.pep_receive_window_max=\"4MiB\"",
                "flow.pep_send_buffer=\"2MiB\"",
            ])
            .expect("parses");
            let warnings = check_supported(&s).expect("the emulator runs a PEP");
            assert!(warnings.is_empty(), "{warnings:?}");
            let f = &s.flows[0];
            let pep = f.pep().expect("a PEP");
            assert_eq!(pep_controller(pep).expect("reno"), "reno");
            // The PEP's knobs in Linux's terms, by the endpoints' one translation.
            let k = settings(&as_pep_flow(f, pep)).expect("TCP");
            let get = |key: &str| {
                k.sysctls
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map(|(_, v)| v.clone())
            };
            assert_eq!(
                get("net.ipv4.tcp_rmem").as_deref(),
                Some("4096 131072 8388608")
            );
            assert_eq!(
                get("net.ipv4.tcp_wmem").as_deref(),
                Some("4096 16384 2097152")
            );
            assert!(
                k.route.join(" ").starts_with("initcwnd 100 "),
                "{:?}",
                k.route
            );
        }
        for (set, key) in [
            ("flow.pep_cc=\"newreno-approx\"", "flow.pep_cc"),
            ("flow.pep_cc=\"none\"", "flow.pep_cc"),
            // The flow's own knobs are checked as without a PEP.
            ("flow.initial_rto=\"3s\"", "flow.initial_rto"),
        ] {
            let s = scenario(&["flow.pep=\"server-side\"", set]).expect("parses");
            let e = check_supported(&s).expect_err(set).to_string();
            assert!(e.contains(key), "{set}: {e}");
        }
    }

    /// A server-side PEP namespace forwards UDP untouched and hands TCP to a transparent relay
    /// (here in-process) that reaches the server from the client's own address.
    #[test]
    fn udp_passes_and_tcp_is_relayed_transparently() {
        let s = scenario(&["flow.pep=\"server-side\""]).expect("parses");
        let ideal = netem::LinkConfig::ideal();
        let mut topo =
            Topology::create(&TopologySpec::new(ideal.clone(), ideal)).expect("topology");
        let sites = insert_all(&mut topo, &s).expect("PEP wired");
        assert_eq!(sites.len(), 1);
        let site = &sites[0];
        assert!(crate::cleanup::run_id_of(&site.ns).is_some(), "{}", site.ns);
        assert_eq!(site.config.cc.as_deref(), Some("cubic"));
        assert_eq!(site.config.initcwnd_packets, Some(10));

        // UDP both ways, addresses unchanged.
        let server_addr = SocketAddrV4::new(topo.server_addr(0), 5000);
        let server = udp::udp_in(topo.server_ns(0), server_addr).expect("server socket");
        let client = udp::udp_in(topo.client_ns(0), SocketAddrV4::new(topo.client_addr(0), 0))
            .expect("client socket");
        for sock in [&server, &client] {
            sock.set_read_timeout(Some(Duration::from_secs(2)))
                .expect("timeout");
        }
        client.send_to(b"quic", server_addr).expect("send");
        let mut buf = [0u8; 16];
        let (n, from) = server
            .recv_from(&mut buf)
            .expect("the datagram crosses the PEP");
        assert_eq!(&buf[..n], b"quic");
        assert_eq!(from, client.local_addr().expect("addr"));
        server.send_to(b"back", from).expect("reply");
        let (n, _) = client
            .recv_from(&mut buf)
            .expect("the reply crosses it too");
        assert_eq!(&buf[..n], b"back");

        let listener = netns::in_netns(topo.server_ns(0), || {
            TcpListener::bind(SocketAddrV4::new(topo.server_addr(0), 5001))
                .map_err(|e| EmuError::io("bind", e))
        })
        .expect("server listener");
        let target = SocketAddrV4::new(topo.server_addr(0), 5001);
        // No relay yet: TCP must not bypass the PEP (the forward chain drops it).
        let bypass = netns::in_netns(topo.client_ns(0), || {
            TcpStream::connect_timeout(&target.into(), Duration::from_millis(300))
                .map_err(|e| EmuError::io("connect", e))
        });
        assert!(bypass.is_err(), "TCP reached the server without the relay");
        // TCP: the relay in the PEP namespace (a thread there, the real relay code).
        let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<()>();
        let pep_ns = site.ns.clone();
        let relay = std::thread::spawn(move || {
            netns::enter(&netns::open(&pep_ns).expect("PEP ns")).expect("setns");
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(endpoints::pep::run(
                endpoints::pep::PepConfig {
                    listen: SocketAddr::from(([0, 0, 0, 0], RELAY_PORT)),
                    cc: Some("reno".into()),
                    ..endpoints::pep::PepConfig::default()
                },
                None,
                move |_| {
                    let _ = ready_tx.send(());
                    Ok(())
                },
                async move {
                    let _ = tokio::task::spawn_blocking(move || stop_rx.recv()).await;
                },
            ))
        });
        ready_rx
            .recv_timeout(Duration::from_secs(5))
            .expect("the relay listens");
        let mut conn = netns::in_netns(topo.client_ns(0), || {
            TcpStream::connect_timeout(&target.into(), Duration::from_secs(2))
                .map_err(|e| EmuError::io("connect", e))
        })
        .expect("connected through the PEP");
        conn.write_all(b"hello").expect("write");
        let (mut accepted, peer) = listener.accept().expect("the relay reaches the server");
        assert_eq!(
            peer,
            conn.local_addr().expect("addr"),
            "transparent: the client's address"
        );
        let mut got = [0u8; 5];
        accepted.read_exact(&mut got).expect("relayed bytes");
        assert_eq!(&got, b"hello");
        accepted.write_all(b"world").expect("reply");
        conn.read_exact(&mut got).expect("relayed back");
        assert_eq!(&got, b"world");
        drop((conn, accepted));
        let _ = stop_tx.send(());
        let summary = relay.join().expect("relay thread").expect("relay ran");
        assert_eq!(summary.relayed, 1, "{summary:?}");
        let ns = site.ns.clone();
        topo.shutdown().expect("teardown");
        assert!(!netns::list().expect("list").contains(&ns), "{ns} left");
    }

    /// A killed run's PEP namespace is recognised as quiclab's and removed by cleanup.
    #[test]
    fn cleanup_removes_a_dead_runs_pep_namespace() {
        let s = scenario(&["flow.pep=\"client-side\""]).expect("parses");
        let ideal = netem::LinkConfig::ideal();
        let mut topo =
            Topology::create(&TopologySpec::new(ideal.clone(), ideal)).expect("topology");
        let sites = insert_all(&mut topo, &s).expect("PEP wired");
        let ns = sites[0].ns.clone();
        let all: Vec<String> = topo.namespaces().to_vec();
        // As SIGKILL would leave it: namespaces there, lock released.
        topo.abandon();
        assert!(crate::cleanup::run_id_of(&ns).is_some(), "{ns}");
        // Another test's cleanup may remove the set first, and a process forked by a test
        // running beside this one may hold a copy of the lock's descriptor for a moment (the
        // run then looks alive): either way the set must be gone after a few attempts.
        let mut left = all.clone();
        for _ in 0..20 {
            crate::cleanup_stale().expect("cleanup");
            left = netns::list()
                .expect("list")
                .into_iter()
                .filter(|n| all.contains(n))
                .collect();
            if left.is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(left.is_empty(), "left: {left:?}");
    }
}
