//! One scenario run in real time: a topology with one client/server pair per flow, `quiclab
//! serve` in every server namespace, `quiclab get` in every client namespace at the flow's
//! start, and their JSON turned into the simulator's result shape.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ::results::{Link as LinkResult, Run as RunResult};
use scenario::model::{RunSpec, Scenario, SweepPoint};
use serde_json::Value;

use crate::cross::CrossTraffic;
use crate::error::EmuError;
use crate::forwarder::{ForwarderReport, WaitMode};
use crate::mapping;
use crate::results;
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
    /// Scratch directory of this run (ready files, server statistics, endpoint logs).
    pub work_dir: PathBuf,
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

/// A finished run: the simulator-shaped result plus the forwarder's own counters.
#[derive(Debug, Clone)]
pub struct EmuRun {
    /// Same shape as `quiclab sim` produces.
    pub result: RunResult,
    /// Forwarder counters (parse errors, non-IP frames, capture files, …).
    pub forwarder: ForwarderReport,
    /// Approximations the scenario needed.
    pub warnings: Vec<String>,
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
    std::fs::create_dir_all(&opts.work_dir)
        .map_err(|e| EmuError::io(format!("cannot create {}", opts.work_dir.display()), e))?;
    let n = s.flows.len();
    // Cross traffic gets a client and a server of its own, after the flows' pairs.
    let hosts = n + usize::from(!s.cross.is_empty());
    let mtu = s
        .flows
        .iter()
        .map(|f| match f.stack {
            scenario::model::Stack::Quic => f.quic.mtu,
            scenario::model::Stack::Tcp => f.tcp.mtu,
        })
        .max()
        .unwrap_or(1500);
    let topo = Topology::create(&TopologySpec {
        clients: hosts,
        servers: hosts,
        up: s.bottleneck.up.clone(),
        down: s.bottleneck.down.clone(),
        seed: spec.seed,
        capture_dir: opts.capture_dir.clone(),
        mtu,
        wait: opts.wait,
    })?;
    let outcome = drive(&topo, s, spec.seed, opts);
    // Tear down first (servers flush their statistics on SIGTERM), then read what they wrote.
    let forwarder = topo.shutdown()?;
    let (clients, cross, t0_elapsed) = outcome?;
    let flows = s
        .flows
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let stats = read_lines(&opts.work_dir.join(format!("server-{i}.stats.jsonl")));
            results::flow_result(f, clients.get(i).cloned().unwrap_or_default(), &stats)
        })
        .collect();
    let end_s = t0_elapsed.as_secs_f64();
    let mut links = BTreeMap::new();
    for (name, stats, i) in [
        ("bottleneck_up", forwarder.up.clone(), 0),
        ("bottleneck_down", forwarder.down.clone(), 1),
    ] {
        let utilisation = if end_s > 0.0 {
            stats.busy_time.as_secs_f64() / end_s
        } else {
            0.0
        };
        links.insert(
            name.to_string(),
            LinkResult {
                stats,
                utilisation,
                corrupt_header_drops: forwarder.corrupt_header_drops[i],
            },
        );
    }
    Ok(EmuRun {
        result: RunResult {
            id: spec.id.clone(),
            point: spec.point,
            rep: spec.rep,
            seed: spec.seed,
            axes: point.axes.iter().cloned().collect(),
            scenario: s.name.clone(),
            end_s,
            events: 0,
            flows,
            links,
            cross,
            series: Vec::new(),
        },
        forwarder,
        warnings,
    })
}

/// What one client produced: its exit, its stdout JSON (if any), its stderr tail.
#[derive(Debug, Clone, Default)]
pub struct ClientOutcome {
    /// Parsed `quiclab get --json` output.
    pub json: Option<Value>,
    /// Why there is no usable result (exit failure, no JSON, killed at the end of the run).
    pub failure: Option<String>,
}

fn common_files(
    cmd: &mut Command,
    opts: &RunOptions,
    role: &str,
    i: usize,
) -> Result<(), EmuError> {
    if let Some(k) = &opts.keylog {
        cmd.arg("--keylog").arg(k);
    }
    if let Some(q) = &opts.qlog_dir {
        let dir = q.join(format!("{role}-{i}"));
        std::fs::create_dir_all(&dir)
            .map_err(|e| EmuError::io(format!("cannot create {}", dir.display()), e))?;
        cmd.arg("--qlog-dir").arg(dir);
    }
    Ok(())
}

fn log_file(opts: &RunOptions, name: &str) -> Result<std::fs::File, EmuError> {
    let p = opts.work_dir.join(name);
    std::fs::File::create(&p).map_err(|e| EmuError::io(format!("cannot create {}", p.display()), e))
}

/// What [`drive`] returns: clients' outcomes, cross-traffic counters, time to the last end.
type Driven = (Vec<ClientOutcome>, Vec<::results::Cross>, Duration);

/// Starts the servers, then the clients (and cross traffic) on schedule; returns the clients'
/// outcomes, the cross-traffic counters and the time from the common start to the last
/// client's end.
fn drive(topo: &Topology, s: &Scenario, seed: u64, opts: &RunOptions) -> Result<Driven, EmuError> {
    let mut ready_files = Vec::new();
    for (j, f) in s.flows.iter().enumerate() {
        let ready = opts.work_dir.join(format!("server-{j}.ready"));
        let _ = std::fs::remove_file(&ready);
        let mut cmd = Command::new(&opts.quiclab);
        cmd.args(mapping::serve_args(f, topo.server_addr(j))?)
            .arg("--ready-file")
            .arg(&ready)
            .arg("--stats-file")
            .arg(opts.work_dir.join(format!("server-{j}.stats.jsonl")))
            .stdin(Stdio::null())
            .stdout(log_file(opts, &format!("server-{j}.log"))?)
            .stderr(log_file(opts, &format!("server-{j}.err"))?);
        common_files(&mut cmd, opts, "server", j)?;
        let child = topo.spawn(topo.server_ns(j), &mut cmd)?;
        ready_files.push((ready, child));
    }
    let deadline = Instant::now() + SERVER_READY_TIMEOUT;
    for (j, (ready, child)) in ready_files.iter().enumerate() {
        while !ready.exists() {
            if let Ok(Some(status)) = child.try_wait() {
                let err = std::fs::read_to_string(opts.work_dir.join(format!("server-{j}.err")))
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
    let n = s.flows.len();
    let mut cross = if s.cross.is_empty() {
        None
    } else {
        Some(CrossTraffic::start(topo, &s.cross, n, n, t0, seed)?)
    };
    let mut order: Vec<usize> = (0..s.flows.len()).collect();
    order.sort_by_key(|&i| s.flows[i].start);
    let mut running: Vec<(usize, ChildHandle, std::thread::JoinHandle<String>)> = Vec::new();
    for i in order {
        let f = &s.flows[i];
        while t0.elapsed() < f.start {
            if stopped(opts) {
                return Err(interrupted());
            }
            std::thread::sleep((f.start - t0.elapsed()).min(Duration::from_millis(10)));
        }
        let end = match f.workload {
            scenario::model::Workload::Bulk { .. } => f.stop.unwrap_or(s.duration).min(s.duration),
            scenario::model::Workload::Download { .. } => s.duration,
        };
        let seconds = end.saturating_sub(f.start).as_secs_f64();
        let mut cmd = Command::new(&opts.quiclab);
        cmd.args(mapping::get_args(f, s, topo.server_addr(i), seconds)?)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log_file(opts, &format!("client-{i}.err"))?);
        common_files(&mut cmd, opts, "client", i)?;
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
    let mut last_end = Duration::ZERO;
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
        last_end = last_end.max(t0.elapsed());
        if status.is_none() {
            let _ = child.terminate(Duration::from_millis(500));
        }
        let text = reader.join().unwrap_or_default();
        let json = text.lines().rev().find_map(|l| {
            serde_json::from_str::<Value>(l.trim())
                .ok()
                .filter(Value::is_object)
        });
        let failure = match (&status, &json) {
            (None, _) => Some(format!(
                "did not finish within run.duration ({:?})",
                s.duration
            )),
            (Some(_), None) => {
                let err = std::fs::read_to_string(opts.work_dir.join(format!("client-{i}.err")))
                    .unwrap_or_default();
                Some(format!("quiclab get printed no result: {}", tail(&err)))
            }
            _ => None,
        };
        outcomes[i] = ClientOutcome { json, failure };
    }
    let cross = cross.as_mut().map(CrossTraffic::stop).unwrap_or_default();
    Ok((outcomes, cross, last_end))
}

fn tail(text: &str) -> String {
    let t = text.trim();
    let start = t.len().saturating_sub(300);
    let start = (start..=t.len())
        .find(|&i| t.is_char_boundary(i))
        .unwrap_or(t.len());
    t[start..].to_string()
}

fn read_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .map(|t| {
            t.lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect()
        })
        .unwrap_or_default()
}
