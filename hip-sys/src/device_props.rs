//! `hipDeviceProp_t` in its two layouts, declared by hand.
//!
//! ROCm 6 changed the struct and kept both entry points: `hipGetDevicePropertiesR0600` (symbol version `hip_6.0`)
//! fills [`hipDeviceProp_tR0600`], the layout of ROCm 6.0-6.3's `include/hip/hip_runtime_api.h`, while
//! `hipGetDevicePropertiesR0000` and the plain `hipGetDeviceProperties` (both `hip_4.2`) fill
//! [`hipDeviceProp_tR0000`], ROCm 6's name (`include/hip/hip_deprecated.h`) for the struct of HIP 5.x. The bindings
//! are generated from Debian's HIP 5.2 headers, which know only the old layout, so both are written out here, field
//! for field in the headers' order with the headers' names (hence the relaxed naming lint), and checked against
//! ROCm 6.3 by `tests/rocm63_abi.rs`: every offset and the size of R0600 against the structs compiled into PyPI's
//! `hip-python` 6.3.3, R0000 against the HIP 5.2 header (identical, field for field, to ROCm 6.3's R0000).
//!
//! The suite reads only `gcnArchName` from these, at the offset [`offset_of!`](std::mem::offset_of) gives; the
//! HIP-over-CUDA test runtime (`hip-test-runtime/`) fills the same layouts.
#![allow(non_snake_case)]

use std::os::raw::{c_char, c_int, c_uint};

/// `hipDeviceArch_t`: seventeen one-bit feature flags (`hasGlobalInt32Atomics` in bit 0 through
/// `hasDynamicParallelism` in bit 16, in the header's order) packed into one `unsigned int` bit-field unit.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct hipDeviceArch_t {
    /// The packed flags.
    pub bits: c_uint,
}

/// `hipUUID` (`struct hipUUID_t`): the device's 16-byte UUID.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct hipUUID {
    /// The UUID's bytes.
    pub bytes: [c_char; 16],
}

/// ROCm 6's `hipDeviceProp_tR0600` (1472 bytes on x86-64; `gcnArchName`, e.g. `gfx90a:sramecc+:xnack-`, at byte
/// 1160). Sizes are in bytes, clocks in kHz, as the header documents each field.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hipDeviceProp_tR0600 {
    pub name: [c_char; 256],
    pub uuid: hipUUID,
    pub luid: [c_char; 8],
    pub luidDeviceNodeMask: c_uint,
    pub totalGlobalMem: usize,
    pub sharedMemPerBlock: usize,
    pub regsPerBlock: c_int,
    pub warpSize: c_int,
    pub memPitch: usize,
    pub maxThreadsPerBlock: c_int,
    pub maxThreadsDim: [c_int; 3],
    pub maxGridSize: [c_int; 3],
    pub clockRate: c_int,
    pub totalConstMem: usize,
    pub major: c_int,
    pub minor: c_int,
    pub textureAlignment: usize,
    pub texturePitchAlignment: usize,
    pub deviceOverlap: c_int,
    pub multiProcessorCount: c_int,
    pub kernelExecTimeoutEnabled: c_int,
    pub integrated: c_int,
    pub canMapHostMemory: c_int,
    pub computeMode: c_int,
    pub maxTexture1D: c_int,
    pub maxTexture1DMipmap: c_int,
    pub maxTexture1DLinear: c_int,
    pub maxTexture2D: [c_int; 2],
    pub maxTexture2DMipmap: [c_int; 2],
    pub maxTexture2DLinear: [c_int; 3],
    pub maxTexture2DGather: [c_int; 2],
    pub maxTexture3D: [c_int; 3],
    pub maxTexture3DAlt: [c_int; 3],
    pub maxTextureCubemap: c_int,
    pub maxTexture1DLayered: [c_int; 2],
    pub maxTexture2DLayered: [c_int; 3],
    pub maxTextureCubemapLayered: [c_int; 2],
    pub maxSurface1D: c_int,
    pub maxSurface2D: [c_int; 2],
    pub maxSurface3D: [c_int; 3],
    pub maxSurface1DLayered: [c_int; 2],
    pub maxSurface2DLayered: [c_int; 3],
    pub maxSurfaceCubemap: c_int,
    pub maxSurfaceCubemapLayered: [c_int; 2],
    pub surfaceAlignment: usize,
    pub concurrentKernels: c_int,
    pub ECCEnabled: c_int,
    pub pciBusID: c_int,
    pub pciDeviceID: c_int,
    pub pciDomainID: c_int,
    pub tccDriver: c_int,
    pub asyncEngineCount: c_int,
    pub unifiedAddressing: c_int,
    pub memoryClockRate: c_int,
    pub memoryBusWidth: c_int,
    pub l2CacheSize: c_int,
    pub persistingL2CacheMaxSize: c_int,
    pub maxThreadsPerMultiProcessor: c_int,
    pub streamPrioritiesSupported: c_int,
    pub globalL1CacheSupported: c_int,
    pub localL1CacheSupported: c_int,
    pub sharedMemPerMultiprocessor: usize,
    pub regsPerMultiprocessor: c_int,
    pub managedMemory: c_int,
    pub isMultiGpuBoard: c_int,
    pub multiGpuBoardGroupID: c_int,
    pub hostNativeAtomicSupported: c_int,
    pub singleToDoublePrecisionPerfRatio: c_int,
    pub pageableMemoryAccess: c_int,
    pub concurrentManagedAccess: c_int,
    pub computePreemptionSupported: c_int,
    pub canUseHostPointerForRegisteredMem: c_int,
    pub cooperativeLaunch: c_int,
    pub cooperativeMultiDeviceLaunch: c_int,
    pub sharedMemPerBlockOptin: usize,
    pub pageableMemoryAccessUsesHostPageTables: c_int,
    pub directManagedMemAccessFromHost: c_int,
    pub maxBlocksPerMultiProcessor: c_int,
    pub accessPolicyMaxWindowSize: c_int,
    pub reservedSharedMemPerBlock: usize,
    pub hostRegisterSupported: c_int,
    pub sparseHipArraySupported: c_int,
    pub hostRegisterReadOnlySupported: c_int,
    pub timelineSemaphoreInteropSupported: c_int,
    pub memoryPoolsSupported: c_int,
    pub gpuDirectRDMASupported: c_int,
    pub gpuDirectRDMAFlushWritesOptions: c_uint,
    pub gpuDirectRDMAWritesOrdering: c_int,
    pub memoryPoolSupportedHandleTypes: c_uint,
    pub deferredMappingHipArraySupported: c_int,
    pub ipcEventSupported: c_int,
    pub clusterLaunch: c_int,
    pub unifiedFunctionPointers: c_int,
    pub reserved: [c_int; 63],
    pub hipReserved: [c_int; 32],
    pub gcnArchName: [c_char; 256],
    pub maxSharedMemoryPerMultiProcessor: usize,
    pub clockInstructionRate: c_int,
    pub arch: hipDeviceArch_t,
    pub hdpMemFlushCntl: *mut c_uint,
    pub hdpRegFlushCntl: *mut c_uint,
    pub cooperativeMultiDeviceUnmatchedFunc: c_int,
    pub cooperativeMultiDeviceUnmatchedGridDim: c_int,
    pub cooperativeMultiDeviceUnmatchedBlockDim: c_int,
    pub cooperativeMultiDeviceUnmatchedSharedMem: c_int,
    pub isLargeBar: c_int,
    pub asicRevision: c_int,
}

/// `hipDeviceProp_tR0000`: HIP 5's `hipDeviceProp_t`, still filled by ROCm 6's `hipGetDevicePropertiesR0000` and
/// plain `hipGetDeviceProperties` (792 bytes on x86-64; `gcnArchName` at byte 396).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hipDeviceProp_tR0000 {
    pub name: [c_char; 256],
    pub totalGlobalMem: usize,
    pub sharedMemPerBlock: usize,
    pub regsPerBlock: c_int,
    pub warpSize: c_int,
    pub maxThreadsPerBlock: c_int,
    pub maxThreadsDim: [c_int; 3],
    pub maxGridSize: [c_int; 3],
    pub clockRate: c_int,
    pub memoryClockRate: c_int,
    pub memoryBusWidth: c_int,
    pub totalConstMem: usize,
    pub major: c_int,
    pub minor: c_int,
    pub multiProcessorCount: c_int,
    pub l2CacheSize: c_int,
    pub maxThreadsPerMultiProcessor: c_int,
    pub computeMode: c_int,
    pub clockInstructionRate: c_int,
    pub arch: hipDeviceArch_t,
    pub concurrentKernels: c_int,
    pub pciDomainID: c_int,
    pub pciBusID: c_int,
    pub pciDeviceID: c_int,
    pub maxSharedMemoryPerMultiProcessor: usize,
    pub isMultiGpuBoard: c_int,
    pub canMapHostMemory: c_int,
    pub gcnArch: c_int,
    pub gcnArchName: [c_char; 256],
    pub integrated: c_int,
    pub cooperativeLaunch: c_int,
    pub cooperativeMultiDeviceLaunch: c_int,
    pub maxTexture1DLinear: c_int,
    pub maxTexture1D: c_int,
    pub maxTexture2D: [c_int; 2],
    pub maxTexture3D: [c_int; 3],
    pub hdpMemFlushCntl: *mut c_uint,
    pub hdpRegFlushCntl: *mut c_uint,
    pub memPitch: usize,
    pub textureAlignment: usize,
    pub texturePitchAlignment: usize,
    pub kernelExecTimeoutEnabled: c_int,
    pub ECCEnabled: c_int,
    pub tccDriver: c_int,
    pub cooperativeMultiDeviceUnmatchedFunc: c_int,
    pub cooperativeMultiDeviceUnmatchedGridDim: c_int,
    pub cooperativeMultiDeviceUnmatchedBlockDim: c_int,
    pub cooperativeMultiDeviceUnmatchedSharedMem: c_int,
    pub isLargeBar: c_int,
    pub asicRevision: c_int,
    pub managedMemory: c_int,
    pub directManagedMemAccessFromHost: c_int,
    pub concurrentManagedAccess: c_int,
    pub pageableMemoryAccess: c_int,
    pub pageableMemoryAccessUsesHostPageTables: c_int,
}

/// Zero-initialised properties: every field of both structs is an integer, a byte array or a pointer, for which
/// all-zero bytes are a valid value (null for the pointers), so a buffer can be handed to the runtime to fill.
macro_rules! zeroed {
    ($t:ty) => {
        impl Default for $t {
            fn default() -> Self {
                // SAFETY: every field is an integer, an array of integers, a struct of integers or a raw pointer;
                // the all-zero pattern is a valid value of each.
                unsafe { std::mem::zeroed() }
            }
        }
    };
}
zeroed!(hipDeviceProp_tR0600);
zeroed!(hipDeviceProp_tR0000);

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    /// The numbers the suite relied on before the structs were written out (computed then by compiling the
    /// headers' structs with clang for x86-64); `tests/rocm63_abi.rs` checks every field against ROCm 6.3.
    #[test]
    fn sizes_and_arch_name_offsets() {
        assert_eq!((size_of::<hipDeviceProp_tR0600>(), offset_of!(hipDeviceProp_tR0600, gcnArchName)), (1472, 1160));
        assert_eq!((size_of::<hipDeviceProp_tR0000>(), offset_of!(hipDeviceProp_tR0000, gcnArchName)), (792, 396));
        assert_eq!((size_of::<hipDeviceArch_t>(), size_of::<hipUUID>()), (4, 16));
        assert!(hipDeviceProp_tR0600::default().hdpMemFlushCntl.is_null());
    }
}
