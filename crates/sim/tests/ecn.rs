//! ECN end to end in the simulator, for every stack: through a CoDel queue that marks ECT
//! packets, a flow with `flow.ecn = true` gets CE marks instead of drops, its receiver reports
//! them (TCP: ECE until CWR; quinn and the research model: ACK_ECN counts), and its sender
//! reduces its window without retransmitting; the same flow without ECN is dropped at and
//! retransmits. The TCP model's negotiation and feedback are visible in the pcap.

mod common;

use std::path::Path;

use results::Run;
use scenario::model::RunSpec;

/// A 10 Mbit/s, 40 ms path with an 8-BDP buffer under CoDel with ECN marking; one bulk
/// download of `stack` with ECN `ecn`.
fn scenario(stack: &str, ecn: bool) -> String {
    let cc = if stack == "tcp" { "cubic" } else { "newreno" };
    format!(
        "[run]\nduration = \"10s\"\nmeasure_from = \"2s\"\n\
         [link]\nrate = \"10Mbit\"\nrtt = \"40ms\"\nqueue = \"8bdp\"\n\
         qdisc = {{ model = \"codel\", ecn = true }}\n\
         [[flow]]\nname = \"bulk\"\nstack = \"{stack}\"\ncc = \"{cc}\"\ndirection = \"down\"\n\
         ecn = {ecn}\n"
    )
}

fn run(text: &str, pcap: Option<&Path>) -> Run {
    let loaded = scenario::parse_str(text, "ecn.toml", Path::new("."), &[], &[])
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let spec = RunSpec {
        id: "p0-r0".into(),
        point: 0,
        rep: 0,
        seed: 1,
    };
    let opts = sim::RunOptions {
        pcap: pcap.map(Path::to_path_buf),
        ..Default::default()
    };
    sim::run(&loaded.points[0], &spec, &opts).expect("run")
}

#[test]
fn every_stack_answers_ce_marks_instead_of_losses() {
    for stack in ["tcp", "quic", "quic-model"] {
        let on = run(&scenario(stack, true), None);
        let off = run(&scenario(stack, false), None);
        let (l_on, l_off) = (&on.links["bottleneck_down"], &off.links["bottleneck_down"]);
        let (f_on, f_off) = (&on.flows[0], &off.flows[0]);
        eprintln!(
            "{stack}: ECN on: {} CE marks, {} AQM drops, {} lost, {:?}, goodput {:?}; \
             off: {} AQM drops, {} lost, goodput {:?}",
            l_on.ce_marked_packets,
            l_on.aqm_dropped_packets,
            f_on.packets_lost.unwrap_or(0),
            f_on.ecn,
            f_on.window_goodput_bps,
            l_off.aqm_dropped_packets,
            f_off.packets_lost.unwrap_or(0),
            f_off.window_goodput_bps,
        );
        let ecn = f_on.ecn.as_ref().expect("an ECN flow reports its ECN");
        assert!(ecn.capable, "{stack}: ECN held to the end");
        assert!(
            l_on.ce_marked_packets > 10,
            "{stack}: CoDel marks ECT packets"
        );
        assert_eq!(
            l_on.aqm_dropped_packets, 0,
            "{stack}: nothing dropped by CoDel"
        );
        // Every mark reaches the receiver but those still in flight at the end.
        let ce = ecn.ce_received.expect("measured");
        assert!(
            ce <= l_on.ce_marked_packets && ce + 20 >= l_on.ce_marked_packets,
            "{stack}: {ce} CE received of {} marked",
            l_on.ce_marked_packets
        );
        let reductions = ecn.ce_congestion_events.expect("measured");
        assert!(reductions > 0, "{stack}: the sender reduced for CE");
        assert_eq!(
            f_on.packets_lost,
            Some(0),
            "{stack}: with ECN the flow loses nothing"
        );
        // CoDel still holds the queue near its target by marking.
        let p50 = l_on.queue_delay_p50_s.expect("queued packets");
        assert!(p50 < 0.02, "{stack}: p50 queue delay {p50} s");
        // Without ECN, the same queue drops and the flow retransmits.
        assert!(f_off.ecn.is_none());
        assert_eq!(
            l_off.ce_marked_packets, 0,
            "{stack}: Not-ECT is never marked"
        );
        assert!(
            l_off.aqm_dropped_packets > 10,
            "{stack}: CoDel drops instead"
        );
        assert!(
            f_off.packets_lost.unwrap_or(0) > 0,
            "{stack}: and it retransmits"
        );
    }
}

#[test]
fn ecn_runs_are_deterministic() {
    for stack in ["tcp", "quic", "quic-model"] {
        let a = serde_json::to_string(&run(&scenario(stack, true), None)).expect("json");
        let b = serde_json::to_string(&run(&scenario(stack, true), None)).expect("json");
        assert_eq!(a, b, "{stack}");
    }
}

/// The TCP model's RFC 3168 exchange as a dissector reads it: an ECN-setup SYN (ECE + CWR),
/// a SYN-ACK with ECE only, data sent ECT(0), ACKs with ECE after a mark, and CWR on the
/// sender's next new segment; pure ACKs stay Not-ECT.
#[test]
fn the_tcp_models_ecn_is_visible_in_the_pcap() {
    let dir = fsutil::PrivateDir::new("quiclab-ecn-pcap-").expect("temp dir");
    let pcap = dir.path().join("ecn.pcap");
    let text = scenario("tcp", true).replace("duration = \"10s\"", "duration = \"3s\"");
    let r = run(&text, Some(&pcap));
    assert!(r.links["bottleneck_down"].ce_marked_packets > 0);
    let count = |filter: &str| common::tshark(&pcap, &[], filter, "frame.number").len();
    assert_eq!(
        count(
            "tcp.flags.syn == 1 && tcp.flags.ack == 0 && tcp.flags.ece == 1 && tcp.flags.cwr == 1"
        ),
        1,
        "the client's ECN-setup SYN"
    );
    assert_eq!(
        count(
            "tcp.flags.syn == 1 && tcp.flags.ack == 1 && tcp.flags.ece == 1 && tcp.flags.cwr == 0"
        ),
        1,
        "the server's ECN-setup SYN-ACK"
    );
    let data_ect0 = count("tcp.len > 0 && ip.dsfield.ecn == 2 && tcp.srcport == 443");
    let data = count("tcp.len > 0 && tcp.srcport == 443");
    assert!(
        data_ect0 > 0 && data_ect0 == data,
        "new data leaves ECT(0): {data_ect0} of {data} (no retransmissions here)"
    );
    assert_eq!(
        count("tcp.len == 0 && ip.dsfield.ecn != 0 && tcp.flags.syn == 0"),
        0,
        "pure ACKs are Not-ECT"
    );
    let ece = count("tcp.flags.ece == 1 && tcp.flags.syn == 0 && tcp.dstport == 443");
    let cwr = count("tcp.flags.cwr == 1 && tcp.flags.syn == 0 && tcp.srcport == 443");
    assert!(ece > 0, "the client echoes CE");
    assert!(cwr > 0, "the server answers with CWR");
    assert!(
        cwr <= ece,
        "at most one CWR per echo episode: {cwr} CWR, {ece} ECE"
    );
}
