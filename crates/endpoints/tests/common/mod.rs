//! Shared helpers for the loopback tests: an in-process server on an ephemeral port.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use endpoints::client::{Client, ClientConfig, ConnPolicy, HttpVersion, RequestSpec};
use endpoints::server::{RunningServer, ServerConfig};

/// All three HTTP versions.
pub const VERSIONS: [HttpVersion; 3] = [HttpVersion::H1, HttpVersion::H2, HttpVersion::H3];

/// Starts a server on 127.0.0.1 with an ephemeral port.
pub async fn server(mut cfg: ServerConfig) -> RunningServer {
    cfg.listen = SocketAddr::from(([127, 0, 0, 1], 0));
    RunningServer::start(cfg).await.expect("server starts")
}

/// A client for `http` with the given policy and the embedded test CA.
pub fn client(http: HttpVersion, policy: ConnPolicy) -> Client {
    Client::new(ClientConfig {
        http,
        policy,
        timeout: Duration::from_secs(20),
        ..ClientConfig::default()
    })
    .expect("client builds")
}

/// The pool policy most tests use.
pub fn pool() -> ConnPolicy {
    ConnPolicy::Pool {
        max_connections: 1,
        max_streams_per_connection: 16,
    }
}

/// `GET https://127.0.0.1:<port>/<path>`.
pub fn get(addr: SocketAddr, path: &str) -> RequestSpec {
    RequestSpec::get(url(addr, path))
}

/// `https://127.0.0.1:<port><path>`.
pub fn url(addr: SocketAddr, path: &str) -> endpoints::http::Uri {
    format!("https://127.0.0.1:{}{path}", addr.port())
        .parse()
        .expect("valid URL")
}
