//! Reproduction of the seed studies: a study's grid of scenarios as one combined sweep, tabulated
//! next to the paper's figures (`quiclab reproduce`, and any other front end).
//!
//! A study is prepared ([`prepare`]: its experiments combined into one sweep, screened for the
//! emulator if asked), run by the experiment library into a results directory like any sweep
//! (the caller picks engine, executor, progress and stop), then tabulated ([`Prepared::tables`])
//! and written ([`write`]: `table.md`, `table.csv`, figures and `report.html`). [`run`] does all
//! of it in one call for a front end with no progress display of its own.

pub mod combine;
pub mod explain;
pub mod paired;
pub mod paper;
pub mod registry;
pub mod screen;
pub mod study_figures;
pub mod table;
pub mod ware;

use std::path::{Path, PathBuf};

use experiment::{Engine, Executor, Progress, Sweep, SweepOutcome};
use results::store::ResultsStore;

pub use combine::Combined;
pub use registry::{find, names, Experiment, Study, STUDIES};
pub use screen::{Check, Screened};

/// File names of the study's table inside its results directory.
pub const TABLE_MD: &str = "table.md";
/// See [`TABLE_MD`].
pub const TABLE_CSV: &str = "table.csv";

/// Why a study could not be prepared, run or tabulated.
#[derive(Debug, thiserror::Error)]
pub enum ReproduceError {
    /// `only` named an experiment the study does not have.
    #[error("unknown experiment of {study}; allowed: {}", .allowed.join(", "))]
    UnknownExperiment {
        /// The study.
        study: &'static str,
        /// Its experiments.
        allowed: Vec<&'static str>,
    },
    /// A study file or an override does not resolve.
    #[error("{0}")]
    Scenario(String),
    /// The sweep or its results directory failed.
    #[error(transparent)]
    Experiment(#[from] experiment::ExperimentError),
    /// The stored results could not be read.
    #[error(transparent)]
    Store(#[from] results::store_error::Error),
    /// The figures or the report could not be drawn.
    #[error(transparent)]
    Figures(#[from] figures::FigureError),
}

/// How to run a study.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Publication-grade repetitions (the study's full count) instead of the quick default;
    /// also the full validation grid.
    pub full: bool,
    /// Repetitions per point, overriding the quick and full counts.
    pub reps: Option<u32>,
    /// Only these experiments (all when empty).
    pub only: Vec<String>,
    /// `KEY=VALUE` overrides applied to every scenario of the study.
    pub set: Vec<String>,
}

/// The emulator's view of a study, for [`prepare`]: its pre-run check and the marker of a knob
/// it would not apply (`emu::check_supported`, `emu::NOT_APPLIED`).
#[derive(Clone, Copy)]
pub struct Emulator<'a> {
    /// The check.
    pub check: Check<'a>,
    /// The marker.
    pub not_applied: &'a str,
}

/// A study ready to run: its combined sweep and what the emulator screening left out.
#[derive(Debug)]
pub struct Prepared {
    /// The study.
    pub study: &'static Study,
    /// The experiments that run, in study order.
    pub experiments: Vec<&'static Experiment>,
    /// The combined sweep and what each point is.
    pub combined: Combined,
    /// Points left out or approximated in the emulator (empty for the simulator).
    pub screened: Screened,
    /// Name of the study's results: the study's name, `-emu` appended in the emulator.
    pub label: String,
    /// Whether the grid was screened for the emulator.
    pub emulated: bool,
}

/// A study's tables.
#[derive(Debug, Clone)]
pub struct Tables {
    /// The Markdown page: heading, tables, comparisons, warnings.
    pub markdown: String,
    /// The table as CSV.
    pub csv: String,
    /// One line per row that did not complete every run.
    pub incomplete: Vec<String>,
    /// The study's own figures (its measure per protocol), first in its report.
    pub figures: Vec<figures::Figure>,
    /// The paper's numbers beside the study's, as the report's first section (empty for a
    /// study without a `paper.toml`).
    pub paper_html: String,
    /// The study doc's explanation of its results, for the report (empty without one).
    pub explanation_html: String,
}

impl Tables {
    /// The report's first part: the paper's numbers, the validation cases (if run), the
    /// explanation.
    pub fn preface(&self, validated: Option<&Validated>) -> String {
        format!(
            "{}{}{}",
            self.paper_html,
            validated.map_or("", |v| v.html.as_str()),
            self.explanation_html
        )
    }
}

/// Combines the study's experiments (or `options.only`) into one sweep; with `emulator`, keeps
/// the points the emulator runs as specified.
pub fn prepare(
    study: &'static Study,
    options: &Options,
    emulator: Option<Emulator<'_>>,
) -> Result<Prepared, ReproduceError> {
    let experiments =
        select(study, &options.only).ok_or_else(|| ReproduceError::UnknownExperiment {
            study: study.name,
            allowed: study.experiments.iter().map(|e| e.name).collect(),
        })?;
    let reps = options
        .reps
        .or_else(|| options.full.then_some(study.full_reps));
    let mut combined = combine::combine(study, &experiments, &options.set, reps)
        .map_err(|e| ReproduceError::Scenario(e.to_string()))?;
    let screened = match emulator {
        Some(e) => screen::keep_runnable(&mut combined, e.check, e.not_applied),
        None => Screened::default(),
    };
    let label = if emulator.is_some() {
        format!("{}-emu", study.name)
    } else {
        study.name.to_string()
    };
    Ok(Prepared {
        study,
        experiments,
        combined,
        screened,
        label,
        emulated: emulator.is_some(),
    })
}

impl Prepared {
    /// The study's default results directory: `results/reproduce/<label>/`.
    pub fn default_out(&self) -> PathBuf {
        Path::new("results").join("reproduce").join(&self.label)
    }

    /// The sweep into `out`: always resumed (a re-run skips finished runs; `full` after the quick
    /// default adds repetitions), without time series (the tables do not use them).
    pub fn sweep<'a>(&'a self, out: &'a Path) -> Sweep<'a> {
        Sweep {
            loaded: &self.combined.loaded,
            out,
            resume: true,
            series: false,
        }
    }

    /// The study's own adaptive rule for this run: with `--full` (and no `--reps`), a study
    /// with [`registry::Until`] adds repetitions in batches of `full_reps` until it is met.
    pub fn full_rule(&self, options: &Options) -> Option<experiment::adaptive::Rule> {
        let until = self.study.until.as_ref()?;
        (options.full && options.reps.is_none()).then(|| experiment::adaptive::Rule {
            target: until.target,
            metrics: vec![until.metric.to_string()],
            max_reps: until.max_reps,
            batch: self.study.full_reps,
        })
    }

    /// Records how many repetitions each point ran (an adaptive run's outcome), so the tables
    /// read every run of every point.
    pub fn set_point_reps(&mut self, point_reps: Vec<u32>) {
        self.combined.loaded.point_reps = point_reps;
    }

    /// The tables of the runs stored in `out`. A run that failed is absent from the store; the
    /// table shows the others, with their count in the `runs` column, and names the rows that
    /// did not complete.
    pub fn tables(&self, out: &Path) -> Result<Tables, ReproduceError> {
        let loaded = &self.combined.loaded;
        let runs = loaded.runs();
        let stored = ResultsStore::open(out)?.load()?;
        let summary = experiment::summary::rows(loaded, &runs, &stored);
        let attempted = |p: usize| loaded.reps_of(p);
        let counts: Vec<u32> = (0..loaded.points.len()).map(attempted).collect();
        let (least, most) = (
            counts.iter().copied().min().unwrap_or(loaded.reps),
            counts.iter().copied().max().unwrap_or(loaded.reps),
        );
        let reps = if least == most {
            format!("{least} repetitions per point")
        } else {
            format!(
                "{least} to {most} repetitions per point (added in batches until the answer was \
                 clear; `stopping.csv` says why each point stopped)"
            )
        };
        let (markdown, csv, incomplete, study_figures) = if self
            .experiments
            .iter()
            .any(|e| !e.columns.is_empty())
        {
            let rows = table::metric_rows(&self.combined.info, &summary, &self.experiments);
            let md = format!(
                    "## {} — {}\n\n{}; mean and 95% Student-t CI half-width over \
                     the runs (a ratio column is the ratio of the means, without a CI); n/N = runs that \
                     measured every column / runs attempted.\n\n{}",
                    self.label,
                    self.study.title,
                    reps,
                    table::metric_markdown(&self.experiments, &rows, &attempted)
                );
            let incomplete = table::metric_incomplete(&rows, &attempted);
            let csv = table::metric_csv(&self.experiments, &rows);
            let values = experiment::summary::values(&runs, &stored);
            let figs =
                study_figures::relative_figures(&self.experiments, &self.combined.info, &values)?;
            (md, csv, incomplete, figs)
        } else {
            let rows = table::rows(&self.combined.info, &summary);
            let md = format!(
                    "## {} — {}\n\n{}; download time of the measured connection \
                     (0-RTT: the second, resumed one), mean and 95% Student-t CI half-width over the n \
                     runs that completed; n/N = runs that completed / runs attempted.\n\n{}",
                    self.label,
                    self.study.title,
                    reps,
                    table::markdown(&rows, &attempted)
                );
            let incomplete = table::incomplete(&rows, &attempted);
            let figs = study_figures::download_figures(&rows)?;
            (md, table::csv(&rows), incomplete, figs)
        };
        let values = experiment::summary::values(&runs, &stored);
        let paired = paired::markdown(&self.experiments, &self.combined.info, &values);
        let markdown = if paired.is_empty() {
            markdown
        } else {
            format!("{markdown}\n{paired}")
        };
        // Runs that did not complete are named, not silently left out of the means; what the
        // emulator left out or only approximated goes under the table.
        let notes: String = incomplete
            .iter()
            .map(|l| format!("\nWarning: {l}\n"))
            .chain(
                self.screened
                    .skipped
                    .iter()
                    .map(|l| format!("\nNot run in the emulator: {l}\n")),
            )
            .chain(
                self.screened
                    .approximated
                    .iter()
                    .map(|l| format!("\nApproximated in the emulator: {l}\n")),
            )
            .collect();
        let (markdown, paper_html) = match self.study.paper {
            None => (markdown, String::new()),
            Some(text) => {
                let file = format!("scenarios/studies/{}/paper.toml", self.study.name);
                let paper = paper::parse(text, &file).map_err(ReproduceError::Scenario)?;
                // Only the experiments that ran are compared.
                let ran: Vec<&str> = self.experiments.iter().map(|e| e.name).collect();
                let values = experiment::summary::values(&runs, &stored);
                let paired_rows: Vec<(&str, analysis::paired::PairedRow)> = self
                    .experiments
                    .iter()
                    .flat_map(|e| {
                        paired::experiment_rows(e, &self.combined.info, &values)
                            .into_iter()
                            .map(move |r| (e.name, r))
                    })
                    .collect();
                let paired_of = |v: &paper::PaperValue| -> Option<paper::Paired> {
                    let baseline = v.baseline.as_deref()?;
                    let e = self.experiments.iter().find(|e| e.name == v.experiment)?;
                    // The table's header names the metric the paired rows compare.
                    let key = if e.columns.is_empty() {
                        "completion_s"
                    } else {
                        e.columns.iter().find(|c| c.header == v.metric)?.metric
                    };
                    let (_, r) = paired_rows.iter().find(|(name, r)| {
                        *name == e.name
                            && r.variant == v.protocol
                            && r.baseline == baseline
                            && r.metric == key
                            && r.point.first().is_some_and(|(_, x)| *x == v.x)
                    })?;
                    let (low, high) = r.ratio_ci?;
                    Some(paper::Paired {
                        ratio: r.ratio?,
                        low,
                        high,
                        p: r.p_t_holm,
                    })
                };
                let rows = paper::compare(&paper, &ran, &paper::Rows::from_csv(&csv), &paired_of);
                // The comparison leads, right after the heading and what the table is.
                let section = paper::markdown(&paper, &rows);
                let at = ["\n### ", "\n| "]
                    .iter()
                    .filter_map(|m| markdown.find(m))
                    .min()
                    .map_or(markdown.len(), |i| i + 1);
                let mut md = markdown;
                md.insert_str(at, &section);
                (md, paper::html(&paper, &rows))
            }
        };
        Ok(Tables {
            markdown: markdown + &notes,
            csv,
            incomplete,
            figures: study_figures,
            paper_html,
            explanation_html: self
                .study
                .explanation
                .as_ref()
                .map(explain::Explanation::html)
                .unwrap_or_default(),
        })
    }
}

/// The study's validation cases run by [`validation`]: a Markdown section for `table.md`, an
/// HTML section for the report (a table and each point's error against its tolerance band),
/// and whether every point passed.
#[derive(Debug, Clone)]
pub struct Validated {
    /// For `table.md`.
    pub markdown: String,
    /// For `report.html`.
    pub html: String,
    /// Every point within its tolerance.
    pub passed: bool,
    /// The cases the paper draws, as it draws them ([`paper_figures`]), to be written as files.
    pub figures: Vec<figures::Figure>,
}

/// The study's validation cases (the paper's validation figures), run on the quick grid or with
/// `full` the full one; `None` when the study has none or `only` picked experiments.
pub fn validation(
    study: &Study,
    options: &Options,
    executor: &dyn Executor,
    progress: &dyn Progress,
) -> Result<Option<Validated>, ReproduceError> {
    if study.validation.is_empty() || !options.only.is_empty() {
        return Ok(None);
    }
    let grid = if options.full {
        crate::validate::Grid::Full
    } else {
        crate::validate::Grid::Quick
    };
    let cases: Vec<String> = study.validation.iter().map(|c| (*c).to_string()).collect();
    let report = crate::validate::run(grid, &cases, executor, progress)?;
    let command = format!(
        "quiclab validate{} --case {}",
        if options.full { "" } else { " --quick" },
        cases.join(" --case ")
    );
    let markdown = format!(
        "### Validation figures (`{command}`)\n\n```\n{}```\n",
        report.render()
    );
    let html = validation_html(&report, &command)?;
    Ok(Some(Validated {
        markdown,
        html,
        passed: report.passed(),
        figures: paper_figures(&report)?,
    }))
}

/// The validation cases the paper draws, drawn as it draws them (measured dots on the analytic
/// law's line), as figures `paper-<case>`: inline in the report and files beside the
/// study's other figures (the study docs embed them).
pub fn paper_figures(
    report: &crate::validate::ValidationReport,
) -> Result<Vec<figures::Figure>, ReproduceError> {
    report
        .figures
        .iter()
        .map(|f| {
            let svg = figures::chart::analytic_chart(
                &figures::chart::AnalyticChart {
                    title: f.title.clone(),
                    x_label: f.x_label.clone(),
                    y_label: f.y_label.clone(),
                    log: f.log,
                    series: f.series.clone(),
                    footnote: f.footnote.clone(),
                },
                (960, 520),
            )
            .map_err(|e| ReproduceError::Figures(figures::FigureError::from(e)))?;
            Ok(figures::Figure {
                id: format!("paper-{}", f.case),
                title: f.title.clone(),
                caption: f.footnote.clone(),
                svg,
                kind: figures::FigureKind::Study,
                missing_runs: 0,
            })
        })
        .collect()
}

/// The errors a validation point passes with: ± its tolerance, or for a one-sided check (an
/// upper bound, e.g. "at most one target": it passes below the band's lower edge) everything up
/// to its tolerance.
fn band(p: &crate::validate::PointResult) -> (f64, f64) {
    if p.pass && p.error < -p.tolerance {
        (f64::NEG_INFINITY, p.tolerance)
    } else {
        (-p.tolerance, p.tolerance)
    }
}

/// The validation points as a report section: each case's error against its tolerance band
/// (a figure), then the table of expected and measured values.
fn validation_html(
    report: &crate::validate::ValidationReport,
    command: &str,
) -> Result<String, ReproduceError> {
    use std::fmt::Write as _;
    let esc = figures::html::escape;
    let mut o = String::new();
    let passed = report.points.iter().filter(|p| p.pass).count();
    let _ = writeln!(
        o,
        "<h2 id=\"validation\">Validation against the paper's analytic cases</h2>\n<p>{} of {} points \
         within their tolerance (<code>{}</code>). Each row: the point's error (measured / expected \
         − 1; for fair shares 1 − Jain's index) as a dot, a cross when outside its tolerance, over \
         the grey band of the errors that pass (± its tolerance, or up to its bound for a \
         one-sided check). The cases the paper draws come first, drawn as it draws them: the \
         measured values as dots on the analytic law's line.</p>",
        passed,
        report.points.len(),
        esc(command)
    );
    for f in paper_figures(report)? {
        let _ = writeln!(
            o,
            "<figure class=\"figure\" data-figure=\"{}\">\n{}\n</figure>",
            esc(&f.id),
            f.svg
        );
    }
    let mut cases: Vec<&str> = Vec::new();
    for p in &report.points {
        if !cases.contains(&p.case.as_str()) {
            cases.push(&p.case);
        }
    }
    for case in cases {
        let items: Vec<figures::chart::Checked> = report
            .points
            .iter()
            .filter(|p| p.case == case)
            .map(|p| figures::chart::Checked {
                label: p.label.clone(),
                error: p.error,
                band: band(p),
                pass: p.pass,
            })
            .collect();
        let svg = figures::chart::tolerance_chart(&figures::chart::ToleranceChart {
            title: case.to_string(),
            x_label: "error against the expected value".into(),
            items,
            footnote: "grey: the errors that pass; dot: within them; cross: outside".into(),
        })
        .map_err(|e| ReproduceError::Figures(figures::FigureError::from(e)))?;
        let _ = writeln!(
            o,
            "<figure class=\"figure\" data-figure=\"validation-{}\">\n{svg}\n</figure>",
            esc(case)
        );
    }
    let _ = writeln!(
        o,
        "<div class=\"scroll\"><table><tr><th>case</th><th>point</th><th>expected</th><th>measured</th><th>error</th><th>tolerance</th><th>verdict</th></tr>"
    );
    for p in &report.points {
        let value = |v: f64| match p.unit.as_str() {
            "" => format!("{v:.4}"),
            "s" => format!("{v:.3} s"),
            u => units::si(v, u),
        };
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:+.2}%</td><td class=\"num\">{}{:.1}%</td><td class=\"{}\">{}</td></tr>",
            esc(&p.case),
            esc(&p.label),
            esc(&value(p.expected)),
            esc(&value(p.measured)),
            p.error * 100.0,
            if band(p).0.is_finite() { "±" } else { "≤ +" },
            p.tolerance * 100.0,
            if p.pass { "ok" } else { "bad" },
            if p.pass { "pass" } else { "FAIL" }
        );
    }
    let _ = writeln!(o, "</table></div>");
    Ok(o)
}

/// What [`write`] wrote beside the results.
#[derive(Debug, Clone)]
pub struct Written {
    /// `table.md`.
    pub markdown: PathBuf,
    /// `table.csv`.
    pub csv: PathBuf,
    /// The figures' directory and how many figures it holds.
    pub figures: (PathBuf, usize),
    /// `report.html`.
    pub report: PathBuf,
}

/// Writes `study`'s table (`markdown`, `csv`), its figures (`figures/*.svg`: its own
/// `study_figures` and the generic ones) and `report.html` into its results directory `out`.
pub fn write(
    study: &Study,
    out: &Path,
    markdown: &str,
    csv: &str,
    study_figures: &[figures::Figure],
    validated: Option<&Validated>,
    preface_html: &str,
) -> Result<Written, ReproduceError> {
    let md_path = out.join(TABLE_MD);
    let csv_path = out.join(TABLE_CSV);
    experiment::files::write_atomic(&md_path, markdown.as_bytes())?;
    experiment::files::write_atomic(&csv_path, csv.as_bytes())?;
    let d = figures::ResultsDir::open(out)?;
    let tradeoffs: Vec<_> = study.tradeoff.iter().map(|t| t.spec()).collect();
    let opts = figures::PlotOptions {
        tradeoffs: tradeoffs.clone(),
        ..figures::PlotOptions::default()
    };
    let mut figs = study_figures.to_vec();
    figs.extend(figures::figures(&d, &opts)?);
    // Already inline in the preface's validation section: written as files only.
    figs.extend(validated.iter().flat_map(|v| v.figures.iter().cloned()));
    let dir = out.join(results::layout::FIGURES_DIR);
    // SVG only: the report inlines it; `quiclab plot` adds PDF and PNG of any figure.
    figures::write_figures(
        &dir,
        &figs,
        &[figures::export::Format::Svg],
        figures::Replace::Kinds(&figures::FigureKind::ALL),
    )?;
    let report = figures::write_report_with(out, &tradeoffs, study_figures, preface_html)?;
    Ok(Written {
        markdown: md_path,
        csv: csv_path,
        figures: (dir, figs.len()),
        report,
    })
}

/// How [`run`] ended.
#[derive(Debug)]
pub enum Outcome {
    /// A stop was requested; the finished runs are stored and a re-run resumes.
    Interrupted,
    /// Every run was attempted; the tables (with the validation section) are written.
    Finished {
        /// The Markdown page as written to `table.md`.
        markdown: String,
        /// The CSV table as written to `table.csv`.
        csv: String,
        /// Runs that failed (absent from the tables' counts).
        failed_runs: usize,
        /// Whether the study's validation cases (if any) all passed.
        validation_passed: bool,
        /// The files written.
        written: Written,
    },
}

/// Runs a prepared study into `out` with `engine` on `executor`, then tabulates, validates
/// and writes it: the whole of `quiclab reproduce` for one study, without a terminal.
pub fn run(
    prepared: &Prepared,
    options: &Options,
    out: &Path,
    engine: &dyn Engine,
    executor: &dyn Executor,
    stop: &(dyn Fn() -> bool + Sync),
    progress: &dyn Progress,
) -> Result<Outcome, ReproduceError> {
    let sweep = prepared.sweep(out);
    let failed_runs = match experiment::run_sweep(&sweep, engine, executor, stop, progress)? {
        SweepOutcome::Interrupted { .. } => return Ok(Outcome::Interrupted),
        SweepOutcome::Finished { failures, .. } => failures.len(),
    };
    let tables = prepared.tables(out)?;
    let validated = validation(prepared.study, options, executor, progress)?;
    let preface = tables.preface(validated.as_ref());
    let (markdown, validation_passed) = match &validated {
        Some(v) => (format!("{}\n{}", tables.markdown, v.markdown), v.passed),
        None => (tables.markdown.clone(), true),
    };
    let written = write(
        prepared.study,
        out,
        &markdown,
        &tables.csv,
        &tables.figures,
        validated.as_ref(),
        &preface,
    )?;
    Ok(Outcome::Finished {
        markdown,
        csv: tables.csv,
        failed_runs,
        validation_passed,
        written,
    })
}

/// The experiments named by `only` (all when empty), in study order; `None` if a name is unknown.
pub fn select(study: &'static Study, only: &[String]) -> Option<Vec<&'static Experiment>> {
    if only
        .iter()
        .any(|o| !study.experiments.iter().any(|e| e.name == o))
    {
        return None;
    }
    Some(
        study
            .experiments
            .iter()
            .filter(|e| only.is_empty() || only.iter().any(|o| o == e.name))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_points_are_drawn_against_their_tolerance_bands_and_tabulated() {
        use crate::validate::{PointResult, ValidationReport};
        let point = |case: &str, label: &str, error: f64, pass: bool| PointResult {
            case: case.into(),
            label: label.into(),
            expected: 10e6,
            measured: 10e6 * (1.0 + error),
            error,
            tolerance: 0.05,
            pass,
            note: String::new(),
            unit: "bit/s".into(),
            drawn_at: None,
        };
        let mut points = vec![
            point("mathis", "p=1%", 0.02, true),
            point("mathis", "p=2%", -0.09, false),
            point("link-bandwidth", "10Mbit", 0.001, true),
        ];
        points[0].drawn_at = Some(crate::validate::DrawnAt::new(20.0, "p = 1%"));
        points[1].drawn_at = Some(crate::validate::DrawnAt::new(20.0, "p = 2%"));
        let figures = crate::validate::drawn::per_point_figures(&points);
        let report = ValidationReport { points, figures };
        let html = validation_html(&report, "quiclab validate --case mathis").expect("html");
        assert!(html.contains("2 of 3 points"), "{html}");
        // The paper's Fig. 4 comes first, one line per loss rate.
        let fig4 = html
            .find("data-figure=\"paper-mathis\"")
            .expect("Fig. 4 drawn");
        assert!(fig4 < html.find("data-figure=\"validation-mathis\"").unwrap());
        assert!(html.contains("p = 2%"), "{html}");
        assert!(html.contains("data-figure=\"validation-mathis\""), "{html}");
        assert!(
            html.contains("data-figure=\"validation-link-bandwidth\""),
            "{html}"
        );
        // A band per point, a cross for the failed one.
        assert!(html.contains("p=2%") && html.contains(">FAIL<"), "{html}");
        assert_eq!(html.matches("<tr><td>").count(), 3);
        // A one-sided check (at most the expected value) passing far below it shows its bound.
        let mut sparse = point("fq-codel-sparse", "probe", -0.5, true);
        sparse.tolerance = 0.0;
        assert_eq!(band(&sparse), (f64::NEG_INFINITY, 0.0));
        let html = validation_html(
            &ValidationReport {
                points: vec![sparse],
                figures: vec![],
            },
            "c",
        )
        .expect("html");
        assert!(html.contains("≤ +0.0%"), "{html}");
    }

    #[test]
    fn select_keeps_study_order_and_rejects_unknown_names() {
        let s = find("seed003").expect("registered");
        let got = select(s, &["shared".into(), "bernoulli".into()]).expect("known names");
        let names: Vec<&str> = got.iter().map(|e| e.name).collect();
        assert_eq!(names, ["bernoulli", "shared"]);
        assert_eq!(select(s, &[]).map(|v| v.len()), Some(s.experiments.len()));
        assert!(select(s, &["nope".into()]).is_none());
    }
}
