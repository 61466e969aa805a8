//! The results directory's file operations, through `fsutil` (no links followed, regular files
//! only), with the path in every error.

use std::path::Path;

use crate::error::ExperimentError;

/// Writes `bytes` to `path` through a temporary file and a rename, so readers (and a resumed
/// sweep after a crash) see either the old file or the whole new one, never half of it; a link
/// planted at `path` is replaced, not followed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ExperimentError> {
    fsutil::write_atomic(path, bytes).map_err(ExperimentError::io("cannot write", path))
}

/// Starts an atomic replacement of `path` (see [`fsutil::AtomicFile`]).
pub(crate) fn atomic_file(path: &Path) -> Result<fsutil::AtomicFile, ExperimentError> {
    fsutil::AtomicFile::new(path).map_err(ExperimentError::io("cannot create", path))
}

/// Creates `dir` (and its parents); a link planted as `dir` itself is refused.
pub(crate) fn create_dir(dir: &Path) -> Result<(), ExperimentError> {
    fsutil::create_dir_all(dir).map_err(ExperimentError::io("cannot create directory", dir))
}

/// The whole of a small record file of the results directory (`sweep.json`, `shard.json`),
/// refusing links and special files; `None` when absent.
pub(crate) fn read_record(path: &Path) -> Result<Option<Vec<u8>>, ExperimentError> {
    match fsutil::read_bounded(path, MAX_RECORD_BYTES) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ExperimentError::io("cannot read", path)(e)),
    }
}

/// Largest `sweep.json` or `shard.json` read back (a sweep's record holds its scenario text,
/// at most `scenario::MAX_SCENARIO_BYTES`, and its sweep points).
pub const MAX_RECORD_BYTES: u64 = 64 << 20;

/// Largest `series/<id>.csv` read back (when merging shards): a run has at most
/// `scenario::limits::MAX_SERIES_ROWS_PER_RUN` rows of well under 1 kB each.
pub const MAX_SERIES_FILE_BYTES: u64 = 1 << 30;

/// A shard's whole `results.jsonl` as text (see [`results::store::MAX_RESULTS_BYTES`]).
pub(crate) fn read_results(path: &Path) -> Result<String, ExperimentError> {
    fsutil::read_to_string_bounded(path, results::store::MAX_RESULTS_BYTES)
        .map_err(ExperimentError::io("cannot read", path))
}
