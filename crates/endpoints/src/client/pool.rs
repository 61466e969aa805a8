//! The connection pool: reuse connections with spare stream capacity, open new ones up to a
//! limit, and make callers wait (visibly, in their own latency) when everything is busy.

use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use super::conn::Conn;

struct Slot {
    conn: Arc<Conn>,
    in_flight: usize,
}

#[derive(Default)]
struct State {
    slots: Vec<Slot>,
    /// Connections being opened (they count against the limit).
    opening: usize,
}

/// A bounded pool of connections, each carrying up to `max_streams` concurrent requests.
pub(crate) struct Pool {
    max_connections: usize,
    max_streams: usize,
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

/// A reserved stream on a pooled connection; released on drop.
pub(crate) struct Lease {
    pool: Arc<Pool>,
    /// The connection.
    pub conn: Arc<Conn>,
}

/// Permission to open one connection; gives the place back on drop unless used.
pub(crate) struct OpenPermit {
    pool: Arc<Pool>,
    used: bool,
}

impl Pool {
    pub(crate) fn new(max_connections: usize, max_streams: usize) -> Self {
        Self {
            max_connections,
            max_streams,
            state: Mutex::new(State::default()),
            changed: Notify::new(),
        }
    }

    /// Waits until a connection has a free stream or a new connection may be opened.
    pub(crate) async fn checkout(self: &Arc<Self>) -> Checkout {
        loop {
            // Created before looking, so a release between the look and the wait is not missed.
            let notified = self.changed.notified();
            if let Some(c) = self.try_checkout() {
                return c;
            }
            notified.await;
        }
    }

    fn try_checkout(self: &Arc<Self>) -> Option<Checkout> {
        let mut st = self.state.lock().ok()?;
        // The cheap test first: most slots are busy under load, and a closed-check locks the
        // connection's handle.
        if let Some(slot) = st
            .slots
            .iter_mut()
            .find(|s| s.in_flight < self.max_streams && !s.conn.is_closed())
        {
            slot.in_flight += 1;
            return Some(Checkout::Reuse(Lease {
                pool: self.clone(),
                conn: slot.conn.clone(),
            }));
        }
        // Nothing free: forget idle closed connections (only now, so a busy pool is not
        // re-scanned on every checkout) and see whether one more may be opened.
        st.slots.retain(|s| s.in_flight > 0 || !s.conn.is_closed());
        if st.slots.len() + st.opening < self.max_connections {
            st.opening += 1;
            return Some(Checkout::Open(OpenPermit {
                pool: self.clone(),
                used: false,
            }));
        }
        None
    }

    /// Adds a freshly opened connection with one stream already in use by the opener.
    pub(crate) fn add(self: &Arc<Self>, mut permit: OpenPermit, conn: Conn) -> Lease {
        permit.used = true;
        let conn = Arc::new(conn);
        if let Ok(mut st) = self.state.lock() {
            st.opening = st.opening.saturating_sub(1);
            st.slots.push(Slot {
                conn: conn.clone(),
                in_flight: 1,
            });
        }
        self.changed.notify_waiters();
        Lease {
            pool: self.clone(),
            conn,
        }
    }

    fn release(&self, conn: &Arc<Conn>) {
        if let Ok(mut st) = self.state.lock() {
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
        self.pool.release(&self.conn);
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
