//! A plain TOML value tree in which every key and value remembers where it came from.
//!
//! toml_edit's own tree carries byte spans only for text it parsed; overrides and sweep values
//! replace parts of the tree and must carry their command-line argument instead, so the file is
//! copied once into this tree.

use std::fmt;

use crate::error::{At, Errors, LineIndex, ScenarioError};

/// A value with its origin.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub val: Val,
    pub at: At,
}

/// A TOML value (datetimes are rejected on the way in: no key takes one).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Val {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Array(Vec<Node>),
    Table(Table),
}

/// An ordered table (file order matters for sweep axes).
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Table {
    pub entries: Vec<Entry>,
}

/// One `key = value` of a table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    pub key: String,
    /// Position of the key itself (unknown-key errors point here).
    pub key_at: At,
    pub node: Node,
}

impl Table {
    /// The entry for `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.key == key)
    }

    /// The entry for `key`, mutable.
    pub(crate) fn get_mut(&mut self, key: &str) -> Option<&mut Entry> {
        self.entries.iter_mut().find(|e| e.key == key)
    }

    /// Replaces the value of `key`, or appends it.
    pub(crate) fn set(&mut self, key: &str, key_at: At, node: Node) {
        match self.get_mut(key) {
            Some(e) => e.node = node,
            None => self.entries.push(Entry {
                key: key.to_string(),
                key_at,
                node,
            }),
        }
    }
}

impl Val {
    /// The TOML type name, for "expected X, found Y" messages.
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Val::Str(_) => "a string",
            Val::Int(_) => "an integer",
            Val::Float(_) => "a float",
            Val::Bool(_) => "a boolean",
            Val::Array(_) => "an array",
            Val::Table(_) => "a table",
        }
    }
}

/// Prints a value the way a user would write it: strings bare, everything else as TOML.
impl fmt::Display for Val {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Val::Str(s) => write!(f, "{s}"),
            Val::Int(i) => write!(f, "{i}"),
            Val::Float(x) => write!(f, "{x}"),
            Val::Bool(b) => write!(f, "{b}"),
            Val::Array(items) => {
                write!(f, "[")?;
                for (i, n) in items.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    quoted(&n.val, f)?;
                }
                write!(f, "]")
            }
            Val::Table(t) => {
                write!(f, "{{")?;
                for (i, e) in t.entries.iter().enumerate() {
                    if i > 0 {
                        write!(f, ",")?;
                    }
                    write!(f, " {} = ", e.key)?;
                    quoted(&e.node.val, f)?;
                }
                write!(f, " }}")
            }
        }
    }
}

fn quoted(v: &Val, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match v {
        Val::Str(s) => write!(f, "{s:?}"),
        other => write!(f, "{other}"),
    }
}

/// Parses a whole scenario file into a tree.
pub(crate) fn parse_document(text: &str, errors: &Errors) -> Result<Table, ScenarioError> {
    let index = LineIndex::new(text);
    let doc = toml_edit::ImDocument::parse(text).map_err(|e| {
        let at = index.at(e.span().map_or(0, |s| s.start));
        errors.at(&at, format!("invalid TOML: {}", e.message().trim()))
    })?;
    let conv = Converter {
        index: &index,
        errors,
    };
    conv.table(doc.as_table(), &At::File { line: 1, column: 1 })
}

/// Parses a command-line value: TOML if it is valid TOML, otherwise the text as a string
/// (so `5Mbit` needs no quotes). Every node is attributed to `arg`.
pub(crate) fn parse_arg_value(text: &str, arg: &At) -> Node {
    let wrapped = format!("v = {text}");
    let parsed = toml_edit::ImDocument::parse(wrapped.as_str())
        .ok()
        .and_then(|doc| {
            let item = doc.as_table().get("v")?;
            let value = item.as_value()?;
            from_value_at(value, arg)
        });
    parsed.unwrap_or_else(|| Node {
        val: Val::Str(text.trim().to_string()),
        at: arg.clone(),
    })
}

/// Converts a parsed value, attributing every node to `at`; `None` for datetimes.
fn from_value_at(v: &toml_edit::Value, at: &At) -> Option<Node> {
    use toml_edit::Value as V;
    let val = match v {
        V::String(s) => Val::Str(s.value().clone()),
        V::Integer(i) => Val::Int(*i.value()),
        V::Float(x) => Val::Float(*x.value()),
        V::Boolean(b) => Val::Bool(*b.value()),
        V::Datetime(_) => return None,
        V::Array(a) => Val::Array(
            a.iter()
                .map(|x| from_value_at(x, at))
                .collect::<Option<_>>()?,
        ),
        V::InlineTable(t) => {
            let mut table = Table::default();
            for (k, x) in t.iter() {
                table.set(k, at.clone(), from_value_at(x, at)?);
            }
            Val::Table(table)
        }
    };
    Some(Node {
        val,
        at: at.clone(),
    })
}

struct Converter<'a> {
    index: &'a LineIndex,
    errors: &'a Errors,
}

impl Converter<'_> {
    fn pos(&self, span: Option<std::ops::Range<usize>>, fallback: &At) -> At {
        span.map_or_else(|| fallback.clone(), |s| self.index.at(s.start))
    }

    fn table(&self, t: &toml_edit::Table, at: &At) -> Result<Table, ScenarioError> {
        let mut out = Table::default();
        for (k, item) in t.iter() {
            let key_at = self.pos(t.key(k).and_then(|k| k.span()), at);
            let node = self.item(item, &key_at)?;
            out.entries.push(Entry {
                key: k.to_string(),
                key_at,
                node,
            });
        }
        Ok(out)
    }

    fn item(&self, item: &toml_edit::Item, key_at: &At) -> Result<Node, ScenarioError> {
        match item {
            toml_edit::Item::None => Err(self.errors.at(key_at, "key without a value")),
            toml_edit::Item::Value(v) => self.value(v, key_at),
            toml_edit::Item::Table(t) => Ok(Node {
                val: Val::Table(self.table(t, key_at)?),
                at: key_at.clone(),
            }),
            toml_edit::Item::ArrayOfTables(a) => {
                let mut items = Vec::new();
                for t in a.iter() {
                    let at = self.pos(t.span(), key_at);
                    items.push(Node {
                        val: Val::Table(self.table(t, &at)?),
                        at,
                    });
                }
                Ok(Node {
                    val: Val::Array(items),
                    at: key_at.clone(),
                })
            }
        }
    }

    fn value(&self, v: &toml_edit::Value, fallback: &At) -> Result<Node, ScenarioError> {
        use toml_edit::Value as V;
        let at = self.pos(v.span(), fallback);
        let val = match v {
            V::String(s) => Val::Str(s.value().clone()),
            V::Integer(i) => Val::Int(*i.value()),
            V::Float(x) => Val::Float(*x.value()),
            V::Boolean(b) => Val::Bool(*b.value()),
            V::Datetime(_) => {
                return Err(self
                    .errors
                    .at(&at, "dates and times are not used by any key"))
            }
            V::Array(a) => Val::Array(
                a.iter()
                    .map(|x| self.value(x, &at))
                    .collect::<Result<_, _>>()?,
            ),
            V::InlineTable(t) => {
                let mut table = Table::default();
                for (k, x) in t.iter() {
                    let key_at = self.pos(t.key(k).and_then(|k| k.span()), &at);
                    let node = self.value(x, &key_at)?;
                    table.entries.push(Entry {
                        key: k.to_string(),
                        key_at,
                        node,
                    });
                }
                Val::Table(table)
            }
        };
        Ok(Node { val, at })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors() -> Errors {
        Errors::new("t.toml")
    }

    #[test]
    fn keeps_order_and_positions() {
        let t = parse_document("[link]\nrate = \"10Mbit\"\n  delay = \"5ms\"\n", &errors())
            .expect("valid");
        let link = t.get("link").expect("link");
        let Val::Table(link) = &link.node.val else {
            panic!("link is a table")
        };
        let keys: Vec<_> = link.entries.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(keys, ["rate", "delay"]);
        assert_eq!(link.entries[1].key_at, At::File { line: 3, column: 3 });
        assert_eq!(
            link.entries[1].node.at,
            At::File {
                line: 3,
                column: 11
            }
        );
    }

    #[test]
    fn syntax_error_has_position() {
        let e = parse_document("a = 1\nb = = 2\n", &errors()).expect_err("invalid");
        assert_eq!((e.line, e.file.as_str()), (Some(2), "t.toml"));
    }

    #[test]
    fn arg_values_fall_back_to_strings() {
        let at = At::Arg("--set x".into());
        assert_eq!(parse_arg_value("5Mbit", &at).val, Val::Str("5Mbit".into()));
        assert_eq!(
            parse_arg_value("\"5Mbit\"", &at).val,
            Val::Str("5Mbit".into())
        );
        assert_eq!(parse_arg_value("7", &at).val, Val::Int(7));
        assert_eq!(parse_arg_value("true", &at).val, Val::Bool(true));
        assert!(matches!(
            parse_arg_value("{ model = \"none\" }", &at).val,
            Val::Table(_)
        ));
        assert_eq!(
            parse_arg_value("2024-01-01", &at).val,
            Val::Str("2024-01-01".into())
        );
    }
}
