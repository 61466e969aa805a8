//! Link directions: the bottleneck (`[link]`, `[link.up]`, `[link.down]`) and access links.

use std::path::Path;
use std::time::Duration;

use netem::config::{Blackout, Jitter, LinkConfig, LossConfig, QueueLimit, RateProfile, Reorder};

use crate::choices::JitterDist;
use crate::error::{At, Errors, ScenarioError};
use crate::queue::QueueSpec;
use crate::read::{check_keys, expected, Reader};
use crate::resolve::loss::loss;
use crate::resolve::qdisc;
use crate::resolve::rate::{fixed_profile, rate_profile};
use crate::tree::{Table, Val};

/// A link direction whose queue still waits for the path's base RTT (BDP terms).
#[derive(Debug, Clone)]
pub(crate) struct LinkDraft {
    /// Everything but the queue limit.
    pub config: LinkConfig,
    /// The queue expression.
    pub queue: QueueSpec,
    /// The hard limit of a queue discipline other than drop-tail, when the scenario sets one
    /// (`qdisc.limit`, or `queue` set explicitly); `None` keeps the discipline's own (Linux's).
    pub qdisc_limit: Option<QueueSpec>,
}

impl LinkDraft {
    /// The rate a BDP queue is sized for: the fixed rate, or a schedule's highest rate (so the
    /// queue never starves the fastest phase); `None` when unlimited.
    fn bdp_rate(&self) -> Option<u64> {
        match &self.config.rate {
            RateProfile::Unlimited => None,
            RateProfile::Fixed(r) => Some(*r),
            RateProfile::Schedule { steps, .. } => steps.iter().map(|s| s.1).max(),
        }
    }

    /// The final config, with BDP terms resolved.
    pub(crate) fn finish(mut self, base_rtt: Duration, mtu: u64) -> LinkConfig {
        self.config.queue = self.queue.resolve(self.bdp_rate(), base_rtt, mtu);
        if let Some(limit) = self.qdisc_limit {
            let limit = limit.resolve(self.bdp_rate(), base_rtt, mtu);
            qdisc::apply_limit(&mut self.config.qdisc, limit, mtu);
        }
        self.config
    }
}

/// Both directions of the bottleneck, from the `link` node of the root (if any).
pub(crate) fn bottleneck(
    link: Option<(&Table, &At)>,
    base_dir: &Path,
    errors: &Errors,
) -> Result<(LinkDraft, LinkDraft), ScenarioError> {
    let empty = Table::default();
    let start = At::File { line: 1, column: 1 };
    let (common, at) = link.unwrap_or((&empty, &start));
    check_keys(common, "link", "link", &[], errors)?;
    let mut dirs = Vec::new();
    for dir in ["up", "down"] {
        let user_path = format!("link.{dir}");
        let layers = match common.get(dir) {
            None => vec![(common, "link".to_string())],
            Some(e) => {
                let Val::Table(t) = &e.node.val else {
                    return Err(errors.at(
                        &e.node.at,
                        format!("{user_path}: {}", expected("a table", &e.node.val)),
                    ));
                };
                check_keys(t, "link", &user_path, &["up", "down", "rtt"], errors)?;
                vec![(t, user_path.clone()), (common, "link".to_string())]
            }
        };
        let r = Reader::layered(layers, at, "link", errors);
        let mut draft = direction(&r, base_dir)?;
        if let Some(rtt) = rtt(common, &r, at, errors)? {
            draft.config.delay = rtt / 2;
        }
        dirs.push(draft);
    }
    let down = dirs.pop();
    let up = dirs.pop();
    match (up, down) {
        (Some(up), Some(down)) => Ok((up, down)),
        _ => Err(errors.whole("internal: link directions missing")),
    }
}

/// `link.rtt`, if set: the round trip both directions' delays are derived from. An explicit
/// delay of either direction with it is an error (which should win is anybody's guess).
fn rtt(
    common: &Table,
    r: &Reader<'_>,
    at: &At,
    errors: &Errors,
) -> Result<Option<Duration>, ScenarioError> {
    let Some(rtt_entry) = common.get("rtt") else {
        return Ok(None);
    };
    if let Some(delay) = r.entry("delay") {
        let rtt_at = errors.at(&rtt_entry.node.at, "").to_string();
        return Err(errors.at(
            &delay.node.at,
            format!(
                "{} and link.rtt (at {}) both set the delay: link.rtt sets delay = rtt / 2 in both directions; remove one of them",
                r.path_of("delay"),
                rtt_at.trim_end_matches(": ")
            ),
        ));
    }
    let only_rtt = Reader::layered(vec![(common, "link".to_string())], at, "link", errors);
    only_rtt.duration("rtt")
}

/// `random_phase`, which only a repeating rate can honour.
fn random_phase(r: &Reader<'_>, rate: &RateProfile) -> Result<bool, ScenarioError> {
    let on = r.boolean("random_phase")?.unwrap_or(false);
    if on && rate.period().is_none() {
        let at = r
            .entry("random_phase")
            .map_or_else(|| r.at().clone(), |e| e.node.at.clone());
        return Err(r.errors.at(
            &at,
            format!(
                "{} = true needs a repeating rate (mahimahi_trace, or rate_schedule or rate_trace with rate_repeat): a rate that does not repeat has no phase to draw",
                r.path_of("random_phase")
            ),
        ));
    }
    Ok(on)
}

fn direction(r: &Reader<'_>, base_dir: &Path) -> Result<LinkDraft, ScenarioError> {
    let rate = rate_profile(r, base_dir)?;
    let random_phase = random_phase(r, &rate)?;
    let delay = r.duration("delay")?.unwrap_or_default();
    let jitter_amount = r.duration("jitter")?.unwrap_or_default();
    let dist = r.choice::<JitterDist>("jitter_dist")?;
    let jitter = match (jitter_amount.is_zero(), dist.unwrap_or(JitterDist::Uniform)) {
        (true, _) => Jitter::None,
        (false, JitterDist::Normal) => Jitter::Normal { sd: jitter_amount },
        (false, JitterDist::Uniform) => Jitter::Uniform { max: jitter_amount },
    };
    let queue = r.queue("queue")?;
    let queue = r.required("queue", queue)?;
    let q = qdisc::qdisc(r)?;
    let aqm = q.config != netem::QdiscConfig::DropTail;
    let qdisc_limit = match (r.entry("queue").filter(|_| aqm), q.limit) {
        (Some(e), Some(_)) => {
            return Err(r.errors.at(
                &e.node.at,
                format!(
                    "{} and {}.limit both set the queue discipline's limit; remove one",
                    r.path_of("queue"),
                    r.path_of("qdisc")
                ),
            ))
        }
        (Some(e), None) => {
            qdisc::check_limit(r, &e.node.at, "queue", &queue)?;
            Some(queue)
        }
        (None, limit) => limit,
    };
    let config = LinkConfig {
        rate,
        delay,
        jitter,
        queue: QueueLimit {
            packets: None,
            bytes: None,
        },
        loss: loss(r)?,
        blackouts: blackouts(r)?,
        corrupt: r.probability("corrupt")?.unwrap_or(0.0),
        bit_error_rate: r.probability("ber")?.unwrap_or(0.0),
        duplicate: r.probability("duplicate")?.unwrap_or(0.0),
        reorder: Reorder {
            p: r.probability("reorder")?.unwrap_or(0.0),
            extra_delay: r.duration("reorder_delay")?.unwrap_or_default(),
        },
        qdisc: q.config,
        random_phase,
    };
    config
        .validate()
        .map_err(|e| r.errors.at(r.at(), e.to_string()))?;
    Ok(LinkDraft {
        config,
        queue,
        qdisc_limit,
    })
}

fn blackouts(r: &Reader<'_>) -> Result<Vec<Blackout>, ScenarioError> {
    let Some(node) = r.node("blackout")? else {
        return Ok(Vec::new());
    };
    let Val::Array(items) = &node.val else {
        return Err(r.errors.at(
            &node.at,
            format!("blackout: {}", expected("an array of tables", &node.val)),
        ));
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let Val::Table(t) = &item.val else {
            return Err(r.errors.at(
                &item.at,
                format!(
                    "blackout: {}",
                    expected("a { start, duration, period } table", &item.val)
                ),
            ));
        };
        let path = format!("{}[{i}]", r.path_of("blackout"));
        let b = Reader::new(t, &item.at, "link.blackout[]", &path, r.errors)?;
        let start = b.duration("start")?;
        let duration = b.duration("duration")?;
        let blackout = Blackout {
            start: b.required("start", start)?,
            duration: b.required("duration", duration)?,
            period: b.duration("period")?,
        };
        if blackout.period.is_some_and(|p| p <= blackout.duration) {
            return Err(r.errors.at(
                &item.at,
                "a blackout's period must be longer than its duration",
            ));
        }
        out.push(blackout);
    }
    Ok(out)
}

/// An access link (`flow.client_access` / `flow.server_access`): the same in both directions.
pub(crate) fn access(r: &Reader<'_>) -> Result<LinkDraft, ScenarioError> {
    let rate = match r.node("rate")? {
        Some(n) => fixed_profile(&n.val)
            .map_err(|m| r.errors.at(&n.at, format!("{}: {m}", r.path_of("rate"))))?,
        None => RateProfile::Unlimited,
    };
    let p = r.probability("loss")?.unwrap_or(0.0);
    let queue = r.queue("queue")?;
    let mut config = LinkConfig::ideal();
    config.rate = rate;
    config.delay = r.duration("delay")?.unwrap_or_default();
    config.loss = if p == 0.0 {
        LossConfig::None
    } else {
        LossConfig::Bernoulli { p }
    };
    Ok(LinkDraft {
        config,
        queue: r.required("queue", queue)?,
        qdisc_limit: None,
    })
}
