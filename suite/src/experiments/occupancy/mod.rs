//! Occupancy: how group size, group count, barriers, LDS and registers decide how many waves a CU holds, and what
//! that does to time and bandwidth (`kernels/occupancy.hip`; the seed's VectorAdd1..4).
//!
//! Sweeps, each point with its theoretical occupancy next to its time and bandwidth:
//! - `copy`: the driver's device-to-device copy, and `copy_kernel`: the same copy by a kernel with one float or one
//!   float4 per item, the bandwidth references of the run (a kernel's is measured the way the other kernels are);
//! - `group_size` (a): a one-element-per-item vector add, groups of 32..1024 items, including sizes that are not
//!   multiples of the wave (48, 80, 96, 160) to show how a partial wave still takes a whole wave slot;
//!   `group_size_x4`: the same with four elements (one float4) per item, which reaches the copy's bandwidth where
//!   one 4-byte element per item is limited by the rate of memory instructions and groups, not by DRAM;
//! - `group_count` (b): the seed's VectorAdd2/3, fixed-size groups each adding its own chunk `passes` times, from one
//!   group to several times what the device holds at once: time is flat while every group is resident, then a
//!   second, partial round of groups begins (this kernel shares each CU's load/store pipe among its groups, so
//!   its time also grows with groups per CU);
//! - `group_count_spin` (b'): the same group counts with residency alone: each wave holds its slot for a fixed
//!   time and touches no memory, so the launch takes one wait per round of resident groups and the step is exact;
//!   one such launch at 2.5 rounds is also recorded as a timeline;
//! - `barrier` (c): VectorAdd3 vs VectorAdd4 (a barrier at the start and the end), in configurations scaled to the
//!   device, each also recorded as a timeline: every wave writes its CU and the device clock at start and end;
//! - `lds` and `registers` (d): dynamic LDS per group, and kernels that keep more values live, lower the resident
//!   groups step by step: the occupancy cliffs and what they cost; `lds_x4` stages four elements per item.
//!
//! Sizes the kernels cannot index, byte counts that overflow and buffers that do not fit the device or the host
//! are `invalid` rows (`size_problem`).
//!
//! Bandwidth: GB/s = bytes the kernel reads and writes (12 per vector-add element and pass) / median time. For
//! `group_count` and `barrier` the passes after the first hit the cache, so that figure is not DRAM bandwidth.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::entry::Entry;
use super::estimate::{LAUNCH_S, STREAMING_SHARE};
use super::registry::parsed;
use super::{Case, Error, Experiment, Metric, Point, Work};
use crate::device::{Arg, Buffer, Kernel, LaunchConfig, Props};
use crate::gpu::Gpu;
use crate::occupancy::{self, Resources};
use crate::options;
use crate::options::{bytes_of, index_u32_problem, Memory, MAX_GROUPS_X};
use crate::report::plot::{Axis, LinePlot, Series, SeriesKind};
use crate::verify::{self, Verification};
use clap::{ArgMatches, Args};

/// Kernel source of the experiment.
const SOURCE: &str = "occupancy";

/// The sweeps' settings. Each field is one flag of `suite run occupancy`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OccupancySweep {
    /// Elements per array for the DRAM-bound sweeps (copy, group size, LDS, registers).
    pub elements: usize,
    /// Group sizes of sweep (a).
    pub group_sizes: Vec<u32>,
    /// Items per group of sweep (b), the seed's 512.
    pub count_group_size: u32,
    /// Elements each group adds per pass in sweeps (b) and (c).
    pub chunk: u32,
    /// Passes over its chunk each group makes in sweeps (b) and (c): enough work that groups stay resident long.
    pub passes: u32,
    /// How long each wave of the residency probe (b') holds its slot, in microseconds.
    pub spin_us: f64,
    /// Dynamic LDS per group of sweep (d), bytes, at least 4 per item (sizes the device cannot give a group become
    /// invalid rows).
    pub lds_bytes: Vec<u32>,
    /// Live values per item of the register-pressure kernels of sweep (d).
    pub register_values: Vec<u32>,
    /// Rounds of FMAs over the live values in the register-pressure kernels.
    pub register_rounds: u32,
    /// Sweeps to run, by name (see [`SWEEPS`]); empty: all.
    pub sweeps: Vec<String>,
    /// Folder where the barrier sweep writes its raw timelines (the run's results folder); none: not written.
    #[serde(skip)]
    pub timeline_dir: Option<PathBuf>,
    /// The device clock's rate, measured at the first point that needs it (run state, not an option).
    #[serde(skip)]
    pub clock: ClockRate,
}

/// The device clock's rate in Hz once measured, kept by the sweep so it is measured once per run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClockRate(Cell<Option<f64>>);

impl Default for OccupancySweep {
    fn default() -> Self {
        OccupancySweep {
            elements: 1 << 26,
            group_sizes: vec![32, 48, 64, 80, 96, 128, 160, 192, 256, 320, 384, 512, 640, 768, 896, 1024],
            count_group_size: 512,
            chunk: 512 * 16,
            passes: 64,
            spin_us: 20.0,
            lds_bytes: vec![1024, 2048, 4096, 8192, 12288, 16384, 24576, 32768, 49152, 65536, 98304, 131072, 229376],
            register_values: vec![16, 32, 64, 96, 128, 192],
            register_rounds: 8,
            sweeps: Vec::new(),
            timeline_dir: None,
            clock: ClockRate::default(),
        }
    }
}

/// One point of the sweeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Spec {
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
const DATA_GROUP: u32 = 256;

/// The sweeps, by the name `--sweeps` takes and the CSV's `sweep` column holds.
pub const SWEEPS: &[&str] = &[
    "copy",
    "copy_kernel",
    "group_size",
    "group_size_x4",
    "group_count",
    "group_count_spin",
    "spin_timeline",
    "barrier",
    "lds",
    "lds_x4",
    "registers",
];

/// Name of the residency probe's timeline (2.5 rounds of groups).
pub const SPIN_TIMELINE: &str = "spin_2.5_rounds";

/// One `u64` record per wave in a timeline: CU, group, start and end ticks of the device clock.
pub const RECORD_WORDS: usize = 4;

impl OccupancySweep {
    /// The sweep's points, given the groups per CU the calculator allows the chunked kernel and the residency probe.
    fn specs(&self, props: &Props, resident_chunks: Option<u32>, resident_spin: Option<u32>) -> Vec<Spec> {
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
    fn size_problem(&self, props: &Props, spec: Spec, memory: &Memory) -> Option<String> {
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
    fn specs_on(&self, gpu: &Gpu) -> Vec<Spec> {
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
fn resources(gpu: &Gpu, kernel: &Kernel, group_size: u32, dynamic_lds: u32) -> Resources {
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
fn resident_groups(gpu: &Gpu, name: &str, group_size: u32, dynamic_lds: u32) -> Option<u32> {
    let kernel = gpu.kernel(SOURCE, name).ok()?;
    let occ = occupancy::theoretical(gpu.device.props(), resources(gpu, &kernel, group_size, dynamic_lds)).ok()?;
    Some(occ.groups_per_cu)
}

/// The kernel symbol of a spec.
fn symbol(spec: Spec) -> String {
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
fn geometry(sweep: &OccupancySweep, props: &Props, spec: Spec) -> (u64, u32, u32) {
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
fn point_work(sweep: &OccupancySweep, spec: Spec, elements: Option<u64>, bytes: Option<u64>) -> Work {
    let (elements, bytes) = (elements.unwrap_or(0) as f64, bytes.unwrap_or(0) as f64);
    match spec {
        Spec::SpinCount { .. } | Spec::SpinTimeline { .. } => Work::fixed(3.0 * sweep.spin_us * 1e-6),
        Spec::Registers { values } => {
            let fmas = elements * f64::from(values) * f64::from(sweep.register_rounds);
            Work::kernel(2.0 * fmas, bytes, 0.05).at_least(LAUNCH_S)
        }
        Spec::GroupSize { .. } | Spec::Lds { .. } => Work::kernel(elements, bytes, STREAMING_SHARE).at_least(LAUNCH_S),
        Spec::GroupCount { .. } | Spec::Barrier { .. } => {
            Work::kernel(elements * f64::from(sweep.passes), bytes, STREAMING_SHARE).at_least(LAUNCH_S)
        }
        Spec::Copy | Spec::CopyKernel { .. } => Work::kernel(0.0, bytes, STREAMING_SHARE).at_least(LAUNCH_S),
    }
}

fn sweep_name(spec: Spec) -> &'static str {
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

impl Experiment for OccupancySweep {
    fn comparison(&self) -> Box<dyn crate::report::compare::Comparison> {
        Box::new(crate::report::compare::OccupancyComparison)
    }

    fn set_results_dir(&mut self, dir: &Path) {
        self.timeline_dir = Some(dir.to_path_buf());
    }

    fn name(&self) -> &'static str {
        "occupancy"
    }

    fn param_columns(&self) -> &'static [&'static str] {
        &[
            "sweep",
            "config",
            "kernel",
            "group_size",
            "groups",
            "dynamic_lds_bytes",
            "registers_per_item",
            "elements",
            "bytes",
            "groups_per_cu",
            "waves_per_cu",
            "occupancy_pct",
            "limiter",
            "rounds",
        ]
    }

    fn metric(&self) -> Metric {
        Metric {
            column: "gbps",
            formula: "GB/s = bytes read + written by the kernel (vector add: 12 per element and pass; copy: 8 per \
                      element) / median time / 1e9",
        }
    }

    fn options(&self) -> serde_json::Value {
        serde_json::json!({ "sweep": self, "barrier_configs": BARRIER_CONFIGS })
    }

    fn sources(&self) -> &'static [&'static str] {
        &[SOURCE]
    }

    fn points(&self, gpu: &Gpu) -> Vec<Point> {
        let props = gpu.device.props();
        let memory = Memory::of(props.memory_bytes);
        self.specs_on(gpu)
            .into_iter()
            .enumerate()
            .map(|(index, spec)| {
                let (groups, group, dynamic_lds) = geometry(self, props, spec);
                let name = symbol(spec);
                let config = match spec {
                    Spec::Barrier { config, .. } => BARRIER_CONFIGS[config].name.to_string(),
                    Spec::SpinTimeline { .. } => SPIN_TIMELINE.to_string(),
                    _ => String::new(),
                };
                let elements = elements_of(self, props, spec);
                let mut invalid = self.size_problem(props, spec, &memory);
                let lds_width = match spec {
                    Spec::Lds { width, .. } => Some(width),
                    _ => None,
                };
                let mut occ_cols = vec![String::new(); 5];
                let mut registers = String::new();
                if spec != Spec::Copy {
                    match gpu.kernel(SOURCE, &name) {
                        Ok(kernel) => {
                            let res = resources(gpu, &kernel, group, dynamic_lds);
                            registers = res.registers_per_item.to_string();
                            let total_lds = u64::from(res.lds_bytes_per_group);
                            if group > kernel.attrs.max_group_size.max(1) || group > props.max_group_size {
                                invalid =
                                    Some(format!("{name} allows groups of at most {}", kernel.attrs.max_group_size));
                            } else if total_lds > props.lds_bytes_per_group_optin {
                                invalid = Some(format!(
                                    "{total_lds} bytes of LDS per group; the device allows {}",
                                    props.lds_bytes_per_group_optin
                                ));
                            } else if lds_width.is_some_and(|w| dynamic_lds < 4 * w * group) {
                                let width = lds_width.unwrap_or(1);
                                invalid = Some(format!(
                                    "{name} stages {width} floats per item in LDS: groups of {group} need at least {} \
                                     bytes",
                                    4 * width * group
                                ));
                            } else if groups > MAX_GROUPS_X {
                                invalid = Some(format!("{groups} groups exceed the grid limit"));
                            } else {
                                match occupancy::theoretical(props, res) {
                                    Err(e) => invalid = Some(e.to_string()),
                                    Ok(occ) => {
                                        let capacity = u64::from(occ.groups_per_cu) * u64::from(props.cu_count);
                                        occ_cols = vec![
                                            occ.groups_per_cu.to_string(),
                                            occ.waves_per_cu.to_string(),
                                            format!("{:.1}", occ.percent),
                                            occ.limiter.to_string(),
                                            if capacity == 0 {
                                                String::new()
                                            } else {
                                                format!("{:.3}", groups as f64 / capacity as f64)
                                            },
                                        ];
                                    }
                                }
                            }
                        }
                        Err(e) => invalid = Some(e.to_string()),
                    }
                }
                let bytes = elements.and_then(|e| bytes_moved(self, spec, e));
                let key = match spec {
                    Spec::Copy => format!("copy/n={}", self.elements),
                    Spec::CopyKernel { width } => format!("copy_kernel/w={width},n={}", self.elements),
                    Spec::GroupSize { group, .. } => format!("{}/g={group},n={}", sweep_name(spec), self.elements),
                    Spec::GroupCount { groups } => format!(
                        "group_count/groups={groups},g={},chunk={},passes={}",
                        self.count_group_size, self.chunk, self.passes
                    ),
                    Spec::SpinCount { groups } => {
                        format!("group_count_spin/groups={groups},g={},us={}", self.count_group_size, self.spin_us)
                    }
                    Spec::SpinTimeline { .. } => {
                        format!("spin_timeline/g={},us={}", self.count_group_size, self.spin_us)
                    }
                    Spec::Barrier { config, barrier } => format!(
                        "barrier/{}/{}/chunk={},passes={}",
                        BARRIER_CONFIGS[config].name,
                        if barrier { "barrier" } else { "none" },
                        self.chunk,
                        self.passes
                    ),
                    Spec::Lds { bytes, .. } => format!("{}/bytes={bytes},n={}", sweep_name(spec), self.elements),
                    Spec::Registers { values } => {
                        format!("registers/values={values},rounds={},n={}", self.register_rounds, self.elements)
                    }
                };
                Point {
                    index,
                    key,
                    params: vec![
                        sweep_name(spec).into(),
                        config,
                        name,
                        if spec == Spec::Copy { String::new() } else { group.to_string() },
                        if spec == Spec::Copy { String::new() } else { groups.to_string() },
                        dynamic_lds.to_string(),
                        registers,
                        elements.map(|e| e.to_string()).unwrap_or_default(),
                        bytes.map(|b| b.to_string()).unwrap_or_default(),
                        occ_cols[0].clone(),
                        occ_cols[1].clone(),
                        occ_cols[2].clone(),
                        occ_cols[3].clone(),
                        occ_cols[4].clone(),
                    ],
                    invalid,
                    work: point_work(self, spec, elements, bytes),
                }
            })
            .collect()
    }

    fn prepare<'g>(&self, gpu: &'g Gpu, point: &Point) -> Result<Box<dyn Case + 'g>, Error> {
        let spec = self.specs_on(gpu).remove(point.index);
        let props = gpu.device.props();
        let dev = gpu.device.as_ref();
        // The points were checked by `size_problem`; these conversions cannot fail for a valid point.
        let too_big = || Error::Unsupported(format!("{}: sizes beyond what this host can address", point.key));
        let elements = elements_of(self, props, spec).and_then(|e| usize::try_from(e).ok()).ok_or_else(too_big)?;
        let n = u32::try_from(elements).unwrap_or(u32::MAX);
        let bytes = bytes_moved(self, spec, elements as u64).ok_or_else(too_big)? as f64;
        let mut rng = fastrand::Rng::new();
        // The register kernels need inputs in [1, 2], where their updates (v = 3 - v) are exact.
        let a: Vec<f32> = match spec {
            Spec::Registers { .. } => host_vec(elements, |_| 1.0 + rng.f32())?,
            _ => host_vec(elements, |_| rng.f32() * 2.0 - 1.0)?,
        };
        if spec == Spec::Copy {
            let src = dev.upload(&a)?;
            let dst = dev.alloc_buffer::<f32>(elements)?;
            dev.fill_bytes(dst.raw(), 0xff)?;
            return Ok(Box::new(CopyCase { gpu, src, dst, host: a, bytes }));
        }
        let (groups, group, dynamic_lds) = geometry(self, props, spec);
        let groups = u32::try_from(groups)
            .map_err(|_| Error::Unsupported(format!("{groups} groups do not fit in one launch")))?;
        let config = LaunchConfig { grid: [groups, 1, 1], group: [group, 1, 1], dynamic_lds_bytes: dynamic_lds };
        if matches!(spec, Spec::SpinCount { .. } | Spec::SpinTimeline { .. }) {
            let kernel = gpu.kernel(SOURCE, &symbol(spec))?;
            let waves = u64::from(groups) * u64::from(props.wave_size.waves_for(group));
            let words = usize::try_from(waves).ok().and_then(|w| w.checked_mul(RECORD_WORDS)).ok_or_else(too_big)?;
            let buf = dev.alloc_buffer::<u64>(words)?;
            dev.fill_bytes(buf.raw(), 0xff)?;
            let hz = clock_rate(gpu, &self.clock)?;
            let file = match spec {
                Spec::SpinTimeline { .. } => {
                    self.timeline_dir.as_ref().map(|d| d.join(timeline_file(SPIN_TIMELINE, "spin")))
                }
                _ => None,
            };
            let slots = u64::from(props.max_items_per_cu / props.wave_size.0) * u64::from(props.cu_count);
            let timeline = Timeline { buf, file, recorded: false, clock_hz: hz, device_wave_slots: slots };
            let ticks = (self.spin_us * 1e-6 * hz).round() as u64;
            return Ok(Box::new(SpinCase { gpu, kernel, config, ticks, timeline }));
        }
        let kernel = gpu.kernel(SOURCE, &symbol(spec))?;
        let a_buf = dev.upload(&a)?;
        let out = dev.alloc_buffer::<f32>(elements)?;
        dev.fill_bytes(out.raw(), 0xff)?;
        let kind = match spec {
            Spec::Registers { values } => Kind::Registers { values, rounds: self.register_rounds },
            Spec::CopyKernel { .. } => Kind::Copy,
            _ => {
                let b: Vec<f32> = host_vec(elements, |_| rng.f32() * 2.0 - 1.0)?;
                let b_buf = dev.upload(&b)?;
                let timeline = match spec {
                    Spec::Barrier { config: c, barrier } => {
                        let waves = u64::from(groups) * u64::from(props.wave_size.waves_for(group));
                        let words = usize::try_from(waves)
                            .ok()
                            .and_then(|w| w.checked_mul(RECORD_WORDS))
                            .ok_or_else(too_big)?;
                        let buf = dev.alloc_buffer::<u64>(words)?;
                        dev.fill_bytes(buf.raw(), 0xff)?;
                        let file = self.timeline_dir.as_ref().map(|d| {
                            d.join(timeline_file(BARRIER_CONFIGS[c].name, if barrier { "barrier" } else { "none" }))
                        });
                        let slots = props.max_items_per_cu / props.wave_size.0;
                        Some(Timeline {
                            buf,
                            file,
                            recorded: false,
                            clock_hz: clock_rate(gpu, &self.clock)?,
                            device_wave_slots: u64::from(slots) * u64::from(props.cu_count),
                        })
                    }
                    _ => None,
                };
                match spec {
                    Spec::Lds { width, .. } => Kind::Lds { b: b_buf, host_b: b, width },
                    Spec::GroupCount { .. } | Spec::Barrier { .. } => {
                        Kind::Chunks { b: b_buf, host_b: b, chunk: self.chunk, passes: self.passes, timeline }
                    }
                    _ => Kind::VectorAdd { b: b_buf, host_b: b },
                }
            }
        };
        let (a_arg, out_arg, n) = (a_buf.arg(), out.arg(), Arg::U32(n));
        // Arguments are made here, once: a launch does no host work beyond handing them over.
        let (args, record_slot) = match &kind {
            Kind::VectorAdd { b, .. } | Kind::Lds { b, .. } => (vec![a_arg, b.arg(), out_arg, n], None),
            Kind::Copy => (vec![a_arg, out_arg, n], None),
            Kind::Chunks { b, chunk, passes, timeline, .. } => {
                // Only the first launch (the one verified) records; timed launches pass null.
                let record = timeline.as_ref().map_or(Arg::Ptr(0), |t| t.buf.arg());
                let args = vec![a_arg, b.arg(), out_arg, Arg::U32(*chunk), Arg::U32(*passes), record];
                (args, timeline.as_ref().map(|_| 5))
            }
            Kind::Registers { rounds, .. } => (vec![a_arg, out_arg, n, Arg::U32(*rounds)], None),
        };
        Ok(Box::new(KernelCase { gpu, kernel, config, a: a_buf, host_a: a, out, kind, bytes, args, record_slot }))
    }

    fn plots(&self, rows: &[BTreeMap<String, String>], dir: &Path) -> Vec<(String, LinePlot)> {
        plots(rows, dir)
    }

    fn headlines(&self, rows: &[BTreeMap<String, String>]) -> Vec<String> {
        headlines(rows)
    }
}

/// The lines of [`Experiment::headlines`]: the copy bandwidth, then for each memory-bound sweep its range of
/// bandwidth over the copy's at full (100%) theoretical occupancy, and the residency probe's groups per round.
fn headlines(rows: &[BTreeMap<String, String>]) -> Vec<String> {
    let ok: Vec<&BTreeMap<String, String>> = super::ok_rows(rows).collect();
    let of = |sweep: &'static str| ok.iter().copied().filter(move |r| r.get("sweep").is_some_and(|s| s == sweep));
    let Some(copy) = of("copy").find_map(|r| super::num(r, "gbps")) else { return Vec::new() };
    let mut out = vec![format!("device copy (driver memcpy): {copy:.0} GB/s, the reference of the ratios below")];
    for (sweep, what) in [
        ("copy_kernel", "copy kernel"),
        ("group_size", "vector add, one element per item"),
        ("group_size_x4", "vector add, four elements per item"),
        ("lds", "LDS vector add, one element per item"),
        ("lds_x4", "LDS vector add, four elements per item"),
    ] {
        let ratios: Vec<f64> = of(sweep)
            .filter(|r| super::num(r, "occupancy_pct") == Some(100.0))
            .filter_map(|r| Some(super::num(r, "gbps")? / copy))
            .collect();
        let (lo, hi) = ratios.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), r| (lo.min(*r), hi.max(*r)));
        if !ratios.is_empty() {
            out.push(format!("{what} at 100% occupancy: {lo:.2} to {hi:.2} of the copy ({} points)", ratios.len()));
        }
    }
    let probe: Vec<(f64, f64)> =
        of("group_count_spin").filter_map(|r| Some((super::num(r, "groups")?, super::num(r, "rounds")?))).collect();
    if let Some((groups, rounds)) = probe.iter().copied().max_by(|a, b| a.0.total_cmp(&b.0)) {
        out.push(format!("residency probe: {:.0} groups resident at once", (groups / rounds).round()));
    }
    out
}

/// Elements a spec's kernel touches: the chunked sweeps cover `groups · chunk`, the others the whole arrays;
/// `None` if that overflows.
fn elements_of(sweep: &OccupancySweep, props: &Props, spec: Spec) -> Option<u64> {
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
fn bytes_moved(sweep: &OccupancySweep, spec: Spec, elements: u64) -> Option<u64> {
    match spec {
        Spec::Copy | Spec::CopyKernel { .. } | Spec::Registers { .. } => bytes_of(&[elements], 8),
        Spec::GroupCount { .. } | Spec::Barrier { .. } => {
            bytes_of(&[elements], 12).and_then(|b| b.checked_mul(u64::from(sweep.passes)))
        }
        Spec::SpinCount { .. } | Spec::SpinTimeline { .. } => Some(0),
        Spec::GroupSize { .. } | Spec::Lds { .. } => bytes_of(&[elements], 12),
    }
}

/// A host vector of `len` values from `f`; an allocation the host cannot make is an error, not an abort.
fn host_vec<T>(len: usize, f: impl FnMut(usize) -> T) -> Result<Vec<T>, Error> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| Error::Unsupported(format!("cannot allocate {len} values on the host")))?;
    v.extend((0..len).map(f));
    Ok(v)
}

/// The file holding a recorded timeline.
pub fn timeline_file(config: &str, variant: &str) -> String {
    format!("occupancy-timeline-{config}-{variant}.csv")
}

struct CopyCase<'g> {
    gpu: &'g Gpu,
    src: Buffer<f32>,
    dst: Buffer<f32>,
    host: Vec<f32>,
    bytes: f64,
}

impl Case for CopyCase<'_> {
    fn launch(&mut self) -> crate::device::Result<()> {
        self.gpu.device.copy_on_device(self.src.raw(), self.dst.raw(), self.src.bytes())
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        let got = self.gpu.device.download(&self.dst)?;
        Ok(verify::compare(&got, &self.host, 1.0, 0.0))
    }

    fn work(&self) -> f64 {
        self.bytes
    }

    fn footprint_bytes(&self) -> Option<u64> {
        Some((self.src.bytes() + self.dst.bytes()) as u64)
    }
}

/// The residency probe: its records are both its output and its timeline.
struct SpinCase<'g> {
    gpu: &'g Gpu,
    kernel: Kernel,
    config: LaunchConfig,
    ticks: u64,
    timeline: Timeline,
}

impl Case for SpinCase<'_> {
    fn launch(&mut self) -> crate::device::Result<()> {
        let args = [Arg::U64(self.ticks), self.timeline.buf.arg()];
        self.gpu.device.launch(&self.kernel, &self.config, &args)
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        let raw = self.gpu.device.download(&self.timeline.buf)?;
        let records = parse_records(&raw).map_err(Error::Measurement)?;
        // Every wave must have waited its full time; a shorter one means the clock or the loop is wrong.
        let short: Vec<(usize, f64, f64)> = records
            .iter()
            .enumerate()
            .filter(|(_, r)| r.end - r.start < self.ticks)
            .map(|(i, r)| (i, (r.end - r.start) as f64, self.ticks as f64))
            .collect();
        if !self.timeline.recorded {
            self.timeline.recorded = true;
            if let Some(path) = &self.timeline.file {
                write_records(path, &records, self.timeline.clock_hz, self.timeline.device_wave_slots)?;
            }
        }
        Ok(Verification {
            max_rel_err: if short.is_empty() { 0.0 } else { 1.0 },
            tolerance: 0.0,
            checked: records.len(),
            failures: short.len(),
            first_failures: short.into_iter().take(5).collect(),
        })
    }

    fn work(&self) -> f64 {
        0.0
    }

    fn footprint_bytes(&self) -> Option<u64> {
        Some(self.timeline.buf.bytes() as u64)
    }
}

/// A recorded timeline: one record per wave, written on the first (verification) launch.
struct Timeline {
    buf: Buffer<u64>,
    file: Option<PathBuf>,
    recorded: bool,
    /// Ticks per second of the device clock the records use.
    clock_hz: f64,
    /// Wave slots of the whole device, to express resident waves as occupancy.
    device_wave_slots: u64,
}

enum Kind {
    Copy,
    VectorAdd { b: Buffer<f32>, host_b: Vec<f32> },
    Lds { b: Buffer<f32>, host_b: Vec<f32>, width: u32 },
    Chunks { b: Buffer<f32>, host_b: Vec<f32>, chunk: u32, passes: u32, timeline: Option<Timeline> },
    Registers { values: u32, rounds: u32 },
}

struct KernelCase<'g> {
    gpu: &'g Gpu,
    kernel: Kernel,
    config: LaunchConfig,
    /// The input, owned here for as long as the kernel may read it.
    a: Buffer<f32>,
    host_a: Vec<f32>,
    out: Buffer<f32>,
    kind: Kind,
    bytes: f64,
    /// The kernel's arguments.
    args: Vec<Arg>,
    /// The argument that points at the timeline until the first launch has recorded it; null after.
    record_slot: Option<usize>,
}

impl Case for KernelCase<'_> {
    fn launch(&mut self) -> crate::device::Result<()> {
        self.gpu.device.launch(&self.kernel, &self.config, &self.args)?;
        if let Some(slot) = self.record_slot.take() {
            self.args[slot] = Arg::Ptr(0);
        }
        Ok(())
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        let dev = self.gpu.device.as_ref();
        let check = self.check_output()?;
        let Kind::Chunks { timeline: Some(t), .. } = &mut self.kind else { return Ok(check) };
        if !t.recorded {
            t.recorded = true;
            let raw = dev.download(&t.buf)?;
            let records = parse_records(&raw).map_err(Error::Measurement)?;
            if let Some(path) = &t.file {
                write_records(path, &records, t.clock_hz, t.device_wave_slots)?;
            }
        }
        if !check.passed() {
            return Ok(check);
        }
        // The launch just checked recorded the timeline; the timed launches run without it (a null pointer, a
        // different branch of the kernel), so that path is checked too, on a poisoned output.
        dev.fill_bytes(self.out.raw(), 0xff)?;
        self.launch()?;
        dev.synchronize()?;
        let mut timed = self.check_output()?;
        timed.checked += check.checked;
        Ok(timed)
    }

    fn work(&self) -> f64 {
        self.bytes
    }

    fn footprint_bytes(&self) -> Option<u64> {
        let b = match &self.kind {
            Kind::VectorAdd { b, .. } | Kind::Lds { b, .. } | Kind::Chunks { b, .. } => b.bytes(),
            Kind::Copy | Kind::Registers { .. } => 0,
        };
        Some((self.a.bytes() + b + self.out.bytes()) as u64)
    }
}

impl KernelCase<'_> {
    /// The output of the last launch against the host's replay of the kernel's formula.
    fn check_output(&self) -> Result<Verification, Error> {
        let got = self.gpu.device.download(&self.out)?;
        let a = &self.host_a;
        Ok(match &self.kind {
            Kind::Copy => verify::compare(&got, a, 1.0, 0.0),
            Kind::VectorAdd { host_b, .. } | Kind::Chunks { host_b, .. } => {
                // a + b rounds once in FP32 on both sides: exact agreement.
                let want: Vec<f32> = a.iter().zip(host_b.iter()).map(|(x, y)| x + y).collect();
                verify::compare(&got, &want, 1.0, 0.0)
            }
            Kind::Lds { host_b, width, .. } => {
                let want = lds_expected(a, host_b, self.config.group[0] as usize, *width as usize);
                verify::compare(&got, &want, 1.0, 0.0)
            }
            Kind::Registers { values, rounds } => {
                let want = registers_expected(a, *values as usize, *rounds as usize);
                verify::compare(&got, &want, 1.0, 0.0)
            }
        })
    }
}

/// What `occupancy_lds` (`width` 1) and `occupancy_lds_x4` (`width` 4) write (`kernels/occupancy.hip`): item t of
/// group g, holding elements `width`·(g·B + t) + j, takes the values of its mirror item g·B + (B − 1 − t) in the
/// same group: a[m] + b[m] with m = `width`·(g·B + B − 1 − t) + j, or 0 where m lies past the end. Exact in FP32.
pub fn lds_expected(a: &[f32], b: &[f32], group: usize, width: usize) -> Vec<f32> {
    let n = a.len();
    (0..n)
        .map(|i| {
            let (q, j) = (i / width, i % width);
            let m = width * ((q / group) * group + (group - 1 - q % group)) + j;
            if m < n {
                a[m] + b[m]
            } else {
                0.0
            }
        })
        .collect()
}

/// What `occupancy_registers_r<R>` writes (`kernels/occupancy.hip`), replayed in FP32 in the kernel's order:
/// R values from a window of `a` starting at min(i, n − R), each updated `rounds` times by v = 3 − v (exact for
/// inputs in [1, 2]), then summed in order. The result is exact, so the comparison allows no error.
pub fn registers_expected(a: &[f32], values: usize, rounds: usize) -> Vec<f32> {
    let n = a.len();
    (0..n)
        .map(|i| {
            let mut sum = 0.0f32;
            for j in 0..values {
                let x = if n >= values { a[i.min(n - values) + j] } else { a[i] };
                let w = if rounds.is_multiple_of(2) { x } else { 3.0 - x };
                sum += w;
            }
            sum
        })
        .collect()
}

/// One wave's record from a timeline: the CU it ran on, its group, and its start and end on the device clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaveRecord {
    /// CU (SM) id.
    pub cu: u64,
    /// Group index.
    pub group: u64,
    /// Start, device clock ticks.
    pub start: u64,
    /// End, device clock ticks.
    pub end: u64,
}

/// Reads records from the kernel's buffer; every record must have been written (the buffer was poisoned with
/// all-ones) and end no earlier than it started.
pub fn parse_records(raw: &[u64]) -> Result<Vec<WaveRecord>, String> {
    if !raw.len().is_multiple_of(RECORD_WORDS) {
        return Err(format!("timeline of {} words is not whole records of {RECORD_WORDS}", raw.len()));
    }
    raw.chunks(RECORD_WORDS)
        .enumerate()
        .map(|(i, r)| {
            let rec = WaveRecord { cu: r[0], group: r[1], start: r[2], end: r[3] };
            if r.contains(&u64::MAX) {
                Err(format!("timeline record {i} was not written: a wave did not record itself"))
            } else if rec.end < rec.start {
                Err(format!("timeline record {i} ends ({}) before it starts ({})", rec.end, rec.start))
            } else {
                Ok(rec)
            }
        })
        .collect()
}

/// Columns of a timeline file: one row per wave, raw ticks and the clock rate that turns them into time.
pub const TIMELINE_HEADER: &str = "cu,group,start_ticks,end_ticks,clock_hz,device_wave_slots";

fn write_records(path: &Path, records: &[WaveRecord], clock_hz: f64, slots: u64) -> Result<(), Error> {
    let io = |source| crate::report::Error::Io { action: "cannot write", path: path.to_path_buf(), source };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).map_err(io)?);
    writeln!(f, "{TIMELINE_HEADER}").map_err(io)?;
    for r in records {
        writeln!(f, "{},{},{},{},{clock_hz},{slots}", r.cu, r.group, r.start, r.end).map_err(io)?;
    }
    f.flush().map_err(io)?;
    Ok(())
}

/// A timeline file: its records, clock rate (Hz) and device wave slots.
pub fn read_timeline(path: &Path) -> Option<(Vec<WaveRecord>, f64, u64)> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut lines = text.lines();
    if lines.next()? != TIMELINE_HEADER {
        return None;
    }
    let mut records = Vec::new();
    let (mut hz, mut slots) = (0.0, 0);
    for line in lines {
        let v: Vec<&str> = line.split(',').collect();
        if v.len() != 6 {
            return None;
        }
        let n = |i: usize| v[i].parse::<u64>().ok();
        records.push(WaveRecord { cu: n(0)?, group: n(1)?, start: n(2)?, end: n(3)? });
        hz = v[4].parse().ok()?;
        slots = n(5)?;
    }
    Some((records, hz, slots))
}

/// The rate of the device-wide clock the kernels read (`gpu_wall_clock()`), measured: two one-item launches read
/// it 200 ms apart on the host. The same on both vendors, needing no runtime attribute (HIP 5.2 has none for it);
/// on NVIDIA the answer must be 1 GHz (`%globaltimer` counts nanoseconds), which checks the method. Measured once
/// per sweep and kept in `known`.
fn clock_rate(gpu: &Gpu, known: &ClockRate) -> Result<f64, Error> {
    if let Some(hz) = known.0.get() {
        return Ok(hz);
    }
    let dev = gpu.device.as_ref();
    let kernel = gpu.kernel(SOURCE, "occupancy_clock")?;
    let out = dev.alloc_buffer::<u64>(1)?;
    let read = || -> Result<(u64, std::time::Instant), Error> {
        dev.launch(&kernel, &LaunchConfig::linear(1, 1), &[out.arg()])?;
        dev.synchronize()?;
        let at = std::time::Instant::now();
        Ok((dev.download(&out)?[0], at))
    };
    let (t0, h0) = read()?;
    std::thread::sleep(std::time::Duration::from_millis(200));
    let (t1, h1) = read()?;
    let hz = (t1.wrapping_sub(t0)) as f64 / h1.duration_since(h0).as_secs_f64();
    if !(hz.is_finite() && hz > 1e5) {
        return Err(Error::Measurement(format!("the device clock did not advance as expected ({t0} then {t1})")));
    }
    known.0.set(Some(hz));
    Ok(hz)
}

/// Resident waves and groups at one instant of a timeline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    /// Time since the first wave started, in the clock's ticks.
    pub t: u64,
    /// Waves resident from `t` on.
    pub waves: u32,
    /// Groups resident from `t` on (a group is resident from its first wave's start to its last wave's end).
    pub groups: u32,
}

/// Resident waves and groups over time, device-wide or for one CU (`cu`), as a step function.
pub fn resident_over_time(records: &[WaveRecord], cu: Option<u64>) -> Vec<Step> {
    let recs: Vec<&WaveRecord> = records.iter().filter(|r| cu.is_none_or(|c| r.cu == c)).collect();
    let Some(t0) = recs.iter().map(|r| r.start).min() else { return Vec::new() };
    let mut groups: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    for r in &recs {
        let e = groups.entry(r.group).or_insert((r.start, r.end));
        e.0 = e.0.min(r.start);
        e.1 = e.1.max(r.end);
    }
    // Events: +1 at a start, -1 at an end; ends before starts at the same tick (a slot freed and refilled).
    let mut events: Vec<(u64, i32, i32)> = Vec::new();
    for r in &recs {
        events.push((r.start, 1, 0));
        events.push((r.end, -1, 0));
    }
    for (s, e) in groups.values() {
        events.push((*s, 0, 1));
        events.push((*e, 0, -1));
    }
    events.sort_by_key(|&(t, w, g)| (t, w + g));
    let mut steps: Vec<Step> = Vec::new();
    let (mut waves, mut grps) = (0i64, 0i64);
    for (t, w, g) in events {
        waves += i64::from(w);
        grps += i64::from(g);
        let step = Step { t: t - t0, waves: waves.max(0) as u32, groups: grps.max(0) as u32 };
        match steps.last_mut() {
            Some(last) if last.t == step.t => *last = step,
            _ => steps.push(step),
        }
    }
    steps
}

/// A stretch of time at one level of resident waves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Phase {
    /// Start, ticks since the first wave started.
    pub start: u64,
    /// End, ticks.
    pub end: u64,
    /// Resident waves (the time-weighted mean over the phase, rounded).
    pub waves: u32,
}

/// The phases of a timeline: maximal stretches where the resident waves stay within `tolerance` (a fraction of
/// the peak) of the stretch's first level, at least `min_fraction` of the whole duration long. Short transitions
/// in between (waves starting and ending one by one) are not phases.
pub fn phases(steps: &[Step], tolerance: f64, min_fraction: f64) -> Vec<Phase> {
    let Some(total) = steps.last().map(|s| s.t).filter(|&t| t > 0) else { return Vec::new() };
    let peak = steps.iter().map(|s| s.waves).max().unwrap_or(0).max(1);
    let band = (tolerance * f64::from(peak)).max(0.5);
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < steps.len() {
        let level = f64::from(steps[i].waves);
        let mut j = i;
        let mut weighted = 0.0;
        while j + 1 < steps.len() && (f64::from(steps[j].waves) - level).abs() <= band {
            weighted += f64::from(steps[j].waves) * (steps[j + 1].t - steps[j].t) as f64;
            j += 1;
        }
        let (start, end) = (steps[i].t, steps[j].t);
        if end > start && (end - start) as f64 >= min_fraction * total as f64 && level > 0.0 {
            out.push(Phase { start, end, waves: (weighted / (end - start) as f64).round() as u32 });
        }
        i = j.max(i + 1);
    }
    out
}

/// Plots of an occupancy CSV, plus the timelines found beside it.
pub fn plots(rows: &[BTreeMap<String, String>], dir: &Path) -> Vec<(String, LinePlot)> {
    let num = super::num;
    let ok: Vec<&BTreeMap<String, String>> = super::ok_rows(rows).collect();
    let Some(first) = ok.first() else { return Vec::new() };
    let get = |c: &str| first.get(c).cloned().unwrap_or_default();
    let wave = get("wave_size");
    let device = format!("{} ({}, {})", get("device"), get("arch"), if wave == "64" { "wave64" } else { "warp32" });
    let copy = ok.iter().find(|r| r.get("sweep").map(String::as_str) == Some("copy")).and_then(|r| num(r, "gbps"));
    let of = |sweep: &str| -> Vec<&&BTreeMap<String, String>> {
        ok.iter().filter(|r| r.get("sweep").map(String::as_str) == Some(sweep)).collect()
    };
    let series =
        |rows: &[&&BTreeMap<String, String>], x: &str, y: &dyn Fn(&BTreeMap<String, String>) -> Option<f64>| {
            let mut pts: Vec<(f64, f64)> = rows.iter().filter_map(|r| Some((num(r, x)?, y(r)?))).collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            pts
        };
    let mut out = Vec::new();
    // `x_scale` turns the CSV's x column into the axis' unit (e.g. bytes to KiB).
    let percent_plot = |file: &str,
                        what: &str,
                        caveat: &str,
                        rows: Vec<&&BTreeMap<String, String>>,
                        x4_rows: Vec<&&BTreeMap<String, String>>,
                        (x, x_scale): (&str, f64),
                        x_label: &str,
                        x_axis| {
        // A partial wave holds a whole wave slot: the share of lane slots doing work shows the quantisation.
        let lanes = |r: &BTreeMap<String, String>| {
            let waves_per_group = num(r, "waves_per_cu")? / num(r, "groups_per_cu")?;
            Some(num(r, "occupancy_pct")? * num(r, "group_size")? / (waves_per_group * num(r, "wave_size")?))
        };
        let scaled = |pts: Vec<(f64, f64)>| pts.into_iter().map(|(x, y)| (x / x_scale, y)).collect::<Vec<_>>();
        // The theoretical occupancy is what these plots are about: the focus, drawn over the measured lines.
        let mut s = vec![
            Series::focus(
                "theoretical occupancy (% of wave slots)",
                scaled(series(&rows, x, &|r| num(r, "occupancy_pct"))),
            ),
            Series::line(
                "occupied lanes (% of lane slots: partial waves waste lanes)",
                scaled(series(&rows, x, &lanes)),
            ),
        ];
        if let Some(copy) = copy {
            s.push(Series::line(
                format!("bandwidth (% of the {copy:.0} GB/s device copy)"),
                scaled(series(&rows, x, &|r| Some(100.0 * num(r, "gbps")? / copy))),
            ));
            // The same kernel with four elements per item (16-byte accesses, a quarter of the groups): what the
            // memory system gives once the rate of instructions and new groups no longer limits.
            s.push(Series::line(
                "bandwidth, four elements per item (% of the device copy)",
                scaled(series(&x4_rows, x, &|r| Some(100.0 * num(r, "gbps")? / copy))),
            ));
        }
        s.retain(|s| !s.points.is_empty());
        (!s.is_empty()).then(|| {
            (
                file.to_string(),
                LinePlot {
                    title: format!("Occupancy: {what} on {device}"),
                    subtitle: Some(format!(
                        "theoretical occupancy from the suite's calculator; bandwidth measured{caveat}"
                    )),
                    x_label: x_label.into(),
                    y_label: "%".into(),
                    x_axis,
                    y_axis: Axis::Linear,
                    series: s,
                    note: None,
                    y_max: None,
                },
            )
        })
    };
    out.extend(percent_plot(
        "occupancy-group-size.png",
        "vector add vs group size",
        "",
        of("group_size"),
        of("group_size_x4"),
        ("group_size", 1.0),
        "items per group (log2 axis)",
        Axis::Log2,
    ));
    out.extend(percent_plot(
        "occupancy-lds.png",
        "vector add vs LDS per group",
        "",
        of("lds"),
        of("lds_x4"),
        ("dynamic_lds_bytes", 1024.0),
        "dynamic LDS per group (KiB, log2 axis)",
        Axis::Log2,
    ));
    out.extend(percent_plot(
        "occupancy-registers.png",
        "register pressure",
        " (8 bytes per item); R live values also mean R cached loads and R x rounds FMAs per item, so work grows too",
        of("registers"),
        Vec::new(),
        ("registers_per_item", 1.0),
        "registers per item (as allocated by the compiler)",
        Axis::Linear,
    ));
    for (sweep, file, what) in [
        ("group_count", "occupancy-group-count.png", "vector add, fixed work per group (the seed's VectorAdd2/3)"),
        ("group_count_spin", "occupancy-group-count-spin.png", "residency probe, every wave waits a fixed time"),
    ] {
        let rows = of(sweep);
        let times = series(&rows, "groups", &|r| num(r, "time_ms_median"));
        if times.is_empty() {
            continue;
        }
        let mut s =
            vec![Series { label: "time per launch (ms)".into(), points: times.clone(), kind: SeriesKind::Line }];
        // Resident capacity = groups / rounds, the same on every row; the row with the most groups has the most
        // significant digits in its rounds column.
        let capacity = rows
            .iter()
            .filter_map(|r| Some((num(r, "groups")?, num(r, "rounds")?)))
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(groups, rounds)| (groups / rounds).round());
        if let Some(cap) = capacity {
            let top = times.iter().map(|p| p.1).fold(0.0, f64::max);
            for (k, label) in [(1.0, "1 round: every group resident"), (2.0, "2 rounds")] {
                s.push(Series {
                    label: format!("{label} ({:.0} groups)", k * cap),
                    points: vec![(k * cap, 0.0), (k * cap, top)],
                    kind: SeriesKind::Reference,
                });
            }
        }
        out.push((
            file.into(),
            LinePlot {
                title: format!("Occupancy: time vs group count on {device}"),
                subtitle: Some(format!("{what}; groups of {} items", get_group(&rows))),
                x_label: "groups in the grid".into(),
                y_label: "median time per launch (ms)".into(),
                x_axis: Axis::Log2,
                y_axis: Axis::Linear,
                series: s,
                note: None,
                y_max: None,
            },
        ));
    }
    // (name, what it shows, [(timeline file, legend label)]) per plot.
    type TimelinePlot<'a> = (String, String, Vec<(String, &'a str)>);
    let timelines: Vec<TimelinePlot> = BARRIER_CONFIGS
        .iter()
        .map(|c| {
            (
                c.name.to_string(),
                format!("{} groups per CU of {} items", f64::from(c.groups_per_cu_quarters) / 4.0, c.group),
                vec![
                    (timeline_file(c.name, "none"), "no barrier (VectorAdd3)"),
                    (timeline_file(c.name, "barrier"), "barriers (VectorAdd4)"),
                ],
            )
        })
        .chain(std::iter::once((
            SPIN_TIMELINE.to_string(),
            "residency probe: 2.5 times the groups the device holds at once".to_string(),
            vec![(timeline_file(SPIN_TIMELINE, "spin"), "every wave waits a fixed time")],
        )))
        .collect();
    for (name, what, files) in timelines {
        let mut series = Vec::new();
        let mut slots_seen = 0;
        for (file, label) in files {
            let Some((records, hz, slots)) = read_timeline(&dir.join(file)) else { continue };
            slots_seen = slots;
            let cus = records.iter().map(|r| r.cu).collect::<std::collections::BTreeSet<_>>().len();
            let mut pts = Vec::new();
            let mut prev = 0.0;
            for s in resident_over_time(&records, None) {
                let t = s.t as f64 / hz * 1e6;
                pts.push((t, prev));
                prev = 100.0 * f64::from(s.waves) / slots.max(1) as f64;
                pts.push((t, prev));
            }
            series.push(Series { label: format!("{label}, {cus} CUs used"), points: pts, kind: SeriesKind::Line });
        }
        if !series.is_empty() {
            out.push((
                format!("occupancy-timeline-{name}.png"),
                LinePlot {
                    title: format!("Occupancy over time: {name} on {device}"),
                    subtitle: Some(format!(
                        "{what}; every wave records its CU and the device clock (first, verified launch); \
                         100% = {slots_seen} wave slots"
                    )),
                    x_label: "time since the first wave started (us)".into(),
                    y_label: "resident waves (% of the device's wave slots)".into(),
                    x_axis: Axis::Linear,
                    y_axis: Axis::Linear,
                    series,
                    note: None,
                    y_max: None,
                },
            ));
        }
    }
    out
}

fn get_group(rows: &[&&BTreeMap<String, String>]) -> String {
    rows.first().and_then(|r| r.get("group_size").cloned()).unwrap_or_default()
}

/// `suite run occupancy`.
pub const ENTRY: Entry = Entry {
    name: "occupancy",
    help: "Occupancy: group size, group count, barriers, LDS and registers vs time and bandwidth, with the \
           theoretical occupancy of every point and timelines of resident waves recorded inside the kernels.",
    flags: OccupancyArgs::augment_args,
    sweep: occupancy_sweep,
    default: || Box::new(OccupancySweep::default()),
    quick: quick_occupancy,
};

/// `suite run occupancy` options (defaults in `OccupancySweep::default`).
#[derive(Debug, Args)]
pub struct OccupancyArgs {
    /// Elements per array for the copy, group-size, LDS and register sweeps (integer or 2^N).
    #[arg(long)]
    pub elements: Option<String>,
    /// Group sizes of the group-size sweep, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub group_sizes: Vec<u32>,
    /// Elements each group adds per pass in the group-count and barrier sweeps.
    #[arg(long)]
    pub chunk: Option<u32>,
    /// Passes each group makes over its chunk in the group-count and barrier sweeps.
    #[arg(long)]
    pub passes: Option<u32>,
    /// Dynamic LDS per group of the LDS sweep, bytes, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub lds_bytes: Vec<u32>,
    /// Sweeps to run, comma-separated (default: all): copy, copy_kernel, group_size, group_size_x4, group_count,
    /// group_count_spin, spin_timeline, barrier, lds, lds_x4, registers.
    #[arg(long, value_delimiter = ',')]
    pub sweeps: Vec<String>,
}

fn occupancy_sweep(matches: &ArgMatches) -> Result<Box<dyn Experiment>, Error> {
    let args: OccupancyArgs = parsed(matches)?;
    let mut exp = OccupancySweep::default();
    if let Some(n) = &args.elements {
        exp.elements = options::parse_size("--elements", n)?;
    }
    if !args.group_sizes.is_empty() {
        exp.group_sizes = args.group_sizes;
    }
    if !args.lds_bytes.is_empty() {
        exp.lds_bytes = args.lds_bytes;
    }
    if let Some(bad) = args.sweeps.iter().find(|s| !SWEEPS.contains(&s.as_str())) {
        return Err(Error::Options(format!("--sweeps: unknown sweep `{bad}`; available: {}", SWEEPS.join(", "))));
    }
    exp.sweeps = args.sweeps;
    exp.chunk = args.chunk.unwrap_or(exp.chunk);
    exp.passes = args.passes.unwrap_or(exp.passes);
    if exp.chunk == 0 || exp.passes == 0 || exp.group_sizes.contains(&0) {
        return Err(Error::Options("--chunk, --passes and --group-sizes must be at least 1".into()));
    }
    Ok(Box::new(exp))
}

/// Occupancy's quick preset: the copy references, the group-size sweeps with both widths, the LDS sweep and the
/// residency probe, over 2^24 elements (past any L2) and fewer group sizes.
fn quick_occupancy() -> Box<dyn Experiment> {
    let full = OccupancySweep::default();
    Box::new(OccupancySweep {
        elements: 1 << 24,
        group_sizes: vec![32, 64, 96, 128, 256, 512, 768, 1024],
        lds_bytes: vec![4096, 16384, 32768, 65536, 131072],
        sweeps: ["copy", "copy_kernel", "group_size", "group_size_x4", "lds", "group_count_spin"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        ..full
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(cu: u64, group: u64, start: u64, end: u64) -> WaveRecord {
        WaveRecord { cu, group, start, end }
    }

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

    #[test]
    fn records_must_all_be_written_and_ordered() {
        let raw = [1, 0, 10, 20, 2, 1, 15, 30];
        assert_eq!(parse_records(&raw).unwrap(), vec![rec(1, 0, 10, 20), rec(2, 1, 15, 30)]);
        assert!(parse_records(&[1, 0, 10, u64::MAX]).unwrap_err().contains("not written"));
        assert!(parse_records(&[1, 0, 30, 20]).unwrap_err().contains("before it starts"));
        assert!(parse_records(&[1, 2, 3]).is_err());
    }

    #[test]
    fn resident_waves_and_groups_step_with_starts_and_ends() {
        // Group 0: two waves 0..100 on CU 1; group 1: one wave 50..150 on CU 2; group 2 starts as group 0 ends.
        let records = [rec(1, 0, 0, 100), rec(1, 0, 0, 100), rec(2, 1, 50, 150), rec(1, 2, 100, 200)];
        let steps = resident_over_time(&records, None);
        let compact: Vec<(u64, u32, u32)> = steps.iter().map(|s| (s.t, s.waves, s.groups)).collect();
        assert_eq!(compact, [(0, 2, 1), (50, 3, 2), (100, 2, 2), (150, 1, 1), (200, 0, 0)]);
        let cu1: Vec<(u64, u32)> = resident_over_time(&records, Some(1)).iter().map(|s| (s.t, s.waves)).collect();
        assert_eq!(cu1, [(0, 2), (100, 1), (200, 0)]);
    }

    #[test]
    fn phases_find_the_plateaus_not_the_ramps() {
        // 100 waves for 1000 ticks, a ramp, then 30 waves for 500 ticks.
        let mut steps = vec![Step { t: 0, waves: 100, groups: 10 }];
        for (i, w) in [90, 70, 50].iter().enumerate() {
            steps.push(Step { t: 1000 + 5 * i as u64, waves: *w, groups: 5 });
        }
        steps.push(Step { t: 1015, waves: 30, groups: 3 });
        steps.push(Step { t: 1515, waves: 0, groups: 0 });
        let p = phases(&steps, 0.05, 0.1);
        assert_eq!(p.len(), 2, "{p:?}");
        assert_eq!((p[0].start, p[0].end, p[0].waves), (0, 1000, 100));
        assert_eq!((p[1].start, p[1].end, p[1].waves), (1015, 1515, 30));
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
            let props = crate::occupancy::tests::h100();
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
        let props = crate::occupancy::tests::h100();
        let sweep =
            OccupancySweep { sweeps: vec!["copy_kernel".into(), "group_size_x4".into()], ..OccupancySweep::default() };
        let names: Vec<&str> = sweep.specs(&props, Some(4), Some(4)).into_iter().map(sweep_name).collect();
        assert_eq!(names.len(), 2 + sweep.group_sizes.len());
        assert!(names.iter().all(|n| ["copy_kernel", "group_size_x4"].contains(n)), "{names:?}");
        let all: std::collections::BTreeSet<&str> =
            OccupancySweep::default().specs(&props, Some(4), Some(4)).into_iter().map(sweep_name).collect();
        assert_eq!(all, SWEEPS.iter().copied().collect());
    }

    #[test]
    fn lds_and_register_formulas_on_small_cases() {
        let a = [1.0f32, 2.0, 3.0, 4.0, 5.0];
        let b = [10.0f32, 20.0, 30.0, 40.0, 50.0];
        // Groups of 2: [0,1] mirrored, [2,3] mirrored; item 4's mirror (5) is past the end.
        assert_eq!(lds_expected(&a, &b, 2, 1), vec![22.0, 11.0, 44.0, 33.0, 0.0]);
        // Two elements per item, groups of 2 items: item 0 (elements 0, 1) takes item 1's (2, 3); item 2's mirror
        // (item 3, elements 6 and 7) is past the end.
        assert_eq!(lds_expected(&a, &b, 2, 2), vec![33.0, 44.0, 11.0, 22.0, 0.0]);
        // Windows of 2 starting at min(i, n - 2); odd rounds flip each value to 3 - v.
        let a = [1.0f32, 1.5, 2.0];
        assert_eq!(registers_expected(&a, 2, 2), vec![2.5, 3.5, 3.5]);
        assert_eq!(registers_expected(&a, 2, 1), vec![3.5, 2.5, 2.5]);
        // Fewer elements than values: every value is a[i].
        assert_eq!(registers_expected(&a[..1], 2, 0), vec![2.0]);
    }
}
