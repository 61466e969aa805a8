//! The applications on a TCP connection as byte-stream scripts: TLS handshake messages of
//! realistic sizes, requests and responses. Both ends know the protocol, so message
//! boundaries follow from byte counts alone and the data itself stays synthetic.
//!
//! Downloads are HTTP/2-style: all requests go out at once on the one connection and the
//! server interleaves the responses in round-robin frames of [`FRAME`] bytes. Completion and
//! head-of-line blocking follow from in-order delivery of that byte stream alone.
//!
//! HTTP/1.1 downloads (`http1 = true`) start with handshake-only scripts; the flow
//! appends one request–response exchange at a time to both ends of a connection as it hands
//! out requests ([`Script::push_client_exchange`], [`Script::push_server_exchange`]), which
//! models keep-alive without pipelining.

use std::time::Duration;

use super::endpoint::Endpoint;
use super::TlsMode;
use crate::workload::Workload;

/// Size of one HTTP/1.1 request.
pub(crate) const REQUEST: u64 = 100;
/// Response frame size of the multiplexing server (HTTP/2's default max frame size).
pub(crate) const FRAME: u64 = 16 * 1024;
/// "Until the flow stops".
const UNBOUNDED: u64 = u64::MAX;

// TLS 1.3 and HTTP/2 as our endpoints (rustls with the committed ECDSA test chain, hyper's
// HTTP/2) put them on the wire, record overhead included, so that the simulator's TCP and
// the emulator's kernel TCP carry the same bytes, and quinn in the simulator (which runs
// rustls with the same chain) carries a handshake of the same size. Each constant is one
// write: the small ones leave as segments of their own (see `Sender::write`).

/// TLS 1.3 ClientHello (key share, SNI, ALPN, extensions).
const TLS13_CLIENT_HELLO: u64 = 227;
/// TLS 1.3 ServerHello + EncryptedExtensions + Certificate (leaf + CA) + CertificateVerify +
/// Finished.
const TLS13_SERVER_FLIGHT: u64 = 1_325;
/// TLS 1.3 client ChangeCipherSpec (middlebox compatibility) + Finished.
const TLS13_CLIENT_FINISHED: u64 = 64;
/// The server's two TLS 1.3 NewSessionTickets, sent once it has read the client's Finished.
const TLS13_TICKETS: u64 = 184;
/// HTTP/2 client connection preface.
const H2_PREFACE: u64 = 46;
/// HTTP/2 client SETTINGS and connection WINDOW_UPDATE.
const H2_CLIENT_SETTINGS: u64 = 68;
/// One HTTP/2 request (HEADERS).
const H2_REQUEST: u64 = 54;
/// HTTP/2 server SETTINGS, sent once it has read the client's preface.
const H2_SERVER_SETTINGS: u64 = 55;
/// HTTP/2 server connection WINDOW_UPDATE and SETTINGS ACK (two writes), sent once it has
/// read the client's SETTINGS.
const H2_SERVER_WINDOW_UPDATE: u64 = 35;
const H2_SERVER_SETTINGS_ACK: u64 = 31;
/// HTTP/2 client SETTINGS ACK, sent once it has read the server's SETTINGS.
const H2_CLIENT_SETTINGS_ACK: u64 = 31;

/// TLS 1.2 ClientHello.
const TLS12_CLIENT_HELLO: u64 = 300;
/// TLS 1.2 ServerHello + Certificate + ServerKeyExchange + ServerHelloDone.
const TLS12_SERVER_FLIGHT: u64 = 4_300;
/// TLS 1.2 ClientKeyExchange + ChangeCipherSpec + Finished.
const TLS12_CLIENT_FLIGHT: u64 = 150;
/// TLS 1.2 server ChangeCipherSpec + Finished.
const TLS12_SERVER_FINISHED: u64 = 60;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Hand `n` bytes to the socket.
    Write(u64),
    /// Wait for `n` bytes; `payload` = they are application data the flow reports.
    Read { n: u64, payload: bool },
    /// The client may send its request (end of TCP + TLS handshakes).
    Ready,
}

/// What one run of a script did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Progress {
    /// Application payload bytes read in this run.
    pub payload: u64,
    /// The `Ready` step ran in this run.
    pub ready: bool,
    /// Every step has run.
    pub done: bool,
}

/// One end's script.
#[derive(Debug, Clone)]
pub(crate) struct Script {
    steps: Vec<Step>,
    pos: usize,
    /// Bytes already read towards the current `Read`.
    got: u64,
    /// Bytes the server sends after the handshake that the client has not yet planned to
    /// read: it reads them right before its first response (HTTP/1.1 exchanges are
    /// appended later).
    unread_preamble: u64,
}

/// The HTTP/2 connection set-up is modelled for TLS 1.3 (the only mode whose sizes are
/// measured from our endpoints).
fn h2_setup(tls: TlsMode, workload: Workload, http1: bool) -> bool {
    tls == TlsMode::Tls13 && !http1 && matches!(workload, Workload::Download { .. })
}

impl Script {
    fn new(steps: Vec<Step>, unread_preamble: u64) -> Script {
        Script {
            steps,
            pos: 0,
            got: 0,
            unread_preamble,
        }
    }

    /// Reads what the server sent since the handshake ahead of the first response.
    fn read_preamble(&mut self) {
        let n = std::mem::take(&mut self.unread_preamble);
        if n > 0 {
            self.steps.push(Step::Read { n, payload: false });
        }
    }

    /// The client's script.
    pub(crate) fn client(tls: TlsMode, workload: Workload, http1: bool) -> Script {
        let h2 = h2_setup(tls, workload, http1);
        let (steps, preamble) = match tls {
            TlsMode::None => (vec![Step::Ready], 0),
            TlsMode::Tls13 => {
                let mut s = vec![
                    Step::Write(TLS13_CLIENT_HELLO),
                    Step::Read {
                        n: TLS13_SERVER_FLIGHT,
                        payload: false,
                    },
                    Step::Ready,
                    // The request rides right behind the Finished.
                    Step::Write(TLS13_CLIENT_FINISHED),
                ];
                if h2 {
                    s.extend([Step::Write(H2_PREFACE), Step::Write(H2_CLIENT_SETTINGS)]);
                }
                (s, TLS13_TICKETS)
            }
            TlsMode::Tls12 => (
                vec![
                    Step::Write(TLS12_CLIENT_HELLO),
                    Step::Read {
                        n: TLS12_SERVER_FLIGHT,
                        payload: false,
                    },
                    Step::Write(TLS12_CLIENT_FLIGHT),
                    Step::Read {
                        n: TLS12_SERVER_FINISHED,
                        payload: false,
                    },
                    Step::Ready,
                ],
                0,
            ),
        };
        let mut script = Script::new(steps, preamble);
        match workload {
            // The upload never reads: what the server sent after the handshake stays in the
            // receive buffer.
            Workload::Bulk { upload: true } => script.steps.push(Step::Write(UNBOUNDED)),
            Workload::Bulk { upload: false } => {
                script.steps.push(Step::Write(REQUEST));
                script.read_preamble();
                script.steps.push(Step::Read {
                    n: UNBOUNDED,
                    payload: true,
                });
            }
            // HTTP/1.1: the flow appends each exchange when it assigns the request.
            Workload::Download { .. } if http1 => {}
            Workload::Download { size, streams, .. } => {
                let request = if h2 { H2_REQUEST } else { REQUEST };
                script
                    .steps
                    .push(Step::Write(request * u64::from(streams.max(1))));
                if h2 {
                    // The tickets and the server's SETTINGS, answered; then the server's
                    // replies to the client's SETTINGS.
                    script.steps.extend([
                        Step::Read {
                            n: std::mem::take(&mut script.unread_preamble) + H2_SERVER_SETTINGS,
                            payload: false,
                        },
                        Step::Write(H2_CLIENT_SETTINGS_ACK),
                        Step::Read {
                            n: H2_SERVER_WINDOW_UPDATE + H2_SERVER_SETTINGS_ACK,
                            payload: false,
                        },
                    ]);
                }
                script.read_preamble();
                script.steps.push(Step::Read {
                    n: size,
                    payload: true,
                });
            }
        }
        script
    }

    /// The server's script.
    pub(crate) fn server(tls: TlsMode, workload: Workload, http1: bool) -> Script {
        let h2 = h2_setup(tls, workload, http1);
        let mut s = match tls {
            TlsMode::None => vec![],
            TlsMode::Tls13 => {
                let mut s = vec![
                    Step::Read {
                        n: TLS13_CLIENT_HELLO,
                        payload: false,
                    },
                    Step::Write(TLS13_SERVER_FLIGHT),
                    Step::Read {
                        n: TLS13_CLIENT_FINISHED,
                        payload: false,
                    },
                    Step::Write(TLS13_TICKETS),
                ];
                if h2 {
                    s.extend([
                        Step::Read {
                            n: H2_PREFACE,
                            payload: false,
                        },
                        Step::Write(H2_SERVER_SETTINGS),
                        Step::Read {
                            n: H2_CLIENT_SETTINGS,
                            payload: false,
                        },
                        Step::Write(H2_SERVER_WINDOW_UPDATE),
                        Step::Write(H2_SERVER_SETTINGS_ACK),
                    ]);
                }
                s
            }
            TlsMode::Tls12 => vec![
                Step::Read {
                    n: TLS12_CLIENT_HELLO,
                    payload: false,
                },
                Step::Write(TLS12_SERVER_FLIGHT),
                Step::Read {
                    n: TLS12_CLIENT_FLIGHT,
                    payload: false,
                },
                Step::Write(TLS12_SERVER_FINISHED),
            ],
        };
        match workload {
            Workload::Bulk { upload: true } => s.push(Step::Read {
                n: UNBOUNDED,
                payload: true,
            }),
            Workload::Bulk { upload: false } => {
                s.push(Step::Read {
                    n: REQUEST,
                    payload: false,
                });
                s.push(Step::Write(UNBOUNDED));
            }
            Workload::Download { .. } if http1 => {}
            Workload::Download { size, streams, .. } => {
                let request = if h2 { H2_REQUEST } else { REQUEST };
                s.push(Step::Read {
                    n: request * u64::from(streams.max(1)),
                    payload: false,
                });
                // The responses, interleaved frame by frame (see `response_layout`).
                s.push(Step::Write(size));
                if h2 {
                    s.push(Step::Read {
                        n: H2_CLIENT_SETTINGS_ACK,
                        payload: false,
                    });
                }
            }
        }
        Script::new(s, 0)
    }

    /// Client side of one HTTP/1.1 exchange: send a request, then read its `response` bytes.
    pub(crate) fn push_client_exchange(&mut self, response: u64) {
        self.steps.push(Step::Write(REQUEST));
        self.read_preamble();
        self.steps.push(Step::Read {
            n: response,
            payload: true,
        });
    }

    /// Server side of one HTTP/1.1 exchange: read a request, then send `response` bytes.
    pub(crate) fn push_server_exchange(&mut self, response: u64) {
        self.steps.push(Step::Read {
            n: REQUEST,
            payload: false,
        });
        self.steps.push(Step::Write(response));
    }

    /// Reads at most `max` of what the endpoint received and runs every step that can run
    /// now.
    pub(crate) fn run(&mut self, ep: &mut Endpoint, max: u64, now: Duration) -> Progress {
        let mut avail = ep.take_readable_max(max, now);
        let mut prog = Progress::default();
        while let Some(&step) = self.steps.get(self.pos) {
            match step {
                Step::Write(n) => ep.write(n),
                Step::Ready => prog.ready = true,
                Step::Read { n, payload } => {
                    let take = (n - self.got).min(avail);
                    self.got += take;
                    avail -= take;
                    if payload {
                        prog.payload += take;
                    }
                    if self.got < n {
                        break;
                    }
                    self.got = 0;
                }
            }
            self.pos += 1;
        }
        prog.done = self.pos == self.steps.len();
        prog
    }
}

/// Byte offsets, within the response part of the stream, at which each of `streams`
/// responses (of `size / streams` bytes, the last one taking the remainder) is complete when
/// the server sends them in round-robin frames of [`FRAME`] bytes.
pub(crate) fn response_layout(size: u64, streams: u32) -> Vec<u64> {
    let mut remaining = response_sizes(size, streams);
    let mut ends = vec![0u64; remaining.len()];
    let mut offset = 0u64;
    let mut active = remaining.iter().filter(|&&r| r > 0).count();
    while active > 0 {
        for (i, r) in remaining.iter_mut().enumerate() {
            if *r == 0 {
                continue;
            }
            let chunk = (*r).min(FRAME);
            *r -= chunk;
            offset += chunk;
            if *r == 0 {
                ends[i] = offset;
                active -= 1;
            }
        }
    }
    ends
}

/// Sizes of the `streams` responses of a `size`-byte download: `size / streams` each, the
/// last one taking the remainder (at least one response).
pub(crate) fn response_sizes(size: u64, streams: u32) -> Vec<u64> {
    let n = u64::from(streams.max(1));
    let each = size / n;
    (0..n)
        .map(|i| {
            if i + 1 == n {
                size - each * (n - 1)
            } else {
                each
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_layout() {
        // Two streams of 20 kB: frames A16 B16 A4 B4.
        assert_eq!(response_layout(40_000, 2), vec![36_384, 40_000]);
        // The last stream takes the remainder.
        assert_eq!(response_layout(10, 3), vec![3, 6, 10]);
        assert_eq!(response_layout(0, 1), vec![0]);
        let ends = response_layout(1_000_000, 4);
        assert_eq!(ends.iter().copied().max(), Some(1_000_000));
    }

    #[test]
    fn scripts_match_handshake_round_trips() {
        let w = Workload::Download {
            size: 1000,
            streams: 2,
            connections: 1,
        };
        let c = Script::client(TlsMode::Tls12, w, false);
        let reads = c
            .steps
            .iter()
            .take_while(|s| **s != Step::Ready)
            .filter(|s| matches!(s, Step::Read { .. }))
            .count();
        assert_eq!(reads, 2, "TLS 1.2 waits for two server flights");
        let c = Script::client(TlsMode::Tls13, w, false);
        assert_eq!(
            c.steps.last(),
            Some(&Step::Read {
                n: 1000,
                payload: true
            })
        );
    }

    #[test]
    fn http1_scripts_grow_one_exchange_at_a_time() {
        let w = Workload::Download {
            size: 1000,
            streams: 2,
            connections: 1,
        };
        let mut c = Script::client(TlsMode::Tls13, w, true);
        let mut s = Script::server(TlsMode::Tls13, w, true);
        assert!(!c
            .steps
            .iter()
            .any(|st| matches!(st, Step::Read { payload: true, .. })));
        assert!(!s.steps.iter().any(|st| matches!(st, Step::Write(REQUEST))));
        c.push_client_exchange(500);
        s.push_server_exchange(500);
        // The first exchange reads the session tickets ahead of its response.
        assert_eq!(
            c.steps[c.steps.len() - 3..],
            [
                Step::Write(REQUEST),
                Step::Read {
                    n: TLS13_TICKETS,
                    payload: false
                },
                Step::Read {
                    n: 500,
                    payload: true
                }
            ]
        );
        c.push_client_exchange(700);
        assert_eq!(
            c.steps[c.steps.len() - 2..],
            [
                Step::Write(REQUEST),
                Step::Read {
                    n: 700,
                    payload: true
                }
            ]
        );
        assert_eq!(
            s.steps[s.steps.len() - 2..],
            [
                Step::Read {
                    n: REQUEST,
                    payload: false
                },
                Step::Write(500)
            ]
        );
        assert_eq!(response_sizes(10, 3), vec![3, 3, 4]);
        assert_eq!(response_sizes(5, 0), vec![5]);
    }
}
