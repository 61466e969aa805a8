//! One quinn-proto endpoint driven in virtual time: its connections, datagrams in and out, and
//! the bookkeeping quinn leaves to the I/O layer (endpoint events, drained connections).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use quinn_proto::{
    ConnectionHandle, ConnectionStats, DatagramEvent, Endpoint, Event, ServerConfig,
};

use super::app::App;
use super::config::{endpoint_config, QuicKnobs};
use crate::clock::{from_instant, to_instant};
use crate::qlog::QlogFlusher;
use crate::seeded::SharedRng;

/// One connection of an endpoint with its application state.
pub(crate) struct Conn {
    pub handle: ConnectionHandle,
    pub conn: quinn_proto::Connection,
    pub app: App,
    pub closing: bool,
}

/// One endpoint with its connections.
pub(crate) struct Host {
    pub endpoint: Endpoint,
    pub conns: Vec<Conn>,
    /// Stats of connections that are gone, summed into reports.
    retired: Vec<ConnectionStats>,
    /// Stateless datagrams (e.g. a refused connection's response) waiting to be sent.
    outbox: VecDeque<Vec<u8>>,
    /// The server's config, cloned per connection to give each its own transport config.
    pub server_config: Option<ServerConfig>,
    /// Capacity of this endpoint's datagram buffer (quinn may grow it): the thread's
    /// [`SCRATCH`] buffer takes it before each use, so quinn sees what a buffer of its own
    /// would give it.
    buf_cap: usize,
    /// qlog files opened so far (numbers the next one).
    pub qlog_count: u32,
    /// The qlog files opened, to flush those still open before the flow reports.
    pub qlog_files: Vec<QlogFlusher>,
}

impl Host {
    /// An endpoint whose every random draw comes from `root`; a server when `server_config`.
    pub(crate) fn new(
        knobs: &QuicKnobs,
        root: &SharedRng,
        server_config: Option<ServerConfig>,
    ) -> Host {
        let ep = endpoint_config(knobs, root);
        let seed = root.bytes32();
        let endpoint = Endpoint::new(
            Arc::new(ep),
            server_config.clone().map(Arc::new),
            knobs.mtu_discovery,
            Some(seed),
        );
        Host {
            endpoint,
            conns: Vec::new(),
            retired: Vec::new(),
            outbox: VecDeque::new(),
            server_config,
            buf_cap: usize::from(knobs.max_udp_payload()),
            qlog_count: 0,
            qlog_files: Vec::new(),
        }
    }

    /// Stats of every connection, gone or alive.
    pub(crate) fn stats(&self) -> Vec<ConnectionStats> {
        let mut v = self.retired.clone();
        v.extend(self.conns.iter().map(|c| c.conn.stats()));
        v
    }

    /// Feeds one datagram from `remote` that arrived with the codepoint `ecn` (`None`: the
    /// socket does not report it). A new incoming connection is accepted with the server
    /// config `per_conn` builds for it.
    pub(crate) fn handle(
        &mut self,
        now: Duration,
        remote: SocketAddr,
        payload: Vec<u8>,
        ecn: Option<quinn_proto::EcnCodepoint>,
        per_conn: impl FnOnce(&mut Host) -> Option<Arc<ServerConfig>>,
    ) {
        let nowi = to_instant(now);
        let mut buf = take_scratch(self.buf_cap);
        let event = self.endpoint.handle(
            nowi,
            remote,
            None,
            ecn,
            BytesMut::from(Bytes::from(payload)),
            &mut buf,
        );
        match event {
            Some(DatagramEvent::ConnectionEvent(h, ev)) => {
                if let Some(c) = self.conns.iter_mut().find(|c| c.handle == h) {
                    c.conn.handle_event(ev);
                }
            }
            Some(DatagramEvent::NewConnection(incoming)) => {
                let config = per_conn(self);
                match self.endpoint.accept(incoming, nowi, &mut buf, config) {
                    Ok((handle, conn)) => self.conns.push(Conn {
                        handle,
                        conn,
                        app: App::default(),
                        closing: false,
                    }),
                    Err(e) => {
                        if let Some(t) = e.response {
                            self.outbox.push_back(buf[..t.size].to_vec());
                        }
                    }
                }
            }
            Some(DatagramEvent::Response(t)) => self.outbox.push_back(buf[..t.size].to_vec()),
            None => {}
        }
        self.buf_cap = buf.capacity();
        put_scratch(buf);
    }

    /// Passes endpoint events between the connections and the endpoint and puts the
    /// connections' application events, with the index of their connection, into `events`
    /// (cleared first). True if there was any event of either kind.
    pub(crate) fn poll_events(&mut self, events: &mut Vec<(usize, Event)>) -> bool {
        events.clear();
        let mut any = false;
        for (i, c) in self.conns.iter_mut().enumerate() {
            while let Some(ev) = c.conn.poll_endpoint_events() {
                any = true;
                let drained = ev.is_drained();
                if let Some(cev) = self.endpoint.handle_event(c.handle, ev) {
                    c.conn.handle_event(cev);
                }
                if drained {
                    c.closing = true;
                }
            }
            while let Some(ev) = c.conn.poll() {
                events.push((i, ev));
            }
        }
        any || !events.is_empty()
    }

    /// Drops drained connections, keeping their counters.
    pub(crate) fn retire_drained(&mut self) {
        let mut j = 0;
        while j < self.conns.len() {
            if self.conns[j].closing && self.conns[j].conn.is_drained() {
                let c = self.conns.remove(j);
                self.retired.push(c.conn.stats());
            } else {
                j += 1;
            }
        }
    }

    /// Runs the connections' timers that are due.
    pub(crate) fn handle_timeout(&mut self, now: Duration) {
        let nowi = to_instant(now);
        for c in self.conns.iter_mut() {
            if c.conn.poll_timeout().is_some_and(|t| t <= nowi) {
                c.conn.handle_timeout(nowi);
            }
        }
    }

    /// The next datagram to send, with the codepoint quinn asks for: stateless responses
    /// first (Not-ECT), then the first connection with something to say.
    pub(crate) fn poll_transmit(
        &mut self,
        now: Duration,
    ) -> Option<(Vec<u8>, Option<quinn_proto::EcnCodepoint>)> {
        if let Some(d) = self.outbox.pop_front() {
            return Some((d, None));
        }
        if self.conns.is_empty() {
            return None;
        }
        let nowi = to_instant(now);
        let (conns, cap) = (&mut self.conns, &mut self.buf_cap);
        // Borrowed in place (quinn's poll_transmit never reaches this module again): the
        // buffer is not moved in and out of the thread-local on every call.
        SCRATCH.with_borrow_mut(|buf| {
            if buf.capacity() != *cap {
                *buf = Vec::with_capacity(*cap);
            }
            let mut out = None;
            for c in conns.iter_mut() {
                buf.clear();
                if let Some(t) = c.conn.poll_transmit(nowi, 1, buf) {
                    // A datagram that fills most of the buffer leaves in it (no copy) and a
                    // new buffer takes its place; a small one (an ACK) is copied out, so
                    // packets in flight do not each hold a full-size buffer.
                    let d = if 2 * t.size >= buf.capacity() {
                        let full = buf.capacity();
                        let mut d = std::mem::replace(buf, Vec::with_capacity(full));
                        d.truncate(t.size);
                        d
                    } else {
                        buf[..t.size].to_vec()
                    };
                    out = Some((d, t.ecn));
                    break;
                }
            }
            *cap = buf.capacity();
            out
        })
    }

    /// The earliest timer of any connection.
    pub(crate) fn poll_timeout(&mut self) -> Option<Duration> {
        self.conns
            .iter_mut()
            .filter_map(|c| c.conn.poll_timeout())
            .min()
            .map(from_instant)
    }
}

thread_local! {
    /// The datagram buffer quinn writes into, one per thread for all endpoints (a run stays on
    /// one thread): a buffer per endpoint was 2.9 kB per flow, and at 1,000 flows the one
    /// being written was seldom still in cache. It leaves with a full-size
    /// datagram and is replaced then, so it never holds data between calls.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// The thread's datagram buffer, empty, with capacity `cap` (an endpoint's own capacity, so
/// quinn sees exactly what a buffer of the endpoint's own would give it).
fn take_scratch(cap: usize) -> Vec<u8> {
    let mut buf = SCRATCH.with(|s| s.take());
    if buf.capacity() != cap {
        buf = Vec::with_capacity(cap);
    }
    buf.clear();
    buf
}

/// Returns the buffer [`take_scratch`] lent.
fn put_scratch(buf: Vec<u8>) {
    SCRATCH.with(|s| s.replace(buf));
}
