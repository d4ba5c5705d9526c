// The matrix rungs of kernels/matmul.hip (section "11. Matrix rungs: MFMA on gfx90a"): the two MFMA instructions
// they use, each with its operand and result layout (MfmaF32_32x32x2, MfmaF64_16x16x4), and mfma_matmul, the body
// both rungs share. Compiled only where the architecture has the instructions (GPU_HAS_MFMA, kernels/include/gpu.h:
// gfx90a, gfx940/941/942; the CPU emulation at 64 lanes); elsewhere this header defines nothing.
//
// None of this has run on AMD hardware: there is no AMD GPU in reach. It compiles for gfx90a (hipcc 5.2 / clang 15
// here), its logic runs at 64 lanes in the CPU emulation (suite/tests/gpu_cpu/gpu_cpu.h implements the three MFMA
// builtins with the layouts below; suite/tests/wave64_cpu.rs checks them against the calculator and runs both
// rungs against a host reference), and docs/matmul.md has its static figures.
//
// Layouts: AMD Matrix Instruction Calculator 1.3.2, ROCm/amd_matrix_instruction_calculator at commit
// 2ef91896bcdc4d26624f952e5c905c787cd9bc9e, `./matrix_calculator.py -a cdna2 -i <instruction> --detail-instruction`,
// "Matrix element to register mapping with no modifiers" (CBSZ = ABID = BLGP = 0, as the rungs call them). In all
// three instructions lane l holds one element of the A block, A[l % M][l / M], and one of the B block,
// B[l / N][l % N]; element r of the C/D vector at lane l lies in column l % N, and its row is `row(r, l)` below.
#pragma once
#include "gpu.h"

#if defined(GPU_HAS_MFMA)

// v_mfma_f32_32x32x2f32: D (32×32) = A (32×2) · B (2×32) + C in FP32; 4096 FLOP in 64 cycles of one SIMD, i.e.
// 256 FLOP per CU per cycle with all 4 SIMDs busy (calculator: "FLOPs/CU/cycle: 256").
// Calculator: A[i][k] in lane 32k + i; B[k][j] in lane 32k + j; C or D[i][j] in GPR 4·floor(i/8) + i%4 of lane
// (32·floor(i/4)) % 64 + j, 16 GPRs. So element r of lane l is D[8·floor(r/4) + 4·floor(l/32) + r%4][l%32]
// (calculator: "C or D i: (8 * floor(GPR_num / 4) % 32) + 4 * floor(lane / 32) + (GPR_num % 4)").
struct MfmaF32_32x32x2 {
    using T = float;
    using Acc = gpu_floatx16;
    static constexpr int M = 32, N = 32, K = 2, REGS = 16;
    __device__ static __forceinline__ Acc mma(float a, float b, const Acc& c) {
        return __builtin_amdgcn_mfma_f32_32x32x2f32(a, b, c, 0, 0, 0);
    }
    __device__ static __forceinline__ int row(int r, int lane) { return 8 * (r / 4) + 4 * (lane / M) + r % 4; }
};

// v_mfma_f64_16x16x4f64: D (16×16) = A (16×4) · B (4×16) + C in FP64; 2048 FLOP in 32 cycles, 256 FLOP per CU per
// cycle, and it cannot co-execute with VALU instructions (calculator: "Can co-execute with VALU: False").
// Calculator: A[i][k] in GPRs [1:0] of lane 16k + i (a double per lane); B[k][j] in lane 16k + j; C or D[i][j] in GPRs
// [2·floor(i/4)+1 : 2·floor(i/4)] of lane 16·(i%4) + j, i.e. element floor(i/4) of the builtin's double4. So element
// r of lane l is D[4r + floor(l/16)][l%16]. The calculator's printed inverse, "C or D i: 4 * floor(GPR_num / 2)",
// drops the floor(lane / 16) term (its tool's own --matrix-layout tables and the forward formula above have it:
// v[3:2]{17} = D[5][1]); the row here follows the forward formula. Note that it differs from the FP32 16×16×4
// instruction, whose element r of lane l is D[4·floor(l/16) + r][l%16].
struct MfmaF64_16x16x4 {
    using T = double;
    using Acc = gpu_doublex4;
    static constexpr int M = 16, N = 16, K = 4, REGS = 4;
    __device__ static __forceinline__ Acc mma(double a, double b, const Acc& c) {
        return __builtin_amdgcn_mfma_f64_16x16x4f64(a, b, c, 0, 0, 0);
    }
    __device__ static __forceinline__ int row(int r, int lane) { return 4 * r + lane / N; }
};

// Both NVIDIA shared memory and gfx90a LDS have 32 banks of 4 bytes (the bank count, not the wave size; the same
// constant as LDS_BANKS in matmul_wave_tile.h, which this header does not include).
#define MFMA_LDS_BANKS 32

// The block tile BM×BN of C one group computes with instruction I, in slabs of BK along K, with WAVES_M × WAVES_N
// waves, each owning a WM×WN wave tile of TM×TN MFMA blocks.
//
// LDS: the A slab transposed, As[k][m], so that the A operand of an MFMA (lanes l and l+1 hold rows i and i+1 of the
// same k) is a contiguous read along m, like the B operand from Bs[k][n]. A row of As is padded by PAD elements:
// the transposing store of a 32-lane (FP32) or 16-lane (FP64, 8-byte) phase covers 32·4/(BK·sizeof(T)) rows of A ×
// BK values of k, and k lands k·PAD·sizeof(T)/4 banks further (BM is a multiple of the bank count), so with PAD =
// 32·4/(BK·sizeof(T)) the phase fills 32 distinct banks. The MFMA reads are conflict-free without a pad: each
// 32-lane (FP32) or 16-lane (FP64) phase reads consecutive elements of one row.
template <class I, int BM, int BN, int BK, int WAVES_M, int WAVES_N>
struct MfmaShape {
    using T = typename I::T;
    static constexpr int THREADS = WAVES_M * WAVES_N * GPU_WAVE_SIZE;
    static constexpr int WM = BM / WAVES_M, WN = BN / WAVES_N;  // one wave's tile of C
    static constexpr int TM = WM / I::M, TN = WN / I::N;        // MFMA blocks per wave tile
    static constexpr int PAD = MFMA_LDS_BANKS * 4 / (BK * (int)sizeof(T));
    static constexpr int A_LOADS = BM * BK / THREADS, B_LOADS = BK * BN / THREADS;  // slab elements per item

    static_assert(I::M * I::K == GPU_WAVE_SIZE, "an MFMA operand is one element per lane of a 64-lane wave");
    static_assert(TM * I::M == WM && TN * I::N == WN && WM * WAVES_M == BM && WN * WAVES_N == BN, "waves tile C");
    static_assert(BK % I::K == 0, "whole MFMA steps per slab");
    static_assert(A_LOADS * THREADS == BM * BK && B_LOADS * THREADS == BK * BN, "slabs split evenly over items");
    static_assert(PAD >= 1 && BM % MFMA_LDS_BANKS == 0, "the pad analysis above");
};

// C = A·B for the BM×BN tile (blockIdx.y, blockIdx.x) of C, any M, N, K (loads outside A and B read as zero, stores
// outside C are skipped). Per slab: store the staged slab to LDS, barrier, issue the next slab's global loads into
// registers (in flight while the MFMAs run), TM·TN MFMAs per step of I::K, barrier.
template <class I, int BM, int BN, int BK, int WAVES_M, int WAVES_N>
__device__ __forceinline__ void mfma_matmul(const typename I::T* __restrict__ A, const typename I::T* __restrict__ B,
                                            typename I::T* __restrict__ C, int M, int N, int K) {
    using S = MfmaShape<I, BM, BN, BK, WAVES_M, WAVES_N>;
    using T = typename I::T;
    __shared__ T As[BK][BM + S::PAD];  // A slab transposed: As[k][m]
    __shared__ T Bs[BK][BN];           // B slab as in memory: Bs[k][n]

    const int t = threadIdx.x;
    const int lane = t % GPU_WAVE_SIZE, wave = t / GPU_WAVE_SIZE;
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    const int wm = wave / WAVES_N * S::WM, wn = wave % WAVES_N * S::WN;  // the wave tile inside the block
    // The element of each operand block this lane holds (calculator: A[i][k] in lane M·k + i, B[k][j] in lane N·k + j).
    const int a_i = lane % I::M, a_k = lane / I::M;
    const int b_j = lane % I::N, b_k = lane / I::N;
    const int c_j = lane % I::N;  // the column of C/D every element of this lane lies in

    // Slab element e = t + l·THREADS: A row e / BK, column e % BK (a wave reads whole rows of the slab); B row
    // e / BN, column e % BN (consecutive items, consecutive addresses).
    T a_next[S::A_LOADS], b_next[S::B_LOADS];
    auto load_slab = [&](int k0) {
#pragma unroll
        for (int l = 0; l < S::A_LOADS; ++l) {
            const int e = t + l * S::THREADS, m = bm + e / BK, k = k0 + e % BK;
            a_next[l] = T(0);
            if (m < M && k < K) a_next[l] = A[(size_t)m * K + k];
        }
#pragma unroll
        for (int l = 0; l < S::B_LOADS; ++l) {
            const int e = t + l * S::THREADS, k = k0 + e / BN, n = bn + e % BN;
            b_next[l] = T(0);
            if (k < K && n < N) b_next[l] = B[(size_t)k * N + n];
        }
    };

    typename I::Acc acc[S::TM][S::TN];
#pragma unroll
    for (int i = 0; i < S::TM; ++i)
#pragma unroll
        for (int j = 0; j < S::TN; ++j)
#pragma unroll
            for (int r = 0; r < I::REGS; ++r) acc[i][j][r] = T(0);

    // A do-while, so that the loop runs at least once: with K == 0 its one slab loads only zeros (the K guard) and C
    // comes out zero, as it should. A loop that may run zero times makes clang 15 merge the accumulators of both
    // paths in VGPRs after it, 64 more VGPRs for matmul_mfma_128x128x8_t256 (156 instead of 92 VGPRs+AGPRs).
    load_slab(0);
    int k0 = 0;
    do {
#pragma unroll
        for (int l = 0; l < S::A_LOADS; ++l) {
            const int e = t + l * S::THREADS;
            As[e % BK][e / BK] = a_next[l];
        }
#pragma unroll
        for (int l = 0; l < S::B_LOADS; ++l) {
            const int e = t + l * S::THREADS;
            Bs[e / BN][e % BN] = b_next[l];
        }
        __syncthreads();  // the slab is complete before any wave reads it
        if (k0 + BK < K) load_slab(k0 + BK);
#pragma unroll
        for (int kk = 0; kk < BK; kk += I::K) {
            T a[S::TM], b[S::TN];
#pragma unroll
            for (int i = 0; i < S::TM; ++i) a[i] = As[kk + a_k][wm + i * I::M + a_i];
#pragma unroll
            for (int j = 0; j < S::TN; ++j) b[j] = Bs[kk + b_k][wn + j * I::N + b_j];
#pragma unroll
            for (int i = 0; i < S::TM; ++i)
#pragma unroll
                for (int j = 0; j < S::TN; ++j) acc[i][j] = I::mma(a[i], b[j], acc[i][j]);
        }
        __syncthreads();  // every wave is done with the slab before the next one overwrites it
        k0 += BK;
    } while (k0 < K);

    // Element r of block (i, j) is C[row(r, lane)][lane % N] of the block: for each r, the lanes that share a row
    // write consecutive columns (32 floats or 16 doubles: 128 bytes).
#pragma unroll
    for (int i = 0; i < S::TM; ++i)
#pragma unroll
        for (int j = 0; j < S::TN; ++j)
#pragma unroll
            for (int r = 0; r < I::REGS; ++r) {
                const int row = bm + wm + i * I::M + I::row(r, lane), col = bn + wn + j * I::N + c_j;
                if (row < M && col < N) C[(size_t)row * N + col] = acc[i][j][r];
            }
}

#endif  // GPU_HAS_MFMA
