//! The table of parts: one entry per part, the one place to add a GPU. Each figure carries its source, cited as
//! [tag] beside it; a peak's `source` string says the data sheet and the arithmetic (CUs x FLOP per clock per CU x
//! the boost clock), which the catalogue's tests check.
//!
//! Sources:
//! - [ds] the vendors' data sheets and product pages: AMD Instinct MI100, MI210, MI250, MI250X, MI300A and MI300X
//!   (amd.com/en/products/accelerators/instinct/, "Specifications"; the MI100, MI210 and MI250 figures as AnandTech
//!   reproduces AMD's in its MI210 launch table, anandtech.com/show/17326; the MI300A's as AMD's data sheet lists
//!   them, reproduced at vengineer.hatenablog.com/entry/2023/12/11/080000: 228 CUs, 2100 MHz, FP32 122.6, FP64 61.3,
//!   FP32 and FP64 matrix 122.6 TFLOPS); NVIDIA H100 (SXM5 and PCIe), H200 and A100 (nvidia.com data sheets);
//! - [wp] the architecture whitepapers: AMD CDNA (MI100: 8 MB L2, 4096-bit HBM2 at 2.4 Gb/s per pin), CDNA2
//!   (MI200: 8 MB L2 per GCD, 4 HBM2e stacks per GCD) and CDNA3 (MI300: 4 MB L2 per XCD in front of a 256 MB
//!   Infinity Cache); NVIDIA A100 (GA100: 40 MB L2, 5120-bit HBM bus) and H100 (GH100: 50 MB L2, 5120-bit HBM3 bus);
//! - [rocm] ROCm's peak tables ("Peak-performance capabilities" of the MI250 OAM and of the MI300X: FP64 vector 128
//!   and matrix 256 FLOP per clock per CU on CDNA2/3);
//! - [rt] what the runtime reports on such a part, as read by `suite info` on an H100 SXM (the occupancy and roofline
//!   tests' H100) and as `device/amd/mod.rs` reads HIP's attributes (no groups-per-CU limit; HIP's 65536 registers
//!   per CU, which is not the VGPR file: the occupancy profile holds that).
//!
//! FP64 per architecture: NVIDIA's FP64 lanes are half of FP32's on GA100 and GH100 and their FP64 tensor cores
//! twice that; CDNA2 and CDNA3 issue an FP64 FMA at FP32's rate (one per lane per clock) and their FP64 MFMA at
//! twice it; CDNA1 (MI100) issues FP64 at half the FP32 rate and has no FP64 MFMA (its FP64 GEMM runs on the vector
//! units).

use super::Part;
use crate::occupancy_calculator::{GFX908, GFX90A, GFX942, SM_80, SM_90};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// The part planned for when none is named: LUMI's MI250X GCD, the suite's primary target.
pub const DEFAULT_KEY: &str = "mi250x-gcd";
/// The part planned for when none is named and the platform is NVIDIA (`--platform nvidia`): the H100 SXM, the
/// NVIDIA part of the suite's reference runs (results/) that HPC centres most often have.
pub const DEFAULT_NVIDIA_KEY: &str = "h100-sxm";

/// Every part, the default first; lookups by device take the most specific entry (`name_contains`), so the order
/// is the command line's.
pub const PARTS: &[Part] = &[
    // One GCD of LUMI's MI250X (CDNA2): what `suite run` sees on a LUMI-G node, one process per GCD.
    Part {
        key: "mi250x-gcd",
        name: "MI250X GCD (110 CUs)",
        name_contains: "",
        device_name: "AMD Instinct MI250X",
        arch_full: "gfx90a:sramecc+:xnack-", // [rt] as HIP's gcnArchName reads on LUMI (design.md)
        profile: &GFX90A,
        cu_count: 110,   // [ds] 220 CUs per module, two GCDs
        clock_mhz: 1700, // [ds] peak engine clock
        fp32_vector_tflops: 23.9,
        fp32_packed_tflops: Some(47.9),
        fp32_matrix_tflops: Some(47.9),
        fp64_vector_tflops: 23.9,
        fp64_matrix_tflops: Some(47.9),
        memory_gbps: 1638.4,
        source:
            "AMD Instinct MI250X data sheet, halved per GCD: FP32 vector 23.9 TFLOPS = 110 CUs x 64 lanes x 2 FLOP \
                 x 1.7 GHz; packed FP32 (v_pk_fma_f32) and FP32 matrix (MFMA) 47.9 TFLOPS; FP64 vector 23.9 (128 \
                 FLOP per clock per CU) and FP64 matrix 47.9 (256, v_mfma_f64_16x16x4f64); HBM2e 3.2768 TB/s per \
                 module, 1.6384 per GCD",
        lds_bytes_per_group: 64 * KIB, // [rt] AMD has no opt-in: the same 64 KiB
        registers_per_cu: 65536,       // [rt]
        memory_clock_mhz: 1600,        // [ds] HBM2e at 3.2 Gb/s per pin
        memory_bus_bits: 4096,         // [ds, wp] the module's 8192 bits, 4 of its 8 stacks per GCD
        l2_bytes: 8 * MIB,             // [wp] per GCD
        memory_bytes: 64 * GIB,        // [ds] 128 GB HBM2e per module, half per GCD
    },
    // One GCD of an MI250 (CDNA2): the MI250X's GCD with 104 CUs.
    Part {
        key: "mi250-gcd",
        name: "MI250 GCD (104 CUs)",
        name_contains: "",
        device_name: "AMD Instinct MI250",
        arch_full: "gfx90a:sramecc+:xnack-", // [rt] as the MI250X's
        profile: &GFX90A,
        cu_count: 104,   // [ds] 208 CUs per module
        clock_mhz: 1700, // [ds]
        fp32_vector_tflops: 22.6,
        fp32_packed_tflops: Some(45.3),
        fp32_matrix_tflops: Some(45.3),
        fp64_vector_tflops: 22.6,
        fp64_matrix_tflops: Some(45.3),
        memory_gbps: 1638.4,
        source: "AMD Instinct MI250 data sheet, halved per GCD: FP32 vector 22.6 TFLOPS = 104 CUs x 64 x 2 x 1.7 GHz; \
                 packed and matrix FP32 45.3; FP64 vector 22.6 (ROCm docs: \"22.6 TFLOPS for vector instructions\" \
                 per GCD), FP64 matrix 45.3; HBM2e 1.6384 TB/s per GCD",
        lds_bytes_per_group: 64 * KIB, // [rt]
        registers_per_cu: 65536,       // [rt]
        memory_clock_mhz: 1600,        // [ds] as the MI250X
        memory_bus_bits: 4096,         // [ds, wp]
        l2_bytes: 8 * MIB,             // [wp]
        memory_bytes: 64 * GIB,        // [ds]
    },
    // A whole MI250X module as its data sheet states it: two GCDs, which the runtime shows as two devices (a run on
    // LUMI sees `mi250x-gcd`); a plan of it is a plan of one device with both GCDs' CUs and memory.
    Part {
        key: "mi250x",
        name: "MI250X (2 GCDs, 220 CUs)",
        name_contains: "",
        device_name: "AMD Instinct MI250X",
        arch_full: "gfx90a:sramecc+:xnack-", // [rt]
        profile: &GFX90A,
        cu_count: 220,   // [ds]
        clock_mhz: 1700, // [ds]
        fp32_vector_tflops: 47.9,
        fp32_packed_tflops: Some(95.7),
        fp32_matrix_tflops: Some(95.7),
        fp64_vector_tflops: 47.9,
        fp64_matrix_tflops: Some(95.7),
        memory_gbps: 3276.8,
        source: "AMD Instinct MI250X data sheet (the module, two GCDs): FP32 vector 47.9 TFLOPS = 220 CUs x 64 lanes \
                 x 2 FLOP x 1.7 GHz; packed FP32 and FP32 matrix 95.7; FP64 vector 47.9 and FP64 matrix 95.7; HBM2e \
                 3.2768 TB/s",
        lds_bytes_per_group: 64 * KIB, // [rt]
        registers_per_cu: 65536,       // [rt]
        memory_clock_mhz: 1600,        // [ds] HBM2e at 3.2 Gb/s per pin
        memory_bus_bits: 8192,         // [ds] 8 stacks
        l2_bytes: 16 * MIB,            // [wp] 8 MB per GCD
        memory_bytes: 128 * GIB,       // [ds] 128 GB HBM2e
    },
    // MI210 (CDNA2): one MI250's GCD on a PCIe card.
    Part {
        key: "mi210",
        name: "MI210 (104 CUs)",
        name_contains: "MI210",
        device_name: "AMD Instinct MI210",
        arch_full: "gfx90a:sramecc+:xnack-", // [rt] as the MI250X's
        profile: &GFX90A,
        cu_count: 104,   // [ds]
        clock_mhz: 1700, // [ds] peak engine clock
        fp32_vector_tflops: 22.6,
        fp32_packed_tflops: Some(45.3),
        fp32_matrix_tflops: Some(45.3),
        fp64_vector_tflops: 22.6,
        fp64_matrix_tflops: Some(45.3),
        memory_gbps: 1638.4,
        source: "AMD Instinct MI210 data sheet: FP32 vector 22.6 TFLOPS = 104 CUs x 64 lanes x 2 FLOP x 1.7 GHz; \
                 packed FP32 and FP32 matrix 45.3; FP64 vector 22.6 and FP64 matrix 45.3; HBM2e 1.6384 TB/s",
        lds_bytes_per_group: 64 * KIB, // [rt]
        registers_per_cu: 65536,       // [rt]
        memory_clock_mhz: 1600,        // [ds] HBM2e at 3.2 Gb/s per pin
        memory_bus_bits: 4096,         // [ds] 4 stacks
        l2_bytes: 8 * MIB,             // [wp] one GCD's
        memory_bytes: 64 * GIB,        // [ds] 64 GB HBM2e
    },
    // MI100 (CDNA1, gfx908): FP64 at half the FP32 rate, no packed FP32, no FP64 MFMA.
    Part {
        key: "mi100",
        name: "MI100 (120 CUs)",
        name_contains: "",
        device_name: "AMD Instinct MI100",
        arch_full: "gfx908:sramecc+:xnack-", // [rt] HIP's gcnArchName in the default mode
        profile: &GFX908,
        cu_count: 120,   // [ds]
        clock_mhz: 1502, // [ds] peak engine clock
        fp32_vector_tflops: 23.1,
        fp32_packed_tflops: None,
        fp32_matrix_tflops: Some(46.1),
        fp64_vector_tflops: 11.5,
        fp64_matrix_tflops: None,
        memory_gbps: 1228.8,
        source: "AMD Instinct MI100 data sheet: FP32 vector 23.1 TFLOPS = 120 CUs x 64 lanes x 2 FLOP x 1.502 GHz; \
                 FP32 matrix (MFMA) 46.1 (256 FLOP per clock per CU); FP64 vector 11.5 = 120 x 32 FP64 FMA per clock \
                 x 2 x 1.502 GHz, half the FP32 rate on CDNA1; no packed FP32 and no FP64 MFMA on gfx908 (the sheet's \
                 FP64 matrix figure is the vector 11.5); HBM2 1.2288 TB/s",
        lds_bytes_per_group: 64 * KIB, // [rt]
        registers_per_cu: 65536,       // [rt]
        memory_clock_mhz: 1200,        // [ds] HBM2 at 2.4 Gb/s per pin
        memory_bus_bits: 4096,         // [ds] 4 stacks
        l2_bytes: 8 * MIB,             // [wp]
        memory_bytes: 32 * GIB,        // [ds] 32 GB HBM2
    },
    // MI300X (CDNA3, gfx942): the gfx90a rules and figures per CU, 304 CUs over 8 XCDs.
    Part {
        key: "mi300x",
        name: "MI300X (304 CUs)",
        name_contains: "",
        device_name: "AMD Instinct MI300X",
        arch_full: "gfx942:sramecc+:xnack-", // [rt] the MI300X's default mode, as the MI250X's
        profile: &GFX942,
        cu_count: 304,   // [ds]
        clock_mhz: 2100, // [ds] peak engine clock
        fp32_vector_tflops: 81.7,
        fp32_packed_tflops: Some(163.4),
        fp32_matrix_tflops: Some(163.4),
        fp64_vector_tflops: 81.7,
        fp64_matrix_tflops: Some(163.4),
        memory_gbps: 5300.0,
        source: "AMD Instinct MI300X data sheet: its \"FP32 vector\" 163.4 TFLOPS is the packed rate (v_pk_fma_f32: \
                 304 CUs x 256 FLOP per clock x 2.1 GHz), listed here as packed FP32, beside FP32 matrix (MFMA) 163.4; \
                 the vector figure here, one FMA per lane per clock, 81.7 = 304 x 64 lanes x 2 FLOP x 2.1 GHz, is \
                 computed, not stated on the sheet; FP64 vector 81.7 and matrix 163.4 (ROCm docs: 128 and 256 FLOP per \
                 clock per CU); HBM3 5.3 TB/s",
        lds_bytes_per_group: 64 * KIB, // [rt]
        registers_per_cu: 65536,       // [rt]
        // [ds] HBM3 at 5.2 Gb/s per pin on 8 stacks of 1024 bits: 5.3 TB/s; the clock is half the data rate, as
        // `peaks` counts it (HIP may report another figure for HBM3).
        memory_clock_mhz: 2600,
        memory_bus_bits: 8192,
        l2_bytes: 4 * MIB, // [wp] per XCD, what each CU sees; the Infinity Cache behind it is not an L2
        memory_bytes: 192 * GIB, // [ds] 192 GB HBM3
    },
    // MI300A (CDNA3, gfx942): the MI300X with 6 XCDs (228 CUs) and 3 CPU chiplets, sharing 128 GB of HBM3.
    Part {
        key: "mi300a",
        name: "MI300A (228 CUs)",
        name_contains: "",
        device_name: "AMD Instinct MI300A",
        arch_full: "gfx942:sramecc+:xnack-", // [rt] the default mode, as the MI300X's (HSA_XNACK=1 turns xnack on)
        profile: &GFX942,
        cu_count: 228,   // [ds]
        clock_mhz: 2100, // [ds] peak engine clock
        fp32_vector_tflops: 61.3,
        fp32_packed_tflops: Some(122.6),
        fp32_matrix_tflops: Some(122.6),
        fp64_vector_tflops: 61.3,
        fp64_matrix_tflops: Some(122.6),
        memory_gbps: 5300.0,
        source: "AMD Instinct MI300A data sheet: its \"FP32 vector\" 122.6 TFLOPS is the packed rate (v_pk_fma_f32: \
                 228 CUs x 256 FLOP per clock x 2.1 GHz), listed here as packed FP32, beside FP32 matrix (MFMA) 122.6; \
                 the vector figure here, one FMA per lane per clock, 61.3 = 228 x 64 lanes x 2 FLOP x 2.1 GHz, is \
                 computed, not stated on the sheet; FP64 vector 61.3 and matrix 122.6 (128 and 256 FLOP per clock per \
                 CU); HBM3 5.3 TB/s, shared with the CPU",
        lds_bytes_per_group: 64 * KIB, // [rt]
        registers_per_cu: 65536,       // [rt]
        memory_clock_mhz: 2600,        // [ds] HBM3 on 8 stacks, as the MI300X's: 5.3 TB/s
        memory_bus_bits: 8192,         // [ds]
        l2_bytes: 4 * MIB,             // [wp] per XCD
        memory_bytes: 128 * GIB,       // [ds] 128 GB HBM3, unified with the CPU
    },
    // H100 SXM5 (Hopper, sm_90).
    Part {
        key: "h100-sxm",
        name: "H100 SXM5 (132 SMs)",
        name_contains: "",
        device_name: "NVIDIA H100 80GB HBM3",
        arch_full: "sm_90",
        profile: &SM_90,
        cu_count: 132,   // [ds]
        clock_mhz: 1980, // [ds; rt] boost clock
        fp32_vector_tflops: 66.9,
        fp32_packed_tflops: None,
        fp32_matrix_tflops: None,
        fp64_vector_tflops: 33.5,
        fp64_matrix_tflops: Some(66.9),
        memory_gbps: 3350.0,
        source: "NVIDIA H100 datasheet: FP32 67 TFLOPS (SXM) = 132 SMs x 128 FP32 lanes x 2 FLOP x 1.98 GHz; FP64 \
                 33.5 = 132 x 64 FP64 lanes x 2 x 1.98 GHz, FP64 tensor core 66.9 (256 FLOP per clock per SM); HBM3 \
                 3.35 TB/s",
        lds_bytes_per_group: 48 * KIB, // [rt 49152] without opt-in
        registers_per_cu: 65536,       // [rt]
        memory_clock_mhz: 2619,        // [rt] HBM3: 2619 MHz x 2 x 5120 bits = 3.35 TB/s [ds]
        memory_bus_bits: 5120,         // [wp; rt]
        l2_bytes: 50 * MIB,            // [wp; rt]
        memory_bytes: 80 * GIB,        // [ds] 80 GB HBM3
    },
    // H100 PCIe (sm_90): 114 SMs at a lower clock, on HBM2e.
    Part {
        key: "h100-pcie",
        name: "H100 PCIe (114 SMs)",
        name_contains: "",
        device_name: "NVIDIA H100 PCIe",
        arch_full: "sm_90",
        profile: &SM_90,
        cu_count: 114,   // [ds]
        clock_mhz: 1755, // [ds] boost clock
        fp32_vector_tflops: 51.2,
        fp32_packed_tflops: None,
        fp32_matrix_tflops: None,
        fp64_vector_tflops: 25.6,
        fp64_matrix_tflops: Some(51.2),
        memory_gbps: 2000.0,
        source: "NVIDIA H100 datasheet: FP32 51 TFLOPS (PCIe) = 114 SMs x 128 lanes x 2 FLOP x 1.755 GHz; FP64 26 = \
                 114 x 64 x 2 x 1.755 GHz (25.6), FP64 tensor core 51 (51.2); HBM2e 2.0 TB/s",
        lds_bytes_per_group: 48 * KIB, // [rt] as the SXM5's
        registers_per_cu: 65536,       // [rt]
        memory_clock_mhz: 1593,        // [ds] HBM2e: 1593 MHz x 2 x 5120 bits = 2.04 TB/s (the data sheet says 2.0)
        memory_bus_bits: 5120,         // [wp]
        l2_bytes: 50 * MIB,            // [wp]
        memory_bytes: 80 * GIB,        // [ds] 80 GB HBM2e
    },
    // H200 SXM (sm_90): the H100's GH100 with 141 GB of HBM3e on a 6144-bit bus.
    Part {
        key: "h200",
        name: "H200 SXM (132 SMs)",
        name_contains: "H200",
        device_name: "NVIDIA H200",
        arch_full: "sm_90",
        profile: &SM_90,
        cu_count: 132,   // [ds]
        clock_mhz: 1980, // [ds] boost clock
        fp32_vector_tflops: 66.9,
        fp32_packed_tflops: None,
        fp32_matrix_tflops: None,
        fp64_vector_tflops: 33.5,
        fp64_matrix_tflops: Some(66.9),
        memory_gbps: 4800.0,
        source: "NVIDIA H200 datasheet: FP32 67 TFLOPS = 132 SMs x 128 FP32 lanes x 2 FLOP x 1.98 GHz; FP64 34 and \
                 FP64 tensor core 67 TFLOPS = 132 x 64 FP64 lanes x 2 x 1.98 GHz (33.5) and twice that (66.9); HBM3e \
                 4.8 TB/s",
        lds_bytes_per_group: 48 * KIB, // [rt] as the H100's
        registers_per_cu: 65536,       // [rt]
        memory_clock_mhz: 3201,        // [rt] as the peaks tests' H200 reports: 3201 MHz x 2 x 6144 bits, 4.8 TB/s [ds]
        memory_bus_bits: 6144,         // [ds] six HBM3e stacks
        l2_bytes: 50 * MIB,            // [wp] GH100's
        memory_bytes: 141 * GIB,       // [ds] 141 GB HBM3e
    },
    // A100 SXM4 80GB (Ampere, sm_80).
    Part {
        key: "a100-80gb",
        name: "A100 80GB (108 SMs)",
        name_contains: "80GB",
        device_name: "NVIDIA A100-SXM4-80GB",
        arch_full: "sm_80",
        profile: &SM_80,
        cu_count: 108,   // [ds]
        clock_mhz: 1410, // [ds] boost clock
        fp32_vector_tflops: 19.5,
        fp32_packed_tflops: None,
        fp32_matrix_tflops: None,
        fp64_vector_tflops: 9.7,
        fp64_matrix_tflops: Some(19.5),
        memory_gbps: 2039.0,
        source:
            "NVIDIA A100 datasheet: FP32 19.5 TFLOPS = 108 SMs x 64 lanes x 2 FLOP x 1.41 GHz; FP64 9.7 = 108 x 32 \
                 FP64 lanes x 2 x 1.41 GHz, FP64 tensor core 19.5; HBM2e 2.04 TB/s (SXM)",
        lds_bytes_per_group: 48 * KIB, // [rt] without opt-in
        registers_per_cu: 65536,       // [rt]
        memory_clock_mhz: 1593,        // [ds] HBM2e: 1593 MHz x 2 x 5120 bits = 2.04 TB/s
        memory_bus_bits: 5120,         // [wp]
        l2_bytes: 40 * MIB,            // [wp]
        memory_bytes: 80 * GIB,        // [ds] 80 GB HBM2e
    },
    // A100 SXM4 40GB (sm_80): HBM2 at a lower clock.
    Part {
        key: "a100-40gb",
        name: "A100 40GB (108 SMs)",
        name_contains: "",
        device_name: "NVIDIA A100-SXM4-40GB",
        arch_full: "sm_80",
        profile: &SM_80,
        cu_count: 108,   // [ds]
        clock_mhz: 1410, // [ds] boost clock
        fp32_vector_tflops: 19.5,
        fp32_packed_tflops: None,
        fp32_matrix_tflops: None,
        fp64_vector_tflops: 9.7,
        fp64_matrix_tflops: Some(19.5),
        memory_gbps: 1555.0,
        source:
            "NVIDIA A100 datasheet: FP32 19.5 TFLOPS = 108 SMs x 64 lanes x 2 FLOP x 1.41 GHz; FP64 9.7 = 108 x 32 \
                 FP64 lanes x 2 x 1.41 GHz, FP64 tensor core 19.5; HBM2 1.56 TB/s",
        lds_bytes_per_group: 48 * KIB, // [rt] without opt-in
        registers_per_cu: 65536,       // [rt]
        memory_clock_mhz: 1215,        // [ds; wp] HBM2: 1215 MHz x 2 x 5120 bits = 1.56 TB/s
        memory_bus_bits: 5120,         // [wp]
        l2_bytes: 40 * MIB,            // [wp]
        memory_bytes: 40 * GIB,        // [ds] 40 GB HBM2
    },
];
