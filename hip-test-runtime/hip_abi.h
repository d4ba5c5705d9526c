// The slice of ROCm 6.3's HIP ABI that the HIP-over-CUDA test runtime implements: the types, enum values and
// structs of include/hip/hip_runtime_api.h (ROCm 6.3) and include/hip/hip_deprecated.h that hip-sys binds, written
// out here so the runtime builds without any HIP header (Debian's HIP 5.2 headers have the older struct layout).
//
// Every field offset below is pinned with a static_assert. The numbers are ROCm 6.3's: R0600's as compiled into
// hip-python 6.3.3, R0000's from the HIP 5.2 header (ROCm 6.3's R0000 is that struct, field for field). The suite's
// CPU tests compare these asserts with hip-sys's Rust structs, which are themselves checked against hip-python
// (hip-sys/tests/rocm63_abi.rs), so the test runtime, hip-sys and ROCm 6.3 agree or the build or CI fails.
#pragma once

#include <cstddef>

extern "C" {

// Opaque handles. The test runtime hands out CUDA driver handles under these types: a hipStream_t is a CUstream,
// a hipModule_t a CUmodule, and so on (see hip_over_cuda.cpp).
typedef struct ihipStream_t* hipStream_t;
typedef struct ihipModule_t* hipModule_t;
typedef struct ihipModuleSymbol_t* hipFunction_t;
typedef struct ihipEvent_t* hipEvent_t;
typedef struct ihipGraph* hipGraph_t;
typedef struct hipGraphNode* hipGraphNode_t;
typedef struct hipGraphExec* hipGraphExec_t;
typedef void* hipDeviceptr_t;

// hipError_t, every value of ROCm 6.3 (aliases included).
typedef enum hipError_t {
    hipSuccess = 0,
    hipErrorInvalidValue = 1,
    hipErrorMemoryAllocation = 2,
    hipErrorOutOfMemory = 2,
    hipErrorInitializationError = 3,
    hipErrorNotInitialized = 3,
    hipErrorDeinitialized = 4,
    hipErrorProfilerDisabled = 5,
    hipErrorProfilerNotInitialized = 6,
    hipErrorProfilerAlreadyStarted = 7,
    hipErrorProfilerAlreadyStopped = 8,
    hipErrorInvalidConfiguration = 9,
    hipErrorInvalidPitchValue = 12,
    hipErrorInvalidSymbol = 13,
    hipErrorInvalidDevicePointer = 17,
    hipErrorInvalidMemcpyDirection = 21,
    hipErrorInsufficientDriver = 35,
    hipErrorMissingConfiguration = 52,
    hipErrorPriorLaunchFailure = 53,
    hipErrorInvalidDeviceFunction = 98,
    hipErrorNoDevice = 100,
    hipErrorInvalidDevice = 101,
    hipErrorInvalidImage = 200,
    hipErrorInvalidContext = 201,
    hipErrorContextAlreadyCurrent = 202,
    hipErrorMapBufferObjectFailed = 205,
    hipErrorMapFailed = 205,
    hipErrorUnmapFailed = 206,
    hipErrorArrayIsMapped = 207,
    hipErrorAlreadyMapped = 208,
    hipErrorNoBinaryForGpu = 209,
    hipErrorAlreadyAcquired = 210,
    hipErrorNotMapped = 211,
    hipErrorNotMappedAsArray = 212,
    hipErrorNotMappedAsPointer = 213,
    hipErrorECCNotCorrectable = 214,
    hipErrorUnsupportedLimit = 215,
    hipErrorContextAlreadyInUse = 216,
    hipErrorPeerAccessUnsupported = 217,
    hipErrorInvalidKernelFile = 218,
    hipErrorInvalidGraphicsContext = 219,
    hipErrorInvalidSource = 300,
    hipErrorFileNotFound = 301,
    hipErrorSharedObjectSymbolNotFound = 302,
    hipErrorSharedObjectInitFailed = 303,
    hipErrorOperatingSystem = 304,
    hipErrorInvalidHandle = 400,
    hipErrorInvalidResourceHandle = 400,
    hipErrorIllegalState = 401,
    hipErrorNotFound = 500,
    hipErrorNotReady = 600,
    hipErrorIllegalAddress = 700,
    hipErrorLaunchOutOfResources = 701,
    hipErrorLaunchTimeOut = 702,
    hipErrorPeerAccessAlreadyEnabled = 704,
    hipErrorPeerAccessNotEnabled = 705,
    hipErrorSetOnActiveProcess = 708,
    hipErrorContextIsDestroyed = 709,
    hipErrorAssert = 710,
    hipErrorHostMemoryAlreadyRegistered = 712,
    hipErrorHostMemoryNotRegistered = 713,
    hipErrorLaunchFailure = 719,
    hipErrorCooperativeLaunchTooLarge = 720,
    hipErrorNotSupported = 801,
    hipErrorStreamCaptureUnsupported = 900,
    hipErrorStreamCaptureInvalidated = 901,
    hipErrorStreamCaptureMerge = 902,
    hipErrorStreamCaptureUnmatched = 903,
    hipErrorStreamCaptureUnjoined = 904,
    hipErrorStreamCaptureIsolation = 905,
    hipErrorStreamCaptureImplicit = 906,
    hipErrorCapturedEvent = 907,
    hipErrorStreamCaptureWrongThread = 908,
    hipErrorGraphExecUpdateFailure = 910,
    hipErrorUnknown = 999,
    hipErrorRuntimeMemory = 1052,
    hipErrorRuntimeOther = 1053,
    hipErrorTbd = 1054,} hipError_t;

// The hipDeviceAttribute_t values the test runtime answers (ROCm 6.3 numbering; HIP 5.2 numbers these the same).
typedef enum hipDeviceAttribute_t {
    hipDeviceAttributeEccEnabled = 0,
    hipDeviceAttributeAccessPolicyMaxWindowSize = 1,
    hipDeviceAttributeAsyncEngineCount = 2,
    hipDeviceAttributeCanMapHostMemory = 3,
    hipDeviceAttributeCanUseHostPointerForRegisteredMem = 4,
    hipDeviceAttributeClockRate = 5,
    hipDeviceAttributeComputeMode = 6,
    hipDeviceAttributeComputePreemptionSupported = 7,
    hipDeviceAttributeConcurrentKernels = 8,
    hipDeviceAttributeConcurrentManagedAccess = 9,
    hipDeviceAttributeCooperativeLaunch = 10,
    hipDeviceAttributeDirectManagedMemAccessFromHost = 13,
    hipDeviceAttributeGlobalL1CacheSupported = 14,
    hipDeviceAttributeHostNativeAtomicSupported = 15,
    hipDeviceAttributeIntegrated = 16,
    hipDeviceAttributeIsMultiGpuBoard = 17,
    hipDeviceAttributeKernelExecTimeout = 18,
    hipDeviceAttributeL2CacheSize = 19,
    hipDeviceAttributeLocalL1CacheSupported = 20,
    hipDeviceAttributeComputeCapabilityMajor = 23,
    hipDeviceAttributeManagedMemory = 24,
    hipDeviceAttributeMaxBlocksPerMultiProcessor = 25,
    hipDeviceAttributeMaxBlockDimX = 26,
    hipDeviceAttributeMaxBlockDimY = 27,
    hipDeviceAttributeMaxBlockDimZ = 28,
    hipDeviceAttributeMaxGridDimX = 29,
    hipDeviceAttributeMaxGridDimY = 30,
    hipDeviceAttributeMaxGridDimZ = 31,
    hipDeviceAttributeMaxThreadsPerBlock = 56,
    hipDeviceAttributeMaxThreadsPerMultiProcessor = 57,
    hipDeviceAttributeMaxPitch = 58,
    hipDeviceAttributeMemoryBusWidth = 59,
    hipDeviceAttributeMemoryClockRate = 60,
    hipDeviceAttributeComputeCapabilityMinor = 61,
    hipDeviceAttributeMultiGpuBoardGroupID = 62,
    hipDeviceAttributeMultiprocessorCount = 63,
    hipDeviceAttributePageableMemoryAccess = 65,
    hipDeviceAttributePageableMemoryAccessUsesHostPageTables = 66,
    hipDeviceAttributePciBusId = 67,
    hipDeviceAttributePciDeviceId = 68,
    hipDeviceAttributePciDomainID = 69,
    hipDeviceAttributePersistingL2CacheMaxSize = 70,
    hipDeviceAttributeMaxRegistersPerBlock = 71,
    hipDeviceAttributeMaxRegistersPerMultiprocessor = 72,
    hipDeviceAttributeReservedSharedMemPerBlock = 73,
    hipDeviceAttributeMaxSharedMemoryPerBlock = 74,
    hipDeviceAttributeSharedMemPerBlockOptin = 75,
    hipDeviceAttributeSharedMemPerMultiprocessor = 76,
    hipDeviceAttributeSingleToDoublePrecisionPerfRatio = 77,
    hipDeviceAttributeStreamPrioritiesSupported = 78,
    hipDeviceAttributeSurfaceAlignment = 79,
    hipDeviceAttributeTccDriver = 80,
    hipDeviceAttributeTextureAlignment = 81,
    hipDeviceAttributeTexturePitchAlignment = 82,
    hipDeviceAttributeTotalConstantMemory = 83,
    hipDeviceAttributeTotalGlobalMem = 84,
    hipDeviceAttributeUnifiedAddressing = 85,
    hipDeviceAttributeWarpSize = 87,
    hipDeviceAttributeMemoryPoolsSupported = 88,
    hipDeviceAttributeVirtualMemoryManagementSupported = 89,
    hipDeviceAttributeHostRegisterSupported = 90,
    hipDeviceAttributeMemoryPoolSupportedHandleTypes = 91,
    // AMD-specific range.
    hipDeviceAttributeMaxSharedMemoryPerMultiprocessor = 10002,
    hipDeviceAttributePhysicalMultiProcessorCount = 10015,
} hipDeviceAttribute_t;

// hipFunction_attribute: the same numbers as CUfunction_attribute 0..9.
typedef enum hipFunction_attribute {
    HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
    HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
    HIP_FUNC_ATTRIBUTE_CONST_SIZE_BYTES = 2,
    HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3,
    HIP_FUNC_ATTRIBUTE_NUM_REGS = 4,
    HIP_FUNC_ATTRIBUTE_PTX_VERSION = 5,
    HIP_FUNC_ATTRIBUTE_BINARY_VERSION = 6,
    HIP_FUNC_ATTRIBUTE_CACHE_MODE_CA = 7,
    HIP_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
    HIP_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT = 9,
    HIP_FUNC_ATTRIBUTE_MAX = 10,
} hipFunction_attribute;

typedef enum hipMemcpyKind {
    hipMemcpyHostToHost = 0,
    hipMemcpyHostToDevice = 1,
    hipMemcpyDeviceToHost = 2,
    hipMemcpyDeviceToDevice = 3,
    hipMemcpyDefault = 4,
} hipMemcpyKind;

// The same numbers as CUstreamCaptureMode.
typedef enum hipStreamCaptureMode {
    hipStreamCaptureModeGlobal = 0,
    hipStreamCaptureModeThreadLocal = 1,
    hipStreamCaptureModeRelaxed = 2,
} hipStreamCaptureMode;

// Seventeen one-bit feature flags in one unsigned int.
typedef struct hipDeviceArch_t {
    unsigned bits;
} hipDeviceArch_t;
static_assert(sizeof(hipDeviceArch_t) == 4, "hipDeviceArch_t: one unsigned bit-field unit");

typedef struct hipUUID {
    char bytes[16];
} hipUUID;

struct hipDeviceProp_tR0600 {
    char name[256];
    hipUUID uuid;
    char luid[8];
    unsigned int luidDeviceNodeMask;
    size_t totalGlobalMem;
    size_t sharedMemPerBlock;
    int regsPerBlock;
    int warpSize;
    size_t memPitch;
    int maxThreadsPerBlock;
    int maxThreadsDim[3];
    int maxGridSize[3];
    int clockRate;
    size_t totalConstMem;
    int major;
    int minor;
    size_t textureAlignment;
    size_t texturePitchAlignment;
    int deviceOverlap;
    int multiProcessorCount;
    int kernelExecTimeoutEnabled;
    int integrated;
    int canMapHostMemory;
    int computeMode;
    int maxTexture1D;
    int maxTexture1DMipmap;
    int maxTexture1DLinear;
    int maxTexture2D[2];
    int maxTexture2DMipmap[2];
    int maxTexture2DLinear[3];
    int maxTexture2DGather[2];
    int maxTexture3D[3];
    int maxTexture3DAlt[3];
    int maxTextureCubemap;
    int maxTexture1DLayered[2];
    int maxTexture2DLayered[3];
    int maxTextureCubemapLayered[2];
    int maxSurface1D;
    int maxSurface2D[2];
    int maxSurface3D[3];
    int maxSurface1DLayered[2];
    int maxSurface2DLayered[3];
    int maxSurfaceCubemap;
    int maxSurfaceCubemapLayered[2];
    size_t surfaceAlignment;
    int concurrentKernels;
    int ECCEnabled;
    int pciBusID;
    int pciDeviceID;
    int pciDomainID;
    int tccDriver;
    int asyncEngineCount;
    int unifiedAddressing;
    int memoryClockRate;
    int memoryBusWidth;
    int l2CacheSize;
    int persistingL2CacheMaxSize;
    int maxThreadsPerMultiProcessor;
    int streamPrioritiesSupported;
    int globalL1CacheSupported;
    int localL1CacheSupported;
    size_t sharedMemPerMultiprocessor;
    int regsPerMultiprocessor;
    int managedMemory;
    int isMultiGpuBoard;
    int multiGpuBoardGroupID;
    int hostNativeAtomicSupported;
    int singleToDoublePrecisionPerfRatio;
    int pageableMemoryAccess;
    int concurrentManagedAccess;
    int computePreemptionSupported;
    int canUseHostPointerForRegisteredMem;
    int cooperativeLaunch;
    int cooperativeMultiDeviceLaunch;
    size_t sharedMemPerBlockOptin;
    int pageableMemoryAccessUsesHostPageTables;
    int directManagedMemAccessFromHost;
    int maxBlocksPerMultiProcessor;
    int accessPolicyMaxWindowSize;
    size_t reservedSharedMemPerBlock;
    int hostRegisterSupported;
    int sparseHipArraySupported;
    int hostRegisterReadOnlySupported;
    int timelineSemaphoreInteropSupported;
    int memoryPoolsSupported;
    int gpuDirectRDMASupported;
    unsigned int gpuDirectRDMAFlushWritesOptions;
    int gpuDirectRDMAWritesOrdering;
    unsigned int memoryPoolSupportedHandleTypes;
    int deferredMappingHipArraySupported;
    int ipcEventSupported;
    int clusterLaunch;
    int unifiedFunctionPointers;
    int reserved[63];
    int hipReserved[32];
    char gcnArchName[256];
    size_t maxSharedMemoryPerMultiProcessor;
    int clockInstructionRate;
    hipDeviceArch_t arch;
    unsigned int* hdpMemFlushCntl;
    unsigned int* hdpRegFlushCntl;
    int cooperativeMultiDeviceUnmatchedFunc;
    int cooperativeMultiDeviceUnmatchedGridDim;
    int cooperativeMultiDeviceUnmatchedBlockDim;
    int cooperativeMultiDeviceUnmatchedSharedMem;
    int isLargeBar;
    int asicRevision;
};
static_assert(sizeof(hipDeviceProp_tR0600) == 1472, "hipDeviceProp_tR0600: size");
static_assert(offsetof(hipDeviceProp_tR0600, name) == 0, "name");
static_assert(offsetof(hipDeviceProp_tR0600, uuid) == 256, "uuid");
static_assert(offsetof(hipDeviceProp_tR0600, luid) == 272, "luid");
static_assert(offsetof(hipDeviceProp_tR0600, luidDeviceNodeMask) == 280, "luidDeviceNodeMask");
static_assert(offsetof(hipDeviceProp_tR0600, totalGlobalMem) == 288, "totalGlobalMem");
static_assert(offsetof(hipDeviceProp_tR0600, sharedMemPerBlock) == 296, "sharedMemPerBlock");
static_assert(offsetof(hipDeviceProp_tR0600, regsPerBlock) == 304, "regsPerBlock");
static_assert(offsetof(hipDeviceProp_tR0600, warpSize) == 308, "warpSize");
static_assert(offsetof(hipDeviceProp_tR0600, memPitch) == 312, "memPitch");
static_assert(offsetof(hipDeviceProp_tR0600, maxThreadsPerBlock) == 320, "maxThreadsPerBlock");
static_assert(offsetof(hipDeviceProp_tR0600, maxThreadsDim) == 324, "maxThreadsDim");
static_assert(offsetof(hipDeviceProp_tR0600, maxGridSize) == 336, "maxGridSize");
static_assert(offsetof(hipDeviceProp_tR0600, clockRate) == 348, "clockRate");
static_assert(offsetof(hipDeviceProp_tR0600, totalConstMem) == 352, "totalConstMem");
static_assert(offsetof(hipDeviceProp_tR0600, major) == 360, "major");
static_assert(offsetof(hipDeviceProp_tR0600, minor) == 364, "minor");
static_assert(offsetof(hipDeviceProp_tR0600, textureAlignment) == 368, "textureAlignment");
static_assert(offsetof(hipDeviceProp_tR0600, texturePitchAlignment) == 376, "texturePitchAlignment");
static_assert(offsetof(hipDeviceProp_tR0600, deviceOverlap) == 384, "deviceOverlap");
static_assert(offsetof(hipDeviceProp_tR0600, multiProcessorCount) == 388, "multiProcessorCount");
static_assert(offsetof(hipDeviceProp_tR0600, kernelExecTimeoutEnabled) == 392, "kernelExecTimeoutEnabled");
static_assert(offsetof(hipDeviceProp_tR0600, integrated) == 396, "integrated");
static_assert(offsetof(hipDeviceProp_tR0600, canMapHostMemory) == 400, "canMapHostMemory");
static_assert(offsetof(hipDeviceProp_tR0600, computeMode) == 404, "computeMode");
static_assert(offsetof(hipDeviceProp_tR0600, maxTexture1D) == 408, "maxTexture1D");
static_assert(offsetof(hipDeviceProp_tR0600, maxTexture1DMipmap) == 412, "maxTexture1DMipmap");
static_assert(offsetof(hipDeviceProp_tR0600, maxTexture1DLinear) == 416, "maxTexture1DLinear");
static_assert(offsetof(hipDeviceProp_tR0600, maxTexture2D) == 420, "maxTexture2D");
static_assert(offsetof(hipDeviceProp_tR0600, maxTexture2DMipmap) == 428, "maxTexture2DMipmap");
static_assert(offsetof(hipDeviceProp_tR0600, maxTexture2DLinear) == 436, "maxTexture2DLinear");
static_assert(offsetof(hipDeviceProp_tR0600, maxTexture2DGather) == 448, "maxTexture2DGather");
static_assert(offsetof(hipDeviceProp_tR0600, maxTexture3D) == 456, "maxTexture3D");
static_assert(offsetof(hipDeviceProp_tR0600, maxTexture3DAlt) == 468, "maxTexture3DAlt");
static_assert(offsetof(hipDeviceProp_tR0600, maxTextureCubemap) == 480, "maxTextureCubemap");
static_assert(offsetof(hipDeviceProp_tR0600, maxTexture1DLayered) == 484, "maxTexture1DLayered");
static_assert(offsetof(hipDeviceProp_tR0600, maxTexture2DLayered) == 492, "maxTexture2DLayered");
static_assert(offsetof(hipDeviceProp_tR0600, maxTextureCubemapLayered) == 504, "maxTextureCubemapLayered");
static_assert(offsetof(hipDeviceProp_tR0600, maxSurface1D) == 512, "maxSurface1D");
static_assert(offsetof(hipDeviceProp_tR0600, maxSurface2D) == 516, "maxSurface2D");
static_assert(offsetof(hipDeviceProp_tR0600, maxSurface3D) == 524, "maxSurface3D");
static_assert(offsetof(hipDeviceProp_tR0600, maxSurface1DLayered) == 536, "maxSurface1DLayered");
static_assert(offsetof(hipDeviceProp_tR0600, maxSurface2DLayered) == 544, "maxSurface2DLayered");
static_assert(offsetof(hipDeviceProp_tR0600, maxSurfaceCubemap) == 556, "maxSurfaceCubemap");
static_assert(offsetof(hipDeviceProp_tR0600, maxSurfaceCubemapLayered) == 560, "maxSurfaceCubemapLayered");
static_assert(offsetof(hipDeviceProp_tR0600, surfaceAlignment) == 568, "surfaceAlignment");
static_assert(offsetof(hipDeviceProp_tR0600, concurrentKernels) == 576, "concurrentKernels");
static_assert(offsetof(hipDeviceProp_tR0600, ECCEnabled) == 580, "ECCEnabled");
static_assert(offsetof(hipDeviceProp_tR0600, pciBusID) == 584, "pciBusID");
static_assert(offsetof(hipDeviceProp_tR0600, pciDeviceID) == 588, "pciDeviceID");
static_assert(offsetof(hipDeviceProp_tR0600, pciDomainID) == 592, "pciDomainID");
static_assert(offsetof(hipDeviceProp_tR0600, tccDriver) == 596, "tccDriver");
static_assert(offsetof(hipDeviceProp_tR0600, asyncEngineCount) == 600, "asyncEngineCount");
static_assert(offsetof(hipDeviceProp_tR0600, unifiedAddressing) == 604, "unifiedAddressing");
static_assert(offsetof(hipDeviceProp_tR0600, memoryClockRate) == 608, "memoryClockRate");
static_assert(offsetof(hipDeviceProp_tR0600, memoryBusWidth) == 612, "memoryBusWidth");
static_assert(offsetof(hipDeviceProp_tR0600, l2CacheSize) == 616, "l2CacheSize");
static_assert(offsetof(hipDeviceProp_tR0600, persistingL2CacheMaxSize) == 620, "persistingL2CacheMaxSize");
static_assert(offsetof(hipDeviceProp_tR0600, maxThreadsPerMultiProcessor) == 624, "maxThreadsPerMultiProcessor");
static_assert(offsetof(hipDeviceProp_tR0600, streamPrioritiesSupported) == 628, "streamPrioritiesSupported");
static_assert(offsetof(hipDeviceProp_tR0600, globalL1CacheSupported) == 632, "globalL1CacheSupported");
static_assert(offsetof(hipDeviceProp_tR0600, localL1CacheSupported) == 636, "localL1CacheSupported");
static_assert(offsetof(hipDeviceProp_tR0600, sharedMemPerMultiprocessor) == 640, "sharedMemPerMultiprocessor");
static_assert(offsetof(hipDeviceProp_tR0600, regsPerMultiprocessor) == 648, "regsPerMultiprocessor");
static_assert(offsetof(hipDeviceProp_tR0600, managedMemory) == 652, "managedMemory");
static_assert(offsetof(hipDeviceProp_tR0600, isMultiGpuBoard) == 656, "isMultiGpuBoard");
static_assert(offsetof(hipDeviceProp_tR0600, multiGpuBoardGroupID) == 660, "multiGpuBoardGroupID");
static_assert(offsetof(hipDeviceProp_tR0600, hostNativeAtomicSupported) == 664, "hostNativeAtomicSupported");
static_assert(offsetof(hipDeviceProp_tR0600, singleToDoublePrecisionPerfRatio) == 668, "singleToDoublePrecisionPerfRatio");
static_assert(offsetof(hipDeviceProp_tR0600, pageableMemoryAccess) == 672, "pageableMemoryAccess");
static_assert(offsetof(hipDeviceProp_tR0600, concurrentManagedAccess) == 676, "concurrentManagedAccess");
static_assert(offsetof(hipDeviceProp_tR0600, computePreemptionSupported) == 680, "computePreemptionSupported");
static_assert(offsetof(hipDeviceProp_tR0600, canUseHostPointerForRegisteredMem) == 684, "canUseHostPointerForRegisteredMem");
static_assert(offsetof(hipDeviceProp_tR0600, cooperativeLaunch) == 688, "cooperativeLaunch");
static_assert(offsetof(hipDeviceProp_tR0600, cooperativeMultiDeviceLaunch) == 692, "cooperativeMultiDeviceLaunch");
static_assert(offsetof(hipDeviceProp_tR0600, sharedMemPerBlockOptin) == 696, "sharedMemPerBlockOptin");
static_assert(offsetof(hipDeviceProp_tR0600, pageableMemoryAccessUsesHostPageTables) == 704, "pageableMemoryAccessUsesHostPageTables");
static_assert(offsetof(hipDeviceProp_tR0600, directManagedMemAccessFromHost) == 708, "directManagedMemAccessFromHost");
static_assert(offsetof(hipDeviceProp_tR0600, maxBlocksPerMultiProcessor) == 712, "maxBlocksPerMultiProcessor");
static_assert(offsetof(hipDeviceProp_tR0600, accessPolicyMaxWindowSize) == 716, "accessPolicyMaxWindowSize");
static_assert(offsetof(hipDeviceProp_tR0600, reservedSharedMemPerBlock) == 720, "reservedSharedMemPerBlock");
static_assert(offsetof(hipDeviceProp_tR0600, hostRegisterSupported) == 728, "hostRegisterSupported");
static_assert(offsetof(hipDeviceProp_tR0600, sparseHipArraySupported) == 732, "sparseHipArraySupported");
static_assert(offsetof(hipDeviceProp_tR0600, hostRegisterReadOnlySupported) == 736, "hostRegisterReadOnlySupported");
static_assert(offsetof(hipDeviceProp_tR0600, timelineSemaphoreInteropSupported) == 740, "timelineSemaphoreInteropSupported");
static_assert(offsetof(hipDeviceProp_tR0600, memoryPoolsSupported) == 744, "memoryPoolsSupported");
static_assert(offsetof(hipDeviceProp_tR0600, gpuDirectRDMASupported) == 748, "gpuDirectRDMASupported");
static_assert(offsetof(hipDeviceProp_tR0600, gpuDirectRDMAFlushWritesOptions) == 752, "gpuDirectRDMAFlushWritesOptions");
static_assert(offsetof(hipDeviceProp_tR0600, gpuDirectRDMAWritesOrdering) == 756, "gpuDirectRDMAWritesOrdering");
static_assert(offsetof(hipDeviceProp_tR0600, memoryPoolSupportedHandleTypes) == 760, "memoryPoolSupportedHandleTypes");
static_assert(offsetof(hipDeviceProp_tR0600, deferredMappingHipArraySupported) == 764, "deferredMappingHipArraySupported");
static_assert(offsetof(hipDeviceProp_tR0600, ipcEventSupported) == 768, "ipcEventSupported");
static_assert(offsetof(hipDeviceProp_tR0600, clusterLaunch) == 772, "clusterLaunch");
static_assert(offsetof(hipDeviceProp_tR0600, unifiedFunctionPointers) == 776, "unifiedFunctionPointers");
static_assert(offsetof(hipDeviceProp_tR0600, reserved) == 780, "reserved");
static_assert(offsetof(hipDeviceProp_tR0600, hipReserved) == 1032, "hipReserved");
static_assert(offsetof(hipDeviceProp_tR0600, gcnArchName) == 1160, "gcnArchName");
static_assert(offsetof(hipDeviceProp_tR0600, maxSharedMemoryPerMultiProcessor) == 1416, "maxSharedMemoryPerMultiProcessor");
static_assert(offsetof(hipDeviceProp_tR0600, clockInstructionRate) == 1424, "clockInstructionRate");
static_assert(offsetof(hipDeviceProp_tR0600, arch) == 1428, "arch");
static_assert(offsetof(hipDeviceProp_tR0600, hdpMemFlushCntl) == 1432, "hdpMemFlushCntl");
static_assert(offsetof(hipDeviceProp_tR0600, hdpRegFlushCntl) == 1440, "hdpRegFlushCntl");
static_assert(offsetof(hipDeviceProp_tR0600, cooperativeMultiDeviceUnmatchedFunc) == 1448, "cooperativeMultiDeviceUnmatchedFunc");
static_assert(offsetof(hipDeviceProp_tR0600, cooperativeMultiDeviceUnmatchedGridDim) == 1452, "cooperativeMultiDeviceUnmatchedGridDim");
static_assert(offsetof(hipDeviceProp_tR0600, cooperativeMultiDeviceUnmatchedBlockDim) == 1456, "cooperativeMultiDeviceUnmatchedBlockDim");
static_assert(offsetof(hipDeviceProp_tR0600, cooperativeMultiDeviceUnmatchedSharedMem) == 1460, "cooperativeMultiDeviceUnmatchedSharedMem");
static_assert(offsetof(hipDeviceProp_tR0600, isLargeBar) == 1464, "isLargeBar");
static_assert(offsetof(hipDeviceProp_tR0600, asicRevision) == 1468, "asicRevision");

struct hipDeviceProp_tR0000 {
    char name[256];
    size_t totalGlobalMem;
    size_t sharedMemPerBlock;
    int regsPerBlock;
    int warpSize;
    int maxThreadsPerBlock;
    int maxThreadsDim[3];
    int maxGridSize[3];
    int clockRate;
    int memoryClockRate;
    int memoryBusWidth;
    size_t totalConstMem;
    int major;
    int minor;
    int multiProcessorCount;
    int l2CacheSize;
    int maxThreadsPerMultiProcessor;
    int computeMode;
    int clockInstructionRate;
    hipDeviceArch_t arch;
    int concurrentKernels;
    int pciDomainID;
    int pciBusID;
    int pciDeviceID;
    size_t maxSharedMemoryPerMultiProcessor;
    int isMultiGpuBoard;
    int canMapHostMemory;
    int gcnArch;
    char gcnArchName[256];
    int integrated;
    int cooperativeLaunch;
    int cooperativeMultiDeviceLaunch;
    int maxTexture1DLinear;
    int maxTexture1D;
    int maxTexture2D[2];
    int maxTexture3D[3];
    unsigned int* hdpMemFlushCntl;
    unsigned int* hdpRegFlushCntl;
    size_t memPitch;
    size_t textureAlignment;
    size_t texturePitchAlignment;
    int kernelExecTimeoutEnabled;
    int ECCEnabled;
    int tccDriver;
    int cooperativeMultiDeviceUnmatchedFunc;
    int cooperativeMultiDeviceUnmatchedGridDim;
    int cooperativeMultiDeviceUnmatchedBlockDim;
    int cooperativeMultiDeviceUnmatchedSharedMem;
    int isLargeBar;
    int asicRevision;
    int managedMemory;
    int directManagedMemAccessFromHost;
    int concurrentManagedAccess;
    int pageableMemoryAccess;
    int pageableMemoryAccessUsesHostPageTables;
};
static_assert(sizeof(hipDeviceProp_tR0000) == 792, "hipDeviceProp_tR0000: size");
static_assert(offsetof(hipDeviceProp_tR0000, name) == 0, "name");
static_assert(offsetof(hipDeviceProp_tR0000, totalGlobalMem) == 256, "totalGlobalMem");
static_assert(offsetof(hipDeviceProp_tR0000, sharedMemPerBlock) == 264, "sharedMemPerBlock");
static_assert(offsetof(hipDeviceProp_tR0000, regsPerBlock) == 272, "regsPerBlock");
static_assert(offsetof(hipDeviceProp_tR0000, warpSize) == 276, "warpSize");
static_assert(offsetof(hipDeviceProp_tR0000, maxThreadsPerBlock) == 280, "maxThreadsPerBlock");
static_assert(offsetof(hipDeviceProp_tR0000, maxThreadsDim) == 284, "maxThreadsDim");
static_assert(offsetof(hipDeviceProp_tR0000, maxGridSize) == 296, "maxGridSize");
static_assert(offsetof(hipDeviceProp_tR0000, clockRate) == 308, "clockRate");
static_assert(offsetof(hipDeviceProp_tR0000, memoryClockRate) == 312, "memoryClockRate");
static_assert(offsetof(hipDeviceProp_tR0000, memoryBusWidth) == 316, "memoryBusWidth");
static_assert(offsetof(hipDeviceProp_tR0000, totalConstMem) == 320, "totalConstMem");
static_assert(offsetof(hipDeviceProp_tR0000, major) == 328, "major");
static_assert(offsetof(hipDeviceProp_tR0000, minor) == 332, "minor");
static_assert(offsetof(hipDeviceProp_tR0000, multiProcessorCount) == 336, "multiProcessorCount");
static_assert(offsetof(hipDeviceProp_tR0000, l2CacheSize) == 340, "l2CacheSize");
static_assert(offsetof(hipDeviceProp_tR0000, maxThreadsPerMultiProcessor) == 344, "maxThreadsPerMultiProcessor");
static_assert(offsetof(hipDeviceProp_tR0000, computeMode) == 348, "computeMode");
static_assert(offsetof(hipDeviceProp_tR0000, clockInstructionRate) == 352, "clockInstructionRate");
static_assert(offsetof(hipDeviceProp_tR0000, arch) == 356, "arch");
static_assert(offsetof(hipDeviceProp_tR0000, concurrentKernels) == 360, "concurrentKernels");
static_assert(offsetof(hipDeviceProp_tR0000, pciDomainID) == 364, "pciDomainID");
static_assert(offsetof(hipDeviceProp_tR0000, pciBusID) == 368, "pciBusID");
static_assert(offsetof(hipDeviceProp_tR0000, pciDeviceID) == 372, "pciDeviceID");
static_assert(offsetof(hipDeviceProp_tR0000, maxSharedMemoryPerMultiProcessor) == 376, "maxSharedMemoryPerMultiProcessor");
static_assert(offsetof(hipDeviceProp_tR0000, isMultiGpuBoard) == 384, "isMultiGpuBoard");
static_assert(offsetof(hipDeviceProp_tR0000, canMapHostMemory) == 388, "canMapHostMemory");
static_assert(offsetof(hipDeviceProp_tR0000, gcnArch) == 392, "gcnArch");
static_assert(offsetof(hipDeviceProp_tR0000, gcnArchName) == 396, "gcnArchName");
static_assert(offsetof(hipDeviceProp_tR0000, integrated) == 652, "integrated");
static_assert(offsetof(hipDeviceProp_tR0000, cooperativeLaunch) == 656, "cooperativeLaunch");
static_assert(offsetof(hipDeviceProp_tR0000, cooperativeMultiDeviceLaunch) == 660, "cooperativeMultiDeviceLaunch");
static_assert(offsetof(hipDeviceProp_tR0000, maxTexture1DLinear) == 664, "maxTexture1DLinear");
static_assert(offsetof(hipDeviceProp_tR0000, maxTexture1D) == 668, "maxTexture1D");
static_assert(offsetof(hipDeviceProp_tR0000, maxTexture2D) == 672, "maxTexture2D");
static_assert(offsetof(hipDeviceProp_tR0000, maxTexture3D) == 680, "maxTexture3D");
static_assert(offsetof(hipDeviceProp_tR0000, hdpMemFlushCntl) == 696, "hdpMemFlushCntl");
static_assert(offsetof(hipDeviceProp_tR0000, hdpRegFlushCntl) == 704, "hdpRegFlushCntl");
static_assert(offsetof(hipDeviceProp_tR0000, memPitch) == 712, "memPitch");
static_assert(offsetof(hipDeviceProp_tR0000, textureAlignment) == 720, "textureAlignment");
static_assert(offsetof(hipDeviceProp_tR0000, texturePitchAlignment) == 728, "texturePitchAlignment");
static_assert(offsetof(hipDeviceProp_tR0000, kernelExecTimeoutEnabled) == 736, "kernelExecTimeoutEnabled");
static_assert(offsetof(hipDeviceProp_tR0000, ECCEnabled) == 740, "ECCEnabled");
static_assert(offsetof(hipDeviceProp_tR0000, tccDriver) == 744, "tccDriver");
static_assert(offsetof(hipDeviceProp_tR0000, cooperativeMultiDeviceUnmatchedFunc) == 748, "cooperativeMultiDeviceUnmatchedFunc");
static_assert(offsetof(hipDeviceProp_tR0000, cooperativeMultiDeviceUnmatchedGridDim) == 752, "cooperativeMultiDeviceUnmatchedGridDim");
static_assert(offsetof(hipDeviceProp_tR0000, cooperativeMultiDeviceUnmatchedBlockDim) == 756, "cooperativeMultiDeviceUnmatchedBlockDim");
static_assert(offsetof(hipDeviceProp_tR0000, cooperativeMultiDeviceUnmatchedSharedMem) == 760, "cooperativeMultiDeviceUnmatchedSharedMem");
static_assert(offsetof(hipDeviceProp_tR0000, isLargeBar) == 764, "isLargeBar");
static_assert(offsetof(hipDeviceProp_tR0000, asicRevision) == 768, "asicRevision");
static_assert(offsetof(hipDeviceProp_tR0000, managedMemory) == 772, "managedMemory");
static_assert(offsetof(hipDeviceProp_tR0000, directManagedMemAccessFromHost) == 776, "directManagedMemAccessFromHost");
static_assert(offsetof(hipDeviceProp_tR0000, concurrentManagedAccess) == 780, "concurrentManagedAccess");
static_assert(offsetof(hipDeviceProp_tR0000, pageableMemoryAccess) == 784, "pageableMemoryAccess");
static_assert(offsetof(hipDeviceProp_tR0000, pageableMemoryAccessUsesHostPageTables) == 788, "pageableMemoryAccessUsesHostPageTables");
}  // extern "C"
