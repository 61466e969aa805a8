//! Kernel TCP, configured from a flow's knobs: the one place where the emulator decides the
//! sysctls of a flow's namespaces, the attributes of its routes and the congestion controller
//! its sockets set (`TCP_CONGESTION`, set by the endpoints and the PEP relay on their sockets),
//! applies them, and reads back what the kernel holds.
//!
//! The values come from the same translation the simulator records ([`transport::linux_config`]),
//! so both engines run, and report, the same configuration. Knobs the kernel cannot take per
//! flow are refused by name; those it only approximates are accepted with a warning.

use ::results::FlowConfig;
use congestion::config::{CcConfig, CubicProfile, RenoCounting};
use scenario::model::{CcChoice, FlowSpec, PepSpec, TlsMode, Workload};

use crate::error::EmuError;
use crate::mapping::{first_unapplied, unsupported, NOT_APPLIED};
use crate::netns;
use crate::topology::Topology;

/// TCP knob fields the emulator honours: the MTU is the path's, TLS and HTTP are the
/// endpoints', the rest become sysctls and route attributes of the flow's namespaces
/// ([`settings`]); the others are TCP-model knobs the kernel does not take per flow.
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
    "ecn",
];

/// Checks a TCP flow's knobs and controller; returns warnings about approximations.
pub(crate) fn check(f: &FlowSpec, warnings: &mut Vec<String>) -> Result<(), EmuError> {
    let Some(t) = f.tcp() else {
        return Ok(());
    };
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
    controller(f)?;
    if let Some(n) = t.http1_parallel() {
        warnings.push(format!(
            "flow {}: flow.http1_connections={n}: quiclab get spreads the streams over its own HTTP/1.1 connections",
            f.name
        ));
    }
    // The kernel's CUBIC keeps HyStart on unless the host-wide module parameter says otherwise.
    if let CcChoice::Ours(CcConfig::Cubic { hystart: false, .. }) = f.cc {
        warnings.push(format!(
            "flow {}: flow.hystart=false {NOT_APPLIED}: the kernel's CUBIC keeps HyStart (a host-wide module parameter, not a per-flow setting)",
            f.name
        ));
    }
    Ok(())
}

/// Where the kernel lists the congestion controllers it has loaded (host-wide).
const AVAILABLE_CC: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";

/// Refuses controller `name` unless the host kernel lists it in `available` (the contents of
/// `tcp_available_congestion_control`), quoting the list.
fn check_available(
    key: &str,
    name: &'static str,
    available: &str,
) -> Result<&'static str, EmuError> {
    if available.split_whitespace().any(|n| n == name) {
        return Ok(name);
    }
    Err(unsupported(
        key,
        format!(
            "this host's kernel does not offer {name:?}: {AVAILABLE_CC} lists {:?}",
            available.trim()
        ),
    ))
}

/// [`check_available`] against the running kernel's list, read now.
fn kernel_offers(key: &str, name: &'static str) -> Result<&'static str, EmuError> {
    let available = std::fs::read_to_string(AVAILABLE_CC)
        .map_err(|e| EmuError::io(format!("cannot read {AVAILABLE_CC}"), e))?;
    check_available(key, name, &available)
}

/// The kernel controller of a TCP flow's sockets (`TCP_CONGESTION`), if the running kernel
/// offers it; refuses, by key, what the kernel does not run: it takes only the initial window
/// of our knobs (route `initcwnd`), and Linux's variants only (the RFC profiles exist in the
/// simulator).
pub(crate) fn controller(f: &FlowSpec) -> Result<&'static str, EmuError> {
    kernel_offers("flow.cc", controller_name(f)?)
}

/// [`controller`] without the look at the running kernel.
fn controller_name(f: &FlowSpec) -> Result<&'static str, EmuError> {
    if let CcChoice::Ours(CcConfig::NewReno { common, .. } | CcConfig::Cubic { common, .. }) = f.cc
    {
        if common.minimum_window_packets != 2 {
            return Err(unsupported(
                "flow.min_window",
                "kernel TCP keeps its own minimum window",
            ));
        }
        let default_beta = match f.cc {
            CcChoice::Ours(CcConfig::Cubic { .. }) => 0.7,
            _ => 0.5,
        };
        if (common.loss_reduction_factor - default_beta).abs() > 1e-9 {
            return Err(unsupported(
                "flow.loss_reduction",
                "kernel TCP keeps its own decrease factor",
            ));
        }
    }
    match f.cc {
        CcChoice::Ours(CcConfig::None) => Err(unsupported(
            "flow.cc",
            "`none` exists only in the simulator",
        )),
        CcChoice::Ours(CcConfig::NewReno {
            counting: RenoCounting::Linux,
            ..
        }) => Ok("reno"),
        CcChoice::Ours(CcConfig::NewReno { .. }) => Err(unsupported(
            "flow.reno_profile",
            "kernel TCP runs Linux's Reno (reno_profile = \"linux\") only",
        )),
        CcChoice::Ours(CcConfig::Cubic {
            profile: CubicProfile::Linux,
            ..
        }) => Ok("cubic"),
        CcChoice::Ours(CcConfig::Cubic { .. }) => Err(unsupported(
            "flow.cubic_profile",
            "kernel TCP runs Linux's CUBIC (cubic_profile = \"linux\") only",
        )),
        // The kernel's BBR keeps its own minimum window (4) and has no decrease factor; only
        // the initial window (route `initcwnd`) carries over.
        CcChoice::Ours(CcConfig::Bbr { common }) => {
            if common.minimum_window_packets != 2 {
                return Err(unsupported(
                    "flow.min_window",
                    "kernel TCP keeps its own minimum window",
                ));
            }
            Ok("bbr")
        }
        CcChoice::Ours(CcConfig::Bbr3 { .. }) => Err(unsupported("flow.cc", NO_KERNEL_BBR3)),
        CcChoice::Ours(CcConfig::Dctcp { .. } | CcConfig::Prague { .. }) => Err(unsupported(
            "flow.cc",
            "the emulator does not yet run kernel DCTCP or Prague (Linux 6.18 has DCTCP; Prague is out of tree)",
        )),
        _ => Err(unsupported(
            "flow.cc",
            "quinn's controllers exist only for QUIC",
        )),
    }
}

/// The kernel controller of a PEP's sockets for `flow.pep_cc`; refuses what the kernel does
/// not run, by name.
pub(crate) fn pep_controller(pep: &PepSpec) -> Result<&'static str, EmuError> {
    kernel_offers("flow.pep_cc", pep_controller_name(pep)?)
}

/// [`pep_controller`] without the look at the running kernel.
fn pep_controller_name(pep: &PepSpec) -> Result<&'static str, EmuError> {
    match pep.cc {
        CcConfig::Bbr { .. } => Ok("bbr"),
        CcConfig::Cubic {
            profile: CubicProfile::Linux,
            hystart: true,
            ..
        } => Ok("cubic"),
        CcConfig::NewReno {
            counting: RenoCounting::Linux,
            ..
        } => Ok("reno"),
        CcConfig::NewReno { .. } => Err(unsupported(
            "flow.pep_cc",
            "kernel TCP runs Linux's Reno (`newreno`); `newreno-approx` counts as RFC 9002 does, which exists only in the simulator",
        )),
        CcConfig::None => Err(unsupported(
            "flow.pep_cc",
            "`none` exists only in the simulator",
        )),
        // The resolver gives the PEP Linux's CUBIC with HyStart only; anything else is a
        // hand-built spec.
        CcConfig::Cubic { .. } => Err(unsupported(
            "flow.pep_cc",
            "kernel TCP runs Linux's CUBIC with HyStart only",
        )),
        CcConfig::Dctcp { .. } | CcConfig::Prague { .. } => Err(unsupported(
            "flow.pep_cc",
            "the emulator does not yet run kernel DCTCP or Prague",
        )),
        CcConfig::Bbr3 { .. } => Err(unsupported("flow.pep_cc", NO_KERNEL_BBR3)),
    }
}

/// Why kernel TCP cannot run `bbr3`.
const NO_KERNEL_BBR3: &str = "kernel TCP has no BBRv3: Linux's `bbr` is BBR v1 and BBRv3 is out of tree (Google's v3 branch, where it also registers as `bbr`); `bbr3` runs only in the simulator (the TCP model and the QUIC research model)";

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
/// from the window and buffer knobs (see [`transport::linux_config`]), `tcp_sack`, `tcp_ecn`,
/// `tcp_timestamps`, `tcp_recovery` + `tcp_early_retrans` (`rack`), and route `initrwnd`
/// (the initial receive window in segments), `initcwnd` (from the controller's initial window),
/// `rto_min`, `quickack 1` when delayed ACKs are off.
pub fn settings(f: &FlowSpec) -> Option<KernelTcp> {
    let t = f.tcp()?;
    let triple = |v: [u64; 3]| format!("{} {} {}", v[0], v[1], v[2]);
    let mut sysctls = vec![
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
            "net.ipv4.tcp_ecn",
            transport::linux_config::tcp_ecn(t).to_string(),
        ),
        (
            "net.ipv4.tcp_timestamps",
            u8::from(t.timestamps).to_string(),
        ),
    ];
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

/// Writes `sysctls` in namespace `ns`.
pub(crate) fn write_sysctls(
    ns: &str,
    sysctls: Vec<(&'static str, String)>,
) -> Result<(), EmuError> {
    netns::in_netns(ns, move || {
        for (key, value) in &sysctls {
            netns::write_sysctl(key, value)?;
        }
        Ok(())
    })
}

/// Sets a TCP flow's knobs ([`settings`]) in its client and server namespaces: the sysctls,
/// and a host route to the peer carrying the route attributes. Returns what the kernel holds
/// afterwards, read back: `tcp_rmem` and delayed ACKs from the data receiver's namespace, the
/// rest from the data sender's (`None` for a QUIC flow).
pub(crate) fn configure(
    topo: &Topology,
    i: usize,
    f: &FlowSpec,
) -> Result<Option<FlowConfig>, EmuError> {
    let Some(k) = settings(f) else {
        return Ok(None);
    };
    let upload = matches!(f.workload, Workload::Bulk { upload: true });
    let sides = [
        (topo.client_ns(i).to_string(), topo.server_addr(i)),
        (topo.server_ns(i).to_string(), topo.client_addr(i)),
    ];
    let mut read = Vec::new();
    for (ns, peer) in &sides {
        write_sysctls(ns, k.sysctls.clone())?;
        let dst = format!("{peer}/32");
        let mut args: Vec<&str> = vec!["-n", ns, "route", "add", &dst, "dev", "eth0"];
        args.extend(k.route.iter().map(String::as_str));
        netns::ip(&args)?;
        read.push(read_back(ns, &dst)?);
    }
    let (receiver, sender) = if upload {
        (read.pop(), read.pop())
    } else {
        let sender = read.pop();
        (read.pop(), sender)
    };
    let (Some(receiver), Some(mut sender)) = (receiver, sender) else {
        return Ok(None);
    };
    sender.tcp_rmem = receiver.tcp_rmem;
    sender.delayed_ack = receiver.delayed_ack;
    sender.initrwnd_packets = receiver.initrwnd_packets;
    Ok(Some(sender))
}

/// What the kernel holds in namespace `ns`: the TCP sysctls and the metrics of the route to
/// `route`.
pub(crate) fn read_back(ns: &str, route: &str) -> Result<FlowConfig, EmuError> {
    let mut config = netns::in_netns(ns, read_sysctls)?;
    let shown = netns::ip(&["-n", ns, "-j", "route", "show", route])?;
    read_route_metrics(&shown, &mut config);
    Ok(config)
}

/// Reads `net.ipv4.tcp_{rmem,wmem,sack,timestamps,recovery,early_retrans,ecn}` of the current
/// thread's namespace (RACK-TLP counts as on when RACK loss detection and tail loss probes are).
fn read_sysctls() -> Result<FlowConfig, EmuError> {
    let read = |key: &str| -> Result<Vec<u64>, EmuError> {
        let path = std::path::Path::new("/proc/sys").join(key.replace('.', "/"));
        let text = std::fs::read_to_string(&path)
            .map_err(|e| EmuError::io(format!("cannot read {key}"), e))?;
        Ok(text
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect())
    };
    let triple = |v: Vec<u64>| <[u64; 3]>::try_from(v).ok();
    let flag = |v: Vec<u64>| v.first().map(|&x| x != 0);
    Ok(FlowConfig {
        tcp_rmem: triple(read("net.ipv4.tcp_rmem")?),
        tcp_wmem: triple(read("net.ipv4.tcp_wmem")?),
        sack: flag(read("net.ipv4.tcp_sack")?),
        timestamps: flag(read("net.ipv4.tcp_timestamps")?),
        rack: Some(rack_on(
            read("net.ipv4.tcp_recovery")?.first().copied(),
            read("net.ipv4.tcp_early_retrans")?.first().copied(),
        )),
        tcp_ecn: read("net.ipv4.tcp_ecn")?
            .first()
            .and_then(|&v| u8::try_from(v).ok()),
        ..FlowConfig::default()
    })
}

/// RACK-TLP as the model means it: RACK loss detection (`tcp_recovery` bit 0) and tail loss
/// probes (`tcp_early_retrans` 3 or 4).
fn rack_on(recovery: Option<u64>, early_retrans: Option<u64>) -> bool {
    recovery.is_some_and(|r| r & 1 == 1) && early_retrans.is_some_and(|e| e >= 3)
}

/// Takes `initrwnd`, `initcwnd`, `rto_min` and `quickack` from `ip -j route show` output (the
/// kernel's defaults where a metric is absent: no initial receive window bound beyond the
/// buffer, initial window 10, minimum RTO 200 ms, delayed ACKs on).
fn read_route_metrics(json: &str, config: &mut FlowConfig) {
    let routes: serde_json::Value = serde_json::from_str(json).unwrap_or_default();
    let metric = |name: &str| -> Option<f64> {
        routes
            .get(0)?
            .get("metrics")?
            .as_array()?
            .iter()
            .find_map(|m| m.get(name)?.as_f64())
    };
    config.initrwnd_packets = metric("initrwnd").map(|v| v as u64);
    config.initcwnd_packets = Some(metric("initcwnd").map_or(10, |v| v as u64));
    config.rto_min_ms = Some(metric("rto_min").unwrap_or(200.0));
    config.delayed_ack = Some(metric("quickack").unwrap_or(0.0) == 0.0);
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::mapping::check_supported;
    use netem::config::LinkConfig;
    use scenario::builder;
    use scenario::model::Stack;

    fn download() -> FlowSpec {
        let w = Workload::Download {
            size: 1_000_000,
            streams: 2,
            connections: 1,
        };
        // Linux's CUBIC: the kernel's.
        builder::on_stack(
            builder::flow("f", w, 1500, builder::linux_cubic()),
            Stack::Tcp,
        )
    }

    #[test]
    fn tcp_knobs_become_sysctls_and_route_attributes() {
        let mut f = download();
        f.tcp_mut().expect("a tcp flow").sack = false;
        f.tcp_mut().expect("a tcp flow").timestamps = false;
        f.tcp_mut().expect("a tcp flow").delayed_ack = false;
        f.tcp_mut().expect("a tcp flow").min_rto = Duration::from_millis(50);
        f.tcp_mut().expect("a tcp flow").rack = false;
        // A 6 MiB window needs 12 MiB of buffer: Linux advertises half of it.
        f.tcp_mut().expect("a tcp flow").receive_window_max = 6_291_456;
        f.tcp_mut().expect("a tcp flow").send_buffer = 1 << 20;
        let s = builder::scenario(
            "s",
            LinkConfig::ideal(),
            vec![f.clone()],
            Duration::from_secs(1),
        );
        check_supported(&s).expect("the kernel takes these");
        let k = settings(&f).expect("a TCP flow");
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
        let quic = builder::on_stack(download(), Stack::Quic);
        assert!(settings(&quic).is_none());
    }

    #[test]
    fn tcp_newreno_is_linux_reno() {
        let mut f = download();
        f.cc = builder::linux_reno();
        assert_eq!(controller(&f).expect("supported"), "reno");
        assert_eq!(controller(&download()).expect("supported"), "cubic");
    }

    #[test]
    fn tcp_bbr_is_the_kernels_bbr_if_the_kernel_lists_it() {
        let mut f = download();
        f.cc = CcChoice::Ours(CcConfig::Bbr {
            common: congestion::CommonCcConfig {
                initial_window_packets: 10,
                loss_reduction_factor: 0.5,
                minimum_window_packets: 2,
            },
        });
        assert_eq!(controller_name(&f).expect("supported"), "bbr");
        assert_eq!(
            check_available("flow.cc", "bbr", "reno bbr cubic\n").expect("listed"),
            "bbr"
        );
        let e = check_available("flow.cc", "dctcp", "reno bbr cubic\n")
            .expect_err("not listed")
            .to_string();
        assert!(e.contains("flow.cc"), "{e}");
        assert!(
            e.contains("\"reno bbr cubic\""),
            "the list, read at run time: {e}"
        );
        let e = check_available("flow.cc", "bbr", "reno cubic")
            .expect_err("a kernel without BBR")
            .to_string();
        assert!(e.contains("does not offer \"bbr\""), "{e}");
    }

    /// Kernel TCP has no BBRv3 (its `bbr` is v1): refused by name, for the flow and a PEP,
    /// before any look at the running kernel's list.
    #[test]
    fn bbr3_is_refused_for_kernel_tcp() {
        let common = congestion::CommonCcConfig {
            initial_window_packets: 10,
            loss_reduction_factor: 0.7,
            minimum_window_packets: 2,
        };
        let mut f = download();
        f.cc = CcChoice::Ours(CcConfig::Bbr3 { common });
        let e = controller_name(&f)
            .expect_err("no kernel BBRv3")
            .to_string();
        assert!(e.contains("flow.cc") && e.contains("no BBRv3"), "{e}");
        let pep = PepSpec {
            cc: CcConfig::Bbr3 { common },
            ..PepSpec::default()
        };
        let e = pep_controller_name(&pep)
            .expect_err("no kernel BBRv3")
            .to_string();
        assert!(e.contains("flow.pep_cc") && e.contains("no BBRv3"), "{e}");
    }

    #[test]
    fn route_metrics_are_read_back_with_kernel_defaults() {
        let mut c = FlowConfig::default();
        read_route_metrics(
            r#"[{"dst":"10.99.2.1","dev":"eth0","metrics":[{"initcwnd":10,"initrwnd":46,"rto_min":50,"quickack":1}]}]"#,
            &mut c,
        );
        assert_eq!(c.initrwnd_packets, Some(46));
        assert_eq!(c.initcwnd_packets, Some(10));
        assert_eq!(c.rto_min_ms, Some(50.0));
        assert_eq!(c.delayed_ack, Some(false));
        let mut c = FlowConfig::default();
        read_route_metrics(r#"[{"dst":"10.99.2.1","dev":"eth0"}]"#, &mut c);
        assert_eq!(c.initcwnd_packets, Some(10));
        assert_eq!(c.rto_min_ms, Some(200.0));
        assert_eq!(c.delayed_ack, Some(true));
        assert_eq!(c.initrwnd_packets, None);
        assert!(rack_on(Some(1), Some(3)));
        assert!(!rack_on(Some(0), Some(3)), "RACK loss detection off");
        assert!(!rack_on(Some(1), Some(0)), "no tail loss probe");
    }
}
