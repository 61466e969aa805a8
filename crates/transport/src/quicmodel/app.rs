//! The applications on a model connection, sending the same application bytes as quiclab's
//! quinn flows: a download stream carries the request `GET <bytes>\n` from the client (FIN
//! after it) and the response of that many bytes from the server (FIN after it); bulk download
//! requests `u64::MAX` bytes on one stream (sent until the flow stops); bulk upload writes
//! without end on one client unidirectional stream to a discard receiver.
//!
//! The model carries no payload bytes, so the server knows what a request asks for from the
//! flow's workload (the request's size on the wire is the real one).

use std::time::Duration;

use super::connection::Endpoint;
use super::streams::UNBOUNDED;
use crate::agent::Side;
use crate::workload::Workload;

/// Client-initiated unidirectional stream 0 (id 2): the bulk upload.
const UPLOAD_STREAM: u64 = 2;

/// Length of the request line for `n` bytes.
fn request_len(n: u64) -> u64 {
    // "GET " + decimal digits + "\n".
    4 + n.to_string().len() as u64 + 1
}

/// Application state of one side of one connection.
#[derive(Debug)]
pub(crate) struct App {
    side: Side,
    workload: Workload,
    /// Bytes per response stream (UNBOUNDED for a bulk download).
    per_stream: u64,
    /// Streams the client opens.
    streams: u32,
    opened: bool,
    /// Client: response streams fully read.
    done_streams: u32,
    /// When the application first ran, at the connection's start (stream completion times
    /// count from here).
    opened_at: Option<Duration>,
    /// Client: the first response stream's completion, from `opened_at`.
    first_stream_done: Option<Duration>,
    /// Client: the sum of the response streams' completion times, from `opened_at`.
    stream_done_sum: Duration,
    /// Server: request streams answered (by receive index).
    answered: Vec<u64>,
    /// The client has every response.
    pub complete: bool,
}

/// What one run of the application did.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Progress {
    /// Payload bytes read by the data receiver's application.
    pub delivered: u64,
    /// The client has just completed its download.
    pub completed: bool,
}

impl App {
    /// The application of `side` for `workload`.
    pub(crate) fn new(side: Side, workload: Workload) -> App {
        let (per_stream, streams) = match workload {
            Workload::Bulk { upload: true } => (UNBOUNDED, 1),
            Workload::Bulk { upload: false } => (UNBOUNDED, 1),
            Workload::Download { size, streams, .. } => {
                let n = streams.max(1);
                (size.div_ceil(u64::from(n)), n)
            }
        };
        App {
            side,
            workload,
            per_stream,
            streams,
            opened: false,
            done_streams: 0,
            opened_at: None,
            first_stream_done: None,
            stream_done_sum: Duration::ZERO,
            answered: Vec::new(),
            complete: false,
        }
    }

    /// Opens streams once possible, reads everything readable, answers requests and writes.
    pub(crate) fn run(&mut self, ep: &mut Endpoint, now: Duration, stop: bool) -> Progress {
        let mut prog = Progress::default();
        let opened_at = *self.opened_at.get_or_insert(now);
        if !ep.can_send_streams() {
            return prog;
        }
        if self.side == Side::Client && !self.opened {
            self.opened = true;
            match self.workload {
                Workload::Bulk { upload: true } => {
                    ep.streams.open_send(UPLOAD_STREAM, UNBOUNDED);
                }
                _ => {
                    for k in 0..u64::from(self.streams) {
                        ep.streams.open_send(4 * k, request_len(self.per_stream));
                    }
                }
            }
        }
        let srtt = ep.srtt();
        let policy = ep.fc_policy();
        let (side, workload) = (self.side, self.workload);
        let receiver = workload.data_receiver();
        let mut finished_requests: [u64; 8] = [0; 8];
        let mut nreq = 0usize;
        let mut overflow = false;
        let mut done = 0u32;
        let mut delivered = 0u64;
        ep.streams.read_all(now, srtt, &policy, |id, n, fin| {
            let request = side == Side::Server && id % 4 == 0;
            if request {
                if fin {
                    if nreq < finished_requests.len() {
                        finished_requests[nreq] = id;
                        nreq += 1;
                    } else {
                        overflow = true;
                    }
                }
                return;
            }
            if side == receiver {
                delivered += n;
            }
            if side == Side::Client && fin {
                done += 1;
            }
        });
        prog.delivered = delivered;
        self.done_streams += done;
        if done > 0 {
            let since = now.saturating_sub(opened_at);
            self.first_stream_done.get_or_insert(since);
            self.stream_done_sum += since * done;
        }
        if side == Side::Server {
            for &id in &finished_requests[..nreq] {
                self.answer(ep, id);
            }
            if overflow {
                // More than 8 requests finished at once: answer every finished one not yet
                // answered (rare; a linear pass).
                let ids: Vec<u64> = ep
                    .streams
                    .recv
                    .iter()
                    .filter(|r| r.finished && r.id % 4 == 0)
                    .map(|r| r.id)
                    .collect();
                for id in ids {
                    self.answer(ep, id);
                }
            }
        }
        if stop {
            ep.streams.stop_writing();
        }
        ep.streams.app_write();
        if side == Side::Client
            && workload.is_download()
            && !self.complete
            && self.done_streams >= self.streams
        {
            self.complete = true;
            prog.completed = true;
        }
        prog
    }

    /// Client: response streams completed, the first one's completion and the sum of all of
    /// theirs (each from the connection's start).
    pub(crate) fn stream_completions(&self) -> (u32, Option<Duration>, Duration) {
        (
            self.done_streams,
            self.first_stream_done,
            self.stream_done_sum,
        )
    }

    fn answer(&mut self, ep: &mut Endpoint, id: u64) {
        if self.answered.contains(&id) {
            return;
        }
        self.answered.push(id);
        ep.streams.open_send(id, self.per_stream);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_quinn_flows_request_lines() {
        assert_eq!(request_len(100_000), "GET 100000\n".len() as u64);
        assert_eq!(
            request_len(u64::MAX),
            "GET 18446744073709551615\n".len() as u64
        );
    }
}
