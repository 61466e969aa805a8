//! A study's own figures: its measure against each experiment's parameter, one line per
//! protocol, as its paper draws them. Seeds 002 and 003 measure one connection's download
//! time (0-RTT: the second, resumed connection), which a figure of the flow's completion time
//! would not show, so these figures are drawn from the study's table rows.

use figures::sweep::{measure_figure, AxisScale, Estimate, MeasureSpec, Measured};
use figures::{Figure, FigureError, FigureKind};

use super::combine::PointInfo;
use super::paired::{experiment_rows, PointValues};
use super::registry::Experiment;
use super::table::Row;

/// One download-time figure per experiment with at least two x values.
pub fn download_figures(rows: &[Row]) -> Result<Vec<Figure>, FigureError> {
    let mut experiments: Vec<&str> = Vec::new();
    for r in rows {
        if !experiments.contains(&r.experiment.as_str()) {
            experiments.push(&r.experiment);
        }
    }
    let mut out = Vec::new();
    for e in experiments {
        let mine: Vec<&Row> = rows.iter().filter(|r| r.experiment == e).collect();
        let mut x_values: Vec<String> = Vec::new();
        let mut series: Vec<Measured> = Vec::new();
        for r in &mine {
            if !x_values.contains(&r.x) {
                x_values.push(r.x.clone());
            }
            let est = r.download.map(|d| Estimate::of(&d, "completion_s"));
            let cell = (r.x.clone(), est, r.runs);
            match series.iter_mut().find(|s| s.label == r.protocol) {
                Some(s) => s.cells.push(cell),
                None => series.push(Measured {
                    label: r.protocol.clone(),
                    cells: vec![cell],
                }),
            }
        }
        if x_values.len() < 2 {
            continue;
        }
        let parameter = mine.first().map_or("", |r| r.parameter.as_str());
        let spec = MeasureSpec {
            id: format!("study-{}-download-time", figures::metric::slug(e)),
            title: format!("download time vs {parameter} ({e})"),
            metric: "completion_s",
            label: "download time".into(),
            axis: parameter,
            x_values: &x_values,
            series_are: "protocol",
            series: &series,
            size: figures::FigureSize::Screen,
            bars: figures::sweep::MEAN_CI_BARS,
            x_scale: AxisScale::Auto,
            y_scale: AxisScale::Linear,
        };
        if let Some(mut f) = measure_figure(&spec)? {
            f.kind = FigureKind::Study;
            f.caption = format!(
                "The measured connection's download time (0-RTT: the second, resumed one), as \
                 the study's table. {}",
                f.caption
            );
            out.push(f);
        }
    }
    Ok(out)
}

/// The figures of the experiments that compare protocols relative to a baseline (seed 001's
/// Fig. 7): for the first column, each protocol's mean relative to its baseline's at every x,
/// in percent, with the bootstrap 95% interval of the paired ratio; against the round-trip time
/// when the swept key is the one-way `link.delay`, as the paper draws it.
pub fn relative_figures(
    experiments: &[&Experiment],
    info: &[PointInfo],
    values: &PointValues,
) -> Result<Vec<Figure>, FigureError> {
    let mut out = Vec::new();
    for e in experiments {
        let Some(first) = e.columns.first().filter(|c| c.per.is_none()) else {
            continue;
        };
        if e.relative_comparisons().is_empty() {
            continue;
        }
        let rows = experiment_rows(e, info, values);
        let parameter = info
            .iter()
            .find(|pi| pi.experiment == e.name)
            .map_or(String::new(), |pi| pi.parameter.clone());
        let rtt = parameter == "link.delay";
        let x_of = |x: &str| match (rtt, figures::sweep::numeric(x)) {
            (true, Some((v, unit))) => format!("{}{unit}", figures::chart::tick(2.0 * v)),
            _ => x.to_string(),
        };
        let mut x_values: Vec<String> = Vec::new();
        let mut series: Vec<Measured> = Vec::new();
        for r in rows.iter().filter(|r| r.metric == first.metric) {
            let x = x_of(r.point.first().map_or("", |(_, x)| x.as_str()));
            if !x_values.contains(&x) {
                x_values.push(x.clone());
            }
            let pct = |v: f64| (v - 1.0) * 100.0;
            let est = r.ratio.map(|ratio| {
                let (low, high) = r.ratio_ci.unwrap_or((ratio, ratio));
                Estimate {
                    mean: pct(ratio),
                    low: pct(low),
                    high: pct(high),
                    n: r.n_pairs,
                }
            });
            let label = format!("{} vs {}", r.variant, r.baseline);
            let cell = (x, est, r.n_pairs);
            match series.iter_mut().find(|s| s.label == label) {
                Some(s) => s.cells.push(cell),
                None => series.push(Measured {
                    label,
                    cells: vec![cell],
                }),
            }
        }
        if x_values.len() < 2 {
            continue;
        }
        let quantity = first
            .header
            .split(" (")
            .next()
            .unwrap_or(first.header)
            .to_string();
        let axis = if rtt {
            "RTT (twice link.delay)".to_string()
        } else {
            parameter.clone()
        };
        let spec = MeasureSpec {
            id: format!("study-{}-relative", figures::metric::slug(e.name)),
            title: format!("{quantity} relative to the baseline vs {axis} ({})", e.name),
            metric: "relative_difference",
            label: format!("{quantity} relative to the baseline (%)"),
            axis: &axis,
            x_values: &x_values,
            series_are: "comparison",
            series: &series,
            size: figures::FigureSize::Screen,
            bars:
                "mean of the variant over the baseline's, minus 1, with the percentile-bootstrap \
                   95% interval of that ratio; n/N = pairs of repetitions",
            x_scale: AxisScale::Auto,
            y_scale: AxisScale::Linear,
        };
        if let Some(mut f) = measure_figure(&spec)? {
            f.kind = FigureKind::Study;
            f.caption = format!(
                "Each protocol's mean {quantity} relative to its baseline's at the same point \
                 (variants share their seeds: repetition r against repetition r), in percent, \
                 with the percentile-bootstrap 95% interval of the ratio. {}",
                f.caption
            );
            out.push(f);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(experiment: &str, x: &str, protocol: &str, values: &[f64]) -> Row {
        Row {
            point: 0,
            experiment: experiment.into(),
            parameter: "link.down.loss".into(),
            x: x.into(),
            protocol: protocol.into(),
            runs: 3,
            download: analysis::summarize(values).ok(),
            handshake_mean_s: None,
            ttfb_mean_s: None,
        }
    }

    #[test]
    fn one_figure_per_experiment_with_a_line_per_protocol_from_the_measured_connection() {
        // The table's 0-RTT value (the resumed connection: 2 s) is what is drawn, not the
        // flow's two downloads together.
        let rows = vec![
            row("bernoulli", "2%", "quic-1rtt", &[2.0, 2.1, 2.2]),
            row("bernoulli", "2%", "quic-0rtt", &[1.9, 2.0, 2.1]),
            row("bernoulli", "5%", "quic-1rtt", &[5.0, 5.1, 5.2]),
            row("bernoulli", "5%", "quic-0rtt", &[4.9, 5.0, 5.1]),
            row("single", "1%", "quic-1rtt", &[1.0, 1.0, 1.0]),
        ];
        let figs = download_figures(&rows).expect("figures");
        assert_eq!(
            figs.len(),
            1,
            "an experiment with one x value has no figure"
        );
        let f = &figs[0];
        assert_eq!(f.id, "study-bernoulli-download-time");
        assert_eq!(f.kind, FigureKind::Study);
        assert!(f.svg.contains("quic-0rtt") && f.svg.contains("quic-1rtt"));
        assert!(f.caption.contains("second, resumed"), "{}", f.caption);
        assert!(f.title.contains("link.down.loss"));
    }
}
