//! The architecture profiles: one row of numbers per architecture and wave size. The rules that use them live in
//! the parent module; adding an architecture is adding a row.
//!
//! Sources, cited as [tag] next to each number:
//! - [llvm] LLVM `llvm/lib/Target/AMDGPU/Utils/AMDGPUBaseInfo.cpp` (llvm-project main, 2025): getMaxWavesPerEU,
//!   getEUsPerCU, getTotalNumVGPRs, getVGPRAllocGranule, getAddressableNumVGPRs, getAddressableNumArchVGPRs,
//!   getTotalNumSGPRs, getSGPRAllocGranule, getMaxNumSGPRs, getOccupancyWithNumSGPRs, getMaxWorkGroupsPerCU,
//!   getLocalMemorySize, getAddressableLocalMemorySize, getLdsDwGranularity, getMaxFlatWorkGroupSize.
//!   Feature sets from `AMDGPU.td`: gfx90a and the gfx940 family have FeatureGFX90AInsts (unified VGPR/AGPR file),
//!   gfx908 has FeatureMAIInsts without it (AGPRs in a file of their own, AMDGPUAsmPrinter's NumVGPRsForWavesPerEU),
//!   gfx1100 has FeatureGFX11FullVGPRs (since renamed Feature1_5xVGPRs: 1.5× VGPRs and granule).
//! - [rocm] ROCm "AMD GPU specifications" (rocm.docs.amd.com, reference/gpu-specs): LDS 64 KiB and VGPR file
//!   512 KiB per CU on MI250X (gfx90a) and MI300X (gfx942), wave64.
//! - [hip] ROCm clr `hipamd/src/hip_platform.cpp`, ihipOccupancyMaxActiveBlocksPerMultiprocessor: SGPR waves =
//!   sgprs per SIMD / alignUp(sgprs, 16) on gfx9; gfx10+ does not share SGPRs between waves.
//! - [occ] NVIDIA `cuda_occupancy.h` (CUDA 13.0, covers compute capability up to 12.x): cudaOccRegAllocationGranularity,
//!   cudaOccSubPartitionsPerMultiprocessor, cudaOccMaxBlocksPerMultiprocessor, cudaOccSMemAllocationGranularity,
//!   cudaOccAlignUpShmemSizeVoltaPlus (largest shared-memory carveout), cudaOccMaxBlocksPerSMRegsLimit.
//! - [cuda] CUDA C++ Programming Guide, "Technical Specifications per Compute Capability", and the Ampere/Hopper
//!   tuning guides: 64 warps, 64 K registers and 32 blocks per SM, 64 K registers and 1024 threads per block,
//!   255 registers per thread, 163 KiB (8.0) / 227 KiB (9.0) shared memory per block with opt-in, 1 KiB of shared
//!   memory reserved by the system per block.

use crate::device::{Platform, WaveSize};

/// How a register file is divided among waves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegisterFile {
    /// AMD: each SIMD has `per_lane` 32-bit VGPRs in every lane; a wave gets `roundup(vgprs, granule)` of them in
    /// each of its lanes, so waves per SIMD = per_lane / roundup(vgprs, granule) [llvm getNumWavesPerEUWithNumVGPRs].
    PerLane {
        /// VGPRs per lane per SIMD.
        per_lane: u32,
        /// Allocation granule in VGPRs per lane.
        granule: u32,
        /// Where the AGPRs (accumulation registers of the matrix units) live, if the architecture has them.
        agprs: Agprs,
    },
    /// NVIDIA: `per_cu` 32-bit registers split evenly over the SM's sub-partitions; a warp gets
    /// `roundup(registers per thread × warp size, granule)` of its sub-partition's share [occ
    /// cudaOccMaxBlocksPerSMRegsLimit].
    PerWarp {
        /// Registers per SM.
        per_cu: u32,
        /// Allocation granule in registers per warp.
        granule: u32,
        /// Most registers one group may hold, counted as the hardware checks it: registers per warp times the
        /// group's warps rounded up to a multiple of the sub-partitions.
        per_group: u32,
    },
}

/// The AGPRs of an AMD architecture: the matrix units' accumulation registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agprs {
    /// No AGPRs (RDNA).
    None,
    /// A file of their own beside the VGPRs' (gfx908, CDNA1), as large and allocated with the same granule: a wave
    /// needs both, so the larger count sets its waves per SIMD, and that is what the metadata's `.vgpr_count` holds
    /// [llvm AMDGPUAsmPrinter: NumVGPRsForWavesPerEU = max(NumVGPR, NumAccVGPR) without FeatureGFX90AInsts].
    Separate,
    /// In the VGPR file (gfx90a, gfx942): the kernel's count is then `roundup(vgprs, 4) + agprs`, and that is what
    /// the metadata's `.vgpr_count` holds.
    Unified,
}

/// A scalar register file shared by the waves of a SIMD (AMD gfx9). From gfx10 on, SGPRs do not limit occupancy
/// [llvm getOccupancyWithNumSGPRs; hip].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SgprFile {
    /// SGPRs per SIMD.
    pub per_simd: u32,
    /// Allocation granule in SGPRs per wave.
    pub granule: u32,
}

/// What one CU (AMD compute unit, NVIDIA SM) of an architecture holds, and how it allocates it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    /// Profile name: the architecture, with the wave size where there are several (`gfx1100-wave64`).
    pub name: &'static str,
    /// The architecture as the compiler names it (`gfx1100`).
    pub arch: &'static str,
    /// Vendor.
    pub platform: Platform,
    /// Items per wave.
    pub wave_size: WaveSize,
    /// SIMDs per CU (NVIDIA: SM sub-partitions); waves are scheduled on them and registers live in them.
    pub simds_per_cu: u32,
    /// Most waves resident on one SIMD.
    pub max_waves_per_simd: u32,
    /// The vector register file.
    pub registers: RegisterFile,
    /// Most registers one item may use (AMD: VGPRs, counting AGPRs where the file is unified).
    pub max_registers_per_item: u32,
    /// The scalar register file, where it limits occupancy.
    pub sgprs: Option<SgprFile>,
    /// Most SGPRs one wave may use, special registers (VCC, FLAT_SCRATCH, XNACK_MASK) included; `None` where there
    /// are no SGPRs.
    pub max_sgprs_per_wave: Option<u32>,
    /// LDS (shared memory) per CU in bytes.
    pub lds_bytes_per_cu: u32,
    /// LDS allocation granule in bytes.
    pub lds_granule_bytes: u32,
    /// LDS the system reserves for each group, in bytes (counted before rounding to the granule).
    pub lds_reserved_bytes_per_group: u32,
    /// Most LDS one group may use, in bytes (NVIDIA: with opt-in).
    pub max_lds_bytes_per_group: u32,
    /// Most groups resident on one CU (NVIDIA block slots); `None` where only other resources limit.
    pub max_groups_per_cu: Option<u32>,
    /// Barriers per CU: each resident group of more than one wave holds one; single-wave groups need none.
    pub max_barriers_per_cu: Option<u32>,
    /// Most items in one group.
    pub max_group_size: u32,
}

/// The profiles, in lookup order: the first profile of an architecture is its default wave size. A part of the
/// catalogue of parts (`crate::catalogue`) names its architecture's profile.
pub const PROFILES: &[Profile] = &[GFX90A, GFX942, GFX908, GFX1100_WAVE32, GFX1100_WAVE64, SM_80, SM_90];

/// MI250X GCD, MI250 GCD, MI210 (CDNA2).
pub const GFX90A: Profile = Profile {
    name: "gfx90a",
    arch: "gfx90a",
    platform: Platform::Amd,
    wave_size: WaveSize(64),
    simds_per_cu: 4,       // [llvm getEUsPerCU: 4 before gfx10]
    max_waves_per_simd: 8, // [llvm getMaxWavesPerEU: 8 for FeatureGFX90AInsts, 10 for older gfx9]
    // [llvm getTotalNumVGPRs 512, getVGPRAllocGranule 8 for FeatureGFX90AInsts]; [rocm 512 KiB = 4 × 512 × 64 × 4 B]
    registers: RegisterFile::PerLane { per_lane: 512, granule: 8, agprs: Agprs::Unified },
    max_registers_per_item: 512, // [llvm getAddressableNumVGPRs: 512 for FeatureGFX90AInsts (256 arch + 256 acc)]
    // [llvm getTotalNumSGPRs 800, getSGPRAllocGranule 16 on gfx8-9, as getMaxNumSGPRs applies them]; [hip: the
    // runtime's occupancy uses the same]. LLVM's getOccupancyWithNumSGPRs table (<= 100 SGPRs: 8 waves) is looser
    // than the granule for 97..100 SGPRs (7 waves here); the granule is what the allocator and HIP use.
    sgprs: Some(SgprFile { per_simd: 800, granule: 16 }),
    max_sgprs_per_wave: Some(112), // [llvm getMaxNumSGPRs: 112 on gfx8-9 counting VCC, FLAT_SCRATCH, XNACK_MASK]
    lds_bytes_per_cu: 64 * 1024,   // [llvm FeatureLocalMemorySize65536]; [rocm]
    lds_granule_bytes: 512,        // [llvm getLdsDwGranularity: 128 dwords]
    lds_reserved_bytes_per_group: 0,
    max_lds_bytes_per_group: 64 * 1024, // [llvm getAddressableLocalMemorySize]
    max_groups_per_cu: None,            // [llvm getMaxWorkGroupsPerCU: single-wave groups are limited by waves only]
    max_barriers_per_cu: Some(16),      // [llvm getMaxWorkGroupsPerCU: MaxBarriers = 16 (32 only in gfx10+ WGP mode)]
    max_group_size: 1024,               // [llvm getMaxFlatWorkGroupSize]
};

/// MI300X / MI300A (CDNA3): the gfx940 family has FeatureGFX90AInsts, so the gfx90a rules and numbers apply
/// (llvm); 64 KiB LDS and a 512 KiB VGPR file per CU (rocm).
pub const GFX942: Profile = Profile { name: "gfx942", arch: "gfx942", ..GFX90A };

/// MI100 (CDNA1): gfx9 without FeatureGFX90AInsts, so the older gfx9 numbers: 10 waves per SIMD, a VGPR file of
/// 256 per lane allocated in granules of 4, and the AGPRs in a file of their own (llvm).
pub const GFX908: Profile = Profile {
    name: "gfx908",
    arch: "gfx908",
    max_waves_per_simd: 10, // [llvm getMaxWavesPerEU: 10 for gfx9 without FeatureGFX90AInsts]
    // [llvm getTotalNumVGPRs 256, getVGPRAllocGranule 4 without FeatureGFX90AInsts]
    registers: RegisterFile::PerLane { per_lane: 256, granule: 4, agprs: Agprs::Separate },
    max_registers_per_item: 256, // [llvm getAddressableNumVGPRs: getAddressableNumArchVGPRs, 256]
    ..GFX90A
};

/// RDNA3 (Navi31) in CU mode (`-mcumode`): a CU of 2 SIMD32s with 64 KiB of LDS. hipcc's default for gfx10+ is WGP
/// mode, where a group may span the WGP's 2 CUs (4 SIMDs, 128 KiB LDS, 32 barriers): a different profile.
const GFX1100_WAVE32: Profile = Profile {
    name: "gfx1100-wave32",
    arch: "gfx1100",
    platform: Platform::Amd,
    wave_size: WaveSize(32),
    simds_per_cu: 2,        // [llvm getEUsPerCU: 2 for gfx10+ in CU mode]
    max_waves_per_simd: 16, // [llvm getMaxWavesPerEU: 16 with FeatureGFX10_3Insts]
    // [llvm getTotalNumVGPRs 1536 / getVGPRAllocGranule 24 in wave32 with FeatureGFX11FullVGPRs (1.5× of gfx10.3)]
    registers: RegisterFile::PerLane { per_lane: 1536, granule: 24, agprs: Agprs::None },
    max_registers_per_item: 256,   // [llvm getAddressableNumArchVGPRs: 256; no AGPRs on RDNA]
    sgprs: None,                   // [llvm getOccupancyWithNumSGPRs: gfx10+ returns MaxWaves]; [hip]
    max_sgprs_per_wave: Some(108), // [llvm getMaxNumSGPRs: 108 on gfx10+ counting VCC (106 addressable)]
    lds_bytes_per_cu: 64 * 1024,   // [llvm getLocalMemorySize: 64 KiB in CU mode, doubled in WGP mode]
    lds_granule_bytes: 512,        // [llvm getLdsDwGranularity: 128 dwords]
    lds_reserved_bytes_per_group: 0,
    max_lds_bytes_per_group: 64 * 1024, // [llvm getAddressableLocalMemorySize]
    max_groups_per_cu: None,            // [llvm getMaxWorkGroupsPerCU]
    max_barriers_per_cu: Some(16),      // [llvm getMaxWorkGroupsPerCU: 16 in CU mode]
    max_group_size: 1024,               // [llvm getMaxFlatWorkGroupSize]
};

/// RDNA3 in wave64: the same CU; each VGPR now spans 64 lanes, so the file holds half as many per lane and the
/// granule halves [llvm getTotalNumVGPRs 768, getVGPRAllocGranule 12]; waves per SIMD stay 16 [llvm; hip].
const GFX1100_WAVE64: Profile = Profile {
    name: "gfx1100-wave64",
    wave_size: WaveSize(64),
    registers: RegisterFile::PerLane { per_lane: 768, granule: 12, agprs: Agprs::None },
    ..GFX1100_WAVE32
};

/// A100 (Ampere, compute capability 8.0).
pub const SM_80: Profile = Profile {
    name: "sm_80",
    arch: "sm_80",
    platform: Platform::Nvidia,
    wave_size: WaveSize(32),
    simds_per_cu: 4,        // [occ cudaOccSubPartitionsPerMultiprocessor: 4]
    max_waves_per_simd: 16, // [cuda 64 warps per SM] over 4 sub-partitions
    // [cuda 64 K registers per SM and per block]; [occ cudaOccRegAllocationGranularity: 256 per warp]
    registers: RegisterFile::PerWarp { per_cu: 65536, granule: 256, per_group: 65536 },
    max_registers_per_item: 255, // [cuda 255 registers per thread]
    sgprs: None,
    max_sgprs_per_wave: None,
    lds_bytes_per_cu: 164 * 1024, // [occ cudaOccAlignUpShmemSizeVoltaPlus: largest carveout 164 KiB on 8.0]
    lds_granule_bytes: 128,       // [occ cudaOccSMemAllocationGranularity: 128 from 8.0]
    lds_reserved_bytes_per_group: 1024, // [cuda 1 KiB per block]; [occ reservedSharedMemPerBlock, from 8.0]
    max_lds_bytes_per_group: 163 * 1024, // [cuda 163 KiB per block with opt-in on 8.0]
    max_groups_per_cu: Some(32),  // [occ cudaOccMaxBlocksPerMultiprocessor: 32 on 8.0]
    max_barriers_per_cu: None,    // named barriers are per block, not a residency limit
    max_group_size: 1024,         // [cuda 1024 threads per block]
};

/// H100 (Hopper, compute capability 9.0): as sm_80 with 228 KiB of shared memory per SM.
pub const SM_90: Profile = Profile {
    name: "sm_90",
    arch: "sm_90",
    lds_bytes_per_cu: 228 * 1024, // [occ cudaOccAlignUpShmemSizeVoltaPlus: largest carveout 228 KiB on 9.0]
    max_lds_bytes_per_group: 227 * 1024, // [cuda 227 KiB per block with opt-in on 9.0]
    max_groups_per_cu: Some(32),  // [occ cudaOccMaxBlocksPerMultiprocessor: 32 on 9.x]
    ..SM_80
};
