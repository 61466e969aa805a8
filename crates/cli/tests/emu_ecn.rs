//! ECN in the emulator (root, real namespaces): the forwarder's CoDel marks what the real
//! stacks send ECT, the mark reaches the receiving host in its IP header, and the stacks answer
//! it. Kernel TCP negotiates RFC 3168 ECN from `flow.ecn` (`net.ipv4.tcp_ecn = 1` in the flow's
//! namespaces) and the capture shows ECE and CWR; quinn's endpoints send ECT(0) only with
//! `flow.ecn`, so without it the same queue drops instead of marking.

mod common;

use std::path::Path;

use common::{quiclab, text, Scratch};

/// A 3 MB CUBIC download over 10 Mbit/s and 20 ms RTT through an 8-BDP buffer under CoDel
/// with ECN marking.
fn scenario(stack: &str, ecn: bool) -> String {
    format!(
        "[run]\nduration = \"20s\"\n\
         [link]\nrate = \"10Mbit\"\nrtt = \"20ms\"\nqueue = \"8bdp\"\n\
         qdisc = {{ model = \"codel\", ecn = true }}\n\
         [[flow]]\nname = \"dl\"\nstack = \"{stack}\"\napp = \"download\"\nsize = \"3MB\"\n\
         cc = \"cubic\"\necn = {ecn}\n"
    )
}

fn run(stack: &str, ecn: bool) -> (results::Run, Scratch) {
    let dir = Scratch::new(&format!("emu-ecn-{stack}-{ecn}"));
    let file = dir.file("ecn.toml", &scenario(stack, ecn));
    let out = dir.path("out");
    let o = quiclab(
        &[
            "emu",
            file.to_str().expect("utf-8 path"),
            "--out",
            out.to_str().expect("utf-8 path"),
            "--pcap",
            dir.path("pcap").to_str().expect("utf-8 path"),
        ],
        &dir.0,
    );
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    let line = std::fs::read_to_string(out.join("results.jsonl")).expect("results.jsonl");
    let run: results::Run = serde_json::from_str(line.trim()).expect("a results::Run");
    (run, dir)
}

/// Frames of `pcap` matching `filter` (tshark).
fn count(pcap: &Path, filter: &str) -> usize {
    let out = std::process::Command::new("tshark")
        .args(["-n", "-r"])
        .arg(pcap)
        .args(["-Y", filter, "-T", "fields", "-e", "frame.number"])
        .output()
        .expect("tshark must be installed (scripts/setup.sh)");
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout).lines().count()
}

#[test]
fn kernel_tcp_negotiates_ecn_and_answers_ce_marks() {
    let (r, dir) = run("tcp", true);
    let down = &r.links["bottleneck_down"];
    eprintln!("tcp ecn: {down:?}");
    assert_eq!(
        r.flows[0].config.as_ref().and_then(|c| c.tcp_ecn),
        Some(1),
        "the kernel holds tcp_ecn = 1"
    );
    assert!(r.flows[0].completion_s.is_some(), "{:?}", r.flows[0]);
    let ecn = r.flows[0]
        .ecn
        .as_ref()
        .expect("an ECN flow reports its ECN");
    assert!(ecn.capable, "TCP_INFO says ECN was negotiated");
    assert!(ecn.ce_received.is_none(), "not measured in the emulator");
    assert!(
        down.ce_marked_packets > 0,
        "CoDel marks the kernel's ECT segments"
    );
    assert_eq!(down.aqm_dropped_packets, 0, "and drops none of them");
    // Each capture holds what its side sent into the forwarder (before the queue marks).
    let client = dir.path("pcap/p0-r0/client-side.pcap");
    let server = dir.path("pcap/p0-r0/server-side.pcap");
    assert_eq!(
        count(
            &client,
            "tcp.flags.syn == 1 && tcp.flags.ack == 0 && tcp.flags.ece == 1 && tcp.flags.cwr == 1"
        ),
        1,
        "the client's ECN-setup SYN"
    );
    assert_eq!(
        count(
            &server,
            "tcp.flags.syn == 1 && tcp.flags.ack == 1 && tcp.flags.ece == 1 && tcp.flags.cwr == 0"
        ),
        1,
        "the server's ECN-setup SYN-ACK"
    );
    assert!(
        count(&server, "tcp.len > 0 && ip.dsfield.ecn == 2") > 0,
        "the server sends data ECT(0)"
    );
    assert!(
        count(&client, "tcp.flags.ece == 1 && tcp.flags.syn == 0") > 0,
        "the client echoes the CE marks it received"
    );
    assert!(
        count(&server, "tcp.flags.cwr == 1 && tcp.flags.syn == 0") > 0,
        "the server answers with CWR"
    );

    let (off, _dir) = run("tcp", false);
    assert_eq!(
        off.flows[0].config.as_ref().and_then(|c| c.tcp_ecn),
        Some(2),
        "Linux's default"
    );
    assert!(
        off.flows[0].ecn.is_none(),
        "a flow without ECN reports none"
    );
    let down = &off.links["bottleneck_down"];
    assert_eq!(down.ce_marked_packets, 0, "Not-ECT is never marked");
}

#[test]
fn quinn_endpoints_send_ect_only_with_flow_ecn() {
    let (on, dir) = run("quic", true);
    let down = &on.links["bottleneck_down"];
    eprintln!("quic ecn: {down:?}");
    assert!(on.flows[0].completion_s.is_some(), "{:?}", on.flows[0]);
    assert!(
        down.ce_marked_packets > 0,
        "quinn's ECT(0) packets are marked"
    );
    assert_eq!(down.aqm_dropped_packets, 0);
    let server = dir.path("pcap/p0-r0/server-side.pcap");
    assert!(count(&server, "udp && ip.dsfield.ecn == 2") > 0);

    let (off, dir) = run("quic", false);
    let down = &off.links["bottleneck_down"];
    assert_eq!(
        down.ce_marked_packets, 0,
        "without flow.ecn quinn sends Not-ECT"
    );
    for side in ["client-side", "server-side"] {
        let pcap = dir.path(&format!("pcap/p0-r0/{side}.pcap"));
        assert_eq!(count(&pcap, "ip.dsfield.ecn != 0"), 0, "{side}");
    }
}
