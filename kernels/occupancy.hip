// Occupancy experiment: how the group size, the group count, barriers, LDS and registers decide how many waves a
// CU/SM holds at once, and what that does to the time. From the seed oneapi-thread-mapping-and-occupancy (VectorAdd1
// to VectorAdd4), moved from Intel Xe-cores to AMD CUs and NVIDIA SMs.
//
// Conventions shared by every kernel here (the Rust VARIANTS table relies on them):
// - 1-D launches only: grid (G, 1, 1), group (B, 1, 1). Waves are cut from consecutive threadIdx.x, so item t of a
//   group is lane t % GPU_WAVE_SIZE of wave t / GPU_WAVE_SIZE; the last wave of a group whose size is not a multiple
//   of the wave size has fewer lanes.
// - FP32 data; `unsigned` is 32-bit. Element indices of the one-element-per-item kernels are 32-bit
//   (blockIdx.x * blockDim.x + threadIdx.x), so the grid must not cover 2^32 items or more; the chunk kernels use
//   64-bit element offsets.
// - Timeline records (occupancy_chunks*): 4 × u64 per wave, see occupancy_chunks.
// - Nothing assumes 32 or 64 items per wave: wave arithmetic uses GPU_WAVE_SIZE.
#include "gpu.h"

// A compiler-only memory barrier: no instruction, but the compiler must assume any memory may have been read or
// written here, so it can neither move loads or stores across it nor reuse values loaded before it.
#define COMPILER_MEMORY_BARRIER() asm volatile("" ::: "memory")

// The device-wide clock, read at this point of the program and nowhere else: the barriers on either side keep the
// compiler from moving the work's loads and stores across the read (the clock read itself has side effects, so it
// is never moved or merged either).
__device__ __forceinline__ unsigned long long timeline_clock() {
    COMPILER_MEMORY_BARRIER();
    const unsigned long long t = gpu_wall_clock();
    COMPILER_MEMORY_BARRIER();
    return t;
}

// ---------------------------------------------------------------------------------------------------------------
// 1. occupancy_vector_add — seed VectorAdd1/VectorAdd2 reduced to one element per item.
//
// Idea: sum[i] = a[i] + b[i], i = blockIdx.x * blockDim.x + threadIdx.x. The sweep varies only the group size B
// (32..1024, including sizes that are not a multiple of the wave: 48, 80, 96, 160): a group of B items takes
// ceil(B / wave) waves, so the last wave of each group runs with idle lanes (wave quantisation), and the group
// size also sets how many groups fit on a CU/SM (waves per CU, groups per CU limits).
// Expected limit: memory bandwidth, 12 bytes per element (two 4-byte reads, one 4-byte write), while enough items
// are resident to cover the latency. Small groups hit the groups-per-CU limit before the item limit: on gfx90a a
// 32-item group is one half-empty wave64, so at most half of a CU's 2048 item slots hold items; on H100, 32 blocks
// per SM of 32 threads are 1024 of its 2048 thread slots.
// Launch: grid ceil(n / B), any B in 1..1024, any n (items past n do nothing). No LDS, no barrier.
// Host check: sum[i] == a[i] + b[i] exactly (one IEEE f32 add) for every i < n.
// ---------------------------------------------------------------------------------------------------------------
GPU_KERNEL void occupancy_vector_add(const float* __restrict__ a, const float* __restrict__ b,
                                     float* __restrict__ sum, unsigned n) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) sum[i] = a[i] + b[i];
}

// ---------------------------------------------------------------------------------------------------------------
// 1b. occupancy_vector_add_x4, occupancy_copy, occupancy_copy_x4 — the same memory-bound work with more per item.
//
// Idea: one 4-byte element per item spends an item (and its index arithmetic, its guard and its share of a group's
// scheduling) per 12 bytes; 16-byte loads and stores move four elements per item, as the driver's memcpy does.
// The copy kernels are the bandwidth reference measured the way the vector adds are (a kernel launch, bytes read +
// written), next to the driver memcpy; `_x4` processes float4 q = elements 4q..4q+3.
// Expected limit: memory bandwidth at every group size that fills the device.
// Launch: grid ceil(ceil(n / W) / B) with W = 1 (occupancy_copy) or 4 (`_x4`), any B in 1..1024, any n < 2^32
// (the float4 index is 32-bit; a last partial float4 is done element by element). Buffers from the allocator are
// 256-byte aligned, so float4 accesses are aligned.
// Host check: sum[i] == a[i] + b[i] exactly; dst[i] == src[i].
// ---------------------------------------------------------------------------------------------------------------
GPU_KERNEL void occupancy_vector_add_x4(const float* __restrict__ a, const float* __restrict__ b,
                                        float* __restrict__ sum, unsigned n) {
    const unsigned q = blockIdx.x * blockDim.x + threadIdx.x;
    const size_t e = 4 * (size_t)q;
    if (e + 4 <= n) {
        const float4 x = reinterpret_cast<const float4*>(a)[q];
        const float4 y = reinterpret_cast<const float4*>(b)[q];
        reinterpret_cast<float4*>(sum)[q] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    } else {
        for (size_t i = e; i < n; ++i) sum[i] = a[i] + b[i];
    }
}

GPU_KERNEL void occupancy_copy(const float* __restrict__ src, float* __restrict__ dst, unsigned n) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i];
}

GPU_KERNEL void occupancy_copy_x4(const float* __restrict__ src, float* __restrict__ dst, unsigned n) {
    const unsigned q = blockIdx.x * blockDim.x + threadIdx.x;
    const size_t e = 4 * (size_t)q;
    if (e + 4 <= n) {
        reinterpret_cast<float4*>(dst)[q] = reinterpret_cast<const float4*>(src)[q];
    } else {
        for (size_t i = e; i < n; ++i) dst[i] = src[i];
    }
}

// ---------------------------------------------------------------------------------------------------------------
// 2. occupancy_chunks — seed VectorAdd2<groups> / VectorAdd3<groups, wg_size>: a fixed amount of work per group.
//
// Idea: group g owns the elements [g*chunk, (g+1)*chunk) and adds them, item t taking elements g*chunk + t,
// + t + B, + t + 2B, ... (a stride of the group size B, so each wave's accesses are contiguous), and it does the
// whole chunk `iters` times so a group lives long enough to be seen on a timeline. The group count G is the
// sweep variable: time stays flat while G groups fit on the device at once, then steps up when a second, partial
// round of groups is needed (the seed's "100% then 14.3%" occupancy).
// Expected limit: memory latency and bandwidth: each item has one add per 12 bytes, and a and b are not
// __restrict__ (as in the seed's accessors), so an item cannot start the next element's loads before its store;
// the loads of other waves hide the latency, so time per element falls as resident waves rise.
// Launch: grid G, any B in 1..1024, any chunk >= 0 (chunk need not be a multiple of B: items past the end of
// the chunk do nothing in the last pass), any iters >= 0. a, b, sum hold at least G*chunk floats.
// Host check: sum[i] == a[i] + b[i] exactly for i < G*chunk (when iters >= 1; iters == 0 writes nothing).
//
// Timeline: if `timeline` is not null, lane 0 of every wave writes one record of 4 u64 at
//     timeline + 4 * (blockIdx.x * waves_per_group + wave_in_group),
//     waves_per_group = ceil(B / GPU_WAVE_SIZE), wave_in_group = threadIdx.x / GPU_WAVE_SIZE,
// so the buffer holds 4 * G * waves_per_group u64 (the host learns the wave size from the device). Record:
//     [0] cu_id: gpu_cu_id(), the CU/SM the wave ran on (unique, sparse: map the values seen to 0..CUs-1)
//     [1] group: blockIdx.x
//     [2] start: gpu_wall_clock() read as the wave begins, before its first load
//     [3] end:   gpu_wall_clock() read once every lane of the wave has stored its last element and a
//                device-scope fence has waited for those stores to complete
// Clock units: AMD wall_clock64 ticks at hipDeviceAttributeWallClockRate kHz (100 MHz on MI200: 10 ns); NVIDIA
// %globaltimer counts nanoseconds (its update step may be coarser, up to ~1 µs, so make waves last ≥ 100 µs).
// With timeline == null no clock or CU id is read: the timed sweep runs the same code minus a few instructions.
// ---------------------------------------------------------------------------------------------------------------

// Where this wave's record goes; only called by lane 0 of a wave.
__device__ __forceinline__ unsigned long long* timeline_record(unsigned long long* timeline) {
    const unsigned waves_per_group = (blockDim.x + GPU_WAVE_SIZE - 1) / GPU_WAVE_SIZE;
    const unsigned wave_in_group = threadIdx.x / GPU_WAVE_SIZE;
    return timeline + 4 * ((size_t)blockIdx.x * waves_per_group + wave_in_group);
}

// The seed's loop body: `iters` passes over the group's chunk with a stride of the group size.
__device__ __forceinline__ void add_chunk(const float* a, const float* b, float* sum, unsigned chunk,
                                          unsigned iters) {
    const size_t begin = (size_t)blockIdx.x * chunk;
    const size_t end = begin + chunk;
    for (unsigned j = 0; j < iters; ++j) {
        for (size_t i = begin + threadIdx.x; i < end; i += blockDim.x) sum[i] = a[i] + b[i];
        // Every pass stores the same values, so without this the compiler would be free to drop all passes but
        // the last (they are dead stores of loop-invariant loads); the barrier makes each pass really load and
        // store, as in the seed, where `iter` repeats the memory work.
        COMPILER_MEMORY_BARRIER();
    }
}

// Writes the record of this wave. Every item of the wave must call it (gpu_wave_sync waits for all its lanes).
__device__ __forceinline__ void timeline_write(unsigned long long* timeline, unsigned long long cu,
                                               unsigned long long start) {
    // Every lane of the wave is past its last store before the clock is read. On AMD a wave runs in lockstep; on
    // NVIDIA the lanes of a warp may leave the loop at different times (a partial last pass gives the low lanes
    // one element more) and nothing else makes them reconverge before lane 0 reads the clock.
    gpu_wave_sync();
    // Waits until this item's stores are performed device-wide, so `end` means "the wave's work is done", not
    // "its last store left the wave" (a workgroup-scope fence does not wait for them on gfx90a). It costs one
    // store round trip per wave, only when the timeline is on.
    __threadfence();
    const unsigned long long end = timeline_clock();
    if (threadIdx.x % GPU_WAVE_SIZE == 0) {
        unsigned long long* rec = timeline_record(timeline);
        rec[0] = cu;
        rec[1] = blockIdx.x;
        rec[2] = start;
        rec[3] = end;
    }
}

GPU_KERNEL void occupancy_chunks(const float* a, const float* b, float* sum, unsigned chunk, unsigned iters,
                                 unsigned long long* timeline) {
    unsigned long long start = 0, cu = 0;
    if (timeline != nullptr) {  // uniform branch: every item of the launch sees the same pointer
        start = timeline_clock();
        cu = gpu_cu_id();
    }
    add_chunk(a, b, sum, chunk, iters);
    if (timeline != nullptr) timeline_write(timeline, cu, start);
}

// ---------------------------------------------------------------------------------------------------------------
// 3. occupancy_chunks_barrier — seed VectorAdd4: VectorAdd3 plus a group barrier at the start and at the end.
//
// Idea: the barriers do nothing for the result, but a group can pass a barrier only when all its waves are
// resident, so they constrain how groups may be placed; the seed (on Intel Xe) sees different occupancy phases
// with and without them. On AMD and NVIDIA a group's resources are always allocated at once on one CU/SM, barrier
// or not, so the expectation here is the same phases as occupancy_chunks, with every wave of a group ending
// together; the timeline shows whether that holds.
// Where the clock reads sit, and why: `start` is read BEFORE the first barrier, so it is when the wave became
// resident; any time spent waiting for the rest of its group shows as part of [start, end] (the wave holds its
// slot while it waits), and the spread of `start` within a group shows how the group was dispatched. `end` is read
// AFTER the final barrier, so it is when the whole group has finished; all waves of a group report about the same
// end.
// Expected limit: as occupancy_chunks, plus two barriers per group (negligible with iters large).
// Launch, host check and timeline records: exactly as occupancy_chunks.
// ---------------------------------------------------------------------------------------------------------------
GPU_KERNEL void occupancy_chunks_barrier(const float* a, const float* b, float* sum, unsigned chunk,
                                         unsigned iters, unsigned long long* timeline) {
    unsigned long long start = 0, cu = 0;
    if (timeline != nullptr) {
        start = timeline_clock();
        cu = gpu_cu_id();
    }
    __syncthreads();  // the seed's first barrier: no item starts work before its whole group is resident
    add_chunk(a, b, sum, chunk, iters);
    __syncthreads();  // the seed's last barrier: the group finishes as one (also orders the stores before `end`)
    if (timeline != nullptr) timeline_write(timeline, cu, start);
}

// ---------------------------------------------------------------------------------------------------------------
// 4. occupancy_lds — occupancy_vector_add with LDS in the path, occupancy limited by the LDS allocation.
//
// Idea: the host sweeps the dynamic LDS size of the launch (lds_bytes); a CU holds only as many groups as fit in its
// LDS (64 KiB on gfx90a, in 512 B blocks; up to 227 KiB per block on H100), so past a point fewer groups are
// resident and the memory latency is hidden less well. The data goes through LDS for real, so nothing can drop the
// allocation or its traffic: item t stores a+b of its own element into lds[t], the group synchronises, and item t
// writes out the value of its mirror item B-1-t. Only lds[0..B) is touched; the rest of the allocation exists to
// limit occupancy.
// Expected limit: memory bandwidth while enough groups are resident, then latency as lds_bytes cuts the groups per
// CU; 12 bytes of global traffic per element, plus one LDS store and one LDS load (conflict-free: consecutive and
// reversed-consecutive words).
// Launch: grid ceil(n / B), any B in 1..1024, dynamic LDS lds_bytes >= 4*B (NVIDIA: above 48 KiB the host must
// first raise CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES on the function; AMD: at most 64 KiB). Any n.
// Host check: with g = i / B, t = i % B, m = g*B + (B - 1 - t) (the mirror element in the same group):
//     sum[i] == (m < n ? a[m] + b[m] : 0.0f)   exactly, for every i < n.
// (m >= n happens only in a last, partial group: items past n store 0 into LDS and take part in the barrier.)
// ---------------------------------------------------------------------------------------------------------------
GPU_KERNEL void occupancy_lds(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ sum,
                              unsigned n) {
    GPU_DYNAMIC_LDS(float, lds);
    const unsigned t = threadIdx.x;
    const unsigned i = blockIdx.x * blockDim.x + t;
    lds[t] = i < n ? a[i] + b[i] : 0.0f;
    __syncthreads();  // every item's value is in LDS before any item reads its mirror's
    if (i < n) sum[i] = lds[blockDim.x - 1 - t];
}

// occupancy_lds_x4: occupancy_lds with four elements per item (float4 q = elements 4q..4q+3; lds_bytes >= 16*B):
// item t stages the sums of its float4 (0 past n) in lds4[t] and writes out its mirror's float4 B-1-t.
// Host check: with q = i / 4, j = i % 4, g = q / B, t = q % B, m = 4*(g*B + (B - 1 - t)) + j:
//     sum[i] == (m < n ? a[m] + b[m] : 0.0f)   exactly, for every i < n.
GPU_KERNEL void occupancy_lds_x4(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ sum,
                                 unsigned n) {
    GPU_DYNAMIC_LDS(float4, lds4);
    const unsigned t = threadIdx.x;
    const unsigned q = blockIdx.x * blockDim.x + t;
    const size_t e = 4 * (size_t)q;
    float4 v;
    if (e + 4 <= n) {
        const float4 x = reinterpret_cast<const float4*>(a)[q];
        const float4 y = reinterpret_cast<const float4*>(b)[q];
        v = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    } else {
        v.x = e < n ? a[e] + b[e] : 0.0f;
        v.y = e + 1 < n ? a[e + 1] + b[e + 1] : 0.0f;
        v.z = e + 2 < n ? a[e + 2] + b[e + 2] : 0.0f;
        v.w = e + 3 < n ? a[e + 3] + b[e + 3] : 0.0f;
    }
    lds4[t] = v;
    __syncthreads();  // every item's float4 is in LDS before any item reads its mirror's
    const float4 m = lds4[blockDim.x - 1 - t];
    if (e + 4 <= n) {
        reinterpret_cast<float4*>(sum)[q] = m;
    } else {
        if (e < n) sum[e] = m.x;
        if (e + 1 < n) sum[e + 1] = m.y;
        if (e + 2 < n) sum[e + 2] = m.z;
    }
}

// ---------------------------------------------------------------------------------------------------------------
// 5. occupancy_registers_r<R> — occupancy limited by registers: a ladder of kernels that need ~R registers per item.
//
// Idea: each item keeps R floats live for its whole life: it loads them, updates all of them `iters` times, and
// sums them. Every index is a compile-time constant after full unrolling, so v[] lives in registers (never in
// scratch/local memory), and the R update chains are independent, so none can be retired early. More registers
// per item means fewer waves per SIMD/SM (gfx90a: 512 / roundup(VGPRs, 8) waves per SIMD, at most 8; H100: 65536
// registers per SM, allocated per warp in 256-register units). The Rust side reads the real counts from the code
// object (AMD) or the driver (NVIDIA). Measured once (hipcc 5.2 / nvcc 13, no spills, no scratch anywhere):
//     R                        16   32   64   96  128  192
//     gfx90a VGPRs             20   36   66  100  130  194   -> waves per SIMD 8, 8, 7, 4, 3, 2
//     sm_90 registers          31   42   79  102  134  198   -> 256-item blocks per SM 8, 5, 3, 2, 1, 1
// Expected limit: FP32 issue rate: R independent chains give each wave R-way instruction-level parallelism, so a
// few waves per SIMD/SM quadrant keep the pipe busy; occupancy falls with R while the time per operation may not
// (that contrast is the point). Work per item: R*iters FP32 FMAs (multiplier -1, addend 3): FFMA on sm_90,
// v_pk_fma_f32 on gfx90a (two FMAs per instruction, the packed FP32 rate).
// Launch: __launch_bounds__(256): at most 256 items per group (so the compiler may give each item up to its full
// register budget: 255 on NVIDIA, 512 VGPR+AGPR on gfx90a). Any n; grid ceil(n / B). a holds n floats.
//
// Exact formula (host check). For i < n and j = 0..R-1:
//     x_j = a[min(i, n - R) + j]   if n >= R   (R loads per item, each wave-wide load contiguous: coalesced)
//         = a[i]                   if n <  R
//     w_j = x_j            if iters is even
//         = 3 - x_j        if iters is odd      (each update is v = fma(v, -1, 3) = 3 - v)
//     out[i] = (((0 + w_0) + w_1) + ... + w_{R-1})    summed in f32 in this order
// Fill a with values in [1, 2]: then every 3 - v lies in [1, 2] too and is exact in f32 (3 - (3 - v) == v), so
// w_j is exact for any iters and only the final sum rounds. A host reference in f64 agrees within
// R * 2^-24 * sum|w_j| (use a relative tolerance of R * 2^-23); replaying the f32 sum in order gives equality.
// ---------------------------------------------------------------------------------------------------------------
template <int R>
__device__ __forceinline__ void registers(const float* __restrict__ a, float* __restrict__ out, unsigned n,
                                          unsigned iters) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;  // no barrier in this kernel, so items past n may leave at once
    float v[R];
    if (n >= R) {
        // The window a[base .. base+R) starts at i, or is shifted left so it ends at a[n-1]. One base address and
        // R constant offsets: clamping each index instead costs a 64-bit address per load, which nvcc computes
        // all up front (to issue every load at once) and which doubled the registers of R >= 128 on sm_90.
        const float* p = a + (i <= n - R ? i : n - R);
#pragma unroll
        for (int j = 0; j < R; ++j) v[j] = p[j];
    } else {
        // Fewer than R elements in all (test sizes only): every value starts as a[i]; the R chains stay separate.
        const float x = a[i];
#pragma unroll
        for (int j = 0; j < R; ++j) v[j] = x;
    }
    for (unsigned k = 0; k < iters; ++k) {
#pragma unroll
        for (int j = 0; j < R; ++j) v[j] = fmaf(v[j], -1.0f, 3.0f);
    }
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < R; ++j) s += v[j];
    out[i] = s;
}

#define OCCUPANCY_REGISTERS(R)                                                                                    \
    GPU_KERNEL __launch_bounds__(256) void occupancy_registers_r##R(const float* __restrict__ a,                \
                                                                    float* __restrict__ out, unsigned n,        \
                                                                    unsigned iters) {                           \
        registers<R>(a, out, n, iters);                                                                           \
    }
OCCUPANCY_REGISTERS(16)
OCCUPANCY_REGISTERS(32)
OCCUPANCY_REGISTERS(64)
OCCUPANCY_REGISTERS(96)
OCCUPANCY_REGISTERS(128)
OCCUPANCY_REGISTERS(192)

// ---------------------------------------------------------------------------------------------------------------
// 6. occupancy_clock — one read of the device-wide clock, for calibrating its rate.
//
// The timelines record gpu_wall_clock() ticks. Their rate differs by platform (NVIDIA %globaltimer counts
// nanoseconds; AMD wall_clock64 runs at a constant rate the runtime reports only from ROCm 5.3 on), so the host
// measures it: two launches of this kernel, some 200 ms apart on the host clock.
// Launch: one group of one item. *out receives the clock.
// ---------------------------------------------------------------------------------------------------------------
GPU_KERNEL void occupancy_clock(unsigned long long* out) {
    if (blockIdx.x == 0 && threadIdx.x == 0) *out = gpu_wall_clock();
}

// ---------------------------------------------------------------------------------------------------------------
// 7. occupancy_spin — residency alone: every wave holds its slot for `ticks` of the device clock.
//
// Idea: the chunked vector add shares each CU's load/store pipe among its groups, so its time grows with the groups
// per CU long before the CU is full and the second round of groups hides in that slope. This kernel touches no
// memory while it waits, so a group's time does not depend on its neighbours: the launch takes one `ticks` per
// round of resident groups, and the step where a second, partial round begins is exact.
// Launch: any grid, any group size. `timeline` must hold 4 u64 per wave (same layout as occupancy_chunks); every
// wave writes its record, which is also what the host verifies: all written, and end - start >= ticks.
// ---------------------------------------------------------------------------------------------------------------
GPU_KERNEL void occupancy_spin(unsigned long long ticks, unsigned long long* timeline) {
    const unsigned long long start = gpu_wall_clock();
    while (gpu_wall_clock() - start < ticks) {
    }
    gpu_wave_sync();  // the wave's lanes have all waited before its end is read
    if (threadIdx.x % GPU_WAVE_SIZE == 0) {
        const unsigned waves_per_group = (blockDim.x + GPU_WAVE_SIZE - 1) / GPU_WAVE_SIZE;
        unsigned long long* record = timeline + 4ull * (blockIdx.x * waves_per_group + threadIdx.x / GPU_WAVE_SIZE);
        record[0] = gpu_cu_id();
        record[1] = blockIdx.x;
        record[2] = start;
        record[3] = gpu_wall_clock();
    }
}
