//! A model against its analytic law: per series, the law as a line and the measured values as
//! filled dots (with their 95% bars where there are repetitions) in the same colour — how seed 001's
//! Figs. 3–6 show that a simulated value sits on the equation's curve.

use plotters::prelude::*;

use super::{colour, err, framed, house_chart, padded, styled, tick, Canvas, ChartError, Key};

/// One series of an [`AnalyticChart`].
#[derive(Debug, Clone, PartialEq)]
pub struct AnalyticSeries {
    /// Legend label.
    pub label: String,
    /// The law, as a line through (x, y); a NaN y breaks the line.
    pub expected: Vec<(f64, f64)>,
    /// Measured (x, mean, 95% low, 95% high); low = high draws no bar.
    pub measured: Vec<(f64, f64, f64, f64)>,
}

/// Measured values over the analytic law they are checked against.
#[derive(Debug, Clone, PartialEq)]
pub struct AnalyticChart {
    /// Title above the plot.
    pub title: String,
    /// x axis label.
    pub x_label: String,
    /// y axis label (with its unit).
    pub y_label: String,
    /// Logarithmic x and y axes (drawn only when every value is positive).
    pub log: bool,
    /// The series.
    pub series: Vec<AnalyticSeries>,
    /// Text under the plot (what the lines and dots are).
    pub footnote: String,
}

/// The pieces of a line broken at NaN values.
fn segments(points: &[(f64, f64)]) -> Vec<Vec<(f64, f64)>> {
    let mut out = vec![Vec::new()];
    for &(x, y) in points {
        if y.is_finite() && x.is_finite() {
            out.last_mut().expect("never empty").push((x, y));
        } else if !out.last().expect("never empty").is_empty() {
            out.push(Vec::new());
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

/// A log axis' tick label at 1, 2 and 5 times a power of ten only: every tick of a decade
/// labelled runs the top ones (80, 90, 100) into each other.
fn log_tick(v: f64) -> String {
    let mantissa = v / 10f64.powf(v.log10().floor());
    let near = |m: f64| (mantissa - m).abs() < 1e-6 * m;
    if near(1.0) || near(2.0) || near(5.0) {
        tick(v)
    } else {
        String::new()
    }
}

/// Renders an [`AnalyticChart`] as SVG on `canvas`.
pub fn analytic_chart(c: &AnalyticChart, canvas: impl Into<Canvas>) -> Result<String, ChartError> {
    let entries: Vec<(String, String, Key)> = c
        .series
        .iter()
        .map(|s| (s.label.clone(), String::new(), Key::Marker))
        .collect();
    let xs = || {
        c.series.iter().flat_map(|s| {
            s.expected
                .iter()
                .map(|p| p.0)
                .chain(s.measured.iter().map(|p| p.0))
        })
    };
    let ys = || {
        c.series.iter().flat_map(|s| {
            s.expected
                .iter()
                .map(|p| p.1)
                .chain(s.measured.iter().flat_map(|p| [p.1, p.2, p.3]))
        })
    };
    let range = |v: &mut dyn Iterator<Item = f64>| {
        v.filter(|x| x.is_finite())
            .fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)))
    };
    let (x0, x1) = range(&mut xs());
    let (y0, y1) = range(&mut ys());
    if x0 > x1 || y0 > y1 {
        return Err(ChartError("nothing to draw: no finite value".into()));
    }
    let log = c.log && x0 > 0.0 && y0 > 0.0;
    // Dense series (a time series per second) get smaller dots so neighbours stay apart.
    let densest = c.series.iter().map(|s| s.measured.len()).max().unwrap_or(0);
    let radius = if densest > 40 { 2 } else { 4 };
    framed(canvas.into(), &entries, &c.footnote, |_, plot| {
        let builder = &mut house_chart(plot, &c.title, 46, 70);
        macro_rules! draw {
            ($chart:ident) => {{
                styled(&mut $chart.configure_mesh())
                    .x_desc(&c.x_label)
                    .y_desc(&c.y_label)
                    .x_labels(10)
                    .y_labels(8)
                    .x_label_formatter(&|v| if log { log_tick(*v) } else { tick(*v) })
                    .y_label_formatter(&|v| tick(*v))
                    .max_light_lines(2)
                    .draw()
                    .map_err(err)?;
                for (i, s) in c.series.iter().enumerate() {
                    let col = colour(i);
                    for seg in segments(&s.expected) {
                        $chart
                            .draw_series(LineSeries::new(
                                seg,
                                ShapeStyle::from(&col).stroke_width(2),
                            ))
                            .map_err(err)?;
                    }
                    $chart
                        .draw_series(s.measured.iter().filter(|p| p.3 > p.2).map(
                            |&(x, m, lo, hi)| {
                                ErrorBar::new_vertical(
                                    x,
                                    lo,
                                    m,
                                    hi,
                                    ShapeStyle::from(&col).stroke_width(1),
                                    6,
                                )
                            },
                        ))
                        .map_err(err)?;
                    $chart
                        .draw_series(
                            s.measured
                                .iter()
                                .map(|&(x, m, _, _)| Circle::new((x, m), radius, col.filled())),
                        )
                        .map_err(err)?;
                }
            }};
        }
        if log {
            let mut chart = builder
                .build_cartesian_2d(
                    (x0 / 1.2..x1 * 1.2).log_scale(),
                    (y0 / 1.3..y1 * 1.3).log_scale(),
                )
                .map_err(err)?;
            draw!(chart);
        } else {
            let (px0, px1) = padded(x0, x1);
            // Headroom above the highest value, so a dot at the top is not cut by the frame.
            let y_top = padded(y0, y1).1.max(y1 + 0.08 * y1.abs());
            // Rates start at zero so the distance between dot and line is not exaggerated.
            let y_bottom = if y0 >= 0.0 { 0.0 } else { padded(y0, y1).0 };
            let mut chart = builder
                .build_cartesian_2d(px0..px1, y_bottom..y_top)
                .map_err(err)?;
            draw!(chart);
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nan_breaks_the_line_and_both_axes_kinds_draw() {
        assert_eq!(
            segments(&[
                (0.0, 1.0),
                (1.0, 1.0),
                (1.0, f64::NAN),
                (1.0, 2.0),
                (2.0, 2.0)
            ]),
            vec![vec![(0.0, 1.0), (1.0, 1.0)], vec![(1.0, 2.0), (2.0, 2.0)]]
        );
        let mut c = AnalyticChart {
            title: "Fig. 4".into(),
            x_label: "RTT (ms)".into(),
            y_label: "throughput (Mbit/s)".into(),
            log: true,
            series: vec![AnalyticSeries {
                label: "p = 0.1%".into(),
                expected: vec![(2.0, 50.0), (100.0, 1.0)],
                measured: vec![(2.0, 49.0, 48.0, 50.0), (100.0, 1.1, 1.1, 1.1)],
            }],
            footnote: "lines: Eq. (2); dots: measured".into(),
        };
        let svg = analytic_chart(&c, (640, 400)).expect("log axes");
        assert!(svg.contains("p = 0.1%") && svg.contains("RTT (ms)"));
        // Two measured dots, hollow circles.
        // Two measured dots (the error bar and the legend draw smaller circles of their own).
        assert_eq!(svg.matches("r=\"4\"").count(), 2, "{svg}");
        c.log = false;
        analytic_chart(&c, (640, 400)).expect("linear axes");
        c.series[0].expected.clear();
        c.series[0].measured.clear();
        assert!(analytic_chart(&c, (640, 400)).is_err());
        assert_eq!(
            [20.0, 30.0, 50.0, 90.0, 100.0].map(log_tick),
            ["20", "", "50", "", "100"].map(String::from)
        );
    }
}
