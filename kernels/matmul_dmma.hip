// The matmul ladder's matrix rung on NVIDIA: FP64 on the FP64 tensor cores (DMMA), rung 11 of kernels/matmul.hip's
// ladder, whose conventions it follows (row-major, the same kernel signature, `_f64` and `_unaligned` names, any M,
// N, K). It is a source of its own for two reasons: it is the only matmul kernel with dynamic shared memory, and a
// CUDA module that declares dynamic shared memory (`extern __shared__`) lays out every kernel's static shared memory
// for it (nvcc 13 rounds each kernel's static size up to 16 bytes and lists sm_90's reserved 1 KiB for kernels that
// have none), which would change the FP32 kernels' reported shared memory; and matmul.hip is long enough.
//
// Compiled for every architecture, it holds kernels only for NVIDIA sm_80 and later (mma.sync .f64 exists from
// sm_80): for AMD, older NVIDIA architectures and the CPU emulation the file is empty. The suite's table
// (suite/src/experiments/matmul/ladder.rs) says where the rung exists and why not elsewhere: NVIDIA has no FP32
// matrix path at FP32 precision (its tensor cores take TF32, another precision), and AMD's matrix rung is MFMA.
#include "gpu.h"
#include "matmul_io.h"
#include "matmul_split.h"

// ---------------------------------------------------------------------------------------------------------------
// 11. matmul_dmma_<BM>x<BN>x<BK>_t<THREADS>_f64 — FP64 on NVIDIA's FP64 tensor cores (DMMA): the matrix rung.
//
// Idea: the group (WARPS_M × WARPS_N warps) computes a BM×BN block of C. K is consumed in slabs of BK: a slab of A
// (BM×BK) and of B (BK×BN) is copied global -> shared with cp.async (16 bytes per instruction, no registers in
// between), STAGES slabs deep, so the copies of slabs s+1 .. s+STAGES-1 are in flight while the warps multiply
// slab s. Each warp owns a WM×WN piece of the block and keeps it in registers as (WM/8)×(WN/8) atoms of 8×8
// accumulators. Inside a slab the warp walks k in steps of one instruction's depth, loading the fragments of step
// j+1 from shared memory while the mma of step j run (two register sets), and one barrier per slab, placed
// before its last k step, both publishes slab s+1 and frees slab s-1's stage for the next copies (the main loop's
// comment says why that suffices). The rung: 128×128×16 blocks, 8 warps of 64×32, 3 stages, mma.m16n8k4.
//
// Data layout: the "atom" is the fragment of mma.m8n8k4 .f64 (PTX ISA, "Matrix Fragments for mma.m8n8k4 with
// .f64"). With g = lane/4 and t = lane%4, a thread holds
//     A[g][t]  of an 8×4 piece of A,   B[t][g]  of a 4×8 piece of B,   C[g][2t], C[g][2t+1]  of an 8×8 piece of C.
// The larger sm_90 shapes are made of these atoms: m16n8k4 takes 2 atoms of A (rows g and g+8), m16n8k8 2×2
// (columns t and t+4), m16n8k16 2×4; their B and C registers are atoms stacked along k and m in the same way. So
// the register tile (acc[mi][ni][2], a[mi][ka], b[ni][ka]) and the shared-memory reads are the same for every
// shape, and the shape only decides how many atoms one instruction consumes (DmmaShapeInfo, dmma_tile). On sm_80,
// which has only m8n8k4 for .f64, the larger shapes are issued as their m8n8k4 atoms (same arithmetic, same order).
// Per 4-deep k step a thread of a 64×32 warp tile holds 8 A atoms and 4 B atoms (12 doubles, two sets: 48
// registers) next to 64 accumulators (128 registers); with m16n8k8 the two sets take 96 and nvcc spills.
//
// Shared memory: A slab row-major As[m][k] (row = BK + PAD doubles), B slab row-major Bs[k][n] (row = BN + PAD).
// ldmatrix has no 64-bit form, so fragments are read with plain 8-byte loads. A warp's 8-byte load is served in two
// halves of 16 lanes, each conflict-free when its 16 doubles sit in 16 different 8-byte bank pairs (32 banks × 4 B).
// An A atom read by lanes 0-15 is rows g = 0..3 × columns t = 0..3: with a row stride ≡ 4 (mod 16) doubles the pair
// is 4g + t, all 16 distinct (lanes 16-31: g = 4..7, the same). A B atom is rows t × columns g: pair 4t + g, distinct
// too. BK and BN are multiples of 16, so PAD = 4 doubles (32 bytes) gives both strides ≡ 4; the rows stay 16-byte
// aligned for cp.async, and 8 consecutive lanes of a cp.async write 128 contiguous bytes (conflict-free stores).
// The pad costs 25% more shared memory than a swizzle (87.5 KB against cuBLAS's 72 KB for 128×64×16×3), which
// still fits two 128×64 blocks per SM.
//
// Block order: block b of a 1-D grid takes tile (bm, bn) in groups of DMMA_GROUP_M tile rows (as in Triton's matmul
// tutorial), so the blocks resident at one time share a few rows of A and columns of B in L2 instead of one row of
// A and all of B.
//
// Expected limit: the DMMA pipe. H100 SXM: 132 SMs × 1.98 GHz × 256 FP64 FLOP/clk (tensor) = 66.9 TFLOP/s; one
// DMMA.16x8x4 (512 FMA) occupies an SM sub-partition for 16 clocks, DMMA.16x8x8 for 32 (both full rate; .8x8x4
// runs at half rate). Per 4-deep k step a 64×32 warp tile issues 16 DMMA.16x8x4 against 12 LDS.64: shared memory
// runs at ~40% of its 128 B/clk while the tensor pipe is full. A 128×128×16 slab is 32 KB per 524288 FLOP (16
// FLOP/B, 3.4 TB/s from L2 at 55 TFLOP/s; 128×64 needs 5 TB/s). What remains is issue overhead around the
// DMMAs (~265 instructions per slab and warp for 64 DMMAs) and the one barrier per slab. Measured on an H100 SXM
// in a standalone harness before it joined the suite (.dev-gpu/dmma, nvcc 13.0, checked against cublasDgemm):
// 53.8 TFLOP/s at 4096³ and 52.9 at 8192³ (80% / 79% of peak), cuBLAS 50.7-56.1 and 51.8-54.0 in the same call.
// Nsight Compute (locked clocks, 4096³): DMMA pipe 89% busy for the 128×64 instance, 95% for cuBLAS.
// Results were bitwise equal to cuBLAS's there (every DMMA shape adds k in order with fused multiply-adds, as
// cuBLAS's 128×64×16 DMMA.16x8x8 kernel does).
//
// Launch: group (32·WARPS_M·WARPS_N, 1, 1), 1-D grid of ceil(M/BM)·ceil(N/BN) groups, dynamic shared memory
// STAGES·(BM·(BK+PAD) + BK·(BN+PAD))·8 bytes (over 48 KiB: the suite's NVIDIA module opts in with
// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES). Any M, N, K: copies outside the matrices write zeros into shared
// memory (cp.async with source size 0, from a valid address), stores outside C are skipped. `NAME` needs "aligned
// rows" (K and N even, A, B, C 16-byte aligned) for its 16-byte copies and stores; `NAME_unaligned` is the same code
// with 8-byte copies and stores, for any size. C need not be zeroed (overwritten).
//
// Instances (block BMxBNxBK, warps, stages, shape; registers, shared memory and blocks per SM on sm_90; measured in
// the harness on an H100 SXM, cuBLAS 50.7-56.1 TFLOP/s at 4096³ and 51.8-54.0 at 8192³ in the same call):
//   matmul_dmma_128x128x16_t256_f64  8 warps (2×4) of 64×32, 3 stages, m16n8k4; 234 registers, 112,128 B, 1 block
//                                    per SM: 53.8 / 52.9 TFLOP/s at 4096³ / 8192³, 0.97× cuBLAS at 2048³; too few
//                                    blocks below (64 at 1024³: 0.55×)
//   matmul_dmma_128x64x16_t128_f64   4 warps (2×2) of 64×32, 3 stages, m16n8k4; 246 registers, 87,552 B, 2 blocks
//                                    per SM: 51.2 / 50.5; 0.96× at 1000³, 0.91× at 1024³
//   matmul_dmma_64x64x16_t128_f64    4 warps (2×2) of 32×32, 4 stages, m16n8k4; 160 registers, 75,776 B, 2 blocks
//                                    per SM: 44-47 from 1000³ to 8192³, 0.92× at 1024³
// The autotune step picks among them by measurement at each size (the harness's data: 128×128 from 2048³ up, the
// smaller two below). Not kept (measured in the harness): m16n8k8 (255 registers and a spill with two fragment sets,
// 0.92-0.97×), m16n8k16 (600 B spill), m8n8k4 on sm_90 (DMMA.8x8x4 runs at half rate: 0.56-0.62×; it is what sm_80
// runs), 4 stages at 128×64×16 (one block per SM: 0.71-0.76×).
// ---------------------------------------------------------------------------------------------------------------
#if defined(GPU_PLATFORM_NVIDIA) && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800)

__device__ __forceinline__ unsigned dmma_smem_u32(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

// 16 bytes global -> shared, cached in L2 only (.cg); valid == false writes 16 zero bytes and reads nothing.
__device__ __forceinline__ void cp_async_16(double* dst, const double* src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dmma_smem_u32(dst)), "l"(src),
                 "r"(valid ? 16 : 0));
}
// 8 bytes global -> shared (.ca: the only cache mode for sizes under 16); valid == false writes zeros.
__device__ __forceinline__ void cp_async_8(double* dst, const double* src, bool valid) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(dmma_smem_u32(dst)), "l"(src),
                 "r"(valid ? 8 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// D += A·B for the .f64 shapes, operands in the atom layout of the header comment.
__device__ __forceinline__ void dmma_m8n8k4(double (&d)[2], double a, double b) {
    asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
        : "+d"(d[0]), "+d"(d[1])
        : "d"(a), "d"(b));
}

// m16n8k4: d0/d1 = C rows g / g+8, a[i] = A atom of rows 8i.., b = B atom.
__device__ __forceinline__ void dmma_m16n8k4(double (&d0)[2], double (&d1)[2], const double (&a)[2], double b) {
#if __CUDA_ARCH__ >= 900
    asm("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
        : "+d"(d0[0]), "+d"(d0[1]), "+d"(d1[0]), "+d"(d1[1])
        : "d"(a[0]), "d"(a[1]), "d"(b));
#else
    dmma_m8n8k4(d0, a[0], b);
    dmma_m8n8k4(d1, a[1], b);
#endif
}

enum DmmaShape { M8N8K4, M16N8K4 };

// How many atoms one instruction consumes: IM along m (8 rows each), KA along k (4 deep each).
template <DmmaShape S>
struct DmmaShapeInfo;
template <>
struct DmmaShapeInfo<M8N8K4> {
    static constexpr int IM = 1, KA = 1;
};
template <>
struct DmmaShapeInfo<M16N8K4> {
    static constexpr int IM = 2, KA = 1;
};

// One k step of the warp tile: acc[mi][ni] += Σ_ka a[mi][ka] · b[ni][ka], as MI/IM × NI instructions of shape S.
template <DmmaShape S, int MI, int NI, int KA>
__device__ __forceinline__ void dmma_tile(double (&acc)[MI][NI][2], const double (&a)[MI][KA],
                                          const double (&b)[NI][KA]) {
#pragma unroll
    for (int mi = 0; mi < MI; mi += DmmaShapeInfo<S>::IM) {
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) {
            if constexpr (S == M8N8K4) dmma_m8n8k4(acc[mi][ni], a[mi][0], b[ni][0]);
            if constexpr (S == M16N8K4) dmma_m16n8k4(acc[mi][ni], acc[mi + 1][ni], {a[mi][0], a[mi + 1][0]}, b[ni][0]);
        }
    }
}

constexpr int DMMA_PAD = 4;      // doubles after every shared-memory row (see the header comment)
constexpr int DMMA_GROUP_M = 8;  // tile rows per group of the block order

// Dynamic shared memory of one group, bytes (the Rust table's dynamic_lds_bytes; the instances assert it below).
template <int BM, int BN, int BK, int STAGES>
constexpr int dmma_smem_bytes() {
    return STAGES * (BM * (BK + DMMA_PAD) + BK * (BN + DMMA_PAD)) * (int)sizeof(double);
}

// SPLIT: the split-K instance (grid y = S, the workspace `work`, tiles from tile_base; include/matmul_split.h); without
// it the kernel is the one of before split-K (all of K, no workspace), byte for byte, so a launch with S = 1 pays
// nothing for splitting.
// (One kernel for both ran 4-13% slower at S = 1 on an H200 in the 128-wide shapes, with 254 registers instead of
// 240, and 6-42% in the 64x64 shape, which then also had a static LDS flag.)
template <int BM, int BN, int BK, int WARPS_M, int WARPS_N, int STAGES, DmmaShape S, bool VEC, bool SPLIT>
__device__ __forceinline__ void dmma(const double* __restrict__ A, const double* __restrict__ B,
                                     double* __restrict__ C, int M, int N, int K, double* smem, double* work,
                                     int tile_base) {
    constexpr int THREADS = GPU_WAVE_SIZE * WARPS_M * WARPS_N;
    constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;   // warp tile
    constexpr int MI = WM / 8, NI = WN / 8;               // atoms of C per warp (each: 2 accumulators a thread)
    constexpr int KA = DmmaShapeInfo<S>::KA, KSTEP = 4 * KA;  // k depth of one instruction
    constexpr int KSTEPS = BK / KSTEP;                    // instructions along k per slab
    constexpr int LDA = BK + DMMA_PAD, LDB = BN + DMMA_PAD;  // shared-memory row strides (doubles)
    constexpr int A_STAGE = BM * LDA, B_STAGE = BK * LDB;
    constexpr int V = VEC ? 2 : 1;  // doubles per cp.async
    constexpr int A_COPIES = BM * BK / V / THREADS, B_COPIES = BK * BN / V / THREADS;
    static_assert(WM % (8 * DmmaShapeInfo<S>::IM) == 0 && WN % 8 == 0 && BK % KSTEP == 0, "warp tile vs shape");
    static_assert(BK % 16 == 0 && BN % 16 == 0, "row strides ≡ 4 (mod 16) doubles need BK, BN multiples of 16");
    static_assert(A_COPIES * V * THREADS == BM * BK && B_COPIES * V * THREADS == BK * BN, "slab splits evenly");
    static_assert(KSTEPS >= 2 && KSTEPS % 2 == 0, "barrier before the last k step; fragment sets alternate");
    static_assert(STAGES >= 2, "at least double buffering");
    double* As = smem;                     // [STAGES][BM][LDA]
    double* Bs = smem + STAGES * A_STAGE;  // [STAGES][BK][LDB]

    // Block order: DMMA_GROUP_M tile rows at a time, down the rows first (see the header comment); the split instance
    // may start at tile tile_base of that order (a split of only the last wave's tiles).
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    int tm, tn;
    grouped_tile((SPLIT ? tile_base : 0) + (int)blockIdx.x, tiles_m, tiles_n, DMMA_GROUP_M, tm, tn);
    const int bm = tm * BM, bn = tn * BN;
    // Split-K (grid y, include/matmul_split.h): this group's range of whole slabs, [kbegin, kbegin + klen). A and B
    // are moved to its start, so k below counts from kbegin and every k guard is by klen (one register where the
    // whole kernel had K, a parameter: a second one, kend, made the 128x64 instance spill).
    const int splits = SPLIT ? gridDim.y : 1, z = SPLIT ? blockIdx.y : 0;
    int klen = K;
    if (SPLIT) {
        int kbegin, kend;
        split_range<BK>(K, z, splits, kbegin, kend);
        klen = kend - kbegin;
        A += kbegin;
        B += (size_t)kbegin * N;
    }

    // Copy plan, fixed for the whole K loop. Copy i of a slab moves V doubles: for A, row a_row + i·A_RSTEP at
    // column a_col (+ the slab's k0); for B, k row b_row + i·B_RSTEP (+ k0) at column b_col. Consecutive threads
    // take consecutive pieces of a row (coalesced). Copies outside the matrices write zeros (the K tail must be
    // zero in both slabs; rows past M and columns past N only feed C elements that are never stored).
    constexpr int A_RSTEP = THREADS / (BK / V), B_RSTEP = THREADS / (BN / V);
    const int a_row = threadIdx.x / (BK / V), a_col = threadIdx.x % (BK / V) * V;
    const int b_row = threadIdx.x / (BN / V), b_col = threadIdx.x % (BN / V) * V;
    const int a_rows_left = M - bm - a_row;  // copy i is inside A (rows) iff i·A_RSTEP < a_rows_left
    const bool b_col_in = bn + b_col < N;
    const double* a_src = A + (size_t)(bm + a_row) * K + a_col;  // row a_row, k0 = 0
    const double* b_src = B + (size_t)b_row * N + bn + b_col;    // k row b_row, k0 = 0
    const size_t a_step = (size_t)A_RSTEP * K, b_step = (size_t)B_RSTEP * N;
    const int a_dst = a_row * LDA + a_col, b_dst = b_row * LDB + b_col;

    // Copies slab k0 .. k0+BK into a stage; past the end of K it only writes zeros (no branch, so the compiler
    // may interleave the copies with the mma instructions around them).
    auto load_slab = [&](int stage, int k0) {
        double* as = As + stage * A_STAGE + a_dst;
        double* bs = Bs + stage * B_STAGE + b_dst;
        const bool a_k_in = k0 + a_col < klen;
        const double* a_k0 = a_src + k0;
        const double* b_k0 = b_src + (size_t)k0 * N;
#pragma unroll
        for (int i = 0; i < A_COPIES; ++i) {
            const bool ok = a_k_in && i * A_RSTEP < a_rows_left;
            const double* src = ok ? a_k0 + i * a_step : A;
            if constexpr (VEC) cp_async_16(as + i * A_RSTEP * LDA, src, ok);
            else cp_async_8(as + i * A_RSTEP * LDA, src, ok);
        }
#pragma unroll
        for (int i = 0; i < B_COPIES; ++i) {
            const bool ok = b_col_in && k0 + b_row + i * B_RSTEP < klen;
            const double* src = ok ? b_k0 + i * b_step : B;
            if constexpr (VEC) cp_async_16(bs + i * B_RSTEP * LDB, src, ok);
            else cp_async_8(bs + i * B_RSTEP * LDB, src, ok);
        }
    };

    const int warp = threadIdx.x / GPU_WAVE_SIZE, lane = threadIdx.x % GPU_WAVE_SIZE;  // NVIDIA: 32 lanes
    const int g = lane / 4, t = lane % 4;
    const int wm = warp / WARPS_N * WM, wn = warp % WARPS_N * WN;
    // This thread's atoms in a stage: A rows wm + 8mi + g, column t (+ 4ka + k step); B row t (+ 4ka + k step),
    // columns wn + 8ni + g.
    const double* a_frag = As + (wm + g) * LDA + t;
    const double* b_frag = Bs + t * LDB + wn + g;
    // Loads the fragments of k step kk (0 <= kk < BK, a multiple of KSTEP) of a stage.
    auto load_frags = [&](double (&a)[MI][KA], double (&b)[NI][KA], int stage, int kk) {
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
            for (int ka = 0; ka < KA; ++ka) a[mi][ka] = a_frag[stage * A_STAGE + 8 * mi * LDA + kk + 4 * ka];
#pragma unroll
        for (int ni = 0; ni < NI; ++ni)
#pragma unroll
            for (int ka = 0; ka < KA; ++ka) b[ni][ka] = b_frag[stage * B_STAGE + (kk + 4 * ka) * LDB + 8 * ni];
    };

    double acc[MI][NI][2] = {};
    double a[2][MI][KA], b[2][NI][KA];  // fragments of two k steps: one multiplied while the next loads

    // Prologue: slabs 0 .. STAGES-2 of the range in flight, one commit group each; then slab 0 landed and its first
    // fragments.
    const int slabs = (klen + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        load_slab(s, s * BK);
        cp_async_commit();
    }
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    load_frags(a[0], b[0], 0, 0);

    // Main loop (the order of CUTLASS's multistage mainloop). Slab s sits in stage `read`; while its k steps are
    // multiplied, the fragments of the following k step are loaded, and at the first k step the copies of slab
    // s+STAGES-1 are issued into stage `write`, the one slab s-1 used. The only barrier comes before the last
    // k step: after it slab s+1 has landed (wait_group) and is visible to all threads, so the last k step's mma
    // overlap the loads of slab s+1's first fragments; and every thread has read its last fragments of slab s
    // (loaded one k step ahead), so the copies issued at the next slab's first k step may overwrite that stage.
    int read = 0, write = STAGES - 1;
    for (int s = 0; s < slabs; ++s) {
#pragma unroll
        for (int j = 0; j < KSTEPS; ++j) {
            if (j == KSTEPS - 1) {
                cp_async_wait<STAGES - 2>();  // this thread's copies of slab s+1 have landed ...
                __syncthreads();              // ... and everyone's
                read = read == STAGES - 1 ? 0 : read + 1;
            }
            load_frags(a[(j + 1) % 2], b[(j + 1) % 2], read, (j + 1) % KSTEPS * KSTEP);
            if (j == 0) {
                load_slab(write, (s + STAGES - 1) * BK);
                cp_async_commit();
                write = write == STAGES - 1 ? 0 : write + 1;
            }
            dmma_tile<S>(acc, a[j % 2], b[j % 2]);
        }
    }
    cp_async_wait<0>();  // nothing may be left in flight into shared memory at exit (the trailing groups are zeros)

    if constexpr (SPLIT) {
        // The sum is always matmul_splitk_reduce_f64's: partial z of this launch's tile blockIdx.x at (x·S + z)·BM·BN,
        // row-major in the tile, where every pair of accumulators is 16-byte aligned. (A sum in the kernel by the last
        // group to arrive, as kernel 9 of matmul.hip can do, cost the 128-wide shapes a spill: 255 registers and 8
        // bytes of stack with nvcc 13.5, 236-238 without it.)
        double* tile = work + ((size_t)blockIdx.x * splits + z) * (BM * BN);
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
            for (int ni = 0; ni < NI; ++ni)
                *reinterpret_cast<double2*>(tile + (wm + 8 * mi + g) * BN + wn + 8 * ni + 2 * t) =
                    make_double2(acc[mi][ni][0], acc[mi][ni][1]);
    } else {
        // Epilogue: each thread writes its two adjacent accumulators of every atom, 16 bytes at a time with VEC.
#pragma unroll
        for (int mi = 0; mi < MI; ++mi) {
            const int row = bm + wm + 8 * mi + g;
            if (row >= M) continue;
#pragma unroll
            for (int ni = 0; ni < NI; ++ni) {
                const int col = bn + wn + 8 * ni + 2 * t;
                double* c = C + (size_t)row * N + col;
                if constexpr (VEC) {
                    if (col < N) *reinterpret_cast<double2*>(c) = make_double2(acc[mi][ni][0], acc[mi][ni][1]);
                } else {
                    if (col < N) c[0] = acc[mi][ni][0];
                    if (col + 1 < N) c[1] = acc[mi][ni][1];
                }
            }
        }
    }
}

// Defines NAME (aligned rows) and NAME_unaligned (any size), and their split-K instances NAME_split and
// NAME_unaligned_split, which take the workspace and the first tile of the grouped order their grid covers (grid x
// tiles from it, grid y the splits). MINB: blocks per SM the register budget must allow.
#define DMMA_KERNEL(NAME, BM, BN, BK, WARPS_M, WARPS_N, STAGES, SHAPE, MINB, VEC)                                 \
    GPU_KERNEL __launch_bounds__(GPU_WAVE_SIZE * WARPS_M * WARPS_N, MINB) void NAME(MATMUL_PARAMS_OF(double)) {  \
        GPU_DYNAMIC_LDS(double, dmma_smem);                                                                       \
        dmma<BM, BN, BK, WARPS_M, WARPS_N, STAGES, SHAPE, VEC, false>(A, B, C, M, N, K, dmma_smem, nullptr, 0);   \
    }                                                                                                             \
    GPU_KERNEL __launch_bounds__(GPU_WAVE_SIZE * WARPS_M * WARPS_N, MINB) void NAME##_split(                      \
        MATMUL_PARAMS_OF(double), double* __restrict__ work, int tile_base) {                                     \
        GPU_DYNAMIC_LDS(double, dmma_smem);                                                                       \
        dmma<BM, BN, BK, WARPS_M, WARPS_N, STAGES, SHAPE, VEC, true>(A, B, C, M, N, K, dmma_smem, work,          \
                                                                     tile_base);                                  \
    }
#define DMMA_KERNELS(NAME, BM, BN, BK, WARPS_M, WARPS_N, STAGES, SHAPE, MINB)                                     \
    DMMA_KERNEL(NAME, BM, BN, BK, WARPS_M, WARPS_N, STAGES, SHAPE, MINB, true)                                    \
    DMMA_KERNEL(NAME##_unaligned, BM, BN, BK, WARPS_M, WARPS_N, STAGES, SHAPE, MINB, false)

DMMA_KERNELS(matmul_dmma_128x128x16_t256_f64, 128, 128, 16, 2, 4, 3, M16N8K4, 1)
DMMA_KERNELS(matmul_dmma_128x64x16_t128_f64, 128, 64, 16, 2, 2, 3, M16N8K4, 2)
DMMA_KERNELS(matmul_dmma_64x64x16_t128_f64, 64, 64, 16, 2, 2, 4, M16N8K4, 2)
// Skinny M: 32-row tiles waste no rows where M is a multiple of 32 below 128 (M = 96 in 128-row tiles leaves a quarter
// of every tile idle); 4 warps of 32×32 in a row, 3 stages. nvcc 13.5 on sm_90: 168 registers, so 3 blocks per SM (by
// registers and by 66 KB of LDS each); the _unaligned twin 200 (2 blocks). Asked for 3 blocks (launch bounds), sm_80's
// twin spilled, so the bounds ask for 2.
DMMA_KERNELS(matmul_dmma_32x128x16_t128_f64, 32, 128, 16, 1, 4, 3, M16N8K4, 2)
// The dynamic shared memory the Rust table launches each instance with (its `dynamic_lds_bytes`; a CPU test reads
// these lines).
static_assert(dmma_smem_bytes<128, 128, 16, 3>() == 112128, "matmul_dmma_128x128x16_t256_f64");
static_assert(dmma_smem_bytes<128, 64, 16, 3>() == 87552, "matmul_dmma_128x64x16_t128_f64");
static_assert(dmma_smem_bytes<64, 64, 16, 4>() == 75776, "matmul_dmma_64x64x16_t128_f64");
static_assert(dmma_smem_bytes<32, 128, 16, 3>() == 66048, "matmul_dmma_32x128x16_t128_f64");

#endif  // NVIDIA sm_80 and later
