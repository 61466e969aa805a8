//! The QUIC research model (`stack = "quic-model"`) through the engine: its flows complete,
//! carry the model's own results (which quinn's and TCP's do not), take their knobs from the
//! scenario, stay deterministic, and appear in the pcap as UDP.

mod common;
use common::*;
use scenario::model::{FlowSpec, RunSpec, Scenario, Stack, SweepPoint, Workload};

fn download(size: u64) -> Workload {
    Workload::Download {
        size,
        streams: 1,
        connections: 1,
    }
}

/// A model flow with the same knobs as [`flow`] (quinn's windows, RFC NewReno).
fn model(name: &str, workload: Workload) -> FlowSpec {
    let f = flow(name, workload);
    let quinn = *f.quic().expect("a quic flow");
    let mut f = scenario::builder::on_stack(f, Stack::QuicModel);
    let m = f.quic_model_mut().expect("a model flow");
    m.common.stream_window = quinn.common.stream_window;
    m.common.conn_window = quinn.common.conn_window;
    m.common.send_window = quinn.common.send_window;
    f
}

#[test]
fn a_model_download_completes_with_the_model_fields_and_the_others_without() {
    let tcp = scenario::builder::on_stack(flow("tcp", download(300_000)), Stack::Tcp);
    let s = dumbbell(
        20_000_000,
        ms(15),
        100,
        vec![
            model("model", download(300_000)),
            flow("quinn", download(300_000)),
            tcp,
        ],
        ms(10_000),
    );
    let r = run(&s, 1);
    let stacks: Vec<&str> = r.flows.iter().map(|f| f.stack.as_str()).collect();
    assert_eq!(stacks, ["quic-model", "quic", "tcp"]);
    for f in &r.flows {
        assert_eq!(f.error, None, "{}", f.name);
        assert_eq!(f.bytes_delivered, 300_000, "{}", f.name);
        assert!(f.completion_s.is_some(), "{} completes", f.name);
    }
    assert!(r.flows[1].model.is_none() && r.flows[2].model.is_none());
    // The one-way delay is the engine's, alike for every stack: at least the 15 ms of
    // propagation on each.
    for f in &r.flows {
        let d = f.one_way_delay.expect("every stack's delay is measured");
        assert!(d.count > 100 && d.mean_s >= 0.015, "{}: {d:?}", f.name);
    }
    let json = serde_json::to_value(&r).expect("json");
    assert!(
        json["flows"][1].get("model").is_none(),
        "quinn's line has no model key"
    );
    assert!(
        json["flows"][2].get("model").is_none(),
        "TCP's line has no model key"
    );

    let f = &r.flows[0];
    let m = f.model.as_ref().expect("the model's figures");
    let sent = f.ack_frames_sent.expect("ACKs counted");
    assert!(sent > 0 && m.ack_frames_received > 0);
    assert!(
        m.ack_frames_received <= sent,
        "{} of {sent}",
        m.ack_frames_received
    );
    // quinn's default: an ACK after every second ack-eliciting packet (or the 25 ms timer).
    let ratio = m.achieved_ack_ratio.expect("a ratio");
    assert!((1.0..=2.2).contains(&ratio), "achieved ACK ratio {ratio}");
    assert!(m.ack_eliciting_received >= 300_000 / 1500);
    // One-way delay: at least the 15 ms of propagation, ordered percentiles.
    let delay = f.one_way_delay.expect("measured");
    assert!(delay.count >= 200, "{}", delay.count);
    let d = [delay.p50_s, delay.p95_s, delay.p99_s, delay.max_s];
    let mean = delay.mean_s;
    assert!(mean >= 0.015 && mean <= d[3], "mean {mean}, {d:?}");
    assert!(d[0] >= 0.015 && d.windows(2).all(|w| w[0] <= w[1]), "{d:?}");
    // At most the propagation, one packet's serialization and a full 100-packet queue at
    // 20 Mbit/s (60 ms).
    let bound = 0.015 + 0.0006 + 100.0 * 1500.0 * 8.0 / 20e6;
    assert!(d[3] <= bound, "max {} above {bound}", d[3]);
    let completion = f.completion_s.unwrap_or(0.0);
    for t in [m.cwnd_limited_s, m.flow_control_limited_s, m.app_limited_s] {
        assert!(
            (0.0..=completion + 1e-9).contains(&t),
            "{t} s of {completion} s"
        );
    }
    // The common counters and the series come from the model like from the other stacks.
    assert!(f.packets_sent.unwrap_or(0) >= 200);
    assert!(f.final_mtu.is_some_and(|m| m > 1200));
    assert!(r
        .series
        .iter()
        .any(|row| row.flow == "model" && row.cwnd_bytes > 0));
}

#[test]
fn the_scenario_knobs_reach_the_model() {
    let ratio = |receiver_ack_ratio: u32| {
        let mut f = model("m", download(500_000));
        f.quic_model_mut()
            .expect("a quic_model flow")
            .receiver_ack_ratio = receiver_ack_ratio;
        let r = run(&dumbbell(20_000_000, ms(10), 100, vec![f], ms(10_000)), 1);
        assert_eq!(r.flows[0].bytes_delivered, 500_000);
        let m = r.flows[0].model.clone().expect("model figures");
        (
            m.achieved_ack_ratio.expect("ratio"),
            r.flows[0].ack_frames_sent,
        )
    };
    let (one, acks_one) = ratio(1);
    let (ten, acks_ten) = ratio(10);
    assert!((0.9..=1.1).contains(&one), "ACK every packet: {one}");
    assert!(ten > 3.0, "ACK every tenth packet (or the timer): {ten}");
    assert!(acks_ten < acks_one, "{acks_ten:?} vs {acks_one:?}");
}

#[test]
fn model_runs_are_deterministic() {
    let mut f = model("b", Workload::Bulk { upload: true });
    f.stop = Some(ms(2_000));
    let mut s = dumbbell(10_000_000, ms(10), 20, vec![f], ms(3_000));
    s.bottleneck.up.loss = netem::config::LossConfig::Bernoulli { p: 0.01 };
    let a = serde_json::to_string(&run(&s, 7)).expect("json");
    let b = serde_json::to_string(&run(&s, 7)).expect("json");
    let c = serde_json::to_string(&run(&s, 8)).expect("json");
    assert_eq!(a, b);
    assert_ne!(a, c, "the seed drives the link's losses");
}

/// A fresh private directory (random name, mode 0700), removed on drop.
fn temp_dir(tag: &str) -> fsutil::PrivateDir {
    fsutil::PrivateDir::new(&format!("quiclab-{tag}-")).expect("temp dir")
}

/// Runs `s` with `seed`, writing the bottleneck's packets to `pcap` (and the TLS secrets to
/// `pcap` + ".keys").
fn run_capturing(s: Scenario, seed: u64, pcap: &std::path::Path) -> results::Run {
    sim::run(
        &SweepPoint {
            axes: vec![],
            scenario: s,
        },
        &RunSpec {
            id: "p0-r0".into(),
            point: 0,
            rep: 0,
            seed,
        },
        &sim::RunOptions {
            pcap: Some(pcap.to_path_buf()),
            qlog_dir: None,
            series: false,
        },
    )
    .expect("run")
}

/// tshark's fields of the frames matching `filter`, reading UDP port 443 as plain data (the
/// model's payload is its own encoding, not QUIC): the command docs/architecture.md gives.
fn tshark_data(pcap: &std::path::Path, filter: &str, field: &str) -> Vec<String> {
    tshark(pcap, &["-d", "udp.port==443,data"], filter, field)
}

#[test]
fn model_packets_appear_in_the_pcap_as_udp() {
    let tmp = temp_dir("model-pcap");
    let pcap = tmp.path().join("model.pcap");
    let s = dumbbell(
        10_000_000,
        ms(10),
        1000,
        vec![model("dl", download(200_000))],
        ms(5_000),
    );
    let r = run_capturing(s, 3, &pcap);
    let f = &r.flows[0];
    assert_eq!(f.bytes_delivered, 200_000);
    // Every datagram either endpoint sent crossed the bottleneck once (no loss here).
    let datagrams: u64 = f.datagrams_sent.iter().flatten().sum();
    let frames = tshark_data(&pcap, "udp", "frame.number");
    assert_eq!(frames.len() as u64, datagrams);
    // All of them carry the model's encoding ("QM"), none is malformed.
    assert_eq!(
        tshark_data(&pcap, "data.data[0:2] == 51:4d", "frame.number").len(),
        frames.len()
    );
    assert!(tshark_data(
        &pcap,
        "_ws.malformed || _ws.expert.severity >= error",
        "frame.number"
    )
    .is_empty());
    // Sizes are the real ones: the server's data datagrams are full (mtu − 28 = 1472 B of UDP
    // payload), and the UDP length equals the real length the encoding records at offset 7.
    let rows = tshark_data(&pcap, "udp.srcport == 443", "data.data");
    let lens = tshark_data(&pcap, "udp.srcport == 443", "udp.length");
    assert_eq!(rows.len(), lens.len());
    let mut full = 0;
    for (hex, udp_len) in rows.iter().zip(&lens) {
        let bytes: Vec<u8> = (0..hex.len() / 2)
            .filter_map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok())
            .collect();
        let real = u16::from_le_bytes([bytes[7], bytes[8]]) as usize;
        let udp_payload = udp_len.parse::<usize>().expect("a length") - 8;
        assert_eq!(udp_payload, bytes.len());
        assert!(udp_payload >= real, "{udp_payload} < {real}");
        if real == 1472 {
            assert_eq!(udp_payload, real);
            full += 1;
        }
    }
    assert!(full >= 200_000 / 1472, "only {full} full datagrams");
    tmp.remove().expect("remove");
}

/// The model's MTU bounds (1228 to 65535, docs/limits.md) both carry a download: the largest
/// datagram the model builds fits the IPv4 packet the scenario allows.
#[test]
fn the_models_mtu_extremes_carry_a_download() {
    for mtu in [1228u16, 9000, 65535] {
        let mut f = model("m", download(1_000_000));
        f.quic_model_mut().expect("a quic_model flow").mtu = mtu;
        let r = run(&dumbbell(100_000_000, ms(5), 1000, vec![f], ms(10_000)), 1);
        let f = &r.flows[0];
        assert_eq!(
            (f.error.as_deref(), f.bytes_delivered),
            (None, 1_000_000),
            "mtu {mtu}"
        );
        assert_eq!(f.final_mtu, Some(mtu - 28), "mtu {mtu}");
        let largest = r.links["bottleneck_down"].offered_bytes
            / r.links["bottleneck_down"].offered_packets.max(1);
        assert!(
            largest <= u64::from(mtu),
            "mtu {mtu}: mean packet {largest} B"
        );
    }
}

/// The model's handshake flights carry quinn's CRYPTO bytes: quinn flows (two connections, the
/// second resumed with 0-RTT) over several seeds, decrypted from the pcap with the run's key
/// log by tshark, against `transport::quicmodel::handshake_sizes`. quinn's GREASE transport
/// parameter moves the ClientHello and the server's flight by a few bytes per connection; the
/// model's constants are the medians, so each must lie within the spread seen plus a margin
/// well below the 16 bytes a hash change (SHA-384 → SHA-256) moves a Finished by.
#[test]
fn the_models_handshake_sizes_are_quinns() {
    use transport::quicmodel::handshake_sizes as model;
    let tmp = temp_dir("handshake-sizes");
    // Per flight: every size quinn sent, in the order (client hello, server hello, server
    // handshake, client finished, tickets) × (full, resumed).
    let mut seen: Vec<Vec<u32>> = vec![Vec::new(); 10];
    for seed in 1..=5u64 {
        let pcap = tmp.path().join(format!("quinn-{seed}.pcap"));
        let mut f = flow(
            "page",
            Workload::Download {
                size: 20_000,
                streams: 1,
                connections: 2,
            },
        );
        f.quic_mut().expect("a quic flow").common.zero_rtt = true;
        let s = dumbbell(10_000_000, ms(10), 1000, vec![f], ms(5_000));
        run_capturing(s, seed, &pcap);
        let mut keys = pcap.clone().into_os_string();
        keys.push(".keys");
        let out = std::process::Command::new("tshark")
            .args(["-n", "-o"])
            .arg(format!("tls.keylog_file:{}", keys.to_string_lossy()))
            .arg("-r")
            .arg(&pcap)
            .args([
                "-d",
                "udp.port==443,quic",
                "-Y",
                "quic.crypto.length",
                "-T",
                "fields",
                "-e",
                "quic.crypto.length",
            ])
            .output()
            .expect("tshark must be installed (scripts/setup.sh)");
        assert!(out.status.success(), "tshark failed");
        let lens: Vec<u32> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .flat_map(|l| l.split(',').map(|v| v.parse::<u32>().expect("a length")))
            .collect();
        // Full handshake then resumption: CH, SH + server flight, Finished, tickets, twice.
        assert_eq!(lens.len(), 10, "seed {seed}: {lens:?}");
        for (slot, len) in seen.iter_mut().zip(lens) {
            slot.push(len);
        }
    }
    let expected = [
        ("ClientHello", model::CLIENT_HELLO[0], 0),
        ("ServerHello", model::SERVER_HELLO[0], 1),
        ("server's flight", model::SERVER_HANDSHAKE[0], 2),
        ("client Finished", model::CLIENT_FINISHED, 3),
        ("session tickets", model::SESSION_TICKETS, 4),
        ("resumed ClientHello", model::CLIENT_HELLO[1], 5),
        ("resumed ServerHello", model::SERVER_HELLO[1], 6),
        ("resumed server's flight", model::SERVER_HANDSHAKE[1], 7),
        ("resumed client Finished", model::CLIENT_FINISHED, 8),
        ("resumed session tickets", model::SESSION_TICKETS, 9),
    ];
    for (what, model_len, slot) in expected {
        let quinn = &seen[slot];
        let (lo, hi) = (quinn.iter().min().unwrap(), quinn.iter().max().unwrap());
        assert!(
            model_len + 4 >= *lo && model_len <= hi + 4,
            "{what}: model {model_len} bytes, quinn {quinn:?}"
        );
    }
    tmp.remove().expect("remove");
}

/// One run of the shipped study file's point whose axes take all of `values`.
fn run_study_point(text: &str, file: &str, values: &[&str]) -> results::Run {
    let loaded = scenario::parse_str(text, file, std::path::Path::new("."), &[], &[])
        .unwrap_or_else(|e| panic!("{e}"));
    let point = loaded
        .points
        .iter()
        .find(|p| values.iter().all(|v| p.axes.iter().any(|(_, a)| a == v)))
        .unwrap_or_else(|| panic!("{file}: no point at {values:?}"));
    let spec = RunSpec {
        id: "p0-r0".into(),
        point: 0,
        rep: 0,
        seed: 1,
    };
    sim::run(point, &spec, &sim::RunOptions::default()).expect("run")
}

/// Window goodput of the shipped study file's point whose axes take all of `values`.
fn study_point_goodput(text: &str, file: &str, values: &[&str]) -> f64 {
    run_study_point(text, file, values).flows[0]
        .window_goodput_bps
        .expect("goodput")
}

/// Seed 001's Fig. 5 set-up on a rate-limited path (the shipped study file): INET's threshold
/// update re-opens a whole window per round trip only when the window arrives in one instant
/// (an unlimited link); at any finite rate it re-opens half of one and the goodput halves.
#[test]
fn a_threshold_update_halves_credit_limited_goodput_on_a_rate_limited_path() {
    let text = include_str!("../../../scenarios/studies/seed001/fc-threshold-rate.toml");
    let goodput = |rate: &str| study_point_goodput(text, "fc-threshold-rate.toml", &[rate]);
    // W / RTT = 100 kB / 10 ms = 80 Mbit/s.
    let unlimited = goodput("unlimited");
    assert!((unlimited / 80e6 - 1.0).abs() < 0.01, "{unlimited}");
    for rate in ["320Mbit", "80Mbit"] {
        let g = goodput(rate);
        assert!((g / 40e6 - 1.0).abs() < 0.03, "{rate}: {g}");
    }
}

/// Connection-level credit (MAX_DATA) limits as the stream's does (the shipped study file):
/// GP = W / RTT for either level.
#[test]
fn connection_credit_limits_goodput_as_stream_credit_does() {
    let text = include_str!("../../../scenarios/studies/seed001/fc-connection.toml");
    for variant in ["stream-limited", "connection-limited"] {
        // 100 kB per 20 ms round trip.
        let g = study_point_goodput(text, "fc-connection.toml", &[variant, "10ms"]);
        assert!((g / 40e6 - 1.0).abs() < 0.01, "{variant}: {g}");
    }
}

/// Seed 001's stream scheduler (the shipped study file): FIFO finishes the four streams one
/// after another, round-robin all of them at the end of the same transfer.
#[test]
fn fifo_finishes_streams_in_turn_and_round_robin_together() {
    let text = include_str!("../../../scenarios/studies/seed001/scheduler.toml");
    let run_variant = |name: &str| {
        let r = run_study_point(text, "scheduler.toml", &[name]);
        let f = &r.flows[0];
        let m = f.model.as_ref().expect("model figures");
        (
            f.completion_s.expect("complete"),
            m.first_stream_completion_s.expect("a first stream"),
            m.mean_stream_completion_s.expect("a mean"),
        )
    };
    let (t_rr, first_rr, mean_rr) = run_variant("round-robin");
    let (t_fifo, first_fifo, mean_fifo) = run_variant("fifo");
    // The same transfer either way.
    assert!((t_fifo / t_rr - 1.0).abs() < 0.02, "{t_fifo} vs {t_rr}");
    // Round-robin: every stream ends with the transfer.
    assert!(
        first_rr > 0.95 * t_rr && mean_rr > 0.97 * t_rr,
        "{first_rr} {mean_rr} of {t_rr}"
    );
    // FIFO: the first stream at about a quarter, the mean at about 0.625 of the transfer.
    assert!(
        (first_fifo / t_fifo - 0.25).abs() < 0.06,
        "{first_fifo} of {t_fifo}"
    );
    assert!(
        (mean_fifo / t_fifo - 0.625).abs() < 0.05,
        "{mean_fifo} of {t_fifo}"
    );
}

/// Seed 001's send-queue limit (the shipped study file): INET's queue keeps bytes until they are
/// acknowledged, so with L below the path's BDP each resume writes (1 − ρ)·L and waits a round
/// trip plus (1 − 2ρ)·L at the bottleneck rate for the next: goodput
/// (1 − ρ)·L / (R + (1 − 2ρ)·L / C).
#[test]
fn the_send_queue_limit_refills_a_batch_per_round_trip_from_its_low_water_mark() {
    let text = include_str!("../../../scenarios/studies/seed001/send-queue.toml");
    let (limit, rtt, rate) = (50_000.0, 0.010, 10e6);
    for low in ["0", "0.2", "0.4"] {
        let rho: f64 = low.parse().unwrap();
        let expected = 8.0 * (1.0 - rho) * limit / (rtt + (1.0 - 2.0 * rho) * limit / rate);
        let g = study_point_goodput(text, "send-queue.toml", &[low]);
        assert!(
            (g / expected - 1.0).abs() < 0.03,
            "ρ = {low}: {g} against {expected}"
        );
    }
}
