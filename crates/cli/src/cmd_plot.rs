//! `quiclab plot`: figures of a results directory (sweep curves with 95% CIs, completion CDFs,
//! representative runs' time series) as SVG, PDF and PNG into `DIR/figures/`, or one file.

use std::path::PathBuf;

use anyhow::bail;
use clap::{Args, ValueEnum};

use crate::exit::{self, Exit};

/// Points whose representative run gets a time-series figure by default.
const SERIES_POINTS: usize = 6;

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlotFormat {
    /// Scalable vector graphics (text stays text; opens in any browser).
    Svg,
    /// PDF, vector, fonts embedded (for LaTeX).
    Pdf,
    /// PNG at 300 dpi (slides, documents without vector graphics).
    Png,
}

impl PlotFormat {
    fn export(self) -> figures::export::Format {
        match self {
            PlotFormat::Svg => figures::export::Format::Svg,
            PlotFormat::Pdf => figures::export::Format::Pdf,
            PlotFormat::Png => figures::export::Format::Png,
        }
    }
}

/// Figure sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlotSize {
    /// 960 px wide, the legend beside the plot, a title and a footnote (the report's figures).
    Screen,
    /// One column of a two-column paper: 3.5 × 2.6 in, text at least 8 pt, legend above.
    OneColumn,
    /// Across both columns: 7 × 3 in, text at least 8 pt, legend above.
    TwoColumn,
}

impl From<PlotSize> for figures::FigureSize {
    fn from(size: PlotSize) -> Self {
        match size {
            PlotSize::Screen => figures::FigureSize::Screen,
            PlotSize::OneColumn => figures::FigureSize::OneColumn,
            PlotSize::TwoColumn => figures::FigureSize::TwoColumn,
        }
    }
}

/// Options of `quiclab plot`.
#[derive(Debug, Clone, Args)]
pub struct PlotArgs {
    /// Results directory (written by `quiclab sim`, `emu` or `reproduce`).
    pub dir: PathBuf,
    /// Metric path or pattern to plot (repeatable), e.g. `flows.0.goodput_bps` or
    /// `flows.*.completion_s` [default: goodput, window goodput, completion, first byte,
    /// handshake, losses per flow, bottleneck utilisation, and any fairness/share metric].
    #[arg(long = "metric", value_name = "M")]
    pub metrics: Vec<String>,
    /// Sweep axis on the x axis (repeatable) [default: every axis with two or more values].
    #[arg(long = "x", value_name = "AXIS")]
    pub x: Vec<String>,
    /// Run whose time series to draw (repeatable) [default: a representative run of up to six
    /// points spread over the sweep].
    #[arg(long = "run", value_name = "ID")]
    pub runs: Vec<String>,
    /// Throughput against delay as Pantheon draws it (repeatable): `DELAY_METRIC:FLOW`, each
    /// sweep point at its mean delay and the summed window goodput of FLOW and its copies, with
    /// the mean's 95% confidence ellipse; e.g. `probes.0.rtt.p95_s:down`.
    #[arg(long = "tradeoff", value_name = "METRIC:FLOW", value_parser = figures::tradeoff::TradeoffSpec::parse)]
    pub tradeoffs: Vec<figures::tradeoff::TradeoffSpec>,
    /// Size of every figure; print sizes leave the title and footnote to the paper's caption
    /// (a time series gets about an inch per panel).
    #[arg(long, value_enum, default_value_t = PlotSize::Screen)]
    pub size: PlotSize,
    /// Output formats (repeatable or comma-separated) [default: svg, pdf and png].
    #[arg(long, value_enum, value_delimiter = ',')]
    pub format: Vec<PlotFormat>,
    /// Output: a directory for the figures [default: DIR/figures], or one `.svg`, `.pdf` or
    /// `.png` file (its extension picks the format) when the options select exactly one figure.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// Runs `quiclab plot`.
pub fn run(args: &PlotArgs) -> anyhow::Result<Exit> {
    let d = figures::ResultsDir::open(&args.dir)?;
    let opts = figures::PlotOptions {
        metrics: args.metrics.clone(),
        x: args.x.clone(),
        runs: args.runs.clone(),
        max_series_points: SERIES_POINTS,
        tradeoffs: args.tradeoffs.clone(),
        size: args.size.into(),
    };
    let figs = match figures::figures(&d, &opts) {
        Ok(f) => f,
        Err(e @ figures::FigureError::Unknown { .. }) => {
            eprintln!("error: {e}");
            return Ok(exit::BAD_INPUT);
        }
        Err(e) => return Err(e.into()),
    };
    if figs.is_empty() {
        eprintln!(
            "{}: nothing to plot (no sweep axis with two values, no completion times, no series)",
            args.dir.display()
        );
        return Ok(exit::SUCCESS);
    }
    let formats: Vec<figures::export::Format> = if args.format.is_empty() {
        figures::export::Format::ALL.to_vec()
    } else {
        args.format.iter().map(|f| f.export()).collect()
    };
    let single = args.out.as_ref().and_then(|file| {
        let ext = file.extension()?.to_str()?;
        figures::export::Format::of_extension(ext).map(|f| (file, f))
    });
    match (single, &args.out) {
        (Some((file, format)), _) => {
            if figs.len() != 1 {
                let ids: Vec<&str> = figs.iter().map(|f| f.id.as_str()).collect();
                bail!(
                    "--out {} names one file but the options select {} figures ({}); narrow them \
                     with --metric, --x and --run, or pass a directory",
                    file.display(),
                    figs.len(),
                    ids.join(", ")
                );
            }
            let bytes = figures::export::convert(&figs[0].svg, format)?;
            figures::write_file(file, &bytes)?;
            println!("{}", file.display());
        }
        (None, out) => {
            let dir = out
                .clone()
                .unwrap_or_else(|| args.dir.join(results::layout::FIGURES_DIR));
            // Asking for particular figures adds them; the default set replaces what `plot`
            // drew before (not a study's own figures, which `reproduce` draws).
            let narrowed = !(args.metrics.is_empty()
                && args.x.is_empty()
                && args.runs.is_empty()
                && args.tradeoffs.is_empty());
            let plot_kinds = [
                figures::FigureKind::Declared,
                figures::FigureKind::Sweep,
                figures::FigureKind::Cdf,
                figures::FigureKind::Series,
                figures::FigureKind::Tradeoff,
            ];
            let replace = if narrowed {
                figures::Replace::Nothing
            } else {
                figures::Replace::Kinds(&plot_kinds)
            };
            for p in figures::write_figures(&dir, &figs, &formats, replace)? {
                println!("{}", p.display());
            }
            eprintln!("{} figure(s) in {}", figs.len(), dir.display());
        }
    }
    Ok(exit::SUCCESS)
}
