//! End-to-end behaviour of the QUIC research model on a small deterministic link.

mod quicmodel_support;

use std::time::Duration;

use quicmodel_support::*;

#[test]
fn clean_bulk_transfer_fills_the_pipe() {
    // 10 Mbit/s, 30 ms RTT, 5 s upload: after slow start the link stays busy.
    let mut net = Net::new(10_000_000, ms(15));
    let (_, r) = run(
        bulk(Duration::from_secs(5)),
        &mut net,
        Duration::from_secs(6),
    );
    assert!(r.error.is_none(), "{:?}", r.error);
    let goodput = r.bytes_delivered as f64 * 8.0 / 5.0;
    // Stream payload per 1500-byte datagram is 1500 − 28 − 10 − 16 − STREAM header (~11).
    assert!(goodput > 0.9 * 10e6 * 1435.0 / 1500.0, "goodput {goodput}");
    assert!(goodput < 10e6, "goodput {goodput}");
    assert_eq!(r.packets_lost, 0);
    let m = r.model.expect("model metrics");
    assert!(m.ack_eliciting_received > 1000);
    assert!(m.one_way_delay.is_some());
}
