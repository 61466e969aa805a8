//! Harm as Ware et al. define it (HotNets 2019, "Beyond Jain's Fairness Index: Setting the Bar
//! for the Deployment of Congestion Control Algorithms"): how much of a flow's performance a
//! competitor takes away, measured against the same flow running without it.
//!
//! For a metric where more is better (throughput), harm = (alone − with) / alone; where less is
//! better (delay, completion time, losses), harm = (with − alone) / with. 0 is no harm, 1 the
//! whole of it; a negative value means the competitor helped. The runs with and without the
//! competitor are the two variants of one sweep, paired repetition by repetition (they share
//! their randomness), so each pair gives one harm value and the rows report their mean with a
//! Student-t 95% interval.

use serde::Serialize;

use crate::paired::{PairedError, PairedSet};
use crate::stats::summarize;

/// Which way a metric improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Better {
    /// Throughput, goodput, utilisation, a fairness index or share.
    More,
    /// Delay, completion time, losses, retransmissions.
    Less,
}

/// Which way `metric` improves, from its name; `None` when the name does not say.
pub fn better(metric: &str) -> Option<Better> {
    let leaf = metric.rsplit('.').next().unwrap_or(metric);
    if leaf.ends_with("_bps")
        || leaf.contains("goodput")
        || leaf.contains("throughput")
        || leaf == "utilisation"
        || leaf == "share"
        || leaf.starts_with("jain")
    {
        Some(Better::More)
    } else if leaf.ends_with("_s")
        || leaf.contains("lost")
        || leaf.contains("retransmit")
        || leaf.contains("dropped")
    {
        Some(Better::Less)
    } else {
        None
    }
}

/// The harm one pair shows; `None` when its reference value is 0 (nothing to lose).
pub fn harm(better: Better, alone: f64, with: f64) -> Option<f64> {
    match better {
        Better::More if alone != 0.0 => Some((alone - with) / alone),
        Better::Less if with != 0.0 => Some((with - alone) / with),
        _ => None,
    }
}

/// The harm a variant (with the competitor) shows against the baseline (without it) at one
/// sweep point, for one metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HarmRow {
    /// The sweep point: its axes other than `variant`.
    pub point: Vec<(String, String)>,
    /// Dotted metric path.
    pub metric: String,
    /// Which way the metric improves.
    pub better: Better,
    /// The variant with the competitor.
    pub variant: String,
    /// The variant without it.
    pub alone: String,
    /// Pairs that gave a harm value.
    pub n_pairs: usize,
    /// Mean harm over the pairs.
    pub harm: f64,
    /// Student-t 95% interval of the mean (None with one pair).
    pub harm_ci: Option<(f64, f64)>,
}

/// The harm every variant shows against `alone` (the first variant when None), for each
/// metric whose direction [`better`] knows; the other metrics are returned by name.
pub fn harm_rows(
    set: &PairedSet,
    alone: Option<&str>,
) -> Result<(Vec<HarmRow>, Vec<String>), PairedError> {
    let mut rows = Vec::new();
    let mut unknown: Vec<String> = Vec::new();
    for pairs in set.pairs(alone)? {
        let Some(direction) = better(pairs.metric) else {
            if !unknown.iter().any(|m| m == pairs.metric) {
                unknown.push(pairs.metric.to_string());
            }
            continue;
        };
        let values: Vec<f64> = pairs
            .baseline_values
            .iter()
            .zip(&pairs.variant_values)
            .filter_map(|(a, w)| harm(direction, *a, *w))
            .collect();
        let Ok(s) = summarize(&values) else {
            continue;
        };
        rows.push(HarmRow {
            point: pairs.point.to_vec(),
            metric: pairs.metric.to_string(),
            better: direction,
            variant: pairs.variant.to_string(),
            alone: pairs.baseline.to_string(),
            n_pairs: s.n,
            harm: s.mean,
            harm_ci: (s.n >= 2).then_some((s.ci95_low, s.ci95_high)),
        });
    }
    Ok((rows, unknown))
}

/// The rows as a Markdown table: point, metric, variant, pairs, harm with its interval.
pub fn render(rows: &[HarmRow]) -> String {
    use tables::Align::{Left, Right};
    let mut t = tables::Markdown::with_columns([
        ("point", Left),
        ("metric", Left),
        ("better", Left),
        ("variant vs alone", Left),
        ("pairs", Right),
        ("harm", Right),
        ("95% CI", Right),
    ]);
    for r in rows {
        let point = r
            .point
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ");
        t.row([
            if point.is_empty() {
                "–".into()
            } else {
                point
            },
            r.metric.clone(),
            match r.better {
                Better::More => "more".into(),
                Better::Less => "less".into(),
            },
            format!("{} vs {}", r.variant, r.alone),
            r.n_pairs.to_string(),
            format!("{:.3}", r.harm),
            r.harm_ci
                .map_or("–".into(), |(lo, hi)| format!("[{lo:.3}, {hi:.3}]")),
        ]);
    }
    t.render()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axes(variant: &str) -> Vec<(String, String)> {
        vec![
            ("link.queue".into(), "1bdp".into()),
            ("variant".into(), variant.into()),
        ]
    }

    #[test]
    fn directions_follow_the_metric_names() {
        assert_eq!(better("flows.0.window_goodput_bps"), Some(Better::More));
        assert_eq!(better("flows.0.share"), Some(Better::More));
        assert_eq!(better("probes.0.rtt.p95_s"), Some(Better::Less));
        assert_eq!(better("flows.0.completion_s"), Some(Better::Less));
        assert_eq!(better("flows.0.lost_packets"), Some(Better::Less));
        assert_eq!(better("flows.0.cwnd_bytes"), None);
    }

    #[test]
    fn harm_is_the_lost_fraction_for_throughput_and_the_added_fraction_for_delay() {
        assert_eq!(harm(Better::More, 10.0, 4.0), Some(0.6));
        assert_eq!(harm(Better::More, 10.0, 12.0), Some(-0.2));
        assert_eq!(harm(Better::Less, 0.25, 1.0), Some(0.75));
        assert_eq!(harm(Better::More, 0.0, 3.0), None);
        assert_eq!(harm(Better::Less, 0.0, 0.0), None);
    }

    #[test]
    fn rows_pair_repetitions_and_report_the_mean_harm_with_its_interval() {
        let mut set = PairedSet::new();
        // Alone: 10, 20, 10 Mbit/s; with the competitor: 5, 5, 5 → harm 0.5, 0.75, 0.5.
        for (rep, (a, w)) in [(10e6, 5e6), (20e6, 5e6), (10e6, 5e6)]
            .into_iter()
            .enumerate()
        {
            set.add(&axes("alone"), rep as u32, "flows.0.goodput_bps", a);
            set.add(&axes("vs-bbr"), rep as u32, "flows.0.goodput_bps", w);
            set.add(&axes("alone"), rep as u32, "flows.0.cwnd_bytes", 1.0);
            set.add(&axes("vs-bbr"), rep as u32, "flows.0.cwnd_bytes", 2.0);
        }
        let (rows, unknown) = harm_rows(&set, Some("alone")).expect("baseline exists");
        assert_eq!(unknown, ["flows.0.cwnd_bytes"]);
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert_eq!(
            (r.variant.as_str(), r.alone.as_str(), r.n_pairs),
            ("vs-bbr", "alone", 3)
        );
        assert!((r.harm - 1.75 / 3.0).abs() < 1e-12, "{r:?}");
        let (lo, hi) = r.harm_ci.expect("three pairs");
        assert!(lo < r.harm && r.harm < hi && hi - lo > 0.1, "{r:?}");
        assert!(harm_rows(&set, Some("nope")).is_err());
    }
}
