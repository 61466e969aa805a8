//! Sweeps (`quiclab load sweep`): one attack per (rate, HTTP version), each into its own results
//! file, and the sweep's table as Markdown and CSV (seed 004's table: rate, protocol, mean
//! latency, throughput, success), rewritten after every attack so an interrupted sweep keeps
//! its table. [`run`] runs a sweep directly or through a [`Through`] (an emulated path).

use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use endpoints::client::{ClientConfig, HttpVersion};

use crate::attack::{AttackPlan, Sink};
use crate::client::RunError;
use crate::live::LiveStats;
use crate::metrics::Summary;
use crate::record::{Encoding, RecordWriter};
use crate::schedule::{Ramp, Schedule, ScheduleError};
use crate::targets::Target;
use crate::units::Rate;

/// File of a sweep through a [`Through`]: the path and each attack's record of it.
pub const PATH_RECORD: &str = "emulator.json";

/// Why a sweep stopped.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// A rate or duration the schedule refuses (checked for every point before the first
    /// attack).
    #[error("--rates {rate}: {source}")]
    Schedule {
        /// The rate.
        rate: Rate,
        /// Why.
        source: ScheduleError,
    },
    /// A file of the sweep could not be written.
    #[error("cannot write {}: {source}", .path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// An attack failed.
    #[error("attack {name}: {source}")]
    Attack {
        /// The attack's label.
        name: String,
        /// Why.
        source: RunError,
    },
    /// The path the attacks run through failed.
    #[error("{0}")]
    Through(String),
}

/// Where a sweep's attacks run other than directly on this host (the emulator's path through
/// namespaces and the link model, `interop::via::EmulatedPath`).
pub trait Through {
    /// Runs one attack there (calling `attack` exactly once), returning its outcome and the
    /// path's record of it (JSON, e.g. the bottleneck's counters during the attack).
    fn attack(
        &self,
        attack: &mut (dyn FnMut() -> Result<Summary, RunError> + Send),
    ) -> Result<(Result<Summary, RunError>, serde_json::Value), SweepError>;
    /// What the path is (JSON), written with the records.
    fn description(&self) -> serde_json::Value;
}

/// What a front end shows while a sweep runs; every method has a silent default.
pub trait Progress: Sync {
    /// An attack starts.
    fn started(&self, _name: &str, _rate: Rate, _duration: Duration) {}
    /// Runs `attack` (a front end may draw `live` meanwhile).
    fn attack(
        &self,
        _live: &Arc<LiveStats>,
        attack: &mut dyn FnMut() -> Result<Summary, RunError>,
    ) -> Result<Summary, RunError> {
        attack()
    }
    /// An attack finished.
    fn finished(&self, _name: &str, _summary: &Summary) {}
}

impl Progress for () {}

/// A sweep: every rate × HTTP version, one attack each.
pub struct Sweep<'a> {
    /// The rates, in order.
    pub rates: &'a [Rate],
    /// The HTTP versions, in order (per rate).
    pub http: &'a [HttpVersion],
    /// Duration of each attack.
    pub duration: Duration,
    /// Pause between attacks (lets connections and server queues drain).
    pub pause: Duration,
    /// Directory of the results files and tables (created if missing).
    pub out: &'a Path,
    /// The requests, used round-robin.
    pub targets: Vec<Target>,
    /// Attack threads.
    pub threads: usize,
    /// The attack plan of one point: the caller's limits and timeouts around its name, HTTP
    /// version, schedule and targets.
    pub plan: &'a (dyn Fn(String, HttpVersion, Schedule, Vec<Target>) -> AttackPlan + Sync),
    /// The client configuration of one HTTP version.
    pub client: &'a (dyn Fn(HttpVersion) -> ClientConfig + Sync),
}

impl Sweep<'_> {
    /// Checks every point's schedule, so bad input is refused before the first attack.
    pub fn check(&self) -> Result<(), SweepError> {
        for rate in self.rates {
            self.schedule(*rate)?;
        }
        Ok(())
    }

    fn schedule(&self, rate: Rate) -> Result<Schedule, SweepError> {
        Schedule::new(Ramp::Constant(rate), Some(self.duration), None)
            .map_err(|source| SweepError::Schedule { rate, source })
    }
}

/// Runs the sweep's attacks in order, directly or `through` a path, until all ran or `stop`
/// turns true; returns the finished points. After every attack the tables (`table.csv`,
/// `table.md`) and, through a path, [`PATH_RECORD`] are rewritten.
pub fn run(
    sweep: &Sweep<'_>,
    through: Option<&dyn Through>,
    stop: &Arc<AtomicBool>,
    progress: &dyn Progress,
) -> Result<Vec<SweepPoint>, SweepError> {
    sweep.check()?;
    fsutil::create_dir_all(sweep.out).map_err(|source| SweepError::Io {
        path: sweep.out.to_path_buf(),
        source,
    })?;
    let mut records: Vec<serde_json::Value> = Vec::new();
    let mut points = Vec::new();
    'grid: for &rate in sweep.rates {
        for &http in sweep.http {
            if stop.load(Ordering::SeqCst) {
                break 'grid;
            }
            if !points.is_empty() {
                std::thread::sleep(sweep.pause);
            }
            let file = file_name(http.label(), rate.hz());
            let name = attack_name(http.label(), rate.hz());
            let plan = (sweep.plan)(
                name.clone(),
                http,
                sweep.schedule(rate)?,
                sweep.targets.clone(),
            );
            let results = sweep.out.join(&file);
            let sink =
                fsutil::create_replacing(&results, fsutil::OUTPUT_MODE).map_err(|source| {
                    SweepError::Io {
                        path: results.clone(),
                        source,
                    }
                })?;
            let sink: Sink = Some(RecordWriter::new(
                Box::new(BufWriter::new(sink)),
                Encoding::Json,
            ));
            let live = Arc::new(LiveStats::new());
            progress.started(&name, rate, sweep.duration);
            let mut pending = Some((plan, sink));
            let mut once = || {
                let (plan, sink) = pending.take().expect("a sweep point's attack runs once");
                crate::client::run_blocking(
                    plan,
                    (sweep.client)(http),
                    sweep.threads,
                    sink,
                    live.clone(),
                    stop.clone(),
                )
            };
            let mut attack = || progress.attack(&live, &mut once);
            let outcome = match through {
                None => attack(),
                Some(t) => {
                    let (outcome, mut record) = t.attack(&mut attack)?;
                    record["rate_per_s"] = rate.hz().into();
                    record["http"] = http.label().into();
                    records.push(record);
                    outcome
                }
            };
            let summary = outcome.map_err(|source| SweepError::Attack {
                name: name.clone(),
                source,
            })?;
            progress.finished(&name, &summary);
            points.push(SweepPoint {
                rate: rate.hz(),
                http: http.label().to_string(),
                file,
                summary,
            });
            write_tables(sweep.out, &points)?;
            if let Some(t) = through {
                let text = serde_json::to_string_pretty(&serde_json::json!({
                    "path": t.description(),
                    "points": records,
                }))
                .unwrap_or_default();
                write(&sweep.out.join(PATH_RECORD), text + "\n")?;
            }
        }
    }
    Ok(points)
}

/// The sweep's table as CSV, in its directory.
pub const TABLE_CSV: &str = "table.csv";
/// The sweep's table as Markdown, in its directory.
pub const TABLE_MD: &str = "table.md";

/// Writes [`TABLE_CSV`] and [`TABLE_MD`] of `points` into `dir`.
pub fn write_tables(dir: &Path, points: &[SweepPoint]) -> Result<(), SweepError> {
    write(&dir.join(TABLE_CSV), csv(points))?;
    write(&dir.join(TABLE_MD), markdown(points))
}

fn write(path: &Path, text: String) -> Result<(), SweepError> {
    fsutil::write_atomic(path, text.as_bytes()).map_err(|source| SweepError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// One finished attack of a sweep.
#[derive(Debug, Clone)]
pub struct SweepPoint {
    /// Requested rate (requests per second).
    pub rate: f64,
    /// HTTP version label (`1.1`, `2`, `3`).
    pub http: String,
    /// Results file name, relative to the sweep directory.
    pub file: String,
    /// The attack's report.
    pub summary: Summary,
}

/// The results file name of one sweep point, e.g. `h3-r100.jsonl`.
pub fn file_name(http: &str, rate: f64) -> String {
    format!("h{http}-r{rate}.jsonl")
}

/// The attack label of one sweep point, e.g. `h3-100/s`.
pub fn attack_name(http: &str, rate: f64) -> String {
    format!("h{http}-{rate}/s")
}

/// The table's columns: the CSV header and the Markdown title of each. The titles are also the
/// metric names a study's `paper.toml` uses for these tables.
pub const COLUMNS: [(&str, &str); 12] = [
    ("rate_per_s", "rate (req/s)"),
    ("http", "HTTP"),
    ("requests", "requests"),
    ("achieved_rate_per_s", "achieved (req/s)"),
    ("mean_latency_ms", "mean latency (ms)"),
    ("mean_latency_ci95_ms", "± 95% CI (ms)"),
    ("p50_latency_ms", "p50 (ms)"),
    ("p99_latency_ms", "p99 (ms)"),
    ("throughput_mbit_s", "throughput (Mbit/s)"),
    ("successes_per_s", "successes/s"),
    ("success_pct", "success %"),
    ("not_sent_on_time", "not on time"),
];

fn cells(p: &SweepPoint) -> [String; 12] {
    let s = &p.summary;
    [
        format!("{}", p.rate),
        p.http.clone(),
        s.requests.to_string(),
        format!("{:.2}", s.rate.achieved),
        format!("{:.3}", s.latency_ms.mean),
        s.latency_mean_ci95_ms
            .map_or_else(String::new, |h| format!("{h:.3}")),
        format!("{:.3}", s.latency_ms.p50),
        format!("{:.3}", s.latency_ms.p99),
        format!("{:.3}", s.throughput.mbit_in_per_s),
        format!("{:.2}", s.throughput.successes_per_s),
        format!("{:.2}", s.success_ratio * 100.0),
        s.not_sent_on_time.total.to_string(),
    ]
}

/// The table as CSV (header row first).
pub fn csv(points: &[SweepPoint]) -> String {
    tables::csv(COLUMNS.map(|(h, _)| h), points.iter().map(cells))
}

/// The table as GitHub Markdown.
pub fn markdown(points: &[SweepPoint]) -> String {
    let mut t = tables::Markdown::with_columns(COLUMNS.map(|(_, h)| (h, tables::Align::Right)));
    for p in points {
        t.row(cells(p));
    }
    t.render()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Metrics;
    use crate::record::tests::sample;

    fn point(rate: f64, http: &str) -> SweepPoint {
        let mut m = Metrics::new();
        for seq in 0..10 {
            let mut r = sample(seq);
            r.error = None;
            m.add(&r);
        }
        SweepPoint {
            rate,
            http: http.into(),
            file: file_name(http, rate),
            summary: m.summary(),
        }
    }

    #[test]
    fn tables_have_one_row_per_point() {
        let points = [point(50.0, "1.1"), point(100.0, "3")];
        let c = csv(&points);
        let lines: Vec<&str> = c.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("rate_per_s,http,requests"));
        assert!(lines[2].starts_with("100,3,10,"), "{}", lines[2]);
        assert!(lines[2].contains(",100.00,0"), "{}", lines[2]);
        let md = markdown(&points);
        assert_eq!(md.lines().count(), 4);
        assert!(md.lines().nth(2).unwrap().starts_with("| 50 | 1.1 | 10 |"));
        assert_eq!(file_name("1.1", 50.0), "h1.1-r50.jsonl");
    }
}
