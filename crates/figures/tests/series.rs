//! The time-series figure draws the bottleneck's capacity over the goodput and a panel of its
//! queue delay, leaving out the bins where a value was not measured (empty CSV fields).

use std::collections::BTreeSet;

use figures::data::{PointData, ResultsDir, RunData};
use serde_json::json;

mod common;
use common::smallest_text_pt;

const HEADER: &str = "t_s,flow,goodput_bps,payload_throughput_bps,cwnd_bytes,srtt_ms,in_flight_bytes,queue_up_packets,queue_down_packets,queue_up_bytes,queue_down_bytes,capacity_up_bps,capacity_down_bps,queue_delay_up_mean_ms,queue_delay_up_max_ms,queue_delay_down_mean_ms,queue_delay_down_max_ms";

fn results(csv: &str) -> (fsutil::PrivateDir, ResultsDir) {
    let tmp = fsutil::PrivateDir::new("figures-test-series-").expect("temp dir");
    std::fs::create_dir(tmp.path().join("series")).expect("series dir");
    std::fs::write(tmp.path().join("series/p0-r0.csv"), csv).expect("write series");
    let d = ResultsDir {
        dir: tmp.path().to_path_buf(),
        scenario: "t".into(),
        base_seed: Some(1),
        points: vec![PointData::default()],
        runs: vec![RunData {
            id: "p0-r0".into(),
            point: 0,
            rep: 0,
            json: json!({"id": "p0-r0"}),
            metrics: Default::default(),
        }],
        series: BTreeSet::from(["p0-r0".to_string()]),
    };
    (tmp, d)
}

#[test]
fn capacity_and_queue_delay_are_drawn_where_measured() {
    let csv = format!(
        "{HEADER}\n\
         0.1,a,1000000,1000000,14000,60,14000,0,0,0,0,5000000,12000000,,,,\n\
         0.2,a,9000000,9000000,28000,61,28000,0,3,0,4500,5000000,24000000,0,0,1.5,3\n\
         0.2,b,2000000,2000000,28000,61,28000,0,3,0,4500,5000000,24000000,0,0,1.5,3\n"
    );
    let (_tmp, d) = results(&csv);
    let table = figures::series::read(&d.series_path("p0-r0")).expect("read");
    assert!(
        table.columns["queue_delay_down_mean_ms"][0].is_nan(),
        "absent"
    );
    let fig = figures::series::figure(&d, "p0-r0", figures::FigureSize::Screen).expect("figure");
    for label in [
        "capacity down",
        "capacity up",
        "queue delay [ms]",
        "queue delay down",
        "queue delay up",
    ] {
        assert!(fig.svg.contains(label), "{label} missing");
    }
    // Without the link columns (series written before they existed): neither is drawn.
    let old: Vec<&str> = HEADER.split(',').take(11).collect();
    let csv = format!(
        "{}\n0.1,a,1000000,1000000,14000,60,14000,0,0,0,0\n0.2,a,2000000,2000000,14000,60,14000,0,0,0,0\n",
        old.join(",")
    );
    let (_tmp, d) = results(&csv);
    let fig = figures::series::figure(&d, "p0-r0", figures::FigureSize::Screen).expect("figure");
    assert!(!fig.svg.contains("capacity") && !fig.svg.contains("queue delay"));
}

#[test]
fn goodput_says_it_is_in_order_and_is_drawn_beside_the_arrival_rate() {
    // The bin after a repaired loss: 30 Mbit/s of goodput on a 12 Mbit/s link, while payload
    // arrived at 12 Mbit/s.
    let csv = format!(
        "{HEADER}\n\
         0.1,a,0,12000000,14000,60,14000,0,0,0,0,12000000,12000000,0,0,0,0\n\
         0.2,a,30000000,12000000,28000,61,28000,0,3,0,4500,12000000,12000000,0,0,1.5,3\n"
    );
    let (_tmp, d) = results(&csv);
    let fig = figures::series::figure(&d, "p0-r0", figures::FigureSize::Screen).expect("figure");
    assert!(fig.svg.contains("goodput (in order)"), "panel label");
    assert!(
        fig.svg.contains("a arrival rate"),
        "the arrival rate is drawn"
    );
    assert!(fig.caption.contains("in order"), "{}", fig.caption);
}

#[test]
fn a_one_column_time_series_prints_its_text_at_8_pt_or_more() {
    let csv = format!(
        "{HEADER}\n\
         0.1,a,1000000,1000000,14000,60,14000,0,0,0,0,5000000,12000000,0,0,1.0,2\n\
         0.2,a,9000000,9000000,28000,61,28000,0,3,0,4500,5000000,24000000,0,0,1.5,3\n"
    );
    let (_tmp, d) = results(&csv);
    let fig = figures::series::figure(&d, "p0-r0", figures::FigureSize::OneColumn).expect("figure");
    let doc = roxmltree::Document::parse(&fig.svg).expect("svg");
    assert_eq!(doc.root_element().attribute("width"), Some("3.5in"));
    let pt = smallest_text_pt(&fig.svg, 3.5 * 72.0);
    assert!(pt >= 7.99, "smallest text {pt:.2} pt");
    assert!(
        fig.svg.contains("goodput (in order)"),
        "every panel is still drawn"
    );
    // The screen figure shrunk to a column would not do: the measure can fail.
    let screen = figures::series::figure(&d, "p0-r0", figures::FigureSize::Screen).expect("figure");
    assert!(smallest_text_pt(&screen.svg, 3.5 * 72.0) < 4.0);
}
