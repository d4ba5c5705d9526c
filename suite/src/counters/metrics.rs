//! The metric table: what each column of `counters.csv` is, from which counters, by which formula, on each vendor,
//! and where the names and formulas come from. `docs/counters.md` prints the same table; a test checks that every
//! name here is there.
//!
//! Sources. NVIDIA: metric names checked with `ncu --query-metrics --chip gh100` and the section files of Nsight
//! Compute 2025.3.1 on an H100 (Occupancy.section "Achieved Occupancy" and "Theoretical Occupancy",
//! MemoryWorkloadAnalysis.section "L2 Hit Rate"; the query's descriptions of `dram__bytes_read` and the
//! `smsp__sass_thread_inst_executed_op_*` and `sm__inst_executed_pipe_tensor_op_dmma` counters). The shared-memory
//! and FP64-pipe metrics (`l1tex__data_pipe_lsu_wavefronts_mem_shared`,
//! `l1tex__data_bank_conflicts_pipe_lsu_mem_shared`, `sm__pipe_fp64_cycles_active`) were taken from Nsight Compute
//! 2025.3's MemoryWorkloadAnalysis (shared-memory table) and ComputeWorkloadAnalysis (pipe utilization) section
//! metrics, not from a query: they must be confirmed with `ncu --query-metrics --chip gh100` on a GPU node (a name
//! ncu does not know fails the whole flop pass). AMD gfx90a:
//! counter and derived-metric definitions from ROCm/rocprofiler-sdk
//! `source/lib/rocprofiler-sdk/counters/yaml/counter_defs.yaml` (commit 8ab1ed7, the ROCm 6.3 line), formulas as
//! ROCm/rocprofiler-compute's analysis configs write them (`src/rocprof_compute_soc/analysis_configs/gfx90a/`,
//! commit 95b600e) and ROCm's counter reference (`docs/conceptual/gpu-arch/mi300-mi200-performance-counters.rst`).

use super::{KernelRecord, Profiler};

/// Nsight Compute metric names.
pub mod nvidia {
    /// Active warps per active cycle over the SM's maximum, % (Occupancy.section "Achieved Occupancy").
    pub const ACHIEVED_PCT: &str = "sm__warps_active.avg.pct_of_peak_sustained_active";
    /// Nsight Compute's own theoretical occupancy, % (Occupancy.section "Theoretical Occupancy").
    pub const THEORETICAL_PCT: &str = "sm__maximum_warps_per_active_cycle_pct";
    /// Bytes read from DRAM.
    pub const DRAM_READ: &str = "dram__bytes_read.sum";
    /// Bytes written to DRAM.
    pub const DRAM_WRITE: &str = "dram__bytes_write.sum";
    /// L2 sector hit rate, % (MemoryWorkloadAnalysis.section "L2 Hit Rate").
    pub const L2_HIT_PCT: &str = "lts__t_sector_hit_rate.pct";
    /// Time of the kernel on the GPU, ns.
    pub const DURATION: &str = "gpu__time_duration.sum";
    /// FP32 FMA thread instructions executed with their predicate true.
    pub const FFMA: &str = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum";
    /// FP32 add thread instructions, likewise.
    pub const FADD: &str = "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum";
    /// FP32 multiply thread instructions, likewise.
    pub const FMUL: &str = "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum";
    /// FP64 FMA thread instructions, likewise.
    pub const DFMA: &str = "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum";
    /// FP64 add thread instructions, likewise.
    pub const DADD: &str = "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum";
    /// FP64 multiply thread instructions, likewise.
    pub const DMUL: &str = "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum";
    /// Warp instructions executed by the tensor pipe as DMMA (FP64 matrix) operations.
    pub const DMMA: &str = "sm__inst_executed_pipe_tensor_op_dmma.sum";
    /// Shared-memory wavefronts processed by the L1 data pipe for LSU instructions, loads and stores: one per pass
    /// a warp's shared-memory instruction needs, so bank conflicts add to it (MemoryWorkloadAnalysis, shared-memory
    /// table).
    pub const LDS_WAVEFRONTS: &str = "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum";
    /// The same over what the SMs' L1 data pipes could serve in the kernel's elapsed cycles, %.
    pub const LDS_BUSY_PCT: &str = "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed";
    /// Shared-memory wavefronts that bank conflicts added (MemoryWorkloadAnalysis, shared-memory table).
    pub const LDS_BANK_CONFLICTS: &str = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum";
    /// Cycles the FP64 pipe was busy over the SM's active cycles, % (ComputeWorkloadAnalysis, pipe utilization).
    pub const FP64_PIPE_PCT: &str = "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active";
    /// Registers per thread: a `launch__` attribute that `--page raw` prints unasked.
    pub const REGISTERS: &str = "launch__registers_per_thread";
    /// Static shared memory per block, bytes (`launch__`, printed unasked).
    pub const SHARED_STATIC: &str = "launch__shared_mem_per_block_static";
    /// Dynamic shared memory per block, bytes (`launch__`, printed unasked).
    pub const SHARED_DYNAMIC: &str = "launch__shared_mem_per_block_dynamic";
}

/// rocprofv3 counter and derived-metric names for gfx90a.
pub mod amd {
    /// GPU active cycles (`GRBM_GUI_ACTIVE`, block GRBM): the dispatch's length where rocprofv3 prints no
    /// timestamps.
    pub const GUI_ACTIVE: &str = "GRBM_GUI_ACTIVE";
    /// rocprofiler-sdk's `OccupancyPercent` for gfx90a:
    /// `400*reduce(SQ_WAVE_CYCLES,sum)/reduce(GRBM_GUI_ACTIVE,max)/CU_NUM/32`, "GPU Occupancy as % of maximum"
    /// (SQ_WAVE_CYCLES counts quad-cycles, hence 4 × 100; 32 waves per CU).
    pub const OCCUPANCY_PCT: &str = "OccupancyPercent";
    /// rocprofiler-sdk's `L2CacheHit`: `100*reduce(TCC_HIT,sum)/(reduce(TCC_HIT,sum)+reduce(TCC_MISS,sum))`.
    pub const L2_HIT_PCT: &str = "L2CacheHit";
    /// rocprofiler-sdk's `FETCH_SIZE` for gfx90a, KiB:
    /// `(TCC_EA_RDREQ_32B_sum*32+(TCC_EA_RDREQ_sum-TCC_EA_RDREQ_32B_sum)*64)/1024`.
    pub const FETCH_KIB: &str = "FETCH_SIZE";
    /// rocprofiler-sdk's `WRITE_SIZE` for gfx90a, KiB:
    /// `((TCC_EA_WRREQ_sum-TCC_EA_WRREQ_64B_sum)*32+TCC_EA_WRREQ_64B_sum*64)/1024`.
    pub const WRITE_KIB: &str = "WRITE_SIZE";
    /// VALU FP32 FMA wave instructions.
    pub const FMA_F32: &str = "SQ_INSTS_VALU_FMA_F32";
    /// VALU FP32 add wave instructions.
    pub const ADD_F32: &str = "SQ_INSTS_VALU_ADD_F32";
    /// VALU FP32 multiply wave instructions.
    pub const MUL_F32: &str = "SQ_INSTS_VALU_MUL_F32";
    /// VALU FP64 FMA wave instructions.
    pub const FMA_F64: &str = "SQ_INSTS_VALU_FMA_F64";
    /// VALU FP64 add wave instructions.
    pub const ADD_F64: &str = "SQ_INSTS_VALU_ADD_F64";
    /// VALU FP64 multiply wave instructions.
    pub const MUL_F64: &str = "SQ_INSTS_VALU_MUL_F64";
    /// FP32 MFMA operations in units of 512.
    pub const MFMA_MOPS_F32: &str = "SQ_INSTS_VALU_MFMA_MOPS_F32";
    /// FP64 MFMA operations in units of 512.
    pub const MFMA_MOPS_F64: &str = "SQ_INSTS_VALU_MFMA_MOPS_F64";
}

/// Which metrics a point needs: every point the memory set, points of experiments rated in GFLOP/s the FP
/// instruction counts too (they cost ncu an instrumented replay pass and rocprofv3 a run of its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Set {
    /// Occupancy, DRAM bytes, L2 hit rate, time.
    Memory,
    /// The memory set, the FP32/FP64 instruction counts and (NVIDIA) the shared-memory load against the FP64 pipe.
    Flop,
}

impl Set {
    /// Its name in file names and messages.
    pub fn name(self) -> &'static str {
        match self {
            Set::Memory => "memory",
            Set::Flop => "flop",
        }
    }
}

/// The `--metrics` of an ncu pass over points of `set`.
pub fn ncu_metrics(set: Set) -> Vec<&'static str> {
    use nvidia::*;
    let mut m = vec![ACHIEVED_PCT, THEORETICAL_PCT, DRAM_READ, DRAM_WRITE, L2_HIT_PCT, DURATION];
    if set == Set::Flop {
        m.extend([FFMA, FADD, FMUL, DFMA, DADD, DMUL, DMMA]);
        m.extend([LDS_WAVEFRONTS, LDS_BUSY_PCT, LDS_BANK_CONFLICTS, FP64_PIPE_PCT]);
    }
    m
}

/// The counter sets of the rocprofv3 runs over points of `set`, one run each: rocprofv3 fails a run whose counters
/// do not fit one pass of the hardware's counter registers, so the TCC (L2) counters, four per pass, are split
/// (L2CacheHit needs TCC_HIT and TCC_MISS; FETCH_SIZE and WRITE_SIZE need four TCC_EA counters), and the eight SQ
/// instruction counters get a run of their own. GRBM_GUI_ACTIVE is in every run so that each finds the point's
/// longest kernel itself.
pub fn rocprof_passes(set: Set) -> Vec<Vec<&'static str>> {
    use amd::*;
    let mut passes = vec![vec![GUI_ACTIVE, OCCUPANCY_PCT, L2_HIT_PCT], vec![GUI_ACTIVE, FETCH_KIB, WRITE_KIB]];
    if set == Set::Flop {
        passes.push(vec![
            GUI_ACTIVE,
            FMA_F32,
            ADD_F32,
            MUL_F32,
            FMA_F64,
            ADD_F64,
            MUL_F64,
            MFMA_MOPS_F32,
            MFMA_MOPS_F64,
        ]);
    }
    passes
}

/// Over which of a point's kernels a column is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The point's main kernel: the longest (by time where the profiler gives one, else by GPU active cycles).
    Main,
    /// Summed over every kernel of the point.
    Sum,
}

/// One measured column of `counters.csv`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    /// The column's name, unit included.
    pub name: &'static str,
    /// Over which kernels.
    pub scope: Scope,
    /// How NVIDIA's value is computed from ncu's metrics.
    pub nvidia: &'static str,
    /// How AMD's value is computed from rocprofv3's counters (gfx90a).
    pub amd: &'static str,
}

/// The measured columns, in `counters.csv` order.
pub const COLUMNS: &[Column] = &[
    Column {
        name: "main_kernel_us",
        scope: Scope::Main,
        nvidia: "gpu__time_duration.sum / 1000",
        amd: "(End_Timestamp - Start_Timestamp) / 1000 where rocprofv3 prints them; else empty (the longest kernel is then the one with the most GRBM_GUI_ACTIVE cycles)",
    },
    Column {
        name: "occupancy_achieved_pct",
        scope: Scope::Main,
        nvidia: "sm__warps_active.avg.pct_of_peak_sustained_active (active warps per SM per active cycle / 64)",
        amd: "OccupancyPercent = 400 * SQ_WAVE_CYCLES / GRBM_GUI_ACTIVE / CU_NUM / 32 (waves per CU over the dispatch's active cycles / 32)",
    },
    Column {
        name: "occupancy_profiler_theoretical_pct",
        scope: Scope::Main,
        nvidia: "sm__maximum_warps_per_active_cycle_pct (Nsight Compute's own calculator)",
        amd: "empty: rocprofv3 has no theoretical figure",
    },
    Column {
        name: "dram_read_bytes",
        scope: Scope::Sum,
        nvidia: "dram__bytes_read.sum",
        amd: "FETCH_SIZE * 1024 = TCC_EA_RDREQ_32B_sum * 32 + (TCC_EA_RDREQ_sum - TCC_EA_RDREQ_32B_sum) * 64 (L2-to-fabric read requests, HBM and any other target)",
    },
    Column {
        name: "dram_write_bytes",
        scope: Scope::Sum,
        nvidia: "dram__bytes_write.sum",
        amd: "WRITE_SIZE * 1024 = (TCC_EA_WRREQ_sum - TCC_EA_WRREQ_64B_sum) * 32 + TCC_EA_WRREQ_64B_sum * 64",
    },
    Column {
        name: "l2_hit_pct",
        scope: Scope::Main,
        nvidia: "lts__t_sector_hit_rate.pct",
        amd: "L2CacheHit = 100 * TCC_HIT_sum / (TCC_HIT_sum + TCC_MISS_sum)",
    },
    Column {
        name: "fp32_inst",
        scope: Scope::Sum,
        nvidia: "ffma + fadd + fmul thread instructions (smsp__sass_thread_inst_executed_op_{ffma,fadd,fmul}_pred_on.sum)",
        amd: "wave size * (SQ_INSTS_VALU_FMA_F32 + SQ_INSTS_VALU_ADD_F32 + SQ_INSTS_VALU_MUL_F32): wave instructions times 64 lanes, as if every lane ran",
    },
    Column {
        name: "fp64_inst",
        scope: Scope::Sum,
        nvidia: "dfma + dadd + dmul thread instructions (smsp__sass_thread_inst_executed_op_{dfma,dadd,dmul}_pred_on.sum)",
        amd: "wave size * (SQ_INSTS_VALU_FMA_F64 + SQ_INSTS_VALU_ADD_F64 + SQ_INSTS_VALU_MUL_F64)",
    },
    Column {
        name: "fp32_vector_flop",
        scope: Scope::Sum,
        nvidia: "2 * ffma + fadd + fmul (thread instructions, predicated-off lanes not counted)",
        amd: "wave size * (2 * SQ_INSTS_VALU_FMA_F32 + SQ_INSTS_VALU_ADD_F32 + SQ_INSTS_VALU_MUL_F32) (rocprof-compute's VALU FLOPs: the execution mask is not seen, a packed v_pk_fma_f32 counts once)",
    },
    Column {
        name: "fp64_vector_flop",
        scope: Scope::Sum,
        nvidia: "2 * dfma + dadd + dmul",
        amd: "wave size * (2 * SQ_INSTS_VALU_FMA_F64 + SQ_INSTS_VALU_ADD_F64 + SQ_INSTS_VALU_MUL_F64)",
    },
    Column {
        name: "fp32_matrix_flop",
        scope: Scope::Sum,
        nvidia: "empty: no FP32 matrix path (the suite pins cuBLAS to CUBLAS_DEFAULT_MATH, no TF32)",
        amd: "512 * SQ_INSTS_VALU_MFMA_MOPS_F32 (rocprof-compute's MFMA FLOPs (F32))",
    },
    Column {
        name: "fp64_matrix_flop",
        scope: Scope::Sum,
        nvidia: "empty: ncu counts DMMA instructions, whose FLOP depend on the shape (see fp64_matrix_inst)",
        amd: "512 * SQ_INSTS_VALU_MFMA_MOPS_F64 (rocprof-compute's MFMA FLOPs (F64))",
    },
    Column {
        name: "fp64_matrix_inst",
        scope: Scope::Sum,
        nvidia: "sm__inst_executed_pipe_tensor_op_dmma.sum (warp instructions; the FLOP of each depend on its SASS shape, which the counter does not say)",
        amd: "empty: MFMA work is counted in FLOP (fp64_matrix_flop)",
    },
    Column {
        name: "lds_wavefronts",
        scope: Scope::Sum,
        nvidia: "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum (shared-memory wavefronts, loads and stores; bank conflicts add passes)",
        amd: LDS_NOT_ON_AMD,
    },
    Column {
        name: "lds_busy_pct",
        scope: Scope::Main,
        nvidia: "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed (shared-memory wavefronts over what the SMs' L1 data pipes could serve in the kernel's elapsed cycles)",
        amd: LDS_NOT_ON_AMD,
    },
    Column {
        name: "lds_bank_conflict_wavefronts",
        scope: Scope::Sum,
        nvidia: "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum (the wavefronts bank conflicts added)",
        amd: LDS_NOT_ON_AMD,
    },
    Column {
        name: "fp64_pipe_pct",
        scope: Scope::Main,
        nvidia: "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active (FP64 pipe busy cycles over the SM's active cycles)",
        amd: "empty: not collected on AMD here (the SQ counters the suite reads count FP64 instructions, not FP64 pipe cycles)",
    },
];

/// Why the shared-memory columns are empty on AMD.
const LDS_NOT_ON_AMD: &str =
    "empty: not collected on AMD here (rocprofv3's SQ_LDS_BANK_CONFLICT counts stall cycles, not accesses)";

/// One kernel's figures, each where its profiler and metric set give it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct KernelFigures {
    /// Its time, ns.
    pub duration_ns: Option<f64>,
    /// How long it ran for picking the main kernel: time, or GPU active cycles where there is no time.
    pub length: Option<f64>,
    /// Achieved occupancy, %.
    pub achieved_pct: Option<f64>,
    /// The profiler's theoretical occupancy, %.
    pub profiler_theoretical_pct: Option<f64>,
    /// DRAM bytes read.
    pub dram_read_bytes: Option<f64>,
    /// DRAM bytes written.
    pub dram_write_bytes: Option<f64>,
    /// L2 hit rate, %.
    pub l2_hit_pct: Option<f64>,
    /// FP32 vector instructions, per lane.
    pub fp32_inst: Option<f64>,
    /// FP64 vector instructions, per lane.
    pub fp64_inst: Option<f64>,
    /// FP32 vector FLOP.
    pub fp32_vector_flop: Option<f64>,
    /// FP64 vector FLOP.
    pub fp64_vector_flop: Option<f64>,
    /// FP32 matrix FLOP.
    pub fp32_matrix_flop: Option<f64>,
    /// FP64 matrix FLOP.
    pub fp64_matrix_flop: Option<f64>,
    /// FP64 matrix (DMMA) warp instructions.
    pub fp64_matrix_inst: Option<f64>,
    /// Shared-memory (LDS) wavefronts, loads and stores.
    pub lds_wavefronts: Option<f64>,
    /// Shared-memory wavefronts over the L1 data pipe's peak in the kernel's time, %.
    pub lds_busy_pct: Option<f64>,
    /// Shared-memory wavefronts that bank conflicts added.
    pub lds_bank_conflict_wavefronts: Option<f64>,
    /// FP64 pipe busy over the SM's active cycles, %.
    pub fp64_pipe_pct: Option<f64>,
}

/// The sum of `terms` (coefficient, value) when every value is there.
fn combine(terms: &[(f64, Option<f64>)]) -> Option<f64> {
    terms.iter().try_fold(0.0, |sum, (c, v)| v.map(|v| sum + c * v))
}

/// `record`'s figures as [`COLUMNS`] defines them; `wave_size` turns AMD's wave instructions into lane ones.
pub fn figures(profiler: Profiler, record: &KernelRecord, wave_size: u32) -> KernelFigures {
    let v = |name: &str| record.value(name);
    match profiler {
        Profiler::Ncu => {
            use nvidia::*;
            let duration_ns = v(DURATION).or(record.duration_ns);
            KernelFigures {
                duration_ns,
                length: duration_ns,
                achieved_pct: v(ACHIEVED_PCT),
                profiler_theoretical_pct: v(THEORETICAL_PCT),
                dram_read_bytes: v(DRAM_READ),
                dram_write_bytes: v(DRAM_WRITE),
                l2_hit_pct: v(L2_HIT_PCT),
                fp32_inst: combine(&[(1.0, v(FFMA)), (1.0, v(FADD)), (1.0, v(FMUL))]),
                fp64_inst: combine(&[(1.0, v(DFMA)), (1.0, v(DADD)), (1.0, v(DMUL))]),
                fp32_vector_flop: combine(&[(2.0, v(FFMA)), (1.0, v(FADD)), (1.0, v(FMUL))]),
                fp64_vector_flop: combine(&[(2.0, v(DFMA)), (1.0, v(DADD)), (1.0, v(DMUL))]),
                fp32_matrix_flop: None,
                fp64_matrix_flop: None,
                fp64_matrix_inst: v(DMMA),
                lds_wavefronts: v(LDS_WAVEFRONTS),
                lds_busy_pct: v(LDS_BUSY_PCT),
                lds_bank_conflict_wavefronts: v(LDS_BANK_CONFLICTS),
                fp64_pipe_pct: v(FP64_PIPE_PCT),
            }
        }
        Profiler::Rocprofv3 => {
            use amd::*;
            let w = f64::from(wave_size);
            KernelFigures {
                duration_ns: record.duration_ns,
                length: record.duration_ns.or(v(GUI_ACTIVE)),
                achieved_pct: v(OCCUPANCY_PCT),
                profiler_theoretical_pct: None,
                dram_read_bytes: v(FETCH_KIB).map(|k| k * 1024.0),
                dram_write_bytes: v(WRITE_KIB).map(|k| k * 1024.0),
                l2_hit_pct: v(L2_HIT_PCT),
                fp32_inst: combine(&[(w, v(FMA_F32)), (w, v(ADD_F32)), (w, v(MUL_F32))]),
                fp64_inst: combine(&[(w, v(FMA_F64)), (w, v(ADD_F64)), (w, v(MUL_F64))]),
                fp32_vector_flop: combine(&[(2.0 * w, v(FMA_F32)), (w, v(ADD_F32)), (w, v(MUL_F32))]),
                fp64_vector_flop: combine(&[(2.0 * w, v(FMA_F64)), (w, v(ADD_F64)), (w, v(MUL_F64))]),
                fp32_matrix_flop: v(MFMA_MOPS_F32).map(|m| 512.0 * m),
                fp64_matrix_flop: v(MFMA_MOPS_F64).map(|m| 512.0 * m),
                fp64_matrix_inst: None,
                lds_wavefronts: None,
                lds_busy_pct: None,
                lds_bank_conflict_wavefronts: None,
                fp64_pipe_pct: None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(values: &[(&str, f64)]) -> KernelRecord {
        KernelRecord { values: values.iter().map(|(k, v)| (k.to_string(), *v)).collect(), ..KernelRecord::default() }
    }

    #[test]
    fn nvidia_figures_follow_the_table() {
        use nvidia::*;
        // The research run's check: 1,048,576 threads x 100 FMAs gave 104,857,600 DFMA thread instructions.
        let r = record(&[
            (DURATION, 20_000.0),
            (ACHIEVED_PCT, 87.5),
            (DRAM_READ, 8.0e6),
            (DRAM_WRITE, 4.0e6),
            (DFMA, 104_857_600.0),
            (DADD, 0.0),
            (DMUL, 2.0),
            (FFMA, 10.0),
            (FADD, 1.0),
            (FMUL, 1.0),
            (DMMA, 3.0),
            (LDS_WAVEFRONTS, 1_572_864.0),
            (LDS_BUSY_PCT, 41.25),
            (LDS_BANK_CONFLICTS, 65_536.0),
            (FP64_PIPE_PCT, 77.5),
        ]);
        let f = figures(Profiler::Ncu, &r, 32);
        assert_eq!(f.duration_ns, Some(20_000.0));
        assert_eq!(f.achieved_pct, Some(87.5));
        assert_eq!(f.fp64_inst, Some(104_857_602.0));
        assert_eq!(f.fp64_vector_flop, Some(2.0 * 104_857_600.0 + 2.0));
        assert_eq!(f.fp32_vector_flop, Some(22.0));
        assert_eq!(f.fp64_matrix_inst, Some(3.0));
        assert_eq!((f.fp32_matrix_flop, f.profiler_theoretical_pct), (None, None));
        assert_eq!((f.lds_wavefronts, f.lds_bank_conflict_wavefronts), (Some(1_572_864.0), Some(65_536.0)));
        assert_eq!((f.lds_busy_pct, f.fp64_pipe_pct), (Some(41.25), Some(77.5)));
        // A memory-set profile has no instruction counts nor shared-memory and pipe figures: empty, not zero.
        let m = figures(Profiler::Ncu, &record(&[(DRAM_READ, 1.0)]), 32);
        assert_eq!((m.fp32_inst, m.fp32_vector_flop, m.length), (None, None, None));
        assert_eq!((m.lds_wavefronts, m.lds_busy_pct, m.lds_bank_conflict_wavefronts), (None, None, None));
        assert_eq!(m.fp64_pipe_pct, None);
    }

    #[test]
    fn amd_figures_follow_the_table() {
        use amd::*;
        let r = record(&[
            (GUI_ACTIVE, 5000.0),
            (OCCUPANCY_PCT, 61.0),
            (FETCH_KIB, 2.0),
            (WRITE_KIB, 1.0),
            (FMA_F32, 10.0),
            (ADD_F32, 1.0),
            (MUL_F32, 0.0),
            (FMA_F64, 0.0),
            (ADD_F64, 0.0),
            (MUL_F64, 0.0),
            (MFMA_MOPS_F32, 4.0),
            (MFMA_MOPS_F64, 1.0),
        ]);
        let f = figures(Profiler::Rocprofv3, &r, 64);
        assert_eq!(f.length, Some(5000.0), "no timestamps: GPU active cycles pick the main kernel");
        assert_eq!(f.duration_ns, None);
        assert_eq!((f.dram_read_bytes, f.dram_write_bytes), (Some(2048.0), Some(1024.0)));
        assert_eq!(f.fp32_inst, Some(64.0 * 11.0));
        assert_eq!(f.fp32_vector_flop, Some(64.0 * 21.0));
        assert_eq!((f.fp32_matrix_flop, f.fp64_matrix_flop), (Some(2048.0), Some(512.0)));
        // rocprofv3 collects no shared-memory or pipe figures here: empty.
        assert_eq!((f.lds_wavefronts, f.lds_busy_pct, f.lds_bank_conflict_wavefronts), (None, None, None));
        assert_eq!(f.fp64_pipe_pct, None);
        let timed = KernelRecord { duration_ns: Some(7.0), ..r };
        assert_eq!(figures(Profiler::Rocprofv3, &timed, 64).length, Some(7.0));
    }

    #[test]
    fn every_requested_name_is_in_the_table_and_the_docs() {
        let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/counters.md")).unwrap();
        let table: String = COLUMNS.iter().map(|c| format!("{} {} {}\n", c.name, c.nvidia, c.amd)).collect();
        let mut names: Vec<&str> = ncu_metrics(Set::Flop);
        names.extend(rocprof_passes(Set::Flop).into_iter().flatten());
        for name in names {
            assert!(docs.contains(name), "docs/counters.md does not name {name}");
            // The table names each metric, or (ncu's instruction metrics) its op in a braced list.
            let op = name.split("_op_").nth(1).and_then(|s| s.split('_').next()).unwrap_or(name);
            assert!(table.contains(name) || table.contains(op), "the column table does not name {name}");
        }
        for column in COLUMNS {
            assert!(docs.contains(&format!("`{}`", column.name)), "docs/counters.md does not list {}", column.name);
        }
        // The memory set is the flop set's first part, and each rocprofv3 run holds its main-kernel counter.
        assert!(ncu_metrics(Set::Flop).starts_with(&ncu_metrics(Set::Memory)));
        // The shared-memory and pipe metrics are the flop set's (matmul's rungs), not every point's.
        for name in [nvidia::LDS_WAVEFRONTS, nvidia::LDS_BUSY_PCT, nvidia::LDS_BANK_CONFLICTS, nvidia::FP64_PIPE_PCT] {
            assert!(ncu_metrics(Set::Flop).contains(&name) && !ncu_metrics(Set::Memory).contains(&name), "{name}");
        }
        assert!(rocprof_passes(Set::Flop).iter().all(|p| p.contains(&amd::GUI_ACTIVE)));
        assert_eq!(rocprof_passes(Set::Memory).len(), 2);
    }
}
