//! `[[figure]]`: declared figures, checked against the sweep and kept in every point.

use std::path::Path;
use std::time::Duration;

use crate::model::{AxisScale, FigureKind};
use crate::{parse_with, Inputs, LoadedScenario, ScenarioError};

fn run(text: &str, axes: &[&str]) -> Result<LoadedScenario, ScenarioError> {
    let inputs = Inputs {
        axes: axes.iter().map(|a| a.to_string()).collect(),
        ..Inputs::default()
    };
    parse_with(text, "t.toml", Path::new("."), &inputs)
}

fn err(text: &str) -> String {
    run(text, &[]).expect_err("should be rejected").to_string()
}

const SWEPT: &str = r#"
[[flow]]
app = "download"
size = "1MB"
[[variant]]
name = "quic"
[[variant]]
name = "tcp"
set = { "flow.stack" = "tcp" }
[sweep]
"link.loss" = ["0%", "1%"]
"flow.size" = ["100kB", "1MB"]
"#;

#[test]
fn a_figure_is_kept_in_every_point_with_its_defaults() {
    let text = format!(
        "{SWEPT}\n[[figure]]\nname = \"dl\"\ny = \"flows.0.completion_s\"\nx = \"flow.size\"\nseries = \"variant\"\nwhere = {{ \"link.loss\" = \"1%\" }}\nx_scale = \"log\"\n\n[[figure]]\nkind = \"series\"\ny = [\"cwnd_bytes\", \"srtt_ms\"]\nuntil = \"2s\"\n"
    );
    let s = run(&text, &[]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.points.len(), 8);
    for p in &s.points {
        assert_eq!(p.scenario.figures, s.points[0].scenario.figures);
    }
    let f = &s.points[0].scenario.figures;
    assert_eq!(f.len(), 2);
    assert_eq!(f[0].name, "dl");
    assert_eq!(f[0].kind, FigureKind::Line);
    assert_eq!(f[0].x.as_deref(), Some("flow.size"));
    assert_eq!(f[0].series, ["variant"]);
    assert_eq!(
        f[0].filter,
        [("link.loss".to_string(), vec!["1%".to_string()])]
    );
    assert_eq!(
        (f[0].x_scale, f[0].y_scale),
        (AxisScale::Log, AxisScale::Linear)
    );
    assert_eq!(f[1].name, "figure1");
    assert_eq!(f[1].kind, FigureKind::Series);
    assert_eq!(f[1].y, ["cwnd_bytes", "srtt_ms"]);
    assert!(f[1].series.is_empty());
    assert_eq!(f[1].until, Some(Duration::from_secs(2)));
    // The resolved scenario's record (sweep.json, compared when resuming) leaves figures out;
    // the specs have their own JSON (figures.json).
    let json = serde_json::to_string(&s.points[0].scenario).expect("serialise");
    assert!(!json.contains("cwnd_bytes"), "{json}");
    let spec = serde_json::to_string(&f[1]).expect("serialise");
    let back: crate::model::FigureSpec = serde_json::from_str(&spec).expect("read back");
    assert_eq!(back, f[1]);
}

#[test]
fn the_x_axis_must_be_swept_and_other_axes_not_swept_here_are_left_out_with_a_warning() {
    let e = err(&format!(
        "{SWEPT}\n[[figure]]\ny = \"flows.0.completion_s\"\nx = \"link.rate\"\n"
    ));
    assert!(e.starts_with("t.toml:16:5:"), "{e}");
    assert!(
        e.contains("draws against the axis \"link.rate\", which is not swept"),
        "{e}"
    );
    assert!(
        e.contains("axes of this sweep: variant, link.loss, flow.size"),
        "{e}"
    );
    let e = err("[[figure]]\ny = \"m\"\nx = \"link.loss\"\n");
    assert!(e.contains("sweeps nothing"), "{e}");
    // A study's file names the variant axis its study adds; alone, the file has none.
    let text = format!(
        "{SWEPT}\n[[figure]]\ny = \"m\"\nx = \"flow.size\"\nseries = [\"variant\", \"flow.cc\"]\nwhere = {{ \"flow.cc\" = \"cubic\", \"link.loss\" = [\"0%\", \"1%\"] }}\n"
    );
    let s = run(&text, &[]).unwrap_or_else(|e| panic!("{e}"));
    let f = &s.points[0].scenario.figures[0];
    assert_eq!(f.series, ["variant"]);
    assert_eq!(
        f.filter,
        [(
            "link.loss".to_string(),
            vec!["0%".to_string(), "1%".to_string()]
        )]
    );
    assert_eq!(s.warnings.len(), 2, "{:?}", s.warnings);
    assert!(
        s.warnings[0].contains("names the axis \"flow.cc\", which is not swept here"),
        "{:?}",
        s.warnings
    );
    // Every kind and scale name parses.
    for kind in ["line", "cdf", "series"] {
        for scale in ["auto", "linear", "log"] {
            let (x, scales) = if kind == "line" {
                (
                    "x = \"flow.size\"\n",
                    format!("x_scale = \"{scale}\"\ny_scale = \"{scale}\"\n"),
                )
            } else {
                ("", String::new())
            };
            let text = format!("{SWEPT}\n[[figure]]\nkind = \"{kind}\"\ny = \"m\"\n{x}{scales}");
            let s = run(&text, &[]).unwrap_or_else(|e| panic!("{kind} {scale}: {e}"));
            let f = &s.points[0].scenario.figures[0];
            assert_eq!(crate::Choice::name(f.kind), kind);
            if kind == "line" {
                assert_eq!(crate::Choice::name(f.x_scale), scale);
            }
        }
    }
    // An axis added on the command line counts.
    let text =
        "[[flow]]\napp = \"download\"\nsize = \"1MB\"\n[[figure]]\ny = \"m\"\nx = \"link.loss\"\n";
    let s = run(text, &["link.loss=0%,1%"]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        s.points[0].scenario.figures[0].x.as_deref(),
        Some("link.loss")
    );
}

#[test]
fn keys_that_cannot_apply_and_bad_values_are_refused() {
    let e = err(&format!("{SWEPT}\n[[figure]]\ny = \"m\"\n"));
    assert!(e.contains("missing key figure.0.x"), "{e}");
    let e = err(&format!(
        "{SWEPT}\n[[figure]]\nkind = \"cdf\"\ny = \"m\"\nx = \"flow.size\"\n"
    ));
    assert!(
        e.contains("figure.0.x has no effect on a cdf figure"),
        "{e}"
    );
    let e = err(&format!(
        "{SWEPT}\n[[figure]]\nkind = \"line\"\ny = \"m\"\nx = \"flow.size\"\nuntil = \"1s\"\n"
    ));
    assert!(
        e.contains("figure.0.until has no effect on a line figure"),
        "{e}"
    );
    let e = err(&format!(
        "{SWEPT}\n[[figure]]\nkind = \"series\"\ny = \"cwnd_bytes\"\ny_scale = \"log\"\n"
    ));
    assert!(
        e.contains("y_scale has no effect on a series figure"),
        "{e}"
    );
    let e = err(&format!(
        "{SWEPT}\n[[figure]]\nkind = \"bars\"\ny = \"m\"\n"
    ));
    assert!(
        e.contains("figure.0.kind = \"bars\" is not allowed; allowed: line, cdf, series"),
        "{e}"
    );
    let e = err(&format!(
        "{SWEPT}\n[[figure]]\ny = \"m\"\nx = \"flow.size\"\ncolour = \"red\"\n"
    ));
    assert!(e.contains("unknown key \"figure.0.colour\""), "{e}");
    assert!(e.contains("allowed keys in [[figure]]"), "{e}");
    let e = err(&format!("{SWEPT}\n[[figure]]\ny = []\nx = \"flow.size\"\n"));
    assert!(e.contains("figure.0.y is empty"), "{e}");
    let e = err(&format!("{SWEPT}\n[[figure]]\nname = \"a\"\ny = \"m\"\nx = \"flow.size\"\n[[figure]]\nname = \"a\"\ny = \"m\"\nx = \"flow.size\"\n"));
    assert!(e.contains("two figures are named \"a\""), "{e}");
    let e = err(&format!(
        "{SWEPT}\n[[figure]]\nname = \"../x\"\ny = \"m\"\nx = \"flow.size\"\n"
    ));
    assert!(e.contains("figure.0.name"), "{e}");
}
