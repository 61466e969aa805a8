//! Runs whose result holds a flow that reported an error (a connection lost, a handshake
//! refused): they are results, so the sweep records them and goes on, but the run did not do
//! what the scenario asked.

use std::path::Path;

use results::store::ResultsStore;
use serde_json::Value;

use crate::error::ExperimentError;

/// A run with at least one flow that reported an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowErrors {
    /// The run's id.
    pub id: String,
    /// Each failed flow's name and error, in flow order.
    pub flows: Vec<(String, String)>,
}

/// The failed flows of a result line (`results::Run` as JSON), in flow order.
pub fn of_line(line: &Value) -> Vec<(String, String)> {
    let Some(flows) = line.get("flows").and_then(Value::as_array) else {
        return Vec::new();
    };
    flows
        .iter()
        .filter_map(|f| {
            let error = f.get("error").and_then(Value::as_str)?;
            let name = f.get("name").and_then(Value::as_str).unwrap_or("?");
            Some((name.to_string(), error.to_string()))
        })
        .collect()
}

/// The runs in the results directory `out` with a failed flow, in file order (run order once
/// the sweep is finished).
pub fn in_dir(out: &Path) -> Result<Vec<FlowErrors>, ExperimentError> {
    let store = ResultsStore::open(out)?;
    let mut found = Vec::new();
    store.for_each_result(|line| {
        let flows = of_line(&line);
        if !flows.is_empty() {
            let id = line.get("id").and_then(Value::as_str).unwrap_or("?");
            found.push(FlowErrors {
                id: id.to_string(),
                flows,
            });
        }
    })?;
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_flows_with_an_error_are_listed() {
        let line = serde_json::json!({
            "id": "p0-r0",
            "flows": [
                { "name": "a", "error": null },
                { "name": "b", "error": "connection lost: timed out" },
            ],
        });
        assert_eq!(
            of_line(&line),
            [("b".to_string(), "connection lost: timed out".to_string())]
        );
        assert!(of_line(&serde_json::json!({ "id": "x" })).is_empty());
    }
}
