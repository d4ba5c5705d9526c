//! The points of the PT sweep: what each one is ([`Spec`] and the small types it is made of), its key, why it
//! cannot run, and what one sequence of it launches and costs (for the CSV and the estimate).

use serde::Serialize;

use super::reference::forest_size;
use super::{
    CHAIN_FMAS, CMI_TABLE, FMAS, GROUP, MAX_BARRIER_COUNTERS, MAX_FOREST_NODES, MAX_LEVELS, QUEUE_CHUNK, QUEUE_GROUP,
    QUEUE_ITEM, QUEUE_STATIC, QUEUE_WAVE,
};
use crate::experiments::estimate::{LAUNCH_S, STREAMING_SHARE};
use crate::experiments::Work;
use crate::options::Memory;

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
    /// CSV value.
    pub fn name(self) -> &'static str {
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

    /// The `variant` column (the round trip is non-PT).
    pub fn variant(&self) -> Variant {
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

    /// The `clock` column.
    pub fn clock(&self) -> ClockKind {
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
    pub fn pt_kernel(&self) -> Option<String> {
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
    pub fn key(&self) -> String {
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

/// Kernel launches per sequence and groups per launch, as far as they are known before the run ("" where they
/// vary with the data: the forest's levels).
pub(super) fn launches_and_groups(spec: &Spec, maximal: Option<u32>, grid: Option<u32>) -> (String, String) {
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
/// its launches and host round trips; the host draws and checks the bytes of one launch (Jacobi: its result).
pub(super) fn point_work(spec: &Spec) -> Work {
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
        // The host reads back the FP32 result (its start vector and reference are shared by the points of a size
        // and step count): 4 bytes per element, not the steps' traffic.
        Spec::Jacobi { n, steps, .. } => {
            let steps = f64::from(steps);
            Work::kernel(3.0 * f(n) * steps, 12.0 * f(n) * steps, 0.2)
                .at_least(steps * LAUNCH_S)
                .with_host_bytes(4.0 * f(n))
        }
        // No work: a barrier (a few µs at most, measured 1 to 4 µs on an H200) or a graph-replayed launch per step.
        Spec::Barrier { steps, .. } => Work::fixed(f64::from(steps) * LAUNCH_S),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::pt::PtSweep;

    fn memory() -> Memory {
        Memory { device: 80 << 30, host: Some(64 << 30) }
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

    #[test]
    fn queue_pops_take_the_wave_size_into_account() {
        assert_eq!(Queue::Wave.items_per_pop(64), Some(64));
        assert_eq!(Queue::Wave.items_per_pop(32), Some(32));
        assert_eq!(Queue::Chunk(4).items_per_pop(32), Some(1024));
        assert_eq!(Queue::Static.items_per_pop(32), None);
        assert_eq!(Queue::Chunk(16).name(), "chunk16");
    }
}
