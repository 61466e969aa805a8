//! `stack = "quiche"`: the keys it honours reach its knobs; the ones it cannot are refused by
//! name, with what a quiche flow takes.

use std::path::Path;
use std::time::Duration;

use crate::model::{CcChoice, FlowTransport, QuicheKnobs, Stack};
use crate::{parse_str, LoadedScenario, ScenarioError};

const HEAD: &str = "[[flow]]\nstack = \"quiche\"\n";

fn parse(text: &str) -> Result<LoadedScenario, ScenarioError> {
    parse_str(text, "t.toml", Path::new("."), &[], &[])
}

fn quiche_err(keys: &str) -> String {
    parse(&format!("{HEAD}{keys}\n"))
        .expect_err("should be refused")
        .to_string()
}

#[test]
fn the_keys_quiche_honours_reach_its_knobs() {
    let l = parse(&format!(
        "{HEAD}app = \"download\"\nconnections = 2\nmtu = 1400\nmtu_discovery = true\n\
         initial_rtt = \"100ms\"\nstream_window = \"1MB\"\nconn_window = \"2MB\"\nzero_rtt = true\n\
         cc = \"cubic\"\nhystart = false\ninitial_window = \"4pkt\"\nmax_ack_delay = \"5ms\"\n"
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let f = &l.points[0].scenario.flows[0];
    assert_eq!(f.stack(), Stack::Quiche);
    assert_eq!(
        f.transport,
        FlowTransport::Quiche(QuicheKnobs {
            mtu: 1400,
            mtu_discovery: true,
            initial_rtt: Duration::from_millis(100),
            stream_window: 1_000_000,
            conn_window: 2_000_000,
            zero_rtt: true,
            max_ack_delay: Some(Duration::from_millis(5)),
        })
    );
    let c = transport::quiche::config::controller(&f.cc).unwrap();
    assert_eq!(format!("{:?}", c.algorithm), "CUBIC");
    assert!(!c.hystart);
    assert_eq!(c.initial_window, 4);
    let l = parse(&format!(
        "{HEAD}cc = \"quiche-bbr2\"\ninitial_window = \"20pkt\"\n"
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        l.points[0].scenario.flows[0].cc,
        CcChoice::QuicheBbr2 {
            initial_window_packets: 20
        }
    );
}

#[test]
fn keys_quiche_cannot_honour_are_refused_by_name_with_what_it_takes() {
    for (key, why) in [
        (
            "ack_ratio = 4",
            "flow.0.ack_ratio applies only to flows with stack = \"quic\" or \"quic-model\"",
        ),
        ("send_window = \"1MB\"", "flow.0.send_window applies only"),
        ("address_token = false", "flow.0.address_token applies only"),
        ("crypto = \"none\"", "flow.0.crypto applies only"),
        (
            "ecn = true",
            "flow.0.ecn cannot be honoured by stack = \"quiche\"",
        ),
        (
            "loss_reduction = 0.8",
            "flow.0.loss_reduction cannot be honoured",
        ),
        (
            "min_window = \"4pkt\"",
            "flow.0.min_window cannot be honoured",
        ),
        (
            "cc = \"cubic\"\ncubic_profile = \"linux\"",
            "flow.0.cubic_profile cannot be honoured",
        ),
        (
            "receiver_ack_ratio = 1",
            "flow.0.receiver_ack_ratio applies only",
        ),
    ] {
        let e = quiche_err(key);
        assert!(e.contains(why), "{key}: {e}");
        assert!(
            e.contains("a quiche flow takes `cc`, `initial_window`, `hystart`, `mtu`, `mtu_discovery`, `initial_rtt`, `stream_window`, `conn_window`, `max_ack_delay`, `zero_rtt`"),
            "{key}: {e}"
        );
    }
    // At its default a key asks for nothing.
    parse(&format!("{HEAD}ecn = false\naddress_token = true\n")).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn controllers_quiche_lacks_are_refused_with_the_ones_it_has() {
    for cc in [
        "bbr",
        "bbr3",
        "newreno-approx",
        "none",
        "quinn-cubic",
        "dctcp",
    ] {
        let e = parse(&format!("{HEAD}cc = \"{cc}\"\n")).expect_err(cc);
        let text = e.to_string();
        assert!(
            text.contains(&format!(
                "flow.0.cc = {cc:?}: quiche has no such controller"
            )),
            "{text}"
        );
        let allowed: Vec<String> = e.allowed.clone();
        assert_eq!(allowed, ["newreno", "cubic", "quiche-bbr2"], "{cc}");
    }
    // quiche's BBRv2 is quiche's alone.
    let e = parse("[[flow]]\ncc = \"quiche-bbr2\"\n").expect_err("quinn has no quiche-bbr2");
    assert!(
        e.to_string()
            .contains("cc = \"quiche-bbr2\" applies only to flows with stack = \"quiche\""),
        "{e}"
    );
}

#[test]
fn quiche_bounds_are_checked_where_the_key_is() {
    let e = quiche_err("mtu = 1200");
    assert!(e.starts_with("t.toml:3:"), "{e}");
    assert!(e.contains("1228"), "{e}");
    let e = quiche_err("stream_window = \"0B\"");
    assert!(e.contains("flow.stream_window"), "{e}");
    let e = quiche_err("max_ack_delay = \"2500us\"");
    assert!(e.starts_with("t.toml:3:"), "{e}");
    assert!(e.contains("whole milliseconds"), "{e}");
}
