//! A device that stands for a known part that is not present, so `suite run --dry-run` can enumerate exactly the
//! points a run on that part would run, and estimate them, on a login node with no GPU.
//!
//! Experiments enumerate their points from the device's [`Props`], the kernels' attributes and the runtime's
//! occupancy answer. A [`PlanningDevice`] answers each from what is known without the part:
//! - [`Props`]: the part's datasheet and architecture figures ([`PARTS`], each cited);
//! - kernels: AMD code objects carry their resource use in a metadata note, read here statically
//!   ([`code_objects::check_target`]) and reported as HIP reports it; an NVIDIA cubin records no register counts (only the
//!   driver knows them), so an NVIDIA part's kernels are named but [`Device::kernel`] refuses them, and points that
//!   need them become `invalid` rows that say so;
//! - occupancy: the suite's calculator ([`occupancy_calculator::theoretical`]) in place of the runtime's own query;
//! - the vendor BLAS: assumed present on the target.
//!
//! Everything that would run or allocate is [`Error::PlanningOnly`]; nothing here panics.

use std::sync::Arc;

use crate::code_objects::{self, AmdKernelMeta};
use crate::device::{
    Arch, Arg, BlasCall, Device, Error, Kernel, KernelAttrs, LaunchConfig, Module, Platform, Props, RawAlloc, Replay,
    Result, WaveSize,
};
use crate::gpu::Gpu;
use crate::occupancy_calculator::{self, Resources};

/// A part one can plan for: its command-line key and the figures its runtime would report.
///
/// Sources, cited as [tag] beside each figure:
/// - [ds] the vendors' data sheets: AMD Instinct MI250X, MI250 and MI300X; NVIDIA H100 (SXM5 and PCIe), H200 and
///   A100 (the same figures as [`crate::peaks::KNOWN_PARTS`] takes its ceilings from);
/// - [wp] the architecture whitepapers: AMD CDNA2 (MI200: 8 MB L2 per GCD, 4 HBM2e stacks per GCD) and CDNA3
///   (MI300: 4 MB L2 per XCD in front of a 256 MB Infinity Cache); NVIDIA A100 (GA100: 40 MB L2, 5120-bit HBM bus)
///   and H100 (GH100: 50 MB L2, 5120-bit HBM3 bus);
/// - [prof] the occupancy profiles (`suite/src/occupancy_calculator/profiles.rs`, from LLVM's AMDGPU target info and NVIDIA's
///   `cuda_occupancy.h`): wave size, items and groups per CU, LDS, largest group;
/// - [rt] what the runtime reports on such a part, as read by `suite info` on an H100 SXM (the occupancy and
///   roofline tests' H100) and as `device/amd/mod.rs` reads HIP's attributes (no groups-per-CU limit; HIP's
///   65536 registers per CU, which is not the VGPR file: the occupancy profile holds that).
///
/// Memory sizes are the data sheets' capacities; a runtime reports slightly less (the driver keeps some), so a
/// plan's memory checks are up to about 2% generous for a point at the very edge of device memory.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlannedPart {
    /// Command-line key, e.g. `mi250x-gcd`.
    pub key: &'static str,
    /// The part's entry in [`crate::peaks::KNOWN_PARTS`] (its `name`), e.g. `MI250X GCD (110 CUs)`.
    pub datasheet: &'static str,
    /// Device name as the runtime reports it, e.g. `AMD Instinct MI250X`.
    pub name: &'static str,
    /// The runtime's full architecture string, e.g. `gfx90a:sramecc+:xnack-` (target features included).
    pub arch_full: &'static str,
    /// Items per wave.
    pub wave_size: u32,
    /// Compute units (AMD CUs, NVIDIA SMs).
    pub cu_count: u32,
    /// Most work-items resident on one CU.
    pub max_items_per_cu: u32,
    /// Most work-items in one group.
    pub max_group_size: u32,
    /// Most groups resident on one CU, where the runtime reports it.
    pub max_groups_per_cu: Option<u32>,
    /// LDS per CU, bytes.
    pub lds_bytes_per_cu: u64,
    /// LDS one group may use without opting in, bytes.
    pub lds_bytes_per_group: u64,
    /// LDS one group may use after opting in, bytes.
    pub lds_bytes_per_group_optin: u64,
    /// 32-bit registers per CU as the runtime reports them.
    pub registers_per_cu: u32,
    /// Peak shader clock, MHz.
    pub clock_mhz: u32,
    /// Memory clock, MHz, counted as `peaks` reads it: two transfers per clock on each pin of the bus.
    pub memory_clock_mhz: u32,
    /// Memory bus width, bits.
    pub memory_bus_bits: u32,
    /// L2 cache as the runtime reports it, bytes.
    pub l2_bytes: u64,
    /// Device memory, bytes.
    pub memory_bytes: u64,
}

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// One GCD of LUMI's MI250X (CDNA2): what `suite run` sees on a LUMI-G node, one process per GCD.
const MI250X_GCD: PlannedPart = PlannedPart {
    key: "mi250x-gcd",
    datasheet: "MI250X GCD (110 CUs)",
    name: "AMD Instinct MI250X",
    arch_full: "gfx90a:sramecc+:xnack-", // [rt] as HIP's gcnArchName reads on LUMI (design.md)
    wave_size: 64,                       // [prof gfx90a]
    cu_count: 110,                       // [ds] 220 CUs per module, two GCDs
    max_items_per_cu: 2048,              // [prof] 4 SIMDs x 8 waves x 64 items
    max_group_size: 1024,                // [prof]
    max_groups_per_cu: None,             // [rt] HIP reports no real limit (device/amd/mod.rs)
    lds_bytes_per_cu: 64 * KIB,          // [prof]
    lds_bytes_per_group: 64 * KIB,       // [prof]
    lds_bytes_per_group_optin: 64 * KIB, // [rt] AMD has no opt-in: the same 64 KiB
    registers_per_cu: 65536,             // [rt]
    clock_mhz: 1700,                     // [ds] peak engine clock
    memory_clock_mhz: 1600,              // [ds] HBM2e at 3.2 Gb/s per pin
    memory_bus_bits: 4096,               // [ds, wp] the module's 8192 bits, 4 of its 8 stacks per GCD
    l2_bytes: 8 * MIB,                   // [wp] per GCD
    memory_bytes: 64 * GIB,              // [ds] 128 GB HBM2e per module, half per GCD
};

/// One GCD of an MI250 (CDNA2): the MI250X's GCD with 104 CUs.
const MI250_GCD: PlannedPart = PlannedPart {
    key: "mi250-gcd",
    datasheet: "MI250 GCD (104 CUs)",
    name: "AMD Instinct MI250",
    cu_count: 104, // [ds] 208 CUs per module; clock, memory and caches as the MI250X [ds, wp]
    ..MI250X_GCD
};

/// MI300X (CDNA3, gfx942): the gfx90a rules and figures per CU [prof], 304 CUs over 8 XCDs.
const MI300X: PlannedPart = PlannedPart {
    key: "mi300x",
    datasheet: "MI300X (304 CUs)",
    name: "AMD Instinct MI300X",
    arch_full: "gfx942:sramecc+:xnack-", // [rt] the MI300X's default mode, as the MI250X's
    cu_count: 304,                       // [ds]
    clock_mhz: 2100,                     // [ds] peak engine clock
    // [ds] HBM3 at 5.2 Gb/s per pin on 8 stacks of 1024 bits: 5.3 TB/s; the clock is half the data rate, as `peaks`
    // counts it (HIP may report another figure for HBM3).
    memory_clock_mhz: 2600,
    memory_bus_bits: 8192,
    l2_bytes: 4 * MIB, // [wp] per XCD, what each CU sees; the Infinity Cache behind it is not an L2
    memory_bytes: 192 * GIB, // [ds] 192 GB HBM3
    ..MI250X_GCD
};

/// H100 SXM5 (Hopper, sm_90).
const H100_SXM: PlannedPart = PlannedPart {
    key: "h100-sxm",
    datasheet: "H100 SXM5 (132 SMs)",
    name: "NVIDIA H100 80GB HBM3",
    arch_full: "sm_90",
    wave_size: 32,                        // [prof sm_90]
    cu_count: 132,                        // [ds]
    max_items_per_cu: 2048,               // [prof] 64 warps
    max_group_size: 1024,                 // [prof]
    max_groups_per_cu: Some(32),          // [prof; rt]
    lds_bytes_per_cu: 228 * KIB,          // [prof; rt 233472]
    lds_bytes_per_group: 48 * KIB,        // [rt 49152] without opt-in
    lds_bytes_per_group_optin: 227 * KIB, // [prof; rt 232448]
    registers_per_cu: 65536,              // [prof; rt]
    clock_mhz: 1980,                      // [ds; rt] boost clock
    memory_clock_mhz: 2619,               // [rt] HBM3: 2619 MHz x 2 x 5120 bits = 3.35 TB/s [ds]
    memory_bus_bits: 5120,                // [wp; rt]
    l2_bytes: 50 * MIB,                   // [wp; rt]
    memory_bytes: 80 * GIB,               // [ds] 80 GB HBM3
};

/// H100 PCIe (sm_90): 114 SMs at a lower clock, on HBM2e.
const H100_PCIE: PlannedPart = PlannedPart {
    key: "h100-pcie",
    datasheet: "H100 PCIe (114 SMs)",
    name: "NVIDIA H100 PCIe",
    cu_count: 114,          // [ds]
    clock_mhz: 1755,        // [ds] boost clock
    memory_clock_mhz: 1593, // [ds] HBM2e: 1593 MHz x 2 x 5120 bits = 2.04 TB/s (the data sheet says 2.0)
    ..H100_SXM
};

/// H200 SXM (sm_90): the H100's GH100 with 141 GB of HBM3e on a 6144-bit bus.
const H200: PlannedPart = PlannedPart {
    key: "h200",
    datasheet: "H200 SXM (132 SMs)",
    name: "NVIDIA H200",
    memory_clock_mhz: 3201, // [rt] as the peaks tests' H200 reports: 3201 MHz x 2 x 6144 bits, 4.8 TB/s [ds]
    memory_bus_bits: 6144,  // [ds] six HBM3e stacks
    memory_bytes: 141 * GIB, // [ds] 141 GB HBM3e
    ..H100_SXM
};

/// A100 SXM4 80GB (Ampere, sm_80).
const A100_80GB: PlannedPart = PlannedPart {
    key: "a100-80gb",
    datasheet: "A100 80GB (108 SMs)",
    name: "NVIDIA A100-SXM4-80GB",
    arch_full: "sm_80",
    wave_size: 32,                        // [prof sm_80]
    cu_count: 108,                        // [ds]
    max_items_per_cu: 2048,               // [prof] 64 warps
    max_group_size: 1024,                 // [prof]
    max_groups_per_cu: Some(32),          // [prof]
    lds_bytes_per_cu: 164 * KIB,          // [prof] largest carveout on 8.0
    lds_bytes_per_group: 48 * KIB,        // [prof] without opt-in
    lds_bytes_per_group_optin: 163 * KIB, // [prof]
    registers_per_cu: 65536,              // [prof]
    clock_mhz: 1410,                      // [ds] boost clock
    memory_clock_mhz: 1593,               // [ds] HBM2e: 1593 MHz x 2 x 5120 bits = 2.04 TB/s
    memory_bus_bits: 5120,                // [wp]
    l2_bytes: 40 * MIB,                   // [wp]
    memory_bytes: 80 * GIB,               // [ds] 80 GB HBM2e
};

/// A100 SXM4 40GB (sm_80): HBM2 at a lower clock.
const A100_40GB: PlannedPart = PlannedPart {
    key: "a100-40gb",
    datasheet: "A100 40GB (108 SMs)",
    name: "NVIDIA A100-SXM4-40GB",
    memory_clock_mhz: 1215, // [ds; wp] HBM2: 1215 MHz x 2 x 5120 bits = 1.56 TB/s
    memory_bytes: 40 * GIB, // [ds] 40 GB HBM2
    ..A100_80GB
};

/// A GPU session on a plan of `part`, a known part that is not present (`suite run --dry-run` on a login node): its
/// device is a [`PlanningDevice`], which answers from the part's data sheet and the code objects' static metadata
/// and runs nothing. Kernels come from the store as for [`Gpu::open`]: prebuilt objects from `kernels_dir`
/// (`--kernels-dir`), else compiled with the local compiler and cached, so the plan also finds a kernel that does
/// not build.
pub fn gpu(part: &PlannedPart, kernels_dir: Option<std::path::PathBuf>) -> Gpu {
    Gpu::with_device(Box::new(PlanningDevice::new(part)), kernels_dir)
}

/// Every part one can plan for; the first is the default.
pub const PARTS: &[PlannedPart] = &[MI250X_GCD, MI250_GCD, MI300X, H100_SXM, H100_PCIE, H200, A100_80GB, A100_40GB];

/// The part planned for when none is named: LUMI's MI250X GCD, the suite's primary target.
pub const DEFAULT_KEY: &str = MI250X_GCD.key;

/// The part called `key`; the error lists every key.
pub fn part(key: &str) -> Result<&'static PlannedPart> {
    PARTS
        .iter()
        .find(|p| p.key == key.trim())
        .ok_or_else(|| Error::UnknownPart { key: key.to_string(), known: keys().join(", ") })
}

/// Every part's key, in table order, for the command line's help and value list.
pub fn keys() -> Vec<&'static str> {
    PARTS.iter().map(|p| p.key).collect()
}

impl PlannedPart {
    /// The architecture, without target features (`gfx90a`).
    pub fn arch(&self) -> Arch {
        Arch::parse(self.arch_full).expect("every planned part's arch_full parses (checked by the planning tests)")
    }

    /// The vendor BLAS a run on the part uses.
    pub fn blas_library(&self) -> &'static str {
        match self.arch().platform() {
            Platform::Amd => "rocBLAS",
            Platform::Nvidia => "cuBLAS",
        }
    }

    /// The properties a device of this part reports, with runtime and driver saying that this is a plan.
    pub fn props(&self) -> Props {
        let arch = self.arch();
        Props {
            platform: arch.platform(),
            ordinal: 0,
            name: self.name.to_string(),
            arch,
            arch_full: self.arch_full.to_string(),
            wave_size: WaveSize(self.wave_size),
            cu_count: self.cu_count,
            max_items_per_cu: self.max_items_per_cu,
            max_group_size: self.max_group_size,
            max_groups_per_cu: self.max_groups_per_cu,
            lds_bytes_per_cu: self.lds_bytes_per_cu,
            lds_bytes_per_group: self.lds_bytes_per_group,
            lds_bytes_per_group_optin: self.lds_bytes_per_group_optin,
            registers_per_cu: self.registers_per_cu,
            clock_mhz: Some(self.clock_mhz),
            memory_clock_mhz: Some(self.memory_clock_mhz),
            memory_bus_bits: Some(self.memory_bus_bits),
            l2_bytes: Some(self.l2_bytes),
            memory_bytes: self.memory_bytes,
            runtime_version: format!(
                "none: a plan of {} from its data sheet (suite run --dry-run); nothing runs",
                self.datasheet
            ),
            driver_version: "none: a plan loads no driver; nothing runs".to_string(),
        }
    }
}

/// A code object read for a plan: its kernels' metadata (AMD) or only their names (NVIDIA).
struct PlannedModule {
    /// The key of the part it was read for.
    part: &'static str,
    /// Each kernel's metadata, in the note's order; empty for a cubin.
    kernels: Vec<AmdKernelMeta>,
    /// The kernels' names.
    names: Vec<String>,
}

/// A kernel of a plan: its metadata, for the occupancy answer.
struct PlannedKernel {
    /// The key of the part it was read for.
    part: &'static str,
    meta: AmdKernelMeta,
}

/// A device standing for a part that is not present: its properties and kernels come from the data sheet and the
/// code objects; everything that would run is refused with [`Error::PlanningOnly`].
#[derive(Debug)]
pub struct PlanningDevice {
    part: PlannedPart,
    props: Props,
}

impl PlanningDevice {
    /// A plan of `part`.
    pub fn new(part: &PlannedPart) -> PlanningDevice {
        PlanningDevice { part: *part, props: part.props() }
    }

    /// The part planned for.
    pub fn part(&self) -> &PlannedPart {
        &self.part
    }

    /// The refusal of an operation that would run or allocate.
    fn only(&self, operation: &'static str) -> Error {
        Error::PlanningOnly { part: self.part.datasheet.to_string(), operation }
    }

    fn own_module(&self, module: &Module) -> Result<Arc<PlannedModule>> {
        match Arc::clone(&module.inner).downcast::<PlannedModule>() {
            Ok(m) if m.part == self.part.key => Ok(m),
            _ => Err(Error::ForeignObject { what: "module" }),
        }
    }

    fn own_kernel<'k>(&self, kernel: &'k Kernel) -> Result<&'k PlannedKernel> {
        match kernel.inner.downcast_ref::<PlannedKernel>() {
            Some(k) if k.part == self.part.key => Ok(k),
            _ => Err(Error::ForeignObject { what: "kernel" }),
        }
    }
}

impl Device for PlanningDevice {
    fn props(&self) -> &Props {
        &self.props
    }

    /// The whole memory is free: a plan allocates nothing.
    fn memory_info(&self) -> Result<(u64, u64)> {
        Ok((self.props.memory_bytes, self.props.memory_bytes))
    }

    fn alloc(&self, _bytes: usize) -> Result<Box<dyn RawAlloc>> {
        Err(self.only("alloc"))
    }

    fn copy_to_device(&self, _dst: &dyn RawAlloc, _src: &[u8]) -> Result<()> {
        Err(self.only("copy_to_device"))
    }

    fn copy_to_host(&self, _src: &dyn RawAlloc, _dst: &mut [u8]) -> Result<()> {
        Err(self.only("copy_to_host"))
    }

    fn copy_on_device(&self, _src: &dyn RawAlloc, _dst: &dyn RawAlloc, _bytes: usize) -> Result<()> {
        Err(self.only("copy_on_device"))
    }

    fn fill_bytes(&self, _dst: &dyn RawAlloc, _value: u8) -> Result<()> {
        Err(self.only("fill_bytes"))
    }

    /// Reads the code object statically, as the runtime would load it: for AMD the entry (of a bundle) that runs in
    /// the part's mode, with each kernel's metadata; for NVIDIA the kernels' names.
    fn load_module(&self, image: &[u8]) -> Result<Module> {
        let runtime = self.props.platform.runtime();
        if image.is_empty() {
            return Err(Error::BadCodeObject { runtime, reason: "the code object is empty".to_string() });
        }
        let bad = |e: code_objects::Error| match e {
            code_objects::Error::WrongArch { wanted, found } => Error::WrongArch { wanted: wanted.to_string(), found },
            other => Error::BadCodeObject {
                runtime,
                reason: format!("read statically for a plan of {}: {other}", self.part.datasheet),
            },
        };
        let info = code_objects::check_target(image, &self.props.arch, &self.props.arch_full).map_err(bad)?;
        let names = match self.props.platform {
            Platform::Amd => info.amd_kernels.iter().map(|k| k.name.clone()).collect(),
            Platform::Nvidia => code_objects::cubin_kernel_names(image).map_err(bad)?,
        };
        let module = PlannedModule { part: self.part.key, kernels: info.amd_kernels, names: names.clone() };
        Ok(Module { inner: Arc::new(module), kernel_names: names })
    }

    /// AMD: the attributes HIP reports for the kernel, which it reads from the same metadata (ROCm clr's
    /// `workGroupInfo_`): `.vgpr_count` (VGPRs and AGPRs together on gfx90a) as its registers, the group segment as
    /// its static LDS, the private segment as its scratch, `.max_flat_workgroup_size` as its largest group.
    /// NVIDIA: refused, naming the kernel; only the driver knows its registers.
    fn kernel(&self, module: &Module, name: &str) -> Result<Kernel> {
        let planned = self.own_module(module)?;
        let meta = planned.kernels.iter().find(|k| k.name == name || k.symbol.strip_suffix(".kd") == Some(name));
        let Some(meta) = meta else {
            if planned.names.iter().any(|n| n == name) {
                return Err(Error::PlanningNeedsDriver {
                    part: self.part.datasheet.to_string(),
                    kernel: name.to_string(),
                });
            }
            return Err(Error::KernelNotFound { name: name.to_string(), available: planned.names.join(", ") });
        };
        let attrs = KernelAttrs {
            registers_per_item: meta.vgpr_count,
            static_lds_bytes: meta.lds_bytes,
            scratch_bytes_per_item: meta.scratch_bytes,
            max_group_size: meta.max_group_size,
        };
        Ok(Kernel {
            name: name.to_string(),
            attrs,
            param_sizes: Some(code_objects::arg_sizes(meta)),
            inner: Arc::new(PlannedKernel { part: self.part.key, meta: meta.clone() }),
        })
    }

    fn launch(&self, _kernel: &Kernel, _config: &LaunchConfig, _args: &[Arg]) -> Result<()> {
        Err(self.only("launch"))
    }

    fn launch_cooperative(&self, _kernel: &Kernel, _config: &LaunchConfig, _args: &[Arg]) -> Result<()> {
        Err(self.only("launch_cooperative"))
    }

    /// The occupancy calculator's answer for the kernel's registers (VGPRs with AGPRs), SGPRs and LDS, as the
    /// occupancy experiment computes it, in place of the runtime's query (HIP's computes the same from the same
    /// metadata). A group that cannot be resident at all is an error with the calculator's reason.
    fn occupancy_groups_per_cu(&self, kernel: &Kernel, group_size: u32, dynamic_lds_bytes: u32) -> Result<u32> {
        let meta = &self.own_kernel(kernel)?.meta;
        let res = Resources {
            group_size,
            registers_per_item: meta.vgpr_count,
            sgprs: Some(meta.sgpr_count),
            lds_bytes_per_group: meta.lds_bytes.saturating_add(dynamic_lds_bytes),
        };
        occupancy_calculator::theoretical(&self.props, res).map(|o| o.groups_per_cu).map_err(|e| Error::BadLaunch {
            kernel: kernel.name.clone(),
            problem: format!(
                "groups of {group_size} items with {dynamic_lds_bytes} bytes of dynamic LDS on {}: {e}",
                self.part.datasheet
            ),
        })
    }

    fn time_ms(&self, _work: &mut dyn FnMut() -> Result<()>) -> Result<f32> {
        Err(self.only("time_ms"))
    }

    fn capture(&self, _times: u32, _work: &mut dyn FnMut() -> Result<()>) -> Result<Option<Box<dyn Replay + '_>>> {
        Err(self.only("capture"))
    }

    fn synchronize(&self) -> Result<()> {
        Err(self.only("synchronize"))
    }

    /// The vendor BLAS is assumed present on the target (its rows are planned, not skipped): a plan loads nothing.
    fn blas(&self) -> Result<String> {
        Ok(format!(
            "{} assumed present on the {} (a plan loads no library)",
            self.part.blas_library(),
            self.part.datasheet
        ))
    }

    fn blas_call(&self, call: BlasCall<'_>) -> Result<()> {
        Err(self.only(call.routine()))
    }
}

#[cfg(test)]
mod tests {
    use std::any::Any;

    use super::*;
    use crate::code_objects::test_support::compiler;
    use crate::code_objects::KernelStore;
    use crate::gpu::Gpu;
    use crate::peaks;
    use crate::precision::Precision;

    /// A stand-in for device memory, to hand to the operations a plan refuses.
    struct HostBytes(usize);

    impl RawAlloc for HostBytes {
        fn device_ptr(&self) -> u64 {
            0
        }
        fn bytes(&self) -> usize {
            self.0
        }
        fn as_any(&self) -> &dyn Any {
            self
        }
    }

    fn planned(key: &str) -> Gpu {
        let part = part(key).unwrap_or_else(|e| panic!("{e}"));
        compiler(part.arch().platform());
        gpu(part, None)
    }

    #[test]
    fn every_part_is_its_datasheet_entry_and_its_figures_give_the_datasheets() {
        let mut seen = std::collections::BTreeSet::new();
        for p in PARTS {
            assert!(seen.insert(p.key), "{} is listed twice", p.key);
            assert_eq!(part(p.key).ok(), Some(p), "{}", p.key);
            let props = p.props();
            let c = peaks::ceilings(&props);
            assert_eq!(c.part, p.datasheet, "{}: {}", p.key, c.source);
            assert!(!c.source.starts_with("computed"), "{}: {}", p.key, c.source);
            // The clock and the memory bus give the data sheet's FP32 vector rate and bandwidth, as `peaks` would
            // compute them for an unknown part.
            let known = peaks::known_part(props.arch.as_str(), props.cu_count, &props.name).unwrap();
            let lanes = if props.arch.as_str() == "sm_90" { 128.0 } else { 64.0 };
            let tflops = f64::from(p.cu_count) * lanes * 2.0 * f64::from(p.clock_mhz) / 1e6;
            assert!((tflops / known.fp32_vector_tflops - 1.0).abs() < 0.01, "{}: {tflops} TFLOP/s", p.key);
            let gbps = f64::from(p.memory_clock_mhz) * 2.0 * f64::from(p.memory_bus_bits) / 8.0 / 1e3;
            assert!((gbps / known.memory_gbps - 1.0).abs() < 0.03, "{}: {gbps} GB/s", p.key);
            // The architecture's occupancy profile holds the same limits, so the calculator's answers are the part's.
            let profile = occupancy_calculator::Profile::for_arch(&props.arch, Some(props.wave_size)).unwrap();
            assert_eq!(profile.wave_slots_per_cu() * profile.wave_size.0, p.max_items_per_cu, "{}", p.key);
            assert_eq!(u64::from(profile.lds_bytes_per_cu), p.lds_bytes_per_cu, "{}", p.key);
            assert_eq!(u64::from(profile.max_lds_bytes_per_group), p.lds_bytes_per_group_optin, "{}", p.key);
            assert_eq!(profile.max_group_size, p.max_group_size, "{}", p.key);
            assert_eq!(profile.max_groups_per_cu, p.max_groups_per_cu, "{}", p.key);
            assert_eq!(props.arch_full, p.arch_full);
            assert!(props.arch_full.starts_with(props.arch.as_str()), "{}", p.key);
            let dev = PlanningDevice::new(p);
            assert_eq!(dev.memory_info().unwrap(), (p.memory_bytes, p.memory_bytes));
            for text in [&props.runtime_version, &props.driver_version] {
                assert!(text.starts_with("none: a plan") && text.ends_with("nothing runs"), "{}: {text}", p.key);
            }
            let blas = dev.blas().unwrap();
            assert!(blas.starts_with(p.blas_library()) && blas.contains(p.datasheet), "{blas}");
        }
        // The default is LUMI's GCD.
        let gcd = part(DEFAULT_KEY).unwrap();
        let props = gcd.props();
        assert_eq!((props.arch.as_str(), props.cu_count, props.wave_size), ("gfx90a", 110, WaveSize(64)));
        assert_eq!(props.arch_full, "gfx90a:sramecc+:xnack-");
        assert_eq!(keys()[0], DEFAULT_KEY);
        // The H100 is the one `suite info` read (the occupancy tests' fixture), where that fixture has the figure.
        let h100 = part("h100-sxm").unwrap().props();
        let read = crate::occupancy_calculator::tests::h100();
        let limits = |p: &Props| {
            (p.name.clone(), p.wave_size, p.cu_count, p.max_items_per_cu, p.max_groups_per_cu, p.registers_per_cu)
        };
        assert_eq!(limits(&h100), limits(&read));
        let lds = |p: &Props| (p.lds_bytes_per_cu, p.lds_bytes_per_group, p.lds_bytes_per_group_optin);
        assert_eq!(lds(&h100), lds(&read));
        // An unknown key lists them all.
        let err = part("mi250").unwrap_err().to_string();
        assert_eq!(
            err,
            "no part `mi250` to plan for; known: mi250x-gcd, mi250-gcd, mi300x, h100-sxm, h100-pcie, h200, \
             a100-80gb, a100-40gb"
        );
        assert_eq!(part(" h200 ").ok().map(|p| p.datasheet), Some("H200 SXM (132 SMs)"));
    }

    #[test]
    fn every_run_only_operation_is_refused_naming_the_part() {
        for p in [part("mi250x-gcd").unwrap(), part("a100-40gb").unwrap()] {
            let dev = PlanningDevice::new(p);
            let buf = HostBytes(64);
            // Refused before the kernel is looked at: even a kernel of no device is not launched.
            let kernel =
                Kernel { name: "k".into(), attrs: KernelAttrs::default(), param_sizes: None, inner: Arc::new(()) };
            let config = LaunchConfig::linear(1, 64);
            let mut host = [0u8; 4];
            let blas: &dyn Device = &dev;
            let refusals: Vec<(&str, Option<Error>)> = vec![
                ("alloc", dev.alloc(64).err()),
                ("copy_to_device", dev.copy_to_device(&buf, &[0; 4]).err()),
                ("copy_to_host", dev.copy_to_host(&buf, &mut host).err()),
                ("copy_on_device", dev.copy_on_device(&buf, &buf, 4).err()),
                ("fill_bytes", dev.fill_bytes(&buf, 0xff).err()),
                ("launch", dev.launch(&kernel, &config, &[]).err()),
                ("launch_cooperative", dev.launch_cooperative(&kernel, &config, &[]).err()),
                ("time_ms", dev.time_ms(&mut || Ok(())).err()),
                ("capture", dev.capture(2, &mut || Ok(())).err()),
                ("synchronize", dev.synchronize().err()),
                ("sgemm", blas.gemm(Precision::F32, [4, 4, 4], &buf, &buf, &buf).err()),
                ("dgemm", blas.gemm(Precision::F64, [4, 4, 4], &buf, &buf, &buf).err()),
                ("sdot", blas.dot(Precision::F32, 4, &buf, &buf, &buf).err()),
                ("sasum", blas.asum(Precision::F32, 4, &buf, &buf).err()),
                ("ddot", blas.dot(Precision::F64, 4, &buf, &buf, &buf).err()),
                ("dasum", blas.asum(Precision::F64, 4, &buf, &buf).err()),
            ];
            for (op, err) in refusals {
                let err = err.unwrap_or_else(|| panic!("{}: `{op}` succeeded on a plan", p.key));
                assert!(matches!(&err, Error::PlanningOnly { operation, .. } if *operation == op), "{op}: {err:?}");
                assert_eq!(
                    err.to_string(),
                    format!(
                        "`{op}` cannot run on a plan of {}: nothing runs in a dry run (it plans from the data sheet)",
                        p.datasheet
                    )
                );
            }
        }
    }

    #[test]
    fn amd_kernels_report_what_hip_reads_from_their_metadata() {
        let gpu = planned("mi250x-gcd");
        let props = gpu.device.props().clone();
        // The same objects, read apart from the device: hipcc writes offload bundles, so the device reads the
        // bundle's entry for the part's mode (gfx90a:sramecc+:xnack-).
        let store = KernelStore::new(None);
        let mut checked = 0;
        for source in ["smoke", "occupancy", "pt"] {
            let src = code_objects::source(source).unwrap();
            let object = store.code_object_for_device(src, &props.arch, &props.arch_full).unwrap();
            let module = gpu.device.load_module(&object.bytes).unwrap();
            let names: Vec<&str> = object.info.amd_kernels.iter().map(|k| k.name.as_str()).collect();
            assert_eq!(module.kernel_names, names, "{source}");
            assert!(!names.is_empty(), "{source}");
            for meta in &object.info.amd_kernels {
                let kernel = gpu.kernel(source, &meta.name).unwrap_or_else(|e| panic!("{}: {e}", meta.name));
                let attrs = (meta.vgpr_count, meta.lds_bytes, meta.scratch_bytes, meta.max_group_size);
                let a = kernel.attrs;
                assert_eq!(
                    (a.registers_per_item, a.static_lds_bytes, a.scratch_bytes_per_item, a.max_group_size),
                    attrs
                );
                assert_eq!(kernel.param_sizes, Some(code_objects::arg_sizes(meta)), "{}", meta.name);
                assert_eq!(gpu.amd_kernel_meta(source, &meta.name).unwrap().as_ref(), Some(meta));
                checked += 1;
            }
        }
        assert!(checked > 20, "only {checked} kernels");
        let err = gpu.kernel("smoke", "no_such_kernel").unwrap_err().to_string();
        assert!(
            err.starts_with("kernel `no_such_kernel` is not in the module (it holds: ") && err.contains("smoke_triad")
        );
        // A gfx90a object is refused by a plan of another architecture, as the runtime would refuse it.
        let object = store.code_object(code_objects::source("smoke").unwrap(), &props.arch).unwrap();
        let mi300x = PlanningDevice::new(part("mi300x").unwrap());
        let err = mi300x.load_module(&object.bytes).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("gfx90a") && err.contains("gfx942"), "{err}");
        assert!(mi300x.load_module(&[]).is_err());
    }

    #[test]
    fn occupancy_is_the_calculators_for_the_kernels_registers_sgprs_and_lds() {
        let gpu = planned("mi250x-gcd");
        let dev = gpu.device.as_ref();
        let triad = gpu.kernel("smoke", "smoke_triad").unwrap();
        let meta = gpu.amd_kernel_meta("smoke", "smoke_triad").unwrap().unwrap();
        // A triad needs a handful of registers and no LDS: only the 32 wave slots and 16 barriers of a CU bind.
        assert!(meta.vgpr_count <= 64 && meta.sgpr_count <= 96 && meta.lds_bytes == 0, "{meta:?}");
        for (group, groups) in [(64, 32), (128, 16), (256, 8), (1024, 2)] {
            assert_eq!(dev.occupancy_groups_per_cu(&triad, group, 0).unwrap(), groups, "groups of {group}");
        }
        // Dynamic LDS counts in 512-byte granules: 16 KiB + 1 byte is 16.5 KiB, three groups in 64 KiB.
        assert_eq!(dev.occupancy_groups_per_cu(&triad, 256, 16 * 1024).unwrap(), 4);
        assert_eq!(dev.occupancy_groups_per_cu(&triad, 256, 16 * 1024 + 1).unwrap(), 3);
        // What cannot be resident at all is an error with the calculator's reason.
        let err = dev.occupancy_groups_per_cu(&triad, 2048, 0).unwrap_err().to_string();
        assert!(err.contains("2048 items per group is 1024 above gfx90a's maximum of 1024"), "{err}");
        let err = dev.occupancy_groups_per_cu(&triad, 64, 64 * 1024 + 1).unwrap_err().to_string();
        assert!(err.contains("LDS bytes per group"), "{err}");
        // Every occupancy kernel, the register ladder included: the calculator with the unified VGPR count and the
        // SGPRs, as the occupancy experiment asks it.
        let props = dev.props();
        let mut answers = Vec::new();
        for values in [16, 64, 192] {
            let name = format!("occupancy_registers_r{values}");
            let kernel = gpu.kernel("occupancy", &name).unwrap();
            let meta = gpu.amd_kernel_meta("occupancy", &name).unwrap().unwrap();
            let res = Resources { group_size: 256, ..Resources::from_amd_kernel(&meta) };
            let want = occupancy_calculator::theoretical(props, res).unwrap().groups_per_cu;
            let got = dev.occupancy_groups_per_cu(&kernel, 256, 0).unwrap();
            assert_eq!(got, want, "{name}: {meta:?}");
            answers.push(got);
        }
        // More live values, more registers, fewer resident groups: the registers are counted.
        assert!(answers[2] < answers[0], "{answers:?}");
        // A kernel of another plan is not this one's.
        let other = super::gpu(part("mi250-gcd").unwrap(), None);
        let foreign = other.kernel("smoke", "smoke_triad").unwrap();
        assert!(matches!(dev.occupancy_groups_per_cu(&foreign, 64, 0), Err(Error::ForeignObject { .. })));
    }

    #[test]
    fn nvidia_parts_name_their_kernels_and_leave_their_registers_to_the_driver() {
        let gpu = planned("h100-sxm");
        let err = gpu.kernel("smoke", "smoke_triad").unwrap_err().to_string();
        assert_eq!(
            err,
            "register use of `smoke_triad` on H100 SXM5 (132 SMs) is known only to the NVIDIA driver: plan on the \
             node, or plan for an AMD part"
        );
        // The cubin's kernels are listed: a name that is not there is told apart from one only the driver knows.
        let err = gpu.kernel("smoke", "no_such_kernel").unwrap_err().to_string();
        assert!(
            err.starts_with("kernel `no_such_kernel` is not in the module (it holds: ") && err.contains("smoke_triad")
        );
        assert_eq!(gpu.amd_kernel_meta("smoke", "smoke_triad").unwrap(), None);
        assert!(gpu.device.blas().unwrap().starts_with("cuBLAS assumed present on the H100 SXM5 (132 SMs)"));
    }
}
