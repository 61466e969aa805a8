//! The connection pool: reuse connections with spare stream capacity, open new ones up to a
//! limit (at once, or only when waiting would take longer than opening: [`PoolGrowth`]),
//! and make callers wait (visibly, in their own latency) when everything is busy.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::conn::Conn;
use super::PoolGrowth;

struct Slot {
    conn: Arc<Conn>,
    in_flight: usize,
}

#[derive(Default)]
struct State {
    slots: Vec<Slot>,
    /// Connections being opened (they count against the limit).
    opening: usize,
    /// Callers inside [`Pool::checkout`] that have no stream yet.
    waiting: usize,
    /// How long opening a connection took lately (a moving average; `None` before the first).
    open_time: Option<Duration>,
    /// The shortest time a request held its stream lately, and when it was seen (`None`
    /// before the first release). The shortest, not an average: a queue of requests grows
    /// with the generator's and the server's CPU contention too (handshakes at start-up
    /// above all), which more connections would only make worse; the shortest hold is the
    /// path's own service time, which more connections do share out.
    min_hold: Option<(Duration, Instant)>,
    /// When the first connection joined the pool.
    first_up: Option<Instant>,
}

/// The weight of the newest sample in the moving average of opening times (1/8, as TCP's SRTT).
const GAIN: u32 = 8;

/// How long the shortest hold time stands before a newer sample replaces it (a path whose
/// service time grew is noticed within this long; BBR's minimum RTT window).
const MIN_HOLD_WINDOW: Duration = Duration::from_secs(10);

fn smooth(avg: Option<Duration>, sample: Duration) -> Duration {
    avg.map_or(sample, |avg| (avg * (GAIN - 1) + sample) / GAIN)
}

/// A bounded pool of connections, each carrying up to `max_streams` concurrent requests.
pub(crate) struct Pool {
    max_connections: usize,
    max_streams: usize,
    growth: PoolGrowth,
    state: Mutex<State>,
    changed: Notify,
}

/// What a caller got from [`Pool::checkout`].
pub(crate) enum Checkout {
    /// An open connection with a stream reserved for the caller.
    Reuse(Lease),
    /// Permission to open a new connection (then [`Pool::add`] it).
    Open(OpenPermit),
}

/// What one look at the pool found.
enum Look {
    Got(Checkout),
    /// Wait for a release (or a connection place).
    Wait,
    /// Wait for a release, but look again after this long at most.
    WaitAtMost(Duration),
}

/// A reserved stream on a pooled connection; released on drop.
pub(crate) struct Lease {
    pool: Arc<Pool>,
    /// The connection.
    pub conn: Arc<Conn>,
    /// When the stream was reserved.
    since: Instant,
}

/// Permission to open one connection; gives the place back on drop unless used.
pub(crate) struct OpenPermit {
    pool: Arc<Pool>,
    used: bool,
}

impl Pool {
    pub(crate) fn new(max_connections: usize, max_streams: usize, growth: PoolGrowth) -> Self {
        Self {
            max_connections,
            max_streams,
            growth,
            state: Mutex::new(State::default()),
            changed: Notify::new(),
        }
    }

    /// Waits until a connection has a free stream or a new connection may be opened.
    pub(crate) async fn checkout(self: &Arc<Self>) -> Checkout {
        let _waiting = Waiting::enter(self);
        loop {
            // Created before looking, so a release between the look and the wait is not missed.
            let notified = self.changed.notified();
            match self.try_checkout() {
                Look::Got(c) => return c,
                Look::Wait => notified.await,
                Look::WaitAtMost(limit) => {
                    // Look again then even if nothing changed (the estimate has grown).
                    let _ = tokio::time::timeout(limit, notified).await;
                }
            }
        }
    }

    fn try_checkout(self: &Arc<Self>) -> Look {
        let Ok(mut st) = self.state.lock() else {
            return Look::Wait;
        };
        // The cheap test first: most slots are busy under load, and a closed-check locks the
        // connection's handle.
        if let Some(slot) = st
            .slots
            .iter_mut()
            .find(|s| s.in_flight < self.max_streams && !s.conn.is_closed())
        {
            slot.in_flight += 1;
            return Look::Got(Checkout::Reuse(Lease {
                pool: self.clone(),
                conn: slot.conn.clone(),
                since: Instant::now(),
            }));
        }
        // Nothing free: forget idle closed connections (only now, so a busy pool is not
        // re-scanned on every checkout) and see whether one more may be opened.
        st.slots.retain(|s| s.in_flight > 0 || !s.conn.is_closed());
        if st.slots.len() + st.opening >= self.max_connections {
            return Look::Wait;
        }
        if self.growth == PoolGrowth::Patient {
            if let Some(look) = self.patience(&st) {
                return look;
            }
        }
        st.opening += 1;
        Look::Got(Checkout::Open(OpenPermit {
            pool: self.clone(),
            used: false,
        }))
    }

    /// Whether a caller of a patient pool should wait for a busy connection instead of opening
    /// one (`None`: open). It waits when the callers waiting will likely have been served by
    /// the connections there are (busy or opening) sooner than a new one would be open:
    /// waiting × shortest hold time ÷ streams < opening time. So a pool grows when a queue
    /// builds up on a slow path, but the requests due during the first handshake wait for the
    /// first connection instead of opening one each.
    fn patience(&self, st: &State) -> Option<Look> {
        if st.slots.is_empty() && st.opening == 0 {
            return None; // nothing to wait for
        }
        // Before the first connection is up, how long opening takes is unknown: wait for it
        // (its opener's request then frees it, or a failed open lets the next caller try).
        let (Some(open_time), Some(first_up)) = (st.open_time, st.first_up) else {
            return Some(Look::Wait);
        };
        // At most double the pool per opening time, as slow start does: at start-up every
        // estimate is inflated by the handshakes' own CPU (generator and server share cores),
        // and opening more at once would only inflate them further.
        if st.opening >= st.slots.len() {
            return Some(Look::Wait);
        }
        let Some((min_hold, _)) = st.min_hold else {
            // No request has finished yet: wait until the first has taken longer than an
            // opening (a slow path), looking again then.
            let held = first_up.elapsed();
            return (held < open_time).then(|| Look::WaitAtMost(open_time - held));
        };
        let busy: usize = st.slots.iter().map(|s| s.in_flight).sum();
        let streams = (busy + st.opening * self.max_streams).max(1);
        let queue_time = min_hold * u32::try_from(st.waiting).unwrap_or(u32::MAX)
            / u32::try_from(streams).unwrap_or(u32::MAX);
        (queue_time < open_time).then_some(Look::Wait)
    }

    /// Adds a freshly opened connection, which took `took` to open, with one stream already
    /// in use by the opener.
    pub(crate) fn add(
        self: &Arc<Self>,
        mut permit: OpenPermit,
        conn: Conn,
        took: Duration,
    ) -> Lease {
        permit.used = true;
        let conn = Arc::new(conn);
        if let Ok(mut st) = self.state.lock() {
            st.opening = st.opening.saturating_sub(1);
            st.open_time = Some(smooth(st.open_time, took));
            st.first_up.get_or_insert_with(Instant::now);
            st.slots.push(Slot {
                conn: conn.clone(),
                in_flight: 1,
            });
        }
        self.changed.notify_waiters();
        Lease {
            pool: self.clone(),
            conn,
            since: Instant::now(),
        }
    }

    fn release(&self, conn: &Arc<Conn>, held: Duration) {
        if let Ok(mut st) = self.state.lock() {
            let now = Instant::now();
            st.min_hold = match st.min_hold {
                Some((min, seen)) if min <= held && now - seen < MIN_HOLD_WINDOW => {
                    Some((min, seen))
                }
                _ => Some((held, now)),
            };
            if let Some(i) = st.slots.iter().position(|s| Arc::ptr_eq(&s.conn, conn)) {
                let slot = &mut st.slots[i];
                slot.in_flight = slot.in_flight.saturating_sub(1);
                if slot.in_flight == 0 && slot.conn.is_closed() {
                    st.slots.swap_remove(i);
                }
            }
        }
        // One stream (or one connection place) became free: wake one waiter, not all of them.
        // Waking every waiter made each of thousands of queued requests rescan the pool per
        // release under overload (quadratic work, the HTTP/1.1 collapse); a woken waiter that
        // is gone passes the wake-up on (tokio's `Notified` does on drop).
        self.changed.notify_one();
    }

    /// Drops a connection that failed (its requests in flight keep their own references).
    pub(crate) fn discard(&self, conn: &Arc<Conn>) {
        conn.close();
        if let Ok(mut st) = self.state.lock() {
            st.slots.retain(|s| !Arc::ptr_eq(&s.conn, conn));
        }
        self.changed.notify_waiters();
    }

    /// Closes and forgets every connection.
    pub(crate) fn clear(&self) {
        let slots = match self.state.lock() {
            Ok(mut st) => std::mem::take(&mut st.slots),
            Err(_) => Vec::new(),
        };
        for s in &slots {
            s.conn.close();
        }
        self.changed.notify_waiters();
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.pool.release(&self.conn, self.since.elapsed());
    }
}

/// Counts a caller as waiting for as long as it is inside [`Pool::checkout`] (also when its
/// future is dropped there, e.g. by a timeout).
struct Waiting<'a>(&'a Pool);

impl<'a> Waiting<'a> {
    fn enter(pool: &'a Pool) -> Self {
        if let Ok(mut st) = pool.state.lock() {
            st.waiting += 1;
        }
        Self(pool)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if let Ok(mut st) = self.0.state.lock() {
            st.waiting = st.waiting.saturating_sub(1);
        }
    }
}

impl Drop for OpenPermit {
    fn drop(&mut self) {
        if !self.used {
            if let Ok(mut st) = self.pool.state.lock() {
                st.opening = st.opening.saturating_sub(1);
            }
            self.pool.changed.notify_one();
        }
    }
}
