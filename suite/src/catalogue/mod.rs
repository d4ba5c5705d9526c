//! The catalogue of parts: every GPU the suite knows by its data sheet, one entry per part in [`PARTS`]
//! (`entries.rs`), keyed by its command-line key. An entry holds all the suite knows of the part:
//! - its architecture profile ([`Part::profile`], the occupancy limits of one CU, `occupancy_calculator/profiles.rs`:
//!   parts of one architecture share it);
//! - its peaks per precision and unit, with their source and arithmetic (what [`crate::peaks`] reads figures against);
//! - its planning data: what its runtime reports, which [`Part::props`] turns into the properties a plan of the part
//!   has (`suite run --dry-run`, [`crate::planning`]).
//!
//! Adding a GPU is adding one entry to [`PARTS`]; a GPU of a new architecture also needs its profile. The tests
//! check every entry against its own arithmetic and sources.

mod entries;

pub use entries::{DEFAULT_KEY, DEFAULT_NVIDIA_KEY, PARTS};

use crate::device::{Arch, Platform, Props, WaveSize};
use crate::occupancy_calculator::Profile;

/// One part: its identity, architecture, peaks and what its runtime reports.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Part {
    /// Command-line key (`suite run --dry-run --part`), e.g. `mi250x-gcd`.
    pub key: &'static str,
    /// The part as reports name it, e.g. `MI250X GCD (110 CUs)`.
    pub name: &'static str,
    /// A piece of the runtime's device name that tells parts with the same architecture and CUs apart (H100 vs
    /// H200, MI210 vs MI250 GCD), or "": of the parts that match a device, the one with the longest piece wins.
    pub name_contains: &'static str,
    /// Device name as the runtime reports it, e.g. `AMD Instinct MI250X`.
    pub device_name: &'static str,
    /// The runtime's full architecture string, e.g. `gfx90a:sramecc+:xnack-` (target features included).
    pub arch_full: &'static str,
    /// The architecture's occupancy profile: wave size, wave slots, register files, LDS, group limits of one CU.
    pub profile: &'static Profile,
    /// Compute units (AMD CUs, NVIDIA SMs).
    pub cu_count: u32,
    /// Peak (boost) shader clock the peaks are computed at, MHz.
    pub clock_mhz: u32,
    /// FP32 on the vector units, one FMA per lane per clock, TFLOP/s.
    pub fp32_vector_tflops: f64,
    /// FP32 with packed FMA (AMD CDNA2/3 `v_pk_fma_f32`), TFLOP/s; `None` where the part has none.
    pub fp32_packed_tflops: Option<f64>,
    /// FP32 on the matrix units (AMD MFMA), TFLOP/s; `None` where FP32 has no matrix path.
    pub fp32_matrix_tflops: Option<f64>,
    /// FP64 on the vector units, TFLOP/s.
    pub fp64_vector_tflops: f64,
    /// FP64 on the matrix units (AMD MFMA, NVIDIA FP64 tensor cores), TFLOP/s; `None` where FP64 has none.
    pub fp64_matrix_tflops: Option<f64>,
    /// Memory bandwidth, GB/s (10^9 bytes).
    pub memory_gbps: f64,
    /// Where the peaks are from, with the arithmetic.
    pub source: &'static str,
    /// LDS one group may use without opting in, bytes (NVIDIA 48 KiB; AMD has no opt-in: the profile's maximum).
    pub lds_bytes_per_group: u64,
    /// 32-bit registers per CU as the runtime reports them (HIP's figure is not the VGPR file: the profile holds it).
    pub registers_per_cu: u32,
    /// Memory clock, MHz, counted as `peaks` reads it: two transfers per clock on each pin of the bus.
    pub memory_clock_mhz: u32,
    /// Memory bus width, bits.
    pub memory_bus_bits: u32,
    /// L2 cache as the runtime reports it, bytes.
    pub l2_bytes: u64,
    /// Device memory, bytes: the data sheet's capacity (a runtime reports slightly less, the driver keeps some, so a
    /// plan's memory checks are up to about 2% generous for a point at the very edge of device memory).
    pub memory_bytes: u64,
}

impl Part {
    /// The architecture, without target features (`gfx90a`).
    pub fn arch(&self) -> Arch {
        Arch::parse(self.arch_full).expect("every part's arch_full parses (checked by the catalogue's tests)")
    }

    /// The vendor BLAS a run on the part uses.
    pub fn blas_library(&self) -> &'static str {
        match self.profile.platform {
            Platform::Amd => "rocBLAS",
            Platform::Nvidia => "cuBLAS",
        }
    }

    /// The properties a device of this part reports, with runtime and driver saying that this is a plan: the
    /// occupancy limits are its profile's, the rest its entry's.
    pub fn props(&self) -> Props {
        let arch = self.arch();
        let profile = self.profile;
        Props {
            platform: profile.platform,
            ordinal: 0,
            name: self.device_name.to_string(),
            arch,
            arch_full: self.arch_full.to_string(),
            wave_size: WaveSize(profile.wave_size.0),
            cu_count: self.cu_count,
            max_items_per_cu: profile.wave_slots_per_cu() * profile.wave_size.0,
            max_group_size: profile.max_group_size,
            // HIP reports no real limit (device/amd/mod.rs); CUDA reports the block slots the profile holds.
            max_groups_per_cu: profile.max_groups_per_cu,
            lds_bytes_per_cu: u64::from(profile.lds_bytes_per_cu),
            lds_bytes_per_group: self.lds_bytes_per_group,
            lds_bytes_per_group_optin: u64::from(profile.max_lds_bytes_per_group),
            registers_per_cu: self.registers_per_cu,
            clock_mhz: Some(self.clock_mhz),
            memory_clock_mhz: Some(self.memory_clock_mhz),
            memory_bus_bits: Some(self.memory_bus_bits),
            l2_bytes: Some(self.l2_bytes),
            memory_bytes: self.memory_bytes,
            runtime_version: format!(
                "none: a plan of {} from its data sheet (suite run --dry-run); nothing runs",
                self.name
            ),
            driver_version: "none: a plan loads no driver; nothing runs".to_string(),
            test_runtime: false,
        }
    }
}

/// The part called `key` (surrounding spaces ignored).
pub fn by_key(key: &str) -> Option<&'static Part> {
    PARTS.iter().find(|p| p.key == key.trim())
}

/// The part a plan assumes when no part is named: the platform's default ([`DEFAULT_KEY`] for AMD or no platform,
/// [`DEFAULT_NVIDIA_KEY`] for NVIDIA).
pub fn default_key(platform: Option<Platform>) -> &'static str {
    match platform {
        Some(Platform::Nvidia) => DEFAULT_NVIDIA_KEY,
        Some(Platform::Amd) | None => DEFAULT_KEY,
    }
}

/// Every part's key, in table order.
pub fn keys() -> Vec<&'static str> {
    PARTS.iter().map(|p| p.key).collect()
}

/// The part a device is: architecture `arch`, `cu_count` CUs and a device name containing the part's
/// `name_contains`, the most specific such part where several match (the H200 before the H100 SXM5 of the same 132
/// SMs).
pub fn of_device(arch: &str, cu_count: u32, device_name: &str) -> Option<&'static Part> {
    PARTS
        .iter()
        .filter(|p| p.profile.arch == arch && p.cu_count == cu_count && device_name.contains(p.name_contains))
        .max_by_key(|p| (p.name_contains.len(), std::cmp::Reverse(index(p))))
}

/// The first part of an architecture: what `suite kernels build` assumes for a device it cannot see.
pub fn default_of_arch(arch: &str) -> Option<&'static Part> {
    PARTS.iter().find(|p| p.profile.arch == arch)
}

/// A part's place in the table.
fn index(part: &Part) -> usize {
    PARTS.iter().position(|p| p.key == part.key).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_names_and_architectures_are_each_once_and_parse() {
        let mut seen = std::collections::BTreeSet::new();
        let mut names = std::collections::BTreeSet::new();
        for p in PARTS {
            assert!(seen.insert(p.key), "{} is listed twice", p.key);
            assert!(names.insert(p.name), "{} is named twice", p.name);
            assert_eq!(by_key(p.key), Some(p));
            let arch = Arch::parse(p.arch_full).unwrap_or_else(|e| panic!("{}: {e}", p.key));
            assert_eq!(arch.as_str(), p.profile.arch, "{}: its profile is its architecture's", p.key);
            assert_eq!(arch.platform(), p.profile.platform, "{}", p.key);
            // The profile is the one the calculator finds for the part's architecture (its default wave size).
            assert_eq!(Profile::for_arch(&arch, None), Ok(p.profile), "{}", p.key);
            // A device of the part is the part: the runtime's name picks it among parts of the same CUs.
            assert_eq!(of_device(p.profile.arch, p.cu_count, p.device_name).map(|q| q.key), Some(p.key));
            assert!(p.lds_bytes_per_group <= u64::from(p.profile.max_lds_bytes_per_group), "{}", p.key);
        }
        assert_eq!(keys().first(), Some(&DEFAULT_KEY));
        assert_eq!(by_key(" h200 ").map(|p| p.name), Some("H200 SXM (132 SMs)"));
        // The name tells parts of the same CUs apart, and without a telling name the plainer part is meant.
        assert_eq!(of_device("sm_90", 132, "NVIDIA H200").map(|p| p.key), Some("h200"));
        assert_eq!(of_device("sm_90", 132, "NVIDIA H100 80GB HBM3").map(|p| p.key), Some("h100-sxm"));
        assert_eq!(of_device("gfx90a", 104, "AMD Instinct MI210").map(|p| p.key), Some("mi210"));
        assert_eq!(of_device("gfx90a", 104, "").map(|p| p.key), Some("mi250-gcd"));
        assert_eq!(of_device("sm_80", 108, "NVIDIA A100-SXM4-40GB").map(|p| p.key), Some("a100-40gb"));
        assert_eq!(of_device("sm_90", 120, "NVIDIA H200 NVL"), None);
        assert_eq!(default_of_arch("gfx90a").map(|p| p.cu_count), Some(110));
        assert_eq!(default_of_arch("gfx908").map(|p| p.key), Some("mi100"));
        assert_eq!(default_of_arch("gfx1100"), None);
    }

    #[test]
    fn peaks_are_their_own_arithmetic() {
        // FLOP per clock per CU of each path, per architecture: FP32 vector (2 x FP32 lanes), FP32 packed, FP32
        // matrix, FP64 vector (2 x FP64 lanes), FP64 matrix; 0 where there is no such path. Sources: the NVIDIA
        // whitepapers (GA100: 64 FP32 and 32 FP64 lanes per SM, FP64 tensor cores 2x the FP64 rate; GH100: 128 and
        // 64, tensor 2x), AMD's CDNA2/3 tables (vector FP32 and FP64 128, packed FP32 and matrix FP32 and FP64 256)
        // and CDNA1's (MI100: vector FP32 128, FP64 64, matrix FP32 256; no packed FP32, no FP64 MFMA).
        let per_clock = [
            ("sm_90", [256.0, 0.0, 0.0, 128.0, 256.0]),
            ("sm_80", [128.0, 0.0, 0.0, 64.0, 128.0]),
            ("gfx908", [128.0, 0.0, 256.0, 64.0, 0.0]),
            ("gfx90a", [128.0, 256.0, 256.0, 128.0, 256.0]),
            ("gfx942", [128.0, 256.0, 256.0, 128.0, 256.0]),
        ];
        for p in PARTS {
            let [fp32, packed, fp32_matrix, fp64, fp64_matrix] =
                per_clock.iter().find(|(a, _)| *a == p.profile.arch).unwrap().1;
            let tflops = |flop_per_clock: f64| f64::from(p.cu_count) * flop_per_clock * f64::from(p.clock_mhz) / 1e6;
            let close = |flop_per_clock: f64, got: Option<f64>, what: &str| match (flop_per_clock > 0.0, got) {
                (true, Some(got)) => {
                    let want = tflops(flop_per_clock);
                    assert!((want - got).abs() < 0.1, "{} {what}: computed {want:.2}, listed {got}", p.name);
                }
                (false, None) => {}
                (_, got) => panic!("{} {what}: {flop_per_clock} FLOP per clock, listed {got:?}", p.name),
            };
            close(fp32, Some(p.fp32_vector_tflops), "FP32 vector");
            close(packed, p.fp32_packed_tflops, "FP32 packed");
            close(fp32_matrix, p.fp32_matrix_tflops, "FP32 matrix");
            close(fp64, Some(p.fp64_vector_tflops), "FP64 vector");
            close(fp64_matrix, p.fp64_matrix_tflops, "FP64 matrix");
            // The source states each figure it lists.
            for figure in [Some(p.fp32_vector_tflops), p.fp32_packed_tflops, p.fp32_matrix_tflops]
                .into_iter()
                .chain([Some(p.fp64_vector_tflops), p.fp64_matrix_tflops])
                .flatten()
            {
                assert!(p.source.contains(&format!("{figure}")), "{}: {figure} not in its source", p.name);
            }
        }
        // The figures, as listed (FP64 vector / matrix): MI250X GCD 23.9 / 47.9, MI300X 81.7 / 163.4, H100
        // SXM 33.5 / 66.9, A100 9.7 / 19.5; and CDNA1's FP64 at half its FP32 rate, with no FP64 matrix path.
        let fp64 = |key: &str| {
            let p = by_key(key).unwrap();
            (p.fp64_vector_tflops, p.fp64_matrix_tflops)
        };
        assert_eq!(fp64("mi250x-gcd"), (23.9, Some(47.9)));
        assert_eq!(fp64("mi300x"), (81.7, Some(163.4)));
        assert_eq!(fp64("h100-sxm"), (33.5, Some(66.9)));
        assert_eq!(fp64("h200"), (33.5, Some(66.9)));
        assert_eq!(fp64("a100-80gb"), (9.7, Some(19.5)));
        let mi100 = by_key("mi100").unwrap();
        assert_eq!((mi100.fp32_vector_tflops, mi100.fp64_vector_tflops, mi100.fp64_matrix_tflops), (23.1, 11.5, None));
        // AMD's CDNA3 sheets call the packed rate "FP32 vector": the source says which figure is which.
        for key in ["mi300x", "mi300a"] {
            let p = by_key(key).unwrap();
            assert!((p.fp32_packed_tflops.unwrap() - 2.0 * p.fp32_vector_tflops).abs() < 0.1, "{}", p.key);
            assert!(p.source.contains("the packed rate"), "{}", p.source);
        }
    }

    #[test]
    fn the_clock_and_memory_bus_give_the_data_sheets_figures() {
        for p in PARTS {
            let props = p.props();
            // FP32 lanes per CU: 128 on Hopper, 64 on Ampere's GA100 and on CDNA.
            let lanes = if p.profile.arch == "sm_90" { 128.0 } else { 64.0 };
            let tflops = f64::from(p.cu_count) * lanes * 2.0 * f64::from(p.clock_mhz) / 1e6;
            assert!((tflops / p.fp32_vector_tflops - 1.0).abs() < 0.01, "{}: {tflops} TFLOP/s", p.key);
            let gbps = f64::from(p.memory_clock_mhz) * 2.0 * f64::from(p.memory_bus_bits) / 8.0 / 1e3;
            assert!((gbps / p.memory_gbps - 1.0).abs() < 0.03, "{}: {gbps} GB/s", p.key);
            assert_eq!(
                (props.cu_count, props.clock_mhz, props.memory_bytes),
                (p.cu_count, Some(p.clock_mhz), p.memory_bytes)
            );
            assert_eq!(props.arch.as_str(), p.profile.arch);
        }
    }
}
