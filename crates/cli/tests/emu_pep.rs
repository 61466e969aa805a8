//! The emulator's split-TCP PEP end to end (root, real namespaces, `quiclab pep` as the relay):
//! seed 002's effect (100 kB over a 600 ms GEO path finishes sooner through the PEP), the
//! connection really is split (each of the four sockets has its own controller and RTT), and
//! nothing of a run is left behind, also when it fails.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::Scratch;
use emu::runner::{self, EmuRun, RunOptions};
use emu::WaitMode;

/// Seed 002's fixed-bandwidth GEO path without the terrestrial access link: 300 ms each way,
/// 20 Mbit/s down, 2 Mbit/s up, one BDP of queue; a 100 kB download over kernel TCP (CUBIC).
const GEO: &str = r#"
[run]
duration = "30s"

[link]
delay = "300ms"
queue = "1bdp"

[link.down]
rate = "20Mbit"

[link.up]
rate = "2Mbit"

[[flow]]
name = "dl"
stack = "tcp"
app = "download"
size = "100kB"
cc = "cubic"
"#;

/// Seed 002's PEP: at the gateway, with a 100-packet initial window; Reno so that its legs
/// are told apart from the endpoints' CUBIC.
const SERVER_PEP: &[&str] = &[
    "flow.pep=\"server-side\"",
    "flow.pep_initial_window=\"100pkt\"",
    "flow.pep_cc=\"newreno\"",
];

fn quiclab_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_quiclab"))
}

fn options(work: &Path) -> RunOptions {
    RunOptions {
        quiclab: quiclab_bin(),
        work_dir: Some(work.to_path_buf()),
        capture_dir: None,
        keylog: None,
        qlog_dir: None,
        stop: None,
        wait: WaitMode::Sleep,
    }
}

/// One run of GEO with `overrides`.
fn run_geo(overrides: &[&str], opts: &RunOptions) -> Result<EmuRun, emu::EmuError> {
    let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    let loaded = scenario::parse_str(GEO, "geo.toml", Path::new("."), &overrides, &[])
        .expect("the scenario parses");
    let spec = &loaded.runs()[0];
    runner::run(&loaded.points[0], spec, opts)
}

/// Namespaces whose names start with `prefix`.
fn namespaces_with(prefix: &str) -> Vec<String> {
    std::fs::read_dir("/run/netns")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(prefix))
                .collect()
        })
        .unwrap_or_default()
}

/// Live `quiclab pep` processes of runs whose work directory is inside `dir` (the relay's
/// `--stats-file` names it; tests running in parallel have directories of their own).
fn relay_processes(dir: &Path) -> Vec<u32> {
    let bin = quiclab_bin();
    let dir = dir.as_os_str().as_encoded_bytes();
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        let ours = args.first() == Some(&bin.as_os_str().as_encoded_bytes())
            && args.get(1) == Some(&&b"pep"[..])
            && args.iter().any(|a| a.starts_with(dir));
        if ours {
            pids.push(pid);
        }
    }
    pids
}

/// The run's prefix `ql<id>-` from its PEP namespace's name.
fn run_prefix(pep_ns: &str) -> String {
    let (id, _) = pep_ns.split_once('-').expect("ql<id>-p<i>");
    format!("{id}-")
}

fn assert_nothing_left(prefix: &str, dir: &Path) {
    assert!(
        namespaces_with(prefix).is_empty(),
        "left behind: {:?}",
        namespaces_with(prefix)
    );
    let id = prefix.trim_start_matches("ql").trim_end_matches('-');
    assert!(
        !Path::new(&format!("/run/quiclab/{id}.lock")).exists(),
        "lock file of {id} left"
    );
    let relays = relay_processes(dir);
    assert!(relays.is_empty(), "relay processes left: {relays:?}");
}

/// `(source port, destination port, sequence number, flags)` of every IPv4 TCP segment with
/// SYN set in an Ethernet pcap file (nanosecond or microsecond timestamps).
fn syns(path: &Path) -> Vec<(u16, u16, u32, u8)> {
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(data.len() >= 24, "{} has no pcap header", path.display());
    let mut out = Vec::new();
    let mut at = 24;
    while at + 16 <= data.len() {
        let len = u32::from_le_bytes(data[at + 8..at + 12].try_into().expect("4 bytes")) as usize;
        let frame = &data[at + 16..(at + 16 + len).min(data.len())];
        at += 16 + len;
        // Ethernet, IPv4, TCP.
        if frame.len() < 14 + 20 || frame[12..14] != [0x08, 0x00] || frame[14 + 9] != 6 {
            continue;
        }
        let ip = &frame[14..];
        let tcp = &ip[usize::from(ip[0] & 0x0f) * 4..];
        if tcp.len() < 20 || tcp[13] & 0x02 == 0 {
            continue;
        }
        let port = |i: usize| u16::from_be_bytes([tcp[i], tcp[i + 1]]);
        let seq = u32::from_be_bytes(tcp[4..8].try_into().expect("4 bytes"));
        out.push((port(0), port(2), seq, tcp[13]));
    }
    out
}

fn completion(run: &EmuRun) -> f64 {
    let f = &run.result.flows[0];
    assert!(f.error.is_none(), "{f:?}");
    assert_eq!(f.bytes_delivered, 100_000, "{f:?}");
    f.completion_s.expect("completed")
}

#[test]
fn a_pep_speeds_up_a_geo_download_over_two_split_connections() {
    let dir = Scratch::new("emu-pep");
    let plain_work = dir.path("plain");
    let plain = run_geo(&[], &options(&plain_work)).expect("run without PEP");
    assert!(plain.peps.is_empty());
    let pep_work = dir.path("pep");
    let pcap = dir.path("pcap");
    let mut opts = options(&pep_work);
    opts.capture_dir = Some(pcap.clone());
    let split = run_geo(SERVER_PEP, &opts).expect("run through the PEP");
    let (t_plain, t_pep) = (completion(&plain), completion(&split));
    eprintln!("100 kB over 600 ms: {t_plain:.3} s end to end, {t_pep:.3} s through the PEP");
    // Seed 002's effect: the PEP's 100-packet window sends the 100 kB in one satellite round
    // trip instead of CUBIC's slow start from 10 packets (two more 600 ms round trips).
    assert!(
        t_pep + 0.5 < t_plain,
        "PEP {t_pep:.3} s is not clearly faster than {t_plain:.3} s"
    );

    // The split: the relay handled one connection, whose two legs are the PEP's own sockets
    // with its controller, over the satellite (leg A) and the short terrestrial side (leg B).
    assert_eq!(split.peps.len(), 1);
    let pep = &split.peps[0];
    assert_eq!(pep.config.cc.as_deref(), Some("reno"), "{:?}", pep.config);
    assert_eq!(pep.config.initcwnd_packets, Some(100), "{:?}", pep.config);
    assert_eq!(
        pep.config.tcp_rmem.map(|r| r[2]),
        Some(2 * (16 << 20)),
        "16 MiB window cap → 32 MiB of buffer: {:?}",
        pep.config
    );
    assert_eq!(pep.config.tcp_wmem.map(|w| w[2]), Some(16 << 20));
    // Kept with the run's logs (`--out DIR` keeps them in DIR/emu/<run id>/).
    let kept: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(pep_work.join("pep-0.json")).expect("pep-0.json"),
    )
    .expect("JSON");
    assert_eq!(kept["config"]["initcwnd_packets"], 100, "{kept}");
    assert_eq!(kept["buffer_bytes"], 4 << 20, "{kept}");
    assert_eq!(pep.connections.len(), 1, "{:?}", pep.connections);
    let c = &pep.connections[0];
    assert!(c.error.is_none(), "{c:?}");
    assert!(c.downstream_bytes > 100_000, "{c:?}");
    assert!(c.upstream_bytes > 0, "{c:?}");
    assert!(c.max_held_downstream_bytes <= 4 << 20, "{c:?}");
    let a = c.client_leg.as_ref().expect("leg A's TCP_INFO");
    let b = c.server_leg.as_ref().expect("leg B's TCP_INFO");
    assert_eq!(
        (a.congestion.as_str(), b.congestion.as_str()),
        ("reno", "reno")
    );
    assert!(
        a.min_rtt_us >= 590_000,
        "leg A crosses the satellite: {a:?}"
    );
    assert!(
        b.min_rtt_us < 50_000,
        "leg B stays on the server's side: {b:?}"
    );
    // The captures in the PEP namespace: the same 4-tuple on both legs, but two handshakes,
    // each side's initial sequence numbers its own (SYN = 0x02, SYN-ACK = 0x12).
    let client_leg = syns(&pcap.join("pep-0-client-leg.pcap"));
    let server_leg = syns(&pcap.join("pep-0-server-leg.pcap"));
    let isn = |segs: &[(u16, u16, u32, u8)], flags: u8| -> Vec<u32> {
        segs.iter()
            .filter(|s| s.3 & 0x12 == flags)
            .map(|s| s.2)
            .collect()
    };
    let (a_syn, a_synack) = (isn(&client_leg, 0x02), isn(&client_leg, 0x12));
    let (b_syn, b_synack) = (isn(&server_leg, 0x02), isn(&server_leg, 0x12));
    assert!(
        !a_syn.is_empty() && !a_synack.is_empty() && !b_syn.is_empty() && !b_synack.is_empty(),
        "a handshake on each leg: {client_leg:?} / {server_leg:?}"
    );
    assert_eq!(
        (client_leg[0].0, client_leg[0].1),
        (server_leg[0].0, server_leg[0].1),
        "transparent: one 4-tuple"
    );
    assert!(
        a_syn.iter().all(|s| !b_syn.contains(s)) && a_synack.iter().all(|s| !b_synack.contains(s)),
        "the legs are two connections: {client_leg:?} / {server_leg:?}"
    );
    // Transparent: the server saw the client's own address and port.
    let server = endpoints::server::stats_log::read_records(&pep_work.join("server-0.stats.jsonl"))
        .expect("server statistics");
    assert_eq!(server.len(), 1, "{server:?}");
    assert_eq!(Some(server[0].peer), c.client, "{server:?}");
    // The endpoints' own sockets run CUBIC: the server's ends at the PEP (short RTT), while
    // the client's spans the satellite.
    match &server[0].transport {
        Some(endpoints::TransportSnapshot::Tcp(t)) => {
            assert_eq!(t.congestion, "cubic", "{t:?}");
            assert!(t.min_rtt_us < 50_000, "the server talks to the PEP: {t:?}");
        }
        other => panic!("no server TCP_INFO: {other:?}"),
    }
    let f = &split.result.flows[0];
    assert_eq!(
        f.config.as_ref().and_then(|c| c.cc.as_deref()),
        Some("cubic"),
        "{f:?}"
    );
    let handshake = f.connections[0].handshake_s.expect("handshake");
    assert!(
        handshake > 1.1,
        "the client's TCP + TLS handshakes still cross the satellite: {handshake}"
    );
    assert_nothing_left(&run_prefix(&pep.namespace), &dir.0);
}

#[test]
fn a_client_side_pep_delivers_and_a_failed_run_leaves_nothing() {
    let dir = Scratch::new("emu-pep-client");
    let work = dir.path("client-side");
    let run = run_geo(
        &["flow.pep=\"client-side\"", "flow.size=\"300kB\""],
        &options(&work),
    );
    let run = run.expect("run through a client-side PEP");
    let f = &run.result.flows[0];
    assert!(f.error.is_none(), "{f:?}");
    assert_eq!(f.bytes_delivered, 300_000, "{f:?}");
    let pep = &run.peps[0];
    let c = &pep.connections[0];
    let (a, b) = (
        c.client_leg.as_ref().expect("leg A"),
        c.server_leg.as_ref().expect("leg B"),
    );
    assert_eq!(
        (a.congestion.as_str(), b.congestion.as_str()),
        ("cubic", "cubic")
    );
    // Mirrored: the client's leg is short, the PEP's own connection crosses the satellite.
    assert!(a.min_rtt_us < 50_000, "{a:?}");
    assert!(b.min_rtt_us >= 590_000, "{b:?}");
    assert_nothing_left(&run_prefix(&pep.namespace), &dir.0);

    // A run stopped once its PEP listens (before the servers are ready) is torn down whole.
    fn stop_now() -> bool {
        true
    }
    let prefixes_before = namespaces_with("ql");
    let mut opts = options(&dir.path("stopped"));
    opts.stop = Some(stop_now);
    let err = run_geo(SERVER_PEP, &opts).expect_err("stopped");
    assert!(matches!(err, emu::EmuError::Interrupted), "{err}");
    // Only other runs' namespaces (other tests of this machine) may exist; none is new and ours.
    std::thread::sleep(Duration::from_millis(100));
    let pep_logs = std::fs::read_dir(dir.path("stopped"))
        .expect("work dir")
        .filter_map(|e| e.ok())
        .any(|e| e.file_name().to_string_lossy().starts_with("pep-0"));
    assert!(pep_logs, "the relay had been started");
    let new: Vec<String> = namespaces_with("ql")
        .into_iter()
        .filter(|n| !prefixes_before.contains(n) && n.ends_with("-p0"))
        .collect();
    assert!(new.is_empty(), "left behind: {new:?}");
    let relays = relay_processes(&dir.0);
    assert!(relays.is_empty(), "relay processes left: {relays:?}");
}
