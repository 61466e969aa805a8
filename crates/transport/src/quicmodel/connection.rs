//! One endpoint of a model connection: the handshake (Initial and Handshake flights of quinn's
//! sizes, 0-RTT on resumption, the anti-amplification limit), packet assembly (coalescing,
//! padding, frame choice, pacing and the congestion window, the I-bit), ACK processing, loss
//! detection and the probe timeout, and the endpoint's counters.
//!
//! Handshake (sizes measured on quiclab's quinn with its Ed25519 certificate, TLS 1.3 with
//! TLS_AES_128_GCM_SHA256, 1500-byte MTU; medians over seeds, since quinn's GREASE transport
//! parameter makes each flight vary by a few bytes): the client's Initial carries a 278-byte
//! ClientHello (359 when resuming) and is padded to the full datagram; the server answers with an
//! Initial (ACK + 90-byte ServerHello, 96 resuming), a Handshake packet (626 bytes of
//! EncryptedExtensions..Finished, 165 resuming) and a 1-RTT packet with four NEW_CONNECTION_ID
//! frames, padded to the full datagram. Once the client has the server's flight (one RTT) it
//! sends its Initial ACK, a Handshake packet (ACK + 36-byte Finished) and its first 1-RTT
//! packet (NEW_CONNECTION_IDs and the request), again padded. The server, on the Finished,
//! confirms the handshake, drops its Handshake keys and sends HANDSHAKE_DONE with two session
//! tickets (178 CRYPTO bytes) in 1-RTT. Before it has received a Handshake packet the server
//! sends at most three times the bytes it received (RFC 9000 §8.1).

use std::cell::Cell;
use std::time::Duration;

use congestion::{CaState, CongestionController, LostPacket, RttSample};

use super::ack::{AckPolicy, AckState, Arrival};
use super::ecn::EcnPath;
use super::flowctl::FcPolicy;
use super::knobs::FcUpdate;
use super::pacing::Pacer;
use super::qlog::ModelQlog;
use super::ranges::RangeSet;
use super::recovery::{detect_lost, Rtt, GRANULARITY, PERSISTENT_CONGESTION_THRESHOLD};
use super::space::{SentFrame, SentLog, SpaceId};
use super::streams::{StreamConfig, Streams};
use super::wire::{
    pn_len, stream_chunk, Ack, DecodeError, Frame, PacketKind, Reader, Writer, AEAD_TAG,
    MAX_FRAMES, MIN_INITIAL_DATAGRAM,
};
use super::Params;
use crate::agent::{Side, Transmit};
use crate::qlog::schema::{ms, LossTrigger, Metrics};
use crate::rate::{AckContext, AckSample, DeliveredTx, RateSampler};
use netem::wire::IPV4_UDP_OVERHEAD;

/// ClientHello CRYPTO bytes (full handshake / resumption).
pub const CLIENT_HELLO: [u32; 2] = [278, 359];
/// ServerHello CRYPTO bytes.
pub const SERVER_HELLO: [u32; 2] = [90, 96];
/// The server's Handshake flight (EncryptedExtensions, Certificate, CertificateVerify,
/// Finished; no certificate when resuming).
pub const SERVER_HANDSHAKE: [u32; 2] = [626, 165];
/// The client's Finished (SHA-256: 4 + 32 bytes).
pub const CLIENT_FINISHED: u32 = 36;
/// Two NewSessionTicket messages in the server's first 1-RTT CRYPTO frame.
pub const SESSION_TICKETS: u32 = 178;
/// NEW_CONNECTION_ID frames each side sends once it has 1-RTT keys.
const NEW_CIDS: u8 = 4;
/// Smallest room worth starting a packet in.
const MIN_PACKET_ROOM: u32 = 48;
/// quinn's floor for the automatically requested max ACK delay.
const MIN_AUTOMATIC_ACK_DELAY: Duration = Duration::from_millis(25);
/// quinn re-requests the ACK delay when the desired one moved by more than this fraction.
const MAX_ACK_DELAY_ERROR: f64 = 0.2;
/// quinn's bound on a STREAM frame header (type, 8-byte id, offset and length).
const STREAM_SIZE_BOUND: u32 = 1 + 8 + 8 + 8;
/// quinn's default max_idle_timeout (both ends, so also the effective one).
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// PTO backoff exponent cap (2^16 · PTO is far beyond any run).
const MAX_PTO_BACKOFF: u32 = 16;

/// Handshake progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hs {
    /// Client: ClientHello sent. Server: nothing received yet.
    Start,
    /// Server: its flight is queued; waiting for the client's Finished.
    ServerSent,
    /// Client: the server's flight arrived (1-RTT keys); waiting for HANDSHAKE_DONE.
    Complete,
    /// Both: handshake confirmed.
    Confirmed,
}

/// Closing state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Close {
    Open,
    /// A CONNECTION_CLOSE is to be sent.
    Pending,
    /// Sent (or received and answered): the endpoint is done.
    Done,
}

/// Why the data sender is not sending, for the time accounting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Limit {
    /// Congestion window or pacer full with data waiting.
    Cwnd = 0,
    /// Data waiting without stream or connection credit.
    FlowControl = 1,
    /// Nothing waiting.
    App = 2,
}

/// One endpoint's counters.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Stats {
    /// Packets sent (all spaces).
    pub packets_sent: u64,
    /// Packets declared lost.
    pub packets_lost: u64,
    /// Loss batches that lost in-flight packets (quinn's count), plus rises of the peer's
    /// ECN-CE count.
    pub congestion_events: u64,
    /// Congestion events in answer to a rise of the ECN-CE count.
    pub ce_congestion_events: u64,
    /// First congestion event.
    pub first_congestion: Option<Duration>,
    /// ACK frames sent.
    pub ack_frames_sent: u64,
    /// ACK frames received.
    pub ack_frames_received: u64,
    /// Ack-eliciting packets received.
    pub ack_eliciting_received: u64,
    /// MAX_DATA frames sent.
    pub max_data_sent: u64,
    /// MAX_STREAM_DATA frames sent.
    pub max_stream_data_sent: u64,
    /// DATA_BLOCKED frames sent.
    pub data_blocked_sent: u64,
    /// STREAM_DATA_BLOCKED frames sent.
    pub stream_data_blocked_sent: u64,
    /// Packets sent with the I-bit.
    pub ibit_sent: u64,
    /// ACK_FREQUENCY frames sent.
    pub ack_frequency_sent: u64,
    /// Packets dropped for lack of keys (e.g. 1-RTT before the handshake completed).
    pub undecryptable: u64,
    /// Frames that violated the protocol (ignored).
    pub violations: u64,
    /// Seconds spent cwnd-, flow-control- and application-limited.
    pub limited_s: [f64; 3],
}

/// Crypto stream of one space.
#[derive(Debug, Default)]
struct Crypto {
    /// Bytes queued to send.
    queued: u32,
    /// Next new offset.
    sent: u32,
    acked: RangeSet,
    retx: std::collections::VecDeque<(u32, u32)>,
    /// Received bytes.
    recv: RangeSet,
}

impl Crypto {
    fn has_data(&self) -> bool {
        self.sent < self.queued || !self.retx.is_empty()
    }

    fn received(&self) -> u64 {
        self.recv.contiguous_end(0)
    }
}

/// Control frames waiting to be sent.
#[derive(Debug, Default)]
struct Pending {
    handshake_done: bool,
    new_cids: bool,
    ack_frequency: bool,
    data_blocked: Option<u64>,
    stream_blocked: std::collections::VecDeque<(u32, u64)>,
}

/// A packet being built.
#[derive(Debug, Default)]
struct Pkt {
    started: bool,
    /// Frames written.
    frames: u32,
    /// Frame bytes.
    len: u32,
    elicit: bool,
    new_data: bool,
    ack_largest: Option<u64>,
}

/// A packet placed in the datagram.
#[derive(Debug, Clone, Copy)]
struct Built {
    space: SpaceId,
    pn: u64,
    size: u32,
    elicit: bool,
    ibit: bool,
}

/// What a controller driven by delivery-rate samples (BBR, BBRv3) needs of the sender, kept
/// only for such a controller so the others run exactly as without it.
#[derive(Debug, Clone)]
struct RateDriven {
    sampler: RateSampler,
    /// Earliest departure of the next paced 1-RTT packet (Linux's `tcp_wstamp_ns`).
    next_departure: Duration,
    /// The current recovery period (RFC 9002 §7.3.2): when it started and the state the
    /// controller sees during it.
    recovery: Option<(Duration, CaState)>,
    /// In-flight packets declared lost and not yet counted by the sampler (the ACK frame
    /// being processed counts them when it ends, a loss timer at once).
    pending_lost: u64,
}

/// One endpoint of a connection.
pub(crate) struct Endpoint {
    /// Client or server.
    pub side: Side,
    conn: u32,
    p: Params,
    /// Handshake progress.
    pub hs: Hs,
    /// Client: resuming with 0-RTT. Server: accepting 0-RTT.
    pub resumed: bool,
    keys: [bool; 3],
    discarded: [bool; 3],
    crypto: [Crypto; 3],
    validated: bool,
    recv_bytes: u64,
    sent_bytes: u64,
    /// The server saw the client's first Initial.
    pub active: bool,
    sent: [SentLog; 3],
    acks: [AckState; 3],
    largest_acked: [Option<u64>; 3],
    loss_time: [Option<Duration>; 3],
    last_elicit: [Option<Duration>; 3],
    elicit_out: [u32; 3],
    probes: [u8; 3],
    /// `send_one_on_loss`: one ack-eliciting packet of the data space may ignore the window (set
    /// when a congestion event starts a recovery period, cleared by the next one sent).
    send_one: bool,
    pto_count: u32,
    last_send: Option<Duration>,
    rtt: Rtt,
    cc: Box<dyn CongestionController>,
    /// Delivery-rate sampling, recovery state and rate pacing for a controller that uses them.
    rate: Option<RateDriven>,
    in_flight: u64,
    app_limited: bool,
    pacer: Pacer,
    pacing_wake: Option<Duration>,
    /// Streams and flow control.
    pub streams: Streams,
    fc: FcPolicy,
    policy: AckPolicy,
    /// Newest ACK_FREQUENCY sequence number received.
    ack_frequency_recv_seq: Option<u64>,
    /// Newest ACK_FREQUENCY sequence number sent, and the delay it requested.
    ack_frequency_sent_seq: Option<u64>,
    ack_frequency_requested: Option<Duration>,
    peer_max_ack_delay: Duration,
    pending: Pending,
    close: Close,
    /// Counters.
    pub stats: Stats,
    limit: Option<(Limit, Duration)>,
    /// When the client had the server's flight (handshake complete).
    pub handshake_complete_at: Option<Duration>,
    /// Session tickets received (resumption possible on the next connection).
    pub got_ticket: bool,
    /// Whether this side sends the flow's data (it requests the ACK frequency).
    pub data_sender: bool,
    /// Last packet received, or first ack-eliciting packet sent after it (idle timer).
    last_activity: Option<Duration>,
    elicited_since_recv: bool,
    /// The idle timeout closed the connection.
    pub timed_out: bool,
    /// quinn's rate limit on ACKs of only non-ack-eliciting packets riding on data packets.
    next_bundled_ack: Option<Duration>,
    /// `poll_timeout`'s answer until the next input or output (the engine asks often).
    timeout_cache: Cell<Option<Option<Duration>>>,
    /// ECN counts, marking and validation.
    pub ecn: EcnPath,
    /// The CE rise of the ACK frame being processed, for the controller's ECN feedback.
    ecn_ce_of_ack: u64,
    /// This endpoint's qlog, when qlogs are wanted.
    qlog: Option<Box<ModelQlog>>,
}

/// Where a frame's effects go while the packet log is borrowed.
fn requeue(f: SentFrame, streams: &mut Streams, crypto: &mut Crypto, pending: &mut Pending) {
    match f {
        SentFrame::Stream {
            stream,
            offset,
            len,
            fin,
        } => streams.on_lost(stream, offset, len, fin),
        SentFrame::Crypto { offset, len } => crypto.retx.push_back((offset, offset + len)),
        SentFrame::MaxData => streams.conn_recv.due = true,
        SentFrame::MaxStreamData(i) => {
            if let Some(r) = streams.recv.get_mut(i as usize) {
                if !r.finished {
                    r.window.due = true;
                }
            }
        }
        SentFrame::DataBlocked(limit) => {
            if streams.conn_max == limit && streams.conn_credit() == 0 {
                pending.data_blocked = Some(limit);
            }
        }
        SentFrame::StreamDataBlocked(i, limit) => {
            if streams
                .send
                .get(i as usize)
                .is_some_and(|s| s.max_data == limit && s.unsent() > 0)
            {
                pending.stream_blocked.push_back((i, limit));
            }
        }
        SentFrame::HandshakeDone => pending.handshake_done = true,
        SentFrame::AckFrequency => pending.ack_frequency = true,
        SentFrame::NewConnectionIds => pending.new_cids = true,
    }
}

impl Endpoint {
    /// A client starting connection `conn` at `now` (`resumed`: with 0-RTT).
    pub(crate) fn client(
        conn: u32,
        p: Params,
        now: Duration,
        resumed: bool,
        data_sender: bool,
    ) -> Endpoint {
        let mut e = Endpoint::new(Side::Client, conn, p, now, resumed, data_sender);
        e.keys[SpaceId::Initial as usize] = true;
        e.crypto[SpaceId::Initial as usize].queued = CLIENT_HELLO[usize::from(resumed)];
        if resumed {
            // 0-RTT keys: the Data space may carry requests at once.
            e.keys[SpaceId::Data as usize] = true;
        }
        e
    }

    /// The server of connection `conn`, waiting for the client's Initial (`resumed`: the
    /// client holds a ticket and 0-RTT is on, so the server accepts 0-RTT).
    pub(crate) fn server(
        conn: u32,
        p: Params,
        now: Duration,
        resumed: bool,
        data_sender: bool,
    ) -> Endpoint {
        let mut e = Endpoint::new(Side::Server, conn, p, now, resumed, data_sender);
        e.keys[SpaceId::Initial as usize] = true;
        e
    }

    /// The client presented a valid address-validation token in its first Initial: the
    /// server's address check is done before any byte arrives (RFC 9000 §8.1.3).
    pub(crate) fn address_validated_by_token(&mut self) {
        self.validated = true;
    }

    /// The next paced packet's earliest departure when a rate-driven controller sets the
    /// pacing rate itself (BBR); `None`: quinn's token bucket paces.
    fn rate_pacing(&self) -> Option<Duration> {
        let r = self.rate.as_ref()?;
        self.cc.pacing_rate().map(|_| r.next_departure)
    }

    /// The window the pacer paces (it refills at 1.25 · window / SRTT): the congestion
    /// window, or for a controller with its own pacing rate (Prague) the window that makes the
    /// refill that rate.
    fn pacing_window(&self) -> u64 {
        match self.cc.pacing_rate() {
            Some(rate) => {
                let w = u128::from(rate) * self.rtt.smoothed.as_nanos() * 4 / 5_000_000_000;
                u64::try_from(w)
                    .unwrap_or(u64::MAX)
                    .max(u64::from(self.p.max_udp))
            }
            None => self.cc.window(),
        }
    }

    fn new(
        side: Side,
        conn: u32,
        p: Params,
        now: Duration,
        resumed: bool,
        data_sender: bool,
    ) -> Endpoint {
        let k = &p.knobs;
        // One seed per connection and side, as the TCP model derives them.
        let seed = crate::seeded::sub_seed(
            p.seed,
            (u64::from(conn) << 1) | u64::from(side == Side::Server),
        );
        let cc = congestion::build_seeded(&p.cc, u64::from(p.max_udp), now, seed);
        let rate = cc.uses_rate_samples().then(|| RateDriven {
            // QUIC's handshake packets are sampled like any other: nothing counts as
            // delivered before them.
            sampler: RateSampler::new(0),
            next_departure: now,
            recovery: None,
            pending_lost: 0,
        });
        let rtt = Rtt::new(k.common.initial_rtt);
        let pacer = Pacer::new(rtt.smoothed, cc.window(), p.max_udp, now);
        let queue_limit = k
            .send_queue_limit
            .map(|l| (l, (l as f64 * k.send_queue_low_water) as u64));
        let streams = Streams::new(
            &StreamConfig {
                stream_window: k.common.stream_window,
                conn_window: k.common.conn_window,
                peer_stream_window: k.common.stream_window,
                peer_conn_window: k.common.conn_window,
                send_window: k.common.send_window,
                queue_limit,
                scheduler: k.scheduler,
            },
            now,
        );
        Endpoint {
            side,
            conn,
            p,
            hs: Hs::Start,
            resumed,
            keys: [false; 3],
            discarded: [false; 3],
            crypto: Default::default(),
            validated: side == Side::Client,
            recv_bytes: 0,
            sent_bytes: 0,
            active: side == Side::Client,
            sent: Default::default(),
            acks: Default::default(),
            largest_acked: [None; 3],
            loss_time: [None; 3],
            last_elicit: [None; 3],
            elicit_out: [0; 3],
            probes: [0; 3],
            send_one: false,
            pto_count: 0,
            last_send: None,
            rtt,
            cc,
            rate,
            in_flight: 0,
            app_limited: false,
            pacer,
            pacing_wake: None,
            streams,
            fc: FcPolicy {
                update: k.fc_update,
                threshold: k.fc_threshold,
                immediate: k.fc_immediate,
                autotune: k.window_autotuning,
            },
            policy: AckPolicy {
                ratio: k.receiver_ack_ratio,
                delay: k.ack_delay,
                reorder: u8::from(k.ack_on_reorder),
                ibit: k.ibit,
                bundle: k.bundle_acks,
            },
            ack_frequency_recv_seq: None,
            ack_frequency_sent_seq: None,
            ack_frequency_requested: None,
            peer_max_ack_delay: k.ack_delay,
            pending: Pending::default(),
            close: Close::Open,
            stats: Stats::default(),
            ecn: EcnPath::new(k.common.ecn, crate::cc_adapter::ect_codepoint(&p.cc)),
            ecn_ce_of_ack: 0,
            limit: None,
            handshake_complete_at: None,
            got_ticket: false,
            data_sender,
            next_bundled_ack: None,
            last_activity: None,
            elicited_since_recv: false,
            timed_out: false,
            timeout_cache: Cell::new(None),
            qlog: None,
        }
    }

    /// Logs this endpoint's packets, losses and recovery metrics into `qlog`.
    pub(crate) fn attach_qlog(&mut self, qlog: ModelQlog) {
        self.qlog = Some(Box::new(qlog));
    }

    /// `recovery:metrics_updated` when a metric changed (and qlogs are wanted).
    fn log_metrics(&mut self, now: Duration) {
        if self.qlog.is_none() {
            return;
        }
        // Before the first sample the minimum and latest RTT are the initial RTT, not a
        // measurement (qvis would take it for the handshake's round trip).
        let sampled = self.rtt.sampled;
        let m = Metrics {
            min_rtt: sampled.then(|| ms(self.rtt.min)),
            smoothed_rtt: Some(ms(self.rtt.smoothed)),
            latest_rtt: sampled.then(|| ms(self.rtt.latest)),
            rtt_variance: Some(ms(self.rtt.var)),
            pto_count: Some(self.pto_count),
            congestion_window: Some(self.cc.window()),
            bytes_in_flight: Some(self.in_flight),
        };
        if let Some(q) = &mut self.qlog {
            q.metrics(now, m);
        }
    }

    /// 1-RTT (or 0-RTT) stream data may be sent.
    pub(crate) fn can_send_streams(&self) -> bool {
        self.keys[SpaceId::Data as usize] && self.close == Close::Open
    }

    /// The handshake is complete at this endpoint (client: server flight received).
    pub(crate) fn is_established(&self) -> bool {
        matches!(self.hs, Hs::Complete | Hs::Confirmed)
    }

    /// Closed (CONNECTION_CLOSE sent or answered).
    pub(crate) fn is_closed(&self) -> bool {
        self.close == Close::Done
    }

    /// The application closes the connection (after its download).
    pub(crate) fn close(&mut self) {
        self.timeout_cache.set(None);
        if self.close == Close::Open {
            self.close = Close::Pending;
        }
    }

    /// (cwnd, smoothed RTT, bytes in flight).
    pub(crate) fn sender_state(&self) -> (u64, Duration, u64) {
        (self.cc.window(), self.rtt.smoothed, self.in_flight)
    }

    /// Smoothed RTT.
    pub(crate) fn srtt(&self) -> Duration {
        self.rtt.smoothed
    }

    /// The flow-control policy.
    pub(crate) fn fc_policy(&self) -> FcPolicy {
        self.fc
    }

    fn confirmed(&self) -> bool {
        self.hs == Hs::Confirmed
    }

    fn discard(&mut self, space: SpaceId) {
        let s = space as usize;
        if self.discarded[s] {
            return;
        }
        self.discarded[s] = true;
        self.keys[s] = false;
        let bytes = self.sent[s].discard();
        self.in_flight = self.in_flight.saturating_sub(bytes);
        self.elicit_out[s] = 0;
        self.loss_time[s] = None;
        self.probes[s] = 0;
        self.crypto[s].retx.clear();
        // RFC 9002 §6.2.2: the PTO backoff restarts with the next space.
        self.pto_count = 0;
    }

    // ----------------------------------------------------------------- receiving

    /// A datagram arrived at `now`.
    pub(crate) fn on_datagram(
        &mut self,
        bytes: &[u8],
        ecn: netem::Ecn,
        now: Duration,
    ) -> Result<(), DecodeError> {
        self.timeout_cache.set(None);
        let (mut r, h) = Reader::new(bytes)?;
        if self.close == Close::Done {
            return Ok(());
        }
        self.last_activity = Some(now);
        self.elicited_since_recv = false;
        self.recv_bytes += u64::from(h.udp_len);
        for _ in 0..h.packets {
            let ph = r.packet()?;
            let space = match ph.kind {
                PacketKind::Initial => SpaceId::Initial,
                PacketKind::Handshake => SpaceId::Handshake,
                PacketKind::ZeroRtt | PacketKind::OneRtt => SpaceId::Data,
            };
            let s = space as usize;
            let keys = match ph.kind {
                PacketKind::ZeroRtt => {
                    self.side == Side::Server && self.resumed && self.hs != Hs::Start
                }
                PacketKind::OneRtt if self.side == Side::Client => {
                    self.keys[s] && self.is_established()
                }
                _ => self.keys[s],
            };
            if self.side == Side::Server && space == SpaceId::Initial && keys {
                self.active = true;
            }
            let dup = !keys || self.acks[s].is_duplicate(ph.pn);
            if !keys {
                self.stats.undecryptable += 1;
            }
            // Logged before its frames take effect, as quinn logs a packet once it is opened.
            if let (false, Some(q)) = (dup, &mut self.qlog) {
                q.received(now, &ph, r.clone());
            }
            let mut elicit = false;
            for _ in 0..ph.frames {
                let f = r.frame()?;
                if dup {
                    continue;
                }
                elicit |= f.ack_eliciting();
                self.on_frame(space, &f, now);
            }
            if dup {
                continue;
            }
            if self.side == Side::Server && space == SpaceId::Handshake {
                // A Handshake packet proves the client's address (RFC 9000 §8.1) and ends the
                // use of Initial keys (RFC 9001 §4.9.1).
                self.validated = true;
                self.discard(SpaceId::Initial);
            }
            if self.discarded[s] {
                continue;
            }
            let arrival = self.acks[s].on_packet(
                ph.pn,
                elicit,
                ph.ibit,
                now,
                &self.policy,
                space != SpaceId::Data,
            );
            if arrival == Arrival::New {
                self.ecn.on_packet(s, ecn);
                if elicit {
                    self.stats.ack_eliciting_received += 1;
                    if space == SpaceId::Data {
                        self.next_bundled_ack = Some(now);
                    }
                }
            }
        }
        self.log_metrics(now);
        Ok(())
    }

    fn on_frame(&mut self, space: SpaceId, f: &Frame, now: Duration) {
        let s = space as usize;
        match *f {
            Frame::Padding(_) | Frame::Ping | Frame::NewToken(_) | Frame::NewConnectionIds(_) => {}
            Frame::DataBlocked(_) | Frame::StreamDataBlocked { .. } => {}
            Frame::Ack(ref a) => self.on_ack(space, a, now),
            Frame::Crypto { offset, len } => {
                self.crypto[s]
                    .recv
                    .insert(u64::from(offset), u64::from(offset) + u64::from(len));
                self.on_crypto(space, now);
            }
            Frame::Stream {
                id,
                offset,
                len,
                fin,
                ..
            } => {
                if space != SpaceId::Data || !self.streams.on_stream(id, offset, len, fin, now) {
                    self.stats.violations += 1;
                }
            }
            Frame::MaxData(v) => self.streams.conn_max = self.streams.conn_max.max(v),
            Frame::MaxStreamData { id, max } => self.streams.on_max_stream_data(id, max),
            Frame::Close(_) => {
                // Answer once, then stop.
                self.close = match self.close {
                    Close::Open => Close::Pending,
                    _ => Close::Done,
                };
            }
            Frame::HandshakeDone => {
                if self.side == Side::Client && self.hs == Hs::Complete {
                    self.hs = Hs::Confirmed;
                    self.discard(SpaceId::Handshake);
                    self.on_confirmed();
                }
            }
            Frame::AckFrequency {
                seq,
                threshold,
                max_delay_us,
                reorder,
            } => {
                if self.ack_frequency_recv_seq.is_none_or(|q| seq > q) {
                    self.ack_frequency_recv_seq = Some(seq);
                    self.policy.ratio = threshold.saturating_add(1);
                    self.policy.delay = Duration::from_micros(max_delay_us);
                    self.policy.reorder = reorder;
                }
            }
        }
    }

    fn on_crypto(&mut self, space: SpaceId, now: Duration) {
        let got = self.crypto[space as usize].received();
        let r = usize::from(self.resumed);
        match (self.side, space, self.hs) {
            (Side::Client, SpaceId::Initial, _) if got >= u64::from(SERVER_HELLO[r]) => {
                self.keys[SpaceId::Handshake as usize] =
                    !self.discarded[SpaceId::Handshake as usize];
            }
            (Side::Client, SpaceId::Handshake, Hs::Start)
                if got >= u64::from(SERVER_HANDSHAKE[r]) =>
            {
                self.hs = Hs::Complete;
                self.handshake_complete_at = Some(now);
                self.keys[SpaceId::Data as usize] = true;
                self.crypto[SpaceId::Handshake as usize].queued = CLIENT_FINISHED;
                self.pending.new_cids = true;
            }
            (Side::Client, SpaceId::Data, _) if got >= u64::from(SESSION_TICKETS) => {
                self.got_ticket = true;
            }
            (Side::Server, SpaceId::Initial, Hs::Start) if got >= u64::from(CLIENT_HELLO[r]) => {
                self.hs = Hs::ServerSent;
                self.crypto[SpaceId::Initial as usize].queued = SERVER_HELLO[r];
                self.keys[SpaceId::Handshake as usize] = true;
                self.crypto[SpaceId::Handshake as usize].queued = SERVER_HANDSHAKE[r];
                // 1-RTT keys for sending (0.5-RTT data) from here.
                self.keys[SpaceId::Data as usize] = true;
                self.pending.new_cids = true;
            }
            (Side::Server, SpaceId::Handshake, Hs::ServerSent)
                if got >= u64::from(CLIENT_FINISHED) =>
            {
                self.hs = Hs::Confirmed;
                self.handshake_complete_at = Some(now);
                self.pending.handshake_done = true;
                self.crypto[SpaceId::Data as usize].queued = SESSION_TICKETS;
                self.discard(SpaceId::Handshake);
                self.on_confirmed();
            }
            _ => {}
        }
    }

    fn on_confirmed(&mut self) {
        if self.requests_ack_frequency() {
            self.pending.ack_frequency = true;
        }
    }

    /// The data sender asks for an ACK frequency (`ack_ratio` or `max_ack_delay` set).
    fn requests_ack_frequency(&self) -> bool {
        let k = &self.p.knobs;
        self.data_sender && (k.common.ack_ratio.is_some() || k.common.max_ack_delay.is_some())
    }

    /// The max ACK delay to request now, as quinn: the configured one (else the receiver's
    /// own), but no more than the RTT unless the RTT is below 25 ms.
    fn desired_ack_delay(&self) -> Duration {
        let k = &self.p.knobs;
        let candidate = k.common.max_ack_delay.unwrap_or(k.ack_delay);
        candidate.min(self.rtt.smoothed.max(MIN_AUTOMATIC_ACK_DELAY))
    }

    /// After an RTT sample: a new ACK_FREQUENCY is due when the desired delay moved more than
    /// 20% from the one requested last (quinn's rule).
    fn maybe_update_ack_frequency(&mut self) {
        if !self.requests_ack_frequency() || !self.confirmed() || self.pending.ack_frequency {
            return;
        }
        let Some(current) = self.ack_frequency_requested else {
            return;
        };
        let desired = self.desired_ack_delay().as_secs_f64();
        let current = current.as_secs_f64().max(1e-9);
        if (desired / current - 1.0).abs() > MAX_ACK_DELAY_ERROR {
            self.pending.ack_frequency = true;
        }
    }

    fn on_ack(&mut self, space: SpaceId, a: &Ack, now: Duration) {
        let s = space as usize;
        self.stats.ack_frames_received += 1;
        if a.largest >= self.sent[s].next_pn {
            // Acknowledges a packet never sent: a protocol violation, ignored.
            self.stats.violations += 1;
            return;
        }
        self.largest_acked[s] = Some(self.largest_acked[s].map_or(a.largest, |l| l.max(a.largest)));
        let mss = u64::from(self.p.max_udp);
        // As Linux, a rate sample needs packets in flight before the ACK; counts are packets,
        // from bytes as the TCP model counts its pipe.
        let prior_packets = self.in_flight > 0;
        let prior_in_flight = self.in_flight.div_ceil(mss);
        let mut rs = AckSample::default();
        // RTT sample from the largest, if newly acknowledged and ack-eliciting.
        let mut sample = None;
        if let Some(p) = self.sent[s].get(a.largest) {
            if p.outstanding && p.ack_eliciting {
                sample = Some(now.saturating_sub(p.time));
            }
        }
        if let Some(latest) = sample {
            let mut delay = if space == SpaceId::Data {
                Duration::from_micros(a.delay.saturating_mul(8).min(u64::from(u32::MAX)))
            } else {
                Duration::ZERO
            };
            if self.confirmed() {
                delay = delay.min(self.peer_max_ack_delay);
            }
            self.rtt.update(latest, delay, now);
            self.maybe_update_ack_frequency();
        }
        let rtt = RttSample {
            latest: self.rtt.latest,
            smoothed: self.rtt.smoothed,
            min: self.rtt.min,
        };
        let mut newly_largest = None;
        let mut any = false;
        let mut ack_frequency_acked = false;
        let (mut newly_ect, mut newly_count, mut newly_bytes) = (0u64, 0u64, 0u64);
        let Endpoint {
            sent,
            streams,
            crypto,
            acks,
            cc,
            in_flight,
            elicit_out,
            app_limited,
            rate,
            ..
        } = self;
        let log = &mut sent[s];
        for (lo, hi) in a.ranges() {
            let from = lo.max(log.base());
            if hi < from {
                continue;
            }
            for pn in from..=hi {
                let Some(p) = log.get(pn).copied() else {
                    break;
                };
                if !p.outstanding {
                    continue;
                }
                if let Some(rec) = log.get_mut(pn) {
                    rec.outstanding = false;
                    rec.acked = true;
                }
                any = true;
                newly_largest = Some(newly_largest.map_or(pn, |l: u64| l.max(pn)));
                newly_ect += u64::from(p.ect);
                if p.in_flight {
                    newly_count += 1;
                    newly_bytes += u64::from(p.size);
                }
                if p.ack_eliciting {
                    elicit_out[s] = elicit_out[s].saturating_sub(1);
                }
                if p.in_flight {
                    *in_flight = in_flight.saturating_sub(u64::from(p.size));
                    cc.on_ack(now, p.time, u64::from(p.size), *app_limited, &rtt);
                    if let Some(r) = rate.as_mut() {
                        // QUIC never sends a packet number twice: no sample is ambiguous.
                        r.sampler.on_delivered(
                            &mut rs,
                            &DeliveredTx {
                                tx: p.tx,
                                sent: p.time,
                                retransmitted: false,
                            },
                        );
                        // RFC 9002 §7.3.2: a packet sent during recovery ends it.
                        if r.recovery.is_some_and(|(start, _)| p.time > start) {
                            r.recovery = None;
                        }
                    }
                }
                if p.ack_largest != u64::MAX {
                    acks[s].peer_saw_ack_up_to(p.ack_largest);
                }
                for f in log.frames_of(&p) {
                    match f {
                        SentFrame::Stream {
                            stream,
                            offset,
                            len,
                            fin,
                        } => streams.on_acked(stream, offset, len, fin),
                        SentFrame::Crypto { offset, len } => {
                            crypto[s]
                                .acked
                                .insert(u64::from(offset), u64::from(offset + len));
                        }
                        SentFrame::AckFrequency => ack_frequency_acked = true,
                        _ => {}
                    }
                }
            }
        }
        if ack_frequency_acked {
            // The peer applies the requested delay from now on (an older request acknowledged
            // late would only shorten the PTO's allowance a little).
            if let Some(d) = self.ack_frequency_requested {
                self.peer_max_ack_delay = d;
            }
        }
        if any {
            self.on_ack_ecn(space, a, newly_largest, newly_ect, now);
            if self.p.knobs.common.ecn && newly_count > 0 {
                // ACK_ECN counts packets: the CE share of the bytes is estimated from the
                // mean size of the packets newly acknowledged.
                let ce = self.ecn_ce_of_ack.min(newly_count);
                self.cc
                    .on_ecn_feedback(now, newly_bytes, newly_bytes * ce / newly_count);
            }
            self.cc
                .on_end_acks(now, self.in_flight, self.app_limited, newly_largest);
            // RFC 9002 §6.2.1: an acknowledgement resets the backoff (a client only once it
            // knows the server validated its address, which the model's server does on the
            // first Handshake packet; the difference is one backoff step at most).
            self.pto_count = 0;
        }
        self.detect_losses(space, now);
        if let Some(r) = self.rate.as_mut() {
            let newly_lost = std::mem::take(&mut r.pending_lost);
            if prior_packets {
                RateSampler::set_rtt(&mut rs, sample);
                let (srtt, min_rtt) = if self.rtt.sampled {
                    (self.rtt.smoothed, self.rtt.min)
                } else {
                    (Duration::ZERO, Duration::ZERO)
                };
                let cx = AckContext {
                    newly_delivered: newly_count,
                    newly_lost,
                    prior_in_flight,
                    // A QUIC receiver cannot take back an acknowledgement.
                    sack_reneg: false,
                    min_rtt,
                    srtt,
                    // The frame says how long the receiver held it, where Linux guesses.
                    ack_maybe_delayed: space == SpaceId::Data && a.delay > 0,
                    next_departure: r.next_departure,
                    ca_state: r.recovery.map_or(CaState::Open, |(_, st)| st),
                    is_cwnd_limited: !self.app_limited,
                };
                let rate_sample = r.sampler.gen(&rs, &cx, now);
                let in_flight = self.in_flight.div_ceil(mss);
                self.cc.on_rate_sample(now, &rate_sample, in_flight);
                if self.cc.marks_app_limited() {
                    r.sampler.mark_app_limited(in_flight);
                }
            } else {
                r.sampler.on_lost(newly_lost);
            }
        }
        self.sent[s].trim();
    }

    /// RFC 9000 §13.4.2.1 validation of the frame's counts and RFC 9002 B.7's ProcessECN:
    /// a rise of the CE count is a congestion event dated by the largest acknowledged packet.
    /// As quinn, only a frame whose largest packet is newly acknowledged (so it arrived in
    /// order) is examined; its CE rise is kept for the controller's per-ACK feedback.
    fn on_ack_ecn(
        &mut self,
        space: SpaceId,
        a: &Ack,
        newly_largest: Option<u64>,
        newly_ect: u64,
        now: Duration,
    ) {
        self.ecn_ce_of_ack = 0;
        if newly_largest != Some(a.largest) {
            return;
        }
        let s = space as usize;
        let feedback = self.ecn.on_ack(s, a.ecn, newly_ect);
        if feedback.ce_increase == 0 {
            return;
        }
        self.ecn_ce_of_ack = feedback.ce_increase;
        let sent = self.sent[s].get(a.largest).map_or(now, |p| p.time);
        self.stats.congestion_events += 1;
        self.stats.ce_congestion_events += 1;
        self.stats.first_congestion.get_or_insert(now);
        match self.rate.as_mut() {
            None => self.cc.on_congestion_event(now, sent, false, 0),
            // A rate-driven controller hears of a reduction once, when it starts (Linux's
            // ssthresh hook on entering CWR).
            Some(r) => {
                if r.recovery.is_none_or(|(start, _)| sent > start) {
                    r.recovery = Some((now, CaState::Cwr));
                    self.cc.on_congestion_event(now, sent, false, 0);
                }
            }
        }
    }

    fn detect_losses(&mut self, space: SpaceId, now: Duration) {
        let s = space as usize;
        let Some(largest) = self.largest_acked[s] else {
            return;
        };
        let pc_period = (space == SpaceId::Data && self.rtt.sampled).then(|| {
            (self.rtt.smoothed + (self.rtt.var * 4).max(GRANULARITY) + self.peer_max_ack_delay)
                * PERSISTENT_CONGESTION_THRESHOLD
        });
        let Endpoint {
            sent,
            streams,
            crypto,
            pending,
            rtt,
            rate,
            cc,
            qlog,
            ..
        } = self;
        let c = &mut crypto[s];
        let lost = detect_lost(
            &mut sent[s],
            largest,
            rtt,
            now,
            pc_period,
            |log, pn, by_count| {
                if let Some(p) = log.get(pn) {
                    if let Some(q) = qlog {
                        let trigger = if by_count {
                            LossTrigger::ReorderingThreshold
                        } else {
                            LossTrigger::TimeThreshold
                        };
                        q.lost(now, space, pn, p.size, trigger);
                    }
                    for f in log.frames_of(p) {
                        requeue(f, streams, c, pending);
                    }
                    if let (true, Some(r)) = (p.in_flight, rate.as_mut()) {
                        r.pending_lost += 1;
                        let lost = r.sampler.lost() + r.pending_lost;
                        cc.on_packet_lost(
                            now,
                            &LostPacket {
                                tx_in_flight: p.tx.in_flight,
                                lost: lost - p.tx.lost,
                                is_app_limited: p.tx.is_app_limited,
                            },
                        );
                    }
                }
            },
        );
        self.loss_time[s] = lost.loss_time;
        if lost.packets == 0 {
            return;
        }
        self.stats.packets_lost += lost.packets;
        self.in_flight = self.in_flight.saturating_sub(lost.bytes);
        self.elicit_out[s] = self.elicit_out[s].saturating_sub(lost.ack_eliciting);
        // As quinn: every batch that lost in-flight (ack-eliciting or padded) packets is a
        // congestion event for the statistics and goes to the controller, which itself
        // reduces at most once per recovery period. Lost ACK-only packets carry no penalty.
        if let (Some(newest), true) = (lost.newest_sent, lost.bytes > 0) {
            self.stats.congestion_events += 1;
            self.stats.first_congestion.get_or_insert(now);
            let before = (self.cc.window(), self.cc.ssthresh());
            match self.rate.as_mut() {
                None => self
                    .cc
                    .on_congestion_event(now, newest, lost.persistent, lost.bytes),
                Some(r) => {
                    // A rate-driven controller hears of a recovery period once, when it
                    // starts (Linux's ssthresh hook on entering recovery), and of persistent
                    // congestion as of a retransmission timeout, the TCP event it stands
                    // for: the window becomes what is still in flight plus one packet
                    // (tcp_enter_loss) and the Loss state lasts until a packet sent after
                    // it is acknowledged.
                    if r.recovery.is_none_or(|(start, _)| newest > start) {
                        r.recovery = Some((now, CaState::Recovery));
                        self.cc
                            .on_congestion_event(now, newest, lost.persistent, lost.bytes);
                    }
                    if lost.persistent {
                        r.recovery = Some((now, CaState::Loss));
                        let mss = u64::from(self.p.max_udp);
                        let window = (self.in_flight.div_ceil(mss) + 1) * mss;
                        self.cc.on_retransmission_timeout(now, false, window);
                    }
                }
            }
            // The controller reduces once per recovery period: a changed window or ssthresh is
            // a new period, the moment RFC 9002 Appendix B.6 (and INET) sends one packet.
            if self.p.knobs.send_one_on_loss && before != (self.cc.window(), self.cc.ssthresh()) {
                self.send_one = true;
            }
        }
        self.sent[s].trim();
    }

    // ----------------------------------------------------------------- timers

    /// The loss-detection timer: (when, space, is a loss-time timer).
    fn loss_timer(&self) -> Option<(Duration, SpaceId, bool)> {
        let mut best: Option<(Duration, SpaceId, bool)> = None;
        for sp in SpaceId::ALL {
            if let Some(t) = self.loss_time[sp as usize] {
                if best.is_none_or(|(b, ..)| t < b) {
                    best = Some((t, sp, true));
                }
            }
        }
        if best.is_some() {
            return best;
        }
        if self.side == Side::Server
            && !self.validated
            && self.amplification_room() < MIN_PACKET_ROOM
        {
            // Blocked by the amplification limit: no probe could go out.
            return None;
        }
        // In nanoseconds: this runs after every input and output.
        let backoff = 1u64 << self.pto_count.min(MAX_PTO_BACKOFF);
        let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let base = self.rtt.pto_ns.saturating_mul(backoff);
        let nothing_out = self.elicit_out.iter().all(|&n| n == 0);
        if self.side == Side::Client && !self.is_established() && nothing_out {
            // Anti-deadlock (RFC 9002 §6.2.2.1): probe even with nothing in flight.
            let since = self.last_send?;
            let sp = if self.keys[SpaceId::Handshake as usize] {
                SpaceId::Handshake
            } else {
                SpaceId::Initial
            };
            return Some((since + Duration::from_nanos(base), sp, false));
        }
        let mut best_ns: Option<(u64, SpaceId)> = None;
        for sp in SpaceId::ALL {
            let i = sp as usize;
            if self.elicit_out[i] == 0 || (sp == SpaceId::Data && !self.confirmed()) {
                continue;
            }
            let Some(last) = self.last_elicit[i] else {
                continue;
            };
            let pto = if sp == SpaceId::Data {
                base.saturating_add(ns(self.peer_max_ack_delay).saturating_mul(backoff))
            } else {
                base
            };
            let t = ns(last).saturating_add(pto);
            if best_ns.is_none_or(|(b, _)| t < b) {
                best_ns = Some((t, sp));
            }
        }
        best_ns.map(|(t, sp)| (Duration::from_nanos(t), sp, false))
    }

    /// When this endpoint next needs `on_timeout`.
    pub(crate) fn poll_timeout(&self) -> Option<Duration> {
        if let Some(t) = self.timeout_cache.get() {
            return t;
        }
        let t = self.compute_timeout();
        self.timeout_cache.set(Some(t));
        t
    }

    fn compute_timeout(&self) -> Option<Duration> {
        if self.close == Close::Done || !self.active {
            return None;
        }
        let mut t = self.loss_timer().map(|(t, ..)| t);
        for a in &self.acks {
            if let Some(d) = a.deadline {
                t = Some(t.map_or(d, |x: Duration| x.min(d)));
            }
        }
        if let Some(w) = self.pacing_wake {
            t = Some(t.map_or(w, |x: Duration| x.min(w)));
        }
        if let Some(a) = self.last_activity {
            let idle = a + IDLE_TIMEOUT;
            t = Some(t.map_or(idle, |x: Duration| x.min(idle)));
        }
        t
    }

    /// Timers due at `now`.
    pub(crate) fn on_timeout(&mut self, now: Duration) {
        self.on_timers(now);
        self.log_metrics(now);
    }

    fn on_timers(&mut self, now: Duration) {
        self.timeout_cache.set(None);
        if self.close == Close::Done {
            return;
        }
        if self.last_activity.is_some_and(|a| a + IDLE_TIMEOUT <= now) {
            // RFC 9000 §10.1: silently closed; quinn reports "timed out".
            self.close = Close::Done;
            self.timed_out = true;
            return;
        }
        for a in &mut self.acks {
            a.on_timer(now);
        }
        if self.pacing_wake.is_some_and(|w| w <= now) {
            self.pacing_wake = None;
        }
        let Some((t, space, is_loss)) = self.loss_timer() else {
            return;
        };
        if t > now {
            return;
        }
        if is_loss {
            self.detect_losses(space, now);
            if let Some(r) = self.rate.as_mut() {
                // Outside an ACK frame the sampler counts its losses at once.
                r.sampler.on_lost(std::mem::take(&mut r.pending_lost));
            }
            return;
        }
        self.pto_count += 1;
        let s = space as usize;
        self.probes[s] = 2;
        // Probe content: new data if there is any, else the oldest outstanding frames again.
        let has_new = match space {
            SpaceId::Data => self.streams.has_sendable(),
            _ => self.crypto[s].has_data(),
        };
        if !has_new {
            if let Some(pn) = self.sent[s].oldest_ack_eliciting() {
                let Endpoint {
                    sent,
                    streams,
                    crypto,
                    pending,
                    ..
                } = self;
                if let Some(p) = sent[s].get(pn) {
                    for f in sent[s].frames_of(p) {
                        requeue(f, streams, &mut crypto[s], pending);
                    }
                }
            }
        }
    }

    // ----------------------------------------------------------------- sending

    fn amplification_room(&self) -> u32 {
        if self.validated {
            return u32::MAX;
        }
        let allowed = self
            .recv_bytes
            .saturating_mul(3)
            .saturating_sub(self.sent_bytes);
        u32::try_from(allowed).unwrap_or(u32::MAX)
    }

    /// Records why the sender stopped (time accounting); `now` ends the previous state.
    fn set_limit(&mut self, l: Limit, now: Duration) {
        if let Some((prev, since)) = self.limit {
            if prev == l {
                return;
            }
            self.stats.limited_s[prev as usize] += now.saturating_sub(since).as_secs_f64();
        }
        self.limit = Some((l, now));
    }

    /// Closes the time accounting at `now`.
    pub(crate) fn limited_until(&self, now: Duration) -> [f64; 3] {
        let mut l = self.stats.limited_s;
        if let Some((prev, since)) = self.limit {
            if self.close != Close::Done {
                l[prev as usize] += now.saturating_sub(since).as_secs_f64();
            }
        }
        l
    }

    /// Ends the time accounting (connection over).
    pub(crate) fn stop_accounting(&mut self, now: Duration) {
        self.stats.limited_s = self.limited_until(now);
        self.limit = None;
    }

    /// The next datagram, if any.
    pub(crate) fn poll_transmit(&mut self, now: Duration, to: Side) -> Option<Transmit> {
        let wake = self.pacing_wake;
        let t = self.poll_transmit_inner(now, to);
        // Timers change only when something was sent or the pacer set a new wake-up.
        if t.is_some() || self.pacing_wake != wake {
            self.timeout_cache.set(None);
        }
        if let (Some(q), Some(t)) = (&mut self.qlog, &t) {
            q.sent(now, &t.bytes);
            self.log_metrics(now);
        }
        t
    }

    fn poll_transmit_inner(&mut self, now: Duration, to: Side) -> Option<Transmit> {
        if self.close == Close::Done || !self.active {
            return None;
        }
        let max = self.p.max_udp;
        let budget = max.min(self.amplification_room());
        let mut w: Option<Writer> = None;
        let mut built: [Option<Built>; 3] = [None; 3];
        let mut used = 0u32;
        let mut blocked_by = None;
        for sp in SpaceId::ALL {
            let i = sp as usize;
            if !self.keys[i] || self.discarded[i] {
                continue;
            }
            let room = budget.saturating_sub(used);
            if room < MIN_PACKET_ROOM {
                break;
            }
            // A client Initial must be padded to the full datagram: it needs the whole budget.
            if sp == SpaceId::Initial && self.side == Side::Client && used > 0 {
                continue;
            }
            match self.build_packet(sp, now, room, &mut w) {
                Ok(b) => {
                    used += b.size;
                    built[i] = Some(b);
                }
                Err(l) => blocked_by = blocked_by.or(l),
            }
        }
        let Some(mut w) = w else {
            // `send_one_on_loss` is an opportunity of the moment recovery starts (RFC 9002's
            // MaybeSendOnePacket, INET's allowOnePacket is used up by the next send attempt):
            // with nothing to send now it is not kept for later.
            self.send_one = false;
            if self.data_sender {
                let l = blocked_by.unwrap_or(if self.streams.flow_blocked() {
                    Limit::FlowControl
                } else {
                    Limit::App
                });
                self.app_limited = l != Limit::Cwnd;
                if let (Limit::App, Some(r)) = (l, self.rate.as_mut()) {
                    // Nothing waits: lost frames are queued again as soon as their packet is
                    // declared lost, so none awaits repair either. A flow-control limit is
                    // not application-limited, as a receive-window limit is not in Linux.
                    let mss = u64::from(max);
                    r.sampler.check_app_limited(
                        0,
                        mss,
                        self.in_flight.div_ceil(mss),
                        self.cc.window() / mss,
                        false,
                    );
                }
                self.set_limit(l, now);
            }
            return None;
        };
        // Padding (RFC 9000 §14.1; quinn pads to the full datagram).
        let has_initial = built[0].is_some();
        let pad = (self.side == Side::Client && has_initial)
            || (self.side == Side::Server && built[0].is_some_and(|b| b.elicit));
        if pad {
            let target = max.max(MIN_INITIAL_DATAGRAM).min(budget.max(used));
            if target > used {
                let extra = target - used;
                if let Some(last) = built.iter_mut().rev().flatten().next() {
                    w.frame(&Frame::Padding(u16::try_from(extra).unwrap_or(u16::MAX)));
                    last.size += extra;
                    w.end_packet(last.size);
                    if let Some(rec) = self.sent[last.space as usize].get_mut(last.pn) {
                        rec.size = last.size;
                        rec.in_flight = true;
                    }
                }
                used = target;
            }
        }
        for b in built.iter().flatten() {
            let i = b.space as usize;
            self.stats.packets_sent += 1;
            let in_flight = self.sent[i].get(b.pn).is_some_and(|r| r.in_flight);
            if in_flight {
                if let Some(r) = self.rate.as_mut() {
                    let mss = u64::from(max);
                    let nothing_out = self.in_flight == 0;
                    if nothing_out {
                        self.cc.on_tx_start(now, r.sampler.app_limited());
                    }
                    let tx = r
                        .sampler
                        .on_sent(now, nothing_out, self.in_flight.div_ceil(mss) + 1);
                    if let Some(rec) = self.sent[i].get_mut(b.pn) {
                        rec.tx = tx;
                    }
                    if b.space == SpaceId::Data && self.p.knobs.pacing {
                        if let Some(rate) = self.cc.pacing_rate().filter(|&r| r > 0) {
                            // The next packet leaves no earlier than this one's length at
                            // the rate after this one (RFC 9002 §7.7's pacing).
                            let len_ns = u64::from(b.size).saturating_mul(1_000_000_000) / rate;
                            r.next_departure =
                                r.next_departure.max(now) + Duration::from_nanos(len_ns);
                        }
                    }
                }
                self.in_flight += u64::from(b.size);
                self.cc.on_sent(now, u64::from(b.size), b.pn);
                if self.p.knobs.pacing {
                    self.pacer.on_transmit(b.size);
                }
            }
            if b.elicit {
                if !self.elicited_since_recv {
                    // quinn restarts the idle timer on the first ack-eliciting packet sent
                    // after a receipt (RFC 9000 §10.1).
                    self.elicited_since_recv = true;
                    self.last_activity = Some(now);
                }
                self.elicit_out[i] += 1;
                self.last_elicit[i] = Some(now);
                self.probes[i] = self.probes[i].saturating_sub(1);
                if b.space == SpaceId::Data {
                    self.send_one = false;
                }
            }
            if b.ibit {
                self.stats.ibit_sent += 1;
            }
        }
        self.last_send = Some(now);
        self.sent_bytes += u64::from(used);
        if self.side == Side::Client && built[1].is_some() {
            // RFC 9001 §4.9.1: a client drops Initial keys once it sends a Handshake packet.
            self.discard(SpaceId::Initial);
        }
        if self.close == Close::Pending && built[2].is_some() {
            self.close = Close::Done;
        }
        Some(Transmit {
            bytes: w.finish(used),
            wire_len: used + IPV4_UDP_OVERHEAD,
            payload_len: used,
            header_len: IPV4_UDP_OVERHEAD,
            to,
            ecn: self.ecn.codepoint(),
        })
    }

    /// Builds one packet of `space` into `w` within `room` bytes, or says why not (`Some`
    /// limit when data waited).
    fn build_packet(
        &mut self,
        space: SpaceId,
        now: Duration,
        room: u32,
        w: &mut Option<Writer>,
    ) -> Result<Built, Option<Limit>> {
        let s = space as usize;
        let max = self.p.max_udp;
        let probe = self.probes[s] > 0;
        let closing = space == SpaceId::Data && self.close == Close::Pending;
        let ack_must = self.acks[s].must_send() || (closing && !self.acks[s].is_empty());
        let data = space == SpaceId::Data;
        if data && self.can_send_streams() {
            let Endpoint {
                streams, pending, ..
            } = self;
            streams.newly_blocked(
                |l| pending.data_blocked = Some(l),
                |i, l| pending.stream_blocked.push_back((i, l)),
            );
        }
        let stream_ready = data && self.can_send_streams() && self.streams.has_sendable();
        let fc_due = data && self.fc_due();
        let ctl = self.crypto[s].has_data()
            || (data
                && (self.pending.handshake_done
                    || self.pending.new_cids
                    || self.pending.ack_frequency
                    || self.pending.data_blocked.is_some()
                    || !self.pending.stream_blocked.is_empty()
                    || (fc_due && self.fc.immediate)));
        let want = ctl || stream_ready || probe || closing;
        let mut limit = None;
        let mut elicit_ok = want;
        if want && !closing {
            // Probes ignore the congestion window (RFC 9002 §7.5) but, as in quinn, not the
            // pacer.
            let one = data && self.send_one;
            if !probe && !one && self.in_flight + u64::from(max) > self.cc.window() {
                elicit_ok = false;
                limit = Some(Limit::Cwnd);
            } else if data && self.p.knobs.pacing {
                let wait = match self.rate_pacing() {
                    Some(at) => (at > now).then_some(at),
                    None => {
                        let wnd = self.pacing_window();
                        self.pacer
                            .delay(self.rtt.smoothed, u64::from(max), max, wnd, now)
                    }
                };
                if let Some(t) = wait {
                    self.pacing_wake = Some(t);
                    elicit_ok = false;
                    limit = Some(Limit::Cwnd);
                }
            }
        }
        if !(ack_must || elicit_ok) {
            return Err(limit.or(if data && self.streams.flow_blocked() {
                Some(Limit::FlowControl)
            } else {
                None
            }));
        }
        let kind = match space {
            SpaceId::Initial => PacketKind::Initial,
            SpaceId::Handshake => PacketKind::Handshake,
            SpaceId::Data if self.side == Side::Client && !self.is_established() => {
                PacketKind::ZeroRtt
            }
            SpaceId::Data => PacketKind::OneRtt,
        };
        let pn = self.sent[s].begin();
        let pnl = pn_len(pn, self.largest_acked[s]);
        let header_max = kind.header_len(pnl);
        let Some(mut left) = room.checked_sub(header_max + AEAD_TAG) else {
            return Err(limit);
        };
        let conn = self.conn;
        let writer = w;
        let mut pkt = Pkt::default();
        let mut put = |w: &mut Option<Writer>, pkt: &mut Pkt, f: &Frame, left: &mut u32| {
            let w = w.get_or_insert_with(|| Writer::new(conn));
            if !pkt.started {
                pkt.started = true;
                w.packet(kind, false, pn);
            }
            let n = f.wire_len();
            w.frame(f);
            pkt.len += n;
            pkt.frames += 1;
            // A full frame count closes the packet like a full payload does.
            *left = if pkt.frames >= MAX_FRAMES {
                0
            } else {
                left.saturating_sub(n)
            };
            pkt.elicit |= f.ack_eliciting();
        };
        // ACK.
        // Bundling an ACK of only non-ack-eliciting packets: always in Initial/Handshake and
        // with `bundle_acks`; otherwise as quinn, at most once per RTT + max_ack_delay.
        let bundle = space != SpaceId::Data
            || self.policy.bundle
            || self.next_bundled_ack.is_some_and(|t| t <= now);
        if ack_must || (elicit_ok && self.acks[s].may_bundle(bundle)) {
            if let Some(mut a) = self.acks[s].take_ack(now) {
                a.ecn = self.ecn.ack_counts(s);
                if a.wire_len() <= left {
                    pkt.ack_largest = Some(a.largest);
                    put(writer, &mut pkt, &Frame::Ack(a), &mut left);
                    self.stats.ack_frames_sent += 1;
                    if data {
                        self.next_bundled_ack =
                            Some(now + self.rtt.smoothed + self.peer_max_ack_delay + GRANULARITY);
                    }
                    if data && self.fc.update == FcUpdate::EveryAck {
                        self.every_ack_credit(writer, &mut pkt, &mut left, &mut put);
                    }
                }
            }
        }
        if elicit_ok {
            if closing {
                put(writer, &mut pkt, &Frame::Close(0), &mut left);
            }
            // CRYPTO: repeats first.
            loop {
                let c = &mut self.crypto[s];
                let (off, end, repeat) = match c.retx.front() {
                    Some(&(a, b)) => (a, b, true),
                    None if c.sent < c.queued => (c.sent, c.queued, false),
                    None => break,
                };
                let fixed = 1 + super::wire::varint_len(u64::from(off)) + 2;
                if left <= fixed {
                    break;
                }
                let n = (end - off).min(left - fixed);
                if repeat {
                    if off + n >= end {
                        c.retx.pop_front();
                    } else if let Some(fr) = c.retx.front_mut() {
                        fr.0 = off + n;
                    }
                } else {
                    c.sent += n;
                }
                self.sent[s].push_frame(SentFrame::Crypto {
                    offset: off,
                    len: n,
                });
                put(
                    writer,
                    &mut pkt,
                    &Frame::Crypto {
                        offset: off,
                        len: n,
                    },
                    &mut left,
                );
            }
            if data {
                self.control_frames(writer, &mut pkt, &mut left, &mut put, fc_due);
            }
        }
        // Stream data.
        if elicit_ok && stream_ready && !closing {
            // quinn adds another STREAM frame only while a maximal header (25 bytes) fits.
            while left > STREAM_SIZE_BOUND {
                let Some(c) = self.streams.next_chunk(left, stream_chunk) else {
                    break;
                };
                self.sent[s].push_frame(SentFrame::Stream {
                    stream: c.stream,
                    offset: c.offset,
                    len: c.len,
                    fin: c.fin,
                });
                pkt.new_data |= c.new;
                put(
                    writer,
                    &mut pkt,
                    &Frame::Stream {
                        id: c.id,
                        offset: c.offset,
                        len: c.len,
                        fin: c.fin,
                        length_field: c.length_field,
                    },
                    &mut left,
                );
            }
        }
        if probe && !pkt.elicit && elicit_ok && left > 0 {
            put(writer, &mut pkt, &Frame::Ping, &mut left);
        }
        if !pkt.started {
            return Err(limit);
        }
        // Piggy-backed credit (threshold policy without `fc_immediate`).
        if data && fc_due && !self.fc.immediate && left > 0 {
            self.credit_frames(writer, &mut pkt, &mut left, &mut put, false);
        }
        let payload = pkt.len + AEAD_TAG;
        let size = kind.header_len(pnl) + payload;
        let Some(writer) = writer.as_mut() else {
            return Err(limit);
        };
        writer.end_packet(size);
        let mut ibit = false;
        if self.p.knobs.ibit && pkt.new_data && self.data_sender {
            let next_cwnd_blocked =
                self.in_flight + u64::from(size) + u64::from(max) > self.cc.window();
            let more = self.streams.unsent > 0 || self.streams.send.iter().any(|s| !s.fin());
            if more && (next_cwnd_blocked || self.streams.flow_blocked()) {
                ibit = true;
                writer.set_ibit();
            }
        }
        let ack_largest = pkt.ack_largest.unwrap_or(u64::MAX);
        self.sent[s].commit(now, size, pkt.elicit, pkt.elicit, ack_largest);
        if let Some(rec) = self.sent[s].get_mut(pn) {
            rec.ect = self.ecn.sending();
        }
        Ok(Built {
            space,
            pn,
            size,
            elicit: pkt.elicit,
            ibit,
        })
    }

    /// A threshold update is due somewhere.
    fn fc_due(&self) -> bool {
        self.streams.conn_recv.due
            || self
                .streams
                .recv
                .iter()
                .any(|r| r.window.due && !r.finished)
    }

    fn control_frames(
        &mut self,
        writer: &mut Option<Writer>,
        pkt: &mut Pkt,
        left: &mut u32,
        put: &mut impl FnMut(&mut Option<Writer>, &mut Pkt, &Frame, &mut u32),
        fc_due: bool,
    ) {
        let af_delay = self.desired_ack_delay();
        let log = &mut self.sent[SpaceId::Data as usize];
        if self.pending.handshake_done && *left > 1 {
            self.pending.handshake_done = false;
            log.push_frame(SentFrame::HandshakeDone);
            put(writer, pkt, &Frame::HandshakeDone, left);
        }
        if self.pending.new_cids {
            let f = Frame::NewConnectionIds(NEW_CIDS);
            if f.wire_len() < *left {
                self.pending.new_cids = false;
                log.push_frame(SentFrame::NewConnectionIds);
                put(writer, pkt, &f, left);
            }
        }
        if self.pending.ack_frequency {
            let k = &self.p.knobs;
            let seq = self.ack_frequency_sent_seq.map_or(0, |q| q + 1);
            let delay = af_delay;
            let f = Frame::AckFrequency {
                seq,
                threshold: k
                    .common
                    .ack_ratio
                    .unwrap_or(k.receiver_ack_ratio)
                    .saturating_sub(1),
                max_delay_us: u64::try_from(delay.as_micros()).unwrap_or(u64::MAX),
                // quinn requests a reordering threshold of 2 (its default); without immediate
                // ACKs on reordering, none.
                reorder: if k.ack_on_reorder { 2 } else { 0 },
            };
            if f.wire_len() < *left {
                self.pending.ack_frequency = false;
                self.ack_frequency_sent_seq = Some(seq);
                self.ack_frequency_requested = Some(delay);
                // The PTO allows for the larger of the old and the new delay until the peer
                // has the frame (quinn: max of the current and the in-flight request).
                self.peer_max_ack_delay = self.peer_max_ack_delay.max(delay);
                self.stats.ack_frequency_sent += 1;
                log.push_frame(SentFrame::AckFrequency);
                put(writer, pkt, &f, left);
            }
        }
        if let Some(limit) = self.pending.data_blocked {
            let f = Frame::DataBlocked(limit);
            if f.wire_len() < *left {
                self.pending.data_blocked = None;
                self.stats.data_blocked_sent += 1;
                log.push_frame(SentFrame::DataBlocked(limit));
                put(writer, pkt, &f, left);
            }
        }
        while let Some(&(i, limit)) = self.pending.stream_blocked.front() {
            let Some(id) = self.streams.send.get(i as usize).map(|s| s.id) else {
                self.pending.stream_blocked.pop_front();
                continue;
            };
            let f = Frame::StreamDataBlocked { id, limit };
            if f.wire_len() >= *left {
                break;
            }
            self.pending.stream_blocked.pop_front();
            self.stats.stream_data_blocked_sent += 1;
            self.sent[SpaceId::Data as usize].push_frame(SentFrame::StreamDataBlocked(i, limit));
            put(writer, pkt, &f, left);
        }
        if fc_due && self.fc.immediate {
            self.credit_frames(writer, pkt, left, put, false);
        }
    }

    /// MAX_DATA / MAX_STREAM_DATA for windows that are due (`all`: every window that can
    /// advance, for `every-ack`).
    fn credit_frames(
        &mut self,
        writer: &mut Option<Writer>,
        pkt: &mut Pkt,
        left: &mut u32,
        put: &mut impl FnMut(&mut Option<Writer>, &mut Pkt, &Frame, &mut u32),
        all: bool,
    ) {
        let log = &mut self.sent[SpaceId::Data as usize];
        let c = &mut self.streams.conn_recv;
        if (c.due || (all && c.can_advance())) && *left > 9 {
            let v = c.take();
            self.stats.max_data_sent += 1;
            log.push_frame(SentFrame::MaxData);
            put(writer, pkt, &Frame::MaxData(v), left);
        }
        for (i, r) in self.streams.recv.iter_mut().enumerate() {
            if r.finished || !(r.window.due || (all && r.window.can_advance())) {
                continue;
            }
            if *left < 18 {
                break;
            }
            let v = r.window.take();
            self.stats.max_stream_data_sent += 1;
            log.push_frame(SentFrame::MaxStreamData(i as u32));
            put(
                writer,
                pkt,
                &Frame::MaxStreamData { id: r.id, max: v },
                left,
            );
        }
    }

    fn every_ack_credit(
        &mut self,
        writer: &mut Option<Writer>,
        pkt: &mut Pkt,
        left: &mut u32,
        put: &mut impl FnMut(&mut Option<Writer>, &mut Pkt, &Frame, &mut u32),
    ) {
        self.credit_frames(writer, pkt, left, put, true);
    }
}

impl AckState {
    /// Already received (or older than what is remembered).
    pub(crate) fn is_duplicate(&self, pn: u64) -> bool {
        self.seen(pn)
    }
}
