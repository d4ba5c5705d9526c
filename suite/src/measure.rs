//! Timing statistics: median, min and max over repetitions (never a mean of one pair of events).

use serde::{Deserialize, Serialize};

/// Summary of repeated timings of one sweep point, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Timed repetitions.
    pub reps: usize,
    /// Median time, ms.
    pub median_ms: f64,
    /// Fastest repetition, ms.
    pub min_ms: f64,
    /// Slowest repetition, ms.
    pub max_ms: f64,
}

impl Stats {
    /// Summarises timings in ms. `None` when there are none or any is not a finite, non-negative number.
    pub fn from_ms(times: &[f64]) -> Option<Stats> {
        if times.is_empty() || times.iter().any(|t| !t.is_finite() || *t < 0.0) {
            return None;
        }
        let mut sorted = times.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        // The median of an even count is the mean of the middle two, so it does not lean on either.
        let median_ms = if n % 2 == 1 { sorted[n / 2] } else { (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0 };
        Some(Stats { reps: n, median_ms, min_ms: sorted[0], max_ms: sorted[n - 1] })
    }

    /// Spread of the timings relative to the median: (max − min) / median.
    pub fn spread(&self) -> f64 {
        if self.median_ms > 0.0 {
            (self.max_ms - self.min_ms) / self.median_ms
        } else {
            0.0
        }
    }

    /// Rate in units of 10⁹ per second for `work` units per repetition (FLOP → GFLOP/s, bytes → GB/s),
    /// at the median time. `None` when the median is zero or not finite: no rate can be computed from it, and a
    /// kernel cannot take no time, so the caller reports the point as an error rather than write NaN or infinity.
    pub fn giga_per_second(&self, work: f64) -> Option<f64> {
        let rate = work / (self.median_ms * 1e-3) / 1e9;
        (self.median_ms > 0.0 && self.median_ms.is_finite() && rate.is_finite()).then_some(rate)
    }
}

/// Floating-point operations of a dense matrix product C = A·B with A m×k and B k×n: one multiply and one add
/// per term, 2·m·n·k.
pub fn matmul_flops(m: usize, n: usize, k: usize) -> f64 {
    2.0 * m as f64 * n as f64 * k as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_min_max_of_odd_and_even_counts() {
        let s = Stats::from_ms(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.reps, s.median_ms, s.min_ms, s.max_ms), (3, 2.0, 1.0, 3.0));
        // Unsorted input with the extremes in the middle: a median taken without sorting reads 9.0.
        let s = Stats::from_ms(&[4.0, 9.0, 1.0, 2.0, 3.0]).unwrap();
        assert_eq!((s.median_ms, s.min_ms, s.max_ms), (3.0, 1.0, 9.0));
        let s = Stats::from_ms(&[4.0, 1.0, 2.0, 3.0]).unwrap();
        assert_eq!(s.median_ms, 2.5);
        assert!((s.spread() - 1.2).abs() < 1e-12);
        assert_eq!(Stats::from_ms(&[0.0, 0.0]).unwrap().spread(), 0.0);
    }

    #[test]
    fn no_stats_from_nothing_or_nonsense() {
        assert_eq!(Stats::from_ms(&[]), None);
        assert_eq!(Stats::from_ms(&[1.0, f64::NAN]), None);
        assert_eq!(Stats::from_ms(&[1.0, f64::INFINITY]), None);
        assert_eq!(Stats::from_ms(&[-1.0]), None);
        assert_eq!(Stats::from_ms(&[0.5]), Some(Stats { reps: 1, median_ms: 0.5, min_ms: 0.5, max_ms: 0.5 }));
    }

    #[test]
    fn rates_use_the_median() {
        let s = Stats::from_ms(&[1.0, 2.0, 100.0]).unwrap();
        // 2e9 units in 2 ms = 1000 G/s (the mean, 34.3 ms, would give 58.3).
        assert!((s.giga_per_second(2e9).unwrap() - 1000.0).abs() < 1e-9);
        assert_eq!(matmul_flops(4096, 4096, 4096), 2.0 * 4096f64.powi(3));
        assert_eq!(matmul_flops(2, 3, 5), 60.0);
    }

    #[test]
    fn a_zero_median_has_no_rate() {
        let zero = Stats::from_ms(&[0.0, 0.0, 1.0]).unwrap();
        assert_eq!(zero.median_ms, 0.0);
        assert_eq!(zero.giga_per_second(1e9), None);
        // No work in a positive time is a rate of zero, not an error.
        assert_eq!(Stats::from_ms(&[1.0]).unwrap().giga_per_second(0.0), Some(0.0));
        let tiny = Stats { reps: 1, median_ms: f64::MIN_POSITIVE, min_ms: 0.0, max_ms: 1.0 };
        assert_eq!(tiny.giga_per_second(1e300), None, "an infinite rate is not a rate");
    }
}
