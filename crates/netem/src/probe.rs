//! Latency probes: small timestamped UDP request/echo exchanges at a fixed interval beside the
//! flows, the way flent's RRUL test pings while it loads the link. Both engines send the same
//! datagram ([`ProbeMessage`]) and keep the same account ([`ProbeLog`]).
//!
//! A request leaves the client of the probe's flow every `interval`; the server's reflector
//! writes its own receive time into it and sends it straight back. The client then knows three
//! delays from one clock: the round trip, the request's way up and the echo's way down. In
//! the simulator the clock is virtual time; in the emulator every namespace reads the host's
//! monotonic clock, so the one-way delays are exact there too (no clock offset to estimate).

use std::time::Duration;

use quantile::DelayHistogram;
use serde::{Deserialize, Serialize};

/// A probe as the scenario describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeSpec {
    /// Name in results.
    pub name: String,
    /// Index of the flow whose client and server exchange the probes: they cross that flow's
    /// access links and the bottleneck (a PEP on the flow does not touch them: they are UDP).
    pub flow: usize,
    /// Time between two requests.
    pub interval: Duration,
    /// UDP payload of a request and of its echo, bytes (at least [`ProbeMessage::LEN`]).
    pub payload: u32,
    /// First request.
    pub start: Duration,
    /// No request at or after this time (`None` = until the end of the run).
    pub stop: Option<Duration>,
}

impl ProbeSpec {
    /// Send time of request `seq`, or `None` when it falls at or after `stop` or `end`.
    pub fn send_time(&self, seq: u64, end: Duration) -> Option<Duration> {
        let offset = self.interval.checked_mul(u32::try_from(seq).ok()?)?;
        let t = self.start.checked_add(offset)?;
        let limit = self.stop.map_or(end, |s| s.min(end));
        (t < limit).then_some(t)
    }
}

/// The fields a probe datagram carries in its first [`ProbeMessage::LEN`] bytes (big-endian;
/// the rest of the payload is zero padding).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeMessage {
    /// Request number, from 0.
    pub seq: u64,
    /// When the client sent the request, ns on the run's clock.
    pub sent_ns: u64,
    /// When the reflector received it, ns on the run's clock; 0 in a request.
    pub reflected_ns: u64,
}

/// First bytes of every probe datagram, so that a stray datagram is not taken for one.
const MAGIC: [u8; 4] = *b"QLPR";

impl ProbeMessage {
    /// Bytes the fields take: the smallest allowed probe payload.
    pub const LEN: usize = 28;

    /// The datagram: the fields, then zeros up to `payload` bytes (at least [`Self::LEN`]).
    pub fn encode(&self, payload: u32) -> Vec<u8> {
        let mut out = Vec::with_capacity((payload as usize).max(Self::LEN));
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&self.seq.to_be_bytes());
        out.extend_from_slice(&self.sent_ns.to_be_bytes());
        out.extend_from_slice(&self.reflected_ns.to_be_bytes());
        out.resize((payload as usize).max(Self::LEN), 0);
        out
    }

    /// The fields of a probe datagram; `None` for anything else (network input: never panics).
    pub fn decode(bytes: &[u8]) -> Option<ProbeMessage> {
        let head = bytes.get(..Self::LEN)?;
        if head[..4] != MAGIC {
            return None;
        }
        let word = |i: usize| u64::from_be_bytes(head[i..i + 8].try_into().unwrap_or([0; 8]));
        Some(ProbeMessage {
            seq: word(4),
            sent_ns: word(12),
            reflected_ns: word(20),
        })
    }

    /// Turns a request into its echo, reflected at `now_ns`, in place; `false` (bytes
    /// untouched) when `bytes` is no probe datagram.
    pub fn reflect(bytes: &mut [u8], now_ns: u64) -> bool {
        if Self::decode(bytes).is_none() {
            return false;
        }
        bytes[20..Self::LEN].copy_from_slice(&now_ns.to_be_bytes());
        true
    }
}

/// What the client of one probe measured: requests sent, echoes answered and the three delay
/// distributions, in bounded memory (one bit per request for duplicate detection, three
/// histograms).
#[derive(Debug, Clone, Default)]
pub struct ProbeLog {
    sent: u64,
    answered: u64,
    /// Requests whose echo arrived, one bit each (a duplicated echo counts once).
    seen: Vec<u64>,
    rtt: DelayHistogram,
    up: DelayHistogram,
    down: DelayHistogram,
}

impl ProbeLog {
    /// A request left.
    pub fn on_sent(&mut self) {
        self.sent += 1;
    }

    /// A datagram reached the client at `now_ns`; `false` when it is no echo of a request this
    /// log sent (or a duplicate of one already counted).
    pub fn on_echo(&mut self, bytes: &[u8], now_ns: u64) -> bool {
        let Some(m) = ProbeMessage::decode(bytes) else {
            return false;
        };
        if m.seq >= self.sent || m.reflected_ns < m.sent_ns || now_ns < m.reflected_ns {
            return false;
        }
        let (word, bit) = ((m.seq / 64) as usize, m.seq % 64);
        if self.seen.len() <= word {
            self.seen.resize(word + 1, 0);
        }
        if self.seen[word] & (1 << bit) != 0 {
            return false;
        }
        self.seen[word] |= 1 << bit;
        self.answered += 1;
        let ns = Duration::from_nanos;
        self.rtt.record(ns(now_ns - m.sent_ns));
        self.up.record(ns(m.reflected_ns - m.sent_ns));
        self.down.record(ns(now_ns - m.reflected_ns));
        true
    }

    /// The results-schema record of this probe.
    pub fn to_result(&self, spec: &ProbeSpec, flow_name: &str) -> results::Probe {
        let delay = |h: &DelayHistogram| h.summary();
        results::Probe {
            name: spec.name.clone(),
            flow: flow_name.to_string(),
            sent_packets: self.sent,
            answered_packets: self.answered,
            rtt: delay(&self.rtt),
            up: delay(&self.up),
            down: delay(&self.down),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> ProbeSpec {
        ProbeSpec {
            name: "ping".into(),
            flow: 0,
            interval: Duration::from_millis(200),
            payload: 64,
            start: Duration::from_millis(100),
            stop: Some(Duration::from_secs(1)),
        }
    }

    #[test]
    fn requests_follow_the_interval_until_stop_or_end() {
        let s = spec();
        let times: Vec<_> = (0..10)
            .map_while(|i| s.send_time(i, Duration::from_secs(10)))
            .collect();
        let ms = |m| Duration::from_millis(m);
        assert_eq!(times, [ms(100), ms(300), ms(500), ms(700), ms(900)]);
        assert_eq!(s.send_time(2, ms(500)), None);
    }

    #[test]
    fn a_request_round_trip_gives_three_delays() {
        let mut log = ProbeLog::default();
        let mut bytes = ProbeMessage {
            seq: 0,
            sent_ns: 1_000_000,
            reflected_ns: 0,
        }
        .encode(64);
        assert_eq!(bytes.len(), 64);
        log.on_sent();
        assert!(ProbeMessage::reflect(&mut bytes, 31_000_000));
        assert!(log.on_echo(&bytes, 41_000_000));
        // A duplicate, a request never sent and garbage are not counted.
        assert!(!log.on_echo(&bytes, 42_000_000));
        let other = ProbeMessage {
            seq: 7,
            sent_ns: 0,
            reflected_ns: 1,
        };
        assert!(!log.on_echo(&other.encode(64), 50_000_000));
        assert!(!log.on_echo(b"not a probe at all, but long enough", 1));
        assert!(!log.on_echo(&[], 1));
        let r = log.to_result(&spec(), "f");
        assert_eq!((r.sent_packets, r.answered_packets), (1, 1));
        let close = |a: f64, b: f64| (a / b - 1.0).abs() < 0.008;
        let (rtt, up, down) = (r.rtt.unwrap(), r.up.unwrap(), r.down.unwrap());
        assert!(
            close(rtt.mean_s, 0.040) && close(rtt.p99_s, 0.040),
            "{rtt:?}"
        );
        assert!(close(up.max_s, 0.030) && close(down.max_s, 0.010));
    }

    #[test]
    fn small_payloads_still_carry_the_fields() {
        let m = ProbeMessage {
            seq: u64::MAX,
            sent_ns: 3,
            reflected_ns: 4,
        };
        let bytes = m.encode(1);
        assert_eq!(bytes.len(), ProbeMessage::LEN);
        assert_eq!(ProbeMessage::decode(&bytes), Some(m));
        assert_eq!(ProbeMessage::decode(&bytes[..ProbeMessage::LEN - 1]), None);
    }

    #[test]
    fn no_answer_leaves_the_delays_absent() {
        let mut log = ProbeLog::default();
        log.on_sent();
        let r = log.to_result(&spec(), "f");
        assert_eq!((r.sent_packets, r.answered_packets), (1, 0));
        assert!(r.rtt.is_none() && r.up.is_none() && r.down.is_none());
    }
}
