//! `flow.crypto = "none"`: the null AEAD keeps every packet's size and every
//! decryption failure, so a run's results are byte-identical to the real cipher's.

mod common;
use common::{quiclab, text, Scratch};

/// A lossy, corrupting path with two flows, one of them a 0-RTT download over two
/// connections: every key kind (Initial, Handshake, 0-RTT, 1-RTT) and the integrity check
/// (flipped bits that reach the endpoint) take part.
const LOSSY: &str = r#"
[run]
duration = "6s"
seed = 3

[link]
rate = "20Mbit"
delay = "15ms"
queue = "1bdp"
loss = "1%"
corrupt = "0.5%"
reorder = "1%"

[[flow]]
name = "bulk"
app = "bulk"
direction = "down"
cc = "cubic"
stop = "4s"

[[flow]]
name = "get"
app = "download"
size = "1MB"
connections = 2
zero_rtt = true
start = "0.5s"
"#;

/// The same flows on a path that loses, duplicates and reorders packets but never alters one:
/// the null AEAD's tag is then fixed bytes instead of a checksum (`NullTag::Fixed`).
const CLEAN: &str = r#"
[run]
duration = "4s"
seed = 5

[link]
rate = "20Mbit"
delay = "15ms"
queue = "1bdp"
loss = "1%"
duplicate = "1%"
reorder = "1%"

[[flow]]
name = "bulk"
app = "bulk"
direction = "down"
cc = "cubic"
stop = "3s"

[[flow]]
name = "get"
app = "download"
size = "500KB"
connections = 2
zero_rtt = true
start = "0.5s"
"#;

fn results(s: &Scratch, out: &str, extra: &[&str]) -> Vec<u8> {
    results_of(s, "lossy.toml", out, extra)
}

fn results_of(s: &Scratch, file: &str, out: &str, extra: &[&str]) -> Vec<u8> {
    let mut args = vec!["sim", file, "--reps", "2", "--out", out];
    args.extend(extra);
    let o = quiclab(&args, &s.0);
    assert!(
        o.status.success(),
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        text(&o.stdout),
        text(&o.stderr)
    );
    std::fs::read(s.path(out).join("results.jsonl")).expect("results.jsonl")
}

#[test]
fn null_cipher_results_are_byte_identical_to_tls() {
    let s = Scratch::new("null-crypto");
    s.file("lossy.toml", LOSSY);
    let tls = results(&s, "tls", &[]);
    let none = results(&s, "none", &["--set", "flow.crypto=none"]);
    assert_identical_with_losses_and_0rtt(&tls, &none);
}

#[test]
fn null_cipher_with_a_fixed_tag_is_byte_identical_to_tls() {
    let s = Scratch::new("null-crypto-clean");
    s.file("clean.toml", CLEAN);
    let tls = results_of(&s, "clean.toml", "tls", &[]);
    let none = results_of(&s, "clean.toml", "none", &["--set", "flow.crypto=none"]);
    assert_identical_with_losses_and_0rtt(&tls, &none);
}

/// The two runs' results are byte-identical, and the run exercised what could differ: losses
/// (and, on the lossy path, corrupted packets reaching quinn) and 0-RTT.
fn assert_identical_with_losses_and_0rtt(tls: &[u8], none: &[u8]) {
    let t = text(tls);
    assert!(
        t.contains("\"packets_lost\":") && !t.contains("\"packets_lost\":0,"),
        "{t}"
    );
    assert!(t.contains("\"zero_rtt_accepted\":true"), "{t}");
    assert!(
        tls == none,
        "results differ:\n--- tls\n{t}\n--- none\n{}",
        text(none)
    );
}
