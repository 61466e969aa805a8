//! Synthesising the bottleneck's packets for pcap: the engine moves payloads only, so IPv4/UDP
//! and TCP headers are written here with the addresses of `addr`.

use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::Duration;

use scenario::model::{FlowSpec, Stack};
use transport::clock::VIRTUAL_EPOCH_UNIX_SECS;
use transport::tcp::segment::{self, Segment};
use transport::tls::KeyLogBuffer;

use crate::addr;
use crate::engine::{Owner, Packet, SimError};
use netem::pcap::PcapWriter;
use netem::wire::{IPV4_HEADER_LEN, TCP_HEADER_LEN};

/// The capture of one run: the pcap file and the TLS key log written next to it.
pub(crate) struct Capture {
    path: PathBuf,
    writer: PcapWriter<BufWriter<fsutil::AtomicFile>>,
    ip_ident: u16,
}

impl Capture {
    /// Starts the pcap file at `path`: written beside it under a random name and renamed into
    /// place by [`Capture::finish`]; a link planted at `path` is refused, never followed.
    pub(crate) fn create(path: &Path) -> Result<Capture, SimError> {
        let io = |source| SimError::Io {
            path: path.to_path_buf(),
            source,
        };
        let f = fsutil::AtomicFile::new(path).map_err(io)?;
        let writer =
            PcapWriter::new(BufWriter::new(f), VIRTUAL_EPOCH_UNIX_SECS, 65535).map_err(io)?;
        Ok(Capture {
            path: path.to_path_buf(),
            writer,
            ip_ident: 0,
        })
    }

    /// Records `pkt` at virtual time `now`; `flow` is the spec of the flow that owns it.
    pub(crate) fn packet(&mut self, now: Duration, pkt: &Packet, flow: Option<&FlowSpec>) {
        self.ip_ident = self.ip_ident.wrapping_add(1);
        let mut bytes = Vec::with_capacity(pkt.wire_len as usize);
        match pkt.owner {
            Owner::Flow(f) if flow.is_some_and(|s| s.stack() == Stack::Tcp) => {
                // A segment that does not decode was never going to be accepted; skip it.
                let Ok(seg) = Segment::decode(&pkt.payload) else {
                    return;
                };
                let client = addr::tcp_client_addr(f as usize, seg.conn);
                // A PEP is transparent: it speaks with the client's and the server's addresses.
                let server = addr::server_addr(f as usize);
                let (src, dst) = if pkt.up {
                    (client, server)
                } else {
                    (server, client)
                };
                let mss = flow.map_or(0, |s| {
                    s.mtu()
                        .saturating_sub((IPV4_HEADER_LEN + TCP_HEADER_LEN) as u16)
                });
                addr::ipv4_tcp_header(src, dst, &tcp_fields(&seg, mss), self.ip_ident, &mut bytes);
                bytes.resize(bytes.len() + seg.len as usize, 0);
            }
            Owner::Flow(f) if flow.is_some_and(|s| s.stack() == Stack::QuicModel) => {
                // The research model moves its packet's header bytes (no AEAD, no frame
                // payload): the datagram gets its real size on the wire, the header first and
                // zeros for the rest, so lengths and timing read as they would for quinn.
                let (c, s) = (addr::client_addr(f as usize), addr::server_addr(f as usize));
                let (src, dst) = if pkt.up { (c, s) } else { (s, c) };
                let len = (pkt.payload_len as usize).max(pkt.payload.len());
                addr::ipv4_udp_header(src, dst, len, self.ip_ident, &mut bytes);
                bytes.extend_from_slice(&pkt.payload);
                bytes.resize(bytes.len() + len - pkt.payload.len(), 0);
            }
            Owner::Flow(f) => {
                let (c, s) = (addr::client_addr(f as usize), addr::server_addr(f as usize));
                let (src, dst) = if pkt.up { (c, s) } else { (s, c) };
                addr::ipv4_udp_header(src, dst, pkt.payload.len(), self.ip_ident, &mut bytes);
                bytes.extend_from_slice(&pkt.payload);
            }
            Owner::Probe { probe, flow } => {
                let (c, s) = addr::probe_addrs(probe as usize, flow as usize);
                let (src, dst) = if pkt.up { (c, s) } else { (s, c) };
                addr::ipv4_udp_header(src, dst, pkt.payload.len(), self.ip_ident, &mut bytes);
                bytes.extend_from_slice(&pkt.payload);
            }
            Owner::Cross(c) => {
                let src = addr::cross_addr(c as usize, pkt.up);
                let mut dst = addr::cross_addr(c as usize, !pkt.up);
                dst.set_port(addr::CROSS_PORT);
                addr::ipv4_udp_header(
                    src,
                    dst,
                    pkt.payload_len as usize,
                    self.ip_ident,
                    &mut bytes,
                );
                bytes.resize(bytes.len() + pkt.payload_len as usize, 0);
            }
        }
        // The capture point is the bottleneck's entrance: the codepoint as the sender set it
        // (a mark the queue makes later is not in the file).
        if pkt.ecn != netem::Ecn::NotEct && bytes.len() >= IPV4_HEADER_LEN {
            let mut ip = netem::wire::Ipv4Packet::new_unchecked(&mut bytes[..]);
            ip.set_tos(pkt.ecn.bits());
            ip.fill_checksum();
        }
        // A failing capture must not change the simulation; the error surfaces at finish.
        let _ = self.writer.write(now, &bytes);
    }

    /// Flushes the pcap file and writes the key log to `<path>.keys`.
    pub(crate) fn finish(self, keylog: Option<&KeyLogBuffer>) -> Result<(), SimError> {
        let path = self.path;
        let io = |source| SimError::Io {
            path: path.clone(),
            source,
        };
        self.writer
            .finish()
            .and_then(|w| w.into_inner().map_err(|e| e.into_error()))
            .map_err(io)?
            .commit()
            .map_err(io)?;
        if let Some(k) = keylog {
            let mut keys = path.into_os_string();
            keys.push(".keys");
            let keys = PathBuf::from(keys);
            fsutil::write_atomic(&keys, k.contents().as_bytes()).map_err(|source| {
                SimError::Io {
                    path: keys.clone(),
                    source,
                }
            })?;
        }
        Ok(())
    }
}

/// The model's 64-bit sequence space drawn as real 32-bit TCP fields (it starts at 0, so the
/// truncation only wraps after 4 GB, as a real connection would).
fn tcp_fields(seg: &Segment, mss: u16) -> addr::TcpHeaderFields {
    let mut sack = [(0u32, 0u32); 4];
    for (dst, &(a, b)) in sack.iter_mut().zip(seg.sack_blocks()) {
        *dst = (a as u32, b as u32);
    }
    addr::TcpHeaderFields {
        seq: seg.seq as u32,
        ack: seg.ack as u32,
        syn: seg.has(segment::SYN),
        ack_flag: seg.has(segment::ACK),
        fin: seg.has(segment::FIN),
        rst: seg.has(segment::RST),
        ece: seg.has(segment::ECE),
        cwr: seg.has(segment::CWR),
        window: seg.window,
        ts: seg.ts.map(|(v, e)| (v as u32, e as u32)),
        sack,
        nsack: seg.sack_blocks().len(),
        mss,
        data_len: seg.len as usize,
    }
}
