//! The bottleneck of a point in words, for the report: rate, one-way delay, queue, loss, as a
//! reader of a paper's set-up section expects them (`10 Mbit/s, 20 ms one-way, CoDel queue of
//! 1000 packets, 2% random loss`), read from the scenario `sweep.json` records.

use serde_json::Value;

/// Both directions of a bottleneck (`{"up": link, "down": link}`) in words; `None` when the
/// record has neither.
pub fn describe(bottleneck: &Value) -> Option<String> {
    let down = bottleneck.get("down").map(direction);
    let up = bottleneck.get("up").map(direction);
    match (down, up) {
        (Some(d), Some(u)) if d == u => Some(format!("{d}, in both directions")),
        (Some(d), Some(u)) => Some(format!("down (server → client): {d}; up: {u}")),
        (Some(d), None) => Some(format!("down: {d}")),
        (None, Some(u)) => Some(format!("up: {u}")),
        (None, None) => None,
    }
}

/// One direction (`LinkConfig` as serialised) in words.
fn direction(link: &Value) -> String {
    let mut parts = Vec::new();
    parts.push(match link.get("rate") {
        Some(Value::Object(m)) => match m.get("Fixed").and_then(Value::as_f64) {
            Some(bps) => rate(bps),
            None => format!(
                "variable rate ({})",
                m.keys().next().map_or("", String::as_str).to_lowercase()
            ),
        },
        _ => "unlimited rate".into(),
    });
    if let Some(d) = link.get("delay").and_then(seconds) {
        parts.push(format!("{} one-way", ms(d)));
    }
    let qdisc = match link.get("qdisc") {
        Some(Value::String(s)) => qdisc_name(s),
        Some(Value::Object(m)) => qdisc_name(m.keys().next().map_or("", String::as_str)),
        _ => "drop-tail".into(),
    };
    let queue = link.get("queue");
    let packets = queue.and_then(|q| q.get("packets")).and_then(Value::as_u64);
    let bytes = queue.and_then(|q| q.get("bytes")).and_then(Value::as_u64);
    parts.push(match (packets, bytes) {
        (Some(p), _) => format!("{qdisc} queue of {p} packets"),
        (None, Some(b)) => format!("{qdisc} queue of {b} bytes"),
        (None, None) => format!("{qdisc} queue"),
    });
    match link.get("loss") {
        Some(Value::Object(m)) => {
            let (kind, params) = m.iter().next().map_or(("", &Value::Null), |(k, v)| (k, v));
            let p = params.get("p").and_then(Value::as_f64);
            parts.push(match (kind, p) {
                ("Bernoulli", Some(p)) => format!("{} random loss", percent(p)),
                ("Periodic", Some(p)) => format!("{} periodic loss", percent(p)),
                ("BoundedBernoulli", Some(p)) => format!(
                    "{} random loss in bursts of at most {}",
                    percent(p),
                    params.get("max_burst").and_then(Value::as_u64).unwrap_or(0)
                ),
                ("GilbertElliott", _) => "Gilbert–Elliott (bursty) loss".into(),
                _ => format!("{} loss", kind.to_lowercase()),
            });
        }
        Some(Value::String(s)) if s != "None" => parts.push(format!("{} loss", s.to_lowercase())),
        _ => {}
    }
    for (key, what) in [
        ("corrupt", "of packets corrupted"),
        ("duplicate", "of packets duplicated"),
    ] {
        if let Some(p) = link.get(key).and_then(Value::as_f64).filter(|p| *p > 0.0) {
            parts.push(format!("{} {what}", percent(p)));
        }
    }
    if let Some(b) = link
        .get("bit_error_rate")
        .and_then(Value::as_f64)
        .filter(|b| *b > 0.0)
    {
        parts.push(format!("bit error rate {b:e}"));
    }
    parts.join(", ")
}

fn seconds(v: &Value) -> Option<f64> {
    let secs = v.get("secs")?.as_f64()?;
    let nanos = v.get("nanos")?.as_f64()?;
    Some(secs + nanos / 1e9)
}

fn rate(bps: f64) -> String {
    let (v, unit) = match bps {
        b if b >= 1e9 => (b / 1e9, "Gbit/s"),
        b if b >= 1e6 => (b / 1e6, "Mbit/s"),
        b if b >= 1e3 => (b / 1e3, "kbit/s"),
        b => (b, "bit/s"),
    };
    format!("{} {unit}", crate::chart::tick(v))
}

fn ms(s: f64) -> String {
    format!("{} ms", crate::chart::tick(s * 1e3))
}

fn percent(p: f64) -> String {
    format!("{}%", crate::chart::tick(p * 100.0))
}

/// A queue discipline's serialised name as people write it.
fn qdisc_name(name: &str) -> String {
    match name {
        "DropTail" | "" => "drop-tail".into(),
        "Codel" | "CoDel" => "CoDel".into(),
        "FqCodel" | "FqCoDel" => "FQ-CoDel".into(),
        "Pie" => "PIE".into(),
        "Red" => "RED".into(),
        "DualPi2" => "DualPI2".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_bottleneck_reads_as_a_papers_setup() {
        let down = json!({"rate": {"Fixed": 100000000}, "delay": {"secs": 0, "nanos": 500000},
            "queue": {"packets": 1000, "bytes": null}, "loss": {"Bernoulli": {"p": 0.02}},
            "corrupt": 0.0, "bit_error_rate": 0.0, "duplicate": 0.0, "qdisc": "DropTail"});
        let mut up = down.clone();
        up["loss"] = json!("None");
        assert_eq!(
            describe(&json!({"down": down, "up": up})).unwrap(),
            "down (server → client): 100 Mbit/s, 0.5 ms one-way, drop-tail queue of 1000 \
             packets, 2% random loss; up: 100 Mbit/s, 0.5 ms one-way, drop-tail queue of 1000 \
             packets"
        );
        let codel = json!({"rate": {"Fixed": 10000000}, "delay": {"secs": 0, "nanos": 20000000},
            "queue": {"packets": 1000}, "loss": "None", "qdisc": {"Codel": {"target": 5}}});
        assert_eq!(
            describe(&json!({"down": codel, "up": codel})).unwrap(),
            "10 Mbit/s, 20 ms one-way, CoDel queue of 1000 packets, in both directions"
        );
    }
}
