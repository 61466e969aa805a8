//! Checks that a configuration means what it says before a model is built from it.
//!
//! Models never panic on bad values (a probability of 7 simply always fires), but the scenario
//! crate should call [`LinkConfig::validate`] to report such mistakes to the user.

use crate::config::{LinkConfig, LossConfig, RateProfile};
use crate::error::Error;
use crate::loss::check_probability;

impl RateProfile {
    /// Rejects schedules that are empty, do not start at zero, are not strictly increasing,
    /// or repeat with a zero period.
    pub fn validate(&self) -> Result<(), Error> {
        let RateProfile::Schedule {
            steps,
            repeat_every,
        } = self
        else {
            return Ok(());
        };
        let first = steps.first().ok_or(Error::Schedule("no steps"))?;
        if !first.0.is_zero() {
            return Err(Error::Schedule("the first step must start at zero"));
        }
        if steps.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err(Error::Schedule(
                "step start times must be strictly increasing",
            ));
        }
        if repeat_every.is_some_and(|p| p.is_zero()) {
            return Err(Error::Schedule("repeat period must be greater than zero"));
        }
        Ok(())
    }
}

impl LossConfig {
    /// Rejects parameters that are not probabilities.
    pub fn validate(&self) -> Result<(), Error> {
        match *self {
            LossConfig::None => Ok(()),
            LossConfig::Bernoulli { p }
            | LossConfig::Periodic { p }
            | LossConfig::BoundedBernoulli { p, .. } => check_probability("loss p", p),
            LossConfig::GilbertElliott { p, r, k, h } => {
                check_probability("Gilbert-Elliott p", p)?;
                check_probability("Gilbert-Elliott r", r)?;
                check_probability("Gilbert-Elliott k", k)?;
                check_probability("Gilbert-Elliott h", h)
            }
        }
    }
}

impl LinkConfig {
    /// Rejects any parameter that a model would silently reinterpret.
    pub fn validate(&self) -> Result<(), Error> {
        self.rate.validate()?;
        self.loss.validate()?;
        check_probability("corrupt", self.corrupt)?;
        check_probability("bit_error_rate", self.bit_error_rate)?;
        check_probability("duplicate", self.duplicate)?;
        check_probability("reorder p", self.reorder.p)?;
        if self
            .blackouts
            .iter()
            .any(|b| b.period.is_some_and(|p| p.is_zero()))
        {
            return Err(Error::BlackoutPeriod);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::config::Blackout;

    #[test]
    fn accepts_ideal_and_rejects_each_kind_of_mistake() {
        assert_eq!(LinkConfig::ideal().validate(), Ok(()));
        let ms = Duration::from_millis;
        let bad_rates = [
            RateProfile::Schedule {
                steps: vec![],
                repeat_every: None,
            },
            RateProfile::Schedule {
                steps: vec![(ms(1), 5)],
                repeat_every: None,
            },
            RateProfile::Schedule {
                steps: vec![(ms(0), 5), (ms(2), 1), (ms(2), 3)],
                repeat_every: None,
            },
            RateProfile::Schedule {
                steps: vec![(ms(0), 5)],
                repeat_every: Some(ms(0)),
            },
        ];
        for rate in bad_rates {
            let cfg = LinkConfig {
                rate,
                ..LinkConfig::ideal()
            };
            assert!(matches!(cfg.validate(), Err(Error::Schedule(_))));
        }
        let cfg = LinkConfig {
            duplicate: 1.5,
            ..LinkConfig::ideal()
        };
        assert!(matches!(
            cfg.validate(),
            Err(Error::Probability {
                name: "duplicate",
                ..
            })
        ));
        let cfg = LinkConfig {
            bit_error_rate: f64::NAN,
            ..LinkConfig::ideal()
        };
        assert!(matches!(cfg.validate(), Err(Error::Probability { .. })));
        let loss = LossConfig::GilbertElliott {
            p: 0.1,
            r: -0.1,
            k: 1.0,
            h: 0.0,
        };
        let cfg = LinkConfig {
            loss,
            ..LinkConfig::ideal()
        };
        assert!(matches!(
            cfg.validate(),
            Err(Error::Probability {
                name: "Gilbert-Elliott r",
                ..
            })
        ));
        let blackouts = vec![Blackout {
            start: ms(1),
            duration: ms(1),
            period: Some(ms(0)),
        }];
        let cfg = LinkConfig {
            blackouts,
            ..LinkConfig::ideal()
        };
        assert_eq!(cfg.validate(), Err(Error::BlackoutPeriod));
    }
}
