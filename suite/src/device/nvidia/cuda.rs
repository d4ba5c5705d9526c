//! Result layer over the CUDA driver API (through `cudarc`'s raw bindings, loaded at run time).
//!
//! cudarc's loader panics when `libcuda` is missing, so nothing here calls into cudarc before [`load_driver`]
//! has found the library itself and kept it loaded: cudarc's later `dlopen` of the same soname then returns the
//! library already in the process.

use std::ffi::{c_int, CStr};
use std::path::PathBuf;
use std::sync::OnceLock;

use cudarc::driver::sys;

use crate::device::Error;

/// The name a message gives a CUDA API from its binding's name: without the ABI suffix `_v2` (`cuMemAlloc_v2` is
/// `cuMemAlloc` in CUDA's headers and documentation).
pub(super) fn api_name(binding: &'static str) -> &'static str {
    binding.strip_suffix("_v2").unwrap_or(binding)
}

/// Converts a driver status into the suite's error, naming the API and fetching the code's name and text.
pub(super) fn check(api: &'static str, status: sys::CUresult) -> Result<(), Error> {
    if status == sys::CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    Err(api_error(api, status))
}

/// Builds [`Error::Api`] for a failed driver call.
pub(super) fn api_error(api: &'static str, status: sys::CUresult) -> Error {
    Error::Api { api, code: status as i64, code_name: error_name(status), text: error_text(status) }
}

/// The driver's name for a status, e.g. `CUDA_ERROR_OUT_OF_MEMORY`.
pub(super) fn error_name(status: sys::CUresult) -> String {
    let mut ptr = std::ptr::null();
    // SAFETY: cuGetErrorName writes a pointer to a static, NUL-terminated string or leaves it null on failure.
    let ok = unsafe { sys::cuGetErrorName(status, &mut ptr) } == sys::CUresult::CUDA_SUCCESS;
    if ok && !ptr.is_null() {
        // SAFETY: the driver returned a static NUL-terminated string.
        unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned()
    } else {
        format!("{status:?}")
    }
}

fn error_text(status: sys::CUresult) -> String {
    let mut ptr = std::ptr::null();
    // SAFETY: as in `error_name`.
    let ok = unsafe { sys::cuGetErrorString(status, &mut ptr) } == sys::CUresult::CUDA_SUCCESS;
    if ok && !ptr.is_null() {
        // SAFETY: the driver returned a static NUL-terminated string.
        unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned()
    } else {
        "no description".to_string()
    }
}

/// Where a CUDA library may be: `$CUDA_PATH`, `/usr/local/cuda`, then the system loader's own search (bare names). A
/// `CUDA_PATH` that is not an absolute path is ignored: it would load libraries from the current folder.
pub(super) fn candidates(env_cuda_path: Option<&str>, file_names: &[&str]) -> Vec<String> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(root) = env_cuda_path.filter(|p| !p.is_empty() && std::path::Path::new(p).is_absolute()) {
        dirs.push(PathBuf::from(root).join("lib64"));
        dirs.push(PathBuf::from(root).join("lib"));
    }
    dirs.push(PathBuf::from("/usr/local/cuda/lib64"));
    let mut out: Vec<String> = Vec::new();
    for dir in &dirs {
        for name in file_names {
            out.push(dir.join(name).display().to_string());
        }
    }
    out.extend(file_names.iter().map(|n| n.to_string()));
    out
}

/// A library kept loaded for the life of the process, with where it came from.
pub(super) struct Loaded {
    /// The candidate that loaded.
    pub path: String,
    lib: libloading::Library,
}

/// Loads the first candidate that the system loader accepts, globally, so that later `dlopen`s by soname (cudarc's)
/// find it. Returns every candidate's reason when none loads.
pub(super) fn load_first(candidates: &[String]) -> Result<Loaded, Vec<(String, String)>> {
    let mut tried = Vec::new();
    for path in candidates {
        // RTLD_GLOBAL makes the symbols visible to cudarc's own dlopen of the same library.
        let flags = libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL;
        // SAFETY: loading a vendor shared library runs its initialisers; these are the CUDA driver and cuBLAS,
        // which are designed to be loaded this way.
        match unsafe { libloading::os::unix::Library::open(Some(path), flags) } {
            Ok(lib) => return Ok(Loaded { path: path.clone(), lib: lib.into() }),
            // dlerror repeats the path in front of its reason; the candidate is already named.
            Err(e) => tried.push((path.clone(), e.to_string().trim_start_matches(&format!("{path}: ")).to_string())),
        }
    }
    Err(tried)
}

/// The CUDA driver library, loaded once.
pub(super) fn load_driver() -> Result<&'static Loaded, Error> {
    static DRIVER: OnceLock<Result<Loaded, Vec<(String, String)>>> = OnceLock::new();
    let cuda_path = std::env::var("CUDA_PATH").ok();
    DRIVER
        .get_or_init(|| load_first(&candidates(cuda_path.as_deref(), &["libcuda.so.1", "libcuda.so"])))
        .as_ref()
        .map_err(|tried| Error::RuntimeNotFound {
            runtime: "CUDA",
            hint: "install the NVIDIA driver (it provides libcuda.so.1) or add its folder to LD_LIBRARY_PATH",
            tried: tried.clone(),
        })
}

/// The driver's CUDA version, e.g. `13.0`.
pub(super) fn driver_api_version() -> Result<String, Error> {
    let mut v: c_int = 0;
    // SAFETY: cuDriverGetVersion only writes an int; it may be called before cuInit.
    unsafe { cu_call!(cuDriverGetVersion(&mut v)) }?;
    Ok(format_cuda_version(v))
}

/// Formats the driver's encoding `1000 * major + 10 * minor`.
pub(super) fn format_cuda_version(v: c_int) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

/// The kernel module's version, e.g. `580.159.04`, read from sysfs (empty where it cannot be read).
pub(super) fn kernel_driver_version() -> String {
    std::fs::read_to_string("/sys/module/nvidia/version").map(|s| s.trim().to_string()).unwrap_or_default()
}

/// Initialises the driver, turning "no GPU" into [`Error::NoDevice`].
pub(super) fn init() -> Result<(), Error> {
    // SAFETY: cuInit takes flags 0 and may be called repeatedly.
    let status = unsafe { sys::cuInit(0) };
    match status {
        sys::CUresult::CUDA_SUCCESS => Ok(()),
        sys::CUresult::CUDA_ERROR_NO_DEVICE | sys::CUresult::CUDA_ERROR_STUB_LIBRARY => Err(Error::NoDevice {
            runtime: "CUDA",
            version: driver_api_version().unwrap_or_else(|_| "?".into()),
            vendor: "NVIDIA",
            code_name: error_name(status),
            hint: if status == sys::CUresult::CUDA_ERROR_STUB_LIBRARY {
                ": the loaded libcuda is the toolkit's stub; install the NVIDIA driver".into()
            } else {
                String::new()
            },
        }),
        other => Err(api_error("cuInit", other)),
    }
}

/// Whether the loaded driver exports `name` (cudarc panics when a missing symbol is called).
pub(super) fn has_symbol(name: &str) -> bool {
    let Ok(loaded) = load_driver() else { return false };
    let mut symbol = name.as_bytes().to_vec();
    symbol.push(0);
    // SAFETY: only the symbol's address is looked up; it is never called through this handle.
    unsafe { loaded.lib.get::<*const ()>(&symbol) }.is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_try_cuda_path_then_default_then_loader() {
        let c = candidates(Some("/opt/cuda"), &["libcuda.so.1"]);
        assert_eq!(
            c,
            vec![
                "/opt/cuda/lib64/libcuda.so.1",
                "/opt/cuda/lib/libcuda.so.1",
                "/usr/local/cuda/lib64/libcuda.so.1",
                "libcuda.so.1"
            ]
        );
        let c = candidates(None, &["libcublas.so.13"]);
        assert_eq!(c, vec!["/usr/local/cuda/lib64/libcublas.so.13", "libcublas.so.13"]);
        assert_eq!(candidates(Some(""), &["x"]).len(), 2);
    }

    #[test]
    fn missing_library_names_every_candidate() {
        let cands = vec!["/nonexistent/libcuda.so.1".to_string(), "libsurely-not-here.so.9".to_string()];
        let tried = load_first(&cands).err().expect("nothing can load");
        assert_eq!(tried.len(), 2);
        assert_eq!(tried[0].0, "/nonexistent/libcuda.so.1");
        assert!(!tried[1].1.is_empty());
    }

    #[test]
    fn cuda_versions_format_like_nvidia_smi() {
        assert_eq!(format_cuda_version(13000), "13.0");
        assert_eq!(format_cuda_version(12040), "12.4");
    }
}
