//! Persistent threads (PT) vs ordinary launches (non-PT): the four use cases of Gupta, Stuart and Owens (InPar
//! 2012, `seeds/persistent-threads-study-gupta-stuart-owens.txt`), with the kernels in `kernels/pt.hip`.
//!
//! - `sync` (CPU-GPU synchronisation): a producer makes `items` items; non-PT reads the count back and launches a
//!   consumer sized to it, PT launches a persistent consumer at maximal launch that reads the count on the device.
//!   Work per item: `fmas` FMAs, compute only (`ci`) or with a strided table read per FMA (`cmi`).
//! - `roundtrip`: the bare round trip (empty kernel, 4-byte readback, empty kernel) and its parts.
//! - `forest_full`, `forest_tilted` (load balancing): a forest traversed level by level (non-PT: one launch and one
//!   readback per level) or through one device work queue (PT).
//! - `reduce`, `chain` (maintaining active state): a global sum with the running sum in registers (PT, one launch)
//!   vs one group per tile and a second pass (non-PT); a two-stage chain handing data through LDS (PT) vs global
//!   memory (non-PT).
//! - `jacobi` (global synchronisation): `steps` Jacobi steps, one launch per step (non-PT), or one kernel with the
//!   platform's cooperative grid barrier (`pt_coop`) or a software barrier (`pt_soft`), at the maximal launch and
//!   at fewer groups per CU (`--groups-per-cu`).
//! - `barrier`: the barrier alone, `steps` of them with no work between: software, cooperative, and the relaunch
//!   equivalent (one otherwise empty launch per step, replayed as a graph), at each groups-per-CU setting.
//! - `queue`: the PT consumer's queue granularity: one atomic pop per item, per wave, per group, per chunk of K
//!   groups' worth of items, and a static schedule with no atomics.
//!
//! Maximal launch = CUs × resident groups per CU from the runtime's occupancy query (`max_groups`), recorded next
//! to the suite's own calculator (`calc_groups`). Non-PT sequences with host readbacks are timed by the host clock
//! (`timing` = `host`) and so are their PT counterparts (launch to final synchronisation), so that the speedup
//! compares like with like; sequences with no host step also get a row timed by device events (`clock` = `device`).
//! The speedup non-PT/PT pairs two rows ([`pairs`]) and is derived from the CSV as `pt-speedup.csv` ([`derived`]).
//!
//! Files: this one (the sweep, which is `suite run pt`'s command line, and the experiment), [`spec`] (the points),
//! [`reference`] (the host's references), `cases/` (one file per use case), [`pairing`], [`derived`], [`plots`],
//! `summary` (the headlines) and [`compare`] (`suite compare`).

mod cases;
pub mod compare;
pub mod derived;
mod headlines;
pub mod pairing;
pub mod plots;
pub mod reference;
pub mod spec;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::Serialize;

use super::entry::{defaults, size_arg_u64, Entry, Sweep};
use super::{Case, Error, Experiment, Metric, Params, Point, Points, Results, RunContext};
use crate::device::Props;
use crate::options::Memory;
use crate::report::plot::LinePlot;

pub use cases::{check_coresident, maximal_launch, prepare_spec, BarrierCase, JacobiCase, JacobiInputs};
pub use compare::PtComparison;
pub use pairing::{pairs, step_costs, Pair, StepCost};
pub use plots::plots;
pub use reference::{
    forest_reference, forest_size, hash, jacobi_reference, sum_tolerance, unit, work_ci, work_cmi, ForestReference,
};
pub use spec::{BarrierCounters, ClockKind, Flavour, Part, PerCu, Queue, SoftBarrier, Spec, Variant};

use spec::{launches_and_groups, point_work};

/// The kernel source.
pub const SOURCE: &str = "pt";
/// Items per group of every PT and non-PT kernel (the paper's 256).
pub const GROUP: u32 = 256;
/// FMA counts per item with a compiled wrapper (`pt_*_f<N>` in `kernels/pt.hip`).
pub const FMAS: [i64; 5] = [1, 4, 16, 64, 256];
/// Use cases `--use-cases` accepts.
pub const USE_CASES: [&str; 8] = ["sync", "roundtrip", "forest", "reduce", "chain", "jacobi", "barrier", "queue"];
/// Elements of the CMI table (64 MiB of FP32: larger than any current L2, so the strided reads reach memory).
pub const CMI_TABLE: usize = 1 << 24;
/// Largest forest the sweep traverses, in nodes (a 256 MiB queue of 8-byte nodes).
pub const MAX_FOREST_NODES: u64 = 1 << 25;
/// Levels a forest may have (`PT_MAX_LEVELS` in the kernels: its per-level counters live in LDS).
pub const MAX_LEVELS: u32 = 32;
/// Status bits the kernels set (`PT_STATUS_*`).
const STATUS_TIMEOUT: u32 = 1;
const STATUS_OVERFLOW: u32 = 2;
const STATUS_ORDER: u32 = 4;
/// The software barrier's arrival counters: at most this many (`PT_BARRIER_MAX_COUNTERS`), each on its own line of
/// this many 32-bit words (`PT_BARRIER_LINE_WORDS`: 128 bytes).
pub const MAX_BARRIER_COUNTERS: u32 = 8;
const BARRIER_LINE_WORDS: usize = 32;
/// Queue granularity codes of `pt_sync_pt_*` (`PT_QUEUE_*`).
const QUEUE_ITEM: u32 = 0;
const QUEUE_WAVE: u32 = 1;
const QUEUE_GROUP: u32 = 2;
const QUEUE_CHUNK: u32 = 3;
const QUEUE_STATIC: u32 = 4;
/// FMAs of the chain's stage A (`PT_CHAIN_FMAS`).
const CHAIN_FMAS: u32 = 16;
/// The FMA chain's constants (`PT_A`, `PT_B`) and the CMI table's stride (`PT_STRIDE`).
const A: f32 = 0.9375;
const B: f32 = 0.0625;
const STRIDE: u32 = 4099;
/// `skip_group` value that skips no group.
const SKIP_NONE: u32 = u32::MAX;

/// The PT sweep: its fields are the flags of `suite run pt` (those marked `skip` are fixed, recorded in run.json).
/// The defaults: sizes from far below one wave of groups (2^10 items = 4 groups) to far above the maximal launch
/// (2^22), the paper's FMA range, forests from 1 to 1024 trees and 4 to 12 levels, vectors of 2^12 to 2^24
/// elements, 10 to 1000 barrier steps at 1, 2, 4 groups per CU and the maximal launch, and a software barrier of one
/// arrival counter per group per CU (see [`BarrierCounters::PerGroupPerCu`]).
#[derive(Debug, Clone, PartialEq, Serialize, clap::Args)]
pub struct PtSweep {
    /// Use cases, comma-separated (default: all): sync, roundtrip, forest, reduce, chain, jacobi, barrier, queue.
    #[arg(long, value_delimiter = ',', default_values = USE_CASES)]
    pub use_cases: Vec<String>,
    /// Items the producer makes (sync), comma-separated (integers, or 2^N).
    #[arg(long, value_delimiter = ',', value_parser = size_arg_u64, default_values = ["2^10", "2^13", "2^16", "2^19", "2^22"])]
    pub items: Vec<u64>,
    /// FMAs per item (sync), comma-separated: each one of 1, 4, 16, 64, 256 (others are invalid rows).
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true, default_values_t = FMAS)]
    pub fmas: Vec<i64>,
    /// Forest levels, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [4u32, 8, 12])]
    pub levels: Vec<u32>,
    /// Forest initial inputs (trees), comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [1u32, 32, 1024])]
    pub inputs: Vec<u32>,
    /// FMAs per forest node (fixed).
    #[arg(skip = 16)]
    pub forest_fmas: i64,
    /// Elements of the reduction, chain and Jacobi vectors, comma-separated (integers, or 2^N).
    #[arg(long, value_delimiter = ',', value_parser = size_arg_u64, default_values = ["2^12", "2^16", "2^20", "2^24"])]
    pub sizes: Vec<u64>,
    /// Elements of the Jacobi vectors, comma-separated (integers, or 2^N).
    #[arg(long, value_delimiter = ',', value_parser = size_arg_u64, default_values = ["2^12", "2^16", "2^20"])]
    pub jacobi_sizes: Vec<u64>,
    /// Jacobi steps, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [10u32, 100, 1000])]
    pub steps: Vec<u32>,
    /// Items of the queue-granularity study (fixed).
    #[arg(skip = vec![1 << 16, 1 << 22])]
    pub queue_items: Vec<u64>,
    /// FMAs per item of the queue-granularity study (fixed).
    #[arg(skip = vec![1, 16])]
    pub queue_fmas: Vec<i64>,
    /// Chunk sizes K (groups' worth of items per atomic pop) of the queue study, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [4u32, 16])]
    pub chunks: Vec<u32>,
    /// Groups per CU of the global-synchronisation points (jacobi, barrier), comma-separated: counts below the
    /// maximal launch's, and `max` (the maximal launch).
    #[arg(long, value_delimiter = ',', value_parser = per_cu_arg, default_values = ["1", "2", "4", "max"])]
    pub groups_per_cu: Vec<PerCu>,
    /// Arrival counters of the software grid barrier: `auto` (one per group per CU, 1 to 8) or 1 to 8; each group
    /// adds to counter group % counters and waits for all of them.
    #[arg(long, value_parser = barrier_counters_arg, default_value = "auto")]
    pub barrier_counters: BarrierCounters,
    /// Idle iterations a device wait loop spins before it reports a timeout (an `error` row).
    #[arg(long, default_value_t = 1 << 22)]
    pub spin_limit: u32,
}

/// Parses one `--groups-per-cu` value.
fn per_cu_arg(text: &str) -> Result<PerCu, String> {
    PerCu::parse(text).ok_or_else(|| format!("`{text}` is neither a positive count nor `max`"))
}

/// Parses `--barrier-counters`.
fn barrier_counters_arg(text: &str) -> Result<BarrierCounters, String> {
    BarrierCounters::parse(text)
        .ok_or_else(|| format!("`{text}` is neither `auto` nor a count from 1 to {MAX_BARRIER_COUNTERS}"))
}

impl Default for PtSweep {
    fn default() -> Self {
        defaults()
    }
}

impl Sweep for PtSweep {
    const NAME: &'static str = "pt";
    const HELP: &'static str = "Persistent threads vs ordinary launches: the paper's four use cases (CPU-GPU sync, \
                                forest load balancing, active state, global barriers), the bare round trip and the \
                                queue's granularity.";
    const RESULTS: &'static dyn Results = &PtResults;

    /// Every use case at one small and one large size (below and far above the maximal launch), the paper's
    /// lightest and a heavy work per item.
    fn quick() -> Self {
        PtSweep {
            items: vec![1 << 13, 1 << 19],
            fmas: vec![1, 64],
            levels: vec![8],
            inputs: vec![1, 1024],
            sizes: vec![1 << 16, 1 << 24],
            jacobi_sizes: vec![1 << 16],
            steps: vec![100],
            queue_items: vec![1 << 22],
            queue_fmas: vec![1],
            chunks: vec![4],
            ..PtSweep::default()
        }
    }

    fn check(self) -> Result<Self, Error> {
        if let Some(bad) = self.use_cases.iter().find(|s| !USE_CASES.contains(&s.as_str())) {
            return Err(Error::Options(format!(
                "--use-cases: unknown use case `{bad}`; available: {}",
                USE_CASES.join(", ")
            )));
        }
        if self.spin_limit == 0 {
            return Err(Error::Options("--spin-limit must be at least 1".into()));
        }
        Ok(self)
    }
}

/// `suite run pt`.
pub const ENTRY: Entry = Entry::of::<PtSweep>();

impl PtSweep {
    fn wants(&self, use_case: &str) -> bool {
        self.use_cases.iter().any(|u| u == use_case)
    }

    /// The software barrier's settings.
    pub fn soft_barrier(&self) -> SoftBarrier {
        SoftBarrier { spin_limit: self.spin_limit, counters: self.barrier_counters }
    }

    /// Every point, in a fixed order.
    pub fn specs(&self) -> Vec<Spec> {
        use ClockKind::{Device, Host};
        let mut out = Vec::new();
        if self.wants("roundtrip") {
            out.extend([Part::Launch, Part::Readback, Part::Full].map(|part| Spec::RoundTrip { part }));
        }
        if self.wants("sync") {
            for flavour in [Flavour::Ci, Flavour::Cmi] {
                for &fmas in &self.fmas {
                    for &items in &self.items {
                        for (variant, clock) in [(Variant::NonPt, Host), (Variant::Pt, Host), (Variant::Pt, Device)] {
                            let queue = Queue::Group;
                            out.push(Spec::Sync { variant, queue, flavour, items, fmas, clock, study: false });
                        }
                    }
                }
            }
        }
        if self.wants("queue") {
            let mut queues = vec![Queue::Item, Queue::Wave, Queue::Group];
            queues.extend(self.chunks.iter().map(|&k| Queue::Chunk(k)));
            queues.push(Queue::Static);
            for &fmas in &self.queue_fmas {
                for &items in &self.queue_items {
                    for &queue in &queues {
                        out.push(Spec::Sync {
                            variant: Variant::Pt,
                            queue,
                            flavour: Flavour::Ci,
                            items,
                            fmas,
                            clock: Device,
                            study: true,
                        });
                    }
                }
            }
        }
        if self.wants("forest") {
            for tilted in [false, true] {
                for &levels in &self.levels {
                    for &inputs in &self.inputs {
                        for (variant, clock) in [(Variant::NonPt, Host), (Variant::Pt, Host), (Variant::Pt, Device)] {
                            out.push(Spec::Forest { variant, tilted, levels, inputs, fmas: self.forest_fmas, clock });
                        }
                    }
                }
            }
        }
        for (name, make) in [
            ("reduce", (|variant, n, clock| Spec::Reduce { variant, n, clock }) as fn(Variant, u64, ClockKind) -> Spec),
            ("chain", |variant, n, clock| Spec::Chain { variant, n, clock }),
        ] {
            if self.wants(name) {
                for &n in &self.sizes {
                    for clock in [Host, Device] {
                        for variant in [Variant::NonPt, Variant::Pt] {
                            out.push(make(variant, n, clock));
                        }
                    }
                }
            }
        }
        if self.wants("jacobi") {
            for &n in &self.jacobi_sizes {
                for &steps in &self.steps {
                    // Non-PT and the PT variants at the maximal launch on both clocks (their speedup pairs); fewer
                    // groups per CU on the device clock only, where the barrier's own cost shows.
                    for clock in [Host, Device] {
                        for variant in [Variant::NonPt, Variant::PtCoop, Variant::PtSoft] {
                            out.push(Spec::Jacobi { variant, n, steps, clock, per_cu: PerCu::Max });
                        }
                    }
                    for &per_cu in self.groups_per_cu.iter().filter(|&&p| p != PerCu::Max) {
                        for variant in [Variant::PtCoop, Variant::PtSoft] {
                            out.push(Spec::Jacobi { variant, n, steps, clock: Device, per_cu });
                        }
                    }
                }
            }
        }
        if self.wants("barrier") {
            for &steps in &self.steps {
                for &per_cu in &self.groups_per_cu {
                    for variant in [Variant::NonPt, Variant::PtCoop, Variant::PtSoft] {
                        out.push(Spec::Barrier { variant, steps, per_cu });
                    }
                }
            }
        }
        out
    }
}

/// Parameter columns (see docs/method.md, CSV columns).
const COLUMNS: [&str; 15] = [
    "use_case",
    "variant",
    "queue",
    "flavour",
    "items",
    "fmas",
    "levels",
    "steps",
    "launches",
    "groups",
    "max_groups",
    "calc_groups",
    "groups_per_cu",
    "barrier_counters",
    "clock",
];

/// Persistent threads' read side: its columns, plots, speedup table, headlines and comparison; its rows stay off
/// the roofline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PtResults;

impl Results for PtResults {
    fn name(&self) -> &'static str {
        PtSweep::NAME
    }

    fn param_columns(&self) -> &'static [&'static str] {
        &COLUMNS
    }

    fn metric(&self) -> Metric {
        Metric {
            column: "gitems_per_s",
            formula: "G items/s = items processed by one sequence (produced items, forest nodes, elements, or \
                      elements x steps; 1 for a round-trip part; steps for the barrier alone) / median time / 1e9",
        }
    }

    fn plots(&self, rows: &[BTreeMap<String, String>], _dir: &Path) -> Vec<(String, LinePlot)> {
        plots::plots(rows)
    }

    fn derived_tables(&self, rows: &[BTreeMap<String, String>], _dir: &Path) -> Vec<(String, String)> {
        derived::tables(rows)
    }

    fn roofline(&self) -> crate::report::roofline::Role {
        crate::report::roofline::Role {
            off: Some(
                "persistent threads' rows time sequences with host steps and device waits, not one kernel's FLOP rate",
            ),
            ..Default::default()
        }
    }

    fn comparison(&self) -> Box<dyn crate::report::compare::Comparison> {
        Box::new(PtComparison)
    }

    fn headlines(&self, rows: &[BTreeMap<String, String>]) -> Vec<String> {
        headlines::headlines(rows)
    }
}

impl Experiment for PtSweep {
    fn results(&self) -> &'static dyn Results {
        Self::RESULTS
    }

    fn options(&self, _device: &Props) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    fn sources(&self) -> &'static [&'static str] {
        &["pt"]
    }

    /// `kernels/pt.hip`'s cold compile: nvcc 7.8 s, hipcc 5.6 s, on this repository's two-core build machine (nvcc 13.5.37, sm_90; hipcc 5.2, gfx90a; commit 7ef0cdd).
    fn compile_figures(&self, _name: &str) -> Option<crate::experiments::compile_estimate::CompileFigures> {
        Some(crate::experiments::compile_estimate::CompileFigures { nvcc_s: 7.8, hipcc_s: 5.6 })
    }
}

impl Points for PtSweep {
    type Spec = Spec;

    fn points(&self, ctx: &RunContext) -> Vec<Point<Spec>> {
        let (gpu, props) = (ctx.gpu, ctx.props());
        let memory = Memory::of(props.memory_bytes);
        let mut maximal: HashMap<String, Result<(u32, Option<u32>), String>> = HashMap::new();
        self.specs()
            .into_iter()
            .map(|spec| {
                let mut invalid = spec.problem(&memory);
                let (mut max_groups, mut calc_groups) = (String::new(), String::new());
                if let (None, Some(name)) = (&invalid, spec.pt_kernel()) {
                    let m = maximal
                        .entry(name.clone())
                        .or_insert_with(|| {
                            gpu.kernel(SOURCE, &name)
                                .map_err(Error::from)
                                .and_then(|k| maximal_launch(gpu, &k))
                                .map_err(|e| e.to_string())
                        })
                        .clone();
                    match m {
                        Ok((groups, calc)) => {
                            max_groups = groups.to_string();
                            calc_groups = calc.map(|c| c.to_string()).unwrap_or_default();
                        }
                        Err(e) => invalid = Some(format!("maximal launch of {name}: {e}")),
                    }
                }
                // The grid of the global-synchronisation points, from their groups per CU.
                let mut grid = None;
                if let (None, Some(per_cu), Ok(max)) = (&invalid, spec.per_cu(), max_groups.parse::<u32>()) {
                    match per_cu.grid(props.cu_count, max) {
                        Ok(g) => grid = Some(g),
                        Err(e) => invalid = Some(e),
                    }
                }
                let (launches, groups) = launches_and_groups(&spec, max_groups.parse().ok(), grid);
                let groups_per_cu = grid.map(|g| (g / props.cu_count.max(1)).to_string()).unwrap_or_default();
                let soft = self.soft_barrier();
                let barrier_counters = match (spec.variant(), grid) {
                    (Variant::PtSoft, Some(g)) => soft.counters(g, props.cu_count).to_string(),
                    _ => String::new(),
                };
                let (queue, flavour, items, fmas, levels, steps) = match spec {
                    Spec::Sync { queue, flavour, items, fmas, variant, .. } => (
                        if variant == Variant::NonPt { String::new() } else { queue.name() },
                        flavour.name().to_string(),
                        items.to_string(),
                        fmas.to_string(),
                        String::new(),
                        String::new(),
                    ),
                    Spec::RoundTrip { part } => {
                        (part.name().into(), String::new(), "1".into(), "0".into(), "".into(), "".into())
                    }
                    Spec::Forest { inputs, fmas, levels, .. } => (
                        String::new(),
                        "ci".into(),
                        inputs.to_string(),
                        fmas.to_string(),
                        levels.to_string(),
                        "".into(),
                    ),
                    Spec::Reduce { n, .. } => {
                        (String::new(), String::new(), n.to_string(), "0".into(), "".into(), "".into())
                    }
                    Spec::Chain { n, .. } => {
                        (String::new(), "ci".into(), n.to_string(), CHAIN_FMAS.to_string(), "".into(), "".into())
                    }
                    Spec::Jacobi { n, steps, .. } => {
                        (String::new(), String::new(), n.to_string(), "0".into(), "".into(), steps.to_string())
                    }
                    Spec::Barrier { steps, .. } => {
                        (String::new(), String::new(), "0".into(), "0".into(), "".into(), steps.to_string())
                    }
                };
                Point {
                    spec,
                    key: spec.key(),
                    params: Params::of(Self::RESULTS)
                        .set("use_case", spec.use_case())
                        .set("variant", spec.variant().name())
                        .set("queue", queue)
                        .set("flavour", flavour)
                        .set("items", items)
                        .set("fmas", fmas)
                        .set("levels", levels)
                        .set("steps", steps)
                        .set("launches", launches)
                        .set("groups", groups)
                        .set("max_groups", max_groups)
                        .set("calc_groups", calc_groups)
                        .set("groups_per_cu", groups_per_cu)
                        .set("barrier_counters", barrier_counters)
                        .set("clock", spec.clock().name())
                        .row(),
                    invalid,
                    work: point_work(&spec),
                }
            })
            .collect()
    }

    fn prepare<'g>(&self, ctx: &RunContext<'g>, spec: &Spec) -> Result<Box<dyn Case + 'g>, Error> {
        prepare_spec(ctx, *spec, self.soft_barrier())
    }
}

#[cfg(test)]
mod tests;
