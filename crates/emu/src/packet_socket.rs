//! AF_PACKET socket bound to one interface: receive frames with kernel timestamps, send frames.
//!
//! Datapath choice (see EMULATOR-FACTS.md and `quiclab bench emu`): AF_PACKET with one
//! `recvmsg`/`send` per frame. It gives a kernel receive timestamp per frame (SO_TIMESTAMPNS),
//! which is the delay reference; batching (recvmmsg, TPACKET rings) measured only a few
//! percent faster because the veth path dominates, TPACKET_V3 adds ~0.5 ms latency, and TUN
//! and AF_XDP give no timestamps. Measured capacity is several times the 83 kpps of 1 Gbit/s.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::error::EmuError;

const ETH_P_ALL: u16 = 0x0003;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
/// Socket buffers large enough for a burst of a 1 Gbit/s link while the forwarder sleeps.
const SOCKET_BUFFER: libc::c_int = 8 << 20;

/// A received frame's metadata.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Received {
    /// Bytes stored in the buffer.
    pub len: usize,
    /// The frame was larger than the buffer (truncated).
    pub truncated: bool,
    /// Kernel receive time, wall clock, nanoseconds (0 if the kernel gave none).
    pub realtime_ns: u64,
}

/// An AF_PACKET raw socket on one interface.
#[derive(Debug)]
pub(crate) struct PacketSocket {
    fd: OwnedFd,
    /// Interface name, for messages.
    pub ifname: String,
}

fn setsockopt(
    fd: RawFd,
    level: i32,
    opt: i32,
    value: libc::c_int,
    what: &str,
) -> Result<(), EmuError> {
    // SAFETY: passes a pointer to a live c_int with its size.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(EmuError::last_os(what.to_string()));
    }
    Ok(())
}

impl PacketSocket {
    /// Opens a non-blocking socket receiving every frame that arrives on `ifname` (calling
    /// thread's namespace), excluding frames this host sends.
    pub(crate) fn open(ifname: &str) -> Result<PacketSocket, EmuError> {
        Self::open_with(ifname, true)
    }

    /// Like [`PacketSocket::open`], but also receiving the frames this host sends on `ifname`
    /// (a capture of both directions, as the PEP namespace's captures need).
    pub(crate) fn open_capture(ifname: &str) -> Result<PacketSocket, EmuError> {
        Self::open_with(ifname, false)
    }

    fn open_with(ifname: &str, ignore_outgoing: bool) -> Result<PacketSocket, EmuError> {
        let cname = std::ffi::CString::new(ifname)
            .map_err(|_| EmuError::Unsupported(format!("bad interface name {ifname:?}")))?;
        // SAFETY: if_nametoindex reads a NUL-terminated string.
        let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) };
        if ifindex == 0 {
            return Err(EmuError::last_os(format!("no interface {ifname}")));
        }
        // Protocol 0: receive nothing until bind, so no frame of another interface slips in.
        // SAFETY: socket(2) with constant arguments.
        let raw = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                0,
            )
        };
        if raw < 0 {
            return Err(EmuError::last_os("socket(AF_PACKET)"));
        }
        // SAFETY: fresh fd, owned from here on.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let r = fd.as_raw_fd();
        setsockopt(
            r,
            libc::SOL_PACKET,
            PACKET_IGNORE_OUTGOING,
            libc::c_int::from(ignore_outgoing),
            "PACKET_IGNORE_OUTGOING",
        )?;
        setsockopt(
            r,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            1,
            "SO_TIMESTAMPNS",
        )?;
        // FORCE variants need CAP_NET_ADMIN (we have it) and ignore rmem_max.
        setsockopt(
            r,
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            SOCKET_BUFFER,
            "SO_RCVBUFFORCE",
        )?;
        setsockopt(
            r,
            libc::SOL_SOCKET,
            libc::SO_SNDBUFFORCE,
            SOCKET_BUFFER,
            "SO_SNDBUFFORCE",
        )?;
        // SAFETY: sockaddr_ll is plain data.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = ETH_P_ALL.to_be();
        addr.sll_ifindex = ifindex as i32;
        // SAFETY: binds with a valid sockaddr_ll and its size.
        let rc = unsafe {
            libc::bind(
                r,
                (&addr as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(EmuError::last_os(format!("bind AF_PACKET to {ifname}")));
        }
        Ok(PacketSocket {
            fd,
            ifname: ifname.to_string(),
        })
    }

    /// The raw fd (for poll).
    pub(crate) fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Receives one frame into `buf`; `Ok(None)` when nothing is waiting.
    pub(crate) fn recv(&self, buf: &mut [u8]) -> Result<Option<Received>, EmuError> {
        // MSG_TRUNC: return the real length so oversized frames are recognised.
        match recv_with_timestamp(self.fd.as_raw_fd(), buf, libc::MSG_TRUNC) {
            Ok(r) => Ok(r),
            Err(err) => Err(EmuError::io(format!("recv on {}", self.ifname), err)),
        }
    }

    /// Sends one frame out of the interface; `Ok(false)` if the kernel had no room (dropped).
    pub(crate) fn send(&self, frame: &[u8]) -> Result<bool, EmuError> {
        // SAFETY: send(2) reads `frame` for its length.
        let n = unsafe {
            libc::send(
                self.fd.as_raw_fd(),
                frame.as_ptr().cast(),
                frame.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n >= 0 {
            return Ok(true);
        }
        let err = std::io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::ENOBUFS) | Some(libc::EMSGSIZE)
            | Some(libc::ENETDOWN) => Ok(false),
            _ => Err(EmuError::io(format!("send on {}", self.ifname), err)),
        }
    }
}

/// One `recvmsg` into `buf` with the kernel's `SCM_TIMESTAMPNS` receive time (wall clock, ns;
/// 0 when the socket gave none). `Ok(None)` when nothing is waiting or a signal interrupted.
/// Shared by the forwarder's packet sockets and the bench probes' UDP sockets.
pub(crate) fn recv_with_timestamp(
    fd: RawFd,
    buf: &mut [u8],
    flags: libc::c_int,
) -> std::io::Result<Option<Received>> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // Room for one SCM_TIMESTAMPNS (cmsghdr + timespec) with alignment slack.
    let mut control = [0u64; 8];
    // SAFETY: msghdr is plain data; every pointer set below outlives the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control);
    // SAFETY: recvmsg with a valid msghdr.
    let n = unsafe { libc::recvmsg(fd, &mut msg, flags) };
    if n < 0 {
        let err = std::io::Error::last_os_error();
        return match err.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(None),
            _ => Err(err),
        };
    }
    let n = n as usize;
    let mut realtime_ns = 0;
    // SAFETY: standard cmsg traversal over the control buffer the kernel filled.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                realtime_ns = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok(Some(Received {
        len: n.min(buf.len()),
        truncated: n > buf.len() || msg.msg_flags & libc::MSG_TRUNC != 0,
        realtime_ns,
    }))
}
