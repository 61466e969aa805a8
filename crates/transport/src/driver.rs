//! The lifecycle every transport flow shares, in one place: [`FlowDriver`] implements
//! [`FlowAgent`] for any transport's [`Connections`].
//!
//! The driver owns what does not depend on the protocol: the client's first connection at
//! `start`, the data sender stopping at `stop`, running the applications once per batch of
//! input, opening the next connection of a download when every earlier one is complete,
//! application wake-ups, the flow's failure, delivered bytes and the last byte, per-connection
//! [`ConnectionReport`]s, sender samples and the common part of the [`FlowReport`]. A transport
//! implements only its connections: opening one, feeding a datagram or segment, timers,
//! sending, the stop, and running its applications, reporting what happened (handshake done,
//! bytes read, download complete, failure) to the [`Lifecycle`] it is handed.
//!
//! A "connection" here is one entry of the flow's connection reports: one QUIC connection, or
//! one download round of the TCP model (HTTP/1.1 opens several TCP connections per round).

use std::time::Duration;

use crate::agent::{ConnectionReport, FlowAgent, FlowReport, SenderSample, Side, Transmit};
use crate::flow::FlowPlan;
use crate::workload::Workload;

/// The state of a flow every transport shares, which its connections report into.
#[derive(Debug)]
pub struct Lifecycle {
    plan: FlowPlan,
    reports: Vec<ConnectionReport>,
    delivered: u64,
    last_byte: Option<Duration>,
    stopped: bool,
    finished: bool,
    error: Option<String>,
    /// Per side: input arrived since its applications last ran.
    needs_drive: [bool; 3],
    /// Per side: the application wants to run at this time without any input.
    app_wake: [Option<Duration>; 3],
}

impl Lifecycle {
    fn new(plan: FlowPlan) -> Self {
        Lifecycle {
            plan,
            reports: Vec::new(),
            delivered: 0,
            last_byte: None,
            stopped: false,
            finished: false,
            error: None,
            needs_drive: [false; 3],
            app_wake: [None; 3],
        }
    }

    /// Name, workload, start, stop and congestion controller of the flow.
    pub fn plan(&self) -> &FlowPlan {
        &self.plan
    }

    /// The application workload.
    pub fn workload(&self) -> Workload {
        self.plan.workload
    }

    /// The side whose application sends the data.
    pub fn data_sender(&self) -> Side {
        self.plan.workload.data_sender()
    }

    /// Whether the data sender has reached `stop`.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// Whether the workload is complete (or failed) and nothing more will happen.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// The connections' reports, in the order they were opened.
    pub fn reports(&self) -> &[ConnectionReport] {
        &self.reports
    }

    /// A connection starts now; returns its index (into [`Self::reports`]).
    pub fn begin_connection(&mut self, now: Duration) -> usize {
        self.reports.push(ConnectionReport {
            started_s: now.as_secs_f64(),
            ..Default::default()
        });
        self.reports.len() - 1
    }

    /// The client finished connection `conn`'s handshake at `at` (the first report of it
    /// counts).
    pub fn handshake_done(&mut self, conn: usize, at: Duration, zero_rtt_accepted: bool) {
        if let Some(r) = self
            .reports
            .get_mut(conn)
            .filter(|r| r.handshake_s.is_none())
        {
            r.handshake_s = Some(at.as_secs_f64() - r.started_s);
            r.zero_rtt_accepted = zero_rtt_accepted;
        }
    }

    /// The application at `side` read `bytes` of payload on connection `conn` at `now`; only
    /// what the data receiver reads is delivered. The client's first byte times the
    /// connection's first response byte.
    pub fn read(&mut self, conn: usize, side: Side, bytes: u64, now: Duration) {
        if side != self.plan.workload.data_receiver() || bytes == 0 {
            return;
        }
        self.delivered += bytes;
        self.last_byte = Some(now);
        if let Some(r) = self.reports.get_mut(conn) {
            *r.bytes_delivered.get_or_insert(0) += bytes;
            if side == Side::Client && r.time_to_first_byte_s.is_none() {
                r.time_to_first_byte_s = Some(now.as_secs_f64() - r.started_s);
            }
        }
    }

    /// Connection `conn`'s download is complete at `now` (the first report of it counts).
    pub fn completed(&mut self, conn: usize, now: Duration) {
        if let Some(r) = self
            .reports
            .get_mut(conn)
            .filter(|r| r.completion_s.is_none())
        {
            r.completion_s = Some(now.as_secs_f64() - r.started_s);
        }
    }

    /// The flow fails: the first message is kept, and nothing more happens.
    pub fn fail(&mut self, message: String) {
        if self.error.is_none() {
            self.error = Some(message);
        }
        self.finished = true;
    }

    /// Run `side`'s applications at its next transmission, as after input.
    pub fn wake(&mut self, side: Side) {
        self.needs_drive[side.index()] = true;
    }

    /// Run `side`'s applications at `at` even without input (a timer of the application).
    pub fn wake_at(&mut self, side: Side, at: Duration) {
        self.app_wake[side.index()] = Some(at);
    }
}

/// What a transport implements for [`FlowDriver`]: the connections of one flow, both ends and
/// any middlebox, without the flow's lifecycle.
pub trait Connections {
    /// Whether the applications run at once after a timer fired (quinn: its connections'
    /// events, such as a lost connection, are handled at the instant they happen) rather than
    /// at the side's next transmission.
    const RUN_ON_TIMEOUT: bool;
    /// Whether the client's applications run the moment a download's next connection opens
    /// (QUIC: a 0-RTT request leaves at once) rather than at its next input (TCP: nothing is
    /// said before the handshake).
    const RUN_CLIENT_ON_OPEN: bool;

    /// Whether `side` holds endpoints; the driver ignores timers and transmissions of other
    /// sides. Only a split-connection proxy puts one in the middle.
    fn has_side(&self, side: Side) -> bool {
        side != Side::Middle
    }
    /// The engine's time is `now`; called first by every entry point of the driver.
    fn advance(&mut self, now: Duration) {
        let _ = now;
    }
    /// Opens the client's next connection (calling [`Lifecycle::begin_connection`]), or fails
    /// the flow.
    fn open(&mut self, flow: &mut Lifecycle, now: Duration);
    /// A datagram or segment arrived at `side` from `from` with the IP ECN codepoint `ecn`;
    /// true when an endpoint took it (its applications then run at the side's next
    /// transmission).
    fn on_datagram(
        &mut self,
        side: Side,
        from: Side,
        now: Duration,
        payload: Vec<u8>,
        ecn: netem::Ecn,
    ) -> bool;
    /// The data sender (`side`) reached `stop`: what it still holds must not keep flowing.
    fn stop(&mut self, side: Side, now: Duration);
    /// `side`'s timers that are due fire.
    fn on_timeout(&mut self, side: Side, now: Duration);
    /// Runs `side`'s applications after input, reporting to `flow`.
    fn drive(&mut self, flow: &mut Lifecycle, side: Side, now: Duration);
    /// The next datagram or segment `side` sends now.
    fn poll_transmit(&mut self, side: Side, now: Duration) -> Option<Transmit>;
    /// `side` has nothing more to send now; returns true if its applications ran (sending may
    /// have produced events, such as a close).
    fn after_send(&mut self, flow: &mut Lifecycle, side: Side, now: Duration) -> bool {
        let _ = (flow, side, now);
        false
    }
    /// When `side`'s endpoints next need [`Self::on_timeout`].
    fn poll_timeout(&mut self, side: Side) -> Option<Duration>;
    /// The congestion state of the data sender (`sender`) of the newest connection.
    fn sample(&self, sender: Side) -> SenderSample;
    /// Fills the transport's counters into `report`, whose common part the driver filled.
    fn report(&self, flow: &Lifecycle, report: &mut FlowReport);
    /// See [`FlowAgent::corrupt_payload_reaches_endpoint`].
    fn corrupt_payload_reaches_endpoint(&self) -> bool;
}

/// One flow: a transport's connections driven through the shared lifecycle.
#[derive(Debug)]
pub struct FlowDriver<C> {
    flow: Lifecycle,
    conns: C,
}

impl<C: Connections> FlowDriver<C> {
    /// The flow of `plan` over `conns`; nothing is sent before `plan.start`. (Each
    /// transport's flow type has its own `new` that validates its configuration.)
    pub fn from_parts(plan: FlowPlan, conns: C) -> Self {
        FlowDriver {
            flow: Lifecycle::new(plan),
            conns,
        }
    }

    /// The shared state.
    pub fn lifecycle(&self) -> &Lifecycle {
        &self.flow
    }

    /// The transport's connections.
    pub fn connections(&self) -> &C {
        &self.conns
    }

    /// The transport's connections and the shared state, to change both.
    pub fn parts_mut(&mut self) -> (&mut C, &mut Lifecycle) {
        (&mut self.conns, &mut self.flow)
    }

    fn drive(&mut self, side: Side, now: Duration) {
        self.conns.drive(&mut self.flow, side, now);
        self.maybe_next_connection(now);
    }

    /// Opens a download's next connection once every earlier one is complete, or finishes.
    fn maybe_next_connection(&mut self, now: Duration) {
        let f = &self.flow;
        if f.finished || f.reports.is_empty() || !f.plan.workload.is_download() {
            return;
        }
        if !f.reports.iter().all(|r| r.completion_s.is_some()) {
            return;
        }
        if f.reports.len() < f.plan.workload.connections() as usize {
            self.conns.open(&mut self.flow, now);
            if C::RUN_CLIENT_ON_OPEN {
                self.drive(Side::Client, now);
            }
        } else {
            self.flow.finished = true;
        }
    }

    /// When `side`'s application needs to run without input: the client's start, the data
    /// sender's stop, a wake-up it asked for.
    fn app_timer(&self, side: Side) -> Option<Duration> {
        let f = &self.flow;
        let mut t = f.app_wake[side.index()];
        if side == Side::Client && f.reports.is_empty() && !f.finished {
            t = Some(f.plan.start);
        }
        if let Some(stop) = f.plan.stop {
            if !f.stopped && side == f.data_sender() {
                t = Some(t.map_or(stop, |x: Duration| x.min(stop)));
            }
        }
        t
    }
}

impl<C: Connections> FlowAgent for FlowDriver<C> {
    fn handle_datagram_ecn(
        &mut self,
        side: Side,
        from: Side,
        now: Duration,
        payload: Vec<u8>,
        ecn: netem::Ecn,
    ) {
        self.conns.advance(now);
        // The applications run once per batch of datagrams arriving at the same instant (like
        // a receiver draining its socket before reading streams); see `poll_transmit`.
        if self.conns.on_datagram(side, from, now, payload, ecn) {
            self.flow.wake(side);
        }
    }

    fn handle_timeout(&mut self, side: Side, now: Duration) {
        self.conns.advance(now);
        if !self.conns.has_side(side) {
            return;
        }
        let f = &self.flow;
        if side == Side::Client && f.reports.is_empty() && !f.finished && now >= f.plan.start {
            self.conns.open(&mut self.flow, now);
        }
        if let Some(stop) = self.flow.plan.stop {
            if !self.flow.stopped && now >= stop && side == self.flow.data_sender() {
                self.flow.stopped = true;
                self.conns.stop(side, now);
                if !self.flow.plan.workload.is_download() {
                    self.flow.finished = true;
                }
            }
        }
        let wake = &mut self.flow.app_wake[side.index()];
        if wake.is_some_and(|t| t <= now) {
            *wake = None;
        }
        self.conns.on_timeout(side, now);
        if C::RUN_ON_TIMEOUT {
            self.drive(side, now);
        } else {
            self.flow.wake(side);
        }
    }

    fn poll_transmit(&mut self, side: Side, now: Duration) -> Option<Transmit> {
        self.conns.advance(now);
        if !self.conns.has_side(side) {
            return None;
        }
        if std::mem::take(&mut self.flow.needs_drive[side.index()]) {
            self.drive(side, now);
        }
        let out = self.conns.poll_transmit(side, now);
        if out.is_none() && self.conns.after_send(&mut self.flow, side, now) {
            self.maybe_next_connection(now);
        }
        out
    }

    fn corrupt_payload_reaches_endpoint(&self) -> bool {
        self.conns.corrupt_payload_reaches_endpoint()
    }

    fn poll_timeout(&mut self, side: Side) -> Option<Duration> {
        if !self.conns.has_side(side) {
            return None;
        }
        let conn = self.conns.poll_timeout(side);
        match (conn, self.app_timer(side)) {
            (Some(c), Some(a)) => Some(c.min(a)),
            (c, a) => c.or(a),
        }
    }

    fn delivered_bytes(&self) -> u64 {
        self.flow.delivered
    }

    fn sample(&self) -> SenderSample {
        self.conns.sample(self.flow.data_sender())
    }

    fn is_finished(&self) -> bool {
        self.flow.finished
    }

    fn report(&self) -> FlowReport {
        let f = &self.flow;
        let mut r = FlowReport {
            bytes_delivered: f.delivered,
            first_packet_s: f.reports.first().map(|r| r.started_s),
            last_byte_s: f.last_byte.map(|t| t.as_secs_f64()),
            connections: f.reports.clone(),
            error: f.error.clone(),
            ..Default::default()
        };
        self.conns.report(f, &mut r);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc_adapter::CcChoice;

    /// Connections that deliver `per_drive` bytes to the client at every client drive and
    /// complete a connection once it has `size` bytes; they record what the driver asked.
    #[derive(Default)]
    struct Scripted {
        size: u64,
        per_drive: u64,
        /// Bytes read per connection.
        read: Vec<u64>,
        opened_at: Vec<Duration>,
        stopped_at: Option<Duration>,
        drives: Vec<(Side, Duration)>,
        fail_on_drive: Option<&'static str>,
    }

    impl Connections for Scripted {
        const RUN_ON_TIMEOUT: bool = false;
        const RUN_CLIENT_ON_OPEN: bool = true;

        fn open(&mut self, flow: &mut Lifecycle, now: Duration) {
            let i = flow.begin_connection(now);
            assert_eq!(i, self.read.len());
            self.read.push(0);
            self.opened_at.push(now);
        }
        fn on_datagram(
            &mut self,
            _: Side,
            _: Side,
            _: Duration,
            payload: Vec<u8>,
            _: netem::Ecn,
        ) -> bool {
            !payload.is_empty()
        }
        fn stop(&mut self, _: Side, now: Duration) {
            self.stopped_at = Some(now);
        }
        fn on_timeout(&mut self, _: Side, _: Duration) {}
        fn drive(&mut self, flow: &mut Lifecycle, side: Side, now: Duration) {
            self.drives.push((side, now));
            if let Some(why) = self.fail_on_drive {
                flow.fail(why.into());
                flow.fail("a later failure".into());
            }
            let Some(i) = self.read.len().checked_sub(1) else {
                return;
            };
            if side != Side::Client || self.read[i] >= self.size {
                return;
            }
            flow.handshake_done(i, now, false);
            let n = self.per_drive.min(self.size - self.read[i]);
            self.read[i] += n;
            flow.read(i, Side::Client, n, now);
            // The server's reads are not deliveries: it is not the data receiver.
            flow.read(i, Side::Server, 1_000, now);
            if self.read[i] == self.size {
                flow.completed(i, now);
            }
        }
        fn poll_transmit(&mut self, _: Side, _: Duration) -> Option<Transmit> {
            None
        }
        fn poll_timeout(&mut self, _: Side) -> Option<Duration> {
            None
        }
        fn sample(&self, _: Side) -> SenderSample {
            SenderSample::default()
        }
        fn report(&self, _: &Lifecycle, r: &mut FlowReport) {
            r.packets_sent = 7;
        }
        fn corrupt_payload_reaches_endpoint(&self) -> bool {
            true
        }
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn plan(workload: Workload, start: Duration, stop: Option<Duration>) -> FlowPlan {
        FlowPlan {
            name: "f".into(),
            workload,
            start,
            stop,
            cc: CcChoice::default(),
        }
    }

    fn download(connections: u32) -> Workload {
        Workload::Download {
            size: 300,
            streams: 1,
            connections,
        }
    }

    #[test]
    fn the_client_starts_at_its_start_time_and_not_before() {
        let conns = Scripted::default();
        let mut f = FlowDriver::from_parts(plan(download(1), ms(20), None), conns);
        assert_eq!(f.poll_timeout(Side::Client), Some(ms(20)));
        assert_eq!(f.poll_timeout(Side::Server), None);
        f.handle_timeout(Side::Client, ms(10));
        assert!(f.connections().opened_at.is_empty());
        f.handle_timeout(Side::Client, ms(20));
        assert_eq!(f.connections().opened_at, [ms(20)]);
        assert_eq!(f.poll_timeout(Side::Client), None, "no second start");
        // A middlebox the transport does not have is never timed or polled.
        f.handle_timeout(Side::Middle, ms(30));
        assert!(f.poll_transmit(Side::Middle, ms(30)).is_none());
        assert!(f
            .connections()
            .drives
            .iter()
            .all(|&(s, _)| s != Side::Middle));
    }

    #[test]
    fn a_download_opens_each_connection_when_the_previous_completes_then_finishes() {
        let conns = Scripted {
            size: 300,
            per_drive: 200,
            ..Default::default()
        };
        let mut f = FlowDriver::from_parts(plan(download(2), ms(0), None), conns);
        f.handle_timeout(Side::Client, ms(0));
        assert!(f.poll_transmit(Side::Client, ms(0)).is_none());
        assert_eq!(f.delivered_bytes(), 200);
        // Input at the client runs its application once, at the next transmission.
        f.handle_datagram(Side::Client, Side::Server, ms(40), vec![1]);
        f.handle_datagram(Side::Client, Side::Server, ms(40), vec![1]);
        assert!(f.poll_transmit(Side::Client, ms(40)).is_none());
        // The first connection completed at 40 ms and the second opened and ran at once.
        assert_eq!(f.connections().opened_at, [ms(0), ms(40)]);
        assert_eq!(f.delivered_bytes(), 500);
        assert!(!f.is_finished());
        // Nothing taken, nothing run.
        f.handle_datagram(Side::Client, Side::Server, ms(50), Vec::new());
        let drives = f.connections().drives.len();
        assert!(f.poll_transmit(Side::Client, ms(50)).is_none());
        assert_eq!(f.connections().drives.len(), drives);
        f.handle_datagram(Side::Client, Side::Server, ms(80), vec![1]);
        assert!(f.poll_transmit(Side::Client, ms(80)).is_none());
        assert!(f.is_finished());
        let r = f.report();
        assert_eq!(r.bytes_delivered, 600);
        assert_eq!(r.last_byte_s, Some(0.08));
        assert_eq!(r.first_packet_s, Some(0.0));
        assert_eq!(r.packets_sent, 7, "the transport's counters");
        assert_eq!(r.connections.len(), 2);
        let second = &r.connections[1];
        assert_eq!(second.started_s, 0.04);
        assert_eq!(second.bytes_delivered, Some(300));
        assert_eq!(second.handshake_s, Some(0.0));
        assert_eq!(second.time_to_first_byte_s, Some(0.0));
        assert!((second.completion_s.unwrap_or(0.0) - 0.04).abs() < 1e-12);
        assert_eq!(r.error, None);
    }

    #[test]
    fn a_bulk_sender_stops_at_its_stop_time_and_the_flow_finishes() {
        let conns = Scripted::default();
        let p = plan(Workload::Bulk { upload: false }, ms(0), Some(ms(500)));
        let mut f = FlowDriver::from_parts(p, conns);
        // The client starts; the server (the data sender) is timed for the stop.
        assert_eq!(f.poll_timeout(Side::Server), Some(ms(500)));
        f.handle_timeout(Side::Client, ms(0));
        f.handle_timeout(Side::Server, ms(499));
        assert!(!f.is_finished());
        f.handle_timeout(Side::Server, ms(500));
        assert_eq!(f.connections().stopped_at, Some(ms(500)));
        assert!(f.is_finished());
        assert_eq!(f.poll_timeout(Side::Server), None);
    }

    #[test]
    fn the_first_failure_is_kept_and_finishes_the_flow() {
        let conns = Scripted {
            fail_on_drive: Some("Client connection lost: timed out"),
            ..Default::default()
        };
        let mut f = FlowDriver::from_parts(plan(download(3), ms(0), None), conns);
        f.handle_timeout(Side::Client, ms(0));
        assert!(f.poll_transmit(Side::Client, ms(0)).is_none());
        assert!(f.is_finished());
        assert_eq!(
            f.report().error.as_deref(),
            Some("Client connection lost: timed out")
        );
    }

    #[test]
    fn an_application_wake_up_is_a_timer_until_it_fires() {
        let mut f = FlowDriver::from_parts(plan(download(1), ms(0), None), Scripted::default());
        f.handle_timeout(Side::Client, ms(0));
        f.parts_mut().1.wake_at(Side::Server, ms(70));
        assert_eq!(f.poll_timeout(Side::Server), Some(ms(70)));
        f.handle_timeout(Side::Server, ms(70));
        assert_eq!(f.poll_timeout(Side::Server), None);
        assert!(f.poll_transmit(Side::Server, ms(70)).is_none());
        assert!(f.connections().drives.contains(&(Side::Server, ms(70))));
    }
}
