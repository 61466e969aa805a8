//! Property tests of what `quiclab load` parses: targets files, URLs, headers, methods, ramps
//! and schedules, and the results stream (`report`/`plot` read JSON lines or CSV back). Hostile,
//! truncated or corrupted input gives an error, never a panic or a hang.
//!
//! CI runs a small budget; `scripts/fuzz.sh` sets `PROPTEST_CASES` for a long run.

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use load::record::{read_records, Encoding, RecordWriter, ResultRecord};
use load::schedule::{Ramp, Schedule};
use load::targets::{parse_header, parse_method, parse_targets, parse_url, TargetsError};
use load::units::Rate;
use proptest::prelude::*;

/// The budget of one property in a normal `cargo test`, unless `PROPTEST_CASES` says otherwise.
fn config(ci_cases: u32) -> ProptestConfig {
    let mut c = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        c.cases = ci_cases;
    }
    c
}

const LIMIT: Duration = Duration::from_secs(5);

/// Runs `f` on its own thread; a panic or a run past [`LIMIT`] is a failure.
fn bounded<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(LIMIT) {
        Ok(v) => Ok(v),
        Err(mpsc::RecvTimeoutError::Timeout) => Err(format!("took longer than {LIMIT:?}")),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err("panicked".into()),
    }
}

/// `@body` paths resolve here: a directory that does not exist (no file is ever read).
fn no_such_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-load-no-such-dir")
}

/// Lines that look like a targets file.
fn targets_text() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        3 => (prop::sample::select(vec!["GET", "POST", "HEAD", "get", "PUT", "M\u{e9}THOD", "", "GET GET"]),
              prop::sample::select(vec!["https://localhost:4433/11000", "http://[::1]:80/", "https://h/", "/relative",
                                        "https://", "https://:0/", "ftp://x/y", "https://localhost:99999/", "https://\u{0}/",
                                        "https://user@host/?q#f", "h3://x:1/%zz"]))
            .prop_map(|(m, u)| format!("{m} {u}")),
        2 => prop::sample::select(vec!["X-Trace: 1", "Content-Type: application/json", ": empty", "No-Colon",
                                       "Bad Name: x", "X: \u{7f}", "X:", "Host: a\r", "X: ü"]).prop_map(String::from),
        1 => prop::sample::select(vec!["@body.json", "@", "@ ", "@../../x", "@/nonexistent/quiclab-fuzz"]).prop_map(String::from),
        1 => prop::sample::select(vec!["", "   ", "# comment", "#", "\t"]).prop_map(String::from),
        1 => any::<String>(),
    ];
    (
        prop::collection::vec(line, 0..20),
        prop::sample::select(vec!["\n", "\r\n", "\r"]),
    )
        .prop_map(|(lines, nl)| lines.join(nl))
}

fn check_targets(text: String) -> Result<(), String> {
    let lines = text.lines().count();
    let r = bounded(move || parse_targets(&text, "t.targets", &no_such_dir()).map(|t| t.len()))?;
    match r {
        Ok(_) | Err(TargetsError::Empty) => Ok(()),
        Err(TargetsError::Syntax {
            file,
            line,
            message,
        }) => {
            if file != "t.targets" || line == 0 || line > lines.max(1) || message.is_empty() {
                return Err(format!(
                    "bad error position {file}:{line} of {lines} lines: {message}"
                ));
            }
            Ok(())
        }
        Err(e @ TargetsError::Read { .. }) => {
            Err(format!("parse_targets reads no file itself: {e}"))
        }
    }
}

/// A record with fields from the whole range of each type.
fn record() -> impl Strategy<Value = ResultRecord> {
    (
        (
            any::<u64>(),
            ".{0,12}",
            ".{0,8}",
            prop::sample::select(vec!["1.1", "2", "3"]),
        ),
        (
            any::<u64>(),
            any::<u64>(),
            any::<Option<u64>>(),
            any::<bool>(),
            any::<Option<u64>>(),
        ),
        (
            any::<Option<u64>>(),
            any::<Option<u64>>(),
            any::<Option<u64>>(),
            any::<u64>(),
            any::<Option<u64>>(),
        ),
        (
            any::<u64>(),
            any::<u64>(),
            any::<Option<u16>>(),
            any::<bool>(),
            prop::option::of(".{0,20}"),
        ),
    )
        .prop_map(
            |(
                (seq, attack, phase, http),
                (intended_ns, intended_unix_ns, sent_ns, late, connect_ns),
                (tls_ns, quic_handshake_ns, ttfb_ns, latency_ns, service_ns),
                (bytes_in, bytes_out, status, reused, error),
            )| {
                ResultRecord {
                    seq,
                    attack,
                    phase,
                    http: http.to_string(),
                    intended_ns,
                    intended_unix_ns,
                    sent_ns,
                    late,
                    connect_ns,
                    tls_ns,
                    quic_handshake_ns,
                    ttfb_ns,
                    latency_ns,
                    service_ns,
                    bytes_in,
                    bytes_out,
                    status,
                    reused,
                    error,
                }
            },
        )
}

fn encode(records: &[ResultRecord], encoding: Encoding) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut w = RecordWriter::new(&mut out, encoding);
        for r in records {
            w.write(r).expect("in memory");
        }
        w.flush().expect("in memory");
    }
    out
}

/// Reads every record of `bytes`; errors are fine, panics and hangs are not.
fn read_all(bytes: Vec<u8>) -> Result<Vec<Result<ResultRecord, String>>, String> {
    bounded(move || match read_records(Cursor::new(bytes)) {
        Ok(stream) => stream
            .take(100_000)
            .map(|r| r.map_err(|e| e.to_string()))
            .collect(),
        Err(e) => vec![Err(e.to_string())],
    })
}

fn rate_text() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "100/s",
            "0",
            "0/s",
            "1e308/1ns",
            "1e-300/h",
            "5/500ms",
            "nan",
            "inf/s",
            "-1/s",
            "18446744073709551616/s",
            "1/0s",
            "/s",
            "100",
            "0.0000001/s"
        ])
        .prop_map(String::from),
        "[0-9.e-]{0,12}(/[0-9]{0,3}(ns|us|ms|s|m|h)?)?",
    ]
}

proptest! {
    #![proptest_config(config(500))]

    #[test]
    fn targets_files_never_panic(text in targets_text()) {
        check_targets(text).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn arbitrary_targets_text_never_panics(text in any::<String>()) {
        check_targets(text).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn urls_headers_methods_never_panic(text in any::<String>()) {
        let t = text.clone();
        bounded(move || { let _ = (parse_url(&t), parse_header(&t), parse_method(&t)); }).map_err(TestCaseError::fail)?;
        if let Ok(u) = parse_url(&text) {
            prop_assert!(u.scheme().is_some() && u.authority().is_some(), "{:?} accepted as absolute", text);
        }
    }

    #[test]
    fn ramps_and_schedules_never_panic(kind in prop::sample::select(vec!["linear:", "steps:", "", "constant:"]),
                                        rates in prop::collection::vec(rate_text(), 0..5),
                                        step in prop::sample::select(vec!["@10s", "@0s", "@1ns", "@18446744073709551615ns", "@", "@-1s", ""]),
                                        duration in prop::option::of(0u64..=u64::MAX),
                                        max in prop::option::of(any::<u64>()),
                                        probes in prop::collection::vec(any::<u64>(), 1..8)) {
        let sep = if kind == "linear:" { "-" } else { "," };
        let text = format!("{kind}{}{step}", rates.join(sep));
        let first = rates.first().cloned().unwrap_or_default();
        let out = bounded(move || {
            let ramp = Ramp::parse(&text).or_else(|_| Rate::parse(&first).map(Ramp::Constant).map_err(|e| e.to_string()));
            let Ok(ramp) = ramp else { return Ok(()) };
            let Ok(s) = Schedule::new(ramp, duration.map(Duration::from_nanos), max) else { return Ok(()) };
            let _ = (s.mean_rate(), s.phase_label(0));
            let mut probes = probes;
            probes.extend([0, 1, 2]);
            probes.sort_unstable();
            let mut last = Duration::ZERO;
            for seq in probes {
                if let Some(slot) = s.slot(seq) {
                    if slot.at < last {
                        return Err(format!("slot {seq} at {:?} is before an earlier request's {last:?}", slot.at));
                    }
                    last = slot.at;
                    let _ = s.phase_label(slot.phase);
                }
            }
            Ok(())
        }).map_err(TestCaseError::fail)?;
        out.map_err(TestCaseError::fail)?;
    }

    #[test]
    fn results_round_trip(records in prop::collection::vec(record(), 0..20), csv in any::<bool>()) {
        let encoding = if csv { Encoding::Csv } else { Encoding::Json };
        let bytes = encode(&records, encoding);
        let back = read_all(bytes).map_err(TestCaseError::fail)?;
        let back: Result<Vec<ResultRecord>, String> = back.into_iter().collect();
        // CSV cannot tell an empty string from a missing one: compare JSON exactly, CSV by count.
        match back {
            Ok(b) if !csv => prop_assert_eq!(b, records),
            Ok(b) => prop_assert_eq!(b.len(), records.len()),
            Err(e) => return Err(TestCaseError::fail(format!("written records do not read back: {e}"))),
        }
    }

    #[test]
    fn corrupted_results_never_panic(records in prop::collection::vec(record(), 1..10), csv in any::<bool>(),
                                     edits in prop::collection::vec((any::<usize>(), any::<u8>()), 0..6), cut in any::<usize>()) {
        let encoding = if csv { Encoding::Csv } else { Encoding::Json };
        let mut bytes = encode(&records, encoding);
        for (at, b) in edits {
            let i = at % bytes.len();
            bytes[i] = b;
        }
        bytes.truncate(cut % (bytes.len() + 1));
        read_all(bytes).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn arbitrary_results_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2000)) {
        read_all(bytes).map_err(TestCaseError::fail)?;
    }
}

/// A targets file whose `@body` names a FIFO (or `/dev/zero`) must be refused, not read without
/// end: `quiclab load` runs as root in the lab, and a body is held in memory for every request.
#[test]
fn a_body_that_is_not_a_regular_file_is_refused() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("fuzz-load-fifo-{}", std::process::id()));
    // create_dir (not _all): fails rather than reuse a directory someone planted.
    std::fs::create_dir(&dir).expect("a fresh directory");
    let fifo = dir.join("body.fifo");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).expect("no NUL");
    // SAFETY: a valid NUL-terminated path; mkfifo only creates a file.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    let texts = [
        "GET https://localhost:4433/1\n@body.fifo\n".to_string(),
        "GET https://localhost:4433/1\n@/dev/zero\n".to_string(),
    ];
    let mut outcomes = Vec::new();
    for text in texts {
        let base = dir.clone();
        outcomes.push(bounded(move || {
            parse_targets(&text, "t.targets", &base)
                .map(|t| t.len())
                .map_err(|e| e.to_string())
        }));
    }
    // Only what this test made: the FIFO and its directory.
    let _ = std::fs::remove_file(&fifo);
    let _ = std::fs::remove_dir(&dir);
    for o in outcomes {
        match o {
            Ok(Err(e)) => assert!(e.contains("t.targets:2:"), "{e}"),
            Ok(Ok(n)) => panic!("a body from a special file was accepted ({n} targets)"),
            Err(e) => panic!("reading the body {e}"),
        }
    }
}
