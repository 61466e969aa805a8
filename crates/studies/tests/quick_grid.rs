//! The validation suite on its reduced grid: every case must pass its tolerance.

use studies::validate::{run, Grid};

/// All cores, no progress output.
const EXECUTOR: experiment::Threads = experiment::Threads { threads: None };

fn check(case: &str) -> studies::validate::ValidationReport {
    let report = run(Grid::Quick, &[case.to_string()], &EXECUTOR, &()).expect("validation runs");
    println!("{}", report.render());
    assert!(report.passed(), "{case} failed:\n{}", report.render());
    report
}

/// The case's paper figure: its title starts with `fig`, and every series has as many measured
/// values as analytic points on the grid.
fn drawn_as_the_paper_does(report: &studies::validate::ValidationReport, fig: &str, series: usize) {
    assert_eq!(report.figures.len(), 1, "one figure per case");
    let f = &report.figures[0];
    assert!(f.title.starts_with(fig), "{}", f.title);
    assert_eq!(f.series.len(), series, "{f:?}");
    for s in &f.series {
        assert!(!s.measured.is_empty(), "{f:?}");
    }
}

#[test]
fn link_bandwidth_matches_tpmax() {
    check("link-bandwidth");
}

#[test]
fn mathis_matches_theory() {
    check("mathis");
}

#[test]
fn flow_control_limit_matches_window_over_rtt() {
    check("flow-control");
}

#[test]
fn fair_share_is_fair() {
    check("fair-share");
}

#[test]
fn tcp_link_bandwidth_matches_tpmax() {
    check("tcp-link-bandwidth");
}

#[test]
fn tcp_mathis_matches_theory() {
    check("tcp-mathis");
}

#[test]
fn tcp_fair_share_is_fair() {
    check("tcp-fair-share");
}

#[test]
fn quic_and_tcp_agree_on_a_clean_path() {
    check("quic-vs-tcp");
}

// The QUIC research model: seed 001's four cases with INET's configuration, Mathis
// with INET's assumptions up to 2% loss, and the cross-check against quinn configured alike.

#[test]
fn model_link_bandwidth_matches_tpmax() {
    drawn_as_the_paper_does(&check("model-link-bandwidth"), "Fig. 3", 1);
}

#[test]
fn model_mathis_matches_theory() {
    drawn_as_the_paper_does(&check("model-mathis"), "Fig. 4", 2);
}

#[test]
fn model_mathis_holds_up_to_two_percent_loss() {
    check("model-high-loss");
}

#[test]
fn model_flow_control_limit_matches_window_over_rtt() {
    let report = check("model-flow-control");
    let series = report.figures.first().map_or(0, |f| f.series.len());
    assert!(series >= 1);
    drawn_as_the_paper_does(&report, "Fig. 5", series);
}

#[test]
fn model_fair_share_is_fair() {
    drawn_as_the_paper_does(&check("model-fair-share"), "Fig. 6", 3);
}

#[test]
fn model_and_quinn_agree_when_configured_alike() {
    check("model-vs-quic");
}

#[test]
fn codel_drops_at_its_control_law_spacing() {
    check("codel-control-law");
}

#[test]
fn codel_holds_the_standing_queue_near_its_target() {
    check("codel-standing-queue");
}

#[test]
fn red_average_queue_follows_its_parameters() {
    check("red-average-queue");
}

#[test]
fn pie_settles_around_its_target() {
    check("pie-target");
}

#[test]
fn fq_codel_isolates_a_sparse_flow() {
    check("fq-codel-sparse");
}

#[test]
fn fq_codel_shares_between_round_trips() {
    check("fq-codel-rtt-fairness");
}

#[test]
fn ecn_turns_aqm_drops_into_marks() {
    check("aqm-ecn");
}

#[test]
fn dualpi2_keeps_the_l4s_queue_short() {
    check("dualpi2-l4s");
}
