//! Checking a device result against a reference before its time is recorded.
//!
//! Errors are relative: |got − want| / max(|want|, scale), where `scale` keeps elements near zero from turning
//! rounding noise into huge relative errors (it is the size of the values involved, e.g. max |want|). NaN and
//! infinity never pass, so an output poisoned with NaN before the launch fails wherever the kernel did not write.

use serde::{Deserialize, Serialize};

/// FP32 machine epsilon (2⁻²³).
pub const F32_EPS: f64 = f32::EPSILON as f64;

/// Outcome of comparing a device result with its reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verification {
    /// Largest relative error found (infinite when a value is NaN or infinite).
    pub max_rel_err: f64,
    /// Largest relative error allowed.
    pub tolerance: f64,
    /// Elements compared.
    pub checked: usize,
    /// Elements over the tolerance.
    pub failures: usize,
    /// The first few failures as (index, got, want), for the error message.
    pub first_failures: Vec<(usize, f64, f64)>,
}

impl Verification {
    /// Whether every element is within tolerance.
    pub fn passed(&self) -> bool {
        self.failures == 0 && self.checked > 0
    }

    /// One line for a failed check: how many, the worst error and the first mismatches.
    pub fn summary(&self) -> String {
        if self.checked == 0 {
            return "nothing was compared".to_string();
        }
        let firsts: Vec<String> =
            self.first_failures.iter().map(|(i, g, w)| format!("[{i}] is {g:e}, should be {w:e}")).collect();
        format!(
            "{} of {} elements off by more than {:e} (worst {:e}); {}",
            self.failures,
            self.checked,
            self.tolerance,
            self.max_rel_err,
            firsts.join("; ")
        )
    }
}

/// Compares `got` with `want` element by element, relative to `max(|want|, scale)`.
pub fn compare<G, W>(got: &[G], want: &[W], scale: f64, tolerance: f64) -> Verification
where
    G: Copy + Into<f64>,
    W: Copy + Into<f64>,
{
    let mut v = Verification { max_rel_err: 0.0, tolerance, checked: 0, failures: 0, first_failures: Vec::new() };
    if got.len() != want.len() {
        v.failures = got.len().max(want.len());
        v.max_rel_err = f64::INFINITY;
        return v;
    }
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let (g, w): (f64, f64) = (g.into(), w.into());
        let err = if g.is_finite() && w.is_finite() {
            (g - w).abs() / w.abs().max(scale).max(f64::MIN_POSITIVE)
        } else {
            f64::INFINITY
        };
        v.checked += 1;
        // `err` is never NaN: non-finite inputs were mapped to infinity above.
        if err > tolerance {
            v.failures += 1;
            if v.first_failures.len() < 5 {
                v.first_failures.push((i, g, w));
            }
        }
        v.max_rel_err = v.max_rel_err.max(err);
    }
    v
}

/// Largest absolute value in a slice (the natural `scale` for [`compare`]).
pub fn max_abs<T: Copy + Into<f64>>(values: &[T]) -> f64 {
    values.iter().map(|&x| x.into().abs()).fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_values_pass_and_report_zero_error() {
        let v = compare(&[1.0f32, 2.0, 3.0], &[1.0f64, 2.0, 3.0], 3.0, 1e-6);
        assert!(v.passed());
        assert_eq!(v.max_rel_err, 0.0);
        assert_eq!(v.checked, 3);
    }

    #[test]
    fn one_bad_element_fails_with_its_index() {
        let v = compare(&[1.0f32, 2.5, 3.0], &[1.0f64, 2.0, 3.0], 1.0, 1e-3);
        assert!(!v.passed());
        assert_eq!(v.failures, 1);
        assert_eq!(v.first_failures[0].0, 1);
        assert!((v.max_rel_err - 0.25).abs() < 1e-12);
        assert!(v.summary().contains("[1] is 2.5e0, should be 2e0"), "{}", v.summary());
    }

    #[test]
    fn nan_and_infinity_never_pass() {
        for bad in [f32::NAN, f32::INFINITY] {
            let v = compare(&[bad], &[1.0f64], 1.0, 1e9);
            assert!(!v.passed());
            assert!(v.max_rel_err.is_infinite());
        }
    }

    #[test]
    fn scale_keeps_near_zero_elements_from_failing_on_rounding() {
        // 1e-9 against 0: relative to |want| = 0 it is infinite, relative to the data's scale it is rounding.
        assert!(compare(&[1e-9f32], &[0.0f64], 1.0, 1e-6).passed());
        assert!(!compare(&[1e-9f32], &[0.0f64], 0.0, 1e-6).passed());
    }

    #[test]
    fn length_mismatch_and_empty_input_fail() {
        assert!(!compare(&[1.0f32], &[1.0f64, 2.0], 1.0, 1.0).passed());
        assert!(!compare::<f32, f64>(&[], &[], 1.0, 1.0).passed());
        assert_eq!(max_abs(&[-3.0f32, 2.0]), 3.0);
    }
}
