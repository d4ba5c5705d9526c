//! Checking a device result against a reference before its time is recorded.
//!
//! Errors are relative: |got − want| / max(|want|, scale), where `scale` keeps elements near zero from turning
//! rounding noise into huge relative errors (it is the size of the values involved, e.g. max |want|). NaN and
//! infinity never pass, so an output poisoned with NaN before the launch fails wherever the kernel did not write.

use serde::{Deserialize, Serialize};

/// FP32 machine epsilon (2⁻²³).
pub const F32_EPS: f64 = f32::EPSILON as f64;

/// FP64 machine epsilon (2⁻⁵²).
pub const F64_EPS: f64 = f64::EPSILON;

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

/// Compares `got` with `want` element by element, relative to `max(|want|, scale)`. Long inputs are compared in
/// chunks on the host's cores ([`PARALLEL_CHUNK`]); the outcome is the same as one pass in order: the largest error
/// and the counts are exact, and the first failures are still the first by index.
pub fn compare<G, W>(got: &[G], want: &[W], scale: f64, tolerance: f64) -> Verification
where
    G: Copy + Into<f64> + Sync,
    W: Copy + Into<f64> + Sync,
{
    if got.len() != want.len() {
        let failures = got.len().max(want.len());
        return Verification {
            max_rel_err: f64::INFINITY,
            tolerance,
            checked: 0,
            failures,
            first_failures: Vec::new(),
        };
    }
    compare_blocks(got, |range, out| out.extend(want[range].iter().map(|&w| w.into())), scale, tolerance)
}

/// [`compare`] against a reference given element by element: `want(i)` is element i's reference value, computed
/// where it is compared (on the host's cores, chunk by chunk as [`compare`] does) instead of first filled into a
/// vector as long as the output. The outcome is [`compare`]'s on the vector `want` would fill.
pub fn compare_by<G>(got: &[G], want: impl Fn(usize) -> f64 + Sync, scale: f64, tolerance: f64) -> Verification
where
    G: Copy + Into<f64> + Sync,
{
    compare_blocks(got, |range, out| out.extend(range.map(&want)), scale, tolerance)
}

/// [`compare`] against a reference made block by block: `fill(range, out)` appends the reference values of the
/// elements in `range` to `out` (empty on each call; blocks of at most [`BLOCK`] elements, so a reference that is
/// cheaper made many elements at a time, e.g. in SIMD lanes, can be). The outcome is [`compare`]'s.
pub fn compare_blocks<G>(
    got: &[G],
    fill: impl Fn(std::ops::Range<usize>, &mut Vec<f64>) + Sync,
    scale: f64,
    tolerance: f64,
) -> Verification
where
    G: Copy + Into<f64> + Sync,
{
    let parts = in_chunks(got.len(), |range| {
        let mut part = Verification { max_rel_err: 0.0, tolerance, checked: 0, failures: 0, first_failures: vec![] };
        let mut want = Vec::with_capacity(BLOCK);
        for start in range.clone().step_by(BLOCK) {
            let block = start..(start + BLOCK).min(range.end);
            want.clear();
            fill(block.clone(), &mut want);
            merge(&mut part, compare_from(&got[block], start, &want, scale, tolerance));
        }
        part
    });
    let mut v = Verification { max_rel_err: 0.0, tolerance, checked: 0, failures: 0, first_failures: Vec::new() };
    parts.into_iter().for_each(|part| merge(&mut v, part));
    v
}

/// Elements per block of [`compare_blocks`]: its reference values fit in L2.
pub const BLOCK: usize = 1 << 14;

/// Adds `part`, the comparison of the elements after those of `v`, to `v`.
fn merge(v: &mut Verification, part: Verification) {
    v.checked += part.checked;
    v.failures += part.failures;
    v.max_rel_err = v.max_rel_err.max(part.max_rel_err);
    v.first_failures.extend(part.first_failures.into_iter().take(5 - v.first_failures.len().min(5)));
}

/// [`max_abs`] of the `len` values `value(i)`, computed on the host's cores without storing them.
pub fn max_abs_by(len: usize, value: impl Fn(usize) -> f64 + Sync) -> f64 {
    let parts = in_chunks(len, |range| range.map(|i| value(i).abs()).fold(0.0, f64::max));
    parts.into_iter().fold(0.0, f64::max)
}

/// Elements per chunk of [`compare`] and [`max_abs`] when they run on several cores: small inputs (most points) run
/// in one pass on the calling thread; large ones (a 4096² matrix, a 2^25-element vector: tens of milliseconds a pass)
/// are split so each thread has at least this many.
pub const PARALLEL_CHUNK: usize = 1 << 20;

/// `f` over `0..len` cut into ranges of at least [`PARALLEL_CHUNK`], one per core at most, each on a thread of its
/// own; results in the ranges' order. One range (a short input, or one core) runs on the calling thread.
fn in_chunks<T: Send>(len: usize, f: impl Fn(std::ops::Range<usize>) -> T + Sync) -> Vec<T> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunks = (len / PARALLEL_CHUNK).clamp(1, cores);
    if chunks == 1 {
        return vec![f(0..len)];
    }
    let size = len.div_ceil(chunks);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..len)
            .step_by(size)
            .map(|start| {
                let f = &f;
                scope.spawn(move || f(start..(start + size).min(len)))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
    })
}

/// [`compare`] of `got`, the elements from index `start` on, with `want`, in one pass on this thread.
fn compare_from<G, W>(got: &[G], start: usize, want: &[W], scale: f64, tolerance: f64) -> Verification
where
    G: Copy + Into<f64>,
    W: Copy + Into<f64>,
{
    let mut v = Verification { max_rel_err: 0.0, tolerance, checked: 0, failures: 0, first_failures: Vec::new() };
    for (i, (&g, &w)) in (start..).zip(got.iter().zip(want)) {
        let (g, w): (f64, f64) = (g.into(), w.into());
        // Equal finite values are off by exactly 0 (the common case, and no division).
        let err = if g == w && g.is_finite() {
            0.0
        } else if g.is_finite() && w.is_finite() {
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
    G: Copy + Into<f64> + Sync,
    W: Copy + Into<f64> + Sync,
{
    let scale = max_abs(want).max((k as f64).sqrt());
    compare(got, want, scale, matmul_tolerance(k))
}

/// Relative tolerance of an FP64 matrix product C = A·B with inner size `k` (inputs uniform in [−1, 1), as the matmul
/// experiment draws FP64 inputs), checked against a reference more accurate than FP64 (the Dot2 kernel,
/// `matmul_reference_dot2_f64`), relative to the scale of [`check_matmul_f64`].
///
/// Derivation: [`matmul_tolerance`]'s, with FP64's unit roundoff u = 2⁻⁵³ = ε/2. An FP64 kernel summing its K
/// products one at a time (with FMA, so each product is rounded only as part of its sum) is off the exact c by a
/// standard deviation of at most u·K/√18 (the same model of independent roundings of the partial sums Sⱼ, each at
/// most u relative); blocked, tree and matrix-unit orders do better. Here the reference is not another FP64 sum but
/// c to within one rounding (Dot2: |r − c| <= u·|c| + γ²_K·Σ|ab|, γ_K = K·u/(1 − K·u), the second term under 10⁻²¹
/// of Σ|ab| at K = 8192), so the difference is the kernel's own error, a factor √2 smaller than between two FP32
/// sums, and the FP32 form keeps that as extra margin: against a scale of at least 3σ = √K, the largest of 8192²
/// differences stays below (7.7/3)·u√K/√2 with probability 1 − 10⁻⁶, and the tolerance 4u√K = 2ε√K leaves 2.2×.
/// What it rejects: a kernel that computes in FP32 (its products rounded to FP32 alone put about 10⁻⁸ of the scale
/// into c, 10⁵ times the tolerance at K = 8192), a missing K term (about 1/√K of the scale), and one element off by
/// more than 2ε√K of the scale (CPU tests plant each).
pub fn matmul_tolerance_f64(k: usize) -> f64 {
    2.0 * (k as f64).sqrt() * F64_EPS
}

/// Checks an FP64 matrix product of inner size `k` (inputs uniform in [−1, 1)) against a reference, element by
/// element, with [`matmul_tolerance_f64`] relative to max(max |want|, √K).
pub fn check_matmul_f64(got: &[f64], want: &[f64], k: usize) -> Verification {
    let scale = max_abs(want).max((k as f64).sqrt());
    compare(got, want, scale, matmul_tolerance_f64(k))
}

/// How closely the GPU's Dot2 reference must agree with the host's Dot2 sums at sampled elements, relative to the
/// same scale: both are within one rounding of the exact product (each |r − c| <= u·|c|), so within 2u·|c| <= ε of
/// the scale of each other.
pub const DOT2_AGREEMENT: f64 = F64_EPS;

/// Σ xᵢ·yᵢ with Ogita, Rump and Oishi's Dot2 ("Accurate sum and dot product", SIAM J. Sci. Comput. 26(6), 2005,
/// Algorithm 5.3): as accurate as if computed in twice the working precision, then rounded. The host's half of the
/// FP64 reference check, the same algorithm as `matmul_reference_dot2_f64` (`f64::mul_add` is a fused multiply-add:
/// correctly rounded, in software where the CPU has none).
pub fn dot2(pairs: impl IntoIterator<Item = (f64, f64)>) -> f64 {
    let (mut sum, mut err) = (0.0f64, 0.0f64);
    for (x, y) in pairs {
        let p = x * y;
        let pe = x.mul_add(y, -p); // TwoProduct: x·y = p + pe exactly
        let s = sum + p; // TwoSum: sum + p = s + se exactly
        let z = s - sum;
        let se = (sum - (s - z)) + (p - z);
        sum = s;
        err += pe + se;
    }
    sum + err
}

/// Largest absolute value in a slice (the natural `scale` for [`compare`]); long slices in chunks on the host's cores.
pub fn max_abs<T: Copy + Into<f64> + Sync>(values: &[T]) -> f64 {
    let parts = in_chunks(values.len(), |range| values[range].iter().map(|&x| x.into().abs()).fold(0.0, f64::max));
    parts.into_iter().fold(0.0, f64::max)
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
    fn dot2_is_as_accurate_as_twice_the_precision() {
        // 1e16 + 1 − 1e16: a plain FP64 sum loses the 1, Dot2 keeps it.
        let pairs = [(1e16, 1.0), (1.0, 1.0), (-1e16, 1.0)];
        assert_eq!(pairs.iter().map(|(x, y)| x * y).sum::<f64>(), 0.0);
        assert_eq!(dot2(pairs), 1.0);
        // (1 + 2⁻³⁰)² − 1 − 2⁻²⁹ = 2⁻⁶⁰: only the exact product's low part survives.
        let x = 1.0 + 2f64.powi(-30);
        assert_eq!(dot2([(x, x), (-1.0, 1.0), (-(2f64.powi(-29)), 1.0)]), 2f64.powi(-60));
    }

    /// The host's share of verifying the quick preset's largest points on this machine, in one pass on one thread
    /// (as before) and in chunks on its cores ([`compare`]): prints each, asserts only that they agree.
    /// `cargo test --release -p suite --lib -- --ignored host_verification_costs --nocapture`.
    #[test]
    #[ignore = "a benchmark: prints timings"]
    fn host_verification_costs_at_the_quick_presets_sizes() {
        fn time<T>(what: &str, f: impl FnOnce() -> T) -> T {
            let start = std::time::Instant::now();
            let out = f();
            eprintln!("{what}: {:.1} ms", start.elapsed().as_secs_f64() * 1e3);
            out
        }
        fn both<G: Copy + Into<f64> + Sync, W: Copy + Into<f64> + Sync>(what: &str, got: &[G], want: &[W], k: usize) {
            let one = time(&format!("{what}: one pass"), || {
                let scale = want.iter().map(|&x| x.into().abs()).fold(0.0, f64::max).max((k as f64).sqrt());
                compare_from(got, 0, want, scale, 1e-6)
            });
            let chunked =
                time(&format!("{what}: in chunks"), || compare(got, want, max_abs(want).max((k as f64).sqrt()), 1e-6));
            assert_eq!(one, chunked);
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        eprintln!("{cores} cores");
        let mut rng = fastrand::Rng::with_seed(7);
        // matmul FP32 at 4096²: C against the reference at every element, with the scale max |C|.
        let want: Vec<f32> = (0..4096 * 4096).map(|_| rng.f32() * 2.0 - 1.0).collect();
        let got: Vec<f32> = want.iter().map(|w| w * (1.0 + f32::EPSILON)).collect();
        both("matmul f32 4096²", &got, &want, 4096);
        // matmul FP64 at 2048².
        let want: Vec<f64> = (0..2048 * 2048).map(|_| rng.f64() * 2.0 - 1.0).collect();
        let got: Vec<f64> = want.iter().map(|w| w * (1.0 + f64::EPSILON)).collect();
        both("matmul f64 2048²", &got, &want, 2048);
        // fusion's copy at 2^25 FP32 elements.
        let want: Vec<f32> = (0..1 << 25).map(|_| rng.f32() * 2.0 - 1.0).collect();
        let got = want.clone();
        both("fusion copy f32 2^25", &got, &want, 1);
    }

    #[test]
    fn length_mismatch_and_empty_input_fail() {
        assert!(!compare(&[1.0f32], &[1.0f64, 2.0], 1.0, 1.0).passed());
        assert!(!compare::<f32, f64>(&[], &[], 1.0, 1.0).passed());
        assert_eq!(max_abs(&[-3.0f32, 2.0]), 3.0);
    }
}
