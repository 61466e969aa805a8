//! Independent random streams derived from one seed.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Stream ids: one per impairment, so enabling one impairment never shifts another's draws.
pub(crate) mod streams {
    pub(crate) const LOSS: u64 = 0;
    pub(crate) const CORRUPT: u64 = 1;
    pub(crate) const DUPLICATE: u64 = 2;
    pub(crate) const JITTER: u64 = 3;
    pub(crate) const REORDER: u64 = 4;
    /// The queue discipline's random decisions (RED, PIE, DualPI2) and FQ-CoDel's hash key.
    pub(crate) const QDISC: u64 = 5;
    /// Where a repeating rate schedule starts (`random_phase`).
    pub(crate) const PHASE: u64 = 6;
}

/// A ChaCha8 generator for `(seed, stream)`; ChaCha streams are independent by construction.
pub(crate) fn stream(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    rng
}
