//! The root-safe API against planted links and special files.

use std::io::Write;
use std::os::unix::fs::{symlink, MetadataExt};
use std::path::Path;
use std::time::{Duration, Instant};

use fsutil::PrivateDir;

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().expect("utf-8")).expect("c string");
    // SAFETY: mkfifo on a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// Runs `f` on a thread and fails if it takes more than five seconds (a FIFO would block).
fn quickly<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(5))
        .expect("returned within five seconds")
}

#[test]
fn bounded_reads_refuse_fifos_devices_links_and_large_files() {
    let dir = PrivateDir::new("fsutil-api-").expect("dir");
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let started = Instant::now();
    let f = fifo.clone();
    let err = quickly(move || fsutil::read_bounded(&f, 10)).expect_err("fifo");
    assert!(err.to_string().contains("a FIFO"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
    let f = fifo.clone();
    assert!(quickly(move || fsutil::read_input_bounded(&f, 10)).is_err());

    let err = quickly(|| fsutil::read_input_bounded(Path::new("/dev/zero"), 1 << 20))
        .expect_err("device");
    assert!(err.to_string().contains("character device"), "{err}");
    let err = fsutil::read_bounded(Path::new("/"), 10).expect_err("dir");
    assert!(err.to_string().contains("a directory"), "{err}");

    let target = dir.path().join("target");
    std::fs::write(&target, "precious").expect("write");
    let link = dir.path().join("link");
    symlink(&target, &link).expect("link");
    let err = fsutil::read_to_string_bounded(&link, 100).expect_err("link");
    assert!(err.to_string().contains("symbolic link"), "{err}");
    // A path the user names may be a link.
    assert_eq!(
        fsutil::read_input_to_string_bounded(&link, 100).expect("input"),
        "precious"
    );
    let err = fsutil::read_to_string_bounded(&target, 7).expect_err("big");
    assert!(err.to_string().contains("limit of 7 bytes"), "{err}");
    assert_eq!(
        fsutil::read_to_string_bounded(&target, 8).expect("fits"),
        "precious"
    );
}

#[test]
fn atomic_writes_refuse_links_and_never_follow_them() {
    let dir = PrivateDir::new("fsutil-api-").expect("dir");
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious").expect("write");
    let out = dir.path().join("summary.csv");
    symlink(&victim, &out).expect("link");
    let err = fsutil::write_atomic(&out, b"new").expect_err("a link is refused");
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert_eq!(std::fs::read_to_string(&victim).expect("read"), "precious");
    std::fs::remove_file(&out).expect("unplant");
    // A planted temporary name is never opened: the temporary file's name is random.
    symlink(&victim, dir.path().join("summary.csv.tmp")).expect("link");
    fsutil::write_atomic(&out, b"old").expect("write");
    fsutil::write_atomic(&out, b"new").expect("replace");
    assert_eq!(std::fs::read_to_string(&victim).expect("read"), "precious");
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let err = fsutil::write_atomic(&fifo, b"x").expect_err("a FIFO is refused");
    assert!(err.to_string().contains("FIFO"), "{err}");
    std::fs::remove_file(&fifo).expect("unplant");
    let meta = std::fs::symlink_metadata(&out).expect("stat");
    assert!(meta.is_file());
    assert_eq!(meta.mode() & 0o777, fsutil::OUTPUT_MODE);
    assert_eq!(std::fs::read_to_string(&out).expect("read"), "new");
    // Nothing is left behind but the planted link and the output.
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name().into_string().expect("utf-8"))
        .collect();
    names.sort();
    assert_eq!(names, ["summary.csv", "summary.csv.tmp", "victim"]);

    // Dropped without commit: no trace.
    let mut pending = fsutil::AtomicFile::new(&dir.path().join("x")).expect("start");
    pending.write_all(b"partial").expect("write");
    drop(pending);
    assert!(!dir.path().join("x").exists());
    assert!(fsutil::write_atomic(dir.path(), b"x").is_err());
}

#[test]
fn appends_refuse_links_and_fifos() {
    let dir = PrivateDir::new("fsutil-api-").expect("dir");
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious").expect("write");
    let link = dir.path().join("stats.jsonl");
    symlink(&victim, &link).expect("link");
    let err = fsutil::open_append(&link, 0o644).expect_err("link");
    assert!(err.to_string().contains("symbolic link"), "{err}");
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let err = quickly(move || fsutil::open_append(&fifo, 0o644)).expect_err("fifo");
    assert!(err.to_string().contains("FIFO"), "{err}");
    let log = dir.path().join("log");
    fsutil::open_append(&log, 0o644)
        .expect("create")
        .write_all(b"a\n")
        .expect("write");
    fsutil::open_append(&log, 0o644)
        .expect("reopen")
        .write_all(b"b\n")
        .expect("write");
    assert_eq!(std::fs::read_to_string(&log).expect("read"), "a\nb\n");
    assert_eq!(std::fs::read_to_string(&victim).expect("read"), "precious");
}

#[test]
fn copies_refuse_linked_and_special_sources() {
    let dir = PrivateDir::new("fsutil-api-").expect("dir");
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "shadow").expect("write");
    let linked = dir.path().join("linked.csv");
    symlink(&secret, &linked).expect("link");
    let dest = dir.path().join("copy.csv");
    let err = fsutil::copy_regular(&linked, &dest).expect_err("link");
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert!(!dest.exists());
    let err = quickly(move || {
        fsutil::copy_regular(Path::new("/dev/zero"), &std::env::temp_dir().join("never"))
    })
    .expect_err("device");
    assert!(err.to_string().contains("character device"), "{err}");
    let plain = dir.path().join("plain.csv");
    std::fs::write(&plain, "a,b\n").expect("write");
    assert_eq!(fsutil::copy_regular(&plain, &dest).expect("copy"), 4);
    assert_eq!(std::fs::read_to_string(&dest).expect("read"), "a,b\n");
}

#[test]
fn directories_refuse_a_linked_last_component() {
    let dir = PrivateDir::new("fsutil-api-").expect("dir");
    let elsewhere = PrivateDir::new("fsutil-api-").expect("dir");
    let pcap = dir.path().join("pcap");
    fsutil::create_dir_all(pcap.join("a/b")).expect("create");
    fsutil::create_dir_all(pcap.join("a/b")).expect("exists");
    symlink(elsewhere.path(), pcap.join("run-1")).expect("link");
    let err = fsutil::create_dir_all(pcap.join("run-1")).expect_err("link");
    assert!(err.to_string().contains("symbolic link"), "{err}");
    std::fs::write(pcap.join("file"), "x").expect("write");
    assert!(fsutil::create_dir_all(pcap.join("file")).is_err());
    assert_eq!(
        std::fs::read_dir(elsewhere.path()).expect("list").count(),
        0
    );
}
