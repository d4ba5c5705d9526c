//! The suite over the HIP-over-CUDA test runtime (`hip-test-runtime/`, chosen with `ROCM_PATH`) when no GPU is
//! visible: every message names the test runtime and its library, and says why there is no device, so such a run
//! can never pass for ROCm. (On an NVIDIA node the same runtime runs the AMD path: `scripts/hip-over-cuda.sh`.)

// Only `suite_without_gpu` is used here.
#[allow(dead_code)]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command as Process;
use std::sync::OnceLock;

use predicates::prelude::*;

/// Builds the test runtime once per test binary with its own script (needs g++ and cuda.h, which
/// `scripts/install-test-deps.sh` installs).
fn test_runtime() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hip-test-runtime");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../hip-test-runtime/build.sh");
        let result = Process::new("bash").arg(&script).arg(&out).output().expect("bash runs");
        assert!(
            result.status.success(),
            "hip-test-runtime/build.sh failed (scripts/install-test-deps.sh installs the cuda.h it needs):\n{}",
            String::from_utf8_lossy(&result.stderr)
        );
        out
    })
}

#[test]
fn info_over_the_test_runtime_names_it_and_finds_no_amd_gpu() {
    let cache = tempfile::tempdir().expect("tempdir");
    common::suite_without_gpu(cache.path())
        .env("ROCM_PATH", test_runtime())
        .args(["--platform", "amd", "info"])
        .assert()
        .failure()
        .stdout(predicate::str::contains("HIP over CUDA test runtime /"))
        .stdout(predicate::str::contains("lib/libhip-over-cuda-test-runtime.so"))
        .stdout(predicate::str::contains("no NVIDIA (HIP over CUDA test runtime) GPU visible"))
        .stdout(predicate::str::contains("rocBLAS over cuBLAS, HIP over CUDA test runtime"))
        .stdout(predicate::str::contains("AMD Instinct").not());
}

#[test]
fn a_run_over_the_test_runtime_without_a_gpu_is_a_clear_error() {
    let cache = tempfile::tempdir().expect("tempdir");
    let out = tempfile::tempdir().expect("tempdir");
    common::suite_without_gpu(cache.path())
        .env("ROCM_PATH", test_runtime())
        .args(["--platform", "amd", "run", "smoke", "--out"])
        .arg(out.path())
        .assert()
        .failure()
        .stderr(predicate::str::contains("HIP over CUDA test runtime"))
        .stderr(predicate::str::contains("unset ROCM_PATH to use ROCm"));
    assert!(!out.path().join("run.json").exists(), "nothing is recorded without a device");
}
