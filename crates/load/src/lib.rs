//! Open-model constant-rate HTTP load generator for HTTP/1.1, HTTP/2 and HTTP/3, in vegeta's
//! pipeline shape: [`attack`] produces a stream of [`record::ResultRecord`]s; [`metrics`],
//! [`report`], [`plot`] and [`record`] (encode) consume it; [`sweep`] runs a grid of attacks.

pub mod attack;
pub mod client;
pub mod live;
pub mod metrics;
pub mod plot;
pub mod record;
pub mod report;
pub mod requester;
pub mod schedule;
pub mod sweep;
pub mod targets;
mod timer;
pub mod units;
