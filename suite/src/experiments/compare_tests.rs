//! `suite compare` over fixture runs of every registered experiment: the generic report (runs, joins, missing
//! points, timing methods, labels) with the comparisons the registry gives. Here, not in `report/`, because
//! `report/` knows no experiment.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::experiments::matmul::MatmulComparison;
use crate::report::compare::*;

/// The experiments as the app knows them: the registry's comparisons.
fn known() -> Known {
    super::registry::known()
}

const CTX: &str = "experiment,platform,device,arch,wave_size";
const MEAS: &str =
    "reps,launches_per_rep,timing,l2_resident,flop_count,byte_count,time_ms_median,time_ms_min,time_ms_max";

/// A run.json of this suite's schema for a device.
fn run_json(platform: &str, name: &str, arch: &str, wave: u32, cus: u32) -> String {
    serde_json::json!({
        "device": {
            "platform": platform, "ordinal": 0, "name": name, "arch": arch, "arch_full": arch,
            "wave_size": wave, "cu_count": cus, "max_items_per_cu": 2048, "max_group_size": 1024,
            "max_groups_per_cu": 32, "lds_bytes_per_cu": 65536, "lds_bytes_per_group": 65536,
            "lds_bytes_per_group_optin": 65536, "registers_per_cu": 65536, "clock_mhz": 1700,
            "memory_clock_mhz": null, "memory_bus_bits": null, "l2_bytes": null, "memory_bytes": 1u64 << 34,
            "runtime_version": "test", "driver_version": "test"
        },
        "invocations": [{
            "command": ["suite"], "date": "2026-11-23T10:00:00Z", "host": "h", "suite_version": "0.1.0",
            "git_commit": "abc123", "git_dirty": true, "slurm_job_id": null, "shard": null,
            "experiment": "matmul", "fingerprint": null, "experiments": {}, "compilers": [], "blas": "",
            "timing": {"method": "graph", "launch_gap_us": 3.0, "graph_launch_gap_us": 1.0}
        }]
    })
    .to_string()
}

/// A matmul CSV: (kernel, n, gflops) rows, all ok.
fn matmul_csv(ctx: &str, rows: &[(&str, u64, f64)]) -> String {
    let mut s = format!(
        "{CTX},kernel,tile_m,m,n,k,group_x,group_y,reference,{MEAS},gflops,max_rel_err,tolerance,status,message,key\n"
    );
    for (k, n, g) in rows {
        let _ = writeln!(
            s,
            "{ctx},{k},,{n},{n},{n},,,gpu_f64,20,8,graph,true,,,1,1,1,{g},0,1,ok,,\"{k}/m={n},n={n},k={n}\""
        );
    }
    s
}

fn occupancy_csv(ctx: &str, copy: f64, groups: &[(u32, f64, f64)]) -> String {
    let mut s = format!(
        "{CTX},sweep,config,kernel,group_size,groups,dynamic_lds_bytes,registers_per_item,elements,bytes,groups_per_cu,\
         waves_per_cu,occupancy_pct,limiter,rounds,{MEAS},gbps,max_rel_err,tolerance,status,message,key\n"
    );
    let _ = writeln!(s, "{ctx},copy,,device_copy,,,0,,64,512,,,,,,20,6,graph,false,,,1,1,1,{copy},0,0,ok,,copy/n=64");
    for (g, occ, gbps) in groups {
        let _ = writeln!(
            s,
            "{ctx},group_size,,occupancy_vector_add,{g},9,0,12,64,768,4,32,{occ},waves,1.5,20,6,graph,false,,,1,1,1,{gbps},0,0,ok,,\"group_size/g={g},n=64\""
        );
    }
    s
}

fn write_run(dir: &Path, json: Option<&str>, files: &[(&str, String)]) {
    std::fs::create_dir_all(dir).unwrap();
    if let Some(j) = json {
        std::fs::write(dir.join("run.json"), j).unwrap();
    }
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
}

/// An MI250X GCD run and an H100 run with different sweeps: matmul at 256/512 vs 512/1024, group sizes 64/96
/// vs 96/128.
pub(crate) fn two_runs(root: &Path) -> (PathBuf, PathBuf) {
    let (amd, nv) = (root.join("mi250x"), root.join("h100"));
    let actx = "matmul,amd,AMD Instinct MI250X,gfx90a,64";
    write_run(
        &amd,
        Some(&run_json("amd", "AMD Instinct MI250X", "gfx90a", 64, 110)),
        &[
            (
                "matmul.csv",
                matmul_csv(
                    actx,
                    &[
                        ("rocblas", 256, 10000.0),
                        ("tiled_m16", 256, 2000.0),
                        ("rocblas", 512, 20000.0),
                        ("tiled_m16", 512, 5000.0),
                    ],
                ),
            ),
            (
                "occupancy.csv",
                occupancy_csv(
                    "occupancy,amd,AMD Instinct MI250X,gfx90a,64",
                    1300.0,
                    &[(64, 100.0, 650.0), (96, 75.0, 520.0)],
                ),
            ),
            // A side file without experiment/key columns is not an experiment.
            ("occupancy-timeline-x.csv", "cu,group\n1,2\n".into()),
        ],
    );
    let nctx = "matmul,nvidia,NVIDIA H100 80GB HBM3,sm_90,32";
    write_run(
        &nv,
        Some(&run_json("nvidia", "NVIDIA H100 80GB HBM3", "sm_90", 32, 132)),
        &[
            (
                "matmul.csv",
                matmul_csv(
                    nctx,
                    &[
                        ("cublas", 512, 40000.0),
                        ("tiled_m16", 512, 8000.0),
                        ("cublas", 1024, 50000.0),
                        ("tiled_m16", 1024, 9000.0),
                    ],
                ),
            ),
            (
                "occupancy.csv",
                occupancy_csv(
                    "occupancy,nvidia,NVIDIA H100 80GB HBM3,sm_90,32",
                    3000.0,
                    &[(96, 98.4, 1800.0), (128, 100.0, 2400.0)],
                ),
            ),
        ],
    );
    (amd, nv)
}

#[test]
fn different_sweeps_compare_on_their_intersection_and_list_the_rest() {
    let root = tempfile::tempdir().unwrap();
    let (amd, nv) = two_runs(root.path());
    let runs = vec![read_run(&amd, 1).unwrap(), read_run(&nv, 2).unwrap()];
    assert_eq!(runs[0].tables.keys().collect::<Vec<_>>(), ["matmul", "occupancy"], "the timeline is no experiment");
    assert_eq!((runs[0].wave(), runs[1].wave()), ("wave64".to_string(), "warp32".to_string()));
    let (md, plots) = report(&runs, &known());
    assert!(md.contains("wave64 vs warp32"), "{md}");
    assert!(!md.contains("raw rate compares too"), "raw rates of two devices are not compared: {md}");
    assert!(md.contains("abc123-dirty"), "{md}");
    // matmul: the common kernel point at 512 is compared as % of each run's vendor BLAS: 25% vs 20%.
    let matmul = &md[md.find("## matmul").unwrap()..md.find("## occupancy").unwrap()];
    assert!(matmul.contains("### Points in every run (1), compared by % of the run's vendor BLAS"), "{matmul}");
    assert!(
        matmul.contains("| `tiled_m16/m=512,n=512,k=512` | 25.0 ±0.00% | 20.0 ±0.00% | 0.80 | slower |"),
        "{matmul}"
    );
    // The vendor itself: 20,000 vs 40,000 GFLOP/s, with % of each device's peak (23.9 and 66.9 TFLOP/s).
    assert!(matmul.contains("| 512 | 20,000 (84%) | 40,000 (60%) | 2.00 |"), "{matmul}");
    assert!(matmul.contains("| 256 | 10,000 (42%) | - | - |"), "{matmul}");
    // Points one run lacks are listed under the run that has them.
    assert!(
        matmul.contains("Only in run 1 (2 points): `vendor/m=256,n=256,k=256`, `tiled_m16/m=256,n=256,k=256`"),
        "{matmul}"
    );
    assert!(
        matmul.contains("Only in run 2 (2 points): `vendor/m=1024,n=1024,k=1024`, `tiled_m16/m=1024,n=1024,k=1024`"),
        "{matmul}"
    );
    // Every kernel at the largest size both runs measured: 512.
    assert!(matmul.contains("Every FP32 kernel at size 512"), "{matmul}");
    assert!(matmul.contains("| tiled_m16 | 25% | 20% |"), "{matmul}");
    // occupancy (its own tables and plots: experiments::occupancy::compare): the common group size is joined.
    let occ = &md[md.find("## occupancy").unwrap()..];
    assert!(occ.contains("`group_size/g=96,n=64` | 40.0 ±0.00% | 60.0 ±0.00% | 1.50 | faster |"), "{occ}");
    assert!(occ.contains("Only in run 1 (1 points): `group_size/g=64,n=64`"), "{occ}");
    let names: Vec<&str> = plots.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        names,
        [
            "matmul-vendor-gflops.png",
            "matmul-best-percent-of-vendor.png",
            "occupancy-theoretical-vs-group-size.png",
            "occupancy-group-size-percent-of-copy.png"
        ]
    );
    let (_, best) = &plots[1];
    assert_eq!(best.series[0].points, [(256.0, 20.0), (512.0, 25.0)]);
    assert_eq!(best.series[1].points, [(512.0, 20.0), (1024.0, 18.0)]);
    assert!(best.series.iter().any(|s| s.kind == crate::report::plot::SeriesKind::Reference && s.points[0].1 == 100.0));
}

#[test]
fn a_run_compared_with_itself_has_ratios_of_one_and_no_missing_points() {
    let root = tempfile::tempdir().unwrap();
    let (amd_dir, _) = two_runs(root.path());
    let out = root.path().join("out");
    let written = compare(&[amd_dir.clone(), amd_dir.clone()], &out, &known()).unwrap();
    let md = std::fs::read_to_string(&written.report).unwrap();
    assert!(md.contains("Run 2 / run 1 over 2 points: median 1.000, from 1.000 to 1.000."), "{md}");
    assert!(md.contains("every run is wave64"), "{md}");
    // One device: the raw rate is compared as well as the normalised one.
    assert!(
        md.contains(
            "#### Same device in every run, so the raw rate compares too: points in every run (4), compared by gflops"
        ),
        "{md}"
    );
    assert!(!md.contains("Only in run"), "{md}");
    assert!(md.contains("Every run holds the same points, all `ok`."), "{md}");
    assert_eq!(written.plots.len(), 4);
    let (_, plots) = report(&[read_run(&amd_dir, 1).unwrap(), read_run(&amd_dir, 2).unwrap()], &known());
    // Two identical runs are one line on every plot, named for both in the legend (not two lines, one hidden).
    for (file, plot) in &plots {
        let drawn = crate::report::plot::normalised(plot);
        let labels: Vec<&str> = drawn.series.iter().filter(|s| s.is_measured()).map(|s| s.label.as_str()).collect();
        assert!(
            labels.iter().any(|l| l.contains("1: Instinct MI250X, wave64 [mi250x]")
                && l.contains("2: Instinct MI250X, wave64 [mi250x]")
                && l.ends_with("(identical)")),
            "{file}: {labels:?}"
        );
        assert!(crate::report::plot::hidden_series(plot).is_empty(), "{file}");
    }
    for p in &written.plots {
        assert!(std::fs::metadata(p).unwrap().len() > 1000, "{}", p.display());
        assert!(md.contains(&format!("]({})", p.file_name().unwrap().to_string_lossy())), "{md}");
    }
}

#[test]
fn a_folder_that_is_not_a_run_is_an_error_naming_it_and_what_is_missing() {
    let root = tempfile::tempdir().unwrap();
    let (amd, _) = two_runs(root.path());
    // (folder, run.json, files, what the error says is missing)
    type Case<'a> = (&'a str, Option<&'a str>, Vec<(&'a str, String)>, &'a str);
    let cases: [Case; 5] = [
        ("nothing", None, vec![], "no run.json"),
        ("json-only", Some("{}"), vec![], "no <experiment>.csv"),
        ("bad-json", Some("{not json"), vec![("matmul.csv", "a\n".into())], "run.json is not JSON"),
        ("timeline-only", Some("{}"), vec![("occupancy-timeline-x.csv", "cu,group\n".into())], "no <experiment>.csv"),
        ("shards-only", Some("{}"), vec![("matmul.shard-0-of-2.csv", "experiment,key\n".into())], "suite merge"),
    ];
    for (name, json, files, missing) in cases {
        let dir = root.path().join(name);
        write_run(&dir, json, &files);
        let out = root.path().join(format!("out-{name}"));
        let err = compare(&[amd.clone(), dir.clone()], &out, &known()).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, Error::NotARun { .. }), "{name}: {text}");
        assert!(text.contains(&dir.display().to_string()) && text.contains(missing), "{name}: {text}");
        assert!(!out.exists(), "{name}: nothing is written when a folder is not a run");
    }
    let err = read_run(&root.path().join("absent"), 1).unwrap_err().to_string();
    assert!(err.contains("absent: not a results folder: no such folder"), "{err}");
}

#[test]
fn an_older_run_json_and_csv_are_read_leniently() {
    let root = tempfile::tempdir().unwrap();
    let old = root.path().join("old");
    // run.json from before git_dirty, experiment, fingerprint and timing were recorded; CSV without timing.
    let json = serde_json::json!({
        "device": {"platform": "nvidia", "name": "NVIDIA H100 80GB HBM3", "arch": "sm_90", "wave_size": 32, "cu_count": 132},
        "invocations": [{"git_commit": "2283546", "date": "2026-11-22T05:18:49Z", "experiments": {"matmul": {}, "reps": 20}}]
    });
    let csv = format!(
        "{CTX},kernel,tile_m,m,n,k,group_x,group_y,reference,reps,time_ms_median,time_ms_min,time_ms_max,gflops,\
         max_rel_err,tolerance,status,message,key\n\
         matmul,nvidia,NVIDIA H100 80GB HBM3,sm_90,32,cublas,,256,256,256,,,host,20,1,1,1,1631,0,1,ok,,\"cublas/m=256,n=256,k=256\"\n\
         matmul,nvidia,NVIDIA H100 80GB HBM3,sm_90,32,naive,,256,256,256,16,16,cublas,20,1,1,1,88,0,1,ok,,\"naive/m=256,n=256,k=256\"\n"
    );
    write_run(&old, Some(&json.to_string()), &[("matmul.csv", csv)]);
    let run = read_run(&old, 1).unwrap();
    assert_eq!(run.invocations[0].experiment, "matmul");
    assert_eq!(run.invocations[0].commit, "2283546");
    assert!(run.notes.iter().any(|n| n.contains("read leniently")), "{:?}", run.notes);
    assert!(run.notes.iter().any(|n| n.contains("before batched timing")), "{:?}", run.notes);
    assert!(run.timing("matmul").contains("unbatched"), "{}", run.timing("matmul"));
    let values = MatmulComparison.values("matmul", &run).unwrap();
    assert_eq!(values.by_key.len(), 1);
    assert!((values.by_key["naive/m=256,n=256,k=256"] - 88.0 / 1631.0 * 100.0).abs() < 1e-9);
    assert_eq!(fp32_peak(&run.device).map(|p| p.fp32_vector_tflops), Some(66.9));
    assert_eq!(run.invocations[0].placement, "not recorded");
}

#[test]
fn tables_derived_from_the_rows_are_not_read_as_experiments() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("run");
    let ctx = "matmul,nvidia,NVIDIA H200,sm_90,32";
    let matmul = matmul_csv(ctx, &[("naive", 1024, 100.0), ("cublas", 1024, 1000.0)]);
    // The roofline as `suite run` writes it (one row per kernel point, with the point's experiment and key), and a
    // derived table of one experiment written under another name.
    let roofline = "experiment,family,key,flop_count,byte_count,intensity_flop_per_byte,time_ms_median,gflops\n\
                    matmul,naive,\"naive/m=1024,n=1024,k=1024\",2147483648,12582912,170.7,21.5,100.0\n";
    let derived = "experiment,key,ratio\nmatmul,naive,0.1\n";
    let files = [("matmul.csv", matmul), ("roofline.csv", roofline.into()), ("matmul_ratios.csv", derived.into())];
    write_run(&dir, Some(&run_json("nvidia", "NVIDIA H200", "sm_90", 32, 132)), &files);
    let run = read_run(&dir, 1).unwrap();
    assert_eq!(run.tables.keys().collect::<Vec<_>>(), ["matmul"]);
    let out = root.path().join("out");
    compare(&[dir.clone(), dir], &out, &known()).unwrap();
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(!report.contains("## roofline") && !report.contains("| roofline |"), "{report}");
    assert!(!report.contains("matmul_ratios"), "{report}");
}

#[test]
fn the_report_says_where_each_process_ran() {
    let root = tempfile::tempdir().unwrap();
    let (a, _) = two_runs(root.path());
    // Run 2: two shards of one Slurm job on two nodes of LUMI's standard-g, one GCD and 7 cores each.
    let b = root.path().join("lumi");
    let mut json: serde_json::Value = serde_json::from_str(&run_json("amd", "", "gfx90a", 64, 110)).unwrap();
    let first = json["invocations"][0].clone();
    let shard = |node: &str, cpus: &str, gcd: &str| {
        let mut inv = first.clone();
        inv["slurm_job_id"] = "4242".into();
        inv["placement"] = serde_json::json!({
            "cpus_allowed": cpus, "gpu_variables": {"ROCR_VISIBLE_DEVICES": gcd},
            "slurm_partition": "standard-g", "slurm_node": node, "slurm_task": format!("{gcd}/{gcd}")
        });
        inv
    };
    json["invocations"] = serde_json::json!([shard("nid1", "49-55", "0"), shard("nid2", "57-63", "1")]);
    let csv = matmul_csv("matmul,amd,,gfx90a,64", &[("naive", 1024, 100.0), ("rocblas", 1024, 1000.0)]);
    write_run(&b, Some(&json.to_string()), &[("matmul.csv", csv)]);
    let runs = [read_run(&a, 1).unwrap(), read_run(&b, 2).unwrap()];
    let (md, _) = report(&runs, &known());
    let table = &md[md.find("Where each run ran").unwrap()..];
    assert!(
        table.contains(
            "| 2 | h | Slurm job 4242: CPUs 49-55; ROCR_VISIBLE_DEVICES=0; standard-g on nid1, task 0/0 | matmul |"
        ),
        "{table}"
    );
    assert!(table.contains("standard-g on nid2, task 1/1 | matmul |"), "{table}");
    assert!(table.contains("| 1 | h | not recorded | matmul |"), "{table}");
}

#[test]
fn without_its_reference_an_experiment_is_compared_by_the_raw_metric_and_says_why() {
    let root = tempfile::tempdir().unwrap();
    let (a, b) = (root.path().join("a"), root.path().join("b"));
    let smoke = |gbps: f64| {
        format!(
            "{CTX},kernel,n,group_size,bytes,{MEAS},gbps,max_rel_err,tolerance,status,message,key\n\
             smoke,amd,X,gfx90a,64,triad,1024,256,12288,20,9,graph,true,,,1,1,1,{gbps},0,1,ok,,\"triad/n=1024,group=256\"\n"
        )
    };
    write_run(&a, Some("{}"), &[("smoke.csv", smoke(1000.0))]);
    write_run(&b, Some("{}"), &[("smoke.csv", smoke(1500.0))]);
    let runs = vec![read_run(&a, 1).unwrap(), read_run(&b, 2).unwrap()];
    // The device comes from the CSV rows when run.json lacks it.
    assert_eq!((runs[0].device.arch.as_str(), runs[0].device.wave_size), ("gfx90a", Some(64)));
    assert_eq!(fp32_peak(&runs[0].device), None);
    let (md, plots) = report(&runs, &known());
    assert!(md.contains("Not normalised (run 1 has no copy reference"), "{md}");
    assert!(md.contains("compared by gbps"), "{md}");
    assert!(md.contains("| `triad/n=1024,group=256` | 1,000 ±0.00% | 1,500 ±0.00% | 1.50 | faster |"), "{md}");
    assert!(md.contains("FP32 peak unknown for run 1, run 2"), "{md}");
    assert!(plots.is_empty(), "no copy reference, no % plot");
}

#[test]
fn an_experiment_without_a_comparison_of_its_own_compares_its_metric_column() {
    let root = tempfile::tempdir().unwrap();
    let (a, b) = (root.path().join("a"), root.path().join("b"));
    let csv = |speedup: f64| {
        format!(
            "{CTX},variant,{MEAS},speedup,max_rel_err,tolerance,status,message,key\n\
             future,nvidia,X,sm_90,32,pt,20,1,host,,,,1,1,1,{speedup},0,0,ok,,pt/1\n"
        )
    };
    write_run(&a, Some("{}"), &[("future.csv", csv(2.0))]);
    write_run(&b, Some("{}"), &[("future.csv", csv(3.0))]);
    let runs = vec![read_run(&a, 1).unwrap(), read_run(&b, 2).unwrap()];
    assert_eq!(runs[0].tables["future"].metric_column(), Some("speedup"));
    let (md, _) = report(&runs, &known());
    assert!(md.contains("## future"), "{md}");
    assert!(md.contains("| `pt/1` | 2.00 ±0.00% | 3.00 ±0.00% | 1.50 | faster |"), "{md}");
    assert!(md.contains("host clock around sequences (1 rows)"), "{md}");
}

/// The same GPU through the CUDA path and through the AMD path over the HIP-over-CUDA test runtime, one matmul
/// point of the second timed on the stream.
fn cuda_and_test_runtime_runs(root: &Path) -> (PathBuf, PathBuf) {
    let (cuda, hip) = (root.join("cuda"), root.join("hip-over-cuda"));
    let name = "NVIDIA H200";
    write_run(
        &cuda,
        Some(&run_json("nvidia", name, "sm_90", 32, 132)),
        &[(
            "matmul.csv",
            matmul_csv(
                "matmul,nvidia,NVIDIA H200,sm_90,32",
                &[("cublas", 512, 40000.0), ("tiled_m16", 512, 8000.0), ("tiled_m16", 1024, 9000.0)],
            ),
        )],
    );
    let runtime = "HIP over CUDA test runtime /x/lib/libhip-over-cuda-test-runtime.so: the HIP 6.3 API implemented \
                   over the CUDA driver API, on NVIDIA hardware (not an AMD GPU); CUDA driver /usr/lib/libcuda.so";
    let mut json: serde_json::Value = serde_json::from_str(&run_json("amd", name, "sm_90", 32, 132)).unwrap();
    json["device"]["runtime_version"] = runtime.into();
    let csv = matmul_csv(
        "matmul,amd,NVIDIA H200,sm_90,32",
        &[("rocblas", 512, 40400.0), ("tiled_m16", 512, 7900.0), ("tiled_m16", 1024, 9100.0)],
    )
    .replace(",graph,true,,,1,1,1,9100,", ",stream,true,,,1,1,1,9100,");
    write_run(&hip, Some(&json.to_string()), &[("matmul.csv", csv)]);
    (cuda, hip)
}

#[test]
fn a_run_over_the_test_runtime_is_named_as_such_and_never_as_amd_hardware() {
    let root = tempfile::tempdir().unwrap();
    let (cuda, hip) = cuda_and_test_runtime_runs(root.path());
    let runs = [read_run(&cuda, 1).unwrap(), read_run(&hip, 2).unwrap()];
    assert!(runs[1].device.test_runtime.is_some() && !runs[1].on_amd_hardware());
    assert!(runs[0].device.test_runtime.is_none());
    assert_eq!((runs[0].wave(), runs[1].wave()), ("warp32".to_string(), "warp32".to_string()));
    assert!(runs[1].label().contains("warp32, HIP over CUDA ["), "{}", runs[1].label());
    assert!(runs[1].over_test_runtime().contains("AMD path over the HIP over CUDA test runtime"));
    assert_eq!(runs[0].over_test_runtime(), "");
    let (md, _) = report(&runs, &known());
    assert!(
        md.contains("Run 2 ran the AMD code path (HIP, rocBLAS) on an NVIDIA GPU over the HIP over CUDA test runtime, not on AMD hardware: HIP over CUDA test runtime /x/lib/libhip-over-cuda-test-runtime.so"),
        "{md}"
    );
    assert!(!md.contains("MFMA") && !md.contains("matrix cores"), "no AMD hardware note for NVIDIA figures:\n{md}");
    assert!(md.contains("batches as HIP graphs"), "{md}");
    // Same GPU, so the raw rates compare too, vendor BLAS included (cublas and rocblas join on one key).
    assert!(md.contains("Same device in every run, so the raw rate compares too"), "{md}");
    // A real AMD run stays AMD hardware.
    let (amd, _) = two_runs(root.path());
    assert!(read_run(&amd, 1).unwrap().on_amd_hardware());
}

#[test]
fn points_timed_by_different_methods_are_flagged() {
    let root = tempfile::tempdir().unwrap();
    let (cuda, hip) = cuda_and_test_runtime_runs(root.path());
    let runs = [read_run(&cuda, 1).unwrap(), read_run(&hip, 2).unwrap()];
    let refs: Vec<&Run> = runs.iter().collect();
    let experiments = known();
    let comparison = comparison_for(&experiments, "matmul");
    let flagged = timing_mismatches("matmul", &refs, comparison);
    let key = "tiled_m16/m=1024,n=1024,k=1024".to_string();
    assert_eq!(flagged, [(key.clone(), vec!["graph".to_string(), "stream".to_string()])]);
    let (md, _) = report(&runs, &known());
    assert!(
        md.contains(&format!("**Timed differently** in the runs (1 points, each run's `timing` in run order): their figures and ratios compare timing methods as well as devices: `{key}` (graph / stream).")),
        "{md}"
    );
    assert!(md.contains(&format!("| `{key}` (timed differently) |")), "{md}");
    // The same run twice: nothing differs, nothing is flagged.
    let same = [read_run(&cuda, 1).unwrap(), read_run(&cuda, 2).unwrap()];
    assert!(!report(&same, &known()).0.contains("Timed differently"));
}

#[test]
fn numbers_read_as_in_the_readme() {
    let cases = [
        (51686.4, "51,686"),
        (5345.0, "5,345"),
        (100.0, "100"),
        (99.94, "99.9"),
        (1.5, "1.50"),
        (0.0123, "0.012"),
        (-1234.0, "-1,234"),
        (f64::NAN, "-"),
    ];
    for (v, s) in cases {
        assert_eq!(fmt_num(v), s, "{v}");
    }
}

/// The registry's roofline roles place a run as each experiment says: matmul kernels by family without their
/// shape, occupancy's driver copy as the memory ceiling, PT's sequences off the roofline with the reason.
#[test]
fn the_registry_places_each_experiment_on_the_roofline() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("run");
    let (f, b) = (2.0 * 4096f64.powi(3), 12.0 * 4096f64.powi(2));
    let matmul = format!(
        "{CTX},kernel,m,{MEAS},gflops,status,key\n\
         matmul,nvidia,NVIDIA H200,sm_90,32,double_buffer_64x128x8_t128,4096,20,8,graph,true,{f},{b},3,3,3,45800,ok,k1\n"
    );
    let occupancy = format!(
        "{CTX},sweep,{MEAS},gbps,status,key\n\
         occupancy,nvidia,NVIDIA H200,sm_90,32,copy,20,6,graph,false,0,1000,1,1,1,4100,ok,copy/n=1\n"
    );
    let pt = format!("{CTX},{MEAS},status,key\npt,nvidia,NVIDIA H200,sm_90,32,20,1,graph,true,1,1,1,1,1,ok,x\n");
    let files = [("matmul.csv", matmul), ("occupancy.csv", occupancy), ("pt.csv", pt)];
    write_run(&dir, Some(&run_json("nvidia", "NVIDIA H200", "sm_90", 32, 132)), &files);
    let r = crate::report::roofline::of_run(&dir, &super::registry::roofline_roles()).unwrap().expect("a roofline");
    let families: Vec<(&str, &str)> = r.points.iter().map(|p| (p.experiment.as_str(), p.family.as_str())).collect();
    assert_eq!(families, [("matmul", "double_buffer")]);
    assert_eq!(r.roof.memory_gbps, 4100.0, "{}", r.roof.memory_source);
    assert!(r.roof.memory_source.contains("occupancy copy/n=1"), "{}", r.roof.memory_source);
    assert!(r.left_out.iter().any(|l| l.starts_with("pt: persistent threads")), "{:?}", r.left_out);
}

/// A matmul CSV whose rows carry their repetitions' spread: (kernel, gflops, relative half-range of the time).
fn matmul_with_spreads(ctx: &str, rows: &[(&str, f64, f64)]) -> String {
    let mut s = format!(
        "{CTX},kernel,tile_m,m,n,k,group_x,group_y,reference,{MEAS},gflops,max_rel_err,tolerance,status,message,key\n"
    );
    for (k, g, spread) in rows {
        // A median time of 1 ms and its fastest and slowest repetition `spread` either side.
        let (min, max) = (1.0 - spread, 1.0 + spread);
        let _ = writeln!(
            s,
            "{ctx},{k},,512,512,512,,,gpu_f64,20,8,graph,true,,,1,{min},{max},{g},0,1,ok,,\"{k}/m=512,n=512,k=512\""
        );
    }
    s
}

/// The classes follow from both runs' spreads on fixture runs: 10% apart with 1% spreads is faster or slower, 0.5%
/// apart within 0.4% spreads the same, 3% apart within 5% spreads noisy; the counts head the section, each point of
/// the table carries both spreads and its class, and a kernel only one run ran is said before the figures.
#[test]
fn compare_classes_each_point_from_both_runs_spreads() {
    let root = tempfile::tempdir().unwrap();
    let ctx = "matmul,nvidia,NVIDIA H100 80GB HBM3,sm_90,32";
    let json = run_json("nvidia", "NVIDIA H100 80GB HBM3", "sm_90", 32, 132);
    let (one, two) = (root.path().join("one"), root.path().join("two"));
    let base = [
        ("cublas", 10000.0, 0.001),
        ("faster", 5000.0, 0.01),
        ("slower", 5000.0, 0.01),
        ("same", 5000.0, 0.004),
        ("noisy", 5000.0, 0.05),
        ("only_in_one", 1000.0, 0.01),
    ];
    let changed = [
        ("cublas", 10000.0, 0.001),
        ("faster", 5500.0, 0.01),
        ("slower", 4500.0, 0.01),
        ("same", 5025.0, 0.004),
        ("noisy", 5150.0, 0.05),
    ];
    write_run(&one, Some(&json), &[("matmul.csv", matmul_with_spreads(ctx, &base))]);
    write_run(&two, Some(&json), &[("matmul.csv", matmul_with_spreads(ctx, &changed))]);
    let runs = [read_run(&one, 1).unwrap(), read_run(&two, 2).unwrap()];
    let (md, _) = report(&runs, &known());
    let section = &md[md.find("## matmul").unwrap()..];
    let counts = section.find("run 2 against run 1: 1 faster, 1 slower, 1 same, 1 noisy (of 4 points both hold)");
    let first_table = section.find("| size |").unwrap();
    assert!(counts.is_some_and(|c| c < first_table), "the counts do not head the section:\n{section}");
    let kernels = section.find("**The runs ran different kernels** (run 1 6, run 2 5): run 2 lacks `only_in_one` (1)");
    assert!(kernels.is_some_and(|k| k < first_table), "no line on the kernel sets before the figures:\n{section}");
    for line in [
        "| `faster/m=512,n=512,k=512` | 50.0 ±1.0% | 55.0 ±1.0% | 1.10 | faster |",
        "| `slower/m=512,n=512,k=512` | 50.0 ±1.0% | 45.0 ±1.0% | 0.90 | slower |",
        "| `noisy/m=512,n=512,k=512` | 50.0 ±5.0% | 51.5 ±5.0% | 1.03 | noisy |",
        "| `same/m=512,n=512,k=512` | 50.0 ±0.4% | 50.2 ±0.4% | 1.00 | same |",
        "Faster in run 2 than in run 1 beyond both spreads (1 points): `faster/m=512,n=512,k=512`",
    ] {
        assert!(section.contains(line), "missing {line:?} in\n{section}");
    }
}

/// Where a value is a time (pt's sequences, occupancy's residency probe), lower is faster.
#[test]
fn a_shorter_time_is_faster() {
    let root = tempfile::tempdir().unwrap();
    let (one, two) = (root.path().join("one"), root.path().join("two"));
    let json = run_json("nvidia", "NVIDIA H100 80GB HBM3", "sm_90", 32, 132);
    let csv = |t: f64| {
        format!(
            "{CTX},use_case,variant,flavour,items,fmas,levels,steps,clock,{MEAS},gitems_per_s,max_rel_err,tolerance,\
             status,message,key\npt,nvidia,NVIDIA H100 80GB HBM3,sm_90,32,reduce,pt,,1024,0,0,0,device,20,1,graph,\
             false,,,{t},{},{},1,0,0,ok,,reduce/pt/n=1024/device\n",
            t * 0.99,
            t * 1.01
        )
    };
    write_run(&one, Some(&json), &[("pt.csv", csv(2.0))]);
    write_run(&two, Some(&json), &[("pt.csv", csv(1.0))]);
    let runs = [read_run(&one, 1).unwrap(), read_run(&two, 2).unwrap()];
    let (md, _) = report(&runs, &known());
    assert!(md.contains("run 2 against run 1: 1 faster, 0 slower, 0 same, 0 noisy"), "{md}");
}
