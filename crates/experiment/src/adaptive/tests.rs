use std::path::Path;
use std::sync::Mutex;

use engine::{EngineError, RunOutputs};
use results::Identity;
use scenario::model::{RunSpec, SweepPoint};

use super::*;
use crate::executor::Threads;

const TINY: &str = "[run]\nduration = \"1s\"\n[[flow]]\napp = \"download\"\nsize = \"10kB\"\n";

/// Reports `end_s` = 10 + noise in [−spread, spread] drawn from the run's seed, the spread
/// set by the point's `link.delay` (its milliseconds / 10): a quiet point and a noisy one. A
/// variant `b` adds 0.5 to every run (so its paired difference from `a` is exactly 0.5).
struct Synthetic {
    ran: Mutex<Vec<String>>,
}

impl Synthetic {
    fn new() -> Self {
        Synthetic {
            ran: Mutex::new(Vec::new()),
        }
    }
}

fn uniform(seed: u64) -> f64 {
    // SplitMix64's output, as a fraction in [−1, 1).
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
}

impl Engine for Synthetic {
    fn run(
        &self,
        point: &SweepPoint,
        spec: &RunSpec,
        _outputs: &RunOutputs,
    ) -> Result<results::Run, EngineError> {
        self.ran.lock().expect("lock").push(spec.id.clone());
        let axis = |k: &str| {
            point
                .axes
                .iter()
                .find(|(a, _)| a == k)
                .map(|(_, v)| v.as_str())
        };
        let spread = axis("link.delay")
            .and_then(|d| d.strip_suffix("ms"))
            .and_then(|ms| ms.parse::<f64>().ok())
            .map_or(0.0, |ms| ms / 10.0);
        let shift = if axis("variant") == Some("b") {
            0.5
        } else {
            0.0
        };
        let run = results::Run {
            end_s: 10.0 + shift + spread * uniform(spec.seed),
            ..results::Run::default()
        };
        Ok(run.identify(Identity {
            id: spec.id.clone(),
            point: spec.point,
            rep: spec.rep,
            seed: spec.seed,
            axes: point.axes.iter().cloned().collect(),
            scenario: point.scenario.name.clone(),
        }))
    }
}

fn loaded(extra: &[&str], axes: &[&str]) -> LoadedScenario {
    let text = format!("{TINY}{}", extra.join("\n"));
    scenario::parse_str(
        &text,
        "tiny.toml",
        Path::new("."),
        &["run.reps=3".into()],
        &axes.iter().map(|a| a.to_string()).collect::<Vec<_>>(),
    )
    .expect("valid scenario")
}

fn scratch() -> fsutil::PrivateDir {
    fsutil::PrivateDir::new("quiclab-adaptive-").expect("scratch dir")
}

fn ci_rule(target: f64, max_reps: u32) -> Rule {
    Rule {
        target: Target::RelativeHalfWidth(target),
        metrics: vec!["end_s".into()],
        max_reps,
        batch: 4,
    }
}

fn run(
    l: &LoadedScenario,
    out: &Path,
    rule: &Rule,
    engine: &Synthetic,
    stop: &Stop<'_>,
) -> AdaptiveOutcome {
    let sweep = Sweep {
        loaded: l,
        out,
        resume: true,
        series: false,
    };
    run_adaptive(
        &sweep,
        rule,
        engine,
        &Threads::new(Some(2)),
        stop,
        &(),
        &|_, _, _| {},
    )
    .expect("adaptive sweep")
}

fn finished(o: AdaptiveOutcome) -> Vec<GroupOutcome> {
    match o.last {
        SweepOutcome::Finished { failures, .. } => {
            assert!(failures.is_empty(), "{failures:?}");
            o.groups
        }
        SweepOutcome::Interrupted { .. } => panic!("not interrupted"),
    }
}

#[test]
fn noisy_points_get_more_repetitions_until_their_interval_is_narrow() {
    // 1 ms: spread 0.1 around 10 (±1%); 100 ms: spread 10 (±100%).
    let l = loaded(&[], &["link.delay=0ms,1ms,100ms"]);
    let dir = scratch();
    let groups = finished(run(
        &l,
        dir.path(),
        &ci_rule(0.01, 23),
        &Synthetic::new(),
        &|| false,
    ));
    assert_eq!(groups.len(), 3);
    // A constant metric is clear at once; ±0.1 of 10 needs a few; ±10 never gets there.
    assert_eq!((groups[0].reps, &groups[0].reason), (3, &Reason::Reached));
    assert_eq!(groups[0].worst, vec![("end_s".to_string(), Some(0.0))]);
    assert_eq!(groups[1].reason, Reason::Reached);
    assert!((3..23).contains(&groups[1].reps), "{:?}", groups[1]);
    let w = groups[1].worst[0].1.expect("a criterion");
    assert!(w <= 0.01, "{w}");
    // 3, 7, 11, …, 19, 23: the last batch is cut at max_reps.
    assert_eq!((groups[2].reps, &groups[2].reason), (23, &Reason::MaxReps));
    assert!(groups[2].worst[0].1.expect("a criterion") > 0.01);
    // The store holds exactly those runs, and stopping.csv says why.
    let stored = ResultsStore::open(dir.path()).unwrap().load().unwrap();
    assert_eq!(stored.len() as u32, 3 + groups[1].reps + 23);
    let csv = std::fs::read_to_string(dir.path().join("stopping.csv")).expect("stopping.csv");
    assert!(
        csv.starts_with("link.delay,points,reps,reason,end_s\n"),
        "{csv}"
    );
    assert!(csv.contains("100ms,2,23,max reps,"), "{csv}");
    assert!(csv.contains("0ms,0,3,target reached,0.000000"), "{csv}");
}

#[test]
fn the_same_rule_gives_the_same_runs_and_an_interrupted_sweep_resumes() {
    let l = loaded(&[], &["link.delay=1ms,30ms"]);
    let rule = ci_rule(0.01, 40);
    let whole = scratch();
    let a = finished(run(&l, whole.path(), &rule, &Synthetic::new(), &|| false));
    let bytes = std::fs::read(whole.path().join("results.jsonl")).unwrap();

    // Stop after a few runs, then run the same command again.
    let parts = scratch();
    let engine = Synthetic::new();
    let stop = || engine.ran.lock().expect("lock").len() >= 9;
    assert!(matches!(
        run(&l, parts.path(), &rule, &engine, &stop).last,
        SweepOutcome::Interrupted { .. }
    ));
    let first = engine.ran.lock().unwrap().len();
    let again = Synthetic::new();
    let b = finished(run(&l, parts.path(), &rule, &again, &|| false));
    assert_eq!(a, b);
    assert_eq!(
        std::fs::read(parts.path().join("results.jsonl")).unwrap(),
        bytes
    );
    let redone = again.ran.lock().unwrap().clone();
    assert_eq!(
        first + redone.len(),
        bytes
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .count(),
        "no run ran twice: {redone:?}"
    );

    // Run once more: nothing left to do.
    let idle = Synthetic::new();
    assert_eq!(finished(run(&l, parts.path(), &rule, &idle, &|| false)), a);
    assert!(idle.ran.lock().unwrap().is_empty());
}

#[test]
fn variants_share_their_repetitions_and_a_resolved_difference_stops_the_group() {
    let variants = [
        "[[variant]]\nname = \"a\"\nset = { \"flow.name\" = \"x\" }",
        "[[variant]]\nname = \"b\"\nset = { \"flow.name\" = \"y\" }",
    ];
    // b − a is exactly 0.5 with the same seeds: resolved at the first look, however noisy.
    let l = loaded(&variants, &["link.delay=100ms"]);
    let rule = Rule {
        target: Target::Resolved(0.001),
        ..ci_rule(0.01, 50)
    };
    let dir = scratch();
    let groups = finished(run(&l, dir.path(), &rule, &Synthetic::new(), &|| false));
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0].points, vec![0, 1]);
    assert_eq!((groups[0].reps, &groups[0].reason), (3, &Reason::Reached));
    // The same data judged by the interval of each mean runs to the limit, both variants alike.
    let dir = scratch();
    let groups = finished(run(
        &l,
        dir.path(),
        &ci_rule(0.01, 11),
        &Synthetic::new(),
        &|| false,
    ));
    assert_eq!((groups[0].reps, &groups[0].reason), (11, &Reason::MaxReps));
    let stored = ResultsStore::open(dir.path()).unwrap().load().unwrap();
    assert_eq!(stored.len(), 22, "11 repetitions of each variant");
}

#[test]
fn rules_that_cannot_work_are_refused() {
    let ok = ci_rule(0.02, 10);
    assert_eq!(ok.check(3), Ok(()));
    assert_eq!(ci_rule(0.0, 10).check(3), Err(RuleError::Target(0.0)));
    assert_eq!(
        ci_rule(0.02, 2).check(3),
        Err(RuleError::MaxReps { reps: 3, max: 2 })
    );
    let none = Rule {
        metrics: Vec::new(),
        ..ok.clone()
    };
    assert_eq!(none.check(3), Err(RuleError::NoMetric));
    let zero = Rule { batch: 0, ..ok };
    assert_eq!(zero.check(3), Err(RuleError::Batch));
}
