//! Root safety of `quiclab emu`.
//!
//! One test drives four real lone runs (no `--out`) while a foreign `ql…` namespace, a
//! namespace that only looks like quiclab's (no lock record), and planted symlinks exist:
//!
//! - the symlinks sit where the endpoint logs used to go (`$TMPDIR/quiclab-emu-<pid>/`, the pid
//!   made predictable by setting `ns_last_pid`) and point at a file whose content must not change;
//! - after a successful run, after SIGINT (exit 130) and after SIGTERM (exit 143) the run's log
//!   directory and namespaces are gone; after SIGKILL they are left, and `quiclab emu --cleanup`
//!   removes them;
//! - the foreign namespaces, the planted directories and their target survive all of it.
//!
//! A [`Guard`] removes everything the test created, also when an assertion fails.

mod common;

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{text, Scratch};

/// 1 MB over 10 Mbit/s: about a second.
const SHORT: &str = r#"
[run]
duration = "20s"

[link]
rate = "10Mbit"
delay = "5ms"
queue = "25pkt"

[[flow]]
name = "dl"
app = "download"
size = "1MB"
cc = "cubic"
"#;

/// 50 MB over 10 Mbit/s: far longer than the test waits before signalling.
const LONG: &str = r#"
[run]
duration = "60s"

[link]
rate = "10Mbit"
delay = "5ms"
queue = "25pkt"

[[flow]]
name = "dl"
app = "download"
size = "50MB"
cc = "cubic"
"#;

/// How many pids after the chosen start get a planted directory.
const PID_WINDOW: u32 = 64;

/// Everything the test created; removed on drop (pass or fail).
#[derive(Default)]
struct Guard {
    namespaces: Vec<String>,
    paths: Vec<PathBuf>,
    children: Vec<Child>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for ns in &self.namespaces {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
        for p in &self.paths {
            let _ = fsutil::remove_tree(p);
        }
    }
}

fn ns_exists(name: &str) -> bool {
    Path::new("/run/netns").join(name).exists()
}

fn add_namespace(guard: &mut Guard, name: &str) {
    assert!(!ns_exists(name), "namespace {name} already exists");
    let st = Command::new("ip")
        .args(["netns", "add", name])
        .status()
        .expect("ip netns add");
    assert!(st.success(), "ip netns add {name}");
    guard.namespaces.push(name.to_string());
}

/// Namespaces of run `id`.
fn run_namespaces(id: &str) -> Vec<String> {
    let prefix = format!("ql{id}-");
    std::fs::read_dir("/run/netns")
        .map(|d| {
            d.filter_map(Result::ok)
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default()
}

/// Entries of the temporary directory that belong to run `id`'s log directory.
fn run_dirs(id: &str) -> Vec<PathBuf> {
    let prefix = format!("quiclab-emu-{id}");
    std::fs::read_dir(std::env::temp_dir())
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// The run id whose lock file records `pid`, if any.
fn run_id_of_pid(pid: u32) -> Option<String> {
    for e in std::fs::read_dir("/run/quiclab")
        .ok()?
        .filter_map(Result::ok)
    {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(id) = name.strip_suffix(".lock") else {
            continue;
        };
        let owner = std::fs::read_to_string(e.path()).unwrap_or_default();
        if owner.trim() == pid.to_string() {
            return Some(id.to_string());
        }
    }
    None
}

/// Plants `$TMPDIR/quiclab-emu-<pid>/{server-0,client-0}.{err,log}` → `target` for the next
/// [`PID_WINDOW`] pids and makes the kernel hand out the first of them next; returns the window.
fn plant_old_location(guard: &mut Guard, target: &Path) -> std::ops::Range<u32> {
    let last: u32 = std::fs::read_to_string("/proc/sys/kernel/ns_last_pid")
        .expect("ns_last_pid")
        .trim()
        .parse()
        .expect("pid");
    let max: u32 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .expect("pid_max")
        .trim()
        .parse()
        .expect("pid_max");
    let mut start = last + 200;
    if start + PID_WINDOW >= max {
        start = 1000;
    }
    for pid in start..start + PID_WINDOW {
        let dir = std::env::temp_dir().join(format!("quiclab-emu-{pid}"));
        if std::fs::symlink_metadata(&dir).is_ok() {
            continue;
        }
        std::fs::create_dir(&dir).expect("plant dir");
        guard.paths.push(dir.clone());
        for name in ["server-0.err", "server-0.log", "client-0.err"] {
            symlink(target, dir.join(name)).expect("plant symlink");
        }
    }
    std::fs::write("/proc/sys/kernel/ns_last_pid", format!("{}", start - 1))
        .expect("set ns_last_pid");
    start..start + PID_WINDOW
}

/// Starts `quiclab emu <scenario>` (a lone run: no `--out`) with its pid inside the planted
/// window.
fn start_emu(guard: &mut Guard, dir: &Scratch, scenario: &Path, target: &Path) -> (u32, usize) {
    let window = plant_old_location(guard, target);
    let child = Command::new(env!("CARGO_BIN_EXE_quiclab"))
        .args(["emu", scenario.to_str().expect("utf-8")])
        .current_dir(&dir.0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn quiclab emu");
    let pid = child.id();
    guard.children.push(child);
    assert!(
        window.contains(&pid),
        "quiclab got pid {pid}, outside the planted window {window:?}"
    );
    (pid, guard.children.len() - 1)
}

/// Waits until the run of `pid` holds its lock and its log directory exists; returns its id.
fn wait_for_run(guard: &mut Guard, idx: usize, pid: u32) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(id) = run_id_of_pid(pid) {
            if !run_dirs(&id).is_empty() {
                return id;
            }
        }
        if let Ok(Some(st)) = guard.children[idx].try_wait() {
            panic!("quiclab emu exited ({st}) before its run was seen");
        }
        assert!(
            Instant::now() < deadline,
            "no lock and log directory of pid {pid} within 20 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits (bounded) for child `idx` to exit; returns its exit code (None: killed by a signal)
/// and stderr.
fn wait_exit(guard: &mut Guard, idx: usize) -> (Option<i32>, String) {
    let deadline = Instant::now() + Duration::from_secs(40);
    let child = &mut guard.children[idx];
    loop {
        if let Some(st) = child.try_wait().expect("wait") {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                use std::io::Read;
                let _ = e.read_to_string(&mut err);
            }
            return (st.code(), err);
        }
        assert!(
            Instant::now() < deadline,
            "quiclab emu did not exit in 40 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn check_survivors(guard: &Guard, target: &Path, foreign: &[String]) {
    assert_eq!(
        std::fs::read_to_string(target).expect("target"),
        "precious\n",
        "the planted symlink's target was written through"
    );
    for ns in foreign {
        assert!(ns_exists(ns), "foreign namespace {ns} was removed");
    }
    for p in &guard.paths {
        assert!(
            std::fs::symlink_metadata(p).is_ok(),
            "planted {} was removed",
            p.display()
        );
    }
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) on our own child.
    assert_eq!(unsafe { libc::kill(pid as i32, sig) }, 0);
}

#[test]
fn emu_keeps_out_of_foreign_files_and_namespaces_and_cleans_up_after_itself() {
    let dir = Scratch::new("emu-safety");
    let short = dir.file("short.toml", SHORT);
    let long = dir.file("long.toml", LONG);
    let mut guard = Guard::default();
    let victim = fsutil::PrivateDir::new("quiclab-test-victim-").expect("victim dir");
    let target = victim.path().join("precious.txt");
    std::fs::write(&target, "precious\n").expect("target");
    let tag = format!("{:06x}", std::process::id() & 0xff_ffff);
    // A user's namespace with quiclab's prefix, and one with quiclab's exact name pattern but no
    // lock record: neither is quiclab's.
    let foreign = vec![format!("qlmine-{tag}"), format!("ql{tag}-c0")];
    for ns in &foreign {
        add_namespace(&mut guard, ns);
    }
    // A link in the new location's name pattern, to a directory that must survive cleanup.
    let planted_new = std::env::temp_dir().join(format!("quiclab-emu-{tag}-Planted1"));
    let _ = fsutil::remove_tree(&planted_new);
    symlink(victim.path(), &planted_new).expect("plant new-pattern link");
    guard.paths.push(planted_new);

    // 1. Success.
    let (pid, idx) = start_emu(&mut guard, &dir, &short, &target);
    let id = wait_for_run(&mut guard, idx, pid);
    let (code, err) = wait_exit(&mut guard, idx);
    assert_eq!(code, Some(0), "stderr: {err}");
    assert!(
        run_dirs(&id).is_empty(),
        "log dir left: {:?}",
        run_dirs(&id)
    );
    check_survivors(&guard, &target, &foreign);

    // 2. SIGINT and 3. SIGTERM: torn down, log directory removed, 128 + signal.
    for (sig, want) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let (pid, idx) = start_emu(&mut guard, &dir, &long, &target);
        let id = wait_for_run(&mut guard, idx, pid);
        std::thread::sleep(Duration::from_millis(1500));
        signal(pid, sig);
        let (code, err) = wait_exit(&mut guard, idx);
        assert_eq!(code, Some(want), "signal {sig}: stderr: {err}");
        assert!(
            !err.contains("letting running runs finish"),
            "a lone run is torn down, not finished: {err}"
        );
        assert!(
            run_dirs(&id).is_empty(),
            "log dir left: {:?}",
            run_dirs(&id)
        );
        assert!(run_namespaces(&id).is_empty(), "{:?}", run_namespaces(&id));
        check_survivors(&guard, &target, &foreign);
    }

    // 4. SIGKILL leaves the run behind; `--cleanup` removes it and nothing else.
    let (pid, idx) = start_emu(&mut guard, &dir, &long, &target);
    let id = wait_for_run(&mut guard, idx, pid);
    std::thread::sleep(Duration::from_millis(1000));
    signal(pid, libc::SIGKILL);
    let _ = wait_exit(&mut guard, idx);
    let left = run_dirs(&id);
    assert!(!left.is_empty(), "SIGKILL left no log directory");
    // Remove them ourselves should the assertions below fail.
    guard.paths.extend(left);
    let o = common::quiclab(&["emu", "--cleanup"], &dir.0);
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    assert!(
        run_dirs(&id).is_empty(),
        "--cleanup left {:?}",
        run_dirs(&id)
    );
    assert!(run_namespaces(&id).is_empty(), "{:?}", run_namespaces(&id));
    // Only the planted entries remain in the guard's list from here on.
    guard
        .paths
        .retain(|p| !p.to_string_lossy().contains(&format!("quiclab-emu-{id}")));
    check_survivors(&guard, &target, &foreign);
}
