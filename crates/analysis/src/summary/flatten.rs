//! Numeric metrics out of run JSON, addressed by dotted paths such as `flows.0.goodput_bps`.

use std::collections::BTreeMap;

use serde_json::Value;

/// Object key whose subtree is never flattened: time series are plotted, not averaged.
pub const SKIPPED_KEY: &str = "series";

/// Every numeric leaf of `value` under its dotted path; array elements are indexed by position.
///
/// Booleans, strings and nulls are not metrics and are left out, as is anything under a key named
/// [`SKIPPED_KEY`]. A key that itself contains a dot yields an ambiguous path; run results should
/// not use such keys.
pub fn flatten_numeric(value: &Value) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    walk(value, &mut String::new(), &mut out);
    out
}

fn walk(value: &Value, path: &mut String, out: &mut BTreeMap<String, f64>) {
    match value {
        Value::Number(n) => {
            if let Some(x) = n.as_f64() {
                out.insert(path.clone(), x);
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                if k != SKIPPED_KEY {
                    descend(v, path, k, out);
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                descend(v, path, &i.to_string(), out);
            }
        }
        Value::Null | Value::Bool(_) | Value::String(_) => {}
    }
}

/// Walks `value` with `segment` appended to `path`, restoring `path` afterwards.
fn descend(value: &Value, path: &mut String, segment: &str, out: &mut BTreeMap<String, f64>) {
    let len = path.len();
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(segment);
    walk(value, path, out);
    path.truncate(len);
}

/// The values of each dotted path across `runs`; runs where a path is missing or not a number
/// contribute nothing to it.
pub fn metrics_from_runs(runs: &[Value], paths: &[&str]) -> BTreeMap<String, Vec<f64>> {
    let mut out: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for path in paths {
        let values = runs
            .iter()
            .filter_map(|run| lookup(run, path)?.as_f64())
            .collect();
        out.insert((*path).to_owned(), values);
    }
    out
}

fn lookup<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(value, |v, seg| match v {
        Value::Object(map) => map.get(seg),
        Value::Array(items) => items.get(seg.parse::<usize>().ok()?),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> Value {
        json!({
            "id": "r1",
            "ok": true,
            "duration_s": 2.5,
            "flows": [
                { "goodput_bps": 9.5e6, "series": [[0, 1], [1, 2]], "stack": "quic" },
                { "goodput_bps": 4e6 }
            ],
            "link": { "drops": 3, "series": { "queue": [1, 2, 3] } }
        })
    }

    #[test]
    fn flattens_numeric_leaves_and_skips_series() {
        let got: Vec<(String, f64)> = flatten_numeric(&sample()).into_iter().collect();
        let want = [
            ("duration_s", 2.5),
            ("flows.0.goodput_bps", 9.5e6),
            ("flows.1.goodput_bps", 4e6),
            ("link.drops", 3.0),
        ];
        assert_eq!(got, want.map(|(k, v)| (k.to_owned(), v)));
    }

    #[test]
    fn extracts_paths_across_runs() {
        let other = json!({ "flows": [{ "goodput_bps": 1.0 }] });
        let got = metrics_from_runs(
            &[sample(), other],
            &["flows.0.goodput_bps", "flows.1.goodput_bps", "id", "nope.x"],
        );
        assert_eq!(got["flows.0.goodput_bps"], [9.5e6, 1.0]);
        assert_eq!(got["flows.1.goodput_bps"], [4e6]);
        assert!(got["id"].is_empty() && got["nope.x"].is_empty());
    }
}
