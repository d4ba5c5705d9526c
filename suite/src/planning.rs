//! A device that stands for a known part that is not present, so `suite run --dry-run` can enumerate exactly the
//! points a run on that part would run, and estimate them, on a login node with no GPU.
//!
//! Experiments enumerate their points from the device's [`Props`], the kernels' attributes and the runtime's
//! occupancy answer. A [`PlanningDevice`] answers each from what is known without the part:
//! - [`Props`]: the part's datasheet and architecture figures, its entry in the catalogue of parts ([`PARTS`], each
//!   figure cited there; [`Part::props`]);
//! - kernels: AMD code objects carry their resource use in a metadata note, read here statically
//!   ([`code_objects::check_target`]) and reported as HIP reports it; an NVIDIA cubin records each kernel's registers
//!   (`EIATTR_REGCOUNT`), static shared memory and launch bounds, read as `cuobjdump --dump-resource-usage` reads them
//!   ([`code_objects::cubin_kernels`]); a cubin kernel without a register count is named, but [`Device::kernel`]
//!   refuses it, and points that need it become `invalid` rows that say so;
//! - occupancy: the suite's calculator ([`occupancy_calculator::theoretical`]) in place of the runtime's own query;
//! - the vendor BLAS: assumed present on the target.
//!
//! Everything that would run or allocate is [`Error::PlanningOnly`]; nothing here panics.

use std::sync::Arc;

use crate::catalogue;
use crate::code_objects::{self, AmdKernelMeta};
use crate::device::{
    Arg, BlasCall, Device, Error, Kernel, KernelAttrs, LaunchConfig, Module, Platform, Props, RawAlloc, Replay, Result,
};
use crate::gpu::Gpu;
use crate::occupancy_calculator::{self, Resources};

/// A GPU session on a plan of `part`, a known part that is not present (`suite run --dry-run` on a login node): its
/// device is a [`PlanningDevice`], which answers from the part's data sheet and the code objects' static metadata
/// and runs nothing. Kernels come from the store as for [`Gpu::open`]: prebuilt objects from `kernels_dir`
/// (`--kernels-dir`), else compiled with the local compiler and cached, so the plan also finds a kernel that does
/// not build.
pub fn gpu(part: &Part, kernels_dir: Option<std::path::PathBuf>) -> Gpu {
    Gpu::with_device(Box::new(PlanningDevice::new(part)), kernels_dir)
}

/// Every part one can plan for (the catalogue's); the first is the default.
pub use crate::catalogue::{default_key, Part, DEFAULT_KEY, PARTS};

/// The part called `key`; the error lists every key.
pub fn part(key: &str) -> Result<&'static Part> {
    catalogue::by_key(key).ok_or_else(|| Error::UnknownPart { key: key.to_string(), known: keys().join(", ") })
}

/// Every part's key, in table order, for the command line's help and value list.
pub fn keys() -> Vec<&'static str> {
    catalogue::keys()
}

/// A code object read for a plan: its kernels' metadata (AMD) or resources (NVIDIA), and their names.
struct PlannedModule {
    /// The key of the part it was read for.
    part: &'static str,
    /// Each kernel's metadata, in the note's order; empty for a cubin.
    kernels: Vec<AmdKernelMeta>,
    /// Each kernel's resources recorded in a cubin; empty for AMD.
    cubin: Vec<code_objects::CubinKernel>,
    /// The kernels' names.
    names: Vec<String>,
}

/// A kernel of a plan: its metadata, for the occupancy answer.
struct PlannedKernel {
    /// The key of the part it was read for.
    part: &'static str,
    /// Registers per item (AMD: VGPRs with AGPRs), SGPRs (AMD) and static LDS, for the occupancy calculator.
    resources: Resources,
}

/// A device standing for a part that is not present: its properties and kernels come from the data sheet and the
/// code objects; everything that would run is refused with [`Error::PlanningOnly`].
#[derive(Debug)]
pub struct PlanningDevice {
    part: Part,
    props: Props,
}

impl PlanningDevice {
    /// A plan of `part`.
    pub fn new(part: &Part) -> PlanningDevice {
        PlanningDevice { part: *part, props: part.props() }
    }

    /// The part planned for.
    pub fn part(&self) -> &Part {
        &self.part
    }

    /// The refusal of an operation that would run or allocate.
    fn only(&self, operation: &'static str) -> Error {
        Error::PlanningOnly { part: self.part.name.to_string(), operation }
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
                reason: format!("read statically for a plan of {}: {other}", self.part.name),
            },
        };
        let info = code_objects::check_target(image, &self.props.arch, &self.props.arch_full).map_err(bad)?;
        let (names, cubin) = match self.props.platform {
            Platform::Amd => (info.amd_kernels.iter().map(|k| k.name.clone()).collect(), Vec::new()),
            Platform::Nvidia => (
                code_objects::cubin_kernel_names(image).map_err(bad)?,
                code_objects::cubin_kernels(image).map_err(bad)?,
            ),
        };
        let module = PlannedModule { part: self.part.key, kernels: info.amd_kernels, cubin, names: names.clone() };
        Ok(Module { inner: Arc::new(module), kernel_names: names })
    }

    /// AMD: the attributes HIP reports for the kernel, which it reads from the same metadata (ROCm clr's
    /// `workGroupInfo_`): `.vgpr_count` (VGPRs and AGPRs together on gfx90a) as its registers, the group segment as
    /// its static LDS, the private segment as its scratch, `.max_flat_workgroup_size` as its largest group.
    /// NVIDIA: what the cubin records (registers, static shared memory, launch bounds; no local memory is counted),
    /// as the driver reads it; a kernel whose register count is not recorded is refused, naming it.
    fn kernel(&self, module: &Module, name: &str) -> Result<Kernel> {
        let planned = self.own_module(module)?;
        if let Some(k) = planned.cubin.iter().find(|k| k.name == name) {
            let attrs = KernelAttrs {
                registers_per_item: k.registers,
                static_lds_bytes: k.shared_bytes,
                scratch_bytes_per_item: 0,
                max_group_size: k.max_threads.unwrap_or(self.props.max_group_size).min(self.props.max_group_size),
            };
            let resources = Resources {
                group_size: attrs.max_group_size,
                registers_per_item: k.registers,
                sgprs: None,
                lds_bytes_per_group: k.shared_bytes,
            };
            return Ok(Kernel {
                name: name.to_string(),
                attrs,
                param_sizes: None,
                inner: Arc::new(PlannedKernel { part: self.part.key, resources }),
            });
        }
        let meta = planned.kernels.iter().find(|k| k.name == name || k.symbol.strip_suffix(".kd") == Some(name));
        let Some(meta) = meta else {
            if planned.names.iter().any(|n| n == name) {
                return Err(Error::PlanningNeedsDriver { part: self.part.name.to_string(), kernel: name.to_string() });
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
            inner: Arc::new(PlannedKernel { part: self.part.key, resources: Resources::from_amd_kernel(meta) }),
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
        let own = &self.own_kernel(kernel)?.resources;
        let res = Resources {
            group_size,
            lds_bytes_per_group: own.lds_bytes_per_group.saturating_add(dynamic_lds_bytes),
            ..*own
        };
        occupancy_calculator::theoretical(&self.props, res).map(|o| o.groups_per_cu).map_err(|e| Error::BadLaunch {
            kernel: kernel.name.clone(),
            problem: format!(
                "groups of {group_size} items with {dynamic_lds_bytes} bytes of dynamic LDS on {}: {e}",
                self.part.name
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
        Ok(format!("{} assumed present on the {} (a plan loads no library)", self.part.blas_library(), self.part.name))
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
    use crate::device::WaveSize;
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
    fn every_part_plans_as_its_catalogue_entry_and_its_peaks_are_the_datasheets() {
        for p in PARTS {
            assert_eq!(part(p.key).ok(), Some(p), "{}", p.key);
            let props = p.props();
            let c = peaks::ceilings(&props);
            assert_eq!(c.part, p.name, "{}: {}", p.key, c.source);
            assert_eq!(c.source, p.source, "{}", p.key);
            assert_eq!(props.arch_full, p.arch_full);
            assert!(props.arch_full.starts_with(props.arch.as_str()), "{}", p.key);
            // The calculator answers for the plan with the part's own profile: the device's limits are the profile's.
            let profile = occupancy_calculator::Profile::from_props(&props).unwrap();
            assert_eq!(&profile, p.profile, "{}", p.key);
            let dev = PlanningDevice::new(p);
            assert_eq!(dev.memory_info().unwrap(), (p.memory_bytes, p.memory_bytes));
            for text in [&props.runtime_version, &props.driver_version] {
                assert!(text.starts_with("none: a plan") && text.ends_with("nothing runs"), "{}: {text}", p.key);
            }
            let blas = dev.blas().unwrap();
            assert!(blas.starts_with(p.blas_library()) && blas.contains(p.name), "{blas}");
        }
        // The parts planned before the catalogue plan with the same properties as then (issue 33 moved them): items
        // and groups per CU, largest group, LDS per CU, per group and with opt-in, clock, memory clock and bus, L2,
        // memory.
        const MIB: u64 = 1 << 20;
        const GIB: u64 = 1 << 30;
        for (key, limits, clocks, sizes) in [
            ("mi250x-gcd", (2048, 1024, None), (1700, 1600, 4096), ([65536, 65536, 65536], 8 * MIB, 64 * GIB)),
            ("mi250-gcd", (2048, 1024, None), (1700, 1600, 4096), ([65536, 65536, 65536], 8 * MIB, 64 * GIB)),
            ("mi300x", (2048, 1024, None), (2100, 2600, 8192), ([65536, 65536, 65536], 4 * MIB, 192 * GIB)),
            ("h100-sxm", (2048, 1024, Some(32)), (1980, 2619, 5120), ([233472, 49152, 232448], 50 * MIB, 80 * GIB)),
            ("h100-pcie", (2048, 1024, Some(32)), (1755, 1593, 5120), ([233472, 49152, 232448], 50 * MIB, 80 * GIB)),
            ("h200", (2048, 1024, Some(32)), (1980, 3201, 6144), ([233472, 49152, 232448], 50 * MIB, 141 * GIB)),
            ("a100-80gb", (2048, 1024, Some(32)), (1410, 1593, 5120), ([167936, 49152, 166912], 40 * MIB, 80 * GIB)),
            ("a100-40gb", (2048, 1024, Some(32)), (1410, 1215, 5120), ([167936, 49152, 166912], 40 * MIB, 40 * GIB)),
        ] {
            let q = part(key).unwrap().props();
            assert_eq!((q.max_items_per_cu, q.max_group_size, q.max_groups_per_cu), limits, "{key}");
            assert_eq!(
                (q.clock_mhz, q.memory_clock_mhz, q.memory_bus_bits),
                (Some(clocks.0), Some(clocks.1), Some(clocks.2))
            );
            let lds = [q.lds_bytes_per_cu, q.lds_bytes_per_group, q.lds_bytes_per_group_optin];
            assert_eq!((lds, q.l2_bytes, q.memory_bytes), (sizes.0, Some(sizes.1), sizes.2), "{key}");
            assert_eq!((q.registers_per_cu, q.cu_count > 0), (65536, true), "{key}");
        }
        // The MI100 (CDNA1) has 10 wave slots per SIMD: 2560 items per CU.
        assert_eq!(part("mi100").unwrap().props().max_items_per_cu, 2560);
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
        // An unknown key lists them all, in the catalogue's order.
        let err = part("mi250").unwrap_err().to_string();
        assert_eq!(err, format!("no part `mi250` to plan for; known: {}", keys().join(", ")));
        assert!(err.contains("known: mi250x-gcd, mi250-gcd, ") && err.ends_with(", a100-80gb, a100-40gb"), "{err}");
        assert_eq!(keys().len(), PARTS.len());
        assert_eq!(part(" h200 ").ok().map(|p| p.name), Some("H200 SXM (132 SMs)"));
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
                        p.name
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
    fn nvidia_parts_read_their_kernels_resources_from_the_cubin() {
        let gpu = planned("h100-sxm");
        let triad = gpu.kernel("smoke", "smoke_triad").unwrap();
        // nvcc gives the triad a dozen registers (12 in the fixture, as cuobjdump reads it), no shared memory and no
        // launch bounds: the part's largest block.
        let regs = triad.attrs.registers_per_item;
        assert!((4..=32).contains(&regs), "{regs} registers");
        assert_eq!((triad.attrs.static_lds_bytes, triad.attrs.max_group_size), (0, 1024));
        // The occupancy calculator answers for it as the driver would: 2048 threads per SM make 8 groups of 256.
        assert_eq!(gpu.device.occupancy_groups_per_cu(&triad, 256, 0).unwrap(), 8);
        // More shared memory per group, fewer groups: 100 KiB of 228 KiB leaves 2.
        assert_eq!(gpu.device.occupancy_groups_per_cu(&triad, 256, 100 << 10).unwrap(), 2);
        // The cubin's kernels are listed: a name that is not there is an error that lists them.
        let err = gpu.kernel("smoke", "no_such_kernel").unwrap_err().to_string();
        assert!(
            err.starts_with("kernel `no_such_kernel` is not in the module (it holds: ") && err.contains("smoke_triad")
        );
        assert_eq!(gpu.amd_kernel_meta("smoke", "smoke_triad").unwrap(), None);
        assert!(gpu.device.blas().unwrap().starts_with("cuBLAS assumed present on the H100 SXM5 (132 SMs)"));
    }
}
