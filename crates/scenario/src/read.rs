//! Typed, registry-checked access to one table of the tree.
//!
//! A reader first rejects keys the registry does not list for its section, then hands out
//! values parsed by the key's unit; an absent key yields the registry default, so defaults
//! live in exactly one place.

use std::time::Duration;

use choice::Choice;

use crate::error::{At, Errors, ScenarioError};
use crate::queue::{parse_queue, QueueSpec};
use crate::registry::{self, Bounds, DefaultValue, KeyDoc, Kind};
use crate::tree::{parse_arg_value, Entry, Node, Table, Val};
use crate::units::{self, Rate, UnitError};

/// Reads the keys of one section from one or more tables (the first table that has a key wins).
pub(crate) struct Reader<'a> {
    layers: Vec<&'a Table>,
    /// Registry prefix of the keys (`link`, `flow.client_access`, `link.blackout[]`).
    prefix: &'static str,
    /// Position of the (first) table, for "missing key" errors.
    at: At,
    /// Path of each layer as the user would write it, for messages (`flow.1`, `link.up`).
    paths: Vec<String>,
    pub(crate) errors: &'a Errors,
}

/// Rejects keys of `table` that the registry does not list under `prefix` (minus `exclude`).
pub(crate) fn check_keys(
    table: &Table,
    prefix: &str,
    user_path: &str,
    exclude: &[&str],
    errors: &Errors,
) -> Result<(), ScenarioError> {
    let allowed: Vec<&str> = registry::children(prefix)
        .into_iter()
        .filter(|c| !exclude.contains(c))
        .collect();
    for e in &table.entries {
        if !allowed.contains(&e.key.as_str()) {
            let full = if user_path.is_empty() {
                e.key.clone()
            } else {
                format!("{user_path}.{}", e.key)
            };
            let place = section_title(prefix, user_path);
            return Err(errors
                .at(&e.key_at, format!("unknown key {full:?}"))
                .with_allowed_titled(&format!("allowed keys in {place}"), &allowed));
        }
    }
    Ok(())
}

/// How a section is named in messages: its TOML header where it has one.
fn section_title(prefix: &str, user_path: &str) -> String {
    match prefix {
        "" => "the top level".to_string(),
        "flow" => "[[flow]]".to_string(),
        "cross" => "[[cross]]".to_string(),
        "probe" => "[[probe]]".to_string(),
        "variant[]" => "[[variant]]".to_string(),
        "figure[]" => "[[figure]]".to_string(),
        "run" | "link" => format!("[{user_path}]"),
        _ => user_path.to_string(),
    }
}

impl<'a> Reader<'a> {
    /// A reader over one table, after checking its keys.
    pub(crate) fn new(
        table: &'a Table,
        at: &At,
        prefix: &'static str,
        user_path: &str,
        errors: &'a Errors,
    ) -> Result<Self, ScenarioError> {
        check_keys(table, prefix, user_path, &[], errors)?;
        Ok(Self::layered(
            vec![(table, user_path.to_string())],
            at,
            prefix,
            errors,
        ))
    }

    /// A reader over tables already checked, most specific first, each with its user path.
    pub(crate) fn layered(
        layers: Vec<(&'a Table, String)>,
        at: &At,
        prefix: &'static str,
        errors: &'a Errors,
    ) -> Self {
        let (layers, paths) = layers.into_iter().unzip();
        Reader {
            layers,
            prefix,
            at: at.clone(),
            paths,
            errors,
        }
    }

    /// The registry entry of `key`; a missing one is a bug in this crate, not in the input.
    fn doc(&self, key: &str) -> Result<&'static KeyDoc, ScenarioError> {
        let path = format!("{}.{key}", self.prefix);
        registry::find(&path).ok_or_else(|| {
            self.errors
                .whole(format!("internal: key {path} is not in the registry"))
        })
    }

    /// The user's entry for `key`, from the most specific table that has it.
    pub(crate) fn entry(&self, key: &str) -> Option<&'a Entry> {
        self.layers.iter().find_map(|t| t.get(key))
    }

    /// Where the user's value of `key` is, or the table's position when it is not set: where
    /// an error about the value points.
    pub(crate) fn value_at(&self, key: &str) -> At {
        self.entry(key)
            .map_or_else(|| self.at().clone(), |e| e.node.at.clone())
    }

    /// Whether the user set `key` in the table at `layer` (0 = most specific).
    pub(crate) fn has_in_layer(&self, layer: usize, key: &str) -> bool {
        self.layers.get(layer).is_some_and(|t| t.get(key).is_some())
    }

    /// Number of layers.
    pub(crate) fn layer_count(&self) -> usize {
        self.layers.len()
    }

    /// Where the reader's table is.
    pub(crate) fn at(&self) -> &At {
        &self.at
    }

    /// Dotted path of `key` for messages, naming the table the user set it in.
    pub(crate) fn path_of(&self, key: &str) -> String {
        let layer = self
            .layers
            .iter()
            .position(|t| t.get(key).is_some())
            .unwrap_or(0);
        match self.paths.get(layer).map(String::as_str) {
            None | Some("") => key.to_string(),
            Some(p) => format!("{p}.{key}"),
        }
    }

    /// The user's value, else the registry default; `None` when unset without a value default.
    pub(crate) fn node(&self, key: &str) -> Result<Option<Node>, ScenarioError> {
        let doc = self.doc(key)?;
        if let Some(e) = self.entry(key) {
            return Ok(Some(e.node.clone()));
        }
        Ok(match doc.default {
            DefaultValue::Value(text) => Some(parse_arg_value(
                text,
                &At::Arg(format!("default of {}", doc.path).into()),
            )),
            DefaultValue::Unset | DefaultValue::Required | DefaultValue::Context(_) => None,
        })
    }

    /// Parses `key` with `conv`, turning its message into a positioned error.
    fn get<T>(
        &self,
        key: &str,
        conv: impl Fn(&Node) -> Result<T, String>,
    ) -> Result<Option<T>, ScenarioError> {
        let Some(node) = self.node(key)? else {
            return Ok(None);
        };
        let doc = self.doc(key)?;
        conv(&node)
            .map(Some)
            .map_err(|m| self.errors.at(&node.at, format!("{}: {m}", doc.path)))
    }

    /// Fails with "missing key" when `v` is `None`.
    pub(crate) fn required<T>(&self, key: &str, v: Option<T>) -> Result<T, ScenarioError> {
        v.ok_or_else(|| self.missing(key))
    }

    /// The "missing key" error, pointing at the table.
    pub(crate) fn missing(&self, key: &str) -> ScenarioError {
        self.errors
            .at(&self.at, format!("missing key {}", self.path_of(key)))
    }

    /// A duration.
    pub(crate) fn duration(&self, key: &str) -> Result<Option<Duration>, ScenarioError> {
        self.get(key, |n| match &n.val {
            Val::Str(s) => units::parse_duration(s).map_err(msg),
            Val::Int(0) => Ok(Duration::ZERO),
            // Milliseconds or seconds? A guess would silently scale the experiment by 1000x.
            Val::Int(i) => Err(format!(
                "{i} has no unit; write a duration such as \"{i}ms\" or \"{i}s\""
            )),
            other => Err(expected("a duration such as \"20ms\"", other)),
        })
    }

    /// A rate.
    pub(crate) fn rate(&self, key: &str) -> Result<Option<Rate>, ScenarioError> {
        self.get(key, |n| rate_of(&n.val))
    }

    /// A size in bytes.
    pub(crate) fn size(&self, key: &str) -> Result<Option<u64>, ScenarioError> {
        self.get(key, |n| match &n.val {
            Val::Str(s) => units::parse_size(s).map_err(msg),
            Val::Int(i) => u64::try_from(*i).map_err(|_| "a size cannot be negative".to_string()),
            other => Err(expected("a size such as \"10MB\"", other)),
        })
    }

    /// A probability in `[0, 1]`.
    ///
    /// A bare number of 0.05 or more for the rate of an event (loss, corruption, duplication,
    /// reordering) is accepted but warned about with the percentage form: `loss = 0.5` is 50%,
    /// and usually meant as 0.5%. The Gilbert-Elliott state probabilities are not such rates:
    /// `gamma = 0.99875` or `h = 0.5` are what they mean.
    pub(crate) fn probability(&self, key: &str) -> Result<Option<f64>, ScenarioError> {
        let p = self.get(key, |n| probability_of(&n.val))?;
        let event_rate = !STATE_PROBABILITIES.contains(&self.doc(key)?.path);
        if let (true, Some(p), Some(node)) = (event_rate, p, self.node(key)?) {
            self.warn_bare_probability(&self.path_of(key), &node, p);
        }
        Ok(p)
    }

    /// Warns when `node` (at the user's `path`) is a bare number `p` ≥ 0.05 rather than a
    /// percentage string.
    pub(crate) fn warn_bare_probability(&self, path: &str, node: &Node, p: f64) {
        let bare = matches!(node.val, Val::Float(_) | Val::Int(_));
        if bare && p >= BARE_PROBABILITY_WARN {
            self.errors.warn(
                &node.at,
                format!(
                    "{path} = {p} is a probability, i.e. {}; if you meant {p}%, write \"{p}%\"",
                    units::format_probability(p)
                ),
            );
        }
    }

    /// A number.
    pub(crate) fn float(&self, key: &str) -> Result<Option<f64>, ScenarioError> {
        self.get(key, |n| match &n.val {
            Val::Float(x) if x.is_finite() => Ok(*x),
            Val::Int(i) => Ok(*i as f64),
            other => Err(expected("a number", other)),
        })
    }

    /// A non-negative integer.
    pub(crate) fn uint(&self, key: &str) -> Result<Option<u64>, ScenarioError> {
        self.get(key, |n| match &n.val {
            Val::Int(i) => u64::try_from(*i).map_err(|_| "must not be negative".to_string()),
            other => Err(expected("an integer", other)),
        })
    }

    /// An integer in `[min, max]`.
    pub(crate) fn uint_in(
        &self,
        key: &str,
        min: u64,
        max: u64,
    ) -> Result<Option<u64>, ScenarioError> {
        self.get(key, |n| match &n.val {
            Val::Int(i) => u64::try_from(*i)
                .ok()
                .filter(|v| (min..=max).contains(v))
                .ok_or_else(|| format!("{i} is not within {min} and {max}")),
            other => Err(expected("an integer", other)),
        })
    }

    /// A boolean.
    pub(crate) fn boolean(&self, key: &str) -> Result<Option<bool>, ScenarioError> {
        self.get(key, |n| match &n.val {
            Val::Bool(b) => Ok(*b),
            other => Err(expected("true or false", other)),
        })
    }

    /// A string.
    pub(crate) fn string(&self, key: &str) -> Result<Option<String>, ScenarioError> {
        self.get(key, |n| match &n.val {
            Val::Str(s) => Ok(s.clone()),
            other => Err(expected("a string", other)),
        })
    }

    /// A packet count.
    pub(crate) fn packets(&self, key: &str) -> Result<Option<u64>, ScenarioError> {
        self.get(key, |n| match &n.val {
            Val::Str(s) => units::parse_packets(s).map_err(msg),
            Val::Int(i) => u64::try_from(*i).map_err(|_| "must not be negative".to_string()),
            other => Err(expected("a packet count such as \"10pkt\"", other)),
        })
    }

    /// A queue expression.
    pub(crate) fn queue(&self, key: &str) -> Result<Option<QueueSpec>, ScenarioError> {
        self.get(key, |n| match &n.val {
            Val::Str(s) => parse_queue(s).map_err(msg),
            other => Err(expected(
                "a queue such as \"25pkt\", \"64KB\" or \"1bdp\"",
                other,
            )),
        })
    }

    /// The variant of `T` that `key` names. The registry lists `T::NAMES` as the key's allowed
    /// values, so every accepted name selects a variant.
    pub(crate) fn choice<T: Choice>(&self, key: &str) -> Result<Option<T>, ScenarioError> {
        debug_assert_eq!(
            self.doc(key)?.allowed,
            T::NAMES,
            "the registry's allowed values of {key} are not the names of the type it resolves to"
        );
        let Some(name) = self.choice_name(key)? else {
            return Ok(None);
        };
        match T::from_name(name) {
            Some(v) => Ok(Some(v)),
            None => Err(self.errors.at(
                self.at(),
                format!("{}: {name:?} selects nothing", self.path_of(key)),
            )),
        }
    }

    /// One of the registry's allowed values of `key`, as written.
    pub(crate) fn choice_name(&self, key: &str) -> Result<Option<&'static str>, ScenarioError> {
        let doc = self.doc(key)?;
        let Some(node) = self.node(key)? else {
            return Ok(None);
        };
        let found = match &node.val {
            // `--set flow.tls=1.3` reads 1.3 as a TOML float; it still names the value "1.3".
            Val::Float(x) => doc
                .allowed
                .iter()
                .find(|a| a.parse::<f64>().ok() == Some(*x))
                .copied()
                .ok_or_else(|| format!("unknown value {x}")),
            Val::Str(s) => doc
                .allowed
                .iter()
                .find(|a| **a == s.as_str())
                .copied()
                .ok_or_else(|| format!("unknown value {s:?}")),
            other => Err(expected("a string", other)),
        };
        found.map(Some).map_err(|m| {
            self.errors
                .at(&node.at, format!("{m} for {}", doc.path))
                .with_allowed(doc.allowed)
        })
    }
}

impl Reader<'_> {
    /// The user's value of `key` (`None` when unset: the knob's type has the default), parsed
    /// by the key's kind, checked against its bounds and turned into the value serde reads a
    /// knob field from.
    pub(crate) fn value(&self, key: &str) -> Result<Option<serde_json::Value>, ScenarioError> {
        let Some(entry) = self.entry(key) else {
            return Ok(None);
        };
        let doc = self.doc(key)?;
        let out_of_bounds = |m: String| Err(self.errors.at(&entry.node.at, m));
        let value = match (doc.kind, doc.bounds) {
            (Kind::Duration, bounds) => {
                let d = self.required(key, self.duration(key)?)?;
                if bounds == Bounds::Positive && d.is_zero() {
                    return out_of_bounds(format!(
                        "{} must be greater than zero",
                        self.path_of(key)
                    ));
                }
                if let Bounds::DurationWithin(min, max) = bounds {
                    if !(min..=max).contains(&d) {
                        return out_of_bounds(format!(
                            "{} = {d:?} is not within {min:?} and {max:?}",
                            self.path_of(key)
                        ));
                    }
                }
                json(d)
            }
            (Kind::Float, Bounds::Fraction { zero, one }) => {
                let x = self.required(key, self.float(key)?)?;
                let low_ok = if zero { x >= 0.0 } else { x > 0.0 };
                let high_ok = if one { x <= 1.0 } else { x < 1.0 };
                if !(low_ok && high_ok) {
                    let (open, close) = (if zero { '[' } else { '(' }, if one { ']' } else { ')' });
                    return out_of_bounds(format!(
                        "{} = {x} is not in {open}0, 1{close}",
                        self.path_of(key)
                    ));
                }
                json(x)
            }
            (Kind::Size, Bounds::Within(min, max)) => {
                let v = self.required(key, self.size(key)?)?;
                if !(min..=max).contains(&v) {
                    return out_of_bounds(format!(
                        "{} = {v} B is not within {min} B and {max} B",
                        self.path_of(key)
                    ));
                }
                json(v)
            }
            (Kind::Size, _) => json(self.required(key, self.size(key)?)?),
            (Kind::Int, Bounds::Within(min, max)) => {
                json(self.required(key, self.uint_in(key, min, max)?)?)
            }
            (Kind::Int, _) => json(self.required(key, self.uint(key)?)?),
            (Kind::Packets, _) => json(self.required(key, self.packets(key)?)?),
            (Kind::Bool, _) => json(self.required(key, self.boolean(key)?)?),
            (Kind::Float, _) => json(self.required(key, self.float(key)?)?),
            (Kind::Probability, _) => json(self.required(key, self.probability(key)?)?),
            (Kind::Enum, _) => json(self.required(key, self.choice_name(key)?)?),
            (Kind::Str, _) => json(self.required(key, self.string(key)?)?),
            (kind, _) => {
                return Err(self.errors.whole(format!(
                    "internal: {} of kind {} is not a knob",
                    doc.path,
                    kind.name()
                )))
            }
        };
        Ok(Some(value))
    }
}

/// A parsed value as serde sees it (plain data: serializing it cannot fail).
fn json<T: serde::Serialize>(v: T) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}

/// Parses a rate value: a string with a unit, or 0. A bare number is refused like a bare
/// duration (`rate = 20` as 20 bit/s would starve a link meant to run at 20 Mbit/s).
pub(crate) fn rate_of(v: &Val) -> Result<Rate, String> {
    match v {
        Val::Str(s) => units::parse_rate(s).map_err(msg),
        Val::Int(0) => Ok(Rate::Bps(0)),
        Val::Int(i) if *i < 0 => Err("a rate cannot be negative".to_string()),
        Val::Int(i) => Err(units::bare_rate_message(&i.to_string())),
        Val::Float(x) if x.is_finite() && *x >= 0.0 => {
            Err(units::bare_rate_message(&x.to_string()))
        }
        other => Err(expected("a rate such as \"10Mbit\"", other)),
    }
}

/// Probabilities of a loss model's states rather than rates of an event: values near 1
/// (`gamma`, `beta`, `k`) or anywhere in [0, 1] (`r`, `h`) are normal, so a bare number is never
/// a percentage written without its `%`.
const STATE_PROBABILITIES: [&str; 5] = [
    "link.loss.r",
    "link.loss.k",
    "link.loss.h",
    "link.loss.gamma",
    "link.loss.beta",
];

/// A bare probability from which on a warning names the percentage form (5%: rarely meant on a
/// link, while "0.5" for "0.5%" is a common slip).
const BARE_PROBABILITY_WARN: f64 = 0.05;

/// Parses a probability value (`"1.5%"` or a number in `[0, 1]`).
pub(crate) fn probability_of(v: &Val) -> Result<f64, String> {
    match v {
        Val::Str(s) => units::parse_probability(s).map_err(msg),
        Val::Float(x) => units::check_probability(*x).map_err(msg),
        Val::Int(i) => units::check_probability(*i as f64).map_err(msg),
        other => Err(expected("a probability such as \"1.5%\" or 0.015", other)),
    }
}

fn msg(e: UnitError) -> String {
    e.0
}

/// "expected X, found Y".
pub(crate) fn expected(what: &str, found: &Val) -> String {
    format!("expected {what}, found {}", found.type_name())
}
