//! The interop matrix: every client × every server, run pair by pair, then rendered as a table
//! (rows clients, columns servers) or JSON.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use crate::install::check_installed;
use crate::outcome::TimeSource;
use crate::peer_files::Peer;
use crate::process::Netspace;
use crate::runner::{run_pair, Certs, PairConfig, PairOutcome};
use crate::spec::Protocol;
use crate::template::Vars;

/// Settings shared by every pair of a matrix.
#[derive(Debug, Clone)]
pub struct MatrixConfig {
    /// Body size in bytes.
    pub size: u64,
    /// Downloads per pair.
    pub repetitions: usize,
    /// Client time limit per download.
    pub timeout: Duration,
    /// Server readiness time limit.
    pub ready_timeout: Duration,
    /// Logs go to `<out_dir>/<client>--<server>/rep<k>/{server,client}/`.
    pub out_dir: PathBuf,
    /// Test PKI.
    pub certs: Certs,
    /// The peers/ directory.
    pub peers_dir: PathBuf,
    /// install-peers.sh's prefix.
    pub peers_home: PathBuf,
    /// The quiclab binary.
    pub quiclab: PathBuf,
    /// First server port; each download gets the next one (no reuse of a just-closed port).
    pub base_port: u16,
}

/// What happened to one client × server pair.
#[derive(Debug, Clone)]
pub enum CellStatus {
    /// The pair shares no protocol, or the body is too big for the server.
    NotApplicable(String),
    /// A peer of the pair is missing (run scripts/install-peers.sh).
    NotInstalled(String),
    /// Downloads were attempted.
    Ran {
        /// The protocol used.
        protocol: Protocol,
        /// One outcome per repetition.
        runs: Vec<PairOutcome>,
    },
}

/// One cell of the matrix.
#[derive(Debug, Clone)]
pub struct Cell {
    /// Client peer name.
    pub client: String,
    /// Server peer name.
    pub server: String,
    /// Result.
    pub status: CellStatus,
}

impl Cell {
    /// True if downloads were attempted and at least one failed.
    pub fn failed(&self) -> bool {
        matches!(&self.status, CellStatus::Ran { runs, .. } if runs.iter().any(Result::is_err))
    }

    /// True if downloads were attempted and all succeeded.
    pub fn passed(&self) -> bool {
        matches!(&self.status, CellStatus::Ran { runs, .. } if runs.iter().all(Result::is_ok))
    }

    /// Mean download time of the successful runs.
    pub fn mean_seconds(&self) -> Option<f64> {
        let CellStatus::Ran { runs, .. } = &self.status else {
            return None;
        };
        let ok: Vec<f64> = runs
            .iter()
            .filter_map(|r| r.as_ref().ok())
            .map(|d| d.seconds)
            .collect();
        (!ok.is_empty()).then(|| ok.iter().sum::<f64>() / ok.len() as f64)
    }

    /// The first failure reason, if any run failed.
    pub fn first_error(&self) -> Option<&str> {
        let CellStatus::Ran { runs, .. } = &self.status else {
            return None;
        };
        runs.iter()
            .find_map(|r| r.as_ref().err())
            .map(String::as_str)
    }
}

/// A finished matrix.
#[derive(Debug, Clone)]
pub struct Matrix {
    /// Client names (rows), in order.
    pub clients: Vec<String>,
    /// Server names (columns), in order.
    pub servers: Vec<String>,
    /// Cells, row by row.
    pub cells: Vec<Cell>,
}

/// Runs every pair of `clients` × `servers` in `space`, one download at a time.
/// `progress` is told about each download before it starts.
pub fn run_matrix(
    space: &dyn Netspace,
    servers: &[&Peer],
    clients: &[&Peer],
    cfg: &MatrixConfig,
    progress: &mut dyn FnMut(&str),
) -> Matrix {
    let mut vars = Vars::default();
    vars.set("peers_home", cfg.peers_home.to_string_lossy())
        .set("peers_dir", cfg.peers_dir.to_string_lossy())
        .set("quiclab", cfg.quiclab.to_string_lossy());
    let mut port = cfg.base_port;
    let mut cells = Vec::new();
    for client in clients {
        for server in servers {
            let status = plan_cell(server, client, cfg, &vars).unwrap_or_else(|protocol| {
                let runs = (0..cfg.repetitions.max(1))
                    .map(|rep| {
                        progress(&format!(
                            "{} → {} ({}, rep {}/{}, port {port})",
                            server.name(),
                            client.name(),
                            protocol.alpn(),
                            rep + 1,
                            cfg.repetitions.max(1)
                        ));
                        let pair = PairConfig {
                            size: cfg.size,
                            protocol,
                            port,
                            timeout: cfg.timeout,
                            ready_timeout: cfg.ready_timeout,
                            out_dir: cfg
                                .out_dir
                                .join(format!("{}--{}", client.name(), server.name()))
                                .join(format!("rep{}", rep + 1)),
                            certs: cfg.certs.clone(),
                            peers_dir: cfg.peers_dir.clone(),
                            peers_home: cfg.peers_home.clone(),
                            quiclab: cfg.quiclab.clone(),
                        };
                        port = if port >= 60000 {
                            cfg.base_port
                        } else {
                            port + 1
                        };
                        run_pair(space, server, client, &pair)
                    })
                    .collect();
                CellStatus::Ran { protocol, runs }
            });
            cells.push(Cell {
                client: client.name().to_owned(),
                server: server.name().to_owned(),
                status,
            });
        }
    }
    Matrix {
        clients: clients.iter().map(|p| p.name().to_owned()).collect(),
        servers: servers.iter().map(|p| p.name().to_owned()).collect(),
        cells,
    }
}

/// `Ok(status)` if the pair is not run, `Err(protocol)` if it is (the "error" is the go-ahead).
fn plan_cell(
    server: &Peer,
    client: &Peer,
    cfg: &MatrixConfig,
    vars: &Vars,
) -> Result<CellStatus, Protocol> {
    let Some(protocol) = crate::common_protocol(server, client) else {
        return Ok(CellStatus::NotApplicable("no common protocol".into()));
    };
    if let Some(max) = server.spec.server.as_ref().and_then(|s| s.max_size) {
        if cfg.size > max {
            return Ok(CellStatus::NotApplicable(format!(
                "server serves at most {max} bytes"
            )));
        }
    }
    for peer in [server, client] {
        if let Err(why) = check_installed(peer, vars) {
            return Ok(CellStatus::NotInstalled(format!("{}: {why}", peer.name())));
        }
    }
    Err(protocol)
}

impl Matrix {
    /// The cell of `client` × `server`.
    pub fn cell(&self, client: &str, server: &str) -> Option<&Cell> {
        self.cells
            .iter()
            .find(|c| c.client == client && c.server == server)
    }

    /// True if any attempted pair failed.
    pub fn any_failed(&self) -> bool {
        self.cells.iter().any(Cell::failed)
    }

    /// A text table (rows clients, columns servers) followed by numbered failure reasons.
    pub fn render_text(&self) -> String {
        let mut notes: Vec<String> = Vec::new();
        let mut rows: Vec<Vec<String>> = Vec::new();
        let mut header = vec!["client \\ server".to_owned()];
        header.extend(self.servers.iter().cloned());
        rows.push(header);
        for client in &self.clients {
            let mut row = vec![client.clone()];
            for server in &self.servers {
                let text = match self.cell(client, server) {
                    None => String::new(),
                    Some(cell) => cell_text(cell, &mut notes),
                };
                row.push(text);
            }
            rows.push(row);
        }
        let widths: Vec<usize> = (0..rows[0].len())
            .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
            .collect();
        let mut out = String::new();
        for (k, row) in rows.iter().enumerate() {
            let line: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(t, w)| format!("{t}{}", " ".repeat(w - t.chars().count())))
                .collect();
            let _ = writeln!(out, "{}", line.join("  ").trim_end());
            if k == 0 {
                let total = widths.iter().sum::<usize>() + 2 * (widths.len() - 1);
                let _ = writeln!(out, "{}", "─".repeat(total));
            }
        }
        for (i, n) in notes.iter().enumerate() {
            let _ = writeln!(out, "[{}] {n}", i + 1);
        }
        out
    }

    /// Machine-readable form: one object per pair.
    pub fn to_json(&self) -> serde_json::Value {
        let pairs: Vec<serde_json::Value> = self.cells.iter().map(cell_json).collect();
        serde_json::json!({
            "clients": self.clients,
            "servers": self.servers,
            "pairs": pairs,
            "failed": self.any_failed(),
        })
    }
}

fn cell_text(cell: &Cell, notes: &mut Vec<String>) -> String {
    let pair = format!("{} → {}", cell.server, cell.client);
    match &cell.status {
        CellStatus::NotApplicable(_) => "–".into(),
        CellStatus::NotInstalled(why) => {
            notes.push(format!(
                "{pair}: not installed ({why}); run scripts/install-peers.sh"
            ));
            format!("not installed [{}]", notes.len())
        }
        CellStatus::Ran { protocol, runs } => {
            let ok = runs.iter().filter(|r| r.is_ok()).count();
            let runner_timed = runs
                .iter()
                .filter_map(|r| r.as_ref().ok())
                .any(|d| d.time_source == TimeSource::Runner);
            let mark = if runner_timed { "*" } else { "" };
            let proto = if *protocol == Protocol::H3 {
                String::new()
            } else {
                format!(" {}", protocol.alpn())
            };
            if let Some(err) = cell.first_error() {
                notes.push(format!("{pair} ({}): {err}", protocol.alpn()));
                let partial = if ok > 0 {
                    format!(" {ok}/{}", runs.len())
                } else {
                    String::new()
                };
                format!("✗{partial} [{}]", notes.len())
            } else {
                let mean = cell.mean_seconds().unwrap_or(0.0);
                format!("✓ {mean:.2} s{mark}{proto}")
            }
        }
    }
}

fn cell_json(cell: &Cell) -> serde_json::Value {
    let (status, protocol, runs, reason) = match &cell.status {
        CellStatus::NotApplicable(why) => ("not_applicable", None, Vec::new(), Some(why.clone())),
        CellStatus::NotInstalled(why) => ("not_installed", None, Vec::new(), Some(why.clone())),
        CellStatus::Ran { protocol, runs } => {
            let runs = runs
                .iter()
                .map(|r| match r {
                    Ok(d) => serde_json::json!({
                        "ok": true, "bytes": d.bytes, "seconds": d.seconds,
                        "timed_by": match d.time_source { TimeSource::Peer => "peer", TimeSource::Runner => "runner" },
                    }),
                    Err(e) => serde_json::json!({ "ok": false, "error": e }),
                })
                .collect();
            let status = if cell.failed() { "failed" } else { "passed" };
            (
                status,
                Some(protocol.alpn()),
                runs,
                cell.first_error().map(str::to_owned),
            )
        }
    };
    serde_json::json!({
        "client": cell.client,
        "server": cell.server,
        "status": status,
        "protocol": protocol,
        "mean_seconds": cell.mean_seconds(),
        "reason": reason,
        "runs": runs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Download;

    fn matrix() -> Matrix {
        let ok = Download {
            bytes: 10,
            seconds: 1.5,
            time_source: TimeSource::Peer,
        };
        Matrix {
            clients: vec!["a".into(), "b".into()],
            servers: vec!["x".into(), "y".into()],
            cells: vec![
                Cell {
                    client: "a".into(),
                    server: "x".into(),
                    status: CellStatus::Ran {
                        protocol: Protocol::H3,
                        runs: vec![
                            Ok(ok.clone()),
                            Ok(Download {
                                seconds: 2.5,
                                ..ok.clone()
                            }),
                        ],
                    },
                },
                Cell {
                    client: "a".into(),
                    server: "y".into(),
                    status: CellStatus::NotApplicable("no common protocol".into()),
                },
                Cell {
                    client: "b".into(),
                    server: "x".into(),
                    status: CellStatus::Ran {
                        protocol: Protocol::H2,
                        runs: vec![Err("timeout after 1 s".into())],
                    },
                },
                Cell {
                    client: "b".into(),
                    server: "y".into(),
                    status: CellStatus::NotInstalled("y: y-server not found".into()),
                },
            ],
        }
    }

    #[test]
    fn text_table_has_marks_and_notes() {
        let text = matrix().render_text();
        assert!(text.contains("✓ 2.00 s"), "{text}");
        assert!(text.contains("–"), "{text}");
        assert!(text.contains("✗ [1]"), "{text}");
        assert!(text.contains("[1] x → b (h2): timeout after 1 s"), "{text}");
        assert!(text.contains("not installed [2]"), "{text}");
        assert!(text.contains("install-peers.sh"), "{text}");
    }

    #[test]
    fn failure_is_detected_and_in_json() {
        let m = matrix();
        assert!(m.any_failed());
        let j = m.to_json();
        assert_eq!(j["pairs"][0]["status"], "passed");
        assert_eq!(j["pairs"][0]["mean_seconds"], 2.0);
        assert_eq!(j["pairs"][2]["status"], "failed");
        assert_eq!(j["pairs"][3]["status"], "not_installed");
    }
}
