//! `results.jsonl`: one JSON object per run per line, safe against parallel writers and crashes.
//!
//! Every line is written with a single `write_all` on an `O_APPEND` file and synced, so after a
//! crash a line is either wholly present or is the detectably partial last line (no trailing
//! newline). [`ResultsStore::open`] repairs such a tail so the next append starts a fresh line.
//! Complete lines that are not a JSON object with a string `"id"` are skipped by every reader and
//! dropped by [`ResultsStore::finalize`]: they can only come from outside tampering, and skipping
//! them makes the run count as not done, so a resumed sweep simply redoes it.
//!
//! Key order is stable because every value is rebuilt with its object keys sorted before it is
//! serialised, whatever serde_json's `preserve_order` feature (which feature unification in the
//! workspace could switch on) does to map order. serde_json prints floats with the shortest
//! round-tripping representation, which is deterministic.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::layout::RESULTS_FILE;
use crate::store_error::{Error, Result};

/// Largest `results.jsonl` read back (to resume, finalise or merge a sweep): it is held in
/// memory whole. A sweep has at most `scenario::MAX_RUNS` runs; 4 GiB is 20 kB per run at
/// that cap, far above a run's line, and keeps a planted or runaway file from exhausting memory.
pub const MAX_RESULTS_BYTES: u64 = 4 << 30;

/// Field that marks an error record: a line with an id and this message instead of
/// measurements. It counts as done for resuming and is skipped by [`ResultsStore::load`].
pub const ERROR_FIELD: &str = "error";

/// Whether a stored line is an error record.
pub fn is_error_record(line: &Value) -> bool {
    line.get(ERROR_FIELD).is_some_and(Value::is_string)
}

/// Append-only store of run results in `<dir>/results.jsonl`.
#[derive(Debug)]
pub struct ResultsStore {
    path: PathBuf,
    // Serialises appends with reads and with finalize's file swap, which replaces the handle.
    file: Mutex<File>,
}

/// One complete, valid line of the file. Only the id is parsed: resuming and finalising a
/// sweep of 100,000 runs must not hold every result as a `serde_json::Value` (about ten times
/// the size of its text).
struct Record {
    id: String,
    /// The line exactly as stored, without its newline.
    raw: Vec<u8>,
}

/// What every reader needs of a line: its id (other fields are skipped, not stored).
#[derive(serde::Deserialize)]
struct IdOnly {
    id: String,
}

/// The id and error message of an error record.
#[derive(serde::Deserialize)]
struct ErrorOnly {
    id: String,
    error: Option<String>,
}

impl ResultsStore {
    /// Opens (creating if needed) the store in `dir` and repairs a partial last line.
    pub fn open(dir: &Path) -> Result<Self> {
        fsutil::create_dir_all(dir).map_err(Error::io(dir))?;
        let path = dir.join(RESULTS_FILE);
        let file = open_append(&path)?;
        repair_tail(&path, &file)?;
        Ok(ResultsStore {
            path,
            file: Mutex::new(file),
        })
    }

    /// Path of `results.jsonl`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Ids of every complete, valid line: the runs a resumed sweep must not redo.
    pub fn completed_ids(&self) -> Result<BTreeSet<String>> {
        let _guard = self.lock();
        Ok(self.read_records()?.into_iter().map(|r| r.id).collect())
    }

    /// Appends `line` (a JSON object with a string `"id"`) as one line, durably.
    pub fn append(&self, line: &Value) -> Result<()> {
        if !matches!(line.get("id"), Some(Value::String(_))) {
            return Err(Error::MissingId);
        }
        let mut bytes = serde_json::to_vec(&canonical(line))?;
        // Compact serde_json output escapes control characters, so this is the only newline.
        bytes.push(b'\n');
        let mut file = self.lock();
        file.write_all(&bytes).map_err(Error::io(&self.path))?;
        file.sync_data().map_err(Error::io(&self.path))
    }

    /// Every valid run that produced a result, in file order (duplicates included); error
    /// records (see [`ResultsStore::errors`]) are left out, since they measure nothing.
    pub fn load(&self) -> Result<Vec<Value>> {
        let _guard = self.lock();
        Ok(self
            .read_records()?
            .into_iter()
            .filter_map(|r| serde_json::from_slice::<Value>(&r.raw).ok())
            .filter(|v| !is_error_record(v))
            .collect())
    }

    /// Calls `f` with every valid run that produced a result, in file order, parsing one line
    /// at a time: what [`ResultsStore::load`] returns, without holding every run as a `Value`
    /// at once (at 100,000 runs that is gigabytes).
    pub fn for_each_result(&self, mut f: impl FnMut(Value)) -> Result<()> {
        let _guard = self.lock();
        for r in self.read_records()? {
            if let Ok(v) = serde_json::from_slice::<Value>(&r.raw) {
                if !is_error_record(&v) {
                    f(v);
                }
            }
        }
        Ok(())
    }

    /// The error records, in file order: `(id, message)` of each run that failed in a way a
    /// retry would repeat (the engine panicked), recorded so a resumed sweep skips it.
    pub fn errors(&self) -> Result<Vec<(String, String)>> {
        let _guard = self.lock();
        Ok(self
            .read_records()?
            .into_iter()
            .filter_map(|r| {
                let e: ErrorOnly = serde_json::from_slice(&r.raw).ok()?;
                Some((e.id, e.error?))
            })
            .collect())
    }

    /// Rewrites the file atomically with lines in `order` of ids, keeping the first of duplicates.
    ///
    /// Valid lines whose id is not in `order` are kept, after the ordered ones and sorted by id,
    /// so nothing completed is lost and the result still does not depend on finishing order.
    pub fn finalize(&self, order: &[String]) -> Result<()> {
        let mut file = self.lock();
        let mut records = self.read_records()?;
        // Stable sort by (rank, id) keeps file order among duplicates, so "first" is well-defined.
        let rank: std::collections::BTreeMap<&str, usize> = order
            .iter()
            .enumerate()
            .rev() // a repeated id in `order` takes its first position
            .map(|(i, id)| (id.as_str(), i))
            .collect();
        records.sort_by(|a, b| {
            let ka = (
                rank.get(a.id.as_str()).copied().unwrap_or(usize::MAX),
                &a.id,
            );
            let kb = (
                rank.get(b.id.as_str()).copied().unwrap_or(usize::MAX),
                &b.id,
            );
            ka.cmp(&kb)
        });
        records.dedup_by(|later, first| later.id == first.id);

        let mut out = Vec::new();
        for r in &records {
            out.extend_from_slice(&r.raw);
            out.push(b'\n');
        }
        fsutil::write_atomic(&self.path, &out).map_err(Error::io(&self.path))?;
        sync_dir(&self.path)?;
        // The old handle points at the replaced inode; later appends must go to the new file.
        *file = open_append(&self.path)?;
        Ok(())
    }

    fn lock(&self) -> MutexGuard<'_, File> {
        // A panic elsewhere cannot leave the file handle itself inconsistent.
        self.file.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Complete, valid lines; the caller holds the lock.
    fn read_records(&self) -> Result<Vec<Record>> {
        let bytes =
            fsutil::read_bounded(&self.path, MAX_RESULTS_BYTES).map_err(Error::io(&self.path))?;
        let complete = match bytes.iter().rposition(|&b| b == b'\n') {
            Some(i) => &bytes[..=i],
            None => &[][..],
        };
        Ok(complete
            .split(|&b| b == b'\n')
            .filter_map(parse_record)
            .collect())
    }
}

/// A line as a record, or None if it is not a JSON object with a string id. The whole line is
/// parsed (one line at a time, dropped at once): skipping the other fields unparsed would keep
/// lines every later reader refuses (a lone surrogate escape, nesting past serde_json's limit).
fn parse_record(line: &[u8]) -> Option<Record> {
    let value: Value = serde_json::from_slice(line).ok()?;
    let IdOnly { id } = IdOnly::deserialize(value).ok()?;
    Some(Record {
        id,
        raw: line.to_vec(),
    })
}

/// Opens the store for appending: a link or a special file (a FIFO, `/dev/zero`) planted as
/// `results.jsonl` is refused.
fn open_append(path: &Path) -> Result<File> {
    fsutil::open_append(path, fsutil::OUTPUT_MODE).map_err(Error::io(path))
}

/// Makes the file end with a newline: a partial last line is cut off, or completed if it is
/// in fact a whole valid record (e.g. hand-edited without a final newline), so nothing is lost.
fn repair_tail(path: &Path, file: &File) -> Result<()> {
    let mut bytes = Vec::new();
    file.take(MAX_RESULTS_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(Error::io(path))?;
    if bytes.len() as u64 > MAX_RESULTS_BYTES {
        return Err(Error::io(path)(std::io::Error::other(format!(
            "larger than the limit of {MAX_RESULTS_BYTES} bytes"
        ))));
    }
    let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    if keep == bytes.len() {
        return Ok(());
    }
    if parse_record(&bytes[keep..]).is_some() {
        (&*file).write_all(b"\n").map_err(Error::io(path))?;
    } else {
        file.set_len(keep as u64).map_err(Error::io(path))?;
    }
    file.sync_all().map_err(Error::io(path))
}

/// Syncs the directory holding `path` so a rename survives a power cut.
fn sync_dir(path: &Path) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(Error::io(dir))
}

/// A copy of `v` whose objects were built in sorted key order, so serialisation order is
/// sorted with or without serde_json's `preserve_order` (which `qlog` switches on in the workspace).
/// The form of every line of results.jsonl; the Python binding gives its in-memory lines this
/// form too, so tables built from them have the same column order as from the file.
pub fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let mut out = Map::new();
            for k in keys {
                out.insert(k.clone(), canonical(&m[k]));
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    fn temp_dir(tag: &str) -> fsutil::PrivateDir {
        fsutil::PrivateDir::new(&format!("quiclab-store-{tag}-")).expect("create test dir")
    }
    use serde_json::json;
    use std::sync::Arc;

    fn run(id: &str, goodput: f64) -> Value {
        json!({ "id": id, "flows": [{ "goodput_bps": goodput }], "seed": 7 })
    }

    #[test]
    fn parallel_appends_are_all_complete() {
        let dir = temp_dir("par");
        let store = Arc::new(ResultsStore::open(dir.path()).unwrap());
        let handles: Vec<_> = (0..2)
            .map(|t| {
                let s = Arc::clone(&store);
                std::thread::spawn(move || {
                    for i in 0..50 {
                        s.append(&run(&format!("t{t}-{i:02}"), i as f64)).unwrap();
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let ids = store.completed_ids().unwrap();
        assert_eq!(ids.len(), 100);
        assert!(ids.contains("t0-00") && ids.contains("t1-49"));
        assert_eq!(store.load().unwrap().len(), 100);
    }

    #[test]
    fn truncated_last_line_is_ignored_then_repaired() {
        let dir = temp_dir("trunc");
        let path = dir.path().join(RESULTS_FILE);
        let good = "{\"id\":\"a\",\"x\":1}\n";
        std::fs::write(&path, format!("{good}{{\"id\":\"b\",\"x\":")).unwrap();

        let store = ResultsStore::open(dir.path()).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), good);
        assert_eq!(
            store.completed_ids().unwrap(),
            BTreeSet::from(["a".to_owned()])
        );

        store.append(&json!({"id": "b", "x": 2})).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, format!("{good}{{\"id\":\"b\",\"x\":2}}\n"));
    }

    #[test]
    fn unreadable_partial_line_is_ignored_before_repair() {
        let dir = temp_dir("partial");
        let store = ResultsStore::open(dir.path()).unwrap();
        store.append(&run("a", 1.0)).unwrap();
        // A crash mid-write after open: readers must not count the fragment.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(store.path())
            .unwrap();
        f.write_all(b"{\"id\":\"b\"}").unwrap();
        assert_eq!(store.completed_ids().unwrap().len(), 1);
    }

    #[test]
    fn whole_record_without_newline_is_kept() {
        let dir = temp_dir("nonl");
        let path = dir.path().join(RESULTS_FILE);
        std::fs::write(&path, "{\"id\":\"a\"}").unwrap();
        let store = ResultsStore::open(dir.path()).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"id\":\"a\"}\n");
        assert_eq!(store.completed_ids().unwrap().len(), 1);
    }

    #[test]
    fn append_requires_string_id() {
        let dir = temp_dir("noid");
        let store = ResultsStore::open(dir.path()).unwrap();
        assert!(matches!(
            store.append(&json!({"x": 1})),
            Err(Error::MissingId)
        ));
        assert!(matches!(
            store.append(&json!({"id": 3})),
            Err(Error::MissingId)
        ));
    }

    #[test]
    fn error_records_count_as_done_but_are_not_results() {
        let dir = temp_dir("errors");
        let store = ResultsStore::open(dir.path()).unwrap();
        store.append(&run("a", 1.0)).unwrap();
        store
            .append(&json!({"id": "b", "error": "the engine panicked: boom"}))
            .unwrap();
        let ids: Vec<String> = store.completed_ids().unwrap().into_iter().collect();
        assert_eq!(ids, ["a", "b"]);
        let loaded = store.load().unwrap();
        assert_eq!(loaded.len(), 1);
        assert_eq!(loaded[0]["id"], "a");
        assert_eq!(
            store.errors().unwrap(),
            [("b".to_string(), "the engine panicked: boom".to_string())]
        );
        store.finalize(&["b".to_owned(), "a".to_owned()]).unwrap();
        assert_eq!(store.completed_ids().unwrap().len(), 2);
    }

    #[test]
    fn keys_are_written_sorted() {
        let dir = temp_dir("keys");
        let store = ResultsStore::open(dir.path()).unwrap();
        store
            .append(&json!({"zeta": 1, "id": "r", "alpha": {"b": 1, "a": 2}}))
            .unwrap();
        let text = std::fs::read_to_string(store.path()).unwrap();
        assert_eq!(
            text,
            "{\"alpha\":{\"a\":2,\"b\":1},\"id\":\"r\",\"zeta\":1}\n"
        );
    }

    #[test]
    fn finalize_is_independent_of_finish_order() {
        let order: Vec<String> = ["p0-r0", "p0-r1", "p1-r0"].map(String::from).to_vec();
        let finish_a = ["p1-r0", "p0-r0", "p0-r1"];
        let finish_b = ["p0-r1", "p1-r0", "p0-r0", "p0-r1"]; // p0-r1 ran twice (resumed)
        let mut outputs = Vec::new();
        for finish in [&finish_a[..], &finish_b[..]] {
            let dir = temp_dir("final");
            let store = ResultsStore::open(dir.path()).unwrap();
            for id in finish {
                // Duplicates carry the same content, as a deterministic rerun would.
                store.append(&run(id, id.len() as f64 * 1.5e6)).unwrap();
            }
            store.finalize(&order).unwrap();
            assert!(!store.path().with_extension("jsonl.tmp").exists());
            outputs.push(std::fs::read(store.path()).unwrap());
            // Appends after finalize must land in the new file, not the replaced inode.
            store.append(&run("late", 1.0)).unwrap();
            assert!(store.completed_ids().unwrap().contains("late"));
        }
        assert_eq!(outputs[0], outputs[1]);
        let text = String::from_utf8(outputs.swap_remove(0)).unwrap();
        let ids: Vec<&str> = text
            .lines()
            .map(|l| {
                l.split("\"id\":\"")
                    .nth(1)
                    .unwrap()
                    .split('"')
                    .next()
                    .unwrap()
            })
            .collect();
        assert_eq!(ids, ["p0-r0", "p0-r1", "p1-r0"]);
    }

    #[test]
    fn finalize_keeps_first_duplicate_and_unlisted_ids() {
        let dir = temp_dir("dups");
        let store = ResultsStore::open(dir.path()).unwrap();
        for v in [run("z", 1.0), run("b", 1.0), run("b", 2.0), run("y", 1.0)] {
            store.append(&v).unwrap();
        }
        store.finalize(&["b".to_owned()]).unwrap();
        let runs = store.load().unwrap();
        let ids: Vec<&str> = runs.iter().map(|r| r["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["b", "y", "z"]);
        assert_eq!(runs[0]["flows"][0]["goodput_bps"], 1.0);
    }
}
