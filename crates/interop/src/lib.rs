//! quiclab's interop matrix: third-party peers (quic-go, aioquic, ngtcp2, quiche, Chromium,
//! nginx, quiclab itself) and the runner that downloads a body from every server with every
//! client, in the emulator's namespaces ([`Emulated`], over an [`emu::Topology`]) or on
//! loopback ([`Loopback`]).
//!
//! Peers are data: their descriptions (`peers/*.toml`, see `peers/README.md`) say how to
//! install-check, start and read each role through command templates; nothing here knows any
//! particular peer. [`run_matrix`] runs every applicable pair and returns a [`Matrix`] of
//! [`Cell`]s that `quiclab interop` prints as a table or JSON. [`via`] puts a server peer behind
//! a scenario's emulated path for the load tester (`quiclab load --via`).

pub mod install;
pub mod matrix;
pub mod outcome;
pub mod peer_files;
pub mod process;
pub mod ready;
pub mod runner;
pub mod spec;
pub mod template;
pub mod via;

pub use install::{check_installed, peers_home, version};
pub use matrix::{run_matrix, Cell, CellStatus, Matrix, MatrixConfig};
pub use outcome::{Download, TimeSource};
pub use peer_files::{load_dir, load_file, Peer, PeerError};
pub use process::{Emulated, Loopback, Netspace};
pub use runner::{run_pair, serve, Certs, PairConfig, PairOutcome, Server};
pub use spec::{PeerSpec, Protocol};
pub use template::Vars;

/// The protocol a client and a server would use: the best they share (h3 > h2 > http/1.1),
/// or `None` if they share none (the pair is not applicable).
pub fn common_protocol(server: &Peer, client: &Peer) -> Option<Protocol> {
    let (s, c) = (server.spec.server.as_ref()?, client.spec.client.as_ref()?);
    let mut shared: Vec<Protocol> = s
        .protocols
        .iter()
        .copied()
        .filter(|p| c.protocols.contains(p))
        .collect();
    shared.sort();
    shared.first().copied()
}

/// Picks peers by name from `all` (every peer with the role when `names` is empty), keeping
/// the order of `names`; unknown names are an error listing the known ones.
pub fn select<'a>(
    all: &'a [Peer],
    names: &[String],
    has_role: impl Fn(&Peer) -> bool,
) -> Result<Vec<&'a Peer>, PeerError> {
    if names.is_empty() {
        return Ok(all.iter().filter(|p| has_role(p)).collect());
    }
    names
        .iter()
        .map(|n| {
            all.iter()
                .find(|p| p.name() == n && has_role(p))
                .ok_or_else(|| PeerError::Unknown {
                    name: n.clone(),
                    known: all
                        .iter()
                        .filter(|p| has_role(p))
                        .map(|p| p.name().to_owned())
                        .collect::<Vec<_>>()
                        .join(", "),
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    /// The repository's own peer files.
    fn repo_peers_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../peers")
    }

    #[test]
    fn every_repository_peer_file_is_valid() {
        let peers = load_dir(&repo_peers_dir()).unwrap();
        let names: Vec<&str> = peers.iter().map(Peer::name).collect();
        for expected in [
            "quic-go",
            "aioquic",
            "ngtcp2",
            "chromium",
            "chromium-h2",
            "nginx",
            "quiclab",
        ] {
            assert!(
                names.contains(&expected),
                "{expected} missing from {names:?}"
            );
        }
    }

    #[test]
    fn protocol_choice_prefers_h3_and_excludes_disjoint_pairs() {
        let peers = load_dir(&repo_peers_dir()).unwrap();
        let get = |n: &str| peers.iter().find(|p| p.name() == n).unwrap();
        assert_eq!(
            common_protocol(get("quiclab"), get("quiclab")),
            Some(Protocol::H3)
        );
        assert_eq!(
            common_protocol(get("nginx"), get("quiclab")),
            Some(Protocol::H2)
        );
        assert_eq!(common_protocol(get("nginx"), get("quic-go")), None);
        assert_eq!(common_protocol(get("quic-go"), get("chromium-h2")), None);
    }

    #[test]
    fn select_reports_unknown_names() {
        let peers = load_dir(&repo_peers_dir()).unwrap();
        let err = select(&peers, &["nope".into()], |p| p.spec.client.is_some()).unwrap_err();
        assert!(err.to_string().contains("quic-go"), "{err}");
        let servers = select(&peers, &[], |p| p.spec.server.is_some()).unwrap();
        assert!(servers.iter().all(|p| p.spec.server.is_some()));
    }
}
