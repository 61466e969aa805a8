//! Per-packet loss models: a seeded state machine asked once per packet that reaches the wire.
//!
//! Time-based outages ([`crate::config::Blackout`]) are the link's job, not this module's.
//!
//! Gilbert-Elliott order of operations, per packet: first the chain makes its transition
//! (Good→Bad with probability `p`, Bad→Good with `r`), then the loss is drawn with the loss
//! probability of the state just entered. The first packet therefore may already see Bad.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::config::LossConfig;
use crate::error::Error;
use crate::rng::{stream, streams};

/// The internal state of each model.
#[derive(Debug, Clone)]
enum State {
    None,
    Bernoulli {
        p: f64,
    },
    Periodic {
        every: Option<u64>,
        count: u64,
    },
    GilbertElliott {
        p: f64,
        r: f64,
        loss_good: f64,
        loss_bad: f64,
        bad: bool,
    },
    BoundedBernoulli {
        p: f64,
        max_burst: u32,
        run: u32,
    },
}

/// A seeded loss process; call [`LossModel::is_lost`] once per packet.
#[derive(Debug, Clone)]
pub struct LossModel {
    state: State,
    rng: ChaCha8Rng,
}

/// Drop period of [`LossConfig::Periodic`]: `round(1/p)`, at least 1; `None` if `p` is not positive.
fn periodic_every(p: f64) -> Option<u64> {
    // `p > 0.0` is false for NaN too; `as` saturates, so huge periods stay finite.
    (p > 0.0).then(|| ((1.0 / p).round() as u64).max(1))
}

impl LossModel {
    /// Builds the model for `config`, drawing from a stream derived from `seed`.
    pub fn new(config: &LossConfig, seed: u64) -> Self {
        let state = match *config {
            LossConfig::None => State::None,
            LossConfig::Bernoulli { p } => State::Bernoulli { p },
            LossConfig::Periodic { p } => State::Periodic {
                every: periodic_every(p),
                count: 0,
            },
            LossConfig::GilbertElliott { p, r, k, h } => State::GilbertElliott {
                p,
                r,
                loss_good: 1.0 - k,
                loss_bad: 1.0 - h,
                bad: false,
            },
            LossConfig::BoundedBernoulli { p, max_burst } => State::BoundedBernoulli {
                p,
                max_burst,
                run: 0,
            },
        };
        LossModel {
            state,
            rng: stream(seed, streams::LOSS),
        }
    }

    /// Decides the fate of the next packet: `true` = lost.
    pub fn is_lost(&mut self) -> bool {
        let rng = &mut self.rng;
        match &mut self.state {
            State::None => false,
            State::Bernoulli { p } => rng.random::<f64>() < *p,
            State::Periodic { every, count } => {
                let Some(every) = *every else { return false };
                *count += 1;
                *count % every == 0
            }
            State::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
                bad,
            } => {
                let flip = if *bad { *r } else { *p };
                if rng.random::<f64>() < flip {
                    *bad = !*bad;
                }
                rng.random::<f64>() < if *bad { *loss_bad } else { *loss_good }
            }
            State::BoundedBernoulli { p, max_burst, run } => {
                // Draw even when forced to pass, so the stream stays aligned packet by packet.
                let lost = rng.random::<f64>() < *p && *run < *max_burst;
                *run = if lost { *run + 1 } else { 0 };
                lost
            }
        }
    }

    /// Whether a Gilbert-Elliott model is in its Bad state (always `false` for other models).
    pub fn in_bad_state(&self) -> bool {
        matches!(self.state, State::GilbertElliott { bad: true, .. })
    }
}

/// Stationary (πG, πB) of the Gilbert-Elliott chain; `None` if p + r = 0.
fn stationary(p: f64, r: f64) -> Option<(f64, f64)> {
    let s = p + r;
    (s > 0.0).then(|| (r / s, p / s))
}

/// Long-run loss rate of Gilbert-Elliott: (1−k)·πG + (1−h)·πB (NaN if p = r = 0).
pub fn gilbert_elliott_mean_loss(p: f64, r: f64, k: f64, h: f64) -> f64 {
    match stationary(p, r) {
        Some((g, b)) => (1.0 - k) * g + (1.0 - h) * b,
        None => f64::NAN,
    }
}

/// Mean length of a run of consecutive losses for Gilbert-Elliott with this crate's order of
/// operations: mean loss divided by P(packet n−1 passes, packet n is lost).
pub fn gilbert_elliott_mean_burst(p: f64, r: f64, k: f64, h: f64) -> f64 {
    let Some((g, b)) = stationary(p, r) else {
        return f64::NAN;
    };
    let (lg, lb) = (1.0 - k, 1.0 - h);
    let loss = lg * g + lb * b;
    // Pass in state a, transition a→b, loss in b.
    let starts =
        g * (1.0 - lg) * ((1.0 - p) * lg + p * lb) + b * (1.0 - lb) * (r * lg + (1.0 - r) * lb);
    loss / starts
}

/// Solves (1−k)·πG + (1−h)·πB = `target` for `k` (the seed-003 parameterisation, with p = 1−γ and
/// r = 1−β). Fails if the inputs are not probabilities or no `k` in `[0, 1]` reaches `target`.
pub fn gilbert_elliott_k_for_target(p: f64, r: f64, h: f64, target: f64) -> Result<f64, Error> {
    for (name, value) in [("p", p), ("r", r), ("h", h), ("target", target)] {
        check_probability(name, value)?;
    }
    let (g, b) = stationary(p, r).ok_or(Error::DegenerateChain)?;
    let min = (1.0 - h) * b;
    let max = g + min;
    // Tolerate rounding at the ends of the range, then clamp.
    let eps = 1e-12;
    if target < min - eps || target > max + eps || g == 0.0 {
        return Err(Error::UnreachableLossTarget { target, min, max });
    }
    Ok((1.0 - (target - min) / g).clamp(0.0, 1.0))
}

/// Rejects values outside `[0, 1]` (and NaN).
pub(crate) fn check_probability(name: &'static str, value: f64) -> Result<(), Error> {
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(Error::Probability { name, value })
    }
}

impl LossConfig {
    /// Theoretical long-run loss rate, where a closed form exists.
    pub fn mean_loss(&self) -> Option<f64> {
        match *self {
            LossConfig::None => Some(0.0),
            LossConfig::Bernoulli { p } => Some(p),
            LossConfig::Periodic { p } => Some(periodic_every(p).map_or(0.0, |n| 1.0 / n as f64)),
            LossConfig::GilbertElliott { p, r, k, h } => {
                stationary(p, r).map(|_| gilbert_elliott_mean_loss(p, r, k, h))
            }
            LossConfig::BoundedBernoulli { p, max_burst } => {
                // Run length is a chain 0..=M with π_j ∝ p^j; a loss happens from any j < M.
                let m = max_burst as i32;
                Some(if p >= 1.0 {
                    f64::from(max_burst) / (f64::from(max_burst) + 1.0)
                } else {
                    p * (1.0 - p.powi(m)) / (1.0 - p.powi(m + 1))
                })
            }
        }
    }

    /// Theoretical mean number of consecutive losses per loss burst, where a closed form exists
    /// (infinite when every packet is lost; `None` when nothing is ever lost).
    pub fn mean_burst_length(&self) -> Option<f64> {
        match *self {
            LossConfig::None => None,
            LossConfig::Bernoulli { p } => (p > 0.0).then(|| 1.0 / (1.0 - p)),
            LossConfig::Periodic { p } => {
                periodic_every(p).map(|n| if n == 1 { f64::INFINITY } else { 1.0 })
            }
            LossConfig::GilbertElliott { p, r, k, h } => {
                let m = gilbert_elliott_mean_burst(p, r, k, h);
                (m.is_finite() || m == f64::INFINITY).then_some(m)
            }
            LossConfig::BoundedBernoulli { p, max_burst } => {
                // Geometric runs truncated at M: E = Σ_{j<M} p^j.
                (p > 0.0 && max_burst > 0).then(|| {
                    if p >= 1.0 {
                        f64::from(max_burst)
                    } else {
                        (1.0 - p.powi(max_burst as i32)) / (1.0 - p)
                    }
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const N: usize = 1_000_000;

    /// Loss rate and mean burst length of `n` draws.
    fn measure(model: &mut LossModel, n: usize) -> (f64, f64) {
        let (mut lost, mut bursts, mut prev) = (0usize, 0usize, false);
        for _ in 0..n {
            let l = model.is_lost();
            lost += l as usize;
            bursts += (l && !prev) as usize;
            prev = l;
        }
        (lost as f64 / n as f64, lost as f64 / bursts.max(1) as f64)
    }

    fn seed003(target: f64) -> LossConfig {
        let (p, r, h) = (1.0 - 0.99875, 1.0 - 0.875, 0.5);
        let k = gilbert_elliott_k_for_target(p, r, h, target).expect("reachable");
        LossConfig::GilbertElliott { p, r, k, h }
    }

    #[test]
    fn bernoulli_rate_and_burst_match_theory() {
        let cfg = LossConfig::Bernoulli { p: 0.05 };
        let (loss, burst) = measure(&mut LossModel::new(&cfg, 1), N);
        // sd of the rate is sqrt(p(1-p)/N) ≈ 2.2e-4.
        assert!((loss - 0.05).abs() < 1.1e-3, "loss {loss}");
        let expect = cfg.mean_burst_length().expect("closed form");
        assert!(
            (burst - expect).abs() / expect < 0.01,
            "burst {burst} vs {expect}"
        );
    }

    #[test]
    fn k_solver_round_trips_and_rejects_unreachable_targets() {
        let (p, r, h) = (0.00125, 0.125, 0.5);
        for target in [0.05, 0.10, 0.15, 0.20, 0.25] {
            let k = gilbert_elliott_k_for_target(p, r, h, target).expect("reachable");
            assert!((gilbert_elliott_mean_loss(p, r, k, h) - target).abs() < 1e-12);
        }
        // (1-h)·πB ≈ 0.00495 is the least loss possible with h = 0.5.
        assert!(matches!(
            gilbert_elliott_k_for_target(p, r, h, 0.001),
            Err(Error::UnreachableLossTarget { .. })
        ));
        assert!(matches!(
            gilbert_elliott_k_for_target(p, r, 1.5, 0.1),
            Err(Error::Probability { .. })
        ));
        assert_eq!(
            gilbert_elliott_k_for_target(0.0, 0.0, 0.5, 0.1),
            Err(Error::DegenerateChain)
        );
        // k = 0 is the most loss possible: every Good packet lost.
        let max = gilbert_elliott_mean_loss(p, r, 0.0, h);
        assert!(gilbert_elliott_k_for_target(p, r, h, max + 1e-6).is_err());
    }

    #[test]
    fn gilbert_elliott_seed003_matches_theory() {
        let (p, r, h) = (0.00125, 0.125, 0.5);
        let pi_b = p / (p + r);
        for target in [0.05, 0.25] {
            let cfg = seed003(target);
            let mut m = LossModel::new(&cfg, 7);
            let (mut lost, mut lost_bad, mut bursts, mut prev) = (0usize, 0usize, 0usize, false);
            for _ in 0..N {
                let l = m.is_lost();
                lost += l as usize;
                lost_bad += (l && m.in_bad_state()) as usize;
                bursts += (l && !prev) as usize;
                prev = l;
            }
            let loss = lost as f64 / N as f64;
            assert!(
                (loss - target).abs() < 0.05 * target,
                "target {target}: loss {loss}"
            );
            let frac_bad = lost_bad as f64 / lost as f64;
            let expect_bad = (1.0 - h) * pi_b / target;
            assert!(
                (frac_bad - expect_bad).abs() < 0.1 * expect_bad,
                "bad share {frac_bad} vs {expect_bad}"
            );
            let burst = lost as f64 / bursts as f64;
            let expect_burst = cfg.mean_burst_length().expect("closed form");
            assert!(
                (burst - expect_burst).abs() < 0.03 * expect_burst,
                "burst {burst} vs {expect_burst}"
            );
        }
    }

    #[test]
    fn pure_gilbert_bursts_last_one_over_r() {
        let cfg = LossConfig::GilbertElliott {
            p: 0.01,
            r: 0.25,
            k: 1.0,
            h: 0.0,
        };
        let (loss, burst) = measure(&mut LossModel::new(&cfg, 3), N);
        assert!((burst - 4.0).abs() < 0.15, "burst {burst}");
        assert!((cfg.mean_burst_length().expect("closed form") - 4.0).abs() < 1e-9);
        let expect = 0.01 / 0.26;
        assert!((loss - expect).abs() < 0.06 * expect, "loss {loss}");
    }

    #[test]
    fn bounded_bernoulli_never_exceeds_its_bound() {
        let cfg = LossConfig::BoundedBernoulli {
            p: 0.5,
            max_burst: 3,
        };
        let mut m = LossModel::new(&cfg, 11);
        let (mut run, mut longest, mut lost) = (0u32, 0u32, 0usize);
        for _ in 0..N {
            if m.is_lost() {
                run += 1;
                lost += 1;
                longest = longest.max(run);
            } else {
                run = 0;
            }
        }
        assert_eq!(longest, 3);
        let expect = cfg.mean_loss().expect("closed form");
        let loss = lost as f64 / N as f64;
        assert!((loss - expect).abs() < 2e-3, "loss {loss} vs {expect}");
    }

    #[test]
    fn periodic_drops_exactly_every_nth_packet() {
        let mut m = LossModel::new(&LossConfig::Periodic { p: 0.02 }, 0);
        let drops: Vec<usize> = (1..=500).filter(|_| m.is_lost()).collect();
        assert_eq!(drops, vec![50, 100, 150, 200, 250, 300, 350, 400, 450, 500]);
        // round(1/0.003) = 333.
        let mut m = LossModel::new(&LossConfig::Periodic { p: 0.003 }, 0);
        let first = (1..=1000).find(|_| m.is_lost());
        assert_eq!(first, Some(333));
        let mut never = LossModel::new(&LossConfig::Periodic { p: 0.0 }, 0);
        assert!((0..1000).all(|_| !never.is_lost()));
    }

    #[test]
    fn same_seed_same_sequence_different_seed_differs() {
        let cfg = seed003(0.10);
        let run = |seed| {
            let mut m = LossModel::new(&cfg, seed);
            (0..10_000).map(|_| m.is_lost()).collect::<Vec<_>>()
        };
        assert_eq!(run(42), run(42));
        assert_ne!(run(42), run(43));
    }
}
