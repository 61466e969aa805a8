/// The walk behind "`quiclab emu` accepts every scenario `sim` runs": every file under
/// `scenarios/` and every study variant of `quiclab reproduce`, resolved point by point and
/// passed through the emulator's mapping check (no real-time run). What is still refused or only
/// approximated is listed, with the emulator's own reason, in `docs/emulator.md`; the test checks
/// that page against the walk (`UPDATE_DOCS=1` rewrites the generated part).
#[cfg(test)]
mod walk {
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};

    use studies::reproduce::registry as studies;

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
            } else if scenario::is_scenario_file(&p) {
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
