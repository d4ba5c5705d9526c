// The wave tile of the wave-tiled matmul kernels, rungs 7 to 10 of kernels/matmul.hip (warptile, double_buffer,
// splitk, splitk_atomic, streamk): the tile's shape (WaveShape), one item's part of it (WaveTile: its global loads
// of a slab, LDS stores, outer products, C stores and partial tiles) and WAVE_TILED_KERNELS_OF, which defines a
// rung's two kernels (aligned rows and _unaligned) for an element type, FP32 or FP64. Each rung in matmul.hip is its
// loop over the slabs of K around these.
#pragma once
#include "gpu.h"
#include "matmul_io.h"

// Both NVIDIA shared memory and gfx90a LDS have 32 banks of 4 bytes; a 32-lane phase of an access is conflict-free
// when its 32 addresses fall into 32 different banks (or repeat an address: a broadcast). This is the bank count,
// not the wave size.
#define LDS_BANKS 32

// ---------------------------------------------------------------------------------------------------------------
// Shared machinery of the wave-tiled kernels (7 to 10).
//
// Block tile BM×BN of C per group of THREADS items, K consumed in slabs of BK. Each wave owns a WM×WN wave tile;
// inside it, each item owns WMITER×WNITER sub-fragments of 4×4 elements of C (ACC = BM·BN/THREADS accumulators).
// The lanes of a wave form a grid of LANES_M × LANES_N = (GPU_WAVE_SIZE/8) × 8; a sub-tile of the wave is
// (LANES_M·4) × (LANES_N·4) = 16×32 (wave32) or 32×32 (wave64) and the wave steps over WMITER×WNITER of them.
// So for ACC = 64 the wave tile is 32×64 on NVIDIA and 64×64 on gfx90a; the work per item is the same on both.
// WNITER is 2, except in tiles whose width BN is a multiple of 96 but not of 64, where it is 3 (a wave 96 columns
// wide); with WMITER = 3 (ACC = 96, BM a multiple of 48 or 96) the height can be a multiple of 3 too. Why: a side of
// C of 96 or 192 (a skinny or flat product) in 64- or 128-wide tiles computes a third more than it stores; tiles of
// three sub-tiles fit it exactly (docs/matmul.md, "Fourth round").
//
// Why sub-fragments of 4 instead of one 8×8 block per item (as in 5 and 6): for a given k, the 8 lanes along N read
// 8 consecutive float4s of Bs (128 contiguous bytes: one LDS wavefront) and the LANES_M lanes along M read
// consecutive float4s of As; the other lanes of the wave repeat those addresses (broadcast). With one 8×8 block
// per item the float4s of neighbouring items are 32 bytes apart and the reads take twice as many wavefronts.
// Per k an item issues WMITER + WNITER LDS.128 reads for 16·WMITER·WNITER FMAs: 4 per 64 FMAs for ACC = 64,
// 6 per 128 FMAs for ACC = 128.
//
// LDS layout. B slab: Bs[k][n], row-major, float4 stores and reads. A slab transposed: element (k, m) at
// k·BM + (k/4)·QPAD + m, i.e. a pad of QPAD floats after every 4 rows of As. A 32-lane phase of the transposing
// scalar stores covers 32/KQ consecutive A rows × KQ quads of k (KQ = BK/4); quad q lands q·QPAD banks further
// (BM is a multiple of 32), so with QPAD = 32/KQ the KQ quads fill 32 distinct banks: conflict-free. QPAD is a
// multiple of 4, so every float4 read stays 16-byte aligned, and the pad is a compile-time offset per k (no
// address arithmetic in the inner loop, unlike an XOR swizzle).
//
// Global loads: A slab: float4 e = t + l·THREADS holds row e/KQ, k quad e%KQ (a wave reads 32/KQ rows × BK·4
// contiguous bytes); B slab: k row e/(BN/4), column quad e%(BN/4) (a wave reads 512 contiguous bytes). With VEC
// (aligned rows) every load is a float4, and with N % 4 == 0 and K % 4 == 0 a float4 is wholly in or out of the
// matrix; without it the same four elements are loaded one by one, each guarded (load_first_or_zero), into the same
// registers and LDS layout, so only the global accesses differ. Elements past the K range read as zero; rows of A
// past M and columns of B past N read elements inside the matrix (clamped pointers, see WaveTile), which only feed
// elements of C that are never stored.
//
// K range: a group may compute a partial sum over slabs [kbegin, kend) only (split-K and stream-K, kernels 9 and
// 10); loads are guarded by kend, and the A/B positions do not depend on it.
//
// FP64 (T = double): the same tile of quads, each quad two 16-byte halves (matmul_io.h), so an item holds the same
// number of elements in twice the registers and a slab takes twice the LDS. Aligned rows are 16-byte aligned rows
// (N and K even): a half lies wholly inside or outside a row, and the loads and C stores guard the second half of a
// quad where a row ends in the middle of it; B's column pointers are clamped to N−2 instead of N−4. The bank
// argument above becomes one of 8-byte words: a 32-lane access of doubles is served as two halves of 16 lanes
// (NVIDIA), each conflict-free when its 16 doubles fall in 16 different pairs of banks, and the same counting with
// 16 pairs gives QPAD = 16/KQ doubles (QPAD = (LDS_BANKS · 4 / sizeof(T)) / KQ for both types).
// ---------------------------------------------------------------------------------------------------------------
// Sub-tiles across the wave tile of a block tile BN wide (WaveShape::WNITER): 3 where BN is a multiple of 96 but not
// of 64 (a wave 96 columns wide), else 2. A function, so that the reduction kernel (matmul_split.h), which works the
// fragment order out at run time, follows the same rule.
__host__ __device__ constexpr int wave_tile_wniter(int bn) { return bn % 64 == 0 ? 2 : 3; }

template <class T, int BM, int BN, int BK, int THREADS>
struct WaveShape {
    static constexpr int SLAB_K = BK;
    static constexpr int WAVE = GPU_WAVE_SIZE;
    static constexpr int LANES_N = 8;
    static constexpr int LANES_M = WAVE / LANES_N;
    static constexpr int ACC = BM * BN / THREADS;  // accumulators per item
    static constexpr int WNITER = wave_tile_wniter(BN);
    static constexpr int WMITER = ACC / (16 * WNITER);
    static constexpr int WSUBM = LANES_M * 4, WSUBN = LANES_N * 4;
    static constexpr int WM = WSUBM * WMITER, WN = WSUBN * WNITER;
    static constexpr int WAVES_N = BN / WN;
    static constexpr int KQ = BK / 4;  // quads per row of the A slab
    // Elements of T per 4 bytes of each of the LDS_BANKS banks' rows: the pad after every 4 rows of As (see above).
    static constexpr int QPAD = LDS_BANKS * 4 / (int)sizeof(T) / KQ;
    static constexpr int AS_SIZE = BK * BM + KQ * QPAD;  // elements in one A slab (incl. pad)
    static constexpr int BS_SIZE = BK * BN;
    static constexpr int A_QUADS = BM * BK / 4;  // quads in the A slab
    static constexpr int B_QUADS = BK * BN / 4;  // quads in the B slab
    // Quads of each slab per item, at least 1: where a slab has fewer quads than the group has items (the 512-item
    // wave64 shapes), only the first A_QUADS / B_QUADS items load and store one.
    static constexpr int A_LOADS = A_QUADS >= THREADS ? A_QUADS / THREADS : 1;
    static constexpr int B_LOADS = B_QUADS >= THREADS ? B_QUADS / THREADS : 1;
    // Whether only some items move a float4 of the slab. Constant: a full slab compiles to exactly the unguarded
    // code (a runtime `t < A_QUADS` there costs nvcc registers: measured 240 -> 255 plus a spill, 47 -> 41 TFLOP/s).
    static constexpr bool A_PARTIAL = A_QUADS < THREADS;
    static constexpr bool B_PARTIAL = B_QUADS < THREADS;
    // Elements of LDS for one slab of A and one of B.
    static constexpr int SLAB_ELEMS = AS_SIZE + BS_SIZE;

    static_assert(THREADS % WAVE == 0, "whole waves per group");
    static_assert(WAVE % LANES_N == 0, "wave splits into rows of 8 lanes");
    static_assert(WMITER >= 1 && WMITER * 16 * WNITER == ACC, "ACC must be a multiple of 32");
    static_assert(BM % WM == 0 && BN % WN == 0 && (BM / WM) * (BN / WN) * WAVE == THREADS, "waves tile the block");
    static_assert(BK % 4 == 0 && LDS_BANKS * 4 / (int)sizeof(T) % KQ == 0 && QPAD % 4 == 0, "BK in {8, 16, 32}");
    static_assert(BM % LDS_BANKS == 0, "quad pad analysis assumes BM is a multiple of the bank count");
    static_assert(A_QUADS % THREADS == 0 || THREADS % A_QUADS == 0, "A slab splits evenly over the items");
    static_assert(B_QUADS % THREADS == 0 || THREADS % B_QUADS == 0, "B slab splits evenly over the items");
    // (B's quads are placed by their own row and column per l, b_k and b_col, so a row of the B slab need not be a
    // divisor of the group: 96 columns are 24 quads.)
    static_assert((THREADS % KQ) == 0, "load rows of A advance by whole rows per l");
};

// How a wave-tiled kernel reaches A, B and C in global memory; the suffix of its symbol.
// - IO_ALIGNED (no suffix): rows 16-byte aligned (FP32: N and K multiples of 4; FP64: even), 16-byte loads and
//   stores.
// - IO_UNALIGNED (_unaligned): any size, every global access one element at a time, guarded.
// - IO_PACKED (_packed): A and B are packed copies whose rows are padded with zeros to a multiple of 16 bytes
//   (matmul_pack_operands: A is M × ld(K), B is K × ld(N), ld() rounding up to whole 16-byte accesses), read with
//   16-byte loads as in IO_ALIGNED; C is the caller's own M × N, its rows unaligned, written with 16-byte stores
//   realigned by shuffles (store_c_realigned) and element by element at the edges.
//   Why: the 4-byte loads of IO_UNALIGNED touch nearly five times the L1 sectors of 16-byte ones (docs/matmul.md,
//   "Second round"), and copying A and B once costs less than that wherever a product does enough FLOP per byte
//   copied (the host decides, ladder.rs: `pack_pays`).
#define IO_ALIGNED 0
#define IO_UNALIGNED 1
#define IO_PACKED 2

template <class T, int BM, int BN, int BK, int THREADS, int IO>
struct WaveTile : WaveShape<T, BM, BN, BK, THREADS> {
    using S = WaveShape<T, BM, BN, BK, THREADS>;
    using Q = Quad<T>;
    // The shape's constants by their plain names (members of a dependent base are not found otherwise).
    static constexpr int A_LOADS = S::A_LOADS, B_LOADS = S::B_LOADS, A_QUADS = S::A_QUADS, B_QUADS = S::B_QUADS;
    static constexpr bool A_PARTIAL = S::A_PARTIAL, B_PARTIAL = S::B_PARTIAL;
    static constexpr int KQ = S::KQ, QPAD = S::QPAD, WMITER = S::WMITER, WNITER = S::WNITER, WSUBM = S::WSUBM;
    static constexpr int WSUBN = S::WSUBN, WM = S::WM, WN = S::WN, WAVES_N = S::WAVES_N, LANES_N = S::LANES_N;
    static constexpr int WAVE = S::WAVE, AS_SIZE = S::AS_SIZE, BS_SIZE = S::BS_SIZE, SLAB_ELEMS = S::SLAB_ELEMS;
    // Elements per 16-byte access: B's column pointers are clamped to N minus this.
    static constexpr int VW = 16 / (int)sizeof(T);
    // Whether A and B are read with 16-byte loads (aligned rows, or packed copies), and C written with 16-byte stores.
    static constexpr bool VEC = IO != IO_UNALIGNED, VEC_C = IO == IO_ALIGNED;
    static_assert(IO != IO_PACKED || sizeof(T) == 4, "the packed kernels are FP32's (store_c_realigned)");
    // The row length in memory of an operand whose rows hold n elements: n, or n padded to whole 16-byte accesses in
    // the packed copies.
    static __device__ __forceinline__ int ld(int n) { return IO == IO_PACKED ? (n + VW - 1) / VW * VW : n; }
    // Whether a quad of aligned rows lies wholly inside or outside a row (FP32); an FP64 quad may end halfway.
    static constexpr bool WHOLE = VW == 4;
    // Registers that hold one slab of A / B between its global load and its LDS store: quad l in 4l .. 4l+3.
    static constexpr int A_REGS = 4 * A_LOADS, B_REGS = 4 * B_LOADS;

    // Per-item state fixed for the whole K loop. Quad l of the A slab is row a_row[l], k quad from a_k[l]; of the
    // B slab k row b_k[l], column quad from b_col[l].
    int a_row[A_LOADS], a_k[A_LOADS];
    int b_k[B_LOADS], b_col[B_LOADS];
    const T* a_ptr[A_LOADS];  // A at the first element of quad l, column 0 of the K range (see below)
    const T* b_ptr[B_LOADS];  // B at the first element of quad l, k row 0 (see below)
    int b_left[B_LOADS];      // columns of B from quad l's first to N (> 0: it starts inside); FP32 VEC ignores it
    bool a_in, b_in;          // whether this item moves a quad of the A / B slab (always, unless PARTIAL)
    int m0, n0;                   // first row / column of this item's fragment inside the block
    // Rows of A past M and columns of B past N feed only rows and columns of C past M and N, which are never stored,
    // so their loads may read any element of the matrix: the pointers are clamped into it here (row M-1; column
    // N-VW with VEC, N-1 without), and rows of A need no guard in load(). Against per-float4 row and column guards
    // (the first version), this and load()'s unguarded whole slabs took the aligned kernels' registers down (the
    // default shape 240 -> 223 on sm_90, 64×128×16: 199 -> 167, 3 groups per SM instead of 2) and, measured on an
    // H200 in one run beside the first version, the best kernel from 0.91× to 0.94× cuBLAS at 1000³, 0.98× to
    // 1.03× at 1024³, 0.92× to 0.93-0.94× at 512³, 2048³ and 4096³.
    __device__ __forceinline__ WaveTile(const T* A, const T* B, int M, int N, int K, int bm, int bn) {
        const int t = threadIdx.x;
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            const int e = t + l * THREADS;
            a_row[l] = e / KQ;
            a_k[l] = (e % KQ) * 4;
            a_ptr[l] = A + (size_t)min(bm + a_row[l], M - 1) * ld(K) + a_k[l];
        }
#pragma unroll
        for (int l = 0; l < B_LOADS; ++l) {
            const int e = t + l * THREADS;
            b_k[l] = e / (BN / 4);
            b_col[l] = (e % (BN / 4)) * 4;
            b_left[l] = N - (bn + b_col[l]);
            b_ptr[l] = B + (size_t)b_k[l] * ld(N) + min(bn + b_col[l], VEC ? ld(N) - VW : N - 1);
            b_col[l] = bs_col(b_col[l]);  // from here on, where its quad goes in LDS (store)
        }
        a_in = !A_PARTIAL || t < A_QUADS;
        b_in = !B_PARTIAL || t < B_QUADS;
        const int wave = t / WAVE, lane = t % WAVE;
        m0 = (wave / WAVES_N) * WM + (lane / LANES_N) * 4;
        n0 = (wave % WAVES_N) * WN + (lane % LANES_N) * 4;
    }

    // Global → registers: the slab starting at column/row kt of A/B (b_rows = kt·N, kept by the caller), nothing at
    // or past kend. (THREADS % KQ == 0, so float4 l of an item is in the same k quad as float4 0, l·THREADS/KQ rows
    // further down; B's quads keep their own k row per l, b_k, as a 96-wide slab row of 24 quads needs.)
    //
    // With VEC, a whole slab (every slab of a K range but a last partial one) takes the first branch: one 16-byte
    // load per FP32 quad, no guards, no zeroing (the branch is the same for the whole group; FP64 guards a B quad's
    // second half by the row's end); the last partial slab guards each quad (FP64: each half) by k. Without VEC
    // (rows not 16-byte aligned) every quad is four guarded element loads (load_first_or_zero), k and columns of B.
    // (Two other unaligned versions were measured on an H200 in one run beside this one and not kept: the same four
    // loads unguarded in whole slabs, and a layout with consecutive items on consecutive 4-byte elements and scalar
    // LDS stores. Neither reached 0.90× cuBLAS at 1023³ either, and both were slower at 4097³: 0.94× and 0.91×
    // against 1.00×.)
    __device__ __forceinline__ void load(T (&ra)[A_REGS], T (&rb)[B_REGS], int kt, size_t b_rows, int kend, int K,
                                         int N) const {
        const bool whole = VEC && kt + BK <= kend;
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            const T* p = a_ptr[l] + kt;
            const bool in = !A_PARTIAL || a_in;
            Q v;
            if (whole)
                v = in ? load4(p) : Q{};
            else if (VEC) {
                if (WHOLE)
                    v = load_or_zero(p, in && kt + a_k[l] < kend);
                else
                    v = load_halves_or_zero(p, in && kt + a_k[l] < kend, in && kt + a_k[l] + 2 < kend);
            } else
                v = load_first_or_zero(p, in ? kend - (kt + a_k[l]) : 0);
            ra[4 * l + 0] = v.x, ra[4 * l + 1] = v.y, ra[4 * l + 2] = v.z, ra[4 * l + 3] = v.w;
        }
#pragma unroll
        for (int l = 0; l < B_LOADS; ++l) {
            const T* p = b_ptr[l] + b_rows;
            const bool in = !B_PARTIAL || b_in;
            Q v;
            if (whole) {
                if (WHOLE)
                    v = in ? load4(p) : Q{};
                else  // the second half only where the row goes on past it (b_left <= 0: a clamped pointer)
                    v = load_halves_or_zero(p, in, in && b_left[l] > 2);
            } else if (VEC) {
                if (WHOLE)
                    v = load_or_zero(p, in && kt + b_k[l] < kend);
                else
                    v = load_halves_or_zero(p, in && kt + b_k[l] < kend, in && kt + b_k[l] < kend && b_left[l] > 2);
            } else
                v = load_first_or_zero(p, in && kt + b_k[l] < kend ? b_left[l] : 0);
            rb[4 * l + 0] = v.x, rb[4 * l + 1] = v.y, rb[4 * l + 2] = v.z, rb[4 * l + 3] = v.w;
        }
    }

    static __device__ __forceinline__ int as_index(int k, int m) { return k * BM + (k / 4) * QPAD + m; }

    // Where column n of a B slab row sits in LDS. FP32: at n. FP64: a quad is two 16-byte halves, and the 8 lanes of
    // a row of the wave read quads 4 doubles apart (n0 = 4·lane): at n their first halves would lie 32 bytes apart,
    // two lanes to a bank, and a 16-byte read is served 8 lanes at a time, so every B fragment read and quad store
    // took twice the wavefronts (Nsight Compute on an H200, double_buffer_64x128x8_t128_f64 at 4096³: 5.0 shared
    // wavefronts per load request, 40% of them bank conflicts, shared memory 95% busy, FP64 pipe 57%). So within
    // each 32 doubles (one sub-tile of the wave: WSUBN) the halves are regrouped, first halves of the 8 quads then
    // second halves: column 4j + 2h + e (quad j, half h, element e) sits at 16h + 2j + e. Each 16-byte access of 8
    // lanes then covers 128 contiguous bytes. Both reads and stores of B go through this; A is unchanged.
    static __device__ __forceinline__ int bs_col(int n) {
        return sizeof(T) == 4 ? n : (n & ~31) | ((n & 2) << 3) | ((n & 28) >> 1) | (n & 1);
    }

    // Registers → LDS: A transposed with the quad pad, B as is.
    __device__ __forceinline__ void store(T* As, T* Bs, const T (&ra)[A_REGS], const T (&rb)[B_REGS]) const {
        if (!A_PARTIAL || a_in) {
#pragma unroll
            for (int l = 0; l < A_LOADS; ++l) {
                As[as_index(a_k[l] + 0, a_row[l])] = ra[4 * l + 0];
                As[as_index(a_k[l] + 1, a_row[l])] = ra[4 * l + 1];
                As[as_index(a_k[l] + 2, a_row[l])] = ra[4 * l + 2];
                As[as_index(a_k[l] + 3, a_row[l])] = ra[4 * l + 3];
            }
        }
        if (!B_PARTIAL || b_in) {
#pragma unroll
            for (int l = 0; l < B_LOADS; ++l) {
                // (A plain `if` on the constant: the FP32 statement is the one the kernels had before FP64, and
                // hipcc 5.2 takes no `if constexpr` in its default C++ dialect.)
                if (sizeof(T) == 4) {
                    *reinterpret_cast<Q*>(&Bs[b_k[l] * BN + b_col[l]]) =
                        make_quad(rb[4 * l + 0], rb[4 * l + 1], rb[4 * l + 2], rb[4 * l + 3]);
                } else {  // FP64: each half where bs_col puts it (the second 16 doubles after the first)
                    T* p = &Bs[b_k[l] * BN + b_col[l]];
                    *reinterpret_cast<double2*>(p) = make_double2(rb[4 * l + 0], rb[4 * l + 1]);
                    *reinterpret_cast<double2*>(p + 16) = make_double2(rb[4 * l + 2], rb[4 * l + 3]);
                }
            }
        }
    }

    // BK outer products out of one LDS slab into the accumulators, the k loop unrolled KUNROLL times. Fully unrolled
    // (KUNROLL = BK), clang for gfx90a hoists the LDS reads of every k to the top of the slab, which costs
    // BK·(WMITER + WNITER)·4 registers on top of the accumulators (the ~236-400 VGPRs of the ACC = 64/128 shapes);
    // unrolled by 2 only two k's worth of operands are live.
    template <int KUNROLL>
    __device__ __forceinline__ void compute(const T* As, const T* Bs, T (&acc)[WMITER * 4][WNITER * 4]) const {
        static_assert(KUNROLL >= 1 && BK % KUNROLL == 0, "the unroll divides the slab depth");
#pragma unroll KUNROLL
        for (int k = 0; k < BK; ++k) {
            T ra[WMITER * 4], rb[WNITER * 4];
#pragma unroll
            for (int wm = 0; wm < WMITER; ++wm) {
                const Q v = *reinterpret_cast<const Q*>(&As[as_index(k, m0 + wm * WSUBM)]);
                ra[wm * 4 + 0] = v.x, ra[wm * 4 + 1] = v.y, ra[wm * 4 + 2] = v.z, ra[wm * 4 + 3] = v.w;
            }
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn) {
                if (sizeof(T) == 4) {  // the FP32 statement of before (see store())
                    const Q v = *reinterpret_cast<const Q*>(&Bs[k * BN + n0 + wn * WSUBN]);
                    rb[wn * 4 + 0] = v.x, rb[wn * 4 + 1] = v.y, rb[wn * 4 + 2] = v.z, rb[wn * 4 + 3] = v.w;
                } else {
                    const T* p = &Bs[k * BN + bs_col(n0 + wn * WSUBN)];
                    const double2 lo = *reinterpret_cast<const double2*>(p);
                    const double2 hi = *reinterpret_cast<const double2*>(p + 16);
                    rb[wn * 4 + 0] = lo.x, rb[wn * 4 + 1] = lo.y, rb[wn * 4 + 2] = hi.x, rb[wn * 4 + 3] = hi.y;
                }
            }
#pragma unroll
            for (int i = 0; i < WMITER * 4; ++i)
#pragma unroll
                for (int j = 0; j < WNITER * 4; ++j) acc[i][j] += ra[i] * rb[j];
        }
    }

    // Accumulators → C, one quad per sub-fragment row: 8 lanes write 128 contiguous bytes in FP32, 256 in FP64
    // (element by element without VEC_C, guarded at the right edge; realigned with IO_PACKED, store_c_realigned).
    __device__ __forceinline__ void store_c(T* C, const T (&acc)[WMITER * 4][WNITER * 4], int M, int N, int bm,
                                            int bn) const {
#pragma unroll
        for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int row = bm + m0 + wm * WSUBM + i;
                if (IO == IO_PACKED) {
#pragma unroll
                    for (int wn = 0; wn < WNITER; ++wn) {
                        const int r = wm * 4 + i, c = wn * 4;
                        const Q v = make_quad(acc[r][c + 0], acc[r][c + 1], acc[r][c + 2], acc[r][c + 3]);
                        store_c_realigned(C, v, row, bn + n0 + wn * WSUBN, M, N);
                    }
                    continue;
                }
                if (row >= M) continue;
#pragma unroll
                for (int wn = 0; wn < WNITER; ++wn) {
                    const int col = bn + n0 + wn * WSUBN;
                    const int r = wm * 4 + i, c = wn * 4;
                    const Q v = make_quad(acc[r][c + 0], acc[r][c + 1], acc[r][c + 2], acc[r][c + 3]);
                    T* p = &C[(size_t)row * N + col];
                    if (VEC_C) {
                        if (WHOLE) {
                            if (col < N) *reinterpret_cast<Q*>(p) = v;
                        } else if (col < N) {
                            if (N - col > 2)
                                *reinterpret_cast<Q*>(p) = v;
                            else
                                store_first_half(p, v);
                        }
                    } else {
                        store_first(p, v, N - col);
                    }
                }
            }
    }

    // One quad of C, v, at (row, col) of a C whose rows are not 16-byte aligned (IO_PACKED, FP32), written with
    // 16-byte stores all the same. The LANES_N = 8 lanes of a row of the wave hold 8 consecutive quads of a C row (32
    // elements from col of the first); the row starts s = (row·N) mod 4 elements past a 16-byte boundary (C's base is
    // 16-byte aligned), so each lane writes the aligned quad that ends s elements before its own: the previous lane's
    // last s elements (a shuffle) and its own first 4 − s. The first lane writes only its own first 4 − s, the last
    // also its own last s, one element at a time: every element of the 32 once. Elements at or past N are not
    // written; rows at or past M write nothing (after the shuffles, which every lane of the wave takes part in). Why:
    // written one element at a time, C took 1.19 M L2 write requests at 2047³ against 0.20 M for the aligned
    // kernel's 16-byte stores, and the packed kernel 376 µs against 364 (Nsight Compute on an H200): with one wave of
    // groups, the stores of C are the kernel's tail.
    __device__ __forceinline__ void store_c_realigned(T* C, const Q& v, int row, int col, int M, int N) const {
        Q p;  // the previous lane's quad
        p.x = __shfl_up(v.x, 1, LANES_N), p.y = __shfl_up(v.y, 1, LANES_N);
        p.z = __shfl_up(v.z, 1, LANES_N), p.w = __shfl_up(v.w, 1, LANES_N);
        if (row >= M) return;
        const int lane = threadIdx.x % LANES_N;
        const int s = (int)(((size_t)row * N) & 3);
        T* own = C + (size_t)row * N + col;
        if (s == 0) {
            if (col + 3 < N)
                *reinterpret_cast<Q*>(own) = v;
            else
                store_first(own, v, N - col);
            return;
        }
        // The aligned quad from col − s: the previous lane's last s elements, then this lane's first 4 − s.
        const Q a = s == 1 ? make_quad(p.w, v.x, v.y, v.z) : s == 2 ? make_quad(p.z, p.w, v.x, v.y)
                                                                    : make_quad(p.y, p.z, p.w, v.x);
        T* start = own - s;
        if (lane > 0 && col + 3 - s < N) {
            *reinterpret_cast<Q*>(start) = a;
        } else {
            // Element t of the aligned quad is column col − s + t: the first lane's own from t = s, and only inside N.
            const int from = lane > 0 ? 0 : s;
            if (from <= 0 && col - s + 0 < N) start[0] = a.x;
            if (from <= 1 && col - s + 1 < N) start[1] = a.y;
            if (from <= 2 && col - s + 2 < N) start[2] = a.z;
            if (col - s + 3 < N) start[3] = a.w;
        }
        if (lane == LANES_N - 1) {  // this lane's own last s elements: columns col + 4 − s .. col + 3
            if (s >= 3 && col + 1 < N) own[1] = v.y;
            if (s >= 2 && col + 2 < N) own[2] = v.z;
            if (col + 3 < N) own[3] = v.w;
        }
    }

    // The accumulators of a partial tile in "fragment order" (split-K and stream-K workspaces): quad q of item t at
    // slot[(q·THREADS + t)·4], q = row·WNITER + column quad. Consecutive items write consecutive quads, every element
    // of the tile is written (no edge), and the layout does not depend on M, N or alignment.
    __device__ __forceinline__ void store_partial(T* slot, const T (&acc)[WMITER * 4][WNITER * 4]) const {
#pragma unroll
        for (int r = 0; r < WMITER * 4; ++r)
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn) {
                const int q = r * WNITER + wn, c = wn * 4;
                *reinterpret_cast<Q*>(&slot[(q * THREADS + threadIdx.x) * 4]) =
                    make_quad(acc[r][c + 0], acc[r][c + 1], acc[r][c + 2], acc[r][c + 3]);
            }
    }

    // acc += the partial tile in `slot` (fragment order), read past L1: another group of this launch wrote it.
    __device__ __forceinline__ void add_partial(const T* slot, T (&acc)[WMITER * 4][WNITER * 4]) const {
#pragma unroll
        for (int r = 0; r < WMITER * 4; ++r)
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn) {
                const int q = r * WNITER + wn, c = wn * 4;
                const Q v = gpu_load_from_l2(reinterpret_cast<const Q*>(&slot[(q * THREADS + threadIdx.x) * 4]));
                acc[r][c + 0] += v.x, acc[r][c + 1] += v.y, acc[r][c + 2] += v.z, acc[r][c + 3] += v.w;
            }
    }
};

// Defines the two kernels of a wave-tiled BODY in element type T: NAME, for rows that are 16-byte aligned (16-byte
// accesses), and NAME_unaligned, for any size (element accesses, see WaveTile). Two kernels rather than one that
// branches at entry: a kernel holding both versions gets the registers of the hungrier one, and the aligned version
// of the default shape then ran 4% slower (measured on an H200 at 4096³: 240 -> 255 registers, 47.3 -> 45.5
// TFLOP/s). KUNROLL: how far the k loop of a slab is unrolled (WaveTile::compute); BUFFERS: slabs of A and B held in
// LDS; ATTRS: more kernel attributes (may be empty); MORE_PARAMS (a macro of T) and the trailing arguments: what BODY
// takes after lds. WAVE_TILED_KERNEL_OF defines one of them, NAME##SUFFIX, reaching memory as IO says;
// WAVE_TILED_KERNELS_AND_PACKED_OF the two and NAME_packed (IO_PACKED: the FP32 instances of rungs 8 to 10).
#define WAVE_TILED_KERNEL_OF(T, NAME, SUFFIX, IO, BM, BN, BK, THREADS, KUNROLL, BUFFERS, ATTRS, BODY, MORE_PARAMS, \
                             ...)                                                                                 \
    GPU_KERNEL __launch_bounds__(THREADS) ATTRS void NAME##SUFFIX(MATMUL_PARAMS_OF(T) MORE_PARAMS(T)) {           \
        __shared__ __align__(16) T lds[BUFFERS * WaveShape<T, BM, BN, BK, THREADS>::SLAB_ELEMS];                 \
        BODY<T, BM, BN, BK, THREADS, IO, KUNROLL>(A, B, C, M, N, K, lds, ##__VA_ARGS__);                          \
    }
#define WAVE_TILED_KERNELS_OF(T, NAME, BM, BN, BK, THREADS, KUNROLL, BUFFERS, ATTRS, BODY, MORE_PARAMS, ...)       \
    WAVE_TILED_KERNEL_OF(T, NAME, , IO_ALIGNED, BM, BN, BK, THREADS, KUNROLL, BUFFERS, ATTRS, BODY, MORE_PARAMS,  \
                         ##__VA_ARGS__)                                                                           \
    WAVE_TILED_KERNEL_OF(T, NAME, _unaligned, IO_UNALIGNED, BM, BN, BK, THREADS, KUNROLL, BUFFERS, ATTRS, BODY,   \
                         MORE_PARAMS, ##__VA_ARGS__)
#define WAVE_TILED_KERNELS_AND_PACKED_OF(T, NAME, BM, BN, BK, THREADS, KUNROLL, BUFFERS, ATTRS, BODY, MORE_PARAMS, \
                                         ...)                                                                     \
    WAVE_TILED_KERNELS_OF(T, NAME, BM, BN, BK, THREADS, KUNROLL, BUFFERS, ATTRS, BODY, MORE_PARAMS, ##__VA_ARGS__) \
    WAVE_TILED_KERNEL_OF(T, NAME, _packed, IO_PACKED, BM, BN, BK, THREADS, KUNROLL, BUFFERS, ATTRS, BODY,         \
                         MORE_PARAMS, ##__VA_ARGS__)
