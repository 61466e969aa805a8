//! `sweep.json` beside results.jsonl: what the results were computed from.
//!
//! Resuming keys on run ids (`p0-r1`), which say nothing about the scenario. Without this
//! record, resuming after editing the scenario would silently mix results of two different
//! experiments in one summary. Repetitions may change (adding reps to a sweep is legitimate
//! and keeps existing seeds), so only the base seed and the sweep points are compared.
//!
//! The record is streamed, both when written and when compared with the stored one: a sweep
//! at the point limit has a record of about a gigabyte, and building it as a `serde_json::Value`
//! (then parsing the stored one) took about 6 GB of memory. The stored file is compared byte
//! for byte with the serialisation of the current sweep, in the same format as it is written.

use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

use scenario::model::SweepPoint;
use scenario::LoadedScenario;
use serde::Serialize;

use crate::error::ExperimentError;
use crate::files::create_dir;
use results::layout::{DECLARED_FIGURES_FILE, MANIFEST_FILE};
use scenario::model::FigureSpec;

/// The record: borrowed, so serialising it copies nothing. Field order is the file's key order.
#[derive(Debug, Serialize)]
pub struct Manifest<'a> {
    /// The scenario's name.
    pub scenario: &'a str,
    /// The base seed every run seed derives from.
    pub base_seed: u64,
    /// The sweep points, each a fully resolved scenario.
    pub points: &'a [SweepPoint],
}

/// The record for a loaded scenario.
pub fn manifest(loaded: &LoadedScenario) -> Manifest<'_> {
    Manifest {
        scenario: &loaded.name,
        base_seed: loaded.base_seed,
        points: &loaded.points,
    }
}

/// Writes `manifest` in the file's format: pretty JSON and a final newline.
fn write_to<W: Write>(manifest: &Manifest<'_>, out: &mut W) -> Result<(), ExperimentError> {
    serde_json::to_writer_pretty(&mut *out, manifest).map_err(|source| ExperimentError::Json {
        what: "cannot serialise the manifest".into(),
        source,
    })?;
    out.write_all(b"\n").map_err(|e| ExperimentError::Json {
        what: "cannot serialise the manifest".into(),
        source: serde_json::Error::io(e),
    })
}

/// When resuming, checks that `dir` was produced by the same scenario; then (re)writes the record.
pub fn check_and_write(
    dir: &Path,
    loaded: &LoadedScenario,
    resume: bool,
) -> Result<(), ExperimentError> {
    let path = dir.join(MANIFEST_FILE);
    let current = manifest(loaded);
    if resume && path.exists() {
        let file = fsutil::open_read(&path).map_err(ExperimentError::io("cannot read", &path))?;
        let mut same = SameAs::new(BufReader::new(file));
        // A mismatch stops the comparison early as a write error; only I/O errors matter here.
        let _ = write_to(&current, &mut same);
        if let Some(e) = same.error.take() {
            return Err(ExperimentError::io("cannot read", &path)(e));
        }
        if !same.matches_to_the_end() {
            return Err(ExperimentError::DifferentSweep {
                dir: dir.to_path_buf(),
                manifest: path,
            });
        }
        // Identical: nothing to rewrite.
        return Ok(());
    }
    create_dir(dir)?;
    let mut out = BufWriter::new(crate::files::atomic_file(&path)?);
    write_to(&current, &mut out)?;
    out.into_inner()
        .map_err(|e| ExperimentError::io("cannot write", &path)(e.into_error()))?
        .commit()
        .map_err(ExperimentError::io("cannot write", &path))
}

/// Writes `figures.json`: the figures the points declare (each distinct spec once) and, per
/// point, the indices of its own; removes a stale one when no point declares any.
pub fn write_declared_figures(dir: &Path, loaded: &LoadedScenario) -> Result<(), ExperimentError> {
    let path = dir.join(DECLARED_FIGURES_FILE);
    let mut specs: Vec<&FigureSpec> = Vec::new();
    let mut points: Vec<Vec<usize>> = Vec::new();
    for p in &loaded.points {
        let mut mine = Vec::new();
        for f in &p.scenario.figures {
            let k = match specs.iter().position(|s| *s == f) {
                Some(k) => k,
                None => {
                    specs.push(f);
                    specs.len() - 1
                }
            };
            mine.push(k);
        }
        points.push(mine);
    }
    if specs.is_empty() {
        return match std::fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_file() => {
                std::fs::remove_file(&path).map_err(ExperimentError::io("cannot remove", &path))
            }
            _ => Ok(()),
        };
    }
    #[derive(Serialize)]
    struct Declared<'a> {
        figures: Vec<&'a FigureSpec>,
        points: Vec<Vec<usize>>,
    }
    let mut text = serde_json::to_string_pretty(&Declared {
        figures: specs,
        points,
    })
    .map_err(|source| ExperimentError::Json {
        what: "cannot serialise the declared figures".into(),
        source,
    })?;
    text.push('\n');
    crate::files::write_atomic(&path, text.as_bytes())
}

/// A writer that compares what is written with a reader's bytes, holding one chunk at a time.
struct SameAs<R> {
    stored: R,
    equal: bool,
    error: Option<std::io::Error>,
    chunk: Vec<u8>,
}

impl<R: Read> SameAs<R> {
    fn new(stored: R) -> Self {
        SameAs {
            stored,
            equal: true,
            error: None,
            chunk: Vec::new(),
        }
    }

    /// Whether everything written matched and the stored bytes end there too.
    fn matches_to_the_end(&mut self) -> bool {
        let mut byte = [0u8; 1];
        self.equal && self.error.is_none() && matches!(self.stored.read(&mut byte), Ok(0))
    }
}

impl<R: Read> Write for SameAs<R> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if !self.equal {
            return Err(std::io::Error::other("differs"));
        }
        self.chunk.resize(buf.len(), 0);
        if let Err(e) = self.stored.read_exact(&mut self.chunk) {
            self.equal = false;
            if e.kind() != std::io::ErrorKind::UnexpectedEof {
                self.error = Some(e);
            }
            return Err(std::io::Error::other("differs"));
        }
        if self.chunk != buf {
            self.equal = false;
            return Err(std::io::Error::other("differs"));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loaded(delays: &str) -> LoadedScenario {
        scenario::parse_str(
            "[[flow]]\napp = \"download\"\nsize = \"1MB\"\n",
            "m.toml",
            Path::new("."),
            &[],
            &[format!("link.delay={delays}")],
        )
        .expect("valid")
    }

    #[test]
    fn the_streamed_record_is_byte_identical_to_the_value_it_replaces() {
        // Directories written before the record was streamed must still resume.
        let l = loaded("5ms,20ms");
        let old = {
            let points = serde_json::to_value(&l.points).expect("points");
            let v = serde_json::json!({
                "scenario": l.name,
                "base_seed": l.base_seed,
                "points": points,
            });
            let mut t = serde_json::to_string_pretty(&v).expect("pretty");
            t.push('\n');
            t
        };
        let mut new = Vec::new();
        write_to(&manifest(&l), &mut new).expect("write");
        assert_eq!(String::from_utf8(new).expect("utf-8"), old);
    }

    #[test]
    fn resume_accepts_the_same_sweep_only() {
        let tmp = fsutil::PrivateDir::new("quiclab-manifest-").expect("dir");
        let dir = tmp.path().join("out");
        check_and_write(&dir, &loaded("5ms,20ms"), false).expect("write");
        check_and_write(&dir, &loaded("5ms,20ms"), true).expect("same sweep");
        for other in ["5ms,21ms", "5ms", "5ms,20ms,30ms"] {
            let e = check_and_write(&dir, &loaded(other), true).expect_err(other);
            assert!(matches!(e, ExperimentError::DifferentSweep { .. }), "{e}");
        }
        tmp.remove().expect("clean up");
    }
}
