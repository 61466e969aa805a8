//! Common random numbers: the variants of a sweep point meet the same link randomness, and a
//! run's result does not depend on which other variants or sweep values run.

use std::collections::BTreeMap;
use std::path::Path;

use scenario::{Inputs, LoadedScenario};

/// Three variants over a lossy, jittery path with cross traffic: `a` and `b` differ only in
/// the flow's name (nothing on the wire changes), `c` changes the controller (what is sent
/// changes, the random streams do not; the run ends when the download does, so how much cross
/// traffic it meets differs).
const SCENARIO: &str = r#"
[run]
duration = "4s"
reps = 2
seed = 5

[link]
rate = "10Mbit"
delay = "10ms"
jitter = "1ms"
queue = "50pkt"

[[flow]]
app = "download"
size = "600kB"

[[cross]]
pattern = "uniform"
size_min = "200B"
size_max = "1000B"
gap_min = "5ms"
gap_max = "15ms"

[[variant]]
name = "a"
set = { "flow.name" = "a" }

[[variant]]
name = "b"
set = { "flow.name" = "b" }

[[variant]]
name = "c"
set = { "flow.cc" = "cubic" }

[sweep]
"link.loss" = ["1%", "3%"]
"#;

fn load(inputs: &Inputs) -> LoadedScenario {
    scenario::parse_with(SCENARIO, "crn.toml", Path::new("."), inputs)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Every run's result as JSON without its position in this sweep (`id`, `point`), keyed by
/// its sweep labels and repetition.
fn results(l: &LoadedScenario) -> BTreeMap<(Vec<(String, String)>, u32), serde_json::Value> {
    let opts = sim::RunOptions::default();
    l.runs()
        .iter()
        .map(|spec| {
            let point = &l.points[spec.point];
            let run = sim::run(point, spec, &opts).unwrap_or_else(|e| panic!("{}: {e}", spec.id));
            let mut json = serde_json::to_value(&run).expect("json");
            let map = json.as_object_mut().expect("a run is an object");
            map.remove("id");
            map.remove("point");
            let mut labels = point.axes.clone();
            labels.sort();
            ((labels, spec.rep), json)
        })
        .collect()
}

fn labels(variant: &str, loss: &str) -> Vec<(String, String)> {
    let mut l = vec![
        ("link.loss".to_string(), loss.to_string()),
        ("variant".to_string(), variant.to_string()),
    ];
    l.sort();
    l
}

fn lost(run: &serde_json::Value) -> (u64, u64) {
    let links = run["links"].as_object().expect("links");
    let sum = |k: &str| {
        links
            .values()
            .map(|l| l[k].as_u64().unwrap_or(0))
            .sum::<u64>()
    };
    (sum("lost_packets"), sum("forwarded_packets"))
}

#[test]
fn variants_that_send_alike_lose_the_same_packets() {
    let all = results(&load(&Inputs::default()));
    assert_eq!(all.len(), 3 * 2 * 2);
    for loss in ["1%", "3%"] {
        for rep in 0..2 {
            let a = &all[&(labels("a", loss), rep)];
            let b = &all[&(labels("b", loss), rep)];
            let c = &all[&(labels("c", loss), rep)];
            assert_eq!(a["seed"], c["seed"], "one seed for the variants of a point");
            // Only the flow's name tells a and b apart.
            assert_eq!(
                a["links"], b["links"],
                "{loss} r{rep}: same packets, same fate"
            );
            assert_eq!(a["cross"], b["cross"], "{loss} r{rep}");
            assert_eq!(
                a["flows"][0]["completion_s"], b["flows"][0]["completion_s"],
                "{loss} r{rep}"
            );
            assert!(lost(a).0 > 0, "{loss} r{rep}: the path loses packets");
        }
        // Repetitions are independent draws.
        assert_ne!(
            lost(&all[&(labels("a", loss), 0)]),
            lost(&all[&(labels("a", loss), 1)]),
            "{loss}: two repetitions should not lose alike"
        );
    }
}

#[test]
fn selecting_or_reordering_variants_and_values_keeps_every_other_result() {
    let all = results(&load(&Inputs::default()));
    let cases = [
        Inputs {
            variants: vec!["c".into()],
            ..Inputs::default()
        },
        Inputs {
            variants: vec!["b,a".into()],
            axes: vec!["link.loss=3%,1%".into()],
            ..Inputs::default()
        },
        Inputs {
            axes: vec!["link.loss=2%,3%".into()],
            ..Inputs::default()
        },
    ];
    for case in &cases {
        let some = results(&load(case));
        let mut shared = 0;
        for (key, run) in &some {
            if let Some(full) = all.get(key) {
                assert_eq!(
                    serde_json::to_string(run).expect("json"),
                    serde_json::to_string(full).expect("json"),
                    "{case:?}: {key:?}"
                );
                shared += 1;
            }
        }
        assert!(shared >= 2, "{case:?}: shares runs with the full sweep");
    }
}
