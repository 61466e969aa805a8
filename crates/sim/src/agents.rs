//! Building a flow's agent and routes from its `FlowSpec` (the "helper" side of the engine:
//! the event loop never looks at scenario knobs).

use scenario::model::{CcChoice, FlowSpec, PepPosition, Stack, TlsMode, Workload};
use transport::agent::{FlowAgent, Side};
use transport::cc_adapter::ControllerChoice;
use transport::clock::VirtualClock;
use transport::quic::{QuicFlow, QuicFlowConfig, QuicWorkload};
use transport::tcp::{PepConfig, TcpFlow, TcpFlowConfig, TcpWorkload, Tls};
use transport::tls::KeyLogBuffer;

use crate::addr;
use crate::engine::{RunOptions, SimError, BOTTLENECK_DOWN, BOTTLENECK_UP};
use netem::wire::IPV4_UDP_OVERHEAD;

/// Link routes between the sides of one flow. Without a PEP only client ↔ server exists; with
/// one, each end talks to the PEP, which sits before or after the bottleneck.
pub(crate) fn routes(
    cu: Option<usize>,
    cd: Option<usize>,
    su: Option<usize>,
    sd: Option<usize>,
    pep: Option<PepPosition>,
) -> [[Vec<usize>; 3]; 3] {
    let path =
        |links: &[Option<usize>]| -> Vec<usize> { links.iter().flatten().copied().collect() };
    let (b_up, b_down) = (Some(BOTTLENECK_UP), Some(BOTTLENECK_DOWN));
    let mut r: [[Vec<usize>; 3]; 3] = Default::default();
    let (c, s, m) = (
        Side::Client.index(),
        Side::Server.index(),
        Side::Middle.index(),
    );
    r[c][s] = path(&[cu, b_up, su]);
    r[s][c] = path(&[sd, b_down, cd]);
    match pep {
        None => {}
        Some(PepPosition::ClientSide) => {
            r[c][m] = path(&[cu]);
            r[m][c] = path(&[cd]);
            r[m][s] = path(&[b_up, su]);
            r[s][m] = path(&[sd, b_down]);
        }
        Some(PepPosition::ServerSide) => {
            r[c][m] = path(&[cu, b_up]);
            r[m][c] = path(&[b_down, cd]);
            r[m][s] = path(&[su]);
            r[s][m] = path(&[sd]);
        }
    }
    r
}

/// The transport agent of one flow.
pub(crate) fn build_agent(
    spec: &FlowSpec,
    index: usize,
    seed: u64,
    clock: &VirtualClock,
    opts: &RunOptions,
    keylog: Option<KeyLogBuffer>,
) -> Result<Box<dyn FlowAgent>, SimError> {
    match spec.stack {
        Stack::Quic => {
            let q = &spec.quic;
            let workload = match spec.workload {
                Workload::Bulk { upload: true } => QuicWorkload::BulkUpload,
                Workload::Bulk { upload: false } => QuicWorkload::BulkDownload,
                Workload::Download {
                    size,
                    streams,
                    connections,
                } => QuicWorkload::Download {
                    size,
                    streams,
                    connections,
                },
            };
            let controller = match spec.cc {
                CcChoice::Ours(c) => ControllerChoice::Ours(c),
                CcChoice::QuinnNewReno => ControllerChoice::QuinnNewReno,
                CcChoice::QuinnCubic => ControllerChoice::QuinnCubic,
                CcChoice::QuinnBbr => ControllerChoice::QuinnBbr,
            };
            let cfg = QuicFlowConfig {
                name: spec.name.clone(),
                seed,
                workload,
                start: spec.start,
                stop: spec.stop,
                controller,
                max_udp_payload: q.mtu.saturating_sub(IPV4_UDP_OVERHEAD as u16),
                mtu_discovery: q.mtu_discovery,
                initial_rtt: q.initial_rtt,
                stream_window: q.stream_window,
                conn_window: q.conn_window,
                send_window: q.send_window,
                ack_ratio: q.ack_ratio,
                max_ack_delay: q.max_ack_delay,
                zero_rtt: q.zero_rtt,
                client_addr: addr::client_addr(index),
                server_addr: addr::server_addr(index),
                qlog_dir: opts.qlog_dir.clone(),
                keylog,
            };
            let flow = QuicFlow::new(cfg, clock.clone()).map_err(|e| SimError::Flow {
                flow: spec.name.clone(),
                message: e.to_string(),
            })?;
            Ok(Box::new(flow))
        }
        Stack::Tcp => {
            let t = &spec.tcp;
            let controller = match spec.cc {
                CcChoice::Ours(c) => c,
                // The scenario parser rejects this; a scenario built in code might not.
                _ => {
                    return Err(SimError::Flow {
                        flow: spec.name.clone(),
                        message: "TCP flows use quiclab's controllers, not quinn's".into(),
                    })
                }
            };
            let workload = match spec.workload {
                Workload::Bulk { upload: true } => TcpWorkload::BulkUpload,
                Workload::Bulk { upload: false } => TcpWorkload::BulkDownload,
                Workload::Download {
                    size,
                    streams,
                    connections,
                } => TcpWorkload::Download {
                    size,
                    streams,
                    connections,
                    http1_parallel: t.http1_parallel,
                },
            };
            let cfg = TcpFlowConfig {
                name: spec.name.clone(),
                workload,
                start: spec.start,
                stop: spec.stop,
                controller,
                mtu: t.mtu,
                tls: match t.tls {
                    TlsMode::None => Tls::None,
                    TlsMode::Tls12 => Tls::Tls12,
                    TlsMode::Tls13 => Tls::Tls13,
                },
                sack: t.sack,
                timestamps: t.timestamps,
                delayed_ack: t.delayed_ack,
                delayed_ack_timeout: t.delayed_ack_timeout,
                receive_window_max: t.receive_window_max,
                initial_receive_window: t.initial_receive_window,
                send_buffer: t.send_buffer,
                min_rto: t.min_rto,
                initial_rto: t.initial_rto,
                pep: spec.pep.as_ref().map(|p| PepConfig {
                    buffer: p.buffer,
                    controller: p.cc,
                    receive_window_max: p.receive_window_max,
                    send_buffer: p.send_buffer,
                }),
            };
            let flow = TcpFlow::new(cfg).map_err(|e| SimError::Flow {
                flow: spec.name.clone(),
                message: e.to_string(),
            })?;
            Ok(Box::new(flow))
        }
    }
}
