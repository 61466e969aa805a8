//! Virtual time as seen by quinn-proto and rustls.
//!
//! quinn-proto takes `now: Instant` everywhere and rustls asks a `TimeProvider` for wall-clock
//! time (certificate validity, ticket ages). In a simulation both must come from the virtual
//! clock, or results would depend on when and where the run happened.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rustls::pki_types::UnixTime;

/// Offset added to the process-wide base instant so quinn can subtract durations from early
/// virtual times without underflowing the monotonic clock.
const INSTANT_HEADROOM: Duration = Duration::from_secs(3600);

/// Virtual wall-clock epoch: 2027-01-01T00:00:00Z (inside the test certificate's validity).
pub const VIRTUAL_EPOCH_UNIX_SECS: u64 = 1_798_761_600;

fn base_instant() -> Instant {
    static BASE: OnceLock<Instant> = OnceLock::new();
    *BASE.get_or_init(Instant::now)
}

/// The `Instant` of virtual time zero, computed once (the conversions run several times per
/// datagram; one `Instant` addition fewer each).
fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(|| base_instant() + INSTANT_HEADROOM)
}

/// Converts virtual time since the start of a run into the `Instant` quinn expects.
pub fn to_instant(t: Duration) -> Instant {
    origin() + t
}

/// Converts an `Instant` produced by [`to_instant`] (or derived from one) back to virtual time.
pub fn from_instant(i: Instant) -> Duration {
    i.saturating_duration_since(origin())
}

/// The current virtual time of one run, shared with rustls and quinn's time sources.
#[derive(Debug, Clone, Default)]
pub struct VirtualClock(Arc<AtomicU64>);

impl VirtualClock {
    /// A clock at time zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Advances the clock; the engine calls this before handing `now` to any endpoint.
    pub fn set(&self, now: Duration) {
        self.0.store(now.as_nanos() as u64, Ordering::Relaxed);
    }

    /// Virtual time since the start of the run.
    pub fn now(&self) -> Duration {
        Duration::from_nanos(self.0.load(Ordering::Relaxed))
    }

    /// Virtual wall-clock time.
    pub fn system_time(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(VIRTUAL_EPOCH_UNIX_SECS) + self.now()
    }
}

impl rustls::time_provider::TimeProvider for VirtualClock {
    fn current_time(&self) -> Option<UnixTime> {
        Some(UnixTime::since_unix_epoch(
            Duration::from_secs(VIRTUAL_EPOCH_UNIX_SECS) + self.now(),
        ))
    }
}

impl quinn_proto::TimeSource for VirtualClock {
    fn now(&self) -> SystemTime {
        self.system_time()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instant_round_trip_is_exact() {
        let t = Duration::from_nanos(123_456_789_012);
        assert_eq!(from_instant(to_instant(t)), t);
    }

    #[test]
    fn clock_drives_wall_time() {
        let c = VirtualClock::new();
        c.set(Duration::from_secs(5));
        let unix = c.system_time().duration_since(UNIX_EPOCH).unwrap();
        assert_eq!(unix, Duration::from_secs(VIRTUAL_EPOCH_UNIX_SECS + 5));
    }
}
