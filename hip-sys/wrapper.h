// Input to scripts/gen-hip-bindings.sh: the HIP runtime API, plus the few functions the suite uses that the HIP 5.2
// headers (Debian's, from which the committed bindings are generated) do not declare yet. Their prototypes follow
// ROCm 6's include/hip/hip_runtime_api.h and hip_deprecated.h. Each is resolved at run time and may be absent.
#include <hip/hip_runtime_api.h>

#if HIP_VERSION_MAJOR < 6
extern "C" {
// Added in ROCm 5.5 (symbol version hip_5.5 in libamdhip64): a cooperative launch of a module's kernel.
hipError_t hipModuleLaunchCooperativeKernel(hipFunction_t f, unsigned int gridDimX, unsigned int gridDimY,
                                            unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                            unsigned int blockDimZ, unsigned int sharedMemBytes, hipStream_t stream,
                                            void** kernelParams);
// ROCm 6 fills the new 1472-byte hipDeviceProp_tR0600 layout here; the pre-6 layout stays available as
// hipGetDevicePropertiesR0000 (and as plain hipGetDeviceProperties). Declared with void* because the suite reads
// nothing from these structs but gcnArchName, at an offset chosen at run time (suite/src/device/amd/hip.rs).
hipError_t hipGetDevicePropertiesR0600(void* prop, int deviceId);
hipError_t hipGetDevicePropertiesR0000(void* prop, int deviceId);
}
#endif

#if HIP_VERSION_MAJOR < 5 || (HIP_VERSION_MAJOR == 5 && HIP_VERSION_MINOR < 3)
extern "C" {
// Added in ROCm 5.3 (symbol version hip_5.3): moves an instantiated graph's resources to the device ahead of its
// first launch, so that launch is not slower than the rest.
hipError_t hipGraphUpload(hipGraphExec_t graphExec, hipStream_t stream);
}
#endif
