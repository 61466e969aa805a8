//! Waiting until a server accepts connections.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::process::Proc;
use crate::spec::{ReadySpec, Transport};
use crate::template::Vars;

/// What to wait for, besides the readiness rule itself.
#[derive(Debug, Clone, Copy)]
pub struct ReadyContext<'a> {
    /// The server port.
    pub port: u16,
    /// The pair's transport (for `ready = "port"`).
    pub transport: Transport,
    /// Files the server's stdout and stderr go to.
    pub logs: &'a [&'a Path],
    /// Placeholder values (for `ready = { file = ... }`).
    pub vars: &'a Vars,
}

/// Waits until `proc` is ready according to `spec`, for at most `timeout`. On failure says why.
pub fn wait_ready(
    proc: &mut Proc,
    spec: &ReadySpec,
    ctx: &ReadyContext<'_>,
    timeout: Duration,
) -> Result<(), String> {
    let deadline = Instant::now() + timeout;
    let ready_file = match spec {
        ReadySpec::File(t) => Some(ctx.vars.render(t).map_err(|e| e.to_string())?),
        _ => None,
    };
    if let ReadySpec::DelayMs(ms) = spec {
        std::thread::sleep(Duration::from_millis(*ms));
    }
    loop {
        if let Some(status) = proc.try_wait() {
            let how = status.map_or("exited".to_owned(), |s| s.to_string());
            return Err(format!("server {how} before it was ready"));
        }
        let ready = match spec {
            ReadySpec::Port => port_bound(proc.pid(), ctx.transport, ctx.port),
            ReadySpec::File(_) => ready_file.as_ref().is_some_and(|f| Path::new(f).exists()),
            ReadySpec::Log(text) => ctx
                .logs
                .iter()
                .any(|p| std::fs::read_to_string(p).is_ok_and(|s| s.contains(text.as_str()))),
            ReadySpec::DelayMs(_) => true,
        };
        if ready {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "server not ready after {} s",
                timeout.as_secs_f64()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Is a socket of `transport` bound (UDP) or listening (TCP) on `port` in the network namespace
/// of process `pid`? `/proc/<pid>/net/*` shows that process's namespace, so this works the same
/// on loopback and inside the emulator without entering the namespace.
pub fn port_bound(pid: u32, transport: Transport, port: u16) -> bool {
    let tables: &[&str] = match transport {
        Transport::Udp => &["udp", "udp6"],
        Transport::Tcp => &["tcp", "tcp6"],
    };
    tables.iter().any(|t| {
        std::fs::read_to_string(format!("/proc/{pid}/net/{t}"))
            .is_ok_and(|text| table_has_port(&text, transport, port))
    })
}

/// Parses a `/proc/net/{udp,tcp}[6]` table: `sl local_address rem_address st ...`.
fn table_has_port(text: &str, transport: Transport, port: u16) -> bool {
    const TCP_LISTEN: &str = "0A";
    text.lines().skip(1).any(|line| {
        let mut fields = line.split_whitespace();
        let local = fields.nth(1);
        let state = fields.nth(1);
        let port_matches = local
            .and_then(|l| l.rsplit_once(':'))
            .and_then(|(_, p)| u16::from_str_radix(p, 16).ok())
            == Some(port);
        port_matches && (transport == Transport::Udp || state == Some(TCP_LISTEN))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const UDP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  1: 0100007F:1151 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 1 2 0000000000000000 0
";
    const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1151 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1
   1: 0100007F:1152 0100007F:9999 01 00000000:00000000 00:00000000 00000000     0        0 1
";

    #[test]
    fn finds_bound_udp_port() {
        assert!(table_has_port(UDP, Transport::Udp, 4433));
        assert!(!table_has_port(UDP, Transport::Udp, 4434));
    }

    #[test]
    fn tcp_port_must_be_listening() {
        assert!(table_has_port(TCP, Transport::Tcp, 4433));
        assert!(
            !table_has_port(TCP, Transport::Tcp, 4434),
            "established is not listening"
        );
    }

    #[test]
    fn sees_a_real_socket_of_this_process() {
        let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = sock.local_addr().unwrap().port();
        assert!(port_bound(std::process::id(), Transport::Udp, port));
        drop(sock);
        assert!(!port_bound(std::process::id(), Transport::Udp, port));
    }
}
