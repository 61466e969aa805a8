//! A study's grid screened for the real-time emulator (`quiclab reproduce --engine emu`).
//!
//! The study's points are the simulator's, unchanged. A point the emulator refuses, or whose
//! knob it would not apply at all (`flow.hystart = false` for kernel TCP, whose HyStart is a
//! host-wide module parameter), is left out and named with the reason, instead of producing a
//! row that measures something else under the same label; a point it applies differently (an
//! access link on the far side of the emulated PEP) runs, and the approximation is listed under
//! the table. Runs are sequential (a run needs the whole machine).

use scenario::model::Scenario;

use super::combine::{Combined, VARIANT_AXIS};

/// What an engine says about a scenario before running it: `Ok(warnings)` (each naming what it
/// approximates) or `Err(why it refuses)`; for the emulator, `emu::check_supported`.
pub type Check<'a> = &'a dyn Fn(&Scenario) -> Result<Vec<String>, String>;

/// What [`keep_runnable`] found, one line per (experiment, variant), in study order.
#[derive(Debug, Default)]
pub struct Screened {
    /// Points left out, with the reason.
    pub skipped: Vec<String>,
    /// Points run with an approximation, and which.
    pub approximated: Vec<String>,
}

/// Drops the points the emulator refuses (`check` fails) or would not apply a knob of (a warning
/// containing `not_applied`, `emu::NOT_APPLIED`); names them, and the approximations of the
/// points it keeps. The emulator is passed in so that this crate does not link it.
pub fn keep_runnable(combined: &mut Combined, check: Check<'_>, not_applied: &str) -> Screened {
    let mut out = Screened::default();
    let points = std::mem::take(&mut combined.loaded.points);
    let info = std::mem::take(&mut combined.info);
    for (p, i) in points.into_iter().zip(info) {
        let variant = p
            .axes
            .iter()
            .find(|(k, _)| k == VARIANT_AXIS)
            .map_or("", |(_, v)| v.as_str());
        let (keep, why) = match check(&p.scenario) {
            Ok(w) if w.is_empty() => (true, None),
            Ok(w) => {
                let ignored = w.iter().any(|m| m.contains(not_applied));
                (!ignored, Some(w.join("; ")))
            }
            Err(e) => (false, Some(e)),
        };
        let list = if keep {
            &mut out.approximated
        } else {
            &mut out.skipped
        };
        if let Some(why) = why {
            let line = format!("{} / {variant}: {why}", i.experiment);
            if !list.contains(&line) {
                list.push(line);
            }
        }
        if keep {
            combined.loaded.points.push(p);
            combined.info.push(i);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reproduce::registry as studies;

    #[test]
    fn seed002_keeps_what_the_emulator_runs_and_names_the_rest() {
        let study = studies::find("seed002").expect("registered");
        let all: Vec<_> = study.experiments.iter().collect();
        let mut c = super::super::combine::combine(study, &all, &[], Some(1)).expect("valid");
        let before = c.loaded.points.len();
        let check = |s: &Scenario| emu::check_supported(s).map_err(|e| e.to_string());
        let screened = keep_runnable(&mut c, &check, emu::NOT_APPLIED);
        let skipped = screened.skipped;
        assert_eq!(c.loaded.points.len(), c.info.len());
        let variants: std::collections::BTreeSet<&str> = c
            .loaded
            .points
            .iter()
            .filter_map(|p| p.axes.iter().find(|(k, _)| k == VARIANT_AXIS))
            .map(|(_, v)| v.as_str())
            .collect();
        // QUIC (with and without HyStart++: our controller in both engines), kernel TCP and
        // kernel TCP through the emulated PEP run.
        for v in ["quic", "quic-no-hystart", "tcp-tls1.3", "tcp-tls1.3+pep"] {
            assert!(variants.contains(v), "{v} missing: {variants:?}");
        }
        // Kernel CUBIC's HyStart is host-wide: that variant would be mislabelled.
        assert!(!variants.contains("tcp-tls1.3-no-hystart"), "{variants:?}");
        assert!(
            skipped.iter().any(|s| s.starts_with(
                "fixed / tcp-tls1.3-no-hystart: flow download: flow.hystart=false is not applied"
            )),
            "{skipped:?}"
        );
        assert!(c.loaded.points.len() < before);
        // The PEP row runs with its terrestrial access link on the satellite side of the PEP,
        // and says so.
        assert!(
            screened
                .approximated
                .iter()
                .any(|s| s.starts_with("fixed / tcp-tls1.3+pep: flow download: flow.server_access")),
            "{:?}",
            screened.approximated
        );
    }
}
