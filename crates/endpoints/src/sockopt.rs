//! Linux socket options the measurements need: per-socket TCP congestion control, `TCP_INFO`,
//! and forced UDP buffer sizes.

use std::io;
use std::os::fd::{AsRawFd, RawFd};

use crate::stats::TcpInfoSnapshot;

/// Requested UDP socket buffer size: loopback QUIC at line rate drops with the 208 KiB default.
pub const UDP_BUFFER_BYTES: usize = 8 << 20;

fn setsockopt_bytes(fd: RawFd, level: i32, name: i32, value: &[u8]) -> io::Result<()> {
    // SAFETY: `value` is a valid buffer of the given length for the duration of the call.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            value.as_ptr().cast(),
            value.len() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn setsockopt_int(fd: RawFd, level: i32, name: i32, value: i32) -> io::Result<()> {
    setsockopt_bytes(fd, level, name, &value.to_ne_bytes())
}

/// Sets `TCP_CONGESTION` (e.g. "cubic", "reno", "bbr") on a TCP socket; listeners pass it on to
/// the sockets they accept.
pub fn set_tcp_congestion(sock: &impl AsRawFd, name: &str) -> io::Result<()> {
    setsockopt_bytes(
        sock.as_raw_fd(),
        libc::IPPROTO_TCP,
        libc::TCP_CONGESTION,
        name.as_bytes(),
    )
}

/// Reads the congestion control algorithm of a TCP socket.
pub fn tcp_congestion(sock: &impl AsRawFd) -> io::Result<String> {
    let mut buf = [0u8; 32];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: buf/len describe a writable buffer; the kernel writes at most `len` bytes.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let used = &buf[..(len as usize).min(buf.len())];
    let end = used.iter().position(|&b| b == 0).unwrap_or(used.len());
    Ok(String::from_utf8_lossy(&used[..end]).into_owned())
}

/// The kernel's `struct tcp_info` (include/uapi/linux/tcp.h) up to the fields we report; older
/// kernels fill a prefix and leave the rest zero.
#[repr(C)]
#[derive(Default)]
struct RawTcpInfo {
    state: u8,
    ca_state: u8,
    retransmits: u8,
    probes: u8,
    backoff: u8,
    options: u8,
    wscale: u8,
    flags: u8,
    rto: u32,
    ato: u32,
    snd_mss: u32,
    rcv_mss: u32,
    unacked: u32,
    sacked: u32,
    lost: u32,
    retrans: u32,
    fackets: u32,
    last_data_sent: u32,
    last_ack_sent: u32,
    last_data_recv: u32,
    last_ack_recv: u32,
    pmtu: u32,
    rcv_ssthresh: u32,
    rtt: u32,
    rttvar: u32,
    snd_ssthresh: u32,
    snd_cwnd: u32,
    advmss: u32,
    reordering: u32,
    rcv_rtt: u32,
    rcv_space: u32,
    total_retrans: u32,
    pacing_rate: u64,
    max_pacing_rate: u64,
    bytes_acked: u64,
    bytes_received: u64,
    segs_out: u32,
    segs_in: u32,
    notsent_bytes: u32,
    min_rtt: u32,
    data_segs_in: u32,
    data_segs_out: u32,
    delivery_rate: u64,
    busy_time: u64,
    rwnd_limited: u64,
    sndbuf_limited: u64,
    delivered: u32,
    delivered_ce: u32,
    bytes_sent: u64,
    bytes_retrans: u64,
    dsack_dups: u32,
    reord_seen: u32,
}

/// `tcpi_options` bit: ECN was negotiated (include/uapi/linux/tcp.h).
const TCPI_OPT_ECN: u8 = 8;

/// Reads `TCP_INFO` (and the congestion control name) of a TCP socket.
pub fn tcp_info(sock: &impl AsRawFd) -> io::Result<TcpInfoSnapshot> {
    let mut raw = RawTcpInfo::default();
    let mut len = std::mem::size_of::<RawTcpInfo>() as libc::socklen_t;
    // SAFETY: `raw` is a plain-old-data struct of `len` bytes; the kernel writes at most `len`.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut raw as *mut RawTcpInfo).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(TcpInfoSnapshot {
        congestion: tcp_congestion(sock).unwrap_or_default(),
        state: raw.state,
        cwnd_segments: raw.snd_cwnd,
        ssthresh_segments: raw.snd_ssthresh,
        snd_mss: raw.snd_mss,
        rcv_mss: raw.rcv_mss,
        pmtu: raw.pmtu,
        rtt_us: raw.rtt,
        rttvar_us: raw.rttvar,
        min_rtt_us: raw.min_rtt,
        rto_us: raw.rto,
        total_retrans: raw.total_retrans,
        lost: raw.lost,
        unacked: raw.unacked,
        reordering: raw.reordering,
        segs_out: raw.segs_out,
        segs_in: raw.segs_in,
        data_segs_out: raw.data_segs_out,
        data_segs_in: raw.data_segs_in,
        bytes_acked: raw.bytes_acked,
        bytes_received: raw.bytes_received,
        bytes_sent: raw.bytes_sent,
        bytes_retrans: raw.bytes_retrans,
        delivery_rate_bps: raw.delivery_rate.saturating_mul(8),
        pacing_rate_bps: raw.pacing_rate.saturating_mul(8),
        busy_time_us: raw.busy_time,
        rwnd_limited_us: raw.rwnd_limited,
        sndbuf_limited_us: raw.sndbuf_limited,
        delivered: raw.delivered,
        dsack_dups: raw.dsack_dups,
        reord_seen: raw.reord_seen,
        ecn: raw.options & TCPI_OPT_ECN != 0,
    })
}

/// Raises a UDP socket's buffers: `SO_*BUFFORCE` (root, ignores `rmem_max`), else the capped
/// `SO_*BUF`. Returns the receive buffer size the kernel reports afterwards.
pub fn raise_udp_buffers(sock: &socket2::Socket, bytes: usize) -> usize {
    let fd = sock.as_raw_fd();
    let n = i32::try_from(bytes).unwrap_or(i32::MAX);
    if setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, n).is_err() {
        let _ = sock.set_recv_buffer_size(bytes);
    }
    if setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, n).is_err() {
        let _ = sock.set_send_buffer_size(bytes);
    }
    sock.recv_buffer_size().unwrap_or(0)
}
