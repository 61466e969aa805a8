//! Every scenario key with its type, default and documentation: the one source of truth that the
//! parser checks keys against, reads defaults from, and that `docs/scenario.md` is generated from.
//! The transports' knob structs (`TcpKnobs`, `QuicKnobs`, `QuicModelKnobs`, and the
//! `QuicCommonKnobs` both QUIC structs embed) are the exception:
//! their `Default`s are the defaults, their field names the `flow.*` keys, and a test holds the
//! texts here to them.
//!
//! Paths are dotted. Flows and cross sources are arrays (`[[flow]]`), addressed without an index
//! here (`flow.cc`). Items of inline arrays of tables are written `link.rate_schedule[].at`; they
//! cannot be addressed one by one from the command line (set the whole array instead).

/// The type of a key's value, which decides how its text is parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Any string.
    Str,
    /// A non-negative integer.
    Int,
    /// A number (integer or float).
    Float,
    /// `true` or `false`.
    Bool,
    /// A rate such as `"10Mbit"`, `"1.5MB/s"` or `"unlimited"`; a bare number other than 0 is
    /// refused (bit/s or Mbit/s?).
    Rate,
    /// A size such as `"8.9MB"`, `"64KiB"`; a bare integer is bytes.
    Size,
    /// A duration such as `"20ms"`, `"1.5s"`.
    Duration,
    /// `"1.5%"` or a number in `[0, 1]`.
    Probability,
    /// A packet count: `"10pkt"` or a bare integer.
    Packets,
    /// A queue limit expression: `"25pkt"`, `"64KB"`, `"1.5bdp+5pkt"`, `"unlimited"`.
    Queue,
    /// One of the `allowed` strings.
    Enum,
    /// A path to a CSV file, relative to the scenario file.
    Path,
    /// Loss: a probability (Bernoulli shorthand) or a table with `model`.
    Loss,
    /// A queue discipline: its name (Linux's defaults) or a table with `model`.
    Qdisc,
    /// A table of keys.
    Table,
    /// An array of tables.
    TableArray,
    /// A string, or an array of strings.
    StrList,
}

impl Kind {
    /// How the type is shown in the documentation.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Str => "string",
            Kind::Int => "integer",
            Kind::Float => "number",
            Kind::Bool => "bool",
            Kind::Rate => "rate",
            Kind::Size => "size",
            Kind::Duration => "duration",
            Kind::Probability => "probability",
            Kind::Packets => "packets",
            Kind::Queue => "queue",
            Kind::Enum => "enum",
            Kind::Path => "path",
            Kind::Loss => "probability or table",
            Kind::Qdisc => "name or table",
            Kind::Table => "table",
            Kind::TableArray => "array of tables",
            Kind::StrList => "string or array of strings",
        }
    }
}

/// What happens when a key is absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultValue {
    /// This value (written as a user would write it).
    Value(&'static str),
    /// Absent means "not set" (an `Option` that stays `None`).
    Unset,
    /// The key must be given (where it applies).
    Required,
    /// The default depends on other keys; the text says how.
    Context(&'static str),
}

impl DefaultValue {
    /// The default as shown in the documentation.
    pub fn text(self) -> String {
        match self {
            DefaultValue::Value(v) => format!("`{v}`"),
            DefaultValue::Unset => "none".to_string(),
            DefaultValue::Required => "required".to_string(),
            DefaultValue::Context(c) => c.to_string(),
        }
    }
}

/// One documented scenario key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyDoc {
    /// Dotted path, e.g. `link.loss.p` or `flow.cc`.
    pub path: &'static str,
    /// Type of the value.
    pub kind: Kind,
    /// Value when absent.
    pub default: DefaultValue,
    /// One-line description.
    pub doc: &'static str,
    /// Accepted values for [`Kind::Enum`] (empty otherwise).
    pub allowed: &'static [&'static str],
    /// A valid, non-default TOML value; the registry test sets it and expects a different result.
    pub example: &'static str,
    /// `key=value` overrides that make `example` matter (e.g. the loss model for `link.loss.r`).
    pub context: &'static [&'static str],
    /// The flow stacks the key applies to (empty = every stack); set on a flow of another
    /// stack it is an error. A key of both QUIC stacks (`stream_window`) means the same in both.
    pub stacks: &'static [Stack],
    /// Values accepted beyond what the kind allows (checked where knobs are read generically).
    pub bounds: Bounds,
}

/// Limits on a knob's value beyond its kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bounds {
    /// Anything the kind accepts.
    Any,
    /// A duration above zero (a zero timer would fire without end).
    Positive,
    /// An integer or size (bytes) in `[min, max]`.
    Within(u64, u64),
    /// A duration in `[min, max]`.
    DurationWithin(std::time::Duration, std::time::Duration),
    /// A number in the unit interval, each end included or not (`fc_threshold` is in
    /// `(0, 1]`: a zero threshold would send an update for every byte consumed).
    Fraction {
        /// 0 is allowed.
        zero: bool,
        /// 1 is allowed.
        one: bool,
    },
}

impl KeyDoc {
    /// Whether a flow of `stack` may set this key.
    pub fn applies_to(&self, stack: Stack) -> bool {
        self.stacks.is_empty() || self.stacks.contains(&stack)
    }
}

/// A group of keys rendered as one table in the documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SectionDoc {
    /// Path prefix of the keys in this section (`link.loss`, `flow`, `link.blackout[]`).
    pub prefix: &'static str,
    /// Heading, as the TOML header or a description.
    pub title: &'static str,
    /// A paragraph of explanation.
    pub doc: &'static str,
}

const fn key(
    path: &'static str,
    kind: Kind,
    default: DefaultValue,
    doc: &'static str,
    example: &'static str,
) -> KeyDoc {
    KeyDoc {
        path,
        kind,
        default,
        doc,
        allowed: &[],
        example,
        context: &[],
        stacks: &[],
        bounds: Bounds::Any,
    }
}

/// A duration that must be above zero.
const fn positive(k: KeyDoc) -> KeyDoc {
    KeyDoc {
        bounds: Bounds::Positive,
        ..k
    }
}

/// An integer or size in `[min, max]`.
const fn within(k: KeyDoc, min: u64, max: u64) -> KeyDoc {
    KeyDoc {
        bounds: Bounds::Within(min, max),
        ..k
    }
}

/// A duration in `[min, max]`.
const fn duration_within(k: KeyDoc, min: Duration, max: Duration) -> KeyDoc {
    KeyDoc {
        bounds: Bounds::DurationWithin(min, max),
        ..k
    }
}

/// A number in the unit interval with 0 and 1 included or not.
const fn fraction(k: KeyDoc, zero: bool, one: bool) -> KeyDoc {
    KeyDoc {
        bounds: Bounds::Fraction { zero, one },
        ..k
    }
}

/// RFC 7323 caps a scaled window at 2^30 bytes.
const MAX_WINDOW: u64 = 1 << 30;
/// Send buffers have no protocol limit; this only keeps a typo from allocating the machine.
const MAX_BUFFER: u64 = 1 << 40;

const fn with_context(k: KeyDoc, context: &'static [&'static str]) -> KeyDoc {
    KeyDoc { context, ..k }
}

/// Only quinn's (`QuicKnobs`).
const QUINN: &[Stack] = &[Stack::Quic];
/// Both QUIC stacks, with the same meaning (a field of `QuicCommonKnobs`, which `QuicKnobs` and
/// `QuicModelKnobs` embed).
const BOTH_QUIC: &[Stack] = &[Stack::Quic, Stack::QuicModel];
/// Only the QUIC research model's (`QuicModelKnobs`).
const MODEL: &[Stack] = &[Stack::QuicModel];
/// Both QUIC stacks and quiche, with the same meaning (a field of `QuicCommonKnobs` that
/// `QuicheKnobs` also has).
const QUIC_ALL: &[Stack] = &[Stack::Quic, Stack::QuicModel, Stack::Quiche];
/// quinn's and quiche's (a field of both `QuicKnobs` and `QuicheKnobs`).
const QUINN_QUICHE: &[Stack] = &[Stack::Quic, Stack::Quiche];
/// Only the TCP model's (`TcpKnobs`).
const TCP: &[Stack] = &[Stack::Tcp];

/// A key only quinn has (the research model and the TCP model would ignore it).
const fn quic_only(k: KeyDoc) -> KeyDoc {
    KeyDoc { stacks: QUINN, ..k }
}

/// A key of both QUIC stacks, meaning the same in each (the TCP model would ignore it).
const fn quic_shared(k: KeyDoc) -> KeyDoc {
    KeyDoc {
        stacks: BOTH_QUIC,
        ..k
    }
}

/// A key of both QUIC stacks that quiche honours too, meaning the same in each.
const fn quic_all(k: KeyDoc) -> KeyDoc {
    KeyDoc {
        stacks: QUIC_ALL,
        ..k
    }
}

/// A key of quinn's that quiche honours too.
const fn quinn_quiche(k: KeyDoc) -> KeyDoc {
    KeyDoc {
        stacks: QUINN_QUICHE,
        ..k
    }
}

/// A key only the QUIC research model has; its registry test runs on a model flow.
const fn model_only(k: KeyDoc) -> KeyDoc {
    KeyDoc {
        stacks: MODEL,
        context: &[MODEL_FLOW],
        ..k
    }
}

/// A key the QUIC stacks would ignore; its registry test runs on a TCP flow, where it matters.
const fn tcp_only(k: KeyDoc) -> KeyDoc {
    KeyDoc {
        stacks: TCP,
        context: &[TCP_FLOW],
        ..k
    }
}

const TCP_FLOW: &str = "flow.stack=\"tcp\"";
const MODEL_FLOW: &str = "flow.stack=\"quic-model\"";

const fn one_of(k: KeyDoc, allowed: &'static [&'static str]) -> KeyDoc {
    KeyDoc { allowed, ..k }
}

use std::time::Duration;

use choice::Choice;
use congestion::CubicProfile;
use transport::quic::QuicCrypto;
use transport::quicmodel::{FcUpdate, StreamScheduler};
use transport::tcp::{HttpVersion, LossRecovery, TlsMode};

use transport::cc_adapter::{OurCc, CC_NAMES};

use crate::choices::{
    App, CrossPattern, Direction, JitterDist, LossModel, PepSite, QdiscModel, RenoProfile,
};
use crate::model::Stack;
use DefaultValue::{Context, Required, Unset, Value};
use Kind::*;

/// Longest ACK delay of the research model: RFC 9000 §18.2 forbids a max_ack_delay of 2^14 ms
/// or more.
pub const MAX_MODEL_ACK_DELAY: Duration = Duration::from_millis(16_383);

const HTTP1: &str = "flow.http=\"http1.1\"";

const PEP_ON: &str = "flow.pep=\"server-side\"";

/// The names a [`Choice`] type accepts, as a key's allowed values.
const fn names_of<T: Choice>() -> &'static [&'static str] {
    T::NAMES
}

const GE: &str = "link.loss.model=\"gilbert-elliott\"";

const CODEL: &[&str] = &["link.qdisc.model=\"codel\""];
const FQ_CODEL: &[&str] = &["link.qdisc.model=\"fq_codel\""];
const PIE: &[&str] = &["link.qdisc.model=\"pie\""];
const RED: &[&str] = &["link.qdisc.model=\"red\""];
const DUALPI2: &[&str] = &["link.qdisc.model=\"dualpi2\""];

static KEYS: &[KeyDoc] = &[
    key("run.name", Str, Context("the file name without `.toml`"), "Name of the scenario, used in results and reports and as the default results directory `results/<name>/`: a plain name (ASCII letters, digits, `-`, `_`, `.`, starting with a letter or digit, at most 100 characters), never a path.", "\"renamed\""),
    key("run.duration", Duration, Value("30s"), "Hard stop of every run (virtual time in the simulator).", "\"12s\""),
    key("run.seed", Int, Value("1"), "Base seed; each run's seed is derived from it, the point's sweep values other than the variant, and the repetition.", "42"),
    key("run.reps", Int, Value("1"), "Repetitions of every sweep point, each with its own seed.", "3"),
    key("run.sample_interval", Duration, Value("100ms"), "Period of time-series samples and width of throughput bins; at most 100,000 samples per run (`duration / sample_interval`).", "\"1s\""),
    key("run.measure_from", Duration, Value("0s"), "Start of the measurement window (e.g. to skip slow start).", "\"3s\""),
    key("run.measure_until", Duration, Unset, "End of the measurement window; none = end of the flow.", "\"8s\""),
    // --- bottleneck link ---
    key("link.rate", Rate, Value("10Mbit"), "Bottleneck rate at the IP layer, or `\"unlimited\"`.", "\"5Mbit\""),
    key("link.rate_schedule", TableArray, Unset, "Piecewise-constant rate: `[{ at = \"0s\", rate = \"10Mbit\" }, …]`; the first step must be at 0s.", "[{ at = \"0s\", rate = \"2Mbit\" }, { at = \"1s\", rate = \"4Mbit\" }]"),
    key("link.rate_schedule[].at", Duration, Required, "When this rate starts (steps in increasing order).", "\"0s\""),
    key("link.rate_schedule[].rate", Rate, Required, "Rate from `at` until the next step (`\"0bit\"` = outage).", "\"2Mbit\""),
    key("link.rate_trace", Path, Unset, "CSV file of `seconds,rate` lines (`0,10Mbit` or `0,10000000`), relative to the scenario file; `#` starts a comment. A regular file (a link to one is followed) of at most 64 MiB and 1,000,000 steps.", "\"test-trace.csv\""),
    key("link.mahimahi_trace", Path, Unset, "Mahimahi packet-delivery trace, as `mm-link` reads it: one line per delivery opportunity of 1500 IP bytes, its time in whole ms (lines never decrease; equal lines are several opportunities in one ms; blank lines are skipped), relative to the scenario file. It repeats with its last timestamp as period. Becomes a per-ms rate: n opportunities in a ms = n × 12 Mbit/s (docs/models.md says how it differs from mm-link). A regular file (a link to one is followed) of at most 64 MiB and 1,000,000 rate steps (after merging equal neighbouring ms). A `bdp` queue is sized for its busiest ms.", "\"test-trace.down\""),
    with_context(key("link.rate_repeat", Duration, Unset, "Repeat the rate schedule or trace with this period (not with mahimahi_trace, which repeats with its own).", "\"2s\""), &["link.rate_schedule=[{ at = \"0s\", rate = \"2Mbit\" }, { at = \"1s\", rate = \"4Mbit\" }]"]),
    with_context(key("link.random_phase", Bool, Value("false"), "Enter a repeating rate (mahimahi_trace, or rate_schedule / rate_trace with rate_repeat) at a point drawn uniformly over its period from the run's seed: repetitions sample different stretches of the trace, and variants, which share their seeds, the same stretch. false = every run starts at the beginning.", "true"), &["link.mahimahi_trace=\"test-trace.down\""]),
    key("link.delay", Duration, Value("15ms"), "One-way propagation delay.", "\"40ms\""),
    key("link.rtt", Duration, Unset, "Round-trip propagation delay of the bottleneck, as papers quote it: sets `delay` = rtt / 2 in both directions (nanoseconds rounded down). Only in `[link]`; an explicit `delay` in `[link]`, `[link.up]` or `[link.down]` with it is an error.", "\"80ms\""),
    key("link.jitter", Duration, Value("0ms"), "Extra per-packet delay variation (maximum for uniform, standard deviation for normal).", "\"2ms\""),
    with_context(one_of(key("link.jitter_dist", Enum, Value("uniform"), "Distribution of the jitter.", "\"normal\""), names_of::<JitterDist>()), &["link.jitter=\"2ms\""]),
    key("link.queue", Queue, Value("1bdp"), "Drop-tail queue limit: `\"25pkt\"`, `\"64KB\"`, `\"1.5bdp+5pkt\"` or `\"unlimited\"` (see BDP below). With another `qdisc`, the discipline's limit when set explicitly (else Linux's; see link.qdisc).", "\"25pkt\""),
    one_of(key("link.qdisc", Qdisc, Value("droptail"), "Queue discipline in front of the serializer: a name (Linux's defaults) or a table with `model` and its parameters (see link.qdisc below).", "\"codel\""), names_of::<QdiscModel>()),
    one_of(key("link.qdisc.model", Enum, Required, "The discipline of the table form.", "\"codel\""), names_of::<QdiscModel>()),
    with_context(key("link.qdisc.limit", Queue, Context("Linux's: `1000pkt` (codel, pie), `10240pkt` (fq_codel), `10000pkt` (dualpi2), `400KB` (red); `link.queue` when that is set"), "codel, fq_codel, pie, dualpi2, red: hard limit; arrivals beyond it are tail drops (`dropped_queue_*`). A queue expression like `link.queue`: packet-limited disciplines count a byte limit in packets of the flow's MTU (rounded up), red counts a packet limit as that many MTUs of bytes.", "\"50pkt\""), CODEL),
    with_context(positive(key("link.qdisc.target", Duration, Context("`5ms` (codel, fq_codel), `15ms` (pie, dualpi2)"), "codel, fq_codel, pie, dualpi2: the queue delay the discipline steers to (CoDel: acceptable standing sojourn time).", "\"10ms\"")), CODEL),
    with_context(positive(key("link.qdisc.interval", Duration, Value("100ms"), "codel, fq_codel: how long the sojourn must stay above target before dropping, and the control law's base spacing (interval/√count); about a worst-case RTT.", "\"50ms\"")), CODEL),
    with_context(key("link.qdisc.ecn", Bool, Context("`false` (codel, pie, red), `true` (fq_codel)"), "codel, fq_codel, pie, red: CE-mark ECN-capable (ECT) packets instead of dropping them (Not-ECT packets are still dropped). dualpi2 always marks ECT packets.", "true"), CODEL),
    with_context(key("link.qdisc.ce_threshold", Duration, Unset, "codel, fq_codel: also CE-mark ECT packets whose sojourn exceeds this, whatever the control law says (Linux's `ce_threshold`); none = off.", "\"1ms\""), CODEL),
    with_context(within(key("link.qdisc.mtu", Size, Value("1500B"), "codel, fq_codel, pie, dualpi2: the device MTU in IP bytes (Linux's `psched_mtu` less the Ethernet header): a backlog of at most one MTU is never a standing queue.", "\"9000B\""), 68, 65_535), CODEL),
    with_context(within(key("link.qdisc.flows", Int, Value("1024"), "fq_codel: hash buckets the flows are spread over.", "256"), 1, 65_536), FQ_CODEL),
    with_context(within(key("link.qdisc.quantum", Size, Value("1500B"), "fq_codel: deficit round robin quantum in IP bytes (Linux: the device MTU, 1514 with the Ethernet header).", "\"300B\""), 256, u32::MAX as u64), FQ_CODEL),
    with_context(within(key("link.qdisc.memory_limit", Size, Value("32MiB"), "fq_codel: limit on queued IP bytes (Linux counts buffer truesize); beyond it the fattest flow drops.", "\"4MiB\""), 1, MAX_BUFFER), FQ_CODEL),
    with_context(within(key("link.qdisc.drop_batch", Int, Value("64"), "fq_codel: most packets one overflow drops from the fattest flow.", "8"), 1, u32::MAX as u64), FQ_CODEL),
    with_context(positive(key("link.qdisc.tupdate", Duration, Context("`15ms` (pie), `16ms` (dualpi2)"), "pie, dualpi2: period of the drop-probability update.", "\"30ms\"")), PIE),
    with_context(key("link.qdisc.alpha", Float, Context("`0.125` (pie), `0.16015625` (dualpi2)"), "pie, dualpi2: integral gain, 1/s (Linux's `alpha`/16 for pie, /256 for dualpi2).", "0.25"), PIE),
    with_context(key("link.qdisc.beta", Float, Context("`1.25` (pie), `3.19921875` (dualpi2)"), "pie, dualpi2: proportional gain, 1/s.", "2.5"), PIE),
    with_context(key("link.qdisc.bytemode", Bool, Value("false"), "pie: scale the drop probability by packet size / MTU.", "true"), PIE),
    with_context(key("link.qdisc.min", Size, Value("30KB"), "red: average queue (bytes) where early drops or marks start (tc's `min`).", "\"20KB\""), RED),
    with_context(key("link.qdisc.max", Size, Value("90KB"), "red: average queue (bytes) from which every packet is dropped or marked (tc's `max`).", "\"120KB\""), RED),
    with_context(key("link.qdisc.probability", Probability, Value("2%"), "red: drop/mark probability at `max` (tc's `probability`; the starting value when adaptive).", "\"5%\""), RED),
    with_context(within(key("link.qdisc.burst", Int, Context("tc's `(2·min + max) / (3·avpkt)`"), "red: packets of a burst the average lets through; sets the EWMA weight as tc does.", "200"), 1, u32::MAX as u64), RED),
    with_context(within(key("link.qdisc.avpkt", Size, Value("1000B"), "red: typical packet size for `burst` and the idle-time decay.", "\"1500B\""), 1, u32::MAX as u64), RED),
    with_context(key("link.qdisc.bandwidth", Rate, Context("the link's rate (its highest step)"), "red: rate for the idle-time decay of the average.", "\"5Mbit\""), RED),
    with_context(key("link.qdisc.harddrop", Bool, Value("false"), "red: with `ecn`, still drop (not mark) above `max`.", "true"), RED),
    with_context(key("link.qdisc.adaptive", Bool, Value("false"), "red: adaptive RED: adjust the probability every 500 ms to keep the average between min and max.", "true"), RED),
    with_context(key("link.qdisc.gentle", Bool, Value("false"), "red: gentle RED (ns-2's, not in Linux): the probability rises to 1 between `max` and 2·`max`.", "true"), RED),
    with_context(key("link.qdisc.step_threshold", Duration, Value("1ms"), "dualpi2: L4S queue sojourn above which every L4S packet is marked.", "\"2ms\""), DUALPI2),
    with_context(key("link.qdisc.min_qlen_step", Int, Value("0"), "dualpi2: apply the step only with at least this many packets in the L4S queue.", "2"), DUALPI2),
    with_context(within(key("link.qdisc.coupling_factor", Int, Value("2"), "dualpi2: coupling factor k between the L4S and classic probabilities.", "4"), 1, 255), DUALPI2),
    with_context(key("link.qdisc.drop_overload", Bool, Value("true"), "dualpi2: on overload drop L4S packets (true) rather than only marking them.", "false"), DUALPI2),
    with_context(key("link.qdisc.drop_early", Bool, Value("false"), "dualpi2: decide at enqueue instead of dequeue.", "true"), DUALPI2),
    with_context(key("link.qdisc.c_protection", Probability, Value("10%"), "dualpi2: weight of the classic queue in the scheduler (Linux's `classic_protection`, in whole percent).", "\"20%\""), DUALPI2),
    key("link.loss", Loss, Context("no loss"), "Packet loss: a probability (`\"2%\"`, Bernoulli) or a table with `model` and its parameters.", "\"2%\""),
    with_context(one_of(key("link.loss.model", Enum, Value("bernoulli"), "Loss model.", "\"periodic\""), names_of::<LossModel>()), &["link.loss.p=\"1%\""]),
    key("link.loss.p", Probability, Required, "bernoulli, periodic, bounded: loss probability; gilbert-elliott: P(Good→Bad).", "\"1%\""),
    with_context(key("link.loss.r", Probability, Required, "gilbert-elliott: P(Bad→Good).", "0.2"), &[GE, "link.loss.p=0.01"]),
    with_context(key("link.loss.k", Probability, Value("1"), "gilbert-elliott: probability that a packet survives in Good.", "0.99"), &[GE, "link.loss.p=0.01", "link.loss.r=0.2"]),
    with_context(key("link.loss.h", Probability, Value("0"), "gilbert-elliott: probability that a packet survives in Bad.", "0.5"), &[GE, "link.loss.p=0.01", "link.loss.r=0.2"]),
    with_context(key("link.loss.gamma", Probability, Required, "gilbert-elliott, second form: P(Good→Good) = 1 − p.", "0.999"), &[GE, "link.loss.beta=0.875", "link.loss.h=0.5", "link.loss.target=\"5%\""]),
    with_context(key("link.loss.beta", Probability, Required, "gilbert-elliott, second form: P(Bad→Bad) = 1 − r.", "0.8"), &[GE, "link.loss.gamma=0.99875", "link.loss.h=0.5", "link.loss.target=\"5%\""]),
    with_context(key("link.loss.target", Probability, Required, "gilbert-elliott, second form: mean loss rate; k is solved for it.", "\"10%\""), &[GE, "link.loss.gamma=0.99875", "link.loss.beta=0.875", "link.loss.h=0.5"]),
    with_context(key("link.loss.max_burst", Int, Value("3"), "bounded: at most this many consecutive losses.", "2"), &["link.loss.model=\"bounded\"", "link.loss.p=\"2%\""]),
    key("link.blackout", TableArray, Unset, "Outages in which every packet is lost: `[{ start = \"5s\", duration = \"2s\", period = \"7s\" }]`.", "[{ start = \"1s\", duration = \"2s\" }]"),
    key("link.blackout[].start", Duration, Required, "Start of the first outage.", "\"1s\""),
    key("link.blackout[].duration", Duration, Required, "Length of each outage.", "\"2s\""),
    key("link.blackout[].period", Duration, Unset, "Repeat the outage with this period.", "\"7s\""),
    key("link.corrupt", Probability, Value("0%"), "Probability that a packet arrives with a bit flipped.", "\"1%\""),
    key("link.ber", Probability, Value("0"), "Bit error rate: each bit is flipped with this probability.", "1e-6"),
    key("link.duplicate", Probability, Value("0%"), "Probability that a packet is delivered twice.", "\"1%\""),
    key("link.reorder", Probability, Value("0%"), "Probability that a packet is held back by `reorder_delay` so later ones overtake it.", "\"1%\""),
    with_context(key("link.reorder_delay", Duration, Value("1ms"), "Extra delay of a reordered packet.", "\"5ms\""), &["link.reorder=\"1%\""]),
    key("link.up", Table, Unset, "Keys for the up direction (client → server) only; accepts every `link` key except `up`/`down`.", "{ rate = \"2Mbit\" }"),
    key("link.down", Table, Unset, "Keys for the down direction (server → client) only; accepts every `link` key except `up`/`down`.", "{ delay = \"300ms\" }"),
    // --- flows ---
    key("flow.name", Str, Context("`flow{i}`, i = index of the `[[flow]]`"), "Unique name of the flow in results and qlog file names: a plain name like `run.name`.", "\"bulk\""),
    key("flow.count", Int, Value("1"), "Replicate this flow; copies are named `{name}.0` … `{name}.{count-1}`. `0` runs no copy: a variant without a competitor, the baseline of `quiclab compare --harm` (declare competitors last, so the other flows keep their `flows.N` index).", "2"),
    one_of(key("flow.stack", Enum, Value("quic"), "Transport: `quic` = the real quinn-proto state machine; `tcp` = quiclab's Linux-like TCP model with TLS modelled as messages; `quic-model` = quiclab's QUIC research model (RFC 9000/9002 semantics and real wire sizes without cryptography, with INET's and ModQUIC's knobs; simulator only); `quiche` = Cloudflare's quiche QUIC library in virtual time (its clock and random bytes interposed at link time; simulator only): it takes `cc` = `newreno`, `cubic` or `quiche-bbr2`, `initial_window`, `hystart`, `mtu`, `mtu_discovery`, `initial_rtt`, `stream_window`, `conn_window`, `max_ack_delay` (its transport parameter) and `zero_rtt`, and refuses the keys it cannot honour (ACK ratio, send window, ECN, address tokens, the controllers' profiles and decrease factors).", "\"tcp\""), names_of::<Stack>()),
    one_of(key("flow.app", Enum, Value("bulk"), "Workload: saturated `bulk` sender, or `download` of `size` bytes.", "\"download\""), names_of::<App>()),
    one_of(key("flow.direction", Enum, Value("up"), "bulk: who sends; `up` = the client uploads, `down` = the server sends.", "\"down\""), names_of::<Direction>()),
    with_context(key("flow.size", Size, Value("10MB"), "download: bytes requested, split evenly over the streams.", "\"8.9MB\""), &["flow.app=\"download\""]),
    with_context(key("flow.streams", Int, Value("1"), "download: concurrent streams per connection (at most `size`: each stream carries at least one byte).", "4"), &["flow.app=\"download\""]),
    with_context(key("flow.connections", Int, Value("1"), "download: connections made one after the other (0-RTT applies to the second and later).", "2"), &["flow.app=\"download\""]),
    key("flow.start", Duration, Value("0s"), "When the client starts.", "\"1s\""),
    key("flow.stop", Duration, Unset, "bulk: when the sender stops; none = end of the run.", "\"5s\""),
    one_of(key("flow.cc", Enum, Value("newreno"), "Congestion control: ours (`newreno` with exact byte counting, `newreno-approx` with RFC 9002's per-ACK increase, `cubic`, `none`) on every stack; the scalable ECN-driven `dctcp` (RFC 8257 as Linux, ECT(0)) and `prague` (TCP Prague, L4S: ECT(1), RTT-independent above 25 ms, paced where the stack paces) on `tcp` and `quic-model`, where they turn `ecn` on; `bbr` (BBR v1 as Linux's tcp_bbr.c: delivery-rate samples, paced) and `bbr3` (BBRv3 as the IETF CCWG draft: BBR's model bounded by loss, β = 0.7 per loss round, at most 2% loss while probing) on `tcp` and `quic-model` (the emulator's kernel TCP has no `bbr3`; quinn's controller interface gives neither delivery-rate samples nor lost packets and cannot set a pacing rate, so on `quic` BBR is quinn's own `quinn-bbr`); or quinn's built-ins (`quinn-*`, `quic` only); on `quiche`, `newreno` and `cubic` are quiche's own Reno and CUBIC (HyStart++ with `hystart`) and `quiche-bbr2` its BBRv2 (gcongestion; `quiche` only), the others are refused.", "\"cubic\""), CC_NAMES),
    with_context(key("flow.hystart", Bool, Value("true"), "cubic: leave slow start on rising delay: Linux's HyStart (ACK train + delay increase) with `cubic_profile = \"linux\"`, HyStart++ (RFC 9406) with `\"rfc9438\"`.", "false"), &["flow.cc=\"cubic\""]),
    with_context(one_of(key("flow.cubic_profile", Enum, Context("`linux` (tcp), `rfc9438` (quic)"), "cubic: `linux` = Linux's tcp_cubic.c (windows in whole segments, β = 717/1024, constant-rate TCP-friendliness estimate, Linux's HyStart); `rfc9438` = RFC 9438 in bytes (α = 1 once W_max is regained, HyStart++). QUIC defaults to `rfc9438` like quinn's CUBIC.", "\"linux\""), names_of::<CubicProfile>()), &["flow.cc=\"cubic\""]),
    with_context(one_of(key("flow.reno_profile", Enum, Context("`linux` (tcp), `rfc9002` (quic)"), "newreno: `linux` = Linux's Reno (tcp_reno_cong_avoid: whole segments, one per window of acknowledged segments, ssthresh = cwnd/2); `rfc9002` = exact byte counting of RFC 9002 with `loss_reduction`; `inet` = INET's NewReno: exact counting, and bytes acknowledged during a recovery period count towards the next increase.", "\"linux\""), names_of::<RenoProfile>()), &["flow.cc=\"newreno\""]),
    key("flow.initial_window", Packets, Value("10pkt"), "Initial congestion window (ours only; RFC 6928 and Linux's TCP_INIT_CWND: 10).", "\"4pkt\""),
    key("flow.loss_reduction", Float, Context("0.5 (newreno), 0.7 (cubic)"), "Multiplicative decrease on congestion (ours only).", "0.8"),
    key("flow.min_window", Packets, Value("2pkt"), "Minimum congestion window (ours only).", "\"4pkt\""),
    key("flow.mtu", Int, Value("1500"), "IP MTU: 1228 to 16411 for `quic` (quinn's limit), 1228 to 65535 for `quic-model` and `quiche`, 576 to 65535 for `tcp`. QUIC: UDP payload at most mtu − 28; TCP: MSS = mtu − 40, − 12 more with timestamps.", "1280"),
    key("flow.ecn", Bool, Value("false"), "Use ECN end to end. `tcp`: the client asks for RFC 3168 ECN in its SYN (Linux's `net.ipv4.tcp_ecn = 1`; servers and PEPs accept as Linux's default 2), new data leaves ECT(0), the receiver echoes CE with ECE until CWR and the sender reduces once per round trip. `quic`, `quic-model`: packets leave ECT(0), ACKs carry ECN counts and a rise in CE is a congestion event (RFC 9000 §13.4, RFC 9002 §7.1). False: everything leaves Not-ECT, so an AQM drops instead of marking. `quiche` has no ECN: `true` is refused.", "true"),
    quinn_quiche(key("flow.mtu_discovery", Bool, Value("false"), "Let the stack probe for a larger MTU (DPLPMTUD: quinn's, or quiche's `discover_pmtu`).", "true")),
    quic_all(positive(key("flow.initial_rtt", Duration, Value("333ms"), "RTT estimate before the first sample.", "\"100ms\""))),
    quic_all(key("flow.stream_window", Size, Value("16MB"), "Per-stream receive window (initial MAX_STREAM_DATA, then kept open ahead of the consumed offset); generous so it limits only when set. quic-model and quiche: 1 B to 2^62 − 1 B (quiche: also its largest auto-tuned stream window).", "\"65KB\"")),
    quic_all(key("flow.conn_window", Size, Value("24MB"), "Connection receive window (initial MAX_DATA, then kept open ahead of the consumed data). quic-model and quiche: 1 B to 2^62 − 1 B (quiche: also its largest auto-tuned connection window).", "\"100KB\"")),
    quic_shared(key("flow.send_window", Size, Value("32MB"), "Sender's buffer limit: unacknowledged plus unsent stream data (TCP: `send_buffer`).", "\"1MB\"")),
    quic_shared(within(key("flow.ack_ratio", Int, Unset, "Ask the peer to acknowledge every n-th ack-eliciting packet (ACK_FREQUENCY frame of draft-ietf-quic-ack-frequency); none = no request: quinn ACKs every second packet, the model's receiver uses `receiver_ack_ratio`.", "10"), 1, u32::MAX as u64)),
    quic_all(key("flow.max_ack_delay", Duration, Unset, "Max ACK delay requested with an ACK_FREQUENCY frame; none = no request: 25 ms for quinn, the model's receiver uses `ack_delay`. quic-model: above 0 and below 16384 ms (RFC 9000's limit). quiche (no ACK_FREQUENCY; its receiver acknowledges at once): the max_ack_delay transport parameter both ends advertise, which the sender adds to its probe timeout; whole milliseconds below 16384 ms; none = quiche's 25 ms.", "\"5ms\"")),
    quic_only(positive(key("flow.keep_alive", Duration, Unset, "Send a PING after this long without sending (quinn's keep-alive), so a quiet connection is not closed by the 30 s idle timeout (e.g. across a long blackout); none = no keep-alive, quinn's default.", "\"5s\""))),
    quic_only(one_of(key("flow.crypto", Enum, Value("tls"), "Packet protection: `tls` = the negotiated TLS 1.3 suite (AES-128-GCM, preferred as by browsers); `none` = a null AEAD keeping the 16-byte tag (a checksum) and packet sizes, for large sweeps: the same results at less CPU, but pcaps cannot be decrypted.", "\"none\""), names_of::<QuicCrypto>())),
    with_context(quic_all(key("flow.zero_rtt", Bool, Value("false"), "Use 0-RTT on the second and later connections of a download (`connections = 2` or more).", "true")), &["flow.app=\"download\"", "flow.connections=2"]),
    quic_shared(key("flow.address_token", Bool, Value("true"), "Address-validation tokens (RFC 9000 §8.1.3): the server sends NEW_TOKEN frames and the client presents one in its next connection's Initial, lifting the server's anti-amplification limit (3× the bytes received) before the handshake completes; matters for 0-RTT. On by default as quinn (default features) and Chrome's QUIC stack (google/quiche issues and presents address tokens); false: no token is sent or accepted.", "false")),
    // The research model's own knobs (`QuicModelKnobs`); its defaults are quinn's behaviour.
    model_only(within(key("flow.receiver_ack_ratio", Int, Value("2"), "The receiver's own ACK ratio 1:n: ACK at once after this many ack-eliciting packets (RFC 9000 §13.2.2 and quinn: 2; INET's `numReceivedAckElicitingsBeforeAck`), unless the sender requested another with `ack_ratio`.", "1"), 1, u32::MAX as u64)),
    model_only(duration_within(key("flow.ack_delay", Duration, Value("25ms"), "The receiver's ACK timer: an ack-eliciting packet is acknowledged at most this late (RFC 9000's default max_ack_delay, quinn: 25 ms); above 0 and below 16384 ms.", "\"5ms\""), Duration::from_nanos(1), MAX_MODEL_ACK_DELAY)),
    model_only(key("flow.ack_on_reorder", Bool, Value("true"), "ACK at once when a packet arrives out of order or fills a gap (RFC 9000 §13.2.1).", "false")),
    model_only(key("flow.bundle_acks", Bool, Value("false"), "Also acknowledge non-ack-eliciting packets when an ACK goes out anyway (INET's `bundleAckForNonAckElicitingPackets`); they never trigger an ACK on their own.", "true")),
    model_only(key("flow.ibit", Bool, Value("false"), "The I-bit: the sender marks the last packet it can send before it becomes congestion- or flow-control-blocked, and the receiver acknowledges a marked packet at once.", "true")),
    model_only(one_of(key("flow.fc_update", Enum, Value("threshold"), "When the receiver grants flow-control credit: `threshold` = MAX_DATA / MAX_STREAM_DATA once `fc_threshold` of the window has been consumed since the last update (quinn, INET); `every-ack` = fresh credit with every ACK (ModQUIC).", "\"every-ack\""), names_of::<FcUpdate>())),
    model_only(fraction(key("flow.fc_threshold", Float, Value("0.125"), "threshold: fraction of the window the application must consume before an update, in (0, 1] (quinn 0.125, INET 0.5).", "0.5"), false, true)),
    model_only(key("flow.send_one_on_loss", Bool, Value("false"), "On entering a recovery period, send one packet at once whatever the congestion window (RFC 9002 Appendix B.6's MaybeSendOnePacket, INET's NewReno); false: as quinn, wait until the bytes in flight fall below the reduced window.", "true")),
    model_only(key("flow.fc_immediate", Bool, Value("true"), "threshold: send the update in a packet of its own at once (quinn); false: piggy-back it on the next packet that goes out anyway (INET).", "false")),
    model_only(key("flow.window_autotuning", Bool, Value("false"), "Receive-window auto-tuning: double a window (up to 16× its initial value) when it is consumed in less than two RTTs.", "true")),
    model_only(one_of(key("flow.scheduler", Enum, Value("round-robin"), "The sender's stream scheduler: `round-robin` = one packet's worth per stream in turn (quinn, INET); `fifo` = the lowest open stream until it has nothing left.", "\"fifo\""), names_of::<StreamScheduler>())),
    model_only(within(key("flow.send_queue_limit", Size, Unset, "Send-queue limit: the application stops writing when this much data is written but not yet acknowledged (INET's `sendQueueLimit`); none = only `send_window` limits.", "\"64KB\""), 1, MAX_BUFFER)),
    model_only(fraction(key("flow.send_queue_low_water", Float, Value("0.4"), "The application resumes writing when acknowledgements drain the send queue below this fraction of `send_queue_limit`, in [0, 1) (INET's `sendQueueLowWaterRatio`: 0.4).", "0.1"), true, false)),
    model_only(key("flow.pacing", Bool, Value("true"), "Pace sending at 1.25·cwnd/sRTT with a burst of 10 packets (quinn); false: send whenever the window allows (INET).", "false")),
    // Knob defaults are the `Default`s of the transports' knob types; a test holds these texts to them.
    tcp_only(one_of(key("flow.tls", Enum, Value("1.3"), "TLS over TCP: `1.3` (one round trip of handshake), `1.2` (two), `none` (the request follows the three-way handshake).", "\"1.2\""), names_of::<TlsMode>())),
    tcp_only(key("flow.sack", Bool, Value("true"), "SACK with RFC 6675 recovery; false: NewReno-style recovery (RFC 6582).", "false")),
    tcp_only(key("flow.timestamps", Bool, Value("true"), "Timestamps option: 12 bytes per segment, an RTT sample from every ACK.", "false")),
    tcp_only(key("flow.delayed_ack", Bool, Value("true"), "Delayed ACKs (every second full segment or after `delayed_ack_timeout`); false: ACK every segment.", "false")),
    tcp_only(positive(key("flow.delayed_ack_timeout", Duration, Value("40ms"), "Delayed-ACK timer (Linux: TCP_DELACK_MIN = 40 ms; the receiver starts in quick-ACK mode, ACKing the first 16 segments at once, and re-enters it after a gap longer than an RTO).", "\"200ms\""))),
    tcp_only(within(key("flow.receive_window_max", Size, Value("3MiB"), "Largest receive window autotuning may reach (at most 1GiB, the window-scale limit). Linux 6.1 (Debian 12): tcp_rmem[2] = 6 MiB of buffer, half of it window (tcp_adv_win_scale = 1).", "\"256KiB\""), 1, MAX_WINDOW)),
    tcp_only(within(key("flow.initial_receive_window", Size, Value("65535B"), "Receive window advertised at connection start (at most `receive_window_max`). Linux: tcp_rmem[1] = 128 KiB of buffer, half of it window, 65535 B in the unscaled SYN.", "\"16KiB\""), 1, MAX_WINDOW)),
    tcp_only(within(key("flow.send_buffer", Size, Value("4MiB"), "Send buffer: unacknowledged plus unsent bytes the sender holds. Linux 6.1: tcp_wmem[2] = 4 MiB (autotuned up to it).", "\"256KiB\""), 1, MAX_BUFFER)),
    tcp_only(positive(key("flow.min_rto", Duration, Value("200ms"), "Lower bound of the retransmission timeout (Linux: TCP_RTO_MIN = 200 ms; also the tail loss probe's allowance for a delayed ACK).", "\"1s\""))),
    tcp_only(one_of(key("flow.recovery", Enum, Value("prr"), "Window reduction in fast recovery: `prr` = Proportional Rate Reduction (RFC 6937) as Linux's tcp_cwnd_reduction; `rfc6675` = the window drops to ssthresh at once.", "\"rfc6675\""), names_of::<LossRecovery>())),
    tcp_only(key("flow.rack", Bool, Value("true"), "RACK-TLP loss detection (RFC 8985) with Linux's defaults (reordering window min_rtt/4, tail loss probe after 2·SRTT); false: RFC 6675's three-SACK rule, no probe.", "false")),
    tcp_only(positive(key("flow.initial_rto", Duration, Value("1s"), "Retransmission timeout before the first RTT sample (RFC 6298; Linux: TCP_TIMEOUT_INIT = 1 s).", "\"3s\""))),
    tcp_only(one_of(key("flow.http", Enum, Value("http2"), "download over TCP: `http2` multiplexes the requests (`streams`) over one connection; `http1.1` spreads them over `http1_connections` parallel keep-alive connections, one request at a time each.", "\"http1.1\""), names_of::<HttpVersion>())),
    with_context(tcp_only(within(key("flow.http1_connections", Int, Value("6"), "HTTP/1.1: parallel keep-alive connections per page (browsers open 6 per host).", "2"), 1, 1000)), &[TCP_FLOW, HTTP1]),
    tcp_only(one_of(key("flow.pep", Enum, Value("none"), "Split-connection TCP proxy (like PEPsal) on this flow's path: `client-side` sits between the client's access link and the bottleneck (a satellite terminal), `server-side` between the bottleneck and the server's access link (a gateway). TLS stays end to end.", "\"server-side\""), names_of::<PepSite>())),
    with_context(tcp_only(within(key("flow.pep_buffer", Size, Value("4MiB"), "Bytes the PEP holds per direction before it stops reading (TCP flow control then backs up).", "\"256KiB\""), 1, MAX_BUFFER)), &[TCP_FLOW, PEP_ON]),
    with_context(tcp_only(one_of(key("flow.pep_cc", Enum, Value("cubic"), "Congestion control of the PEP's own connections (default knobs).", "\"newreno\""), names_of::<OurCc>())), &[TCP_FLOW, PEP_ON]),
    with_context(tcp_only(key("flow.pep_initial_window", Packets, Value("10pkt"), "Initial congestion window of the PEP's connections (satellite PEPs often start much larger).", "\"100pkt\"")), &[TCP_FLOW, PEP_ON]),
    with_context(tcp_only(within(key("flow.pep_receive_window_max", Size, Value("16MiB"), "Receive-window cap of the PEP's connections (satellite PEPs use large windows).", "\"4MiB\""), 1, MAX_WINDOW)), &[TCP_FLOW, PEP_ON]),
    with_context(tcp_only(within(key("flow.pep_send_buffer", Size, Value("16MiB"), "Send buffer of the PEP's connections.", "\"4MiB\""), 1, MAX_BUFFER)), &[TCP_FLOW, PEP_ON]),
    key("flow.client_access.rate", Rate, Value("unlimited"), "Rate of the client's access link (both directions).", "\"100Mbit\""),
    key("flow.client_access.delay", Duration, Value("0ms"), "One-way delay of the client's access link.", "\"5ms\""),
    key("flow.client_access.queue", Queue, Value("unlimited"), "Queue of the client's access link.", "\"10pkt\""),
    key("flow.client_access.loss", Probability, Value("0%"), "Bernoulli loss on the client's access link.", "\"1%\""),
    key("flow.server_access.rate", Rate, Value("unlimited"), "Rate of the server's access link (both directions).", "\"100Mbit\""),
    key("flow.server_access.delay", Duration, Value("0ms"), "One-way delay of the server's access link.", "\"5ms\""),
    key("flow.server_access.queue", Queue, Value("unlimited"), "Queue of the server's access link.", "\"10pkt\""),
    key("flow.server_access.loss", Probability, Value("0%"), "Bernoulli loss on the server's access link.", "\"1%\""),
    // --- cross traffic ---
    key("cross.name", Str, Context("`cross{i}`"), "Name of the source in results.", "\"udp\""),
    one_of(key("cross.direction", Enum, Value("down"), "Direction it crosses the bottleneck (`up` = client → server side).", "\"up\""), names_of::<Direction>()),
    with_context(one_of(key("cross.pattern", Enum, Required, "`cbr` (constant rate), `uniform` (random size and gap) or `onoff` (cbr in bursts).", "\"onoff\""), names_of::<CrossPattern>()), &["cross.on=\"1s\"", "cross.off=\"1s\""]),
    key("cross.rate", Rate, Required, "cbr, onoff: rate at the IP layer.", "\"2Mbit\""),
    key("cross.size", Size, Value("1200B"), "cbr, onoff: UDP payload per datagram.", "\"500B\""),
    with_context(key("cross.size_min", Size, Required, "uniform: smallest UDP payload.", "\"200B\""), &["cross.pattern=\"uniform\"", "cross.size_max=\"1000B\"", "cross.gap_min=\"25ms\"", "cross.gap_max=\"100ms\""]),
    with_context(key("cross.size_max", Size, Required, "uniform: largest UDP payload.", "\"900B\""), &["cross.pattern=\"uniform\"", "cross.size_min=\"100B\"", "cross.gap_min=\"25ms\"", "cross.gap_max=\"100ms\""]),
    with_context(key("cross.gap_min", Duration, Required, "uniform: shortest gap between datagrams.", "\"30ms\""), &["cross.pattern=\"uniform\"", "cross.size_min=\"100B\"", "cross.size_max=\"1000B\"", "cross.gap_max=\"100ms\""]),
    with_context(key("cross.gap_max", Duration, Required, "uniform: longest gap between datagrams.", "\"90ms\""), &["cross.pattern=\"uniform\"", "cross.size_min=\"100B\"", "cross.size_max=\"1000B\"", "cross.gap_min=\"25ms\""]),
    with_context(key("cross.on", Duration, Required, "onoff: length of a burst.", "\"2s\""), &["cross.pattern=\"onoff\"", "cross.off=\"1s\""]),
    with_context(key("cross.off", Duration, Required, "onoff: silence between bursts.", "\"2s\""), &["cross.pattern=\"onoff\"", "cross.on=\"1s\""]),
    key("cross.start", Duration, Value("0s"), "When the source starts.", "\"1s\""),
    key("cross.stop", Duration, Unset, "When it stops; none = end of the run.", "\"5s\""),
    // --- latency probes ---
    key("probe.name", Str, Context("`probe{i}`"), "Name of the probe in results.", "\"ping\""),
    with_context(key("probe.flow", Str, Context("the first flow"), "Name of the flow whose client sends the requests and whose server echoes them: they cross that flow's access links and the bottleneck, with their own UDP port (a flow of their own for FQ-CoDel).", "\"bulk.1\""), &["flow.count=2", "flow.name=\"bulk\""]),
    key("probe.interval", Duration, Value("200ms"), "Time between two requests (flent's RRUL ping interval); at least 1 ms.", "\"100ms\""),
    key("probe.size", Size, Value("64B"), "UDP payload of a request and of its echo; 28 B to 1472 B.", "\"200B\""),
    key("probe.start", Duration, Value("0s"), "When the first request leaves.", "\"1s\""),
    key("probe.stop", Duration, Unset, "No request from this time on; none = until the end of the run.", "\"5s\""),
    // --- declared figures ---
    key("figure[].name", Str, Context("`figure{i}`"), "File stem of the figure (a plain name, unique in the scenario).", "\"goodput-vs-loss\""),
    one_of(key("figure[].kind", Enum, Value("line"), "`line`: the metric's mean and 95% interval against the sweep axis `x`; `cdf`: its distribution over each point's repetitions; `series`: time series of each point's representative run (median completion or goodput), one panel per column of `y`.", "\"series\""), names_of::<crate::figure::FigureKind>()),
    key("figure[].y", StrList, Required, "line, cdf: the metric paths or `*` patterns of the runs' results (as `plot --metric`), or a ratio `A / B` of two paths per run; series: the time-series columns, one panel each (`cwnd_bytes`, `srtt_ms`, `in_flight_bytes`, `goodput_bps`, `queue_down_packets`, …).", "[\"cwnd_bytes\", \"srtt_ms\"]"),
    key("figure[].x", Str, Unset, "line (required): the sweep axis on x, as results name it (`link.down.loss`, `variant`).", "\"flow.size\""),
    key("figure[].series", StrList, Context("every other axis that varies"), "The axes whose values make the lines (in order; the legend names their values).", "\"variant\""),
    key("figure[].where", Table, Unset, "Only the points whose axis takes this value or one of these: `{ \"flow.size\" = \"10MB\", variant = [\"tcp\", \"quic\"] }`; none = every point. An axis not swept here (the `variant` axis a study adds, when the file runs alone) is left out with a warning, as in `series`.", "{ \"variant\" = \"tcp\" }"),
    one_of(key("figure[].x_scale", Enum, Value("auto"), "line: the x axis's scale; `auto` is logarithmic when the values are positive and spread over two decades.", "\"log\""), names_of::<crate::figure::AxisScale>()),
    one_of(key("figure[].y_scale", Enum, Value("linear"), "line: the y axis's scale (`log` needs every value drawn to be positive).", "\"log\""), names_of::<crate::figure::AxisScale>()),
    key("figure[].title", Str, Context("made from what is drawn"), "Title in the report and on screen-size figures (print sizes leave titles to the paper's caption).", "\"Goodput against loss\""),
    key("figure[].flow", Str, Context("the first flow"), "series: the flow whose rows are drawn.", "\"bulk.1\""),
    key("figure[].until", Duration, Unset, "series: the time axis ends here; none = the end of the run.", "\"5s\""),
    // --- protocol variants ---
    key("variant[].name", Str, Required, "The variant's name: its value of the `variant` axis in results, tables and figures (unique, not empty, at most 100 characters).", "\"tcp-tls1.3\""),
    key("variant[].set", Table, Unset, "Overrides with the keys of `--set`: `{ \"flow.stack\" = \"tcp\", \"flow.1.tls\" = \"1.2\" }` or nested tables (`{ flow = { stack = \"tcp\" } }`); a table-valued key (`link.loss`, `link.up`) is set whole. Left out: the scenario as written.", "{ \"flow.stack\" = \"tcp\" }"),
];

static SECTIONS: &[SectionDoc] = &[
    SectionDoc { prefix: "run", title: "[run]", doc: "How long to run, how often to repeat, what to measure." },
    SectionDoc {
        prefix: "link",
        title: "[link]",
        doc: "The bottleneck. Keys in `[link]` apply to both directions; `[link.up]` (client → server) \
              and `[link.down]` (server → client) override them per direction. Of `rate`, \
              `rate_schedule`, `rate_trace` and `mahimahi_trace` at most one may be set per \
              table, and a direction table that sets one of them replaces the rate of `[link]` \
              as a whole.",
    },
    SectionDoc {
        prefix: "link.loss",
        title: "link.loss (table form)",
        doc: "`loss = \"2%\"` is Bernoulli loss. The table form names a `model`. Gilbert-Elliott takes \
              either `p`, `r`, `k`, `h` or `gamma`, `beta`, `h`, `target` (then p = 1 − gamma, \
              r = 1 − beta, and k is solved so that the mean loss equals `target`).",
    },
    SectionDoc {
        prefix: "link.qdisc",
        title: "link.qdisc (table form)",
        doc: "`qdisc = \"codel\"` runs a discipline with Linux's defaults; the table form names a \
              `model` and sets its parameters: `qdisc = { model = \"codel\", target = \"5ms\", \
              interval = \"100ms\", ecn = true }`. Per direction as `[link.up]` / `[link.down]` \
              (the table is taken whole). `droptail` (the default) is today's FIFO limited by \
              `link.queue`. Every other discipline's hard limit is `limit`, else `link.queue` \
              when that is set explicitly (converted to the discipline's unit), else Linux's \
              own. A key of another discipline is an error naming the disciplines it belongs \
              to. Packets are offered with their flow (a hash of the 5-tuple, for fq_codel) and \
              ECN codepoint; a mark reaches the receiver as CE. AQM drops and CE marks are \
              counted apart from tail drops in the results (`aqm_dropped_*`, `ce_marked_*`).",
    },
    SectionDoc { prefix: "link.rate_schedule[]", title: "link.rate_schedule items", doc: "One step of a piecewise-constant rate." },
    SectionDoc { prefix: "link.blackout[]", title: "link.blackout items", doc: "One (possibly repeating) outage." },
    SectionDoc {
        prefix: "flow",
        title: "[[flow]]",
        doc: "Transport flows between a client left of the bottleneck and a server right of it. \
              Without any `[[flow]]`, one flow with every default runs (named `flow0`). A key \
              marked with stacks (*quic only*, *quic and quic-model*, *quic-model only*, *tcp \
              only*, or lists naming *quiche*) and quinn's `cc` values are errors on a flow of another `stack`: that model \
              has no such knob, and ignoring it would mislead. A key of both QUIC stacks means \
              the same in each, so quinn and the research model can be configured alike. \
              Likewise a key set where it cannot affect the flow — `size`, `streams` or \
              `connections` on a bulk flow, `zero_rtt` on a flow of one connection, `hystart` \
              or `cubic_profile` without `cc = \"cubic\"`, `reno_profile` without \
              `cc = \"newreno\"`, `initial_window`, `min_window` or `loss_reduction` with \
              quinn's controllers or `none`, `http1_connections` without \
              `http = \"http1.1\"`, the `pep_*` keys without a `pep` — is an error naming the \
              fix; where a sweep or variant makes it matter at other points, a warning (once). \
              A key at its default asks for nothing and is never reported (except `size`).",
    },
    SectionDoc { prefix: "flow.client_access", title: "flow.client_access", doc: "Link between this flow's client and the bottleneck (same in both directions)." },
    SectionDoc { prefix: "flow.server_access", title: "flow.server_access", doc: "Link between the bottleneck and this flow's server (same in both directions)." },
    SectionDoc { prefix: "cross", title: "[[cross]]", doc: "UDP cross traffic injected at the bottleneck." },
    SectionDoc {
        prefix: "probe",
        title: "[[probe]]",
        doc: "Latency under load, as flent's RRUL test pings: small timestamped UDP requests at a fixed \
              interval from a flow's client, echoed by its server, reported per run as round-trip \
              and one-way delay distributions (`probes.N.rtt.p99_s`, `.up`, `.down`).",
    },
    SectionDoc {
        prefix: "figure[]",
        title: "[[figure]]",
        doc: "Figures the scenario asks for. `quiclab plot`, `report` and `reproduce` draw them \
              first, beside their default figures, at the size and in the formats asked for. The \
              axes a figure names (`x`, `series`, the keys of `where`) must be axes of the sweep \
              (`variant` with `[[variant]]` tables); its metrics are checked when it is drawn, \
              against what the runs measured (an unknown one is an error listing them).",
    },
    SectionDoc {
        prefix: "variant[]",
        title: "[[variant]]",
        doc: "Named protocol variants; they form the sweep axis `variant` (see Variants above). \
              `--variant NAME,…` runs only the named ones.",
    },
];

/// Every scenario key.
pub fn keys() -> &'static [KeyDoc] {
    KEYS
}

/// The documentation sections, in rendering order.
pub fn sections() -> &'static [SectionDoc] {
    SECTIONS
}

/// The key with exactly this registry path.
pub fn find(path: &str) -> Option<&'static KeyDoc> {
    KEYS.iter().find(|k| k.path == path)
}

/// The names allowed directly inside `prefix` (`""` = the top level), in registry order.
pub fn children(prefix: &str) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for k in KEYS {
        let rest = if prefix.is_empty() {
            Some(k.path)
        } else {
            k.path
                .strip_prefix(prefix)
                .and_then(|r| r.strip_prefix('.'))
        };
        let Some(rest) = rest else { continue };
        let first = rest.split('.').next().unwrap_or(rest);
        let first = first.strip_suffix("[]").unwrap_or(first);
        if !out.contains(&first) {
            out.push(first);
        }
    }
    if prefix.is_empty() {
        out.push("sweep");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_unique_and_documented() {
        for (i, k) in KEYS.iter().enumerate() {
            assert!(!k.doc.is_empty(), "{} has no doc", k.path);
            assert!(
                KEYS[..i].iter().all(|o| o.path != k.path),
                "{} twice",
                k.path
            );
            assert_eq!(
                matches!(k.kind, Kind::Enum | Kind::Qdisc),
                !k.allowed.is_empty(),
                "{}: allowed values iff enum (or a discipline's name)",
                k.path
            );
            assert!(
                SECTIONS
                    .iter()
                    .any(|s| k.path.rsplit_once('.').map(|p| p.0) == Some(s.prefix)),
                "{} has no section",
                k.path
            );
        }
    }

    #[test]
    fn stack_tags() {
        // The keys a flow of `stack` may set beyond the shared ones (`mtu`, `ecn` and the PEP's
        // aside).
        let keys = |stack| -> Vec<String> {
            let mut k: Vec<String> = KEYS
                .iter()
                .filter(|k| !k.stacks.is_empty() && k.applies_to(stack))
                .map(|k| k.path.trim_start_matches("flow.").to_string())
                .filter(|k| !k.starts_with("pep"))
                .collect();
            k.sort();
            k
        };
        // Every knob field but the shared `mtu` and `ecn` is a key of its stack, and every key tagged
        // with a stack is a field of that stack's knobs: a new field without its registry
        // entry (or a key on the wrong stack) fails here.
        let fields = |v: Result<serde_json::Value, serde_json::Error>| -> Vec<String> {
            let Ok(serde_json::Value::Object(m)) = v else {
                panic!("knobs serialize as a table")
            };
            let shared = ["mtu", "ecn"];
            let mut f: Vec<String> = m
                .keys()
                .filter(|k| !shared.contains(&k.as_str()))
                .cloned()
                .collect();
            f.sort();
            f
        };
        use crate::model::{QuicCommonKnobs, QuicKnobs, QuicModelKnobs, QuicheKnobs, TcpKnobs};
        assert_eq!(
            keys(Stack::Quic),
            fields(serde_json::to_value(QuicKnobs::default()))
        );
        assert_eq!(
            keys(Stack::QuicModel),
            fields(serde_json::to_value(QuicModelKnobs::default()))
        );
        assert_eq!(
            keys(Stack::Tcp),
            fields(serde_json::to_value(TcpKnobs::default()))
        );
        assert_eq!(
            keys(Stack::Quiche),
            fields(serde_json::to_value(QuicheKnobs::default()))
        );
        // Keys of both QUIC stacks are exactly the fields of the knobs they share, and the
        // fields both knob types have are exactly those (flattened into each, never repeated).
        let common = fields(serde_json::to_value(QuicCommonKnobs::default()));
        let quinn = fields(serde_json::to_value(QuicKnobs::default()));
        let shared: Vec<String> = fields(serde_json::to_value(QuicModelKnobs::default()))
            .into_iter()
            .filter(|f| quinn.contains(f))
            .collect();
        assert_eq!(shared, common);
        let mut both: Vec<String> = KEYS
            .iter()
            .filter(|k| k.applies_to(Stack::Quic) && k.applies_to(Stack::QuicModel))
            .filter(|k| !k.stacks.is_empty())
            .map(|k| k.path.trim_start_matches("flow.").to_string())
            .collect();
        both.sort();
        assert_eq!(both, common);
        assert_eq!(
            KEYS.iter()
                .filter(|k| k.stacks == TCP && k.path.starts_with("flow.pep"))
                .count(),
            6,
            "the PEP keys"
        );
        assert!(KEYS
            .iter()
            .filter(|k| !k.stacks.is_empty())
            .all(|k| k.path.starts_with("flow.")));
        // The registry test can only see a key change something on a flow of its stack.
        assert!(KEYS
            .iter()
            .filter(|k| k.stacks == TCP)
            .all(|k| k.context == [TCP_FLOW]
                || k.context == [TCP_FLOW, PEP_ON]
                || k.context == [TCP_FLOW, HTTP1]));
        assert!(KEYS
            .iter()
            .filter(|k| k.stacks == MODEL)
            .all(|k| k.context == [MODEL_FLOW]));
        let ours_then_quinn: Vec<&str> = [
            OurCc::NAMES,
            transport::cc_adapter::QuinnCc::NAMES,
            transport::cc_adapter::QuicheCc::NAMES,
        ]
        .concat();
        assert_eq!(CC_NAMES, &ours_then_quinn[..]);
        assert_eq!(find("flow.cc").map(|k| k.allowed), Some(CC_NAMES));
        assert_eq!(
            find("flow.stack").map(|k| k.allowed),
            Some(&["quic", "tcp", "quic-model", "quiche"][..])
        );
    }

    #[test]
    fn children_of_sections() {
        assert_eq!(
            children(""),
            ["run", "link", "flow", "cross", "probe", "figure", "variant", "sweep"]
        );
        assert!(children("link").starts_with(&["rate", "rate_schedule", "rate_trace"]));
        assert_eq!(children("link.blackout[]"), ["start", "duration", "period"]);
        assert_eq!(
            children("flow.client_access"),
            ["rate", "delay", "queue", "loss"]
        );
    }
}
