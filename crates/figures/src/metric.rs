//! Metric paths: which ones to plot by default, `*` patterns, human labels and display units.
//!
//! Everything goes by the dotted path and the unit suffix of the field name (`_bps`, `_s`,
//! `_bytes` …), the schema's convention, so a metric added later (a fairness index, per-connection
//! timings) gets a sensible label and unit without code here.

use std::collections::BTreeSet;

/// Metrics plotted when the user names none; `*` matches one path segment (a flow index).
/// Paths containing a word of [`BY_NAME`] are added too.
pub const DEFAULT_METRICS: [&str; 9] = [
    "flows.*.goodput_bps",
    "flows.*.window_goodput_bps",
    "flows.*.completion_s",
    "flows.*.ttfb_s",
    "flows.*.handshake_s",
    "flows.*.packets_lost",
    "links.bottleneck_down.utilisation",
    "probes.*.rtt.p50_s",
    "probes.*.rtt.p99_s",
];

/// Words that make any metric a default one (fairness indices and shares come in later
/// schema versions under names like `fairness.jain`).
pub const BY_NAME: [&str; 3] = ["fairness", "jain", "share"];

/// Whether `path` matches `pattern` (`*` = exactly one segment).
pub fn matches(pattern: &str, path: &str) -> bool {
    let p: Vec<&str> = pattern.split('.').collect();
    let s: Vec<&str> = path.split('.').collect();
    p.len() == s.len() && p.iter().zip(&s).all(|(a, b)| *a == "*" || a == b)
}

/// The two metrics of a ratio `A / B` (a figure's `y` may divide one run metric by another,
/// e.g. `flows.0.ack_frames_sent / flows.0.packets_sent`, ACK frames per data packet); `None`
/// for a plain metric path.
pub fn ratio(metric: &str) -> Option<(&str, &str)> {
    let (a, b) = metric.split_once(" / ")?;
    Some((a.trim(), b.trim()))
}

/// The available metrics each pattern names, in pattern order then path order, no duplicates.
/// A pattern that matches nothing is returned in `unmatched`.
pub fn expand<'a>(
    patterns: &[String],
    available: &'a BTreeSet<String>,
) -> (Vec<String>, Vec<String>) {
    let mut out: Vec<String> = Vec::new();
    let mut unmatched = Vec::new();
    for pat in patterns {
        if let Some((a, b)) = ratio(pat) {
            if available.contains(a) && available.contains(b) {
                if !out.contains(pat) {
                    out.push(pat.clone());
                }
            } else {
                unmatched.push(pat.clone());
            }
            continue;
        }
        let hits: Vec<&'a String> = available.iter().filter(|m| matches(pat, m)).collect();
        if hits.is_empty() {
            unmatched.push(pat.clone());
        }
        for h in hits {
            if !out.contains(h) {
                out.push(h.clone());
            }
        }
    }
    (out, unmatched)
}

/// The default metrics present in `available`.
pub fn defaults(available: &BTreeSet<String>) -> Vec<String> {
    let mut pats: Vec<String> = DEFAULT_METRICS.iter().map(|s| s.to_string()).collect();
    for m in available {
        let lower = m.to_ascii_lowercase();
        if BY_NAME.iter().any(|w| lower.contains(w)) {
            pats.push(m.clone());
        }
    }
    expand(&pats, available).0
}

/// A display unit: multiply values by `factor` and label them `unit`.
#[derive(Debug, Clone, PartialEq)]
pub struct Scale {
    /// Multiplier from the stored unit.
    pub factor: f64,
    /// Unit label (may be empty for counts and fractions).
    pub unit: String,
}

/// The unit suffix of a field name and its base unit label.
fn base_unit(metric: &str) -> &'static str {
    if ratio(metric).is_some() {
        // A ratio of two metrics: a plain number whatever their units.
        return "";
    }
    let last = metric.rsplit('.').next().unwrap_or(metric);
    if last.ends_with("_bps") {
        "bit/s"
    } else if last.ends_with("_ms") {
        "ms"
    } else if last.ends_with("_us") {
        "µs"
    } else if last.ends_with("_s") {
        "s"
    } else if last.ends_with("_bytes") {
        "B"
    } else if last.ends_with("_packets") {
        "packets"
    } else {
        ""
    }
}

/// A unit for `metric` that shows values up to `max_abs` with few digits (Mbit/s, ms, kB …).
pub fn scale(metric: &str, max_abs: f64) -> Scale {
    let s = |factor: f64, unit: &str| Scale {
        factor,
        unit: unit.to_string(),
    };
    match base_unit(metric) {
        "bit/s" => match max_abs {
            m if m >= 1e9 => s(1e-9, "Gbit/s"),
            m if m >= 1e6 => s(1e-6, "Mbit/s"),
            m if m >= 1e3 => s(1e-3, "kbit/s"),
            _ => s(1.0, "bit/s"),
        },
        "s" if max_abs < 1.0 => s(1e3, "ms"),
        "B" => match max_abs {
            m if m >= 1e9 => s(1e-9, "GB"),
            m if m >= 1e6 => s(1e-6, "MB"),
            m if m >= 1e3 => s(1e-3, "kB"),
            _ => s(1.0, "B"),
        },
        u => s(1.0, u),
    }
}

/// The values a metric can take, as (lowest, highest): a confidence interval is drawn no
/// further. Every metric quiclab records is non-negative; fractions (a link's utilisation, a
/// flow's share, Jain's index) are at most 1; a study's relative differences are unbounded.
pub fn domain(metric: &str) -> (Option<f64>, Option<f64>) {
    let last = metric.rsplit('.').next().unwrap_or(metric);
    // A difference between variants (`relative_…`) has either sign.
    if last.starts_with("relative") {
        return (None, None);
    }
    let fraction = last == "utilisation" || last == "share" || last.starts_with("jain");
    (Some(0.0), fraction.then_some(1.0))
}

/// A human label: the field name without its unit suffix, and where it lives
/// (`flows.0.goodput_bps` → `goodput (flow bulk)`).
pub fn label(metric: &str, flow_names: &[String]) -> String {
    if let Some((a, b)) = ratio(metric) {
        return format!("{} / {}", label(a, flow_names), label(b, flow_names));
    }
    let segs: Vec<&str> = metric.split('.').collect();
    let last = segs.last().copied().unwrap_or(metric);
    let mut name = ["_bps", "_ms", "_us", "_s", "_bytes", "_packets"]
        .iter()
        .find_map(|suf| last.strip_suffix(suf))
        .unwrap_or(last)
        .replace('_', " ");
    let mut ctx = Vec::new();
    let mut i = 0;
    while i + 1 < segs.len() {
        let (k, v) = (segs[i], segs.get(i + 1).copied().unwrap_or(""));
        match (k, v.parse::<usize>()) {
            ("flows", Ok(n)) => {
                ctx.push(match flow_names.get(n) {
                    Some(f) if !f.is_empty() => format!("flow {f}"),
                    _ => format!("flow {n}"),
                });
                i += 2;
            }
            ("connections", Ok(n)) => {
                ctx.push(format!("connection {}", n + 1));
                i += 2;
            }
            // `probes.0.rtt.p99_s` → "rtt p99 (probe 1)": the delay's kind names the figure.
            ("probes", Ok(n)) => {
                ctx.push(format!("probe {}", n + 1));
                if i + 4 == segs.len() {
                    name = format!("{} {name}", segs[i + 2]);
                    i += 1;
                }
                i += 2;
            }
            (other, _) => {
                ctx.push(other.replace('_', " "));
                i += 1;
            }
        }
    }
    if ctx.is_empty() {
        name
    } else {
        format!("{name} ({})", ctx.join(", "))
    }
}

/// A [`label`] without where it was measured: `completion (flow page)` → `completion`.
pub fn without_context(label: &str) -> String {
    label.split(" (").next().unwrap_or(label).to_string()
}

/// `label` plus the unit in brackets when there is one.
pub fn axis_label(label: &str, scale: &Scale) -> String {
    if scale.unit.is_empty() {
        label.to_string()
    } else {
        format!("{label} [{}]", scale.unit)
    }
}

/// A file-name-safe version of `text` (letters, digits, `-`, `_`, `.` kept; others become `_`).
pub fn slug(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_one_segment() {
        assert!(matches("flows.*.goodput_bps", "flows.12.goodput_bps"));
        assert!(!matches(
            "flows.*.goodput_bps",
            "flows.0.connections.0.goodput_bps"
        ));
        let avail: BTreeSet<String> = [
            "flows.0.goodput_bps",
            "flows.1.goodput_bps",
            "fairness.jain",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let (got, missing) = expand(&["flows.*.goodput_bps".into(), "nope".into()], &avail);
        assert_eq!(got, ["flows.0.goodput_bps", "flows.1.goodput_bps"]);
        assert_eq!(missing, ["nope"]);
        assert!(
            defaults(&avail).contains(&"fairness.jain".to_string()),
            "picked up by name"
        );
    }

    #[test]
    fn labels_and_units_come_from_the_path() {
        let names = vec!["bulk".to_string()];
        assert_eq!(label("probes.0.rtt.p99_s", &names), "rtt p99 (probe 1)");
        assert_eq!(label("flows.0.goodput_bps", &names), "goodput (flow bulk)");
        assert_eq!(
            label("flows.0.connections.1.completion_s", &names),
            "completion (flow bulk, connection 2)"
        );
        assert_eq!(
            label("links.bottleneck_down.utilisation", &names),
            "utilisation (links, bottleneck down)"
        );
        assert_eq!(scale("flows.0.goodput_bps", 9.5e6).unit, "Mbit/s");
        assert_eq!(scale("flows.0.completion_s", 0.4).unit, "ms");
        assert_eq!(scale("flows.0.completion_s", 4.0).unit, "s");
        assert_eq!(scale("flows.0.packets_lost", 40.0).unit, "");
        assert_eq!(slug("a/b c.svg"), "a_b_c.svg");
    }
}
