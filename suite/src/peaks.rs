//! A device's ceilings: its FP32 and FP64 peaks per hardware unit and its memory bandwidth, which figures are read
//! against (% of peak, the time a point will take, rooflines). The parts users run are in the catalogue of parts
//! ([`crate::catalogue`]) with their datasheet figures and the arithmetic behind them; any other device gets ceilings
//! computed from what its runtime reports (clock, CU count, memory clock and bus), and says so.
//!
//! A precision has up to three paths ([`Unit`]), and the vendor BLAS does not always use the one the hand-written
//! kernels use:
//! - vector: one FMA per lane per clock (2 FLOP), what a plain kernel issues (FP64 lanes are half or fewer of FP32's
//!   on NVIDIA; on CDNA2 and CDNA3 an FP64 FMA issues at FP32's rate, on CDNA1, the MI100, at half of it);
//! - packed: AMD CDNA2/3's `v_pk_fma_f32`, two FP32 FMAs per lane per clock, which clang emits for plain code where
//!   it can pair operations (so an FP32 hand kernel on gfx90a may reach past the vector figure); FP64 has none.
//!   AMD's CDNA3 data sheets state this rate as "FP32 vector" (MI300X 163.4 TFLOPS); the suite's vector figure is
//!   one FMA per lane per clock (81.7), and each part's source says which is which;
//! - matrix: AMD's MFMA (FP32 and FP64), which rocBLAS's SGEMM and DGEMM use on gfx90a and gfx942, and NVIDIA's FP64
//!   tensor cores (DMMA, sm_80 on), which cuBLAS's DGEMM uses. NVIDIA has no FP32 matrix path (its tensor cores take
//!   TF32, another precision, which the suite does not use).

use serde::Serialize;

use crate::catalogue;
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
    /// [`crate::catalogue::PARTS`]: consumer parts run FP64 at 1/2 to 1/64 of FP32, which the runtime does not report).
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

/// The ceilings of a device: its part's datasheet figures ([`crate::catalogue`]), or, for a device not in the catalogue,
/// computed from the runtime's clock and CU count (and memory clock and bus width, where reported).
pub fn ceilings(props: &Props) -> Ceilings {
    let arch = props.arch.as_str();
    let units = vendor_sgemm_units(props.platform, arch);
    let dgemm_units = vendor_dgemm_units(props.platform, arch);
    if let Some(p) = catalogue::of_device(arch, props.cu_count, &props.name) {
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
        // The catalogue's CDNA1 part: FP64 at half its FP32 rate, no packed FP32, no FP64 matrix path.
        let mi100 = ceilings(&props("gfx908", "AMD Instinct MI100", 120));
        assert_eq!(mi100.part, "MI100 (120 CUs)");
        assert_eq!(mi100.peak_tflops(Precision::F32, Unit::Vector), Some(23.1));
        assert_eq!(mi100.peak_tflops(Precision::F64, Unit::Vector), Some(11.5));
        assert_eq!(mi100.peak_tflops(Precision::F32, Unit::Packed), None);
        assert_eq!(mi100.peak_tflops(Precision::F64, Unit::Matrix), None);
        assert_eq!(mi100.memory_gbps, Some(1228.8));
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
