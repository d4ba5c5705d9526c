//! Result and safe layer over hip-sys's rocBLAS declarations: load once, one handle per device bound to the
//! device's stream, and the device's [`BlasCall`]s: GEMM with the row-major to column-major mapping, dot and asum,
//! each one body generic over the element type ([`Element`] picks rocBLAS's `s` or `d` routine).

use std::ffi::c_void;

use hip_sys::hip_runtime::hipStream_t;
use hip_sys::loader::LoadError;
use hip_sys::rocblas::{
    rocblas_asum_fn, rocblas_dot_fn, rocblas_gemm_fn, rocblas_handle, rocblas_int, rocblas_operation,
    rocblas_pointer_mode, rocblas_status, RocBlas,
};

use crate::device::{BlasCall, BlasOp, Error, Result};
use crate::precision::Precision;

const LIBRARY: &str = "rocBLAS";
const HINT: &str = "load the rocm module or set ROCM_PATH (rocBLAS ships with ROCm)";

/// Maps the loader's failure to the suite's error, keeping every candidate and its reason.
pub(super) fn not_found(e: &LoadError) -> Error {
    Error::BlasNotFound { library: LIBRARY, hint: HINT, tried: e.tried.clone() }
}

/// The process's rocBLAS, loaded on first use.
pub(super) fn library() -> Result<&'static RocBlas> {
    hip_sys::rocblas::rocblas().map_err(not_found)
}

/// The one place a rocBLAS status becomes a `Result`.
fn check(api: &'static str, status: rocblas_status) -> Result<()> {
    if status == rocblas_status::rocblas_status_success {
        return Ok(());
    }
    let name = status.name().unwrap_or("unknown rocblas_status");
    Err(Error::Blas { library: LIBRARY, api, status: format!("{name} ({})", status.0) })
}

/// The arguments of the column-major `rocblas_sgemm` call that computes row-major `C = A·B` (`A` m×k, `B` k×n):
/// a row-major matrix is its transpose in column-major, so compute `Cᵀ = Bᵀ·Aᵀ`, i.e. swap the operands and m with
/// n, with no transposition flags. Leading dimensions are the row lengths, at least 1 as rocBLAS requires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct GemmShape {
    /// Rows of the column-major result (= n).
    pub m: rocblas_int,
    /// Columns of the column-major result (= m).
    pub n: rocblas_int,
    /// Shared dimension.
    pub k: rocblas_int,
    /// Leading dimension of the first operand (row-major `B`, n wide).
    pub ld_first: rocblas_int,
    /// Leading dimension of the second operand (row-major `A`, k wide).
    pub ld_second: rocblas_int,
    /// Leading dimension of `C` (n wide).
    pub ld_c: rocblas_int,
}

impl GemmShape {
    /// The call for row-major sizes (already checked to fit rocBLAS's 32-bit `rocblas_int`:
    /// [`BlasCall::checked_sizes`]).
    pub fn row_major(m: rocblas_int, n: rocblas_int, k: rocblas_int) -> GemmShape {
        GemmShape { m: n, n: m, k, ld_first: n.max(1), ld_second: k.max(1), ld_c: n.max(1) }
    }
}

/// Calls the rocBLAS function `$api` of the loaded table with the arguments, naming it once; its status goes through
/// [`check`]. Used inside an `unsafe` block whose `SAFETY:` comment covers the arguments.
macro_rules! rocblas_call {
    ($lib:expr, $api:ident($($arg:expr),* $(,)?)) => {
        check(stringify!($api), ($lib.$api)($($arg),*))
    };
}

/// An element type rocBLAS has routines for: FP32 (`rocblas_s*`) and FP64 (`rocblas_d*`). Each routine comes with
/// its name, so one generic body per operation calls either precision and names the routine it called.
pub(super) trait Element: Copy + 'static {
    /// The precision of this element type.
    const PRECISION: Precision;
    /// 1, the GEMM's `alpha`.
    const ONE: Self;
    /// 0, the GEMM's `beta`.
    const ZERO: Self;
    /// `rocblas_sgemm` or `rocblas_dgemm`, with its name.
    fn gemm(lib: &RocBlas) -> (&'static str, rocblas_gemm_fn<Self>);
    /// `rocblas_sdot` or `rocblas_ddot`, with its name.
    fn dot(lib: &RocBlas) -> (&'static str, rocblas_dot_fn<Self>);
    /// `rocblas_sasum` or `rocblas_dasum`, with its name.
    fn asum(lib: &RocBlas) -> (&'static str, rocblas_asum_fn<Self>);
}

/// Implements [`Element`] from the three routines' names, each written once.
macro_rules! element {
    ($t:ty, $precision:ident, $gemm:ident, $dot:ident, $asum:ident) => {
        impl Element for $t {
            const PRECISION: Precision = Precision::$precision;
            const ONE: Self = 1.0;
            const ZERO: Self = 0.0;
            fn gemm(lib: &RocBlas) -> (&'static str, rocblas_gemm_fn<Self>) {
                (stringify!($gemm), lib.$gemm)
            }
            fn dot(lib: &RocBlas) -> (&'static str, rocblas_dot_fn<Self>) {
                (stringify!($dot), lib.$dot)
            }
            fn asum(lib: &RocBlas) -> (&'static str, rocblas_asum_fn<Self>) {
                (stringify!($asum), lib.$asum)
            }
        }
    };
}

element!(f32, F32, rocblas_sgemm, rocblas_sdot, rocblas_sasum);
element!(f64, F64, rocblas_dgemm, rocblas_ddot, rocblas_dasum);

/// A rocBLAS handle bound to one stream, destroyed on drop.
pub(super) struct Handle {
    lib: &'static RocBlas,
    raw: rocblas_handle,
}

// SAFETY: a rocBLAS handle is not tied to the thread that created it; the device keeps it behind a Mutex, so it is
// used by one thread at a time, which is what rocBLAS requires.
unsafe impl Send for Handle {}

impl Handle {
    /// Creates a handle whose work goes to `stream` (the current device must be the stream's).
    ///
    /// # Safety
    /// `stream` stays live for the life of the handle.
    pub unsafe fn new(lib: &'static RocBlas, stream: hipStream_t) -> Result<Handle> {
        let mut raw: rocblas_handle = std::ptr::null_mut();
        // SAFETY: writes one handle to a live local.
        unsafe { rocblas_call!(lib, rocblas_create_handle(&mut raw)) }?;
        let handle = Handle { lib, raw };
        // SAFETY: the handle was just created; the caller guarantees the stream.
        unsafe { rocblas_call!(lib, rocblas_set_stream(handle.raw, stream)) }?;
        Ok(handle)
    }

    /// Row-major `C = A·B` in `T` on the handle's stream, with host-side `alpha = 1`, `beta = 0` (the default
    /// pointer mode is host).
    ///
    /// # Safety
    /// `a`, `b` and `c` are device allocations of at least m·k, k·n and m·n elements of `T` that stay allocated
    /// until the stream has run the call.
    pub unsafe fn gemm_row_major<T: Element>(
        &self,
        shape: GemmShape,
        a: *const c_void,
        b: *const c_void,
        c: *mut c_void,
    ) -> Result<()> {
        let (alpha, beta) = (T::ONE, T::ZERO);
        let none = rocblas_operation::rocblas_operation_none;
        let (api, gemm) = T::gemm(self.lib);
        // SAFETY: sizes are the caller's promise; alpha and beta are read before the call returns (host mode).
        let status = unsafe {
            gemm(
                self.raw,
                none,
                none,
                shape.m,
                shape.n,
                shape.k,
                &alpha,
                b.cast(),
                shape.ld_first,
                a.cast(),
                shape.ld_second,
                &beta,
                c.cast(),
                shape.ld_c,
            )
        };
        check(api, status)
    }

    /// Runs `call` in device pointer mode (the result pointer is device memory: nothing waits for the host), then
    /// puts the handle back in host mode, which [`Handle::gemm_row_major`] expects.
    fn with_device_pointers(&self, api: &'static str, call: impl FnOnce() -> rocblas_status) -> Result<()> {
        let mode = rocblas_pointer_mode::rocblas_pointer_mode_device;
        // SAFETY: the handle is live; the mode is a plain enum value.
        unsafe { rocblas_call!(self.lib, rocblas_set_pointer_mode(self.raw, mode)) }?;
        let status = call();
        let host = rocblas_pointer_mode::rocblas_pointer_mode_host;
        // SAFETY: as above.
        let reset = unsafe { rocblas_call!(self.lib, rocblas_set_pointer_mode(self.raw, host)) };
        check(api, status)?;
        reset
    }

    /// `result[0] = x·y` over `n` elements of `T` on the handle's stream, result in device memory.
    ///
    /// # Safety
    /// `x` and `y` are device allocations of at least `n` elements of `T` and `result` of one, allocated until the
    /// stream has run the call.
    pub unsafe fn dot<T: Element>(
        &self,
        n: rocblas_int,
        x: *const c_void,
        y: *const c_void,
        result: *mut c_void,
    ) -> Result<()> {
        let (api, dot) = T::dot(self.lib);
        self.with_device_pointers(api, || {
            // SAFETY: the caller's promise; the handle is in device pointer mode for the result.
            unsafe { dot(self.raw, n, x.cast(), 1, y.cast(), 1, result.cast()) }
        })
    }

    /// `result[0] = Σ|x|` over `n` elements of `T` on the handle's stream, result in device memory.
    ///
    /// # Safety
    /// As for [`Handle::dot`], without `y`.
    pub unsafe fn asum<T: Element>(&self, n: rocblas_int, x: *const c_void, result: *mut c_void) -> Result<()> {
        let (api, asum) = T::asum(self.lib);
        self.with_device_pointers(api, || {
            // SAFETY: the caller's promise; the handle is in device pointer mode for the result.
            unsafe { asum(self.raw, n, x.cast(), 1, result.cast()) }
        })
    }
}

impl super::HipDevice {
    /// [`crate::device::Device::blas_call`] in element type `T`: the sizes are checked
    /// ([`BlasCall::checked_sizes`]) and the buffers to be this device's, then rocBLAS runs on the device's handle,
    /// enqueued on its stream.
    pub(super) fn blas_call_of<T: Element>(&self, call: BlasCall<'_>) -> Result<()> {
        debug_assert_eq!(call.precision, T::PRECISION, "the caller picks T from the call's precision");
        let [m, n, k] = call.checked_sizes()?;
        match call.op {
            BlasOp::Gemm { a, b, c, .. } => {
                let (a, b, c) = (self.own_alloc(a)?, self.own_alloc(b)?, self.own_alloc(c)?);
                if m == 0 || n == 0 {
                    return Ok(()); // C is empty
                }
                let shape = GemmShape::row_major(m, n, k);
                let handle = self.blas_handle()?;
                let handle = handle.as_ref().expect("blas_handle() creates the handle");
                // SAFETY: all three are our live allocations with their sizes checked above; rocBLAS enqueues on our
                // stream, and freeing a buffer synchronises the device first.
                unsafe { handle.gemm_row_major::<T>(shape, a.ptr(), b.ptr(), c.ptr()) }
            }
            BlasOp::Dot { x, y, result, .. } => {
                let (x, y, r) = (self.own_alloc(x)?, self.own_alloc(y)?, self.own_alloc(result)?);
                let handle = self.blas_handle()?;
                let handle = handle.as_ref().expect("blas_handle() creates the handle");
                // SAFETY: all three are our live allocations, sizes checked above; rocBLAS enqueues on our stream,
                // and freeing a buffer synchronises the device first.
                unsafe { handle.dot::<T>(n, x.ptr(), y.ptr(), r.ptr()) }
            }
            BlasOp::Asum { x, result, .. } => {
                let (x, r) = (self.own_alloc(x)?, self.own_alloc(result)?);
                let handle = self.blas_handle()?;
                let handle = handle.as_ref().expect("blas_handle() creates the handle");
                // SAFETY: as for the dot.
                unsafe { handle.asum::<T>(n, x.ptr(), r.ptr()) }
            }
        }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the handle is live and destroyed only here.
        if let Err(e) = unsafe { rocblas_call!(self.lib, rocblas_destroy_handle(self.raw)) } {
            eprintln!("warning: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn row_major_gemm_swaps_operands_and_sizes() {
        let s = GemmShape::row_major(3, 5, 7);
        assert_eq!(s, GemmShape { m: 5, n: 3, k: 7, ld_first: 5, ld_second: 7, ld_c: 5 });
        let zero = GemmShape::row_major(4, 0, 0);
        assert_eq!((zero.ld_first, zero.ld_second, zero.ld_c), (1, 1, 1));
    }

    #[test]
    fn missing_rocblas_is_blas_not_found_with_every_candidate() {
        let paths = [PathBuf::from("/nonexistent/lib/librocblas.so"), PathBuf::from("librocblas.so.99")];
        let Err(load) = hip_sys::rocblas::load_rocblas(&paths) else { panic!("a nonexistent path loaded") };
        let text = not_found(&load).to_string();
        assert!(text.starts_with("rocBLAS not found: load the rocm module or set ROCM_PATH"), "{text}");
        assert!(text.contains("tried /nonexistent/lib/librocblas.so: "), "{text}");
        assert!(text.contains("tried librocblas.so.99: "), "{text}");
    }

    /// Debian (this machine, CI) has no rocBLAS: the real search must fail with every place it looked. Where it is
    /// installed, the library found must be rocBLAS and must load again from where it was found.
    #[test]
    fn the_real_search_finds_rocblas_or_names_every_candidate() {
        match library() {
            Ok(lib) => {
                let path = lib.path.display().to_string();
                assert!(path.contains("rocblas"), "{path}");
                assert!(hip_sys::rocblas::load_rocblas(std::slice::from_ref(&lib.path)).is_ok(), "{path}");
            }
            Err(e) => {
                let text = e.to_string();
                assert!(matches!(e, Error::BlasNotFound { .. }), "{text}");
                assert!(text.contains("tried /opt/rocm/lib/librocblas.so: "), "{text}");
                assert!(text.contains("tried librocblas.so.4: "), "{text}");
                assert!(text.contains("tried librocblas.so.3: "), "{text}");
            }
        }
    }

    #[test]
    fn statuses_are_named() {
        let Err(e) = check("rocblas_sgemm", rocblas_status::rocblas_status_invalid_size) else { panic!("not ok") };
        assert_eq!(e.to_string(), "rocBLAS rocblas_sgemm failed with status rocblas_status_invalid_size (4)");
        assert!(check("rocblas_sgemm", rocblas_status::rocblas_status_success).is_ok());
    }
}
