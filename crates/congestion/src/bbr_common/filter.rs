//! The windowed running maximum BBR keeps its estimates in (Linux's `lib/minmax.c`,
//! Kathleen Nichols' algorithm): the best, second-best and third-best samples of the window,
//! each from a later part of it, so the maximum can expire without storing every sample.

/// One sample: its time (here: BBR's round count) and value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Sample {
    t: u64,
    v: u64,
}

/// Running maximum over a window of `win` time units.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct MaxFilter {
    s: [Sample; 3],
}

impl MaxFilter {
    /// The current maximum.
    pub(crate) fn get(&self) -> u64 {
        self.s[0].v
    }

    /// Forgets everything: `v` at `t` is the only sample.
    pub(crate) fn reset(&mut self, t: u64, v: u64) -> u64 {
        self.s = [Sample { t, v }; 3];
        v
    }

    /// Adds sample `v` taken at `t` (times never decrease); returns the window's maximum.
    pub(crate) fn running_max(&mut self, win: u64, t: u64, v: u64) -> u64 {
        let val = Sample { t, v };
        // A new maximum, or even the newest choice has left the window: start over.
        if v >= self.s[0].v || t - self.s[2].t > win {
            return self.reset(t, v);
        }
        if v >= self.s[1].v {
            self.s[1] = val;
            self.s[2] = val;
        } else if v >= self.s[2].v {
            self.s[2] = val;
        }
        self.subwin_update(win, val)
    }

    /// Promotes the later choices when the best one ages out of the window, and takes fresh
    /// second and third choices from later quarters of it.
    fn subwin_update(&mut self, win: u64, val: Sample) -> u64 {
        let dt = val.t - self.s[0].t;
        if dt > win {
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = val;
            if val.t - self.s[0].t > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = val;
            }
        } else if self.s[1].t == self.s[0].t && dt > win / 4 {
            self.s[1] = val;
            self.s[2] = val;
        } else if self.s[2].t == self.s[1].t && dt > win / 2 {
            self.s[2] = val;
        }
        self.s[0].v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_maximum_expires_after_the_window_and_the_next_best_takes_over() {
        let mut f = MaxFilter::default();
        assert_eq!(f.running_max(10, 0, 100), 100);
        // Lower samples do not replace it while it is in the window.
        assert_eq!(f.running_max(10, 3, 80), 100);
        assert_eq!(f.running_max(10, 6, 60), 100);
        assert_eq!(f.running_max(10, 10, 50), 100);
        // Round 11: the round-0 maximum is out of the window (11 − 0 > 10); the second
        // choice, 80 from round 3, is the maximum now.
        assert_eq!(f.running_max(10, 11, 40), 80);
        // A higher sample resets the filter at once.
        assert_eq!(f.running_max(10, 12, 200), 200);
        assert_eq!(f.get(), 200);
        // A gap longer than the window forgets everything.
        assert_eq!(f.running_max(10, 30, 5), 5);
    }
}
