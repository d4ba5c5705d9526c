//! A difference read against the noise, as nvbench's compare script reads it: every point carries the spread of its
//! repetitions (the CSV's `time_ms_min` and `time_ms_max` beside its median), and a point of run N is classed
//! **faster**, **slower**, **same** or **noisy** than run 1 from both runs' spreads. A 3% difference means a change
//! when the points vary by 0.1%, and nothing when they vary by 10%.
//!
//! Also here: what the runs did not both run (kernels, sizes), said before their figures are compared.

use std::collections::{BTreeMap, BTreeSet};

use super::{is_ok, key, num, text, Comparison, Rec, Run};

/// A point's spread: the relative half-range of its time over its repetitions, `(max - min) / (2 median)`. A rate
/// (or a share of a fixed reference) read at the median time spreads by the same fraction. `None` where the row
/// records no min and max.
pub fn spread_of_row(r: &Rec) -> Option<f64> {
    let (median, min, max) = (num(r, "time_ms_median")?, num(r, "time_ms_min")?, num(r, "time_ms_max")?);
    (median > 0.0 && max >= min && min > 0.0).then(|| (max - min) / (2.0 * median))
}

/// The spread of every `ok` row of `experiment` in `run` by key ([`spread_of_row`]): how `Comparison::spreads`
/// answers by default.
pub fn row_spreads(experiment: &str, run: &Run) -> BTreeMap<String, f64> {
    run.rows(experiment).iter().filter(|r| is_ok(r)).filter_map(|r| Some((key(r)?, spread_of_row(r)?))).collect()
}

/// How a point of run N compares with the same point of run 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    /// Higher (faster) by more than both spreads together: the runs' repetitions do not overlap.
    Faster,
    /// Lower (slower) by more than both spreads together.
    Slower,
    /// Within both spreads, and those are small (at most [`SAME_WITHIN`] together): no difference to see.
    Same,
    /// Within both spreads, but those are wide (or a run recorded none): the runs cannot tell a difference here.
    Noisy,
}

impl Class {
    /// Every class, in the order the report counts them.
    pub const ALL: [Class; 4] = [Class::Faster, Class::Slower, Class::Same, Class::Noisy];

    /// The word the report uses.
    pub fn name(self) -> &'static str {
        match self {
            Class::Faster => "faster",
            Class::Slower => "slower",
            Class::Same => "same",
            Class::Noisy => "noisy",
        }
    }
}

/// Spreads (two runs' relative half-ranges added) up to which a point within them is the **same**: 2%. Wider, a
/// point within them is **noisy**: a difference of that size could hide in it.
pub const SAME_WITHIN: f64 = 0.02;

/// The class of a point whose value in run N over its value in run 1 is `ratio` (higher is faster: every compared
/// value is a rate or a share of one), with relative spreads `spread_1` and `spread_n` ([`spread_of_row`]). The
/// ranges of the two runs' repetitions overlap unless the values differ by more than the spreads together (to first
/// order: `t1 (1 - s1) > tN (1 + sN)` is `ratio - 1 > s1 + sN`).
pub fn classify(ratio: f64, spread_1: Option<f64>, spread_n: Option<f64>) -> Class {
    let (Some(a), Some(b)) = (spread_1, spread_n) else { return Class::Noisy };
    let (difference, noise) = (ratio - 1.0, a + b);
    if difference.abs() > noise {
        if difference > 0.0 {
            Class::Faster
        } else {
            Class::Slower
        }
    } else if noise <= SAME_WITHIN {
        Class::Same
    } else {
        Class::Noisy
    }
}

/// `n` points per class, as the report's line says it: `12 faster, 3 slower, 40 same, 10 noisy`.
pub fn counts_text(classes: &[Class]) -> String {
    Class::ALL
        .iter()
        .map(|c| format!("{} {}", classes.iter().filter(|x| *x == c).count(), c.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A spread as the report prints it: `±0.4%`, `-` where unknown.
pub fn spread_text(spread: Option<f64>) -> String {
    match spread {
        Some(s) if s < 0.001 => format!("±{:.2}%", 100.0 * s),
        Some(s) => format!("±{:.1}%", 100.0 * s),
        None => "-".into(),
    }
}

/// Columns naming what a point runs (its kernel or variant) and its size, where the experiment's CSV has them.
const KERNEL_COLUMNS: [&str; 2] = ["kernel", "variant"];
/// Size columns: a matmul shape, else the first that the CSV has.
const SIZE_COLUMNS: [&str; 4] = ["elements", "items", "n", "group_size"];

/// Lines saying where the runs ran different kernels or sizes of `experiment` (each as its `ok` rows hold them),
/// so a figure that differs because the runs measured different things is not read as a difference of the same
/// thing (one comparison showed 39% against 95% of the vendor at 512 only because the kernel sets differed).
/// Empty where every run ran the same ones.
pub fn set_differences(experiment: &str, runs: &[&Run], comparison: &dyn Comparison) -> Vec<String> {
    let has = |c: &str| runs.iter().all(|r| r.tables.get(experiment).is_some_and(|t| t.has(c)));
    let mut out = Vec::new();
    let kernel = KERNEL_COLUMNS.into_iter().find(|c| has(c));
    let size: Option<Vec<&str>> = if ["m", "n", "k"].iter().all(|c| has(c)) {
        Some(vec!["m", "n", "k"])
    } else {
        SIZE_COLUMNS.into_iter().find(|c| has(c)).map(|c| vec![c])
    };
    let value_of = |r: &Rec, columns: &[&str]| -> String {
        let values: Vec<String> = columns.iter().map(|c| text(r, c)).collect();
        if values.len() == 3 && values.iter().all(|v| *v == values[0]) {
            values[0].clone()
        } else {
            values.join("x")
        }
    };
    for (what, columns) in [("kernels", kernel.map(|k| vec![k])), ("sizes", size)] {
        let Some(columns) = columns else { continue };
        // The vendor BLAS of each platform is one kernel across runs (its join key says so).
        let named = |r: &Rec| {
            let v = value_of(r, &columns);
            match (what, key(r)) {
                ("kernels", Some(k)) if comparison.join_key(&k) != k => {
                    comparison.join_key(&k).split('/').next().unwrap_or(&v).to_string()
                }
                _ => v,
            }
        };
        let sets: Vec<BTreeSet<String>> =
            runs.iter().map(|r| r.rows(experiment).iter().filter(|x| is_ok(x)).map(named).collect()).collect();
        if sets.windows(2).all(|w| w[0] == w[1]) {
            continue;
        }
        let all: BTreeSet<&String> = sets.iter().flatten().collect();
        let mut parts = Vec::new();
        for (r, set) in runs.iter().zip(&sets) {
            let missing: Vec<&str> = all.iter().filter(|v| !set.contains(**v)).map(|v| v.as_str()).collect();
            if !missing.is_empty() {
                parts.push(format!("run {} lacks {} ({})", r.index, listed(&missing), missing.len()));
            }
        }
        let each: Vec<String> = runs.iter().zip(&sets).map(|(r, s)| format!("run {} {}", r.index, s.len())).collect();
        out.push(format!(
            "**The runs ran different {what}** ({}): {}. A figure that picks among them (a best kernel, a share at a \
             size) may differ for that reason alone; the points both runs hold are compared below.",
            each.join(", "),
            parts.join("; ")
        ));
    }
    out
}

/// At most a dozen values, then how many more.
fn listed(values: &[&str]) -> String {
    const SHOWN: usize = 12;
    let mut out: Vec<String> = values.iter().take(SHOWN).map(|v| format!("`{v}`")).collect();
    if values.len() > SHOWN {
        out.push(format!("and {} more", values.len() - SHOWN));
    }
    out.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The classes follow from the two spreads: a difference beyond both is faster or slower; within them it is the
    /// same when they are small and noisy when they are wide or unknown.
    #[test]
    fn a_difference_is_read_against_both_spreads() {
        let cases = [
            (1.10, Some(0.01), Some(0.01), Class::Faster),
            (0.90, Some(0.01), Some(0.01), Class::Slower),
            (1.03, Some(0.001), Some(0.001), Class::Faster),
            (1.03, Some(0.05), Some(0.05), Class::Noisy),
            (1.005, Some(0.004), Some(0.004), Class::Same),
            (1.0, Some(0.015), Some(0.015), Class::Noisy),
            (1.5, None, Some(0.001), Class::Noisy),
            (1.021, Some(0.01), Some(0.01), Class::Faster),
            (1.019, Some(0.01), Some(0.01), Class::Same),
        ];
        for (ratio, a, b, want) in cases {
            assert_eq!(classify(ratio, a, b), want, "{ratio} with spreads {a:?}, {b:?}");
        }
        assert_eq!(counts_text(&[Class::Same, Class::Faster, Class::Same]), "1 faster, 0 slower, 2 same, 0 noisy");
    }

    #[test]
    fn a_rows_spread_is_its_relative_half_range() {
        let row = |med: &str, min: &str, max: &str| -> Rec {
            [("time_ms_median", med), ("time_ms_min", min), ("time_ms_max", max)]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert!(spread_of_row(&row("2", "1.9", "2.3")).is_some_and(|s| (s - 0.1).abs() < 1e-12));
        assert_eq!(spread_of_row(&row("2", "", "")), None);
        assert_eq!(spread_of_row(&row("0", "0", "0")), None);
        assert_eq!(spread_text(Some(0.0004)), "±0.04%");
        assert_eq!(spread_text(Some(0.034)), "±3.4%");
    }
}
