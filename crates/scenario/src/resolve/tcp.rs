//! The TCP knobs of a `[[flow]]` and the check that a flow sets only its own stack's keys.

use crate::error::{At, Errors, ScenarioError};
use congestion::config::{CcConfig, CommonCcConfig, CubicProfile, RenoCounting};

use crate::model::{PepPosition, PepSpec, Stack, TcpKnobs};
use crate::read::Reader;
use choice::Choice;

use crate::choices::PepSite;
use crate::registry::{self, DefaultValue};
use crate::resolve::knobs::{overlay, user};
use crate::tree::{parse_arg_value, Table, Val};
use transport::cc_adapter::{OurCc, QuicheCc, QuinnCc, CC_NAMES};

/// Rejects keys (and `cc` values) of `table` that the flow's stack does not have and that are
/// set to something other than their default: that model would ignore them silently, and a
/// researcher would believe they took effect. A key of another stack at its default (a file
/// written for QUIC with `zero_rtt = false`, turned into TCP by a variant or `--set`) asks for
/// nothing the stack lacks and is ignored. The message names the key, the stacks that accept it
/// and, when a variant is being resolved, the variant.
pub(crate) fn check_stack_keys(
    table: &Table,
    at: &At,
    stack: Stack,
    user_path: &str,
    errors: &Errors,
) -> Result<(), ScenarioError> {
    if stack == Stack::Quiche {
        crate::resolve::quiche::check_quiche_keys(table, at, user_path, errors)?;
    }
    let variant = errors.variant.borrow().clone();
    // On a quiche flow, a key of another stack is answered with the keys quiche takes.
    let quiche_takes = (stack == Stack::Quiche).then(|| {
        format!(
            "; a quiche flow takes {}",
            crate::resolve::quiche::quiche_keys()
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    });
    let wrong = |at: &At, what: String, only: &[Stack]| {
        let names: Vec<String> = only.iter().map(|s| format!("{:?}", s.name())).collect();
        let whose = match &variant {
            Some(v) => format!("in variant {v:?} this flow has"),
            None => "this flow has".to_string(),
        };
        errors.at(
            at,
            format!(
                "{what} applies only to flows with stack = {}, but {whose} stack = {:?}{}",
                names.join(" or "),
                stack.name(),
                quiche_takes.as_deref().unwrap_or("")
            ),
        )
    };
    for e in &table.entries {
        if let Some(k) = registry::find(&format!("flow.{}", e.key)) {
            if !k.applies_to(stack) && !at_default(table, at, user_path, k, &e.key, errors) {
                return Err(wrong(&e.key_at, format!("{user_path}.{}", e.key), k.stacks));
            }
        }
        if e.key == "cc" && stack == Stack::Quic {
            // BBR works from per-ACK delivery-rate samples, which quinn's controller
            // interface does not pass; the two models sample them.
            if let Val::Str(v) = &e.node.val {
                if matches!(OurCc::from_name(v), Some(OurCc::Bbr | OurCc::Bbr3)) {
                    let allowed = allowed_ours(stack);
                    let why = "it needs per-ACK delivery-rate samples, which quinn's controller interface does not pass; quinn's own BBR is cc = \"quinn-bbr\"";
                    return Err(wrong(
                        &e.node.at,
                        format!("cc = {v:?} ({why})"),
                        &[Stack::Tcp, Stack::QuicModel],
                    )
                    .with_allowed_titled("allowed for stack = \"quic\"", &allowed));
                }
            }
        }
        if e.key == "cc" && stack == Stack::Quic {
            // quinn's controller interface reports CE only as a congestion event, without the
            // per-ACK counts DCTCP and Prague estimate their marked fraction from.
            if let Val::Str(v) = &e.node.val {
                if matches!(OurCc::from_name(v), Some(OurCc::Dctcp | OurCc::Prague)) {
                    let allowed = allowed_ours(stack);
                    return Err(wrong(
                        &e.node.at,
                        format!("cc = {v:?} (it needs per-ACK ECN counts, which quinn's controller interface does not pass)"),
                        &[Stack::Tcp, Stack::QuicModel],
                    )
                    .with_allowed_titled("allowed for stack = \"quic\"", &allowed));
                }
            }
        }
        if e.key == "cc" && stack != Stack::Quiche {
            if let Val::Str(v) = &e.node.val {
                if QuicheCc::from_name(v).is_some() {
                    return Err(wrong(&e.node.at, format!("cc = {v:?}"), &[Stack::Quiche])
                        .with_allowed_titled(
                            &format!("allowed for stack = {:?}", stack.name()),
                            &allowed_ours(stack),
                        ));
                }
            }
        }
        if e.key == "cc" && !matches!(stack, Stack::Quic | Stack::Quiche) {
            if let Val::Str(v) = &e.node.val {
                if QuinnCc::from_name(v).is_some() {
                    return Err(wrong(&e.node.at, format!("cc = {v:?}"), &[Stack::Quic])
                        .with_allowed_titled(
                            &format!("allowed for stack = {:?}", stack.name()),
                            &allowed_ours(stack),
                        ));
                }
            }
        }
    }
    Ok(())
}

/// Whether the user's value of `key` equals the registry default, both parsed by the key's kind
/// (so `"0ms"` equals `0` and `"1%"` equals `0.01`). A key without a plain default, or whose
/// value does not parse, is never at its default.
pub(crate) fn at_default(
    table: &Table,
    at: &At,
    user_path: &str,
    doc: &registry::KeyDoc,
    key: &str,
    errors: &Errors,
) -> bool {
    let DefaultValue::Value(text) = doc.default else {
        return false;
    };
    let mut defaults = Table::default();
    defaults.set(
        key,
        at.clone(),
        parse_arg_value(text, &At::Arg(format!("default of {}", doc.path).into())),
    );
    let parse = |t: &Table| {
        Reader::layered(vec![(t, user_path.to_string())], at, "flow", errors)
            .value(key)
            .ok()
            .flatten()
    };
    match (parse(table), parse(&defaults)) {
        (Some(user), Some(default)) => user == default,
        _ => false,
    }
}

/// The TCP knobs: Linux's defaults with the keys the user set replaced, checked across keys.
pub(crate) fn tcp(r: &Reader<'_>, mtu: u16) -> Result<TcpKnobs, ScenarioError> {
    let t = overlay(r, TcpKnobs::with_mtu(mtu))?;
    if t.initial_receive_window > t.receive_window_max {
        let key = if r.entry("initial_receive_window").is_some() {
            "initial_receive_window"
        } else {
            "receive_window_max"
        };
        let at = r
            .entry(key)
            .map_or_else(|| r.at().clone(), |e| e.node.at.clone());
        return Err(r.errors.at(
            &at,
            format!(
                "initial_receive_window ({} B) exceeds receive_window_max ({} B)",
                t.initial_receive_window, t.receive_window_max
            ),
        ));
    }
    Ok(t)
}

/// The PEP of a TCP flow, if `pep` names a position.
pub(crate) fn pep(r: &Reader<'_>) -> Result<Option<PepSpec>, ScenarioError> {
    let position = match r.choice::<PepSite>("pep")? {
        None | Some(PepSite::None) => return Ok(None),
        Some(PepSite::ClientSide) => PepPosition::ClientSide,
        Some(PepSite::ServerSide) => PepPosition::ServerSide,
    };
    let d = PepSpec::default();
    let initial_window_packets = r.packets("pep_initial_window")?.unwrap_or(10).max(1);
    let common = |beta| CommonCcConfig {
        initial_window_packets,
        loss_reduction_factor: beta,
        minimum_window_packets: 2,
    };
    let cc = match r.choice::<OurCc>("pep_cc")?.unwrap_or(OurCc::Cubic) {
        OurCc::NewReno => CcConfig::NewReno {
            counting: RenoCounting::Linux,
            common: common(0.5),
        },
        OurCc::NewRenoApprox => CcConfig::NewReno {
            counting: RenoCounting::Approximate,
            common: common(0.5),
        },
        OurCc::None => CcConfig::None,
        OurCc::Cubic => CcConfig::Cubic {
            hystart: true,
            profile: CubicProfile::Linux,
            common: common(0.7),
        },
        OurCc::Dctcp => CcConfig::Dctcp {
            common: common(0.5),
        },
        OurCc::Prague => CcConfig::Prague {
            common: common(0.5),
        },
        OurCc::Bbr => CcConfig::Bbr {
            common: common(0.5),
        },
        OurCc::Bbr3 => CcConfig::Bbr3 {
            common: common(0.5),
        },
    };
    Ok(Some(PepSpec {
        position,
        buffer: user(r, "pep_buffer")?.unwrap_or(d.buffer),
        cc,
        receive_window_max: user(r, "pep_receive_window_max")?.unwrap_or(d.receive_window_max),
        send_buffer: user(r, "pep_send_buffer")?.unwrap_or(d.send_buffer),
    }))
}

/// The `flow.cc` names a flow of `stack` accepts: quinn's only on `quic`; DCTCP and Prague
/// not on `quic` (quinn passes no per-ACK ECN counts); BBR and BBRv3 only on `tcp` (rate
/// samples).
fn allowed_ours(stack: Stack) -> Vec<&'static str> {
    CC_NAMES
        .iter()
        .copied()
        .filter(|n| match OurCc::from_name(n) {
            Some(OurCc::Dctcp | OurCc::Prague) => stack != Stack::Quic,
            Some(OurCc::Bbr | OurCc::Bbr3) => stack != Stack::Quic,
            Some(_) => true,
            None => stack == Stack::Quic && QuinnCc::from_name(n).is_some(),
        })
        .collect()
}
