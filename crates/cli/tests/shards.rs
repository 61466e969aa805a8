//! `quiclab sim --shard i/n` + `quiclab merge` == a local sweep, byte for byte; the merge's
//! refusals; the command lines of examples/cluster/ run as written.

mod common;
use common::{quiclab, text, Scratch};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const TINY: &str = r#"
[run]
duration = "2s"

[link]
rate = "10Mbit"
delay = "10ms"

[[flow]]
name = "d"
app = "download"
size = "150kB"
"#;

/// 3 points × 2 repetitions: 6 runs, so two shards get 3 each and three shards 2 each.
const SWEEP: [&str; 4] = ["--reps", "2", "--vary", "link.delay=5ms,10ms,20ms"];

/// Every file a finished sweep writes that must not depend on how it was executed.
const FILES: [&str; 7] = [
    "results.jsonl",
    "summary.csv",
    "sweep.json",
    "results.parquet",
    "series.parquet",
    "series/p0-r0.csv",
    "series/p2-r1.csv",
];

fn assert_ok(o: &Output) {
    assert!(
        o.status.success(),
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        text(&o.stdout),
        text(&o.stderr)
    );
}

/// `quiclab sim tiny.toml <SWEEP> <extra>` as a command, not yet started.
fn sim(s: &Scratch, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_quiclab"));
    c.arg("sim")
        .arg("tiny.toml")
        .args(SWEEP)
        .args(extra)
        .current_dir(&s.0);
    c
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn same_as_local(local: &Path, merged: &Path) {
    for f in FILES {
        assert!(
            read(&local.join(f)) == read(&merged.join(f)),
            "{f} differs between {} and {}",
            local.display(),
            merged.display()
        );
    }
    assert!(
        !merged.join("shard.json").exists(),
        "the merged sweep is whole"
    );
}

#[test]
fn two_shards_in_parallel_then_merge_equal_the_local_sweep() {
    let s = Scratch::new("shards");
    s.file("tiny.toml", TINY);
    assert_ok(
        &sim(&s, &["--out", "local", "-j", "2"])
            .output()
            .expect("local"),
    );
    let shards: Vec<_> = (0..2)
        .map(|i| {
            sim(
                &s,
                &[
                    "--shard",
                    &format!("{i}/2"),
                    "--out",
                    &format!("shard{i}"),
                    "-j",
                    "1",
                ],
            )
            .spawn()
            .expect("start a shard")
        })
        .collect();
    for child in shards {
        assert_ok(&child.wait_with_output().expect("shard ends"));
    }
    let record: serde_json::Value =
        serde_json::from_slice(&read(&s.path("shard1/shard.json"))).expect("shard.json");
    assert_eq!(
        record,
        serde_json::json!({"shard": 1, "shards": 2, "reps": 2, "runs": 6})
    );
    let lines = String::from_utf8(read(&s.path("shard1/results.jsonl"))).expect("utf-8");
    let ids: Vec<String> = lines
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("json")["id"].to_string())
        .collect();
    assert_eq!(ids, ["\"p0-r1\"", "\"p1-r1\"", "\"p2-r1\""], "runs 1, 3, 5");

    // The shards in either order.
    let o = quiclab(&["merge", "merged", "shard1", "shard0"], &s.0);
    assert_ok(&o);
    same_as_local(&s.path("local"), &s.path("merged"));
    assert!(text(&o.stdout).contains("goodput"), "{}", text(&o.stdout));

    // Merging again into the same directory is refused: it holds results.
    let o = quiclab(&["merge", "merged", "shard0", "shard1"], &s.0);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("already holds results"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn the_merge_refuses_shards_that_do_not_make_one_sweep() {
    let s = Scratch::new("merge-refusals");
    s.file("tiny.toml", TINY);
    for i in 0..3 {
        assert_ok(
            &sim(
                &s,
                &["--shard", &format!("{i}/3"), "--out", &format!("s{i}")],
            )
            .output()
            .expect("shard"),
        );
    }
    // A shard of another sweep (another seed) with the same shard layout.
    assert_ok(
        &sim(&s, &["--seed", "9", "--shard", "2/3", "--out", "other"])
            .output()
            .expect("other"),
    );
    let refused = |args: &[&str], says: &str| {
        let o = quiclab(args, &s.0);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains(says),
            "{args:?}: {}",
            text(&o.stderr)
        );
    };
    refused(&["merge", "m", "s0", "s1"], "shard 2/3 missing");
    refused(&["merge", "m", "s0", "s1", "s1"], "are the same directory");
    refused(&["merge", "m", "s0", "s1", "other"], "different sweeps");
    refused(
        &["merge", "m", "s0", "s1", "tiny.toml"],
        "not a shard's directory",
    );
    // An unfinished shard: a line removed, as if the job was killed before that run ended.
    let path = s.path("s1/results.jsonl");
    let text_of = String::from_utf8(read(&path)).expect("utf-8");
    let first: String = text_of.lines().take(1).map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, first).expect("truncate");
    refused(
        &["merge", "m", "s0", "s1", "s2"],
        "lacks 1 of its runs (p2-r0)",
    );
    assert!(
        !s.path("m").join("results.jsonl").exists(),
        "nothing written"
    );
    // Resuming the shard completes it; then the merge equals a local sweep.
    assert_ok(
        &sim(&s, &["--shard", "1/3", "--out", "s1", "--resume"])
            .output()
            .expect("resume"),
    );
    assert_ok(&quiclab(&["merge", "m", "s0", "s1", "s2"], &s.0));
    assert_ok(&sim(&s, &["--out", "local"]).output().expect("local"));
    same_as_local(&s.path("local"), &s.path("m"));
    // A shard directory keeps its shard.
    let o = sim(&s, &["--shard", "0/3", "--out", "s1", "--resume"])
        .output()
        .expect("run");
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("holds shard 1/3"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn bad_shard_values_are_refused() {
    let s = Scratch::new("bad-shard");
    s.file("tiny.toml", TINY);
    for (args, says) in [
        (&["--shard", "2/2", "--out", "x"][..], "INDEX/COUNT"),
        (&["--shard", "1", "--out", "x"][..], "INDEX/COUNT"),
        (&["--shard", "0/2"][..], "--out"),
    ] {
        let o = sim(&s, args).output().expect("run");
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(
            text(&o.stderr).contains(says),
            "{args:?}: {}",
            text(&o.stderr)
        );
    }
}

/// examples/cluster/ beside the workspace.
fn cluster_example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/cluster")
        .join(name)
}

/// A PATH whose first entry holds the binary under test, for scripts that call `quiclab`.
fn path_with_quiclab() -> String {
    let bin = Path::new(env!("CARGO_BIN_EXE_quiclab"));
    let dir = bin.parent().expect("binary directory");
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

#[test]
fn the_cluster_examples_command_lines_run_and_merge() {
    let s = Scratch::new("cluster");
    s.file("tiny.toml", TINY);
    assert_ok(&sim(&s, &["--out", "local"]).output().expect("local"));
    let flags = SWEEP.join(" ");

    // Slurm: the array task script as written, for both indices, then the merge script.
    let results = s.path("slurm");
    for i in 0..2 {
        let o = Command::new("bash")
            .arg(cluster_example("slurm-shards.sh"))
            .env("PATH", path_with_quiclab())
            .env("SLURM_ARRAY_TASK_ID", i.to_string())
            .env("SLURM_ARRAY_TASK_COUNT", "2")
            .env("SCENARIO", s.path("tiny.toml"))
            .env("RESULTS", &results)
            .env("QUICLAB_FLAGS", &flags)
            .current_dir(&s.0)
            .output()
            .expect("run the Slurm script");
        assert_ok(&o);
    }
    let o = Command::new("bash")
        .arg(cluster_example("slurm-merge.sh"))
        .env("PATH", path_with_quiclab())
        .env("SHARDS", "2")
        .env("RESULTS", &results)
        .current_dir(&s.0)
        .output()
        .expect("run the merge script");
    assert_ok(&o);
    same_as_local(&s.path("local"), &results.join("merged"));

    // Kubernetes: the container's shell script from the manifest, with the manifest's env
    // (SHARDS from it; the scenario flags added the way an image's entry point would).
    let manifest =
        String::from_utf8(read(&cluster_example("k8s-indexed-job.yaml"))).expect("utf-8");
    let script = block_after(&manifest, "- |");
    assert!(
        script.contains("--shard \"$JOB_COMPLETION_INDEX/$SHARDS\""),
        "{script}"
    );
    let shards: String = manifest
        .lines()
        .skip_while(|l| !l.contains("name: SHARDS"))
        .nth(1)
        .and_then(|l| l.split('"').nth(1))
        .expect("SHARDS in the manifest")
        .to_string();
    assert_eq!(shards, "4");
    let script = script.replace("\"$SCENARIO\"", &format!("\"$SCENARIO\" {flags}"));
    let results = s.path("k8s");
    for i in 0..4 {
        let o = Command::new("sh")
            .arg("-c")
            .arg(&script)
            .env("PATH", path_with_quiclab())
            .env("JOB_COMPLETION_INDEX", i.to_string())
            .env("SHARDS", &shards)
            .env("SCENARIO", s.path("tiny.toml"))
            .env("RESULTS", &results)
            .current_dir(&s.0)
            .output()
            .expect("run the container's script");
        assert_ok(&o);
    }
    let dirs: Vec<String> = (0..4)
        .map(|i| results.join(format!("shard-{i}")).display().to_string())
        .collect();
    let mut args = vec![
        "merge".to_string(),
        results.join("merged").display().to_string(),
    ];
    args.extend(dirs);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_ok(&quiclab(&args, &s.0));
    same_as_local(&s.path("local"), &results.join("merged"));
}

/// The YAML block scalar that follows the line ending in `marker`, dedented.
fn block_after(yaml: &str, marker: &str) -> String {
    let mut lines = yaml.lines().skip_while(|l| !l.trim_end().ends_with(marker));
    let head = lines.next().expect("the block's marker");
    let outer = head.len() - head.trim_start().len();
    let body: Vec<&str> = lines
        .take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() > outer)
        .collect();
    let indent = body
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    body.iter()
        .map(|l| l.get(indent..).unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}
