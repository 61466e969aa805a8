//! `quiclab load`: open-model constant-rate HTTP/1.1, HTTP/2 and HTTP/3 load testing, in
//! vegeta's pipeline shape — `attack` writes a results stream; `report`, `plot` and `encode`
//! read it; `sweep` runs one attack per (rate, HTTP version) and tabulates them.
//!
//! All the work is in the `load` crate (a sweep is `load::sweep::run`); this module parses
//! arguments and wires files, the terminal and Ctrl-C to it. With `--via SCENARIO`, `attack` and
//! `sweep` run through an emulated path against a server peer (`interop::via`, flags in
//! `via_args`).

use std::io::{BufRead, BufReader, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::{Args, Subcommand, ValueEnum};

use endpoints::client::{ClientConfig, ConnPolicy, HttpVersion, PoolGrowth, TlsOptions};
use endpoints::quic::{QuicConfig, QuicKnobs};
use load::attack::{AttackPlan, Sink};
use load::live::LiveStats;
use load::metrics::{Metrics, Summary};
use load::record::{read_records, Encoding, RecordStream, RecordWriter};
use load::schedule::{Ramp, Retention, Schedule};
use load::targets::{parse_header, parse_method, parse_url, read_targets_file, Method, Target};
use load::units::{parse_duration, Rate};

use crate::cmd_plot::PlotSize;
use crate::exit::{self, Exit};
use crate::interrupt;
use crate::via_args::{self, ViaArgs};
use interop::via::EmulatedPath;

/// Options of `quiclab load`.
#[derive(Debug, Clone, Args)]
pub struct LoadArgs {
    #[command(subcommand)]
    command: LoadCommand,
}

#[derive(Debug, Clone, Subcommand)]
enum LoadCommand {
    /// Send requests at a constant (or ramped) rate and stream one result record per request.
    Attack(AttackArgs),
    /// Summarise results (files or stdin): rates, latency percentiles, phases, errors.
    Report(ReportArgs),
    /// Plot latency over time as a self-contained SVG (or HTML); one series per results file.
    Plot(PlotArgs),
    /// Convert results between JSON lines and CSV.
    Encode(EncodeArgs),
    /// Run one attack per (rate, HTTP version) and tabulate them (seed 004's experiment).
    Sweep(SweepArgs),
    /// Put a study's `paper.toml` beside the tables its sweeps wrote (relative differences and
    /// a verdict per value, into DIR/paper.md).
    Paper(crate::cmd_load_paper::PaperArgs),
}

/// What to send.
#[derive(Debug, Clone, Args)]
struct TargetArgs {
    /// Target URLs (https://host:port/path), used round-robin.
    urls: Vec<String>,
    /// Targets file in vegeta's http format (see docs/load.md).
    #[arg(long, value_name = "FILE")]
    targets: Option<PathBuf>,
    /// Method for URLs given on the command line.
    #[arg(long, default_value = "GET", value_parser = parse_method)]
    method: Method,
    /// Extra header for every request, `Name: value` (repeatable).
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE", value_parser = parse_header)]
    headers: Vec<(String, String)>,
    /// Request body file for URLs given on the command line.
    #[arg(long, value_name = "FILE")]
    body: Option<PathBuf>,
}

/// How to connect and when to give up.
#[derive(Debug, Clone, Args)]
struct ClientArgs {
    /// HTTP/3: IP MTU of the first packets (UDP payload = MTU − 28); quinn then probes upwards to
    /// 1452-byte payloads. 1228 (1200-byte payloads) is what every QUIC server accepts: quic-go, for
    /// one, silently drops Initials larger than 1452 bytes, so a 1500 start never connects to it.
    #[arg(long, value_name = "BYTES", default_value_t = 1228)]
    quic_mtu: u16,
    /// Connections in the pool [default: 64 for HTTP/1.1, 4 for HTTP/2 and HTTP/3; HTTP/2 and
    /// HTTP/3 requests are dealt round-robin over all of them].
    #[arg(long, value_name = "N")]
    connections: Option<usize>,
    /// When the pool opens another connection while all are busy: `patient` only for a request
    /// that has waited as long as opening one takes lately (the pool grows to what the rate
    /// needs); `eager` for every request that finds none free, as browsers do (at start-up
    /// that opens one per request due during the first handshakes, up to --connections).
    /// Matters for HTTP/1.1, whose pool is shared; HTTP/2 and HTTP/3 clients have one
    /// connection each.
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = Growth::Patient)]
    pool_growth: Growth,
    /// Concurrent streams per HTTP/2 or HTTP/3 connection.
    #[arg(long, value_name = "N", default_value_t = 100)]
    streams: usize,
    /// Attack threads, each with its own connections, timer and histograms [default: one per
    /// core; HTTP/2 and HTTP/3 use at most one per connection].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    threads: Option<u16>,
    /// Open a fresh connection (full handshake) for every request.
    #[arg(long, conflicts_with_all = ["connections"])]
    new_connection_per_request: bool,
    /// CA certificate (PEM) that signs the server certificate [default: the repository's test CA].
    #[arg(long, value_name = "FILE")]
    ca: Option<PathBuf>,
    /// Accept any server certificate.
    #[arg(long)]
    insecure: bool,
    /// TLS server name to send and verify [default: the URL's host].
    #[arg(long, value_name = "NAME")]
    server_name: Option<String>,
    /// Append TLS secrets (NSS key-log format) to this file, for decrypting captures.
    #[arg(long, value_name = "FILE")]
    keylog: Option<PathBuf>,
    /// Per-request limit, from the send to the last byte.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    timeout: Duration,
    /// Most requests in flight; a due request beyond it is not sent and recorded as such.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    max_inflight: usize,
    /// A request sent more than this after its release time (intended time plus
    /// --release-window) counts as "not sent on time".
    #[arg(long, default_value = "10ms", value_parser = parse_duration)]
    late_threshold: Duration,
    /// Hold a due request back up to this long to release it with the ones due after it
    /// (0 to 10ms): fewer wake-ups and less CPU per request, up to this much more latency.
    #[arg(long, value_name = "D", default_value = "0s", value_parser = release_window)]
    release_window: Duration,
}

/// `--release-window`: a duration within `load::attack::MAX_RELEASE_WINDOW`.
fn release_window(text: &str) -> Result<Duration, String> {
    let d = parse_duration(text).map_err(|e| e.to_string())?;
    if d > load::attack::MAX_RELEASE_WINDOW {
        return Err(format!(
            "{text}: allowed 0 to {:?}",
            load::attack::MAX_RELEASE_WINDOW
        ));
    }
    Ok(d)
}

#[derive(Debug, Clone, Args)]
struct AttackArgs {
    #[command(flatten)]
    targets: TargetArgs,
    #[command(flatten)]
    client: ClientArgs,
    /// HTTP version: 1.1, 2 or 3.
    #[arg(long = "http", default_value = "1.1", value_parser = HttpVersion::parse)]
    http: HttpVersion,
    /// Request rate: 100/s, 100/1s, 6000/1m, 5/500ms.
    #[arg(long, default_value = "50/s", value_parser = Rate::parse)]
    rate: Rate,
    /// Rate ramp instead of --rate: linear:FROM-TO (over --duration) or steps:R1,R2,...@STEP.
    #[arg(long, value_parser = ramp)]
    ramp: Option<Ramp>,
    /// Attack duration (required unless --requests or a steps ramp bounds the attack).
    #[arg(long, value_parser = parse_duration)]
    duration: Option<Duration>,
    /// Stop after this many requests.
    #[arg(long, value_name = "N")]
    requests: Option<u64>,
    /// Results file [default: stdout when it is not a terminal; on a terminal only the report].
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Encoding of the results stream.
    #[arg(long, value_enum, default_value_t = Format::Json)]
    format: Format,
    /// Attack label written into every record.
    #[arg(long, default_value = "attack")]
    name: String,
    #[command(flatten)]
    via: ViaArgs,
    /// Write the attack's summary (as `report --type json`) to FILE at the end; without
    /// --output no results stream is written then (long or fast attacks keep only histograms).
    #[arg(long, value_name = "FILE")]
    summary: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
struct ReportArgs {
    /// Results files (JSON lines or CSV); none or `-` reads stdin.
    inputs: Vec<PathBuf>,
    /// Report type.
    #[arg(long = "type", value_enum, default_value_t = ReportKind::Text)]
    kind: ReportKind,
    /// Also print a cumulative report each time the intended send times pass another DURATION.
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    every: Option<Duration>,
    /// Leave out requests scheduled in the first D of each attack (the first requests wait
    /// behind connection set-up and the handshake), e.g. `--warmup 2s`.
    #[arg(long, value_parser = parse_duration, value_name = "D")]
    warmup: Option<Duration>,
}

#[derive(Debug, Clone, Args)]
struct PlotArgs {
    /// Results files, one series each (named after the file).
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// What to draw: latency over time, or the latency CDF (log latency axis, percentiles in
    /// the legend).
    #[arg(long, value_enum, default_value_t = PlotKind::Time)]
    kind: PlotKind,
    /// Plot title [default: "Latency over time" / "Latency CDF"].
    #[arg(long)]
    title: Option<String>,
    /// Leave out requests scheduled in the first D of each attack, e.g. `--warmup 2s`.
    #[arg(long, value_parser = parse_duration, value_name = "D")]
    warmup: Option<Duration>,
    /// Output file [default: stdout].
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
    /// svg or html [default: from the output file's extension, else svg].
    #[arg(long, value_enum)]
    format: Option<PlotFormat>,
    /// Figure size; print sizes leave the title and footnote to the paper's caption.
    #[arg(long, value_enum, default_value_t = PlotSize::Screen)]
    size: PlotSize,
}

#[derive(Debug, Clone, Args)]
struct EncodeArgs {
    /// Results files; none or `-` reads stdin.
    inputs: Vec<PathBuf>,
    /// Target encoding.
    #[arg(long, value_enum)]
    to: Format,
    /// Output file [default: stdout].
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
struct SweepArgs {
    #[command(flatten)]
    targets: TargetArgs,
    #[command(flatten)]
    client: ClientArgs,
    /// Comma-separated rates (requests per second, or rate syntax such as 6000/1m).
    #[arg(long, value_delimiter = ',', value_parser = Rate::parse, required = true)]
    rates: Vec<Rate>,
    /// Comma-separated HTTP versions.
    #[arg(long = "http", value_delimiter = ',', default_value = "1.1,2,3", value_parser = HttpVersion::parse)]
    http: Vec<HttpVersion>,
    /// Duration of each attack.
    #[arg(long, value_parser = parse_duration)]
    duration: Duration,
    /// Directory for the results files and table.csv / table.md.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Pause between attacks (lets connections and server queues drain).
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pause: Duration,
    #[command(flatten)]
    via: ViaArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Growth {
    Patient,
    Eager,
}

impl From<Growth> for PoolGrowth {
    fn from(g: Growth) -> Self {
        match g {
            Growth::Patient => PoolGrowth::Patient,
            Growth::Eager => PoolGrowth::Eager,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Json,
    Csv,
}

impl From<Format> for Encoding {
    fn from(f: Format) -> Self {
        match f {
            Format::Json => Encoding::Json,
            Format::Csv => Encoding::Csv,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ReportKind {
    Text,
    Json,
    Hdr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum PlotKind {
    /// Latency against intended send time (linear axes).
    Time,
    /// Empirical CDF of the latency of successful requests, log latency axis.
    Cdf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum PlotFormat {
    Svg,
    Html,
}

fn ramp(text: &str) -> Result<Ramp, String> {
    Ramp::parse(text).map_err(|e| e.to_string())
}

/// Runs `quiclab load`.
pub fn run(args: &LoadArgs) -> anyhow::Result<Exit> {
    match &args.command {
        LoadCommand::Attack(a) => attack(a),
        LoadCommand::Report(a) => report(a),
        LoadCommand::Plot(a) => plot(a),
        LoadCommand::Encode(a) => encode(a),
        LoadCommand::Sweep(a) => sweep(a),
        LoadCommand::Paper(a) => crate::cmd_load_paper::run(a),
    }
}

/// The targets from a targets file and/or the URLs on the command line.
fn targets(args: &TargetArgs) -> anyhow::Result<Vec<Target>> {
    let mut out = match &args.targets {
        Some(file) => read_targets_file(file)?,
        None => Vec::new(),
    };
    let body: Vec<u8> = match &args.body {
        Some(path) => fsutil::read_input_bounded(path, load::targets::MAX_BODY_BYTES)
            .with_context(|| format!("cannot read body {}", path.display()))?,
        None => Vec::new(),
    };
    for url in &args.urls {
        out.push(Target {
            method: args.method.clone(),
            url: parse_url(url).map_err(anyhow::Error::msg)?,
            headers: Vec::new(),
            body: body.clone().into(),
        });
    }
    if out.is_empty() {
        bail!("no targets: give URLs or --targets FILE");
    }
    for t in &mut out {
        t.headers.extend(args.headers.iter().cloned());
    }
    Ok(out)
}

/// Attack threads: `--threads`, or one per core.
fn threads(args: &ClientArgs) -> usize {
    args.threads
        .map_or_else(load::client::default_threads, usize::from)
}

fn client_config(args: &ClientArgs, http: HttpVersion) -> ClientConfig {
    let policy = if args.new_connection_per_request {
        ConnPolicy::PerRequest
    } else {
        // HTTP/1.1: 64 (was 256). On two loopback cores shared with the server, a 256-connection
        // pool at 48-52k req/s collapsed to 100+ ms medians in half the attacks where 64 held
        // 0.2-0.3 ms, and its ceiling was 44-52k against 62k; the patient pool needs only a few
        // at 10k req/s. A slow path needs rate × response time of them: `--connections`.
        let default_connections = if http == HttpVersion::H1 { 64 } else { 4 };
        ConnPolicy::Pool {
            max_connections: args.connections.unwrap_or(default_connections),
            max_streams_per_connection: args.streams,
        }
    };
    ClientConfig {
        http,
        tls: TlsOptions {
            ca: args.ca.clone(),
            insecure: args.insecure,
            keylog: args.keylog.clone(),
            server_name: args.server_name.clone(),
        },
        policy,
        pool_growth: args.pool_growth.into(),
        timeout: args.timeout,
        quic: QuicConfig {
            knobs: QuicKnobs {
                mtu: args.quic_mtu,
                mtu_discovery: true,
                ..QuicKnobs::default()
            },
            ..QuicConfig::default()
        },
        ..ClientConfig::default()
    }
}

fn plan(
    name: String,
    http: HttpVersion,
    schedule: Schedule,
    targets: Vec<Target>,
    client: &ClientArgs,
) -> AttackPlan {
    AttackPlan {
        name,
        http: http.label().to_string(),
        schedule,
        targets,
        max_inflight: client.max_inflight,
        late_threshold: client.late_threshold,
        // The attack enforces the limit for all requests (the client then keeps no timer per
        // request; see `load::client::EndpointsRequester`).
        timeout: client.timeout,
        release_window: client.release_window,
    }
}

/// A flag that turns true on Ctrl-C (the shared handler: first press stops scheduling), or on
/// SIGTERM once `--via` has installed the emulator's handler.
fn stop_flag() -> anyhow::Result<Arc<AtomicBool>> {
    interrupt::install()?;
    let flag = Arc::new(AtomicBool::new(false));
    let watched = flag.clone();
    std::thread::spawn(move || {
        while !interrupt::requested() && !emu::term_requested() {
            std::thread::sleep(Duration::from_millis(50));
        }
        watched.store(true, Ordering::SeqCst);
    });
    Ok(flag)
}

/// Redraws the live line on stderr every second while `f` runs (only on a terminal).
fn with_progress<T>(live: &Arc<LiveStats>, f: impl FnOnce() -> T) -> T {
    if !std::io::stderr().is_terminal() {
        return f();
    }
    let done = Arc::new(AtomicBool::new(false));
    let printer = {
        let (live, done) = (live.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                eprint!("\r{}", live.line());
                for _ in 0..10 {
                    if done.load(Ordering::SeqCst) {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
            eprintln!("\r{}", live.line());
        })
    };
    let out = f();
    done.store(true, Ordering::SeqCst);
    let _ = printer.join();
    out
}

fn create(path: &Path) -> anyhow::Result<Box<dyn Write + Send>> {
    let file = fsutil::create_replacing(path, fsutil::OUTPUT_MODE)
        .with_context(|| format!("cannot create {}", path.display()))?;
    Ok(Box::new(BufWriter::new(file)))
}

fn attack(args: &AttackArgs) -> anyhow::Result<Exit> {
    let ramp = args.ramp.clone().unwrap_or(Ramp::Constant(args.rate));
    let to_stdout =
        args.output.is_none() && args.summary.is_none() && !std::io::stdout().is_terminal();
    // An attack that writes no record per request keeps constant memory and disk, so it is
    // bounded in time (an hour at the rate cap) rather than by the records file's size.
    let retention = if args.output.is_some() || to_stdout {
        Retention::Records
    } else {
        Retention::Summary
    };
    let schedule = match Schedule::keeping(ramp, args.duration, args.requests, retention) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(exit::BAD_INPUT);
        }
    };
    let path = match open_path(&args.via, &[args.http])? {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    let targets = match &path {
        Some(p) => vec![via_target(&args.targets, p)?],
        None => targets(&args.targets)?,
    };
    let sink: Sink = match (&args.output, to_stdout) {
        (Some(path), _) => Some(RecordWriter::new(create(path)?, args.format.into())),
        (None, true) => Some(RecordWriter::new(
            Box::new(BufWriter::new(std::io::stdout())),
            args.format.into(),
        )),
        (None, false) => None,
    };
    let plan = plan(
        args.name.clone(),
        args.http,
        schedule,
        targets,
        &args.client,
    );
    let config = client_config(&args.client, args.http);
    let live = Arc::new(LiveStats::new());
    let stop = stop_flag()?;
    let run = || {
        with_progress(&live, || {
            load::client::run_blocking(
                plan,
                config,
                threads(&args.client),
                sink,
                live.clone(),
                stop.clone(),
            )
        })
    };
    let summary = match path {
        None => run()?,
        Some(path) => {
            let summary = path.run(run);
            let counters = path.close()?;
            eprintln!("{}", interop::via::summary_line(&counters));
            summary??
        }
    };
    if let Some(path) = &args.summary {
        fsutil::write_atomic(path, load::report::json(&summary).as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if sink_was_terminal(args) {
        print!("{}", load::report::text(&summary));
    }
    Ok(stopped_code())
}

/// The exit code of a load command that ran to its end or was stopped.
fn stopped_code() -> Exit {
    if emu::term_requested() {
        exit::TERMINATED
    } else if interrupt::requested() {
        exit::INTERRUPTED
    } else {
        exit::SUCCESS
    }
}

/// With `--via`, the emulated path and its server (`Ok(Err(code))`: bad input, reported).
fn open_path(
    via: &ViaArgs,
    http: &[endpoints::client::HttpVersion],
) -> anyhow::Result<Result<Option<EmulatedPath>, Exit>> {
    match via_args::open(via, http)? {
        Ok(p) => Ok(Ok(p)),
        Err(e) => {
            eprintln!("error: {e}");
            Ok(Err(exit::BAD_INPUT))
        }
    }
}

/// The one target of a `--via` attack: GET the server peer's page, with `-H` headers.
fn via_target(args: &TargetArgs, path: &EmulatedPath) -> anyhow::Result<Target> {
    Ok(Target {
        method: Method::GET,
        url: parse_url(&path.url).map_err(anyhow::Error::msg)?,
        headers: args.headers.clone(),
        body: Vec::new().into(),
    })
}

/// No results stream was written: the report goes to the terminal instead.
fn sink_was_terminal(args: &AttackArgs) -> bool {
    args.output.is_none() && std::io::stdout().is_terminal()
}

/// Opens every input (or stdin) as one stream of records, in order.
fn records(inputs: &[PathBuf]) -> anyhow::Result<Vec<(String, RecordStream)>> {
    let stdin = [PathBuf::from("-")];
    let inputs = if inputs.is_empty() {
        &stdin[..]
    } else {
        inputs
    };
    inputs
        .iter()
        .map(|path| {
            let reader: Box<dyn BufRead> = if path == Path::new("-") {
                Box::new(std::io::stdin().lock())
            } else {
                let file = fsutil::open_input(path)
                    .with_context(|| format!("cannot open {}", path.display()))?;
                Box::new(BufReader::new(file))
            };
            let name = path.display().to_string();
            let iter = read_records(reader).with_context(|| format!("reading {name}"))?;
            Ok((name, iter))
        })
        .collect()
}

fn print_report(kind: ReportKind, metrics: &Metrics, summary: &Summary) {
    match kind {
        ReportKind::Text => print!("{}", load::report::text(summary)),
        ReportKind::Json => print!("{}", load::report::json(summary)),
        ReportKind::Hdr => print!("{}", load::report::hdr(metrics.latency_histogram())),
    }
}

fn report(args: &ReportArgs) -> anyhow::Result<Exit> {
    let mut metrics = Metrics::new();
    let every = args.every.map(|d| d.as_nanos() as u64).filter(|n| *n > 0);
    let mut next = every;
    for (name, iter) in records(&args.inputs)? {
        for record in iter {
            let record = record.with_context(|| format!("reading {name}"))?;
            if args.warmup.is_some_and(|w| record.in_warmup(w)) {
                continue;
            }
            if let (Some(boundary), Some(step)) = (next, every) {
                if record.intended_ns >= boundary && metrics.requests() > 0 {
                    print_report(args.kind, &metrics, &metrics.summary());
                    println!();
                    next = Some((record.intended_ns / step + 1) * step);
                }
            }
            metrics.add(&record);
        }
    }
    print_report(args.kind, &metrics, &metrics.summary());
    Ok(exit::SUCCESS)
}

fn output(path: Option<&Path>) -> anyhow::Result<Box<dyn Write + Send>> {
    match path {
        Some(p) => create(p),
        None => Ok(Box::new(BufWriter::new(std::io::stdout()))),
    }
}

fn plot(args: &PlotArgs) -> anyhow::Result<Exit> {
    let html = match args.format {
        Some(f) => f == PlotFormat::Html,
        None => args
            .output
            .as_ref()
            .and_then(|p| p.extension())
            .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm")),
    };
    let text = match args.kind {
        PlotKind::Time => plot_time(args, html)?,
        PlotKind::Cdf => plot_cdf(args, html)?,
    };
    let mut out = output(args.output.as_deref())?;
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(exit::SUCCESS)
}

/// The series name of an input: its file stem.
fn series_label(name: &str) -> String {
    Path::new(name)
        .file_stem()
        .map_or(name.to_string(), |s| s.to_string_lossy().into_owned())
}

fn plot_time(args: &PlotArgs, html: bool) -> anyhow::Result<String> {
    let mut series = Vec::new();
    for (name, iter) in records(&args.inputs)? {
        let mut one = load::plot::Series::new(series_label(&name));
        for record in iter {
            let record = record.with_context(|| format!("reading {name}"))?;
            if !args.warmup.is_some_and(|w| record.in_warmup(w)) {
                one.push(&record);
            }
        }
        series.push(one);
    }
    let title = args
        .title
        .as_deref()
        .unwrap_or("Latency over time")
        .to_string();
    let mut footnote =
        "× failed requests; many requests are drawn per time bin: min–max bar and median line"
            .to_string();
    if let Some(w) = args.warmup {
        footnote.push_str(&format!(
            "; requests scheduled in the first {} s left out",
            w.as_secs_f64()
        ));
    }
    let size = figures::FigureSize::from(args.size);
    let print = size.is_print();
    let chart = figures::chart::ScatterChart {
        title: if print { String::new() } else { title.clone() },
        x_label: "intended send time [s]".into(),
        y_label: "latency [ms]".into(),
        series: load::plot::drawable(&series)
            .into_iter()
            .map(|d| figures::chart::Scatter {
                note: format!("{} requests", d.requests),
                label: d.name,
                points: d.points,
                bins: d.bins,
                failures: d.failures,
            })
            .collect(),
        footnote: if print { String::new() } else { footnote },
    };
    let svg = figures::chart::scatter_chart(&chart, size.canvas((960, 540)))?;
    Ok(if html { html_page(&title, &svg) } else { svg })
}

/// A minimal HTML page around an SVG figure.
fn html_page(title: &str, svg: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{}</title></head>\n<body>\n{svg}</body></html>\n",
        figures::html::escape(title)
    )
}

/// Latency CDFs (one curve per input) drawn by the `figures` crate, log latency axis.
fn plot_cdf(args: &PlotArgs, html: bool) -> anyhow::Result<String> {
    let mut curves = Vec::new();
    for (name, iter) in records(&args.inputs)? {
        let (mut values, mut sent) = (Vec::new(), 0);
        for record in iter {
            let record = record.with_context(|| format!("reading {name}"))?;
            if args.warmup.is_some_and(|w| record.in_warmup(w)) || record.sent_ns.is_none() {
                continue;
            }
            sent += 1;
            if record.is_success() {
                values.push(record.latency_ns as f64 / 1e6);
            }
        }
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        let p = |q: f64| figures::chart::tick(quantile::quantile(&sorted, q));
        let note = if sorted.is_empty() {
            format!("no successful request of {sent}")
        } else {
            format!(
                "p50 {} · p90 {} · p99 {} · p99.9 {} ms ({}/{sent} ok)",
                p(0.5),
                p(0.9),
                p(0.99),
                p(0.999),
                sorted.len()
            )
        };
        curves.push(figures::chart::Cdf {
            label: series_label(&name),
            note,
            runs: sent,
            values,
        });
    }
    let title = args.title.as_deref().unwrap_or("Latency CDF").to_string();
    let mut footnote =
        "latency from the intended send time to the last byte, successful requests".to_string();
    if let Some(w) = args.warmup {
        footnote.push_str(&format!(
            "; requests scheduled in the first {} s left out",
            w.as_secs_f64()
        ));
    }
    let size = figures::FigureSize::from(args.size);
    let print = size.is_print();
    let chart = figures::chart::CdfChart {
        title: if print { String::new() } else { title.clone() },
        x_label: "latency [ms]".into(),
        log_x: true,
        curves,
        footnote: if print { String::new() } else { footnote },
    };
    let svg = figures::chart::cdf_chart(&chart, size.canvas((960, 500)))?;
    Ok(if html { html_page(&title, &svg) } else { svg })
}

fn encode(args: &EncodeArgs) -> anyhow::Result<Exit> {
    let mut writer = RecordWriter::new(output(args.output.as_deref())?, args.to.into());
    for (name, iter) in records(&args.inputs)? {
        for record in iter {
            writer.write(&record.with_context(|| format!("reading {name}"))?)?;
        }
    }
    writer.flush()?;
    Ok(exit::SUCCESS)
}

fn sweep(args: &SweepArgs) -> anyhow::Result<Exit> {
    if args.via.via.is_none() {
        targets(&args.targets)?;
    }
    // Every point's bounds are checked before the first attack starts (and before a path is
    // built).
    for rate in &args.rates {
        if let Err(e) = Schedule::new(Ramp::Constant(*rate), Some(args.duration), None) {
            eprintln!("error: --rates {rate}: {e}");
            return Ok(exit::BAD_INPUT);
        }
    }
    let path = match open_path(&args.via, &args.http)? {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    let outcome = sweep_points(args, path.as_ref());
    let Some(path) = path else {
        return outcome;
    };
    let counters = path.close();
    if let Ok(c) = &counters {
        eprintln!("{}", interop::via::summary_line(c));
    }
    let code = outcome?;
    counters?;
    Ok(code)
}

/// The terminal's view of a sweep: a line per attack, the live line while it runs.
struct SweepProgress;

impl load::sweep::Progress for SweepProgress {
    fn started(&self, name: &str, rate: Rate, duration: Duration) {
        eprintln!("{name}: {rate} for {duration:?}");
    }

    fn attack(
        &self,
        live: &Arc<LiveStats>,
        attack: &mut dyn FnMut() -> Result<Summary, load::client::RunError>,
    ) -> Result<Summary, load::client::RunError> {
        with_progress(live, attack)
    }

    fn finished(&self, name: &str, summary: &Summary) {
        eprintln!(
            "{name}: mean {:.3} ms, p99 {:.3} ms, {:.3} Mbit/s, success {:.2}%, achieved {:.2}/s",
            summary.latency_ms.mean,
            summary.latency_ms.p99,
            summary.throughput.mbit_in_per_s,
            summary.success_ratio * 100.0,
            summary.rate.achieved
        );
    }
}

/// The attacks of a sweep (`load::sweep::run`), directly or through `path`.
fn sweep_points(args: &SweepArgs, path: Option<&EmulatedPath>) -> anyhow::Result<Exit> {
    let targets = match path {
        Some(p) => vec![via_target(&args.targets, p)?],
        None => targets(&args.targets)?,
    };
    let plan = |name: String, http: HttpVersion, schedule: Schedule, targets: Vec<Target>| {
        plan(name, http, schedule, targets, &args.client)
    };
    let client = |http: HttpVersion| client_config(&args.client, http);
    let sweep = load::sweep::Sweep {
        rates: &args.rates,
        http: &args.http,
        duration: args.duration,
        pause: args.pause,
        out: &args.out,
        targets,
        threads: threads(&args.client),
        plan: &plan,
        client: &client,
    };
    let through = path.map(via_args::Through);
    let stop = stop_flag()?;
    let points = load::sweep::run(
        &sweep,
        through.as_ref().map(|t| t as &dyn load::sweep::Through),
        &stop,
        &SweepProgress,
    )?;
    print!("{}", load::sweep::markdown(&points));
    if let Some(path) = latency_figure(&args.out, &points)? {
        eprintln!("figure in {}", path.display());
    }
    Ok(stopped_code())
}

/// Mean latency against the offered rate, one line per HTTP version, each mean with its 95%
/// interval over the successful requests (the seed 004 paper's Fig. 1), written as
/// `latency-vs-rate.svg` beside the sweep's table; `None` when no request succeeded.
fn latency_figure(
    out: &std::path::Path,
    points: &[load::sweep::SweepPoint],
) -> anyhow::Result<Option<std::path::PathBuf>> {
    use figures::sweep::{measure_figure, AxisScale, Estimate, MeasureSpec, Measured};
    let mut rates: Vec<String> = Vec::new();
    let mut versions: Vec<String> = Vec::new();
    for p in points {
        let r = p.rate.to_string();
        if !rates.contains(&r) {
            rates.push(r);
        }
        if !versions.contains(&p.http) {
            versions.push(p.http.clone());
        }
    }
    let series: Vec<Measured> = versions
        .iter()
        .map(|h| Measured {
            label: format!("HTTP/{h}"),
            cells: points
                .iter()
                .filter(|p| &p.http == h)
                .map(|p| {
                    let l = &p.summary.latency_ms;
                    // The batch-means interval (requests under load are correlated); none for
                    // an attack shorter than two seconds.
                    let half = p.summary.latency_mean_ci95_ms.unwrap_or(0.0);
                    let est = (l.n > 0).then(|| Estimate {
                        mean: l.mean / 1e3,
                        low: ((l.mean - half) / 1e3).max(0.0),
                        high: (l.mean + half) / 1e3,
                        n: l.n as usize,
                    });
                    (p.rate.to_string(), est, p.summary.requests as usize)
                })
                .collect(),
        })
        .collect();
    let fig = measure_figure(&MeasureSpec {
        id: "latency-vs-rate".into(),
        title: "Mean latency against the offered request rate".into(),
        metric: "latency_s",
        label: "mean latency".into(),
        axis: "offered rate (requests/s)",
        x_values: &rates,
        series_are: "HTTP version",
        series: &series,
        size: figures::FigureSize::Screen,
        bars: "mean ± 95% batch-means interval (one-second batches of the attack; n of N sent requests succeeded)",
        x_scale: AxisScale::Auto,
        y_scale: AxisScale::Linear,
    })?;
    let Some(fig) = fig else {
        return Ok(None);
    };
    let paths = figures::write_figures(
        out,
        &[fig],
        &[figures::export::Format::Svg],
        figures::Replace::Nothing,
    )?;
    Ok(paths.into_iter().next())
}
