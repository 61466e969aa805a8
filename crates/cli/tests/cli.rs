//! End-to-end runs of the `quiclab` binary on tiny scenarios (a 200 kB download, < 1 s simulated).

mod common;
use common::{quiclab, text, Scratch};
use std::process::Output;

const TINY: &str = r#"
[run]
duration = "2s"

[link]
rate = "10Mbit"
delay = "10ms"

[[flow]]
name = "d"
app = "download"
size = "200kB"
"#;

/// The sweep used by the results-directory tests: 2 points × 2 repetitions.
const SWEEP: [&str; 4] = ["--reps", "2", "--vary", "link.delay=5ms,20ms"];

/// `quiclab sim tiny.toml <SWEEP> --out <out> <extra>`, asserting success.
fn sweep(s: &Scratch, out: &str, extra: &[&str]) -> Output {
    let mut args = vec!["sim", "tiny.toml"];
    args.extend(SWEEP);
    args.extend(["--out", out]);
    args.extend(extra);
    quiclab(&args, &s.0)
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

#[test]
fn single_run_prints_a_summary() {
    let s = Scratch::new("single");
    s.file("tiny.toml", TINY);
    let o = quiclab(&["sim", "tiny.toml"], &s.0);
    assert_ok(&o);
    let out = text(&o.stdout);
    assert!(out.contains("flow d (quic, download)"), "{out}");
    assert!(out.contains("delivered 200.0 kB"), "{out}");
    assert!(
        out.contains("goodput") && out.contains("bottleneck_down: utilisation"),
        "{out}"
    );
    // A single run without --out leaves no results directory behind.
    assert!(!s.path("results").exists());
}

#[test]
fn json_output_is_one_parseable_object() {
    let s = Scratch::new("json");
    s.file("tiny.toml", TINY);
    let o = quiclab(&["sim", "tiny.toml", "--json", "--seed", "7"], &s.0);
    assert_ok(&o);
    let out = text(&o.stdout);
    assert_eq!(out.lines().count(), 1, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
    assert_eq!(v["id"], "p0-r0");
    assert_eq!(v["flows"][0]["bytes_delivered"], 200_000);
}

#[test]
fn bad_scenario_exits_2_with_position() {
    let s = Scratch::new("bad");
    s.file(
        "bad.toml",
        "[link]\nrate = \"10Mbit\"\ndelay = \"10 parsecs\"\n",
    );
    let o = quiclab(&["sim", "bad.toml"], &s.0);
    assert_eq!(o.status.code(), Some(2), "stderr: {}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.contains("bad.toml:3:9:"), "{err}");
}

#[test]
fn bad_override_exits_2() {
    let s = Scratch::new("badset");
    s.file("tiny.toml", TINY);
    let o = quiclab(&["sim", "tiny.toml", "--set", "link.rat=5Mbit"], &s.0);
    assert_eq!(o.status.code(), Some(2), "stderr: {}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("--set link.rat=5Mbit"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn sweep_writes_results_series_and_summary() {
    let s = Scratch::new("sweep");
    s.file("tiny.toml", TINY);
    let o = sweep(&s, "out", &["--jobs", "2"]);
    assert_ok(&o);
    let results = std::fs::read_to_string(s.path("out/results.jsonl")).expect("results.jsonl");
    let ids: Vec<String> = results
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).expect("JSON line")["id"]
                .as_str()
                .expect("id")
                .to_string()
        })
        .collect();
    assert_eq!(ids, ["p0-r0", "p0-r1", "p1-r0", "p1-r1"]);
    for id in &ids {
        assert!(
            s.path(&format!("out/series/{id}.csv")).exists(),
            "series of {id}"
        );
    }

    let summary = std::fs::read_to_string(s.path("out/summary.csv")).expect("summary.csv");
    let mut lines = summary.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("no column {name}"))
    };
    let (metric, n, axis) = (col("metric"), col("n"), col("link.delay"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let goodput: Vec<&Vec<&str>> = rows
        .iter()
        .filter(|r| r[metric] == "flows.0.goodput_bps")
        .collect();
    assert_eq!(goodput.len(), 2);
    assert!(goodput.iter().all(|r| r[n] == "2"));
    assert_eq!((goodput[0][axis], goodput[1][axis]), ("5ms", "20ms"));
    // Identifiers are not metrics.
    assert!(rows
        .iter()
        .all(|r| !["seed", "point", "rep", "events"].contains(&r[metric])));

    let table = text(&o.stdout);
    assert!(
        table.contains("flows.0.goodput_bps") && table.contains('±'),
        "{table}"
    );
}

#[test]
fn results_do_not_depend_on_thread_count() {
    let s = Scratch::new("jobs");
    s.file("tiny.toml", TINY);
    assert_ok(&sweep(&s, "one", &["--jobs", "1"]));
    assert_ok(&sweep(&s, "two", &["--jobs", "2"]));
    let a = std::fs::read(s.path("one/results.jsonl")).expect("results");
    let b = std::fs::read(s.path("two/results.jsonl")).expect("results");
    assert!(!a.is_empty());
    assert_eq!(a, b);
    let a = std::fs::read(s.path("one/summary.csv")).expect("summary");
    let b = std::fs::read(s.path("two/summary.csv")).expect("summary");
    assert_eq!(a, b);
}

/// quiche flows (in virtual time through the binary's link-time interposition) too: a quiche
/// sweep run on one thread and on two gives the same bytes.
#[test]
fn quiche_results_do_not_depend_on_thread_count() {
    let s = Scratch::new("jobs-quiche");
    s.file("tiny.toml", &format!("{TINY}stack = \"quiche\"\n"));
    assert_ok(&sweep(&s, "one", &["--jobs", "1"]));
    assert_ok(&sweep(&s, "two", &["--jobs", "2"]));
    let a = std::fs::read_to_string(s.path("one/results.jsonl")).expect("results");
    let b = std::fs::read_to_string(s.path("two/results.jsonl")).expect("results");
    assert_eq!(a.lines().count(), 4);
    assert!(a.lines().all(|l| l.contains("\"stack\":\"quiche\"")), "{a}");
    assert!(a.contains("\"bytes_delivered\":200000"), "{a}");
    assert_eq!(a, b);
}

#[test]
fn resume_reruns_only_the_missing_run() {
    let s = Scratch::new("resume");
    s.file("tiny.toml", TINY);
    assert_ok(&sweep(&s, "out", &[]));
    let path = s.path("out/results.jsonl");
    let full = std::fs::read_to_string(&path).expect("results");
    let lines: Vec<&str> = full.lines().collect();
    std::fs::write(&path, format!("{}\n", lines[..lines.len() - 1].join("\n"))).expect("truncate");

    let o = sweep(&s, "out", &["--resume"]);
    assert_ok(&o);
    let err = text(&o.stderr);
    assert!(err.contains("3 of 4 runs already done"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).expect("results"), full);
}

#[test]
fn existing_results_are_not_overwritten() {
    let s = Scratch::new("refuse");
    s.file("tiny.toml", TINY);
    assert_ok(&sweep(&s, "out", &[]));
    let before = std::fs::read(s.path("out/results.jsonl")).expect("results");
    let o = sweep(&s, "out", &[]);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(
        err.contains("already holds results") && err.contains("--resume"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(s.path("out/results.jsonl")).expect("results"),
        before
    );
}

#[test]
fn resume_refuses_a_changed_scenario() {
    let s = Scratch::new("changed");
    s.file("tiny.toml", TINY);
    assert_ok(&sweep(&s, "out", &[]));
    let mut args = vec!["sim", "tiny.toml"];
    args.extend(SWEEP);
    args.extend(["--set", "link.rate=5Mbit", "--out", "out", "--resume"]);
    let o = quiclab(&args, &s.0);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("different scenario"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn sweep_without_out_defaults_to_results_name() {
    let s = Scratch::new("default");
    s.file("tiny.toml", TINY);
    let o = quiclab(&["sim", "tiny.toml", "--reps", "2", "--no-series"], &s.0);
    assert_ok(&o);
    let results =
        std::fs::read_to_string(s.path("results/tiny/results.jsonl")).expect("default results dir");
    assert_eq!(results.lines().count(), 2);
    assert!(!s.path("results/tiny/series").exists());
}

#[test]
fn traces_get_one_file_per_run() {
    let s = Scratch::new("traces");
    s.file("tiny.toml", TINY);
    let o = quiclab(
        &[
            "sim",
            "tiny.toml",
            "--reps",
            "2",
            "--out",
            "out",
            "--pcap",
            "tr/trace.pcap",
            "--qlog",
            "tr/qlog",
        ],
        &s.0,
    );
    assert_ok(&o);
    for id in ["p0-r0", "p0-r1"] {
        assert!(
            s.path(&format!("tr/trace-{id}.pcap")).exists(),
            "pcap of {id}"
        );
        let qlogs = std::fs::read_dir(s.path(&format!("tr/qlog/{id}")))
            .expect("qlog dir")
            .count();
        assert!(qlogs > 0, "qlogs of {id}");
    }
}

#[test]
fn keys_prints_the_reference() {
    let s = Scratch::new("keys");
    let o = quiclab(&["keys"], &s.0);
    assert_ok(&o);
    let out = text(&o.stdout);
    assert!(
        out.contains("link.rate") || out.contains("`rate`"),
        "{}",
        &out[..out.len().min(500)]
    );
}

#[test]
fn a_failed_run_does_not_stop_the_others_and_resume_retries_it() {
    let s = Scratch::new("fail");
    s.file("tiny.toml", TINY);
    // A directory where run p0-r0's pcap file should go makes exactly that run fail.
    std::fs::create_dir_all(s.path("trace-p0-r0.pcap")).expect("blocking dir");
    let o = quiclab(
        &[
            "sim",
            "tiny.toml",
            "--reps",
            "2",
            "--out",
            "out",
            "--pcap",
            "trace.pcap",
        ],
        &s.0,
    );
    assert_eq!(o.status.code(), Some(1), "stderr: {}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.contains("run p0-r0 failed"), "{err}");
    let results = std::fs::read_to_string(s.path("out/results.jsonl")).expect("results");
    assert_eq!(results.lines().count(), 1);
    assert!(results.contains("\"id\":\"p0-r1\""));

    std::fs::remove_dir(s.path("trace-p0-r0.pcap")).expect("unblock");
    let o = quiclab(
        &[
            "sim",
            "tiny.toml",
            "--reps",
            "2",
            "--out",
            "out",
            "--pcap",
            "trace.pcap",
            "--resume",
        ],
        &s.0,
    );
    assert_ok(&o);
    assert!(
        text(&o.stderr).contains("1 of 2 runs already done"),
        "{}",
        text(&o.stderr)
    );
    let results = std::fs::read_to_string(s.path("out/results.jsonl")).expect("results");
    assert_eq!(results.lines().count(), 2);
    assert!(results
        .lines()
        .next()
        .is_some_and(|l| l.contains("\"id\":\"p0-r0\"")));
}

/// Regression: QUIC 1-RTT, QUIC 0-RTT and TCP + TLS 1.3 are variants of one file and land in one
/// results directory; `--set flow.stack=tcp` works on a file that spells out a QUIC key at its
/// default; `--variant` picks a subset.
#[test]
fn a_variant_sweep_with_quic_and_tcp_lands_in_one_results_directory() {
    let s = Scratch::new("variants");
    // link.rtt replaces the file's one-way delay (both at once would be an error).
    let tiny = TINY.replace("delay = \"10ms\"", "rtt = \"20ms\"");
    let file = format!(
        "{tiny}zero_rtt = false\n\n[[variant]]\nname = \"quic-1rtt\"\n\n[[variant]]\nname = \"quic-0rtt\"\nset = {{ \"flow.connections\" = 2, \"flow.zero_rtt\" = true }}\n\n[[variant]]\nname = \"tcp-tls1.3\"\nset = {{ \"flow.stack\" = \"tcp\", \"flow.tls\" = \"1.3\" }}\n"
    );
    s.file("v.toml", &file);
    let o = quiclab(
        &[
            "sim",
            "v.toml",
            "--vary",
            "link.rtt=20ms,60ms",
            "--out",
            "out",
        ],
        &s.0,
    );
    assert_ok(&o);
    let results = std::fs::read_to_string(s.path("out/results.jsonl")).expect("results.jsonl");
    let runs: Vec<serde_json::Value> = results
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(runs.len(), 6);
    let got: Vec<(String, String, String)> = runs
        .iter()
        .map(|r| {
            (
                r["axes"]["variant"]
                    .as_str()
                    .expect("variant axis")
                    .to_string(),
                r["axes"]["link.rtt"]
                    .as_str()
                    .expect("rtt axis")
                    .to_string(),
                r["flows"][0]["stack"].as_str().expect("stack").to_string(),
            )
        })
        .collect();
    let want = [
        ("quic-1rtt", "20ms", "quic"),
        ("quic-1rtt", "60ms", "quic"),
        ("quic-0rtt", "20ms", "quic"),
        ("quic-0rtt", "60ms", "quic"),
        ("tcp-tls1.3", "20ms", "tcp"),
        ("tcp-tls1.3", "60ms", "tcp"),
    ];
    let want: Vec<(String, String, String)> = want
        .iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        .collect();
    assert_eq!(got, want);
    // The 0-RTT variant's second connection really resumed with 0-RTT.
    assert_eq!(
        runs[2]["flows"][0]["connections"].as_array().map(Vec::len),
        Some(2)
    );
    let summary = std::fs::read_to_string(s.path("out/summary.csv")).expect("summary.csv");
    assert!(
        summary.lines().next().expect("header").contains("variant"),
        "{summary}"
    );
    // Each variant against the first, per RTT, beside summary.csv.
    let comparisons =
        std::fs::read_to_string(s.path("out/comparisons.csv")).expect("comparisons.csv");
    let header = comparisons.lines().next().expect("header");
    assert!(
        header.starts_with("link.rtt,metric,variant,baseline,n_pairs,diff,"),
        "{header}"
    );
    assert!(
        comparisons
            .lines()
            .any(|l| l.starts_with("20ms,end_s,tcp-tls1.3,quic-1rtt,1,")),
        "{comparisons}"
    );
    // `compare` of the one directory compares its variants, with the baseline asked for.
    let o = quiclab(
        &["compare", "out", "--baseline", "tcp-tls1.3", "--json"],
        &s.0,
    );
    assert_ok(&o);
    let c: serde_json::Value = serde_json::from_str(text(&o.stdout).trim()).expect("json");
    let paired = c["paired"][0]["rows"].as_array().expect("paired rows");
    // Two other variants × two RTTs, one pair each (one repetition).
    assert_eq!(paired.len(), 4, "{c}");
    assert!(paired
        .iter()
        .all(|r| r["baseline"] == "tcp-tls1.3" && r["n_pairs"] == 1));
    let o = quiclab(&["compare", "out", "--baseline", "nope"], &s.0);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("quic-0rtt"), "{}", text(&o.stderr));

    // A subset, and the issue's failing --set.
    let o = quiclab(
        &["sim", "v.toml", "--variant", "tcp-tls1.3", "--json"],
        &s.0,
    );
    assert_ok(&o);
    s.file("quic.toml", &format!("{TINY}zero_rtt = false\n"));
    let o = quiclab(&["sim", "quic.toml", "--set", "flow.stack=tcp"], &s.0);
    assert_ok(&o);
    let o = quiclab(&["sim", "v.toml", "--variant", "tcp"], &s.0);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains("--variant tcp: unknown value \"tcp\""),
        "{err}"
    );
}

#[test]
fn until_ci_adds_repetitions_says_why_and_resumes_without_rerunning() {
    let s = Scratch::new("until-ci");
    s.file("tiny.toml", TINY);
    // Without loss the runs differ little (clear after the first batch); 3% loss varies more
    // than ±1% allows within 9 repetitions.
    let args = [
        "sim",
        "tiny.toml",
        "--reps",
        "3",
        "--vary",
        "link.loss=0%,3%",
        "--out",
        "out",
        "--until-ci",
        "1%",
        "--max-reps",
        "9",
        "--batch",
        "3",
    ];
    let o = quiclab(&args, &s.0);
    assert_ok(&o);
    let err = text(&o.stderr);
    assert!(
        err.contains("for flows.0.completion_s (batches of 3, at most 9 per point)"),
        "{err}"
    );
    assert!(
        err.contains("link.loss=0%: 3 reps, target reached (flows.0.completion_s ±0."),
        "{err}"
    );
    assert!(
        err.contains("link.loss=3%: 9 reps, max reps (flows.0.completion_s ±"),
        "{err}"
    );
    let stopping = std::fs::read_to_string(s.path("out/stopping.csv")).expect("stopping.csv");
    assert!(stopping.contains("3%,1,9,max reps,"), "{stopping}");
    let results = std::fs::read_to_string(s.path("out/results.jsonl")).expect("results");
    assert_eq!(results.lines().count(), 3 + 9);
    // The same command again (with --resume: the directory holds results) runs nothing new and
    // comes to the same decisions.
    let mut again = args.to_vec();
    again.push("--resume");
    let o = quiclab(&again, &s.0);
    assert_ok(&o);
    assert!(
        text(&o.stderr).contains("link.loss=3%: 9 reps, max reps"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(s.path("out/results.jsonl")).unwrap(),
        results
    );
}

#[test]
fn adaptive_limits_without_a_target_are_refused() {
    let s = Scratch::new("until-bad");
    s.file("tiny.toml", TINY);
    let o = quiclab(&["sim", "tiny.toml", "--max-reps", "9"], &s.0);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("--max-reps has no effect without --until-ci or --until-resolved"),
        "{}",
        text(&o.stderr)
    );
    let o = quiclab(&["sim", "tiny.toml", "--until-ci", "0"], &s.0);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("--until-ci 0: "),
        "{}",
        text(&o.stderr)
    );
}

/// Harm (Ware et al.): a bulk flow alone (its competitor's count set to 0 in one variant) and
/// beside a second bulk flow; the competitor takes a large, significant part of its goodput.
#[test]
fn compare_harm_pairs_the_run_without_the_competitor_with_the_run_with_it() {
    let s = Scratch::new("harm");
    s.file(
        "h.toml",
        "[run]\nduration = \"6s\"\nmeasure_from = \"2s\"\nreps = 3\n\n[link]\nrate = \"10Mbit\"\nrtt = \"40ms\"\n\n\
         [[flow]]\nname = \"victim\"\napp = \"bulk\"\nstack = \"tcp\"\ncc = \"cubic\"\n\n\
         [[flow]]\nname = \"competitor\"\napp = \"bulk\"\nstack = \"tcp\"\ncc = \"cubic\"\n\n\
         [[variant]]\nname = \"alone\"\nset = { \"flow.1.count\" = 0 }\n\n[[variant]]\nname = \"with\"\n",
    );
    assert_ok(&quiclab(&["sim", "h.toml", "--out", "out"], &s.0));
    let o = quiclab(
        &[
            "compare",
            "out",
            "--metric",
            "flows.0.window_goodput_bps",
            "--baseline",
            "alone",
            "--harm",
        ],
        &s.0,
    );
    assert_ok(&o);
    let out = text(&o.stdout);
    let row = out
        .lines()
        .find(|l| l.contains("with vs alone"))
        .unwrap_or_else(|| panic!("no harm row:\n{out}"));
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    // | point | metric | better | variant | pairs | harm | CI |
    assert_eq!(cells[3], "more", "{row}");
    assert_eq!(cells[5], "3", "{row}");
    let harm: f64 = cells[6].parse().expect("harm value");
    assert!((0.25..0.75).contains(&harm), "{row}");
}
