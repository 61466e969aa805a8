//! Pure, seeded link and path models shared by the simulator and the emulator, and the packet
//! plumbing both engines need: cross-traffic sources ([`cross`]), zero-copy IPv4/UDP/TCP header
//! views with the one IPv4+UDP overhead constant ([`wire`]), and a pcap writer ([`pcap`]).
//!
//! No I/O beyond writing a capture to a caller's writer, and no clocks: time is a [`std::time::Duration`] since the start of the run, given by
//! the caller, and every random choice comes from ChaCha8 streams derived from a caller's seed
//! (one stream per impairment, so enabling one never changes another's decisions).
//!
//! # The model of one link direction ([`link::Link`])
//!
//! 1. **Queue** — a queue discipline in front of the serializer ([`qdisc`]): drop-tail limited
//!    in packets and/or IP bytes ([`config::QueueLimit`], the default), RED / adaptive RED,
//!    CoDel, FQ-CoDel, PIE or DualPI2, which may drop or ECN-mark packets. The packet being
//!    serialized has left the queue and does not count.
//! 2. **Serializer** — transmits one packet at a time at the [`config::RateProfile`] rate;
//!    queued packets follow back to back. A packet spanning a rate change is integrated across
//!    it exactly; during an outage (rate 0) it waits ([`rate`]).
//! 3. **Wire**, decided when the last bit leaves the serializer (a lost packet still used the
//!    capacity): blackout (time-based, [`config::Blackout`]) → loss model ([`loss`]) →
//!    corruption (delivered with one bit to flip) → duplication (a second copy, same time).
//! 4. **Propagation** — constant delay plus jitter. Packets keep FIFO order (a packet never
//!    arrives before its predecessor) unless picked for reordering, in which case it gets an
//!    extra delay and skips the FIFO clamp, so later packets overtake it.
//!
//! Deliveries come out of [`link::Link::poll`] in (delivery time, sequence) order.

pub mod blackout;
pub mod config;
pub mod cross;
pub mod error;
mod jitter;
pub mod link;
pub mod loss;
pub mod mahimahi;
pub mod pcap;
pub mod probe;
pub mod qdisc;
pub mod rate;
mod rng;
pub mod sojourn;
pub mod synth;
mod validate;
pub mod wire;

pub use config::LinkConfig;
pub use error::Error;
pub use link::{Delivery, EnqueueResult, Link, LinkStats};
pub use loss::LossModel;
pub use qdisc::{Ecn, PacketMeta, QdiscConfig};
