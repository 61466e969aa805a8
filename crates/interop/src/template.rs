//! `{placeholder}` substitution in command arguments and configuration files.
//!
//! Unknown placeholders are an error (at load time, so a typo in a peer file never reaches a
//! run); `{{` and `}}` stand for literal braces (nginx configs need them).

use std::collections::BTreeMap;

/// Every placeholder a peer file may use, with its meaning (documented in peers/README.md).
pub const PLACEHOLDERS: &[(&str, &str)] = &[
    (
        "server_addr",
        "IP address the server listens on and the client connects to",
    ),
    ("port", "server port (UDP for h3, TCP for h2/http/1.1)"),
    (
        "url",
        "https://{server_addr}:{port}{path}: the body to download",
    ),
    ("path", "URL path of the body on this server, e.g. /1000000"),
    ("size", "body size in bytes"),
    ("http", "HTTP version of the pair: 3, 2 or 1.1"),
    ("alpn", "ALPN of the pair: h3, h2 or http/1.1"),
    ("cert", "server leaf certificate (PEM)"),
    ("key", "server private key (PKCS#8 PEM)"),
    ("chain", "server leaf + CA (PEM)"),
    ("ca", "CA certificate that signed the leaf (PEM)"),
    (
        "spki",
        "base64 SHA-256 of the server's SPKI (Chromium's --ignore-certificate-errors-spki-list)",
    ),
    (
        "docroot",
        "directory holding a file named {size} of {size} bytes",
    ),
    (
        "out_dir",
        "this role's output directory (logs, downloads, configs)",
    ),
    ("keylog", "TLS key log file in out_dir"),
    ("qlog_dir", "qlog directory in out_dir"),
    ("peers_dir", "the peers/ directory (templates, test pages)"),
    (
        "peers_home",
        "where install-peers.sh put built peers ($QUICLAB_PEERS or /opt/quiclab-peers)",
    ),
    ("quiclab", "path of the running quiclab binary"),
    ("timeout_s", "client time limit in whole seconds"),
];

/// A template that could not be rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// `{name}` is not a known placeholder.
    #[error("unknown placeholder {{{0}}} (known: {known})", known = known_names())]
    Unknown(String),
    /// A `{` without a matching `}`.
    #[error("unclosed '{{' in {0:?} (write '{{{{' for a literal brace)")]
    Unclosed(String),
}

fn known_names() -> String {
    PLACEHOLDERS
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Values of the placeholders for one role of one pair.
#[derive(Debug, Clone, Default)]
pub struct Vars {
    values: BTreeMap<&'static str, String>,
}

impl Vars {
    /// Sets `name` (which must be one of [`PLACEHOLDERS`]; others are ignored).
    pub fn set(&mut self, name: &str, value: impl Into<String>) -> &mut Self {
        if let Some((known, _)) = PLACEHOLDERS.iter().find(|(n, _)| *n == name) {
            self.values.insert(known, value.into());
        }
        self
    }

    /// The value of `name`, if set.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// Fills every placeholder of `template`; a known placeholder without a value renders empty.
    pub fn render(&self, template: &str) -> Result<String, TemplateError> {
        substitute(template, |name| {
            if PLACEHOLDERS.iter().any(|(n, _)| *n == name) {
                Ok(self.get(name).unwrap_or_default().to_owned())
            } else {
                Err(TemplateError::Unknown(name.to_owned()))
            }
        })
    }
}

/// Checks that `template` only uses known placeholders (used when loading peer files).
pub fn check(template: &str) -> Result<(), TemplateError> {
    Vars::default().render(template).map(|_| ())
}

fn substitute(
    template: &str,
    mut value: impl FnMut(&str) -> Result<String, TemplateError>,
) -> Result<String, TemplateError> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            out.push_str(&tail[..1]);
            rest = &tail[2..];
        } else if let Some(after) = tail.strip_prefix('}') {
            // A lone closing brace is literal text; only '{' opens a placeholder.
            out.push('}');
            rest = after;
        } else {
            let end = tail
                .find('}')
                .ok_or_else(|| TemplateError::Unclosed(template.to_owned()))?;
            out.push_str(&value(&tail[1..end])?);
            rest = &tail[end + 1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> Vars {
        let mut v = Vars::default();
        v.set("server_addr", "10.99.2.1")
            .set("port", "4433")
            .set("size", "1000");
        v
    }

    #[test]
    fn fills_placeholders() {
        let got = vars()
            .render("https://{server_addr}:{port}/{size}")
            .unwrap();
        assert_eq!(got, "https://10.99.2.1:4433/1000");
    }

    #[test]
    fn double_braces_are_literal() {
        let got = vars()
            .render("events {{ worker_connections 64; }} port {port}")
            .unwrap();
        assert_eq!(got, "events { worker_connections 64; } port 4433");
    }

    #[test]
    fn unknown_placeholder_is_an_error() {
        let err = vars().render("{server_adr}").unwrap_err();
        assert_eq!(err, TemplateError::Unknown("server_adr".into()));
        assert!(err.to_string().contains("server_addr"), "{err}");
    }

    #[test]
    fn unclosed_brace_is_an_error() {
        assert!(matches!(check("x {port"), Err(TemplateError::Unclosed(_))));
    }

    #[test]
    fn known_but_unset_renders_empty() {
        assert_eq!(vars().render("[{keylog}]").unwrap(), "[]");
    }
}
