//! A device's ceilings: its FP32 and FP64 peaks per hardware unit and its memory bandwidth, which figures are read
//! against (% of peak, the time a point will take, rooflines). The parts users run are listed with their datasheet
//! figures and the arithmetic behind them; any other device gets ceilings computed from what its runtime reports
//! (clock, CU count, memory clock and bus), and says so.
//!
//! A precision has up to three paths ([`Unit`]), and the vendor BLAS does not always use the one the hand-written
//! kernels use:
//! - vector: one FMA per lane per clock (2 FLOP), what a plain kernel issues (FP64 lanes are half or fewer of FP32's
//!   on NVIDIA; on CDNA an FP64 FMA issues at FP32's rate);
//! - packed: AMD CDNA2/3's `v_pk_fma_f32`, two FP32 FMAs per lane per clock, which clang emits for plain code where
//!   it can pair operations (so an FP32 hand kernel on gfx90a may reach past the vector figure); FP64 has none;
//! - matrix: AMD's MFMA (FP32 and FP64), which rocBLAS's SGEMM and DGEMM use on gfx90a and gfx942, and NVIDIA's FP64
//!   tensor cores (DMMA, sm_80 on), which cuBLAS's DGEMM uses. NVIDIA has no FP32 matrix path (its tensor cores take
//!   TF32, another precision, which the suite does not use).

use serde::Serialize;

use crate::device::{Platform, Props};
use crate::precision::Precision;

/// The hardware unit a kernel's arithmetic runs on (`unit` column); shares of peak are taken against that unit's
/// peak for the row's precision ([`Ceilings::peak_tflops`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// One FMA per lane per clock.
    Vector,
    /// Packed FMA (AMD CDNA2/3 `v_pk_fma_f32`: two FP32 FMAs per lane per clock).
    Packed,
    /// Matrix units: AMD MFMA, NVIDIA tensor cores.
    Matrix,
}

impl Unit {
    /// The name in CSV rows: `vector`, `packed`, `matrix`.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Vector => "vector",
            Unit::Packed => "packed",
            Unit::Matrix => "matrix",
        }
    }

    /// The unit a CSV row names, if it names one.
    pub fn parse(text: &str) -> Option<Unit> {
        [Unit::Vector, Unit::Packed, Unit::Matrix].into_iter().find(|u| u.name() == text.trim())
    }
}

impl std::fmt::Display for Unit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

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
    /// FP64 on the vector units, TFLOP/s; `None` where the suite does not know the part's FP64 rate (a device not in
    /// [`KNOWN_PARTS`]: consumer parts run FP64 at 1/2 to 1/64 of FP32, which the runtime does not report).
    pub fp64_vector_tflops: Option<f64>,
    /// FP64 on the matrix units (AMD MFMA, NVIDIA FP64 tensor cores), TFLOP/s; `None` where FP64 has no matrix path
    /// or it is not known.
    pub fp64_matrix_tflops: Option<f64>,
    /// Memory bandwidth, GB/s (10^9 bytes).
    pub memory_gbps: Option<f64>,
    /// What the vendor BLAS's SGEMM runs on, in words.
    pub vendor_sgemm_units: &'static str,
    /// What the vendor BLAS's DGEMM runs on, in words.
    pub vendor_dgemm_units: &'static str,
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

    /// The peak of `unit` in `precision`, TFLOP/s; `None` where the device has no such path (FP64 packed, NVIDIA's
    /// FP32 matrix) or its rate is not known.
    pub fn peak_tflops(&self, precision: Precision, unit: Unit) -> Option<f64> {
        match (precision, unit) {
            (Precision::F32, Unit::Vector) => Some(self.fp32_vector_tflops),
            (Precision::F32, Unit::Packed) => self.fp32_packed_tflops,
            (Precision::F32, Unit::Matrix) => self.fp32_matrix_tflops,
            (Precision::F64, Unit::Vector) => self.fp64_vector_tflops,
            (Precision::F64, Unit::Packed) => None,
            (Precision::F64, Unit::Matrix) => self.fp64_matrix_tflops,
        }
    }

    /// What the vendor BLAS's GEMM of `precision` runs on, in words.
    pub fn vendor_gemm_units(&self, precision: Precision) -> &'static str {
        match precision {
            Precision::F32 => self.vendor_sgemm_units,
            Precision::F64 => self.vendor_dgemm_units,
        }
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
    /// FP64 vector TFLOP/s.
    pub fp64_vector_tflops: f64,
    /// FP64 matrix TFLOP/s (AMD MFMA, NVIDIA FP64 tensor cores).
    pub fp64_matrix_tflops: Option<f64>,
    /// The boost clock the peaks are computed at, GHz.
    pub clock_ghz: f64,
    /// Memory bandwidth, GB/s.
    pub memory_gbps: f64,
    /// Where the numbers are from.
    pub source: &'static str,
}

/// The parts the suite is run on, most specific first (an entry with `name_contains` before the one without). Each
/// figure is the product its source states (checked by a test): CUs × FLOP per clock per CU × the boost clock. FP64
/// sources: the NVIDIA H100 whitepaper (FP64 33.5, FP64 tensor core 66.9 TFLOPS for the SXM5; 25.6 / 51.2 for the
/// PCIe card), the H200 datasheet (34 / 67, the rounded figures of the same 132 SMs at 1.98 GHz), the A100 datasheet
/// (9.7 / 19.5), and AMD's CDNA2 and CDNA3 figures (ROCm docs, "Peak-performance capabilities of the MI250 OAM" and
/// of the MI300X: FP64 vector 128 and matrix 256 FLOP per clock per CU; MI250X 47.9 / 95.7 TFLOPS per module, so 23.9
/// / 47.9 per GCD).
pub const KNOWN_PARTS: &[KnownPart] = &[
    KnownPart {
        arch: "sm_90",
        cu_count: 132,
        name_contains: "H200",
        name: "H200 SXM (132 SMs)",
        fp32_vector_tflops: 66.9,
        fp32_packed_tflops: None,
        fp32_matrix_tflops: None,
        fp64_vector_tflops: 33.5,
        fp64_matrix_tflops: Some(66.9),
        clock_ghz: 1.98,
        memory_gbps: 4800.0,
        source: "NVIDIA H200 datasheet: FP32 67 TFLOPS = 132 SMs x 128 FP32 lanes x 2 FLOP x 1.98 GHz; FP64 34 and \
                 FP64 tensor core 67 TFLOPS = 132 x 64 FP64 lanes x 2 x 1.98 GHz (33.5) and twice that (66.9); HBM3e \
                 4.8 TB/s",
    },
    KnownPart {
        arch: "sm_90",
        cu_count: 132,
        name_contains: "",
        name: "H100 SXM5 (132 SMs)",
        fp32_vector_tflops: 66.9,
        fp32_packed_tflops: None,
        fp32_matrix_tflops: None,
        fp64_vector_tflops: 33.5,
        fp64_matrix_tflops: Some(66.9),
        clock_ghz: 1.98,
        memory_gbps: 3350.0,
        source: "NVIDIA H100 datasheet: FP32 67 TFLOPS (SXM) = 132 SMs x 128 FP32 lanes x 2 FLOP x 1.98 GHz; FP64 \
                 33.5 = 132 x 64 FP64 lanes x 2 x 1.98 GHz, FP64 tensor core 66.9 (256 FLOP per clock per SM); HBM3 \
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
        fp64_vector_tflops: 25.6,
        fp64_matrix_tflops: Some(51.2),
        clock_ghz: 1.755,
        memory_gbps: 2000.0,
        source: "NVIDIA H100 datasheet: FP32 51 TFLOPS (PCIe) = 114 SMs x 128 lanes x 2 FLOP x 1.755 GHz; FP64 26 = \
                 114 x 64 x 2 x 1.755 GHz (25.6), FP64 tensor core 51 (51.2); HBM2e 2.0 TB/s",
    },
    KnownPart {
        arch: "sm_80",
        cu_count: 108,
        name_contains: "80GB",
        name: "A100 80GB (108 SMs)",
        fp32_vector_tflops: 19.5,
        fp32_packed_tflops: None,
        fp32_matrix_tflops: None,
        fp64_vector_tflops: 9.7,
        fp64_matrix_tflops: Some(19.5),
        clock_ghz: 1.41,
        memory_gbps: 2039.0,
        source:
            "NVIDIA A100 datasheet: FP32 19.5 TFLOPS = 108 SMs x 64 lanes x 2 FLOP x 1.41 GHz; FP64 9.7 = 108 x 32 \
                 FP64 lanes x 2 x 1.41 GHz, FP64 tensor core 19.5; HBM2e 2.04 TB/s (SXM)",
    },
    KnownPart {
        arch: "sm_80",
        cu_count: 108,
        name_contains: "",
        name: "A100 40GB (108 SMs)",
        fp32_vector_tflops: 19.5,
        fp32_packed_tflops: None,
        fp32_matrix_tflops: None,
        fp64_vector_tflops: 9.7,
        fp64_matrix_tflops: Some(19.5),
        clock_ghz: 1.41,
        memory_gbps: 1555.0,
        source:
            "NVIDIA A100 datasheet: FP32 19.5 TFLOPS = 108 SMs x 64 lanes x 2 FLOP x 1.41 GHz; FP64 9.7 = 108 x 32 \
                 FP64 lanes x 2 x 1.41 GHz, FP64 tensor core 19.5; HBM2 1.56 TB/s",
    },
    KnownPart {
        arch: "gfx90a",
        cu_count: 110,
        name_contains: "",
        name: "MI250X GCD (110 CUs)",
        fp32_vector_tflops: 23.9,
        fp32_packed_tflops: Some(47.9),
        fp32_matrix_tflops: Some(47.9),
        fp64_vector_tflops: 23.9,
        fp64_matrix_tflops: Some(47.9),
        clock_ghz: 1.7,
        memory_gbps: 1638.4,
        source:
            "AMD Instinct MI250X data sheet, halved per GCD: FP32 vector 23.9 TFLOPS = 110 CUs x 64 lanes x 2 FLOP \
                 x 1.7 GHz; packed FP32 (v_pk_fma_f32) and FP32 matrix (MFMA) 47.9 TFLOPS; FP64 vector 23.9 (128 \
                 FLOP per clock per CU) and FP64 matrix 47.9 (256, v_mfma_f64_16x16x4f64); HBM2e 3.2768 TB/s per \
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
        fp64_vector_tflops: 22.6,
        fp64_matrix_tflops: Some(45.3),
        clock_ghz: 1.7,
        memory_gbps: 1638.4,
        source: "AMD Instinct MI250 data sheet, halved per GCD: FP32 vector 22.6 TFLOPS = 104 CUs x 64 x 2 x 1.7 GHz; \
                 packed and matrix FP32 45.3; FP64 vector 22.6 (ROCm docs: \"22.6 TFLOPS for vector instructions\" \
                 per GCD), FP64 matrix 45.3; HBM2e 1.6384 TB/s per GCD",
    },
    KnownPart {
        arch: "gfx942",
        cu_count: 304,
        name_contains: "",
        name: "MI300X (304 CUs)",
        fp32_vector_tflops: 81.7,
        fp32_packed_tflops: Some(163.4),
        fp32_matrix_tflops: Some(163.4),
        fp64_vector_tflops: 81.7,
        fp64_matrix_tflops: Some(163.4),
        clock_ghz: 2.1,
        memory_gbps: 5300.0,
        source: "AMD Instinct MI300X data sheet: FP32 81.7 TFLOPS = 304 CUs x 64 x 2 FLOP x 2.1 GHz, packed and \
                 matrix FP32 163.4; FP64 vector 81.7 and matrix 163.4 (ROCm docs: 128 and 256 FLOP per clock per CU); \
                 HBM3 5.3 TB/s",
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

/// What the vendor BLAS's DGEMM runs on for an architecture.
pub fn vendor_dgemm_units(platform: Platform, arch: &str) -> &'static str {
    match vendor_gemm_unit(platform, arch, Precision::F64) {
        Unit::Matrix if platform == Platform::Amd && arch.starts_with("sm_") => {
            "rocBLAS over cuBLAS (HIP over CUDA test runtime): cuBLAS DGEMM on the FP64 tensor cores (DMMA)"
        }
        Unit::Matrix if platform == Platform::Amd => "rocBLAS DGEMM uses the FP64 matrix cores (MFMA)",
        Unit::Matrix => "cuBLAS DGEMM uses the FP64 tensor cores (DMMA)",
        _ if platform == Platform::Amd => "rocBLAS DGEMM uses the FP64 vector units",
        _ => "cuBLAS DGEMM uses the FP64 vector units (no FP64 tensor cores before sm_80)",
    }
}

/// What the vendor BLAS's GEMM of `precision` runs on, in words.
pub fn vendor_gemm_units(platform: Platform, arch: &str, precision: Precision) -> &'static str {
    match precision {
        Precision::F32 => vendor_sgemm_units(platform, arch),
        Precision::F64 => vendor_dgemm_units(platform, arch),
    }
}

/// The unit the vendor BLAS's GEMM of `precision` runs on: rocBLAS uses MFMA on CDNA2/3 (gfx90a, gfx94x, gfx95x) in
/// both precisions (gfx908's MFMA has no FP64); cuBLAS's DGEMM uses the FP64 tensor cores from sm_80 on, and its
/// SGEMM the vector units (the suite pins plain FP32 math: no TF32). The HIP-over-CUDA test runtime reports the CUDA
/// architecture, and its rocBLAS is cuBLAS.
pub fn vendor_gemm_unit(platform: Platform, arch: &str, precision: Precision) -> Unit {
    let cdna_matrix = ["gfx90a", "gfx94", "gfx95"].iter().any(|p| arch.starts_with(p));
    match (precision, arch.strip_prefix("sm_")) {
        (Precision::F32, Some(_)) => Unit::Vector,
        (Precision::F64, Some(sm)) => {
            // sm_80, sm_86, sm_90a, sm_100: the number is the compute capability, major·10 + minor.
            let cc: u32 = sm.chars().take_while(char::is_ascii_digit).collect::<String>().parse().unwrap_or(0);
            if cc >= 80 {
                Unit::Matrix
            } else {
                Unit::Vector
            }
        }
        _ if platform == Platform::Amd && cdna_matrix => Unit::Matrix,
        _ => Unit::Vector,
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
    let dgemm_units = vendor_dgemm_units(props.platform, arch);
    if let Some(p) = known_part(arch, props.cu_count, &props.name) {
        return Ceilings {
            part: p.name.to_string(),
            fp32_vector_tflops: p.fp32_vector_tflops,
            fp32_packed_tflops: p.fp32_packed_tflops,
            fp32_matrix_tflops: p.fp32_matrix_tflops,
            fp64_vector_tflops: Some(p.fp64_vector_tflops),
            fp64_matrix_tflops: p.fp64_matrix_tflops,
            memory_gbps: Some(p.memory_gbps),
            vendor_sgemm_units: units,
            vendor_dgemm_units: dgemm_units,
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
        fp64_vector_tflops: None,
        fp64_matrix_tflops: None,
        memory_gbps: memory,
        vendor_sgemm_units: units,
        vendor_dgemm_units: dgemm_units,
        source: format!(
            "computed, not a datasheet figure: {} CUs x {lanes} FP32 lanes x 2 FLOP x {clock_note}; FP64 rate not \
             known for this part{}",
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
            test_runtime: false,
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
        // FLOP per clock per CU of each path, per architecture: FP32 vector (2 x FP32 lanes), FP32 packed and
        // matrix, FP64 vector (2 x FP64 lanes), FP64 matrix. Sources: the NVIDIA whitepapers (GA100: 64 FP32 and
        // 32 FP64 lanes per SM, FP64 tensor cores 2x the FP64 rate; GH100: 128 and 64, tensor 2x), AMD's CDNA2/3
        // tables (vector FP32 and FP64 128, packed FP32 and matrix FP32 and FP64 256).
        let per_clock = [
            ("sm_90", [256.0, 0.0, 128.0, 256.0]),
            ("sm_80", [128.0, 0.0, 64.0, 128.0]),
            ("gfx90a", [128.0, 256.0, 128.0, 256.0]),
            ("gfx942", [128.0, 256.0, 128.0, 256.0]),
        ];
        for p in KNOWN_PARTS {
            let [fp32, fp32_matrix, fp64, fp64_matrix] = per_clock.iter().find(|(a, _)| *a == p.arch).unwrap().1;
            let tflops = |flop_per_clock: f64| f64::from(p.cu_count) * flop_per_clock * p.clock_ghz / 1e3;
            let close = |want: f64, got: f64, what: &str| {
                assert!((want - got).abs() < 0.1, "{} {what}: computed {want:.2}, listed {got}", p.name);
            };
            close(tflops(fp32), p.fp32_vector_tflops, "FP32 vector");
            close(tflops(fp64), p.fp64_vector_tflops, "FP64 vector");
            close(tflops(fp64_matrix), p.fp64_matrix_tflops.unwrap(), "FP64 matrix");
            if fp32_matrix > 0.0 {
                close(tflops(fp32_matrix), p.fp32_matrix_tflops.unwrap(), "FP32 matrix");
                close(tflops(fp32_matrix), p.fp32_packed_tflops.unwrap(), "FP32 packed");
            } else {
                assert_eq!((p.fp32_matrix_tflops, p.fp32_packed_tflops), (None, None), "{}", p.name);
            }
        }
        // The figures, as listed: MI250X GCD 23.9 / 47.9, MI300X 81.7 / 163.4, H100 SXM 33.5 / 66.9, A100
        // 9.7 / 19.5 (FP64 vector / matrix).
        let fp64 = |name: &str| {
            let p = KNOWN_PARTS.iter().find(|p| p.name.starts_with(name)).unwrap();
            (p.fp64_vector_tflops, p.fp64_matrix_tflops.unwrap())
        };
        assert_eq!(fp64("MI250X GCD"), (23.9, 47.9));
        assert_eq!(fp64("MI300X"), (81.7, 163.4));
        assert_eq!(fp64("H100 SXM5"), (33.5, 66.9));
        assert_eq!(fp64("H200"), (33.5, 66.9));
        assert_eq!(fp64("A100 80GB"), (9.7, 19.5));
    }

    #[test]
    fn each_unit_has_its_own_peak_and_the_vendor_gemm_its_unit() {
        let h100 = ceilings(&props("sm_90", "NVIDIA H100 80GB HBM3", 132));
        assert_eq!(h100.peak_tflops(Precision::F32, Unit::Vector), Some(66.9));
        assert_eq!(h100.peak_tflops(Precision::F32, Unit::Matrix), None);
        assert_eq!(h100.peak_tflops(Precision::F64, Unit::Vector), Some(33.5));
        assert_eq!(h100.peak_tflops(Precision::F64, Unit::Matrix), Some(66.9));
        assert_eq!(h100.peak_tflops(Precision::F64, Unit::Packed), None);
        let gcd = ceilings(&props("gfx90a", "", 110));
        assert_eq!(gcd.peak_tflops(Precision::F32, Unit::Packed), Some(47.9));
        assert_eq!(gcd.peak_tflops(Precision::F64, Unit::Matrix), Some(47.9));
        let (amd, nv) = (Platform::Amd, Platform::Nvidia);
        for (platform, arch, precision, unit) in [
            (nv, "sm_90", Precision::F64, Unit::Matrix),
            (nv, "sm_80", Precision::F64, Unit::Matrix),
            (nv, "sm_100", Precision::F64, Unit::Matrix),
            (nv, "sm_70", Precision::F64, Unit::Vector),
            (nv, "sm_90", Precision::F32, Unit::Vector),
            (amd, "gfx90a", Precision::F32, Unit::Matrix),
            (amd, "gfx90a", Precision::F64, Unit::Matrix),
            (amd, "gfx942", Precision::F64, Unit::Matrix),
            (amd, "gfx908", Precision::F64, Unit::Vector),
            (amd, "gfx1100", Precision::F32, Unit::Vector),
            (amd, "sm_90", Precision::F64, Unit::Matrix),
        ] {
            assert_eq!(vendor_gemm_unit(platform, arch, precision), unit, "{platform} {arch} {precision}");
        }
        assert!(h100.vendor_gemm_units(Precision::F64).contains("DMMA"));
        assert!(gcd.vendor_gemm_units(Precision::F64).contains("MFMA"));
        assert!(vendor_dgemm_units(amd, "sm_90").contains("over cuBLAS"));
        for (text, want) in [("f32", Ok(Precision::F32)), ("FP64", Ok(Precision::F64)), ("f16", Err(()))] {
            assert_eq!(Precision::parse(text).map_err(|_| ()), want, "{text}");
        }
        let old_row = std::collections::BTreeMap::new();
        assert_eq!(Precision::of_row(&old_row), Precision::F32);
        assert_eq!(Unit::parse("packed"), Some(Unit::Packed));
    }

    #[test]
    fn an_unknown_device_gets_computed_ceilings_that_say_so() {
        // An H200 with another SM count (a hypothetical part): computed from its clock and memory bus.
        let c = ceilings(&props("sm_90", "NVIDIA H200 NVL", 120));
        assert!((c.fp32_vector_tflops - 120.0 * 128.0 * 2.0 * 1.98e-3).abs() < 1e-9);
        assert!((c.memory_gbps.unwrap() - 3201e6 * 2.0 * 6144.0 / 8.0 / 1e9).abs() < 1e-6);
        assert!(c.source.starts_with("computed, not a datasheet figure"), "{}", c.source);
        assert_eq!(c.peak_tflops(Precision::F64, Unit::Vector), None, "an unknown part's FP64 rate is not guessed");
        let mut p = props("gfx1100", "Radeon", 48);
        (p.clock_mhz, p.memory_clock_mhz) = (None, None);
        let c = ceilings(&p);
        assert!(c.source.contains("1500 MHz assumed") && c.source.contains("not reported"), "{}", c.source);
        assert_eq!(c.memory_gbps, None);
    }
}
