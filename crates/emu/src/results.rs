//! `quiclab get --json` output and the server's statistics lines → the simulator's `FlowResult`.
//!
//! The client's JSON is the contract of `quiclab get`; missing fields become `None`/0 rather
//! than errors, so a partial result (a client stopped at the end of a bulk flow) still counts
//! what it measured.

use ::results::Flow as FlowResult;
use scenario::model::{FlowSpec, Stack, Workload};
use serde_json::Value;

use crate::runner::ClientOutcome;

fn f64_at(v: &Value, path: &[&str]) -> Option<f64> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    cur.as_f64()
}

fn u64_at(v: &Value, path: &[&str]) -> u64 {
    f64_at(v, path).map_or(0, |x| x.max(0.0) as u64)
}

/// Sums a counter over the server's per-connection statistics lines; looks in the nested
/// `quic_stats` / `tcp_info` objects and at the top level.
fn server_sum(stats: &[Value], keys: &[&str]) -> Option<u64> {
    let mut found = false;
    let mut total = 0;
    for line in stats {
        for scope in [
            line.get("transport"),
            line.get("quic_stats"),
            line.get("tcp_info"),
            Some(line),
        ]
        .into_iter()
        .flatten()
        {
            if let Some(x) = keys
                .iter()
                .find_map(|k| scope.get(*k).and_then(Value::as_f64))
            {
                total += x.max(0.0) as u64;
                found = true;
                break;
            }
        }
    }
    found.then_some(total)
}

fn workload_name(w: &Workload) -> &'static str {
    match w {
        Workload::Bulk { upload: true } => "bulk-up",
        Workload::Bulk { upload: false } => "bulk-down",
        Workload::Download { .. } => "download",
    }
}

/// Builds a flow's result from its client's outcome and its server's statistics lines.
pub fn flow_result(f: &FlowSpec, client: ClientOutcome, server_stats: &[Value]) -> FlowResult {
    let j = client.json.unwrap_or(Value::Null);
    let upload = matches!(f.workload, Workload::Bulk { upload: true });
    let bulk = matches!(f.workload, Workload::Bulk { .. });
    let conns: Vec<Value> = j
        .get("connections")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let first = conns.first();
    let last = conns.last();
    let bytes = if upload {
        u64_at(&j, &["bytes_sent"])
    } else {
        u64_at(&j, &["bytes"])
    };
    let ok = j.get("ok").and_then(Value::as_bool).unwrap_or(false);
    let client_error = j.get("error").and_then(Value::as_str).map(str::to_string);
    // A bulk flow ends by the client's timeout at `stop`: that is its normal end, not an error.
    let error = match (client.failure, client_error) {
        (Some(f), _) => Some(f),
        (None, Some(e)) if !(bulk && bytes > 0) => Some(e),
        (None, None) if !ok && !bulk && !j.is_null() => Some("quiclab get reported failure".into()),
        _ => None,
    };
    let completion = if bulk || error.is_some() {
        None
    } else {
        last.and_then(|c| f64_at(c, &["total_s"]))
            .filter(|_| conns.len() > 1)
            .or_else(|| f64_at(&j, &["total_s"]))
    };
    let handshake = first
        .and_then(|c| f64_at(c, &["handshake_s"]))
        .or_else(|| f64_at(&j, &["handshake_s"]));
    let ttfb = first
        .and_then(|c| f64_at(c, &["ttfb_s"]))
        .or_else(|| f64_at(&j, &["ttfb_s"]));
    let goodput = f64_at(&j, &["goodput_bps"]).filter(|g| *g > 0.0);
    // The data sender's view: the server for downloads, the client for uploads.
    let (packets_sent, packets_lost, congestion_events) = if upload {
        (
            u64_at(&j, &["quic_stats", "sent_packets"])
                .max(u64_at(&j, &["tcp_info", "data_segs_out"])),
            u64_at(&j, &["quic_stats", "lost_packets"])
                .max(u64_at(&j, &["tcp_info", "total_retrans"])),
            u64_at(&j, &["quic_stats", "congestion_events"]),
        )
    } else {
        (
            server_sum(server_stats, &["sent_packets", "data_segs_out", "segs_out"]).unwrap_or(0),
            server_sum(server_stats, &["lost_packets", "total_retrans"]).unwrap_or(0),
            server_sum(server_stats, &["congestion_events"]).unwrap_or(0),
        )
    };
    let client_datagrams = u64_at(&j, &["quic_stats", "udp_tx_datagrams"]);
    let server_datagrams = server_sum(server_stats, &["udp_tx_datagrams"]).unwrap_or(0);
    FlowResult {
        name: f.name.clone(),
        stack: f.stack.name().to_string(),
        workload: workload_name(&f.workload).to_string(),
        bytes_delivered: bytes,
        goodput_bps: goodput,
        window_goodput_bps: None,
        window_payload_throughput_bps: None,
        completion_s: completion,
        handshake_s: handshake,
        ttfb_s: ttfb,
        first_congestion_s: None,
        packets_sent,
        packets_lost,
        congestion_events,
        ack_frames_sent: 0,
        max_data_frames_sent: 0,
        max_stream_data_frames_sent: 0,
        payload_rx_bytes: 0,
        datagrams_sent: [client_datagrams, server_datagrams],
        final_mtu: match f.stack {
            Stack::Quic => f.quic.mtu,
            Stack::Tcp => f.tcp.mtu,
        },
        connections: Vec::new(),
        error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scenario::builder;

    fn flow() -> FlowSpec {
        let w = Workload::Download {
            size: 1_000_000,
            streams: 1,
            connections: 1,
        };
        builder::flow("d", w, 1500, builder::cubic_hystart())
    }

    #[test]
    fn a_successful_get_fills_the_timings() {
        let j: Value = serde_json::from_str(
            r#"{"ok":true,"bytes":1000000,"bytes_sent":0,"handshake_s":0.011,"ttfb_s":0.02,
                "total_s":0.9,"goodput_bps":8.9e6,"connections":[{"handshake_s":0.011,"ttfb_s":0.02,"total_s":0.9,"bytes":1000000}],
                "quic_stats":{"udp_tx_datagrams":120},"error":null}"#,
        )
        .expect("json");
        let server: Vec<Value> = vec![
            serde_json::json!({"quic_stats":{"sent_packets":800,"lost_packets":3,"udp_tx_datagrams":790}}),
        ];
        let r = flow_result(
            &flow(),
            ClientOutcome {
                json: Some(j),
                failure: None,
            },
            &server,
        );
        assert_eq!(r.bytes_delivered, 1_000_000);
        assert_eq!(r.completion_s, Some(0.9));
        assert_eq!(r.handshake_s, Some(0.011));
        assert_eq!((r.packets_sent, r.packets_lost), (800, 3));
        assert_eq!(r.datagrams_sent, [120, 790]);
        assert!(r.error.is_none());
    }

    #[test]
    fn a_missing_result_is_an_error_not_a_number() {
        let r = flow_result(
            &flow(),
            ClientOutcome {
                json: None,
                failure: Some("did not finish".into()),
            },
            &[],
        );
        assert_eq!(r.completion_s, None);
        assert_eq!(r.error.as_deref(), Some("did not finish"));
    }
}
