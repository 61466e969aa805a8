//! End-to-end tests of `quiclab plot`, `quiclab report` and `quiclab load plot --kind cdf`:
//! figures are well-formed SVG, the report is one self-contained page holding every figure,
//! and it renders in a real browser (headless Chromium, installed by
//! `scripts/install-peers.sh`) to something that is not blank. A missing Chromium makes the
//! test FAIL with that instruction — never skip.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{quiclab, text, Scratch};

/// A small sweep: a 200 kB download over QUIC and TCP at 0, 2 and 40% loss, 3 s per run. At 40%
/// the download does not finish in 3 s, so the report must warn and show n < N.
const SWEEP: &str = r#"
[run]
duration = "3s"
reps = 3

[link]
rate = "10Mbit"
delay = "10ms"
queue = "25pkt"

[[flow]]
name = "page"
app = "download"
size = "200kB"

[sweep]
"link.down.loss" = ["0%", "2%", "40%"]
"flow.stack" = ["quic", "tcp"]
"#;

/// Runs the small sweep into `scratch/out` and returns that directory.
fn sweep(scratch: &Scratch) -> PathBuf {
    let file = scratch.file("small.toml", SWEEP);
    let out = scratch.path("out");
    let o = quiclab(
        &[
            "sim",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "-j",
            "1",
        ],
        &scratch.0,
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    out
}

fn svg_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("figures dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "svg"))
        .collect();
    v.sort();
    v
}

/// The polyline points of an SVG's `<polyline>` elements, in document order.
fn polylines(svg: &str) -> Vec<Vec<(f64, f64)>> {
    let doc = roxmltree::Document::parse(svg).expect("valid SVG");
    doc.descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .map(|n| {
            n.attribute("points")
                .unwrap_or_default()
                .split_whitespace()
                .map(|pair| {
                    let (x, y) = pair.split_once(',').expect("x,y");
                    (x.parse().expect("x"), y.parse().expect("y"))
                })
                .collect()
        })
        .collect()
}

#[test]
fn plot_writes_parseable_svgs_with_monotonic_cdfs() {
    let scratch = Scratch::new("plot");
    let out = sweep(&scratch);
    let o = quiclab(&["plot", out.to_str().unwrap()], &scratch.0);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let files = svg_files(&out.join("figures"));
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for want in [
        "sweep-flows.0.completion_s-vs-link.down.loss.svg",
        "sweep-flows.0.completion_s-vs-flow.stack.svg",
        "sweep-flows.0.goodput_bps-vs-link.down.loss.svg",
        "cdf-flows.0.completion_s.svg",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} missing: {names:?}");
    }
    assert!(
        names.iter().filter(|n| n.starts_with("series-")).count() >= 2,
        "time series of representative runs: {names:?}"
    );
    for f in &files {
        let svg = std::fs::read_to_string(f).unwrap();
        let doc = roxmltree::Document::parse(&svg)
            .unwrap_or_else(|e| panic!("{}: not well-formed: {e}", f.display()));
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        assert!(
            !polylines(&svg).is_empty(),
            "{}: nothing drawn",
            f.display()
        );
    }
    // The CDF's staircase rises: x (value) never decreases and y (screen, downwards) never
    // increases along each curve; the first polylines are the axes' and legend's, the curves
    // are the long ones.
    let cdf = std::fs::read_to_string(out.join("figures/cdf-flows.0.completion_s.svg")).unwrap();
    let curves: Vec<Vec<(f64, f64)>> = polylines(&cdf)
        .into_iter()
        .filter(|p| p.len() >= 6)
        .collect();
    assert!(!curves.is_empty(), "no CDF curve");
    for c in &curves {
        assert!(
            c.windows(2).all(|w| w[1].0 >= w[0].0 && w[1].1 <= w[0].1),
            "CDF not monotonic: {c:?}"
        );
    }
    // 40% loss: the downloads did not complete, and the figures say so.
    let completion = std::fs::read_to_string(
        out.join("figures/sweep-flows.0.completion_s-vs-link.down.loss.svg"),
    )
    .unwrap();
    assert!(completion.contains("n/N = 0–3/3"), "n/N in the legend");
    assert!(
        completion.contains("without a value"),
        "warning in the footnote"
    );
}

#[test]
fn plot_writes_pdf_and_png_beside_each_svg_and_one_file_in_the_format_its_name_asks() {
    let scratch = Scratch::new("plotformats");
    let out = sweep(&scratch);
    let o = quiclab(&["plot", out.to_str().unwrap()], &scratch.0);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let dir = out.join("figures");
    let svgs = svg_files(&dir);
    assert!(!svgs.is_empty());
    for svg in &svgs {
        let pdf = std::fs::read(svg.with_extension("pdf")).expect("a PDF beside the SVG");
        assert!(pdf.starts_with(b"%PDF-"), "{}", svg.display());
        let png = std::fs::read(svg.with_extension("png")).expect("a PNG beside the SVG");
        assert!(png.starts_with(b"\x89PNG"), "{}", svg.display());
    }
    // SVG only when asked: the others this command wrote are removed.
    let o = quiclab(
        &["plot", out.to_str().unwrap(), "--format", "svg"],
        &scratch.0,
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(!svgs[0].with_extension("pdf").exists());
    // Asking for one metric adds its figures and leaves the others alone.
    let o = quiclab(
        &[
            "plot",
            out.to_str().unwrap(),
            "--metric",
            "flows.0.goodput_bps",
            "--format",
            "svg",
        ],
        &scratch.0,
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        svg_files(&dir),
        svgs,
        "a narrowed plot removed other figures"
    );
    // One figure into one file, its extension picking the format: one run without time series
    // has a single figure (the completion CDF).
    let single = scratch.file("single.toml", SWEEP.split("[sweep]").next().unwrap());
    let one = scratch.path("one");
    let o = quiclab(
        &[
            "sim",
            single.to_str().unwrap(),
            "--reps",
            "1",
            "--no-series",
            "--out",
            one.to_str().unwrap(),
        ],
        &scratch.0,
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    for (name, magic) in [("one.pdf", &b"%PDF-"[..]), ("one.png", &b"\x89PNG"[..])] {
        let file = scratch.path(name);
        let o = quiclab(
            &[
                "plot",
                one.to_str().unwrap(),
                "--out",
                file.to_str().unwrap(),
            ],
            &scratch.0,
        );
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert!(
            std::fs::read(&file).expect("file").starts_with(magic),
            "{name}"
        );
    }
}

#[test]
fn plot_rejects_unknown_metric_naming_the_flag_and_choices() {
    let scratch = Scratch::new("plotbad");
    let out = sweep(&scratch);
    let o = quiclab(
        &["plot", out.to_str().unwrap(), "--metric", "flows.0.goodput"],
        &scratch.0,
    );
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains("--metric \"flows.0.goodput\"") && err.contains("flows.0.goodput_bps"),
        "{err}"
    );
    let o = quiclab(
        &["plot", out.to_str().unwrap(), "--x", "link.rate"],
        &scratch.0,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("link.down.loss"),
        "{}",
        text(&o.stderr)
    );
    // One figure into one named file.
    let file = scratch.path("one.svg");
    let o = quiclab(
        &[
            "plot",
            out.to_str().unwrap(),
            "--metric",
            "flows.0.goodput_bps",
            "--x",
            "link.down.loss",
            "--run",
            "p0-r0",
            "--out",
            file.to_str().unwrap(),
        ],
        &scratch.0,
    );
    assert!(!o.status.success(), "two figures do not fit one file");
    assert!(text(&o.stderr).contains("2 figures"), "{}", text(&o.stderr));
}

/// The Chromium the project's scripts install (`scripts/install-peers.sh`: Debian's package).
fn chromium() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("chromium"))
        .find(|p| p.is_file())
        .expect("chromium not found on PATH: install it with `sudo scripts/install-peers.sh`")
}

/// Mean and variance of the grey level of a PNG's pixels.
fn grey_stats(png_path: &Path) -> (f64, f64, (u32, u32)) {
    let decoder = png::Decoder::new(std::fs::File::open(png_path).expect("screenshot"));
    let mut reader = decoder.read_info().expect("PNG header");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("PNG data");
    let channels = info.color_type.samples();
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    let greys: Vec<f64> = buf[..info.buffer_size()]
        .chunks(channels)
        .map(|px| {
            let rgb = &px[..channels.min(3)];
            rgb.iter().map(|&c| f64::from(c)).sum::<f64>() / rgb.len() as f64
        })
        .collect();
    let n = greys.len() as f64;
    let mean = greys.iter().sum::<f64>() / n;
    let var = greys.iter().map(|g| (g - mean) * (g - mean)).sum::<f64>() / n;
    (mean, var, (info.width, info.height))
}

#[test]
fn report_is_self_contained_holds_every_figure_and_renders_in_chromium() {
    let scratch = Scratch::new("report");
    let out = sweep(&scratch);
    let o = quiclab(&["plot", out.to_str().unwrap()], &scratch.0);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = quiclab(&["report", out.to_str().unwrap()], &scratch.0);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let report = out.join("report.html");
    let html = std::fs::read_to_string(&report).unwrap();

    // Self-contained: no script, no external resource; the only URL is the SVG namespace.
    for bad in ["<script", "<link", " src=", "url(", "@import"] {
        assert!(!html.contains(bad), "report contains {bad:?}");
    }
    let urls = html.matches("http").count();
    let ns = html.matches("http://www.w3.org/2000/svg").count();
    assert_eq!(urls, ns, "only the SVG namespace may be a URL");

    // Every figure: the sweep and CDF figures `quiclab plot` wrote are all in the report, and
    // every figure in the report is one `quiclab plot` wrote; each inline SVG parses.
    let ids: Vec<String> = html
        .split("data-figure=\"")
        .skip(1)
        .map(|s| s[..s.find('"').unwrap()].to_string())
        .collect();
    let files: Vec<String> = svg_files(&out.join("figures"))
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    for f in files.iter().filter(|f| !f.starts_with("series-")) {
        assert!(ids.contains(f), "{f} not in the report ({ids:?})");
    }
    for id in &ids {
        assert!(files.contains(id), "{id} in the report but not plotted");
    }
    assert!(
        ids.iter().any(|i| i.starts_with("series-")),
        "a representative run"
    );
    let svgs: Vec<&str> = html
        .split("<svg")
        .skip(1)
        .map(|s| &s[..s.find("</svg>").expect("closed svg") + 6])
        .collect();
    assert_eq!(svgs.len(), ids.len(), "one inline SVG per figure");
    for s in svgs {
        roxmltree::Document::parse(&format!("<svg{s}")).expect("inline SVG parses");
    }

    // Honest counts: the 40% points did not complete.
    assert!(html.contains("did not complete in 3 of 3 runs"), "warning");
    assert!(html.contains("– (0/3)"), "n/N in the table");

    // A browser renders it to something that is not blank.
    let (mean, var, (w, h)) = screenshot(&scratch, &report, "report");
    assert_eq!((w, h), (1200, 2400));
    // A blank page is uniformly white (variance 0); text, tables and figures give variance.
    assert!(mean > 150.0, "mostly light background, mean grey {mean}");
    assert!(var > 300.0, "not blank: grey variance {var}");
    // The check tells a blank page apart: an empty page measures as blank.
    let blank = scratch.file("blank.html", "<!DOCTYPE html><html><body></body></html>");
    let (_, blank_var, _) = screenshot(&scratch, &blank, "blank");
    assert!(
        blank_var < 1.0,
        "an empty page has no variance: {blank_var}"
    );
}

#[test]
fn a_one_column_figure_renders_in_chromium_and_as_png() {
    let scratch = Scratch::new("printfig");
    let out = sweep(&scratch);
    let o = quiclab(
        &[
            "plot",
            out.to_str().unwrap(),
            "--size",
            "one-column",
            "--metric",
            "flows.0.completion_s",
            "--x",
            "link.down.loss",
            "--format",
            "svg,png",
        ],
        &scratch.0,
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let stem = "figures/sweep-flows.0.completion_s-vs-link.down.loss";
    let (svg_path, png_path) = (
        out.join(format!("{stem}.svg")),
        out.join(format!("{stem}.png")),
    );
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    assert!(svg.starts_with("<svg width=\"3.5in\""), "{}", &svg[..80]);
    // The browser draws it (a 3.5 in figure on a 1200 × 2400 px page: mostly white around it).
    let (_, var, _) = screenshot(&scratch, &svg_path, "one-column");
    assert!(var > 20.0, "blank in Chromium: grey variance {var}");
    // Our PNG is the same figure at 300 dpi: 3.5 in = 1050 px, with text and lines on white.
    let (mean, var, (w, _)) = grey_stats(&png_path);
    assert_eq!(w, 1050);
    assert!(
        mean > 150.0 && var > 300.0,
        "PNG mean {mean}, variance {var}"
    );
}

/// Screenshot of `page` by headless Chromium (1200 × 2400 px), as grey-level statistics.
fn screenshot(scratch: &Scratch, page: &Path, name: &str) -> (f64, f64, (u32, u32)) {
    let shot = scratch.path(&format!("{name}.png"));
    let profile = scratch.path(&format!("chromium-profile-{name}"));
    let o = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--hide-scrollbars",
            "--window-size=1200,2400",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium");
    assert!(
        shot.is_file(),
        "no screenshot: {}\n{}",
        o.status,
        text(&o.stderr)
    );
    grey_stats(&shot)
}

/// Synthetic `load attack` results: 1000 requests at 100/s; the first 100 (the first second)
/// took 20 ms behind the handshake, the rest 0.2 ms.
fn load_results(scratch: &Scratch) -> PathBuf {
    let mut s = String::new();
    for i in 0..1000u64 {
        let t = i * 10_000_000;
        let lat = if i < 100 { 20_000_000 } else { 200_000 };
        s.push_str(&format!(
            "{{\"seq\":{i},\"attack\":\"a\",\"phase\":\"\",\"http\":\"3\",\"intended_ns\":{t},\
             \"intended_unix_ns\":{t},\"sent_ns\":{t},\"late\":false,\"connect_ns\":null,\
             \"tls_ns\":null,\"quic_handshake_ns\":null,\"ttfb_ns\":{lat},\"latency_ns\":{lat},\
             \"service_ns\":{lat},\"bytes_in\":11000,\"bytes_out\":0,\"status\":200,\
             \"reused\":true,\"error\":null}}\n"
        ));
    }
    scratch.file("h3.jsonl", &s)
}

#[test]
fn load_warmup_drops_the_first_requests() {
    let scratch = Scratch::new("warmup");
    let file = load_results(&scratch);
    let report = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["load", "report", "--type", "json"];
        args.extend_from_slice(extra);
        args.push(file.to_str().unwrap());
        let o = quiclab(&args, &scratch.0);
        assert!(o.status.success(), "{}", text(&o.stderr));
        serde_json::from_slice(&o.stdout).expect("json report")
    };
    let all = report(&[]);
    let warm = report(&["--warmup", "1s"]);
    let total = |v: &serde_json::Value| v["requests"].as_u64();
    assert_eq!(total(&all), Some(1000), "{all}");
    assert_eq!(total(&warm), Some(900), "{warm}");
    let max_ms = |v: &serde_json::Value| v["latency_ms"]["max"].as_f64();
    assert!(
        max_ms(&warm) < Some(1.0),
        "the slow first second is gone: {warm}"
    );
}

#[test]
fn load_latency_cdf_has_a_log_axis_and_percentiles() {
    let scratch = Scratch::new("loadcdf");
    let file = load_results(&scratch);
    let out = scratch.path("cdf.svg");
    let o = quiclab(
        &[
            "load",
            "plot",
            "--kind",
            "cdf",
            file.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
        &scratch.0,
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let svg = std::fs::read_to_string(&out).unwrap();
    roxmltree::Document::parse(&svg).expect("valid SVG");
    // p50 = 0.2 ms, p99 = 20 ms: both readable on the log axis, whose ticks span decades.
    assert!(svg.contains("p50 0.2 ·") && svg.contains("p99 20"), "{svg}");
    for tick in [">\n0.1\n<", ">\n1\n<", ">\n10\n<"] {
        assert!(svg.contains(tick), "log tick {tick:?} missing");
    }
    let o = quiclab(
        &[
            "load",
            "plot",
            "--kind",
            "cdf",
            "--warmup",
            "1s",
            file.to_str().unwrap(),
        ],
        &scratch.0,
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let warm = text(&o.stdout);
    assert!(warm.contains("(900/900 ok)"), "warm-up left out of the CDF");
    assert!(warm.contains("p99 0.2"), "the 20 ms requests are gone");
}

#[test]
fn reproduce_writes_figures_and_a_report_next_to_the_table() {
    let scratch = Scratch::new("repro");
    let o = quiclab(
        &[
            "reproduce",
            "seed003",
            "--only",
            "bernoulli",
            "--reps",
            "2",
            "--set",
            "flow.size=100kB",
            "--jobs",
            "2",
            "--out",
            "out",
        ],
        &scratch.0,
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = scratch.path("out");
    assert!(out.join("table.md").is_file());
    let fig = out.join("figures/sweep-flows.0.completion_s-vs-link.down.loss.svg");
    let svg = std::fs::read_to_string(&fig).expect("figure of the study");
    roxmltree::Document::parse(&svg).expect("valid SVG");
    // One line per protocol variant of the study.
    for v in ["quic-1rtt", "quic-0rtt", "tcp-tls1.3", "tcp-tls1.2"] {
        assert!(svg.contains(&format!("variant={v}")), "{v} missing");
    }
    let html = std::fs::read_to_string(out.join("report.html")).expect("report");
    assert!(html.contains("data-figure=\"sweep-flows.0.completion_s-vs-link.down.loss\""));
    assert!(html.contains("quiclab report — seed003"));
}

/// A scenario's `[[figure]]` tables are drawn first by `plot` and `report`; editing a figure
/// leaves the sweep's record unchanged, so a resumed sweep keeps its results.
#[test]
fn declared_figures_are_drawn_first_and_editing_one_keeps_the_results() {
    let s = Scratch::new("declared-figures");
    let with = |title: &str| {
        format!(
            "{SWEEP}\n[[figure]]\nname = \"dl\"\ny = \"flows.0.completion_s\"\nx = \"link.down.loss\"\nseries = \"flow.stack\"\ntitle = \"{title}\"\n\n[[figure]]\nname = \"cwnd\"\nkind = \"series\"\ny = [\"cwnd_bytes\", \"srtt_ms\"]\nseries = \"flow.stack\"\nwhere = {{ \"link.down.loss\" = \"2%\" }}\n"
        )
    };
    let file = s.file("declared.toml", &with("Download time"));
    let out = s.path("out");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "sim",
            file.to_str().expect("utf-8"),
            "--out",
            out.to_str().expect("utf-8"),
        ];
        args.extend_from_slice(extra);
        let o = quiclab(&args, &s.0);
        assert!(o.status.success(), "{}", text(&o.stderr));
    };
    run(&[]);
    s.file("declared.toml", &with("Download time against loss"));
    run(&["--resume"]);
    let o = quiclab(&["plot", out.to_str().expect("utf-8")], &s.0);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let fig =
        std::fs::read_to_string(out.join("figures/fig-dl.svg")).expect("declared line figure");
    assert!(
        fig.contains("Download time against loss"),
        "the edited title"
    );
    assert!(out.join("figures/fig-cwnd.svg").is_file());
    let o = quiclab(&["report", out.to_str().expect("utf-8")], &s.0);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let report = std::fs::read_to_string(out.join("report.html")).expect("report");
    let first = report.find("data-figure=").expect("a figure");
    assert!(
        report[first..].starts_with("data-figure=\"fig-dl\""),
        "declared figures lead"
    );
    assert!(report.contains("The scenario's figures"));
}
