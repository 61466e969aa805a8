//! `quiclab calibrate`: the calibration matrix (`studies::calibrate`) — every path of
//! `scenarios/calibration/` with QUIC (cubic), TCP (cubic) and TCP (reno), and TCP (bbr) on
//! some, in the simulator and the emulator, stored per cell (resumable), then one table of medians, 95% intervals and
//! emu/sim ratios, optionally rendered as Markdown (`docs/calibration.md`).

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use studies::calibrate::{self, EngineKind, Plan};

use crate::emu_setup;
use crate::exit::{self, Exit};
use crate::interrupt;
use crate::progress::Counter;

/// Options of `quiclab calibrate`.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Which half to run before the table is printed from what is stored (`none`: only render).
    #[arg(long, value_enum, default_value = "both")]
    engine: EngineArg,
    /// Repetitions per cell.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    reps: u32,
    /// The test suite's reduced table: two paths, small downloads, 3 repetitions (overrides
    /// `--reps`).
    #[arg(long)]
    quick: bool,
    /// Only this path (a file stem of the scenarios directory); repeatable.
    #[arg(long = "path", value_name = "NAME")]
    paths: Vec<String>,
    /// Only this variant (`quic-cubic`, `tcp-cubic`, `tcp-reno`, `tcp-bbr`) where a path has
    /// it; repeatable.
    #[arg(long = "variant", value_name = "NAME")]
    variants: Vec<String>,
    /// Results directory (one resumable results directory per engine, path and variant).
    #[arg(long, value_name = "DIR", default_value = "results/calibration")]
    out: PathBuf,
    /// Directory of the path files (default: `scenarios/calibration` of the working directory
    /// or of the repository the binary was built in).
    #[arg(long, value_name = "DIR")]
    scenarios: Option<PathBuf>,
    /// Also write the table as Markdown (e.g. `docs/calibration.md`).
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// Markdown appended to `--markdown` under "Findings" (measured mechanisms behind cells
    /// outside ±10%).
    #[arg(long, value_name = "FILE", requires = "markdown")]
    notes: Option<PathBuf>,
    /// Simulator worker threads (default: all cores).
    #[arg(long)]
    jobs: Option<usize>,
}

/// `--engine` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum EngineArg {
    Sim,
    Emu,
    Both,
    None,
}

/// Largest `--notes` file read (it is pasted into the Markdown report).
const MAX_NOTES_BYTES: u64 = 16 << 20;

/// `scenarios/calibration` here, or in the repository holding the binary (`<repo>/target/<profile>/quiclab`).
fn default_scenarios() -> PathBuf {
    let here = Path::new("scenarios/calibration");
    if here.is_dir() {
        return here.to_path_buf();
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| {
            exe.ancestors()
                .skip(1)
                .map(|d| d.join("scenarios/calibration"))
                .find(|d| d.is_dir())
        })
        .unwrap_or_else(|| here.to_path_buf())
}

/// Runs `quiclab calibrate`: exit 0 when the table was produced (whatever the ratios), 1 when
/// runs failed, 2 on bad input.
pub fn run(args: &CalibrateArgs) -> anyhow::Result<Exit> {
    let plan = Plan {
        scenarios: args.scenarios.clone().unwrap_or_else(default_scenarios),
        reps: if args.quick {
            calibrate::QUICK_REPS
        } else {
            args.reps
        },
        quick: args.quick,
        only: args.paths.clone(),
        variants: Vec::new(),
    };
    let mut plan = plan;
    for name in &args.variants {
        let Some(v) = calibrate::Variant::from_name(name) else {
            let names: Vec<&str> = calibrate::Variant::WITH_BBR
                .iter()
                .map(|v| v.name())
                .collect();
            eprintln!(
                "error: unknown variant {name:?}; allowed: {}",
                names.join(", ")
            );
            return Ok(exit::BAD_INPUT);
        };
        plan.variants.push(v);
    }
    let emu_check = |s: &scenario::model::Scenario| {
        emu::check_supported(s)
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    let emulator = matches!(args.engine, EngineArg::Emu | EngineArg::Both)
        .then_some(&emu_check as calibrate::EmulatorCheck<'_>);
    if let Err(e) = plan.check(emulator) {
        eprintln!("error: {e}");
        return Ok(exit::BAD_INPUT);
    }
    let command = std::iter::once("quiclab".to_string())
        .chain(std::env::args().skip(1))
        .collect::<Vec<_>>()
        .join(" ");
    let hint = |e: calibrate::CalibrateError| -> anyhow::Error {
        match &e {
            calibrate::CalibrateError::Experiment { dir, .. } => anyhow::anyhow!(
                "{e}\n(a cell stored with another scenario cannot be resumed: remove {} to run that half again)",
                dir.parent().and_then(Path::parent).unwrap_or(dir).display()
            ),
            _ => e.into(),
        }
    };
    let mut failures = Vec::new();
    if matches!(args.engine, EngineArg::Sim | EngineArg::Both) {
        if let Some(j) = args.jobs {
            anyhow::ensure!(j >= 1, "--jobs must be at least 1");
        }
        interrupt::install()?;
        let half = calibrate::run_half(
            &plan,
            &args.out,
            EngineKind::Sim,
            &sim::SimEngine::default(),
            &experiment::Threads::new(args.jobs),
            &emu_setup::stop_requested,
            &Counter::new("calibrate sim"),
            &command,
        )
        .map_err(hint)?;
        failures.extend(half.failures);
    }
    if matches!(args.engine, EngineArg::Emu | EngineArg::Both) {
        anyhow::ensure!(
            crate::root::is_root(),
            "the emulator half needs root (network namespaces); run the simulator half with --engine sim"
        );
        emu_setup::clean_up_leftovers(true)?;
        emu_setup::install_stop_handlers()?;
        let engine = emu_setup::engine(emu_setup::Traces::default(), emu::WaitMode::Sleep)?;
        let half = calibrate::run_half(
            &plan,
            &args.out,
            EngineKind::Emu,
            &engine,
            &experiment::Sequential,
            &emu_setup::stop_requested,
            &Counter::new("calibrate emu"),
            &command,
        )
        .map_err(hint)?;
        failures.extend(half.failures);
    }
    let rows = calibrate::table(&plan, &args.out)?;
    print!("{}", calibrate::render_text(&rows));
    if let Some(path) = &args.markdown {
        let notes = match &args.notes {
            Some(f) => Some(
                fsutil::read_input_to_string_bounded(f, MAX_NOTES_BYTES)
                    .with_context(|| format!("reading {}", f.display()))?,
            ),
            None => None,
        };
        let md = calibrate::render_markdown(&plan, &rows, &args.out, notes.as_deref());
        fsutil::write_atomic(path, md.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    for f in &failures {
        eprintln!("failed: {f}");
    }
    Ok(if failures.is_empty() {
        exit::SUCCESS
    } else {
        exit::FAILURE
    })
}
