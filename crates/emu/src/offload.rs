//! Turning NIC offloads off with the ethtool ioctl (no `ethtool` binary needed).
//!
//! The calling thread must be in the interface's namespace: the ioctl socket is created there.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::error::EmuError;

const SIOCETHTOOL: libc::c_ulong = 0x8946;
#[cfg(test)]
const ETHTOOL_GTXCSUM: u32 = 0x16;
const ETHTOOL_STXCSUM: u32 = 0x17;
const ETHTOOL_STSO: u32 = 0x1f;
const ETHTOOL_SGSO: u32 = 0x24;
#[cfg(test)]
const ETHTOOL_GGRO: u32 = 0x2b;
const ETHTOOL_SGRO: u32 = 0x2c;

/// `struct ethtool_value`.
#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

/// `struct ifreq` with the `ifr_data` member of the union (padded to the kernel's 40 bytes).
#[repr(C)]
struct IfreqData {
    name: [u8; libc::IFNAMSIZ],
    data: *mut EthtoolValue,
    _pad: [u8; 16],
}

/// An offload feature that can be switched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offload {
    /// Transmit checksum offload (`tx`); off also disables TSO and UDP segmentation offload.
    TxChecksum,
    /// TCP segmentation offload (`tso`).
    Tso,
    /// Generic segmentation offload (`gso`).
    Gso,
    /// Generic receive offload (`gro`).
    Gro,
}

impl Offload {
    fn set_cmd(self) -> u32 {
        match self {
            Offload::TxChecksum => ETHTOOL_STXCSUM,
            Offload::Tso => ETHTOOL_STSO,
            Offload::Gso => ETHTOOL_SGSO,
            Offload::Gro => ETHTOOL_SGRO,
        }
    }
}

fn ioctl(dev: &str, cmd: u32, data: u32) -> Result<u32, EmuError> {
    if dev.len() >= libc::IFNAMSIZ {
        return Err(EmuError::Unsupported(format!(
            "interface name {dev} too long"
        )));
    }
    // SAFETY: socket(2) with constant arguments; the fd is owned below.
    let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(EmuError::last_os("socket for ethtool ioctl"));
    }
    // SAFETY: `raw` is a fresh, valid fd that nothing else owns.
    let sock = unsafe { OwnedFd::from_raw_fd(raw) };
    let mut value = EthtoolValue { cmd, data };
    let mut req = IfreqData {
        name: [0; libc::IFNAMSIZ],
        data: &mut value,
        _pad: [0; 16],
    };
    req.name[..dev.len()].copy_from_slice(dev.as_bytes());
    // SAFETY: SIOCETHTOOL reads/writes `value` through the pointer in `req`, both live here.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), SIOCETHTOOL, &mut req) };
    if rc != 0 {
        return Err(EmuError::last_os(format!(
            "ethtool ioctl {cmd:#x} on {dev}"
        )));
    }
    Ok(value.data)
}

/// Switches `feature` of `dev` off (calling thread's namespace).
pub fn disable(dev: &str, feature: Offload) -> Result<(), EmuError> {
    ioctl(dev, feature.set_cmd(), 0).map(|_| ())
}

/// Whether transmit checksum offload is on (tests check that the topology turned it off).
#[cfg(test)]
pub(crate) fn tx_checksum_enabled(dev: &str) -> Result<bool, EmuError> {
    ioctl(dev, ETHTOOL_GTXCSUM, 0).map(|v| v != 0)
}

/// Whether GRO is on.
#[cfg(test)]
pub(crate) fn gro_enabled(dev: &str) -> Result<bool, EmuError> {
    ioctl(dev, ETHTOOL_GGRO, 0).map(|v| v != 0)
}
