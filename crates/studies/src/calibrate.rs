//! The calibration matrix (`quiclab calibrate`): one table of paths, each run with QUIC (cubic),
//! TCP (cubic) and TCP (reno), and some also with TCP (bbr), in the simulator and in the
//! emulator, compared by the medians of completion time and goodput with 95% intervals and the
//! emu/sim ratio.
//!
//! Each path is a scenario file (`scenarios/calibration/<path>.toml`) so any cell can be run by
//! hand; a cell is the file with `--set flow.0.stack=… --set flow.0.cc=…`. Every cell of every
//! engine is an experiment-runner results directory, `<out>/<engine>/<path>/<variant>/`, so a run
//! resumes where it stopped and either half can be re-run alone (`--engine sim` after a model
//! change) before the table is rendered again from what is stored.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use analysis::stats::median_ci95;
use experiment::executor::Stop;
use experiment::{Engine, Executor, ExperimentError, Progress, Sweep, SweepOutcome};
use scenario::{LoadedScenario, ScenarioError};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tables::Markdown;

/// The paths of the table, in order: (scenario file stem, short label).
pub const PATHS: &[(&str, &str)] = &[
    ("clean", "clean 10 Mbit/s, 15 ms, 25 pkt"),
    ("bernoulli-1", "1% Bernoulli"),
    ("bernoulli-2", "2% Bernoulli"),
    ("bernoulli-5", "5% Bernoulli"),
    ("gilbert-elliott", "Gilbert-Elliott 2% bursts"),
    ("periodic-1", "periodic 1%"),
    ("slow-deep-queue", "1 Mbit/s, 1000-pkt queue"),
    ("high-bdp", "100 Mbit/s, 80 ms RTT"),
    ("geo", "GEO 600 ms, 20/2 Mbit/s"),
    ("geo-loss-1", "GEO + 1% loss"),
    ("bandwidth-on-demand", "bandwidth on demand"),
    ("codel", "CoDel 10 Mbit/s, 20 ms"),
    ("codel-ecn", "CoDel + ECN"),
    ("fq-codel", "FQ-CoDel + 2 Mbit/s UDP"),
    ("fq-codel-ecn", "FQ-CoDel + UDP + ECN"),
    ("shallow-buffer", "20 Mbit/s, 40 ms, 0.25-BDP queue"),
    ("deep-buffer", "20 Mbit/s, 40 ms, 8-BDP queue"),
    ("bbr-vs-cubic", "BBR against CUBIC, 10 Mbit/s, 40 ms, 2 BDP"),
];

/// Paths that also run TCP with BBR ([`Variant::TcpBbr`]): the clean and lossy paths, the
/// long and the high-BDP paths, and the two buffer extremes.
pub const BBR_PATHS: &[&str] = &[
    "clean",
    "bernoulli-1",
    "bernoulli-2",
    "high-bdp",
    "geo",
    "shallow-buffer",
    "deep-buffer",
];

/// Paths where two bulk flows share the bottleneck and the cell compares flow 0's share of the
/// summed goodput instead of a download's completion: run with TCP (bbr) and, as the control,
/// TCP (cubic).
pub const SHARE_PATHS: &[&str] = &["bbr-vs-cubic"];
/// A sharing cell is flagged when flow 0's median shares differ by more than this (10
/// percentage points).
pub const SHARE_TOLERANCE: f64 = 0.10;

/// Paths of `--quick` (the test suite's run): the clean and the 2%-loss path.
pub const QUICK_PATHS: &[&str] = &["clean", "bernoulli-2"];
/// Repetitions of `--quick`: enough for a median on both sides (intervals need 6).
pub const QUICK_REPS: u32 = 3;
/// Download size of `--quick`.
pub const QUICK_SIZE: &str = "150KB";
/// A cell is flagged when an emu/sim ratio of medians is outside 1 ± this.
pub const TOLERANCE: f64 = 0.10;
/// The emulator's runs of a cell form two groups when the widest gap between consecutive
/// sorted values is at least this fraction of the median and at least twice the spread of
/// either side, with at least [`MIN_GROUP_RUNS`] runs on each: the kernel's run-to-run
/// variation has modes (sub-millisecond timing picks one), and a median between them stands
/// for no run.
pub const GROUP_GAP: f64 = 0.05;
/// Fewest runs on each side of a split into two groups.
pub const MIN_GROUP_RUNS: usize = 2;
/// Queue delays are compared only when the simulator's median is at least this, s: below it
/// the queue is not standing and the ratio of two small numbers is noise.
pub const MIN_COMPARED_QUEUE_DELAY_S: f64 = 0.001;

/// Stack and controller of a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Variant {
    /// QUIC with quiclab's CUBIC (the same `cc` code in both engines).
    QuicCubic,
    /// TCP with CUBIC (the model's; the kernel's).
    TcpCubic,
    /// TCP with Reno (the model's NewReno; the kernel's `reno`).
    TcpReno,
    /// TCP with BBR v1 (the model's, after Linux's `tcp_bbr.c`; the kernel's `bbr`), on
    /// [`BBR_PATHS`] only.
    TcpBbr,
}

impl Variant {
    /// The variants every path runs, in table order.
    pub const ALL: [Variant; 3] = [Variant::QuicCubic, Variant::TcpCubic, Variant::TcpReno];
    /// The variants of a [`BBR_PATHS`] path.
    pub const WITH_BBR: [Variant; 4] = [
        Variant::QuicCubic,
        Variant::TcpCubic,
        Variant::TcpReno,
        Variant::TcpBbr,
    ];

    /// The variants of a [`SHARE_PATHS`] path.
    pub const SHARING: [Variant; 2] = [Variant::TcpCubic, Variant::TcpBbr];

    /// The variants of `path`, in table order.
    pub fn for_path(path: &str) -> &'static [Variant] {
        if SHARE_PATHS.contains(&path) {
            &Variant::SHARING
        } else if BBR_PATHS.contains(&path) {
            &Variant::WITH_BBR
        } else {
            &Variant::ALL
        }
    }

    /// The variant called `name` ([`Variant::name`]).
    pub fn from_name(name: &str) -> Option<Variant> {
        Variant::WITH_BBR.into_iter().find(|v| v.name() == name)
    }

    /// Directory and display name.
    pub fn name(self) -> &'static str {
        match self {
            Variant::QuicCubic => "quic-cubic",
            Variant::TcpCubic => "tcp-cubic",
            Variant::TcpReno => "tcp-reno",
            Variant::TcpBbr => "tcp-bbr",
        }
    }

    /// The `--set` overrides that turn a path file into this variant.
    pub fn overrides(self) -> Vec<String> {
        let (stack, cc) = match self {
            Variant::QuicCubic => ("quic", "cubic"),
            Variant::TcpCubic => ("tcp", "cubic"),
            Variant::TcpReno => ("tcp", "newreno"),
            Variant::TcpBbr => ("tcp", "bbr"),
        };
        vec![format!("flow.0.stack={stack}"), format!("flow.0.cc={cc}")]
    }
}

/// Which engine a half runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineKind {
    /// The simulator.
    Sim,
    /// The emulator.
    Emu,
}

impl EngineKind {
    /// Directory name under `--out`.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Sim => "sim",
            EngineKind::Emu => "emu",
        }
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Directory holding the path files (`scenarios/calibration`).
    pub scenarios: PathBuf,
    /// Repetitions per cell.
    pub reps: u32,
    /// The test suite's reduced table ([`QUICK_PATHS`], [`QUICK_SIZE`]).
    pub quick: bool,
    /// Only these paths (file stems); empty: every path of the table.
    pub only: Vec<String>,
    /// Only these variants (where a path has them); empty: every variant of each path.
    pub variants: Vec<Variant>,
}

impl Plan {
    /// The paths this plan runs, in table order.
    pub fn paths(&self) -> Vec<(&'static str, &'static str)> {
        PATHS
            .iter()
            .copied()
            .filter(|(p, _)| !self.quick || QUICK_PATHS.contains(p))
            .filter(|(p, _)| self.only.is_empty() || self.only.iter().any(|o| o == p))
            .collect()
    }

    /// The variants this plan runs on `path`, in table order.
    pub fn variants(&self, path: &str) -> Vec<Variant> {
        Variant::for_path(path)
            .iter()
            .copied()
            .filter(|v| self.variants.is_empty() || self.variants.contains(v))
            .collect()
    }

    /// The scenario file of a path.
    pub fn file(&self, path: &str) -> PathBuf {
        self.scenarios.join(format!("{path}.toml"))
    }

    /// The `--set` overrides of a cell (variant, repetitions, the quick size).
    pub fn overrides(&self, variant: Variant) -> Vec<String> {
        let mut o = variant.overrides();
        o.push(format!("run.reps={}", self.reps));
        if self.quick {
            o.push(format!("flow.0.size={QUICK_SIZE}"));
        }
        o
    }

    /// Loads one cell's scenario.
    pub fn load(&self, path: &str, variant: Variant) -> Result<LoadedScenario, CalibrateError> {
        Ok(scenario::load(
            &self.file(path),
            &self.overrides(variant),
            &[],
        )?)
    }

    /// Checks before anything runs that every path is known, every cell loads and, with
    /// `emulator` (the emulator's pre-run check, `emu::check_supported`), that the emulator
    /// runs every point: the message of the first problem.
    pub fn check(&self, emulator: Option<EmulatorCheck<'_>>) -> Result<(), String> {
        let known: Vec<&str> = PATHS.iter().map(|(p, _)| *p).collect();
        if let Some(bad) = self.only.iter().find(|p| !known.contains(&p.as_str())) {
            return Err(format!(
                "unknown path {bad:?}; allowed: {}",
                known.join(", ")
            ));
        }
        for (path, _) in self.paths() {
            for v in self.variants(path) {
                let loaded = self.load(path, v).map_err(|e| e.to_string())?;
                if let Some(check) = emulator {
                    for p in &loaded.points {
                        check(&p.scenario)
                            .map_err(|e| format!("{}: {e}", self.file(path).display()))?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// The emulator's pre-run check of one scenario (`emu::check_supported`), as [`Plan::check`]
/// takes it: the calibration does not link the emulator.
pub type EmulatorCheck<'a> = &'a dyn Fn(&scenario::model::Scenario) -> Result<(), String>;

/// Errors of the calibration.
#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    /// A path file does not load.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// The experiment runner failed (directory, manifest, store).
    #[error("{dir}: {source}")]
    Experiment {
        /// The cell's results directory.
        dir: PathBuf,
        /// The cause.
        source: ExperimentError,
    },
    /// Reading or writing a file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The run was stopped (Ctrl-C); what finished is stored.
    #[error("interrupted: completed runs are stored, run the same command again to resume")]
    Interrupted,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CalibrateError + '_ {
    move |source| CalibrateError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The results directory of one cell of one engine.
pub fn cell_dir(out: &Path, engine: EngineKind, path: &str, variant: Variant) -> PathBuf {
    out.join(engine.name()).join(path).join(variant.name())
}

/// The machine's load over a cell of the emulator half (written as `load.json` in its directory).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Load {
    /// Wall time of the cell, s.
    pub wall_s: f64,
    /// Fraction of CPU time not idle over the cell, all cores (`/proc/stat`).
    pub cpu_busy: Option<f64>,
    /// 1-minute load average at the start and end of the cell (`/proc/loadavg`).
    pub loadavg_1m: [Option<f64>; 2],
}

/// Busy and total jiffies of all CPUs (`/proc/stat` first line).
fn cpu_jiffies() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().next()?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|w| w.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal …: idle and iowait are not busy.
    let total: u64 = v.iter().take(8).sum();
    let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
    Some((total.saturating_sub(idle), total))
}

fn loadavg_1m() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Samples the machine's load between [`LoadMeter::start`] and [`LoadMeter::finish`].
struct LoadMeter {
    at: Instant,
    cpu: Option<(u64, u64)>,
    load: Option<f64>,
}

impl LoadMeter {
    fn start() -> Self {
        LoadMeter {
            at: Instant::now(),
            cpu: cpu_jiffies(),
            load: loadavg_1m(),
        }
    }

    fn finish(self) -> Load {
        let busy = match (self.cpu, cpu_jiffies()) {
            (Some((b0, t0)), Some((b1, t1))) if t1 > t0 => {
                Some(b1.saturating_sub(b0) as f64 / (t1 - t0) as f64)
            }
            _ => None,
        };
        Load {
            wall_s: self.at.elapsed().as_secs_f64(),
            cpu_busy: busy,
            loadavg_1m: [self.load, loadavg_1m()],
        }
    }
}

/// Where and when one invocation ran a half (`<out>/<engine>/meta.json` lists them all, oldest
/// first: a half completed or partly re-run by later invocations keeps its history).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    /// The command line.
    pub command: String,
    /// Start, UTC (`YYYY-MM-DD HH:MM`).
    pub date: String,
    /// Wall time of this invocation, s.
    pub wall_s: f64,
    /// Kernel release (`/proc/sys/kernel/osrelease`).
    pub kernel: String,
    /// CPU model and number of CPUs.
    pub machine: String,
    /// Repetitions per cell.
    pub reps: u32,
    /// Whether this was the reduced `--quick` table.
    pub quick: bool,
}

/// `YYYY-MM-DD HH:MM` UTC of a time.
pub fn utc_text(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}",
        rem / 3600,
        (rem % 3600) / 60
    )
}

fn machine() -> (String, String) {
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")?
                .split_once(':')
                .map(|x| x.1.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    (kernel, format!("{model}, {cpus} CPUs"))
}

/// How one half ended.
#[derive(Debug, Clone, Default)]
pub struct HalfOutcome {
    /// Runs of the half.
    pub total: usize,
    /// Runs that failed (id: message), retried on resume.
    pub failures: Vec<String>,
}

/// Runs one engine's half of the plan into `<out>/<engine>/`, resuming what is stored. The
/// emulator's cells also get a `load.json` (the machine's load while they ran).
#[allow(clippy::too_many_arguments)]
pub fn run_half(
    plan: &Plan,
    out: &Path,
    kind: EngineKind,
    engine: &dyn Engine,
    executor: &dyn Executor,
    stop: &Stop<'_>,
    progress: &dyn Progress,
    command: &str,
) -> Result<HalfOutcome, CalibrateError> {
    let started = Instant::now();
    let date = utc_text(SystemTime::now());
    let mut outcome = HalfOutcome::default();
    for (path, _) in plan.paths() {
        for variant in plan.variants(path) {
            let loaded = plan.load(path, variant)?;
            let dir = cell_dir(out, kind, path, variant);
            fsutil::create_dir_all(&dir).map_err(io(&dir))?;
            let meter = LoadMeter::start();
            let sweep = Sweep {
                loaded: &loaded,
                out: &dir,
                resume: true,
                series: false,
            };
            let result = experiment::run_sweep(&sweep, engine, executor, stop, progress).map_err(
                |source| CalibrateError::Experiment {
                    dir: dir.clone(),
                    source,
                },
            )?;
            match result {
                SweepOutcome::Finished {
                    total, failures, ..
                } => {
                    outcome.total += total;
                    outcome.failures.extend(
                        failures
                            .into_iter()
                            .map(|f| format!("{}/{}: {}", path, variant.name(), f.message)),
                    );
                }
                SweepOutcome::Interrupted { .. } => return Err(CalibrateError::Interrupted),
            }
            if kind == EngineKind::Emu {
                let load = meter.finish();
                let file = dir.join("load.json");
                let text = serde_json::to_string_pretty(&load).unwrap_or_default();
                fsutil::write_atomic(&file, text.as_bytes()).map_err(io(&file))?;
            }
        }
    }
    let (kernel, machine) = machine();
    let meta = Meta {
        command: command.to_string(),
        date,
        wall_s: started.elapsed().as_secs_f64(),
        kernel,
        machine,
        reps: plan.reps,
        quick: plan.quick,
    };
    let mut history = read_meta(out, kind);
    history.push(meta);
    let file = out.join(kind.name()).join("meta.json");
    let text = serde_json::to_string_pretty(&history).unwrap_or_default();
    fsutil::write_atomic(&file, text.as_bytes()).map_err(io(&file))?;
    Ok(outcome)
}

/// Median and 95% interval of one metric over a cell's runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Stat {
    /// Runs with a value.
    pub n: usize,
    /// Median (None without values).
    pub median: Option<f64>,
    /// 95% interval of the median (None below 6 values).
    pub ci95: Option<(f64, f64)>,
    /// The two groups the values fall into, lower first (see [`GROUP_GAP`]); None when they
    /// form one.
    pub groups: Option<[Group; 2]>,
}

/// One of two groups of a cell's runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Group {
    /// Runs in the group.
    pub n: usize,
    /// The group's median.
    pub median: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

impl Group {
    fn of(sorted: &[f64]) -> Option<Group> {
        Some(Group {
            n: sorted.len(),
            median: quantile::median(sorted)?,
            min: *sorted.first()?,
            max: *sorted.last()?,
        })
    }
}

impl Stat {
    fn of(mut values: Vec<f64>) -> Stat {
        values.retain(|v| v.is_finite());
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let median = quantile::median(&values);
        Stat {
            n,
            median,
            ci95: median_ci95(&values),
            groups: median.and_then(|m| two_groups(&values, m)),
        }
    }

    /// The value a model's `sim` median is compared with: the median, or with two groups
    /// the nearer group's median (by ratio), and that group.
    fn reference_for(&self, sim: f64) -> Option<(f64, Option<Group>)> {
        match self.groups {
            Some(g) if sim > 0.0 => {
                let distance = |x: &Group| (x.median / sim).ln().abs();
                let near = if distance(&g[0]) <= distance(&g[1]) {
                    g[0]
                } else {
                    g[1]
                };
                Some((near.median, Some(near)))
            }
            _ => self.median.map(|m| (m, None)),
        }
    }
}

/// Splits sorted `values` at their widest gap when both sides are groups ([`GROUP_GAP`]).
fn two_groups(values: &[f64], median: f64) -> Option<[Group; 2]> {
    let (at, gap) = values
        .windows(2)
        .enumerate()
        .map(|(i, w)| (i + 1, w[1] - w[0]))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    let (lower, upper) = values.split_at(at);
    let spread = |g: &[f64]| g.last().copied().unwrap_or(0.0) - g.first().copied().unwrap_or(0.0);
    let groups = lower.len() >= MIN_GROUP_RUNS
        && upper.len() >= MIN_GROUP_RUNS
        && gap >= GROUP_GAP * median.abs()
        && gap >= 2.0 * spread(lower)
        && gap >= 2.0 * spread(upper);
    if !groups {
        return None;
    }
    Some([Group::of(lower)?, Group::of(upper)?])
}

/// One side (engine) of a cell, from its stored results.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Side {
    /// Completed downloads' completion times, s.
    pub completion_s: Stat,
    /// Goodput, bit/s.
    pub goodput_bps: Stat,
    /// Mean queue delay of the bottleneck's data direction (down), s.
    pub queue_delay_s: Stat,
    /// Flow 0's share of the flows' summed goodput over the whole run, fraction (runs with
    /// more than one flow): the emulator measures kernel TCP's goodput over the whole run only,
    /// so both engines are compared on that.
    pub share: Stat,
    /// Runs stored (with or without a completion).
    pub runs: usize,
    /// The effective configuration of the first stored run (`flows[0].config`).
    pub config: Option<Value>,
    /// Largest 99th-percentile release lateness of the forwarder over the runs, µs (emulator).
    pub late_p99_us: Option<u64>,
    /// The machine's load over the cell (emulator).
    pub load: Option<Load>,
}

/// One row of the table.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Path file stem.
    pub path: String,
    /// Short label.
    pub label: String,
    /// Stack and controller.
    pub variant: Variant,
    /// Download size of the cell, bytes.
    pub size: Option<u64>,
    /// Simulator side (None when not run).
    pub sim: Option<Side>,
    /// Emulator side (None when not run).
    pub emu: Option<Side>,
    /// emu/sim ratio of median completion times.
    pub completion_ratio: Option<f64>,
    /// emu/sim ratio of median goodputs.
    pub goodput_ratio: Option<f64>,
    /// emu/sim ratio of median queue delays (None below [`MIN_COMPARED_QUEUE_DELAY_S`]).
    pub queue_delay_ratio: Option<f64>,
    /// emu − sim difference of flow 0's median shares, fraction (sharing paths).
    pub share_difference: Option<f64>,
    /// Metrics whose emulator runs form two groups, each with the group the ratio compares
    /// the simulator with and the other one.
    pub grouped: Vec<Grouped>,
}

/// A metric whose emulator runs form two groups.
#[derive(Debug, Clone, Serialize)]
pub struct Grouped {
    /// Which metric: `completion`, `goodput` or `queue`.
    pub metric: &'static str,
    /// The group the simulator's median is compared with.
    pub compared: Group,
    /// The other group.
    pub other: Group,
}

impl Row {
    /// Outside ±[`TOLERANCE`] in any ratio (None: not comparable).
    pub fn outside(&self) -> Option<bool> {
        let off = |r: Option<f64>| r.map(|r| (r - 1.0).abs() > TOLERANCE);
        let flags = [
            off(self.completion_ratio),
            off(self.goodput_ratio),
            off(self.queue_delay_ratio),
            self.share_difference.map(|d| d.abs() > SHARE_TOLERANCE),
        ];
        if flags.iter().all(Option::is_none) {
            return None;
        }
        Some(flags.contains(&Some(true)))
    }
}

fn read_side(dir: &Path) -> Result<Option<Side>, CalibrateError> {
    let file = dir.join(results::layout::RESULTS_FILE);
    let text = match fsutil::read_to_string_bounded(&file, results::store::MAX_RESULTS_BYTES) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(&file)(e)),
    };
    let runs: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    if runs.is_empty() {
        return Ok(None);
    }
    let flow = |r: &Value, key: &str| {
        r.pointer(&format!("/flows/0/{key}"))
            .and_then(Value::as_f64)
    };
    let load = fsutil::read_to_string_bounded(&dir.join("load.json"), MAX_RECORD_BYTES)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    Ok(Some(Side {
        completion_s: Stat::of(
            runs.iter()
                .filter_map(|r| flow(r, "completion_s"))
                .collect(),
        ),
        goodput_bps: Stat::of(
            runs.iter()
                .filter(|r| flow(r, "completion_s").is_some())
                .filter_map(|r| flow(r, "goodput_bps"))
                .collect(),
        ),
        queue_delay_s: Stat::of(
            runs.iter()
                .filter_map(|r| {
                    r.pointer("/links/bottleneck_down/queue_delay_mean_s")
                        .and_then(Value::as_f64)
                })
                .collect(),
        ),
        share: Stat::of(runs.iter().filter_map(whole_run_share).collect()),
        runs: runs.len(),
        config: runs[0].pointer("/flows/0/config").cloned(),
        late_p99_us: runs
            .iter()
            .filter_map(|r| {
                r.pointer("/emu/release_late_p99_us")
                    .and_then(Value::as_u64)
            })
            .max(),
        load,
    }))
}

/// Flow 0's part of the flows' summed whole-run goodput (None with one flow or a flow without
/// a goodput).
fn whole_run_share(run: &Value) -> Option<f64> {
    let flows = run.get("flows")?.as_array()?;
    if flows.len() < 2 {
        return None;
    }
    let goodputs: Vec<f64> = flows
        .iter()
        .map(|f| f.get("goodput_bps").and_then(Value::as_f64))
        .collect::<Option<_>>()?;
    let total: f64 = goodputs.iter().sum();
    (total > 0.0).then(|| goodputs[0] / total)
}

/// emu/sim ratio of one metric; with two groups of emulator runs, of the nearer group's median,
/// which is then recorded in `grouped` under `metric`.
fn ratio(
    emu: &Option<Side>,
    sim: &Option<Side>,
    pick: fn(&Side) -> &Stat,
    metric: &'static str,
    grouped: &mut Vec<Grouped>,
) -> Option<f64> {
    let e = pick(emu.as_ref()?);
    let s = pick(sim.as_ref()?).median?;
    let (reference, group) = e.reference_for(s)?;
    if let (Some(compared), Some(g)) = (group, e.groups) {
        let other = if compared == g[0] { g[1] } else { g[0] };
        grouped.push(Grouped {
            metric,
            compared,
            other,
        });
    }
    (s > 0.0).then(|| reference / s)
}

fn difference(emu: &Option<Side>, sim: &Option<Side>, pick: fn(&Side) -> &Stat) -> Option<f64> {
    Some(pick(emu.as_ref()?).median? - pick(sim.as_ref()?).median?)
}

/// The table from what is stored under `out` (either half may be missing).
pub fn table(plan: &Plan, out: &Path) -> Result<Vec<Row>, CalibrateError> {
    let mut rows = Vec::new();
    for (path, label) in plan.paths() {
        for variant in plan.variants(path) {
            let size = plan.load(path, variant).ok().and_then(|l| {
                match l.points.first()?.scenario.flows.first()?.workload {
                    scenario::model::Workload::Download { size, .. } => Some(size),
                    _ => None,
                }
            });
            let sim = read_side(&cell_dir(out, EngineKind::Sim, path, variant))?;
            let emu = read_side(&cell_dir(out, EngineKind::Emu, path, variant))?;
            let mut grouped = Vec::new();
            let completion_ratio =
                ratio(&emu, &sim, |s| &s.completion_s, "completion", &mut grouped);
            let goodput_ratio = ratio(&emu, &sim, |s| &s.goodput_bps, "goodput", &mut grouped);
            let queue_delay_ratio = sim
                .as_ref()
                .and_then(|s| s.queue_delay_s.median)
                .filter(|d| *d >= MIN_COMPARED_QUEUE_DELAY_S)
                .and_then(|_| ratio(&emu, &sim, |s| &s.queue_delay_s, "queue", &mut grouped));
            rows.push(Row {
                path: path.to_string(),
                label: label.to_string(),
                variant,
                size,
                completion_ratio,
                goodput_ratio,
                queue_delay_ratio,
                share_difference: difference(&emu, &sim, |s| &s.share),
                grouped,
                sim,
                emu,
            });
        }
    }
    Ok(rows)
}

fn stat_text(s: Option<&Stat>, scale: f64, digits: usize) -> String {
    let Some(s) = s else { return "–".into() };
    match (s.median, s.ci95) {
        (Some(m), Some((lo, hi))) => format!(
            "{:.d$} [{:.d$}, {:.d$}]",
            m / scale,
            lo / scale,
            hi / scale,
            d = digits
        ),
        (Some(m), None) => format!("{:.d$} (n={})", m / scale, s.n, d = digits),
        _ => "–".into(),
    }
}

fn ratio_text(r: Option<f64>) -> String {
    r.map_or("–".into(), |r| format!("{r:.2}"))
}

fn size_text(b: Option<u64>) -> String {
    match b {
        Some(b) if b >= 1_000_000 => format!("{} MB", b as f64 / 1e6),
        Some(b) => format!("{} KB", b as f64 / 1e3),
        None => "–".into(),
    }
}

/// One row's cells, in the order of both renderings: path, variant, size, sim and emu completion,
/// their ratio, sim and emu goodput, their ratio, sim and emu queue delay, their ratio.
fn cells(r: &Row) -> [String; 12] {
    [
        r.label.clone(),
        r.variant.name().to_string(),
        size_text(r.size),
        stat_text(r.sim.as_ref().map(|s| &s.completion_s), 1.0, 2),
        stat_text(r.emu.as_ref().map(|s| &s.completion_s), 1.0, 2),
        grouped_ratio_text(r, "completion", r.completion_ratio),
        stat_text(r.sim.as_ref().map(|s| &s.goodput_bps), 1e6, 2),
        stat_text(r.emu.as_ref().map(|s| &s.goodput_bps), 1e6, 2),
        grouped_ratio_text(r, "goodput", r.goodput_ratio),
        stat_text(r.sim.as_ref().map(|s| &s.queue_delay_s), 1e-3, 1),
        stat_text(r.emu.as_ref().map(|s| &s.queue_delay_s), 1e-3, 1),
        grouped_ratio_text(r, "queue", r.queue_delay_ratio),
    ]
}

/// A ratio, marked † when it compares with one of two groups of emulator runs.
fn grouped_ratio_text(r: &Row, metric: &str, ratio: Option<f64>) -> String {
    let t = ratio_text(ratio);
    if r.grouped.iter().any(|g| g.metric == metric) {
        format!("{t}†")
    } else {
        t
    }
}

/// One line per metric compared with one of two groups of emulator runs.
fn grouped_notes(rows: &[Row]) -> Vec<String> {
    let mut lines = Vec::new();
    for r in rows {
        for g in &r.grouped {
            let (scale, digits, unit, pick): (f64, usize, &str, fn(&Side) -> &Stat) = match g.metric
            {
                "completion" => (1.0, 2, "s", |s| &s.completion_s),
                "goodput" => (1e6, 2, "Mbit/s", |s| &s.goodput_bps),
                _ => (1e-3, 1, "ms", |s| &s.queue_delay_s),
            };
            let range = |x: &Group| {
                if x.min == x.max {
                    format!("{:.d$} {unit}", x.min / scale, d = digits)
                } else {
                    format!(
                        "{:.d$}–{:.d$} {unit}",
                        x.min / scale,
                        x.max / scale,
                        d = digits
                    )
                }
            };
            let compared_is_lower = g.compared.median <= g.other.median;
            let (lower, upper) = if compared_is_lower {
                (&g.compared, &g.other)
            } else {
                (&g.other, &g.compared)
            };
            let sim = r
                .sim
                .as_ref()
                .and_then(|s| pick(s).median)
                .unwrap_or(f64::NAN);
            lines.push(format!(
                "{} / {}, {}: the emulator's runs form two groups, {} ({} runs) and {} ({} runs); the simulator's {:.d$} {unit} is compared with the {} one.",
                r.label,
                r.variant.name(),
                g.metric,
                range(lower),
                lower.n,
                range(upper),
                upper.n,
                sim / scale,
                if compared_is_lower { "lower" } else { "upper" },
                d = digits
            ));
        }
    }
    lines
}

/// The row belongs to a [`SHARE_PATHS`] path (it is drawn in the sharing table).
fn is_sharing(r: &Row) -> bool {
    SHARE_PATHS.contains(&r.path.as_str())
}

fn flag_text(r: &Row, outside: &'static str) -> &'static str {
    match r.outside() {
        Some(true) => outside,
        Some(false) => "ok",
        None => "–",
    }
}

fn share_text(s: Option<&Side>) -> String {
    stat_text(s.map(|s| &s.share), 0.01, 1)
}

fn points_text(d: Option<f64>) -> String {
    d.map_or("–".into(), |d| format!("{:+.1}", d * 100.0))
}

/// A sharing row's cells: path, variant, sim and emu share of flow 0 (%), their difference
/// (points), sim and emu queue delay, their ratio.
fn sharing_cells(r: &Row) -> [String; 8] {
    [
        r.label.clone(),
        r.variant.name().to_string(),
        share_text(r.sim.as_ref()),
        share_text(r.emu.as_ref()),
        points_text(r.share_difference),
        stat_text(r.sim.as_ref().map(|s| &s.queue_delay_s), 1e-3, 1),
        stat_text(r.emu.as_ref().map(|s| &s.queue_delay_s), 1e-3, 1),
        ratio_text(r.queue_delay_ratio),
    ]
}

/// The table as fixed-width text (what `quiclab calibrate` prints).
pub fn render_text(rows: &[Row]) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{:<28} {:<10} {:>7}  {:<24} {:<24} {:>5}  {:<22} {:<22} {:>5}  {:<20} {:<20} {:>5}  flag",
        "path",
        "variant",
        "size",
        "sim completion s",
        "emu completion s",
        "ratio",
        "sim goodput Mbit/s",
        "emu goodput Mbit/s",
        "ratio",
        "sim queue ms",
        "emu queue ms",
        "ratio"
    );
    for r in rows.iter().filter(|r| !is_sharing(r)) {
        let c = cells(r);
        let flag = flag_text(r, "OUTSIDE ±10%");
        let _ = writeln!(
            t,
            "{:<28} {:<10} {:>7}  {:<24} {:<24} {:>5}  {:<22} {:<22} {:>5}  {:<20} {:<20} {:>5}  {flag}",
            c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10], c[11],
        );
    }
    if rows.iter().any(is_sharing) {
        let _ = writeln!(
            t,
            "\n{:<44} {:<10} {:<20} {:<20} {:>6}  {:<20} {:<20} {:>5}  flag",
            "sharing path",
            "variant",
            "sim share of flow 0 %",
            "emu share of flow 0 %",
            "points",
            "sim queue ms",
            "emu queue ms",
            "ratio"
        );
        for r in rows.iter().filter(|r| is_sharing(r)) {
            let c = sharing_cells(r);
            let flag = flag_text(r, "OUTSIDE");
            let _ = writeln!(
                t,
                "{:<44} {:<10} {:<20} {:<20} {:>6}  {:<20} {:<20} {:>5}  {flag}",
                c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7],
            );
        }
    }
    for line in grouped_notes(rows) {
        let _ = writeln!(t, "† {line}");
    }
    t
}

/// Largest `load.json` or `meta.json` read back (a few hundred bytes per invocation).
const MAX_RECORD_BYTES: u64 = 16 << 20;

/// The invocations recorded for a half (a single object is one invocation).
fn read_meta(out: &Path, kind: EngineKind) -> Vec<Meta> {
    let Ok(text) =
        fsutil::read_to_string_bounded(&out.join(kind.name()).join("meta.json"), MAX_RECORD_BYTES)
    else {
        return Vec::new();
    };
    serde_json::from_str::<Vec<Meta>>(&text)
        .or_else(|_| serde_json::from_str::<Meta>(&text).map(|m| vec![m]))
        .unwrap_or_default()
}

fn config_text(c: Option<&Value>) -> String {
    let Some(Value::Object(m)) = c else {
        return "–".into();
    };
    m.iter()
        .map(|(k, v)| match v {
            Value::Array(a) => format!(
                "{k}={}",
                a.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join("/")
            ),
            Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `docs/calibration.md` from the stored results under `out`; `notes` (hand-written findings,
/// e.g. the mechanisms measured behind cells outside ±10%) is appended under "Findings".
pub fn render_markdown(plan: &Plan, rows: &[Row], out: &Path, notes: Option<&str>) -> String {
    let mut d = String::new();
    let _ = writeln!(d, "# Calibration: simulator against emulator\n");
    let _ = writeln!(
        d,
        "Generated by `quiclab calibrate` from the results stored in its `--out` directory; do not edit by hand.\n\
         Each path is a scenario file in `scenarios/calibration/` (run one cell by hand with \
         `quiclab sim|emu scenarios/calibration/<path>.toml --set flow.0.stack=<quic|tcp> --set flow.0.cc=<cubic|newreno|bbr>`), \
         run with QUIC (quiclab's CUBIC with HyStart++, the same `cc` code in both engines), TCP with CUBIC, TCP with Reno \
         and, on some paths, TCP with BBR (the model's in the simulator, the kernel's in the emulator, configured from the same TCP knobs: `tcp_rmem`/`tcp_wmem`, \
         route `initcwnd`/`rto_min`, `tcp_sack`, `tcp_timestamps`).\n"
    );
    for kind in [EngineKind::Sim, EngineKind::Emu] {
        let history = read_meta(out, kind);
        if history.is_empty() {
            let _ = writeln!(d, "- **{}**: not run.", kind.name());
        }
        for m in history {
            let _ = writeln!(
                d,
                "- **{}**: `{}` — {} UTC, {:.0} s, {} repetitions per cell{}; kernel {}; {}.",
                kind.name(),
                m.command,
                m.date,
                m.wall_s,
                m.reps,
                if m.quick { " (quick table)" } else { "" },
                m.kernel,
                m.machine
            );
        }
    }
    let _ = writeln!(
        d,
        "\nMedians with distribution-free 95% intervals (none below 6 values); the ratio is emu/sim of the medians; \
         a cell is flagged when a ratio is outside 1 ± {TOLERANCE}. Completion is first packet to last byte of the download; \
         goodput its size over that time; queue is the bottleneck's mean queue delay in the download's direction, \
         compared only where the simulator's median is at least 1 ms (a shorter queue is not standing). \
         Where the emulator's runs of a metric fall into two groups (the widest gap between sorted values at least {gap:.0}% of the median and \
         twice either group's spread, at least {min_runs} runs each: sub-millisecond timing picks one of two behaviours of the kernel), a median between \
         them stands for no run, so the ratio (marked †) compares the simulator with the nearer group's median, and the groups are listed under the table. The download size of each path (column *size*) is chosen so that the emulator half \
         takes at most 35 minutes at 10 repetitions; a size is part of the path's scenario file.\n",
        gap = GROUP_GAP * 100.0,
        min_runs = MIN_GROUP_RUNS,
    );
    let mut t = Markdown::new([
        "path",
        "variant",
        "size",
        "sim completion s",
        "emu completion s",
        "ratio",
        "sim goodput Mbit/s",
        "emu goodput Mbit/s",
        "ratio",
        "sim queue ms",
        "emu queue ms",
        "ratio",
        "",
    ]);
    for r in rows.iter().filter(|r| !is_sharing(r)) {
        let flag = flag_text(r, "**outside ±10%**");
        t.row(cells(r).into_iter().chain([flag.to_string()]));
    }
    d.push_str(&t.render());
    let group_notes = grouped_notes(rows);
    if !group_notes.is_empty() {
        let _ = writeln!(d, "\n† Compared with one of two groups of emulator runs:\n");
        for line in group_notes {
            let _ = writeln!(d, "- {line}");
        }
    }
    if rows.iter().any(is_sharing) {
        let _ = writeln!(
            d,
            "\n### Sharing a bottleneck\n\n\
             Two bulk flows share the path; flow 0 runs the variant's controller, flow 1 CUBIC. The cell compares flow 0's \
             median share of the two flows' summed goodput over the whole run (the emulator measures kernel TCP's goodput over \
             the whole run only), flagged when the engines differ by more \
             than {:.0} percentage points, and the queue delay as above.\n",
            SHARE_TOLERANCE * 100.0
        );
        let mut t = Markdown::new([
            "path",
            "variant",
            "sim share of flow 0 %",
            "emu share of flow 0 %",
            "difference, points",
            "sim queue ms",
            "emu queue ms",
            "ratio",
            "",
        ]);
        for r in rows.iter().filter(|r| is_sharing(r)) {
            let flag = flag_text(r, "**outside**");
            t.row(sharing_cells(r).into_iter().chain([flag.to_string()]));
        }
        d.push_str(&t.render());
    }
    let outside: Vec<String> = rows
        .iter()
        .filter(|r| r.outside() == Some(true))
        .map(|r| format!("{} / {}", r.label, r.variant.name()))
        .collect();
    let _ = writeln!(
        d,
        "\n**Outside ±10%:** {}.\n",
        if outside.is_empty() {
            "none".to_string()
        } else {
            outside.join("; ")
        }
    );
    if let Some(n) = notes {
        let _ = writeln!(d, "## Findings\n\n{}\n", n.trim());
    }
    let _ = writeln!(d, "## The machine during the emulator half\n");
    let _ = writeln!(
        d,
        "CPU busy is the fraction of all CPUs' time not idle over the cell (`/proc/stat`), load the 1-minute load average at the cell's start and end; \
         lateness is the largest 99th percentile, over the cell's runs, of how late the forwarder released packets against their schedule.\n"
    );
    let mut t = Markdown::new([
        "path",
        "variant",
        "runs",
        "wall s",
        "CPU busy",
        "load avg",
        "release lateness p99 µs",
    ]);
    for r in rows {
        let Some(e) = &r.emu else { continue };
        let l = e.load.clone().unwrap_or_default();
        let f = |v: Option<f64>| v.map_or("–".into(), |v| format!("{v:.2}"));
        t.row([
            r.label.clone(),
            r.variant.name().to_string(),
            e.runs.to_string(),
            format!("{:.0}", l.wall_s),
            l.cpu_busy
                .map_or("–".into(), |b| format!("{:.0}%", b * 100.0)),
            format!("{} → {}", f(l.loadavg_1m[0]), f(l.loadavg_1m[1])),
            e.late_p99_us.map_or("–".into(), |v| v.to_string()),
        ]);
    }
    d.push_str(&t.render());
    let _ = writeln!(d, "\n## Effective configuration\n");
    let _ = writeln!(
        d,
        "What each engine recorded in `flows[0].config` of its first run: the simulator from its knobs, the emulator as read back \
         from the kernel (sysctls, routes, `TCP_INFO`).\n"
    );
    let mut t = Markdown::new(["variant", "sim", "emu"]);
    if let Some((first, _)) = plan.paths().first() {
        for r in rows.iter().filter(|r| r.path == *first) {
            t.row([
                r.variant.name().to_string(),
                config_text(r.sim.as_ref().and_then(|s| s.config.as_ref())),
                config_text(r.emu.as_ref().and_then(|s| s.config.as_ref())),
            ]);
        }
    }
    d.push_str(&t.render());
    let _ = writeln!(
        d,
        "\n## Re-running one half\n\n\
         Every cell is a resumable results directory `<out>/<sim|emu>/<path>/<variant>/`. After a model change, re-run only the \
         simulator half into a fresh `sim` directory and render again (the emulator's stored results are reused):\n\n\
         ```sh\nrm -rf <out>/sim\nquiclab calibrate --engine sim --out <out> --markdown docs/calibration.md\n```\n\n\
         The emulator configures kernel TCP from the same knobs, so when the knobs' defaults change the emulator half must \
         be re-run too (`rm -rf <out>/emu`, `--engine emu`): the configuration table above shows any difference.\n"
    );
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn utc_dates_are_civil_dates() {
        assert_eq!(utc_text(UNIX_EPOCH), "1970-01-01 00:00");
        let t = UNIX_EPOCH + Duration::from_secs(1_798_761_600 + 3_600 * 13 + 60 * 7);
        assert_eq!(utc_text(t), "2027-01-01 13:07");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(utc_text(leap), "2000-02-29 00:00");
    }

    #[test]
    fn medians_of_even_counts_average_the_middle_pair() {
        let s = Stat::of(vec![4.0, 1.0, 3.0, 2.0]);
        assert_eq!(s.median, Some(2.5));
        assert_eq!(s.ci95, None);
        let s = Stat::of((1..=10).map(f64::from).collect());
        assert_eq!(s.median, Some(5.5));
        assert!(s.ci95.is_some());
    }

    #[test]
    fn runs_with_two_modes_are_compared_by_the_nearer_one() {
        // The kernel's queue delays on the CoDel path: seven runs near 8.5 ms, three near 19.
        let kernel = Stat::of(vec![8.4, 8.5, 8.5, 8.5, 8.6, 8.6, 8.6, 18.1, 18.9, 19.9]);
        let [lower, upper] = kernel.groups.expect("two groups");
        assert_eq!((lower.n, lower.min, lower.max), (7, 8.4, 8.6));
        assert_eq!((upper.n, upper.median), (3, 18.9));
        assert_eq!(kernel.reference_for(18.4), Some((18.9, Some(upper))));
        assert_eq!(kernel.reference_for(9.0), Some((8.5, Some(lower))));
        // Spread-out values, a lone outlier, or a gap that is noise are one group.
        assert_eq!(Stat::of((1..=10).map(f64::from).collect()).groups, None);
        assert_eq!(
            Stat::of(vec![8.4, 8.5, 8.5, 8.6, 8.6, 8.6, 19.0]).groups,
            None
        );
        assert_eq!(
            Stat::of(vec![10.0, 10.0, 10.01, 10.2, 10.21, 10.21]).groups,
            None
        );
        assert_eq!(kernel.reference_for(18.4).map(|r| r.0), Some(18.9));
        // The ratio records the comparison.
        let side = |q: Vec<f64>| Side {
            queue_delay_s: Stat::of(q),
            ..Side::default()
        };
        let mut grouped = Vec::new();
        let r = ratio(
            &Some(side(vec![
                8.4, 8.5, 8.5, 8.5, 8.6, 8.6, 8.6, 18.1, 18.9, 19.9,
            ])),
            &Some(side(vec![18.0; 10])),
            |s| &s.queue_delay_s,
            "queue",
            &mut grouped,
        );
        assert_eq!(r, Some(18.9 / 18.0));
        assert_eq!(grouped.len(), 1);
        assert_eq!(grouped[0].other.n, 7);
    }

    #[test]
    fn a_cell_is_flagged_by_any_ratio() {
        let row = |c: Option<f64>, g: Option<f64>, q: Option<f64>| Row {
            path: "p".into(),
            label: "p".into(),
            variant: Variant::TcpCubic,
            size: None,
            sim: None,
            emu: None,
            completion_ratio: c,
            goodput_ratio: g,
            queue_delay_ratio: q,
            share_difference: None,
            grouped: Vec::new(),
        };
        assert_eq!(row(Some(1.05), Some(0.95), None).outside(), Some(false));
        assert_eq!(row(Some(1.15), Some(0.95), None).outside(), Some(true));
        assert_eq!(row(Some(1.0), Some(0.85), None).outside(), Some(true));
        assert_eq!(row(Some(1.0), Some(1.0), Some(0.75)).outside(), Some(true));
        assert_eq!(row(None, None, Some(1.02)).outside(), Some(false));
        assert_eq!(row(None, None, None).outside(), None);
        let shared = |d: f64| Row {
            share_difference: Some(d),
            ..row(None, None, Some(1.02))
        };
        assert_eq!(shared(-0.08).outside(), Some(false));
        assert_eq!(shared(0.12).outside(), Some(true));
    }

    #[test]
    fn the_share_is_flow_zeros_part_of_the_whole_run_goodput() {
        let run = |g: &[f64]| serde_json::json!({"flows": g.iter().map(|g| serde_json::json!({"goodput_bps": g})).collect::<Vec<_>>()});
        assert_eq!(whole_run_share(&run(&[6.0, 2.0])), Some(0.75));
        assert_eq!(whole_run_share(&run(&[6.0])), None);
        assert_eq!(whole_run_share(&run(&[0.0, 0.0])), None);
        let missing = serde_json::json!({"flows": [{"goodput_bps": 1.0}, {"goodput_bps": null}]});
        assert_eq!(whole_run_share(&missing), None);
    }
}
