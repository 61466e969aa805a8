//! A flow's knobs in Linux's terms: the `net.ipv4.tcp_rmem`/`tcp_wmem` triples, route
//! attributes and switches the emulator sets in a flow's namespaces, and the configuration
//! record ([`results::FlowConfig`]) both engines write, so "the same scenario" can be checked to
//! be the same configuration.
//!
//! One definition serves both: the simulator records what its knobs mean in Linux's terms, the
//! emulator applies exactly that and records what the kernel reports back.

use congestion::config::CcConfig;
use results::FlowConfig;

use crate::cc_adapter::CcChoice;
use crate::tcp::TcpKnobs;

/// `tcp_rmem[0]` and `tcp_wmem[0]`: Linux's minimum per-socket buffer (one page), kept as is.
pub const BUFFER_MIN: u64 = 4096;
/// `tcp_wmem[1]`: Linux's default initial send buffer (16 KiB); autotuning grows it.
pub const WMEM_DEFAULT: u64 = 16_384;

/// `net.ipv4.tcp_rmem` for the knobs. The model's knobs are windows; Linux's triple is buffer
/// space, of which it advertises half as window (`tcp_adv_win_scale = 1`; newer kernels measure
/// the ratio, near one half for full-sized segments). So the maximum is twice
/// `receive_window_max` (3 MiB → 6 MiB, Linux's default) and the default twice
/// `initial_receive_window`, rounded up to a page (65 535 → 131 072, Linux's default).
pub fn tcp_rmem(t: &TcpKnobs) -> [u64; 3] {
    let page = |v: u64| v.saturating_mul(2).div_ceil(BUFFER_MIN) * BUFFER_MIN;
    let max = page(t.receive_window_max).max(BUFFER_MIN);
    [
        BUFFER_MIN,
        page(t.initial_receive_window).clamp(BUFFER_MIN, max),
        max,
    ]
}

/// `net.ipv4.tcp_wmem` for the knobs: the maximum is `send_buffer`; the default Linux's 16 KiB.
pub fn tcp_wmem(t: &TcpKnobs) -> [u64; 3] {
    let max = t.send_buffer.max(BUFFER_MIN);
    [BUFFER_MIN, WMEM_DEFAULT.min(max), max]
}

/// Route `initrwnd` for the knobs: `initial_receive_window` in whole segments, rounded up, of
/// the MSS the model uses (IP MTU − 40 − 12 with timestamps). Linux offers
/// min(buffer space, `initrwnd` × MSS) in its SYN and SYN-ACK, so with the default buffer of
/// [`tcp_rmem`] the first window is the knob's value up to one segment.
pub fn initrwnd(t: &TcpKnobs) -> u64 {
    let mss = u64::from(t.mtu).saturating_sub(40 + if t.timestamps { 12 } else { 0 });
    t.initial_receive_window.div_ceil(mss.max(1)).max(1)
}

/// `net.ipv4.tcp_recovery` and `net.ipv4.tcp_early_retrans` for the knobs: Linux's defaults
/// (RACK loss detection, tail loss probes) with `rack`, both off without (the three-duplicate
/// rule of RFC 6675 and no probe, as the model does).
pub fn rack_sysctls(t: &TcpKnobs) -> [(&'static str, &'static str); 2] {
    if t.rack {
        [
            ("net.ipv4.tcp_recovery", "1"),
            ("net.ipv4.tcp_early_retrans", "3"),
        ]
    } else {
        [
            ("net.ipv4.tcp_recovery", "0"),
            ("net.ipv4.tcp_early_retrans", "0"),
        ]
    }
}

/// `net.ipv4.tcp_ecn` for the knobs: 1 (ask for ECN on outgoing connections, accept it on
/// incoming ones) with `ecn`, Linux's default 2 (accept only) without. Both ends of a flow get
/// it, as the model's servers always accept.
pub fn tcp_ecn(t: &TcpKnobs) -> u8 {
    if t.ecn {
        1
    } else {
        2
    }
}

/// The initial window of one of our controllers, packets (`None` for quinn's and `none`).
pub fn initial_window(cc: &CcChoice) -> Option<u64> {
    match cc {
        CcChoice::Ours(
            CcConfig::NewReno { common, .. }
            | CcConfig::Cubic { common, .. }
            | CcConfig::Bbr { common }
            | CcConfig::Bbr3 { common },
        ) => Some(common.initial_window_packets),
        CcChoice::QuicheBbr2 {
            initial_window_packets,
        } => Some(*initial_window_packets),
        _ => None,
    }
}

/// HyStart of one of our CUBICs (`None` for other controllers).
pub fn hystart(cc: &CcChoice) -> Option<bool> {
    match cc {
        CcChoice::Ours(CcConfig::Cubic { hystart, .. }) => Some(*hystart),
        _ => None,
    }
}

/// The configuration record of a QUIC flow: the controller (the same code in both engines)
/// and whether address-validation tokens are on.
pub fn quic_record(cc: &CcChoice, address_token: bool) -> FlowConfig {
    FlowConfig {
        cc: Some(cc.name().into()),
        hystart: hystart(cc),
        initcwnd_packets: initial_window(cc),
        address_token: Some(address_token),
        ..FlowConfig::default()
    }
}

/// The configuration record of a TCP flow as the knobs define it, in Linux's terms (the kernel
/// names NewReno `reno`).
pub fn tcp_record(cc: &CcChoice, t: &TcpKnobs) -> FlowConfig {
    let name = match cc.name() {
        "newreno" | "newreno-approx" => "reno",
        other => other,
    };
    FlowConfig {
        cc: Some(name.into()),
        hystart: hystart(cc),
        tcp_rmem: Some(tcp_rmem(t)),
        tcp_wmem: Some(tcp_wmem(t)),
        initcwnd_packets: initial_window(cc),
        rto_min_ms: Some(t.min_rto.as_secs_f64() * 1e3),
        delayed_ack: Some(t.delayed_ack),
        sack: Some(t.sack),
        timestamps: Some(t.timestamps),
        rack: Some(t.rack),
        initrwnd_packets: Some(initrwnd(t)),
        // TCP has no address-validation tokens.
        address_token: None,
        tcp_ecn: Some(tcp_ecn(t)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linux_defaults_map_to_linux_sysctls() {
        let t = TcpKnobs::default();
        assert_eq!(tcp_rmem(&t), [4096, 131_072, 6_291_456]);
        assert_eq!(tcp_wmem(&t), [4096, 16_384, 4_194_304]);
        let small = TcpKnobs {
            receive_window_max: 50_000,
            initial_receive_window: 65_535,
            send_buffer: 8_000,
            ..TcpKnobs::default()
        };
        assert_eq!(tcp_rmem(&small), [4096, 102_400, 102_400]);
        assert_eq!(tcp_wmem(&small), [4096, 8_000, 8_000]);
        // 65 535 bytes over 1448-byte segments (1500 − 40 − 12): 46 segments.
        assert_eq!(initrwnd(&t), 46);
        let no_ts = TcpKnobs {
            timestamps: false,
            initial_receive_window: 14_600,
            ..TcpKnobs::default()
        };
        assert_eq!(initrwnd(&no_ts), 10);
        assert_eq!(rack_sysctls(&t)[0], ("net.ipv4.tcp_recovery", "1"));
        let no_rack = TcpKnobs {
            rack: false,
            ..TcpKnobs::default()
        };
        assert_eq!(
            rack_sysctls(&no_rack),
            [
                ("net.ipv4.tcp_recovery", "0"),
                ("net.ipv4.tcp_early_retrans", "0")
            ]
        );
    }

    #[test]
    fn the_record_names_the_kernel_controller() {
        let r = tcp_record(&CcChoice::default(), &TcpKnobs::default());
        assert_eq!(r.cc.as_deref(), Some("reno"));
        assert_eq!(r.initcwnd_packets, Some(10));
        assert_eq!(r.rto_min_ms, Some(200.0));
        assert_eq!(
            quic_record(&CcChoice::QuinnCubic, true).cc.as_deref(),
            Some("quinn-cubic")
        );
    }
}
