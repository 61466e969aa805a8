//! Queue disciplines in the simulator, end to end from the scenario keys: a bulk TCP CUBIC
//! download through a deep (8 BDP) buffer fills a drop-tail queue with hundreds of
//! milliseconds of delay, while CoDel, FQ-CoDel and PIE hold it near their targets at about
//! the same goodput; FQ-CoDel also gives a sparse flow beside the bulk one the delay of an
//! empty path.

use std::path::Path;

use results::Run;
use scenario::model::RunSpec;

/// 10 Mbit/s, 40 ms RTT, a buffer of 8 BDP (400 kB, 320 ms at the link rate) for every
/// discipline, a CUBIC download from the server; `extra` adds keys to `[link]`, `flows` more
/// flows.
fn scenario(extra: &str, bulk: bool, flows: &str) -> String {
    let bulk = if bulk {
        "[[flow]]\nname = \"bulk\"\nstack = \"tcp\"\ncc = \"cubic\"\ndirection = \"down\"\n"
    } else {
        ""
    };
    format!(
        "[run]\nduration = \"20s\"\nmeasure_from = \"5s\"\nsample_interval = \"1s\"\n\
         [link]\nrate = \"10Mbit\"\nrtt = \"40ms\"\nqueue = \"8bdp\"\n{extra}\n{bulk}{flows}"
    )
}

fn run_toml(text: &str, seed: u64) -> Run {
    let loaded = scenario::parse_str(text, "aqm.toml", Path::new("."), &[], &[])
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let point = &loaded.points[0];
    let spec = RunSpec {
        id: "p0-r0".into(),
        point: 0,
        rep: 0,
        seed,
    };
    sim::run(point, &spec, &sim::RunOptions::default()).expect("run")
}

struct Bulk {
    p50_ms: f64,
    p99_ms: f64,
    mean_ms: f64,
    goodput_mbps: f64,
    aqm_drops: u64,
    tail_drops: u64,
}

fn bulk(extra: &str) -> Bulk {
    let r = run_toml(&scenario(extra, true, ""), 1);
    let l = &r.links["bottleneck_down"];
    let ms = |x: Option<f64>| x.expect("the link forwarded packets") * 1e3;
    let b = Bulk {
        p50_ms: ms(l.queue_delay_p50_s),
        p99_ms: ms(l.queue_delay_p99_s),
        mean_ms: ms(l.queue_delay_mean_s),
        goodput_mbps: r.flows[0].window_goodput_bps.expect("goodput") / 1e6,
        aqm_drops: l.aqm_dropped_packets,
        tail_drops: l.dropped_queue_packets,
    };
    eprintln!(
        "{extra:?}: queue delay p50 {:.1} ms, p99 {:.1} ms, mean {:.1} ms; goodput {:.2} Mbit/s; aqm drops {}, tail drops {}",
        b.p50_ms, b.p99_ms, b.mean_ms, b.goodput_mbps, b.aqm_drops, b.tail_drops
    );
    b
}

#[test]
fn codel_and_pie_cure_bufferbloat_at_the_same_goodput() {
    let droptail = bulk("");
    assert!(
        droptail.p50_ms > 100.0,
        "a deep drop-tail buffer fills: p50 {:.1} ms",
        droptail.p50_ms
    );
    assert_eq!(droptail.aqm_drops, 0, "drop-tail makes no AQM decisions");
    for (qdisc, target_ms, p50_max) in [
        ("qdisc = \"codel\"", 5.0, 20.0),
        ("qdisc = \"fq_codel\"", 5.0, 20.0),
        ("qdisc = \"pie\"", 15.0, 35.0),
    ] {
        let aqm = bulk(qdisc);
        assert!(
            aqm.p50_ms < p50_max,
            "{qdisc}: p50 {:.1} ms, target {target_ms} ms",
            aqm.p50_ms
        );
        assert!(
            aqm.p50_ms < droptail.p50_ms / 5.0,
            "{qdisc}: p50 {:.1} ms vs drop-tail's {:.1} ms",
            aqm.p50_ms,
            droptail.p50_ms
        );
        assert!(aqm.aqm_drops > 0, "{qdisc} controls the queue by dropping");
        assert_eq!(aqm.tail_drops, 0, "{qdisc}: never reaches the 8 BDP limit");
        assert!(
            aqm.goodput_mbps > 0.85 * droptail.goodput_mbps,
            "{qdisc}: goodput {:.2} vs drop-tail's {:.2} Mbit/s",
            aqm.goodput_mbps,
            droptail.goodput_mbps
        );
    }
}

#[test]
fn pie_holds_its_target() {
    let pie = bulk("qdisc = \"pie\"");
    assert!(
        (5.0..30.0).contains(&pie.mean_ms),
        "PIE settles around 15 ms: mean {:.1} ms",
        pie.mean_ms
    );
    let pie30 = bulk("qdisc = { model = \"pie\", target = \"30ms\" }");
    assert!(
        pie30.mean_ms > pie.mean_ms * 1.3,
        "a larger target, a longer queue: {:.1} vs {:.1} ms",
        pie30.mean_ms,
        pie.mean_ms
    );
}

/// A small download started while the bulk flow runs: its completion is a few round trips,
/// each through the bottleneck's queue.
fn sparse_completion(qdisc: &str, with_bulk: bool) -> f64 {
    let sparse = "[[flow]]\nname = \"ping\"\nstack = \"tcp\"\napp = \"download\"\nsize = \"5KB\"\nstart = \"8s\"\n";
    let r = run_toml(&scenario(qdisc, with_bulk, sparse), 1);
    let f = r
        .flows
        .iter()
        .find(|f| f.name == "ping")
        .expect("ping flow");
    let c = f.completion_s.expect("the small download completes");
    eprintln!(
        "{qdisc:?} bulk={with_bulk}: small download {:.2} ms",
        c * 1e3
    );
    c
}

#[test]
fn fq_codel_isolates_a_sparse_flow_from_a_bulk_one() {
    let idle = sparse_completion("", false);
    let droptail = sparse_completion("", true);
    let fq = sparse_completion("qdisc = \"fq_codel\"", true);
    assert!(
        droptail > 3.0 * idle,
        "drop-tail: {droptail:.4} s vs {idle:.4} s idle"
    );
    assert!(fq < idle * 1.15, "fq_codel: {fq:.4} s vs {idle:.4} s idle");
    // With a 20 ms target the bulk flow keeps a standing queue of about 20 ms: every round
    // trip of the small download waits behind it with CoDel's single queue, but not with
    // FQ-CoDel's, where the sparse flow's packets go first.
    let codel = sparse_completion("qdisc = { model = \"codel\", target = \"20ms\" }", true);
    let fq = sparse_completion("qdisc = { model = \"fq_codel\", target = \"20ms\" }", true);
    assert!(
        codel > idle + 0.040,
        "codel with 20 ms target: {codel:.4} s vs {idle:.4} s idle"
    );
    assert!(
        fq < idle * 1.15 && fq < codel - 0.030,
        "fq_codel {fq:.4} s vs codel {codel:.4} s (idle {idle:.4} s)"
    );
}

#[test]
fn an_aqm_run_is_deterministic() {
    let text = scenario(
        "qdisc = \"fq_codel\"\n[[cross]]\npattern = \"uniform\"\ndirection = \"down\"\nsize_min = \"100B\"\nsize_max = \"1200B\"\ngap_min = \"1ms\"\ngap_max = \"20ms\"\n",
        true,
        "",
    );
    let a = serde_json::to_string(&run_toml(&text, 3)).expect("json");
    let b = serde_json::to_string(&run_toml(&text, 3)).expect("json");
    assert_eq!(a, b);
    let c = serde_json::to_string(&run_toml(&text, 4)).expect("json");
    assert_ne!(a, c, "another seed, another run");
}
