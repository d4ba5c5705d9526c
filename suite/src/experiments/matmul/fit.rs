//! The default kernel set of an AMD device, chosen from the code objects the node's compiler actually built.
//!
//! Register use on gfx90a moves a lot between compilers: Debian's HIP 5.2 (clang 15), ROCm 6.3's back end and
//! upstream clang 18.1 give `matmul_warptile` 192, 98 and 248 VGPRs, and a wave64 shape that fits one compiler spills
//! under another (docs/matmul.md). A list fitted to one compiler is wrong on the next, so [`choose`] keeps a
//! candidate kernel only when, in the code object built for the device, every symbol it launches (the kernel and,
//! where it has them, its `_unaligned` and `_packed` twins):
//! - spills no register (`.vgpr_spill_count` + `.sgpr_spill_count` = 0),
//! - uses no scratch (`.private_segment_fixed_size` = 0: spills and stack arrays live there, at the latency of
//!   global memory), and
//! - reaches at least [`MIN_OCCUPANCY_PERCENT`] theoretical occupancy at its launch group size, counting its AGPRs.
//!   The metadata's `.vgpr_count` is the total the register allocator counts (LLVM's NumVGPRsForWavesPerEU: on
//!   gfx90a and gfx942, whose VGPRs and AGPRs share one file, roundup(ArchVGPRs, 4) + AGPRs), and the occupancy is
//!   the suite's calculator's ([`crate::occupancy_calculator`]) with the kernel's SGPRs and static LDS.
//!
//! Every other candidate is left out with each reason, in words a summary can quote ([`Reason`]).
//!
//! This is the rule for AMD devices. NVIDIA's cubins carry no such metadata, and the rule would drop NVIDIA's
//! fastest kernel (`double_buffer`: 240 registers, one group of 256 per SM, 12.5%, 0.92× cuBLAS), so NVIDIA keeps
//! its table (`ARCH_DEFAULTS`).

use std::fmt;

use super::ladder::Variant;
use super::rungs::VARIANTS;
use super::selection::{default_names, owned, select_kernels};
use crate::code_objects::AmdKernelMeta;
use crate::device::Platform;
use crate::experiments::Error;
use crate::occupancy_calculator::{Limiter, Profile, Resources};
use crate::precision::Precision;

/// The least theoretical occupancy, in percent of the CU's wave slots, a kernel of the default set must reach: on
/// gfx90a half the slots, 4 of 8 waves per SIMD (at most 128 VGPRs+AGPRs per item). Below that each SIMD has 1 to 3
/// waves to switch between while LDS and global loads are in flight; the kernels tuned for NVIDIA sit there on
/// gfx90a (236 to 396 VGPRs+AGPRs, 1 or 2 waves per SIMD), and the wave64 shapes were written to reach it.
pub const MIN_OCCUPANCY_PERCENT: f64 = 50.0;

/// A kernel that may join the default set: its name, the symbols it launches and its group size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Name on the command line and in the CSV, e.g. `warptile`.
    pub name: String,
    /// Every symbol the kernel launches at some size, e.g. `matmul_warptile` and `matmul_warptile_unaligned`; each
    /// must fit.
    pub symbols: Vec<String>,
    /// Items per group at launch (the occupancy is computed for groups of this size).
    pub group_size: u32,
}

impl Candidate {
    /// A kernel of the ladder in `precision`: its symbol there (`<symbol>_f64` in FP64), its `_unaligned` and
    /// `_packed` twins where it has them, and its launch group.
    pub fn of(v: &Variant, precision: Precision) -> Candidate {
        let base = match precision {
            Precision::F32 => v.symbol.to_string(),
            Precision::F64 => format!("{}_f64", v.symbol),
        };
        let mut symbols = vec![base.clone()];
        if v.aligned_rows {
            symbols.push(format!("{base}_unaligned"));
        }
        if v.packed_twin && precision == Precision::F32 {
            symbols.push(v.packed_symbol());
        }
        Candidate { name: v.name.to_string(), symbols, group_size: v.group[0] * v.group[1] }
    }
}

/// Why a symbol keeps its kernel out of the default set.
#[derive(Debug, Clone, PartialEq)]
pub enum Reason {
    /// The code object has no kernel of this name.
    Missing,
    /// Registers spilled to scratch.
    Spills {
        /// VGPRs spilled (`.vgpr_spill_count`).
        vgprs: u32,
        /// SGPRs spilled (`.sgpr_spill_count`).
        sgprs: u32,
    },
    /// Private (scratch) memory per item.
    Scratch {
        /// Bytes per item (`.private_segment_fixed_size`).
        bytes: u32,
    },
    /// Theoretical occupancy below [`MIN_OCCUPANCY_PERCENT`].
    LowOccupancy {
        /// Resident waves over wave slots, percent.
        percent: f64,
        /// VGPRs per item counting the AGPRs (`.vgpr_count`).
        registers: u32,
        /// AGPRs of those (`.agpr_count`; 0 where the architecture has none).
        agprs: u32,
        /// Resident waves per CU.
        waves_per_cu: u32,
        /// Wave slots per CU.
        wave_slots_per_cu: u32,
        /// The resource that binds.
        limiter: Limiter,
    },
    /// Not even one group fits on a CU (the calculator's words).
    DoesNotFit(String),
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Missing => write!(f, "is not in the code object"),
            Reason::Spills { vgprs, sgprs } => {
                write!(f, "spills {} registers ({vgprs} VGPRs, {sgprs} SGPRs)", vgprs + sgprs)
            }
            Reason::Scratch { bytes } => write!(f, "uses {bytes} bytes of scratch per item"),
            Reason::LowOccupancy { percent, registers, agprs, waves_per_cu, wave_slots_per_cu, limiter } => write!(
                f,
                "reaches only {percent:.1}% occupancy counting AGPRs ({registers} VGPRs+AGPRs, {agprs} of them \
                 AGPRs: {waves_per_cu} of {wave_slots_per_cu} waves per CU, limited by {limiter}; at least \
                 {MIN_OCCUPANCY_PERCENT}% wanted)"
            ),
            Reason::DoesNotFit(why) => write!(f, "fits no group on a CU: {why}"),
        }
    }
}

/// A kernel of the default set, with the figures that let it in (the worst of its symbols).
#[derive(Debug, Clone, PartialEq)]
pub struct Kept {
    /// The candidate's name.
    pub name: String,
    /// Most VGPRs+AGPRs per item of its symbols.
    pub registers: u32,
    /// Least theoretical occupancy of its symbols, percent.
    pub occupancy_percent: f64,
}

/// A candidate left out, with every symbol that fails and why.
#[derive(Debug, Clone, PartialEq)]
pub struct LeftOut {
    /// The candidate's name.
    pub name: String,
    /// Each failing symbol with each of its reasons, in the candidate's symbol order.
    pub reasons: Vec<(String, Reason)>,
}

impl fmt::Display for LeftOut {
    /// E.g. `warptile: matmul_warptile reaches only 25.0% occupancy counting AGPRs (...)`, one clause per reason.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let clauses: Vec<String> = self.reasons.iter().map(|(symbol, reason)| format!("{symbol} {reason}")).collect();
        write!(f, "{}: {}", self.name, clauses.join("; "))
    }
}

/// What [`choose`] decided: the kernels kept, in candidate order, and those left out, with why.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Fit {
    /// The default set.
    pub chosen: Vec<Kept>,
    /// Every other candidate.
    pub left_out: Vec<LeftOut>,
}

impl Fit {
    /// The names of the default set, in candidate order, as `--kernels` takes them.
    pub fn names(&self) -> Vec<&str> {
        self.chosen.iter().map(|k| k.name.as_str()).collect()
    }
}

/// Chooses the default set among `candidates` from `kernels`, the metadata of the code object built for the device
/// (`CodeObjectInfo::amd_kernels`), on `profile`, the device's occupancy profile (`Profile::from_props(props)` for a
/// device; `Profile::for_arch` statically). Pure: it reads nothing else and never fails.
///
/// A candidate is kept when every one of its symbols is in `kernels`, spills nothing, uses no scratch and reaches at
/// least [`MIN_OCCUPANCY_PERCENT`] occupancy counting AGPRs in groups of its launch size (static LDS only: the
/// matmul kernels declare their tiles statically). Otherwise it is in [`Fit::left_out`] with each failing symbol and
/// every reason that holds for it. Both lists keep the candidates' order; every candidate is in exactly one.
///
/// Used by the matmul sweep on AMD devices ([`DeviceSet::of`], once per run, per precision): candidates = the
/// kernels of `VARIANTS` that can run in the precision on the architecture, through [`Candidate::of`]; kernels = the
/// metadata of their symbols in the code objects the run loaded; profile = `Profile::from_props(props)`. The names
/// go into the run's options (the fingerprint changes with the set), the autotune step takes the same set, and each
/// [`LeftOut`] is said in summary.md beside the compiler that built the object. An empty set is an error. On NVIDIA,
/// and wherever no AMD metadata can be read, `ARCH_DEFAULTS` serves.
pub fn choose(candidates: &[Candidate], kernels: &[AmdKernelMeta], profile: &Profile) -> Fit {
    let mut fit = Fit::default();
    for candidate in candidates {
        let mut reasons = Vec::new();
        let mut registers = 0;
        let mut occupancy_percent = f64::INFINITY;
        for symbol in &candidate.symbols {
            let Some(k) = kernels.iter().find(|k| &k.name == symbol) else {
                reasons.push((symbol.clone(), Reason::Missing));
                continue;
            };
            let spilled = (k.vgpr_spill_count.unwrap_or(0), k.sgpr_spill_count.unwrap_or(0));
            if spilled != (0, 0) {
                reasons.push((symbol.clone(), Reason::Spills { vgprs: spilled.0, sgprs: spilled.1 }));
            }
            if k.scratch_bytes > 0 {
                reasons.push((symbol.clone(), Reason::Scratch { bytes: k.scratch_bytes }));
            }
            let res = Resources { group_size: candidate.group_size, ..Resources::from_amd_kernel(k) };
            match profile.occupancy(&res) {
                Ok(o) if o.percent >= MIN_OCCUPANCY_PERCENT => {
                    registers = registers.max(k.vgpr_count);
                    occupancy_percent = occupancy_percent.min(o.percent);
                }
                Ok(o) => reasons.push((
                    symbol.clone(),
                    Reason::LowOccupancy {
                        percent: o.percent,
                        registers: k.vgpr_count,
                        agprs: k.agpr_count.unwrap_or(0),
                        waves_per_cu: o.waves_per_cu,
                        wave_slots_per_cu: o.wave_slots_per_cu,
                        limiter: o.limiter,
                    },
                )),
                Err(e) => reasons.push((symbol.clone(), Reason::DoesNotFit(e.to_string()))),
            }
        }
        if reasons.is_empty() && !candidate.symbols.is_empty() {
            fit.chosen.push(Kept { name: candidate.name.clone(), registers, occupancy_percent });
        } else {
            fit.left_out.push(LeftOut { name: candidate.name.clone(), reasons });
        }
    }
    fit
}

/// The default kernel sets of one device, chosen from the code objects built for it (AMD: [`choose`]), or the
/// table's where no metadata could be read, and why.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeviceSet {
    /// The names of the FP32 set, as `--kernels` takes them.
    pub f32: Vec<String>,
    /// The names of the FP64 set.
    pub f64: Vec<String>,
    /// Where the sets came from, for run.json and the summary: the rule and the compiler that built the objects,
    /// or why the table serves.
    pub origin: String,
    /// Each kernel left out, with its precision and every reason ([`fit::LeftOut`]'s words).
    pub left_out: Vec<String>,
}

impl DeviceSet {
    /// The set in `precision`.
    pub(super) fn names(&self, precision: Precision) -> &[String] {
        match precision {
            Precision::F32 => &self.f32,
            Precision::F64 => &self.f64,
        }
    }

    /// The sets of the device `gpu` drives, chosen by [`fit::choose`] from the metadata of the code objects the run
    /// loads (`None` where the device is not AMD: NVIDIA keeps its table). Where no metadata can be read (the objects
    /// do not build, or they are not AMD's: the HIP-over-CUDA test runtime), the table serves and `origin` says why.
    /// An empty set is an error: nothing would run.
    pub fn of(gpu: &crate::gpu::Gpu) -> Result<Option<DeviceSet>, Error> {
        let props = gpu.device.props();
        let arch = props.arch.as_str();
        if props.arch.platform() != Platform::Amd || !arch.starts_with("gfx") {
            return Ok(None);
        }
        let profile = match crate::occupancy_calculator::Profile::from_props(props) {
            Ok(p) => p,
            Err(e) => return Ok(Some(DeviceSet::table(arch, format!("the table (ARCH_DEFAULTS): {e}")))),
        };
        let mut set = DeviceSet::default();
        let mut compilers = Vec::new();
        for precision in Precision::ALL {
            let candidates: Vec<&'static Variant> =
                VARIANTS.iter().filter(|v| v.problem_on(precision, arch).is_none()).collect();
            let mut metadata = Vec::new();
            for v in &candidates {
                for symbol in Candidate::of(v, precision).symbols {
                    match gpu.amd_kernel_meta(v.source, &symbol) {
                        Ok(Some(meta)) => metadata.push(meta),
                        Ok(None) => {}
                        Err(e) => {
                            return Ok(Some(DeviceSet::table(
                                arch,
                                format!("the table (ARCH_DEFAULTS): the `{}` code object's metadata: {e}", v.source),
                            )))
                        }
                    }
                }
            }
            let fit = choose(
                &candidates.iter().map(|v| Candidate::of(v, precision)).collect::<Vec<_>>(),
                &metadata,
                &profile,
            );
            if metadata.is_empty() {
                return Ok(Some(DeviceSet::table(
                    arch,
                    "the table (ARCH_DEFAULTS): the code objects carry no AMD kernel metadata".to_string(),
                )));
            }
            if fit.chosen.is_empty() {
                return Err(Error::Unsupported(format!(
                    "matmul: no {} kernel of the code object built for {arch} spills nothing, uses no scratch and \
                     reaches {}% occupancy, so the default set is empty; name kernels with --kernels / \
                     --f64-kernels. Left out: {}",
                    precision.label(),
                    MIN_OCCUPANCY_PERCENT,
                    fit.left_out.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
                )));
            }
            let mut names: Vec<String> = fit.names().iter().map(|n| n.to_string()).collect();
            // The table's rungs that cannot run here at all (the DMMA rung on AMD) keep their row that says why.
            names.extend(
                default_names(arch, precision)
                    .iter()
                    .filter(|n| {
                        let rung = select_kernels(&[n.to_string()], &[]).unwrap_or_default();
                        !rung.is_empty() && rung.iter().all(|v| v.problem_on(precision, arch).is_some())
                    })
                    .map(|n| n.to_string()),
            );
            set.left_out.extend(fit.left_out.iter().map(|l| format!("{}: {l}", precision.label())));
            match precision {
                Precision::F32 => set.f32 = names,
                Precision::F64 => set.f64 = names,
            }
        }
        for record in gpu.compiler_records() {
            if ["matmul", "matmul_dmma"].contains(&record.source.as_str()) && !compilers.contains(&record.compiler) {
                compilers.push(record.compiler);
            }
        }
        set.origin = format!(
            "chosen from the code objects built for {arch} (no spill, no scratch, at least {}% occupancy counting \
             AGPRs; suite/src/experiments/matmul/fit.rs), compiler: {}",
            MIN_OCCUPANCY_PERCENT,
            if compilers.is_empty() { "unknown".to_string() } else { compilers.join(", ") }
        );
        Ok(Some(set))
    }

    /// The table's sets for `arch`, because `why`.
    fn table(arch: &str, why: String) -> DeviceSet {
        DeviceSet {
            f32: owned(default_names(arch, Precision::F32)),
            f64: owned(default_names(arch, Precision::F64)),
            origin: why,
            left_out: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests;
