//! Sans-IO transports for quiclab's engines.
//!
//! - [`agent`]: the [`agent::FlowAgent`] interface every transport flow implements.
//! - [`quic`]: real quinn-proto endpoints driven in virtual time.
//! - [`cc_adapter`]: quiclab's congestion controllers plugged into quinn.
//! - [`seeded`], [`tls`], [`clock`]: everything that makes a QUIC run a pure function of its seed.

pub mod agent;
pub mod cc_adapter;
pub mod clock;
pub mod quic;
pub mod seeded;
pub mod tcp;
pub mod tls;
