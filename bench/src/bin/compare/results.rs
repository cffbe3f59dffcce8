//! What the children reported, by run and repetition, the spread of a
//! figure over the repetitions (min / median / max), and how a figure is
//! written in the report.

use std::collections::BTreeMap;

use crate::runs::{Run, Variant};
use crate::systems::{Figures, Sys, Work};

/// One figure over the repetitions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

impl Spread {
    /// The spread of `values` (the median of an even count is the mean of
    /// the middle two); `None` for none.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Spread> {
        let mut v: Vec<f64> = values.into_iter().collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Spread {
            min: v[0],
            median,
            max: v[n - 1],
        })
    }
}

pub fn fmt_opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".to_string(), |v| format!("{v:.digits$}"))
}

/// `min / median / max`, or one figure where the three agree at `digits`.
pub fn fmt_spread(s: Option<Spread>, digits: usize) -> String {
    match s {
        None => "-".to_string(),
        Some(s) => {
            let [min, median, max] = [s.min, s.median, s.max].map(|v| format!("{v:.digits$}"));
            if min == max {
                median
            } else {
                format!("{min} / {median} / {max}")
            }
        }
    }
}

pub fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

pub fn median(s: Option<Spread>) -> Option<f64> {
    Some(s?.median)
}

/// Whether `holds` is true of every repetition, if all `reps` are there.
pub fn every_rep(per_rep: &PerRep, reps: usize, holds: impl Fn(f64) -> bool) -> Option<bool> {
    if per_rep.len() < reps || reps == 0 {
        return None;
    }
    Some(per_rep.values().all(|&v| holds(v)))
}

/// A figure per repetition (0-based), for the repetitions that produced it.
pub type PerRep = BTreeMap<usize, f64>;

/// Pairs the repetitions present in both `a` and `b`.
pub fn paired(a: &PerRep, b: &PerRep) -> Vec<(usize, f64, f64)> {
    a.iter()
        .filter_map(|(&rep, &x)| Some((rep, x, *b.get(&rep)?)))
        .collect()
}

/// Everything the children printed: (workload, system, variant) ->
/// repetition -> figures.
pub struct Results {
    runs: BTreeMap<(&'static str, &'static str, Variant), BTreeMap<usize, Figures>>,
    /// Repetitions asked for.
    pub reps: usize,
}

impl Results {
    pub fn new(reps: usize) -> Results {
        Results {
            runs: BTreeMap::new(),
            reps,
        }
    }

    pub fn insert(&mut self, run: Run, rep: usize, figures: Figures) {
        self.runs
            .entry((run.work.name(), run.sys.name(), run.variant))
            .or_default()
            .insert(rep, figures);
    }

    /// Adds `key` to the figures of `run` in repetition `rep` (tests build
    /// their results a figure at a time).
    #[cfg(test)]
    pub fn insert_one(&mut self, run: Run, rep: usize, key: &str, value: f64) {
        self.runs
            .entry((run.work.name(), run.sys.name(), run.variant))
            .or_default()
            .entry(rep)
            .or_default()
            .insert(key.to_string(), value);
    }

    /// Whether `sys` (as `variant`) reported anything in `work`.
    pub fn ran(&self, work: Work, sys: Sys, variant: Variant) -> bool {
        self.runs
            .get(&(work.name(), sys.name(), variant))
            .is_some_and(|reps| !reps.is_empty())
    }

    /// `key` of `sys` (as `variant`) in `work`, per repetition.
    pub fn per_rep(&self, work: Work, sys: Sys, variant: Variant, key: &str) -> PerRep {
        self.runs
            .get(&(work.name(), sys.name(), variant))
            .map(|reps| {
                reps.iter()
                    .filter_map(|(&rep, figures)| Some((rep, *figures.get(key)?)))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The overhead of `sys` above the floor in figure `key`, per
    /// repetition: each repetition's figure less the floor's of the same
    /// repetition.
    pub fn overhead_per_rep_of(&self, work: Work, sys: Sys, variant: Variant, key: &str) -> PerRep {
        let floor = self.per_rep(work, Sys::Floor, Variant::Plain, key);
        let own = self.per_rep(work, sys, variant, key);
        paired(&own, &floor)
            .into_iter()
            .map(|(rep, x, f)| (rep, x - f))
            .collect()
    }

    /// The spread of `key` of `sys` (as `variant`) in `work`.
    pub fn spread(&self, work: Work, sys: Sys, variant: Variant, key: &str) -> Option<Spread> {
        Spread::of(self.per_rep(work, sys, variant, key).into_values())
    }

    /// The spread of the overhead above the floor in figure `key`.
    pub fn overhead_spread_of(
        &self,
        work: Work,
        sys: Sys,
        variant: Variant,
        key: &str,
    ) -> Option<Spread> {
        Spread::of(
            self.overhead_per_rep_of(work, sys, variant, key)
                .into_values(),
        )
    }

    /// The median of `key` of `sys` in `work`, default settings.
    pub fn get(&self, work: Work, sys: Sys, key: &str) -> Option<f64> {
        Some(self.spread(work, sys, Variant::Plain, key)?.median)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_of_odd_and_even_counts() {
        assert_eq!(Spread::of(Vec::new()), None);
        assert_eq!(
            Spread::of([3.0, 1.0, 2.0]),
            Some(Spread {
                min: 1.0,
                median: 2.0,
                max: 3.0
            })
        );
        assert_eq!(
            Spread::of([4.0, 1.0, 2.0, 10.0]),
            Some(Spread {
                min: 1.0,
                median: 3.0,
                max: 10.0
            })
        );
    }

    #[test]
    fn overhead_pairs_each_repetition_with_its_own_floor() {
        let mut r = Results::new(3);
        let run = |sys| Run {
            work: Work::W2,
            sys,
            variant: Variant::Plain,
        };
        let figures = |ns: f64| Figures::from([("ns_per_op".to_string(), ns)]);
        for (rep, floor, tw) in [(0, 10.0, 50.0), (1, 20.0, 45.0), (2, 12.0, 40.0)] {
            r.insert(run(Sys::Floor), rep, figures(floor));
            r.insert(run(Sys::Tickwheel), rep, figures(tw));
        }
        // Repetition 3 of tickwheel has no floor: left out.
        r.insert(run(Sys::Tickwheel), 3, figures(1.0));
        let per_rep = r.overhead_per_rep_of(Work::W2, Sys::Tickwheel, Variant::Plain, "ns_per_op");
        assert_eq!(
            per_rep.into_iter().collect::<Vec<_>>(),
            [(0, 40.0), (1, 25.0), (2, 28.0)]
        );
        let spread = r.overhead_spread_of(Work::W2, Sys::Tickwheel, Variant::Plain, "ns_per_op");
        assert_eq!(spread.map(|s| s.median), Some(28.0));
        assert_eq!(r.get(Work::W2, Sys::Tokio, "ns_per_op"), None);
    }
}
