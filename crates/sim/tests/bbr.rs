//! BBR (Linux's `tcp_bbr.c` in the TCP model) end to end: on a clean path it fills the link
//! with a queue well under CUBIC's, and on a deep buffer its standing queue stays around one
//! BDP (its window is 2 BDP: one in the pipe, at most one queued), where CUBIC fills the
//! buffer.

use std::path::Path;

use results::Run;
use scenario::model::RunSpec;

fn run(text: &str, seed: u64) -> Run {
    let loaded = scenario::parse_str(text, "bbr.toml", Path::new("."), &[], &[])
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let spec = RunSpec {
        id: "p0-r0".into(),
        point: 0,
        rep: 0,
        seed,
    };
    sim::run(&loaded.points[0], &spec, &sim::RunOptions::default()).expect("run")
}

/// One TCP bulk download over 50 Mbit/s, 40 ms RTT, a buffer of `queue`.
fn bulk(cc: &str, queue: &str) -> String {
    format!(
        "[run]\nduration = \"15s\"\nmeasure_from = \"3s\"\n\
         [link]\nrate = \"50Mbit\"\nrtt = \"40ms\"\nqueue = \"{queue}\"\n\
         [[flow]]\nname = \"bulk\"\nstack = \"tcp\"\ncc = \"{cc}\"\ndirection = \"down\"\n"
    )
}

struct Outcome {
    utilisation: f64,
    goodput: f64,
    queue_ms: f64,
    lost: u64,
}

fn outcome(r: &Run) -> Outcome {
    let link = &r.links["bottleneck_down"];
    let f = &r.flows[0];
    Outcome {
        utilisation: link.utilisation,
        goodput: f.window_goodput_bps.expect("measured"),
        queue_ms: link.queue_delay_mean_s.expect("measured") * 1e3,
        lost: f.packets_lost.unwrap_or(0),
    }
}

fn show(label: &str, o: &Outcome) {
    eprintln!(
        "{label}: utilisation {:.3}, goodput {:.2} Mbit/s, mean queue delay {:.2} ms, {} lost",
        o.utilisation,
        o.goodput / 1e6,
        o.queue_ms,
        o.lost
    );
}

#[test]
fn bbr_fills_a_clean_path_with_a_queue_well_under_cubics() {
    let bbr = outcome(&run(&bulk("bbr", "1bdp"), 1));
    let cubic = outcome(&run(&bulk("cubic", "1bdp"), 1));
    show("bbr 1 BDP", &bbr);
    show("cubic 1 BDP", &cubic);
    assert!(bbr.utilisation >= 0.90, "utilisation {}", bbr.utilisation);
    assert!(bbr.goodput >= 0.90 * 50e6, "goodput {}", bbr.goodput);
    assert!(
        bbr.queue_ms < 0.6 * cubic.queue_ms,
        "BBR's queue {} ms vs CUBIC's {} ms",
        bbr.queue_ms,
        cubic.queue_ms
    );
}

#[test]
fn bbr_keeps_the_standing_queue_near_one_bdp_in_a_deep_buffer() {
    // 8 BDP of buffer: CUBIC fills it (up to 8 · 40 ms of queueing); BBR's 2-BDP window
    // holds at most about one BDP (40 ms) there, plus its quantization budget.
    let bbr = outcome(&run(&bulk("bbr", "8bdp"), 2));
    let cubic = outcome(&run(&bulk("cubic", "8bdp"), 2));
    show("bbr 8 BDP", &bbr);
    show("cubic 8 BDP", &cubic);
    assert!(bbr.utilisation >= 0.90, "utilisation {}", bbr.utilisation);
    assert!(
        bbr.queue_ms <= 1.2 * 40.0,
        "standing queue {} ms, one BDP is 40 ms",
        bbr.queue_ms
    );
    assert!(
        cubic.queue_ms > 2.0 * bbr.queue_ms,
        "CUBIC {} ms",
        cubic.queue_ms
    );
}

#[test]
fn bbr_runs_are_a_function_of_the_seed() {
    let a = run(&bulk("bbr", "2bdp"), 7);
    let b = run(&bulk("bbr", "2bdp"), 7);
    assert_eq!(
        serde_json::to_string(&a).expect("json"),
        serde_json::to_string(&b).expect("json")
    );
}
