//! The `qdisc` key: a discipline's name (Linux's defaults) or a table naming a `model` and its
//! parameters.
//!
//! Defaults come from netem's `Default` of each discipline's configuration (Linux's values; the
//! registry documents them and a test holds the two together); a key the user sets overrides
//! its field. A key of another discipline is an error naming the disciplines it belongs to.

use netem::config::QueueLimit;
use netem::qdisc::red::wlog_for_burst;
use netem::qdisc::{CodelConfig, DualPi2Config, FqCodelConfig, PieConfig, QdiscConfig, RedConfig};
use serde::de::DeserializeOwned;

use choice::Choice;

use crate::choices::QdiscModel;
use crate::error::ScenarioError;
use crate::queue::QueueSpec;
use crate::read::{expected, Reader};
use crate::tree::Val;
use crate::units::Rate;

/// A discipline as the scenario gives it: its configuration, and the limit expression that
/// replaces its default limit once the path's BDP is known (`qdisc.limit`, or an explicit
/// `link.queue`).
#[derive(Debug, Clone)]
pub(crate) struct QdiscDraft {
    pub config: QdiscConfig,
    pub limit: Option<QueueSpec>,
}

/// Every parameter key of the table form, in registry order.
const PARAMS: &[&str] = &[
    "limit",
    "target",
    "interval",
    "ecn",
    "ce_threshold",
    "mtu",
    "flows",
    "quantum",
    "memory_limit",
    "drop_batch",
    "tupdate",
    "alpha",
    "beta",
    "bytemode",
    "min",
    "max",
    "probability",
    "burst",
    "avpkt",
    "bandwidth",
    "harddrop",
    "adaptive",
    "gentle",
    "step_threshold",
    "min_qlen_step",
    "coupling_factor",
    "drop_overload",
    "drop_early",
    "c_protection",
];

/// The parameter keys each discipline reads.
pub(crate) fn model_keys(model: QdiscModel) -> &'static [&'static str] {
    match model {
        QdiscModel::DropTail => &[],
        QdiscModel::Codel => &["limit", "target", "interval", "ecn", "ce_threshold", "mtu"],
        QdiscModel::FqCodel => &[
            "limit",
            "target",
            "interval",
            "ecn",
            "ce_threshold",
            "mtu",
            "flows",
            "quantum",
            "memory_limit",
            "drop_batch",
        ],
        QdiscModel::Pie => &[
            "limit", "target", "tupdate", "alpha", "beta", "ecn", "bytemode", "mtu",
        ],
        QdiscModel::Red => &[
            "limit",
            "min",
            "max",
            "probability",
            "burst",
            "avpkt",
            "bandwidth",
            "ecn",
            "harddrop",
            "adaptive",
            "gentle",
        ],
        QdiscModel::DualPi2 => &[
            "limit",
            "target",
            "tupdate",
            "alpha",
            "beta",
            "step_threshold",
            "min_qlen_step",
            "coupling_factor",
            "drop_overload",
            "drop_early",
            "c_protection",
            "mtu",
        ],
    }
}

/// The disciplines that read `key`.
fn owners(key: &str) -> Vec<&'static str> {
    let all = [
        QdiscModel::DropTail,
        QdiscModel::Red,
        QdiscModel::Codel,
        QdiscModel::FqCodel,
        QdiscModel::Pie,
        QdiscModel::DualPi2,
    ];
    debug_assert_eq!(all.len(), QdiscModel::NAMES.len());
    all.into_iter()
        .filter(|m| model_keys(*m).contains(&key))
        .map(|m| m.name())
        .collect()
}

/// Resolves `qdisc` from the reader's table (drop-tail when unset).
pub(crate) fn qdisc(r: &Reader<'_>) -> Result<QdiscDraft, ScenarioError> {
    let plain = |config| QdiscDraft {
        config,
        limit: None,
    };
    let Some(node) = r.node("qdisc")? else {
        return Ok(plain(QdiscConfig::DropTail));
    };
    let table = match &node.val {
        Val::Table(t) => t,
        Val::Str(s) => {
            let Some(model) = QdiscModel::from_name(s) else {
                return Err(r
                    .errors
                    .at(
                        &node.at,
                        format!("unknown queue discipline {s:?} for {}", r.path_of("qdisc")),
                    )
                    .with_allowed(QdiscModel::NAMES));
            };
            return Ok(plain(defaults(model)));
        }
        other => {
            return Err(r.errors.at(
                &node.at,
                format!(
                    "{}: {}",
                    r.path_of("qdisc"),
                    expected(
                        "a discipline name such as \"codel\" or a table with model",
                        other
                    )
                ),
            ))
        }
    };
    let t = Reader::new(table, &node.at, "link.qdisc", &r.path_of("qdisc"), r.errors)?;
    let model = t.choice::<QdiscModel>("model")?;
    let model = t.required("model", model)?;
    check_model_keys(&t, model)?;
    let config = match model {
        QdiscModel::DropTail => QdiscConfig::DropTail,
        QdiscModel::Codel => QdiscConfig::Codel(codel(&t, CodelConfig::default())?),
        QdiscModel::FqCodel => {
            let d = FqCodelConfig::default();
            QdiscConfig::FqCodel(FqCodelConfig {
                flows: get(&t, "flows")?.unwrap_or(d.flows),
                quantum: get(&t, "quantum")?.unwrap_or(d.quantum),
                memory_limit: get(&t, "memory_limit")?.unwrap_or(d.memory_limit),
                drop_batch: get(&t, "drop_batch")?.unwrap_or(d.drop_batch),
                codel: codel(&t, d.codel)?,
                limit_packets: d.limit_packets,
            })
        }
        QdiscModel::Pie => {
            let d = PieConfig::default();
            QdiscConfig::Pie(PieConfig {
                target: get(&t, "target")?.unwrap_or(d.target),
                tupdate: get(&t, "tupdate")?.unwrap_or(d.tupdate),
                limit_packets: d.limit_packets,
                alpha: get(&t, "alpha")?.unwrap_or(d.alpha),
                beta: get(&t, "beta")?.unwrap_or(d.beta),
                ecn: get(&t, "ecn")?.unwrap_or(d.ecn),
                bytemode: get(&t, "bytemode")?.unwrap_or(d.bytemode),
                mtu: get(&t, "mtu")?.unwrap_or(d.mtu),
            })
        }
        QdiscModel::Red => QdiscConfig::Red(red(&t)?),
        QdiscModel::DualPi2 => {
            let d = DualPi2Config::default();
            let c_protection_percent = match t.probability("c_protection")? {
                Some(p) => (p * 100.0).round() as u8,
                None => d.c_protection_percent,
            };
            QdiscConfig::DualPi2(DualPi2Config {
                limit_packets: d.limit_packets,
                target: get(&t, "target")?.unwrap_or(d.target),
                tupdate: get(&t, "tupdate")?.unwrap_or(d.tupdate),
                alpha: get(&t, "alpha")?.unwrap_or(d.alpha),
                beta: get(&t, "beta")?.unwrap_or(d.beta),
                step_threshold: get(&t, "step_threshold")?.unwrap_or(d.step_threshold),
                min_qlen_step: get(&t, "min_qlen_step")?.unwrap_or(d.min_qlen_step),
                coupling_factor: get(&t, "coupling_factor")?.unwrap_or(d.coupling_factor),
                drop_overload: get(&t, "drop_overload")?.unwrap_or(d.drop_overload),
                drop_early: get(&t, "drop_early")?.unwrap_or(d.drop_early),
                c_protection_percent,
                mtu: get(&t, "mtu")?.unwrap_or(d.mtu),
            })
        }
    };
    config.validate().map_err(|e| {
        t.errors
            .at(&node.at, format!("{}: {e}", r.path_of("qdisc")))
    })?;
    let limit = match t.entry("limit") {
        Some(e) => {
            let spec = t.queue("limit")?;
            let spec = t.required("limit", spec)?;
            check_limit(&t, &e.node.at, "limit", &spec)?;
            Some(spec)
        }
        None => None,
    };
    Ok(QdiscDraft { config, limit })
}

/// A discipline with every Linux default.
fn defaults(model: QdiscModel) -> QdiscConfig {
    match model {
        QdiscModel::DropTail => QdiscConfig::DropTail,
        QdiscModel::Red => QdiscConfig::Red(RedConfig::default()),
        QdiscModel::Codel => QdiscConfig::Codel(CodelConfig::default()),
        QdiscModel::FqCodel => QdiscConfig::FqCodel(FqCodelConfig::default()),
        QdiscModel::Pie => QdiscConfig::Pie(PieConfig::default()),
        QdiscModel::DualPi2 => QdiscConfig::DualPi2(DualPi2Config::default()),
    }
}

/// The user's value of `key`, parsed by its kind and checked against its registry bounds.
fn get<T: DeserializeOwned>(t: &Reader<'_>, key: &str) -> Result<Option<T>, ScenarioError> {
    let Some(v) = t.value(key)? else {
        return Ok(None);
    };
    serde_json::from_value(v).map(Some).map_err(|e| {
        let at = t
            .entry(key)
            .map_or_else(|| t.at().clone(), |e| e.node.at.clone());
        t.errors.at(&at, format!("{}: {e}", t.path_of(key)))
    })
}

/// The CoDel keys over `d` (codel's own defaults, or fq_codel's per-flow CoDel).
fn codel(t: &Reader<'_>, d: CodelConfig) -> Result<CodelConfig, ScenarioError> {
    Ok(CodelConfig {
        target: get(t, "target")?.unwrap_or(d.target),
        interval: get(t, "interval")?.unwrap_or(d.interval),
        limit_packets: d.limit_packets,
        ecn: get(t, "ecn")?.unwrap_or(d.ecn),
        ce_threshold: get(t, "ce_threshold")?.or(d.ce_threshold),
        mtu: get(t, "mtu")?.unwrap_or(d.mtu),
    })
}

fn red(t: &Reader<'_>) -> Result<RedConfig, ScenarioError> {
    let d = RedConfig::default();
    let min_bytes = t.size("min")?.unwrap_or(d.min_bytes);
    let max_bytes = t.size("max")?.unwrap_or(d.max_bytes);
    let avpkt: u32 = get(t, "avpkt")?.unwrap_or(d.avpkt);
    if min_bytes > max_bytes {
        let at = t
            .entry("min")
            .or_else(|| t.entry("max"))
            .map_or_else(|| t.at().clone(), |e| e.node.at.clone());
        return Err(t.errors.at(
            &at,
            format!(
                "{}: min ({min_bytes} B) must not exceed max ({max_bytes} B)",
                t.path_of("min")
            ),
        ));
    }
    // tc's default burst: (2·min + max) / (3·avpkt), at least one packet.
    let default_burst = (min_bytes.saturating_mul(2).saturating_add(max_bytes)
        / (3 * u64::from(avpkt.max(1))))
    .max(1);
    let burst: u64 = get(t, "burst")?.unwrap_or(default_burst);
    let wlog = wlog_for_burst(min_bytes, u32::try_from(burst).unwrap_or(u32::MAX), avpkt)
        .ok_or_else(|| {
            let at = t
                .entry("burst")
                .map_or_else(|| t.at().clone(), |e| e.node.at.clone());
            t.errors.at(
                &at,
                format!(
                    "{}: a burst of {burst} packets is too small for min = {min_bytes} B and avpkt = {avpkt} B (tc: burst must be at least min/avpkt)",
                    t.path_of("burst")
                ),
            )
        })?;
    let bandwidth = match t.node("bandwidth")? {
        None => None,
        Some(n) => match crate::read::rate_of(&n.val) {
            Ok(Rate::Bps(b)) if b > 0 => Some(b),
            Ok(_) => {
                return Err(t.errors.at(
                    &n.at,
                    format!("{}: needs a finite rate above zero", t.path_of("bandwidth")),
                ))
            }
            Err(m) => {
                return Err(t
                    .errors
                    .at(&n.at, format!("{}: {m}", t.path_of("bandwidth"))))
            }
        },
    };
    Ok(RedConfig {
        limit_bytes: d.limit_bytes,
        min_bytes,
        max_bytes,
        max_p: t.probability("probability")?.unwrap_or(d.max_p),
        wlog,
        avpkt,
        bandwidth,
        ecn: get(t, "ecn")?.unwrap_or(d.ecn),
        harddrop: get(t, "harddrop")?.unwrap_or(d.harddrop),
        adaptive: get(t, "adaptive")?.unwrap_or(d.adaptive),
        gentle: get(t, "gentle")?.unwrap_or(d.gentle),
    })
}

/// Refuses a limit of nothing at all (every packet would be dropped).
pub(crate) fn check_limit(
    r: &Reader<'_>,
    at: &crate::error::At,
    key: &str,
    spec: &QueueSpec,
) -> Result<(), ScenarioError> {
    if !spec.unlimited && spec.packets == 0 && spec.bytes == 0 && spec.bdp == 0.0 {
        return Err(r.errors.at(
            at,
            format!(
                "{}: a queue discipline's limit must hold at least one packet",
                r.path_of(key)
            ),
        ));
    }
    Ok(())
}

/// Refuses keys of the table that `model` does not read, naming the disciplines they belong to.
fn check_model_keys(t: &Reader<'_>, model: QdiscModel) -> Result<(), ScenarioError> {
    let allowed = model_keys(model);
    let name = model.name();
    for key in PARAMS {
        if allowed.contains(key) {
            continue;
        }
        let Some(e) = t.entry(key) else { continue };
        let hint = if model == QdiscModel::DropTail && *key == "limit" {
            " (drop-tail's limit is link.queue)".to_string()
        } else if model == QdiscModel::DualPi2 && *key == "ecn" {
            " (dualpi2 always marks ECN-capable packets: ECT(1) in the L4S queue, ECT(0) in the classic one)".to_string()
        } else {
            format!("; it is a parameter of {}", owners(key).join(", "))
        };
        let mut keys = vec!["model"];
        keys.extend_from_slice(allowed);
        return Err(t
            .errors
            .at(
                &e.key_at,
                format!(
                    "{} does not apply to the {name} queue discipline{hint}",
                    t.path_of(key)
                ),
            )
            .with_allowed_titled(&format!("keys of {name}"), &keys));
    }
    Ok(())
}

/// Sets the hard limit of `q` from a resolved queue limit (`mtu`: bytes per packet when
/// converting between the two units).
pub(crate) fn apply_limit(q: &mut QdiscConfig, limit: QueueLimit, mtu: u64) {
    let mtu = mtu.max(1);
    let packets = limit
        .packets
        .or(limit.bytes.map(|b| b.div_ceil(mtu)))
        .unwrap_or(u64::MAX)
        .max(1);
    let bytes = limit
        .bytes
        .or(limit.packets.map(|p| p.saturating_mul(mtu)))
        .unwrap_or(u64::MAX)
        .max(1);
    match q {
        QdiscConfig::DropTail => {}
        QdiscConfig::Red(c) => c.limit_bytes = bytes,
        QdiscConfig::Codel(c) => c.limit_packets = packets,
        QdiscConfig::FqCodel(c) => c.limit_packets = packets,
        QdiscConfig::Pie(c) => c.limit_packets = packets,
        QdiscConfig::DualPi2(c) => c.limit_packets = packets,
    }
}
