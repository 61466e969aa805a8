//! Is a peer installed? (Its programs and required files exist.) And which version is it?

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::peer_files::Peer;
use crate::template::Vars;

/// Where `scripts/install-peers.sh` puts what it builds: `$QUICLAB_PEERS` or `/opt/quiclab-peers`.
pub fn peers_home() -> PathBuf {
    std::env::var_os("QUICLAB_PEERS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/quiclab-peers"))
}

/// Finds `program` the way `execvp` would: a path with a '/' as is, otherwise on `$PATH`.
pub fn find_program(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        let p = PathBuf::from(program);
        return is_executable(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `Ok(())` if every program and required file of `peer` exists, else why not
/// (e.g. "quicgo-server not found (/opt/quiclab-peers/bin/quicgo-server)").
pub fn check_installed(peer: &Peer, vars: &Vars) -> Result<(), String> {
    let programs = [
        peer.spec.server.as_ref().map(|s| &s.command),
        peer.spec.client.as_ref().map(|c| &c.command),
    ];
    for argv in programs.into_iter().flatten() {
        let Some(first) = argv.first() else { continue };
        let program = vars.render(first).map_err(|e| e.to_string())?;
        if find_program(&program).is_none() {
            return Err(format!("{program} not found"));
        }
    }
    for file in &peer.spec.requires {
        let file = vars.render(file).map_err(|e| e.to_string())?;
        if !Path::new(&file).exists() {
            return Err(format!("{file} not found"));
        }
    }
    Ok(())
}

/// The first non-empty output line of the peer's version command, if it has one and it runs.
pub fn version(peer: &Peer, vars: &Vars) -> Option<String> {
    let argv: Vec<String> = peer
        .spec
        .version_command
        .iter()
        .map(|a| vars.render(a))
        .collect::<Result<_, _>>()
        .ok()?;
    let (program, args) = argv.split_first()?;
    let out = Command::new(program).args(args).output().ok()?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_programs_on_path_and_by_path() {
        assert!(find_program("sh").is_some());
        assert!(find_program("/bin/sh").is_some());
        assert!(find_program("quiclab-no-such-program").is_none());
        assert!(find_program("/nonexistent/sh").is_none());
    }
}
