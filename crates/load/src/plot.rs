//! The data of the latency-over-time plot (`quiclab load plot`): x = intended send time, y =
//! latency. The `figures` crate draws it (`figures::chart::scatter_chart`); this module reduces
//! any number of requests to a drawable amount. Small runs keep every request; large ones are
//! binned along x (per bin: the min, median and max latency of the successful requests, and the
//! worst latency of the failed ones), so the figure stays small for any number of requests.

use crate::record::ResultRecord;

/// Above this many requests in all series together, series are binned.
pub const MAX_RAW_POINTS: usize = 3_000;
/// Bins across the time axis when binning.
pub const BINS: usize = 400;

/// One request reduced to what the plot needs (9 bytes of payload).
#[derive(Debug, Clone, Copy)]
struct Point {
    seconds: f32,
    latency_ms: f32,
    ok: bool,
}

/// One curve of the plot (usually one results file).
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend label.
    pub name: String,
    points: Vec<Point>,
}

impl Series {
    /// An empty series named `name`; add records with [`Series::push`].
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            points: Vec::new(),
        }
    }

    /// Adds one record (12 bytes kept); requests that were never sent are left out.
    pub fn push(&mut self, r: &ResultRecord) {
        if r.sent_ns.is_some() {
            self.points.push(Point {
                seconds: (r.intended_ns as f64 / 1e9) as f32,
                latency_ms: (r.latency_ns as f64 / 1e6) as f32,
                ok: r.is_success(),
            });
        }
    }

    /// Builds a series from records.
    pub fn from_records(
        name: impl Into<String>,
        records: impl IntoIterator<Item = ResultRecord>,
    ) -> Self {
        let mut series = Self::new(name);
        for r in records {
            series.push(&r);
        }
        series
    }

    /// Number of plotted requests.
    pub fn len(&self) -> usize {
        self.points.len()
    }

    /// Whether the series has no points.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }
}

/// A series ready to draw: (seconds, milliseconds) throughout.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Drawable {
    /// Legend label.
    pub name: String,
    /// Requests in the series.
    pub requests: usize,
    /// Successful requests, one point each (small runs).
    pub points: Vec<(f64, f64)>,
    /// Per bin with successful requests (large runs): centre, min, median, max.
    pub bins: Vec<(f64, f64, f64, f64)>,
    /// Failed requests: one point each (small runs), or the worst per bin (large runs).
    pub failures: Vec<(f64, f64)>,
}

/// Reduces `series` for drawing: every request when there are at most [`MAX_RAW_POINTS`] in
/// all, else [`BINS`] bins over the common time axis.
pub fn drawable(series: &[Series]) -> Vec<Drawable> {
    let total: usize = series.iter().map(Series::len).sum();
    let x_max = series
        .iter()
        .flat_map(|s| s.points.iter())
        .map(|p| f64::from(p.seconds))
        .fold(0.0, f64::max)
        .max(1e-3);
    series
        .iter()
        .map(|s| {
            if total <= MAX_RAW_POINTS {
                raw(s)
            } else {
                binned(s, x_max)
            }
        })
        .collect()
}

fn raw(s: &Series) -> Drawable {
    let mut d = Drawable {
        name: s.name.clone(),
        requests: s.len(),
        ..Drawable::default()
    };
    for p in &s.points {
        let xy = (f64::from(p.seconds), f64::from(p.latency_ms));
        if p.ok {
            d.points.push(xy);
        } else {
            d.failures.push(xy);
        }
    }
    d
}

fn binned(s: &Series, x_max: f64) -> Drawable {
    let mut ok: Vec<Vec<f64>> = vec![Vec::new(); BINS];
    let mut failed: Vec<Option<f64>> = vec![None; BINS];
    for p in &s.points {
        let bin = ((f64::from(p.seconds) / x_max) * BINS as f64) as usize;
        let bin = bin.min(BINS - 1);
        let latency = f64::from(p.latency_ms);
        if p.ok {
            ok[bin].push(latency);
        } else {
            let worst = failed[bin].get_or_insert(latency);
            *worst = worst.max(latency);
        }
    }
    let centre = |bin: usize| (bin as f64 + 0.5) / BINS as f64 * x_max;
    let mut d = Drawable {
        name: s.name.clone(),
        requests: s.len(),
        ..Drawable::default()
    };
    for (bin, values) in ok.iter_mut().enumerate() {
        values.sort_by(f64::total_cmp);
        if let (Some(&lo), Some(mid), Some(&hi)) =
            (values.first(), quantile::median(values), values.last())
        {
            d.bins.push((centre(bin), lo, mid, hi));
        }
    }
    for (bin, worst) in failed.iter().enumerate() {
        if let Some(w) = worst {
            d.failures.push((centre(bin), *w));
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::tests::sample;

    fn series(name: &str, n: u64, fail_every: u64) -> Series {
        Series::from_records(
            name,
            (0..n).map(|seq| {
                let mut r = sample(seq);
                r.intended_ns = seq * 1_000_000;
                r.latency_ns = 1_000_000 + (seq % 97) * 50_000;
                r.error = (seq % fail_every == 0).then(|| "boom".to_string());
                r
            }),
        )
    }

    #[test]
    fn small_runs_keep_every_request() {
        let d = drawable(&[series("h1", 100, 10)]);
        assert_eq!(d.len(), 1);
        assert_eq!((d[0].points.len(), d[0].failures.len()), (90, 10));
        assert!(d[0].bins.is_empty());
        assert_eq!(d[0].requests, 100);
        // Intended time in s and latency in ms, kept at f32 precision (ample for a figure).
        let (t, ms) = d[0].points[0];
        assert!(
            (t - 0.001).abs() < 1e-6 && (ms - 1.05).abs() < 1e-6,
            "{t} {ms}"
        );
    }

    #[test]
    fn large_runs_are_binned_over_a_common_axis() {
        let d = drawable(&[series("h2", 200_000, 1000), series("h3", 100_000, 7)]);
        assert_eq!(d.len(), 2);
        for s in &d {
            assert!(s.points.is_empty());
            assert!(!s.bins.is_empty() && s.bins.len() <= BINS);
            assert!(!s.failures.is_empty() && s.failures.len() <= BINS);
            assert!(s
                .bins
                .iter()
                .all(|&(_, lo, mid, hi)| lo <= mid && mid <= hi));
        }
        // The second series covers half the time: its bins end half-way.
        let last = |s: &Drawable| s.bins.last().map_or(0.0, |b| b.0);
        assert!(
            last(&d[1]) < last(&d[0]) * 0.51,
            "{} {}",
            last(&d[1]),
            last(&d[0])
        );
        // Latencies cycle over 97 values from 1 ms: every full bin spans them all.
        let (_, lo, _, hi) = d[0].bins[10];
        assert!(
            (lo - 1.0).abs() < 1e-3 && (hi - 5.8).abs() < 1e-3,
            "{lo} {hi}"
        );
    }
}
