//! Errors for invalid model parameters.

use thiserror::Error;

/// Why a link or loss configuration was rejected.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum Error {
    /// A probability (or rate expressed as one) outside `[0, 1]` or not a number.
    #[error("{name} must be a probability in [0, 1], got {value}")]
    Probability {
        /// Name of the offending parameter.
        name: &'static str,
        /// The value given.
        value: f64,
    },
    /// No Gilbert-Elliott `k` in `[0, 1]` reaches the requested mean loss.
    #[error("no Gilbert-Elliott k in [0, 1] gives a mean loss of {target}: reachable range is [{min}, {max}]")]
    UnreachableLossTarget {
        /// Requested mean loss.
        target: f64,
        /// Mean loss with k = 1 (no loss in Good).
        min: f64,
        /// Mean loss with k = 0 (every packet lost in Good).
        max: f64,
    },
    /// The Gilbert-Elliott chain has no unique stationary distribution (p = r = 0).
    #[error("Gilbert-Elliott p and r are both zero: the stationary loss rate is undefined")]
    DegenerateChain,
    /// A rate schedule that cannot be interpreted unambiguously.
    #[error("rate schedule: {0}")]
    Schedule(&'static str),
    /// A queue discipline parameter outside its meaningful range.
    #[error("queue discipline: {0}")]
    Qdisc(&'static str),
    /// A blackout whose repetition period is zero.
    #[error("blackout period must be greater than zero")]
    BlackoutPeriod,
}
