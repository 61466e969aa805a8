//! Chart drawing with plotters' SVG backend: plain numbers in, one SVG document out.
//!
//! Four kinds, the ones a transport study needs: a metric against a swept parameter (one line
//! per series, 95% CI error bars), an empirical CDF (linear or log x axis), stacked time series
//! panels of one run, and a scatter of events over time (the load tester's latency against
//! send time, raw or binned). Nothing here knows about results directories; [`crate::sweep`],
//! [`crate::cdf`] and [`crate::series`] turn a directory into these inputs.
//!
//! Legends are drawn beside the plot, not over it, so they never hide data, and long labels are
//! shortened with an ellipsis rather than running off the figure.

mod analytic;
pub use analytic::{analytic_chart, AnalyticChart, AnalyticSeries};

use plotters::chart::MeshStyle;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Colours of successive series (colour-blind-safe Tableau 10 order).
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];
/// Width of the legend column to the right of a plot, px.
const LEGEND_W: u32 = 300;
/// Longest legend label, characters (longer ones end in "…").
const LEGEND_CHARS: usize = 40;
const FONT: &str = "sans-serif";

/// What a chart is drawn on: a size in SVG units and, for print, the size in inches that those
/// units fill. A print canvas has its legend in a band above the plot (no column beside it),
/// and the SVG declares its size in inches so that a document includes it at that size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Canvas {
    /// Width and height in SVG units (px on screen).
    pub size: (u32, u32),
    /// Width and height in inches on paper; `None`: a screen figure of `size` px.
    pub print_in: Option<(f64, f64)>,
}

impl From<(u32, u32)> for Canvas {
    fn from(size: (u32, u32)) -> Canvas {
        Canvas {
            size,
            print_in: None,
        }
    }
}

/// Size of the smallest text plotters writes for the house style (the legend's notes), SVG
/// units: what a print canvas is scaled by so that this text prints at [`MIN_PRINT_PT`].
pub const SMALLEST_TEXT_UNITS: f64 = 11.0 * 0.806_451_6;
/// The smallest text on paper, pt.
pub const MIN_PRINT_PT: f64 = 8.0;

impl Canvas {
    /// A canvas printing at `width_in` × `height_in` inches, its smallest text at
    /// [`MIN_PRINT_PT`] (1 pt = 1/72 in).
    pub fn print(width_in: f64, height_in: f64) -> Canvas {
        let units_per_in = 72.0 * SMALLEST_TEXT_UNITS / MIN_PRINT_PT;
        Canvas {
            size: (
                (width_in * units_per_in).floor() as u32,
                (height_in * units_per_in).floor() as u32,
            ),
            print_in: Some((width_in, height_in)),
        }
    }
}

/// Colour of series `i`.
pub fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// A chart could not be drawn (plotters' backend error, as text).
#[derive(Debug, thiserror::Error)]
#[error("cannot draw the chart: {0}")]
pub struct ChartError(pub String);

fn err<E: std::fmt::Debug>(e: E) -> ChartError {
    ChartError(format!("{e:?}"))
}

/// The x axis of a [`LineChart`].
#[derive(Debug, Clone, PartialEq)]
pub enum XAxis {
    /// Numeric positions; ticks chosen by plotters.
    Numeric,
    /// Labelled categories at x = 0, 1, 2 … (the values of a non-numeric sweep axis).
    Categories(Vec<String>),
}

/// One point of a line: x, the mean and its 95% CI.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CiPoint {
    /// x position (the category index for [`XAxis::Categories`]).
    pub x: f64,
    /// Mean of the metric.
    pub mean: f64,
    /// Lower end of the 95% CI.
    pub low: f64,
    /// Upper end of the 95% CI.
    pub high: f64,
}

/// One line of a [`LineChart`].
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Legend label.
    pub label: String,
    /// Second legend line (e.g. `n/N = 5/5`), may be empty.
    pub note: String,
    /// Points in x order.
    pub points: Vec<CiPoint>,
}

/// A metric against a parameter, one line per series, with 95% CI error bars.
#[derive(Debug, Clone, PartialEq)]
pub struct LineChart {
    /// Title above the plot.
    pub title: String,
    /// x axis label.
    pub x_label: String,
    /// y axis label (with its unit).
    pub y_label: String,
    /// The x axis kind.
    pub x_axis: XAxis,
    /// The lines.
    pub lines: Vec<Line>,
    /// A logarithmic x axis (for a numeric axis whose values are all positive).
    pub log_x: bool,
    /// A logarithmic y axis (drawn only when every value and interval end is positive).
    pub log_y: bool,
    /// Every x the axis must show, points without any value included (so a sweep value where
    /// no run completed is visibly missing rather than cut off the axis).
    pub x_extent: Vec<f64>,
    /// A line of small text under the plot (what the bars mean, n/N).
    pub footnote: String,
}

/// One curve of a [`CdfChart`].
#[derive(Debug, Clone, PartialEq)]
pub struct Cdf {
    /// Legend label.
    pub label: String,
    /// Second legend line, may be empty.
    pub note: String,
    /// The sample (any order; non-finite values are ignored).
    pub values: Vec<f64>,
    /// How many runs or requests the sample was taken from (more than `values.len()` when
    /// some did not measure it).
    pub runs: usize,
}

/// Empirical CDFs of samples.
#[derive(Debug, Clone, PartialEq)]
pub struct CdfChart {
    /// Title above the plot.
    pub title: String,
    /// x axis label (with its unit).
    pub x_label: String,
    /// Logarithmic x axis (for latencies spanning decades).
    pub log_x: bool,
    /// The curves.
    pub curves: Vec<Cdf>,
    /// A line of small text under the plot.
    pub footnote: String,
}

/// One series of a [`ScatterChart`]: raw points, or per bin of x a min–max bar and the median;
/// failures apart.
#[derive(Debug, Clone, Default)]
pub struct Scatter {
    /// Legend label.
    pub label: String,
    /// Legend note (e.g. the number of requests).
    pub note: String,
    /// Raw points (x, y), drawn as dots.
    pub points: Vec<(f64, f64)>,
    /// Binned points: (bin centre, min, median, max); the medians are joined by a line.
    pub bins: Vec<(f64, f64, f64, f64)>,
    /// Failures (x, y), drawn as crosses in the failure colour.
    pub failures: Vec<(f64, f64)>,
}

/// A scatter of events over time: dots (or min–max bars with a median line) per series, red
/// crosses for failures.
#[derive(Debug, Clone)]
pub struct ScatterChart {
    /// Title above the plot.
    pub title: String,
    /// x axis description.
    pub x_label: String,
    /// y axis description.
    pub y_label: String,
    /// The series.
    pub series: Vec<Scatter>,
    /// Text under the plot.
    pub footnote: String,
}

/// One panel of a [`PanelChart`]: lines of (t, y).
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    /// y axis label (with its unit).
    pub y_label: String,
    /// Lines: label and points in time order.
    pub lines: Vec<(String, Vec<(f64, f64)>)>,
}

/// Time series of one run as panels stacked over a shared time axis.
#[derive(Debug, Clone, PartialEq)]
pub struct PanelChart {
    /// Title above the panels.
    pub title: String,
    /// x axis label of the bottom panel.
    pub x_label: String,
    /// The panels, top to bottom.
    pub panels: Vec<Panel>,
}

/// One point of a [`TradeoffChart`]: a mean (x, y) pair, its name drawn beside it, and the
/// boundary of its 95% confidence region (empty with too few runs for one).
#[derive(Debug, Clone, PartialEq)]
pub struct TradeoffPoint {
    /// Text beside the point (the scheme or parameter value).
    pub name: String,
    /// Mean of x.
    pub x: f64,
    /// Mean of y.
    pub y: f64,
    /// Closed boundary of the confidence region, in data coordinates.
    pub region: Vec<(f64, f64)>,
}

/// One series (one colour) of a [`TradeoffChart`].
#[derive(Debug, Clone, PartialEq)]
pub struct TradeoffSeries {
    /// Legend label.
    pub label: String,
    /// Second legend line, may be empty.
    pub note: String,
    /// The points.
    pub points: Vec<TradeoffPoint>,
}

/// Pantheon's throughput-against-delay plane: each scheme a named point inside its confidence
/// region, delay on a logarithmic x axis (it spans decades under bufferbloat).
#[derive(Debug, Clone, PartialEq)]
pub struct TradeoffChart {
    /// Title above the plot.
    pub title: String,
    /// x axis label (with its unit).
    pub x_label: String,
    /// y axis label (with its unit).
    pub y_label: String,
    /// The series.
    pub series: Vec<TradeoffSeries>,
    /// A line of small text under the plot.
    pub footnote: String,
}

/// Renders a [`TradeoffChart`] as an SVG document on `canvas` (a screen size in px converts into one). Non-positive x values
/// cannot sit on the log axis and are left out.
pub fn tradeoff_chart(c: &TradeoffChart, canvas: impl Into<Canvas>) -> Result<String, ChartError> {
    let entries: Vec<(String, String, Key)> = c
        .series
        .iter()
        .map(|s| (s.label.clone(), s.note.clone(), Key::Marker))
        .collect();
    let shown = |x: f64, y: f64| x > 0.0 && x.is_finite() && y.is_finite();
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for p in c.series.iter().flat_map(|s| s.points.iter()) {
        for (x, y) in p.region.iter().copied().chain([(p.x, p.y)]) {
            if shown(x, y) {
                (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
            }
        }
    }
    if x0 > x1 {
        (x0, x1, y0, y1) = (1.0, 10.0, 0.0, 1.0);
    }
    let (y0, y1) = padded(y0, y1);
    framed(canvas.into(), &entries, &c.footnote, |root, plot| {
        let mut chart = house_chart(plot, &c.title, 46, 70)
            .build_cartesian_2d((x0 / 1.25..x1 * 1.25).log_scale(), y0..y1)
            .map_err(err)?;
        styled(&mut chart.configure_mesh())
            .x_desc(&c.x_label)
            .y_desc(&c.y_label)
            .x_labels(10)
            .y_labels(8)
            .x_label_formatter(&|v| one_two_five(*v))
            .y_label_formatter(&|v| tick(*v))
            .x_max_light_lines(0)
            .y_max_light_lines(2)
            .draw()
            .map_err(err)?;
        for (i, s) in c.series.iter().enumerate() {
            let col = colour(i);
            // The same names recur in every series (one per discipline and protocol), so
            // each series writes its names in its colour and at its own side of the dot:
            // clustered points stay readable.
            let (vpos, dy) = match i % 3 {
                0 => (VPos::Bottom, -4),
                1 => (VPos::Center, 0),
                _ => (VPos::Top, 4),
            };
            let name_style = TextStyle::from((FONT, 11).into_font())
                .color(&col)
                .pos(Pos::new(HPos::Left, vpos));
            for p in s.points.iter().filter(|p| shown(p.x, p.y)) {
                let region: Vec<(f64, f64)> = p
                    .region
                    .iter()
                    .copied()
                    .filter(|&(x, y)| shown(x, y))
                    .collect();
                if region.len() >= 3 {
                    chart
                        .draw_series(std::iter::once(Polygon::new(
                            region.clone(),
                            col.mix(0.18).filled(),
                        )))
                        .map_err(err)?;
                    let mut closed = region;
                    closed.push(closed[0]);
                    chart
                        .draw_series(std::iter::once(PathElement::new(
                            closed,
                            ShapeStyle::from(&col.mix(0.8)).stroke_width(1),
                        )))
                        .map_err(err)?;
                }
                chart
                    .draw_series(std::iter::once(Circle::new((p.x, p.y), 4, col.filled())))
                    .map_err(err)?;
                let (px, py) = chart.backend_coord(&(p.x, p.y));
                root.draw_text(&p.name, &name_style, (px + 7, py + dy))
                    .map_err(err)?;
            }
        }
        Ok(())
    })
}

/// The points of the empirical CDF of `values`: (value, fraction ≤ value), ascending in both.
///
/// Non-finite values are dropped (a metric that was not measured has no place on the curve).
pub fn ecdf(values: &[f64]) -> Vec<(f64, f64)> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len() as f64;
    v.iter()
        .enumerate()
        .map(|(i, &x)| (x, (i + 1) as f64 / n))
        .collect()
}

/// `[lo, hi]` widened by 5% on each side (or by ±1 / ±|lo|·10% when it is a single value).
fn padded(lo: f64, hi: f64) -> (f64, f64) {
    if !(lo.is_finite() && hi.is_finite()) {
        return (0.0, 1.0);
    }
    if hi > lo {
        let pad = (hi - lo) * 0.05;
        (lo - pad, hi + pad)
    } else {
        let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        (lo - pad, hi + pad)
    }
}

/// `label` broken into lines of at most [`LEGEND_CHARS`] characters at its `", "` separators
/// (the axes of a series key), a part that is still too long shortened with "…".
fn wrap(label: &str) -> Vec<String> {
    wrap_at(label, ", ")
}

/// [`wrap`] at `sep`.
fn wrap_at(label: &str, sep: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for part in label.split(sep) {
        match lines.last_mut() {
            Some(l)
                if l.chars().count() + sep.chars().count() + part.chars().count()
                    <= LEGEND_CHARS =>
            {
                l.push_str(sep);
                l.push_str(part);
            }
            _ => lines.push(shorten(part)),
        }
    }
    lines
}

/// Height of one line of a wrapped category name, px.
const CATEGORY_LINE_H: u32 = 14;
/// Average width of a 12 px label character, px (DejaVu Sans / Liberation Sans measure 6–7).
const LABEL_CHAR_W: f64 = 7.0;

/// The category names broken at spaces into lines that fit their slot on a plot `plot_w`
/// pixels wide, or `None` when every name fits on one line (then the axis draws them itself).
fn category_lines(cats: &[String], plot_w: u32) -> Option<Vec<Vec<String>>> {
    // The y label area (70 px) and the margins (2 × 12 px) are not the plot's.
    let slot_px = f64::from(plot_w.saturating_sub(94)) / cats.len().max(1) as f64;
    let max_chars = ((slot_px / LABEL_CHAR_W).floor() as usize).max(4);
    if cats.iter().all(|c| c.chars().count() <= max_chars) {
        return None;
    }
    Some(cats.iter().map(|c| wrap_words(c, max_chars)).collect())
}

/// `text` broken at spaces into lines of at most `max` characters; a word longer than that is
/// cut with "…".
fn wrap_words(text: &str, max: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        match lines.last_mut() {
            Some(l) if l.chars().count() + 1 + word.chars().count() <= max => {
                l.push(' ');
                l.push_str(word);
            }
            _ if word.chars().count() > max => {
                let mut cut: String = word.chars().take(max - 1).collect();
                cut.push('…');
                lines.push(cut);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// `label` shortened to [`LEGEND_CHARS`] characters.
fn shorten(label: &str) -> String {
    if label.chars().count() <= LEGEND_CHARS {
        label.to_string()
    } else {
        let mut s: String = label.chars().take(LEGEND_CHARS - 1).collect();
        s.push('…');
        s
    }
}

/// A tick label on a log axis: only the 1-2-5 values are written, so the labels of the
/// decade's tick marks (100, 200 … 900) do not run into each other.
fn one_two_five(v: f64) -> String {
    if v <= 0.0 || !v.is_finite() {
        return String::new();
    }
    let mantissa = v / 10f64.powf(v.log10().floor());
    if [1.0, 2.0, 5.0, 10.0]
        .iter()
        .any(|m| (mantissa - m).abs() < 1e-6)
    {
        tick(v)
    } else {
        String::new()
    }
}

/// A tick label: up to 4 significant digits, no trailing zeros.
pub fn tick(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if !(1e-3..1e6).contains(&a) {
        return format!("{v:.2e}");
    }
    let decimals = (3 - a.log10().floor() as i32).clamp(0, 6) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// "mean ± half" with the half-width to two significant digits and the mean to the same
/// decimal place (so `8.626 ± 0.00009`, not `8.626 ± 8.57e-5`); a half-width that is only
/// floating-point noise (below 1e-9 of the mean) prints as 0.
pub fn mean_ci(mean: f64, half: f64) -> String {
    if !(mean.is_finite() && half.is_finite()) {
        return "–".into();
    }
    if half <= mean.abs() * 1e-9 || half == 0.0 {
        return format!("{} ± 0", tick(mean));
    }
    let decimals = (1 - half.log10().floor() as i32).clamp(0, 9) as usize;
    format!("{mean:.decimals$} ± {half:.decimals$}")
}

/// How a legend entry's key is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    /// A line (CDFs, time series).
    Line,
    /// A line with a dot (a metric against a numeric axis).
    Marker,
    /// A filled box (bars).
    Bar,
}

/// Height in px the legend entries take when drawn by [`legend`] (the same steps).
fn legend_height(entries: &[(String, String, Key)]) -> u32 {
    let mut y = 30;
    for (label, note, _) in entries {
        y += 16 * wrap(label).len() as u32;
        if !note.is_empty() {
            y += 14 * wrap_at(note, " · ").len() as u32 + 2;
        }
        y += 4;
    }
    y + 10
}

/// The SVG size for a plot of `size` beside `entries`: taller than asked when the legend needs
/// it (a legend cut off at the bottom hides series), the plot itself keeps `size`'s height.
fn fitted(size: (u32, u32), entries: &[(String, String, Key)]) -> (u32, u32) {
    (size.0, size.1.max(legend_height(entries)))
}

/// Draws the legend entries (label + optional note) into `area`, top-down.
fn legend(area: &Area<'_>, entries: &[(String, String, Key)]) -> Result<(), ChartError> {
    let label_style = TextStyle::from((FONT, 13).into_font()).color(&BLACK);
    let note_style = TextStyle::from((FONT, 11).into_font()).color(&RGBColor(90, 90, 90));
    let mut y = 30;
    for (i, (label, note, key)) in entries.iter().enumerate() {
        let c = colour(i);
        if *key == Key::Bar {
            area.draw(&Rectangle::new(
                [(12, y - 6), (30, y + 6)],
                c.mix(0.75).filled(),
            ))
            .map_err(err)?;
        } else {
            area.draw(&PathElement::new(
                vec![(8, y), (34, y)],
                ShapeStyle::from(&c).stroke_width(2),
            ))
            .map_err(err)?;
        }
        if *key == Key::Marker {
            area.draw(&Circle::new((21, y), 3, c.filled()))
                .map_err(err)?;
        }
        for line in wrap(label) {
            area.draw_text(
                &line,
                &label_style.pos(Pos::new(HPos::Left, VPos::Center)),
                (40, y),
            )
            .map_err(err)?;
            y += 16;
        }
        if !note.is_empty() {
            for line in wrap_at(note, " · ") {
                area.draw_text(
                    &line,
                    &note_style.pos(Pos::new(HPos::Left, VPos::Center)),
                    (40, y),
                )
                .map_err(err)?;
                y += 14;
            }
            y += 2;
        }
        y += 4;
    }
    Ok(())
}

/// Draws `footnote` at the bottom of `root`.
fn footnote(root: &Area<'_>, text: &str, height: u32) -> Result<(), ChartError> {
    if text.is_empty() {
        return Ok(());
    }
    let style = TextStyle::from((FONT, 12).into_font()).color(&RGBColor(70, 70, 70));
    root.draw_text(text, &style, (12, height as i32 - 18))
        .map_err(err)
}

/// Draws one figure on `canvas`: a white canvas, `draw` fills the plot area (given with the
/// whole canvas, for labels outside the plot), then the legend and the footnote under the plot.
/// On screen the legend is a column beside the plot and the canvas grows taller when the legend
/// needs it; in print it is a band above the plot and the canvas keeps its size.
fn framed(
    canvas: Canvas,
    entries: &[(String, String, Key)],
    note: &str,
    draw: impl FnOnce(&Area<'_>, &Area<'_>) -> Result<(), ChartError>,
) -> Result<String, ChartError> {
    let size = canvas.size;
    let mut buf = String::new();
    {
        let svg_size = match canvas.print_in {
            Some(_) => size,
            None => fitted(size, entries),
        };
        let root = SVGBackend::with_string(&mut buf, svg_size).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let note_h = if note.is_empty() { 0 } else { 28 };
        match canvas.print_in {
            Some(_) => {
                let rows = band_rows(entries, size.0);
                let band_h = BAND_ROW_H * rows.len() as u32 + 6;
                let (band, rest) = root.split_vertically(band_h);
                let (plot, _) = rest.split_vertically(size.1.saturating_sub(band_h + note_h));
                draw(&root, &plot)?;
                legend_band(&band, entries, &rows)?;
            }
            None => {
                let (left, side) = root.split_horizontally(size.0.saturating_sub(LEGEND_W));
                let (plot, _) = left.split_vertically(size.1.saturating_sub(note_h));
                draw(&root, &plot)?;
                legend(&side, entries)?;
            }
        }
        footnote(&root, note, size.1)?;
        root.present().map_err(err)?;
    }
    Ok(match canvas.print_in {
        Some((w, h)) => in_inches(&buf, w, h),
        None => buf,
    })
}

/// `svg` with its root's width and height in inches (its viewBox keeps the drawing units).
fn in_inches(svg: &str, width_in: f64, height_in: f64) -> String {
    let Some(end) = svg.find('>') else {
        return svg.to_string();
    };
    let (root, rest) = svg.split_at(end);
    let mut out = String::new();
    for attr in root.split(' ') {
        if !out.is_empty() {
            out.push(' ');
        }
        if attr.starts_with("width=") {
            out.push_str(&format!("width=\"{width_in}in\""));
        } else if attr.starts_with("height=") {
            out.push_str(&format!("height=\"{height_in}in\""));
        } else {
            out.push_str(attr);
        }
    }
    out + rest
}

/// Height of one row of a legend band, SVG units.
const BAND_ROW_H: u32 = 14;
/// Approximate advance of one legend character (11-unit sans-serif), SVG units.
const BAND_CHAR_W: f64 = 5.4;
/// Width of a band entry's key and the gaps around it, SVG units.
const BAND_KEY_W: f64 = 34.0;

/// The legend entries of a band `width` units wide, flowed into rows (indices per row).
fn band_rows(entries: &[(String, String, Key)], width: u32) -> Vec<Vec<usize>> {
    let mut rows: Vec<Vec<usize>> = vec![Vec::new()];
    let mut x = 8.0;
    for (i, (label, _, _)) in entries.iter().enumerate() {
        let w = BAND_KEY_W + shorten(label).chars().count() as f64 * BAND_CHAR_W;
        if x + w > f64::from(width) && !rows.last().is_some_and(Vec::is_empty) {
            rows.push(Vec::new());
            x = 8.0;
        }
        if let Some(r) = rows.last_mut() {
            r.push(i);
        }
        x += w;
    }
    rows
}

/// Draws the legend entries as rows of key + label (notes are left to the caption).
fn legend_band(
    area: &Area<'_>,
    entries: &[(String, String, Key)],
    rows: &[Vec<usize>],
) -> Result<(), ChartError> {
    let label_style = TextStyle::from((FONT, 11).into_font()).color(&BLACK);
    for (r, row) in rows.iter().enumerate() {
        let y = 9 + (BAND_ROW_H * r as u32) as i32;
        let mut x = 8;
        for &i in row {
            let (label, _, key) = &entries[i];
            let c = colour(i);
            match key {
                Key::Bar => area
                    .draw(&Rectangle::new(
                        [(x + 4, y - 5), (x + 22, y + 5)],
                        c.mix(0.75).filled(),
                    ))
                    .map_err(err)?,
                _ => area
                    .draw(&PathElement::new(
                        vec![(x, y), (x + 26, y)],
                        ShapeStyle::from(&c).stroke_width(2),
                    ))
                    .map_err(err)?,
            }
            if *key == Key::Marker {
                area.draw(&Circle::new((x + 13, y), 3, c.filled()))
                    .map_err(err)?;
            }
            let text = shorten(label);
            area.draw_text(
                &text,
                &label_style.pos(Pos::new(HPos::Left, VPos::Center)),
                (x + 30, y),
            )
            .map_err(err)?;
            x += (BAND_KEY_W + text.chars().count() as f64 * BAND_CHAR_W) as i32;
        }
    }
    Ok(())
}

/// A chart builder on `plot` in the house layout: `title` above, the margin, and label areas
/// of `x_area` (under the plot) and `y_area` (left of it) pixels.
fn house_chart<'a, 'b>(
    plot: &'a Area<'b>,
    title: &str,
    x_area: u32,
    y_area: u32,
) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    // A print canvas is narrow (a one-column figure is under 300 units wide): its margins and
    // label areas shrink with it, the text keeps its size.
    let compact = plot.dim_in_pixel().0 < 500;
    let (margin, x_area, y_area) = if compact {
        (6, x_area * 3 / 4, y_area * 3 / 4)
    } else {
        (12, x_area, y_area)
    };
    let mut builder = ChartBuilder::on(plot);
    if !title.is_empty() {
        builder.caption(title, (FONT, 17));
    }
    builder
        .margin(margin)
        .x_label_area_size(x_area)
        .y_label_area_size(y_area);
    builder
}

/// The house style of axis descriptions, tick labels and grid lines.
fn styled<'m, 'a, 'b, 'g, X, Y, XT, YT>(
    mesh: &'m mut MeshStyle<'a, 'b, X, Y, SVGBackend<'g>>,
) -> &'m mut MeshStyle<'a, 'b, X, Y, SVGBackend<'g>>
where
    X: Ranged<ValueType = XT> + ValueFormatter<XT>,
    Y: Ranged<ValueType = YT> + ValueFormatter<YT>,
{
    mesh.axis_desc_style((FONT, 14))
        .label_style((FONT, 12))
        .light_line_style(RGBColor(242, 242, 242))
        .bold_line_style(RGBColor(215, 215, 215))
}

/// Builds `builder`'s chart over `x` and `y0..y1` (logarithmic when `log_y`) and runs `body`
/// with it bound to `chart`: the two y coordinate types are different types to plotters.
macro_rules! with_y_scale {
    ($builder:expr, $x:expr, $log_y:expr, $y0:expr, $y1:expr, |$chart:ident| $body:block) => {
        if $log_y {
            let mut $chart = $builder
                .build_cartesian_2d($x, ($y0..$y1).log_scale())
                .map_err(err)?;
            $body
        } else {
            let mut $chart = $builder.build_cartesian_2d($x, $y0..$y1).map_err(err)?;
            $body
        }
    };
}

/// Renders a [`LineChart`] as an SVG document on `canvas` (a screen size in px converts into one).
pub fn line_chart(c: &LineChart, canvas: impl Into<Canvas>) -> Result<String, ChartError> {
    let bars = matches!(c.x_axis, XAxis::Categories(_));
    let key = if bars { Key::Bar } else { Key::Marker };
    let entries: Vec<(String, String, Key)> = c
        .lines
        .iter()
        .map(|l| (l.label.clone(), l.note.clone(), key))
        .collect();
    framed(canvas.into(), &entries, &c.footnote, |root, plot| {
        let all = c.lines.iter().flat_map(|l| l.points.iter());
        let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
        for x in c.x_extent.iter().copied().filter(|x| x.is_finite()) {
            x0 = x0.min(x);
            x1 = x1.max(x);
        }
        for p in all {
            x0 = x0.min(p.x);
            x1 = x1.max(p.x);
            for v in [p.low, p.high, p.mean] {
                if v.is_finite() {
                    y0 = y0.min(v);
                    y1 = y1.max(v);
                }
            }
        }
        let (x0, x1) = match &c.x_axis {
            XAxis::Categories(cats) => (-0.5, cats.len().max(1) as f64 - 0.5),
            XAxis::Numeric => padded(x0, x1),
        };
        // Metrics are mostly non-negative: start the axis at 0 when the data are near it, so
        // differences are not exaggerated.
        let bars_from_zero = matches!(c.x_axis, XAxis::Categories(_)) && y0 >= 0.0;
        let log_y = c.log_y && y0 > 0.0 && y0.is_finite();
        let (y0, y1) = if log_y {
            (y0 / 1.3, y1 * 1.3)
        } else if bars_from_zero || (y0 >= 0.0 && y0 < 0.5 * y1) {
            (0.0, padded(y0, y1).1)
        } else {
            padded(y0, y1)
        };
        // Values spanning two decades or more (rates from 1 kbit/s to 100 Mbit/s) on a log
        // axis, so the small ones are not squashed against the origin.
        let log_x = c.log_x && !bars && c.x_extent.iter().all(|x| *x > 0.0);
        if log_x {
            let (lo, hi) = c
                .x_extent
                .iter()
                .fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(*x), b.max(*x)));
            let mut builder = house_chart(plot, &c.title, 46, 70);
            with_y_scale!(
                builder,
                (lo / 1.3..hi * 1.3).log_scale(),
                log_y,
                y0,
                y1,
                |chart| {
                    styled(&mut chart.configure_mesh())
                        .x_desc(&c.x_label)
                        .y_desc(&c.y_label)
                        .y_labels(8)
                        .x_label_formatter(&|v| tick(*v))
                        .y_label_formatter(&|v| tick(*v))
                        .x_max_light_lines(0)
                        .y_max_light_lines(2)
                        .draw()
                        .map_err(err)?;
                    let decades = (hi / lo).log10();
                    let k = c.lines.len() as f64;
                    let dodge = |x: f64, i: usize| {
                        x * 10f64.powf((i as f64 - (k - 1.0) / 2.0) * decades * 0.006)
                    };
                    draw_lines(&mut chart, c, false, 0.0, y0, dodge)?;
                }
            );
        } else {
            // Category names wider than their slot are wrapped onto lines of their own below
            // the axis instead of running into their neighbours.
            let wrapped = match &c.x_axis {
                XAxis::Categories(cats) => category_lines(cats, plot.dim_in_pixel().0),
                XAxis::Numeric => None,
            };
            let extra_lines = wrapped
                .as_ref()
                .map_or(0, |w| w.iter().map(Vec::len).max().unwrap_or(1) - 1);
            let mut builder = house_chart(
                plot,
                &c.title,
                46 + CATEGORY_LINE_H * extra_lines as u32,
                70,
            );
            with_y_scale!(builder, x0..x1, log_y, y0, y1, |chart| {
                let cats = match &c.x_axis {
                    XAxis::Categories(c) if wrapped.is_none() => Some(c.clone()),
                    XAxis::Categories(c) => Some(vec![String::new(); c.len()]),
                    XAxis::Numeric => None,
                };
                let x_fmt = move |v: &f64| match &cats {
                    Some(cats) => {
                        let i = v.round();
                        if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < cats.len() {
                            cats[i as usize].clone()
                        } else {
                            String::new()
                        }
                    }
                    None => tick(*v),
                };
                let n_x_labels = match &c.x_axis {
                    XAxis::Categories(cats) => cats.len() + 1,
                    XAxis::Numeric => 8,
                };
                styled(&mut chart.configure_mesh())
                    .x_desc(&c.x_label)
                    .y_desc(&c.y_label)
                    .x_labels(n_x_labels)
                    .y_labels(8)
                    .x_label_formatter(&x_fmt)
                    .y_label_formatter(&|v| tick(*v))
                    .max_light_lines(2)
                    .draw()
                    .map_err(err)?;
                if let Some(wrapped) = &wrapped {
                    let style = TextStyle::from((FONT, 12).into_font())
                        .color(&BLACK)
                        .pos(Pos::new(HPos::Center, VPos::Top));
                    for (i, lines) in wrapped.iter().enumerate() {
                        let (px, py) = chart.backend_coord(&(i as f64, y0));
                        for (k, line) in lines.iter().enumerate() {
                            let y = py + 8 + (CATEGORY_LINE_H as i32) * k as i32;
                            root.draw_text(line, &style, (px, y)).map_err(err)?;
                        }
                    }
                }
                let k = c.lines.len() as f64;
                let span = x1 - x0;
                // Categories get grouped bars (the seeds' bar charts with CIs), one bar per series
                // side by side; numeric axes get lines, nudged apart so error bars do not hide each
                // other.
                let bar_w = 0.8 / k.max(1.0);
                let dodge = |x: f64, i: usize| {
                    if k <= 1.0 {
                        x
                    } else if bars {
                        x + (i as f64 - (k - 1.0) / 2.0) * bar_w
                    } else {
                        x + (i as f64 - (k - 1.0) / 2.0) * (span * 0.012).min(0.6 / k)
                    }
                };
                draw_lines(&mut chart, c, bars, bar_w, y0, dodge)?;
            });
        }
        Ok(())
    })
}

/// Draws `c`'s lines (or bars) with their CI error bars on `chart`, whatever its x coordinate
/// (linear or log); `dodge(x, i)` places series `i`'s point at `x`.
fn draw_lines<X, Y>(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<X, Y>>,
    c: &LineChart,
    bars: bool,
    bar_w: f64,
    y0: f64,
    dodge: impl Fn(f64, usize) -> f64,
) -> Result<(), ChartError>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    for (i, line) in c.lines.iter().enumerate() {
        let col = colour(i);
        let pts: Vec<CiPoint> = line
            .points
            .iter()
            .filter(|p| p.mean.is_finite())
            .copied()
            .collect();
        if bars {
            chart
                .draw_series(pts.iter().map(|p| {
                    Rectangle::new(
                        [
                            (dodge(p.x, i) - bar_w * 0.45, y0.max(0.0).min(p.mean)),
                            (dodge(p.x, i) + bar_w * 0.45, p.mean),
                        ],
                        col.mix(0.75).filled(),
                    )
                }))
                .map_err(err)?;
        } else {
            chart
                .draw_series(LineSeries::new(
                    pts.iter().map(|p| (dodge(p.x, i), p.mean)),
                    ShapeStyle::from(&col).stroke_width(2),
                ))
                .map_err(err)?;
        }
        let bar_colour = if bars { BLACK } else { col };
        chart
            .draw_series(pts.iter().map(|p| {
                ErrorBar::new_vertical(
                    dodge(p.x, i),
                    p.low,
                    p.mean,
                    p.high,
                    ShapeStyle::from(&bar_colour).stroke_width(1),
                    8,
                )
            }))
            .map_err(err)?;
        if !bars {
            chart
                .draw_series(
                    pts.iter()
                        .map(|p| Circle::new((dodge(p.x, i), p.mean), 3, col.filled())),
                )
                .map_err(err)?;
        }
    }
    Ok(())
}

/// How many labels the 0–1 axis of a CDF gets: every 0.1, or every 0.2 on a plot too short
/// for eleven lines of text.
fn fraction_labels(plot: &Area<'_>) -> usize {
    if plot.dim_in_pixel().1 < 300 {
        6
    } else {
        11
    }
}

/// Renders a [`CdfChart`] as an SVG document on `canvas` (a screen size in px converts into one).
pub fn cdf_chart(c: &CdfChart, canvas: impl Into<Canvas>) -> Result<String, ChartError> {
    let curves: Vec<(usize, Vec<(f64, f64)>)> = c
        .curves
        .iter()
        .enumerate()
        .map(|(i, cdf)| {
            let pts = ecdf(&cdf.values);
            let pts = if c.log_x {
                pts.into_iter().filter(|(x, _)| *x > 0.0).collect()
            } else {
                pts
            };
            (i, pts)
        })
        .collect();
    let xs = curves.iter().flat_map(|(_, p)| p.iter().map(|(x, _)| *x));
    let (lo, hi) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    let entries: Vec<(String, String, Key)> = c
        .curves
        .iter()
        .map(|l| (l.label.clone(), l.note.clone(), Key::Line))
        .collect();
    framed(canvas.into(), &entries, &c.footnote, |_, plot| {
        if c.log_x {
            let (lo, hi) = if lo <= hi && lo > 0.0 {
                (lo / 1.5, hi * 1.5)
            } else {
                (1e-3, 1.0)
            };
            let mut chart = house_chart(plot, &c.title, 46, 60)
                .build_cartesian_2d((lo..hi).log_scale(), 0.0..1.0)
                .map_err(err)?;
            styled(&mut chart.configure_mesh())
                .x_desc(&c.x_label)
                .y_desc("fraction ≤ x")
                .y_labels(fraction_labels(plot))
                .x_label_formatter(&|v| tick(*v))
                .y_label_formatter(&|v| tick(*v))
                // A log axis already has a line per 1–9 × 10^k: light lines would grey it out.
                .x_max_light_lines(0)
                .y_max_light_lines(1)
                .draw()
                .map_err(err)?;
            for (i, pts) in &curves {
                chart
                    .draw_series(LineSeries::new(
                        steps(pts),
                        ShapeStyle::from(&colour(*i)).stroke_width(2),
                    ))
                    .map_err(err)?;
            }
        } else {
            let (lo, hi) = if lo <= hi { padded(lo, hi) } else { (0.0, 1.0) };
            let lo = if lo < 0.0 && lo > -0.2 * hi { 0.0 } else { lo };
            let mut chart = house_chart(plot, &c.title, 46, 60)
                .build_cartesian_2d(lo..hi, 0.0..1.0)
                .map_err(err)?;
            styled(&mut chart.configure_mesh())
                .x_desc(&c.x_label)
                .y_desc("fraction ≤ x")
                .y_labels(fraction_labels(plot))
                .x_label_formatter(&|v| tick(*v))
                .y_label_formatter(&|v| tick(*v))
                .max_light_lines(2)
                .draw()
                .map_err(err)?;
            for (i, pts) in &curves {
                chart
                    .draw_series(LineSeries::new(
                        steps(pts),
                        ShapeStyle::from(&colour(*i)).stroke_width(2),
                    ))
                    .map_err(err)?;
            }
        }
        Ok(())
    })
}

/// The ECDF as a staircase: each value rises from the previous fraction to its own.
fn steps(pts: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(pts.len() * 2);
    let mut prev = 0.0;
    for &(x, f) in pts {
        out.push((x, prev));
        out.push((x, f));
        prev = f;
    }
    out
}

/// Colour of failures in a [`ScatterChart`].
pub const FAILURE_COLOUR: RGBColor = RGBColor(214, 39, 40);

/// Renders a [`ScatterChart`] as an SVG document on `canvas` (a screen size in px converts into one); both axes start at 0.
pub fn scatter_chart(c: &ScatterChart, canvas: impl Into<Canvas>) -> Result<String, ChartError> {
    let xs = c.series.iter().flat_map(|s| {
        s.points
            .iter()
            .map(|p| p.0)
            .chain(s.bins.iter().map(|b| b.0))
            .chain(s.failures.iter().map(|p| p.0))
    });
    let ys = c.series.iter().flat_map(|s| {
        s.points
            .iter()
            .map(|p| p.1)
            .chain(s.bins.iter().map(|b| b.3))
            .chain(s.failures.iter().map(|p| p.1))
    });
    let x_max = xs.filter(|v| v.is_finite()).fold(0.0, f64::max).max(1e-3);
    let y_max = ys.filter(|v| v.is_finite()).fold(0.0, f64::max).max(1e-3) * 1.05;
    let entries: Vec<(String, String, Key)> = c
        .series
        .iter()
        .map(|s| (s.label.clone(), s.note.clone(), Key::Marker))
        .collect();
    framed(canvas.into(), &entries, &c.footnote, |_, plot| {
        let mut chart = house_chart(plot, &c.title, 46, 70)
            .build_cartesian_2d(0.0..x_max, 0.0..y_max)
            .map_err(err)?;
        styled(&mut chart.configure_mesh())
            .x_desc(&c.x_label)
            .y_desc(&c.y_label)
            .x_labels(10)
            .y_labels(8)
            .x_label_formatter(&|v| tick(*v))
            .y_label_formatter(&|v| tick(*v))
            .max_light_lines(2)
            .draw()
            .map_err(err)?;
        for (i, s) in c.series.iter().enumerate() {
            let col = colour(i);
            chart
                .draw_series(
                    s.points
                        .iter()
                        .map(|&(x, y)| Circle::new((x, y), 2, col.mix(0.6).filled())),
                )
                .map_err(err)?;
            chart
                .draw_series(s.bins.iter().map(|&(x, lo, _, hi)| {
                    PathElement::new(vec![(x, lo), (x, hi)], col.mix(0.35).stroke_width(1))
                }))
                .map_err(err)?;
            if !s.bins.is_empty() {
                chart
                    .draw_series(LineSeries::new(
                        s.bins.iter().map(|&(x, _, mid, _)| (x, mid)),
                        ShapeStyle::from(&col).stroke_width(2),
                    ))
                    .map_err(err)?;
            }
            chart
                .draw_series(
                    s.failures
                        .iter()
                        .map(|&(x, y)| Cross::new((x, y), 4, FAILURE_COLOUR.stroke_width(1))),
                )
                .map_err(err)?;
        }
        Ok(())
    })
}

/// Renders a [`PanelChart`] on `canvas`, its panels stacked with equal heights under the title
/// (screen) or under a legend band (print, no title: the caption says it).
pub fn panel_chart(c: &PanelChart, canvas: impl Into<Canvas>) -> Result<String, ChartError> {
    let canvas = canvas.into();
    let (width, height) = canvas.size;
    let n = c.panels.len().max(1);
    let t_max = c
        .panels
        .iter()
        .flat_map(|p| p.lines.iter().flat_map(|(_, pts)| pts.iter().map(|p| p.0)))
        .fold(0.0, f64::max)
        .max(1e-3);
    let mut labels: Vec<String> = Vec::new();
    for p in &c.panels {
        for (l, _) in &p.lines {
            if !labels.contains(l) {
                labels.push(l.clone());
            }
        }
    }
    let entries: Vec<(String, String, Key)> = labels
        .iter()
        .map(|l| (l.clone(), String::new(), Key::Line))
        .collect();
    let print = canvas.print_in.is_some();
    let total = if print {
        height
    } else {
        fitted((width, height), &entries).1
    };
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (width, total)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let plots = if print {
            let rows = band_rows(&entries, width);
            let band_h = BAND_ROW_H * rows.len() as u32 + 6;
            let (band, rest) = root.split_vertically(band_h);
            legend_band(&band, &entries, &rows)?;
            rest
        } else {
            let root = root.titled(&c.title, (FONT, 17)).map_err(err)?;
            let (plots, side) = root.split_horizontally(width.saturating_sub(LEGEND_W));
            legend(&side, &entries)?;
            plots.split_vertically(height.saturating_sub(40)).0
        };
        // A print canvas is narrow: margins and label areas shrink, the text keeps its size.
        let (margin, x_area, x_area_inner, y_area) = if print {
            (4, 30, 4, 34)
        } else {
            (8, 40, 18, 70)
        };
        // Every panel plots on the same height: the last one is taller by its time axis.
        let plots_h = plots.dim_in_pixel().1;
        let each = plots_h.saturating_sub(x_area - x_area_inner) / n as u32;
        let breaks: Vec<u32> = (1..n as u32).map(|k| k * each).collect();
        let areas = plots.split_by_breakpoints::<u32, u32, _, _>([], breaks);
        for (k, (panel, area)) in c.panels.iter().zip(&areas).enumerate() {
            let y_max = panel
                .lines
                .iter()
                .flat_map(|(_, pts)| pts.iter().map(|p| p.1))
                .filter(|v| v.is_finite())
                .fold(0.0, f64::max);
            let y_max = if y_max > 0.0 { y_max * 1.08 } else { 1.0 };
            let last = k + 1 == n;
            let mut builder = ChartBuilder::on(area);
            // In print a panel is about an inch tall, too short for its quantity written up
            // its side: the quantity heads the panel instead, and only the last panel labels
            // the time axis.
            if print {
                builder.caption(&panel.y_label, (FONT, 11));
            }
            let mut chart = builder
                .margin(margin)
                .x_label_area_size(if last { x_area } else { x_area_inner })
                .y_label_area_size(y_area)
                .build_cartesian_2d(0.0..t_max, 0.0..y_max)
                .map_err(err)?;
            let mut mesh = chart.configure_mesh();
            let no_tick = |_: &f64| String::new();
            let time_tick = |v: &f64| tick(*v);
            if !print {
                mesh.y_desc(&panel.y_label);
            }
            mesh.y_labels(if print { 3 } else { 5 })
                .x_labels(if print { 6 } else { 10 })
                .x_label_formatter(if print && !last { &no_tick } else { &time_tick })
                .y_label_formatter(&|v| tick(*v))
                .axis_desc_style((FONT, if print { 11 } else { 13 }))
                .label_style((FONT, 11))
                .light_line_style(RGBColor(244, 244, 244))
                .bold_line_style(RGBColor(220, 220, 220))
                .max_light_lines(1);
            if last {
                mesh.x_desc(&c.x_label);
            }
            mesh.draw().map_err(err)?;
            for (label, pts) in &panel.lines {
                let i = labels.iter().position(|l| l == label).unwrap_or(0);
                chart
                    .draw_series(LineSeries::new(
                        pts.iter().copied().filter(|p| p.1.is_finite()),
                        ShapeStyle::from(&colour(i)).stroke_width(1),
                    ))
                    .map_err(err)?;
            }
        }
        root.present().map_err(err)?;
    }
    Ok(match canvas.print_in {
        Some((w, h)) => in_inches(&buf, w, h),
        None => buf,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ecdf_is_monotonic_and_ends_at_one() {
        let pts = ecdf(&[3.0, 1.0, f64::NAN, 2.0, 2.0]);
        assert_eq!(pts.len(), 4, "NaN dropped");
        assert!(pts.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 < w[1].1));
        assert_eq!(pts.last().map(|p| p.1), Some(1.0));
        assert_eq!(pts[0], (1.0, 0.25));
    }

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(tick(0.5), "0.5");
        assert_eq!(tick(12.0), "12");
        assert_eq!(tick(1234.5678), "1235");
        assert_eq!(tick(0.012345), "0.01235");
        assert_eq!(tick(0.0), "0");
    }

    #[test]
    fn mean_and_ci_share_their_decimals() {
        assert_eq!(mean_ci(8.626123, 8.57e-5), "8.626123 ± 0.000086");
        assert_eq!(mean_ci(0.0648, 1.39e-17), "0.0648 ± 0");
        assert_eq!(mean_ci(33.38, 0.886), "33.38 ± 0.89");
        assert_eq!(mean_ci(1234.0, 56.0), "1234 ± 56");
    }

    #[test]
    fn legend_labels_wrap_at_axis_separators() {
        let l = "experiment=shared, variant=quic+tcp-tls1.3, link.rate=10Mbit";
        assert_eq!(
            wrap(l),
            [
                "experiment=shared",
                "variant=quic+tcp-tls1.3",
                "link.rate=10Mbit"
            ]
        );
        assert_eq!(
            wrap("flow.cc=cubic, link.loss=1%"),
            ["flow.cc=cubic, link.loss=1%"]
        );
        assert!(wrap(&"y".repeat(90))
            .iter()
            .all(|l| l.chars().count() <= LEGEND_CHARS));
    }

    /// The `y` of the SVG `<text>` element holding `label`, and the document's height.
    fn text_y(svg: &str, label: &str) -> (Option<f64>, f64) {
        let attr = |tag: &str, name: &str| -> Option<f64> {
            let i = tag.find(&format!(" {name}=\""))? + name.len() + 3;
            tag[i..].split('"').next()?.parse().ok()
        };
        let height = attr(&svg[..svg.find('>').unwrap_or(0)], "height").unwrap_or(0.0);
        let y = svg.split("<text").skip(1).find_map(|t| {
            let end = t.find("</text>")?;
            let content = &t[t.find('>')? + 1..end];
            (content.trim() == label).then(|| attr(t, "y")).flatten()
        });
        (y, height)
    }

    #[test]
    fn a_long_legend_makes_the_figure_taller_instead_of_losing_entries() {
        let lines: Vec<Line> = (0..16)
            .map(|i| Line {
                label: format!("experiment=fig{i}, variant=model 1:{i} + I-bit"),
                note: "n/N = 100/100".into(),
                points: vec![CiPoint {
                    x: 1.0,
                    mean: 1.0,
                    low: 0.9,
                    high: 1.1,
                }],
            })
            .collect();
        let c = LineChart {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            x_axis: XAxis::Numeric,
            lines,
            log_x: false,
            log_y: false,
            x_extent: vec![0.0, 2.0],
            footnote: "f".into(),
        };
        let svg = line_chart(&c, (900, 500)).expect("drawn");
        let (y, height) = text_y(&svg, "variant=model 1:15 + I-bit");
        let y = y.expect("the last legend entry is drawn");
        assert!(height > 500.0, "the figure grew for its legend: {height}");
        assert!(
            y < height,
            "last entry at y = {y}, inside the {height} px figure"
        );
        let few = LineChart {
            lines: c.lines[..2].to_vec(),
            ..c
        };
        assert_eq!(
            text_y(&line_chart(&few, (900, 500)).expect("drawn"), "t").1,
            500.0
        );
    }

    #[test]
    fn category_names_wider_than_their_slot_wrap_onto_lines() {
        let cats: Vec<String> = [
            "model 1:1",
            "model 1:2",
            "model 1:10",
            "model 1:2 + I-bit",
            "model 1:10 + I-bit",
            "quinn 1:1",
            "quinn 1:2",
            "quinn 1:10",
        ]
        .map(String::from)
        .to_vec();
        let c = LineChart {
            title: "t".into(),
            x_label: "variant".into(),
            y_label: "y".into(),
            x_axis: XAxis::Categories(cats.clone()),
            lines: vec![Line {
                label: "a".into(),
                note: String::new(),
                points: (0..cats.len())
                    .map(|i| CiPoint {
                        x: i as f64,
                        mean: 1.0,
                        low: 0.9,
                        high: 1.1,
                    })
                    .collect(),
            }],
            log_x: false,
            log_y: false,
            x_extent: vec![],
            footnote: String::new(),
        };
        let svg = line_chart(&c, (1000, 500)).expect("drawn");
        // 8 slots on a ~600 px plot: the long names are split, their parts drawn one below
        // the other, and no drawn category line is longer than a slot holds.
        let first = text_y(&svg, "quinn 1:1")
            .0
            .expect("short names drawn whole");
        let second = text_y(&svg, "+ I-bit")
            .0
            .expect("a long name's second line");
        assert!(second > first, "{second} below {first}");
        assert!(
            text_y(&svg, "model 1:10 + I-bit").0.is_none(),
            "not on one line"
        );
        assert_eq!(
            text_y(&svg, "model 1:10").0,
            Some(first),
            "first lines level"
        );
        // Short names stay the axis' own labels.
        assert_eq!(category_lines(&cats[..3], 600), None);
        assert_eq!(wrap_words("abcdefghij klm", 6), ["abcde…", "klm"]);
    }

    #[test]
    fn long_legend_labels_are_shortened() {
        let s = shorten(&"x".repeat(80));
        assert_eq!(s.chars().count(), LEGEND_CHARS);
        assert!(s.ends_with('…'));
    }
}

/// One checked value of a [`ToleranceChart`]: its relative error and the tolerance it must stay
/// within.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    /// What was checked (drawn beside its row).
    pub label: String,
    /// Relative error, measured / expected − 1 (or the case's own error measure).
    pub error: f64,
    /// The errors that pass, (lowest, highest): (−tolerance, tolerance), or an upper bound
    /// alone (−∞, bound).
    pub band: (f64, f64),
    /// Whether it passed.
    pub pass: bool,
}

/// Validation points against their tolerance bands: a row per point, its error as a dot
/// (a cross when outside) over a grey band of ±tolerance around zero.
#[derive(Debug, Clone, PartialEq)]
pub struct ToleranceChart {
    /// Title above the plot.
    pub title: String,
    /// x axis label.
    pub x_label: String,
    /// The rows, top to bottom.
    pub items: Vec<Checked>,
    /// A line of small text under the plot.
    pub footnote: String,
}

/// Height of one row of a [`ToleranceChart`], px.
const TOLERANCE_ROW_H: u32 = 22;

/// Renders a [`ToleranceChart`] 960 px wide, as tall as its rows need.
pub fn tolerance_chart(c: &ToleranceChart) -> Result<String, ChartError> {
    let n = c.items.len().max(1);
    let height = 120 + TOLERANCE_ROW_H * n as u32;
    let width = 960;
    let reach = c
        .items
        .iter()
        .flat_map(|i| [i.error.abs(), i.band.0.abs(), i.band.1.abs()])
        .filter(|v| v.is_finite())
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max)
        .max(1e-3)
        * 1.15;
    let label_w = c
        .items
        .iter()
        .map(|i| i.label.chars().count())
        .max()
        .unwrap_or(10)
        .min(48) as f64
        * LABEL_CHAR_W;
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (plot, _) = root.split_vertically(height - 28);
        let rows = c.items.len();
        let mut chart = house_chart(&plot, &c.title, 46, (label_w as u32 + 16).max(70))
            .build_cartesian_2d(-reach..reach, -0.5..(rows.max(1) as f64 - 0.5))
            .map_err(err)?;
        let labels: Vec<String> = c.items.iter().map(|i| shorten(&i.label)).collect();
        let y_fmt = move |v: &f64| {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < labels.len() {
                labels[labels.len() - 1 - i as usize].clone()
            } else {
                String::new()
            }
        };
        styled(&mut chart.configure_mesh())
            .x_desc(&c.x_label)
            .y_labels(rows + 1)
            .x_labels(9)
            .y_label_formatter(&y_fmt)
            // A tick at zero can land a rounding error away from it (1.7e-16).
            .x_label_formatter(&|v| {
                let pct = *v * 100.0;
                format!("{}%", tick(if pct.abs() < 1e-9 { 0.0 } else { pct }))
            })
            .disable_y_mesh()
            .draw()
            .map_err(err)?;
        let y_of = |i: usize| (rows - 1 - i) as f64;
        chart
            .draw_series(c.items.iter().enumerate().map(|(i, it)| {
                Rectangle::new(
                    [
                        (it.band.0.max(-reach), y_of(i) - 0.32),
                        (it.band.1.min(reach), y_of(i) + 0.32),
                    ],
                    RGBColor(215, 215, 215).filled(),
                )
            }))
            .map_err(err)?;
        chart
            .draw_series(LineSeries::new(
                [(0.0, -0.5), (0.0, rows as f64 - 0.5)],
                ShapeStyle::from(&RGBColor(120, 120, 120)).stroke_width(1),
            ))
            .map_err(err)?;
        let clamp = |e: f64| e.clamp(-reach, reach);
        chart
            .draw_series(
                c.items
                    .iter()
                    .enumerate()
                    .filter(|(_, it)| it.pass)
                    .map(|(i, it)| Circle::new((clamp(it.error), y_of(i)), 4, colour(0).filled())),
            )
            .map_err(err)?;
        chart
            .draw_series(
                c.items
                    .iter()
                    .enumerate()
                    .filter(|(_, it)| !it.pass)
                    .map(|(i, it)| {
                        Cross::new(
                            (clamp(it.error), y_of(i)),
                            6,
                            FAILURE_COLOUR.stroke_width(2),
                        )
                    }),
            )
            .map_err(err)?;
        footnote(&root, &c.footnote, height)?;
        root.present().map_err(err)?;
    }
    Ok(buf)
}
