//! The application on a quiche connection: the same request protocol as the quinn stack's
//! (`GET <bytes>\n` on a client bidirectional stream, answered with that many bytes and FIN;
//! a bulk upload on one client unidirectional stream), over quiche's stream API.

use std::collections::BTreeMap;

use crate::agent::Side;
use crate::workload::{Workload, UNBOUNDED_REQUEST as UNBOUNDED};

/// Largest chunk handed to quiche at once (quiche copies it into its send buffer).
const CHUNK: usize = 64 * 1024;
static ZEROS: [u8; CHUNK] = [0u8; CHUNK];
/// The client's first unidirectional stream (RFC 9000 §2.1: client-initiated, type 0b10).
const CLIENT_UNI: u64 = 2;

/// Application state of one connection on one side.
#[derive(Debug, Default)]
pub(crate) struct App {
    /// Index into the flow's connection reports.
    pub report_index: usize,
    /// Streams this side sends on: id → bytes still to send (UNBOUNDED: until stop).
    sends: BTreeMap<u64, u64>,
    /// Server: request bytes read so far per request stream.
    requests: BTreeMap<u64, Vec<u8>>,
    /// Client: download requests not yet sent.
    pending_requests: u32,
    /// Client: bytes per download stream.
    per_stream: u64,
    /// Client: the next bidirectional stream id.
    next_bidi: u64,
    /// Client: request streams opened, and those whose response is complete.
    opened: u32,
    done: u32,
    /// Client: the upload stream is open.
    uploading: bool,
    /// Client: this connection's download is complete.
    pub complete: bool,
    /// Client: a request left as 0-RTT early data.
    pub sent_early: bool,
}

/// What one pass of the application did on one connection.
#[derive(Debug, Default)]
pub(crate) struct Pumped {
    /// Payload bytes the receiving application read.
    pub delivered: u64,
    /// Client: the download just completed.
    pub completed: bool,
    /// Protocol errors (the flow fails with them).
    pub errors: Vec<String>,
}

impl App {
    /// The client's application on a new connection, reporting into `report_index`.
    pub(crate) fn client(workload: Workload, report_index: usize) -> App {
        let (pending_requests, per_stream) = workload.client_requests();
        App {
            report_index,
            pending_requests,
            per_stream,
            ..App::default()
        }
    }

    /// Opens requested streams, reads everything readable and writes pending data on `conn`;
    /// `stop`: a bulk sender stops opening streams.
    pub(crate) fn pump(
        &mut self,
        conn: &mut ::quiche::Connection,
        side: Side,
        workload: Workload,
        stop: bool,
        buf: &mut [u8],
    ) -> Pumped {
        let mut out = Pumped::default();
        if side == Side::Client && (conn.is_established() || conn.is_in_early_data()) {
            self.open_streams(conn, workload, stop, &mut out);
        }
        self.read(conn, side, buf, &mut out);
        self.write(conn, stop, &mut out);
        if side == Side::Client
            && workload.is_download()
            && !self.complete
            && self.pending_requests == 0
            && self.opened > 0
            && self.done == self.opened
        {
            self.complete = true;
            out.completed = true;
        }
        out
    }

    fn open_streams(
        &mut self,
        conn: &mut ::quiche::Connection,
        workload: Workload,
        stop: bool,
        out: &mut Pumped,
    ) {
        if workload == (Workload::Bulk { upload: true }) && !self.uploading && !stop {
            self.uploading = true;
            self.sends.insert(CLIENT_UNI, UNBOUNDED);
        }
        while self.pending_requests > 0 && conn.peer_streams_left_bidi() > 0 {
            let id = self.next_bidi;
            let req = format!("GET {}\n", self.per_stream);
            match conn.stream_send(id, req.as_bytes(), true) {
                Ok(n) if n == req.len() => {}
                // A fresh stream with credit takes the few request bytes whole; anything
                // else is a stack failure.
                Ok(_) | Err(::quiche::Error::Done) => break,
                Err(e) => {
                    out.errors.push(format!("could not send request: {e}"));
                    break;
                }
            }
            self.sent_early |= conn.is_in_early_data();
            self.next_bidi += 4;
            self.pending_requests -= 1;
            self.opened += 1;
        }
    }

    fn read(
        &mut self,
        conn: &mut ::quiche::Connection,
        side: Side,
        buf: &mut [u8],
        out: &mut Pumped,
    ) {
        let readable: Vec<u64> = conn.readable().collect();
        for id in readable {
            loop {
                match conn.stream_recv(id, buf) {
                    Ok((n, fin)) => {
                        let request = side == Side::Server && id % 4 == 0;
                        if request {
                            let r = self.requests.entry(id).or_default();
                            r.extend_from_slice(&buf[..n]);
                        } else {
                            out.delivered += n as u64;
                        }
                        if fin {
                            if request {
                                let req = self.requests.remove(&id).unwrap_or_default();
                                match parse_request(&req) {
                                    Some(size) => {
                                        self.sends.insert(id, size);
                                    }
                                    None => out.errors.push("malformed request".into()),
                                }
                            } else if side == Side::Client {
                                self.done += 1;
                            }
                            break;
                        }
                    }
                    Err(::quiche::Error::Done) => break,
                    Err(::quiche::Error::StreamReset(code)) => {
                        out.errors.push(format!("stream reset by peer ({code})"));
                        break;
                    }
                    Err(e) => {
                        out.errors.push(format!("stream {id}: {e}"));
                        break;
                    }
                }
            }
        }
    }

    fn write(&mut self, conn: &mut ::quiche::Connection, stop: bool, out: &mut Pumped) {
        let mut finished = Vec::new();
        for (&id, remaining) in self.sends.iter_mut() {
            if stop && *remaining == UNBOUNDED {
                finished.push(id);
                continue;
            }
            loop {
                let n = (*remaining).min(CHUNK as u64) as usize;
                let fin = *remaining != UNBOUNDED && n as u64 == *remaining;
                match conn.stream_send(id, &ZEROS[..n], fin) {
                    Ok(w) => {
                        if *remaining != UNBOUNDED {
                            *remaining -= w as u64;
                        }
                        if fin && w == n {
                            finished.push(id);
                            break;
                        }
                        if w < n || w == 0 {
                            break;
                        }
                    }
                    Err(::quiche::Error::Done) => break,
                    Err(e) => {
                        out.errors.push(format!("stream {id}: {e}"));
                        finished.push(id);
                        break;
                    }
                }
            }
        }
        for id in finished {
            self.sends.remove(&id);
        }
    }
}

fn parse_request(req: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(req).ok()?;
    s.strip_prefix("GET ")?.trim_end().parse().ok()
}
