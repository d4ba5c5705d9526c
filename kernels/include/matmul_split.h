// Split-K's pieces, shared by the vector rungs that split K (kernels 9 and 10 of kernels/matmul.hip) and the DMMA
// rung (kernels/matmul_dmma.hip): the K range of one split, the arrival count that finds the last group of a tile,
// and the reduction kernel's body.
//
// A split-K launch runs S groups per tile of C, each over a range of K, and the S partial tiles are added in the
// fixed order z = 0, 1, ..., S-1, so C is the same bits in every run whichever group finishes last. The sum is done
// in one of two places (the host chooses, per plan: suite/src/experiments/matmul/ladder.rs, `Fixup`):
// - in the kernel (counters given): every group stores its partial tile and counts itself in; the last to arrive
//   reads the S partials back and writes C. One launch, but the last group reads S tiles alone, at one CU's share of
//   L2 bandwidth: a serial tail that grows with S (about 0.25 µs per 32 KB tile on an H100).
// - in a second kernel (counters null): every group stores its partial tile into its own slice of the workspace,
//   laid out as C is but padded to whole tiles, and leaves; matmul_splitk_reduce then adds the S slices element by
//   element with every CU taking part. It costs a launch gap (about 1 µs in a graph) and pays off when S is large
//   (K-heavy shapes: 256×256×16384 runs S = 32 or more).
#pragma once
#include "gpu.h"
#include "matmul_io.h"
#include "matmul_wave_tile.h"

// Called by every item of a group once it has stored its share of a partial tile: returns true in exactly one group,
// the one whose arrival completes the count `parts` on `counter`, and resets the counter to 0 for the next launch.
// The fences order the partial tiles: each item's stores are visible device-wide before the count that announces
// them (release), and the group that reads them back does so after seeing the full count (acquire); those reads go
// past L1 (gpu_load_from_l2). No group ever waits for another, so no group needs another to be resident.
// `last` is an int of the group's LDS that no item reads or writes at the call (the DMMA rung passes one of its
// dynamic LDS: a static one would add LDS to every launch of the kernel and cost it a group per SM).
__device__ __forceinline__ bool last_to_arrive(unsigned* counter, unsigned parts, int* last) {
    __threadfence();
    __syncthreads();  // every item of the group has stored and fenced its share
    if (threadIdx.x == 0) {
        *last = atomicAdd(counter, 1u) == parts - 1;
        if (*last) atomicExch(counter, 0u);  // every part has arrived; nobody else touches it in this launch
    }
    __syncthreads();
    if (!*last) return false;
    __threadfence();
    return true;
}
__device__ __forceinline__ bool last_to_arrive(unsigned* counter, unsigned parts) {
    __shared__ int last;
    return last_to_arrive(counter, parts, &last);
}

// The K range of split z of `splits`: whole slabs, as even as can be; the last one ends at K.
template <int BK>
__device__ __forceinline__ void split_range(int K, int z, int splits, int& kbegin, int& kend) {
    const long long slabs = (K + BK - 1) / BK;
    kbegin = (int)(slabs * z / splits) * BK;
    kend = min(K, (int)(slabs * (z + 1) / splits) * BK);
}

// Stores a quad of C at p, where `left` elements of its row remain from p: a whole 16-byte access per half where C's
// rows are 16-byte aligned (`aligned`), else element by element (store_first).
__device__ __forceinline__ void store_reduced(float* p, float4 v, int left, int aligned) {
    if (aligned && left >= 4)
        *reinterpret_cast<float4*>(p) = v;
    else
        store_first<float>(p, v, left);
}
__device__ __forceinline__ void store_reduced(double* p, DoubleQuad v, int left, int aligned) {
    if (aligned) {  // N even: the row ends after the first half or after the whole quad
        *reinterpret_cast<double2*>(p) = make_double2(v.x, v.y);
        if (left >= 4) *reinterpret_cast<double2*>(p + 2) = make_double2(v.z, v.w);
    } else {
        store_first<double>(p, v, left);
    }
}

// The tile of block `index` in a grouped order (the DMMA rung's, as in Triton's matmul tutorial): `group_m` tile rows at
// a time, down the rows first, so the blocks resident at once share a few rows of A and columns of B in L2. Row tm and
// column tn of the tile grid.
__device__ __forceinline__ void grouped_tile(int index, int tiles_m, int tiles_n, int group_m, int& tm, int& tn) {
    const int per_group = group_m * tiles_n;
    const int first_m = index / per_group * group_m;
    const int group_rows = min(tiles_m - first_m, group_m);
    const int in_group = index % per_group;
    tm = first_m + in_group % group_rows;
    tn = in_group / group_rows;
}

// Where element e of a partial tile in the wave tile's fragment order (WaveTile::store_partial) sits in the tile:
// quad q of item t holds elements (q·THREADS + t)·4 .. +3, q = r·WNITER + wn, and those are row m0 + (r/4)·WSUBM +
// r%4, columns n0 + wn·WSUBN .. +3 of the item's fragment (WaveShape), with the shape's constants worked out here at
// run time from BM, BN and the group size: the reduction kernel serves every split-K shape.
__device__ __forceinline__ void fragment_position(int quad, int threads, int BM, int BN, int& row, int& col) {
    const int t = quad % threads, q = quad / threads;
    const int acc = BM * BN / threads, wniter = wave_tile_wniter(BN), wmiter = acc / (16 * wniter);
    const int lanes_n = 8, wsubm = (GPU_WAVE_SIZE / lanes_n) * 4, wsubn = lanes_n * 4;
    const int wm = wsubm * wmiter, wn = wsubn * wniter, waves_n = BN / wn;
    const int wave = t / GPU_WAVE_SIZE, lane = t % GPU_WAVE_SIZE;
    const int r = q / wniter, c = q % wniter;
    row = (wave / waves_n) * wm + (lane / lanes_n) * 4 + (r / 4) * wsubm + r % 4;
    col = (wave % waves_n) * wn + (lane % lanes_n) * 4 + c * wsubn;
}

// The reduction kernel's body: C = Σ_{z=0}^{S-1} partial z, for `tiles` tiles of a split-K launch, summed from zero in
// the order of z as the in-kernel sum does, so both places give the same bits. Partial z of the launch's tile t (t = 0
// .. tiles-1) is at (t·S + z)·BM·BN. Its layout: `threads` > 0, the wave-tiled rungs' fragment order for a group of
// `threads`, tiles numbered along N first (all of them: tile_base 0); `threads` = 0, the DMMA rung's row-major tile,
// and tile t is the tile of block tile_base + t in the grouped order of `group_m` tile rows (grouped_tile: the DMMA
// launch may split only the tiles of its last wave). One quad of a tile per item, in a grid-stride loop; C is stored
// a quad at a time where its rows are 16-byte aligned (`aligned`), else element by element. Memory-bound: S·BM·BN
// elements read per tile (from L2 at the sizes that split), BM·BN written.
template <class T>
__device__ __forceinline__ void splitk_reduce(const T* __restrict__ work, T* __restrict__ C, int M, int N, int S,
                                              int aligned, int BM, int BN, int threads, int group_m, int tile_base,
                                              int tiles) {
    using Q = Quad<T>;
    const int tiles_n = (N + BN - 1) / BN, tiles_m = (M + BM - 1) / BM;
    const size_t tile_elems = (size_t)BM * BN, quads = (size_t)tiles * tile_elems / 4;
    for (size_t g = (size_t)blockIdx.x * blockDim.x + threadIdx.x; g < quads; g += (size_t)gridDim.x * blockDim.x) {
        const int t = (int)(g / (tile_elems / 4)), quad = (int)(g % (tile_elems / 4));
        int row, col, tm, tn;  // in the tile; the tile in the grid
        if (threads > 0) {
            fragment_position(quad, threads, BM, BN, row, col);
            tm = t / tiles_n, tn = t % tiles_n;
        } else {
            row = quad / (BN / 4), col = quad % (BN / 4) * 4;
            grouped_tile(tile_base + t, tiles_m, tiles_n, group_m, tm, tn);
        }
        const int i = tm * BM + row, j = tn * BN + col;
        if (i >= M || j >= N) continue;
        const T* p = work + (size_t)t * S * tile_elems + (size_t)quad * 4;
        Q acc = make_quad(T(0), T(0), T(0), T(0));
        for (int z = 0; z < S; ++z) {
            const Q v = load4(p + z * tile_elems);
            acc.x += v.x, acc.y += v.y, acc.z += v.z, acc.w += v.w;
        }
        store_reduced(C + (size_t)i * N + j, acc, N - j, aligned);
    }
}
