//! The application on a QUIC flow's connections: opening streams, the minimal request
//! protocol (`GET <bytes>\n` on a bidirectional stream, answered with that many bytes and FIN;
//! `u64::MAX` = until told to stop), writing and reading data, and noticing completion.

use bytes::Bytes;
use quinn_proto::{Dir, ReadError, StreamId, WriteError};

use super::endpoint::Conn;
use crate::agent::Side;
use crate::workload::{Workload, UNBOUNDED_REQUEST as UNBOUNDED};

/// Largest chunk handed to quinn at once; the bytes are shared, never copied per chunk.
const CHUNK: usize = 64 * 1024;
static ZEROS: [u8; CHUNK] = [0u8; CHUNK];

/// Application state of one connection on one side.
#[derive(Default)]
pub(crate) struct App {
    /// Streams we send on: (id, bytes still to send; UNBOUNDED = until stop).
    sends: Vec<(StreamId, u64)>,
    /// Streams we read: (id, request bytes if this side parses a request, finished).
    recvs: Vec<RecvState>,
    /// Client: download streams not yet opened.
    pending_requests: u32,
    /// Client: bytes per download stream.
    per_stream: u64,
    /// Client: download streams fully received.
    done_streams: u32,
    /// Client: index into the flow's connection reports.
    pub report_index: usize,
    /// Client download finished on this connection.
    complete: bool,
}

impl App {
    /// The client's application on a new connection, reporting into `report_index`.
    pub(crate) fn client(workload: Workload, report_index: usize) -> App {
        let (pending_requests, per_stream) = workload.client_requests();
        App {
            report_index,
            pending_requests,
            per_stream,
            ..Default::default()
        }
    }
}

struct RecvState {
    id: StreamId,
    /// Server side of a request stream: the request bytes read so far.
    request: Option<Vec<u8>>,
    finished: bool,
}

/// What one pass of the application over an endpoint's connections did. The flow keeps one
/// and [`pump`] clears it, so its vectors are allocated once, not per pass.
#[derive(Default)]
pub(crate) struct Pumped {
    /// Payload bytes read by the receiving application.
    pub delivered: u64,
    /// The same, per connection: (index in the endpoint's connections, bytes).
    pub delivered_by: Vec<(usize, u64)>,
    /// Client: indices of connections whose download just completed.
    pub completed: Vec<usize>,
    /// Protocol errors (the flow fails with them).
    pub errors: Vec<String>,
}

/// Opens requested streams, writes pending data, reads everything readable on `side`'s
/// connections; `stop`: a bulk sender finishes its unbounded streams. What it did goes to
/// `out` (cleared first).
pub(crate) fn pump(
    conns: &mut [Conn],
    side: Side,
    workload: Workload,
    stop: bool,
    out: &mut Pumped,
) {
    out.delivered = 0;
    out.delivered_by.clear();
    out.completed.clear();
    out.errors.clear();
    let Pumped {
        delivered,
        delivered_by,
        completed,
        errors,
    } = out;
    for (ci, c) in conns.iter_mut().enumerate() {
        if c.closing {
            continue;
        }
        // Client opens its streams as soon as stream credit exists (0-RTT or after handshake).
        if side == Side::Client {
            if workload == (Workload::Bulk { upload: true }) && c.app.sends.is_empty() && !stop {
                if let Some(id) = c.conn.streams().open(Dir::Uni) {
                    c.app.sends.push((id, UNBOUNDED));
                }
            }
            while c.app.pending_requests > 0 {
                let Some(id) = c.conn.streams().open(Dir::Bi) else {
                    break;
                };
                c.app.pending_requests -= 1;
                let req = format!("GET {}\n", c.app.per_stream);
                let mut s = c.conn.send_stream(id);
                // The request is tiny and the stream fresh: the send buffer always takes it.
                if s.write(req.as_bytes()).is_err() || s.finish().is_err() {
                    errors.push("could not send request".into());
                }
                c.app.recvs.push(RecvState {
                    id,
                    request: None,
                    finished: false,
                });
            }
        } else {
            while let Some(id) = c.conn.streams().accept(Dir::Bi) {
                c.app.recvs.push(RecvState {
                    id,
                    request: Some(Vec::new()),
                    finished: false,
                });
            }
        }
        while let Some(id) = c.conn.streams().accept(Dir::Uni) {
            c.app.recvs.push(RecvState {
                id,
                request: None,
                finished: false,
            });
        }
        // Read.
        let before = *delivered;
        let mut new_sends = Vec::new();
        for r in c.app.recvs.iter_mut().filter(|r| !r.finished) {
            let mut recv = c.conn.recv_stream(r.id);
            let mut chunks = match recv.read(true) {
                Ok(ch) => ch,
                Err(_) => {
                    r.finished = true;
                    continue;
                }
            };
            loop {
                match chunks.next(usize::MAX) {
                    Ok(Some(chunk)) => match &mut r.request {
                        Some(req) => req.extend_from_slice(&chunk.bytes),
                        None => *delivered += chunk.bytes.len() as u64,
                    },
                    Ok(None) => {
                        r.finished = true;
                        break;
                    }
                    Err(ReadError::Blocked) => break,
                    Err(ReadError::Reset(code)) => {
                        r.finished = true;
                        errors.push(format!("stream reset by peer ({code})"));
                        break;
                    }
                }
            }
            let _ = chunks.finalize();
            if r.finished {
                if let Some(req) = &r.request {
                    match parse_request(req) {
                        Some(n) => new_sends.push((r.id, n)),
                        None => errors.push("malformed request".into()),
                    }
                } else if side == Side::Client && workload != (Workload::Bulk { upload: true }) {
                    c.app.done_streams += 1;
                }
            }
        }
        if *delivered > before {
            delivered_by.push((ci, *delivered - before));
        }
        c.app.sends.extend(new_sends);
        // Write.
        let mut k = 0;
        while k < c.app.sends.len() {
            let (id, ref mut remaining) = c.app.sends[k];
            if stop && *remaining == UNBOUNDED {
                *remaining = 0;
            }
            let mut done = false;
            loop {
                if *remaining == 0 {
                    let _ = c.conn.send_stream(id).finish();
                    done = true;
                    break;
                }
                let n = (*remaining).min(CHUNK as u64) as usize;
                let mut data = [Bytes::from_static(&ZEROS[..n])];
                match c.conn.send_stream(id).write_chunks(&mut data) {
                    Ok(w) => {
                        if *remaining != UNBOUNDED {
                            *remaining -= w.bytes as u64;
                        }
                        if w.bytes < n {
                            break;
                        }
                    }
                    Err(WriteError::Blocked) => break,
                    Err(_) => {
                        done = true;
                        break;
                    }
                }
            }
            if done {
                c.app.sends.swap_remove(k);
            } else {
                k += 1;
            }
        }
        if side == Side::Client
            && !c.app.complete
            && workload.is_download()
            && c.app.pending_requests == 0
            && c.app.done_streams as usize == c.app.recvs.len()
            && !c.app.recvs.is_empty()
        {
            c.app.complete = true;
            completed.push(ci);
        }
    }
}

fn parse_request(req: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(req).ok()?;
    s.strip_prefix("GET ")?.trim_end().parse().ok()
}
