//! The ladder's rows as data: every kernel of `kernels/matmul.hip` and `kernels/matmul_dmma.hip` with its launch
//! geometry, schedule, precisions, unit and where it exists ([`VARIANTS`]), and the default sets per architecture and
//! precision ([`ARCH_DEFAULTS`]). The types and what is done with them are in `ladder.rs`.

use super::ladder::{ArchKernels, Arith, Exists, Instance, Schedule, Variant, ANY};

/// Why the ACC = 128 shapes have no FP64 instance.
const F64_ACC128: &str = "128 FP64 accumulators per item are 256 registers before any operand (nvcc 13 spills 3.3 KB \
                          per item on sm_90, hipcc 0.7-1.4 KB of scratch on gfx90a); the FP64 rung runs in the ACC 64 \
                          and 32 shapes";
/// Why the BK = 16, ACC = 64 shapes have none.
const F64_LDS: &str = "two FP64 slabs of BK = 16 take 48.3 KiB of LDS per group (64.3 for 128x128), over the 48 KiB \
                       of static shared memory NVIDIA allows a group; the FP64 rung runs in the BK = 8 shapes";
/// Why the ACC = 96 shapes (tiles of three sub-tiles) have none.
const F64_ACC96: &str = "96 FP64 accumulators per item are 192 registers before any operand, and two FP64 slabs of \
                         BK = 16 take 56.3 KiB of LDS, over the 48 KiB of static shared memory NVIDIA allows a group";
/// Why the 512-item wave64 shapes have none.
const F64_WAVE64: &str = "a wave64 shape exists for 4 waves per SIMD within 128 VGPRs on gfx90a, which FP64 cannot \
                          keep (twice the registers per accumulator: it spills there or under NVIDIA's 128 registers \
                          per item at 512 items); the 128- and 256-item FP64 shapes serve gfx90a";
/// Why the DMMA rung has no FP32 instance.
const DMMA_NO_F32: &str = "the FP64 tensor cores (DMMA) take FP64 only, and NVIDIA has no FP32 matrix path at FP32 \
                           precision (its tensor cores take TF32, another precision): the FP32 ladder on NVIDIA stays \
                           on the vector units";
/// Where the DMMA rung exists.
const DMMA_EXISTS: Exists = Exists::NvidiaFrom {
    sm: 80,
    why_not: "mma.sync .f64 (NVIDIA's FP64 tensor cores) exists from sm_80 on; on AMD the matrix rung is MFMA",
};

/// Where the MFMA rung exists.
const MFMA_EXISTS: Exists = Exists::Archs {
    prefixes: &["gfx90a", "gfx94"],
    why_not: "MFMA (v_mfma_f32_32x32x2f32, v_mfma_f64_16x16x4f64) exists on CDNA2/3 only (gfx90a, gfx94x); on NVIDIA \
              the FP64 matrix rung is dmma, and NVIDIA has no FP32 matrix path at FP32 precision",
};
/// Why the 256-item MFMA shape has no FP64 instance.
const MFMA_F64_SHAPE: &str = "its 64x64 wave tiles would hold 128 FP64 accumulators per lane, half the occupancy: the \
                              FP64 MFMA rung is mfma_128x128x8_t512 (v_mfma_f64_16x16x4f64, 8 waves of 64x32)";
/// Why the 512-item MFMA shape has no FP32 instance.
const MFMA_F32_SHAPE: &str = "the FP32 MFMA rung is mfma_128x128x8_t256 (v_mfma_f32_32x32x2f32, 4 waves of 64x64), \
                              which issues half the instructions for the same operand traffic";

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
    fp32_only(
        wave("double_buffer", "double_buffer", "matmul_double_buffer", 256, [128, 256, 8], Schedule::Tiles),
        F64_ACC128,
    ),
    fp32_only(
        wave(
            "double_buffer_128x256x8_t256",
            "double_buffer",
            "matmul_double_buffer_128x256x8_t256",
            256,
            [256, 128, 8],
            Schedule::Tiles,
        ),
        F64_ACC128,
    ),
    wave(
        "double_buffer_128x128x8_t256",
        "double_buffer",
        "matmul_double_buffer_128x128x8_t256",
        256,
        [128, 128, 8],
        Schedule::Tiles,
    ),
    fp32_only(
        wave(
            "double_buffer_128x128x16_t256",
            "double_buffer",
            "matmul_double_buffer_128x128x16_t256",
            256,
            [128, 128, 16],
            Schedule::Tiles,
        ),
        F64_LDS,
    ),
    fp32_only(
        wave(
            "double_buffer_64x128x16_t128",
            "double_buffer",
            "matmul_double_buffer_64x128x16_t128",
            128,
            [128, 64, 16],
            Schedule::Tiles,
        ),
        F64_LDS,
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
    // Tiles of three sub-tiles (ACC 96): a side of 96 or 192 covered exactly, for skinny and flat products.
    fp32_only(
        unpacked(wave(
            "double_buffer_128x96x16_t128",
            "double_buffer",
            "matmul_double_buffer_128x96x16_t128",
            128,
            [96, 128, 16],
            Schedule::Tiles,
        )),
        F64_ACC96,
    ),
    fp32_only(
        wave(
            "double_buffer_96x128x16_t128",
            "double_buffer",
            "matmul_double_buffer_96x128x16_t128",
            128,
            [128, 96, 16],
            Schedule::Tiles,
        ),
        F64_ACC96,
    ),
    // Wave64 shapes: at most 128 VGPRs+AGPRs and no scratch on gfx90a (4 waves per SIMD), LDS for 16 waves per CU.
    fp32_only(
        wave(
            "double_buffer_256x128x8_t512",
            "double_buffer",
            "matmul_double_buffer_256x128x8_t512",
            512,
            [128, 256, 8],
            Schedule::Tiles,
        ),
        F64_WAVE64,
    ),
    fp32_only(
        wave(
            "double_buffer_128x128x8_t512",
            "double_buffer",
            "matmul_double_buffer_128x128x8_t512",
            512,
            [128, 128, 8],
            Schedule::Tiles,
        ),
        F64_WAVE64,
    ),
    // Split-K: more groups for sizes too small to fill the device; the last of the wave64 shapes fits gfx90a.
    fp32_only(
        wave("splitk_128x64x16_t128", "splitk", "matmul_splitk_128x64x16_t128", 128, [64, 128, 16], Schedule::SplitK),
        F64_LDS,
    ),
    fp32_only(
        wave("splitk_64x128x16_t128", "splitk", "matmul_splitk_64x128x16_t128", 128, [128, 64, 16], Schedule::SplitK),
        F64_LDS,
    ),
    wave("splitk_64x128x8_t128", "splitk", "matmul_splitk_64x128x8_t128", 128, [128, 64, 8], Schedule::SplitK),
    fp32_only(
        wave("splitk_128x128x8_t128", "splitk", "matmul_splitk_128x128x8_t128", 128, [128, 128, 8], Schedule::SplitK),
        F64_ACC128,
    ),
    // Tiles of three sub-tiles, split (ACC 96).
    fp32_only(
        unpacked(wave(
            "splitk_64x96x16_t64",
            "splitk",
            "matmul_splitk_64x96x16_t64",
            64,
            [96, 64, 16],
            Schedule::SplitK,
        )),
        F64_ACC96,
    ),
    fp32_only(
        wave("splitk_96x128x16_t128", "splitk", "matmul_splitk_96x128x16_t128", 128, [128, 96, 16], Schedule::SplitK),
        F64_ACC96,
    ),
    fp32_only(
        wave("splitk_128x128x8_t512", "splitk", "matmul_splitk_128x128x8_t512", 512, [128, 128, 8], Schedule::SplitK),
        F64_WAVE64,
    ),
    // Split-K with atomic adds into C: what determinism costs.
    fp32_only(
        wave(
            "splitk_atomic_64x128x16_t128",
            "splitk_atomic",
            "matmul_splitk_atomic_64x128x16_t128",
            128,
            [128, 64, 16],
            Schedule::SplitKAtomic,
        ),
        F64_LDS,
    ),
    // Stream-K: one group per resident slot, equal shares of all slabs; the last shape fits gfx90a.
    fp32_only(
        wave(
            "streamk_128x128x8_t128",
            "streamk",
            "matmul_streamk_128x128x8_t128",
            128,
            [128, 128, 8],
            Schedule::StreamK,
        ),
        F64_ACC128,
    ),
    fp32_only(
        wave("streamk_64x128x8_t128", "streamk", "matmul_streamk_64x128x8_t128", 128, [128, 64, 8], Schedule::StreamK),
        "stream-K's bookkeeping next to 128 registers of FP64 accumulators spills on sm_90 (nvcc 13: 88 B per item, \
         252 B unaligned); the FP64 stream-K rung runs in streamk_64x64x16_t128",
    ),
    wave("streamk_64x64x16_t128", "streamk", "matmul_streamk_64x64x16_t128", 128, [64, 64, 16], Schedule::StreamK),
    fp32_only(
        wave(
            "streamk_128x128x8_t512",
            "streamk",
            "matmul_streamk_128x128x8_t512",
            512,
            [128, 128, 8],
            Schedule::StreamK,
        ),
        F64_WAVE64,
    ),
    // The matrix rung on NVIDIA: FP64 on the tensor cores (kernels/matmul_dmma.hip), in the three shapes of its first
    // measurements and a 32-row one for skinny M; each splits K (S > 1: its `_split` instance); the autotune step
    // picks among them and their split counts per size. Dynamic LDS: its static_asserts there.
    dmma("dmma_128x128x16_t256", "matmul_dmma_128x128x16_t256", 256, [128, 128, 16], 112_128),
    dmma("dmma_128x64x16_t128", "matmul_dmma_128x64x16_t128", 128, [64, 128, 16], 87_552),
    dmma("dmma_64x64x16_t128", "matmul_dmma_64x64x16_t128", 128, [64, 64, 16], 75_776),
    // Skinny M (M a multiple of 32 under 128, e.g. 96: no idle rows).
    dmma("dmma_32x128x16_t128", "matmul_dmma_32x128x16_t128", 128, [128, 32, 16], 66_048),
    // The matrix rung on AMD: MFMA on CDNA2/3 (kernels/matmul.hip, section 11), one shape per precision (FP64's
    // accumulators take twice the registers, so its waves own half the tile). Compiled and checked statically and on
    // the CPU emulation; not run on AMD hardware.
    mfma("mfma_128x128x8_t256", "matmul_mfma_128x128x8_t256", 256, Instance::Yes, Instance::No(MFMA_F64_SHAPE)),
    mfma("mfma_128x128x8_t512", "matmul_mfma_128x128x8_t512", 512, Instance::No(MFMA_F32_SHAPE), Instance::Yes),
];

/// The seed's ladder and the single-shape register-blocked kernels: every architecture runs them.
macro_rules! ladder {
    ($($more:literal),* $(,)?) => {
        &["naive", "accumulator", "tiled", "blocktile_1d", "blocktile_2d", "vectorized", "warptile", $($more),*]
    };
}

/// Per-architecture default kernels, per precision, as data. Architectures no row matches get the whole table.
pub const ARCH_DEFAULTS: &[ArchKernels] = &[
    ArchKernels {
        arch_prefixes: &["gfx90", "gfx94", "gfx95"],
        kernels: ladder![
            "double_buffer_256x128x8_t512",
            "double_buffer_128x128x8_t512",
            "splitk_128x128x8_t512",
            "streamk_128x128x8_t512",
            "mfma_128x128x8_t256",
        ],
        f64_kernels: ladder![
            "double_buffer_128x128x8_t256",
            "double_buffer_64x128x8_t128",
            "double_buffer_32x64x16_t64",
            "splitk_64x128x8_t128",
            "streamk_64x64x16_t128",
            "dmma",
            "mfma_128x128x8_t512",
        ],
        why: "CDNA (wave64, 512 VGPRs+AGPRs per lane per SIMD): the shapes tuned on NVIDIA take 236-396 registers \
              there in FP32 (1-2 waves per SIMD); the wave64 shapes of double_buffer, splitk and streamk stay within \
              128 (4+ waves per SIMD); the MFMA rung in each precision's shape. FP64: the shapes with an FP64 \
              instance (the wave64 ones have none), and the DMMA rung's row, which says that AMD's matrix rung is \
              MFMA. (On a device, the set is chosen from the code object built: fit.rs; this list is the fallback \
              where no metadata can be read, e.g. when planning without a device)",
    },
    ArchKernels {
        arch_prefixes: &["sm_"],
        kernels: ladder!["double_buffer", "splitk", "splitk_atomic", "streamk", "dmma", "mfma"],
        f64_kernels: ladder!["double_buffer", "splitk", "splitk_atomic", "streamk", "dmma", "mfma"],
        why: "NVIDIA (warp32, 255 registers per thread): every shape of double_buffer, splitk, splitk_atomic and \
              streamk (in FP64 the shapes without an FP64 instance are rows that say why), the DMMA rung (in FP32 \
              one row per size saying NVIDIA has no FP32 matrix path) and the MFMA rung's row per size, which \
              says that MFMA is AMD's",
    },
];

/// A kernel of the seed's first steps: 16×16 items, one element of C each, any size.
const fn simple(name: &'static str, symbol: &'static str, zero_c: bool) -> Variant {
    Variant {
        name,
        family: name,
        symbol,
        source: "matmul",
        tile_m: None,
        group: [16, 16],
        block: [16, 16],
        slab_k: 1,
        zero_c,
        multiples: ANY,
        aligned_rows: false,
        packed_twin: false,
        schedule: Schedule::Tiles,
        f32: Instance::Yes,
        f64: Instance::Yes,
        arith: Arith::Fma { packs_fp32_on_cdna: false },
        exists: Exists::Everywhere,
        dynamic_lds_bytes: 0,
    }
}

const fn tiled(name: &'static str, symbol: &'static str, m: u32) -> Variant {
    Variant { family: "tiled", tile_m: Some(m), group: [m, m], block: [m, m], slab_k: m, ..simple(name, symbol, false) }
}

/// A register-blocked kernel: a 1-D group of `items` computing a [BN, BM] tile of C, K in slabs of BK
/// (`tile` = [BN, BM, BK]). clang pairs its FP32 FMAs into v_pk_fma_f32 on CDNA (a test reads the gfx90a code).
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
        family,
        group: [items, 1],
        block: [tile[0], tile[1]],
        slab_k: tile[2],
        aligned_rows,
        schedule,
        arith: Arith::Fma { packs_fp32_on_cdna: true },
        ..simple(name, symbol, false)
    }
}

/// A wave-tiled kernel (8 on): 16-byte accesses with an `_unaligned` twin, and in FP32 a `_packed` one (not the
/// atomic split-K kernel, which is there to measure what determinism costs).
const fn wave(
    name: &'static str,
    family: &'static str,
    symbol: &'static str,
    items: u32,
    tile: [u32; 3],
    schedule: Schedule,
) -> Variant {
    let packed_twin = !matches!(schedule, Schedule::SplitKAtomic);
    Variant { packed_twin, ..regblock(name, family, symbol, items, tile, true, schedule) }
}

/// `v` without a `_packed` twin: the 96-wide shapes, whose three realigned C quads per row spill (nvcc 13.5, sm_90:
/// 496 B per item as 128x96, 856 B split as 64x96), so their unaligned rows run the `_unaligned` twin.
const fn unpacked(v: Variant) -> Variant {
    Variant { packed_twin: false, ..v }
}

/// `v` without an FP64 instance, for the reason `why`.
const fn fp32_only(v: Variant, why: &'static str) -> Variant {
    Variant { f64: Instance::No(why), ..v }
}

/// A shape of the DMMA rung (FP64 only, NVIDIA sm_80+, `kernels/matmul_dmma.hip`): one group per tile and split of
/// K, tiles in the order of a 1-D grid, splits along y; `lds` bytes of dynamic shared memory.
const fn dmma(name: &'static str, symbol: &'static str, items: u32, tile: [u32; 3], lds: u32) -> Variant {
    Variant {
        family: "dmma",
        source: "matmul_dmma",
        group: [items, 1],
        block: [tile[0], tile[1]],
        slab_k: tile[2],
        aligned_rows: true,
        schedule: Schedule::GroupedSplitK,
        f32: Instance::No(DMMA_NO_F32),
        arith: Arith::Matrix,
        exists: DMMA_EXISTS,
        dynamic_lds_bytes: lds,
        ..simple(name, symbol, false)
    }
}

/// A shape of the MFMA rung (AMD CDNA2/3, `kernels/matmul.hip` section 11): a 1-D group of `items` per 128x128 tile
/// of C in slabs of 8, any size (scalar loads, guarded), with its instance in each precision.
const fn mfma(name: &'static str, symbol: &'static str, items: u32, f32: Instance, f64: Instance) -> Variant {
    Variant {
        family: "mfma",
        group: [items, 1],
        block: [128, 128],
        slab_k: 8,
        f32,
        f64,
        arith: Arith::Matrix,
        exists: MFMA_EXISTS,
        ..simple(name, symbol, false)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::OnceLock;

    use super::*;
    use crate::code_objects::{self, test_support, KernelStore};
    use crate::device::{Arch, Platform};
    use crate::experiments::matmul::ladder::SPLIT_SUFFIX;
    use crate::experiments::matmul::selection::{default_kernels, select_kernels};
    use crate::precision::Precision;
    use crate::static_inspection::{self, Row, Target};

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
            // Only the wave-tiled and DMMA kernels split K, stream or order tiles, and they all have twins.
            assert!(v.schedule == Schedule::Tiles || v.aligned_rows, "{}", v.name);
            // The shape in the name is the shape in the table: <BM>x<BN>x<BK>_t<items>.
            if let Some(dims) = v.name.split('_').find(|p| p.matches('x').count() == 2) {
                let want = format!("{}x{}x{}", v.block[1], v.block[0], v.slab_k);
                assert_eq!(dims, want, "{}", v.name);
                assert!(v.name.ends_with(&format!("_t{items}")), "{}", v.name);
            }
            // Each kernel has at least one precision, and a reason for a precision it lacks.
            assert!(v.f32 == Instance::Yes || v.f64 == Instance::Yes, "{}", v.name);
            for i in [v.f32, v.f64] {
                if let Instance::No(why) = i {
                    assert!(why.len() > 40, "{}: say why: {why}", v.name);
                }
            }
            // Dynamic LDS only where the kernel takes it: the DMMA rung.
            assert_eq!(v.dynamic_lds_bytes > 0, v.family == "dmma", "{}", v.name);
        }
        // Names are keys of CSV rows and CLI values: no two kernels may share one (dedup alone would only catch
        // neighbours).
        let unique: std::collections::BTreeSet<&str> = VARIANTS.iter().map(|v| v.name).collect();
        assert_eq!(unique.len(), VARIANTS.len());
    }

    #[test]
    fn default_kernels_follow_the_architecture_and_precision() {
        let names = |arch: &str, p: Precision, tiles: &[u32]| -> Vec<&str> {
            default_kernels(arch, p, tiles).unwrap().iter().map(|v| v.name).collect()
        };
        let (f32, f64) = (Precision::F32, Precision::F64);
        // Every name in the table is a kernel or a family.
        for d in ARCH_DEFAULTS {
            for set in [d.kernels, d.f64_kernels] {
                select_kernels(&set.iter().map(|k| k.to_string()).collect::<Vec<_>>(), &[]).unwrap();
            }
        }
        let wave64 = [
            "double_buffer_256x128x8_t512",
            "double_buffer_128x128x8_t512",
            "splitk_128x128x8_t512",
            "streamk_128x128x8_t512",
        ];
        let cdna = names("gfx90a", f32, &[]);
        assert!(wave64.iter().all(|k| cdna.contains(k)), "{cdna:?}");
        assert!(cdna.contains(&"mfma_128x128x8_t256") && !cdna.contains(&"mfma_128x128x8_t512"), "{cdna:?}");
        // The NVIDIA-tuned shapes (236-396 registers on gfx90a) are not in CDNA's default set.
        assert!(!cdna.contains(&"double_buffer") && !cdna.contains(&"double_buffer_128x256x8_t256"), "{cdna:?}");
        assert_eq!(names("gfx942", f32, &[]), cdna);
        // CDNA's FP64 set: its rungs in shapes with an FP64 instance, each rung present.
        let cdna64 = names("gfx90a", f64, &[]);
        for family in ["double_buffer", "splitk", "streamk", "dmma", "mfma"] {
            assert!(cdna64.iter().any(|n| n.starts_with(family)), "{family}: {cdna64:?}");
        }
        // NVIDIA keeps every shape of the autotuning sweep, the wave64 ones included, and the DMMA rung, in both.
        let nvidia = names("sm_90", f32, &[]);
        assert_eq!(nvidia.len(), VARIANTS.len(), "{nvidia:?}");
        assert_eq!(names("sm_90", f64, &[]), nvidia);
        assert_eq!(names("sm_80", f32, &[]), nvidia);
        // An architecture no row names gets the whole table; --tiles still applies.
        assert_eq!(names("gfx1100", f32, &[]).len(), VARIANTS.len());
        let with_tiles = names("gfx90a", f32, &[16]);
        assert!(with_tiles.contains(&"tiled_m16") && !with_tiles.contains(&"tiled_m8"), "{with_tiles:?}");
    }

    /// The kernels of `kernels/matmul.hip` and `kernels/matmul_dmma.hip` compiled for one target with the node's
    /// compiler, each kernel's resources (as `suite kernels inspect` reads them) and, for AMD, the disassembly of
    /// each kernel. Compiled once per test binary: each build takes about a minute.
    struct Built {
        rows: Vec<Row>,
        /// AMD: kernel name → its instructions' mnemonics, in order.
        code: BTreeMap<String, Vec<String>>,
    }

    fn built(arch: &str) -> &'static Built {
        static GFX90A: OnceLock<Built> = OnceLock::new();
        static SM90: OnceLock<Built> = OnceLock::new();
        static SM80: OnceLock<Built> = OnceLock::new();
        let cell = match arch {
            "gfx90a" => &GFX90A,
            "sm_90" => &SM90,
            "sm_80" => &SM80,
            other => panic!("no build for {other}"),
        };
        cell.get_or_init(|| build(arch))
    }

    fn build(arch: &str) -> Built {
        let arch = Arch::parse(arch).unwrap();
        let platform = arch.platform();
        let compiler = test_support::compiler(platform);
        let cuobjdump = (platform == Platform::Nvidia).then(|| {
            static_inspection::find_cuobjdump(Some(&compiler.path))
                .unwrap_or_else(|| panic!("this test needs cuobjdump: pip install nvidia-cuda-cuobjdump"))
        });
        let cache = tempfile::tempdir().unwrap();
        let store = KernelStore::with_cache_dir(None, cache.path().to_path_buf()).with_compiler(compiler);
        let sources = [code_objects::source("matmul").unwrap(), code_objects::source("matmul_dmma").unwrap()];
        let target = Target { arch: arch.clone(), wave64: false };
        let rows = static_inspection::rows(&store, &target, &sources, cuobjdump.as_deref()).unwrap();
        let mut code = BTreeMap::new();
        if platform == Platform::Amd {
            let objdump = test_support::tool(&["llvm-objdump-15", "llvm-objdump"]);
            let bytes = store.code_object(sources[0], &arch).unwrap().bytes;
            let elf = code_objects::bundle::amd_objects(&bytes).ok().and_then(|o| o.first().map(|(_, e)| e.to_vec()));
            let path = cache.path().join("matmul.gfx90a.o");
            std::fs::write(&path, elf.unwrap_or(bytes)).unwrap();
            let out = std::process::Command::new(objdump).arg("-d").arg(&path).output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let mut current: Option<String> = None;
            for line in String::from_utf8_lossy(&out.stdout).lines() {
                if let Some(name) = line.strip_suffix(">:").and_then(|l| l.split_once(" <")).map(|(_, n)| n) {
                    current = Some(name.to_string());
                } else if let (Some(name), Some(op)) = (&current, line.split_whitespace().next()) {
                    code.entry(name.clone()).or_insert_with(Vec::new).push(op.to_string());
                }
            }
        }
        Built { rows, code }
    }

    /// Every instance the table names, in every precision, is in the code object of every architecture it exists
    /// on (hipcc for gfx90a, nvcc for sm_90 and sm_80), with its `_unaligned` and `_packed` twins where it has them (and
    /// no `_packed` kernel the table does not name); no FP64 kernel
    /// is there that the table does not name; and the FP32 kernels keep the symbols they had before FP64 existed.
    #[test]
    fn every_instance_the_table_names_is_compiled_and_only_those() {
        for arch in ["gfx90a", "sm_90", "sm_80"] {
            let names: std::collections::BTreeSet<&str> = built(arch).rows.iter().map(|r| r.kernel.as_str()).collect();
            let mut named = std::collections::BTreeSet::new();
            for v in VARIANTS {
                for precision in Precision::ALL {
                    let base = match precision {
                        Precision::F32 => v.symbol.to_string(),
                        Precision::F64 => format!("{}_f64", v.symbol),
                    };
                    let mut twins: Vec<String> = if v.aligned_rows {
                        vec![base.clone(), format!("{base}_unaligned")]
                    } else {
                        vec![base.clone()]
                    };
                    if v.schedule == Schedule::GroupedSplitK {
                        twins.extend(twins.clone().iter().map(|s| format!("{s}{SPLIT_SUFFIX}")));
                    }
                    if v.packed_twin && precision == Precision::F32 {
                        twins.push(format!("{base}_packed"));
                    }
                    let present = v.problem_on(precision, arch).is_none();
                    for symbol in twins {
                        assert_eq!(names.contains(symbol.as_str()), present, "{arch}: {symbol}");
                        named.insert(symbol);
                    }
                }
            }
            for kernel in names.iter().filter(|k| k.ends_with("_packed")) {
                assert!(named.contains(*kernel), "{arch}: {kernel} is compiled but not in VARIANTS");
            }
            for kernel in names.iter().filter(|k| k.contains("_f64")) {
                let reference =
                    ["matmul_reference_f64", "matmul_reference_dot2_f64", "matmul_splitk_reduce_f64"].contains(kernel);
                assert!(reference || named.contains(*kernel), "{arch}: {kernel} is compiled but not in VARIANTS");
            }
            // The FP32 symbols of issue 24's ladder, unchanged.
            for symbol in ["matmul_naive", "matmul_tiled_m32", "matmul_double_buffer", "matmul_streamk_128x128x8_t512"]
            {
                assert!(names.contains(symbol), "{arch}: {symbol}");
            }
        }
    }

    /// No FP64 instance spills (the reason FP64 shapes were chosen as they were): no scratch on gfx90a (code-object
    /// metadata), no local memory or stack on sm_90 and sm_80 (cuobjdump).
    #[test]
    fn no_fp64_instance_spills() {
        for arch in ["gfx90a", "sm_90", "sm_80"] {
            let rows = &built(arch).rows;
            let fp64: Vec<&Row> =
                rows.iter().filter(|r| r.kernel.contains("_f64") && r.kernel != "matmul_reference_f64").collect();
            assert!(fp64.len() >= 20, "{arch}: {} FP64 kernels", fp64.len());
            for r in fp64 {
                assert_eq!(r.scratch_bytes, 0, "{arch}: {} spills ({} registers)", r.kernel, r.registers);
            }
        }
    }

    /// The unit the table claims for FP32 on CDNA: every kernel it says clang packs has `v_pk_fma_f32` in its gfx90a
    /// code, and every other FMA kernel has none (so a row's `packed` unit is read from the code, not assumed).
    #[test]
    fn packed_fma_on_gfx90a_is_where_the_table_says() {
        let code = &built("gfx90a").code;
        for v in VARIANTS.iter().filter(|v| v.f32 == Instance::Yes) {
            let Arith::Fma { packs_fp32_on_cdna } = v.arith else { continue };
            let ops = code.get(v.symbol).unwrap_or_else(|| panic!("{} not disassembled", v.symbol));
            let packed = ops.iter().filter(|op| *op == "v_pk_fma_f32").count();
            assert_eq!(packed > 0, packs_fp32_on_cdna, "{}: {packed} v_pk_fma_f32", v.symbol);
        }
    }

    /// The DMMA rung's tile order, by which the reduction kernel finds its tiles, is the source's.
    #[test]
    fn dmma_group_m_matches_the_source() {
        let text = code_objects::source("matmul_dmma").unwrap().text;
        let line = format!("constexpr int DMMA_GROUP_M = {};", crate::experiments::matmul::cases::DMMA_GROUP_M);
        assert!(text.lines().any(|l| l.starts_with(&line)), "kernels/matmul_dmma.hip has no `{line}`");
    }

    /// The DMMA rung's dynamic LDS in the table is what its source asserts it launches with.
    #[test]
    fn dmma_dynamic_lds_matches_the_source() {
        let text = code_objects::source("matmul_dmma").unwrap().text;
        for v in VARIANTS.iter().filter(|v| v.family == "dmma") {
            let line = text
                .lines()
                .find(|l| {
                    l.starts_with("static_assert(dmma_smem_bytes<") && l.contains(&format!("\"{}_f64\"", v.symbol))
                })
                .unwrap_or_else(|| panic!("no static_assert for {}", v.symbol));
            assert!(line.contains(&format!("() == {}, ", v.dynamic_lds_bytes)), "{}: {line}", v.name);
        }
    }

    /// The wave64 shapes fit gfx90a as promised, read from the code object that hipcc writes: at most 128
    /// VGPRs+AGPRs per lane (`.vgpr_count` counts both on gfx90a), no scratch, and at least 50% occupancy (4 of 8
    /// waves per SIMD) by the suite's calculator, registers and LDS included, for both twins. Every kernel the
    /// gfx90a default set holds beyond the seed's ladder must pass, so a shape added there later is checked too;
    /// each of the rungs double_buffer, splitk and streamk has one. And no kernel of those rungs, in any shape,
    /// needs scratch there.
    #[test]
    fn wave64_shapes_fit_the_gfx90a_register_budget() {
        use crate::code_objects::{compile, metadata, sources};
        use crate::occupancy_calculator::{Profile, Resources};
        let arch = crate::device::Arch::parse("gfx90a").unwrap();
        let hipcc = test_support::compiler(crate::device::Platform::Amd);
        let bytes = compile::compile(&hipcc, sources::source("matmul").unwrap(), &arch).unwrap();
        let info = metadata::check_arch(&bytes, &arch).unwrap();
        let profile = Profile::for_arch(&arch, None).unwrap();
        let rungs = ["double_buffer", "splitk", "streamk"];
        let wave64: Vec<&Variant> = default_kernels("gfx90a", Precision::F32, &[])
            .unwrap()
            .into_iter()
            .filter(|v| rungs.contains(&v.family))
            .collect();
        for rung in rungs {
            assert!(wave64.iter().any(|v| v.family == rung), "no wave64 shape of {rung}: {wave64:?}");
        }
        let wave_tiled = |v: &&Variant| v.source == "matmul" && !["vectorized", "warptile"].contains(&v.family);
        for v in VARIANTS.iter().filter(|v| v.aligned_rows).filter(wave_tiled) {
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
}
