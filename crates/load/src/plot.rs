//! Latency-over-time plot as a self-contained SVG (or HTML page wrapping it).
//!
//! x = intended send time, y = latency. Small runs are drawn point by point; large ones are
//! binned along x (per bin: a min–max bar and the median), so the file stays small (a few hundred
//! kB at most) for any number of requests. Errors are red crosses, one per bin.

use std::fmt::Write as _;

use crate::record::ResultRecord;

/// Above this many points in all series together, series are drawn binned.
const MAX_RAW_POINTS: usize = 3_000;
/// Bins across the time axis when binning.
const BINS: usize = 400;
const WIDTH: f64 = 960.0;
const HEIGHT: f64 = 540.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
const PALETTE: [&str; 6] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#17becf",
];
const ERROR_COLOUR: &str = "#d62728";

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

/// Escapes text for SVG/XML content and attributes.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Round tick spacing (1, 2 or 5 × 10^k) giving about `target` ticks over `0..max`.
fn tick_step(max: f64, target: f64) -> f64 {
    let raw = (max / target).max(f64::MIN_POSITIVE);
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * magnitude);
    step.max(f64::MIN_POSITIVE)
}

/// Maps data coordinates to SVG pixels.
struct Frame {
    x_max: f64,
    y_max: f64,
}

impl Frame {
    fn x(&self, seconds: f64) -> f64 {
        LEFT + seconds / self.x_max * (WIDTH - LEFT - RIGHT)
    }
    fn y(&self, ms: f64) -> f64 {
        HEIGHT - BOTTOM - ms / self.y_max * (HEIGHT - TOP - BOTTOM)
    }
}

/// Renders the plot as a standalone SVG document.
pub fn svg(series: &[Series], title: &str) -> String {
    let all = series.iter().flat_map(|s| s.points.iter());
    let x_max = all
        .clone()
        .map(|p| f64::from(p.seconds))
        .fold(0.0, f64::max)
        .max(1e-3);
    let y_max = all
        .map(|p| f64::from(p.latency_ms))
        .fold(0.0, f64::max)
        .max(1e-3)
        * 1.05;
    let frame = Frame { x_max, y_max };
    let mut o = String::new();
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(o, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        o,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="15">{}</text>"#,
        WIDTH / 2.0,
        escape(title)
    );
    axes(&mut o, &frame);
    let total: usize = series.iter().map(Series::len).sum();
    for (i, s) in series.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let _ = writeln!(o, r#"<g class="series" data-name="{}">"#, escape(&s.name));
        if total <= MAX_RAW_POINTS {
            raw_points(&mut o, &frame, s, colour);
        } else {
            binned(&mut o, &frame, s, colour);
        }
        let _ = writeln!(o, "</g>");
    }
    legend(&mut o, series);
    let _ = writeln!(o, "</svg>");
    o
}

/// Wraps the SVG in a minimal HTML page.
pub fn html(series: &[Series], title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{}</title></head>\n<body>\n{}</body></html>\n",
        escape(title),
        svg(series, title)
    )
}

fn axes(o: &mut String, f: &Frame) {
    let (x0, y0) = (LEFT, HEIGHT - BOTTOM);
    let _ = writeln!(
        o,
        r##"<path d="M{x0} {TOP} V{y0} H{}" fill="none" stroke="#333"/>"##,
        WIDTH - RIGHT
    );
    let step = tick_step(f.x_max, 10.0);
    let mut t = 0.0;
    while t <= f.x_max + step * 1e-9 {
        let x = f.x(t);
        let _ = writeln!(
            o,
            r##"<line x1="{x:.1}" y1="{y0}" x2="{x:.1}" y2="{}" stroke="#333"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"##,
            y0 + 5.0,
            y0 + 18.0,
            trim(t)
        );
        t += step;
    }
    let step = tick_step(f.y_max, 8.0);
    let mut v = 0.0;
    while v <= f.y_max {
        let y = f.y(v);
        let _ = writeln!(
            o,
            r##"<line x1="{x0}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            WIDTH - RIGHT,
            x0 - 6.0,
            y + 4.0,
            trim(v)
        );
        v += step;
    }
    let _ = writeln!(
        o,
        r#"<text x="{}" y="{}" text-anchor="middle">intended send time (s)</text>"#,
        (LEFT + WIDTH - RIGHT) / 2.0,
        HEIGHT - 12.0
    );
    let _ = writeln!(
        o,
        r#"<text x="18" y="{}" text-anchor="middle" transform="rotate(-90 18 {})">latency (ms)</text>"#,
        HEIGHT / 2.0,
        HEIGHT / 2.0
    );
}

/// Formats a tick value without float noise.
fn trim(v: f64) -> String {
    let s = format!("{v:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn cross(o: &mut String, x: f64, y: f64) {
    let _ = writeln!(
        o,
        r#"<path d="M{:.1} {:.1} l6 6 m0 -6 l-6 6" stroke="{ERROR_COLOUR}" stroke-width="1.5"/>"#,
        x - 3.0,
        y - 3.0
    );
}

fn raw_points(o: &mut String, f: &Frame, s: &Series, colour: &str) {
    for p in &s.points {
        let (x, y) = (f.x(f64::from(p.seconds)), f.y(f64::from(p.latency_ms)));
        if p.ok {
            let _ = writeln!(
                o,
                r#"<circle cx="{x:.1}" cy="{y:.1}" r="2" fill="{colour}"/>"#
            );
        } else {
            cross(o, x, y);
        }
    }
}

fn binned(o: &mut String, f: &Frame, s: &Series, colour: &str) {
    let mut ok: Vec<Vec<f32>> = vec![Vec::new(); BINS];
    let mut failed: Vec<(u64, f32)> = vec![(0, 0.0); BINS];
    for p in &s.points {
        let bin = ((f64::from(p.seconds) / f.x_max) * BINS as f64) as usize;
        let bin = bin.min(BINS - 1);
        if p.ok {
            ok[bin].push(p.latency_ms);
        } else {
            failed[bin].0 += 1;
            failed[bin].1 = failed[bin].1.max(p.latency_ms);
        }
    }
    let mut medians = String::new();
    for (bin, values) in ok.iter_mut().enumerate() {
        if values.is_empty() {
            continue;
        }
        values.sort_unstable_by(f32::total_cmp);
        let x = f.x((bin as f64 + 0.5) / BINS as f64 * f.x_max);
        let (lo, mid, hi) = (
            values[0],
            values[values.len() / 2],
            values[values.len() - 1],
        );
        let _ = writeln!(
            o,
            r#"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="{colour}" stroke-opacity="0.35"/>"#,
            f.y(f64::from(lo)),
            f.y(f64::from(hi))
        );
        let _ = write!(
            medians,
            "{}{x:.1} {:.1}",
            if medians.is_empty() { "M" } else { " L" },
            f.y(f64::from(mid))
        );
    }
    if !medians.is_empty() {
        let _ = writeln!(
            o,
            r#"<path d="{medians}" fill="none" stroke="{colour}" stroke-width="1.5"/>"#
        );
    }
    for (bin, (count, worst)) in failed.iter().enumerate() {
        if *count > 0 {
            let x = f.x((bin as f64 + 0.5) / BINS as f64 * f.x_max);
            cross(o, x, f.y(f64::from(*worst)));
        }
    }
}

fn legend(o: &mut String, series: &[Series]) {
    let x = LEFT + 12.0;
    for (i, s) in series.iter().enumerate() {
        let y = TOP + 10.0 + 16.0 * i as f64;
        let _ = writeln!(
            o,
            r#"<rect x="{x}" y="{:.1}" width="10" height="10" fill="{}"/><text x="{}" y="{:.1}">{} ({} requests)</text>"#,
            y - 9.0,
            PALETTE[i % PALETTE.len()],
            x + 15.0,
            y,
            escape(&s.name),
            s.len()
        );
    }
    let y = TOP + 10.0 + 16.0 * series.len() as f64;
    cross(o, x + 5.0, y - 4.0);
    let _ = writeln!(o, r#"<text x="{}" y="{y:.1}">errors</text>"#, x + 15.0);
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

    fn parse(svg: &str) -> roxmltree::Document<'_> {
        roxmltree::Document::parse(svg).expect("valid XML")
    }

    #[test]
    fn small_runs_draw_every_point() {
        let s = [series("h1 <&>", 100, 10)];
        let out = svg(&s, "title");
        let doc = parse(&out);
        let root = doc.root_element();
        assert_eq!(root.tag_name().name(), "svg");
        let circles = doc
            .descendants()
            .filter(|n| n.has_tag_name("circle"))
            .count();
        assert_eq!(circles, 90);
        assert!(out.contains("h1 &lt;&amp;&gt; (100 requests)"));
    }

    #[test]
    fn large_runs_are_binned_and_stay_small() {
        let s = [series("h2", 200_000, 1000), series("h3", 200_000, 7)];
        let out = svg(&s, "big");
        let doc = parse(&out);
        let groups: Vec<_> = doc
            .descendants()
            .filter(|n| n.attribute("class") == Some("series"))
            .collect();
        assert_eq!(groups.len(), 2);
        assert_eq!(
            doc.descendants()
                .filter(|n| n.has_tag_name("circle"))
                .count(),
            0
        );
        assert!(out.len() < 400_000, "{} bytes", out.len());
        // Each series has its median path and error crosses in the error colour.
        for g in groups {
            assert!(g.descendants().any(|n| n.has_tag_name("path")
                && n.attribute("stroke-width") == Some("1.5")
                && n.attribute("stroke") != Some(ERROR_COLOUR)));
            assert!(g
                .descendants()
                .any(|n| n.attribute("stroke") == Some(ERROR_COLOUR)));
        }
    }

    #[test]
    fn html_wraps_the_svg() {
        let out = html(&[series("x", 10, 3)], "t");
        assert!(out.starts_with("<!DOCTYPE html>"));
        assert!(out.contains("<svg"));
    }

    #[test]
    fn ticks_are_round() {
        assert_eq!(tick_step(10.0, 10.0), 1.0);
        assert_eq!(tick_step(37.0, 8.0), 5.0);
        assert!((tick_step(0.3, 10.0) - 0.05).abs() < 1e-12);
    }
}
