//! Tests that need a GPU: `cargo test --release -- --ignored` on a GPU node. None of them passes by finding no
//! device: opening the GPU is the first assertion of each.

use suite::device::{Arg, Error, Kernel, LaunchConfig, Platform, Timing};
use suite::experiments::{self, smoke::SmokeSweep, Case, RunOptions};
use suite::gpu::Gpu;
use suite::occupancy_calculator::{Profile, Resources};
use suite::report::csv::read_rows;
use suite::report::folder::ResultsFolder;
use suite::report::lock::Wait;
use suite::verify::{self, Verification};

/// Run options for a test sweep: few launches, so the test checks correctness rather than measuring.
fn quick_run(dir: &std::path::Path, resume: bool, time_budget_s: f64) -> RunOptions {
    RunOptions {
        out_dir: dir.to_path_buf(),
        resume,
        shard: None,
        warmup: 1,
        reps: 3,
        time_budget_s,
        timing: Timing::Graph,
        max_point_s: 60.0,
        telemetry: true,
    }
}

/// One experiment run into a results folder taken for it alone, as `suite run EXPERIMENT` takes it.
fn run_in_own_folder(
    gpu: &Gpu,
    exp: &dyn experiments::Experiment,
    opts: &RunOptions,
) -> Result<experiments::Summary, experiments::Error> {
    let mut folder = ResultsFolder::take(&opts.out_dir, opts.shard, "suite run", Wait::No)?;
    experiments::run(gpu, exp, opts, &mut folder)
}

fn gpu() -> Gpu {
    match Gpu::open(None, 0, None) {
        Ok(gpu) => gpu,
        Err(e) => panic!("this test needs a GPU: {e}"),
    }
}

#[test]
#[ignore = "needs a GPU"]
fn device_properties_are_plausible() {
    let gpu = gpu();
    let p = gpu.device.props();
    assert!(!p.name.is_empty());
    assert_eq!(p.arch.platform(), p.platform);
    match p.platform {
        Platform::Nvidia => assert_eq!(p.wave_size.0, 32),
        Platform::Amd => assert!(p.wave_size.0 == 32 || p.wave_size.0 == 64),
    }
    assert!((1..=1024).contains(&p.cu_count), "{} CUs", p.cu_count);
    assert!(p.max_group_size >= 256 && p.max_group_size <= p.max_items_per_cu, "{p:?}");
    assert!(p.max_items_per_cu.is_multiple_of(p.wave_size.0));
    assert!(p.lds_bytes_per_cu >= 32 * 1024 && p.lds_bytes_per_group <= p.lds_bytes_per_group_optin, "{p:?}");
    assert!(p.lds_bytes_per_group_optin <= p.lds_bytes_per_cu);
    assert!(p.registers_per_cu >= 16 * 1024);
    assert!(p.memory_bytes >= 1 << 30);
    let (free, total) = gpu.device.memory_info().unwrap();
    assert!(free <= total && total <= p.memory_bytes + (1 << 30), "free {free} total {total}");
}

#[test]
#[ignore = "needs a GPU"]
fn smoke_triad_verifies_at_odd_sizes_and_group_sizes() {
    let gpu = gpu();
    let dir = tempfile::tempdir().unwrap();
    // One folder per group size: a folder holds rows of one set of options (its fingerprint).
    let groups = [96, 256, 1000];
    for group_size in groups {
        let sweep = SmokeSweep { sizes: vec![1, 1000, (1 << 20) + 3], group_size };
        let opts = quick_run(&dir.path().join(group_size.to_string()), false, 1.0);
        let summary = run_in_own_folder(&gpu, &sweep, &opts).unwrap();
        assert_eq!((summary.ok, summary.fail, summary.error), (3, 0, 0), "group size {group_size}");
    }
    let rows: Vec<_> =
        groups.iter().flat_map(|g| read_rows(&dir.path().join(g.to_string()).join("smoke.csv")).unwrap()).collect();
    assert_eq!(rows.len(), 9);
    let props = gpu.device.props();
    for row in rows {
        assert_eq!(row["status"], "ok");
        assert!(row["gbps"].parse::<f64>().unwrap() > 0.0);
        assert!(row["max_rel_err"].parse::<f64>().unwrap() <= row["tolerance"].parse::<f64>().unwrap());
        // Short kernels run in batches: n = 1 takes a few µs, so many launches make up one repetition.
        let launches: u32 = row["launches_per_rep"].parse().unwrap();
        assert!(launches >= 1, "{row:?}");
        if row["n"] == "1" {
            assert!(launches >= 50, "a one-element triad timed in batches of {launches}: {row:?}");
        }
        // NVIDIA captures batches as graphs (the default); AMD has no graph bindings and uses the stream.
        let want = if props.platform == Platform::Nvidia { "graph" } else { "stream" };
        assert_eq!(row["timing"], want, "{row:?}");
        let footprint = 12 * row["n"].parse::<u64>().unwrap();
        let resident = props.l2_bytes.map(|l2| (footprint <= l2).to_string()).unwrap_or_default();
        assert_eq!(row["l2_resident"], resident, "{row:?}");
    }
    // Each run recorded the GPU's gap between back-to-back kernels in its folder's run.json.
    for group_size in groups {
        let path = dir.path().join(group_size.to_string()).join("run.json");
        let run: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let gap = run["invocations"][0]["timing"]["launch_gap_us"].as_f64().unwrap();
        assert!(gap > 0.0 && gap < 50.0, "launch gap {gap} µs in {}", path.display());
    }
}

#[test]
#[ignore = "needs a GPU"]
fn verification_catches_elements_the_kernel_did_not_write() {
    // Launch the triad over half of a poisoned array: the untouched half must fail verification.
    let gpu = gpu();
    let dev = gpu.device.as_ref();
    let kernel = gpu.kernel("smoke", "smoke_triad").unwrap();
    let n = 4096usize;
    let b = vec![1.0f32; n];
    let c = vec![2.0f32; n];
    let (a_buf, b_buf, c_buf) = (dev.alloc_buffer::<f32>(n).unwrap(), dev.upload(&b).unwrap(), dev.upload(&c).unwrap());
    dev.fill_bytes(a_buf.raw(), 0xff).unwrap();
    let args = [a_buf.arg(), b_buf.arg(), c_buf.arg(), Arg::F32(0.5), Arg::U32((n / 2) as u32)];
    dev.launch(&kernel, &LaunchConfig::linear((n / 2 / 256) as u32, 256), &args).unwrap();
    let got = dev.download(&a_buf).unwrap();
    let want = vec![2.0f64; n];
    let check = verify::compare(&got, &want, 2.0, 1e-6);
    assert_eq!(check.failures, n / 2);
    assert!(!check.passed());
    assert!(got[..n / 2].iter().all(|&x| x == 2.0));
}

#[test]
#[ignore = "needs a GPU"]
fn runtime_occupancy_matches_the_suite_over_kernels_group_sizes_and_lds() {
    let gpu = gpu();
    let props = gpu.device.props().clone();
    let profile = Profile::from_props(&props).unwrap();
    // Kernels from few registers and no LDS (smoke) to many registers and LDS tiles (the matmul ladder).
    let kernels = [
        ("launch", "launch_empty"),
        ("smoke", "smoke_triad"),
        ("matmul", "matmul_accumulator"),
        ("matmul", "matmul_blocktile_2d"),
        ("matmul", "matmul_double_buffer"),
    ];
    // Partial waves (48, 160, 1000) and LDS off the granules (1000 bytes) included.
    let group_sizes = [32, 48, 64, 96, 128, 160, 192, 256, 384, 512, 640, 768, 1000, 1024];
    let dynamic_lds = [0u32, 1000, 1024, 8 << 10, 20 << 10, 40 << 10, 64 << 10, 100 << 10, 160 << 10, 200 << 10];
    let mut configs = 0;
    let mut disagreements = Vec::new();
    for (source, name) in kernels {
        let kernel = gpu.kernel(source, name).unwrap();
        let attrs = kernel.attrs;
        let max_group = if attrs.max_group_size == 0 { props.max_group_size } else { attrs.max_group_size };
        eprintln!(
            "{name}: {} registers per item, {} static LDS bytes, groups up to {max_group}",
            attrs.registers_per_item, attrs.static_lds_bytes
        );
        for group_size in group_sizes.into_iter().filter(|&g| g <= max_group.min(props.max_group_size)) {
            for dynamic in dynamic_lds {
                if u64::from(dynamic + attrs.static_lds_bytes) > props.lds_bytes_per_group_optin {
                    continue;
                }
                configs += 1;
                let runtime = gpu.device.occupancy_groups_per_cu(&kernel, group_size, dynamic).unwrap();
                let suite = profile.occupancy(&Resources::from_attrs(&attrs, group_size, dynamic));
                // Resources the suite says cannot run at all agree with a runtime answer of 0.
                let agree = match &suite {
                    Ok(o) => o.groups_per_cu == runtime,
                    Err(_) => runtime == 0,
                };
                if !agree {
                    let said = match &suite {
                        Ok(o) => format!("{} ({} binds; {:?})", o.groups_per_cu, o.limiter, o.limits),
                        Err(e) => e.to_string(),
                    };
                    disagreements.push(format!(
                        "{name}, group {group_size}, dynamic LDS {dynamic}: runtime {runtime}, suite {said}"
                    ));
                }
            }
        }
    }
    eprintln!("occupancy: {} of {configs} configurations agree", configs - disagreements.len());
    for d in &disagreements {
        eprintln!("  {d}");
    }
    assert!(configs >= 100, "only {configs} configurations: the grid lost its kernels");
    match props.platform {
        Platform::Nvidia => assert!(disagreements.is_empty(), "{}", disagreements.join("\n")),
        // HIP's hipOccupancyMaxActiveBlocksPerMultiprocessor is a simpler model than the hardware's (ROCm clr
        // hip_platform.cpp): it does not round LDS to the 512-byte granule or count the 16 barriers per CU, and it
        // counts SGPRs, which KernelAttrs does not carry. Differences are listed, not failed.
        Platform::Amd => eprintln!("(AMD: differences from HIP's simpler occupancy model are listed, not asserted)"),
    }
}

#[test]
#[ignore = "needs a GPU"]
fn vendor_sgemm_matches_a_host_reference_in_fp32() {
    let gpu = gpu();
    let dev = gpu.device.as_ref();
    let (m, n, k) = (67usize, 33usize, 129usize);
    let mut rng = fastrand::Rng::with_seed(7);
    let a: Vec<f32> = (0..m * k).map(|_| rng.f32() * 2.0 - 1.0).collect();
    let b: Vec<f32> = (0..k * n).map(|_| rng.f32() * 2.0 - 1.0).collect();
    let (a_buf, b_buf, c_buf) =
        (dev.upload(&a).unwrap(), dev.upload(&b).unwrap(), dev.alloc_buffer::<f32>(m * n).unwrap());
    dev.fill_bytes(c_buf.raw(), 0xff).unwrap();
    dev.gemm(suite::precision::Precision::F32, [m, n, k], a_buf.raw(), b_buf.raw(), c_buf.raw()).unwrap();
    let got = dev.download(&c_buf).unwrap();
    let mut want = vec![0f64; m * n];
    for i in 0..m {
        for j in 0..n {
            want[i * n + j] = (0..k).map(|p| f64::from(a[i * k + p]) * f64::from(b[p * n + j])).sum();
        }
    }
    // FP32 accumulation over 129 terms stays within ~1e-6 of the magnitude; TF32 inputs (10-bit mantissa) would be
    // off by ~1e-3, so this also proves TF32 is not in use.
    let check = verify::compare(&got, &want, verify::max_abs(&want), 1e-5);
    assert!(check.passed(), "{}", check.summary());
}

#[test]
#[ignore = "needs a GPU"]
fn bad_launches_and_allocations_give_typed_errors() {
    let gpu = gpu();
    let dev = gpu.device.as_ref();
    let kernel = gpu.kernel("smoke", "smoke_triad").unwrap();
    let buf = dev.alloc_buffer::<f32>(16).unwrap();
    // Too few arguments: caught before the launch from the kernel's parameter list.
    let err = dev.launch(&kernel, &LaunchConfig::linear(1, 64), &[buf.arg()]).unwrap_err();
    assert!(matches!(err, Error::BadArguments { .. }), "{err}");
    // A float where an unsigned is expected has the same size: not detectable, so only sizes are checked.
    let args = [buf.arg(), buf.arg(), buf.arg(), Arg::F32(1.0), Arg::U64(16)];
    assert!(matches!(
        dev.launch(&kernel, &LaunchConfig::linear(1, 64), &args).unwrap_err(),
        Error::BadArguments { .. }
    ));
    let args = [buf.arg(), buf.arg(), buf.arg(), Arg::F32(1.0), Arg::U32(16)];
    let too_big = LaunchConfig::linear(1, dev.props().max_group_size + 1);
    assert!(matches!(dev.launch(&kernel, &too_big, &args).unwrap_err(), Error::BadLaunch { .. }));
    assert!(matches!(dev.launch(&kernel, &LaunchConfig::linear(0, 64), &args).unwrap_err(), Error::BadLaunch { .. }));
    // More memory than the device has.
    let err = dev.alloc_buffer::<f32>((dev.props().memory_bytes / 2) as usize).unwrap_err();
    assert!(matches!(err, Error::OutOfMemory { .. }), "{err}");
    // A kernel that is not there.
    let err = gpu.kernel("smoke", "smoke_nosuch").unwrap_err();
    assert!(err.to_string().contains("smoke_nosuch"), "{err}");
    // A cooperative launch of a grid that fits runs and verifies like an ordinary one.
    let n = 1024u32;
    let a = dev.alloc_buffer::<f32>(n as usize).unwrap();
    let b = dev.upload(&vec![1.0f32; n as usize]).unwrap();
    let args = [a.arg(), b.arg(), b.arg(), Arg::F32(2.0), Arg::U32(n)];
    dev.launch_cooperative(&kernel, &LaunchConfig::linear(n / 256, 256), &args).unwrap();
    assert!(dev.download(&a).unwrap().iter().all(|&x| x == 3.0));
    // The device still works after the refused launches.
    dev.synchronize().unwrap();
}

#[test]
#[ignore = "needs a GPU"]
fn a_code_object_for_another_architecture_is_refused_by_the_runtime() {
    let gpu = gpu();
    let props = gpu.device.props();
    let other = match props.platform {
        Platform::Nvidia if props.arch.as_str() != "sm_80" => "smoke.sm_80.cubin",
        Platform::Nvidia => "smoke.sm_90.cubin",
        Platform::Amd if props.arch.as_str() != "gfx908" => "smoke.gfx908.hsaco",
        Platform::Amd => "smoke.gfx90a.hsaco",
    };
    // From the source tree the binary was built in, or, for a copied binary, from the repository root it runs in.
    let built_in = suite::test_deps::crate_path("tests/fixtures/kernels");
    let dir = if built_in.exists() { built_in } else { std::path::PathBuf::from("suite/tests/fixtures/kernels") };
    let path = dir.join(other);
    let bytes = std::fs::read(&path).unwrap();
    let err = gpu.device.load_module(&bytes).err().expect("a foreign-architecture object must not load");
    assert!(matches!(err, Error::BadCodeObject { .. }), "{err}");
}

#[test]
#[ignore = "needs a GPU"]
fn every_matmul_kernel_verifies_at_odd_and_rectangular_sizes() {
    use suite::experiments::matmul::{MatmulSweep, Shape, AUTOTUNE, VARIANTS};
    let gpu = gpu();
    let dir = tempfile::tempdir().unwrap();
    // 77×132×36: ragged against every tile, rows aligned for 16-byte loads. 1×4×4: one row. 129×257×65: odd N and K,
    // so the 16-byte kernels run their guarded `_unaligned` twins. In FP32 and FP64, every kernel with an instance in
    // the precision on this device takes every size; the others (the DMMA rung in FP32, MFMA on NVIDIA, the shapes
    // without an FP64 instance) are invalid rows that say why, and nothing else is.
    use suite::precision::Precision;
    let shapes = vec![Shape { m: 77, n: 132, k: 36 }, Shape { m: 1, n: 4, k: 4 }, Shape { m: 129, n: 257, k: 65 }];
    let names: Vec<&str> = VARIANTS.iter().map(|v| v.name).collect();
    let sweep = MatmulSweep::new(shapes.clone(), &names, true).with_autotune(true).with_f64(shapes, &names);
    let arch = gpu.device.props().arch.as_str().to_string();
    let opts = quick_run(dir.path(), false, 0.5);
    let summary = run_in_own_folder(&gpu, &sweep, &opts).unwrap();
    let rows = read_rows(&dir.path().join("matmul.csv")).unwrap();
    let planned: usize = Precision::ALL.iter().map(|&p| 3 * (sweep.variants(&arch, p).len() + 2)).sum();
    assert_eq!(rows.len(), planned);
    let mut invalid = 0;
    for row in &rows {
        let precision = Precision::parse(&row["precision"]).unwrap();
        let v = VARIANTS.iter().find(|v| v.name == row["kernel"]);
        if let Some(why) = v.and_then(|v| v.problem_on(precision, &arch)) {
            assert_eq!(row["status"], "invalid", "{row:?}");
            assert_eq!(row["message"], why, "{row:?}");
            invalid += 1;
            continue;
        }
        assert_eq!(row["status"], "ok", "{row:?}");
        assert!(row["max_rel_err"].parse::<f64>().unwrap() <= row["tolerance"].parse::<f64>().unwrap());
        if let Some(v) = v.filter(|v| v.aligned_rows) {
            let base = v.symbol_for(Shape::square(4), precision);
            let twin = if row["n"] == "257" { format!("{base}_unaligned") } else { base };
            assert_eq!(row["symbol"], twin, "{row:?}");
        }
        if row["kernel"] == AUTOTUNE {
            // The autotune row names its pick, a kernel of the table, and launched that kernel's symbol.
            let pick = VARIANTS.iter().find(|v| v.name == row["pick"]).unwrap_or_else(|| panic!("{row:?}"));
            assert!(row["symbol"].starts_with(pick.symbol), "{row:?}");
            assert!(row["groups"].parse::<u64>().unwrap() >= 1, "{row:?}");
        }
    }
    assert!(rows.iter().any(|r| r["precision"] == "f64" && r["status"] == "ok" && r["kernel"].starts_with("dmma")));
    assert_eq!((summary.fail, summary.error, summary.invalid), (0, 0, invalid));
}

/// The new rungs at sizes no tile divides (1000, 1023, 4097: the last two leave rows unaligned) and a rectangular
/// product, each point verified at every element, and the autotune step picking one of them.
#[test]
#[ignore = "needs a GPU"]
fn split_k_stream_k_and_small_tiles_verify_where_no_tile_divides_the_size() {
    use suite::experiments::matmul::{MatmulSweep, Shape, AUTOTUNE, VARIANTS};
    let gpu = gpu();
    let dir = tempfile::tempdir().unwrap();
    let shapes = vec![
        Shape::square(1000),
        Shape::square(1023),
        Shape { m: 1000, n: 1500, k: 700 },
        Shape { m: 3, n: 5, k: 7 },
        Shape::square(4097),
    ];
    let new_rungs = ["splitk", "splitk_atomic", "streamk"];
    let kernels = VARIANTS
        .iter()
        .filter(|v| {
            new_rungs.contains(&v.family)
                || ["double_buffer_64x128x8_t128", "double_buffer_32x64x16_t64"].contains(&v.name)
        })
        .collect::<Vec<_>>();
    let names: Vec<&str> = kernels.iter().map(|v| v.name).collect();
    let sweep = MatmulSweep::new(shapes.clone(), &names, true).with_autotune(true);
    let opts = quick_run(dir.path(), false, 0.3);
    let summary = run_in_own_folder(&gpu, &sweep, &opts).unwrap();
    let rows = read_rows(&dir.path().join("matmul.csv")).unwrap();
    assert_eq!(rows.len(), shapes.len() * (kernels.len() + 2));
    for row in &rows {
        assert_eq!(row["status"], "ok", "{row:?}");
        if row["kernel"].starts_with("splitk") {
            assert!(row["split_k"].parse::<u32>().unwrap() >= 1, "{row:?}");
        }
    }
    let picks: Vec<&str> = rows.iter().filter(|r| r["kernel"] == AUTOTUNE).map(|r| r["pick"].as_str()).collect();
    assert_eq!(picks.len(), shapes.len());
    assert!(picks.iter().all(|p| !p.is_empty()), "{picks:?}");
    assert_eq!((summary.fail, summary.error, summary.invalid), (0, 0, 0));
}

/// Split-K and stream-K add their partial tiles in a fixed order, so C is the same bits from launch to launch, also
/// when the workspace and counters are reused (several launches of one case); the atomic variant only promises a
/// correct C. The split counts include ones that leave ranges of unequal length.
#[test]
#[ignore = "needs a GPU"]
fn split_k_and_stream_k_results_are_the_same_bits_every_launch() {
    use suite::experiments::matmul::{draw_inputs, multiply, Packing, Schedule, Shape, VARIANTS};
    let gpu = gpu();
    let mut rng = fastrand::Rng::with_seed(7);
    for shape in [Shape::square(512), Shape { m: 1000, n: 1500, k: 700 }, Shape { m: 77, n: 129, k: 1023 }] {
        let a = draw_inputs(&mut rng, shape.m * shape.k).unwrap();
        let b = draw_inputs(&mut rng, shape.k * shape.n).unwrap();
        for v in VARIANTS.iter().filter(|v| matches!(v.schedule, Schedule::SplitK | Schedule::StreamK)) {
            for split in [None, Some(3), Some(7)].into_iter().filter(|s| s.is_none() || v.schedule == Schedule::SplitK)
            {
                let once = multiply(&gpu, v, shape, &a, &b, split, Packing::Model, 1).unwrap();
                let thrice = multiply(&gpu, v, shape, &a, &b, split, Packing::Model, 3).unwrap();
                let differ = once.iter().zip(&thrice).filter(|(x, y)| x.to_bits() != y.to_bits()).count();
                assert_eq!(differ, 0, "{} at {shape}, split {split:?}: {differ} elements differ", v.name);
                // And the result is right: a spot check against the host in FP64.
                for (i, j) in [(0, 0), (shape.m - 1, shape.n - 1), (shape.m / 2, shape.n / 3)] {
                    let want: f64 =
                        (0..shape.k).map(|p| f64::from(a[i * shape.k + p]) * f64::from(b[p * shape.n + j])).sum();
                    let got = f64::from(once[i * shape.n + j]);
                    assert!(
                        (got - want).abs() <= 1e-4 * (shape.k as f64).sqrt(),
                        "{} at ({i}, {j}): {got} vs {want}",
                        v.name
                    );
                }
            }
        }
    }
}

/// The `_packed` twins (FP32 rungs 8 to 10, reading copies of A and B with rows padded to 16 bytes, made by
/// `matmul_pack_operands` in the same launch) give the same C as the `_unaligned` twins, element for element (the same
/// products in the same order; the pads add zeros), at shapes whose rows are not aligned in A, in B, or in both, with
/// the workspace reused over 3 launches; and right against the host at sampled elements.
#[test]
#[ignore = "needs a GPU"]
fn packed_twins_give_the_unaligned_twins_results() {
    use suite::experiments::matmul::{draw_inputs, multiply, Packing, Shape, VARIANTS};
    let gpu = gpu();
    let mut rng = fastrand::Rng::with_seed(13);
    let shapes =
        [Shape { m: 77, n: 129, k: 1023 }, Shape { m: 1001, n: 300, k: 517 }, Shape { m: 300, n: 515, k: 512 }];
    let packed: Vec<_> = VARIANTS.iter().filter(|v| v.packed_twin).collect();
    assert!(packed.len() >= 14, "{}", packed.len());
    for shape in shapes {
        let a = draw_inputs(&mut rng, shape.m * shape.k).unwrap();
        let b = draw_inputs(&mut rng, shape.k * shape.n).unwrap();
        for v in &packed {
            if v.problem_on(suite::precision::Precision::F32, gpu.device.props().arch.as_str()).is_some() {
                continue;
            }
            let split = (v.schedule == suite::experiments::matmul::Schedule::SplitK).then_some(3);
            let unaligned = multiply(&gpu, v, shape, &a, &b, split, Packing::Never, 1).unwrap();
            let packed = multiply(&gpu, v, shape, &a, &b, split, Packing::Always, 3).unwrap();
            let differ = unaligned.iter().zip(&packed).filter(|(x, y)| x != y).count();
            assert_eq!(differ, 0, "{} at {shape}: {differ} elements differ from the _unaligned twin's", v.name);
            for (i, j) in [(0, 0), (shape.m - 1, shape.n - 1), (shape.m / 2, shape.n / 3)] {
                let want: f64 =
                    (0..shape.k).map(|p| f64::from(a[i * shape.k + p]) * f64::from(b[p * shape.n + j])).sum();
                let got = f64::from(packed[i * shape.n + j]);
                assert!((got - want).abs() <= 1e-4 * (shape.k as f64).sqrt(), "{} at ({i}, {j})", v.name);
            }
        }
    }
}

/// The split counts that sum in the reduction kernel (past `IN_KERNEL_FIXUP_BYTES`: the K-heavy shapes) and the
/// DMMA rung's splits in FP64 (in the kernel and in the reduction kernel), at shapes whose every edge is ragged and at
/// aligned ones: C the same bits after 1 and 3 launches (workspace and counters reused) and right against the host at
/// sampled elements (FP32: its f64 sum; FP64: its Dot2 sum, within the FP64 tolerance).
#[test]
#[ignore = "needs a GPU"]
fn large_splits_and_the_dmma_rungs_splits_are_right_and_the_same_bits_every_launch() {
    use suite::experiments::matmul::{draw, multiply, Fixup, Packing, Schedule, Shape, VARIANTS};
    let gpu = gpu();
    let arch = gpu.device.props().arch.as_str().to_string();
    let mut rng = fastrand::Rng::with_seed(11);
    let samples = |shape: Shape| [(0, 0), (shape.m - 1, shape.n - 1), (shape.m / 2, shape.n / 3)];
    let mut fixups = std::collections::BTreeSet::new();
    for shape in [Shape { m: 200, n: 264, k: 8191 }, Shape { m: 256, n: 256, k: 16384 }] {
        let a: Vec<f32> = draw(&mut rng, shape.m * shape.k).unwrap();
        let b: Vec<f32> = draw(&mut rng, shape.k * shape.n).unwrap();
        for v in VARIANTS
            .iter()
            .filter(|v| v.schedule == Schedule::SplitK && v.f32 == suite::experiments::matmul::Instance::Yes)
        {
            for split in [Some(4), Some(24), None] {
                let plan = v.plan(shape, suite::precision::Precision::F32, 132, 3, split).unwrap();
                fixups.insert(format!("{:?}", plan.fixup));
                let once = multiply(&gpu, v, shape, &a, &b, split, Packing::Model, 1).unwrap();
                let thrice = multiply(&gpu, v, shape, &a, &b, split, Packing::Model, 3).unwrap();
                let differ = once.iter().zip(&thrice).filter(|(x, y)| x.to_bits() != y.to_bits()).count();
                assert_eq!(differ, 0, "{} at {shape}, split {split:?} ({:?})", v.name, plan.fixup);
                for (i, j) in samples(shape) {
                    let want: f64 =
                        (0..shape.k).map(|p| f64::from(a[i * shape.k + p]) * f64::from(b[p * shape.n + j])).sum();
                    let got = f64::from(once[i * shape.n + j]);
                    assert!(
                        (got - want).abs() <= 1e-4 * (shape.k as f64).sqrt(),
                        "{} at ({i}, {j}): {got} vs {want}",
                        v.name
                    );
                }
            }
        }
    }
    let dmma: Vec<_> = VARIANTS.iter().filter(|v| v.schedule == Schedule::GroupedSplitK).collect();
    assert_eq!(dmma.len(), 4);
    if dmma[0].problem_on(suite::precision::Precision::F64, &arch).is_some() {
        return; // no FP64 tensor cores here (AMD, or NVIDIA before sm_80): the FP32 part above is the test
    }
    // The last of these has more 64×64 tiles (324) than an H200 holds at once (264): its plan without a split asked
    // for splits the last wave's 60 tiles.
    let tail = dmma[2].plan(Shape { m: 1100, n: 1100, k: 256 }, suite::precision::Precision::F64, 132, 2, None);
    assert!(tail.unwrap().tail.is_some(), "{}", dmma[2].name);
    for shape in
        [Shape { m: 190, n: 130, k: 4097 }, Shape { m: 256, n: 256, k: 8192 }, Shape { m: 1100, n: 1100, k: 256 }]
    {
        let a: Vec<f64> = draw(&mut rng, shape.m * shape.k).unwrap();
        let b: Vec<f64> = draw(&mut rng, shape.k * shape.n).unwrap();
        let tolerance = 2.0 * (shape.k as f64).sqrt() * f64::EPSILON;
        for v in &dmma {
            for split in [Some(1), Some(2), Some(5), Some(24), None] {
                let Ok(plan) = v.plan(shape, suite::precision::Precision::F64, 132, 2, split) else {
                    continue; // more splits than K has slabs (K = 256 has 16)
                };
                fixups.insert(format!("{:?}", plan.fixup));
                let once = multiply(&gpu, v, shape, &a, &b, split, Packing::Model, 1).unwrap();
                let thrice = multiply(&gpu, v, shape, &a, &b, split, Packing::Model, 3).unwrap();
                let differ = once.iter().zip(&thrice).filter(|(x, y)| x.to_bits() != y.to_bits()).count();
                assert_eq!(differ, 0, "{} at {shape}, split {split:?} ({:?})", v.name, plan.fixup);
                for (i, j) in samples(shape) {
                    let want = suite::verify::dot2((0..shape.k).map(|p| (a[i * shape.k + p], b[p * shape.n + j])));
                    let got = once[i * shape.n + j];
                    let scale = want.abs().max((shape.k as f64).sqrt());
                    assert!(
                        (got - want).abs() <= tolerance * scale,
                        "{} split {split:?} at ({i}, {j}): {got} vs {want}",
                        v.name
                    );
                }
            }
        }
    }
    // Every place of the sum ran: none (DMMA's S = 1), in the kernel (FP32's S = 4) and in the reduction kernel.
    let all: Vec<String> = [Fixup::None, Fixup::InKernel, Fixup::Kernel].iter().map(|f| format!("{f:?}")).collect();
    assert!(all.iter().all(|f| fixups.contains(f)), "{fixups:?}");
}

#[test]
#[ignore = "needs a GPU"]
fn a_matmul_too_large_for_the_device_is_a_row_not_a_crash() {
    use suite::experiments::matmul::{MatmulSweep, Shape, VARIANTS};
    let gpu = gpu();
    let dir = tempfile::tempdir().unwrap();
    // 2^17 squared floats = 64 GiB per matrix: more than any current GPU holds four of.
    let sweep = MatmulSweep::new(vec![Shape::square(1 << 17)], &[VARIANTS[0].name], true);
    let opts = quick_run(dir.path(), false, 0.5);
    run_in_own_folder(&gpu, &sweep, &opts).unwrap();
    let rows = read_rows(&dir.path().join("matmul.csv")).unwrap();
    // The vendor BLAS and the one kernel.
    assert_eq!(rows.len(), 2);
    for row in rows {
        assert_eq!(row["status"], "invalid", "{row:?}");
        assert!(row["message"].contains("GiB"), "{row:?}");
    }
}

#[test]
#[ignore = "needs a GPU"]
fn a_point_estimated_past_the_limit_is_an_invalid_row_that_names_the_flag() {
    use suite::experiments::matmul::{MatmulSweep, Shape, VARIANTS};
    let gpu = gpu();
    let dir = tempfile::tempdir().unwrap();
    // The naive kernel at 20000: 1.6e13 FLOP at about 1% of the FP32 peak, minutes per launch on any GPU.
    let naive = VARIANTS.iter().find(|v| v.name == "naive").unwrap();
    let sweep = MatmulSweep::new(vec![Shape::square(20000)], &[naive.name], false);
    let started = std::time::Instant::now();
    let summary = run_in_own_folder(&gpu, &sweep, &quick_run(dir.path(), false, 0.5)).unwrap();
    assert!(started.elapsed().as_secs() < 30, "the point was run, not refused");
    assert_eq!((summary.invalid, summary.ok), (1, 0));
    let rows = read_rows(&dir.path().join("matmul.csv")).unwrap();
    let message = &rows[0]["message"];
    assert!(message.contains("over --max-point-seconds 60"), "{message}");
    assert!(message.contains("raise --max-point-seconds to run it"), "{message}");
}

#[test]
#[ignore = "needs a GPU"]
fn occupancy_sweeps_verify_and_record_timelines_of_every_wave() {
    use suite::experiments::occupancy::{
        phases, read_timeline, resident_over_time, timeline_file, OccupancySweep, BARRIER_CONFIGS, SPIN_TIMELINE,
    };
    let gpu = gpu();
    let dir = tempfile::tempdir().unwrap();
    // Small and odd sizes: partial groups everywhere.
    let sweep = OccupancySweep {
        elements: (1 << 20) + 77,
        group_sizes: vec![48, 96, 1000],
        chunk: 1000,
        passes: 3,
        // 4096: the smallest the four-per-item LDS kernel takes in groups of 256.
        lds_bytes: vec![4096, 40 * 1024],
        register_values: vec![16, 96],
        register_rounds: 3,
        ..OccupancySweep::default()
    };
    let opts = quick_run(dir.path(), false, 0.5);
    let summary = run_in_own_folder(&gpu, &sweep, &opts).unwrap();
    assert_eq!((summary.fail, summary.error), (0, 0), "{summary:?}");
    let rows = read_rows(&dir.path().join("occupancy.csv")).unwrap();
    for row in &rows {
        assert_eq!(row["status"], "ok", "{row:?}");
        if row["sweep"] != "copy" {
            let pct: f64 = row["occupancy_pct"].parse().unwrap();
            assert!(pct > 0.0 && pct <= 100.0, "{row:?}");
        }
    }
    let props = gpu.device.props();
    for config in BARRIER_CONFIGS {
        for variant in ["none", "barrier"] {
            let (records, hz, slots) = read_timeline(&dir.path().join(timeline_file(config.name, variant))).unwrap();
            let groups = (props.cu_count * config.groups_per_cu_quarters).div_ceil(4);
            assert_eq!(records.len() as u32, groups * props.wave_size.waves_for(config.group), "{}", config.name);
            assert!(hz > 1e6, "clock {hz} Hz");
            assert_eq!(slots, u64::from(props.max_items_per_cu / props.wave_size.0 * props.cu_count));
            let steps = resident_over_time(&records, None);
            assert_eq!(steps.last().unwrap().waves, 0);
            assert!(steps.iter().map(|s| u64::from(s.waves)).max().unwrap() <= slots);
        }
    }
    // The residency probe at 2.5 rounds: three plateaus, the last about half as full as the first two.
    let (records, _, _) = read_timeline(&dir.path().join(timeline_file(SPIN_TIMELINE, "spin"))).unwrap();
    let found = phases(&resident_over_time(&records, None), 0.05, 0.1);
    assert!(found.len() >= 2, "{found:?}");
    let (first, last) = (found[0].waves as f64, found[found.len() - 1].waves as f64);
    assert!(last < 0.75 * first, "{found:?}");
}

/// `smoke_spin` at a set duration: a kernel whose true time is known, to check the runner's timing against.
struct Spin<'g> {
    gpu: &'g Gpu,
    kernel: Kernel,
    ticks: u64,
}

impl Case for Spin<'_> {
    fn launch(&mut self) -> suite::device::Result<()> {
        self.gpu.device.launch(&self.kernel, &LaunchConfig::linear(1, 1), &[Arg::U64(self.ticks)])
    }
    fn verify(&mut self) -> Result<Verification, experiments::Error> {
        Ok(Verification { max_rel_err: 0.0, tolerance: 0.0, checked: 0, failures: 0, first_failures: Vec::new() })
    }
    fn work(&self) -> f64 {
        0.0
    }
}

/// Ticks per µs of `gpu_wall_clock()`: %globaltimer counts ns; CDNA's wall clock runs at 100 MHz.
fn clock_ticks_per_us(platform: Platform) -> f64 {
    match platform {
        Platform::Nvidia => 1000.0,
        Platform::Amd => 100.0,
    }
}

#[test]
#[ignore = "needs a GPU"]
fn the_runner_times_a_kernel_of_known_duration_within_5_percent_or_3_us() {
    let gpu = gpu();
    let dev = gpu.device.as_ref();
    let kernel = gpu.kernel("smoke", "smoke_spin").unwrap();
    let per_us = clock_ticks_per_us(dev.props().platform);
    let dir = tempfile::tempdir().unwrap();
    let mut misses = Vec::new();
    for timing in [Timing::Graph, Timing::Stream] {
        let opts = RunOptions { reps: 20, warmup: 3, timing, ..quick_run(dir.path(), false, 2.0) };
        for us in [5.0, 20.0, 100.0] {
            let mut spin = Spin { gpu: &gpu, kernel: kernel.clone(), ticks: (us * per_us) as u64 };
            // One launch alone, between its own events, for comparison: it includes the launch latency.
            let alone_us = f64::from(dev.time_ms(&mut || spin.launch()).unwrap()) * 1e3;
            let timed = experiments::time_case(dev, &mut spin, &opts).unwrap();
            let got = timed.stats.median_ms * 1e3;
            eprintln!(
                "spin {us:>5} µs: {got:8.3} µs per launch ({timing} asked, {} used, {} launches per rep, {} reps; \
                 one launch alone {alone_us:.3} µs)",
                timed.timing, timed.launches_per_rep, timed.stats.reps
            );
            let allowed = (0.05 * us).max(3.0);
            if (got - us).abs() > allowed {
                misses.push(format!("{timing}: {us} µs read {got:.3} µs (allowed ±{allowed})"));
            }
            if us <= 20.0 {
                assert!(timed.launches_per_rep > 1, "a {us} µs kernel must be timed in batches");
            }
            if dev.props().platform == Platform::Nvidia {
                assert_eq!(timed.timing, experiments::TimedBy::Device(timing), "{:?}", timed.note);
            }
        }
    }
    assert!(misses.is_empty(), "{}", misses.join("\n"));
}

#[test]
#[ignore = "needs a GPU"]
fn the_gap_between_back_to_back_kernels_is_measured_both_ways() {
    let gpu = gpu();
    let (stream, graph) = experiments::launch_gaps_us(&gpu).unwrap();
    eprintln!("empty kernel back to back: {stream:.3} µs per launch on the stream, graph {graph:?} µs");
    // A launch takes some time and, on any GPU of the last decade, far less than 50 µs back to back.
    assert!(stream > 0.1 && stream < 50.0, "stream gap {stream} µs");
    match gpu.device.props().platform {
        Platform::Nvidia => {
            let graph = graph.expect("CUDA graphs capture an empty kernel");
            assert!(graph > 0.1 && graph < 50.0, "graph gap {graph} µs");
        }
        Platform::Amd => assert_eq!(graph, None, "AMD has no graph bindings, so nothing can be captured"),
    }
}

/// The clock columns of a smoke run on the GPU are filled and plausible, `run.json` names the library with the
/// device's limits and a reading at the start and the end; with sampling off they are empty and `run.json` says
/// `off`. On the HIP-over-CUDA test runtime (AMD path on an NVIDIA GPU) no library reads the GPU: the columns are
/// empty and `run.json` says why.
#[test]
#[ignore = "needs a GPU"]
fn smoke_rows_carry_plausible_clocks_power_and_temperature() {
    use suite::report::csv::TELEMETRY_COLUMNS;
    let gpu = gpu();
    let props = gpu.device.props();
    let over_test_runtime = props.runtime_version.contains(suite::device::amd::TEST_RUNTIME_LABEL);
    // Points long enough for a few readings at the default 20 ms period: 20 repetitions of about 1 ms batches.
    let sweep = SmokeSweep { sizes: vec![1 << 22, 1 << 24, 1 << 26], group_size: 256 };
    let dir = tempfile::tempdir().unwrap();
    let on = RunOptions { reps: 20, warmup: 3, ..quick_run(&dir.path().join("on"), false, 2.0) };
    let summary = run_in_own_folder(&gpu, &sweep, &on).unwrap();
    assert_eq!((summary.ok, summary.fail, summary.error), (3, 0, 0));
    let run = suite::report::run_json::read(&on.out_dir).unwrap().expect("run.json");
    let telemetry = run.invocations[0].telemetry.clone().expect("a telemetry record");
    eprintln!("telemetry: {telemetry:?}");
    let rows = read_rows(&on.out_dir.join("smoke.csv")).unwrap();
    if over_test_runtime {
        assert!(telemetry.source.starts_with("not available: "), "{}", telemetry.source);
        assert!(rows.iter().all(|r| TELEMETRY_COLUMNS.iter().all(|c| r[*c].is_empty())), "{rows:?}");
        return;
    }
    let expected = match props.platform {
        Platform::Nvidia => "NVML ",
        Platform::Amd => "AMD SMI ",
    };
    assert!(telemetry.source.starts_with(expected), "{}", telemetry.source);
    assert_eq!(telemetry.period_ms, Some(20.0));
    let limits = telemetry.limits.clone().expect("limits");
    let max_mhz = f64::from(limits.max_sm_clock_mhz.expect("a maximum SM clock"));
    let power_limit = limits.power_limit_w.expect("a power limit");
    // Datasheet ranges of current GPUs: boost clocks 1 to 3 GHz, power limits 100 W to 1.5 kW.
    assert!((1000.0..=3000.0).contains(&max_mhz), "{limits:?}");
    assert!((100.0..=1500.0).contains(&power_limit), "{limits:?}");
    for reading in [telemetry.start.as_ref().expect("a start reading"), telemetry.end.as_ref().expect("an end reading")]
    {
        assert_eq!(reading.error, None, "{reading:?}");
        let sm = f64::from(reading.sm_clock_mhz.expect("an SM clock"));
        assert!(sm > 0.0 && sm <= 1.05 * max_mhz, "{reading:?}");
    }
    for row in &rows {
        let num = |c: &str| row[c].parse::<f64>().unwrap_or_else(|_| panic!("{c} = {:?} in {row:?}", row[c]));
        eprintln!(
            "{}: {} MHz, memory {} MHz, {} W, {} °C, throttled {} ({}), below steady clock {}, {} readings",
            row["key"],
            row["sm_clock_mhz"],
            row["mem_clock_mhz"],
            row["power_w"],
            row["temperature_c"],
            row["throttled"],
            row["throttle_reasons"],
            row["below_steady_clock"],
            row["telemetry_samples"]
        );
        // A GPU streaming a triad clocks up: above a third of its maximum, never above it by more than a step.
        let sm = num("sm_clock_mhz");
        assert!(sm > max_mhz / 3.0 && sm <= 1.05 * max_mhz, "SM clock {sm} MHz of {max_mhz}");
        assert!(num("mem_clock_mhz") > 100.0, "{row:?}");
        let power = num("power_w");
        assert!(power > 20.0 && power <= 1.2 * power_limit, "power {power} W, limit {power_limit} W");
        let temperature = num("temperature_c");
        assert!(temperature > 10.0 && temperature < 110.0, "{temperature} °C");
        assert!(["true", "false"].contains(&row["throttled"].as_str()), "{row:?}");
        assert!(["true", "false"].contains(&row["below_steady_clock"].as_str()), "{row:?}");
        assert!(!row["throttle_reasons"].is_empty(), "{row:?}");
        assert!(num("telemetry_samples") >= 2.0, "a reading at start and at stop at least: {row:?}");
    }
    // Sampling off: the same rows, the clock columns empty, run.json says so.
    let off = RunOptions { telemetry: false, out_dir: dir.path().join("off"), ..on.clone() };
    run_in_own_folder(&gpu, &sweep, &off).unwrap();
    let rows = read_rows(&off.out_dir.join("smoke.csv")).unwrap();
    assert!(rows.iter().all(|r| r["status"] == "ok" && TELEMETRY_COLUMNS.iter().all(|c| r[*c].is_empty())));
    let run = suite::report::run_json::read(&off.out_dir).unwrap().expect("run.json");
    assert_eq!(run.invocations[0].telemetry.as_ref().map(|t| t.source.as_str()), Some("off: --no-telemetry"));
}

/// Every fusion variant in FP32 and FP64 (the default precisions), fused, unfused, staged, hand-written and vendor
/// (sdot/sasum, ddot/dasum), at odd sizes: every point verifies against its host reference within its own
/// precision's tolerance (FP64's some 10⁹ times tighter than FP32's), FP64 rows read twice the bytes, and every
/// staged specialisation of both precisions was compiled.
#[test]
#[ignore = "needs a GPU"]
fn every_fusion_variant_verifies_at_odd_and_non_power_of_two_sizes() {
    use suite::experiments::fusion::{
        FusionSweep, COMPILE_CSV, MEASURES, OPERATIONS, PRECISIONS, RATIOS_CSV, VARIANTS,
    };
    let gpu = gpu();
    let dir = tempfile::tempdir().unwrap();
    // One element, a ragged group, the seed's smallest size, and 2^20 + 1 (one element past a power of two).
    let sizes = vec![1, 257, 1 << 15, (1 << 20) + 1];
    let sweep = FusionSweep { sizes: sizes.clone(), ..FusionSweep::default() };
    assert_eq!(sweep.precision, PRECISIONS, "the default runs both precisions");
    let summary = run_in_own_folder(&gpu, &sweep, &quick_run(dir.path(), false, 0.3)).unwrap();
    let rows = read_rows(&dir.path().join("fusion.csv")).unwrap();
    let per_size = 1 + OPERATIONS.len() * VARIANTS.len() * MEASURES.len();
    assert_eq!(rows.len(), PRECISIONS.len() * sizes.len() * per_size);
    for row in &rows {
        let f64 = row["precision"] == "f64";
        assert_eq!(row["key"].ends_with("/f64"), f64, "{row:?}");
        if row["operation"] == "sum" && row["variant"] == "unfused" {
            assert_eq!(row["status"], "invalid", "{row:?}");
            continue;
        }
        assert_eq!(row["status"], "ok", "{row:?}");
        let (err, tolerance) = (row["max_rel_err"].parse::<f64>().unwrap(), row["tolerance"].parse::<f64>().unwrap());
        assert!(err <= tolerance, "{row:?}");
        if row["operation"] != "copy" {
            // FP64's bound is in units of 2^-53: a reduction at these sizes stays below 1e-10 (FP32's is above 1e-7).
            assert_eq!(tolerance < 1e-10, f64, "{row:?}");
        }
        let n: u64 = row["elements"].parse().unwrap();
        let inputs = if row["operation"] == "dot" { 2 } else { 1 };
        let per_element = if row["operation"] == "copy" { 2 } else { inputs };
        assert_eq!(row["bytes_read"], (n * per_element * if f64 { 8 } else { 4 }).to_string(), "{row:?}");
        let timing = if row["measure"] == "end_to_end" { "host" } else { row["timing"].as_str() };
        assert_eq!(row["timing"], timing, "{row:?}");
    }
    assert_eq!(summary.fail + summary.error, 0);
    // Every staged specialisation was compiled (or found in the cache) once per operation, size and precision.
    let compiles = read_rows(&dir.path().join(COMPILE_CSV)).unwrap();
    assert_eq!(compiles.len(), PRECISIONS.len() * sizes.len() * OPERATIONS.len(), "{compiles:?}");
    assert_eq!(compiles.iter().filter(|r| r["precision"] == "f64").count(), sizes.len() * OPERATIONS.len());
    let ratios = std::fs::read_to_string(dir.path().join(RATIOS_CSV)).unwrap();
    assert!(ratios.contains("\ndot,f64,1048577,device,"), "{ratios}");
    for plot in ["fusion_speedup_dot_f64.png", "fusion_gbps_asum_f64.png", "fusion_precision.png"] {
        assert!(dir.path().join(plot).is_file(), "{plot}");
    }
}

/// The vendor's FP64 reductions through `Device::ddot` and `Device::dasum` (cuBLAS, or rocBLAS on AMD and over
/// the HIP-over-CUDA test runtime), result in device memory, at odd sizes: each matches the compensated host
/// reference within the fusion experiment's FP64 vendor tolerance, which an FP32 routine would miss by orders of
/// magnitude; and a result buffer of one float is refused before the call.
#[test]
#[ignore = "needs a GPU"]
fn vendor_ddot_and_dasum_match_a_compensated_host_reference() {
    use suite::experiments::fusion::element_sum_tolerance;
    use suite::patterns::{input, zip, Binary, Reduce, Unary};
    use suite::precision::Precision;
    let gpu = gpu();
    let dev = gpu.device.as_ref();
    let u = Precision::F64.unit_roundoff();
    for n in [1usize, 257, 65_537, (1 << 20) + 1] {
        let mut rng = fastrand::Rng::with_seed(n as u64);
        let x: Vec<f64> = (0..n).map(|_| rng.f64() * 2.0 - 1.0).collect();
        let y: Vec<f64> = (0..n).map(|_| rng.f64() * 2.0 - 1.0).collect();
        let (xb, yb, result) = (dev.upload(&x).unwrap(), dev.upload(&y).unwrap(), dev.alloc_buffer::<f64>(1).unwrap());
        // The vendor's order is unknown: the experiment's bound for it, at least 256 partial sums.
        let depth = (n as u64).div_ceil(256) + 2 * u64::from((n as u64).next_power_of_two().ilog2());
        for (what, program) in [
            ("ddot", zip(input(0), input(1)).map(Binary::Mul).reduce(Reduce::Add)),
            ("dasum", input(0).map(Unary::Abs).reduce(Reduce::Add)),
        ] {
            let program = program.with_element(Precision::F64);
            dev.fill_bytes(result.raw(), 0xff).unwrap();
            let (want, scale) = if what == "ddot" {
                dev.dot(Precision::F64, n, xb.raw(), yb.raw(), result.raw()).unwrap();
                program.reference(&[&x, &y])
            } else {
                dev.asum(Precision::F64, n, xb.raw(), result.raw()).unwrap();
                program.reference(&[&x])
            };
            let rounding = if what == "ddot" { u } else { 0.0 };
            let tolerance = element_sum_tolerance(Precision::F64, depth, rounding) + program.reference_error(n as u64);
            assert!(tolerance < 1e-10, "{what} n = {n}: {tolerance:e} is no FP64 tolerance");
            let got = dev.download(&result).unwrap();
            let check = verify::compare(&got, &[want], scale, tolerance);
            assert!(check.passed(), "{what} n = {n}: {}", check.summary());
        }
    }
    let float = dev.alloc_buffer::<f32>(1).unwrap();
    let x = dev.upload(&[1.0f64; 8]).unwrap();
    let dasum = dev.asum(Precision::F64, 8, x.raw(), float.raw());
    assert!(matches!(dasum, Err(Error::SizeMismatch { what: "dasum", .. })));
    let ddot = dev.dot(Precision::F64, 9, x.raw(), x.raw(), float.raw());
    assert!(matches!(ddot, Err(Error::SizeMismatch { what: "ddot", .. })));
}

/// A small PT sweep over every use case at odd sizes: every point verifies (no fail or error rows). The global
/// synchronisation points run at 1 and 3 groups per CU and the maximal launch, with a software barrier of five
/// arrival counters (uneven shares where the grid is not a multiple of five).
#[test]
#[ignore = "needs a GPU"]
fn pt_every_use_case_verifies_at_odd_sizes() {
    use suite::experiments::pt::{BarrierCounters, PerCu, PtSweep};
    let gpu = gpu();
    let dir = tempfile::tempdir().unwrap();
    let sweep = PtSweep {
        items: vec![1, 1000, 70_001],
        fmas: vec![1, 64],
        levels: vec![1, 5],
        inputs: vec![1, 77],
        sizes: vec![3, 1001, 300_007],
        jacobi_sizes: vec![3, 1001, 300_007],
        steps: vec![1, 7],
        queue_items: vec![5_003],
        queue_fmas: vec![4],
        chunks: vec![3],
        groups_per_cu: vec![PerCu::Groups(1), PerCu::Groups(3), PerCu::Max],
        barrier_counters: BarrierCounters::Fixed(5),
        ..PtSweep::default()
    };
    let summary = run_in_own_folder(&gpu, &sweep, &quick_run(dir.path(), false, 0.2)).unwrap();
    let rows = read_rows(&dir.path().join("pt.csv")).unwrap();
    let bad: Vec<String> = rows
        .iter()
        .filter(|r| r["status"] != "ok")
        .map(|r| format!("{} {}: {}", r["status"], r["key"], r["message"]))
        .collect();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    assert_eq!((summary.fail, summary.error, summary.invalid), (0, 0, 0));
    assert!(summary.ok > 100, "{summary:?}");
    assert!(rows.iter().all(|r| r["wave_size"] == gpu.device.props().wave_size.0.to_string()));
    assert!(dir.path().join("pt-speedup.csv").exists() && dir.path().join("pt-sync-ci.png").exists());
    assert!(rows
        .iter()
        .any(|r| r["use_case"] == "barrier" && r["barrier_counters"].parse::<u32>().is_ok_and(|c| c > 1)));
    assert!(dir.path().join("pt-barrier-n1001.png").exists());
}

/// The maximal launch from the runtime's occupancy query equals the suite's calculator on NVIDIA, for every PT
/// kernel.
#[test]
#[ignore = "needs a GPU"]
fn pt_maximal_launch_agrees_with_the_calculator() {
    use suite::experiments::pt::{maximal_launch, SOURCE};
    let gpu = gpu();
    let props = gpu.device.props();
    let mut names: Vec<String> =
        ["pt_reduce_pt", "pt_chain_pt", "pt_jacobi_coop", "pt_jacobi_soft", "pt_barrier_coop", "pt_barrier_soft"]
            .map(String::from)
            .to_vec();
    for f in [1, 4, 16, 64, 256] {
        names.extend([format!("pt_sync_pt_ci_f{f}"), format!("pt_sync_pt_cmi_f{f}"), format!("pt_forest_pt_f{f}")]);
    }
    for name in names {
        let kernel = gpu.kernel(SOURCE, &name).unwrap();
        let (runtime, calc) = maximal_launch(&gpu, &kernel).unwrap();
        assert!(runtime >= props.cu_count, "{name}: {runtime}");
        eprintln!("{name}: maximal launch {runtime} (calculator {calc:?}), {:?}", kernel.attrs);
        if props.platform == Platform::Nvidia {
            assert_eq!(Some(runtime), calc, "{name}");
        }
    }
}

/// A software grid barrier that one group never reaches times out on the device and becomes an error, not a hang,
/// with one arrival counter and with eight (the missing group's counter never completes); a grid larger than the
/// co-resident one is refused before any launch, for both barriers, with work and alone.
#[test]
#[ignore = "needs a GPU"]
fn pt_barrier_timeouts_are_errors_and_oversized_grids_are_refused() {
    use suite::experiments::pt::{
        maximal_launch, BarrierCase, BarrierCounters, JacobiCase, SoftBarrier, Variant, SOURCE,
    };
    use suite::experiments::Clock;
    let gpu = gpu();
    let short = |k| SoftBarrier { spin_limit: 1 << 16, counters: BarrierCounters::Fixed(k) };
    for counters in [1, 8] {
        let started = std::time::Instant::now();
        let mut case =
            JacobiCase::new(&gpu, Variant::PtSoft, 10_000, 5, None, short(counters), 0, Clock::Host).unwrap();
        case.launch().unwrap();
        gpu.device.synchronize().unwrap();
        let err = case.verify().map(|v| v.summary()).unwrap_err().to_string();
        assert!(err.contains("timed out"), "{counters}: {err}");
        assert!(started.elapsed().as_secs() < 60, "the timeout took {:?}", started.elapsed());
    }
    // The device is still usable: the same case without the missing group verifies.
    let barrier = SoftBarrier { spin_limit: 1 << 22, counters: BarrierCounters::Fixed(8) };
    let mut good = JacobiCase::new(&gpu, Variant::PtSoft, 10_000, 5, None, barrier, u32::MAX, Clock::Host).unwrap();
    good.launch().unwrap();
    gpu.device.synchronize().unwrap();
    assert!(good.verify().unwrap().passed());
    for (variant, name) in [(Variant::PtSoft, "pt_jacobi_soft"), (Variant::PtCoop, "pt_jacobi_coop")] {
        let (max, _) = maximal_launch(&gpu, &gpu.kernel(SOURCE, name).unwrap()).unwrap();
        let err = JacobiCase::new(&gpu, variant, 10_000, 5, Some(max + 1), short(1), u32::MAX, Clock::Host)
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(err.contains("resident at once"), "{err}");
    }
    for (variant, name) in [(Variant::PtSoft, "pt_barrier_soft"), (Variant::PtCoop, "pt_barrier_coop")] {
        let (max, _) = maximal_launch(&gpu, &gpu.kernel(SOURCE, name).unwrap()).unwrap();
        let err = BarrierCase::new(&gpu, variant, 5, Some(max + 1), short(1)).map(|_| ()).unwrap_err().to_string();
        assert!(err.contains("resident at once"), "{err}");
    }
}
