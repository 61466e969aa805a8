//! End-to-end tests of `quiclab interop` with real third-party peers.
//!
//! The peers must be installed with `scripts/install-peers.sh` (no argument = what these tests
//! need). A missing peer makes the test FAIL with that instruction — never skip.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn quiclab() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_quiclab"));
    cmd.current_dir(repo());
    cmd
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A fresh private output directory (random name, mode 0700), removed when dropped (even when
/// the test fails).
struct TempDir(fsutil::PrivateDir);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        TempDir(fsutil::PrivateDir::new(&format!("quiclab-interop-test-{tag}-")).unwrap())
    }

    fn path(&self) -> &Path {
        self.0.path()
    }
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs `quiclab interop --json ARGS` and returns the parsed matrix.
fn interop_json(args: &[&str], out: &Path) -> (serde_json::Value, Output) {
    let o = quiclab()
        .arg("interop")
        .args(args)
        .args(["--json", "--out"])
        .arg(out)
        .output()
        .unwrap();
    let j: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("no JSON matrix ({e}):\n{}", text(&o)));
    (j, o)
}

/// Asserts that the pair passed; a peer that is not installed fails with the fix.
fn assert_passed(j: &serde_json::Value, client: &str, server: &str, out: &Path) {
    let pair = j["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["client"] == client && p["server"] == server)
        .unwrap_or_else(|| panic!("no pair {client} × {server} in {j}"));
    match pair["status"].as_str() {
        Some("passed") => {
            let s = pair["mean_seconds"].as_f64().unwrap();
            assert!(s > 0.0 && s < 60.0, "{client} × {server}: {s} s");
            for run in pair["runs"].as_array().unwrap() {
                assert_eq!(run["ok"], true, "{run}");
            }
        }
        Some("not_installed") => panic!(
            "{client} × {server}: peer not installed ({}); run `sudo scripts/install-peers.sh`",
            pair["reason"]
        ),
        _ => panic!(
            "{client} × {server} did not pass: {pair}\nlogs in {} (kept: see below)\n{}",
            out.display(),
            pair_logs(out, client, server)
        ),
    }
}

/// The logs of a failed pair, for the test output (the directory itself is removed).
fn pair_logs(out: &Path, client: &str, server: &str) -> String {
    let dir = out.join(format!("{client}--{server}/rep1"));
    let mut s = String::new();
    for role in ["server", "client"] {
        for f in ["command.txt", "stdout.log", "stderr.log"] {
            let t = std::fs::read_to_string(dir.join(role).join(f)).unwrap_or_default();
            let tail: Vec<&str> = t.lines().rev().take(15).collect();
            s += &format!(
                "--- {role}/{f}\n{}\n",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            );
        }
    }
    s
}

#[test]
fn list_shows_every_repository_peer() {
    let o = quiclab().args(["interop", "--list"]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    for name in [
        "quic-go",
        "aioquic",
        "ngtcp2",
        "chromium",
        "chromium-h2",
        "nginx",
        "quiclab",
    ] {
        assert!(
            out.lines().any(|l| l.starts_with(name)),
            "{name} missing:\n{out}"
        );
    }
}

#[test]
fn bad_peer_file_is_reported_with_its_position() {
    let dir = TempDir::new("bad");
    let bad = "name = \"broken\"\n[client]\nprotocols = [\"h3\"]\ncommand = [\"x\", \"{urll}\"]\nbytes = { json = \"bytes\" }\n";
    std::fs::write(dir.path().join("broken.toml"), bad).unwrap();
    let o = quiclab()
        .args(["interop", "--list", "--peers"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("broken.toml:4:18: unknown placeholder {urll}"),
        "{err}"
    );
}

#[test]
fn unknown_peer_name_is_an_error() {
    let o = quiclab()
        .args(["interop", "--loopback", "--clients", "netscape"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no peer named \"netscape\""), "{err}");
}

/// quic-go ↔ quic-go, quic-go and aioquic clients → quiclab serve, quiclab get → quic-go, over
/// loopback (no namespaces): checks the runner and peer files quickly.
#[test]
fn loopback_quic_go_aioquic_and_quiclab_interoperate() {
    let out = TempDir::new("loopback");
    let (j, o) = interop_json(
        &[
            "--loopback",
            "--clients",
            "quic-go,aioquic,quiclab",
            "--servers",
            "quic-go,quiclab",
            "--size",
            "300kB",
            "--timeout",
            "20s",
            "--base-port",
            "24500",
        ],
        out.path(),
    );
    for (client, server) in [
        ("quic-go", "quic-go"),
        ("quic-go", "quiclab"),
        ("aioquic", "quiclab"),
        ("quiclab", "quic-go"),
        ("quiclab", "quiclab"),
    ] {
        assert_passed(&j, client, server, out.path());
    }
    assert!(o.status.success(), "{}", text(&o));
}

/// Through the emulator (namespaces + userspace link at 10 Mbit/s, 15 ms each way): a 1 MB
/// download cannot take less than its serialization time, which proves the link is in the path.
#[test]
fn emulated_link_shapes_third_party_downloads() {
    let out = TempDir::new("emu");
    let (j, o) = interop_json(
        &[
            "--clients",
            "quic-go,ngtcp2",
            "--servers",
            "aioquic,quiclab",
            "--size",
            "1MB",
            "--rate",
            "10Mbit",
            "--delay",
            "15ms",
            "--timeout",
            "20s",
            "--base-port",
            "24600",
        ],
        out.path(),
    );
    for (client, server) in [
        ("quic-go", "aioquic"),
        ("ngtcp2", "quiclab"),
        ("quic-go", "quiclab"),
    ] {
        assert_passed(&j, client, server, out.path());
    }
    for pair in j["pairs"].as_array().unwrap() {
        let s = pair["mean_seconds"].as_f64().unwrap_or(0.0);
        // 8 Mbit of body at 10 Mbit/s is 0.8 s before any header or handshake.
        assert!(s > 0.8, "{pair}: faster than the link allows");
    }
    assert!(o.status.success(), "{}", text(&o));
}

/// A client that cannot reach the server fails its cell and the command exits 1.
#[test]
fn failing_pair_fails_the_command() {
    let out = TempDir::new("fail");
    // A server peer that starts but never listens: the client cannot connect.
    let peers = TempDir::new("fail-peers");
    std::fs::write(
        peers.path().join("mute.toml"),
        "name = \"mute\"\n[server]\nprotocols = [\"h3\"]\ncommand = [\"sleep\", \"30\"]\nready = { delay_ms = 100 }\n",
    )
    .unwrap();
    std::fs::copy(
        repo().join("peers/quic-go.toml"),
        peers.path().join("quic-go.toml"),
    )
    .unwrap();
    let (j, o) = interop_json(
        &[
            "--loopback",
            "--peers",
            peers.path().to_str().unwrap(),
            "--clients",
            "quic-go",
            "--servers",
            "mute",
            "--size",
            "1kB",
            "--timeout",
            "3s",
            "--base-port",
            "24700",
        ],
        out.path(),
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let pair = &j["pairs"][0];
    assert_eq!(pair["status"], "failed", "{pair}");
}

/// quic-go's client against `quiclab serve --early-response` (0.5-RTT), the pair that stalled:
/// quic-go's ClientHello spans two Initials and the server opened its HTTP/3 streams before the
/// second arrived (see crates/endpoints/tests/early_response.rs). 13 of 20 loopback downloads
/// passed before the fix, so eight repetitions all pass by chance with probability ≈ 3%.
#[test]
fn loopback_quic_go_client_gets_early_responses_without_stalling() {
    let out = TempDir::new("early");
    let peers = TempDir::new("early-peers");
    std::fs::copy(
        repo().join("peers/quic-go.toml"),
        peers.path().join("quic-go.toml"),
    )
    .unwrap();
    let ours = std::fs::read_to_string(repo().join("peers/quiclab.toml")).unwrap();
    let early = ours
        .replace("name = \"quiclab\"", "name = \"quiclab-early\"")
        .replace(
            "\"--ready-file\", \"{out_dir}/ready\"]",
            "\"--ready-file\", \"{out_dir}/ready\", \"--early-response\"]",
        );
    assert!(
        early.contains("quiclab-early") && early.contains("--early-response"),
        "peers/quiclab.toml changed shape; update this test:\n{ours}"
    );
    std::fs::write(peers.path().join("quiclab-early.toml"), early).unwrap();
    let (j, o) = interop_json(
        &[
            "--loopback",
            "--peers",
            peers.path().to_str().unwrap(),
            "--clients",
            "quic-go",
            "--servers",
            "quiclab-early",
            "--size",
            "300kB",
            "--repetitions",
            "8",
            "--timeout",
            "10s",
            "--base-port",
            "24800",
        ],
        out.path(),
    );
    assert_passed(&j, "quic-go", "quiclab-early", out.path());
    let runs = j["pairs"][0]["runs"].as_array().unwrap().len();
    assert_eq!(runs, 8, "{j}");
    assert!(o.status.success(), "{}", text(&o));
}
