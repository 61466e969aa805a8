//! `docs/limits.md` against the code: every bound of the key registry, and every bound the
//! resolver applies to integer keys, has its row with the same numbers, and the parser accepts
//! the documented extremes and refuses one past them. Changing a bound without its row (or a
//! row without the bound) fails here, so the page cannot drift.

use std::path::Path;

use scenario::registry::{find, keys, Bounds};
use scenario::{parse_str, MAX_POINTS};

fn limits_doc() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/limits.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The table row of the scenario section whose first cell names `key`.
fn row<'a>(doc: &'a str, key: &str) -> &'a str {
    let needle = format!("`{key}`");
    doc.lines()
        .find(|l| {
            l.starts_with('|')
                && l.split('|')
                    .nth(1)
                    .is_some_and(|first| first.contains(&needle))
        })
        .unwrap_or_else(|| panic!("docs/limits.md has no row for {key}"))
}

fn has_number(row: &str, n: u64) -> bool {
    row.contains(&format!("`{n}`"))
}

#[test]
fn every_registry_bound_has_its_row() {
    let doc = limits_doc();
    let mut checked = 0;
    for k in keys() {
        match k.bounds {
            Bounds::Any => {}
            Bounds::Positive => {
                let r = row(&doc, k.path);
                assert!(
                    r.contains("above `0`"),
                    "{}: the row must say `above `0``: {r}",
                    k.path
                );
                checked += 1;
            }
            Bounds::Within(min, max) => {
                let r = row(&doc, k.path);
                assert!(
                    has_number(r, min) && has_number(r, max),
                    "{}: the row must give `{min}` and `{max}`: {r}",
                    k.path
                );
                checked += 1;
            }
            Bounds::DurationWithin(min, max) => {
                let r = row(&doc, k.path);
                assert!(
                    r.contains(&format!("`{min:?}`")) && r.contains(&format!("`{max:?}`")),
                    "{}: the row must give `{min:?}` and `{max:?}`: {r}",
                    k.path
                );
                checked += 1;
            }
            Bounds::Fraction { zero, one } => {
                let r = row(&doc, k.path);
                let interval = format!(
                    "`{}0, 1{}`",
                    if zero { '[' } else { '(' },
                    if one { ']' } else { ')' }
                );
                assert!(
                    r.contains(&interval),
                    "{}: the row must give {interval}: {r}",
                    k.path
                );
                checked += 1;
            }
        }
    }
    assert!(
        checked >= 10,
        "the registry's bounds were not found ({checked})"
    );
}

#[test]
fn every_key_the_page_names_exists() {
    let doc = limits_doc();
    let section = doc
        .split("## Scenario files and sweeps")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("the scenario section");
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let first = line.split('|').nth(1).unwrap_or("");
        for name in first.split('`').skip(1).step_by(2) {
            if name.contains('.') {
                assert!(
                    find(name).is_some(),
                    "docs/limits.md names {name}, which is not a key"
                );
            }
        }
    }
}

/// Integer bounds the resolver applies (not in the registry): key, a scenario with `{}` where
/// the value goes, the smallest and largest accepted value.
const RESOLVER_BOUNDS: &[(&str, &str, u64, u64)] = &[
    ("run.reps", "[run]\nreps = {}\n", 1, 200_000),
    ("flow.count", "[[flow]]\ncount = {}\n", 1, 10_000),
    (
        "flow.streams",
        "[[flow]]\napp = \"download\"\nsize = \"1GB\"\nstreams = {}\n",
        1,
        1_000_000,
    ),
    (
        "flow.connections",
        "[[flow]]\napp = \"download\"\nconnections = {}\n",
        1,
        1_000_000,
    ),
    (
        "link.loss.max_burst",
        "[link]\nloss = { model = \"bounded\", p = 0.01, max_burst = {} }\n",
        1,
        4_294_967_295,
    ),
    (
        "cross.size",
        "[[cross]]\npattern = \"cbr\"\nrate = \"1Mbit\"\nsize = {}\n",
        1,
        65_507,
    ),
];

#[test]
fn resolver_bounds_match_the_page_and_the_parser() {
    let doc = limits_doc();
    let parse = |template: &str, v: u64| {
        let text = template.replace("{}", &v.to_string());
        parse_str(&text, "limits.toml", Path::new("."), &[], &[]).map(|_| ())
    };
    for &(key, template, min, max) in RESOLVER_BOUNDS {
        let r = row(&doc, key);
        assert!(
            has_number(r, min) && has_number(r, max),
            "{key}: the row must give `{min}` and `{max}`: {r}"
        );
        for v in [min, max] {
            parse(template, v)
                .unwrap_or_else(|e| panic!("{key} = {v} is documented as accepted: {e}"));
        }
        for v in [min - 1, max + 1] {
            let e = parse(template, v).expect_err(&format!("{key} = {v} is documented as refused"));
            assert!(
                e.line.is_some(),
                "{key} = {v}: the error must point at the value: {e}"
            );
        }
    }
}

#[test]
fn the_sweep_cap_matches_the_page() {
    let doc = limits_doc();
    let r = doc
        .lines()
        .find(|l| l.starts_with("| sweep points"))
        .expect("a row for the sweep point cap");
    assert!(
        has_number(r, MAX_POINTS as u64),
        "the row must give `{MAX_POINTS}`: {r}"
    );
}
