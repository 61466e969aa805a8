//! Latency probes in the emulator (root, real namespaces): requests from the flow's client
//! namespace, echoed from its server namespace, timed by the kernel. Beside a kernel-TCP bulk
//! download, a deep drop-tail buffer adds its standing queue to the probe's round trip, and the
//! forwarder's FQ-CoDel gives the probe a queue of its own; both engines agree on the idle
//! path's round trip.

mod common;

use common::{quiclab, text, Scratch};

/// 20 Mbit/s, 40 ms base RTT, a 16-BDP buffer under `qdisc`; a kernel TCP bulk download from
/// `bulk_start` and a probe every 100 ms.
fn scenario(qdisc: &str, bulk_start: &str) -> String {
    format!(
        "[run]\nduration = \"8s\"\n\
         [link]\nrate = \"20Mbit\"\nrtt = \"40ms\"\nqueue = \"16bdp\"\nqdisc = \"{qdisc}\"\n\
         [[flow]]\nname = \"bulk\"\nstack = \"tcp\"\ndirection = \"down\"\nstart = \"{bulk_start}\"\n\
         [[probe]]\nname = \"ping\"\ninterval = \"100ms\"\nstart = \"1s\"\n"
    )
}

fn run(engine: &str, qdisc: &str, bulk_start: &str) -> results::Run {
    let dir = Scratch::new(&format!("emu-probe-{engine}-{qdisc}-{bulk_start}"));
    let file = dir.file("probe.toml", &scenario(qdisc, bulk_start));
    let out = dir.path("out");
    let o = quiclab(
        &[
            engine,
            file.to_str().expect("utf-8 path"),
            "--out",
            out.to_str().expect("utf-8 path"),
        ],
        &dir.0,
    );
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    let line = std::fs::read_to_string(out.join("results.jsonl")).expect("results.jsonl");
    serde_json::from_str(line.trim()).expect("a results::Run")
}

#[test]
fn probes_measure_the_idle_path_as_the_simulator_does() {
    // The bulk flow starts after the probe has had 4 s of an idle path.
    let emu = run("emu", "droptail", "5s");
    let sim = run("sim", "droptail", "5s");
    let (pe, ps) = (&emu.probes[0], &sim.probes[0]);
    eprintln!("emu {pe:?}\nsim {ps:?}");
    assert_eq!(pe.flow, "bulk");
    assert!(pe.sent_packets >= 35, "{pe:?}");
    assert!(pe.answered_packets * 10 >= pe.sent_packets * 9, "{pe:?}");
    let (e, s) = (pe.rtt.expect("answered"), ps.rtt.expect("answered"));
    // The idle round trip: 40 ms of emulated propagation in both, plus the host's
    // forwarding in the emulator (well under a millisecond each way).
    assert!((s.p50_s - 0.040).abs() < 0.001, "{s:?}");
    assert!(e.p50_s >= 0.040 && e.p50_s < 0.043, "{e:?}");
    let (up, down) = (pe.up.expect("up"), pe.down.expect("down"));
    assert!(up.p50_s > 0.019 && down.p50_s > 0.019, "{up:?} {down:?}");
}

#[test]
fn fq_codel_keeps_the_probe_out_of_the_bulk_flows_queue() {
    let fifo = run("emu", "droptail", "0s");
    let fq = run("emu", "fq_codel", "0s");
    let (pf, pq) = (
        fifo.probes[0].rtt.expect("rtt"),
        fq.probes[0].rtt.expect("rtt"),
    );
    let queue = fifo.links["bottleneck_down"]
        .queue_delay_p50_s
        .expect("queued");
    eprintln!("drop-tail: probe {pf:?}, queue p50 {queue}; fq_codel: probe {pq:?}");
    assert!(
        queue > 0.020,
        "kernel CUBIC builds a standing queue: {queue}"
    );
    assert!(pf.p50_s > 0.040 + 0.5 * queue, "{pf:?} {queue}");
    assert!(pq.p50_s < 0.046, "{pq:?}");
    assert!(pq.p99_s < pf.p50_s, "{pq:?} vs {pf:?}");
}
