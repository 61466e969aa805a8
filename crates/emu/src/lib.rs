//! Real-time emulator: namespaces, userspace forwarder with the `netem` link model, real endpoints.
//!
//! A [`Topology`] builds per-run client, server and router namespaces joined by veth pairs; the
//! router runs a userspace forwarder that applies the same [`netem::Link`] as the simulator to
//! every frame (parsed with [`netem::wire`], captured with [`netem::pcap`]). Real endpoints
//! (`quiclab serve` / `quiclab get`) run in the namespaces; cross traffic follows
//! [`netem::cross`]'s schedules.
//!
//! # Public API
//!
//! Everything else is internal (`pub(crate)`); this is what the CLI and the `interop` crate use:
//!
//! - **One run** — [`runner::run`] executes one repetition of a scenario with [`runner::RunOptions`]
//!   and returns a [`runner::EmuRun`]; [`check_supported`] says beforehand which scenario
//!   features the emulator cannot reproduce (and which it approximates).
//! - **Benchmark** — [`bench::run`] with [`bench::BenchOptions`] measures fidelity and speed
//!   (`quiclab bench emu`), returning [`bench::EmuBench`].
//! - **Topologies for other drivers** — [`Topology::create`] from a [`TopologySpec`] (for a
//!   scenario's path: [`path::topology_spec`]), its namespaces and addresses,
//!   [`Topology::spawn`] returning a [`ChildHandle`], [`Topology::run_in`] (a closure on a
//!   thread inside one of its namespaces: the load tester's client side), and the
//!   forwarder's counters ([`ForwarderReport`], with [`Lateness`]); the interop matrix runs
//!   third-party peers this way.
//! - **Hygiene** — [`cleanup_stale`] (a [`CleanupReport`]) removes what killed runs left
//!   behind (namespaces, lone runs' private log directories, lock files: only what a dead
//!   run's lock record proves quiclab's), [`stale_namespaces`] and [`stale_log_dirs`] list it; [`install_term_handler`] / [`term_requested`] turn
//!   SIGTERM into a clean stop.
//! - **PEP** — a flow with `flow.pep` runs through a split-TCP proxy in a namespace of its
//!   own (`ql<run>-p<flow>`, see the `pep` module); [`runner::EmuRun::peps`] holds each PEP's
//!   effective settings and relayed connections ([`PepOutcome`]).
//! - **Engine** — [`EmuEngine`], the emulator behind the runner's `engine::Engine` trait.
//! - [`WaitMode`] (how the forwarder waits) and [`EmuError`].

pub mod bench;
mod cleanup;
mod clock;
mod collect;
mod cross;
mod emu_engine;
mod error;
mod forwarder;
mod frame;
mod kernel_tcp;
mod lateness;
mod mapping;
mod netns;
mod offload;
mod packet_socket;
pub mod path;
mod pep;
mod probes;
pub mod runner;
mod signals;
mod topology;
mod udp;

#[cfg(test)]
mod namespace_tests;

pub use cleanup::{cleanup_stale, stale_log_dirs, stale_namespaces, CleanupReport};
pub use emu_engine::EmuEngine;
pub use error::EmuError;
pub use forwarder::{AccessStats, ForwarderReport, WaitMode};
pub use lateness::Lateness;
pub use mapping::{check_supported, NOT_APPLIED};
pub use pep::PepOutcome;
pub use signals::{install_term_handler, term_requested};
pub use topology::{ChildHandle, Topology, TopologySpec};
