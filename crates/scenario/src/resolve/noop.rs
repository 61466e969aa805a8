//! Keys a flow sets that cannot affect it: `zero_rtt` on a flow of one connection, `size` on a
//! bulk flow, `hystart` with another controller than cubic, … Each is recorded per sweep point
//! ([`Errors::key_use`]); once every point is resolved, a key that had no effect wherever it was
//! set is an error naming the fix, one that had none at some points only is a warning.

use choice::Choice;

use crate::choices::App;
use crate::error::{At, Errors};
use crate::model::{CcChoice, FlowTransport, HttpVersion, Stack, Workload};
use crate::read::Reader;
use crate::registry;
use crate::resolve::tcp::at_default;
use crate::tree::{Table, Val};
use congestion::config::CcConfig;
use transport::cc_adapter::OurCc;

/// What a flow resolved to, for deciding which of its keys matter.
pub(crate) struct Resolved<'a> {
    pub workload: &'a Workload,
    pub cc: &'a CcChoice,
    pub transport: &'a FlowTransport,
}

/// When a set key counts as asking for something.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Set {
    /// Whenever the user writes it (`size` on a bulk flow reads as "send this much").
    Always,
    /// When its value differs from the default (a default asks for nothing).
    NotDefault,
}

/// Records, for each key of `table` that only some flows use, whether this flow uses it.
pub(crate) fn record(
    table: &Table,
    at: &At,
    user_path: &str,
    r: &Reader<'_>,
    flow: &Resolved<'_>,
    errors: &Errors,
) {
    let cc = flow.cc.name();
    let bulk = matches!(flow.workload, Workload::Bulk { .. });
    let connections = match flow.workload {
        Workload::Download { connections, .. } => *connections,
        Workload::Bulk { .. } => 1,
    };
    let download = format!("app = {:?}", App::Download.name());
    let ours = matches!(flow.cc, CcChoice::Ours(c) if !matches!(c, CcConfig::None));
    // quiche's BBRv2 takes the initial window (and no other common key: refused before).
    let quiche_bbr2 = matches!(flow.cc, CcChoice::QuicheBbr2 { .. });
    let (pep, http) = match flow.transport {
        FlowTransport::Tcp { knobs, pep } => (pep.is_some(), Some(knobs.http)),
        _ => (false, None),
    };
    let only_cubic = (cc != OurCc::Cubic.name())
        .then(|| format!("applies only to cc = \"cubic\", and this flow has cc = {cc:?}; set cc = \"cubic\" or leave the key out"));
    let no_common = (!ours).then(|| {
        format!(
            "applies only to quiclab's controllers ({}), and this flow has cc = {cc:?}; choose one of them or leave the key out",
            [
                OurCc::NewReno,
                OurCc::NewRenoApprox,
                OurCc::Cubic,
                OurCc::Dctcp,
                OurCc::Prague,
                OurCc::Bbr,
                OurCc::Bbr3,
            ]
            .map(|c| c.name())
                .join(", ")
        )
    });
    // (key, when it counts as set, why it has no effect on this flow: None = it has one)
    let checks: [(&str, Set, Option<String>); 11] = [
        (
            "zero_rtt",
            Set::NotDefault,
            (connections < 2).then(|| {
                if bulk {
                    format!("has no effect: 0-RTT resumes an earlier connection, and a bulk flow makes one connection; set {download} and connections = 2 or more")
                } else {
                    "has no effect: 0-RTT applies to the second and later connections of a download, and this flow makes one connection; set connections = 2 or more".to_string()
                }
            }),
        ),
        (
            "size",
            Set::Always,
            bulk.then(|| format!("has no effect on a bulk flow, which sends until flow.stop or the end of the run; to transfer this many bytes set {download}")),
        ),
        (
            "streams",
            Set::NotDefault,
            bulk.then(|| format!("has no effect on a bulk flow, which sends on one stream; for concurrent streams set {download}")),
        ),
        (
            "connections",
            Set::NotDefault,
            bulk.then(|| format!("has no effect on a bulk flow, which makes one connection; for connections one after the other set {download}")),
        ),
        ("hystart", Set::NotDefault, only_cubic.clone()),
        ("cubic_profile", Set::NotDefault, only_cubic),
        (
            "reno_profile",
            Set::NotDefault,
            (cc != OurCc::NewReno.name()).then(|| format!("applies only to cc = \"newreno\", and this flow has cc = {cc:?}; set cc = \"newreno\" or leave the key out")),
        ),
        (
            "initial_window",
            Set::NotDefault,
            no_common.clone().filter(|_| !quiche_bbr2),
        ),
        ("min_window", Set::NotDefault, no_common.clone()),
        ("loss_reduction", Set::NotDefault, no_common),
        (
            "http1_connections",
            Set::NotDefault,
            (http.is_some() && http != Some(HttpVersion::Http11)).then(|| "applies only to http = \"http1.1\" (HTTP/2 multiplexes every request over one connection); set http = \"http1.1\" or leave the key out".to_string()),
        ),
    ];
    for (key, set, noop) in checks {
        record_one(table, at, user_path, r, key, set, noop, errors);
    }
    let no_pep = (flow.transport.stack() == Stack::Tcp && !pep).then(|| {
        "applies only with a PEP on the path; set pep = \"client-side\" or \"server-side\", or leave the key out".to_string()
    });
    for key in [
        "pep_buffer",
        "pep_cc",
        "pep_initial_window",
        "pep_receive_window_max",
        "pep_send_buffer",
    ] {
        record_one(
            table,
            at,
            user_path,
            r,
            key,
            Set::NotDefault,
            no_pep.clone(),
            errors,
        );
    }
}

/// Records `key` of this flow as used or not (nothing when the user did not set it, or set it
/// to its default where that asks for nothing).
#[allow(clippy::too_many_arguments)]
fn record_one(
    table: &Table,
    at: &At,
    user_path: &str,
    r: &Reader<'_>,
    key: &str,
    set: Set,
    noop: Option<String>,
    errors: &Errors,
) {
    let Some(entry) = table.get(key) else {
        return;
    };
    let Some(doc) = registry::find(&format!("flow.{key}")) else {
        return;
    };
    if set == Set::NotDefault && at_default(table, at, user_path, doc, key, errors) {
        return;
    }
    let path = r.path_of(key);
    let shown = match &entry.node.val {
        Val::Str(s) => format!("{s:?}"),
        other => other.to_string(),
    };
    errors.key_use(
        &path,
        noop.as_ref()
            .map(|why| (&entry.node.at, format!("{path} = {shown} {why}"))),
    );
}
