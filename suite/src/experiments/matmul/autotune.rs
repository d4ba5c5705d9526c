//! The autotune step: at every size, the fastest of a set of candidate kernels (and split counts) that verify,
//! picked by measurement ([`autotune_candidates`], [`autotune_pick`]) and measured as a row of its own.

use std::rc::Rc;

use super::cases::{device_plan, AutotuneCase, Element, Inputs, KernelCase};
use super::ladder::{point_problem, GroupLimits, Schedule, Variant, MIN_SLABS_PER_SPLIT};
use super::pack::Packing;
use super::shape::Shape;
use crate::experiments::{Case, Error};
use crate::gpu::Gpu;
use crate::options::Memory;
use crate::precision::Precision;

/// The name of the autotune rows in the `kernel` column.
pub const AUTOTUNE: &str = "autotune";

/// One candidate of the autotune step: a kernel, its split count (`None`: its plan's own) and whether it packs A and
/// B.
pub type Candidate = (&'static Variant, Option<u32>, Packing);

/// The autotune step's candidates on `arch` in `precision` among `kernels`, the device's default set (chosen from its
/// code objects on AMD, else its row of `ARCH_DEFAULTS`): those that have an instance in `precision` there, whose
/// schedule is deterministic and whose family goes beyond the seed's ladder (double_buffer, splitk, streamk, and the
/// matrix rungs: DMMA in FP64 on NVIDIA, MFMA on CDNA), each split-K kernel once per split
/// count of [`AUTOTUNE_SPLITS`] that fits `shape` (and unsplit where no double_buffer kernel runs its tile) (a split count that gives more than [`AUTOTUNE_MAX_GROUPS_PER_CU`]
/// groups per CU, or ranges under 4 slabs, is left out). Whatever `--kernels` says: the step answers "how fast can a
/// hand kernel of this suite be here", not "which of the kernels asked for". (The pick's row says its unit: a DMMA
/// or MFMA pick is the matrix units, the others the vector units.) Where a kernel may pack A and B
/// ([`Variant::can_pack`]: FP32 rows that are not 16-byte aligned), each of its candidates is tried both ways, the
/// `_unaligned` twin and the `_packed` one with its copy.
pub fn autotune_candidates(
    kernels: &[&'static Variant],
    arch: &str,
    shape: Shape,
    cus: u32,
    precision: Precision,
) -> Vec<Candidate> {
    let mut out = Vec::new();
    let usable = |v: &&Variant| AUTOTUNE_FAMILIES.contains(&v.family) && v.problem_on(precision, arch).is_none();
    // Whether a double_buffer kernel among `kernels` runs the same tile, slab and group as the split-K kernel `v`, so
    // that its row is `v` unsplit.
    let has_unsplit_twin = |v: &Variant| {
        kernels
            .iter()
            .filter(|t| usable(t))
            .any(|t| t.schedule == Schedule::Tiles && t.block == v.block && t.slab_k == v.slab_k && t.group == v.group)
    };
    for &v in kernels.iter().filter(|v| usable(v)) {
        match v.schedule {
            Schedule::SplitK | Schedule::GroupedSplitK => {
                // A split-K shape with no such twin is tried unsplit too: 64x96 in 64 items, which has none, was
                // the fastest kernel at 5000³ unsplit (docs/matmul.md, "Fourth round").
                if v.schedule == Schedule::SplitK && !has_unsplit_twin(v) {
                    out.push((v, Some(1)));
                }
                let (tx, ty) = v.tiles(shape);
                let slabs = shape.k.div_ceil(v.slab_k as usize) as u64;
                // A split-K kernel's S = 1 is its double_buffer twin's row; the DMMA rung has no such twin, and its
                // plan without a split asked for may split its last wave's tiles (ladder::tail_split).
                if v.schedule == Schedule::GroupedSplitK {
                    out.extend([(v, Some(1)), (v, None)]);
                }
                for &s in AUTOTUNE_SPLITS {
                    let groups = tx * ty * u64::from(s);
                    if groups <= AUTOTUNE_MAX_GROUPS_PER_CU * u64::from(cus)
                        && u64::from(s) * MIN_SLABS_PER_SPLIT <= slabs
                    {
                        out.push((v, Some(s)));
                    }
                }
            }
            Schedule::SplitKAtomic => {}
            Schedule::Tiles | Schedule::StreamK => out.push((v, None)),
        }
    }
    out.into_iter()
        .flat_map(|(v, split)| {
            let both = v.can_pack(shape, precision);
            let ways: &[Packing] = if both { &[Packing::Never, Packing::Always] } else { &[Packing::Never] };
            ways.iter().map(move |&packing| (v, split, packing))
        })
        .collect()
}

/// Families the autotune step picks from.
const AUTOTUNE_FAMILIES: &[&str] = &["double_buffer", "splitk", "streamk", "dmma", "mfma"];

/// Split counts the autotune step tries for each split-K kernel (1 is the double_buffer kernel of the same shape),
/// up to [`super::ladder::MAX_SPLIT_K`]: the large ones are for K-heavy shapes (256×256×16384 has 8 tiles of 64×128).
pub const AUTOTUNE_SPLITS: &[u32] = &[2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 48, 64];

/// Most groups per CU a split-K candidate may launch: past that every group is resident only in a later wave, and the
/// split adds partial tiles for nothing (the sizes that need no split are left to double_buffer).
const AUTOTUNE_MAX_GROUPS_PER_CU: u64 = 4;

/// Which candidate the autotune step picks: the fastest median among those that verified (`None`: a candidate that
/// failed verification or could not run), the first of equal ones. `None` when none verified.
pub fn autotune_pick(median_ms: &[Option<f64>]) -> Option<usize> {
    median_ms
        .iter()
        .enumerate()
        .filter_map(|(i, t)| t.filter(|t| t.is_finite() && *t > 0.0).map(|t| (i, t)))
        .fold(None, |best: Option<(usize, f64)>, (i, t)| match best {
            Some((_, b)) if b <= t => best,
            _ => Some((i, t)),
        })
        .map(|(i, _)| i)
}

/// Time each autotune candidate may take to be timed (its first launches and 3 repetitions of a batch).
const AUTOTUNE_BUDGET_S: f64 = 0.05;

/// The autotune step at one shape: every candidate ([`autotune_candidates`]) is prepared, launched and verified at
/// every element, and those that verify are timed the way rows are (batches of launches, median of 3), briefly;
/// the fastest ([`autotune_pick`]) is prepared again and becomes the row, which the runner verifies and times like
/// any other. A candidate that cannot be planned, allocated or launched counts as not verified.
pub(super) fn autotune<'g, T: Element>(
    gpu: &'g Gpu,
    inputs: Rc<Inputs<T>>,
    candidates: Vec<Candidate>,
) -> Result<AutotuneCase<'g, T>, Error> {
    let props = gpu.device.props();
    let dev = gpu.device.as_ref();
    let shape = inputs.shape;
    let precision = T::PRECISION;
    let limits = GroupLimits { items: props.max_group_size, lds_bytes: props.lds_bytes_per_group_optin };
    let memory = Memory::of(props.memory_bytes);
    let opts = crate::experiments::RunOptions {
        out_dir: std::path::PathBuf::new(),
        resume: false,
        shard: None,
        warmup: 1,
        reps: 3,
        time_budget_s: AUTOTUNE_BUDGET_S,
        timing: crate::device::Timing::Graph,
        // Not read by the timer: the step itself was estimated and allowed as a point.
        max_point_s: f64::INFINITY,
        // Not read either: autotune's trials are timed by `time_case`, which samples nothing.
        telemetry: false,
    };
    let trial = |v: &'static Variant, split: Option<u32>, packing| -> Result<Option<f64>, Error> {
        let Ok(plan) = device_plan(gpu, v, shape, precision, split, packing) else { return Ok(None) };
        if point_problem(shape, precision, Some(v), limits, &memory, plan.workspace_bytes()).is_some() {
            return Ok(None);
        }
        let mut case = KernelCase::new(gpu, inputs.clone(), v, plan)?;
        case.launch()?;
        dev.synchronize()?;
        if !case.verify()?.passed() {
            return Ok(None);
        }
        Ok(Some(crate::experiments::time_case(dev, &mut case, &opts)?.stats.median_ms))
    };
    let times: Vec<Option<f64>> =
        candidates.iter().map(|&(v, split, packing)| trial(v, split, packing).unwrap_or(None)).collect();
    let Some(best) = autotune_pick(&times) else {
        return Err(Error::Unsupported(format!(
            "autotune: none of the {} candidates at {shape} verified (or could run)",
            candidates.len()
        )));
    };
    let (v, split, packing) = candidates[best];
    let plan = device_plan(gpu, v, shape, precision, split, packing).map_err(Error::Unsupported)?;
    Ok(AutotuneCase { inner: KernelCase::new(gpu, inputs, v, plan)?, pick: v })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::matmul::rungs::VARIANTS;
    use crate::experiments::matmul::selection::default_kernels;

    /// The table's default set for `arch` in `precision` (what a device without AMD metadata uses).
    fn table(arch: &str, precision: Precision) -> Vec<&'static Variant> {
        default_kernels(arch, precision, &[]).unwrap()
    }

    #[test]
    fn autotune_candidates_split_only_where_the_grid_is_small() {
        let names = |arch: &str, shape: Shape| -> Vec<String> {
            autotune_candidates(&table(arch, Precision::F32), arch, shape, 132, Precision::F32)
                .iter()
                .map(|(v, s, _)| s.map_or_else(|| v.name.to_string(), |s| format!("{}/{s}", v.name)))
                .collect()
        };
        let small = names("sm_90", Shape::square(512));
        // Every double_buffer and streamk shape once, split-K with the split counts that fit, no atomics.
        for v in VARIANTS.iter().filter(|v| v.family == "double_buffer" || v.family == "streamk") {
            assert_eq!(small.iter().filter(|n| *n == v.name).count(), 1, "{}: {small:?}", v.name);
        }
        assert!(small.contains(&"splitk_128x64x16_t128/4".to_string()), "{small:?}");
        // 512/16 = 32 slabs: at most 8 ranges of 4.
        assert!(small.contains(&"splitk_128x64x16_t128/8".to_string()), "{small:?}");
        assert!(!small.iter().any(|n| n.starts_with("splitk_atomic")), "{small:?}");
        // 8192²: every split-K grid would exceed 4 groups per CU; the shapes without a double_buffer twin run
        // unsplit, the others are their twin's row.
        let large = names("sm_90", Shape::square(8192));
        let split_k: Vec<&String> = large.iter().filter(|n| n.starts_with("splitk")).collect();
        assert_eq!(
            split_k,
            ["splitk_128x64x16_t128/1", "splitk_128x128x8_t128/1", "splitk_64x96x16_t64/1"]
                .map(String::from)
                .iter()
                .collect::<Vec<_>>(),
            "{large:?}"
        );
        assert!(large.contains(&"double_buffer".to_string()) && large.contains(&"streamk_128x128x8_t128".to_string()));
        // gfx90a's table picks among its wave64 shapes and the MFMA rung.
        let cdna = names("gfx90a", Shape::square(512));
        assert!(cdna.iter().all(|n| n.contains("t512") || n == "mfma_128x128x8_t256"), "{cdna:?}");
        assert!(cdna.iter().any(|n| n.starts_with("splitk_128x128x8_t512/")), "{cdna:?}");
        // FP32 has no DMMA candidate; FP64 on sm_90 has the three DMMA shapes and only shapes with an FP64
        // instance; on gfx90a no DMMA (it does not exist there).
        assert!(!small.iter().any(|n| n.starts_with("dmma")), "{small:?}");
        let f64_names = |arch: &str, shape: Shape| -> Vec<String> {
            autotune_candidates(&table(arch, Precision::F64), arch, shape, 132, Precision::F64)
                .iter()
                .map(|(v, s, _)| s.map_or_else(|| v.name.to_string(), |s| format!("{}/{s}", v.name)))
                .collect()
        };
        let hopper = f64_names("sm_90", Shape::square(4096));
        assert_eq!(hopper.iter().filter(|n| n.starts_with("dmma_")).count(), 8, "{hopper:?}");
        assert!(hopper.contains(&"dmma_64x64x16_t128".to_string()), "the plan that may split a tail: {hopper:?}");
        assert!(hopper.contains(&"dmma_128x128x16_t256/1".to_string()), "{hopper:?}");
        // A K-heavy shape: few tiles, many slabs, so the split counts go up to MAX_SPLIT_K, the DMMA rung's too.
        let k_heavy = Shape { m: 256, n: 256, k: 16384 };
        let deep = names("sm_90", k_heavy);
        assert!(deep.contains(&"splitk_64x128x16_t128/48".to_string()), "{deep:?}");
        assert!(deep.contains(&"splitk_64x128x16_t128/64".to_string()), "{deep:?}");
        let deep64 = f64_names("sm_90", k_heavy);
        for want in ["dmma_128x64x16_t128/1", "dmma_128x64x16_t128/32", "dmma_64x64x16_t128/16"] {
            assert!(deep64.contains(&want.to_string()), "{want}: {deep64:?}");
        }
        // 4 groups per CU at most: 8 tiles of 128×64 split 64 ways would be 512 groups, under 4·132.
        assert!(!deep64.contains(&"dmma_64x64x16_t128/64".to_string()), "16 tiles x 64 > 528: {deep64:?}");
        for (v, _, _) in
            autotune_candidates(&table("sm_90", Precision::F64), "sm_90", Shape::square(512), 132, Precision::F64)
        {
            assert_eq!(v.problem_on(Precision::F64, "sm_90"), None, "{}", v.name);
        }
        assert!(!hopper.contains(&"double_buffer".to_string()), "ACC 128 has no FP64 instance: {hopper:?}");
        let cdna = f64_names("gfx90a", Shape::square(512));
        assert!(!cdna.is_empty() && !cdna.iter().any(|n| n.starts_with("dmma")), "{cdna:?}");
        assert!(f64_names("sm_75", Shape::square(512)).iter().all(|n| !n.starts_with("dmma")));
    }

    #[test]
    fn autotune_picks_the_fastest_candidate_that_verified() {
        for (times, want) in [
            (vec![Some(2.0), Some(1.0), Some(3.0)], Some(1)),
            (vec![None, Some(5.0), None], Some(1)),
            (vec![Some(1.0), Some(1.0)], Some(0)),
            (vec![Some(f64::NAN), Some(0.0), Some(4.0)], Some(2)),
            (vec![None, None], None),
            (vec![], None),
        ] {
            assert_eq!(autotune_pick(&times), want, "{times:?}");
        }
    }
}
