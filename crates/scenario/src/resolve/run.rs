//! `[run]`: duration, seed, repetitions and the measurement window.

use std::time::Duration;

use crate::error::{At, Errors, ScenarioError};
use crate::limits::{samples_per_run, MAX_SAMPLES_PER_RUN};
use crate::names::{check_default_name, check_key_name};
use crate::read::Reader;
use crate::tree::Table;

/// The resolved `[run]` section.
#[derive(Debug, Clone)]
pub(crate) struct RunSection {
    pub name: String,
    pub duration: Duration,
    pub seed: u64,
    pub reps: u32,
    pub sample_interval: Duration,
    pub measure_from: Duration,
    pub measure_until: Option<Duration>,
}

/// Resolves `[run]` (`None` = absent, all defaults).
pub(crate) fn run(
    table: Option<(&Table, &At)>,
    default_name: &str,
    errors: &Errors,
) -> Result<RunSection, ScenarioError> {
    let empty = Table::default();
    let start = At::File { line: 1, column: 1 };
    let (t, at) = table.unwrap_or((&empty, &start));
    let r = Reader::new(t, at, "run", "run", errors)?;
    let value_at = |key: &str| r.value_at(key);
    let duration = r.duration("duration")?.unwrap_or_default();
    let sample_interval = r.duration("sample_interval")?.unwrap_or_default();
    for (key, d) in [("duration", duration), ("sample_interval", sample_interval)] {
        if d.is_zero() {
            return Err(errors.at(
                &value_at(key),
                format!("run.{key} must be greater than zero"),
            ));
        }
    }
    let samples = samples_per_run(duration, sample_interval);
    if samples > MAX_SAMPLES_PER_RUN {
        let floor = Duration::from_nanos(
            u64::try_from(
                duration
                    .as_nanos()
                    .div_ceil(u128::from(MAX_SAMPLES_PER_RUN)),
            )
            .unwrap_or(u64::MAX),
        );
        return Err(errors.at(
            &value_at("sample_interval"),
            format!(
                "run.sample_interval = {sample_interval:?} gives {samples} samples in run.duration = {duration:?}; \
                 at most {MAX_SAMPLES_PER_RUN} samples per run: use a sample_interval of at least {floor:?}"
            ),
        ));
    }
    let measure_from = r.duration("measure_from")?.unwrap_or_default();
    let measure_until = r.duration("measure_until")?;
    if measure_from >= duration {
        return Err(errors.at(
            &value_at("measure_from"),
            "run.measure_from must be before the end of the run",
        ));
    }
    if measure_until.is_some_and(|u| u <= measure_from) {
        return Err(errors.at(
            &value_at("measure_until"),
            "run.measure_until must be after run.measure_from",
        ));
    }
    // A sweep holds at most MAX_RUNS runs, so more repetitions than that can never run.
    let reps = r.uint_in("reps", 1, crate::sweep::MAX_RUNS)?.unwrap_or(1);
    // The name becomes the default results directory `results/<name>/`.
    let name = match r.string("name")? {
        Some(name) => {
            check_key_name(&name, "run.name", &value_at("name"), errors)?;
            name
        }
        None => {
            check_default_name(default_name, errors)?;
            default_name.to_string()
        }
    };
    Ok(RunSection {
        name,
        duration,
        seed: r.uint("seed")?.unwrap_or(1),
        reps: u32::try_from(reps).unwrap_or(u32::MAX),
        sample_interval,
        measure_from,
        measure_until,
    })
}
