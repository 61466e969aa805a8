//! `quiclab get --json` against `quiclab serve`, both as real processes on loopback.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{quiclab, text, Scratch};

/// A running `quiclab serve`, stopped with SIGTERM (and killed if need be) on drop.
struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn start(s: &Scratch, extra: &[&str]) -> Self {
        let ready = s.path("ready");
        let mut args = vec![
            "serve".to_string(),
            "--listen".into(),
            "127.0.0.1:0".into(),
            "--quiet".into(),
            "--ready-file".into(),
            ready.display().to_string(),
        ];
        args.extend(extra.iter().map(|a| a.to_string()));
        let child = Command::new(env!("CARGO_BIN_EXE_quiclab"))
            .args(&args)
            .current_dir(&s.0)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn quiclab serve");
        let mut server = Server {
            child,
            addr: String::new(),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(a) = std::fs::read_to_string(&ready) {
                server.addr = a.trim().to_string();
                return server;
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("quiclab serve exited early: {status}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("quiclab serve did not become ready");
    }

    /// SIGTERM, then the exit status (killed after 10 s).
    fn stop(&mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        self.child.wait().expect("wait for serve")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn get_json(s: &Scratch, args: &[&str]) -> (serde_json::Value, Option<i32>) {
    let mut all = vec!["get", "--json", "--timeout", "20s"];
    all.extend(args);
    let out = quiclab(&all, &s.0);
    let v = serde_json::from_str(text(&out.stdout).trim()).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON object ({e}):\n{}\nstderr:\n{}",
            text(&out.stdout),
            text(&out.stderr)
        )
    });
    (v, out.status.code())
}

#[test]
fn get_json_reports_every_version_against_serve() {
    let s = Scratch::new("endpoints");
    let stats = s.path("server-stats.jsonl");
    let mut server = Server::start(&s, &["--stats-file", stats.to_str().expect("utf-8 path")]);
    for http in ["1.1", "2", "3"] {
        let url = format!("https://{}/1000000", server.addr);
        let (v, code) = get_json(&s, &["--http", http, "--streams", "4", &url]);
        assert_eq!(code, Some(0), "{http}: {v}");
        assert_eq!(v["ok"], true, "{v}");
        assert_eq!(v["http"], http);
        assert_eq!(v["status"], 200);
        assert_eq!(v["bytes"], 1_000_000, "{v}");
        let hs = v["handshake_s"].as_f64().expect("handshake_s");
        let total = v["total_s"].as_f64().expect("total_s");
        assert!(hs > 0.0 && hs <= total, "{v}");
        assert!(v["goodput_bps"].as_f64().expect("goodput") > 0.0);
        assert_eq!(v["connections"].as_array().map(Vec::len), Some(1), "{v}");
        if http == "3" {
            assert!(
                v["quic_stats"]["udp_rx_datagrams"].as_u64() > Some(600),
                "{v}"
            );
            assert!(v["tcp_info"].is_null());
        } else {
            // HTTP/1.1 spreads the 4 streams over 4 connections; the snapshot is of one of them.
            let min = if http == "1.1" { 250_000 } else { 1_000_000 };
            assert!(v["tcp_info"]["bytes_received"].as_u64() >= Some(min), "{v}");
            assert!(v["tcp_info"]["congestion"].is_string());
        }
    }
    // Two connections in a row; the second resumes TLS.
    let url = format!("https://{}/20000", server.addr);
    let (v, code) = get_json(&s, &["--http", "2", "--connections", "2", &url]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["bytes"], 40_000);
    assert_eq!(v["connections"][1]["tls_resumed"], true, "{v}");
    // Upload, on every version; over HTTP/2 also more than the server's 16 MB stream window,
    // so the client must wait for window updates (flow control on the h2 send side).
    let url = format!("https://{}/upload", server.addr);
    for (http, size, bytes) in [
        ("1.1", "200k", 200_000),
        ("2", "200k", 200_000),
        ("2", "20M", 20_000_000),
        ("3", "200k", 200_000),
    ] {
        let (v, code) = get_json(&s, &["--http", http, "--upload", size, &url]);
        assert_eq!(code, Some(0), "{http} {size}: {v}");
        assert_eq!(v["bytes_sent"], bytes, "{http} {size}: {v}");
        assert_eq!(v["status"], 200, "{http} {size}: {v}");
    }
    // A missing resource fails with exit code 1 and a JSON error.
    let url = format!("https://{}/nothing-here", server.addr);
    let (v, code) = get_json(&s, &["--http", "2", &url]);
    assert_eq!(code, Some(1));
    assert_eq!(v["ok"], false);
    assert_eq!(v["status"], 404);

    let status = server.stop();
    assert!(status.success(), "serve exits 0 on SIGTERM: {status}");
    let lines = std::fs::read_to_string(&stats).expect("server stats file");
    assert!(
        lines.lines().count() >= 6,
        "one line per connection:\n{lines}"
    );
    assert!(lines.contains("\"http\":\"3\""), "{lines}");
}

#[test]
fn get_fails_cleanly_without_a_server() {
    let s = Scratch::new("endpoints-noserver");
    // Bind then drop a listener so the port is very likely closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let url = format!("https://127.0.0.1:{port}/10");
    let (v, code) = get_json(&s, &["--http", "1.1", &url]);
    assert_eq!(code, Some(1));
    assert_eq!(v["ok"], false);
    assert!(
        v["error"].as_str().is_some_and(|e| e.contains("connect")),
        "{v}"
    );
}
