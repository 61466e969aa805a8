//! The TCP knobs of a `[[flow]]` and the check that a flow sets only its own stack's keys.

use std::time::Duration;

use crate::builder::tcp_knobs;
use crate::error::{At, Errors, ScenarioError};
use cc::config::{CcConfig, CommonCcConfig, RenoCounting};

use crate::model::{PepPosition, PepSpec, Stack, TcpKnobs, TlsMode};
use crate::read::Reader;
use crate::registry::{self, QUIC_ONLY_CC};
use crate::tree::{Table, Val};

/// RFC 7323 caps a scaled window at 2^30 bytes.
const MAX_WINDOW: u64 = 1 << 30;

/// Send buffers have no protocol limit; this only keeps a typo from allocating the machine.
const MAX_SEND_BUFFER: u64 = 1 << 40;

/// Rejects keys (and `cc` values) of `table` that only the other stack has: its model would
/// ignore them silently, and a researcher would believe they took effect.
pub(crate) fn check_stack_keys(
    table: &Table,
    stack: Stack,
    user_path: &str,
    errors: &Errors,
) -> Result<(), ScenarioError> {
    let wrong = |at: &At, what: String, only: Stack| {
        errors.at(
            at,
            format!(
                "{what} applies only to {} flows, but this flow has stack = {:?}",
                only.name().to_uppercase(),
                stack.name()
            ),
        )
    };
    for e in &table.entries {
        let only = registry::find(&format!("flow.{}", e.key)).and_then(|k| k.stack);
        if let Some(only) = only.filter(|s| *s != stack) {
            return Err(wrong(&e.key_at, format!("{user_path}.{}", e.key), only));
        }
        if e.key == "cc" && stack != Stack::Quic {
            if let Val::Str(v) = &e.node.val {
                if QUIC_ONLY_CC.contains(&v.as_str()) {
                    return Err(wrong(&e.node.at, format!("cc = {v:?}"), Stack::Quic));
                }
            }
        }
    }
    Ok(())
}

/// The TCP knobs: [`tcp_knobs`] with the keys the user set replaced.
///
/// Unset keys take `tcp_knobs` rather than the registry texts so that scenarios built in code
/// and from files cannot differ; a test holds the registry's documented defaults to it.
pub(crate) fn tcp(r: &Reader<'_>, mtu: u16) -> Result<TcpKnobs, ScenarioError> {
    let d = tcp_knobs(mtu);
    let receive_window_max =
        bytes(r, "receive_window_max", MAX_WINDOW)?.unwrap_or(d.receive_window_max);
    let initial_receive_window =
        bytes(r, "initial_receive_window", MAX_WINDOW)?.unwrap_or(d.initial_receive_window);
    if initial_receive_window > receive_window_max {
        let key = if r.entry("initial_receive_window").is_some() {
            "initial_receive_window"
        } else {
            "receive_window_max"
        };
        return Err(r.errors.at(
            &at_key(r, key),
            format!(
                "initial_receive_window ({initial_receive_window} B) exceeds receive_window_max ({receive_window_max} B)"
            ),
        ));
    }
    let http1_parallel = match r.choice("http")? {
        Some("http1.1") => {
            Some(u32::try_from(r.uint_in("http1_connections", 1, 1000)?.unwrap_or(6)).unwrap_or(6))
        }
        _ => d.http1_parallel,
    };
    Ok(TcpKnobs {
        http1_parallel,
        mtu,
        tls: tls(r)?.unwrap_or(d.tls),
        sack: set(r, "sack", Reader::boolean)?.unwrap_or(d.sack),
        timestamps: set(r, "timestamps", Reader::boolean)?.unwrap_or(d.timestamps),
        delayed_ack: set(r, "delayed_ack", Reader::boolean)?.unwrap_or(d.delayed_ack),
        delayed_ack_timeout: positive(r, "delayed_ack_timeout")?.unwrap_or(d.delayed_ack_timeout),
        receive_window_max,
        initial_receive_window,
        send_buffer: bytes(r, "send_buffer", MAX_SEND_BUFFER)?.unwrap_or(d.send_buffer),
        min_rto: positive(r, "min_rto")?.unwrap_or(d.min_rto),
        initial_rto: positive(r, "initial_rto")?.unwrap_or(d.initial_rto),
    })
}

/// `read(key)` when the user set `key`, else `None` (the registry default is documentation).
fn set<'a, T>(
    r: &Reader<'a>,
    key: &str,
    read: impl Fn(&Reader<'a>, &str) -> Result<Option<T>, ScenarioError>,
) -> Result<Option<T>, ScenarioError> {
    if r.entry(key).is_none() {
        return Ok(None);
    }
    read(r, key)
}

fn at_key(r: &Reader<'_>, key: &str) -> At {
    r.entry(key)
        .map_or_else(|| r.at().clone(), |e| e.node.at.clone())
}

/// A user-set duration above zero (a zero timer would fire without end).
fn positive(r: &Reader<'_>, key: &str) -> Result<Option<Duration>, ScenarioError> {
    let d = set(r, key, Reader::duration)?;
    if d.is_some_and(|d| d.is_zero()) {
        return Err(r.errors.at(
            &at_key(r, key),
            format!("{} must be greater than zero", r.path_of(key)),
        ));
    }
    Ok(d)
}

/// A user-set byte count in `[1, max]`.
fn bytes(r: &Reader<'_>, key: &str, max: u64) -> Result<Option<u64>, ScenarioError> {
    let v = set(r, key, Reader::size)?;
    if let Some(v) = v.filter(|v| !(1..=max).contains(v)) {
        return Err(r.errors.at(
            &at_key(r, key),
            format!("{} = {v} B is not within 1 B and {max} B", r.path_of(key)),
        ));
    }
    Ok(v)
}

/// `flow.tls`; also takes the numbers 1.2 and 1.3, which is what `--set flow.tls=1.3` and
/// command-line sweep values become when read as TOML.
fn tls(r: &Reader<'_>) -> Result<Option<TlsMode>, ScenarioError> {
    let Some(e) = r.entry("tls") else {
        return Ok(None);
    };
    let name = match &e.node.val {
        Val::Float(x) if *x == 1.2 => Some("1.2"),
        Val::Float(x) if *x == 1.3 => Some("1.3"),
        _ => r.choice("tls")?,
    };
    match name {
        Some("1.3") => Ok(Some(TlsMode::Tls13)),
        Some("1.2") => Ok(Some(TlsMode::Tls12)),
        Some("none") => Ok(Some(TlsMode::None)),
        other => Err(r.errors.at(
            &e.node.at,
            format!("internal: tls {other:?} has no model variant"),
        )),
    }
}

/// The PEP of a TCP flow, if `pep` names a position.
pub(crate) fn pep(r: &Reader<'_>) -> Result<Option<PepSpec>, ScenarioError> {
    let position = match r.choice("pep")? {
        None | Some("none") => return Ok(None),
        Some("client-side") => PepPosition::ClientSide,
        Some(_) => PepPosition::ServerSide,
    };
    let initial_window_packets = r.packets("pep_initial_window")?.unwrap_or(10).max(1);
    let common = |beta| CommonCcConfig {
        initial_window_packets,
        loss_reduction_factor: beta,
        minimum_window_packets: 2,
    };
    let cc = match r.choice("pep_cc")? {
        Some("newreno") => CcConfig::NewReno {
            counting: RenoCounting::Exact,
            common: common(0.5),
        },
        Some("newreno-approx") => CcConfig::NewReno {
            counting: RenoCounting::Approximate,
            common: common(0.5),
        },
        Some("none") => CcConfig::None,
        _ => CcConfig::Cubic {
            hystart: true,
            common: common(0.7),
        },
    };
    Ok(Some(PepSpec {
        position,
        buffer: bytes(r, "pep_buffer", MAX_SEND_BUFFER)?.unwrap_or(PEP_BUFFER),
        cc,
        receive_window_max: bytes(r, "pep_receive_window_max", MAX_WINDOW)?.unwrap_or(PEP_WINDOW),
        send_buffer: bytes(r, "pep_send_buffer", MAX_SEND_BUFFER)?.unwrap_or(PEP_WINDOW),
    }))
}

/// Default PEP buffer per direction (the registry documents it as 4MiB).
const PEP_BUFFER: u64 = 4 << 20;
/// Default window and send buffer of the PEP's connections (documented as 16MiB).
const PEP_WINDOW: u64 = 16 << 20;
