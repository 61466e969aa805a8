//! End-to-end engine behaviour on small scenarios.

mod common;
use common::*;
use scenario::model::Workload;

#[test]
fn download_completes_and_reports_timings() {
    let s = dumbbell(10_000_000, ms(15), 25, vec![flow("d", Workload::Download { size: 1_000_000, streams: 1, connections: 1 })], ms(20_000));
    let r = run(&s, 1);
    let f = &r.flows[0];
    assert_eq!(f.error, None);
    assert_eq!(f.bytes_delivered, 1_000_000);
    let hs = f.handshake_s.expect("handshake");
    assert!(hs >= 0.030 && hs < 0.040, "1 RTT handshake, got {hs}");
    let c = f.completion_s.expect("completed");
    // 1 MB at 10 Mbit/s is at least 0.8 s plus slow start.
    assert!(c > 0.8 && c < 3.0, "completion {c}");
}

#[test]
fn same_seed_same_json_different_seed_differs() {
    let mut fl = flow("b", Workload::Bulk { upload: true });
    fl.stop = Some(ms(2_000));
    let mut s = dumbbell(10_000_000, ms(10), 20, vec![fl], ms(3_000));
    s.bottleneck.up.loss = netem::config::LossConfig::Bernoulli { p: 0.01 };
    let a = serde_json::to_string(&run(&s, 7)).unwrap();
    let b = serde_json::to_string(&run(&s, 7)).unwrap();
    let c = serde_json::to_string(&run(&s, 8)).unwrap();
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
#[ignore = "debug helper: prints a run"]
fn print_bulk() {
    let mut fl = flow("b", Workload::Bulk { upload: true });
    fl.stop = Some(ms(9_000));
    let mut s = dumbbell(100_000_000, ms(1), 23, vec![fl], ms(10_000));
    s.measure_from = ms(3000);
    s.measure_until = Some(ms(8000));
    let r = run(&s, 1);
    println!("{}", serde_json::to_string_pretty(&r).unwrap());
    for row in r.series.iter().step_by(10) { println!("{:?}", row); }
}
