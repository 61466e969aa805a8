//! A per-run set of namespaces: one per client, one per server, and a router running the
//! forwarder, joined by veth pairs. Built step by step; any failure tears down what exists.
//!
//! Addressing (a fixed contract with the other tools): one subnet 10.99.0.0/16, client `i` has
//! 10.99.1.(i+1), server `j` 10.99.2.(j+1), each on `eth0` of its namespace. Namespaces are
//! `ql<run>-c<i>`, `ql<run>-s<j>` and `ql<run>-r`. MAC addresses are fixed by role and index, so
//! the neighbour tables are static (ARP never crosses the delayed path) and the forwarder
//! knows which port owns which host.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use netem::config::LinkConfig;
use netem::LinkStats;
use scenario::model::DuplexLink;

use crate::cleanup::RunLock;
use crate::error::EmuError;
use crate::forwarder::{
    self, AccessLink, ForwarderConfig, ForwarderHandle, ForwarderReport, PortSpec, Side, WaitMode,
};
use crate::netns;
use crate::offload::{self, Offload};

/// Hosts per side the addressing plan allows (one octet, from 1).
pub const MAX_HOSTS: usize = 254;

/// What to build.
#[derive(Debug, Clone)]
pub struct TopologySpec {
    /// Client namespaces.
    pub clients: usize,
    /// Server namespaces.
    pub servers: usize,
    /// Client → server bottleneck direction.
    pub up: LinkConfig,
    /// Server → client bottleneck direction.
    pub down: LinkConfig,
    /// Seed of the link models.
    pub seed: u64,
    /// Write `client-side.pcap` / `server-side.pcap` of the bottleneck here.
    pub capture_dir: Option<PathBuf>,
    /// IP MTU of every interface.
    pub mtu: u16,
    /// How the forwarder waits.
    pub wait: WaitMode,
    /// Access link of client `i` (`up`: client → bottleneck, `down`: bottleneck → client), the
    /// scenario's `flow.client_access`; a client without an entry has an ideal one.
    pub client_access: Vec<DuplexLink>,
    /// Access link of server `j` (`up`: bottleneck → server, `down`: server → bottleneck), the
    /// scenario's `flow.server_access`; a server without an entry has an ideal one.
    pub server_access: Vec<DuplexLink>,
}

impl TopologySpec {
    /// One client and one server joined by `up`/`down`, MTU 1500, seed 1, no capture.
    pub fn new(up: LinkConfig, down: LinkConfig) -> Self {
        TopologySpec {
            clients: 1,
            servers: 1,
            up,
            down,
            seed: 1,
            capture_dir: None,
            mtu: 1500,
            wait: WaitMode::Sleep,
            client_access: Vec::new(),
            server_access: Vec::new(),
        }
    }

    /// The router port's view of host (`side`, `index`)'s access link (`None`: ideal).
    fn access(&self, side: Side, index: usize) -> Option<AccessLink> {
        let link = match side {
            Side::Client => self.client_access.get(index),
            Side::Server => self.server_access.get(index),
        }?;
        let (ingress, egress) = match side {
            Side::Client => (&link.up, &link.down),
            Side::Server => (&link.down, &link.up),
        };
        let ideal = LinkConfig::ideal();
        (*ingress != ideal || *egress != ideal).then(|| AccessLink {
            ingress: ingress.clone(),
            egress: egress.clone(),
        })
    }
}

/// A process started inside one of the namespaces; killed at teardown if still running.
#[derive(Debug, Clone)]
pub struct ChildHandle {
    child: Arc<Mutex<Child>>,
    pid: u32,
}

impl ChildHandle {
    /// Process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Exit status if it has exited.
    pub fn try_wait(&self) -> Result<Option<ExitStatus>, EmuError> {
        self.lock()
            .try_wait()
            .map_err(|e| EmuError::io(format!("wait for pid {}", self.pid), e))
    }

    /// Waits up to `timeout` for the process to exit.
    pub fn wait_timeout(&self, timeout: Duration) -> Result<Option<ExitStatus>, EmuError> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(s) = self.try_wait()? {
                return Ok(Some(s));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Sends `signal` (e.g. `libc::SIGTERM`) if still running.
    pub fn signal(&self, signal: i32) {
        if matches!(self.try_wait(), Ok(None)) {
            // SAFETY: kill(2) on a child we have not reaped, so the pid is still ours.
            unsafe { libc::kill(self.pid as i32, signal) };
        }
    }

    /// SIGTERM, then SIGKILL after `grace`; returns the exit status.
    pub fn terminate(&self, grace: Duration) -> Result<Option<ExitStatus>, EmuError> {
        self.signal(libc::SIGTERM);
        if let Some(s) = self.wait_timeout(grace)? {
            return Ok(Some(s));
        }
        self.signal(libc::SIGKILL);
        self.wait_timeout(Duration::from_secs(2))
    }

    /// The stdout pipe, if the command was given `Stdio::piped()` and nobody took it yet.
    pub fn take_stdout(&self) -> Option<std::process::ChildStdout> {
        self.lock().stdout.take()
    }

    /// The stderr pipe, if piped and not taken yet.
    pub fn take_stderr(&self) -> Option<std::process::ChildStderr> {
        self.lock().stderr.take()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Child> {
        self.child.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A live emulated topology. Dropping it tears everything down.
#[derive(Debug)]
pub struct Topology {
    run_id: String,
    clients: usize,
    servers: usize,
    /// Namespaces created so far, in creation order.
    namespaces: Vec<String>,
    forwarder: Option<ForwarderHandle>,
    children: Mutex<Vec<ChildHandle>>,
    lock: Option<RunLock>,
}

/// MAC of a host's `eth0`: locally administered, role and index inside.
pub(crate) fn host_mac(side: Side, index: usize) -> [u8; 6] {
    let role = match side {
        Side::Client => 1,
        Side::Server => 2,
    };
    [0x02, 0x51, 0x4c, role, (index >> 8) as u8, index as u8]
}

/// MAC of the router's port facing a host.
fn router_mac(side: Side, index: usize) -> [u8; 6] {
    let mut m = host_mac(side, index);
    m[2] = 0x52;
    m
}

pub(crate) fn mac_text(m: [u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// A short random run id (6 hex digits).
fn new_run_id() -> String {
    let mut bytes = [0u8; 3];
    // SAFETY: getrandom writes at most `len` bytes into the buffer.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if n != bytes.len() as isize {
        // Fall back to time and pid: uniqueness matters, not unpredictability.
        let t = crate::clock::monotonic_ns() ^ u64::from(std::process::id()) << 20;
        bytes = [(t >> 16) as u8, (t >> 8) as u8, t as u8];
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Topology {
    /// Builds the namespaces, links and forwarder. Returns when the forwarder has bound every
    /// port, i.e. forwarding works; on any error everything created so far is removed.
    pub fn create(spec: &TopologySpec) -> Result<Topology, EmuError> {
        if !netns::is_root() {
            return Err(EmuError::NotRoot);
        }
        if spec.clients == 0 || spec.servers == 0 {
            return Err(EmuError::Unsupported(
                "need at least one client and one server".into(),
            ));
        }
        if spec.clients > MAX_HOSTS || spec.servers > MAX_HOSTS {
            return Err(EmuError::Unsupported(format!(
                "at most {MAX_HOSTS} clients and servers"
            )));
        }
        if spec.mtu < 576 {
            return Err(EmuError::Unsupported(format!("MTU {} below 576", spec.mtu)));
        }
        // Retry on the (unlikely) collision with a live run's id.
        let (run_id, lock) = {
            let mut attempt = 0;
            loop {
                let id = new_run_id();
                match RunLock::acquire(&id) {
                    Ok(l) => break (id, l),
                    Err(e) if attempt >= 5 => return Err(e),
                    Err(_) => attempt += 1,
                }
            }
        };
        let mut topo = Topology {
            run_id,
            clients: spec.clients,
            servers: spec.servers,
            namespaces: Vec::new(),
            forwarder: None,
            children: Mutex::new(Vec::new()),
            lock: Some(lock),
        };
        // On error `topo` is dropped here, which tears down whatever exists.
        topo.build(spec)?;
        Ok(topo)
    }

    fn build(&mut self, spec: &TopologySpec) -> Result<(), EmuError> {
        let router = self.router_ns();
        self.add_namespace(&router)?;
        netns::in_netns(&router, || {
            netns::write_sysctl("net.ipv6.conf.all.disable_ipv6", "1")?;
            netns::write_sysctl("net.ipv6.conf.default.disable_ipv6", "1")?;
            netns::write_sysctl("net.ipv4.ip_forward", "0")
        })?;
        let mut ports = Vec::new();
        let hosts: Vec<(Side, usize)> = (0..spec.clients)
            .map(|i| (Side::Client, i))
            .chain((0..spec.servers).map(|j| (Side::Server, j)))
            .collect();
        for &(side, index) in &hosts {
            let ns = self.ns_name(side, index);
            self.add_namespace(&ns)?;
            let port = port_name(side, index);
            self.connect_host(spec, &router, &ns, &port, side, index)?;
            ports.push(PortSpec {
                ifname: port,
                side,
                host_mac: host_mac(side, index),
                access: spec.access(side, index),
            });
        }
        for &(side, index) in &hosts {
            self.add_static_neighbours(side, index)?;
        }
        let config = ForwarderConfig {
            up: spec.up.clone(),
            down: spec.down.clone(),
            seed: spec.seed,
            wait: spec.wait,
            capture_dir: spec.capture_dir.clone(),
            cpu: None,
        };
        self.forwarder = Some(forwarder::spawn(&router, ports, config)?);
        Ok(())
    }

    /// Creates namespace `name` and makes it this run's (removed at teardown; the PEP's too).
    pub(crate) fn add_namespace(&mut self, name: &str) -> Result<(), EmuError> {
        netns::ip(&["netns", "add", name])?;
        self.namespaces.push(name.to_string());
        Ok(())
    }

    /// Creates the veth pair router port ↔ host `eth0`, addresses it, switches offloads off.
    fn connect_host(
        &self,
        spec: &TopologySpec,
        router: &str,
        ns: &str,
        port: &str,
        side: Side,
        index: usize,
    ) -> Result<(), EmuError> {
        let mtu = spec.mtu.to_string();
        let rmac = mac_text(router_mac(side, index));
        let hmac = mac_text(host_mac(side, index));
        // IPv6 off before the interface exists, so it never gets a link-local address.
        netns::in_netns(ns, || {
            netns::write_sysctl("net.ipv6.conf.all.disable_ipv6", "1")?;
            netns::write_sysctl("net.ipv6.conf.default.disable_ipv6", "1")
        })?;
        netns::ip(&[
            "-n", router, "link", "add", port, "address", &rmac, "mtu", &mtu, "type", "veth",
            "peer", "name", "eth0", "address", &hmac, "mtu", &mtu, "netns", ns,
        ])?;
        let addr = format!("{}/16", self.addr_of(side, index));
        netns::ip(&["-n", ns, "addr", "add", &addr, "dev", "eth0"])?;
        let port_owned = port.to_string();
        netns::in_netns(router, move || offload::disable(&port_owned, Offload::Gro))?;
        netns::in_netns(ns, || {
            // Software checksums: AF_PACKET re-sends frames verbatim, so a partial (offloaded)
            // checksum would arrive as a bad one. This also turns TSO and USO off.
            offload::disable("eth0", Offload::TxChecksum)?;
            offload::disable("eth0", Offload::Tso)?;
            offload::disable("eth0", Offload::Gso)
        })?;
        netns::ip(&["-n", router, "link", "set", port, "up"])?;
        netns::ip(&["-n", ns, "link", "set", "eth0", "up"])?;
        netns::ip(&["-n", ns, "link", "set", "lo", "up"])?;
        Ok(())
    }

    /// Permanent neighbour entries for every host on the other side.
    fn add_static_neighbours(&self, side: Side, index: usize) -> Result<(), EmuError> {
        let ns = self.ns_name(side, index);
        let (other, count) = match side {
            Side::Client => (Side::Server, self.servers),
            Side::Server => (Side::Client, self.clients),
        };
        for k in 0..count {
            let addr = self.addr_of(other, k).to_string();
            let mac = mac_text(host_mac(other, k));
            netns::ip(&[
                "-n",
                &ns,
                "neigh",
                "replace",
                &addr,
                "lladdr",
                &mac,
                "dev",
                "eth0",
                "nud",
                "permanent",
            ])?;
        }
        Ok(())
    }

    /// Hosts on `side`.
    pub(crate) fn hosts(&self, side: Side) -> usize {
        match side {
            Side::Client => self.clients,
            Side::Server => self.servers,
        }
    }

    pub(crate) fn addr_of(&self, side: Side, index: usize) -> Ipv4Addr {
        let third = match side {
            Side::Client => 1,
            Side::Server => 2,
        };
        Ipv4Addr::new(10, 99, third, (index + 1) as u8)
    }

    pub(crate) fn ns_name(&self, side: Side, index: usize) -> String {
        match side {
            Side::Client => format!("ql{}-c{index}", self.run_id),
            Side::Server => format!("ql{}-s{index}", self.run_id),
        }
    }

    fn router_ns(&self) -> String {
        format!("ql{}-r", self.run_id)
    }

    /// This run's id (the part after `ql` in namespace names).
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Namespace of client `i` (panics if `i` is out of range, a programming error).
    pub fn client_ns(&self, i: usize) -> &str {
        assert!(i < self.clients, "client {i} of {}", self.clients);
        &self.namespaces[1 + i]
    }

    /// Namespace of server `j` (panics if `j` is out of range, a programming error).
    pub fn server_ns(&self, j: usize) -> &str {
        assert!(j < self.servers, "server {j} of {}", self.servers);
        &self.namespaces[1 + self.clients + j]
    }

    /// Namespace of the router.
    pub fn router_ns_name(&self) -> &str {
        &self.namespaces[0]
    }

    /// Address of client `i`.
    pub fn client_addr(&self, i: usize) -> Ipv4Addr {
        self.addr_of(Side::Client, i)
    }

    /// Address of server `j`.
    pub fn server_addr(&self, j: usize) -> Ipv4Addr {
        self.addr_of(Side::Server, j)
    }

    /// Every namespace of this run.
    pub fn namespaces(&self) -> &[String] {
        &self.namespaces
    }

    /// Starts `cmd` inside namespace `ns` (one of this topology's); the process is killed at
    /// teardown if still running, and by the kernel if the spawning thread dies first.
    pub fn spawn(&self, ns: &str, cmd: &mut Command) -> Result<ChildHandle, EmuError> {
        if !self.namespaces.iter().any(|n| n == ns) {
            return Err(EmuError::Unsupported(format!(
                "{ns} is not a namespace of this run"
            )));
        }
        let handle = netns::open(ns)?;
        let fd = std::os::fd::AsRawFd::as_raw_fd(&handle);
        // SAFETY: the closure runs between fork and exec and only makes async-signal-safe
        // system calls (setns, prctl).
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(cmd, move || {
                if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::prctl(
                    libc::PR_SET_PDEATHSIG,
                    libc::SIGKILL as libc::c_ulong,
                    0,
                    0,
                    0,
                );
                Ok(())
            });
        }
        let child = cmd.spawn().map_err(|e| EmuError::Command {
            command: format!("{:?}", cmd.get_program()),
            message: format!("cannot start in {ns}: {e}"),
        })?;
        drop(handle);
        let h = ChildHandle {
            pid: child.id(),
            child: Arc::new(Mutex::new(child)),
        };
        self.children
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(h.clone());
        Ok(h)
    }

    /// A private directory of this run (mode 0700, `quiclab-emu-<run id>-<random>` in
    /// `$TMPDIR`), removed when dropped; if the run is killed, [`crate::cleanup_stale`] removes
    /// it once the run's lock shows it dead.
    pub fn private_dir(&self) -> Result<fsutil::PrivateDir, EmuError> {
        fsutil::PrivateDir::new(&format!(
            "{}{}-",
            crate::cleanup::LOG_DIR_PREFIX,
            self.run_id
        ))
        .map_err(|e| EmuError::io("cannot create a private log directory", e))
    }

    /// Runs `f` on a fresh thread inside namespace `ns` (one of this topology's) and returns its
    /// result. Sockets `f` creates, and every thread it starts (an async runtime's workers),
    /// belong to that namespace: a thread inherits its creator's network namespace. This is how
    /// an in-process driver (the load generator) becomes a client of the emulated path.
    pub fn run_in<R: Send>(&self, ns: &str, f: impl FnOnce() -> R + Send) -> Result<R, EmuError> {
        if !self.namespaces.iter().any(|n| n == ns) {
            return Err(EmuError::Unsupported(format!(
                "{ns} is not a namespace of this run"
            )));
        }
        netns::in_netns(ns, || Ok(f()))
    }

    /// Current counters of the bottleneck: (up, down).
    pub fn link_stats(&self) -> (LinkStats, LinkStats) {
        let r = self.forwarder_report();
        (r.up, r.down)
    }

    /// Current counters of the forwarder (a few tens of milliseconds old at most).
    pub fn forwarder_report(&self) -> ForwarderReport {
        self.forwarder
            .as_ref()
            .map(ForwarderHandle::snapshot)
            .unwrap_or_default()
    }

    /// Tears everything down and returns the forwarder's final counters.
    pub fn shutdown(mut self) -> Result<ForwarderReport, EmuError> {
        let report = self.teardown();
        if let Some(l) = self.lock.take() {
            l.release();
        }
        report
    }

    /// Leaves namespaces and processes behind and releases the run lock, as a killed run
    /// would. Only for testing [`crate::cleanup_stale`].
    #[doc(hidden)]
    pub fn abandon(mut self) {
        if let Some(f) = self.forwarder.take() {
            let _ = f.stop();
        }
        self.children
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.namespaces.clear();
        if let Some(l) = self.lock.take() {
            l.abandon();
        }
    }

    /// Kills processes, stops the forwarder, deletes namespaces (the veths go with them).
    fn teardown(&mut self) -> Result<ForwarderReport, EmuError> {
        let children: Vec<ChildHandle> =
            std::mem::take(&mut *self.children.lock().unwrap_or_else(|p| p.into_inner()));
        for c in &children {
            c.signal(libc::SIGTERM);
        }
        for c in &children {
            let _ = c.terminate(Duration::from_millis(500));
        }
        let report = match self.forwarder.take() {
            Some(f) => f.stop(),
            None => Ok(ForwarderReport::default()),
        };
        let mut first_error = None;
        // Hosts first, router last: the router's ports vanish with their peers.
        for ns in self.namespaces.drain(..).rev() {
            if let Err(e) = netns::destroy(&ns) {
                first_error.get_or_insert(e);
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => report,
        }
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        if !self.namespaces.is_empty() || self.forwarder.is_some() {
            let _ = self.teardown();
        }
    }
}

fn port_name(side: Side, index: usize) -> String {
    match side {
        Side::Client => format!("c{index}"),
        Side::Server => format!("s{index}"),
    }
}
