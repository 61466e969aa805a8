//! The rate of one link direction: fixed, a schedule written in the file, a CSV trace, or a
//! Mahimahi packet-delivery trace.

use std::io::BufRead;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use netem::config::RateProfile;

use crate::error::{At, ScenarioError};
use crate::input::open_regular;
use crate::limits::{MAX_RATE_STEPS, MAX_TRACE_BYTES};
use crate::read::{expected, rate_of, Reader};
use crate::tree::{Node, Val};
use crate::units::{parse_duration, parse_rate_or_bps, Rate};

/// The keys that set a rate; one table sets at most one of them.
const RATE_KEYS: [&str; 4] = ["rate", "rate_schedule", "rate_trace", "mahimahi_trace"];

/// Resolves `rate` / `rate_schedule` / `rate_trace` / `mahimahi_trace` and `rate_repeat` of
/// one direction.
///
/// The most specific table that sets any of the three decides alone, so `[link.down]` with a
/// schedule replaces a plain `rate` of `[link]` instead of conflicting with it.
pub(crate) fn rate_profile(r: &Reader<'_>, base_dir: &Path) -> Result<RateProfile, ScenarioError> {
    let mut chosen = None;
    for layer in 0..r.layer_count() {
        let set: Vec<&str> = RATE_KEYS
            .into_iter()
            .filter(|k| r.has_in_layer(layer, k))
            .collect();
        if let [_, second, ..] = set.as_slice() {
            let at = r
                .entry(second)
                .map_or_else(|| r.at().clone(), |e| e.key_at.clone());
            return Err(r
                .errors
                .at(&at, format!("set only one of {}", RATE_KEYS.join(", "))));
        }
        if let Some(k) = set.first() {
            chosen = Some(*k);
            break;
        }
    }
    let profile = match chosen {
        Some("rate_schedule") => schedule(r, base_dir, false)?,
        Some("rate_trace") => schedule(r, base_dir, true)?,
        Some("mahimahi_trace") => {
            if let Some(e) = r.entry("rate_repeat") {
                return Err(r.errors.at(
                    &e.node.at,
                    "rate_repeat cannot be set with mahimahi_trace: a Mahimahi trace repeats \
                     with its own period (its last timestamp)",
                ));
            }
            mahimahi(r, base_dir)?
        }
        _ => match r.rate("rate")? {
            Some(Rate::Bps(b)) => RateProfile::Fixed(b),
            Some(Rate::Unlimited) | None => RateProfile::Unlimited,
        },
    };
    let repeat = r.duration("rate_repeat")?;
    match (profile, repeat) {
        (RateProfile::Schedule { steps, .. }, Some(period)) => {
            let last = steps.last().map_or(Duration::ZERO, |s| s.0);
            if period <= last {
                let at = r
                    .entry("rate_repeat")
                    .map_or_else(|| r.at().clone(), |e| e.node.at.clone());
                return Err(r.errors.at(
                    &at,
                    "rate_repeat must be longer than the time of the last rate step",
                ));
            }
            Ok(RateProfile::Schedule {
                steps,
                repeat_every: Some(period),
            })
        }
        (_, Some(_)) => {
            let at = r
                .entry("rate_repeat")
                .map_or_else(|| r.at().clone(), |e| e.node.at.clone());
            Err(r
                .errors
                .at(&at, "rate_repeat needs rate_schedule or rate_trace"))
        }
        (profile, None) => Ok(profile),
    }
}

fn schedule(r: &Reader<'_>, base_dir: &Path, trace: bool) -> Result<RateProfile, ScenarioError> {
    let key = if trace { "rate_trace" } else { "rate_schedule" };
    let Some(node) = r.node(key)? else {
        return Ok(RateProfile::Unlimited);
    };
    let steps = if trace {
        load_trace(r, &node, base_dir)?
    } else {
        inline_steps(r, &node)?
    };
    Ok(RateProfile::Schedule {
        steps,
        repeat_every: None,
    })
}

fn inline_steps(r: &Reader<'_>, node: &Node) -> Result<Vec<(Duration, u64)>, ScenarioError> {
    let Val::Array(items) = &node.val else {
        return Err(r.errors.at(
            &node.at,
            format!(
                "rate_schedule: {}",
                expected("an array of { at, rate } tables", &node.val)
            ),
        ));
    };
    if items.len() > MAX_RATE_STEPS {
        return Err(r.errors.at(
            &node.at,
            format!(
                "rate_schedule has {} steps; at most {MAX_RATE_STEPS} are allowed",
                items.len()
            ),
        ));
    }
    let mut steps = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let Val::Table(t) = &item.val else {
            return Err(r.errors.at(
                &item.at,
                format!(
                    "rate_schedule: {}",
                    expected("a { at, rate } table", &item.val)
                ),
            ));
        };
        let path = format!("{}[{i}]", r.path_of("rate_schedule"));
        let item_reader = Reader::new(t, &item.at, "link.rate_schedule[]", &path, r.errors)?;
        let at = item_reader.duration("at")?;
        let at = item_reader.required("at", at)?;
        let rate = item_reader.rate("rate")?;
        let rate = match item_reader.required("rate", rate)? {
            Rate::Bps(b) => b,
            Rate::Unlimited => {
                return Err(r
                    .errors
                    .at(&item.at, "a rate schedule step cannot be unlimited"))
            }
        };
        check_step(&steps, at).map_err(|m| r.errors.at(&item.at, m))?;
        steps.push((at, rate));
    }
    if steps.is_empty() {
        return Err(r
            .errors
            .at(&node.at, "rate_schedule needs at least one step"));
    }
    Ok(steps)
}

/// Steps start at zero and strictly increase.
fn check_step(steps: &[(Duration, u64)], at: Duration) -> Result<(), String> {
    match steps.last() {
        None if !at.is_zero() => Err("the first rate step must be at 0s".to_string()),
        Some(prev) if prev.0 >= at => {
            Err("rate steps must be in strictly increasing time order".to_string())
        }
        _ => Ok(()),
    }
}

/// Reads a `seconds,rate` CSV file named by `node`, relative to `base_dir`.
fn load_trace(
    r: &Reader<'_>,
    node: &Node,
    base_dir: &Path,
) -> Result<Vec<(Duration, u64)>, ScenarioError> {
    let Val::Str(rel) = &node.val else {
        return Err(r.errors.at(
            &node.at,
            format!("rate_trace: {}", expected("a file path", &node.val)),
        ));
    };
    let path = base_dir.join(rel);
    let reader = open_regular(&path, MAX_TRACE_BYTES).map_err(|e| {
        r.errors
            .at(&node.at, format!("rate trace {}: {}", path.display(), e.0))
    })?;
    let file: Arc<str> = path.display().to_string().into();
    let mut steps = Vec::new();
    // Line by line: the file is never held whole, only its steps.
    for (i, line) in reader.lines().enumerate() {
        let at = At::OtherFile {
            file: file.clone(),
            line: i + 1,
        };
        let line = line.map_err(|e| r.errors.at(&at, format!("cannot read: {e}")))?;
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if steps.len() == MAX_RATE_STEPS {
            return Err(r.errors.at(
                &at,
                format!("a rate trace has at most {MAX_RATE_STEPS} steps"),
            ));
        }
        let (secs, rate) = line
            .split_once(',')
            .ok_or_else(|| r.errors.at(&at, "expected `seconds,rate`"))?;
        let t = parse_duration(&format!("{}s", secs.trim()))
            .map_err(|e| r.errors.at(&at, format!("time: {e}")))?;
        // The trace format's bare numbers are bit/s (`0,10000000`), as documented.
        let rate = parse_rate_or_bps(rate.trim())
            .map_err(|e| r.errors.at(&at, format!("rate: {e}")))
            .and_then(|rate| match rate {
                Rate::Bps(b) => Ok(b),
                Rate::Unlimited => Err(r.errors.at(&at, "a rate trace step cannot be unlimited")),
            })?;
        check_step(&steps, t).map_err(|m| r.errors.at(&at, m))?;
        steps.push((t, rate));
    }
    if steps.is_empty() {
        return Err(r.errors.at(
            &node.at,
            format!("rate trace {} has no steps", path.display()),
        ));
    }
    Ok(steps)
}

/// Reads the Mahimahi trace named by `mahimahi_trace`, relative to `base_dir`, into the
/// repeating schedule of [`netem::mahimahi`] (line by line: only the merged steps are held).
fn mahimahi(r: &Reader<'_>, base_dir: &Path) -> Result<RateProfile, ScenarioError> {
    let Some(node) = r.node("mahimahi_trace")? else {
        return Ok(RateProfile::Unlimited);
    };
    let Val::Str(rel) = &node.val else {
        return Err(r.errors.at(
            &node.at,
            format!("mahimahi_trace: {}", expected("a file path", &node.val)),
        ));
    };
    let path = base_dir.join(rel);
    // Every error names the key's place in the scenario and, for a line, the trace's line.
    let fail = |line: Option<usize>, message: String| {
        let place = match line {
            Some(l) => format!("{} line {l}", path.display()),
            None => path.display().to_string(),
        };
        r.errors
            .at(&node.at, format!("mahimahi_trace {place}: {message}"))
    };
    let reader = open_regular(&path, MAX_TRACE_BYTES).map_err(|e| fail(None, e.0))?;
    let mut builder = netem::mahimahi::TraceBuilder::new(MAX_RATE_STEPS);
    let mut last_line = 0;
    for (i, line) in reader.lines().enumerate() {
        let n = i + 1;
        let line = line.map_err(|e| fail(Some(n), format!("cannot read: {e}")))?;
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        let ms = text
            .parse::<u64>()
            .ok()
            .filter(|_| text.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| {
                fail(
                    Some(n),
                    format!(
                        "{text:?} is not a time in whole milliseconds (an integer from 0 to {})",
                        u64::MAX
                    ),
                )
            })?;
        builder.push(ms).map_err(|e| fail(Some(n), e.to_string()))?;
        last_line = n;
    }
    builder.finish().map_err(|e| {
        let line = match e {
            netem::mahimahi::TraceError::Empty => None,
            _ => Some(last_line),
        };
        fail(line, e.to_string())
    })
}

/// Parses a rate value that must be a number of bit/s or "unlimited" (access links).
pub(crate) fn fixed_profile(v: &Val) -> Result<RateProfile, String> {
    Ok(match rate_of(v)? {
        Rate::Bps(b) => RateProfile::Fixed(b),
        Rate::Unlimited => RateProfile::Unlimited,
    })
}
