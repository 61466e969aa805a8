//! From a checked tree to the engines' [`Scenario`]: every unit resolved, every default filled.

mod cross;
mod flow;
mod knobs;
mod link;
mod loss;
mod noop;
mod probe;
mod qdisc;
mod quiche;
mod quicmodel;
mod rate;
mod run;
mod tcp;

use std::path::Path;

use crate::error::{At, Errors, ScenarioError};
use crate::limits::{MAX_FLOWS, MAX_PROBES};
use crate::model::{DuplexLink, FlowSpec, Scenario};
use crate::read::{check_keys, expected};
use crate::tree::{Table, Val};

/// The parts of `[run]` that describe the set of runs rather than one scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RunMeta {
    pub seed: u64,
    pub reps: u32,
}

/// Resolves a whole scenario tree (without its `[sweep]`).
pub(crate) fn resolve(
    root: &Table,
    default_name: &str,
    base_dir: &Path,
    errors: &Errors,
) -> Result<(Scenario, RunMeta), ScenarioError> {
    check_keys(root, "", "", &[], errors)?;
    let run = run::run(sub_table(root, "run", errors)?, default_name, errors)?;
    let (up, down) = link::bottleneck(sub_table(root, "link", errors)?, base_dir, errors)?;

    let flow_tables = table_array(root, "flow", errors)?;
    let mut drafts = Vec::new();
    for (i, (t, at)) in flow_tables.iter().enumerate() {
        drafts.push(flow::flow(t, at, i, errors)?);
    }
    if drafts.is_empty() {
        drafts.push(flow::flow(
            &Table::default(),
            &At::File { line: 1, column: 1 },
            0,
            errors,
        )?);
    }
    let first = drafts
        .first()
        .ok_or_else(|| errors.whole("internal: no flow"))?;
    // The BDP refers to the first flow's path: both bottleneck directions plus its access links
    // (which are the same in both directions, hence twice).
    let base_rtt = up.config.delay
        + down.config.delay
        + 2 * (first.client.config.delay + first.server.config.delay);
    let bottleneck_mtu = u64::from(first.spec.mtu());
    let bottleneck = DuplexLink {
        up: up.finish(base_rtt, bottleneck_mtu),
        down: down.finish(base_rtt, bottleneck_mtu),
    };

    let mut total: u64 = 0;
    for d in &drafts {
        total = total.saturating_add(d.count);
        if total > MAX_FLOWS {
            return Err(errors.at(
                &d.at,
                format!(
                    "the scenario has more than {MAX_FLOWS} flows in all (the counts of its [[flow]] tables add up past the limit here); every flow is simulated, so split the study into several scenarios"
                ),
            ));
        }
    }
    if total == 0 {
        return Err(errors.at(
            &first.at,
            "every [[flow]] has count = 0: there is nothing to run (count 0 removes a flow, e.g. a competitor in one variant)",
        ));
    }
    let mut flows: Vec<FlowSpec> = Vec::new();
    let mut names = std::collections::BTreeSet::new();
    for d in drafts {
        if d.spec.start >= run.duration {
            return Err(errors.at(
                &d.at,
                format!(
                    "flow {} starts after the end of the run (run.duration)",
                    d.spec.name
                ),
            ));
        }
        let mtu = u64::from(d.spec.mtu());
        let duplex = |l: &link::LinkDraft| DuplexLink {
            up: l.clone().finish(base_rtt, mtu),
            down: l.clone().finish(base_rtt, mtu),
        };
        let spec = FlowSpec {
            client_access: duplex(&d.client),
            server_access: duplex(&d.server),
            ..d.spec
        };
        for copy in 0..d.count {
            let name = if d.count == 1 {
                spec.name.clone()
            } else {
                format!("{}.{copy}", spec.name)
            };
            if !names.insert(name.clone()) {
                return Err(errors.at(&d.at, format!("two flows are named {name:?}")));
            }
            flows.push(FlowSpec {
                name,
                ..spec.clone()
            });
        }
    }

    let mut crosses = Vec::new();
    for (i, (t, at)) in table_array(root, "cross", errors)?.iter().enumerate() {
        let c = cross::cross(t, at, i, errors)?;
        if c.start >= run.duration {
            return Err(errors.at(
                at,
                format!(
                    "cross source {} starts after the end of the run (run.duration)",
                    c.name
                ),
            ));
        }
        crosses.push(c);
    }

    let mut probes = Vec::new();
    for (i, (t, at)) in table_array(root, "probe", errors)?.iter().enumerate() {
        if i == MAX_PROBES {
            return Err(errors.at(
                at,
                format!("a scenario has at most {MAX_PROBES} [[probe]] tables"),
            ));
        }
        let p = probe::probe(t, at, i, &flows, errors)?;
        if p.start >= run.duration {
            return Err(errors.at(
                at,
                format!(
                    "probe {} starts after the end of the run (run.duration)",
                    p.name
                ),
            ));
        }
        probes.push(p);
    }

    let scenario = Scenario {
        name: run.name,
        duration: run.duration,
        sample_interval: run.sample_interval,
        measure_from: run.measure_from,
        measure_until: run.measure_until,
        bottleneck,
        flows,
        cross: crosses,
        probes,
        figures: Vec::new(),
    };
    Ok((
        scenario,
        RunMeta {
            seed: run.seed,
            reps: run.reps,
        },
    ))
}

/// The table under `key` with its position, if present.
fn sub_table<'a>(
    root: &'a Table,
    key: &str,
    errors: &Errors,
) -> Result<Option<(&'a Table, &'a At)>, ScenarioError> {
    match root.get(key) {
        None => Ok(None),
        Some(e) => match &e.node.val {
            Val::Table(t) => Ok(Some((t, &e.node.at))),
            other => Err(errors.at(
                &e.node.at,
                format!("{key}: {}; write [{key}]", expected("a table", other)),
            )),
        },
    }
}

/// The array of tables under `key` (`[[flow]]`), empty if absent.
fn table_array<'a>(
    root: &'a Table,
    key: &str,
    errors: &Errors,
) -> Result<Vec<(&'a Table, &'a At)>, ScenarioError> {
    let Some(e) = root.get(key) else {
        return Ok(Vec::new());
    };
    let Val::Array(items) = &e.node.val else {
        return Err(errors.at(
            &e.node.at,
            format!("{key} must be an array of tables: write [[{key}]]"),
        ));
    };
    items
        .iter()
        .map(|n| match &n.val {
            Val::Table(t) => Ok((t, &n.at)),
            other => Err(errors.at(&n.at, format!("{key}: {}", expected("a table", other)))),
        })
        .collect()
}
