//! End-to-end `quiclab load` against `quiclab serve` on an ephemeral loopback port: the attack →
//! report / encode / plot pipeline over HTTP/1.1, HTTP/2 and HTTP/3, a small sweep, and input
//! errors. Traffic stays on 127.0.0.1 and every attack is bounded (a few hundred requests).

mod common;
use common::{quiclab, text, Scratch};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `quiclab serve` on 127.0.0.1 with an ephemeral port, killed when dropped (even on failure).
struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn start(dir: &Path) -> Self {
        let ready = dir.join("ready");
        let child = Command::new(env!("CARGO_BIN_EXE_quiclab"))
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--quiet",
                "--ready-file",
            ])
            .arg(&ready)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start quiclab serve");
        let mut server = Server {
            child,
            addr: String::new(),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(addr) = std::fs::read_to_string(&ready) {
                if !addr.trim().is_empty() {
                    server.addr = addr.trim().to_string();
                    return server;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("quiclab serve did not become ready");
    }

    fn url(&self, path: &str) -> String {
        format!("https://{}/{path}", self.addr)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn assert_ok(o: &Output) {
    assert!(
        o.status.success(),
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        text(&o.stdout),
        text(&o.stderr)
    );
}

fn json_report(file: &str, cwd: &Path) -> serde_json::Value {
    let o = quiclab(&["load", "report", "--type", "json", file], cwd);
    assert_ok(&o);
    serde_json::from_slice(&o.stdout).expect("report --type json is JSON")
}

/// The report of a 200/s, 2 s attack on an 11,000-byte resource: every request scheduled, answered
/// in full, at the requested rate (a generous 2% bound: a schedule check, not a timing benchmark).
fn assert_clean_200_per_s_for_2_s(r: &serde_json::Value, label: &str) {
    assert_eq!(r["requests"], 400, "{label}: {r}");
    assert_eq!(r["success_ratio"], 1.0, "{label}: {r}");
    let achieved = r["rate"]["achieved"].as_f64().unwrap();
    assert!(
        (achieved / 200.0 - 1.0).abs() < 0.02,
        "{label}: achieved {achieved}"
    );
    assert_eq!(r["throughput"]["bytes_in"], 400 * 11_000, "{label}");
}

#[test]
fn attack_then_report_encode_and_plot_for_every_http_version() {
    let s = Scratch::new("load-pipeline");
    let server = Server::start(&s.0);
    let url = server.url("11000");
    for v in ["1.1", "2", "3"] {
        let file = format!("h{v}.jsonl");
        let o = quiclab(
            &[
                "load",
                "attack",
                "--http",
                v,
                "--rate",
                "200/s",
                "--duration",
                "2s",
                "--name",
                &format!("h{v}"),
                "--output",
                &file,
                &url,
            ],
            &s.0,
        );
        assert_ok(&o);
        let r = json_report(&file, &s.0);
        assert_clean_200_per_s_for_2_s(&r, &format!("h{v}"));
        assert_eq!(r["status_codes"]["200"], 400, "h{v}");
    }

    // encode: JSON → CSV → JSON is lossless.
    let o = quiclab(
        &["load", "encode", "--to", "csv", "-o", "h2.csv", "h2.jsonl"],
        &s.0,
    );
    assert_ok(&o);
    let o = quiclab(&["load", "encode", "--to", "json", "h2.csv"], &s.0);
    assert_ok(&o);
    let original = std::fs::read(s.path("h2.jsonl")).unwrap();
    assert_eq!(text(&o.stdout), text(&original));

    // The text and HDR reports read CSV as well.
    let o = quiclab(&["load", "report", "h2.csv"], &s.0);
    assert_ok(&o);
    assert!(text(&o.stdout).contains("Success        [ratio]                             100.00%"));
    let o = quiclab(&["load", "report", "--type", "hdr", "h3.jsonl"], &s.0);
    assert_ok(&o);
    assert!(text(&o.stdout).contains("1/(1-Percentile)"));

    // plot: one series per file, as SVG and as HTML.
    let o = quiclab(
        &[
            "load",
            "plot",
            "h1.1.jsonl",
            "h2.jsonl",
            "h3.jsonl",
            "-o",
            "plot.html",
        ],
        &s.0,
    );
    assert_ok(&o);
    let html = std::fs::read_to_string(s.path("plot.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("<svg"));
    let o = quiclab(&["load", "plot", "h1.1.jsonl", "h3.jsonl"], &s.0);
    assert_ok(&o);
    let svg = text(&o.stdout);
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    // One legend entry per input file, with its request count.
    let legend_entries = svg
        .split("</text>")
        .filter(|t| t.trim_end().ends_with(" requests"))
        .count();
    assert_eq!(legend_entries, 2, "{svg}");
    // At one column's print size: inches declared, the title left to the paper's caption.
    let o = quiclab(
        &[
            "load",
            "plot",
            "--size",
            "one-column",
            "h1.1.jsonl",
            "h3.jsonl",
        ],
        &s.0,
    );
    assert_ok(&o);
    let svg = text(&o.stdout);
    assert!(svg.starts_with("<svg width=\"3.5in\""), "{svg}");
    assert!(!svg.contains("Latency over time"), "no title in print");
}

#[test]
fn sweep_writes_results_and_tables() {
    let s = Scratch::new("load-sweep");
    let server = Server::start(&s.0);
    let o = quiclab(
        &[
            "load",
            "sweep",
            "--rates",
            "50,100",
            "--http",
            "2,3",
            "--duration",
            "1s",
            "--pause",
            "0s",
            "--out",
            "sweep",
            &server.url("11000"),
        ],
        &s.0,
    );
    assert_ok(&o);
    let csv = std::fs::read_to_string(s.path("sweep/table.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 5, "{csv}");
    let success_column = rows[0].split(',').position(|c| c == "success_pct").unwrap();
    for (row, prefix) in rows[1..]
        .iter()
        .zip(["50,2,50,", "50,3,50,", "100,2,100,", "100,3,100,"])
    {
        assert!(row.starts_with(prefix), "{row}");
        let success_pct = row.split(',').nth(success_column).unwrap();
        assert_eq!(success_pct, "100.00", "not all successful: {row}");
    }
    for f in [
        "h2-r50.jsonl",
        "h3-r50.jsonl",
        "h2-r100.jsonl",
        "h3-r100.jsonl",
        "table.md",
    ] {
        assert!(s.path("sweep").join(f).exists(), "{f} missing");
    }
    assert!(text(&o.stdout).contains("| rate (req/s) | HTTP |"));
    // The paper's Fig. 1: mean latency against the offered rate, a line per HTTP version.
    let svg = std::fs::read_to_string(s.path("sweep/latency-vs-rate.svg")).expect("figure");
    for label in ["HTTP/2", "HTTP/3", "n/N = 50–100/50–100", "offered rate"] {
        assert!(svg.contains(label), "{label} not in the figure");
    }

    // A paper's values beside the sweep's table (experiment `sweep` = the directory) and a
    // hand-made table (`single.csv`); an experiment with neither is named and left out.
    s.file(
        "paper.toml",
        r#"citation = "A paper"
tolerance = 0.1
tolerance_why = "test"
[[value]]
source = "Table 2"
experiment = "sweep"
x = "50"
protocol = "2"
metric = "success %"
value = 100.0
[[value]]
source = "Table 2"
experiment = "sweep"
x = "100"
protocol = "3"
metric = "mean latency (ms)"
value = 10000.0
[[value]]
source = "Table 1"
experiment = "single"
x = "quiclab"
protocol = "3"
metric = "packets (one request)"
value = 20.0
[[value]]
source = "Table 9"
experiment = "absent"
x = "1"
protocol = "3"
metric = "success %"
value = 1.0
"#,
    );
    s.file(
        "single.csv",
        "server,HTTP,packets (one request)\nquiclab,3,26\n",
    );
    let o = quiclab(&["load", "paper", "paper.toml", "."], &s.0);
    assert_ok(&o);
    let md = std::fs::read_to_string(s.path("paper.md")).expect("paper.md");
    let row = |start: &str| {
        md.lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no row {start} in {md}"))
            .to_string()
    };
    assert!(
        row("| sweep 50 2, success %").contains("| agrees |"),
        "{md}"
    );
    assert!(
        row("| sweep 100 3, mean latency (ms)").contains("| differs |"),
        "{md}"
    );
    let single = row("| single quiclab 3, packets (one request)");
    assert!(
        single.contains("+30.0%") && single.contains("| differs |"),
        "{single}"
    );
    assert!(md.contains("3 values compared"), "{md}");
    assert!(
        text(&o.stderr).contains("experiment absent: neither"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn bad_input_is_rejected_with_its_location() {
    let s = Scratch::new("load-bad");
    s.file("targets.txt", "GET https://127.0.0.1:1/1\nnot a header\n");
    let o = quiclab(
        &[
            "load",
            "attack",
            "--targets",
            "targets.txt",
            "--duration",
            "1s",
        ],
        &s.0,
    );
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("targets.txt:2:"),
        "{}",
        text(&o.stderr)
    );

    let o = quiclab(&["load", "attack", "https://127.0.0.1:1/1"], &s.0);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("unbounded"), "{}", text(&o.stderr));

    let o = quiclab(
        &[
            "load",
            "attack",
            "--rate",
            "fast",
            "--duration",
            "1s",
            "https://127.0.0.1:1/",
        ],
        &s.0,
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
}

#[test]
fn rates_and_request_counts_beyond_the_bounds_are_refused() {
    let s = Scratch::new("load-bounds");
    // Rates the scheduler cannot honour (the second used to schedule every request at 0 ns).
    for rate in ["1000000000/s", "18446744073709551616/s"] {
        let o = quiclab(
            &[
                "load",
                "attack",
                "--rate",
                rate,
                "--duration",
                "1s",
                "https://127.0.0.1:1/",
            ],
            &s.0,
        );
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{rate}: {err}");
        assert!(err.contains("--rate"), "{rate}: {err}");
        assert!(err.contains("allowed 0 to 100000/s"), "{rate}: {err}");
    }
    // A valid rate for too long: more requests than one attack may record.
    let o = quiclab(
        &[
            "load",
            "attack",
            "--rate",
            "100000/s",
            "--duration",
            "2min",
            "https://127.0.0.1:1/",
        ],
        &s.0,
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("at most 10000000 per attack"), "{err}");
    // A summary-only attack keeps constant memory: its bound is an hour at the rate cap (the
    // schedule's tests check that 10 minutes at the cap, 60 M requests, is accepted), and a
    // results file named next to it brings the records bound back.
    for (extra, bound) in [
        (&["--summary", "s.json"][..], "at most 360000000 per attack"),
        (
            &["--summary", "s.json", "--output", "r.jsonl"][..],
            "at most 10000000 per attack",
        ),
    ] {
        let duration = if extra.len() == 2 { "61min" } else { "2min" };
        let mut args = vec![
            "load",
            "attack",
            "--rate",
            "100000/s",
            "--duration",
            duration,
        ];
        args.extend_from_slice(extra);
        args.push("https://127.0.0.1:1/");
        let o = quiclab(&args, &s.0);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(bound), "{extra:?}: {err}");
    }
    let o = quiclab(
        &[
            "load",
            "sweep",
            "--rates",
            "10,100000",
            "--duration",
            "2min",
            "--out",
            "sweep",
            "https://127.0.0.1:1/",
        ],
        &s.0,
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--rates 100000/s"), "{err}");
    // Refused before any attack ran: no results at all.
    let written = std::fs::read_dir(s.path("sweep"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(
        written, 0,
        "a sweep point ran before the bad one was refused"
    );
}

/// nginx (Debian's, installed by `scripts/install-peers.sh`) serving `docroot/` over HTTP/1.1 and
/// HTTP/2 with TLS on an ephemeral loopback port; one process (`master_process off`), killed
/// when dropped.
struct Nginx {
    child: Child,
    port: u16,
}

impl Nginx {
    fn start(dir: &Path) -> Self {
        let certs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../certs");
        let docroot = dir.join("docroot");
        std::fs::create_dir_all(&docroot).unwrap();
        std::fs::write(docroot.join("11000"), vec![b'x'; 11_000]).unwrap();
        // Ask the kernel for a free port, then hand it to nginx (a tiny race, loopback only).
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let d = dir.display();
        let conf = format!(
            "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\n\
             error_log {d}/error.log warn;\nevents {{ worker_connections 1024; }}\n\
             http {{\n access_log off;\n client_body_temp_path {d}/tmp-body;\n\
             proxy_temp_path {d}/tmp-proxy;\n fastcgi_temp_path {d}/tmp-fastcgi;\n\
             uwsgi_temp_path {d}/tmp-uwsgi;\n scgi_temp_path {d}/tmp-scgi;\n\
             server {{\n  listen 127.0.0.1:{port} ssl http2;\n\
             ssl_certificate {chain};\n  ssl_certificate_key {key};\n\
             ssl_protocols TLSv1.3 TLSv1.2;\n  keepalive_requests 100000;\n\
             root {root};\n }}\n}}\n",
            chain = certs.join("server-chain.pem").display(),
            key = certs.join("server.key").display(),
            root = docroot.display(),
        );
        std::fs::write(dir.join("nginx.conf"), conf).unwrap();
        let child = Command::new("nginx")
            .arg("-p")
            .arg(dir)
            .arg("-c")
            .arg(dir.join("nginx.conf"))
            .arg("-e")
            .arg(dir.join("error.log"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nginx must be installed (scripts/install-peers.sh)");
        let nginx = Nginx { child, port };
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return nginx;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let log = std::fs::read_to_string(dir.join("error.log")).unwrap_or_default();
        panic!("nginx did not start listening on {port}:\n{log}");
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn attack_against_nginx_over_http1_and_http2() {
    let s = Scratch::new("load-nginx");
    let nginx = Nginx::start(&s.0);
    let url = format!("https://127.0.0.1:{}/11000", nginx.port);
    for v in ["1.1", "2"] {
        let file = format!("nginx-h{v}.jsonl");
        let o = quiclab(
            &[
                "load",
                "attack",
                "--http",
                v,
                "--rate",
                "200/s",
                "--duration",
                "2s",
                "--output",
                &file,
                &url,
            ],
            &s.0,
        );
        assert_ok(&o);
        let r = json_report(&file, &s.0);
        assert_clean_200_per_s_for_2_s(&r, &format!("h{v}"));
    }
}

/// quic-go's HTTP/3 server (peers/quic-go, built by `scripts/install-peers.sh`) on an ephemeral
/// loopback UDP port; killed when dropped.
struct QuicGo {
    child: Child,
    port: u16,
}

impl QuicGo {
    fn start(dir: &Path) -> Self {
        let certs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../certs");
        let peers = std::env::var("QUICLAB_PEERS").unwrap_or_else(|_| "/opt/quiclab-peers".into());
        let port = std::net::UdpSocket::bind("127.0.0.1:0")
            .and_then(|s| s.local_addr())
            .expect("free port")
            .port();
        let log = std::fs::File::create(dir.join("quic-go.log")).unwrap();
        let child = Command::new(Path::new(&peers).join("bin/quicgo-server"))
            .arg("-listen")
            .arg(format!("127.0.0.1:{port}"))
            .arg("-cert")
            .arg(certs.join("server-chain.pem"))
            .arg("-key")
            .arg(certs.join("server.key"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("quic-go's server must be installed (sudo bash scripts/install-peers.sh)");
        // quic-go binds before it logs anything; give it a moment rather than probe a UDP port.
        std::thread::sleep(Duration::from_millis(500));
        QuicGo { child, port }
    }
}

impl Drop for QuicGo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// HTTP/3 against a third-party server. This also pins the client's first-packet size: quic-go
/// drops Initial datagrams larger than 1452 bytes, so a load tester starting at a 1500-byte MTU
/// would time out on every request here.
#[test]
fn attack_against_quic_go_over_http3() {
    let s = Scratch::new("load-quic-go");
    let server = QuicGo::start(&s.0);
    let url = format!("https://localhost:{}/11000", server.port);
    let o = quiclab(
        &[
            "load",
            "attack",
            "--http",
            "3",
            "--rate",
            "200/s",
            "--duration",
            "2s",
            "--output",
            "quic-go.jsonl",
            &url,
        ],
        &s.0,
    );
    assert_ok(&o);
    let r = json_report("quic-go.jsonl", &s.0);
    assert_clean_200_per_s_for_2_s(&r, "quic-go h3");
    assert!(
        r["phases_ms"]["quic_handshake"]["n"].as_u64().unwrap_or(0) >= 1,
        "{r}"
    );
}
