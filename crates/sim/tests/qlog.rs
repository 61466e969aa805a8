//! qlog from both QUIC stacks: one `.sqlog` per connection and side, RFC 7464 records, the
//! vantage point of the file, times and RTTs in milliseconds, frames in every packet event,
//! losses and metrics; the research model's file is byte-identical for the same seed, and
//! writing qlogs changes no result. (python/tests/test_qlog.py validates the same files
//! against the JSON Schema in crates/transport/tests/qlog-schema.json.)

mod common;
use common::*;
use scenario::model::{RunSpec, Scenario, Stack, SweepPoint, Workload};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// One-way delay of the path (the RTT is at least twice it).
const ONE_WAY_MS: u64 = 10;

/// A quinn flow and a model flow, two connections each (the second resumed with 0-RTT), on a
/// path that loses 2% of the downstream packets.
fn scenario() -> Scenario {
    let w = Workload::Download {
        size: 200_000,
        streams: 1,
        connections: 2,
    };
    let mut quinn = flow("q", w);
    quinn.quic_mut().expect("quic").common.zero_rtt = true;
    let mut model = scenario::builder::on_stack(flow("m", w), Stack::QuicModel);
    model.quic_model_mut().expect("model").common.zero_rtt = true;
    let mut s = dumbbell(
        10_000_000,
        ms(ONE_WAY_MS),
        25,
        vec![quinn, model],
        ms(5_000),
    );
    s.bottleneck.down.loss = netem::config::LossConfig::Bernoulli { p: 0.02 };
    s
}

/// Runs the scenario, writing qlogs into `qlog_dir` (created) when given.
fn run_into(qlog_dir: Option<PathBuf>) -> results::Run {
    if let Some(d) = &qlog_dir {
        std::fs::create_dir_all(d).expect("qlog dir");
    }
    sim::run(
        &SweepPoint {
            axes: vec![],
            scenario: scenario(),
        },
        &RunSpec {
            id: "p0-r0".into(),
            point: 0,
            rep: 0,
            seed: 3,
        },
        &sim::RunOptions {
            pcap: None,
            qlog_dir,
            series: false,
        },
    )
    .expect("run")
}

fn temp_dir(tag: &str) -> fsutil::PrivateDir {
    fsutil::PrivateDir::new(&format!("quiclab-{tag}-")).expect("temp dir")
}

/// The records of a JSON-SEQ file: each one 0x1E, a JSON text, `\n`.
fn records(path: &Path) -> Vec<Value> {
    let bytes = std::fs::read(path).expect("read qlog");
    assert_eq!(
        bytes.last(),
        Some(&b'\n'),
        "{}: ends a record",
        path.display()
    );
    bytes[..bytes.len() - 1]
        .split(|&b| b == b'\n')
        .map(|r| {
            assert_eq!(
                r.first(),
                Some(&0x1e),
                "{}: RFC 7464 separator",
                path.display()
            );
            serde_json::from_slice(&r[1..]).expect("one JSON text per record")
        })
        .collect()
}

fn names(dir: &Path) -> Vec<String> {
    let mut n: Vec<String> = std::fs::read_dir(dir)
        .expect("qlog dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    n.sort();
    n
}

#[test]
fn both_stacks_write_one_sqlog_per_connection_and_side_in_milliseconds_with_frames() {
    let tmp = temp_dir("qlog");
    let dir = tmp.path().join("q");
    let r = run_into(Some(dir.clone()));
    for f in &r.flows {
        assert_eq!(
            (f.error.as_deref(), f.bytes_delivered),
            (None, 400_000),
            "{}",
            f.name
        );
    }
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    let files = names(&dir);
    assert_eq!(
        files,
        [
            "m-client-0.sqlog",
            "m-client-1.sqlog",
            "m-server-0.sqlog",
            "m-server-1.sqlog",
            "q-client-0.sqlog",
            "q-client-1.sqlog",
            "q-server-0.sqlog",
            "q-server-1.sqlog"
        ]
    );
    for stack in ["q", "m"] {
        let mut seen = std::collections::BTreeSet::new();
        for role in ["client", "server"] {
            for n in 0..2 {
                let name = format!("{stack}-{role}-{n}.sqlog");
                let recs = records(&dir.join(&name));
                let h = &recs[0];
                assert_eq!(h["qlog_version"], "0.3", "{name}");
                assert_eq!(h["qlog_format"], "JSON-SEQ", "{name}");
                assert_eq!(h["trace"]["vantage_point"]["type"], role, "{name}");
                assert_eq!(h["trace"]["common_fields"]["time_format"], "relative");
                // Shared by both ends and not 0, which qvis reads as "none" and then shifts
                // the client's trace against the server's.
                assert_eq!(h["trace"]["common_fields"]["reference_time"], 1.0, "{name}");
                let mut last = 0.0;
                let mut ack_received = false;
                for e in &recs[1..] {
                    let ev = e["name"].as_str().expect("event name");
                    seen.insert(ev.to_string());
                    let t = e["time"].as_f64().expect("time");
                    assert!(t >= last - 0.01 && t < 5_000.0, "{name}: ms in order: {e}");
                    last = t;
                    let d = &e["data"];
                    match ev {
                        "transport:packet_sent" | "transport:packet_received" => {
                            let frames = d["frames"].as_array().expect("frames");
                            assert!(!frames.is_empty(), "{name}: {e}");
                            for f in frames {
                                let ft = f["frame_type"].as_str().expect("frame_type");
                                seen.insert(format!("frame {ft}"));
                                if ft == "unknown" {
                                    panic!("{name}: a frame did not parse: {e}");
                                }
                            }
                            let raw = &d["raw"];
                            assert!(raw["payload_length"].as_u64() < raw["length"].as_u64());
                            let ty = d["header"]["packet_type"].as_str().expect("type");
                            seen.insert(format!("packet {ty}"));
                            ack_received |= ev == "transport:packet_received"
                                && frames.iter().any(|f| f["frame_type"] == "ack");
                        }
                        "recovery:metrics_updated" => {
                            // A minimum or latest RTT is a sample, so it needs an ACK first
                            // (before it, the stacks hold their initial RTT, 333 ms).
                            assert!(
                                ack_received
                                    || (d.get("min_rtt").is_none()
                                        && d.get("latest_rtt").is_none()),
                                "{name}: an RTT before any ACK: {e}"
                            );
                            for k in ["min_rtt", "smoothed_rtt", "latest_rtt"] {
                                if let Some(v) = d.get(k) {
                                    let v = v.as_f64().expect("number");
                                    // Milliseconds: at least the path's round trip.
                                    assert!(
                                        v >= 2.0 * ONE_WAY_MS as f64 && v < 2_000.0,
                                        "{name}: {k} in ms: {e}"
                                    );
                                }
                            }
                        }
                        "recovery:packet_lost" => {
                            assert!(d["header"]["packet_number"].is_u64(), "{e}");
                        }
                        other => panic!("{name}: unexpected event {other}"),
                    }
                }
            }
        }
        for want in [
            "transport:packet_sent",
            "transport:packet_received",
            "recovery:packet_lost",
            "recovery:metrics_updated",
            "frame stream",
            "frame ack",
            "frame crypto",
            "frame padding",
            "frame handshake_done",
            "frame connection_close",
            "packet initial",
            "packet handshake",
            "packet 0RTT",
            "packet 1RTT",
        ] {
            assert!(seen.contains(want), "{stack}: no {want} in {seen:?}");
        }
    }
}

#[test]
fn the_same_seed_gives_byte_identical_qlogs() {
    let tmp = temp_dir("qlog-twice");
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    run_into(Some(a.clone()));
    run_into(Some(b.clone()));
    let files = names(&a);
    assert_eq!(files, names(&b));
    for f in files {
        let (x, y) = (std::fs::read(a.join(&f)), std::fs::read(b.join(&f)));
        assert!(
            x.expect("a") == y.expect("b"),
            "{f} differs between two runs"
        );
    }
}

#[test]
fn writing_qlogs_changes_no_result() {
    let tmp = temp_dir("qlog-same");
    let with = run_into(Some(tmp.path().join("q")));
    let without = run_into(None);
    assert_eq!(
        serde_json::to_value(&with).expect("json"),
        serde_json::to_value(&without).expect("json")
    );
}
