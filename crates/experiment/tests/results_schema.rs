//! docs/results.md lists every column that results.parquet, connections.parquet and
//! series.parquet hold, with its type: the doc cannot drift from the code. A reference sweep exercises every stack (quic,
//! tcp, quic-model), cross traffic, a latency probe, a measurement window and a sweep axis; a column it writes
//! that the doc's tables do not list (or list with another type) fails the test.
//!
//! Column names with parts that depend on the scenario are normalised before the lookup: a sweep
//! axis becomes `<axis>`, a list index `<i>`, a link direction `<dir>`.

use std::collections::BTreeMap;
use std::path::Path;

use experiment::{run_sweep, Sweep, Threads};
use sim::SimEngine;

const REFERENCE: &str = r#"
[run]
duration = "3s"
sample_interval = "500ms"
measure_from = "100ms"

[link]
rate = "10Mbit"
delay = "10ms"

[[flow]]
name = "q"
app = "download"
size = "200kB"

[[flow]]
name = "t"
stack = "tcp"
app = "bulk"
ecn = true

[[flow]]
name = "m"
stack = "quic-model"
app = "bulk"

[[cross]]
name = "udp"
direction = "up"
pattern = "uniform"
size_min = "100B"
size_max = "1000B"
gap_min = "25ms"
gap_max = "100ms"

[[probe]]
flow = "t"
interval = "100ms"
"#;

/// `| \`name\` | type | meaning |` rows of the doc's tables: name → type.
fn documented() -> BTreeMap<String, String> {
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/results.md");
    let text = std::fs::read_to_string(&doc).expect("docs/results.md");
    text.lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let name = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
            Some((name.to_string(), cells.get(2)?.to_string()))
        })
        .collect()
}

/// The documented name of `column`: axes as `<axis>`, list indices as `<i>`.
fn normalise(column: &str, axes: &[&str]) -> String {
    if axes.contains(&column) {
        return "<axis>".into();
    }
    let column = column
        .replace("links.bottleneck_up.", "links.<dir>.")
        .replace("links.bottleneck_down.", "links.<dir>.");
    column
        .split('.')
        .map(|p| if p.parse::<usize>().is_ok() { "<i>" } else { p })
        .collect::<Vec<_>>()
        .join(".")
}

#[test]
fn the_doc_lists_every_column_with_its_type() {
    let tmp = fsutil::PrivateDir::new("quiclab-schema-").expect("dir");
    let loaded = scenario::parse_str(
        REFERENCE,
        "reference.toml",
        Path::new("."),
        &[],
        &["link.loss=0%,1%".into()],
    )
    .expect("valid scenario");
    let out = tmp.path().join("out");
    let sweep = Sweep {
        loaded: &loaded,
        out: &out,
        resume: false,
        series: true,
    };
    run_sweep(
        &sweep,
        &SimEngine::default(),
        &Threads::new(Some(2)),
        &|| false,
        &(),
    )
    .expect("sweep");
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(out.join("results.jsonl"))
        .expect("results")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    let runs = analysis::flatten(&lines);
    let series = analysis::series_table(&lines, |id| {
        std::fs::read_to_string(out.join(format!("series/{id}.csv"))).ok()
    });
    let connections = analysis::connections_table(&lines);
    assert!(runs.rows == 6 && series.rows > 0 && connections.rows > 0);
    let doc = documented();
    let mut problems = Vec::new();
    for (table, t) in [
        ("results", &runs),
        ("series", &series),
        ("connections", &connections),
    ] {
        for c in &t.columns {
            let name = normalise(&c.name, &["link.loss"]);
            match doc.get(&name) {
                None => problems.push(format!(
                    "{table}: `{name}` ({}) is not in docs/results.md",
                    c.values.type_name()
                )),
                Some(ty) if ty != c.values.type_name() => problems.push(format!(
                    "{table}: `{name}` is {} but docs/results.md says {ty}",
                    c.values.type_name()
                )),
                Some(_) => {}
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    tmp.remove().expect("clean up");
}
