//! Named protocol variants (`[[variant]]`): each is a name and a set of key overrides, and the
//! variants form the sweep axis `variant`, crossed with every other axis.
//!
//! A variant's overrides use the same dotted keys as `--set` and are written into the tree the
//! same way; they apply before `--set` (so an explicit `--set` wins) and before the sweep axes.
//! Programs that define variants in code (`quiclab reproduce`) hand them in as
//! [`VariantDef`]s and go through the same path as a file's `[[variant]]` tables.

use std::sync::Arc;

use crate::error::{At, Errors, ScenarioError};
use crate::paths::{parse_key, KeyPath};
use crate::read::check_keys;
use crate::registry::Kind;
use crate::sweep::path_error;
use crate::tree::{parse_arg_value, Node, Table, Val};

/// The name of the sweep axis the variants form (in `SweepPoint::axes` and results).
pub const VARIANT_AXIS: &str = "variant";

/// At most this many variants per scenario: each multiplies the sweep, and a variant is written
/// by hand (the sweep's own limits, `MAX_POINTS` and `MAX_RUNS`, still apply to the product).
pub const MAX_VARIANTS: usize = 1_000;

/// A variant defined by a program rather than a scenario file: what `[[variant]]` says, with the
/// overrides as `key=value` texts like `--set` arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariantDef {
    /// The variant's name (the value of the `variant` axis).
    pub name: String,
    /// `key=value` overrides, applied in order.
    pub set: Vec<String>,
}

/// One override of a variant: the key, its value and where it was written.
#[derive(Debug, Clone)]
pub(crate) struct Override {
    pub key: KeyPath,
    pub node: Node,
    pub at: At,
}

/// A checked variant.
#[derive(Debug, Clone)]
pub(crate) struct Variant {
    pub name: Arc<str>,
    /// Where the variant is declared (its `[[variant]]` header or the program's definition).
    pub at: At,
    pub set: Vec<Override>,
}

/// Refuses `variant…` as a `--set`, `--vary`, `[sweep]` or override key: variants are
/// declared with `[[variant]]` and picked with `--variant`, not set.
pub(crate) fn refuse_variant_key(key: &str, at: &At, errors: &Errors) -> Result<(), ScenarioError> {
    if key.trim().split('.').next() == Some(VARIANT_AXIS) {
        return Err(errors.at(
            at,
            format!(
                "{} cannot be set or swept: declare variants with [[variant]] in the file and pick them with --variant",
                key.trim()
            ),
        ));
    }
    Ok(())
}

/// Takes the `[[variant]]` tables out of the root, checked; `None` when the file has none.
pub(crate) fn take_file_variants(
    root: &mut Table,
    errors: &Errors,
) -> Result<Option<Vec<Variant>>, ScenarioError> {
    let Some(pos) = root.entries.iter().position(|e| e.key == VARIANT_AXIS) else {
        return Ok(None);
    };
    let entry = root.entries.remove(pos);
    let Val::Array(items) = &entry.node.val else {
        return Err(errors.at(
            &entry.node.at,
            format!(
                "variant: expected [[variant]] tables (an array of tables), found {}",
                entry.node.val.type_name()
            ),
        ));
    };
    if items.is_empty() {
        return Err(errors.at(
            &entry.key_at,
            "variant = [] declares no variant: remove it, or add [[variant]] tables with a name",
        ));
    }
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let Val::Table(t) = &item.val else {
            return Err(errors.at(
                &item.at,
                format!(
                    "variant.{i}: expected a table with name and set, found {}",
                    item.val.type_name()
                ),
            ));
        };
        out.push(file_variant(t, &item.at, i, errors)?);
    }
    check_set(&out, errors)?;
    Ok(Some(out))
}

/// One `[[variant]]` table.
fn file_variant(
    t: &Table,
    at: &At,
    index: usize,
    errors: &Errors,
) -> Result<Variant, ScenarioError> {
    let user_path = format!("variant.{index}");
    check_keys(t, "variant[]", &user_path, &[], errors)?;
    let name = match t.get("name") {
        None => {
            return Err(errors.at(
                at,
                format!("missing key {user_path}.name: every variant needs a name"),
            ))
        }
        Some(e) => match &e.node.val {
            Val::Str(s) => {
                check_name(s, &e.node.at, errors)?;
                s.clone()
            }
            other => {
                return Err(errors.at(
                    &e.node.at,
                    format!(
                        "{user_path}.name: expected a string, found {}",
                        other.type_name()
                    ),
                ))
            }
        },
    };
    let mut set = Vec::new();
    if let Some(e) = t.get("set") {
        let Val::Table(st) = &e.node.val else {
            return Err(errors.at(
                &e.node.at,
                format!(
                    "{user_path}.set: expected a table of `\"key\" = value`, found {}",
                    e.node.val.type_name()
                ),
            ));
        };
        flatten(st, "", errors, &mut set)?;
        if set.is_empty() {
            return Err(errors.at(
                &e.node.at,
                format!(
                    "{user_path}.set is empty: leave `set` out for the scenario as written, or name the keys this variant changes"
                ),
            ));
        }
    }
    Ok(Variant {
        name: name.into(),
        at: at.clone(),
        set,
    })
}

/// Collects the overrides of a `set` table: `"flow.stack" = "tcp"` or nested tables
/// (`flow = { stack = "tcp" }`). A table is descended into until its path names a key that
/// takes a value (a table-valued key such as `link.loss` or `link.up` is set whole, as with
/// `--set`).
fn flatten(
    t: &Table,
    prefix: &str,
    errors: &Errors,
    out: &mut Vec<Override>,
) -> Result<(), ScenarioError> {
    for e in &t.entries {
        let path = if prefix.is_empty() {
            e.key.clone()
        } else {
            format!("{prefix}.{}", e.key)
        };
        let key = parse_key(&path);
        let descend = match (&e.node.val, &key) {
            (Val::Table(_), Err(_)) => true,
            (Val::Table(_), Ok(k)) => k.doc.kind == Kind::TableArray,
            _ => false,
        };
        if descend {
            if let Val::Table(inner) = &e.node.val {
                flatten(inner, &path, errors, out)?;
            }
            continue;
        }
        refuse_variant_key(&path, &e.key_at, errors)?;
        let key = key.map_err(|err| path_error(errors, &e.key_at, err))?;
        out.push(Override {
            key,
            node: e.node.clone(),
            at: e.key_at.clone(),
        });
    }
    Ok(())
}

/// Variants defined in code, checked like a file's.
pub(crate) fn from_defs(
    defs: &[VariantDef],
    errors: &Errors,
) -> Result<Vec<Variant>, ScenarioError> {
    let mut out = Vec::new();
    for d in defs {
        let at = At::Arg(format!("variant {:?}", d.name).into());
        check_name(&d.name, &at, errors)?;
        let mut set = Vec::new();
        for arg in &d.set {
            let at = At::Arg(format!("variant {:?}: {arg}", d.name).into());
            let (key, value) = arg
                .split_once('=')
                .ok_or_else(|| errors.at(&at, "expected key=value"))?;
            refuse_variant_key(key, &at, errors)?;
            let key = parse_key(key).map_err(|e| path_error(errors, &at, e))?;
            set.push(Override {
                key,
                node: parse_arg_value(value, &at),
                at,
            });
        }
        out.push(Variant {
            name: d.name.as_str().into(),
            at,
            set,
        });
    }
    if out.is_empty() {
        return Err(errors.whole("internal: an empty list of variants was given"));
    }
    check_set(&out, errors)?;
    Ok(out)
}

/// A variant name is the value of an axis and a label in tables and figures: printable, short,
/// and not empty.
fn check_name(name: &str, at: &At, errors: &Errors) -> Result<(), ScenarioError> {
    if name.trim().is_empty() {
        return Err(errors.at(at, "a variant's name must not be empty"));
    }
    if name.chars().count() > 100 || name.chars().any(char::is_control) {
        return Err(errors.at(
            at,
            format!("variant name {name:?}: at most 100 characters, no control characters"),
        ));
    }
    Ok(())
}

/// Across variants: at most [`MAX_VARIANTS`], names unique, no two with the same overrides (one
/// of them would be a mislabelled copy), and no key set twice in one variant.
fn check_set(variants: &[Variant], errors: &Errors) -> Result<(), ScenarioError> {
    if variants.len() > MAX_VARIANTS {
        return Err(errors.at(
            &variants[MAX_VARIANTS].at,
            format!("more than {MAX_VARIANTS} variants"),
        ));
    }
    for (i, v) in variants.iter().enumerate() {
        if let Some(first) = variants[..i].iter().find(|o| o.name == v.name) {
            let first_at = errors.at(&first.at, "").to_string();
            let first_at = first_at.trim_end_matches(": ");
            return Err(errors.at(
                &v.at,
                format!(
                    "variant name {:?} is used twice (first at {first_at}); names must be unique",
                    v.name
                ),
            ));
        }
        for (j, o) in v.set.iter().enumerate() {
            if v.set[..j].iter().any(|p| p.key.text == o.key.text) {
                return Err(errors.at(
                    &o.at,
                    format!("variant {:?} sets {} twice", v.name, o.key.text),
                ));
            }
        }
        let same = |a: &Variant, b: &Variant| {
            a.set.len() == b.set.len()
                && a.set.iter().all(|x| {
                    b.set
                        .iter()
                        .any(|y| y.key.text == x.key.text && y.node.val == x.node.val)
                })
        };
        if let Some(twin) = variants[..i].iter().find(|o| same(o, v)) {
            let what = if v.set.is_empty() {
                "sets nothing (the scenario as written)".to_string()
            } else {
                "sets the same keys to the same values".to_string()
            };
            return Err(errors.at(
                &v.at,
                format!(
                    "variant {:?} {what}, like variant {:?}: one of them is a copy",
                    v.name, twin.name
                ),
            ));
        }
    }
    Ok(())
}

/// The variants named in `pick` (`--variant a,b`), in the file's order; all when `pick` is
/// empty.
pub(crate) fn select(
    variants: Vec<Variant>,
    pick: &[String],
    errors: &Errors,
) -> Result<Vec<Variant>, ScenarioError> {
    let names: Vec<String> = pick
        .iter()
        .flat_map(|p| p.split(','))
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    if names.is_empty() {
        return Ok(variants);
    }
    let allowed: Vec<&str> = variants.iter().map(|v| &*v.name).collect();
    for n in &names {
        if !allowed.contains(&n.as_str()) {
            let at = At::Arg(format!("--variant {}", pick.join(",")).into());
            return Err(errors
                .at(&at, format!("unknown value {n:?}: no variant of that name"))
                .with_allowed_titled("variants of the scenario", &allowed));
        }
    }
    Ok(variants
        .into_iter()
        .filter(|v| names.iter().any(|n| *n == *v.name))
        .collect())
}
