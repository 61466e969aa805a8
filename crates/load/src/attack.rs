//! The attack: a dedicated timing thread releases requests at their intended times (open model),
//! a few long-lived *lane* tasks carry them, and a collector thread streams records to the
//! writer and histograms.
//!
//! Request `i` leaves at `start + t_i` whether or not earlier ones finished. Its latency counts
//! from `t_i`, so a slow server or a late scheduler shows up in the numbers instead of silently
//! lowering the load (no coordinated omission). Requests that cannot start because `max_inflight`
//! are already running are *skipped with a record* (never delayed, which would bunch them up).
//!
//! Why lanes and batches: at tens of thousands of requests per second, a spawned task per request
//! (an allocation, a cross-thread wake-up of the runtime, a record sent on its own) cost more CPU
//! than the HTTP exchange. Now each wake-up of the timing thread hands every request that is due
//! at that instant to the lanes in one message per lane, each lane drives its requests as futures
//! inside one task, and finished requests go to the collector in batches. Requests are still
//! released at their own intended times and never early.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::stream::{FuturesUnordered, StreamExt};
use futures_util::FutureExt;
use tokio::sync::{mpsc, oneshot};

use crate::live::LiveStats;
use crate::metrics::Summary;
use crate::record::{RecordError, RecordWriter, ResultRecord};
use crate::requester::{Outcome, Requester};
use crate::schedule::{Ramp, Schedule, Slot};
use crate::targets::Target;

/// Batches of finished requests waiting for the collector. With [`MAX_BATCH`] records per batch
/// at most 65,536 records wait; a stuck output back-pressures the lanes and then the scheduler
/// (visible as lateness) instead of growing memory without bound.
const RECORD_BATCHES: usize = 256;

/// How often an idle collector looks for finished requests: at most this much delay before a
/// record reaches the results file and the live counters, and 1000 wake-ups a second at most
/// while nothing arrives (a busy collector does not sleep).
const COLLECT_INTERVAL: Duration = Duration::from_millis(1);

/// Most requests released in one wake-up of the timing thread, and most records in one batch to
/// the collector: bounds the memory of one message and keeps a long-late timer from starving
/// the lanes.
pub const MAX_BATCH: usize = 256;

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
    /// No lanes (requesters) to carry requests.
    #[error("the attack has no requesters")]
    NoLanes,
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

/// One request released by the timing thread to a lane.
#[derive(Debug, Clone, Copy)]
struct Job {
    slot: Slot,
}

/// What a lane learnt about one request; the collector turns it into a [`ResultRecord`]
/// (filling the labels from one reused record, so finishing a request allocates no strings).
#[derive(Debug)]
struct Done {
    slot: Slot,
    /// Actual send, since the attack start; `None`: not sent (skipped).
    sent_ns: Option<u64>,
    late: bool,
    latency_ns: u64,
    service_ns: Option<u64>,
    outcome: Outcome,
}

/// Shared, read-only context of the lanes and the timing thread.
struct Context {
    plan: AttackPlan,
    start: Instant,
    records: mpsc::Sender<Vec<Done>>,
    live: Arc<LiveStats>,
    /// Requests released and not yet finished (only the timing thread adds).
    inflight: AtomicUsize,
}

/// Runs the attack on the current tokio runtime and returns the summary of all its records.
/// Requests are dealt round-robin to `lanes` (one task each: typically one per pooled
/// connection, or one per worker thread). `stop` ends scheduling early (requests in flight
/// still finish and are recorded).
pub async fn attack<R: Requester>(
    plan: AttackPlan,
    lanes: Vec<R>,
    sink: Sink,
    live: Arc<LiveStats>,
    stop: Arc<AtomicBool>,
) -> Result<Summary, AttackError> {
    if plan.targets.is_empty() {
        return Err(AttackError::NoTargets);
    }
    if lanes.is_empty() {
        return Err(AttackError::NoLanes);
    }
    if plan.max_inflight == 0 || plan.max_inflight > 1_000_000 {
        return Err(AttackError::BadInflight);
    }
    let (tx, rx) = mpsc::channel(RECORD_BATCHES);
    let phases = match plan.schedule.ramp() {
        Ramp::Steps { rates, .. } => rates.len(),
        _ => 1,
    };
    let phase_labels: Vec<String> = (0..phases).map(|p| plan.schedule.phase_label(p)).collect();
    let start_unix_ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let template = ResultRecord {
        attack: plan.name.clone(),
        phase: phase_labels.first().cloned().unwrap_or_default(),
        http: plan.http.clone(),
        ..ResultRecord::default()
    };
    let collector = spawn_collector(
        rx,
        sink,
        live.clone(),
        Labels {
            template,
            phase_labels,
            start_unix_ns,
            max_inflight: plan.max_inflight,
        },
    )?;
    let ctx = Arc::new(Context {
        plan,
        start: Instant::now(),
        records: tx,
        live,
        inflight: AtomicUsize::new(0),
    });
    let handle = tokio::runtime::Handle::current();
    let mut senders = Vec::with_capacity(lanes.len());
    let mut tasks = Vec::with_capacity(lanes.len());
    for requester in lanes {
        let (jobs_tx, jobs_rx) = mpsc::unbounded_channel();
        senders.push(jobs_tx);
        tasks.push(handle.spawn(run_lane(ctx.clone(), requester, jobs_rx)));
    }
    let (done_tx, done_rx) = oneshot::channel();
    std::thread::Builder::new()
        .name("quiclab-load-timer".into())
        .spawn(move || {
            run_timer(&ctx, senders, &stop);
            // Dropping the context (and the lanes' copies as they end) closes the record
            // channel once every request has finished.
            drop(ctx);
            let _ = done_tx.send(());
        })
        .map_err(|e| AttackError::Thread(e.to_string()))?;
    done_rx
        .await
        .map_err(|_| AttackError::Thread("the timing thread died".into()))?;
    for task in tasks {
        task.await
            .map_err(|e| AttackError::Thread(format!("a request lane died: {e}")))?;
    }
    tokio::task::spawn_blocking(move || collector.join())
        .await
        .map_err(|e| AttackError::Thread(e.to_string()))?
        .map_err(|_| AttackError::Thread("the collector thread died".into()))?
}

/// What the collector needs to turn a [`Done`] into a record.
struct Labels {
    /// A record carrying the attack, HTTP and current phase labels; every other field is
    /// overwritten per request.
    template: ResultRecord,
    phase_labels: Vec<String>,
    start_unix_ns: u64,
    max_inflight: usize,
}

impl Labels {
    /// Fills `rec` (the reused record) from `d`; the phase label is only copied when it changes.
    fn fill(&self, rec: &mut ResultRecord, current_phase: &mut usize, d: Done) {
        if d.slot.phase != *current_phase {
            *current_phase = d.slot.phase;
            rec.phase.clear();
            if let Some(label) = self.phase_labels.get(d.slot.phase) {
                rec.phase.push_str(label);
            }
        }
        let intended_ns = nanos(d.slot.at);
        let o = d.outcome;
        rec.seq = d.slot.seq;
        rec.intended_ns = intended_ns;
        rec.intended_unix_ns = self.start_unix_ns.saturating_add(intended_ns);
        rec.sent_ns = d.sent_ns;
        rec.late = d.late;
        rec.connect_ns = o.connect.map(nanos);
        rec.tls_ns = o.tls.map(nanos);
        rec.quic_handshake_ns = o.quic_handshake.map(nanos);
        rec.ttfb_ns = o.ttfb.map(nanos);
        rec.latency_ns = d.latency_ns;
        rec.service_ns = d.service_ns;
        rec.bytes_in = o.bytes_in;
        rec.bytes_out = o.bytes_out;
        rec.status = o.status;
        rec.reused = o.reused_connection;
        rec.error = match (d.sent_ns, o.error) {
            (None, _) => Some(format!(
                "not sent: max in-flight ({}) reached",
                self.max_inflight
            )),
            (Some(_), e) => e,
        };
    }
}

/// The collector: the only owner of the output, so records are written in completion order.
fn spawn_collector(
    mut rx: mpsc::Receiver<Vec<Done>>,
    mut sink: Sink,
    live: Arc<LiveStats>,
    labels: Labels,
) -> Result<std::thread::JoinHandle<Result<Summary, AttackError>>, AttackError> {
    std::thread::Builder::new()
        .name("quiclab-load-collector".into())
        .spawn(move || {
            let mut first_error = None;
            let mut record = labels.template.clone();
            let mut phase = 0;
            let mut open = true;
            while open {
                // Polled, not woken: a sender only wakes a waiting receiver, and the collector
                // never waits on the channel, so finishing a request costs the lanes no
                // cross-thread wake-up (these were a futex call per record). It drains what
                // arrived, then sleeps COLLECT_INTERVAL when there was nothing.
                let mut drained = false;
                // One lock of the live metrics per drain, not per record.
                live.with_metrics(|m| loop {
                    let batch = match rx.try_recv() {
                        Ok(batch) => batch,
                        Err(mpsc::error::TryRecvError::Empty) => break,
                        Err(mpsc::error::TryRecvError::Disconnected) => {
                            open = false;
                            break;
                        }
                    };
                    drained = true;
                    for done in batch {
                        labels.fill(&mut record, &mut phase, done);
                        m.add(&record);
                        if let (Some(writer), None) = (sink.as_mut(), first_error.as_ref()) {
                            // Keep draining after a write error so lanes never block on us.
                            first_error = writer.write(&record).err();
                        }
                    }
                });
                if open && !drained {
                    std::thread::sleep(COLLECT_INTERVAL);
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

/// The slots from `next` on that are due at `elapsed` since the start (at most `max`), in order;
/// returns them and the first slot not yet due (`None`: the schedule has ended).
fn due_slots(
    schedule: &Schedule,
    next: Slot,
    elapsed: Duration,
    max: usize,
    out: &mut Vec<Slot>,
) -> Option<Slot> {
    let mut slot = Some(next);
    while let Some(s) = slot {
        if s.at > elapsed || out.len() >= max {
            break;
        }
        out.push(s);
        slot = schedule.slot(s.seq + 1);
    }
    slot
}

/// The timing loop: sleep to the next absolute deadline, then release every request due by
/// then (or skip it when `max_inflight` are running), one message per lane.
fn run_timer(ctx: &Arc<Context>, lanes: Vec<mpsc::UnboundedSender<Vec<Job>>>, stop: &AtomicBool) {
    tighten_timer_slack();
    let max_inflight = ctx.plan.max_inflight;
    let mut per_lane: Vec<Vec<Job>> = vec![Vec::new(); lanes.len()];
    let mut due = Vec::with_capacity(MAX_BATCH);
    let mut next_lane = 0;
    let mut next = ctx.plan.schedule.slot(0);
    while let Some(first) = next {
        // Absolute deadlines: a late wake-up never shifts later requests.
        let deadline = ctx.start + first.at;
        let now = Instant::now();
        if deadline > now {
            std::thread::sleep(deadline - now);
        }
        if stop.load(Ordering::Relaxed) {
            break;
        }
        due.clear();
        next = due_slots(
            &ctx.plan.schedule,
            first,
            ctx.start.elapsed(),
            MAX_BATCH,
            &mut due,
        );
        let mut skipped = Vec::new();
        for &slot in &due {
            ctx.live.scheduled_one();
            // Only this thread adds, so the check cannot be overtaken.
            if ctx.inflight.load(Ordering::Acquire) < max_inflight {
                ctx.inflight.fetch_add(1, Ordering::AcqRel);
                ctx.live.started_one();
                per_lane[next_lane].push(Job { slot });
                next_lane = (next_lane + 1) % lanes.len();
            } else {
                skipped.push(Done {
                    slot,
                    sent_ns: None,
                    late: false,
                    latency_ns: 0,
                    service_ns: None,
                    outcome: Outcome::default(),
                });
            }
        }
        for (lane, jobs) in lanes.iter().zip(per_lane.iter_mut()) {
            if !jobs.is_empty() && lane.send(std::mem::take(jobs)).is_err() {
                // A lane died (it panicked); its join reports the error.
                return;
            }
        }
        if !skipped.is_empty() && ctx.records.blocking_send(skipped).is_err() {
            return;
        }
    }
    // Dropping the senders tells each lane that no more requests come.
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// One lane: receives batches of due requests and drives them concurrently as futures inside
/// this one task, sending finished ones to the collector in batches. Ends when the timing
/// thread is done and every request it was given has finished.
async fn run_lane<R: Requester>(
    ctx: Arc<Context>,
    requester: R,
    mut jobs: mpsc::UnboundedReceiver<Vec<Job>>,
) {
    let mut running = FuturesUnordered::new();
    let mut open = true;
    let mut finished = Vec::new();
    loop {
        tokio::select! {
            // Finished requests first: they free in-flight places.
            Some(done) = running.next(), if !running.is_empty() => {
                finished.push(done);
                // Everything else already finished goes in the same batch.
                while finished.len() < MAX_BATCH {
                    match running.next().now_or_never() {
                        Some(Some(done)) => finished.push(done),
                        _ => break,
                    }
                }
                let n = finished.len();
                // The collector only goes away when every sender is gone: cannot fail while we run.
                let _ = ctx.records.send(std::mem::take(&mut finished)).await;
                ctx.inflight.fetch_sub(n, Ordering::AcqRel);
                for _ in 0..n {
                    ctx.live.finished_one();
                }
            }
            batch = jobs.recv(), if open => match batch {
                Some(batch) => {
                    for job in batch {
                        running.push(run_request(&ctx, &requester, job));
                    }
                }
                None => open = false,
            },
            else => break,
        }
    }
}

async fn run_request<R: Requester>(ctx: &Context, requester: &R, job: Job) -> Done {
    let slot = job.slot;
    let targets = &ctx.plan.targets;
    let target = targets[(slot.seq % targets.len() as u64) as usize].clone();
    let sent = Instant::now();
    let timeout = ctx.plan.timeout;
    // Boxed once here: a client's request future can be tens of kilobytes (every protocol's
    // exchange inline), and unboxed it would be copied on every move — into the timeout, into the
    // lane's set — which profiled as a third of the generator's instructions.
    let request = Box::pin(requester.send(target));
    let outcome = tokio::time::timeout(timeout, request)
        .await
        .unwrap_or_else(|_| Outcome::failed(format!("timeout after {timeout:?}")));
    let done = Instant::now();
    let intended = ctx.start + slot.at;
    let lateness = sent.saturating_duration_since(intended);
    Done {
        slot,
        sent_ns: Some(nanos(sent.saturating_duration_since(ctx.start))),
        late: lateness > ctx.plan.late_threshold,
        latency_ns: nanos(done.saturating_duration_since(intended)),
        service_ns: Some(nanos(done.saturating_duration_since(sent))),
        outcome,
    }
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
            vec![Fake { service }, Fake { service }],
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
            vec![Fake {
                service: Duration::ZERO,
            }],
            None,
            Arc::new(LiveStats::new()),
            stop,
        )
        .await
        .unwrap();
        assert_eq!(s.requests, 0);
    }

    /// A client that answers at once and counts the requests it was given.
    struct Counting(Arc<std::sync::atomic::AtomicU64>);

    impl Requester for Counting {
        async fn send(&self, _target: Target) -> Outcome {
            self.0.fetch_add(1, Ordering::Relaxed);
            Outcome {
                status: Some(200),
                ..Outcome::default()
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn requests_are_dealt_evenly_to_every_lane() {
        let counts: Vec<_> = (0..4)
            .map(|_| Arc::new(std::sync::atomic::AtomicU64::new(0)))
            .collect();
        let lanes = counts.iter().map(|c| Counting(c.clone())).collect();
        let s = attack(
            plan(2000.0, 0.2, 1000),
            lanes,
            None,
            Arc::new(LiveStats::new()),
            Arc::new(AtomicBool::new(false)),
        )
        .await
        .unwrap();
        assert_eq!(s.successes, 400);
        for c in &counts {
            assert_eq!(c.load(Ordering::Relaxed), 100);
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn no_lanes_is_an_error() {
        let r = attack::<Counting>(
            plan(10.0, 0.1, 10),
            Vec::new(),
            None,
            Arc::new(LiveStats::new()),
            Arc::new(AtomicBool::new(false)),
        )
        .await;
        assert!(matches!(r, Err(AttackError::NoLanes)));
    }

    #[test]
    fn one_wake_up_releases_every_due_request_and_no_early_one() {
        let schedule = plan(1000.0, 10.0, 1).schedule;
        let first = schedule.slot(0).unwrap();
        let mut due = Vec::new();
        // Woken 10.5 ms in: requests 0..=10 (at 0, 1, …, 10 ms) are due, 11 (at 11 ms) is not.
        let next = due_slots(
            &schedule,
            first,
            Duration::from_micros(10_500),
            256,
            &mut due,
        );
        assert_eq!(
            due.iter().map(|s| s.seq).collect::<Vec<_>>(),
            (0..=10).collect::<Vec<_>>()
        );
        assert_eq!(next.map(|s| s.seq), Some(11));
        assert!(due.iter().all(|s| s.at <= Duration::from_micros(10_500)));
        // Woken exactly at a deadline: that request is due (never one before its time).
        due.clear();
        let next = due_slots(
            &schedule,
            next.unwrap(),
            Duration::from_millis(11),
            256,
            &mut due,
        );
        assert_eq!(due.iter().map(|s| s.seq).collect::<Vec<_>>(), vec![11]);
        assert_eq!(next.map(|s| s.seq), Some(12));
        // Far behind: one batch is bounded; the rest follows in the next.
        due.clear();
        let next = due_slots(
            &schedule,
            next.unwrap(),
            Duration::from_secs(5),
            256,
            &mut due,
        );
        assert_eq!(due.len(), 256);
        assert_eq!(next.map(|s| s.seq), Some(12 + 256));
        // The schedule's end: nothing after the last slot.
        due.clear();
        let last = schedule.slot(9_999).unwrap();
        assert_eq!(
            due_slots(&schedule, last, Duration::from_secs(20), 256, &mut due),
            None
        );
        assert_eq!(due.len(), 1);
    }
}
