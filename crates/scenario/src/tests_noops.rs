//! Keys that cannot affect their flow, rates without a unit, and the warnings about bare
//! probabilities: what is refused or warned about, and that the message names the fix.

use std::path::Path;

use crate::{parse_str, LoadedScenario, ScenarioError};

fn parse(text: &str, set: &[&str], axes: &[&str]) -> Result<LoadedScenario, ScenarioError> {
    let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    let axes: Vec<String> = axes.iter().map(|s| s.to_string()).collect();
    parse_str(text, "t.toml", Path::new("."), &set, &axes)
}

fn err(text: &str) -> String {
    parse(text, &[], &[])
        .expect_err("should be rejected")
        .to_string()
}

fn warnings(text: &str, set: &[&str], axes: &[&str]) -> Vec<String> {
    parse(text, set, axes)
        .unwrap_or_else(|e| panic!("{e}"))
        .warnings
}

const DOWNLOAD: &str = "[[flow]]\napp = \"download\"\nsize = \"100kB\"\n";

#[test]
fn zero_rtt_on_one_connection_is_an_error_naming_connections() {
    let e = err(&format!("{DOWNLOAD}zero_rtt = true\n"));
    assert_eq!(
        e,
        "t.toml:4:12: flow.0.zero_rtt = true has no effect: 0-RTT applies to the second and later connections of a download, and this flow makes one connection; set connections = 2 or more"
    );
    // On a bulk flow the fix is a download of several connections.
    let e = err("[[flow]]\nzero_rtt = true\n");
    assert!(
        e.starts_with("t.toml:2:12: flow.0.zero_rtt = true has no effect")
            && e.contains("app = \"download\" and connections = 2 or more"),
        "{e}"
    );
    // With a second connection it is what 0-RTT needs; at its default it asks for nothing.
    assert!(warnings(
        &format!("{DOWNLOAD}connections = 2\nzero_rtt = true\n"),
        &[],
        &[]
    )
    .is_empty());
    assert!(warnings(&format!("{DOWNLOAD}zero_rtt = false\n"), &[], &[]).is_empty());
}

#[test]
fn a_variant_that_can_never_use_zero_rtt_is_named() {
    // The scenario that reported 0-RTT as faster without one 0-RTT connection: every variant
    // fetches the page once.
    let text = format!(
        "{DOWNLOAD}\n[[variant]]\nname = \"quic-1rtt\"\n\n[[variant]]\nname = \"quic-0rtt\"\nset = {{ \"flow.zero_rtt\" = true }}\n"
    );
    let e = err(&text);
    assert!(
        e.contains("flow.0.zero_rtt = true has no effect")
            && e.contains("connections = 2 or more")
            && e.contains("(in variant \"quic-0rtt\")"),
        "{e}"
    );
}

#[test]
fn a_key_that_matters_at_some_sweep_points_is_warned_about_once() {
    // zero_rtt matters at connections = 2 only: a warning, not an error, and one for the
    // whole sweep, not one per point.
    let w = warnings(
        &format!("{DOWNLOAD}zero_rtt = true\n"),
        &[],
        &["flow.connections=1,2,1", "link.delay=1ms,2ms"],
    );
    assert_eq!(
        w,
        ["t.toml:4:12: flow.0.zero_rtt = true has no effect: 0-RTT applies to the second and later connections of a download, and this flow makes one connection; set connections = 2 or more; it has no effect at 4 of the 6 sweep points that set it"]
    );
}

#[test]
fn workload_keys_on_a_bulk_flow_are_errors_naming_download() {
    let e = err("[[flow]]\nsize = \"10MB\"\n");
    assert_eq!(
        e,
        "t.toml:2:8: flow.0.size = \"10MB\" has no effect on a bulk flow, which sends until flow.stop or the end of the run; to transfer this many bytes set app = \"download\""
    );
    let e = err("[[flow]]\napp = \"bulk\"\nstreams = 4\n");
    assert!(
        e.contains("flow.0.streams = 4 has no effect on a bulk flow")
            && e.contains("set app = \"download\""),
        "{e}"
    );
    let e = err("[[flow]]\nconnections = 3\n");
    assert!(
        e.contains("flow.0.connections = 3 has no effect on a bulk flow")
            && e.contains("set app = \"download\""),
        "{e}"
    );
    // Swept between bulk and download: the download points use it.
    let w = warnings(
        "[[flow]]\nsize = \"1MB\"\n",
        &[],
        &["flow.app=bulk,download"],
    );
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("at 1 of the 2 sweep points"), "{w:?}");
}

#[test]
fn controller_keys_of_another_controller_are_errors() {
    let e = err("[[flow]]\nhystart = false\n");
    assert!(
        e.contains("flow.0.hystart = false applies only to cc = \"cubic\", and this flow has cc = \"newreno\"; set cc = \"cubic\""),
        "{e}"
    );
    let e = err("[[flow]]\ncc = \"cubic\"\nreno_profile = \"linux\"\n");
    assert!(
        e.contains("reno_profile = \"linux\" applies only to cc = \"newreno\""),
        "{e}"
    );
    let e = err("[[flow]]\ncc = \"quinn-cubic\"\ninitial_window = \"4pkt\"\n");
    assert!(e.contains("initial_window = \"4pkt\" applies only to quiclab's controllers (newreno, newreno-approx, cubic, dctcp, prague, bbr, bbr3)"), "{e}");
    let e = err("[[flow]]\nstack = \"tcp\"\npep_buffer = \"1MB\"\n");
    assert!(
        e.contains("pep_buffer = \"1MB\" applies only with a PEP"),
        "{e}"
    );
    let e = err("[[flow]]\nstack = \"tcp\"\napp = \"download\"\nhttp1_connections = 2\n");
    assert!(e.contains("applies only to http = \"http1.1\""), "{e}");
    // A sweep of the controller makes hystart matter at its cubic points.
    let w = warnings(
        "[[flow]]\nhystart = false\n",
        &[],
        &["flow.cc=newreno,cubic"],
    );
    assert_eq!(w.len(), 1, "{w:?}");
}

#[test]
fn a_rate_without_a_unit_is_refused_with_the_unit_forms() {
    let e = err("[link]\nrate = 20\n");
    assert!(
        e.starts_with("t.toml:2:8: link.rate: 20 has no unit; write a rate such as \"20Mbit\""),
        "{e}"
    );
    let e = err("[link]\nrate = \"20\"\n");
    assert!(e.contains("\"20Mbit\""), "{e}");
    let e = parse("", &["flow.client_access.rate=5"], &[])
        .expect_err("bare rate")
        .to_string();
    assert!(
        e.starts_with("--set flow.client_access.rate=5: ") && e.contains("\"5Mbit\""),
        "{e}"
    );
    // Zero is zero in every unit.
    assert!(parse(
        "[link]\nrate_schedule = [{ at = \"0s\", rate = \"1Mbit\" }, { at = \"1s\", rate = 0 }]\n",
        &[],
        &[]
    )
    .is_ok());
}

#[test]
fn a_rate_trace_keeps_bare_numbers_as_bit_per_second() {
    let dir = fsutil::PrivateDir::new("scenario-test-noops-").expect("temp dir");
    std::fs::write(dir.path().join("t.csv"), "0,10000000\n1,5Mbit\n").expect("write trace");
    let l = parse_str(
        "[link]\nrate_trace = \"t.csv\"\n",
        "t.toml",
        dir.path(),
        &[],
        &[],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let rate = format!("{:?}", l.points[0].scenario.bottleneck.up.rate);
    assert!(
        rate.contains("10000000") && rate.contains("5000000"),
        "{rate}"
    );
}

#[test]
fn gilbert_elliott_state_probabilities_are_not_taken_for_percentages() {
    // The shipped ge-loss example's parameters: nothing to warn about.
    let ge = "[link.loss]\nmodel = \"gilbert-elliott\"\ngamma = 0.99875\nbeta = 0.875\nh = 0.5\ntarget = \"5%\"\n";
    assert_eq!(warnings(ge, &[], &[]), Vec::<String>::new());
    let ge = "[link.loss]\nmodel = \"gilbert-elliott\"\np = 0.01\nr = 0.3\nk = 0.99\nh = 0.5\n";
    assert_eq!(warnings(ge, &[], &[]), Vec::<String>::new());
    // Its rates of loss still are: p = 0.1 (10%) and target = 0.2 (20%).
    let ge = "[link.loss]\nmodel = \"gilbert-elliott\"\np = 0.1\nr = 0.3\n";
    let w = warnings(ge, &[], &[]);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains("link.loss.p = 0.1 is a probability, i.e. 10%"),
        "{w:?}"
    );
    let ge = "[link.loss]\nmodel = \"gilbert-elliott\"\ngamma = 0.99875\nbeta = 0.875\nh = 0.5\ntarget = 0.2\n";
    let w = warnings(ge, &[], &[]);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("link.loss.target = 0.2"), "{w:?}");
}

#[test]
fn the_ge_loss_example_loads_without_warnings() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/examples/ge-loss.toml");
    let l = crate::load(&path, &[], &[]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(l.warnings, Vec::<String>::new());
}
