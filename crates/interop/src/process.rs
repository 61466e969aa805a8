//! Where a pair's processes run: directly on this host (loopback) or inside the emulator's
//! client and server namespaces. Each process leads its own process group so that helpers it
//! starts (Chromium's renderer and GPU processes) are stopped with it.

use std::net::{IpAddr, Ipv4Addr};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use emu::{ChildHandle, Topology};

/// The two ends of a pair: where the server and the client run, and the server's address.
pub trait Netspace {
    /// The address the server listens on and the client connects to.
    fn server_addr(&self) -> IpAddr;
    /// Starts the server process.
    fn spawn_server(&self, cmd: &mut Command) -> std::io::Result<Proc>;
    /// Starts the client process.
    fn spawn_client(&self, cmd: &mut Command) -> std::io::Result<Proc>;
    /// Short description for logs ("loopback", "emulator ql1a2b3c").
    fn describe(&self) -> String;
}

/// Both ends on this host, server on 127.0.0.1.
#[derive(Debug, Clone, Copy, Default)]
pub struct Loopback;

impl Netspace for Loopback {
    fn server_addr(&self) -> IpAddr {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    }

    fn spawn_server(&self, cmd: &mut Command) -> std::io::Result<Proc> {
        cmd.process_group(0).spawn().map(Proc::Local)
    }

    fn spawn_client(&self, cmd: &mut Command) -> std::io::Result<Proc> {
        cmd.process_group(0).spawn().map(Proc::Local)
    }

    fn describe(&self) -> String {
        "loopback".into()
    }
}

/// Client `client` and server `server` of an emulated topology.
#[derive(Debug, Clone, Copy)]
pub struct Emulated<'a> {
    /// The live topology.
    pub topology: &'a Topology,
    /// Client index.
    pub client: usize,
    /// Server index.
    pub server: usize,
}

impl Netspace for Emulated<'_> {
    fn server_addr(&self) -> IpAddr {
        IpAddr::V4(self.topology.server_addr(self.server))
    }

    fn spawn_server(&self, cmd: &mut Command) -> std::io::Result<Proc> {
        let ns = self.topology.server_ns(self.server);
        self.topology
            .spawn(ns, cmd.process_group(0))
            .map(Proc::Emu)
            .map_err(std::io::Error::other)
    }

    fn spawn_client(&self, cmd: &mut Command) -> std::io::Result<Proc> {
        let ns = self.topology.client_ns(self.client);
        self.topology
            .spawn(ns, cmd.process_group(0))
            .map(Proc::Emu)
            .map_err(std::io::Error::other)
    }

    fn describe(&self) -> String {
        format!("emulator run {}", self.topology.run_id())
    }
}

/// A started process (and its process group).
#[derive(Debug)]
pub enum Proc {
    /// Spawned directly.
    Local(Child),
    /// Spawned in a namespace by the topology (which also kills it at teardown).
    Emu(ChildHandle),
}

impl Proc {
    /// Process id (also its process group id).
    pub fn pid(&self) -> u32 {
        match self {
            Proc::Local(c) => c.id(),
            Proc::Emu(h) => h.pid(),
        }
    }

    /// Exit status, if it has exited (an error to wait counts as exited, status unknown).
    pub fn try_wait(&mut self) -> Option<Option<ExitStatus>> {
        match self {
            Proc::Local(c) => match c.try_wait() {
                Ok(Some(s)) => Some(Some(s)),
                Ok(None) => None,
                Err(_) => Some(None),
            },
            Proc::Emu(h) => match h.try_wait() {
                Ok(Some(s)) => Some(Some(s)),
                Ok(None) => None,
                Err(_) => Some(None),
            },
        }
    }

    /// Waits up to `timeout`; `None` if still running.
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<Option<ExitStatus>> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(s) = self.try_wait() {
                return Some(s);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// SIGTERM to the process group, SIGKILL after `grace`; reaps the leader.
    pub fn stop(&mut self, grace: Duration) -> Option<ExitStatus> {
        if let Some(s) = self.try_wait() {
            // The leader is gone, but helpers in its group may linger.
            self.signal_group(libc::SIGKILL);
            return s;
        }
        self.signal_group(libc::SIGTERM);
        let status = match self.wait_timeout(grace) {
            Some(s) => s,
            None => {
                self.signal_group(libc::SIGKILL);
                self.wait_timeout(Duration::from_secs(2)).flatten()
            }
        };
        self.signal_group(libc::SIGKILL);
        status
    }

    fn signal_group(&self, signal: i32) {
        let Ok(pgid) = i32::try_from(self.pid()) else {
            return;
        };
        // SAFETY: kill(2) with a negative pid signals the group this process leads (we made it
        // with process_group(0)); it cannot touch unrelated processes.
        unsafe { libc::kill(-pgid, signal) };
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if self.try_wait().is_none() {
            self.stop(Duration::from_millis(500));
        }
    }
}
