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
//!
//! Files: this one (the sweep, which is also the command line, and the points), `specs.rs` (the points of each
//! sweep, their geometry, sizes and work), `cases.rs` (inputs, launches, host references), `timeline.rs` (the
//! per-wave records and their analysis), `plots.rs` (headlines and plots), `achieved.rs` (achieved beside
//! theoretical occupancy, from the counters of `suite run --counters`), `compare.rs` (`suite compare`).

mod achieved;
mod cases;
mod compare;
mod inputs;
mod plots;
mod specs;
mod timeline;

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

pub use self::cases::{lds_expected, registers_expected};
pub use self::compare::OccupancyComparison;
pub use self::plots::plots;
use self::specs::{bytes_moved, elements_of, geometry, point_work, resources, sweep_name, symbol, Spec};
pub use self::specs::{group_counts, spin_timeline_groups, BarrierConfig, BARRIER_CONFIGS, COPY_GROUP};
pub use self::timeline::{
    parse_records, phases, read_timeline, resident_over_time, timeline_file, Phase, Step, WaveRecord, RECORD_WORDS,
    TIMELINE_HEADER,
};
use super::entry::{defaults, size_arg, Entry, Sweep};
use super::{Case, Error, Experiment, Metric, Params, Point, Points, Results, RunContext};
use crate::device::Props;
use crate::occupancy_calculator;
use crate::options::{Memory, MAX_GROUPS_X};
use crate::report::plot::LinePlot;

/// Kernel source of the experiment.
const SOURCE: &str = "occupancy";

/// The sweeps' settings: the flagged fields are the flags of `suite run occupancy`, the others fixed settings.
#[derive(Debug, Clone, PartialEq, Serialize, clap::Args)]
pub struct OccupancySweep {
    /// Elements per array for the copy, group-size, LDS and register sweeps (integer or 2^N).
    #[arg(long, value_parser = size_arg, default_value = "2^26")]
    pub elements: usize,
    /// Group sizes of the group-size sweep, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [32u32, 48, 64, 80, 96, 128, 160, 192, 256, 320, 384, 512, 640, 768, 896, 1024])]
    pub group_sizes: Vec<u32>,
    /// Items per group of the group-count sweep, the seed's 512.
    #[arg(skip = 512u32)]
    pub count_group_size: u32,
    /// Elements each group adds per pass in the group-count and barrier sweeps.
    #[arg(long, default_value_t = 512 * 16)]
    pub chunk: u32,
    /// Passes each group makes over its chunk in the group-count and barrier sweeps: enough work that groups stay
    /// resident long.
    #[arg(long, default_value_t = 64)]
    pub passes: u32,
    /// How long each wave of the residency probe holds its slot, in microseconds.
    #[arg(skip = 20.0)]
    pub spin_us: f64,
    /// Dynamic LDS per group of the LDS sweep, bytes, comma-separated: at least 4 per item (sizes the device cannot
    /// give a group become invalid rows).
    #[arg(long, value_delimiter = ',', default_values_t = [1024u32, 2048, 4096, 8192, 12288, 16384, 24576, 32768, 49152, 65536, 98304, 131072, 229376])]
    pub lds_bytes: Vec<u32>,
    /// Live values per item of the register-pressure kernels.
    #[arg(skip = vec![16, 32, 64, 96, 128, 192])]
    pub register_values: Vec<u32>,
    /// Rounds of FMAs over the live values in the register-pressure kernels.
    #[arg(skip = 8u32)]
    pub register_rounds: u32,
    /// Sweeps to run, comma-separated (default: all): copy, copy_kernel, group_size, group_size_x4, group_count,
    /// group_count_spin, spin_timeline, barrier, lds, lds_x4, registers.
    #[arg(long, value_delimiter = ',')]
    pub sweeps: Vec<String>,
}

impl Default for OccupancySweep {
    fn default() -> Self {
        defaults()
    }
}

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

impl Sweep for OccupancySweep {
    const NAME: &'static str = "occupancy";
    const HELP: &'static str = "Occupancy: group size, group count, barriers, LDS and registers vs time and \
                                bandwidth, with the theoretical occupancy of every point and timelines of resident \
                                waves recorded inside the kernels.";
    const RESULTS: &'static dyn Results = &OccupancyResults;

    /// The copy references, the group-size sweeps with both widths, the LDS sweep and the residency probe, over
    /// 2^24 elements (past any L2) and fewer group sizes.
    fn quick() -> Self {
        OccupancySweep {
            elements: 1 << 24,
            group_sizes: vec![32, 64, 96, 128, 256, 512, 768, 1024],
            lds_bytes: vec![4096, 16384, 32768, 65536, 131072],
            sweeps: ["copy", "copy_kernel", "group_size", "group_size_x4", "lds", "group_count_spin"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            ..OccupancySweep::default()
        }
    }

    fn check(self) -> Result<Self, Error> {
        if let Some(bad) = self.sweeps.iter().find(|s| !SWEEPS.contains(&s.as_str())) {
            return Err(Error::Options(format!("--sweeps: unknown sweep `{bad}`; available: {}", SWEEPS.join(", "))));
        }
        if self.chunk == 0 || self.passes == 0 || self.group_sizes.contains(&0) {
            return Err(Error::Options("--chunk, --passes and --group-sizes must be at least 1".into()));
        }
        Ok(self)
    }
}

/// `suite run occupancy`.
pub const ENTRY: Entry = Entry::of::<OccupancySweep>();

/// Occupancy's read side: its columns, plots (timelines included, read from the results folder), headlines,
/// comparison (% of each run's copy) and roofline, whose memory ceiling is the driver copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OccupancyResults;

impl Results for OccupancyResults {
    fn roofline(&self) -> crate::report::roofline::Role {
        // The driver copy is the run's memory ceiling.
        crate::report::roofline::Role {
            family: |r| r.get("sweep").cloned().unwrap_or_default(),
            is_copy: super::copy_reference::is_driver_copy,
            ..Default::default()
        }
    }

    fn comparison(&self) -> Box<dyn crate::report::compare::Comparison> {
        Box::new(OccupancyComparison)
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

    fn plots(&self, rows: &[BTreeMap<String, String>], dir: &Path) -> Vec<(String, LinePlot)> {
        plots(rows, dir)
    }

    fn headlines(&self, rows: &[BTreeMap<String, String>]) -> Vec<String> {
        plots::headlines(rows)
    }
}

impl Experiment for OccupancySweep {
    fn results(&self) -> &'static dyn Results {
        Self::RESULTS
    }

    fn options(&self, _device: &Props) -> serde_json::Value {
        serde_json::json!({ "sweep": self, "barrier_configs": BARRIER_CONFIGS })
    }

    fn sources(&self) -> &'static [&'static str] {
        &[SOURCE]
    }

    /// `kernels/occupancy.hip`'s cold compile: nvcc 1.2 s, hipcc 1.5 s, on this repository's two-core build machine (nvcc 13.5.37, sm_90; hipcc 5.2, gfx90a; commit 7ef0cdd).
    fn compile_figures(&self, _name: &str) -> Option<crate::experiments::compile_estimate::CompileFigures> {
        Some(crate::experiments::compile_estimate::CompileFigures { nvcc_s: 1.2, hipcc_s: 1.5 })
    }
}

impl Points for OccupancySweep {
    type Spec = Spec;

    fn points(&self, ctx: &RunContext) -> Vec<Point<Spec>> {
        let (gpu, props) = (ctx.gpu, ctx.props());
        let memory = Memory::of(props.memory_bytes);
        self.specs_on(gpu)
            .into_iter()
            .map(|spec| {
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
                let mut occ_cols: [String; 5] = Default::default();
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
                                match occupancy_calculator::theoretical(props, res) {
                                    Err(e) => invalid = Some(e.to_string()),
                                    Ok(occ) => {
                                        let capacity = u64::from(occ.groups_per_cu) * u64::from(props.cu_count);
                                        occ_cols = [
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
                let [groups_per_cu, waves_per_cu, occupancy_pct, limiter, rounds] = occ_cols;
                let launched = |v: String| if spec == Spec::Copy { String::new() } else { v };
                Point {
                    spec,
                    key,
                    params: Params::of(Self::RESULTS)
                        .set("sweep", sweep_name(spec))
                        .set("config", config)
                        .set("kernel", name)
                        .set("group_size", launched(group.to_string()))
                        .set("groups", launched(groups.to_string()))
                        .set("dynamic_lds_bytes", dynamic_lds)
                        .set("registers_per_item", registers)
                        .set("elements", elements.map(|e| e.to_string()).unwrap_or_default())
                        .set("bytes", bytes.map(|b| b.to_string()).unwrap_or_default())
                        .set("groups_per_cu", groups_per_cu)
                        .set("waves_per_cu", waves_per_cu)
                        .set("occupancy_pct", occupancy_pct)
                        .set("limiter", limiter)
                        .set("rounds", rounds)
                        .row(),
                    invalid,
                    work: point_work(self, spec, elements, bytes),
                }
            })
            .collect()
    }

    fn prepare<'g>(&self, ctx: &RunContext<'g>, spec: &Spec) -> Result<Box<dyn Case + 'g>, Error> {
        cases::prepare(self, ctx, *spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sweep `suite run occupancy ARGS` asks for, as its options JSON, or the error.
    fn sweep_of(args: &[&str]) -> Result<serde_json::Value, String> {
        let cmd = (ENTRY.flags)(clap::Command::new("occupancy"));
        let matches = cmd.try_get_matches_from(std::iter::once("occupancy").chain(args.iter().copied()));
        let matches = matches.map_err(|e| e.to_string())?;
        (ENTRY.sweep)(&matches)
            .map(|s| s.options(&crate::occupancy_calculator::tests::h100()))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn the_default_sweep_keeps_the_options_earlier_runs_recorded() {
        // run.json of earlier runs holds these options: resume and merge compare them.
        let sweep = serde_json::json!({
            "elements": 1 << 26,
            "group_sizes": [32, 48, 64, 80, 96, 128, 160, 192, 256, 320, 384, 512, 640, 768, 896, 1024],
            "count_group_size": 512,
            "chunk": 8192,
            "passes": 64,
            "spin_us": 20.0,
            "lds_bytes": [1024, 2048, 4096, 8192, 12288, 16384, 24576, 32768, 49152, 65536, 98304, 131072, 229376],
            "register_values": [16, 32, 64, 96, 128, 192],
            "register_rounds": 8,
            "sweeps": [],
        });
        let options = sweep_of(&[]).unwrap();
        assert_eq!(options["sweep"], sweep);
        assert_eq!(options["barrier_configs"][1]["name"], "seed_24x224");
        let quick = (ENTRY.quick)().options(&crate::occupancy_calculator::tests::h100());
        assert_eq!(quick["sweep"]["elements"], 1 << 24);
        assert_eq!(quick["sweep"]["sweeps"][5], "group_count_spin");
        assert_eq!(quick["sweep"]["passes"], 64);
    }

    #[test]
    fn flags_set_their_knobs_and_bad_values_name_the_flag() {
        let options = sweep_of(&["--elements", "2^20", "--group-sizes", "64,96", "--sweeps", "copy,lds"]).unwrap();
        assert_eq!(options["sweep"]["elements"], 1 << 20);
        assert_eq!(options["sweep"]["group_sizes"], serde_json::json!([64, 96]));
        assert_eq!(options["sweep"]["sweeps"], serde_json::json!(["copy", "lds"]));
        assert_eq!(options["sweep"]["chunk"], 8192);
        for (args, message) in [
            (vec!["--sweeps", "copy,nosuch"], "--sweeps: unknown sweep `nosuch`; available: copy, copy_kernel"),
            (vec!["--passes", "0"], "--chunk, --passes and --group-sizes must be at least 1"),
            (vec!["--group-sizes", "64,0"], "--chunk, --passes and --group-sizes must be at least 1"),
            (vec!["--elements", "0"], "sizes must be at least 1"),
            (vec!["--elements", "many"], "`many` is not a size"),
        ] {
            let err = sweep_of(&args).unwrap_err();
            assert!(err.contains(message), "{args:?}: {err}");
        }
        assert!(sweep_of(&["--elements", "0"]).unwrap_err().contains("--elements"));
    }
}
