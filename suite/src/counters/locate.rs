//! Where the profilers live: the override variable, then `PATH`, then the vendors' install folders. A profiler
//! that is nowhere is [`Error::NotFound`], naming every place looked at and what to do; the run goes on without
//! counters.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::{Error, Profiler};

/// A profiler found: its executable and the version it reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Which profiler.
    pub profiler: Profiler,
    /// Its executable.
    pub path: PathBuf,
    /// The first line of its `--version` output that holds a digit, e.g. `Version 2025.3.1.0 (build ...)`; or why
    /// there is none.
    pub version: String,
}

/// What the search reads of the environment: a variable's value (the process's own environment in a run; a table
/// in tests).
pub type Env<'a> = &'a dyn Fn(&str) -> Option<OsString>;

/// The places `profiler` is looked for, in order: the override variable alone when it is set (a name the user gave
/// is not second-guessed), else every `PATH` entry, then the vendor's folders (`ncu`: `$CUDA_PATH/bin`,
/// `/usr/local/cuda/bin`, then `<root>/opt/nvidia/nsight-compute/<version>/`, newest version first, the standalone
/// installer's layout; `rocprofv3`: `$ROCM_PATH/bin`, `/opt/rocm/bin`, which `module load rocm` on LUMI puts on
/// `PATH` anyway). `root` is `/` outside tests.
pub fn candidates(profiler: Profiler, env: Env, root: &Path) -> Vec<PathBuf> {
    let exe = profiler.command();
    if let Some(path) = env(profiler.override_variable()).filter(|v| !v.is_empty()) {
        return vec![PathBuf::from(path)];
    }
    let mut out: Vec<PathBuf> =
        env("PATH").map(|p| std::env::split_paths(&p).map(|d| d.join(exe)).collect()).unwrap_or_default();
    let under = |p: &str| root.join(p.trim_start_matches('/'));
    match profiler {
        Profiler::Ncu => {
            if let Some(cuda) = env("CUDA_PATH") {
                out.push(PathBuf::from(cuda).join("bin").join(exe));
            }
            out.push(under("/usr/local/cuda/bin").join(exe));
            let nsight = under("/opt/nvidia/nsight-compute");
            let mut versions: Vec<PathBuf> = std::fs::read_dir(&nsight)
                .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
                .unwrap_or_default();
            // Newest first: version folders sort as text within one century of releases (2024.x < 2025.y).
            versions.sort();
            versions.reverse();
            if versions.is_empty() {
                out.push(nsight.join("<version>").join(exe));
            }
            out.extend(versions.into_iter().map(|v| v.join(exe)));
        }
        Profiler::Rocprofv3 => {
            if let Some(rocm) = env("ROCM_PATH") {
                out.push(PathBuf::from(rocm).join("bin").join(exe));
            }
            out.push(under("/opt/rocm/bin").join(exe));
        }
    }
    out
}

/// What to install or set when `profiler` is missing.
fn install_advice(profiler: Profiler) -> &'static str {
    match profiler {
        Profiler::Ncu => {
            "Install Nsight Compute (it comes with the CUDA toolkit, or on its own from NVIDIA), put ncu on PATH or \
             set SUITE_NCU=/path/to/ncu, and run again with --counters"
        }
        Profiler::Rocprofv3 => {
            "Load ROCm 6.2 or later (on LUMI: module load LUMI/25.03 partition/G rocm/6.3.4), put rocprofv3 on PATH \
             or set SUITE_ROCPROFV3=/path/to/rocprofv3, and run again with --counters"
        }
    }
}

/// The first of [`candidates`] that is an executable file, or [`Error::NotFound`] naming them all.
pub fn find(profiler: Profiler, env: Env, root: &Path) -> Result<PathBuf, Error> {
    let tried = candidates(profiler, env, root);
    tried.iter().find(|p| is_executable(p)).cloned().ok_or_else(|| Error::NotFound {
        profiler: profiler.label(),
        tried: tried.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "),
        install: install_advice(profiler),
    })
}

/// Finds `profiler` for this process (its environment, the real root) and asks it its version.
pub fn locate(profiler: Profiler) -> Result<Found, Error> {
    let path = find(profiler, &|name| std::env::var_os(name), Path::new("/"))?;
    let version = version_of(&path);
    Ok(Found { profiler, path, version })
}

/// The profiler's version line (`<path> --version`), or why there is none: recorded, never needed.
fn version_of(path: &Path) -> String {
    match std::process::Command::new(path).arg("--version").output() {
        Ok(out) => version_line(&String::from_utf8_lossy(&out.stdout))
            .or_else(|| version_line(&String::from_utf8_lossy(&out.stderr)))
            .unwrap_or_else(|| "unknown: --version printed no version".into()),
        Err(e) => format!("unknown: {} --version: {e}", path.display()),
    }
}

/// The first line of `text` that names a version: one with a digit, preferring one that says "version".
pub fn version_line(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| l.chars().any(|c| c.is_ascii_digit())).collect();
    lines.iter().find(|l| l.to_ascii_lowercase().contains("version")).or(lines.first()).map(|l| l.to_string())
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn executable(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "#!/bin/sh\necho 'Version 2025.3.1.0 (build 1)'\n").unwrap();
        std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }

    #[test]
    fn a_missing_profiler_names_every_place_tried_and_says_the_run_goes_on() {
        let root = tempfile::tempdir().unwrap();
        let bin = root.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let path = bin.as_os_str().to_owned();
        let env = move |name: &str| (name == "PATH").then(|| path.clone());
        let err = find(Profiler::Ncu, &env, root.path()).unwrap_err().to_string();
        assert!(err.starts_with("no Nsight Compute (ncu) found (tried: "), "{err}");
        assert!(err.contains(&bin.join("ncu").display().to_string()), "{err}");
        assert!(err.contains("usr/local/cuda/bin/ncu") && err.contains("opt/nvidia/nsight-compute/<version>/ncu"));
        assert!(err.contains("the run goes on without counters, and its timed rows are untouched"), "{err}");
        assert!(err.contains("SUITE_NCU=/path/to/ncu"), "{err}");
        let err = find(Profiler::Rocprofv3, &env, root.path()).unwrap_err().to_string();
        assert!(err.contains("no rocprofv3 found") && err.contains("opt/rocm/bin/rocprofv3"), "{err}");
        assert!(err.contains("module load LUMI/25.03 partition/G rocm/6.3.4"), "{err}");
    }

    #[test]
    fn the_search_order_is_override_then_path_then_vendor_folders_newest_first() {
        let root = tempfile::tempdir().unwrap();
        let old = root.path().join("opt/nvidia/nsight-compute/2024.1.0/ncu");
        let new = root.path().join("opt/nvidia/nsight-compute/2025.3.1/ncu");
        executable(&old);
        executable(&new);
        let none = |_: &str| None;
        assert_eq!(find(Profiler::Ncu, &none, root.path()).unwrap(), new);
        // A file that is not executable is passed over.
        let on_path = root.path().join("bin/ncu");
        std::fs::create_dir_all(on_path.parent().unwrap()).unwrap();
        std::fs::write(&on_path, "").unwrap();
        let path = root.path().join("bin").into_os_string();
        let env = move |name: &str| (name == "PATH").then(|| path.clone());
        assert_eq!(find(Profiler::Ncu, &env, root.path()).unwrap(), new);
        executable(&on_path);
        assert_eq!(find(Profiler::Ncu, &env, root.path()).unwrap(), on_path);
        // The override wins, and alone: when it names nothing, nothing else is tried.
        let named = root.path().join("elsewhere/ncu");
        let named_os = named.clone().into_os_string();
        let env = move |name: &str| (name == "SUITE_NCU").then(|| named_os.clone());
        assert_eq!(candidates(Profiler::Ncu, &env, root.path()), vec![named.clone()]);
        assert!(find(Profiler::Ncu, &env, root.path()).is_err());
        executable(&named);
        assert_eq!(find(Profiler::Ncu, &env, root.path()).unwrap(), named);
        let rocm = root.path().join("rocm-6.3.4");
        let rocm_os = rocm.clone().into_os_string();
        let env = move |name: &str| (name == "ROCM_PATH").then(|| rocm_os.clone());
        assert_eq!(candidates(Profiler::Rocprofv3, &env, root.path())[0], rocm.join("bin/rocprofv3"));
    }

    #[test]
    fn the_version_line_is_the_one_that_says_version() {
        let ncu = "NVIDIA (R) Nsight Compute Command Line Profiler\nCopyright (c) 2018-2025 NVIDIA Corporation\n\
                   Version 2025.3.1.0 (build 36398880) (public-release)\n";
        assert_eq!(version_line(ncu).as_deref(), Some("Version 2025.3.1.0 (build 36398880) (public-release)"));
        assert_eq!(version_line("rocprofv3 0.5.0\n").as_deref(), Some("rocprofv3 0.5.0"));
        assert_eq!(version_line("no digits here\n"), None);
        let root = tempfile::tempdir().unwrap();
        let exe = root.path().join("ncu");
        executable(&exe);
        assert_eq!(version_of(&exe), "Version 2025.3.1.0 (build 1)");
    }
}
