//! The QUIC research model's knobs of a `[[flow]]` (`stack = "quic-model"`) and the checks
//! across keys that its registry bounds cannot express.

use std::time::Duration;

use crate::error::ScenarioError;
use crate::model::QuicModelKnobs;
use crate::read::Reader;
use crate::registry::MAX_MODEL_ACK_DELAY;
use crate::resolve::knobs::overlay;

/// Largest flow-control credit a QUIC frame can carry: a varint below 2^62 (RFC 9000 §16).
pub const MAX_MODEL_WINDOW: u64 = (1 << 62) - 1;

/// The model's knobs: quinn-like defaults with the keys the user set replaced, checked against
/// the model's limits (quinn has its own).
pub(crate) fn quic_model(r: &Reader<'_>, mtu: u16) -> Result<QuicModelKnobs, ScenarioError> {
    let k = overlay(
        r,
        QuicModelKnobs {
            mtu,
            ..QuicModelKnobs::default()
        },
    )?;
    let fail = |key: &str, message: String| {
        let at = r
            .entry(key)
            .map_or_else(|| r.at().clone(), |e| e.node.at.clone());
        Err(r.errors.at(&at, message))
    };
    for (key, v) in [
        ("stream_window", k.common.stream_window),
        ("conn_window", k.common.conn_window),
        ("send_window", k.common.send_window),
    ] {
        // A zero window never lets a byte through; one beyond a varint cannot be advertised.
        if !(1..=MAX_MODEL_WINDOW).contains(&v) {
            return fail(
                key,
                format!(
                    "{} = {v} B is not within 1 B and {MAX_MODEL_WINDOW} B (2^62 − 1, the largest QUIC varint) for stack = \"quic-model\"",
                    r.path_of(key)
                ),
            );
        }
    }
    if let Some(d) = k.common.max_ack_delay {
        if d.is_zero() || d > MAX_MODEL_ACK_DELAY {
            return fail(
                "max_ack_delay",
                format!(
                    "{} = {d:?} is not within {:?} and {MAX_MODEL_ACK_DELAY:?} for stack = \"quic-model\" (RFC 9000 §18.2: below 2^14 ms; for an ACK on every packet set ack_ratio = 1)",
                    r.path_of("max_ack_delay"),
                    Duration::from_nanos(1)
                ),
            );
        }
    }
    Ok(k)
}
