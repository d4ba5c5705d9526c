//! What a newcomer meets first on the command line (issue 35): a bad value names its flag, an unknown experiment
//! lists the known ones, `--help` groups its flags, a missing compiler is said once per plan, a slow first compile
//! says so, `suite plot` says when an experiment has no plots and writes nothing beside its input with `--out`, and
//! README's compare example names a run that `suite status` and `suite compare` read in full.

// Only some of the shared helpers are used here.
#[allow(dead_code)]
mod common;

use std::path::{Path, PathBuf};

use common::suite_without_gpu;
use predicates::prelude::*;

/// A committed results folder.
fn committed(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../results").join(name)
}

/// The quick run with FP64, a plan and clocks, whose CSVs the plot tests copy.
const QUICK: &str = "2026-11-25-h100-sm_90-quick-counters-issues25-27";

#[test]
fn a_negative_size_names_its_flag() {
    let cache = tempfile::tempdir().unwrap();
    for (experiment, flag) in [("matmul", "--sizes"), ("smoke", "--sizes"), ("fusion", "--f64-sizes")] {
        suite_without_gpu(cache.path())
            .args(["run", experiment, flag, "-1", "--dry-run"])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(format!("'-1' for '{flag} <")))
            .stderr(predicate::str::contains("unexpected argument").not());
    }
    // The shared run options too.
    suite_without_gpu(cache.path())
        .args(["run", "--reps", "-1", "--dry-run"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("'-1' for '--reps <REPS>'"));
}

#[test]
fn an_unknown_experiment_lists_the_experiments() {
    let cache = tempfile::tempdir().unwrap();
    let known: Vec<&str> = suite::experiments::registry::names().collect();
    suite_without_gpu(cache.path())
        .args(["run", "foo", "--dry-run"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!("unknown experiment `foo`; known: {}", known.join(", "))))
        // Refused before anything is planned: nothing runs every experiment in its place.
        .stdout(predicate::str::is_empty());
}

/// The lines of `help` under `heading` (up to the next heading), flags only.
fn flags_under<'h>(help: &'h str, heading: &str) -> Vec<&'h str> {
    let mut lines = help.lines().skip_while(|l| l.trim_end() != format!("{heading}:"));
    lines.next();
    lines
        .take_while(|l| l.is_empty() || l.starts_with(' '))
        .filter_map(|l| l.trim_start().strip_prefix("--"))
        .filter_map(|l| l.split_whitespace().next())
        .collect()
}

#[test]
fn an_experiments_help_groups_its_flags_under_headings() {
    let cache = tempfile::tempdir().unwrap();
    let out = suite_without_gpu(cache.path()).args(["run", "matmul", "--help"]).assert().success();
    let help = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let matmul = flags_under(&help, "matmul options");
    let run = flags_under(&help, suite::cli::RUN_HEADING);
    let global = flags_under(&help, suite::cli::GLOBAL_HEADING);
    for (flags, want, not) in [
        (&matmul, ["sizes", "kernels", "f64-kernels"], ["reps", "platform"]),
        (&run, ["reps", "out", "dry-run"], ["sizes", "device"]),
        (&global, ["platform", "device", "kernels-dir"], ["sizes", "reps"]),
    ] {
        for w in want {
            assert!(flags.contains(&w), "--{w} missing from {flags:?} in\n{help}");
        }
        for n in not {
            assert!(!flags.contains(&n), "--{n} in {flags:?} in\n{help}");
        }
    }
    // In this order: the experiment's own flags first.
    let at = |h: &str| help.find(&format!("\n{h}:")).unwrap_or_else(|| panic!("no heading {h} in\n{help}"));
    assert!(at("matmul options") < at(suite::cli::RUN_HEADING));
    assert!(at(suite::cli::RUN_HEADING) < at(suite::cli::GLOBAL_HEADING));
}

#[test]
fn fulls_help_does_not_describe_the_quick_preset_as_its_own() {
    let cache = tempfile::tempdir().unwrap();
    let out = suite_without_gpu(cache.path()).args(["run", "--help"]).assert().success();
    let help = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let full: String = help
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("--full"))
        .skip(1)
        .take_while(|l| !l.trim_start().starts_with("--"))
        .collect::<Vec<_>>()
        .join(" ");
    // The minute is the quick preset's, and the complete sweeps' time is the dry run's to tell.
    assert!(full.contains("complete sweep"), "{full}");
    assert!(full.contains("quick preset") && full.contains("about a minute"), "{full}");
    assert!(full.contains("--full --dry-run"), "{full}");
}

/// A dry run on a machine without the part's compiler and without --kernels-dir queues nothing (every point would
/// error), and says why once, not once per source and per reason.
#[test]
fn a_missing_compiler_refuses_the_plan_and_says_so_once() {
    assert!(
        !Path::new("/usr/local/cuda/bin/nvcc").exists(),
        "this test plans an H100 on a machine without nvcc, and /usr/local/cuda/bin/nvcc is a candidate it cannot \
         hide: run it where CUDA is not installed there (CI is such a machine)"
    );
    let cache = tempfile::tempdir().unwrap();
    let out = suite_without_gpu(cache.path())
        .args(["run", "--dry-run", "--part", "h100-sxm"])
        .env_remove("NVCC")
        .env_remove("CUDA_PATH")
        .env("PATH", "/usr/bin:/bin")
        .assert()
        .code(2);
    let text = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert_eq!(text.matches("no nvidia kernel compiler found").count(), 1, "{text}");
    assert_eq!(text.matches("tried $NVCC").count(), 1, "{text}");
    assert!(text.contains("pass --kernels-dir DIR"), "{text}");
}

/// A --kernels-dir that holds some of the run's code objects: the plan goes on, says once which sources it could
/// not read, and the invalid points point at that warning.
#[test]
fn a_kernels_dir_missing_sources_says_so_once() {
    let cache = tempfile::tempdir().unwrap();
    let kernels = tempfile::tempdir().unwrap();
    // smoke's code object only (nvcc is on PATH where the tests run: scripts/test.sh puts pip's there).
    suite_without_gpu(cache.path())
        .args(["kernels", "build", "--arch", "sm_90", "--sources", "smoke", "--out"])
        .arg(kernels.path())
        .assert()
        .success();
    let out = suite_without_gpu(cache.path())
        .args(["run", "--dry-run", "--part", "h100-sxm", "--kernels-dir"])
        .arg(kernels.path())
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    for source in ["matmul", "occupancy", "fusion", "pt"] {
        let missing = format!("{source}.sm_90.cubin");
        assert_eq!(text.matches(missing.as_str()).count(), 1, "{missing} not named once in\n{text}");
    }
    assert!(!text.contains("smoke.sm_90.cubin"), "{text}");
    assert!(text.contains("its code object could not be read (the warning below says why)"), "{text}");
}

/// A stand-in hipcc that passes the suite's version check and takes `seconds` to fail any compile.
fn fake_hipcc(dir: &Path, seconds: &str) -> PathBuf {
    let path = dir.join(format!("fake-hipcc-{}", seconds.replace('.', "_")));
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'HIP version: 9.9.9-fake'; exit 0; fi\nsleep {seconds}\n\
         echo 'fake compiler: refusing' >&2\nexit 1\n"
    );
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    path
}

/// A compile that runs past a second says what it is compiling before it ends; a quick one says nothing.
#[test]
fn a_slow_first_compile_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let run = |hipcc: &Path| {
        let cache = tempfile::tempdir().unwrap();
        let out = suite_without_gpu(cache.path())
            .args(["run", "smoke", "--dry-run", "--part", "mi250x-gcd"])
            .env("HIPCC", hipcc)
            .assert()
            .success();
        String::from_utf8(out.get_output().stderr.clone()).unwrap()
    };
    let slow = run(&fake_hipcc(dir.path(), "1.6"));
    assert!(slow.contains("compiling smoke.hip for gfx90a with hipcc 9.9.9-fake"), "{slow}");
    assert!(slow.contains("not in the kernel cache yet"), "{slow}");
    let quick = run(&fake_hipcc(dir.path(), "0"));
    assert!(!quick.contains("compiling"), "{quick}");
}

#[test]
fn plotting_an_experiment_without_plots_says_so() {
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("smoke.csv");
    std::fs::copy(committed(QUICK).join("smoke.csv"), &csv).unwrap();
    std::fs::copy(committed(QUICK).join("run.json"), dir.path().join("run.json")).unwrap();
    suite_without_gpu(cache.path())
        .args(["plot", "smoke"])
        .arg(&csv)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("smoke draws no plots from its 2 verified rows"))
        .stderr(predicate::str::contains("no verified rows").not());
}

#[test]
fn plot_out_writes_the_derived_tables_there_and_nothing_beside_the_input() {
    let cache = tempfile::tempdir().unwrap();
    let input = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    for (experiment, derived) in [("fusion", "fusion_ratios.csv"), ("pt", "pt-speedup.csv")] {
        let csv = input.path().join(format!("{experiment}.csv"));
        std::fs::copy(committed(QUICK).join(format!("{experiment}.csv")), &csv).unwrap();
        std::fs::copy(committed(QUICK).join("run.json"), input.path().join("run.json")).unwrap();
        suite_without_gpu(cache.path())
            .args(["plot", experiment])
            .arg(&csv)
            .arg("--out")
            .arg(out.path())
            .assert()
            .success()
            .stdout(predicate::str::contains(out.path().join(derived).display().to_string()));
        assert!(out.path().join(derived).is_file(), "{derived} not in --out");
        assert!(!input.path().join(derived).exists(), "{derived} written beside the input");
    }
    let beside: Vec<String> = std::fs::read_dir(input.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !["fusion.csv", "pt.csv", "run.json"].contains(&n.as_str()))
        .collect();
    assert!(beside.is_empty(), "written beside the input: {beside:?}");
}

/// README's `suite compare` example names committed runs that hold FP64 rows, a recorded plan (complete: `suite
/// status` exits 0) and clock readings.
#[test]
fn readmes_compare_example_is_a_committed_run_with_fp64_a_plan_and_clocks() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md")).unwrap();
    let example = readme
        .lines()
        .find_map(|l| l.split('`').find(|span| span.starts_with("suite compare ") && span.contains("results/2")))
        .unwrap_or_else(|| panic!("README has no `suite compare ...` example naming a committed run"));
    let runs: Vec<&str> = example.split_whitespace().filter(|w| w.starts_with("results/2")).collect();
    assert!(!runs.is_empty(), "{example}");
    let cache = tempfile::tempdir().unwrap();
    for run in runs {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(run);
        suite_without_gpu(cache.path()).arg("status").arg(&dir).assert().code(0);
        let rows = suite::report::csv::read_rows(&dir.join("matmul.csv")).unwrap();
        assert!(rows.iter().any(|r| r.get("precision").is_some_and(|p| p == "f64")), "{run}: no FP64 matmul rows");
        let clocked = rows.iter().filter(|r| r.get("sm_clock_mhz").is_some_and(|c| !c.is_empty())).count();
        assert!(clocked > 0, "{run}: no clock readings in matmul.csv");
    }
}
