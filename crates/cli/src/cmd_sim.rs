//! `quiclab sim`: load a scenario, then run it once (printing a summary) or as a sweep.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;

use crate::exit::{self, Exit};
use crate::{interrupt, output, sweep};

/// Options of `quiclab sim`.
#[derive(Debug, Clone, Args)]
pub struct SimArgs {
    /// Scenario file (TOML).
    pub scenario: PathBuf,
    /// `--set`, `--vary`, `--reps`, `--seed`.
    #[command(flatten)]
    pub knobs: ScenarioKnobs,
    /// Results directory (default for a sweep: `results/<scenario name>/`).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Parallel runs (default: all cores).
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
    /// Skip runs already complete in DIR/results.jsonl.
    #[arg(long)]
    pub resume: bool,
    /// Machine-readable output on stdout: the run's JSON, or the summary rows of a sweep.
    #[arg(long)]
    pub json: bool,
    /// Write the bottleneck's packets to this pcap (run id inserted before the extension when
    /// there are several runs).
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// Write one qlog per connection and side (`<flow>-<client|server>-<n>.sqlog`, JSON-SEQ)
    /// into this directory (DIR/<run id>/ with several runs).
    #[arg(long, value_name = "DIR")]
    pub qlog: Option<PathBuf>,
    /// Do not record time series (DIR/series/<id>.csv).
    #[arg(long)]
    pub no_series: bool,
    /// Run only shard INDEX of COUNT (0-based; run k of the sweep belongs to shard k mod
    /// COUNT) into --out, which records the shard in shard.json; `quiclab merge` joins the
    /// shards' directories (Slurm arrays, Kubernetes indexed Jobs: see examples/cluster/).
    #[arg(long, value_name = "INDEX/COUNT", requires = "out")]
    pub shard: Option<experiment::Shard>,
    /// Exit 0 even if some runs failed (a run without a result, or a flow that reported an
    /// error); they are still listed.
    #[arg(long)]
    pub allow_failures: bool,
    /// Load the scenario, print its warnings and flows, and run nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Repetitions until the answer is clear.
    #[command(flatten)]
    pub adaptive: crate::adaptive_args::AdaptiveArgs,
}

/// The options that change what a scenario file resolves to; shared by `sim` and `emu`.
#[derive(Debug, Clone, Default, Args)]
pub struct ScenarioKnobs {
    /// Override a scenario key, e.g. `--set link.rate=5Mbit` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Add a sweep axis, e.g. `--vary link.loss=0%,1%,2%` (repeatable; axes multiply).
    #[arg(long = "vary", visible_alias = "sweep", value_name = "KEY=V1,V2,...")]
    pub vary: Vec<String>,
    /// Repetitions per sweep point (overrides `run.reps`).
    #[arg(long)]
    pub reps: Option<u32>,
    /// Base seed (overrides `run.seed`; in `emu` it seeds the link models).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Run only these `[[variant]]`s of the scenario, e.g. `--variant quic-0rtt,tcp-tls1.3`
    /// (repeatable; default: every variant).
    #[arg(long = "variant", value_name = "NAME,...")]
    pub variant: Vec<String>,
}

impl ScenarioKnobs {
    /// `--set` plus the overrides that `--reps` and `--seed` stand for, in command-line order
    /// semantics: the dedicated flags win over a `--set` of the same key because they come last.
    pub fn overrides(&self) -> Vec<String> {
        let mut o = self.set.clone();
        if let Some(r) = self.reps {
            o.push(format!("run.reps={r}"));
        }
        if let Some(s) = self.seed {
            o.push(format!("run.seed={s}"));
        }
        o
    }

    /// Loads `file` with these overrides and sweep axes; the scenario's warnings (a bare
    /// probability ≥ 0.05 …) go to stderr, naming the flag the user typed, then one line per
    /// flow saying what it does (each distinct line once over the sweep).
    pub fn load(
        &self,
        file: &std::path::Path,
    ) -> Result<scenario::LoadedScenario, scenario::ScenarioError> {
        let inputs = scenario::Inputs {
            overrides: self.overrides(),
            axes: self.vary.clone(),
            variants: self.variant.clone(),
            defined_variants: Vec::new(),
        };
        let mut loaded = scenario::load_with(file, &inputs).map_err(|mut e| {
            e.file = self.flag_typed(&e.file);
            e
        })?;
        for w in &mut loaded.warnings {
            if let Some(at) = w.strip_prefix("--").and_then(|r| r.split_once(": ")) {
                *w = format!("{}: {}", self.flag_typed(&format!("--{}", at.0)), at.1);
            }
            eprintln!("warning: {w}");
        }
        for line in loaded.describe_flows() {
            eprintln!("{line}");
        }
        Ok(loaded)
    }

    /// The flag an error's command-line argument came from, as the user typed it: `--reps N` /
    /// `--seed N` rather than the `--set run.reps=N` they stand for, and `--sweep` when the user
    /// typed that alias of `--vary`.
    fn flag_typed(&self, arg: &str) -> String {
        for (flag, key, v) in [
            ("--reps", "run.reps", self.reps.map(u64::from)),
            ("--seed", "run.seed", self.seed),
        ] {
            if let Some(v) = v {
                let set = format!("{key}={v}");
                if arg == format!("--set {set}") && !self.set.contains(&set) {
                    return format!("{flag} {v}");
                }
            }
        }
        if let Some(rest) = arg.strip_prefix("--vary ") {
            let alias = std::env::args().any(|a| a == "--sweep" || a.starts_with("--sweep="));
            if alias {
                return format!("--sweep {rest}");
            }
        }
        arg.to_string()
    }
}

/// Runs `quiclab sim`.
pub fn run(args: &SimArgs) -> anyhow::Result<Exit> {
    let loaded = match args.knobs.load(&args.scenario) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(exit::BAD_INPUT);
        }
    };
    let rule = match args.adaptive.rule(&loaded) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(exit::BAD_INPUT);
        }
    };
    if rule.is_some() && args.shard.is_some() {
        eprintln!("error: --until-ci and --until-resolved decide each round from every run, so they cannot run as --shard");
        return Ok(exit::BAD_INPUT);
    }
    if args.dry_run {
        return Ok(exit::SUCCESS);
    }
    let engine = sim::SimEngine {
        pcap: args.pcap.clone(),
        qlog: args.qlog.clone(),
    };
    let runs = loaded.runs();
    if runs.len() == 1 && args.out.is_none() && args.shard.is_none() && rule.is_none() {
        return single(args, &engine, &loaded, &runs[0]);
    }
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| Path::new("results").join(&loaded.name));
    let sweep = experiment::Sweep {
        loaded: &loaded,
        out: &out,
        resume: args.resume,
        series: !args.no_series,
    };
    let threads = experiment::Threads::new(args.jobs.map(usize::from));
    if let Some(rule) = &rule {
        let (code, _) = sweep::run_adaptive(
            &sweep,
            rule,
            &engine,
            &threads,
            interrupt::requested,
            args.json,
            sweep::OnFailure::from_flag(args.allow_failures),
        )?;
        return Ok(code);
    }
    sweep::run_shard(
        &sweep,
        args.shard,
        &engine,
        &threads,
        interrupt::requested,
        args.json,
        sweep::OnFailure::from_flag(args.allow_failures),
    )
}

/// One run without a results directory: the summary (or JSON) goes to stdout.
fn single(
    args: &SimArgs,
    engine: &sim::SimEngine,
    loaded: &scenario::LoadedScenario,
    spec: &scenario::model::RunSpec,
) -> anyhow::Result<Exit> {
    let point = loaded
        .points
        .get(spec.point)
        .with_context(|| format!("run {} refers to a missing sweep point", spec.id))?;
    // Nothing would store the series of a lone run, so do not pay for recording them.
    let outputs = experiment::RunOutputs::default();
    match experiment::execute_one(engine, point, spec, &outputs) {
        Ok(result) => {
            if args.json {
                println!("{}", serde_json::to_string(&result)?);
            } else {
                print!(
                    "{}",
                    output::run_summary(&result, &output::Window::of(&point.scenario))
                );
            }
            // A flow that failed (a connection lost, a handshake refused) is in the result,
            // but the run did not do what the scenario asked: say so in the exit status.
            let failed: Vec<&str> = result
                .flows
                .iter()
                .filter(|f| f.error.is_some())
                .map(|f| f.name.as_str())
                .collect();
            if failed.is_empty() {
                Ok(exit::SUCCESS)
            } else if args.allow_failures {
                eprintln!(
                    "warning: run {} failed: flow {} reported an error; exit status 0 (--allow-failures)",
                    spec.id,
                    failed.join(", ")
                );
                Ok(exit::SUCCESS)
            } else {
                eprintln!(
                    "error: run {} failed: flow {} reported an error",
                    spec.id,
                    failed.join(", ")
                );
                Ok(exit::FAILURE)
            }
        }
        Err(e) => {
            eprintln!(
                "error: run {} failed: {}",
                spec.id,
                experiment::error::chain(&e)
            );
            Ok(if args.allow_failures {
                exit::SUCCESS
            } else {
                exit::FAILURE
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario() -> tempfile_path::Path {
        tempfile_path::write("[run]\nduration = \"1s\"\n")
    }

    /// A scenario file in a private temporary directory, removed on drop.
    mod tempfile_path {
        pub struct Path(std::path::PathBuf, std::path::PathBuf);
        impl Path {
            pub fn get(&self) -> &std::path::Path {
                &self.1
            }
        }
        impl Drop for Path {
            fn drop(&mut self) {
                let _ = std::fs::remove_file(&self.1);
                let _ = std::fs::remove_dir(&self.0);
            }
        }
        pub fn write(text: &str) -> Path {
            use std::sync::atomic::{AtomicU32, Ordering};
            static N: AtomicU32 = AtomicU32::new(0);
            let dir = std::env::temp_dir().join(format!(
                "quiclab-cmd-sim-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir(&dir).expect("private temp dir");
            let file = dir.join("s.toml");
            std::fs::write(&file, text).expect("write scenario");
            Path(dir, file)
        }
    }

    #[test]
    fn errors_name_the_flag_the_user_typed() {
        // Regression: an error about --vary called it --sweep, one about --reps 0 named a
        // `--set run.reps=0` the user never typed.
        let s = scenario();
        let knobs = ScenarioKnobs {
            reps: Some(0),
            ..ScenarioKnobs::default()
        };
        let e = knobs.load(s.get()).unwrap_err().to_string();
        assert!(e.starts_with("--reps 0: "), "{e}");
        let knobs = ScenarioKnobs {
            seed: Some(1),
            reps: Some(300_000),
            ..ScenarioKnobs::default()
        };
        let e = knobs.load(s.get()).unwrap_err().to_string();
        assert!(e.starts_with("--reps 300000: "), "{e}");
        // A --set the user did type keeps its name.
        let knobs = ScenarioKnobs {
            set: vec!["run.reps=0".into()],
            ..ScenarioKnobs::default()
        };
        let e = knobs.load(s.get()).unwrap_err().to_string();
        assert!(e.starts_with("--set run.reps=0: "), "{e}");
        let knobs = ScenarioKnobs {
            vary: vec!["link.bogus=1,2".into()],
            ..ScenarioKnobs::default()
        };
        let e = knobs.load(s.get()).unwrap_err().to_string();
        assert!(e.starts_with("--vary link.bogus=1,2: "), "{e}");
    }
}
