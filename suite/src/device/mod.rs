//! One interface over a GPU, implemented once per platform.
//!
//! Everything above this module is safe Rust and vendor-neutral: it speaks of *groups*, *items*, *waves*, *CUs*
//! and *LDS*. The platform modules ([`amd`] over HIP, [`nvidia`] over the CUDA driver API) translate to their
//! runtime's terms and hold all of the suite's `unsafe` code. The shape follows BabelStream: one small interface of
//! blocking or stream-ordered operations, one self-contained implementation per programming model. A third, safe
//! implementation, [`crate::planning`], stands for a known part that is not present (`suite run --dry-run` on a
//! login node): it answers from the datasheet and the code objects' static metadata and runs nothing; it lives
//! above this layer, beside the kernel pipeline and the occupancy calculator it reads.

pub mod amd;
mod blas;
pub mod nvidia;
mod owned;
pub mod telemetry;

pub use blas::{BlasCall, BlasOp};

use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use bytemuck::Pod;
use serde::{Deserialize, Serialize};

/// Which vendor runtime drives a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Platform {
    /// AMD GPUs through the HIP runtime (`libamdhip64`).
    Amd,
    /// NVIDIA GPUs through the CUDA driver API (`libcuda`).
    Nvidia,
}

impl Platform {
    /// Every platform, in the order `--platform auto` tries them (AMD is the primary target).
    pub const ALL: [Platform; 2] = [Platform::Amd, Platform::Nvidia];

    /// Lower-case name used in CSV rows and file names.
    pub fn name(self) -> &'static str {
        match self {
            Platform::Amd => "amd",
            Platform::Nvidia => "nvidia",
        }
    }

    /// The runtime's own name, for messages.
    pub fn runtime(self) -> &'static str {
        match self {
            Platform::Amd => "HIP",
            Platform::Nvidia => "CUDA",
        }
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A GPU architecture as its compiler names it: `gfx90a`, `gfx942`, `sm_90`.
///
/// Target features such as `:sramecc+:xnack-` are not part of an `Arch`: code compiled for the bare name runs on
/// either setting. [`Props::arch_full`] keeps the runtime's full string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Arch(String);

impl Arch {
    /// Parses `gfx90a`, `gfx90a:sramecc+:xnack-`, `sm_90` or `sm_90a`.
    pub fn parse(text: &str) -> Result<Arch, ArchError> {
        let base = text.trim().split(':').next().unwrap_or_default().to_ascii_lowercase();
        let valid = if let Some(rest) = base.strip_prefix("gfx") {
            !rest.is_empty() && rest.chars().all(|c| c.is_ascii_hexdigit())
        } else if let Some(rest) = base.strip_prefix("sm_") {
            let digits = rest.strip_suffix('a').unwrap_or(rest);
            digits.len() >= 2 && digits.chars().all(|c| c.is_ascii_digit())
        } else {
            false
        };
        if valid {
            Ok(Arch(base))
        } else {
            Err(ArchError(text.to_string()))
        }
    }

    /// The name, e.g. `gfx90a`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The platform whose compiler targets this architecture.
    pub fn platform(&self) -> Platform {
        if self.0.starts_with("gfx") {
            Platform::Amd
        } else {
            Platform::Nvidia
        }
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for Arch {
    type Error = ArchError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        Arch::parse(&s)
    }
}

impl From<Arch> for String {
    fn from(a: Arch) -> String {
        a.0
    }
}

impl std::str::FromStr for Arch {
    type Err = ArchError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Arch::parse(s)
    }
}

/// An architecture name that is neither `gfx<hex>` nor `sm_<digits>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a GPU architecture: use an AMD name such as gfx90a or gfx942, or an NVIDIA one such as sm_90")]
pub struct ArchError(pub String);

/// Items per wave (AMD wavefront, NVIDIA warp): 64 on CDNA, 32 or 64 on RDNA, 32 on NVIDIA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct WaveSize(pub u32);

impl WaveSize {
    /// Number of waves a group of `items` work-items occupies (a partial wave costs a whole one).
    pub fn waves_for(self, items: u32) -> u32 {
        items.div_ceil(self.0)
    }
}

impl fmt::Display for WaveSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// What a device is and what it can hold, read from its runtime.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Props {
    /// Platform that drives the device.
    pub platform: Platform,
    /// Index among the platform's visible devices.
    pub ordinal: u32,
    /// Marketing name, e.g. `AMD Instinct MI250X` or `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// Architecture the compiler targets, e.g. `gfx90a` or `sm_90`.
    pub arch: Arch,
    /// The runtime's full architecture string, e.g. `gfx90a:sramecc+:xnack-` (same as `arch` on NVIDIA).
    pub arch_full: String,
    /// Items per wave.
    pub wave_size: WaveSize,
    /// Compute units (AMD CUs, NVIDIA SMs).
    pub cu_count: u32,
    /// Most work-items resident on one CU at once.
    pub max_items_per_cu: u32,
    /// Most work-items in one group.
    pub max_group_size: u32,
    /// Most groups resident on one CU at once, where the runtime reports it.
    pub max_groups_per_cu: Option<u32>,
    /// LDS (shared memory) per CU, in bytes.
    pub lds_bytes_per_cu: u64,
    /// LDS one group may use without opting in, in bytes.
    pub lds_bytes_per_group: u64,
    /// LDS one group may use after opting in (NVIDIA's large dynamic shared memory), in bytes.
    pub lds_bytes_per_group_optin: u64,
    /// 32-bit registers per CU (AMD: VGPRs per SIMD lane × lanes × SIMDs as the runtime reports them).
    pub registers_per_cu: u32,
    /// Peak shader clock in MHz, where the runtime reports it.
    pub clock_mhz: Option<u32>,
    /// Peak memory clock in MHz, where the runtime reports it.
    pub memory_clock_mhz: Option<u32>,
    /// Memory bus width in bits, where the runtime reports it.
    pub memory_bus_bits: Option<u32>,
    /// Last-level cache (L2) in bytes, where the runtime reports it.
    pub l2_bytes: Option<u64>,
    /// Device memory in bytes.
    pub memory_bytes: u64,
    /// Runtime version as the runtime reports it, e.g. `HIP 5.2.21153` or `CUDA driver API 13.0`.
    pub runtime_version: String,
    /// Kernel driver version, e.g. `580.159.04`, where it can be read.
    pub driver_version: String,
    /// Whether the runtime is the HIP-over-CUDA test runtime (the AMD code path on an NVIDIA GPU; `runtime_version`
    /// then starts with [`amd::TEST_RUNTIME_LABEL`]), as the device layer knows it: run.json records it as a field.
    /// A run.json from before the field has it worked out from `runtime_version` when read
    /// (`report/test_runtime.rs`).
    #[serde(default)]
    pub test_runtime: bool,
}

/// Everything that can go wrong below the experiments. Messages say what was sought and what to do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The runtime's shared library could not be loaded from any candidate.
    #[error("no {runtime} runtime found: {hint}\n{}", tried_list(.tried))]
    RuntimeNotFound {
        /// `HIP` or `CUDA`.
        runtime: &'static str,
        /// What to do, e.g. "load the rocm module or set ROCM_PATH".
        hint: &'static str,
        /// Each candidate path with the loader's reason for rejecting it.
        tried: Vec<(String, String)>,
    },
    /// The runtime loaded but sees no GPU.
    #[error("{runtime} runtime {version} loaded: no {vendor} GPU visible ({code_name}){hint}")]
    NoDevice {
        /// `HIP` or `CUDA`.
        runtime: &'static str,
        /// Runtime version, e.g. `5.2`.
        version: String,
        /// `AMD` or `NVIDIA`.
        vendor: &'static str,
        /// The runtime's error name, e.g. `hipErrorNoDevice`.
        code_name: String,
        /// Extra advice, starting with `: ` when present.
        hint: String,
    },
    /// A runtime call returned an error code.
    #[error("{api} failed: {code_name} ({code}): {text}")]
    Api {
        /// The runtime function, e.g. `hipMalloc`.
        api: &'static str,
        /// The raw code.
        code: i64,
        /// The runtime's name for the code.
        code_name: String,
        /// The runtime's description of the code.
        text: String,
    },
    /// `--device N` names a device that is not there.
    #[error("{platform} device {ordinal} does not exist: {count} visible (use --device 0..{count})")]
    BadOrdinal {
        /// Platform asked for.
        platform: Platform,
        /// Ordinal asked for.
        ordinal: u32,
        /// Devices visible.
        count: u32,
    },
    /// A code object built for one architecture was offered to a device of another.
    #[error("code object is for {found}, but the device is {wanted}: rebuild it with `suite kernels build --arch {wanted}` or drop the stale --kernels-dir")]
    WrongArch {
        /// The device's architecture.
        wanted: String,
        /// The code object's architecture.
        found: String,
    },
    /// The runtime could not load a module for a reason other than architecture.
    #[error("the {runtime} runtime rejected the code object: {reason}")]
    BadCodeObject {
        /// `HIP` or `CUDA`.
        runtime: &'static str,
        /// The runtime's error.
        reason: String,
    },
    /// A kernel name is not in a module.
    #[error("kernel `{name}` is not in the module (it holds: {available})")]
    KernelNotFound {
        /// The symbol asked for.
        name: String,
        /// The kernels the module does hold, comma-separated, where known.
        available: String,
    },
    /// A launch's arguments do not match the kernel's parameters.
    #[error("kernel `{kernel}`: {problem}")]
    BadArguments {
        /// The kernel.
        kernel: String,
        /// What is wrong, e.g. "takes 4 arguments, 3 given".
        problem: String,
    },
    /// A launch geometry the device cannot run.
    #[error("kernel `{kernel}`: cannot launch {problem}")]
    BadLaunch {
        /// The kernel.
        kernel: String,
        /// What is wrong.
        problem: String,
    },
    /// Not enough free device memory.
    #[error(
        "{requested} bytes requested but only {free} of {total} bytes are free on the device: choose smaller sizes"
    )]
    OutOfMemory {
        /// Bytes asked for.
        requested: u64,
        /// Bytes free.
        free: u64,
        /// Bytes in all.
        total: u64,
    },
    /// A copy or operation whose sizes do not match.
    #[error("size mismatch in {what}: {detail}")]
    SizeMismatch {
        /// The operation.
        what: &'static str,
        /// Which sizes differ.
        detail: String,
    },
    /// The vendor BLAS library is not installed or not found.
    #[error("{library} not found: {hint}\n{}", tried_list(.tried))]
    BlasNotFound {
        /// `rocBLAS` or `cuBLAS`.
        library: &'static str,
        /// What to do.
        hint: &'static str,
        /// Each candidate with the loader's reason.
        tried: Vec<(String, String)>,
    },
    /// A vendor BLAS call failed.
    #[error("{library} {api} failed with status {status}")]
    Blas {
        /// `rocBLAS` or `cuBLAS`.
        library: &'static str,
        /// The function.
        api: &'static str,
        /// The status code and its name.
        status: String,
    },
    /// An object from one device (a kernel, a buffer) was handed to another.
    #[error("{what} belongs to another device or platform")]
    ForeignObject {
        /// What was handed over.
        what: &'static str,
    },
    /// An operation that would run or allocate, asked of a plan ([`planning::PlanningDevice`]): a dry run only
    /// enumerates and estimates points.
    #[error("`{operation}` cannot run on a plan of {part}: nothing runs in a dry run (it plans from the data sheet)")]
    PlanningOnly {
        /// The planned part, e.g. `MI250X GCD (110 CUs)`.
        part: String,
        /// The device operation asked for, e.g. `alloc`.
        operation: &'static str,
    },
    /// A kernel's resources that only the vendor's driver can tell, asked of a plan of an NVIDIA part (a cubin
    /// that records no register count for it).
    #[error(
        "register use of `{kernel}` on {part} is known only to the NVIDIA driver: plan on the node, or plan for an \
         AMD part"
    )]
    PlanningNeedsDriver {
        /// The planned part, e.g. `H100 SXM5 (132 SMs)`.
        part: String,
        /// The kernel asked for.
        kernel: String,
    },
    /// Clocks, power and temperature cannot be read on this device: its vendor's management library (NVML, AMD SMI)
    /// is missing or refuses, or the device has none. The runner records the message instead of readings.
    #[error("telemetry not available: {why}")]
    TelemetryUnavailable {
        /// Why, on one line: what was looked for and what answered, e.g. every path tried for `libnvidia-ml.so.1`.
        why: String,
    },
    /// A part key that the planning table does not hold.
    #[error("no part `{key}` to plan for; known: {known}")]
    UnknownPart {
        /// The key asked for.
        key: String,
        /// The known keys, comma-separated.
        known: String,
    },
}

fn tried_list(tried: &[(String, String)]) -> String {
    if tried.is_empty() {
        return "  (no candidates)".to_string();
    }
    tried.iter().map(|(path, why)| format!("  tried {path}: {why}")).collect::<Vec<_>>().join("\n")
}

/// Result of a device operation.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Device memory owned by a platform and freed when dropped.
pub trait RawAlloc: Send + Sync + Any {
    /// Address on the device, as the kernels see it.
    fn device_ptr(&self) -> u64;
    /// Size in bytes.
    fn bytes(&self) -> usize;
    /// For platform modules to recover their own type.
    fn as_any(&self) -> &dyn Any;
}

/// A typed device array of `len` elements of `T`, freed on drop.
pub struct Buffer<T: Pod> {
    raw: Box<dyn RawAlloc>,
    len: usize,
    _elem: PhantomData<T>,
}

impl<T: Pod> Buffer<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size in bytes.
    pub fn bytes(&self) -> usize {
        self.raw.bytes()
    }

    /// The untyped allocation, for platform calls.
    pub fn raw(&self) -> &dyn RawAlloc {
        self.raw.as_ref()
    }

    /// The buffer as a kernel argument (its device address).
    pub fn arg(&self) -> Arg {
        Arg::Ptr(self.raw.device_ptr())
    }
}

impl<T: Pod> fmt::Debug for Buffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Buffer")
            .field("elements", &self.len)
            .field("bytes", &self.raw.bytes())
            .field("device_ptr", &format_args!("{:#x}", self.raw.device_ptr()))
            .finish()
    }
}

/// One kernel argument, passed by value as the kernel declares it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arg {
    /// A device pointer (`float*`, `const int*`, ...).
    Ptr(u64),
    /// `int`.
    I32(i32),
    /// `unsigned int`.
    U32(u32),
    /// `long long`.
    I64(i64),
    /// `unsigned long long`.
    U64(u64),
    /// `float`.
    F32(f32),
    /// `double`.
    F64(f64),
}

impl Arg {
    /// Size of the value in bytes, as the kernel's parameter must be.
    pub fn size(&self) -> usize {
        match self {
            Arg::I32(_) | Arg::U32(_) | Arg::F32(_) => 4,
            Arg::Ptr(_) | Arg::I64(_) | Arg::U64(_) | Arg::F64(_) => 8,
        }
    }

    /// The value's bytes, for runtimes that take a packed argument buffer.
    pub fn to_bytes(&self) -> [u8; 8] {
        let mut out = [0u8; 8];
        match *self {
            Arg::Ptr(v) | Arg::U64(v) => out.copy_from_slice(&v.to_ne_bytes()),
            Arg::I64(v) => out.copy_from_slice(&v.to_ne_bytes()),
            Arg::F64(v) => out.copy_from_slice(&v.to_ne_bytes()),
            Arg::I32(v) => out[..4].copy_from_slice(&v.to_ne_bytes()),
            Arg::U32(v) => out[..4].copy_from_slice(&v.to_ne_bytes()),
            Arg::F32(v) => out[..4].copy_from_slice(&v.to_ne_bytes()),
        }
        out
    }
}

impl From<u32> for Arg {
    fn from(v: u32) -> Arg {
        Arg::U32(v)
    }
}

impl From<i32> for Arg {
    fn from(v: i32) -> Arg {
        Arg::I32(v)
    }
}

impl From<f32> for Arg {
    fn from(v: f32) -> Arg {
        Arg::F32(v)
    }
}

impl<T: Pod> From<&Buffer<T>> for Arg {
    fn from(b: &Buffer<T>) -> Arg {
        b.arg()
    }
}

/// Launch geometry: groups in the grid, items per group, and dynamic LDS per group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchConfig {
    /// Groups along x, y, z.
    pub grid: [u32; 3],
    /// Items per group along x, y, z.
    pub group: [u32; 3],
    /// Dynamic LDS (shared memory) per group in bytes, on top of the kernel's static LDS.
    pub dynamic_lds_bytes: u32,
}

impl LaunchConfig {
    /// A 1-D launch of `groups` groups of `group_size` items.
    pub fn linear(groups: u32, group_size: u32) -> LaunchConfig {
        LaunchConfig { grid: [groups, 1, 1], group: [group_size, 1, 1], dynamic_lds_bytes: 0 }
    }

    /// Items per group (saturating at `u64::MAX`, so absurd geometries are caught by checks, not panics).
    pub fn group_items(&self) -> u64 {
        saturating_product(self.group)
    }

    /// Groups in the grid (saturating at `u64::MAX`: three dimensions of 2^32 − 1 overflow 64 bits).
    pub fn groups(&self) -> u64 {
        saturating_product(self.grid)
    }
}

fn saturating_product(dims: [u32; 3]) -> u64 {
    dims.iter().fold(1u64, |p, &d| p.saturating_mul(u64::from(d)))
}

/// Resources a compiled kernel uses, as the runtime reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct KernelAttrs {
    /// 32-bit registers per item (NVIDIA registers; AMD VGPRs where the runtime reports them).
    pub registers_per_item: u32,
    /// Static LDS per group in bytes.
    pub static_lds_bytes: u32,
    /// Private (scratch / local) memory per item in bytes: non-zero means spills or stack arrays.
    pub scratch_bytes_per_item: u32,
    /// Largest group the kernel may be launched with.
    pub max_group_size: u32,
}

/// A loaded code object. Unloaded when the last [`Module`] or [`Kernel`] referring to it is dropped.
#[derive(Clone)]
pub struct Module {
    /// Platform-specific handle; only the platform that made it can use it.
    pub(crate) inner: Arc<dyn Any + Send + Sync>,
    /// Kernel names the code object declares, where the platform can list them (AMD metadata).
    pub kernel_names: Vec<String>,
}

/// A kernel looked up in a [`Module`], ready to launch.
#[derive(Clone)]
pub struct Kernel {
    /// The kernel's symbol.
    pub name: String,
    /// Resources it uses.
    pub attrs: KernelAttrs,
    /// Each parameter's size in bytes, in order, where known; launches are checked against it.
    pub param_sizes: Option<Vec<usize>>,
    /// Platform-specific handle (keeps the module loaded).
    pub(crate) inner: Arc<dyn Any + Send + Sync>,
}

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kernel").field("name", &self.name).field("attrs", &self.attrs).finish()
    }
}

impl Kernel {
    /// Checks `args` against the kernel's known parameter sizes.
    pub fn check_args(&self, args: &[Arg]) -> Result<()> {
        let Some(sizes) = &self.param_sizes else { return Ok(()) };
        if sizes.len() != args.len() {
            return Err(Error::BadArguments {
                kernel: self.name.clone(),
                problem: format!("takes {} arguments, {} given", sizes.len(), args.len()),
            });
        }
        for (i, (want, arg)) in sizes.iter().zip(args).enumerate() {
            if *want != arg.size() {
                return Err(Error::BadArguments {
                    kernel: self.name.clone(),
                    problem: format!("argument {i} is {want} bytes, but {arg:?} is {} bytes", arg.size()),
                });
            }
        }
        Ok(())
    }
}

/// What one platform found on this node: its runtime, its devices and its BLAS.
#[derive(Debug)]
pub struct Survey {
    /// The platform surveyed.
    pub platform: Platform,
    /// Where the runtime library was loaded from and its version, or why it could not be loaded.
    pub runtime: Result<RuntimeInfo>,
    /// The visible devices, or why none could be listed.
    pub devices: Result<Vec<Props>>,
    /// Where the vendor BLAS was loaded from, or why it could not be.
    pub blas: Result<String>,
}

/// The runtime library a platform loaded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RuntimeInfo {
    /// Path or name the library was loaded from.
    pub library: String,
    /// Runtime version, e.g. `5.2.21153` or `13.0`.
    pub version: String,
    /// Driver version, where it can be read.
    pub driver_version: String,
}

/// How the runner enqueues the launches of one timed batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Timing {
    /// Every launch enqueued on the stream, back to back, between the two events.
    Stream,
    /// The batch captured once as a graph (a CUDA or HIP graph) and replayed by one graph launch per repetition, so
    /// the host enqueues nothing per kernel; where the runtime or a case cannot be captured, `stream` is used instead.
    Graph,
}

impl Timing {
    /// Lower-case name, as written in the CSV's `timing` column and in `run.json`.
    pub fn name(self) -> &'static str {
        match self {
            Timing::Stream => "stream",
            Timing::Graph => "graph",
        }
    }
}

impl fmt::Display for Timing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A batch of launches captured once ([`Device::capture`]) and replayed whole on the device's stream.
pub trait Replay {
    /// Enqueues the whole batch, stream-ordered.
    fn launch(&self) -> Result<()>;
}

/// One GPU. Operations run in order on the device's single stream; copies to and from the host block.
pub trait Device: Send + Sync {
    /// What the device is.
    fn props(&self) -> &Props;

    /// Free and total device memory in bytes.
    fn memory_info(&self) -> Result<(u64, u64)>;

    /// Allocates `bytes` of device memory. Checks free memory first, so a size that cannot fit gives
    /// [`Error::OutOfMemory`] rather than a runtime error.
    fn alloc(&self, bytes: usize) -> Result<Box<dyn RawAlloc>>;

    /// Copies `src` into the start of `dst` (blocking).
    fn copy_to_device(&self, dst: &dyn RawAlloc, src: &[u8]) -> Result<()>;

    /// Copies the start of `src` into `dst` (blocking; waits for earlier work on the stream).
    fn copy_to_host(&self, src: &dyn RawAlloc, dst: &mut [u8]) -> Result<()>;

    /// Copies `bytes` from `src` to `dst` on the device, stream-ordered.
    fn copy_on_device(&self, src: &dyn RawAlloc, dst: &dyn RawAlloc, bytes: usize) -> Result<()>;

    /// Sets every byte of `dst` to `value`, stream-ordered.
    fn fill_bytes(&self, dst: &dyn RawAlloc, value: u8) -> Result<()>;

    /// Loads a code object (AMD ELF or offload bundle, NVIDIA cubin) into the device.
    fn load_module(&self, image: &[u8]) -> Result<Module>;

    /// Looks up a kernel by symbol name.
    fn kernel(&self, module: &Module, name: &str) -> Result<Kernel>;

    /// Enqueues a launch. Arguments are checked against the kernel's parameters where they are known.
    fn launch(&self, kernel: &Kernel, config: &LaunchConfig, args: &[Arg]) -> Result<()>;

    /// Enqueues a cooperative launch: every group is resident at once, so grid-wide barriers are legal.
    fn launch_cooperative(&self, kernel: &Kernel, config: &LaunchConfig, args: &[Arg]) -> Result<()>;

    /// The runtime's answer to "how many groups of this kernel fit on one CU" for a group size and dynamic LDS.
    fn occupancy_groups_per_cu(&self, kernel: &Kernel, group_size: u32, dynamic_lds_bytes: u32) -> Result<u32>;

    /// Runs `work` (which enqueues operations) between two device events and returns the elapsed device time in
    /// milliseconds. Waits for the second event.
    fn time_ms(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<f32>;

    /// Captures what `times` calls of `work` enqueue into a graph that [`Replay::launch`] replays as one. Nothing
    /// runs while capturing, so `work` must only enqueue (no copies to or from the host, no synchronisation).
    /// `Ok(None)` where the runtime cannot capture (a HIP older than 4.3).
    fn capture(&self, times: u32, work: &mut dyn FnMut() -> Result<()>) -> Result<Option<Box<dyn Replay + '_>>>;

    /// Waits until every enqueued operation has finished, and reports any asynchronous error.
    fn synchronize(&self) -> Result<()>;

    /// Where the vendor BLAS was loaded from (rocBLAS or cuBLAS), or why it is missing.
    fn blas(&self) -> Result<String>;

    /// One call of the vendor BLAS (rocBLAS, cuBLAS) in the call's precision, stream-ordered, after its buffers
    /// and sizes pass [`BlasCall::checked_sizes`]; the reductions leave their result in device memory. Callers use
    /// `gemm`, `dot` and `asum` on `dyn Device`, which build the call.
    fn blas_call(&self, call: BlasCall<'_>) -> Result<()>;

    /// Opens (`on`) or closes the range that a profiler started with its collection off profiles: CUDA's
    /// `cuProfilerStart`/`cuProfilerStop`, which `ncu --profile-from-start off` listens to, so the counter pass
    /// profiles each point's marker and launch and nothing the child launches between them. A no-op by default
    /// and where no profiler listens (the calls then do nothing); rocprofv3 profiles every dispatch instead.
    fn profiler_range(&self, on: bool) -> Result<()> {
        let _ = on;
        Ok(())
    }

    /// The device's clocks, power, temperature and throttle reasons, read through its vendor's management library
    /// (NVML, AMD SMI) for [`telemetry::Sampler`]; opened anew on each call, so a runner opens it once. By default,
    /// and where the library is missing or refuses, [`Error::TelemetryUnavailable`] says why.
    fn telemetry(&self) -> Result<Box<dyn telemetry::Telemetry>> {
        Err(Error::TelemetryUnavailable {
            why: format!(
                "{} has no clocks or power to read here (only NVIDIA and AMD GPUs are read)",
                self.props().name
            ),
        })
    }
}

impl dyn Device + '_ {
    /// Row-major `C = A·B` with `A` m×k, `B` k×n, `C` m×n in `precision` through the vendor BLAS ([`BlasOp::Gemm`]).
    pub fn gemm(
        &self,
        precision: crate::precision::Precision,
        [m, n, k]: [usize; 3],
        a: &dyn RawAlloc,
        b: &dyn RawAlloc,
        c: &dyn RawAlloc,
    ) -> Result<()> {
        self.blas_call(BlasCall { precision, op: BlasOp::Gemm { m, n, k, a, b, c } })
    }

    /// `result[0] = Σ x[i]·y[i]` over `n` elements of `precision` through the vendor BLAS, the result left in device
    /// memory ([`BlasOp::Dot`]).
    pub fn dot(
        &self,
        precision: crate::precision::Precision,
        n: usize,
        x: &dyn RawAlloc,
        y: &dyn RawAlloc,
        result: &dyn RawAlloc,
    ) -> Result<()> {
        self.blas_call(BlasCall { precision, op: BlasOp::Dot { n, x, y, result } })
    }

    /// `result[0] = Σ |x[i]|` over `n` elements of `precision` through the vendor BLAS, the result left in device
    /// memory ([`BlasOp::Asum`]).
    pub fn asum(
        &self,
        precision: crate::precision::Precision,
        n: usize,
        x: &dyn RawAlloc,
        result: &dyn RawAlloc,
    ) -> Result<()> {
        self.blas_call(BlasCall { precision, op: BlasOp::Asum { n, x, result } })
    }

    /// Allocates a typed buffer of `len` elements (contents undefined).
    pub fn alloc_buffer<T: Pod>(&self, len: usize) -> Result<Buffer<T>> {
        let bytes = len.checked_mul(std::mem::size_of::<T>()).ok_or(Error::SizeMismatch {
            what: "alloc",
            detail: format!("{len} elements of {} bytes overflow", std::mem::size_of::<T>()),
        })?;
        let raw = self.alloc(bytes)?;
        Ok(Buffer { raw, len, _elem: PhantomData })
    }

    /// Allocates a buffer and fills it from `data`.
    pub fn upload<T: Pod>(&self, data: &[T]) -> Result<Buffer<T>> {
        let buf = self.alloc_buffer::<T>(data.len())?;
        self.copy_to_device(buf.raw(), bytemuck::cast_slice(data))?;
        Ok(buf)
    }

    /// Overwrites a buffer from `data`, which must have the buffer's length.
    pub fn write<T: Pod>(&self, buf: &Buffer<T>, data: &[T]) -> Result<()> {
        if data.len() != buf.len() {
            return Err(Error::SizeMismatch {
                what: "write",
                detail: format!("buffer holds {} elements, data has {}", buf.len(), data.len()),
            });
        }
        self.copy_to_device(buf.raw(), bytemuck::cast_slice(data))
    }

    /// Reads a whole buffer back to the host.
    pub fn download<T: Pod>(&self, buf: &Buffer<T>) -> Result<Vec<T>> {
        let mut out = vec![T::zeroed(); buf.len()];
        self.copy_to_host(buf.raw(), bytemuck::cast_slice_mut(&mut out))?;
        Ok(out)
    }
}

/// Surveys one platform: loads its runtime, lists its devices and looks for its BLAS. Never panics.
pub fn survey(platform: Platform) -> Survey {
    match platform {
        Platform::Amd => amd::survey(),
        Platform::Nvidia => nvidia::survey(),
    }
}

/// Opens device `ordinal` of `platform`.
pub fn open(platform: Platform, ordinal: u32) -> Result<Box<dyn Device>> {
    match platform {
        Platform::Amd => amd::open(ordinal),
        Platform::Nvidia => nvidia::open(ordinal),
    }
}

/// Opens the first platform (AMD, then NVIDIA) that has device `ordinal`. When none has, returns every
/// platform's reason.
pub fn open_any(ordinal: u32) -> std::result::Result<Box<dyn Device>, Vec<(Platform, Error)>> {
    let mut reasons = Vec::new();
    for platform in Platform::ALL {
        match open(platform, ordinal) {
            Ok(dev) => return Ok(dev),
            Err(e) => reasons.push((platform, e)),
        }
    }
    Err(reasons)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_parses_names_and_strips_features() {
        let cases = [
            ("gfx90a", Some("gfx90a")),
            ("gfx90a:sramecc+:xnack-", Some("gfx90a")),
            ("GFX942", Some("gfx942")),
            ("gfx1100", Some("gfx1100")),
            ("sm_90", Some("sm_90")),
            ("sm_90a", Some("sm_90a")),
            ("sm_8", None),
            ("gfx", None),
            ("gfxzz", None),
            ("cuda", None),
            ("", None),
        ];
        for (text, want) in cases {
            assert_eq!(Arch::parse(text).ok().map(|a| a.to_string()), want.map(str::to_string), "{text}");
        }
        assert_eq!(Arch::parse("gfx90a").unwrap().platform(), Platform::Amd);
        assert_eq!(Arch::parse("sm_90").unwrap().platform(), Platform::Nvidia);
    }

    #[test]
    fn waves_round_partial_waves_up() {
        assert_eq!(WaveSize(64).waves_for(48), 1);
        assert_eq!(WaveSize(64).waves_for(80), 2);
        assert_eq!(WaveSize(32).waves_for(80), 3);
        assert_eq!(WaveSize(32).waves_for(1024), 32);
    }

    #[test]
    fn args_have_c_sizes_and_native_bytes() {
        let four = [(Arg::I32(-2), (-2i32).to_ne_bytes()), (Arg::U32(7), 7u32.to_ne_bytes())];
        for (arg, bytes) in four {
            assert_eq!(arg.size(), 4, "{arg:?}");
            assert_eq!(&arg.to_bytes()[..4], &bytes, "{arg:?}");
            assert_eq!(&arg.to_bytes()[4..], &[0; 4], "{arg:?}: the slot's tail stays zero");
        }
        assert_eq!((Arg::F32(1.5).size(), &Arg::F32(1.5).to_bytes()[..4]), (4, &1.5f32.to_ne_bytes()[..]));
        let eight = [
            (Arg::Ptr(0xdead_beef_0000), 0xdead_beef_0000u64.to_ne_bytes()),
            (Arg::U64(u64::MAX - 1), (u64::MAX - 1).to_ne_bytes()),
            (Arg::I64(-3), (-3i64).to_ne_bytes()),
            (Arg::F64(2.5), 2.5f64.to_ne_bytes()),
        ];
        for (arg, bytes) in eight {
            assert_eq!((arg.size(), arg.to_bytes()), (8, bytes), "{arg:?}");
        }
    }

    fn kernel_with(param_sizes: Option<Vec<usize>>) -> Kernel {
        Kernel { name: "k".into(), attrs: KernelAttrs::default(), param_sizes, inner: Arc::new(()) }
    }

    #[test]
    fn arguments_are_checked_against_known_parameter_sizes() {
        let k = kernel_with(Some(vec![8, 4]));
        assert!(k.check_args(&[Arg::Ptr(0), Arg::U32(1)]).is_ok());
        let err = k.check_args(&[Arg::Ptr(0)]).unwrap_err().to_string();
        assert_eq!(err, "kernel `k`: takes 2 arguments, 1 given");
        let err = k.check_args(&[Arg::Ptr(0), Arg::U64(1)]).unwrap_err().to_string();
        assert!(err.starts_with("kernel `k`: argument 1 is 4 bytes, but U64(1) is 8 bytes"), "{err}");
        // Unknown parameters (no driver info): nothing to check against.
        assert!(kernel_with(None).check_args(&[Arg::F64(1.0)]).is_ok());
    }

    #[test]
    fn launch_geometry_products_do_not_overflow() {
        let c = LaunchConfig { grid: [u32::MAX, u32::MAX, 1], group: [1024, 1024, 64], dynamic_lds_bytes: 0 };
        assert_eq!(c.groups(), u64::from(u32::MAX) * u64::from(u32::MAX));
        assert_eq!(c.group_items(), 1 << 26);
        // (2^32 − 1)^3 does not fit in 64 bits: the count saturates instead of wrapping or panicking.
        let absurd = LaunchConfig { grid: [u32::MAX; 3], group: [u32::MAX; 3], dynamic_lds_bytes: 0 };
        assert_eq!((absurd.groups(), absurd.group_items()), (u64::MAX, u64::MAX));
        assert_eq!(LaunchConfig { grid: [0, u32::MAX, u32::MAX], ..absurd }.groups(), 0);
        let l = LaunchConfig::linear(7, 96);
        assert_eq!((l.grid, l.group, l.groups(), l.group_items()), ([7, 1, 1], [96, 1, 1], 7, 96));
    }

    #[test]
    fn timing_methods_have_stable_names() {
        assert_eq!((Timing::Stream.name(), Timing::Graph.to_string()), ("stream", "graph".to_string()));
        assert_eq!(serde_json::to_string(&Timing::Graph).unwrap(), "\"graph\"");
        assert_eq!(serde_json::from_str::<Timing>("\"stream\"").unwrap(), Timing::Stream);
    }

    #[test]
    fn runtime_not_found_lists_every_candidate() {
        let e = Error::RuntimeNotFound {
            runtime: "HIP",
            hint: "load the rocm module or set ROCM_PATH",
            tried: vec![("/opt/rocm/lib/libamdhip64.so".into(), "No such file".into())],
        };
        let text = e.to_string();
        assert!(text.starts_with("no HIP runtime found: load the rocm module or set ROCM_PATH"), "{text}");
        assert!(text.contains("tried /opt/rocm/lib/libamdhip64.so: No such file"), "{text}");
    }
}
