//! Network-namespace plumbing: `ip` commands, entering a namespace from a thread, sysctls.
//!
//! Namespaces are created with `ip netns add`, which bind-mounts them under [`NETNS_DIR`]; that
//! file is what threads and child processes `setns(2)` into.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::error::EmuError;

/// Where `ip netns` keeps its namespace handles.
pub const NETNS_DIR: &str = "/run/netns";

/// Runs `ip ARGS...`; a non-zero exit becomes an error carrying its stderr.
pub fn ip(args: &[&str]) -> Result<String, EmuError> {
    run_tool("ip", args)
}

/// Runs a tool to completion and returns its stdout.
pub fn run_tool(program: &str, args: &[&str]) -> Result<String, EmuError> {
    let command = format!("{program} {}", args.join(" "));
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| EmuError::Command {
            command: command.clone(),
            message: format!("cannot run {program}: {e}"),
        })?;
    if !out.status.success() {
        return Err(EmuError::Command {
            command,
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Opens the handle of namespace `name` (close-on-exec).
pub fn open(name: &str) -> Result<File, EmuError> {
    let path = Path::new(NETNS_DIR).join(name);
    File::open(&path).map_err(|e| EmuError::io(format!("cannot open {}", path.display()), e))
}

/// Moves the calling thread (only it) into the namespace behind `fd`.
pub fn enter(ns: &File) -> Result<(), EmuError> {
    // SAFETY: setns on a valid namespace fd affects only the calling thread's network namespace.
    let rc = unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) };
    if rc != 0 {
        return Err(EmuError::last_os("setns(CLONE_NEWNET)"));
    }
    Ok(())
}

/// Runs `f` on a fresh thread inside namespace `name` and returns its result. Sockets created
/// there stay in that namespace after the thread ends.
pub fn in_netns<R: Send>(
    name: &str,
    f: impl FnOnce() -> Result<R, EmuError> + Send,
) -> Result<R, EmuError> {
    let ns = open(name)?;
    std::thread::scope(|s| {
        s.spawn(|| {
            enter(&ns)?;
            f()
        })
        .join()
        .unwrap_or_else(|_| {
            Err(EmuError::Forwarder(
                "namespace helper thread panicked".into(),
            ))
        })
    })
}

/// Writes a sysctl of the calling thread's namespace (`net.ipv6.conf.all.disable_ipv6`).
pub fn write_sysctl(key: &str, value: &str) -> Result<(), EmuError> {
    let path = Path::new("/proc/sys").join(key.replace('.', "/"));
    fsutil::write_existing(&path, value.as_bytes())
        .map_err(|e| EmuError::io(format!("cannot set {key}={value}"), e))
}

/// Names of every namespace `ip netns` knows.
pub fn list() -> Result<Vec<String>, EmuError> {
    let dir = match std::fs::read_dir(NETNS_DIR) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(EmuError::io(format!("cannot list {NETNS_DIR}"), e)),
    };
    let mut names: Vec<String> = dir
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    Ok(names)
}

/// Process ids living in namespace `name` (empty if it is gone).
pub fn pids(name: &str) -> Vec<i32> {
    ip(&["netns", "pids", name])
        .map(|out| {
            out.split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Kills every process in namespace `name` with SIGKILL, then deletes the namespace.
pub fn destroy(name: &str) -> Result<(), EmuError> {
    for pid in pids(name) {
        // SAFETY: plain kill(2); a pid that already exited only yields ESRCH.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    match ip(&["netns", "del", name]) {
        Ok(_) => Ok(()),
        Err(_) if !Path::new(NETNS_DIR).join(name).exists() => Ok(()),
        Err(e) => Err(e),
    }
}

/// Whether the process runs as root (namespaces and raw sockets need it).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}
