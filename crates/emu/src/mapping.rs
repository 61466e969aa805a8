//! From a scenario flow to the typed configurations of `quiclab serve`, `quiclab get` (and,
//! in [`crate::pep`], `quiclab pep`), and the check that the emulator can reproduce every
//! feature the scenario uses.
//!
//! Features the emulator cannot reproduce fail with the scenario key that asks for them;
//! features it can only approximate (the kernel's own controller details) are accepted with a
//! warning, so nothing is silently ignored.
//!
//! A QUIC flow's knobs reach the endpoints whole: their configuration carries the flow's
//! `QuicKnobs` and controller, which the endpoints build into quinn's config with the
//! simulator's builder and check against the scenario's bounds. Kernel TCP is configured in
//! [`crate::kernel_tcp`].

use std::net::Ipv4Addr;
use std::time::Duration;

use endpoints::client::{ClientConfig, HttpVersion};
use endpoints::fetch::FetchOptions;
use endpoints::server::{Protocols, ServerConfig};
use endpoints::QuicConfig;
use netem::config::RateProfile;
use scenario::model::{CcChoice, FlowSpec, Scenario, Stack, TlsMode, Workload};
use serde::Serialize;
use serde_json::Value;

use congestion::config::CcConfig;

use crate::error::EmuError;
use crate::kernel_tcp;

/// Port every server listens on (TCP and UDP).
pub const SERVER_PORT: u16 = 4433;

pub(crate) fn unsupported(key: &str, why: impl Into<String>) -> EmuError {
    EmuError::UnsupportedScenario {
        key: key.to_string(),
        why: why.into(),
    }
}

/// Words of a warning about a knob the emulator accepts but does not apply at all (the run
/// would measure the default under the knob's name), as opposed to one it applies differently.
pub const NOT_APPLIED: &str = "is not applied";

/// Checks every scenario feature; returns warnings about approximations (those containing
/// [`NOT_APPLIED`] name a knob that has no effect).
pub fn check_supported(s: &Scenario) -> Result<Vec<String>, EmuError> {
    let mut warnings = Vec::new();
    if s.flows.is_empty() {
        return Err(unsupported("flow", "the scenario has no flow"));
    }
    if s.flows.len() > 16 {
        return Err(unsupported(
            "flow.count",
            "at most 16 flows (the test certificate names 10.99.2.1–16)",
        ));
    }
    for f in &s.flows {
        check_flow(f, &mut warnings)?;
    }
    Ok(warnings)
}

/// The QUIC research model has no real-time counterpart: no stack on the wire speaks it, and
/// its knobs are exactly what production stacks do not expose.
fn model_refused() -> EmuError {
    unsupported(
        "flow.stack",
        "\"quic-model\" is quiclab's QUIC research model, which runs only in the simulator (virtual time): no real QUIC stack has its knobs (receiver ACK ratio, I-bit, flow-control update policy); use `quiclab sim`, or stack = \"quic\" for quinn",
    )
}

fn quiche_refused() -> EmuError {
    unsupported(
        "flow.stack",
        "\"quiche\" runs only in the simulator: the emulator's real endpoints are quinn (HTTP/3) and Linux TCP, and quiclab has no quiche endpoint; use `quiclab sim`, or stack = \"quic\" for quinn",
    )
}

fn check_flow(f: &FlowSpec, warnings: &mut Vec<String>) -> Result<(), EmuError> {
    // Access links (`flow.client_access.*`, `flow.server_access.*`) are the forwarder's: every
    // `netem` link knob works there as on the bottleneck.
    crate::pep::check(f, warnings)?;
    match f.stack() {
        Stack::Quic => {
            if f.cc == CcChoice::Ours(CcConfig::None) {
                return Err(unsupported(
                    "flow.cc",
                    "`none` exists only in the simulator",
                ));
            }
            // The endpoints' own check, with the scenario's key: every knob reaches quinn.
            quic_config(f).validate().map_err(|e| match e {
                endpoints::quic::QuicSetupError::Knob(k) => {
                    unsupported(&format!("flow.{}", k.field), k.message)
                }
                other => unsupported("flow", other.to_string()),
            })
        }
        Stack::Tcp => kernel_tcp::check(f, warnings),
        Stack::QuicModel => Err(model_refused()),
        Stack::Quiche => Err(quiche_refused()),
    }
}

/// The scenario key of the first knob of `knobs`, outside `applied`, that differs from the
/// type's default. Knob field names are scenario keys, so a new knob is checked without a
/// line here.
pub(crate) fn first_unapplied<T: Serialize + Default>(
    knobs: &T,
    applied: &[&str],
) -> Option<String> {
    let (Ok(Value::Object(set)), Ok(Value::Object(default))) = (
        serde_json::to_value(knobs),
        serde_json::to_value(T::default()),
    ) else {
        return Some("flow".into());
    };
    set.iter()
        .find(|(field, v)| !applied.contains(&field.as_str()) && default.get(*field) != Some(*v))
        .map(|(field, _)| format!("flow.{field}"))
}

/// The HTTP version a flow uses: HTTP/3 for QUIC, HTTP/2 or HTTP/1.1 for TCP.
pub fn http_version(f: &FlowSpec) -> HttpVersion {
    match f.stack() {
        // The model is refused by `check_supported`; it would speak HTTP/3 like quinn.
        Stack::Quic | Stack::QuicModel | Stack::Quiche => HttpVersion::H3,
        Stack::Tcp if f.tcp().is_some_and(|t| t.http1_parallel().is_some()) => HttpVersion::H1,
        Stack::Tcp => HttpVersion::H2,
    }
}

/// A QUIC flow's endpoint configuration: its knobs and controller as the scenario set them.
/// A 0-RTT request is answered before the handshake completes, as the simulator's quinn
/// server does (off otherwise: see [`QuicConfig::early_response`]; safe with every client
/// since the server waits for the whole ClientHello).
pub fn quic_config(f: &FlowSpec) -> QuicConfig {
    QuicConfig {
        knobs: f.quic().copied().unwrap_or_default(),
        cc: f.cc,
        early_response: f.quic().is_some_and(|q| q.common.zero_rtt),
        ..QuicConfig::default()
    }
}

/// The kernel controller of a TCP flow's sockets (`None` for QUIC).
fn tcp_cc(f: &FlowSpec) -> Result<Option<String>, EmuError> {
    match f.stack() {
        Stack::Tcp => Ok(Some(kernel_tcp::controller(f)?.to_string())),
        Stack::Quic => Ok(None),
        Stack::QuicModel => Err(model_refused()),
        Stack::Quiche => Err(quiche_refused()),
    }
}

/// The configuration of `quiclab serve` for a flow's server at `addr` (the emulator adds the
/// run's files: statistics, key log, qlog directory).
pub fn server_config(f: &FlowSpec, addr: Ipv4Addr) -> Result<ServerConfig, EmuError> {
    let version = http_version(f);
    Ok(ServerConfig {
        listen: (addr, SERVER_PORT).into(),
        protocols: Protocols {
            h1: version == HttpVersion::H1,
            h2: version == HttpVersion::H2,
            h3: version == HttpVersion::H3,
        },
        tcp_cc: tcp_cc(f)?,
        quic: quic_config(f),
        // The scenario bounds the transfer (a bulk flow asks for more than the link carries),
        // and the server answers only its own client in a private namespace: serve's safety
        // caps for shared hosts would cut flows short, so lift them.
        max_response_size: None,
        max_streams: 1024,
        ..ServerConfig::default()
    })
}

/// Bytes a bulk flow requests: more than the link can carry in the flow's time, so the
/// transfer is still running when the client stops it.
fn bulk_bytes(f: &FlowSpec, s: &Scenario, seconds: f64) -> u64 {
    let link = if matches!(f.workload, Workload::Bulk { upload: true }) {
        &s.bottleneck.up
    } else {
        &s.bottleneck.down
    };
    let peak = match &link.rate {
        RateProfile::Fixed(r) => *r,
        RateProfile::Schedule { steps, .. } => steps.iter().map(|(_, r)| *r).max().unwrap_or(0),
        RateProfile::Unlimited => 10_000_000_000,
    };
    ((peak as f64 / 8.0 * seconds * 2.0) as u64).max(1_000_000)
}

/// The configuration of `quiclab get` for a flow against server `addr`, with `seconds` to
/// finish (the emulator adds the run's files).
pub fn fetch_options(
    f: &FlowSpec,
    s: &Scenario,
    addr: Ipv4Addr,
    seconds: f64,
) -> Result<FetchOptions, EmuError> {
    let (path, streams, connections, upload) = match f.workload {
        Workload::Download {
            size,
            streams,
            connections,
        } => (
            size.to_string(),
            streams as usize,
            connections as usize,
            None,
        ),
        Workload::Bulk { upload: false } => (bulk_bytes(f, s, seconds).to_string(), 1, 1, None),
        Workload::Bulk { upload: true } => ("upload".into(), 1, 1, Some(bulk_bytes(f, s, seconds))),
    };
    Ok(FetchOptions {
        url: format!("https://{addr}:{SERVER_PORT}/{path}"),
        client: ClientConfig {
            http: http_version(f),
            timeout: Duration::from_millis((seconds * 1e3).max(1.0).round() as u64),
            tcp_cc: tcp_cc(f)?,
            // The client picks the version; the server accepts both.
            tls12_only: f.tcp().is_some_and(|t| t.tls == TlsMode::Tls12),
            quic: quic_config(f),
            zero_rtt: f.quic().is_some_and(|q| q.common.zero_rtt),
            ..ClientConfig::default()
        },
        streams,
        connections,
        upload,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use netem::config::LinkConfig;
    use scenario::builder;

    fn download(stack: Stack) -> FlowSpec {
        let w = Workload::Download {
            size: 1_000_000,
            streams: 2,
            connections: 1,
        };
        // Each stack's default CUBIC: RFC 9438 for QUIC (our code in both engines), Linux's for
        // TCP (the kernel's).
        let cc = match stack {
            Stack::Quic | Stack::QuicModel | Stack::Quiche => builder::cubic_hystart(),
            Stack::Tcp => builder::linux_cubic(),
        };
        builder::on_stack(builder::flow("f", w, 1500, cc), stack)
    }

    fn scenario_of(f: &FlowSpec) -> Scenario {
        builder::scenario(
            "s",
            builder::link(10_000_000, Duration::from_millis(5), Some(25)),
            vec![f.clone()],
            Duration::from_secs(10),
        )
    }

    /// What `quiclab serve` / `get` read back from the file the emulator writes.
    fn round_trip<T: Serialize + serde::de::DeserializeOwned>(v: &T) -> T {
        let text = serde_json::to_string(v).expect("serializes");
        serde_json::from_str(&text).expect("the endpoint reads it back")
    }

    #[test]
    fn a_quic_download_hands_the_endpoints_its_knobs_and_controller() {
        let mut f = download(Stack::Quic);
        f.quic_mut().expect("a quic flow").common.stream_window = 65_000;
        f.quic_mut().expect("a quic flow").common.ack_ratio = Some(4);
        f.quic_mut().expect("a quic flow").common.initial_rtt = Duration::from_millis(100);
        let s = scenario_of(&f);
        assert!(check_supported(&s).expect("supported").is_empty());
        let addr = Ipv4Addr::new(10, 99, 2, 1);
        let get = round_trip(&fetch_options(&f, &s, addr, 10.0).expect("supported"));
        assert_eq!(get.url, "https://10.99.2.1:4433/1000000");
        assert_eq!((get.streams, get.connections), (2, 1));
        assert_eq!(get.client.http, HttpVersion::H3);
        assert_eq!(
            get.client.quic.knobs,
            *f.quic().expect("a quic flow"),
            "every knob, as the scenario set it"
        );
        assert_eq!(get.client.quic.cc, f.cc, "the controller with its knobs");
        assert_eq!(get.client.timeout, Duration::from_secs(10));
        let serve = round_trip(&server_config(&f, addr).expect("supported"));
        assert_eq!(serve.listen, "10.99.2.1:4433".parse().unwrap());
        assert!(serve.protocols.h3 && !serve.protocols.h2 && !serve.protocols.h1);
        assert_eq!(serve.quic.knobs, *f.quic().expect("a quic flow"));
        assert_eq!(serve.max_response_size, None);
    }

    #[test]
    fn zero_rtt_flows_get_a_server_that_answers_early() {
        let mut f = download(Stack::Quic);
        let addr = Ipv4Addr::new(10, 99, 2, 1);
        assert!(!server_config(&f, addr).unwrap().quic.early_response);
        f.quic_mut().expect("a quic flow").common.zero_rtt = true;
        assert!(server_config(&f, addr).unwrap().quic.early_response);
        let get = fetch_options(&f, &scenario_of(&f), addr, 10.0).unwrap();
        assert!(get.client.zero_rtt);
    }

    #[test]
    fn tcp_flows_name_the_kernel_controller_and_tls_version() {
        let mut f = download(Stack::Tcp);
        f.tcp_mut().expect("a tcp flow").tls = TlsMode::Tls12;
        let addr = Ipv4Addr::new(10, 99, 2, 1);
        let get = fetch_options(&f, &scenario_of(&f), addr, 10.0).unwrap();
        assert_eq!(get.client.tcp_cc.as_deref(), Some("cubic"));
        assert_eq!(get.client.http, HttpVersion::H2);
        assert!(get.client.tls12_only);
        let serve = server_config(&f, addr).unwrap();
        assert_eq!(serve.tcp_cc.as_deref(), Some("cubic"));
        assert!(serve.protocols.h2 && !serve.protocols.h3);
    }

    #[test]
    fn quic_runs_our_controllers_with_their_knobs() {
        let mut f = download(Stack::Quic);
        if let CcChoice::Ours(CcConfig::Cubic {
            common, hystart, ..
        }) = &mut f.cc
        {
            common.initial_window_packets = 32;
            *hystart = false;
        }
        let s = builder::scenario(
            "s",
            LinkConfig::ideal(),
            vec![f.clone()],
            Duration::from_secs(1),
        );
        let warnings = check_supported(&s).expect("our controller takes every knob");
        assert!(warnings.is_empty(), "{warnings:?}");
        let serve = round_trip(&server_config(&f, Ipv4Addr::new(10, 99, 2, 1)).unwrap());
        assert_eq!(serve.quic.cc, f.cc);
    }

    #[test]
    fn unsupported_features_name_their_key() {
        let mut f = download(Stack::Tcp);
        f.tcp_mut().expect("a tcp flow").delayed_ack_timeout = Duration::from_millis(100);
        let s = builder::scenario("s", LinkConfig::ideal(), vec![f], Duration::from_secs(1));
        let e = check_supported(&s)
            .expect_err("Linux has no per-flow delayed-ACK timer")
            .to_string();
        assert!(e.contains("flow.delayed_ack_timeout"), "{e}");
        let mut f = download(Stack::Tcp);
        f.tcp_mut().expect("a tcp flow").initial_rto = Duration::from_secs(3);
        let s = builder::scenario("s", LinkConfig::ideal(), vec![f], Duration::from_secs(1));
        let e = check_supported(&s).expect_err("a model knob").to_string();
        assert!(e.contains("flow.initial_rto"), "{e}");
        let mut f = download(Stack::Tcp);
        f.cc = builder::linux_reno();
        if let CcChoice::Ours(CcConfig::NewReno { common, .. }) = &mut f.cc {
            common.loss_reduction_factor = 0.8;
        }
        let s = builder::scenario("s", LinkConfig::ideal(), vec![f], Duration::from_secs(1));
        let e = check_supported(&s).expect_err("kernel β").to_string();
        assert!(e.contains("flow.loss_reduction"), "{e}");
        // The kernel has Linux's CUBIC and Reno only; the RFC profiles are the simulator's.
        for (cc, key) in [
            (builder::cubic_hystart(), "flow.cubic_profile"),
            (builder::newreno_exact(), "flow.reno_profile"),
        ] {
            let mut f = download(Stack::Tcp);
            f.cc = cc;
            let s = builder::scenario("s", LinkConfig::ideal(), vec![f], Duration::from_secs(1));
            let e = check_supported(&s).expect_err("an RFC profile").to_string();
            assert!(e.contains(key), "{e}");
        }
        let mut f = download(Stack::Quic);
        f.quic_mut().expect("a quic flow").crypto = endpoints::quic::QuicCrypto::None;
        let s = builder::scenario("s", LinkConfig::ideal(), vec![f], Duration::from_secs(1));
        let e = check_supported(&s).expect_err("null AEAD").to_string();
        assert!(e.contains("flow.crypto"), "{e}");
        let mut f = download(Stack::Quic);
        f.cc = CcChoice::Ours(CcConfig::None);
        let s = builder::scenario("s", LinkConfig::ideal(), vec![f], Duration::from_secs(1));
        assert!(check_supported(&s)
            .expect_err("none")
            .to_string()
            .contains("flow.cc"));
    }

    #[test]
    fn the_research_model_is_refused_naming_flow_stack() {
        let f = builder::quic_model(
            "m",
            Workload::Download {
                size: 1_000_000,
                streams: 1,
                connections: 1,
            },
            1500,
            CcChoice::default(),
        );
        let s = builder::scenario(
            "s",
            LinkConfig::ideal(),
            vec![f.clone()],
            Duration::from_secs(1),
        );
        let e = check_supported(&s).expect_err("simulator only").to_string();
        assert!(
            e.contains("flow.stack")
                && e.contains("quic-model")
                && e.contains("only in the simulator"),
            "{e}"
        );
        assert!(server_config(&f, Ipv4Addr::LOCALHOST).is_err());
    }

    #[test]
    fn quiche_is_refused_by_name() {
        let f = builder::on_stack(
            builder::flow(
                "q",
                Workload::Download {
                    size: 1_000_000,
                    streams: 1,
                    connections: 1,
                },
                1500,
                CcChoice::default(),
            ),
            Stack::Quiche,
        );
        let s = builder::scenario(
            "s",
            LinkConfig::ideal(),
            vec![f.clone()],
            Duration::from_secs(1),
        );
        let e = check_supported(&s).expect_err("simulator only").to_string();
        assert!(
            e.contains("flow.stack") && e.contains("\"quiche\" runs only in the simulator"),
            "{e}"
        );
        assert!(server_config(&f, Ipv4Addr::LOCALHOST).is_err());
    }
}
