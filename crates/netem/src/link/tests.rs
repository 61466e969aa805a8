use super::*;
use crate::config::LossConfig;
use crate::config::RateProfile;

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}
fn us(x: u64) -> Duration {
    Duration::from_micros(x)
}

/// Drives the link like the engine: deliveries at every wakeup before each arrival, then the rest.
fn run(
    link: &mut Link<u64>,
    arrivals: impl IntoIterator<Item = (Duration, u32)>,
) -> Vec<Delivery<u64>> {
    let mut out = Vec::new();
    for (i, (t, bytes)) in arrivals.into_iter().enumerate() {
        drain_until(link, t, false, &mut out);
        let _ = link.enqueue(t, bytes, i as u64);
    }
    drain_until(link, Duration::MAX, true, &mut out);
    out
}

fn drain_until(
    link: &mut Link<u64>,
    limit: Duration,
    inclusive: bool,
    out: &mut Vec<Delivery<u64>>,
) {
    while let Some(t) = link.next_wakeup() {
        if t > limit || (t == limit && !inclusive) {
            break;
        }
        while let Some(d) = link.poll(t) {
            out.push(d);
        }
    }
}

/// `n` packets of `bytes`, one every `gap` starting at zero.
fn periodic(n: u64, gap: Duration, bytes: u32) -> impl Iterator<Item = (Duration, u32)> {
    (0..n).map(move |i| (gap * i as u32, bytes))
}

fn cfg(f: impl FnOnce(&mut LinkConfig)) -> LinkConfig {
    let mut c = LinkConfig::ideal();
    f(&mut c);
    c
}

#[test]
fn ideal_link_delivers_at_the_same_instant() {
    let mut link = Link::new(LinkConfig::ideal(), 1);
    assert_eq!(link.next_wakeup(), None);
    assert_eq!(link.enqueue(ms(5), 100, 7u64), EnqueueResult::Accepted);
    let d = link.poll(ms(5)).expect("delivered at once");
    assert_eq!(
        (d.item, d.at, d.corrupted, d.duplicate),
        (7, ms(5), false, false)
    );
    assert_eq!(link.poll(ms(5)), None);
    assert_eq!(link.next_wakeup(), None);
}

#[test]
fn serialization_and_delay_add_up_and_chain() {
    let mut link = Link::new(
        cfg(|c| {
            c.rate = RateProfile::Fixed(12_000_000);
            c.delay = ms(10);
        }),
        1,
    );
    let _ = link.enqueue(Duration::ZERO, 1500, 0u64);
    let _ = link.enqueue(Duration::ZERO, 1500, 1u64);
    assert_eq!(link.queue_len(), (1, 1500));
    assert_eq!(link.next_wakeup(), Some(ms(1)));
    assert_eq!(link.poll(ms(1)), None);
    assert_eq!(link.next_wakeup(), Some(ms(2)));
    // Polling late still yields the exact times.
    let a = link.poll(ms(50)).expect("first");
    let b = link.poll(ms(50)).expect("second");
    assert_eq!((a.item, a.at, b.item, b.at), (0, ms(11), 1, ms(12)));
    assert_eq!(link.stats().busy_time, ms(2));
    assert_eq!(link.stats().forwarded_bytes, 3000);
}

#[test]
fn drop_tail_limit_in_packets() {
    let mut link = Link::new(
        cfg(|c| {
            c.rate = RateProfile::Fixed(12_000_000);
            c.queue.packets = Some(3);
        }),
        1,
    );
    let results: Vec<_> = (0..10)
        .map(|i| link.enqueue(Duration::ZERO, 1500, i))
        .collect();
    // One in service plus three waiting.
    assert!(results[..4].iter().all(|r| *r == EnqueueResult::Accepted));
    assert!(results[4..]
        .iter()
        .all(|r| *r == EnqueueResult::DroppedQueueFull));
    assert_eq!(link.queue_len(), (3, 4500));
    let s = link.stats().clone();
    assert_eq!(
        (
            s.dropped_queue_packets,
            s.dropped_queue_bytes,
            s.max_queue_packets
        ),
        (6, 9000, 3)
    );
    let out = run(&mut link, []);
    assert_eq!(
        out.iter().map(|d| d.item).collect::<Vec<_>>(),
        vec![0, 1, 2, 3]
    );
}

#[test]
fn drop_tail_limit_in_bytes() {
    let mut link = Link::new(
        cfg(|c| {
            c.rate = RateProfile::Fixed(12_000_000);
            c.queue.bytes = Some(4000);
        }),
        1,
    );
    use EnqueueResult::*;
    let r: Vec<_> = [1500, 1500, 1500, 1500, 1000, 1]
        .iter()
        .enumerate()
        .map(|(i, b)| link.enqueue(Duration::ZERO, *b, i as u64))
        .collect();
    // 1500 in service; 3000 waiting; +1500 would be 4500; +1000 is exactly 4000; +1 is over.
    assert_eq!(
        r,
        vec![
            Accepted,
            Accepted,
            Accepted,
            DroppedQueueFull,
            Accepted,
            DroppedQueueFull
        ]
    );
    assert_eq!(link.queue_len(), (3, 4000));
    assert_eq!(link.stats().max_queue_bytes, 4000);
    // Once the first finishes, its successor leaves the queue and room opens up.
    assert_eq!(link.enqueue(ms(1), 1500, 9), Accepted);
}

#[test]
fn saturated_link_runs_exactly_at_its_rate() {
    // 1200-byte packets offered at twice the 10 Mbit/s rate for 2 s.
    let mut link = Link::new(
        cfg(|c| {
            c.rate = RateProfile::Fixed(10_000_000);
            c.queue.packets = Some(50);
        }),
        1,
    );
    let out = run(&mut link, periodic(4000, us(480), 1200));
    // Each packet takes 960 µs; deliveries are back to back with no drift.
    for w in out.windows(2) {
        assert_eq!(w[1].at - w[0].at, us(960));
    }
    let in_window: u64 = out
        .iter()
        .filter(|d| d.at > ms(500) && d.at <= ms(1500))
        .map(|d| u64::from(d.ip_bytes) * 8)
        .sum();
    // 1041.67 packets fit in a second: the window holds 1041 or 1042 of them.
    assert!(in_window.abs_diff(10_000_000) <= 9600, "bits {in_window}");
    let s = link.stats();
    assert_eq!(s.forwarded_packets + s.dropped_queue_packets, 4000);
    assert_eq!(s.busy_time, us(960) * s.forwarded_packets as u32);
}

#[test]
fn results_do_not_depend_on_poll_times() {
    let config = cfg(|c| {
        c.rate = RateProfile::Schedule {
            steps: vec![
                (Duration::ZERO, 7_000_000),
                (ms(30), 0),
                (ms(45), 3_000_000),
            ],
            repeat_every: Some(ms(100)),
        };
        c.delay = ms(5);
        c.jitter = Jitter::Uniform { max: ms(2) };
        c.queue.packets = Some(20);
        c.loss = LossConfig::Bernoulli { p: 0.05 };
    });
    let arrivals: Vec<_> = (0..3000u64)
        .map(|i| (us(i * 1000 + (i * 7919) % 900), 200 + (i % 13) as u32 * 100))
        .collect();
    let mut eager = Link::new(config.clone(), 9);
    let a = run(&mut eager, arrivals.iter().copied());
    // Coarse polling: only at arrivals and every 7 ms.
    let mut lazy = Link::new(config, 9);
    let mut b = Vec::new();
    let mut tick = Duration::ZERO;
    for (i, &(t, bytes)) in arrivals.iter().enumerate() {
        while tick < t {
            while let Some(d) = lazy.poll(tick) {
                b.push(d);
            }
            tick += ms(7);
        }
        let _ = lazy.enqueue(t, bytes, i as u64);
    }
    b.extend(run(&mut lazy, []));
    assert!(a.len() > 1000 && eager.stats().dropped_queue_packets > 0);
    assert_eq!(a, b);
    assert_eq!(eager.stats(), lazy.stats());
}

#[test]
fn jitter_keeps_fifo_order() {
    let mut link = Link::new(
        cfg(|c| {
            c.rate = RateProfile::Fixed(100_000_000);
            c.delay = ms(10);
            c.jitter = Jitter::Uniform { max: ms(5) };
        }),
        3,
    );
    let out = run(&mut link, periodic(5000, us(100), 1000));
    assert_eq!(out.len(), 5000);
    assert!(out
        .windows(2)
        .all(|w| w[0].item < w[1].item && w[0].at <= w[1].at));
    // The jitter really varied the latency (otherwise this test could not fail).
    let latencies: std::collections::BTreeSet<_> =
        out.iter().map(|d| d.at - us(100) * d.item as u32).collect();
    assert!(latencies.len() > 100);
}

#[test]
fn reordering_happens_at_roughly_p() {
    let n = 20_000u64;
    let mut link = Link::new(
        cfg(|c| {
            c.delay = ms(1);
            c.reorder = Reorder {
                p: 0.1,
                extra_delay: ms(5),
            };
        }),
        4,
    );
    let out = run(&mut link, periodic(n, ms(1), 500));
    assert_eq!(out.len() as u64, n);
    let reordered = link.stats().reordered_packets as f64 / n as f64;
    assert!(
        (reordered - 0.1).abs() < 0.01,
        "reordered share {reordered}"
    );
    // A held-back packet arrives after later ones: count arrivals below the highest seen.
    let mut highest = 0;
    let mut late = 0u64;
    for d in &out {
        if d.item < highest {
            late += 1;
        }
        highest = highest.max(d.item);
    }
    // Only the last few held-back packets may have nobody left to overtake them.
    let held = link.stats().reordered_packets;
    assert!(late <= held && late + 5 >= held, "late {late}, held {held}");
    assert!(out.windows(2).all(|w| w[0].at <= w[1].at));
}

#[test]
fn duplication_delivers_a_second_copy_at_the_same_time() {
    let n = 50_000u64;
    let mut link = Link::new(cfg(|c| c.duplicate = 0.2), 5);
    let out = run(&mut link, periodic(n, us(10), 100));
    let dups = link.stats().duplicated_packets;
    assert!((dups as f64 / n as f64 - 0.2).abs() < 0.01, "dups {dups}");
    assert_eq!(out.len() as u64, n + dups);
    assert_eq!(link.stats().forwarded_packets, n + dups);
    for w in out.windows(2) {
        if w[1].duplicate {
            assert!(!w[0].duplicate && w[0].item == w[1].item && w[0].at == w[1].at);
        }
    }
    assert_eq!(out.iter().filter(|d| d.duplicate).count() as u64, dups);
}

#[test]
fn blackout_loses_exactly_the_packets_in_the_window() {
    let mut link = Link::new(
        cfg(|c| {
            c.delay = ms(20);
            c.blackouts = vec![Blackout {
                start: ms(10),
                duration: ms(5),
                period: None,
            }];
        }),
        6,
    );
    let out = run(&mut link, periodic(30, ms(1), 100));
    let delivered: Vec<u64> = out.iter().map(|d| d.item).collect();
    let expect: Vec<u64> = (0..30).filter(|i| !(10..15).contains(i)).collect();
    assert_eq!(delivered, expect);
    assert_eq!(link.stats().blackout_packets, 5);
    assert_eq!(link.stats().lost_packets, 0);
}

#[test]
fn blackout_applies_when_serialization_ends() {
    // 1 ms per packet: the packet sent at 9 ms leaves at 10 ms, inside the window.
    let mut link = Link::new(
        cfg(|c| {
            c.rate = RateProfile::Fixed(12_000_000);
            c.blackouts = vec![Blackout {
                start: ms(10),
                duration: ms(1),
                period: None,
            }];
        }),
        6,
    );
    let out = run(&mut link, [(ms(9), 1500), (ms(11), 1500)]);
    assert_eq!(out.iter().map(|d| d.item).collect::<Vec<_>>(), vec![1]);
}

#[test]
fn corruption_rate_follows_the_bit_error_rate() {
    let (n, bytes, ber) = (100_000u64, 1000u32, 1e-5);
    let mut link = Link::new(cfg(|c| c.bit_error_rate = ber), 7);
    let out = run(&mut link, periodic(n, us(10), bytes));
    // Corrupted packets are delivered, not dropped.
    assert_eq!(out.len() as u64, n);
    let corrupted: Vec<_> = out.iter().filter(|d| d.corrupted).collect();
    assert_eq!(corrupted.len() as u64, link.stats().corrupted_packets);
    let expect = 1.0 - (1.0 - ber).powf(8.0 * f64::from(bytes));
    let rate = corrupted.len() as f64 / n as f64;
    // sd ≈ 8.4e-4.
    assert!((rate - expect).abs() < 4e-3, "rate {rate} vs {expect}");
    assert!(corrupted.iter().all(|d| d.flip_bit < 8000));
    assert!(
        corrupted.iter().any(|d| d.flip_bit < 1000) && corrupted.iter().any(|d| d.flip_bit >= 7000)
    );
}

#[test]
fn per_packet_corruption_probability() {
    let n = 50_000u64;
    let mut link = Link::new(cfg(|c| c.corrupt = 0.1), 8);
    let _ = run(&mut link, periodic(n, us(10), 64));
    let rate = link.stats().corrupted_packets as f64 / n as f64;
    assert!((rate - 0.1).abs() < 0.01, "rate {rate}");
}

#[test]
fn loss_model_runs_on_the_wire() {
    let n = 100_000u64;
    let mut link = Link::new(cfg(|c| c.loss = LossConfig::Bernoulli { p: 0.1 }), 9);
    let out = run(&mut link, periodic(n, us(10), 100));
    let lost = link.stats().lost_packets;
    assert_eq!(out.len() as u64 + lost, n);
    assert!((lost as f64 / n as f64 - 0.1).abs() < 0.005);
}

#[test]
fn other_impairments_do_not_change_which_packets_are_lost() {
    let lost_items = |config: LinkConfig| {
        let mut link = Link::new(config, 10);
        let out = run(&mut link, periodic(20_000, us(100), 300));
        let mut delivered: Vec<u64> = out
            .iter()
            .filter(|d| !d.duplicate)
            .map(|d| d.item)
            .collect();
        delivered.sort_unstable();
        delivered
    };
    let base = cfg(|c| c.loss = LossConfig::Bernoulli { p: 0.05 });
    let busy = cfg(|c| {
        c.loss = LossConfig::Bernoulli { p: 0.05 };
        c.duplicate = 0.3;
        c.corrupt = 0.2;
        c.jitter = Jitter::Normal { sd: ms(1) };
        c.reorder = Reorder {
            p: 0.1,
            extra_delay: ms(3),
        };
    });
    assert_eq!(lost_items(base), lost_items(busy));
}

#[test]
fn same_seed_same_run_different_seed_differs() {
    let config = cfg(|c| {
        c.loss = LossConfig::Bernoulli { p: 0.1 };
        c.jitter = Jitter::Uniform { max: ms(3) };
        c.duplicate = 0.05;
    });
    let go = |seed| {
        run(
            &mut Link::new(config.clone(), seed),
            periodic(5000, us(300), 500),
        )
    };
    assert_eq!(go(1), go(1));
    assert_ne!(go(1), go(2));
}

#[test]
fn outage_holds_packets_in_the_queue() {
    let mut link = Link::new(
        cfg(|c| {
            c.rate = RateProfile::Schedule {
                steps: vec![
                    (Duration::ZERO, 12_000_000),
                    (ms(1), 0),
                    (ms(5), 12_000_000),
                ],
                repeat_every: None,
            };
        }),
        11,
    );
    for i in 0..3 {
        let _ = link.enqueue(Duration::ZERO, 1500, i);
    }
    assert!(link.poll(ms(1)).is_some());
    // The second packet waits out the outage.
    assert_eq!(link.next_wakeup(), Some(ms(6)));
    assert_eq!(link.queue_len(), (1, 1500));
    let out = run(&mut link, []);
    assert_eq!(
        out.iter().map(|d| d.at).collect::<Vec<_>>(),
        vec![ms(6), ms(7)]
    );
}

#[test]
fn permanent_outage_never_wakes_up() {
    let mut link = Link::new(cfg(|c| c.rate = RateProfile::Fixed(0)), 12);
    let _ = link.enqueue(ms(1), 100, 0u64);
    assert_eq!(link.next_wakeup(), None);
    assert_eq!(link.poll(Duration::from_secs(1000)), None);
}

#[test]
fn counters_become_the_results_link_with_utilisation_over_the_run() {
    let stats = LinkStats {
        offered_packets: 10,
        offered_bytes: 15_000,
        dropped_queue_packets: 1,
        lost_packets: 2,
        forwarded_packets: 7,
        forwarded_bytes: 10_500,
        busy_time: ms(500),
        max_queue_packets: 4,
        ..LinkStats::default()
    };
    let l = stats.to_result(2.0, 3);
    assert_eq!(
        (
            l.offered_packets,
            l.offered_bytes,
            l.dropped_queue_packets,
            l.lost_packets
        ),
        (10, 15_000, 1, 2)
    );
    assert_eq!((l.forwarded_packets, l.forwarded_bytes), (7, 10_500));
    assert_eq!((l.max_queue_packets, l.corrupt_header_drops), (4, 3));
    assert_eq!(l.busy_time_s, 0.5);
    assert_eq!(l.utilisation, 0.25);
    assert_eq!(l.queue_delay_p50_s, None, "no packet, no delay figures");
}

/// Each forwarded packet's queue delay lands in the link's histogram (a duplicate once), and
/// the results carry it with the AQM counters.
#[test]
fn queue_delay_of_forwarded_packets_is_summarised() {
    let mut cfg = LinkConfig::ideal();
    cfg.rate = RateProfile::Fixed(8_000_000); // 1000 B take 1 ms
    cfg.duplicate = 1.0;
    let mut link = Link::new(cfg, 1);
    for i in 0..10u32 {
        let _ = link.enqueue(Duration::ZERO, 1000, i);
    }
    let mut n = 0;
    while link.poll(ms(100)).is_some() {
        n += 1;
    }
    assert_eq!(n, 20, "every packet and its copy");
    let stats = link.stats().clone();
    assert_eq!(stats.queue_delay.count(), 10);
    let l = stats.to_result(1.0, 0);
    // The k-th packet waited k ms: 0..=9 ms, mean 4.5 ms, median 4 ms, p99 and max 9 ms.
    let close = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() <= b * 0.008 + 1e-12);
    assert!(close(l.queue_delay_mean_s, 0.0045), "{l:?}");
    assert!(close(l.queue_delay_p50_s, 0.004), "{l:?}");
    assert!(close(l.queue_delay_p99_s, 0.009), "{l:?}");
    assert_eq!(l.queue_delay_max_s, Some(0.009));
    assert_eq!((l.aqm_dropped_packets, l.ce_marked_packets), (0, 0));
}

#[test]
fn deliveries_come_in_delivery_time_then_wire_order_when_reordered_ones_tie() {
    // 1000 bytes at 1 Gbit/s take exactly 8 µs and packets arrive back to back, so a packet
    // held back by 16 µs lands on exactly the instant of the one two behind it: the tie must
    // go to the packet that left the serializer first (the held-back one), duplicates right
    // after their original, as one heap over every packet in flight ordered them.
    let mut link = Link::new(
        cfg(|c| {
            c.rate = RateProfile::Fixed(1_000_000_000);
            c.delay = ms(1);
            c.duplicate = 0.2;
            c.reorder = Reorder {
                p: 0.3,
                extra_delay: us(16),
            };
        }),
        9,
    );
    let out = run(&mut link, periodic(20_000, us(8), 1000));
    let key = |d: &Delivery<u64>| (d.at, d.item, d.duplicate);
    let mut sorted = out.clone();
    sorted.sort_by_key(key);
    assert!(out.iter().map(key).eq(sorted.iter().map(key)));
    // Ties between a held-back packet and a later in-order one really happened.
    let ties = out
        .windows(2)
        .filter(|w| w[0].at == w[1].at && w[0].item + 2 == w[1].item)
        .count();
    assert!(ties > 100, "ties {ties}");
    assert!(link.stats().reordered_packets > 1000);
}

#[test]
fn drop_tail_is_byte_identical_to_before_queue_disciplines() {
    let config = cfg(|c| {
        c.rate = RateProfile::Schedule {
            steps: vec![
                (Duration::ZERO, 7_000_000),
                (ms(30), 0),
                (ms(45), 3_000_000),
            ],
            repeat_every: Some(ms(100)),
        };
        c.delay = ms(5);
        c.jitter = Jitter::Normal { sd: ms(2) };
        c.queue.packets = Some(20);
        c.loss = LossConfig::GilbertElliott {
            p: 0.01,
            r: 0.3,
            k: 0.99,
            h: 0.5,
        };
        c.corrupt = 0.01;
        c.duplicate = 0.02;
        c.reorder = crate::config::Reorder {
            p: 0.03,
            extra_delay: ms(3),
        };
    });
    let arrivals: Vec<_> = (0..20000u64)
        .map(|i| (us(i * 397 % 1000 + i * 300), 100 + (i * 7919 % 1400) as u32))
        .collect();
    // Every impairment at once, a scheduled rate with outages, and a full queue.
    let mut link = Link::new(config, 42);
    let out = run(&mut link, arrivals);
    let mut h: u64 = 1469598103934665603;
    for d in &out {
        for x in [
            d.item,
            d.at.as_nanos() as u64,
            d.ip_bytes as u64,
            d.corrupted as u64,
            d.flip_bit,
            d.duplicate as u64,
        ] {
            h = (h ^ x).wrapping_mul(1099511628211);
        }
    }
    // Recorded from the link before queue disciplines existed (commit 16a912e): the default
    // drop-tail must make the same random draws in the same order and deliver the same bytes.
    assert_eq!(h, 2680663415343041058);
    let s = link.stats();
    assert_eq!(
        (s.dropped_queue_packets, s.lost_packets, s.forwarded_bytes),
        (16485, 91, 2809599)
    );
    assert_eq!(s.busy_time, Duration::from_nanos(6_018_824_001));
    assert_eq!((s.max_queue_packets, s.max_queue_bytes), (20, 20322));
}

/// Bits delivered in `[from, to)` by a link kept saturated with 1500-byte packets (one every
/// 100 µs: 120 Mbit/s offered) for `secs` seconds.
fn saturated_bits(rate: RateProfile, secs: u64, from: Duration, to: Duration) -> u64 {
    let mut link = Link::new(
        cfg(|c| {
            c.rate = rate;
            c.queue.packets = Some(200);
        }),
        1,
    );
    let out = run(&mut link, periodic(secs * 10_000, us(100), 1500));
    out.iter()
        .filter(|d| d.at >= from && d.at < to)
        .map(|d| u64::from(d.ip_bytes) * 8)
        .sum()
}

#[test]
fn mahimahi_traces_deliver_their_average_rate() {
    let profile = |t: &[u64]| crate::mahimahi::profile(t.iter().copied(), 1000).expect("trace");
    // A constant 12 Mbit/s trace: one opportunity every millisecond.
    let constant: Vec<u64> = (1..=1000).collect();
    let bits = saturated_bits(profile(&constant), 10, ms(1000), ms(9000));
    let want = 12_000_000 * 8;
    assert!(
        bits.abs_diff(want) * 100 <= want,
        "{bits} bits in 8 s, want {want}"
    );
    // On/off: 50 ms with two opportunities per ms, 50 ms with none, every 100 ms, plus the
    // last line at 100 ms: 101 opportunities per 100 ms, 12.12 Mbit/s on average.
    let mut on_off: Vec<u64> = (0..50).flat_map(|m| [m, m]).collect();
    on_off.push(100);
    let p = profile(&on_off);
    assert_eq!(p.mean_rate(ms(0), ms(100)), Some(12_120_000.0));
    let bits = saturated_bits(p, 10, ms(1000), ms(9000));
    let want = 12_120_000 * 8;
    assert!(
        bits.abs_diff(want) * 100 <= want,
        "{bits} bits in 8 s, want {want}"
    );
    // During an off phase nothing is delivered; during an on phase 24 Mbit/s.
    let off = saturated_bits(profile(&on_off), 2, ms(1051), ms(1099));
    let on = saturated_bits(profile(&on_off), 2, ms(1001), ms(1049));
    assert_eq!(off, 0);
    assert!(on.abs_diff(24_000 * 48) <= 12_000, "{on}");
}

#[test]
fn queue_delays_are_taken_per_bin_without_changing_the_link() {
    let config = cfg(|c| {
        c.rate = RateProfile::Fixed(12_000_000);
        c.delay = ms(5);
        c.queue.packets = Some(30);
    });
    // Bursts of 40 packets every 100 ms: the queue fills and drains again. Every packet
    // leaves between two bin ends (at 50 µs past a millisecond), so the instant a bin ends
    // decides nothing.
    let arrivals: Vec<(Duration, u32)> = (0..2000u64)
        .map(|i| (ms(i / 40 * 100) + us(50 + i % 40), 1500))
        .collect();
    let mut plain = Link::new(config.clone(), 4);
    let a = run(&mut plain, arrivals.iter().copied());
    let mut sampled = Link::new(config, 4);
    let mut b = Vec::new();
    let mut windows = Vec::new();
    let mut next = ms(10);
    for (i, &(t, bytes)) in arrivals.iter().enumerate() {
        while next <= t {
            drain_until(&mut sampled, next, true, &mut b);
            windows.push((next, sampled.take_queue_delays(next)));
            next += ms(10);
        }
        drain_until(&mut sampled, t, false, &mut b);
        let _ = sampled.enqueue(t, bytes, i as u64);
    }
    b.extend(run(&mut sampled, []));
    windows.push((Duration::MAX, sampled.take_queue_delays(Duration::MAX)));
    assert_eq!(a, b, "taking the windows changed the deliveries");
    assert_eq!(plain.stats(), sampled.stats());
    // Each delivery left the queue 1 ms (its serialization) + 5 ms before it arrived: the
    // windows hold exactly the delays of the packets that left in their bin.
    let mut start = Duration::ZERO;
    let mut seen = 0;
    for (end, w) in &windows {
        let left: Vec<Duration> = a
            .iter()
            .filter(|d| {
                let left = d.at - ms(6);
                left >= start && left < *end
            })
            .map(|d| d.queue_delay)
            .collect();
        assert_eq!(w.packets, left.len() as u64, "bin ending {end:?}");
        if let Some(max) = left.iter().max() {
            let mean = left.iter().map(Duration::as_secs_f64).sum::<f64>() / left.len() as f64;
            assert!((w.mean_s().expect("mean") - mean).abs() < 1e-12);
            assert_eq!(w.max_s(), Some(max.as_secs_f64()));
        } else {
            assert_eq!((w.mean_s(), w.max_s()), (None, None));
        }
        seen += left.len();
        start = *end;
    }
    assert_eq!(seen, a.len());
    // The queue really built up (up to 30 packets of 1 ms each) and emptied.
    let maxes: Vec<f64> = windows.iter().filter_map(|(_, w)| w.max_s()).collect();
    assert!(maxes.iter().any(|&m| m > 0.025), "{maxes:?}");
    assert!(windows.iter().any(|(_, w)| w.packets == 0));
}

#[test]
fn a_random_phase_is_drawn_from_the_seed_and_only_when_asked_for() {
    // 100 one-ms steps of 1, 2, …, 100 Mbit/s: the rate of the first ms names the phase.
    let steps: Vec<(Duration, u64)> = (0..100).map(|i| (ms(i), (i + 1) * 1_000_000)).collect();
    let trace = |random_phase: bool| {
        cfg(|c| {
            c.rate = RateProfile::Schedule {
                steps: steps.clone(),
                repeat_every: Some(ms(100)),
            };
            c.random_phase = random_phase;
        })
    };
    let first_ms_rate =
        |c: LinkConfig, seed: u64| Link::<u32>::new(c, seed).mean_rate(ms(0), ms(1)).unwrap();
    assert_eq!(
        first_ms_rate(trace(false), 7),
        1e6,
        "off: every run starts at the beginning"
    );
    let phases: Vec<f64> = (0..8)
        .map(|seed| first_ms_rate(trace(true), seed))
        .collect();
    assert_eq!(
        phases,
        (0..8)
            .map(|seed| first_ms_rate(trace(true), seed))
            .collect::<Vec<_>>()
    );
    let mut distinct = phases.clone();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    assert!(distinct.len() >= 6, "eight seeds, phases {phases:?}");
}
