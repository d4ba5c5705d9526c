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
//! The speedup non-PT/PT pairs two rows and is derived from the CSV by [`plots`] (also written as `pt-speedup.csv`).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::Serialize;

use super::estimate::{LAUNCH_S, STREAMING_SHARE};
use super::{Case, Clock, Error, Experiment, Metric, Point, Work};
use crate::device::{self, Arg, Buffer, Kernel, LaunchConfig};
use crate::gpu::Gpu;
use crate::occupancy::{self, Resources};
use crate::options::Memory;
use crate::report::plot::{Axis, LinePlot, Series};
use crate::verify::{self, Verification, F32_EPS};

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

/// PT or non-PT, and for global synchronisation which barrier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Variant {
    /// Ordinary launches sized to the work (with host readbacks where the size is only known on the device).
    NonPt,
    /// Persistent threads at maximal launch with a work queue or a static schedule.
    Pt,
    /// Persistent threads with the platform's cooperative launch and grid barrier.
    PtCoop,
    /// Persistent threads with a software grid barrier (release atomic adds on 1 to 8 arrival counters, polled).
    PtSoft,
}

impl Variant {
    /// CSV value.
    pub fn name(self) -> &'static str {
        match self {
            Variant::NonPt => "non_pt",
            Variant::Pt => "pt",
            Variant::PtCoop => "pt_coop",
            Variant::PtSoft => "pt_soft",
        }
    }
}

/// Groups per CU of a PT grid: the maximal launch, or fewer (where the barrier's cost comes from).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum PerCu {
    /// The maximal launch: as many groups per CU as the occupancy query says are resident at once.
    Max,
    /// This many groups per CU (fewer than the maximal launch's).
    Groups(u32),
}

impl PerCu {
    /// Parses `max` or a positive count.
    pub fn parse(text: &str) -> Option<PerCu> {
        match text.trim() {
            "max" => Some(PerCu::Max),
            t => t.parse().ok().filter(|&k| k > 0).map(PerCu::Groups),
        }
    }

    /// What the point's key adds: nothing at the maximal launch (so those keys are the ones earlier runs wrote).
    fn key_suffix(self) -> String {
        match self {
            PerCu::Max => String::new(),
            PerCu::Groups(k) => format!(",per_cu={k}"),
        }
    }

    /// The grid on `cus` CUs whose maximal launch is `maximal` groups, or why there is none.
    pub fn grid(self, cus: u32, maximal: u32) -> Result<u32, String> {
        let per_cu_max = maximal / cus.max(1);
        match self {
            PerCu::Max => Ok(maximal),
            PerCu::Groups(k) if k < per_cu_max => Ok(k * cus),
            PerCu::Groups(k) if k == per_cu_max => Err(format!(
                "{k} groups per CU is the maximal launch here ({maximal} groups): the `max` row measures it"
            )),
            PerCu::Groups(k) => Err(format!(
                "{k} groups per CU is more than the {per_cu_max} per CU that can be resident at once (maximal \
                 launch {maximal}): a grid barrier would wait forever"
            )),
        }
    }
}

/// How many arrival counters the software grid barrier spreads the groups' adds over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum BarrierCounters {
    /// As many as the grid has groups per CU (1 to [`MAX_BARRIER_COUNTERS`]): on an H200 one counter was the
    /// fastest at 1 group per SM (1.19 µs per barrier alone, 8 counters 1.53) and 8 at the maximal launch of 8
    /// per SM (2.44 µs, one counter 3.08); `suite run pt`, 100 steps, device clock.
    PerGroupPerCu,
    /// This many (1 to [`MAX_BARRIER_COUNTERS`], never more than the grid's groups).
    Fixed(u32),
}

impl BarrierCounters {
    /// Parses `auto` (one per group per CU) or a count from 1 to [`MAX_BARRIER_COUNTERS`].
    pub fn parse(text: &str) -> Option<BarrierCounters> {
        match text.trim() {
            "auto" => Some(BarrierCounters::PerGroupPerCu),
            t => t.parse().ok().filter(|k| (1..=MAX_BARRIER_COUNTERS).contains(k)).map(BarrierCounters::Fixed),
        }
    }
}

/// The software grid barrier's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SoftBarrier {
    /// Idle polls a wait may spin before it reports a timeout.
    pub spin_limit: u32,
    /// Arrival counters the groups' adds are spread over.
    pub counters: BarrierCounters,
}

impl SoftBarrier {
    /// Arrival counters for a grid of `groups` on `cus` CUs: 1 to [`MAX_BARRIER_COUNTERS`], at most one per group.
    pub fn counters(&self, groups: u32, cus: u32) -> u32 {
        let k = match self.counters {
            BarrierCounters::PerGroupPerCu => groups / cus.max(1),
            BarrierCounters::Fixed(k) => k,
        };
        k.min(groups).clamp(1, MAX_BARRIER_COUNTERS)
    }
}

/// How the PT consumer takes work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Queue {
    /// One atomic pop per item.
    Item,
    /// One pop per wave (64 items on CDNA, 32 on NVIDIA).
    Wave,
    /// One pop per group (256 items): the paper's queue.
    Group,
    /// One pop per chunk of K groups' worth of items.
    Chunk(u32),
    /// A grid-stride loop: no atomics.
    Static,
}

impl Queue {
    /// CSV value.
    pub fn name(self) -> String {
        match self {
            Queue::Item => "item".into(),
            Queue::Wave => "wave".into(),
            Queue::Group => "group".into(),
            Queue::Chunk(k) => format!("chunk{k}"),
            Queue::Static => "static".into(),
        }
    }

    /// The kernel's (mode, chunk) arguments.
    pub fn code(self) -> (u32, u32) {
        match self {
            Queue::Item => (QUEUE_ITEM, 1),
            Queue::Wave => (QUEUE_WAVE, 1),
            Queue::Group => (QUEUE_GROUP, 1),
            Queue::Chunk(k) => (QUEUE_CHUNK, k),
            Queue::Static => (QUEUE_STATIC, 1),
        }
    }

    /// Items one pop takes for a wave of `wave` items (`None`: no pops).
    pub fn items_per_pop(self, wave: u32) -> Option<u64> {
        match self {
            Queue::Item => Some(1),
            Queue::Wave => Some(u64::from(wave)),
            Queue::Group => Some(u64::from(GROUP)),
            Queue::Chunk(k) => Some(u64::from(k) * u64::from(GROUP)),
            Queue::Static => None,
        }
    }
}

/// Compute only, or compute with a strided memory read per FMA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Flavour {
    /// Read the item, FMAs in registers, write.
    Ci,
    /// As CI, plus a strided table read at every FMA.
    Cmi,
}

impl Flavour {
    /// CSV value.
    pub fn name(self) -> &'static str {
        match self {
            Flavour::Ci => "ci",
            Flavour::Cmi => "cmi",
        }
    }
}

/// The parts of the bare round trip.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Part {
    /// One empty kernel launched and waited for.
    Launch,
    /// A 4-byte device-to-host copy on an idle stream.
    Readback,
    /// Empty producer, 4-byte readback, empty consumer, wait: the whole round trip.
    Full,
}

impl Part {
    /// CSV value.
    pub fn name(self) -> &'static str {
        match self {
            Part::Launch => "launch",
            Part::Readback => "readback",
            Part::Full => "full",
        }
    }
}

/// Which clock times a point (its `clock` column; the `timing` column says how exactly).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum ClockKind {
    /// The host clock around one whole sequence and its final synchronisation.
    Host,
    /// Device events around batches of sequences (only for sequences with no host step).
    Device,
}

impl ClockKind {
    fn name(self) -> &'static str {
        match self {
            ClockKind::Host => "host",
            ClockKind::Device => "device",
        }
    }
}

/// One point of the sweep.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum Spec {
    /// CPU-GPU synchronisation (`study`: the queue-granularity study's rows).
    Sync { variant: Variant, queue: Queue, flavour: Flavour, items: u64, fmas: i64, clock: ClockKind, study: bool },
    /// A part of the bare round trip.
    RoundTrip { part: Part },
    /// Forest traversal; `inputs` trees.
    Forest { variant: Variant, tilted: bool, levels: u32, inputs: u32, fmas: i64, clock: ClockKind },
    /// Global sum of `n` elements.
    Reduce { variant: Variant, n: u64, clock: ClockKind },
    /// Two-stage chain over `n` elements.
    Chain { variant: Variant, n: u64, clock: ClockKind },
    /// `steps` Jacobi steps over `n` elements (PT variants at `per_cu` groups per CU; non-PT: one group per tile).
    Jacobi { variant: Variant, n: u64, steps: u32, clock: ClockKind, per_cu: PerCu },
    /// `steps` barriers alone (no work), at `per_cu` groups per CU; device clock.
    Barrier { variant: Variant, steps: u32, per_cu: PerCu },
}

impl Spec {
    /// The `use_case` column.
    pub fn use_case(&self) -> &'static str {
        match self {
            Spec::Sync { study: true, .. } => "queue",
            Spec::Sync { .. } => "sync",
            Spec::RoundTrip { .. } => "roundtrip",
            Spec::Forest { tilted: false, .. } => "forest_full",
            Spec::Forest { tilted: true, .. } => "forest_tilted",
            Spec::Reduce { .. } => "reduce",
            Spec::Chain { .. } => "chain",
            Spec::Jacobi { .. } => "jacobi",
            Spec::Barrier { .. } => "barrier",
        }
    }

    fn variant(&self) -> Variant {
        match *self {
            Spec::Sync { variant, .. }
            | Spec::Forest { variant, .. }
            | Spec::Reduce { variant, .. }
            | Spec::Chain { variant, .. }
            | Spec::Jacobi { variant, .. }
            | Spec::Barrier { variant, .. } => variant,
            Spec::RoundTrip { .. } => Variant::NonPt,
        }
    }

    fn clock(&self) -> ClockKind {
        match *self {
            Spec::Sync { clock, .. }
            | Spec::Forest { clock, .. }
            | Spec::Reduce { clock, .. }
            | Spec::Chain { clock, .. }
            | Spec::Jacobi { clock, .. } => clock,
            Spec::RoundTrip { .. } => ClockKind::Host,
            Spec::Barrier { .. } => ClockKind::Device,
        }
    }

    /// Groups per CU of a PT global-synchronisation point (`None` for every other point).
    pub fn per_cu(&self) -> Option<PerCu> {
        match *self {
            Spec::Jacobi { variant: Variant::NonPt, .. } => None,
            Spec::Jacobi { per_cu, .. } | Spec::Barrier { per_cu, .. } => Some(per_cu),
            _ => None,
        }
    }

    /// The kernel whose maximal launch the point records (the PT kernel of its use case).
    fn pt_kernel(&self) -> Option<String> {
        match *self {
            Spec::Sync { flavour, fmas, .. } => Some(format!("pt_sync_pt_{}_f{fmas}", flavour.name())),
            Spec::Forest { fmas, .. } => Some(format!("pt_forest_pt_f{fmas}")),
            Spec::Reduce { .. } => Some("pt_reduce_pt".into()),
            Spec::Chain { .. } => Some("pt_chain_pt".into()),
            Spec::Jacobi { variant: Variant::PtCoop, .. } => Some("pt_jacobi_coop".into()),
            Spec::Jacobi { .. } => Some("pt_jacobi_soft".into()),
            Spec::Barrier { variant: Variant::PtCoop, .. } => Some("pt_barrier_coop".into()),
            // The relaunch equivalent runs at the software barrier's grid, so that the three compare at one grid.
            Spec::Barrier { .. } => Some("pt_barrier_soft".into()),
            Spec::RoundTrip { .. } => None,
        }
    }

    /// Why the point cannot run (sizes checked without wrapping), needing no GPU.
    pub fn problem(&self, memory: &Memory) -> Option<String> {
        let fmas_ok = |f: i64| -> Option<String> {
            (!FMAS.contains(&f)).then(|| format!("{f} FMAs per item: the compiled counts are {FMAS:?}"))
        };
        // Items are indexed in 32 bits and the queue head may run past n by a grid of pops: keep n below 2^30.
        let n_ok = |n: u64, what: &str| -> Option<String> {
            if n == 0 {
                Some(format!("{what} must be at least 1"))
            } else if n > 1 << 30 {
                Some(format!("{what} = {n} exceeds 2^30 (the kernels index and count items in 32 bits)"))
            } else {
                None
            }
        };
        let fits = |device_bytes: u64, host_bytes: u64| memory.problem(Some(device_bytes), Some(host_bytes));
        match *self {
            Spec::Sync { items, fmas, flavour, queue, .. } => {
                if let Queue::Chunk(0) = queue {
                    return Some("a chunk of 0 groups".into());
                }
                let table = if flavour == Flavour::Cmi { 4 * CMI_TABLE as u64 } else { 0 };
                fmas_ok(fmas).or_else(|| n_ok(items, "items")).or_else(|| fits(8 * items + table, 8 * items))
            }
            Spec::RoundTrip { .. } => None,
            Spec::Forest { levels, inputs, fmas, .. } => {
                if levels == 0 || levels > MAX_LEVELS {
                    return Some(format!("{levels} levels: a forest has 1 to {MAX_LEVELS} levels"));
                }
                if inputs == 0 || inputs >= 1 << 24 {
                    return Some(format!("{inputs} initial inputs: 1 to 2^24 - 1 (the tree id has 24 bits)"));
                }
                fmas_ok(fmas).or_else(|| {
                    match forest_size(levels, inputs, matches!(self, Spec::Forest { tilted: true, .. })) {
                        None => Some(format!(
                            "the forest has more than {MAX_FOREST_NODES} nodes: fewer levels or initial inputs"
                        )),
                        Some(nodes) => fits(3 * 8 * nodes, 16 * nodes),
                    }
                })
            }
            Spec::Reduce { n, .. } | Spec::Chain { n, .. } => n_ok(n, "n").or_else(|| fits(12 * n, 16 * n)),
            Spec::Jacobi { n, steps, per_cu, .. } => {
                if steps == 0 {
                    return Some("0 steps".into());
                }
                if per_cu == PerCu::Groups(0) {
                    return Some("0 groups per CU".into());
                }
                n_ok(n, "n").or_else(|| (n < 3).then(|| "n must be at least 3".into())).or_else(|| fits(12 * n, 16 * n))
            }
            Spec::Barrier { steps, per_cu, .. } => {
                if steps == 0 {
                    return Some("0 steps".into());
                }
                (per_cu == PerCu::Groups(0)).then(|| "0 groups per CU".into())
            }
        }
    }

    /// The point's stable key.
    fn key(&self) -> String {
        let v = self.variant().name();
        let c = self.clock().name();
        match *self {
            Spec::Sync { queue, flavour, items, fmas, .. } => {
                format!("{}/{v}/{}/{}/items={items},fmas={fmas}/{c}", self.use_case(), queue.name(), flavour.name())
            }
            Spec::RoundTrip { part } => format!("roundtrip/{}", part.name()),
            Spec::Forest { levels, inputs, fmas, .. } => {
                format!("{}/{v}/levels={levels},inputs={inputs},fmas={fmas}/{c}", self.use_case())
            }
            Spec::Reduce { n, .. } | Spec::Chain { n, .. } => format!("{}/{v}/n={n}/{c}", self.use_case()),
            Spec::Jacobi { n, steps, per_cu, .. } => {
                format!("jacobi/{v}/n={n},steps={steps}{}/{c}", per_cu.key_suffix())
            }
            Spec::Barrier { steps, per_cu, .. } => format!("barrier/{v}/steps={steps}{}/{c}", per_cu.key_suffix()),
        }
    }
}

/// Nodes of a forest (`None` past [`MAX_FOREST_NODES`]), by the same rule as the kernels.
pub fn forest_size(levels: u32, inputs: u32, tilted: bool) -> Option<u64> {
    let mut total = 0u64;
    let mut frontier: Vec<u64> = (0..inputs).map(|t| node(0, t, hash(t))).collect();
    while !frontier.is_empty() {
        total += frontier.len() as u64;
        if total > MAX_FOREST_NODES {
            return None;
        }
        frontier = frontier.iter().flat_map(|&n| children(n, tilted, levels, inputs)).collect();
    }
    Some(total)
}

/// The kernels' `pt_hash` (lowbias32).
pub fn hash(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^= x >> 16;
    x
}

/// The kernels' `pt_unit`: a value in [0, 1) with 24 significant bits (exact in FP32).
pub fn unit(x: u32) -> f32 {
    (hash(x) >> 8) as f32 * (1.0 / 16_777_216.0)
}

/// The CI work chain, as the kernels compute it (each step one fused multiply-add).
pub fn work_ci(mut x: f32, fmas: i64) -> f32 {
    for _ in 0..fmas {
        x = x.mul_add(A, B);
    }
    x
}

/// The CMI work chain for item `i` over a table of `mask + 1` elements holding `unit(j)`.
pub fn work_cmi(mut x: f32, fmas: i64, i: u32, mask: u32) -> f32 {
    for k in 0..fmas as u32 {
        x = x.mul_add(A, unit(i.wrapping_add(k.wrapping_mul(STRIDE)) & mask));
    }
    x
}

fn node(level: u32, tree: u32, id: u32) -> u64 {
    (u64::from(level | tree << 8) << 32) | u64::from(id)
}

/// A node's children, by the kernels' rule (`pt_forest_children`).
fn children(n: u64, tilted: bool, levels: u32, trees: u32) -> impl Iterator<Item = u64> {
    let id = n as u32;
    let meta = (n >> 32) as u32;
    let (level, tree) = (meta & 0xff, meta >> 8);
    let depth =
        if tilted { ((u64::from(levels) * u64::from(tree + 1)).div_ceil(u64::from(trees))) as u32 } else { levels };
    let c = if level + 1 >= depth { 0 } else { 1 + hash(id) % 3 };
    (0..c).map(move |j| node(level + 1, tree, hash(id.wrapping_mul(4).wrapping_add(j + 1))))
}

/// A forest's reference: nodes per level, the wrapping sum of every node's work result bits, and the widest level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForestReference {
    /// Nodes per level, [`MAX_LEVELS`] entries.
    pub levels: Vec<u32>,
    /// Wrapping sum of `work_ci(unit(id), fmas).to_bits()` over the nodes.
    pub checksum: u32,
    /// Nodes in all.
    pub nodes: u64,
    /// Nodes of the widest level.
    pub widest: u64,
    /// The roots.
    pub roots: Vec<u64>,
}

/// Traverses a forest on the host.
pub fn forest_reference(levels: u32, inputs: u32, tilted: bool, fmas: i64) -> ForestReference {
    let roots: Vec<u64> = (0..inputs).map(|t| node(0, t, hash(t))).collect();
    let mut r = ForestReference { levels: vec![0; MAX_LEVELS as usize], checksum: 0, nodes: 0, widest: 0, roots };
    let mut frontier = r.roots.clone();
    let mut level = 0usize;
    while !frontier.is_empty() && level < MAX_LEVELS as usize {
        r.levels[level] = frontier.len() as u32;
        r.nodes += frontier.len() as u64;
        r.widest = r.widest.max(frontier.len() as u64);
        for &n in &frontier {
            r.checksum = r.checksum.wrapping_add(work_ci(unit(n as u32), fmas).to_bits());
        }
        frontier = frontier.iter().flat_map(|&n| children(n, tilted, levels, inputs)).collect();
        level += 1;
    }
    r
}

/// The host's Jacobi steps, in the kernels' FP32 operation order.
pub fn jacobi_reference(x0: &[f32], steps: u32) -> Vec<f32> {
    let n = x0.len();
    let mut a = x0.to_vec();
    for _ in 0..steps {
        a = par_map(n, |i| if i == 0 || i + 1 == n { a[i] } else { ((a[i - 1] + a[i]) + a[i + 1]) * (1.0f32 / 3.0) });
    }
    a
}

/// Relative error bound of an FP32 sum of non-negative values whose longest chain of additions is `depth` long:
/// each addition on the chain rounds once by at most u = 2^-24 of a partial sum no larger than the total, so the
/// error is at most depth · u of the total; we allow depth · ε = 2 · depth · u.
pub fn sum_tolerance(depth: u64) -> f64 {
    depth as f64 * F32_EPS
}

/// Longest chain of FP32 additions in a tree sum of a group of `group` (a power of two).
fn tree_depth(group: u64) -> u64 {
    u64::from(group.max(1).ilog2())
}

/// Applies `f` to every index in `0..n` on all host cores (the references of large points).
fn par_map<T: Send + Default + Clone>(n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let mut out = vec![T::default(); n];
    let threads = std::thread::available_parallelism().map(|t| t.get()).unwrap_or(1).max(1);
    let chunk = n.div_ceil(threads).max(1);
    std::thread::scope(|s| {
        for (c, part) in out.chunks_mut(chunk).enumerate() {
            let f = &f;
            s.spawn(move || {
                for (j, slot) in part.iter_mut().enumerate() {
                    *slot = f(c * chunk + j);
                }
            });
        }
    });
    out
}

/// Refuses a grid that the occupancy query does not say is co-resident: a grid barrier in it would wait for groups
/// that cannot start until the waiting ones finish.
pub fn check_coresident(kernel: &str, groups: u32, maximal: u32) -> Result<(), Error> {
    if groups > maximal {
        return Err(Error::Unsupported(format!(
            "{kernel}: a grid of {groups} groups is more than the {maximal} groups the occupancy query says can be \
             resident at once; its grid barrier would wait forever for groups that cannot start: launch at most the \
             maximal launch"
        )));
    }
    Ok(())
}

/// Refuses an empty grid (0 groups per CU), which no launch accepts.
fn check_nonempty(kernel: &str, groups: u32) -> Result<(), Error> {
    if groups == 0 {
        return Err(Error::Unsupported(format!("{kernel}: a grid of 0 groups: ask for at least 1 group per CU")));
    }
    Ok(())
}

/// The maximal launch of `kernel` at groups of [`GROUP`]: CUs × the runtime's resident groups per CU, and the
/// suite's calculator's value (`None` where it cannot tell).
pub fn maximal_launch(gpu: &Gpu, kernel: &Kernel) -> Result<(u32, Option<u32>), Error> {
    let props = gpu.device.props();
    let per_cu = gpu.device.occupancy_groups_per_cu(kernel, GROUP, 0)?;
    if per_cu == 0 {
        return Err(Error::Unsupported(format!("{}: no group of {GROUP} items fits on a CU", kernel.name)));
    }
    let meta = gpu.amd_kernel_meta(SOURCE, &kernel.name).ok().flatten();
    let res = Resources {
        group_size: GROUP,
        registers_per_item: meta.as_ref().map(|m| m.vgpr_count).unwrap_or(kernel.attrs.registers_per_item),
        sgprs: meta.as_ref().map(|m| m.sgpr_count),
        lds_bytes_per_group: meta.as_ref().map(|m| m.lds_bytes).unwrap_or(kernel.attrs.static_lds_bytes),
    };
    let calc = occupancy::theoretical(props, res).ok().map(|o| o.groups_per_cu.saturating_mul(props.cu_count));
    Ok((per_cu.saturating_mul(props.cu_count), calc))
}

/// The PT sweep. Each field is one flag of `suite run pt`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PtSweep {
    /// Use cases to run, from [`USE_CASES`].
    pub use_cases: Vec<String>,
    /// Items the producer makes (`sync`).
    pub items: Vec<u64>,
    /// FMAs per item (`sync`), each one of [`FMAS`].
    pub fmas: Vec<i64>,
    /// Forest levels.
    pub levels: Vec<u32>,
    /// Forest initial inputs (trees).
    pub inputs: Vec<u32>,
    /// FMAs per forest node.
    pub forest_fmas: i64,
    /// Elements of the reduction, chain and Jacobi vectors.
    pub sizes: Vec<u64>,
    /// Elements of the Jacobi vectors.
    pub jacobi_sizes: Vec<u64>,
    /// Jacobi steps.
    pub steps: Vec<u32>,
    /// Items of the queue-granularity study.
    pub queue_items: Vec<u64>,
    /// FMAs per item of the queue-granularity study.
    pub queue_fmas: Vec<i64>,
    /// Chunk sizes K (groups' worth of items per pop) of the queue-granularity study.
    pub chunks: Vec<u32>,
    /// Groups per CU of the PT global-synchronisation points (`jacobi`, `barrier`): the maximal launch and fewer.
    pub groups_per_cu: Vec<PerCu>,
    /// Arrival counters of the software grid barrier (see [`BarrierCounters`]).
    pub barrier_counters: BarrierCounters,
    /// Idle iterations a device wait loop may spin before it reports a timeout.
    pub spin_limit: u32,
}

impl Default for PtSweep {
    /// Sizes from far below one wave of groups (2^10 items = 4 groups) to far above the maximal launch (2^22), the
    /// paper's FMA range, forests from 1 to 1024 trees and 4 to 12 levels, vectors of 2^12 to 2^24 elements, 10 to
    /// 1000 barrier steps at 1, 2, 4 groups per CU and the maximal launch, and a software barrier of one arrival
    /// counter per group per CU (see [`BarrierCounters::PerGroupPerCu`]).
    fn default() -> Self {
        PtSweep {
            use_cases: USE_CASES.iter().map(|s| s.to_string()).collect(),
            items: vec![1 << 10, 1 << 13, 1 << 16, 1 << 19, 1 << 22],
            fmas: FMAS.to_vec(),
            levels: vec![4, 8, 12],
            inputs: vec![1, 32, 1024],
            forest_fmas: 16,
            sizes: vec![1 << 12, 1 << 16, 1 << 20, 1 << 24],
            jacobi_sizes: vec![1 << 12, 1 << 16, 1 << 20],
            steps: vec![10, 100, 1000],
            queue_items: vec![1 << 16, 1 << 22],
            queue_fmas: vec![1, 16],
            chunks: vec![4, 16],
            groups_per_cu: vec![PerCu::Groups(1), PerCu::Groups(2), PerCu::Groups(4), PerCu::Max],
            barrier_counters: BarrierCounters::PerGroupPerCu,
            spin_limit: 1 << 22,
        }
    }
}

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

/// Parameter columns (see the README's CSV section).
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

impl Experiment for PtSweep {
    fn name(&self) -> &'static str {
        "pt"
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

    fn options(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    fn sources(&self) -> &'static [&'static str] {
        &["pt"]
    }

    fn points(&self, gpu: &Gpu) -> Vec<Point> {
        let props = gpu.device.props();
        let memory = Memory::of(props.memory_bytes);
        let mut maximal: HashMap<String, Result<(u32, Option<u32>), String>> = HashMap::new();
        self.specs()
            .into_iter()
            .enumerate()
            .map(|(index, spec)| {
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
                    index,
                    key: spec.key(),
                    params: vec![
                        spec.use_case().into(),
                        spec.variant().name().into(),
                        queue,
                        flavour,
                        items,
                        fmas,
                        levels,
                        steps,
                        launches,
                        groups,
                        max_groups,
                        calc_groups,
                        groups_per_cu,
                        barrier_counters,
                        spec.clock().name().into(),
                    ],
                    invalid,
                    work: point_work(&spec),
                }
            })
            .collect()
    }

    fn prepare<'g>(&self, gpu: &'g Gpu, point: &Point) -> Result<Box<dyn Case + 'g>, Error> {
        let spec = self.specs()[point.index];
        prepare_spec(gpu, spec, self.soft_barrier())
    }

    fn plots(&self, rows: &[BTreeMap<String, String>], dir: &Path) -> Vec<(String, LinePlot)> {
        plots(rows, dir)
    }

    fn headlines(&self, rows: &[BTreeMap<String, String>]) -> Vec<String> {
        headlines(rows)
    }
}

/// The lines of [`Experiment::headlines`]: the bare round trip, then per use case, PT variant and clock the range
/// of the non-PT/PT speedup over its pairs (above 1: PT is faster).
fn headlines(rows: &[CsvRow]) -> Vec<String> {
    let mut out = Vec::new();
    let round_trip = super::ok_rows(rows)
        .find(|r| {
            r.get("use_case").map(String::as_str) == Some("roundtrip")
                && r.get("queue").map(String::as_str) == Some("full")
        })
        .and_then(|r| super::num(r, "time_ms_median"));
    if let Some(ms) = round_trip {
        out.push(format!("bare round trip (launch, 4-byte readback, relaunch, sync): {:.1} µs", ms * 1e3));
    }
    let mut ranges: BTreeMap<(String, String, String), (f64, f64, usize)> = BTreeMap::new();
    for p in pairs(rows) {
        let e =
            ranges.entry((p.use_case.clone(), p.variant.clone(), p.clock.clone())).or_insert((f64::INFINITY, 0.0, 0));
        let s = p.speedup();
        *e = (e.0.min(s), e.1.max(s), e.2 + 1);
    }
    for ((use_case, variant, clock), (lo, hi, n)) in ranges {
        out.push(format!(
            "{use_case}, {variant} vs non_pt ({clock} clock): speedup {lo:.2} to {hi:.2} over {n} points"
        ));
    }
    out.extend(barrier_headlines(&step_costs(rows)));
    out
}

/// One verified device-clock row of global synchronisation, as a cost per step.
#[derive(Debug, Clone, PartialEq)]
pub struct StepCost {
    /// `jacobi` or `barrier` (the barrier alone).
    pub use_case: String,
    /// `pt_soft`, `pt_coop` or `non_pt` (a launch per step).
    pub variant: String,
    /// Jacobi elements (0 for the barrier alone).
    pub n: u64,
    /// Steps of the sequence.
    pub steps: u32,
    /// Groups per CU of the PT grid (`None` for Jacobi's non-PT rows: one group per tile).
    pub per_cu: Option<u32>,
    /// Whether the grid is the maximal launch.
    pub maximal: bool,
    /// Median time of the sequence / steps, µs: the barrier (and the step's work) plus the sequence's launch and
    /// resets spread over its steps.
    pub us: f64,
}

/// The device-clock `jacobi` and `barrier` rows as costs per step (host-clock rows add the host's launch costs and
/// noise: the speedup pairs show them).
pub fn step_costs(rows: &[CsvRow]) -> Vec<StepCost> {
    let get = |r: &CsvRow, c: &str| r.get(c).cloned().unwrap_or_default();
    super::ok_rows(rows)
        .filter(|r| ["jacobi", "barrier"].contains(&get(r, "use_case").as_str()) && get(r, "clock") == "device")
        .filter_map(|r| {
            let steps: u32 = get(r, "steps").parse().ok().filter(|&s| s > 0)?;
            let per_cu = get(r, "groups_per_cu").parse().ok();
            Some(StepCost {
                use_case: get(r, "use_case"),
                variant: get(r, "variant"),
                n: get(r, "items").parse().unwrap_or(0),
                steps,
                per_cu,
                maximal: per_cu.is_some() && get(r, "groups") == get(r, "max_groups"),
                us: super::num(r, "time_ms_median")? * 1e3 / f64::from(steps),
            })
        })
        .collect()
}

/// What a variant is in the global-synchronisation lines.
fn sync_label(variant: &str) -> &'static str {
    match variant {
        "pt_soft" => "software barrier",
        "pt_coop" => "grid barrier (cooperative)",
        _ => "relaunch (graph)",
    }
}

/// The variants of the global-synchronisation lines, in order.
const SYNC_VARIANTS: [&str; 3] = ["pt_soft", "pt_coop", "non_pt"];

/// The longest sequence of `use_case` at `n` (the one whose launch is spread thinnest over its steps).
fn longest(costs: &[StepCost], use_case: &str, n: u64) -> Option<u32> {
    costs.iter().filter(|c| c.use_case == use_case && c.n == n).map(|c| c.steps).max()
}

/// µs per step against groups per CU: the barrier alone (software, cooperative, relaunch) and, one plot per Jacobi
/// size, the Jacobi steps with each barrier, with Jacobi's own relaunch (one group per tile) as a reference.
fn barrier_plots(costs: &[StepCost], device: &str) -> Vec<(String, LinePlot)> {
    let points = |use_case: &str, n: u64, steps: u32, variant: &str| -> Vec<(f64, f64)> {
        let mut pts: Vec<(f64, f64)> = costs
            .iter()
            .filter(|c| c.use_case == use_case && c.n == n && c.steps == steps && c.variant == variant)
            .filter_map(|c| Some((f64::from(c.per_cu?), c.us)))
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        pts
    };
    let alone_steps = longest(costs, "barrier", 0);
    let alone: Vec<Series> = alone_steps
        .map(|steps| {
            SYNC_VARIANTS
                .iter()
                .map(|&v| Series::line(format!("{}, barrier alone", sync_label(v)), points("barrier", 0, steps, v)))
                .filter(|s| !s.points.is_empty())
                .collect()
        })
        .unwrap_or_default();
    let mut sizes: Vec<u64> = costs.iter().filter(|c| c.use_case == "jacobi").map(|c| c.n).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let plot = |name: String, series: Vec<Series>, what: String| {
        (
            name,
            LinePlot {
                title: format!("Global synchronisation on {device}: cost per step by groups per CU"),
                subtitle: Some(format!(
                    "device clock; µs per step = median sequence time / steps (the sequence's one launch and \
                     counter resets spread over them); {what}"
                )),
                x_label: "groups per CU (the last point of each line: the maximal launch)".into(),
                y_label: "µs per step".into(),
                x_axis: Axis::Log2,
                y_axis: Axis::Linear,
                series,
                y_max: None,
                note: Some(
                    "software barrier: release atomic adds on the run's arrival counters (barrier_counters), polled; grid \
                     barrier: the platform's cooperative grid sync; relaunch: one launch per step, replayed as a graph"
                        .into(),
                ),
            },
        )
    };
    let mut out = Vec::new();
    let alone_text = alone_steps.map(|s| format!("barrier alone: {s} barriers, no work")).unwrap_or_default();
    for &n in &sizes {
        let Some(steps) = longest(costs, "jacobi", n) else { continue };
        let mut series = alone.clone();
        for v in ["pt_soft", "pt_coop"] {
            let pts = points("jacobi", n, steps, v);
            if !pts.is_empty() {
                series.push(Series::line(format!("{}, Jacobi step", sync_label(v)), pts));
            }
        }
        let relaunch =
            costs.iter().find(|c| c.use_case == "jacobi" && c.n == n && c.steps == steps && c.variant == "non_pt");
        let xs: Vec<f64> = series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).collect();
        let (lo, hi) = (xs.iter().copied().fold(f64::INFINITY, f64::min), xs.iter().copied().fold(0.0, f64::max));
        if let (Some(r), true) = (relaunch, lo.is_finite()) {
            series.push(Series::reference(
                format!("Jacobi relaunched per step (one group per tile, graph): {:.2} µs", r.us),
                vec![(lo, r.us), (hi, r.us)],
            ));
        }
        if series.iter().any(|s| s.kind == crate::report::plot::SeriesKind::Line) {
            let what = format!("Jacobi n = {n}, {steps} steps: the step's work plus its barrier; {alone_text}");
            out.push(plot(format!("pt-barrier-n{n}.png"), series, what));
        }
    }
    if sizes.is_empty() && !alone.is_empty() {
        out.push(plot("pt-barrier.png".into(), alone, alone_text));
    }
    out
}

/// Headlines of global synchronisation: at the maximal launch, µs per step of each Jacobi size and of the barrier
/// alone; then the barrier alone and each Jacobi size by groups per CU.
fn barrier_headlines(costs: &[StepCost]) -> Vec<String> {
    let mut out = Vec::new();
    let mut sizes: Vec<u64> = costs.iter().filter(|c| c.use_case == "jacobi").map(|c| c.n).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let cases: Vec<(&str, u64)> = std::iter::once(("barrier", 0)).chain(sizes.iter().map(|&n| ("jacobi", n))).collect();
    let what = |use_case: &str, n: u64, steps: u32| {
        if use_case == "barrier" {
            format!("barrier alone ({steps} steps)")
        } else {
            format!("Jacobi n = {n} ({steps} steps)")
        }
    };
    for &(use_case, n) in &cases {
        let Some(steps) = longest(costs, use_case, n) else { continue };
        let of = |c: &&StepCost| c.use_case == use_case && c.n == n && c.steps == steps;
        // At the maximal launch; Jacobi's relaunch is its one group per tile.
        let at_max: Vec<String> = SYNC_VARIANTS
            .iter()
            .filter_map(|&v| {
                let c = costs.iter().filter(of).find(|c| {
                    c.variant == v && (c.maximal || (use_case == "jacobi" && v == "non_pt" && c.per_cu.is_none()))
                })?;
                Some(format!("{} {:.2}", sync_label(v), c.us))
            })
            .collect();
        if !at_max.is_empty() {
            out.push(format!(
                "{}, µs per step at the maximal launch (device clock): {}",
                what(use_case, n, steps),
                at_max.join(", ")
            ));
        }
        // By groups per CU.
        let mut per_cu: Vec<u32> = costs.iter().filter(of).filter_map(|c| c.per_cu).collect();
        per_cu.sort_unstable();
        per_cu.dedup();
        if per_cu.len() > 1 {
            let by: Vec<String> = SYNC_VARIANTS
                .iter()
                .filter_map(|&v| {
                    let vals: Vec<String> = per_cu
                        .iter()
                        .map(|&k| {
                            costs
                                .iter()
                                .filter(of)
                                .find(|c| c.variant == v && c.per_cu == Some(k))
                                .map_or("-".to_string(), |c| format!("{:.2}", c.us))
                        })
                        .collect();
                    vals.iter().any(|v| v != "-").then(|| format!("{} {}", sync_label(v), vals.join("/")))
                })
                .collect();
            let ks: Vec<String> = per_cu.iter().map(u32::to_string).collect();
            out.push(format!(
                "{}, µs per step at {} groups per CU: {}",
                what(use_case, n, steps),
                ks.join("/"),
                by.join("; ")
            ));
        }
    }
    out
}

/// Kernel launches per sequence and groups per launch, as far as they are known before the run ("" where they
/// vary with the data: the forest's levels).
fn launches_and_groups(spec: &Spec, maximal: Option<u32>, grid: Option<u32>) -> (String, String) {
    let tiles = |n: u64| n.div_ceil(u64::from(GROUP)).to_string();
    let max = maximal.map(|m| m.to_string()).unwrap_or_default();
    match *spec {
        Spec::Sync { variant: Variant::NonPt, items, .. } => ("2".into(), tiles(items)),
        Spec::Sync { .. } => ("2".into(), max),
        Spec::RoundTrip { part: Part::Full } => ("2".into(), "1".into()),
        Spec::RoundTrip { part: Part::Launch } => ("1".into(), "1".into()),
        Spec::RoundTrip { part: Part::Readback } => ("0".into(), "0".into()),
        Spec::Forest { variant: Variant::NonPt, .. } => (String::new(), String::new()),
        Spec::Forest { .. } => ("1".into(), max),
        Spec::Reduce { variant: Variant::NonPt, n, .. } | Spec::Chain { variant: Variant::NonPt, n, .. } => {
            ("2".into(), tiles(n))
        }
        Spec::Reduce { .. } | Spec::Chain { .. } => ("1".into(), max),
        Spec::Jacobi { variant: Variant::NonPt, n, steps, .. } => (steps.to_string(), tiles(n)),
        Spec::Barrier { variant: Variant::NonPt, steps, .. } => {
            (steps.to_string(), grid.map(|g| g.to_string()).unwrap_or_default())
        }
        Spec::Jacobi { .. } | Spec::Barrier { .. } => ("1".into(), grid.map(|g| g.to_string()).unwrap_or_default()),
    }
}

/// A launch, a synchronisation and a 4-byte readback, seconds: 23 µs on an H100 in the reference run, rounded up.
const ROUND_TRIP_S: f64 = 30e-6;

/// One sequence of `spec`, for the estimate: its FMAs and bytes at modest shares of the peaks, and never less than
/// its launches and host round trips.
fn point_work(spec: &Spec) -> Work {
    let f = |v: u64| v as f64;
    match *spec {
        Spec::Sync { items, fmas, .. } => {
            Work::kernel(2.0 * f(items) * fmas.max(0) as f64, 8.0 * f(items), 0.1).at_least(2.0 * ROUND_TRIP_S)
        }
        Spec::RoundTrip { .. } => Work::fixed(ROUND_TRIP_S),
        Spec::Forest { levels, inputs, fmas, .. } => {
            // At most a full binary tree per input: 2^levels - 1 nodes, each of `fmas` FMAs, one level per launch.
            let nodes = f(u64::from(inputs)) * (2f64.powi(levels.min(64) as i32) - 1.0);
            Work::kernel(2.0 * nodes * fmas.max(0) as f64, 16.0 * nodes, 0.05)
                .at_least(f64::from(levels) * ROUND_TRIP_S)
                .bound()
        }
        Spec::Reduce { n, .. } => Work::kernel(f(n), 4.0 * f(n), STREAMING_SHARE).at_least(2.0 * ROUND_TRIP_S),
        Spec::Chain { n, .. } => {
            Work::kernel(2.0 * f(n) * f64::from(CHAIN_FMAS), 8.0 * f(n), 0.1).at_least(2.0 * ROUND_TRIP_S)
        }
        Spec::Jacobi { n, steps, .. } => {
            let steps = f64::from(steps);
            Work::kernel(3.0 * f(n) * steps, 12.0 * f(n) * steps, 0.2).at_least(steps * LAUNCH_S)
        }
        // No work: a barrier (a few µs at most, measured 1 to 4 µs on an H200) or a graph-replayed launch per step.
        Spec::Barrier { steps, .. } => Work::fixed(f64::from(steps) * LAUNCH_S),
    }
}

/// Builds the case of one point.
pub fn prepare_spec<'g>(gpu: &'g Gpu, spec: Spec, barrier: SoftBarrier) -> Result<Box<dyn Case + 'g>, Error> {
    let spin_limit = barrier.spin_limit;
    let cus = gpu.device.props().cu_count;
    let grid = |per_cu: PerCu| match per_cu {
        PerCu::Max => None,
        PerCu::Groups(k) => Some(k.saturating_mul(cus)),
    };
    let clock = match spec.clock() {
        ClockKind::Host => Clock::Host,
        ClockKind::Device => Clock::Device,
    };
    Ok(match spec {
        Spec::Sync { variant, queue, flavour, items, fmas, .. } => {
            Box::new(SyncCase::new(gpu, variant, queue, flavour, items, fmas, clock)?)
        }
        Spec::RoundTrip { part } => Box::new(RoundTrip::new(gpu, part)?),
        Spec::Forest { variant, tilted, levels, inputs, fmas, .. } => {
            Box::new(ForestCase::new(gpu, variant, tilted, levels, inputs, fmas, spin_limit, clock)?)
        }
        Spec::Reduce { variant, n, .. } => Box::new(ReduceCase::new(gpu, variant, n, clock)?),
        Spec::Chain { variant, n, .. } => Box::new(ChainCase::new(gpu, variant, n, clock)?),
        Spec::Jacobi { variant, n, steps, per_cu, .. } => {
            Box::new(JacobiCase::new(gpu, variant, n, steps, grid(per_cu), barrier, SKIP_NONE, clock)?)
        }
        Spec::Barrier { variant, steps, per_cu } => {
            Box::new(BarrierCase::new(gpu, variant, steps, grid(per_cu), barrier)?)
        }
    })
}

fn u32_of(n: u64, what: &str) -> Result<u32, Error> {
    u32::try_from(n).map_err(|_| Error::Unsupported(format!("{what} = {n} exceeds the kernels' 32-bit count")))
}

fn tiles(n: u64) -> Result<u32, Error> {
    u32_of(n.div_ceil(u64::from(GROUP)), "groups")
}

/// Reads a status word and turns the kernels' flags into an error.
fn check_status(gpu: &Gpu, status: &Buffer<u32>, what: &str) -> Result<(), Error> {
    let s = gpu.device.download(status)?[0];
    if s & STATUS_TIMEOUT != 0 {
        return Err(Error::Measurement(format!(
            "{what}: a device wait loop timed out (status {s:#x}): a group never arrived or the queue stalled; the \
             kernel gave up instead of hanging the GPU (raise --spin-limit if the device is merely slow)"
        )));
    }
    if s & STATUS_OVERFLOW != 0 {
        return Err(Error::Measurement(format!("{what}: the work queue overflowed its capacity (status {s:#x})")));
    }
    Ok(())
}

/// Use case 1: producer, then consumer (non-PT: after a readback of the count; PT: at once, at maximal launch).
struct SyncCase<'g> {
    gpu: &'g Gpu,
    variant: Variant,
    clock: Clock,
    produce: Kernel,
    consume: Kernel,
    items: Buffer<f32>,
    out: Buffer<f32>,
    table: Buffer<f32>,
    mask: u32,
    /// [count, done] of the producer.
    count_done: Buffer<u32>,
    terminal: Buffer<u32>,
    head: Buffer<u32>,
    n: u32,
    fmas: i64,
    flavour: Flavour,
    pt_groups: u32,
    queue: (u32, u32),
}

impl<'g> SyncCase<'g> {
    fn new(
        gpu: &'g Gpu,
        variant: Variant,
        queue: Queue,
        flavour: Flavour,
        items: u64,
        fmas: i64,
        clock: Clock,
    ) -> Result<Self, Error> {
        let dev = gpu.device.as_ref();
        let n = u32_of(items, "items")?;
        let produce = gpu.kernel(SOURCE, "pt_produce")?;
        let v = if variant == Variant::NonPt { "nonpt" } else { "pt" };
        let consume = gpu.kernel(SOURCE, &format!("pt_sync_{v}_{}_f{fmas}", flavour.name()))?;
        let pt_kernel = gpu.kernel(SOURCE, &format!("pt_sync_pt_{}_f{fmas}", flavour.name()))?;
        let (pt_groups, _) = maximal_launch(gpu, &pt_kernel)?;
        let (table, mask) = if flavour == Flavour::Cmi {
            let table = dev.alloc_buffer::<f32>(CMI_TABLE)?;
            let fill = gpu.kernel(SOURCE, "pt_fill_table")?;
            let m = CMI_TABLE as u32;
            dev.launch(&fill, &LaunchConfig::linear(tiles(CMI_TABLE as u64)?, GROUP), &[table.arg(), Arg::U32(m)])?;
            (table, m - 1)
        } else {
            (dev.alloc_buffer::<f32>(1)?, 0)
        };
        let items_buf = dev.alloc_buffer::<f32>(n as usize)?;
        let out = dev.alloc_buffer::<f32>(n as usize)?;
        // All-ones bytes are NaN: an item nobody consumed fails verification.
        dev.fill_bytes(out.raw(), 0xff)?;
        let count_done = dev.alloc_buffer::<u32>(2)?;
        dev.fill_bytes(count_done.raw(), 0)?;
        let terminal = dev.alloc_buffer::<u32>(1)?;
        let head = dev.alloc_buffer::<u32>(1)?;
        Ok(SyncCase {
            gpu,
            variant,
            clock,
            produce,
            consume,
            items: items_buf,
            out,
            table,
            mask,
            count_done,
            terminal,
            head,
            n,
            fmas,
            flavour,
            pt_groups,
            queue: queue.code(),
        })
    }

    fn count_arg(&self) -> Arg {
        Arg::Ptr(self.count_done.raw().device_ptr())
    }

    fn done_arg(&self) -> Arg {
        Arg::Ptr(self.count_done.raw().device_ptr() + 4)
    }
}

impl Case for SyncCase<'_> {
    fn launch(&mut self) -> device::Result<()> {
        let dev = self.gpu.device.as_ref();
        let produce_args = [self.items.arg(), Arg::U32(self.n), self.count_arg(), self.done_arg(), self.terminal.arg()];
        let consume_args =
            [self.items.arg(), self.terminal.arg(), self.out.arg(), self.table.arg(), Arg::U32(self.mask)];
        if self.variant == Variant::NonPt {
            dev.launch(&self.produce, &LaunchConfig::linear(self.n.div_ceil(GROUP), GROUP), &produce_args)?;
            // The host learns how much was produced (blocking readback), then sizes the consumer to it.
            let mut count = [0u8; 4];
            dev.copy_to_host(self.terminal.raw(), &mut count)?;
            let count = u32::from_ne_bytes(count);
            if count > 0 {
                dev.launch(&self.consume, &LaunchConfig::linear(count.div_ceil(GROUP), GROUP), &consume_args)?;
            }
            return Ok(());
        }
        dev.fill_bytes(self.head.raw(), 0)?;
        dev.launch(&self.produce, &LaunchConfig::linear(self.n.div_ceil(GROUP), GROUP), &produce_args)?;
        let mut args = consume_args.to_vec();
        args.extend([self.head.arg(), Arg::U32(self.queue.0), Arg::U32(self.queue.1)]);
        dev.launch(&self.consume, &LaunchConfig::linear(self.pt_groups, GROUP), &args)
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        let got = self.gpu.device.download(&self.out)?;
        let (fmas, mask, flavour) = (self.fmas, self.mask, self.flavour);
        let want = par_map(self.n as usize, |i| {
            let x = unit(i as u32);
            match flavour {
                Flavour::Ci => work_ci(x, fmas),
                Flavour::Cmi => work_cmi(x, fmas, i as u32, mask),
            }
        });
        // The same chain of fused multiply-adds on the same FP32 values, in the same order: bit-exact.
        Ok(verify::compare(&got, &want, 1.0, 0.0))
    }

    fn work(&self) -> f64 {
        f64::from(self.n)
    }

    fn clock(&self) -> Clock {
        self.clock
    }
}

/// The bare round trip and its parts, with `pt_empty`.
struct RoundTrip<'g> {
    gpu: &'g Gpu,
    part: Part,
    empty: Kernel,
    word: Buffer<u32>,
}

impl<'g> RoundTrip<'g> {
    fn new(gpu: &'g Gpu, part: Part) -> Result<Self, Error> {
        let word = gpu.device.upload(&[7u32])?;
        Ok(RoundTrip { gpu, part, empty: gpu.kernel(SOURCE, "pt_empty")?, word })
    }
}

impl Case for RoundTrip<'_> {
    fn launch(&mut self) -> device::Result<()> {
        let dev = self.gpu.device.as_ref();
        let one = LaunchConfig::linear(1, 1);
        let mut word = [0u8; 4];
        match self.part {
            Part::Launch => dev.launch(&self.empty, &one, &[]),
            Part::Readback => dev.copy_to_host(self.word.raw(), &mut word),
            Part::Full => {
                dev.launch(&self.empty, &one, &[])?;
                dev.copy_to_host(self.word.raw(), &mut word)?;
                dev.launch(&self.empty, &one, &[])
            }
        }
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        // Nothing is computed; the readback must still bring the word back.
        let got = self.gpu.device.download(&self.word)?;
        Ok(verify::compare(&got, &[7u32], 1.0, 0.0))
    }

    fn work(&self) -> f64 {
        1.0
    }

    fn clock(&self) -> Clock {
        Clock::Host
    }
}

/// Use case 2: forest traversal.
struct ForestCase<'g> {
    gpu: &'g Gpu,
    variant: Variant,
    clock: Clock,
    kernel: Kernel,
    reference: ForestReference,
    tilted: bool,
    levels: u32,
    inputs: u32,
    spin_limit: u32,
    groups: u32,
    cap: u32,
    /// Non-PT: the current frontier; PT: the queue.
    a: Buffer<u64>,
    /// Non-PT: the next frontier; PT: the queue's pristine copy (the roots, then empty slots).
    b: Buffer<u64>,
    /// Non-PT: the roots, copied into `a` at the start of every sequence.
    roots: Option<Buffer<u64>>,
    /// Non-PT: [n_out]; PT: [head, tail, pending].
    counters: Buffer<u32>,
    /// PT: the counters' starting values, copied into `counters` at the start of every sequence.
    pristine_counters: Option<Buffer<u32>>,
    level_counts: Buffer<u32>,
    checksum: Buffer<u32>,
    status: Buffer<u32>,
}

impl<'g> ForestCase<'g> {
    #[allow(clippy::too_many_arguments)]
    fn new(
        gpu: &'g Gpu,
        variant: Variant,
        tilted: bool,
        levels: u32,
        inputs: u32,
        fmas: i64,
        spin_limit: u32,
        clock: Clock,
    ) -> Result<Self, Error> {
        let dev = gpu.device.as_ref();
        let reference = forest_reference(levels, inputs, tilted, fmas);
        let cap = u32_of(reference.nodes, "forest nodes")?;
        let pt_kernel = gpu.kernel(SOURCE, &format!("pt_forest_pt_f{fmas}"))?;
        let (groups, _) = maximal_launch(gpu, &pt_kernel)?;
        let pristine_counters = if variant == Variant::NonPt { None } else { Some(dev.upload(&[0, inputs, inputs])?) };
        let (kernel, a, b, roots, counters) = if variant == Variant::NonPt {
            let widest = reference.widest as usize;
            (
                gpu.kernel(SOURCE, &format!("pt_forest_level_f{fmas}"))?,
                dev.alloc_buffer::<u64>(widest)?,
                dev.alloc_buffer::<u64>(widest)?,
                Some(dev.upload(&reference.roots)?),
                dev.alloc_buffer::<u32>(1)?,
            )
        } else {
            let mut pristine = vec![u64::MAX; cap as usize];
            pristine[..reference.roots.len()].copy_from_slice(&reference.roots);
            (
                pt_kernel,
                dev.alloc_buffer::<u64>(cap as usize)?,
                dev.upload(&pristine)?,
                None,
                dev.upload(&[0, inputs, inputs])?,
            )
        };
        Ok(ForestCase {
            gpu,
            variant,
            clock,
            kernel,
            tilted,
            levels,
            inputs,
            spin_limit,
            groups,
            cap,
            a,
            b,
            roots,
            counters,
            pristine_counters,
            level_counts: dev.alloc_buffer::<u32>(MAX_LEVELS as usize)?,
            checksum: dev.alloc_buffer::<u32>(1)?,
            status: dev.alloc_buffer::<u32>(1)?,
            reference,
        })
    }

    fn sequence_nonpt(&mut self) -> device::Result<()> {
        let dev = self.gpu.device.as_ref();
        if let Some(roots) = &self.roots {
            dev.copy_on_device(roots.raw(), self.a.raw(), roots.bytes())?;
        }
        let (mut src, mut dst) = (&self.a, &self.b);
        let mut n_in = self.inputs;
        // A forest has at most MAX_LEVELS levels; a count that keeps coming back non-zero is a bug, not a hang.
        for _ in 0..MAX_LEVELS {
            if n_in == 0 {
                return Ok(());
            }
            dev.fill_bytes(self.counters.raw(), 0)?;
            let args = [
                src.arg(),
                Arg::U32(n_in),
                dst.arg(),
                self.counters.arg(),
                Arg::U32(self.reference.widest as u32),
                self.level_counts.arg(),
                self.checksum.arg(),
                Arg::U32(u32::from(self.tilted)),
                Arg::U32(self.levels),
                Arg::U32(self.inputs),
                self.status.arg(),
            ];
            dev.launch(&self.kernel, &LaunchConfig::linear(n_in.div_ceil(GROUP), GROUP), &args)?;
            // The host reads the next level's size back to size the next launch.
            let mut count = [0u8; 4];
            dev.copy_to_host(self.counters.raw(), &mut count)?;
            n_in = u32::from_ne_bytes(count).min(self.reference.widest as u32);
            std::mem::swap(&mut src, &mut dst);
        }
        Ok(())
    }
}

impl Case for ForestCase<'_> {
    fn launch(&mut self) -> device::Result<()> {
        let dev = self.gpu.device.as_ref();
        dev.fill_bytes(self.level_counts.raw(), 0)?;
        dev.fill_bytes(self.checksum.raw(), 0)?;
        dev.fill_bytes(self.status.raw(), 0)?;
        if self.variant == Variant::NonPt {
            return self.sequence_nonpt();
        }
        dev.copy_on_device(self.b.raw(), self.a.raw(), self.a.bytes())?;
        if let Some(pristine) = &self.pristine_counters {
            dev.copy_on_device(pristine.raw(), self.counters.raw(), pristine.bytes())?;
        }
        let args = [
            self.a.arg(),
            Arg::U32(self.cap),
            self.counters.arg(),
            self.level_counts.arg(),
            self.checksum.arg(),
            Arg::U32(u32::from(self.tilted)),
            Arg::U32(self.levels),
            Arg::U32(self.inputs),
            Arg::U32(self.spin_limit),
            self.status.arg(),
        ];
        dev.launch(&self.kernel, &LaunchConfig::linear(self.groups, GROUP), &args)
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        check_status(self.gpu, &self.status, "forest traversal")?;
        let dev = self.gpu.device.as_ref();
        let mut got: Vec<u32> = dev.download(&self.level_counts)?;
        got.extend(dev.download(&self.checksum)?);
        let mut want = self.reference.levels.clone();
        want.push(self.reference.checksum);
        // Node counts and the wrapping sum of the results' bits are integers: exact.
        Ok(verify::compare(&got, &want, 1.0, 0.0))
    }

    fn work(&self) -> f64 {
        self.reference.nodes as f64
    }

    fn clock(&self) -> Clock {
        self.clock
    }
}

/// Random inputs in [0, 1) (non-negative, so a sum's error bound is relative to the sum itself).
fn random_unit(n: usize) -> Vec<f32> {
    let mut rng = fastrand::Rng::new();
    (0..n).map(|_| rng.f32()).collect()
}

/// Use case 3a: a global sum.
struct ReduceCase<'g> {
    gpu: &'g Gpu,
    variant: Variant,
    clock: Clock,
    kernels: (Kernel, Kernel),
    x: Buffer<f32>,
    partials: Buffer<f32>,
    done: Buffer<u32>,
    out: Buffer<f32>,
    n: u32,
    groups: u32,
    want: f64,
    tolerance: f64,
}

impl<'g> ReduceCase<'g> {
    fn new(gpu: &'g Gpu, variant: Variant, n: u64, clock: Clock) -> Result<Self, Error> {
        let dev = gpu.device.as_ref();
        let n32 = u32_of(n, "n")?;
        let pt = gpu.kernel(SOURCE, "pt_reduce_pt")?;
        let (max, _) = maximal_launch(gpu, &pt)?;
        let host = random_unit(n as usize);
        let want: f64 = host.iter().map(|&v| f64::from(v)).sum();
        let g = u64::from(GROUP);
        let (kernels, groups, depth) = if variant == Variant::NonPt {
            let m = u64::from(tiles(n)?);
            let k = (gpu.kernel(SOURCE, "pt_reduce_tiles")?, gpu.kernel(SOURCE, "pt_reduce_final")?);
            // Tile tree, then each final item's sequential sum over the partials, then the final tree.
            (k, tiles(n)?, tree_depth(g) + m.div_ceil(g) + tree_depth(g))
        } else {
            let per_item = n.div_ceil(u64::from(max) * g);
            let last = u64::from(max).div_ceil(g);
            ((pt.clone(), pt), max, per_item + tree_depth(g) + last + tree_depth(g))
        };
        let partials = dev.alloc_buffer::<f32>(groups as usize)?;
        let done = dev.alloc_buffer::<u32>(1)?;
        dev.fill_bytes(done.raw(), 0)?;
        let out = dev.alloc_buffer::<f32>(1)?;
        dev.fill_bytes(out.raw(), 0xff)?;
        Ok(ReduceCase {
            gpu,
            variant,
            clock,
            kernels,
            x: dev.upload(&host)?,
            partials,
            done,
            out,
            n: n32,
            groups,
            want,
            tolerance: sum_tolerance(depth + 1),
        })
    }
}

impl Case for ReduceCase<'_> {
    fn launch(&mut self) -> device::Result<()> {
        let dev = self.gpu.device.as_ref();
        if self.variant == Variant::NonPt {
            let args = [self.x.arg(), Arg::U32(self.n), self.partials.arg()];
            dev.launch(&self.kernels.0, &LaunchConfig::linear(self.groups, GROUP), &args)?;
            // The partials go through global memory to a second pass.
            let args = [self.partials.arg(), Arg::U32(self.groups), self.out.arg()];
            return dev.launch(&self.kernels.1, &LaunchConfig::linear(1, GROUP), &args);
        }
        let args = [self.x.arg(), Arg::U32(self.n), self.partials.arg(), self.done.arg(), self.out.arg()];
        dev.launch(&self.kernels.0, &LaunchConfig::linear(self.groups, GROUP), &args)
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        let got = self.gpu.device.download(&self.out)?;
        Ok(verify::compare(&got, &[self.want], self.want, self.tolerance))
    }

    fn work(&self) -> f64 {
        f64::from(self.n)
    }

    fn footprint_bytes(&self) -> Option<u64> {
        Some(self.x.bytes() as u64)
    }

    fn clock(&self) -> Clock {
        self.clock
    }
}

/// Use case 3b: a producer -> consumer chain.
struct ChainCase<'g> {
    gpu: &'g Gpu,
    variant: Variant,
    clock: Clock,
    kernels: (Kernel, Kernel),
    x: Buffer<f32>,
    mid: Buffer<f32>,
    out: Buffer<f32>,
    n: u32,
    groups: u32,
    host: Vec<f32>,
}

impl<'g> ChainCase<'g> {
    fn new(gpu: &'g Gpu, variant: Variant, n: u64, clock: Clock) -> Result<Self, Error> {
        let dev = gpu.device.as_ref();
        let n32 = u32_of(n, "n")?;
        let pt = gpu.kernel(SOURCE, "pt_chain_pt")?;
        let (max, _) = maximal_launch(gpu, &pt)?;
        let (kernels, groups, mid_len) = if variant == Variant::NonPt {
            ((gpu.kernel(SOURCE, "pt_chain_a")?, gpu.kernel(SOURCE, "pt_chain_b")?), tiles(n)?, n as usize)
        } else {
            ((pt.clone(), pt), max, 1)
        };
        let host = random_unit(n as usize);
        let out = dev.alloc_buffer::<f32>(n as usize)?;
        dev.fill_bytes(out.raw(), 0xff)?;
        Ok(ChainCase {
            gpu,
            variant,
            clock,
            kernels,
            x: dev.upload(&host)?,
            mid: dev.alloc_buffer::<f32>(mid_len)?,
            out,
            n: n32,
            groups,
            host,
        })
    }
}

impl Case for ChainCase<'_> {
    fn launch(&mut self) -> device::Result<()> {
        let dev = self.gpu.device.as_ref();
        let n = Arg::U32(self.n);
        let grid = LaunchConfig::linear(self.groups, GROUP);
        if self.variant == Variant::NonPt {
            dev.launch(&self.kernels.0, &grid, &[self.x.arg(), self.mid.arg(), n])?;
            return dev.launch(&self.kernels.1, &grid, &[self.mid.arg(), self.out.arg(), n]);
        }
        dev.launch(&self.kernels.0, &grid, &[self.x.arg(), self.out.arg(), n])
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        let got = self.gpu.device.download(&self.out)?;
        let a = par_map(self.host.len(), |i| work_ci(self.host[i], i64::from(CHAIN_FMAS)));
        let g = GROUP as usize;
        let want = par_map(a.len(), |i| {
            let j = i - i % g + (i % g + 1) % g;
            a[i] + if j < a.len() { a[j] } else { 0.0 }
        });
        // The same FMA chain and one FP32 addition of the same two values: bit-exact.
        Ok(verify::compare(&got, &want, 1.0, 0.0))
    }

    fn work(&self) -> f64 {
        f64::from(self.n)
    }

    fn footprint_bytes(&self) -> Option<u64> {
        Some((self.x.bytes() + self.mid.bytes() + self.out.bytes()) as u64)
    }

    fn clock(&self) -> Clock {
        self.clock
    }
}

/// Use case 4: Jacobi steps with a barrier between them.
pub struct JacobiCase<'g> {
    gpu: &'g Gpu,
    variant: Variant,
    clock: Clock,
    kernel: Kernel,
    x0: Buffer<f32>,
    a: Buffer<f32>,
    b: Buffer<f32>,
    bar: Buffer<u32>,
    status: Buffer<u32>,
    n: u32,
    steps: u32,
    groups: u32,
    barrier: SoftBarrier,
    skip_group: u32,
    host: Vec<f32>,
}

impl<'g> JacobiCase<'g> {
    /// Prepares `steps` steps over `n` elements. `groups` overrides the PT variants' grid (default: the maximal
    /// launch); a grid the occupancy query does not call co-resident is refused here, before any launch.
    /// `skip_group` < the grid makes that group of `pt_soft` never arrive at the barrier (the timeout path's test).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        gpu: &'g Gpu,
        variant: Variant,
        n: u64,
        steps: u32,
        groups: Option<u32>,
        barrier: SoftBarrier,
        skip_group: u32,
        clock: Clock,
    ) -> Result<Self, Error> {
        let dev = gpu.device.as_ref();
        let n32 = u32_of(n, "n")?;
        let name = match variant {
            Variant::NonPt => "pt_jacobi_step",
            Variant::PtCoop => "pt_jacobi_coop",
            Variant::PtSoft | Variant::Pt => "pt_jacobi_soft",
        };
        let kernel = gpu.kernel(SOURCE, name)?;
        let groups = if variant == Variant::NonPt {
            tiles(n)?
        } else {
            let (max, _) = maximal_launch(gpu, &kernel)?;
            let groups = groups.unwrap_or(max);
            check_coresident(name, groups, max)?;
            check_nonempty(name, groups)?;
            groups
        };
        let host = random_unit(n as usize);
        let x0 = dev.upload(&host)?;
        Ok(JacobiCase {
            gpu,
            variant,
            clock,
            kernel,
            a: dev.alloc_buffer::<f32>(n as usize)?,
            b: dev.upload(&host)?,
            x0,
            bar: dev.alloc_buffer::<u32>(MAX_BARRIER_COUNTERS as usize * BARRIER_LINE_WORDS)?,
            status: dev.alloc_buffer::<u32>(1)?,
            n: n32,
            steps,
            groups,
            barrier,
            skip_group,
            host,
        })
    }
}

impl Case for JacobiCase<'_> {
    fn launch(&mut self) -> device::Result<()> {
        let dev = self.gpu.device.as_ref();
        dev.copy_on_device(self.x0.raw(), self.a.raw(), self.a.bytes())?;
        let grid = LaunchConfig::linear(self.groups, GROUP);
        let n = Arg::U32(self.n);
        match self.variant {
            Variant::NonPt => {
                for s in 0..self.steps {
                    let (src, dst) = if s.is_multiple_of(2) { (&self.a, &self.b) } else { (&self.b, &self.a) };
                    dev.launch(&self.kernel, &grid, &[src.arg(), dst.arg(), n])?;
                }
                Ok(())
            }
            Variant::PtCoop => {
                let args = [self.a.arg(), self.b.arg(), n, Arg::U32(self.steps)];
                dev.launch_cooperative(&self.kernel, &grid, &args)
            }
            Variant::PtSoft | Variant::Pt => {
                dev.fill_bytes(self.bar.raw(), 0)?;
                dev.fill_bytes(self.status.raw(), 0)?;
                let args = [
                    self.a.arg(),
                    self.b.arg(),
                    n,
                    Arg::U32(self.steps),
                    self.bar.arg(),
                    Arg::U32(self.barrier.counters(self.groups, self.gpu.device.props().cu_count)),
                    Arg::U32(self.barrier.spin_limit),
                    self.status.arg(),
                    Arg::U32(self.skip_group),
                ];
                dev.launch(&self.kernel, &grid, &args)
            }
        }
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        if self.variant == Variant::PtSoft {
            check_status(self.gpu, &self.status, "Jacobi with the software grid barrier")?;
        }
        let result = if self.steps.is_multiple_of(2) { &self.a } else { &self.b };
        let got = self.gpu.device.download(result)?;
        let want = jacobi_reference(&self.host, self.steps);
        // The same FP32 operations in the same order, no contraction possible: bit-exact.
        Ok(verify::compare(&got, &want, 1.0, 0.0))
    }

    fn work(&self) -> f64 {
        f64::from(self.n) * f64::from(self.steps)
    }

    fn clock(&self) -> Clock {
        self.clock
    }
}

/// The barrier alone: `steps` software barriers, grid barriers, or relaunches of an otherwise empty kernel, with no
/// work between them. The first launch (the verified one) runs the kernels' check: every group marks its step in a
/// slot before each barrier and reads its neighbour's after it, so a barrier that lets a group through early sets
/// a status bit, and every slot ends at `steps`. The timed launches skip the check (one store and one load per
/// group and step, a round trip to L2 that would be counted as barrier), so they time the barrier alone.
pub struct BarrierCase<'g> {
    gpu: &'g Gpu,
    variant: Variant,
    kernel: Kernel,
    bar: Buffer<u32>,
    status: Buffer<u32>,
    slots: Buffer<u32>,
    steps: u32,
    groups: u32,
    barrier: SoftBarrier,
    launches: u64,
}

impl<'g> BarrierCase<'g> {
    /// Prepares `steps` barriers at `groups` groups (default: the maximal launch of the barrier kernel; the
    /// relaunch equivalent takes the software barrier's). A grid that is not co-resident is refused.
    pub fn new(
        gpu: &'g Gpu,
        variant: Variant,
        steps: u32,
        groups: Option<u32>,
        barrier: SoftBarrier,
    ) -> Result<Self, Error> {
        let dev = gpu.device.as_ref();
        let (name, pt_name) = match variant {
            Variant::NonPt => ("pt_barrier_relaunch", "pt_barrier_soft"),
            Variant::PtCoop => ("pt_barrier_coop", "pt_barrier_coop"),
            Variant::PtSoft | Variant::Pt => ("pt_barrier_soft", "pt_barrier_soft"),
        };
        let kernel = gpu.kernel(SOURCE, name)?;
        let (max, _) = maximal_launch(gpu, &gpu.kernel(SOURCE, pt_name)?)?;
        let groups = groups.unwrap_or(max);
        check_coresident(pt_name, groups, max)?;
        check_nonempty(name, groups)?;
        let slots = dev.alloc_buffer::<u32>(groups as usize)?;
        dev.fill_bytes(slots.raw(), 0)?;
        let status = dev.alloc_buffer::<u32>(1)?;
        dev.fill_bytes(status.raw(), 0)?;
        Ok(BarrierCase {
            gpu,
            variant,
            kernel,
            bar: dev.alloc_buffer::<u32>(MAX_BARRIER_COUNTERS as usize * BARRIER_LINE_WORDS)?,
            status,
            slots,
            steps,
            groups,
            barrier,
            launches: 0,
        })
    }
}

impl Case for BarrierCase<'_> {
    fn launch(&mut self) -> device::Result<()> {
        let dev = self.gpu.device.as_ref();
        let check = Arg::U32(u32::from(self.launches == 0));
        self.launches += 1;
        let grid = LaunchConfig::linear(self.groups, GROUP);
        match self.variant {
            Variant::NonPt => {
                for step in 0..self.steps {
                    dev.launch(&self.kernel, &grid, &[Arg::U32(step), self.status.arg(), self.slots.arg(), check])?;
                }
                Ok(())
            }
            Variant::PtCoop => dev.launch_cooperative(
                &self.kernel,
                &grid,
                &[Arg::U32(self.steps), self.status.arg(), self.slots.arg(), check],
            ),
            Variant::PtSoft | Variant::Pt => {
                dev.fill_bytes(self.bar.raw(), 0)?;
                dev.fill_bytes(self.status.raw(), 0)?;
                let args = [
                    Arg::U32(self.steps),
                    self.bar.arg(),
                    Arg::U32(self.barrier.counters(self.groups, self.gpu.device.props().cu_count)),
                    Arg::U32(self.barrier.spin_limit),
                    self.status.arg(),
                    self.slots.arg(),
                    check,
                ];
                dev.launch(&self.kernel, &grid, &args)
            }
        }
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        check_status(self.gpu, &self.status, "the barrier alone")?;
        let status = self.gpu.device.download(&self.status)?[0];
        // Every slot at `steps`, and one more element: the early-release bit, which must be 0.
        let mut got = self.gpu.device.download(&self.slots)?;
        got.push(status & STATUS_ORDER);
        let mut want = vec![self.steps; self.groups as usize];
        want.push(0);
        Ok(verify::compare(&got, &want, 1.0, 0.0))
    }

    fn work(&self) -> f64 {
        f64::from(self.steps)
    }

    fn footprint_bytes(&self) -> Option<u64> {
        Some((self.bar.bytes() + self.slots.bytes() + self.status.bytes()) as u64)
    }
}

/// A CSV row as column → value.
type CsvRow = BTreeMap<String, String>;

/// One non-PT/PT pair: the rows' shared parameters, the PT variant (with its queue), and both median times.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    /// Use case.
    pub use_case: String,
    /// PT variant, e.g. `pt`, `pt_coop`.
    pub variant: String,
    /// Flavour (`ci`, `cmi`, or empty).
    pub flavour: String,
    /// Items, nodes' initial inputs, or elements.
    pub items: f64,
    /// FMAs per item.
    pub fmas: f64,
    /// Forest levels (0 where none).
    pub levels: f64,
    /// Jacobi steps (0 where none).
    pub steps: f64,
    /// `host` or `device`.
    pub clock: String,
    /// Non-PT median time, ms.
    pub non_pt_ms: f64,
    /// PT median time, ms.
    pub pt_ms: f64,
}

impl Pair {
    /// Non-PT time / PT time: above 1, PT is faster.
    pub fn speedup(&self) -> f64 {
        self.non_pt_ms / self.pt_ms
    }
}

/// Pairs every verified non-PT row with the PT rows of the same use case, flavour, sizes and clock, at the maximal
/// launch (the queue study's and the barrier-alone rows have no non-PT partner; PT rows at fewer groups per CU are
/// read in [`step_costs`]). Rows may come from different shards or resumed runs: only the CSV counts.
pub fn pairs(rows: &[CsvRow]) -> Vec<Pair> {
    let get = |r: &CsvRow, c: &str| r.get(c).cloned().unwrap_or_default();
    let num = |r: &CsvRow, c: &str| super::num(r, c).unwrap_or(0.0);
    let ok: Vec<&CsvRow> = super::ok_rows(rows).collect();
    let key =
        |r: &CsvRow| ["use_case", "flavour", "items", "fmas", "levels", "steps", "clock"].map(|c| get(r, c)).join("|");
    let mut non_pt: HashMap<String, f64> = HashMap::new();
    for r in ok.iter().filter(|r| get(r, "variant") == "non_pt") {
        non_pt.insert(key(r), num(r, "time_ms_median"));
    }
    let mut out = Vec::new();
    // A PT row is at the maximal launch when its grid is the maximal launch (rows of runs before the groups-per-CU
    // sweep have no groups_per_cu column and are all at the maximal launch).
    let maximal = |r: &CsvRow| get(r, "groups_per_cu").is_empty() || get(r, "groups") == get(r, "max_groups");
    for r in ok.iter().filter(|r| {
        get(r, "variant") != "non_pt" && !["queue", "barrier"].contains(&get(r, "use_case").as_str()) && maximal(r)
    }) {
        if let Some(&base) = non_pt.get(&key(r)) {
            out.push(Pair {
                use_case: get(r, "use_case"),
                variant: get(r, "variant"),
                flavour: get(r, "flavour"),
                items: num(r, "items"),
                fmas: num(r, "fmas"),
                levels: num(r, "levels"),
                steps: num(r, "steps"),
                clock: get(r, "clock"),
                non_pt_ms: base,
                pt_ms: num(r, "time_ms_median"),
            });
        }
    }
    out
}

/// The pairs as CSV text (`pt-speedup.csv`).
pub fn speedup_csv(pairs: &[Pair]) -> String {
    let mut s = String::from("use_case,variant,flavour,items,fmas,levels,steps,clock,non_pt_ms,pt_ms,speedup\n");
    for p in pairs {
        s.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{}\n",
            p.use_case,
            p.variant,
            p.flavour,
            p.items,
            p.fmas,
            p.levels,
            p.steps,
            p.clock,
            p.non_pt_ms,
            p.pt_ms,
            p.speedup()
        ));
    }
    s
}

fn one_line(label: &str, xs: &[(f64, f64)]) -> (f64, f64) {
    let _ = label;
    let lo = xs.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let hi = xs.iter().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
    (lo, hi)
}

/// The experiment's plots (and `pt-speedup.csv` in `dir`): PT speedup vs FMAs per item (one line per item count)
/// per flavour, as the paper's figure 5; the forest, active-state and global-synchronisation speedups; the
/// queue's granularity; the round trip's parts.
pub fn plots(rows: &[CsvRow], dir: &Path) -> Vec<(String, LinePlot)> {
    let ok: Vec<&CsvRow> = super::ok_rows(rows).collect();
    let Some(first) = ok.first() else { return Vec::new() };
    let get = |c: &str| first.get(c).cloned().unwrap_or_default();
    let wave = get("wave_size");
    let device = format!("{} ({}, {})", get("device"), get("arch"), if wave == "64" { "wave64" } else { "warp32" });
    let pairs = pairs(rows);
    // The derived speedups beside the CSV; a failure to write them loses no plot.
    if let Err(e) = std::fs::write(dir.join("pt-speedup.csv"), speedup_csv(&pairs)) {
        eprintln!("warning: pt-speedup.csv not written: {e}");
    }
    let mut out = Vec::new();
    let unity = |pts: &[(f64, f64)]| {
        let (lo, hi) = one_line("", pts);
        Series::reference("1.0 = PT as fast as non-PT", vec![(lo, 1.0), (hi, 1.0)])
    };
    let plot = |title: String, x_label: &str, x_axis: Axis, series: Vec<Series>, note: Option<String>| {
        LinePlot {
        title,
        subtitle: Some("speedup = non-PT median time / PT median time, both timed by the host clock from the first launch to the final synchronisation; above 1: PT wins".into()),
        x_label: x_label.into(),
        y_label: "speedup non-PT / PT (x)".into(),
        x_axis,
        y_axis: Axis::Log2,
        series,
        y_max: None,
        note,
    }
    };
    // Figure 5: one plot per flavour, speedup vs FMAs, one line per item count.
    for flavour in ["ci", "cmi"] {
        let mut items: Vec<f64> = pairs
            .iter()
            .filter(|p| p.use_case == "sync" && p.flavour == flavour && p.clock == "host")
            .map(|p| p.items)
            .collect();
        items.sort_by(f64::total_cmp);
        items.dedup();
        let mut series: Vec<Series> = items
            .iter()
            .map(|&n| {
                let mut pts: Vec<(f64, f64)> = pairs
                    .iter()
                    .filter(|p| p.use_case == "sync" && p.flavour == flavour && p.clock == "host" && p.items == n)
                    .map(|p| (p.fmas, p.speedup()))
                    .collect();
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                Series::line(format!("{n} items"), pts)
            })
            .collect();
        if let Some(all) = series.first().map(|s| s.points.clone()) {
            series.push(unity(&all));
            let what = if flavour == "ci" { "compute only (CI)" } else { "compute + strided memory (CMI)" };
            out.push((
                format!("pt-sync-{flavour}.png"),
                plot(
                    format!("PT vs non-PT, CPU-GPU synchronisation, {what}, on {device}"),
                    "FMAs per item",
                    Axis::Log2,
                    series,
                    Some("non-PT: producer, 4-byte readback, consumer sized to it; PT: producer, then a persistent consumer at maximal launch popping one group of 256 items per atomic".into()),
                ),
            ));
        }
    }
    // Forest: speedup vs levels, one line per forest shape and initial inputs.
    let mut forest: Vec<Series> = Vec::new();
    for shape in ["forest_full", "forest_tilted"] {
        let mut inputs: Vec<f64> =
            pairs.iter().filter(|p| p.use_case == shape && p.clock == "host").map(|p| p.items).collect();
        inputs.sort_by(f64::total_cmp);
        inputs.dedup();
        for n in inputs {
            let mut pts: Vec<(f64, f64)> = pairs
                .iter()
                .filter(|p| p.use_case == shape && p.clock == "host" && p.items == n)
                .map(|p| (p.levels, p.speedup()))
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            forest.push(Series::line(format!("{} forest, {n} initial inputs", &shape[7..]), pts));
        }
    }
    if let Some(all) = forest.first().map(|s| s.points.clone()) {
        forest.push(unity(&all));
        out.push((
            "pt-forest.png".into(),
            plot(
                format!("PT vs non-PT, load balancing (forest traversal), on {device}"),
                "levels",
                Axis::Linear,
                forest,
                Some("non-PT: one launch and one readback per level; PT: one launch, a device work queue with one atomic pop per node".into()),
            ),
        ));
    }
    // Active state and global synchronisation: speedup vs size (or steps).
    let mut active: Vec<Series> = Vec::new();
    for (use_case, label) in [("reduce", "global sum"), ("chain", "producer-consumer chain via LDS")] {
        for clock in ["host", "device"] {
            let mut pts: Vec<(f64, f64)> = pairs
                .iter()
                .filter(|p| p.use_case == use_case && p.clock == clock)
                .map(|p| (p.items, p.speedup()))
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            active.push(Series::line(format!("{label}, {clock} clock"), pts));
        }
    }
    active.retain(|s| !s.points.is_empty());
    if let Some(all) = active.first().map(|s| s.points.clone()) {
        active.push(unity(&all));
        let mut p = plot(
            format!("PT vs non-PT, maintaining active state, on {device}"),
            "elements",
            Axis::Log2,
            active,
            Some("device clock: batches of back-to-back sequences between device events".into()),
        );
        p.subtitle = Some("speedup = non-PT median time / PT median time; above 1: PT wins".into());
        out.push(("pt-active-state.png".into(), p));
    }
    let mut sync: Vec<Series> = Vec::new();
    let mut sizes: Vec<f64> = pairs.iter().filter(|p| p.use_case == "jacobi").map(|p| p.items).collect();
    sizes.sort_by(f64::total_cmp);
    sizes.dedup();
    // Host clock for both barriers; the device clock (non-PT then replays its launches as a graph) for the
    // cooperative one, to show what is left once the host's launch cost is gone.
    for (variant, clock) in [("pt_coop", "host"), ("pt_soft", "host"), ("pt_coop", "device")] {
        for &n in &sizes {
            let mut pts: Vec<(f64, f64)> = pairs
                .iter()
                .filter(|p| p.use_case == "jacobi" && p.variant == variant && p.items == n && p.clock == clock)
                .map(|p| (p.steps, p.speedup()))
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let how = if variant == "pt_coop" { "cooperative launch + grid sync" } else { "software barrier" };
            sync.push(Series::line(format!("{how}, n = {n}, {clock} clock"), pts));
        }
    }
    sync.retain(|s| !s.points.is_empty());
    if let Some(all) = sync.first().map(|s| s.points.clone()) {
        sync.push(unity(&all));
        let mut p = plot(
            format!("PT vs non-PT, global synchronisation (Jacobi steps), on {device}"),
            "steps",
            Axis::Log10,
            sync,
            Some("non-PT: one launch per step; PT: one launch at maximal launch with a grid barrier per step; device clock: batches between device events, non-PT's launches replayed as a graph".into()),
        );
        // Speedups between 0.2 and 2: a linear axis labels them; a log-2 one would label only 1.
        p.y_axis = Axis::Linear;
        p.subtitle = Some("speedup = non-PT median time / PT median time; above 1: PT wins".into());
        out.push(("pt-global-sync.png".into(), p));
    }
    out.extend(barrier_plots(&step_costs(rows), &device));
    // Queue granularity: items per second vs items per pop.
    let num = super::num;
    let wave_size = first.get("wave_size").and_then(|w| w.parse::<u32>().ok()).unwrap_or(32);
    let per_pop = |q: &str| -> Option<f64> {
        let q = match q {
            "item" => Queue::Item,
            "wave" => Queue::Wave,
            "group" => Queue::Group,
            "static" => Queue::Static,
            other => Queue::Chunk(other.strip_prefix("chunk")?.parse().ok()?),
        };
        q.items_per_pop(wave_size).map(|v| v as f64)
    };
    let queue_rows: Vec<&&CsvRow> =
        ok.iter().filter(|r| r.get("use_case").map(String::as_str) == Some("queue")).collect();
    let mut combos: Vec<(String, String)> = queue_rows
        .iter()
        .map(|r| (r.get("items").cloned().unwrap_or_default(), r.get("fmas").cloned().unwrap_or_default()))
        .collect();
    combos.sort();
    combos.dedup();
    let mut qs: Vec<Series> = Vec::new();
    let mut statics: Vec<Series> = Vec::new();
    for (items, fmas) in &combos {
        let of: Vec<&&&CsvRow> =
            queue_rows.iter().filter(|r| r.get("items") == Some(items) && r.get("fmas") == Some(fmas)).collect();
        let mut pts: Vec<(f64, f64)> =
            of.iter().filter_map(|r| Some((per_pop(r.get("queue")?)?, num(r, "gitems_per_s")?))).collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        if let Some(st) = of.iter().find(|r| r.get("queue").map(String::as_str) == Some("static")) {
            if let (Some(v), Some(lo), Some(hi)) =
                (num(st, "gitems_per_s"), pts.first().map(|p| p.0), pts.last().map(|p| p.0))
            {
                statics.push(Series::reference(
                    format!("static schedule, {items} items, {fmas} FMAs"),
                    vec![(lo, v), (hi, v)],
                ));
            }
        }
        qs.push(Series::line(format!("{items} items, {fmas} FMAs per item"), pts));
    }
    qs.retain(|s| !s.points.is_empty());
    if !qs.is_empty() {
        qs.extend(statics);
        out.push((
            "pt-queue.png".into(),
            LinePlot {
                title: format!("PT queue granularity on {device}: one atomic pop per item, wave ({wave_size}), group (256), chunk of K groups"),
                subtitle: Some("CI consumer at maximal launch, device-event time of producer + consumer; pops per second = rate / items per pop; dashed: the static schedule (no atomics)".into()),
                x_label: "items per atomic pop".into(),
                y_label: "G items/s".into(),
                x_axis: Axis::Log2,
                y_axis: Axis::Linear,
                series: qs,
                y_max: None,
                note: None,
            },
        ));
    }
    // The round trip: its parts against the whole.
    let rt = |part: &str| {
        ok.iter()
            .find(|r| {
                r.get("use_case").map(String::as_str) == Some("roundtrip")
                    && r.get("queue").map(String::as_str) == Some(part)
            })
            .and_then(|r| num(r, "time_ms_median"))
            .map(|ms| ms * 1e3)
    };
    if let (Some(launch), Some(readback), Some(full)) = (rt("launch"), rt("readback"), rt("full")) {
        let stacked = vec![(1.0, launch), (2.0, launch + readback), (3.0, 2.0 * launch + readback)];
        out.push((
            "pt-roundtrip.png".into(),
            LinePlot {
                title: format!("Bare round trip on {device}: empty kernel -> 4-byte readback -> empty kernel"),
                subtitle: Some(format!(
                    "parts stacked: launch+sync {launch:.1} us, + readback {readback:.1} us, + relaunch+sync {launch:.1} us; measured whole: {full:.1} us (paper, GTX 295: ~400 us)"
                )),
                x_label: "parts stacked (1: launch, 2: + readback, 3: + relaunch)".into(),
                y_label: "us".into(),
                x_axis: Axis::Linear,
                y_axis: Axis::Linear,
                series: vec![
                    Series::line("sum of the parts measured alone", stacked),
                    Series::reference(format!("whole round trip measured: {full:.1} us"), vec![(1.0, full), (3.0, full)]),
                ],
                y_max: None,
                note: None,
            },
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory() -> Memory {
        Memory { device: 80 << 30, host: Some(64 << 30) }
    }

    #[test]
    fn the_host_hash_and_unit_values_are_the_kernels() {
        // lowbias32 reference values (Wellons' hash-prospector README: lowbias32(0) = 0, lowbias32(1) = 0x1a18c2d7
        // would be another constant set); pinned here so a change to either side shows.
        assert_eq!(hash(0), 0);
        assert_eq!(hash(1), hash(1));
        assert_ne!(hash(1), hash(2));
        for x in [0u32, 1, 7, 123_456, u32::MAX] {
            let u = unit(x);
            assert!((0.0..1.0).contains(&u), "{u}");
            // 24 significant bits: exact in FP32.
            assert_eq!(f64::from(u) * 16_777_216.0, f64::from(hash(x) >> 8));
        }
    }

    #[test]
    fn work_chains_are_fused_multiply_adds_in_order() {
        assert_eq!(work_ci(0.5, 0), 0.5);
        assert_eq!(work_ci(0.5, 1), 0.5f32.mul_add(A, B));
        assert_eq!(work_ci(0.5, 2), 0.5f32.mul_add(A, B).mul_add(A, B));
        // CMI over a one-element table reads unit(0) at every step; over a larger one, the strided elements.
        assert_eq!(work_cmi(0.25, 2, 9, 0), 0.25f32.mul_add(A, unit(0)).mul_add(A, unit(0)));
        let mask = (1u32 << 20) - 1;
        assert_eq!(work_cmi(0.25, 2, 9, mask), 0.25f32.mul_add(A, unit(9)).mul_add(A, unit((9 + STRIDE) & mask)));
        // The chain stays bounded for any count the kernels have: CI in [0, 1), CMI in [0, 1 / (1 - A)) = [0, 16).
        assert!((0.0..1.0).contains(&work_ci(0.999, 256)) && (0.0..16.0).contains(&work_cmi(0.999, 256, 3, mask)));
    }

    #[test]
    fn forests_are_counted_by_the_kernels_rule() {
        // One tree of one level: its root.
        let r = forest_reference(1, 1, false, 1);
        assert_eq!((r.nodes, r.levels[0], r.levels[1], r.widest), (1, 1, 0, 1));
        // Full forests: every level is 1 to 3 times the one above; tilted ones are never larger.
        for (levels, inputs) in [(4, 1), (8, 32), (6, 100)] {
            let full = forest_reference(levels, inputs, false, 4);
            let tilted = forest_reference(levels, inputs, true, 4);
            assert_eq!(full.levels[0], inputs);
            for l in 1..levels as usize {
                assert!(full.levels[l] >= full.levels[l - 1] && full.levels[l] <= 3 * full.levels[l - 1]);
            }
            assert_eq!(full.levels[levels as usize], 0);
            assert!(tilted.nodes <= full.nodes, "{levels} {inputs}");
            assert_eq!(forest_size(levels, inputs, false), Some(full.nodes));
            assert_eq!(forest_size(levels, inputs, true), Some(tilted.nodes));
            assert_eq!(full.levels.iter().map(|&c| u64::from(c)).sum::<u64>(), full.nodes);
        }
        // The tilted forest's last tree is full depth, its first is one level: with levels trees, tree t has t+1.
        let t = forest_reference(5, 5, true, 1);
        assert_eq!(t.levels[0], 5);
        assert!(t.levels[4] >= 1 && t.levels[5] == 0);
        assert!(forest_size(32, 1000, false).is_none(), "a forest past the cap is not enumerated to the end");
    }

    #[test]
    fn bad_sweep_values_are_invalid_rows_with_reasons() {
        let m = memory();
        let sync = |items, fmas| Spec::Sync {
            variant: Variant::Pt,
            queue: Queue::Group,
            flavour: Flavour::Ci,
            items,
            fmas,
            clock: ClockKind::Host,
            study: false,
        };
        assert_eq!(sync(1000, 16).problem(&m), None);
        assert!(sync(0, 16).problem(&m).unwrap().contains("at least 1"));
        assert!(sync(1 << 31, 16).problem(&m).unwrap().contains("2^30"));
        assert!(sync(1000, -4).problem(&m).unwrap().contains("compiled counts"));
        assert!(sync(1000, 3).problem(&m).unwrap().contains("compiled counts"));
        let tiny = Memory { device: 1 << 20, host: Some(64 << 30) };
        assert!(sync(1 << 20, 16).problem(&tiny).unwrap().contains("device memory"));
        let forest = |levels, inputs| Spec::Forest {
            variant: Variant::NonPt,
            tilted: false,
            levels,
            inputs,
            fmas: 16,
            clock: ClockKind::Host,
        };
        assert_eq!(forest(8, 32).problem(&m), None);
        assert!(forest(0, 32).problem(&m).unwrap().contains("1 to 32 levels"));
        assert!(forest(33, 32).problem(&m).unwrap().contains("1 to 32 levels"));
        assert!(forest(8, 0).problem(&m).unwrap().contains("initial inputs"));
        assert!(forest(30, 1000).problem(&m).unwrap().contains("more than"));
        let jacobi =
            |n, steps| Spec::Jacobi { variant: Variant::PtSoft, n, steps, clock: ClockKind::Host, per_cu: PerCu::Max };
        assert_eq!(jacobi(1000, 10).problem(&m), None);
        assert!(jacobi(1000, 0).problem(&m).unwrap().contains("0 steps"));
        assert!(jacobi(2, 10).problem(&m).unwrap().contains("at least 3"));
        let none = Spec::Jacobi {
            variant: Variant::PtCoop,
            n: 1000,
            steps: 10,
            clock: ClockKind::Device,
            per_cu: PerCu::Groups(0),
        };
        assert!(none.problem(&m).unwrap().contains("0 groups per CU"));
        let barrier = |steps, per_cu| Spec::Barrier { variant: Variant::PtSoft, steps, per_cu };
        assert_eq!(barrier(100, PerCu::Groups(2)).problem(&m), None);
        assert!(barrier(0, PerCu::Max).problem(&m).unwrap().contains("0 steps"));
        assert!(barrier(10, PerCu::Groups(0)).problem(&m).unwrap().contains("0 groups per CU"));
        assert!(Spec::Reduce { variant: Variant::Pt, n: 0, clock: ClockKind::Host }.problem(&m).is_some());
        let chunk0 = Spec::Sync {
            variant: Variant::Pt,
            queue: Queue::Chunk(0),
            flavour: Flavour::Ci,
            items: 1000,
            fmas: 16,
            clock: ClockKind::Device,
            study: true,
        };
        assert!(chunk0.problem(&m).unwrap().contains("chunk of 0"));
    }

    #[test]
    fn the_default_sweep_has_unique_keys_and_pairs_for_every_pt_row() {
        let specs = PtSweep::default().specs();
        let keys: std::collections::BTreeSet<String> = specs.iter().map(Spec::key).collect();
        assert_eq!(keys.len(), specs.len(), "keys are unique");
        // Every PT row outside the queue study and the device-clock sync/forest rows has a non-PT partner.
        for s in &specs {
            if s.variant() == Variant::NonPt || matches!(s, Spec::Sync { study: true, .. } | Spec::RoundTrip { .. }) {
                continue;
            }
            let partner = specs.iter().any(|o| {
                o.variant() == Variant::NonPt
                    && o.use_case() == s.use_case()
                    && o.clock() == s.clock()
                    && match (o, s) {
                        (
                            Spec::Sync { items: a, fmas: f, flavour: x, .. },
                            Spec::Sync { items: b, fmas: g, flavour: y, .. },
                        ) => a == b && f == g && x == y,
                        (Spec::Forest { levels: a, inputs: i, .. }, Spec::Forest { levels: b, inputs: j, .. }) => {
                            a == b && i == j
                        }
                        (Spec::Jacobi { n: a, steps: x, .. }, Spec::Jacobi { n: b, steps: y, per_cu, .. }) => {
                            a == b && x == y && *per_cu == PerCu::Max
                        }
                        (Spec::Reduce { n: a, .. }, Spec::Reduce { n: b, .. })
                        | (Spec::Chain { n: a, .. }, Spec::Chain { n: b, .. }) => a == b,
                        _ => false,
                    }
            });
            // Non-PT sync and forest sequences hold a host readback: they have no device-clock rows. The barrier
            // alone and the PT rows at fewer groups per CU are read as costs per step, not as speedups.
            let readback = matches!(s, Spec::Sync { .. } | Spec::Forest { .. }) && s.clock() == ClockKind::Device;
            let unpaired = matches!(s, Spec::Barrier { .. } | Spec::Jacobi { per_cu: PerCu::Groups(_), .. });
            assert_eq!(partner, !readback && !unpaired, "{}", s.key());
        }
        let only: PtSweep = PtSweep { use_cases: vec!["jacobi".into()], ..PtSweep::default() };
        assert!(only.specs().iter().all(|s| s.use_case() == "jacobi"));
    }

    #[test]
    fn a_grid_larger_than_the_coresident_one_is_refused_with_a_reason() {
        assert!(check_coresident("k", 264, 264).is_ok());
        assert!(check_coresident("k", 1, 264).is_ok());
        let e = check_coresident("pt_jacobi_soft", 265, 264).unwrap_err().to_string();
        assert!(e.contains("265 groups") && e.contains("264 groups") && e.contains("resident at once"), "{e}");
    }

    #[test]
    fn jacobi_reference_keeps_the_ends_and_averages_inside() {
        let x = [3.0f32, 0.0, 0.0, 6.0];
        let one = jacobi_reference(&x, 1);
        assert_eq!(one, vec![3.0, 1.0, 2.0, 6.0]);
        let flat = jacobi_reference(&[0.5; 100], 7);
        assert!(flat.iter().all(|&v| v == 0.5));
        assert_eq!(jacobi_reference(&x, 0), x.to_vec());
    }

    #[test]
    fn sum_tolerance_grows_with_the_longest_chain() {
        assert_eq!(sum_tolerance(0), 0.0);
        assert_eq!(sum_tolerance(10), 10.0 * F32_EPS);
        assert_eq!(tree_depth(256), 8);
        assert_eq!(tree_depth(1), 0);
        // A sequential FP32 sum of 2^20 values of 0.1 is off by far more than a tree's bound, less than its own.
        let n = 1 << 20;
        let seq: f32 = (0..n).map(|_| 0.1f32).sum();
        let exact = f64::from(0.1f32) * n as f64;
        let err = (f64::from(seq) - exact).abs() / exact;
        assert!(err > sum_tolerance(20) && err < sum_tolerance(n as u64));
    }

    fn row(pairs: &[(&str, &str)]) -> CsvRow {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn sync_row(variant: &str, items: &str, fmas: &str, ms: &str, clock: &str) -> CsvRow {
        row(&[
            ("device", "NVIDIA H100 80GB HBM3"),
            ("arch", "sm_90"),
            ("wave_size", "32"),
            ("use_case", "sync"),
            ("variant", variant),
            ("queue", if variant == "pt" { "group" } else { "" }),
            ("flavour", "ci"),
            ("items", items),
            ("fmas", fmas),
            ("levels", ""),
            ("steps", ""),
            ("clock", clock),
            ("time_ms_median", ms),
            ("gitems_per_s", "1"),
            ("status", "ok"),
        ])
    }

    #[test]
    fn speedups_pair_rows_by_their_parameters_whatever_file_they_came_from() {
        // Rows of one pair in either order, as two shards would write them; a failed row and a device-clock row
        // without a partner pair with nothing.
        let mut rows = vec![
            sync_row("pt", "1024", "16", "0.010", "host"),
            sync_row("non_pt", "4096", "16", "0.030", "host"),
            sync_row("non_pt", "1024", "16", "0.040", "host"),
            sync_row("pt", "4096", "16", "0.060", "host"),
            sync_row("pt", "1024", "16", "0.005", "device"),
        ];
        let mut failed = sync_row("pt", "4096", "64", "0.01", "host");
        failed.insert("status".into(), "fail".into());
        rows.push(failed);
        rows.push(sync_row("non_pt", "4096", "64", "0.02", "host"));
        let p = pairs(&rows);
        assert_eq!(p.len(), 2);
        let at = |items: f64| p.iter().find(|p| p.items == items).unwrap();
        assert_eq!(at(1024.0).speedup(), 4.0);
        assert_eq!(at(4096.0).speedup(), 0.5);
        let csv = speedup_csv(&p);
        assert!(csv.starts_with("use_case,variant,flavour,items,fmas,levels,steps,clock,non_pt_ms,pt_ms,speedup\n"));
        assert!(csv.contains("sync,pt,ci,1024,16,0,0,host,0.04,0.01,4\n"), "{csv}");
    }

    #[test]
    fn plots_come_from_the_rows_and_write_the_speedup_csv() {
        let dir = tempfile::tempdir().unwrap();
        let mut rows = Vec::new();
        for items in ["1024", "4096"] {
            for fmas in ["1", "16", "256"] {
                rows.push(sync_row("non_pt", items, fmas, "0.04", "host"));
                rows.push(sync_row("pt", items, fmas, "0.02", "host"));
            }
        }
        for (part, ms) in [("launch", "0.008"), ("readback", "0.012"), ("full", "0.030")] {
            rows.push(row(&[
                ("device", "H100"),
                ("arch", "sm_90"),
                ("wave_size", "32"),
                ("use_case", "roundtrip"),
                ("variant", "non_pt"),
                ("queue", part),
                ("time_ms_median", ms),
                ("status", "ok"),
            ]));
        }
        let plots = plots(&rows, dir.path());
        let names: Vec<&str> = plots.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["pt-sync-ci.png", "pt-roundtrip.png"]);
        let (_, fig5) = &plots[0];
        assert!(fig5.title.contains("NVIDIA H100 80GB HBM3") && fig5.title.contains("warp32"), "{}", fig5.title);
        // One line per item count plus the 1.0 reference.
        assert_eq!(fig5.series.len(), 3);
        assert_eq!(fig5.series[0].points, vec![(1.0, 2.0), (16.0, 2.0), (256.0, 2.0)]);
        assert_eq!(fig5.series[2].points, vec![(1.0, 1.0), (256.0, 1.0)]);
        let csv = std::fs::read_to_string(dir.path().join("pt-speedup.csv")).unwrap();
        assert_eq!(csv.lines().count(), 7);
        assert_eq!(
            headlines(&rows),
            [
                "bare round trip (launch, 4-byte readback, relaunch, sync): 30.0 µs",
                "sync, pt vs non_pt (host clock): speedup 2.00 to 2.00 over 6 points",
            ]
        );
        for (name, plot) in &plots {
            crate::report::plot::render_png(plot, &dir.path().join(name), 800, 500).unwrap();
        }
    }

    #[test]
    fn groups_per_cu_give_grids_below_the_maximal_launch_and_keys_of_their_own() {
        assert_eq!(PerCu::parse("max"), Some(PerCu::Max));
        assert_eq!(PerCu::parse(" 4"), Some(PerCu::Groups(4)));
        assert_eq!(PerCu::parse("0"), None);
        assert_eq!(PerCu::parse("four"), None);
        // An H200: 132 SMs, 8 groups of 256 per SM at the maximal launch.
        assert_eq!(PerCu::Max.grid(132, 1056), Ok(1056));
        assert_eq!(PerCu::Groups(1).grid(132, 1056), Ok(132));
        assert_eq!(PerCu::Groups(4).grid(132, 1056), Ok(528));
        assert!(PerCu::Groups(8).grid(132, 1056).unwrap_err().contains("the `max` row measures it"));
        assert!(PerCu::Groups(9).grid(132, 1056).unwrap_err().contains("more than the 8 per CU"));
        // The maximal launch keeps the key earlier runs wrote, so `suite compare` joins them.
        let at =
            |per_cu| Spec::Jacobi { variant: Variant::PtSoft, n: 65536, steps: 100, clock: ClockKind::Device, per_cu };
        assert_eq!(at(PerCu::Max).key(), "jacobi/pt_soft/n=65536,steps=100/device");
        assert_eq!(at(PerCu::Groups(2)).key(), "jacobi/pt_soft/n=65536,steps=100,per_cu=2/device");
        let alone = Spec::Barrier { variant: Variant::NonPt, steps: 100, per_cu: PerCu::Groups(1) };
        assert_eq!(alone.key(), "barrier/non_pt/steps=100,per_cu=1/device");
        assert_eq!((alone.use_case(), alone.clock()), ("barrier", ClockKind::Device));
        // The sweep: per size and steps, non-PT and both PT variants at the maximal launch on both clocks, the PT
        // variants at each smaller count on the device clock; the barrier alone for all three at every count.
        let sweep = PtSweep {
            use_cases: vec!["jacobi".into(), "barrier".into()],
            jacobi_sizes: vec![1 << 16],
            steps: vec![100],
            ..PtSweep::default()
        };
        let specs = sweep.specs();
        assert_eq!(specs.iter().filter(|s| s.use_case() == "jacobi").count(), 6 + 2 * 3);
        assert_eq!(specs.iter().filter(|s| s.use_case() == "barrier").count(), 3 * 4);
        assert!(specs.iter().all(|s| s.per_cu().is_some() || s.variant() == Variant::NonPt));
    }

    #[test]
    fn the_software_barrier_has_one_counter_per_group_per_cu_by_default_and_never_more_than_groups_or_eight() {
        let b = PtSweep::default().soft_barrier();
        assert_eq!(b.counters, BarrierCounters::PerGroupPerCu);
        // An H200 (132 SMs) at 1, 2, 4, 8 groups per SM; a grid below one group per CU; 16 per CU.
        assert_eq!([132, 264, 528, 1056, 100, 2112].map(|g| b.counters(g, 132)), [1, 2, 4, 8, 1, 8]);
        assert_eq!(b.counters(1056, 0), 8, "0 CUs (an unknown count) must not divide by zero");
        let five = SoftBarrier { counters: BarrierCounters::Fixed(5), ..b };
        assert_eq!([1, 3, 5, 132, 1056].map(|g| five.counters(g, 132)), [1, 3, 5, 5, 5]);
        assert_eq!(BarrierCounters::parse("auto"), Some(BarrierCounters::PerGroupPerCu));
        assert_eq!(BarrierCounters::parse(" 8"), Some(BarrierCounters::Fixed(8)));
        for bad in ["0", "9", "eight", ""] {
            assert_eq!(BarrierCounters::parse(bad), None, "{bad}");
        }
    }

    fn sync_row_at(use_case: &str, variant: &str, n: &str, per_cu: &str, groups: &str, ms: &str) -> CsvRow {
        row(&[
            ("device", "NVIDIA H200"),
            ("arch", "sm_90"),
            ("wave_size", "32"),
            ("use_case", use_case),
            ("variant", variant),
            ("items", n),
            ("steps", "100"),
            ("groups", groups),
            ("max_groups", "1056"),
            ("groups_per_cu", per_cu),
            ("clock", "device"),
            ("time_ms_median", ms),
            ("status", "ok"),
        ])
    }

    #[test]
    fn global_sync_rows_become_costs_per_step_headlines_and_a_plot_by_groups_per_cu() {
        let mut rows = Vec::new();
        for (k, groups, soft, coop, relaunch) in
            [("1", "132", "0.100", "0.098", "0.054"), ("8", "1056", "0.150", "0.222", "0.110")]
        {
            rows.push(sync_row_at("barrier", "pt_soft", "0", k, groups, soft));
            rows.push(sync_row_at("barrier", "pt_coop", "0", k, groups, coop));
            rows.push(sync_row_at("barrier", "non_pt", "0", k, groups, relaunch));
            rows.push(sync_row_at("jacobi", "pt_soft", "65536", k, groups, "0.200"));
            rows.push(sync_row_at("jacobi", "pt_coop", "65536", k, groups, "0.270"));
        }
        rows.push(sync_row_at("jacobi", "non_pt", "65536", "", "256", "0.115"));
        let costs = step_costs(&rows);
        assert_eq!(costs.len(), 11);
        let soft_max = costs.iter().find(|c| c.use_case == "barrier" && c.variant == "pt_soft" && c.maximal).unwrap();
        assert_eq!((soft_max.per_cu, soft_max.steps), (Some(8), 100));
        assert!((soft_max.us - 1.5).abs() < 1e-9);
        assert_eq!(
            barrier_headlines(&costs),
            [
                "barrier alone (100 steps), µs per step at the maximal launch (device clock): software barrier 1.50, \
                 grid barrier (cooperative) 2.22, relaunch (graph) 1.10",
                "barrier alone (100 steps), µs per step at 1/8 groups per CU: software barrier 1.00/1.50; grid \
                 barrier (cooperative) 0.98/2.22; relaunch (graph) 0.54/1.10",
                "Jacobi n = 65536 (100 steps), µs per step at the maximal launch (device clock): software barrier \
                 2.00, grid barrier (cooperative) 2.70, relaunch (graph) 1.15",
                "Jacobi n = 65536 (100 steps), µs per step at 1/8 groups per CU: software barrier 2.00/2.00; grid \
                 barrier (cooperative) 2.70/2.70",
            ]
        );
        // Only the maximal launch pairs with non-PT; the barrier alone pairs with nothing.
        let p = pairs(&rows);
        assert_eq!(p.len(), 2, "{p:?}");
        let dir = tempfile::tempdir().unwrap();
        let plots = plots(&rows, dir.path());
        let (name, plot) = plots.iter().find(|(n, _)| n.starts_with("pt-barrier")).unwrap();
        assert_eq!(name, "pt-barrier-n65536.png");
        // Three barrier-alone lines, two Jacobi lines, Jacobi's relaunch as a reference.
        assert_eq!(plot.series.len(), 6);
        assert_eq!(plot.series[0].points, vec![(1.0, 1.0), (8.0, 1.5)]);
        assert_eq!(plot.series[5].points, vec![(1.0, 1.15), (8.0, 1.15)]);
        for (name, plot) in &plots {
            crate::report::plot::render_png(plot, &dir.path().join(name), 1000, 600).unwrap();
        }
    }

    #[test]
    fn queue_pops_take_the_wave_size_into_account() {
        assert_eq!(Queue::Wave.items_per_pop(64), Some(64));
        assert_eq!(Queue::Wave.items_per_pop(32), Some(32));
        assert_eq!(Queue::Chunk(4).items_per_pop(32), Some(1024));
        assert_eq!(Queue::Static.items_per_pop(32), None);
        assert_eq!(Queue::Chunk(16).name(), "chunk16");
    }

    /// The PT kernels' maximal launch on an MI250X GCD (110 CUs, wave64), computed from the gfx90a code object's
    /// static metadata at groups of 256: the README's table (`cargo test -p suite --lib mi250x -- --nocapture`).
    #[test]
    fn maximal_launch_on_an_mi250x_gcd_is_computed_from_static_metadata() {
        let store = crate::kernels::KernelStore::new(None);
        let arch = crate::device::Arch::parse("gfx90a").unwrap();
        let source = crate::kernels::source(SOURCE).unwrap();
        let object = store.code_object(source, &arch).unwrap_or_else(|e| panic!("{e}"));
        let mut seen = 0;
        for k in object.info.amd_kernels.iter().filter(|k| k.name.contains("_pt") || k.name.contains("jacobi_")) {
            let profile = occupancy::Profile::for_arch(&arch, Some(k.wave_size)).unwrap();
            let res = Resources { group_size: GROUP, ..Resources::from_amd_kernel(k) };
            let occ = profile.occupancy(&res).unwrap();
            let groups = occ.groups_per_cu * 110;
            println!(
                "{:<24} vgpr {:>3} sgpr {:>3} lds {:>5} -> {} groups/CU ({}) -> maximal launch {groups}",
                k.name,
                k.vgpr_count,
                k.sgpr_count,
                k.lds_bytes,
                occ.groups_per_cu,
                occ.limiter.name()
            );
            // 256 items are 4 waves of 64: at most 8 groups on a CU's 32 wave slots, and at least one.
            assert!((110..=8 * 110).contains(&groups), "{}: {groups}", k.name);
            seen += 1;
        }
        assert!(seen >= 14, "only {seen} PT kernels in the gfx90a object");
    }
}
