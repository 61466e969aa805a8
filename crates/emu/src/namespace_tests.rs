//! Namespace tests of the emulator (run as root in CI; each removes what it creates, also when
//! it fails, through `Topology`'s Drop and the guards below). They live inside the crate because
//! they drive internals (probes, offload checks, cross traffic) that are not public API.

use std::net::{SocketAddr, SocketAddrV4, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use crate::netns;
use crate::udp::{self, ProbeRx};
use crate::{Topology, TopologySpec};
use netem::config::{LossConfig, QueueLimit, RateProfile};
use netem::LinkConfig;

fn link(delay_ms: u64) -> LinkConfig {
    LinkConfig {
        delay: Duration::from_millis(delay_ms),
        ..LinkConfig::ideal()
    }
}

fn topo(up: LinkConfig, down: LinkConfig) -> Topology {
    Topology::create(&TopologySpec::new(up, down)).expect("topology")
}

/// (client socket, server socket, server address).
fn pair(t: &Topology, port: u16) -> (UdpSocket, UdpSocket, SocketAddr) {
    let server_addr = SocketAddrV4::new(t.server_addr(0), port);
    let server = udp::udp_in(t.server_ns(0), server_addr).expect("server socket");
    let client =
        udp::udp_in(t.client_ns(0), SocketAddrV4::new(t.client_addr(0), 0)).expect("client socket");
    (client, server, SocketAddr::V4(server_addr))
}

fn ns_exists(name: &str) -> bool {
    netns::list().expect("list").iter().any(|n| n == name)
}

#[test]
fn create_and_shutdown_leave_no_namespace() {
    let t = topo(link(0), link(0));
    let names = t.namespaces().to_vec();
    assert_eq!(names.len(), 3);
    assert!(
        names.iter().all(|n| n.starts_with("ql") && ns_exists(n)),
        "{names:?}"
    );
    // Offloads as the datapath needs them.
    let tx = netns::in_netns(t.client_ns(0), || {
        crate::offload::tx_checksum_enabled("eth0")
    });
    assert!(
        !tx.expect("ioctl"),
        "client tx checksum offload must be off"
    );
    let gro = netns::in_netns(t.router_ns_name(), || crate::offload::gro_enabled("c0"));
    assert!(!gro.expect("ioctl"), "router GRO must be off");
    t.shutdown().expect("shutdown");
    for n in &names {
        assert!(!ns_exists(n), "{n} left behind");
    }
}

#[test]
fn udp_round_trip_carries_the_configured_delay() {
    let t = topo(link(5), link(5));
    let (client, server, dst) = pair(&t, 7001);
    client
        .set_read_timeout(Some(Duration::from_secs(1)))
        .expect("timeout");
    server
        .set_read_timeout(Some(Duration::from_secs(2)))
        .expect("timeout");
    let mut rtts = Vec::new();
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut buf = [0u8; 64];
            for _ in 0..20 {
                match server.recv_from(&mut buf) {
                    Ok((n, from)) => {
                        let _ = server.send_to(&buf[..n], from);
                    }
                    Err(_) => return,
                }
            }
        });
        let mut buf = [0u8; 64];
        for _ in 0..20 {
            let start = Instant::now();
            client.send_to(b"ping", dst).expect("send");
            client.recv_from(&mut buf).expect("echo arrives");
            rtts.push(start.elapsed());
        }
    });
    rtts.sort();
    let (min, median) = (rtts[0], rtts[rtts.len() / 2]);
    assert!(
        min >= Duration::from_millis(10),
        "min RTT {min:?} below 2 × delay"
    );
    assert!(
        median < Duration::from_millis(14),
        "median RTT {median:?} too far above 2 × delay"
    );
    // Final counters: `link_stats()` is a snapshot published every few tens of milliseconds, so
    // right after the last echo it may not include the last packet yet.
    let report = t.shutdown().expect("shutdown");
    assert_eq!(report.up.forwarded_packets, 20);
    assert_eq!(report.down.forwarded_packets, 20);
}

#[test]
fn bernoulli_loss_is_inside_its_binomial_interval() {
    let p = 0.05;
    let up = LinkConfig {
        loss: LossConfig::Bernoulli { p },
        ..link(1)
    };
    let t = topo(up, link(1));
    let (client, server, dst) = pair(&t, 7002);
    let n = 4000u64;
    let sent = udp::send_paced(&client, dst, 200, 20_000.0, n).expect("send");
    assert_eq!(sent, n);
    let got = udp::receive_probes(&server, Duration::from_millis(300), Duration::from_secs(5))
        .expect("receive");
    let lost = n - got.len() as u64;
    let stats = t.shutdown().expect("shutdown").up;
    assert_eq!(
        stats.lost_packets, lost,
        "every missing packet was lost by the model"
    );
    let mean = n as f64 * p;
    let half = 1.96 * (n as f64 * p * (1.0 - p)).sqrt();
    assert!(
        (lost as f64 - mean).abs() <= half,
        "lost {lost} of {n}, expected {mean:.0} ± {half:.0}"
    );
}

#[test]
fn rate_limit_holds_at_10_mbit() {
    let rate = 10_000_000u64;
    let up = LinkConfig {
        rate: RateProfile::Fixed(rate),
        queue: QueueLimit {
            packets: None,
            bytes: None,
        },
        ..link(1)
    };
    let t = topo(up, link(1));
    let (client, server, dst) = pair(&t, 7003);
    let payload = 1250usize;
    let n = 800u64;
    // Offered at ~1.5× the rate so the link is always busy.
    let rx = std::thread::scope(|s| {
        let h = s.spawn(|| {
            udp::receive_probes(&server, Duration::from_millis(500), Duration::from_secs(6))
        });
        udp::send_paced(&client, dst, payload, 1500.0, n).expect("send");
        h.join().expect("receiver").expect("receive")
    });
    assert_eq!(rx.len() as u64, n, "no loss configured");
    // A FIFO link without reordering delivers every probe whole and in order.
    assert!(rx.iter().all(|r| r.len == payload), "probe sizes");
    assert!(rx.windows(2).all(|w| w[0].seq < w[1].seq), "probe order");
    let first = rx.first().map(|r: &ProbeRx| r.rx_ns).unwrap_or(0);
    let last = rx.last().map(|r| r.rx_ns).unwrap_or(0);
    let ip_bits = ((payload + netem::wire::IPV4_UDP_OVERHEAD as usize) * 8) as f64;
    let achieved = (n - 1) as f64 * ip_bits / ((last - first) as f64 / 1e9);
    let ratio = achieved / rate as f64;
    assert!(
        (0.97..=1.03).contains(&ratio),
        "achieved {achieved:.0} bit/s ({ratio:.3} of the rate)"
    );
}

/// The forwarder runs a Mahimahi trace's profile as the simulator does: on/off every 20 ms (two
/// opportunities per ms for 10 ms, none for 10 ms, plus the last line: 21 per 20 ms,
/// 12.6 Mbit/s on average), kept busy, delivers that average.
#[test]
fn a_mahimahi_trace_paces_the_forwarder_at_its_average_rate() {
    let mut trace: Vec<u64> = (0..10).flat_map(|m| [m, m]).collect();
    trace.push(20);
    let rate = netem::mahimahi::profile(trace, 100).expect("a valid trace");
    let mean = rate
        .mean_rate(Duration::ZERO, Duration::from_millis(20))
        .expect("limited");
    assert_eq!(mean, 12_600_000.0);
    let up = LinkConfig {
        rate,
        queue: QueueLimit {
            packets: None,
            bytes: None,
        },
        ..link(1)
    };
    let t = topo(up, link(1));
    let (client, server, dst) = pair(&t, 7005);
    let payload = 1250usize;
    let ip_bits = ((payload + netem::wire::IPV4_UDP_OVERHEAD as usize) * 8) as f64;
    let n = 3000u64;
    // Offered at 1.5× the average so the queue never empties, even in the on phases.
    let pps = 1.5 * mean / ip_bits;
    let rx = std::thread::scope(|s| {
        let h = s.spawn(|| {
            udp::receive_probes(&server, Duration::from_millis(500), Duration::from_secs(10))
        });
        udp::send_paced(&client, dst, payload, pps, n).expect("send");
        h.join().expect("receiver").expect("receive")
    });
    assert_eq!(rx.len() as u64, n, "no loss configured");
    let first = rx.first().map(|r: &ProbeRx| r.rx_ns).unwrap_or(0);
    let last = rx.last().map(|r| r.rx_ns).unwrap_or(0);
    // Over 2.4 s of 20 ms periods, a partial period at either end is within 0.5%.
    let achieved = (n - 1) as f64 * ip_bits / ((last - first) as f64 / 1e9);
    let ratio = achieved / mean;
    assert!(
        (0.97..=1.03).contains(&ratio),
        "achieved {achieved:.0} bit/s ({ratio:.3} of the trace's average)"
    );
}

/// Sends raw frames from the client's `eth0` (inside its namespace).
fn raw_sender(ns: &str) -> OwnedFd {
    netns::in_netns(ns, || {
        // SAFETY: socket(2) with constant arguments.
        let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        assert!(raw >= 0, "raw socket");
        // SAFETY: fresh fd.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: sockaddr_ll is plain data; bind with its size.
        unsafe {
            let mut addr: libc::sockaddr_ll = std::mem::zeroed();
            addr.sll_family = libc::AF_PACKET as u16;
            addr.sll_ifindex = libc::if_nametoindex(c"eth0".as_ptr()) as i32;
            let rc = libc::bind(
                fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            );
            assert_eq!(rc, 0, "bind raw socket");
        }
        Ok(fd)
    })
    .expect("raw socket in namespace")
}

#[test]
fn junk_frames_do_not_stop_the_forwarder() {
    let t = topo(link(1), link(1));
    let fd = raw_sender(t.client_ns(0));
    let server_mac = [0x02, 0x51, 0x4c, 2, 0, 0];
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut rnd = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for i in 0..3000 {
        let len = 14 + (rnd() % 1500) as usize;
        let mut f: Vec<u8> = (0..len).map(|_| rnd() as u8).collect();
        if i % 2 == 0 {
            // Aimed at the server, claiming IPv4: exercises the IP parser with garbage.
            f[..6].copy_from_slice(&server_mac);
            f[12] = 0x08;
            f[13] = 0x00;
            if i % 4 == 0 && len > 20 {
                f[14] = 0x45; // plausible version/IHL, random total length
            }
        }
        // SAFETY: send(2) reads `f` for its length.
        unsafe { libc::send(fd.as_raw_fd(), f.as_ptr().cast(), f.len(), 0) };
    }
    // Still forwarding real traffic.
    let (client, server, dst) = pair(&t, 7004);
    server
        .set_read_timeout(Some(Duration::from_secs(2)))
        .expect("timeout");
    client.send_to(b"after junk", dst).expect("send");
    let mut buf = [0u8; 64];
    let (n, _) = server
        .recv_from(&mut buf)
        .expect("forwarder survived the junk");
    assert_eq!(&buf[..n], b"after junk");
    std::thread::sleep(Duration::from_millis(60));
    let r = t.forwarder_report();
    assert!(
        r.health.malformed_frames > 0 && r.health.rx_frames >= 3000,
        "{r:?}"
    );
    t.shutdown().expect("clean shutdown");
}

#[test]
fn captures_are_read_by_tshark() {
    // A private directory: a predictable /tmp name would let another user plant links.
    let scratch = fsutil::PrivateDir::new("quiclab-emu-pcap-").expect("scratch dir");
    let dir = scratch.path().join("captures");
    let spec = TopologySpec {
        capture_dir: Some(dir.clone()),
        ..TopologySpec::new(link(1), link(1))
    };
    let t = Topology::create(&spec).expect("topology");
    let (client, server, dst) = pair(&t, 7005);
    udp::send_paced(&client, dst, 100, 1000.0, 10).expect("send");
    let got = udp::receive_probes(&server, Duration::from_millis(200), Duration::from_secs(2))
        .expect("receive");
    assert_eq!(got.len(), 10);
    let report = t.shutdown().expect("shutdown");
    assert_eq!(report.health.capture_files.len(), 2);
    for name in ["client-side.pcap", "server-side.pcap"] {
        let out = std::process::Command::new("tshark")
            .arg("-r")
            .arg(dir.join(name))
            .args(["-Y", "udp.port == 7005"])
            .output()
            .expect("tshark runs (scripts/setup.sh installs it)");
        assert!(
            out.status.success(),
            "tshark failed on {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let lines = String::from_utf8_lossy(&out.stdout).lines().count();
        assert_eq!(
            lines,
            10,
            "{name}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

/// Removes any namespace of `names` at the end, even if the test failed before cleanup did.
struct NamespaceGuard(Vec<String>);

impl Drop for NamespaceGuard {
    fn drop(&mut self) {
        for n in &self.0 {
            let _ = netns::destroy(n);
        }
    }
}

#[test]
fn cleanup_removes_the_set_of_a_dead_run() {
    let t = topo(link(1), link(1));
    let names = t.namespaces().to_vec();
    let _guard = NamespaceGuard(names.clone());
    let child = t
        .spawn(
            t.server_ns(0),
            std::process::Command::new("sleep").arg("30"),
        )
        .expect("spawn sleep");
    let pid = child.pid() as i32;
    t.abandon();
    assert!(
        names.iter().all(|n| ns_exists(n)),
        "abandon must leave the set behind"
    );
    // Another test's cleanup may run concurrently and remove the set first; either way it must
    // be gone afterwards, with its process. A concurrent test's fork shares the lock's open file
    // description until its exec closes it, so the dead run's lock can look held for an instant
    // (seen once in CI: the set was "live_skipped"); a few tries a moment apart wait that out.
    let mut report = crate::cleanup_stale().expect("cleanup");
    for _ in 0..5 {
        if !names.iter().any(|n| ns_exists(n)) {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
        report = crate::cleanup_stale().expect("cleanup");
    }
    for n in &names {
        assert!(!ns_exists(n), "{n} not removed: {report:?}");
    }
    // The sleep was killed (reap it: it is our child).
    let status = child.wait_timeout(Duration::from_secs(2)).expect("wait");
    assert!(status.is_some(), "pid {pid} still running after cleanup");
}

#[test]
fn cleanup_touches_only_names_proven_by_a_dead_runs_lock() {
    use crate::cleanup::{RunLock, LOG_DIR_PREFIX};
    let tag = format!("{:06x}", (std::process::id() ^ 0x5a5a5a) & 0xff_ffff);
    // Someone else's namespaces: quiclab's prefix, and quiclab's exact pattern without a lock.
    let foreign = [format!("qlmine-{tag}"), format!("ql{tag}-c0")];
    let _guard = NamespaceGuard(foreign.to_vec());
    for n in &foreign {
        netns::ip(&["netns", "add", n]).expect("add foreign namespace");
    }
    let no_lock = fsutil::PrivateDir::new(&format!("{LOG_DIR_PREFIX}{tag}-")).expect("dir");
    // A killed run: its lock record stays, nobody holds it; its log directory is left behind,
    // and a link in the same name pattern points at a directory that must survive.
    let dead = loop {
        let id = format!("{:06x}", rand_id());
        if let Ok(lock) = RunLock::acquire(&id) {
            lock.abandon();
            break id;
        }
    };
    let left = fsutil::PrivateDir::new(&format!("{LOG_DIR_PREFIX}{dead}-")).expect("dir");
    let left_path = left.path().to_path_buf();
    std::mem::forget(left);
    let victim = fsutil::PrivateDir::new("quiclab-test-victim-").expect("dir");
    std::fs::write(victim.path().join("keep"), "x").expect("write");
    let link = std::env::temp_dir().join(format!("{LOG_DIR_PREFIX}{dead}-Link0000"));
    std::os::unix::fs::symlink(victim.path(), &link).expect("symlink");
    let report = crate::cleanup_stale().expect("cleanup");
    let link_survived = std::fs::symlink_metadata(&link).is_ok();
    let _ = std::fs::remove_file(&link);
    let _ = fsutil::remove_tree(&left_path);
    for n in &foreign {
        assert!(ns_exists(n), "foreign namespace {n} removed: {report:?}");
    }
    assert!(
        no_lock.path().is_dir(),
        "a directory without a lock record was removed"
    );
    assert!(
        !left_path.exists(),
        "the dead run's log directory was left: {report:?}"
    );
    assert!(
        link_survived,
        "a link was removed as if it were a log directory"
    );
    assert!(victim.path().join("keep").exists());
}

/// A random 24-bit number (the shape of a run id).
fn rand_id() -> u32 {
    let mut b = [0u8; 4];
    // SAFETY: getrandom writes at most 4 bytes into the buffer.
    unsafe { libc::getrandom(b.as_mut_ptr().cast(), 4, 0) };
    u32::from_le_bytes(b) & 0xff_ffff
}

#[test]
fn cleanup_leaves_a_live_run_alone() {
    let t = topo(link(0), link(0));
    let report = crate::cleanup_stale().expect("cleanup");
    for n in t.namespaces() {
        assert!(ns_exists(n), "live namespace {n} was removed");
        assert!(!report.namespaces.contains(n));
    }
    t.shutdown().expect("shutdown");
}

#[test]
fn cross_traffic_follows_its_schedule_through_the_forwarder() {
    use netem::cross::{CrossPattern, CrossSpec};
    let t = topo(link(2), link(2));
    let spec = CrossSpec {
        name: "cbr".into(),
        up: true,
        start: Duration::ZERO,
        stop: Some(Duration::from_millis(500)),
        // 1028 IP bytes every 8.224 ms: 61 datagrams in 0.5 s.
        pattern: CrossPattern::Cbr {
            rate_bps: 1_000_000,
            payload: 1000,
        },
    };
    let mut cross =
        crate::cross::CrossTraffic::start(&t, &[spec], 0, 0, Instant::now(), 7).expect("start");
    std::thread::sleep(Duration::from_millis(600));
    let r = cross.stop();
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].sent_packets, 61, "{r:?}");
    assert_eq!(r[0].delivered_packets, r[0].sent_packets, "{r:?}");
    assert_eq!(r[0].sent_bytes, 61 * 1028);
    assert_eq!(t.shutdown().expect("shutdown").up.forwarded_packets, 61);
}

/// Median and minimum of `n` UDP echoes from client `c` to server `s` on `port`.
fn echo_rtts(t: &Topology, c: usize, s: usize, port: u16, n: usize) -> (Duration, Duration) {
    let dst = SocketAddrV4::new(t.server_addr(s), port);
    let server = udp::udp_in(t.server_ns(s), dst).expect("server socket");
    let client =
        udp::udp_in(t.client_ns(c), SocketAddrV4::new(t.client_addr(c), 0)).expect("client socket");
    client
        .set_read_timeout(Some(Duration::from_secs(1)))
        .expect("timeout");
    server
        .set_read_timeout(Some(Duration::from_secs(2)))
        .expect("timeout");
    let mut rtts = Vec::new();
    std::thread::scope(|sc| {
        sc.spawn(|| {
            let mut buf = [0u8; 64];
            for _ in 0..n {
                match server.recv_from(&mut buf) {
                    Ok((len, from)) => {
                        let _ = server.send_to(&buf[..len], from);
                    }
                    Err(_) => return,
                }
            }
        });
        let mut buf = [0u8; 64];
        for _ in 0..n {
            let start = Instant::now();
            client.send_to(b"ping", dst).expect("send");
            client.recv_from(&mut buf).expect("echo arrives");
            rtts.push(start.elapsed());
        }
    });
    rtts.sort();
    (rtts[0], rtts[rtts.len() / 2])
}

#[test]
fn each_hosts_access_link_adds_its_own_delay_to_a_shared_bottleneck() {
    use scenario::model::DuplexLink;
    let duplex = |ms: u64| DuplexLink {
        up: link(ms),
        down: link(ms),
    };
    // Pair 0: 2 ms client access; pair 1: 20 ms client access and 5 ms server access. The
    // bottleneck adds 5 ms each way to both.
    let spec = TopologySpec {
        clients: 2,
        servers: 2,
        client_access: vec![duplex(2), duplex(20)],
        server_access: vec![duplex(0), duplex(5)],
        ..TopologySpec::new(link(5), link(5))
    };
    let t = Topology::create(&spec).expect("topology");
    let (min0, med0) = echo_rtts(&t, 0, 0, 7011, 20);
    let (min1, med1) = echo_rtts(&t, 1, 1, 7012, 20);
    // Round trips: pair 0 2 × (2 + 5) = 14 ms, pair 1 2 × (20 + 5 + 5) = 60 ms.
    for (name, min, med, want) in [("pair 0", min0, med0, 14), ("pair 1", min1, med1, 60)] {
        let want = Duration::from_millis(want);
        assert!(min >= want, "{name}: min RTT {min:?} below {want:?}");
        assert!(
            med < want + Duration::from_millis(4),
            "{name}: median RTT {med:?} too far above {want:?}"
        );
    }
    let report = t.shutdown().expect("shutdown");
    // Both pairs crossed the one bottleneck ...
    assert_eq!(report.up.forwarded_packets, 40, "{report:?}");
    assert_eq!(report.down.forwarded_packets, 40, "{report:?}");
    // ... and each host's own access link, in both directions; ideal ones are not links at all.
    let ports: Vec<(&str, u64, u64)> = report
        .access
        .iter()
        .map(|a| {
            (
                a.port.as_str(),
                a.ingress.forwarded_packets,
                a.egress.forwarded_packets,
            )
        })
        .collect();
    assert_eq!(
        ports,
        [("c0", 20, 20), ("c1", 20, 20), ("s1", 20, 20)],
        "{report:?}"
    );
}
