//! pcap and qlog outputs: files appear, tshark reads the capture and decrypts QUIC with the key log.

mod common;
use common::*;
use scenario::model::{RunSpec, SweepPoint, Workload};

/// A fresh private directory (random name, mode 0700), removed on drop.
fn temp_dir(tag: &str) -> fsutil::PrivateDir {
    fsutil::PrivateDir::new(&format!("quiclab-{tag}-")).unwrap()
}

#[test]
fn pcap_and_qlog_are_written_and_tshark_decrypts_quic() {
    let tmp = temp_dir("traces");
    let dir = tmp.path().to_path_buf();
    let s = dumbbell(
        10_000_000,
        ms(10),
        25,
        vec![flow(
            "dl",
            Workload::Download {
                size: 50_000,
                streams: 1,
                connections: 1,
            },
        )],
        ms(5_000),
    );
    let pcap = dir.join("run.pcap");
    let qlog = dir.join("qlog");
    std::fs::create_dir_all(&qlog).unwrap();
    let opts = sim::RunOptions {
        pcap: Some(pcap.clone()),
        qlog_dir: Some(qlog.clone()),
        series: false,
    };
    let point = SweepPoint {
        axes: vec![],
        scenario: s,
    };
    let r = sim::run(
        &point,
        &RunSpec {
            id: "p0-r0".into(),
            point: 0,
            rep: 0,
            seed: 3,
        },
        &opts,
    )
    .unwrap();
    assert_eq!(r.flows[0].bytes_delivered, 50_000);

    let keys = std::fs::read_to_string(dir.join("run.pcap.keys")).unwrap();
    assert!(
        keys.contains("CLIENT_HANDSHAKE_TRAFFIC_SECRET"),
        "key log has TLS 1.3 secrets"
    );
    let qlogs: Vec<_> = std::fs::read_dir(&qlog).unwrap().collect();
    assert_eq!(qlogs.len(), 2, "one qlog per side");
    for q in qlogs {
        let text = std::fs::read_to_string(q.unwrap().path()).unwrap();
        assert!(text.contains("packet_sent"), "qlog has packet events");
    }

    // tshark is installed by scripts/setup.sh; CI runs that first, so its absence is a failure.
    let out = std::process::Command::new("tshark")
        .args(["-n", "-r"])
        .arg(&pcap)
        .arg("-o")
        .arg(format!(
            "tls.keylog_file:{}",
            dir.join("run.pcap.keys").display()
        ))
        .args([
            "-Y",
            "quic.stream_data",
            "-T",
            "fields",
            "-e",
            "frame.number",
        ])
        .output()
        .expect("tshark must be installed (scripts/setup.sh)");
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let decrypted_stream_frames = String::from_utf8_lossy(&out.stdout).lines().count();
    assert!(
        decrypted_stream_frames > 10,
        "tshark decrypted only {decrypted_stream_frames} STREAM frames"
    );
    tmp.remove().unwrap();
}

#[test]
fn tcp_segments_appear_in_the_pcap_as_real_tcp() {
    let tmp = temp_dir("tcp-pcap");
    let dir = tmp.path().to_path_buf();
    let f = flow(
        "dl",
        Workload::Download {
            size: 200_000,
            streams: 1,
            connections: 1,
        },
    );
    let f = scenario::builder::on_stack(f, scenario::model::Stack::Tcp);
    // A queue deep enough that slow start loses nothing: every byte is sent once.
    let s = dumbbell(10_000_000, ms(10), 1000, vec![f], ms(5_000));
    let pcap = dir.join("tcp.pcap");
    let opts = sim::RunOptions {
        pcap: Some(pcap.clone()),
        qlog_dir: None,
        series: false,
    };
    let point = SweepPoint {
        axes: vec![],
        scenario: s,
    };
    let r = sim::run(
        &point,
        &RunSpec {
            id: "p0-r0".into(),
            point: 0,
            rep: 0,
            seed: 3,
        },
        &opts,
    )
    .unwrap();
    assert_eq!(r.flows[0].bytes_delivered, 200_000);
    let fields = |filter: &str, field: &str| tshark(&pcap, &[], filter, field);
    assert_eq!(
        fields("tcp.flags.syn == 1", "frame.number").len(),
        2,
        "SYN and SYN-ACK"
    );
    // Server → client payload: the response plus the TLS 1.3 server flight.
    let down: u64 = fields("tcp.srcport == 443", "tcp.len")
        .iter()
        .filter_map(|l| l.parse::<u64>().ok())
        .sum();
    assert_eq!(r.flows[0].packets_lost, Some(0));
    assert!(down > 200_000 && down < 206_000, "server sent {down} bytes");
    let anomalies = fields(
        "tcp.analysis.flags && !tcp.analysis.window_update",
        "frame.number",
    );
    assert!(
        anomalies.is_empty(),
        "tshark's TCP analysis flags frames {anomalies:?}"
    );
    tmp.remove().unwrap();
}

#[test]
fn an_unwritable_qlog_directory_is_a_warning_and_changes_no_metric() {
    let tmp = temp_dir("qlog-unwritable");
    let dir = tmp.path().to_path_buf();
    // A directory below a regular file can be neither created nor written.
    let file = dir.join("not-a-dir");
    std::fs::write(&file, b"a file").unwrap();
    let s = dumbbell(
        10_000_000,
        ms(10),
        25,
        vec![flow(
            "dl",
            Workload::Download {
                size: 50_000,
                streams: 1,
                connections: 2,
            },
        )],
        ms(5_000),
    );
    let point = SweepPoint {
        axes: vec![],
        scenario: s,
    };
    let spec = RunSpec {
        id: "p0-r0".into(),
        point: 0,
        rep: 0,
        seed: 3,
    };
    let run = |qlog_dir: Option<std::path::PathBuf>| {
        let opts = sim::RunOptions {
            pcap: None,
            qlog_dir,
            series: false,
        };
        sim::run(&point, &spec, &opts).unwrap()
    };
    let plain = run(None);
    let with_bad_qlog = run(Some(file.join("qlog")));
    assert!(plain.warnings.is_empty(), "{:?}", plain.warnings);
    // Two connections, a qlog per side each.
    assert_eq!(
        with_bad_qlog.warnings.len(),
        4,
        "{:?}",
        with_bad_qlog.warnings
    );
    for w in &with_bad_qlog.warnings {
        assert!(w.starts_with("flow dl: cannot create qlog"), "{w}");
    }
    assert_eq!(with_bad_qlog.flows[0].bytes_delivered, 100_000, "completed");
    assert_eq!(
        results::Run {
            warnings: Vec::new(),
            ..with_bad_qlog
        },
        plain,
        "same metrics"
    );
    tmp.remove().unwrap();
}
