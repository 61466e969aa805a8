//! From a scenario flow to `quiclab serve` / `quiclab get` arguments, and the check that the
//! emulator can reproduce every feature the scenario uses.
//!
//! Features the emulator cannot reproduce fail with the scenario key that asks for them;
//! features it can only approximate (the kernel's own controller details) are accepted with a
//! warning, so nothing is silently ignored.
//!
//! QUIC endpoints run quiclab's controllers through the simulator's controller factory (the
//! whole `flow.cc` choice, knobs included, is passed to `--quic-cc`). Kernel TCP gets the flow's
//! TCP knobs as namespace sysctls and route attributes ([`KernelTcp`]), so both engines run the
//! same configuration instead of the host's.

use std::net::Ipv4Addr;
use std::time::Duration;

use cc::config::{CcConfig, CubicProfile, RenoCounting};
use netem::config::RateProfile;
use scenario::model::{CcChoice, FlowSpec, Scenario, Stack, TlsMode, Workload};
use serde::Serialize;
use serde_json::Value;

use crate::error::EmuError;

/// Port every server listens on (TCP and UDP).
pub const SERVER_PORT: u16 = 4433;

fn unsupported(key: &str, why: impl Into<String>) -> EmuError {
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

fn check_flow(f: &FlowSpec, warnings: &mut Vec<String>) -> Result<(), EmuError> {
    if f.stack == Stack::QuicModel {
        return Err(model_refused());
    }
    // Access links (`flow.client_access.*`, `flow.server_access.*`) are the forwarder's: every
    // `netem` link knob works there as on the bottleneck.
    crate::pep::check(f, warnings)?;
    cc_name(f)?;
    match f.stack {
        Stack::Quic => {
            if let Some(key) = first_unapplied(&f.quic, QUIC_APPLIED) {
                return Err(unsupported(
                    &key,
                    "quiclab serve/get do not pass this knob on to quinn (its ACK-frequency extension is not wired)",
                ));
            }
        }
        Stack::Tcp => check_tcp(f, warnings)?,
        Stack::QuicModel => return Err(model_refused()),
    }
    // The kernel's CUBIC keeps HyStart on unless the host-wide module parameter says otherwise.
    if let (Stack::Tcp, CcChoice::Ours(CcConfig::Cubic { hystart: false, .. })) = (f.stack, f.cc) {
        warnings.push(format!(
            "flow {}: flow.hystart=false {NOT_APPLIED}: the kernel's CUBIC keeps HyStart (a host-wide module parameter, not a per-flow setting)",
            f.name
        ));
    }
    Ok(())
}

/// QUIC knob fields `quiclab serve` / `get` pass on to quinn; the others must keep their default.
const QUIC_APPLIED: &[&str] = &[
    "mtu",
    "mtu_discovery",
    "initial_rtt",
    "stream_window",
    "conn_window",
    "send_window",
    "zero_rtt",
    "address_token",
];

/// TCP knob fields the emulator honours: the MTU is the path's, TLS and HTTP are the
/// endpoints', the rest become sysctls and route attributes of the flow's namespaces
/// ([`kernel_tcp`]); the others are TCP-model knobs the kernel does not take per flow.
const TCP_APPLIED: &[&str] = &[
    "mtu",
    "tls",
    "http",
    "http1_connections",
    "sack",
    "timestamps",
    "delayed_ack",
    "receive_window_max",
    "initial_receive_window",
    "send_buffer",
    "min_rto",
    "rack",
];

/// The scenario key of the first knob of `knobs`, outside `applied`, that differs from the
/// type's default. Knob field names are scenario keys, so a new knob is checked without a
/// line here.
fn first_unapplied<T: Serialize + Default>(knobs: &T, applied: &[&str]) -> Option<String> {
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

fn check_tcp(f: &FlowSpec, warnings: &mut Vec<String>) -> Result<(), EmuError> {
    let t = &f.tcp;
    if t.tls == TlsMode::None {
        return Err(unsupported(
            "flow.tls",
            "quiclab serve/get always speak TLS (1.3, or 1.2 with flow.tls = \"1.2\")",
        ));
    }
    if let Some(key) = first_unapplied(t, TCP_APPLIED) {
        return Err(unsupported(
            &key,
            "kernel TCP cannot take this TCP-model knob per flow (Linux has no sysctl or route attribute for it); keep its default",
        ));
    }
    if let Some(n) = t.http1_parallel() {
        warnings.push(format!(
            "flow {}: flow.http1_connections={n}: quiclab get spreads the streams over its own HTTP/1.1 connections",
            f.name
        ));
    }
    Ok(())
}

/// The controller name for `--tcp-cc` (kernel TCP) or the scenario name of a QUIC flow's
/// controller; refuses what the chosen engine cannot run.
pub fn cc_name(f: &FlowSpec) -> Result<&'static str, EmuError> {
    let common = match f.cc {
        CcChoice::Ours(CcConfig::NewReno { common, .. })
        | CcChoice::Ours(CcConfig::Cubic { common, .. }) => Some(common),
        _ => None,
    };
    // QUIC runs our controllers with every knob; the kernel takes only the initial window
    // (route `initcwnd`).
    if let (Stack::Tcp, Some(c)) = (f.stack, common) {
        if c.minimum_window_packets != 2 {
            return Err(unsupported(
                "flow.min_window",
                "kernel TCP keeps its own minimum window",
            ));
        }
        let default_beta = match f.cc {
            CcChoice::Ours(CcConfig::Cubic { .. }) => 0.7,
            _ => 0.5,
        };
        if (c.loss_reduction_factor - default_beta).abs() > 1e-9 {
            return Err(unsupported(
                "flow.loss_reduction",
                "kernel TCP keeps its own decrease factor",
            ));
        }
    }
    let name = match (f.stack, f.cc) {
        (_, CcChoice::Ours(CcConfig::None)) => {
            return Err(unsupported(
                "flow.cc",
                "`none` exists only in the simulator",
            ))
        }
        // The kernel runs Linux's variants only: the RFC profiles exist in the simulator.
        (
            Stack::Tcp,
            CcChoice::Ours(CcConfig::NewReno {
                counting: RenoCounting::Linux,
                ..
            }),
        ) => "reno",
        (Stack::Tcp, CcChoice::Ours(CcConfig::NewReno { .. })) => {
            return Err(unsupported(
                "flow.reno_profile",
                "kernel TCP runs Linux's Reno (reno_profile = \"linux\") only",
            ))
        }
        (
            Stack::Tcp,
            CcChoice::Ours(CcConfig::Cubic {
                profile: CubicProfile::Linux,
                ..
            }),
        ) => "cubic",
        (Stack::Tcp, CcChoice::Ours(CcConfig::Cubic { .. })) => {
            return Err(unsupported(
                "flow.cubic_profile",
                "kernel TCP runs Linux's CUBIC (cubic_profile = \"linux\") only",
            ))
        }
        (Stack::Tcp, _) => {
            return Err(unsupported(
                "flow.cc",
                "quinn's controllers exist only for QUIC",
            ))
        }
        (Stack::Quic, cc) => transport::linux_config::cc_name(&cc),
        (Stack::QuicModel, _) => return Err(model_refused()),
    };
    Ok(name)
}

/// How a TCP flow's knobs are set in the kernel: per-namespace sysctls and attributes of the
/// route to the peer, in both of the flow's namespaces (client and server).
#[derive(Debug, Clone, PartialEq)]
pub struct KernelTcp {
    /// `(key, value)` of `net.ipv4.*` sysctls (per network namespace since Linux 4.15).
    pub sysctls: Vec<(&'static str, String)>,
    /// `ip route` attributes of the host route to the peer (`initcwnd 10`, `rto_min 200ms`, …).
    pub route: Vec<String>,
}

/// The kernel settings for a TCP flow's knobs (`None` for a QUIC flow): `tcp_rmem`/`tcp_wmem`
/// from the window and buffer knobs (see [`transport::linux_config`]), `tcp_sack`,
/// `tcp_timestamps`, `tcp_recovery` + `tcp_early_retrans` (`rack`), and route `initrwnd`
/// (the initial receive window in segments), `initcwnd` (from the controller's initial window),
/// `rto_min`, `quickack 1` when delayed ACKs are off.
pub fn kernel_tcp(f: &FlowSpec) -> Option<KernelTcp> {
    if f.stack != Stack::Tcp {
        return None;
    }
    let t = &f.tcp;
    let triple = |v: [u64; 3]| format!("{} {} {}", v[0], v[1], v[2]);
    let sysctls = vec![
        (
            "net.ipv4.tcp_rmem",
            triple(transport::linux_config::tcp_rmem(t)),
        ),
        (
            "net.ipv4.tcp_wmem",
            triple(transport::linux_config::tcp_wmem(t)),
        ),
        ("net.ipv4.tcp_sack", u8::from(t.sack).to_string()),
        (
            "net.ipv4.tcp_timestamps",
            u8::from(t.timestamps).to_string(),
        ),
    ];
    let mut sysctls = sysctls;
    sysctls.extend(transport::linux_config::rack_sysctls(t).map(|(k, v)| (k, v.to_string())));
    let mut route = Vec::new();
    if let Some(iw) = transport::linux_config::initial_window(&f.cc) {
        route.extend(["initcwnd".to_string(), iw.to_string()]);
    }
    route.extend([
        "initrwnd".to_string(),
        transport::linux_config::initrwnd(t).to_string(),
    ]);
    // `ip` takes whole milliseconds; the registry's min_rto is at least 1 ms.
    route.extend([
        "rto_min".to_string(),
        format!("{}ms", t.min_rto.as_millis().max(1)),
    ]);
    if !t.delayed_ack {
        route.extend(["quickack".to_string(), "1".to_string()]);
    }
    Some(KernelTcp { sysctls, route })
}

/// The HTTP version a flow uses: `3` for QUIC, `2` or `1.1` for TCP.
pub fn http_version(f: &FlowSpec) -> &'static str {
    match f.stack {
        // The model is refused by `check_supported`; it would speak HTTP/3 like quinn.
        Stack::Quic | Stack::QuicModel => "3",
        Stack::Tcp if f.tcp.http1_parallel().is_some() => "1.1",
        Stack::Tcp => "2",
    }
}

fn ms(d: Duration) -> String {
    format!("{}ms", d.as_secs_f64() * 1e3)
}

/// Transport knobs common to serve and get.
fn knob_args(f: &FlowSpec) -> Result<Vec<String>, EmuError> {
    let cc = cc_name(f)?;
    let mut a = Vec::new();
    match f.stack {
        Stack::Quic => {
            let q = &f.quic;
            // The whole choice with its knobs: the endpoint builds it with the simulator's factory.
            a.extend(["--quic-cc".into(), endpoints::QuicCc(f.cc).to_arg()]);
            a.extend(["--mtu".into(), q.mtu.to_string()]);
            a.extend(["--stream-window".into(), q.common.stream_window.to_string()]);
            a.extend(["--conn-window".into(), q.common.conn_window.to_string()]);
            a.extend(["--send-window".into(), q.common.send_window.to_string()]);
            a.extend(["--initial-rtt".into(), ms(q.common.initial_rtt)]);
            if q.mtu_discovery {
                a.push("--mtu-discovery".into());
            }
            if !q.common.address_token {
                a.push("--no-address-token".into());
            }
        }
        Stack::Tcp => {
            a.extend(["--tcp-cc".into(), cc.into()]);
        }
        Stack::QuicModel => return Err(model_refused()),
    }
    Ok(a)
}

/// Arguments of `quiclab serve` for a flow's server at `addr`.
pub fn serve_args(f: &FlowSpec, addr: Ipv4Addr) -> Result<Vec<String>, EmuError> {
    let mut a = vec![
        "serve".to_string(),
        "--listen".into(),
        format!("{addr}:{SERVER_PORT}"),
        "--http".into(),
        http_version(f).into(),
        // The scenario bounds the transfer (a bulk flow asks for more than the link carries),
        // and the server answers only its own client in a private namespace: serve's safety
        // caps for shared hosts would cut flows short, so lift them; 1024 streams as before.
        "--max-response-size".into(),
        "unlimited".into(),
        "--max-streams".into(),
        "1024".into(),
    ];
    a.extend(knob_args(f)?);
    // A 0-RTT request is answered before the handshake completes, as the simulator's quinn
    // server does (off otherwise: see `QuicOptions::early_response`; safe with every client
    // since the server waits for the whole ClientHello, see tests/early_response.rs there).
    if f.stack == Stack::Quic && f.quic.common.zero_rtt {
        a.push("--early-response".into());
    }
    Ok(a)
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

/// Arguments of `quiclab get` for a flow against server `addr`, with `seconds` to finish.
pub fn get_args(
    f: &FlowSpec,
    s: &Scenario,
    addr: Ipv4Addr,
    seconds: f64,
) -> Result<Vec<String>, EmuError> {
    let mut a = vec!["get".to_string()];
    let (path_bytes, extra): (u64, Vec<String>) = match f.workload {
        Workload::Download {
            size,
            streams,
            connections,
        } => (
            size,
            vec![
                "--streams".into(),
                streams.to_string(),
                "--connections".into(),
                connections.to_string(),
            ],
        ),
        Workload::Bulk { upload: false } => (bulk_bytes(f, s, seconds), Vec::new()),
        Workload::Bulk { upload: true } => (
            0,
            vec!["--upload".into(), bulk_bytes(f, s, seconds).to_string()],
        ),
    };
    let path = if matches!(f.workload, Workload::Bulk { upload: true }) {
        "upload".to_string()
    } else {
        path_bytes.to_string()
    };
    a.push(format!("https://{addr}:{SERVER_PORT}/{path}"));
    a.extend(["--http".into(), http_version(f).into(), "--json".into()]);
    a.extend(extra);
    if f.stack == Stack::Quic && f.quic.common.zero_rtt {
        a.push("--zero-rtt".into());
    }
    // The client picks the version; the server accepts both.
    if f.stack == Stack::Tcp && f.tcp.tls == TlsMode::Tls12 {
        a.push("--tls12".into());
    }
    a.extend(knob_args(f)?);
    a.extend([
        "--timeout".into(),
        format!("{}ms", (seconds * 1e3).max(1.0).round()),
    ]);
    Ok(a)
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
            Stack::Quic | Stack::QuicModel => builder::cubic_hystart(),
            Stack::Tcp => builder::linux_cubic(),
        };
        let mut f = builder::flow("f", w, 1500, cc);
        f.stack = stack;
        f
    }

    #[test]
    fn quic_download_maps_to_http3_with_cubic() {
        let f = download(Stack::Quic);
        let s = builder::scenario(
            "s",
            builder::link(10_000_000, Duration::from_millis(5), Some(25)),
            vec![f.clone()],
            Duration::from_secs(10),
        );
        let a = get_args(&f, &s, Ipv4Addr::new(10, 99, 2, 1), 10.0).expect("supported");
        let line = a.join(" ");
        assert!(
            line.contains("https://10.99.2.1:4433/1000000 --http 3 --json --streams 2"),
            "{line}"
        );
        let cc = a
            .iter()
            .position(|x| x == "--quic-cc")
            .and_then(|i| a.get(i + 1))
            .expect("--quic-cc");
        let parsed: endpoints::QuicCc = cc.parse().expect("the endpoint reads it back");
        assert_eq!(parsed.0, f.cc, "{cc}");
        let sv = serve_args(&f, Ipv4Addr::new(10, 99, 2, 1))
            .expect("supported")
            .join(" ");
        assert!(
            sv.starts_with("serve --listen 10.99.2.1:4433 --http 3"),
            "{sv}"
        );
    }

    #[test]
    fn zero_rtt_flows_get_a_server_that_answers_early() {
        let mut f = download(Stack::Quic);
        let addr = Ipv4Addr::new(10, 99, 2, 1);
        let off = serve_args(&f, addr).unwrap();
        assert!(!off.iter().any(|a| a == "--early-response"), "{off:?}");
        f.quic.common.zero_rtt = true;
        let on = serve_args(&f, addr).unwrap();
        assert!(on.iter().any(|a| a == "--early-response"), "{on:?}");
    }

    #[test]
    fn address_tokens_off_reach_both_endpoints() {
        let s = |f: &FlowSpec| {
            builder::scenario(
                "s",
                builder::link(10_000_000, Duration::from_millis(5), Some(25)),
                vec![f.clone()],
                Duration::from_secs(10),
            )
        };
        let addr = Ipv4Addr::new(10, 99, 2, 1);
        let mut f = download(Stack::Quic);
        // On by default: nothing to pass (the endpoints' default is on too).
        let on = get_args(&f, &s(&f), addr, 10.0).expect("supported");
        assert!(!on.iter().any(|a| a == "--no-address-token"), "{on:?}");
        f.quic.common.address_token = false;
        assert!(check_supported(&s(&f)).is_ok());
        for args in [
            get_args(&f, &s(&f), addr, 10.0).expect("supported"),
            serve_args(&f, addr).expect("supported"),
        ] {
            assert!(args.iter().any(|a| a == "--no-address-token"), "{args:?}");
        }
    }

    #[test]
    fn tcp_knobs_become_sysctls_and_route_attributes() {
        let mut f = download(Stack::Tcp);
        f.tcp.sack = false;
        f.tcp.timestamps = false;
        f.tcp.delayed_ack = false;
        f.tcp.min_rto = Duration::from_millis(50);
        f.tcp.rack = false;
        // A 6 MiB window needs 12 MiB of buffer: Linux advertises half of it.
        f.tcp.receive_window_max = 6_291_456;
        f.tcp.send_buffer = 1 << 20;
        let s = builder::scenario(
            "s",
            LinkConfig::ideal(),
            vec![f.clone()],
            Duration::from_secs(1),
        );
        check_supported(&s).expect("the kernel takes these");
        let k = kernel_tcp(&f).expect("a TCP flow");
        let get = |key: &str| {
            k.sysctls
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(
            get("net.ipv4.tcp_rmem").as_deref(),
            Some("4096 131072 12582912")
        );
        assert_eq!(
            get("net.ipv4.tcp_wmem").as_deref(),
            Some("4096 16384 1048576")
        );
        assert_eq!(get("net.ipv4.tcp_sack").as_deref(), Some("0"));
        assert_eq!(get("net.ipv4.tcp_timestamps").as_deref(), Some("0"));
        assert_eq!(get("net.ipv4.tcp_recovery").as_deref(), Some("0"));
        assert_eq!(get("net.ipv4.tcp_early_retrans").as_deref(), Some("0"));
        // 65 535 bytes in 1460-byte segments (no timestamps): 45.
        assert_eq!(
            k.route.join(" "),
            "initcwnd 10 initrwnd 45 rto_min 50ms quickack 1"
        );
        assert!(kernel_tcp(&download(Stack::Quic)).is_none());
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
        let a = serve_args(&f, Ipv4Addr::new(10, 99, 2, 1)).expect("supported");
        let i = a.iter().position(|x| x == "--quic-cc").expect("--quic-cc");
        let parsed: endpoints::QuicCc = a[i + 1].parse().expect("parses");
        assert_eq!(parsed.0, f.cc);
        f.cc = CcChoice::QuinnCubic;
        let a = serve_args(&f, Ipv4Addr::new(10, 99, 2, 1)).expect("supported");
        assert!(a.join(" ").contains("--quic-cc quinn-cubic"), "{a:?}");
    }

    #[test]
    fn tcp_newreno_is_reno_over_http2() {
        let mut f = download(Stack::Tcp);
        f.cc = builder::linux_reno();
        assert_eq!(cc_name(&f).expect("supported"), "reno");
        assert_eq!(http_version(&f), "2");
    }

    #[test]
    fn unsupported_features_name_their_key() {
        let mut f = download(Stack::Tcp);
        f.tcp.delayed_ack_timeout = Duration::from_millis(100);
        let s = builder::scenario("s", LinkConfig::ideal(), vec![f], Duration::from_secs(1));
        let e = check_supported(&s)
            .expect_err("Linux has no per-flow delayed-ACK timer")
            .to_string();
        assert!(e.contains("flow.delayed_ack_timeout"), "{e}");
        let mut f = download(Stack::Tcp);
        f.tcp.initial_rto = Duration::from_secs(3);
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
        f.quic.common.ack_ratio = Some(4);
        let s = builder::scenario("s", LinkConfig::ideal(), vec![f], Duration::from_secs(1));
        let e = check_supported(&s).expect_err("not wired").to_string();
        assert!(e.contains("flow.ack_ratio"), "{e}");
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
        assert!(serve_args(&f, Ipv4Addr::LOCALHOST).is_err());
    }
}
