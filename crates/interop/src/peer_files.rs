//! Loading and validating the peer files of a directory, with file:line:col errors.

use std::path::{Path, PathBuf};

use crate::spec::{ClientSpec, MeasureSpec, PeerSpec, ServerSpec};
use crate::template::{self, TemplateError};

/// A peer file that could not be read or is not valid.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    /// The directory or a file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// What was being read.
        path: PathBuf,
        /// Why it failed.
        source: std::io::Error,
    },
    /// Syntax or schema error at a position.
    #[error("{path}:{line}:{col}: {message}")]
    At {
        /// The peer file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column (in characters).
        col: usize,
        /// What is wrong.
        message: String,
    },
    /// Two files declare the same name.
    #[error("peer name {name:?} is used by both {first} and {second}")]
    Duplicate {
        /// The name.
        name: String,
        /// First file.
        first: PathBuf,
        /// Second file.
        second: PathBuf,
    },
    /// A name on the command line matches no peer file.
    #[error("no peer named {name:?} (known: {known})")]
    Unknown {
        /// The requested name.
        name: String,
        /// Comma-separated known names.
        known: String,
    },
}

/// A validated peer description and the file it came from.
#[derive(Debug, Clone)]
pub struct Peer {
    /// The description.
    pub spec: PeerSpec,
    /// Its file.
    pub file: PathBuf,
    /// The directory holding the peer files (templates are relative to it).
    pub dir: PathBuf,
}

impl Peer {
    /// The peer's name.
    pub fn name(&self) -> &str {
        &self.spec.name
    }
}

/// Loads every `*.toml` in `dir` (sorted by file name).
pub fn load_dir(dir: &Path) -> Result<Vec<Peer>, PeerError> {
    let io = |source| PeerError::Io {
        path: dir.to_owned(),
        source,
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    let mut peers: Vec<Peer> = Vec::with_capacity(files.len());
    for file in files {
        let peer = load_file(&file)?;
        if let Some(other) = peers.iter().find(|p| p.name() == peer.name()) {
            return Err(PeerError::Duplicate {
                name: peer.spec.name.clone(),
                first: other.file.clone(),
                second: file,
            });
        }
        peers.push(peer);
    }
    Ok(peers)
}

/// Loads and validates one peer file.
pub fn load_file(path: &Path) -> Result<Peer, PeerError> {
    let text = std::fs::read_to_string(path).map_err(|source| PeerError::Io {
        path: path.to_owned(),
        source,
    })?;
    let dir = path.parent().map(Path::to_owned).unwrap_or_default();
    parse_str(&text, path, &dir)
}

/// Parses and validates the text of a peer file (`path` is only used in messages).
pub fn parse_str(text: &str, path: &Path, dir: &Path) -> Result<Peer, PeerError> {
    let spec: PeerSpec = toml::from_str(text).map_err(|e| {
        let offset = e.span().map(|s| s.start).unwrap_or(0);
        at(path, text, offset, e.message().trim().to_owned())
    })?;
    validate(&spec, dir).map_err(|(needle, message)| {
        // Point at the first occurrence of the offending text (a key or a template).
        let offset = text.find(&needle).unwrap_or(0);
        at(path, text, offset, message)
    })?;
    Ok(Peer {
        spec,
        file: path.to_owned(),
        dir: dir.to_owned(),
    })
}

fn at(path: &Path, text: &str, offset: usize, message: String) -> PeerError {
    let offset = offset.min(text.len());
    let before = &text[..text.floor_char_boundary_compat(offset)];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    PeerError::At {
        path: path.to_owned(),
        line,
        col,
        message,
    }
}

/// `str::floor_char_boundary` is unstable; this is the same for our use.
trait FloorBoundary {
    fn floor_char_boundary_compat(&self, i: usize) -> usize;
}

impl FloorBoundary for str {
    fn floor_char_boundary_compat(&self, mut i: usize) -> usize {
        while i > 0 && !self.is_char_boundary(i) {
            i -= 1;
        }
        i
    }
}

/// Semantic checks; an error is (text to point at, message).
fn validate(spec: &PeerSpec, dir: &Path) -> Result<(), (String, String)> {
    if spec.name.is_empty()
        || !spec
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-')
    {
        return Err((
            "name".into(),
            format!(
                "name {:?} must be non-empty letters, digits and '-'",
                spec.name
            ),
        ));
    }
    if spec.server.is_none() && spec.client.is_none() {
        return Err((
            "name".into(),
            "a peer needs a [server] or a [client] table".into(),
        ));
    }
    for t in spec.version_command.iter().chain(&spec.requires) {
        check_template(t)?;
    }
    if let Some(server) = &spec.server {
        validate_server(server, dir)?;
    }
    if let Some(client) = &spec.client {
        validate_client(client)?;
    }
    Ok(())
}

fn check_template(t: &str) -> Result<(), (String, String)> {
    template::check(t).map_err(|e| {
        let needle = match &e {
            TemplateError::Unknown(name) => format!("{{{name}}}"),
            TemplateError::Unclosed(_) => t.to_owned(),
        };
        (needle, e.to_string())
    })
}

fn validate_server(s: &ServerSpec, dir: &Path) -> Result<(), (String, String)> {
    if s.protocols.is_empty() {
        return Err((
            "[server]".into(),
            "[server] protocols must not be empty".into(),
        ));
    }
    if s.command.is_empty() {
        return Err((
            "[server]".into(),
            "[server] command must not be empty".into(),
        ));
    }
    for t in s.command.iter().chain(s.env.values()).chain([&s.path]) {
        check_template(t)?;
    }
    for f in &s.files {
        let template_path = dir.join(&f.template);
        if !template_path.is_file() {
            return Err((
                f.template.clone(),
                format!("template file {} does not exist", template_path.display()),
            ));
        }
        check_template(&f.to)?;
    }
    Ok(())
}

fn validate_client(c: &ClientSpec) -> Result<(), (String, String)> {
    if c.protocols.is_empty() {
        return Err((
            "[client]".into(),
            "[client] protocols must not be empty".into(),
        ));
    }
    if c.command.is_empty() {
        return Err((
            "[client]".into(),
            "[client] command must not be empty".into(),
        ));
    }
    for t in c.command.iter().chain(c.env.values()).chain(&c.mkdirs) {
        check_template(t)?;
    }
    validate_measure(&c.bytes, "bytes")?;
    if let Some(s) = &c.seconds {
        validate_measure(s, "seconds")?;
    }
    if let Some(p) = &c.proof {
        check_template(&p.file)?;
    }
    Ok(())
}

fn validate_measure(m: &MeasureSpec, key: &str) -> Result<(), (String, String)> {
    let sources = [m.json.is_some(), m.file.is_some(), m.regex.is_some()];
    if sources.iter().filter(|s| **s).count() != 1 {
        return Err((
            format!("{key} ="),
            format!("{key}: give exactly one of json, file or regex"),
        ));
    }
    if let Some(f) = &m.file {
        check_template(f)?;
    }
    if let Some(r) = &m.regex {
        let re = regex::Regex::new(r).map_err(|e| (r.clone(), format!("{key}: bad regex: {e}")))?;
        let names: Vec<_> = re.capture_names().flatten().collect();
        let has_value = names.contains(&"value") || (key == "seconds" && names.contains(&"mbps"));
        if !has_value {
            return Err((
                r.clone(),
                format!("{key}: the regex needs a named group (?P<value>...)"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
name = "demo"
[server]
protocols = ["h3"]
command = ["demo-server", "{server_addr}", "{port}"]
ready = "port"
[client]
protocols = ["h3", "h2"]
command = ["demo-client", "{url}"]
bytes = { json = "bytes" }
seconds = { regex = 'in (?P<value>[0-9.]+) s', stream = "stderr" }
"#;

    fn parse(text: &str) -> Result<Peer, PeerError> {
        parse_str(text, Path::new("peers/demo.toml"), Path::new("peers"))
    }

    #[test]
    fn good_file_parses() {
        let p = parse(GOOD).unwrap();
        assert_eq!(p.name(), "demo");
        let client = p.spec.client.unwrap();
        assert_eq!(client.bytes.json.as_deref(), Some("bytes"));
        assert_eq!(client.seconds.unwrap().stream, crate::spec::Stream::Stderr);
    }

    #[test]
    fn syntax_error_has_line_and_column() {
        let text = "name = \"demo\"\n[server]\nprotocols = [\"h3\"\n";
        let err = parse(text).unwrap_err().to_string();
        assert!(err.starts_with("peers/demo.toml:4:"), "{err}");
    }

    #[test]
    fn unknown_key_has_line_and_column() {
        let text = GOOD.replace("ready = \"port\"", "redy = 1\nready = \"port\"");
        let err = parse(&text).unwrap_err().to_string();
        assert!(err.starts_with("peers/demo.toml:6:1:"), "{err}");
        assert!(err.contains("redy"), "{err}");
    }

    #[test]
    fn unknown_protocol_is_rejected_where_it_is() {
        let text = GOOD.replace(r#"["h3", "h2"]"#, r#"["h3", "spdy"]"#);
        let err = parse(&text).unwrap_err().to_string();
        assert!(err.starts_with("peers/demo.toml:8:20:"), "{err}");
    }

    #[test]
    fn unknown_placeholder_points_at_it() {
        let text = GOOD.replace("\"{url}\"", "\"{ur}\"");
        let err = parse(&text).unwrap_err().to_string();
        assert!(err.starts_with("peers/demo.toml:9:28:"), "{err}");
        assert!(err.contains("unknown placeholder {ur}"), "{err}");
    }

    #[test]
    fn measure_needs_exactly_one_source() {
        let text = GOOD.replace("{ json = \"bytes\" }", "{ json = \"bytes\", file = \"x\" }");
        let err = parse(&text).unwrap_err().to_string();
        assert!(err.contains("exactly one of json, file or regex"), "{err}");
    }

    #[test]
    fn regex_needs_a_value_group() {
        let text = GOOD.replace("(?P<value>[0-9.]+)", "([0-9.]+)");
        let err = parse(&text).unwrap_err().to_string();
        assert!(err.contains("named group"), "{err}");
    }

    #[test]
    fn a_peer_needs_a_role() {
        let err = parse("name = \"x\"\n").unwrap_err().to_string();
        assert!(err.contains("[server] or a [client]"), "{err}");
    }
}
