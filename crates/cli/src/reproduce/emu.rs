//! `quiclab reproduce --engine emu`: a study's grid in the real-time emulator.
//!
//! The study's points are the simulator's, unchanged. A point the emulator refuses, or whose
//! knob it would not apply at all (`flow.hystart = false` for kernel TCP, whose HyStart is a
//! host-wide module parameter), is left out and named with the reason, instead of producing a
//! row that measures something else under the same label; a point it applies differently (an
//! access link on the far side of the emulated PEP) runs, and the approximation is listed under
//! the table. Runs are sequential (a run needs the whole machine).

use anyhow::Context;

use super::combine::{Combined, VARIANT_AXIS};

/// Which engine `quiclab reproduce` runs the study in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum EngineArg {
    /// The deterministic simulator (all cores).
    #[default]
    Sim,
    /// The real-time emulator (root; one run at a time).
    Emu,
}

/// What [`keep_runnable`] found, one line per (experiment, variant), in study order.
#[derive(Debug, Default)]
pub struct Screened {
    /// Points left out, with the reason.
    pub skipped: Vec<String>,
    /// Points run with an approximation, and which.
    pub approximated: Vec<String>,
}

/// Drops the points the emulator refuses or would not apply a knob of; names them, and the
/// approximations of the points it keeps.
pub fn keep_runnable(combined: &mut Combined) -> Screened {
    let mut out = Screened::default();
    let points = std::mem::take(&mut combined.loaded.points);
    let info = std::mem::take(&mut combined.info);
    for (p, i) in points.into_iter().zip(info) {
        let variant = p
            .axes
            .iter()
            .find(|(k, _)| k == VARIANT_AXIS)
            .map_or("", |(_, v)| v.as_str());
        let (keep, why) = match emu::check_supported(&p.scenario) {
            Ok(w) if w.is_empty() => (true, None),
            Ok(w) => {
                let ignored = w.iter().any(|m| m.contains(emu::NOT_APPLIED));
                (!ignored, Some(w.join("; ")))
            }
            Err(e) => (false, Some(e.to_string())),
        };
        let list = if keep {
            &mut out.approximated
        } else {
            &mut out.skipped
        };
        if let Some(why) = why {
            let line = format!("{} / {variant}: {why}", i.experiment);
            if !list.contains(&line) {
                list.push(line);
            }
        }
        if keep {
            combined.loaded.points.push(p);
            combined.info.push(i);
        }
    }
    out
}

/// The emulator engine for a study (namespaces need root).
pub fn engine() -> anyhow::Result<experiment::EmuEngine> {
    anyhow::ensure!(
        is_root(),
        "--engine emu needs root (network namespaces); the simulator runs without it"
    );
    crate::interrupt::set_first_message(
        "Ctrl-C: stopping the current run and removing its emulated network; finished runs are \
         kept (Ctrl-C again to abort)",
    );
    crate::interrupt::install()?;
    emu::install_term_handler();
    Ok(experiment::EmuEngine {
        quiclab: std::env::current_exe().context("cannot locate the quiclab binary")?,
        pcap: None,
        qlog: None,
        keylog: None,
        stop: Some(stop_requested),
        wait: emu::WaitMode::Sleep,
    })
}

fn stop_requested() -> bool {
    crate::interrupt::requested() || emu::term_requested()
}

/// Whether the process runs as root: the effective uid of `/proc/self/status`.
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().nth(1).map(|e| e == "0"))
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd_reproduce::studies;

    #[test]
    fn seed002_keeps_what_the_emulator_runs_and_names_the_rest() {
        let study = studies::find("seed002").expect("registered");
        let all: Vec<_> = study.experiments.iter().collect();
        let mut c = super::super::combine::combine(study, &all, &[], Some(1)).expect("valid");
        let before = c.loaded.points.len();
        let screened = keep_runnable(&mut c);
        let skipped = screened.skipped;
        assert_eq!(c.loaded.points.len(), c.info.len());
        let variants: std::collections::BTreeSet<&str> = c
            .loaded
            .points
            .iter()
            .filter_map(|p| p.axes.iter().find(|(k, _)| k == VARIANT_AXIS))
            .map(|(_, v)| v.as_str())
            .collect();
        // QUIC (with and without HyStart++: our controller in both engines), kernel TCP and
        // kernel TCP through the emulated PEP run.
        for v in ["quic", "quic-no-hystart", "tcp-tls1.3", "tcp-tls1.3+pep"] {
            assert!(variants.contains(v), "{v} missing: {variants:?}");
        }
        // Kernel CUBIC's HyStart is host-wide: that variant would be mislabelled.
        assert!(!variants.contains("tcp-tls1.3-no-hystart"), "{variants:?}");
        assert!(
            skipped.iter().any(|s| s.starts_with(
                "fixed / tcp-tls1.3-no-hystart: flow download: flow.hystart=false is not applied"
            )),
            "{skipped:?}"
        );
        assert!(c.loaded.points.len() < before);
        // The PEP row runs with its terrestrial access link on the satellite side of the PEP,
        // and says so.
        assert!(
            screened
                .approximated
                .iter()
                .any(|s| s.starts_with("fixed / tcp-tls1.3+pep: flow download: flow.server_access")),
            "{:?}",
            screened.approximated
        );
    }
}

/// The walk behind "`quiclab emu` accepts every scenario `sim` runs": every file under
/// `scenarios/` and every study variant of `quiclab reproduce`, resolved point by point and
/// passed through the emulator's mapping check (no real-time run). What is still refused or only
/// approximated is listed, with the emulator's own reason, in `docs/emulator.md`; the test checks
/// that page against the walk (`UPDATE_DOCS=1` rewrites the generated part).
#[cfg(test)]
mod walk {
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};

    use crate::cmd_reproduce::studies;

    /// Start and end of the generated part of docs/emulator.md.
    const BEGIN: &str =
        "<!-- BEGIN GENERATED: the walk (UPDATE_DOCS=1 cargo test -p quiclab walk) -->";
    const END: &str = "<!-- END GENERATED -->";

    fn repo() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    fn toml_files(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .expect("scenarios/ is readable")
            .map(|e| e.expect("entry").path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                toml_files(&p, out);
            } else if p.extension().is_some_and(|e| e == "toml") {
                out.push(p);
            }
        }
    }

    /// (kind, what) → where: kind is `refused` or `approximated`, what the emulator's message.
    type Findings = BTreeMap<(&'static str, String), Vec<String>>;

    fn check(loaded: &scenario::LoadedScenario, source: &str, found: &mut Findings) {
        for p in &loaded.points {
            let (kind, messages) = match emu::check_supported(&p.scenario) {
                Ok(w) => ("approximated", w),
                Err(e) => ("refused", vec![e.to_string()]),
            };
            for m in messages {
                // Warnings name their flow ("flow download: …"); the finding is the rest.
                let m = match m.split_once(": ") {
                    Some((head, rest)) if head.starts_with("flow ") => rest.to_string(),
                    _ => m,
                };
                let sources = found.entry((kind, m)).or_default();
                if !sources.iter().any(|s| s == source) {
                    sources.push(source.to_string());
                }
            }
        }
    }

    fn walk() -> (Findings, usize) {
        let root = repo();
        let mut files = Vec::new();
        toml_files(&root.join("scenarios"), &mut files);
        let mut found = Findings::new();
        let mut points = 0;
        for f in &files {
            let rel = f.strip_prefix(&root).unwrap_or(f).display().to_string();
            let loaded = scenario::load(f, &[], &[])
                .unwrap_or_else(|e| panic!("{rel} does not resolve: {e}"));
            points += loaded.points.len();
            check(&loaded, &format!("`{rel}`"), &mut found);
        }
        for study in studies::STUDIES {
            for e in study.experiments {
                for v in e.variants {
                    let loaded = e
                        .load(&[], &[v.label.to_string()])
                        .unwrap_or_else(|err| panic!("{} {}: {err}", e.name, v.label));
                    points += loaded.points.len();
                    let source = format!("`reproduce {}` variant `{}`", study.name, v.label);
                    check(&loaded, &source, &mut found);
                }
            }
        }
        (found, points)
    }

    fn render(found: &Findings, points: usize) -> String {
        let mut s = format!(
            "{BEGIN}\n\nThe walk resolved {points} sweep points. Each finding below is the \
             emulator's own message; the sources are the scenario files and `quiclab reproduce` \
             variants that ask for it.\n\n| status | emulator's message | where |\n|---|---|---|\n"
        );
        for ((kind, message), sources) in found {
            s.push_str(&format!(
                "| {kind} | {} | {} |\n",
                message.replace('|', "\\|"),
                sources.join(", ")
            ));
        }
        if found.is_empty() {
            s.push_str("| – | every point is accepted as specified | – |\n");
        }
        s.push('\n');
        s.push_str(END);
        s
    }

    #[test]
    fn walk_every_scenario_through_the_emulator_mapping() {
        let (found, points) = walk();
        assert!(points > 100, "the walk found only {points} points");
        let generated = render(&found, points);
        let path = repo().join("docs/emulator.md");
        let page = std::fs::read_to_string(&path).expect("docs/emulator.md");
        let (Some(b), Some(e)) = (page.find(BEGIN), page.find(END)) else {
            panic!("docs/emulator.md lacks the generated markers");
        };
        let current = &page[b..e + END.len()];
        if std::env::var_os("UPDATE_DOCS").is_some() {
            let updated = format!("{}{generated}{}", &page[..b], &page[e + END.len()..]);
            std::fs::write(&path, updated).expect("write docs/emulator.md");
            return;
        }
        assert_eq!(
            current, generated,
            "docs/emulator.md's list of refused and approximated keys differs from what the \
             emulator does; regenerate it with UPDATE_DOCS=1 cargo test -p quiclab walk and \
             explain any new entry"
        );
    }
}
