//! Matmul: the seed's ladder (naive → accumulator → LDS tiles M = 4..32) up to register-blocked kernels, against
//! the vendor BLAS at every size (`kernels/matmul.hip`, FP32, row-major, C = A·B).
//!
//! Every point, the vendor BLAS's included, is verified at every element of C against a reference kernel that
//! accumulates in FP64 on the GPU (`matmul_reference_f64`), itself checked against the host's FP64 sums at sampled
//! elements, with the tolerance of [`verify::matmul_tolerance`]. GFLOP/s = 2·M·N·K / median time.
//!
//! Sizes: every kernel takes any M, N, K: out-of-range loads read zero and stores are guarded, and the kernels with
//! 16-byte accesses launch their `_unaligned` twins (guarded 4-byte accesses) where N or K is not a multiple of 4
//! ([`Variant::symbol_for`]). A size the kernels cannot index, launch or fit in memory is an `invalid` row that says
//! why ([`Shape::problem`]).
//!
//! Beyond the ladder: split-K and stream-K kernels give small sizes enough groups for the device ([`Variant::plan`]),
//! and at every size an `autotune` row names the fastest kernel that verified, picked by measurement
//! ([`autotune_candidates`], [`autotune_pick`]). docs/matmul.md has the method and the figures.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::rc::Rc;

use serde::Serialize;

use super::entry::Entry;
use super::estimate::{launch_seconds, LAUNCH_S};
use super::registry::parsed;
use super::{Case, Error, Experiment, Metric, Point, Work};
use crate::device::{Arg, Buffer, Kernel, LaunchConfig, Platform};
use crate::gpu::Gpu;
use crate::measure::matmul_flops;
use crate::options::{Memory, MAX_GROUPS_X, MAX_GROUPS_YZ};
use crate::report::plot::{Axis, LinePlot, Series, SeriesKind};
use crate::verify::{self, Verification};
use clap::{ArgMatches, Args};

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
const ANY: Multiples = Multiples { m: 1, n: 1, k: 1 };

/// How a kernel's groups cover C and K (see `kernels/matmul.hip`, kernels 8 to 10).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Schedule {
    /// One group per BM×BN tile of C, over all of K: grid (ceil(N/BN), ceil(M/BM)).
    Tiles,
    /// Split-K: S groups per tile (grid z), each over a range of K; the last group of a tile to finish adds the S
    /// partial tiles in a fixed order (workspace tiles·S·BM·BN floats, one counter per tile).
    SplitK,
    /// Split-K adding the partial tiles into C with atomics, after zeroing C (`matmul_zero_c`): not deterministic.
    SplitKAtomic,
    /// Stream-K: G = CUs × groups per CU groups, each with an equal share of all tiles' slabs (grid (G, 1, 1));
    /// partial tiles are added in a fixed order by the last contributor (workspace 2·G·BM·BN floats).
    StreamK,
}

/// One matmul kernel: its symbol, launch geometry and size requirements. CLI values, CSV rows, plots and tests all
/// come from this table; the order is the ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Variant {
    /// Name on the command line and in the CSV, e.g. `tiled_m16`.
    pub name: &'static str,
    /// Family, for `--kernels`: `tiled` selects every `tiled_m*` allowed by `--tiles`.
    pub family: &'static str,
    /// Kernel symbol in `kernels/matmul.hip`.
    pub symbol: &'static str,
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
    /// Whether `symbol` moves 16-byte vectors and so needs aligned rows (N and K multiples of 4); other sizes launch
    /// its twin `<symbol>_unaligned`, the same kernel with guarded 4-byte accesses.
    pub aligned_rows: bool,
    /// How the groups cover C and K.
    pub schedule: Schedule,
}

impl Variant {
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

    /// The symbol launched at `shape`: `symbol`, or its `_unaligned` twin where rows are not 16-byte aligned.
    pub fn symbol_for(&self, shape: Shape) -> String {
        if self.aligned_rows && !shape.rows_aligned() {
            format!("{}_unaligned", self.symbol)
        } else {
            self.symbol.to_string()
        }
    }

    /// Tiles of C: ceil(N/BN) × ceil(M/BM).
    fn tiles(&self, shape: Shape) -> (u64, u64) {
        (shape.n.div_ceil(self.block[0] as usize) as u64, shape.m.div_ceil(self.block[1] as usize) as u64)
    }

    /// How this kernel runs at `shape` on a device with `cus` CUs where `groups_per_cu` of its groups fit at once:
    /// the split-K count (`split`, or [`split_k_for`] when `None`), the stream-K group count, the grid and the
    /// workspace. An error says why it cannot be launched so.
    pub fn plan(&self, shape: Shape, cus: u32, groups_per_cu: u32, split: Option<u32>) -> Result<Plan, String> {
        let (tx, ty) = self.tiles(shape);
        let tiles = tx * ty;
        let slabs = shape.k.div_ceil(self.slab_k.max(1) as usize) as u64;
        let slots = u64::from(cus) * u64::from(groups_per_cu.max(1));
        let tile_floats = u64::from(self.block[0]) * u64::from(self.block[1]);
        let grid2 = |z: u64| -> Result<[u32; 3], String> {
            match (u32::try_from(tx), u32::try_from(ty), u32::try_from(z)) {
                (Ok(x), Ok(y), Ok(z)) => Ok([x, y, z]),
                _ => Err(format!("{} needs a grid of {tx} x {ty} x {z} groups", self.name)),
            }
        };
        let symbol = self.symbol_for(shape);
        let make = |grid, split_k, work_floats, counters| Plan {
            symbol: symbol.clone(),
            grid,
            split_k,
            work_floats,
            counters,
        };
        match self.schedule {
            Schedule::Tiles => Ok(make(grid2(1)?, 1, 0, 0)),
            Schedule::SplitK | Schedule::SplitKAtomic => {
                let s = u64::from(split.unwrap_or_else(|| split_k_for(tiles, slabs, slots)));
                if s == 0 || s > slabs.max(1) {
                    return Err(format!("{}: split K = {s} needs 1 to {slabs} (the slabs of K)", self.name));
                }
                let work = if self.schedule == Schedule::SplitK { tiles * s * tile_floats } else { 0 };
                let counters = if self.schedule == Schedule::SplitK { tiles } else { 0 };
                Ok(make(grid2(s)?, s as u32, work, counters))
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
                Ok(make([groups, 1, 1], 1, 2 * u64::from(groups) * tile_floats, tiles))
            }
        }
    }
}

/// How one kernel runs at one shape (see [`Variant::plan`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The symbol launched: the variant's, or its `_unaligned` twin.
    pub symbol: String,
    /// Groups along x, y, z.
    pub grid: [u32; 3],
    /// Ranges K is split into (1 unless split-K).
    pub split_k: u32,
    /// Floats of workspace for partial tiles (0: none).
    pub work_floats: u64,
    /// Tile counters of the workspace (0: none).
    pub counters: u64,
}

impl Plan {
    /// Groups in the grid.
    pub fn groups(&self) -> u64 {
        self.grid.iter().map(|&g| u64::from(g)).product()
    }

    /// Bytes of device memory the workspace takes.
    pub fn workspace_bytes(&self) -> u64 {
        (self.work_floats + self.counters) * 4
    }
}

/// Most ranges split-K cuts K into, and the fewest slabs of K each range keeps (a range that short spends most of
/// its time filling the pipeline).
pub const MAX_SPLIT_K: u64 = 16;
const MIN_SLABS_PER_SPLIT: u64 = 4;

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

/// The ladder, in order.
pub const VARIANTS: &[Variant] = &[
    simple("naive", "matmul_naive", true),
    simple("accumulator", "matmul_accumulator", false),
    tiled("tiled_m4", "matmul_tiled_m4", 4),
    tiled("tiled_m8", "matmul_tiled_m8", 8),
    tiled("tiled_m16", "matmul_tiled_m16", 16),
    tiled("tiled_m32", "matmul_tiled_m32", 32),
    regblock("blocktile_1d", "blocktile_1d", "matmul_blocktile_1d", 512, [64, 64, 8], false, Schedule::Tiles),
    regblock("blocktile_2d", "blocktile_2d", "matmul_blocktile_2d", 256, [128, 128, 8], false, Schedule::Tiles),
    regblock("vectorized", "vectorized", "matmul_vectorized", 256, [128, 128, 8], true, Schedule::Tiles),
    regblock("warptile", "warptile", "matmul_warptile", 256, [128, 128, 8], true, Schedule::Tiles),
    // The double-buffered kernel in the shape that was fastest on the H100 (BM = 256, BN = 128, BK = 8), then the
    // other shapes of the autotuning sweep: the best shape differs between architectures and sizes.
    wave("double_buffer", "double_buffer", "matmul_double_buffer", 256, [128, 256, 8], Schedule::Tiles),
    wave(
        "double_buffer_128x256x8_t256",
        "double_buffer",
        "matmul_double_buffer_128x256x8_t256",
        256,
        [256, 128, 8],
        Schedule::Tiles,
    ),
    wave(
        "double_buffer_128x128x8_t256",
        "double_buffer",
        "matmul_double_buffer_128x128x8_t256",
        256,
        [128, 128, 8],
        Schedule::Tiles,
    ),
    wave(
        "double_buffer_128x128x16_t256",
        "double_buffer",
        "matmul_double_buffer_128x128x16_t256",
        256,
        [128, 128, 16],
        Schedule::Tiles,
    ),
    wave(
        "double_buffer_64x128x16_t128",
        "double_buffer",
        "matmul_double_buffer_64x128x16_t128",
        128,
        [128, 64, 16],
        Schedule::Tiles,
    ),
    // Smaller tiles, more groups: for sizes whose grid of large tiles leaves CUs idle.
    wave(
        "double_buffer_64x128x8_t128",
        "double_buffer",
        "matmul_double_buffer_64x128x8_t128",
        128,
        [128, 64, 8],
        Schedule::Tiles,
    ),
    wave(
        "double_buffer_32x64x16_t64",
        "double_buffer",
        "matmul_double_buffer_32x64x16_t64",
        64,
        [64, 32, 16],
        Schedule::Tiles,
    ),
    // Wave64 shapes: at most 128 VGPRs+AGPRs and no scratch on gfx90a (4 waves per SIMD), LDS for 16 waves per CU.
    wave(
        "double_buffer_256x128x8_t512",
        "double_buffer",
        "matmul_double_buffer_256x128x8_t512",
        512,
        [128, 256, 8],
        Schedule::Tiles,
    ),
    wave(
        "double_buffer_128x128x8_t512",
        "double_buffer",
        "matmul_double_buffer_128x128x8_t512",
        512,
        [128, 128, 8],
        Schedule::Tiles,
    ),
    // Split-K: more groups for sizes too small to fill the device; the last of the wave64 shapes fits gfx90a.
    wave("splitk_128x64x16_t128", "splitk", "matmul_splitk_128x64x16_t128", 128, [64, 128, 16], Schedule::SplitK),
    wave("splitk_64x128x16_t128", "splitk", "matmul_splitk_64x128x16_t128", 128, [128, 64, 16], Schedule::SplitK),
    wave("splitk_64x128x8_t128", "splitk", "matmul_splitk_64x128x8_t128", 128, [128, 64, 8], Schedule::SplitK),
    wave("splitk_128x128x8_t128", "splitk", "matmul_splitk_128x128x8_t128", 128, [128, 128, 8], Schedule::SplitK),
    wave("splitk_128x128x8_t512", "splitk", "matmul_splitk_128x128x8_t512", 512, [128, 128, 8], Schedule::SplitK),
    // Split-K with atomic adds into C: what determinism costs.
    wave(
        "splitk_atomic_64x128x16_t128",
        "splitk_atomic",
        "matmul_splitk_atomic_64x128x16_t128",
        128,
        [128, 64, 16],
        Schedule::SplitKAtomic,
    ),
    // Stream-K: one group per resident slot, equal shares of all slabs; the last shape fits gfx90a.
    wave("streamk_128x128x8_t128", "streamk", "matmul_streamk_128x128x8_t128", 128, [128, 128, 8], Schedule::StreamK),
    wave("streamk_64x128x8_t128", "streamk", "matmul_streamk_64x128x8_t128", 128, [128, 64, 8], Schedule::StreamK),
    wave("streamk_64x64x16_t128", "streamk", "matmul_streamk_64x64x16_t128", 128, [64, 64, 16], Schedule::StreamK),
    wave("streamk_128x128x8_t512", "streamk", "matmul_streamk_128x128x8_t512", 512, [128, 128, 8], Schedule::StreamK),
];

/// The default kernel set of the architectures whose names start with one of `arch_prefixes` (first match in
/// [`ARCH_DEFAULTS`] wins), when `--kernels` is not given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ArchKernels {
    /// Prefixes of the architecture name, e.g. `gfx90` matches gfx908 and gfx90a.
    pub arch_prefixes: &'static [&'static str],
    /// Kernel names or families, as `--kernels` takes them.
    pub kernels: &'static [&'static str],
    /// Why this set, for the README and `run.json`.
    pub why: &'static str,
}

/// The seed's ladder and the single-shape register-blocked kernels: every architecture runs them.
macro_rules! ladder {
    ($($more:literal),* $(,)?) => {
        &["naive", "accumulator", "tiled", "blocktile_1d", "blocktile_2d", "vectorized", "warptile", $($more),*]
    };
}

/// Per-architecture default kernels, as data. Architectures no row matches get the whole table.
pub const ARCH_DEFAULTS: &[ArchKernels] = &[
    ArchKernels {
        arch_prefixes: &["gfx90", "gfx94", "gfx95"],
        kernels: ladder![
            "double_buffer_256x128x8_t512",
            "double_buffer_128x128x8_t512",
            "splitk_128x128x8_t512",
            "streamk_128x128x8_t512",
        ],
        why: "CDNA (wave64, 512 VGPRs+AGPRs per lane per SIMD): the shapes tuned on NVIDIA take 236-396 registers \
              there (1-2 waves per SIMD); the wave64 shapes of double_buffer, splitk and streamk stay within 128 \
              (4+ waves per SIMD)",
    },
    ArchKernels {
        arch_prefixes: &["sm_"],
        kernels: ladder!["double_buffer", "splitk", "splitk_atomic", "streamk"],
        why: "NVIDIA (warp32, 255 registers per thread): every shape of double_buffer, splitk, splitk_atomic and \
              streamk",
    },
];

/// The default kernels for `arch` (see [`ARCH_DEFAULTS`]), restricted to the tile sizes `tiles` (all if empty).
pub fn default_kernels(arch: &str, tiles: &[u32]) -> Result<Vec<&'static Variant>, crate::options::Error> {
    match ARCH_DEFAULTS.iter().find(|d| d.arch_prefixes.iter().any(|p| arch.starts_with(p))) {
        Some(d) => select_kernels(&d.kernels.iter().map(|k| k.to_string()).collect::<Vec<_>>(), tiles),
        None => select_kernels(&[], tiles),
    }
}

/// A kernel of the seed's first steps: 16×16 items, one element of C each, any size.
const fn simple(name: &'static str, symbol: &'static str, zero_c: bool) -> Variant {
    Variant {
        name,
        family: name,
        symbol,
        tile_m: None,
        group: [16, 16],
        block: [16, 16],
        slab_k: 1,
        zero_c,
        multiples: ANY,
        aligned_rows: false,
        schedule: Schedule::Tiles,
    }
}

const fn tiled(name: &'static str, symbol: &'static str, m: u32) -> Variant {
    Variant {
        name,
        family: "tiled",
        symbol,
        tile_m: Some(m),
        group: [m, m],
        block: [m, m],
        slab_k: m,
        zero_c: false,
        multiples: ANY,
        aligned_rows: false,
        schedule: Schedule::Tiles,
    }
}

/// A register-blocked kernel: a 1-D group of `items` computing a [BN, BM] tile of C, K in slabs of BK
/// (`tile` = [BN, BM, BK]).
const fn regblock(
    name: &'static str,
    family: &'static str,
    symbol: &'static str,
    items: u32,
    tile: [u32; 3],
    aligned_rows: bool,
    schedule: Schedule,
) -> Variant {
    Variant {
        name,
        family,
        symbol,
        tile_m: None,
        group: [items, 1],
        block: [tile[0], tile[1]],
        slab_k: tile[2],
        zero_c: false,
        multiples: ANY,
        aligned_rows,
        schedule,
    }
}

/// A wave-tiled kernel (7 on): 16-byte accesses with an `_unaligned` twin.
const fn wave(
    name: &'static str,
    family: &'static str,
    symbol: &'static str,
    items: u32,
    tile: [u32; 3],
    schedule: Schedule,
) -> Variant {
    regblock(name, family, symbol, items, tile, true, schedule)
}

/// A problem size: A is m×k, B is k×n, C is m×n.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Shape {
    /// Rows of A and C.
    pub m: usize,
    /// Columns of B and C.
    pub n: usize,
    /// Columns of A, rows of B.
    pub k: usize,
}

impl Shape {
    /// The square size N×N×N.
    pub fn square(n: usize) -> Shape {
        Shape { m: n, n, k: n }
    }

    /// Whether M = N = K.
    pub fn is_square(&self) -> bool {
        self.m == self.n && self.n == self.k
    }

    /// Whether every row of A (K floats), B and C (N floats) starts 16-byte aligned in buffers that do: N and K
    /// multiples of 4. The 16-byte kernels need it; other sizes run their `_unaligned` twins.
    pub fn rows_aligned(&self) -> bool {
        self.n.is_multiple_of(4) && self.k.is_multiple_of(4)
    }

    /// Parses `1024` (square) or `MxNxK`, e.g. `4096x1024x512`.
    pub fn parse(text: &str) -> Result<Shape, crate::options::Error> {
        let parts: Vec<&str> = text.trim().split('x').collect();
        let size = |t: &str| crate::options::parse_size("--sizes", t);
        match parts.as_slice() {
            [n] => Ok(Shape::square(size(n)?)),
            [m, n, k] => Ok(Shape { m: size(m)?, n: size(n)?, k: size(k)? }),
            _ => Err(crate::options::Error {
                flag: "--sizes",
                problem: format!("`{text}` is neither N (square) nor MxNxK"),
            }),
        }
    }

    /// Bytes a point needs, on the device (A, B, the kernel's C and the reference C) and equally on the host (the
    /// inputs as generated, the reference and the kernel's result downloaded); `None` if the count overflows.
    pub fn bytes(&self) -> Option<u64> {
        let (m, n, k) = (self.m as u64, self.n as u64, self.k as u64);
        let size = std::mem::size_of::<f32>() as u64;
        let mn = m.checked_mul(n)?;
        crate::options::bytes_of(&[m.checked_mul(k)?, k.checked_mul(n)?, mn, mn], size)
    }

    /// Why this shape cannot run on a device with `memory` and groups of at most `max_group_size` items: sizes the
    /// kernels cannot index or launch, byte counts that overflow, memory that is not there (the point's matrices
    /// plus `workspace_bytes` on the device), and (for a kernel, `variant`) the kernel's own size requirements.
    /// `None`: the point is valid. Needs no GPU.
    pub fn problem(
        &self,
        variant: Option<&Variant>,
        max_group_size: u32,
        memory: &Memory,
        workspace_bytes: u64,
    ) -> Option<String> {
        let dims = [("M", self.m), ("N", self.n), ("K", self.k)];
        if let Some((dim, _)) = dims.iter().find(|(_, size)| *size == 0) {
            return Some(format!("{dim} = 0: every size must be at least 1"));
        }
        if let Some((dim, size)) = dims.iter().find(|(_, size)| *size > KERNEL_DIM_MAX) {
            return Some(format!(
                "{dim} = {size} exceeds what the kernels index with 32-bit ints (at most {KERNEL_DIM_MAX})"
            ));
        }
        // The reference kernel runs at every shape; a kernel point also launches its own grid.
        let reference = (REFERENCE_SYMBOL, [REFERENCE_TILE, REFERENCE_TILE]);
        for (name, block) in std::iter::once(reference).chain(variant.map(|v| (v.symbol, v.block))) {
            let (gx, gy) = (self.n.div_ceil(block[0] as usize) as u64, self.m.div_ceil(block[1] as usize) as u64);
            if gx > MAX_GROUPS_X || gy > MAX_GROUPS_YZ {
                return Some(format!(
                    "{name} needs a grid of {gx} x {gy} groups; a grid holds at most {MAX_GROUPS_X} x {MAX_GROUPS_YZ}"
                ));
            }
        }
        let device_bytes = self.bytes().and_then(|b| b.checked_add(workspace_bytes));
        if let Some(why) = memory.problem(device_bytes, self.bytes()) {
            return Some(format!("{self}: {why}"));
        }
        let v = variant?;
        if let Some(why) = v.check(*self) {
            return Some(why);
        }
        let items = v.group[0] * v.group[1];
        (items > max_group_size)
            .then(|| format!("{} uses groups of {items} items; the device allows {max_group_size}", v.name))
    }
}

/// Largest M, N or K the kernels take: they are `int` arguments, and a tile's indices run up to one block (at most
/// 256) past the size before they are compared with it, so that must fit an int too.
pub const KERNEL_DIM_MAX: usize = i32::MAX as usize - 256;

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "m={},n={},k={}", self.m, self.n, self.k)
    }
}

/// The sweep: sizes × kernels, with the vendor BLAS and the autotune step at every size. Each field but `inputs` is
/// one flag of `suite run matmul`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MatmulSweep {
    /// Problem sizes, in order.
    pub shapes: Vec<Shape>,
    /// Kernels, in ladder order.
    pub kernels: Vec<&'static Variant>,
    /// Whether to run the vendor BLAS at every size.
    pub vendor: bool,
    /// Whether to add an `autotune` row at every size: the fastest of [`autotune_candidates`] that verify.
    pub autotune: bool,
    /// `Some(tiles)`: `kernels` is replaced by the device's [`default_kernels`] (within these tile sizes) once the
    /// device is known ([`Experiment::fit_to_device`]).
    pub arch_defaults: Option<Vec<u32>>,
    /// The current shape's inputs, shared by the points of that shape (the runner prepares them in order).
    #[serde(skip)]
    inputs: super::RunCache<Inputs>,
}

/// The full sweep's sizes: 256 to 8192 with the sizes between the powers of two where the number of tiles per SM
/// changes most (768, 1536, 3072, 6144), sizes that no tile divides (1000, 1023, 4097: 1023 and 4097 also leave rows
/// unaligned for 16-byte loads), and two rectangular products.
pub const FULL_SIZES: &[&str] = &[
    "256",
    "512",
    "768",
    "1000",
    "1023",
    "1024",
    "1536",
    "2048",
    "3072",
    "4096",
    "4097",
    "6144",
    "8192",
    "1000x1500x700",
    "2000x500x3000",
];

impl Default for MatmulSweep {
    /// [`FULL_SIZES`]; every kernel of the ladder; the vendor BLAS; the autotune step.
    fn default() -> Self {
        let shapes = FULL_SIZES.iter().map(|s| Shape::parse(s).expect("FULL_SIZES parse")).collect();
        MatmulSweep::new(shapes, VARIANTS.iter().collect(), true).with_autotune(true)
    }
}

/// Selects kernels by name or family (`tiled` = every tile size in `tiles`), in ladder order.
pub fn select_kernels(names: &[String], tiles: &[u32]) -> Result<Vec<&'static Variant>, crate::options::Error> {
    for t in tiles {
        if !VARIANTS.iter().any(|v| v.tile_m == Some(*t)) {
            let have: Vec<String> = VARIANTS.iter().filter_map(|v| v.tile_m).map(|m| m.to_string()).collect();
            return Err(crate::options::Error {
                flag: "--tiles",
                problem: format!(
                    "no tiled kernel with M = {t} (M x M items per group); available: {}",
                    have.join(", ")
                ),
            });
        }
    }
    let tile_ok = |v: &Variant| v.tile_m.is_none_or(|m| tiles.is_empty() || tiles.contains(&m));
    if names.is_empty() {
        return Ok(VARIANTS.iter().filter(|v| tile_ok(v)).collect());
    }
    for name in names {
        if !VARIANTS.iter().any(|v| v.name == name || v.family == name) {
            let mut known: Vec<&str> = VARIANTS.iter().map(|v| v.name).collect();
            known.extend(VARIANTS.iter().map(|v| v.family).filter(|f| !known.contains(f)).collect::<Vec<_>>());
            return Err(crate::options::Error {
                flag: "--kernels",
                problem: format!("unknown kernel `{name}`; available: {}", known.join(", ")),
            });
        }
    }
    Ok(VARIANTS.iter().filter(|v| names.iter().any(|n| n == v.name || (n == v.family && tile_ok(v)))).collect())
}

/// The vendor BLAS's name on a platform.
pub fn vendor_name(platform: Platform) -> &'static str {
    match platform {
        Platform::Amd => "rocblas",
        Platform::Nvidia => "cublas",
    }
}

/// Elements of the GPU reference checked against the host's own FP64 sums.
const HOST_SAMPLES: usize = 4096;

/// The reference kernel (`kernels/matmul.hip`): FP64 accumulation in 16×16 tiles.
const REFERENCE_SYMBOL: &str = "matmul_reference_f64";

/// The `reference` column: what every point is checked against.
const REFERENCE_NAME: &str = "gpu_f64";

/// Rows and columns of C one group of the reference kernel computes.
const REFERENCE_TILE: u32 = 16;

/// Inputs as the experiment draws them: uniform in [−1, 1), fresh for every shape so no kernel can pass by
/// matching one fixed pattern ([`verify::matmul_tolerance`] is derived for this distribution). An allocation the
/// host cannot make is an error, not an abort.
pub fn draw_inputs(rng: &mut fastrand::Rng, len: usize) -> Result<Vec<f32>, Error> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| Error::Unsupported(format!("cannot allocate {len} floats of input on the host")))?;
    v.extend((0..len).map(|_| rng.f32() * 2.0 - 1.0));
    Ok(v)
}

/// Inputs and the reference result for one shape, shared by every point of that shape.
struct Inputs {
    shape: Shape,
    a: Buffer<f32>,
    b: Buffer<f32>,
    /// C computed by the FP64 reference kernel (checked on the host at sampled elements), on the host.
    reference: Vec<f32>,
}

impl Inputs {
    /// Draws the inputs, runs the reference kernel and checks it against the host at [`HOST_SAMPLES`] elements.
    fn new(gpu: &Gpu, shape: Shape) -> Result<Inputs, Error> {
        let dev = gpu.device.as_ref();
        let (free, total) = dev.memory_info()?;
        let bytes = shape.bytes().unwrap_or(u64::MAX);
        if bytes > free {
            return Err(Error::Device(crate::device::Error::OutOfMemory { requested: bytes, free, total }));
        }
        let mut rng = fastrand::Rng::new();
        let host_a = draw_inputs(&mut rng, shape.m * shape.k)?;
        let host_b = draw_inputs(&mut rng, shape.k * shape.n)?;
        let a = dev.upload(&host_a)?;
        let b = dev.upload(&host_b)?;
        let c = dev.alloc_buffer::<f32>(shape.m * shape.n)?;
        dev.fill_bytes(c.raw(), 0xff)?;
        let kernel = gpu.kernel("matmul", REFERENCE_SYMBOL)?;
        let grid = |size: usize| u32::try_from(size.div_ceil(REFERENCE_TILE as usize));
        let (Ok(gx), Ok(gy)) = (grid(shape.n), grid(shape.m)) else {
            return Err(Error::Unsupported(format!("{shape} needs too many groups for the reference kernel")));
        };
        let config =
            LaunchConfig { grid: [gx, gy, 1], group: [REFERENCE_TILE, REFERENCE_TILE, 1], dynamic_lds_bytes: 0 };
        dev.launch(&kernel, &config, &[a.arg(), b.arg(), c.arg(), dims(shape)?[0], dims(shape)?[1], dims(shape)?[2]])?;
        dev.synchronize()?;
        let reference = dev.download(&c)?;
        drop(c);
        // The reference at sampled elements against the host's FP64 sums.
        let (mut got, mut want) = (Vec::new(), Vec::new());
        for _ in 0..HOST_SAMPLES.min(shape.m * shape.n) {
            let (i, j) = (rng.usize(..shape.m), rng.usize(..shape.n));
            let dot: f64 =
                (0..shape.k).map(|p| f64::from(host_a[i * shape.k + p]) * f64::from(host_b[p * shape.n + j])).sum();
            got.push(reference[i * shape.n + j]);
            want.push(dot);
        }
        let check = verify::check_matmul(&got, &want, shape.k);
        if !check.passed() {
            return Err(Error::Unsupported(format!(
                "the reference kernel {REFERENCE_SYMBOL} does not match the host at {shape}, so nothing can be checked \
                 against it: {}",
                check.summary()
            )));
        }
        Ok(Inputs { shape, a, b, reference })
    }
}

/// C = A·B computed on the device by `v` (split-K into `split` ranges where it splits, by [`split_k_for`] when
/// `None`), launched `launches` times on the same buffers (workspace and counters included) before C is read back:
/// what a row measures, for tests that compare results bit for bit. `a` is M×K and `b` K×N, row-major.
pub fn multiply(
    gpu: &Gpu,
    v: &Variant,
    shape: Shape,
    a: &[f32],
    b: &[f32],
    split: Option<u32>,
    launches: u32,
) -> Result<Vec<f32>, Error> {
    if a.len() != shape.m * shape.k || b.len() != shape.k * shape.n {
        return Err(Error::Unsupported(format!(
            "multiply at {shape} needs {} and {} floats, not {} and {}",
            shape.m * shape.k,
            shape.k * shape.n,
            a.len(),
            b.len()
        )));
    }
    let dev = gpu.device.as_ref();
    let inputs = Inputs { shape, a: dev.upload(a)?, b: dev.upload(b)?, reference: Vec::new() };
    let plan = device_plan(gpu, v, shape, split).map_err(Error::Unsupported)?;
    let mut case = KernelCase::new(gpu, Rc::new(inputs), v, plan)?;
    for _ in 0..launches {
        case.launch()?;
    }
    dev.synchronize()?;
    Ok(dev.download(&case.c)?)
}

/// M, N and K as the kernels' `int` arguments.
fn dims(shape: Shape) -> Result<[Arg; 3], Error> {
    let int = |x: usize| {
        i32::try_from(x)
            .map(Arg::I32)
            .map_err(|_| Error::Unsupported(format!("{shape} exceeds the kernels' int sizes")))
    };
    Ok([int(shape.m)?, int(shape.n)?, int(shape.k)?])
}

impl MatmulSweep {
    /// A sweep of `shapes` × `kernels`, with the vendor BLAS rows if `vendor` and no autotune rows.
    pub fn new(shapes: Vec<Shape>, kernels: Vec<&'static Variant>, vendor: bool) -> MatmulSweep {
        MatmulSweep {
            shapes,
            kernels,
            vendor,
            autotune: false,
            arch_defaults: None,
            inputs: super::RunCache::default(),
        }
    }

    /// This sweep with (or without) an `autotune` row at every size.
    pub fn with_autotune(self, autotune: bool) -> MatmulSweep {
        MatmulSweep { autotune, ..self }
    }

    /// This sweep with its kernels chosen by the device's architecture ([`ARCH_DEFAULTS`]) once it is known, within
    /// the tile sizes `tiles` (all if empty).
    pub fn with_arch_defaults(self, tiles: Vec<u32>) -> MatmulSweep {
        MatmulSweep { arch_defaults: Some(tiles), ..self }
    }

    /// The inputs for `shape`, made once per shape and kept until the sweep moves to the next one.
    fn inputs(&self, gpu: &Gpu, shape: Shape) -> Result<Rc<Inputs>, Error> {
        self.inputs.get_or_make(|i| i.shape == shape, || Inputs::new(gpu, shape))
    }

    /// Points per shape: the vendor BLAS, the kernels, the autotune step.
    fn per_shape(&self) -> usize {
        usize::from(self.vendor) + self.kernels.len() + usize::from(self.autotune)
    }
}

/// One launch of `kernel` (the vendor BLAS for `None`) at `shape`, for the estimate: 2·M·N·K FLOP over A, B and C
/// once, at the share of the FP32 peak its rung reaches in the reference runs (rounded down: the estimate errs long).
fn point_work(shape: Shape, kernel: Option<&str>) -> Work {
    let share = match kernel {
        None => 0.5,
        Some("naive") => 0.005,
        Some("tiled_m4") => 0.02,
        Some("accumulator" | "tiled_m8") => 0.05,
        Some(k) if k.starts_with("tiled_") => 0.1,
        Some("blocktile_1d") => 0.15,
        Some("blocktile_2d") => 0.2,
        Some(_) => 0.3,
    };
    let (m, n, k) = (shape.m as f64, shape.n as f64, shape.k as f64);
    let bytes = 4.0 * (m * k + k * n + m * n);
    Work::kernel(matmul_flops(shape.m, shape.n, shape.k), bytes, share).at_least(LAUNCH_S)
}

/// The FP64 reference kernel at `shape` (16×16 tiles accumulating in FP64): credited with 2% of the FP32 peak.
fn reference_work(shape: Shape) -> Work {
    Work::kernel(matmul_flops(shape.m, shape.n, shape.k), 0.0, 0.02)
}

/// What a point measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// The vendor BLAS.
    Vendor,
    /// One kernel of the ladder.
    Kernel(&'static Variant),
    /// The fastest of the autotune candidates.
    Autotune,
}

/// The name of the autotune rows in the `kernel` column.
pub const AUTOTUNE: &str = "autotune";

/// What point `index` measures, and at which shape: shapes in order, and at each shape the vendor BLAS first, then
/// the kernels in ladder order, then the autotune step.
fn point_kernel(sweep: &MatmulSweep, index: usize) -> (Slot, Shape) {
    let per_shape = sweep.per_shape();
    let shape = sweep.shapes[index / per_shape];
    let slot = index % per_shape;
    let first_kernel = usize::from(sweep.vendor);
    if slot < first_kernel {
        (Slot::Vendor, shape)
    } else if slot < first_kernel + sweep.kernels.len() {
        (Slot::Kernel(sweep.kernels[slot - first_kernel]), shape)
    } else {
        (Slot::Autotune, shape)
    }
}

/// The autotune step's candidates on `arch`: the kernels of its default set ([`ARCH_DEFAULTS`]) whose schedule is
/// deterministic and whose family goes beyond the seed's ladder (double_buffer, splitk, streamk), each split-K kernel
/// once per split count of [`AUTOTUNE_SPLITS`] that fits `shape` (a split count that gives more than
/// [`AUTOTUNE_MAX_GROUPS_PER_CU`] groups per CU, or ranges under 4 slabs, is left out). Whatever `--kernels` says:
/// the step answers "how fast can a hand kernel of this suite be here", not "which of the kernels asked for".
pub fn autotune_candidates(arch: &str, shape: Shape, cus: u32) -> Vec<(&'static Variant, Option<u32>)> {
    let kernels = default_kernels(arch, &[]).unwrap_or_else(|_| VARIANTS.iter().collect());
    let mut out = Vec::new();
    for v in kernels.into_iter().filter(|v| AUTOTUNE_FAMILIES.contains(&v.family)) {
        match v.schedule {
            Schedule::SplitK => {
                let (tx, ty) = v.tiles(shape);
                let slabs = shape.k.div_ceil(v.slab_k as usize) as u64;
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
    out
}

/// Families the autotune step picks from.
const AUTOTUNE_FAMILIES: &[&str] = &["double_buffer", "splitk", "streamk"];

/// Split counts the autotune step tries for each split-K kernel (1 is the double_buffer kernel of the same shape).
pub const AUTOTUNE_SPLITS: &[u32] = &[2, 3, 4, 5, 6, 8];

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

/// The plan of `v` at `shape` on this device: its `groups_per_cu` from the occupancy the device reports for the
/// symbol launched.
fn device_plan(gpu: &Gpu, v: &Variant, shape: Shape, split: Option<u32>) -> Result<Plan, String> {
    let props = gpu.device.props();
    let symbol = v.symbol_for(shape);
    let items = v.group[0] * v.group[1];
    let groups_per_cu = match v.schedule {
        Schedule::Tiles => 1,
        _ => gpu
            .kernel("matmul", &symbol)
            .map_err(|e| e.to_string())
            .and_then(|k| gpu.device.occupancy_groups_per_cu(&k, items, 0).map_err(|e| e.to_string()))?,
    };
    if groups_per_cu == 0 {
        return Err(format!("{symbol}: the device reports no group of {items} items fits a CU"));
    }
    v.plan(shape, props.cu_count, groups_per_cu, split)
}

impl Experiment for MatmulSweep {
    fn comparison(&self) -> Box<dyn crate::report::compare::Comparison> {
        Box::new(crate::report::compare::MatmulComparison)
    }

    fn name(&self) -> &'static str {
        "matmul"
    }

    fn param_columns(&self) -> &'static [&'static str] {
        &[
            "kernel",
            "tile_m",
            "m",
            "n",
            "k",
            "group_x",
            "group_y",
            "reference",
            "split_k",
            "groups",
            "symbol",
            "pick",
            "fp32_vector_peak_tflops",
            "fp32_matrix_peak_tflops",
        ]
    }

    fn metric(&self) -> Metric {
        Metric { column: "gflops", formula: "GFLOP/s = 2*M*N*K / median time / 1e9" }
    }

    fn options(&self) -> serde_json::Value {
        serde_json::json!({
            "shapes": self.shapes,
            "kernels": self.kernels.iter().map(|v| v.name).collect::<Vec<_>>(),
            "vendor": self.vendor,
            "autotune": self.autotune,
            "autotune_splits": AUTOTUNE_SPLITS,
            "split_k": "largest S with tiles*S <= CUs * groups per CU, S <= 16, >= 4 slabs of K per range",
            "streamk_groups": "CUs * groups per CU, at most one per slab",
            "reference": REFERENCE_SYMBOL,
            "tolerance": "2*sqrt(K)*eps_f32, relative to max(max |C|, sqrt(K)), every element",
        })
    }

    fn sources(&self) -> &'static [&'static str] {
        &["matmul"]
    }

    fn points(&self, gpu: &Gpu) -> Vec<Point> {
        let props = gpu.device.props();
        let vendor = vendor_name(props.platform);
        let blas = gpu.device.blas();
        let memory = Memory::of(props.memory_bytes);
        let ceilings = crate::peaks::ceilings(props);
        let max_group = props.max_group_size;
        (0..self.shapes.len() * self.per_shape())
            .map(|index| {
                let (slot, shape) = point_kernel(self, index);
                let dims = [shape.m.to_string(), shape.n.to_string(), shape.k.to_string()];
                let row = |kernel: &str, tile_m: String, group: [String; 2], plan: Option<&Plan>| {
                    let [m, n, k] = dims.clone();
                    let [gx, gy] = group;
                    let (split_k, groups, symbol) = plan.map_or_else(Default::default, |p| {
                        (p.split_k.to_string(), p.groups().to_string(), p.symbol.clone())
                    });
                    vec![
                        kernel.into(),
                        tile_m,
                        m,
                        n,
                        k,
                        gx,
                        gy,
                        REFERENCE_NAME.into(),
                        split_k,
                        groups,
                        symbol,
                        String::new(),
                        // The device's FP32 ceilings beside every row: the hand kernels use the vector units, the
                        // vendor BLAS may use the matrix cores (AMD MFMA), and "% of vendor" compares the two.
                        format!("{}", ceilings.fp32_vector_tflops),
                        ceilings.fp32_matrix_tflops.map(|t| t.to_string()).unwrap_or_default(),
                    ]
                };
                let basic = shape.problem(None, max_group, &memory, 0);
                let mut work = match slot {
                    Slot::Vendor => point_work(shape, None),
                    Slot::Kernel(v) => point_work(shape, Some(v.name)),
                    // Every candidate is verified and timed: as many launches' worth as there are candidates.
                    Slot::Autotune => {
                        let candidates = autotune_candidates(props.arch.as_str(), shape, props.cu_count).len();
                        let one = point_work(shape, Some(AUTOTUNE));
                        Work { share_of_peak: one.share_of_peak / candidates.max(1) as f64, ..one }
                    }
                };
                if index % self.per_shape() == 0 {
                    // The first point of a shape makes its inputs and runs the FP64 reference kernel.
                    work = work.with_setup(launch_seconds(&reference_work(shape), &ceilings).0);
                }
                match slot {
                    Slot::Vendor => Point {
                        invalid: basic.or_else(|| {
                            blas.as_ref()
                                .err()
                                .map(|e| format!("{e}; the kernels are still verified against the reference kernel"))
                        }),
                        index,
                        key: format!("{vendor}/{shape}"),
                        params: row(vendor, String::new(), Default::default(), None),
                        work,
                    },
                    Slot::Kernel(v) => {
                        let tile_m = v.tile_m.map(|m| m.to_string()).unwrap_or_default();
                        let group = [v.group[0].to_string(), v.group[1].to_string()];
                        // The plan needs a launchable size, and its workspace counts against the memory.
                        let plan = match shape.problem(Some(v), max_group, &memory, 0) {
                            Some(why) => Err(why),
                            None => device_plan(gpu, v, shape, None),
                        };
                        let invalid = match &plan {
                            Ok(p) => shape.problem(Some(v), max_group, &memory, p.workspace_bytes()),
                            Err(why) => Some(why.clone()),
                        };
                        Point {
                            index,
                            key: format!("{}/{shape}", v.name),
                            params: row(v.name, tile_m, group, plan.as_ref().ok()),
                            invalid,
                            work,
                        }
                    }
                    Slot::Autotune => Point {
                        invalid: basic,
                        index,
                        key: format!("{AUTOTUNE}/{shape}"),
                        // The pick's columns are filled in once the step has run (Case::resolved_params).
                        params: row(AUTOTUNE, String::new(), Default::default(), None),
                        work,
                    },
                }
            })
            .collect()
    }

    fn prepare<'g>(&self, gpu: &'g Gpu, point: &Point) -> Result<Box<dyn Case + 'g>, Error> {
        let (slot, shape) = point_kernel(self, point.index);
        let inputs = self.inputs(gpu, shape)?;
        match slot {
            Slot::Vendor => {
                let dev = gpu.device.as_ref();
                let c = dev.alloc_buffer::<f32>(shape.m * shape.n)?;
                dev.fill_bytes(c.raw(), 0xff)?;
                Ok(Box::new(VendorCase { gpu, inputs, c }))
            }
            Slot::Kernel(v) => {
                let plan = device_plan(gpu, v, shape, None).map_err(Error::Unsupported)?;
                Ok(Box::new(KernelCase::new(gpu, inputs, v, plan)?))
            }
            Slot::Autotune => Ok(Box::new(autotune(gpu, inputs)?)),
        }
    }

    fn plots(&self, rows: &[BTreeMap<String, String>], _dir: &Path) -> Vec<(String, LinePlot)> {
        plots(rows)
    }

    /// Per size, the vendor BLAS and the best hand kernel with its share of the vendor's rate.
    fn headlines(&self, rows: &[BTreeMap<String, String>]) -> Vec<String> {
        headlines(rows)
    }

    fn fit_to_device(&mut self, props: &crate::device::Props) {
        if let Some(tiles) = self.arch_defaults.take() {
            // The tiles were checked when the sweep was made (select_kernels), so this cannot fail; keep the
            // sweep's kernels if it somehow does rather than run nothing.
            if let Ok(kernels) = default_kernels(props.arch.as_str(), &tiles) {
                self.kernels = kernels;
            }
        }
    }
}

/// Time each autotune candidate may take to be timed (its first launches and 3 repetitions of a batch).
const AUTOTUNE_BUDGET_S: f64 = 0.05;

/// The autotune step at one shape: every candidate ([`autotune_candidates`]) is prepared, launched and verified at
/// every element, and those that verify are timed the way rows are (batches of launches, median of 3), briefly;
/// the fastest ([`autotune_pick`]) is prepared again and becomes the row, which the runner verifies and times like
/// any other. A candidate that cannot be planned, allocated or launched counts as not verified.
fn autotune<'g>(gpu: &'g Gpu, inputs: Rc<Inputs>) -> Result<AutotuneCase<'g>, Error> {
    let props = gpu.device.props();
    let dev = gpu.device.as_ref();
    let shape = inputs.shape;
    let candidates = autotune_candidates(props.arch.as_str(), shape, props.cu_count);
    let memory = Memory::of(props.memory_bytes);
    let opts = super::RunOptions {
        out_dir: std::path::PathBuf::new(),
        resume: false,
        shard: None,
        warmup: 1,
        reps: 3,
        time_budget_s: AUTOTUNE_BUDGET_S,
        timing: crate::device::Timing::Graph,
        // Not read by the timer: the step itself was estimated and allowed as a point.
        max_point_s: f64::INFINITY,
    };
    let trial = |v: &'static Variant, split: Option<u32>| -> Result<Option<f64>, Error> {
        let Ok(plan) = device_plan(gpu, v, shape, split) else { return Ok(None) };
        if shape.problem(Some(v), props.max_group_size, &memory, plan.workspace_bytes()).is_some() {
            return Ok(None);
        }
        let mut case = KernelCase::new(gpu, inputs.clone(), v, plan)?;
        case.launch()?;
        dev.synchronize()?;
        if !case.verify()?.passed() {
            return Ok(None);
        }
        Ok(Some(super::time_case(dev, &mut case, &opts)?.stats.median_ms))
    };
    let times: Vec<Option<f64>> = candidates.iter().map(|&(v, split)| trial(v, split).unwrap_or(None)).collect();
    let Some(best) = autotune_pick(&times) else {
        return Err(Error::Unsupported(format!(
            "autotune: none of the {} candidates at {shape} verified (or could run)",
            candidates.len()
        )));
    };
    let (v, split) = candidates[best];
    let plan = device_plan(gpu, v, shape, split).map_err(Error::Unsupported)?;
    Ok(AutotuneCase { inner: KernelCase::new(gpu, inputs, v, plan)?, pick: v })
}

/// The lines of [`Experiment::headlines`]: for each size (M×N×K, in the CSV's order), the vendor BLAS's GFLOP/s
/// and the fastest hand kernel's, with their ratio.
/// What the vendor BLAS runs on and the device's FP32 ceilings, from a row's context and peak columns: "% of
/// vendor" compares hardware units that may differ (rocBLAS uses the MFMA matrix cores on CDNA, the hand kernels
/// the vector units).
fn vendor_note(row: &BTreeMap<String, String>) -> String {
    let get = |c: &str| row.get(c).cloned().unwrap_or_default();
    let (platform, arch) = (get("platform"), get("arch"));
    let units = Platform::ALL
        .into_iter()
        .find(|p| p.name() == platform)
        .map(|p| crate::peaks::vendor_sgemm_units(p, &arch).to_string())
        .unwrap_or_else(|| format!("the vendor BLAS of platform `{platform}`"));
    let peaks = match (get("fp32_vector_peak_tflops"), get("fp32_matrix_peak_tflops")) {
        (v, _) if v.is_empty() => String::new(),
        (v, m) if m.is_empty() => format!("; FP32 peak {v} TFLOP/s on the vector units, no FP32 matrix path"),
        (v, m) => format!("; FP32 peaks: vector {v} TFLOP/s, matrix {m} TFLOP/s"),
    };
    let hand = if platform == "amd" && !arch.starts_with("sm_") {
        "the hand kernels use plain (packed) FMA on the vector units"
    } else {
        "the hand kernels use FMA on the vector units"
    };
    format!("{units}; {hand}{peaks}")
}

fn headlines(rows: &[BTreeMap<String, String>]) -> Vec<String> {
    let mut sizes: Vec<String> = Vec::new();
    let mut vendor: BTreeMap<String, f64> = BTreeMap::new();
    let mut best: BTreeMap<String, (f64, String)> = BTreeMap::new();
    for r in super::ok_rows(rows) {
        let (Some(m), Some(n), Some(k), Some(gflops)) = (r.get("m"), r.get("n"), r.get("k"), super::num(r, "gflops"))
        else {
            continue;
        };
        let size = if m == n && n == k { m.clone() } else { format!("{m}x{n}x{k}") };
        if !sizes.contains(&size) {
            sizes.push(size.clone());
        }
        let mut kernel = r.get("kernel").cloned().unwrap_or_default();
        if kernel == AUTOTUNE {
            kernel = format!("{AUTOTUNE} ({})", r.get("pick").map_or("?", String::as_str));
        }
        if [Platform::Amd, Platform::Nvidia].iter().any(|p| vendor_name(*p) == kernel) {
            vendor.insert(size, gflops);
        } else if best.get(&size).is_none_or(|(g, _)| gflops > *g) {
            best.insert(size, (gflops, kernel));
        }
    }
    let first = super::ok_rows(rows).next().map(vendor_note);
    first
        .into_iter()
        .chain(sizes.iter().filter_map(|size| {
            let (gflops, kernel) = best.get(size)?;
            Some(match vendor.get(size) {
                Some(v) => format!(
                    "{size}: best kernel {kernel} {gflops:.0} GFLOP/s = {:.2} of the vendor BLAS ({v:.0} GFLOP/s)",
                    gflops / v
                ),
                None => format!("{size}: best kernel {kernel} {gflops:.0} GFLOP/s (no vendor BLAS row)"),
            })
        }))
        .collect()
}

/// The vendor BLAS at one shape, checked at every element against the reference.
struct VendorCase<'g> {
    gpu: &'g Gpu,
    inputs: Rc<Inputs>,
    c: Buffer<f32>,
}

impl Case for VendorCase<'_> {
    fn launch(&mut self) -> crate::device::Result<()> {
        let s = self.inputs.shape;
        self.gpu.device.sgemm(s.m, s.n, s.k, self.inputs.a.raw(), self.inputs.b.raw(), self.c.raw())
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        let got = self.gpu.device.download(&self.c)?;
        Ok(verify::check_matmul(&got, &self.inputs.reference, self.inputs.shape.k))
    }

    fn work(&self) -> f64 {
        let s = self.inputs.shape;
        matmul_flops(s.m, s.n, s.k)
    }

    fn footprint_bytes(&self) -> Option<u64> {
        Some((self.inputs.a.bytes() + self.inputs.b.bytes() + self.c.bytes()) as u64)
    }
}

/// One kernel of the ladder at one shape, as planned ([`Variant::plan`]), checked at every element against the
/// reference.
struct KernelCase<'g> {
    gpu: &'g Gpu,
    inputs: Rc<Inputs>,
    c: Buffer<f32>,
    kernel: Kernel,
    config: LaunchConfig,
    /// M, N, K as kernel arguments.
    dims: [Arg; 3],
    /// The split-K and stream-K workspace (partial tiles) and tile counters; `None` where the plan has none.
    work: Option<(Buffer<f32>, Buffer<u32>)>,
    /// Whether the kernel takes the workspace arguments.
    takes_work: bool,
    /// `matmul_zero_c` and its grid, launched before the kernel where it adds into C.
    zero: Option<(Kernel, LaunchConfig)>,
    plan: Plan,
}

/// The kernel that zeroes C before the atomic split-K kernel adds into it.
const ZERO_SYMBOL: &str = "matmul_zero_c";

impl<'g> KernelCase<'g> {
    /// Allocates C (poisoned: all-ones bytes are NaN, so an element the kernel does not write fails; zero for the
    /// naive kernel, which adds into it) and the plan's workspace (counters zeroed: each launch leaves them zero).
    fn new(gpu: &'g Gpu, inputs: Rc<Inputs>, v: &Variant, plan: Plan) -> Result<KernelCase<'g>, Error> {
        let dev = gpu.device.as_ref();
        let shape = inputs.shape;
        let c = dev.alloc_buffer::<f32>(shape.m * shape.n)?;
        dev.fill_bytes(c.raw(), if v.zero_c { 0 } else { 0xff })?;
        let kernel = gpu.kernel("matmul", &plan.symbol)?;
        let config = LaunchConfig { grid: plan.grid, group: [v.group[0], v.group[1], 1], dynamic_lds_bytes: 0 };
        let work = if plan.counters > 0 {
            let len = |n: u64| usize::try_from(n).map_err(|_| Error::Unsupported(format!("{n} floats of workspace")));
            let counters = dev.alloc_buffer::<u32>(len(plan.counters)?)?;
            dev.fill_bytes(counters.raw(), 0)?;
            Some((dev.alloc_buffer::<f32>(len(plan.work_floats.max(1))?)?, counters))
        } else {
            None
        };
        let zero = match v.schedule {
            Schedule::SplitKAtomic => {
                // A grid-stride loop: enough groups to fill the device, no more than the elements need.
                let groups = (shape.m * shape.n).div_ceil(256).clamp(1, 16 * gpu.device.props().cu_count as usize);
                Some((gpu.kernel("matmul", ZERO_SYMBOL)?, LaunchConfig::linear(groups as u32, 256)))
            }
            _ => None,
        };
        let takes_work = matches!(v.schedule, Schedule::SplitK | Schedule::StreamK);
        Ok(KernelCase { gpu, inputs, c, kernel, config, dims: dims(shape)?, work, takes_work, zero, plan })
    }
}

impl Case for KernelCase<'_> {
    fn launch(&mut self) -> crate::device::Result<()> {
        let [m, n, k] = self.dims;
        let dev = self.gpu.device.as_ref();
        if let Some((zero, config)) = &self.zero {
            dev.launch(zero, config, &[self.c.arg(), m, n])?;
        }
        let mut args = vec![self.inputs.a.arg(), self.inputs.b.arg(), self.c.arg(), m, n, k];
        if self.takes_work {
            // A split-K plan with S = 1 has no workspace: the kernel then writes C directly and never reads these.
            let (work, counters) = self.work.as_ref().map_or((Arg::Ptr(0), Arg::Ptr(0)), |(w, c)| (w.arg(), c.arg()));
            args.extend([work, counters]);
        }
        dev.launch(&self.kernel, &self.config, &args)
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        let got = self.gpu.device.download(&self.c)?;
        Ok(verify::check_matmul(&got, &self.inputs.reference, self.inputs.shape.k))
    }

    fn work(&self) -> f64 {
        let s = self.inputs.shape;
        matmul_flops(s.m, s.n, s.k)
    }

    fn footprint_bytes(&self) -> Option<u64> {
        let work = self.work.as_ref().map_or(0, |(w, c)| w.bytes() + c.bytes());
        Some((self.inputs.a.bytes() + self.inputs.b.bytes() + self.c.bytes() + work) as u64)
    }
}

/// The autotune step's pick at one shape: the pick's kernel case, with the pick named in the row.
struct AutotuneCase<'g> {
    inner: KernelCase<'g>,
    pick: &'static Variant,
}

impl Case for AutotuneCase<'_> {
    fn launch(&mut self) -> crate::device::Result<()> {
        self.inner.launch()
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        self.inner.verify()
    }

    fn work(&self) -> f64 {
        self.inner.work()
    }

    fn footprint_bytes(&self) -> Option<u64> {
        self.inner.footprint_bytes()
    }

    fn resolved_params(&self) -> Vec<(&'static str, String)> {
        let plan = &self.inner.plan;
        vec![
            ("group_x", self.pick.group[0].to_string()),
            ("group_y", self.pick.group[1].to_string()),
            ("split_k", plan.split_k.to_string()),
            ("groups", plan.groups().to_string()),
            ("symbol", plan.symbol.clone()),
            ("pick", self.pick.name.to_string()),
        ]
    }
}

/// The three plots of a matmul CSV: GFLOP/s vs size, GFLOP/s vs tile M, % of the vendor BLAS vs size. Only `ok`
/// rows of square shapes are drawn (the x axis is N for M = N = K). The size plots draw one line per family of the
/// ladder (its fastest kernel at each size, e.g. the best of the double_buffer shapes) and one for the autotune
/// step: some 30 kernels would not fit one legend, and the CSV keeps every row.
pub fn plots(rows: &[BTreeMap<String, String>]) -> Vec<(String, LinePlot)> {
    let num = super::num;
    let ok: Vec<&BTreeMap<String, String>> =
        super::ok_rows(rows).filter(|r| r.get("m") == r.get("n") && r.get("n") == r.get("k")).collect();
    let Some(first) = ok.first() else { return Vec::new() };
    let get = |c: &str| first.get(c).cloned().unwrap_or_default();
    let platform = get("platform");
    let vendor = if platform == "amd" { "rocblas" } else { "cublas" };
    let vendor_label = if platform == "amd" { "rocBLAS" } else { "cuBLAS" };
    let wave = get("wave_size");
    let title_device =
        format!("{} ({}, {})", get("device"), get("arch"), if wave == "64" { "wave64" } else { "warp32" });
    let note = Some(vendor_note(first));
    // Families in ladder order, then the autotune step, then anything else the CSV holds (e.g. from a newer suite)
    // as a family of its own.
    let family_of = |kernel: &str| -> String {
        VARIANTS.iter().find(|v| v.name == kernel).map_or_else(|| kernel.to_string(), |v| v.family.to_string())
    };
    let mut kernels: Vec<String> = Vec::new();
    for f in VARIANTS.iter().map(|v| v.family.to_string()).chain([AUTOTUNE.to_string()]) {
        if !kernels.contains(&f) {
            kernels.push(f);
        }
    }
    let mut members: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in &ok {
        let k = r.get("kernel").cloned().unwrap_or_default();
        if k == vendor {
            continue;
        }
        let f = family_of(&k);
        if !kernels.contains(&f) {
            kernels.push(f.clone());
        }
        let m = members.entry(f).or_default();
        if !m.contains(&k) {
            m.push(k);
        }
    }
    // A family's point at a size: its fastest row there; `y` maps that row to the plotted value.
    let series_of = |family: &str, y: &dyn Fn(&BTreeMap<String, String>) -> Option<f64>| -> Vec<(f64, f64)> {
        let mut best: BTreeMap<u64, (f64, &BTreeMap<String, String>)> = BTreeMap::new();
        for r in ok.iter().filter(|r| r.get("kernel").is_some_and(|k| k != vendor && family_of(k) == family)) {
            let (Some(n), Some(g)) = (num(r, "n"), num(r, "gflops")) else { continue };
            if best.get(&(n as u64)).is_none_or(|(b, _)| g > *b) {
                best.insert(n as u64, (g, r));
            }
        }
        best.into_iter().filter_map(|(n, (_, r))| Some((n as f64, y(r)?))).collect()
    };
    let vendor_series = |y: &dyn Fn(&BTreeMap<String, String>) -> Option<f64>| -> Vec<(f64, f64)> {
        let mut pts: Vec<(f64, f64)> = ok
            .iter()
            .filter(|r| r.get("kernel").map(String::as_str) == Some(vendor))
            .filter_map(|r| Some((num(r, "n")?, y(r)?)))
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        pts
    };
    let family_label = |family: &str| -> String {
        match members.get(family).map_or(0, Vec::len) {
            0 | 1 => {
                members.get(family).and_then(|m| m.first()).map_or_else(|| family.to_string(), |k| kernel_label(k))
            }
            n => format!("{family} (best of {n})"),
        }
    };
    let gflops = |r: &BTreeMap<String, String>| num(r, "gflops");
    // Fastest at the largest size first: the legend then lists the lines in the order they end at the right edge,
    // which untangles crossing lines, and both plots give each family the same colour (the % of the vendor at one
    // size orders them as their GFLOP/s do). Families without points go last, in ladder order.
    let at_largest = |k: &str| series_of(k, &gflops).last().map(|&(n, g)| (n, g));
    kernels.sort_by(|a, b| match (at_largest(a), at_largest(b)) {
        (Some(pa), Some(pb)) => pb.0.total_cmp(&pa.0).then(pb.1.total_cmp(&pa.1)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    let vendor_at = |n: f64| {
        ok.iter()
            .find(|r| r.get("kernel").map(String::as_str) == Some(vendor) && num(r, "n") == Some(n))
            .and_then(|r| num(r, "gflops"))
    };

    let mut by_size: Vec<Series> = kernels
        .iter()
        .map(|k| Series { label: family_label(k), points: series_of(k, &gflops), kind: SeriesKind::Line })
        .filter(|s| !s.points.is_empty())
        .collect();
    let vendor_points = vendor_series(&gflops);
    if !vendor_points.is_empty() {
        by_size.push(Series { label: vendor_label.into(), points: vendor_points, kind: SeriesKind::Reference });
    }

    let mut sizes: Vec<f64> = ok.iter().filter_map(|r| num(r, "n")).collect();
    sizes.sort_by(f64::total_cmp);
    sizes.dedup();
    let by_tile: Vec<Series> = sizes
        .iter()
        .map(|&n| {
            let mut pts: Vec<(f64, f64)> = ok
                .iter()
                .filter(|r| num(r, "n") == Some(n))
                .filter_map(|r| Some((num(r, "tile_m")?, num(r, "gflops")?)))
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series { label: format!("N = {n}"), points: pts, kind: SeriesKind::Line }
        })
        .filter(|s| !s.points.is_empty())
        .collect();

    let mut percent: Vec<Series> = kernels
        .iter()
        .map(|k| {
            let pts = series_of(k, &|r| Some(100.0 * num(r, "gflops")? / vendor_at(num(r, "n")?)?));
            Series { label: family_label(k), points: pts, kind: SeriesKind::Line }
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    if let (false, Some(lo), Some(hi)) = (percent.is_empty(), sizes.first(), sizes.last()) {
        let label = format!("{vendor_label} = 100%");
        percent.push(Series { label, points: vec![(*lo, 100.0), (*hi, 100.0)], kind: SeriesKind::Reference });
    }

    let plot = |file: &str, what: &str, x_label: &str, axes: (Axis, Axis), y_label: &str, series: Vec<Series>| {
        (
            file.to_string(),
            LinePlot {
                title: format!("FP32 matmul {what} on {title_device}"),
                subtitle: Some("C = A*B, row-major, M = N = K; median of timed launches; every point verified".into()),
                x_label: x_label.into(),
                y_label: y_label.into(),
                x_axis: axes.0,
                y_axis: axes.1,
                series,
                note: note.clone(),
                y_max: None,
            },
        )
    };
    let mut out = Vec::new();
    let size_label = "matrix size N (M = N = K)";
    if !by_size.is_empty() {
        // The ladder spans three orders of magnitude (naive to vendor BLAS): a log y axis keeps every rung visible.
        let axes = (Axis::Log2, Axis::Log10);
        out.push(plot(
            "matmul-gflops-vs-size.png",
            "GFLOP/s vs size",
            size_label,
            axes,
            "GFLOP/s (log scale)",
            by_size,
        ));
    }
    if !by_tile.is_empty() {
        out.push(plot(
            "matmul-gflops-vs-tile.png",
            "tiled kernel vs tile size",
            "tile size M (M x M items per group, M x M LDS tiles)",
            (Axis::Log2, Axis::Linear),
            "GFLOP/s",
            by_tile,
        ));
    }
    if !percent.is_empty() {
        // The y axis stops a little above the vendor's 100%, and at most at PERCENT_TOP: one outlier (a small size
        // whose vendor call is slow to start) would otherwise squash every other kernel into the bottom band.
        let highest = percent.iter().flat_map(|s| s.points.iter().map(|p| p.1)).fold(0.0, f64::max);
        let top = highest.clamp(110.0, PERCENT_TOP);
        let clipped = percent.iter().flat_map(|s| &s.points).filter(|p| p.1 > top).count();
        let (file, mut p) = plot(
            "matmul-percent-of-vendor.png",
            &format!("% of {vendor_label}"),
            size_label,
            (Axis::Log2, Axis::Linear),
            &format!("% of {vendor_label} GFLOP/s"),
            percent,
        );
        p.y_max = Some(top);
        if clipped > 0 {
            let line = format!("{clipped} point(s) above {top:.0}% run off the top edge; the CSV has their values");
            p.note = Some(p.note.map_or(line.clone(), |n| format!("{n}\n{line}")));
        }
        out.push((file, p));
    }
    out
}

/// The highest % of the vendor BLAS the %-of-vendor plot shows, so an outlier cannot stretch its y axis.
const PERCENT_TOP: f64 = 150.0;

/// Legend label of a kernel: `tiled_m16` reads `tiled M=16`.
fn kernel_label(name: &str) -> String {
    match name.strip_prefix("tiled_m") {
        Some(m) => format!("tiled M={m}"),
        None => name.to_string(),
    }
}

/// `suite run matmul`.
pub const ENTRY: Entry = Entry {
    name: "matmul",
    help: "Matmul ladder (naive, accumulator, LDS tiles, register-blocked, split-K, stream-K) and an autotune \
           step vs the vendor BLAS: GFLOP/s per size.",
    flags: MatmulArgs::augment_args,
    sweep: matmul_sweep,
    default: || Box::new(MatmulSweep::default()),
    quick: quick_matmul,
};

/// `suite run matmul` options.
#[derive(Debug, Args)]
pub struct MatmulArgs {
    /// Problem sizes, comma-separated: N for M = N = K, or MxNxK (default: 256 to 8192 with 768, 1000, 1023, 1536,
    /// 3072, 4097, 6144 and two rectangular products; see the README).
    #[arg(long, value_delimiter = ',')]
    pub sizes: Vec<String>,
    /// Kernels by name or family, comma-separated (default: the seed's ladder plus the register-blocked kernels
    /// suited to the device's architecture, see the README); `tiled` means every --tiles size.
    #[arg(long, value_delimiter = ',')]
    pub kernels: Vec<String>,
    /// Tile sizes M of the tiled kernel (default: 4,8,16,32).
    #[arg(long, value_delimiter = ',')]
    pub tiles: Vec<u32>,
    /// Skip the vendor BLAS (rocBLAS/cuBLAS) rows; it is still the reference where available.
    #[arg(long)]
    pub no_vendor: bool,
    /// Skip the autotune rows (the fastest verified kernel per size, picked by measurement).
    #[arg(long)]
    pub no_autotune: bool,
}

fn matmul_sweep(matches: &ArgMatches) -> Result<Box<dyn Experiment>, Error> {
    let args: MatmulArgs = parsed(matches)?;
    let defaults = MatmulSweep::default();
    let shapes = if args.sizes.is_empty() {
        defaults.shapes
    } else {
        args.sizes.iter().map(|s| Shape::parse(s)).collect::<Result<_, _>>()?
    };
    let kernels = select_kernels(&args.kernels, &args.tiles)?;
    let sweep = MatmulSweep::new(shapes, kernels, !args.no_vendor).with_autotune(!args.no_autotune);
    // No --kernels: the device's architecture picks the set (matmul::ARCH_DEFAULTS), within --tiles.
    Ok(Box::new(if args.kernels.is_empty() { sweep.with_arch_defaults(args.tiles) } else { sweep }))
}

/// Matmul's quick preset: one rung of each step of the ladder, the vendor BLAS and the autotune step at four sizes,
/// from one too small to fill the device with large tiles (512, where split-K matters) through one no tile divides
/// (1000) to one where the register-blocked kernels reach their plateau.
fn quick_matmul() -> Box<dyn Experiment> {
    let names: Vec<String> = [
        "accumulator",
        "tiled_m16",
        "blocktile_2d",
        "vectorized",
        "warptile",
        "double_buffer",
        "splitk_128x64x16_t128",
        "streamk_128x128x8_t128",
    ]
    .iter()
    .map(|n| n.to_string())
    .collect();
    let kernels = select_kernels(&names, &[]).expect("the quick preset names kernels of the ladder");
    let shapes = [512, 1000, 2048, 4096].into_iter().map(Shape::square).collect();
    Box::new(MatmulSweep::new(shapes, kernels, true).with_autotune(true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_has_a_symbol_named_after_it_and_a_sane_geometry() {
        for v in VARIANTS {
            assert_eq!(v.symbol, format!("matmul_{}", v.name));
            let items = v.group[0] * v.group[1];
            assert!((1..=1024).contains(&items), "{}", v.name);
            // A group computes at least one element of C per item.
            assert!(v.block[0] * v.block[1] >= items, "{}", v.name);
            assert!(v.slab_k >= 1, "{}", v.name);
            // Every rung takes any size; the 16-byte kernels through their `_unaligned` twins.
            assert_eq!(v.multiples, ANY, "{}", v.name);
            // Only the wave-tiled kernels split K or stream, and they all have twins.
            assert!(v.schedule == Schedule::Tiles || v.aligned_rows, "{}", v.name);
            // The shape in the name is the shape in the table: <BM>x<BN>x<BK>_t<items>.
            if let Some(dims) = v.name.split('_').find(|p| p.matches('x').count() == 2) {
                let want = format!("{}x{}x{}", v.block[1], v.block[0], v.slab_k);
                assert_eq!(dims, want, "{}", v.name);
                assert!(v.name.ends_with(&format!("_t{items}")), "{}", v.name);
            }
        }
        // Names are keys of CSV rows and CLI values: no two kernels may share one (dedup alone would only catch
        // neighbours).
        let unique: std::collections::BTreeSet<&str> = VARIANTS.iter().map(|v| v.name).collect();
        assert_eq!(unique.len(), VARIANTS.len());
        assert!(!VARIANTS.iter().any(|v| v.symbol == REFERENCE_SYMBOL));
    }

    #[test]
    fn shapes_parse_square_and_rectangular() {
        assert_eq!(Shape::parse("1000").unwrap(), Shape::square(1000));
        assert_eq!(Shape::parse("2^10").unwrap(), Shape::square(1024));
        assert_eq!(Shape::parse("64x32x16").unwrap(), Shape { m: 64, n: 32, k: 16 });
        for bad in ["", "0", "1x2", "1x2x3x4", "axbxc", "12x0x3"] {
            assert!(Shape::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Shape::square(2).bytes(), Some(4 * (4 + 4 + 8)));
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
        ) {
            let shape = Shape { m, n, k };
            let variant = VARIANTS.get(kernel);
            let memory = Memory { device, host };
            let problem = shape.problem(variant, 1024, &memory, workspace);
            // The same rules in u128, where nothing overflows.
            let (m1, n1, k1) = (m as u128, n as u128, k as u128);
            let bytes = [m1 * k1, k1 * n1, m1 * n1, m1 * n1].iter().fold(0u128, |sum, x| sum.saturating_add(x.saturating_mul(4)));
            let grid_ok = |block: [u32; 2]| {
                n1.div_ceil(block[0].into()) <= MAX_GROUPS_X.into() && m1.div_ceil(block[1].into()) <= MAX_GROUPS_YZ.into()
            };
            let valid = m.min(n).min(k) > 0
                && m.max(n).max(k) <= KERNEL_DIM_MAX
                && grid_ok([16, 16])
                && variant.is_none_or(|v| {
                    grid_ok(v.block)
                        && m % v.multiples.m as usize == 0
                        && n % v.multiples.n as usize == 0
                        && k % v.multiples.k as usize == 0
                })
                && bytes.saturating_add(u128::from(workspace)) <= u128::from(device)
                && host.is_none_or(|h| bytes <= u128::from(h));
            proptest::prop_assert_eq!(problem.is_none(), valid, "{}: {:?}", shape, problem);
        }
    }

    #[test]
    fn size_problems_name_their_cause() {
        let mem = Memory { device: 80 << 30, host: Some(1 << 40) };
        let why = |m, n, k| Shape { m, n, k }.problem(None, 1024, &mem, 0).unwrap();
        assert!(why(0, 4, 4).contains("M = 0"));
        assert!(why(4, 1 << 32, 4).contains("exceeds what the kernels index"));
        assert!(why(65_535 * 16 + 1, 1, 1).contains("grid"));
        assert!(why(1 << 17, 1 << 17, 1 << 17).contains("GiB of device memory"));
        assert!(Shape::square(1 << 20).bytes().is_some());
        assert_eq!(Shape { m: 1 << 40, n: 1 << 40, k: 1 }.bytes(), None);
        let host_small = Memory { device: u64::MAX, host: Some(1 << 30) };
        assert!(Shape::square(1 << 14).problem(None, 1024, &host_small, 0).unwrap().contains("host memory"));
        assert_eq!(Shape::square(8192).problem(Some(&VARIANTS[0]), 1024, &mem, 0), None);
        assert!(Shape::square(8192).problem(Some(&VARIANTS[0]), 128, &mem, 0).unwrap().contains("groups of 256"));
        // A workspace counts against the device only (the host never holds it).
        let tight = Memory { device: Shape::square(4096).bytes().unwrap() + 100, host: Some(1 << 40) };
        assert_eq!(Shape::square(4096).problem(None, 1024, &tight, 100), None);
        assert!(Shape::square(4096).problem(None, 1024, &tight, 101).unwrap().contains("GiB of device memory"));
    }

    fn variant(name: &str) -> &'static Variant {
        VARIANTS.iter().find(|v| v.name == name).unwrap_or_else(|| panic!("no kernel {name}"))
    }

    #[test]
    fn launch_geometry_covers_ragged_edges() {
        let plan = variant("tiled_m16").plan(Shape { m: 33, n: 100, k: 7 }, 132, 8, None).unwrap();
        assert_eq!(
            plan,
            Plan { symbol: "matmul_tiled_m16".into(), grid: [7, 3, 1], split_k: 1, work_floats: 0, counters: 0 }
        );
        // 256×128 tiles of the default shape: ceil(1000/128) x ceil(1000/256).
        let plan = variant("double_buffer").plan(Shape::square(1000), 132, 1, None).unwrap();
        assert_eq!((plan.grid, plan.groups()), ([8, 4, 1], 32));
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
            assert_eq!(variant("double_buffer").symbol_for(shape), twin, "{shape}");
            // The scalar kernels have no twin.
            assert_eq!(variant("blocktile_2d").symbol_for(shape), "matmul_blocktile_2d", "{shape}");
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
            (4, 1000, 264, 16), // capped
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
        let sk = variant("splitk_64x128x8_t128").plan(shape, 132, 3, None).unwrap();
        assert_eq!((sk.grid, sk.split_k), ([6, 12, 5], 5));
        assert_eq!((sk.work_floats, sk.counters), (72 * 5 * 64 * 128, 72));
        assert_eq!(sk.workspace_bytes(), (72 * 5 * 64 * 128 + 72) * 4);
        let s2 = variant("splitk_64x128x8_t128").plan(shape, 132, 3, Some(2)).unwrap();
        assert_eq!(s2.grid, [6, 12, 2]);
        let err = variant("splitk_64x128x8_t128").plan(shape, 132, 3, Some(97)).unwrap_err();
        assert!(err.contains("split K = 97 needs 1 to 96"), "{err}");
        // The atomic variant splits alike but adds into C: no workspace.
        let atomic = variant("splitk_atomic_64x128x16_t128").plan(shape, 132, 2, Some(3)).unwrap();
        assert_eq!((atomic.grid, atomic.work_floats, atomic.counters), ([6, 12, 3], 0, 0));
        // Stream-K: one group per resident slot, two partial tiles each.
        let st = variant("streamk_128x128x8_t128").plan(shape, 132, 2, None).unwrap();
        assert_eq!((st.grid, st.counters), ([264, 1, 1], 36));
        assert_eq!(st.work_floats, 2 * 264 * 128 * 128);
        // ... but never more groups than iterations (6 tiles x 1 slab here).
        let tiny = variant("streamk_128x128x8_t128").plan(Shape { m: 77, n: 700, k: 8 }, 132, 2, None).unwrap();
        assert_eq!(tiny.grid, [6, 1, 1]);
        assert_eq!(tiny.symbol, "matmul_streamk_128x128x8_t128");
        let odd = variant("streamk_128x128x8_t128").plan(Shape { m: 77, n: 700, k: 9 }, 132, 2, None).unwrap();
        assert_eq!((odd.grid, odd.symbol.as_str()), ([12, 1, 1], "matmul_streamk_128x128x8_t128_unaligned"));
        // Iterations are counted in 31 bits.
        let huge = Shape { m: 1 << 20, n: 1 << 20, k: 1 << 12 };
        let err = variant("streamk_128x128x8_t128").plan(huge, 132, 2, None).unwrap_err();
        assert!(err.contains("stream-K counts them in 31 bits"), "{err}");
    }

    #[test]
    fn autotune_candidates_split_only_where_the_grid_is_small() {
        let names = |arch: &str, shape: Shape| -> Vec<String> {
            autotune_candidates(arch, shape, 132)
                .iter()
                .map(|(v, s)| s.map_or_else(|| v.name.to_string(), |s| format!("{}/{s}", v.name)))
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
        // 8192²: every split-K grid would exceed 4 groups per CU.
        let large = names("sm_90", Shape::square(8192));
        assert!(!large.iter().any(|n| n.starts_with("splitk")), "{large:?}");
        assert!(large.contains(&"double_buffer".to_string()) && large.contains(&"streamk_128x128x8_t128".to_string()));
        // gfx90a picks among its wave64 shapes only.
        let cdna = names("gfx90a", Shape::square(512));
        assert!(cdna.iter().all(|n| n.contains("t512")), "{cdna:?}");
        assert!(cdna.iter().any(|n| n.starts_with("splitk_128x128x8_t512/")), "{cdna:?}");
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

    #[test]
    fn default_kernels_follow_the_architecture() {
        let names = |arch: &str, tiles: &[u32]| -> Vec<&str> {
            default_kernels(arch, tiles).unwrap().iter().map(|v| v.name).collect()
        };
        // Every name in the table is a kernel or a family.
        for d in ARCH_DEFAULTS {
            select_kernels(&d.kernels.iter().map(|k| k.to_string()).collect::<Vec<_>>(), &[]).unwrap();
        }
        let wave64 = [
            "double_buffer_256x128x8_t512",
            "double_buffer_128x128x8_t512",
            "splitk_128x128x8_t512",
            "streamk_128x128x8_t512",
        ];
        let cdna = names("gfx90a", &[]);
        assert!(wave64.iter().all(|k| cdna.contains(k)), "{cdna:?}");
        // The NVIDIA-tuned shapes (236-396 registers on gfx90a) are not in CDNA's default set.
        assert!(!cdna.contains(&"double_buffer") && !cdna.contains(&"double_buffer_128x256x8_t256"), "{cdna:?}");
        assert_eq!(names("gfx942", &[]), cdna);
        // NVIDIA keeps every shape of the autotuning sweep, the wave64 ones included.
        let nvidia = names("sm_90", &[]);
        assert_eq!(nvidia.len(), VARIANTS.len(), "{nvidia:?}");
        assert_eq!(names("sm_80", &[]), nvidia);
        // An architecture no row names gets the whole table; --tiles still applies.
        assert_eq!(names("gfx1100", &[]).len(), VARIANTS.len());
        let with_tiles = names("gfx90a", &[16]);
        assert!(with_tiles.contains(&"tiled_m16") && !with_tiles.contains(&"tiled_m8"), "{with_tiles:?}");
    }

    #[test]
    fn the_sweep_takes_the_devices_defaults_only_without_kernels() {
        let props = |arch: &str| crate::device::Props {
            arch: crate::device::Arch::parse(arch).unwrap(),
            ..crate::occupancy::tests::h100()
        };
        let names = |s: &MatmulSweep| s.kernels.iter().map(|v| v.name).collect::<Vec<_>>();
        let shapes = vec![Shape::square(256)];
        let mut by_arch =
            MatmulSweep::new(shapes.clone(), select_kernels(&[], &[]).unwrap(), true).with_arch_defaults(vec![]);
        by_arch.fit_to_device(&props("gfx90a"));
        assert_eq!(
            names(&by_arch),
            names(&MatmulSweep::new(shapes.clone(), default_kernels("gfx90a", &[]).unwrap(), true))
        );
        assert!(by_arch.options()["kernels"].to_string().contains("double_buffer_256x128x8_t512"));
        // Kernels named on the command line are kept on any device.
        let mut named = MatmulSweep::new(shapes, select_kernels(&["double_buffer".into()], &[]).unwrap(), true);
        named.fit_to_device(&props("gfx90a"));
        assert!(names(&named).contains(&"double_buffer"), "{:?}", names(&named));
    }

    /// The wave64 shapes fit gfx90a as promised, read from the code object that hipcc writes: at most 128
    /// VGPRs+AGPRs per lane (`.vgpr_count` counts both on gfx90a), no scratch, and at least 50% occupancy (4 of 8
    /// waves per SIMD) by the suite's calculator, registers and LDS included, for both twins. Every kernel the
    /// gfx90a default set holds beyond the seed's ladder must pass, so a shape added there later is checked too;
    /// each of the rungs double_buffer, splitk and streamk has one. And no kernel of those rungs, in any shape,
    /// needs scratch there.
    #[test]
    fn wave64_shapes_fit_the_gfx90a_register_budget() {
        use crate::kernels::{compile, metadata, sources, test_support};
        use crate::occupancy::{Profile, Resources};
        let arch = crate::device::Arch::parse("gfx90a").unwrap();
        let hipcc = test_support::compiler(crate::device::Platform::Amd);
        let bytes = compile::compile(&hipcc, sources::source("matmul").unwrap(), &arch).unwrap();
        let info = metadata::check_arch(&bytes, &arch).unwrap();
        let profile = Profile::for_arch(&arch, None).unwrap();
        let rungs = ["double_buffer", "splitk", "streamk"];
        let wave64: Vec<&Variant> =
            default_kernels("gfx90a", &[]).unwrap().into_iter().filter(|v| rungs.contains(&v.family)).collect();
        for rung in rungs {
            assert!(wave64.iter().any(|v| v.family == rung), "no wave64 shape of {rung}: {wave64:?}");
        }
        for v in VARIANTS.iter().filter(|v| v.aligned_rows && v.family != "vectorized" && v.family != "warptile") {
            for symbol in [v.symbol.to_string(), format!("{}_unaligned", v.symbol)] {
                let k = info.amd_kernel(&symbol).unwrap_or_else(|| panic!("{symbol} not in the code object"));
                assert_eq!(k.scratch_bytes, 0, "{symbol}: scratch");
            }
        }
        let twins = wave64.iter().flat_map(|v| [(*v, v.symbol.to_string()), (*v, format!("{}_unaligned", v.symbol))]);
        for (v, symbol) in twins {
            let k = info.amd_kernel(&symbol).unwrap_or_else(|| panic!("{symbol} not in the code object"));
            // On gfx90a `.vgpr_count` is the unified total: ArchVGPRs (rounded up to 4) plus AGPRs, e.g. 358 for
            // 256 + 102 in matmul_double_buffer.
            let registers = k.vgpr_count;
            assert!(k.agpr_count.unwrap_or(0) <= registers, "{symbol}: {k:?}");
            assert!(registers <= 128, "{symbol}: {} VGPRs+AGPRs per lane (AGPRs {:?})", k.vgpr_count, k.agpr_count);
            assert_eq!(k.scratch_bytes, 0, "{symbol}: scratch");
            assert_eq!(k.max_group_size, v.group[0] * v.group[1], "{symbol}: launch bounds vs VARIANTS");
            let occ = profile.occupancy(&Resources::from_amd_kernel(k)).unwrap();
            assert!(occ.percent >= 50.0, "{symbol}: {occ:?}");
        }
    }

    /// A 32×32 product of inner size `k`, inputs drawn as the experiment draws them, seeded for repeatability.
    struct Product {
        k: usize,
        a: Vec<f32>,
        b: Vec<f32>,
    }

    const SIDE: usize = 32;

    impl Product {
        fn draw(k: usize, seed: u64) -> Product {
            let mut rng = fastrand::Rng::with_seed(seed);
            let a = draw_inputs(&mut rng, SIDE * k).unwrap();
            let b = draw_inputs(&mut rng, k * SIDE).unwrap();
            Product { k, a, b }
        }

        /// C computed by `dot`, given the K products of an element in order.
        fn compute<T>(&self, dot: impl Fn(&[(f32, f32)]) -> T) -> Vec<T> {
            let mut c = Vec::new();
            for i in 0..SIDE {
                for j in 0..SIDE {
                    let terms: Vec<(f32, f32)> =
                        (0..self.k).map(|p| (self.a[i * self.k + p], self.b[p * SIDE + j])).collect();
                    c.push(dot(&terms));
                }
            }
            c
        }
    }

    /// FP32 FMA accumulation, in order: what every kernel of the ladder does for one element.
    fn sequential(terms: &[(f32, f32)]) -> f32 {
        terms.iter().fold(0.0f32, |acc, &(x, y)| x.mul_add(y, acc))
    }

    fn reversed(terms: &[(f32, f32)]) -> f32 {
        terms.iter().rev().fold(0.0f32, |acc, &(x, y)| x.mul_add(y, acc))
    }

    /// Blocks of 8 terms accumulated on their own, then the block sums pairwise: a BLAS-like order.
    fn blocked_tree(terms: &[(f32, f32)]) -> f32 {
        let mut sums: Vec<f32> = terms.chunks(8).map(sequential).collect();
        while sums.len() > 1 {
            sums = sums.chunks(2).map(|p| p.iter().sum()).collect();
        }
        sums[0]
    }

    fn exact(terms: &[(f32, f32)]) -> f64 {
        terms.iter().map(|&(x, y)| f64::from(x) * f64::from(y)).sum()
    }

    /// An f32 rounded to nearest (ties to even) at 10 mantissa bits, as TF32 keeps them.
    fn tf32(x: f32) -> f32 {
        let bits = x.to_bits();
        let lsb = (bits >> 13) & 1;
        f32::from_bits((bits + 0xfff + lsb) & !0x1fff)
    }

    const KS: [usize; 6] = [256, 512, 1024, 2048, 4096, 8192];

    #[test]
    fn tf32_rounding_keeps_ten_mantissa_bits() {
        assert_eq!(tf32(1.0), 1.0);
        assert_eq!(tf32(1.0 + 2f32.powi(-10)), 1.0 + 2f32.powi(-10));
        assert_eq!(tf32(1.0 + 2f32.powi(-12)), 1.0);
        assert_eq!(tf32(1.0 + 3.0 * 2f32.powi(-12)), 1.0 + 2f32.powi(-10));
        assert_eq!(tf32(-0.5), -0.5);
    }

    #[test]
    fn correct_fp32_products_in_any_order_pass_the_matmul_check() {
        for (seed, &k) in KS.iter().enumerate() {
            let p = Product::draw(k, seed as u64);
            let orders: [(&str, Vec<f32>); 3] = [
                ("sequential", p.compute(sequential)),
                ("reversed", p.compute(reversed)),
                ("blocked_tree", p.compute(blocked_tree)),
            ];
            let exact = p.compute(exact);
            for (name, got) in &orders {
                let v = verify::check_matmul(got, &exact, k);
                assert!(v.passed(), "{name} vs exact at K = {k}: {}", v.summary());
                for (ref_name, reference) in &orders {
                    let v = verify::check_matmul(got, reference, k);
                    assert!(v.passed(), "{name} vs {ref_name} at K = {k}: {}", v.summary());
                    // Not passing by a hair: correct products use at most half the tolerance.
                    assert!(v.max_rel_err < 0.5 * v.tolerance, "{name} vs {ref_name} at K = {k}: {}", v.max_rel_err);
                }
            }
        }
    }

    #[test]
    fn tf32_products_and_products_missing_a_term_fail_the_matmul_check() {
        for (seed, &k) in KS.iter().enumerate() {
            let p = Product::draw(k, 100 + seed as u64);
            let tf32_product = p.compute(|t| t.iter().fold(0.0f32, |acc, &(x, y)| tf32(x).mul_add(tf32(y), acc)));
            let missing_first = p.compute(|t| sequential(&t[1..]));
            let missing_middle = p.compute(|t| {
                let mut t = t.to_vec();
                t.remove(k / 2);
                sequential(&t)
            });
            let references = [
                ("exact", p.compute(exact)),
                ("blocked_tree", p.compute(blocked_tree).into_iter().map(f64::from).collect()),
            ];
            for (ref_name, reference) in &references {
                for (name, got) in
                    [("tf32", &tf32_product), ("missing k = 0", &missing_first), ("missing k = K/2", &missing_middle)]
                {
                    let v = verify::check_matmul(got, reference, k);
                    assert!(!v.passed(), "{name} passed against {ref_name} at K = {k}: worst {:e}", v.max_rel_err);
                    // Failing by a wide margin, not by luck.
                    assert!(v.max_rel_err > 4.0 * v.tolerance, "{name} vs {ref_name} at K = {k}: {}", v.max_rel_err);
                }
            }
        }
    }

    #[test]
    fn points_follow_shape_then_vendor_then_ladder_then_autotune() {
        let shapes = vec![Shape::square(256), Shape::square(512)];
        let name = |slot: Slot| match slot {
            Slot::Vendor => "vendor",
            Slot::Kernel(v) => v.name,
            Slot::Autotune => AUTOTUNE,
        };
        let order = |sweep: &MatmulSweep| -> Vec<(&str, usize)> {
            (0..shapes.len() * sweep.per_shape()).map(|i| point_kernel(sweep, i)).map(|(v, s)| (name(v), s.n)).collect()
        };
        let sweep = MatmulSweep::new(shapes.clone(), VARIANTS.iter().take(2).collect(), true).with_autotune(true);
        assert_eq!(
            order(&sweep),
            [
                ("vendor", 256),
                ("naive", 256),
                ("accumulator", 256),
                (AUTOTUNE, 256),
                ("vendor", 512),
                ("naive", 512),
                ("accumulator", 512),
                (AUTOTUNE, 512),
            ]
        );
        let plain = MatmulSweep::new(shapes.clone(), VARIANTS.iter().take(1).collect(), false);
        assert_eq!(order(&plain), [("naive", 256), ("naive", 512)]);
        assert!(MatmulSweep::default().autotune && !plain.autotune);
        assert_eq!(plain.clone().with_autotune(true).options()["autotune"], true);
    }

    #[test]
    fn size_plots_draw_each_familys_fastest_kernel_and_headlines_name_the_autotune_pick() {
        let row = |kernel: &str, n: u32, gflops: f64, pick: &str| -> BTreeMap<String, String> {
            [
                ("platform", "nvidia"),
                ("device", "Test GPU"),
                ("arch", "sm_90"),
                ("wave_size", "32"),
                ("kernel", kernel),
                ("tile_m", ""),
                ("pick", pick),
                ("status", "ok"),
            ]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .chain(["m", "n", "k"].iter().map(|c| (c.to_string(), n.to_string())))
            .chain([("gflops".to_string(), gflops.to_string())])
            .collect()
        };
        let rows = vec![
            row("cublas", 512, 2000.0, ""),
            row("double_buffer", 512, 300.0, ""),
            row("double_buffer_64x128x8_t128", 512, 700.0, ""),
            row("splitk_128x64x16_t128", 512, 1800.0, ""),
            row(AUTOTUNE, 512, 1850.0, "splitk_128x64x16_t128"),
            row("cublas", 1024, 4000.0, ""),
            row("double_buffer", 1024, 3500.0, ""),
            row("double_buffer_64x128x8_t128", 1024, 3000.0, ""),
        ];
        let plots = plots(&rows);
        let by_size = &plots[0].1;
        let series = |label: &str| by_size.series.iter().find(|s| s.label == label).map(|s| s.points.clone());
        // double_buffer's line takes the faster shape at each size.
        assert_eq!(series("double_buffer (best of 2)"), Some(vec![(512.0, 700.0), (1024.0, 3500.0)]));
        // A family with one kernel in the CSV is labelled by that kernel.
        assert_eq!(series("splitk_128x64x16_t128"), Some(vec![(512.0, 1800.0)]));
        assert_eq!(series(AUTOTUNE), Some(vec![(512.0, 1850.0)]));
        assert_eq!(by_size.series.iter().filter(|s| s.kind == SeriesKind::Line).count(), 3);
        assert_eq!(
            headlines(&rows)[1],
            "512: best kernel autotune (splitk_128x64x16_t128) 1850 GFLOP/s = 0.93 of the vendor BLAS (2000 GFLOP/s)"
        );
    }

    #[test]
    fn plots_come_from_csv_rows() {
        let row = |kernel: &str, tile: &str, n: u32, gflops: f64| {
            let mut r = BTreeMap::new();
            for (k, v) in [
                ("platform", "nvidia".to_string()),
                ("device", "Test GPU".into()),
                ("arch", "sm_90".into()),
                ("wave_size", "32".into()),
                ("kernel", kernel.into()),
                ("tile_m", tile.into()),
                ("m", n.to_string()),
                ("n", n.to_string()),
                ("k", n.to_string()),
                ("gflops", gflops.to_string()),
                ("status", "ok".into()),
            ] {
                r.insert(k.to_string(), v);
            }
            r
        };
        let rows = vec![
            row("cublas", "", 256, 1000.0),
            row("naive", "", 256, 100.0),
            row("tiled_m16", "16", 256, 400.0),
            row("tiled_m32", "32", 256, 500.0),
            row("cublas", "", 512, 2000.0),
            row("naive", "", 512, 100.0),
        ];
        assert_eq!(
            headlines(&rows),
            [
                "cuBLAS SGEMM uses the FP32 vector units (the suite pins CUBLAS_DEFAULT_MATH: no TF32); the hand \
                 kernels use FMA on the vector units",
                "256: best kernel tiled_m32 500 GFLOP/s = 0.50 of the vendor BLAS (1000 GFLOP/s)",
                "512: best kernel naive 100 GFLOP/s = 0.05 of the vendor BLAS (2000 GFLOP/s)",
            ]
        );
        let plots = plots(&rows);
        let files: Vec<&str> = plots.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(files, ["matmul-gflops-vs-size.png", "matmul-gflops-vs-tile.png", "matmul-percent-of-vendor.png"]);
        let by_size = &plots[0].1;
        assert!(by_size.title.contains("Test GPU (sm_90, warp32)"));
        let cublas = by_size.series.iter().find(|s| s.label == "cuBLAS").unwrap();
        assert_eq!(cublas.kind, SeriesKind::Reference);
        assert_eq!(cublas.points, [(256.0, 1000.0), (512.0, 2000.0)]);
        let percent = &plots[2].1;
        let naive = percent.series.iter().find(|s| s.label == "naive").unwrap();
        assert_eq!(naive.points, [(256.0, 10.0), (512.0, 5.0)]);
        assert_eq!(plots[1].1.series[0].points, [(16.0, 400.0), (32.0, 500.0)]);
        // Every plot says what the vendor BLAS runs on: on NVIDIA the vector units, as the hand kernels.
        let note = percent.note.as_deref().unwrap();
        assert!(note.starts_with("cuBLAS SGEMM uses the FP32 vector units"), "{note}");
        let mut amd: Vec<_> = rows.clone();
        for r in &mut amd {
            r.insert("platform".into(), "amd".into());
            r.insert("arch".into(), "gfx90a".into());
            r.insert("fp32_vector_peak_tflops".into(), "23.9".into());
            r.insert("fp32_matrix_peak_tflops".into(), "47.9".into());
        }
        let note = super::plots(&amd)[0].1.note.clone().unwrap();
        assert!(note.contains("MFMA") && note.contains("FP32 peaks: vector 23.9 TFLOP/s, matrix 47.9"), "{note}");
    }
}
