//! Running one server × client download: start the server, wait until it is ready, run the
//! client, check and time the download, stop the server. Logs stay in the pair's directory.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::outcome::{self, ClientRun, Download};
use crate::peer_files::Peer;
use crate::process::{Netspace, Proc};
use crate::ready::{wait_ready, ReadyContext};
use crate::spec::{ClientSpec, Protocol, ServerSpec};
use crate::template::Vars;

/// Files of the test PKI (see certs/ in the repository).
#[derive(Debug, Clone)]
pub struct Certs {
    /// Leaf certificate.
    pub cert: PathBuf,
    /// Leaf private key.
    pub key: PathBuf,
    /// Leaf + CA.
    pub chain: PathBuf,
    /// CA certificate.
    pub ca: PathBuf,
    /// Base64 SHA-256 of the leaf's SPKI.
    pub spki: String,
}

impl Certs {
    /// The PKI in `dir` (`server.pem`, `server.key`, `server-chain.pem`, `ca.pem`, `server.spki`).
    pub fn from_dir(dir: &Path) -> std::io::Result<Certs> {
        let spki_path = dir.join("server.spki");
        let spki = std::fs::read_to_string(&spki_path)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", spki_path.display())))?
            .trim()
            .to_owned();
        let certs = Certs {
            cert: dir.join("server.pem"),
            key: dir.join("server.key"),
            chain: dir.join("server-chain.pem"),
            ca: dir.join("ca.pem"),
            spki,
        };
        for p in [&certs.cert, &certs.key, &certs.chain, &certs.ca] {
            if !p.is_file() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("{} not found", p.display()),
                ));
            }
        }
        Ok(certs)
    }
}

/// Everything one download needs besides the two peers.
#[derive(Debug, Clone)]
pub struct PairConfig {
    /// Body size in bytes.
    pub size: u64,
    /// Protocol of this pair.
    pub protocol: Protocol,
    /// Server port.
    pub port: u16,
    /// Client time limit.
    pub timeout: Duration,
    /// How long a server may take to become ready.
    pub ready_timeout: Duration,
    /// Directory for this run's logs (created).
    pub out_dir: PathBuf,
    /// Test PKI.
    pub certs: Certs,
    /// The peers/ directory.
    pub peers_dir: PathBuf,
    /// `scripts/install-peers.sh`'s prefix.
    pub peers_home: PathBuf,
    /// The quiclab binary (for the quiclab peer).
    pub quiclab: PathBuf,
}

/// The outcome of one download.
pub type PairOutcome = Result<Download, String>;

/// Runs one download of `cfg.size` bytes from `server` to `client` in `space`.
pub fn run_pair(
    space: &dyn Netspace,
    server: &Peer,
    client: &Peer,
    cfg: &PairConfig,
) -> PairOutcome {
    let (Some(server_spec), Some(client_spec)) = (&server.spec.server, &client.spec.client) else {
        return Err("peer lacks the server or client role".into());
    };
    let server_dir = cfg.out_dir.join("server");
    let client_dir = cfg.out_dir.join("client");
    for d in [&server_dir, &client_dir] {
        fsutil::create_dir_all(d.join("qlog")).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let client_vars = vars(space, server_spec, cfg, &client_dir);

    let mut server_proc = serve(space, server, &server_dir, cfg)?;
    let result = run_client(space, client_spec, &client_vars, cfg, &client_dir);
    let server_died = server_proc.proc.try_wait().is_some();
    server_proc.proc.stop(Duration::from_secs(2));
    match result {
        Err(e) if server_died => Err(with_log_tail(
            format!("{e} (server had exited)"),
            &server_dir.join("stderr.log"),
        )),
        other => other,
    }
}

/// A peer's server, started and ready.
#[derive(Debug)]
pub struct Server {
    /// The server process (its group is stopped when this is dropped).
    pub proc: Proc,
    /// The URL of its `cfg.size`-byte body (`https://{server_addr}:{port}{path}`).
    pub url: String,
}

/// Starts `server`'s server role in `space` with its logs, rendered files and docroot in `dir`
/// (created), and waits until it is ready (the peer's `ready` rule, at most
/// `cfg.ready_timeout`). The load tester uses this to put a peer behind an emulated path; a
/// download pair ([`run_pair`]) starts its server the same way.
pub fn serve(
    space: &dyn Netspace,
    server: &Peer,
    dir: &Path,
    cfg: &PairConfig,
) -> Result<Server, String> {
    let Some(spec) = &server.spec.server else {
        return Err(format!("{} has no server role", server.name()));
    };
    fsutil::create_dir_all(dir.join("qlog")).map_err(|e| format!("{}: {e}", dir.display()))?;
    let server_vars = vars(space, spec, cfg, dir);
    let mut proc = start_server(space, server, spec, &server_vars, cfg, dir)?;
    let logs = [dir.join("stdout.log"), dir.join("stderr.log")];
    let log_refs: Vec<&Path> = logs.iter().map(PathBuf::as_path).collect();
    let ctx = ReadyContext {
        port: cfg.port,
        transport: cfg.protocol.transport(),
        logs: &log_refs,
        vars: &server_vars,
    };
    if let Err(e) = wait_ready(&mut proc, &spec.ready, &ctx, cfg.ready_timeout) {
        proc.stop(Duration::from_secs(1));
        return Err(with_log_tail(e, &logs[1]));
    }
    let url = server_vars
        .get("url")
        .map(str::to_owned)
        .ok_or("internal: no url placeholder")?;
    Ok(Server { proc, url })
}

fn vars(space: &dyn Netspace, server: &ServerSpec, cfg: &PairConfig, dir: &Path) -> Vars {
    let mut v = Vars::default();
    let addr = space.server_addr().to_string();
    let size = cfg.size.to_string();
    let str_of = |p: &Path| p.to_string_lossy().into_owned();
    v.set("server_addr", &addr)
        .set("port", cfg.port.to_string())
        .set("size", &size)
        .set("http", cfg.protocol.version())
        .set("alpn", cfg.protocol.alpn())
        .set("cert", str_of(&cfg.certs.cert))
        .set("key", str_of(&cfg.certs.key))
        .set("chain", str_of(&cfg.certs.chain))
        .set("ca", str_of(&cfg.certs.ca))
        .set("spki", &cfg.certs.spki)
        .set("out_dir", str_of(dir))
        .set("docroot", str_of(&dir.join("docroot")))
        .set("keylog", str_of(&dir.join("keylog.txt")))
        .set("qlog_dir", str_of(&dir.join("qlog")))
        .set("peers_dir", str_of(&cfg.peers_dir))
        .set("peers_home", str_of(&cfg.peers_home))
        .set("quiclab", str_of(&cfg.quiclab))
        .set("timeout_s", cfg.timeout.as_secs().max(1).to_string());
    // The path may use {size}; the URL uses the path.
    let path = v
        .render(&server.path)
        .unwrap_or_else(|_| format!("/{size}"));
    let url = format!("https://{}:{}{}", url_host(&addr), cfg.port, path);
    v.set("path", path).set("url", url);
    v
}

/// IPv6 literals need brackets in URLs.
fn url_host(addr: &str) -> String {
    if addr.contains(':') {
        format!("[{addr}]")
    } else {
        addr.to_owned()
    }
}

fn render_argv(argv: &[String], vars: &Vars) -> Result<Vec<String>, String> {
    argv.iter()
        .map(|a| vars.render(a).map_err(|e| e.to_string()))
        .collect()
}

fn command(
    argv: &[String],
    env: &std::collections::BTreeMap<String, String>,
    vars: &Vars,
    dir: &Path,
) -> Result<Command, String> {
    let argv = render_argv(argv, vars)?;
    let (program, args) = argv.split_first().ok_or("empty command")?;
    let mut cmd = Command::new(program);
    cmd.args(args).current_dir(dir).stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, vars.render(v).map_err(|e| e.to_string())?);
    }
    let log = |name: &str| {
        fsutil::create_replacing(&dir.join(name), 0o600).map_err(|e| format!("{name}: {e}"))
    };
    cmd.stdout(log("stdout.log")?).stderr(log("stderr.log")?);
    // Keep the exact command for diagnosis.
    let line = argv
        .iter()
        .map(|a| shell_quote(a))
        .collect::<Vec<_>>()
        .join(" ");
    write_file(&dir.join("command.txt"), (line + "\n").as_bytes()).map_err(|e| e.to_string())?;
    Ok(cmd)
}

fn shell_quote(a: &str) -> String {
    if !a.is_empty()
        && a.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@%+".contains(c))
    {
        a.to_owned()
    } else {
        format!("'{}'", a.replace('\'', "'\\''"))
    }
}

fn start_server(
    space: &dyn Netspace,
    peer: &Peer,
    spec: &ServerSpec,
    vars: &Vars,
    cfg: &PairConfig,
    dir: &Path,
) -> Result<Proc, String> {
    if spec.docroot {
        write_body(&dir.join("docroot"), cfg.size).map_err(|e| format!("docroot: {e}"))?;
    }
    for f in &spec.files {
        let template = std::fs::read_to_string(peer.dir.join(&f.template))
            .map_err(|e| format!("{}: {e}", f.template))?;
        let text = vars
            .render(&template)
            .map_err(|e| format!("{}: {e}", f.template))?;
        let to = dir.join(vars.render(&f.to).map_err(|e| e.to_string())?);
        write_file(&to, text.as_bytes()).map_err(|e| format!("{}: {e}", to.display()))?;
    }
    let mut cmd = command(&spec.command, &spec.env, vars, dir)?;
    space
        .spawn_server(&mut cmd)
        .map_err(|e| format!("cannot start server: {e}"))
}

/// Writes `contents` to a new file at `path`, replacing an existing file without following a
/// link (see [`fsutil::create_replacing`]).
fn write_file(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    fsutil::create_replacing(path, 0o600)?.write_all(contents)
}

/// Writes `docroot/<size>`, exactly `size` bytes.
fn write_body(docroot: &Path, size: u64) -> std::io::Result<()> {
    fsutil::create_dir_all(docroot)?;
    let mut f = std::io::BufWriter::new(fsutil::create_replacing(
        &docroot.join(size.to_string()),
        0o600,
    )?);
    let chunk: Vec<u8> = (0..65536u32).map(|i| b'a' + (i % 26) as u8).collect();
    let mut left = size;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..n])?;
        left -= n as u64;
    }
    f.flush()
}

fn run_client(
    space: &dyn Netspace,
    spec: &ClientSpec,
    vars: &Vars,
    cfg: &PairConfig,
    dir: &Path,
) -> PairOutcome {
    for d in &spec.mkdirs {
        let d = vars.render(d).map_err(|e| e.to_string())?;
        fsutil::create_dir_all(&d).map_err(|e| format!("{d}: {e}"))?;
    }
    let mut cmd = command(&spec.command, &spec.env, vars, dir)?;
    let start = Instant::now();
    let mut proc = space
        .spawn_client(&mut cmd)
        .map_err(|e| format!("cannot start client: {e}"))?;
    let status = proc.wait_timeout(cfg.timeout);
    let elapsed = start.elapsed();
    if status.is_none() {
        proc.stop(Duration::from_secs(1));
        return Err(format!("timeout after {} s", cfg.timeout.as_secs_f64()));
    }
    // Helpers of the client (Chromium's) must not outlive it.
    proc.stop(Duration::from_millis(200));
    let exit_code = status.flatten().and_then(|s| s.code());
    let read = |name: &str| {
        String::from_utf8_lossy(&std::fs::read(dir.join(name)).unwrap_or_default()).into_owned()
    };
    let (stdout, stderr) = (read("stdout.log"), read("stderr.log"));
    let run = ClientRun {
        stdout: &stdout,
        stderr: &stderr,
        exit_code,
        elapsed,
    };
    outcome::read_download(spec, vars, &run, cfg.size)
}

/// Appends the last line of a server log to a failure reason.
fn with_log_tail(reason: String, log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    match text.lines().map(str::trim).rfind(|l| !l.is_empty()) {
        Some(l) => {
            let l: String = l.chars().take(100).collect();
            format!("{reason}: {l}")
        }
        None => reason,
    }
}
