//! The endpoints' own typed reports → the results schema.
//!
//! The client's [`FetchReport`] (`quiclab get --json`) and the server's [`ConnectionRecord`]s
//! (`quiclab serve --stats-file`) are read back into the types the endpoints wrote. Each field of
//! [`Flow`] is taken from what the real stack exposes (quinn's `ConnectionStats`, the kernel's
//! `TCP_INFO`), at the data sender or the data receiver as the field's definition says; a field
//! the stack does not expose, or a report that is missing, leaves the value absent.

use ::results::fairness::Fairness;
use ::results::{Connection, Flow, FlowConfig};
use endpoints::fetch::FetchReport;
use endpoints::server::stats_log::ConnectionRecord;
use endpoints::stats::{QuicStatsSnapshot, TcpInfoSnapshot, TransportSnapshot};
use scenario::model::{FlowSpec, FlowTransport, Scenario, Workload};
use scenario::Choice;

/// What one client produced.
#[derive(Debug, Clone, Default)]
pub struct ClientOutcome {
    /// Its `quiclab get --json` report.
    pub report: Option<FetchReport>,
    /// Why there is no usable result (exit failure, no report, killed at the end of the run).
    pub failure: Option<String>,
    /// When the runner saw the client exit (or gave up on it), s from the run's start.
    pub exited_s: f64,
}

/// One counter summed over a side's connections: absent when there is no snapshot or the
/// stack does not expose the counter (`None` from the getter).
fn sum(
    snaps: &[&TransportSnapshot],
    quic: fn(&QuicStatsSnapshot) -> Option<u64>,
    tcp: fn(&TcpInfoSnapshot) -> Option<u64>,
) -> Option<u64> {
    if snaps.is_empty() {
        return None;
    }
    snaps
        .iter()
        .map(|s| match s {
            TransportSnapshot::Quic(q) => quic(q),
            TransportSnapshot::Tcp(t) => tcp(t),
        })
        .sum()
}

/// When a flow's last byte arrived, s from the run's start (`t0_unix_s`): the client's own
/// timeline, so the time its process takes to exit afterwards does not count. Falls back to
/// when the runner saw the client exit.
pub fn flow_end_s(client: &ClientOutcome, t0_unix_s: f64) -> f64 {
    client
        .report
        .as_ref()
        .filter(|r| r.start_unix_s > 0.0)
        .map_or(client.exited_s, |r| {
            (r.start_unix_s - t0_unix_s).max(0.0) + r.total_s
        })
}

/// The qlog problems the flow's client and server reported.
pub fn qlog_errors(
    f: &FlowSpec,
    client: &ClientOutcome,
    server: &[ConnectionRecord],
) -> Vec<String> {
    let from_client = client.report.iter().flat_map(|r| &r.qlog_errors);
    let from_server = server.iter().flat_map(|r| &r.qlog_errors);
    from_client
        .map(|e| format!("flow {} client: {e}", f.name))
        .chain(from_server.map(|e| format!("flow {} server: {e}", f.name)))
        .collect()
}

/// Builds a flow's result from its client's outcome and its server's connection records;
/// `t0_unix_s` is the run's start on the wall clock; `kernel` is the TCP configuration read back
/// from the flow's namespaces (see [`crate::runner`]), completed here with the controller the
/// data sender's `TCP_INFO` names.
pub fn flow_result(
    f: &FlowSpec,
    client: &ClientOutcome,
    server: &[ConnectionRecord],
    t0_unix_s: f64,
    kernel: Option<FlowConfig>,
) -> Flow {
    let report = client.report.as_ref();
    let upload = matches!(f.workload, Workload::Bulk { upload: true });
    let bulk = matches!(f.workload, Workload::Bulk { .. });
    let conns = report.map(|r| r.connections.as_slice()).unwrap_or(&[]);
    let server_received: u64 = server.iter().map(|r| r.body_bytes_received).sum();
    let bytes = match report {
        // What reached the server's application, when it said so.
        _ if upload && !server.is_empty() => server_received,
        Some(r) if upload => r.bytes_sent,
        Some(r) => r.bytes,
        None => 0,
    };
    // A bulk flow ends by the client's timeout at `stop`: that is its normal end, not an error.
    let error = match (&client.failure, report) {
        (Some(f), _) => Some(f.clone()),
        (None, Some(r)) => match &r.error {
            Some(e) if !(bulk && bytes > 0) => Some(e.clone()),
            None if !r.ok && !bulk => Some("quiclab get reported failure".into()),
            _ => None,
        },
        (None, None) => None,
    };
    let complete = !bulk && error.is_none();
    let completion = report.filter(|_| complete).map(|r| match conns {
        [_, .., last] => last.total_s,
        _ => r.total_s,
    });
    let first = conns.first();
    let handshake = first
        .and_then(|c| c.handshake_s)
        .or_else(|| report.and_then(|r| r.handshake_s));
    let ttfb = first
        .and_then(|c| c.ttfb_s)
        .or_else(|| report.and_then(|r| r.ttfb_s));
    let client_snaps: Vec<&TransportSnapshot> =
        conns.iter().filter_map(|c| c.transport.as_ref()).collect();
    let server_snaps: Vec<&TransportSnapshot> =
        server.iter().filter_map(|r| r.transport.as_ref()).collect();
    let (sender, receiver) = if upload {
        (&client_snaps, &server_snaps)
    } else {
        (&server_snaps, &client_snaps)
    };
    let config = match &f.transport {
        // The endpoints build exactly the flow's controller (the simulator's factory).
        // Tokens as read back: whether the client received any NEW_TOKEN frame (absent
        // without a QUIC snapshot).
        FlowTransport::Quic(q) => Some(FlowConfig {
            address_token: client_snaps
                .iter()
                .filter_map(|s| match s {
                    TransportSnapshot::Quic(q) => Some(q.new_token_frames_rx > 0),
                    TransportSnapshot::Tcp(_) => None,
                })
                .reduce(|a, b| a || b),
            ..transport::linux_config::quic_record(&f.cc, q.common.address_token)
        }),
        FlowTransport::Tcp { .. } => kernel.map(|mut k| {
            k.cc = sender.iter().find_map(|s| match s {
                TransportSnapshot::Tcp(t) if !t.congestion.is_empty() => Some(t.congestion.clone()),
                _ => None,
            });
            k
        }),
        // Refused by `mapping::check_supported`: there is no real stack to record.
        FlowTransport::QuicModel(_) | FlowTransport::Quiche(_) => None,
    };
    let flow_start_s = report
        .filter(|r| r.start_unix_s > 0.0)
        .map_or(0.0, |r| (r.start_unix_s - t0_unix_s).max(0.0));
    Flow {
        name: f.name.clone(),
        stack: f.stack().name().to_string(),
        workload: f.workload.name().to_string(),
        bytes_delivered: bytes,
        goodput_bps: report.map(|r| r.goodput_bps).filter(|g| *g > 0.0),
        // Set for the whole run by `window_fairness` once the run's end is known.
        window_goodput_bps: None,
        window_payload_throughput_bps: None,
        // Set by `window_fairness`, once every flow's window goodput is known.
        share: None,
        completion_s: completion,
        handshake_s: handshake,
        ttfb_s: ttfb,
        first_congestion_s: None,
        packets_sent: sum(
            sender,
            |q| Some(q.sent_packets),
            |t| Some(u64::from(t.data_segs_out)),
        ),
        packets_lost: sum(
            sender,
            |q| Some(q.lost_packets),
            |t| Some(u64::from(t.total_retrans)),
        ),
        congestion_events: sum(sender, |q| Some(q.congestion_events), |_| None),
        ack_frames_sent: sum(receiver, |q| Some(q.ack_frames_tx), |_| None),
        max_data_frames_sent: sum(receiver, |q| Some(q.max_data_frames_tx), |_| Some(0)),
        max_stream_data_frames_sent: sum(
            receiver,
            |q| Some(q.max_stream_data_frames_tx),
            |_| Some(0),
        ),
        // TCP_INFO counts only in-order progress, not segment data with retransmissions.
        payload_rx_bytes: sum(receiver, |q| Some(q.udp_rx_bytes), |_| None),
        datagrams_sent: [
            sum(
                &client_snaps,
                |q| Some(q.udp_tx_datagrams),
                |t| Some(u64::from(t.segs_out)),
            ),
            sum(
                &server_snaps,
                |q| Some(q.udp_tx_datagrams),
                |t| Some(u64::from(t.segs_out)),
            ),
        ],
        final_mtu: sender.last().map(|s| match s {
            TransportSnapshot::Quic(q) => q.current_mtu,
            TransportSnapshot::Tcp(t) => u16::try_from(t.snd_mss).unwrap_or(u16::MAX),
        }),
        connections: conns
            .iter()
            .map(|c| Connection {
                started_s: flow_start_s + c.started_s,
                handshake_s: c.handshake_s,
                time_to_first_byte_s: c.ttfb_s,
                completion_s: Some(c.total_s).filter(|_| complete),
                zero_rtt_accepted: c.zero_rtt,
                bytes_delivered: Some(if upload { c.bytes_sent } else { c.bytes }),
                goodput_bps: None,
            })
            .map(|mut c| {
                c.goodput_bps = c.goodput();
                c
            })
            .collect(),
        error,
        config,
        // The research model runs only in the simulator.
        model: None,
        // Kernel TCP tells whether ECN was negotiated; neither it nor quinn's statistics count
        // CE marks received or reductions for them.
        // The forwarder sees a flow's packets at one point of the path, not at both ends.
        one_way_delay: None,
        ecn: f.tcp().filter(|t| t.ecn).map(|_| results::EcnFlow {
            capable: sender
                .iter()
                .any(|s| matches!(s, TransportSnapshot::Tcp(t) if t.ecn)),
            ce_received: None,
            ce_congestion_events: None,
        }),
    }
}

/// Window goodput, each flow's share and Jain's index for the emulator's flows, with the
/// simulator's definitions ([`::results::fairness`]). The emulator takes no marks inside the
/// run, so it knows each flow's bytes over the whole run only: without a measurement window
/// (`run.measure_from` = 0, no `run.measure_until`) the window is the whole run, as in the
/// simulator, and a flow's window goodput is its bytes × 8 / the run's end (`end_s`, the last
/// flow's last byte). With a window set the figures stay absent, and the returned warning says
/// why. Per-bin figures are absent: the emulator records no time series.
pub fn window_fairness(
    flows: &mut [Flow],
    s: &Scenario,
    end_s: f64,
) -> (Option<Fairness>, Option<String>) {
    let whole_run = s.measure_from.is_zero() && s.measure_until.is_none();
    if whole_run && end_s > 0.0 {
        for f in flows.iter_mut() {
            f.window_goodput_bps = Some(f.bytes_delivered as f64 * 8.0 / end_s);
        }
    }
    let warning = (!whole_run && flows.len() > 1).then(|| {
        "window goodput, shares and Jain's index are absent: the emulator measures each flow \
         over the whole run only (no marks at run.measure_from / run.measure_until)"
            .to_string()
    });
    let Some((fairness, shares)) = ::results::fairness::fairness(flows, &[], 0.0, end_s) else {
        return (None, warning);
    };
    for (f, share) in flows.iter_mut().zip(shares.into_iter().flatten()) {
        f.share = Some(share);
    }
    (Some(fairness), warning)
}

#[cfg(test)]
mod tests {
    use super::*;
    use endpoints::fetch::ConnectionReport;
    use scenario::builder;

    fn flow() -> FlowSpec {
        let w = Workload::Download {
            size: 1_000_000,
            streams: 1,
            connections: 1,
        };
        builder::flow("d", w, 1500, builder::cubic_hystart())
    }

    fn quic(f: impl FnOnce(&mut QuicStatsSnapshot)) -> Option<TransportSnapshot> {
        let mut q = QuicStatsSnapshot::default();
        f(&mut q);
        Some(TransportSnapshot::Quic(q))
    }

    fn server_record(transport: Option<TransportSnapshot>) -> ConnectionRecord {
        ConnectionRecord {
            unix_time_s: 101.0,
            http: "3".into(),
            peer: "10.99.1.1:5000".parse().expect("addr"),
            requests: 1,
            body_bytes_sent: 1_000_000,
            body_bytes_received: 0,
            duration_s: 0.95,
            transport,
            qlog_errors: Vec::new(),
        }
    }

    /// A download's report as `quiclab get --json` writes it, through JSON and back.
    fn client_report() -> FetchReport {
        let r = FetchReport {
            http: "3".into(),
            ok: true,
            start_unix_s: 100.25,
            bytes: 1_000_000,
            handshake_s: Some(0.011),
            ttfb_s: Some(0.02),
            total_s: 0.9,
            goodput_bps: 8.9e6,
            connections: vec![ConnectionReport {
                handshake_s: Some(0.011),
                ttfb_s: Some(0.02),
                total_s: 0.9,
                bytes: 1_000_000,
                requests: 1,
                transport: quic(|q| {
                    q.udp_tx_datagrams = 120;
                    q.udp_rx_bytes = 1_030_000;
                    q.ack_frames_tx = 110;
                    q.max_stream_data_frames_tx = 4;
                }),
                ..ConnectionReport::default()
            }],
            ..FetchReport::default()
        };
        let text = serde_json::to_string(&r).expect("serialise");
        serde_json::from_str(&text).expect("the emulator reads what get writes")
    }

    fn two_flows(bytes: [u64; 2]) -> Vec<Flow> {
        bytes
            .iter()
            .enumerate()
            .map(|(i, &b)| Flow {
                name: format!("f{i}"),
                bytes_delivered: b,
                ..Flow::default()
            })
            .collect()
    }

    fn scenario_of(flows: usize) -> Scenario {
        builder::scenario(
            "s",
            builder::link(10_000_000, std::time::Duration::from_millis(5), Some(25)),
            (0..flows).map(|_| flow()).collect(),
            std::time::Duration::from_secs(10),
        )
    }

    #[test]
    fn fairness_over_the_whole_run_as_the_simulator_defines_it() {
        let mut flows = two_flows([3_000_000, 1_000_000]);
        let (f, warning) = window_fairness(&mut flows, &scenario_of(2), 2.0);
        assert_eq!(warning, None);
        let f = f.expect("two flows");
        assert!((f.jain.expect("jain") - 0.8).abs() < 1e-12);
        // No time series in the emulator: no per-bin figures.
        assert_eq!((f.jain_bins_mean, f.bins), (None, None));
        assert_eq!(flows[0].window_goodput_bps, Some(12e6));
        assert_eq!(flows[1].window_goodput_bps, Some(4e6));
        assert_eq!((flows[0].share, flows[1].share), (Some(0.75), Some(0.25)));
    }

    #[test]
    fn a_measurement_window_leaves_fairness_absent_with_a_reason() {
        let mut s = scenario_of(2);
        s.measure_from = std::time::Duration::from_secs(1);
        let mut flows = two_flows([3_000_000, 1_000_000]);
        let (f, warning) = window_fairness(&mut flows, &s, 2.0);
        assert!(warning.expect("a reason").contains("whole run only"));
        assert_eq!(f.and_then(|f| f.jain), None);
        assert!(flows
            .iter()
            .all(|f| f.share.is_none() && f.window_goodput_bps.is_none()));
        // One flow: nothing to compare, but its whole-run goodput is still there.
        let mut one = two_flows([1_000_000, 0])[..1].to_vec();
        assert_eq!(
            window_fairness(&mut one, &scenario_of(1), 2.0),
            (None, None)
        );
        assert_eq!(one[0].window_goodput_bps, Some(4e6));
    }

    #[test]
    fn a_quic_download_takes_each_counter_from_its_side() {
        let client = ClientOutcome {
            report: Some(client_report()),
            failure: None,
            exited_s: 1.6,
        };
        let server = [server_record(quic(|q| {
            q.sent_packets = 800;
            q.lost_packets = 3;
            q.congestion_events = 1;
            q.udp_tx_datagrams = 790;
            q.current_mtu = 1452;
        }))];
        let r = flow_result(&flow(), &client, &server, 100.0, None);
        assert_eq!(r.bytes_delivered, 1_000_000);
        assert_eq!(r.completion_s, Some(0.9));
        assert_eq!(r.handshake_s, Some(0.011));
        // Data sender: the server.
        assert_eq!((r.packets_sent, r.packets_lost), (Some(800), Some(3)));
        assert_eq!(r.congestion_events, Some(1));
        assert_eq!(r.final_mtu, Some(1452));
        // Data receiver: the client.
        assert_eq!(r.ack_frames_sent, Some(110));
        assert_eq!(r.max_stream_data_frames_sent, Some(4));
        assert_eq!(r.payload_rx_bytes, Some(1_030_000));
        assert_eq!(r.datagrams_sent, [Some(120), Some(790)]);
        assert_eq!(r.connections.len(), 1);
        assert_eq!(r.connections[0].started_s, 0.25);
        assert_eq!(r.connections[0].bytes_delivered, Some(1_000_000));
        assert_eq!(r.connections[0].goodput_bps, Some(8e6 / 0.9));
        // Not measured by the emulator; the window goodput is `window_fairness`'s.
        assert_eq!(r.first_congestion_s, None);
        assert_eq!(r.window_goodput_bps, None);
        assert!(r.error.is_none());
        // The last byte, not the client's exit, ends the flow.
        assert!((flow_end_s(&client, 100.0) - 1.15).abs() < 1e-9);
    }

    #[test]
    fn kernel_tcp_leaves_what_tcp_info_lacks_absent() {
        let f = flow();
        let f = builder::tcp_flow(&f.name, f.workload, f.mtu(), f.cc);
        let tcp = |segs_out, data_segs_out, total_retrans| {
            Some(TransportSnapshot::Tcp(TcpInfoSnapshot {
                segs_out,
                data_segs_out,
                total_retrans,
                snd_mss: 1448,
                ..TcpInfoSnapshot::default()
            }))
        };
        let mut report = client_report();
        report.connections[0].transport = tcp(300, 1, 0);
        let client = ClientOutcome {
            report: Some(report),
            ..ClientOutcome::default()
        };
        let r = flow_result(&f, &client, &[server_record(tcp(700, 690, 5))], 100.0, None);
        assert_eq!((r.packets_sent, r.packets_lost), (Some(690), Some(5)));
        assert_eq!(r.final_mtu, Some(1448));
        assert_eq!(r.datagrams_sent, [Some(300), Some(700)]);
        assert_eq!(r.congestion_events, None, "TCP_INFO has no such counter");
        assert_eq!(r.ack_frames_sent, None);
        assert_eq!(r.payload_rx_bytes, None);
        assert_eq!(r.max_data_frames_sent, Some(0), "TCP has no MAX_DATA frame");
    }

    #[test]
    fn a_missing_result_is_an_error_not_a_number() {
        let client = ClientOutcome {
            report: None,
            failure: Some("did not finish".into()),
            exited_s: 7.0,
        };
        let r = flow_result(&flow(), &client, &[], 0.0, None);
        assert_eq!(r.completion_s, None);
        assert_eq!(r.packets_sent, None);
        assert_eq!(r.datagrams_sent, [None, None]);
        assert_eq!(r.error.as_deref(), Some("did not finish"));
        assert_eq!(flow_end_s(&client, 0.0), 7.0);
    }

    #[test]
    fn qlog_problems_name_their_flow_and_endpoint() {
        let mut report = client_report();
        report.qlog_errors = vec!["cannot create qlog /x".into()];
        let client = ClientOutcome {
            report: Some(report),
            ..ClientOutcome::default()
        };
        let mut rec = server_record(None);
        rec.qlog_errors = vec!["qlog /y not fully written".into()];
        assert_eq!(
            qlog_errors(&flow(), &client, &[rec]),
            [
                "flow d client: cannot create qlog /x",
                "flow d server: qlog /y not fully written"
            ]
        );
    }
}
