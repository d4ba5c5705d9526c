//! Theoretical occupancy: how many groups of a kernel fit on one CU/SM at once, and which resource binds.
//!
//! The rules are the vendors' published allocation rules, applied to the limits the runtime reports ([`Props`]):
//! - NVIDIA (sm_80/sm_90, CUDA occupancy calculator): registers are allocated per warp in units of 256 and split
//!   evenly over the SM's 4 sub-partitions; shared memory is allocated per block in units of 128 bytes plus 1 KiB
//!   the runtime reserves per block; at most 32 blocks and 64 warps per SM.
//! - AMD CDNA (gfx90a, LLVM AMDGPU docs and the design notes): VGPRs (with AGPRs, one unified file on gfx90a) are
//!   allocated per wave in granules of 8 from 512 per SIMD lane, so waves/SIMD = min(8, 512 / roundup(vgprs, 8));
//!   LDS is allocated per group in 512-byte blocks from 64 KiB; a CU holds min(32 / waves per group, 16) groups
//!   (single-wave groups are exempt from the 16).

use serde::Serialize;

use crate::device::{Platform, Props};

/// What a kernel launch asks of one CU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resources {
    /// Items per group.
    pub group_size: u32,
    /// 32-bit registers per item (AMD: VGPRs + AGPRs).
    pub registers_per_item: u32,
    /// LDS per group in bytes, static plus dynamic.
    pub lds_bytes_per_group: u32,
}

/// The resource that sets the number of resident groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Limiter {
    /// Wave slots (warps per SM, waves per CU).
    Waves,
    /// Register file.
    Registers,
    /// LDS / shared memory.
    Lds,
    /// Group slots per CU.
    GroupSlots,
}

/// Resident groups per CU and what limits them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Occupancy {
    /// Groups resident on one CU at once.
    pub groups_per_cu: u32,
    /// Waves resident on one CU at once.
    pub waves_per_cu: u32,
    /// The binding limit (the first in the order waves, registers, LDS, group slots when several tie).
    pub limiter: Limiter,
}

impl Occupancy {
    /// Resident waves over the CU's wave slots, in percent.
    pub fn percent(&self, props: &Props) -> f64 {
        let slots = props.max_items_per_cu / props.wave_size.0;
        100.0 * f64::from(self.waves_per_cu) / f64::from(slots.max(1))
    }
}

/// Computes the theoretical occupancy of `res` on the device described by `props`.
pub fn theoretical(props: &Props, res: Resources) -> Occupancy {
    let waves_per_group = props.wave_size.waves_for(res.group_size).max(1);
    let wave_slots = props.max_items_per_cu / props.wave_size.0;
    let by_waves = wave_slots / waves_per_group;
    let (by_regs, by_lds, by_slots) = match props.platform {
        Platform::Nvidia => nvidia_limits(props, res, waves_per_group),
        Platform::Amd => amd_limits(props, res, waves_per_group),
    };
    let limits = [
        (by_waves, Limiter::Waves),
        (by_regs, Limiter::Registers),
        (by_lds, Limiter::Lds),
        (by_slots, Limiter::GroupSlots),
    ];
    let (groups, limiter) =
        limits.into_iter().fold((u32::MAX, Limiter::Waves), |best, (n, why)| if n < best.0 { (n, why) } else { best });
    Occupancy { groups_per_cu: groups, waves_per_cu: groups * waves_per_group, limiter }
}

fn round_up(x: u32, granule: u32) -> u32 {
    x.div_ceil(granule) * granule
}

/// (by registers, by shared memory, by block slots) for NVIDIA sm_80/sm_90.
fn nvidia_limits(props: &Props, res: Resources, warps_per_group: u32) -> (u32, u32, u32) {
    const REG_GRANULE_PER_WARP: u32 = 256;
    const SUB_PARTITIONS: u32 = 4;
    const SMEM_GRANULE: u32 = 128;
    const SMEM_RESERVED_PER_BLOCK: u32 = 1024;
    let by_regs = if res.registers_per_item == 0 {
        u32::MAX
    } else {
        let regs_per_warp = round_up(res.registers_per_item * props.wave_size.0, REG_GRANULE_PER_WARP);
        let warps_per_partition = (props.registers_per_cu / SUB_PARTITIONS) / regs_per_warp;
        (warps_per_partition * SUB_PARTITIONS) / warps_per_group
    };
    let smem = round_up(res.lds_bytes_per_group + SMEM_RESERVED_PER_BLOCK, SMEM_GRANULE);
    let by_lds = (props.lds_bytes_per_cu as u32) / smem;
    (by_regs, by_lds, props.max_groups_per_cu.unwrap_or(32))
}

/// (by VGPRs, by LDS, by group slots) for AMD CDNA.
fn amd_limits(props: &Props, res: Resources, waves_per_group: u32) -> (u32, u32, u32) {
    const SIMDS_PER_CU: u32 = 4;
    const VGPRS_PER_LANE: u32 = 512;
    const VGPR_GRANULE: u32 = 8;
    const MAX_WAVES_PER_SIMD: u32 = 8;
    const LDS_GRANULE: u32 = 512;
    let by_regs = if res.registers_per_item == 0 {
        u32::MAX
    } else {
        let per_simd = (VGPRS_PER_LANE / round_up(res.registers_per_item, VGPR_GRANULE)).min(MAX_WAVES_PER_SIMD);
        (per_simd * SIMDS_PER_CU) / waves_per_group
    };
    let by_lds = if res.lds_bytes_per_group == 0 {
        u32::MAX
    } else {
        (props.lds_bytes_per_cu as u32) / round_up(res.lds_bytes_per_group, LDS_GRANULE)
    };
    let slots = props.max_items_per_cu / props.wave_size.0 / waves_per_group;
    let by_slots = if waves_per_group == 1 { slots } else { slots.min(16) };
    (by_regs, by_lds, by_slots)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::device::{Arch, WaveSize};

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
        }
    }

    fn mi250x_gcd() -> Props {
        Props {
            platform: Platform::Amd,
            arch: Arch::parse("gfx90a").unwrap(),
            wave_size: WaveSize(64),
            cu_count: 110,
            max_items_per_cu: 2048,
            max_groups_per_cu: None,
            lds_bytes_per_cu: 65536,
            lds_bytes_per_group: 65536,
            lds_bytes_per_group_optin: 65536,
            registers_per_cu: 131072,
            ..h100()
        }
    }

    fn occ(props: &Props, group_size: u32, regs: u32, lds: u32) -> (u32, Limiter) {
        let o = theoretical(props, Resources { group_size, registers_per_item: regs, lds_bytes_per_group: lds });
        (o.groups_per_cu, o.limiter)
    }

    #[test]
    fn nvidia_cases_from_the_cuda_occupancy_rules() {
        let p = h100();
        // 256 threads = 8 warps; 64 warp slots → 8 blocks.
        assert_eq!(occ(&p, 256, 32, 0), (8, Limiter::Waves));
        // 64 regs: 2048 per warp, 8 warps per sub-partition, 32 per SM → 4 blocks of 8 warps.
        assert_eq!(occ(&p, 256, 64, 0), (4, Limiter::Registers));
        // 128 regs → 16 warps per SM → 2 blocks.
        assert_eq!(occ(&p, 256, 128, 0), (2, Limiter::Registers));
        // 48 KiB + 1 KiB reserved per block: 233472 / 50176 = 4 blocks.
        assert_eq!(occ(&p, 128, 32, 48 * 1024), (4, Limiter::Lds));
        // 32-thread blocks: 64 warp slots but only 32 block slots.
        assert_eq!(occ(&p, 32, 16, 0), (32, Limiter::GroupSlots));
        // A partial warp costs a whole one: 48 threads = 2 warps → 32 blocks by warps, 32 by slots.
        assert_eq!(occ(&p, 48, 16, 0).0, 32);
    }

    #[test]
    fn amd_vgpr_table_and_group_slots() {
        let p = mi250x_gcd();
        // Single-wave groups: waves/SIMD from the VGPR table × 4 SIMDs.
        for (vgprs, waves_per_simd) in [(64, 8), (72, 7), (80, 6), (96, 5), (128, 4), (168, 3), (256, 2), (512, 1)] {
            assert_eq!(occ(&p, 64, vgprs, 0).0, waves_per_simd * 4, "{vgprs} VGPRs");
        }
        // 256 items = 4 waves: 32 wave slots → 8 groups; with ≤64 VGPRs nothing else binds.
        assert_eq!(occ(&p, 256, 64, 0), (8, Limiter::Waves));
        // 128 items = 2 waves: 16 by waves, capped at 16 group slots (waves win the tie, listed first).
        assert_eq!(occ(&p, 128, 32, 0), (16, Limiter::Waves));
        // LDS: 16 KiB per group → 4 groups.
        assert_eq!(occ(&p, 256, 32, 16 * 1024), (4, Limiter::Lds));
        // LDS is allocated in 512-byte blocks: 100 bytes costs 512 → 128 by LDS, 8 by waves.
        assert_eq!(occ(&p, 256, 32, 100).0, 8);
    }

    #[test]
    fn percent_counts_wave_slots() {
        let p = h100();
        let o = theoretical(&p, Resources { group_size: 256, registers_per_item: 64, lds_bytes_per_group: 0 });
        assert_eq!(o.percent(&p), 50.0);
    }
}
