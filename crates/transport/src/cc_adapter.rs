//! Plugs quiclab's congestion controllers (crate `congestion`) into quinn-proto, and lets the simulator
//! observe any controller (ours or quinn's) for metrics.

use std::any::Any;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use choice::{choice, Choice};
use congestion::config::{CcConfig, CommonCcConfig, RenoCounting};
use congestion::{CongestionController, RttSample};
use quinn_proto::congestion::{Controller, ControllerFactory, ControllerMetrics};
use quinn_proto::RttEstimator;
use serde::{Deserialize, Serialize};
use std::time::Instant;

use crate::clock::to_instant;

/// Congestion control of a flow: one of ours (any transport), or one of quinn's built-in
/// controllers (QUIC only) for comparison.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum CcChoice {
    /// One of quiclab's controllers (crate `congestion`).
    Ours(CcConfig),
    /// quinn's built-in NewReno.
    QuinnNewReno,
    /// quinn's built-in CUBIC.
    QuinnCubic,
    /// quinn's built-in BBR (experimental in quinn).
    QuinnBbr,
    /// quiche's BBRv2 (its `Bbr2Gcongestion`, ported from Google's QUIC), on the `quiche`
    /// stack only.
    QuicheBbr2 {
        /// Initial congestion window in packets.
        initial_window_packets: u64,
    },
}

choice! {
    /// quiclab's own congestion controllers (crate `congestion`), on every stack.
    pub enum OurCc {
        /// NewReno with the stack's byte counting (`flow.reno_profile`).
        NewReno = "newreno",
        /// NewReno with RFC 9002's per-ACK increase.
        NewRenoApprox = "newreno-approx",
        /// CUBIC with HyStart++ (or Linux's HyStart).
        Cubic = "cubic",
        /// No congestion control (a fixed window).
        None = "none",
        /// DCTCP (RFC 8257, Linux's `tcp_dctcp.c`): ECN-driven, ECT(0).
        Dctcp = "dctcp",
        /// TCP Prague (the ICCRG draft, L4S): ECN-driven, ECT(1), RTT-independent, paced.
        Prague = "prague",
        /// BBR v1 (Linux's `tcp_bbr.c`): model-based, paced; `stack = "tcp"` only.
        Bbr = "bbr",
        /// BBRv3 (the IETF CCWG draft): model-based, paced, loss-bounded; `stack = "tcp"`
        /// only.
        Bbr3 = "bbr3",
    }
}

/// The IP codepoint of an ECN-capable packet of a sender running `cc`: the one mapping of
/// the controller's choice ([`CcConfig::ect`]) onto the wire, for every stack.
pub fn ect_codepoint(cc: &CcConfig) -> netem::Ecn {
    match cc.ect() {
        congestion::Ect::Ect0 => netem::Ecn::Ect0,
        congestion::Ect::Ect1 => netem::Ecn::Ect1,
    }
}

choice! {
    /// quinn's built-in controllers, on the `quic` stack only.
    pub enum QuinnCc {
        /// quinn's NewReno.
        NewReno = "quinn-newreno",
        /// quinn's CUBIC.
        Cubic = "quinn-cubic",
        /// quinn's BBR (experimental in quinn).
        Bbr = "quinn-bbr",
    }
}

choice! {
    /// quiche's own controllers without a counterpart among ours, on the `quiche` stack only
    /// (quiche's Reno and CUBIC are `cc = "newreno"` and `"cubic"`).
    pub enum QuicheCc {
        /// quiche's BBRv2 (gcongestion).
        Bbr2 = "quiche-bbr2",
    }
}

const OURS_QUINN: usize = <OurCc as Choice>::NAMES.len() + <QuinnCc as Choice>::NAMES.len();
const OURS_QUINN_ARRAY: [&str; OURS_QUINN] =
    choice::concat(<OurCc as Choice>::NAMES, <QuinnCc as Choice>::NAMES);
const CC_COUNT: usize = OURS_QUINN + <QuicheCc as Choice>::NAMES.len();
const CC_ARRAY: [&str; CC_COUNT] = choice::concat(&OURS_QUINN_ARRAY, <QuicheCc as Choice>::NAMES);

/// Values of `flow.cc`: ours, then quinn's, then quiche's.
pub const CC_NAMES: &[&str] = &CC_ARRAY;

impl CcChoice {
    /// The controller's `flow.cc` name.
    pub fn name(&self) -> &'static str {
        let ours = match self {
            CcChoice::QuinnNewReno => return QuinnCc::NewReno.name(),
            CcChoice::QuinnCubic => return QuinnCc::Cubic.name(),
            CcChoice::QuinnBbr => return QuinnCc::Bbr.name(),
            CcChoice::QuicheBbr2 { .. } => return QuicheCc::Bbr2.name(),
            CcChoice::Ours(CcConfig::None) => OurCc::None,
            CcChoice::Ours(CcConfig::Cubic { .. }) => OurCc::Cubic,
            CcChoice::Ours(CcConfig::Dctcp { .. }) => OurCc::Dctcp,
            CcChoice::Ours(CcConfig::Prague { .. }) => OurCc::Prague,
            CcChoice::Ours(CcConfig::Bbr { .. }) => OurCc::Bbr,
            CcChoice::Ours(CcConfig::Bbr3 { .. }) => OurCc::Bbr3,
            // `reno_profile` tells Linux's counting from RFC 9002's; both are `newreno`.
            CcChoice::Ours(CcConfig::NewReno { counting, .. }) => match counting {
                RenoCounting::Exact | RenoCounting::Linux | RenoCounting::Inet => OurCc::NewReno,
                RenoCounting::Approximate => OurCc::NewRenoApprox,
            },
        };
        ours.name()
    }

    /// quinn's built-in controller `q`.
    pub fn quinn(q: QuinnCc) -> CcChoice {
        match q {
            QuinnCc::NewReno => CcChoice::QuinnNewReno,
            QuinnCc::Cubic => CcChoice::QuinnCubic,
            QuinnCc::Bbr => CcChoice::QuinnBbr,
        }
    }
}

impl Default for CcChoice {
    /// NewReno with exact byte counting, an initial window of 10 packets, β = 0.5 and a
    /// minimum window of 2 packets (the scenario format's `cc = "newreno"`).
    fn default() -> Self {
        CcChoice::Ours(CcConfig::NewReno {
            counting: RenoCounting::Exact,
            common: CommonCcConfig {
                initial_window_packets: 10,
                loss_reduction_factor: 0.5,
                minimum_window_packets: 2,
            },
        })
    }
}

/// Values the controller exposes to the simulator's samplers (quinn keeps in-flight private).
#[derive(Debug, Default)]
pub struct CcProbe {
    in_flight: AtomicU64,
    ssthresh: AtomicU64,
    /// Virtual time of the first congestion event in ns + 1 (0 = none yet).
    first_congestion: AtomicU64,
    /// Congestion events in answer to a rise of the peer's ECN-CE count.
    ce_events: AtomicU64,
}

impl CcProbe {
    /// Bytes in flight reported at the last ACK batch.
    pub fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// When the first congestion event happened (end of the first slow start).
    pub fn first_congestion(&self) -> Option<std::time::Duration> {
        match self.first_congestion.load(Ordering::Relaxed) {
            0 => None,
            n => Some(std::time::Duration::from_nanos(n - 1)),
        }
    }

    /// Slow-start threshold (u64::MAX while infinite).
    pub fn ssthresh(&self) -> u64 {
        self.ssthresh.load(Ordering::Relaxed)
    }

    /// Congestion events quinn signalled for ECN-CE rather than loss.
    pub fn ce_events(&self) -> u64 {
        self.ce_events.load(Ordering::Relaxed)
    }
}

/// Builds the chosen controller for each new connection, wrapped in a probe.
pub struct Factory {
    choice: CcChoice,
    probe: Arc<CcProbe>,
    /// The instant our controllers count their time from (`cc` takes durations since a start).
    epoch: Instant,
}

impl Factory {
    /// A factory for `choice` reporting through `probe`, in the simulator's virtual time.
    pub fn new(choice: CcChoice, probe: Arc<CcProbe>) -> Arc<Self> {
        Arc::new(Factory {
            choice,
            probe,
            epoch: to_instant(std::time::Duration::ZERO),
        })
    }

    /// A factory for real time (the emulator's endpoints): quinn passes `Instant::now()`-based
    /// instants, which lie before the simulator's virtual origin and would all map to time
    /// zero there, so our controllers count from the moment the factory is made instead.
    pub fn real_time(choice: CcChoice, probe: Arc<CcProbe>) -> Arc<Self> {
        Arc::new(Factory {
            choice,
            probe,
            epoch: Instant::now(),
        })
    }
}

impl ControllerFactory for Factory {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        use quinn_proto::congestion::{BbrConfig, CubicConfig, NewRenoConfig};
        let quinn = |f: Arc<dyn ControllerFactory>| Inner::Quinn(f.build(now, current_mtu));
        let epoch = self.epoch;
        let inner = match self.choice {
            CcChoice::Ours(config) => Inner::Ours(congestion::build(
                &config,
                u64::from(current_mtu),
                now.saturating_duration_since(epoch),
            )),
            CcChoice::QuinnNewReno => quinn(Arc::new(NewRenoConfig::default())),
            CcChoice::QuinnCubic => quinn(Arc::new(CubicConfig::default())),
            // quiche's controller runs inside quiche; the scenario resolver refuses it on
            // quinn, which would otherwise run its own BBR.
            CcChoice::QuinnBbr | CcChoice::QuicheBbr2 { .. } => {
                quinn(Arc::new(BbrConfig::default()))
            }
        };
        self.probe.ssthresh.store(u64::MAX, Ordering::Relaxed);
        Box::new(Probed {
            inner,
            probe: self.probe.clone(),
            epoch,
        })
    }
}

/// The controller behind a [`Probed`]: one of ours (a `cc` controller, whose clock is the
/// virtual time and whose RTT input is a sample) or one of quinn's.
enum Inner {
    Ours(Box<dyn CongestionController>),
    Quinn(Box<dyn Controller>),
}

impl Inner {
    fn ssthresh(&self) -> Option<u64> {
        match self {
            Inner::Ours(c) => c.ssthresh(),
            Inner::Quinn(c) => c.metrics().ssthresh,
        }
    }
}

/// Any controller seen through quinn's trait, recording what quinn tells it.
struct Probed {
    inner: Inner,
    probe: Arc<CcProbe>,
    /// Origin of the durations our controllers see (see [`Factory`]).
    epoch: Instant,
}

/// `i` as our controllers' time: the duration since the factory's `epoch`.
fn since(epoch: Instant, i: Instant) -> std::time::Duration {
    i.saturating_duration_since(epoch)
}

impl Controller for Probed {
    fn on_sent(&mut self, now: Instant, bytes: u64, last_packet_number: u64) {
        let epoch = self.epoch;
        match &mut self.inner {
            Inner::Ours(c) => c.on_sent(since(epoch, now), bytes, last_packet_number),
            Inner::Quinn(c) => c.on_sent(now, bytes, last_packet_number),
        }
    }

    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: &RttEstimator,
    ) {
        let epoch = self.epoch;
        match &mut self.inner {
            Inner::Ours(c) => {
                // quinn keeps its latest sample private; the sample for this packet is exactly
                // now − sent.
                let sample = RttSample {
                    latest: now.saturating_duration_since(sent),
                    smoothed: rtt.get(),
                    min: rtt.min(),
                };
                c.on_ack(
                    since(epoch, now),
                    since(epoch, sent),
                    bytes,
                    app_limited,
                    &sample,
                )
            }
            Inner::Quinn(c) => c.on_ack(now, sent, bytes, app_limited, rtt),
        }
    }

    fn on_end_acks(
        &mut self,
        now: Instant,
        in_flight: u64,
        app_limited: bool,
        largest: Option<u64>,
    ) {
        let epoch = self.epoch;
        self.probe.in_flight.store(in_flight, Ordering::Relaxed);
        match &mut self.inner {
            Inner::Ours(c) => c.on_end_acks(since(epoch, now), in_flight, app_limited, largest),
            Inner::Quinn(c) => c.on_end_acks(now, in_flight, app_limited, largest),
        }
        let ss = self.inner.ssthresh().unwrap_or(u64::MAX);
        self.probe.ssthresh.store(ss, Ordering::Relaxed);
    }

    fn on_congestion_event(
        &mut self,
        now: Instant,
        sent: Instant,
        persistent: bool,
        lost_bytes: u64,
    ) {
        let epoch = self.epoch;
        match &mut self.inner {
            Inner::Ours(c) => c.on_congestion_event(
                since(epoch, now),
                since(epoch, sent),
                persistent,
                lost_bytes,
            ),
            Inner::Quinn(c) => c.on_congestion_event(now, sent, persistent, lost_bytes),
        }
        // quinn reports a rise of the ECN-CE count with no lost bytes (every loss event
        // carries the lost packets' sizes).
        if lost_bytes == 0 && !persistent {
            self.probe.ce_events.fetch_add(1, Ordering::Relaxed);
        }
        let t = since(epoch, now).as_nanos() as u64 + 1;
        let _ = self.probe.first_congestion.compare_exchange(
            0,
            t,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
        let ss = self.inner.ssthresh().unwrap_or(u64::MAX);
        self.probe.ssthresh.store(ss, Ordering::Relaxed);
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        match &mut self.inner {
            Inner::Ours(c) => c.on_mtu_update(u64::from(new_mtu)),
            Inner::Quinn(c) => c.on_mtu_update(new_mtu),
        }
    }

    fn window(&self) -> u64 {
        match &self.inner {
            Inner::Ours(c) => c.window(),
            Inner::Quinn(c) => c.window(),
        }
    }

    fn metrics(&self) -> ControllerMetrics {
        match &self.inner {
            Inner::Ours(c) => {
                let mut m = ControllerMetrics::default();
                m.congestion_window = c.window();
                m.ssthresh = c.ssthresh();
                m
            }
            Inner::Quinn(c) => c.metrics(),
        }
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        let inner = match &self.inner {
            Inner::Ours(c) => Inner::Ours(c.box_clone()),
            Inner::Quinn(c) => Inner::Quinn(c.clone_box()),
        };
        Box::new(Probed {
            inner,
            probe: self.probe.clone(),
            epoch: self.epoch,
        })
    }

    fn initial_window(&self) -> u64 {
        match &self.inner {
            Inner::Ours(c) => c.initial_window(),
            Inner::Quinn(c) => c.initial_window(),
        }
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn cubic() -> CcChoice {
        CcChoice::Ours(CcConfig::Cubic {
            hystart: true,
            profile: congestion::config::CubicProfile::Rfc9438,
            common: CommonCcConfig {
                initial_window_packets: 10,
                loss_reduction_factor: 0.7,
                minimum_window_packets: 2,
            },
        })
    }

    /// The same event 2 s after the controller was built reads as 2 s in both clocks: with the
    /// simulator's mapping, real instants (before the virtual origin) all read as time zero.
    #[test]
    fn real_instants_reach_our_controllers_as_elapsed_time() {
        let probe = Arc::new(CcProbe::default());
        let factory = Factory::real_time(cubic(), probe.clone());
        let start = Instant::now();
        let mut c = factory.build(start, 1200);
        c.on_sent(start, 1200, 0);
        let later = start + Duration::from_secs(2);
        c.on_congestion_event(later, start, false, 1200);
        let t = probe.first_congestion().expect("a congestion event");
        assert!(
            t >= Duration::from_secs(2) && t < Duration::from_secs(3),
            "{t:?}"
        );

        let probe = Arc::new(CcProbe::default());
        let v0 = to_instant(Duration::from_secs(5));
        let mut c = Factory::new(cubic(), probe.clone()).build(v0, 1200);
        c.on_congestion_event(v0 + Duration::from_secs(2), v0, false, 1200);
        assert_eq!(probe.first_congestion(), Some(Duration::from_secs(7)));
    }
}
