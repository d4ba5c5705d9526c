//! The few rocBLAS items the suite uses, declared by hand.
//!
//! Debian (where the bindings are generated) packages no rocBLAS and no `rocblas.h`, so there is nothing to run
//! bindgen over. Each item below matches ROCm 6's public `library/include/internal/rocblas-types.h` and
//! `rocblas-functions.h` / `rocblas-auxiliary.h` (ROCm/rocBLAS, soversion 4.4); the numeric values of the enums
//! have not changed since rocBLAS 2. Names follow the C header (hence the relaxed naming lints in this file) so
//! each can be checked against it by grep.
#![allow(non_camel_case_types, non_upper_case_globals)]

use std::os::raw::c_uint;
use std::path::PathBuf;
use std::sync::OnceLock;

use libloading::Library;

pub use crate::hip_runtime::hipStream_t;
use crate::loader::{
    candidates, dlopen_reason, load_first, test_runtime_description, LoadError, SearchEnv, ROCBLAS_NAMES,
    ROCBLAS_TEST_RUNTIME_SYMBOL,
};

/// `rocblas_int`: `int32_t`, because ROCm builds rocBLAS without `rocblas_ILP64` (the LP64 interface).
pub type rocblas_int = i32;

/// The opaque struct behind [`rocblas_handle`].
#[repr(C)]
#[derive(Debug)]
pub struct _rocblas_handle {
    _unused: [u8; 0],
}

/// `rocblas_handle`: `struct _rocblas_handle*`.
pub type rocblas_handle = *mut _rocblas_handle;

/// `rocblas_status`: a C enum, passed as a 32-bit integer.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct rocblas_status(pub c_uint);

impl rocblas_status {
    /// Success.
    pub const rocblas_status_success: rocblas_status = rocblas_status(0);
    /// Handle not initialised, invalid or null.
    pub const rocblas_status_invalid_handle: rocblas_status = rocblas_status(1);
    /// Function not implemented.
    pub const rocblas_status_not_implemented: rocblas_status = rocblas_status(2);
    /// Invalid pointer argument.
    pub const rocblas_status_invalid_pointer: rocblas_status = rocblas_status(3);
    /// Invalid size argument.
    pub const rocblas_status_invalid_size: rocblas_status = rocblas_status(4);
    /// Failed internal memory allocation, copy or deallocation.
    pub const rocblas_status_memory_error: rocblas_status = rocblas_status(5);
    /// Other internal library failure.
    pub const rocblas_status_internal_error: rocblas_status = rocblas_status(6);
    /// Performance degraded by low device memory.
    pub const rocblas_status_perf_degraded: rocblas_status = rocblas_status(7);
    /// Unmatched start/stop size query.
    pub const rocblas_status_size_query_mismatch: rocblas_status = rocblas_status(8);
    /// Queried device memory size increased.
    pub const rocblas_status_size_increased: rocblas_status = rocblas_status(9);
    /// Queried device memory size unchanged.
    pub const rocblas_status_size_unchanged: rocblas_status = rocblas_status(10);
    /// Argument not valid.
    pub const rocblas_status_invalid_value: rocblas_status = rocblas_status(11);
    /// Nothing prevents the function from proceeding.
    pub const rocblas_status_continue: rocblas_status = rocblas_status(12);
    /// A vector or matrix holds NaN, infinity or a denormal (check-numerics mode).
    pub const rocblas_status_check_numerics_fail: rocblas_status = rocblas_status(13);
    /// The function was left out of this build (e.g. built without Tensile).
    pub const rocblas_status_excluded_from_build: rocblas_status = rocblas_status(14);
    /// The function needs a feature the device's architecture lacks.
    pub const rocblas_status_arch_mismatch: rocblas_status = rocblas_status(15);

    /// The header's name for this status, or `None` for a value newer than this table.
    pub fn name(self) -> Option<&'static str> {
        const NAMES: [&str; 16] = [
            "rocblas_status_success",
            "rocblas_status_invalid_handle",
            "rocblas_status_not_implemented",
            "rocblas_status_invalid_pointer",
            "rocblas_status_invalid_size",
            "rocblas_status_memory_error",
            "rocblas_status_internal_error",
            "rocblas_status_perf_degraded",
            "rocblas_status_size_query_mismatch",
            "rocblas_status_size_increased",
            "rocblas_status_size_unchanged",
            "rocblas_status_invalid_value",
            "rocblas_status_continue",
            "rocblas_status_check_numerics_fail",
            "rocblas_status_excluded_from_build",
            "rocblas_status_arch_mismatch",
        ];
        NAMES.get(usize::try_from(self.0).ok()?).copied()
    }
}

/// `rocblas_operation`: whether a matrix is used as is or transposed (a C enum, 32 bits).
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct rocblas_operation(pub c_uint);

impl rocblas_operation {
    /// Use the matrix as stored.
    pub const rocblas_operation_none: rocblas_operation = rocblas_operation(111);
    /// Use its transpose.
    pub const rocblas_operation_transpose: rocblas_operation = rocblas_operation(112);
    /// Use its conjugate transpose.
    pub const rocblas_operation_conjugate_transpose: rocblas_operation = rocblas_operation(113);
}

/// `rocblas_create_handle(rocblas_handle* handle)`.
pub type rocblas_create_handle_fn = unsafe extern "C" fn(handle: *mut rocblas_handle) -> rocblas_status;
/// `rocblas_destroy_handle(rocblas_handle handle)`.
pub type rocblas_destroy_handle_fn = unsafe extern "C" fn(handle: rocblas_handle) -> rocblas_status;
/// `rocblas_set_stream(rocblas_handle handle, hipStream_t stream)`.
pub type rocblas_set_stream_fn = unsafe extern "C" fn(handle: rocblas_handle, stream: hipStream_t) -> rocblas_status;
/// `rocblas_<t>gemm`: column-major `C = alpha·op(A)·op(B) + beta·C` in the element type `T` (FP32: `rocblas_sgemm`,
/// FP64: `rocblas_dgemm`; the two prototypes differ only in it); `alpha`/`beta` are host pointers in the default
/// pointer mode.
pub type rocblas_gemm_fn<T> = unsafe extern "C" fn(
    handle: rocblas_handle,
    trans_a: rocblas_operation,
    trans_b: rocblas_operation,
    m: rocblas_int,
    n: rocblas_int,
    k: rocblas_int,
    alpha: *const T,
    a: *const T,
    lda: rocblas_int,
    b: *const T,
    ldb: rocblas_int,
    beta: *const T,
    c: *mut T,
    ldc: rocblas_int,
) -> rocblas_status;
/// `rocblas_sgemm`.
pub type rocblas_sgemm_fn = rocblas_gemm_fn<f32>;
/// `rocblas_dgemm`.
pub type rocblas_dgemm_fn = rocblas_gemm_fn<f64>;

/// `rocblas_<t>dot`: `result = x·y` in `T` (`rocblas_sdot`, `rocblas_ddot`); `result` is a host or device pointer as
/// the pointer mode says.
pub type rocblas_dot_fn<T> = unsafe extern "C" fn(
    handle: rocblas_handle,
    n: rocblas_int,
    x: *const T,
    incx: rocblas_int,
    y: *const T,
    incy: rocblas_int,
    result: *mut T,
) -> rocblas_status;
/// `rocblas_sdot`.
pub type rocblas_sdot_fn = rocblas_dot_fn<f32>;
/// `rocblas_ddot`.
pub type rocblas_ddot_fn = rocblas_dot_fn<f64>;

/// `rocblas_<t>asum`: `result = Σ|x|` in `T` (`rocblas_sasum`, `rocblas_dasum`); `result` is a host or device
/// pointer as the pointer mode says.
pub type rocblas_asum_fn<T> = unsafe extern "C" fn(
    handle: rocblas_handle,
    n: rocblas_int,
    x: *const T,
    incx: rocblas_int,
    result: *mut T,
) -> rocblas_status;
/// `rocblas_sasum`.
pub type rocblas_sasum_fn = rocblas_asum_fn<f32>;
/// `rocblas_dasum`.
pub type rocblas_dasum_fn = rocblas_asum_fn<f64>;

/// `rocblas_pointer_mode`: whether scalars and results are host (0) or device (1) pointers (a C enum, 32 bits).
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct rocblas_pointer_mode(pub c_uint);

impl rocblas_pointer_mode {
    /// Scalars and results live in host memory (the default).
    pub const rocblas_pointer_mode_host: rocblas_pointer_mode = rocblas_pointer_mode(0);
    /// Scalars and results live in device memory.
    pub const rocblas_pointer_mode_device: rocblas_pointer_mode = rocblas_pointer_mode(1);
}

/// `rocblas_set_pointer_mode(rocblas_handle handle, rocblas_pointer_mode mode)`.
pub type rocblas_set_pointer_mode_fn =
    unsafe extern "C" fn(handle: rocblas_handle, mode: rocblas_pointer_mode) -> rocblas_status;

/// A loaded rocBLAS. The function pointers are valid while this value lives (it owns the library).
pub struct RocBlas {
    /// Where it was loaded from, as tried.
    pub path: PathBuf,
    /// `rocblas_create_handle`.
    pub rocblas_create_handle: rocblas_create_handle_fn,
    /// `rocblas_destroy_handle`.
    pub rocblas_destroy_handle: rocblas_destroy_handle_fn,
    /// `rocblas_set_stream`.
    pub rocblas_set_stream: rocblas_set_stream_fn,
    /// `rocblas_sgemm`.
    pub rocblas_sgemm: rocblas_sgemm_fn,
    /// `rocblas_dgemm`.
    pub rocblas_dgemm: rocblas_dgemm_fn,
    /// `rocblas_sdot`.
    pub rocblas_sdot: rocblas_sdot_fn,
    /// `rocblas_sasum`.
    pub rocblas_sasum: rocblas_sasum_fn,
    /// `rocblas_ddot`.
    pub rocblas_ddot: rocblas_ddot_fn,
    /// `rocblas_dasum`.
    pub rocblas_dasum: rocblas_dasum_fn,
    /// `rocblas_set_pointer_mode`.
    pub rocblas_set_pointer_mode: rocblas_set_pointer_mode_fn,
    /// `Some(description)` when this is the HIP-over-CUDA test runtime's rocBLAS over cuBLAS
    /// ([`crate::loader::ROCBLAS_TEST_RUNTIME_SYMBOL`]), `None` for rocBLAS itself.
    pub test_runtime: Option<String>,
    /// Keeps the code behind the pointers mapped.
    _library: Library,
}

/// Copies one function pointer out of `library`, or says which symbol is missing.
///
/// # Safety
/// `F` must be the function pointer type of the symbol `name` (NUL-terminated) as its header declares it.
unsafe fn symbol<F: Copy>(library: &Library, name: &[u8]) -> Result<F, String> {
    // SAFETY: the caller guarantees that `F` is the symbol's type; the pointer is only used while `library`
    // stays loaded, which `RocBlas` ensures by owning it.
    unsafe { library.get::<F>(name) }.map(|sym| *sym).map_err(|e| {
        let shown = String::from_utf8_lossy(name.strip_suffix(b"\0").unwrap_or(name)).into_owned();
        format!("loaded, but it does not export {shown}: {e}")
    })
}

/// Loads the first usable rocBLAS among `candidates` (not cached; see [`rocblas`]).
pub fn load_rocblas(candidates: &[PathBuf]) -> Result<RocBlas, LoadError> {
    let (blas, _) = load_first("librocblas (rocBLAS)", candidates, |path| {
        // SAFETY: loading runs rocBLAS's initialisers, which register its kernels with the HIP runtime it links
        // (the same libamdhip64 the suite loaded, matched by soname); rocBLAS is built to be dlopen'ed.
        let library = unsafe { Library::new(path) }.map_err(|e| dlopen_reason(path, &e))?;
        // SAFETY: for each call below, the function type follows the public rocBLAS header prototypes exactly.
        unsafe {
            Ok(RocBlas {
                path: path.to_path_buf(),
                rocblas_create_handle: symbol(&library, b"rocblas_create_handle\0")?,
                rocblas_destroy_handle: symbol(&library, b"rocblas_destroy_handle\0")?,
                rocblas_set_stream: symbol(&library, b"rocblas_set_stream\0")?,
                rocblas_sgemm: symbol(&library, b"rocblas_sgemm\0")?,
                rocblas_dgemm: symbol(&library, b"rocblas_dgemm\0")?,
                rocblas_sdot: symbol(&library, b"rocblas_sdot\0")?,
                rocblas_sasum: symbol(&library, b"rocblas_sasum\0")?,
                rocblas_ddot: symbol(&library, b"rocblas_ddot\0")?,
                rocblas_dasum: symbol(&library, b"rocblas_dasum\0")?,
                rocblas_set_pointer_mode: symbol(&library, b"rocblas_set_pointer_mode\0")?,
                test_runtime: test_runtime_description(&library, ROCBLAS_TEST_RUNTIME_SYMBOL),
                _library: library,
            })
        }
    })?;
    Ok(blas)
}

/// The process's rocBLAS, searched for on first use in the same places as the HIP runtime and kept for the life
/// of the process.
pub fn rocblas() -> Result<&'static RocBlas, &'static LoadError> {
    static BLAS: OnceLock<Result<RocBlas, LoadError>> = OnceLock::new();
    BLAS.get_or_init(|| load_rocblas(&candidates(&SearchEnv::from_process(), ROCBLAS_NAMES))).as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_names_follow_the_header() {
        assert_eq!(rocblas_status::rocblas_status_success.name(), Some("rocblas_status_success"));
        assert_eq!(rocblas_status::rocblas_status_invalid_size.name(), Some("rocblas_status_invalid_size"));
        assert_eq!(rocblas_status::rocblas_status_arch_mismatch.name(), Some("rocblas_status_arch_mismatch"));
        assert_eq!(rocblas_status(16).name(), None);
    }

    #[test]
    fn operations_have_the_header_values() {
        assert_eq!(rocblas_operation::rocblas_operation_none.0, 111);
        assert_eq!(rocblas_operation::rocblas_operation_transpose.0, 112);
        assert_eq!(std::mem::size_of::<rocblas_operation>(), 4);
        assert_eq!(std::mem::size_of::<rocblas_status>(), 4);
        assert_eq!(rocblas_pointer_mode::rocblas_pointer_mode_host.0, 0);
        assert_eq!(rocblas_pointer_mode::rocblas_pointer_mode_device.0, 1);
        assert_eq!(std::mem::size_of::<rocblas_pointer_mode>(), 4);
    }

    #[test]
    fn missing_rocblas_lists_every_candidate() {
        let paths = [PathBuf::from("/nonexistent/lib/librocblas.so"), PathBuf::from("librocblas-nonexistent.so.4")];
        let Err(err) = load_rocblas(&paths) else { panic!("a nonexistent path loaded") };
        let text = err.to_string();
        assert!(text.starts_with("librocblas (rocBLAS) could not be loaded from any of 2 candidates"), "{text}");
        for p in &paths {
            assert!(text.contains(&format!("tried {}: ", p.display())), "{text}");
        }
    }
}
