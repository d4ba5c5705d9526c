//! Result and safe layer over hip-sys's rocBLAS declarations: load once, one handle per device bound to the
//! device's stream, SGEMM with the row-major to column-major mapping, and the device's FP64 reductions.

use std::ffi::c_void;

use hip_sys::hip_runtime::hipStream_t;
use hip_sys::loader::LoadError;
use hip_sys::rocblas::{rocblas_handle, rocblas_int, rocblas_operation, rocblas_pointer_mode, rocblas_status, RocBlas};

use crate::device::{Error, RawAlloc, Result};

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
    /// The call for row-major sizes, or `None` if a size does not fit rocBLAS's 32-bit `rocblas_int`.
    pub fn row_major(m: usize, n: usize, k: usize) -> Option<GemmShape> {
        let m = rocblas_int::try_from(m).ok()?;
        let n = rocblas_int::try_from(n).ok()?;
        let k = rocblas_int::try_from(k).ok()?;
        Some(GemmShape { m: n, n: m, k, ld_first: n.max(1), ld_second: k.max(1), ld_c: n.max(1) })
    }
}

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
        check("rocblas_create_handle", unsafe { (lib.rocblas_create_handle)(&mut raw) })?;
        let handle = Handle { lib, raw };
        // SAFETY: the handle was just created; the caller guarantees the stream.
        check("rocblas_set_stream", unsafe { (lib.rocblas_set_stream)(handle.raw, stream) })?;
        Ok(handle)
    }

    /// Row-major FP32 `C = A·B` on the handle's stream, with host-side `alpha = 1`, `beta = 0` (the default
    /// pointer mode is host).
    ///
    /// # Safety
    /// `a`, `b` and `c` are device allocations of at least m·k, k·n and m·n floats that stay allocated until the
    /// stream has run the call.
    pub unsafe fn sgemm_row_major(
        &self,
        shape: GemmShape,
        a: *const c_void,
        b: *const c_void,
        c: *mut c_void,
    ) -> Result<()> {
        let (alpha, beta) = (1.0f32, 0.0f32);
        let none = rocblas_operation::rocblas_operation_none;
        // SAFETY: sizes are the caller's promise; alpha and beta are read before the call returns (host mode).
        let status = unsafe {
            (self.lib.rocblas_sgemm)(
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
        check("rocblas_sgemm", status)
    }

    /// Row-major FP64 `C = A·B` on the handle's stream, mapped and scaled as in [`Handle::sgemm_row_major`].
    ///
    /// # Safety
    /// `a`, `b` and `c` are device allocations of at least m·k, k·n and m·n doubles that stay allocated until the
    /// stream has run the call.
    pub unsafe fn dgemm_row_major(
        &self,
        shape: GemmShape,
        a: *const c_void,
        b: *const c_void,
        c: *mut c_void,
    ) -> Result<()> {
        let (alpha, beta) = (1.0f64, 0.0f64);
        let none = rocblas_operation::rocblas_operation_none;
        // SAFETY: sizes are the caller's promise; alpha and beta are read before the call returns (host mode).
        let status = unsafe {
            (self.lib.rocblas_dgemm)(
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
        check("rocblas_dgemm", status)
    }

    /// Runs `call` in device pointer mode (the result pointer is device memory: nothing waits for the host), then
    /// puts the handle back in host mode, which [`Handle::sgemm_row_major`] expects.
    fn with_device_pointers(&self, api: &'static str, call: impl FnOnce() -> rocblas_status) -> Result<()> {
        let mode = rocblas_pointer_mode::rocblas_pointer_mode_device;
        // SAFETY: the handle is live; the mode is a plain enum value.
        check("rocblas_set_pointer_mode", unsafe { (self.lib.rocblas_set_pointer_mode)(self.raw, mode) })?;
        let status = call();
        let host = rocblas_pointer_mode::rocblas_pointer_mode_host;
        // SAFETY: as above.
        let reset = check("rocblas_set_pointer_mode", unsafe { (self.lib.rocblas_set_pointer_mode)(self.raw, host) });
        check(api, status)?;
        reset
    }

    /// `result[0] = x·y` over `n` floats on the handle's stream, result in device memory.
    ///
    /// # Safety
    /// `x` and `y` are device allocations of at least `n` floats and `result` of one float, allocated until the
    /// stream has run the call.
    pub unsafe fn sdot(&self, n: rocblas_int, x: *const c_void, y: *const c_void, result: *mut c_void) -> Result<()> {
        self.with_device_pointers("rocblas_sdot", || {
            // SAFETY: the caller's promise; the handle is in device pointer mode for the result.
            unsafe { (self.lib.rocblas_sdot)(self.raw, n, x.cast(), 1, y.cast(), 1, result.cast()) }
        })
    }

    /// `result[0] = Σ|x|` over `n` floats on the handle's stream, result in device memory.
    ///
    /// # Safety
    /// As for [`Handle::sdot`], without `y`.
    pub unsafe fn sasum(&self, n: rocblas_int, x: *const c_void, result: *mut c_void) -> Result<()> {
        self.with_device_pointers("rocblas_sasum", || {
            // SAFETY: the caller's promise; the handle is in device pointer mode for the result.
            unsafe { (self.lib.rocblas_sasum)(self.raw, n, x.cast(), 1, result.cast()) }
        })
    }

    /// `result[0] = x·y` over `n` doubles on the handle's stream, result in device memory.
    ///
    /// # Safety
    /// `x` and `y` are device allocations of at least `n` doubles and `result` of one double, allocated until the
    /// stream has run the call.
    pub unsafe fn ddot(&self, n: rocblas_int, x: *const c_void, y: *const c_void, result: *mut c_void) -> Result<()> {
        self.with_device_pointers("rocblas_ddot", || {
            // SAFETY: the caller's promise; the handle is in device pointer mode for the result.
            unsafe { (self.lib.rocblas_ddot)(self.raw, n, x.cast(), 1, y.cast(), 1, result.cast()) }
        })
    }

    /// `result[0] = Σ|x|` over `n` doubles on the handle's stream, result in device memory.
    ///
    /// # Safety
    /// As for [`Handle::ddot`], without `y`.
    pub unsafe fn dasum(&self, n: rocblas_int, x: *const c_void, result: *mut c_void) -> Result<()> {
        self.with_device_pointers("rocblas_dasum", || {
            // SAFETY: the caller's promise; the handle is in device pointer mode for the result.
            unsafe { (self.lib.rocblas_dasum)(self.raw, n, x.cast(), 1, result.cast()) }
        })
    }
}

impl super::HipDevice {
    /// [`crate::device::Device::ddot`] (`y` given) and [`crate::device::Device::dasum`] (`y` absent) over `n`
    /// doubles: the buffers are checked to be this device's and to hold n doubles (one for `result`), then rocBLAS
    /// runs on the device's handle, the result left in device memory.
    pub(super) fn blas_f64_reduction(
        &self,
        what: &'static str,
        n: usize,
        x: &dyn RawAlloc,
        y: Option<&dyn RawAlloc>,
        result: &dyn RawAlloc,
    ) -> Result<()> {
        let inputs: Vec<&dyn RawAlloc> = std::iter::once(x).chain(y).collect();
        let count = crate::device::check_blas_reduction_of(what, n, std::mem::size_of::<f64>(), &inputs, result)?;
        let (x, r) = (self.own_alloc(x)?, self.own_alloc(result)?);
        let y = y.map(|y| self.own_alloc(y)).transpose()?;
        let handle = self.blas_handle()?;
        let handle = handle.as_ref().expect("blas_handle() creates the handle");
        // SAFETY: all are this device's live allocations, sizes checked above for doubles; rocBLAS enqueues on the
        // device's stream, and freeing a buffer synchronises the device first.
        unsafe {
            match y {
                Some(y) => handle.ddot(count, x.ptr(), y.ptr(), r.ptr()),
                None => handle.dasum(count, x.ptr(), r.ptr()),
            }
        }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the handle is live and destroyed only here.
        let status = unsafe { (self.lib.rocblas_destroy_handle)(self.raw) };
        if let Err(e) = check("rocblas_destroy_handle", status) {
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
        let s = GemmShape::row_major(3, 5, 7).expect("small sizes fit");
        assert_eq!(s, GemmShape { m: 5, n: 3, k: 7, ld_first: 5, ld_second: 7, ld_c: 5 });
        let zero = GemmShape::row_major(4, 0, 0).expect("zero fits");
        assert_eq!((zero.ld_first, zero.ld_second, zero.ld_c), (1, 1, 1));
        assert_eq!(GemmShape::row_major(1 << 31, 1, 1), None);
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
