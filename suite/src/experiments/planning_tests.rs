//! Whole sweeps planned on a planning device (`suite run --dry-run`, [`crate::planning`]): every
//! experiment's quick preset on an MI250X GCD from the real gfx90a code objects, and on an H200 from the cubins. These tests live here rather than beside the planning device because the
//! layers below the experiments do not reach up into them (`tests/layout.rs`).

use std::path::PathBuf;

use super::entry::Sweep;
use super::occupancy::{group_counts, OccupancySweep};
use super::pt::PtSweep;
use super::registry::EXPERIMENTS;
use super::{plan, Experiment, Planned, RunOptions};
use crate::code_objects::test_support::compiler;
use crate::device::Timing;
use crate::gpu::Gpu;
use crate::planning::{part, Part};

/// `suite run`'s defaults.
fn options() -> RunOptions {
    RunOptions {
        out_dir: PathBuf::new(),
        resume: false,
        shard: None,
        warmup: 3,
        reps: 20,
        time_budget_s: 2.0,
        timing: Timing::Graph,
        max_point_s: 60.0,
        telemetry: true,
    }
}

/// A plan of `key`, with its compiler present (a missing one fails the test saying what to install).
fn planned(key: &str) -> (Gpu, &'static Part) {
    let part = part(key).unwrap_or_else(|e| panic!("{e}"));
    compiler(part.arch().platform());
    (crate::planning::gpu(part, None), part)
}

/// `exp` planned on the plan's device.
fn plan_of(gpu: &Gpu, exp: Box<dyn Experiment>) -> Vec<Planned> {
    plan(gpu, exp.as_ref(), &options()).unwrap()
}

/// A point's value in the column called `column`.
fn param<'p>(exp: &dyn Experiment, p: &'p Planned, column: &str) -> &'p str {
    let i =
        exp.results().param_columns().iter().position(|c| *c == column).unwrap_or_else(|| panic!("no column {column}"));
    &p.point.params[i]
}

/// Words of the reasons a point is invalid for when the plan, not the sweep, is at fault: a refusal of the planning
/// device, a kernel the code object lacks, a code object that could not be made.
const PLAN_FAULTS: [&str; 6] = [
    "on a plan of",
    "known only to the",
    "is not in the module",
    "kernel compiler found",
    "no prebuilt code object",
    "compiling kernel source",
];

#[test]
fn every_quick_preset_plans_on_an_mi250x_gcd_from_its_code_objects() {
    let (gpu, part) = planned("mi250x-gcd");
    for entry in EXPERIMENTS {
        let planned = plan_of(&gpu, (entry.quick)());
        assert!(!planned.is_empty(), "{}: an empty plan", entry.name);
        for p in &planned {
            if let Some(why) = &p.point.invalid {
                let fault = PLAN_FAULTS.iter().find(|f| why.contains(*f));
                assert!(fault.is_none(), "{} on {}: {} is invalid: {why}", entry.name, part.name, p.point.key);
            }
        }
        let valid = planned.iter().filter(|p| p.point.invalid.is_none()).count();
        assert!(valid > 0, "{}: no point of the quick preset would run", entry.name);
        // What runs is estimated; what does not takes no time.
        for p in &planned {
            assert_eq!(p.point.invalid.is_none(), p.estimate_s > 0.0, "{}: {}", entry.name, p.point.key);
        }
    }
}

#[test]
fn pt_plans_its_maximal_launches_from_the_occupancy_calculator() {
    let (gpu, _) = planned("mi250x-gcd");
    let exp: Box<dyn Experiment> = Box::new(PtSweep::quick());
    let planned = plan_of(&gpu, Box::new(PtSweep::quick()));
    let with_launch: Vec<&Planned> =
        planned.iter().filter(|p| !param(exp.as_ref(), p, "max_groups").is_empty()).collect();
    assert!(
        with_launch.len() > planned.len() / 2,
        "{} of {} points have a maximal launch",
        with_launch.len(),
        planned.len()
    );
    for p in with_launch {
        // The device's answer is the calculator's: the `max_groups` and `calc_groups` columns agree, and each is a
        // whole number of groups per CU (1 to 8 groups of 256 items on 110 CUs of 32 wave slots).
        let max: u32 = param(exp.as_ref(), p, "max_groups").parse().unwrap();
        assert_eq!(param(exp.as_ref(), p, "calc_groups"), max.to_string(), "{}", p.point.key);
        assert!(max.is_multiple_of(110) && (110..=8 * 110).contains(&max), "{}: {max}", p.point.key);
    }
}

#[test]
fn occupancy_plans_its_group_counts_around_the_resident_capacity() {
    let (gpu, _) = planned("mi250x-gcd");
    let sweep = OccupancySweep::quick();
    let chunks = gpu.kernel("occupancy", "occupancy_chunks").unwrap();
    let per_cu = gpu.device.occupancy_groups_per_cu(&chunks, sweep.count_group_size, 0).unwrap();
    // Groups of 512 items are 8 waves: at most 4 on a CU's 32 wave slots, so the counts differ from one per CU's.
    assert!((2..=4).contains(&per_cu), "{per_cu} groups of {} per CU", sweep.count_group_size);
    let want = group_counts(110, Some(per_cu));
    assert_ne!(want, group_counts(110, None));
    let planned = plan_of(&gpu, Box::new(sweep));
    let counts: Vec<u32> = planned
        .iter()
        .filter_map(|p| p.point.key.strip_prefix("group_count_spin/groups="))
        .map(|rest| rest.split(',').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(counts, want);
}

/// An NVIDIA plan counts every point from the cubins' register counts, as the node would: no point of any quick
/// preset is invalid for a fault of the plan (pt's maximal launches, occupancy's group counts included).
#[test]
fn an_nvidia_plan_counts_its_kernels_from_the_cubins() {
    let (gpu, part) = planned("h200");
    for entry in EXPERIMENTS {
        let planned = plan_of(&gpu, (entry.quick)());
        for p in &planned {
            if let Some(why) = &p.point.invalid {
                let fault = PLAN_FAULTS.iter().find(|f| why.contains(*f));
                assert!(fault.is_none(), "{} on {}: {} is invalid: {why}", entry.name, part.name, p.point.key);
            }
            assert_eq!(p.point.invalid.is_none(), p.estimate_s > 0.0, "{}: {}", entry.name, p.point.key);
        }
    }
    // pt's maximal launches are planned: each PT kernel's point is valid.
    let sweep = PtSweep::quick();
    let planned = plan_of(&gpu, Box::new(sweep));
    let pt_kernels = planned
        .iter()
        .filter(|p| p.point.spec.downcast_ref::<crate::experiments::pt::Spec>().unwrap().pt_kernel().is_some())
        .count();
    assert!(pt_kernels > 0 && planned.iter().all(|p| p.point.invalid.is_none()), "{pt_kernels}");
}

#[test]
fn matmul_chooses_its_amd_default_set_from_the_code_objects_built() {
    use super::matmul::{fit, DeviceSet, MatmulSweep};
    use crate::precision::Precision;
    let (gpu, _) = planned("mi250x-gcd");
    let set = DeviceSet::of(&gpu).unwrap().expect("an AMD device settles its set");
    assert!(set.origin.starts_with("chosen from the code objects built for gfx90a"), "{}", set.origin);
    assert!(set.origin.contains("compiler: "), "{}", set.origin);
    // Every kernel of the set fits by the rule, read from the same code object; the rest are left out with reasons.
    let profile = crate::occupancy_calculator::Profile::from_props(gpu.device.props()).unwrap();
    for (precision, names) in [(Precision::F32, &set.f32), (Precision::F64, &set.f64)] {
        for name in names {
            let v =
                super::matmul::VARIANTS.iter().find(|v| v.name == name.as_str() || v.family == name.as_str()).unwrap();
            if v.problem_on(precision, "gfx90a").is_some() {
                // The table's rungs that cannot run here keep their row (DMMA on AMD).
                assert_eq!(v.family, "dmma", "{name}");
                continue;
            }
            let c = fit::Candidate::of(v, precision);
            let meta: Vec<_> =
                c.symbols.iter().map(|s| gpu.amd_kernel_meta(v.source, s).unwrap().expect("in the object")).collect();
            let fit = fit::choose(&[c], &meta, &profile);
            assert_eq!(fit.names(), [name.as_str()], "{precision:?}: {:?}", fit.left_out);
        }
    }
    assert!(set.f32.iter().any(|n| n == "mfma_128x128x8_t256"), "{:?}", set.f32);
    assert!(set.f64.iter().any(|n| n == "mfma_128x128x8_t512"), "{:?}", set.f64);
    assert!(set.f64.iter().any(|n| n.starts_with("dmma")), "{:?}", set.f64);
    // NVIDIA's register-hungry shapes are left out on gfx90a, each with its precision and reason.
    assert!(
        set.left_out
            .iter()
            .any(|l| l.starts_with("FP32: double_buffer: matmul_double_buffer") && l.contains("occupancy")),
        "{:?}",
        set.left_out
    );
    // The run takes the settled sweep: its options name the set, where it came from and what was left out.
    let sweep = MatmulSweep::quick();
    let settled = sweep.on_device(&gpu).unwrap().expect("settled on AMD");
    let options = settled.options(gpu.device.props());
    assert_eq!(options["default_set"], serde_json::json!(set.origin));
    assert_eq!(options["notes"].as_array().unwrap().len(), set.left_out.len());
    // The quick preset names its kernels, so only the autotune step takes the set: its FP32 rows in the plan match.
    // Without --kernels, the sweep's kernels are the set.
    let full: Box<dyn Experiment> = Box::new(MatmulSweep::default());
    let points = plan_of(&gpu, MatmulSweep::default().on_device(&gpu).unwrap().unwrap());
    let variants = &super::matmul::VARIANTS;
    let kernels: std::collections::BTreeSet<&str> = points
        .iter()
        .map(|p| param(full.as_ref(), p, "kernel"))
        .filter(|k| variants.iter().any(|v| v.name == *k))
        .collect();
    let sets: Vec<&str> = set.f32.iter().chain(&set.f64).map(String::as_str).collect();
    for k in &kernels {
        let family = variants.iter().find(|v| v.name == *k).unwrap().family;
        assert!(sets.contains(k) || sets.contains(&family), "{k} is not in the set {sets:?}");
    }
    for n in sets.iter().filter(|n| variants.iter().any(|v| v.name == **n)) {
        assert!(kernels.contains(n), "{n} of the set is not planned: {kernels:?}");
    }
    // NVIDIA keeps its table.
    let (nvidia, _) = planned("h100-sxm");
    assert!(DeviceSet::of(&nvidia).unwrap().is_none());
}

/// Issue 36: fusion's generated and staged kernels are compiled together before its first point
/// ([`Gpu::compile_specialised`]): the objects are the store's own, each one's cost goes to its first use (and
/// only that one), and nothing is compiled twice.
#[test]
fn fusions_specialisations_are_got_together_and_each_cost_goes_to_its_first_use() {
    use super::fusion::FusionSweep;
    use crate::code_objects::{cubin_kernel_names, DeviceShape};
    let (gpu, _) = planned("h200");
    let specs: Vec<_> =
        FusionSweep::quick().specialisations(DeviceShape::of(gpu.device.props())).into_iter().take(3).collect();
    assert_eq!(specs.len(), 3);
    gpu.compile_specialised(&specs).unwrap();
    for spec in &specs {
        let store = crate::code_objects::KernelStore::new(None);
        let object = store.specialised(&spec.source(), &gpu.device.props().arch, &spec.defines).unwrap();
        let symbol = cubin_kernel_names(&object.bytes).unwrap().remove(0);
        let (kernel, cost) = gpu.specialised_kernel(&spec.source(), &spec.defines, &symbol).unwrap();
        assert_eq!(kernel.name, symbol);
        let cost = cost.expect("the first use gets the cost of the object got ahead of it");
        assert!(cost.object_ms > 0.0, "{cost:?}");
        let (_, again) = gpu.specialised_kernel(&spec.source(), &spec.defines, &symbol).unwrap();
        assert_eq!(again, None, "a second use costs nothing");
        assert!(gpu.holds(&spec.source(), &spec.defines));
    }
    // Got again: nothing to do, and no cost handed out twice.
    gpu.compile_specialised(&specs).unwrap();
    let spec = &specs[0];
    let object = crate::code_objects::KernelStore::new(None)
        .specialised(&spec.source(), &gpu.device.props().arch, &spec.defines)
        .unwrap();
    let symbol = cubin_kernel_names(&object.bytes).unwrap().remove(0);
    assert_eq!(gpu.specialised_kernel(&spec.source(), &spec.defines, &symbol).unwrap().1, None);
}

/// The cold compile of fusion's full sweep for an H200 (nvcc), one after the other as the points used to get them
/// and together as they are got now, each into an empty cache; the objects must be the same bytes. Prints both
/// times: `cargo test --release -p suite --lib fusion_full_sweep_cold_compiles -- --ignored --nocapture`.
#[test]
#[ignore = "a benchmark: compiles fusion's full sweep twice (minutes on a two-core machine)"]
fn fusion_full_sweep_cold_compiles() {
    use super::fusion::FusionSweep;
    use crate::code_objects::{DeviceShape, KernelStore};
    let (gpu, _) = planned("h200");
    let arch = gpu.device.props().arch.clone();
    let specs = FusionSweep::default().specialisations(DeviceShape::of(gpu.device.props()));
    let sources: Vec<_> = specs.iter().map(|s| s.source()).collect();
    let dir = tempfile::tempdir().unwrap();
    let one_by_one = KernelStore::with_cache_dir(None, dir.path().join("one-by-one"));
    let started = std::time::Instant::now();
    let first: Vec<Vec<u8>> = sources
        .iter()
        .zip(&specs)
        .map(|(source, s)| one_by_one.specialised(source, &arch, &s.defines).unwrap().bytes)
        .collect();
    let sequential_s = started.elapsed().as_secs_f64();
    let together = KernelStore::with_cache_dir(None, dir.path().join("together"));
    let items: Vec<_> = sources.iter().zip(&specs).map(|(source, s)| (source, s.defines.as_slice())).collect();
    let started = std::time::Instant::now();
    let second: Vec<Vec<u8>> =
        together.specialised_all(&items, &arch).into_iter().map(|(object, _)| object.unwrap().bytes).collect();
    let parallel_s = started.elapsed().as_secs_f64();
    assert_eq!(first, second, "the objects differ");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "fusion full sweep, {} specialisations for sm_90: one after the other {sequential_s:.1} s, together on {cores} \
         cores {parallel_s:.1} s",
        specs.len()
    );
}
