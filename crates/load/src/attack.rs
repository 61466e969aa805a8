//! The attack: a dedicated timing thread releases requests at their intended times (open model),
//! tokio tasks carry them, and a collector thread streams records to the writer and histograms.
//!
//! Request `i` leaves at `start + t_i` whether or not earlier ones finished. Its latency counts
//! from `t_i`, so a slow server or a late scheduler shows up in the numbers instead of silently
//! lowering the load (no coordinated omission). Requests that cannot start because `max_inflight`
//! are already running are *skipped with a record* (never delayed, which would bunch them up).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit, Semaphore};

use crate::live::LiveStats;
use crate::metrics::Summary;
use crate::record::{RecordError, RecordWriter, ResultRecord};
use crate::requester::{Outcome, Requester};
use crate::schedule::{Ramp, Schedule, Slot};
use crate::targets::Target;

/// Records waiting for the collector; a stuck output back-pressures the scheduler (visible as
/// lateness) instead of growing memory without bound.
const RECORD_QUEUE: usize = 65_536;

/// Everything that defines one attack.
#[derive(Debug, Clone)]
pub struct AttackPlan {
    /// Label written into every record.
    pub name: String,
    /// HTTP version label written into every record (`1.1`, `2`, `3`).
    pub http: String,
    /// When requests are due.
    pub schedule: Schedule,
    /// Request templates, used round-robin.
    pub targets: Vec<Target>,
    /// Most requests in flight at once; a due request beyond it is skipped with a record.
    pub max_inflight: usize,
    /// A request sent later than this after its intended time is flagged late.
    pub late_threshold: Duration,
    /// Per-request limit, enforced here whatever the client does.
    pub timeout: Duration,
}

/// An attack that could not run or whose results could not be written.
#[derive(Debug, thiserror::Error)]
pub enum AttackError {
    /// No targets.
    #[error("the attack has no targets")]
    NoTargets,
    /// `max_inflight` is zero or too large.
    #[error("--max-inflight must be between 1 and 1000000")]
    BadInflight,
    /// Writing the results stream failed.
    #[error("writing results: {0}")]
    Write(#[from] RecordError),
    /// A worker thread failed to start or died.
    #[error("attack thread: {0}")]
    Thread(String),
}

/// Where records go: a results writer, or nowhere (only the summary is kept).
pub type Sink = Option<RecordWriter<Box<dyn Write + Send>>>;

/// Shared, read-only context of the request tasks.
struct Context {
    plan: AttackPlan,
    phase_labels: Vec<String>,
    start: Instant,
    start_unix_ns: u64,
    records: mpsc::Sender<ResultRecord>,
    live: Arc<LiveStats>,
}

/// Runs the attack on the current tokio runtime and returns the summary of all its records.
/// `stop` ends scheduling early (requests in flight still finish and are recorded).
pub async fn attack<R: Requester>(
    plan: AttackPlan,
    requester: Arc<R>,
    sink: Sink,
    live: Arc<LiveStats>,
    stop: Arc<AtomicBool>,
) -> Result<Summary, AttackError> {
    if plan.targets.is_empty() {
        return Err(AttackError::NoTargets);
    }
    if plan.max_inflight == 0 || plan.max_inflight > 1_000_000 {
        return Err(AttackError::BadInflight);
    }
    let (tx, rx) = mpsc::channel(RECORD_QUEUE);
    let collector = spawn_collector(rx, sink, live.clone())?;
    let phases = match plan.schedule.ramp() {
        Ramp::Steps { rates, .. } => rates.len(),
        _ => 1,
    };
    let phase_labels = (0..phases).map(|p| plan.schedule.phase_label(p)).collect();
    let start_unix_ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let ctx = Arc::new(Context {
        plan,
        phase_labels,
        start: Instant::now(),
        start_unix_ns,
        records: tx,
        live,
    });
    let (done_tx, done_rx) = oneshot::channel();
    let handle = tokio::runtime::Handle::current();
    std::thread::Builder::new()
        .name("quiclab-load-timer".into())
        .spawn(move || {
            run_timer(&handle, &ctx, &requester, &stop);
            // Dropping the context closes the record channel once every task has finished.
            drop(ctx);
            let _ = done_tx.send(());
        })
        .map_err(|e| AttackError::Thread(e.to_string()))?;
    done_rx
        .await
        .map_err(|_| AttackError::Thread("the timing thread died".into()))?;
    tokio::task::spawn_blocking(move || collector.join())
        .await
        .map_err(|e| AttackError::Thread(e.to_string()))?
        .map_err(|_| AttackError::Thread("the collector thread died".into()))?
}

/// The collector: the only owner of the output, so records are written in completion order.
fn spawn_collector(
    mut rx: mpsc::Receiver<ResultRecord>,
    mut sink: Sink,
    live: Arc<LiveStats>,
) -> Result<std::thread::JoinHandle<Result<Summary, AttackError>>, AttackError> {
    std::thread::Builder::new()
        .name("quiclab-load-collector".into())
        .spawn(move || {
            let mut first_error = None;
            while let Some(record) = rx.blocking_recv() {
                live.with_metrics(|m| m.add(&record));
                if let (Some(writer), None) = (sink.as_mut(), first_error.as_ref()) {
                    // Keep draining after a write error so request tasks never block on us.
                    first_error = writer.write(&record).err();
                }
            }
            if let (Some(writer), None) = (sink.as_mut(), first_error.as_ref()) {
                first_error = writer.flush().err();
            }
            match first_error {
                Some(e) => Err(e.into()),
                None => Ok(live.summary()),
            }
        })
        .map_err(|e| AttackError::Thread(e.to_string()))
}

/// Makes sleeps end within microseconds of their deadline (the default slack is 50 µs).
fn tighten_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK only changes this thread's timer slack; it takes plain integers.
    #[cfg(target_os = "linux")]
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// The timing loop: sleep to each absolute deadline, then launch (or skip) the request.
fn run_timer<R: Requester>(
    handle: &tokio::runtime::Handle,
    ctx: &Arc<Context>,
    requester: &Arc<R>,
    stop: &AtomicBool,
) {
    tighten_timer_slack();
    let permits = Arc::new(Semaphore::new(ctx.plan.max_inflight));
    let targets = &ctx.plan.targets;
    for seq in 0u64.. {
        let Some(slot) = ctx.plan.schedule.slot(seq) else {
            break;
        };
        // Absolute deadlines: a late wake-up never shifts later requests.
        let deadline = ctx.start + slot.at;
        let now = Instant::now();
        if deadline > now {
            std::thread::sleep(deadline - now);
        }
        if stop.load(Ordering::Relaxed) {
            break;
        }
        ctx.live.scheduled_one();
        let target = targets[(seq % targets.len() as u64) as usize].clone();
        match permits.clone().try_acquire_owned() {
            Ok(permit) => {
                ctx.live.started_one();
                handle.spawn(run_request(
                    ctx.clone(),
                    requester.clone(),
                    target,
                    slot,
                    permit,
                ));
            }
            Err(_) => {
                let record = skipped_record(ctx, slot);
                if ctx.records.blocking_send(record).is_err() {
                    break;
                }
            }
        }
    }
    // Every task holds a permit until its record is queued: owning them all means all are done.
    let all = u32::try_from(ctx.plan.max_inflight).unwrap_or(u32::MAX);
    let _ = handle.block_on(permits.acquire_many(all));
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn base_record(ctx: &Context, slot: Slot) -> ResultRecord {
    let intended_ns = nanos(slot.at);
    ResultRecord {
        seq: slot.seq,
        attack: ctx.plan.name.clone(),
        phase: ctx
            .phase_labels
            .get(slot.phase)
            .cloned()
            .unwrap_or_default(),
        http: ctx.plan.http.clone(),
        intended_ns,
        intended_unix_ns: ctx.start_unix_ns.saturating_add(intended_ns),
        sent_ns: None,
        late: false,
        connect_ns: None,
        tls_ns: None,
        quic_handshake_ns: None,
        ttfb_ns: None,
        latency_ns: 0,
        service_ns: None,
        bytes_in: 0,
        bytes_out: 0,
        status: None,
        reused: false,
        error: None,
    }
}

fn skipped_record(ctx: &Context, slot: Slot) -> ResultRecord {
    ResultRecord {
        error: Some(format!(
            "not sent: max in-flight ({}) reached",
            ctx.plan.max_inflight
        )),
        ..base_record(ctx, slot)
    }
}

async fn run_request<R: Requester>(
    ctx: Arc<Context>,
    requester: Arc<R>,
    target: Target,
    slot: Slot,
    permit: OwnedSemaphorePermit,
) {
    let sent = Instant::now();
    let timeout = ctx.plan.timeout;
    let outcome = tokio::time::timeout(timeout, requester.send(target))
        .await
        .unwrap_or_else(|_| Outcome::failed(format!("timeout after {timeout:?}")));
    let done = Instant::now();
    let intended = ctx.start + slot.at;
    let lateness = sent.saturating_duration_since(intended);
    let record = ResultRecord {
        sent_ns: Some(nanos(sent.saturating_duration_since(ctx.start))),
        late: lateness > ctx.plan.late_threshold,
        connect_ns: outcome.connect.map(nanos),
        tls_ns: outcome.tls.map(nanos),
        quic_handshake_ns: outcome.quic_handshake.map(nanos),
        ttfb_ns: outcome.ttfb.map(nanos),
        latency_ns: nanos(done.saturating_duration_since(intended)),
        service_ns: Some(nanos(done.saturating_duration_since(sent))),
        bytes_in: outcome.bytes_in,
        bytes_out: outcome.bytes_out,
        status: outcome.status,
        reused: outcome.reused_connection,
        error: outcome.error,
        ..base_record(&ctx, slot)
    };
    // The collector only goes away when every sender is gone, so this cannot fail while we run.
    let _ = ctx.records.send(record).await;
    ctx.live.finished_one();
    drop(permit);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{read_records, Encoding};
    use crate::units::Rate;
    use std::sync::Mutex;

    /// A client that answers 200 after a fixed service time, counting concurrent requests.
    struct Fake {
        service: Duration,
    }

    impl Requester for Fake {
        async fn send(&self, target: Target) -> Outcome {
            tokio::time::sleep(self.service).await;
            Outcome {
                status: Some(if target.url.path() == "/fail" {
                    500
                } else {
                    200
                }),
                bytes_in: 11_000,
                ttfb: Some(self.service / 2),
                ..Outcome::default()
            }
        }
    }

    fn plan(rate: f64, seconds: f64, max_inflight: usize) -> AttackPlan {
        AttackPlan {
            name: "test".into(),
            http: "fake".into(),
            schedule: Schedule::new(
                Ramp::Constant(Rate::per_second(rate).unwrap()),
                Some(Duration::from_secs_f64(seconds)),
                None,
            )
            .unwrap(),
            targets: vec![Target {
                method: http::Method::GET,
                url: "https://localhost:1/11000".parse().unwrap(),
                headers: vec![],
                body: bytes::Bytes::new(),
            }],
            max_inflight,
            late_threshold: Duration::from_millis(20),
            timeout: Duration::from_secs(2),
        }
    }

    /// A `Write` that keeps what was written, shared with the test.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    async fn run(plan: AttackPlan, service: Duration) -> (Summary, Vec<ResultRecord>) {
        let out = Shared::default();
        let sink: Sink = Some(RecordWriter::new(Box::new(out.clone()), Encoding::Json));
        let summary = attack(
            plan,
            Arc::new(Fake { service }),
            sink,
            Arc::new(LiveStats::new()),
            Arc::new(AtomicBool::new(false)),
        )
        .await
        .unwrap();
        let bytes = out.0.lock().unwrap().clone();
        let records = read_records(std::io::Cursor::new(bytes))
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        (summary, records)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn open_model_holds_the_rate_and_records_every_request() {
        let (s, records) = run(plan(500.0, 1.0, 1000), Duration::from_millis(20)).await;
        assert_eq!(records.len(), 500);
        assert_eq!(s.requests, 500);
        assert_eq!(s.successes, 500);
        let mut seqs: Vec<u64> = records.iter().map(|r| r.seq).collect();
        seqs.sort_unstable();
        assert_eq!(seqs, (0..500).collect::<Vec<_>>());
        assert!(
            (s.rate.achieved / 500.0 - 1.0).abs() < 0.02,
            "achieved {}",
            s.rate.achieved
        );
        // Latency counts from the intended time, so it is at least the service time.
        assert!(records.iter().all(|r| r.latency_ns >= 20_000_000));
        assert!(records
            .iter()
            .all(|r| r.latency_ns >= r.service_ns.unwrap()));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_inflight_cap_skips_with_a_record() {
        // 100/s with 200 ms service needs ~20 in flight; a cap of 5 must skip most requests.
        let (s, records) = run(plan(100.0, 0.5, 5), Duration::from_millis(200)).await;
        assert_eq!(records.len(), 50);
        let skipped = records.iter().filter(|r| r.sent_ns.is_none()).count() as u64;
        assert!(skipped >= 30, "skipped {skipped}");
        assert_eq!(s.not_sent_on_time.skipped, skipped);
        assert_eq!(s.sent + skipped, 50);
        assert!(records
            .iter()
            .filter(|r| r.sent_ns.is_none())
            .all(|r| r.error.as_deref() == Some("not sent: max in-flight (5) reached")));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_timeout_bounds_every_request() {
        let mut p = plan(20.0, 0.2, 100);
        p.timeout = Duration::from_millis(50);
        let (s, records) = run(p, Duration::from_secs(10)).await;
        assert_eq!(records.len(), 4);
        assert_eq!(s.successes, 0);
        assert!(records
            .iter()
            .all(|r| r.error.as_deref().is_some_and(|e| e.starts_with("timeout"))));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stop_ends_scheduling() {
        let stop = Arc::new(AtomicBool::new(true));
        let s = attack(
            plan(100.0, 10.0, 10),
            Arc::new(Fake {
                service: Duration::ZERO,
            }),
            None,
            Arc::new(LiveStats::new()),
            stop,
        )
        .await
        .unwrap();
        assert_eq!(s.requests, 0);
    }
}
