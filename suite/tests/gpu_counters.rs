//! The counter pass on a GPU (issue 27): `suite run --counters` over the quick preset, under the vendor profiler
//! (Nsight Compute's `ncu` on NVIDIA, where it may read the counters; `rocprofv3` on AMD). Ignored by default:
//!
//! ```sh
//! cargo test --release -p suite --test gpu_counters -- --ignored --nocapture
//! ```
//!
//! It fails, saying why, where there is no GPU or no profiler: it never passes by finding none. The run's folder is
//! kept (its path is printed, or `SUITE_COUNTERS_OUT` names it) with `counters.csv`, the plots and the profilers'
//! raw output; the test prints every point's figures for docs/occupancy.md and docs/counters.md (matmul's
//! shared-memory and FP64-pipe figures too, on NVIDIA).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use suite::report::csv::read_rows;

/// The suite binary: `SUITE_BIN`, else beside this test (a bundle from scripts/bundle-gpu-check.sh), else cargo's
/// `target/<profile>/suite` one folder up from the test in `deps/`.
fn suite_bin() -> PathBuf {
    if let Some(path) = std::env::var_os("SUITE_BIN") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().expect("the test knows its own path");
    let dir = exe.parent().expect("the test is in a folder");
    let beside = dir.join("suite");
    if beside.is_file() {
        return beside;
    }
    dir.parent().map(|d| d.join("suite")).filter(|p| p.is_file()).unwrap_or_else(|| {
        panic!(
            "no suite binary beside {} or one folder up: build it (cargo build --release -p suite) or set SUITE_BIN",
            exe.display()
        )
    })
}

type Row = BTreeMap<String, String>;

fn num(row: &Row, column: &str) -> Option<f64> {
    row.get(column).and_then(|v| v.parse().ok())
}

/// The sweeps whose kernels stream their data once (each input read once, each output written once), so their
/// DRAM bytes must match the counted bytes where the data does not fit in L2. Not here: the driver copy (no
/// kernel), the group-count and barrier sweeps (passes over data the L2 holds), registers (reads cached values).
const STREAMING: &[(&str, &str)] = &[
    ("smoke", ""),
    ("occupancy", "copy_kernel"),
    ("occupancy", "group_size"),
    ("occupancy", "group_size_x4"),
    ("occupancy", "lds"),
    ("occupancy", "lds_x4"),
];

/// The shared-memory and FP64-pipe columns that every profiled matmul point on NVIDIA has.
const LDS_COLUMNS: &[&str] = &["lds_wavefronts", "lds_busy_pct", "lds_bank_conflict_wavefronts", "fp64_pipe_pct"];

/// How far measured DRAM bytes may be above the counted ones for a streaming kernel: 5% (issue 27's goal); below,
/// also by what the L2 may still hold when the kernel ends.
const BYTES_TOLERANCE: f64 = 0.05;

#[test]
#[ignore = "needs a GPU and its vendor profiler (ncu that may read the counters, or rocprofv3)"]
fn every_quick_point_gets_its_counters_beside_the_model() {
    let out = match std::env::var_os("SUITE_COUNTERS_OUT") {
        Some(dir) => PathBuf::from(dir),
        None => tempfile::tempdir().expect("a temporary folder").keep().join("quick-counters"),
    };
    eprintln!("results folder: {}", out.display());
    check_quick_counters(&out, true);
}

/// The same checks on a finished `suite run --counters` folder named by `SUITE_COUNTERS_RESULTS` (e.g. a committed
/// reference run), without running anything: it needs no GPU.
#[test]
#[ignore = "needs SUITE_COUNTERS_RESULTS: a folder of a finished suite run --counters"]
fn a_finished_counter_pass_holds_every_points_counters_beside_the_model() {
    let dir = std::env::var_os("SUITE_COUNTERS_RESULTS").expect("SUITE_COUNTERS_RESULTS names a results folder");
    check_quick_counters(Path::new(&dir), false);
}

/// Checks the quick preset's counter pass in `out`, running it there first when `run`.
fn check_quick_counters(out: &Path, run: bool) {
    if run {
        let run = std::process::Command::new(suite_bin())
            .args(["run", "--counters", "--out"])
            .arg(out)
            .output()
            .expect("the suite runs");
        let log = String::from_utf8_lossy(&run.stderr);
        eprintln!("{log}");
        assert!(run.status.success(), "suite run --counters failed ({}); its log is above", run.status);
    }
    let out = out.to_path_buf();
    // Dirty lines still in L2 when a kernel ends are written to DRAM after it, so a kernel's own DRAM writes may
    // fall short of the bytes it writes by up to the L2's capacity (50 MiB on an H100): the lower bound.
    let run_json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).expect("run.json")).expect("JSON");
    let l2_bytes = run_json["device"]["l2_bytes"].as_f64().unwrap_or(0.0);
    let counters_csv = out.join("counters.csv");
    assert!(
        counters_csv.exists(),
        "no counters.csv: the lines starting `counters:` above say why (a missing profiler, a profiler that may not read the counters)"
    );
    let counters: BTreeMap<(String, String), Row> = read_rows(&counters_csv)
        .unwrap()
        .into_iter()
        .map(|r| ((r["experiment"].clone(), r["key"].clone()), r))
        .collect();

    // Every verified point of every experiment has its counters, or launches no kernel.
    let mut missing = Vec::new();
    let mut bytes_off = Vec::new();
    let mut streaming_checked = 0;
    let mut occupancy_points = 0;
    let mut figures = Vec::new();
    for experiment in suite::experiments::registry::names() {
        let csv = out.join(format!("{experiment}.csv"));
        let rows = read_rows(&csv).unwrap_or_else(|e| panic!("{}: {e}", csv.display()));
        for row in rows.iter().filter(|r| r["status"] == "ok") {
            let key = (experiment.to_string(), row["key"].clone());
            let Some(c) = counters.get(&key) else {
                missing.push(format!("{experiment} {}: no row in counters.csv", row["key"]));
                continue;
            };
            if c["status"] != "ok" && c["status"] != "no_kernel" {
                missing.push(format!("{experiment} {}: {} ({})", row["key"], c["status"], c["message"]));
                continue;
            }
            figures.push(format!(
                "{experiment:<10} {:<55} kernels {:>3}  achieved {:>6}%  theoretical {:>6}% ({})  DRAM/counted {:>7}  \
                 read {:>11} write {:>11}  L2 hit {:>6}%  l2_resident {}",
                row["key"],
                c["kernels"],
                c["occupancy_achieved_pct"],
                c["occupancy_theoretical_pct"],
                c["theoretical_from"],
                c["dram_over_counted"],
                c["dram_read_bytes"],
                c["dram_write_bytes"],
                c["l2_hit_pct"],
                row.get("l2_resident").cloned().unwrap_or_default()
            ));
            let sweep = row.get("sweep").map(String::as_str).unwrap_or("");
            let streaming = STREAMING.iter().any(|(e, s)| *e == experiment && (s.is_empty() || *s == sweep));
            if streaming && row.get("l2_resident").is_some_and(|v| v == "false") && c["status"] == "ok" {
                streaming_checked += 1;
                let counted = num(c, "byte_count").unwrap_or(f64::NAN);
                let dram = num(c, "dram_read_bytes").unwrap_or(f64::NAN) + num(c, "dram_write_bytes").unwrap_or(0.0);
                let lower = (counted - l2_bytes).min(counted * (1.0 - BYTES_TOLERANCE));
                match num(c, "dram_over_counted") {
                    Some(ratio) if dram >= lower && ratio <= 1.0 + BYTES_TOLERANCE => {}
                    other => bytes_off.push(format!(
                        "{experiment} {}: DRAM read {} + written {} over counted {} = {other:?}",
                        row["key"], c["dram_read_bytes"], c["dram_write_bytes"], c["byte_count"]
                    )),
                }
            }
            // NVIDIA's flop set (matmul's points) reads the shared-memory and FP64-pipe metrics; a finished run
            // older than them (checked without `run`) has none.
            if run && experiment == "matmul" && c["platform"] == "nvidia" && c["status"] == "ok" {
                let empty: Vec<&str> = LDS_COLUMNS.iter().copied().filter(|col| num(c, col).is_none()).collect();
                if !empty.is_empty() {
                    missing.push(format!("matmul {}: {} empty ({})", row["key"], empty.join(", "), c["message"]));
                }
                figures.push(format!(
                    "{experiment:<10} {:<55} LDS wavefronts {:>12} ({:>10} from bank conflicts)  LDS busy {:>6}%  \
                     FP64 pipe {:>6}%",
                    row["key"],
                    c["lds_wavefronts"],
                    c["lds_bank_conflict_wavefronts"],
                    c["lds_busy_pct"],
                    c["fp64_pipe_pct"]
                ));
            }
            if experiment == "occupancy" && c["status"] == "ok" {
                occupancy_points += 1;
                if num(c, "occupancy_achieved_pct").is_none() || num(c, "occupancy_theoretical_pct").is_none() {
                    missing.push(format!(
                        "occupancy {}: achieved or theoretical occupancy empty ({})",
                        row["key"], c["message"]
                    ));
                }
            }
        }
    }
    eprintln!("{}", figures.join("\n"));
    assert!(missing.is_empty(), "points without their counters:\n{}", missing.join("\n"));
    assert!(streaming_checked >= 5, "only {streaming_checked} streaming points were checked");
    assert!(occupancy_points >= 20, "only {occupancy_points} occupancy points had counters");
    assert!(
        bytes_off.is_empty(),
        "streaming kernels whose DRAM bytes are more than {}% from the counted bytes:\n{}",
        BYTES_TOLERANCE * 100.0,
        bytes_off.join("\n")
    );

    // What the pass cost against the timed run: a figure to read (issue 27's goal is at most 1), not asserted, since
    // tests assert no timings.
    let pass: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("counters-pass.json")).unwrap()).unwrap();
    let (pass_s, timed_s) = (pass["pass_s"].as_f64().unwrap(), pass["timed_s"].as_f64().unwrap());
    eprintln!("counter pass {pass_s:.1} s, timed run {timed_s:.1} s: {:.2}", pass_s / timed_s);
    for plot in ["roofline-dram.png", "occupancy-group-size-achieved.png", "occupancy-group-count-achieved.png"] {
        assert!(Path::new(&out).join(plot).exists(), "{plot} was not drawn");
    }
}
