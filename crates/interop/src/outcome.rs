//! Reading what a client reports: downloaded bytes, download time, proof of protocol.

use std::time::Duration;

use crate::spec::{ClientSpec, MeasureSpec, Stream};
use crate::template::Vars;

/// Where a download time came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeSource {
    /// The client's own measurement.
    Peer,
    /// The runner's clock around the client process (includes process start-up).
    Runner,
}

/// A successful, checked download.
#[derive(Debug, Clone, PartialEq)]
pub struct Download {
    /// Body bytes received.
    pub bytes: u64,
    /// Download time in seconds.
    pub seconds: f64,
    /// Who measured `seconds`.
    pub time_source: TimeSource,
}

/// What a finished client process left behind.
#[derive(Debug, Clone, Copy)]
pub struct ClientRun<'a> {
    /// Its stdout.
    pub stdout: &'a str,
    /// Its stderr.
    pub stderr: &'a str,
    /// Exit code (`None`: killed by a signal or unknown).
    pub exit_code: Option<i32>,
    /// Wall time of the process as seen by the runner.
    pub elapsed: Duration,
}

/// Checks a client's run against the expected size; `Err` is a short reason for the matrix.
pub fn read_download(
    spec: &ClientSpec,
    vars: &Vars,
    run: &ClientRun<'_>,
    expected: u64,
) -> Result<Download, String> {
    let json = last_json_object(run.stdout);
    if let Some(obj) = &json {
        // Clients that report their own verdict: quiclab get {"ok": false, "error": ...},
        // the quic-go client {"status": 404}.
        if let Some(err) = obj
            .get("error")
            .and_then(|e| e.as_str())
            .filter(|e| !e.is_empty())
        {
            return Err(short(err));
        }
        if obj.get("ok").and_then(|v| v.as_bool()) == Some(false) {
            return Err("client reported ok=false".into());
        }
        if let Some(status) = obj.get("status").and_then(|v| v.as_u64()) {
            if status != 200 {
                return Err(format!("HTTP status {status}"));
            }
        }
    }
    if run.exit_code != Some(0) {
        let code = run
            .exit_code
            .map_or("a signal".to_owned(), |c| c.to_string());
        let last = last_line(run.stderr).or_else(|| last_line(run.stdout));
        return Err(match last {
            Some(l) => format!("exit {code}: {}", short(l)),
            None => format!("exit {code}"),
        });
    }
    let bytes =
        measure(&spec.bytes, vars, run, json.as_ref(), None).map_err(|e| format!("bytes: {e}"))?;
    // Integral byte counts only; a fractional value would be a misread field.
    if bytes < 0.0 || bytes.fract() != 0.0 {
        return Err(format!("bytes: {bytes} is not a byte count"));
    }
    let bytes = bytes as u64;
    if bytes != expected {
        return Err(format!("got {bytes} of {expected} bytes"));
    }
    if let Some(proof) = &spec.proof {
        let file = vars.render(&proof.file).map_err(|e| e.to_string())?;
        // Regular files only, bounded: the file is the peer's log (a netlog is tens of MB).
        let text = fsutil::read_bounded(std::path::Path::new(&file), 1 << 30).unwrap_or_default();
        if !contains(&text, proof.contains.as_bytes()) {
            return Err(proof.missing.clone());
        }
    }
    let (seconds, time_source) = match &spec.seconds {
        Some(m) => (
            measure(m, vars, run, json.as_ref(), Some(bytes))
                .map_err(|e| format!("seconds: {e}"))?,
            TimeSource::Peer,
        ),
        None => (run.elapsed.as_secs_f64(), TimeSource::Runner),
    };
    if !(seconds.is_finite() && seconds > 0.0) {
        return Err(format!("seconds: {seconds} is not a duration"));
    }
    Ok(Download {
        bytes,
        seconds,
        time_source,
    })
}

fn measure(
    m: &MeasureSpec,
    vars: &Vars,
    run: &ClientRun<'_>,
    json: Option<&serde_json::Map<String, serde_json::Value>>,
    bytes: Option<u64>,
) -> Result<f64, String> {
    let raw = if let Some(key) = &m.json {
        let obj = json.ok_or("no JSON object on stdout")?;
        obj.get(key)
            .and_then(|v| v.as_f64())
            .ok_or_else(|| format!("no number {key:?} in the JSON output"))?
    } else if let Some(file) = &m.file {
        let path = vars.render(file).map_err(|e| e.to_string())?;
        std::fs::metadata(&path)
            .map_err(|e| format!("{path}: {e}"))?
            .len() as f64
    } else if let Some(pattern) = &m.regex {
        let re = regex::Regex::new(pattern).map_err(|e| e.to_string())?;
        let text = match m.stream {
            Stream::Stdout => run.stdout,
            Stream::Stderr => run.stderr,
        };
        let caps = re
            .captures_iter(text)
            .last()
            .ok_or_else(|| format!("no match for {pattern:?}"))?;
        if let Some(v) = caps.name("value") {
            v.as_str().parse::<f64>().map_err(|e| e.to_string())?
        } else {
            // Only throughput was printed: time = bits / rate.
            let mbps: f64 = caps
                .name("mbps")
                .ok_or("regex matched without a value")?
                .as_str()
                .parse()
                .map_err(|e: std::num::ParseFloatError| e.to_string())?;
            let bytes = bytes.ok_or("mbps needs the byte count")?;
            bytes as f64 * 8.0 / (mbps * 1e6)
        }
    } else {
        return Err("no source".into());
    };
    Ok(raw * m.scale.unwrap_or(1.0))
}

/// The last line of `text` that is a JSON object (clients may print logs before it).
fn last_json_object(text: &str) -> Option<serde_json::Map<String, serde_json::Value>> {
    text.lines().rev().find_map(|l| {
        let l = l.trim();
        if !l.starts_with('{') {
            return None;
        }
        match serde_json::from_str::<serde_json::Value>(l) {
            Ok(serde_json::Value::Object(m)) => Some(m),
            _ => None,
        }
    })
}

fn last_line(text: &str) -> Option<&str> {
    text.lines().map(str::trim).rfind(|l| !l.is_empty())
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// Keeps matrix cells readable.
fn short(text: &str) -> String {
    const MAX: usize = 80;
    let t = text.trim();
    if t.chars().count() <= MAX {
        t.to_owned()
    } else {
        t.chars().take(MAX).collect::<String>() + "…"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peer_files::parse_str;
    use std::path::Path;

    fn client(extra: &str) -> ClientSpec {
        let text =
            format!("name = \"c\"\n[client]\nprotocols = [\"h3\"]\ncommand = [\"c\"]\n{extra}\n");
        parse_str(&text, Path::new("c.toml"), Path::new("."))
            .unwrap()
            .spec
            .client
            .unwrap()
    }

    fn run<'a>(stdout: &'a str, stderr: &'a str, code: i32) -> ClientRun<'a> {
        ClientRun {
            stdout,
            stderr,
            exit_code: Some(code),
            elapsed: Duration::from_millis(1500),
        }
    }

    #[test]
    fn json_bytes_and_seconds() {
        let c = client("bytes = { json = \"bytes\" }\nseconds = { json = \"seconds\" }");
        let out = "log line\n{\"bytes\":1000,\"seconds\":0.25,\"status\":200}\n";
        let d = read_download(&c, &Vars::default(), &run(out, "", 0), 1000).unwrap();
        assert_eq!(d.bytes, 1000);
        assert_eq!(d.seconds, 0.25);
        assert_eq!(d.time_source, TimeSource::Peer);
    }

    #[test]
    fn short_body_fails() {
        let c = client("bytes = { json = \"bytes\" }");
        let out = "{\"bytes\":999}";
        let err = read_download(&c, &Vars::default(), &run(out, "", 0), 1000).unwrap_err();
        assert_eq!(err, "got 999 of 1000 bytes");
    }

    #[test]
    fn runner_time_is_the_fallback() {
        let c = client("bytes = { json = \"bytes\" }");
        let d = read_download(&c, &Vars::default(), &run("{\"bytes\":5}", "", 0), 5).unwrap();
        assert_eq!(d.seconds, 1.5);
        assert_eq!(d.time_source, TimeSource::Runner);
    }

    #[test]
    fn regex_with_mbps_converts_to_seconds() {
        let c = client(
            "bytes = { regex = ': (?P<value>[0-9]+) bytes', stream = \"stderr\" }\n\
             seconds = { regex = '\\((?P<mbps>[0-9.]+) Mbps\\)', stream = \"stderr\" }",
        );
        let err = "INFO Response received for GET /1000000 : 1000000 bytes in 0.8 s (10.000 Mbps)";
        let d = read_download(&c, &Vars::default(), &run("", err, 0), 1_000_000).unwrap();
        assert!((d.seconds - 0.8).abs() < 1e-9, "{}", d.seconds);
    }

    #[test]
    fn nonzero_exit_reports_last_stderr_line() {
        let c = client("bytes = { json = \"bytes\" }");
        let err = read_download(
            &c,
            &Vars::default(),
            &run("", "a\nconnection refused\n", 3),
            1,
        )
        .unwrap_err();
        assert_eq!(err, "exit 3: connection refused");
    }

    #[test]
    fn http_error_status_fails() {
        let c = client("bytes = { json = \"bytes\" }");
        let out = "{\"bytes\":28,\"status\":404}";
        let err = read_download(&c, &Vars::default(), &run(out, "", 1), 28).unwrap_err();
        assert_eq!(err, "HTTP status 404");
    }

    #[test]
    fn file_size_and_missing_proof() {
        let tmp = fsutil::PrivateDir::new("quiclab-outcome-").unwrap();
        let dir = tmp.path();
        std::fs::write(dir.join("body"), vec![b'x'; 42]).unwrap();
        std::fs::write(dir.join("netlog.json"), "HTTP2_SESSION").unwrap();
        let mut vars = Vars::default();
        vars.set("out_dir", dir.to_string_lossy());
        let c = client(
            "bytes = { file = \"{out_dir}/body\" }\n\
             proof = { file = \"{out_dir}/netlog.json\", contains = \"QUIC_SESSION\", missing = \"no QUIC\" }",
        );
        let err = read_download(&c, &vars, &run("", "", 0), 42).unwrap_err();
        assert_eq!(err, "no QUIC");
        std::fs::write(dir.join("netlog.json"), "x QUIC_SESSION y").unwrap();
        assert_eq!(
            read_download(&c, &vars, &run("", "", 0), 42).unwrap().bytes,
            42
        );
        tmp.remove().unwrap();
    }
}
