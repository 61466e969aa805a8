//! The one flattening of results into typed columns: one row per run × flow.
//!
//! `results.jsonl` nests (a run holds flows, links, fairness …); an analysis wants a flat
//! table. [`flatten`] makes it, and everything tabular uses it — `results.parquet` and the
//! Python package's DataFrames — so the column names and types agree everywhere. The schema
//! is documented in `docs/results.md` (a test checks that every column is listed there).
//!
//! Naming (every name is a path in the results line, with these rules):
//! - Identity first: `id`, `point`, `rep`, `seed`, `scenario`, then one column per **sweep
//!   axis**, named as the axis (`link.delay`), holding its value as written in the scenario
//!   (a string). An axis whose name is already a column gets the prefix `axis.`.
//! - `flow_index` (position of the flow in the scenario) and `flow` (its name); then the
//!   **flow's fields under their own names** (`goodput_bps`, `completion_s`, …). Objects nest
//!   with dots (`config.cc`, `model.cwnd_limited_s`); arrays of numbers get their index
//!   (`datagrams_sent.0`); arrays of strings are joined with newlines into one string;
//!   `connections` becomes their count (per-connection values stay in results.jsonl).
//! - Then the **run's other fields**, repeated on each of its rows: `end_s`, `events`,
//!   `links.bottleneck_up.lost_packets`, `fairness.jain`, `cross.0.sent_bytes`, `emu.rx_frames`,
//!   `warnings`.
//!
//! Types come from the JSON values: a column of integers is `i64` (`u64` if one exceeds
//! `i64::MAX`; `seed` is always `u64`), a column with any fraction is `f64`, `bool` and `string`
//! columns likewise; a column mixing kinds is a string column. **Absent is null, never 0**: a
//! run without a field (a TCP flow has no `model.*`) has a null there. A column that is null in
//! every row is `f64` (`error`: `string`). Error records (runs the engine crashed on) measure nothing and are left
//! out; a run without flows still has one row, its flow columns null.
//!
//! Time series have their own table ([`series_table`]): one row per run × sample, the run's
//! identity and axes first, then the columns of `series/<id>.csv`. Connections too
//! ([`connections_table`]): one row per run × flow × connection, the run's identity and axes,
//! `flow_index`, `flow` and `connection` (its index within the flow, from 0), then the
//! connection's fields under their own names (`handshake_s`, `zero_rtt_accepted`, …), so a
//! flow's second connection (the one that resumes, sends 0-RTT data, reuses a token) is a row
//! of its own.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use results::store::is_error_record;

/// Values of one column, one per row (`None` = null).
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    /// 64-bit floats.
    F64(Vec<Option<f64>>),
    /// Signed 64-bit integers.
    I64(Vec<Option<i64>>),
    /// Unsigned 64-bit integers (`seed`, and integers beyond `i64::MAX`).
    U64(Vec<Option<u64>>),
    /// UTF-8 strings.
    Str(Vec<Option<String>>),
    /// Booleans.
    Bool(Vec<Option<bool>>),
}

impl Values {
    /// Number of rows.
    pub fn len(&self) -> usize {
        match self {
            Values::F64(v) => v.len(),
            Values::I64(v) => v.len(),
            Values::U64(v) => v.len(),
            Values::Str(v) => v.len(),
            Values::Bool(v) => v.len(),
        }
    }

    /// Whether the column has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The type's name as documented: `f64`, `i64`, `u64`, `string` or `bool`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Values::F64(_) => "f64",
            Values::I64(_) => "i64",
            Values::U64(_) => "u64",
            Values::Str(_) => "string",
            Values::Bool(_) => "bool",
        }
    }

    /// Row `i` as JSON (`null` when absent), for comparisons and tests.
    pub fn get(&self, i: usize) -> Value {
        fn or_null<T: Into<Value> + Clone>(v: Option<&Option<T>>) -> Value {
            v.and_then(Clone::clone).map_or(Value::Null, Into::into)
        }
        match self {
            Values::F64(v) => or_null(v.get(i)),
            Values::I64(v) => or_null(v.get(i)),
            Values::U64(v) => or_null(v.get(i)),
            Values::Str(v) => or_null(v.get(i)),
            Values::Bool(v) => or_null(v.get(i)),
        }
    }
}

/// One named column.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// Column name (see the module doc for the naming rules).
    pub name: String,
    /// Its values.
    pub values: Values,
}

/// Typed, nullable columns of equal length.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Table {
    /// Number of rows.
    pub rows: usize,
    /// The columns, in a fixed order (identity, axes, flow, run).
    pub columns: Vec<Column>,
}

impl Table {
    /// The column called `name`.
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// Column names in order.
    pub fn names(&self) -> Vec<&str> {
        self.columns.iter().map(|c| c.name.as_str()).collect()
    }
}

/// Run identity columns, in this order, with their fixed types.
const IDENTITY: [&str; 5] = ["id", "point", "rep", "seed", "scenario"];
/// Keys of a run line that are not flattened as run fields.
const NOT_RUN_FIELDS: [&str; 3] = ["axes", "flows", "error"];

/// One row per run × flow of `runs` (results.jsonl lines, in the order given).
pub fn flatten(runs: &[Value]) -> Table {
    let mut t = Flattener::default();
    for run in runs {
        t.add_run(run);
    }
    t.finish()
}

/// The time series of `runs`: one row per run × sample. `series(id)` gives a run's
/// `series/<id>.csv` text (`None`: the run has no series file, and no rows).
pub fn series_table(runs: &[Value], mut series: impl FnMut(&str) -> Option<String>) -> Table {
    let mut t = Flattener::default();
    for run in runs {
        if let Some(text) = run.get("id").and_then(Value::as_str).and_then(&mut series) {
            t.add_series(run, &text);
        }
    }
    t.finish()
}

/// The connections of `runs`: one row per run × flow × connection (see the module doc).
pub fn connections_table(runs: &[Value]) -> Table {
    let mut t = Flattener::default();
    for run in runs {
        t.add_connections(run);
    }
    t.finish()
}

/// Builds a table one run at a time, so a large results file need not be held as `Value`s
/// (what [`flatten`] and [`series_table`] do over a slice).
#[derive(Default)]
pub struct Flattener {
    b: Builder,
}

impl Flattener {
    /// Adds the rows of one results line (one per flow; none for an error record).
    pub fn add_run(&mut self, run: &Value) {
        if is_error_record(run) {
            return;
        }
        let Some(obj) = run.as_object() else { return };
        let mut shared = Vec::new();
        identity(obj, &mut shared);
        let mut run_fields = Vec::new();
        for (k, v) in obj {
            if !IDENTITY.contains(&k.as_str()) && !NOT_RUN_FIELDS.contains(&k.as_str()) {
                walk(v, k, &mut run_fields);
            }
        }
        let flows = obj.get("flows").and_then(Value::as_array);
        let flows: Vec<Option<&Value>> = match flows {
            Some(f) if !f.is_empty() => f.iter().map(Some).collect(),
            _ => vec![None],
        };
        for (i, flow) in flows.into_iter().enumerate() {
            let mut cells = shared.clone();
            if let Some(flow) = flow {
                cells.push(("flow_index".into(), Value::from(i)));
                let flow = flow.as_object();
                cells.push((
                    "flow".into(),
                    flow.and_then(|f| f.get("name"))
                        .cloned()
                        .unwrap_or(Value::Null),
                ));
                for (k, v) in flow.into_iter().flatten() {
                    if k != "name" {
                        walk(v, k, &mut cells);
                    }
                }
            } else {
                cells.push(("flow_index".into(), Value::Null));
                cells.push(("flow".into(), Value::Null));
            }
            cells.extend(run_fields.iter().cloned());
            self.b.row(cells);
        }
    }

    /// Adds the connection rows of one results line (none for an error record or a flow
    /// without connections).
    pub fn add_connections(&mut self, run: &Value) {
        if is_error_record(run) {
            return;
        }
        let Some(obj) = run.as_object() else { return };
        let mut shared = Vec::new();
        identity(obj, &mut shared);
        let flows = obj.get("flows").and_then(Value::as_array);
        for (i, flow) in flows.into_iter().flatten().enumerate() {
            let name = flow.get("name").cloned().unwrap_or(Value::Null);
            let connections = flow.get("connections").and_then(Value::as_array);
            for (c, connection) in connections.into_iter().flatten().enumerate() {
                let mut cells = shared.clone();
                cells.push(("flow_index".into(), Value::from(i)));
                cells.push(("flow".into(), name.clone()));
                cells.push(("connection".into(), Value::from(c)));
                for (k, v) in connection.as_object().into_iter().flatten() {
                    walk(v, k, &mut cells);
                }
                self.b.row(cells);
            }
        }
    }

    /// Adds the series rows of one run: `csv` is its `series/<id>.csv`.
    pub fn add_series(&mut self, run: &Value, csv: &str) {
        if is_error_record(run) {
            return;
        }
        let Some(obj) = run.as_object() else { return };
        let mut shared = Vec::new();
        identity(obj, &mut shared);
        let mut lines = csv.lines();
        let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
        for line in lines.filter(|l| !l.is_empty()) {
            let mut cells = shared.clone();
            for (name, text) in header.iter().zip(line.split(',')) {
                cells.push((name.to_string(), csv_cell(name, text)));
            }
            self.b.row(cells);
        }
    }

    /// The table.
    pub fn finish(self) -> Table {
        self.b.finish()
    }
}

/// A series CSV cell as JSON, typed by its column rather than by how it prints (the CSV
/// writes `0.0` as `0`): `flow` is a string, counts (`…_bytes`, `…_packets`) are integers,
/// everything else is a float. Unparsable cells are null.
fn csv_cell(name: &str, text: &str) -> Value {
    if name == "flow" {
        return Value::from(text);
    }
    if name.ends_with("_bytes") || name.ends_with("_packets") {
        return text.parse::<i64>().map_or(Value::Null, Value::from);
    }
    text.parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(Value::Null, Value::Number)
}

/// The identity cells of a run: id, point, rep, seed, scenario, then its axes.
fn identity(obj: &Map<String, Value>, cells: &mut Vec<(String, Value)>) {
    for k in IDENTITY {
        cells.push((k.into(), obj.get(k).cloned().unwrap_or(Value::Null)));
    }
    if let Some(axes) = obj.get("axes").and_then(Value::as_object) {
        for (k, v) in axes {
            let reserved = IDENTITY.contains(&k.as_str()) || k == "flow" || k == "flow_index";
            let name = if reserved {
                format!("axis.{k}")
            } else {
                k.clone()
            };
            cells.push((name, v.clone()));
        }
    }
}

/// Appends the cells of `value` at `path` (see the module doc's rules).
fn walk(value: &Value, path: &str, cells: &mut Vec<(String, Value)>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                walk(v, &format!("{path}.{k}"), cells);
            }
        }
        Value::Array(items) if path == "connections" => {
            cells.push((path.into(), Value::from(items.len())));
        }
        Value::Array(items) if items.iter().all(Value::is_string) && !items.is_empty() => {
            let joined: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
            cells.push((path.into(), Value::from(joined.join("\n"))));
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                walk(v, &format!("{path}.{i}"), cells);
            }
        }
        scalar => cells.push((path.into(), scalar.clone())),
    }
}

/// What a column's values have been so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Null,
    Int,
    /// An integer beyond `i64::MAX` was seen.
    BigInt,
    Float,
    Bool,
    Str,
}

impl Kind {
    fn of(v: &Value) -> Kind {
        match v {
            Value::Null => Kind::Null,
            Value::Bool(_) => Kind::Bool,
            Value::Number(n) if n.is_i64() => Kind::Int,
            Value::Number(n) if n.is_u64() => Kind::BigInt,
            Value::Number(_) => Kind::Float,
            _ => Kind::Str,
        }
    }

    fn merge(self, other: Kind) -> Kind {
        use Kind::*;
        match (self, other) {
            (a, b) if a == b => a,
            (Null, k) | (k, Null) => k,
            (Int, BigInt) | (BigInt, Int) => BigInt,
            (Int | BigInt, Float) | (Float, Int | BigInt) => Float,
            _ => Str,
        }
    }
}

/// Collects rows of (name, value) cells into columns, names in order of first appearance.
#[derive(Default)]
struct Builder {
    rows: usize,
    order: Vec<String>,
    index: BTreeMap<String, usize>,
    /// Per column: (kind so far, (row, value) of each present cell).
    cells: Vec<(Kind, Vec<(usize, Value)>)>,
}

impl Builder {
    fn row(&mut self, cells: Vec<(String, Value)>) {
        let row = self.rows;
        self.rows += 1;
        for (name, value) in cells {
            let i = match self.index.get(&name) {
                Some(&i) => i,
                None => {
                    self.order.push(name.clone());
                    self.index.insert(name, self.cells.len());
                    self.cells.push((Kind::Null, Vec::new()));
                    self.cells.len() - 1
                }
            };
            let (kind, present) = &mut self.cells[i];
            *kind = kind.merge(Kind::of(&value));
            if !value.is_null() {
                present.push((row, value));
            }
        }
    }

    fn finish(self) -> Table {
        let rows = self.rows;
        let columns = self
            .order
            .into_iter()
            .zip(self.cells)
            .map(|(name, (kind, present))| {
                // Types no data can show: seeds use all 64 bits; an error is text even when
                // no run had one.
                let kind = match (name.as_str(), kind) {
                    ("seed", _) => Kind::BigInt,
                    ("error", Kind::Null) => Kind::Str,
                    (_, k) => k,
                };
                Column {
                    values: typed(kind, rows, present),
                    name,
                }
            })
            .collect();
        Table { rows, columns }
    }
}

/// The cells as a typed column of `rows` values.
fn typed(kind: Kind, rows: usize, present: Vec<(usize, Value)>) -> Values {
    fn fill<T>(
        rows: usize,
        present: Vec<(usize, Value)>,
        f: impl Fn(&Value) -> Option<T>,
    ) -> Vec<Option<T>> {
        let mut out: Vec<Option<T>> = (0..rows).map(|_| None).collect();
        for (r, v) in present {
            out[r] = f(&v);
        }
        out
    }
    match kind {
        Kind::Null | Kind::Float => Values::F64(fill(rows, present, Value::as_f64)),
        Kind::Int => Values::I64(fill(rows, present, Value::as_i64)),
        Kind::BigInt => Values::U64(fill(rows, present, Value::as_u64)),
        Kind::Bool => Values::Bool(fill(rows, present, Value::as_bool)),
        Kind::Str => Values::Str(fill(rows, present, |v| {
            Some(match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(id: &str, point: u64, delay: &str, flows: Value) -> Value {
        json!({
            "id": id, "point": point, "rep": 0, "seed": u64::MAX - point, "scenario": "s",
            "axes": {"link.delay": delay}, "end_s": 1.5, "events": 10,
            "flows": flows,
            "links": {"bottleneck_down": {"lost_packets": 3, "utilisation": 0.5}},
            "fairness": null, "cross": [], "warnings": ["a", "b"],
        })
    }

    #[test]
    fn one_row_per_run_and_flow_with_typed_nullable_columns() {
        let runs = vec![
            run(
                "p0-r0",
                0,
                "5ms",
                json!([
                    {"name": "q", "goodput_bps": 1.0e6, "packets_lost": 2, "datagrams_sent": [4, null],
                     "config": {"cc": "cubic"}, "connections": [{}, {}], "error": null},
                    {"name": "t", "goodput_bps": null, "packets_lost": null, "datagrams_sent": [1, 2],
                     "connections": []},
                ]),
            ),
            json!({"id": "p0-r1", "error": "the engine panicked: x"}),
            run("p1-r0", 1, "20ms", json!([])),
        ];
        let t = flatten(&runs);
        assert_eq!(
            t.rows, 3,
            "two flows, an error record left out, a run without flows"
        );
        assert_eq!(
            &t.names()[..8],
            [
                "id",
                "point",
                "rep",
                "seed",
                "scenario",
                "link.delay",
                "flow_index",
                "flow"
            ]
        );
        let col = |n: &str| t.column(n).unwrap_or_else(|| panic!("no column {n}"));
        let types: Vec<(&str, &str)> = [
            "seed",
            "point",
            "goodput_bps",
            "packets_lost",
            "datagrams_sent.1",
            "config.cc",
            "connections",
            "error",
            "links.bottleneck_down.lost_packets",
            "warnings",
            "fairness",
        ]
        .into_iter()
        .map(|n| (n, col(n).values.type_name()))
        .collect();
        assert_eq!(
            types,
            [
                ("seed", "u64"),
                ("point", "i64"),
                ("goodput_bps", "f64"),
                ("packets_lost", "i64"),
                ("datagrams_sent.1", "i64"),
                ("config.cc", "string"),
                ("connections", "i64"),
                ("error", "string"), // null everywhere, but text when present
                ("links.bottleneck_down.lost_packets", "i64"),
                ("warnings", "string"),
                ("fairness", "f64"),
            ]
        );
        let values = |n: &str| {
            (0..t.rows)
                .map(|r| col(n).values.get(r))
                .collect::<Vec<_>>()
        };
        assert_eq!(values("flow"), [json!("q"), json!("t"), Value::Null]);
        assert_eq!(values("flow_index"), [json!(0), json!(1), Value::Null]);
        // Absent is null, never 0.
        assert_eq!(values("packets_lost"), [json!(2), Value::Null, Value::Null]);
        assert_eq!(
            values("datagrams_sent.1"),
            [Value::Null, json!(2), Value::Null]
        );
        assert_eq!(
            values("config.cc"),
            [json!("cubic"), Value::Null, Value::Null]
        );
        assert_eq!(values("connections"), [json!(2), json!(0), Value::Null]);
        assert_eq!(
            values("link.delay"),
            [json!("5ms"), json!("5ms"), json!("20ms")]
        );
        assert_eq!(
            values("warnings"),
            [json!("a\nb"), json!("a\nb"), json!("a\nb")]
        );
        assert_eq!(values("seed")[2], json!(u64::MAX - 1));
        for c in &t.columns {
            assert_eq!(c.values.len(), t.rows, "{}", c.name);
        }
    }

    #[test]
    fn an_axis_named_like_an_identity_column_is_prefixed_and_kinds_mix_to_string() {
        let runs = vec![
            json!({"id": "a", "axes": {"seed": "1", "variant": "x"}, "flows": [{"name": "f", "v": 1}]}),
            json!({"id": "b", "axes": {"seed": "2", "variant": "y"}, "flows": [{"name": "f", "v": "n/a"}]}),
        ];
        let t = flatten(&runs);
        assert!(t.column("axis.seed").is_some() && t.column("variant").is_some());
        assert_eq!(
            t.column("v").expect("v").values,
            Values::Str(vec![Some("1".into()), Some("n/a".into())])
        );
    }

    #[test]
    fn series_rows_carry_the_runs_identity() {
        let runs = vec![
            run("p0-r0", 0, "5ms", json!([])),
            run("p1-r0", 1, "9ms", json!([])),
        ];
        let csv = "t_s,flow,goodput_bps,cwnd_bytes\n0.5,q,0,100\n1,q,2.5,200\n";
        let t = series_table(&runs, |id| (id == "p1-r0").then(|| csv.to_string()));
        assert_eq!(t.rows, 2);
        assert_eq!(
            t.names(),
            [
                "id",
                "point",
                "rep",
                "seed",
                "scenario",
                "link.delay",
                "t_s",
                "flow",
                "goodput_bps",
                "cwnd_bytes"
            ]
        );
        let col = |n: &str| &t.column(n).expect(n).values;
        assert_eq!(col("t_s"), &Values::F64(vec![Some(0.5), Some(1.0)]));
        assert_eq!(col("goodput_bps"), &Values::F64(vec![Some(0.0), Some(2.5)]));
        assert_eq!(col("cwnd_bytes"), &Values::I64(vec![Some(100), Some(200)]));
        assert_eq!(col("id").get(1), json!("p1-r0"));
    }

    #[test]
    fn connections_get_a_row_each_with_their_flow_and_index() {
        let runs = [
            json!({"id": "p0-r0", "point": 0, "rep": 0, "seed": 1, "scenario": "s",
                   "axes": {"variant": "0rtt"},
                   "flows": [
                       {"name": "q", "connections": [
                           {"started_s": 0.0, "handshake_s": 0.08, "zero_rtt_accepted": false},
                           {"started_s": 1.0, "handshake_s": 0.04, "zero_rtt_accepted": true}]},
                       {"name": "bulk", "connections": []}]}),
            json!({"id": "p0-r1", "error": "crashed"}),
        ];
        let t = connections_table(&runs);
        assert_eq!(
            t.rows, 2,
            "one row per connection; none for a flow without, or an error"
        );
        let col = |name: &str| {
            let c = t.column(name).unwrap_or_else(|| panic!("{name}"));
            (0..t.rows).map(|i| c.values.get(i)).collect::<Vec<_>>()
        };
        assert_eq!(col("connection"), [json!(0), json!(1)]);
        assert_eq!(col("flow"), [json!("q"), json!("q")]);
        assert_eq!(col("variant"), [json!("0rtt"), json!("0rtt")]);
        assert_eq!(col("zero_rtt_accepted"), [json!(false), json!(true)]);
        assert_eq!(col("handshake_s"), [json!(0.08), json!(0.04)]);
    }
}
