//! hip-sys's ABI against ROCm 6.3's HIP headers, with no GPU: every field offset of `hipDeviceProp_tR0600` and the
//! values of every enum constant the bindings hold, against the structs and enums compiled into PyPI's hip-python
//! 6.3.3 (`tests/rocm63_probe.py` reads them out); every bound function's parameter and return types against its
//! prototype in hip-python's `chip.pxd`; and `hipDeviceProp_tR0000` against the HIP 5.2 header installed for the
//! tests (ROCm 6.3's R0000 is that struct, field for field); and AMD SMI's structs and statuses (`hip_sys::amdsmi`)
//! against the offsets, sizes and values `gcc` gave for ROCm/amdsmi's `amdsmi.h` of ROCm 6.0 to 6.3 (no AMD SMI
//! header or Python package of those releases is installable here, so they are recorded). A wrong offset, value or
//! parameter fails here.
//!
//! Needs `python3 -m pip install hip-python==6.3.3.540.31` and Debian's `libamdhip64-dev` (both installed by
//! `scripts/install-test-deps.sh`), and a C++ compiler.

use std::collections::BTreeMap;
use std::mem::{offset_of, size_of};
use std::path::{Path, PathBuf};
use std::process::Command;

use hip_sys::device_props::{hipDeviceArch_t, hipDeviceProp_tR0000, hipDeviceProp_tR0600, hipUUID};
use hip_sys::hip_runtime::{
    hipDeviceAttribute_t, hipError_t, hipFunction_attribute, hipMemcpyKind, hipStreamCaptureMode, HipRuntime,
};
use serde_json::Value;

/// The hip-python release whose compiled headers are ROCm 6.3's (6.3.3 = ROCm 6.3.3).
const HIP_PYTHON: &str = "hip-python==6.3.3.540.31";

fn crate_path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// What `rocm63_probe.py` reports, run once per test binary.
fn rocm63() -> &'static Value {
    static REPORT: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    REPORT.get_or_init(|| {
        let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
        let out = Command::new(&python)
            .arg(crate_path("tests/rocm63_probe.py"))
            .output()
            .unwrap_or_else(|e| panic!("cannot run {python}: {e}"));
        assert!(
            out.status.success(),
            "tests/rocm63_probe.py failed; is hip-python installed? `{python} -m pip install {HIP_PYTHON}` \
             (scripts/install-test-deps.sh does it)\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: Value = serde_json::from_slice(&out.stdout).expect("the probe prints JSON");
        assert_eq!(
            (report["hip_version_major"].as_i64(), report["hip_version_minor"].as_i64()),
            (Some(6), Some(3)),
            "hip-python {} was built from other headers than ROCm 6.3's: install {HIP_PYTHON}",
            report["hip_python"]
        );
        report
    })
}

/// `(field, offset)` for each named field of a struct, as Rust lays it out.
macro_rules! offsets {
    ($t:ty; $($f:ident),* $(,)?) => {
        vec![$((stringify!($f), offset_of!($t, $f))),*]
    };
}

fn r0600_offsets() -> Vec<(&'static str, usize)> {
    offsets!(hipDeviceProp_tR0600;
        name, uuid, luid, luidDeviceNodeMask, totalGlobalMem, sharedMemPerBlock, regsPerBlock, warpSize, memPitch,
        maxThreadsPerBlock, maxThreadsDim, maxGridSize, clockRate, totalConstMem, major, minor, textureAlignment,
        texturePitchAlignment, deviceOverlap, multiProcessorCount, kernelExecTimeoutEnabled, integrated,
        canMapHostMemory, computeMode, maxTexture1D, maxTexture1DMipmap, maxTexture1DLinear, maxTexture2D,
        maxTexture2DMipmap, maxTexture2DLinear, maxTexture2DGather, maxTexture3D, maxTexture3DAlt,
        maxTextureCubemap, maxTexture1DLayered, maxTexture2DLayered, maxTextureCubemapLayered, maxSurface1D,
        maxSurface2D, maxSurface3D, maxSurface1DLayered, maxSurface2DLayered, maxSurfaceCubemap,
        maxSurfaceCubemapLayered, surfaceAlignment, concurrentKernels, ECCEnabled, pciBusID, pciDeviceID,
        pciDomainID, tccDriver, asyncEngineCount, unifiedAddressing, memoryClockRate, memoryBusWidth, l2CacheSize,
        persistingL2CacheMaxSize, maxThreadsPerMultiProcessor, streamPrioritiesSupported, globalL1CacheSupported,
        localL1CacheSupported, sharedMemPerMultiprocessor, regsPerMultiprocessor, managedMemory, isMultiGpuBoard,
        multiGpuBoardGroupID, hostNativeAtomicSupported, singleToDoublePrecisionPerfRatio, pageableMemoryAccess,
        concurrentManagedAccess, computePreemptionSupported, canUseHostPointerForRegisteredMem, cooperativeLaunch,
        cooperativeMultiDeviceLaunch, sharedMemPerBlockOptin, pageableMemoryAccessUsesHostPageTables,
        directManagedMemAccessFromHost, maxBlocksPerMultiProcessor, accessPolicyMaxWindowSize,
        reservedSharedMemPerBlock, hostRegisterSupported, sparseHipArraySupported, hostRegisterReadOnlySupported,
        timelineSemaphoreInteropSupported, memoryPoolsSupported, gpuDirectRDMASupported,
        gpuDirectRDMAFlushWritesOptions, gpuDirectRDMAWritesOrdering, memoryPoolSupportedHandleTypes,
        deferredMappingHipArraySupported, ipcEventSupported, clusterLaunch, unifiedFunctionPointers, reserved,
        hipReserved, gcnArchName, maxSharedMemoryPerMultiProcessor, clockInstructionRate, arch, hdpMemFlushCntl,
        hdpRegFlushCntl, cooperativeMultiDeviceUnmatchedFunc, cooperativeMultiDeviceUnmatchedGridDim,
        cooperativeMultiDeviceUnmatchedBlockDim, cooperativeMultiDeviceUnmatchedSharedMem, isLargeBar, asicRevision,
    )
}

fn r0000_offsets() -> Vec<(&'static str, usize)> {
    offsets!(hipDeviceProp_tR0000;
        name, totalGlobalMem, sharedMemPerBlock, regsPerBlock, warpSize, maxThreadsPerBlock, maxThreadsDim,
        maxGridSize, clockRate, memoryClockRate, memoryBusWidth, totalConstMem, major, minor, multiProcessorCount,
        l2CacheSize, maxThreadsPerMultiProcessor, computeMode, clockInstructionRate, arch, concurrentKernels,
        pciDomainID, pciBusID, pciDeviceID, maxSharedMemoryPerMultiProcessor, isMultiGpuBoard, canMapHostMemory,
        gcnArch, gcnArchName, integrated, cooperativeLaunch, cooperativeMultiDeviceLaunch, maxTexture1DLinear,
        maxTexture1D, maxTexture2D, maxTexture3D, hdpMemFlushCntl, hdpRegFlushCntl, memPitch, textureAlignment,
        texturePitchAlignment, kernelExecTimeoutEnabled, ECCEnabled, tccDriver, cooperativeMultiDeviceUnmatchedFunc,
        cooperativeMultiDeviceUnmatchedGridDim, cooperativeMultiDeviceUnmatchedBlockDim,
        cooperativeMultiDeviceUnmatchedSharedMem, isLargeBar, asicRevision, managedMemory,
        directManagedMemAccessFromHost, concurrentManagedAccess, pageableMemoryAccess,
        pageableMemoryAccessUsesHostPageTables,
    )
}

#[test]
fn device_props_r0600_match_rocm63_field_for_field() {
    let probe = &rocm63()["structs"]["hipDeviceProp_tR0600"];
    let want: BTreeMap<String, usize> = probe["fields"]
        .as_object()
        .expect("fields")
        .iter()
        .map(|(k, v)| (k.clone(), v.as_u64().expect("an offset") as usize))
        .collect();
    let ours: BTreeMap<String, usize> = r0600_offsets().into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    let wrong: Vec<String> = want
        .iter()
        .filter(|(k, v)| ours.get(*k) != Some(v))
        .map(|(k, v)| format!("{k}: ROCm 6.3 {v}, hip-sys {:?}", ours.get(k)))
        .collect();
    assert!(wrong.is_empty(), "hipDeviceProp_tR0600 differs from ROCm 6.3:\n{}", wrong.join("\n"));
    let extra: Vec<&String> = ours.keys().filter(|k| !want.contains_key(*k)).collect();
    assert!(extra.is_empty(), "fields ROCm 6.3 does not have: {extra:?}");
    assert_eq!(Some(size_of::<hipDeviceProp_tR0600>() as u64), probe["size"].as_u64());
    let sizes = &rocm63()["structs"];
    assert_eq!(Some(size_of::<hipDeviceArch_t>() as u64), sizes["hipDeviceArch_t"]["size"].as_u64());
    assert_eq!(Some(size_of::<hipUUID>() as u64), sizes["hipUUID"]["size"].as_u64());
}

/// ROCm 6.3's `hipDeviceProp_tR0000` (include/hip/hip_deprecated.h) is HIP 5's `hipDeviceProp_t` unchanged, and
/// hip-python has no binding of it: its layout is compiled here from the HIP 5.2 header the tests install.
#[test]
fn device_props_r0000_match_the_hip5_header_field_for_field() {
    let include = std::env::var("HIP_INCLUDE").unwrap_or_else(|_| "/usr/include".into());
    assert!(
        Path::new(&include).join("hip/hip_runtime_api.h").exists(),
        "{include}/hip/hip_runtime_api.h is missing: apt-get install libamdhip64-dev (scripts/install-test-deps.sh), \
         or set HIP_INCLUDE to a HIP include root"
    );
    let fields = r0000_offsets();
    let mut src =
        String::from("#include <hip/hip_runtime_api.h>\n#include <cstddef>\n#include <cstdio>\nint main() {\n");
    for (f, _) in &fields {
        src.push_str(&format!("  std::printf(\"{f} %zu\\n\", offsetof(hipDeviceProp_t, {f}));\n"));
    }
    src.push_str("  std::printf(\"sizeof %zu\\n\", sizeof(hipDeviceProp_t));\n}\n");
    let dir = std::env::temp_dir().join(format!("hip-sys-r0000-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (cpp, exe) = (dir.join("probe.cpp"), dir.join("probe"));
    std::fs::write(&cpp, src).expect("write probe");
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let status = Command::new(&cxx)
        .args(["-D__HIP_PLATFORM_AMD__", &format!("-I{include}"), "-o"])
        .args([&exe, &cpp])
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C++ compiler {cxx} (set CXX): {e}"));
    assert!(status.success(), "compiling the R0000 probe against {include} failed");
    let out = Command::new(&exe).output().expect("run the probe");
    let _ = std::fs::remove_dir_all(&dir);
    let text = String::from_utf8(out.stdout).expect("ASCII");
    let header: BTreeMap<&str, usize> =
        text.lines().filter_map(|l| l.split_once(' ')).map(|(k, v)| (k, v.parse().expect("a number"))).collect();
    for (f, offset) in &fields {
        assert_eq!(header.get(f), Some(offset), "hipDeviceProp_tR0000.{f}");
    }
    assert_eq!(header.get("sizeof"), Some(&size_of::<hipDeviceProp_tR0000>()));
    // The generated bindings' opaque hipDeviceProp_t (plain hipGetDeviceProperties) is the same struct.
    assert_eq!(size_of::<hip_sys::hip_runtime::hipDeviceProp_t>(), size_of::<hipDeviceProp_tR0000>());
}

/// `(name, value)` of each named constant of a bindgen newtype enum.
macro_rules! values {
    ($t:ident; $($c:ident),* $(,)?) => {
        vec![$((stringify!($c), u64::from($t::$c.0))),*]
    };
}

/// Attribute names of HIP 5.2 that ROCm 6 retired: their numbers are `hipDeviceAttributeUnused1..5` in ROCm 6.3, so
/// the runtime no longer answers them. The suite must not use them (it reads the architecture name from the
/// properties struct instead).
const RETIRED_IN_ROCM6: [(&str, &str); 5] = [
    ("hipDeviceAttributeName", "hipDeviceAttributeUnused1"),
    ("hipDeviceAttributeUuid", "hipDeviceAttributeUnused2"),
    ("hipDeviceAttributeArch", "hipDeviceAttributeUnused3"),
    ("hipDeviceAttributeGcnArch", "hipDeviceAttributeUnused4"),
    ("hipDeviceAttributeGcnArchName", "hipDeviceAttributeUnused5"),
];

#[test]
fn every_enum_constant_has_its_rocm63_value() {
    let enums: [(&str, Vec<(&str, u64)>); 5] = [
        (
            "hipDeviceAttribute_t",
            values!(hipDeviceAttribute_t;
                hipDeviceAttributeCudaCompatibleBegin, hipDeviceAttributeEccEnabled,
                hipDeviceAttributeAccessPolicyMaxWindowSize, hipDeviceAttributeAsyncEngineCount,
                hipDeviceAttributeCanMapHostMemory, hipDeviceAttributeCanUseHostPointerForRegisteredMem,
                hipDeviceAttributeClockRate, hipDeviceAttributeComputeMode,
                hipDeviceAttributeComputePreemptionSupported, hipDeviceAttributeConcurrentKernels,
                hipDeviceAttributeConcurrentManagedAccess, hipDeviceAttributeCooperativeLaunch,
                hipDeviceAttributeCooperativeMultiDeviceLaunch, hipDeviceAttributeDeviceOverlap,
                hipDeviceAttributeDirectManagedMemAccessFromHost, hipDeviceAttributeGlobalL1CacheSupported,
                hipDeviceAttributeHostNativeAtomicSupported, hipDeviceAttributeIntegrated,
                hipDeviceAttributeIsMultiGpuBoard, hipDeviceAttributeKernelExecTimeout, hipDeviceAttributeL2CacheSize,
                hipDeviceAttributeLocalL1CacheSupported, hipDeviceAttributeLuid, hipDeviceAttributeLuidDeviceNodeMask,
                hipDeviceAttributeComputeCapabilityMajor, hipDeviceAttributeManagedMemory,
                hipDeviceAttributeMaxBlocksPerMultiProcessor, hipDeviceAttributeMaxBlockDimX,
                hipDeviceAttributeMaxBlockDimY, hipDeviceAttributeMaxBlockDimZ, hipDeviceAttributeMaxGridDimX,
                hipDeviceAttributeMaxGridDimY, hipDeviceAttributeMaxGridDimZ, hipDeviceAttributeMaxSurface1D,
                hipDeviceAttributeMaxSurface1DLayered, hipDeviceAttributeMaxSurface2D,
                hipDeviceAttributeMaxSurface2DLayered, hipDeviceAttributeMaxSurface3D,
                hipDeviceAttributeMaxSurfaceCubemap, hipDeviceAttributeMaxSurfaceCubemapLayered,
                hipDeviceAttributeMaxTexture1DWidth, hipDeviceAttributeMaxTexture1DLayered,
                hipDeviceAttributeMaxTexture1DLinear, hipDeviceAttributeMaxTexture1DMipmap,
                hipDeviceAttributeMaxTexture2DWidth, hipDeviceAttributeMaxTexture2DHeight,
                hipDeviceAttributeMaxTexture2DGather, hipDeviceAttributeMaxTexture2DLayered,
                hipDeviceAttributeMaxTexture2DLinear, hipDeviceAttributeMaxTexture2DMipmap,
                hipDeviceAttributeMaxTexture3DWidth, hipDeviceAttributeMaxTexture3DHeight,
                hipDeviceAttributeMaxTexture3DDepth, hipDeviceAttributeMaxTexture3DAlt,
                hipDeviceAttributeMaxTextureCubemap, hipDeviceAttributeMaxTextureCubemapLayered,
                hipDeviceAttributeMaxThreadsDim, hipDeviceAttributeMaxThreadsPerBlock,
                hipDeviceAttributeMaxThreadsPerMultiProcessor, hipDeviceAttributeMaxPitch,
                hipDeviceAttributeMemoryBusWidth, hipDeviceAttributeMemoryClockRate,
                hipDeviceAttributeComputeCapabilityMinor, hipDeviceAttributeMultiGpuBoardGroupID,
                hipDeviceAttributeMultiprocessorCount, hipDeviceAttributeName, hipDeviceAttributePageableMemoryAccess,
                hipDeviceAttributePageableMemoryAccessUsesHostPageTables, hipDeviceAttributePciBusId,
                hipDeviceAttributePciDeviceId, hipDeviceAttributePciDomainID,
                hipDeviceAttributePersistingL2CacheMaxSize, hipDeviceAttributeMaxRegistersPerBlock,
                hipDeviceAttributeMaxRegistersPerMultiprocessor, hipDeviceAttributeReservedSharedMemPerBlock,
                hipDeviceAttributeMaxSharedMemoryPerBlock, hipDeviceAttributeSharedMemPerBlockOptin,
                hipDeviceAttributeSharedMemPerMultiprocessor, hipDeviceAttributeSingleToDoublePrecisionPerfRatio,
                hipDeviceAttributeStreamPrioritiesSupported, hipDeviceAttributeSurfaceAlignment,
                hipDeviceAttributeTccDriver, hipDeviceAttributeTextureAlignment,
                hipDeviceAttributeTexturePitchAlignment, hipDeviceAttributeTotalConstantMemory,
                hipDeviceAttributeTotalGlobalMem, hipDeviceAttributeUnifiedAddressing, hipDeviceAttributeUuid,
                hipDeviceAttributeWarpSize, hipDeviceAttributeMemoryPoolsSupported, hipDeviceAttributeCudaCompatibleEnd,
                hipDeviceAttributeAmdSpecificBegin, hipDeviceAttributeClockInstructionRate, hipDeviceAttributeArch,
                hipDeviceAttributeMaxSharedMemoryPerMultiprocessor, hipDeviceAttributeGcnArch,
                hipDeviceAttributeGcnArchName, hipDeviceAttributeHdpMemFlushCntl, hipDeviceAttributeHdpRegFlushCntl,
                hipDeviceAttributeCooperativeMultiDeviceUnmatchedFunc,
                hipDeviceAttributeCooperativeMultiDeviceUnmatchedGridDim,
                hipDeviceAttributeCooperativeMultiDeviceUnmatchedBlockDim,
                hipDeviceAttributeCooperativeMultiDeviceUnmatchedSharedMem, hipDeviceAttributeIsLargeBar,
                hipDeviceAttributeAsicRevision, hipDeviceAttributeCanUseStreamWaitValue, hipDeviceAttributeImageSupport,
                hipDeviceAttributePhysicalMultiProcessorCount, hipDeviceAttributeFineGrainSupport,
                hipDeviceAttributeAmdSpecificEnd, hipDeviceAttributeVendorSpecificBegin,
            ),
        ),
        (
            "hipError_t",
            values!(hipError_t;
                hipSuccess, hipErrorInvalidValue, hipErrorOutOfMemory, hipErrorMemoryAllocation, hipErrorNotInitialized,
                hipErrorInitializationError, hipErrorDeinitialized, hipErrorProfilerDisabled,
                hipErrorProfilerNotInitialized, hipErrorProfilerAlreadyStarted, hipErrorProfilerAlreadyStopped,
                hipErrorInvalidConfiguration, hipErrorInvalidPitchValue, hipErrorInvalidSymbol,
                hipErrorInvalidDevicePointer, hipErrorInvalidMemcpyDirection, hipErrorInsufficientDriver,
                hipErrorMissingConfiguration, hipErrorPriorLaunchFailure, hipErrorInvalidDeviceFunction,
                hipErrorNoDevice, hipErrorInvalidDevice, hipErrorInvalidImage, hipErrorInvalidContext,
                hipErrorContextAlreadyCurrent, hipErrorMapFailed, hipErrorMapBufferObjectFailed, hipErrorUnmapFailed,
                hipErrorArrayIsMapped, hipErrorAlreadyMapped, hipErrorNoBinaryForGpu, hipErrorAlreadyAcquired,
                hipErrorNotMapped, hipErrorNotMappedAsArray, hipErrorNotMappedAsPointer, hipErrorECCNotCorrectable,
                hipErrorUnsupportedLimit, hipErrorContextAlreadyInUse, hipErrorPeerAccessUnsupported,
                hipErrorInvalidKernelFile, hipErrorInvalidGraphicsContext, hipErrorInvalidSource, hipErrorFileNotFound,
                hipErrorSharedObjectSymbolNotFound, hipErrorSharedObjectInitFailed, hipErrorOperatingSystem,
                hipErrorInvalidHandle, hipErrorInvalidResourceHandle, hipErrorIllegalState, hipErrorNotFound,
                hipErrorNotReady, hipErrorIllegalAddress, hipErrorLaunchOutOfResources, hipErrorLaunchTimeOut,
                hipErrorPeerAccessAlreadyEnabled, hipErrorPeerAccessNotEnabled, hipErrorSetOnActiveProcess,
                hipErrorContextIsDestroyed, hipErrorAssert, hipErrorHostMemoryAlreadyRegistered,
                hipErrorHostMemoryNotRegistered, hipErrorLaunchFailure, hipErrorCooperativeLaunchTooLarge,
                hipErrorNotSupported, hipErrorStreamCaptureUnsupported, hipErrorStreamCaptureInvalidated,
                hipErrorStreamCaptureMerge, hipErrorStreamCaptureUnmatched, hipErrorStreamCaptureUnjoined,
                hipErrorStreamCaptureIsolation, hipErrorStreamCaptureImplicit, hipErrorCapturedEvent,
                hipErrorStreamCaptureWrongThread, hipErrorGraphExecUpdateFailure, hipErrorUnknown,
                hipErrorRuntimeMemory, hipErrorRuntimeOther, hipErrorTbd,
            ),
        ),
        (
            "hipFunction_attribute",
            values!(hipFunction_attribute;
                HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                HIP_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, HIP_FUNC_ATTRIBUTE_NUM_REGS,
                HIP_FUNC_ATTRIBUTE_PTX_VERSION, HIP_FUNC_ATTRIBUTE_BINARY_VERSION, HIP_FUNC_ATTRIBUTE_CACHE_MODE_CA,
                HIP_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, HIP_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
                HIP_FUNC_ATTRIBUTE_MAX,
            ),
        ),
        (
            "hipMemcpyKind",
            values!(hipMemcpyKind;
                hipMemcpyHostToHost, hipMemcpyHostToDevice, hipMemcpyDeviceToHost, hipMemcpyDeviceToDevice,
                hipMemcpyDefault,
            ),
        ),
        (
            "hipStreamCaptureMode",
            values!(hipStreamCaptureMode;
                hipStreamCaptureModeGlobal, hipStreamCaptureModeThreadLocal, hipStreamCaptureModeRelaxed,
            ),
        ),
    ];
    let mut wrong = Vec::new();
    for (name, constants) in &enums {
        let rocm = &rocm63()["enums"][name];
        for (c, value) in constants {
            let retired = RETIRED_IN_ROCM6.iter().find(|(old, _)| old == c);
            let (looked_up, want) = match retired {
                Some((_, unused)) => (*unused, rocm[unused].as_u64()),
                None => (*c, rocm[c].as_u64()),
            };
            if want != Some(*value) {
                wrong.push(format!("{name}::{c} = {value}, ROCm 6.3 {looked_up} = {want:?}"));
            }
        }
    }
    assert!(wrong.is_empty(), "enum values differ from ROCm 6.3:\n{}", wrong.join("\n"));
}

/// A C type from `chip.pxd`, normalised to how Rust's `type_name` prints the binding's type (without paths and
/// `const`, which does not change the ABI): `unsigned long` is `size_t` on x86-64 Linux, the handle typedefs are
/// pointers to the opaque structs bindgen names.
fn c_type(text: &str) -> String {
    let text = text.replace("const ", "").replace('*', " * ");
    let words: Vec<&str> = text.split_whitespace().collect();
    let stars = words.iter().filter(|w| **w == "*").count();
    let base = words.iter().filter(|w| **w != "*").copied().collect::<Vec<_>>().join(" ");
    let base = match base.as_str() {
        "int" => "i32",
        "unsigned int" => "u32",
        "unsigned long" => "usize",
        "unsigned long long" => "u64",
        "char" => "i8",
        "unsigned char" => "u8",
        "float" => "f32",
        "void" => "c_void",
        "hipDevice_t" => "i32",
        "hipStream_t" => "*mut ihipStream_t",
        "hipModule_t" => "*mut ihipModule_t",
        "hipFunction_t" => "*mut ihipModuleSymbol_t",
        "hipEvent_t" => "*mut ihipEvent_t",
        "hipGraph_t" => "*mut ihipGraph",
        "hipGraphExec_t" => "*mut hipGraphExec",
        "hipGraphNode_t" => "*mut hipGraphNode",
        "hipDeviceptr_t" => "*mut c_void",
        // hip-sys declares the R0600 entry point with void* (its struct is written out in device_props.rs and
        // passed as a buffer): the pointee type does not change the ABI.
        "hipDeviceProp_t" => "c_void",
        other => other,
    };
    format!("{}{base}", "*mut ".repeat(stars))
}

/// A pxd parameter without its name: `void ** kernelParams` -> `void **`.
fn strip_name(param: &str) -> &str {
    let param = param.trim();
    match param.rfind([' ', '*']) {
        Some(i) => &param[..=i],
        None => param,
    }
}

/// The binding's function type as `type_name` prints it, reduced like [`c_type`]: no paths, no `const`.
fn rust_signature<F>(_field: impl Fn(&HipRuntime) -> &Result<F, libloading::Error>) -> (Vec<String>, String) {
    let text = std::any::type_name::<F>();
    let strip = |t: &str| {
        let t = t.trim().replace("*const ", "*mut ");
        t.split(' ').map(|w| w.rsplit("::").next().unwrap_or(w).to_string()).collect::<Vec<_>>().join(" ")
    };
    let open = text.find('(').expect("a fn type");
    let close = text.rfind(')').expect("a fn type");
    let params: Vec<String> = text[open + 1..close].split(", ").filter(|p| !p.is_empty()).map(strip).collect();
    let ret = text[close + 1..].trim().trim_start_matches("->").trim();
    (params, strip(ret))
}

macro_rules! signatures {
    ($($f:ident),* $(,)?) => {
        vec![$((stringify!($f), rust_signature(|rt: &HipRuntime| &rt.$f))),*]
    };
}

#[test]
fn every_bound_function_has_its_rocm63_prototype() {
    let pxd = &rocm63()["functions"];
    let ours = signatures!(
        hipInit,
        hipDriverGetVersion,
        hipRuntimeGetVersion,
        hipDeviceGetName,
        hipDeviceGetPCIBusId,
        hipDeviceTotalMem,
        hipDeviceSynchronize,
        hipSetDevice,
        hipGetDeviceCount,
        hipDeviceGetAttribute,
        hipGetDeviceProperties,
        hipGetLastError,
        hipGetErrorName,
        hipGetErrorString,
        hipStreamCreate,
        hipStreamDestroy,
        hipStreamSynchronize,
        hipEventCreate,
        hipEventRecord,
        hipEventDestroy,
        hipEventSynchronize,
        hipEventElapsedTime,
        hipMalloc,
        hipFree,
        hipMemcpy,
        hipMemcpyHtoD,
        hipMemcpyDtoH,
        hipMemcpyDtoDAsync,
        hipMemcpyAsync,
        hipMemset,
        hipMemsetD8Async,
        hipMemsetAsync,
        hipMemGetInfo,
        hipModuleUnload,
        hipModuleGetFunction,
        hipFuncGetAttribute,
        hipModuleLoadData,
        hipModuleLaunchKernel,
        hipModuleOccupancyMaxActiveBlocksPerMultiprocessor,
        hipStreamBeginCapture,
        hipStreamEndCapture,
        hipGraphDestroy,
        hipGraphInstantiate,
        hipGraphLaunch,
        hipGraphExecDestroy,
        hipModuleLaunchCooperativeKernel,
        hipGetDevicePropertiesR0600,
        hipGetDevicePropertiesR0000,
        hipGraphUpload,
    );
    let mut wrong = Vec::new();
    for (name, (params, ret)) in &ours {
        // ROCm 6.3's header defines hipGetDeviceProperties as hipGetDevicePropertiesR0600, so the pxd has the
        // R0600 prototype under the plain name; the plain symbol itself is the R0000 entry point, which the pxd
        // does not declare (checked below by shape).
        let proto_name = match *name {
            "hipGetDevicePropertiesR0600" => "hipGetDeviceProperties",
            "hipGetDeviceProperties" | "hipGetDevicePropertiesR0000" => {
                assert_eq!((params.len(), params[1].as_str(), ret.as_str()), (2, "i32", "hipError_t"), "{name}");
                continue;
            }
            other => other,
        };
        let Some(proto) = pxd.get(proto_name) else {
            wrong.push(format!("{name}: not in ROCm 6.3's API"));
            continue;
        };
        let want_params: Vec<String> = proto["params"]
            .as_array()
            .expect("params")
            .iter()
            .map(|p| c_type(strip_name(p.as_str().expect("a string"))))
            .collect();
        let want_ret = c_type(proto["ret"].as_str().expect("ret"));
        if (&want_params, &want_ret) != (params, ret) {
            wrong.push(format!(
                "{name}: ROCm 6.3 ({}) -> {want_ret}; hip-sys ({}) -> {ret}",
                want_params.join(", "),
                params.join(", ")
            ));
        }
    }
    assert!(wrong.is_empty(), "prototypes differ from ROCm 6.3:\n{}", wrong.join("\n"));
}

/// The HIP-over-CUDA test runtime (`hip-test-runtime/hip_abi.h`) pins every field of both layouts with a
/// `static_assert(offsetof(...) == N)`, so its build fails if its structs drift from those numbers; here the numbers
/// themselves are compared with hip-sys's structs (checked against ROCm 6.3 above), closing the chain.
#[test]
fn the_test_runtime_fills_the_same_layouts() {
    let header = std::fs::read_to_string(crate_path("../hip-test-runtime/hip_abi.h")).expect("hip_abi.h");
    let asserted = |layout: &str| -> BTreeMap<String, usize> {
        let prefix = format!("static_assert(offsetof(hipDeviceProp_t{layout}, ");
        header
            .lines()
            .filter_map(|l| l.trim().strip_prefix(prefix.as_str()))
            .map(|rest| {
                let (field, rest) = rest.split_once(')').expect("offsetof(T, field)");
                let number = rest.trim_start_matches(" == ").split(',').next().expect("== N,");
                (field.to_string(), number.parse().expect("a number"))
            })
            .collect()
    };
    for (layout, ours) in [("R0600", r0600_offsets()), ("R0000", r0000_offsets())] {
        let theirs = asserted(layout);
        let ours: BTreeMap<String, usize> = ours.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        assert_eq!(theirs, ours, "hip_abi.h's {layout} asserts differ from hip-sys's struct");
    }
    let size = |layout: &str| {
        let prefix = format!("static_assert(sizeof(hipDeviceProp_t{layout}) == ");
        header.lines().find_map(|l| l.trim().strip_prefix(prefix.as_str())?.split(',').next()?.parse::<usize>().ok())
    };
    assert_eq!(size("R0600"), Some(size_of::<hipDeviceProp_tR0600>()));
    assert_eq!(size("R0000"), Some(size_of::<hipDeviceProp_tR0000>()));
}

/// AMD SMI's structs as `gcc` lays them out from `amdsmi.h`, identically in ROCm/amdsmi tags rocm-6.0.0 (23.4),
/// rocm-6.1.0 and rocm-6.2.0 and commit 0ceca28 (24.7.0, ROCm 6.3): every field of `amdsmi_gpu_metrics_t` that the
/// suite reads, the size of its declared prefix, and the sizes and read offsets of the structs passed by pointer.
#[test]
fn amdsmi_structs_match_amd_smi_of_rocm_6_0_to_6_3() {
    use hip_sys::amdsmi::{amdsmi_clk_info_t, amdsmi_gpu_metrics_t as M, amdsmi_power_cap_info_t, amdsmi_version_t};
    let metrics = offsets!(M;
        structure_size, format_revision, content_revision, temperature_edge, temperature_hotspot,
        average_socket_power, energy_accumulator, current_gfxclk, current_uclk, throttle_status,
        indep_throttle_status, current_socket_power, current_gfxclks,
    );
    let gcc = [0, 2, 3, 4, 6, 22, 24, 54, 58, 68, 112, 120, 312];
    let wrong: Vec<String> = metrics
        .iter()
        .zip(gcc)
        .filter(|((_, ours), c)| ours != c)
        .map(|((field, ours), c)| format!("{field}: amdsmi.h {c}, hip-sys {ours}"))
        .collect();
    assert!(wrong.is_empty(), "amdsmi_gpu_metrics_t differs from AMD SMI 23.4-24.7:\n{}", wrong.join("\n"));
    // The prefix ends with current_gfxclks[8]; 23.4's struct goes on with current_socclks, current_vclk0s and
    // current_dclk0s (4 each) to 352 bytes.
    assert_eq!(size_of::<M>(), 312 + 16);
    assert_eq!((size_of::<amdsmi_clk_info_t>(), offset_of!(amdsmi_clk_info_t, max_clk)), (32, 8));
    assert_eq!((size_of::<amdsmi_power_cap_info_t>(), offset_of!(amdsmi_power_cap_info_t, power_cap)), (64, 0));
    assert_eq!((size_of::<amdsmi_version_t>(), offset_of!(amdsmi_version_t, year)), (24, 0));
    assert_eq!(offset_of!(amdsmi_version_t, release), 12);
}

/// AMD SMI's status values and names (`amdsmi_status_t`, `amdsmi.h` 24.7; 23.4's are a subset with the same values),
/// and the enum and flag values passed.
#[test]
fn amdsmi_statuses_and_flags_have_their_header_values() {
    use hip_sys::amdsmi::{
        amdsmi_status_name, AMDSMI_CLK_TYPE_GFX, AMDSMI_CLK_TYPE_MEM, AMDSMI_INIT_AMD_GPUS, AMDSMI_STATUSES,
        AMDSMI_STATUS_SUCCESS,
    };
    let header = [
        (0, "SUCCESS"),
        (1, "INVAL"),
        (2, "NOT_SUPPORTED"),
        (3, "NOT_YET_IMPLEMENTED"),
        (4, "FAIL_LOAD_MODULE"),
        (5, "FAIL_LOAD_SYMBOL"),
        (6, "DRM_ERROR"),
        (7, "API_FAILED"),
        (8, "TIMEOUT"),
        (9, "RETRY"),
        (10, "NO_PERM"),
        (11, "INTERRUPT"),
        (12, "IO"),
        (13, "ADDRESS_FAULT"),
        (14, "FILE_ERROR"),
        (15, "OUT_OF_RESOURCES"),
        (16, "INTERNAL_EXCEPTION"),
        (17, "INPUT_OUT_OF_BOUNDS"),
        (18, "INIT_ERROR"),
        (19, "REFCOUNT_OVERFLOW"),
        (30, "BUSY"),
        (31, "NOT_FOUND"),
        (32, "NOT_INIT"),
        (33, "NO_SLOT"),
        (40, "NO_DATA"),
        (41, "INSUFFICIENT_SIZE"),
        (42, "UNEXPECTED_SIZE"),
        (43, "UNEXPECTED_DATA"),
        (0xFFFF_FFFE, "MAP_ERROR"),
        (0xFFFF_FFFF, "UNKNOWN_ERROR"),
    ];
    let ours: Vec<(u32, String)> = AMDSMI_STATUSES.iter().map(|(v, n)| (*v, n.to_string())).collect();
    let want: Vec<(u32, String)> = header.iter().map(|(v, n)| (*v, format!("AMDSMI_STATUS_{n}"))).collect();
    assert_eq!(ours, want);
    assert_eq!(amdsmi_status_name(2), Some("AMDSMI_STATUS_NOT_SUPPORTED"));
    assert_eq!(amdsmi_status_name(77), None);
    assert_eq!(AMDSMI_STATUS_SUCCESS, 0);
    assert_eq!((AMDSMI_INIT_AMD_GPUS, AMDSMI_CLK_TYPE_GFX, AMDSMI_CLK_TYPE_MEM), (2, 0, 4));
}
