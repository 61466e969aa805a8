//! `quiclab sim` with the QUIC research model (`stack = "quic-model"`): results do not depend on
//! the thread count, the model's figures reach `summary.csv` by path, and bad model keys exit 2
//! with their position and the allowed values.

mod common;
use common::{quiclab, text, Scratch};
use std::process::Output;

/// A model download beside quinn's, both small (< 1 s simulated), with loss so the seed matters.
const MODEL: &str = r#"
[run]
duration = "3s"

[link]
rate = "10Mbit"
delay = "10ms"
loss = "0.5%"

[[flow]]
name = "model"
stack = "quic-model"
app = "download"
size = "200kB"
receiver_ack_ratio = 1
pacing = false

[[flow]]
name = "quinn"
app = "download"
size = "200kB"
"#;

fn assert_ok(o: &Output) {
    assert!(
        o.status.success(),
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        text(&o.stdout),
        text(&o.stderr)
    );
}

fn sweep(s: &Scratch, out: &str, jobs: &str) -> Output {
    quiclab(
        &[
            "sim",
            "model.toml",
            "--reps",
            "2",
            "--vary",
            "flow.0.ack_delay=5ms,25ms",
            "--out",
            out,
            "--jobs",
            jobs,
        ],
        &s.0,
    )
}

#[test]
fn model_results_do_not_depend_on_thread_count_and_reach_the_summary() {
    let s = Scratch::new("model-jobs");
    s.file("model.toml", MODEL);
    assert_ok(&sweep(&s, "one", "1"));
    assert_ok(&sweep(&s, "two", "2"));
    let a = std::fs::read(s.path("one/results.jsonl")).expect("results");
    let b = std::fs::read(s.path("two/results.jsonl")).expect("results");
    assert_eq!(text(&a).lines().count(), 4);
    assert_eq!(a, b);
    let sa = std::fs::read(s.path("one/summary.csv")).expect("summary");
    assert_eq!(
        sa,
        std::fs::read(s.path("two/summary.csv")).expect("summary")
    );
    // The model's figures are metrics like any other; quinn's flow has none.
    let summary = text(&sa);
    for metric in [
        "flows.0.model.ack_frames_received",
        "flows.0.model.achieved_ack_ratio",
        "flows.0.model.flow_control_limited_s",
        "flows.0.model.cwnd_limited_s",
    ] {
        assert!(
            summary.contains(metric),
            "{metric} missing from summary.csv"
        );
    }
    assert!(
        !summary.contains("flows.1.model."),
        "quinn has no model figures"
    );
    // `compare` reaches them by the same path.
    let o = quiclab(
        &[
            "compare",
            "one",
            "two",
            "--metric",
            "flows.0.model.achieved_ack_ratio",
            "--json",
        ],
        &s.0,
    );
    assert_ok(&o);
    let comparison: serde_json::Value = serde_json::from_str(text(&o.stdout).trim()).expect("json");
    let rows = &comparison["rows"];
    // One row per sweep point and source (compare does not pool the two ack_delay points).
    assert_eq!(rows.as_array().map(Vec::len), Some(4), "{rows}");
    assert_eq!(rows[0]["point"], "flow.0.ack_delay=5ms");
    assert_eq!(rows[0]["metric"], "flows.0.model.achieved_ack_ratio");
    // Two sources: the second against the first at each point, as independent samples.
    assert_eq!(comparison["unpaired"].as_array().map(Vec::len), Some(2));
    assert_eq!(comparison["paired"], serde_json::json!([]));
    for line in text(&a).lines() {
        let run: serde_json::Value = serde_json::from_str(line).expect("a run");
        assert_eq!(run["flows"][0]["stack"], "quic-model");
        assert_eq!(run["flows"][0]["bytes_delivered"], 200_000);
        assert!(run["flows"][0]["model"].is_object());
        assert!(run["flows"][1].get("model").is_none());
    }
}

#[test]
fn the_example_runs() {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let o = quiclab(
        &[
            "sim",
            "scenarios/examples/quic-model.toml",
            "--set",
            "run.duration=2s",
            "--json",
        ],
        &repo,
    );
    assert_ok(&o);
    let run: serde_json::Value = serde_json::from_str(text(&o.stdout).trim()).expect("json");
    let f = &run["flows"][0];
    assert_eq!(f["stack"], "quic-model");
    // INET's configuration acknowledges every ack-eliciting packet.
    let ratio = f["model"]["achieved_ack_ratio"].as_f64().expect("a ratio");
    assert!((0.9..=1.1).contains(&ratio), "{ratio}");
}

#[test]
fn bad_model_keys_exit_2_with_position_and_allowed_values() {
    let s = Scratch::new("model-bad");
    s.file(
        "bad.toml",
        "[[flow]]\nstack = \"quic-model\"\nfc_update = \"sometimes\"\n",
    );
    let o = quiclab(&["sim", "bad.toml"], &s.0);
    assert_eq!(o.status.code(), Some(2), "stderr: {}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.contains("bad.toml:3:13:"), "{err}");
    assert!(err.contains("threshold, every-ack"), "{err}");
    s.file("quinn.toml", "[[flow]]\nibit = true\n");
    let o = quiclab(&["sim", "quinn.toml"], &s.0);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains("quinn.toml:2:1:")
            && err.contains("flow.0.ibit applies only to flows with stack = \"quic-model\""),
        "{err}"
    );
    s.file(
        "cc.toml",
        "[[flow]]\nstack = \"quic-model\"\ncc = \"quinn-cubic\"\n",
    );
    let o = quiclab(&["sim", "cc.toml"], &s.0);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains("newreno, newreno-approx, cubic, none"),
        "{err}"
    );
}
