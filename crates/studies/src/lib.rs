//! quiclab's studies: fixed grids of experiments plus their tables, as library calls any front
//! end (the `quiclab` binary, the Python module) makes.
//!
//! - [`validate`]: seed 001's analytic cases run through the simulator, compared with theory,
//!   with a pass/fail verdict per point (`quiclab validate`).
//! - [`calibrate`]: the calibration matrix, every path in both engines, emu/sim ratios
//!   (`quiclab calibrate`).
//! - [`reproduce`]: the seed studies' grids, tabulated next to the papers with R² fits and
//!   comparisons between protocol variants (`quiclab reproduce`).
//! - [`bench`]: the simulator's speed on fixed downloads, as ratios that compare across
//!   machines (`quiclab bench`).
//!
//! Engines come in from the caller (`sim::SimEngine`, or `emu::EmuEngine` for the emulated
//! variants), so this crate links the simulator only.

pub mod bench;
pub mod bench_qdisc;
pub mod calibrate;
pub mod reproduce;
pub mod validate;
