//! The vendor BLAS behind one interface generic over precision: a [`BlasCall`] names an operation (GEMM, dot,
//! asum) and its precision, and each platform maps it to its library's routine of that precision (rocBLAS's and
//! cuBLAS's `s`/`d` pairs) in one generic body. The size checks every call passes before the library sees a pointer
//! are here, shared by both platforms: each buffer must hold its elements of the call's precision, and every size
//! must fit the libraries' 32-bit `int`.

use super::{Error, RawAlloc, Result};
use crate::precision::Precision;

/// A vendor BLAS operation with its device buffers. Stream-ordered on the device's stream; results stay in device
/// memory (the reductions run in device pointer mode), so a call can be batched and captured like a kernel.
#[derive(Clone, Copy)]
pub enum BlasOp<'a> {
    /// Row-major `C = A·B` with `A` m×k, `B` k×n, `C` m×n. On NVIDIA the math mode is pinned to the default: plain
    /// FP32 (no TF32) and plain FP64 (none of cuBLAS's emulated FP64); the library picks the unit (the FP64 tensor
    /// cores from sm_80 on, MFMA on gfx90a).
    Gemm {
        /// Rows of `A` and `C`.
        m: usize,
        /// Columns of `B` and `C`.
        n: usize,
        /// Columns of `A`, rows of `B`.
        k: usize,
        /// `A`, m×k elements.
        a: &'a dyn RawAlloc,
        /// `B`, k×n elements.
        b: &'a dyn RawAlloc,
        /// `C`, m×n elements, overwritten.
        c: &'a dyn RawAlloc,
    },
    /// `result[0] = Σ x[i]·y[i]` over `n` elements.
    Dot {
        /// Elements.
        n: usize,
        /// The first vector.
        x: &'a dyn RawAlloc,
        /// The second vector.
        y: &'a dyn RawAlloc,
        /// One element, written on the device.
        result: &'a dyn RawAlloc,
    },
    /// `result[0] = Σ |x[i]|` over `n` elements.
    Asum {
        /// Elements.
        n: usize,
        /// The vector.
        x: &'a dyn RawAlloc,
        /// One element, written on the device.
        result: &'a dyn RawAlloc,
    },
}

/// One call of the vendor BLAS: an operation in a precision.
#[derive(Clone, Copy)]
pub struct BlasCall<'a> {
    /// FP32 (the BLAS's `s` routines) or FP64 (`d`).
    pub precision: Precision,
    /// What to compute, on which buffers.
    pub op: BlasOp<'a>,
}

impl BlasCall<'_> {
    /// The BLAS name of the routine, e.g. `sgemm`, `ddot`: what errors and refusals name.
    pub fn routine(&self) -> &'static str {
        match (self.op, self.precision) {
            (BlasOp::Gemm { .. }, Precision::F32) => "sgemm",
            (BlasOp::Gemm { .. }, Precision::F64) => "dgemm",
            (BlasOp::Dot { .. }, Precision::F32) => "sdot",
            (BlasOp::Dot { .. }, Precision::F64) => "ddot",
            (BlasOp::Asum { .. }, Precision::F32) => "sasum",
            (BlasOp::Asum { .. }, Precision::F64) => "dasum",
        }
    }

    /// Checks every buffer against the sizes in the call's precision and every size against the libraries' 32-bit
    /// `int`, before any pointer reaches the library. Returns the sizes as that `int`: `[m, n, k]` for GEMM,
    /// `[n, n, n]` for the reductions.
    pub fn checked_sizes(&self) -> Result<[i32; 3]> {
        let what = self.routine();
        let element_bytes = self.precision.bytes() as usize;
        match self.op {
            BlasOp::Gemm { m, n, k, a, b, c } => check_gemm(what, element_bytes, [m, n, k], [a, b, c]),
            BlasOp::Dot { n, x, y, result } => {
                check_blas_reduction_of(what, n, element_bytes, &[x, y], result).map(|n| [n; 3])
            }
            BlasOp::Asum { n, x, result } => {
                check_blas_reduction_of(what, n, element_bytes, &[x], result).map(|n| [n; 3])
            }
        }
    }
}

/// A row-major GEMM's sizes against the 32-bit `int` and its buffers: `A` m×k, `B` k×n, `C` m×n elements of
/// `element_bytes`.
fn check_gemm(
    what: &'static str,
    element_bytes: usize,
    [m, n, k]: [usize; 3],
    [a, b, c]: [&dyn RawAlloc; 3],
) -> Result<[i32; 3]> {
    let int = |x: usize| i32::try_from(x).ok();
    let (Some(m32), Some(n32), Some(k32)) = (int(m), int(n), int(k)) else {
        return Err(Error::SizeMismatch { what, detail: format!("{m}x{n}x{k}: the BLAS's sizes are 32-bit") });
    };
    for (name, alloc, rows, cols) in [("A", a, m, k), ("B", b, k, n), ("C", c, m, n)] {
        let need = rows.checked_mul(cols).and_then(|e| e.checked_mul(element_bytes));
        if need.is_none_or(|need| need > alloc.bytes()) {
            return Err(Error::SizeMismatch {
                what,
                detail: format!(
                    "{name} is {rows}x{cols} elements of {element_bytes} bytes but its buffer holds {} bytes",
                    alloc.bytes()
                ),
            });
        }
    }
    Ok([m32, n32, k32])
}

/// Checks that a vendor BLAS reduction over `n` elements of `element_bytes` (4: FP32, 8: FP64) fits its buffers
/// (`inputs` of n elements, one element for the result) and the library's 32-bit element count; returns `n` as that
/// count.
fn check_blas_reduction_of(
    what: &'static str,
    n: usize,
    element_bytes: usize,
    inputs: &[&dyn RawAlloc],
    result: &dyn RawAlloc,
) -> Result<i32> {
    let count = i32::try_from(n)
        .map_err(|_| Error::SizeMismatch { what, detail: format!("n = {n} exceeds the BLAS's 32-bit count") })?;
    let need = n
        .checked_mul(element_bytes)
        .ok_or(Error::SizeMismatch { what, detail: format!("{n} elements of {element_bytes} bytes overflow") })?;
    for x in inputs {
        if x.bytes() < need {
            return Err(Error::SizeMismatch {
                what,
                detail: format!("an input holds {} bytes, needs {need}", x.bytes()),
            });
        }
    }
    if result.bytes() < element_bytes {
        return Err(Error::SizeMismatch {
            what,
            detail: format!("the result holds {} bytes, needs {element_bytes}", result.bytes()),
        });
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use std::any::Any;

    use super::*;

    /// A host stand-in of `bytes` bytes for the size checks, which read nothing else.
    struct Sized(usize);

    impl RawAlloc for Sized {
        fn device_ptr(&self) -> u64 {
            0
        }
        fn bytes(&self) -> usize {
            self.0
        }
        fn as_any(&self) -> &dyn Any {
            self
        }
    }

    fn dot<'a>(precision: Precision, n: usize, x: &'a Sized, y: &'a Sized, result: &'a Sized) -> BlasCall<'a> {
        BlasCall { precision, op: BlasOp::Dot { n, x, y, result } }
    }

    fn gemm<'a>(precision: Precision, [m, n, k]: [usize; 3], [a, b, c]: [&'a Sized; 3]) -> BlasCall<'a> {
        BlasCall { precision, op: BlasOp::Gemm { m, n, k, a, b, c } }
    }

    fn asum<'a>(precision: Precision, n: usize, x: &'a Sized, result: &'a Sized) -> BlasCall<'a> {
        BlasCall { precision, op: BlasOp::Asum { n, x, result } }
    }

    /// A BLAS reduction's buffers are checked in its own element size: what holds n floats is too small for n
    /// doubles, and the result needs a whole element.
    #[test]
    fn blas_reductions_check_their_buffers_in_their_element_size() {
        let (floats, doubles) = (Sized(4 * 100), Sized(8 * 100));
        assert_eq!(dot(Precision::F32, 100, &floats, &floats, &Sized(4)).checked_sizes().unwrap(), [100; 3]);
        assert_eq!(dot(Precision::F64, 100, &doubles, &doubles, &Sized(8)).checked_sizes().unwrap(), [100; 3]);
        let err = dot(Precision::F64, 100, &doubles, &floats, &Sized(8)).checked_sizes().unwrap_err();
        assert_eq!(
            err.to_string(),
            Error::SizeMismatch { what: "ddot", detail: "an input holds 400 bytes, needs 800".into() }.to_string()
        );
        let err = asum(Precision::F64, 100, &doubles, &Sized(4)).checked_sizes().unwrap_err();
        assert!(matches!(err, Error::SizeMismatch { what: "dasum", .. }), "{err:?}");
        assert!(err.to_string().contains("the result holds 4 bytes, needs 8"), "{err}");
        let err = asum(Precision::F64, 1 << 31, &doubles, &Sized(8)).checked_sizes().unwrap_err();
        assert!(err.to_string().contains("exceeds the BLAS's 32-bit count"), "{err}");
        let err = asum(Precision::F32, 101, &floats, &Sized(4)).checked_sizes().unwrap_err();
        assert!(matches!(err, Error::SizeMismatch { what: "sasum", .. }), "{err:?}");
    }

    /// A GEMM's three buffers are checked as m×k, k×n and m×n elements of its precision, and its sizes against the
    /// 32-bit int, before the library sees a pointer.
    #[test]
    fn gemm_checks_each_matrix_in_its_precision_and_the_32_bit_sizes() {
        // 3x5 times 5x2: A 15, B 10, C 6 elements.
        let floats = [&Sized(60), &Sized(40), &Sized(24)];
        assert_eq!(gemm(Precision::F32, [3, 2, 5], floats).checked_sizes().unwrap(), [3, 2, 5]);
        let err = gemm(Precision::F64, [3, 2, 5], floats).checked_sizes().unwrap_err();
        assert_eq!(
            err.to_string(),
            "size mismatch in dgemm: A is 3x5 elements of 8 bytes but its buffer holds 60 bytes"
        );
        let short_c = [&Sized(60), &Sized(40), &Sized(20)];
        let err = gemm(Precision::F32, [3, 2, 5], short_c).checked_sizes().unwrap_err();
        assert!(err.to_string().contains("sgemm: C is 3x2 elements of 4 bytes"), "{err}");
        let huge = [&Sized(usize::MAX); 3];
        let err = gemm(Precision::F32, [1 << 31, 1, 1], huge).checked_sizes().unwrap_err();
        assert!(err.to_string().ends_with("2147483648x1x1: the BLAS's sizes are 32-bit"), "{err}");
        // An element count whose bytes overflow is too large for any buffer, not a wrap-around.
        let max = i32::MAX as usize;
        let err = gemm(Precision::F64, [max; 3], huge).checked_sizes().unwrap_err();
        assert!(err.to_string().contains("A is 2147483647x2147483647 elements"), "{err}");
    }

    #[test]
    fn routines_are_named_as_the_blas_names_them() {
        let (x, r) = (Sized(8), Sized(8));
        let names: Vec<&str> = Precision::ALL
            .iter()
            .flat_map(|&p| {
                let gemm = BlasCall { precision: p, op: BlasOp::Gemm { m: 1, n: 1, k: 1, a: &x, b: &x, c: &x } };
                [gemm.routine(), dot(p, 1, &x, &x, &r).routine(), asum(p, 1, &x, &r).routine()]
            })
            .collect();
        assert_eq!(names, ["sgemm", "sdot", "sasum", "dgemm", "ddot", "dasum"]);
    }
}
