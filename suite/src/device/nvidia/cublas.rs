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

/// The one place a cuBLAS status becomes a `Result`.
fn check(api: &'static str, status: cublas::cublasStatus_t) -> Result<(), Error> {
    if status == cublas::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(Error::Blas { library: "cuBLAS", api, status: format!("{status:?}") })
    }
}

/// Calls the cuBLAS function `$api` (cudarc's binding) with the arguments, naming it once: the message names it
/// without the ABI suffix `_v2`. Used inside an `unsafe` block whose `SAFETY:` comment covers the arguments.
macro_rules! cublas_call {
    ($api:ident($($arg:expr),* $(,)?)) => {
        check(super::cuda::api_name(stringify!($api)), cublas::$api($($arg),*))
    };
}

/// cuBLAS's GEMM for element type `T` (`cublasSgemm_v2`, `cublasDgemm_v2`: the prototypes differ only in it).
type GemmFn<T> = unsafe fn(
    cublas::cublasHandle_t,
    cublas::cublasOperation_t,
    cublas::cublasOperation_t,
    i32,
    i32,
    i32,
    *const T,
    *const T,
    i32,
    *const T,
    i32,
    *const T,
    *mut T,
    i32,
) -> cublas::cublasStatus_t;
/// cuBLAS's dot for `T` (`cublasSdot_v2`, `cublasDdot_v2`).
type DotFn<T> = unsafe fn(cublas::cublasHandle_t, i32, *const T, i32, *const T, i32, *mut T) -> cublas::cublasStatus_t;
/// cuBLAS's asum for `T` (`cublasSasum_v2`, `cublasDasum_v2`).
type AsumFn<T> = unsafe fn(cublas::cublasHandle_t, i32, *const T, i32, *mut T) -> cublas::cublasStatus_t;

/// An element type cuBLAS has routines for: FP32 (`cublasS*`) and FP64 (`cublasD*`), each routine with its name, so
/// one generic body per operation calls either precision.
pub(super) trait Element: Copy + 'static {
    /// 1, the GEMM's `alpha`.
    const ONE: Self;
    /// 0, the GEMM's `beta`.
    const ZERO: Self;
    /// The GEMM and its name.
    fn gemm() -> (&'static str, GemmFn<Self>);
    /// The dot and its name.
    fn dot() -> (&'static str, DotFn<Self>);
    /// The asum and its name.
    fn asum() -> (&'static str, AsumFn<Self>);
}

/// Implements [`Element`] from the three routines, each written once.
macro_rules! element {
    ($t:ty, $gemm:ident, $dot:ident, $asum:ident) => {
        impl Element for $t {
            const ONE: Self = 1.0;
            const ZERO: Self = 0.0;
            fn gemm() -> (&'static str, GemmFn<Self>) {
                (super::cuda::api_name(stringify!($gemm)), cublas::$gemm)
            }
            fn dot() -> (&'static str, DotFn<Self>) {
                (super::cuda::api_name(stringify!($dot)), cublas::$dot)
            }
            fn asum() -> (&'static str, AsumFn<Self>) {
                (super::cuda::api_name(stringify!($asum)), cublas::$asum)
            }
        }
    };
}

element!(f32, cublasSgemm_v2, cublasSdot_v2, cublasSasum_v2);
element!(f64, cublasDgemm_v2, cublasDdot_v2, cublasDasum_v2);

impl Handle {
    /// Creates a handle on `stream`. The caller has made the device's context current.
    pub(super) fn new(stream: sys::CUstream) -> Result<Handle, Error> {
        load()?;
        let mut h = std::ptr::null_mut();
        // SAFETY: cuBLAS is loaded (checked above) and the context is current; cublasCreate writes the handle.
        unsafe { cublas_call!(cublasCreate_v2(&mut h)) }?;
        let handle = Handle(h);
        // SAFETY: the handle is valid and the stream belongs to the current context.
        unsafe { cublas_call!(cublasSetStream_v2(handle.0, stream as _)) }?;
        // Pin the default math mode: plain FP32 (it never uses TF32 for SGEMM) and plain FP64 (cuBLAS emulates FP64
        // only in its FP64-emulation math mode); saying so here keeps it that way whatever a library default or
        // environment variable does.
        // SAFETY: the handle is valid.
        unsafe { cublas_call!(cublasSetMathMode(handle.0, cublas::cublasMath_t::CUBLAS_DEFAULT_MATH)) }?;
        Ok(handle)
    }

    /// Row-major `C = A·B` (m×k times k×n) in `T`: column-major cuBLAS computes `Cᵀ = Bᵀ·Aᵀ`, which is the same
    /// memory. Sizes are already checked to fit cuBLAS's `int` ([`crate::device::BlasCall::checked_sizes`]).
    ///
    /// # Safety
    /// `a`, `b` and `c` are device addresses of the current context holding at least m·k, k·n and m·n elements of
    /// `T`.
    pub(super) unsafe fn gemm_row_major<T: Element>(
        &self,
        [m, n, k]: [i32; 3],
        a: u64,
        b: u64,
        c: u64,
    ) -> Result<(), Error> {
        let (alpha, beta) = (T::ONE, T::ZERO);
        let op = cublas::cublasOperation_t::CUBLAS_OP_N;
        let (api, gemm) = T::gemm();
        // SAFETY: the caller's promise on the buffers; alpha and beta are host scalars, the default pointer mode.
        let status =
            unsafe { gemm(self.0, op, op, n, m, k, &alpha, b as *const T, n, a as *const T, k, &beta, c as *mut T, n) };
        check(api, status)
    }

    /// Runs `call` in device pointer mode (its result pointer is device memory, so nothing waits for the host and
    /// the call can be captured into a graph), then puts the handle back in host mode for [`Handle::gemm_row_major`].
    fn with_device_pointers(
        &self,
        api: &'static str,
        call: impl FnOnce() -> cublas::cublasStatus_t,
    ) -> Result<(), Error> {
        let device = cublas::cublasPointerMode_t::CUBLAS_POINTER_MODE_DEVICE;
        // SAFETY: the handle is valid; the mode is a plain enum value.
        unsafe { cublas_call!(cublasSetPointerMode_v2(self.0, device)) }?;
        let status = call();
        let host = cublas::cublasPointerMode_t::CUBLAS_POINTER_MODE_HOST;
        // SAFETY: as above.
        let reset = unsafe { cublas_call!(cublasSetPointerMode_v2(self.0, host)) };
        check(api, status)?;
        reset
    }

    /// `result[0] = x·y` over `n` elements of `T`, result in device memory.
    ///
    /// # Safety
    /// `x` and `y` hold `n` elements of `T` and `result` one, all device memory of the current context.
    pub(super) unsafe fn dot<T: Element>(&self, n: i32, x: u64, y: u64, result: u64) -> Result<(), Error> {
        let (api, dot) = T::dot();
        self.with_device_pointers(api, || {
            // SAFETY: the caller's promise; the handle is in device pointer mode for the result.
            unsafe { dot(self.0, n, x as *const T, 1, y as *const T, 1, result as *mut T) }
        })
    }

    /// `result[0] = Σ|x|` over `n` elements of `T`, result in device memory.
    ///
    /// # Safety
    /// As for [`Handle::dot`], without `y`.
    pub(super) unsafe fn asum<T: Element>(&self, n: i32, x: u64, result: u64) -> Result<(), Error> {
        let (api, asum) = T::asum();
        self.with_device_pointers(api, || {
            // SAFETY: the caller's promise; the handle is in device pointer mode for the result.
            unsafe { asum(self.0, n, x as *const T, 1, result as *mut T) }
        })
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the handle is valid and dropped once.
        if let Err(e) = unsafe { cublas_call!(cublasDestroy_v2(self.0)) } {
            eprintln!("warning: {e}");
        }
    }
}
