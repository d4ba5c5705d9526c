//! The command line as a user meets it: exit codes and messages.

mod common;

use common::suite_without_gpu;
use predicates::prelude::*;
use suite::device::Platform;

#[test]
fn info_without_a_gpu_says_why_per_platform_and_exits_non_zero() {
    let cache = tempfile::tempdir().unwrap();
    suite_without_gpu(cache.path())
        .arg("info")
        .assert()
        .failure()
        .stdout(predicate::str::contains("AMD (HIP)"))
        .stdout(predicate::str::contains("NVIDIA (CUDA)"))
        .stdout(predicate::str::contains("no GPU visible on any platform"))
        // Each platform gives a reason: its runtime is missing, or it is loaded and sees no GPU.
        .stdout(predicate::str::contains("no HIP runtime found").or(predicate::str::contains("no AMD GPU visible")))
        .stdout(predicate::str::contains("no CUDA runtime found").or(predicate::str::contains("no NVIDIA GPU visible")))
        .stderr(predicate::str::contains("panicked").not());
}

#[test]
fn info_with_libamdhip64_and_no_gpu_names_the_runtime_version_and_the_error() {
    let cache = tempfile::tempdir().unwrap();
    common::require_hip_runtime();
    suite_without_gpu(cache.path()).args(["--platform", "amd", "info"]).assert().failure().stdout(
        predicate::str::is_match(r"HIP runtime \d+\.\d+\S* loaded: no AMD GPU visible \(hipErrorNoDevice\)").unwrap(),
    );
}

#[test]
fn run_without_a_gpu_fails_with_every_platforms_reason() {
    let cache = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    suite_without_gpu(cache.path())
        .args(["run", "smoke", "--out"])
        .arg(out.path())
        .assert()
        .failure()
        .stderr(predicate::str::contains("error: no GPU found"))
        .stderr(predicate::str::contains("amd:"))
        .stderr(predicate::str::contains("nvidia:"));
    // Nothing is written when no device could be opened.
    assert!(std::fs::read_dir(out.path()).unwrap().next().is_none());
}

#[test]
fn bad_values_name_the_flag() {
    let cache = tempfile::tempdir().unwrap();
    suite_without_gpu(cache.path())
        .args(["run", "smoke", "--sizes", "12,abc"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("'abc' for '--sizes <SIZES>'").and(predicate::str::contains("is not a size")));
    suite_without_gpu(cache.path())
        .args(["run", "smoke", "--sizes", "0"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("--sizes").and(predicate::str::contains("sizes must be at least 1")));
    suite_without_gpu(cache.path())
        .args(["kernels", "build", "--arch", "gfx90a,cuda"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("`cuda` is not a GPU architecture"));
    suite_without_gpu(cache.path())
        .args(["kernels", "build", "--arch", "gfx90a", "--sources", "nosuch"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("nosuch").and(predicate::str::contains("smoke")));
    suite_without_gpu(cache.path()).args(["run", "smoke", "--shard", "8/8"]).assert().failure().code(2);
    // --full is every experiment's complete sweep: naming one with it is a mistake, said before any GPU is opened.
    suite_without_gpu(cache.path())
        .args(["run", "--full", "smoke"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("--full runs every experiment's complete sweep"))
        .stderr(predicate::str::contains("no GPU").not());
    suite_without_gpu(cache.path()).args(["frobnicate"]).assert().failure().code(2);
}

#[test]
fn counters_refuse_shards_and_the_dry_run_says_where_the_profiler_is() {
    let cache = tempfile::tempdir().unwrap();
    // One counters.csv per folder: refused with shards, before any GPU is opened.
    suite_without_gpu(cache.path())
        .args(["run", "smoke", "--counters", "--shard", "0/2"])
        .assert()
        .failure()
        .code(2)
        .stderr(predicate::str::contains("--counters profiles an unsharded run"))
        .stderr(predicate::str::contains("no GPU").not());
    // The plan says whether the profiler is there: the override names a file that is not.
    let tools = tempfile::tempdir().unwrap();
    let absent = tools.path().join("ncu");
    suite_without_gpu(cache.path())
        .args(["run", "smoke", "--dry-run", "--part", "h100-sxm", "--counters"])
        .env("SUITE_NCU", &absent)
        .assert()
        .success()
        .stdout(predicate::str::contains(format!(
            "counters: no Nsight Compute (ncu) found (tried: {})",
            absent.display()
        )))
        .stdout(predicate::str::contains("the run goes on without counters"));
    std::fs::write(&absent, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&absent, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    suite_without_gpu(cache.path())
        .args(["run", "smoke", "--dry-run", "--part", "mi250x-gcd", "--counters"])
        .env("SUITE_ROCPROFV3", &absent)
        .assert()
        .success()
        .stdout(predicate::str::contains(format!("counters: rocprofv3 at {} would profile", absent.display())));
    // The flag is in the help; the child's is not.
    suite_without_gpu(cache.path())
        .args(["run", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("--counters"))
        .stdout(predicate::str::contains("--counters-child").not());
}

/// Issue 36: a dry run plans for the platform it is given (`--platform nvidia` without `--part` used to plan for an
/// MI250X GCD), says in its first line when it assumed the part, and refuses a part of another platform.
#[test]
fn a_dry_run_plans_for_the_platform_it_is_given_and_says_when_it_assumed_the_part() {
    let cache = tempfile::tempdir().unwrap();
    let assumed = "assumed, as no --part was given";
    suite_without_gpu(cache.path())
        .args(["run", "smoke", "--dry-run"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with("plan: smoke, 1 experiment on MI250X GCD"))
        .stdout(predicate::str::contains(assumed));
    suite_without_gpu(cache.path())
        .args(["run", "smoke", "--dry-run", "--part", "mi210"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with("plan: smoke, 1 experiment on MI210"))
        .stdout(predicate::str::contains(assumed).not());
    suite_without_gpu(cache.path())
        .args(["--platform", "amd", "run", "smoke", "--dry-run", "--part", "h200"])
        .assert()
        .failure()
        .code(2)
        .stderr(predicate::str::contains("--part h200 is a part for --platform nvidia, not amd"))
        .stderr(predicate::str::contains("mi250x-gcd"));
    common::require_compiler(Platform::Nvidia);
    suite_without_gpu(cache.path())
        .args(["--platform", "nvidia", "run", "smoke", "--dry-run"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with("plan: smoke, 1 experiment on H100 SXM5"))
        .stdout(predicate::str::contains("sm_90, wave 32"))
        .stdout(predicate::str::contains(assumed));
}

#[test]
fn kernels_build_and_inspect_for_gfx90a_without_a_gpu() {
    common::require_compiler(Platform::Amd);
    let cache = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    suite_without_gpu(cache.path())
        .args(["kernels", "build", "--arch", "gfx90a", "--sources", "smoke", "--out"])
        .arg(out.path())
        .assert()
        .success();
    // The file is a gfx90a code object holding the smoke kernels.
    let built = std::fs::read(out.path().join("smoke.gfx90a.hsaco")).expect("the built object");
    let gfx90a = suite::device::Arch::parse("gfx90a").unwrap();
    let info = suite::code_objects::check_arch(&built, &gfx90a).unwrap_or_else(|e| panic!("{e}"));
    let mut names: Vec<&str> = info.amd_kernels.iter().map(|k| k.name.as_str()).collect();
    names.sort();
    assert_eq!(names, ["smoke_spin", "smoke_triad"]);
    // Inspect reads the prebuilt object statically: no GPU, no compiler run.
    suite_without_gpu(cache.path())
        .args(["--kernels-dir"])
        .arg(out.path())
        .args(["kernels", "inspect", "--arch", "gfx90a", "--sources", "smoke"])
        .assert()
        .success()
        .stdout(predicate::str::contains("smoke_triad"))
        .stdout(predicate::str::contains("smoke_spin"))
        .stdout(predicate::str::contains("vgpr"))
        // Prebuilt objects do not record their compiler: the header says so rather than naming one.
        .stdout(predicate::str::starts_with("# gfx90a, compiler: unknown: prebuilt objects from "))
        // Occupancy at the kernel's largest group (1024 items without launch bounds = 16 waves of the 32 slots).
        .stdout(predicate::str::contains("occ_group groups_per_cu occupancy_% limiter"))
        .stdout(predicate::str::is_match(r"smoke_triad .* 1024 +2 +100\.0 waves\n").unwrap())
        // gfx90a's unified register file: the vgpr column counts the AGPRs too, and says so.
        .stdout(predicate::str::contains("on gfx90a the AGPRs share the VGPR file: vgpr is VGPRs and AGPRs together"));
}

/// The static comparison writes its tables and plots with no GPU; an NVIDIA target reads cuobjdump.
#[test]
fn kernels_compare_writes_tables_and_plots_without_a_gpu() {
    common::require_compiler(Platform::Amd);
    common::require_compiler(Platform::Nvidia);
    let cache = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    suite_without_gpu(cache.path())
        .args(["kernels", "compare", "--arch", "gfx90a,sm_90", "--sources", "smoke", "--out"])
        .arg(out.path())
        .assert()
        .success()
        .stdout(predicate::str::contains("kernels.md"));
    let csv = std::fs::read_to_string(out.path().join("kernels.csv")).unwrap();
    assert!(csv.starts_with("target,wave_size,source,kernel,group_size,registers"), "{csv}");
    assert!(csv.lines().next().unwrap().contains(",compiler,"), "{csv}");
    // Every row names the compiler and version that built it: register counts depend on it.
    for (target, compiler) in
        [("gfx90a,64,smoke,smoke_triad,1024", "\"hipcc 5."), ("sm_90,32,smoke,smoke_triad,1024", "\"nvcc 1")]
    {
        assert!(csv.lines().any(|l| l.starts_with(target) && l.contains(compiler)), "{target} {compiler} in\n{csv}");
    }
    let md = std::fs::read_to_string(out.path().join("kernels.md")).unwrap();
    assert!(md.contains("Static") && md.contains("| smoke | smoke_triad | 1024 | sm_90 | nvcc 1"), "{md}");
    for png in ["occupancy-items-vs-group-size.png", "occupancy-waves-vs-group-size.png"] {
        let (w, h, _) = decode_png(&out.path().join(png));
        assert!(w > 0 && h > 0, "{png}");
    }
}

/// An RDNA architecture whose device library the compiler cannot find (clang says "cannot find ROCm device library",
/// as Debian's HIP 5.2 does for gfx1100; here forced by an empty DEVICE_LIB_PATH) gets the way to make one.
#[test]
fn kernels_compare_of_rdna_without_its_device_library_says_how_to_make_one() {
    common::require_compiler(Platform::Amd);
    let cache = tempfile::tempdir().unwrap();
    let (out, no_libraries) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    suite_without_gpu(cache.path())
        .env("DEVICE_LIB_PATH", no_libraries.path())
        .args(["kernels", "compare", "--arch", "gfx1100", "--sources", "smoke", "--out"])
        .arg(out.path())
        .assert()
        .failure()
        .stderr(predicate::str::contains("cannot find ROCm device library"))
        .stderr(predicate::str::contains("make one with `scripts/rdna-device-libs.sh DIR`"));
}

/// zig's clang as a second AMD compiler: inspect names it and its version; compare puts both compilers' rows side
/// by side; a zig asked for with prebuilt objects or for an NVIDIA architecture is refused with the flag named.
#[test]
fn kernels_inspect_and_compare_with_zigs_clang() {
    common::require_compiler(Platform::Amd);
    common::require_zig();
    let cache = tempfile::tempdir().unwrap();
    suite_without_gpu(cache.path())
        .args(["kernels", "inspect", "--arch", "gfx90a", "--compiler", "zig", "--sources", "smoke"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with("# gfx90a, compiler: zig-clang 0.13.0 (clang 18.1.6)\n"))
        .stdout(predicate::str::contains("smoke_triad"));
    let out = tempfile::tempdir().unwrap();
    suite_without_gpu(cache.path())
        .args(["kernels", "compare", "--arch", "gfx90a", "--compiler", "hipcc,zig", "--sources", "smoke", "--out"])
        .arg(out.path())
        .assert()
        .success();
    let md = std::fs::read_to_string(out.path().join("kernels.md")).unwrap();
    for compiler in ["| gfx90a | hipcc 5.", "| gfx90a | zig-clang 0.13.0 (clang 18.1.6) |"] {
        assert!(md.contains(&format!("| smoke | smoke_triad | 1024 {compiler}")), "{compiler} in\n{md}");
    }
    assert!(md.contains("# amd: zig-clang 0.13.0 (clang 18.1.6) ("), "{md}");
    suite_without_gpu(cache.path())
        .args(["--kernels-dir", "/nonexistent", "kernels", "inspect", "--arch", "gfx90a", "--compiler", "zig"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("--compiler zig compiles the kernels, --kernels-dir reads prebuilt ones"));
    suite_without_gpu(cache.path())
        .args(["kernels", "inspect", "--arch", "sm_90", "--compiler", "zig"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("--compiler zig builds AMD code objects; sm_90 is NVIDIA's"));
}

#[test]
fn occupancy_calc_prints_the_occupancy_and_what_each_resource_allows() {
    let cache = tempfile::tempdir().unwrap();
    // 256 items = 4 waves; 64 VGPRs allow 8 waves per SIMD (8 groups); 16 KiB of the 64 KiB LDS allow 4 groups.
    suite_without_gpu(cache.path())
        .args(["occupancy", "calc", "--arch", "gfx90a", "--wg", "256", "--vgprs", "64", "--lds", "16384"])
        .assert()
        .success()
        .stdout(predicate::str::contains("groups_per_cu  4\n"))
        .stdout(predicate::str::contains("waves_per_cu   16 of 32\n"))
        .stdout(predicate::str::contains("occupancy      50.0%\n"))
        .stdout(predicate::str::contains("limiter        lds\n"))
        .stdout(predicate::str::is_match(r"\nwaves +8\nregisters +8\nsgprs +-\nlds +4  <- binds\n").unwrap())
        .stdout(predicate::str::is_match(r"\ngroup_slots +-\nbarriers +16\n").unwrap());
    // (arguments, expected lines): NVIDIA's spelling, AGPRs in the unified file, SGPRs, RDNA3 wave64.
    let cases: [(&[&str], &[&str]); 4] = [
        (&["--arch", "sm_90", "--wg", "256", "--regs", "64"], &["groups_per_cu  4\n", "limiter        registers\n"]),
        (&["--arch", "gfx942", "--wg", "64", "--vgprs", "60", "--agprs", "8"], &["groups_per_cu  28\n"]),
        (&["--arch", "gfx90a", "--wg", "64", "--vgprs", "16", "--sgprs", "102"], &["limiter        sgprs\n"]),
        (
            &["--arch", "gfx1100", "--wave", "64", "--wg", "256", "--vgprs", "49"],
            &["profile        gfx1100-wave64", "groups_per_cu  6\n", "occupancy      75.0%\n"],
        ),
    ];
    for (args, lines) in cases {
        let mut assert = suite_without_gpu(cache.path()).args(["occupancy", "calc"]).args(args).assert().success();
        for line in lines {
            assert = assert.stdout(predicate::str::contains(*line));
        }
    }
}

#[test]
fn occupancy_calc_names_the_flag_to_fix() {
    let cache = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 11] = [
        (
            &["--arch", "gfx906", "--wg", "64", "--vgprs", "8"],
            "--arch: no occupancy profile for `gfx906`; known: gfx90a",
        ),
        (&["--arch", "gfx90a", "--wg", "0", "--vgprs", "8"], "--wg: a group needs at least 1 item"),
        (&["--arch", "gfx90a", "--wg", "2048", "--vgprs", "8"], "--wg: 2048 items per group is 1024 above gfx90a's"),
        (&["--arch", "gfx90a", "--wg", "64", "--vgprs", "600"], "--vgprs: 600 registers per item is 88 above"),
        (&["--arch", "sm_90", "--wg", "64", "--regs", "300"], "--regs: 300 registers per item is 45 above sm_90's"),
        (&["--arch", "gfx90a", "--wg", "64", "--vgprs", "8", "--lds", "70000"], "--lds: 70000 LDS bytes per group"),
        (&["--arch", "gfx90a", "--wave", "32", "--wg", "64", "--vgprs", "8"], "--wave: gfx90a has no wave32 profile"),
        (&["--arch", "gfx1100", "--wg", "64", "--vgprs", "8", "--agprs", "4"], "--agprs: gfx1100-wave32 has no AGPRs"),
        (&["--arch", "sm_80", "--wg", "64", "--regs", "8", "--sgprs", "4"], "--sgprs: sm_80 has no SGPRs"),
        (&["--arch", "gfx90a", "--wg", "1024", "--vgprs", "129"], "--vgprs: not even one group fits"),
        (&["--arch", "sm_90", "--wg", "1024", "--regs", "65"], "at most 64 registers per item fit"),
    ];
    // Values it cannot use are bad arguments: status 2, as clap's own.
    for (args, message) in cases {
        suite_without_gpu(cache.path())
            .args(["occupancy", "calc"])
            .args(args)
            .assert()
            .failure()
            .code(2)
            .stderr(predicate::str::contains(message));
    }
    // Registers are required: clap refuses the command line.
    suite_without_gpu(cache.path()).args(["occupancy", "calc", "--arch", "gfx90a", "--wg", "64"]).assert().code(2);
}

#[test]
fn a_corrupt_prebuilt_object_is_refused_clearly() {
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let garbage = b"definitely not an ELF file";
    std::fs::write(dir.path().join("smoke.gfx90a.hsaco"), garbage).unwrap();
    // With the hash recorded as `suite kernels build` records it, so the bytes themselves are judged.
    let hash: String = <sha2::Sha256 as sha2::Digest>::digest(garbage).iter().map(|b| format!("{b:02x}")).collect();
    std::fs::write(dir.path().join("smoke.gfx90a.hsaco.sha256"), hash + "\n").unwrap();
    suite_without_gpu(cache.path())
        .args(["--kernels-dir"])
        .arg(dir.path())
        .args(["kernels", "inspect", "--arch", "gfx90a", "--sources", "smoke"])
        .assert()
        .failure()
        .code(1)
        .stderr(predicate::str::starts_with(format!(
            "error: not a GPU code object: {}: neither an ELF nor a clang offload bundle (26 bytes starting 64 65",
            dir.path().join("smoke.gfx90a.hsaco").display()
        )))
        .stderr(predicate::str::contains("rebuild it with `suite kernels build`"));
}

fn fixture(name: &str) -> std::path::PathBuf {
    suite::test_deps::crate_path("tests/fixtures").join(name)
}

/// Decodes a PNG file into (width, height, RGB bytes).
fn decode_png(path: &std::path::Path) -> (u32, u32, Vec<u8>) {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut reader = png::Decoder::new(std::io::BufReader::new(file)).read_info().expect("a PNG header");
    let mut buf = vec![0; reader.output_buffer_size().expect("a buffer size")];
    let info = reader.next_frame(&mut buf).expect("PNG data");
    assert_eq!(info.color_type, png::ColorType::Rgb, "{}", path.display());
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

/// Pixels of exactly `colour` in the left `fraction` of the image (the plotting area; the legend is on the right).
fn pixels_of(img: &(u32, u32, Vec<u8>), colour: [u8; 3], fraction: f64) -> usize {
    let (w, _, rgb) = img;
    let cut = (f64::from(*w) * fraction) as usize;
    rgb.chunks(3).enumerate().filter(|(i, px)| i % *w as usize <= cut && *px == colour).count()
}

/// Columns of the image in which `colour` shows in the top `fraction` of its rows (the chart, above a legend).
fn columns_of(img: &(u32, u32, Vec<u8>), colour: [u8; 3], fraction: f64) -> usize {
    let (w, h, rgb) = img;
    let rows = (f64::from(*h) * fraction) as usize;
    let w = *w as usize;
    (0..w).filter(|x| (0..rows).any(|y| rgb[3 * (y * w + x)..3 * (y * w + x) + 3] == colour)).count()
}

/// The rows of a fixture CSV, as the plot command reads them.
fn rows(name: &str) -> Vec<std::collections::BTreeMap<String, String>> {
    suite::report::csv::read_rows(&fixture(name)).expect("the fixture reads")
}

/// `matmul-h100.csv` is a copy of the H100 reference run in results/ (before batched timing: at N = 256 some
/// kernels read 158% of cuBLAS).
#[test]
fn matmul_plots_render_from_a_csv() {
    use suite::experiments::matmul;
    use suite::report::plot::SeriesKind;
    let cache = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let files = ["matmul-gflops-vs-size.png", "matmul-gflops-vs-tile.png", "matmul-percent-of-vendor.png"];
    let printed = suite_without_gpu(cache.path())
        .args(["plot", "--partial", "matmul"])
        .arg(fixture("matmul-h100.csv"))
        .arg("--out")
        .arg(out.path())
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let printed: Vec<String> = String::from_utf8(printed).unwrap().lines().map(str::to_string).collect();
    let expected: Vec<String> = files.iter().map(|f| out.path().join(f).display().to_string()).collect();
    assert_eq!(printed, expected);
    for file in files {
        let img = decode_png(&out.path().join(file));
        assert_eq!((img.0, img.1), (1600, 1000), "{file}");
        // cuBLAS is the black dashed reference in the size and % plots, drawn over the kernels.
        let black = pixels_of(&img, [0, 0, 0], 0.7);
        assert_eq!(black > 1000, file != "matmul-gflops-vs-tile.png", "{file}: {black} black pixels");
    }

    // The % plot: one line per family of the ladder (its fastest kernel at each size), the legend in the order the
    // lines end at N = 8192, the axis capped. The fixture's 15 kernels are 8 families.
    let plots = matmul::plots(&rows("matmul-h100.csv"));
    let (_, percent) = plots.iter().find(|(f, _)| f == "matmul-percent-of-vendor.png").expect("the % plot");
    let lines: Vec<_> = percent.series.iter().filter(|s| s.kind == SeriesKind::Line).collect();
    let mut labels: Vec<&str> = lines.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(labels.len(), 8, "{labels:?}");
    let at_8192: Vec<f64> = lines.iter().map(|s| s.points.last().expect("points").1).collect();
    assert!(at_8192.windows(2).all(|p| p[0] >= p[1]), "legend not in end order: {at_8192:?}");
    assert_eq!(labels[0], "double_buffer (best of 5)");
    assert!(labels.contains(&"tiled (best of 4)"), "{labels:?}");
    assert_eq!(labels.last(), Some(&"naive"));
    labels.sort();
    labels.dedup();
    assert_eq!(labels.len(), 8, "a family is listed twice");
    let gflops = |kernel: &str| {
        let all = rows("matmul-h100.csv");
        let row = all.iter().find(|r| r["kernel"] == kernel && r["n"] == "8192").expect("a row at 8192").clone();
        row["gflops"].parse::<f64>().expect("a number")
    };
    let want = 100.0 * gflops("double_buffer") / gflops("cublas");
    assert!((at_8192[0] - want).abs() < 1e-9 && want > 90.0, "double_buffer at 8192: {} vs {want}", at_8192[0]);
    assert_eq!(percent.x_axis, suite::report::plot::Axis::Log2);
    assert_eq!(percent.y_max, Some(150.0));
    let note = percent.note.as_deref().unwrap_or_default();
    assert!(note.contains("1 point(s) above 150%"), "{note}");
}

/// The matmul fixture with clock columns added by the test (made up, not measured): double_buffer at 8192 power-capped
/// at 1755 MHz, naive at 1024 below its steady clock. `suite plot` rings exactly those points in pure red, in the
/// size and % plots (the % of cuBLAS at 8192 moves with double_buffer's time, not the other kernels'), and draws
/// no red at all from the fixture as it is.
#[test]
fn points_measured_throttled_or_below_their_steady_clock_are_ringed_in_the_plots() {
    use suite::report::plot::FLAGGED;
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("matmul-h100.csv")).unwrap();
    let mut flagged = String::new();
    for (i, line) in text.lines().enumerate() {
        let extra = if i == 0 {
            "sm_clock_mhz,throttled,throttle_reasons,below_steady_clock"
        } else if line.ends_with("\"double_buffer/m=8192,n=8192,k=8192\"") {
            "1755,true,power_cap,true"
        } else if line.ends_with("\"naive/m=1024,n=1024,k=1024\"") {
            "1800,false,none,true"
        } else {
            "1980,false,none,false"
        };
        flagged.push_str(&format!("{line},{extra}\n"));
    }
    assert_eq!(flagged.matches(",true\n").count(), 2, "the two rows are in the fixture");
    let csv = dir.path().join("matmul.csv");
    std::fs::write(&csv, flagged).unwrap();
    let red = [FLAGGED.0, FLAGGED.1, FLAGGED.2];
    for (input, out, rings) in [(csv.clone(), "flagged", true), (fixture("matmul-h100.csv"), "plain", false)] {
        let out = dir.path().join(out);
        suite_without_gpu(cache.path())
            .args(["plot", "--partial", "matmul"])
            .arg(&input)
            .arg("--out")
            .arg(&out)
            .assert()
            .success();
        for file in ["matmul-gflops-vs-size.png", "matmul-percent-of-vendor.png"] {
            let img = decode_png(&out.join(file));
            // Two rings of about 12 px radius, 4 px wide, in the plotting area: hundreds of red pixels.
            let in_plot = pixels_of(&img, red, 0.7);
            assert_eq!(in_plot > 300, rings, "{file}: {in_plot} red pixels in the plotting area");
            assert!(rings || in_plot == 0, "{file}: red without a flagged row");
            assert_eq!(pixels_of(&img, red, 1.0) > in_plot, rings, "{file}: the legend's ring");
        }
    }
    let plots = suite::experiments::matmul::plots(&suite::report::csv::read_rows(&csv).unwrap());
    assert!(plots.iter().all(|(_, p)| p.series.iter().all(|s| s.kind != suite::report::plot::SeriesKind::Flagged)));
}

/// `occupancy-h100.csv` is a copy of the H100 reference run in results/.
#[test]
fn occupancy_plots_put_the_theoretical_occupancy_on_top_and_lds_in_kib_on_a_log2_axis() {
    use suite::experiments::occupancy;
    use suite::report::plot::{Axis, SeriesKind, FOCUS};
    let dir = tempfile::tempdir().unwrap();
    let plots = occupancy::plots(&rows("occupancy-h100.csv"), dir.path());
    for file in ["occupancy-group-size.png", "occupancy-lds.png", "occupancy-registers.png"] {
        let (_, plot) = plots.iter().find(|(f, _)| f == file).unwrap_or_else(|| panic!("no {file}"));
        let focus: Vec<_> = plot.series.iter().filter(|s| s.kind == SeriesKind::Focus).collect();
        assert_eq!(focus.len(), 1, "{file}");
        assert!(focus[0].label.starts_with("theoretical occupancy"), "{file}");
    }
    // One unit per axis: the bandwidth (% of the device copy) has plots of its own, beside the occupancy ones.
    for file in
        ["occupancy-group-size-bandwidth.png", "occupancy-lds-bandwidth.png", "occupancy-registers-bandwidth.png"]
    {
        let (_, plot) = plots.iter().find(|(f, _)| f == file).unwrap_or_else(|| panic!("no {file}"));
        assert!(plot.y_label.starts_with("bandwidth, % of the device copy"), "{file}: {}", plot.y_label);
        assert!(plot.series.iter().all(|s| !s.label.contains("occupancy")), "{file}");
        assert!(plot.series.iter().any(|s| s.kind == SeriesKind::Reference && s.points[0].1 == 100.0), "{file}");
    }
    let (_, group_size) = plots.iter().find(|(f, _)| f == "occupancy-group-size.png").unwrap();
    assert!(group_size.series.iter().all(|s| !s.label.contains("bandwidth")), "{:?}", group_size.series);
    let (_, lds) = plots.iter().find(|(f, _)| f == "occupancy-lds.png").unwrap();
    assert_eq!(lds.x_axis, Axis::Log2);
    assert!(lds.x_label.contains("KiB"), "{}", lds.x_label);
    // 1 KiB to 224 KiB of dynamic LDS: 100% occupancy up to 24 KiB, 12.5% from 128 KiB (the README's table).
    let theoretical = &lds.series[0].points;
    assert_eq!(theoretical.first(), Some(&(1.0, 100.0)));
    assert_eq!(theoretical.last(), Some(&(224.0, 12.5)));
    assert!(theoretical.contains(&(24.0, 100.0)) && theoretical.contains(&(32.0, 75.0)), "{theoretical:?}");

    // Drawn: the focus colour shows along the whole curve (the theoretical line is no longer hidden).
    let cache = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    suite_without_gpu(cache.path())
        .args(["plot", "--partial", "occupancy"])
        .arg(fixture("occupancy-h100.csv"))
        .arg("--out")
        .arg(out.path())
        .assert()
        .success();
    let crimson = [FOCUS.0, FOCUS.1, FOCUS.2];
    for file in ["occupancy-group-size.png", "occupancy-lds.png", "occupancy-registers.png"] {
        let img = decode_png(&out.path().join(file));
        assert_eq!((img.0, img.1), (1600, 1000), "{file}");
        // The legend is under the chart: count the chart's columns the focus colour shows in. A dashed line over
        // the whole x range shows in most of its ~1,300 columns; hidden under another line, only its dozen markers
        // (about 150 columns) would.
        let shown = columns_of(&img, crimson, 0.8);
        assert!(shown > 700, "{file}: the theoretical occupancy line shows in only {shown} columns");
    }
}

#[test]
fn plotting_a_csv_without_verified_rows_or_of_an_unknown_experiment_fails_clearly() {
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("matmul.csv");
    let fixture = suite::test_deps::crate_path("tests/fixtures/matmul-h100.csv");
    let header = std::fs::read_to_string(fixture).unwrap().lines().next().unwrap().to_string();
    std::fs::write(&csv, header + "\n").unwrap();
    suite_without_gpu(cache.path())
        .args(["plot", "--partial", "matmul"])
        .arg(&csv)
        .assert()
        .failure()
        .stderr(predicate::str::contains("no verified rows to plot"));
    // Clap lists every experiment of the registry, in its order: read from the registry, so a new experiment needs
    // no edit here.
    let known: Vec<&str> = suite::experiments::registry::names().collect();
    assert!(!known.is_empty());
    suite_without_gpu(cache.path())
        .args(["plot", "nosuch"])
        .arg(&csv)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("invalid value 'nosuch'"))
        .stderr(predicate::str::contains(format!("[possible values: {}]", known.join(", "))));
}

/// `suite experiments` prints the registry, and every name it prints can be run (`--help` of its subcommand) and
/// plotted (the plot command finds it and reads the CSV); a shard of an unknown experiment is refused by merge.
#[test]
fn every_listed_experiment_is_runnable_and_plottable_by_name() {
    let cache = tempfile::tempdir().unwrap();
    let listed = suite_without_gpu(cache.path()).arg("experiments").assert().success().get_output().stdout.clone();
    let listed = String::from_utf8(listed).unwrap();
    let names: Vec<&str> = listed.lines().collect();
    assert_eq!(names, suite::experiments::registry::names().collect::<Vec<_>>());
    let dir = tempfile::tempdir().unwrap();
    for name in names {
        suite_without_gpu(cache.path()).args(["run", name, "--help"]).assert().success().stdout(
            predicate::str::contains(format!("Usage: suite run {name}")).and(predicate::str::contains("--resume")),
        );
        let csv = dir.path().join(format!("{name}.csv"));
        std::fs::write(&csv, "experiment,status\n").unwrap();
        suite_without_gpu(cache.path())
            .args(["plot", "--partial", name])
            .arg(&csv)
            .assert()
            .failure()
            .code(1)
            .stderr(predicate::str::contains("no verified rows to plot"));
    }
}

#[test]
fn matmul_options_are_checked_before_any_gpu_work() {
    let cache = tempfile::tempdir().unwrap();
    for (args, message) in [
        (vec!["--kernels", "naive,fastest"], "unknown kernel `fastest`; available: naive"),
        (vec!["--tiles", "12"], "--tiles: no tiled kernel with M = 12"),
        (vec!["--sizes", "1024x512"], "neither N (square) nor MxNxK"),
        (vec!["--sizes", "0"], "--sizes: sizes must be at least 1"),
        (vec!["--reps", "0"], "--reps: at least 1 timed repetition"),
    ] {
        suite_without_gpu(cache.path())
            .args(["run", "matmul"])
            .args(&args)
            .assert()
            .failure()
            .stderr(predicate::str::contains(message));
    }
}

/// The device of the H100 reference run, as run.json records it.
const H100_JSON: &str = r#"{"platform": "nvidia", "ordinal": 0, "name": "NVIDIA H100 80GB HBM3", "arch": "sm_90",
    "arch_full": "sm_90", "wave_size": 32, "cu_count": 132, "max_items_per_cu": 2048, "max_group_size": 1024,
    "max_groups_per_cu": 32, "lds_bytes_per_cu": 233472, "lds_bytes_per_group": 49152,
    "lds_bytes_per_group_optin": 232448, "registers_per_cu": 65536, "clock_mhz": 1980, "memory_clock_mhz": 2619,
    "memory_bus_bits": 5120, "l2_bytes": 52428800, "memory_bytes": 85017493504,
    "runtime_version": "CUDA driver API 13.0", "driver_version": "580.159.04"}"#;

#[test]
fn merge_refuses_an_incomplete_shard_set_and_merges_it_with_partial() {
    use suite::report::folder::ResultsFolder;
    use suite::report::lock::Wait;
    use suite::report::run_json::{Fingerprint, Invocation};
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let fixture = suite::test_deps::crate_path("tests/fixtures/matmul-h100.csv");
    let text = std::fs::read_to_string(fixture).unwrap();
    let (header, rows) = text.split_once('\n').unwrap();
    let rows: Vec<&str> = rows.lines().collect();
    let device: suite::device::Props = serde_json::from_str(H100_JSON).unwrap();
    let fingerprint = Fingerprint {
        options: "{\"reps\":20}".into(),
        kernel_sources: "ab".repeat(32),
        compiler: "matmul: nvcc 13.0 [-O3]".into(),
        device: "nvidia NVIDIA H100 80GB HBM3 (sm_90)".into(),
        suite: "0.1.0 0123456789ab".into(),
        csv_header: header.into(),
    };
    // Shards 0 and 2 of 3: shard 1's node failed.
    let mut kept = 0;
    for i in [0, 2] {
        let shard_rows: Vec<&str> = rows.iter().skip(i).step_by(3).copied().collect();
        kept += shard_rows.len();
        let body = format!("{header}\n{}\n", shard_rows.join("\n"));
        std::fs::write(dir.path().join(format!("matmul.shard-{i}-of-3.csv")), body).unwrap();
        let mut invocation = Invocation::now(serde_json::json!({}), Some(format!("{i}/3")));
        invocation.experiment = "matmul".into();
        invocation.fingerprint = Some(fingerprint.clone());
        let shard = Some(suite::options::Shard { index: i, count: 3 });
        let folder = ResultsFolder::take(dir.path(), shard, "suite run", Wait::No).unwrap();
        folder.record_invocation(&device, invocation).unwrap();
    }
    suite_without_gpu(cache.path()).arg("merge").arg(dir.path()).assert().failure().code(1).stderr(
        predicate::str::contains(
            "matmul: incomplete set of 3 shards, missing matmul.shard-1-of-3.csv: run them (with --resume) into \
             this folder, or pass --partial",
        ),
    );
    let merged = dir.path().join("matmul.csv");
    assert!(!merged.exists(), "a refused merge writes nothing");
    suite_without_gpu(cache.path())
        .arg("merge")
        .arg(dir.path())
        .arg("--partial")
        .assert()
        .success()
        .stdout(predicate::str::contains("rows from 2 shards"))
        .stdout(predicate::str::contains("matmul.csv: incomplete: missing matmul.shard-1-of-3.csv"))
        // A folder from before plans were recorded: what the shards prove, and that completeness is otherwise unknown.
        .stdout(predicate::str::contains("completeness unknown: run.json records no plan"));
    let merged = std::fs::read_to_string(merged).unwrap();
    assert_eq!(merged.lines().count(), kept + 1);
    assert_eq!(merged.lines().next(), Some(header));
}

/// An I/O error names the file and its cause once (thiserror messages quote their cause, which anyhow's chain
/// would print a second time).
#[test]
fn an_io_error_prints_its_cause_once() {
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "not a folder").unwrap();
    let out = suite_without_gpu(cache.path())
        .args(["plot", "--partial", "matmul"])
        .arg(fixture("matmul-h100.csv"))
        .arg("--out")
        .arg(file.join("plots"))
        .assert()
        .code(1)
        .get_output()
        .stderr
        .clone();
    let stderr = String::from_utf8(out).unwrap();
    assert!(stderr.starts_with(&format!("error: cannot create {}", file.join("plots").display())), "{stderr}");
    assert_eq!(stderr.matches("Not a directory").count(), 1, "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

/// A results folder made of the fixture CSVs (the unbatched H100 run) and a run.json of this suite's schema.
fn fixture_run(dir: &std::path::Path) {
    std::fs::create_dir_all(dir).unwrap();
    let json = format!(r#"{{"device": {H100_JSON}, "invocations": []}}"#);
    std::fs::write(dir.join("run.json"), json).unwrap();
    for name in ["matmul", "occupancy"] {
        std::fs::copy(fixture(&format!("{name}-h100.csv")), dir.join(format!("{name}.csv"))).unwrap();
    }
}

#[test]
fn compare_writes_a_report_and_plots_and_refuses_a_folder_that_is_not_a_run() {
    let cache = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let run = root.path().join("h100");
    fixture_run(&run);
    let out = root.path().join("cmp");
    // A run compared with itself: every ratio is 1.
    let printed = suite_without_gpu(cache.path())
        .arg("compare")
        .args([&run, &run])
        .arg("--out")
        .arg(&out)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let printed = String::from_utf8(printed).unwrap();
    let files = [
        "report.md",
        "matmul-vendor-gflops.png",
        "matmul-best-percent-of-vendor.png",
        "occupancy-theoretical-vs-group-size.png",
        "occupancy-group-size-percent-of-copy.png",
        "occupancy-lds-percent-of-copy.png",
        "occupancy-spin-vs-rounds.png",
    ];
    let expected: Vec<String> = files.iter().map(|f| out.join(f).display().to_string()).collect();
    assert_eq!(printed.lines().collect::<Vec<_>>(), expected);
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    for line in [
        "Wave size: every run is warp32.",
        "| 256 | 1,631 (2%) | 1,631 (2%) | 1.00 |",
        "| 256 | tiled_m16 158% | tiled_m16 158% |",
        "one launch between two events (unbatched: the CSV predates the `timing` column)",
        "Run 2 / run 1 over 90 points: median 1.000, from 1.000 to 1.000.",
    ] {
        assert!(report.contains(line), "missing {line:?} in\n{report}");
    }
    for f in &files[1..] {
        let (w, h, _) = decode_png(&out.join(f));
        assert_eq!((w, h), (1600, 1000), "{f}");
    }
    // A folder without run.json: exit 1, naming the folder and what is missing, and nothing written.
    let empty = root.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out2 = root.path().join("cmp2");
    suite_without_gpu(cache.path())
        .arg("compare")
        .args([&run, &empty])
        .arg("--out")
        .arg(&out2)
        .assert()
        .code(1)
        .stderr(predicate::str::starts_with(format!(
            "error: {}: not a results folder: no run.json; a run written by `suite run` holds run.json",
            empty.display()
        )));
    assert!(!out2.exists());
    // One run is not a comparison.
    suite_without_gpu(cache.path()).arg("compare").arg(&run).assert().code(2);
}

/// `suite plot` into the run's own folder draws the folder's rooflines again from its rows, with the ceilings of
/// today's code: here the H100 quick run with counters (results/), whose roofline took an L2-resident copy as its
/// memory ceiling (4832 GB/s) when it ran; drawn again, the ceiling is a copy of data the L2 cannot hold.
#[test]
fn plot_into_a_runs_folder_redraws_its_rooflines() {
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let run = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../results/2026-11-25-h100-sm_90-quick-counters-issues25-27");
    for file in ["run.json", "fusion.csv", "matmul.csv", "occupancy.csv", "smoke.csv", "pt.csv", "counters.csv"] {
        std::fs::copy(run.join(file), dir.path().join(file)).unwrap();
    }
    let printed = suite_without_gpu(cache.path())
        .args(["plot", "fusion"])
        .arg(dir.path().join("fusion.csv"))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let printed = String::from_utf8(printed).unwrap();
    for file in ["roofline.png", "roofline.csv", "roofline-dram.png"] {
        assert!(printed.contains(&dir.path().join(file).display().to_string()), "{file} not drawn:\n{printed}");
    }
    // Every point's memory ceiling is now under HBM3's 3350 GB/s (it was 4831.7 when the run drew it).
    for row in suite::report::csv::read_rows(&dir.path().join("roofline.csv")).unwrap() {
        let ceiling: f64 = row["memory_ceiling_gbps"].parse().unwrap();
        assert!(ceiling < 3350.0, "{row:?}");
    }
    // Into another folder only the experiment's own plots are drawn.
    let elsewhere = tempfile::tempdir().unwrap();
    suite_without_gpu(cache.path())
        .args(["plot", "fusion"])
        .arg(dir.path().join("fusion.csv"))
        .arg("--out")
        .arg(elsewhere.path())
        .assert()
        .success();
    assert!(!elsewhere.path().join("roofline.png").exists());
}

/// `suite status` names the folder once: a folder without run.json in the line that says so (status 5), any other
/// in front of its verdict.
#[test]
fn status_names_the_folder_once() {
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let status = || suite_without_gpu(cache.path()).arg("status").arg(dir.path()).assert();
    let out = status().code(5).get_output().stdout.clone();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.starts_with(&format!("no run.json in {}: nothing here records a run", dir.path().display())),
        "{text}"
    );
    let run = suite::report::run_json::RunJson {
        device: suite::planning::part("h100-sxm").unwrap().props(),
        invocations: vec![],
        plans: vec![],
        merges: vec![],
    };
    std::fs::write(dir.path().join("run.json"), serde_json::to_string(&run).unwrap()).unwrap();
    let out = status().code(5).get_output().stdout.clone();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.starts_with(&format!("{}: completeness unknown: run.json records no plan", dir.path().display())),
        "{text}"
    );
}

/// Issue 31, item 7: `suite plot` never guesses. A folder whose plan says it holds fewer points than planned is
/// refused (status 4, naming the folder and its counts) unless --partial, which draws what is there; a folder with no
/// run.json is said as such; a run.json that does not parse and a CSV row that does not are errors naming them.
#[test]
fn plot_refuses_an_incomplete_folder_unless_partial_and_never_guesses() {
    use suite::report::folder::ResultsFolder;
    use suite::report::lock::Wait;
    use suite::report::run_json::{Plan, PlannedExperiment};
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let rows = std::fs::read_to_string(fixture("matmul-h100.csv")).unwrap();
    let whole = rows.lines().count() - 1;
    let csv = dir.path().join("matmul.csv");
    std::fs::write(&csv, &rows).unwrap();
    let plot = |partial: bool| {
        let mut cmd = suite_without_gpu(cache.path());
        cmd.args(["plot", "matmul"]).arg(&csv);
        if partial {
            cmd.arg("--partial");
        }
        cmd.assert()
    };
    let out = plot(false).code(4).get_output().stderr.clone();
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with(&format!("error: no run.json in {}", dir.path().display())), "{text}");
    assert!(text.contains("--partial"), "{text}");
    let device = suite::planning::part("h100-sxm").unwrap().props();
    let plan = Plan {
        date: "2026-11-25T10:00:00Z".into(),
        host: "h".into(),
        command: vec![],
        shard: None,
        slurm: None,
        continue_with: "suite run matmul --resume".into(),
        experiments: vec![PlannedExperiment { name: "matmul".into(), sweep_points: whole + 70, points: whole + 70 }],
    };
    ResultsFolder::take(dir.path(), None, "suite run", Wait::No).unwrap().record_plan(&device, plan).unwrap();
    let out = plot(false).code(4).get_output().stderr.clone();
    let text = String::from_utf8(out).unwrap();
    let counts = format!("incomplete: matmul {whole} of {} points", whole + 70);
    assert!(text.contains(&dir.path().display().to_string()) && text.contains(&counts), "{text}");
    assert!(!dir.path().join("matmul-gflops-vs-size.png").exists() && !dir.path().join("roofline.csv").exists());
    plot(true).success();
    assert!(dir.path().join("matmul-gflops-vs-size.png").exists());
    // A row damaged in the middle: an error naming the file, line and column, not a row quietly dropped.
    let mut damaged: Vec<&str> = rows.lines().collect();
    damaged[3] = "matmul,nvidia,cut";
    std::fs::write(&csv, damaged.join("\n") + "\n").unwrap();
    let out = plot(true).code(1).get_output().stderr.clone();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains(&format!("{}: line 4, column 4", csv.display())), "{text}");
    // A run.json that does not parse is named, never skipped.
    std::fs::write(&csv, &rows).unwrap();
    std::fs::write(dir.path().join("run.json"), "{ garbage").unwrap();
    let out = plot(true).code(1).get_output().stderr.clone();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains(&dir.path().join("run.json").display().to_string()), "{text}");
}
