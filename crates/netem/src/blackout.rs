//! Timed outages: is a given instant inside one of the configured blackouts?

use std::time::Duration;

use crate::config::Blackout;

impl Blackout {
    /// Whether `t` falls in `[start + n·period, start + n·period + duration)` for some n ≥ 0.
    pub fn contains(&self, t: Duration) -> bool {
        let Some(since) = t.checked_sub(self.start) else {
            return false;
        };
        match self.period.filter(|p| !p.is_zero()) {
            Some(period) => since.as_nanos() % period.as_nanos() < self.duration.as_nanos(),
            None => since < self.duration,
        }
    }
}

/// Whether `t` falls inside any of `blackouts`.
pub fn in_blackout(blackouts: &[Blackout], t: Duration) -> bool {
    blackouts.iter().any(|b| b.contains(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    #[test]
    fn single_window_is_half_open() {
        let b = Blackout {
            start: ms(10),
            duration: ms(5),
            period: None,
        };
        assert!(!b.contains(ms(9)));
        assert!(b.contains(ms(10)));
        assert!(b.contains(ms(14)));
        assert!(!b.contains(ms(15)));
        assert!(!b.contains(ms(1000)));
    }

    #[test]
    fn periodic_window_repeats() {
        // The interop "blackhole": 5 s on, 2 s off → outage of 2 s every 7 s starting at 5 s.
        let b = Blackout {
            start: ms(5000),
            duration: ms(2000),
            period: Some(ms(7000)),
        };
        assert!(!b.contains(ms(4999)));
        assert!(b.contains(ms(6999)));
        assert!(!b.contains(ms(7000)));
        assert!(b.contains(ms(12_000)));
        assert!(!b.contains(ms(14_000)));
        assert!(in_blackout(
            &[
                Blackout {
                    start: ms(0),
                    duration: ms(1),
                    period: None
                },
                b
            ],
            ms(5000)
        ));
        assert!(!in_blackout(&[], ms(5000)));
    }
}
