//! Running one request: get a connection per the policy, exchange, time each phase.

use std::sync::Arc;
use std::time::Instant;

use bytes::Buf;
use http::header::{HeaderName, HeaderValue, HOST};
use http_body_util::{BodyExt, Full};

use super::conn::{Conn, Handle};
use super::connect::Target;
use super::pool::Checkout;
use super::{Client, RequestOutcome, RequestSpec};
use crate::body::split_bytes;

/// Runs `req` on `client`, filling `out` as phases complete (so a timeout keeps what was measured).
pub(super) async fn execute(client: &Client, req: &RequestSpec, out: &mut RequestOutcome) {
    let target = match client.inner.target(&req.url).await {
        Ok(t) => t,
        Err(e) => {
            out.error = Some(e);
            return;
        }
    };
    let Some(pool) = &client.pool else {
        out.started = Instant::now();
        let conn = match client.inner.open(&target, out).await {
            Ok(c) => Arc::new(c),
            Err(e) => {
                out.error = Some(e);
                return;
            }
        };
        out.connection_id = conn.id;
        let result = exchange(&conn, &target, req, true, out).await;
        if client.collect_stats {
            out.transport = conn.snapshot();
        }
        conn.close();
        if let Err(e) = result {
            out.error = Some(e);
        }
        return;
    };
    let lease = match pool.checkout().await {
        Checkout::Reuse(lease) => {
            out.started = Instant::now();
            out.reused_connection = true;
            lease
        }
        Checkout::Open(permit) => {
            out.started = Instant::now();
            match client.inner.open(&target, out).await {
                Ok(c) => pool.add(permit, c),
                Err(e) => {
                    out.error = Some(e);
                    return;
                }
            }
        }
    };
    out.connection_id = lease.conn.id;
    let result = exchange(&lease.conn, &target, req, false, out).await;
    if client.collect_stats {
        out.transport = lease.conn.snapshot();
    }
    if let Err(e) = result {
        out.error = Some(e);
        // An HTTP/1.1 connection with a half-finished exchange cannot be reused; for HTTP/2 and
        // HTTP/3 a failed stream leaves the connection usable unless it is closed.
        if matches!(lease.conn.handle, Handle::H1(_)) || lease.conn.is_closed() {
            pool.discard(&lease.conn);
        }
    }
}

fn build_request<B>(
    target: &Target,
    req: &RequestSpec,
    origin_form: bool,
    body: B,
) -> Result<http::Request<B>, String> {
    let uri: http::Uri = if origin_form {
        req.url
            .path_and_query()
            .map(|p| p.as_str())
            .unwrap_or("/")
            .parse()
            .map_err(|e| format!("bad path: {e}"))?
    } else {
        req.url.clone()
    };
    let mut r = http::Request::builder().method(req.method.clone()).uri(uri);
    if origin_form {
        r = r.header(HOST, target.authority.as_str());
    }
    if !req.body.is_empty() {
        r = r.header(http::header::CONTENT_LENGTH, req.body.len());
    }
    for (k, v) in &req.headers {
        let name =
            HeaderName::from_bytes(k.as_bytes()).map_err(|e| format!("header {k:?}: {e}"))?;
        let value = HeaderValue::from_str(v).map_err(|e| format!("header {k:?}: {e}"))?;
        r = r.header(name, value);
    }
    r.body(body).map_err(|e| format!("bad request: {e}"))
}

/// One request/response exchange on an open connection. `last`: no request follows, so an
/// HTTP/1.1 request asks the server to close first (keeping TIME_WAIT, and the port shortage it
/// causes at high connection rates, on the server side).
async fn exchange(
    conn: &Conn,
    target: &Target,
    req: &RequestSpec,
    last: bool,
    out: &mut RequestOutcome,
) -> Result<(), String> {
    match &conn.handle {
        Handle::H1(slot) => {
            let mut sender = slot
                .lock()
                .ok()
                .and_then(|mut g| g.take())
                .ok_or("HTTP/1.1 connection busy")?;
            sender
                .ready()
                .await
                .map_err(|e| format!("connection not ready: {e}"))?;
            let mut request = build_request(target, req, true, Full::new(req.body.clone()))?;
            if last {
                request
                    .headers_mut()
                    .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
            }
            let resp = sender
                .send_request(request)
                .await
                .map_err(|e| format!("request failed: {e}"))?;
            read_hyper_response(resp, req, out).await?;
            if let Ok(mut g) = slot.lock() {
                *g = Some(sender);
            }
            Ok(())
        }
        Handle::H2(sender) => {
            let mut sender = sender.lock().map_err(|_| "sender lock poisoned")?.clone();
            sender
                .ready()
                .await
                .map_err(|e| format!("connection not ready: {e}"))?;
            let request = build_request(target, req, false, Full::new(req.body.clone()))?;
            let resp = sender
                .send_request(request)
                .await
                .map_err(|e| format!("request failed: {e}"))?;
            read_hyper_response(resp, req, out).await
        }
        Handle::H3 { sender, .. } => {
            let mut sender = sender.lock().map_err(|_| "sender lock poisoned")?.clone();
            let request = build_request(target, req, false, ())?;
            let mut stream = sender
                .send_request(request)
                .await
                .map_err(|e| format!("request failed: {e}"))?;
            // A server may answer before reading the whole request and stop our sending side
            // (RFC 9114 §4.1); the response still counts, so a send failure is only fatal when
            // no response follows.
            let mut send_error = None;
            for part in split_bytes(&req.body) {
                let n = part.len() as u64;
                if let Err(e) = stream.send_data(part).await {
                    send_error = Some(format!("sending body: {e}"));
                    break;
                }
                out.bytes_out += n;
            }
            if send_error.is_none() {
                if let Err(e) = stream.finish().await {
                    send_error = Some(format!("finishing request: {e}"));
                }
            }
            let resp = stream
                .recv_response()
                .await
                .map_err(|e| match &send_error {
                    Some(send) => format!("{send}; no response: {e}"),
                    None => format!("no response: {e}"),
                })?;
            out.ttfb = Some(out.started.elapsed());
            out.status = Some(resp.status().as_u16());
            while let Some(chunk) = stream
                .recv_data()
                .await
                .map_err(|e| format!("receiving body: {e}"))?
            {
                out.bytes_in += chunk.remaining() as u64;
            }
            Ok(())
        }
    }
}

async fn read_hyper_response(
    resp: http::Response<hyper::body::Incoming>,
    req: &RequestSpec,
    out: &mut RequestOutcome,
) -> Result<(), String> {
    // hyper only answers after the request body went out.
    out.bytes_out = req.body.len() as u64;
    out.ttfb = Some(out.started.elapsed());
    out.status = Some(resp.status().as_u16());
    let mut body = resp.into_body();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("receiving body: {e}"))?;
        if let Some(d) = frame.data_ref() {
            out.bytes_in += d.len() as u64;
        }
    }
    Ok(())
}
