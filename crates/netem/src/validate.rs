//! Checks that a configuration means what it says before a model is built from it.
//!
//! Models never panic on bad values (a probability of 7 simply always fires), but the scenario
//! crate should call [`LinkConfig::validate`] to report such mistakes to the user.

use crate::config::{LinkConfig, LossConfig, RateProfile};
use crate::error::Error;
use crate::loss::check_probability;
use crate::qdisc::{CodelConfig, QdiscConfig};

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

fn check(ok: bool, what: &'static str) -> Result<(), Error> {
    if ok {
        Ok(())
    } else {
        Err(Error::Qdisc(what))
    }
}

fn gain(x: f64) -> bool {
    x.is_finite() && x >= 0.0
}

impl CodelConfig {
    /// Rejects a zero target or interval.
    pub fn validate(&self) -> Result<(), Error> {
        check(
            !self.target.is_zero(),
            "CoDel target must be greater than zero",
        )?;
        check(
            !self.interval.is_zero(),
            "CoDel interval must be greater than zero",
        )
    }
}

impl QdiscConfig {
    /// Rejects parameters a discipline cannot run with (Linux refuses most of them too).
    pub fn validate(&self) -> Result<(), Error> {
        match self {
            QdiscConfig::DropTail => Ok(()),
            QdiscConfig::Codel(c) => {
                c.validate()?;
                check(
                    c.limit_packets >= 1,
                    "CoDel limit must be at least one packet",
                )
            }
            QdiscConfig::FqCodel(c) => {
                c.codel.validate()?;
                check(
                    (1..=65_536).contains(&c.flows),
                    "FQ-CoDel flows must be between 1 and 65536",
                )?;
                check(
                    c.quantum >= 256,
                    "FQ-CoDel quantum must be at least 256 bytes",
                )?;
                check(
                    c.limit_packets >= 1,
                    "FQ-CoDel limit must be at least one packet",
                )?;
                check(
                    c.drop_batch >= 1,
                    "FQ-CoDel drop batch must be at least one",
                )
            }
            QdiscConfig::Pie(c) => {
                check(!c.target.is_zero(), "PIE target must be greater than zero")?;
                check(
                    !c.tupdate.is_zero(),
                    "PIE tupdate must be greater than zero",
                )?;
                check(
                    c.limit_packets >= 1,
                    "PIE limit must be at least one packet",
                )?;
                check(
                    gain(c.alpha) && gain(c.beta),
                    "PIE alpha and beta must be >= 0",
                )
            }
            QdiscConfig::Red(c) => {
                check(c.min_bytes <= c.max_bytes, "RED min must not exceed max")?;
                check(c.limit_bytes >= 1, "RED limit must be at least one byte")?;
                check(
                    c.max_p > 0.0 && c.max_p <= 1.0,
                    "RED max_p must be a probability in (0, 1]",
                )?;
                check(c.wlog < 32, "RED wlog must be below 32")?;
                check(c.avpkt >= 1, "RED avpkt must be at least one byte")
            }
            QdiscConfig::DualPi2(c) => {
                check(
                    !c.tupdate.is_zero(),
                    "DualPI2 tupdate must be greater than zero",
                )?;
                check(
                    c.limit_packets >= 1,
                    "DualPI2 limit must be at least one packet",
                )?;
                check(
                    c.coupling_factor >= 1,
                    "DualPI2 coupling factor must be at least 1",
                )?;
                check(
                    c.c_protection_percent <= 100,
                    "DualPI2 C protection must be a percentage",
                )?;
                check(
                    gain(c.alpha) && gain(c.beta),
                    "DualPI2 alpha and beta must be >= 0",
                )
            }
        }
    }
}

impl LinkConfig {
    /// Rejects any parameter that a model would silently reinterpret.
    pub fn validate(&self) -> Result<(), Error> {
        self.rate.validate()?;
        self.loss.validate()?;
        self.qdisc.validate()?;
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

#[cfg(test)]
mod qdisc_tests {
    use std::time::Duration;

    use super::*;
    use crate::qdisc::{DualPi2Config, FqCodelConfig, PieConfig, RedConfig};

    #[test]
    fn every_discipline_default_is_valid_and_each_mistake_is_named() {
        let mut c = LinkConfig::ideal();
        for q in [
            QdiscConfig::DropTail,
            QdiscConfig::Codel(CodelConfig::default()),
            QdiscConfig::FqCodel(FqCodelConfig::default()),
            QdiscConfig::Pie(PieConfig::default()),
            QdiscConfig::Red(RedConfig::default()),
            QdiscConfig::DualPi2(DualPi2Config::default()),
        ] {
            c.qdisc = q;
            assert_eq!(c.validate(), Ok(()), "{:?}", c.qdisc);
        }
        let bad = [
            QdiscConfig::Codel(CodelConfig {
                interval: Duration::ZERO,
                ..CodelConfig::default()
            }),
            QdiscConfig::FqCodel(FqCodelConfig {
                flows: 0,
                ..FqCodelConfig::default()
            }),
            QdiscConfig::FqCodel(FqCodelConfig {
                quantum: 100,
                ..FqCodelConfig::default()
            }),
            QdiscConfig::Pie(PieConfig {
                tupdate: Duration::ZERO,
                ..PieConfig::default()
            }),
            QdiscConfig::Red(RedConfig {
                min_bytes: 100_000,
                ..RedConfig::default()
            }),
            QdiscConfig::Red(RedConfig {
                max_p: 1.5,
                ..RedConfig::default()
            }),
            QdiscConfig::DualPi2(DualPi2Config {
                coupling_factor: 0,
                ..DualPi2Config::default()
            }),
        ];
        for q in bad {
            c.qdisc = q;
            assert!(
                matches!(c.validate(), Err(Error::Qdisc(_))),
                "{:?}",
                c.qdisc
            );
        }
    }
}
