//! Sweep axes from `[sweep]` and the command line, and their cartesian product.

use crate::error::{At, Errors, ScenarioError};
use crate::paths::{parse_key, KeyPath, PathError};
use crate::tree::{parse_arg_value, Node, Table, Val};

/// Keys that describe the set of runs, not one run, and so cannot vary between points.
const NOT_SWEEPABLE: [&str; 2] = ["run.seed", "run.reps"];

/// Refuses to enumerate more points than this (a typo in an axis should not fill a disk).
///
/// Memory grows with the points: each is a resolved scenario, a line of `sweep.json` and
/// about 60 summary rows (`summary.csv`, the printed table). Measured peak RSS of a whole
/// sweep (`quiclab sim --out`, one tiny run per point): 373 MB at 10,000 points; the old
/// limit of 100,000 needed ~6 GB before the manifest was streamed and would still need
/// ~3.7 GB. 20,000 keeps a sweep under 1 GB.
pub const MAX_POINTS: usize = 20_000;

/// Refuses sweeps of more runs than this (points × `run.reps`): `results.jsonl` is read whole
/// to resume and finalise (about 1.5 kB per run), so this bounds that to a few hundred MB.
pub const MAX_RUNS: u64 = 200_000;

/// One sweep axis: a key and the values it takes.
#[derive(Debug, Clone)]
pub(crate) struct Axis {
    pub key: KeyPath,
    pub values: Vec<Node>,
}

pub(crate) fn path_error(errors: &Errors, at: &At, e: PathError) -> ScenarioError {
    let title = format!("allowed keys in {}", e.place);
    errors
        .at(at, e.message)
        .with_allowed_titled(&title, &e.allowed)
}

fn axis(
    key_text: &str,
    key_at: &At,
    values: Vec<Node>,
    errors: &Errors,
) -> Result<Axis, ScenarioError> {
    crate::variant::refuse_variant_key(key_text, key_at, errors)?;
    let key = parse_key(key_text).map_err(|e| path_error(errors, key_at, e))?;
    if NOT_SWEEPABLE.contains(&key.doc.path) {
        return Err(errors.at(
            key_at,
            format!("{} cannot be swept: it applies to all points", key.doc.path),
        ));
    }
    if values.is_empty() {
        return Err(errors.at(key_at, format!("sweep axis {key_text} has no values")));
    }
    Ok(Axis { key, values })
}

/// Takes `[sweep]` out of the root and returns its axes in file order. Both
/// `"link.rate" = [...]` and `link.rate = [...]` (nested tables) are accepted.
pub(crate) fn take_file_axes(
    root: &mut Table,
    errors: &Errors,
) -> Result<Vec<Axis>, ScenarioError> {
    let Some(pos) = root.entries.iter().position(|e| e.key == "sweep") else {
        return Ok(Vec::new());
    };
    let entry = root.entries.remove(pos);
    let mut axes = Vec::new();
    flatten(&entry.node, "", &entry.key_at, errors, &mut axes)?;
    Ok(axes)
}

fn flatten(
    node: &Node,
    prefix: &str,
    key_at: &At,
    errors: &Errors,
    out: &mut Vec<Axis>,
) -> Result<(), ScenarioError> {
    match &node.val {
        Val::Table(t) => {
            for e in &t.entries {
                let key = if prefix.is_empty() {
                    e.key.clone()
                } else {
                    format!("{prefix}.{}", e.key)
                };
                flatten(&e.node, &key, &e.key_at, errors, out)?;
            }
            Ok(())
        }
        Val::Array(values) if !prefix.is_empty() => {
            out.push(axis(prefix, key_at, values.clone(), errors)?);
            Ok(())
        }
        other => Err(errors.at(
            &node.at,
            format!(
                "sweep: expected a table of `\"key\" = [values]`, found {}",
                other.type_name()
            ),
        )),
    }
}

/// Parses a command-line axis `key=v1,v2,...`; commas inside quotes, `[]` or `{}` do not split.
pub(crate) fn parse_cli_axis(arg: &str, errors: &Errors) -> Result<Axis, ScenarioError> {
    // `--vary` is the flag's name (`--sweep` its alias; the CLI renames it back if typed so).
    let at = At::Arg(format!("--vary {arg}").into());
    let (key, values) = arg
        .split_once('=')
        .ok_or_else(|| errors.at(&at, "expected key=value1,value2,..."))?;
    let nodes = split_top_level(values)
        .into_iter()
        .map(|v| parse_arg_value(v, &at))
        .collect();
    axis(key, &at, nodes, errors)
}

fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut quote, mut start) = (0i32, None, 0);
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[' | '{') => depth += 1,
            (None, ']' | '}') => depth -= 1,
            (None, ',') if depth == 0 => {
                parts.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(text[start..].trim());
    parts.into_iter().filter(|p| !p.is_empty()).collect()
}

/// Adds `extra` axes: one with the same key as an existing axis replaces it in place.
pub(crate) fn merge_axes(axes: &mut Vec<Axis>, extra: Vec<Axis>) {
    for a in extra {
        match axes.iter_mut().find(|x| x.key.text == a.key.text) {
            Some(existing) => *existing = a,
            None => axes.push(a),
        }
    }
}

/// Every combination of axis values, the first axis varying slowest (like nested loops in
/// file order). Each point is a list of value indices, one per axis.
pub(crate) fn product(axes: &[Axis], errors: &Errors) -> Result<Vec<Vec<usize>>, ScenarioError> {
    let total = axes.iter().try_fold(1usize, |acc, a| {
        acc.checked_mul(a.values.len()).filter(|n| *n <= MAX_POINTS)
    });
    let total = total
        .ok_or_else(|| errors.whole(format!("the sweep has more than {MAX_POINTS} points")))?;
    let mut points = Vec::with_capacity(total);
    for mut n in 0..total {
        let mut idx = vec![0; axes.len()];
        for (slot, a) in idx.iter_mut().zip(axes).rev() {
            *slot = n % a.values.len();
            n /= a.values.len();
        }
        points.push(idx);
    }
    Ok(points)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_outside_brackets_and_quotes() {
        assert_eq!(
            split_top_level("1Mbit, 2Mbit,5Mbit"),
            ["1Mbit", "2Mbit", "5Mbit"]
        );
        assert_eq!(
            split_top_level("{ model = \"bernoulli\", p = 0.1 },\"a,b\""),
            ["{ model = \"bernoulli\", p = 0.1 }", "\"a,b\""]
        );
    }

    #[test]
    fn product_order_is_nested_loops() {
        let errors = Errors::new("t");
        let a = parse_cli_axis("link.rate=1Mbit,2Mbit", &errors).expect("axis");
        let b = parse_cli_axis("link.delay=1ms,2ms,3ms", &errors).expect("axis");
        let p = product(&[a, b], &errors).expect("small");
        assert_eq!(
            p,
            vec![
                vec![0, 0],
                vec![0, 1],
                vec![0, 2],
                vec![1, 0],
                vec![1, 1],
                vec![1, 2]
            ]
        );
    }
}
