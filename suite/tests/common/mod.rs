//! Shared helpers for the CLI tests: the binary's command, isolated from the machine's GPUs and caches.

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

/// Whether CI installed the compilers, so that a missing one is a failure rather than a skip.
pub fn compilers_required() -> bool {
    std::env::var("SUITE_REQUIRE_COMPILERS").is_ok_and(|v| v == "1")
}

/// Whether the suite finds `platform`'s kernel compiler; when it does not, print one loud line (or fail where CI
/// installed it).
pub fn have_compiler(platform: suite::device::Platform) -> bool {
    match suite::kernels::find(platform) {
        Ok(_) => true,
        Err(e) => {
            assert!(!compilers_required(), "no {platform} compiler but SUITE_REQUIRE_COMPILERS=1: {e}");
            // Straight to stderr: libtest captures eprintln! of passing tests, and a skip must be seen.
            let line = format!("!!!!! SKIPPED: no {platform} kernel compiler: {e}\n");
            let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
            false
        }
    }
}
