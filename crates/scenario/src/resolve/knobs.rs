//! Knob structs read generically: each serialized field of a transport's knob type is the
//! scenario key `flow.<field>`. Unset keys keep the type's `Default`; set ones are parsed by
//! their registry entry (kind and bounds) and handed to serde. A new knob therefore needs its
//! field, its registry entry and the model that uses it — nothing here.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::ScenarioError;
use crate::read::Reader;

/// `base` with every field the user set in `r` replaced.
pub(crate) fn overlay<T: Serialize + DeserializeOwned>(
    r: &Reader<'_>,
    base: T,
) -> Result<T, ScenarioError> {
    let internal = |e: serde_json::Error| r.errors.whole(format!("internal: knob fields: {e}"));
    let mut fields = serde_json::to_value(&base).map_err(internal)?;
    let Some(map) = fields.as_object_mut() else {
        return Err(r.errors.whole("internal: a knob type is not a struct"));
    };
    for (field, slot) in map.iter_mut() {
        if let Some(v) = r.value(field)? {
            *slot = v;
        }
    }
    serde_json::from_value(fields).map_err(|e| {
        // Only reachable when a registry kind does not fit its field (a bug, not bad input).
        r.errors
            .at(r.at(), format!("internal: knob value does not fit: {e}"))
    })
}

/// The user's value of one knob `key`, if set (parsed and bounded like [`overlay`]'s fields).
pub(crate) fn user<T: DeserializeOwned>(
    r: &Reader<'_>,
    key: &str,
) -> Result<Option<T>, ScenarioError> {
    let Some(v) = r.value(key)? else {
        return Ok(None);
    };
    serde_json::from_value(v).map(Some).map_err(|e| {
        r.errors
            .at(r.at(), format!("internal: {key} does not fit: {e}"))
    })
}
