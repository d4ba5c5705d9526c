//! What the CPU tests need from the machine (the kernel compilers, LLVM's tools, the HIP runtime without a GPU)
//! and what to do when a piece is missing: the one place that the unit tests, the CLI tests and the device tests
//! ask. A test that needs a missing piece fails with [`Missing`]'s message; it never passes by returning early.
//! `scripts/install-test-deps.sh` installs all of it, and `scripts/test.sh` runs it first.
//!
//! Nothing here runs in the `suite` command: these functions only look things up and never panic; the tests turn
//! a [`Missing`] into their failure.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use crate::code_objects::{self, Compiler};
use crate::device::Platform;

/// A file or folder of this repository's `suite/` crate (fixtures, kernel sources as `../kernels/...`), for tests.
/// Test binaries are built on one machine and run on another (a GPU node has no Rust toolchain, see
/// `scripts/bundle-gpu-check.sh`), so the path the build saw is used only where it exists; elsewhere `suite/` is
/// looked up from the working directory, which must then be the repository's root.
pub fn crate_path(relative: &str) -> PathBuf {
    let built = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let base = if built.is_dir() { built } else { PathBuf::from("suite") };
    base.join(relative)
}

/// How to get every tool the tests use, for the failure message.
pub const INSTALL: &str = "run scripts/test.sh, which installs what is missing through \
     scripts/install-test-deps.sh (as root; it prints the commands otherwise) and puts pip's nvcc on PATH";

/// A tool or library that a test needs and this machine lacks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("this test needs {what}, which is missing here ({why}); {INSTALL}. The packages: {packages}")]
pub struct Missing {
    /// What is missing, e.g. `the amd kernel compiler (hipcc)`.
    pub what: String,
    /// Why it was not found: every place looked at, or the loader's error.
    pub why: String,
    /// The packages that provide it.
    pub packages: &'static str,
}

/// Debian's HIP 5.2 packages: hipcc, its clang 15 and LLVM 15 tools, the device libraries and libamdhip64.
const HIP_PACKAGES: &str = "apt-get install hipcc libamdhip64-dev rocm-device-libs llvm-15";
/// CUDA 13's nvcc and its headers from PyPI wheels.
const CUDA_PACKAGES: &str =
    "python3 -m pip install nvidia-cuda-nvcc nvidia-cuda-runtime nvidia-cuda-cccl nvidia-cuda-crt";

/// Upstream clang 18.1.6 for AMD, in zig 0.13.0's PyPI wheel (it also needs [`HIP_PACKAGES`]' headers and device
/// libraries).
const ZIG_PACKAGES: &str = "python3 -m pip install ziglang==0.13.0";

/// The platform's kernel compiler, found once per process.
pub fn compiler(platform: Platform) -> Result<Compiler, Missing> {
    static AMD: OnceLock<Result<Compiler, Missing>> = OnceLock::new();
    static NVIDIA: OnceLock<Result<Compiler, Missing>> = OnceLock::new();
    let (cell, name, packages) = match platform {
        Platform::Amd => (&AMD, "hipcc", HIP_PACKAGES),
        Platform::Nvidia => (&NVIDIA, "nvcc", CUDA_PACKAGES),
    };
    cell.get_or_init(|| {
        code_objects::find(platform).map_err(|e| Missing {
            what: format!("the {platform} kernel compiler ({name})"),
            why: e.to_string(),
            packages,
        })
    })
    .clone()
}

/// zig's clang from the `ziglang` wheel ([`code_objects::find_zig`]), the second AMD compiler the CPU tests compare
/// with hipcc, found once per process.
pub fn zig() -> Result<Compiler, Missing> {
    static ZIG: OnceLock<Result<Compiler, Missing>> = OnceLock::new();
    ZIG.get_or_init(|| {
        code_objects::find_zig().map_err(|e| Missing {
            what: "zig's clang (the ziglang wheel)".to_string(),
            why: e.to_string(),
            packages: ZIG_PACKAGES,
        })
    })
    .clone()
}

/// The first of `names` that runs with `--version` (an LLVM tool under one of its versioned names, e.g.
/// `llvm-readelf-15`); they come with Debian's hipcc.
pub fn llvm_tool(names: &[&str]) -> Result<PathBuf, Missing> {
    let runs = |p: &PathBuf| Command::new(p).arg("--version").output().is_ok_and(|o| o.status.success());
    names.iter().map(PathBuf::from).find(runs).ok_or_else(|| Missing {
        what: names.join(" or "),
        why: "none of these names runs with --version".to_string(),
        packages: HIP_PACKAGES,
    })
}

/// The HIP runtime library (`libamdhip64`), which the "HIP without a GPU" tests load.
pub fn hip_runtime() -> Result<(), Missing> {
    hip_sys::loader::hip().map(|_| ()).map_err(|e| Missing {
        what: "the HIP runtime (libamdhip64)".to_string(),
        why: e.to_string(),
        packages: HIP_PACKAGES,
    })
}

/// The host C++ compiler (`$CXX`, else g++; C++20), which builds the CPU emulation of the kernels
/// (`suite/tests/wave64_cpu.rs`). `hip-test-runtime/build.sh` picks its compiler the same way.
pub fn host_cxx() -> Result<PathBuf, Missing> {
    let cxx = PathBuf::from(std::env::var_os("CXX").filter(|c| !c.is_empty()).unwrap_or_else(|| "g++".into()));
    let missing = |why: String| Missing {
        what: format!("the host C++ compiler ({})", cxx.display()),
        why,
        packages: "apt-get install g++",
    };
    match Command::new(&cxx).arg("--version").output() {
        Ok(out) if out.status.success() => Ok(cxx),
        Ok(out) => Err(missing(format!("`{} --version` exited with {}", cxx.display(), out.status))),
        Err(e) => Err(missing(format!("`{}` does not run: {e}", cxx.display()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_tool_says_what_to_install_and_how() {
        let e = llvm_tool(&["no-such-llvm-tool-15"]).unwrap_err();
        let text = e.to_string();
        assert!(text.starts_with("this test needs no-such-llvm-tool-15, which is missing here"), "{text}");
        assert!(text.contains("scripts/test.sh") && text.contains("scripts/install-test-deps.sh"), "{text}");
        assert!(text.contains("apt-get install hipcc"), "{text}");
    }
}
