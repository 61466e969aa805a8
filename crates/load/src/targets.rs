//! Attack targets: URLs from the command line, or a targets file in vegeta's `http` format.
//!
//! ```text
//! # comment
//! GET https://localhost:4433/11000
//! X-Trace: 1
//!
//! POST https://localhost:4433/echo
//! Content-Type: application/json
//! @body.json
//! ```
//! A target is a `METHOD URL` line, then any `Name: value` header lines, then optionally one
//! `@path` line naming a body file (relative paths are taken from the targets file's folder).
//! Blank lines and `#` comment lines separate targets and are otherwise ignored.

use std::path::{Path, PathBuf};

use bytes::Bytes;
pub use http::{Method, Uri};

/// One request template that the attack sends (round-robin over all targets).
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// HTTP method.
    pub method: Method,
    /// Absolute URL (scheme and authority required).
    pub url: Uri,
    /// Extra request headers, in order.
    pub headers: Vec<(String, String)>,
    /// Request body (empty for none).
    pub body: Bytes,
}

/// A problem in a targets file or a target given on the command line.
#[derive(Debug, thiserror::Error)]
pub enum TargetsError {
    /// A syntax error at a 1-based line of a targets file.
    #[error("{file}:{line}: {message}")]
    Syntax {
        /// The file (or `<args>` for the command line).
        file: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// No target at all.
    #[error("no targets given")]
    Empty,
}

/// Parses one absolute URL, requiring a scheme and a host.
pub fn parse_url(text: &str) -> Result<Uri, String> {
    let url: Uri = text
        .trim()
        .parse()
        .map_err(|e| format!("invalid URL {text:?}: {e}"))?;
    if url.scheme().is_none() || url.authority().is_none() {
        return Err(format!(
            "URL {text:?} must be absolute (https://host:port/path)"
        ));
    }
    Ok(url)
}

/// Parses one `Name: value` header.
pub fn parse_header(text: &str) -> Result<(String, String), String> {
    let (name, value) = text
        .split_once(':')
        .ok_or_else(|| format!("header {text:?} must be `Name: value`"))?;
    let name = name.trim();
    http::HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| format!("invalid header name {name:?}"))?;
    let value = value.trim();
    http::HeaderValue::from_str(value).map_err(|_| format!("invalid header value {value:?}"))?;
    Ok((name.to_string(), value.to_string()))
}

/// Parses a method name (`GET`, `POST`, …).
pub fn parse_method(text: &str) -> Result<Method, String> {
    Method::from_bytes(text.trim().as_bytes()).map_err(|_| format!("invalid method {text:?}"))
}

/// Reads and parses a targets file.
pub fn read_targets_file(path: &Path) -> Result<Vec<Target>, TargetsError> {
    let text = fsutil::read_input_to_string_bounded(path, MAX_TARGETS_BYTES).map_err(|source| {
        TargetsError::Read {
            path: path.to_path_buf(),
            source,
        }
    })?;
    let base = path.parent().unwrap_or(Path::new("."));
    parse_targets(&text, &path.display().to_string(), base)
}

/// Largest targets file read: a target is a few lines, so 16 MiB is hundreds of thousands of
/// targets; a FIFO, a device or `/dev/zero` is refused before reading (see `fsutil`).
pub const MAX_TARGETS_BYTES: u64 = 16 << 20;

/// Largest request body a targets file may name: it is held in memory and sent with every
/// request of its target.
pub const MAX_BODY_BYTES: u64 = 64 << 20;

/// Reads a body file: a regular file of at most [`MAX_BODY_BYTES`] (a FIFO would block for
/// ever, `/dev/zero` would fill the memory).
fn read_body(path: &Path) -> std::io::Result<Vec<u8>> {
    fsutil::read_input_bounded(path, MAX_BODY_BYTES)
}

/// Parses targets-file text; `file` names it in errors, `base` resolves relative `@body` paths.
pub fn parse_targets(text: &str, file: &str, base: &Path) -> Result<Vec<Target>, TargetsError> {
    let err = |line: usize, message: String| TargetsError::Syntax {
        file: file.to_string(),
        line,
        message,
    };
    let mut targets = Vec::new();
    let mut current: Option<Target> = None;
    let mut has_body = false;
    for (index, raw) in text.lines().enumerate() {
        let line_no = index + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            targets.extend(current.take());
            continue;
        }
        if let Some(body_path) = line.strip_prefix('@') {
            let target = current
                .as_mut()
                .ok_or_else(|| err(line_no, "a @body line must follow a METHOD URL line".into()))?;
            if has_body {
                return Err(err(line_no, "a target has at most one @body line".into()));
            }
            let full = base.join(body_path.trim());
            let body = read_body(&full)
                .map_err(|e| err(line_no, format!("cannot read body {}: {e}", full.display())))?;
            target.body = Bytes::from(body);
            has_body = true;
            continue;
        }
        let request_line = line
            .split_once(char::is_whitespace)
            .and_then(|(m, u)| parse_method(m).ok().map(|m| (m, u)))
            .filter(|(m, _)| m.as_str().chars().all(|c| c.is_ascii_uppercase()));
        match (request_line, current.as_mut()) {
            (Some((method, url)), _) => {
                targets.extend(current.take());
                let url = parse_url(url).map_err(|m| err(line_no, m))?;
                current = Some(Target {
                    method,
                    url,
                    headers: Vec::new(),
                    body: Bytes::new(),
                });
                has_body = false;
            }
            (None, Some(target)) => {
                if has_body {
                    return Err(err(
                        line_no,
                        "headers must come before the @body line".into(),
                    ));
                }
                let header = parse_header(line).map_err(|m| err(line_no, m))?;
                target.headers.push(header);
            }
            (None, None) => {
                return Err(err(
                    line_no,
                    format!(
                    "expected `METHOD URL` (e.g. `GET https://localhost:4433/100`), found {line:?}"
                ),
                ))
            }
        }
    }
    targets.extend(current);
    if targets.is_empty() {
        return Err(TargetsError::Empty);
    }
    Ok(targets)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<Target>, TargetsError> {
        parse_targets(text, "t.txt", Path::new("."))
    }

    fn line_of(e: TargetsError) -> usize {
        match e {
            TargetsError::Syntax { line, .. } => line,
            other => panic!("expected a syntax error, got {other}"),
        }
    }

    #[test]
    fn parses_targets_with_headers_and_comments() {
        let t = parse(
            "# two targets\nGET https://localhost:4433/100\nX-A: 1\nAccept:  */*\n\n\
             HEAD https://127.0.0.1:4433/5\n",
        )
        .unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].method, Method::GET);
        assert_eq!(t[0].url.path(), "/100");
        assert_eq!(
            t[0].headers,
            vec![("X-A".into(), "1".into()), ("Accept".into(), "*/*".into())]
        );
        assert_eq!(t[1].method, Method::HEAD);
        assert!(t[1].headers.is_empty());
    }

    #[test]
    fn consecutive_request_lines_are_separate_targets() {
        let t = parse("GET https://a:1/1\nGET https://a:1/2\n").unwrap();
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn body_file_is_read_relative_to_the_targets_file() {
        // Private (random name, 0700): tests run as root, a predictable /tmp name is plantable.
        let scratch = fsutil::PrivateDir::new("quiclab-targets-").unwrap();
        let dir = scratch.path();
        std::fs::write(dir.join("body.json"), b"{\"x\":1}").unwrap();
        let file = dir.join("targets.txt");
        std::fs::write(
            &file,
            "POST https://localhost:4433/echo\nContent-Type: application/json\n@body.json\n",
        )
        .unwrap();
        let t = read_targets_file(&file).unwrap();
        assert_eq!(t[0].body.as_ref(), b"{\"x\":1}");
    }

    #[test]
    fn errors_carry_line_numbers() {
        assert_eq!(line_of(parse("\n\nhello world\n").unwrap_err()), 3);
        assert_eq!(line_of(parse("GET /relative\n").unwrap_err()), 1);
        assert_eq!(
            line_of(parse("GET https://a:1/\nno colon here\n").unwrap_err()),
            2
        );
        assert_eq!(line_of(parse("@body\n").unwrap_err()), 1);
        assert_eq!(
            line_of(parse("GET https://a:1/\n@/nonexistent/quiclab\n").unwrap_err()),
            2
        );
        assert!(matches!(parse("# only\n\n"), Err(TargetsError::Empty)));
    }
}
