//! `[[cross]]` entries: UDP sources crossing the bottleneck.

use std::time::Duration;

use crate::choices::{CrossPattern as PatternName, Direction};
use crate::error::{At, Errors, ScenarioError};
use crate::model::{CrossPattern, CrossSpec};
use crate::names::check_key_name;
use crate::read::Reader;
use crate::tree::Table;
use crate::units::Rate;

/// Largest UDP payload over IPv4.
const MAX_PAYLOAD: u64 = 65_507;

/// Resolves the `index`-th `[[cross]]` table.
pub(crate) fn cross(
    table: &Table,
    at: &At,
    index: usize,
    errors: &Errors,
) -> Result<CrossSpec, ScenarioError> {
    let r = Reader::new(table, at, "cross", &format!("cross.{index}"), errors)?;
    let start = r.duration("start")?.unwrap_or_default();
    let stop = r.duration("stop")?;
    if stop.is_some_and(|s| s <= start) {
        return Err(errors.at(&r.value_at("stop"), "stop must be after start"));
    }
    let Some(pattern) = r.choice::<PatternName>("pattern")? else {
        return Err(r.missing("pattern"));
    };
    let pattern = match pattern {
        PatternName::Cbr => CrossPattern::Cbr {
            rate_bps: rate(&r)?,
            payload: payload(&r, "size")?,
        },
        PatternName::OnOff => CrossPattern::OnOff {
            rate_bps: rate(&r)?,
            payload: payload(&r, "size")?,
            on: nonzero(&r, "on")?,
            off: nonzero(&r, "off")?,
        },
        PatternName::Uniform => {
            let (payload_min, payload_max) = (payload(&r, "size_min")?, payload(&r, "size_max")?);
            if payload_min > payload_max {
                return Err(errors.at(&r.value_at("size_min"), "size_min is larger than size_max"));
            }
            let gap_min = r.duration("gap_min")?;
            let gap_min = r.required("gap_min", gap_min)?;
            let gap_max = nonzero(&r, "gap_max")?;
            if gap_min > gap_max {
                return Err(errors.at(&r.value_at("gap_min"), "gap_min is longer than gap_max"));
            }
            CrossPattern::Uniform {
                payload_min,
                payload_max,
                gap_min,
                gap_max,
            }
        }
    };
    let name = r.string("name")?.unwrap_or_else(|| format!("cross{index}"));
    // Same rule as flow names: names in results must stay usable as file names.
    check_key_name(&name, "cross.name", &r.value_at("name"), r.errors)?;
    Ok(CrossSpec {
        name,
        up: r.choice::<Direction>("direction")? == Some(Direction::Up),
        start,
        stop,
        pattern,
    })
}

fn rate(r: &Reader<'_>) -> Result<u64, ScenarioError> {
    match r.rate("rate")? {
        Some(Rate::Bps(b)) if b > 0 => Ok(b),
        Some(_) => Err(r.errors.at(
            &r.value_at("rate"),
            "cross traffic needs a finite rate above zero",
        )),
        None => Err(r.missing("rate")),
    }
}

fn payload(r: &Reader<'_>, key: &str) -> Result<u32, ScenarioError> {
    let v = r.size(key)?;
    let v = r.required(key, v)?;
    if v == 0 || v > MAX_PAYLOAD {
        return Err(r.errors.at(
            &r.value_at(key),
            format!("{} must be 1 to {MAX_PAYLOAD} bytes", r.path_of(key)),
        ));
    }
    Ok(u32::try_from(v).unwrap_or(u32::MAX))
}

fn nonzero(r: &Reader<'_>, key: &str) -> Result<Duration, ScenarioError> {
    let v = r.duration(key)?;
    let v = r.required(key, v)?;
    if v.is_zero() {
        return Err(r.errors.at(
            &r.value_at(key),
            format!("{} must be greater than zero", r.path_of(key)),
        ));
    }
    Ok(v)
}
