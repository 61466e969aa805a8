//! One set of QUIC bounds for both engines: a knob value a scenario file refuses for quinn is
//! refused by `quiclab serve` and `quiclab get`, from flags or from a `--config` file, with the
//! same message from the same check (`QuicKnobs::validate`).

mod common;

use std::path::Path;

use common::{quiclab, text, Scratch};
use transport::quic::QuicKnobs;
use transport::quic_common::QuicCommonKnobs;

/// The message of the shared check for `knobs`.
fn refusal(knobs: QuicKnobs) -> String {
    knobs.validate().expect_err("out of bounds").to_string()
}

/// What `quiclab sim` says about a scenario with `line` in its only flow.
fn scenario_error(line: &str) -> String {
    scenario::parse_str(
        &format!("[[flow]]\n{line}\n"),
        "bounds.toml",
        Path::new("."),
        &[],
        &[],
    )
    .expect_err("the scenario refuses it")
    .to_string()
}

/// Runs quiclab and returns its standard error, expecting a failure.
fn fails(s: &Scratch, args: &[&str]) -> String {
    let out = quiclab(args, &s.0);
    assert!(!out.status.success(), "{args:?} succeeded");
    text(&out.stderr)
}

#[test]
fn a_bound_the_scenario_refuses_is_refused_alike_by_serve_and_get() {
    let s = Scratch::new("quic-bounds");
    let cases = [
        // Above quinn's long-header limit (the endpoints' old bound let 65,535 through).
        (
            "mtu = 65535",
            ["--mtu", "65535"],
            QuicKnobs {
                mtu: 65_535,
                ..QuicKnobs::default()
            },
        ),
        (
            "mtu = 1227",
            ["--mtu", "1227"],
            QuicKnobs {
                mtu: 1227,
                ..QuicKnobs::default()
            },
        ),
        // One byte beyond the largest QUIC varint.
        (
            "stream_window = 4611686018427387904",
            ["--stream-window", "4611686018427387904"],
            QuicKnobs {
                common: QuicCommonKnobs {
                    stream_window: 1 << 62,
                    ..QuicCommonKnobs::default()
                },
                ..QuicKnobs::default()
            },
        ),
    ];
    for (line, flags, knobs) in cases {
        let expected = refusal(knobs);
        let sim = scenario_error(line);
        assert!(
            sim.contains(&expected),
            "scenario: {sim}\nexpected: {expected}"
        );
        let mut serve = vec!["serve", "--listen", "127.0.0.1:0", "--quiet"];
        serve.extend(flags);
        let e = fails(&s, &serve);
        assert!(e.contains(&expected), "serve: {e}\nexpected: {expected}");
        let mut get = vec!["get", "https://127.0.0.1:9/1", "--http", "3"];
        get.extend(flags);
        let e = fails(&s, &get);
        assert!(e.contains(&expected), "get: {e}\nexpected: {expected}");
        // The emulator's way in: the typed configuration, as a file and on standard input.
        let knobs_json = serde_json::to_value(knobs).expect("knobs serialize");
        let serve_cfg = s.file(
            "serve.json",
            &serde_json::json!({ "listen": "127.0.0.1:0", "quic": { "knobs": knobs_json } })
                .to_string(),
        );
        let e = fails(&s, &["serve", "--config", &serve_cfg.display().to_string()]);
        assert!(
            e.contains(&expected),
            "serve --config: {e}\nexpected: {expected}"
        );
        let get_cfg = s.file(
            "get.json",
            &serde_json::json!({
                "url": "https://127.0.0.1:9/1",
                "client": { "http": "H3", "quic": { "knobs": knobs_json } }
            })
            .to_string(),
        );
        let e = fails(&s, &["get", "--config", &get_cfg.display().to_string()]);
        assert!(
            e.contains(&expected),
            "get --config: {e}\nexpected: {expected}"
        );
        std::fs::remove_file(serve_cfg).expect("remove");
        std::fs::remove_file(get_cfg).expect("remove");
    }
}

#[test]
fn a_config_file_replaces_the_flags_and_refuses_unknown_fields() {
    let s = Scratch::new("quic-config");
    let cfg = s.file("serve.json", r#"{ "listen": "127.0.0.1:0", "mtu": 1500 }"#);
    let e = fails(&s, &["serve", "--config", &cfg.display().to_string()]);
    assert!(e.contains("unknown field `mtu`"), "{e}");
    let cfg = s.file("ok.json", r#"{ "listen": "127.0.0.1:0" }"#);
    let e = fails(
        &s,
        &[
            "serve",
            "--config",
            &cfg.display().to_string(),
            "--mtu",
            "1400",
        ],
    );
    assert!(e.contains("cannot be used with"), "{e}");
}
