//! Finding and loading `libamdhip64` and `librocblas` at run time.
//!
//! The search is split in two so each half can be tested without ROCm: [`candidates`] turns the environment into
//! an ordered list of paths (a pure function), and [`load_first`] tries a given list in order, keeping every
//! candidate's failure for the error message. [`hip`] does both once per process.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::hip_runtime::HipRuntime;

/// The environment variables the search depends on, read once so the search itself stays pure.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchEnv {
    /// `ROCM_PATH`: the ROCm install root (set by `module load rocm` on LUMI, e.g. `/opt/rocm-6.3.4`).
    pub rocm_path: Option<OsString>,
    /// `HIP_PATH`: the HIP root (`/opt/rocm` on ROCm 6, `/opt/rocm/hip` on older releases).
    pub hip_path: Option<OsString>,
}

impl SearchEnv {
    /// Reads `ROCM_PATH` and `HIP_PATH` from this process's environment.
    pub fn from_process() -> SearchEnv {
        SearchEnv { rocm_path: std::env::var_os("ROCM_PATH"), hip_path: std::env::var_os("HIP_PATH") }
    }
}

/// File names of the HIP runtime, tried in each directory and then bare (through the system loader's own path).
/// The unversioned name comes first because it is what a ROCm install's `lib/` always has; the versioned names
/// cover runtime-only installs (ROCm 6 ships `.so.6`, ROCm 5 `.so.5`).
pub const HIP_RUNTIME_NAMES: &[&str] = &["libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"];

/// File names of rocBLAS: ROCm 6 ships soversion 4, ROCm 5 soversion 3.
pub const ROCBLAS_NAMES: &[&str] = &["librocblas.so", "librocblas.so.4", "librocblas.so.3"];

/// Where ROCm installs by default; its `lib/` is searched after `ROCM_PATH` and `HIP_PATH`.
pub const DEFAULT_ROCM_ROOT: &str = "/opt/rocm";

/// The directories searched, in order: `$ROCM_PATH/lib`, `$HIP_PATH/lib`, `/opt/rocm/lib`. Unset or empty
/// variables are skipped, and so is a root that is not an absolute path: a relative one would load libraries (and
/// run their constructors) from whatever folder the command runs in, a shared project folder say. A directory named
/// twice is searched once.
pub fn search_dirs(env: &SearchEnv) -> Vec<PathBuf> {
    let roots = [env.rocm_path.clone(), env.hip_path.clone(), Some(OsString::from(DEFAULT_ROCM_ROOT))];
    let mut dirs: Vec<PathBuf> = Vec::new();
    for root in roots.into_iter().flatten().filter(|r| !r.is_empty() && Path::new(r).is_absolute()) {
        let dir = Path::new(&root).join("lib");
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}

/// Every path to try for a library with these file `names`: each name in each of [`search_dirs`], then each bare
/// name, which `dlopen` resolves through `LD_LIBRARY_PATH`, the cache and the system directories.
pub fn candidates(env: &SearchEnv, names: &[&str]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> =
        search_dirs(env).iter().flat_map(|dir| names.iter().map(move |name| dir.join(name))).collect();
    out.extend(names.iter().map(PathBuf::from));
    out
}

/// No candidate could be loaded. Holds each candidate with the reason it was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    /// What was sought, e.g. `libamdhip64`.
    pub library: &'static str,
    /// Each candidate path (or bare name) with the loader's reason.
    pub tried: Vec<(String, String)>,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} could not be loaded from any of {} candidates", self.library, self.tried.len())?;
        for (path, why) in &self.tried {
            write!(f, "\n  tried {path}: {why}")?;
        }
        Ok(())
    }
}

impl std::error::Error for LoadError {}

/// Calls `open` on each candidate in order and returns the first success with its path. `open` says why a
/// candidate is unusable (cannot be opened, or lacks a symbol that marks the right library).
pub fn load_first<T>(
    library: &'static str,
    candidates: &[PathBuf],
    mut open: impl FnMut(&Path) -> Result<T, String>,
) -> Result<(T, PathBuf), LoadError> {
    let mut tried = Vec::with_capacity(candidates.len());
    for path in candidates {
        match open(path) {
            Ok(loaded) => return Ok((loaded, path.clone())),
            Err(why) => tried.push((path.display().to_string(), why)),
        }
    }
    Err(LoadError { library, tried })
}

/// The loader's reason for rejecting `path`, without the path itself when `dlerror` repeats it in front (the error
/// list already names the candidate).
pub fn dlopen_reason(path: &Path, error: &libloading::Error) -> String {
    let text = error.to_string();
    let shown = path.display().to_string();
    match text.strip_prefix(&shown).and_then(|rest| rest.strip_prefix(": ")) {
        Some(rest) => rest.to_string(),
        None => text,
    }
}

/// A loaded HIP runtime and where it came from.
pub struct Hip {
    /// The function table. Every entry is a `Result`: a symbol this release lacks is an `Err` until used.
    pub runtime: HipRuntime,
    /// The candidate that loaded, as tried (an absolute path, or a bare name resolved by the system loader).
    pub path: PathBuf,
    /// `Some(description)` when the library is the HIP-over-CUDA test runtime (`hip-test-runtime/`), which says
    /// what it is, where it lives and which CUDA driver runs under it; `None` for a real HIP runtime.
    pub test_runtime: Option<String>,
}

/// The function only the HIP-over-CUDA test runtime exports (`const char* hip_over_cuda_test_runtime_describe()`,
/// returning a static description): no HIP release has it, so finding it marks a run that used NVIDIA hardware
/// through the AMD code path.
pub const HIP_TEST_RUNTIME_SYMBOL: &str = "hip_over_cuda_test_runtime_describe";

/// The same marker in the test runtime's rocBLAS over cuBLAS (`librocblas` of `hip-test-runtime/`).
pub const ROCBLAS_TEST_RUNTIME_SYMBOL: &str = "rocblas_over_cublas_test_runtime_describe";

/// Calls the test runtime's description function `symbol` (NUL-free name) in `library`, if it exports one.
pub fn test_runtime_description(library: &libloading::Library, symbol: &str) -> Option<String> {
    type Describe = unsafe extern "C" fn() -> *const std::os::raw::c_char;
    let name: Vec<u8> = symbol.bytes().chain(std::iter::once(0)).collect();
    // SAFETY: the symbol, where present, is the test runtime's `const char* (void)` function (its name is not a
    // HIP or rocBLAS name, so no other library exports it with another type).
    let describe = unsafe { library.get::<Describe>(&name) }.ok()?;
    // SAFETY: the function takes nothing and returns a pointer to a static NUL-terminated string (or null).
    let text = unsafe { describe() };
    if text.is_null() {
        return Some(String::new());
    }
    // SAFETY: non-null, NUL-terminated and static, as above.
    Some(unsafe { std::ffi::CStr::from_ptr(text) }.to_string_lossy().into_owned())
}

/// Loads the first usable HIP runtime among `candidates` (not cached; see [`hip`]).
pub fn load_hip(candidates: &[PathBuf]) -> Result<Hip, LoadError> {
    let (runtime, path) = load_first("libamdhip64 (the HIP runtime)", candidates, |path| {
        // SAFETY: loading runs libamdhip64's initialisers, which only set up the runtime's own state and are
        // written to be dlopen'ed (every HIP language binding loads it this way). Each symbol is resolved with the
        // signature bindgen read from the HIP header, and a missing one is kept as an `Err`, not called.
        let runtime = unsafe { HipRuntime::new(path) }.map_err(|e| dlopen_reason(path, &e))?;
        // Symbols every HIP runtime exports since HIP 1.0: a library without them is not the HIP runtime (or is
        // broken), so the search moves on to the next candidate.
        let markers = [
            ("hipGetDeviceCount", runtime.hipGetDeviceCount.is_ok()),
            ("hipRuntimeGetVersion", runtime.hipRuntimeGetVersion.is_ok()),
            ("hipGetErrorName", runtime.hipGetErrorName.is_ok()),
        ];
        let missing: Vec<&str> = markers.iter().filter(|(_, found)| !found).map(|(name, _)| *name).collect();
        if missing.is_empty() {
            Ok(runtime)
        } else {
            Err(format!("loaded, but it does not export {} (not a HIP runtime?)", missing.join(", ")))
        }
    })?;
    // SAFETY: the library is loaded already (by the function table above), so this only takes another reference
    // to it; no initialiser runs again.
    let test_runtime = match unsafe { libloading::Library::new(&path) } {
        Ok(library) => test_runtime_description(&library, HIP_TEST_RUNTIME_SYMBOL),
        Err(_) => None,
    };
    Ok(Hip { runtime, path, test_runtime })
}

/// The process's HIP runtime, searched for on first use with [`candidates`] of [`SearchEnv::from_process`] and
/// kept for the life of the process (HIP is never unloaded: its exit handlers expect to stay mapped).
pub fn hip() -> Result<&'static Hip, &'static LoadError> {
    static HIP: OnceLock<Result<Hip, LoadError>> = OnceLock::new();
    HIP.get_or_init(|| load_hip(&candidates(&SearchEnv::from_process(), HIP_RUNTIME_NAMES))).as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(rocm: Option<&str>, hip: Option<&str>) -> SearchEnv {
        SearchEnv { rocm_path: rocm.map(OsString::from), hip_path: hip.map(OsString::from) }
    }

    fn strings(paths: &[PathBuf]) -> Vec<String> {
        paths.iter().map(|p| p.display().to_string()).collect()
    }

    #[test]
    fn search_dirs_follow_the_environment() {
        let cases: [(SearchEnv, &[&str]); 8] = [
            (env(None, None), &["/opt/rocm/lib"]),
            (env(Some("/opt/rocm-6.3.4"), None), &["/opt/rocm-6.3.4/lib", "/opt/rocm/lib"]),
            (env(None, Some("/opt/rocm/hip")), &["/opt/rocm/hip/lib", "/opt/rocm/lib"]),
            (env(Some("/r"), Some("/h")), &["/r/lib", "/h/lib", "/opt/rocm/lib"]),
            // ROCm 6 sets both to the same root: search it once.
            (env(Some("/opt/rocm"), Some("/opt/rocm")), &["/opt/rocm/lib"]),
            // An empty variable is as good as unset.
            (env(Some(""), Some("")), &["/opt/rocm/lib"]),
            // A relative root is ignored (issue 31): it would load libraries from the current folder.
            (env(Some("rocm"), Some("./hip")), &["/opt/rocm/lib"]),
            (env(Some("."), Some("/opt/rocm-6.3.4")), &["/opt/rocm-6.3.4/lib", "/opt/rocm/lib"]),
        ];
        for (e, want) in cases {
            assert_eq!(strings(&search_dirs(&e)), want, "{e:?}");
        }
    }

    #[test]
    fn candidates_try_every_name_in_every_dir_then_bare_names() {
        let got = strings(&candidates(&env(Some("/r"), None), HIP_RUNTIME_NAMES));
        let want = [
            "/r/lib/libamdhip64.so",
            "/r/lib/libamdhip64.so.6",
            "/r/lib/libamdhip64.so.5",
            "/opt/rocm/lib/libamdhip64.so",
            "/opt/rocm/lib/libamdhip64.so.6",
            "/opt/rocm/lib/libamdhip64.so.5",
            "libamdhip64.so",
            "libamdhip64.so.6",
            "libamdhip64.so.5",
        ];
        assert_eq!(got, want);
        let blas = strings(&candidates(&env(None, None), ROCBLAS_NAMES));
        assert_eq!(blas.first().map(String::as_str), Some("/opt/rocm/lib/librocblas.so"));
        assert_eq!(blas.last().map(String::as_str), Some("librocblas.so.3"));
    }

    #[test]
    fn load_first_stops_at_the_first_success_and_keeps_earlier_reasons() {
        let paths = [PathBuf::from("/a"), PathBuf::from("/b"), PathBuf::from("/c")];
        let mut seen = Vec::new();
        let got = load_first("thing", &paths, |p| {
            seen.push(p.to_path_buf());
            if p == Path::new("/b") {
                Ok(7)
            } else {
                Err("nope".to_string())
            }
        });
        assert_eq!(got, Ok((7, PathBuf::from("/b"))));
        assert_eq!(seen, [PathBuf::from("/a"), PathBuf::from("/b")]);
    }

    #[test]
    fn missing_hip_lists_every_candidate_with_its_reason() {
        let paths = [
            PathBuf::from("/nonexistent-rocm/lib/libamdhip64.so"),
            PathBuf::from("/nonexistent-hip/lib/libamdhip64.so.6"),
            PathBuf::from("libamdhip64-nonexistent.so.9"),
        ];
        let Err(err) = load_hip(&paths) else { panic!("a nonexistent path loaded") };
        assert_eq!(err.tried.len(), paths.len());
        let text = err.to_string();
        assert!(
            text.starts_with("libamdhip64 (the HIP runtime) could not be loaded from any of 3 candidates"),
            "{text}"
        );
        for p in &paths {
            let line = format!("tried {}: ", p.display());
            assert!(text.contains(&line), "{line} missing from:\n{text}");
        }
        // The loader's own reason is kept, without the path it repeats.
        let first = format!("tried {}: ", paths[0].display());
        assert!(text.contains(&format!("{first}cannot open shared object file")), "{text}");
    }
}
