//! The real endpoints' qlog: one `.sqlog` per connection and side, in the schema the simulator
//! writes (the vantage point of the file, RFC 7464 records), with the frames of every packet
//! sent and received, the server's first Initial included.

mod common;

use std::path::Path;

use common::{get, pool, server};
use endpoints::client::{Client, ClientConfig, HttpVersion};
use endpoints::server::ServerConfig;
use serde_json::Value;

/// The records of the one `.sqlog` in `dir`.
fn only_file(dir: &Path) -> (String, Vec<Value>) {
    let files: Vec<_> = std::fs::read_dir(dir)
        .expect("qlog dir")
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.ends_with(".sqlog"), "{name}");
    let bytes = std::fs::read(&files[0]).expect("read");
    assert_eq!(bytes.last(), Some(&b'\n'));
    let recs = bytes[..bytes.len() - 1]
        .split(|&b| b == b'\n')
        .map(|r| {
            assert_eq!(r.first(), Some(&0x1e), "{name}: RFC 7464 separator");
            serde_json::from_slice(&r[1..]).expect("JSON")
        })
        .collect();
    (name, recs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_h3_download_writes_one_qlog_per_side_with_frames() {
    let tmp = fsutil::PrivateDir::new("quiclab-endpoint-qlog-").expect("temp dir");
    let (sdir, cdir) = (tmp.path().join("server"), tmp.path().join("client"));
    std::fs::create_dir_all(&sdir).unwrap();
    std::fs::create_dir_all(&cdir).unwrap();
    let mut scfg = ServerConfig::default();
    scfg.quic.qlog_dir = Some(sdir.clone());
    let srv = server(scfg).await;
    let mut ccfg = ClientConfig {
        http: HttpVersion::H3,
        policy: pool(),
        timeout: std::time::Duration::from_secs(20),
        ..ClientConfig::default()
    };
    ccfg.quic.qlog_dir = Some(cdir.clone());
    let c = Client::new(ccfg).expect("client");
    let r = c.send(get(srv.local_addr(), "/100000")).await;
    assert_eq!((r.error, r.bytes_in), (None, 100_000));
    c.close().await;
    srv.shutdown().await;
    drop(c);
    assert!(endpoints::quic::take_qlog_errors().is_empty());

    for (dir, role) in [(&cdir, "client"), (&sdir, "server")] {
        let (name, recs) = only_file(dir);
        assert!(name.starts_with(&format!("{role}-")), "{name}");
        let h = &recs[0];
        assert_eq!(h["qlog_format"], "JSON-SEQ");
        assert_eq!(h["trace"]["vantage_point"]["type"], role);
        assert!(h["trace"]["common_fields"]["reference_time"].as_f64() > Some(1.6e12));
        let mut stream_bytes = 0;
        let mut first_received = None;
        for e in &recs[1..] {
            assert!(e.get("group_id").is_none(), "{e}");
            let name = e["name"].as_str().expect("name");
            if !name.starts_with("transport:packet_") {
                continue;
            }
            let frames = e["data"]["frames"]
                .as_array()
                .expect("frames in every packet");
            assert!(!frames.is_empty(), "{e}");
            assert!(frames.iter().all(|f| f["frame_type"] != "unknown"), "{e}");
            if name == "transport:packet_received" {
                first_received.get_or_insert(e);
                for f in frames.iter().filter(|f| f["frame_type"] == "stream") {
                    stream_bytes += f["length"].as_u64().expect("length");
                }
            }
        }
        let first = first_received.expect("packets received");
        assert_eq!(first["data"]["header"]["packet_type"], "initial");
        // The server's first Initial is opened before its connection exists (the accept slot).
        let frames = first["data"]["frames"].as_array().expect("frames");
        assert!(
            frames.iter().any(|f| f["frame_type"] == "crypto"),
            "{first}"
        );
        if role == "client" {
            // The body and HTTP/3's framing and control streams.
            assert!(stream_bytes >= 100_000, "{stream_bytes}");
        }
    }
}
