//! Resource limits of scenario input: every one bounds what a hostile or mistaken file can make
//! quiclab read, hold or compute, and each is named in the error that enforces it (and in
//! `docs/limits.md`).

use std::time::Duration;

/// Largest scenario file read, in bytes. Real scenarios are a few kB; the largest legitimate
/// input is a long inline axis or rate schedule (a 100,000-step schedule is about 4 MB).
pub const MAX_SCENARIO_BYTES: u64 = 16 * 1024 * 1024;

/// Largest rate trace file read (`rate_trace`, `mahimahi_trace`), in bytes (a million
/// `seconds,rate` lines are about 25 MB; a minute of a 100 Mbit/s Mahimahi trace, 500,000
/// lines, about 3.5 MB).
pub const MAX_TRACE_BYTES: u64 = 64 * 1024 * 1024;

/// Most steps in one rate schedule or rate trace (a Mahimahi trace's after merging). The steps are held in memory by every sweep
/// point (24 bytes each), so a million steps already cost 24 MB per point.
pub const MAX_RATE_STEPS: usize = 1_000_000;

/// Most flows in one scenario, all `[[flow]]` tables' `count`s added up (each table alone
/// allows 10,000 copies). Every flow is simulated and sampled, and each holds its state, links
/// and queues in memory: 100 tables of 10,000 copies ran for minutes and took gigabytes before
/// the first run began.
pub const MAX_FLOWS: u64 = 10_000;

/// Most `[[probe]]` tables in one scenario: the emulator runs two threads and two UDP sockets
/// per probe, on ports counted up from 7000.
pub const MAX_PROBES: usize = 100;

/// Most time-series samples in one run (`run.duration / run.sample_interval`): each sample is an
/// event of the simulator and, with series recorded, one row per flow held in memory (about
/// 130 B) and written to `series/<id>.csv`. 100,000 samples is an hour at 36 ms.
pub const MAX_SAMPLES_PER_RUN: u64 = 100_000;

/// Most time-series rows in one run: samples × flows (about 130 MB of rows in memory at the
/// limit, per run in flight).
pub const MAX_SERIES_ROWS_PER_RUN: u64 = 1_000_000;

/// Time-series samples of a run: one every `interval` until `duration` (the engines sample at
/// `interval`, `2 × interval`, … up to the end).
pub fn samples_per_run(duration: Duration, interval: Duration) -> u64 {
    match interval.as_nanos() {
        0 => 0,
        i => u64::try_from(duration.as_nanos() / i).unwrap_or(u64::MAX),
    }
}
