mod common;
use common::*;
use scenario::model::Workload;

#[test]
#[ignore = "speed probe; run with --release --ignored"]
fn speed() {
    let s = dumbbell(100_000_000, ms(20), 340, vec![flow("d", Workload::Download { size: 100_000_000, streams: 1, connections: 1 })], ms(200_000));
    let t0 = std::time::Instant::now();
    let r = run(&s, 1);
    let wall = t0.elapsed().as_secs_f64();
    let dg: u64 = r.flows.iter().map(|f| f.datagrams_sent[0] + f.datagrams_sent[1]).sum();
    println!("10MB@10M: sim {:.2}s wall {:.3}s -> {:.0} sim-s/wall-s, {:.0} dgrams/s, events {}", r.end_s, wall, r.end_s / wall, dg as f64 / wall, r.events);
}
