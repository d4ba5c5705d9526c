//! NVIDIA platform: the CUDA driver API and cuBLAS, through `cudarc`'s raw bindings loaded at run time.
//!
//! Layers as in cudarc: [`cuda`] loads the driver and turns status codes into [`Error`]s (each call through `cu_call!`,
//! naming its function once); this file owns the handles (context, stream, events, memory, modules) and implements
//! [`Device`]. All of the NVIDIA `unsafe` is here.
#![allow(unsafe_code)]

/// Calls the CUDA driver function `$api` (cudarc's raw binding) with the arguments, naming it once: its status
/// becomes a `Result` in one place ([`cuda::check`]), the message naming the function as CUDA's headers do (without
/// the ABI suffix `_v2`). Used inside an `unsafe` block whose `SAFETY:` comment covers the arguments.
macro_rules! cu_call {
    ($api:ident($($arg:expr),* $(,)?)) => {
        $crate::device::nvidia::cuda::check(
            $crate::device::nvidia::cuda::api_name(stringify!($api)),
            cudarc::driver::sys::$api($($arg),*),
        )
    };
}

mod cublas;
mod cuda;
mod nvml;

use std::any::Any;
use std::cell::Cell;
use std::ffi::{c_int, c_uint, c_void, CString};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use cudarc::driver::sys;

use super::telemetry::Telemetry;
use super::{
    Arch, Arg, BlasCall, BlasOp, Device, Error, Kernel, KernelAttrs, LaunchConfig, Module, Platform, Props, RawAlloc,
    Replay, Result, RuntimeInfo, Survey, WaveSize,
};
use crate::precision::Precision;

/// Owns `$handle`, created in `$context`: on drop the context is made current and the driver call `$api` destroys
/// the handle, named once.
macro_rules! owned_in {
    ($context:expr, $handle:expr, $api:ident) => {
        Owned::new(Arc::clone($context), $handle, |context: &Arc<Context>, handle| {
            context.make_current()?;
            // SAFETY: called once, on drop, for a handle of this context that the call `$api` undoes and only the
            // `Owned` owns; the driver defers freeing what queued work still uses.
            unsafe { cu_call!($api(handle)) }
        })
    };
}

/// Surveys the CUDA driver, its devices and cuBLAS. Never panics: cudarc is called only after the driver loaded.
pub fn survey() -> Survey {
    let runtime = cuda::load_driver().and_then(|lib| {
        Ok(RuntimeInfo {
            library: lib.path.clone(),
            version: cuda::driver_api_version()?,
            driver_version: cuda::kernel_driver_version(),
        })
    });
    // The loader's error is rebuilt rather than cloned: each call reports the same candidates.
    let devices = cuda::load_driver().and_then(|_| list_devices());
    let blas = cublas::load().map(|l| l.path.clone());
    Survey { platform: Platform::Nvidia, runtime, devices, blas }
}

fn list_devices() -> Result<Vec<Props>> {
    cuda::init()?;
    let mut count: c_int = 0;
    // SAFETY: the driver is loaded and initialised; cuDeviceGetCount writes an int.
    unsafe { cu_call!(cuDeviceGetCount(&mut count)) }?;
    if count == 0 {
        return Err(Error::NoDevice {
            runtime: "CUDA",
            version: cuda::driver_api_version()?,
            vendor: "NVIDIA",
            code_name: "CUDA_ERROR_NO_DEVICE".into(),
            hint: String::new(),
        });
    }
    (0..count as u32).map(|i| device_props(device_handle(i)?, i)).collect()
}

fn device_handle(ordinal: u32) -> Result<sys::CUdevice> {
    let mut count: c_int = 0;
    // SAFETY: the driver is initialised; cuDeviceGetCount writes an int.
    unsafe { cu_call!(cuDeviceGetCount(&mut count)) }?;
    if ordinal >= count as u32 {
        return Err(Error::BadOrdinal { platform: Platform::Nvidia, ordinal, count: count as u32 });
    }
    let mut dev: sys::CUdevice = 0;
    // SAFETY: the ordinal is in range; cuDeviceGet writes the handle.
    unsafe { cu_call!(cuDeviceGet(&mut dev, ordinal as c_int)) }?;
    Ok(dev)
}

/// The device's PCI address as the driver writes it, `dddd:bb:dd.f` (e.g. `0000:00:06.0`): NVML finds the same GPU
/// by it, whatever `CUDA_VISIBLE_DEVICES` does to ordinals.
fn pci_bus_id(dev: sys::CUdevice) -> Result<String> {
    let mut buf = [0 as std::ffi::c_char; 64];
    // SAFETY: dev is a valid device handle; the driver writes a NUL-terminated id of at most `len` bytes into the
    // live buffer.
    unsafe { cu_call!(cuDeviceGetPCIBusId(buf.as_mut_ptr(), buf.len() as c_int, dev)) }?;
    Ok(nvml::c_string(&buf))
}

fn attribute(dev: sys::CUdevice, attr: sys::CUdevice_attribute) -> Result<i32> {
    let mut v: c_int = 0;
    // SAFETY: dev is a valid device handle and attr a valid enumerator; the call writes an int.
    unsafe { cu_call!(cuDeviceGetAttribute(&mut v, attr, dev)) }?;
    Ok(v)
}

/// An attribute the driver may not report (CUDA 13 dropped some clocks): `None` when absent or zero.
fn optional_attribute(dev: sys::CUdevice, attr: sys::CUdevice_attribute) -> Option<u32> {
    attribute(dev, attr).ok().filter(|&v| v > 0).map(|v| v as u32)
}

fn device_props(dev: sys::CUdevice, ordinal: u32) -> Result<Props> {
    use sys::CUdevice_attribute as A;
    let mut name = [0 as std::ffi::c_char; 256];
    // SAFETY: the buffer holds 256 chars and the driver writes a NUL-terminated name of at most that length.
    unsafe { cu_call!(cuDeviceGetName(name.as_mut_ptr(), name.len() as c_int, dev)) }?;
    // SAFETY: the driver NUL-terminated the name inside the buffer.
    let name = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned();
    let mut total: usize = 0;
    // SAFETY: dev is valid; the call writes a usize.
    unsafe { cu_call!(cuDeviceTotalMem_v2(&mut total, dev)) }?;
    let major = attribute(dev, A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
    let minor = attribute(dev, A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
    let arch_name = format!("sm_{major}{minor}");
    let arch = Arch::parse(&arch_name).map_err(|_| Error::Api {
        api: "cuDeviceGetAttribute",
        code: 0,
        code_name: "COMPUTE_CAPABILITY".into(),
        text: format!("unexpected compute capability {major}.{minor}"),
    })?;
    let u = |attr| attribute(dev, attr).map(|v| v.max(0) as u32);
    Ok(Props {
        platform: Platform::Nvidia,
        ordinal,
        name,
        arch,
        arch_full: arch_name,
        wave_size: WaveSize(u(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?),
        cu_count: u(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        max_items_per_cu: u(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
        max_group_size: u(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        max_groups_per_cu: optional_attribute(dev, A::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR),
        lds_bytes_per_cu: u64::from(u(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)?),
        lds_bytes_per_group: u64::from(u(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?),
        lds_bytes_per_group_optin: u64::from(u(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?),
        registers_per_cu: u(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)?,
        clock_mhz: optional_attribute(dev, A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE).map(|khz| khz / 1000),
        memory_clock_mhz: optional_attribute(dev, A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE).map(|khz| khz / 1000),
        memory_bus_bits: optional_attribute(dev, A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH),
        l2_bytes: optional_attribute(dev, A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE).map(u64::from),
        memory_bytes: total as u64,
        runtime_version: format!("CUDA driver API {}", cuda::driver_api_version()?),
        driver_version: cuda::kernel_driver_version(),
        test_runtime: false,
    })
}

/// Opens NVIDIA device `ordinal`: retains its primary context and creates the device's stream and timing events.
pub fn open(ordinal: u32) -> Result<Box<dyn Device>> {
    cuda::load_driver()?;
    cuda::init()?;
    let dev = device_handle(ordinal)?;
    let props = device_props(dev, ordinal)?;
    let mut ctx = std::ptr::null_mut();
    // SAFETY: dev is valid; the primary context is retained here and released in `Context::drop`.
    unsafe { cu_call!(cuDevicePrimaryCtxRetain(&mut ctx, dev)) }?;
    let context = Arc::new(Context { ctx, dev });
    context.make_current()?;
    let mut stream = std::ptr::null_mut();
    // SAFETY: the context is current; a non-blocking stream does not synchronise with the legacy default stream.
    unsafe { cu_call!(cuStreamCreate(&mut stream, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as c_uint)) }?;
    let stream = owned_in!(&context, stream, cuStreamDestroy_v2);
    let events = (Event::create(&context)?, Event::create(&context)?);
    let has_param_info = cuda::has_symbol("cuFuncGetParamInfo");
    Ok(Box::new(CudaDevice {
        props,
        context,
        stream,
        events: Mutex::new(events),
        blas: Mutex::new(None),
        has_param_info,
    }))
}

/// A retained primary context. Everything allocated in it holds an `Arc` to it, so it is released last.
struct Context {
    ctx: sys::CUcontext,
    dev: sys::CUdevice,
}

// SAFETY: a CUDA context handle may be made current on any thread; the driver is thread-safe.
unsafe impl Send for Context {}
// SAFETY: as above; the context itself is never mutated through a shared reference.
unsafe impl Sync for Context {}

thread_local! {
    /// The context this thread last made current, so launches skip a redundant driver call.
    static CURRENT: Cell<sys::CUcontext> = const { Cell::new(std::ptr::null_mut()) };
}

impl Context {
    fn make_current(&self) -> Result<()> {
        if CURRENT.with(|c| c.get()) == self.ctx {
            return Ok(());
        }
        // SAFETY: the context is retained for as long as `self` lives.
        unsafe { cu_call!(cuCtxSetCurrent(self.ctx)) }?;
        CURRENT.with(|c| c.set(self.ctx));
        Ok(())
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        CURRENT.with(|c| {
            if c.get() == self.ctx {
                c.set(std::ptr::null_mut())
            }
        });
        // SAFETY: balances the retain in `open`.
        let status = unsafe { sys::cuDevicePrimaryCtxRelease_v2(self.dev) };
        if status != sys::CUresult::CUDA_SUCCESS {
            eprintln!("warning: cuDevicePrimaryCtxRelease failed: {}", cuda::error_name(status));
        }
    }
}

/// A driver object created in a context, destroyed on drop (with the context current) by the driver call paired with
/// its creation; every handle the device owns (stream, events, memory, modules, graphs) is one.
type Owned<H> = super::owned::Owned<H, Arc<Context>>;

type Stream = Owned<sys::CUstream>;
type Event = Owned<sys::CUevent>;
type CudaModule = Owned<sys::CUmodule>;

impl Event {
    fn create(context: &Arc<Context>) -> Result<Event> {
        context.make_current()?;
        let mut e = std::ptr::null_mut();
        // SAFETY: the context is current; default flags keep timing enabled.
        unsafe { cu_call!(cuEventCreate(&mut e, sys::CUevent_flags::CU_EVENT_DEFAULT as c_uint)) }?;
        Ok(owned_in!(context, e, cuEventDestroy_v2))
    }
}

/// Device memory from `cuMemAlloc`, freed on drop.
struct CudaAlloc {
    mem: Owned<sys::CUdeviceptr>,
    bytes: usize,
}

impl CudaAlloc {
    fn ptr(&self) -> sys::CUdeviceptr {
        self.mem.raw
    }
}

impl RawAlloc for CudaAlloc {
    fn device_ptr(&self) -> u64 {
        self.ptr()
    }
    fn bytes(&self) -> usize {
        self.bytes
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// An instantiated graph, replayed on the device's stream; destroyed on drop.
struct CudaReplay<'d> {
    exec: Owned<sys::CUgraphExec>,
    device: &'d CudaDevice,
}

impl Replay for CudaReplay<'_> {
    fn launch(&self) -> Result<()> {
        self.device.context.make_current()?;
        // SAFETY: the executable graph and the stream are live in the current context (the borrow of the device
        // keeps the stream alive).
        unsafe { cu_call!(cuGraphLaunch(self.exec.raw, self.device.stream.raw)) }
    }
}

/// Kernel arguments passed without a heap allocation.
const INLINE_ARGS: usize = 16;

/// Static plus dynamic shared memory a block may use without opting in (CUDA Programming Guide: 48 KiB).
const DEFAULT_LDS_LIMIT: u32 = 48 * 1024;

struct CudaFunction {
    handle: sys::CUfunction,
    /// Dynamic shared memory the function has been opted in to, so the attribute is set only when it grows.
    dynamic_lds_optin: AtomicU32,
    _module: Arc<CudaModule>,
}

// SAFETY: function handles are immutable and usable from any thread with the context current.
unsafe impl Send for CudaFunction {}
// SAFETY: as above; the only mutable state is atomic.
unsafe impl Sync for CudaFunction {}

struct CudaDevice {
    props: Props,
    context: Arc<Context>,
    stream: Stream,
    events: Mutex<(Event, Event)>,
    blas: Mutex<Option<cublas::Handle>>,
    has_param_info: bool,
}

impl CudaDevice {
    /// Runs `f` with the device's cuBLAS handle, created on first use, with the context current.
    fn with_blas(&self, f: impl FnOnce(&cublas::Handle) -> Result<()>) -> Result<()> {
        self.context.make_current()?;
        let mut handle =
            self.blas.lock().map_err(|_| Error::ForeignObject { what: "cuBLAS handle (poisoned lock)" })?;
        if handle.is_none() {
            *handle = Some(cublas::Handle::new(self.stream.raw)?);
        }
        f(handle.as_ref().expect("the handle was created just above"))
    }

    /// [`Device::blas_call`] in element type `T`: the sizes are checked ([`BlasCall::checked_sizes`]) and the
    /// buffers to be this device's, then cuBLAS runs on the device's handle, enqueued on its stream.
    fn blas_call_of<T: cublas::Element>(&self, call: BlasCall<'_>) -> Result<()> {
        let sizes = call.checked_sizes()?;
        match call.op {
            BlasOp::Gemm { a, b, c, .. } => {
                let (a, b, c) = (self.alloc_of(a)?.ptr(), self.alloc_of(b)?.ptr(), self.alloc_of(c)?.ptr());
                // SAFETY: all three are this device's live allocations with their sizes checked above.
                self.with_blas(|h| unsafe { h.gemm_row_major::<T>(sizes, a, b, c) })
            }
            BlasOp::Dot { x, y, result, .. } => {
                let (x, y, r) = (self.alloc_of(x)?.ptr(), self.alloc_of(y)?.ptr(), self.alloc_of(result)?.ptr());
                // SAFETY: as for the GEMM: this device's allocations, sizes checked above.
                self.with_blas(|h| unsafe { h.dot::<T>(sizes[0], x, y, r) })
            }
            BlasOp::Asum { x, result, .. } => {
                let (x, r) = (self.alloc_of(x)?.ptr(), self.alloc_of(result)?.ptr());
                // SAFETY: as for the GEMM.
                self.with_blas(|h| unsafe { h.asum::<T>(sizes[0], x, r) })
            }
        }
    }

    fn alloc_of<'a>(&self, raw: &'a dyn RawAlloc) -> Result<&'a CudaAlloc> {
        raw.as_any().downcast_ref::<CudaAlloc>().ok_or(Error::ForeignObject { what: "buffer" })
    }

    fn function_of<'a>(&self, kernel: &'a Kernel) -> Result<&'a CudaFunction> {
        kernel.inner.downcast_ref::<CudaFunction>().ok_or(Error::ForeignObject { what: "kernel" })
    }

    fn function_attribute(&self, f: sys::CUfunction, attr: sys::CUfunction_attribute) -> Result<u32> {
        let mut v: c_int = 0;
        // SAFETY: f is a live function handle; the call writes an int.
        unsafe { cu_call!(cuFuncGetAttribute(&mut v, attr, f)) }?;
        Ok(v.max(0) as u32)
    }

    /// Parameter sizes from the driver (CUDA 12.4+), so launches can be checked before they are made.
    fn param_sizes(&self, f: sys::CUfunction) -> Option<Vec<usize>> {
        if !self.has_param_info {
            return None;
        }
        let mut sizes = Vec::new();
        loop {
            let (mut offset, mut size) = (0usize, 0usize);
            // SAFETY: f is live; the symbol exists (checked at open); past the last parameter the driver returns
            // CUDA_ERROR_INVALID_VALUE, which ends the loop.
            let status = unsafe { sys::cuFuncGetParamInfo(f, sizes.len(), &mut offset, &mut size) };
            match status {
                sys::CUresult::CUDA_SUCCESS => sizes.push(size),
                sys::CUresult::CUDA_ERROR_INVALID_VALUE => return Some(sizes),
                _ => return None,
            }
            if sizes.len() > 1024 {
                return None;
            }
        }
    }

    fn check_geometry(&self, kernel: &Kernel, config: &LaunchConfig) -> Result<()> {
        let items = config.group_items();
        let problem = if config.groups() == 0 || items == 0 {
            Some("an empty grid or group".to_string())
        } else if items > u64::from(kernel.attrs.max_group_size) {
            Some(format!("groups of {items} items (this kernel allows at most {})", kernel.attrs.max_group_size))
        } else if u64::from(config.dynamic_lds_bytes) + u64::from(kernel.attrs.static_lds_bytes)
            > self.props.lds_bytes_per_group_optin
        {
            Some(format!(
                "with {} bytes of dynamic LDS on top of {} static (the device allows {} per group)",
                config.dynamic_lds_bytes, kernel.attrs.static_lds_bytes, self.props.lds_bytes_per_group_optin
            ))
        } else {
            None
        };
        match problem {
            Some(problem) => Err(Error::BadLaunch { kernel: kernel.name.clone(), problem }),
            None => Ok(()),
        }
    }

    /// Raises the function's dynamic shared-memory limit when a launch asks for more than it allows. Without an
    /// opt-in, static plus dynamic shared memory must stay within 48 KiB, so the default dynamic limit is 48 KiB minus
    /// the kernel's static shared memory.
    fn opt_in_lds(&self, f: &CudaFunction, bytes: u32) -> Result<()> {
        if bytes <= f.dynamic_lds_optin.load(Ordering::Relaxed) {
            return Ok(());
        }
        // SAFETY: f is live and the value is within the device's opt-in limit (checked by check_geometry).
        unsafe {
            cu_call!(cuFuncSetAttribute(
                f.handle,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes as c_int,
            ))
        }?;
        f.dynamic_lds_optin.store(bytes, Ordering::Relaxed);
        Ok(())
    }

    fn launch_with(&self, kernel: &Kernel, config: &LaunchConfig, args: &[Arg], cooperative: bool) -> Result<()> {
        let f = self.function_of(kernel)?;
        kernel.check_args(args)?;
        self.check_geometry(kernel, config)?;
        self.context.make_current()?;
        self.opt_in_lds(f, config.dynamic_lds_bytes)?;
        // The driver reads each argument through a pointer to its value; the values live in `values` until the
        // launch call returns (the driver copies them at launch).
        // Up to INLINE_ARGS arguments live on the stack, so a launch allocates nothing (the launch path is measured
        // against a C++ program by `suite bench launch`); more spill to the heap.
        let mut inline_values = [[0u8; 8]; INLINE_ARGS];
        let mut heap_values = Vec::new();
        let values: &mut [[u8; 8]] = if args.len() <= INLINE_ARGS {
            &mut inline_values[..args.len()]
        } else {
            heap_values.resize(args.len(), [0u8; 8]);
            &mut heap_values
        };
        for (slot, arg) in values.iter_mut().zip(args) {
            *slot = arg.to_bytes();
        }
        let mut inline_params = [std::ptr::null_mut::<c_void>(); INLINE_ARGS];
        let mut heap_params = Vec::new();
        let params: &mut [*mut c_void] = if args.len() <= INLINE_ARGS {
            &mut inline_params[..args.len()]
        } else {
            heap_params.resize(args.len(), std::ptr::null_mut());
            &mut heap_params
        };
        for (p, v) in params.iter_mut().zip(values.iter_mut()) {
            *p = v.as_mut_ptr().cast::<c_void>();
        }
        let [gx, gy, gz] = config.grid;
        let [bx, by, bz] = config.group;
        let (h, lds, stream, p) = (f.handle, config.dynamic_lds_bytes, self.stream.raw, params.as_mut_ptr());
        // SAFETY (both calls): f is live in the current context, params points at one value per kernel parameter
        // (sizes checked against the driver's parameter info when available), and the stream belongs to the context.
        let status = if cooperative {
            // SAFETY: as above.
            unsafe { sys::cuLaunchCooperativeKernel(h, gx, gy, gz, bx, by, bz, lds, stream, p) }
        } else {
            // SAFETY: as above; no `extra` arguments.
            unsafe { sys::cuLaunchKernel(h, gx, gy, gz, bx, by, bz, lds, stream, p, std::ptr::null_mut()) }
        };
        match status {
            sys::CUresult::CUDA_SUCCESS => Ok(()),
            sys::CUresult::CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE => Err(Error::BadLaunch {
                kernel: kernel.name.clone(),
                problem: format!(
                    "{} groups cooperatively: not all of them can be resident at once (ask occupancy for the limit)",
                    config.groups()
                ),
            }),
            other => {
                Err(cuda::api_error(if cooperative { "cuLaunchCooperativeKernel" } else { "cuLaunchKernel" }, other))
            }
        }
    }

    fn stream_sync(&self) -> Result<()> {
        // SAFETY: the stream is live in the current context.
        unsafe { cu_call!(cuStreamSynchronize(self.stream.raw)) }
    }
}

impl Device for CudaDevice {
    fn props(&self) -> &Props {
        &self.props
    }

    fn memory_info(&self) -> Result<(u64, u64)> {
        self.context.make_current()?;
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: the context is current; the call writes two usizes.
        unsafe { cu_call!(cuMemGetInfo_v2(&mut free, &mut total)) }?;
        Ok((free as u64, total as u64))
    }

    fn alloc(&self, bytes: usize) -> Result<Box<dyn RawAlloc>> {
        let (free, total) = self.memory_info()?;
        if bytes as u64 > free {
            return Err(Error::OutOfMemory { requested: bytes as u64, free, total });
        }
        let mut ptr: sys::CUdeviceptr = 0;
        // cuMemAlloc rejects zero bytes; a one-byte allocation keeps empty buffers valid.
        // SAFETY: the context is current (memory_info made it so); the call writes the address.
        match unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes.max(1)) } {
            sys::CUresult::CUDA_SUCCESS => {
                Ok(Box::new(CudaAlloc { mem: owned_in!(&self.context, ptr, cuMemFree_v2), bytes }))
            }
            sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => Err(Error::OutOfMemory { requested: bytes as u64, free, total }),
            other => Err(cuda::api_error("cuMemAlloc", other)),
        }
    }

    fn copy_to_device(&self, dst: &dyn RawAlloc, src: &[u8]) -> Result<()> {
        let dst = self.alloc_of(dst)?;
        if src.len() > dst.bytes {
            return Err(Error::SizeMismatch {
                what: "copy to device",
                detail: format!("{} bytes into a buffer of {}", src.len(), dst.bytes),
            });
        }
        self.context.make_current()?;
        // SAFETY: dst holds at least src.len() bytes; src stays borrowed until the stream sync below returns.
        unsafe { cu_call!(cuMemcpyHtoDAsync_v2(dst.ptr(), src.as_ptr().cast(), src.len(), self.stream.raw)) }?;
        self.stream_sync()
    }

    fn copy_to_host(&self, src: &dyn RawAlloc, dst: &mut [u8]) -> Result<()> {
        let src = self.alloc_of(src)?;
        if dst.len() > src.bytes {
            return Err(Error::SizeMismatch {
                what: "copy to host",
                detail: format!("{} bytes from a buffer of {}", dst.len(), src.bytes),
            });
        }
        self.context.make_current()?;
        // SAFETY: src holds at least dst.len() bytes; dst stays borrowed until the stream sync below returns, and
        // the copy is ordered after earlier work on the stream.
        unsafe { cu_call!(cuMemcpyDtoHAsync_v2(dst.as_mut_ptr().cast(), src.ptr(), dst.len(), self.stream.raw)) }?;
        self.stream_sync()
    }

    fn copy_on_device(&self, src: &dyn RawAlloc, dst: &dyn RawAlloc, bytes: usize) -> Result<()> {
        let (src, dst) = (self.alloc_of(src)?, self.alloc_of(dst)?);
        if bytes > src.bytes || bytes > dst.bytes {
            return Err(Error::SizeMismatch {
                what: "copy on device",
                detail: format!("{bytes} bytes from a buffer of {} into one of {}", src.bytes, dst.bytes),
            });
        }
        self.context.make_current()?;
        // SAFETY: both buffers hold at least `bytes` and stay alive (they are borrowed by the caller, and freeing
        // waits for the stream).
        unsafe { cu_call!(cuMemcpyDtoDAsync_v2(dst.ptr(), src.ptr(), bytes, self.stream.raw)) }
    }

    fn fill_bytes(&self, dst: &dyn RawAlloc, value: u8) -> Result<()> {
        let dst = self.alloc_of(dst)?;
        self.context.make_current()?;
        // SAFETY: the buffer holds dst.bytes bytes.
        unsafe { cu_call!(cuMemsetD8Async(dst.ptr(), value, dst.bytes, self.stream.raw)) }
    }

    fn load_module(&self, image: &[u8]) -> Result<Module> {
        self.context.make_current()?;
        // cuModuleLoadData also accepts NUL-terminated PTX text, so it needs no length; a cubin's ELF header
        // carries its own sizes. Reading a truncated image is prevented by the kernels layer, which parses the ELF
        // before it reaches here.
        let mut module = std::ptr::null_mut();
        // SAFETY: image is a borrowed, complete code object; the driver copies what it needs before returning.
        let status = unsafe { sys::cuModuleLoadData(&mut module, image.as_ptr().cast()) };
        match status {
            sys::CUresult::CUDA_SUCCESS => {}
            sys::CUresult::CUDA_ERROR_NO_BINARY_FOR_GPU
            | sys::CUresult::CUDA_ERROR_INVALID_IMAGE
            | sys::CUresult::CUDA_ERROR_INVALID_SOURCE
            | sys::CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION => {
                return Err(Error::BadCodeObject {
                    runtime: "CUDA",
                    reason: format!(
                        "{} ({}) on a {} ({})",
                        cuda::error_name(status),
                        cuda::api_error("cuModuleLoadData", status),
                        self.props.name,
                        self.props.arch
                    ),
                })
            }
            other => return Err(cuda::api_error("cuModuleLoadData", other)),
        }
        let inner: Arc<CudaModule> = Arc::new(owned_in!(&self.context, module, cuModuleUnload));
        Ok(Module { inner, kernel_names: Vec::new() })
    }

    fn kernel(&self, module: &Module, name: &str) -> Result<Kernel> {
        let cuda_module =
            module.inner.clone().downcast::<CudaModule>().map_err(|_| Error::ForeignObject { what: "module" })?;
        self.context.make_current()?;
        let symbol = CString::new(name).map_err(|_| Error::KernelNotFound {
            name: name.to_string(),
            available: "(a kernel name cannot contain NUL)".into(),
        })?;
        let mut f = std::ptr::null_mut();
        // SAFETY: the module is live and the name NUL-terminated.
        let status = unsafe { sys::cuModuleGetFunction(&mut f, cuda_module.raw, symbol.as_ptr()) };
        match status {
            sys::CUresult::CUDA_SUCCESS => {}
            sys::CUresult::CUDA_ERROR_NOT_FOUND => {
                return Err(Error::KernelNotFound {
                    name: name.to_string(),
                    available: if module.kernel_names.is_empty() {
                        "not listed by the CUDA driver; see `suite kernels inspect`".into()
                    } else {
                        module.kernel_names.join(", ")
                    },
                })
            }
            other => return Err(cuda::api_error("cuModuleGetFunction", other)),
        }
        use sys::CUfunction_attribute as F;
        let attrs = KernelAttrs {
            registers_per_item: self.function_attribute(f, F::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
            static_lds_bytes: self.function_attribute(f, F::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
            scratch_bytes_per_item: self.function_attribute(f, F::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
            max_group_size: self.function_attribute(f, F::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        };
        let param_sizes = self.param_sizes(f);
        let default_dynamic = DEFAULT_LDS_LIMIT.saturating_sub(attrs.static_lds_bytes);
        let inner = Arc::new(CudaFunction {
            handle: f,
            dynamic_lds_optin: AtomicU32::new(default_dynamic),
            _module: cuda_module,
        });
        Ok(Kernel { name: name.to_string(), attrs, param_sizes, inner })
    }

    fn launch(&self, kernel: &Kernel, config: &LaunchConfig, args: &[Arg]) -> Result<()> {
        self.launch_with(kernel, config, args, false)
    }

    fn launch_cooperative(&self, kernel: &Kernel, config: &LaunchConfig, args: &[Arg]) -> Result<()> {
        self.launch_with(kernel, config, args, true)
    }

    fn occupancy_groups_per_cu(&self, kernel: &Kernel, group_size: u32, dynamic_lds_bytes: u32) -> Result<u32> {
        let f = self.function_of(kernel)?;
        self.context.make_current()?;
        self.opt_in_lds(f, dynamic_lds_bytes)?;
        let mut groups: c_int = 0;
        // SAFETY: f is live in the current context; the call writes an int.
        unsafe {
            cu_call!(cuOccupancyMaxActiveBlocksPerMultiprocessor(
                &mut groups,
                f.handle,
                group_size as c_int,
                dynamic_lds_bytes as usize,
            ))
        }?;
        Ok(groups.max(0) as u32)
    }

    fn time_ms(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<f32> {
        let events = self.events.lock().map_err(|_| Error::ForeignObject { what: "event pair (poisoned lock)" })?;
        let (start, stop) = (&events.0, &events.1);
        self.context.make_current()?;
        // SAFETY: the events and stream are live in the current context; the mutex keeps the pair to one timer.
        unsafe { cu_call!(cuEventRecord(start.raw, self.stream.raw)) }?;
        work()?;
        // SAFETY: as above.
        unsafe { cu_call!(cuEventRecord(stop.raw, self.stream.raw)) }?;
        // SAFETY: as above.
        unsafe { cu_call!(cuEventSynchronize(stop.raw)) }?;
        let mut ms = 0f32;
        // SAFETY: both events have completed on the same stream.
        unsafe { cu_call!(cuEventElapsedTime_v2(&mut ms, start.raw, stop.raw)) }?;
        Ok(ms)
    }

    fn capture(&self, times: u32, work: &mut dyn FnMut() -> Result<()>) -> Result<Option<Box<dyn Replay + '_>>> {
        self.context.make_current()?;
        // Thread-local mode: calls from this thread that are illegal while capturing fail (and end the capture)
        // instead of running; other threads are not affected.
        // SAFETY: the stream is live in the current context and not capturing (every capture ends below).
        unsafe {
            cu_call!(cuStreamBeginCapture_v2(
                self.stream.raw,
                sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
            ))
        }?;
        let mut enqueued = Ok(());
        for _ in 0..times {
            enqueued = work();
            if enqueued.is_err() {
                break;
            }
        }
        let mut handle = std::ptr::null_mut();
        // The capture ends whatever happened, so the stream is usable again.
        // SAFETY: the stream is capturing (begun above); the call writes the graph or null.
        let ended = unsafe { cu_call!(cuStreamEndCapture(self.stream.raw, &mut handle)) };
        let graph = (!handle.is_null()).then(|| owned_in!(&self.context, handle, cuGraphDestroy));
        enqueued?;
        ended?;
        let graph = graph.ok_or_else(|| cuda::api_error("cuStreamEndCapture", sys::CUresult::CUDA_ERROR_UNKNOWN))?;
        let mut exec = std::ptr::null_mut();
        // SAFETY: the graph is live in the current context; the call writes the executable graph.
        unsafe { cu_call!(cuGraphInstantiateWithFlags(&mut exec, graph.raw, 0)) }?;
        let exec = owned_in!(&self.context, exec, cuGraphExecDestroy);
        let replay = CudaReplay { exec, device: self };
        // Uploading now keeps the first replay's set-up out of the timed ones.
        // SAFETY: as in `CudaReplay::launch`.
        unsafe { cu_call!(cuGraphUpload(replay.exec.raw, self.stream.raw)) }?;
        Ok(Some(Box::new(replay)))
    }

    fn synchronize(&self) -> Result<()> {
        self.context.make_current()?;
        self.stream_sync()
    }

    fn blas(&self) -> Result<String> {
        cublas::load().map(|l| l.path.clone())
    }

    fn profiler_range(&self, on: bool) -> Result<()> {
        self.context.make_current()?;
        if on {
            // SAFETY: the device's context is current (above); the call takes no arguments.
            unsafe { cu_call!(cuProfilerStart()) }
        } else {
            // SAFETY: as for cuProfilerStart.
            unsafe { cu_call!(cuProfilerStop()) }
        }
    }

    fn blas_call(&self, call: BlasCall<'_>) -> Result<()> {
        match call.precision {
            Precision::F32 => self.blas_call_of::<f32>(call),
            Precision::F64 => self.blas_call_of::<f64>(call),
        }
    }

    fn telemetry(&self) -> Result<Box<dyn Telemetry>> {
        let bus_id = pci_bus_id(self.context.dev).map_err(|e| Error::TelemetryUnavailable {
            why: format!("the GPU's PCI bus id, which NVML finds it by, could not be read: {e}"),
        })?;
        Ok(Box::new(nvml::NvmlTelemetry::open(&bus_id)?))
    }
}
