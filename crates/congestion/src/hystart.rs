//! HyStart++ (RFC 9406): leaves slow start when the per-round minimum RTT rises, through a
//! conservative slow start (CSS) that undoes itself if the rise was jitter.

use std::time::Duration;

const MIN_RTT_THRESH: Duration = Duration::from_millis(4);
const MAX_RTT_THRESH: Duration = Duration::from_millis(16);
const MIN_RTT_DIVISOR: u32 = 8;
const N_RTT_SAMPLE: u32 = 8;
const CSS_GROWTH_DIVISOR: u64 = 4;
const CSS_ROUNDS: u32 = 5;
/// Per-ACK growth cap L in datagrams: infinite, because RFC 9406 only caps unpaced senders and
/// quinn always paces (a TCP model without pacing would want 8).
const L_DATAGRAMS: u64 = u64::MAX;

/// What the end of an ACK frame means for the controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RoundOutcome {
    /// Keep slow-starting (standard or conservative).
    Continue,
    /// CSS lasted CSS_ROUNDS rounds: set ssthresh to the window and enter congestion avoidance.
    ExitSlowStart,
}

/// Conservative slow start in progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Css {
    baseline_min_rtt: Duration,
    rounds: u32,
}

/// HyStart++ round and RTT bookkeeping for one slow start.
#[derive(Debug, Clone, Default)]
pub(crate) struct HyStart {
    /// The round ends when this packet number is acknowledged; `None`: at the next ACK frame.
    window_end: Option<u64>,
    last_sent: Option<u64>,
    last_round_min_rtt: Option<Duration>,
    current_round_min_rtt: Option<Duration>,
    rtt_sample_count: u32,
    css: Option<Css>,
}

impl HyStart {
    /// Records the newest packet number sent (rounds end at the last one sent when they start).
    pub(crate) fn on_sent(&mut self, pn: u64) {
        self.last_sent = Some(self.last_sent.map_or(pn, |last| last.max(pn)));
    }

    /// Takes one per-ACK RTT sample and switches between standard and conservative slow start.
    pub(crate) fn on_rtt_sample(&mut self, rtt: Duration) {
        let current = self.current_round_min_rtt.map_or(rtt, |min| min.min(rtt));
        self.current_round_min_rtt = Some(current);
        self.rtt_sample_count = self.rtt_sample_count.saturating_add(1);
        if self.rtt_sample_count < N_RTT_SAMPLE {
            return;
        }
        match self.css {
            None => {
                let Some(last) = self.last_round_min_rtt else {
                    return;
                };
                let thresh = (last / MIN_RTT_DIVISOR).clamp(MIN_RTT_THRESH, MAX_RTT_THRESH);
                if current >= last.saturating_add(thresh) {
                    self.css = Some(Css {
                        baseline_min_rtt: current,
                        rounds: 0,
                    });
                }
            }
            // The RTT fell back below the level that triggered CSS: the rise was spurious.
            Some(css) if current < css.baseline_min_rtt => self.css = None,
            Some(_) => {}
        }
    }

    /// Handles the end of an ACK frame; a round ends once its last packet is acknowledged.
    pub(crate) fn on_end_acks(&mut self, largest_acked: Option<u64>) -> RoundOutcome {
        let Some(largest) = largest_acked else {
            return RoundOutcome::Continue;
        };
        if self.window_end.is_some_and(|end| largest < end) {
            return RoundOutcome::Continue;
        }
        let mut outcome = RoundOutcome::Continue;
        if let Some(css) = self.css.as_mut() {
            // The round in which CSS started counts as one of its rounds (RFC 9406 §4.3).
            css.rounds += 1;
            if css.rounds >= CSS_ROUNDS {
                outcome = RoundOutcome::ExitSlowStart;
            }
        }
        self.last_round_min_rtt = self.current_round_min_rtt.take();
        self.rtt_sample_count = 0;
        self.window_end = self.last_sent;
        outcome
    }

    /// Window increase for `acked` bytes of datagrams of `mds` bytes.
    pub(crate) fn increase(&self, acked: u64, mds: u64) -> u64 {
        let capped = acked.min(L_DATAGRAMS.saturating_mul(mds));
        if self.css.is_some() {
            capped / CSS_GROWTH_DIVISOR
        } else {
            capped
        }
    }

    /// True while in conservative slow start.
    #[cfg(test)]
    pub(crate) fn in_css(&self) -> bool {
        self.css.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// Feeds one round of `n` samples of `rtt` acknowledging packets up to `pn`.
    fn round(h: &mut HyStart, first_pn: u64, n: u64, rtt: Duration) -> RoundOutcome {
        for pn in first_pn..first_pn + n {
            h.on_sent(pn);
        }
        for _ in 0..n {
            h.on_rtt_sample(rtt);
        }
        h.on_end_acks(Some(first_pn + n - 1))
    }

    #[test]
    fn threshold_is_an_eighth_clamped_to_4_and_16_ms() {
        for (base, below, above) in [(20, 23, 24), (100, 112, 113), (400, 415, 416)] {
            let mut h = HyStart::default();
            round(&mut h, 0, 8, base * MS);
            round(&mut h, 8, 8, below * MS);
            assert!(!h.in_css(), "base {base} below {below}");
            let mut h = HyStart::default();
            round(&mut h, 0, 8, base * MS);
            round(&mut h, 8, 8, above * MS + MS / 2);
            assert!(h.in_css(), "base {base} above {above}");
        }
    }

    #[test]
    fn needs_eight_samples_per_round() {
        let mut h = HyStart::default();
        round(&mut h, 0, 8, 100 * MS);
        round(&mut h, 8, 7, 200 * MS);
        assert!(!h.in_css());
    }

    #[test]
    fn round_ends_only_when_its_last_packet_is_acked() {
        let mut h = HyStart::default();
        for pn in 0..10 {
            h.on_sent(pn);
        }
        assert_eq!(h.on_end_acks(Some(0)), RoundOutcome::Continue); // first frame ends round 0
        for _ in 0..8 {
            h.on_rtt_sample(100 * MS);
        }
        h.on_end_acks(Some(5));
        assert_eq!(
            h.current_round_min_rtt,
            Some(100 * MS),
            "round still open before pn 9"
        );
        h.on_end_acks(Some(9));
        assert_eq!(h.last_round_min_rtt, Some(100 * MS));
        assert_eq!(h.current_round_min_rtt, None);
    }

    #[test]
    fn css_divides_growth_and_exits_after_five_rounds() {
        let mut h = HyStart::default();
        assert_eq!(h.increase(1200, 1200), 1200);
        round(&mut h, 0, 10, 100 * MS);
        assert_eq!(round(&mut h, 10, 10, 120 * MS), RoundOutcome::Continue);
        assert!(h.in_css());
        assert_eq!(h.increase(1200, 1200), 300);
        let mut pn = 20;
        for _ in 0..3 {
            assert_eq!(round(&mut h, pn, 10, 120 * MS), RoundOutcome::Continue);
            pn += 10;
        }
        assert_eq!(round(&mut h, pn, 10, 120 * MS), RoundOutcome::ExitSlowStart);
    }
}
