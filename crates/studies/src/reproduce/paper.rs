//! The paper's numbers beside the study's: `scenarios/studies/<study>/paper.toml` holds what the
//! paper reports (a value, or a relative difference between two protocols), keyed by the row of
//! the study's table it corresponds to; [`compare`] puts each beside the study's mean with the
//! relative difference, its 95% interval and a verdict, first in `table.md` and `report.html`.
//!
//! The verdict reads the interval of the relative difference against the paper file's
//! `tolerance`: **agrees** when the whole interval lies within ±tolerance, **differs** when it
//! lies wholly outside, **inconclusive** when it straddles the boundary (more repetitions would
//! decide). A paper value of zero has no relative difference; its row compares absolute values
//! against the tolerance as an absolute bound instead.

use std::fmt::Write as _;

use serde::Deserialize;

/// A study's `paper.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaperFile {
    /// The paper.
    pub citation: String,
    /// |relative difference| within which a row agrees.
    pub tolerance: f64,
    /// Why this tolerance.
    pub tolerance_why: String,
    /// The values, in the paper's order.
    #[serde(default, rename = "value")]
    pub values: Vec<PaperValue>,
}

/// One number the paper reports.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaperValue {
    /// Where the paper prints it.
    pub source: String,
    /// The study's experiment.
    pub experiment: String,
    /// The row's x value as the table prints it.
    pub x: String,
    /// The row's protocol.
    pub protocol: String,
    /// For a relative difference: the protocol it is relative to.
    #[serde(default)]
    pub baseline: Option<String>,
    /// The table's metric (its header), or `download (s)` for a download-time table.
    pub metric: String,
    /// The paper's value, in the unit of `metric`.
    #[serde(default)]
    pub value: Option<f64>,
    /// The paper's relative difference (protocol − baseline) / baseline, as a fraction.
    #[serde(default)]
    pub relative: Option<f64>,
    /// Read off a plot.
    #[serde(default)]
    pub approximate: bool,
    /// A caveat.
    #[serde(default)]
    pub note: Option<String>,
}

/// Parses a `paper.toml`; `file` names it in errors.
pub fn parse(text: &str, file: &str) -> Result<PaperFile, String> {
    let p: PaperFile = toml::from_str(text).map_err(|e| format!("{file}: {e}"))?;
    if !(p.tolerance > 0.0 && p.tolerance < 10.0) {
        return Err(format!("{file}: tolerance must be a positive fraction"));
    }
    for (i, v) in p.values.iter().enumerate() {
        match (v.value, v.relative, &v.baseline) {
            (Some(_), None, None) | (None, Some(_), Some(_)) => {}
            _ => {
                return Err(format!(
                "{file}: value {i} ({} {} {}) needs either `value`, or `relative` with `baseline`",
                v.experiment, v.x, v.protocol
            ))
            }
        }
    }
    Ok(p)
}

/// The study's mean of one table row and its 95% half-width.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ours {
    /// Mean.
    pub mean: f64,
    /// 95% CI half-width (0 for identical runs; `None` where the table gives none).
    pub ci95: Option<f64>,
    /// Runs behind it.
    pub n: usize,
}

/// The table rows of a study's `table.csv`, by (experiment, x, protocol, metric).
#[derive(Debug, Clone, Default)]
pub struct Rows(Vec<((String, String, String, String), Ours)>);

impl Rows {
    /// Reads the CSV the study's tables write: a `metric, n, mean, ci95` layout or the
    /// download-time layout (`n, download_mean_s, download_ci95_s`, read as metric
    /// `download (s)`).
    pub fn from_csv(csv: &str) -> Rows {
        let mut lines = csv.lines();
        let Some(header) = lines.next() else {
            return Rows::default();
        };
        let cols: Vec<&str> = header.split(',').collect();
        let at = |name: &str| cols.iter().position(|c| *c == name);
        let (Some(e), Some(x), Some(p)) = (at("experiment"), at("x"), at("protocol")) else {
            return Rows::default();
        };
        let layout = match (at("metric"), at("mean"), at("download_mean_s")) {
            (Some(m), Some(mean), _) => Some((Some(m), mean, at("ci95"))),
            (_, _, Some(mean)) => Some((None, mean, at("download_ci95_s"))),
            _ => None,
        };
        let Some((metric, mean, ci)) = layout else {
            return Rows::default();
        };
        let n = at("n");
        let mut out = Vec::new();
        for line in lines {
            let f = split_csv(line);
            let get = |i: usize| f.get(i).map(String::as_str).unwrap_or("");
            let Ok(m) = get(mean).parse::<f64>() else {
                continue;
            };
            let key = (
                get(e).to_string(),
                get(x).to_string(),
                get(p).to_string(),
                metric.map_or_else(|| "download (s)".to_string(), |i| get(i).to_string()),
            );
            out.push((
                key,
                Ours {
                    mean: m,
                    ci95: ci.and_then(|i| get(i).parse().ok()),
                    n: n.and_then(|i| get(i).parse().ok()).unwrap_or(0),
                },
            ));
        }
        Rows(out)
    }

    /// Reads a wide table (one row per x and protocol, one column per metric) as the rows of
    /// `experiment`: `x` and `protocol` name their columns, and each of `metrics` is (the metric's
    /// name in `paper.toml`, the column of its mean, the column of its 95% half-width if any).
    /// A row whose mean is empty or not a number is left out; `n` is not known (0).
    pub fn from_wide_csv(
        csv: &str,
        experiment: &str,
        x: &str,
        protocol: &str,
        metrics: &[(&str, &str, Option<&str>)],
    ) -> Rows {
        let mut lines = csv.lines();
        let Some(header) = lines.next() else {
            return Rows::default();
        };
        let cols = split_csv(header);
        let at = |name: &str| cols.iter().position(|c| c == name);
        let (Some(xi), Some(pi)) = (at(x), at(protocol)) else {
            return Rows::default();
        };
        let metrics: Vec<(&str, usize, Option<usize>)> = metrics
            .iter()
            .filter_map(|(name, mean, ci)| Some((*name, at(mean)?, ci.and_then(&at))))
            .collect();
        let mut out = Vec::new();
        for line in lines {
            let f = split_csv(line);
            let get = |i: usize| f.get(i).map(String::as_str).unwrap_or("");
            for (name, mean, ci) in &metrics {
                let Ok(m) = get(*mean).parse::<f64>() else {
                    continue;
                };
                let key = (
                    experiment.to_string(),
                    get(xi).to_string(),
                    get(pi).to_string(),
                    (*name).to_string(),
                );
                out.push((
                    key,
                    Ours {
                        mean: m,
                        ci95: ci.and_then(|i| get(i).parse().ok()),
                        n: 0,
                    },
                ));
            }
        }
        Rows(out)
    }

    /// The rows of `self` and then `other`.
    pub fn extend(&mut self, other: Rows) {
        self.0.extend(other.0);
    }

    /// The header of a CSV table, its fields unquoted.
    pub fn csv_header(csv: &str) -> Vec<String> {
        csv.lines().next().map(split_csv).unwrap_or_default()
    }

    fn get(&self, experiment: &str, x: &str, protocol: &str, metric: &str) -> Option<Ours> {
        self.0
            .iter()
            .find(|((e, xx, p, m), _)| e == experiment && xx == x && p == protocol && m == metric)
            .map(|(_, o)| *o)
    }
}

/// A CSV line's fields (quoted fields may hold commas).
fn split_csv(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// What the comparison concludes for one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The interval of the difference lies within ±tolerance.
    Agrees,
    /// It lies wholly outside.
    Differs,
    /// It straddles the tolerance.
    Inconclusive,
    /// The study has no such row, or no run measured it.
    NotMeasured,
}

impl Verdict {
    /// As the tables print it.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Agrees => "agrees",
            Verdict::Differs => "differs",
            Verdict::Inconclusive => "inconclusive",
            Verdict::NotMeasured => "not measured",
        }
    }
}

/// One compared row.
#[derive(Debug, Clone, PartialEq)]
pub struct Compared {
    /// The paper's value (a fraction for a relative difference).
    pub paper: f64,
    /// Ours, on the same footing, with its 95% interval.
    pub ours: Option<(f64, f64, f64)>,
    /// (ours − paper) / |paper| with its interval; absolute difference when the paper's is 0.
    pub diff: Option<(f64, f64, f64)>,
    /// For a relative value from the paired comparison: its Holm-adjusted paired t p-value
    /// (does our difference between the two protocols exist at all).
    pub p: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
}

/// Compares one paper value with the study's rows.
/// The paired comparison of a relative value's protocol with its baseline (repetition against
/// repetition): the ratio of the means with its bootstrap 95% interval and the paired t-test's
/// Holm-adjusted p-value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Paired {
    /// Mean of the protocol over mean of the baseline.
    pub ratio: f64,
    /// 95% interval of the ratio.
    pub low: f64,
    /// See `low`.
    pub high: f64,
    /// Paired t-test p-value, Holm-adjusted across the experiment's comparisons.
    pub p: Option<f64>,
}

/// Compares one paper value with the study's rows; a relative value uses `paired` (the paired
/// comparison of its two rows) where the study has it.
pub fn compare_one(
    v: &PaperValue,
    rows: &Rows,
    paired: Option<Paired>,
    tolerance: f64,
) -> Compared {
    let row = |protocol: &str| rows.get(&v.experiment, &v.x, protocol, &v.metric);
    let interval = |o: Ours| {
        let h = o.ci95.unwrap_or(0.0);
        (o.mean, o.mean - h, o.mean + h)
    };
    let (paper, ours) = match (v.value, v.relative, &v.baseline) {
        (Some(p), _, _) => (p, row(&v.protocol).map(interval)),
        (None, Some(r), Some(_)) if paired.is_some() => {
            let p = paired.expect("checked");
            (r, Some((p.ratio - 1.0, p.low - 1.0, p.high - 1.0)))
        }
        (None, Some(r), Some(b)) => {
            let ours = match (row(&v.protocol), row(b)) {
                (Some(a), Some(base)) if base.mean != 0.0 => {
                    let (am, alo, ahi) = interval(a);
                    let (bm, blo, bhi) = interval(base);
                    // Independent intervals combined at their extremes: conservative where the
                    // rows are paired (they share their randomness), never narrower than either.
                    let ratios = [alo / blo, alo / bhi, ahi / blo, ahi / bhi];
                    let finite = blo > 0.0 && bhi > 0.0;
                    let (lo, hi) = if finite {
                        (
                            ratios.iter().copied().fold(f64::MAX, f64::min),
                            ratios.iter().copied().fold(f64::MIN, f64::max),
                        )
                    } else {
                        (f64::NEG_INFINITY, f64::INFINITY)
                    };
                    Some((am / bm - 1.0, lo - 1.0, hi - 1.0))
                }
                _ => None,
            };
            (r, ours)
        }
        _ => (f64::NAN, None),
    };
    let Some((m, lo, hi)) = ours else {
        return Compared {
            paper,
            ours: None,
            diff: None,
            p: None,
            verdict: Verdict::NotMeasured,
        };
    };
    let rel = |x: f64| {
        if paper == 0.0 {
            x
        } else {
            (x - paper) / paper.abs()
        }
    };
    let d = (rel(m), rel(lo), rel(hi));
    let (dlo, dhi) = (d.1.min(d.2), d.1.max(d.2));
    let verdict = if dlo >= -tolerance && dhi <= tolerance {
        Verdict::Agrees
    } else if dhi < -tolerance || dlo > tolerance {
        Verdict::Differs
    } else {
        Verdict::Inconclusive
    };
    Compared {
        paper,
        ours: Some((m, lo, hi)),
        diff: Some((d.0, dlo, dhi)),
        p: paired.filter(|_| v.relative.is_some()).and_then(|p| p.p),
        verdict,
    }
}

/// The values of `paper` for the experiments `ran`, compared with `rows`.
pub fn compare(
    paper: &PaperFile,
    ran: &[&str],
    rows: &Rows,
    paired: &dyn Fn(&PaperValue) -> Option<Paired>,
) -> Vec<(PaperValue, Compared)> {
    paper
        .values
        .iter()
        .filter(|v| ran.contains(&v.experiment.as_str()))
        .map(|v| (v.clone(), compare_one(v, rows, paired(v), paper.tolerance)))
        .collect()
}

fn number(v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    let a = v.abs();
    if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.4}")
    }
}

fn percent(v: f64) -> String {
    if v.is_finite() {
        format!("{:+.1}%", v * 100.0)
    } else {
        "–".into()
    }
}

/// The notes of `rows`, each once, in order of first use; a row's note is referred to by its
/// 1-based number.
fn notes(rows: &[(PaperValue, Compared)]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for (v, _) in rows {
        if let Some(n) = v.note.as_deref() {
            if !out.contains(&n) {
                out.push(n);
            }
        }
    }
    out
}

/// The comparison as table cells per row: row, paper, ours, difference, verdict, source (with
/// the number of its note in `notes`).
fn cells(v: &PaperValue, c: &Compared, notes: &[&str]) -> [String; 6] {
    let relative = v.relative.is_some();
    let shown = |x: f64| if relative { percent(x) } else { number(x) };
    let what = match &v.baseline {
        Some(b) => format!(
            "{} {} {} vs {}, {}",
            v.experiment, v.x, v.protocol, b, v.metric
        ),
        None => format!("{} {} {}, {}", v.experiment, v.x, v.protocol, v.metric),
    };
    let paper = format!("{}{}", if v.approximate { "≈" } else { "" }, shown(c.paper));
    let mut ours = c.ours.map_or_else(
        || "–".to_string(),
        |(m, lo, hi)| {
            if (hi - lo).abs() < f64::EPSILON * m.abs().max(1.0) {
                shown(m)
            } else {
                format!("{} [{}, {}]", shown(m), shown(lo), shown(hi))
            }
        },
    );
    if let Some(p) = c.p {
        let t = analysis::format::p_value(p);
        let eq = if t.starts_with('<') { "" } else { "= " };
        ours.push_str(&format!(" (paired, p {eq}{t})"));
    }
    let diff = c.diff.map_or_else(
        || "–".to_string(),
        |(d, lo, hi)| {
            let f = |x: f64| {
                if c.paper == 0.0 {
                    shown(x)
                } else {
                    percent(x)
                }
            };
            if (hi - lo).abs() < 1e-12 {
                f(d)
            } else {
                format!("{} [{}, {}]", f(d), f(lo), f(hi))
            }
        },
    );
    let mut source = v.source.clone();
    if let Some(k) = v
        .note
        .as_deref()
        .and_then(|n| notes.iter().position(|x| *x == n))
    {
        source.push_str(&format!(" [{}]", k + 1));
    }
    [
        what,
        paper,
        ours,
        diff,
        c.verdict.word().to_string(),
        source,
    ]
}

/// How many rows of each verdict, and how many values concern experiments not run.
fn tally(paper: &PaperFile, rows: &[(PaperValue, Compared)]) -> String {
    let count = |w: Verdict| rows.iter().filter(|(_, c)| c.verdict == w).count();
    let skipped = paper.values.len() - rows.len();
    let mut t = format!(
        "{} values compared: {} agree, {} differ, {} inconclusive, {} not measured",
        rows.len(),
        count(Verdict::Agrees),
        count(Verdict::Differs),
        count(Verdict::Inconclusive),
        count(Verdict::NotMeasured)
    );
    if skipped > 0 {
        t.push_str(&format!("; {skipped} values of experiments not run here"));
    }
    t
}

const NONE: &str = "No value of the paper concerns the experiments that ran (what the paper \
reports and what it leaves out is listed in the study's paper.toml).";

const RULE: &str = "ours: the study's mean with its 95% Student-t interval (a relative \
difference: from the paired comparison of the two protocols where the study makes it, the ratio \
of the means with its bootstrap interval and the Holm-adjusted paired t p-value; otherwise the \
ratio of the two rows' means, its interval from the two rows' intervals at their extremes, which \
is conservative for paired rows); difference: (ours − paper) / |paper| with the \
same interval; verdict: agrees when the whole interval lies within ±tolerance, differs when it \
lies wholly outside, inconclusive when it straddles it; ≈ marks a value read off a plot.";

/// The comparison as a Markdown section.
pub fn markdown(paper: &PaperFile, rows: &[(PaperValue, Compared)]) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "### The paper's numbers beside ours\n");
    let _ = writeln!(
        o,
        "{} — tolerance ±{:.0}% ({}). {}.\n",
        paper.citation,
        paper.tolerance * 100.0,
        paper.tolerance_why,
        tally(paper, rows)
    );
    if rows.is_empty() {
        let _ = writeln!(o, "{}\n", NONE);
        return o;
    }
    let _ = writeln!(o, "{RULE}\n");
    let _ = writeln!(o, "| row | paper | ours | difference | verdict | source |");
    let _ = writeln!(o, "|---|---:|---:|---:|---|---|");
    let notes = notes(rows);
    for (v, c) in rows {
        let cells = cells(v, c, &notes).map(|s| s.replace('|', "\\|"));
        let _ = writeln!(o, "| {} |", cells.join(" | "));
    }
    o.push('\n');
    for (k, n) in notes.iter().enumerate() {
        let _ = writeln!(o, "[{}] {n}  ", k + 1);
    }
    if !notes.is_empty() {
        o.push('\n');
    }
    o
}

/// The comparison as an HTML section for `report.html` (first in it).
pub fn html(paper: &PaperFile, rows: &[(PaperValue, Compared)]) -> String {
    let esc = figures::html::escape;
    let mut o = String::new();
    let _ = writeln!(o, "<h2 id=\"paper\">The paper's numbers beside ours</h2>");
    let _ = writeln!(
        o,
        "<p>{} — tolerance ±{:.0}% ({}). {}.</p>",
        esc(&paper.citation),
        paper.tolerance * 100.0,
        esc(&paper.tolerance_why),
        esc(&tally(paper, rows))
    );
    if rows.is_empty() {
        let _ = writeln!(o, "<p>{}</p>", esc(NONE));
        return o;
    }
    let _ = writeln!(o, "<p class=\"note\">{}</p>", esc(RULE));
    let _ = writeln!(
        o,
        "<div class=\"scroll\"><table><tr><th>row</th><th>paper</th><th>ours</th><th>difference</th><th>verdict</th><th>source</th></tr>"
    );
    let notes = notes(rows);
    for (v, c) in rows {
        let [what, paper, ours, diff, verdict, source] = cells(v, c, &notes);
        let class = match c.verdict {
            Verdict::Agrees => "ok",
            Verdict::Differs => "bad",
            _ => "",
        };
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"{class}\">{}</td><td>{}</td></tr>",
            esc(&what),
            esc(&paper),
            esc(&ours),
            esc(&diff),
            esc(&verdict),
            esc(&source)
        );
    }
    let _ = writeln!(o, "</table></div>");
    if !notes.is_empty() {
        let _ = writeln!(o, "<ol class=\"note\">");
        for n in &notes {
            let _ = writeln!(o, "<li>{}</li>", esc(n));
        }
        let _ = writeln!(o, "</ol>");
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wide_table_gives_one_row_per_metric_with_its_interval_where_it_has_one() {
        let csv = "rate,http,mean_ms,ci_ms,\"ok, %\"\n50,1.1,2.0,0.5,100\n100,3,,,99.5\n";
        let rows = Rows::from_wide_csv(
            csv,
            "load",
            "rate",
            "http",
            &[
                ("mean latency (ms)", "mean_ms", Some("ci_ms")),
                ("success %", "ok, %", None),
                ("absent", "no_such_column", None),
            ],
        );
        let ours = |x: &str, p: &str, m: &str| rows.get("load", x, p, m);
        assert_eq!(
            ours("50", "1.1", "mean latency (ms)"),
            Some(Ours {
                mean: 2.0,
                ci95: Some(0.5),
                n: 0
            })
        );
        assert_eq!(ours("50", "1.1", "success %").unwrap().ci95, None);
        // An empty cell is no measurement, not zero.
        assert_eq!(ours("100", "3", "mean latency (ms)"), None);
        assert_eq!(ours("100", "3", "success %").unwrap().mean, 99.5);
        assert_eq!(ours("50", "1.1", "absent"), None);
        assert_eq!(Rows::csv_header(csv)[4], "ok, %");
    }

    const CSV: &str = "experiment,parameter,x,protocol,runs,metric,n,mean,ci95\n\
        2mbit,link.down.loss,0%,modquic,20,data rate (Mbit/s),20,1.88,0.01\n\
        2mbit,link.down.loss,0%,quic,20,data rate (Mbit/s),20,1.50,0.01\n\
        2mbit,link.down.loss,1%,quic,20,data rate (Mbit/s),20,1.50,0.30\n";

    fn value(x: &str, protocol: &str, v: Option<f64>, rel: Option<f64>) -> PaperValue {
        PaperValue {
            source: "Table 5".into(),
            experiment: "2mbit".into(),
            x: x.into(),
            protocol: protocol.into(),
            baseline: rel.map(|_| "quic".to_string()),
            metric: "data rate (Mbit/s)".into(),
            value: v,
            relative: rel,
            approximate: false,
            note: None,
        }
    }

    fn compare_one_t(v: &PaperValue, rows: &Rows, tolerance: f64) -> Compared {
        compare_one(v, rows, None, tolerance)
    }

    #[test]
    fn a_relative_value_uses_the_paired_comparison_where_there_is_one() {
        let rows = Rows::from_csv(CSV);
        let paired = Paired {
            ratio: 1.25,
            low: 1.24,
            high: 1.26,
            p: Some(0.001),
        };
        let c = compare_one(
            &value("0%", "modquic", None, Some(0.25)),
            &rows,
            Some(paired),
            0.1,
        );
        let (m, lo, hi) = c.ours.expect("paired");
        assert!((m - 0.25).abs() < 1e-12 && (lo - 0.24).abs() < 1e-12 && (hi - 0.26).abs() < 1e-12);
        assert_eq!((c.verdict, c.p), (Verdict::Agrees, Some(0.001)));
        let notes: Vec<&str> = Vec::new();
        assert!(
            cells(&value("0%", "modquic", None, Some(0.25)), &c, &notes)[2].contains("paired, p")
        );
    }

    #[test]
    fn verdicts_read_the_interval_against_the_tolerance() {
        let rows = Rows::from_csv(CSV);
        let c = compare_one_t(&value("0%", "modquic", Some(1.891), None), &rows, 0.1);
        assert_eq!(c.verdict, Verdict::Agrees);
        let (d, lo, hi) = c.diff.expect("measured");
        assert!((d - (1.88 - 1.891) / 1.891).abs() < 1e-12 && lo < d && d < hi);
        // 1.50 ± 0.01 against 1.891: wholly below −10%.
        assert_eq!(
            compare_one_t(&value("0%", "quic", Some(1.891), None), &rows, 0.1).verdict,
            Verdict::Differs
        );
        // 1.50 ± 0.30 against 1.6: the interval straddles the tolerance.
        assert_eq!(
            compare_one_t(&value("1%", "quic", Some(1.6), None), &rows, 0.1).verdict,
            Verdict::Inconclusive
        );
        assert_eq!(
            compare_one_t(&value("5%", "quic", Some(1.6), None), &rows, 0.1).verdict,
            Verdict::NotMeasured
        );
        // Relative: 1.88 / 1.50 − 1 = +25.3% against the paper's +25%.
        let c = compare_one_t(&value("0%", "modquic", None, Some(0.25)), &rows, 0.1);
        let (m, lo, hi) = c.ours.expect("both rows");
        assert!(
            (m - (1.88 / 1.5 - 1.0)).abs() < 1e-12 && lo < m && m < hi,
            "{m} {lo} {hi}"
        );
        assert_eq!(c.verdict, Verdict::Agrees);
        assert_eq!(
            compare_one_t(&value("0%", "modquic", None, Some(0.5)), &rows, 0.1).verdict,
            Verdict::Differs
        );
    }

    #[test]
    fn the_download_layout_is_read_as_metric_download() {
        let csv = "experiment,parameter,x,protocol,runs,n,download_mean_s,download_ci95_s,download_sd_s\nbod,flow.size,1MB,quic,20,20,5.3,0.01,0.02\n";
        let rows = Rows::from_csv(csv);
        assert_eq!(
            rows.get("bod", "1MB", "quic", "download (s)"),
            Some(Ours {
                mean: 5.3,
                ci95: Some(0.01),
                n: 20
            })
        );
    }

    #[test]
    fn every_studys_paper_file_parses_and_joins_its_keys_to_its_experiments() {
        for s in crate::reproduce::STUDIES {
            let Some(text) = s.paper else { continue };
            let p = parse(text, s.name).unwrap_or_else(|e| panic!("{e}"));
            for v in &p.values {
                if s.experiments.is_empty() {
                    continue;
                }
                assert!(
                    s.experiments.iter().any(|e| e.name == v.experiment),
                    "{}: no experiment {}",
                    s.name,
                    v.experiment
                );
            }
        }
        let bad = "citation = \"x\"\ntolerance = 0.1\ntolerance_why = \"y\"\n[[value]]\nsource = \"T\"\nexperiment = \"e\"\nx = \"1\"\nprotocol = \"p\"\nmetric = \"m\"\nrelative = 0.2\n";
        assert!(parse(bad, "p.toml")
            .expect_err("no baseline")
            .contains("needs either"));
    }
}
