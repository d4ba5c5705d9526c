//! A device's ceilings: its FP32 peaks and memory bandwidth, which figures are read against (% of peak, the time a
//! point will take, rooflines). The parts users run are listed with their datasheet figures and the arithmetic behind
//! them; any other device gets ceilings computed from what its runtime reports (clock, CU count, memory clock and
//! bus), and says so.
//!
//! FP32 has up to three paths, and the vendor BLAS does not always use the one the hand-written kernels use:
//! - vector: one FMA per lane per clock (2 FLOP), what a plain FP32 kernel issues on NVIDIA;
//! - packed: AMD CDNA's `v_pk_fma_f32`, two FP32 FMAs per lane per clock, which clang emits for plain code where
//!   it can pair operations (so a hand kernel on gfx90a may reach past the vector figure);
//! - matrix: AMD's MFMA FP32 instructions, which rocBLAS's SGEMM uses on gfx90a and gfx942. NVIDIA has no FP32
//!   matrix path (its tensor cores take TF32, another precision, which the suite does not use).

use serde::Serialize;

use crate::device::{Platform, Props};

/// The ceilings of one device.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ceilings {
    /// The part, e.g. `MI250X GCD (110 CUs)`, or the device name for computed ceilings.
    pub part: String,
    /// FP32 on the vector units, one FMA per lane per clock, TFLOP/s.
    pub fp32_vector_tflops: f64,
    /// FP32 with packed FMA (AMD CDNA), TFLOP/s; `None` where the part has no packed FP32.
    pub fp32_packed_tflops: Option<f64>,
    /// FP32 on the matrix units (AMD MFMA), TFLOP/s; `None` where FP32 has no matrix path.
    pub fp32_matrix_tflops: Option<f64>,
    /// Memory bandwidth, GB/s (10^9 bytes).
    pub memory_gbps: Option<f64>,
    /// What the vendor BLAS's SGEMM runs on, in words.
    pub vendor_sgemm_units: &'static str,
    /// Where the figures come from, with the arithmetic.
    pub source: String,
}

impl Ceilings {
    /// The highest FP32 rate any path of the device reaches, TFLOP/s.
    pub fn fp32_max_tflops(&self) -> f64 {
        [Some(self.fp32_vector_tflops), self.fp32_packed_tflops, self.fp32_matrix_tflops]
            .into_iter()
            .flatten()
            .fold(0.0, f64::max)
    }
}

/// A part the suite knows by its datasheet.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KnownPart {
    /// Architecture as the suite records it.
    pub arch: &'static str,
    /// Compute units (AMD CUs, NVIDIA SMs): parts of one architecture differ in it.
    pub cu_count: u32,
    /// A piece of the runtime's device name that tells parts with the same CUs apart (H100 vs H200), or "".
    pub name_contains: &'static str,
    /// The part.
    pub name: &'static str,
    /// FP32 vector TFLOP/s.
    pub fp32_vector_tflops: f64,
    /// FP32 packed TFLOP/s.
    pub fp32_packed_tflops: Option<f64>,
    /// FP32 matrix TFLOP/s.
    pub fp32_matrix_tflops: Option<f64>,
    /// Memory bandwidth, GB/s.
    pub memory_gbps: f64,
    /// Where the numbers are from.
    pub source: &'static str,
}

/// The parts the suite is run on, most specific first (an entry with `name_contains` before the one without).
pub const KNOWN_PARTS: &[KnownPart] = &[
    KnownPart {
        arch: "sm_90",
        cu_count: 132,
        name_contains: "H200",
        name: "H200 SXM (132 SMs)",
        fp32_vector_tflops: 66.9,
        fp32_packed_tflops: None,
        fp32_matrix_tflops: None,
        memory_gbps: 4800.0,
        source: "NVIDIA H200 datasheet: FP32 67 TFLOPS = 132 SMs x 128 FP32 lanes x 2 FLOP x 1.98 GHz, HBM3e 4.8 TB/s",
    },
    KnownPart {
        arch: "sm_90",
        cu_count: 132,
        name_contains: "",
        name: "H100 SXM5 (132 SMs)",
        fp32_vector_tflops: 66.9,
        fp32_packed_tflops: None,
        fp32_matrix_tflops: None,
        memory_gbps: 3350.0,
        source: "NVIDIA H100 datasheet: FP32 67 TFLOPS (SXM) = 132 SMs x 128 FP32 lanes x 2 FLOP x 1.98 GHz, HBM3 \
                 3.35 TB/s",
    },
    KnownPart {
        arch: "sm_90",
        cu_count: 114,
        name_contains: "",
        name: "H100 PCIe (114 SMs)",
        fp32_vector_tflops: 51.2,
        fp32_packed_tflops: None,
        fp32_matrix_tflops: None,
        memory_gbps: 2000.0,
        source:
            "NVIDIA H100 datasheet: FP32 51 TFLOPS (PCIe) = 114 SMs x 128 lanes x 2 FLOP x 1.755 GHz, HBM2e 2.0 TB/s",
    },
    KnownPart {
        arch: "sm_80",
        cu_count: 108,
        name_contains: "80GB",
        name: "A100 80GB (108 SMs)",
        fp32_vector_tflops: 19.5,
        fp32_packed_tflops: None,
        fp32_matrix_tflops: None,
        memory_gbps: 2039.0,
        source:
            "NVIDIA A100 datasheet: FP32 19.5 TFLOPS = 108 SMs x 64 lanes x 2 FLOP x 1.41 GHz, HBM2e 2.04 TB/s (SXM)",
    },
    KnownPart {
        arch: "sm_80",
        cu_count: 108,
        name_contains: "",
        name: "A100 40GB (108 SMs)",
        fp32_vector_tflops: 19.5,
        fp32_packed_tflops: None,
        fp32_matrix_tflops: None,
        memory_gbps: 1555.0,
        source: "NVIDIA A100 datasheet: FP32 19.5 TFLOPS = 108 SMs x 64 lanes x 2 FLOP x 1.41 GHz, HBM2 1.56 TB/s",
    },
    KnownPart {
        arch: "gfx90a",
        cu_count: 110,
        name_contains: "",
        name: "MI250X GCD (110 CUs)",
        fp32_vector_tflops: 23.9,
        fp32_packed_tflops: Some(47.9),
        fp32_matrix_tflops: Some(47.9),
        memory_gbps: 1638.4,
        source:
            "AMD Instinct MI250X data sheet, halved per GCD: FP32 vector 23.9 TFLOPS = 110 CUs x 64 lanes x 2 FLOP \
                 x 1.7 GHz; packed FP32 (v_pk_fma_f32) and FP32 matrix (MFMA) 47.9 TFLOPS; HBM2e 3.2768 TB/s per \
                 module, 1.6384 per GCD",
    },
    KnownPart {
        arch: "gfx90a",
        cu_count: 104,
        name_contains: "",
        name: "MI250 GCD (104 CUs)",
        fp32_vector_tflops: 22.6,
        fp32_packed_tflops: Some(45.3),
        fp32_matrix_tflops: Some(45.3),
        memory_gbps: 1638.4,
        source: "AMD Instinct MI250 data sheet, halved per GCD: FP32 vector 22.6 TFLOPS = 104 CUs x 64 x 2 x 1.7 GHz; \
                 packed and matrix FP32 45.3; HBM2e 1.6384 TB/s per GCD",
    },
    KnownPart {
        arch: "gfx942",
        cu_count: 304,
        name_contains: "",
        name: "MI300X (304 CUs)",
        fp32_vector_tflops: 81.7,
        fp32_packed_tflops: Some(163.4),
        fp32_matrix_tflops: Some(163.4),
        memory_gbps: 5300.0,
        source: "AMD Instinct MI300X data sheet: FP32 81.7 TFLOPS = 304 CUs x 64 x 2 FLOP x 2.1 GHz, packed and \
                 matrix FP32 163.4; HBM3 5.3 TB/s",
    },
];

/// The known part with architecture `arch`, `cu_count` CUs and a device name containing its `name_contains`.
pub fn known_part(arch: &str, cu_count: u32, device_name: &str) -> Option<&'static KnownPart> {
    KNOWN_PARTS.iter().find(|p| p.arch == arch && p.cu_count == cu_count && device_name.contains(p.name_contains))
}

/// The first known part of an architecture: what `suite kernels build` assumes for a device it cannot see.
pub fn default_part(arch: &str) -> Option<&'static KnownPart> {
    KNOWN_PARTS.iter().find(|p| p.arch == arch)
}

/// What the vendor BLAS's SGEMM runs on for an architecture.
pub fn vendor_sgemm_units(platform: Platform, arch: &str) -> &'static str {
    match platform {
        // The HIP-over-CUDA test runtime reports the CUDA architecture; its rocBLAS calls cuBLAS.
        Platform::Amd if arch.starts_with("sm_") => {
            "rocBLAS over cuBLAS (HIP over CUDA test runtime): cuBLAS SGEMM on the FP32 vector units, no TF32"
        }
        Platform::Amd if arch.starts_with("gfx90a") || arch.starts_with("gfx94") => {
            "rocBLAS SGEMM uses the FP32 matrix cores (MFMA)"
        }
        Platform::Amd => "rocBLAS SGEMM uses the vector units",
        Platform::Nvidia => "cuBLAS SGEMM uses the FP32 vector units (the suite pins CUBLAS_DEFAULT_MATH: no TF32)",
    }
}

/// FP32 lanes per CU of an architecture family, for ceilings computed from the runtime's figures.
fn fp32_lanes_per_cu(platform: Platform, arch: &str) -> u32 {
    match platform {
        // Ampere's GA100 has 64 FP32 lanes per SM; later NVIDIA parts (and the consumer Ampere parts) 128.
        Platform::Nvidia if arch == "sm_80" => 64,
        Platform::Nvidia => 128,
        // CDNA and GCN: 4 SIMD16 per CU, 64 lanes; RDNA3: 2 SIMD32 dual-issue per CU, counted as 128.
        Platform::Amd if arch.starts_with("gfx11") || arch.starts_with("gfx12") => 128,
        Platform::Amd => 64,
    }
}

/// The ceilings of a device: its known part's datasheet figures, or, for a device not in [`KNOWN_PARTS`], computed
/// from the runtime's clock and CU count (and memory clock and bus width, where reported).
pub fn ceilings(props: &Props) -> Ceilings {
    let arch = props.arch.as_str();
    let units = vendor_sgemm_units(props.platform, arch);
    if let Some(p) = known_part(arch, props.cu_count, &props.name) {
        return Ceilings {
            part: p.name.to_string(),
            fp32_vector_tflops: p.fp32_vector_tflops,
            fp32_packed_tflops: p.fp32_packed_tflops,
            fp32_matrix_tflops: p.fp32_matrix_tflops,
            memory_gbps: Some(p.memory_gbps),
            vendor_sgemm_units: units,
            source: p.source.to_string(),
        };
    }
    let lanes = fp32_lanes_per_cu(props.platform, arch);
    // A runtime that reports no clock: 1.5 GHz, a typical boost clock of the parts above, said in the source.
    let (mhz, clock_note) = match props.clock_mhz {
        Some(mhz) => (f64::from(mhz), format!("{mhz} MHz as the runtime reports")),
        None => (1500.0, "1500 MHz assumed: the runtime reports no clock".to_string()),
    };
    let vector = f64::from(props.cu_count) * f64::from(lanes) * 2.0 * mhz * 1e6 / 1e12;
    // DDR memory moves two transfers per clock on each pin of the bus.
    let memory = match (props.memory_clock_mhz, props.memory_bus_bits) {
        (Some(mhz), Some(bits)) => Some(f64::from(mhz) * 1e6 * 2.0 * f64::from(bits) / 8.0 / 1e9),
        _ => None,
    };
    Ceilings {
        part: props.name.clone(),
        fp32_vector_tflops: vector,
        fp32_packed_tflops: None,
        fp32_matrix_tflops: None,
        memory_gbps: memory,
        vendor_sgemm_units: units,
        source: format!(
            "computed, not a datasheet figure: {} CUs x {lanes} FP32 lanes x 2 FLOP x {clock_note}{}",
            props.cu_count,
            match (props.memory_clock_mhz, props.memory_bus_bits) {
                (Some(mhz), Some(bits)) => format!("; memory {mhz} MHz x 2 (DDR) x {bits} bits"),
                _ => "; memory bandwidth not reported".to_string(),
            }
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{Arch, WaveSize};

    fn props(arch: &str, name: &str, cus: u32) -> Props {
        Props {
            platform: Arch::parse(arch).unwrap().platform(),
            ordinal: 0,
            name: name.into(),
            arch: Arch::parse(arch).unwrap(),
            arch_full: arch.into(),
            wave_size: WaveSize(32),
            cu_count: cus,
            max_items_per_cu: 2048,
            max_group_size: 1024,
            max_groups_per_cu: None,
            lds_bytes_per_cu: 1 << 16,
            lds_bytes_per_group: 1 << 16,
            lds_bytes_per_group_optin: 1 << 16,
            registers_per_cu: 1 << 16,
            clock_mhz: Some(1980),
            memory_clock_mhz: Some(3201),
            memory_bus_bits: Some(6144),
            l2_bytes: None,
            memory_bytes: 1 << 30,
            runtime_version: String::new(),
            driver_version: String::new(),
        }
    }

    #[test]
    fn known_parts_are_told_apart_by_cus_and_name() {
        let h200 = ceilings(&props("sm_90", "NVIDIA H200", 132));
        assert_eq!((h200.part.as_str(), h200.memory_gbps), ("H200 SXM (132 SMs)", Some(4800.0)));
        let h100 = ceilings(&props("sm_90", "NVIDIA H100 80GB HBM3", 132));
        assert_eq!((h100.part.as_str(), h100.memory_gbps), ("H100 SXM5 (132 SMs)", Some(3350.0)));
        assert_eq!(h100.fp32_matrix_tflops, None);
        assert!(h100.vendor_sgemm_units.contains("no TF32"));
        let gcd = ceilings(&props("gfx90a", "", 110));
        assert_eq!((gcd.fp32_vector_tflops, gcd.fp32_matrix_tflops), (23.9, Some(47.9)));
        assert_eq!(gcd.fp32_max_tflops(), 47.9);
        assert!(gcd.vendor_sgemm_units.contains("MFMA"));
        assert_eq!(default_part("gfx90a").map(|p| p.cu_count), Some(110));
        assert_eq!(default_part("gfx1100"), None);
    }

    #[test]
    fn datasheet_figures_match_their_own_arithmetic() {
        // Each vector figure is CUs x lanes x 2 x clock, as its source says; the clocks are the datasheets'.
        let clocks = [("sm_90", 1.98), ("sm_80", 1.41), ("gfx90a", 1.7), ("gfx942", 2.1)];
        for p in KNOWN_PARTS.iter().filter(|p| p.name != "H100 PCIe (114 SMs)") {
            let ghz = clocks.iter().find(|(a, _)| *a == p.arch).unwrap().1;
            let lanes = if p.arch == "sm_80" || p.arch.starts_with("gfx") { 64.0 } else { 128.0 };
            let computed = f64::from(p.cu_count) * lanes * 2.0 * ghz / 1e3;
            assert!(
                (computed - p.fp32_vector_tflops).abs() < 0.1,
                "{}: {computed} vs {}",
                p.name,
                p.fp32_vector_tflops
            );
        }
    }

    #[test]
    fn an_unknown_device_gets_computed_ceilings_that_say_so() {
        // An H200 with another SM count (a hypothetical part): computed from its clock and memory bus.
        let c = ceilings(&props("sm_90", "NVIDIA H200 NVL", 120));
        assert!((c.fp32_vector_tflops - 120.0 * 128.0 * 2.0 * 1.98e-3).abs() < 1e-9);
        assert!((c.memory_gbps.unwrap() - 3201e6 * 2.0 * 6144.0 / 8.0 / 1e9).abs() < 1e-6);
        assert!(c.source.starts_with("computed, not a datasheet figure"), "{}", c.source);
        let mut p = props("gfx1100", "Radeon", 48);
        (p.clock_mhz, p.memory_clock_mhz) = (None, None);
        let c = ceilings(&p);
        assert!(c.source.contains("1500 MHz assumed") && c.source.contains("not reported"), "{}", c.source);
        assert_eq!(c.memory_gbps, None);
    }
}
