//! End-to-end runs of `quiclab reproduce` on a tiny slice of seed 003 (one experiment, one
//! repetition, 100 kB downloads), so a debug build finishes in seconds.

mod common;
use common::{quiclab, text, Scratch};
use std::process::Output;

/// The tiny slice: Bernoulli loss only, one repetition, 100 kB instead of 8.9 MB.
const TINY: [&str; 10] = [
    "reproduce",
    "seed003",
    "--only",
    "bernoulli",
    "--reps",
    "1",
    "--set",
    "flow.size=100kB",
    "--jobs",
    "2",
];

fn run_tiny(s: &Scratch) -> Output {
    let mut args = TINY.to_vec();
    args.extend(["--out", "out"]);
    let o = quiclab(&args, &s.0);
    assert!(
        o.status.success(),
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        text(&o.stdout),
        text(&o.stderr)
    );
    o
}

#[test]
fn writes_markdown_and_csv_with_a_row_per_loss_rate_and_protocol() {
    let s = Scratch::new("tiny");
    let o = run_tiny(&s);
    let out = s.0.join("out");
    let md = std::fs::read_to_string(out.join("table.md")).expect("table.md written");
    let csv = std::fs::read_to_string(out.join("table.csv")).expect("table.csv written");

    // The Markdown is printed as well as written.
    assert!(text(&o.stdout).contains(&md), "stdout lacks the table");
    let protocols = ["quic-1rtt", "quic-0rtt", "tcp-tls1.3", "tcp-tls1.2"];
    let losses = ["2%", "5%", "10%", "15%", "20%"];
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with("experiment,parameter,x,protocol,runs,n,download_mean_s,"));
    assert_eq!(lines.len(), 1 + protocols.len() * losses.len(), "{csv}");
    for p in protocols {
        for x in losses {
            let prefix = format!("bernoulli,link.down.loss,{x},{p},1,");
            assert!(
                lines.iter().any(|l| l.starts_with(&prefix)),
                "no row {prefix} in\n{csv}"
            );
            // n/N: of the one run attempted, one or none completed.
            let md_row = format!("| bernoulli | link.down.loss | {x} | {p} | ");
            let done = md.contains(&format!("{md_row}1/1 |"));
            assert!(
                done || md.contains(&format!("{md_row}0/1 |")),
                "no row {md_row}n/1 in\n{md}"
            );
            // A run that did not complete is named under the table, not silently left out.
            let warned = format!("bernoulli link.down.loss={x} {p}: 0 of 1 runs completed");
            assert_eq!(!done, md.contains(&warned), "{warned}?\n{md}");
        }
    }
    // At 2% loss every variant finishes 100 kB and has a handshake time.
    for p in protocols {
        let prefix = format!("bernoulli,link.down.loss,2%,{p},1,1,");
        let row = lines
            .iter()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("{p} did not complete at 2%:\n{csv}"));
        let cells: Vec<&str> = row.split(',').collect();
        let download: f64 = cells[6].parse().expect("a download time");
        let handshake: f64 = cells[9].parse().expect("a handshake time");
        assert!(
            download > 0.0 && handshake > 0.0 && handshake < download,
            "{row}"
        );
    }

    // A second run with the same --out resumes: nothing re-runs and the table is the same.
    let again = run_tiny(&s);
    let err = text(&again.stderr);
    assert!(
        err.contains("resuming: 20 of 20 runs already done"),
        "{err}"
    );
    let csv2 = std::fs::read_to_string(out.join("table.csv")).expect("table.csv rewritten");
    assert_eq!(csv, csv2);
}

/// Regression: `reproduce` prints the scenario's warnings as `sim` does (a bare probability of
/// 5% or more is probably a percentage).
#[test]
fn scenario_warnings_are_printed() {
    let s = Scratch::new("warnings");
    let o = quiclab(
        &[
            "reproduce",
            "seed003",
            "--only",
            "bernoulli",
            "--reps",
            "1",
            "--set",
            "flow.size=10kB",
            "--set",
            "link.up.loss=0.05",
            "--jobs",
            "2",
            "--out",
            "out",
        ],
        &s.0,
    );
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.lines()
            .any(|l| l.starts_with("warning: --set link.up.loss=0.05: ") && l.contains('%')),
        "{err}"
    );
}

#[test]
fn unknown_study_exits_2_naming_the_allowed_ones() {
    let s = Scratch::new("unknown");
    let o = quiclab(&["reproduce", "seed999"], &s.0);
    assert_eq!(o.status.code(), Some(2), "stderr: {}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.contains("seed999") && err.contains("seed003"), "{err}");
}

#[test]
fn unknown_experiment_exits_2_naming_the_allowed_ones() {
    let s = Scratch::new("only");
    let o = quiclab(&["reproduce", "seed003", "--only", "nope"], &s.0);
    assert_eq!(o.status.code(), Some(2), "stderr: {}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.contains("bernoulli") && err.contains("shared"), "{err}");
}

/// Runs `quiclab reproduce` with `args` into `out` under the scratch dir, expecting success.
fn run_ok(s: &Scratch, args: &[&str]) -> (String, String) {
    let mut all = args.to_vec();
    all.extend(["--out", "out", "--jobs", "2"]);
    let o = quiclab(&all, &s.0);
    assert!(
        o.status.success(),
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        text(&o.stdout),
        text(&o.stderr)
    );
    let md = std::fs::read_to_string(s.0.join("out/table.md")).expect("table.md written");
    let csv = std::fs::read_to_string(s.0.join("out/table.csv")).expect("table.csv written");
    (md, csv)
}

#[test]
fn seed001_fig7_tabulates_every_ack_ratio_on_both_stacks_with_relative_differences() {
    let s = Scratch::new("seed001");
    // One repetition, 2 s runs at 1% loss instead of 20 s at 0.1%: a debug build stays quick.
    let (md, csv) = run_ok(
        &s,
        &[
            "reproduce",
            "seed001",
            "--only",
            "fig7",
            "--reps",
            "1",
            "--set",
            "run.duration=2s",
            "--set",
            "run.measure_from=500ms",
            "--set",
            "link.up.loss=1%",
        ],
    );
    for p in [
        "model 1:1",
        "model 1:2",
        "model 1:10",
        "model 1:2 + I-bit",
        "model 1:10 + I-bit",
        "quinn 1:1",
        "quinn 1:2",
        "quinn 1:10",
    ] {
        let row = format!("| 1ms | {p} | 1/1 | ");
        assert!(md.contains(&row), "no row {row} in\n{md}");
        assert!(
            csv.contains(&format!(
                "fig7,link.delay,25ms,{p},1,throughput (Mbit/s),1,"
            )),
            "{csv}"
        );
    }
    assert!(md.contains("| x | model 1:2 vs model 1:1 |"), "{md}");
    assert!(md.contains("| mean over x |"), "{md}");
    // The I-bit column is filled for the model and empty for quinn, which has no I-bit.
    let ibit = |p: &str| {
        csv.lines()
            .find(|l| l.starts_with(&format!("fig7,link.delay,1ms,{p},1,I-bit packets,")))
            .map(|l| l.split(',').nth(7).unwrap_or("").to_string())
    };
    assert!(ibit("model 1:10 + I-bit").is_some_and(|v| v.parse::<f64>().is_ok_and(|n| n > 0.0)));
    assert_eq!(ibit("quinn 1:10").as_deref(), Some(""));
    // Fig. 7 redrawn as the paper draws it: relative throughput against the RTT (twice the
    // swept one-way delay), one line per comparison, first in the report.
    let fig = std::fs::read_to_string(s.0.join("out/figures/study-fig7-relative.svg"))
        .expect("the study's Fig. 7");
    for want in [
        "RTT (twice link.delay)",
        "model 1:10 vs model 1:1",
        "quinn 1:2 vs quinn 1:1",
    ] {
        assert!(fig.contains(want), "{want} missing");
    }
    let report = std::fs::read_to_string(s.0.join("out/report.html")).expect("report");
    let first = report.find("data-figure=").expect("a figure");
    assert!(report[first..].starts_with("data-figure=\"study-fig7-relative\""));
}

#[test]
fn seed000_window_sweep_compares_the_two_credit_policies() {
    let s = Scratch::new("seed000");
    let (md, _) = run_ok(
        &s,
        &[
            "reproduce",
            "seed000",
            "--only",
            "window",
            "--reps",
            "1",
            "--set",
            "run.duration=4s",
            "--set",
            "run.measure_from=1s",
        ],
    );
    for w in ["16KB", "64KB", "1MB"] {
        for p in ["modquic", "quic"] {
            let row = format!("| {w} | {p} | 1/1 | ");
            assert!(md.contains(&row), "no row {row} in\n{md}");
        }
    }
    assert!(md.contains("| x | modquic vs quic |"), "{md}");
}

/// The paper's numbers lead the table and the report, with a verdict per row; the figures the
/// study's file declares are drawn (the credit mechanism from the time series of the 16 KB
/// points, which alone record series).
#[test]
fn seed000_opens_with_the_paper_comparison_and_draws_its_declared_figures() {
    let s = Scratch::new("seed000-paper");
    let (md, _) = run_ok(
        &s,
        &[
            "reproduce",
            "seed000",
            "--only",
            "2mbit",
            "--only",
            "window",
            "--reps",
            "1",
            "--set",
            "run.duration=4s",
            "--set",
            "run.measure_from=1s",
        ],
    );
    let paper = md
        .find("### The paper's numbers beside ours")
        .expect("paper section");
    let first_table = md.find("### 2mbit").expect("2mbit table");
    assert!(paper < first_table, "{md}");
    // Only the 2 Mbit/s rows of the paper (its Table 5) are compared, each with a verdict.
    assert!(
        md.contains("| 2mbit 0% modquic, data rate (Mbit/s) |"),
        "{md}"
    );
    assert!(
        !md.contains("| size "),
        "rows of experiments that did not run: {md}"
    );
    assert!(md.contains("values of experiments not run here"), "{md}");
    let section = &md[paper..first_table];
    let verdicts = ["agrees", "differs", "inconclusive", "not measured"];
    let rows: Vec<&str> = section
        .lines()
        .filter(|l| l.starts_with("| 2mbit"))
        .collect();
    assert_eq!(
        rows.len(),
        18,
        "Table 5: 6 loss rates × 3 protocols\n{section}"
    );
    for r in &rows {
        assert!(
            verdicts
                .iter()
                .any(|v| r.contains(&format!("| {v} | Table"))),
            "{r}"
        );
    }
    let report = std::fs::read_to_string(s.0.join("out/report.html")).expect("report");
    let h2 = report.find("<h2").expect("a section");
    assert!(
        report[h2..].starts_with("<h2 id=\"paper\">"),
        "{}",
        &report[h2..h2 + 80]
    );
    for f in ["fig-window-credit-vs-cwnd", "fig-window-rate-vs-credit"] {
        assert!(s.0.join(format!("out/figures/{f}.svg")).is_file(), "{f}");
        assert!(
            report.contains(&format!("data-figure=\"{f}\"")),
            "{f} not in the report"
        );
    }
    // Series only for the points the series figure draws: 16 KB, both policies, one rep each.
    let mut series: Vec<String> = std::fs::read_dir(s.0.join("out/series"))
        .expect("series dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    series.sort();
    assert_eq!(series.len(), 2, "{series:?}");
}
