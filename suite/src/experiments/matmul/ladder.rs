//! The kernel ladder's types and rules: what a kernel of the table is ([`Variant`]: launch geometry, size
//! requirements, schedule, precisions, unit, where it exists), how it runs at a shape ([`Variant::plan`]), why a point
//! cannot run ([`point_problem`], [`Variant::problem_on`]), the per-architecture default sets and the selection
//! `--kernels` and `--tiles` make ([`select_kernels`]). The table itself is `rungs.rs`.

use serde::Serialize;

use super::pack::Pack;
use super::shape::Shape;
use crate::options::{Memory, MAX_GROUPS_X};
use crate::peaks::Unit;
use crate::precision::Precision;

/// The reference kernel of FP32 points (`kernels/matmul.hip`): FP64 accumulation in 16×16 tiles. It runs at every
/// shape, so its grid bounds every point ([`point_problem`]), and every FP32 point is checked against its result.
pub(super) const REFERENCE_SYMBOL: &str = "matmul_reference_f64";

/// The reference kernel of FP64 points: compensated (Dot2) FP64 accumulation in 16×16 tiles, the same grid.
pub(super) const REFERENCE_DOT2_SYMBOL: &str = "matmul_reference_dot2_f64";

/// Rows and columns of C one group of the reference kernels computes.
pub(super) const REFERENCE_TILE: u32 = 16;

/// What a kernel needs of the sizes: each of M, N, K must be a multiple of the given number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Multiples {
    /// Rows of A and C.
    pub m: u32,
    /// Columns of B and C.
    pub n: u32,
    /// Columns of A, rows of B.
    pub k: u32,
}

/// Any size.
pub(super) const ANY: Multiples = Multiples { m: 1, n: 1, k: 1 };

/// How a kernel's groups cover C and K (see `kernels/matmul.hip`, kernels 8 to 11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Schedule {
    /// One group per BM×BN tile of C, over all of K: grid (ceil(N/BN), ceil(M/BM)).
    Tiles,
    /// Split-K over tiles taken in an order of the kernel's own (the DMMA rung: GROUP_M tile rows at a time, for L2
    /// reuse): grid (ceil(M/BM)·ceil(N/BN), S), the 1-D tile order along x and the S splits along y; S = 1 is one
    /// group per tile over all of K. S > 1 launches the kernel's split instance (symbol + [`SPLIT_SUFFIX`]), and the
    /// partial tiles are always summed by the reduction kernel ([`Fixup::Kernel`]).
    GroupedSplitK,
    /// Split-K: S groups per tile (grid z), each over a range of K; the S partial tiles (workspace tiles·S·BM·BN
    /// elements) are added in a fixed order, where the plan's [`Fixup`] says.
    SplitK,
    /// Split-K adding the partial tiles into C with atomics, after zeroing C (`matmul_zero_c`): not deterministic.
    SplitKAtomic,
    /// Stream-K: G = CUs × groups per CU groups, each with an equal share of all tiles' slabs (grid (G, 1, 1));
    /// partial tiles are added in a fixed order by the last contributor (workspace 2·G·BM·BN elements).
    StreamK,
}

/// Whether a kernel has an instance in one precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Instance {
    /// It has one: in FP32 the kernel `symbol`, in FP64 `<symbol>_f64` (each with its `_unaligned` twin where the
    /// kernel has one).
    Yes,
    /// It has none, for this reason: its row in that precision is `invalid` and says so.
    No(&'static str),
}

/// Where a kernel exists (is compiled into the code object), and why not elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Exists {
    /// On every architecture the suite compiles for.
    Everywhere,
    /// On NVIDIA architectures of compute capability `sm` (e.g. 80 for sm_80) and later; elsewhere not, because
    /// `why_not`.
    NvidiaFrom {
        /// The first compute capability, major·10 + minor.
        sm: u32,
        /// Why the kernel is not there on other architectures.
        why_not: &'static str,
    },
    /// On the architectures whose names start with one of `prefixes` (e.g. `gfx90a`, `gfx94`).
    Archs {
        /// Prefixes of the architectures it exists on.
        prefixes: &'static [&'static str],
        /// Why the kernel is not there on other architectures.
        why_not: &'static str,
    },
}

impl Exists {
    /// Whether the kernel exists on `arch` (the HIP-over-CUDA test runtime reports its CUDA architecture).
    pub fn on(&self, arch: &str) -> bool {
        match self {
            Exists::Everywhere => true,
            Exists::NvidiaFrom { sm, .. } => arch
                .strip_prefix("sm_")
                .and_then(|cc| cc.chars().take_while(char::is_ascii_digit).collect::<String>().parse::<u32>().ok())
                .is_some_and(|cc| cc >= *sm),
            Exists::Archs { prefixes, .. } => prefixes.iter().any(|p| arch.starts_with(p)),
        }
    }
}

/// What a kernel's arithmetic runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Arith {
    /// FMA on the vector units. `packs_fp32_on_cdna`: clang pairs its FP32 FMAs into `v_pk_fma_f32` on CDNA2/3
    /// (a CPU test reads the gfx90a code object), so its FP32 rows there use the packed path.
    Fma {
        /// Whether its FP32 code on gfx90a is packed FMA.
        packs_fp32_on_cdna: bool,
    },
    /// The matrix units: NVIDIA's tensor cores, AMD's MFMA.
    Matrix,
}

/// One matmul kernel: its symbol, launch geometry, size requirements, precisions, unit and where it exists. CLI
/// values, CSV rows, plots and tests all come from this table (`rungs::VARIANTS`); the order is the ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Variant {
    /// Name on the command line and in the CSV, e.g. `tiled_m16`.
    pub name: &'static str,
    /// Family, for `--kernels`: `tiled` selects every `tiled_m*` allowed by `--tiles`.
    pub family: &'static str,
    /// Kernel symbol of the FP32 instance (or the base of the FP64 one's, see [`Instance::Yes`]).
    pub symbol: &'static str,
    /// The kernel source (`kernels/<source>.hip`) that holds it.
    pub source: &'static str,
    /// LDS tile size M of the seed's tiled kernel, where it has one.
    pub tile_m: Option<u32>,
    /// Items per group along x (columns of C) and y (rows of C).
    pub group: [u32; 2],
    /// Elements of C one group computes: columns (BN) and rows (BM).
    pub block: [u32; 2],
    /// Depth of the K slabs the kernel consumes at a time (BK), for the schedules that split K.
    pub slab_k: u32,
    /// Whether C must be zero before the launch (the naive kernel accumulates into it).
    pub zero_c: bool,
    /// Size requirements (the rung keeps them on purpose; every kernel of the ladder now takes any size).
    pub multiples: Multiples,
    /// Whether `symbol` moves 16-byte vectors and so needs aligned rows (16-byte aligned: N and K multiples of 4 in
    /// FP32, even in FP64); other sizes launch its twin `<symbol>_unaligned`, the same kernel with guarded
    /// element accesses.
    pub aligned_rows: bool,
    /// Whether its FP32 instance has a `_packed` twin: the aligned kernel's 16-byte loads, reading copies of A and B
    /// whose rows are padded to 16 bytes (made by `matmul_pack_operands` in the same launch), and writing C with
    /// 16-byte stores realigned by shuffles: the rungs 8 to 10 (double_buffer, splitk, streamk), where sizes with unaligned rows may pack
    /// instead of running the `_unaligned` twin ([`Packing`]).
    pub packed_twin: bool,
    /// How the groups cover C and K.
    pub schedule: Schedule,
    /// Its FP32 instance, or why it has none.
    pub f32: Instance,
    /// Its FP64 instance, or why it has none.
    pub f64: Instance,
    /// The unit its arithmetic runs on.
    pub arith: Arith,
    /// The architectures it exists on.
    pub exists: Exists,
    /// Dynamic LDS per group, bytes (0: static LDS only).
    pub dynamic_lds_bytes: u32,
}

impl Variant {
    /// Its instance in `precision`.
    pub fn instance(&self, precision: Precision) -> Instance {
        match precision {
            Precision::F32 => self.f32,
            Precision::F64 => self.f64,
        }
    }

    /// Why this kernel cannot run in `precision` on `arch` at all (no instance, or not compiled there), if it cannot.
    pub fn problem_on(&self, precision: Precision, arch: &str) -> Option<String> {
        if let Instance::No(why) = self.instance(precision) {
            return Some(format!("{} has no {} instance: {why}", self.name, precision.label()));
        }
        match self.exists {
            _ if self.exists.on(arch) => None,
            Exists::NvidiaFrom { why_not, .. } | Exists::Archs { why_not, .. } => {
                Some(format!("{} does not exist on {arch}: {why_not}", self.name))
            }
            Exists::Everywhere => None,
        }
    }

    /// The unit its `precision` instance runs on, on `arch`: the matrix units for a matrix rung; the packed path for
    /// an FP32 kernel whose FMAs clang packs on CDNA2/3 (gfx90a, gfx94x, gfx95x: `v_pk_fma_f32`); else the vector
    /// units (FP64 has no packed form).
    pub fn unit(&self, precision: Precision, arch: &str) -> Unit {
        let cdna_packed = ["gfx90a", "gfx94", "gfx95"].iter().any(|p| arch.starts_with(p));
        match self.arith {
            Arith::Matrix => Unit::Matrix,
            Arith::Fma { packs_fp32_on_cdna: true } if precision == Precision::F32 && cdna_packed => Unit::Packed,
            Arith::Fma { .. } => Unit::Vector,
        }
    }

    /// Why this kernel cannot compute `shape`, if it cannot.
    pub fn check(&self, shape: Shape) -> Option<String> {
        let req = self.multiples;
        let bad: Vec<String> = [("M", shape.m, req.m), ("N", shape.n, req.n), ("K", shape.k, req.k)]
            .iter()
            .filter(|(_, size, multiple)| size % (*multiple as usize) != 0)
            .map(|(dim, size, multiple)| format!("{dim} = {size} is not a multiple of {multiple}"))
            .collect();
        if bad.is_empty() {
            None
        } else {
            Some(format!("{} needs {}: {}", self.name, req_text(req), bad.join(", ")))
        }
    }

    /// The symbol launched at `shape` in `precision`: `symbol` (FP32) or `symbol_f64`, then `_unaligned` where rows
    /// are not 16-byte aligned and the kernel has that twin.
    pub fn symbol_for(&self, shape: Shape, precision: Precision) -> String {
        let base = match precision {
            Precision::F32 => self.symbol.to_string(),
            Precision::F64 => format!("{}_f64", self.symbol),
        };
        if self.aligned_rows && !shape.rows_aligned_for(precision) {
            format!("{base}_unaligned")
        } else {
            base
        }
    }

    /// Whether a plan of this kernel at `shape` in `precision` may pack A and B: an FP32 size whose rows are not
    /// 16-byte aligned, and a kernel with a `_packed` twin.
    pub fn can_pack(&self, shape: Shape, precision: Precision) -> bool {
        self.packed_twin && precision == Precision::F32 && !shape.rows_aligned_for(precision)
    }

    /// The symbol of its `_packed` twin (FP32 only: [`Variant::can_pack`]).
    pub fn packed_symbol(&self) -> String {
        format!("{}_packed", self.symbol)
    }

    /// Tiles of C: ceil(N/BN) × ceil(M/BM).
    pub(super) fn tiles(&self, shape: Shape) -> (u64, u64) {
        (shape.n.div_ceil(self.block[0] as usize) as u64, shape.m.div_ceil(self.block[1] as usize) as u64)
    }

    /// Why this kernel's grid cannot cover `shape`.
    fn grid_problem(&self, shape: Shape) -> Option<String> {
        match self.schedule {
            Schedule::GroupedSplitK => {
                let (tx, ty) = self.tiles(shape);
                let groups = tx.saturating_mul(ty);
                (groups > MAX_GROUPS_X).then(|| {
                    format!("{} needs a grid of {groups} groups; a grid holds at most {MAX_GROUPS_X}", self.symbol)
                })
            }
            _ => shape.grid_problem(self.symbol, self.block),
        }
    }

    /// How this kernel runs at `shape` in `precision` on a device with `cus` CUs where `groups_per_cu` of its
    /// groups fit at once: the split-K count (`split`, or [`split_k_for`] when `None`), the stream-K group count,
    /// the grid and the workspace. An error says why it cannot be launched so.
    pub fn plan(
        &self,
        shape: Shape,
        precision: Precision,
        cus: u32,
        groups_per_cu: u32,
        split: Option<u32>,
    ) -> Result<Plan, String> {
        let (tx, ty) = self.tiles(shape);
        let tiles = tx * ty;
        let slabs = shape.k.div_ceil(self.slab_k.max(1) as usize) as u64;
        let slots = u64::from(cus) * u64::from(groups_per_cu.max(1));
        let tile_elems = u64::from(self.block[0]) * u64::from(self.block[1]);
        let grid2 = |z: u64| -> Result<[u32; 3], String> {
            match (u32::try_from(tx), u32::try_from(ty), u32::try_from(z)) {
                (Ok(x), Ok(y), Ok(z)) => Ok([x, y, z]),
                _ => Err(format!("{} needs a grid of {tx} x {ty} x {z} groups", self.name)),
            }
        };
        let symbol = self.symbol_for(shape, precision);
        let element_bytes = precision.bytes();
        let make = |grid, split_k, work_elems, counters, fixup| Plan {
            symbol: symbol.clone(),
            grid,
            split_k,
            work_elems,
            element_bytes,
            counters,
            fixup,
            tail: None,
            pack: None,
            dynamic_lds_bytes: self.dynamic_lds_bytes,
        };
        let resolve_split = || -> Result<u64, String> {
            let s = u64::from(split.unwrap_or_else(|| split_k_for(tiles, slabs, slots)));
            if s == 0 || s > slabs.max(1) {
                return Err(format!("{}: split K = {s} needs 1 to {slabs} (the slabs of K)", self.name));
            }
            Ok(s)
        };
        // The workspace of a split-K plan: S partial tiles per tile, summed where `Fixup::for_split` says.
        let split_work = |s: u64| match Fixup::for_split(s, tile_elems * element_bytes) {
            Fixup::None => (0, 0, Fixup::None),
            Fixup::InKernel => (tiles * s * tile_elems, tiles, Fixup::InKernel),
            Fixup::Kernel => (tiles * s * tile_elems, 0, Fixup::Kernel),
        };
        match self.schedule {
            Schedule::Tiles => Ok(make(grid2(1)?, 1, 0, 0, Fixup::None)),
            Schedule::GroupedSplitK => {
                let groups =
                    u32::try_from(tiles).map_err(|_| format!("{} needs a grid of {tiles} groups", self.name))?;
                // Without a split asked for, a grid of more than one wave whose last wave is at most half full
                // splits only that wave's tiles.
                if let (None, Some(tail)) = (split, tail_split(tiles, slabs, slots)) {
                    let mut plan = make([tail.first, 1, 1], tail.split, tail_work(tail, tile_elems), 0, Fixup::Kernel);
                    plan.tail = Some(tail);
                    return Ok(plan);
                }
                // The DMMA rung sums its partial tiles in the reduction kernel only (kernels/matmul_dmma.hip says
                // why).
                let s = resolve_split()?;
                let (work, counters, fixup) =
                    if s > 1 { (tiles * s * tile_elems, 0, Fixup::Kernel) } else { (0, 0, Fixup::None) };
                let mut plan = make([groups, s as u32, 1], s as u32, work, counters, fixup);
                if s > 1 {
                    // The split instance: the same kernel with the workspace arguments (kernels/matmul_dmma.hip).
                    plan.symbol = format!("{}{SPLIT_SUFFIX}", plan.symbol);
                }
                Ok(plan)
            }
            Schedule::SplitK => {
                let s = resolve_split()?;
                // FP64's split-K sums in the kernel only (kernels/matmul.hip, kernel 9: its _unaligned instance has
                // no register to spare for the other path).
                let (work, counters, fixup) = match precision {
                    Precision::F64 if s > 1 => (tiles * s * tile_elems, tiles, Fixup::InKernel),
                    _ => split_work(s),
                };
                Ok(make(grid2(s)?, s as u32, work, counters, fixup))
            }
            Schedule::SplitKAtomic => {
                let s = resolve_split()?;
                Ok(make(grid2(s)?, s as u32, 0, 0, Fixup::None))
            }
            Schedule::StreamK => {
                let iterations = tiles * slabs;
                if iterations >= 1 << 31 {
                    return Err(format!(
                        "{}: {tiles} tiles x {slabs} slabs = {iterations} iterations; stream-K counts them in 31 bits",
                        self.name
                    ));
                }
                // No more groups than iterations: each group must own at least one (kernels/matmul.hip, kernel 10).
                let groups = slots.min(iterations) as u32;
                Ok(make([groups, 1, 1], 1, 2 * u64::from(groups) * tile_elems, tiles, Fixup::InKernel))
            }
        }
    }
}

/// The device's limits on one group, for [`point_problem`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupLimits {
    /// Most items per group.
    pub items: u32,
    /// Most LDS per group after opting in, bytes.
    pub lds_bytes: u64,
}

/// Why a point at `shape` in `precision` cannot run on a device with `memory` and groups within `limits`: sizes the
/// kernels cannot index or launch (the reference kernel's grid, and for a kernel, `variant`, its own), byte counts
/// that overflow, memory that is not there (the point's matrices plus `workspace_bytes` on the device), the kernel's
/// own size requirements, its group size and its dynamic LDS. `None`: the point is valid. Needs no GPU. (Whether
/// the kernel has an instance in `precision` on the device's architecture is [`Variant::problem_on`].)
pub fn point_problem(
    shape: Shape,
    precision: Precision,
    variant: Option<&Variant>,
    limits: GroupLimits,
    memory: &Memory,
    workspace_bytes: u64,
) -> Option<String> {
    // The reference kernel runs at every shape; a kernel point also launches its own grid.
    shape
        .size_problem()
        .or_else(|| shape.grid_problem(REFERENCE_SYMBOL, [REFERENCE_TILE, REFERENCE_TILE]))
        .or_else(|| variant.and_then(|v| v.grid_problem(shape)))
        .or_else(|| shape.memory_problem(memory, workspace_bytes, precision))
        .or_else(|| {
            let v = variant?;
            let items = v.group[0] * v.group[1];
            v.check(shape)
                .or_else(|| {
                    (items > limits.items)
                        .then(|| format!("{} uses groups of {items} items; the device allows {}", v.name, limits.items))
                })
                .or_else(|| {
                    (u64::from(v.dynamic_lds_bytes) > limits.lds_bytes).then(|| {
                        format!(
                            "{} uses {} bytes of LDS per group; the device allows {}",
                            v.name, v.dynamic_lds_bytes, limits.lds_bytes
                        )
                    })
                })
        })
}

/// How one kernel runs at one shape (see [`Variant::plan`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The symbol launched: the variant's in the precision, or its `_unaligned` or `_packed` twin.
    pub symbol: String,
    /// Groups along x, y, z.
    pub grid: [u32; 3],
    /// Ranges K is split into (1 unless split-K).
    pub split_k: u32,
    /// Elements of workspace for partial tiles (0: none).
    pub work_elems: u64,
    /// Bytes per element of the precision.
    pub element_bytes: u64,
    /// Tile counters of the workspace (0: none; the kernel then gets a null pointer).
    pub counters: u64,
    /// Where split-K's or stream-K's partial tiles are added.
    pub fixup: Fixup,
    /// A DMMA plan that splits only its last wave's tiles: `grid` then covers the tiles before them, whole, and
    /// `split_k` is the tail's split.
    pub tail: Option<Tail>,
    /// The packed copies of A and B the kernel reads, where it is the `_packed` twin ([`Plan::packed`]).
    pub pack: Option<Pack>,
    /// Dynamic LDS per group, bytes.
    pub dynamic_lds_bytes: u32,
}

/// The last, partial wave of a [`Schedule::GroupedSplitK`] launch, split: a grid of `first` whole tiles (full waves
/// of the device's resident groups), then the split instance over the next `tiles` tiles of the kernel's tile order,
/// `split` groups each, their partial tiles summed by the reduction kernel. A wave of R ≤ slots/2 tiles otherwise
/// takes as long as a full one with most CUs idle (1536² in 64×64 tiles: 576 tiles on 264 slots of an H200, a third
/// wave of 48); split S ways it takes about 1/S of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Tail {
    /// Tiles of the first launch, whole, in the kernel's tile order.
    pub first: u32,
    /// Tiles of the last wave, after them.
    pub tiles: u32,
    /// Ranges of K each of those is split into.
    pub split: u32,
}

/// The tail split of `tiles` tiles of `slabs` slabs each on `slots` resident groups, if it pays: more than one wave,
/// a last wave at most half full, and a split of at least 2 that gives every range at least
/// [`MIN_SLABS_PER_SPLIT`] slabs and fills the wave (S = slots / R, at most [`MAX_SPLIT_K`]).
pub fn tail_split(tiles: u64, slabs: u64, slots: u64) -> Option<Tail> {
    let rest = tiles.checked_rem(slots)?;
    if tiles <= slots || rest == 0 || 2 * rest > slots {
        return None;
    }
    let split = (slots / rest).min(slabs / MIN_SLABS_PER_SPLIT).min(MAX_SPLIT_K);
    let first = u32::try_from(tiles - rest).ok()?;
    (split >= 2).then_some(Tail { first, tiles: rest as u32, split: split as u32 })
}

/// Elements of the workspace a tail split needs: its partial tiles.
fn tail_work(tail: Tail, tile_elems: u64) -> u64 {
    u64::from(tail.tiles) * u64::from(tail.split) * tile_elems
}

/// What a [`Schedule::GroupedSplitK`] kernel's symbol ends in when it splits (S > 1): its instance with the workspace
/// arguments, so that the kernel launched with S = 1 carries no split-K code.
pub const SPLIT_SUFFIX: &str = "_split";

/// Where a plan's partial tiles are added into C (`kernels/include/matmul_split.h`), always in the fixed order of the
/// splits, so C is the same bits either way. FP32's split-K chooses by [`Fixup::for_split`]; FP64's split-K sums in
/// the kernel and the DMMA rung in the reduction kernel, always.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Fixup {
    /// No partial tiles: the kernel writes C (no split, or the atomic variant, which adds into C).
    None,
    /// In the kernel: the last group of each tile to arrive reads the S partial tiles back and writes C (tile
    /// counters in the workspace). One launch; the last group's reads are a serial tail.
    InKernel,
    /// In `matmul_splitk_reduce` (`_f64`), launched after the kernel, which gets no counters and stores each split's
    /// partial tiles into its own slice: every CU takes part in the sum, for a launch gap.
    Kernel,
}

impl Fixup {
    /// Where the sum of `split` partial tiles of `tile_bytes` each goes: in the kernel while the last group's reads,
    /// `split`·`tile_bytes`, stay within [`IN_KERNEL_FIXUP_BYTES`], else in the reduction kernel.
    pub fn for_split(split: u64, tile_bytes: u64) -> Fixup {
        match split {
            0 | 1 => Fixup::None,
            s if s.saturating_mul(tile_bytes) <= IN_KERNEL_FIXUP_BYTES => Fixup::InKernel,
            _ => Fixup::Kernel,
        }
    }
}

/// Most bytes of partial tiles the last group of a tile reads back in the kernel. One group reads at one CU's share
/// of L2 bandwidth, about 64 bytes per clock, so 256 KiB take about 2 µs at 2 GHz, twice the reduction kernel's
/// launch gap in a graph (about 1 µs on an H100), which every CU then shares. The bound keeps in the kernel every
/// FP32 split of 64×128 tiles (32 KiB) up to S = 8, the splits measured there at 512² to 1536² before the reduction
/// kernel existed; the K-heavy shapes that need S of 16 to 64 go to the reduction kernel. (The DMMA rung always sums
/// there: [`Schedule::GroupedSplitK`].)
pub const IN_KERNEL_FIXUP_BYTES: u64 = 256 << 10;

impl Plan {
    /// Groups in the grid.
    pub fn groups(&self) -> u64 {
        let tail = self.tail.map_or(0, |t| u64::from(t.tiles) * u64::from(t.split));
        self.grid.iter().map(|&g| u64::from(g)).product::<u64>() + tail
    }

    /// Bytes of device memory the workspace takes: the partial tiles, the 4-byte tile counters and the packed copies
    /// of A and B (FP32).
    pub fn workspace_bytes(&self) -> u64 {
        let copies = self.pack.map_or(0, |p| p.copy_elems * 4);
        self.work_elems * self.element_bytes + self.counters * 4 + copies
    }

    /// This plan with A and B packed for the kernel's `_packed` twin (`v` the plan's kernel, which must have one, at
    /// `shape`, whose rows are not aligned: [`Variant::can_pack`]). The grid, split and workspace do not change: the
    /// padded sizes have the same tiles and slabs (BN and BK are multiples of 4).
    pub fn packed(self, v: &Variant, shape: Shape) -> Plan {
        Plan { symbol: v.packed_symbol(), pack: Some(Pack::of(shape)), ..self }
    }
}

/// Most ranges split-K cuts K into, and the fewest slabs of K each range keeps (a range that short spends most of
/// its time filling the pipeline). 64: a K-heavy shape such as 256×256×16384 has 8 tiles of 64×128 for 396 resident
/// groups on an H100, so it needs S of about 48 to fill the device (the reduction kernel keeps the sum parallel).
pub const MAX_SPLIT_K: u64 = 64;
pub(super) const MIN_SLABS_PER_SPLIT: u64 = 4;

/// The split-K count of a split-K row: the largest S with `tiles`·S groups all resident at once (`slots` = CUs ×
/// groups per CU), at most [`MAX_SPLIT_K`] and leaving each range at least 4 slabs; at least 1. Measured on an H200
/// this is the best S or close to it for the 3-groups-per-SM shapes (768²: 72 tiles, S = 5); for 2-groups-per-SM
/// shapes S with one group per SM is often better (512², 128×64 tiles: S = 4 beats S = 8). The autotune row searches
/// S by measurement.
pub fn split_k_for(tiles: u64, slabs: u64, slots: u64) -> u32 {
    let by_slots = slots / tiles.max(1);
    let by_k = slabs / MIN_SLABS_PER_SPLIT;
    by_slots.min(by_k).clamp(1, MAX_SPLIT_K) as u32
}

fn req_text(r: Multiples) -> String {
    format!("M % {} = 0, N % {} = 0, K % {} = 0", r.m, r.n, r.k)
}

/// The default kernel sets of the architectures whose names start with one of `arch_prefixes` (first match in
/// `rungs::ARCH_DEFAULTS` wins), when `--kernels` (and for FP64 `--f64-kernels`) is not given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ArchKernels {
    /// Prefixes of the architecture name, e.g. `gfx90` matches gfx908 and gfx90a.
    pub arch_prefixes: &'static [&'static str],
    /// FP32 kernel names or families, as `--kernels` takes them.
    pub kernels: &'static [&'static str],
    /// FP64 kernel names or families.
    pub f64_kernels: &'static [&'static str],
    /// Why these sets, for the README and `run.json`.
    pub why: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::matmul::rungs::VARIANTS;
    use crate::experiments::matmul::selection::{family_absent, select_kernels};
    use crate::experiments::matmul::shape::KERNEL_DIM_MAX;
    use crate::options::MAX_GROUPS_YZ;

    const F32: Precision = Precision::F32;
    const F64: Precision = Precision::F64;
    /// An H100's group limits.
    const H100: GroupLimits = GroupLimits { items: 1024, lds_bytes: 227 << 10 };

    fn variant(name: &str) -> &'static Variant {
        VARIANTS.iter().find(|v| v.name == name).unwrap_or_else(|| panic!("no kernel {name}"))
    }

    #[test]
    fn launch_geometry_covers_ragged_edges() {
        let plan = variant("tiled_m16").plan(Shape { m: 33, n: 100, k: 7 }, F32, 132, 8, None).unwrap();
        let want = Plan {
            symbol: "matmul_tiled_m16".into(),
            grid: [7, 3, 1],
            split_k: 1,
            work_elems: 0,
            element_bytes: 4,
            counters: 0,
            fixup: Fixup::None,
            tail: None,
            pack: None,
            dynamic_lds_bytes: 0,
        };
        assert_eq!(plan, want);
        let plan = variant("tiled_m16").plan(Shape { m: 33, n: 100, k: 7 }, F64, 132, 8, None).unwrap();
        assert_eq!(plan, Plan { symbol: "matmul_tiled_m16_f64".into(), element_bytes: 8, ..want });
        // 256×128 tiles of the default shape: ceil(1000/128) x ceil(1000/256).
        let plan = variant("double_buffer").plan(Shape::square(1000), F32, 132, 1, None).unwrap();
        assert_eq!((plan.grid, plan.groups()), ([8, 4, 1], 32));
        // The DMMA rung: one group per 128×128 tile on a 1-D grid, with its dynamic LDS.
        let plan = variant("dmma_128x128x16_t256").plan(Shape::square(1000), F64, 132, 1, Some(1)).unwrap();
        assert_eq!((plan.grid, plan.dynamic_lds_bytes), ([64, 1, 1], 112_128));
        assert_eq!(plan.symbol, "matmul_dmma_128x128x16_t256_f64");
    }

    #[test]
    fn sizes_with_unaligned_rows_launch_the_guarded_twin() {
        for (shape, aligned) in [
            (Shape::square(1024), true),
            (Shape::square(1000), true),
            (Shape { m: 77, n: 132, k: 36 }, true),
            (Shape { m: 3, n: 4, k: 8 }, true),
            (Shape::square(1023), false),
            (Shape { m: 4, n: 4, k: 6 }, false),
            (Shape { m: 8, n: 6, k: 4 }, false),
        ] {
            assert_eq!(shape.rows_aligned(), aligned, "{shape}");
            let twin = if aligned { "matmul_double_buffer" } else { "matmul_double_buffer_unaligned" };
            assert_eq!(variant("double_buffer").symbol_for(shape, F32), twin, "{shape}");
            // The scalar kernels have no twin.
            assert_eq!(variant("blocktile_2d").symbol_for(shape, F32), "matmul_blocktile_2d", "{shape}");
            assert_eq!(variant("blocktile_2d").symbol_for(shape, F64), "matmul_blocktile_2d_f64", "{shape}");
        }
        // FP64 rows are aligned at even N and K: 4×6×6 runs the aligned FP64 kernel, the unaligned FP32 one.
        let shape = Shape { m: 4, n: 6, k: 6 };
        let v = variant("double_buffer_128x128x8_t256");
        assert_eq!(v.symbol_for(shape, F32), "matmul_double_buffer_128x128x8_t256_unaligned");
        assert_eq!(v.symbol_for(shape, F64), "matmul_double_buffer_128x128x8_t256_f64");
        assert_eq!(v.symbol_for(Shape::square(7), F64), "matmul_double_buffer_128x128x8_t256_f64_unaligned");
    }

    #[test]
    fn a_kernel_without_an_instance_or_not_on_the_architecture_says_why() {
        let why = variant("double_buffer").problem_on(F64, "sm_90").unwrap();
        assert!(why.starts_with("double_buffer has no FP64 instance: 128 FP64 accumulators"), "{why}");
        assert_eq!(variant("double_buffer").problem_on(F32, "sm_90"), None);
        let dmma = variant("dmma_128x128x16_t256");
        let why = dmma.problem_on(F32, "sm_90").unwrap();
        assert!(why.contains("no FP32 instance") && why.contains("no FP32 matrix path at FP32 precision"), "{why}");
        assert_eq!(dmma.problem_on(F64, "sm_90"), None);
        assert_eq!(dmma.problem_on(F64, "sm_80"), None);
        assert_eq!(dmma.problem_on(F64, "sm_100"), None);
        let why = dmma.problem_on(F64, "gfx90a").unwrap();
        assert!(why.contains("does not exist on gfx90a") && why.contains("on AMD the matrix rung is MFMA"), "{why}");
        assert!(dmma.problem_on(F64, "sm_75").unwrap().contains("from sm_80 on"));
        // Units: FMA rungs on the vector units, packed in FP32 on CDNA where clang packs them; the DMMA rung on the
        // matrix units.
        assert_eq!(variant("double_buffer").unit(F32, "sm_90"), Unit::Vector);
        assert_eq!(variant("double_buffer").unit(F32, "gfx90a"), Unit::Packed);
        assert_eq!(variant("double_buffer_128x128x8_t256").unit(F64, "gfx90a"), Unit::Vector);
        assert_eq!(variant("naive").unit(F32, "gfx90a"), Unit::Vector);
        assert_eq!(dmma.unit(F64, "sm_90"), Unit::Matrix);
        // A whole rung without an instance is absent; a rung with some shapes is not.
        assert!(family_absent("dmma", F32, "sm_90") && family_absent("dmma", F64, "gfx90a"));
        assert!(family_absent("splitk_atomic", F64, "sm_90"));
        assert!(!family_absent("splitk", F64, "sm_90") && !family_absent("dmma", F64, "sm_90"));
    }

    #[test]
    fn a_tail_is_split_only_where_the_last_wave_is_at_most_half_full() {
        // (tiles, slabs, slots) -> (first, tail tiles, split)
        for (tiles, slabs, slots, want) in [
            (576, 96, 264, Some((528, 48, 5))),    // 1536² in 64×64 tiles on an H200, 2 per SM
            (1600, 313, 132, Some((1584, 16, 8))), // 5000² in 128×128 tiles, 1 per SM
            (144, 96, 132, Some((132, 12, 11))),   // 1536² in 128×128 tiles
            (144, 8, 132, Some((132, 12, 2))),     // few slabs: at least 4 per range
            (144, 7, 132, None),                   // too few to split at all
            (264, 96, 264, None),                  // one full wave
            (200, 96, 264, None),                  // one partial wave: the split model's
            (1024, 128, 264, None),                // a last wave of 232 of 264: more than half full
            (0, 0, 0, None),                       // degenerate inputs
        ] {
            let got = tail_split(tiles, slabs, slots).map(|t| (t.first, t.tiles, t.split));
            assert_eq!(got, want, "tiles {tiles} slabs {slabs} slots {slots}");
        }
    }

    #[test]
    fn split_k_fills_the_resident_slots_within_limits() {
        // (tiles, slabs, slots) -> S
        for (tiles, slabs, slots, want) in [
            (72, 96, 396, 5),   // 768² in 64×128 tiles, BK = 8, 3 groups per SM on 132 SMs
            (32, 32, 264, 8),   // 512² in 128×64 tiles, BK = 16, 2 per SM
            (128, 128, 396, 3), // 1024² in 64×128 tiles
            (512, 512, 132, 1), // more tiles than slots: no split
            (4, 1000, 264, 64), // capped
            (8, 1024, 396, 49), // 256×256×16384 in 64×128 tiles: a K-heavy shape fills the device by splitting
            (4, 12, 264, 3),    // at least 4 slabs per range
            (4, 3, 264, 1),     // K too short to split
            (0, 0, 0, 1),       // degenerate inputs still give a valid S
        ] {
            assert_eq!(split_k_for(tiles, slabs, slots), want, "tiles {tiles} slabs {slabs} slots {slots}");
        }
    }

    #[test]
    fn split_k_and_stream_k_plans_size_their_grids_and_workspaces() {
        let shape = Shape::square(768);
        // 64×128 tiles: 6 × 12 = 72, 96 slabs of 8; 3 groups per SM on 132 SMs -> S = 5.
        let sk = variant("splitk_64x128x8_t128").plan(shape, F32, 132, 3, None).unwrap();
        assert_eq!((sk.grid, sk.split_k), ([6, 12, 5], 5));
        assert_eq!((sk.work_elems, sk.counters), (72 * 5 * 64 * 128, 72));
        assert_eq!(sk.workspace_bytes(), (72 * 5 * 64 * 128 + 72) * 4);
        // FP64 partial tiles take twice the bytes, and FP64's split-K always sums in the kernel; the counters stay
        // 4-byte words.
        let sk64 = variant("splitk_64x128x8_t128").plan(shape, F64, 132, 3, None).unwrap();
        assert_eq!((sk64.fixup, sk64.workspace_bytes()), (Fixup::InKernel, 72 * 5 * 64 * 128 * 8 + 72 * 4));
        let sk64 = variant("splitk_64x128x8_t128").plan(shape, F64, 132, 3, Some(24)).unwrap();
        assert_eq!(sk64.fixup, Fixup::InKernel);
        let s2 = variant("splitk_64x128x8_t128").plan(shape, F32, 132, 3, Some(2)).unwrap();
        assert_eq!(s2.grid, [6, 12, 2]);
        // The sum: in the kernel while the last group reads at most 256 KiB back (here 5 tiles of 32 KiB), else in the
        // reduction kernel, with the same workspace and no counters.
        assert_eq!((sk.fixup, s2.fixup), (Fixup::InKernel, Fixup::InKernel));
        let k_heavy = Shape { m: 256, n: 256, k: 16384 };
        let big = variant("splitk_64x128x16_t128").plan(k_heavy, F32, 132, 3, None).unwrap();
        assert_eq!((big.grid, big.split_k, big.fixup), ([2, 4, 49], 49, Fixup::Kernel));
        assert_eq!((big.work_elems, big.counters), (8 * 49 * 64 * 128, 0));
        let eight = variant("splitk_64x128x16_t128").plan(k_heavy, F32, 132, 3, Some(8)).unwrap();
        assert_eq!((eight.fixup, eight.counters), (Fixup::InKernel, 8));
        assert_eq!(variant("double_buffer").plan(shape, F32, 132, 1, None).unwrap().fixup, Fixup::None);
        // A DMMA grid of more than a wave whose last wave is at most half full splits that wave's tiles: 1536² in
        // 64×64 tiles, 576 on 264 slots (2 per SM): two full waves of 528, then 48 tiles split 5 ways.
        let small = variant("dmma_64x64x16_t128");
        let t = small.plan(Shape::square(1536), F64, 132, 2, None).unwrap();
        assert_eq!(t.tail, Some(Tail { first: 528, tiles: 48, split: 5 }));
        assert_eq!((t.grid, t.split_k, t.groups(), t.fixup), ([528, 1, 1], 5, 528 + 48 * 5, Fixup::Kernel));
        assert_eq!((t.symbol.as_str(), t.work_elems, t.counters), ("matmul_dmma_64x64x16_t128_f64", 48 * 5 * 4096, 0));
        // An explicit split never leaves a tail; a last wave more than half full is left whole.
        assert_eq!(small.plan(Shape::square(1536), F64, 132, 2, Some(1)).unwrap().tail, None);
        assert_eq!(small.plan(Shape::square(2048), F64, 132, 2, None).unwrap().tail, None); // 1024 = 3 x 264 + 232
                                                                                            // The DMMA rung splits along y of its 1-D tile order: 8 tiles of 128×64 with 2 per SM fill 264 slots at
                                                                                            // S = 33; it always sums in the reduction kernel.
        let dmma = variant("dmma_128x64x16_t128");
        let d = dmma.plan(k_heavy, F64, 132, 2, None).unwrap();
        assert_eq!((d.grid, d.split_k, d.fixup, d.counters), ([8, 33, 1], 33, Fixup::Kernel, 0));
        assert_eq!(d.symbol, "matmul_dmma_128x64x16_t128_f64_split");
        assert_eq!(d.workspace_bytes(), 8 * 33 * 64 * 128 * 8);
        let d4 = dmma.plan(k_heavy, F64, 132, 2, Some(4)).unwrap();
        assert_eq!((d4.grid, d4.fixup, d4.counters), ([8, 4, 1], Fixup::Kernel, 0));
        let whole = dmma.plan(Shape::square(4096), F64, 132, 2, None).unwrap();
        assert_eq!((whole.grid, whole.symbol.as_str()), ([2048, 1, 1], "matmul_dmma_128x64x16_t128_f64"));
        let odd = dmma.plan(Shape { m: 256, n: 255, k: 16383 }, F64, 132, 2, Some(3)).unwrap();
        assert_eq!(odd.symbol, "matmul_dmma_128x64x16_t128_f64_unaligned_split");
        let err = variant("splitk_64x128x8_t128").plan(shape, F32, 132, 3, Some(97)).unwrap_err();
        assert!(err.contains("split K = 97 needs 1 to 96"), "{err}");
        // The atomic variant splits alike but adds into C: no workspace.
        let atomic = variant("splitk_atomic_64x128x16_t128").plan(shape, F32, 132, 2, Some(3)).unwrap();
        assert_eq!((atomic.grid, atomic.work_elems, atomic.counters), ([6, 12, 3], 0, 0));
        // Stream-K: one group per resident slot, two partial tiles each.
        let st = variant("streamk_128x128x8_t128").plan(shape, F32, 132, 2, None).unwrap();
        assert_eq!((st.grid, st.counters), ([264, 1, 1], 36));
        assert_eq!(st.work_elems, 2 * 264 * 128 * 128);
        // ... but never more groups than iterations (6 tiles x 1 slab here).
        let tiny = variant("streamk_128x128x8_t128").plan(Shape { m: 77, n: 700, k: 8 }, F32, 132, 2, None).unwrap();
        assert_eq!(tiny.grid, [6, 1, 1]);
        assert_eq!(tiny.symbol, "matmul_streamk_128x128x8_t128");
        let odd = variant("streamk_128x128x8_t128").plan(Shape { m: 77, n: 700, k: 9 }, F32, 132, 2, None).unwrap();
        assert_eq!((odd.grid, odd.symbol.as_str()), ([12, 1, 1], "matmul_streamk_128x128x8_t128_unaligned"));
        // Iterations are counted in 31 bits.
        let huge = Shape { m: 1 << 20, n: 1 << 20, k: 1 << 12 };
        let err = variant("streamk_128x128x8_t128").plan(huge, F32, 132, 2, None).unwrap_err();
        assert!(err.contains("stream-K counts them in 31 bits"), "{err}");
    }

    #[test]
    fn size_requirements_are_checked_and_explained() {
        let strict = Variant { multiples: Multiples { m: 128, n: 128, k: 4 }, ..VARIANTS[0] };
        assert_eq!(strict.check(Shape::square(1024)), None);
        let why = strict.check(Shape { m: 1000, n: 1024, k: 1002 }).unwrap();
        assert!(why.contains("M = 1000 is not a multiple of 128"), "{why}");
        assert!(why.contains("K = 1002 is not a multiple of 4"), "{why}");
        assert!(!why.contains("N ="), "{why}");
        for v in VARIANTS.iter().filter(|v| v.multiples == ANY) {
            assert_eq!(v.check(Shape { m: 1, n: 3, k: 1001 }), None, "{}", v.name);
        }
    }

    #[test]
    fn kernels_are_selected_by_name_family_and_tile() {
        let names = |v: Vec<&Variant>| v.iter().map(|v| v.name).collect::<Vec<_>>();
        assert_eq!(names(select_kernels(&[], &[]).unwrap()).len(), VARIANTS.len());
        assert_eq!(
            names(select_kernels(&["tiled".into(), "naive".into()], &[8, 32]).unwrap()),
            ["naive", "tiled_m8", "tiled_m32"]
        );
        assert_eq!(names(select_kernels(&["tiled_m4".into()], &[]).unwrap()), ["tiled_m4"]);
        let err = select_kernels(&["fast".into()], &[]).unwrap_err();
        assert!(err.to_string().contains("unknown kernel `fast`; available: naive"), "{err}");
        let err = select_kernels(&[], &[12]).unwrap_err();
        assert!(err.to_string().contains("--tiles: no tiled kernel with M = 12"), "{err}");
    }

    fn edge_dims() -> impl proptest::strategy::Strategy<Value = usize> {
        use proptest::prelude::*;
        prop_oneof![
            prop::sample::select(vec![
                0,
                1,
                4,
                255,
                65_535 * 16,
                65_535 * 16 + 1,
                KERNEL_DIM_MAX,
                KERNEL_DIM_MAX + 1,
                (1 << 31) - 1,
                1 << 31,
                1 << 32,
                (1 << 32) + 1,
                1 << 40,
                usize::MAX / 4,
                usize::MAX,
            ]),
            1usize..20_000,
            any::<usize>(),
        ]
    }

    proptest::proptest! {
        #[test]
        fn matmul_sizes_are_invalid_exactly_when_they_cannot_run(
            m in edge_dims(),
            n in edge_dims(),
            k in edge_dims(),
            kernel in 0..=VARIANTS.len(),
            device in proptest::prop_oneof![proptest::strategy::Just(80u64 << 30), proptest::strategy::Just(u64::MAX), proptest::arbitrary::any::<u64>()],
            host in proptest::option::of(proptest::prop_oneof![proptest::strategy::Just(2u64 << 40), proptest::arbitrary::any::<u64>()]),
            workspace in proptest::prop_oneof![proptest::strategy::Just(0u64), proptest::strategy::Just(1u64 << 30), proptest::arbitrary::any::<u64>()],
            fp64 in proptest::bool::ANY,
            lds in proptest::prop_oneof![proptest::strategy::Just(64u64 << 10), proptest::strategy::Just(227u64 << 10)],
        ) {
            let shape = Shape { m, n, k };
            let variant = VARIANTS.get(kernel);
            let memory = Memory { device, host };
            let precision = if fp64 { F64 } else { F32 };
            let limits = GroupLimits { items: 1024, lds_bytes: lds };
            let problem = point_problem(shape, precision, variant, limits, &memory, workspace);
            // The same rules in u128, where nothing overflows.
            let (m1, n1, k1) = (m as u128, n as u128, k as u128);
            let size = precision.bytes() as u128;
            let bytes = [m1 * k1, k1 * n1, m1 * n1, m1 * n1].iter().fold(0u128, |sum, x| sum.saturating_add(x.saturating_mul(size)));
            let grid_ok = |block: [u32; 2]| {
                n1.div_ceil(block[0].into()) <= crate::options::MAX_GROUPS_X.into() && m1.div_ceil(block[1].into()) <= MAX_GROUPS_YZ.into()
            };
            let grid_1d_ok = |block: [u32; 2]| {
                n1.div_ceil(block[0].into()).saturating_mul(m1.div_ceil(block[1].into())) <= crate::options::MAX_GROUPS_X.into()
            };
            let valid = m.min(n).min(k) > 0
                && m.max(n).max(k) <= KERNEL_DIM_MAX
                && grid_ok([16, 16])
                && variant.is_none_or(|v| {
                    (if v.schedule == Schedule::GroupedSplitK { grid_1d_ok(v.block) } else { grid_ok(v.block) })
                        && m % v.multiples.m as usize == 0
                        && n % v.multiples.n as usize == 0
                        && k % v.multiples.k as usize == 0
                        && u64::from(v.dynamic_lds_bytes) <= lds
                })
                && bytes.saturating_add(u128::from(workspace)) <= u128::from(device)
                && host.is_none_or(|h| bytes <= u128::from(h));
            proptest::prop_assert_eq!(problem.is_none(), valid, "{}: {:?}", shape, problem);
        }
    }

    #[test]
    fn size_problems_name_their_cause() {
        let mem = Memory { device: 80 << 30, host: Some(1 << 40) };
        let point_problem = |shape, v, items, mem: &Memory, work| {
            point_problem(shape, F32, v, GroupLimits { items, lds_bytes: H100.lds_bytes }, mem, work)
        };
        let why = |m, n, k| point_problem(Shape { m, n, k }, None, 1024, &mem, 0).unwrap();
        assert!(why(0, 4, 4).contains("M = 0"));
        assert!(why(4, 1 << 32, 4).contains("exceeds what the kernels index"));
        assert!(why(65_535 * 16 + 1, 1, 1).contains("grid"));
        assert!(why(1 << 17, 1 << 17, 1 << 17).contains("GiB of device memory"));
        assert!(Shape::square(1 << 20).bytes().is_some());
        assert_eq!(Shape { m: 1 << 40, n: 1 << 40, k: 1 }.bytes(), None);
        let host_small = Memory { device: u64::MAX, host: Some(1 << 30) };
        assert!(point_problem(Shape::square(1 << 14), None, 1024, &host_small, 0).unwrap().contains("host memory"));
        assert_eq!(point_problem(Shape::square(8192), Some(&VARIANTS[0]), 1024, &mem, 0), None);
        assert!(point_problem(Shape::square(8192), Some(&VARIANTS[0]), 128, &mem, 0)
            .unwrap()
            .contains("groups of 256"));
        // A workspace counts against the device only (the host never holds it).
        let tight = Memory { device: Shape::square(4096).bytes().unwrap() + 100, host: Some(1 << 40) };
        assert_eq!(point_problem(Shape::square(4096), None, 1024, &tight, 100), None);
        assert!(point_problem(Shape::square(4096), None, 1024, &tight, 101).unwrap().contains("GiB of device memory"));
        // FP64 matrices take twice the bytes.
        let for_f32 = Memory { device: Shape::square(4096).bytes().unwrap(), host: Some(1 << 40) };
        assert_eq!(super::point_problem(Shape::square(4096), F32, None, H100, &for_f32, 0), None);
        assert!(super::point_problem(Shape::square(4096), F64, None, H100, &for_f32, 0).is_some());
        // The DMMA rung's 109.5 KiB of dynamic LDS fit an H100's 227, not a 64 KiB part.
        let dmma = variant("dmma_128x128x16_t256");
        assert_eq!(super::point_problem(Shape::square(256), F64, Some(dmma), H100, &mem, 0), None);
        let small = GroupLimits { items: 1024, lds_bytes: 64 << 10 };
        let why = super::point_problem(Shape::square(256), F64, Some(dmma), small, &mem, 0).unwrap();
        assert!(why.contains("112128 bytes of LDS per group; the device allows 65536"), "{why}");
    }
}
