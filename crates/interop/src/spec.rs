//! The shape of a peer description file (`peers/<name>.toml`), as deserialized.
//!
//! Every command is an argument vector (no shell), each argument a template whose
//! `{placeholders}` the runner fills in (see [`crate::template::PLACEHOLDERS`]).

use std::collections::BTreeMap;

use serde::Deserialize;

/// One third-party (or quiclab's own) implementation, with a client and/or a server role.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeerSpec {
    /// Short unique name used on the command line (`--clients quic-go`).
    pub name: String,
    /// One line for humans: what this peer is.
    #[serde(default)]
    pub description: String,
    /// A command printing the installed version (first line of its output is kept).
    #[serde(default)]
    pub version_command: Vec<String>,
    /// Files that must exist for the peer to count as installed (templates, e.g. a script).
    #[serde(default)]
    pub requires: Vec<String>,
    /// How to run it as a server, if it can be one.
    pub server: Option<ServerSpec>,
    /// How to run it as a client, if it can be one.
    pub client: Option<ClientSpec>,
}

/// An application protocol a role speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
pub enum Protocol {
    /// HTTP/3 over QUIC.
    #[serde(rename = "h3")]
    H3,
    /// HTTP/2 over TLS over TCP.
    #[serde(rename = "h2")]
    H2,
    /// HTTP/1.1 over TLS over TCP.
    #[serde(rename = "http/1.1")]
    Http11,
}

impl Protocol {
    /// The ALPN token (`h3`, `h2`, `http/1.1`).
    pub fn alpn(self) -> &'static str {
        match self {
            Protocol::H3 => "h3",
            Protocol::H2 => "h2",
            Protocol::Http11 => "http/1.1",
        }
    }

    /// The HTTP version number as `quiclab get --http` spells it (`3`, `2`, `1.1`).
    pub fn version(self) -> &'static str {
        match self {
            Protocol::H3 => "3",
            Protocol::H2 => "2",
            Protocol::Http11 => "1.1",
        }
    }

    /// The transport under it: UDP for HTTP/3, TCP otherwise.
    pub fn transport(self) -> Transport {
        match self {
            Protocol::H3 => Transport::Udp,
            Protocol::H2 | Protocol::Http11 => Transport::Tcp,
        }
    }
}

/// UDP or TCP (what a readiness check looks for).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// A bound UDP socket.
    Udp,
    /// A listening TCP socket.
    Tcp,
}

/// How the runner knows a server accepts connections.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ReadySpec {
    /// `ready = "port"`: the server process (in its namespace) has a socket on `{port}` of the
    /// pair's transport (UDP bound for h3, TCP listening for h2 and http/1.1).
    Port,
    /// `ready = { log = "text" }`: a line of the server's stdout or stderr contains this text.
    Log(String),
    /// `ready = { file = "{out_dir}/ready" }`: this file (a template) exists.
    File(String),
    /// `ready = { delay_ms = 500 }`: wait a fixed time (last resort).
    DelayMs(u64),
}

/// A file rendered from a template under `peers/` into the pair's output directory.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSpec {
    /// Template path, relative to the peers directory.
    pub template: String,
    /// Destination, relative to the role's output directory.
    pub to: String,
}

/// The server role.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSpec {
    /// Protocols it serves on `{port}`.
    pub protocols: Vec<Protocol>,
    /// Argument vector (templates).
    pub command: Vec<String>,
    /// Extra environment variables (values are templates).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// URL path of a body of `{size}` bytes (template), e.g. `/{size}`.
    #[serde(default = "default_path")]
    pub path: String,
    /// Write `{docroot}/{size}` (exactly `{size}` bytes) before starting: for static file servers.
    #[serde(default)]
    pub docroot: bool,
    /// Largest body the server can produce (e.g. aioquic's demo caps at 50 MB).
    pub max_size: Option<u64>,
    /// Configuration files rendered before start.
    #[serde(default)]
    pub files: Vec<FileSpec>,
    /// Readiness signal.
    pub ready: ReadySpec,
}

fn default_path() -> String {
    "/{size}".to_owned()
}

/// Which output stream a pattern is searched in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stream {
    /// Standard output.
    #[default]
    Stdout,
    /// Standard error.
    Stderr,
}

/// Where a number (bytes or seconds) comes from. Exactly one of `json`, `file`, `regex`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeasureSpec {
    /// Key of the JSON object printed on a line of stdout (the last such line counts).
    pub json: Option<String>,
    /// The size of this file (template) is the byte count.
    pub file: Option<String>,
    /// A regular expression with a named group `value` (or, for seconds, `mbps`, converted
    /// with the byte count).
    pub regex: Option<String>,
    /// Stream the regex is searched in.
    #[serde(default)]
    pub stream: Stream,
    /// Multiply the number by this (e.g. 0.001 for milliseconds).
    pub scale: Option<f64>,
}

/// Evidence that the intended protocol was really used (e.g. Chromium's net log).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProofSpec {
    /// File to search (template).
    pub file: String,
    /// Text that must occur in it.
    pub contains: String,
    /// Explanation shown when it is missing.
    pub missing: String,
}

/// The client role.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientSpec {
    /// Protocols it can request, best first is not required: the runner prefers h3 > h2 > 1.1.
    pub protocols: Vec<Protocol>,
    /// Argument vector (templates).
    pub command: Vec<String>,
    /// Extra environment variables (values are templates).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Directories created (templates) before the client starts.
    #[serde(default)]
    pub mkdirs: Vec<String>,
    /// Where the downloaded byte count comes from.
    pub bytes: MeasureSpec,
    /// Where the download time comes from; absent = the runner times the client process.
    pub seconds: Option<MeasureSpec>,
    /// Optional proof of the protocol used.
    pub proof: Option<ProofSpec>,
}
