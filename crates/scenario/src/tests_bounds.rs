//! Hostile or mistaken input is refused with a positioned error: MTUs the stacks
//! cannot carry, names that are paths, keys a model would ignore, rate traces that are not
//! files or are too large, sampling that would never finish.

use std::path::Path;

use crate::limits::{MAX_RATE_STEPS, MAX_SAMPLES_PER_RUN, MAX_TRACE_BYTES};
use crate::{load, parse_str, LoadedScenario, ScenarioError};

fn parse(text: &str) -> Result<LoadedScenario, ScenarioError> {
    parse_str(text, "t.toml", Path::new("."), &[], &[])
}

fn err(text: &str) -> ScenarioError {
    parse(text).expect_err("should be rejected")
}

/// A fresh private directory (random name, mode 0700), removed on drop.
fn scratch(tag: &str) -> fsutil::PrivateDir {
    fsutil::PrivateDir::new(&format!("scenario-bounds-{tag}-")).expect("create temp dir")
}

#[test]
fn mtu_is_capped_at_what_each_stack_carries() {
    // 16438 made quinn panic (`len < 2^14` in packet.rs); 16411 is the largest MTU whose UDP
    // payload stays below 2^14.
    let e = err("[[flow]]\nmtu = 16438\n");
    assert_eq!((e.line, e.column), (Some(2), Some(7)), "{e}");
    assert!(e.message.contains("not within 1228 and 16411"), "{e}");
    assert!(parse("[[flow]]\nmtu = 16411\n").is_ok());
    assert!(parse("[[flow]]\nstack = \"tcp\"\nmtu = 65535\n").is_ok());
    let e = err("[[flow]]\nstack = \"tcp\"\nmtu = 65536\n");
    assert!(e.message.contains("not within 576 and 65535"), "{e}");
}

#[test]
fn names_are_names_not_paths() {
    for bad in ["/abs/path", "../../../x", "..", "a/b", ".hidden", "-x", ""] {
        let e = err(&format!("[run]\nname = {bad:?}\n"));
        assert_eq!((e.line, e.column), (Some(2), Some(8)), "{bad:?}: {e}");
        assert!(e.message.starts_with("run.name:"), "{e}");
        assert!(e.to_string().contains("allowed: ASCII letters"), "{e}");
    }
    let e = err("[[flow]]\nname = \"../x\"\n");
    assert!(e.message.starts_with("flow.name:"), "{e}");
    let e = err("[[cross]]\nname = \"a/b\"\npattern = \"cbr\"\nrate = \"1Mbit\"\n");
    assert!(e.message.starts_with("cross.name:"), "{e}");
    let e = parse_str(
        "",
        "t.toml",
        Path::new("."),
        &["run.name=/tmp/x".into()],
        &[],
    )
    .expect_err("--set is checked too");
    assert!(
        e.to_string()
            .starts_with("--set run.name=/tmp/x: run.name:"),
        "{e}"
    );
    // A default name comes from a file stem: one component already, but not "." or "..".
    let e = parse_str("", "..", Path::new("."), &[], &[]).expect_err("dot-dot");
    assert!(e.message.contains("set run.name"), "{e}");
    assert_eq!(
        parse("[run]\nname = \"bench-tcp-1gbit\"\n")
            .expect("ok")
            .name,
        "bench-tcp-1gbit"
    );
}

#[test]
fn keys_a_loss_model_ignores_are_errors() {
    let e = err("[link.loss]\nmodel = \"bernoulli\"\np = \"1%\"\ngamma = 0.99\n");
    assert_eq!((e.line, e.column), (Some(4), Some(1)), "{e}");
    assert!(
        e.message
            .contains("link.loss.gamma does not apply to the bernoulli"),
        "{e}"
    );
    assert_eq!(e.allowed, ["model", "p"]);
    let e = err("[link.loss]\np = \"1%\"\nmax_burst = 2\n");
    assert!(e.message.contains("max_burst"), "{e}");
    let e = err("[link.loss]\nmodel = \"periodic\"\np = \"1%\"\nr = 0.5\n");
    assert!(e.message.contains("periodic"), "{e}");
    assert!(parse("[link.loss]\nmodel = \"bounded\"\np = \"1%\"\nmax_burst = 2\n").is_ok());
}

#[test]
fn byte_sizes_are_whole_and_streams_fit_the_size() {
    let e = err("[[flow]]\napp = \"download\"\nsize = \"1.5B\"\n");
    assert_eq!((e.line, e.column), (Some(3), Some(8)), "{e}");
    assert!(e.message.contains("not a whole number of bytes"), "{e}");
    let e = err("[[flow]]\napp = \"download\"\nsize = \"10B\"\nstreams = 1000\n");
    assert_eq!((e.line, e.column), (Some(4), Some(11)), "{e}");
    assert!(e.message.contains("more than the 10 B"), "{e}");
    assert!(e.message.contains("allowed: 1 to 10"), "{e}");
    assert!(parse("[[flow]]\napp = \"download\"\nsize = \"10B\"\nstreams = 10\n").is_ok());
}

#[test]
fn rate_traces_must_be_regular_files_within_the_limits() {
    let tmp = scratch("trace");
    let dir = tmp.path().to_path_buf();
    let text = |file: &str| format!("[link]\nrate_trace = {file:?}\n");
    let e = parse_str(&text("/dev/zero"), "t.toml", &dir, &[], &[]).expect_err("device");
    assert_eq!((e.line, e.column), (Some(2), Some(14)), "{e}");
    assert!(
        e.message.contains("a character device, not a regular file"),
        "{e}"
    );
    // A FIFO without a writer would block a plain open forever.
    let fifo = dir.join("fifo");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(status.success());
    let e = parse_str(&text("fifo"), "t.toml", &dir, &[], &[]).expect_err("fifo");
    assert!(e.message.contains("a FIFO"), "{e}");
    let e = parse_str(&text("."), "t.toml", &dir, &[], &[]).expect_err("dir");
    assert!(e.message.contains("a directory"), "{e}");
    // A symlink to a regular file is a file the user chose: it is read.
    std::fs::write(dir.join("ok.csv"), "0,1Mbit\n1,2Mbit\n").expect("write");
    std::os::unix::fs::symlink(dir.join("ok.csv"), dir.join("link.csv")).expect("link");
    assert!(parse_str(&text("link.csv"), "t.toml", &dir, &[], &[]).is_ok());
    // Too large: refused from its size, before reading a byte.
    let big = std::fs::File::create(dir.join("big.csv")).expect("create");
    big.set_len(MAX_TRACE_BYTES + 1).expect("sparse file");
    let e = parse_str(&text("big.csv"), "t.toml", &dir, &[], &[]).expect_err("big");
    assert!(e.message.contains("more than the limit"), "{e}");
    // Too many steps: the error points at the first line past the limit.
    let mut many = String::with_capacity(MAX_RATE_STEPS * 12);
    for i in 0..=MAX_RATE_STEPS {
        many.push_str(&format!("{i},1000\n"));
    }
    std::fs::write(dir.join("many.csv"), many).expect("write");
    let e = parse_str(&text("many.csv"), "t.toml", &dir, &[], &[]).expect_err("many");
    assert_eq!(e.line, Some(MAX_RATE_STEPS as u32 + 1), "{e}");
    assert!(e.message.contains("at most 1000000 steps"), "{e}");
    // The scenario file itself is read the same way.
    let e = load(&fifo, &[], &[]).expect_err("scenario fifo");
    assert!(e.message.contains("a FIFO"), "{e}");
    tmp.remove().expect("clean up");
}

#[test]
fn sampling_is_bounded_per_run() {
    let e = err("[run]\nduration = \"30s\"\nsample_interval = \"1ns\"\n");
    assert_eq!((e.line, e.column), (Some(3), Some(19)), "{e}");
    assert!(
        e.message
            .contains(&format!("at most {MAX_SAMPLES_PER_RUN} samples per run"))
            && e.message.contains("at least 300µs"),
        "{e}"
    );
    assert!(parse("[run]\nduration = \"30s\"\nsample_interval = \"300us\"\n").is_ok());
    assert!(parse("[run]\nduration = \"30s\"\nsample_interval = \"299us\"\n").is_err());
}

#[test]
fn sweeps_are_bounded_in_points_and_runs() {
    let values = |n: usize| {
        (0..n)
            .map(|i| format!("\"{i}us\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let e = err(&format!(
        "[sweep]\nlink.delay = [{}]\n",
        values(crate::MAX_POINTS + 1)
    ));
    assert!(e.message.contains("more than 20000 points"), "{e}");
    assert!(parse(&format!("[sweep]\nlink.delay = [{}]\n", values(10))).is_ok());
    let e = err(&format!(
        "[run]\nreps = 20001\n[sweep]\nlink.delay = [{}]\n",
        values(10)
    ));
    assert!(e.message.contains("at most 200000 runs"), "{e}");
    // The error points at the repetitions that multiplied the points (found by the fuzz test).
    assert_eq!((e.line, e.column), (Some(2), Some(8)), "{e}");
}

#[test]
fn the_total_number_of_flows_is_capped() {
    use crate::limits::MAX_FLOWS;
    // Each table alone is within its count limit; together they pass the scenario's cap, and
    // the error points at the table where the sum crosses it.
    let table = "[[flow]]\ncount = 5000\n";
    assert!(parse(&table.repeat(2)).is_ok());
    let started = std::time::Instant::now();
    let e = err(&table.repeat(100));
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert_eq!((e.line, e.column), (Some(5), Some(1)), "{e}");
    assert!(
        e.message.contains(&format!("more than {MAX_FLOWS} flows")),
        "{e}"
    );
}

#[test]
fn probes_name_their_flow_and_stay_small() {
    let base = "[[flow]]\nname = \"a\"\n[[flow]]\nname = \"b\"\n";
    let ok = parse(&format!("{base}[[probe]]\nflow = \"b\"\n")).expect("valid");
    let p = &ok.points[0].scenario.probes[0];
    assert_eq!((p.name.as_str(), p.flow, p.payload), ("probe0", 1, 64));
    assert_eq!(p.interval, std::time::Duration::from_millis(200));
    let e = err(&format!("{base}[[probe]]\nflow = \"c\"\n"));
    assert_eq!((e.line, e.column), (Some(6), Some(8)), "{e}");
    assert!(e.message.contains("no flow is named \"c\""), "{e}");
    assert_eq!(e.allowed, ["a", "b"]);
    let e = err(&format!("{base}[[probe]]\nsize = \"20B\"\n"));
    assert!(
        e.message.contains("probe.0.size must be 28 to 1472 bytes"),
        "{e}"
    );
    let e = err(&format!("{base}[[probe]]\ninterval = \"0ms\"\n"));
    assert!(e.message.contains("at least 1ms"), "{e}");
    let e = err(&format!("{base}[[probe]]\nstart = \"1s\"\nstop = \"1s\"\n"));
    assert!(e.message.contains("stop must be after start"), "{e}");
    let many = format!("{base}{}", "[[probe]]\n".repeat(101));
    assert!(parse(&format!("{base}{}", "[[probe]]\n".repeat(100))).is_ok());
    assert!(err(&many).message.contains("at most 100 [[probe]]"));
    let e = err(&format!("{base}[[probe]]\ncount = 3\n"));
    assert!(e.message.contains("unknown key"), "{e}");
}

#[test]
fn a_flow_with_count_zero_is_not_run_but_not_every_flow_can_be_removed() {
    let base = "[[flow]]\nname = \"cubic\"\n[[flow]]\nname = \"bbr\"\ncount = 0\n";
    let ok = parse(base).expect("valid");
    let names: Vec<&str> = ok.points[0]
        .scenario
        .flows
        .iter()
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(names, ["cubic"]);
    let e = err("[[flow]]\ncount = 0\n");
    assert!(e.message.contains("every [[flow]] has count = 0"), "{e}");
    assert_eq!(e.line, Some(1), "{e}");
}
