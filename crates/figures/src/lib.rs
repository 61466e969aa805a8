//! Figures and the self-contained `report.html` of a results directory.
//!
//! Reads what the runner writes (`results.jsonl`, `sweep.json`, `series/<id>.csv`) and draws
//! with plotters' SVG backend (no system libraries, no fonts needed: text stays text in the SVG
//! and the viewer renders it):
//! - [`sweep`]: each metric against each sweep axis, one line per value of the other axes (a
//!   protocol `variant` axis included), 95% Student-t CI error bars, n/N in the legend;
//! - [`cdf`]: CDFs of completion times, one curve per sweep point;
//! - [`series`]: one run's time series (goodput, cwnd, sRTT, bytes in flight, queues) per flow;
//! - [`html`]: one HTML file with the scenario, tables with n/N, warnings and every figure
//!   inline, viewable offline (no script, no external fetch).
//!
//! Metrics are addressed by dotted path and labelled by their field names, so metrics added to
//! the schema later (fairness, per-connection timings) are plotted without changes here.

#![warn(missing_docs)]

pub mod cdf;
pub mod chart;
pub mod data;
pub mod declared;
pub mod error;
pub mod export;
pub mod html;
mod html_paired;
pub mod metric;
pub mod path;
pub mod series;
pub mod sweep;
pub mod tradeoff;

use results::layout::REPORT_FILE;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

pub use data::ResultsDir;
pub use error::FigureError;

/// What a figure shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FigureKind {
    /// A study's own measure against an experiment's parameter, one line per protocol
    /// (`quiclab reproduce`; first in its report).
    Study,
    /// A metric against a sweep axis.
    Sweep,
    /// A CDF of completion times.
    Cdf,
    /// One run's time series.
    Series,
    /// Throughput against delay, one point per sweep point ([`tradeoff`]).
    Tradeoff,
    /// A figure the scenario asks for (`[[figure]]`, [`declared`]).
    Declared,
}

/// One rendered figure.
#[derive(Debug, Clone)]
pub struct Figure {
    /// File stem, unique within a directory's figures (`sweep-flows.0.goodput_bps-vs-link.loss`).
    pub id: String,
    /// Title (also drawn in the figure).
    pub title: String,
    /// One or two sentences saying what is drawn, for the report.
    pub caption: String,
    /// The SVG document.
    pub svg: String,
    /// What it shows.
    pub kind: FigureKind,
    /// Runs that were recorded but have no value of the metric (did not complete).
    pub missing_runs: usize,
}

/// The size a figure is drawn at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FigureSize {
    /// For the screen and the report: 960 px wide, the legend beside the plot, a title and a
    /// footnote.
    #[default]
    Screen,
    /// One column of a two-column paper: 3.5 × 2.6 in, text at least 8 pt, the legend above
    /// the plot, no title or footnote (the paper's caption says it).
    OneColumn,
    /// Across both columns: 7 × 3 in, otherwise as [`FigureSize::OneColumn`].
    TwoColumn,
}

impl FigureSize {
    /// The canvas of a figure whose screen size is `screen` px.
    pub fn canvas(self, screen: (u32, u32)) -> chart::Canvas {
        match self {
            FigureSize::Screen => screen.into(),
            FigureSize::OneColumn => chart::Canvas::print(3.5, 2.6),
            FigureSize::TwoColumn => chart::Canvas::print(7.0, 3.0),
        }
    }

    /// The canvas of a figure of `panels` stacked panels, `panel_h` px each on the screen
    /// (`width` px wide with a 40 px title): in print every panel gets about an inch (a little
    /// less across two columns), so the text stays at its print size and the curves readable.
    pub fn panels_canvas(self, width: u32, panel_h: u32, panels: usize) -> chart::Canvas {
        let n = panels.max(1) as f64;
        match self {
            FigureSize::Screen => (width, 40 + panel_h * panels.max(1) as u32).into(),
            FigureSize::OneColumn => chart::Canvas::print(3.5, 0.3 + 1.05 * n),
            FigureSize::TwoColumn => chart::Canvas::print(7.0, 0.3 + 0.9 * n),
        }
    }

    /// A size for print (no title or footnote drawn).
    pub fn is_print(self) -> bool {
        self != FigureSize::Screen
    }
}

/// Which figures to make.
#[derive(Debug, Clone, Default)]
pub struct PlotOptions {
    /// Metric paths or `*` patterns (`flows.*.goodput_bps`); empty: the defaults of
    /// [`metric::DEFAULT_METRICS`] that are present.
    pub metrics: Vec<String>,
    /// Sweep axes to put on x; empty: every axis with more than one value.
    pub x: Vec<String>,
    /// Runs whose time series to draw; empty: a representative run per point (at most
    /// `max_series_points` points, spread over the sweep).
    pub runs: Vec<String>,
    /// How many points get a representative time-series figure when `runs` is empty.
    pub max_series_points: usize,
    /// Throughput-against-delay figures to draw (none unless asked: which delay and which
    /// flows are the question's, not the directory's).
    pub tradeoffs: Vec<tradeoff::TradeoffSpec>,
    /// The size every figure is drawn at.
    pub size: FigureSize,
}

/// Whether any point of `d` measures inside a window (`run.measure_from` > 0 or
/// `run.measure_until` set); unknown (no `sweep.json`) counts as yes.
pub fn has_window(d: &ResultsDir) -> bool {
    d.points.is_empty()
        || d.points.iter().any(|p| {
            p.duration_s.is_none()
                || p.measure_from_s.is_some_and(|f| f > 0.0)
                || p.measure_until_s.is_some()
        })
}

/// Every numeric metric path present in at least one run.
pub fn available_metrics(d: &ResultsDir) -> BTreeSet<String> {
    d.runs
        .iter()
        .flat_map(|r| r.metrics.keys().cloned())
        .collect()
}

/// A comma-separated list, shortened after 20 items.
pub(crate) fn listing<'a>(items: impl IntoIterator<Item = &'a String>) -> String {
    let v: Vec<&String> = items.into_iter().collect();
    let mut s = v
        .iter()
        .take(20)
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    if v.len() > 20 {
        s.push_str(&format!(", … ({} in all)", v.len()));
    }
    if s.is_empty() {
        s = "(none)".into();
    }
    s
}

/// The metrics `opts` names (checked against the directory) or the defaults.
pub fn chosen_metrics(d: &ResultsDir, opts: &PlotOptions) -> Result<Vec<String>, FigureError> {
    let available = available_metrics(d);
    if opts.metrics.is_empty() {
        let mut m = metric::defaults(&available);
        if !has_window(d) {
            // Without a measurement window the window metrics repeat the whole-run ones.
            m.retain(|p| {
                !p.rsplit('.')
                    .next()
                    .is_some_and(|l| l.starts_with("window_"))
            });
        }
        d.drop_copied_flows(&mut m);
        return Ok(m);
    }
    let (got, unmatched) = metric::expand(&opts.metrics, &available);
    if let Some(u) = unmatched.first() {
        // Paths that contain what was typed (or its last word) first: `flows.0.goodput`
        // suggests `flows.0.goodput_bps` before 60 other paths.
        let last = u.rsplit('.').next().unwrap_or(u);
        let close: Vec<&String> = available
            .iter()
            .filter(|m| m.contains(u.as_str()) || (!last.is_empty() && m.contains(last)))
            .take(8)
            .collect();
        let mut text = String::new();
        if !close.is_empty() {
            text.push_str(&format!("did you mean {}? ", listing(close)));
        }
        text.push_str(&format!("all: {}", listing(&available)));
        return Err(FigureError::Unknown {
            what: "--metric",
            given: u.clone(),
            available: text,
        });
    }
    Ok(got)
}

/// The x axes `opts` names (checked) or every varying axis.
pub fn chosen_axes(d: &ResultsDir, opts: &PlotOptions) -> Result<Vec<String>, FigureError> {
    let varying = sweep::varying_axes(d);
    if opts.x.is_empty() {
        return Ok(sweep::plottable_axes(d));
    }
    for x in &opts.x {
        if !varying.contains(x) {
            return Err(FigureError::Unknown {
                what: "--x",
                given: x.clone(),
                available: format!("axes with two or more values: {}", listing(&varying)),
            });
        }
    }
    Ok(opts.x.clone())
}

/// The runs whose time series to draw.
pub fn chosen_runs(d: &ResultsDir, opts: &PlotOptions) -> Result<Vec<String>, FigureError> {
    if !opts.runs.is_empty() {
        for r in &opts.runs {
            if !d.series.contains(r) {
                return Err(FigureError::Unknown {
                    what: "--run",
                    given: r.clone(),
                    available: format!("runs with a series file: {}", listing(&d.series)),
                });
            }
        }
        return Ok(opts.runs.clone());
    }
    let n = d.points.len();
    let want = opts.max_series_points.min(n);
    let mut picks: Vec<usize> = Vec::new();
    if want > 0 {
        // Spread over the sweep: first and last point and evenly between.
        for i in 0..want {
            let p = if want == 1 {
                0
            } else {
                i * (n - 1) / (want - 1)
            };
            if !picks.contains(&p) {
                picks.push(p);
            }
        }
    }
    Ok(picks
        .into_iter()
        .filter_map(|p| series::representative(d, p).map(|r| r.id.clone()))
        .collect())
}

/// Every figure `opts` asks for: sweep figures, completion CDFs (for the chosen metrics when
/// the user named completion metrics, else every completion metric), time series.
pub fn figures(d: &ResultsDir, opts: &PlotOptions) -> Result<Vec<Figure>, FigureError> {
    let metrics = chosen_metrics(d, opts)?;
    let axes = chosen_axes(d, opts)?;
    // The scenario's own figures lead the default set; figures named on the command line are
    // drawn alone.
    let default_set = opts.metrics.is_empty() && opts.x.is_empty() && opts.runs.is_empty();
    let mut out = if default_set {
        declared::figures(d, opts.size)?
    } else {
        Vec::new()
    };
    out.extend(sweep::figures(d, &metrics, &axes, opts.size)?);
    let cdf_metrics: Vec<String> = if opts.metrics.is_empty() {
        let mut m = cdf::completion_metrics(d);
        d.drop_copied_flows(&mut m);
        m
    } else {
        metrics
            .iter()
            .filter(|m| m.ends_with("completion_s"))
            .cloned()
            .collect()
    };
    out.extend(cdf::figures(d, &cdf_metrics, opts.size)?);
    for spec in &opts.tradeoffs {
        out.extend(tradeoff::figures(d, spec, opts.size)?);
    }
    for id in chosen_runs(d, opts)? {
        out.push(series::figure(d, &id, opts.size)?);
    }
    Ok(out)
}

/// Writes `bytes` to `path` through a temporary file and a rename, never through a link
/// ([`fsutil::write_atomic`]), mode 0644 so a report written as root can be opened by its
/// reader.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), FigureError> {
    fsutil::write_atomic(path, bytes).map_err(FigureError::io(path))
}

/// Creates directory `dir` if absent; an existing symlink or non-directory there is an error
/// (nothing is written through a link planted in a shared results directory).
pub fn ensure_dir(dir: &Path) -> Result<(), FigureError> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_dir() => Ok(()),
        Ok(_) => Err(FigureError::Io {
            path: dir.to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "exists and is not a directory (a link is not followed)",
            ),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir(dir).map_err(FigureError::io(dir))
        }
        Err(e) => Err(FigureError::io(dir)(e)),
    }
}

/// The list of figures `write_figures` wrote into a directory (name, length, FNV-1a hash per
/// line): what a later call may remove when it no longer writes them.
pub const WRITTEN_LIST: &str = ".quiclab-figures";

/// Largest written-list or figure read back when deciding what is stale; anything larger was
/// not written by us and is left alone.
const MAX_STALE_CHECK_BYTES: u64 = 64 * 1024 * 1024;

/// Which figures written earlier a [`write_figures`] replaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replace<'a> {
    /// None: the figures written now are added (or overwrite their own earlier files) and every
    /// other stays (`quiclab plot --metric …` adds to what is there).
    Nothing,
    /// Every figure of these kinds written earlier and not written now: a metric or point gone
    /// since leaves no stale figure beside fresh ones. Earlier files of unknown kind count as
    /// replaced.
    Kinds(&'a [FigureKind]),
}

impl FigureKind {
    /// Every kind.
    pub const ALL: [FigureKind; 6] = [
        FigureKind::Declared,
        FigureKind::Study,
        FigureKind::Sweep,
        FigureKind::Cdf,
        FigureKind::Series,
        FigureKind::Tradeoff,
    ];

    /// Its name in the written list.
    fn name(self) -> &'static str {
        match self {
            FigureKind::Study => "study",
            FigureKind::Sweep => "sweep",
            FigureKind::Cdf => "cdf",
            FigureKind::Series => "series",
            FigureKind::Tradeoff => "tradeoff",
            FigureKind::Declared => "declared",
        }
    }
}

/// One line of the written list: a file this module wrote, its length, hash and kind.
#[derive(Debug, Clone, PartialEq)]
struct Written {
    name: String,
    len: u64,
    hash: u64,
    /// `None` for a list written without kinds.
    kind: Option<FigureKind>,
}

/// Writes each figure as `<out>/<id>.<ext>` in each of `formats` and returns the paths, then
/// removes the earlier files `replace` says the new set replaces. Only files this function
/// provably wrote go: listed in `out/.quiclab-figures`, a plain figure name inside `out`, still a
/// regular file (never a link) with the length and hash recorded when it was written; anything
/// else, such as a figure the user edited or put there, stays.
pub fn write_figures(
    out: &Path,
    figs: &[Figure],
    formats: &[export::Format],
    replace: Replace<'_>,
) -> Result<Vec<PathBuf>, FigureError> {
    ensure_dir(out)?;
    let previous = read_written_list(out);
    let mut paths = Vec::new();
    let mut written: Vec<Written> = Vec::new();
    for f in figs {
        for &format in formats {
            let name = format!("{}.{}", f.id, format.extension());
            let bytes = export::convert(&f.svg, format)?;
            let p = out.join(&name);
            write_file(&p, &bytes)?;
            written.push(Written {
                name,
                len: bytes.len() as u64,
                hash: fnv1a(&bytes),
                kind: Some(f.kind),
            });
            paths.push(p);
        }
    }
    for w in previous {
        if written.iter().any(|n| n.name == w.name) {
            continue;
        }
        let replaced = match replace {
            Replace::Nothing => false,
            Replace::Kinds(kinds) => w.kind.is_none_or(|k| kinds.contains(&k)),
        };
        let p = out.join(&w.name);
        if !replaced {
            // Still ours and still there: keep track of it for a later replacement.
            if is_ours(&p, w.len, w.hash) {
                written.push(w);
            }
            continue;
        }
        if is_ours(&p, w.len, w.hash) {
            std::fs::remove_file(&p).map_err(FigureError::io(&p))?;
        }
    }
    let list: String = written
        .iter()
        .map(|w| {
            format!(
                "{}\t{}\t{:016x}\t{}\n",
                w.name,
                w.len,
                w.hash,
                w.kind.map_or("", FigureKind::name)
            )
        })
        .collect();
    write_file(&out.join(WRITTEN_LIST), list.as_bytes())?;
    Ok(paths)
}

/// The entries of `out/.quiclab-figures` that are safe names (`x.svg`, `x.pdf`, `x.png`, no
/// path separators); an absent, linked, oversized or unreadable list is empty (nothing is
/// removed).
fn read_written_list(out: &Path) -> Vec<Written> {
    let Some(text) = read_ours(&out.join(WRITTEN_LIST)) else {
        return Vec::new();
    };
    let Ok(text) = String::from_utf8(text) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| {
            let mut it = l.split('\t');
            let name = it.next()?;
            let len = it.next()?.parse().ok()?;
            let hash = u64::from_str_radix(it.next()?, 16).ok()?;
            let kind = it
                .next()
                .and_then(|k| FigureKind::ALL.into_iter().find(|x| x.name() == k));
            let figure = Path::new(name)
                .extension()
                .and_then(|e| e.to_str())
                .and_then(export::Format::of_extension)
                .is_some();
            let safe = figure
                && !name.starts_with('.')
                && !name.contains(['/', '\0'])
                && Path::new(name).file_name() == Some(std::ffi::OsStr::new(name));
            safe.then(|| Written {
                name: name.to_string(),
                len,
                hash,
                kind,
            })
        })
        .collect()
}

/// Reads a regular file (never through a link) of at most [`MAX_STALE_CHECK_BYTES`].
fn read_ours(path: &Path) -> Option<Vec<u8>> {
    fsutil::read_bounded(path, MAX_STALE_CHECK_BYTES).ok()
}

/// Whether `path` is still the figure we wrote: a regular file with the recorded length and hash.
fn is_ours(path: &Path, len: u64, hash: u64) -> bool {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_file() && m.len() == len => {
            read_ours(path).is_some_and(|b| fnv1a(&b) == hash)
        }
        _ => false,
    }
}

/// FNV-1a, 64 bits: a stable fingerprint of a figure we wrote (not a security boundary; the
/// list itself only ever names files inside the figures directory).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Renders `DIR/report.html` and returns its path.
pub fn write_report(
    dir: &Path,
    tradeoffs: &[tradeoff::TradeoffSpec],
    leading: &[Figure],
) -> Result<PathBuf, FigureError> {
    write_report_with(dir, tradeoffs, leading, "")
}

/// [`write_report`] with an HTML section of the caller's first in the page (a study's
/// comparison with its paper).
pub fn write_report_with(
    dir: &Path,
    tradeoffs: &[tradeoff::TradeoffSpec],
    leading: &[Figure],
    preface_html: &str,
) -> Result<PathBuf, FigureError> {
    let d = ResultsDir::open(dir)?;
    let html = html::report(&d, tradeoffs, leading, preface_html)?;
    let path = dir.join(REPORT_FILE);
    write_file(&path, html.as_bytes())?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fig(id: &str, svg: &str) -> Figure {
        Figure {
            id: id.to_string(),
            title: id.to_string(),
            caption: String::new(),
            svg: svg.to_string(),
            kind: FigureKind::Cdf,
            missing_runs: 0,
        }
    }

    #[test]
    fn stale_figures_it_wrote_are_removed_and_nothing_else() {
        let tmp = fsutil::PrivateDir::new("figures-stale-").expect("dir");
        let dir = tmp.path().join("figures");
        write_figures(
            &dir,
            &[
                fig("a", "<svg>a</svg>"),
                fig("b", "<svg>b</svg>"),
                fig("c", "<svg>c</svg>"),
                fig("d", "<svg>d</svg>"),
            ],
            &[export::Format::Svg],
            Replace::Kinds(&FigureKind::ALL),
        )
        .expect("first");
        // The user's own files, and one of ours that the user edited since.
        std::fs::write(dir.join("mine.svg"), "<svg/>").expect("user file");
        std::fs::write(dir.join("c.svg"), "<svg>edited</svg>").expect("edit");
        // A link in place of one of ours is not followed nor removed.
        let target = tmp.path().join("target.svg");
        std::fs::write(&target, "<svg>d</svg>").expect("target");
        std::fs::remove_file(dir.join("d.svg")).expect("rm");
        std::os::unix::fs::symlink(&target, dir.join("d.svg")).expect("link");
        // A tampered list naming a file outside the directory is ignored.
        let list = std::fs::read_to_string(dir.join(WRITTEN_LIST)).expect("list");
        std::fs::write(
            dir.join(WRITTEN_LIST),
            format!("{list}../target.svg\t12\t{:016x}\n", fnv1a(b"<svg>d</svg>")),
        )
        .expect("tamper");

        let paths = write_figures(
            &dir,
            &[fig("a", "<svg>a2</svg>")],
            &[export::Format::Svg],
            Replace::Kinds(&FigureKind::ALL),
        )
        .expect("second");
        assert_eq!(paths, [dir.join("a.svg")]);
        assert!(dir.join("a.svg").exists());
        assert!(!dir.join("b.svg").exists(), "stale figure of ours stays");
        assert!(dir.join("c.svg").exists(), "an edited figure was removed");
        assert!(dir.join("mine.svg").exists(), "a user's file was removed");
        assert!(
            std::fs::symlink_metadata(dir.join("d.svg")).is_ok(),
            "the link was removed"
        );
        assert!(target.exists(), "a file outside the directory was removed");
        let list = std::fs::read_to_string(dir.join(WRITTEN_LIST)).expect("list");
        assert_eq!(list.lines().count(), 1, "{list}");
        assert!(list.starts_with("a.svg\t"), "{list}");
        tmp.remove().expect("clean");
    }

    #[test]
    fn adding_keeps_the_others_and_replacing_keeps_other_kinds() {
        let tmp = fsutil::PrivateDir::new("figures-add-").expect("dir");
        let dir = tmp.path().join("figures");
        let svg = [export::Format::Svg];
        let mut study = fig("study-a", "<svg>s</svg>");
        study.kind = FigureKind::Study;
        let all = Replace::Kinds(&FigureKind::ALL);
        write_figures(&dir, &[study, fig("cdf-b", "<svg>b</svg>")], &svg, all).expect("first");
        // `plot --metric`: adds one, removes nothing.
        write_figures(
            &dir,
            &[fig("cdf-c", "<svg>c</svg>")],
            &svg,
            Replace::Nothing,
        )
        .expect("add");
        for name in ["study-a.svg", "cdf-b.svg", "cdf-c.svg"] {
            assert!(dir.join(name).exists(), "{name} removed by an addition");
        }
        // A default `plot`: replaces its own kinds, keeps the study's figure.
        let plot_kinds = [FigureKind::Cdf];
        write_figures(
            &dir,
            &[fig("cdf-d", "<svg>d</svg>")],
            &svg,
            Replace::Kinds(&plot_kinds),
        )
        .expect("replace");
        assert!(dir.join("study-a.svg").exists(), "another kind was removed");
        assert!(!dir.join("cdf-b.svg").exists() && !dir.join("cdf-c.svg").exists());
        // The kept figure is still tracked: replacing every kind removes it.
        write_figures(&dir, &[], &svg, all).expect("all");
        assert!(
            !dir.join("study-a.svg").exists(),
            "the kept figure was forgotten"
        );
        tmp.remove().expect("clean");
    }

    #[test]
    fn every_format_is_written_and_a_format_no_longer_asked_for_is_removed() {
        let tmp = fsutil::PrivateDir::new("figures-formats-").expect("dir");
        let dir = tmp.path().join("figures");
        let svg = r#"<svg xmlns="http://www.w3.org/2000/svg" width="20" height="10"><rect width="20" height="10"/></svg>"#;
        let all = Replace::Kinds(&FigureKind::ALL);
        let paths = write_figures(&dir, &[fig("a", svg)], &export::Format::ALL, all).expect("all");
        assert_eq!(
            paths,
            [dir.join("a.svg"), dir.join("a.pdf"), dir.join("a.png")]
        );
        write_figures(&dir, &[fig("a", svg)], &[export::Format::Svg], all).expect("svg only");
        assert!(dir.join("a.svg").exists());
        assert!(!dir.join("a.pdf").exists() && !dir.join("a.png").exists());
        tmp.remove().expect("clean");
    }
}
