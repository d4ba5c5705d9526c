//! AMD GPUs through the HIP runtime (`libamdhip64`, loaded at run time by `hip-sys`).
//!
//! Three layers, after cudarc: `hip-sys` is the raw table of functions; `hip.rs` wraps each call once into a
//! `Result` and holds the ROCm 5 vs 6 differences; this file owns the handles (stream, allocations, modules,
//! events, graphs, the rocBLAS handle) and frees them on drop. Each device gets one HIP stream at open; every
//! operation is enqueued on it, and `hipSetDevice` precedes each call that depends on the thread's current device,
//! since HIP keeps that per thread and callers may use a device from several threads.
//!
//! Batches are captured as HIP graphs ([`Device::capture`]), as the NVIDIA module captures CUDA graphs, so both
//! platforms time the same way (`timing` = `graph`).
//!
//! The same code runs over the HIP-over-CUDA test runtime (`hip-test-runtime/`, selected with `ROCM_PATH`) on an
//! NVIDIA GPU: it answers with the CUDA device (its name, `sm_XY` as `gcnArchName`, warp32), so kernels are built
//! as cubins and every record of the run names the test runtime ([`Hip::test_runtime`]). What it cannot reach is
//! listed in `hip-test-runtime/README.md`.
#![allow(unsafe_code)]

mod amdsmi;
mod gpu_metrics;
mod hip;
mod rocblas;

use std::any::Any;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, PoisonError};

use hip_sys::hip_runtime::{
    hipDeviceAttribute_t as Attr, hipError_t, hipEvent_t, hipFunction_attribute as FnAttr, hipFunction_t,
    hipGraphExec_t, hipModule_t, hipStream_t,
};

use self::hip::{Hip, HipVersion};
use super::telemetry::Telemetry;
use super::{
    Arch, Arg, BlasCall, Device, Error, Kernel, KernelAttrs, LaunchConfig, Module, Platform, Props, RawAlloc, Replay,
    Result, RuntimeInfo, Survey, WaveSize,
};
use crate::precision::Precision;

/// How every record of a run over the HIP-over-CUDA test runtime names it (`run.json`'s runtime, `summary.md`,
/// `suite info`, compare reports): such a run measured an NVIDIA GPU through the AMD code path.
pub const TEST_RUNTIME_LABEL: &str = "HIP over CUDA test runtime";

/// Surveys AMD GPUs: the HIP runtime and its version, the visible devices, and rocBLAS. Never panics; with the
/// runtime present and no GPU, `devices` is [`Error::NoDevice`] naming the runtime version.
pub fn survey() -> Survey {
    let devices = Hip::load().and_then(list_devices);
    let blas = rocblas::library().map(blas_text);
    Survey { platform: Platform::Amd, runtime: runtime_info(), devices, blas }
}

/// Opens AMD GPU `ordinal` (among those HIP sees, after `ROCR_VISIBLE_DEVICES` / `HIP_VISIBLE_DEVICES`) and
/// creates its stream.
pub fn open(ordinal: u32) -> Result<Box<dyn Device>> {
    let hip = Hip::load()?;
    let count = hip.device_count()?;
    let bad_ordinal = Error::BadOrdinal { platform: Platform::Amd, ordinal, count };
    if ordinal >= count {
        return Err(bad_ordinal);
    }
    let hip_ordinal = i32::try_from(ordinal).map_err(|_| bad_ordinal)?;
    hip.init()?;
    Ok(Box::new(HipDevice::open(hip, ordinal, hip_ordinal)?))
}

fn runtime_info() -> Result<RuntimeInfo> {
    let hip = Hip::load()?;
    let version = hip.runtime_version()?;
    let driver_version = match hip.driver_version() {
        Ok(v) => v.to_string(),
        Err(e) => format!("unknown ({e})"),
    };
    let library = match hip.test_runtime() {
        Some(description) => format!("{} ({description})", hip.library()),
        None => hip.library(),
    };
    Ok(RuntimeInfo { library, version: version.to_string(), driver_version })
}

/// Where rocBLAS came from, with the test runtime's description of itself where it is its rocBLAS over cuBLAS.
fn blas_text(lib: &hip_sys::rocblas::RocBlas) -> String {
    match &lib.test_runtime {
        Some(description) => format!("{} ({description})", lib.path.display()),
        None => lib.path.display().to_string(),
    }
}

fn list_devices(hip: Hip) -> Result<Vec<Props>> {
    let count = hip.device_count()?;
    hip.init()?;
    (0..count)
        .map(|ordinal| {
            let hip_ordinal =
                i32::try_from(ordinal).map_err(|_| Error::BadOrdinal { platform: Platform::Amd, ordinal, count })?;
            read_props(hip, ordinal, hip_ordinal)
        })
        .collect()
}

/// A count or size the runtime reports as an `int`; a negative one (never seen) reads as 0.
fn non_negative(v: i32) -> u32 {
    u32::try_from(v).unwrap_or(0)
}

/// An optional quantity: absent when the runtime does not answer or answers 0 or less.
fn positive(v: Option<i32>) -> Option<u32> {
    v.and_then(|v| u32::try_from(v).ok()).filter(|&v| v > 0)
}

/// HIP reports clocks in kHz.
fn khz_to_mhz(khz: Option<u32>) -> Option<u32> {
    khz.map(|k| (k + 500) / 1000)
}

/// The kernel driver's version where the DKMS `amdgpu` module (the one ROCm installs) exposes it; the in-tree
/// driver does not. HIP has no call for it: on AMD `hipDriverGetVersion` returns the HIP version.
fn amdgpu_version() -> Option<String> {
    let text = std::fs::read_to_string("/sys/module/amdgpu/version").ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

fn driver_text(hip_driver: Option<HipVersion>, amdgpu: Option<String>) -> String {
    match (amdgpu, hip_driver) {
        (Some(k), Some(v)) => format!("amdgpu {k}; HIP driver API {v}"),
        (Some(k), None) => format!("amdgpu {k}"),
        (None, Some(v)) => format!("HIP driver API {v}"),
        (None, None) => "unknown".to_string(),
    }
}

fn read_props(hip: Hip, ordinal: u32, o: i32) -> Result<Props> {
    let version = hip.runtime_version()?;
    let attr = |a: Attr| hip.attribute(a, o);
    let attr_opt = |a: Attr| hip.attribute_opt(a, o);
    let (arch_full, props_symbol) = hip.arch_name(o, version)?;
    let arch = Arch::parse(&arch_full).map_err(|e| Error::Api {
        api: props_symbol,
        code: 0,
        code_name: "unexpected gcnArchName".to_string(),
        text: e.to_string(),
    })?;
    let lds_bytes_per_group = u64::from(non_negative(attr(Attr::hipDeviceAttributeMaxSharedMemoryPerBlock)?));
    Ok(Props {
        platform: Platform::Amd,
        ordinal,
        name: hip.device_name(o)?,
        arch,
        arch_full,
        wave_size: WaveSize(non_negative(attr(Attr::hipDeviceAttributeWarpSize)?)),
        cu_count: non_negative(attr(Attr::hipDeviceAttributeMultiprocessorCount)?),
        max_items_per_cu: non_negative(attr(Attr::hipDeviceAttributeMaxThreadsPerMultiProcessor)?),
        max_group_size: non_negative(attr(Attr::hipDeviceAttributeMaxThreadsPerBlock)?),
        // HIP's MaxBlocksPerMultiProcessor is max items per CU / max group size (ROCm/clr hip_device.cpp), i.e. 2
        // on gfx90a, while a CU holds up to 16 groups of small waves: not a real limit, so it is not reported.
        max_groups_per_cu: None,
        // The AMD-specific attribute is LDS per CU in both HIP 5 and 6. The CUDA-named SharedMemPerMultiprocessor
        // is not: ROCm 6 answers it with LDS per CU times the CU count.
        lds_bytes_per_cu: u64::from(non_negative(attr(Attr::hipDeviceAttributeMaxSharedMemoryPerMultiprocessor)?)),
        lds_bytes_per_group,
        // AMD has no opt-in for more LDS: ROCm 6 answers with the same 64 KiB, HIP 5.2 does not answer.
        lds_bytes_per_group_optin: positive(attr_opt(Attr::hipDeviceAttributeSharedMemPerBlockOptin)?)
            .map_or(lds_bytes_per_group, u64::from),
        // ROCm 6 answers the per-CU attribute; HIP 5.2 does not, but its per-block one is the same number
        // (both are the runtime's availableRegistersPerCU).
        registers_per_cu: match positive(attr_opt(Attr::hipDeviceAttributeMaxRegistersPerMultiprocessor)?) {
            Some(r) => r,
            None => non_negative(attr(Attr::hipDeviceAttributeMaxRegistersPerBlock)?),
        },
        clock_mhz: khz_to_mhz(positive(attr_opt(Attr::hipDeviceAttributeClockRate)?)),
        memory_clock_mhz: khz_to_mhz(positive(attr_opt(Attr::hipDeviceAttributeMemoryClockRate)?)),
        memory_bus_bits: positive(attr_opt(Attr::hipDeviceAttributeMemoryBusWidth)?),
        l2_bytes: positive(attr_opt(Attr::hipDeviceAttributeL2CacheSize)?).map(u64::from),
        memory_bytes: hip.total_mem(o)?,
        runtime_version: runtime_text(hip.test_runtime(), version, props_symbol),
        driver_version: match hip.test_runtime() {
            Some(_) => format!("HIP driver API {} of the HIP over CUDA test runtime", version),
            None => driver_text(hip.driver_version().ok(), amdgpu_version()),
        },
        test_runtime: hip.test_runtime().is_some(),
    })
}

/// The runtime as run.json and summary.md name it. Over the HIP-over-CUDA test runtime it starts with the runtime's
/// own description ("HIP over CUDA test runtime <its path>: ... NVIDIA hardware (not an AMD GPU); CUDA driver ..."),
/// so no record of such a run reads as an AMD measurement.
fn runtime_text(test_runtime: Option<&str>, version: HipVersion, props_symbol: &str) -> String {
    match test_runtime {
        Some(description) if description.contains(TEST_RUNTIME_LABEL) => {
            format!("{description}; HIP {version} API, gcnArchName via {props_symbol}")
        }
        Some(description) => {
            format!("{TEST_RUNTIME_LABEL}: {description}; HIP {version} API, gcnArchName via {props_symbol}")
        }
        None => format!("HIP {version} (ROCm {}; gcnArchName via {props_symbol})", version.major),
    }
}

/// Checks a launch against what the kernel and the device allow, so the user gets a sentence instead of
/// `hipErrorInvalidConfiguration`.
fn check_launch(props: &Props, kernel: &Kernel, config: &LaunchConfig) -> Result<()> {
    let bad = |problem: String| Err(Error::BadLaunch { kernel: kernel.name.clone(), problem });
    if config.grid.contains(&0) {
        return bad(format!("an empty grid {:?}: every grid dimension must be at least 1", config.grid));
    }
    if config.group.contains(&0) {
        return bad(format!("groups of shape {:?}: every group dimension must be at least 1", config.group));
    }
    let items: u64 = config.group.iter().map(|&g| u64::from(g)).product();
    let max = match kernel.attrs.max_group_size {
        0 => props.max_group_size,
        k => k.min(props.max_group_size),
    };
    if items > u64::from(max) {
        return bad(format!("groups of {items} items: {} allows at most {max} for this kernel", props.arch));
    }
    for (axis, (&groups, &size)) in ["x", "y", "z"].iter().zip(config.grid.iter().zip(&config.group)) {
        let total = u64::from(groups) * u64::from(size);
        if total > u64::from(u32::MAX) {
            return bad(format!(
                "{total} items along {axis}: AMD dispatch packets count work-items per dimension in 32 bits"
            ));
        }
    }
    let lds = u64::from(kernel.attrs.static_lds_bytes) + u64::from(config.dynamic_lds_bytes);
    if lds > props.lds_bytes_per_group_optin {
        return bad(format!(
            "with {lds} bytes of LDS per group ({} static + {} dynamic): {} allows {}",
            kernel.attrs.static_lds_bytes, config.dynamic_lds_bytes, props.arch, props.lds_bytes_per_group_optin
        ));
    }
    Ok(())
}

/// Each argument's value in an 8-byte, 8-aligned slot; HIP reads as many bytes from the start of each slot as the
/// kernel's parameter has (`Arg::to_bytes` puts 4-byte values first).
fn pack_args(args: &[Arg]) -> Vec<u64> {
    args.iter().map(|a| u64::from_ne_bytes(a.to_bytes())).collect()
}

/// A HIP object, destroyed on drop by the `Hip` call paired with its creation.
type Owned<H> = super::owned::Owned<H, Hip>;
type Stream = Owned<hipStream_t>;
type Event = Owned<hipEvent_t>;

impl Event {
    fn create(hip: Hip) -> Result<Event> {
        Ok(Owned::new(hip, hip.event_create()?, Hip::event_destroy))
    }
}

/// An instantiated HIP graph, replayed on the device's stream; destroyed on drop.
struct HipReplay<'d> {
    exec: Owned<hipGraphExec_t>,
    device: &'d HipDevice,
}

impl Replay for HipReplay<'_> {
    fn launch(&self) -> Result<()> {
        self.device.current()?;
        // SAFETY: the executable graph and the stream are live and of this device (the borrow of the device keeps the
        // stream alive); the buffers its kernels use are the caller's to keep, as for a launch.
        unsafe { self.device.hip.graph_launch(self.exec.raw, self.device.stream.raw) }
    }
}

/// `hipFree`, except for the null pointer of a zero-byte allocation, which was never allocated.
///
/// # Safety
/// As [`Hip::free`].
unsafe fn free_allocation(hip: &Hip, ptr: *mut c_void) -> Result<()> {
    if ptr.is_null() {
        return Ok(());
    }
    // SAFETY: the caller's guarantee.
    unsafe { hip.free(ptr) }
}

/// A device allocation, freed on drop.
struct HipAlloc {
    mem: Owned<*mut c_void>,
    bytes: usize,
    ordinal: u32,
}

impl HipAlloc {
    fn ptr(&self) -> *mut c_void {
        self.mem.raw
    }
}

impl RawAlloc for HipAlloc {
    fn device_ptr(&self) -> u64 {
        self.ptr() as u64
    }
    fn bytes(&self) -> usize {
        self.bytes
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A loaded code object, unloaded when the last `Module` or `Kernel` referring to it is dropped.
struct HipModule {
    /// Declared before the image: the runtime reads the image until the module is unloaded.
    module: Owned<hipModule_t>,
    ordinal: u32,
    /// The runtime keeps a pointer into the image instead of copying it, so the module owns a copy.
    _image: Box<[u8]>,
}

/// A kernel handle; holds its module so the module stays loaded while the kernel exists.
struct HipKernel {
    function: hipFunction_t,
    module: Arc<HipModule>,
}

// SAFETY: function handles may be used from any thread while their module is loaded, which `module` ensures.
unsafe impl Send for HipKernel {}
// SAFETY: as above.
unsafe impl Sync for HipKernel {}

/// One AMD GPU with its stream.
struct HipDevice {
    hip: Hip,
    ordinal: u32,
    hip_ordinal: i32,
    props: Props,
    /// Created on the first BLAS call. Declared before `stream` so it is destroyed before the stream it uses.
    blas: Mutex<Option<rocblas::Handle>>,
    stream: Stream,
}

impl HipDevice {
    fn open(hip: Hip, ordinal: u32, hip_ordinal: i32) -> Result<HipDevice> {
        let props = read_props(hip, ordinal, hip_ordinal)?;
        hip.set_device(hip_ordinal)?;
        let stream = Owned::new(hip, hip.stream_create()?, Hip::stream_destroy);
        Ok(HipDevice { hip, ordinal, hip_ordinal, props, blas: Mutex::new(None), stream })
    }

    /// Makes this device the calling thread's current one (HIP keeps it per thread).
    fn current(&self) -> Result<()> {
        self.hip.set_device(self.hip_ordinal)
    }

    /// The device's rocBLAS handle, created on first use, with the device current; the guard holds `Some`.
    fn blas_handle(&self) -> Result<std::sync::MutexGuard<'_, Option<rocblas::Handle>>> {
        let lib = rocblas::library()?;
        let mut blas = self.blas.lock().unwrap_or_else(PoisonError::into_inner);
        self.current()?;
        if blas.is_none() {
            // SAFETY: the stream outlives the handle (the device drops `blas` before `stream`).
            *blas = Some(unsafe { rocblas::Handle::new(lib, self.stream.raw)? });
        }
        Ok(blas)
    }

    fn own_alloc<'a>(&self, a: &'a dyn RawAlloc) -> Result<&'a HipAlloc> {
        match a.as_any().downcast_ref::<HipAlloc>() {
            Some(h) if h.ordinal == self.ordinal => Ok(h),
            _ => Err(Error::ForeignObject { what: "buffer" }),
        }
    }

    fn own_module(&self, m: &Module) -> Result<Arc<HipModule>> {
        match Arc::clone(&m.inner).downcast::<HipModule>() {
            Ok(h) if h.ordinal == self.ordinal => Ok(h),
            _ => Err(Error::ForeignObject { what: "module" }),
        }
    }

    fn own_kernel<'a>(&self, k: &'a Kernel) -> Result<&'a HipKernel> {
        match k.inner.downcast_ref::<HipKernel>() {
            Some(h) if h.module.ordinal == self.ordinal => Ok(h),
            _ => Err(Error::ForeignObject { what: "kernel" }),
        }
    }

    /// Validates a launch and returns the kernel handle and the packed argument values.
    /// One launch path for both kinds: checks, packs the arguments and launches, ordinary or cooperative.
    fn launch_with(&self, kernel: &Kernel, config: &LaunchConfig, args: &[Arg], cooperative: bool) -> Result<()> {
        let (function, mut values) = self.prepare(kernel, config, args)?;
        if cooperative && !self.hip.has_cooperative_launch() {
            let version = self.hip.runtime_version().map(|v| v.to_string()).unwrap_or_else(|_| "?".to_string());
            return Err(Error::BadLaunch {
                kernel: kernel.name.clone(),
                problem: format!(
                    "cooperatively: HIP {version} has no hipModuleLaunchCooperativeKernel (added in ROCm 5.5); \
                     load a newer rocm module"
                ),
            });
        }
        let mut params: Vec<*mut c_void> = values.iter_mut().map(|v| (v as *mut u64).cast::<c_void>()).collect();
        self.current()?;
        // SAFETY: the kernel holds its module; `values` outlives the call and has one 8-byte slot per argument,
        // each at least the parameter's size (checked against metadata where known); buffers passed as pointers
        // are the caller's to keep alive until the stream has run the kernel (freeing one synchronises first).
        match unsafe { self.hip.launch(function, config, self.stream.raw, &mut params, cooperative) } {
            Err(Error::Api { code, .. }) if code == i64::from(hipError_t::hipErrorCooperativeLaunchTooLarge.0) => {
                Err(Error::BadLaunch {
                    kernel: kernel.name.clone(),
                    problem: format!(
                        "{} groups cooperatively: more than can be resident at once on {} CUs \
                         (see occupancy_groups_per_cu)",
                        config.groups(),
                        self.props.cu_count
                    ),
                })
            }
            other => other,
        }
    }

    fn prepare(&self, kernel: &Kernel, config: &LaunchConfig, args: &[Arg]) -> Result<(hipFunction_t, Vec<u64>)> {
        kernel.check_args(args)?;
        check_launch(&self.props, kernel, config)?;
        Ok((self.own_kernel(kernel)?.function, pack_args(args)))
    }
}

fn size_mismatch(what: &'static str, detail: String) -> Error {
    Error::SizeMismatch { what, detail }
}

impl Device for HipDevice {
    fn props(&self) -> &Props {
        &self.props
    }

    fn memory_info(&self) -> Result<(u64, u64)> {
        self.current()?;
        self.hip.mem_info()
    }

    fn alloc(&self, bytes: usize) -> Result<Box<dyn RawAlloc>> {
        let (free, total) = self.memory_info()?;
        let requested = bytes as u64;
        if requested > free {
            return Err(Error::OutOfMemory { requested, free, total });
        }
        let ptr = match self.hip.malloc(bytes) {
            Ok(ptr) => ptr,
            // Free memory shrank between the check and the allocation, or fragmentation: same advice.
            Err(Error::Api { code, .. }) if code == i64::from(hipError_t::hipErrorOutOfMemory.0) => {
                return Err(Error::OutOfMemory { requested, free, total });
            }
            Err(e) => return Err(e),
        };
        Ok(Box::new(HipAlloc { mem: Owned::new(self.hip, ptr, free_allocation), bytes, ordinal: self.ordinal }))
    }

    fn copy_to_device(&self, dst: &dyn RawAlloc, src: &[u8]) -> Result<()> {
        let dst = self.own_alloc(dst)?;
        if src.len() > dst.bytes {
            return Err(size_mismatch(
                "copy_to_device",
                format!("{} bytes into a {}-byte buffer", src.len(), dst.bytes),
            ));
        }
        if src.is_empty() {
            return Ok(());
        }
        self.current()?;
        // SAFETY: `dst` is our live allocation of at least `src.len()` bytes (checked above); the stream is ours.
        unsafe { self.hip.copy_to_device(dst.ptr(), src, self.stream.raw) }
    }

    fn copy_to_host(&self, src: &dyn RawAlloc, dst: &mut [u8]) -> Result<()> {
        let src = self.own_alloc(src)?;
        if dst.len() > src.bytes {
            return Err(size_mismatch("copy_to_host", format!("{} bytes from a {}-byte buffer", dst.len(), src.bytes)));
        }
        if dst.is_empty() {
            return Ok(());
        }
        self.current()?;
        // SAFETY: `src` is our live allocation of at least `dst.len()` bytes (checked above); the stream is ours.
        unsafe { self.hip.copy_to_host(dst, src.ptr(), self.stream.raw) }
    }

    fn copy_on_device(&self, src: &dyn RawAlloc, dst: &dyn RawAlloc, bytes: usize) -> Result<()> {
        let (src, dst) = (self.own_alloc(src)?, self.own_alloc(dst)?);
        if bytes > src.bytes || bytes > dst.bytes {
            return Err(size_mismatch(
                "copy_on_device",
                format!("{bytes} bytes from a {}-byte buffer into a {}-byte buffer", src.bytes, dst.bytes),
            ));
        }
        if bytes == 0 {
            return Ok(());
        }
        self.current()?;
        // SAFETY: both are our live allocations of at least `bytes` bytes (checked above); the stream is ours.
        unsafe { self.hip.copy_on_device(dst.ptr(), src.ptr(), bytes, self.stream.raw) }
    }

    fn fill_bytes(&self, dst: &dyn RawAlloc, value: u8) -> Result<()> {
        let dst = self.own_alloc(dst)?;
        if dst.bytes == 0 {
            return Ok(());
        }
        self.current()?;
        // SAFETY: our live allocation, filled over exactly its size; the stream is ours.
        unsafe { self.hip.fill(dst.ptr(), value, dst.bytes, self.stream.raw) }
    }

    fn load_module(&self, image: &[u8]) -> Result<Module> {
        if image.is_empty() {
            return Err(Error::BadCodeObject { runtime: hip::RUNTIME, reason: "the code object is empty".to_string() });
        }
        let image: Box<[u8]> = image.into();
        self.current()?;
        // SAFETY: the copy `image` moves into the module below (its heap buffer does not move) and is freed only
        // after hipModuleUnload in `HipModule::drop`.
        let raw = unsafe { self.hip.module_load(&image, &self.props.arch_full)? };
        let module =
            HipModule { module: Owned::new(self.hip, raw, Hip::module_unload), ordinal: self.ordinal, _image: image };
        Ok(Module { inner: Arc::new(module), kernel_names: Vec::new() })
    }

    fn kernel(&self, module: &Module, name: &str) -> Result<Kernel> {
        let owner = self.own_module(module)?;
        // SAFETY: `owner` keeps the module loaded for these calls and, inside the kernel, for the kernel's life.
        let function = unsafe { self.hip.module_function(owner.module.raw, name)? };
        let Some(function) = function else {
            return Err(Error::KernelNotFound {
                name: name.to_string(),
                available: if module.kernel_names.is_empty() {
                    "unknown: the module's kernel list was not read".to_string()
                } else {
                    module.kernel_names.join(", ")
                },
            });
        };
        // SAFETY: as above: the function's module is live.
        let attr = |a: FnAttr| unsafe { self.hip.function_attribute(function, a) }.map(non_negative);
        let attrs = KernelAttrs {
            registers_per_item: attr(FnAttr::HIP_FUNC_ATTRIBUTE_NUM_REGS)?,
            static_lds_bytes: attr(FnAttr::HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
            scratch_bytes_per_item: attr(FnAttr::HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
            max_group_size: attr(FnAttr::HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        };
        let inner = HipKernel { function, module: owner };
        // The kernels layer fills `param_sizes` from the code object's metadata.
        Ok(Kernel { name: name.to_string(), attrs, param_sizes: None, inner: Arc::new(inner) })
    }

    fn launch(&self, kernel: &Kernel, config: &LaunchConfig, args: &[Arg]) -> Result<()> {
        self.launch_with(kernel, config, args, false)
    }

    fn launch_cooperative(&self, kernel: &Kernel, config: &LaunchConfig, args: &[Arg]) -> Result<()> {
        self.launch_with(kernel, config, args, true)
    }

    fn occupancy_groups_per_cu(&self, kernel: &Kernel, group_size: u32, dynamic_lds_bytes: u32) -> Result<u32> {
        let function = self.own_kernel(kernel)?.function;
        let Ok(group) = i32::try_from(group_size) else {
            return Err(Error::BadLaunch {
                kernel: kernel.name.clone(),
                problem: format!("groups of {group_size} items"),
            });
        };
        self.current()?;
        // SAFETY: the kernel holds its module.
        let groups = unsafe { self.hip.occupancy(function, group, dynamic_lds_bytes as usize)? };
        Ok(non_negative(groups))
    }

    fn time_ms(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<f32> {
        self.current()?;
        let (start, stop) = (Event::create(self.hip)?, Event::create(self.hip)?);
        // SAFETY: both events and the stream are live and of this device (created with it current).
        unsafe { self.hip.event_record(start.raw, self.stream.raw)? };
        work()?;
        self.current()?;
        // SAFETY: as above.
        unsafe {
            self.hip.event_record(stop.raw, self.stream.raw)?;
            self.hip.event_synchronize(stop.raw)?;
            self.hip.event_elapsed_ms(start.raw, stop.raw)
        }
    }

    fn capture(&self, times: u32, work: &mut dyn FnMut() -> Result<()>) -> Result<Option<Box<dyn Replay + '_>>> {
        if !self.hip.has_graphs() {
            return Ok(None); // a HIP older than 4.3: batches are timed on the stream
        }
        self.current()?;
        // SAFETY: the stream is live and not capturing (every capture ends below).
        unsafe { self.hip.stream_begin_capture(self.stream.raw)? };
        let mut enqueued = Ok(());
        for _ in 0..times {
            enqueued = work();
            if enqueued.is_err() {
                break;
            }
        }
        // The capture ends whatever happened, so the stream is usable again.
        // SAFETY: the stream is capturing (begun above).
        let (raw, ended) = unsafe { self.hip.stream_end_capture(self.stream.raw) };
        let graph = (!raw.is_null()).then(|| Owned::new(self.hip, raw, Hip::graph_destroy));
        enqueued?;
        ended?;
        let graph = graph.ok_or_else(|| Error::Api {
            api: "hipStreamEndCapture",
            code: 0,
            code_name: self.hip.error_name(hipError_t::hipSuccess),
            text: "returned success but no graph".to_string(),
        })?;
        // SAFETY: the graph is live (owned above); it may be destroyed once instantiated.
        let exec = Owned::new(self.hip, unsafe { self.hip.graph_instantiate(graph.raw)? }, Hip::graph_exec_destroy);
        if self.hip.has_graph_upload() {
            // Uploading now keeps the first replay's set-up out of the timed ones (ROCm 5.3+).
            // SAFETY: the executable graph and the stream are live and of this device.
            unsafe { self.hip.graph_upload(exec.raw, self.stream.raw)? };
        }
        Ok(Some(Box::new(HipReplay { exec, device: self })))
    }

    fn synchronize(&self) -> Result<()> {
        // SAFETY: the stream is live for the device's life.
        unsafe { self.hip.stream_synchronize(self.stream.raw) }
    }

    fn blas(&self) -> Result<String> {
        rocblas::library().map(blas_text)
    }

    fn blas_call(&self, call: BlasCall<'_>) -> Result<()> {
        match call.precision {
            Precision::F32 => self.blas_call_of::<f32>(call),
            Precision::F64 => self.blas_call_of::<f64>(call),
        }
    }

    fn telemetry(&self) -> Result<Box<dyn Telemetry>> {
        amdsmi::open(self.hip, self.hip_ordinal, &self.props)
    }
}

#[cfg(test)]
mod tests;
