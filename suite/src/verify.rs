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

/// Relative tolerance of an FP32 matrix product C = A·B with inner size `k`, for inputs drawn uniformly from
/// [−1, 1) (as the matmul experiment draws them), measured against the scale of [`check_matmul`].
///
/// Derivation (the probabilistic model of Higham and Mary, applied to this data). u = 2⁻²⁴ = ε/2 is the unit
/// roundoff of FP32. One element is c = Σₚ aₚbₚ: the products have mean 0 and E[(ab)²] = E[a²]·E[b²] = 1/9, so
/// c has standard deviation σ = √K / 3. Summed in FP32 one term at a time (with or without FMA), each partial sum
/// Sⱼ of j terms is rounded with a relative error |δⱼ| ≤ u, and the computed sum is off by E ≈ Σⱼ Sⱼδⱼ (product
/// rounding, without FMA, adds Σ aₚbₚηₚ, of variance K·u²/9: negligible). Taking the δⱼ as independent with mean
/// 0 and variance at most u², Var E ≤ u²·Σⱼ E[Sⱼ²] = u²·Σⱼ j/9 ≈ u²K²/18. Blocked and tree orders (what tiled
/// kernels and BLAS libraries use) have smaller partial sums, so less error: sequential order is the worst case.
/// The kernel and an FP32 reference each carry such an error, so their difference has a standard deviation of
/// at most √2·uK/√18 = uK/3 = u√K·σ.
///
/// The check divides every difference by a common scale of at least 3σ = √K (and by max |C| when that is larger),
/// so the largest scaled difference over M·N elements stays below z·(uK/3)/√K = (z/3)·u√K, where z is the
/// Gaussian quantile of the largest of M·N differences: z ≈ 7.7 even at 8192² elements with a 10⁻⁶ chance of a
/// false failure. Hence a tolerance of 4u√K = 2ε√K (z = 12), a quarter of the former 8ε√K.
///
/// What it rejects: rounding the inputs to TF32 (10 mantissa bits, u = 2⁻¹¹) changes each product by a relative
/// error of standard deviation about 0.8·2⁻¹¹, so c by about 4·10⁻⁴·σ, the same at every K; relative to a scale
/// of about 3σ the largest error is about 4·10⁻⁴, against a tolerance of 2.2·10⁻⁵ at K = 8192 and 1.5·10⁻⁴ even at
/// K = 2²⁰. A missing K term leaves out one product, up to 1 in size, against a scale of √K: 10⁻² at K = 8192.
pub fn matmul_tolerance(k: usize) -> f64 {
    2.0 * (k as f64).sqrt() * F32_EPS
}

/// Checks an FP32 matrix product of inner size `k` (inputs uniform in [−1, 1)) against a reference, element by
/// element, with [`matmul_tolerance`] relative to max(max |want|, √K).
pub fn check_matmul<G, W>(got: &[G], want: &[W], k: usize) -> Verification
where
    G: Copy + Into<f64>,
    W: Copy + Into<f64>,
{
    let scale = max_abs(want).max((k as f64).sqrt());
    compare(got, want, scale, matmul_tolerance(k))
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
