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
    /// Repetitions per point with `--full`.
    pub full_reps: u32,
    /// The experiments, in table order.
    pub experiments: &'static [Experiment],
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
        }
    };
}

/// Seed 002's variants. TCP gets the tuned buffers the slides mention ("flow control disabled
/// (QUIC) or tuned parameters (TCP)"): 16 MiB cover the 50 Mbit/s × 600 ms BDP. The PEP sits at
/// the gateway (between the satellite hop and the server) and sends over the satellite with a
/// 100-packet initial window, standing in for the satellite-tuned TCP a real PEP runs there.
const SATELLITE: &[Variant] = &[
    single!("quic", &[]),
    single!("quic-no-hystart", &["flow.hystart=false"]),
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

/// An experiment of seed 002 from its file under `scenarios/studies/seed002/`.
macro_rules! seed002 {
    ($name:literal, $file:literal) => {
        Experiment {
            name: $name,
            file: concat!("scenarios/studies/seed002/", $file),
            text: include_str!(concat!("../../../../scenarios/studies/seed002/", $file)),
            variants: SATELLITE,
        }
    };
}

/// Every study, in the order `quiclab reproduce` without arguments runs them.
pub const STUDIES: &[Study] = &[Study {
    name: "seed003",
    title: "Khalifeh et al., QUIC test-bed: 8.9 MB download time, QUIC vs TCP (controlled grid)",
    seed: 3,
    // "the experiments are repeated more than 20 times" (§5.2.1).
    full_reps: 25,
    experiments: &[
        seed003!("bernoulli", "bernoulli.toml", SINGLE),
        seed003!("gilbert-elliott", "gilbert-elliott.toml", SINGLE),
        seed003!("bit-errors", "bit-errors.toml", SINGLE),
        seed003!("bandwidth", "bandwidth.toml", SINGLE),
        seed003!("background", "background.toml", SINGLE),
        seed003!("shared", "shared.toml", SHARED),
    ],
}, Study {
    name: "seed002",
    title: "Indra / Aberdeen, QUIC over GEO satellite: download time, QUIC vs TCP vs TCP through a PEP",
    seed: 2,
    full_reps: 20,
    experiments: &[
        seed002!("fixed", "fixed.toml"),
        seed002!("bod", "bod.toml"),
        seed002!("50M/10M", "asym-50-10.toml"),
    ],
}];

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
                for v in e.variants {
                    let o: Vec<String> = v.overrides.iter().map(|s| s.to_string()).collect();
                    let loaded =
                        scenario::parse_str(e.text, e.file, std::path::Path::new("."), &o, &[]);
                    let loaded =
                        loaded.unwrap_or_else(|err| panic!("{} {}: {err}", e.name, v.label));
                    // The table's x value is the single sweep axis of the file.
                    assert!(
                        loaded.points.iter().all(|p| p.axes.len() == 1),
                        "{} must sweep exactly one key",
                        e.name
                    );
                    for r in v.readings {
                        assert!(r.flow < loaded.points[0].scenario.flows.len());
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
