//! The layout of a results directory: every file a sweep, `merge`, `figures` or `report` puts
//! there, by name, with what it holds.
//!
//! This is the one place those names are spelled. Writers and readers (the sweep runner, the
//! distributed executor, `merge`, the figures and the Python package, which reads
//! [`ENTRIES`] through the native module) take the names from here, and `docs/results.md`
//! is generated from [`markdown_table`] and checked against it by a test.

use std::path::{Path, PathBuf};

/// One JSON object per run per line (see [`crate::store`]): the results themselves.
pub const RESULTS_FILE: &str = "results.jsonl";
/// The sweep's resolved scenario, points and runs: what `--resume` and `merge` check against.
pub const MANIFEST_FILE: &str = "sweep.json";
/// Which shard of a distributed sweep the directory holds (absent in a whole sweep).
pub const SHARD_FILE: &str = "shard.json";
/// The figures the scenario declares (`[[figure]]`) and the points each covers.
pub const DECLARED_FIGURES_FILE: &str = "figures.json";
/// Per point and metric: n, mean, sd and the 95% interval.
pub const SUMMARY_FILE: &str = "summary.csv";
/// Per point, metric and variant: the paired comparison with the baseline variant.
pub const COMPARISONS_FILE: &str = "comparisons.csv";
/// Per group of points (adaptive repetitions): repetitions run and why they stopped.
pub const STOPPING_FILE: &str = "stopping.csv";
/// One row per run and flow, typed columns (the same flattening as the Python DataFrame).
pub const RESULTS_PARQUET: &str = "results.parquet";
/// One row per sample, flow and run of every series CSV.
pub const SERIES_PARQUET: &str = "series.parquet";
/// One row per connection, flow and run.
pub const CONNECTIONS_PARQUET: &str = "connections.parquet";
/// Directory of per-run time series, one `<run id>.csv` each.
pub const SERIES_DIR: &str = "series";
/// Directory of the figures `quiclab figures` draws (SVG and PNG).
pub const FIGURES_DIR: &str = "figures";
/// The self-contained page `quiclab report` writes.
pub const REPORT_FILE: &str = "report.html";
/// Holds an exclusive lock while a sweep writes the directory.
pub const LOCK_FILE: &str = ".lock";

/// Whether an entry is a file or a directory of files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory of regular files.
    Dir,
}

/// One name in a results directory, documented.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// File or directory name inside the results directory.
    pub name: &'static str,
    /// File or directory.
    pub kind: Kind,
    /// Which command writes it.
    pub written_by: &'static str,
    /// What it holds.
    pub doc: &'static str,
}

/// Every entry of a results directory, in the order a sweep writes them.
pub const ENTRIES: &[Entry] = &[
    Entry {
        name: LOCK_FILE,
        kind: Kind::File,
        written_by: "`sim`, `emu`",
        doc: "Exclusive lock held while a sweep writes the directory; a second sweep on the same directory stops with the holder's pid.",
    },
    Entry {
        name: MANIFEST_FILE,
        kind: Kind::File,
        written_by: "`sim`, `emu`, `merge`",
        doc: "What the results were computed from (scenario name, base seed, resolved sweep points); resuming and merging compare it byte for byte.",
    },
    Entry {
        name: DECLARED_FIGURES_FILE,
        kind: Kind::File,
        written_by: "`sim`, `emu`, `merge`, when the scenario declares figures",
        doc: "`{\"figures\": [spec, …], \"points\": [[k, …], …]}`: the `[[figure]]` specs and, per sweep point, the indices of those declared with it; rewritten by every run of the sweep, and not part of what resuming compares (a figure changes no result).",
    },
    Entry {
        name: SHARD_FILE,
        kind: Kind::File,
        written_by: "`sim`, `emu` with `--shard i/n`",
        doc: "Only in one shard's directory: `{\"shard\": i, \"shards\": n, \"reps\": R, \"runs\": N}`.",
    },
    Entry {
        name: RESULTS_FILE,
        kind: Kind::File,
        written_by: "`sim`, `emu`, `merge`",
        doc: "One JSON object per run (`results::Run`), in run order once the sweep is finished; the reference, byte-identical for any executor (threads, Dask, shards + merge). Runs the engine crashed on have an error record (`id`, `point`, `rep`, `seed`, `error`).",
    },
    Entry {
        name: SERIES_DIR,
        kind: Kind::Dir,
        written_by: "`sim`, `emu`, `merge`",
        doc: "`<id>.csv` per run: its time series, one row per flow per sample bin.",
    },
    Entry {
        name: SUMMARY_FILE,
        kind: Kind::File,
        written_by: "`sim`, `emu`, `merge`",
        doc: "Mean, sd and 95 % CI of every numeric metric per sweep point, over the runs that measured it. A single run has no sd and no interval (empty fields); a metric never negative has its lower end clipped at 0 (docs/statistics.md).",
    },
    Entry {
        name: COMPARISONS_FILE,
        kind: Kind::File,
        written_by: "`sim`, `emu`, `merge`, when the scenario has variants",
        doc: "Every variant against the first (the baseline) per sweep point and numeric metric, repetitions paired by index: `n_pairs`, mean difference and its t interval (`diff`, `diff_low`, `diff_high`), ratio of means and its bootstrap interval, paired t and Wilcoxon p-values, both Holm-adjusted across the file, Cohen's d_z (docs/statistics.md).",
    },
    Entry {
        name: STOPPING_FILE,
        kind: Kind::File,
        written_by: "`sim`, `emu`, `reproduce` with `--until-ci` or `--until-resolved`",
        doc: "Per group of points (the points that differ only in their variant): the axes, the points, the repetitions each ran, why they stopped (`target reached` or `max reps`) and, per judged metric, the worst criterion when they stopped: the relative 95% half-width, or with `--until-resolved` that of the least resolved paired difference (0: every difference excludes zero or is below the stated effect) (docs/statistics.md).",
    },
    Entry {
        name: RESULTS_PARQUET,
        kind: Kind::File,
        written_by: "`sim`, `emu`, `merge`",
        doc: "The same results as a typed table: one row per run × flow (below).",
    },
    Entry {
        name: CONNECTIONS_PARQUET,
        kind: Kind::File,
        written_by: "`sim`, `emu`, `merge`",
        doc: "One row per run × flow × connection (below): handshake, first byte, completion, bytes and 0-RTT of each connection. Written when a run has connections.",
    },
    Entry {
        name: SERIES_PARQUET,
        kind: Kind::File,
        written_by: "`sim`, `emu`, `merge`",
        doc: "Every run's series as one table: one row per run × sample (below). Written when the sweep recorded series.",
    },
    Entry {
        name: FIGURES_DIR,
        kind: Kind::Dir,
        written_by: "`plot`",
        doc: "Figures of the directory (SVG, PDF and PNG), the default output of `quiclab plot`.",
    },
    Entry {
        name: REPORT_FILE,
        kind: Kind::File,
        written_by: "`report`",
        doc: "One self-contained page: tables with n/N, warnings and figures.",
    },
];

/// A results directory: the paths of its entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultsLayout {
    root: PathBuf,
}

impl ResultsLayout {
    /// The results directory at `root` (nothing is created or checked).
    pub fn new(root: impl Into<PathBuf>) -> ResultsLayout {
        ResultsLayout { root: root.into() }
    }

    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `results.jsonl`.
    pub fn results(&self) -> PathBuf {
        self.root.join(RESULTS_FILE)
    }

    /// `sweep.json`.
    pub fn manifest(&self) -> PathBuf {
        self.root.join(MANIFEST_FILE)
    }

    /// `shard.json`.
    pub fn shard(&self) -> PathBuf {
        self.root.join(SHARD_FILE)
    }

    /// `summary.csv`.
    pub fn summary(&self) -> PathBuf {
        self.root.join(SUMMARY_FILE)
    }

    /// `comparisons.csv`.
    pub fn comparisons(&self) -> PathBuf {
        self.root.join(COMPARISONS_FILE)
    }

    /// `stopping.csv`.
    pub fn stopping(&self) -> PathBuf {
        self.root.join(STOPPING_FILE)
    }

    /// `results.parquet`.
    pub fn results_parquet(&self) -> PathBuf {
        self.root.join(RESULTS_PARQUET)
    }

    /// `connections.parquet`.
    pub fn connections_parquet(&self) -> PathBuf {
        self.root.join(CONNECTIONS_PARQUET)
    }

    /// `series.parquet`.
    pub fn series_parquet(&self) -> PathBuf {
        self.root.join(SERIES_PARQUET)
    }

    /// The `series/` directory.
    pub fn series_dir(&self) -> PathBuf {
        self.root.join(SERIES_DIR)
    }

    /// The series CSV of run `id`.
    pub fn series(&self, id: &str) -> PathBuf {
        self.series_dir().join(series_file_name(id))
    }

    /// The `figures/` directory.
    pub fn figures_dir(&self) -> PathBuf {
        self.root.join(FIGURES_DIR)
    }

    /// `report.html`.
    pub fn report(&self) -> PathBuf {
        self.root.join(REPORT_FILE)
    }

    /// `.lock`.
    pub fn lock(&self) -> PathBuf {
        self.root.join(LOCK_FILE)
    }
}

/// File name of run `id`'s series inside [`SERIES_DIR`].
pub fn series_file_name(id: &str) -> String {
    format!("{id}.csv")
}

/// The Markdown table of [`ENTRIES`], as `docs/results.md` holds it.
pub fn markdown_table() -> String {
    let mut out = String::from("| Name | Kind | Written by | Holds |\n|---|---|---|---|\n");
    for e in ENTRIES {
        let (name, kind) = match e.kind {
            Kind::File => (format!("`{}`", e.name), "file"),
            Kind::Dir => (format!("`{}/`", e.name), "directory"),
        };
        out.push_str(&format!(
            "| {name} | {kind} | {} | {} |\n",
            e.written_by, e.doc
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_listed_once_and_is_a_plain_name() {
        let mut names: Vec<&str> = ENTRIES.iter().map(|e| e.name).collect();
        for n in &names {
            assert!(!n.is_empty() && !n.contains('/'), "{n}");
        }
        names.sort_unstable();
        let len = names.len();
        names.dedup();
        assert_eq!(names.len(), len, "a name is listed twice");
        for constant in [
            RESULTS_FILE,
            MANIFEST_FILE,
            SHARD_FILE,
            SUMMARY_FILE,
            COMPARISONS_FILE,
            STOPPING_FILE,
            RESULTS_PARQUET,
            SERIES_PARQUET,
            CONNECTIONS_PARQUET,
            SERIES_DIR,
            FIGURES_DIR,
            REPORT_FILE,
            LOCK_FILE,
        ] {
            assert!(names.contains(&constant), "{constant} is not documented");
        }
    }

    #[test]
    fn paths_join_the_names() {
        let d = ResultsLayout::new("/r");
        assert_eq!(d.results(), Path::new("/r/results.jsonl"));
        assert_eq!(d.series("p0-r1"), Path::new("/r/series/p0-r1.csv"));
        assert_eq!(d.report(), Path::new("/r/report.html"));
        assert!(markdown_table().contains("| `series/` | directory |"));
    }

    /// Fails when the table in docs/results.md is stale; `UPDATE_DOCS=1` rewrites it instead.
    #[test]
    fn docs_list_the_layout() {
        const BEGIN: &str =
            "<!-- BEGIN GENERATED: results::layout (UPDATE_DOCS=1 cargo test -p results layout) -->";
        const END: &str = "<!-- END GENERATED -->";
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/results.md");
        let page = std::fs::read_to_string(path).expect("read docs/results.md");
        let (Some(b), Some(e)) = (page.find(BEGIN), page.find(END)) else {
            panic!("docs/results.md lacks the generated-table markers");
        };
        let want = format!("{}{BEGIN}\n{}{}", &page[..b], markdown_table(), &page[e..]);
        if std::env::var_os("UPDATE_DOCS").is_some() {
            std::fs::write(path, &want).expect("write docs/results.md");
            return;
        }
        assert!(
            page == want,
            "docs/results.md is out of date: run `UPDATE_DOCS=1 cargo test -p results layout`"
        );
    }
}
