//! The knobs of a `[[flow]]` with `stack = "quiche"`, and the keys every other stack has that
//! quiche cannot honour (refused by name, with what quiche takes instead).

use choice::Choice;

use crate::error::{At, Errors, ScenarioError};
use crate::model::{QuicheKnobs, Stack};
use crate::read::Reader;
use crate::registry;
use crate::resolve::knobs::overlay;
use crate::tree::{Table, Val};
use transport::quiche::config::QUICHE_CC_NAMES;

/// quiche's knobs: quinn-like defaults with the keys the user set replaced, checked against
/// quiche's limits.
pub(crate) fn quiche(r: &Reader<'_>, mtu: u16) -> Result<QuicheKnobs, ScenarioError> {
    let k = overlay(
        r,
        QuicheKnobs {
            mtu,
            ..QuicheKnobs::default()
        },
    )?;
    k.validate().map_err(|e| {
        let at = r
            .entry(e.field)
            .map_or_else(|| r.at().clone(), |en| en.node.at.clone());
        r.errors.at(&at, e.to_string())
    })?;
    Ok(k)
}

/// Why a key every stack has cannot be honoured by quiche.
const UNSUPPORTED: [(&str, &str); 5] = [
    (
        "loss_reduction",
        "quiche's controllers keep their own multiplicative decrease",
    ),
    (
        "min_window",
        "quiche's controllers keep their own minimum window",
    ),
    (
        "cubic_profile",
        "quiche's CUBIC is its own RFC 9438 implementation",
    ),
    ("reno_profile", "quiche's Reno counts bytes as RFC 9002"),
    ("ecn", "quiche neither sends ECT nor reports ECN counts"),
];

/// The keys of a quiche flow beyond the ones every flow has (name, app, size, start, …), for
/// error messages.
pub(crate) fn quiche_keys() -> Vec<String> {
    let mut keys: Vec<String> = ["cc", "initial_window", "hystart", "mtu"]
        .iter()
        .map(|k| k.to_string())
        .collect();
    keys.extend(
        registry::keys()
            .iter()
            .filter(|k| !k.stacks.is_empty() && k.applies_to(Stack::Quiche))
            .map(|k| k.path.trim_start_matches("flow.").to_string()),
    );
    keys
}

/// Refuses, on a quiche flow, a `cc` quiche has no counterpart for and the keys of
/// [`UNSUPPORTED`] (a key at its registry default asks for nothing and passes).
pub(crate) fn check_quiche_keys(
    table: &Table,
    at: &At,
    user_path: &str,
    errors: &Errors,
) -> Result<(), ScenarioError> {
    let takes = format!(
        "a quiche flow takes {}",
        quiche_keys()
            .iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for e in &table.entries {
        if e.key == "cc" {
            if let Val::Str(v) = &e.node.val {
                if !QUICHE_CC_NAMES.contains(&v.as_str()) {
                    return Err(errors
                        .at(
                            &e.node.at,
                            format!(
                                "{user_path}.cc = {v:?}: quiche has no such controller (stack = {:?})",
                                Stack::Quiche.name()
                            ),
                        )
                        .with_allowed_titled("allowed for stack = \"quiche\"", &QUICHE_CC_NAMES));
                }
            }
        }
        if let Some((key, why)) = UNSUPPORTED.iter().find(|(k, _)| *k == e.key) {
            let doc = registry::find(&format!("flow.{key}"));
            let at_default = doc.is_some_and(|d| {
                crate::resolve::tcp::at_default(table, at, user_path, d, key, errors)
            });
            if !at_default {
                return Err(errors.at(
                    &e.key_at,
                    format!(
                        "{user_path}.{key} cannot be honoured by stack = \"quiche\" ({why}); {takes}"
                    ),
                ));
            }
        }
    }
    Ok(())
}
