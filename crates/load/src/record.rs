//! The results record (one per scheduled request) and its JSON-lines and CSV encodings.
//!
//! Times are integer nanoseconds. `intended_ns` and `sent_ns` count from the attack start;
//! `latency_ns` runs from the *intended* time to completion (so a late send adds to it: no
//! coordinated omission) and `service_ns` from the actual send.

use std::io::{BufRead, Write};

use serde::{Deserialize, Serialize};

/// The result of one scheduled request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultRecord {
    /// 0-based request number in the schedule.
    pub seq: u64,
    /// Attack label (`--name`; the sweep uses `h<version>-<rate>`).
    pub attack: String,
    /// Ramp phase label (`step2@100/s`), empty for single-phase ramps.
    pub phase: String,
    /// HTTP version used: `1.1`, `2` or `3`.
    pub http: String,
    /// Intended send time since the attack start.
    pub intended_ns: u64,
    /// Intended send time as Unix time.
    pub intended_unix_ns: u64,
    /// Actual send time since the attack start; `None` when the request was not sent.
    pub sent_ns: Option<u64>,
    /// Sent later than the late threshold after its release time (the intended time plus the
    /// attack's release window; `lateness_ns` is from the intended time).
    pub late: bool,
    /// TCP (or UDP socket) connect time, for requests that opened a connection.
    pub connect_ns: Option<u64>,
    /// TLS handshake time over TCP.
    pub tls_ns: Option<u64>,
    /// QUIC handshake time.
    pub quic_handshake_ns: Option<u64>,
    /// Time to the first response byte, from the actual send.
    pub ttfb_ns: Option<u64>,
    /// From the intended send time to completion (0 when not sent).
    pub latency_ns: u64,
    /// From the actual send to completion.
    pub service_ns: Option<u64>,
    /// Response bytes received (body).
    pub bytes_in: u64,
    /// Request bytes sent (body).
    pub bytes_out: u64,
    /// HTTP status, when a response arrived.
    pub status: Option<u16>,
    /// Whether the request reused an existing connection.
    pub reused: bool,
    /// What went wrong, if anything (including "not sent: …").
    pub error: Option<String>,
}

impl ResultRecord {
    /// Sent, answered with a 2xx or 3xx status, and no error.
    pub fn is_success(&self) -> bool {
        self.sent_ns.is_some()
            && self.error.is_none()
            && self.status.is_some_and(|s| (200..400).contains(&s))
    }

    /// Whether the request was scheduled inside the first `warmup` of its attack (intended send
    /// time before it): such requests wait behind connection set-up and the handshake, and
    /// `--warmup` leaves them out of reports and plots.
    pub fn in_warmup(&self, warmup: std::time::Duration) -> bool {
        u128::from(self.intended_ns) < warmup.as_nanos()
    }

    /// Lateness of the actual send behind the intended time.
    pub fn lateness_ns(&self) -> Option<u64> {
        self.sent_ns.map(|s| s.saturating_sub(self.intended_ns))
    }
}

/// The on-disk encodings of a results stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// One JSON object per line (the default).
    Json,
    /// CSV with a header row.
    Csv,
}

/// A results stream that cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// Reading or writing failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// A JSON line did not parse as a record.
    #[error("line {line}: not a results record: {source}")]
    Json {
        /// 1-based line number.
        line: usize,
        /// The parser's message.
        source: serde_json::Error,
    },
    /// A CSV row did not parse as a record.
    #[error("CSV: {0}")]
    Csv(#[from] csv::Error),
}

/// Writes records in one encoding (CSV writes its header before the first record).
pub struct RecordWriter<W: Write> {
    inner: Inner<W>,
}

enum Inner<W: Write> {
    Json(W),
    // Boxed: the CSV writer carries a large buffer state; keep the enum small.
    Csv(Box<csv::Writer<W>>),
}

impl<W: Write> RecordWriter<W> {
    /// A writer of `encoding` over `out` (give it a buffered writer).
    pub fn new(out: W, encoding: Encoding) -> Self {
        let inner = match encoding {
            Encoding::Json => Inner::Json(out),
            Encoding::Csv => Inner::Csv(Box::new(csv::Writer::from_writer(out))),
        };
        Self { inner }
    }

    /// Appends one record.
    pub fn write(&mut self, record: &ResultRecord) -> Result<(), RecordError> {
        match &mut self.inner {
            Inner::Json(out) => {
                serde_json::to_writer(&mut *out, record).map_err(std::io::Error::from)?;
                out.write_all(b"\n")?;
            }
            Inner::Csv(out) => out.serialize(record)?,
        }
        Ok(())
    }

    /// Flushes buffered output.
    pub fn flush(&mut self) -> Result<(), RecordError> {
        match &mut self.inner {
            Inner::Json(out) => out.flush()?,
            Inner::Csv(out) => out.flush()?,
        }
        Ok(())
    }
}

/// A stream of records read from a file or stdin.
pub type RecordStream = Box<dyn Iterator<Item = Result<ResultRecord, RecordError>>>;

/// Longest line of a records file read back: a record is one request's outcome, well under a
/// kilobyte; a line without end (`/dev/zero` on stdin, a corrupt file) is an error, not a
/// buffer growing until memory runs out.
pub const MAX_RECORD_LINE_BYTES: usize = 1 << 20;

/// Reads records one at a time, detecting JSON lines or CSV from the first byte; a line longer
/// than [`MAX_RECORD_LINE_BYTES`] is an error.
pub fn read_records<R: BufRead + 'static>(input: R) -> Result<RecordStream, RecordError> {
    let mut input = LineLimit {
        inner: input,
        line: 0,
    };
    let first = input.fill_buf()?.iter().find(|b| !b.is_ascii_whitespace());
    match first {
        None => Ok(Box::new(std::iter::empty())),
        Some(b'{') => Ok(Box::new(json_records(input))),
        Some(_) => {
            let mut reader = csv::Reader::from_reader(input);
            // The header is read now: csv's iterator ends silently when the header cannot be
            // read (an endless first line), which must be the stream's error instead.
            reader.headers()?;
            Ok(Box::new(
                reader
                    .into_deserialize::<ResultRecord>()
                    .map(|r| r.map_err(RecordError::from)),
            ))
        }
    }
}

/// A reader that fails when a line grows past [`MAX_RECORD_LINE_BYTES`].
struct LineLimit<R> {
    inner: R,
    /// Bytes consumed since the last newline.
    line: usize,
}

impl<R: BufRead> std::io::Read for LineLimit<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let buf = self.fill_buf()?;
        let n = buf.len().min(out.len());
        out[..n].copy_from_slice(&buf[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for LineLimit<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        let line = self.line;
        let buf = self.inner.fill_buf()?;
        let upto_newline = buf.iter().position(|&b| b == b'\n').unwrap_or(buf.len());
        if line + upto_newline > MAX_RECORD_LINE_BYTES {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("a line longer than {MAX_RECORD_LINE_BYTES} bytes is not a record"),
            ));
        }
        Ok(buf)
    }

    fn consume(&mut self, amt: usize) {
        if let Ok(buf) = self.inner.fill_buf() {
            let taken = &buf[..amt.min(buf.len())];
            self.line = match taken.iter().rposition(|&b| b == b'\n') {
                Some(i) => taken.len() - i - 1,
                None => self.line + taken.len(),
            };
        }
        self.inner.consume(amt);
    }
}

fn json_records<R: BufRead>(input: R) -> impl Iterator<Item = Result<ResultRecord, RecordError>> {
    input
        .lines()
        .enumerate()
        .filter(|(_, line)| line.as_ref().map_or(true, |l| !l.trim().is_empty()))
        .map(|(index, line)| {
            let line = line?;
            serde_json::from_str(&line).map_err(|source| RecordError::Json {
                line: index + 1,
                source,
            })
        })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn a_line_without_end_is_an_error_not_a_growing_buffer() {
        for byte in [b'x', b'{', 0] {
            let endless = std::io::BufReader::new(std::io::repeat(byte));
            let first: Result<(), RecordError> =
                read_records(endless).and_then(|mut records| match records.next() {
                    Some(Err(e)) => Err(e),
                    other => panic!("{other:?}"),
                });
            let err = first.expect_err("endless line");
            assert!(err.to_string().contains("line longer than"), "{err}");
        }
        let ok = "{\"x\":1}\n".repeat(3);
        assert_eq!(
            read_records(std::io::Cursor::new(ok.into_bytes()))
                .expect("records")
                .count(),
            3
        );
    }

    #[test]
    fn warmup_covers_requests_scheduled_before_it() {
        let d = std::time::Duration::from_millis(100);
        // sample(n) is scheduled at n × 10 ms: 0..=9 fall inside the first 100 ms.
        let kept: Vec<u64> = (0..20)
            .map(sample)
            .filter(|r| !r.in_warmup(d))
            .map(|r| r.seq)
            .collect();
        assert_eq!(kept, (10..20).collect::<Vec<_>>());
        assert!(
            !sample(0).in_warmup(std::time::Duration::ZERO),
            "no warm-up drops nothing"
        );
    }

    /// A record with every field set, for encoding tests elsewhere too.
    pub(crate) fn sample(seq: u64) -> ResultRecord {
        ResultRecord {
            seq,
            attack: "h3-100".into(),
            phase: String::new(),
            http: "3".into(),
            intended_ns: seq * 10_000_000,
            intended_unix_ns: 1_700_000_000_000_000_000 + seq * 10_000_000,
            sent_ns: Some(seq * 10_000_000 + 50_000),
            late: false,
            connect_ns: (seq == 0).then_some(120_000),
            tls_ns: None,
            quic_handshake_ns: (seq == 0).then_some(900_000),
            ttfb_ns: Some(700_000),
            latency_ns: 1_000_000 + seq,
            service_ns: Some(950_000 + seq),
            bytes_in: 11_000,
            bytes_out: 0,
            status: Some(200),
            reused: seq > 0,
            error: (seq == 2).then(|| "timeout, \"quoted\"".to_string()),
        }
    }

    fn round_trip(encoding: Encoding) {
        let records: Vec<_> = (0..4).map(sample).collect();
        let mut writer = RecordWriter::new(Vec::new(), encoding);
        for r in &records {
            writer.write(r).unwrap();
        }
        writer.flush().unwrap();
        let bytes = match writer.inner {
            Inner::Json(v) => v,
            Inner::Csv(w) => w.into_inner().unwrap(),
        };
        let back: Vec<_> = read_records(std::io::Cursor::new(bytes))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(back, records);
    }

    #[test]
    fn json_round_trip() {
        round_trip(Encoding::Json);
    }

    #[test]
    fn csv_round_trip() {
        round_trip(Encoding::Csv);
    }

    #[test]
    fn bad_json_names_its_line() {
        let text = format!(
            "{}\n{{\"seq\": \"x\"}}\n",
            serde_json::to_string(&sample(0)).unwrap()
        );
        let results: Vec<_> = read_records(std::io::Cursor::new(text.into_bytes()))
            .unwrap()
            .collect();
        assert!(results[0].is_ok());
        assert!(
            matches!(results[1], Err(RecordError::Json { line: 2, .. })),
            "{:?}",
            results[1]
        );
    }

    #[test]
    fn success_means_sent_ok_status_and_no_error() {
        let mut r = sample(1);
        assert!(r.is_success());
        r.status = Some(503);
        assert!(!r.is_success());
        r.status = Some(200);
        r.sent_ns = None;
        assert!(!r.is_success());
    }
}
