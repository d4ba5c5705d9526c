// Matrix multiplication ladder: C = A·B in FP32 and FP64, from the seed exercise's naive kernel to a register-blocked,
// double-buffered kernel meant to come close to the vendor BLAS on plain FMA units. Rung 11, FP64 on NVIDIA's
// tensor cores, is kernels/matmul_dmma.hip (its header says why a file of its own).
//
// Conventions shared by every kernel here (the Rust VARIANTS table relies on them):
// - Row-major, one element type T per kernel, float or double. A is M×K, B is K×N, C is M×N.
// - Signature: (const T* A, const T* B, T* C, int M, int N, int K).
// - One source per step: each rung is a template on T; its FP32 kernel keeps the rung's name (`matmul_X`) and its
//   FP64 instance is `matmul_X_f64` (and `matmul_X_f64_unaligned`). The FP32 kernels compile to the code they had
//   before FP64 existed (code objects for gfx90a, sm_90 and sm_80 compared, docs/matmul.md).
// - 2-D grid: blockIdx.x walks the columns of C (N direction), blockIdx.y the rows (M direction), so
//   grid = (ceil(N / BN), ceil(M / BM)) where BM×BN is the part of C one group computes.
// - Group sizes and LDS are compile-time constants; no kernel here uses dynamic LDS. All LDS is static and under
//   48 KiB, so no opt-in is needed on NVIDIA.
// - Nothing assumes 32 or 64 items per wave: where the layout of a wave matters it comes from GPU_WAVE_SIZE.
// - Plain FMA only (no tensor/matrix cores, no vendor-only copy engines), so the comparison with the vendor BLAS is
//   about how data is moved, not which arithmetic unit is used. (rocBLAS on gfx90a uses matrix cores in FP32 and
//   FP64; cuBLAS DGEMM the FP64 tensor cores. On a gfx90a GCD the ceiling for these kernels is the vector FMA peak,
//   23.9 TFLOP/s, or in FP32 47.9 where clang emits the packed v_pk_fma_f32, two FMAs per lane, as it does for the
//   register-blocked kernels below; FP64 has no packed form.)
// - Offsets are computed in int inside a tile and in size_t for row starts, so M·K, K·N and M·N may exceed 2^31.
// - Any M, N, K. The kernels with 16-byte accesses (6 on) come in two instances: `matmul_X` needs "aligned rows":
//   every row of A, B and C starts 16-byte aligned (N and K multiples of 4 in FP32, even in FP64; 16-byte aligned
//   base pointers), and `matmul_X_unaligned` is the same code with the global loads and C stores done one element
//   at a time, each guarded, for any size. The host launches the one the size allows (see WAVE_TILED_KERNELS_OF in
//   include/matmul_wave_tile.h for why two kernels).
//
// FP64 instances: a rung has one where its shape fits FP64's registers (twice FP32's per accumulator) and LDS (twice
// per slab) with no spill on sm_90 (nvcc 13) and gfx90a (hipcc 5.2). Registers on sm_90 / VGPRs+AGPRs on gfx90a / LDS:
//   naive .. blocktile_1d: 32-64 / 13-64 / up to 16 KiB; blocktile_2d, vectorized, warptile (ACC 64): 216-232 /
//   168-242 / 16 KiB; double_buffer_128x128x8_t256 228 / 224 / 32.3 KiB; double_buffer_64x128x8_t128 244 / 234 /
//   24.3 KiB; double_buffer_32x64x16_t64 (ACC 32) 214 / 190 / 24.3 KiB; splitk_64x128x8_t128 254 / 390 / 24.3 KiB;
//   streamk_64x64x16_t128 (ACC 32) 220 / 240 / 32.3 KiB (the _unaligned twins reach 255 on sm_90, no spill).
// Their k loops are unrolled by 2 on AMD (AMD_KUNROLL_2: fully unrolled, clang for gfx90a hoists every k's LDS reads,
// 422 VGPRs instead of 224 for 128×128×8) and fully on NVIDIA, as the FP32 shapes are. The other shapes have none,
// each an `invalid` FP64 row with the reason (ladder.rs): ACC 128 (256 registers of accumulators alone: nvcc spills
// 3.3 KB per item); BK = 16 with ACC 64 (two FP64 slabs take 48.3 KiB of LDS, over NVIDIA's 48 KiB of static shared
// memory; so the atomic split-K rung and its zeroing kernel have none); streamk_64x128x8_t128 (spills on sm_90); the
// 512-item wave64 shapes (made for 4 waves per SIMD within 128 VGPRs on gfx90a, which FP64 cannot keep: they spill
// there or under NVIDIA's 128 registers per item at 512 items). On gfx90a every FP64 shape is held to one or two
// waves per SIMD by its LDS; FP64 there is the MFMA rung's to win (not measured: no AMD GPU in reach).
//
// Measured once on an H100 SXM (sm_90, nvcc 13, M = N = K = 4096, TFLOP/s; cuBLAS SGEMM 51.3): naive 0.61,
// accumulator 5.4, tiled_m4/m8/m16/m32 1.6/5.1/8.1/8.7, blocktile_1d 15.4, blocktile_2d 21.2, vectorized 33.8,
// warptile ~38, double_buffer 47.5 (0.93× cuBLAS). Below 2048 the large tiles give too few groups for 132 SMs
// (8 at 512²): kernels 9 and 10 split K or stream slabs so that every SM works; docs/matmul.md has the numbers.
//
// This file is the ladder: one rung after the other, each with its idea, expected limit and launch in its header
// comment and the code of its step below it. What several rungs share is in include/: matmul_io.h (the parameter
// lists, the quad loads and stores of rungs 6 to 10 in both precisions) and matmul_wave_tile.h (the wave tile of
// rungs 7 to 10), matmul_split.h (split-K's K ranges, arrival count and reduction kernel, which the DMMA rung
// shares). A helper that carries a rung's idea stays at that rung even where later rungs reuse it:
// double_buffer_slabs (8).
#include "gpu.h"
#include "matmul_io.h"
#include "matmul_split.h"
#include "matmul_wave_tile.h"

// Defines the FP32 kernel NAME and its FP64 instance NAME_f64, groups of at most BOUNDS items, both running
// BODY<T, ...>(A, B, C, M, N, K): one source per step, two element types.
#define KERNEL_PAIR(NAME, BOUNDS, BODY, ...)                                                                      \
    GPU_KERNEL __launch_bounds__(BOUNDS) void NAME(MATMUL_PARAMS_OF(float)) {                                     \
        BODY<float, ##__VA_ARGS__>(A, B, C, M, N, K);                                                             \
    }                                                                                                             \
    GPU_KERNEL __launch_bounds__(BOUNDS) void NAME##_f64(MATMUL_PARAMS_OF(double)) {                              \
        BODY<double, ##__VA_ARGS__>(A, B, C, M, N, K);                                                            \
    }

// ---------------------------------------------------------------------------------------------------------------
// 1. matmul_naive — seed step 0: the kernel as the exercise first writes it.
//
// Idea: one item per element C[i][j]; at every k it reads C from global memory, adds A[i][k]·B[k][j] and writes C
// back, exactly like the seed's `matrix_c[i*N+j] += ...` inside the k loop.
// Expected limit: memory traffic. Per FMA it moves 4 words (A, B, and a read and write of C); A[i][k] is the same
// address for all items of a row of the group (a broadcast, one useful word per 64/128-byte transaction).
// Launch: group (16, 16, 1), grid (ceil(N/16), ceil(M/16)). Any M, N, K. C MUST BE ZEROED before the launch,
// because the kernel accumulates into it.
//
// The C access goes through a volatile pointer on purpose: A and B are __restrict__, so the compiler may prove
// that C[i][j] cannot change behind its back and keep it in a register for the whole loop, silently turning this
// kernel into matmul_accumulator. volatile keeps one global load and one global store per k, which is the point
// of this step.
// ---------------------------------------------------------------------------------------------------------------
#define SIMPLE_GROUP 16

template <class T>
__device__ __forceinline__ void naive(MATMUL_PARAMS_OF(T)) {
    const int i = blockIdx.y * SIMPLE_GROUP + threadIdx.y;  // row of C
    const int j = blockIdx.x * SIMPLE_GROUP + threadIdx.x;  // column of C: consecutive items, consecutive addresses
    if (i >= M || j >= N) return;
    volatile T* c = C + (size_t)i * N + j;
    const T* a = A + (size_t)i * K;
    for (int k = 0; k < K; ++k) *c += a[k] * B[(size_t)k * N + j];
}

KERNEL_PAIR(matmul_naive, SIMPLE_GROUP* SIMPLE_GROUP, naive)

// ---------------------------------------------------------------------------------------------------------------
// 2. matmul_accumulator — seed step 1: "eliminate the redundant memory accesses by using a local temporary".
//
// Idea: same mapping as matmul_naive, but the running sum lives in a register and C is written once.
// Expected limit: still memory/cache bound: 2 loads per FMA, and every item re-reads a whole row of A and column
// of B (reuse only through the caches). Roughly 2× the naive kernel where the naive one is bound by C traffic.
// Launch: group (16, 16, 1), grid (ceil(N/16), ceil(M/16)). Any M, N, K. C need not be zeroed (overwritten).
// ---------------------------------------------------------------------------------------------------------------
template <class T>
__device__ __forceinline__ void accumulator(MATMUL_PARAMS_OF(T)) {
    const int i = blockIdx.y * SIMPLE_GROUP + threadIdx.y;
    const int j = blockIdx.x * SIMPLE_GROUP + threadIdx.x;
    if (i >= M || j >= N) return;
    const T* a = A + (size_t)i * K;
    T sum = T(0);
    for (int k = 0; k < K; ++k) sum += a[k] * B[(size_t)k * N + j];
    C[(size_t)i * N + j] = sum;
}

KERNEL_PAIR(matmul_accumulator, SIMPLE_GROUP* SIMPLE_GROUP, accumulator)

// ---------------------------------------------------------------------------------------------------------------
// 3. matmul_tiled_m<TILE> — seed step 2: M×M tiles of A and B in LDS, two barriers per step.
//
// Idea: the group (TILE×TILE items) copies a TILE×TILE tile of A and of B into LDS with coalesced loads (consecutive
// items read consecutive columns), then every item runs TILE FMAs out of LDS. Each global word is now read once
// per group instead of once per item: global traffic drops by a factor TILE.
// Expected limit: LDS bandwidth and barriers. Per FMA each item still does 2 LDS reads (one of them a broadcast),
// and each step of TILE FMAs costs two barriers. Small TILE (4, 8) also means groups smaller than a wave (TILE=4 is
// 16 items: part of the wave idles) or little reuse. The seed asks to test TILE in {4, 8, 16, 32} (32×32 = 1024 is
// the largest group).
// Launch: group (TILE, TILE, 1), grid (ceil(N/TILE), ceil(M/TILE)). Any M, N, K: loads outside the matrices read
// as zero (they add nothing) and stores outside C are skipped. C need not be zeroed.
//
// Why two barriers: the first makes the freshly stored tile visible to every item before anyone reads it; the
// second keeps fast items from overwriting the tile (next step's loads) while slow items still read it.
// ---------------------------------------------------------------------------------------------------------------
template <class T, int TILE>
__device__ __forceinline__ void tiled(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C, int M,
                                      int N, int K) {
    __shared__ T As[TILE][TILE];
    __shared__ T Bs[TILE][TILE];
    const int x = threadIdx.x;  // column inside the tile
    const int y = threadIdx.y;  // row inside the tile
    const int row = blockIdx.y * TILE + y;
    const int col = blockIdx.x * TILE + x;
    const T* a = A + (size_t)row * K;  // only dereferenced when row < M
    T sum = T(0);
    for (int t = 0; t < K; t += TILE) {
        As[y][x] = (row < M && t + x < K) ? a[t + x] : T(0);
        Bs[y][x] = (t + y < K && col < N) ? B[(size_t)(t + y) * N + col] : T(0);
        __syncthreads();  // tile complete before anyone reads it
#pragma unroll
        for (int k = 0; k < TILE; ++k) sum += As[y][k] * Bs[k][x];  // As: broadcast along x; Bs: consecutive banks
        __syncthreads();  // everyone done reading before the next step overwrites the tile
    }
    if (row < M && col < N) C[(size_t)row * N + col] = sum;
}

KERNEL_PAIR(matmul_tiled_m4, 4 * 4, tiled, 4)
KERNEL_PAIR(matmul_tiled_m8, 8 * 8, tiled, 8)
KERNEL_PAIR(matmul_tiled_m16, 16 * 16, tiled, 16)
KERNEL_PAIR(matmul_tiled_m32, 32 * 32, tiled, 32)

// ---------------------------------------------------------------------------------------------------------------
// From here on: register blocking (beyond the seed, in the spirit of siboehm/SGEMM_CUDA kernels 4-10). Each item
// computes several elements of C, so each value read from LDS feeds several FMAs held in registers. Groups are 1-D
// (THREADS, 1, 1); the grid is still (ceil(N/BN), ceil(M/BM)).
// ---------------------------------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------------------------------
// 4. matmul_blocktile_1d — each item computes a column of TM = 8 results.
//
// Idea: the group computes a 64×64 block of C from 64×8 (A) and 8×64 (B) LDS tiles. Per k an item reads one B
// value into a register and reuses it for TM FMAs; the TM A values are broadcasts (all items of a wave share the
// same rows). LDS reads per FMA drop from 2 to ~1.1.
// Expected limit: still LDS-issue bound (one LDS read per FMA for A) and two barriers per 8-deep step; the global
// loads of the 64×8 A tile read only 32 contiguous bytes per row. Several times faster than matmul_tiled_m32.
// Launch: group (512, 1, 1), grid (ceil(N/64), ceil(M/64)). Any M, N, K (scalar loads, zero-filled outside the
// matrices; stores guarded). C need not be zeroed. LDS: 4 KiB.
// ---------------------------------------------------------------------------------------------------------------
#define BT1_BM 64
#define BT1_BN 64
#define BT1_BK 8
#define BT1_TM 8
#define BT1_THREADS (BT1_BM * BT1_BN / BT1_TM)  // 512

template <class T>
__device__ __forceinline__ void blocktile_1d(MATMUL_PARAMS_OF(T)) {
    __shared__ T As[BT1_BM][BT1_BK];
    __shared__ T Bs[BT1_BK][BT1_BN];
    static_assert(BT1_BM * BT1_BK == BT1_THREADS && BT1_BK * BT1_BN == BT1_THREADS, "one load per item per tile");

    const int t = threadIdx.x;
    const int bm = blockIdx.y * BT1_BM;
    const int bn = blockIdx.x * BT1_BN;
    // Compute mapping: consecutive items take consecutive columns (coalesced C stores, conflict-free B reads);
    // a wave shares one row band, so its A reads are broadcasts.
    const int tcol = t % BT1_BN;
    const int trow = t / BT1_BN;  // rows trow*TM .. trow*TM+TM-1 of the block
    // Load mapping: one element of each tile per item, consecutive items on consecutive addresses.
    const int a_row = t / BT1_BK, a_col = t % BT1_BK;
    const int b_row = t / BT1_BN, b_col = t % BT1_BN;
    const bool a_row_ok = bm + a_row < M;
    const bool b_col_ok = bn + b_col < N;
    const T* a_ptr = A + (size_t)(bm + a_row) * K + a_col;
    const T* b_ptr = B + (size_t)b_row * N + bn + b_col;

    T acc[BT1_TM] = {};
    for (int kt = 0; kt < K; kt += BT1_BK) {
        As[a_row][a_col] = (a_row_ok && kt + a_col < K) ? a_ptr[kt] : T(0);
        Bs[b_row][b_col] = (kt + b_row < K && b_col_ok) ? b_ptr[(size_t)kt * N] : T(0);
        __syncthreads();  // tiles complete before use
#pragma unroll
        for (int k = 0; k < BT1_BK; ++k) {
            const T b = Bs[k][tcol];  // one LDS read, reused TM times from a register
#pragma unroll
            for (int i = 0; i < BT1_TM; ++i) acc[i] += As[trow * BT1_TM + i][k] * b;
        }
        __syncthreads();  // everyone done reading before the next step overwrites the tiles
    }
#pragma unroll
    for (int i = 0; i < BT1_TM; ++i) {
        const int row = bm + trow * BT1_TM + i;
        if (row < M && bn + tcol < N) C[(size_t)row * N + bn + tcol] = acc[i];
    }
}

KERNEL_PAIR(matmul_blocktile_1d, BT1_THREADS, blocktile_1d)

// ---------------------------------------------------------------------------------------------------------------
// 5. matmul_blocktile_2d — each item computes an 8×8 (TM×TN) block of C.
//
// Idea: a 128×128 block of C per group of 256 items, from 128×8 / 8×128 LDS tiles. Per k an item loads TM values
// of A and TN values of B into registers and does TM·TN = 64 FMAs with them (outer product): 16 LDS words for 64
// FMAs instead of 2 per FMA. 64 accumulators per item.
// Expected limit: global loads are still scalar (4 of each tile per item per step); an item's TM values of A for
// one k lie down a column of As (stride BK), and the two row bands of items in a 32-lane phase hit the same banks
// (2-way conflict); two barriers per 8-deep step. Typically 1.3-2× matmul_blocktile_1d.
// Launch: group (256, 1, 1), grid (ceil(N/128), ceil(M/128)). Any M, N, K. C need not be zeroed. LDS: 8 KiB.
// ---------------------------------------------------------------------------------------------------------------
#define BT2_BM 128
#define BT2_BN 128
#define BT2_BK 8
#define BT2_TM 8
#define BT2_TN 8
#define BT2_THREADS (BT2_BM * BT2_BN / (BT2_TM * BT2_TN))  // 256

template <class T>
__device__ __forceinline__ void blocktile_2d(MATMUL_PARAMS_OF(T)) {
    __shared__ T As[BT2_BM][BT2_BK];
    __shared__ T Bs[BT2_BK][BT2_BN];
    constexpr int A_LOADS = BT2_BM * BT2_BK / BT2_THREADS;  // 4 elements of the A tile per item per step
    constexpr int B_LOADS = BT2_BK * BT2_BN / BT2_THREADS;  // 4 of the B tile
    static_assert(A_LOADS * BT2_THREADS == BT2_BM * BT2_BK && B_LOADS * BT2_THREADS == BT2_BK * BT2_BN, "tiling");

    const int t = threadIdx.x;
    const int bm = blockIdx.y * BT2_BM;
    const int bn = blockIdx.x * BT2_BN;
    const int tc = t % (BT2_BN / BT2_TN);  // columns tc*TN .. +TN-1 of the block
    const int tr = t / (BT2_BN / BT2_TN);  // rows tr*TM .. +TM-1

    T acc[BT2_TM][BT2_TN] = {};
    T ra[BT2_TM], rb[BT2_TN];
    for (int kt = 0; kt < K; kt += BT2_BK) {
        // Element e = t + l*THREADS of each tile: consecutive items on consecutive addresses.
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            const int e = t + l * BT2_THREADS;
            const int r = e / BT2_BK, c = e % BT2_BK;
            As[r][c] = (bm + r < M && kt + c < K) ? A[(size_t)(bm + r) * K + kt + c] : T(0);
        }
#pragma unroll
        for (int l = 0; l < B_LOADS; ++l) {
            const int e = t + l * BT2_THREADS;
            const int r = e / BT2_BN, c = e % BT2_BN;
            Bs[r][c] = (kt + r < K && bn + c < N) ? B[(size_t)(kt + r) * N + bn + c] : T(0);
        }
        __syncthreads();  // tiles complete before use
#pragma unroll
        for (int k = 0; k < BT2_BK; ++k) {
#pragma unroll
            for (int i = 0; i < BT2_TM; ++i) ra[i] = As[tr * BT2_TM + i][k];
#pragma unroll
            for (int j = 0; j < BT2_TN; ++j) rb[j] = Bs[k][tc * BT2_TN + j];
#pragma unroll
            for (int i = 0; i < BT2_TM; ++i)
#pragma unroll
                for (int j = 0; j < BT2_TN; ++j) acc[i][j] += ra[i] * rb[j];
        }
        __syncthreads();  // everyone done reading before the next step overwrites the tiles
    }
#pragma unroll
    for (int i = 0; i < BT2_TM; ++i) {
        const int row = bm + tr * BT2_TM + i;
        if (row >= M) continue;
#pragma unroll
        for (int j = 0; j < BT2_TN; ++j) {
            const int col = bn + tc * BT2_TN + j;
            if (col < N) C[(size_t)row * N + col] = acc[i][j];
        }
    }
}

KERNEL_PAIR(matmul_blocktile_2d, BT2_THREADS, blocktile_2d)

// ---------------------------------------------------------------------------------------------------------------
// 6. matmul_vectorized — matmul_blocktile_2d with 16-byte memory accesses everywhere.
//
// Idea: global loads and C stores move float4s (one 16-byte instruction instead of four). The A tile is stored
// transposed in LDS (As[k][m]) so that an item's TM values of A for one k are contiguous: the inner loop reads A
// and B fragments as float4 from LDS (4 LDS.128 per 64 FMAs instead of 16 scalar reads).
// Each row of As is padded by 4 floats (stride 132): the two float4s an A row contributes per step land in As
// rows 4 apart, 4·132 ≡ 16 (mod 32 banks), so the transposing scalar stores of a 32-lane phase (16 A rows × 2
// halves) hit 32 different banks. Without the pad they would collide 2-way. The pad keeps 16-byte alignment.
// Expected limit: a B fragment read of a 32-lane phase is 16 distinct float4s 32 bytes apart (512 bytes spanned
// for 256 bytes of data: twice the minimum LDS wavefronts), and two barriers per 8-deep step with no overlap of
// global loads and compute. ~1.5× matmul_blocktile_2d.
// Launch: group (256, 1, 1), grid (ceil(N/128), ceil(M/128)). matmul_vectorized: N and K multiples of 4 and 16-byte
// aligned base pointers (aligned rows), so every float4 of A, B and C is aligned and lies wholly inside or outside
// the matrix; M any. matmul_vectorized_unaligned: any M, N, K, loading and storing element by element. C need not be
// zeroed. LDS: 8.1 KiB.
// ---------------------------------------------------------------------------------------------------------------
#define VEC_BM 128
#define VEC_BN 128
#define VEC_BK 8
#define VEC_TM 8
#define VEC_TN 8
#define VEC_THREADS (VEC_BM * VEC_BN / (VEC_TM * VEC_TN))  // 256
#define VEC_APAD 4

template <class T, bool VEC>
__device__ __forceinline__ void vectorized(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C,
                                           int M, int N, int K, T (*As)[VEC_BM + VEC_APAD], T (*Bs)[VEC_BN]) {
    static_assert(VEC_BM * VEC_BK / 4 == VEC_THREADS && VEC_BK * VEC_BN / 4 == VEC_THREADS, "one quad each");
    // Whether a quad of aligned rows lies wholly inside or outside a row (FP32); an FP64 quad may end halfway.
    constexpr bool WHOLE = sizeof(T) == 4;
    const int t = threadIdx.x;
    const int bm = blockIdx.y * VEC_BM;
    const int bn = blockIdx.x * VEC_BN;
    const int tc = t % (VEC_BN / VEC_TN);
    const int tr = t / (VEC_BN / VEC_TN);
    // Load mapping: A tile: row t/2, k quad t%2 (a wave reads whole 32-byte row pieces); B tile: k row t/32,
    // column quad t%32 (a wave reads 512 contiguous bytes).
    const int a_row = t / (VEC_BK / 4), a_k = (t % (VEC_BK / 4)) * 4;
    const int b_k = t / (VEC_BN / 4), b_col = (t % (VEC_BN / 4)) * 4;
    const bool a_row_ok = bm + a_row < M;
    const int b_cols_left = N - (bn + b_col);  // > 0: the float4 starts inside the matrix
    const T* a_ptr = A + (size_t)(bm + a_row) * K + a_k;
    const T* b_ptr = B + (size_t)b_k * N + bn + b_col;

    T acc[VEC_TM][VEC_TN] = {};
    for (int kt = 0; kt < K; kt += VEC_BK) {
        Quad<T> va, vb;
        if (VEC && WHOLE) {
            va = load_or_zero(a_ptr + kt, a_row_ok && kt + a_k < K);
            vb = load_or_zero(b_ptr + (size_t)kt * N, kt + b_k < K && b_cols_left > 0);
        } else if (VEC) {  // FP64: each half of a quad lies wholly inside or outside the row
            va = load_halves_or_zero(a_ptr + kt, a_row_ok && kt + a_k < K, a_row_ok && kt + a_k + 2 < K);
            vb = load_halves_or_zero(b_ptr + (size_t)kt * N, kt + b_k < K && b_cols_left > 0,
                                     kt + b_k < K && b_cols_left > 2);
        } else {
            va = load_first_or_zero(a_ptr + kt, a_row_ok ? K - (kt + a_k) : 0);
            vb = load_first_or_zero(b_ptr + (size_t)kt * N, kt + b_k < K ? b_cols_left : 0);
        }
        As[a_k + 0][a_row] = va.x;
        As[a_k + 1][a_row] = va.y;
        As[a_k + 2][a_row] = va.z;
        As[a_k + 3][a_row] = va.w;
        *reinterpret_cast<Quad<T>*>(&Bs[b_k][b_col]) = vb;
        __syncthreads();  // tiles complete before use
#pragma unroll
        for (int k = 0; k < VEC_BK; ++k) {
            T ra[VEC_TM], rb[VEC_TN];
#pragma unroll
            for (int q = 0; q < VEC_TM / 4; ++q) {
                const Quad<T> v = *reinterpret_cast<const Quad<T>*>(&As[k][tr * VEC_TM + q * 4]);
                ra[q * 4 + 0] = v.x, ra[q * 4 + 1] = v.y, ra[q * 4 + 2] = v.z, ra[q * 4 + 3] = v.w;
            }
#pragma unroll
            for (int q = 0; q < VEC_TN / 4; ++q) {
                const Quad<T> v = *reinterpret_cast<const Quad<T>*>(&Bs[k][tc * VEC_TN + q * 4]);
                rb[q * 4 + 0] = v.x, rb[q * 4 + 1] = v.y, rb[q * 4 + 2] = v.z, rb[q * 4 + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < VEC_TM; ++i)
#pragma unroll
                for (int j = 0; j < VEC_TN; ++j) acc[i][j] += ra[i] * rb[j];
        }
        __syncthreads();  // everyone done reading before the next step overwrites the tiles
    }
#pragma unroll
    for (int i = 0; i < VEC_TM; ++i) {
        const int row = bm + tr * VEC_TM + i;
        if (row >= M) continue;
#pragma unroll
        for (int q = 0; q < VEC_TN / 4; ++q) {
            const int col = bn + tc * VEC_TN + q * 4;
            const Quad<T> v = make_quad(acc[i][q * 4 + 0], acc[i][q * 4 + 1], acc[i][q * 4 + 2], acc[i][q * 4 + 3]);
            T* c = &C[(size_t)row * N + col];
            if (VEC && WHOLE) {
                if (col < N) *reinterpret_cast<Quad<T>*>(c) = v;
            } else if (VEC) {
                if (col < N && N - col > 2)
                    *reinterpret_cast<Quad<T>*>(c) = v;
                else if (col < N)
                    store_first_half(c, v);
            } else {
                store_first(c, v, N - col);
            }
        }
    }
}

// The kernels of element type T: NAME (aligned rows) and NAME_unaligned.
#define VECTORIZED_KERNELS(T, NAME)                                                                               \
    GPU_KERNEL __launch_bounds__(VEC_THREADS) void NAME(MATMUL_PARAMS_OF(T)) {                                    \
        __shared__ __align__(16) T As[VEC_BK][VEC_BM + VEC_APAD]; /* transposed: As[k][m] */                      \
        __shared__ __align__(16) T Bs[VEC_BK][VEC_BN];                                                            \
        vectorized<T, true>(A, B, C, M, N, K, As, Bs);                                                            \
    }                                                                                                             \
    GPU_KERNEL __launch_bounds__(VEC_THREADS) void NAME##_unaligned(MATMUL_PARAMS_OF(T)) {                        \
        __shared__ __align__(16) T As[VEC_BK][VEC_BM + VEC_APAD];                                                 \
        __shared__ __align__(16) T Bs[VEC_BK][VEC_BN];                                                            \
        vectorized<T, false>(A, B, C, M, N, K, As, Bs);                                                           \
    }

VECTORIZED_KERNELS(float, matmul_vectorized)
VECTORIZED_KERNELS(double, matmul_vectorized_f64)

// ---------------------------------------------------------------------------------------------------------------
// 7. matmul_warptile — wave tiling (siboehm kernel 10), one LDS buffer.
//
// Idea: matmul_vectorized's register blocking and block shape (128×128, BK = 8, 256 items, 64 accumulators per
// item), with the item fragments arranged per wave (see WaveTile in include/matmul_wave_tile.h) so LDS fragment
// reads take one wavefront each, and with the transposing A stores bank-conflict-free (quad pad). Only the data
// layout changes from 6.
// Expected limit: the two barriers per slab and the global-load latency that is not overlapped with compute
// (items wait at the first barrier for their loads); other groups on the CU/SM hide part of it. Measured on an
// H100 SXM at 4096³: ~38 TFLOP/s (matmul_vectorized ~34).
// Launch: group (256, 1, 1), grid (ceil(N/128), ceil(M/128)). matmul_warptile: rows 16-byte aligned
// (aligned rows), M any; matmul_warptile_unaligned: any M, N, K. C need not be zeroed. LDS: 8.1 KiB.
// ---------------------------------------------------------------------------------------------------------------
template <class T, int BM, int BN, int BK, int THREADS, int IO, int KUNROLL>
__device__ __forceinline__ void warptile(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C, int M,
                                         int N, int K, T* lds) {
    using W = WaveTile<T, BM, BN, BK, THREADS, IO>;
    T* As = lds;
    T* Bs = lds + W::AS_SIZE;
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    const W w(A, B, M, N, K, bm, bn);
    T acc[W::WMITER * 4][W::WNITER * 4] = {};
    T ra[W::A_REGS], rb[W::B_REGS];
    for (int kt = 0; kt < K; kt += BK) {
        w.load(ra, rb, kt, (size_t)kt * W::ld(N), K, K, N);
        w.store(As, Bs, ra, rb);
        __syncthreads();  // slab complete before use
        w.template compute<KUNROLL>(As, Bs, acc);
        __syncthreads();  // everyone done reading before the next slab overwrites it
    }
    w.store_c(C, acc, M, N, bm, bn);
}

#define WARPTILE_KERNELS(T, NAME) WAVE_TILED_KERNELS_OF(T, NAME, 128, 128, 8, 256, 8, 1, , warptile, NO_MORE_PARAMS)

WARPTILE_KERNELS(float, matmul_warptile)
WARPTILE_KERNELS(double, matmul_warptile_f64)

// ---------------------------------------------------------------------------------------------------------------
// 8. matmul_double_buffer[_<BM>x<BN>x<BK>_t<THREADS>] — wave tiling plus double buffering: the best kernel at large
// sizes.
//
// Idea: two LDS buffers, and the global loads run two slabs ahead. During step s the group computes on slab s
// (LDS buffer s%2) while slab s+1 sits in registers (loaded during step s-1) and is then stored into the other
// buffer; slab s+2 is issued right before the barrier ending step s. Global-load latency thus hides behind a
// whole slab of outer products, and one barrier per slab suffices:
// - the barrier at the end of step s publishes buffer (s+1)%2 for step s+1;
// - the buffer written during step s+1, i.e. s%2, was last read during step s, and every item has passed the
//   barrier at the end of step s, so nobody still reads it.
// Expected limit: FMA issue and registers. Per k an item does ACC FMAs (128 for the default) for 6 LDS.128 reads;
// per slab the extra work is a few global loads, LDS stores, one barrier and loop overhead. FMA peak is ~67
// TFLOP/s on H100 SXM and 23.9 TFLOP/s (47.9 with packed FMA, which clang does emit) per gfx90a GCD. At small
// sizes the limit is the grid instead: ceil(M/BM)·ceil(N/BN) groups, e.g. 8 of the default shape at 512², leave
// most of 132 SMs idle (kernels 9 and 10 address that).
// Measured on an H100 SXM (sm_90, cuBLAS SGEMM 51.3 TFLOP/s at 4096³): default 47.5 TFLOP/s = 0.93× cuBLAS at
// 4096³ and 8192³, 0.95× at 4000³.
// Launch: group (THREADS, 1, 1), grid (ceil(N/BN), ceil(M/BM)). Rows 16-byte aligned (aligned rows), M any; the
// _unaligned instances: any M, N, K. C need not be zeroed. LDS: 2 × (BK·BM + (BK/4)·QPAD + BK·BN) floats, listed
// below.
//
// Instances (autotuning sweep). ACC = accumulators per item; H100 = measured TFLOP/s at 4096³.
//   matmul_double_buffer                   256×128×8,  256 items, ACC 128, LDS 24.3 KiB, H100 47.5 (the default)
//   matmul_double_buffer_128x256x8_t256    128×256×8,  256 items, ACC 128, LDS 24.3 KiB, H100 45.4
//   matmul_double_buffer_128x128x8_t256    128×128×8,  256 items, ACC  64, LDS 16.3 KiB, H100 41.5
//   matmul_double_buffer_128x128x16_t256   128×128×16, 256 items, ACC  64, LDS 32.3 KiB, H100 41.6
//   matmul_double_buffer_64x128x16_t128     64×128×16, 128 items, ACC  64, LDS 24.3 KiB, H100 43.7
// Smaller tiles, more groups (for sizes whose grid of 256×128 tiles leaves SMs idle; H200 = measured ratio to
// cuBLAS, this branch):
//   matmul_double_buffer_64x128x8_t128      64×128×8,  128 items, ACC  64, LDS 12.3 KiB, 3 groups per SM;
//                                           H200 0.91× at 1024² (128 groups), 0.97× at 3072²
//   matmul_double_buffer_32x64x16_t64       32×64×16,   64 items, ACC  32, LDS 12.3 KiB: the most groups (256
//                                           at 512²), for the smallest sizes; H200 0.64× at 512²
// On gfx90a the ACC = 128 instances take ~360 VGPRs (arch + acc: one wave per SIMD), the ACC = 64 ones 236 (two
// waves per SIMD) to ~400; none spills (scratch 0). Which shape wins there is not known yet: sweep them all.
// ---------------------------------------------------------------------------------------------------------------
// The double-buffered main loop of kernel 8, over the slabs of [kbegin, kend): acc += A[bm.., kbegin..kend) ·
// B[kbegin..kend), bn..). Kernels 9 and 10 run it over parts of K. The comment above says why one barrier per slab
// suffices. It ends with a barrier, so the caller may reuse the LDS right away.
template <int KUNROLL, class T, class W>
__device__ __forceinline__ void double_buffer_slabs(const W& w, T* lds, T (&acc)[W::WMITER * 4][W::WNITER * 4],
                                                    int kbegin, int kend, int K, int N) {
    constexpr int BK = W::SLAB_K;
    // Two buffers of each slab. (Indexed as arrays: written as pointer offsets `As + cur * AS_SIZE`, nvcc keeps
    // more addresses live, measured 240 -> 250 registers for the default shape.)
    T (*As)[W::AS_SIZE] = reinterpret_cast<T (*)[W::AS_SIZE]>(lds);
    T (*Bs)[W::BS_SIZE] = reinterpret_cast<T (*)[W::BS_SIZE]>(lds + 2 * W::AS_SIZE);
    T ra[W::A_REGS], rb[W::B_REGS];
    // The offset of B's k row kt, kept up to date by adds (a 64-bit multiply per slab costs more instructions).
    const size_t b_slab = (size_t)BK * W::ld(N);
    size_t b_rows = (size_t)kbegin * W::ld(N);

    // Prologue: slab 0 into buffer 0, slab 1 on its way into registers.
    w.load(ra, rb, kbegin, b_rows, kend, K, N);
    w.store(As[0], Bs[0], ra, rb);
    w.load(ra, rb, kbegin + BK, b_rows + b_slab, kend, K, N);
    b_rows += 2 * b_slab;
    __syncthreads();  // slab 0 visible to all

    int cur = 0;
    for (int kt = kbegin; kt < kend; kt += BK) {
        // Registers hold slab s+1 (issued before the previous barrier); LDS buffer `cur` holds slab s.
        w.template compute<KUNROLL>(As[cur], Bs[cur], acc);
        // The other buffer was last read in step s-1, and everyone has passed that step's barrier.
        w.store(As[cur ^ 1], Bs[cur ^ 1], ra, rb);
        // Issue slab s+2 now, just before the barrier. The compilers may not move memory accesses across a
        // barrier, so the loads are pinned here and their latency overlaps all of step s+1's compute. (Issued at
        // the top of the step instead, nvcc is free to sink them next to their use when registers are tight,
        // which serialises load latency and compute again: measured 35 instead of 47 TFLOP/s for one shape.)
        // Past kend the guards turn every load into zeros without touching memory, so no branch.
        w.load(ra, rb, kt + 2 * BK, b_rows, kend, K, N);
        b_rows += b_slab;
        __syncthreads();  // the only barrier: publishes slab s+1 (see the header comment for why it suffices)
        cur ^= 1;
    }
}

template <class T, int BM, int BN, int BK, int THREADS, int IO, int KUNROLL>
__device__ __forceinline__ void double_buffer(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C,
                                              int M, int N, int K, T* lds) {
    using W = WaveTile<T, BM, BN, BK, THREADS, IO>;
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    const W w(A, B, M, N, K, bm, bn);
    T acc[W::WMITER * 4][W::WNITER * 4] = {};
    double_buffer_slabs<KUNROLL>(w, lds, acc, 0, K, K, N);
    w.store_c(C, acc, M, N, bm, bn);
}

#define DOUBLE_BUFFER_KERNEL(T, NAME, BM, BN, BK, THREADS) \
    WAVE_TILED_KERNELS_AND_PACKED_OF(T, NAME, BM, BN, BK, THREADS, BK, 2, , double_buffer, NO_MORE_PARAMS)

// The FP64 and ACC 96 instances of the wave-tiled rungs (7 to 10) unroll a slab's k loop by 2 on AMD and by N
// elsewhere (BK, fully, unless an instance says why less): clang for gfx90a hoists the LDS reads of every unrolled k
// to the top of the slab, BK·(WMITER + WNITER)·4 elements more in registers (hipcc 5.2: 422 VGPRs+AGPRs fully
// unrolled against 224 by 2 for double_buffer_128x128x8_t256_f64, scratch for 32×64×16 and for the ACC 96 shapes
// 128×96 and 64×96: 48 and 136 B per lane), where nvcc keeps the full unroll within 255 registers.
#if defined(GPU_PLATFORM_AMD)
#define AMD_KUNROLL_2(N) 2
#else
#define AMD_KUNROLL_2(N) N
#endif
#define DOUBLE_BUFFER_KERNEL_F64(NAME, BM, BN, BK, THREADS) \
    WAVE_TILED_KERNELS_OF(double, NAME, BM, BN, BK, THREADS, AMD_KUNROLL_2(BK), 2, , double_buffer, NO_MORE_PARAMS)
#define DOUBLE_BUFFER_KERNEL_ACC96(NAME, BM, BN, BK, THREADS, TWINS) \
    TWINS(float, NAME, BM, BN, BK, THREADS, AMD_KUNROLL_2(BK), 2, , double_buffer, NO_MORE_PARAMS)

DOUBLE_BUFFER_KERNEL(float, matmul_double_buffer, 256, 128, 8, 256)
DOUBLE_BUFFER_KERNEL(float, matmul_double_buffer_128x256x8_t256, 128, 256, 8, 256)
DOUBLE_BUFFER_KERNEL(float, matmul_double_buffer_128x128x8_t256, 128, 128, 8, 256)
DOUBLE_BUFFER_KERNEL(float, matmul_double_buffer_128x128x16_t256, 128, 128, 16, 256)
DOUBLE_BUFFER_KERNEL(float, matmul_double_buffer_64x128x16_t128, 64, 128, 16, 128)
DOUBLE_BUFFER_KERNEL(float, matmul_double_buffer_64x128x8_t128, 64, 128, 8, 128)
DOUBLE_BUFFER_KERNEL(float, matmul_double_buffer_32x64x16_t64, 32, 64, 16, 64)
// Tiles of three sub-tiles (ACC 96, WaveShape) for sides of 96 or 192, which 64- or 128-wide tiles overrun by a third
// (docs/matmul.md, "Fourth round"); 223 and 213 registers (sm_90, nvcc 13.5); no _packed twin at 96 wide (rungs.rs).
DOUBLE_BUFFER_KERNEL_ACC96(matmul_double_buffer_128x96x16_t128, 128, 96, 16, 128, WAVE_TILED_KERNELS_OF)
DOUBLE_BUFFER_KERNEL_ACC96(matmul_double_buffer_96x128x16_t128, 96, 128, 16, 128, WAVE_TILED_KERNELS_AND_PACKED_OF)
// FP64 (see "FP64 instances" in the header comment for the shapes that have none): ACC 64 and 32.
DOUBLE_BUFFER_KERNEL_F64(matmul_double_buffer_128x128x8_t256_f64, 128, 128, 8, 256)
DOUBLE_BUFFER_KERNEL_F64(matmul_double_buffer_64x128x8_t128_f64, 64, 128, 8, 128)
DOUBLE_BUFFER_KERNEL_F64(matmul_double_buffer_32x64x16_t64_f64, 32, 64, 16, 64)

// Wave64 shapes for gfx90a: at most 128 VGPRs+AGPRs per lane and no scratch, so 4 waves per SIMD (50% occupancy)
// fit by registers, and LDS per group small enough that the groups holding those 16 waves per CU fit in 64 KiB.
// - Registers: the k loop is unrolled by 2, not 8 (see WaveTile::compute), and the compiler is held to 128 per
//   lane (GPU_AMD_MIN_WAVES_PER_SIMD(4)); `suite kernels inspect --arch gfx90a --sources matmul` shows the result,
//   and a CPU test (kernels::tests) fails if either shape needs more than 128 or any scratch.
// - LDS: a wave of a group with W waves owns 2·BK·(BM + BN)·4/W bytes (two slabs); 16 waves per CU need that at
//   most 4 KiB. 256×128×8 with 8 waves: 24.3 KiB per group, 2 groups = 16 waves. (128×128×8 with 4 waves, the ACC
//   64 shape above, needs 16.3 KiB per 4 waves: only 3 groups fit, 37.5%.)
// - 512 items with slabs of 256 (A, 128×8) or 512 float4s: where a slab has fewer float4s than items, only the
//   first items load one (WaveTile::a_in / b_in).
//   matmul_double_buffer_256x128x8_t512    256×128×8, 512 items, ACC 64, LDS 24.3 KiB; gfx90a 116 VGPRs: 4 waves
//                                          per SIMD, 2 groups per CU (50%); sm_90 124 registers, H100 37.2 TFLOP/s
//   matmul_double_buffer_128x128x8_t512    128×128×8, 512 items, ACC 32, LDS 16.3 KiB; gfx90a 80 VGPRs: 6 waves
//                                          per SIMD, 3 groups per CU (75%); sm_90 97 registers, H100 28.7 TFLOP/s
// On NVIDIA (warp32) the same code runs 16 warps per group; 512 items at <= 128 registers each fit an SM once
// (65536 / (512 · 128)). Fully unrolled there, nvcc needs more than 128 and spills; unrolled by 2 it does not. H100
// figures at 4096³ (cuBLAS 51.7): 72% and 55% of cuBLAS, against 80-92% for the shapes above, which keep up to
// 240 registers per thread on NVIDIA but cannot reach 4 waves per SIMD on gfx90a.
#define DOUBLE_BUFFER_WAVE64_KERNEL(T, NAME, BM, BN, BK, THREADS)                                              \
    WAVE_TILED_KERNELS_AND_PACKED_OF(T, NAME, BM, BN, BK, THREADS, 2, 2, GPU_AMD_MIN_WAVES_PER_SIMD(4),          \
                                     double_buffer, NO_MORE_PARAMS)

DOUBLE_BUFFER_WAVE64_KERNEL(float, matmul_double_buffer_256x128x8_t512, 256, 128, 8, 512)
DOUBLE_BUFFER_WAVE64_KERNEL(float, matmul_double_buffer_128x128x8_t512, 128, 128, 8, 512)

// ---------------------------------------------------------------------------------------------------------------
// 9. matmul_splitk_<BM>x<BN>x<BK>_t<THREADS> — split-K: more groups for matrices too small to fill the device.
//
// Idea: at 512² the 256×128 tiles of kernel 8 make 8 groups for 132 SMs (64×128 tiles: 32). Split-K cuts K into
// S ranges of whole slabs and launches S groups per tile of C (grid z), each running kernel 8's double-buffered
// loop over its range: S times the groups, each S times shorter. The partial tiles meet in a workspace and are added
// in the fixed order z = 0, 1, ..., S-1 (include/matmul_split.h): by the group that completes the tile's count
// (last_to_arrive), which writes C, or, where the host passes no counters, by matmul_splitk_reduce, launched next.
// The order does not depend on which group arrives last, so the result is the same bits in every run.
// Expected limit: at small sizes, the latency of a short K range (the prologue's two slabs, then S-fold less work
// to hide it behind) plus the sum: in the kernel, the serial tail of the tile's last group, which reads S partial
// tiles from L2; in the reduction kernel, its launch gap. Extra traffic S·M·N elements written and read back. S and
// where the sum is done are chosen on the host (ladder.rs: `split_k_for`, `Fixup`; the autotune step searches S);
// at large sizes S = 1, and the kernel is kernel 8 plus one comparison.
// Launch: group (THREADS, 1, 1), grid (ceil(N/BN), ceil(M/BM), S). Aligned rows, M any (_unaligned: any M, N, K).
// Arguments: A, B, C, M, N, K, then work (tiles·S·BM·BN elements: partial tile z of tile t at (t·S + z)·BM·BN, in
// fragment order, see WaveTile::store_partial) and counters: with counters (tiles unsigned ints, zero before the
// first launch; each launch leaves them zero) the kernel writes C; with counters null (FP32 only) matmul_splitk_reduce
// does. With S = 1 neither is read. C need not be zeroed.
// ---------------------------------------------------------------------------------------------------------------

template <class T, int BM, int BN, int BK, int THREADS, int IO, int KUNROLL>
__device__ __forceinline__ void splitk(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C, int M,
                                       int N, int K, T* lds, T* work, unsigned* counters) {
    using W = WaveTile<T, BM, BN, BK, THREADS, IO>;
    const int splits = gridDim.z, z = blockIdx.z;
    const int tile = blockIdx.y * gridDim.x + blockIdx.x;
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    int kbegin, kend;
    split_range<BK>(K, z, splits, kbegin, kend);
    const W w(A, B, M, N, K, bm, bn);
    T acc[W::WMITER * 4][W::WNITER * 4] = {};
    double_buffer_slabs<KUNROLL>(w, lds, acc, kbegin, kend, K, N);
    if (splits == 1) {
        w.store_c(C, acc, M, N, bm, bn);
        return;
    }
    T* partials = work + (size_t)tile * splits * (BM * BN);
    w.store_partial(partials + (size_t)z * (BM * BN), acc);
    // Without counters the sum is matmul_splitk_reduce's (FP32 only: FP64's _unaligned instance has no register to
    // spare for the test, nvcc 13.5 spills 8 bytes; its partial tiles are always summed here).
    if (sizeof(T) == 4 && counters == nullptr) return;
    if (!last_to_arrive(&counters[tile], splits)) return;
#pragma unroll
    for (int r = 0; r < W::WMITER * 4; ++r)
#pragma unroll
        for (int c = 0; c < W::WNITER * 4; ++c) acc[r][c] = T(0);
    for (int s = 0; s < splits; ++s) w.add_partial(partials + (size_t)s * (BM * BN), acc);
    w.store_c(C, acc, M, N, bm, bn);
}

#define SPLITK_KERNEL(T, NAME, BM, BN, BK, THREADS, KUNROLL, ATTRS) \
    WAVE_TILED_KERNELS_OF(T, NAME, BM, BN, BK, THREADS, KUNROLL, 2, ATTRS, splitk, WORKSPACE_PARAMS, work, counters)
// The FP32 instances, with their _packed twins.
#define SPLITK_KERNEL_F32(NAME, BM, BN, BK, THREADS, KUNROLL, ATTRS)                                             \
    WAVE_TILED_KERNELS_AND_PACKED_OF(float, NAME, BM, BN, BK, THREADS, KUNROLL, 2, ATTRS, splitk, WORKSPACE_PARAMS, \
                                     work, counters)

// Instances. H200 = ratio to cuBLAS measured on an H200 (nvcc 13.0) with the split S that the autotune step found
// best there (matmul.rs searches S; rows without autotuning use split_k_for).
//   matmul_splitk_128x64x16_t128   128×64×16,  128 items, ACC 64: 512² S = 4, 128 groups: 0.92×
//   matmul_splitk_64x128x16_t128    64×128×16, 128 items, ACC 64: 1023² (unaligned) S = 3: 0.88×
//   matmul_splitk_64x128x8_t128     64×128×8,  128 items, ACC 64, 3 groups per SM: 768² S = 5: 1.06×
//   matmul_splitk_128x128x8_t128   128×128×8,  128 items, ACC 128: 1024² S = 2: 0.99×
SPLITK_KERNEL_F32(matmul_splitk_128x64x16_t128, 128, 64, 16, 128, 16, )
SPLITK_KERNEL_F32(matmul_splitk_64x128x16_t128, 64, 128, 16, 128, 16, )
SPLITK_KERNEL_F32(matmul_splitk_64x128x8_t128, 64, 128, 8, 128, 8, )
SPLITK_KERNEL_F32(matmul_splitk_128x128x8_t128, 128, 128, 8, 128, 8, )
// Tiles of three sub-tiles, split (kernel 8 says why; 64×96: 251 registers, 4 groups per SM on sm_90, nvcc 13.5).
SPLITK_KERNEL(float, matmul_splitk_64x96x16_t64, 64, 96, 16, 64, AMD_KUNROLL_2(16), )
SPLITK_KERNEL_F32(matmul_splitk_96x128x16_t128, 96, 128, 16, 128, AMD_KUNROLL_2(16), )
// The wave64 shape of kernel 8 (128 VGPRs at most, see DOUBLE_BUFFER_WAVE64_KERNEL), split.
SPLITK_KERNEL_F32(matmul_splitk_128x128x8_t512, 128, 128, 8, 512, 2, GPU_AMD_MIN_WAVES_PER_SIMD(4))
// FP64 (the header comment says why only this shape). Its slab of 8 is unrolled by 4 on NVIDIA: fully unrolled, the
// _unaligned twin spills 8 to 32 bytes per item with nvcc 13.5 on sm_90 since B's LDS layout regroups FP64 halves
// (WaveTile::bs_col); by 4 it keeps 254 registers and no stack on sm_90 and sm_80.
SPLITK_KERNEL(double, matmul_splitk_64x128x8_t128_f64, 64, 128, 8, 128, AMD_KUNROLL_2(4), )

// The sum of split-K's partial tiles when the kernel is launched without counters (include/matmul_split.h): the
// FP32 split-K rung's (fragment order) and the DMMA rung's (row-major tiles in its grouped order). Launch: any grid of
// 256-item groups; arguments: work, C, M, N, S, aligned (1 when C's rows are 16-byte aligned), BM, BN, the split
// kernel's group size (0: row-major tiles), the grouped order's tile rows, the first tile and the number of tiles.
#define SPLITK_REDUCE_PARAMS(T)                                                                                   \
    const T *__restrict__ work, T *__restrict__ C, int M, int N, int S, int aligned, int BM, int BN, int threads, \
        int group_m, int tile_base, int tiles
GPU_KERNEL __launch_bounds__(256) void matmul_splitk_reduce(SPLITK_REDUCE_PARAMS(float)) {
    splitk_reduce<float>(work, C, M, N, S, aligned, BM, BN, threads, group_m, tile_base, tiles);
}
GPU_KERNEL __launch_bounds__(256) void matmul_splitk_reduce_f64(SPLITK_REDUCE_PARAMS(double)) {
    splitk_reduce<double>(work, C, M, N, S, aligned, BM, BN, threads, group_m, tile_base, tiles);
}

// ---------------------------------------------------------------------------------------------------------------
// 9b. matmul_splitk_atomic_<BM>x<BN>x<BK>_t<THREADS> — split-K adding partial tiles into C with atomics.
//
// Idea: kernel 9 without workspace or counters: every group adds its partial tile into C with one atomic add per
// element, so C must be zero first (matmul_zero_c, launched before it and counted in its time). The order in which
// the S partials reach an element depends on scheduling, so the last bits of C can differ from run to run: this
// variant is here to measure what determinism costs, not to be used.
// Expected limit: S·M·N atomic adds at L2 (one per element per split) plus the zeroing pass and its launch gap.
// Measured on an H200 in the 64×128×16 shape: 0.73× cuBLAS at 512² (S = 4) against 0.92× for the deterministic
// kernel 9 in its best shape; at every size tried it was slower than kernel 9 with the same S, so here
// determinism costs nothing.
// Launch: matmul_zero_c (any grid of 256-item groups), then group (THREADS, 1, 1), grid (ceil(N/BN), ceil(M/BM), S).
// Aligned rows, M any (_unaligned: any M, N, K).
// ---------------------------------------------------------------------------------------------------------------
template <class T, int BM, int BN, int BK, int THREADS, int IO, int KUNROLL>
__device__ __forceinline__ void splitk_atomic(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C,
                                              int M, int N, int K, T* lds) {
    using W = WaveTile<T, BM, BN, BK, THREADS, IO>;
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    int kbegin, kend;
    split_range<BK>(K, blockIdx.z, gridDim.z, kbegin, kend);
    const W w(A, B, M, N, K, bm, bn);
    T acc[W::WMITER * 4][W::WNITER * 4] = {};
    double_buffer_slabs<KUNROLL>(w, lds, acc, kbegin, kend, K, N);
#pragma unroll
    for (int wm = 0; wm < W::WMITER; ++wm)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int row = bm + w.m0 + wm * W::WSUBM + i;
            if (row >= M) continue;
#pragma unroll
            for (int c = 0; c < W::WNITER * 4; ++c) {
                const int col = bn + w.n0 + (c / 4) * W::WSUBN + c % 4;
                if (col < N) atomicAdd(&C[(size_t)row * N + col], acc[wm * 4 + i][c]);
            }
        }
}

GPU_KERNEL __launch_bounds__(256) void matmul_zero_c(float* __restrict__ C, int M, int N) {
    const size_t count = (size_t)M * N, stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) C[i] = 0.0f;
}

#define SPLITK_ATOMIC_KERNEL(T, NAME, BM, BN, BK, THREADS) \
    WAVE_TILED_KERNELS_OF(T, NAME, BM, BN, BK, THREADS, BK, 2, , splitk_atomic, NO_MORE_PARAMS)

SPLITK_ATOMIC_KERNEL(float, matmul_splitk_atomic_64x128x16_t128, 64, 128, 16, 128)

// ---------------------------------------------------------------------------------------------------------------
// 10. matmul_streamk_<BM>x<BN>x<BK>_t<THREADS> — stream-K: exactly as many groups as the device holds at once, each
// with the same number of slabs.
//
// Idea (Osama, Merrill et al., "Stream-K", PPoPP 2023): split-K still leaves a partial last wave whenever
// tiles·S is not a multiple of the groups the device holds (768² in 64×128 tiles: 72 tiles, 144 groups on 132 SMs).
// Stream-K lays the tiles' slabs end to end, tile after tile (tiles·ceil(K/BK) iterations), and gives group g of G
// the range [g·I/G, (g+1)·I/G): every group does the same work to within one slab, whatever the size. A group walks
// its range tile by tile: a whole tile goes straight to C; a part of a tile goes to the workspace, and the group
// that completes the tile's count (last_to_arrive) adds the parts in the order of their groups and writes C, as in
// kernel 9. A group's range cuts at most two tiles (its first and its last), so the workspace holds two slots per
// group. G = SMs × groups per SM (from the occupancy API) is chosen on the host.
// Expected limit: kernel 8's per-SM rate, less the pipeline restart at each tile boundary and the partial-tile
// traffic (at most 2·G tiles written and read back); it should be level across sizes, where kernels 8 and 9 step
// with the number of tiles.
// Launch: group (THREADS, 1, 1), grid (G, 1, 1), G <= tiles·ceil(K/BK) < 2^31. Aligned
// rows, M any (_unaligned: any M, N, K). Arguments: A, B, C, M, N, K, work (2·G·BM·BN floats) and counters (tiles
// unsigned ints, zero before the first launch; left zero). C need not be zeroed.
// ---------------------------------------------------------------------------------------------------------------
// Stream-K's partition of `total` iterations over `groups` groups: group h owns [first(h), first(h + 1)). Iteration
// numbers fit an int (the host checks total < 2^31); their products with group numbers are taken in 64 bits.
struct StreamPartition {
    int total, groups;
    __device__ __forceinline__ int first(int h) const { return (int)((long long)h * total / groups); }
    // The group owning iteration i: the last h with first(h) <= i.
    __device__ __forceinline__ int owner(int i) const { return (int)(((long long)(i + 1) * groups - 1) / total); }
};

template <class T, int BM, int BN, int BK, int THREADS, int IO, int KUNROLL>
__device__ __forceinline__ void streamk(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C, int M,
                                        int N, int K, T* lds, T* work, unsigned* counters) {
    using W = WaveTile<T, BM, BN, BK, THREADS, IO>;
    const int tiles_n = (N + BN - 1) / BN;
    const int per_tile = (K + BK - 1) / BK;  // iterations (slabs) per tile
    const int total = (M + BM - 1) / BM * tiles_n * per_tile;
    // At most one group per iteration, so that every group owns at least one and the owners of a tile's iterations
    // are consecutive groups that all take part (the host launches no more; surplus groups would only leave).
    const StreamPartition part{total, min((int)gridDim.x, total)};
    if ((int)blockIdx.x >= part.groups) return;
    int it = part.first(blockIdx.x);
    const int end = part.first(blockIdx.x + 1);
    while (it < end) {
        const int tile = it / per_tile;
        const int k0 = it - tile * per_tile;
        const int k1 = min(per_tile, k0 + (end - it));
        it += k1 - k0;
        const int bm = (tile / tiles_n) * BM, bn = (tile % tiles_n) * BN;
        const W w(A, B, M, N, K, bm, bn);
        T acc[W::WMITER * 4][W::WNITER * 4] = {};
        double_buffer_slabs<KUNROLL>(w, lds, acc, k0 * BK, min(K, k1 * BK), K, N);
        if (k0 == 0 && k1 == per_tile) {
            w.store_c(C, acc, M, N, bm, bn);
            continue;
        }
        // Slot 0 of a group holds the tile its range starts in, slot 1 the tile its range ends in.
        const int tile_start = tile * per_tile;
        const int h0 = part.owner(tile_start), h1 = part.owner(tile_start + per_tile - 1);
        auto slot = [&](int h) {
            return work + (size_t)(2 * h + (part.first(h) >= tile_start ? 0 : 1)) * (BM * BN);
        };
        w.store_partial(slot(blockIdx.x), acc);
        if (!last_to_arrive(&counters[tile], (unsigned)(h1 - h0 + 1))) continue;
#pragma unroll
        for (int r = 0; r < W::WMITER * 4; ++r)
#pragma unroll
            for (int c = 0; c < W::WNITER * 4; ++c) acc[r][c] = T(0);
        for (int h = h0; h <= h1; ++h) w.add_partial(slot(h), acc);
        w.store_c(C, acc, M, N, bm, bn);
    }
}

#define STREAMK_KERNEL(T, NAME, BM, BN, BK, THREADS, KUNROLL, ATTRS) \
    WAVE_TILED_KERNELS_OF(T, NAME, BM, BN, BK, THREADS, KUNROLL, 2, ATTRS, streamk, WORKSPACE_PARAMS, work, counters)
// The FP32 instances, with their _packed twins.
#define STREAMK_KERNEL_F32(NAME, BM, BN, BK, THREADS, KUNROLL, ATTRS)                                            \
    WAVE_TILED_KERNELS_AND_PACKED_OF(float, NAME, BM, BN, BK, THREADS, KUNROLL, 2, ATTRS, streamk, WORKSPACE_PARAMS, \
                                     work, counters)

// Instances. H200 = ratio to cuBLAS measured on an H200 (nvcc 13.0), G = 132 × groups per SM.
//   matmul_streamk_128x128x8_t128  128×128×8,  128 items, ACC 128, G = 264: 1536² 1.06×, 3072² 0.99×,
//                                  4097² (unaligned) 0.95×
//   matmul_streamk_64x128x8_t128    64×128×8,  128 items, ACC 64,  G = 396: 1536² 1.06×, 768² 1.01×
//   matmul_streamk_64x64x16_t128    64×64×16,  128 items, ACC 32,  G = 396: 768² 1.01×
STREAMK_KERNEL_F32(matmul_streamk_128x128x8_t128, 128, 128, 8, 128, 8, )
STREAMK_KERNEL_F32(matmul_streamk_64x128x8_t128, 64, 128, 8, 128, 8, )
STREAMK_KERNEL_F32(matmul_streamk_64x64x16_t128, 64, 64, 16, 128, 16, )
// The wave64 shape of kernel 8 (128 VGPRs at most, see DOUBLE_BUFFER_WAVE64_KERNEL), streamed.
STREAMK_KERNEL_F32(matmul_streamk_128x128x8_t512, 128, 128, 8, 512, 2, GPU_AMD_MIN_WAVES_PER_SIMD(4))
// FP64 (the header comment says why only this shape). On NVIDIA its slab of 16 is unrolled by 8: fully unrolled, nvcc
// 13 spills 8 bytes per item of the _unaligned twin on sm_80 (255 registers; by 8: 232, and 228 on sm_90).
STREAMK_KERNEL(double, matmul_streamk_64x64x16_t128_f64, 64, 64, 16, 128, AMD_KUNROLL_2(8), )

// ---------------------------------------------------------------------------------------------------------------
// The copies the _packed kernels read (FP32 rungs 8 to 10; include/matmul_wave_tile.h, IO_PACKED): A (M×K) into Ap,
// M rows of ld(K) elements, where pack_a, and B (K×N) into Bp, K rows of ld(N), where pack_b, each row padded with
// zeros to a multiple of 4 elements (16 bytes), so that every row of the copies starts 16-byte aligned and the kernel
// reads them with 16-byte loads. The host enqueues this kernel before the _packed kernel in every launch of the
// product, so it is timed with it. What it buys: the _unaligned kernels' 4-byte loads touch nearly five times the L1
// sectors of 16-byte ones and lose about a tenth of the product's time (docs/matmul.md); the copy is memory-bound,
// (M·K + K·N) elements read and (M·ld(K) + K·ld(N)) written, and pays wherever the product does enough FLOP per
// byte copied (ladder.rs: pack_pays).
// One quad of a padded row per item and row: its four elements loaded one by one (guarded by the source row's end;
// consecutive items read consecutive 16-byte spans, so a wave's loads cover its span's cache lines once) and stored
// as one 16-byte access (every padded row starts 16-byte aligned). Each item copies its quad in rows y, y + R,
// y + 2R, ..., four rows at a time with all their loads issued before the stores, so a few waves per SM keep enough
// loads in flight. (A first version, one element per item and no loop, launched 32,000 groups of one load and one
// store each at 2047³; the best packed kernel there took 404 µs on an H200, where the aligned kernel took 362 at
// 2048³ in an earlier run: 40 µs for a copy whose bytes take 14 µs at memory bandwidth.)
// Launch: group (256, 1, 1), grid (ceil(max(ld(K), ld(N)) / 1024), R, 2), R ≤ 65535: z = 0 copies A, z = 1 copies B
// (nothing where its flag is 0).
// ---------------------------------------------------------------------------------------------------------------
#include "matmul_pack.h"
GPU_KERNEL __launch_bounds__(256) void matmul_pack_operands(const float* __restrict__ A, const float* __restrict__ B,
                                                            float* __restrict__ Ap, float* __restrict__ Bp, int M,
                                                            int N, int K, int pack_a, int pack_b) {
    pack_operands(A, B, Ap, Bp, M, N, K, pack_a, pack_b);
}

// The reference kernels (matmul_reference_f64, matmul_reference_dot2_f64): include/matmul_reference.h.
#include "matmul_reference.h"

// ===============================================================================================================
// 11. Matrix rungs: MFMA on gfx90a (CDNA2). NOT RUN ON AMD HARDWARE: no AMD GPU is in reach. They compile for gfx90a,
// their resources are read from the code object, and their logic runs at 64 lanes in the CPU emulation, whose MFMA
// builtins follow AMD's Matrix Instruction Calculator (docs/matmul.md, "Matrix rungs: MFMA on gfx90a").
//
// rocBLAS on gfx90a runs SGEMM and DGEMM on the matrix units; these rungs climb to them, leaving the plain-FMA
// convention of the rungs above on purpose. Each has its own element type (float, double) and the ladder's
// signature, (const T* A, const T* B, T* C, int M, int N, int K): row-major, A M×K, B K×N, C M×N, grid
// (ceil(N/128), ceil(M/128)) with blockIdx.x along N. Any M, N >= 1 and K >= 0: loads outside A and B read zero,
// stores outside C are skipped (K = 0 writes zeros). C need not be zeroed. Static LDS only.
//
// Both exist only where the architecture has the instructions (GPU_HAS_MFMA, include/gpu.h: gfx90a, gfx940, gfx941,
// gfx942, and the CPU emulation at 64 lanes): NVIDIA (sm_80, sm_90), RDNA (gfx1030, gfx1100) and gfx908 code objects
// lack the symbols. The instructions' layouts and the body both rungs share (a block tile staged through LDS, each
// wave a register tile of several MFMA blocks) are in include/matmul_mfma.h.
//
// Peak (MI250X GCD): 256 FLOP per CU per cycle for both instructions (calculator 1.3.2, "FLOPs/CU/cycle: 256"), 110
// CUs at 1.7 GHz: 47.9 TFLOP/s in FP32 and in FP64. What limits each rung is said below; none is measured.
// ===============================================================================================================
#include "matmul_mfma.h"
#if defined(GPU_HAS_MFMA)

// ---------------------------------------------------------------------------------------------------------------
// 11a. matmul_mfma_128x128x8_t256 — FP32 on the matrix units: v_mfma_f32_32x32x2f32.
//
// Idea: a group of 4 waves (2×2) computes a 128×128 block of C in slabs of BK = 8; each wave owns a 64×64 wave tile,
// 2×2 MFMA blocks of 32×32, whose 64 accumulators per lane stay in registers for the whole K loop. Per step of
// k (2 of them per MFMA) a wave reads 2 A and 2 B operands from LDS (one float per lane each) and issues 4 MFMAs.
// Why 32x32x2 rather than 16x16x4 (both 256 FLOP/CU/cycle): the same 64×64 wave tile takes 4 MFMAs of 64 cycles per
// 2 k instead of 16 of 32 cycles per 4 k, half the instructions to issue for the same operand traffic.
// Layout (calculator 1.3.2, -a cdna2): lane l holds A[l%32][l/32] and B[l/32][l%32] of a block ("Lane: 32 * k + i",
// "32 * k + j"), and element r of its float16 is C[8·(r/4) + 4·(l/32) + r%4][l%32]. So lanes 0-31 read 32
// consecutive floats of one row of the transposed A slab (As[k][m]) or of Bs[k][n], lanes 32-63 the next row: no
// bank conflict. A C store of one element r writes 2 rows × 128 contiguous bytes.
// Expected limit: not the matrix pipe (47.9 TFLOP/s) nor LDS: per slab a wave has 16 MFMAs, 1024 cycles of its
// SIMD, against 16 LDS reads of 256 bytes: 16 B per cycle per CU, 12.5% of the LDS's 128. The staging is: each slab
// costs two barriers, and the next slab's global loads (issued after the first barrier, 8 scalar loads per item)
// must arrive within the 1024 MFMA cycles; 4 groups per CU hide each other's stalls. Global traffic is 32 FLOP per
// byte (a 128×128 tile per 8-deep slab of 8 KiB), 1.5 TB/s at peak, which L2 must mostly serve (HBM: 1.6 TB/s).
// Launch: group (256, 1, 1), grid (ceil(N/128), ceil(M/128)). Any size. LDS 8,320 B (As 8×132 floats, Bs 8×128).
// gfx90a, hipcc 5.2 / clang 15: 118 VGPRs, 0 AGPRs (the accumulators stay in ArchVGPRs under
// GPU_AMD_MIN_WAVES_PER_SIMD(4); without it clang puts them in 64 AGPRs but then copies all of them to VGPRs for the
// C stores, 140 in all, 3 waves per SIMD), 45 SGPRs, no scratch: 4 waves per SIMD, 4 groups per CU, 50% occupancy.
// ---------------------------------------------------------------------------------------------------------------
GPU_KERNEL __launch_bounds__(4 * GPU_WAVE_SIZE) GPU_AMD_MIN_WAVES_PER_SIMD(4) void matmul_mfma_128x128x8_t256(
    const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
    mfma_matmul<MfmaF32_32x32x2, 128, 128, 8, 2, 2>(A, B, C, M, N, K);
}

// ---------------------------------------------------------------------------------------------------------------
// 11b. matmul_mfma_128x128x8_t512_f64 — FP64 on the matrix units: v_mfma_f64_16x16x4f64.
//
// Idea: a group of 8 waves (2×4) computes a 128×128 block of C in slabs of BK = 8; each wave owns a 64×32 wave tile,
// 4×2 MFMA blocks of 16×16 (32 doubles, 64 VGPRs of accumulators per lane: a 64×64 wave tile would take 128 and
// halve the occupancy). Per step of k (4 per MFMA) a wave reads 4 A and 2 B operands (one double per lane each)
// and issues 8 MFMAs.
// Layout (calculator 1.3.2, -a cdna2): lane l holds A[l%16][l/16] and B[l/16][l%16] of a block ("Lane: 16 * k + i",
// "16 * k + j"), and element r of its double4 (VGPRs [2r+1:2r]) is C[4r + l/16][l%16], from the calculator's
// forward formula ("GPR: [2*floor(i / 4)+1 : 2*floor(i / 4)]", "Lane: 16 * (i % 4) + j"); its printed inverse,
// "C or D i: 4 * floor(GPR_num / 2)", lacks the + floor(lane/16) (its own tables give v[3:2]{17} = D[5][1]). Unlike
// FP32's 16x16x4, whose element r is row 4·(l/16) + r. Each 16-lane phase of an operand read is 16 consecutive
// doubles of one row of As or Bs: no bank conflict. A C store of one element r writes 4 rows × 128 contiguous bytes.
// Expected limit: per slab a wave has 16 MFMAs, only 512 cycles of its SIMD, and the FP64 MFMA cannot co-execute
// with VALU instructions (calculator), so address arithmetic and load guards take matrix cycles. LDS reads: 12 of
// 512 bytes per 512 cycles per wave, 48 B per cycle per CU, 37.5% of the LDS. Global traffic is 16 FLOP per byte
// (a 128×128 tile per slab of 16 KiB), 3.0 TB/s at peak, nearly twice HBM's 1.6: L2 reuse and the latency of the
// next slab's loads (512 MFMA cycles to hide them, 2 groups per CU) bound it first.
// Launch: group (512, 1, 1), grid (ceil(N/128), ceil(M/128)). Any size. LDS 16,512 B (As 8×130 doubles, Bs 8×128).
// gfx90a, hipcc 5.2 / clang 15: 113 VGPRs, 0 AGPRs, 28 SGPRs, no scratch: 4 waves per SIMD, 2 groups per CU, 50%.
// ---------------------------------------------------------------------------------------------------------------
GPU_KERNEL __launch_bounds__(8 * GPU_WAVE_SIZE) GPU_AMD_MIN_WAVES_PER_SIMD(4) void matmul_mfma_128x128x8_t512_f64(
    const double* __restrict__ A, const double* __restrict__ B, double* __restrict__ C, int M, int N, int K) {
    mfma_matmul<MfmaF64_16x16x4, 128, 128, 8, 2, 4>(A, B, C, M, N, K);
}

#endif  // GPU_HAS_MFMA
