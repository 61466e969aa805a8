//! A study's own figures: its measure against each experiment's parameter, one line per
//! protocol, as its paper draws them. Seeds 002 and 003 measure one connection's download
//! time (0-RTT: the second, resumed connection), which a figure of the flow's completion time
//! would not show, so these figures are drawn from the study's table rows.

use figures::sweep::{measure_figure, MeasureSpec, Measured};
use figures::{Figure, FigureError, FigureKind};

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
            let cell = (r.x.clone(), r.download, r.runs);
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
