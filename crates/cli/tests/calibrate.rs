//! End-to-end test of `quiclab calibrate --quick` (root: the emulator half creates namespaces):
//! both halves run, the table is produced, and its ratios are the ones the stored results give.
//! Whether cells fall inside ±10% is what the full run reports, not what this test checks.

mod common;

use std::path::{Path, PathBuf};

use common::{quiclab, text, Scratch};
use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Completion times stored in one cell's results directory.
fn completions(dir: &Path) -> Vec<f64> {
    let text = std::fs::read_to_string(dir.join("results.jsonl"))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .filter_map(|r| r.pointer("/flows/0/completion_s").and_then(Value::as_f64))
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    assert!(n > 0, "no completions");
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn first_config(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("results.jsonl")).expect("results");
    let first: Value = serde_json::from_str(text.lines().next().expect("a run")).expect("JSON");
    first
        .pointer("/flows/0/config")
        .cloned()
        .unwrap_or(Value::Null)
}

#[test]
fn quick_calibration_tabulates_both_engines_from_stored_results() {
    let scratch = Scratch::new("calibrate");
    let out = scratch.path("out");
    let md = scratch.path("calibration.md");
    let scenarios = repo().join("scenarios/calibration");
    let args = [
        "calibrate",
        "--quick",
        "--engine",
        "both",
        "--out",
        out.to_str().expect("utf-8"),
        "--markdown",
        md.to_str().expect("utf-8"),
        "--scenarios",
        scenarios.to_str().expect("utf-8"),
    ];
    let run = quiclab(&args, &scratch.0);
    let stdout = text(&run.stdout);
    assert!(run.status.success(), "{stdout}\n{}", text(&run.stderr));
    let doc = std::fs::read_to_string(&md).expect("the Markdown table");
    assert!(
        doc.contains("- **emu**: `quiclab calibrate --quick"),
        "{doc}"
    );
    assert!(doc.contains("kernel "), "{doc}");
    let rows: Vec<Vec<String>> = doc
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| path") && !l.starts_with("| variant"))
        .map(|l| l.split('|').map(|c| c.trim().to_string()).collect())
        .collect();
    let mut checked = 0;
    for (path, label) in [
        ("clean", "clean 10 Mbit/s, 15 ms, 25 pkt"),
        ("bernoulli-2", "2% Bernoulli"),
    ] {
        // Both quick paths run BBR too (studies::calibrate::BBR_PATHS).
        for variant in ["quic-cubic", "tcp-cubic", "tcp-reno", "tcp-bbr"] {
            let sim = median(completions(&out.join("sim").join(path).join(variant)));
            let emu = median(completions(&out.join("emu").join(path).join(variant)));
            let row = rows
                .iter()
                .find(|r| {
                    r.get(1).map(String::as_str) == Some(label)
                        && r.get(2).map(String::as_str) == Some(variant)
                })
                .unwrap_or_else(|| panic!("no row for {label} / {variant}:\n{doc}"));
            assert_eq!(
                row[6],
                format!("{:.2}", emu / sim),
                "{label} / {variant}: {row:?}"
            );
            // Then goodputs and their ratio, queue delays and theirs, and the flag.
            assert!(
                matches!(row[13].as_str(), "ok" | "**outside ±10%**"),
                "{row:?}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 8);
    // Both engines record the configuration the TCP knobs define; the emulator's is read back
    // from the kernel, so the buffer limits match the simulator's instead of the host's.
    let sim_cfg = first_config(&out.join("sim/clean/tcp-cubic"));
    let emu_cfg = first_config(&out.join("emu/clean/tcp-cubic"));
    for key in [
        "tcp_rmem",
        "tcp_wmem",
        "initcwnd_packets",
        "initrwnd_packets",
        "rto_min_ms",
        "rack",
        "sack",
        "timestamps",
        "cc",
    ] {
        assert!(sim_cfg.get(key).is_some(), "sim {key}: {sim_cfg}");
        assert_eq!(
            sim_cfg.get(key),
            emu_cfg.get(key),
            "{key}: sim {sim_cfg} emu {emu_cfg}"
        );
    }
    assert_eq!(
        first_config(&out.join("emu/clean/quic-cubic")).get("cc"),
        Some(&Value::from("cubic"))
    );
    // The load of the machine is recorded per emulator cell.
    let load: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("emu/clean/tcp-reno/load.json")).expect("load.json"),
    )
    .expect("JSON");
    assert!(
        load.get("cpu_busy").and_then(Value::as_f64).is_some(),
        "{load}"
    );

    // Rendering again runs nothing and gives the same document: it comes from the store.
    let args_none = [
        "calibrate",
        "--quick",
        "--engine",
        "none",
        "--out",
        out.to_str().expect("utf-8"),
        "--markdown",
        md.to_str().expect("utf-8"),
        "--scenarios",
        scenarios.to_str().expect("utf-8"),
    ];
    let again = quiclab(&args_none, &scratch.0);
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert_eq!(std::fs::read_to_string(&md).expect("re-rendered"), doc);
}
