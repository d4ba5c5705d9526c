//! The HIP-over-CUDA test runtime (`hip-test-runtime/`) as hip-sys sees it, with no GPU: it builds, it loads through
//! the same loader as ROCm, it exports every function hip-sys binds under ROCm 6.3's symbol version, it says what it
//! is, and without a CUDA driver it answers with clear errors instead of crashing. Its GPU behaviour is tested by
//! running the suite's AMD path over it on an NVIDIA node (`scripts/hip-over-cuda.sh`).
//!
//! Needs a C++ compiler and CUDA's `cuda.h` (the pip wheel `nvidia-cuda-runtime` that `scripts/install-test-deps.sh`
//! installs has it), and `readelf` or `llvm-readelf-15`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use hip_sys::hip_runtime::{hipError_t, HipRuntime};
use hip_sys::loader::{self, Hip};
use hip_sys::rocblas::{self, rocblas_status};

/// Builds the test runtime once per test binary with its own script, into Cargo's temporary folder.
fn built() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hip-test-runtime");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../hip-test-runtime/build.sh");
        let result = Command::new("bash").arg(&script).arg(&out).output().expect("bash runs");
        assert!(
            result.status.success(),
            "hip-test-runtime/build.sh failed (it needs g++ or $CXX and cuda.h: scripts/install-test-deps.sh \
             installs the nvidia-cuda-runtime wheel that has it):\n{}",
            String::from_utf8_lossy(&result.stderr)
        );
        out
    })
}

fn hip() -> Hip {
    loader::load_hip(&[built().join("lib/libamdhip64.so")]).unwrap_or_else(|e| panic!("{e}"))
}

/// Whether this machine has a CUDA driver the test runtime can load (a GPU node) or not (CI).
fn has_cuda_driver() -> bool {
    // SAFETY: loading the CUDA driver library runs only its own initialisers.
    unsafe { libloading::Library::new("libcuda.so.1") }.is_ok()
}

#[test]
fn it_says_what_it_is_and_where_it_lives() {
    let hip = hip();
    let text = hip.test_runtime.as_deref().expect("the test runtime exports its marker");
    assert!(text.starts_with("HIP over CUDA test runtime /"), "{text}");
    assert!(text.contains("lib/libhip-over-cuda-test-runtime.so: "), "the resolved path, not the link: {text}");
    assert!(text.contains("not an AMD GPU"), "{text}");
    let blas = rocblas::load_rocblas(&[built().join("lib/librocblas.so")]).unwrap_or_else(|e| panic!("{e}"));
    let text = blas.test_runtime.as_deref().expect("its rocBLAS exports its marker");
    assert!(text.starts_with("rocBLAS over cuBLAS, HIP over CUDA test runtime /"), "{text}");
    assert!(text.contains("lib/librocblas-over-cublas-test-runtime.so"), "{text}");
}

#[test]
fn real_rocm_is_not_taken_for_the_test_runtime() {
    // Debian's HIP 5.2 (installed for the tests) has no marker.
    let debian = loader::load_hip(&[PathBuf::from("libamdhip64.so.5")]);
    let hip = debian.unwrap_or_else(|e| panic!("Debian's libamdhip64 (apt-get install libamdhip64-dev): {e}"));
    assert_eq!(hip.test_runtime, None);
}

/// `name -> Ok` for each function of hip-sys's table.
macro_rules! bound {
    ($rt:expr; $($f:ident),* $(,)?) => {
        vec![$((stringify!($f), $rt.$f.is_ok())),*]
    };
}

fn every_binding(rt: &HipRuntime) -> Vec<(&'static str, bool)> {
    bound!(rt;
        hipInit, hipDriverGetVersion, hipRuntimeGetVersion, hipDeviceGetName, hipDeviceTotalMem, hipDeviceSynchronize,
        hipSetDevice, hipGetDeviceCount, hipDeviceGetAttribute, hipGetDeviceProperties, hipGetLastError,
        hipGetErrorName, hipGetErrorString, hipStreamCreate, hipStreamDestroy, hipStreamSynchronize, hipEventCreate,
        hipEventRecord, hipEventDestroy, hipEventSynchronize, hipEventElapsedTime, hipMalloc, hipFree, hipMemcpy,
        hipMemcpyHtoD, hipMemcpyDtoH, hipMemcpyDtoDAsync, hipMemcpyAsync, hipMemset, hipMemsetD8Async,
        hipMemsetAsync, hipMemGetInfo, hipModuleUnload, hipModuleGetFunction, hipFuncGetAttribute, hipModuleLoadData,
        hipModuleLaunchKernel, hipModuleOccupancyMaxActiveBlocksPerMultiprocessor, hipStreamBeginCapture,
        hipStreamEndCapture, hipGraphDestroy, hipGraphInstantiate, hipGraphLaunch, hipGraphExecDestroy,
        hipModuleLaunchCooperativeKernel, hipGraphUpload, hipGetDevicePropertiesR0600, hipGetDevicePropertiesR0000,
    )
}

#[test]
fn it_exports_every_function_hip_sys_binds() {
    let hip = hip();
    let missing: Vec<&str> = every_binding(&hip.runtime).into_iter().filter(|(_, ok)| !ok).map(|(f, _)| f).collect();
    assert!(missing.is_empty(), "the test runtime lacks {missing:?}");
}

/// ROCm 6.3's symbol version of each function (ROCm/clr `hipamd/src/hip_hcc.map.in`, release/rocm-rel-6.3).
const ROCM63_VERSIONS: &[(&str, &str)] = &[
    ("hipInit", "hip_4.2"),
    ("hipRuntimeGetVersion", "hip_4.2"),
    ("hipDriverGetVersion", "hip_4.2"),
    ("hipGetDeviceCount", "hip_4.2"),
    ("hipSetDevice", "hip_4.2"),
    ("hipDeviceGetAttribute", "hip_4.2"),
    ("hipDeviceGetName", "hip_4.2"),
    ("hipDeviceTotalMem", "hip_4.2"),
    ("hipGetDeviceProperties", "hip_4.2"),
    ("hipGetDevicePropertiesR0000", "hip_4.2"),
    ("hipGetDevicePropertiesR0600", "hip_6.0"),
    ("hipMemGetInfo", "hip_4.2"),
    ("hipMalloc", "hip_4.2"),
    ("hipFree", "hip_4.2"),
    ("hipMemcpy", "hip_4.2"),
    ("hipMemcpyHtoD", "hip_4.2"),
    ("hipMemcpyDtoH", "hip_4.2"),
    ("hipMemcpyAsync", "hip_4.2"),
    ("hipMemcpyDtoDAsync", "hip_4.2"),
    ("hipMemset", "hip_4.2"),
    ("hipMemsetAsync", "hip_4.2"),
    ("hipMemsetD8Async", "hip_4.2"),
    ("hipModuleLoadData", "hip_4.2"),
    ("hipModuleGetFunction", "hip_4.2"),
    ("hipModuleLaunchKernel", "hip_4.2"),
    ("hipModuleLaunchCooperativeKernel", "hip_5.5"),
    ("hipModuleUnload", "hip_4.2"),
    ("hipFuncGetAttribute", "hip_4.2"),
    ("hipModuleOccupancyMaxActiveBlocksPerMultiprocessor", "hip_4.2"),
    ("hipEventCreate", "hip_4.2"),
    ("hipEventRecord", "hip_4.2"),
    ("hipEventSynchronize", "hip_4.2"),
    ("hipEventElapsedTime", "hip_4.2"),
    ("hipEventDestroy", "hip_4.2"),
    ("hipStreamCreate", "hip_4.2"),
    ("hipStreamDestroy", "hip_4.2"),
    ("hipStreamSynchronize", "hip_4.2"),
    ("hipDeviceSynchronize", "hip_4.2"),
    ("hipGetLastError", "hip_4.2"),
    ("hipGetErrorName", "hip_4.2"),
    ("hipGetErrorString", "hip_4.2"),
    ("hipStreamBeginCapture", "hip_4.3"),
    ("hipStreamEndCapture", "hip_4.3"),
    ("hipGraphInstantiate", "hip_4.3"),
    ("hipGraphLaunch", "hip_4.3"),
    ("hipGraphExecDestroy", "hip_4.3"),
    ("hipGraphDestroy", "hip_4.3"),
    ("hipGraphUpload", "hip_5.3"),
];

/// `symbol@@version` (or a bare symbol) for each defined dynamic symbol, from readelf.
fn dynamic_symbols(library: &Path) -> Vec<String> {
    let tools = ["readelf", "llvm-readelf-15", "llvm-readelf"];
    let out = tools
        .iter()
        .find_map(|tool| Command::new(tool).args(["--dyn-syms", "-W"]).arg(library).output().ok())
        .unwrap_or_else(|| panic!("none of {tools:?} runs: apt-get install binutils (or llvm-15)"));
    assert!(out.status.success(), "readelf failed on {}", library.display());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|w| w.len() >= 8 && w[6] != "UND" && w[3] == "FUNC")
        .map(|w| w[7].to_string())
        .collect()
}

#[test]
fn each_function_carries_its_rocm63_symbol_version() {
    let symbols = dynamic_symbols(&built().join("lib/libhip-over-cuda-test-runtime.so"));
    for (name, version) in ROCM63_VERSIONS {
        let want = format!("{name}@@{version}");
        assert!(symbols.contains(&want), "{want} not exported; exported: {symbols:?}");
    }
    // Every exported HIP function is one hip-sys binds, plus the marker under a version of its own.
    assert_eq!(symbols.len(), ROCM63_VERSIONS.len() + 1, "{symbols:?}");
    let marker = format!("{}@@HIP_OVER_CUDA_TEST_RUNTIME", loader::HIP_TEST_RUNTIME_SYMBOL);
    assert!(symbols.contains(&marker), "{symbols:?}");
    let blas = dynamic_symbols(&built().join("lib/librocblas-over-cublas-test-runtime.so"));
    let mut blas: Vec<&str> = blas.iter().map(String::as_str).collect();
    blas.sort_unstable();
    assert_eq!(
        blas,
        [
            "rocblas_create_handle",
            "rocblas_dasum",
            "rocblas_ddot",
            "rocblas_destroy_handle",
            "rocblas_dgemm",
            "rocblas_over_cublas_test_runtime_describe",
            "rocblas_sasum",
            "rocblas_sdot",
            "rocblas_set_pointer_mode",
            "rocblas_set_stream",
            "rocblas_sgemm",
        ],
        "rocBLAS exports no symbol versions, so neither does its stand-in"
    );
}

fn error_text(rt: &HipRuntime, code: hipError_t) -> (String, String) {
    let text = |f: unsafe extern "C" fn(hipError_t) -> *const std::os::raw::c_char| {
        // SAFETY: both functions take any code and return a NUL-terminated string that stays valid until the next
        // call on this thread; it is copied at once.
        unsafe { std::ffi::CStr::from_ptr(f(code)) }.to_string_lossy().into_owned()
    };
    (text(*rt.hipGetErrorName.as_ref().expect("bound")), text(*rt.hipGetErrorString.as_ref().expect("bound")))
}

#[test]
fn versions_errors_and_the_missing_driver_are_reported_as_hip_does() {
    let hip = hip();
    let rt = &hip.runtime;
    let mut version = 0;
    // SAFETY: writes one int.
    assert_eq!(unsafe { (rt.hipRuntimeGetVersion.as_ref().expect("bound"))(&mut version) }, hipError_t::hipSuccess);
    assert_eq!(version, 60_300_000, "HIP 6.3, patch 0: no ROCm release has that number");
    assert_eq!(error_text(rt, hipError_t::hipErrorOutOfMemory).0, "hipErrorOutOfMemory");
    assert_eq!(error_text(rt, hipError_t::hipErrorNoBinaryForGpu).0, "hipErrorNoBinaryForGpu");
    assert_eq!(error_text(rt, hipError_t(12345)).0, "hipErrorUnknown");

    let get_last = rt.hipGetLastError.as_ref().expect("bound");
    let mut count = -1;
    // SAFETY: writes one int.
    let code = unsafe { (rt.hipGetDeviceCount.as_ref().expect("bound"))(&mut count) };
    if has_cuda_driver() {
        // A GPU node: the driver loads; the count is whatever it sees.
        assert!(code == hipError_t::hipSuccess || code == hipError_t::hipErrorNoDevice, "{code:?}");
    } else {
        // CI: no libcuda. A clear error, named, with the reason and the runtime's name in its text.
        assert_eq!(code, hipError_t::hipErrorInsufficientDriver);
        let (name, text) = error_text(rt, code);
        assert_eq!(name, "hipErrorInsufficientDriver");
        assert!(text.contains("libcuda.so.1") && text.contains("HIP over CUDA test runtime"), "{text}");
        assert!(hip.test_runtime.as_deref().is_some_and(|t| t.contains("could not be loaded")));
        // SAFETY: plain calls. The last error is the count's, then reset, as in ROCm.
        assert_eq!(unsafe { get_last() }, hipError_t::hipErrorInsufficientDriver);
        // SAFETY: as above.
        assert_eq!(unsafe { get_last() }, hipError_t::hipSuccess);
        let mut ptr = std::ptr::null_mut();
        // SAFETY: writes one pointer; fails before touching the device.
        let code = unsafe { (rt.hipMalloc.as_ref().expect("bound"))(&mut ptr, 1024) };
        assert_eq!((code, ptr.is_null()), (hipError_t::hipErrorInsufficientDriver, true));
    }

    let blas = rocblas::load_rocblas(&[built().join("lib/librocblas.so")]).unwrap_or_else(|e| panic!("{e}"));
    if !has_cuda_driver() {
        let mut handle = std::ptr::null_mut();
        // SAFETY: writes one handle. Without a CUDA driver cuBLAS cannot make one (or is not installed at all):
        // a failed status, no handle, and the description says which.
        let status = unsafe { (blas.rocblas_create_handle)(&mut handle) };
        assert!(status != rocblas_status::rocblas_status_success && handle.is_null(), "{status:?}");
        let text = blas.test_runtime.as_deref().unwrap_or_default();
        assert!(text.contains("cuBLAS could not be loaded") || text.contains(" from /"), "{text}");
    }
    // Out-of-range operations are refused with rocBLAS's status, whatever cuBLAS would do.
    let null = std::ptr::null_mut();
    // SAFETY: a null handle is checked first and nothing is dereferenced.
    let status = unsafe {
        (blas.rocblas_sgemm)(
            null,
            rocblas::rocblas_operation(7),
            rocblas::rocblas_operation::rocblas_operation_none,
            1,
            1,
            1,
            std::ptr::null(),
            std::ptr::null(),
            1,
            std::ptr::null(),
            1,
            std::ptr::null(),
            std::ptr::null_mut(),
            1,
        )
    };
    assert_eq!(status, rocblas_status::rocblas_status_invalid_handle);
}
