//! Building a flow's agent and routes from its `FlowSpec` (the "helper" side of the engine:
//! the event loop never looks at scenario knobs).

use netem::LinkConfig;
use scenario::model::{DuplexLink, FlowSpec, FlowTransport, PepPosition};
use transport::agent::{FlowAgent, Side};
use transport::clock::VirtualClock;
use transport::quic::{QuicFlow, QuicFlowConfig};
use transport::quiche::{QuicheFlow, QuicheFlowConfig};
use transport::quicmodel::{QuicModelFlow, QuicModelFlowConfig};
use transport::tcp::{TcpFlow, TcpFlowConfig};
use transport::tls::KeyLogBuffer;

use crate::addr;
use crate::engine::{RunOptions, SimError, BOTTLENECK_DOWN, BOTTLENECK_UP};

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

/// Whether a link on the flow's path (its access links or the bottleneck) may flip bits.
fn flips_bits(spec: &FlowSpec, bottleneck: &DuplexLink) -> bool {
    let flips = |l: &LinkConfig| l.corrupt > 0.0 || l.bit_error_rate > 0.0;
    [bottleneck, &spec.client_access, &spec.server_access]
        .iter()
        .any(|d| flips(&d.up) || flips(&d.down))
}

/// The transport agent of one flow: the flow's plan and its stack's knobs, plus the per-run
/// bits (seed, addresses, qlog directory, key log, clock).
pub(crate) fn build_agent(
    spec: &FlowSpec,
    bottleneck: &DuplexLink,
    index: usize,
    seed: u64,
    clock: &VirtualClock,
    opts: &RunOptions,
    keylog: Option<KeyLogBuffer>,
) -> Result<Box<dyn FlowAgent>, SimError> {
    let failed = |e: &dyn std::fmt::Display| SimError::Flow {
        flow: spec.name.clone(),
        message: e.to_string(),
    };
    Ok(match &spec.transport {
        FlowTransport::Quic(knobs) => Box::new(
            QuicFlow::new(
                QuicFlowConfig {
                    plan: spec.plan(),
                    knobs: *knobs,
                    seed,
                    client_addr: addr::client_addr(index),
                    server_addr: addr::server_addr(index),
                    qlog_dir: opts.qlog_dir.clone(),
                    keylog,
                    bit_errors: flips_bits(spec, bottleneck),
                },
                clock.clone(),
            )
            .map_err(|e| failed(&e))?,
        ),
        FlowTransport::Tcp { knobs, pep } => Box::new(
            TcpFlow::new(TcpFlowConfig {
                plan: spec.plan(),
                knobs: *knobs,
                pep: *pep,
                seed,
            })
            .map_err(|e| failed(&e))?,
        ),
        // Sans-IO and pure: addresses are not its concern (its pcap view is written by
        // `capture`); the seed only feeds the controllers' random choices; its qlogs are a
        // function of the run.
        FlowTransport::QuicModel(knobs) => Box::new(
            QuicModelFlow::new(QuicModelFlowConfig {
                plan: spec.plan(),
                knobs: *knobs,
                seed,
                qlog_dir: opts.qlog_dir.clone(),
            })
            .map_err(|e| failed(&e))?,
        ),
        // quiche's flows write no qlog (their report warns when one was asked for); `capture`
        // writes their pcap as quinn's, their key log goes to the run's.
        FlowTransport::Quiche(knobs) => Box::new(
            QuicheFlow::new(
                QuicheFlowConfig {
                    plan: spec.plan(),
                    knobs: *knobs,
                    seed,
                    client_addr: addr::client_addr(index),
                    server_addr: addr::server_addr(index),
                    keylog,
                    qlog_requested: opts.qlog_dir.is_some(),
                },
                clock.clone(),
            )
            .map_err(|e| failed(&e))?,
        ),
    })
}
