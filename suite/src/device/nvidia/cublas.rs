//! cuBLAS, loaded at run time and optional: without it the experiments that need a vendor BLAS say so.

use std::sync::OnceLock;

use cudarc::cublas::sys as cublas;
use cudarc::driver::sys;

use super::cuda::{candidates, load_first, Loaded};
use crate::device::Error;

/// The cuBLAS library, loaded once.
pub(super) fn load() -> Result<&'static Loaded, Error> {
    static CUBLAS: OnceLock<Result<Loaded, Vec<(String, String)>>> = OnceLock::new();
    let cuda_path = std::env::var("CUDA_PATH").ok();
    CUBLAS
        .get_or_init(|| load_first(&candidates(cuda_path.as_deref(), &["libcublas.so.13", "libcublas.so"])))
        .as_ref()
        .map_err(|tried| Error::BlasNotFound {
            library: "cuBLAS",
            hint: "install the CUDA toolkit's cuBLAS (libcublas.so.13), set CUDA_PATH, or add its folder to \
                   LD_LIBRARY_PATH",
            tried: tried.clone(),
        })
}

/// A cuBLAS handle bound to the device's stream, in plain FP32 math (no TF32).
pub(super) struct Handle(cublas::cublasHandle_t);

// SAFETY: a cuBLAS handle may be used from any thread as long as calls on it do not overlap; the device serialises
// them behind a mutex.
unsafe impl Send for Handle {}

fn check(api: &'static str, status: cublas::cublasStatus_t) -> Result<(), Error> {
    if status == cublas::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(Error::Blas { library: "cuBLAS", api, status: format!("{status:?}") })
    }
}

impl Handle {
    /// Creates a handle on `stream`. The caller has made the device's context current.
    pub(super) fn new(stream: sys::CUstream) -> Result<Handle, Error> {
        load()?;
        let mut h = std::ptr::null_mut();
        // SAFETY: cuBLAS is loaded (checked above) and the context is current; cublasCreate writes the handle.
        check("cublasCreate", unsafe { cublas::cublasCreate_v2(&mut h) })?;
        let handle = Handle(h);
        // SAFETY: the handle is valid and the stream belongs to the current context.
        check("cublasSetStream", unsafe { cublas::cublasSetStream_v2(handle.0, stream as _) })?;
        // Pin plain FP32: the default math mode never uses TF32 for SGEMM, and saying so here keeps it that way
        // whatever a library default or environment variable does.
        // SAFETY: the handle is valid.
        check("cublasSetMathMode", unsafe {
            cublas::cublasSetMathMode(handle.0, cublas::cublasMath_t::CUBLAS_DEFAULT_MATH)
        })?;
        Ok(handle)
    }

    /// Row-major `C = A·B` (m×k times k×n): column-major cuBLAS computes `Cᵀ = Bᵀ·Aᵀ`, which is the same memory.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn sgemm_row_major(&self, m: usize, n: usize, k: usize, a: u64, b: u64, c: u64) -> Result<(), Error> {
        let dim = |x: usize| {
            i32::try_from(x).map_err(|_| Error::SizeMismatch { what: "sgemm", detail: format!("{x} exceeds i32") })
        };
        let (m, n, k) = (dim(m)?, dim(n)?, dim(k)?);
        let (alpha, beta) = (1.0f32, 0.0f32);
        let op = cublas::cublasOperation_t::CUBLAS_OP_N;
        // SAFETY: the caller passes device addresses of buffers holding at least m·k, k·n and m·n floats (checked
        // by the device before this call); alpha and beta are host scalars, the default pointer mode.
        check("cublasSgemm", unsafe {
            cublas::cublasSgemm_v2(
                self.0,
                op,
                op,
                n,
                m,
                k,
                &alpha,
                b as *const f32,
                n,
                a as *const f32,
                k,
                &beta,
                c as *mut f32,
                n,
            )
        })
    }

    /// Row-major FP64 `C = A·B` (m×k times k×n), mapped as in [`Handle::sgemm_row_major`]. The handle's math mode is
    /// CUBLAS_DEFAULT_MATH: plain FP64 (cuBLAS emulates FP64 only when asked with its FP64-emulation math mode).
    pub(super) fn dgemm_row_major(&self, m: usize, n: usize, k: usize, a: u64, b: u64, c: u64) -> Result<(), Error> {
        let dim = |x: usize| {
            i32::try_from(x).map_err(|_| Error::SizeMismatch { what: "dgemm", detail: format!("{x} exceeds i32") })
        };
        let (m, n, k) = (dim(m)?, dim(n)?, dim(k)?);
        let (alpha, beta) = (1.0f64, 0.0f64);
        let op = cublas::cublasOperation_t::CUBLAS_OP_N;
        // SAFETY: the caller passes device addresses of buffers holding at least m·k, k·n and m·n doubles (checked
        // by the device before this call); alpha and beta are host scalars, the default pointer mode.
        check("cublasDgemm", unsafe {
            cublas::cublasDgemm_v2(
                self.0,
                op,
                op,
                n,
                m,
                k,
                &alpha,
                b as *const f64,
                n,
                a as *const f64,
                k,
                &beta,
                c as *mut f64,
                n,
            )
        })
    }

    /// Runs `call` in device pointer mode (its result pointer is device memory, so nothing waits for the host and
    /// the call can be captured into a graph), then puts the handle back in host mode for [`Handle::sgemm_row_major`].
    fn with_device_pointers(
        &self,
        api: &'static str,
        call: impl FnOnce() -> cublas::cublasStatus_t,
    ) -> Result<(), Error> {
        let device = cublas::cublasPointerMode_t::CUBLAS_POINTER_MODE_DEVICE;
        // SAFETY: the handle is valid; the mode is a plain enum value.
        check("cublasSetPointerMode", unsafe { cublas::cublasSetPointerMode_v2(self.0, device) })?;
        let status = call();
        let host = cublas::cublasPointerMode_t::CUBLAS_POINTER_MODE_HOST;
        // SAFETY: as above.
        let reset = check("cublasSetPointerMode", unsafe { cublas::cublasSetPointerMode_v2(self.0, host) });
        check(api, status)?;
        reset
    }

    /// `result[0] = x·y` over `n` floats, result in device memory.
    pub(super) fn sdot(&self, n: i32, x: u64, y: u64, result: u64) -> Result<(), Error> {
        self.with_device_pointers("cublasSdot", || {
            // SAFETY: the caller checked that x and y hold n floats and result one float, all device memory of
            // the current context; the handle is in device pointer mode for the result.
            unsafe { cublas::cublasSdot_v2(self.0, n, x as *const f32, 1, y as *const f32, 1, result as *mut f32) }
        })
    }

    /// `result[0] = Σ|x|` over `n` floats, result in device memory.
    pub(super) fn sasum(&self, n: i32, x: u64, result: u64) -> Result<(), Error> {
        self.with_device_pointers("cublasSasum", || {
            // SAFETY: as for `sdot`.
            unsafe { cublas::cublasSasum_v2(self.0, n, x as *const f32, 1, result as *mut f32) }
        })
    }

    /// `result[0] = x·y` over `n` doubles, result in device memory.
    pub(super) fn ddot(&self, n: i32, x: u64, y: u64, result: u64) -> Result<(), Error> {
        self.with_device_pointers("cublasDdot", || {
            // SAFETY: the caller checked that x and y hold n doubles and result one double, all device memory of
            // the current context; the handle is in device pointer mode for the result.
            unsafe { cublas::cublasDdot_v2(self.0, n, x as *const f64, 1, y as *const f64, 1, result as *mut f64) }
        })
    }

    /// `result[0] = Σ|x|` over `n` doubles, result in device memory.
    pub(super) fn dasum(&self, n: i32, x: u64, result: u64) -> Result<(), Error> {
        self.with_device_pointers("cublasDasum", || {
            // SAFETY: as for `ddot`.
            unsafe { cublas::cublasDasum_v2(self.0, n, x as *const f64, 1, result as *mut f64) }
        })
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the handle is valid and dropped once.
        let status = unsafe { cublas::cublasDestroy_v2(self.0) };
        if status != cublas::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            eprintln!("warning: cublasDestroy failed: {status:?}");
        }
    }
}
