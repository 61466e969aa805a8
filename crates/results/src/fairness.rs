//! Fairness between the flows of a run: Jain's index and each flow's share.
//!
//! The one implementation in the workspace: the engines fill [`crate::Run::fairness`] and
//! [`crate::Flow::share`] with it, and `report` / `validate` use the same [`jain_index`].

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::{Flow, SeriesRow};

/// Jain's fairness index (Σx)² / (n·Σx²): 1 when all rates are equal, 1/n when one flow has it all.
///
/// None for an empty input, a negative or non-finite rate, or all rates zero (fairness of
/// nothing is undefined).
pub fn jain_index(rates: &[f64]) -> Option<f64> {
    if rates.is_empty() || rates.iter().any(|r| !r.is_finite() || *r < 0.0) {
        return None;
    }
    let sum: f64 = rates.iter().sum();
    let sum_sq: f64 = rates.iter().map(|r| r * r).sum();
    if sum_sq == 0.0 {
        return None;
    }
    Some(sum * sum / (rates.len() as f64 * sum_sq))
}

/// Each rate's share of their sum, fraction (None when the sum is zero or a rate is missing,
/// negative or not finite).
pub fn shares(rates: &[Option<f64>]) -> Option<Vec<f64>> {
    let rates: Vec<f64> = rates.iter().copied().collect::<Option<_>>()?;
    if rates.iter().any(|r| !r.is_finite() || *r < 0.0) {
        return None;
    }
    let sum: f64 = rates.iter().sum();
    (sum > 0.0).then(|| rates.iter().map(|r| r / sum).collect())
}

/// Fairness between a run's flows (absent with fewer than two flows).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Fairness {
    /// Jain's index of the flows' goodput over the measurement window (`window_goodput_bps`,
    /// the whole run when no window is set), 1/n (one flow has it all) … 1 (equal). Absent when
    /// a flow has no window goodput or none delivered anything.
    pub jain: Option<f64>,
    /// Mean over the sample bins inside the measurement window of each bin's Jain index of the
    /// flows' goodput in that bin, 1/n … 1; bins where no flow delivered anything are left out.
    /// Absent without time series (the emulator; `--no-series`).
    pub jain_bins_mean: Option<f64>,
    /// Smallest per-bin Jain index inside the measurement window (see `jain_bins_mean`).
    pub jain_bins_min: Option<f64>,
    /// Sample bins the per-bin figures cover, count.
    pub bins: Option<u64>,
}

/// Fairness of `flows` over the window `[from_s, until_s]`, with per-bin figures from `series`
/// (bins whose end lies in `(from_s, until_s]`), and each flow's share of the window goodput
/// (`Flow::share` is the caller's to set from the returned vector). None with fewer than two
/// flows.
pub fn fairness(
    flows: &[Flow],
    series: &[SeriesRow],
    from_s: f64,
    until_s: f64,
) -> Option<(Fairness, Option<Vec<f64>>)> {
    if flows.len() < 2 {
        return None;
    }
    let window: Vec<Option<f64>> = flows.iter().map(|f| f.window_goodput_bps).collect();
    let jain = window
        .iter()
        .copied()
        .collect::<Option<Vec<f64>>>()
        .and_then(|r| jain_index(&r));
    // Rows come bin by bin, one per flow; a bin's index covers every flow (one that has not
    // started or has finished counts as 0: it does not get its share then).
    let mut per_bin: Vec<f64> = Vec::new();
    // Flow index by name, built once: a scan of the flows per row would make this quadratic in
    // the flow count (1,000 flows: 30 bins × 1,000 rows × 500 name comparisons). The first flow
    // of a name wins, as a scan would find it.
    let mut index: HashMap<&str, usize> = HashMap::with_capacity(flows.len());
    for (k, f) in flows.iter().enumerate() {
        index.entry(f.name.as_str()).or_insert(k);
    }
    let mut i = 0;
    while i < series.len() {
        let t = series[i].t_s;
        let mut rates = vec![0.0; flows.len()];
        while i < series.len() && series[i].t_s == t {
            if let Some(&k) = index.get(series[i].flow.as_str()) {
                rates[k] += series[i].goodput_bps;
            }
            i += 1;
        }
        if t > from_s && t <= until_s {
            if let Some(j) = jain_index(&rates) {
                per_bin.push(j);
            }
        }
    }
    let bins = (!per_bin.is_empty()).then_some(per_bin.len());
    let f = Fairness {
        jain,
        jain_bins_mean: bins.map(|n| per_bin.iter().sum::<f64>() / n as f64),
        jain_bins_min: bins.map(|_| per_bin.iter().copied().fold(f64::INFINITY, f64::min)),
        bins: bins.map(|n| n as u64),
    };
    Some((f, shares(&window)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn jain_equal_and_single_active() {
        assert!(close(jain_index(&[3.0, 3.0, 3.0]).unwrap(), 1.0));
        assert!(close(jain_index(&[5.0, 0.0, 0.0, 0.0]).unwrap(), 0.25));
        assert!(close(jain_index(&[1.0, 3.0]).unwrap(), 16.0 / 20.0));
        assert_eq!(jain_index(&[]), None);
        assert_eq!(jain_index(&[0.0, 0.0]), None);
        assert_eq!(jain_index(&[1.0, -1.0]), None);
    }

    fn flow(name: &str, w: Option<f64>) -> Flow {
        Flow {
            name: name.into(),
            window_goodput_bps: w,
            ..Flow::default()
        }
    }

    fn row(t: f64, flow: &str, g: f64) -> SeriesRow {
        SeriesRow {
            t_s: t,
            flow: flow.into(),
            goodput_bps: g,
            ..SeriesRow::default()
        }
    }

    #[test]
    fn one_flow_has_no_fairness() {
        assert_eq!(fairness(&[flow("a", Some(1.0))], &[], 0.0, 1.0), None);
    }

    #[test]
    fn window_index_shares_and_bins_inside_the_window() {
        let flows = [flow("a", Some(3.0)), flow("b", Some(1.0))];
        let series = [
            // Before the window: only `a` sends (index 0.5) — must not count.
            row(1.0, "a", 4.0),
            row(1.0, "b", 0.0),
            row(2.0, "a", 2.0),
            row(2.0, "b", 2.0),
            row(3.0, "a", 3.0),
            row(3.0, "b", 1.0),
            // No flow delivered: left out.
            row(4.0, "a", 0.0),
            row(4.0, "b", 0.0),
            // After the window.
            row(5.0, "a", 9.0),
            row(5.0, "b", 0.0),
        ];
        let (f, share) = fairness(&flows, &series, 1.0, 4.0).unwrap();
        assert!(close(f.jain.unwrap(), 16.0 / 20.0));
        assert_eq!(share, Some(vec![0.75, 0.25]));
        assert_eq!(f.bins, Some(2));
        assert!(close(f.jain_bins_mean.unwrap(), (1.0 + 0.8) / 2.0));
        assert!(close(f.jain_bins_min.unwrap(), 0.8));
    }

    #[test]
    fn missing_window_goodput_gives_no_index() {
        let (f, share) = fairness(&[flow("a", Some(1.0)), flow("b", None)], &[], 0.0, 1.0).unwrap();
        assert_eq!(f.jain, None);
        assert_eq!(share, None);
        assert_eq!(f.bins, None);
    }
}
