//! Plugs quiclab's congestion controllers (crate `cc`) into quinn-proto, and lets the simulator
//! observe any controller (ours or quinn's) for metrics.

use std::any::Any;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use cc::config::{CcConfig, CommonCcConfig, RenoCounting};
use cc::{CongestionController, RttSample};
use quinn_proto::congestion::{Controller, ControllerFactory, ControllerMetrics};
use quinn_proto::RttEstimator;
use serde::{Deserialize, Serialize};
use std::time::Instant;

use crate::clock::from_instant;

/// Congestion control of a flow: one of ours (any transport), or one of quinn's built-in
/// controllers (QUIC only) for comparison.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum CcChoice {
    /// One of quiclab's controllers (crate `cc`).
    Ours(CcConfig),
    /// quinn's built-in NewReno.
    QuinnNewReno,
    /// quinn's built-in CUBIC.
    QuinnCubic,
    /// quinn's built-in BBR (experimental in quinn).
    QuinnBbr,
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
}

/// Builds the chosen controller for each new connection, wrapped in a probe.
pub struct Factory {
    choice: CcChoice,
    probe: Arc<CcProbe>,
}

impl Factory {
    /// A factory for `choice` reporting through `probe`.
    pub fn new(choice: CcChoice, probe: Arc<CcProbe>) -> Arc<Self> {
        Arc::new(Factory { choice, probe })
    }
}

impl ControllerFactory for Factory {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        use quinn_proto::congestion::{BbrConfig, CubicConfig, NewRenoConfig};
        let quinn: Arc<dyn ControllerFactory> = match self.choice {
            CcChoice::Ours(config) => Arc::new(OursFactory(config)),
            CcChoice::QuinnNewReno => Arc::new(NewRenoConfig::default()),
            CcChoice::QuinnCubic => Arc::new(CubicConfig::default()),
            CcChoice::QuinnBbr => Arc::new(BbrConfig::default()),
        };
        let inner = quinn.build(now, current_mtu);
        self.probe.ssthresh.store(u64::MAX, Ordering::Relaxed);
        Box::new(Probed {
            inner,
            probe: self.probe.clone(),
        })
    }
}

/// Builds one of our controllers the way quinn builds its own, so every choice is one factory.
struct OursFactory(CcConfig);

impl ControllerFactory for OursFactory {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        Box::new(Ours {
            inner: cc::build(&self.0, u64::from(current_mtu), from_instant(now)),
        })
    }
}

/// Forwards to any controller while recording what quinn tells it.
struct Probed {
    inner: Box<dyn Controller>,
    probe: Arc<CcProbe>,
}

impl Controller for Probed {
    fn on_sent(&mut self, now: Instant, bytes: u64, last_packet_number: u64) {
        self.inner.on_sent(now, bytes, last_packet_number)
    }

    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: &RttEstimator,
    ) {
        self.inner.on_ack(now, sent, bytes, app_limited, rtt)
    }

    fn on_end_acks(
        &mut self,
        now: Instant,
        in_flight: u64,
        app_limited: bool,
        largest: Option<u64>,
    ) {
        self.probe.in_flight.store(in_flight, Ordering::Relaxed);
        self.inner.on_end_acks(now, in_flight, app_limited, largest);
        let ss = self.inner.metrics().ssthresh.unwrap_or(u64::MAX);
        self.probe.ssthresh.store(ss, Ordering::Relaxed);
    }

    fn on_congestion_event(
        &mut self,
        now: Instant,
        sent: Instant,
        persistent: bool,
        lost_bytes: u64,
    ) {
        self.inner
            .on_congestion_event(now, sent, persistent, lost_bytes);
        let t = from_instant(now).as_nanos() as u64 + 1;
        let _ = self.probe.first_congestion.compare_exchange(
            0,
            t,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
        let ss = self.inner.metrics().ssthresh.unwrap_or(u64::MAX);
        self.probe.ssthresh.store(ss, Ordering::Relaxed);
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.inner.on_mtu_update(new_mtu)
    }

    fn window(&self) -> u64 {
        self.inner.window()
    }

    fn metrics(&self) -> ControllerMetrics {
        self.inner.metrics()
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(Probed {
            inner: self.inner.clone_box(),
            probe: self.probe.clone(),
        })
    }

    fn initial_window(&self) -> u64 {
        self.inner.initial_window()
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

/// A `cc` controller seen through quinn's trait.
struct Ours {
    inner: Box<dyn CongestionController>,
}

impl Controller for Ours {
    fn on_sent(&mut self, now: Instant, bytes: u64, last_packet_number: u64) {
        self.inner
            .on_sent(from_instant(now), bytes, last_packet_number)
    }

    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: &RttEstimator,
    ) {
        // quinn keeps its latest sample private; the sample for this packet is exactly now − sent.
        let sample = RttSample {
            latest: now.saturating_duration_since(sent),
            smoothed: rtt.get(),
            min: rtt.min(),
        };
        self.inner.on_ack(
            from_instant(now),
            from_instant(sent),
            bytes,
            app_limited,
            &sample,
        )
    }

    fn on_end_acks(
        &mut self,
        now: Instant,
        in_flight: u64,
        app_limited: bool,
        largest: Option<u64>,
    ) {
        self.inner
            .on_end_acks(from_instant(now), in_flight, app_limited, largest)
    }

    fn on_congestion_event(
        &mut self,
        now: Instant,
        sent: Instant,
        persistent: bool,
        lost_bytes: u64,
    ) {
        self.inner.on_congestion_event(
            from_instant(now),
            from_instant(sent),
            persistent,
            lost_bytes,
        )
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.inner.on_mtu_update(u64::from(new_mtu))
    }

    fn window(&self) -> u64 {
        self.inner.window()
    }

    fn metrics(&self) -> ControllerMetrics {
        let mut m = ControllerMetrics::default();
        m.congestion_window = self.inner.window();
        m.ssthresh = self.inner.ssthresh();
        m
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(Ours {
            inner: self.inner.box_clone(),
        })
    }

    fn initial_window(&self) -> u64 {
        self.inner.initial_window()
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}
