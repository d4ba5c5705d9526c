//! Result layer over `hip-sys`: each HIP call the suite makes, wrapped once so it returns
//! `Result<_, device::Error>` with the runtime's own name and text for a failing code.
//!
//! The ROCm 5 vs 6 differences are handled here, found at run time from `hipRuntimeGetVersion` and from which
//! symbols the loaded library exports:
//! - `hipDeviceProp_t` changed layout in ROCm 6; see [`props_layouts`] for how `gcnArchName` is read.
//! - `hipModuleLaunchCooperativeKernel` exists only from ROCm 5.5; see [`Hip::has_cooperative_launch`].
//! - The `hipDeviceAttribute_t` values the suite uses are the same in HIP 5.2 and ROCm 6.0-6.3 (checked against
//!   ROCm/HIP `include/hip/hip_runtime_api.h` at rocm-6.0.0 and the 6.3 head; pinned by a test below), so they need
//!   no switch. Some are answered only by ROCm 6 (registers per CU, opt-in LDS): [`Hip::attribute_opt`].
//!
//! Functions that take raw handles or device addresses are `unsafe`: the safe layer (`mod.rs`) owns the handles
//! and checks sizes before calling them.

use std::ffi::{c_void, CStr, CString};
use std::fmt;
use std::mem::{offset_of, size_of};
use std::os::raw::{c_char, c_int};

use hip_sys::device_props::{hipDeviceProp_tR0000, hipDeviceProp_tR0600};
use hip_sys::hip_runtime::{
    hipDeviceAttribute_t, hipDeviceProp_t, hipError_t, hipEvent_t, hipFunction_attribute, hipFunction_t,
    hipGraphExec_t, hipGraph_t, hipMemcpyKind, hipModule_t, hipStreamCaptureMode, hipStream_t, HipRuntime,
};
use hip_sys::loader::{self, LoadError};

use crate::device::{Error, LaunchConfig, Result};

/// The runtime's name in messages.
pub(super) const RUNTIME: &str = "HIP";
/// What to do when no HIP runtime loads.
pub(super) const RUNTIME_HINT: &str = "load the rocm module (module load rocm) or set ROCM_PATH";
/// What to do when the loaded HIP runtime lacks a function the suite calls.
const SYMBOL_HINT: &str =
    "this HIP runtime lacks a function the suite calls: load a newer rocm module (module load rocm) or set ROCM_PATH";
/// What to do when the runtime loads but sees no GPU.
pub(super) const NO_DEVICE_HINT: &str = ": run on a GPU node (Slurm: --gpus-per-node) and check that \
     ROCR_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES do not hide the GPUs";

/// What to do when the HIP-over-CUDA test runtime sees no GPU.
const TEST_RUNTIME_HINT: &str = "the HIP over CUDA test runtime (ROCM_PATH points at it) needs an NVIDIA GPU and its \
     driver: run on an NVIDIA node, or unset ROCM_PATH to use ROCm";

/// Maps the loader's failure to the suite's error, keeping every candidate and its reason.
pub(super) fn not_found(e: &LoadError) -> Error {
    Error::RuntimeNotFound { runtime: RUNTIME, hint: RUNTIME_HINT, tried: e.tried.clone() }
}

/// A HIP version as HIP encodes it: `major * 10_000_000 + minor * 100_000 + patch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct HipVersion {
    /// Major, which is also the ROCm major (5 on Debian 12, 6 on LUMI).
    pub major: u32,
    /// Minor, which follows the ROCm minor.
    pub minor: u32,
    /// Patch: a build number, e.g. 21153.
    pub patch: u32,
}

impl HipVersion {
    /// Splits the number `hipRuntimeGetVersion` / `hipDriverGetVersion` return. `None` for a negative number,
    /// which no release returns.
    pub fn from_raw(raw: i32) -> Option<HipVersion> {
        let raw = u32::try_from(raw).ok()?;
        Some(HipVersion { major: raw / 10_000_000, minor: raw % 10_000_000 / 100_000, patch: raw % 100_000 })
    }
}

impl fmt::Display for HipVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// Where one `hipGetDeviceProperties` entry point writes `gcnArchName`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PropsLayout {
    /// The exported symbol.
    pub symbol: &'static str,
    /// Byte offset of `char gcnArchName[256]` in the struct it fills.
    pub arch_name_offset: usize,
    /// Size of that struct in bytes (for the record; the buffer passed is [`PROPS_BUFFER_BYTES`]).
    pub struct_bytes: usize,
}

/// ROCm 6's `hipDeviceProp_tR0600` (ROCm/HIP `include/hip/hip_runtime_api.h`, identical in 6.0-6.3), as hip-sys
/// writes it out and checks it against ROCm 6.3 (`hip-sys/tests/rocm63_abi.rs`): `gcnArchName` at byte 1160 of 1472.
pub(super) const PROPS_R0600: PropsLayout = PropsLayout {
    symbol: "hipGetDevicePropertiesR0600",
    arch_name_offset: offset_of!(hipDeviceProp_tR0600, gcnArchName),
    struct_bytes: size_of::<hipDeviceProp_tR0600>(),
};
/// The pre-6 layout under its ROCm 6 name `hipDeviceProp_tR0000` (ROCm/HIP `include/hip/hip_deprecated.h`),
/// field for field the same as HIP 5.2's `hipDeviceProp_t`: `gcnArchName` at byte 396 of 792.
pub(super) const PROPS_R0000: PropsLayout = PropsLayout {
    symbol: "hipGetDevicePropertiesR0000",
    arch_name_offset: offset_of!(hipDeviceProp_tR0000, gcnArchName),
    struct_bytes: size_of::<hipDeviceProp_tR0000>(),
};
/// Plain `hipGetDeviceProperties`: the HIP 5 layout in HIP 5, and still the R0000 layout in ROCm 6, which keeps the
/// old symbol for binaries built against ROCm 5 (ROCm/clr `hipamd/src/hip_device.cpp`: it forwards to
/// `hipGetDevicePropertiesR0000`).
pub(super) const PROPS_PLAIN: PropsLayout = PropsLayout { symbol: "hipGetDeviceProperties", ..PROPS_R0000 };

/// The zeroed buffer handed to `hipGetDeviceProperties*`: over five times the largest known layout, so a release
/// that grows the struct still writes inside it.
pub(super) const PROPS_BUFFER_BYTES: usize = 8192;
const _: () = assert!(PROPS_BUFFER_BYTES >= 4 * PROPS_R0600.struct_bytes && PROPS_BUFFER_BYTES.is_multiple_of(8));

/// The entry points to try for `gcnArchName`, best first, given the runtime's major version and which symbols it
/// exports. From ROCm 6 the R0600 layout is the maintained one (R0000 is deprecated and may go); before 6 only the
/// plain symbol exists. Each candidate's answer is validated (must start with `gfx`), so a wrong guess falls
/// through to the next rather than returning garbage.
pub(super) fn props_layouts(runtime_major: u32, exports: impl Fn(&str) -> bool) -> Vec<PropsLayout> {
    let order: &[PropsLayout] =
        if runtime_major >= 6 { &[PROPS_R0600, PROPS_R0000, PROPS_PLAIN] } else { &[PROPS_PLAIN, PROPS_R0000] };
    order.iter().copied().filter(|layout| exports(layout.symbol)).collect()
}

/// Reads the NUL-terminated `gcnArchName` at `offset` of a filled properties buffer, if it looks like one
/// (`gfx` followed by printable ASCII, e.g. `gfx90a:sramecc+:xnack-`). The HIP-over-CUDA test runtime fills it with
/// the CUDA architecture (`sm_90`), which is accepted only from it (`cuda_arch`): no AMD runtime answers that.
pub(super) fn arch_name_at(buffer: &[u8], offset: usize, cuda_arch: bool) -> Option<String> {
    let field = buffer.get(offset..)?;
    let field = &field[..field.len().min(256)];
    let end = field.iter().position(|&b| b == 0)?;
    let name = std::str::from_utf8(&field[..end]).ok()?;
    let prefix_ok = name.starts_with("gfx") || (cuda_arch && name.starts_with("sm_"));
    (prefix_ok && name.bytes().all(|b| b.is_ascii_graphic())).then(|| name.to_string())
}

/// Whether a `hipModuleLoadData` failure means the code object itself is unusable on this device (wrong
/// architecture, not an image, corrupt), as opposed to a runtime failure.
pub(super) fn is_bad_code_object(code: hipError_t) -> bool {
    [
        hipError_t::hipErrorInvalidImage,
        hipError_t::hipErrorNoBinaryForGpu,
        hipError_t::hipErrorInvalidKernelFile,
        hipError_t::hipErrorSharedObjectInitFailed,
        hipError_t::hipErrorSharedObjectSymbolNotFound,
        hipError_t::hipErrorInvalidSource,
    ]
    .contains(&code)
}

/// Calls the HIP function `$api` of the loaded table with the arguments, naming it once (cudarc's `result` layer):
/// a symbol this runtime lacks becomes [`Error::RuntimeNotFound`] naming it, a status other than `hipSuccess`
/// [`Error::Api`] through [`Hip::check`]. The call itself is unsafe, so the macro is used inside an `unsafe` block
/// whose `SAFETY:` comment covers the arguments.
macro_rules! hip_call {
    ($hip:expr, $api:ident($($arg:expr),* $(,)?)) => {{
        let hip: &Hip = &$hip;
        match hip.sym(&hip.rt().$api, stringify!($api)) {
            Ok(f) => hip.check(stringify!($api), f($($arg),*)),
            Err(e) => Err(e),
        }
    }};
}

/// Whether an [`Error::Api`] code is the HIP status `want`.
pub(super) fn is_code(code: i64, want: hipError_t) -> bool {
    code == i64::from(want.0)
}

/// The loaded HIP runtime. Cheap to copy; lives for the process.
#[derive(Clone, Copy)]
pub(super) struct Hip {
    lib: &'static loader::Hip,
}

impl Hip {
    /// Loads the runtime (once per process) or says where it looked.
    pub fn load() -> Result<Hip> {
        loader::hip().map(|lib| Hip { lib }).map_err(not_found)
    }

    /// Where the library was loaded from.
    pub fn library(&self) -> String {
        self.lib.path.display().to_string()
    }

    /// The HIP-over-CUDA test runtime's description of itself (its path, the CUDA driver under it), or `None` for a
    /// real HIP runtime.
    pub fn test_runtime(&self) -> Option<&'static str> {
        self.lib.test_runtime.as_deref()
    }

    pub(super) fn rt(&self) -> &'static HipRuntime {
        &self.lib.runtime
    }

    /// One entry of the function table, or an error naming the missing symbol and the library that lacks it.
    pub(super) fn sym<'a, F, E: fmt::Display>(
        &self,
        entry: &'a std::result::Result<F, E>,
        api: &'static str,
    ) -> Result<&'a F> {
        entry.as_ref().map_err(|e| Error::RuntimeNotFound {
            runtime: RUNTIME,
            hint: SYMBOL_HINT,
            tried: vec![(self.library(), format!("loaded, but it does not export {api}: {e}"))],
        })
    }

    /// The runtime's name for a code, e.g. `hipErrorNoDevice`.
    pub fn error_name(&self, code: hipError_t) -> String {
        self.message(&self.rt().hipGetErrorName, code).unwrap_or_else(|| format!("hipError {}", code.0))
    }

    /// The runtime's description of a code (HIP 5.2 returns the name again).
    pub fn error_string(&self, code: hipError_t) -> String {
        self.message(&self.rt().hipGetErrorString, code).unwrap_or_else(|| "no description available".to_string())
    }

    fn message<E>(
        &self,
        entry: &std::result::Result<unsafe extern "C" fn(hipError_t) -> *const c_char, E>,
        code: hipError_t,
    ) -> Option<String> {
        let f = entry.as_ref().ok()?;
        // SAFETY: hipGetErrorName/String take any code and return a pointer to a static NUL-terminated string
        // (the text for unknown codes is "hipErrorUnknown"); null is checked below.
        let text = unsafe { f(code) };
        if text.is_null() {
            return None;
        }
        // SAFETY: non-null, NUL-terminated and static, as above.
        Some(unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned())
    }

    /// The `Error::Api` for a failing code, with the runtime's name and text.
    pub fn api_error(&self, api: &'static str, code: hipError_t) -> Error {
        Error::Api { api, code: i64::from(code.0), code_name: self.error_name(code), text: self.error_string(code) }
    }

    /// The one place a HIP status becomes a `Result`: `Ok` for `hipSuccess`, else [`Error::Api`] with the runtime's
    /// name and text for the code. Callers that treat a code specially match on the error's `code`.
    pub(super) fn check(&self, api: &'static str, code: hipError_t) -> Result<()> {
        if code == hipError_t::hipSuccess {
            Ok(())
        } else {
            Err(self.api_error(api, code))
        }
    }

    /// `hipInit(0)`. Not needed before other calls (HIP initialises lazily), but it reports a broken install early.
    pub fn init(&self) -> Result<()> {
        // SAFETY: plain call; flags must be 0.
        unsafe { hip_call!(self, hipInit(0)) }
    }

    /// `hipRuntimeGetVersion`.
    pub fn runtime_version(&self) -> Result<HipVersion> {
        let mut raw: c_int = 0;
        // SAFETY: writes one int to a live local.
        unsafe { hip_call!(self, hipRuntimeGetVersion(&mut raw)) }?;
        HipVersion::from_raw(raw).ok_or_else(|| self.bad_value("hipRuntimeGetVersion", raw))
    }

    /// `hipDriverGetVersion` (on AMD it returns the HIP version, not the kernel driver's).
    pub fn driver_version(&self) -> Result<HipVersion> {
        let mut raw: c_int = 0;
        // SAFETY: writes one int to a live local.
        unsafe { hip_call!(self, hipDriverGetVersion(&mut raw)) }?;
        HipVersion::from_raw(raw).ok_or_else(|| self.bad_value("hipDriverGetVersion", raw))
    }

    fn bad_value(&self, api: &'static str, value: i32) -> Error {
        Error::Api {
            api,
            code: 0,
            code_name: self.error_name(hipError_t::hipSuccess),
            text: format!("returned the impossible value {value}"),
        }
    }

    /// `hipGetDeviceCount`. With no usable GPU the runtime answers `hipErrorNoDevice` (HIP 5.2 without a GPU:
    /// code 100, at once), which becomes [`Error::NoDevice`] naming the runtime version; so does a count of 0.
    pub fn device_count(&self) -> Result<u32> {
        let mut count: c_int = 0;
        // SAFETY: writes one int to a live local.
        match unsafe { hip_call!(self, hipGetDeviceCount(&mut count)) } {
            // hipErrorInsufficientDriver: the runtime found no usable kernel driver (/dev/kfd) – no GPU for us either.
            Err(Error::Api { code, code_name, .. })
                if is_code(code, hipError_t::hipErrorNoDevice)
                    || is_code(code, hipError_t::hipErrorInsufficientDriver) =>
            {
                return Err(self.no_device(code_name, Some(hipError_t(code as u32))));
            }
            other => other?,
        }
        match u32::try_from(count) {
            Ok(0) => Err(self.no_device("hipGetDeviceCount returned 0".to_string(), None)),
            Ok(n) => Ok(n),
            Err(_) => Err(self.bad_value("hipGetDeviceCount", count)),
        }
    }

    fn no_device(&self, code_name: String, code: Option<hipError_t>) -> Error {
        let version = match self.runtime_version() {
            Ok(v) => v.to_string(),
            Err(_) => "(version unknown)".to_string(),
        };
        match self.test_runtime() {
            // The test runtime's own text says why (no libcuda, or no NVIDIA GPU), so it is passed on.
            Some(_) => Error::NoDevice {
                runtime: RUNTIME,
                version,
                vendor: "NVIDIA (HIP over CUDA test runtime)",
                hint: match code {
                    Some(code) => format!(": {}; {TEST_RUNTIME_HINT}", self.error_string(code)),
                    None => format!(": {TEST_RUNTIME_HINT}"),
                },
                code_name,
            },
            None => Error::NoDevice {
                runtime: RUNTIME,
                version,
                vendor: "AMD",
                code_name,
                hint: NO_DEVICE_HINT.to_string(),
            },
        }
    }

    /// `hipSetDevice`: makes `ordinal` the calling thread's current device.
    pub fn set_device(&self, ordinal: i32) -> Result<()> {
        // SAFETY: plain call; an invalid ordinal is reported as a code.
        unsafe { hip_call!(self, hipSetDevice(ordinal)) }
    }

    /// `hipDeviceGetPCIBusId`: the PCI address `dddd:bb:dd.f` (e.g. `0000:c1:00.0`) AMD SMI finds the GPU by.
    pub fn pci_bus_id(&self, ordinal: i32) -> Result<String> {
        let mut buf = [0 as c_char; 64];
        // SAFETY: the runtime writes a NUL-terminated id of at most `len` bytes into the live buffer.
        unsafe { hip_call!(self, hipDeviceGetPCIBusId(buf.as_mut_ptr(), buf.len() as c_int, ordinal)) }?;
        Ok(buf.iter().take_while(|&&c| c != 0).map(|&c| char::from(c as u8)).collect())
    }

    /// `hipDeviceGetAttribute`.
    pub fn attribute(&self, attr: hipDeviceAttribute_t, ordinal: i32) -> Result<i32> {
        let mut value: c_int = 0;
        // SAFETY: writes one int to a live local. Only integer attributes are passed (never GcnArchName, which
        // HIP 5 answers by writing a string).
        unsafe { hip_call!(self, hipDeviceGetAttribute(&mut value, attr, ordinal)) }?;
        Ok(value)
    }

    /// As [`Hip::attribute`], but `None` where this runtime does not answer the attribute (`hipErrorInvalidValue`:
    /// HIP 5.2 answers e.g. MaxRegistersPerMultiprocessor and SharedMemPerBlockOptin this way; ROCm 6 answers them).
    pub fn attribute_opt(&self, attr: hipDeviceAttribute_t, ordinal: i32) -> Result<Option<i32>> {
        match self.attribute(attr, ordinal) {
            Ok(v) => Ok(Some(v)),
            Err(Error::Api { code, .. }) if code == i64::from(hipError_t::hipErrorInvalidValue.0) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// `hipDeviceGetName`.
    pub fn device_name(&self, ordinal: i32) -> Result<String> {
        let mut buf = [0u8; 256];
        // One byte short of the buffer, so the last byte stays 0 whatever the runtime writes.
        let len: c_int = 255;
        // SAFETY: writes at most `len` bytes into a 256-byte local.
        unsafe { hip_call!(self, hipDeviceGetName(buf.as_mut_ptr().cast::<c_char>(), len, ordinal)) }?;
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        Ok(String::from_utf8_lossy(&buf[..end]).trim().to_string())
    }

    /// `hipDeviceTotalMem` (the attribute TotalGlobalMem is clamped to `i32::MAX`, so it is not used).
    pub fn total_mem(&self, ordinal: i32) -> Result<u64> {
        let mut bytes: usize = 0;
        // SAFETY: writes one size_t to a live local.
        unsafe { hip_call!(self, hipDeviceTotalMem(&mut bytes, ordinal)) }?;
        Ok(bytes as u64)
    }

    fn exports(&self, symbol: &str) -> bool {
        let rt = self.rt();
        match symbol {
            "hipGetDevicePropertiesR0600" => rt.hipGetDevicePropertiesR0600.is_ok(),
            "hipGetDevicePropertiesR0000" => rt.hipGetDevicePropertiesR0000.is_ok(),
            "hipGetDeviceProperties" => rt.hipGetDeviceProperties.is_ok(),
            "hipModuleLaunchCooperativeKernel" => rt.hipModuleLaunchCooperativeKernel.is_ok(),
            _ => false,
        }
    }

    /// Fills a zeroed [`PROPS_BUFFER_BYTES`] buffer through one entry point.
    fn fill_props(&self, layout: PropsLayout, ordinal: i32) -> Result<Vec<u8>> {
        // u64 elements: the struct holds size_t and pointers, so the buffer is 8-byte aligned like the real one.
        let mut buffer = vec![0u64; PROPS_BUFFER_BYTES / 8];
        let out = buffer.as_mut_ptr().cast::<c_void>();
        match layout.symbol {
            // SAFETY: the buffer is zeroed, 8-byte aligned and 5.5x the R0600 struct's 1472 bytes.
            "hipGetDevicePropertiesR0600" => unsafe { hip_call!(self, hipGetDevicePropertiesR0600(out, ordinal)) },
            // SAFETY: the buffer is zeroed, 8-byte aligned and 10x the R0000 struct's 792 bytes.
            "hipGetDevicePropertiesR0000" => unsafe { hip_call!(self, hipGetDevicePropertiesR0000(out, ordinal)) },
            // SAFETY: as for R0000; the opaque hipDeviceProp_t type is only a pointer target here.
            _ => unsafe { hip_call!(self, hipGetDeviceProperties(out.cast::<hipDeviceProp_t>(), ordinal)) },
        }?;
        Ok(buffer.iter().flat_map(|w| w.to_ne_bytes()).collect())
    }

    /// The device's full architecture name (`gcnArchName`, e.g. `gfx90a:sramecc+:xnack-`) and the entry point
    /// that gave it. Tries [`props_layouts`] in order; an answer that does not start with `gfx` moves on to the next.
    pub fn arch_name(&self, ordinal: i32, version: HipVersion) -> Result<(String, &'static str)> {
        let layouts = props_layouts(version.major, |s| self.exports(s));
        let mut attempts = Vec::new();
        for layout in &layouts {
            let buffer = self.fill_props(*layout, ordinal)?;
            match arch_name_at(&buffer, layout.arch_name_offset, self.test_runtime().is_some()) {
                Some(name) => return Ok((name, layout.symbol)),
                None => {
                    let shown = String::from_utf8_lossy(&buffer[layout.arch_name_offset..][..16]).into_owned();
                    attempts.push(format!("{} byte {} reads {shown:?}", layout.symbol, layout.arch_name_offset));
                }
            }
        }
        Err(Error::Api {
            api: "hipGetDeviceProperties",
            code: 0,
            code_name: "unknown hipDeviceProp_t layout".to_string(),
            text: format!(
                "HIP {version}: no gcnArchName starting with `gfx` where ROCm 5 and 6 put it ({}); this ROCm release \
                 changed the struct again: hip.rs needs its offset",
                if attempts.is_empty() {
                    "no hipGetDeviceProperties entry point exported".to_string()
                } else {
                    attempts.join("; ")
                }
            ),
        })
    }

    /// `hipMemGetInfo` for the current device: (free, total) bytes.
    pub fn mem_info(&self) -> Result<(u64, u64)> {
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: writes two size_t to live locals.
        unsafe { hip_call!(self, hipMemGetInfo(&mut free, &mut total)) }?;
        Ok((free as u64, total as u64))
    }

    /// `hipMalloc` on the current device.
    pub fn malloc(&self, bytes: usize) -> Result<*mut c_void> {
        let mut ptr: *mut c_void = std::ptr::null_mut();
        // SAFETY: writes one pointer to a live local.
        unsafe { hip_call!(self, hipMalloc(&mut ptr, bytes)) }?;
        Ok(ptr)
    }

    /// `hipFree`.
    ///
    /// # Safety
    /// `ptr` came from [`Hip::malloc`] and is freed once. Work already enqueued may still use it: `hipFree`
    /// synchronises the device before freeing.
    pub unsafe fn free(&self, ptr: *mut c_void) -> Result<()> {
        // SAFETY: the caller guarantees `ptr` is a live allocation of ours, freed once.
        unsafe { hip_call!(self, hipFree(ptr)) }
    }

    /// `hipMemcpyAsync` host to device on `stream`, then `hipStreamSynchronize`: blocking, and ordered after the
    /// work already on the stream.
    ///
    /// # Safety
    /// `dst` is a device allocation of at least `src.len()` bytes; `stream` is live.
    pub unsafe fn copy_to_device(&self, dst: *mut c_void, src: &[u8], stream: hipStream_t) -> Result<()> {
        // SAFETY: sizes checked by the caller; `src` stays borrowed until the stream synchronisation below, after
        // which the runtime no longer reads it.
        unsafe {
            hip_call!(
                self,
                hipMemcpyAsync(dst, src.as_ptr().cast(), src.len(), hipMemcpyKind::hipMemcpyHostToDevice, stream)
            )
        }?;
        // SAFETY: the caller guarantees `stream` is live.
        unsafe { self.stream_synchronize(stream) }
    }

    /// `hipMemcpyAsync` device to host on `stream`, then `hipStreamSynchronize`.
    ///
    /// # Safety
    /// `src` is a device allocation of at least `dst.len()` bytes; `stream` is live.
    pub unsafe fn copy_to_host(&self, dst: &mut [u8], src: *const c_void, stream: hipStream_t) -> Result<()> {
        // SAFETY: sizes checked by the caller; `dst` stays mutably borrowed until the synchronisation below, after
        // which the runtime has finished writing it.
        unsafe {
            hip_call!(
                self,
                hipMemcpyAsync(dst.as_mut_ptr().cast(), src, dst.len(), hipMemcpyKind::hipMemcpyDeviceToHost, stream)
            )
        }?;
        // SAFETY: the caller guarantees `stream` is live.
        unsafe { self.stream_synchronize(stream) }
    }

    /// `hipMemcpyDtoDAsync`, stream-ordered.
    ///
    /// # Safety
    /// Both are device allocations of at least `bytes` bytes; `stream` is live.
    pub unsafe fn copy_on_device(
        &self,
        dst: *mut c_void,
        src: *const c_void,
        bytes: usize,
        stream: hipStream_t,
    ) -> Result<()> {
        // SAFETY: the caller guarantees both ranges and the stream; device memory outlives stream work because
        // hipFree synchronises.
        unsafe { hip_call!(self, hipMemcpyDtoDAsync(dst, src.cast_mut(), bytes, stream)) }
    }

    /// `hipMemsetAsync`, stream-ordered.
    ///
    /// # Safety
    /// `dst` is a device allocation of at least `bytes` bytes; `stream` is live.
    pub unsafe fn fill(&self, dst: *mut c_void, value: u8, bytes: usize, stream: hipStream_t) -> Result<()> {
        // SAFETY: the caller guarantees the range and the stream.
        unsafe { hip_call!(self, hipMemsetAsync(dst, c_int::from(value), bytes, stream)) }
    }

    /// `hipModuleLoadData` on the current device. A code object the device cannot use becomes
    /// [`Error::BadCodeObject`] with the runtime's code name.
    ///
    /// # Safety
    /// `image` must stay alive and unchanged until [`Hip::module_unload`]: the runtime keeps a pointer to it
    /// (ROCm/clr `hipamd/src/hip_fatbin.cpp` stores `image_` without copying).
    pub unsafe fn module_load(&self, image: &[u8], device_arch: &str) -> Result<hipModule_t> {
        let mut module: hipModule_t = std::ptr::null_mut();
        // SAFETY: writes one handle to a live local; the image's lifetime is the caller's promise.
        match unsafe { hip_call!(self, hipModuleLoadData(&mut module, image.as_ptr().cast())) } {
            Err(Error::Api { api, code, code_name, text }) if is_bad_code_object(hipError_t(code as u32)) => {
                Err(Error::BadCodeObject {
                    runtime: RUNTIME,
                    reason: format!(
                        "{api} returned {code_name} ({code}): {text} (the device is {device_arch}; build the code \
                         object for it with `suite kernels build --arch {}`)",
                        device_arch.split(':').next().unwrap_or(device_arch),
                    ),
                })
            }
            other => other.map(|()| module),
        }
    }

    /// `hipModuleUnload`.
    ///
    /// # Safety
    /// `module` is live, unloaded once, and no kernel of it is used afterwards.
    pub unsafe fn module_unload(&self, module: hipModule_t) -> Result<()> {
        // SAFETY: the caller guarantees a live module unloaded once.
        unsafe { hip_call!(self, hipModuleUnload(module)) }
    }

    /// `hipModuleGetFunction`; `Ok(None)` when the module has no such kernel (`hipErrorNotFound`).
    ///
    /// # Safety
    /// `module` is live.
    pub unsafe fn module_function(&self, module: hipModule_t, name: &str) -> Result<Option<hipFunction_t>> {
        // A name with an interior NUL cannot be a symbol.
        let Ok(cname) = CString::new(name) else { return Ok(None) };
        let mut function: hipFunction_t = std::ptr::null_mut();
        // SAFETY: writes one handle to a live local; `cname` outlives the call; the module is live.
        match unsafe { hip_call!(self, hipModuleGetFunction(&mut function, module, cname.as_ptr())) } {
            Err(Error::Api { code, .. }) if is_code(code, hipError_t::hipErrorNotFound) => Ok(None),
            other => other.map(|()| Some(function)),
        }
    }

    /// `hipFuncGetAttribute`.
    ///
    /// # Safety
    /// `function` belongs to a live module.
    pub unsafe fn function_attribute(&self, function: hipFunction_t, attr: hipFunction_attribute) -> Result<i32> {
        let mut value: c_int = 0;
        // SAFETY: writes one int to a live local; the function's module is live.
        unsafe { hip_call!(self, hipFuncGetAttribute(&mut value, attr, function)) }?;
        Ok(value)
    }

    /// `hipModuleLaunchKernel` (or, with `cooperative`, `hipModuleLaunchCooperativeKernel`) with `kernelParams`,
    /// then `hipGetLastError`.
    ///
    /// # Safety
    /// `function` belongs to a live module; `params` holds one pointer per kernel parameter, each to a value of
    /// the parameter's size that lives until this call returns (HIP copies the values at launch); every device
    /// address among the values stays allocated until the kernel has finished; `stream` is live.
    pub unsafe fn launch(
        &self,
        function: hipFunction_t,
        config: &LaunchConfig,
        stream: hipStream_t,
        params: &mut [*mut c_void],
        cooperative: bool,
    ) -> Result<()> {
        let [gx, gy, gz] = config.grid;
        let [bx, by, bz] = config.group;
        let lds = config.dynamic_lds_bytes;
        let params_ptr = if params.is_empty() { std::ptr::null_mut() } else { params.as_mut_ptr() };
        if cooperative {
            // SAFETY: the caller guarantees the function, the values behind `params` and the stream; this entry
            // point takes no `extra`.
            unsafe {
                hip_call!(
                    self,
                    hipModuleLaunchCooperativeKernel(function, gx, gy, gz, bx, by, bz, lds, stream, params_ptr)
                )
            }
        } else {
            let extra = std::ptr::null_mut();
            // SAFETY: as above; `extra` is null because the arguments go through `kernelParams`.
            unsafe {
                hip_call!(self, hipModuleLaunchKernel(function, gx, gy, gz, bx, by, bz, lds, stream, params_ptr, extra))
            }
        }?;
        self.last_error()
    }

    /// Whether this runtime exports `hipModuleLaunchCooperativeKernel` (ROCm 5.5 and later).
    pub fn has_cooperative_launch(&self) -> bool {
        self.exports("hipModuleLaunchCooperativeKernel")
    }

    /// `hipGetLastError`: the thread's last error, which the runtime then resets. HIP sets it on every call,
    /// success included, so right after a launch it reports that launch.
    pub fn last_error(&self) -> Result<()> {
        // SAFETY: plain call.
        unsafe { hip_call!(self, hipGetLastError()) }
    }

    /// `hipModuleOccupancyMaxActiveBlocksPerMultiprocessor`.
    ///
    /// # Safety
    /// `function` belongs to a live module.
    pub unsafe fn occupancy(&self, function: hipFunction_t, group_size: i32, dynamic_lds_bytes: usize) -> Result<i32> {
        let mut groups: c_int = 0;
        // SAFETY: writes one int to a live local; the function's module is live.
        unsafe {
            hip_call!(
                self,
                hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(
                    &mut groups,
                    function,
                    group_size,
                    dynamic_lds_bytes
                )
            )
        }?;
        Ok(groups)
    }

    /// `hipStreamCreate` on the current device.
    pub fn stream_create(&self) -> Result<hipStream_t> {
        let mut stream: hipStream_t = std::ptr::null_mut();
        // SAFETY: writes one handle to a live local.
        unsafe { hip_call!(self, hipStreamCreate(&mut stream)) }?;
        Ok(stream)
    }

    /// `hipStreamDestroy`.
    ///
    /// # Safety
    /// `stream` is live and destroyed once.
    pub unsafe fn stream_destroy(&self, stream: hipStream_t) -> Result<()> {
        // SAFETY: the caller guarantees a live stream destroyed once.
        unsafe { hip_call!(self, hipStreamDestroy(stream)) }
    }

    /// `hipStreamSynchronize`: waits for the stream and reports errors of its asynchronous work.
    ///
    /// # Safety
    /// `stream` is live.
    pub unsafe fn stream_synchronize(&self, stream: hipStream_t) -> Result<()> {
        // SAFETY: the caller guarantees a live stream.
        unsafe { hip_call!(self, hipStreamSynchronize(stream)) }
    }

    /// `hipStreamBeginCapture` in thread-local mode: calls from this thread that are illegal while capturing fail
    /// (and end the capture) instead of running; other threads are not affected.
    ///
    /// # Safety
    /// `stream` is live and not capturing.
    pub unsafe fn stream_begin_capture(&self, stream: hipStream_t) -> Result<()> {
        let mode = hipStreamCaptureMode::hipStreamCaptureModeThreadLocal;
        // SAFETY: the caller guarantees a live stream that is not capturing.
        unsafe { hip_call!(self, hipStreamBeginCapture(stream, mode)) }
    }

    /// `hipStreamEndCapture`: the captured graph, or null where the runtime made none. Whatever it returns, the
    /// stream is no longer capturing, so the graph (if any) is handed back with the status for the caller to own.
    ///
    /// # Safety
    /// `stream` is live and capturing.
    pub unsafe fn stream_end_capture(&self, stream: hipStream_t) -> (hipGraph_t, Result<()>) {
        let mut graph: hipGraph_t = std::ptr::null_mut();
        // SAFETY: writes one handle to a live local; the caller guarantees the capturing stream.
        let ended = unsafe { hip_call!(self, hipStreamEndCapture(stream, &mut graph)) };
        (graph, ended)
    }

    /// `hipGraphInstantiate` (no error node or log wanted).
    ///
    /// # Safety
    /// `graph` is live.
    pub unsafe fn graph_instantiate(&self, graph: hipGraph_t) -> Result<hipGraphExec_t> {
        let mut exec: hipGraphExec_t = std::ptr::null_mut();
        // SAFETY: writes one handle to a live local; the error node and log are optional (null, 0 bytes).
        unsafe {
            hip_call!(self, hipGraphInstantiate(&mut exec, graph, std::ptr::null_mut(), std::ptr::null_mut(), 0))
        }?;
        Ok(exec)
    }

    /// Whether this runtime can capture a stream into a graph and replay it (HIP 4.3 and later).
    pub fn has_graphs(&self) -> bool {
        let rt = self.rt();
        rt.hipStreamBeginCapture.is_ok()
            && rt.hipStreamEndCapture.is_ok()
            && rt.hipGraphInstantiate.is_ok()
            && rt.hipGraphLaunch.is_ok()
            && rt.hipGraphExecDestroy.is_ok()
            && rt.hipGraphDestroy.is_ok()
    }

    /// Whether this runtime exports `hipGraphUpload` (ROCm 5.3 and later).
    pub fn has_graph_upload(&self) -> bool {
        self.rt().hipGraphUpload.is_ok()
    }

    /// `hipGraphUpload`: sets the graph up on the device now, so its first launch costs what the others do.
    ///
    /// # Safety
    /// `exec` and `stream` are live and of the same device.
    pub unsafe fn graph_upload(&self, exec: hipGraphExec_t, stream: hipStream_t) -> Result<()> {
        // SAFETY: the caller guarantees both handles.
        unsafe { hip_call!(self, hipGraphUpload(exec, stream)) }
    }

    /// `hipGraphLaunch`: enqueues the whole graph on `stream`.
    ///
    /// # Safety
    /// `exec` and `stream` are live and of the same device; what the graph's kernels use is still allocated.
    pub unsafe fn graph_launch(&self, exec: hipGraphExec_t, stream: hipStream_t) -> Result<()> {
        // SAFETY: the caller guarantees both handles and the graph's memory.
        unsafe { hip_call!(self, hipGraphLaunch(exec, stream)) }
    }

    /// `hipGraphExecDestroy`.
    ///
    /// # Safety
    /// `exec` is live and destroyed once.
    pub unsafe fn graph_exec_destroy(&self, exec: hipGraphExec_t) -> Result<()> {
        // SAFETY: the caller guarantees a live executable graph destroyed once.
        unsafe { hip_call!(self, hipGraphExecDestroy(exec)) }
    }

    /// `hipGraphDestroy`.
    ///
    /// # Safety
    /// `graph` is live and destroyed once.
    pub unsafe fn graph_destroy(&self, graph: hipGraph_t) -> Result<()> {
        // SAFETY: the caller guarantees a live graph destroyed once.
        unsafe { hip_call!(self, hipGraphDestroy(graph)) }
    }

    /// `hipEventCreate` on the current device.
    pub fn event_create(&self) -> Result<hipEvent_t> {
        let mut event: hipEvent_t = std::ptr::null_mut();
        // SAFETY: writes one handle to a live local.
        unsafe { hip_call!(self, hipEventCreate(&mut event)) }?;
        Ok(event)
    }

    /// `hipEventRecord` on `stream`.
    ///
    /// # Safety
    /// `event` and `stream` are live and of the same device.
    pub unsafe fn event_record(&self, event: hipEvent_t, stream: hipStream_t) -> Result<()> {
        // SAFETY: the caller guarantees both handles.
        unsafe { hip_call!(self, hipEventRecord(event, stream)) }
    }

    /// `hipEventSynchronize`.
    ///
    /// # Safety
    /// `event` is live.
    pub unsafe fn event_synchronize(&self, event: hipEvent_t) -> Result<()> {
        // SAFETY: the caller guarantees a live event.
        unsafe { hip_call!(self, hipEventSynchronize(event)) }
    }

    /// `hipEventElapsedTime` in milliseconds.
    ///
    /// # Safety
    /// Both events are live and completed.
    pub unsafe fn event_elapsed_ms(&self, start: hipEvent_t, stop: hipEvent_t) -> Result<f32> {
        let mut ms: f32 = 0.0;
        // SAFETY: writes one float to a live local; the caller guarantees both events.
        unsafe { hip_call!(self, hipEventElapsedTime(&mut ms, start, stop)) }?;
        Ok(ms)
    }

    /// `hipEventDestroy`.
    ///
    /// # Safety
    /// `event` is live and destroyed once.
    pub unsafe fn event_destroy(&self, event: hipEvent_t) -> Result<()> {
        // SAFETY: the caller guarantees a live event destroyed once.
        unsafe { hip_call!(self, hipEventDestroy(event)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hip_sys::hip_runtime::hipDeviceAttribute_t as da;
    use hip_sys::hip_runtime::hipFunction_attribute as fa;

    #[test]
    fn versions_split_as_hip_encodes_them() {
        let cases = [
            (50221153, Some("5.2.21153")),
            (60342134, Some("6.3.42134")),
            (60000000, Some("6.0.0")),
            (60100001, Some("6.1.1")),
            (0, Some("0.0.0")),
            (-1, None),
        ];
        for (raw, want) in cases {
            assert_eq!(HipVersion::from_raw(raw).map(|v| v.to_string()).as_deref(), want, "{raw}");
        }
        assert_eq!(HipVersion::from_raw(60342134).map(|v| v.major), Some(6));
    }

    #[test]
    fn props_layout_follows_version_and_symbols() {
        let all = |_: &str| true;
        let plain_only = |s: &str| s == "hipGetDeviceProperties";
        let no_r0000 = |s: &str| s != "hipGetDevicePropertiesR0000";
        type Exports<'a> = &'a dyn Fn(&str) -> bool;
        let cases: [(u32, Exports, &[PropsLayout]); 6] = [
            // HIP 5.2 (Debian): only the plain symbol, old layout.
            (5, &plain_only, &[PROPS_PLAIN]),
            // ROCm 6.x exports all three: the maintained R0600 first, the deprecated ones as fallbacks.
            (6, &all, &[PROPS_R0600, PROPS_R0000, PROPS_PLAIN]),
            // A later release that drops R0000 still has R0600.
            (7, &no_r0000, &[PROPS_R0600, PROPS_PLAIN]),
            // A 6.x built without the new symbol (never seen) falls back to the old layout.
            (6, &plain_only, &[PROPS_PLAIN]),
            // A 5.x that somehow exports R0600 does not use it: that layout is ROCm 6's.
            (5, &all, &[PROPS_PLAIN, PROPS_R0000]),
            (6, &|_: &str| false, &[]),
        ];
        for (major, exports, want) in cases {
            assert_eq!(props_layouts(major, exports), want, "major {major}");
        }
        assert_eq!(PROPS_R0600.arch_name_offset, 1160);
        assert_eq!(PROPS_R0000.arch_name_offset, 396);
    }

    #[test]
    fn arch_name_is_read_and_validated_at_the_offset() {
        let mut buf = vec![0u8; PROPS_BUFFER_BYTES];
        buf[1160..1160 + 22].copy_from_slice(b"gfx90a:sramecc+:xnack-");
        assert_eq!(arch_name_at(&buf, 1160, false).as_deref(), Some("gfx90a:sramecc+:xnack-"));
        // The wrong layout's offset reads zeros or other fields, which must not pass.
        assert_eq!(arch_name_at(&buf, 396, false), None);
        buf[396..402].copy_from_slice(b"AMD In");
        assert_eq!(arch_name_at(&buf, 396, false), None);
        // No NUL within the 256-byte field, or past the end: rejected.
        let full = vec![b'g'; 300];
        assert_eq!(arch_name_at(&full, 0, false), None);
        assert_eq!(arch_name_at(&buf, PROPS_BUFFER_BYTES + 1, false), None);
        let mut odd = vec![0u8; 32];
        odd[..7].copy_from_slice(b"gfx9\x010a");
        assert_eq!(arch_name_at(&odd, 0, false), None);
        // A CUDA architecture only from the HIP-over-CUDA test runtime, never from ROCm.
        let mut cuda = vec![0u8; 32];
        cuda[..5].copy_from_slice(b"sm_90");
        assert_eq!(arch_name_at(&cuda, 0, false), None);
        assert_eq!(arch_name_at(&cuda, 0, true).as_deref(), Some("sm_90"));
        assert_eq!(arch_name_at(&buf, 1160, true).as_deref(), Some("gfx90a:sramecc+:xnack-"));
    }

    /// The enumerator values used are the same in HIP 5.2 (the generated bindings) and ROCm 6.0-6.3 (read from
    /// ROCm/HIP include/hip/hip_runtime_api.h and driver_types.h); a regeneration that changed one fails here.
    #[test]
    fn enumerators_match_rocm6() {
        let attrs = [
            (da::hipDeviceAttributeClockRate, 5),
            (da::hipDeviceAttributeCooperativeLaunch, 10),
            (da::hipDeviceAttributeL2CacheSize, 19),
            (da::hipDeviceAttributeMaxThreadsPerBlock, 56),
            (da::hipDeviceAttributeMaxThreadsPerMultiProcessor, 57),
            (da::hipDeviceAttributeMemoryBusWidth, 59),
            (da::hipDeviceAttributeMemoryClockRate, 60),
            (da::hipDeviceAttributeMultiprocessorCount, 63),
            (da::hipDeviceAttributeMaxRegistersPerBlock, 71),
            (da::hipDeviceAttributeMaxRegistersPerMultiprocessor, 72),
            (da::hipDeviceAttributeMaxSharedMemoryPerBlock, 74),
            (da::hipDeviceAttributeSharedMemPerBlockOptin, 75),
            (da::hipDeviceAttributeWarpSize, 87),
            (da::hipDeviceAttributeMaxSharedMemoryPerMultiprocessor, 10002),
        ];
        for (attr, want) in attrs {
            assert_eq!(attr.0, want, "{attr:?}");
        }
        assert_eq!(fa::HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK.0, 0);
        assert_eq!(fa::HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES.0, 1);
        assert_eq!(fa::HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES.0, 3);
        assert_eq!(fa::HIP_FUNC_ATTRIBUTE_NUM_REGS.0, 4);
        assert_eq!(hipError_t::hipErrorNoDevice.0, 100);
        assert_eq!(hipError_t::hipErrorNotFound.0, 500);
        assert_eq!(hipMemcpyKind::hipMemcpyDeviceToHost.0, 2);
    }

    #[test]
    fn code_object_errors_are_told_apart() {
        assert!(is_bad_code_object(hipError_t::hipErrorNoBinaryForGpu));
        assert!(is_bad_code_object(hipError_t::hipErrorInvalidImage));
        assert!(!is_bad_code_object(hipError_t::hipErrorOutOfMemory));
        assert!(!is_bad_code_object(hipError_t::hipSuccess));
    }

    #[test]
    fn missing_runtime_names_every_candidate_and_the_fix() {
        let paths = [
            std::path::PathBuf::from("/nonexistent/lib/libamdhip64.so"),
            std::path::PathBuf::from("libamdhip64.so.99"),
        ];
        let Err(load) = loader::load_hip(&paths) else { panic!("a nonexistent path loaded") };
        let text = not_found(&load).to_string();
        assert!(text.starts_with("no HIP runtime found: load the rocm module (module load rocm) or set ROCM_PATH"));
        assert!(text.contains("tried /nonexistent/lib/libamdhip64.so: "), "{text}");
        assert!(text.contains("tried libamdhip64.so.99: "), "{text}");
    }
}
