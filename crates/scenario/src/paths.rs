//! Dotted keys used by `--set`, `[sweep]` and sweep options: checking them against the registry
//! and writing a value at them.
//!
//! Flows and cross sources are addressed by index (`flow.0.cc`, the first `[[flow]]` in the
//! file, before `count` replication) or all at once (`flow.cc`). Addressing a flow of a file
//! without `[[flow]]` first creates the implicit default flow.

use crate::error::At;
use crate::registry::{self, KeyDoc};
use crate::tree::{Node, Table, Val};

/// One step of a dotted key.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    Key(String),
    Index(usize),
    All,
}

/// A dotted key that names a registry key.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct KeyPath {
    /// As the user wrote it.
    pub text: String,
    /// The key it sets.
    pub doc: &'static KeyDoc,
    segs: Vec<Seg>,
}

/// Why a key or a write was refused (the caller adds the position).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PathError {
    pub message: String,
    /// Where the allowed keys are (`link`), for unknown keys.
    pub place: String,
    pub allowed: Vec<&'static str>,
}

fn plain(message: String) -> PathError {
    PathError {
        message,
        place: String::new(),
        allowed: Vec::new(),
    }
}

/// Checks `text` against the registry.
pub(crate) fn parse_key(text: &str) -> Result<KeyPath, PathError> {
    let parts: Vec<&str> = text.trim().split('.').collect();
    let mut segs = Vec::new();
    let mut registry_parts: Vec<&str> = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let array = i == 1 && matches!(parts[0], "flow" | "cross" | "probe");
        if array {
            if let Ok(n) = part.parse::<usize>() {
                segs.push(Seg::Index(n));
                continue;
            }
            segs.push(Seg::All);
        }
        // `link.up.X` and `link.down.X` set the same keys as `link.X`, for one direction.
        let direction =
            i == 1 && parts[0] == "link" && matches!(*part, "up" | "down") && parts.len() > 2;
        if !direction {
            registry_parts.push(part);
        }
        segs.push(Seg::Key((*part).to_string()));
    }
    let registry_path = registry_parts.join(".");
    match registry::find(&registry_path) {
        Some(doc) => Ok(KeyPath {
            text: text.trim().to_string(),
            doc,
            segs,
        }),
        None => {
            // List what is allowed at the deepest level that exists.
            let mut parent = registry_parts.clone();
            parent.pop();
            while !parent.is_empty() && registry::children(&parent.join(".")).is_empty() {
                parent.pop();
            }
            let parent = parent.join(".");
            let place = if parent.is_empty() {
                "the top level".to_string()
            } else {
                parent.clone()
            };
            Err(PathError {
                message: format!("unknown key {:?}", text.trim()),
                place,
                allowed: registry::children(&parent)
                    .into_iter()
                    .filter(|c| *c != "sweep")
                    .collect(),
            })
        }
    }
}

impl KeyPath {
    /// Writes `node` at this key, creating intermediate tables; `at` is recorded for anything
    /// created on the way.
    pub(crate) fn set(&self, root: &mut Table, node: &Node, at: &At) -> Result<(), PathError> {
        set_in(root, &self.segs, node, at, "")
    }
}

fn set_in(
    table: &mut Table,
    segs: &[Seg],
    node: &Node,
    at: &At,
    done: &str,
) -> Result<(), PathError> {
    let (Some(Seg::Key(key)), rest) = (segs.first(), segs.get(1..).unwrap_or(&[])) else {
        return Err(plain(format!("internal: malformed key after {done:?}")));
    };
    let here = if done.is_empty() {
        key.clone()
    } else {
        format!("{done}.{key}")
    };
    match rest.first() {
        None => {
            table.set(key, at.clone(), node.clone());
            Ok(())
        }
        Some(Seg::Index(_) | Seg::All) => {
            if table.get(key).is_none() {
                if key != "flow" {
                    return Err(plain(format!("the scenario has no [[{key}]] to set")));
                }
                // The implicit default flow becomes explicit so it can be changed.
                let flow = Node {
                    val: Val::Table(Table::default()),
                    at: at.clone(),
                };
                table.set(
                    key,
                    at.clone(),
                    Node {
                        val: Val::Array(vec![flow]),
                        at: at.clone(),
                    },
                );
            }
            let Some(entry) = table.get_mut(key) else {
                return Err(plain(format!("internal: {here} vanished")));
            };
            let Val::Array(items) = &mut entry.node.val else {
                return Err(plain(format!("{here} is not an array of tables")));
            };
            let count = items.len();
            let chosen: Vec<&mut Node> = match rest.first() {
                Some(Seg::Index(i)) => match items.get_mut(*i) {
                    Some(n) => vec![n],
                    None => {
                        return Err(plain(format!(
                            "there is no {here}.{i}: the scenario has {count} [[{key}]]"
                        )))
                    }
                },
                _ => items.iter_mut().collect(),
            };
            for (i, item) in chosen.into_iter().enumerate() {
                let Val::Table(t) = &mut item.val else {
                    return Err(plain(format!("{here}.{i} is not a table")));
                };
                set_in(t, rest.get(1..).unwrap_or(&[]), node, at, &here)?;
            }
            Ok(())
        }
        Some(Seg::Key(_)) => {
            if table.get(key).is_none() {
                table.set(
                    key,
                    at.clone(),
                    Node {
                        val: Val::Table(Table::default()),
                        at: at.clone(),
                    },
                );
            }
            let Some(entry) = table.get_mut(key) else {
                return Err(plain(format!("internal: {here} vanished")));
            };
            match &mut entry.node.val {
                Val::Table(t) => set_in(t, rest, node, at, &here),
                other => Err(plain(format!(
                    "{here} is {} here, not a table; set {here} itself",
                    other.type_name()
                ))),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Errors;
    use crate::tree::parse_document;

    fn tree(text: &str) -> Table {
        parse_document(text, &Errors::new("t.toml")).expect("valid")
    }

    fn node(v: Val) -> Node {
        Node {
            val: v,
            at: At::Arg("--set".into()),
        }
    }

    #[test]
    fn keys_map_to_the_registry() {
        assert_eq!(parse_key("flow.0.cc").map(|k| k.doc.path), Ok("flow.cc"));
        assert_eq!(parse_key("flow.cc").map(|k| k.doc.path), Ok("flow.cc"));
        assert_eq!(
            parse_key("link.up.rate").map(|k| k.doc.path),
            Ok("link.rate")
        );
        assert_eq!(
            parse_key("link.down.loss.p").map(|k| k.doc.path),
            Ok("link.loss.p")
        );
        assert_eq!(parse_key("link.up").map(|k| k.doc.path), Ok("link.up"));
        assert_eq!(
            parse_key("cross.1.rate").map(|k| k.doc.path),
            Ok("cross.rate")
        );
        let e = parse_key("link.rat").expect_err("unknown");
        assert_eq!(e.place, "link");
        assert!(e.allowed.contains(&"rate"));
        assert!(parse_key("link.rate_schedule.at").is_err());
        assert!(parse_key("sweep.x").is_err());
        assert!(parse_key("link.up.up.rate").is_err());
    }

    #[test]
    fn set_creates_tables_and_the_default_flow() {
        let mut t = tree("[link]\nrate = \"1Mbit\"\n");
        parse_key("link.loss.p")
            .and_then(|k| k.set(&mut t, &node(Val::Str("1%".into())), &At::Arg("x".into())))
            .expect("set");
        parse_key("flow.0.cc")
            .and_then(|k| {
                k.set(
                    &mut t,
                    &node(Val::Str("cubic".into())),
                    &At::Arg("x".into()),
                )
            })
            .expect("set");
        let Some(Val::Array(flows)) = t.get("flow").map(|e| &e.node.val) else {
            panic!("flow array created")
        };
        assert_eq!(flows.len(), 1);
        assert!(parse_key("flow.1.cc")
            .and_then(|k| k.set(
                &mut t,
                &node(Val::Str("cubic".into())),
                &At::Arg("x".into())
            ))
            .is_err());
        assert!(parse_key("cross.rate")
            .and_then(|k| k.set(
                &mut t,
                &node(Val::Str("1Mbit".into())),
                &At::Arg("x".into())
            ))
            .is_err());
    }

    #[test]
    fn set_all_flows() {
        let mut t = tree("[[flow]]\n[[flow]]\ncc = \"none\"\n");
        parse_key("flow.cc")
            .and_then(|k| {
                k.set(
                    &mut t,
                    &node(Val::Str("cubic".into())),
                    &At::Arg("x".into()),
                )
            })
            .expect("set");
        let Some(Val::Array(flows)) = t.get("flow").map(|e| &e.node.val) else {
            panic!("flows")
        };
        for f in flows {
            let Val::Table(f) = &f.val else {
                panic!("table")
            };
            assert_eq!(
                f.get("cc").map(|e| &e.node.val),
                Some(&Val::Str("cubic".into()))
            );
        }
    }

    #[test]
    fn refuses_to_descend_into_a_shorthand() {
        let mut t = tree("[link]\nloss = \"2%\"\n");
        let e = parse_key("link.loss.p")
            .and_then(|k| k.set(&mut t, &node(Val::Float(0.1)), &At::Arg("x".into())))
            .expect_err("string");
        assert!(e.message.contains("not a table"), "{}", e.message);
    }
}
