//! The sweep's points: which points each sweep has ([`Spec`]), their launch geometry, the bytes and work they
//! count, their keys' parts and why a size cannot run.

use serde::Serialize;

use super::timeline::RECORD_WORDS;
use super::{OccupancySweep, SOURCE};
use crate::device::{Kernel, Props};
use crate::experiments::estimate::{LAUNCH_S, STREAMING_SHARE};
use crate::experiments::Work;
use crate::gpu::Gpu;
use crate::occupancy_calculator::{self, Resources};
use crate::options::{bytes_of, index_u32_problem, Memory, MAX_GROUPS_X};

/// One point of the sweeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spec {
    /// Device-to-device copy of `elements` floats by the driver.
    Copy,
    /// The same copy by a kernel, `width` floats per item in groups of [`COPY_GROUP`].
    CopyKernel { width: u32 },
    /// (a) Vector add with groups of `group` items, `width` elements per item (1, the seed's, or 4).
    GroupSize { group: u32, width: u32 },
    /// (b) `groups` groups of the chunked vector add.
    GroupCount { groups: u32 },
    /// (b') `groups` groups of the residency probe.
    SpinCount { groups: u32 },
    /// (b') The residency probe at 2.5 rounds of groups (`groups`), recorded as a timeline.
    SpinTimeline { groups: u64 },
    /// (c) A scaled seed configuration, with or without barriers; recorded as a timeline.
    Barrier { config: usize, barrier: bool },
    /// (d) Vector add through LDS with `bytes` of dynamic LDS per group, `width` elements per item.
    Lds { bytes: u32, width: u32 },
    /// (d) The register-pressure kernel keeping `values` live per item.
    Registers { values: u32 },
}

/// A scaled version of the seed's VectorAdd3/4 runs (there: 8 groups of 320 and 24 groups of 224 on a GPU of 6
/// Xe-cores): groups per CU and group size chosen so groups do not fill CUs evenly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BarrierConfig {
    /// Name in the CSV and plots.
    pub name: &'static str,
    /// Groups as a multiple of the CU count, in quarters (6 = 1.5 groups per CU).
    pub groups_per_cu_quarters: u32,
    /// Items per group.
    pub group: u32,
}

/// The seed's two configurations, scaled: 8 groups on 6 cores is 1.33 per core with groups of 320 items; 24 on 6 is
/// 4 per core with groups of 224.
pub const BARRIER_CONFIGS: [BarrierConfig; 2] = [
    BarrierConfig { name: "seed_8x320", groups_per_cu_quarters: 6, group: 320 },
    BarrierConfig { name: "seed_24x224", groups_per_cu_quarters: 16, group: 224 },
];

/// Items per group of the copy kernels.
pub const COPY_GROUP: u32 = 256;

/// Items per group of the LDS and register sweeps.
pub(super) const DATA_GROUP: u32 = 256;

impl OccupancySweep {
    /// The sweep's points, given the groups per CU the calculator allows the chunked kernel and the residency probe.
    pub(super) fn specs(&self, props: &Props, resident_chunks: Option<u32>, resident_spin: Option<u32>) -> Vec<Spec> {
        let mut specs = vec![Spec::Copy, Spec::CopyKernel { width: 1 }, Spec::CopyKernel { width: 4 }];
        for width in [1, 4] {
            specs.extend(self.group_sizes.iter().map(|&group| Spec::GroupSize { group, width }));
        }
        let counts = group_counts(props.cu_count, resident_chunks);
        specs.extend(counts.iter().map(|&groups| Spec::GroupCount { groups }));
        specs.extend(counts.iter().map(|&groups| Spec::SpinCount { groups }));
        specs.push(Spec::SpinTimeline { groups: spin_timeline_groups(props.cu_count, resident_spin.unwrap_or(1)) });
        for config in 0..BARRIER_CONFIGS.len() {
            specs.push(Spec::Barrier { config, barrier: false });
            specs.push(Spec::Barrier { config, barrier: true });
        }
        for width in [1, 4] {
            specs.extend(self.lds_bytes.iter().map(|&bytes| Spec::Lds { bytes, width }));
        }
        specs.extend(self.register_values.iter().map(|&values| Spec::Registers { values }));
        specs.retain(|&spec| self.sweeps.is_empty() || self.sweeps.iter().any(|s| s == sweep_name(spec)));
        specs
    }

    /// Why the sizes of `spec` cannot run: element counts the kernel cannot index, grids too large, byte counts
    /// that overflow, or more memory than the device (`memory.device`) or the host holds. Needs no GPU.
    pub(super) fn size_problem(&self, props: &Props, spec: Spec, memory: &Memory) -> Option<String> {
        let e = self.elements as u64;
        // Kernels that take `unsigned n` and index `width` elements per item with a 32-bit item index.
        let indexed = |width: u32, group: u32| -> Option<String> {
            if e > u64::from(u32::MAX) {
                return Some(format!("n = {e} elements exceeds the kernel's 32-bit count (at most {})", u32::MAX));
            }
            index_u32_problem(e.div_ceil(u64::from(width)), group).map(|why| {
                if width == 1 {
                    why
                } else {
                    format!("{why} (counting items of {width} elements)")
                }
            })
        };
        let (index, device, host) = match spec {
            Spec::Copy => (None, bytes_of(&[e, e], 4), bytes_of(&[e, e], 4)),
            Spec::CopyKernel { width } => (indexed(width, COPY_GROUP), bytes_of(&[e, e], 4), bytes_of(&[e, e], 4)),
            Spec::GroupSize { group, width } => (indexed(width, group), bytes_of(&[e; 3], 4), bytes_of(&[e; 4], 4)),
            Spec::Lds { width, .. } => (indexed(width, DATA_GROUP), bytes_of(&[e; 3], 4), bytes_of(&[e; 4], 4)),
            Spec::Registers { .. } => (indexed(1, DATA_GROUP), bytes_of(&[e; 2], 4), bytes_of(&[e; 3], 4)),
            Spec::GroupCount { .. } | Spec::Barrier { .. } | Spec::SpinCount { .. } | Spec::SpinTimeline { .. } => {
                let (groups, group, _) = geometry(self, props, spec);
                if groups > MAX_GROUPS_X {
                    return Some(format!("{groups} groups exceed the grid limit of {MAX_GROUPS_X}"));
                }
                let waves = groups * u64::from(props.wave_size.waves_for(group));
                let timeline = match spec {
                    Spec::Barrier { .. } | Spec::SpinCount { .. } | Spec::SpinTimeline { .. } => {
                        waves.checked_mul(RECORD_WORDS as u64)
                    }
                    _ => Some(0),
                };
                let Some(timeline) = timeline else { return Some("its timeline's size overflows 64 bits".into()) };
                match elements_of(self, props, spec) {
                    None => return Some(format!("{groups} groups of {} elements overflow 64 bits", self.chunk)),
                    Some(c) => {
                        if bytes_moved(self, spec, c).is_none() {
                            return Some(format!("{c} elements x {} passes overflow a 64-bit byte count", self.passes));
                        }
                        let data = bytes_of(&[c; 3], 4).and_then(|d| d.checked_add(bytes_of(&[timeline], 8)?));
                        let host = bytes_of(&[c; 4], 4).and_then(|d| d.checked_add(bytes_of(&[timeline], 8)?));
                        (None, data, host)
                    }
                }
            }
        };
        index.or_else(|| memory.problem(device, host))
    }

    /// The sweep's points on this device.
    pub(super) fn specs_on(&self, gpu: &Gpu) -> Vec<Spec> {
        let chunks = resident_groups(gpu, "occupancy_chunks", self.count_group_size, 0);
        let spin = resident_groups(gpu, "occupancy_spin", self.count_group_size, 0);
        self.specs(gpu.device.props(), chunks, spin)
    }
}

/// Group counts for sweep (b): powers of two up to the CU count, then steps of half the CU count up to four times
/// the resident capacity, and the capacity and one past it exactly (where the partial round begins), twice.
pub fn group_counts(cus: u32, resident_per_cu: Option<u32>) -> Vec<u32> {
    let capacity = cus * resident_per_cu.unwrap_or(1).max(1);
    let mut counts: Vec<u32> = (0..).map(|p| 1u32 << p).take_while(|&g| g < cus).collect();
    let step = (cus / 2).max(1);
    let mut g = cus;
    while g <= 4 * capacity {
        counts.push(g);
        g += step;
    }
    counts.extend([capacity, capacity + 1, 2 * capacity, 2 * capacity + 1]);
    counts.sort_unstable();
    counts.dedup();
    counts
}

/// Registers, static LDS and the group size of a kernel as the occupancy calculator wants them. AMD: VGPRs from
/// the code-object metadata (the unified VGPR+AGPR count on gfx90a); NVIDIA: the driver's registers per thread.
pub(super) fn resources(gpu: &Gpu, kernel: &Kernel, group_size: u32, dynamic_lds: u32) -> Resources {
    let meta = gpu.amd_kernel_meta(SOURCE, &kernel.name).ok().flatten();
    let registers_per_item = meta.as_ref().map(|m| m.vgpr_count).unwrap_or(kernel.attrs.registers_per_item);
    let static_lds = meta.as_ref().map(|m| m.lds_bytes).unwrap_or(kernel.attrs.static_lds_bytes);
    Resources {
        group_size,
        registers_per_item,
        sgprs: meta.as_ref().map(|m| m.sgpr_count),
        lds_bytes_per_group: static_lds + dynamic_lds,
    }
}

/// Resident groups per CU of `name` at `group_size`, from the calculator; `None` if the kernel is not there.
pub(super) fn resident_groups(gpu: &Gpu, name: &str, group_size: u32, dynamic_lds: u32) -> Option<u32> {
    let kernel = gpu.kernel(SOURCE, name).ok()?;
    let occ =
        occupancy_calculator::theoretical(gpu.device.props(), resources(gpu, &kernel, group_size, dynamic_lds)).ok()?;
    Some(occ.groups_per_cu)
}

/// The kernel symbol of a spec.
pub(super) fn symbol(spec: Spec) -> String {
    match spec {
        Spec::Copy => "device_copy".into(),
        Spec::CopyKernel { width: 1 } => "occupancy_copy".into(),
        Spec::CopyKernel { .. } => "occupancy_copy_x4".into(),
        Spec::GroupSize { width: 1, .. } => "occupancy_vector_add".into(),
        Spec::GroupSize { .. } => "occupancy_vector_add_x4".into(),
        Spec::GroupCount { .. } | Spec::Barrier { barrier: false, .. } => "occupancy_chunks".into(),
        Spec::Barrier { barrier: true, .. } => "occupancy_chunks_barrier".into(),
        Spec::SpinCount { .. } | Spec::SpinTimeline { .. } => "occupancy_spin".into(),
        Spec::Lds { width: 1, .. } => "occupancy_lds".into(),
        Spec::Lds { .. } => "occupancy_lds_x4".into(),
        Spec::Registers { values } => format!("occupancy_registers_r{values}"),
    }
}

/// Groups of the residency-probe timeline: two and a half rounds of what the device holds at once.
pub fn spin_timeline_groups(cus: u32, resident_per_cu: u32) -> u64 {
    (u64::from(cus) * u64::from(resident_per_cu.max(1)) * 5).div_ceil(2)
}

/// Launch geometry of a spec: (groups, items per group, dynamic LDS bytes).
pub(super) fn geometry(sweep: &OccupancySweep, props: &Props, spec: Spec) -> (u64, u32, u32) {
    let per_item =
        |width: u32, group: u32| (sweep.elements as u64).div_ceil(u64::from(width)).div_ceil(u64::from(group.max(1)));
    match spec {
        Spec::Copy => (0, 0, 0),
        Spec::CopyKernel { width } => (per_item(width, COPY_GROUP), COPY_GROUP, 0),
        Spec::GroupSize { group, width } => (per_item(width, group), group, 0),
        Spec::GroupCount { groups } | Spec::SpinCount { groups } => (u64::from(groups), sweep.count_group_size, 0),
        Spec::SpinTimeline { groups } => (groups, sweep.count_group_size, 0),
        Spec::Barrier { config, .. } => {
            let c = BARRIER_CONFIGS[config];
            ((u64::from(props.cu_count) * u64::from(c.groups_per_cu_quarters)).div_ceil(4), c.group, 0)
        }
        Spec::Lds { bytes, width } => (per_item(width, DATA_GROUP), DATA_GROUP, bytes),
        Spec::Registers { .. } => (per_item(1, DATA_GROUP), DATA_GROUP, 0),
    }
}

/// One launch of `spec`, counted: FLOP = one addition per element of a vector add (per pass for the chunked
/// kernels), 2 per FMA of the register kernels (R·rounds per item), none for copies; bytes as the GB/s column
/// counts them. The estimate credits the bytes with the streaming share of the bandwidth and the register kernels'
/// FMAs with a low share of the FP32 peak; the residency probe waits `spin_us` per round of groups (at most three).
/// The host reads back and checks each point's FP32 output (4 bytes per element); the inputs are drawn once per
/// run, counted on the copy point, which checks its copy of them.
pub(super) fn point_work(sweep: &OccupancySweep, spec: Spec, elements: Option<u64>, bytes: Option<u64>) -> Work {
    let (elements, bytes) = (elements.unwrap_or(0) as f64, bytes.unwrap_or(0) as f64);
    let output = 4.0 * elements;
    match spec {
        Spec::SpinCount { .. } | Spec::SpinTimeline { .. } => Work::fixed(3.0 * sweep.spin_us * 1e-6),
        Spec::Registers { values } => {
            let fmas = elements * f64::from(values) * f64::from(sweep.register_rounds);
            Work::kernel(2.0 * fmas, bytes, 0.05).at_least(LAUNCH_S).with_host_bytes(output)
        }
        Spec::GroupSize { .. } | Spec::Lds { .. } => {
            Work::kernel(elements, bytes, STREAMING_SHARE).at_least(LAUNCH_S).with_host_bytes(output)
        }
        Spec::GroupCount { .. } | Spec::Barrier { .. } => {
            Work::kernel(elements * f64::from(sweep.passes), bytes, STREAMING_SHARE)
                .at_least(LAUNCH_S)
                .with_host_bytes(output)
        }
        Spec::Copy => Work::kernel(0.0, bytes, STREAMING_SHARE).at_least(LAUNCH_S).with_host_bytes(bytes + output),
        Spec::CopyKernel { .. } => Work::kernel(0.0, bytes, STREAMING_SHARE).at_least(LAUNCH_S).with_host_bytes(output),
    }
}

pub(super) fn sweep_name(spec: Spec) -> &'static str {
    match spec {
        Spec::Copy => "copy",
        Spec::CopyKernel { .. } => "copy_kernel",
        Spec::GroupSize { width: 1, .. } => "group_size",
        Spec::GroupSize { .. } => "group_size_x4",
        Spec::GroupCount { .. } => "group_count",
        Spec::SpinCount { .. } => "group_count_spin",
        Spec::SpinTimeline { .. } => "spin_timeline",
        Spec::Barrier { .. } => "barrier",
        Spec::Lds { width: 1, .. } => "lds",
        Spec::Lds { .. } => "lds_x4",
        Spec::Registers { .. } => "registers",
    }
}

/// Elements a spec's kernel touches: the chunked sweeps cover `groups · chunk`, the others the whole arrays;
/// `None` if that overflows.
pub(super) fn elements_of(sweep: &OccupancySweep, props: &Props, spec: Spec) -> Option<u64> {
    match spec {
        Spec::SpinCount { .. } | Spec::SpinTimeline { .. } => Some(0),
        Spec::GroupCount { .. } | Spec::Barrier { .. } => {
            let (groups, _, _) = geometry(sweep, props, spec);
            groups.checked_mul(u64::from(sweep.chunk))
        }
        _ => Some(sweep.elements as u64),
    }
}

/// Bytes read and written by one launch over `elements`; `None` if that overflows.
pub(super) fn bytes_moved(sweep: &OccupancySweep, spec: Spec, elements: u64) -> Option<u64> {
    match spec {
        Spec::Copy | Spec::CopyKernel { .. } | Spec::Registers { .. } => bytes_of(&[elements], 8),
        Spec::GroupCount { .. } | Spec::Barrier { .. } => {
            bytes_of(&[elements], 12).and_then(|b| b.checked_mul(u64::from(sweep.passes)))
        }
        Spec::SpinCount { .. } | Spec::SpinTimeline { .. } => Some(0),
        Spec::GroupSize { .. } | Spec::Lds { .. } => bytes_of(&[elements], 12),
    }
}

#[cfg(test)]
mod tests {
    use super::super::SWEEPS;
    use super::*;

    #[test]
    fn group_counts_cross_the_capacity_exactly() {
        let counts = group_counts(132, Some(4));
        assert_eq!(&counts[..8], &[1, 2, 4, 8, 16, 32, 64, 128]);
        for must in [132, 528, 529, 1056, 1057] {
            assert!(counts.contains(&must), "{must} missing from {counts:?}");
        }
        assert_eq!(*counts.last().unwrap(), 2112);
        assert!(counts.len() < 50, "{} points", counts.len());
        assert!(counts.windows(2).all(|w| w[0] < w[1]));
    }

    /// Sizes at the edges of what u32, i32, u64 and usize hold, and ordinary ones.
    fn edge_sizes() -> impl proptest::strategy::Strategy<Value = usize> {
        use proptest::prelude::*;
        prop_oneof![
            prop::sample::select(vec![
                1,
                2,
                255,
                256,
                257,
                (1 << 31) - 1,
                1 << 31,
                u32::MAX as usize - 255,
                u32::MAX as usize - 254,
                u32::MAX as usize,
                1 << 32,
                (1 << 32) + 1,
                1 << 40,
                usize::MAX / 4,
                usize::MAX / 4 + 1,
                usize::MAX,
            ]),
            1usize..1 << 28,
            any::<usize>(),
        ]
    }

    fn any_memory() -> impl proptest::strategy::Strategy<Value = Memory> {
        use proptest::prelude::*;
        let bytes = prop_oneof![Just(80u64 << 30), Just(141u64 << 30), Just(u64::MAX), any::<u64>()];
        (bytes.clone(), proptest::option::of(bytes)).prop_map(|(device, host)| Memory { device, host })
    }

    /// Whether a one-element-per-item style launch of `e` elements, `w` per item in groups of `g`, can be indexed.
    fn indexable(e: u128, w: u128, g: u128) -> bool {
        let groups = e.div_ceil(w).div_ceil(g);
        e <= u128::from(u32::MAX) && groups * g <= 1 << 32 && groups <= u128::from(MAX_GROUPS_X)
    }

    fn fits(memory: &Memory, device: u128, host: u128) -> bool {
        device <= u128::from(memory.device) && memory.host.is_none_or(|h| host <= u128::from(h))
    }

    proptest::proptest! {
        #[test]
        fn occupancy_sizes_are_invalid_exactly_when_they_cannot_run(
            elements in edge_sizes(),
            chunk in proptest::prop_oneof![proptest::strategy::Just(u32::MAX), 1u32..100_000],
            passes in proptest::prop_oneof![proptest::strategy::Just(u32::MAX), 1u32..100],
            group in 1u32..=1024,
            groups in proptest::prop_oneof![proptest::strategy::Just(u32::MAX), 1u32..100_000],
            width in proptest::prop_oneof![proptest::strategy::Just(1u32), proptest::strategy::Just(4u32)],
            memory in any_memory(),
        ) {
            let props = crate::occupancy_calculator::tests::h100();
            let sweep = OccupancySweep { elements, chunk, passes, ..OccupancySweep::default() };
            let e = elements as u128;
            let c = u128::from(groups) * u128::from(chunk);
            let cases = [
                (Spec::Copy, fits(&memory, 8 * e, 8 * e)),
                (Spec::CopyKernel { width }, indexable(e, width.into(), COPY_GROUP.into()) && fits(&memory, 8 * e, 8 * e)),
                (Spec::GroupSize { group, width }, indexable(e, width.into(), group.into()) && fits(&memory, 12 * e, 16 * e)),
                (Spec::Lds { bytes: 1024, width }, indexable(e, width.into(), 256) && fits(&memory, 12 * e, 16 * e)),
                (Spec::Registers { values: 16 }, indexable(e, 1, 256) && fits(&memory, 8 * e, 12 * e)),
                (
                    Spec::GroupCount { groups },
                    u128::from(groups) <= u128::from(MAX_GROUPS_X)
                        && 12 * c * u128::from(passes) <= u128::from(u64::MAX)
                        && fits(&memory, 12 * c, 16 * c),
                ),
            ];
            for (spec, valid) in cases {
                let problem = sweep.size_problem(&props, spec, &memory);
                proptest::prop_assert_eq!(problem.is_none(), valid, "{:?}: {:?}", spec, problem);
            }
        }
    }

    #[test]
    fn the_sweeps_flag_selects_sweeps_by_name() {
        let props = crate::occupancy_calculator::tests::h100();
        let sweep =
            OccupancySweep { sweeps: vec!["copy_kernel".into(), "group_size_x4".into()], ..OccupancySweep::default() };
        let names: Vec<&str> = sweep.specs(&props, Some(4), Some(4)).into_iter().map(sweep_name).collect();
        assert_eq!(names.len(), 2 + sweep.group_sizes.len());
        assert!(names.iter().all(|n| ["copy_kernel", "group_size_x4"].contains(n)), "{names:?}");
        let all: std::collections::BTreeSet<&str> =
            OccupancySweep::default().specs(&props, Some(4), Some(4)).into_iter().map(sweep_name).collect();
        assert_eq!(all, SWEEPS.iter().copied().collect());
    }
}
