//! RFC 9002's RTT estimator (§5), loss detection (§6.1: packet threshold 3, time threshold
//! 9/8 · max(latest RTT, smoothed RTT), 1 ms granularity), the probe timeout (§6.2: smoothed
//! RTT + max(4 · rttvar, granularity) + max_ack_delay, doubled per consecutive PTO) and
//! persistent congestion (§7.6).

use std::time::Duration;

use super::space::SentLog;

/// kPacketThreshold.
pub(crate) const PACKET_THRESHOLD: u64 = 3;
/// kGranularity.
pub(crate) const GRANULARITY: Duration = Duration::from_millis(1);
/// kPersistentCongestionThreshold.
pub(crate) const PERSISTENT_CONGESTION_THRESHOLD: u32 = 3;

/// RFC 9002 §5 RTT estimator.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rtt {
    /// Latest sample.
    pub latest: Duration,
    /// Smoothed RTT.
    pub smoothed: Duration,
    /// RTT variation.
    pub var: Duration,
    /// Minimum over the connection.
    pub min: Duration,
    /// Whether a sample was taken.
    pub sampled: bool,
    /// When the first sample was taken (persistent congestion only counts packets sent after).
    pub first_sample_at: Option<Duration>,
    /// `pto(0)` in nanoseconds, kept current (the timer is recomputed after every event).
    pub pto_ns: u64,
}

impl Rtt {
    /// Before any sample: smoothed = initial, var = initial / 2 (§6.2.2).
    pub(crate) fn new(initial: Duration) -> Rtt {
        let mut r = Rtt {
            latest: initial,
            smoothed: initial,
            var: initial / 2,
            min: initial,
            sampled: false,
            first_sample_at: None,
            pto_ns: 0,
        };
        r.pto_ns = r.pto_base_ns();
        r
    }

    fn pto_base_ns(&self) -> u64 {
        u64::try_from(self.pto(Duration::ZERO).as_nanos()).unwrap_or(u64::MAX)
    }

    /// A sample `latest` with the peer's reported `ack_delay` (already capped by the caller
    /// once the handshake is confirmed), at `now`.
    pub(crate) fn update(&mut self, latest: Duration, ack_delay: Duration, now: Duration) {
        self.latest = latest;
        if !self.sampled {
            self.sampled = true;
            self.first_sample_at = Some(now);
            self.min = latest;
            self.smoothed = latest;
            self.var = latest / 2;
            self.pto_ns = self.pto_base_ns();
            return;
        }
        self.min = self.min.min(latest);
        // Subtract the ACK delay only if that leaves at least min_rtt.
        let adjusted = if latest >= self.min + ack_delay {
            latest - ack_delay
        } else {
            latest
        };
        let diff = self.smoothed.abs_diff(adjusted);
        self.var = (self.var * 3 + diff) / 4;
        self.smoothed = (self.smoothed * 7 + adjusted) / 8;
        self.pto_ns = self.pto_base_ns();
    }

    /// PTO period without backoff; `max_ack_delay` is zero for Initial and Handshake.
    pub(crate) fn pto(&self, max_ack_delay: Duration) -> Duration {
        self.smoothed + (self.var * 4).max(GRANULARITY) + max_ack_delay
    }

    /// The time threshold of loss detection.
    pub(crate) fn loss_delay(&self) -> Duration {
        (self.latest.max(self.smoothed) * 9 / 8).max(GRANULARITY)
    }
}

/// What one loss-detection pass found.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Lost {
    /// Packets declared lost.
    pub packets: u64,
    /// Their in-flight bytes.
    pub bytes: u64,
    /// Ack-eliciting packets among them.
    pub ack_eliciting: u32,
    /// Send time of the newest lost packet.
    pub newest_sent: Option<Duration>,
    /// Earliest time a not-yet-lost packet will cross the time threshold.
    pub loss_time: Option<Duration>,
    /// A span of lost ack-eliciting packets long enough for persistent congestion.
    pub persistent: bool,
}

/// Declares lost every outstanding packet below `largest_acked` that is 3 packets or 9/8 RTT
/// behind, calling `on_lost(log, pn, by_count)` for each (`by_count`: 3 packets behind, else
/// only too old) (the caller re-queues its frames, then the log is
/// trimmed). `pc_period`: the persistent-congestion duration (None: not applicable yet).
pub(crate) fn detect_lost(
    log: &mut SentLog,
    largest_acked: u64,
    rtt: &Rtt,
    now: Duration,
    pc_period: Option<Duration>,
    mut on_lost: impl FnMut(&SentLog, u64, bool),
) -> Lost {
    let delay = rtt.loss_delay();
    let mut out = Lost::default();
    let lost_send_time = now.checked_sub(delay);
    // Persistent congestion: a run of lost ack-eliciting packets with no acknowledged packet
    // between them, all sent after the first RTT sample.
    let mut run: Option<(Duration, Duration)> = None;
    let base = log.base();
    let n = log.len();
    for i in 0..n {
        let pn = base + i as u64;
        if pn >= largest_acked {
            break;
        }
        let p = *log.at(i);
        if !p.outstanding {
            // An acknowledged packet breaks a run; one declared lost earlier does not.
            if p.acked {
                run = None;
            }
            continue;
        }
        let by_count = largest_acked >= pn + PACKET_THRESHOLD;
        let by_time = lost_send_time.is_some_and(|t| p.time <= t);
        if !(by_count || by_time) {
            let at = p.time + delay;
            out.loss_time = Some(out.loss_time.map_or(at, |l: Duration| l.min(at)));
            continue;
        }
        on_lost(log, pn, by_count);
        if let Some(rec) = log.get_mut(pn) {
            rec.outstanding = false;
        }
        out.packets += 1;
        if p.in_flight {
            out.bytes += u64::from(p.size);
        }
        out.newest_sent = Some(out.newest_sent.map_or(p.time, |t: Duration| t.max(p.time)));
        if p.ack_eliciting {
            out.ack_eliciting += 1;
            let after_sample = rtt.first_sample_at.is_some_and(|s| p.time > s);
            if after_sample {
                let (start, _) = run.unwrap_or((p.time, p.time));
                run = Some((start, p.time));
                if let (Some(period), Some((s, e))) = (pc_period, run) {
                    if e - s > period {
                        out.persistent = true;
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rtt_follows_rfc9002() {
        let mut r = Rtt::new(Duration::from_millis(333));
        assert_eq!(r.pto(Duration::ZERO), Duration::from_millis(333 + 666));
        r.update(
            Duration::from_millis(100),
            Duration::ZERO,
            Duration::from_millis(100),
        );
        assert_eq!(r.smoothed, Duration::from_millis(100));
        assert_eq!(r.var, Duration::from_millis(50));
        r.update(
            Duration::from_millis(120),
            Duration::from_millis(10),
            Duration::ZERO,
        );
        // adjusted = 110: srtt = (700 + 110) / 8, var = (150 + 10) / 4.
        assert_eq!(r.smoothed, Duration::from_micros(101_250));
        assert_eq!(r.var, Duration::from_millis(40));
        assert_eq!(r.loss_delay(), Duration::from_millis(135));
    }

    #[test]
    fn packet_and_time_thresholds() {
        let mut log = SentLog::default();
        for k in 0..10u64 {
            log.begin();
            log.commit(Duration::from_millis(k), 1000, true, true, u64::MAX);
        }
        let mut r = Rtt::new(Duration::from_millis(100));
        r.update(Duration::from_millis(100), Duration::ZERO, Duration::ZERO);
        // Packets 5.. acknowledged; 0, 1 are 3+ behind 5 (lost); 2..4 wait for the timer.
        for pn in 5..10 {
            log.get_mut(pn).unwrap().outstanding = false;
        }
        let mut seen = Vec::new();
        let l = detect_lost(
            &mut log,
            9,
            &r,
            Duration::from_millis(20),
            None,
            |_, pn, _| seen.push(pn),
        );
        assert_eq!(seen, vec![0, 1, 2, 3, 4]);
        assert_eq!(
            l.packets, 5,
            "9 − 3 ≥ pn for pn ≤ 6, all of 0..=4 outstanding"
        );
        assert!(l.loss_time.is_none());
        let mut log2 = SentLog::default();
        for k in 0..3u64 {
            log2.begin();
            log2.commit(Duration::from_millis(k), 1000, true, true, u64::MAX);
        }
        log2.get_mut(2).unwrap().outstanding = false;
        let l = detect_lost(
            &mut log2,
            2,
            &r,
            Duration::from_millis(50),
            None,
            |_, _, _| {},
        );
        assert_eq!(l.packets, 0);
        assert_eq!(l.loss_time, Some(Duration::from_micros(112_500)));
        let l = detect_lost(
            &mut log2,
            2,
            &r,
            Duration::from_millis(113),
            None,
            |_, _, _| {},
        );
        assert_eq!(
            l.packets, 1,
            "sent at 0 ms: 113 − 112.5 ≥ 0; the one sent at 1 ms waits"
        );
        assert_eq!(l.loss_time, Some(Duration::from_micros(113_500)));
    }

    #[test]
    fn persistent_congestion_needs_a_long_unacknowledged_span() {
        let mut r = Rtt::new(Duration::from_millis(100));
        r.update(
            Duration::from_millis(100),
            Duration::ZERO,
            Duration::from_millis(1),
        );
        let period = Some(Duration::from_millis(300));
        for (acked_between, expect) in [(false, true), (true, false)] {
            let mut log = SentLog::default();
            // Packets every 50 ms from 10 ms; the last one is acknowledged.
            for k in 0..10u64 {
                log.begin();
                log.commit(
                    Duration::from_millis(10 + 50 * k),
                    1000,
                    true,
                    true,
                    u64::MAX,
                );
            }
            for pn in [9u64].into_iter().chain(acked_between.then_some(4)) {
                let p = log.get_mut(pn).unwrap();
                p.outstanding = false;
                p.acked = true;
            }
            let l = detect_lost(
                &mut log,
                9,
                &r,
                Duration::from_secs(1),
                period,
                |_, _, _| {},
            );
            assert_eq!(l.persistent, expect, "acked between: {acked_between}");
        }
    }
}
