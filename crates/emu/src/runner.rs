//! One scenario run in real time: a topology with one client/server pair per flow, `quiclab
//! serve` in every server namespace, `quiclab get` in every client namespace at the flow's
//! start, and their typed reports turned into the results schema.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ::results::{Cross, FlowConfig, Run};
use endpoints::fetch::FetchReport;
use endpoints::server::stats_log::{self, unix_now};
use scenario::model::{FlowSpec, RunSpec, Scenario, SweepPoint};

use crate::collect::{self, ClientOutcome};
use crate::cross::CrossTraffic;
use crate::error::EmuError;
use crate::forwarder::{ForwarderReport, WaitMode};
use crate::kernel_tcp;
use crate::mapping;
use crate::pep::{self, PepOutcome, PepSite};
use crate::probes::Probes;
use crate::topology::{ChildHandle, Topology, TopologySpec};

/// How long servers may take to bind.
const SERVER_READY_TIMEOUT: Duration = Duration::from_secs(15);
/// Time past `run.duration` a client gets to print its result after its own timeout.
const CLIENT_GRACE: Duration = Duration::from_secs(5);

/// Where a run's files go and how it is driven.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The `quiclab` binary that provides `serve` and `get`.
    pub quiclab: PathBuf,
    /// Scratch directory of this run (ready files, server statistics, endpoint logs). `None`: a
    /// private directory (mode 0700, random name `quiclab-emu-<run id>-<random>` in `$TMPDIR`,
    /// see [`fsutil::PrivateDir`]) that is removed when the run ends, however it ends; after a
    /// SIGKILL, [`crate::cleanup_stale`] removes it once the run's lock shows it dead.
    pub work_dir: Option<PathBuf>,
    /// Bottleneck captures (`client-side.pcap`, `server-side.pcap`).
    pub capture_dir: Option<PathBuf>,
    /// TLS key log (clients and servers append to it).
    pub keylog: Option<PathBuf>,
    /// qlog directory (one file per QUIC connection, per endpoint).
    pub qlog_dir: Option<PathBuf>,
    /// Returns true to abandon the run (Ctrl-C, SIGTERM): the topology is torn down and an
    /// error returned.
    pub stop: Option<fn() -> bool>,
    /// Forwarder waiting strategy.
    pub wait: WaitMode,
}

/// A finished run: the result plus the forwarder's own counters.
#[derive(Debug, Clone)]
pub struct EmuRun {
    /// The same schema as `quiclab sim` produces.
    pub result: Run,
    /// Forwarder counters (parse errors, non-IP frames, capture files, …).
    pub forwarder: ForwarderReport,
    /// Approximations the scenario needed.
    pub warnings: Vec<String>,
    /// Each PEP of the run (flows with `flow.pep`): effective settings and relayed connections.
    pub peps: Vec<PepOutcome>,
}

fn stopped(opts: &RunOptions) -> bool {
    opts.stop.is_some_and(|f| f())
}

fn interrupted() -> EmuError {
    EmuError::Interrupted
}

/// Runs one repetition of one sweep point.
pub fn run(point: &SweepPoint, spec: &RunSpec, opts: &RunOptions) -> Result<EmuRun, EmuError> {
    let s = &point.scenario;
    let warnings = mapping::check_supported(s)?;
    let n = s.flows.len();
    // Cross traffic gets a client and a server of its own, after the flows' pairs.
    let hosts = n + usize::from(!s.cross.is_empty());
    let mtu = s.flows.iter().map(FlowSpec::mtu).max().unwrap_or(1500);
    let mut topo = Topology::create(&TopologySpec {
        clients: hosts,
        servers: hosts,
        up: s.bottleneck.up.clone(),
        down: s.bottleneck.down.clone(),
        seed: spec.seed,
        capture_dir: opts.capture_dir.clone(),
        mtu,
        wait: opts.wait,
        // Flow `i` runs between client `i` and server `i`; cross traffic's hosts have none.
        client_access: s.flows.iter().map(|f| f.client_access.clone()).collect(),
        server_access: s.flows.iter().map(|f| f.server_access.clone()).collect(),
    })?;
    // PEP namespaces first: wiring one replaces its host's `eth0`, which the flow's routes use.
    let peps = match pep::insert_all(&mut topo, s) {
        Ok(p) => p,
        Err(e) => {
            let _ = topo.shutdown();
            return Err(e);
        }
    };
    // Each flow's kernel TCP gets the scenario's configuration, not the host's.
    let kernel: Vec<Option<FlowConfig>> = match s
        .flows
        .iter()
        .enumerate()
        .map(|(i, f)| kernel_tcp::configure(&topo, i, f))
        .collect::<Result<Vec<_>, EmuError>>()
    {
        Ok(k) => k,
        Err(e) => {
            let _ = topo.shutdown();
            return Err(e);
        }
    };
    // After the topology: its run lock is the ownership record that lets `--cleanup` remove a
    // private directory a killed run left. Dropped (removed) when `run` returns, on every path.
    let private;
    let work: &Path = match &opts.work_dir {
        Some(dir) => {
            fsutil::create_dir_all(dir)
                .map_err(|e| EmuError::io(format!("cannot create {}", dir.display()), e))?;
            dir
        }
        None => {
            private = topo.private_dir()?;
            private.path()
        }
    };
    let (captures, started) = match start_peps(&topo, &peps, opts, work) {
        Ok(c) => (c, Ok(())),
        Err(e) => (Vec::new(), Err(e)),
    };
    let outcome = started.and_then(|()| drive(&topo, s, spec.seed, opts, work));
    // Tear down first (servers flush their statistics on SIGTERM), then read what they wrote.
    let forwarder = topo.shutdown();
    // The PEP captures end with their namespaces' interfaces; flush them.
    drop(captures);
    let forwarder = forwarder?;
    let driven = outcome?;
    let mut run_warnings = Vec::new();
    let mut flows = Vec::new();
    let mut end_s: f64 = 0.0;
    for (i, f) in s.flows.iter().enumerate() {
        let path = work.join(format!("server-{i}.stats.jsonl"));
        let server = stats_log::read_records(&path).unwrap_or_else(|e| {
            run_warnings.push(format!("flow {}: server statistics: {e}", f.name));
            Vec::new()
        });
        let client = driven.clients.get(i).cloned().unwrap_or_default();
        end_s = end_s.max(collect::flow_end_s(&client, driven.t0_unix_s));
        run_warnings.extend(collect::qlog_errors(f, &client, &server));
        let applied = kernel.get(i).cloned().flatten();
        flows.push(collect::flow_result(
            f,
            &client,
            &server,
            driven.t0_unix_s,
            applied,
        ));
    }
    let (fairness, fairness_warning) = collect::window_fairness(&mut flows, s, end_s);
    run_warnings.extend(fairness_warning);
    let peps: Vec<PepOutcome> = peps.iter().map(|p| p.outcome(work)).collect();
    for p in &peps {
        // Beside the relay's own log, so `--out` keeps each PEP's effective settings.
        let name = format!("pep-{}.json", p.flow);
        if let Err(e) = log_file(work, &name).and_then(|file| {
            serde_json::to_writer_pretty(file, p).map_err(|e| EmuError::io(&name, e.into()))
        }) {
            run_warnings.push(format!("flow {}: {e}", s.flows[p.flow].name));
        }
        for c in &p.connections {
            if let Some(e) = &c.error {
                run_warnings.push(format!(
                    "flow {}: PEP connection: {e}",
                    s.flows[p.flow].name
                ));
            }
        }
    }
    let mut links = BTreeMap::new();
    for (name, stats, i) in [
        ("bottleneck_up", &forwarder.up, 0),
        ("bottleneck_down", &forwarder.down, 1),
    ] {
        links.insert(
            name.to_string(),
            stats.to_result(end_s, forwarder.corrupt_header_drops[i]),
        );
    }
    let measured = Run {
        end_s,
        // No discrete events in real time.
        events: None,
        flows,
        links,
        cross: driven.cross,
        probes: driven.probes,
        fairness,
        warnings: run_warnings,
        forwarder: Some(::results::Forwarder {
            release_late_p50_us: forwarder
                .release_lateness
                .quantile_us(0.5)
                .map(|v| v.round() as u64),
            release_late_p99_us: forwarder
                .release_lateness
                .quantile_us(0.99)
                .map(|v| v.round() as u64),
            ..forwarder.health.clone()
        }),
        ..Run::default()
    };
    Ok(EmuRun {
        result: measured.identify(::results::Identity {
            id: spec.id.clone(),
            point: spec.point,
            rep: spec.rep,
            seed: spec.seed,
            axes: point.axes.iter().cloned().collect(),
            scenario: s.name.clone(),
        }),
        forwarder,
        warnings,
        peps,
    })
}

/// Starts every flow's relay in its PEP namespace (they stop with the topology), and with
/// `capture_dir` a capture of both legs in each PEP namespace (stopped when the returned
/// handles drop).
fn start_peps(
    topo: &Topology,
    peps: &[PepSite],
    opts: &RunOptions,
    work: &Path,
) -> Result<Vec<pep::PepCapture>, EmuError> {
    let mut captures = Vec::new();
    for site in peps {
        if let Some(dir) = &opts.capture_dir {
            captures.push(pep::PepCapture::start(site, dir)?);
        }
        let log = log_file(work, &format!("pep-{}.err", site.flow))?;
        pep::start(topo, site, &opts.quiclab, work, log)?;
    }
    Ok(captures)
}

/// The run's per-endpoint files: the TLS key log and a qlog directory of the endpoint's own.
struct RunFiles {
    keylog: Option<PathBuf>,
    qlog_dir: Option<PathBuf>,
}

fn run_files(opts: &RunOptions, role: &str, i: usize) -> Result<RunFiles, EmuError> {
    let qlog_dir = match &opts.qlog_dir {
        Some(q) => {
            let dir = q.join(format!("{role}-{i}"));
            fsutil::create_dir_all(&dir)
                .map_err(|e| EmuError::io(format!("cannot create {}", dir.display()), e))?;
            Some(dir)
        }
        None => None,
    };
    Ok(RunFiles {
        keylog: opts.keylog.clone(),
        qlog_dir,
    })
}

/// Writes an endpoint's configuration as JSON into the work directory (a fresh file, see
/// [`log_file`]), for the endpoint's `--config`.
pub(crate) fn config_file(
    work: &Path,
    name: &str,
    config: &impl serde::Serialize,
) -> Result<PathBuf, EmuError> {
    use std::io::Write as _;
    let text = serde_json::to_vec_pretty(config)
        .map_err(|e| EmuError::Endpoint(format!("cannot serialize {name}: {e}")))?;
    let path = work.join(name);
    log_file(work, name)?
        .write_all(&text)
        .map_err(|e| EmuError::io(format!("cannot write {}", path.display()), e))?;
    Ok(path)
}

/// A fresh log file in the work directory: an old one (a resumed run's) is unlinked first, and
/// the new one is created exclusively without following links, so a name planted in the
/// meantime is an error, never a target.
fn log_file(work: &Path, name: &str) -> Result<std::fs::File, EmuError> {
    let p = work.join(name);
    match std::fs::remove_file(&p) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(EmuError::io(format!("cannot replace {}", p.display()), e))
        }
        _ => {}
    }
    fsutil::create_new(&p).map_err(|e| EmuError::io(format!("cannot create {}", p.display()), e))
}

/// What [`drive`] returns.
struct Driven {
    /// Per flow, in scenario order.
    clients: Vec<ClientOutcome>,
    /// Cross-traffic counters.
    cross: Vec<Cross>,
    /// Latency probes' results.
    probes: Vec<::results::Probe>,
    /// The run's start on the wall clock, s since the Unix epoch (the clients report on it).
    t0_unix_s: f64,
}

/// How long to sleep before a flow due at `start` when `elapsed` has passed: at most `tick`, and
/// zero (never an underflow) once the start time is reached or passed.
fn start_delay(start: Duration, elapsed: Duration, tick: Duration) -> Duration {
    start.saturating_sub(elapsed).min(tick)
}

/// Starts the servers, then the clients (and cross traffic) on schedule; returns the clients'
/// outcomes and the cross-traffic counters.
fn drive(
    topo: &Topology,
    s: &Scenario,
    seed: u64,
    opts: &RunOptions,
    work: &Path,
) -> Result<Driven, EmuError> {
    let mut ready_files = Vec::new();
    for (j, f) in s.flows.iter().enumerate() {
        let ready = work.join(format!("server-{j}.ready"));
        let _ = std::fs::remove_file(&ready);
        let files = run_files(opts, "server", j)?;
        let mut config = mapping::server_config(f, topo.server_addr(j))?;
        config.stats_file = Some(work.join(format!("server-{j}.stats.jsonl")));
        config.keylog = files.keylog;
        config.quic.qlog_dir = files.qlog_dir;
        let config = config_file(work, &format!("server-{j}.config.json"), &config)?;
        let mut cmd = Command::new(&opts.quiclab);
        cmd.arg("serve")
            .arg("--config")
            .arg(config)
            .arg("--ready-file")
            .arg(&ready)
            .stdin(Stdio::null())
            .stdout(log_file(work, &format!("server-{j}.log"))?)
            .stderr(log_file(work, &format!("server-{j}.err"))?);
        let child = topo.spawn(topo.server_ns(j), &mut cmd)?;
        ready_files.push((ready, child));
    }
    let deadline = Instant::now() + SERVER_READY_TIMEOUT;
    for (j, (ready, child)) in ready_files.iter().enumerate() {
        while !ready.exists() {
            if let Ok(Some(status)) = child.try_wait() {
                let err = std::fs::read_to_string(work.join(format!("server-{j}.err")))
                    .unwrap_or_default();
                return Err(EmuError::Endpoint(format!(
                    "server {j} exited ({status}) before it was ready: {}",
                    err.trim()
                )));
            }
            if Instant::now() > deadline || stopped(opts) {
                return Err(if stopped(opts) {
                    interrupted()
                } else {
                    EmuError::Endpoint(format!(
                        "server {j} not ready after {SERVER_READY_TIMEOUT:?}"
                    ))
                });
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let t0 = Instant::now();
    let t0_unix_s = unix_now();
    let n = s.flows.len();
    let mut cross = if s.cross.is_empty() {
        None
    } else {
        Some(CrossTraffic::start(topo, &s.cross, n, n, t0, seed)?)
    };
    let flow_names: Vec<String> = s.flows.iter().map(|f| f.name.clone()).collect();
    let mut probes = Probes::start(topo, &s.probes, &flow_names, t0, s.duration)?;
    let mut order: Vec<usize> = (0..s.flows.len()).collect();
    order.sort_by_key(|&i| s.flows[i].start);
    let mut running: Vec<(usize, ChildHandle, std::thread::JoinHandle<String>)> = Vec::new();
    for i in order {
        let f = &s.flows[i];
        loop {
            let delay = start_delay(f.start, t0.elapsed(), Duration::from_millis(10));
            if delay.is_zero() {
                break;
            }
            if stopped(opts) {
                return Err(interrupted());
            }
            std::thread::sleep(delay);
        }
        let end = match f.workload {
            scenario::model::Workload::Bulk { .. } => f.stop.unwrap_or(s.duration).min(s.duration),
            scenario::model::Workload::Download { .. } => s.duration,
        };
        let seconds = end.saturating_sub(f.start).as_secs_f64();
        let files = run_files(opts, "client", i)?;
        let mut config = mapping::fetch_options(f, s, topo.server_addr(i), seconds)?;
        config.client.tls.keylog = files.keylog;
        config.client.quic.qlog_dir = files.qlog_dir;
        let config = config_file(work, &format!("client-{i}.config.json"), &config)?;
        let mut cmd = Command::new(&opts.quiclab);
        cmd.arg("get")
            .arg("--config")
            .arg(config)
            .arg("--json")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log_file(work, &format!("client-{i}.err"))?);
        let child = topo.spawn(topo.client_ns(i), &mut cmd)?;
        let mut stdout = child
            .take_stdout()
            .ok_or_else(|| EmuError::Endpoint("client stdout not piped".into()))?;
        // Read concurrently so a chatty client can never block on a full pipe.
        let reader = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stdout.read_to_string(&mut text);
            text
        });
        running.push((i, child, reader));
    }
    let hard_end = t0 + s.duration + CLIENT_GRACE;
    let mut outcomes = vec![ClientOutcome::default(); s.flows.len()];
    for (i, child, reader) in running {
        let status = loop {
            if let Some(st) = child.try_wait()? {
                break Some(st);
            }
            if stopped(opts) {
                return Err(interrupted());
            }
            if Instant::now() >= hard_end {
                break None;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let exited_s = t0.elapsed().as_secs_f64();
        if status.is_none() {
            let _ = child.terminate(Duration::from_millis(500));
        }
        let text = reader.join().unwrap_or_default();
        let report = text
            .lines()
            .rev()
            .find_map(|l| serde_json::from_str::<FetchReport>(l.trim()).ok());
        let failure = match (&status, &report) {
            (None, _) => Some(format!(
                "did not finish within run.duration ({:?})",
                s.duration
            )),
            (Some(_), None) => {
                let err = std::fs::read_to_string(work.join(format!("client-{i}.err")))
                    .unwrap_or_default();
                Some(format!("quiclab get printed no result: {}", tail(&err)))
            }
            _ => None,
        };
        outcomes[i] = ClientOutcome {
            report,
            failure,
            exited_s,
        };
    }
    let cross = cross.as_mut().map(CrossTraffic::stop).unwrap_or_default();
    let probes = probes.stop();
    Ok(Driven {
        clients: outcomes,
        cross,
        probes,
        t0_unix_s,
    })
}

fn tail(text: &str) -> String {
    let t = text.trim();
    let start = t.len().saturating_sub(300);
    let start = (start..=t.len())
        .find(|&i| t.is_char_boundary(i))
        .unwrap_or(t.len());
    t[start..].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_late_check_starts_the_flow_at_once() {
        let tick = Duration::from_millis(10);
        let ms = Duration::from_millis;
        assert_eq!(start_delay(ms(500), ms(100), tick), tick);
        assert_eq!(start_delay(ms(500), ms(495), tick), ms(5));
        assert_eq!(start_delay(ms(500), ms(500), tick), Duration::ZERO);
        // The clock moved past the start between two checks: no underflow, no wait.
        assert_eq!(start_delay(ms(500), ms(501), tick), Duration::ZERO);
        assert_eq!(
            start_delay(Duration::ZERO, Duration::MAX, tick),
            Duration::ZERO
        );
    }
}
