//! `[[probe]]` entries: latency probes between the client and the server of a flow.

use crate::error::{At, Errors, ScenarioError};
use crate::model::{FlowSpec, ProbeMessage, ProbeSpec};
use crate::names::check_key_name;
use crate::read::Reader;
use crate::tree::Table;

/// Largest probe payload: a probe is a small datagram, and one MTU keeps it one packet.
const MAX_PAYLOAD: u64 = 1_472;

/// Resolves the `index`-th `[[probe]]` table against the scenario's (expanded) flows.
pub(crate) fn probe(
    table: &Table,
    at: &At,
    index: usize,
    flows: &[FlowSpec],
    errors: &Errors,
) -> Result<ProbeSpec, ScenarioError> {
    let r = Reader::new(table, at, "probe", &format!("probe.{index}"), errors)?;
    let name = r.string("name")?.unwrap_or_else(|| format!("probe{index}"));
    check_key_name(&name, "probe.name", &r.value_at("name"), r.errors)?;
    let flow = match r.string("flow")? {
        None if flows.is_empty() => {
            return Err(errors.at(
                at,
                "a probe runs between the client and server of a flow: add a [[flow]]",
            ));
        }
        None => 0,
        Some(f) => flows.iter().position(|s| s.name == f).ok_or_else(|| {
            let names: Vec<&str> = flows.iter().map(|s| s.name.as_str()).collect();
            errors
                .at(&r.value_at("flow"), format!("no flow is named {f:?}"))
                .with_allowed(&names)
        })?,
    };
    let interval = r.duration("interval")?.unwrap_or(DEFAULT_INTERVAL);
    if interval < MIN_INTERVAL {
        return Err(errors.at(
            &r.value_at("interval"),
            format!("{} must be at least 1ms", r.path_of("interval")),
        ));
    }
    let payload = r.size("size")?.unwrap_or(DEFAULT_PAYLOAD);
    let min = ProbeMessage::LEN as u64;
    if !(min..=MAX_PAYLOAD).contains(&payload) {
        return Err(errors.at(
            &r.value_at("size"),
            format!(
                "{} must be {min} to {MAX_PAYLOAD} bytes (the probe's fields take {min})",
                r.path_of("size")
            ),
        ));
    }
    let start = r.duration("start")?.unwrap_or_default();
    let stop = r.duration("stop")?;
    if stop.is_some_and(|s| s <= start) {
        return Err(errors.at(&r.value_at("stop"), "stop must be after start"));
    }
    Ok(ProbeSpec {
        name,
        flow,
        interval,
        payload: payload as u32,
        start,
        stop,
    })
}

/// flent's RRUL ping interval.
const DEFAULT_INTERVAL: std::time::Duration = std::time::Duration::from_millis(200);
/// Finer than this, the probe becomes load rather than a measurement of it (and the reply
/// bitmap's bound, one bit per request, stays small).
const MIN_INTERVAL: std::time::Duration = std::time::Duration::from_millis(1);
/// A ping's size: 64 bytes of UDP payload.
const DEFAULT_PAYLOAD: u64 = 64;
