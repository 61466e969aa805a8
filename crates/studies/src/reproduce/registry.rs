//! The registry of studies `quiclab reproduce` knows: which scenario files make up a study,
//! which protocol variants run on each, and where in a run's result each variant is read.
//!
//! Adding a study (e.g. seed 002) is one more entry in [`STUDIES`]. The scenario files are
//! compiled into the binary so `reproduce` works from any directory; the same files stay under
//! `scenarios/studies/` for `quiclab sim`.

/// A published study reproduced by a fixed set of scenario files.
#[derive(Debug)]
pub struct Study {
    /// Name on the command line and of the results directory, e.g. `seed003`.
    pub name: &'static str,
    /// One line for the Markdown heading.
    pub title: &'static str,
    /// Base seed of the combined sweep (every run's seed derives from it).
    pub seed: u64,
    /// Repetitions per point with `--full` (with [`Study::until`]: the first batch, and the size
    /// of each batch added).
    pub full_reps: u32,
    /// With `--full`, repetitions are added until this rule is met instead of stopping at
    /// `full_reps` for every point.
    pub until: Option<Until>,
    /// The experiments, in table order.
    pub experiments: &'static [Experiment],
    /// Validation cases (`quiclab validate --case …`) run with the study and printed before its
    /// tables: the paper's validation figures (seed 001's Fig. 3–6); quick grid by default, the
    /// full grid with `--full`.
    pub validation: &'static [&'static str],
    /// Pantheon's throughput-against-delay figure of each experiment, if the study asks for it.
    pub tradeoff: Option<Tradeoff>,
    /// The paper's numbers (`scenarios/studies/<name>/paper.toml`, see [`super::paper`]),
    /// compared first in the study's table and report.
    pub paper: Option<&'static str>,
    /// The sections of the study's doc that explain its results, carried into its report.
    pub explanation: Option<super::explain::Explanation>,
}

/// A study's throughput-against-delay figure (`figures::tradeoff`).
#[derive(Debug)]
pub struct Tradeoff {
    /// Run-level delay metric, seconds.
    pub delay: &'static str,
    /// What the delay is, for the figure.
    pub delay_label: &'static str,
    /// The flow (with its copies) whose window goodput is the throughput.
    pub flow: &'static str,
}

impl Tradeoff {
    /// The figure specification.
    pub fn spec(&self) -> figures::tradeoff::TradeoffSpec {
        figures::tradeoff::TradeoffSpec {
            delay: self.delay.into(),
            delay_label: self.delay_label.into(),
            flow: self.flow.into(),
        }
    }
}

/// Repetitions until the answer is clear (`experiment::adaptive`) for a study's `--full` run.
#[derive(Debug)]
pub struct Until {
    /// What "clear" means.
    pub target: experiment::adaptive::Target,
    /// The metric judged (a dotted path of every run's result).
    pub metric: &'static str,
    /// Most repetitions a point gets.
    pub max_reps: u32,
}

/// One experiment: a scenario file whose single sweep axis is the table's x value.
#[derive(Debug)]
pub struct Experiment {
    /// Short name used in tables and by `--only`.
    pub name: &'static str,
    /// Path shown in errors (relative to the repository root).
    pub file: &'static str,
    /// The file's text.
    pub text: &'static str,
    /// The protocol variants run on this experiment's path.
    pub variants: &'static [Variant],
    /// The figures tabulated per row; empty: the download-time table of seeds 002 and 003.
    pub columns: &'static [Column],
    /// Comparisons between the variants' rows printed after the experiment's table.
    pub comparisons: &'static [Comparison],
    /// Overrides (`key=value`) applied to the file before the variants' own: one file serves
    /// several experiments that differ in a setting other than the swept one.
    pub set: &'static [&'static str],
}

/// One figure of a metrics table, read from each run's result.
#[derive(Debug)]
pub struct Column {
    /// Header, with the unit.
    pub header: &'static str,
    /// The metric under `flows.<i>.` in the result (e.g. `window_goodput_bps`), or a figure of
    /// the whole run when it starts with `links.`, `probes.` or `fairness.` (see
    /// [`Column::path`]).
    pub metric: &'static str,
    /// If set, the cell is mean(metric) / mean(per) (a ratio of totals, e.g. ACK frames per
    /// data packet), without a confidence interval.
    pub per: Option<&'static str>,
    /// Factor from the metric's unit to the header's.
    pub scale: f64,
    /// Decimal places shown.
    pub decimals: usize,
}

impl Column {
    /// The dotted path of this column's metric in a run's result, for the reading of `flow`.
    pub fn path(&self, flow: usize) -> String {
        let whole_run = ["links.", "probes.", "fairness."];
        if whole_run.iter().any(|p| self.metric.starts_with(p)) {
            self.metric.to_string()
        } else {
            format!("flows.{flow}.{}", self.metric)
        }
    }
}

/// A comparison of two variants' rows of an experiment, over its x values.
#[derive(Debug)]
pub enum Comparison {
    /// Relative difference of `variant`'s mean from `baseline`'s in the first column, per x
    /// value and averaged over them (seed 001's "relative difference").
    Relative {
        /// Protocol label of the reference rows.
        baseline: &'static str,
        /// Protocol label compared with it.
        variant: &'static str,
    },
    /// R² of the least-squares line through the points (a's mean, b's mean) over the x values,
    /// per column (seed 000's Table 7: "linear regression model, R²").
    R2 {
        /// Protocol label on the x axis of the fit.
        a: &'static str,
        /// Protocol label on the y axis.
        b: &'static str,
    },
    /// An analytic model's prediction of the first column at each x, beside every protocol's
    /// measured mean and their difference (the bbr-coexistence study against Ware et al.).
    Model {
        /// The model, as the table names it.
        name: &'static str,
        /// The prediction for an x value (`None`: the model says nothing there).
        predict: fn(&str) -> Option<f64>,
    },
}

/// One way of running an experiment: overrides applied to the file, and the rows it yields.
#[derive(Debug)]
pub struct Variant {
    /// Label of the variant in the sweep axes (and results.jsonl).
    pub label: &'static str,
    /// `--set`-style overrides turning the file's flows into this variant.
    pub overrides: &'static [&'static str],
    /// The table rows this variant produces (several when flows share the bottleneck).
    pub readings: &'static [Reading],
}

/// Where one protocol's download time is read in a run's result.
#[derive(Debug)]
pub struct Reading {
    /// Protocol label of the table row.
    pub protocol: &'static str,
    /// Index into the result's `flows`.
    pub flow: usize,
    /// Index into that flow's `connections`: 1 for the resumed 0-RTT connection.
    pub connection: usize,
}

/// QUIC with a full (1-RTT) handshake: the files' own flow.
/// Reads the download of the only flow's first connection as `protocol`.
macro_rules! single {
    ($label:literal, $overrides:expr) => {
        Variant {
            label: $label,
            overrides: $overrides,
            readings: &[Reading {
                protocol: $label,
                flow: 0,
                connection: 0,
            }],
        }
    };
}

const QUIC_1RTT: Variant = single!("quic-1rtt", &[]);

/// The 0-RTT download is the second, resumed connection.
const QUIC_0RTT: Variant = Variant {
    label: "quic-0rtt",
    overrides: &["flow.connections=2", "flow.zero_rtt=true"],
    readings: &[Reading {
        protocol: "quic-0rtt",
        flow: 0,
        connection: 1,
    }],
};

const TCP_TLS13: Variant = single!("tcp-tls1.3", &["flow.stack=tcp", "flow.tls=1.3"]);

const TCP_TLS12: Variant = single!("tcp-tls1.2", &["flow.stack=tcp", "flow.tls=1.2"]);

const SINGLE: &[Variant] = &[QUIC_1RTT, QUIC_0RTT, TCP_TLS13, TCP_TLS12];

/// Shared medium: the file's QUIC flow (0) and TCP flow (1) at once, with either TLS version.
const SHARED: &[Variant] = &[
    Variant {
        label: "quic+tcp-tls1.3",
        overrides: &["flow.1.tls=1.3"],
        readings: &[
            Reading {
                protocol: "quic-1rtt (with tcp-tls1.3)",
                flow: 0,
                connection: 0,
            },
            Reading {
                protocol: "tcp-tls1.3 (with quic-1rtt)",
                flow: 1,
                connection: 0,
            },
        ],
    },
    Variant {
        label: "quic+tcp-tls1.2",
        overrides: &["flow.1.tls=1.2"],
        readings: &[
            Reading {
                protocol: "quic-1rtt (with tcp-tls1.2)",
                flow: 0,
                connection: 0,
            },
            Reading {
                protocol: "tcp-tls1.2 (with quic-1rtt)",
                flow: 1,
                connection: 0,
            },
        ],
    },
];

/// An experiment of seed 003 from its file under `scenarios/studies/seed003/`.
macro_rules! seed003 {
    ($name:literal, $file:literal, $variants:expr) => {
        Experiment {
            name: $name,
            file: concat!("scenarios/studies/seed003/", $file),
            text: include_str!(concat!("../../../../scenarios/studies/seed003/", $file)),
            variants: $variants,
            columns: &[],
            comparisons: &[],
            set: &[],
        }
    };
}

/// Seed 002's variants. TCP gets the tuned buffers the slides mention ("flow control disabled
/// (QUIC) or tuned parameters (TCP)"): 16 MiB cover the 50 Mbit/s × 600 ms BDP. The PEP sits at
/// the gateway (between the satellite hop and the server) and sends over the satellite with a
/// 100-packet initial window, standing in for the satellite-tuned TCP a real PEP runs there.
/// QUIC on the satellite paths, with its HyStart++ and without.
const SATELLITE_QUIC: Variant = single!("quic", &[]);
/// See [`SATELLITE_QUIC`].
const SATELLITE_QUIC_NO_HYSTART: Variant = single!("quic-no-hystart", &["flow.hystart=false"]);

/// The QUIC variants alone, for a sweep of a QUIC-only key (the flow-control window).
const SATELLITE_QUIC_ONLY: &[Variant] = &[SATELLITE_QUIC, SATELLITE_QUIC_NO_HYSTART];

const SATELLITE: &[Variant] = &[
    SATELLITE_QUIC,
    SATELLITE_QUIC_NO_HYSTART,
    single!(
        "tcp-tls1.3",
        &[
            "flow.stack=tcp",
            "flow.tls=1.3",
            "flow.receive_window_max=16MiB",
            "flow.send_buffer=16MiB"
        ]
    ),
    single!(
        "tcp-tls1.3-no-hystart",
        &[
            "flow.stack=tcp",
            "flow.tls=1.3",
            "flow.receive_window_max=16MiB",
            "flow.send_buffer=16MiB",
            "flow.hystart=false"
        ]
    ),
    single!(
        "tcp-tls1.3+pep",
        &[
            "flow.stack=tcp",
            "flow.tls=1.3",
            "flow.receive_window_max=16MiB",
            "flow.send_buffer=16MiB",
            "flow.pep=server-side",
            "flow.pep_initial_window=100pkt",
        ]
    ),
];

/// The PEP variant as its file configures it (the initial window is the swept key).
const PEP_AS_FILE: &[Variant] = &[single!("tcp-tls1.3+pep", &[])];

/// An experiment of seed 002 from its file under `scenarios/studies/seed002/`.
macro_rules! seed002 {
    ($name:literal, $file:literal) => {
        seed002!($name, $file, SATELLITE, &[])
    };
    ($name:literal, $file:literal, $variants:expr, $set:expr) => {
        Experiment {
            name: $name,
            file: concat!("scenarios/studies/seed002/", $file),
            text: include_str!(concat!("../../../../scenarios/studies/seed002/", $file)),
            variants: $variants,
            columns: &[],
            comparisons: &[],
            set: $set,
        }
    };
}

/// Result fields of the QUIC research model (`results::Flow`), read by the tables.
/// The model's per-packet one-way delay, mean, s.
const ONE_WAY_DELAY_MEAN: &str = "one_way_delay.mean_s";
/// Packets the data sender sent with the I-bit set, count.
const IBIT_PACKETS: &str = "model.ibit_packets_sent";

/// UDP payload throughput at the receiver in the measurement window ("bytes received by QUIC").
const THROUGHPUT: Column = Column {
    header: "throughput (Mbit/s)",
    metric: "window_payload_throughput_bps",
    per: None,
    scale: 1e-6,
    decimals: 3,
};

/// ACK frames the data receiver sent, per run.
const ACK_FRAMES: Column = Column {
    header: "ACK frames sent",
    metric: "ack_frames_sent",
    per: None,
    scale: 1.0,
    decimals: 0,
};

/// I-bit packets the data sender sent, per run (model only).
const IBIT: Column = Column {
    header: "I-bit packets",
    metric: IBIT_PACKETS,
    per: None,
    scale: 1.0,
    decimals: 0,
};

/// A variant of the research model in INET's configuration (seed 001 §III: no pacing, credit at
/// half the window piggy-backed on the next packet) with the receiver's ACK ratio 1:`$n`.
macro_rules! inet {
    ($label:literal, $n:literal $(, $extra:literal)*) => {
        single!(
            $label,
            &[
                "flow.stack=quic-model",
                "flow.pacing=false",
                "flow.fc_threshold=0.5",
                "flow.fc_immediate=false",
                concat!("flow.receiver_ack_ratio=", $n),
                $($extra),*
            ]
        )
    };
}

/// Fig. 7's variants: the model as INET with ACK ratio 1:1, 1:2, 1:10, with and without the
/// I-bit; quinn asked for the same ratios by the ACK-frequency extension (its only way).
const ACK_RATIO: &[Variant] = &[
    inet!("model 1:1", "1"),
    inet!("model 1:2", "2"),
    inet!("model 1:10", "10"),
    inet!("model 1:2 + I-bit", "2", "flow.ibit=true"),
    inet!("model 1:10 + I-bit", "10", "flow.ibit=true"),
    single!("quinn 1:1", &["flow.ack_ratio=1"]),
    single!("quinn 1:2", &["flow.ack_ratio=2"]),
    single!("quinn 1:10", &["flow.ack_ratio=10"]),
];

/// The lower loss rates: the paper's relative differences are INET's, without the I-bit.
const ACK_RATIO_MODEL: &[Variant] = &[
    inet!("model 1:1", "1"),
    inet!("model 1:2", "2"),
    inet!("model 1:10", "10"),
];

/// Relative differences against ACK ratio 1:1, per stack.
const VS_ACK_EVERY_PACKET: &[Comparison] = &[
    Comparison::Relative {
        baseline: "model 1:1",
        variant: "model 1:2",
    },
    Comparison::Relative {
        baseline: "model 1:1",
        variant: "model 1:10",
    },
    Comparison::Relative {
        baseline: "model 1:1",
        variant: "model 1:2 + I-bit",
    },
    Comparison::Relative {
        baseline: "model 1:1",
        variant: "model 1:10 + I-bit",
    },
    Comparison::Relative {
        baseline: "quinn 1:1",
        variant: "quinn 1:2",
    },
    Comparison::Relative {
        baseline: "quinn 1:1",
        variant: "quinn 1:10",
    },
];

/// See [`VS_ACK_EVERY_PACKET`]; the model only.
const VS_ACK_EVERY_PACKET_MODEL: &[Comparison] = &[
    Comparison::Relative {
        baseline: "model 1:1",
        variant: "model 1:2",
    },
    Comparison::Relative {
        baseline: "model 1:1",
        variant: "model 1:10",
    },
];

/// An experiment of seed 001 from its file under `scenarios/studies/seed001/`.
macro_rules! seed001 {
    ($name:literal, $file:literal, $variants:expr, $columns:expr, $comparisons:expr) => {
        Experiment {
            name: $name,
            file: concat!("scenarios/studies/seed001/", $file),
            text: include_str!(concat!("../../../../scenarios/studies/seed001/", $file)),
            variants: $variants,
            columns: $columns,
            comparisons: $comparisons,
            set: &[],
        }
    };
}

/// Seed 001: QUIC in INET. Fig. 3–6 are the model's validation cases; Fig. 7 and the relative
/// differences at lower loss are sweeps.
const SEED001: Study = Study {
    name: "seed001",
    title: "Völker et al., QUIC in INET: validation (Fig. 3–6) and throughput against the ACK ratio with and without the I-bit (Fig. 7)",
    seed: 1,
    // "we repeated the simulation 100 times" (§V.A).
    full_reps: 100,
    until: None,
    experiments: &[
        seed001!(
            "fig7",
            "fig7-ack-ratio.toml",
            ACK_RATIO,
            &[THROUGHPUT, ACK_FRAMES, IBIT],
            VS_ACK_EVERY_PACKET
        ),
        seed001!(
            "p0.02",
            "fig7-p0.02.toml",
            ACK_RATIO_MODEL,
            &[THROUGHPUT, ACK_FRAMES],
            VS_ACK_EVERY_PACKET_MODEL
        ),
        seed001!(
            "p0.005",
            "fig7-p0.005.toml",
            ACK_RATIO_MODEL,
            &[THROUGHPUT, ACK_FRAMES],
            VS_ACK_EVERY_PACKET_MODEL
        ),
    ],
    validation: &[
        "model-link-bandwidth",
        "model-mathis",
        "model-flow-control",
        "model-fair-share",
    ],
    tradeoff: None,
    paper: Some(include_str!("../../../../scenarios/studies/seed001/paper.toml")),
    explanation: Some(super::explain::Explanation {
        doc: "docs/studies/seed001.md",
        text: include_str!("../../../../docs/studies/seed001.md"),
        sections: &[
            "Fig. 3–6: the validation cases",
            "Fig. 7: ACK ratio, with and without the I-bit, model and quinn",
        ],
    }),
};

/// Application goodput in the measurement window (seed 000's "average data rate").
const DATA_RATE: Column = Column {
    header: "data rate (Mbit/s)",
    metric: "window_goodput_bps",
    per: None,
    scale: 1e-6,
    decimals: 3,
};

/// ACK frames (QUIC) or pure ACK segments (TCP) per data packet sent, in percent (seed 000's
/// Table 4, "ACKs generated (%)").
const ACKS_PER_PACKET: Column = Column {
    header: "ACKs per data packet (%)",
    metric: "ack_frames_sent",
    per: Some("packets_sent"),
    scale: 100.0,
    decimals: 1,
};

/// Download goodput, first packet → last byte (seed 000's Table 2 "throughput").
const DOWNLOAD_THROUGHPUT: Column = Column {
    header: "throughput (Mbit/s)",
    metric: "goodput_bps",
    per: None,
    scale: 1e-6,
    decimals: 3,
};

/// Mean one-way packet delay (seed 000's Table 3), model only.
const DELAY: Column = Column {
    header: "one-way delay (ms)",
    metric: ONE_WAY_DELAY_MEAN,
    per: None,
    scale: 1e3,
    decimals: 2,
};

/// The model as ModQUIC: fresh credit with every ACK, 32 KB credit (see rate-2mbit.toml), no
/// auto-tuning.
const MODQUIC: Variant = single!(
    "modquic",
    &[
        "flow.stack=quic-model",
        "flow.fc_update=every-ack",
        "flow.stream_window=32KB",
        "flow.conn_window=32KB",
        "flow.window_autotuning=false"
    ]
);

/// The model as 2017 gQUIC: credit once half the window is consumed, sent at once.
const GQUIC: Variant = single!(
    "quic",
    &[
        "flow.stack=quic-model",
        "flow.fc_update=threshold",
        "flow.fc_threshold=0.5",
        "flow.fc_immediate=true",
        "flow.stream_window=32KB",
        "flow.conn_window=32KB",
        "flow.window_autotuning=false"
    ]
);

/// TCP CUBIC with Linux's defaults (the paper's unmodified TCP server).
const TCP_CUBIC: Variant = single!("tcp", &["flow.stack=tcp"]);

/// ModQUIC, QUIC and TCP.
const MODQUIC_QUIC_TCP: &[Variant] = &[MODQUIC, GQUIC, TCP_CUBIC];

/// ModQUIC's update policy alone: the file sets the credit.
const EVERY_ACK_POLICY: Variant = single!("modquic", &["flow.fc_update=every-ack"]);

/// gQUIC's update policy alone: the file sets the credit.
const THRESHOLD_POLICY: Variant = single!(
    "quic",
    &[
        "flow.fc_update=threshold",
        "flow.fc_threshold=0.5",
        "flow.fc_immediate=true"
    ]
);

/// The window sweep: the file sets the window, the variants only the policy.
const POLICIES: &[Variant] = &[EVERY_ACK_POLICY, THRESHOLD_POLICY];

/// The sensitivity sweep: each update policy with CUBIC and without congestion control; the
/// file and the experiment set the credit.
const POLICIES_BY_CONTROLLER: &[Variant] = &[
    EVERY_ACK_POLICY,
    THRESHOLD_POLICY,
    single!(
        "modquic-no-cc",
        &["flow.fc_update=every-ack", "flow.cc=none"]
    ),
    single!(
        "quic-no-cc",
        &[
            "flow.fc_update=threshold",
            "flow.fc_threshold=0.5",
            "flow.fc_immediate=true",
            "flow.cc=none"
        ]
    ),
];

/// ModQUIC against QUIC, with CUBIC and without congestion control.
const MODQUIC_VS_QUIC_BY_CONTROLLER: &[Comparison] = &[
    Comparison::Relative {
        baseline: "quic",
        variant: "modquic",
    },
    Comparison::Relative {
        baseline: "quic-no-cc",
        variant: "modquic-no-cc",
    },
];

/// Table 7's fits: ModQUIC against QUIC and against TCP.
const R2_MODQUIC: &[Comparison] = &[
    Comparison::R2 {
        a: "modquic",
        b: "quic",
    },
    Comparison::R2 {
        a: "modquic",
        b: "tcp",
    },
];

/// An experiment of seed 000 from its file under `scenarios/studies/seed000/`.
macro_rules! seed000 {
    ($name:literal, $file:literal, $variants:expr, $columns:expr, $comparisons:expr) => {
        seed000!($name, $file, $variants, $columns, $comparisons, &[])
    };
    ($name:literal, $file:literal, $variants:expr, $columns:expr, $comparisons:expr, $set:expr) => {
        Experiment {
            name: $name,
            file: concat!("scenarios/studies/seed000/", $file),
            text: include_str!(concat!("../../../../scenarios/studies/seed000/", $file)),
            variants: $variants,
            columns: $columns,
            comparisons: $comparisons,
            set: $set,
        }
    };
}

/// Seed 000: ModQUIC (credit with every ACK) vs QUIC (threshold) vs TCP CUBIC.
const SEED000: Study = Study {
    name: "seed000",
    title: "Kharat & Kulkarni, ModQUIC: data rate, delay, ACKs and throughput, ModQUIC vs QUIC vs TCP CUBIC",
    seed: 0,
    // The paper does not say how often it repeated ("carried out multiple times"); 20 gives
    // confidence intervals a few percent wide under random loss.
    full_reps: 20,
    until: None,
    experiments: &[
        seed000!(
            "2mbit",
            "rate-2mbit.toml",
            MODQUIC_QUIC_TCP,
            &[DATA_RATE, ACKS_PER_PACKET],
            R2_MODQUIC
        ),
        seed000!(
            "10mbit",
            "rate-10mbit.toml",
            MODQUIC_QUIC_TCP,
            &[DATA_RATE, ACKS_PER_PACKET],
            R2_MODQUIC
        ),
        seed000!(
            "size",
            "size.toml",
            MODQUIC_QUIC_TCP,
            &[DOWNLOAD_THROUGHPUT, DELAY],
            R2_MODQUIC
        ),
        seed000!(
            "window",
            "window.toml",
            POLICIES,
            &[DATA_RATE, DELAY],
            &[Comparison::Relative {
                baseline: "quic",
                variant: "modquic",
            }]
        ),
        seed000!(
            "sensitivity-16KB",
            "sensitivity.toml",
            POLICIES_BY_CONTROLLER,
            &[DATA_RATE],
            MODQUIC_VS_QUIC_BY_CONTROLLER
        ),
        seed000!(
            "sensitivity-32KB",
            "sensitivity.toml",
            POLICIES_BY_CONTROLLER,
            &[DATA_RATE],
            MODQUIC_VS_QUIC_BY_CONTROLLER,
            &["flow.stream_window=32KB", "flow.conn_window=32KB"]
        ),
        seed000!(
            "sensitivity-64KB",
            "sensitivity.toml",
            POLICIES_BY_CONTROLLER,
            &[DATA_RATE],
            MODQUIC_VS_QUIC_BY_CONTROLLER,
            &["flow.stream_window=64KB", "flow.conn_window=64KB"]
        ),
        seed000!(
            "sensitivity-1MB",
            "sensitivity.toml",
            POLICIES_BY_CONTROLLER,
            &[DATA_RATE],
            MODQUIC_VS_QUIC_BY_CONTROLLER,
            &["flow.stream_window=1MB", "flow.conn_window=1MB"]
        ),
    ],
    validation: &[],
    tradeoff: None,
    paper: Some(include_str!("../../../../scenarios/studies/seed000/paper.toml")),
    explanation: Some(super::explain::Explanation {
        doc: "docs/studies/seed000.md",
        text: include_str!("../../../../docs/studies/seed000.md"),
        sections: &["Where they agree, where not, and why"],
    }),
};

/// Latency under load: the figures of the RRUL-like load on each buffer or discipline.
const LATENCY_COLUMNS: &[Column] = &[
    Column {
        header: "down utilisation (%)",
        metric: "links.bottleneck_down.utilisation",
        per: None,
        scale: 100.0,
        decimals: 1,
    },
    Column {
        header: "ping RTT p50 (ms)",
        metric: "probes.0.rtt.p50_s",
        per: None,
        scale: 1e3,
        decimals: 1,
    },
    Column {
        header: "ping RTT p99 (ms)",
        metric: "probes.0.rtt.p99_s",
        per: None,
        scale: 1e3,
        decimals: 1,
    },
    Column {
        header: "down queue p99 (ms)",
        metric: "links.bottleneck_down.queue_delay_p99_s",
        per: None,
        scale: 1e3,
        decimals: 1,
    },
    Column {
        header: "down AQM drops",
        metric: "links.bottleneck_down.aqm_dropped_packets",
        per: None,
        scale: 1.0,
        decimals: 0,
    },
    Column {
        header: "down CE marks",
        metric: "links.bottleneck_down.ce_marked_packets",
        per: None,
        scale: 1.0,
        decimals: 0,
    },
    Column {
        header: "Jain (8 flows)",
        metric: "fairness.jain",
        per: None,
        scale: 1.0,
        decimals: 3,
    },
];

/// Every flow of the files on quinn (the files' own stack), on the TCP model with Linux's
/// CUBIC, or on the TCP model with TCP Prague (the L4S sender: ECT(1), scalable response).
const LATENCY_STACKS: &[Variant] = &[
    single!("quic", &[]),
    single!("tcp", &["flow.stack=tcp"]),
    single!("tcp-prague", &["flow.stack=tcp", "flow.cc=prague"]),
];

/// An experiment of the latency-under-load study from its file.
macro_rules! latency {
    ($name:literal, $file:literal) => {
        Experiment {
            name: $name,
            file: concat!("scenarios/studies/latency-under-load/", $file),
            text: include_str!(concat!(
                "../../../../scenarios/studies/latency-under-load/",
                $file
            )),
            variants: LATENCY_STACKS,
            columns: LATENCY_COLUMNS,
            comparisons: &[],
            set: &[],
        }
    };
}

/// Bufferbloat and its cures under an RRUL-like load (flent's realtime response under load).
const LATENCY_UNDER_LOAD: Study = Study {
    name: "latency-under-load",
    title: "Latency under load: drop-tail buffers against RED, CoDel, FQ-CoDel, PIE and DualPI2, with and without ECN; QUIC, TCP and TCP Prague",
    seed: 5000,
    full_reps: 10,
    until: None,
    experiments: &[
        latency!("buffers", "buffers.toml"),
        latency!("aqm", "aqm.toml"),
        latency!("ecn", "ecn.toml"),
    ],
    validation: &["fq-codel-sparse"],
    tradeoff: Some(Tradeoff {
        delay: "probes.0.rtt.p95_s",
        delay_label: "ping RTT p95",
        flow: "down",
    }),
    paper: Some(include_str!("../../../../scenarios/studies/latency-under-load/paper.toml")),
    explanation: Some(super::explain::Explanation {
        doc: "docs/studies/latency-under-load.md",
        text: include_str!("../../../../docs/studies/latency-under-load.md"),
        sections: &["What the numbers say, and why"],
    }),
};

/// BBR against CUBIC: BBR's share, the CUBIC flows' and the queue it leaves.
const COEXISTENCE_COLUMNS: &[Column] = &[
    Column {
        header: "BBR share (%)",
        metric: "share",
        per: None,
        scale: 100.0,
        decimals: 1,
    },
    Column {
        header: "BBR goodput (Mbit/s)",
        metric: "window_goodput_bps",
        per: None,
        scale: 1e-6,
        decimals: 2,
    },
    Column {
        header: "Jain (all flows)",
        metric: "fairness.jain",
        per: None,
        scale: 1.0,
        decimals: 3,
    },
    Column {
        header: "queue p50 (ms)",
        metric: "links.bottleneck_down.queue_delay_p50_s",
        per: None,
        scale: 1e3,
        decimals: 1,
    },
    Column {
        header: "drops",
        metric: "links.bottleneck_down.dropped_queue_packets",
        per: None,
        scale: 1.0,
        decimals: 0,
    },
];

/// The file's TCP model (Linux's BBR against Linux's CUBIC), or quinn's BBR against quiclab's
/// CUBIC on quinn.
const COEXISTENCE_STACKS: &[Variant] = &[
    single!("tcp", &[]),
    single!("tcp-bbr3", &["flow.0.cc=bbr3"]),
    single!(
        "quic",
        &[
            "flow.0.stack=quic",
            "flow.0.cc=quinn-bbr",
            "flow.1.stack=quic",
            "flow.1.cc=cubic"
        ]
    ),
];

/// An experiment of the bbr-coexistence study: the buffer sweep against `$cubic` CUBIC flows.
macro_rules! coexistence {
    ($name:literal, $set:literal) => {
        Experiment {
            name: $name,
            file: "scenarios/studies/bbr-coexistence/buffers.toml",
            text: include_str!("../../../../scenarios/studies/bbr-coexistence/buffers.toml"),
            variants: COEXISTENCE_STACKS,
            columns: COEXISTENCE_COLUMNS,
            comparisons: &[Comparison::Model {
                name: "Ware et al.'s model (IMC 2019)",
                predict: super::ware::study_prediction,
            }],
            set: &[$set],
        }
    };
}

/// One BBR flow against 1–16 CUBIC flows over buffers of 0.5–64 BDP (Ware et al., IMC 2019).
const BBR_COEXISTENCE: Study = Study {
    name: "bbr-coexistence",
    title: "BBR against CUBIC: one BBR flow's share beside 1–16 CUBIC flows, buffers of 0.5–64 BDP, against Ware et al.'s model",
    seed: 6000,
    full_reps: 10,
    until: None,
    experiments: &[
        coexistence!("cubic-1", "flow.1.count=1"),
        coexistence!("cubic-2", "flow.1.count=2"),
        coexistence!("cubic-4", "flow.1.count=4"),
        coexistence!("cubic-8", "flow.1.count=8"),
        coexistence!("cubic-16", "flow.1.count=16"),
    ],
    validation: &[],
    tradeoff: None,
    paper: Some(include_str!("../../../../scenarios/studies/bbr-coexistence/paper.toml")),
    explanation: Some(super::explain::Explanation {
        doc: "docs/studies/bbr-coexistence.md",
        text: include_str!("../../../../docs/studies/bbr-coexistence.md"),
        sections: &["What the numbers say, and why"],
    }),
};

/// Every study, in the order `quiclab reproduce` without arguments runs them.
pub const STUDIES: &[Study] = &[Study {
    name: "seed003",
    title: "Khalifeh et al., QUIC test-bed: 8.9 MB download time, QUIC vs TCP (controlled grid)",
    seed: 3,
    // "the experiments are repeated more than 20 times" (§5.2.1).
    full_reps: 25,
    until: None,
    experiments: &[
        seed003!("bernoulli", "bernoulli.toml", SINGLE),
        seed003!("gilbert-elliott", "gilbert-elliott.toml", SINGLE),
        seed003!("bit-errors", "bit-errors.toml", SINGLE),
        seed003!("bandwidth", "bandwidth.toml", SINGLE),
        seed003!("background", "background.toml", SINGLE),
        seed003!("shared", "shared.toml", SHARED),
        seed003!("wifi", "wifi.toml", SINGLE),
        seed003!("4g", "4g.toml", SINGLE),
    ],
    validation: &[],
    tradeoff: None,
    paper: Some(include_str!("../../../../scenarios/studies/seed003/paper.toml")),
    explanation: Some(super::explain::Explanation {
        doc: "docs/studies/seed003.md",
        text: include_str!("../../../../docs/studies/seed003.md"),
        sections: &[
            "Where simulation and paper agree, and where not",
            "Wi-Fi and 4G (Figs. 12–13): trace-driven links",
        ],
    }),
}, Study {
    name: "seed002",
    title: "Indra / Aberdeen, QUIC over GEO satellite: download time, QUIC vs TCP vs TCP through a PEP",
    seed: 2,
    full_reps: 20,
    // Whether QUIC, TCP or the PEP downloads faster is the study's question: on the variable
    // paths 20 repetitions leave some differences unresolved, so `--full` adds repetitions
    // until each protocol's paired difference from QUIC excludes zero or is within ±1%.
    until: Some(Until {
        target: experiment::adaptive::Target::Resolved(0.01),
        metric: "flows.0.completion_s",
        max_reps: 200,
    }),
    experiments: &[
        seed002!("fixed", "fixed.toml"),
        seed002!("bod", "bod.toml"),
        seed002!("50M/10M", "asym-50-10.toml"),
        seed002!("bod-jitter", "bod-jitter.toml"),
        seed002!("windows-20M", "windows.toml", SATELLITE_QUIC_ONLY, &[]),
        seed002!(
            "windows-50M",
            "windows.toml",
            SATELLITE_QUIC_ONLY,
            &["link.down.rate=50Mbit"]
        ),
        seed002!("pep-iw", "pep-iw.toml", PEP_AS_FILE, &[]),
    ],
    validation: &[],
    tradeoff: None,
    paper: Some(include_str!("../../../../scenarios/studies/seed002/paper.toml")),
    explanation: Some(super::explain::Explanation {
        doc: "docs/studies/seed002.md",
        text: include_str!("../../../../docs/studies/seed002.md"),
        sections: &[
            "HyStart under BoD owes its cost to the delay variation",
            "Flow control at 10 MB: the higher bandwidth needs a window above the BDP",
            "The PEP's gain rests on its initial window",
            "What the slides report, and how the simulation compares",
        ],
    }),
}, SEED001, SEED000, LATENCY_UNDER_LOAD, BBR_COEXISTENCE];

impl Experiment {
    /// Its relative comparisons as (baseline, variant) protocol pairs, in registry order.
    pub fn relative_comparisons(&self) -> Vec<(&'static str, &'static str)> {
        self.comparisons
            .iter()
            .filter_map(|c| match c {
                Comparison::Relative { baseline, variant } => Some((*baseline, *variant)),
                _ => None,
            })
            .collect()
    }

    /// The experiment's protocol variants as scenario variants (`[[variant]]` defined in code).
    pub fn variant_defs(&self) -> Vec<scenario::VariantDef> {
        self.variants
            .iter()
            .map(|v| scenario::VariantDef {
                name: v.label.to_string(),
                set: v.overrides.iter().map(|o| (*o).to_string()).collect(),
            })
            .collect()
    }

    /// The experiment's file with its variants and the user's `--set` overrides (applied after
    /// each variant's own), through the scenario crate's variant mechanism: points variant by
    /// variant, each with the axes `variant` and the file's one swept key. `only` picks
    /// variants by label (empty: all).
    pub fn load(
        &self,
        user: &[String],
        only: &[String],
    ) -> Result<scenario::LoadedScenario, scenario::ScenarioError> {
        let inputs = scenario::Inputs {
            overrides: self
                .set
                .iter()
                .map(|s| s.to_string())
                .chain(user.iter().cloned())
                .collect(),
            axes: Vec::new(),
            variants: only.to_vec(),
            defined_variants: self.variant_defs(),
        };
        scenario::parse_with(self.text, self.file, &self.base_dir(), &inputs)
    }

    /// Where the file's relative paths (a trace) point from: its directory in the checkout the
    /// command runs in, else in the checkout this binary was built from. The file's text is
    /// built in; a trace it names is read from disk.
    fn base_dir(&self) -> std::path::PathBuf {
        let dir = std::path::Path::new(self.file)
            .parent()
            .unwrap_or(std::path::Path::new("."));
        if dir.is_dir() {
            return dir.to_path_buf();
        }
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(dir)
    }

    /// The registered variant labelled `label`.
    pub fn variant(&self, label: &str) -> Option<&'static Variant> {
        self.variants.iter().find(|v| v.label == label)
    }
}

/// The study called `name`.
pub fn find(name: &str) -> Option<&'static Study> {
    STUDIES.iter().find(|s| s.name == name)
}

/// Every study name, for the command line's allowed values.
pub fn names() -> Vec<&'static str> {
    STUDIES.iter().map(|s| s.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_experiment_parses_with_every_variant() {
        for study in STUDIES {
            for e in study.experiments {
                let loaded = e
                    .load(&[], &[])
                    .unwrap_or_else(|err| panic!("{}: {err}", e.name));
                // The axes are the variant and the file's single swept key (the table's x).
                assert!(
                    loaded
                        .points
                        .iter()
                        .all(|p| p.axes.len() == 2 && p.axes[0].0 == scenario::VARIANT_AXIS),
                    "{} must sweep exactly one key",
                    e.name
                );
                for p in &loaded.points {
                    let v = e.variant(&p.axes[0].1).expect("a registered variant");
                    for r in v.readings {
                        assert!(r.flow < p.scenario.flows.len());
                    }
                }
            }
        }
    }

    #[test]
    fn names_are_unique() {
        let mut n = names();
        n.sort_unstable();
        n.dedup();
        assert_eq!(n.len(), STUDIES.len());
    }
}
