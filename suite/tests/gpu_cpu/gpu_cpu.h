// A CPU emulation of the part of HIP that kernels/*.hip use, for the wave-size tests (suite/tests/wave64_cpu.rs):
// the real kernel sources, compiled by g++ (C++20) with -DGPU_CPU_EMULATION -DGPU_CPU_WAVE_SIZE=64 (or 32), run on
// the host with the wave size chosen at compile time. kernels/include/gpu.h includes this file in place of its HIP
// or CUDA half; it defines everything those halves define (GPU_WAVE_SIZE, gpu_wave_sync, gpu_wall_clock, ...).
//
// Why not ROCm's HIP-CPU: it is not packaged in Debian or on PyPI, CI reaches neither GitHub nor any other source
// of it, and the project commits no third-party code. This header is a small, independent model of the same idea.
//
// What it models:
// - One OS thread per item of a group, so items make progress independently (a spin wait on another item of the
//   same group can run). Groups run one after another, in blockIdx order (x fastest).
// - Waves are cut from the linear item id (x fastest), GPU_WAVE_SIZE lanes each; the last wave of a group whose
//   size is not a multiple of the wave size has fewer lanes (as on AMD and NVIDIA).
// - __syncthreads(): a barrier of the group's items that have not returned yet (an item that returned no longer
//   counts, as an exited wave on AMD). Every item at one barrier must be at the same __syncthreads call (CUDA's
//   rule; AMD would also accept different calls): anything else stops the program with both source places.
// - Wave operations (__shfl, __shfl_up, __shfl_down, __shfl_xor, __ballot with a 64-bit mask, __any, __all,
//   gpu_wave_sync): a barrier of the wave's lanes that have not returned, at which each lane publishes its value
//   and then reads its source lane's. Source lanes follow HIP's rules (a source past the width's segment gives the
//   caller's own value). Reading a lane that does not exist (past a short last wave) or has returned stops the
//   program: on the GPU that value is undefined.
// - __shared__ is a static variable: one copy for the whole program, which is right because only one group runs at
//   a time. Dynamic LDS (GPU_DYNAMIC_LDS) is one buffer of the launch's size, 256-byte aligned. LDS is neither
//   cleared nor poisoned between groups (on the GPU its contents at group start are undefined).
// - Atomics are std::atomic_ref read-modify-writes (sequentially consistent), __threadfence() a full fence.
// - gpu_wall_clock() is std::chrono::steady_clock in nanoseconds (NVIDIA's %globaltimer unit); gpu_cu_id() is 0:
//   the emulated device has one CU.
//
// What it does not model:
// - Lockstep execution and divergent lane masks. Every lane of a wave that has not returned must call the same
//   wave operation (same source line) together; lanes of a wave in different operations, or one lane missing, stop
//   the program after a timeout (GPU_CPU_TIMEOUT_S, default 60 s) naming the operation, instead of computing what a
//   wave with a partial execution mask would. So a kernel whose correctness depends on what inactive lanes hold, or
//   on how a wave64 serialises divergent branches, is not tested here.
// - Forward progress across groups. Groups never run at the same time, so a group that waits for another group
//   (a persistent queue consumer waiting for a producer group, a software or cooperative grid barrier) cannot run:
//   gpu_grid_sync() with more than one group stops the program with that reason.
// - Timing, occupancy, caches, memory ordering weaker than sequential consistency, and floating-point contraction
//   as the GPU compilers do it (g++ does not contract a * b + c into an FMA here; fmaf() is always fused).
// - The MFMA builtins (at 64 lanes only) model their operand and result layouts exactly and their arithmetic to
//   within rounding: see the MFMA section at the end of this file.
#pragma once

#include <algorithm>
#include <atomic>
#include <barrier>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <source_location>
#include <thread>
#include <type_traits>
#include <vector>

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#if !defined(GPU_CPU_WAVE_SIZE)
#error "define GPU_CPU_WAVE_SIZE (32 or 64): the wave size the emulation runs the kernels at"
#endif
#define GPU_WAVE_SIZE GPU_CPU_WAVE_SIZE
static_assert(GPU_WAVE_SIZE == 32 || GPU_WAVE_SIZE == 64, "the emulation's ballot mask holds at most 64 lanes");
// HIP's run-time name for the wave size.
constexpr int warpSize = GPU_WAVE_SIZE;

// The HIP/CUDA keywords, as host C++.
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define GPU_AMD_MIN_WAVES_PER_SIMD(waves)

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
};

// The item's own coordinates; blockDim and gridDim are the launch's, the same for every item.
inline thread_local dim3 threadIdx{0, 0, 0};
inline thread_local dim3 blockIdx{0, 0, 0};
inline dim3 blockDim;
inline dim3 gridDim;

struct alignas(16) float4 {
    float x, y, z, w;
};
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
struct alignas(16) double2 {
    double x, y;
};
inline double2 make_double2(double x, double y) { return double2{x, y}; }

using std::max;
using std::min;
inline unsigned __float_as_uint(float x) { return std::bit_cast<unsigned>(x); }
inline float __uint_as_float(unsigned x) { return std::bit_cast<float>(x); }

namespace gpu_cpu {

// Stops the program with a message: the emulated kernel did something the emulation cannot run or that is
// undefined on the GPU. Exit status 3 tells the test it was the emulation that stopped.
[[noreturn]] inline void fail(const char* what, const std::source_location& at, const char* detail = "") {
    std::fprintf(stderr, "gpu_cpu: %s at %s:%u (group %u,%u,%u item %u,%u,%u)%s%s\n", what, at.file_name(),
                 (unsigned)at.line(), blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z,
                 detail[0] ? ": " : "", detail);
    std::fflush(stderr);
    std::_Exit(3);
}

inline std::chrono::seconds timeout() {
    static const long seconds = [] {
        const char* s = std::getenv("GPU_CPU_TIMEOUT_S");
        const long v = s ? std::atol(s) : 0;
        return v > 0 ? v : 60L;
    }();
    return std::chrono::seconds(seconds);
}

// Sleeps while *word == value, at most `timeout`; false when the time ran out. A futex on the word itself, so a
// barrier's last arrival wakes every waiter with one system call and no waiter has to take a lock again (the
// emulation runs hundreds of threads per group on a few cores; a condition variable's wake-ups, each retaking the
// mutex, cost several times more).
inline bool wait_while_equal(const std::atomic<std::uint32_t>& word, std::uint32_t value,
                             std::chrono::steady_clock::time_point deadline) {
    static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t), "a futex word");
    while (word.load(std::memory_order_acquire) == value) {
        const auto left = deadline - std::chrono::steady_clock::now();
        if (left <= std::chrono::nanoseconds(0)) return false;
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
        timespec ts{(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
        syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, value, &ts, nullptr, 0);
    }
    return true;
}

inline void wake_all(std::atomic<std::uint32_t>& word) {
    syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr, nullptr, 0);
}

// A barrier of `expected` participants that may leave (drop) for good, with a timeout, and a check that every
// participant of one phase arrived through the same operation at the same place of the source (line and column).
class Barrier {
public:
    void reset(unsigned participants) {
        std::lock_guard<std::mutex> lock(mutex_);
        expected_ = participants;
        arrived_ = 0;
    }

    void arrive_and_wait(const char* what, const std::source_location& at) {
        std::uint32_t phase;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (arrived_ == 0) {
                site_ = at;
                what_ = what;
            } else if (site_.line() != at.line() || site_.column() != at.column() || std::strcmp(what_, what) != 0 ||
                       std::strcmp(site_.file_name(), at.file_name()) != 0) {
                char detail[512];
                std::snprintf(detail, sizeof detail,
                              "another participant waits in %s at %s:%u:%u (divergent control flow)", what_,
                              site_.file_name(), (unsigned)site_.line(), (unsigned)site_.column());
                fail(what, at, detail);
            }
            phase = phase_.load(std::memory_order_relaxed);
            if (++arrived_ == expected_) {
                next_phase();
                return;
            }
        }
        if (!wait_while_equal(phase_, phase, std::chrono::steady_clock::now() + timeout())) {
            std::lock_guard<std::mutex> lock(mutex_);
            if (phase_.load(std::memory_order_acquire) != phase) return;
            char detail[256];
            std::snprintf(detail, sizeof detail,
                          "%u of %u participants arrived within %lld s: the others never call it (divergent "
                          "control flow, or a wait on work that never comes)",
                          arrived_, expected_, (long long)timeout().count());
            fail(what, at, detail);
        }
    }

    // A participant that returned from the kernel: later phases do not wait for it.
    void drop() {
        std::lock_guard<std::mutex> lock(mutex_);
        --expected_;
        if (arrived_ != 0 && arrived_ == expected_) next_phase();
    }

private:
    // Called with the mutex held by the last participant to arrive (or drop).
    void next_phase() {
        arrived_ = 0;
        phase_.fetch_add(1, std::memory_order_release);
        wake_all(phase_);
    }

    std::mutex mutex_;
    std::atomic<std::uint32_t> phase_{0};
    unsigned expected_ = 0, arrived_ = 0;
    std::source_location site_;
    const char* what_ = "";
};

// One wave of the running group: its barrier and the lanes' published values.
struct Wave {
    Barrier barrier;
    unsigned lanes = 0;                         // lanes that exist (fewer in a short last wave)
    std::uint64_t value[GPU_WAVE_SIZE] = {};    // each lane's value in the current exchange
    bool returned[GPU_WAVE_SIZE] = {};          // lanes that have returned from the kernel
    // Each lane's operands and results in the current MFMA (the MFMA section at the end of this file): its A and B
    // elements, and its C and D registers (16 at most), held as doubles (which hold every float exactly).
    struct MfmaLane {
        double a = 0, b = 0, c[16] = {}, d[16] = {};
    } mfma[GPU_WAVE_SIZE];
};

// The group that is running (one at a time).
struct Group {
    Barrier barrier;
    std::vector<std::unique_ptr<Wave>> waves;
};
inline Group* running = nullptr;
inline void* dynamic_lds_base = nullptr;
inline unsigned long long grid_groups = 1;

inline unsigned linear_item() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
inline unsigned lane_id() { return linear_item() % GPU_WAVE_SIZE; }
inline Wave& my_wave() { return *running->waves[linear_item() / GPU_WAVE_SIZE]; }

// The wave exchange: every lane that has not returned publishes `v`, then each reads lane `source` (its own value
// when source == its lane). A second barrier keeps a fast lane's next exchange from overwriting a value another
// lane has not read yet.
template <class T> T exchange(T v, unsigned source, const char* what, const std::source_location& at) {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(std::uint64_t), "one 64-bit slot per lane");
    Wave& w = my_wave();
    const unsigned lane = lane_id();
    std::memcpy(&w.value[lane], &v, sizeof(T));
    w.barrier.arrive_and_wait(what, at);
    T r = v;
    if (source != lane) {
        if (source >= w.lanes) fail(what, at, "reads a lane past the end of a short wave (undefined on the GPU)");
        if (w.returned[source]) fail(what, at, "reads a lane that has returned (undefined on the GPU)");
        std::memcpy(&r, &w.value[source], sizeof(T));
    }
    w.barrier.arrive_and_wait(what, at);
    return r;
}

// Every lane's predicate as a mask, bit i for lane i.
inline unsigned long long ballot(bool pred, const char* what, const std::source_location& at) {
    Wave& w = my_wave();
    const unsigned lane = lane_id();
    w.value[lane] = pred ? 1u : 0u;
    w.barrier.arrive_and_wait(what, at);
    unsigned long long mask = 0;
    for (unsigned l = 0; l < w.lanes; ++l)
        if (!w.returned[l] && w.value[l] != 0) mask |= 1ull << l;
    w.barrier.arrive_and_wait(what, at);
    return mask;
}

inline void check_width(int width, const char* what, const std::source_location& at) {
    if (width <= 0 || width > GPU_WAVE_SIZE || (width & (width - 1)) != 0)
        fail(what, at, "width must be a power of two no larger than the wave");
}

inline void* dynamic_lds() { return dynamic_lds_base; }

// Runs `kernel` (a callable that calls the kernel with its arguments) over the grid: groups one after another, one
// thread per item. The threads are made once per launch and run every group in turn: between two groups they meet
// at a gate, whose last arrival sets up the next group (its coordinates, a full group barrier, its waves).
// Returns when every group has finished.
template <class F> void launch(dim3 grid, dim3 block, std::size_t dynamic_lds_bytes, F&& kernel) {
    gridDim = grid;
    blockDim = block;
    grid_groups = (unsigned long long)grid.x * grid.y * grid.z;
    const unsigned items = block.x * block.y * block.z;
    const std::size_t lds_bytes = (std::max<std::size_t>(dynamic_lds_bytes, 1) + 255) / 256 * 256;
    void* lds = std::aligned_alloc(256, lds_bytes);
    if (lds == nullptr) {
        std::fprintf(stderr, "gpu_cpu: cannot allocate %zu bytes of dynamic LDS\n", lds_bytes);
        std::_Exit(2);
    }
    dynamic_lds_base = lds;
    Group group;
    for (unsigned w = 0; w < (items + GPU_WAVE_SIZE - 1) / GPU_WAVE_SIZE; ++w) group.waves.push_back(std::make_unique<Wave>());
    running = &group;
    unsigned long long next = 0;  // linear index of the next group to run (x fastest)
    dim3 coords;                  // the group the items run now
    auto set_up_next_group = [&]() noexcept {
        if (next == grid_groups) return;
        coords = dim3{(unsigned)(next % grid.x), (unsigned)(next / grid.x % grid.y), (unsigned)(next / grid.x / grid.y)};
        ++next;
        group.barrier.reset(items);
        for (unsigned w = 0; w < group.waves.size(); ++w) {
            Wave& wave = *group.waves[w];
            wave.lanes = std::min<unsigned>(GPU_WAVE_SIZE, items - w * GPU_WAVE_SIZE);
            wave.barrier.reset(wave.lanes);
            std::fill(std::begin(wave.returned), std::end(wave.returned), false);
        }
    };
    set_up_next_group();
    std::barrier gate((std::ptrdiff_t)items, set_up_next_group);
    std::vector<std::thread> threads;
    threads.reserve(items);
    for (unsigned t = 0; t < items; ++t) {
        threads.emplace_back([&, t] {
            threadIdx = dim3{t % block.x, t / block.x % block.y, t / (block.x * block.y)};
            for (unsigned long long g = 0; g < grid_groups; ++g) {
                blockIdx = coords;
                kernel();
                Wave& wave = my_wave();
                // Published before the drop, whose lock orders it before any other lane's read of it.
                wave.returned[lane_id()] = true;
                wave.barrier.drop();
                running->barrier.drop();
                gate.arrive_and_wait();
            }
        });
    }
    for (std::thread& t : threads) t.join();
    running = nullptr;
    dynamic_lds_base = nullptr;
    std::free(lds);
}

// The grid barrier of a cooperative launch: only a grid of one group can pass it here (see the header comment).
inline void grid_sync(const std::source_location& at) {
    if (grid_groups != 1)
        fail("gpu_grid_sync", at,
             "a grid barrier needs every group of the grid running at once; the emulation runs groups one after "
             "another");
    std::atomic_thread_fence(std::memory_order_seq_cst);
    running->barrier.arrive_and_wait("gpu_grid_sync", at);
    std::atomic_thread_fence(std::memory_order_seq_cst);
}

}  // namespace gpu_cpu

// ---- The HIP device functions the kernels call ------------------------------------------------------------------

inline void __syncthreads(std::source_location at = std::source_location::current()) {
    gpu_cpu::running->barrier.arrive_and_wait("__syncthreads", at);
}

inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }

inline unsigned __lane_id() { return gpu_cpu::lane_id(); }

template <class T>
T __shfl(T v, int source_lane, int width = GPU_WAVE_SIZE, std::source_location at = std::source_location::current()) {
    gpu_cpu::check_width(width, "__shfl", at);
    const unsigned self = gpu_cpu::lane_id();
    const unsigned source = (self & ~(unsigned)(width - 1)) + ((unsigned)source_lane & (unsigned)(width - 1));
    return gpu_cpu::exchange(v, source, "__shfl", at);
}

template <class T>
T __shfl_down(T v, unsigned delta, int width = GPU_WAVE_SIZE,
              std::source_location at = std::source_location::current()) {
    gpu_cpu::check_width(width, "__shfl_down", at);
    const unsigned self = gpu_cpu::lane_id();
    const unsigned source = (self & (unsigned)(width - 1)) + delta >= (unsigned)width ? self : self + delta;
    return gpu_cpu::exchange(v, source, "__shfl_down", at);
}

template <class T>
T __shfl_up(T v, unsigned delta, int width = GPU_WAVE_SIZE, std::source_location at = std::source_location::current()) {
    gpu_cpu::check_width(width, "__shfl_up", at);
    const unsigned self = gpu_cpu::lane_id();
    const unsigned source = (self & (unsigned)(width - 1)) < delta ? self : self - delta;
    return gpu_cpu::exchange(v, source, "__shfl_up", at);
}

template <class T>
T __shfl_xor(T v, int mask, int width = GPU_WAVE_SIZE, std::source_location at = std::source_location::current()) {
    gpu_cpu::check_width(width, "__shfl_xor", at);
    const unsigned self = gpu_cpu::lane_id();
    const unsigned other = self ^ (unsigned)mask;
    const unsigned source = other >= ((self + width) & ~(unsigned)(width - 1)) ? self : other;
    return gpu_cpu::exchange(v, source, "__shfl_xor", at);
}

// HIP's __ballot: a 64-bit mask on every wave size (bits past the wave are 0).
inline unsigned long long __ballot(int pred, std::source_location at = std::source_location::current()) {
    return gpu_cpu::ballot(pred != 0, "__ballot", at);
}
inline int __any(int pred, std::source_location at = std::source_location::current()) {
    return gpu_cpu::ballot(pred != 0, "__any", at) != 0;
}
inline int __all(int pred, std::source_location at = std::source_location::current()) {
    const unsigned long long mask = gpu_cpu::ballot(pred != 0, "__all", at);
    gpu_cpu::Wave& w = gpu_cpu::my_wave();
    unsigned long long live = 0;
    for (unsigned l = 0; l < w.lanes; ++l)
        if (!w.returned[l]) live |= 1ull << l;
    return mask == live;
}

// CUDA's atomic overloads (int, unsigned, unsigned long long, float), each a sequentially consistent RMW.
#define GPU_CPU_ATOMIC(NAME, T, EXPR)                                                                              \
    inline T NAME(T* p, T v) {                                                                                     \
        std::atomic_ref<T> a(*p);                                                                                  \
        return EXPR;                                                                                               \
    }
GPU_CPU_ATOMIC(atomicAdd, int, a.fetch_add(v))
GPU_CPU_ATOMIC(atomicAdd, unsigned, a.fetch_add(v))
GPU_CPU_ATOMIC(atomicAdd, unsigned long long, a.fetch_add(v))
GPU_CPU_ATOMIC(atomicAdd, float, a.fetch_add(v))
GPU_CPU_ATOMIC(atomicSub, int, a.fetch_sub(v))
GPU_CPU_ATOMIC(atomicSub, unsigned, a.fetch_sub(v))
GPU_CPU_ATOMIC(atomicOr, int, a.fetch_or(v))
GPU_CPU_ATOMIC(atomicOr, unsigned, a.fetch_or(v))
GPU_CPU_ATOMIC(atomicOr, unsigned long long, a.fetch_or(v))
GPU_CPU_ATOMIC(atomicAnd, int, a.fetch_and(v))
GPU_CPU_ATOMIC(atomicAnd, unsigned, a.fetch_and(v))
GPU_CPU_ATOMIC(atomicExch, int, a.exchange(v))
GPU_CPU_ATOMIC(atomicExch, unsigned, a.exchange(v))
GPU_CPU_ATOMIC(atomicExch, unsigned long long, a.exchange(v))
GPU_CPU_ATOMIC(atomicExch, float, a.exchange(v))
#undef GPU_CPU_ATOMIC
#define GPU_CPU_ATOMIC_MINMAX(NAME, T, BETTER)                                                                     \
    inline T NAME(T* p, T v) {                                                                                     \
        std::atomic_ref<T> a(*p);                                                                                  \
        T old = a.load();                                                                                          \
        while (BETTER(v, old) && !a.compare_exchange_weak(old, v)) {                                               \
        }                                                                                                          \
        return old;                                                                                                \
    }
#define GPU_CPU_GREATER(a, b) ((a) > (b))
#define GPU_CPU_LESS(a, b) ((a) < (b))
GPU_CPU_ATOMIC_MINMAX(atomicMax, int, GPU_CPU_GREATER)
GPU_CPU_ATOMIC_MINMAX(atomicMax, unsigned, GPU_CPU_GREATER)
GPU_CPU_ATOMIC_MINMAX(atomicMin, int, GPU_CPU_LESS)
GPU_CPU_ATOMIC_MINMAX(atomicMin, unsigned, GPU_CPU_LESS)
#undef GPU_CPU_ATOMIC_MINMAX
#undef GPU_CPU_GREATER
#undef GPU_CPU_LESS
template <class T> T atomicCAS(T* p, T compare, T v) {
    std::atomic_ref<T>(*p).compare_exchange_strong(compare, v);
    return compare;
}

// ---- What gpu.h defines on the GPU platforms -------------------------------------------------------------------

// Nanoseconds of the host's steady clock (the unit of NVIDIA's %globaltimer).
inline unsigned long long gpu_wall_clock() {
    return (unsigned long long)std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// The emulated device has one CU.
inline unsigned gpu_cu_id() { return 0; }

// Every lane of the calling wave that has not returned waits here for the others.
inline void gpu_wave_sync(std::source_location at = std::source_location::current()) {
    gpu_cpu::my_wave().barrier.arrive_and_wait("gpu_wave_sync", at);
}

inline float4 gpu_load_from_l2(const float4* p) { return *p; }
inline double2 gpu_load_from_l2(const double2* p) { return *p; }

// Dynamic LDS: the launch's buffer.
#define GPU_DYNAMIC_LDS(type, name) type* const name = static_cast<type*>(gpu_cpu::dynamic_lds())

// ---- MFMA: the CDNA matrix instructions of matmul's matrix rungs (waves of 64 only) -----------------------------
//
// __builtin_amdgcn_mfma_f32_32x32x2f32, __builtin_amdgcn_mfma_f32_16x16x4f32 and __builtin_amdgcn_mfma_f64_16x16x4f64
// with clang's prototypes (BuiltinsAMDGPU.def: "V16fffV16fIiIiIi", "V4fffV4fIiIiIi", "V4dddV4dIiIiIi": a, b, c,
// cbsz, abid, blgp), as wave-wide operations: every lane of the wave publishes its A element, its B element and its
// C registers at a wave barrier; one lane gathers the A (M×K), B (K×N) and C (M×N) blocks from all 64 lanes through
// the instruction's layout, computes D = A·B + C, and scatters D back to each lane's registers through the same
// layout; after a second barrier every lane takes its D registers. They exist only at 64 lanes (GPU_HAS_MFMA), as
// on the hardware: at 32 the kernels that use them are compiled out, as on NVIDIA.
//
// The layouts are the AMD Matrix Instruction Calculator's (version 1.3.2, ROCm/amd_matrix_instruction_calculator at
// commit 2ef91896bcdc4d26624f952e5c905c787cd9bc9e), `./matrix_calculator.py -a cdna2 -i <instruction>
// --detail-instruction`, "Matrix element to register mapping with no modifiers", quoted beside each function below.
// Only these forward formulas (element -> register, lane) are used. The tool's printed inverse for the FP64
// instruction, "C or D i: 4 * floor(GPR_num / 2)", is incomplete (it drops "+ floor(lane / 16)"; the tool's own
// --matrix-layout tables and the forward formula give v[3:2]{17} = D[5][1]): it is not used. "GPR" of the FP64
// instruction is a VGPR pair: [2r+1:2r] is element r of the builtin's double4. suite/tests/wave64_cpu/mfma.rs checks
// these layouts, through the builtins, against the calculator's spot values.
//
// What is modelled: the layouts exactly; all 64 lanes take part (a short wave or a lane that has returned stops the
// program: the instruction reads every lane); CBSZ, ABID and BLGP must be 0 (the broadcast modifiers are not
// modelled; the rungs pass 0). The arithmetic to within rounding: FP32 computes each D element as C + the K products
// in double (each product of two floats is exact) and rounds it to float once; FP64 is a chain of fused
// multiply-adds from C in k order. The calculator does not say how the hardware rounds inside one instruction, so
// tests compare with a tolerance, or with integer inputs that every order computes exactly. Not modelled: timing,
// the MFMA pipeline's dependency rules, AGPRs (a register is a register here), and denormal handling.

#if GPU_CPU_WAVE_SIZE == 64
#define GPU_HAS_MFMA 1
#endif

// g++'s note that a 32- or 64-byte vector argument changed ABI in GCC 4.6 (-Wpsabi) concerns calls across
// translation units built by different compilers; here everything is one translation unit.
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float gpu_floatx4 __attribute__((vector_size(4 * sizeof(float))));
typedef float gpu_floatx16 __attribute__((vector_size(16 * sizeof(float))));
typedef double gpu_doublex4 __attribute__((vector_size(4 * sizeof(double))));

namespace gpu_cpu::mfma {

// v_mfma_f32_32x32x2f32: D (32×32) = A (32×2) · B (2×32) + C, FP32; A and B 1 GPR, C and D 16 GPRs.
struct F32_32x32x2 {
    static constexpr unsigned M = 32, N = 32, K = 2, REGS = 16;
    static constexpr const char* name = "v_mfma_f32_32x32x2f32";
    // "A[i][k].block GPR: 0", "A[i][k].block Lane: 32 * k + i"
    static unsigned a_lane(unsigned i, unsigned k) { return 32 * k + i; }
    // "B[k][j].block GPR: 0", "B[k][j].block Lane: 32 * k + j"
    static unsigned b_lane(unsigned k, unsigned j) { return 32 * k + j; }
    // "C or D[i][j].block GPR: 4 * floor(i / 8) + (i % 4)"
    static unsigned d_reg(unsigned i, unsigned) { return 4 * (i / 8) + i % 4; }
    // "C or D[i][j].block Lane: (32 * floor(i / 4)) % 64 + j"
    static unsigned d_lane(unsigned i, unsigned j) { return (32 * (i / 4)) % 64 + j; }
};

// v_mfma_f32_16x16x4f32: D (16×16) = A (16×4) · B (4×16) + C, FP32; A and B 1 GPR, C and D 4 GPRs.
struct F32_16x16x4 {
    static constexpr unsigned M = 16, N = 16, K = 4, REGS = 4;
    static constexpr const char* name = "v_mfma_f32_16x16x4f32";
    // "A[i][k].block GPR: 0", "A[i][k].block Lane: 16 * k + i"
    static unsigned a_lane(unsigned i, unsigned k) { return 16 * k + i; }
    // "B[k][j].block GPR: 0", "B[k][j].block Lane: 16 * k + j"
    static unsigned b_lane(unsigned k, unsigned j) { return 16 * k + j; }
    // "C or D[i][j].block GPR: (i % 4)"
    static unsigned d_reg(unsigned i, unsigned) { return i % 4; }
    // "C or D[i][j].block Lane: 16 * floor(i / 4) + j"
    static unsigned d_lane(unsigned i, unsigned j) { return 16 * (i / 4) + j; }
};

// v_mfma_f64_16x16x4f64: D (16×16) = A (16×4) · B (4×16) + C, FP64; A and B 2 GPRs (one double), C and D 8 GPRs
// (four doubles). A register below is an element of the double4, i.e. a VGPR pair.
struct F64_16x16x4 {
    static constexpr unsigned M = 16, N = 16, K = 4, REGS = 4;
    static constexpr const char* name = "v_mfma_f64_16x16x4f64";
    // "A[i][k].block GPR: [1:0]", "A[i][k].block Lane: 16 * k + i"
    static unsigned a_lane(unsigned i, unsigned k) { return 16 * k + i; }
    // "B[k][j].block GPR: [1:0]", "B[k][j].block Lane: 16 * k + j"
    static unsigned b_lane(unsigned k, unsigned j) { return 16 * k + j; }
    // "C or D[i][j].block GPR: [2*floor(i / 4)+1 : 2*floor(i / 4)]": the pair of element floor(i/4)
    static unsigned d_reg(unsigned i, unsigned) { return i / 4; }
    // "C or D[i][j].block Lane: 16 * (i % 4) + j"
    static unsigned d_lane(unsigned i, unsigned j) { return 16 * (i % 4) + j; }
};

// One lane (the first) computes D for the wave, between the two barriers of run(): gathers A, B and C from every
// lane's published values through L's layout, and scatters D to every lane's d registers. A layout that sends two
// elements to one (register, lane), or one past the wave or the registers, stops the program.
template <class L, class T> void compute(Wave& w, const std::source_location& at) {
    static_assert(L::M * L::K == GPU_WAVE_SIZE && L::K * L::N == GPU_WAVE_SIZE, "one A and one B element per lane");
    static_assert(L::M * L::N == L::REGS * GPU_WAVE_SIZE, "D fills every register of every lane");
    bool a_seen[GPU_WAVE_SIZE] = {}, b_seen[GPU_WAVE_SIZE] = {}, d_seen[L::REGS][GPU_WAVE_SIZE] = {};
    double A[L::M][L::K], B[L::K][L::N];
    for (unsigned i = 0; i < L::M; ++i)
        for (unsigned k = 0; k < L::K; ++k) {
            const unsigned l = L::a_lane(i, k);
            if (l >= GPU_WAVE_SIZE || a_seen[l]) fail(L::name, at, "the A layout puts two elements in one lane");
            a_seen[l] = true;
            A[i][k] = w.mfma[l].a;
        }
    for (unsigned k = 0; k < L::K; ++k)
        for (unsigned j = 0; j < L::N; ++j) {
            const unsigned l = L::b_lane(k, j);
            if (l >= GPU_WAVE_SIZE || b_seen[l]) fail(L::name, at, "the B layout puts two elements in one lane");
            b_seen[l] = true;
            B[k][j] = w.mfma[l].b;
        }
    for (unsigned i = 0; i < L::M; ++i)
        for (unsigned j = 0; j < L::N; ++j) {
            const unsigned r = L::d_reg(i, j), l = L::d_lane(i, j);
            if (r >= L::REGS || l >= GPU_WAVE_SIZE || d_seen[r][l])
                fail(L::name, at, "the C/D layout puts two elements in one register of one lane");
            d_seen[r][l] = true;
            double d = w.mfma[l].c[r];  // C[i][j], through the same layout as D
            for (unsigned k = 0; k < L::K; ++k) {
                if constexpr (std::is_same_v<T, float>)
                    d += A[i][k] * B[k][j];  // exact products of floats; rounded to float once, by run()
                else
                    d = std::fma(A[i][k], B[k][j], d);
            }
            w.mfma[l].d[r] = d;
        }
}

// The builtin of instruction L with element type T and C/D vector V, called by every lane of the wave.
template <class L, class T, class V>
V run(T a, T b, const V& c, int cbsz, int abid, int blgp, const std::source_location& at) {
    if (cbsz != 0 || abid != 0 || blgp != 0)
        fail(L::name, at, "CBSZ, ABID and BLGP other than 0 are not modelled (the matrix rungs pass 0, 0, 0)");
    Wave& w = my_wave();
    const unsigned lane = lane_id();
    Wave::MfmaLane& mine = w.mfma[lane];
    mine.a = a;
    mine.b = b;
    for (unsigned r = 0; r < L::REGS; ++r) mine.c[r] = c[r];
    w.barrier.arrive_and_wait(L::name, at);
    if (w.lanes != GPU_WAVE_SIZE) fail(L::name, at, "an MFMA reads all 64 lanes; this wave is short");
    for (unsigned l = 0; l < GPU_WAVE_SIZE; ++l)
        if (w.returned[l]) fail(L::name, at, "an MFMA reads all 64 lanes; one has returned (undefined on the GPU)");
    if (lane == 0) compute<L, T>(w, at);
    // Lane 0 has written every lane's d; each lane reads its own before its next MFMA's first barrier, which lane 0
    // must pass before it writes d again.
    w.barrier.arrive_and_wait(L::name, at);
    V d;
    for (unsigned r = 0; r < L::REGS; ++r) d[r] = (T)mine.d[r];
    return d;
}

}  // namespace gpu_cpu::mfma

#if defined(GPU_HAS_MFMA)
inline gpu_floatx16 __builtin_amdgcn_mfma_f32_32x32x2f32(float a, float b, gpu_floatx16 c, int cbsz, int abid,
                                                         int blgp,
                                                         std::source_location at = std::source_location::current()) {
    return gpu_cpu::mfma::run<gpu_cpu::mfma::F32_32x32x2, float>(a, b, c, cbsz, abid, blgp, at);
}
inline gpu_floatx4 __builtin_amdgcn_mfma_f32_16x16x4f32(float a, float b, gpu_floatx4 c, int cbsz, int abid, int blgp,
                                                        std::source_location at = std::source_location::current()) {
    return gpu_cpu::mfma::run<gpu_cpu::mfma::F32_16x16x4, float>(a, b, c, cbsz, abid, blgp, at);
}
inline gpu_doublex4 __builtin_amdgcn_mfma_f64_16x16x4f64(double a, double b, gpu_doublex4 c, int cbsz, int abid,
                                                         int blgp,
                                                         std::source_location at = std::source_location::current()) {
    return gpu_cpu::mfma::run<gpu_cpu::mfma::F64_16x16x4, double>(a, b, c, cbsz, abid, blgp, at);
}
#endif
