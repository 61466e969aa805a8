//! UDP probes for tests and `quiclab bench emu`: sockets made inside a namespace, a paced
//! sender stamping sequence numbers and send times, a receiver reading kernel timestamps.

use std::net::{SocketAddr, SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use crate::clock;
use crate::error::EmuError;
use crate::netns;

/// Bytes of the probe header: sequence number and send time (CLOCK_REALTIME ns).
pub(crate) const PROBE_HEADER: usize = 16;

/// A UDP socket bound to `addr` inside namespace `ns` (it stays there when used from any thread).
pub(crate) fn udp_in(ns: &str, addr: SocketAddrV4) -> Result<UdpSocket, EmuError> {
    netns::in_netns(ns, move || {
        let s = UdpSocket::bind(addr).map_err(|e| EmuError::io(format!("bind {addr}"), e))?;
        set_int(&s, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, 16 << 20)?;
        set_int(&s, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, 4 << 20)?;
        set_int(&s, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)?;
        Ok(s)
    })
}

fn set_int(s: &UdpSocket, level: i32, opt: i32, v: libc::c_int) -> Result<(), EmuError> {
    // SAFETY: pointer to a live c_int and its size.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            level,
            opt,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(EmuError::last_os(format!("setsockopt {opt}")));
    }
    Ok(())
}

/// One received probe.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ProbeRx {
    /// Sequence number.
    pub seq: u64,
    /// Sender's CLOCK_REALTIME at send.
    pub sent_ns: u64,
    /// Receiver kernel's CLOCK_REALTIME at receive.
    pub rx_ns: u64,
    /// UDP payload bytes.
    pub len: usize,
}

/// Receives one datagram with its kernel timestamp; `Ok(None)` on timeout.
pub(crate) fn recv_timestamped(
    s: &UdpSocket,
    buf: &mut [u8],
) -> Result<Option<(usize, u64)>, EmuError> {
    let received = crate::packet_socket::recv_with_timestamp(s.as_raw_fd(), buf, 0)
        .map_err(|e| EmuError::io("recvmsg", e))?;
    Ok(received.map(|r| {
        // No kernel timestamp (never expected with SO_TIMESTAMPNS on): the reading time is the
        // closest stand-in.
        let ts = if r.realtime_ns == 0 {
            clock::realtime_ns()
        } else {
            r.realtime_ns
        };
        (r.len, ts)
    }))
}

/// Probes handed to the kernel per `sendmmsg` when the sender is behind its schedule.
const BATCH: usize = 32;

/// Sends `count` probes of `payload` UDP bytes to `dst`, paced at `pps` (0 = as fast as
/// possible). Returns how many were sent (the socket may refuse some when overrun). When the
/// schedule falls behind, the overdue probes go out together in one `sendmmsg`, so the probe
/// sender itself is not what limits a 1 Gbit/s measurement on a small machine.
pub(crate) fn send_paced(
    s: &UdpSocket,
    dst: SocketAddr,
    payload: usize,
    pps: f64,
    count: u64,
) -> Result<u64, EmuError> {
    s.connect(dst)
        .map_err(|e| EmuError::io(format!("connect to {dst}"), e))?;
    let size = payload.max(PROBE_HEADER);
    let mut bufs = vec![0u8; size * BATCH];
    let start = Instant::now();
    let mut sent = 0;
    let mut seq = 0u64;
    while seq < count {
        let due_of = |k: u64| {
            if pps > 0.0 {
                start + Duration::from_secs_f64(k as f64 / pps)
            } else {
                start
            }
        };
        wait_until(due_of(seq));
        // Everything already due (at least this one) goes in one batch.
        let now = Instant::now();
        let mut n = 1;
        while n < BATCH && seq + (n as u64) < count && due_of(seq + n as u64) <= now {
            n += 1;
        }
        let stamp = clock::realtime_ns().to_be_bytes();
        for (k, chunk) in bufs.chunks_mut(size).take(n).enumerate() {
            chunk[..8].copy_from_slice(&(seq + k as u64).to_be_bytes());
            chunk[8..16].copy_from_slice(&stamp);
        }
        sent += send_batch(s, &mut bufs, size, n)?;
        seq += n as u64;
    }
    Ok(sent)
}

/// Sleeps until `due`. Never spins: on a small machine a spinning probe would take the CPU
/// the forwarder under test needs; oversleeping only makes the next batch larger.
fn wait_until(due: Instant) {
    let now = Instant::now();
    if due > now {
        std::thread::sleep(due - now);
    }
}

/// Sends the first `n` buffers of `size` bytes on a connected socket; returns how many left.
fn send_batch(s: &UdpSocket, bufs: &mut [u8], size: usize, n: usize) -> Result<u64, EmuError> {
    let mut iovs: Vec<libc::iovec> = bufs
        .chunks_mut(size)
        .take(n)
        .map(|c| libc::iovec {
            iov_base: c.as_mut_ptr().cast(),
            iov_len: c.len(),
        })
        .collect();
    // SAFETY: mmsghdr is plain data; each points at one iovec that outlives the call.
    let mut msgs: Vec<libc::mmsghdr> = iovs
        .iter_mut()
        .map(|iov| {
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            m.msg_hdr.msg_iov = iov;
            m.msg_hdr.msg_iovlen = 1;
            m
        })
        .collect();
    let mut done = 0usize;
    while done < n {
        // SAFETY: sendmmsg over the live message array from `done`.
        let r = unsafe {
            libc::sendmmsg(
                s.as_raw_fd(),
                msgs.as_mut_ptr().add(done),
                (n - done) as u32,
                0,
            )
        };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            return match e.raw_os_error() {
                // A full buffer drops the rest of the batch, like a paced sender would.
                Some(libc::EAGAIN) | Some(libc::ENOBUFS) => Ok(done as u64),
                Some(libc::EINTR) => continue,
                _ => Err(EmuError::io("sendmmsg", e)),
            };
        }
        done += r as usize;
    }
    Ok(done as u64)
}

/// Receives probes until `idle` passes without one or `deadline` passes.
pub(crate) fn receive_probes(
    s: &UdpSocket,
    idle: Duration,
    deadline: Duration,
) -> Result<Vec<ProbeRx>, EmuError> {
    s.set_read_timeout(Some(Duration::from_millis(5)))
        .map_err(|e| EmuError::io("set_read_timeout", e))?;
    let start = Instant::now();
    let mut last = Instant::now();
    let mut out = Vec::new();
    let mut buf = vec![0u8; 65_536];
    while start.elapsed() < deadline && last.elapsed() < idle {
        let Some((n, rx_ns)) = recv_timestamped(s, &mut buf)? else {
            continue;
        };
        last = Instant::now();
        if n < PROBE_HEADER {
            continue;
        }
        let mut seq = [0u8; 8];
        let mut sent = [0u8; 8];
        seq.copy_from_slice(&buf[..8]);
        sent.copy_from_slice(&buf[8..16]);
        out.push(ProbeRx {
            seq: u64::from_be_bytes(seq),
            sent_ns: u64::from_be_bytes(sent),
            rx_ns,
            len: n,
        });
    }
    Ok(out)
}
