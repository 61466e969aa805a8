//! From the engine's state at the end of a run to the results schema: per-flow figures from the
//! agents' reports and the engine's own counters, link figures from netem's counters.
//!
//! The run's identity is not known here: [`crate::run`] attaches it.

use scenario::Choice;
use std::collections::BTreeMap;
use std::time::Duration;

use results::{Cross, Flow, ModelFlow, Run};
use scenario::model::FlowTransport;
use transport::agent::ModelMetrics;

use crate::engine::{FlowSlot, Sim, SimError, BOTTLENECK_DOWN, BOTTLENECK_UP};

/// One flow's results, and its problems as run warnings naming the flow; `window` is the
/// measurement window's length in seconds.
fn flow(slot: &FlowSlot, window: f64) -> (Flow, Vec<String>) {
    let mut report = slot.agent.report();
    let warnings = std::mem::take(&mut report.warnings)
        .into_iter()
        .map(|w| format!("flow {}: {w}", slot.name))
        .collect();
    let delivered_now = slot.agent.delivered_bytes();
    let udp_now = slot.udp_rx[slot.receiver.index()];
    let rate = |a: Option<u64>, b: Option<u64>, now: u64| -> Option<f64> {
        let start = a?;
        let stop = b.unwrap_or(now);
        (window > 0.0).then(|| (stop - start) as f64 * 8.0 / window)
    };
    let goodput = match (report.first_packet_s, report.last_byte_s) {
        (Some(a), Some(b)) if b > a => Some(report.bytes_delivered as f64 * 8.0 / (b - a)),
        _ => None,
    };
    let first_conn = report.connections.first();
    // quiche counts packets sent and lost, but not congestion events or the frames it sends.
    let quiche = matches!(slot.spec.transport, FlowTransport::Quiche(_));
    let unless_quiche = |v: u64| (!quiche).then_some(v);
    let flow = Flow {
        name: slot.name.clone(),
        stack: slot.spec.stack().name().into(),
        workload: slot.spec.workload.name().to_string(),
        bytes_delivered: report.bytes_delivered,
        goodput_bps: goodput,
        window_goodput_bps: rate(
            slot.mark_delivered[0],
            slot.mark_delivered[1],
            delivered_now,
        ),
        window_payload_throughput_bps: rate(slot.mark_udp[0], slot.mark_udp[1], udp_now),
        // Set for the whole run in `finish`, once every flow's window goodput is known.
        share: None,
        completion_s: flow_completion(&report.connections),
        handshake_s: first_conn.and_then(|c| c.handshake_s),
        ttfb_s: first_conn.and_then(|c| c.time_to_first_byte_s),
        first_congestion_s: report.first_congestion_s,
        // The simulator observes every counter of its own agents.
        packets_sent: Some(report.packets_sent),
        packets_lost: Some(report.packets_lost),
        congestion_events: unless_quiche(report.congestion_events),
        ack_frames_sent: unless_quiche(report.ack_frames_sent),
        max_data_frames_sent: unless_quiche(report.max_data_frames_sent),
        max_stream_data_frames_sent: unless_quiche(report.max_stream_data_frames_sent),
        payload_rx_bytes: Some(udp_now),
        datagrams_sent: [Some(slot.datagrams_sent[0]), Some(slot.datagrams_sent[1])],
        final_mtu: Some(report.final_mtu),
        connections: report
            .connections
            .into_iter()
            .map(|mut c| {
                c.goodput_bps = c.goodput();
                c
            })
            .collect(),
        error: report.error,
        config: Some(match &slot.spec.transport {
            FlowTransport::Quic(k) => {
                transport::linux_config::quic_record(&slot.spec.cc, k.common.address_token)
            }
            FlowTransport::Tcp { knobs, .. } => {
                transport::linux_config::tcp_record(&slot.spec.cc, knobs)
            }
            // The model runs the `congestion` crate's controllers as quinn's stack runs them.
            FlowTransport::QuicModel(k) => {
                transport::linux_config::quic_record(&slot.spec.cc, k.common.address_token)
            }
            // quiche's server sends no NEW_TOKEN frames.
            FlowTransport::Quiche(_) => transport::linux_config::quic_record(&slot.spec.cc, false),
        }),
        model: report
            .model
            .as_ref()
            .map(|m| model_flow(m, report.ack_frames_sent)),
        one_way_delay: slot.one_way_delay.summary(),
        ecn: report.ecn.map(|e| results::EcnFlow {
            capable: e.capable,
            ce_received: Some(e.ce_received),
            ce_congestion_events: Some(e.ce_congestion_events),
        }),
    };
    (flow, warnings)
}

/// Completion of the whole flow, s from its first packet: the last connection's last byte. One
/// connection: its own `completion_s` (the same double, so single-connection values do not move).
fn flow_completion(conns: &[results::Connection]) -> Option<f64> {
    let (first, last) = (conns.first()?, conns.last()?);
    let done = last.completion_s?;
    if conns.len() == 1 {
        return Some(done);
    }
    Some(last.started_s - first.started_s + done)
}

/// The research model's own figures; `ack_frames_sent` is the receiver's count of the common
/// report, which the achieved ACK ratio divides by.
fn model_flow(m: &ModelMetrics, ack_frames_sent: u64) -> ModelFlow {
    ModelFlow {
        ack_frames_received: m.ack_frames_received,
        ack_eliciting_received: m.ack_eliciting_received,
        achieved_ack_ratio: (ack_frames_sent > 0)
            .then(|| m.ack_eliciting_received as f64 / ack_frames_sent as f64),
        data_blocked_frames_sent: m.data_blocked_frames_sent,
        stream_data_blocked_frames_sent: m.stream_data_blocked_frames_sent,
        ibit_packets_sent: m.ibit_packets_sent,
        ack_frequency_frames_sent: m.ack_frequency_frames_sent,
        cwnd_limited_s: m.cwnd_limited_s,
        flow_control_limited_s: m.flow_control_limited_s,
        app_limited_s: m.app_limited_s,
        first_stream_completion_s: m.first_stream_completion_s,
        mean_stream_completion_s: m.mean_stream_completion_s,
    }
}

impl Sim {
    /// Closes the trace outputs and assembles the measurement of a run that ended at `end`.
    pub(crate) fn finish(mut self, end: Duration) -> Result<Run, SimError> {
        if let Some(cap) = self.pcap.take() {
            cap.finish(self.keylog.as_ref())?;
        }
        let end_s = end.as_secs_f64();
        let until = self.measure_until.unwrap_or(end).min(end);
        let window = until.saturating_sub(self.measure_from).as_secs_f64();
        let mut warnings = Vec::new();
        let mut flows = Vec::new();
        for slot in &self.flows {
            let (f, flow_warnings) = flow(slot, window);
            warnings.extend(flow_warnings);
            flows.push(f);
        }
        let mut links = BTreeMap::new();
        for (name, l, i) in [
            ("bottleneck_up", BOTTLENECK_UP, 0),
            ("bottleneck_down", BOTTLENECK_DOWN, 1),
        ] {
            let stats = self.links[l].stats();
            links.insert(
                name.to_string(),
                stats.to_result(end_s, self.corrupt_header_drops[i]),
            );
        }
        let cross = self
            .cross
            .iter()
            .map(|c| Cross {
                name: c.spec().name.clone(),
                sent_packets: c.sent_packets,
                sent_bytes: c.sent_bytes,
                delivered_packets: c.delivered_packets,
            })
            .collect();
        let probes = self
            .probes
            .iter()
            .map(|p| p.log.to_result(&p.spec, &self.flows[p.spec.flow].name))
            .collect();
        let fairness = match results::fairness::fairness(
            &flows,
            &self.series,
            self.measure_from.as_secs_f64(),
            until.as_secs_f64(),
        ) {
            Some((f, shares)) => {
                for (flow, share) in flows.iter_mut().zip(shares.into_iter().flatten()) {
                    flow.share = Some(share);
                }
                Some(f)
            }
            None => None,
        };
        Ok(Run {
            end_s,
            events: Some(self.processed),
            flows,
            links,
            cross,
            probes,
            fairness,
            series: std::mem::take(&mut self.series),
            warnings,
            ..Run::default()
        })
    }
}
