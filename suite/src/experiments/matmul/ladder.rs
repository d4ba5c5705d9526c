//! The kernel ladder as data: every kernel of `kernels/matmul.hip` with its launch geometry, size requirements and
//! schedule ([`VARIANTS`]), how it runs at a shape ([`Variant::plan`]), the per-architecture default sets
//! ([`ARCH_DEFAULTS`]) and the selection `--kernels` and `--tiles` make ([`select_kernels`]).

use serde::Serialize;

use super::shape::Shape;
use crate::options::Memory;

/// The reference kernel (`kernels/matmul.hip`): FP64 accumulation in 16×16 tiles. It runs at every shape, so its
/// grid bounds every point ([`point_problem`]), and every point is checked against its result.
pub(super) const REFERENCE_SYMBOL: &str = "matmul_reference_f64";

/// Rows and columns of C one group of the reference kernel computes.
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
    pub(super) fn tiles(&self, shape: Shape) -> (u64, u64) {
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

/// Why a point at `shape` cannot run on a device with `memory` and groups of at most `max_group_size` items: sizes
/// the kernels cannot index or launch (the reference kernel's grid, and for a kernel, `variant`, its own), byte
/// counts that overflow, memory that is not there (the point's matrices plus `workspace_bytes` on the device), and
/// the kernel's own size requirements. `None`: the point is valid. Needs no GPU.
pub fn point_problem(
    shape: Shape,
    variant: Option<&Variant>,
    max_group_size: u32,
    memory: &Memory,
    workspace_bytes: u64,
) -> Option<String> {
    // The reference kernel runs at every shape; a kernel point also launches its own grid.
    shape
        .size_problem()
        .or_else(|| shape.grid_problem(REFERENCE_SYMBOL, [REFERENCE_TILE, REFERENCE_TILE]))
        .or_else(|| variant.and_then(|v| shape.grid_problem(v.symbol, v.block)))
        .or_else(|| shape.memory_problem(memory, workspace_bytes))
        .or_else(|| {
            let v = variant?;
            let items = v.group[0] * v.group[1];
            v.check(shape).or_else(|| {
                (items > max_group_size)
                    .then(|| format!("{} uses groups of {items} items; the device allows {max_group_size}", v.name))
            })
        })
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

/// The `--kernels` names of `arch`'s default set (see [`ARCH_DEFAULTS`]); none (every kernel) where no row matches.
pub fn default_names(arch: &str) -> &'static [&'static str] {
    ARCH_DEFAULTS.iter().find(|d| d.arch_prefixes.iter().any(|p| arch.starts_with(p))).map_or(&[], |d| d.kernels)
}

/// The default kernels for `arch` (see [`ARCH_DEFAULTS`]), restricted to the tile sizes `tiles` (all if empty).
pub fn default_kernels(arch: &str, tiles: &[u32]) -> Result<Vec<&'static Variant>, crate::options::Error> {
    select_kernels(&owned(default_names(arch)), tiles)
}

/// Names as `--kernels` holds them.
pub fn owned(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
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
    Ok(selected(names, tiles))
}

/// The kernels `names` select, in ladder order, unchecked: a kernel by its name, or a family's kernels within the
/// tile sizes `tiles` (all if empty); every kernel within `tiles` if `names` is empty. A name or tile size no kernel
/// has selects nothing ([`select_kernels`] refuses them).
pub fn selected(names: &[String], tiles: &[u32]) -> Vec<&'static Variant> {
    let tile_ok = |v: &Variant| v.tile_m.is_none_or(|m| tiles.is_empty() || tiles.contains(&m));
    if names.is_empty() {
        return VARIANTS.iter().filter(|v| tile_ok(v)).collect();
    }
    VARIANTS.iter().filter(|v| names.iter().any(|n| n == v.name || (n == v.family && tile_ok(v)))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::matmul::shape::KERNEL_DIM_MAX;
    use crate::options::{MAX_GROUPS_X, MAX_GROUPS_YZ};

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

    /// The wave64 shapes fit gfx90a as promised, read from the code object that hipcc writes: at most 128
    /// VGPRs+AGPRs per lane (`.vgpr_count` counts both on gfx90a), no scratch, and at least 50% occupancy (4 of 8
    /// waves per SIMD) by the suite's calculator, registers and LDS included, for both twins. Every kernel the
    /// gfx90a default set holds beyond the seed's ladder must pass, so a shape added there later is checked too;
    /// each of the rungs double_buffer, splitk and streamk has one. And no kernel of those rungs, in any shape,
    /// needs scratch there.
    #[test]
    fn wave64_shapes_fit_the_gfx90a_register_budget() {
        use crate::code_objects::{compile, metadata, sources, test_support};
        use crate::occupancy_calculator::{Profile, Resources};
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
            let problem = point_problem(shape, variant, 1024, &memory, workspace);
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
    }
}
