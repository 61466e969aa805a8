//! Speed of the QUIC research model: datagrams (both directions) per wall second for a bulk
//! transfer at 1 Gbit/s on the test link, printed for the record. The assertion is a floor far
//! below the target (3 M per second on an idle core) so a loaded machine does not fail
//! it, while an accidental quadratic path (a scan of every packet in flight per ACK) does.
//! `cargo test --release -p transport --test quicmodel_speed -- --nocapture` prints the figure.

mod quicmodel_support;

use std::time::{Duration, Instant};

use quicmodel_support::*;
use transport::quicmodel::QuicModelFlow;

#[test]
fn the_model_moves_many_datagrams_per_wall_second() {
    let mut best = 0f64;
    let mut datagrams_per_run = 0u64;
    for _ in 0..3 {
        let mut cfg = bulk(Duration::from_secs(4));
        cfg.knobs.pacing = true;
        // 1 Gbit/s, 40 ms RTT, a one-BDP queue (3400 packets): losses, recovery, big windows.
        let mut net = Net::new(1_000_000_000, ms(20)).queue_limit(3400);
        let mut flow = QuicModelFlow::new(cfg).unwrap();
        let t = Instant::now();
        net.run(&mut flow, Duration::from_secs(5));
        let wall = t.elapsed().as_secs_f64();
        datagrams_per_run = net.delivered + net.dropped;
        let datagrams = datagrams_per_run as f64;
        assert!(datagrams > 400_000.0, "{datagrams} datagrams");
        best = best.max(datagrams / wall);
    }
    eprintln!(
        "quic-model: {:.2} M datagrams per wall second (best of 3; {datagrams_per_run} per run)",
        best / 1e6
    );
    assert!(best > 300_000.0, "{best:.0} datagrams per wall second");
}
