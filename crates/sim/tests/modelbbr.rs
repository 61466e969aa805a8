//! BBR v1 and BBRv3 in the QUIC research model end to end: fed the model's delivery-rate
//! samples and paced at their rate, each fills a clean path with a queue far below CUBIC's
//! (in the same model), and a run is a pure function of its seed.

use std::path::Path;

use results::Run;
use scenario::model::RunSpec;

fn run(text: &str, seed: u64) -> Run {
    let loaded = scenario::parse_str(text, "modelbbr.toml", Path::new("."), &[], &[])
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let spec = RunSpec {
        id: "p0-r0".into(),
        point: 0,
        rep: 0,
        seed,
    };
    sim::run(&loaded.points[0], &spec, &sim::RunOptions::default()).expect("run")
}

/// One research-model bulk download over 50 Mbit/s, 40 ms RTT, a buffer of `queue`.
fn bulk(cc: &str, queue: &str) -> String {
    format!(
        "[run]\nduration = \"15s\"\nmeasure_from = \"3s\"\n\
         [link]\nrate = \"50Mbit\"\nrtt = \"40ms\"\nqueue = \"{queue}\"\n\
         [[flow]]\nname = \"bulk\"\nstack = \"quic-model\"\ncc = \"{cc}\"\ndirection = \"down\"\n"
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

/// `cc` on the clean 1-BDP path against CUBIC on the same path and seed.
fn fills_with_a_small_queue(cc: &str, seed: u64) {
    let ours = outcome(&run(&bulk(cc, "1bdp"), seed));
    let cubic = outcome(&run(&bulk("cubic", "1bdp"), seed));
    show(&format!("quic-model {cc} 1 BDP"), &ours);
    show("quic-model cubic 1 BDP", &cubic);
    assert!(ours.utilisation > 0.90, "utilisation {}", ours.utilisation);
    assert!(ours.goodput >= 0.85 * 50e6, "goodput {}", ours.goodput);
    assert!(
        ours.queue_ms < 0.5 * cubic.queue_ms,
        "{cc}'s queue {} ms vs CUBIC's {} ms",
        ours.queue_ms,
        cubic.queue_ms
    );
}

#[test]
fn model_bbr_fills_a_clean_path_with_a_queue_far_below_cubics() {
    fills_with_a_small_queue("bbr", 1);
}

#[test]
fn model_bbr3_fills_a_clean_path_with_a_queue_far_below_cubics() {
    fills_with_a_small_queue("bbr3", 1);
}

#[test]
fn model_bbr_runs_are_a_function_of_the_seed() {
    for cc in ["bbr", "bbr3"] {
        let a = run(&bulk(cc, "2bdp"), 7);
        let b = run(&bulk(cc, "2bdp"), 7);
        assert_eq!(
            serde_json::to_string(&a).expect("json"),
            serde_json::to_string(&b).expect("json"),
            "{cc}"
        );
    }
}
