//! The attack: one thread per core, each releasing its share of the requests at their intended
//! times (open model) on its own connections, and a writer thread streaming records when a
//! results stream is wanted.
//!
//! Request `i` leaves at `start + t_i` whether or not earlier ones finished. Its latency counts
//! from `t_i`, so a slow server or a late scheduler shows up in the numbers instead of silently
//! lowering the load (no coordinated omission). Requests that cannot start because `max_inflight`
//! are already running are *skipped with a record* (never delayed, which would bunch them up).
//!
//! Why threads that each do everything: the generator shares the machine with the server it
//! tests, so its CPU per request is what limits both. Handing requests from a timing thread to
//! a multi-threaded runtime cost a futex wake-up and a context switch per request, the lanes'
//! connection tasks migrated between workers, and every finished request touched shared
//! counters and histograms. Now attack thread `k` of `n` owns the requests `k, k+n, k+2n, …`,
//! its own lanes (and so its own connections), a `timerfd` for the schedule in its own event
//! loop (a current-thread tokio runtime), and its own histograms: releasing, carrying and
//! recording a request never involves another thread. Within a thread, every request due when
//! it wakes goes out in that wake-up, dealt round-robin to its lanes, and runs as a future of
//! that thread's one attack task (no task per request). Requests are still released at their
//! own intended times and never early.

use std::future::Future;
use std::io::Write;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::stream::{FuturesUnordered, StreamExt};

use crate::live::LiveStats;
use crate::metrics::{Metrics, Summary};
use crate::record::{RecordError, RecordWriter, ResultRecord};
use crate::requester::{Outcome, Requester};
use crate::schedule::{Ramp, Schedule, Slot};
use crate::targets::Target;
use crate::timer::Timer;

/// Batches of finished requests waiting for the writer. With [`MAX_BATCH`] records per batch
/// at most 65,536 records wait; a stuck output back-pressures the attack threads (visible as
/// lateness) instead of growing memory without bound.
const RECORD_BATCHES: usize = 256;

/// How often an idle writer looks for finished requests: at most this much delay before a
/// record reaches the results file, and 1000 wake-ups a second at most while nothing arrives
/// (a busy writer does not sleep).
const COLLECT_INTERVAL: Duration = Duration::from_millis(1);

/// Most requests released in one wake-up of an attack thread, and most records in one batch to
/// the writer: bounds the memory of one message and keeps a long-late timer from starving the
/// requests in flight.
pub const MAX_BATCH: usize = 256;

/// Most attack threads (`--threads`): far more than cores only adds context switches.
pub const MAX_THREADS: usize = 64;

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
    /// A request sent later than this after its release time (its intended time plus
    /// `release_window`) is flagged late: the generator did not keep its own schedule.
    pub late_threshold: Duration,
    /// Per-request limit, enforced here whatever the client does.
    pub timeout: Duration,
    /// How long a thread may hold a due request back to release it together with the requests
    /// due after it (zero: every request leaves at its intended time; at most
    /// [`MAX_RELEASE_WINDOW`]). A wake-up then releases up to `window × rate / threads`
    /// requests, and the responses tend to arrive together too: fewer wake-ups, less CPU per
    /// request, but up to `window` more latency on every request (latency still counts from
    /// the intended time, so the records show it).
    pub release_window: Duration,
}

/// Largest [`AttackPlan::release_window`]: the coarsest release granularity among the peers
/// quiclab is measured against (h2load's rate timer fires at most every 10 ms), so the two can
/// be compared at equal granularity; coarser than that, a "constant rate" is a burst every
/// half a round trip of many paths. Lateness counts from the release time, so a window never
/// makes a request late by itself.
pub const MAX_RELEASE_WINDOW: Duration = Duration::from_millis(10);

/// An attack that could not run or whose results could not be written.
#[derive(Debug, thiserror::Error)]
pub enum AttackError {
    /// No targets.
    #[error("the attack has no targets")]
    NoTargets,
    /// No lanes (requesters) to carry requests.
    #[error("the attack has no requesters")]
    NoLanes,
    /// More attack threads than [`MAX_THREADS`].
    #[error("--threads must be between 1 and {MAX_THREADS}")]
    BadThreads,
    /// `max_inflight` is zero or too large.
    #[error("--max-inflight must be between 1 and 1000000")]
    BadInflight,
    /// `release_window` is above [`MAX_RELEASE_WINDOW`].
    #[error("--release-window must be between 0 and {MAX_RELEASE_WINDOW:?}")]
    BadReleaseWindow,
    /// Writing the results stream failed.
    #[error("writing results: {0}")]
    Write(#[from] RecordError),
    /// A worker thread failed to start or died.
    #[error("attack thread: {0}")]
    Thread(String),
}

/// Where records go: a results writer, or nowhere (only the summary is kept).
pub type Sink = Option<RecordWriter<Box<dyn Write + Send>>>;

/// What happened to one request; turned into a [`ResultRecord`] by filling one reused record
/// (so finishing a request allocates no strings).
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

impl Done {
    fn skipped(slot: Slot) -> Self {
        Self {
            slot,
            sent_ns: None,
            late: false,
            latency_ns: 0,
            service_ns: None,
            outcome: Outcome::default(),
        }
    }
}

/// Starts the clock once every attack thread is ready (runtime built, timer open), so the
/// first requests are not late by the threads' set-up time.
#[derive(Default)]
struct StartGate {
    /// Threads ready, and the start once set.
    state: Mutex<(usize, Option<Instant>)>,
    changed: std::sync::Condvar,
}

impl StartGate {
    /// Called by each attack thread: waits for the start.
    fn ready(&self) -> Instant {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        st.0 += 1;
        self.changed.notify_all();
        loop {
            if let Some(start) = st.1 {
                return start;
            }
            st = self
                .changed
                .wait(st)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Called by the launching thread: waits until `threads` are ready, then starts the clock.
    fn start(&self, threads: usize) -> Instant {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        while st.0 < threads {
            st = self
                .changed
                .wait(st)
                .unwrap_or_else(PoisonError::into_inner);
        }
        let start = Instant::now();
        st.1 = Some(start);
        self.changed.notify_all();
        start
    }
}

/// Shared, read-only context of the attack threads.
struct Context {
    plan: AttackPlan,
    gate: StartGate,
    live: Arc<LiveStats>,
    /// Requests released and not yet finished, over all threads (the in-flight cap).
    inflight: AtomicUsize,
    stop: Arc<AtomicBool>,
    labels: Labels,
    threads: u64,
}

/// Runs the attack and returns the summary of all its records, blocking until every request
/// has finished and been written.
///
/// `shards` holds one set of lanes per attack thread (at most [`MAX_THREADS`]; sets without
/// lanes are dropped): thread `k` of `n` carries requests `k, k+n, …`, dealt round-robin to its
/// lanes (typically one per connection it owns), on a current-thread runtime of its own on
/// which the lanes' connections also run. After the attack each lane's
/// [`Requester::close`] runs on its thread. `stop` ends scheduling early (requests in flight
/// still finish and are recorded).
pub fn attack<R: Requester>(
    plan: AttackPlan,
    shards: Vec<Vec<R>>,
    sink: Sink,
    live: Arc<LiveStats>,
    stop: Arc<AtomicBool>,
) -> Result<Summary, AttackError> {
    if plan.targets.is_empty() {
        return Err(AttackError::NoTargets);
    }
    let shards: Vec<Vec<R>> = shards.into_iter().filter(|s| !s.is_empty()).collect();
    if shards.is_empty() {
        return Err(AttackError::NoLanes);
    }
    if shards.len() > MAX_THREADS {
        return Err(AttackError::BadThreads);
    }
    if plan.max_inflight == 0 || plan.max_inflight > 1_000_000 {
        return Err(AttackError::BadInflight);
    }
    if plan.release_window > MAX_RELEASE_WINDOW {
        return Err(AttackError::BadReleaseWindow);
    }
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
    let labels = Labels {
        template,
        phase_labels,
        start_unix_ns,
        max_inflight: plan.max_inflight,
    };
    let (records, writer) = match sink {
        Some(sink) => {
            let (tx, rx) = std_mpsc::sync_channel(RECORD_BATCHES);
            (Some(tx), Some((rx, sink)))
        }
        None => (None, None),
    };
    let ctx = Context {
        plan,
        gate: StartGate::default(),
        live: live.clone(),
        inflight: AtomicUsize::new(0),
        stop,
        labels,
        threads: shards.len() as u64,
    };
    let ctx = &ctx;
    std::thread::scope(|scope| {
        let writer = match writer {
            Some((rx, sink)) => Some(
                std::thread::Builder::new()
                    .name("quiclab-load-writer".into())
                    .spawn_scoped(scope, move || write_records(rx, sink, &ctx.labels))
                    .map_err(|e| AttackError::Thread(e.to_string()))?,
            ),
            None => None,
        };
        let mut threads = Vec::with_capacity(shards.len());
        let mut spawn_error = None;
        for (k, lanes) in shards.into_iter().enumerate() {
            let records = records.clone();
            let metrics = live.shard();
            let spawned = std::thread::Builder::new()
                .name(format!("quiclab-load-{k}"))
                .spawn_scoped(scope, move || {
                    run_thread(ctx, k as u64, lanes, metrics, records)
                });
            match spawned {
                Ok(t) => threads.push(t),
                Err(e) => {
                    // Stop the threads already running; they finish what they started.
                    ctx.stop.store(true, Ordering::Relaxed);
                    spawn_error = Some(AttackError::Thread(e.to_string()));
                    break;
                }
            }
        }
        // The writer ends once every thread's sender is gone.
        drop(records);
        // Also after a failed spawn: the threads already running then stop at once.
        ctx.gate.start(threads.len());
        let mut first_error = spawn_error;
        for t in threads {
            let result = t
                .join()
                .unwrap_or_else(|_| Err("an attack thread panicked".into()));
            if let (Err(e), None) = (result, first_error.as_ref()) {
                first_error = Some(AttackError::Thread(e));
            }
        }
        if let Some(w) = writer {
            let result = w
                .join()
                .unwrap_or_else(|_| Err(AttackError::Thread("the writer thread died".into())));
            if let (Err(e), None) = (result, first_error.as_ref()) {
                first_error = Some(e);
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(live.summary()),
        }
    })
}

/// What turns a [`Done`] into a record.
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
    fn fill(&self, rec: &mut ResultRecord, current_phase: &mut usize, d: &Done) {
        if d.slot.phase != *current_phase {
            *current_phase = d.slot.phase;
            rec.phase.clear();
            if let Some(label) = self.phase_labels.get(d.slot.phase) {
                rec.phase.push_str(label);
            }
        }
        let intended_ns = nanos(d.slot.at);
        let o = &d.outcome;
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
        match (d.sent_ns, &o.error) {
            (None, _) => {
                rec.error = Some(format!(
                    "not sent: max in-flight ({}) reached",
                    self.max_inflight
                ))
            }
            // Reuses the record's string when the previous request failed too.
            (Some(_), Some(e)) => match &mut rec.error {
                Some(s) => {
                    s.clear();
                    s.push_str(e);
                }
                None => rec.error = Some(e.clone()),
            },
            (Some(_), None) => rec.error = None,
        }
    }
}

/// The writer: the only owner of the output, so records are written in the order batches
/// arrive (completion order within each thread).
fn write_records(
    rx: std_mpsc::Receiver<Vec<Done>>,
    mut sink: RecordWriter<Box<dyn Write + Send>>,
    labels: &Labels,
) -> Result<(), AttackError> {
    let mut first_error = None;
    let mut record = labels.template.clone();
    let mut phase = 0;
    loop {
        // Polled, not woken: a blocking receive would make every sender wake this thread (a
        // futex call per batch, i.e. per request at moderate rates). It drains what arrived,
        // then sleeps COLLECT_INTERVAL when there was nothing.
        let batch = match rx.try_recv() {
            Ok(batch) => batch,
            Err(std_mpsc::TryRecvError::Empty) => {
                std::thread::sleep(COLLECT_INTERVAL);
                continue;
            }
            Err(std_mpsc::TryRecvError::Disconnected) => break,
        };
        if first_error.is_some() {
            // Keep draining after a write error so the attack threads never block on us.
            continue;
        }
        for done in &batch {
            labels.fill(&mut record, &mut phase, done);
            if let Err(e) = sink.write(&record) {
                first_error = Some(e);
                break;
            }
        }
    }
    if first_error.is_none() {
        first_error = sink.flush().err();
    }
    match first_error {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

/// Makes sleeps end within microseconds of their deadline (the default slack is 50 µs).
fn tighten_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK only changes this thread's timer slack; it takes plain integers.
    #[cfg(target_os = "linux")]
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// The slots of one attack thread (every `stride`-th, from `next` on) that are due at `elapsed`
/// since the start (at most `max`), in order; returns them and the thread's first slot not yet
/// due (`None`: its share of the schedule has ended).
fn due_slots(
    schedule: &Schedule,
    next: Slot,
    stride: u64,
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
        slot = schedule.slot(s.seq + stride);
    }
    slot
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// One attack thread: builds its runtime, runs its share of the attack, closes its lanes.
fn run_thread<R: Requester>(
    ctx: &Context,
    k: u64,
    lanes: Vec<R>,
    metrics: Arc<Mutex<Metrics>>,
    records: Option<std_mpsc::SyncSender<Vec<Done>>>,
) -> Result<(), String> {
    tighten_timer_slack();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"));
    let timer = runtime.as_ref().map_err(Clone::clone).and_then(|rt| {
        // The timer registers with this runtime's reactor.
        let _entered = rt.enter();
        Timer::new().map_err(|e| format!("cannot create a timer: {e}"))
    });
    // Every thread reports ready, also after a failure, so the others are not held up.
    let start = ctx.gate.ready();
    let (runtime, timer) = (runtime?, timer?);
    let result = runtime.block_on(async {
        let result = run_share(ctx, start, k, timer, &lanes, &metrics, records).await;
        // Concurrently: each QUIC endpoint waits briefly for its peer to see the close.
        futures_util::future::join_all(lanes.iter().map(Requester::close)).await;
        result
    });
    // The runtime ends with this thread; connection tasks still on it are dropped with it.
    drop(runtime);
    result
}

/// What woke an attack thread.
enum Wake {
    /// A request finished.
    Finished(Done),
    /// The timer fired: the next slot is due (or scheduling should stop), or requests in
    /// flight may have passed their deadline.
    Timer,
    /// Nothing is left to schedule or wait for.
    End,
}

/// Thread `k`'s share of the attack: sleep to its next deadline or a response, whichever comes
/// first; release what is due; record what finished.
async fn run_share<R: Requester>(
    ctx: &Context,
    start: Instant,
    k: u64,
    mut timer: Timer,
    lanes: &[R],
    metrics: &Mutex<Metrics>,
    records: Option<std_mpsc::SyncSender<Vec<Done>>>,
) -> Result<(), String> {
    let max_inflight = ctx.plan.max_inflight;
    let mut running = FuturesUnordered::new();
    // When to look for requests past their deadline (see `expire`); `None`: none in flight.
    let mut next_sweep: Option<Instant> = None;
    let grace = sweep_grace(ctx.plan.timeout);
    let window = ctx.plan.release_window;
    let mut next = ctx.plan.schedule.slot(k);
    let mut next_lane = 0;
    let mut due = Vec::with_capacity(MAX_BATCH);
    let mut finished: Vec<Done> = Vec::new();
    let mut record = ctx.labels.template.clone();
    let mut phase = 0;
    let mut prefer_finished = false;
    loop {
        // Finished requests and due ones take turns when both are ready, so neither starves
        // the other when the thread falls behind.
        prefer_finished = !prefer_finished;
        let wake = std::future::poll_fn(|cx| {
            let mut finished_one =
                |cx: &mut std::task::Context<'_>| match running.poll_next_unpin(cx) {
                    Poll::Ready(Some(done)) => Some(Wake::Finished(done)),
                    _ => None,
                };
            if prefer_finished {
                if let Some(w) = finished_one(cx) {
                    return Poll::Ready(w);
                }
            }
            let release = next.map(|slot| start + slot.at + window);
            let wake_at = match (release, next_sweep) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            if let Some(at) = wake_at {
                if timer.poll_until(at, cx).is_ready() {
                    return Poll::Ready(Wake::Timer);
                }
            }
            if !prefer_finished {
                if let Some(w) = finished_one(cx) {
                    return Poll::Ready(w);
                }
            }
            if next.is_none() && running.is_empty() {
                return Poll::Ready(Wake::End);
            }
            Poll::Pending
        })
        .await;
        match wake {
            Wake::End => break,
            Wake::Finished(done) => {
                finished.push(done);
                // Everything else already finished goes in the same batch.
                while finished.len() < MAX_BATCH {
                    match futures_util::FutureExt::now_or_never(running.next()) {
                        Some(Some(done)) => finished.push(done),
                        _ => break,
                    }
                }
                let n = finished.len();
                ctx.inflight.fetch_sub(n, Ordering::AcqRel);
                ctx.live.finished(n as u64);
                record_batch(
                    ctx,
                    metrics,
                    &records,
                    &mut record,
                    &mut phase,
                    &mut finished,
                )?;
            }
            Wake::Timer => {
                let now = Instant::now();
                if next_sweep.is_some_and(|at| at <= now) {
                    next_sweep = expire(&mut running, now, grace);
                }
                let Some(first) = next else { continue };
                if start + first.at > now {
                    // Woken for the sweep only.
                    continue;
                }
                if ctx.stop.load(Ordering::Relaxed) {
                    next = None;
                    continue;
                }
                due.clear();
                next = due_slots(
                    &ctx.plan.schedule,
                    first,
                    ctx.threads,
                    now.saturating_duration_since(start),
                    MAX_BATCH,
                    &mut due,
                );
                ctx.live.scheduled(due.len() as u64);
                let mut started = 0;
                for &slot in &due {
                    // Reserve first, so threads together never exceed the cap.
                    if ctx.inflight.fetch_add(1, Ordering::AcqRel) < max_inflight {
                        started += 1;
                        let request = send_now(ctx, start, &lanes[next_lane], slot);
                        // Deadlines grow with the release order, so the first request in
                        // flight sets the next sweep and later ones never move it earlier.
                        next_sweep.get_or_insert(request.deadline + grace);
                        running.push(request);
                        next_lane = (next_lane + 1) % lanes.len();
                    } else {
                        ctx.inflight.fetch_sub(1, Ordering::AcqRel);
                        finished.push(Done::skipped(slot));
                    }
                }
                ctx.live.started(started);
                if !finished.is_empty() {
                    record_batch(
                        ctx,
                        metrics,
                        &records,
                        &mut record,
                        &mut phase,
                        &mut finished,
                    )?;
                }
            }
        }
    }
    Ok(())
}

/// Adds finished requests to this thread's histograms and hands them to the writer, if any.
fn record_batch(
    ctx: &Context,
    metrics: &Mutex<Metrics>,
    records: &Option<std_mpsc::SyncSender<Vec<Done>>>,
    record: &mut ResultRecord,
    phase: &mut usize,
    finished: &mut Vec<Done>,
) -> Result<(), String> {
    {
        // Only this thread adds to its metrics; the progress display reads them once a second.
        let mut m = metrics.lock().unwrap_or_else(PoisonError::into_inner);
        for done in finished.iter() {
            ctx.labels.fill(record, phase, done);
            m.add(record);
        }
    }
    match records {
        Some(tx) => {
            // Blocks when the writer is RECORD_BATCHES behind: back-pressure, bounded memory.
            tx.send(std::mem::take(finished))
                .map_err(|_| "the writer thread died".to_string())?;
        }
        None => finished.clear(),
    }
    Ok(())
}

/// How late past its deadline a request may end, so that one pass over the thread's requests
/// in flight expires every request due within that window: 1/64 of the timeout, between 1 ms
/// (tokio's timer granularity, what the limit had before) and 1 s. A pass costs one look at
/// each request in flight, so in normal running it happens about once per timeout, and under
/// overload (requests timing out continuously) at most 64 times per timeout.
fn sweep_grace(timeout: Duration) -> Duration {
    (timeout / 64).clamp(Duration::from_millis(1), Duration::from_secs(1))
}

/// Marks every request in flight whose deadline has passed as expired (and gets it polled, so
/// it ends as a timeout); returns when to look again: the earliest remaining deadline plus
/// `grace`, or `None` when nothing else is in flight.
///
/// Why not a timer per request: tokio's timer wheel takes a lock per registration and often
/// wakes its own event loop through an `eventfd` (two per request with the client's timeout),
/// a measurable share of the generator's CPU at 10k req/s. The requests of one thread already
/// share one `timerfd`; their deadlines only need an occasional pass.
fn expire<F>(
    running: &mut FuturesUnordered<InFlight<F>>,
    now: Instant,
    grace: Duration,
) -> Option<Instant> {
    let mut earliest: Option<Instant> = None;
    for request in running.iter_mut() {
        if request.expired {
            continue;
        }
        if request.deadline <= now {
            request.expired = true;
            if let Some(waker) = request.waker.take() {
                waker.wake();
            }
        } else {
            earliest = Some(earliest.map_or(request.deadline, |e| e.min(request.deadline)));
        }
    }
    earliest.map(|e| e + grace)
}

/// One request in flight: the client's exchange (boxed once: a client's request future can be
/// kilobytes, every protocol's exchange inline, and unboxed it would be copied on every move —
/// which profiled as a third of the generator's instructions) and what turns its end, by a
/// response or by its deadline, into a [`Done`].
struct InFlight<F> {
    request: Pin<Box<F>>,
    slot: Slot,
    /// The attack's start.
    start: Instant,
    sent: Instant,
    late: bool,
    /// The per-request limit ends the request here (enforced by [`expire`]).
    deadline: Instant,
    /// Set by [`expire`]: the next poll ends the request as a timeout (dropping the exchange).
    expired: bool,
    /// The waker of the last poll that found the exchange pending, for [`expire`].
    waker: Option<Waker>,
}

/// Sends `slot`'s request on `requester` now (every call returns the same future type, so a
/// thread's requests share one set).
fn send_now<'a, R: Requester>(
    ctx: &'a Context,
    start: Instant,
    requester: &'a R,
    slot: Slot,
) -> InFlight<impl Future<Output = Outcome> + 'a> {
    let targets = &ctx.plan.targets;
    let target = &targets[(slot.seq % targets.len() as u64) as usize];
    let sent = Instant::now();
    // From the release time: a request held back by the window on purpose is not late; one the
    // thread could not release on time is (latency still counts from the intended time).
    let lateness = sent.saturating_duration_since(start + slot.at + ctx.plan.release_window);
    InFlight {
        request: Box::pin(requester.send(target)),
        slot,
        start,
        sent,
        late: lateness > ctx.plan.late_threshold,
        deadline: sent + ctx.plan.timeout,
        expired: false,
        waker: None,
    }
}

impl<F: Future<Output = Outcome>> Future for InFlight<F> {
    type Output = Done;

    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Done> {
        // Every field is Unpin (the exchange is boxed), so the request is too.
        let this = self.get_mut();
        let outcome = if this.expired {
            let limit = this.deadline.saturating_duration_since(this.sent);
            Outcome::failed(format!("timeout after {limit:?}"))
        } else {
            match this.request.as_mut().poll(cx) {
                Poll::Ready(outcome) => outcome,
                Poll::Pending => {
                    if !this.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                        this.waker = Some(cx.waker().clone());
                    }
                    return Poll::Pending;
                }
            }
        };
        let done = Instant::now();
        let intended = this.start + this.slot.at;
        Poll::Ready(Done {
            slot: this.slot,
            sent_ns: Some(nanos(this.sent.saturating_duration_since(this.start))),
            late: this.late,
            latency_ns: nanos(done.saturating_duration_since(intended)),
            service_ns: Some(nanos(done.saturating_duration_since(this.sent))),
            outcome,
        })
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
        async fn send(&self, target: &Target) -> Outcome {
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
            release_window: Duration::ZERO,
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

    fn run(plan: AttackPlan, service: Duration) -> (Summary, Vec<ResultRecord>) {
        run_on(plan, vec![vec![Fake { service }], vec![Fake { service }]])
    }

    /// An attack with one requester list per thread, its summary and every record.
    fn run_on(plan: AttackPlan, requesters: Vec<Vec<Fake>>) -> (Summary, Vec<ResultRecord>) {
        let out = Shared::default();
        let sink: Sink = Some(RecordWriter::new(Box::new(out.clone()), Encoding::Json));
        let summary = attack(
            plan,
            requesters,
            sink,
            Arc::new(LiveStats::new()),
            Arc::new(AtomicBool::new(false)),
        )
        .unwrap();
        let bytes = out.0.lock().unwrap().clone();
        let records = read_records(std::io::Cursor::new(bytes))
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        (summary, records)
    }

    #[test]
    fn open_model_holds_the_rate_and_records_every_request() {
        let (s, records) = run(plan(500.0, 1.0, 1000), Duration::from_millis(20));
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

    #[test]
    fn the_inflight_cap_skips_with_a_record() {
        // 100/s with 200 ms service needs ~20 in flight; a cap of 5 must skip most requests.
        let (s, records) = run(plan(100.0, 0.5, 5), Duration::from_millis(200));
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

    #[test]
    fn the_timeout_bounds_every_request() {
        let mut p = plan(20.0, 0.2, 100);
        p.timeout = Duration::from_millis(50);
        let (s, records) = run(p, Duration::from_secs(10));
        assert_eq!(records.len(), 4);
        assert_eq!(s.successes, 0);
        assert!(records
            .iter()
            .all(|r| r.error.as_deref().is_some_and(|e| e.starts_with("timeout"))));
        // Ended by the thread's deadline pass: not before the limit, and within its grace
        // (1 ms here) plus scheduling noise, not at the fake's 10 s.
        for r in &records {
            let service = Duration::from_nanos(r.service_ns.unwrap());
            assert!(service >= Duration::from_millis(50), "{service:?}");
            assert!(service < Duration::from_millis(1_000), "{service:?}");
        }
    }

    #[test]
    fn a_release_window_batches_requests_never_early_and_within_the_window() {
        // 2000/s on one thread with a 4 ms window: a wake-up holds the first due request back
        // until 4 ms after its time and releases the ~8 due by then together.
        let mut p = plan(2000.0, 0.5, 1000);
        p.release_window = Duration::from_millis(4);
        let (_, records) = run_on(
            p,
            vec![vec![Fake {
                service: Duration::ZERO,
            }]],
        );
        assert_eq!(records.len(), 1000);
        let lateness: Vec<u64> = records
            .iter()
            .map(|r| r.sent_ns.unwrap() - r.intended_ns)
            .collect();
        // Never early (the subtraction above would underflow), and held back: without the
        // window the median lateness is microseconds, with it about half the window.
        let mut sorted = lateness.clone();
        sorted.sort_unstable();
        let median = Duration::from_nanos(sorted[sorted.len() / 2]);
        assert!(
            median >= Duration::from_millis(1),
            "median lateness {median:?}"
        );
        // Batches: far fewer distinct release instants than requests.
        let mut sent: Vec<u64> = records
            .iter()
            .map(|r| r.sent_ns.unwrap() / 100_000)
            .collect();
        sent.sort_unstable();
        sent.dedup();
        assert!(
            sent.len() < 400,
            "{} release instants for 1000 requests",
            sent.len()
        );
    }

    #[test]
    fn a_request_held_back_by_the_window_is_not_flagged_late() {
        // 2000/s with the widest window and a late threshold of half of it: about half of the
        // requests leave more than the threshold after their intended time, all on purpose.
        let mut p = plan(2000.0, 0.5, 1000);
        p.release_window = MAX_RELEASE_WINDOW;
        p.late_threshold = MAX_RELEASE_WINDOW / 2;
        let (_, records) = run_on(
            p,
            vec![vec![Fake {
                service: Duration::ZERO,
            }]],
        );
        assert_eq!(records.len(), 1000);
        let held_past_threshold = records
            .iter()
            .filter(|r| r.lateness_ns().unwrap() > (MAX_RELEASE_WINDOW / 2).as_nanos() as u64)
            .count();
        assert!(
            held_past_threshold > 200,
            "{held_past_threshold} held past the threshold"
        );
        // Late only when the thread itself fell more than 5 ms behind its release time: not
        // the case on an idle thread releasing 2000/s (a loaded machine may delay a few).
        let late = records.iter().filter(|r| r.late).count();
        assert!(late < 20, "{late} of 1000 flagged late");
    }

    #[test]
    fn a_release_window_beyond_the_bound_is_refused() {
        let mut p = plan(10.0, 0.1, 10);
        p.release_window = MAX_RELEASE_WINDOW + Duration::from_nanos(1);
        let r = attack(
            p,
            vec![vec![Fake {
                service: Duration::ZERO,
            }]],
            None,
            Arc::new(LiveStats::new()),
            Arc::new(AtomicBool::new(false)),
        );
        assert!(matches!(r, Err(AttackError::BadReleaseWindow)));
    }

    #[test]
    fn the_deadline_pass_waits_a_grace_of_a_64th_of_the_timeout() {
        assert_eq!(
            sweep_grace(Duration::from_millis(50)),
            Duration::from_millis(1)
        );
        assert_eq!(
            sweep_grace(Duration::from_secs(2)),
            Duration::from_micros(31_250)
        );
        assert_eq!(
            sweep_grace(Duration::from_secs(3600)),
            Duration::from_secs(1)
        );
    }

    #[test]
    fn stop_ends_scheduling() {
        let stop = Arc::new(AtomicBool::new(true));
        let s = attack(
            plan(100.0, 10.0, 10),
            vec![vec![Fake {
                service: Duration::ZERO,
            }]],
            None,
            Arc::new(LiveStats::new()),
            stop,
        )
        .unwrap();
        assert_eq!(s.requests, 0);
    }

    /// A client that answers at once and counts the requests it was given.
    struct Counting(Arc<std::sync::atomic::AtomicU64>);

    impl Requester for Counting {
        async fn send(&self, _target: &Target) -> Outcome {
            self.0.fetch_add(1, Ordering::Relaxed);
            Outcome {
                status: Some(200),
                ..Outcome::default()
            }
        }
    }

    #[test]
    fn requests_are_dealt_evenly_to_every_lane() {
        let counts: Vec<_> = (0..4)
            .map(|_| Arc::new(std::sync::atomic::AtomicU64::new(0)))
            .collect();
        // Two threads of two lanes each.
        let shards = counts
            .chunks(2)
            .map(|c| c.iter().map(|c| Counting(c.clone())).collect())
            .collect();
        let s = attack(
            plan(2000.0, 0.2, 1000),
            shards,
            None,
            Arc::new(LiveStats::new()),
            Arc::new(AtomicBool::new(false)),
        )
        .unwrap();
        assert_eq!(s.successes, 400);
        for c in &counts {
            assert_eq!(c.load(Ordering::Relaxed), 100);
        }
    }

    #[test]
    fn no_lanes_is_an_error() {
        let r = attack::<Counting>(
            plan(10.0, 0.1, 10),
            vec![Vec::new(), Vec::new()],
            None,
            Arc::new(LiveStats::new()),
            Arc::new(AtomicBool::new(false)),
        );
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
            1,
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
            1,
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
            1,
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
            due_slots(&schedule, last, 1, Duration::from_secs(20), 256, &mut due),
            None
        );
        assert_eq!(due.len(), 1);
    }
}
