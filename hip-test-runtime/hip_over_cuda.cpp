// The HIP-over-CUDA test runtime: the HIP C API of ROCm 6.3, as far as hip-sys binds it, implemented over the CUDA
// driver API, so that the suite's AMD code path (hip-sys and suite/src/device/amd, unchanged) runs on an NVIDIA GPU.
//
// It is a test double, never an AMD measurement: it exports hip_over_cuda_test_runtime_describe(), which no ROCm
// library has, and the suite labels every run over it "HIP over CUDA test runtime" with this library's path. It
// reports the CUDA device as it is (its name, sm_XY as gcnArchName, 32 lanes per wave), so the suite compiles cubins
// for it with nvcc and chooses the warp32 kernels; nothing AMD-specific (wave64 code, gfx code objects, the AMD
// occupancy rules) runs through it.
//
// Mapping: a HIP handle is the CUDA handle of the same object (hipStream_t = CUstream, hipModule_t = CUmodule,
// hipFunction_t = CUfunction, hipEvent_t = CUevent, hipGraph_t = CUgraph, hipGraphExec_t = CUgraphExec, device
// pointers = CUdeviceptr). Each device is its CUDA primary context; hipSetDevice makes it current on the calling
// thread, and every call first makes the thread's device current (HIP keeps a current device per thread, default 0).
// HIP semantics the suite relies on are kept: hipFree waits for the device, hipMalloc(0) gives a null pointer,
// hipGetLastError reports the last call of the thread (every call sets it, success included, as ROCm's HIP_RETURN
// does), and launches need no opt-in for large dynamic LDS (CUDA does: the runtime raises the kernel's limit).
//
// libcuda is opened with dlopen on first use, so the library builds and loads without a driver; with none, every
// call that needs the GPU answers hipErrorInsufficientDriver and hipGetErrorString says why.

#include <cuda.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include <climits>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "hip_abi.h"

#define HIP_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// The HIP version this runtime implements, in HIP's encoding (major * 10^7 + minor * 10^5 + patch). Patch 0: no
// ROCm release has it (6.3.0's HIP is 6.3.42131), so the number alone already tells this runtime apart.
constexpr int kHipVersion = 60300000;

// Static plus dynamic shared memory a CUDA kernel may use without opting in (CUDA Programming Guide: 48 KiB).
constexpr int kDefaultSharedLimit = 48 * 1024;

// Two steps, so that cuda.h's macros (cuMemAlloc -> cuMemAlloc_v2) are applied before the name becomes a string:
// dlsym must look up the versioned entry point the header declares.
#define CU_NAME(f) CU_NAME_(f)
#define CU_NAME_(f) #f

#define CUDA_FUNCTIONS(X)                                                                                              \
    X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGetCount) X(cuDeviceGet)          \
    X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDeviceGetUuid) X(cuDevicePrimaryCtxRetain)     \
    X(cuCtxSetCurrent) X(cuCtxSynchronize) X(cuMemGetInfo) X(cuMemAlloc) X(cuMemFree) X(cuMemcpy) X(cuMemcpyHtoD)     \
    X(cuMemcpyDtoH) X(cuMemcpyAsync) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync) X(cuMemsetD8)     \
    X(cuMemsetD8Async) X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncGetAttribute)             \
    X(cuFuncSetAttribute) X(cuLaunchKernel) X(cuLaunchCooperativeKernel)                                              \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor) X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize)        \
    X(cuEventCreate) X(cuEventRecord) X(cuEventSynchronize) X(cuEventElapsedTime) X(cuEventDestroy)                   \
    X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuGraphInstantiate) X(cuGraphUpload) X(cuGraphLaunch)             \
    X(cuGraphExecDestroy) X(cuGraphDestroy)

// The CUDA driver, loaded once.
struct Driver {
#define DECLARE(f) decltype(&::f) f = nullptr;
    CUDA_FUNCTIONS(DECLARE)
#undef DECLARE
    void* handle = nullptr;
    // Where libcuda was found (resolved), and its driver API version (e.g. 13000).
    std::string path;
    int version = 0;
    // Why the driver cannot be used; empty when it can.
    std::string failure;
    // cuInit's answer: CUDA_ERROR_NO_DEVICE on a node without an NVIDIA GPU.
    CUresult init = CUDA_ERROR_NOT_INITIALIZED;
};

std::string resolved(const char* path) {
    char buffer[PATH_MAX];
    return realpath(path, buffer) ? std::string(buffer) : std::string(path);
}

Driver& driver() {
    static Driver d;
    static std::once_flag once;
    std::call_once(once, [] {
        const char* name = "libcuda.so.1";
        d.handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
        if (!d.handle) {
            const char* why = dlerror();
            d.failure = std::string("the CUDA driver (") + name + ") could not be loaded: " + (why ? why : "?");
            return;
        }
#define LOAD(f)                                                                                                        \
    d.f = reinterpret_cast<decltype(d.f)>(dlsym(d.handle, CU_NAME(f)));                                               \
    if (!d.f && d.failure.empty()) d.failure = std::string(name) + " does not export " CU_NAME(f) " (driver too old)";
        CUDA_FUNCTIONS(LOAD)
#undef LOAD
        Dl_info info;
        if (d.cuInit && dladdr(reinterpret_cast<void*>(d.cuInit), &info) && info.dli_fname) {
            d.path = resolved(info.dli_fname);
        }
        if (!d.failure.empty()) return;
        d.init = d.cuInit(0);
        d.cuDriverGetVersion(&d.version);
    });
    return d;
}

// --- errors -------------------------------------------------------------------------------------------------------

// hipGetErrorName's answers: each ROCm 6.3 value under its canonical name.
struct ErrorName {
    int value;
    const char* name;
};
constexpr ErrorName kErrorNames[] = {
    {0, "hipSuccess"},
    {1, "hipErrorInvalidValue"},
    {2, "hipErrorOutOfMemory"},
    {3, "hipErrorNotInitialized"},
    {4, "hipErrorDeinitialized"},
    {5, "hipErrorProfilerDisabled"},
    {6, "hipErrorProfilerNotInitialized"},
    {7, "hipErrorProfilerAlreadyStarted"},
    {8, "hipErrorProfilerAlreadyStopped"},
    {9, "hipErrorInvalidConfiguration"},
    {12, "hipErrorInvalidPitchValue"},
    {13, "hipErrorInvalidSymbol"},
    {17, "hipErrorInvalidDevicePointer"},
    {21, "hipErrorInvalidMemcpyDirection"},
    {35, "hipErrorInsufficientDriver"},
    {52, "hipErrorMissingConfiguration"},
    {53, "hipErrorPriorLaunchFailure"},
    {98, "hipErrorInvalidDeviceFunction"},
    {100, "hipErrorNoDevice"},
    {101, "hipErrorInvalidDevice"},
    {200, "hipErrorInvalidImage"},
    {201, "hipErrorInvalidContext"},
    {202, "hipErrorContextAlreadyCurrent"},
    {205, "hipErrorMapFailed"},
    {206, "hipErrorUnmapFailed"},
    {207, "hipErrorArrayIsMapped"},
    {208, "hipErrorAlreadyMapped"},
    {209, "hipErrorNoBinaryForGpu"},
    {210, "hipErrorAlreadyAcquired"},
    {211, "hipErrorNotMapped"},
    {212, "hipErrorNotMappedAsArray"},
    {213, "hipErrorNotMappedAsPointer"},
    {214, "hipErrorECCNotCorrectable"},
    {215, "hipErrorUnsupportedLimit"},
    {216, "hipErrorContextAlreadyInUse"},
    {217, "hipErrorPeerAccessUnsupported"},
    {218, "hipErrorInvalidKernelFile"},
    {219, "hipErrorInvalidGraphicsContext"},
    {300, "hipErrorInvalidSource"},
    {301, "hipErrorFileNotFound"},
    {302, "hipErrorSharedObjectSymbolNotFound"},
    {303, "hipErrorSharedObjectInitFailed"},
    {304, "hipErrorOperatingSystem"},
    {400, "hipErrorInvalidHandle"},
    {401, "hipErrorIllegalState"},
    {500, "hipErrorNotFound"},
    {600, "hipErrorNotReady"},
    {700, "hipErrorIllegalAddress"},
    {701, "hipErrorLaunchOutOfResources"},
    {702, "hipErrorLaunchTimeOut"},
    {704, "hipErrorPeerAccessAlreadyEnabled"},
    {705, "hipErrorPeerAccessNotEnabled"},
    {708, "hipErrorSetOnActiveProcess"},
    {709, "hipErrorContextIsDestroyed"},
    {710, "hipErrorAssert"},
    {712, "hipErrorHostMemoryAlreadyRegistered"},
    {713, "hipErrorHostMemoryNotRegistered"},
    {719, "hipErrorLaunchFailure"},
    {720, "hipErrorCooperativeLaunchTooLarge"},
    {801, "hipErrorNotSupported"},
    {900, "hipErrorStreamCaptureUnsupported"},
    {901, "hipErrorStreamCaptureInvalidated"},
    {902, "hipErrorStreamCaptureMerge"},
    {903, "hipErrorStreamCaptureUnmatched"},
    {904, "hipErrorStreamCaptureUnjoined"},
    {905, "hipErrorStreamCaptureIsolation"},
    {906, "hipErrorStreamCaptureImplicit"},
    {907, "hipErrorCapturedEvent"},
    {908, "hipErrorStreamCaptureWrongThread"},
    {910, "hipErrorGraphExecUpdateFailure"},
    {999, "hipErrorUnknown"},
    {1052, "hipErrorRuntimeMemory"},
    {1053, "hipErrorRuntimeOther"},
    {1054, "hipErrorTbd"},
};

const char* error_name(hipError_t e) {
    for (const ErrorName& n : kErrorNames) {
        if (n.value == static_cast<int>(e)) return n.name;
    }
    return "hipErrorUnknown";
}

// The thread's last error (hipGetLastError), and the CUDA status behind the last error this thread mapped, so that
// hipGetErrorString can say what the driver said.
thread_local hipError_t t_last = hipSuccess;
thread_local CUresult t_cuda = CUDA_SUCCESS;
thread_local hipError_t t_cuda_as = hipSuccess;
thread_local std::string t_detail;
thread_local std::string t_text;

// HIP numbers most errors as the CUDA driver does (ROCm's own NVIDIA backend maps them one to one); the few CUDA
// codes with no HIP value of the same meaning are mapped to the nearest one, the rest to hipErrorUnknown. The CUDA
// name is kept for hipGetErrorString.
hipError_t to_hip(CUresult r) {
    hipError_t e = hipErrorUnknown;
    switch (r) {
        case CUDA_ERROR_STUB_LIBRARY:
        case CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER:
            e = hipErrorInsufficientDriver;
            break;
        case CUDA_ERROR_DEVICE_UNAVAILABLE:
            e = hipErrorNoDevice;
            break;
        case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
        case CUDA_ERROR_JIT_COMPILER_NOT_FOUND:
            e = hipErrorInvalidKernelFile;
            break;
        case CUDA_ERROR_HARDWARE_STACK_ERROR:
        case CUDA_ERROR_ILLEGAL_INSTRUCTION:
        case CUDA_ERROR_MISALIGNED_ADDRESS:
        case CUDA_ERROR_INVALID_ADDRESS_SPACE:
        case CUDA_ERROR_INVALID_PC:
            e = hipErrorLaunchFailure;
            break;
        case CUDA_ERROR_NOT_PERMITTED:
            e = hipErrorNotSupported;
            break;
        case CUDA_ERROR_TIMEOUT:
            e = hipErrorLaunchTimeOut;
            break;
        default:
            for (const ErrorName& n : kErrorNames) {
                if (n.value == static_cast<int>(r)) e = static_cast<hipError_t>(r);
            }
    }
    if (r != CUDA_SUCCESS) {
        t_cuda = r;
        t_cuda_as = e;
        t_detail.clear();
    }
    return e;
}

// Records `e` as the thread's last error and returns it (ROCm's HIP_RETURN).
hipError_t done(hipError_t e) {
    t_last = e;
    return e;
}

hipError_t done(CUresult r) { return done(to_hip(r)); }

// An error this runtime raises itself, with the sentence hipGetErrorString returns for it.
hipError_t fail(hipError_t e, std::string why) {
    t_cuda = CUDA_SUCCESS;
    t_cuda_as = e;
    t_detail = std::move(why);
    return done(e);
}

// --- devices and contexts ------------------------------------------------------------------------------------------

struct Contexts {
    std::mutex lock;
    std::vector<CUcontext> context;  // primary context per device, retained on first use and kept
};

Contexts& contexts() {
    static Contexts c;
    return c;
}

thread_local int t_device = 0;
thread_local int t_bound_device = -1;

// The driver is loaded and initialised, or the HIP error saying why not.
hipError_t ready() {
    Driver& d = driver();
    if (!d.failure.empty()) return fail(hipErrorInsufficientDriver, d.failure + " (HIP over CUDA test runtime)");
    if (d.init != CUDA_SUCCESS) return to_hip(d.init);
    return hipSuccess;
}

hipError_t device_count(int* count) {
    if (hipError_t e = ready(); e != hipSuccess) return e;
    CUresult r = driver().cuDeviceGetCount(count);
    if (r != CUDA_SUCCESS) return to_hip(r);
    return *count > 0 ? hipSuccess : fail(hipErrorNoDevice, "the CUDA driver sees no GPU (HIP over CUDA test runtime)");
}

hipError_t cu_device(int ordinal, CUdevice* dev) {
    int count = 0;
    if (hipError_t e = device_count(&count); e != hipSuccess) return e;
    if (ordinal < 0 || ordinal >= count) return fail(hipErrorInvalidDevice, "no such device");
    return to_hip(driver().cuDeviceGet(dev, ordinal));
}

// Makes the thread's current device's primary context current, retaining it on first use.
hipError_t bind() {
    if (t_bound_device == t_device) return hipSuccess;
    CUdevice dev = 0;
    if (hipError_t e = cu_device(t_device, &dev); e != hipSuccess) return e;
    Contexts& c = contexts();
    CUcontext ctx = nullptr;
    {
        std::lock_guard<std::mutex> guard(c.lock);
        if (c.context.size() <= static_cast<size_t>(t_device)) c.context.resize(t_device + 1, nullptr);
        if (!c.context[t_device]) {
            CUresult r = driver().cuDevicePrimaryCtxRetain(&c.context[t_device], dev);
            if (r != CUDA_SUCCESS) return to_hip(r);
        }
        ctx = c.context[t_device];
    }
    CUresult r = driver().cuCtxSetCurrent(ctx);
    if (r != CUDA_SUCCESS) return to_hip(r);
    t_bound_device = t_device;
    return hipSuccess;
}

#define ENTER()                                                                                                        \
    do {                                                                                                               \
        if (hipError_t entered = bind(); entered != hipSuccess) return done(entered);                                  \
    } while (0)

Driver& cu() { return driver(); }

// Raises a kernel's dynamic shared-memory limit when a launch (or an occupancy question) asks for more than CUDA
// allows without opting in: AMD has no opt-in, so HIP code never asks for one.
CUresult allow_dynamic_lds(CUfunction f, unsigned bytes) {
    if (bytes == 0) return CUDA_SUCCESS;
    int limit = 0;
    CUresult r = cu().cuFuncGetAttribute(&limit, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f);
    if (r != CUDA_SUCCESS || bytes <= static_cast<unsigned>(limit)) return r;
    return cu().cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(bytes));
}

CUdeviceptr dptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

// --- device properties -----------------------------------------------------------------------------------------------

// An attribute, or 0 where this driver does not report it (CUDA 13 reports no clock rates on some parts).
int attr(CUdevice dev, CUdevice_attribute a) {
    int v = 0;
    if (cu().cuDeviceGetAttribute(&v, a, dev) != CUDA_SUCCESS) return 0;
    return v;
}

// The CUDA attribute behind a HIP one, or -1 for one this runtime does not answer.
int cuda_attribute(hipDeviceAttribute_t a) {
    switch (a) {
        case hipDeviceAttributeEccEnabled: return CU_DEVICE_ATTRIBUTE_ECC_ENABLED;
        case hipDeviceAttributeAccessPolicyMaxWindowSize: return CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE;
        case hipDeviceAttributeAsyncEngineCount: return CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT;
        case hipDeviceAttributeCanMapHostMemory: return CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY;
        case hipDeviceAttributeCanUseHostPointerForRegisteredMem:
            return CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM;
        case hipDeviceAttributeClockRate: return CU_DEVICE_ATTRIBUTE_CLOCK_RATE;
        case hipDeviceAttributeComputeMode: return CU_DEVICE_ATTRIBUTE_COMPUTE_MODE;
        case hipDeviceAttributeComputePreemptionSupported: return CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED;
        case hipDeviceAttributeConcurrentKernels: return CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS;
        case hipDeviceAttributeConcurrentManagedAccess: return CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS;
        case hipDeviceAttributeCooperativeLaunch: return CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH;
        case hipDeviceAttributeDirectManagedMemAccessFromHost:
            return CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST;
        case hipDeviceAttributeGlobalL1CacheSupported: return CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED;
        case hipDeviceAttributeHostNativeAtomicSupported: return CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED;
        case hipDeviceAttributeIntegrated: return CU_DEVICE_ATTRIBUTE_INTEGRATED;
        case hipDeviceAttributeIsMultiGpuBoard: return CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD;
        case hipDeviceAttributeKernelExecTimeout: return CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT;
        case hipDeviceAttributeL2CacheSize: return CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE;
        case hipDeviceAttributeLocalL1CacheSupported: return CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED;
        case hipDeviceAttributeComputeCapabilityMajor: return CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR;
        case hipDeviceAttributeManagedMemory: return CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY;
        case hipDeviceAttributeMaxBlocksPerMultiProcessor: return CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR;
        case hipDeviceAttributeMaxBlockDimX: return CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X;
        case hipDeviceAttributeMaxBlockDimY: return CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y;
        case hipDeviceAttributeMaxBlockDimZ: return CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z;
        case hipDeviceAttributeMaxGridDimX: return CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X;
        case hipDeviceAttributeMaxGridDimY: return CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y;
        case hipDeviceAttributeMaxGridDimZ: return CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z;
        case hipDeviceAttributeMaxThreadsPerBlock: return CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK;
        case hipDeviceAttributeMaxThreadsPerMultiProcessor: return CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR;
        case hipDeviceAttributeMaxPitch: return CU_DEVICE_ATTRIBUTE_MAX_PITCH;
        case hipDeviceAttributeMemoryBusWidth: return CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH;
        case hipDeviceAttributeMemoryClockRate: return CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE;
        case hipDeviceAttributeComputeCapabilityMinor: return CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR;
        case hipDeviceAttributeMultiGpuBoardGroupID: return CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID;
        case hipDeviceAttributeMultiprocessorCount: return CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT;
        case hipDeviceAttributePageableMemoryAccess: return CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS;
        case hipDeviceAttributePageableMemoryAccessUsesHostPageTables:
            return CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES;
        case hipDeviceAttributePciBusId: return CU_DEVICE_ATTRIBUTE_PCI_BUS_ID;
        case hipDeviceAttributePciDeviceId: return CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID;
        case hipDeviceAttributePciDomainID: return CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID;
        case hipDeviceAttributePersistingL2CacheMaxSize: return CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE;
        case hipDeviceAttributeMaxRegistersPerBlock: return CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK;
        case hipDeviceAttributeMaxRegistersPerMultiprocessor:
            return CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR;
        case hipDeviceAttributeReservedSharedMemPerBlock: return CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK;
        case hipDeviceAttributeMaxSharedMemoryPerBlock: return CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK;
        case hipDeviceAttributeSharedMemPerBlockOptin: return CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN;
        // HIP's CUDA-named per-multiprocessor attribute and its AMD-specific one both mean shared memory per SM here.
        case hipDeviceAttributeSharedMemPerMultiprocessor:
        case hipDeviceAttributeMaxSharedMemoryPerMultiprocessor:
            return CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR;
        case hipDeviceAttributeSingleToDoublePrecisionPerfRatio:
            return CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO;
        case hipDeviceAttributeStreamPrioritiesSupported: return CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED;
        case hipDeviceAttributeSurfaceAlignment: return CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT;
        case hipDeviceAttributeTccDriver: return CU_DEVICE_ATTRIBUTE_TCC_DRIVER;
        case hipDeviceAttributeTextureAlignment: return CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT;
        case hipDeviceAttributeTexturePitchAlignment: return CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT;
        case hipDeviceAttributeTotalConstantMemory: return CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY;
        case hipDeviceAttributeUnifiedAddressing: return CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING;
        case hipDeviceAttributeWarpSize: return CU_DEVICE_ATTRIBUTE_WARP_SIZE;
        case hipDeviceAttributeMemoryPoolsSupported: return CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED;
        case hipDeviceAttributeVirtualMemoryManagementSupported:
            return CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED;
        case hipDeviceAttributeHostRegisterSupported: return CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED;
        case hipDeviceAttributeMemoryPoolSupportedHandleTypes: return CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES;
        case hipDeviceAttributePhysicalMultiProcessorCount: return CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT;
        default: return -1;
    }
}

// What both properties layouts hold, read once per call from the driver.
struct Facts {
    char name[256] = {};
    char arch[256] = {};
    CUuuid uuid = {};
    size_t total_mem = 0;
    CUdevice dev = 0;
};

hipError_t facts(int ordinal, Facts* f) {
    if (hipError_t e = cu_device(ordinal, &f->dev); e != hipSuccess) return e;
    if (CUresult r = cu().cuDeviceGetName(f->name, sizeof f->name - 1, f->dev); r != CUDA_SUCCESS) return to_hip(r);
    if (CUresult r = cu().cuDeviceTotalMem(&f->total_mem, f->dev); r != CUDA_SUCCESS) return to_hip(r);
    cu().cuDeviceGetUuid(&f->uuid, f->dev);
    // The architecture as the CUDA compiler names it: the suite then builds cubins for it with nvcc.
    std::snprintf(f->arch, sizeof f->arch, "sm_%d%d", attr(f->dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                  attr(f->dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
    return hipSuccess;
}

// The fields both layouts share, by name.
template <typename Props>
void fill_common(Props* p, const Facts& f) {
    CUdevice d = f.dev;
    std::memcpy(p->name, f.name, sizeof p->name);
    std::memcpy(p->gcnArchName, f.arch, sizeof p->gcnArchName);
    p->totalGlobalMem = f.total_mem;
    p->sharedMemPerBlock = attr(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
    p->regsPerBlock = attr(d, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
    p->warpSize = attr(d, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    p->maxThreadsPerBlock = attr(d, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    p->maxThreadsDim[0] = attr(d, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
    p->maxThreadsDim[1] = attr(d, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y);
    p->maxThreadsDim[2] = attr(d, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z);
    p->maxGridSize[0] = attr(d, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
    p->maxGridSize[1] = attr(d, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
    p->maxGridSize[2] = attr(d, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
    p->clockRate = attr(d, CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
    p->memoryClockRate = attr(d, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
    p->memoryBusWidth = attr(d, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
    p->totalConstMem = attr(d, CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY);
    p->major = attr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    p->minor = attr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    p->multiProcessorCount = attr(d, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    p->l2CacheSize = attr(d, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
    p->maxThreadsPerMultiProcessor = attr(d, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
    p->computeMode = attr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE);
    p->concurrentKernels = attr(d, CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS);
    p->pciDomainID = attr(d, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
    p->pciBusID = attr(d, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
    p->pciDeviceID = attr(d, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
    p->maxSharedMemoryPerMultiProcessor = attr(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
    p->isMultiGpuBoard = attr(d, CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD);
    p->canMapHostMemory = attr(d, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY);
    p->integrated = attr(d, CU_DEVICE_ATTRIBUTE_INTEGRATED);
    p->cooperativeLaunch = attr(d, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH);
    p->memPitch = attr(d, CU_DEVICE_ATTRIBUTE_MAX_PITCH);
    p->textureAlignment = attr(d, CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT);
    p->texturePitchAlignment = attr(d, CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT);
    p->kernelExecTimeoutEnabled = attr(d, CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT);
    p->ECCEnabled = attr(d, CU_DEVICE_ATTRIBUTE_ECC_ENABLED);
    p->tccDriver = attr(d, CU_DEVICE_ATTRIBUTE_TCC_DRIVER);
    p->managedMemory = attr(d, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY);
    p->directManagedMemAccessFromHost = attr(d, CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST);
    p->concurrentManagedAccess = attr(d, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS);
    p->pageableMemoryAccess = attr(d, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS);
    p->pageableMemoryAccessUsesHostPageTables =
        attr(d, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES);
}

template <typename Props>
hipError_t properties(Props* p, int ordinal, void (*extra)(Props*, const Facts&)) {
    if (!p) return done(hipErrorInvalidValue);
    Facts f;
    if (hipError_t e = facts(ordinal, &f); e != hipSuccess) return done(e);
    std::memset(static_cast<void*>(p), 0, sizeof *p);
    fill_common(p, f);
    if (extra) extra(p, f);
    return done(hipSuccess);
}

void fill_r0600(hipDeviceProp_tR0600* p, const Facts& f) {
    CUdevice d = f.dev;
    std::memcpy(p->uuid.bytes, f.uuid.bytes, sizeof p->uuid.bytes);
    p->asyncEngineCount = attr(d, CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT);
    p->unifiedAddressing = attr(d, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING);
    p->persistingL2CacheMaxSize = attr(d, CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE);
    p->streamPrioritiesSupported = attr(d, CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED);
    p->globalL1CacheSupported = attr(d, CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED);
    p->localL1CacheSupported = attr(d, CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED);
    p->sharedMemPerMultiprocessor = attr(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
    p->regsPerMultiprocessor = attr(d, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
    p->multiGpuBoardGroupID = attr(d, CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID);
    p->hostNativeAtomicSupported = attr(d, CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED);
    p->singleToDoublePrecisionPerfRatio = attr(d, CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO);
    p->computePreemptionSupported = attr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED);
    p->canUseHostPointerForRegisteredMem = attr(d, CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM);
    p->sharedMemPerBlockOptin = attr(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    p->maxBlocksPerMultiProcessor = attr(d, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
    p->accessPolicyMaxWindowSize = attr(d, CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE);
    p->reservedSharedMemPerBlock = attr(d, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
    p->hostRegisterSupported = attr(d, CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED);
    p->memoryPoolsSupported = attr(d, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED);
    p->memoryPoolSupportedHandleTypes = attr(d, CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES);
    p->surfaceAlignment = attr(d, CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT);
}

// The description hip_over_cuda_test_runtime_describe returns, built once.
std::string describe() {
    std::string self = "?";
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(&describe), &info) && info.dli_fname) self = resolved(info.dli_fname);
    Driver& d = driver();
    std::string text = "HIP over CUDA test runtime " + self + ": the HIP " + std::to_string(kHipVersion / 10000000) +
                       "." + std::to_string(kHipVersion / 100000 % 100) +
                       " API implemented over the CUDA driver API, on NVIDIA hardware (not an AMD GPU); ";
    if (!d.failure.empty()) return text + d.failure;
    return text + "CUDA driver " + (d.path.empty() ? "libcuda.so.1" : d.path) + ", driver API " +
           std::to_string(d.version / 1000) + "." + std::to_string(d.version % 1000 / 10);
}

}  // namespace

// --- the exported API ----------------------------------------------------------------------------------------------

HIP_EXPORT const char* hip_over_cuda_test_runtime_describe() {
    static const std::string text = describe();
    return text.c_str();
}

HIP_EXPORT hipError_t hipInit(unsigned int flags) {
    if (flags != 0) return done(hipErrorInvalidValue);
    return done(ready());
}

HIP_EXPORT hipError_t hipRuntimeGetVersion(int* version) {
    if (!version) return done(hipErrorInvalidValue);
    *version = kHipVersion;
    return done(hipSuccess);
}

// On AMD, hipDriverGetVersion returns the HIP version too; the CUDA driver's is in the description.
HIP_EXPORT hipError_t hipDriverGetVersion(int* version) { return hipRuntimeGetVersion(version); }

HIP_EXPORT hipError_t hipGetDeviceCount(int* count) {
    if (!count) return done(hipErrorInvalidValue);
    *count = 0;
    return done(device_count(count));
}

HIP_EXPORT hipError_t hipSetDevice(int ordinal) {
    // The suite sets the device before nearly every call: the device this thread is bound to needs no driver call.
    if (ordinal == t_bound_device) {
        t_device = ordinal;
        return done(hipSuccess);
    }
    CUdevice dev = 0;
    if (hipError_t e = cu_device(ordinal, &dev); e != hipSuccess) return done(e);
    t_device = ordinal;
    return done(bind());
}

HIP_EXPORT hipError_t hipDeviceGetAttribute(int* value, hipDeviceAttribute_t attribute, int ordinal) {
    if (!value) return done(hipErrorInvalidValue);
    CUdevice dev = 0;
    if (hipError_t e = cu_device(ordinal, &dev); e != hipSuccess) return done(e);
    if (attribute == hipDeviceAttributeTotalGlobalMem) {
        // An int cannot hold it: HIP clamps.
        size_t bytes = 0;
        if (CUresult r = cu().cuDeviceTotalMem(&bytes, dev); r != CUDA_SUCCESS) return done(r);
        *value = bytes > static_cast<size_t>(INT_MAX) ? INT_MAX : static_cast<int>(bytes);
        return done(hipSuccess);
    }
    int a = cuda_attribute(attribute);
    if (a < 0) return fail(hipErrorInvalidValue, "this attribute has no CUDA counterpart in the test runtime");
    return done(cu().cuDeviceGetAttribute(value, static_cast<CUdevice_attribute>(a), dev));
}

HIP_EXPORT hipError_t hipDeviceGetName(char* name, int length, int ordinal) {
    if (!name || length <= 0) return done(hipErrorInvalidValue);
    CUdevice dev = 0;
    if (hipError_t e = cu_device(ordinal, &dev); e != hipSuccess) return done(e);
    return done(cu().cuDeviceGetName(name, length, dev));
}

HIP_EXPORT hipError_t hipDeviceTotalMem(size_t* bytes, int ordinal) {
    if (!bytes) return done(hipErrorInvalidValue);
    CUdevice dev = 0;
    if (hipError_t e = cu_device(ordinal, &dev); e != hipSuccess) return done(e);
    return done(cu().cuDeviceTotalMem(bytes, dev));
}

HIP_EXPORT hipError_t hipGetDevicePropertiesR0600(hipDeviceProp_tR0600* props, int ordinal) {
    return properties(props, ordinal, &fill_r0600);
}

HIP_EXPORT hipError_t hipGetDevicePropertiesR0000(hipDeviceProp_tR0000* props, int ordinal) {
    return properties<hipDeviceProp_tR0000>(props, ordinal, nullptr);
}

// The plain symbol keeps the pre-6 layout, as in ROCm 6 (binaries built against ROCm 5 call it).
HIP_EXPORT hipError_t hipGetDeviceProperties(hipDeviceProp_tR0000* props, int ordinal) {
    return hipGetDevicePropertiesR0000(props, ordinal);
}

HIP_EXPORT hipError_t hipDeviceSynchronize() {
    ENTER();
    return done(cu().cuCtxSynchronize());
}

HIP_EXPORT hipError_t hipGetLastError() {
    hipError_t e = t_last;
    t_last = hipSuccess;
    return e;
}

HIP_EXPORT const char* hipGetErrorName(hipError_t e) { return error_name(e); }

// HIP's description of a code (not its name). For the thread's last mapped error it says what went wrong here:
// this runtime's own reason, or the CUDA driver's status behind it.
HIP_EXPORT const char* hipGetErrorString(hipError_t e) {
    Driver& d = driver();
    if (t_cuda_as == e && !t_detail.empty()) {
        t_text = t_detail;
    } else if (t_cuda_as == e && t_cuda != CUDA_SUCCESS && d.cuGetErrorName) {
        const char* name = nullptr;
        const char* text = nullptr;
        d.cuGetErrorName(t_cuda, &name);
        d.cuGetErrorString(t_cuda, &text);
        t_text = std::string("the CUDA driver said ") + (name ? name : "?") + " (" + (text ? text : "?") +
                 ") under the HIP over CUDA test runtime";
    } else {
        // Most HIP codes are the CUDA driver's numbers with the same meaning: its text describes them.
        const char* text = nullptr;
        bool known = d.cuGetErrorString && d.cuGetErrorString(static_cast<CUresult>(e), &text) == CUDA_SUCCESS;
        t_text = known && text ? text : error_name(e);
    }
    return t_text.c_str();
}

HIP_EXPORT hipError_t hipMemGetInfo(size_t* free, size_t* total) {
    if (!free || !total) return done(hipErrorInvalidValue);
    ENTER();
    return done(cu().cuMemGetInfo(free, total));
}

HIP_EXPORT hipError_t hipMalloc(void** ptr, size_t bytes) {
    if (!ptr) return done(hipErrorInvalidValue);
    *ptr = nullptr;
    ENTER();
    if (bytes == 0) return done(hipSuccess);  // HIP: a null pointer, no error
    CUdeviceptr p = 0;
    CUresult r = cu().cuMemAlloc(&p, bytes);
    if (r == CUDA_SUCCESS) *ptr = reinterpret_cast<void*>(p);
    return done(r);
}

HIP_EXPORT hipError_t hipFree(void* ptr) {
    if (!ptr) return done(hipSuccess);
    ENTER();
    // hipFree waits for the device before freeing (work still queued may use the memory); cuMemFree may not.
    if (CUresult r = cu().cuCtxSynchronize(); r != CUDA_SUCCESS) return done(r);
    return done(cu().cuMemFree(dptr(ptr)));
}

HIP_EXPORT hipError_t hipMemcpy(void* dst, const void* src, size_t bytes, hipMemcpyKind kind) {
    if (kind > hipMemcpyDefault) return done(hipErrorInvalidMemcpyDirection);
    ENTER();
    // Unified addressing: the driver tells host from device pointers itself.
    return done(cu().cuMemcpy(dptr(dst), dptr(src), bytes));
}

HIP_EXPORT hipError_t hipMemcpyHtoD(hipDeviceptr_t dst, const void* src, size_t bytes) {
    ENTER();
    return done(cu().cuMemcpyHtoD(dptr(dst), src, bytes));
}

HIP_EXPORT hipError_t hipMemcpyDtoH(void* dst, hipDeviceptr_t src, size_t bytes) {
    ENTER();
    return done(cu().cuMemcpyDtoH(dst, dptr(src), bytes));
}

HIP_EXPORT hipError_t hipMemcpyDtoDAsync(hipDeviceptr_t dst, hipDeviceptr_t src, size_t bytes, hipStream_t stream) {
    ENTER();
    return done(cu().cuMemcpyDtoDAsync(dptr(dst), dptr(src), bytes, reinterpret_cast<CUstream>(stream)));
}

HIP_EXPORT hipError_t hipMemcpyAsync(void* dst, const void* src, size_t bytes, hipMemcpyKind kind,
                                     hipStream_t stream) {
    ENTER();
    CUstream s = reinterpret_cast<CUstream>(stream);
    switch (kind) {
        case hipMemcpyHostToDevice: return done(cu().cuMemcpyHtoDAsync(dptr(dst), src, bytes, s));
        case hipMemcpyDeviceToHost: return done(cu().cuMemcpyDtoHAsync(dst, dptr(src), bytes, s));
        case hipMemcpyDeviceToDevice: return done(cu().cuMemcpyDtoDAsync(dptr(dst), dptr(src), bytes, s));
        case hipMemcpyHostToHost:
        case hipMemcpyDefault: return done(cu().cuMemcpyAsync(dptr(dst), dptr(src), bytes, s));
    }
    return done(hipErrorInvalidMemcpyDirection);
}

HIP_EXPORT hipError_t hipMemset(void* dst, int value, size_t bytes) {
    ENTER();
    return done(cu().cuMemsetD8(dptr(dst), static_cast<unsigned char>(value), bytes));
}

HIP_EXPORT hipError_t hipMemsetAsync(void* dst, int value, size_t bytes, hipStream_t stream) {
    ENTER();
    return done(
        cu().cuMemsetD8Async(dptr(dst), static_cast<unsigned char>(value), bytes, reinterpret_cast<CUstream>(stream)));
}

HIP_EXPORT hipError_t hipMemsetD8Async(hipDeviceptr_t dst, unsigned char value, size_t count, hipStream_t stream) {
    ENTER();
    return done(cu().cuMemsetD8Async(dptr(dst), value, count, reinterpret_cast<CUstream>(stream)));
}

HIP_EXPORT hipError_t hipModuleLoadData(hipModule_t* module, const void* image) {
    if (!module || !image) return done(hipErrorInvalidValue);
    ENTER();
    return done(cu().cuModuleLoadData(reinterpret_cast<CUmodule*>(module), image));
}

HIP_EXPORT hipError_t hipModuleUnload(hipModule_t module) {
    ENTER();
    return done(cu().cuModuleUnload(reinterpret_cast<CUmodule>(module)));
}

HIP_EXPORT hipError_t hipModuleGetFunction(hipFunction_t* function, hipModule_t module, const char* name) {
    if (!function || !name) return done(hipErrorInvalidValue);
    ENTER();
    return done(cu().cuModuleGetFunction(reinterpret_cast<CUfunction*>(function), reinterpret_cast<CUmodule>(module),
                                         name));
}

HIP_EXPORT hipError_t hipFuncGetAttribute(int* value, hipFunction_attribute attribute, hipFunction_t function) {
    if (!value || attribute >= HIP_FUNC_ATTRIBUTE_MAX) return done(hipErrorInvalidValue);
    ENTER();
    return done(cu().cuFuncGetAttribute(value, static_cast<CUfunction_attribute>(attribute),
                                        reinterpret_cast<CUfunction>(function)));
}

HIP_EXPORT hipError_t hipModuleLaunchKernel(hipFunction_t function, unsigned int gx, unsigned int gy, unsigned int gz,
                                            unsigned int bx, unsigned int by, unsigned int bz, unsigned int lds,
                                            hipStream_t stream, void** params, void** extra) {
    ENTER();
    if (extra) {
        return fail(hipErrorNotSupported,
                    "the HIP over CUDA test runtime passes kernel arguments through kernelParams only, not `extra`");
    }
    CUfunction f = reinterpret_cast<CUfunction>(function);
    if (CUresult r = allow_dynamic_lds(f, lds); r != CUDA_SUCCESS) return done(r);
    return done(cu().cuLaunchKernel(f, gx, gy, gz, bx, by, bz, lds, reinterpret_cast<CUstream>(stream), params,
                                    nullptr));
}

HIP_EXPORT hipError_t hipModuleLaunchCooperativeKernel(hipFunction_t function, unsigned int gx, unsigned int gy,
                                                       unsigned int gz, unsigned int bx, unsigned int by,
                                                       unsigned int bz, unsigned int lds, hipStream_t stream,
                                                       void** params) {
    ENTER();
    CUfunction f = reinterpret_cast<CUfunction>(function);
    if (CUresult r = allow_dynamic_lds(f, lds); r != CUDA_SUCCESS) return done(r);
    return done(
        cu().cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, lds, reinterpret_cast<CUstream>(stream), params));
}

HIP_EXPORT hipError_t hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(int* groups, hipFunction_t function,
                                                                         int group_size, size_t lds) {
    if (!groups) return done(hipErrorInvalidValue);
    ENTER();
    CUfunction f = reinterpret_cast<CUfunction>(function);
    if (lds > static_cast<size_t>(INT_MAX)) return done(hipErrorInvalidValue);
    if (CUresult r = allow_dynamic_lds(f, static_cast<unsigned>(lds)); r != CUDA_SUCCESS) return done(r);
    return done(cu().cuOccupancyMaxActiveBlocksPerMultiprocessor(groups, f, group_size, lds));
}

HIP_EXPORT hipError_t hipStreamCreate(hipStream_t* stream) {
    if (!stream) return done(hipErrorInvalidValue);
    ENTER();
    // hipStreamCreate makes a blocking stream (it waits for the null stream), as CU_STREAM_DEFAULT does.
    return done(cu().cuStreamCreate(reinterpret_cast<CUstream*>(stream), CU_STREAM_DEFAULT));
}

HIP_EXPORT hipError_t hipStreamDestroy(hipStream_t stream) {
    ENTER();
    return done(cu().cuStreamDestroy(reinterpret_cast<CUstream>(stream)));
}

HIP_EXPORT hipError_t hipStreamSynchronize(hipStream_t stream) {
    ENTER();
    return done(cu().cuStreamSynchronize(reinterpret_cast<CUstream>(stream)));
}

HIP_EXPORT hipError_t hipEventCreate(hipEvent_t* event) {
    if (!event) return done(hipErrorInvalidValue);
    ENTER();
    return done(cu().cuEventCreate(reinterpret_cast<CUevent*>(event), CU_EVENT_DEFAULT));
}

HIP_EXPORT hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream) {
    ENTER();
    return done(cu().cuEventRecord(reinterpret_cast<CUevent>(event), reinterpret_cast<CUstream>(stream)));
}

HIP_EXPORT hipError_t hipEventSynchronize(hipEvent_t event) {
    ENTER();
    return done(cu().cuEventSynchronize(reinterpret_cast<CUevent>(event)));
}

HIP_EXPORT hipError_t hipEventElapsedTime(float* ms, hipEvent_t start, hipEvent_t stop) {
    if (!ms) return done(hipErrorInvalidValue);
    ENTER();
    return done(cu().cuEventElapsedTime(ms, reinterpret_cast<CUevent>(start), reinterpret_cast<CUevent>(stop)));
}

HIP_EXPORT hipError_t hipEventDestroy(hipEvent_t event) {
    ENTER();
    return done(cu().cuEventDestroy(reinterpret_cast<CUevent>(event)));
}

HIP_EXPORT hipError_t hipStreamBeginCapture(hipStream_t stream, hipStreamCaptureMode mode) {
    ENTER();
    return done(cu().cuStreamBeginCapture(reinterpret_cast<CUstream>(stream), static_cast<CUstreamCaptureMode>(mode)));
}

HIP_EXPORT hipError_t hipStreamEndCapture(hipStream_t stream, hipGraph_t* graph) {
    if (!graph) return done(hipErrorInvalidValue);
    ENTER();
    return done(cu().cuStreamEndCapture(reinterpret_cast<CUstream>(stream), reinterpret_cast<CUgraph*>(graph)));
}

HIP_EXPORT hipError_t hipGraphInstantiate(hipGraphExec_t* exec, hipGraph_t graph, hipGraphNode_t* error_node,
                                          char* log, size_t log_bytes) {
    if (!exec) return done(hipErrorInvalidValue);
    ENTER();
    if (error_node) *error_node = nullptr;
    if (log && log_bytes > 0) log[0] = '\0';
    return done(
        cu().cuGraphInstantiate(reinterpret_cast<CUgraphExec*>(exec), reinterpret_cast<CUgraph>(graph), 0));
}

HIP_EXPORT hipError_t hipGraphUpload(hipGraphExec_t exec, hipStream_t stream) {
    ENTER();
    return done(cu().cuGraphUpload(reinterpret_cast<CUgraphExec>(exec), reinterpret_cast<CUstream>(stream)));
}

HIP_EXPORT hipError_t hipGraphLaunch(hipGraphExec_t exec, hipStream_t stream) {
    ENTER();
    return done(cu().cuGraphLaunch(reinterpret_cast<CUgraphExec>(exec), reinterpret_cast<CUstream>(stream)));
}

HIP_EXPORT hipError_t hipGraphExecDestroy(hipGraphExec_t exec) {
    ENTER();
    return done(cu().cuGraphExecDestroy(reinterpret_cast<CUgraphExec>(exec)));
}

HIP_EXPORT hipError_t hipGraphDestroy(hipGraph_t graph) {
    ENTER();
    return done(cu().cuGraphDestroy(reinterpret_cast<CUgraph>(graph)));
}
