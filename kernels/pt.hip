// Persistent threads (PT) vs ordinary launches (non-PT): the four use cases of Gupta, Stuart and Owens, "A Study of
// Persistent Threads Style GPU Programming for GPGPU Workloads" (InPar 2012), seeds/persistent-threads-study-*.txt.
//
// A PT kernel launches exactly the maximal launch (CUs x resident groups per CU, from the runtime's occupancy query:
// the host computes it) and its groups take work from a queue until it is empty. A non-PT kernel launches one group
// per tile of work and lets the hardware scheduler place them; where the amount of work is only known on the device,
// the host reads it back and launches again.
//
// Work per item is a chain of F fused multiply-adds, fully unrolled (one wrapper per F, macros at the end), in the
// paper's two flavours: CI reads the item, runs the chain in registers and writes the result; CMI also reads a
// strided table element at every step (table index (i + k * PT_STRIDE) & mask, so each step touches a new line while
// the items of a wave still read neighbouring addresses). Expected: CI is bound by FMA rate for large F, CMI by the
// memory system; the PT/non-PT difference is launch and readback overhead against queue atomics.
//
// Safety: every loop that waits for another group (the forest queue, the software grid barrier) counts its idle
// iterations and gives up after `spin_limit` of them, setting PT_STATUS_TIMEOUT in `status` (device memory), so a
// bug or a group that never arrives gives the host an error, not a hung GPU. Groups of 256 items (power of two,
// at most 1024) are assumed by the LDS trees below; the host launches nothing else.
#include "gpu.h"
#include "gpu_grid.h"
#include "gpu_atomic.h"

// The FMA chain x <- x * PT_A + b: with x and b in [0, 1), x stays in [0, 1 / (1 - PT_A)) = [0, 16) (CI, with
// b = PT_B: in [0, 1)), so no step overflows and every rounding is of a value of order 1.
#define PT_A 0.9375f
#define PT_B 0.0625f
// Table stride of the CMI flavour, in elements: odd and more than a cache line, so every step reads a new line.
#define PT_STRIDE 4099u
// Status bits written by the kernels (the host reads them after a launch).
#define PT_STATUS_TIMEOUT 1u
#define PT_STATUS_OVERFLOW 2u
// A barrier let a group through before every group had arrived (the barrier-alone kernels' check).
#define PT_STATUS_ORDER 4u
// Levels a forest may have (per-level counters live in LDS).
#define PT_MAX_LEVELS 32
// An empty forest queue slot (no node packs to all ones: its level is below PT_MAX_LEVELS).
#define PT_EMPTY 0xffffffffffffffffull
#define PT_NONE 0xffffffffu

// Queue granularities of the PT consumer: one atomic pop per item, per wave, per group, per chunk of K groups'
// worth of items, or a static schedule (grid-stride loop, no atomics).
#define PT_QUEUE_ITEM 0u
#define PT_QUEUE_WAVE 1u
#define PT_QUEUE_GROUP 2u
#define PT_QUEUE_CHUNK 3u
#define PT_QUEUE_STATIC 4u

// A 32-bit mixer (Chris Wellons' lowbias32): the host's reference uses the same function.
__device__ __forceinline__ unsigned pt_hash(unsigned x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

// A value in [0, 1) with 24 significant bits, so it is exact in FP32 (the host computes the same).
__device__ __forceinline__ float pt_unit(unsigned x) { return (float)(pt_hash(x) >> 8) * (1.0f / 16777216.0f); }

template <int F> __device__ __forceinline__ float pt_work_ci(float x) {
#pragma unroll
    for (int k = 0; k < F; ++k) x = fmaf(x, PT_A, PT_B);
    return x;
}

template <int F> __device__ __forceinline__ float pt_work_cmi(float x, const float* __restrict__ tab, unsigned mask, unsigned i) {
#pragma unroll
    for (int k = 0; k < F; ++k) x = fmaf(x, PT_A, tab[(i + (unsigned)k * PT_STRIDE) & mask]);
    return x;
}

// Fills the CMI table: tab[j] = pt_unit(j).
GPU_KERNEL void pt_fill_table(float* tab, unsigned m) {
    const unsigned j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < m) tab[j] = pt_unit(j);
}

// An empty kernel: the bare round trip is empty producer -> 4-byte readback -> empty consumer.
GPU_KERNEL void pt_empty() {}

// ---- Use case 1: CPU-GPU synchronisation ----------------------------------------------------------------------
// The producer makes n items (items[i] = pt_unit(i)); each group adds what it made to `count`, and the last group
// to finish (the one that takes done to gridDim.x - 1) publishes the total in `terminal` and resets count and done
// for the next run. Non-PT: the host reads `terminal` back and launches ceil(terminal / 256) consumer groups. PT:
// the consumer is launched at maximal launch straight away and reads `terminal` on the device.
GPU_KERNEL void pt_produce(float* items, unsigned n, unsigned* count, unsigned* done, unsigned* terminal) {
    __shared__ unsigned made;
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x == 0) made = 0;
    __syncthreads();
    if (i < n) {
        items[i] = pt_unit(i);
        atomicAdd(&made, 1u);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        atomicAdd(count, made);
        // The count must be visible before this group says it is done.
        __threadfence();
        if (atomicAdd(done, 1u) == gridDim.x - 1) {
            *terminal = atomicExch(count, 0u);
            *done = 0;
        }
    }
}

template <int F, bool CMI>
__device__ __forceinline__ void pt_consume_item(const float* __restrict__ items, float* __restrict__ out,
                                       const float* __restrict__ tab, unsigned mask, unsigned i) {
    const float x = items[i];
    out[i] = CMI ? pt_work_cmi<F>(x, tab, mask, i) : pt_work_ci<F>(x);
}

template <int F, bool CMI>
__device__ __forceinline__ void pt_consume_nonpt(const float* items, const unsigned* terminal, float* out, const float* tab,
                                        unsigned mask) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < *terminal) pt_consume_item<F, CMI>(items, out, tab, mask, i);
}

template <int F, bool CMI>
__device__ __forceinline__ void pt_consume_pt(const float* items, const unsigned* terminal, float* out, const float* tab,
                                     unsigned mask, unsigned* head, unsigned mode, unsigned chunk) {
    // Written by the producer's last group; the producer finished before this kernel started (stream order).
    const unsigned n = *terminal;
    if (mode == PT_QUEUE_STATIC) {
        const unsigned stride = gridDim.x * blockDim.x;
        for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
            pt_consume_item<F, CMI>(items, out, tab, mask, i);
        return;
    }
    if (mode == PT_QUEUE_ITEM) {
        for (;;) {
            const unsigned i = atomicAdd(head, 1u);
            if (i >= n) return;
            pt_consume_item<F, CMI>(items, out, tab, mask, i);
        }
    }
    if (mode == PT_QUEUE_WAVE) {
        const unsigned lane = threadIdx.x % GPU_WAVE_SIZE;
        for (;;) {
            unsigned base = 0;
            if (lane == 0) base = atomicAdd(head, (unsigned)GPU_WAVE_SIZE);
            // base is the same for the whole wave, so every lane leaves the loop together.
            base = __shfl(base, 0);
            if (base >= n) return;
            if (base + lane < n) pt_consume_item<F, CMI>(items, out, tab, mask, base + lane);
        }
    }
    // One pop per group (chunk = 1) or per chunk of `chunk` groups' worth of items.
    __shared__ unsigned s_base;
    const unsigned span = (mode == PT_QUEUE_GROUP ? 1u : chunk) * blockDim.x;
    for (;;) {
        if (threadIdx.x == 0) s_base = atomicAdd(head, span);
        __syncthreads();
        const unsigned base = s_base;
        // No item may overwrite s_base before every item has read it.
        __syncthreads();
        if (base >= n) return;
        for (unsigned k = threadIdx.x; k < span; k += blockDim.x)
            if (base + k < n) pt_consume_item<F, CMI>(items, out, tab, mask, base + k);
    }
}

// ---- Use case 2: load balancing, forest traversal ------------------------------------------------------------
// A node packs (level | tree << 8) << 32 | id. Roots: id = pt_hash(tree), level 0. A node below its tree's depth
// has 1 + pt_hash(id) % 3 children (so a level is twice the one above on average), child j having id
// pt_hash(id * 4 + j + 1). Full forest (kind 0): every tree is `levels` deep. Tilted forest (kind 1): tree t is
// ceil(levels * (t + 1) / trees) deep, so the work leans to the last trees (the paper's figure 6).
__device__ __forceinline__ unsigned pt_forest_children(unsigned id, unsigned level, unsigned tree, unsigned kind,
                                              unsigned levels, unsigned trees) {
    const unsigned depth =
        kind == 0 ? levels : (unsigned)(((unsigned long long)levels * (tree + 1) + trees - 1) / trees);
    if (level + 1 >= depth) return 0;
    return 1 + pt_hash(id) % 3;
}

__device__ __forceinline__ unsigned long long pt_node(unsigned level, unsigned tree, unsigned id) {
    return (unsigned long long)(level | tree << 8) << 32 | id;
}

// Per-group tallies in LDS, flushed once per group: nodes per level, and the wrapping sum of the bits of every
// node's work result (order-independent, so it is exact whatever the schedule).
struct PtTally {
    unsigned levels[PT_MAX_LEVELS];
    unsigned sum;
};

__device__ __forceinline__ void pt_tally_init(PtTally& t) {
    if (threadIdx.x < PT_MAX_LEVELS) t.levels[threadIdx.x] = 0;
    if (threadIdx.x == 0) t.sum = 0;
    __syncthreads();
}

__device__ __forceinline__ void pt_tally_flush(PtTally& t, unsigned* level_counts, unsigned* checksum) {
    __syncthreads();
    if (threadIdx.x < PT_MAX_LEVELS && t.levels[threadIdx.x] != 0)
        atomicAdd(&level_counts[threadIdx.x], t.levels[threadIdx.x]);
    if (threadIdx.x == 0) atomicAdd(checksum, t.sum);
}

// Visits one node: its work, its tally; returns its number of children.
template <int F>
__device__ __forceinline__ unsigned pt_visit(PtTally& t, unsigned long long node, unsigned kind, unsigned levels,
                                    unsigned trees, unsigned* level, unsigned* tree) {
    const unsigned id = (unsigned)node;
    const unsigned meta = (unsigned)(node >> 32);
    *level = meta & 0xffu;
    *tree = meta >> 8;
    const float v = pt_work_ci<F>(pt_unit(id));
    atomicAdd(&t.sum, __float_as_uint(v));
    atomicAdd(&t.levels[*level], 1u);
    return pt_forest_children(id, *level, *tree, kind, levels, trees);
}

// Non-PT: one launch per level, one item per node of the level; children go to `out` at a slot taken from n_out,
// whose final value the host reads back to size the next launch.
template <int F>
__device__ __forceinline__ void pt_forest_level(const unsigned long long* in, unsigned n_in, unsigned long long* out,
                                       unsigned* n_out, unsigned cap, unsigned* level_counts, unsigned* checksum,
                                       unsigned kind, unsigned levels, unsigned trees, unsigned* status) {
    __shared__ PtTally t;
    pt_tally_init(t);
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n_in) {
        const unsigned long long node = in[i];
        unsigned level, tree;
        const unsigned c = pt_visit<F>(t, node, kind, levels, trees, &level, &tree);
        if (c != 0) {
            const unsigned base = atomicAdd(n_out, c);
            if (base + c > cap) {
                atomicOr(status, PT_STATUS_OVERFLOW);
            } else {
                for (unsigned j = 0; j < c; ++j) out[base + j] = pt_node(level + 1, tree, pt_hash((unsigned)node * 4u + j + 1u));
            }
        }
    }
    pt_tally_flush(t, level_counts, checksum);
}

// PT: one launch; every item claims the next queue slot (head), waits until a node is in it, visits it and
// appends its children (tail). `pending` counts nodes pushed but not yet visited: children are added to it before
// they are pushed and a node is taken off it after, so it reaches 0 only when the whole forest is visited, and an
// item whose slot stays empty leaves then. Each item runs its own loop (no item waits for another item of its
// wave inside a branch, which would deadlock a wave64 that runs both branches in turn).
template <int F>
__device__ __forceinline__ void pt_forest_pt(unsigned long long* queue, unsigned cap, unsigned* counters, unsigned* level_counts,
                                    unsigned* checksum, unsigned kind, unsigned levels, unsigned trees,
                                    unsigned spin_limit, unsigned* status) {
    __shared__ PtTally t;
    pt_tally_init(t);
    unsigned* head = &counters[0];
    unsigned* tail = &counters[1];
    unsigned* pending = &counters[2];
    volatile unsigned* vpending = pending;
    volatile unsigned* vstatus = status;
    unsigned slot = PT_NONE, idle = 0;
    for (;;) {
        if (slot == PT_NONE) slot = atomicAdd(head, 1u);
        // Slots past the capacity are never filled (an overflow is flagged by whoever would have filled them).
        if (slot >= cap) break;
        const unsigned long long node = *(volatile unsigned long long*)&queue[slot];
        if (node != PT_EMPTY) {
            unsigned level, tree;
            const unsigned c = pt_visit<F>(t, node, kind, levels, trees, &level, &tree);
            if (c != 0) {
                atomicAdd(pending, c);
                const unsigned base = atomicAdd(tail, c);
                if (base + c > cap) {
                    atomicOr(status, PT_STATUS_OVERFLOW);
                    atomicSub(pending, c);
                } else {
                    for (unsigned j = 0; j < c; ++j)
                        atomicExch(&queue[base + j], pt_node(level + 1, tree, pt_hash((unsigned)node * 4u + j + 1u)));
                }
            }
            __threadfence();
            atomicSub(pending, 1u);
            slot = PT_NONE;
            idle = 0;
        } else {
            if (*vpending == 0) break;
            if (++idle > spin_limit) {
                atomicOr(status, PT_STATUS_TIMEOUT);
                break;
            }
            // Another item gave up: there is no point waiting for it.
            if (*vstatus != 0) break;
        }
    }
    pt_tally_flush(t, level_counts, checksum);
}

// ---- Use case 3: maintaining active state ----------------------------------------------------------------------
// Sums of groups of 256 in LDS (a binary tree: blockDim.x must be a power of two).
__device__ __forceinline__ float pt_group_sum(float v) {
    __shared__ float s[1024];
    s[threadIdx.x] = v;
    __syncthreads();
    for (unsigned h = blockDim.x / 2; h > 0; h /= 2) {
        if (threadIdx.x < h) s[threadIdx.x] += s[threadIdx.x + h];
        __syncthreads();
    }
    const float total = s[0];
    // s is reused by the next call: nobody may write it before everyone has read the total.
    __syncthreads();
    return total;
}

// Non-PT reduction, pass 1: one group per tile of blockDim.x elements writes its partial sum.
GPU_KERNEL void pt_reduce_tiles(const float* x, unsigned n, float* partials) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    const float total = pt_group_sum(i < n ? x[i] : 0.0f);
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

// Non-PT reduction, pass 2 (one group): the partials through global memory, summed.
GPU_KERNEL void pt_reduce_final(const float* partials, unsigned m, float* out) {
    float acc = 0.0f;
    for (unsigned j = threadIdx.x; j < m; j += blockDim.x) acc += partials[j];
    const float total = pt_group_sum(acc);
    if (threadIdx.x == 0) *out = total;
}

// PT reduction: each item keeps its running sum in a register across all the tiles its group visits (static
// schedule), one partial per group; the last group to finish sums the partials, so one launch does it all.
GPU_KERNEL void pt_reduce_pt(const float* x, unsigned n, float* partials, unsigned* done, float* out) {
    float acc = 0.0f;
    const unsigned stride = gridDim.x * blockDim.x;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) acc += x[i];
    const float total = pt_group_sum(acc);
    __shared__ unsigned last;
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = total;
        // The partial must be visible before this group counts itself done.
        __threadfence();
        last = atomicAdd(done, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    float sum = 0.0f;
    const volatile float* p = partials;
    for (unsigned j = threadIdx.x; j < gridDim.x; j += blockDim.x) sum += p[j];
    const float grand = pt_group_sum(sum);
    if (threadIdx.x == 0) {
        *out = grand;
        *done = 0;
    }
}

// Producer -> consumer chain. Stage A: a = 16 FMAs of x; stage B: out[i] = a[i] + a[next in the tile], the
// neighbour wrapping within each tile of blockDim.x items (0 past n). Non-PT: two kernels, `a` through global
// memory. PT: one kernel at maximal launch, each group hands its tile from A to B through LDS.
#define PT_CHAIN_FMAS 16
GPU_KERNEL void pt_chain_a(const float* x, float* mid, unsigned n) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) mid[i] = pt_work_ci<PT_CHAIN_FMAS>(x[i]);
}

GPU_KERNEL void pt_chain_b(const float* mid, float* out, unsigned n) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned j = blockIdx.x * blockDim.x + (threadIdx.x + 1) % blockDim.x;
    if (i < n) out[i] = mid[i] + (j < n ? mid[j] : 0.0f);
}

GPU_KERNEL void pt_chain_pt(const float* x, float* out, unsigned n) {
    __shared__ float s[1024];
    const unsigned tiles = (n + blockDim.x - 1) / blockDim.x;
    for (unsigned tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const unsigned i = tile * blockDim.x + threadIdx.x;
        s[threadIdx.x] = i < n ? pt_work_ci<PT_CHAIN_FMAS>(x[i]) : 0.0f;
        __syncthreads();
        if (i < n) out[i] = s[threadIdx.x] + s[(threadIdx.x + 1) % blockDim.x];
        // The next tile overwrites s.
        __syncthreads();
    }
}

// ---- Use case 4: global synchronisation --------------------------------------------------------------------------
// One Jacobi step: b[i] = (a[i-1] + a[i] + a[i+1]) / 3, ends fixed. The sum is written with its order spelled out
// and there is no add after the multiply, so no FMA contraction can change the result: the host's FP32 reference
// is bit-exact.
#define PT_THIRD (1.0f / 3.0f)
__device__ __forceinline__ float pt_jacobi_at(const float* a, unsigned i, unsigned n) {
    if (i == 0 || i == n - 1) return a[i];
    return ((a[i - 1] + a[i]) + a[i + 1]) * PT_THIRD;
}

// Non-PT: one launch per step; the launch boundary is the barrier.
GPU_KERNEL void pt_jacobi_step(const float* a, float* b, unsigned n) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = pt_jacobi_at(a, i, n);
}

// PT with the platform's grid barrier: launched cooperatively at no more than the co-resident grid.
GPU_KERNEL void pt_jacobi_coop(float* a, float* b, unsigned n, unsigned steps) {
    const unsigned stride = gridDim.x * blockDim.x;
    for (unsigned s = 0; s < steps; ++s) {
        const float* src = (s & 1) ? b : a;
        float* dst = (s & 1) ? a : b;
        for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) dst[i] = pt_jacobi_at(src, i, n);
        gpu_grid_sync();
    }
}

// A software grid barrier. Each group arrives by one release atomic add on one of `counters` arrival counters
// (group g on counter g % counters, each counter on its own 128-byte line) and waits until every counter has
// counted all of its groups for this barrier: the waiters poll the counters themselves, one load per spin, so the
// last arrival's add is the release, with no flag written after it. The counters only grow during a launch (the
// host zeroes them before it): barrier `epoch` (1, 2, ...) is complete when counter c reaches epoch x (its groups),
// compared with wrapping arithmetic, so no reset, no sense word and no generation word are needed. A group cannot
// arrive at barrier epoch + 1 before barrier epoch is complete, so a counter never runs more than one barrier
// ahead of a waiter.
//
// A group starts polling only once its add has returned (and not at all when its add completed its counter): in a
// standalone bench during development, at the maximal launch of an H200 (1056 groups, one counter), polling at once
// made the barrier 1.5x slower (3.3 vs 2.2 us): the polls queue on the counter's line ahead of the other groups'
// adds. A flag written by the last arrival would cost one more trip to L2 and back (0.5 us at 132 groups in that
// bench). Spreading the adds over `counters` lines (1 to PT_BARRIER_MAX_COUNTERS, the host's choice) shortens each
// line's queue: a group polls its own counter, then all the others at once. Measured by `suite run pt` on an H200
// (barrier alone, 100 steps): one counter 1.19 us at 132 groups and 3.08 us at 1056; eight counters 1.53 and 2.44.
//
// Memory order: __syncthreads() gathers the group's writes behind item 0, whose add releases them at device scope;
// its relaxed polls read the adds' values and one acquire fence after the wait makes every group's released writes
// visible to this group's later loads (after the closing __syncthreads()). Item 0 alone talks to the other groups,
// so nothing here depends on the wave size.
//
// Legal only when every group is resident (the host launches at most the maximal launch). Every wait is bounded:
// after `spin_limit` idle polls (checked every PT_POLL_CHECK of them, with a look at `status`, so that one group's
// timeout releases the others at once) it sets PT_STATUS_TIMEOUT and returns false, and every group leaves the
// kernel.
#define PT_BARRIER_LINE_WORDS 32u
#define PT_BARRIER_MAX_COUNTERS 8u
#define PT_POLL_CHECK 1024u

// Groups of a grid of `groups` on counter c of `counters` (groups g with g % counters == c).
__device__ __forceinline__ unsigned pt_counter_groups(unsigned groups, unsigned counters, unsigned c) {
    return (groups - c + counters - 1) / counters;
}

// Whether a counter that only grows (modulo 2^32) has reached `target`.
__device__ __forceinline__ bool pt_reached(unsigned value, unsigned target) { return (int)(value - target) >= 0; }

// One idle poll: false once the wait has gone on too long or another group reported a timeout.
__device__ __forceinline__ bool pt_poll_again(unsigned* idle, unsigned spin_limit, unsigned* status) {
    if ((++*idle % PT_POLL_CHECK) == 0 && (*idle > spin_limit || gpu_atomic_load_relaxed(status) != 0)) {
        atomicOr(status, PT_STATUS_TIMEOUT);
        return false;
    }
    return true;
}

__device__ __forceinline__ bool pt_grid_barrier(unsigned* bar, unsigned counters, unsigned epoch, unsigned spin_limit,
                                                unsigned* status) {
    __shared__ unsigned ok;
    __syncthreads();
    if (threadIdx.x == 0) {
        const unsigned groups = gridDim.x;
        const unsigned mine = blockIdx.x % counters;
        unsigned* own = &bar[mine * PT_BARRIER_LINE_WORDS];
        const unsigned own_target = epoch * pt_counter_groups(groups, counters, mine);
        unsigned idle = 0, good = 1;
        // The old value is used, so the first poll waits for the add to come back (see above).
        if (!pt_reached(gpu_atomic_add_release(own, 1u) + 1u, own_target))
            while (good && !pt_reached(gpu_atomic_load_relaxed(own), own_target))
                good = pt_poll_again(&idle, spin_limit, status);
        // The other counters: each pass issues the loads of all that are still short before it looks at any.
        unsigned pending = good ? (((1u << counters) - 1u) & ~(1u << mine)) : 0u;
        while (pending != 0) {
            unsigned seen[PT_BARRIER_MAX_COUNTERS];
#pragma unroll
            for (unsigned c = 0; c < PT_BARRIER_MAX_COUNTERS; ++c)
                seen[c] = (pending >> c & 1u) ? gpu_atomic_load_relaxed(&bar[c * PT_BARRIER_LINE_WORDS]) : 0u;
#pragma unroll
            for (unsigned c = 0; c < PT_BARRIER_MAX_COUNTERS; ++c)
                if ((pending >> c & 1u) && pt_reached(seen[c], epoch * pt_counter_groups(groups, counters, c)))
                    pending &= ~(1u << c);
            if (pending != 0 && !pt_poll_again(&idle, spin_limit, status)) {
                good = 0;
                pending = 0;
            }
        }
        gpu_fence_acquire();
        ok = good;
    }
    __syncthreads();
    return ok != 0;
}

// PT with the software barrier. `skip_group` < gridDim.x makes that group leave at once, never arriving: the
// timeout path's test (pass 0xffffffff otherwise).
GPU_KERNEL void pt_jacobi_soft(float* a, float* b, unsigned n, unsigned steps, unsigned* bar, unsigned counters,
                               unsigned spin_limit, unsigned* status, unsigned skip_group) {
    if (blockIdx.x == skip_group) return;
    const unsigned stride = gridDim.x * blockDim.x;
    for (unsigned s = 0; s < steps; ++s) {
        const float* src = (s & 1) ? b : a;
        float* dst = (s & 1) ? a : b;
        for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) dst[i] = pt_jacobi_at(src, i, n);
        if (!pt_grid_barrier(bar, counters, s + 1, spin_limit, status)) return;
    }
}

// ---- The barrier alone ---------------------------------------------------------------------------------------
// `steps` barriers with no work between them: the software barrier, the platform's grid barrier, and the relaunch
// equivalent (one launch of an otherwise empty kernel per step). With `check` set (the verified launch, never a
// timed one), item 0 of every group marks slots[group] = step + 1 before barrier `step` and then reads its
// neighbour's slot, which must be at least step + 1 (the neighbour may already have marked the next step): a smaller
// value means the barrier let a group through early, PT_STATUS_ORDER. After the launch every slot holds `steps`.
__device__ __forceinline__ void pt_mark(unsigned* slots, unsigned step, unsigned check) {
    if (check && threadIdx.x == 0) gpu_atomic_store_relaxed(&slots[blockIdx.x], step + 1);
}

__device__ __forceinline__ void pt_check_neighbour(unsigned* slots, unsigned at_least, unsigned check, unsigned* status) {
    if (check && threadIdx.x == 0) {
        const unsigned next = blockIdx.x + 1 == gridDim.x ? 0 : blockIdx.x + 1;
        if (!pt_reached(gpu_atomic_load_relaxed(&slots[next]), at_least)) atomicOr(status, PT_STATUS_ORDER);
    }
}

GPU_KERNEL void pt_barrier_soft(unsigned steps, unsigned* bar, unsigned counters, unsigned spin_limit,
                                unsigned* status, unsigned* slots, unsigned check) {
    for (unsigned s = 0; s < steps; ++s) {
        pt_mark(slots, s, check);
        if (!pt_grid_barrier(bar, counters, s + 1, spin_limit, status)) return;
        pt_check_neighbour(slots, s + 1, check, status);
    }
}

// Launched cooperatively, like pt_jacobi_coop.
GPU_KERNEL void pt_barrier_coop(unsigned steps, unsigned* status, unsigned* slots, unsigned check) {
    for (unsigned s = 0; s < steps; ++s) {
        pt_mark(slots, s, check);
        gpu_grid_sync();
        pt_check_neighbour(slots, s + 1, check, status);
    }
}

// Step `step` of the relaunch equivalent: the launch boundary is the barrier. The neighbour marked step - 1 in the
// launch before (or already `step` in this one).
GPU_KERNEL void pt_barrier_relaunch(unsigned step, unsigned* status, unsigned* slots, unsigned check) {
    pt_check_neighbour(slots, step, check, status);
    pt_mark(slots, step, check);
}

// ---- One wrapper per FMA count -----------------------------------------------------------------------------------
#define PT_WRAPPERS(F)                                                                                                \
    GPU_KERNEL void pt_sync_nonpt_ci_f##F(const float* items, const unsigned* terminal, float* out, const float* tab, \
                                          unsigned mask) {                                                            \
        pt_consume_nonpt<F, false>(items, terminal, out, tab, mask);                                                  \
    }                                                                                                                 \
    GPU_KERNEL void pt_sync_nonpt_cmi_f##F(const float* items, const unsigned* terminal, float* out,                \
                                           const float* tab, unsigned mask) {                                         \
        pt_consume_nonpt<F, true>(items, terminal, out, tab, mask);                                                   \
    }                                                                                                                 \
    GPU_KERNEL void pt_sync_pt_ci_f##F(const float* items, const unsigned* terminal, float* out, const float* tab,    \
                                       unsigned mask, unsigned* head, unsigned mode, unsigned chunk) {                \
        pt_consume_pt<F, false>(items, terminal, out, tab, mask, head, mode, chunk);                                  \
    }                                                                                                                 \
    GPU_KERNEL void pt_sync_pt_cmi_f##F(const float* items, const unsigned* terminal, float* out, const float* tab,   \
                                        unsigned mask, unsigned* head, unsigned mode, unsigned chunk) {               \
        pt_consume_pt<F, true>(items, terminal, out, tab, mask, head, mode, chunk);                                   \
    }                                                                                                                 \
    GPU_KERNEL void pt_forest_level_f##F(const unsigned long long* in, unsigned n_in, unsigned long long* out,       \
                                         unsigned* n_out, unsigned cap, unsigned* level_counts, unsigned* checksum,   \
                                         unsigned kind, unsigned levels, unsigned trees, unsigned* status) {          \
        pt_forest_level<F>(in, n_in, out, n_out, cap, level_counts, checksum, kind, levels, trees, status);           \
    }                                                                                                                 \
    GPU_KERNEL void pt_forest_pt_f##F(unsigned long long* queue, unsigned cap, unsigned* counters,                   \
                                      unsigned* level_counts, unsigned* checksum, unsigned kind, unsigned levels,     \
                                      unsigned trees, unsigned spin_limit, unsigned* status) {                        \
        pt_forest_pt<F>(queue, cap, counters, level_counts, checksum, kind, levels, trees, spin_limit, status);       \
    }

PT_WRAPPERS(1)
PT_WRAPPERS(4)
PT_WRAPPERS(16)
PT_WRAPPERS(64)
PT_WRAPPERS(256)
