//! Real-time emulator: namespaces, userspace forwarder with the `netem` link model, real endpoints.
//!
//! [`Topology`] builds per-run client, server and router namespaces joined by veth pairs; the
//! router runs the [`forwarder`], which applies the same [`netem::Link`] as the simulator to
//! every frame. [`cleanup_stale`] removes what a killed run left behind.

pub mod bench;
pub mod cleanup;
pub mod clock;
pub mod cross;
pub mod error;
pub mod forwarder;
pub mod frame;
pub mod lateness;
pub mod mapping;
pub mod netns;
pub mod offload;
pub mod packet_socket;
pub mod probe;
pub mod results;
pub mod runner;
pub mod signals;
pub mod topology;

pub use cleanup::{cleanup_stale, CleanupReport};
pub use error::EmuError;
pub use forwarder::{ForwarderReport, WaitMode};
pub use topology::{ChildHandle, Topology, TopologySpec};
