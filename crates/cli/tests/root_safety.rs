//! Root writing into a directory another user owns: every link that user plants where quiclab
//! writes is refused with a clear error and its target stays untouched, and special files
//! (FIFOs, `/dev/zero`) planted where quiclab reads give an error at once instead of a hang or
//! unbounded memory.
//!
//! Run as root (as CI does), the shared directory and every planted link belong to `nobody`,
//! exactly the attack; run as another user they belong to that user, and the same refusals
//! hold (they never depend on who owns the link).

mod common;

use std::ffi::CString;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{text, Scratch};

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

const SECRET: &str = "root:$6$secret-hash:19000:0:99999:7:::\n";

/// The user that owns the shared directory: `nobody` when running as root.
fn attacker() -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let name = CString::new("nobody").expect("c string");
    // SAFETY: getpwnam with a valid C string; the record is read at once, before any other
    // call that could overwrite it.
    let pw = unsafe { libc::getpwnam(name.as_ptr()) };
    assert!(!pw.is_null(), "no user nobody");
    // SAFETY: non-null record from getpwnam.
    Some(unsafe { ((*pw).pw_uid, (*pw).pw_gid) })
}

/// Gives `path` itself (a link is not followed) to the attacker.
fn give_away(path: &Path) {
    if let Some((uid, gid)) = attacker() {
        std::os::unix::fs::lchown(path, Some(uid), Some(gid)).expect("lchown");
    }
}

/// A private scratch directory holding a directory `shared` that the attacker owns (mode
/// 0755: theirs to fill), a `secret` file and an empty `victim-dir` beside it.
struct Setup {
    scratch: Scratch,
}

impl Setup {
    fn new(tag: &str) -> Setup {
        let scratch = Scratch::new(&format!("rootsafe-{tag}"));
        // The attacker must reach `shared`: the scratch directory is 0700 otherwise.
        std::fs::set_permissions(
            &scratch.0,
            std::os::unix::fs::PermissionsExt::from_mode(0o711),
        )
        .expect("chmod");
        let shared = scratch.path("shared");
        std::fs::create_dir(&shared).expect("shared");
        give_away(&shared);
        std::fs::write(scratch.path("secret"), SECRET).expect("secret");
        std::fs::create_dir(scratch.path("victim-dir")).expect("victim dir");
        scratch.file("tiny.toml", TINY);
        Setup { scratch }
    }

    fn shared(&self, name: &str) -> PathBuf {
        self.scratch.path("shared").join(name)
    }

    fn secret(&self) -> PathBuf {
        self.scratch.path("secret")
    }

    /// Plants `shared/<name>` → `target`, owned by the attacker; parents are created (and
    /// given away) as needed.
    fn plant(&self, name: &str, target: &Path) -> PathBuf {
        let link = self.shared(name);
        self.mkdirs(link.parent().expect("parent"));
        symlink(target, &link).expect("plant link");
        give_away(&link);
        link
    }

    fn mkdirs(&self, dir: &Path) {
        let shared = self.scratch.path("shared");
        let mut missing = Vec::new();
        let mut d = dir.to_path_buf();
        while d != shared && !d.exists() {
            missing.push(d.clone());
            d = d.parent().expect("parent").to_path_buf();
        }
        for d in missing.into_iter().rev() {
            std::fs::create_dir(&d).expect("mkdir");
            give_away(&d);
        }
    }

    /// The secret and the victim directory are as they were.
    fn assert_untouched(&self) {
        assert_eq!(
            std::fs::read_to_string(self.secret()).expect("secret"),
            SECRET,
            "a link's target was written"
        );
        assert_eq!(
            std::fs::read_dir(self.scratch.path("victim-dir"))
                .expect("victim dir")
                .count(),
            0,
            "something was written into a linked directory"
        );
    }

    /// Runs quiclab in the scratch directory, failing the test after `limit`.
    fn run(&self, args: &[&str], limit: Duration) -> Output {
        run_within(args, &self.scratch.0, limit)
    }
}

/// Runs quiclab in `cwd`; kills it and fails if it has not finished within `limit` (a FIFO
/// would otherwise block it for ever).
fn run_within(args: &[&str], cwd: &Path, limit: Duration) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_quiclab"))
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start quiclab");
    let started = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let o = child.wait_with_output().expect("output");
            panic!(
                "quiclab {args:?} still running after {limit:?} (blocked?)\nstderr: {}",
                text(&o.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The command failed and said why, naming `why`.
fn assert_refused(o: &Output, why: &str) {
    let err = text(&o.stderr);
    assert!(
        !o.status.success(),
        "succeeded\nstdout: {}\nstderr: {err}",
        text(&o.stdout)
    );
    assert!(err.contains(why), "stderr does not say {why:?}: {err}");
}

fn assert_ok(o: &Output) {
    assert!(
        o.status.success(),
        "status {:?}\nstdout: {}\nstderr: {}",
        o.status,
        text(&o.stdout),
        text(&o.stderr)
    );
}

fn mkfifo(path: &Path) {
    let c = CString::new(path.to_str().expect("utf-8")).expect("c string");
    // SAFETY: mkfifo with a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
    give_away(path);
}

/// A character device like `/dev/zero` at `path` (root can make one; anyone else plants a link
/// to `/dev/zero`, which is refused as a link).
fn plant_zero(path: &Path) {
    if attacker().is_some() {
        let c = CString::new(path.to_str().expect("utf-8")).expect("c string");
        // SAFETY: mknod with a valid C string; 1:5 is /dev/zero.
        let rc = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 5)) };
        assert_eq!(rc, 0, "mknod");
    } else {
        symlink("/dev/zero", path).expect("link");
    }
}

const QUICK: Duration = Duration::from_secs(60);
const FAST: Duration = Duration::from_secs(20);

#[test]
fn out_refuses_planted_outputs_and_never_uses_predictable_temporary_names() {
    let s = Setup::new("out");
    let secret = s.secret();
    for tmp in ["summary.csv.tmp", "results.jsonl.tmp", "sweep.json.tmp"] {
        s.plant(&format!("a/{tmp}"), &secret);
    }
    let o = s.run(&["sim", "tiny.toml", "--out", "shared/a"], QUICK);
    assert_ok(&o);
    s.assert_untouched();
    assert!(s.shared("a/summary.csv").is_file());

    for name in ["summary.csv", "results.parquet", "sweep.json"] {
        let dir = format!("b-{}", name.replace('.', "-"));
        s.plant(&format!("{dir}/{name}"), &secret);
        let o = s.run(
            &["sim", "tiny.toml", "--out", &format!("shared/{dir}")],
            QUICK,
        );
        assert_refused(&o, "symbolic link");
        s.assert_untouched();
    }
    // results.jsonl itself linked, in a fresh sweep.
    s.plant("c/results.jsonl", &secret);
    let o = s.run(&["sim", "tiny.toml", "--out", "shared/c"], QUICK);
    assert_refused(&o, "already holds results");
    s.assert_untouched();
}

#[test]
fn resume_refuses_links_fifos_and_devices_as_results_jsonl_without_hanging() {
    let s = Setup::new("resume");
    let o = s.run(&["sim", "tiny.toml", "--out", "shared/r"], QUICK);
    assert_ok(&o);
    let results = s.shared("r/results.jsonl");

    std::fs::remove_file(&results).expect("rm");
    s.plant("r/results.jsonl", &s.secret());
    let o = s.run(
        &["sim", "tiny.toml", "--out", "shared/r", "--resume"],
        QUICK,
    );
    assert_refused(&o, "symbolic link");
    s.assert_untouched();

    std::fs::remove_file(&results).expect("rm");
    mkfifo(&results);
    let o = s.run(&["sim", "tiny.toml", "--out", "shared/r", "--resume"], FAST);
    assert_refused(&o, "FIFO");

    std::fs::remove_file(&results).expect("rm");
    plant_zero(&results);
    let o = s.run(&["sim", "tiny.toml", "--out", "shared/r", "--resume"], FAST);
    assert!(!o.status.success(), "stderr: {}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.contains("character device") || err.contains("symbolic link"),
        "{err}"
    );
    // sweep.json as a FIFO: resuming compares it with the scenario.
    std::fs::remove_file(&results).expect("rm");
    let sweep = s.shared("r/sweep.json");
    std::fs::remove_file(&sweep).expect("rm");
    mkfifo(&sweep);
    let o = s.run(&["sim", "tiny.toml", "--out", "shared/r", "--resume"], FAST);
    assert_refused(&o, "FIFO");
}

#[test]
fn sim_traces_refuse_linked_files_and_directories() {
    let s = Setup::new("traces");
    let secret = s.secret();
    s.plant("cap.pcap", &secret);
    let o = s.run(&["sim", "tiny.toml", "--pcap", "shared/cap.pcap"], QUICK);
    assert_refused(&o, "symbolic link");
    s.assert_untouched();

    s.plant("k.pcap.keys", &secret);
    let o = s.run(&["sim", "tiny.toml", "--pcap", "shared/k.pcap"], QUICK);
    assert_refused(&o, "symbolic link");
    s.assert_untouched();

    // One qlog per connection: `<dir>/<flow>-<role>-<n>.sqlog`.
    s.plant("q/d-client-0.sqlog", &secret);
    s.plant("q/d-server-0.sqlog", &secret);
    let o = s.run(&["sim", "tiny.toml", "--qlog", "shared/q"], QUICK);
    // The run completes (a trace is not its result) and names each qlog it refused.
    assert_ok(&o);
    let out = text(&o.stdout);
    assert_eq!(out.matches("symbolic link").count(), 2, "stdout: {out}");
    s.assert_untouched();

    // Several runs: each gets `<dir>/<run id>/`; a linked run directory is refused.
    let victim_dir = s.scratch.path("victim-dir");
    s.plant("p/p0-r1", &victim_dir);
    let o = s.run(
        &["sim", "tiny.toml", "--reps", "2", "--qlog", "shared/p"],
        QUICK,
    );
    assert_refused(&o, "symbolic link");
    s.assert_untouched();
}

/// Two shards of a 2-run sweep, made by root in its own directory, then handed to the
/// attacker's directory (as a cluster job's outputs copied back would be).
fn shards(s: &Setup) -> [PathBuf; 2] {
    for i in 0..2 {
        let o = s.run(
            &[
                "sim",
                "tiny.toml",
                "--reps",
                "2",
                "--shard",
                &format!("{i}/2"),
                "--out",
                &format!("shard{i}"),
            ],
            QUICK,
        );
        assert_ok(&o);
    }
    let dirs = [s.shared("shard0"), s.shared("shard1")];
    for (i, dir) in dirs.iter().enumerate() {
        let st = Command::new("cp")
            .arg("-r")
            .arg(s.scratch.path(&format!("shard{i}")))
            .arg(dir)
            .status()
            .expect("cp");
        assert!(st.success());
        if attacker().is_some() {
            let st = Command::new("chown")
                .args(["-R", "nobody"])
                .arg(dir)
                .status()
                .expect("chown");
            assert!(st.success());
        }
    }
    dirs
}

#[test]
fn merge_refuses_linked_and_special_files_in_shards() {
    let s = Setup::new("merge");
    let [a, b] = shards(&s);
    let (a, b) = (a.to_str().expect("utf-8"), b.to_str().expect("utf-8"));
    // The shards merge as they are.
    assert_ok(&s.run(&["merge", "merged-ok", a, b], QUICK));

    // A series file linked to a secret: never copied into the (world-readable) output.
    let series = s.shared("shard0/series/p0-r0.csv");
    std::fs::remove_file(&series).expect("rm");
    s.plant("shard0/series/p0-r0.csv", &s.secret());
    let o = s.run(&["merge", "merged-link", a, b], QUICK);
    assert_refused(&o, "symbolic link");
    s.assert_untouched();
    let leaked = Command::new("grep")
        .args(["-r", "secret-hash"])
        .arg(s.scratch.path("merged-link"))
        .output()
        .expect("grep");
    assert!(leaked.stdout.is_empty(), "{}", text(&leaked.stdout));
    std::fs::remove_file(&series).expect("rm");

    // results.jsonl as a FIFO, then as /dev/zero: an error at once.
    let results = s.shared("shard1/results.jsonl");
    std::fs::remove_file(&results).expect("rm");
    mkfifo(&results);
    let o = s.run(&["merge", "merged-fifo", a, b], FAST);
    assert_refused(&o, "FIFO");
    std::fs::remove_file(&results).expect("rm");
    plant_zero(&results);
    let o = s.run(&["merge", "merged-zero", a, b], FAST);
    assert!(!o.status.success(), "stderr: {}", text(&o.stderr));

    // sweep.json as /dev/zero.
    let sweep = s.shared("shard0/sweep.json");
    std::fs::remove_file(&sweep).expect("rm");
    plant_zero(&sweep);
    let o = s.run(&["merge", "merged-sweep", a, b], FAST);
    assert!(!o.status.success(), "stderr: {}", text(&o.stderr));
}

#[test]
fn load_inputs_that_never_end_are_refused_at_once() {
    let s = Setup::new("load");
    let fifo = s.shared("records.fifo");
    mkfifo(&fifo);
    let fifo = fifo.to_str().expect("utf-8");
    for input in ["/dev/zero", fifo] {
        let o = s.run(&["load", "report", input], FAST);
        assert_refused(&o, "not a regular file");
        let o = s.run(
            &[
                "load",
                "attack",
                "--targets",
                input,
                "--rate",
                "1",
                "--duration",
                "1s",
            ],
            FAST,
        );
        assert_refused(&o, "not a regular file");
    }
    // Records on stdin that never end a line: a bounded error, not memory without end.
    let mut child = Command::new(env!("CARGO_BIN_EXE_quiclab"))
        .args(["load", "report"])
        .current_dir(&s.scratch.0)
        .stdin(std::fs::File::open("/dev/zero").expect("/dev/zero"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start");
    let started = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > FAST {
            let _ = child.kill();
            panic!("load report on /dev/zero as stdin did not stop");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = child.wait_with_output().expect("output");
    assert_refused(&o, "line longer than");

    // Outputs named by the user that are planted links: the records stream (created before the
    // attack) and the summary (written after it).
    s.plant("records.jsonl", &s.secret());
    s.plant("summary.json", &s.secret());
    for flag in ["--output", "--summary"] {
        let file = if flag == "--output" {
            s.shared("records.jsonl")
        } else {
            s.shared("summary.json")
        };
        let o = s.run(
            &[
                "load",
                "attack",
                "https://127.0.0.1:9/",
                "--requests",
                "1",
                flag,
                file.to_str().expect("utf-8"),
            ],
            QUICK,
        );
        assert_refused(&o, "symbolic link");
        s.assert_untouched();
    }
}

#[test]
fn emu_refuses_planted_stats_keylog_and_capture_directories() {
    let s = Setup::new("emu");
    let secret = s.secret();
    let victim_dir = s.scratch.path("victim-dir");
    // The server of run p0-r0 appends its statistics here; the key log of run p0-r1 goes to
    // keys-p0-r1.log; run p0-r1 captures into pcap/p0-r1/.
    s.plant("e/emu/p0-r0/server-0.stats.jsonl", &secret);
    s.plant("keys-p0-r1.log", &secret);
    s.plant("pcap/p0-r1", &victim_dir);
    let o = s.run(
        &[
            "emu",
            "tiny.toml",
            "--reps",
            "2",
            "--out",
            "shared/e",
            "--pcap",
            "shared/pcap",
            "--keylog",
            "shared/keys.log",
        ],
        Duration::from_secs(300),
    );
    assert!(
        !o.status.success(),
        "stdout: {}\nstderr: {}",
        text(&o.stdout),
        text(&o.stderr)
    );
    s.assert_untouched();
    let all = format!(
        "{}{}",
        text(&o.stderr),
        std::fs::read_to_string(s.shared("e/results.jsonl")).unwrap_or_default()
    );
    assert!(all.contains("symbolic link"), "{all}");
}
