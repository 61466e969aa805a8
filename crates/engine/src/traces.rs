//! Where a run's trace files go, so several runs of one invocation never write to the same file.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// `trace.pcap` + `p0-r0` → `trace-p0-r0.pcap` (no extension: `trace-p0-r0`).
pub fn with_run_id(file: &Path, id: &str) -> PathBuf {
    let mut name = OsString::from(file.file_stem().unwrap_or_default());
    name.push("-");
    name.push(id);
    if let Some(ext) = file.extension() {
        name.push(".");
        name.push(ext);
    }
    file.with_file_name(name)
}

/// A trace file of one run: `file` itself for a lone run, the id inserted with several.
pub fn file_for(file: &Path, trace_id: Option<&str>) -> PathBuf {
    match trace_id {
        Some(id) => with_run_id(file, id),
        None => file.to_path_buf(),
    }
}

/// A trace directory of one run: `dir` itself for a lone run, `dir/<id>` with several.
pub fn dir_for(dir: &Path, trace_id: Option<&str>) -> PathBuf {
    match trace_id {
        Some(id) => dir.join(id),
        None => dir.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_id_goes_before_the_extension() {
        assert_eq!(
            with_run_id(Path::new("out/trace.pcap"), "p0-r0"),
            Path::new("out/trace-p0-r0.pcap")
        );
        assert_eq!(
            with_run_id(Path::new("trace"), "p1-r2"),
            Path::new("trace-p1-r2")
        );
        assert_eq!(
            with_run_id(Path::new("a.b.pcap"), "p0-r1"),
            Path::new("a.b-p0-r1.pcap")
        );
    }

    #[test]
    fn lone_runs_keep_the_given_names() {
        assert_eq!(file_for(Path::new("t.pcap"), None), Path::new("t.pcap"));
        assert_eq!(dir_for(Path::new("q"), None), Path::new("q"));
        assert_eq!(dir_for(Path::new("q"), Some("p0-r1")), Path::new("q/p0-r1"));
    }
}
