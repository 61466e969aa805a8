//! Where a run's pcap and qlog files go, so several runs never write to the same file.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::cmd_sim::SimArgs;

/// The engine options for one run. `run_id` is `Some` when the invocation has several runs:
/// the pcap name then carries the id and qlogs go to a per-run subdirectory.
pub fn options(
    args: &SimArgs,
    run_id: Option<&str>,
    series: bool,
) -> anyhow::Result<sim::RunOptions> {
    let pcap = match &args.pcap {
        Some(file) => {
            let file = match run_id {
                Some(id) => with_run_id(file, id),
                None => file.clone(),
            };
            if let Some(parent) = file.parent().filter(|p| !p.as_os_str().is_empty()) {
                create_dir(parent)?;
            }
            Some(file)
        }
        None => None,
    };
    let qlog_dir = match &args.qlog {
        Some(dir) => {
            let dir = match run_id {
                Some(id) => dir.join(id),
                None => dir.clone(),
            };
            create_dir(&dir)?;
            Some(dir)
        }
        None => None,
    };
    Ok(sim::RunOptions {
        pcap,
        qlog_dir,
        series,
    })
}

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

fn create_dir(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create directory {}", dir.display()))
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
}
