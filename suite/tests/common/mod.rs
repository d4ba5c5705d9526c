//! Shared helpers for the CLI tests: the binary's command, isolated from the machine's GPUs and caches, and the
//! tools a test needs (from `suite::test_deps`, the one place that says what the tests need and how to get it).

// Read by the documentation tests only; each test binary compiles this module whole.
#[allow(dead_code)]
pub mod markdown;

use assert_cmd::Command;

/// `suite` with every GPU hidden (so a test about "no GPU" holds on a GPU node too) and a private kernel cache.
pub fn suite_without_gpu(cache: &std::path::Path) -> Command {
    let mut cmd = Command::cargo_bin("suite").expect("the suite binary is built by cargo test");
    cmd.env("CUDA_VISIBLE_DEVICES", "-1")
        .env("HIP_VISIBLE_DEVICES", "-1")
        .env("ROCR_VISIBLE_DEVICES", "-1")
        .env("SUITE_CACHE_DIR", cache);
    cmd
}

/// Fails the calling test, saying what to install, when `platform`'s kernel compiler is missing.
#[track_caller]
pub fn require_compiler(platform: suite::device::Platform) {
    if let Err(missing) = suite::test_deps::compiler(platform) {
        panic!("{missing}");
    }
}

/// Fails the calling test, saying what to install, when the HIP runtime library is missing.
#[track_caller]
pub fn require_hip_runtime() {
    if let Err(missing) = suite::test_deps::hip_runtime() {
        panic!("{missing}");
    }
}

/// Fails the calling test, saying what to install, when zig's clang (the `ziglang` wheel) is missing.
#[track_caller]
pub fn require_zig() {
    if let Err(missing) = suite::test_deps::zig() {
        panic!("{missing}");
    }
}
