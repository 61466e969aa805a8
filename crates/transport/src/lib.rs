//! Sans-IO transports for quiclab's engines, each owning its configuration types.
//!
//! - [`agent`]: the [`agent::FlowAgent`] interface between a flow and the engines.
//! - [`driver`]: the one flow lifecycle ([`driver::FlowDriver`]) over each transport's
//!   [`driver::Connections`].
//! - [`flow`], [`workload`], [`cc_adapter::CcChoice`]: what every flow is built from.
//! - [`quic`]: real quinn-proto endpoints driven in virtual time ([`quic::QuicKnobs`]).
//! - [`tcp`]: the Linux-like TCP model ([`tcp::TcpKnobs`], [`tcp::PepSpec`]).
//! - [`quic_common`]: the knobs both QUIC stacks share ([`quic_common::QuicCommonKnobs`]).
//! - [`quiche`]: Cloudflare's quiche driven in virtual time by link-time interposition
//!   ([`quiche::QuicheKnobs`], [`quiche::LINK_ARGS`]).
//! - [`quicmodel`]: the QUIC research model with INET's and ModQUIC's knobs ([`quicmodel::QuicModelKnobs`]).
//! - [`cc_adapter`]: quiclab's congestion controllers plugged into quinn.
//! - `rate`: delivery-rate sampling (draft-cheng-iccrg-delivery-rate-estimation) for the TCP
//!   model and the QUIC research model.
//! - [`qlog`]: qlog in one schema for quinn and the research model, with frames, in files that
//!   keep their write failures (simulator and real endpoints).
//! - [`seeded`], [`tls`], [`clock`]: everything that makes a QUIC run a pure function of its seed.
//! - [`null_crypto`]: the null AEAD of `flow.crypto = "none"` (same sizes and results, less CPU).

pub mod agent;
pub mod cc_adapter;
pub mod clock;
pub mod driver;
pub mod flow;
pub mod linux_config;
pub mod null_crypto;
pub mod qlog;
pub mod quic;
pub mod quic_common;
pub mod quiche;
pub mod quicmodel;
mod rate;
pub mod seeded;
pub mod tcp;
pub mod tls;
pub mod workload;
