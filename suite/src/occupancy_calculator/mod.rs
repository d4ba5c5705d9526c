//! Theoretical occupancy: how many groups of a kernel fit on one CU/SM at once, and which resource binds.
//!
//! A [`Profile`] (a row of data, see `profiles.rs` for the numbers and their sources) says what one CU holds and
//! how it allocates it; [`Profile::occupancy`] applies the vendors' allocation rules to a kernel's [`Resources`].
//! Each resource on its own allows a number of groups ([`Limits`]); the smallest binds ([`Limiter`]):
//! - waves: a CU has SIMDs × waves per SIMD wave slots; a group takes ceil(items / wave size), a partial wave
//!   costs a whole one.
//! - registers: AMD allocates VGPRs per wave in granules (VGPRs per lane) from each SIMD's file, so waves per
//!   SIMD = file / roundup(vgprs, granule) (LLVM getNumWavesPerEUWithNumVGPRs). NVIDIA allocates per warp in units
//!   of 256 registers from each sub-partition's quarter of the SM's file, and refuses a block whose warps, rounded
//!   up to a multiple of 4, would need more than 64 K registers (cuda_occupancy.h cudaOccMaxBlocksPerSMRegsLimit).
//! - SGPRs (AMD gfx9 only): per wave, in granules of 16, from 800 per SIMD (LLVM getSGPRAllocGranule,
//!   getTotalNumSGPRs; the HIP runtime's occupancy API computes the same).
//! - LDS: per group, the system's reserve (NVIDIA 1 KiB) plus the kernel's bytes, rounded up to the granule (AMD
//!   512 B, NVIDIA 128 B).
//! - group slots (NVIDIA: 32 blocks per SM) and barriers (AMD: every group of more than one wave holds one of the
//!   CU's 16; LLVM getMaxWorkGroupsPerCU).
//!
//! Resources that no group can fit (too many registers per item, more LDS than a group may have, a group larger
//! than the maximum, or a register file too small for even one group) are errors that say which and by how much.

mod profiles;

pub use profiles::{Agprs, Profile, RegisterFile, SgprFile, GFX908, GFX90A, GFX942, PROFILES, SM_80, SM_90};

use std::fmt;

use serde::Serialize;

use crate::code_objects::AmdKernelMeta;
use crate::device::{Arch, KernelAttrs, Platform, Props, WaveSize};

/// Architectural VGPRs, and separately AGPRs, one item may address on every AMD target (LLVM
/// getAddressableNumArchVGPRs).
pub const MAX_ARCH_VGPRS: u32 = 256;

/// In a unified VGPR/AGPR file the AGPRs start at a multiple of 4 VGPRs (LLVM getTotalNumVGPRs(has90AInsts, ...):
/// alignTo(VGPRs, 4) + AGPRs; the kernel descriptor's `accum_offset` has the same granule).
const AGPR_ALIGN: u32 = 4;

/// What a kernel launch asks of one CU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Resources {
    /// Items per group.
    pub group_size: u32,
    /// 32-bit registers per item: AMD VGPRs as the code-object metadata counts them (on gfx90a and gfx942 that is
    /// VGPRs and AGPRs together, see [`Profile::unified_vgprs`]); NVIDIA registers per thread. 0 does not limit.
    pub registers_per_item: u32,
    /// SGPRs per wave (AMD), where known; they limit only on gfx9.
    pub sgprs: Option<u32>,
    /// LDS (shared memory) per group in bytes, static plus dynamic.
    pub lds_bytes_per_group: u32,
}

impl Resources {
    /// An AMD kernel's resources from its code-object metadata, for groups of its largest size (its launch bounds'
    /// `max_flat_workgroup_size`, 1024 without launch bounds).
    pub fn from_amd_kernel(meta: &AmdKernelMeta) -> Resources {
        Resources {
            group_size: meta.max_group_size,
            registers_per_item: meta.vgpr_count,
            sgprs: Some(meta.sgpr_count),
            lds_bytes_per_group: meta.lds_bytes,
        }
    }

    /// A loaded kernel's resources as the runtime reports them, for groups of `group_size` items that ask for
    /// `dynamic_lds_bytes` of LDS on top of the kernel's static LDS.
    pub fn from_attrs(attrs: &KernelAttrs, group_size: u32, dynamic_lds_bytes: u32) -> Resources {
        Resources {
            group_size,
            registers_per_item: attrs.registers_per_item,
            sgprs: None,
            lds_bytes_per_group: attrs.static_lds_bytes.saturating_add(dynamic_lds_bytes),
        }
    }
}

/// A resource that limits how many groups a CU holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Limiter {
    /// Wave slots (waves per CU, warps per SM).
    Waves,
    /// The vector register file (AMD VGPRs with AGPRs, NVIDIA registers).
    Registers,
    /// The scalar register file (AMD gfx9).
    Sgprs,
    /// LDS / shared memory.
    Lds,
    /// Group slots per CU (NVIDIA blocks per SM).
    GroupSlots,
    /// Barriers per CU (AMD: one per group of more than one wave).
    Barriers,
}

impl Limiter {
    /// Every limiter, in the order that breaks ties: when several allow the same fewest groups, the first binds.
    pub const ALL: [Limiter; 6] =
        [Limiter::Waves, Limiter::Registers, Limiter::Sgprs, Limiter::Lds, Limiter::GroupSlots, Limiter::Barriers];

    /// Lower-case name, as in CSV rows and `suite occupancy calc`.
    pub fn name(self) -> &'static str {
        match self {
            Limiter::Waves => "waves",
            Limiter::Registers => "registers",
            Limiter::Sgprs => "sgprs",
            Limiter::Lds => "lds",
            Limiter::GroupSlots => "group_slots",
            Limiter::Barriers => "barriers",
        }
    }
}

impl fmt::Display for Limiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Groups per CU that each resource allows on its own; `None` where the resource does not limit (the kernel does
/// not use it, or the architecture has no such limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// By wave slots.
    pub waves: u32,
    /// By the vector register file.
    pub registers: Option<u32>,
    /// By the scalar register file.
    pub sgprs: Option<u32>,
    /// By LDS.
    pub lds: Option<u32>,
    /// By group slots.
    pub group_slots: Option<u32>,
    /// By barriers.
    pub barriers: Option<u32>,
}

impl Limits {
    /// The groups `limiter` allows, `None` where it does not limit.
    pub fn get(&self, limiter: Limiter) -> Option<u32> {
        match limiter {
            Limiter::Waves => Some(self.waves),
            Limiter::Registers => self.registers,
            Limiter::Sgprs => self.sgprs,
            Limiter::Lds => self.lds,
            Limiter::GroupSlots => self.group_slots,
            Limiter::Barriers => self.barriers,
        }
    }

    /// The fewest groups any resource allows, and the first resource (in [`Limiter::ALL`] order) that allows them.
    fn binding(&self) -> (u32, Limiter) {
        Limiter::ALL
            .into_iter()
            .filter_map(|l| self.get(l).map(|n| (n, l)))
            .fold((self.waves, Limiter::Waves), |best, next| if next.0 < best.0 { next } else { best })
    }
}

/// Resident groups and waves per CU, and what limits them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Occupancy {
    /// Groups resident on one CU at once.
    pub groups_per_cu: u32,
    /// Waves one group takes (a partial wave counts as a whole one).
    pub waves_per_group: u32,
    /// Waves resident on one CU at once.
    pub waves_per_cu: u32,
    /// Wave slots of one CU.
    pub wave_slots_per_cu: u32,
    /// Resident waves over wave slots, in percent.
    pub percent: f64,
    /// The binding resource (the first in [`Limiter::ALL`] order when several tie).
    pub limiter: Limiter,
    /// What every resource allows on its own.
    pub limits: Limits,
}

/// A kernel input that a profile bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Input {
    /// Items per group.
    GroupSize,
    /// Registers (VGPRs) per item.
    Registers,
    /// AGPRs per item (AMD, unified file).
    Agprs,
    /// SGPRs per wave.
    Sgprs,
    /// LDS bytes per group.
    Lds,
}

impl Input {
    /// What the input counts, with its unit.
    pub fn describe(self) -> &'static str {
        match self {
            Input::GroupSize => "items per group",
            Input::Registers => "registers per item",
            Input::Agprs => "AGPRs per item",
            Input::Sgprs => "SGPRs per wave",
            Input::Lds => "LDS bytes per group",
        }
    }

    /// What the input counts, without its unit.
    pub fn noun(self) -> &'static str {
        match self {
            Input::GroupSize => "items",
            Input::Registers => "registers",
            Input::Agprs => "AGPRs",
            Input::Sgprs => "SGPRs",
            Input::Lds => "LDS",
        }
    }
}

/// Why an occupancy cannot be computed. Messages say what is wrong and by how much.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// No profile for the architecture.
    #[error("no occupancy profile for `{arch}`; known: {}", known_profiles())]
    UnknownArch {
        /// The architecture asked for.
        arch: String,
    },
    /// The architecture has profiles, but not for this wave size.
    #[error("{arch} has no wave{wave} profile; wave sizes: {available}")]
    NoWaveSize {
        /// The architecture asked for.
        arch: String,
        /// The wave size asked for.
        wave: u32,
        /// The wave sizes it has, comma-separated.
        available: String,
    },
    /// A group of no items.
    #[error("a group needs at least 1 item")]
    EmptyGroup,
    /// An input above the profile's maximum.
    #[error("{value} {} is {} above {profile}'s maximum of {limit}", .input.describe(), .value - .limit)]
    TooLarge {
        /// The profile.
        profile: &'static str,
        /// Which input.
        input: Input,
        /// The value given.
        value: u32,
        /// The most the profile allows.
        limit: u32,
    },
    /// An input the architecture does not have (AGPRs on RDNA or NVIDIA, SGPRs on NVIDIA).
    #[error("{profile} has no {}", .input.noun())]
    Unsupported {
        /// The profile.
        profile: &'static str,
        /// Which input.
        input: Input,
    },
    /// Each input is within bounds, but together they leave no room for one group.
    #[error("not even one group fits on one {profile} CU: {detail}")]
    DoesNotFit {
        /// The profile.
        profile: &'static str,
        /// The resource that runs out.
        limiter: Limiter,
        /// By how much, and what would fit.
        detail: String,
    },
}

/// The profile names, comma-separated, for messages.
pub fn known_profiles() -> String {
    PROFILES.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
}

fn round_up(x: u32, granule: u32) -> u32 {
    x.div_ceil(granule) * granule
}

impl Profile {
    /// The profile called `name` (`gfx90a`, `gfx1100-wave64`, `sm_90`).
    pub fn by_name(name: &str) -> Option<&'static Profile> {
        PROFILES.iter().find(|p| p.name == name)
    }

    /// The profile named by `text`, a profile name (`gfx1100-wave64`) or an architecture (`gfx1100`, `sm_90a`), with
    /// `wave` items per wave where given.
    pub fn find(text: &str, wave: Option<WaveSize>) -> Result<&'static Profile, Error> {
        match Profile::by_name(text.trim()) {
            Some(p) => match wave {
                Some(w) if w != p.wave_size => {
                    Err(Error::NoWaveSize { arch: p.name.to_string(), wave: w.0, available: p.wave_size.to_string() })
                }
                _ => Ok(p),
            },
            None => {
                let arch = Arch::parse(text).map_err(|_| Error::UnknownArch { arch: text.to_string() })?;
                Profile::for_arch(&arch, wave)
            }
        }
    }

    /// The profile for `arch` with `wave` items per wave; without a wave size, the architecture's default (its
    /// first profile: wave64 on gfx9, wave32 on gfx11). `sm_90a` is `sm_90`: the same resources.
    pub fn for_arch(arch: &Arch, wave: Option<WaveSize>) -> Result<&'static Profile, Error> {
        let name = arch.as_str();
        let base = match arch.platform() {
            Platform::Nvidia => name.strip_suffix('a').unwrap_or(name),
            Platform::Amd => name,
        };
        let mut of_arch = PROFILES.iter().filter(|p| p.arch == base).peekable();
        let Some(&default) = of_arch.peek() else {
            return Err(Error::UnknownArch { arch: name.to_string() });
        };
        let Some(wave) = wave else { return Ok(default) };
        let mut available = Vec::new();
        for p in of_arch {
            if p.wave_size == wave {
                return Ok(p);
            }
            available.push(p.wave_size.to_string());
        }
        Err(Error::NoWaveSize { arch: name.to_string(), wave: wave.0, available: available.join(", ") })
    }

    /// The profile for a device: the one for its architecture and wave size, with the limits its runtime reports
    /// put in place of the profile's (LDS per CU and per group, largest group; on NVIDIA also registers per SM, warp
    /// slots and block slots, the numbers cuda_occupancy.h takes from the device). HIP's register and
    /// items-per-CU attributes are not the VGPR file and the wave slots (its own occupancy API hard-codes those), so
    /// AMD keeps the profile's.
    pub fn from_props(props: &Props) -> Result<Profile, Error> {
        let mut p = *Profile::for_arch(&props.arch, Some(props.wave_size))?;
        let to_u32 = |bytes: u64| u32::try_from(bytes).unwrap_or(u32::MAX);
        p.lds_bytes_per_cu = to_u32(props.lds_bytes_per_cu);
        p.max_lds_bytes_per_group = to_u32(props.lds_bytes_per_group_optin).min(p.lds_bytes_per_cu);
        p.max_group_size = props.max_group_size;
        if p.platform == Platform::Nvidia {
            if let RegisterFile::PerWarp { per_cu, .. } = &mut p.registers {
                *per_cu = props.registers_per_cu;
            }
            let waves_per_simd = props.max_items_per_cu / props.wave_size.0 / p.simds_per_cu;
            if waves_per_simd > 0 {
                p.max_waves_per_simd = waves_per_simd;
            }
            if props.max_groups_per_cu.is_some() {
                p.max_groups_per_cu = props.max_groups_per_cu;
            }
        }
        Ok(p)
    }

    /// Wave slots of one CU.
    pub fn wave_slots_per_cu(&self) -> u32 {
        self.simds_per_cu * self.max_waves_per_simd
    }

    /// Registers per item of a kernel using `vgprs` architectural VGPRs and `agprs` AGPRs, as the allocator
    /// counts them: on a unified file (gfx90a, gfx942) `roundup(vgprs, 4) + agprs` (LLVM getTotalNumVGPRs); with
    /// a separate AGPR file (gfx908) the larger of the two, each file holding as many waves (LLVM
    /// AMDGPUAsmPrinter's NumVGPRsForWavesPerEU); `vgprs` when there are no AGPRs. Each must be within the 256 an
    /// item can address.
    pub fn unified_vgprs(&self, vgprs: u32, agprs: u32) -> Result<u32, Error> {
        if agprs == 0 {
            return Ok(vgprs);
        }
        let file = match self.registers {
            RegisterFile::PerLane { agprs: file @ (Agprs::Unified | Agprs::Separate), .. } => file,
            _ => return Err(Error::Unsupported { profile: self.name, input: Input::Agprs }),
        };
        let too_large = |input, value| Error::TooLarge { profile: self.name, input, value, limit: MAX_ARCH_VGPRS };
        if vgprs > MAX_ARCH_VGPRS {
            return Err(too_large(Input::Registers, vgprs));
        }
        if agprs > MAX_ARCH_VGPRS {
            return Err(too_large(Input::Agprs, agprs));
        }
        Ok(match file {
            Agprs::Separate => vgprs.max(agprs),
            _ => round_up(vgprs, AGPR_ALIGN) + agprs,
        })
    }

    /// The theoretical occupancy of a kernel with resources `res` on one CU of this profile.
    pub fn occupancy(&self, res: &Resources) -> Result<Occupancy, Error> {
        self.check(res)?;
        let waves_per_group = self.wave_size.waves_for(res.group_size);
        let limits = self.limits(res, waves_per_group);
        let (groups, limiter) = limits.binding();
        if groups == 0 {
            return Err(self.no_fit(res, waves_per_group, limiter));
        }
        let waves_per_cu = groups * waves_per_group;
        let wave_slots_per_cu = self.wave_slots_per_cu();
        Ok(Occupancy {
            groups_per_cu: groups,
            waves_per_group,
            waves_per_cu,
            wave_slots_per_cu,
            percent: 100.0 * f64::from(waves_per_cu) / f64::from(wave_slots_per_cu),
            limiter,
            limits,
        })
    }

    /// Checks each input against its bound, and NVIDIA's per-block register check.
    fn check(&self, res: &Resources) -> Result<(), Error> {
        let bounded = |input, value: u32, limit: u32| {
            if value > limit {
                Err(Error::TooLarge { profile: self.name, input, value, limit })
            } else {
                Ok(())
            }
        };
        if res.group_size == 0 {
            return Err(Error::EmptyGroup);
        }
        bounded(Input::GroupSize, res.group_size, self.max_group_size)?;
        bounded(Input::Registers, res.registers_per_item, self.max_registers_per_item)?;
        match (res.sgprs, self.max_sgprs_per_wave) {
            (Some(sgprs), Some(limit)) => bounded(Input::Sgprs, sgprs, limit)?,
            (Some(_), None) => return Err(Error::Unsupported { profile: self.name, input: Input::Sgprs }),
            (None, _) => {}
        }
        bounded(Input::Lds, res.lds_bytes_per_group, self.max_lds_bytes_per_group)?;
        if let RegisterFile::PerWarp { granule, per_group, .. } = self.registers {
            // The hardware counts a block's warps rounded up to a multiple of the sub-partitions
            // (cudaOccMaxBlocksPerSMRegsLimit, "Hardware check").
            let warps = round_up(self.wave_size.waves_for(res.group_size), self.simds_per_cu);
            let per_warp = round_up(res.registers_per_item * self.wave_size.0, granule);
            let needed = per_warp * warps;
            if needed > per_group {
                let fits = (per_group / warps) / granule * granule / self.wave_size.0;
                return Err(Error::DoesNotFit {
                    profile: self.name,
                    limiter: Limiter::Registers,
                    detail: format!(
                        "a group of {} items at {} registers per item is counted as {warps} warps of {per_warp} \
                         registers = {needed}, {} above the {per_group} one group may hold; at most {fits} registers \
                         per item fit groups this size",
                        res.group_size,
                        res.registers_per_item,
                        needed - per_group
                    ),
                });
            }
        }
        Ok(())
    }

    /// What each resource allows on its own, for groups of `waves_per_group` waves.
    fn limits(&self, res: &Resources, waves_per_group: u32) -> Limits {
        let simds = self.simds_per_cu;
        let regs = res.registers_per_item;
        let registers = match self.registers {
            _ if regs == 0 => None,
            RegisterFile::PerLane { per_lane, granule, .. } => {
                Some(per_lane / round_up(regs, granule) * simds / waves_per_group)
            }
            RegisterFile::PerWarp { per_cu, granule, .. } => {
                let warps_per_simd = (per_cu / simds) / round_up(regs * self.wave_size.0, granule);
                Some(warps_per_simd * simds / waves_per_group)
            }
        };
        let sgprs = match (self.sgprs, res.sgprs) {
            (Some(file), Some(sgprs)) if sgprs > 0 => {
                Some(file.per_simd / round_up(sgprs, file.granule) * simds / waves_per_group)
            }
            _ => None,
        };
        let lds_bytes = res.lds_bytes_per_group + self.lds_reserved_bytes_per_group;
        Limits {
            waves: self.wave_slots_per_cu() / waves_per_group,
            registers,
            sgprs,
            lds: (lds_bytes > 0).then(|| self.lds_bytes_per_cu / round_up(lds_bytes, self.lds_granule_bytes)),
            group_slots: self.max_groups_per_cu,
            // A single-wave group needs no barrier (LLVM getMaxWorkGroupsPerCU).
            barriers: if waves_per_group > 1 { self.max_barriers_per_cu } else { None },
        }
    }

    /// The error for resources that allow no group, saying by how much.
    fn no_fit(&self, res: &Resources, waves_per_group: u32, limiter: Limiter) -> Error {
        let detail = match (limiter, self.registers) {
            (Limiter::Registers, RegisterFile::PerLane { per_lane, granule, .. }) => {
                let allocated = round_up(res.registers_per_item, granule);
                let holds = per_lane / allocated * self.simds_per_cu;
                let per_simd = waves_per_group.div_ceil(self.simds_per_cu);
                let fits = (per_lane / per_simd / granule * granule).min(self.max_registers_per_item);
                format!(
                    "a group of {} items is {waves_per_group} waves, but at {} VGPRs per item ({allocated} allocated) \
                     the CU's {} SIMDs hold {holds} waves, {} too few; at most {fits} VGPRs per item fit groups this \
                     size",
                    res.group_size,
                    res.registers_per_item,
                    self.simds_per_cu,
                    waves_per_group - holds
                )
            }
            _ => format!("{limiter} allow no group of {} items ({waves_per_group} waves)", res.group_size),
        };
        Error::DoesNotFit { profile: self.name, limiter, detail }
    }
}

/// The theoretical occupancy of `res` on the device described by `props` (its profile with the limits the runtime
/// reports, see [`Profile::from_props`]).
pub fn theoretical(props: &Props, res: Resources) -> Result<Occupancy, Error> {
    Profile::from_props(props)?.occupancy(&res)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Limits an H100 SXM reports (read on the device machine by `suite info`).
    pub(crate) fn h100() -> Props {
        Props {
            platform: Platform::Nvidia,
            ordinal: 0,
            name: "NVIDIA H100 80GB HBM3".into(),
            arch: Arch::parse("sm_90").unwrap(),
            arch_full: "sm_90".into(),
            wave_size: WaveSize(32),
            cu_count: 132,
            max_items_per_cu: 2048,
            max_group_size: 1024,
            max_groups_per_cu: Some(32),
            lds_bytes_per_cu: 233472,
            lds_bytes_per_group: 49152,
            lds_bytes_per_group_optin: 232448,
            registers_per_cu: 65536,
            clock_mhz: None,
            memory_clock_mhz: None,
            memory_bus_bits: None,
            l2_bytes: None,
            memory_bytes: 80 << 30,
            runtime_version: String::new(),
            driver_version: String::new(),
            test_runtime: false,
        }
    }

    fn mi250x_gcd() -> Props {
        Props {
            platform: Platform::Amd,
            arch: Arch::parse("gfx90a").unwrap(),
            arch_full: "gfx90a:sramecc+:xnack-".into(),
            wave_size: WaveSize(64),
            cu_count: 110,
            max_items_per_cu: 2048,
            max_groups_per_cu: None,
            lds_bytes_per_cu: 65536,
            lds_bytes_per_group: 65536,
            lds_bytes_per_group_optin: 65536,
            registers_per_cu: 65536,
            ..h100()
        }
    }

    fn profile(name: &str) -> &'static Profile {
        Profile::by_name(name).unwrap_or_else(|| panic!("no profile {name}"))
    }

    fn res(group_size: u32, registers_per_item: u32, lds_bytes_per_group: u32) -> Resources {
        Resources { group_size, registers_per_item, sgprs: None, lds_bytes_per_group }
    }

    /// (groups per CU, limiter) of `res` on the profile called `name`.
    fn occ(name: &str, res: Resources) -> (u32, Limiter) {
        let o = profile(name).occupancy(&res).unwrap_or_else(|e| panic!("{name} {res:?}: {e}"));
        (o.groups_per_cu, o.limiter)
    }

    #[test]
    fn gfx90a_vgpr_table_for_single_wave_groups() {
        // (VGPRs, waves per SIMD): 512 / roundup(VGPRs, 8), at most 8. Each row's last count and the next one.
        let table = [
            (1, 8),
            (64, 8),
            (65, 7),
            (72, 7),
            (73, 6),
            (80, 6),
            (81, 5),
            (96, 5),
            (97, 4),
            (128, 4),
            (129, 3),
            (168, 3),
            (169, 2),
            (256, 2),
            (257, 1),
            (512, 1),
        ];
        for (vgprs, waves_per_simd) in table {
            let o = profile("gfx90a").occupancy(&res(64, vgprs, 0)).unwrap();
            assert_eq!(o.groups_per_cu, waves_per_simd * 4, "{vgprs} VGPRs");
            assert_eq!(o.waves_per_cu, waves_per_simd * 4, "{vgprs} VGPRs");
            // At 8 waves per SIMD the register file ties with the wave slots, and waves come first.
            let limiter = if waves_per_simd == 8 { Limiter::Waves } else { Limiter::Registers };
            assert_eq!(o.limiter, limiter, "{vgprs} VGPRs");
        }
        // The same rules and numbers on gfx942 (FeatureGFX90AInsts).
        assert_eq!(occ("gfx942", res(64, 168, 0)), (12, Limiter::Registers));
    }

    #[test]
    fn agprs_count_in_the_unified_file() {
        let p = profile("gfx90a");
        // (VGPRs, AGPRs, unified count): AGPRs start at a multiple of 4.
        for (vgprs, agprs, unified) in [(64, 0, 64), (60, 8, 68), (61, 8, 72), (64, 64, 128), (256, 256, 512)] {
            assert_eq!(p.unified_vgprs(vgprs, agprs), Ok(unified), "{vgprs} + {agprs}");
        }
        // 60 VGPRs alone: 8 waves per SIMD; with 8 AGPRs the unified 68 rounds to 72: 7.
        assert_eq!(occ("gfx90a", res(64, p.unified_vgprs(60, 0).unwrap(), 0)).0, 32);
        assert_eq!(occ("gfx90a", res(64, p.unified_vgprs(60, 8).unwrap(), 0)).0, 28);
        // Each kind is addressable up to 256; RDNA and NVIDIA have no AGPRs.
        assert!(matches!(p.unified_vgprs(257, 1), Err(Error::TooLarge { input: Input::Registers, .. })));
        assert!(matches!(p.unified_vgprs(8, 300), Err(Error::TooLarge { input: Input::Agprs, value: 300, .. })));
        // gfx908 (CDNA1) keeps its AGPRs in a file of their own, as large: the larger count sets the waves, from 256
        // per lane in granules of 4, with 10 wave slots per SIMD.
        let cdna1 = profile("gfx908");
        for (vgprs, agprs, counted) in [(64, 0, 64), (60, 8, 60), (61, 128, 128), (256, 256, 256)] {
            assert_eq!(cdna1.unified_vgprs(vgprs, agprs), Ok(counted), "{vgprs} + {agprs}");
        }
        assert!(matches!(cdna1.unified_vgprs(8, 300), Err(Error::TooLarge { input: Input::Agprs, value: 300, .. })));
        assert_eq!(occ("gfx908", res(64, 24, 0)), (40, Limiter::Waves));
        assert_eq!(occ("gfx908", res(64, 84, 0)), (12, Limiter::Registers));
        assert_eq!(occ("gfx908", res(64, 85, 0)), (8, Limiter::Registers));
        for name in ["gfx1100-wave32", "sm_90"] {
            assert!(matches!(profile(name).unified_vgprs(8, 8), Err(Error::Unsupported { input: Input::Agprs, .. })));
            assert_eq!(profile(name).unified_vgprs(8, 0), Ok(8));
        }
    }

    #[test]
    fn sgprs_limit_on_gfx9_only() {
        // 800 SGPRs per SIMD in granules of 16; single-wave groups, few VGPRs, so only SGPRs and waves limit.
        // (SGPRs, groups per CU, limiter)
        let cases = [
            (16, 32, Limiter::Waves),
            (80, 32, Limiter::Waves),
            (96, 32, Limiter::Waves), // 800 / 96 = 8 per SIMD: ties with the wave slots
            (97, 28, Limiter::Sgprs), // 112 allocated: 7 per SIMD
            (102, 28, Limiter::Sgprs),
            (112, 28, Limiter::Sgprs),
        ];
        for (sgprs, groups, limiter) in cases {
            let r = Resources { sgprs: Some(sgprs), ..res(64, 16, 0) };
            assert_eq!(occ("gfx90a", r), (groups, limiter), "{sgprs} SGPRs");
        }
        let o = profile("gfx90a").occupancy(&Resources { sgprs: Some(102), ..res(64, 16, 0) }).unwrap();
        assert_eq!(o.limits.sgprs, Some(28));
        // 113 is more than a wave can have; gfx11 does not share SGPRs between waves; NVIDIA has none.
        let too_many = profile("gfx90a").occupancy(&Resources { sgprs: Some(113), ..res(64, 16, 0) });
        assert!(matches!(too_many, Err(Error::TooLarge { input: Input::Sgprs, .. })), "{too_many:?}");
        let rdna = profile("gfx1100-wave32").occupancy(&Resources { sgprs: Some(106), ..res(32, 16, 0) }).unwrap();
        assert_eq!(rdna.limits.sgprs, None);
        let nvidia = profile("sm_90").occupancy(&Resources { sgprs: Some(10), ..res(32, 16, 0) });
        assert!(matches!(nvidia, Err(Error::Unsupported { input: Input::Sgprs, .. })), "{nvidia:?}");
    }

    #[test]
    fn lds_is_allocated_in_granules() {
        // (profile, LDS bytes per group, groups LDS allows): AMD rounds up to 512 bytes; NVIDIA adds the 1 KiB the
        // system reserves per block, then rounds up to 128 bytes.
        let cases = [
            ("gfx90a", 0, None),
            ("gfx90a", 1, Some(128)),
            ("gfx90a", 512, Some(128)),
            ("gfx90a", 513, Some(64)),
            ("gfx90a", 16 * 1024, Some(4)),
            ("gfx90a", 16 * 1024 + 1, Some(3)),
            ("gfx90a", 64 * 1024, Some(1)),
            ("gfx1100-wave32", 20 * 1024, Some(3)),
            ("sm_90", 0, Some(228)),              // 233472 / 1024
            ("sm_90", 1, Some(202)),              // 1025 → 1152
            ("sm_90", 48 * 1024, Some(4)),        // 50176
            ("sm_90", 227 * 1024, Some(1)),       // the opt-in maximum fills the SM with its reserve
            ("sm_80", 48 * 1024, Some(3)),        // 167936 / 50176
            ("sm_80", 163 * 1024, Some(1)),       // the opt-in maximum on sm_80
            ("sm_80", 100 * 1024, Some(1)),       // 103424: one on sm_80 ...
            ("sm_90", 100 * 1024, Some(2)),       // ... two on sm_90
            ("sm_90", 25 * 1024 - 1024, Some(9)), // 24 KiB + 1 KiB: 233472 / 25600 = 9.1
        ];
        for (name, lds, groups) in cases {
            let o = profile(name).occupancy(&res(64, 16, lds)).unwrap();
            assert_eq!(o.limits.lds, groups, "{name}, {lds} bytes");
        }
        assert_eq!(occ("gfx90a", res(256, 64, 16 * 1024)), (4, Limiter::Lds));
        // More than one group may have.
        for (name, lds) in [("gfx90a", 64 * 1024 + 1), ("sm_80", 163 * 1024 + 1), ("sm_90", 227 * 1024 + 1)] {
            let err = profile(name).occupancy(&res(64, 16, lds)).unwrap_err();
            assert_eq!(
                err,
                Error::TooLarge { profile: profile(name).name, input: Input::Lds, value: lds, limit: lds - 1 }
            );
        }
    }

    #[test]
    fn group_slot_and_barrier_limits() {
        // gfx90a, 16 VGPRs: single-wave groups are limited by the 32 wave slots only; two-wave groups by 16 both
        // ways (waves first); barriers never bind alone with 32 wave slots.
        assert_eq!(occ("gfx90a", res(64, 16, 0)), (32, Limiter::Waves));
        let two = profile("gfx90a").occupancy(&res(128, 16, 0)).unwrap();
        assert_eq!((two.groups_per_cu, two.limiter, two.limits.barriers), (16, Limiter::Waves, Some(16)));
        assert_eq!(profile("gfx90a").occupancy(&res(64, 16, 0)).unwrap().limits.barriers, None);
        // With 10 waves per SIMD (gfx9 before gfx90a), 40 slots would hold 20 two-wave groups: 16 barriers bind.
        let gfx9 = Profile { max_waves_per_simd: 10, ..*profile("gfx90a") };
        let o = gfx9.occupancy(&res(128, 16, 0)).unwrap();
        assert_eq!((o.groups_per_cu, o.limiter, o.limits.waves), (16, Limiter::Barriers, 20));
        assert_eq!(gfx9.occupancy(&res(64, 16, 0)).unwrap().groups_per_cu, 40);
        // NVIDIA: 32 block slots. One-warp blocks: 64 warp slots but 32 blocks; two-warp blocks tie.
        assert_eq!(occ("sm_90", res(32, 16, 0)), (32, Limiter::GroupSlots));
        assert_eq!(occ("sm_80", res(32, 16, 0)), (32, Limiter::GroupSlots));
        assert_eq!(occ("sm_90", res(64, 16, 0)), (32, Limiter::Waves));
        assert_eq!(profile("sm_90").occupancy(&res(256, 16, 0)).unwrap().limits.barriers, None);
    }

    #[test]
    fn partial_waves_cost_whole_ones() {
        // 48 items: 1 wave of 64, 2 warps of 32.
        let amd = profile("gfx90a").occupancy(&res(48, 16, 0)).unwrap();
        assert_eq!((amd.waves_per_group, amd.groups_per_cu, amd.limiter), (1, 32, Limiter::Waves));
        let nvidia = profile("sm_90").occupancy(&res(48, 16, 0)).unwrap();
        assert_eq!((nvidia.waves_per_group, nvidia.groups_per_cu, nvidia.limiter), (2, 32, Limiter::Waves));
        assert_eq!(nvidia.percent, 100.0);
        // 65 items: 2 waves of 64.
        let o = profile("gfx90a").occupancy(&res(65, 16, 0)).unwrap();
        assert_eq!((o.waves_per_group, o.groups_per_cu), (2, 16));
        assert_eq!(o.percent, 100.0);
    }

    #[test]
    fn gfx1100_wave32_and_wave64() {
        let gfx1100 = Arch::parse("gfx1100").unwrap();
        assert_eq!(Profile::for_arch(&gfx1100, None).unwrap().name, "gfx1100-wave32");
        assert_eq!(Profile::for_arch(&gfx1100, Some(WaveSize(64))).unwrap().name, "gfx1100-wave64");
        // 2 SIMDs × 16 waves in both modes.
        assert_eq!(profile("gfx1100-wave32").wave_slots_per_cu(), 32);
        assert_eq!(profile("gfx1100-wave64").wave_slots_per_cu(), 32);
        // (profile, items, VGPRs, groups, limiter): wave32 allocates 24 at a time from 1536, wave64 12 from 768.
        let cases = [
            ("gfx1100-wave32", 256, 96, 4, Limiter::Waves),     // 8 waves; 16 per SIMD
            ("gfx1100-wave32", 256, 97, 3, Limiter::Registers), // 120 allocated: 12 per SIMD
            ("gfx1100-wave64", 256, 48, 8, Limiter::Waves),     // 4 waves; 16 per SIMD
            ("gfx1100-wave64", 256, 49, 6, Limiter::Registers), // 60 allocated: 12 per SIMD
            ("gfx1100-wave64", 256, 97, 3, Limiter::Registers), // 108: 7 per SIMD, 14 waves
            ("gfx1100-wave32", 1024, 16, 1, Limiter::Waves),    // 32 waves fill the CU
            ("gfx1100-wave64", 1024, 16, 2, Limiter::Waves),
            ("gfx1100-wave32", 32, 16, 32, Limiter::Waves), // single-wave groups: no barrier
        ];
        for (name, items, vgprs, groups, limiter) in cases {
            assert_eq!(occ(name, res(items, vgprs, 0)), (groups, limiter), "{name} {items} items {vgprs} VGPRs");
        }
        let err = Profile::for_arch(&gfx1100, Some(WaveSize(16))).unwrap_err();
        assert_eq!(err.to_string(), "gfx1100 has no wave16 profile; wave sizes: 32, 64");
    }

    #[test]
    fn nvidia_cases_from_the_cuda_occupancy_rules() {
        let cases = [
            (256, 32, 0, 8, Limiter::Waves),     // 8 warps; 64 warp slots
            (256, 64, 0, 4, Limiter::Registers), // 2048 per warp: 8 warps per sub-partition, 32 per SM
            (256, 128, 0, 2, Limiter::Registers),
            (128, 32, 48 * 1024, 4, Limiter::Lds), // 50176 per block
            (128, 168, 0, 3, Limiter::Registers),  // 5376 per warp: 3 per sub-partition, 12 warps
            (128, 169, 0, 2, Limiter::Registers),  // 5632 per warp: 2 per sub-partition
            (96, 40, 0, 16, Limiter::Registers),   // 1280 per warp: 12 per sub-partition, 48 warps / 3
            (1024, 64, 0, 1, Limiter::Registers),  // 32 warps × 2048 = 64 K: the whole file
            (1024, 32, 0, 2, Limiter::Waves),
        ];
        for (items, regs, lds, groups, limiter) in cases {
            assert_eq!(occ("sm_90", res(items, regs, lds)), (groups, limiter), "{items} items {regs} regs {lds} B");
        }
        let o = profile("sm_90").occupancy(&res(256, 64, 0)).unwrap();
        assert_eq!((o.waves_per_cu, o.wave_slots_per_cu, o.percent), (32, 64, 50.0));
        assert_eq!(
            o.limits,
            Limits { waves: 8, registers: Some(4), sgprs: None, lds: Some(228), group_slots: Some(32), barriers: None }
        );
    }

    #[test]
    fn groups_that_cannot_fit_are_errors_that_say_by_how_much() {
        let p = profile("gfx90a");
        assert_eq!(p.occupancy(&res(0, 16, 0)), Err(Error::EmptyGroup));
        let err = p.occupancy(&res(1025, 16, 0)).unwrap_err();
        assert_eq!(err.to_string(), "1025 items per group is 1 above gfx90a's maximum of 1024");
        let err = p.occupancy(&res(64, 600, 0)).unwrap_err();
        assert_eq!(err.to_string(), "600 registers per item is 88 above gfx90a's maximum of 512");
        let err = profile("sm_90").occupancy(&res(64, 256, 0)).unwrap_err();
        assert_eq!(err.to_string(), "256 registers per item is 1 above sm_90's maximum of 255");
        // 1024 items at 129 VGPRs: 136 allocated, 3 waves per SIMD, 12 of the 16 the group needs.
        let err = p.occupancy(&res(1024, 129, 0)).unwrap_err();
        assert!(matches!(err, Error::DoesNotFit { limiter: Limiter::Registers, .. }), "{err}");
        let text = err.to_string();
        assert!(text.contains("16 waves") && text.contains("hold 12 waves, 4 too few"), "{text}");
        assert!(text.contains("at most 128 VGPRs per item"), "{text}");
        assert_eq!(p.occupancy(&res(1024, 128, 0)).unwrap().groups_per_cu, 1);
        // NVIDIA: 32 warps at 65 registers (2304 per warp) need 73728 of the 65536 a block may hold.
        let err = profile("sm_90").occupancy(&res(1024, 65, 0)).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("73728, 8192 above the 65536") && text.contains("at most 64 registers"), "{text}");
        // The hardware check rounds warps up to a multiple of 4: at 255 registers (8192 per warp) 7 warps count as
        // 8 = 65536 and fit; 9 warps count as 12 and do not.
        assert_eq!(occ("sm_90", res(224, 255, 0)), (1, Limiter::Registers));
        assert!(profile("sm_90").occupancy(&res(288, 255, 0)).is_err());
        // RDNA3 wave64 at 200 VGPRs: 3 waves per SIMD, 6 per CU, for 16-wave groups.
        let err = profile("gfx1100-wave64").occupancy(&res(1024, 200, 0)).unwrap_err();
        assert!(err.to_string().contains("at most 96 VGPRs per item"), "{err}");
    }

    #[test]
    fn profiles_are_found_by_arch_name_and_wave_size() {
        let find = |arch: &str, wave: Option<u32>| {
            Profile::for_arch(&Arch::parse(arch).unwrap(), wave.map(WaveSize)).map(|p| p.name)
        };
        assert_eq!(find("gfx90a", None), Ok("gfx90a"));
        assert_eq!(find("gfx90a:sramecc+:xnack-", Some(64)), Ok("gfx90a"));
        assert_eq!(find("gfx942", None), Ok("gfx942"));
        assert_eq!(find("sm_90a", None), Ok("sm_90"));
        assert_eq!(find("sm_80", Some(32)), Ok("sm_80"));
        assert!(matches!(find("gfx90a", Some(32)), Err(Error::NoWaveSize { wave: 32, .. })));
        // By profile name or architecture, as `suite occupancy calc --arch` takes them.
        assert_eq!(Profile::find("gfx1100-wave64", None).map(|p| p.name), Ok("gfx1100-wave64"));
        assert_eq!(Profile::find("gfx1100", Some(WaveSize(64))).map(|p| p.name), Ok("gfx1100-wave64"));
        assert_eq!(Profile::find("sm_90a", None).map(|p| p.name), Ok("sm_90"));
        assert!(matches!(Profile::find("gfx1100-wave64", Some(WaveSize(32))), Err(Error::NoWaveSize { .. })));
        assert!(matches!(Profile::find("cuda", None), Err(Error::UnknownArch { .. })));
        let err = find("gfx906", None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "no occupancy profile for `gfx906`; known: gfx90a, gfx942, gfx908, gfx1100-wave32, gfx1100-wave64, sm_80, \
             sm_90"
        );
        // Every profile is self-consistent: a largest group fits its wave slots, its LDS maximum fits the CU.
        for p in PROFILES {
            assert!(p.wave_size.waves_for(p.max_group_size) <= p.wave_slots_per_cu(), "{}", p.name);
            assert!(p.max_lds_bytes_per_group + p.lds_reserved_bytes_per_group <= p.lds_bytes_per_cu, "{}", p.name);
            assert_eq!(Profile::by_name(p.name), Some(p));
            let arch = Arch::parse(p.arch).unwrap();
            assert_eq!(arch.platform(), p.platform, "{}", p.name);
            assert_eq!(Profile::for_arch(&arch, Some(p.wave_size)), Ok(p));
        }
    }

    #[test]
    fn device_limits_replace_the_profiles() {
        // An H100's reported limits are the sm_90 profile's.
        let from_h100 = Profile::from_props(&h100()).unwrap();
        assert_eq!(&from_h100, profile("sm_90"));
        let o = theoretical(&h100(), res(256, 64, 0)).unwrap();
        assert_eq!((o.groups_per_cu, o.limiter, o.percent), (4, Limiter::Registers, 50.0));
        // A device reporting less shared memory and fewer blocks per SM: the device's numbers win.
        let small = Props { lds_bytes_per_cu: 100 * 1024, max_groups_per_cu: Some(16), ..h100() };
        assert_eq!(theoretical(&small, res(32, 16, 0)).unwrap().groups_per_cu, 16);
        assert_eq!(theoretical(&small, res(64, 16, 48 * 1024)).unwrap().groups_per_cu, 2);
        // AMD keeps the profile's register file and wave slots (HIP's attributes are not those numbers).
        let mi250x = Profile::from_props(&mi250x_gcd()).unwrap();
        assert_eq!(&mi250x, profile("gfx90a"));
        assert_eq!(theoretical(&mi250x_gcd(), res(256, 32, 16 * 1024)).unwrap().groups_per_cu, 4);
        let unknown = Props { arch: Arch::parse("sm_86").unwrap(), ..h100() };
        assert!(matches!(theoretical(&unknown, res(64, 16, 0)), Err(Error::UnknownArch { .. })));
    }

    #[test]
    fn resources_from_kernel_attributes() {
        let attrs = KernelAttrs {
            registers_per_item: 40,
            static_lds_bytes: 2048,
            scratch_bytes_per_item: 0,
            max_group_size: 256,
        };
        assert_eq!(
            Resources::from_attrs(&attrs, 128, 1024),
            Resources { group_size: 128, registers_per_item: 40, sgprs: None, lds_bytes_per_group: 3072 }
        );
    }
}
