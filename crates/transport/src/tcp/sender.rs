//! The sending half of a TCP endpoint: what to send next (RFC 6675 NextSeg, then new data
//! within min(cwnd, peer window, send buffer)), ACK processing (RTT samples, controller
//! callbacks), loss detection (SACK scoreboard per RFC 6675, or three duplicate ACKs with
//! NewReno partial-ACK recovery per RFC 6582), the retransmission timer (RFC 6298) and the
//! persist timer (RFC 9293 §3.8.6.1): while the peer's window is zero and nothing is in flight,
//! zero-window probes go out with the RTO's backoff. Probes are Linux's (tcp_xmit_probe_skb):
//! a bare ACK one byte below `una`, which the peer must answer with its window; they are not
//! data, so they are neither losses nor a congestion signal.
//!
//! SACK reneging (a receiver dropping data it SACKed; Linux may under memory pressure, the
//! model's receiver never does) is handled like Linux: a cumulative ACK that stops at a SACKed
//! segment arms a short timeout, and that timeout forgets every SACK mark, since SACKed
//! segments are otherwise never resent.
//!
//! The congestion controller is the shared `congestion` crate; the loss-recovery machinery around it is
//! Linux's (6.1 defaults):
//! - **RACK-TLP** (RFC 8985; knob `rack`): a segment is lost once a segment sent after it has
//!   been delivered and `rack.rtt + reo_wnd` has passed since it was sent; reo_wnd is
//!   min_rtt / 4 (at most SRTT), or 0 once three segments are SACKed or in recovery while no
//!   reordering has been seen (tcp_rack_reo_wnd). Segments not yet due arm the reordering
//!   timer (+ 2 ticks, as Linux). A tail loss probe fires 2·SRTT (+ 8 ms, or + the minimum RTO
//!   with one segment out) after the last transmission when no recovery is running: one new
//!   segment if the windows allow one (cwnd ignored), else the last segment again; one probe
//!   per episode (tlp_high_seq). A probe retransmission that repairs a loss on its own costs
//!   one window reduction (tcp_process_tlp_ack without D-SACK). Without `rack`, RFC 6675's
//!   DupThresh rule marks losses and no probe is sent.
//! - **PRR** (RFC 6937 as tcp_cwnd_reduction; knob `recovery`): in fast recovery the window is
//!   `pipe + sndcnt` per ACK, in segments, proportional to what was delivered while pipe is
//!   above ssthresh and slow-start-bounded below it; when recovery ends the controller's window
//!   (= ssthresh) takes over. With `rfc6675` the controller's window applies at once. The
//!   controller does not grow during recovery (Linux calls cong_avoid only outside it).
//! - **RTO** (tcp_enter_loss): the first timeout outside recovery sets a new ssthresh; the
//!   window becomes the segments still in flight + 1; with RACK only the head and segments
//!   sent more than one RACK RTT ago are marked lost (tcp_timeout_mark_lost). Retransmitting
//!   the head restarts the timer (tcp_xmit_retransmit_queue), so a slow retransmission round
//!   does not fire a spurious timeout. Spurious-timeout undo (F-RTO, D-SACK, Eifel) is not
//!   modelled.
//! - **Pacing** (Linux's internal pacing, `tcp_update_skb_after_send` / `tcp_pacing_check`,
//!   which paces when no fq qdisc does): while the controller gives a pacing rate, a data
//!   segment (new or retransmitted) leaves no earlier than the departure time the previous
//!   one set: that one's departure plus its payload length at the rate, less up to half of
//!   it as credit for time the sender sat idle past its slot. The first nine data segments
//!   leave unpaced (as Linux: paced once ten data segments have gone out). Pure ACKs are
//!   never held back.
//! - **Delivery-rate sampling** (the shared `rate` module, Linux's `tcp_rate.c`): every transmission takes a
//!   snapshot, every ACK that finds data outstanding makes a sample the controller gets
//!   after the loss state machine ran (Linux's `cong_control` order).

use std::collections::VecDeque;
use std::time::Duration;

use congestion::{CaState, CongestionController, LostPacket};

use super::knobs::LossRecovery;
use super::rtt::RttEstimator;
use super::scoreboard::{Delivered, Losses, RackState, Scoreboard, SentSeg, DUP_THRESH};
use super::segment::SEQ_LIMIT;
use super::Params;
use crate::rate::{AckContext, AckSample, DeliveredTx, RateSampler};

/// Shortest wait before a timeout repairs SACK reneging (Linux: 10 ms).
const RENEGING_DELAY: Duration = Duration::from_millis(10);
/// Linux's TCP_TIMEOUT_MIN (2 ticks at HZ = 250): added to the reordering and probe timers.
const TIMEOUT_MIN: Duration = Duration::from_millis(8);
/// Linux's TCP_TIMEOUT_INIT: the probe timeout before any RTT sample.
const TIMEOUT_INIT: Duration = Duration::from_secs(1);

/// What the retransmission timer slot is running (Linux's icsk_pending: one timer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TimerKind {
    /// Retransmission timeout (or reneging repair).
    Rto,
    /// RACK's reordering timer.
    Reorder,
    /// Tail loss probe.
    Probe,
}

/// The next segment the sender wants on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Outgoing {
    /// First sequence number.
    pub seq: u64,
    /// Data bytes.
    pub len: u32,
    /// Carries the FIN.
    pub fin: bool,
    /// A retransmission.
    pub retransmission: bool,
}

/// The parts of an incoming segment the sender uses.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AckInfo<'a> {
    /// Cumulative ACK.
    pub ack: u64,
    /// Window in bytes from `ack`.
    pub window: u64,
    /// SACK blocks.
    pub sacks: &'a [(u64, u64)],
    /// Time since this end sent the TSval the ACK echoes, in whole ticks of its timestamps
    /// clock (with timestamps on).
    pub ts_age: Option<Duration>,
    /// Counts as a duplicate ACK if it does not advance (no data, no SYN/FIN).
    pub pure: bool,
    /// ECN-Echo on a connection that negotiated ECN: the receiver saw a CE mark.
    pub ece: bool,
}

/// Counters of one sender.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SenderStats {
    /// Segments with data sent, retransmissions included.
    pub data_segments: u64,
    /// Retransmitted segments.
    pub retransmissions: u64,
    /// Fast-recovery episodes plus retransmission timeouts (the first for each `una`).
    pub congestion_events: u64,
    /// Time of the first congestion event.
    pub first_congestion: Option<Duration>,
    /// Zero-window probes sent.
    pub probes: u64,
    /// Tail loss probes sent.
    pub tail_loss_probes: u64,
    /// Retransmission timeouts (backoffs included).
    pub timeouts: u64,
    /// Window reductions in answer to ECN-Echo (Linux's CWR state entered).
    pub ecn_reductions: u64,
}

/// Sender state.
#[derive(Debug)]
pub(crate) struct Sender {
    mss: u32,
    sack: bool,
    send_buffer: u64,
    max_backoffs: u32,
    una: u64,
    nxt: u64,
    /// Sequence number after the last byte the application wrote.
    stream_end: u64,
    /// Ends of writes that leave as segments of their own (see [`Sender::write`]).
    write_ends: VecDeque<u64>,
    fin_queued: bool,
    /// Right edge of the peer's receive window.
    peer_edge: u64,
    board: Scoreboard,
    cc: Box<dyn CongestionController>,
    rtt: RttEstimator,
    pn: u64,
    /// In fast recovery until `una` reaches this (RFC 6675 RecoveryPoint).
    recovery: Option<u64>,
    /// ECN was negotiated: ECE on an ACK asks for a window reduction.
    ecn: bool,
    /// In Linux's CWR state (a reduction in answer to ECE, no retransmission) until `una`
    /// passes this (high_seq).
    cwr: Option<u64>,
    /// A reduction started and the next new data segment must carry CWR (TCP_ECN_QUEUE_CWR).
    cwr_queued: bool,
    /// RFC 6582 `recover`: no new fast retransmit until `una` passes it.
    recover: u64,
    /// After a timeout, retransmissions go back to `una` until it reaches this (Linux's
    /// Loss state); no fast recovery meanwhile.
    loss_until: u64,
    /// Duplicate ACKs (without SACK; each one stands for a segment that left the network).
    dupacks: u64,
    rto_deadline: Option<Duration>,
    backoff: u32,
    /// Persist timer: runs only while data waits for a zero window with nothing in flight.
    persist_deadline: Option<Duration>,
    persist_backoff: u32,
    /// Probes sent since the peer last answered anything.
    probes_unanswered: u32,
    probe_pending: bool,
    /// The last send attempt stopped because of the congestion window.
    cwnd_limited: bool,
    timer_kind: TimerKind,
    /// RACK-TLP on (and SACK in use).
    rack: bool,
    /// PRR in fast recovery.
    prr: bool,
    /// RACK's most recently sent delivered segment; `None` before the first delivery.
    rack_state: Option<RackState>,
    /// Reordering observed (a segment never retransmitted delivered below a SACKed one).
    reord_seen: bool,
    /// Highest SACKed sequence number seen (for reordering detection).
    highest_sacked: u64,
    /// PRR: window when recovery started, segments delivered and sent since.
    prior_cwnd: u64,
    prr_delivered: u64,
    prr_out: u64,
    /// PRR's window for the current ACK (bytes), while in fast recovery.
    prr_cwnd: Option<u64>,
    /// A tail loss probe is due.
    tlp_pending: bool,
    /// snd_nxt when the outstanding probe went out.
    tlp_high_seq: Option<u64>,
    /// The outstanding probe was a retransmission.
    tlp_retrans: bool,
    /// Reused buffer of newly delivered segments.
    delivered: Vec<Delivered>,
    /// Delivery-rate sampler.
    rate: RateSampler,
    /// Earliest departure time of the next data segment (Linux's tcp_wstamp_ns).
    wstamp: Duration,
    /// The pacing timer: a data segment waits for `wstamp`.
    pace_wake: Option<Duration>,
    /// Segments newly marked lost while processing the current ACK.
    ack_lost: u64,
    stats: SenderStats,
}

impl Sender {
    /// A sender whose first data byte has sequence number 1 (the SYN took 0).
    pub(crate) fn new(p: &Params, now: Duration, seed: u64) -> Self {
        Sender {
            mss: p.mss,
            sack: p.knobs.sack,
            send_buffer: p.knobs.send_buffer,
            max_backoffs: p.max_backoffs,
            una: 1,
            nxt: 1,
            stream_end: 1,
            write_ends: VecDeque::new(),
            fin_queued: false,
            peer_edge: 1,
            board: Scoreboard::default(),
            cc: congestion::build_seeded(&p.controller, u64::from(p.mss), now, seed),
            rtt: RttEstimator::new(p.knobs.initial_rto, p.knobs.min_rto),
            pn: 0,
            recovery: None,
            ecn: false,
            cwr: None,
            cwr_queued: false,
            recover: 0,
            loss_until: 0,
            dupacks: 0,
            rto_deadline: None,
            backoff: 0,
            persist_deadline: None,
            persist_backoff: 0,
            probes_unanswered: 0,
            probe_pending: false,
            cwnd_limited: false,
            timer_kind: TimerKind::Rto,
            rack: p.knobs.rack && p.knobs.sack,
            prr: p.knobs.recovery == LossRecovery::Prr && p.knobs.sack,
            rack_state: None,
            reord_seen: false,
            highest_sacked: 0,
            prior_cwnd: 0,
            prr_delivered: 0,
            prr_out: 0,
            prr_cwnd: None,
            tlp_pending: false,
            tlp_high_seq: None,
            tlp_retrans: false,
            delivered: Vec::new(),
            // Linux counts the SYN (or SYN-ACK) as delivered by the end of the handshake.
            rate: RateSampler::new(1),
            wstamp: Duration::ZERO,
            pace_wake: None,
            ack_lost: 0,
            stats: SenderStats::default(),
        }
    }

    /// Counters so far.
    pub(crate) fn stats(&self) -> SenderStats {
        self.stats
    }

    /// ECN was negotiated on the handshake.
    pub(crate) fn enable_ecn(&mut self) {
        self.ecn = true;
    }

    /// Whether the next new data segment must carry CWR; the flag is consumed.
    pub(crate) fn take_cwr(&mut self) -> bool {
        std::mem::take(&mut self.cwr_queued)
    }

    /// In a window reduction: fast recovery or the CWR state (Linux's tcp_in_cwnd_reduction).
    fn reducing(&self) -> bool {
        self.recovery.is_some() || self.cwr.is_some()
    }

    /// tcp_init_cwnd_reduction: PRR starts from the window before the reduction, an
    /// outstanding tail loss probe is forgotten, and CWR is queued for the peer.
    fn start_reduction(&mut self) {
        self.prior_cwnd = self.cc.window();
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.tlp_high_seq = None;
        self.cwr_queued = self.ecn;
    }

    /// Congestion window in bytes (PRR's during fast recovery).
    pub(crate) fn cwnd(&self) -> u64 {
        self.prr_cwnd.unwrap_or_else(|| self.cc.window())
    }

    /// RFC 6675 pipe.
    pub(crate) fn in_flight(&self) -> u64 {
        self.board.pipe()
    }

    /// Smoothed RTT.
    pub(crate) fn srtt(&self) -> Duration {
        self.rtt.smoothed()
    }

    /// Handshake RTT sample (SYN → SYN-ACK, or SYN-ACK → ACK).
    pub(crate) fn on_handshake_rtt(&mut self, sample: Duration) {
        self.rtt.on_sample(sample);
    }

    /// The peer's window from its SYN (unscaled, relative to our first data byte).
    pub(crate) fn set_peer_window(&mut self, window: u64) {
        self.peer_edge = self.una + window;
    }

    /// The application appends `n` bytes (saturating: a bulk sender writes "infinitely").
    /// Linux's tcp_sendmsg first checks whether the connection was application-limited.
    ///
    /// Our endpoints write with `TCP_NODELAY`, so Linux pushes each write out at once when
    /// the windows let all of it go, and the next write starts a new segment: the small
    /// TLS and HTTP/2 messages after a handshake leave as small segments, whose RTT samples
    /// set CUBIC's HyStart baseline without a full segment's serialisation time. Data
    /// written while earlier data has to wait joins it instead (tcp_sendmsg fills the
    /// unsent tail). A paced sender past its first ten segments is taken as waiting.
    pub(crate) fn write(&mut self, n: u64) {
        if !self.fin_queued {
            let unsent = self.stream_end.saturating_sub(self.nxt);
            if unsent > 0 && self.would_leave_now(unsent) {
                self.write_ends.push_back(self.stream_end);
            }
            let mss = u64::from(self.mss);
            self.rate.check_app_limited(
                self.stream_end.saturating_sub(self.nxt),
                mss,
                self.board.pipe().div_ceil(mss),
                self.cwnd() / mss,
                self.board.has_lost_unretransmitted(),
            );
            self.stream_end = self.stream_end.saturating_add(n).min(SEQ_LIMIT / 2);
        }
    }

    /// All `unsent` bytes at the end of the stream would leave now: the congestion window,
    /// the peer's window and the send buffer take them and no pacing holds them back.
    fn would_leave_now(&self, unsent: u64) -> bool {
        let paced = self.cc.pacing_rate().is_some() && self.stats.data_segments >= 10;
        !paced
            && self.pipe().saturating_add(unsent) <= self.cwnd().max(u64::from(self.mss))
            && self.stream_end <= self.peer_edge
            && self.stream_end <= self.una.saturating_add(self.send_buffer)
    }

    /// Length of the next new segment when `edge` bounds what may be sent: a full segment,
    /// or less where the window or a write that leaves on its own ends it.
    fn new_segment_len(&mut self, edge: u64) -> u64 {
        while self.write_ends.front().is_some_and(|&end| end <= self.nxt) {
            self.write_ends.pop_front();
        }
        let end = self.write_ends.front().map_or(edge, |&w| w.min(edge));
        (end - self.nxt).min(u64::from(self.mss))
    }

    /// The application closes: a FIN follows the last byte.
    pub(crate) fn close(&mut self) {
        self.fin_queued = true;
    }

    /// Next sequence number of new data.
    pub(crate) fn snd_nxt(&self) -> u64 {
        self.nxt
    }

    /// Oldest unacknowledged sequence number.
    pub(crate) fn snd_una(&self) -> u64 {
        self.una
    }

    /// Data bytes the peer has acknowledged (the SYN and a FIN are not data).
    pub(crate) fn acked_bytes(&self) -> u64 {
        self.una.min(self.stream_end).saturating_sub(1)
    }

    /// Retransmission or persist timer deadline (never both: one needs data in flight, the
    /// other none), or the pacing timer if earlier.
    pub(crate) fn timeout(&self) -> Option<Duration> {
        let t = self.rto_deadline.or(self.persist_deadline);
        match (t, self.pace_wake) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// tcp_pacing_check: a data segment must wait for its departure time; arms the pacing
    /// timer if so.
    fn paced_out(&mut self, now: Duration) -> bool {
        if self.cc.pacing_rate().is_none() || self.wstamp <= now {
            return false;
        }
        self.pace_wake = Some(self.wstamp);
        true
    }

    /// Bookkeeping of every data transmission (new, retransmitted or probe) of `len` payload
    /// bytes: the controller's transmission-start event, the departure time of the next
    /// segment (tcp_update_skb_after_send) and the rate sampler's snapshot.
    fn on_data_sent(&mut self, now: Duration, len: u32) -> crate::rate::TxState {
        if self.board.pipe() == 0 {
            self.cc.on_tx_start(now, self.rate.app_limited());
        }
        let prior = self.wstamp;
        self.wstamp = self.wstamp.max(now);
        if let Some(rate) = self.cc.pacing_rate().filter(|&r| r > 0) {
            // data_segments already counts this one: Linux paces from the tenth on.
            if self.stats.data_segments >= 10 {
                let len_ns = u64::from(len).saturating_mul(1_000_000_000) / rate;
                // Time the sender spent idle past its slot is credit, up to half a slot.
                let credit = u64::try_from((self.wstamp - prior).as_nanos()).unwrap_or(u64::MAX);
                let len_ns = len_ns - (len_ns / 2).min(credit);
                self.wstamp += Duration::from_nanos(len_ns);
            }
        }
        let in_flight = self.board.pipe().div_ceil(u64::from(self.mss)) + 1;
        self.rate.on_sent(now, self.board.is_empty(), in_flight)
    }

    /// A zero-window probe is due; taking it clears the request.
    pub(crate) fn take_probe(&mut self) -> bool {
        let due = std::mem::take(&mut self.probe_pending);
        if due {
            self.stats.probes += 1;
        }
        due
    }

    /// Arms the persist timer when new data waits for a zero window with nothing in flight
    /// (no ACK will come to reopen it otherwise), and stops it when the window opens.
    fn update_persist(&mut self, now: Duration) {
        let limit = self
            .stream_end
            .min(self.una.saturating_add(self.send_buffer));
        let closed = self.peer_edge <= self.nxt;
        if !closed {
            self.persist_deadline = None;
            self.persist_backoff = 0;
            self.probe_pending = false;
        } else if self.nxt < limit && self.board.is_empty() {
            if self.persist_deadline.is_none() {
                self.persist_deadline = Some(now + self.rtt.backed_off(self.persist_backoff));
            }
        } else {
            self.persist_deadline = None;
        }
    }

    fn pipe(&self) -> u64 {
        if self.sack {
            self.board.pipe()
        } else {
            // Linux without SACK counts each duplicate ACK as one segment that left.
            self.board
                .pipe()
                .saturating_sub(self.dupacks * u64::from(self.mss))
        }
    }

    fn next_pn(&mut self) -> u64 {
        let pn = self.pn;
        self.pn += 1;
        pn
    }

    fn arm_rto(&mut self, now: Duration) {
        if self.rto_deadline.is_none() {
            self.set_timer(TimerKind::Rto, now + self.rtt.backed_off(self.backoff));
        }
    }

    fn set_timer(&mut self, kind: TimerKind, at: Duration) {
        self.timer_kind = kind;
        self.rto_deadline = Some(at);
    }

    /// Linux's tcp_rearm_rto: the RTO from now, or, replacing a reordering or probe timer,
    /// from the head's transmission (so those timers never postpone the timeout).
    fn rearm_rto(&mut self, now: Duration) {
        if self.board.is_empty() {
            self.rto_deadline = None;
            self.timer_kind = TimerKind::Rto;
            return;
        }
        let rto = self.rtt.backed_off(self.backoff);
        let at = match (self.timer_kind, self.board.head()) {
            (TimerKind::Reorder | TimerKind::Probe, Some((_, sent)))
                if self.rto_deadline.is_some() =>
            {
                (sent + rto).max(now + Duration::from_micros(1))
            }
            _ => now + rto,
        };
        self.set_timer(TimerKind::Rto, at);
    }

    /// Linux's tcp_schedule_loss_probe: in the Open state with data out and no probe
    /// outstanding, the probe timer replaces the RTO if it fires first. `advancing_rto`: the
    /// caller is restarting the RTO from now (an ACK); otherwise the RTO runs from the head.
    fn schedule_probe(&mut self, now: Duration, advancing_rto: bool) -> bool {
        if !self.rack
            || self.board.is_empty()
            || self.recovery.is_some()
            || self.una < self.loss_until
            || self.tlp_high_seq.is_some()
            || self.timer_kind == TimerKind::Reorder && self.rto_deadline.is_some()
            || self.board.head_sacked()
        {
            return false;
        }
        let srtt = self.rtt.smoothed();
        let mut timeout = if srtt.is_zero() {
            TIMEOUT_INIT
        } else if self.board.len() == 1 {
            // A lone segment may wait for the peer's delayed-ACK timer.
            2 * srtt + self.rtt.min_rto()
        } else {
            2 * srtt + TIMEOUT_MIN
        };
        let rto = self.rtt.backed_off(self.backoff);
        let rto_left = if advancing_rto {
            rto
        } else {
            let head_sent = self.board.head().map_or(now, |(_, sent)| sent);
            (head_sent + rto).saturating_sub(now)
        };
        if !rto_left.is_zero() {
            timeout = timeout.min(rto_left);
        }
        self.set_timer(TimerKind::Probe, now + timeout);
        true
    }

    /// RACK's reordering window (tcp_rack_reo_wnd).
    fn reo_wnd(&self) -> Duration {
        if !self.reord_seen
            && (self.recovery.is_some()
                || self.una < self.loss_until
                || self.board.sacked_out() >= DUP_THRESH as u64)
        {
            return Duration::ZERO;
        }
        (self.rtt.sample().min / 4).min(self.rtt.smoothed())
    }

    /// RACK's loss detection now; arms the reordering timer for segments not yet due.
    fn rack_detect(&mut self, now: Duration) -> Losses {
        let Some(rack) = self.rack_state else {
            return Losses::default();
        };
        let reo_wnd = self.reo_wnd();
        let (losses, wait) = self.board.rack_detect_loss(&rack, reo_wnd, now);
        if let Some(wait) = wait {
            self.set_timer(TimerKind::Reorder, now + wait + TIMEOUT_MIN);
        } else if self.timer_kind == TimerKind::Reorder {
            self.rearm_rto(now);
        }
        losses
    }

    /// RACK's bookkeeping of newly delivered segments (tcp_rack_advance), and reordering
    /// detection: a segment never retransmitted delivered below one SACKed earlier.
    fn rack_advance(&mut self, delivered: &[Delivered], now: Duration) {
        let min_rtt = self.rtt.sample().min;
        for d in delivered {
            if !d.retransmitted && d.end <= self.highest_sacked {
                self.reord_seen = true;
            }
            let rtt = now.saturating_sub(d.sent);
            // An ACK of a retransmission faster than the minimum RTT acknowledges the
            // original: it says nothing about when the retransmission was delivered.
            if d.retransmitted && rtt < min_rtt {
                continue;
            }
            let newer = self
                .rack_state
                .is_none_or(|r| RackState::sent_after(d.sent, d.end, r.xmit_time, r.end_seq));
            if newer {
                self.rack_state = Some(RackState {
                    xmit_time: d.sent,
                    end_seq: d.end,
                    rtt,
                });
            }
        }
    }

    /// PRR's window for this ACK (tcp_cwnd_reduction), in whole segments.
    fn prr_update(&mut self, newly_delivered: u64, una_advanced: bool, newly_lost: bool) {
        if newly_delivered == 0 || self.prior_cwnd == 0 {
            return;
        }
        let mss = u64::from(self.mss);
        let ssthresh = self.cc.ssthresh().unwrap_or(self.prior_cwnd) / mss;
        let prior = (self.prior_cwnd / mss).max(1);
        let pipe = self.board.pipe().div_ceil(mss);
        self.prr_delivered += newly_delivered;
        let mut sndcnt = if pipe > ssthresh {
            (ssthresh * self.prr_delivered).div_ceil(prior) as i64 - self.prr_out as i64
        } else {
            let delta = ssthresh - pipe;
            let mut n =
                (self.prr_delivered as i64 - self.prr_out as i64).max(newly_delivered as i64);
            if una_advanced && !newly_lost {
                n += 1;
            }
            n.min(delta as i64)
        };
        // The fast retransmit goes out whatever the numbers say.
        if self.prr_out == 0 {
            sndcnt = sndcnt.max(1);
        }
        let sndcnt = sndcnt.max(0) as u64;
        self.prr_cwnd = Some((pipe + sndcnt) * mss);
    }

    /// Counts a transmission towards PRR's prr_out while in fast recovery.
    fn note_sent(&mut self) {
        if self.reducing() {
            self.prr_out += 1;
        }
    }

    /// The next segment to send now, if the windows allow one.
    pub(crate) fn next(&mut self, now: Duration) -> Option<Outgoing> {
        let out = self.next_segment(now);
        if out.is_none() {
            self.update_persist(now);
        }
        out
    }

    fn next_segment(&mut self, now: Duration) -> Option<Outgoing> {
        if self.tlp_pending && self.paced_out(now) {
            return None;
        }
        if std::mem::take(&mut self.tlp_pending) {
            if let Some(out) = self.loss_probe(now) {
                return Some(out);
            }
        }
        let cwnd = self.cwnd();
        let pipe = self.pipe();
        if let Some((seq, len, fin)) = self.board.next_lost() {
            let bytes = u64::from(len).max(1);
            // `pipe > 0`: an empty network always takes one segment, whatever the window.
            if pipe > 0 && pipe.saturating_add(bytes) > cwnd {
                self.cwnd_limited = true;
                return None;
            }
            if self.paced_out(now) {
                return None;
            }
            let pn = self.next_pn();
            self.stats.retransmissions += 1;
            if len > 0 {
                self.stats.data_segments += 1;
            }
            let tx = self.on_data_sent(now, len);
            self.board.retransmitted(seq, now, pn, tx);
            self.cc.on_sent(now, bytes, pn);
            self.note_sent();
            if seq == self.una && self.timer_kind != TimerKind::Reorder {
                // Linux restarts the RTO when it retransmits the head: the retransmission
                // gets a full RTO, not what was left of the head's original one.
                self.set_timer(TimerKind::Rto, now + self.rtt.backed_off(self.backoff));
            }
            self.arm_rto(now);
            return Some(Outgoing {
                seq,
                len,
                fin,
                retransmission: true,
            });
        }
        let edge = self
            .stream_end
            .min(self.una.saturating_add(self.send_buffer))
            .min(self.peer_edge);
        if self.nxt < edge {
            let len = self.new_segment_len(edge);
            let cut_by_window = self.nxt + len == edge && edge < self.stream_end;
            if len < u64::from(self.mss) && cut_by_window && pipe > 0 {
                // Silly-window avoidance: a runt limited by a window waits for the window. A
                // runt that a write ends (a small message written with TCP_NODELAY) fits the
                // window and leaves, as Linux's tcp_snd_wnd_test lets it.
                self.cwnd_limited = false;
                return None;
            }
            if pipe > 0 && pipe + len > cwnd {
                self.cwnd_limited = true;
                return None;
            }
            if self.paced_out(now) {
                return None;
            }
            let fin = self.fin_queued && self.nxt + len == self.stream_end;
            return Some(self.send_new(now, len as u32, fin));
        }
        self.cwnd_limited = false;
        if self.fin_queued && self.nxt == self.stream_end {
            if self.paced_out(now) {
                return None;
            }
            return Some(self.send_new(now, 0, true));
        }
        None
    }

    /// The tail loss probe (tcp_send_loss_probe): new data if the peer's window and the send
    /// buffer allow a full segment (or the rest of the stream), else the last segment again.
    fn loss_probe(&mut self, now: Duration) -> Option<Outgoing> {
        if self.tlp_high_seq.is_some() || self.board.is_empty() {
            return None;
        }
        let edge = self
            .stream_end
            .min(self.una.saturating_add(self.send_buffer))
            .min(self.peer_edge);
        let out = if self.nxt < edge
            && (edge - self.nxt >= u64::from(self.mss) || edge == self.stream_end)
        {
            let len = self.new_segment_len(edge);
            let fin = self.fin_queued && self.nxt + len == self.stream_end;
            self.tlp_retrans = false;
            self.send_new_inner(now, len as u32, fin)
        } else {
            let (seq, len, fin) = self.board.last()?;
            let pn = self.next_pn();
            self.stats.retransmissions += 1;
            if len > 0 {
                self.stats.data_segments += 1;
            }
            let tx = self.on_data_sent(now, len);
            self.board.retransmitted(seq, now, pn, tx);
            self.cc.on_sent(now, u64::from(len).max(1), pn);
            self.tlp_retrans = true;
            Outgoing {
                seq,
                len,
                fin,
                retransmission: true,
            }
        };
        self.stats.tail_loss_probes += 1;
        self.tlp_high_seq = Some(self.nxt);
        // The RTO restarts from now (the probe timer is consumed).
        self.set_timer(TimerKind::Rto, now + self.rtt.backed_off(self.backoff));
        Some(out)
    }

    fn send_new(&mut self, now: Duration, len: u32, fin: bool) -> Outgoing {
        let out = self.send_new_inner(now, len, fin);
        self.note_sent();
        // tcp_write_xmit schedules the probe after new data.
        self.schedule_probe(now, false);
        out
    }

    fn send_new_inner(&mut self, now: Duration, len: u32, fin: bool) -> Outgoing {
        let pn = self.next_pn();
        if len > 0 {
            self.stats.data_segments += 1;
        }
        let tx = self.on_data_sent(now, len);
        let seg = SentSeg {
            start: self.nxt,
            len,
            fin,
            first_sent: now,
            sent: now,
            pn,
            sacked: false,
            lost: false,
            retx_in_flight: false,
            retransmitted: false,
            tx,
        };
        self.nxt = seg.end();
        self.board.push(seg);
        self.cc.on_sent(now, u64::from(len).max(1), pn);
        self.arm_rto(now);
        Outgoing {
            seq: seg.start,
            len,
            fin,
            retransmission: false,
        }
    }

    /// Processes the acknowledgement fields of an incoming segment.
    pub(crate) fn on_ack(&mut self, a: AckInfo<'_>, now: Duration) {
        if a.ack > self.nxt || a.ack < self.una {
            // Acknowledges data never sent, or an old ACK overtaken by newer ones.
            return;
        }
        // The peer is alive: probes it answers never add up to a give-up.
        self.probes_unanswered = 0;
        let mss = u64::from(self.mss);
        // Linux samples rates (and calls the controller) only for ACKs that find data out.
        let prior_packets = !self.board.is_empty();
        let prior_in_flight = self.board.pipe().div_ceil(mss);
        let prior_sacked_out = self.board.sacked_out();
        self.ack_lost = 0;
        self.peer_edge = self.peer_edge.max(a.ack.saturating_add(a.window));
        let mut delivered = std::mem::take(&mut self.delivered);
        delivered.clear();
        let mut top_sack = self.highest_sacked;
        if self.sack {
            for &(l, r) in a.sacks {
                let (l, r) = (l.max(a.ack), r.min(self.nxt));
                if l < r {
                    self.board.sack(l, r, &mut delivered);
                    top_sack = top_sack.max(r);
                }
            }
        }
        let sacked = delivered.len();
        let advanced = a.ack > self.una;
        if advanced {
            self.board.cum_ack(a.ack, &mut delivered);
            self.una = a.ack;
        }
        let cum_acked = (delivered.len() - sacked) as u64;
        let rtt = self.rtt_sample(&delivered, advanced, a.ts_age, now);
        let mut rs = AckSample::default();
        for d in &delivered {
            self.rate.on_delivered(
                &mut rs,
                &DeliveredTx {
                    tx: d.tx,
                    sent: d.sent,
                    retransmitted: d.retransmitted,
                },
            );
        }
        RateSampler::set_rtt(&mut rs, rtt);
        // FLAG_ACK_MAYBE_DELAYED: one runt segment cumulatively acknowledged alone.
        let maybe_delayed = delivered.len() == 1
            && sacked == 0
            && prior_sacked_out == 0
            && delivered[0].bytes < mss;
        let sack_reneg = advanced && self.sack && self.board.head_sacked();
        if self.rack {
            self.rack_advance(&delivered, now);
        }
        self.highest_sacked = top_sack;
        let ends_recovery = matches!(self.recovery, Some(point) if advanced && self.una >= point);
        let newly_delivered = delivered.len() as u64;

        if advanced {
            self.backoff = 0;
            self.rto_deadline = None;
            self.timer_kind = TimerKind::Rto;
            if self.sack && self.board.head_sacked() {
                // SACK reneging: the receiver dropped data it had SACKed, and since no SACKed
                // segment is ever resent, only a timeout that forgets the SACKs can repair it.
                // Like Linux (tcp_check_sack_reneging), give the receiver max(srtt / 2, 10 ms)
                // rather than a full RTO.
                let delay = (self.rtt.smoothed() / 2).max(RENEGING_DELAY);
                self.set_timer(TimerKind::Rto, now + delay);
            } else if !self.board.is_empty() {
                self.arm_rto(now);
            }
        }
        if let Some(high) = self.tlp_high_seq {
            // tcp_process_tlp_ack: the probe is answered once the ACK passes it. A probe
            // retransmission that repaired a loss on its own (no recovery started since)
            // costs one reduction; Linux skips it when a D-SACK shows the probe was
            // superfluous, which this model's receiver does not send.
            if self.una >= high {
                if !self.tlp_retrans {
                    self.tlp_high_seq = None;
                } else if self.una > high {
                    self.tlp_high_seq = None;
                    if self.recovery.is_none() && self.una >= self.loss_until {
                        // tcp_process_tlp_ack: a whole reduction at once, which ends any
                        // CWR reduction and is signalled with CWR like one.
                        self.cc.on_congestion_event(now, now, false, 0);
                        self.count_event(now);
                        self.cwr = None;
                        self.prr_cwnd = None;
                        self.cwr_queued = self.ecn;
                    }
                } else if !advanced && newly_delivered == 0 && a.pure {
                    // A pure duplicate: the original and the probe both arrived.
                    self.tlp_high_seq = None;
                }
            }
        }
        // CWR is held until something above high_seq is acknowledged, so the CWR flag has
        // reached the receiver (tcp_fastretrans_alert).
        if matches!(self.cwr, Some(high) if self.una > high) {
            self.cwr = None;
            self.prr_cwnd = None;
        }
        match self.recovery {
            Some(_) if ends_recovery => {
                self.recovery = None;
                self.dupacks = 0;
                // tcp_end_cwnd_reduction: the controller's window (ssthresh) takes over.
                self.prr_cwnd = None;
            }
            Some(_) if advanced && !self.sack => {
                // NewReno partial ACK: the next hole is lost too; retransmit it at once.
                self.dupacks = self.dupacks.saturating_sub(cum_acked.saturating_sub(1));
                let n = self.board.mark_first_lost().count;
                self.report_lost(now, self.ack_lost);
                self.ack_lost += n;
            }
            None if advanced && !self.sack => self.dupacks = 0,
            _ => {}
        }
        let mut newly_lost = false;
        if self.sack {
            let losses = if self.rack {
                self.rack_detect(now)
            } else {
                self.board.mark_lost_by_sack()
            };
            newly_lost = losses.count > 0;
            self.report_lost(now, self.ack_lost);
            self.ack_lost += losses.count;
            if newly_lost {
                self.on_losses(losses, now);
            }
            if ends_recovery
                && self.recovery.is_none()
                && self.una >= self.loss_until
                && self.board.has_lost()
            {
                // tcp_fastretrans_alert: the ACK that ends a recovery still finds segments
                // marked lost (retransmitted, not yet acknowledged: sent after the recovery
                // began, so it did not cover them). The loss is proven (tcp_time_to_recover's
                // lost_out), and a new recovery starts at once with its own reduction.
                self.enter_recovery(now, now, 0);
            }
        } else if !advanced && a.pure && !self.board.is_empty() {
            self.dupacks += 1;
            let fresh = self.una > self.recover && self.una >= self.loss_until;
            if self.recovery.is_none() && self.dupacks == DUP_THRESH as u64 && fresh {
                let losses = self.board.mark_first_lost();
                self.report_lost(now, self.ack_lost);
                self.ack_lost += losses.count;
                self.on_losses(losses, now);
            }
        }
        if a.ece && self.ecn {
            self.on_ecn_echo(now);
        }
        // Linux's order: the state machine (recovery exit and entry) runs before the
        // controller sees the ACK, so the ACK that starts recovery does not grow the window
        // and the one that ends it may.
        // A controller that sets its window on every ACK (Prague) grows during a reduction
        // as it decides, and the transport's PRR stays out of its way (Linux: cong_control).
        let own = self.cc.controls_reductions();
        let in_recovery = self.reducing() && !own;
        self.feed_controller(&delivered, in_recovery, a.ece && self.ecn, now);
        if prior_packets {
            let cx = AckContext {
                newly_delivered,
                newly_lost: self.ack_lost,
                prior_in_flight,
                sack_reneg,
                min_rtt: self.rtt.sample().min,
                srtt: self.rtt.smoothed(),
                ack_maybe_delayed: maybe_delayed,
                next_departure: self.wstamp,
                ca_state: self.ca_state(),
                is_cwnd_limited: self.cwnd_limited,
            };
            let mut sample = self.rate.gen(&rs, &cx, now);
            // Linux also requires the delivered segment to be the latest one sent.
            sample.is_ack_delayed &= sample.delivered == Some(1);
            let in_flight = self.board.pipe().div_ceil(mss);
            self.cc.on_rate_sample(now, &sample, in_flight);
            if self.cc.marks_app_limited() {
                self.rate.mark_app_limited(in_flight);
            }
        }
        self.delivered = delivered;
        if self.prr && in_recovery {
            self.prr_update(newly_delivered, advanced, newly_lost);
        }
        if advanced && self.timer_kind == TimerKind::Rto && !self.board.head_sacked() {
            // tcp_set_xmit_timer: the probe timer if one is due, else the RTO from now.
            self.schedule_probe(now, true);
        }
        self.update_persist(now);
    }

    /// RFC 6298 sampling: the newest newly delivered segment never retransmitted (Karn);
    /// with timestamps, the echo times ACKs of retransmissions, in whole milliseconds and at
    /// least one (Linux's tcp_rtt_tsopt_us(tp, 1)).
    fn rtt_sample(
        &mut self,
        delivered: &[Delivered],
        advanced: bool,
        ts_age: Option<Duration>,
        now: Duration,
    ) -> Option<Duration> {
        let newest = delivered
            .iter()
            .filter(|d| !d.retransmitted)
            .map(|d| d.sent)
            .max();
        let sample = match (newest, ts_age) {
            (Some(sent), _) => Some(now.saturating_sub(sent)),
            (None, Some(age)) if advanced => Some(age.max(Duration::from_millis(1))),
            _ => None,
        };
        if let Some(s) = sample {
            self.rtt.on_sample(s);
        }
        sample
    }

    /// The loss-recovery state as a controller watching it sees it (Linux's icsk_ca_state).
    fn ca_state(&self) -> CaState {
        if self.una < self.loss_until {
            CaState::Loss
        } else if self.recovery.is_some() {
            CaState::Recovery
        } else if self.cwr.is_some() {
            CaState::Cwr
        } else {
            CaState::Open
        }
    }

    /// Feeds the newly delivered segments to the controller; `in_recovery`: no growth (the
    /// RTT samples still count), as Linux calls cong_avoid only outside a window reduction.
    /// `ece`: the ACK carried ECN-Echo (all its bytes count as CE-marked).
    fn feed_controller(
        &mut self,
        delivered: &[Delivered],
        in_recovery: bool,
        ece: bool,
        now: Duration,
    ) {
        if delivered.is_empty() {
            return;
        }
        let app_limited = !self.cwnd_limited || in_recovery;
        let rtt = self.rtt.sample();
        let mut largest = 0;
        let mut acked = 0;
        for d in delivered {
            // The first transmission time keeps the controller in recovery until data sent
            // after the loss is acknowledged, like TCP's RecoveryPoint.
            self.cc
                .on_ack(now, d.first_sent, d.bytes, app_limited, &rtt);
            largest = largest.max(d.pn);
            acked += d.bytes;
        }
        if self.ecn {
            self.cc
                .on_ecn_feedback(now, acked, if ece { acked } else { 0 });
        }
        self.cc
            .on_end_acks(now, self.board.pipe(), app_limited, Some(largest));
    }

    /// Passes each segment the scoreboard newly marked lost to the controller, in marking
    /// order; `counted`: losses of this ACK marked before them, which the rate sampler
    /// adds only when the ACK ends.
    fn report_lost(&mut self, now: Duration, counted: u64) {
        let mut lost = self.rate.lost() + counted;
        for tx in self.board.drain_lost_tx() {
            lost += 1;
            let p = LostPacket {
                tx_in_flight: tx.in_flight,
                lost: lost - tx.lost,
                is_app_limited: tx.is_app_limited,
            };
            self.cc.on_packet_lost(now, &p);
        }
    }

    /// Newly detected losses: one congestion event per recovery episode. Inside a CWR
    /// reduction, recovery takes over without a second reduction (tcp_enter_recovery).
    fn on_losses(&mut self, losses: Losses, now: Duration) {
        if losses.count == 0 || self.recovery.is_some() || self.una < self.loss_until {
            return;
        }
        self.enter_recovery(now, losses.newest_sent, losses.bytes);
    }

    /// Fast recovery starts (Linux's tcp_enter_recovery): everything sent so far must be
    /// acknowledged before it ends, and the window is reduced unless a CWR reduction is
    /// already under way. `sent` is the send time of the newest segment that proves the loss.
    fn enter_recovery(&mut self, now: Duration, sent: Duration, lost_bytes: u64) {
        self.recovery = Some(self.nxt);
        self.recover = self.nxt.saturating_sub(1);
        if self.cwr.take().is_some() {
            // Linux enters Recovery from CWR without a new ssthresh, but a controller that
            // watches the state (Prague's set_state) still makes its loss response.
            if self.cc.controls_reductions() {
                self.cc.on_congestion_event(now, sent, false, lost_bytes);
            }
            return;
        }
        self.start_reduction();
        self.cc.on_congestion_event(now, sent, false, lost_bytes);
        self.count_event(now);
    }

    /// ECN-Echo outside any reduction (Linux's tcp_try_to_open → tcp_enter_cwr): one
    /// reduction, with PRR and no retransmission, until data sent after it is acknowledged.
    /// In fast recovery or after a timeout the window is already being reduced.
    fn on_ecn_echo(&mut self, now: Duration) {
        if self.reducing() || self.una < self.loss_until {
            return;
        }
        self.cwr = Some(self.nxt);
        self.start_reduction();
        self.cc.on_congestion_event(now, now, false, 0);
        self.stats.ecn_reductions += 1;
        self.count_event(now);
    }

    fn count_event(&mut self, now: Duration) {
        self.stats.congestion_events += 1;
        self.stats.first_congestion.get_or_insert(now);
    }

    /// The retransmission or persist timer fired. Returns false once the retry limit is
    /// exceeded (RTO backoffs, or probes the peer never answered).
    pub(crate) fn on_timeout(&mut self, now: Duration) -> bool {
        if self.pace_wake.is_some_and(|t| t <= now) {
            // The held segment goes out at the next poll.
            self.pace_wake = None;
        }
        if self.persist_deadline.is_some_and(|t| t <= now) {
            self.persist_deadline = None;
            self.probes_unanswered += 1;
            if self.probes_unanswered > self.max_backoffs {
                return false;
            }
            self.probe_pending = true;
            self.persist_backoff = self.persist_backoff.saturating_add(1);
            self.persist_deadline = Some(now + self.rtt.backed_off(self.persist_backoff));
            return true;
        }
        if self.rto_deadline.is_none_or(|t| t > now) {
            return true;
        }
        self.rto_deadline = None;
        let kind = std::mem::replace(&mut self.timer_kind, TimerKind::Rto);
        if self.board.is_empty() {
            return true;
        }
        match kind {
            TimerKind::Probe => {
                // tcp_send_loss_probe; the probe itself re-arms the RTO when it goes out.
                self.tlp_pending = true;
                self.set_timer(TimerKind::Rto, now + self.rtt.backed_off(self.backoff));
                return true;
            }
            TimerKind::Reorder => {
                // tcp_rack_reo_timeout: whatever is due now is lost; a first loss starts
                // recovery with one delivered segment's worth of PRR credit.
                let losses = self.rack_detect(now);
                self.report_lost(now, 0);
                self.rate.on_lost(losses.count);
                if losses.count > 0 {
                    self.on_losses(losses, now);
                    if self.prr && self.recovery.is_some() {
                        self.prr_update(1, false, false);
                    }
                }
                let rto = self.rtt.backed_off(self.backoff);
                let head_sent = self.board.head().map_or(now, |(_, sent)| sent);
                self.set_timer(
                    TimerKind::Rto,
                    (head_sent + rto).max(now + Duration::from_micros(1)),
                );
                return true;
            }
            TimerKind::Rto => {}
        }
        self.stats.timeouts += 1;
        self.backoff += 1;
        if self.backoff > self.max_backoffs {
            return false;
        }
        // The head is SACKed only if the receiver reneged (see `on_ack`).
        let reneged = self.sack && self.board.head_sacked();
        let rack_rtt = if self.rack {
            self.rack_state.map(|r| r.rtt)
        } else {
            None
        };
        let marked = self.board.timeout_mark_lost(rack_rtt, now, reneged);
        self.report_lost(now, 0);
        self.rate.on_lost(marked);
        // tcp_enter_loss: the first timeout since the cumulative ACK last advanced sets a new
        // ssthresh unless fast recovery already did (a new signal even inside the Loss state
        // of an earlier timeout: a retransmission of it was lost); repeated backoffs for the
        // same `una` keep it. The window is what is still in flight + 1 segment.
        // Inside a CWR reduction the window is already being reduced, as in recovery.
        let reduce = self.backoff == 1 && !self.reducing();
        if self.backoff == 1 {
            self.count_event(now);
        }
        let mss = u64::from(self.mss);
        let window = (self.board.pipe().div_ceil(mss) + 1) * mss;
        self.cc.on_retransmission_timeout(now, reduce, window);
        self.recovery = None;
        self.cwr = None;
        self.cwr_queued = self.ecn;
        self.prr_cwnd = None;
        self.tlp_high_seq = None;
        self.dupacks = 0;
        self.loss_until = self.nxt;
        self.recover = self.nxt.saturating_sub(1);
        self.arm_rto(now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::tests_support::params;
    use crate::tcp::LossRecovery;

    const MS: Duration = Duration::from_millis(1);

    /// An established sender with a 1 ms RTT, a peer window of `window` bytes and nothing
    /// written yet, with its MSS.
    fn established(window: u64) -> (Sender, u64) {
        let p = params();
        let mut s = Sender::new(&p, Duration::ZERO, 0);
        s.on_handshake_rtt(MS);
        s.set_peer_window(window);
        (s, u64::from(p.mss))
    }

    /// An established sender with a 1 ms RTT, a huge peer window and `n` segments written.
    fn sender(n: u64) -> (Sender, u64) {
        let (mut s, m) = established(1 << 30);
        s.write(n * m);
        (s, m)
    }

    #[test]
    fn small_writes_that_can_leave_at_once_leave_as_their_own_segments() {
        let (mut s, m) = established(1 << 30);
        let mss = m as u32;
        // Three writes in one instant with the window open: 184 B, 55 B, then a bulk.
        s.write(184);
        s.write(55);
        s.write(10 * m);
        let lens: Vec<u32> = (0..4).map(|_| s.next(MS).expect("segment").len).collect();
        assert_eq!(lens, [184, 55, mss, mss]);
        // Data written while the window is full waits, and the next write joins it: the
        // initial window's ten segments leave, two 100-byte writes wait and leave as one.
        let (mut s, m) = sender(10);
        while s.next(MS).is_some() {}
        s.write(100);
        s.write(100);
        assert!(s.next(MS).is_none(), "the window is full");
        ack(&mut s, 1 + 2 * m, &[], 2 * MS);
        assert_eq!(s.next(2 * MS).expect("segment after the ACK").len, 200);
    }

    /// The server's post-handshake messages behind a response larger than the peer's window:
    /// each small write ends its own segment and fits the window, so it leaves at once even
    /// with data in flight; only a segment the window itself cuts short waits.
    #[test]
    fn small_writes_leave_while_a_write_behind_them_exceeds_the_peer_window() {
        let (mut s, m) = established(1 << 30);
        s.set_peer_window(40 * m);
        s.write(184);
        assert_eq!(s.next(MS).expect("the tickets").len, 184);
        s.write(55);
        s.write(35);
        s.write(100 * m);
        let lens: Vec<u32> = (0..3).map(|_| s.next(MS).expect("segment").len).collect();
        assert_eq!(lens, [55, 35, m as u32]);
    }

    fn ack(s: &mut Sender, ack: u64, sacks: &[(u64, u64)], now: Duration) {
        ack_ece(s, ack, sacks, false, now);
    }

    fn ack_ece(s: &mut Sender, ack: u64, sacks: &[(u64, u64)], ece: bool, now: Duration) {
        s.on_ack(
            AckInfo {
                ack,
                window: 1 << 30,
                sacks,
                ts_age: None,
                pure: true,
                ece,
            },
            now,
        );
    }

    /// The window reduction Linux makes for ECN-Echo (tcp_enter_cwr): one per round trip,
    /// ssthresh from the controller, PRR on the way down, CWR on the next new segment, no
    /// retransmission; ECE ignored while the reduction runs and acted on again after it.
    #[test]
    fn ecn_echo_reduces_once_per_round_trip_without_retransmitting() {
        let (mut s, m) = sender(1000);
        s.enable_ecn();
        let first = send_all(&mut s, MS);
        assert_eq!(first.len(), 10);
        // Slow start: ACK every segment without ECE; the window doubles to 20.
        for k in 1..=10u64 {
            ack(&mut s, 1 + k * m, &[], 2 * MS);
        }
        assert_eq!(s.cwnd(), 20 * m);
        let round = send_all(&mut s, 2 * MS);
        assert_eq!(round.len(), 20);
        let high = s.snd_nxt();
        assert!(!s.take_cwr(), "no reduction yet");
        // The first segment of the round comes back with ECE.
        let mut una = 1 + 11 * m;
        ack_ece(&mut s, una, &[], true, 3 * MS);
        let st = s.stats();
        assert_eq!((st.ecn_reductions, st.congestion_events), (1, 1));
        assert_eq!(
            s.cc.ssthresh(),
            Some(20 * m * 717 / 1024 / m * m),
            "CUBIC's β"
        );
        assert!(s.take_cwr(), "CWR goes out on the next new segment");
        assert!(!s.take_cwr(), "once");
        // ECE on the rest of the round (the receiver repeats it until it sees CWR) changes
        // nothing, and nothing is retransmitted.
        while una < high {
            una += m;
            ack_ece(&mut s, una, &[], true, 4 * MS);
            for o in std::iter::from_fn(|| s.next(4 * MS)) {
                assert!(!o.retransmission);
            }
        }
        assert_eq!(s.stats().ecn_reductions, 1, "one reduction per round trip");
        let ssthresh = s.cc.ssthresh().unwrap_or(0);
        assert!(
            s.cwnd() <= ssthresh + m,
            "PRR brought the window down to ssthresh: {} > {ssthresh}",
            s.cwnd()
        );
        assert_eq!(s.stats().retransmissions, 0);
        // CWR is held until data above high_seq is acknowledged; then ECE reduces again.
        assert!(s.snd_nxt() > high);
        ack_ece(&mut s, high + m, &[], true, 5 * MS);
        assert_eq!(s.stats().ecn_reductions, 2);
    }

    #[test]
    fn ecn_echo_is_ignored_without_negotiation_and_inside_fast_recovery() {
        let (mut s, m) = sender(100);
        send_all(&mut s, MS);
        ack_ece(&mut s, 1 + m, &[], true, 2 * MS);
        assert_eq!(s.stats().congestion_events, 0, "ECN was not negotiated");

        let (mut s, m) = sender(100);
        s.enable_ecn();
        send_all(&mut s, MS);
        // Segment 1 lost: SACKs start fast recovery; ECE on the same ACKs adds nothing.
        ack_ece(&mut s, 1, &[(1 + m, 1 + 5 * m)], true, 2 * MS);
        assert_eq!(s.stats().congestion_events, 1);
        assert_eq!(s.stats().ecn_reductions, 0, "recovery already reduces");
        assert!(
            s.take_cwr(),
            "the recovery's reduction is signalled with CWR too"
        );
    }

    /// Sends what the windows allow; returns the start sequence numbers.
    fn send_all(s: &mut Sender, now: Duration) -> Vec<u64> {
        std::iter::from_fn(|| s.next(now).map(|o| o.seq)).collect()
    }

    #[test]
    fn sack_reneging_is_repaired_by_a_short_timeout_that_forgets_the_sacks() {
        let (mut s, m) = sender(100);
        assert_eq!(send_all(&mut s, MS).len(), 10, "initial window");
        // Segment 0 is lost, 1..10 arrive and are SACKed: fast retransmit of 0.
        ack(&mut s, 1, &[(1 + m, 1 + 10 * m)], 2 * MS);
        let sent = send_all(&mut s, 2 * MS);
        assert_eq!(sent.first(), Some(&1), "the hole is retransmitted first");
        assert_eq!(s.stats().congestion_events, 1);
        // The retransmission arrives, but the receiver has dropped everything it SACKed: the
        // cumulative ACK stops at segment 1, which the sender holds as SACKed.
        ack(&mut s, 1 + m, &[], 3 * MS);
        let deadline = s.timeout().expect("a timer runs");
        assert_eq!(
            deadline,
            3 * MS + RENEGING_DELAY,
            "max(srtt / 2, 10 ms), not a full RTO"
        );
        assert!(s.on_timeout(deadline));
        // Everything the receiver dropped is resent, from the cumulative ACK on.
        let resent = send_all(&mut s, deadline);
        assert_eq!(resent.first(), Some(&(1 + m)), "{resent:?}");
        assert!(s.in_flight() > 0);
    }

    /// A sender with `n` segments written, a handshake RTT of `rtt`, knobs changed by `f`.
    fn sender_with(
        n: u64,
        rtt: Duration,
        iw: u64,
        f: impl FnOnce(&mut crate::tcp::Params),
    ) -> (Sender, u64) {
        let mut p = params();
        if let congestion::config::CcConfig::Cubic { common, .. } = &mut p.controller {
            common.initial_window_packets = iw;
        }
        f(&mut p);
        let mut s = Sender::new(&p, Duration::ZERO, 0);
        s.on_handshake_rtt(rtt);
        s.set_peer_window(1 << 30);
        s.write(n * u64::from(p.mss));
        (s, u64::from(p.mss))
    }

    /// A controller that records the per-packet loss reports and otherwise is the one it
    /// wraps.
    #[derive(Debug, Clone)]
    struct LossRecorder {
        inner: Box<dyn CongestionController>,
        lost: std::sync::Arc<std::sync::Mutex<Vec<LostPacket>>>,
    }

    impl CongestionController for LossRecorder {
        fn on_sent(&mut self, now: Duration, bytes: u64, pn: u64) {
            self.inner.on_sent(now, bytes, pn);
        }
        fn on_ack(
            &mut self,
            now: Duration,
            sent: Duration,
            b: u64,
            al: bool,
            r: &congestion::RttSample,
        ) {
            self.inner.on_ack(now, sent, b, al, r);
        }
        fn on_end_acks(&mut self, now: Duration, f: u64, al: bool, l: Option<u64>) {
            self.inner.on_end_acks(now, f, al, l);
        }
        fn on_congestion_event(&mut self, now: Duration, sent: Duration, pc: bool, b: u64) {
            self.inner.on_congestion_event(now, sent, pc, b);
        }
        fn on_retransmission_timeout(&mut self, now: Duration, reduce: bool, window: u64) {
            self.inner.on_retransmission_timeout(now, reduce, window);
        }
        fn on_mtu_update(&mut self, size: u64) {
            self.inner.on_mtu_update(size);
        }
        fn on_packet_lost(&mut self, _now: Duration, lost: &LostPacket) {
            self.lost.lock().expect("not poisoned").push(*lost);
        }
        fn window(&self) -> u64 {
            self.inner.window()
        }
        fn ssthresh(&self) -> Option<u64> {
            self.inner.ssthresh()
        }
        fn initial_window(&self) -> u64 {
            self.inner.initial_window()
        }
        fn phase(&self) -> congestion::Phase {
            self.inner.phase()
        }
        fn box_clone(&self) -> Box<dyn CongestionController> {
            Box::new(self.clone())
        }
    }

    /// Every segment marked lost reaches the controller once, in marking order, with the
    /// segments in flight at its send (itself included) and the segments lost since then
    /// (itself included): segments 0 and 1 of a window of 10, lost by SACK, left with 1 and 2
    /// in flight; then a timeout loses the 6 segments after the SACKed ones and the two
    /// retransmissions, each counting all the losses before it.
    #[test]
    fn each_lost_segment_is_reported_with_its_flight() {
        let (mut s, m) = sender_with(100, 100 * MS, 10, |p| p.knobs.rack = false);
        let lost = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let none = congestion::build(&congestion::CcConfig::None, m, Duration::ZERO);
        let inner = std::mem::replace(&mut s.cc, none);
        s.cc = Box::new(LossRecorder {
            inner,
            lost: lost.clone(),
        });
        assert_eq!(send_all(&mut s, Duration::ZERO).len(), 10);
        ack(&mut s, 1, &[(1 + 2 * m, 1 + 5 * m)], 100 * MS);
        let seen = |k: usize| lost.lock().expect("not poisoned")[k..].to_vec();
        // The first flight left while the write found the window empty: application-limited.
        let report = |tx_in_flight, lost| LostPacket {
            tx_in_flight,
            lost,
            is_app_limited: true,
        };
        assert_eq!(seen(0), [report(1, 1), report(2, 2)]);
        let resent = send_all(&mut s, 100 * MS);
        assert_eq!(&resent[..2], &[1, 1 + m], "the holes go out again");
        let deadline = s.timeout().expect("the RTO runs");
        assert!(s.on_timeout(deadline));
        let after: Vec<u64> = seen(2).iter().map(|p| p.lost).collect();
        assert_eq!(after.len(), 2 + 5, "two retransmissions and segments 5..10");
        assert!(after.windows(2).all(|w| w[0] < w[1]), "{after:?}");
    }

    #[test]
    fn a_timeout_after_progress_is_a_new_congestion_event_but_a_backoff_is_not() {
        // Without RACK-TLP: no probe, every segment is lost at the timeout.
        let (mut s, m) = sender_with(100, MS, 10, |p| p.knobs.rack = false);
        send_all(&mut s, MS);
        let t1 = s.timeout().expect("RTO armed");
        assert!(s.on_timeout(t1));
        assert_eq!(s.stats().congestion_events, 1);
        assert_eq!(s.cwnd(), m, "nothing in flight: loss window of one segment");
        assert_eq!(send_all(&mut s, t1), vec![1], "the head first");
        // The retransmission arrives: slow start sends the next two lost segments.
        ack(&mut s, 1 + m, &[], t1 + MS);
        assert_eq!(s.cwnd(), 2 * m);
        assert_eq!(send_all(&mut s, t1 + MS), vec![1 + m, 1 + 2 * m]);
        let t2 = s.timeout().expect("RTO re-armed");
        assert!(s.on_timeout(t2));
        assert_eq!(s.stats().congestion_events, 2, "a new loss after progress");
        assert_eq!(s.cwnd(), m);
        // No progress since: a backoff, not a new signal.
        let t3 = s.timeout().expect("RTO backed off");
        assert!(t3 - t2 > t2 - (t1 + MS), "exponential backoff");
        assert!(s.on_timeout(t3));
        assert_eq!(s.stats().congestion_events, 2);
    }

    #[test]
    fn tail_loss_probe_fires_after_two_srtt_and_sends_new_data_once() {
        let (mut s, m) = sender_with(100, 100 * MS, 10, |_| {});
        assert_eq!(send_all(&mut s, Duration::ZERO).len(), 10);
        // PTO = 2 · SRTT + 8 ms (more than one segment out), before the 300 ms RTO.
        let pto = s.timeout().expect("probe timer");
        assert_eq!(pto, 208 * MS);
        assert_eq!(s.timer_kind, TimerKind::Probe);
        assert!(s.on_timeout(pto));
        // New data goes out although the window is full.
        let probe = s.next(pto).expect("the probe");
        assert_eq!((probe.seq, probe.retransmission), (1 + 10 * m, false));
        assert!(s.next(pto).is_none(), "one probe");
        assert_eq!(s.stats().tail_loss_probes, 1);
        // Then the RTO (SRTT + max(4·RTTVAR, 200 ms) = 300 ms from the probe), not a 2nd probe.
        assert_eq!(s.timeout(), Some(pto + 300 * MS));
        assert_eq!(s.timer_kind, TimerKind::Rto);
        assert!(s.on_timeout(pto + 300 * MS));
        assert_eq!(s.stats().tail_loss_probes, 1);
        assert_eq!(s.stats().timeouts, 1);
    }

    #[test]
    fn tail_loss_probe_resends_the_last_segment_without_new_data_and_waits_for_delack() {
        let (mut s, m) = sender_with(10, 100 * MS, 10, |_| {});
        send_all(&mut s, Duration::ZERO);
        let pto = s.timeout().unwrap();
        assert!(s.on_timeout(pto));
        let probe = s.next(pto).expect("the probe");
        assert_eq!((probe.seq, probe.retransmission), (1 + 9 * m, true));
        // One segment out: PTO = 2 · SRTT + the minimum RTO (a delayed ACK may hold it),
        // capped by the RTO (300 ms).
        let (mut s, _) = sender_with(1, 100 * MS, 10, |_| {});
        send_all(&mut s, Duration::ZERO);
        assert_eq!(s.timeout(), Some(300 * MS));
        assert_eq!(s.timer_kind, TimerKind::Probe, "the RTO caps it");
    }

    #[test]
    fn rack_marks_a_hole_lost_after_rtt_plus_a_quarter_min_rtt() {
        let (mut s, m) = sender_with(100, 100 * MS, 10, |_| {});
        send_all(&mut s, Duration::ZERO);
        // Segment 1 is SACKed at 100 ms: segment 0, sent at the same instant but below it,
        // is lost at rack.rtt (100 ms) + reo_wnd (min_rtt / 4 = 25 ms) after it was sent.
        ack(&mut s, 1, &[(1 + m, 1 + 2 * m)], 100 * MS);
        assert_eq!(s.stats().congestion_events, 0);
        assert_eq!(s.timer_kind, TimerKind::Reorder);
        assert_eq!(s.timeout(), Some(133 * MS), "125 ms + 2 ticks");
        assert!(s.on_timeout(133 * MS));
        assert_eq!(s.stats().congestion_events, 1);
        let out = s.next(133 * MS).expect("fast retransmit");
        assert_eq!((out.seq, out.retransmission), (1, true));
        // Segments 2..9 were sent at the same instant but above the SACKed one: not lost.
        assert_eq!(s.board.next_lost(), None);
        // Three SACKed segments: reo_wnd is 0, the hole is lost at once.
        let (mut s, m) = sender_with(100, 100 * MS, 10, |_| {});
        send_all(&mut s, Duration::ZERO);
        ack(&mut s, 1, &[(1 + m, 1 + 4 * m)], 100 * MS);
        assert_eq!(s.stats().congestion_events, 1);
        assert_eq!(s.next(100 * MS).map(|o| o.seq), Some(1));
        // Without RACK, one SACK never marks anything and no timer waits for it.
        let (mut s, m) = sender_with(100, 100 * MS, 10, |p| p.knobs.rack = false);
        send_all(&mut s, Duration::ZERO);
        ack(&mut s, 1, &[(1 + m, 1 + 2 * m)], 100 * MS);
        assert_eq!(s.timer_kind, TimerKind::Rto);
        assert_eq!(s.timeout(), Some(300 * MS));
    }

    #[test]
    fn rack_detects_a_lost_retransmission_without_a_timeout() {
        let (mut s, m) = sender_with(100, 100 * MS, 10, |_| {});
        send_all(&mut s, Duration::ZERO);
        ack(&mut s, 1, &[(1 + m, 1 + 4 * m)], 100 * MS);
        assert_eq!(send_all(&mut s, 100 * MS).first(), Some(&1));
        // The next SACK lets PRR send new data; that data is SACKed 100 ms later, and the
        // retransmission (sent before it) is then lost too and goes out again.
        ack(&mut s, 1, &[(1 + m, 1 + 5 * m)], 101 * MS);
        let sent: Vec<u64> = send_all(&mut s, 101 * MS);
        assert_eq!(sent, vec![1 + 10 * m]);
        ack(
            &mut s,
            1,
            &[(1 + 10 * m, 1 + 11 * m), (1 + m, 1 + 5 * m)],
            201 * MS,
        );
        let again = s.next(201 * MS).expect("retransmitted again");
        assert_eq!((again.seq, again.retransmission), (1, true));
        assert_eq!(s.stats().timeouts, 0);
    }

    /// Linux's tcp_fastretrans_alert: the ACK that ends a recovery finds a segment sent
    /// after the recovery began still marked lost (retransmitted, not yet acknowledged), so a
    /// new recovery starts at once with its own reduction.
    #[test]
    fn a_loss_still_outstanding_when_recovery_ends_starts_the_next_recovery() {
        let (mut s, m) = sender_with(100, 100 * MS, 10, |_| {});
        let seg = |k: u64| 1 + k * m;
        send_all(&mut s, Duration::ZERO);
        // Segment 0 is lost: recovery until everything sent so far (0..9) is acknowledged.
        ack(&mut s, 1, &[(seg(1), seg(4))], 100 * MS);
        assert_eq!(send_all(&mut s, 100 * MS).first(), Some(&1));
        assert_eq!(s.stats().congestion_events, 1);
        // More SACKs let PRR send new data (10, 11, ...); then segment 7 turns out lost too.
        ack(&mut s, 1, &[(seg(1), seg(7))], 101 * MS);
        let new = send_all(&mut s, 101 * MS);
        assert_eq!(new.first(), Some(&seg(10)), "{new:?}");
        ack(&mut s, 1, &[(seg(8), seg(10)), (seg(1), seg(7))], 102 * MS);
        assert_eq!(send_all(&mut s, 102 * MS).first(), Some(&seg(7)));
        // Segment 0's retransmission arrives; segment 10, sent after the recovery began, is
        // lost and goes out again inside the same recovery: no second reduction yet.
        ack(&mut s, seg(7), &[(seg(8), seg(10))], 200 * MS);
        ack(
            &mut s,
            seg(7),
            &[(seg(11), seg(12)), (seg(8), seg(10))],
            201 * MS,
        );
        assert_eq!(send_all(&mut s, 201 * MS).first(), Some(&seg(10)));
        assert_eq!(s.stats().congestion_events, 1);
        // Segment 7's retransmission ends the recovery while segment 10's is still out.
        ack(&mut s, seg(10), &[(seg(11), seg(12))], 202 * MS);
        assert_eq!(
            s.stats().congestion_events,
            2,
            "a new recovery, a new reduction"
        );
        assert!(s.recovery.is_some());
    }

    #[test]
    fn prr_paces_the_reduction_per_ack() {
        // 20 segments out, segment 0 lost, one ACK per SACKed segment. The third SACK starts
        // recovery with the window at 22 (two slow-start ACKs): ssthresh = 22 · 717 / 1024 = 15,
        // pipe = 20 − 3 − 1 = 16. Per ACK (RFC 6937 / tcp_cwnd_reduction):
        //   ACK 3: delivered 1, pipe 16 > 15: ⌈15·1/22⌉ − 0 = 1 (the retransmission)
        //   ACK 4: delivered 2, pipe 16: ⌈30/22⌉ − 1 = 1
        //   ACK 5: delivered 3, pipe 16: ⌈45/22⌉ − 2 = 1
        //   ACK 6: delivered 4, pipe 16: ⌈60/22⌉ − 3 = 0
        //   ACK 7: pipe 15 ≤ 15: min(15 − 15, max(5 − 3, 1)) = 0
        //   ACK 8: pipe 14: min(1, max(6 − 3, 1)) = 1
        let (mut s, m) = sender_with(1000, 100 * MS, 20, |_| {});
        assert_eq!(send_all(&mut s, Duration::ZERO).len(), 20);
        let mut sends = Vec::new();
        for k in 1..=8u64 {
            ack(
                &mut s,
                1,
                &[(1 + m, 1 + (k + 1) * m)],
                100 * MS + MS * k as u32,
            );
            if k >= 3 {
                sends.push(send_all(&mut s, 100 * MS + MS * k as u32).len());
            }
        }
        assert_eq!(sends, vec![1, 1, 1, 0, 0, 1]);
        assert_eq!(s.cc.ssthresh(), Some(15 * m));
        // RFC 6675 instead: the window is ssthresh at once; pipe 16 > 15 sends nothing.
        let (mut s, m) = sender_with(1000, 100 * MS, 20, |p| {
            p.knobs.recovery = LossRecovery::Rfc6675;
        });
        send_all(&mut s, Duration::ZERO);
        for k in 1..=3u64 {
            ack(
                &mut s,
                1,
                &[(1 + m, 1 + (k + 1) * m)],
                100 * MS + MS * k as u32,
            );
        }
        assert_eq!(send_all(&mut s, 103 * MS).len(), 0);
    }

    #[test]
    fn rto_marks_only_segments_older_than_the_rack_rtt_and_sets_in_flight_plus_one() {
        let (mut s, m) = sender_with(1000, 100 * MS, 10, |_| {});
        send_all(&mut s, Duration::ZERO);
        // Two segments acknowledged at 400 ms (RACK RTT 400 ms); four new ones go out.
        ack(&mut s, 1 + 2 * m, &[], 400 * MS);
        assert_eq!(send_all(&mut s, 400 * MS).len(), 4);
        // A timeout at 600 ms: the eight segments sent at 0 are lost; the four sent 200 ms
        // ago (< 400 ms) may still arrive and stay in flight, so the window is 4 + 1.
        s.set_timer(TimerKind::Rto, 600 * MS);
        assert!(s.on_timeout(600 * MS));
        assert_eq!(s.cwnd(), 5 * m);
        assert_eq!(s.in_flight(), 4 * m);
        assert_eq!(s.cc.ssthresh(), Some(8 * m), "12 · 717 / 1024 = 8");
        assert_eq!(send_all(&mut s, 600 * MS), vec![1 + 2 * m], "the head only");
        // The head's retransmission restarted the timer: a full (backed-off) RTO from now.
        assert_eq!(s.timeout(), Some(600 * MS + s.rtt.backed_off(1)));
        // Without RACK every segment is lost and the window is one segment.
        let (mut s, m) = sender_with(1000, 100 * MS, 10, |p| p.knobs.rack = false);
        send_all(&mut s, Duration::ZERO);
        ack(&mut s, 1 + 2 * m, &[], 400 * MS);
        send_all(&mut s, 400 * MS);
        s.set_timer(TimerKind::Rto, 600 * MS);
        assert!(s.on_timeout(600 * MS));
        assert_eq!((s.cwnd(), s.in_flight()), (m, 0));
    }
}
