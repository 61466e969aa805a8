//! `[[flow]]` entries: workload, congestion control, the knobs of the flow's stack and access
//! links.

use choice::Choice;
use congestion::config::{CcConfig, CommonCcConfig, CubicProfile, RenoCounting};

use crate::choices::{App, Direction, RenoProfile};
use crate::error::{At, Errors, ScenarioError};
use crate::model::{CcChoice, DuplexLink, FlowSpec, FlowTransport, QuicKnobs, Stack, Workload};
use crate::names::check_key_name;
use crate::read::{expected, Reader};
use crate::resolve::knobs::overlay;
use crate::resolve::link::{access, LinkDraft};
use crate::resolve::noop;
use crate::resolve::quiche::quiche;
use crate::resolve::quicmodel::quic_model;
use crate::resolve::tcp::{check_stack_keys, pep, tcp};
use crate::tree::{Table, Val};
use netem::config::LinkConfig;
use transport::cc_adapter::{OurCc, QuicheCc, QuinnCc};
use transport::quic::config::{check_mtu, KnobError};

/// Smallest MTU of the research model: RFC 9000 §14 (a client pads its Initial datagrams to
/// 1200 B of UDP payload) plus 28 B of IPv4 and UDP headers, as for quinn.
pub const MIN_QUIC_MODEL_MTU: u64 = 1228;
/// Largest MTU of the research model: it has no quinn-internal limit (its long-header Length
/// field is a varint of whatever size it needs), so the bound is IPv4's 16-bit Total Length,
/// as for TCP: a UDP payload of at most 65535 − 28 = 65507 B.
pub const MAX_QUIC_MODEL_MTU: u64 = 65_535;
/// Smallest TCP MTU: the IPv4 minimum datagram every host must accept (RFC 791).
pub const MIN_TCP_MTU: u64 = 576;
/// Largest TCP MTU: the IPv4 Total Length field is 16 bits.
pub const MAX_TCP_MTU: u64 = 65_535;

/// A flow before its access-link queues know the base RTT, and before `count` replication:
/// `spec` has ideal access links until [`FlowDraft::client`] and `server` are finished.
#[derive(Debug, Clone)]
pub(crate) struct FlowDraft {
    pub spec: FlowSpec,
    pub count: u64,
    pub client: LinkDraft,
    pub server: LinkDraft,
    /// Where the `[[flow]]` is, for cross-key errors.
    pub at: At,
}

/// Resolves the `index`-th `[[flow]]` table.
pub(crate) fn flow(
    table: &Table,
    at: &At,
    index: usize,
    errors: &Errors,
) -> Result<FlowDraft, ScenarioError> {
    let user_path = format!("flow.{index}");
    let r = Reader::new(table, at, "flow", &user_path, errors)?;
    let name = r.string("name")?.unwrap_or_else(|| format!("flow{index}"));
    // Flow names become qlog file names (`<flow>-client-0.sqlog`).
    let name_at = r
        .entry("name")
        .map_or_else(|| at.clone(), |e| e.node.at.clone());
    check_key_name(&name, "flow.name", &name_at, errors)?;
    let count = r.uint_in("count", 0, 10_000)?.unwrap_or(1);
    let stack = r.choice::<Stack>("stack")?.unwrap_or(Stack::Quic);
    check_stack_keys(table, at, stack, &user_path, errors)?;
    let start = r.duration("start")?.unwrap_or_default();
    let stop = r.duration("stop")?;
    if let Some(stop) = stop.filter(|s| *s <= start) {
        let at = r
            .entry("stop")
            .map_or_else(|| at.clone(), |e| e.node.at.clone());
        return Err(errors.at(
            &at,
            format!("stop ({stop:?}) must be after start ({start:?})"),
        ));
    }
    // quinn's bounds are the transport's own (`QuicKnobs::validate`), which the real
    // endpoints check too; the models' are the resolver's.
    let (min_mtu, max_mtu) = match stack {
        Stack::Quic => (0, u64::MAX),
        Stack::Tcp => (MIN_TCP_MTU, MAX_TCP_MTU),
        Stack::QuicModel => (MIN_QUIC_MODEL_MTU, MAX_QUIC_MODEL_MTU),
        Stack::Quiche => (
            u64::from(transport::quiche::knobs::MIN_MTU),
            u64::from(transport::quiche::knobs::MAX_MTU),
        ),
    };
    let mtu = r.uint_in("mtu", min_mtu, max_mtu)?.unwrap_or(1500);
    let mtu = if stack == Stack::Quic {
        check_mtu(mtu).map_err(|e| knob_error(&r, e))?
    } else {
        u16::try_from(mtu).unwrap_or(u16::MAX)
    };
    let ideal = DuplexLink {
        up: LinkConfig::ideal(),
        down: LinkConfig::ideal(),
    };
    let workload = workload(&r)?;
    let cc = congestion_control(&r, stack)?;
    let transport = match stack {
        Stack::Quic => {
            let quic = overlay(
                &r,
                QuicKnobs {
                    mtu,
                    ..QuicKnobs::default()
                },
            )?;
            quic.validate().map_err(|e| knob_error(&r, e))?;
            FlowTransport::Quic(quic)
        }
        Stack::Tcp => FlowTransport::Tcp {
            knobs: tcp(&r, mtu)?,
            pep: pep(&r)?,
        },
        Stack::QuicModel => FlowTransport::QuicModel(quic_model(&r, mtu)?),
        Stack::Quiche => FlowTransport::Quiche(quiche(&r, mtu)?),
    };
    let transport = scalable_ecn(&r, &cc, transport)?;
    noop::record(
        table,
        at,
        &user_path,
        &r,
        &noop::Resolved {
            workload: &workload,
            cc: &cc,
            transport: &transport,
        },
        errors,
    );
    Ok(FlowDraft {
        spec: FlowSpec {
            name,
            workload,
            start,
            stop,
            cc,
            transport,
            client_access: ideal.clone(),
            server_access: ideal,
        },
        count,
        client: access_link(table, at, &user_path, "client_access", errors)?,
        server: access_link(table, at, &user_path, "server_access", errors)?,
        at: at.clone(),
    })
}

/// A knob quinn refuses, reported at the knob's value (or the flow, for a default).
fn knob_error(r: &Reader<'_>, e: KnobError) -> ScenarioError {
    let at = r
        .entry(e.field)
        .map_or_else(|| r.at().clone(), |en| en.node.at.clone());
    r.errors.at(&at, e.to_string())
}

fn workload(r: &Reader<'_>) -> Result<Workload, ScenarioError> {
    let upload = r.choice::<Direction>("direction")? != Some(Direction::Down);
    let size = r.size("size")?.unwrap_or_default();
    let streams = r.uint_in("streams", 1, 1_000_000)?.unwrap_or(1);
    let connections = r.uint_in("connections", 1, 1_000_000)?.unwrap_or(1);
    Ok(match r.choice::<App>("app")?.unwrap_or(App::Bulk) {
        App::Download => {
            if size == 0 {
                let at = r
                    .entry("size")
                    .map_or_else(|| r.at().clone(), |e| e.node.at.clone());
                return Err(r.errors.at(&at, "a download needs a size above zero"));
            }
            let streams_at = r
                .entry("streams")
                .map_or_else(|| r.at().clone(), |e| e.node.at.clone());
            // The size is split over the streams; a stream needs at least one byte to exist,
            // and quietly rounding every stream up to one byte would deliver more than `size`.
            if streams > size {
                return Err(r.errors.at(
                    &streams_at,
                    format!(
                        "{} = {streams} is more than the {size} B of flow.size: every stream carries at least one byte; allowed: 1 to {}",
                        r.path_of("streams"),
                        size.min(1_000_000)
                    ),
                ));
            }
            Workload::Download {
                size,
                streams: u32::try_from(streams).unwrap_or(u32::MAX),
                connections: u32::try_from(connections).unwrap_or(u32::MAX),
            }
        }
        App::Bulk => Workload::Bulk { upload },
    })
}

/// Our controllers take the common knobs; quinn's built-ins ignore them. The profiles default
/// per stack: Linux's for TCP (the model stands for a Linux host), the RFCs' for QUIC (quinn,
/// the reference QUIC stack, implements RFC 9002's NewReno and an RFC 9438-style CUBIC).
fn congestion_control(r: &Reader<'_>, stack: Stack) -> Result<CcChoice, ScenarioError> {
    let name = r.choice_name("cc")?.unwrap_or(OurCc::NewReno.name());
    let ours = OurCc::from_name(name);
    let default_reduction = if ours == Some(OurCc::Cubic) { 0.7 } else { 0.5 };
    let loss_reduction_factor = r.float("loss_reduction")?.unwrap_or(default_reduction);
    if !(loss_reduction_factor > 0.0 && loss_reduction_factor < 1.0) {
        let at = r
            .entry("loss_reduction")
            .map_or_else(|| r.at().clone(), |e| e.node.at.clone());
        return Err(r
            .errors
            .at(&at, "loss_reduction must be between 0 and 1 (exclusive)"));
    }
    let common = CommonCcConfig {
        initial_window_packets: at_least_one(r, "initial_window")?,
        loss_reduction_factor,
        minimum_window_packets: at_least_one(r, "min_window")?,
    };
    let hystart = r.boolean("hystart")?.unwrap_or(true);
    let linux_default = stack == Stack::Tcp;
    let profile = match r.choice::<CubicProfile>("cubic_profile")? {
        Some(p) => p,
        None if linux_default => CubicProfile::Linux,
        None => CubicProfile::Rfc9438,
    };
    let reno = match r.choice::<RenoProfile>("reno_profile")? {
        Some(RenoProfile::Linux) => RenoCounting::Linux,
        Some(RenoProfile::Inet) => RenoCounting::Inet,
        Some(RenoProfile::Rfc9002) => RenoCounting::Exact,
        None if linux_default => RenoCounting::Linux,
        None => RenoCounting::Exact,
    };
    if QuicheCc::from_name(name) == Some(QuicheCc::Bbr2) {
        return Ok(CcChoice::QuicheBbr2 {
            initial_window_packets: common.initial_window_packets,
        });
    }
    let Some(ours) = ours else {
        // The registry accepts exactly ours, quinn's and quiche's names.
        return QuinnCc::from_name(name)
            .map(CcChoice::quinn)
            .ok_or_else(|| {
                r.errors.at(
                    r.at(),
                    format!("{}: {name:?} selects no controller", r.path_of("cc")),
                )
            });
    };
    Ok(CcChoice::Ours(match ours {
        OurCc::NewReno => CcConfig::NewReno {
            counting: reno,
            common,
        },
        OurCc::NewRenoApprox => CcConfig::NewReno {
            counting: RenoCounting::Approximate,
            common,
        },
        OurCc::Cubic => CcConfig::Cubic {
            hystart,
            profile,
            common,
        },
        OurCc::None => CcConfig::None,
        OurCc::Dctcp => CcConfig::Dctcp { common },
        OurCc::Prague => CcConfig::Prague { common },
        OurCc::Bbr => CcConfig::Bbr { common },
        OurCc::Bbr3 => CcConfig::Bbr3 { common },
    }))
}

/// A controller that needs ECN (DCTCP, Prague) turns `flow.ecn` on, as Linux's
/// `TCP_CONG_NEEDS_ECN` makes such a socket negotiate ECN whatever `net.ipv4.tcp_ecn` says;
/// `ecn = false` beside it asks for the impossible and is refused.
fn scalable_ecn(
    r: &Reader<'_>,
    cc: &CcChoice,
    mut transport: FlowTransport,
) -> Result<FlowTransport, ScenarioError> {
    let CcChoice::Ours(config) = cc else {
        return Ok(transport);
    };
    if !config.needs_ecn() {
        return Ok(transport);
    }
    if let (Some(e), Some(false)) = (r.entry("ecn"), r.boolean("ecn")?) {
        let at = e.node.at.clone();
        return Err(r.errors.at(
            &at,
            format!(
                "{} = false: cc = {:?} is driven by ECN marks and needs ECN; set ecn = true or leave the key out",
                r.path_of("ecn"),
                cc.name()
            ),
        ));
    }
    match &mut transport {
        FlowTransport::Tcp { knobs, .. } => knobs.ecn = true,
        FlowTransport::QuicModel(k) => k.common.ecn = true,
        FlowTransport::Quic(k) => k.common.ecn = true,
        // Refused before: `check_quiche_keys` allows no ECN-driven controller.
        FlowTransport::Quiche(_) => {}
    }
    Ok(transport)
}

fn at_least_one(r: &Reader<'_>, key: &str) -> Result<u64, ScenarioError> {
    let v = r.packets(key)?.unwrap_or(1);
    if v == 0 {
        let at = r
            .entry(key)
            .map_or_else(|| r.at().clone(), |e| e.node.at.clone());
        return Err(r
            .errors
            .at(&at, format!("{} must be at least 1 packet", r.path_of(key))));
    }
    Ok(v)
}

fn access_link(
    table: &Table,
    at: &At,
    user_path: &str,
    key: &'static str,
    errors: &Errors,
) -> Result<LinkDraft, ScenarioError> {
    let prefix = if key == "client_access" {
        "flow.client_access"
    } else {
        "flow.server_access"
    };
    let path = format!("{user_path}.{key}");
    let empty = Table::default();
    let (t, at) = match table.get(key) {
        None => (&empty, at),
        Some(e) => match &e.node.val {
            Val::Table(t) => (t, &e.node.at),
            other => {
                return Err(errors.at(
                    &e.node.at,
                    format!("{path}: {}", expected("a table", other)),
                ))
            }
        },
    };
    access(&Reader::new(t, at, prefix, &path, errors)?)
}
