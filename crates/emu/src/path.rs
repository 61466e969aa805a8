//! A scenario's network path for drivers that bring their own endpoints (the load tester's
//! `quiclab load attack --via`): one client and one server namespace joined through the
//! forwarder, with the scenario's bottleneck and its first flow's access links and MTU.
//!
//! The scenario's flows are not run: what would carry traffic over the path (their stacks,
//! knobs and workloads) is the driver's. What the path itself cannot give such a driver is
//! refused by key, as [`crate::check_supported`] does for whole runs: cross traffic (its
//! sources are started by the run driver, [`crate::runner::run`]) and a PEP (it splits one
//! flow's TCP connection inside the run driver's flow set-up).

use scenario::model::Scenario;

use crate::error::EmuError;
use crate::forwarder::WaitMode;
use crate::netns;
use crate::topology::{Topology, TopologySpec};

/// The topology of `s`'s path (client 0 ↔ server 0 over the bottleneck, with the first flow's
/// access links and IP MTU), its link models seeded with `seed`. Refuses what the path cannot
/// carry for an outside driver, naming the scenario key.
pub fn topology_spec(s: &Scenario, seed: u64, wait: WaitMode) -> Result<TopologySpec, EmuError> {
    if !s.cross.is_empty() {
        return Err(EmuError::UnsupportedScenario {
            key: "cross".into(),
            why:
                "cross traffic runs only with the scenario's own flows (`quiclab emu`); a path for \
                  another driver has one client and one server"
                    .into(),
        });
    }
    let Some(first) = s.flows.first() else {
        return Err(EmuError::UnsupportedScenario {
            key: "flow".into(),
            why: "the scenario has no flow to take the access links and MTU from".into(),
        });
    };
    if let Some(f) = s.flows.iter().find(|f| f.pep().is_some()) {
        return Err(EmuError::UnsupportedScenario {
            key: "flow.pep".into(),
            why: format!(
                "flow {} has a PEP, which splits the scenario's own TCP flow; a path for another \
                 driver has none",
                f.name
            ),
        });
    }
    let mtu = first.mtu();
    let mut spec = TopologySpec::new(s.bottleneck.up.clone(), s.bottleneck.down.clone());
    spec.seed = seed;
    spec.mtu = mtu;
    spec.wait = wait;
    spec.client_access = vec![first.client_access.clone()];
    spec.server_access = vec![first.server_access.clone()];
    Ok(spec)
}

/// Kernel TCP's congestion controller on the path: with `set`, a host route to the peer in the
/// client and in the server namespace carrying `congctl NAME` (a route attribute, as the
/// emulator sets a TCP flow's knobs; unlike the namespace's default it needs no entry in the
/// host's `tcp_allowed_congestion_control`), so every kernel-TCP endpoint (`quiclab serve`
/// over TCP, nginx) uses it unless it picks its own socket option. Returns what the server's
/// connections use: the route's `congctl`, else the namespace's default
/// (`net.ipv4.tcp_congestion_control`, inherited from the host: often `cubic`, `bbr` here).
/// QUIC stacks bring their own controller either way.
pub fn tcp_congestion_control(topo: &Topology, set: Option<&str>) -> Result<String, EmuError> {
    let ends = [
        (topo.client_ns(0), topo.server_addr(0)),
        (topo.server_ns(0), topo.client_addr(0)),
    ];
    if let Some(name) = set {
        for (ns, peer) in ends {
            let dst = format!("{peer}/32");
            netns::ip(&[
                "-n", ns, "route", "add", &dst, "dev", "eth0", "congctl", name,
            ])
            .map_err(|e| {
                let available =
                    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
                        .unwrap_or_default();
                EmuError::Unsupported(format!(
                    "{e} (this kernel has: {}; `modprobe tcp_<name>` loads others)",
                    available.trim()
                ))
            })?;
        }
    }
    let (ns, peer) = ends[1];
    let shown = netns::ip(&["-n", ns, "route", "show", &format!("{peer}/32")])?;
    if let Some(name) = shown
        .split_whitespace()
        .skip_while(|w| *w != "congctl")
        .nth(1)
    {
        return Ok(name.to_string());
    }
    netns::in_netns(ns, || {
        std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control")
            .map(|v| v.trim().to_string())
            .map_err(|e| EmuError::io("cannot read net.ipv4.tcp_congestion_control", e))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn path(extra: &str) -> Scenario {
        let text = format!(
            "[link]\nrate = \"100Mbit\"\ndelay = \"10ms\"\nloss = \"1%\"\n\n[[flow]]\nname = \"f\"\nmtu = 1400\n{extra}"
        );
        let loaded = scenario::parse_str(&text, "path.toml", Path::new("."), &[], &[])
            .expect("the test scenario resolves");
        loaded.points[0].scenario.clone()
    }

    #[test]
    fn the_path_is_the_bottleneck_with_the_first_flows_mtu_and_access() {
        let s = path("client_access.delay = \"5ms\"\n");
        let spec = topology_spec(&s, 7, WaitMode::Sleep).expect("a plain path");
        assert_eq!((spec.clients, spec.servers), (1, 1));
        assert_eq!(spec.up, s.bottleneck.up);
        assert_eq!(spec.down, s.bottleneck.down);
        assert_eq!(spec.seed, 7);
        assert_eq!(spec.mtu, 1400);
        assert_eq!(spec.client_access, vec![s.flows[0].client_access.clone()]);
        assert_eq!(
            spec.client_access[0].up.delay,
            std::time::Duration::from_millis(5)
        );
        assert_eq!(spec.server_access, vec![s.flows[0].server_access.clone()]);
    }

    #[test]
    fn cross_traffic_and_peps_are_refused_by_key() {
        let s = path(
            "\n[[cross]]\nname = \"bg\"\npattern = \"cbr\"\nrate = \"500kbit\"\nsize = \"972B\"\n",
        );
        let e = topology_spec(&s, 1, WaitMode::Sleep)
            .unwrap_err()
            .to_string();
        assert!(e.contains("cross"), "{e}");
        let s = path("stack = \"tcp\"\npep = \"server-side\"\n");
        let e = topology_spec(&s, 1, WaitMode::Sleep)
            .unwrap_err()
            .to_string();
        assert!(e.contains("flow.pep"), "{e}");
    }
}
