//! The GPU metrics table AMD SMI copies from the kernel (`amdsmi_gpu_metrics_t`), read into the suite's terms:
//! pure functions over its leading fields, tested on format fixtures; `amdsmi.rs` loads the library and calls it.
//!
//! # Units
//! From `amdsmi.h` and the kernel's `gpu_metrics`: clocks in MHz, power in W, temperatures in °C (all `uint16_t`);
//! the power cap in µW (`amdsmi_power_cap_info_t`: "current power cap (uW)", hwmon's `power1_cap`). Because
//! `amdsmi_power_info_t::power_limit` is documented as W in some releases and filled with hwmon's µW in others, it is
//! not used; [`power_cap_watts`] also tells a cap in W from one in µW by size, should a release change this one.
//! A field an ASIC does not fill reads `0xFFFF` (all ones): unknown. So does 0 for a clock, a power or a
//! temperature, which no running GPU reads.
//!
//! # Power on MI250X
//! An MI250X module (OAM) holds two GCDs, each its own HIP device and PCI function. The kernel fills the power only
//! on the module's first GCD, with the whole module's power, and 0 on the second (Linux `aldebaran_ppt.c`,
//! `aldebaran_get_gpu_metrics`: "Valid power data is available only from primary die"; rocm-smi prints "N/A
//! (Secondary die)", ROCm/rocm_smi_lib#160). So on the first GCD [`PowerScope::Module`] (both GCDs' power), on the
//! second [`PowerScope::OtherGcd`], "power measured per module (read on the first GCD)", with no power in its
//! samples; never a failure. MI200 fills `average_socket_power`; MI300 fills `current_socket_power` (gpu_metrics
//! v1.4, ROCm/pytorch#1457), which is preferred where present.
//!
//! # Throttle reasons
//! MI200 (gpu_metrics v1.3) reports `indep_throttle_status`, whose bits are the kernel's ASIC-independent ones
//! (Linux `amdgpu_smu.h`, `SMU_THROTTLER_*_BIT`):
//!
//! | bits | kernel names | reasons |
//! |---|---|---|
//! | 0–7 | PPT0, PPT1, PPT2, PPT3, SPL, FPPT, SPPT, SPPT_APU (package power limits) | power_cap |
//! | 16–23 | TDC_GFX, TDC_SOC, TDC_MEM, TDC_VDD, TDC_CVIP, EDC_CPU, EDC_GFX, APCC (current limits) | power_cap |
//! | 32–43 | TEMP_GPU, _CORE, _MEM, _EDGE, _HOTSPOT, _SOC, _VR_GFX, _VR_SOC, _VR_MEM0, _VR_MEM1, _LIQUID0, _LIQUID1 | thermal |
//! | 44–45 | VRHOT0, VRHOT1 (a voltage regulator's hot signal) | thermal + hw_slowdown |
//! | 46–47 | PROCHOT_CPU, PROCHOT_GFX (the processor-hot signal) | thermal + hw_slowdown |
//! | 56 | PPM (platform power management) | power_cap |
//! | 57 | FIT (reliability limit) | other |
//! | any other bit | (unknown to this suite) | other |
//!
//! Current (TDC, EDC) limits count as a power cap: like NVIDIA's software power cap they are limits of the power
//! delivery that the firmware holds the clock under, not temperatures. On MI250X the kernel sets only PPT0, PPT1,
//! TDC_GFX, TDC_SOC, TDC_MEM, TEMP_GPU, TEMP_MEM, TEMP_VR_GFX, TEMP_VR_SOC, TEMP_VR_MEM0 and APCC
//! (`aldebaran_throttler_map`). Other metrics formats (MI300's v1.4 and later) have only the ASIC-dependent
//! `throttle_status`, which is not decoded: a non-zero value is `other`, zero is no reason.

pub(super) use hip_sys::amdsmi::amdsmi_gpu_metrics_t as GpuMetrics;

use crate::device::telemetry::{PowerScope, Reason, Reasons};

/// The buffer `amdsmi_get_gpu_metrics_info` fills: the struct is 352 bytes in 23.4 and 1832 in 24.7, and later
/// releases append to it, so 16 KiB leaves room for growth; only [`GpuMetrics`] is read back.
pub(super) const METRICS_BUFFER_BYTES: usize = 16 * 1024;
const _: () = assert!(METRICS_BUFFER_BYTES >= 8 * 1832 && std::mem::size_of::<GpuMetrics>() <= METRICS_BUFFER_BYTES);

/// `indep_throttle_status` bits and the reasons each maps to (the table in the module documentation).
pub(super) const INDEP_THROTTLE_BITS: &[(u32, &str, &[Reason])] = &[
    (0, "PPT0", &[Reason::PowerCap]),
    (1, "PPT1", &[Reason::PowerCap]),
    (2, "PPT2", &[Reason::PowerCap]),
    (3, "PPT3", &[Reason::PowerCap]),
    (4, "SPL", &[Reason::PowerCap]),
    (5, "FPPT", &[Reason::PowerCap]),
    (6, "SPPT", &[Reason::PowerCap]),
    (7, "SPPT_APU", &[Reason::PowerCap]),
    (16, "TDC_GFX", &[Reason::PowerCap]),
    (17, "TDC_SOC", &[Reason::PowerCap]),
    (18, "TDC_MEM", &[Reason::PowerCap]),
    (19, "TDC_VDD", &[Reason::PowerCap]),
    (20, "TDC_CVIP", &[Reason::PowerCap]),
    (21, "EDC_CPU", &[Reason::PowerCap]),
    (22, "EDC_GFX", &[Reason::PowerCap]),
    (23, "APCC", &[Reason::PowerCap]),
    (32, "TEMP_GPU", &[Reason::Thermal]),
    (33, "TEMP_CORE", &[Reason::Thermal]),
    (34, "TEMP_MEM", &[Reason::Thermal]),
    (35, "TEMP_EDGE", &[Reason::Thermal]),
    (36, "TEMP_HOTSPOT", &[Reason::Thermal]),
    (37, "TEMP_SOC", &[Reason::Thermal]),
    (38, "TEMP_VR_GFX", &[Reason::Thermal]),
    (39, "TEMP_VR_SOC", &[Reason::Thermal]),
    (40, "TEMP_VR_MEM0", &[Reason::Thermal]),
    (41, "TEMP_VR_MEM1", &[Reason::Thermal]),
    (42, "TEMP_LIQUID0", &[Reason::Thermal]),
    (43, "TEMP_LIQUID1", &[Reason::Thermal]),
    (44, "VRHOT0", &[Reason::Thermal, Reason::HwSlowdown]),
    (45, "VRHOT1", &[Reason::Thermal, Reason::HwSlowdown]),
    (46, "PROCHOT_CPU", &[Reason::Thermal, Reason::HwSlowdown]),
    (47, "PROCHOT_GFX", &[Reason::Thermal, Reason::HwSlowdown]),
    (56, "PPM", &[Reason::PowerCap]),
    (57, "FIT", &[Reason::Other]),
];

/// The reasons an `indep_throttle_status` holds; a bit not in [`INDEP_THROTTLE_BITS`] is [`Reason::Other`].
pub(super) fn reasons_from_indep_bits(status: u64) -> Reasons {
    let mut known = 0u64;
    let mut set = Reasons::NONE;
    for &(bit, _, reasons) in INDEP_THROTTLE_BITS {
        known |= 1 << bit;
        if status & (1 << bit) != 0 {
            set = set.union(Reasons::of(reasons));
        }
    }
    if status & !known != 0 {
        set = set.with(Reason::Other);
    }
    set
}

/// A `uint16_t` reading: unknown when unfilled (`0xFFFF`) or 0 (see the module documentation).
fn reading(v: u16) -> Option<u16> {
    (v != 0 && v != u16::MAX).then_some(v)
}

/// What one metrics table says, in the suite's terms.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Decoded {
    /// GFX clock, MHz.
    pub sm_clock_mhz: Option<u32>,
    /// Memory clock (UCLK), MHz.
    pub mem_clock_mhz: Option<u32>,
    /// Socket power, W.
    pub power_w: Option<f64>,
    /// Junction (hotspot) temperature, else edge, °C.
    pub temperature_c: Option<f64>,
    /// Throttle reasons, where the table says.
    pub reasons: Option<Reasons>,
}

/// Reads one metrics table (pure, so it is tested on format fixtures).
pub(super) fn decode(m: &GpuMetrics) -> Decoded {
    let gfx = reading(m.current_gfxclk).or_else(|| reading(m.current_gfxclks[0]));
    let power = reading(m.current_socket_power).or_else(|| reading(m.average_socket_power));
    let temperature = reading(m.temperature_hotspot).or_else(|| reading(m.temperature_edge));
    Decoded {
        sm_clock_mhz: gfx.map(u32::from),
        mem_clock_mhz: reading(m.current_uclk).map(u32::from),
        power_w: power.map(f64::from),
        temperature_c: temperature.map(f64::from),
        reasons: throttle_reasons(m),
    }
}

/// The throttle reasons of a metrics table: `indep_throttle_status` where the kernel's table is v1.3 (the only
/// version that has it) or the field holds bits anyway; else whether the ASIC-dependent `throttle_status` is set.
fn throttle_reasons(m: &GpuMetrics) -> Option<Reasons> {
    let v1_3 = (m.format_revision, m.content_revision) == (1, 3);
    let indep = m.indep_throttle_status;
    if indep != u64::MAX && (v1_3 || indep != 0) {
        return Some(reasons_from_indep_bits(indep));
    }
    match m.throttle_status {
        u32::MAX => None,
        0 => Some(Reasons::NONE),
        _ => Some(Reasons::NONE.with(Reason::Other)),
    }
}

/// A power cap in W from `amdsmi_power_cap_info_t::power_cap`, documented in µW. A GPU's cap lies between 1 W and
/// 10 kW, which is 10^6..10^10 in µW and 1..10^4 in W: the two ranges do not overlap, so a release that reported W
/// would still read right. 0 (the second GCD of an MI250X) and anything in neither range are unknown.
pub(super) fn power_cap_watts(raw: u64) -> Option<f64> {
    match raw {
        1..=10_000 => Some(raw as f64),
        1_000_000..=10_000_000_000 => Some(raw as f64 / 1e6),
        _ => None,
    }
}

/// What a GPU's power readings measure: an MI250 or MI250X GCD reads its module's power on the first GCD and
/// nothing on the second (see the module documentation); any other GPU reads its own.
pub(super) fn power_scope(device_name: &str, first_power_w: Option<f64>) -> PowerScope {
    let two_gcds_per_module = device_name.contains("MI250");
    match (two_gcds_per_module, first_power_w) {
        (true, Some(_)) => PowerScope::Module,
        (true, None) => PowerScope::OtherGcd,
        (false, _) => PowerScope::Device,
    }
}

/// A PCI address `dddd:bb:dd.f` (or `bb:dd.f`, domain 0), hex, as `amdsmi_bdf_t` packs it: function in bits 0–2,
/// device in 3–7, bus in 8–15, domain in 16–63.
pub(super) fn parse_bdf(text: &str) -> Option<u64> {
    let text = text.trim();
    let (rest, function) = text.rsplit_once('.')?;
    let parts: Vec<&str> = rest.split(':').collect();
    let (domain, bus, device) = match parts.as_slice() {
        [domain, bus, device] => (*domain, *bus, *device),
        [bus, device] => ("0", *bus, *device),
        _ => return None,
    };
    let hex = |s: &str| u64::from_str_radix(s, 16).ok();
    let (domain, bus, device, function) = (hex(domain)?, hex(bus)?, hex(device)?, hex(function)?);
    (domain < 1 << 48 && bus < 256 && device < 32 && function < 8)
        .then_some(function | device << 3 | bus << 8 | domain << 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Format fixture: an MI250X GCD's table as the kernel fills gpu_metrics v1.3 (aldebaran_get_gpu_metrics) and
    /// AMD SMI copies it: the first GCD of a module under load at its power cap, hot.
    fn mi250x_first_gcd() -> GpuMetrics {
        GpuMetrics {
            structure_size: 120,
            format_revision: 1,
            content_revision: 3,
            temperature_edge: 48,
            temperature_hotspot: 71,
            average_socket_power: 498,
            current_gfxclk: 1650,
            current_uclk: 1600,
            throttle_status: 0x3,
            indep_throttle_status: 1 << 0 | 1 << 32,
            current_socket_power: u16::MAX,
            current_gfxclks: [u16::MAX; 8],
            ..GpuMetrics::default()
        }
    }

    #[test]
    fn an_mi250x_table_decodes_clocks_power_temperature_and_reasons() {
        let d = decode(&mi250x_first_gcd());
        assert_eq!((d.sm_clock_mhz, d.mem_clock_mhz), (Some(1650), Some(1600)));
        assert_eq!(d.power_w, Some(498.0), "average_socket_power, as current_socket_power is unfilled on MI200");
        assert_eq!(d.temperature_c, Some(71.0), "the hotspot (junction) sensor");
        assert_eq!(d.reasons.map(|r| r.to_string()).as_deref(), Some("power_cap+thermal"));
        // The second GCD of the module: the kernel writes 0 for its power.
        let second = GpuMetrics { average_socket_power: 0, indep_throttle_status: 0, ..mi250x_first_gcd() };
        let d = decode(&second);
        assert_eq!(d.power_w, None);
        assert_eq!(d.reasons, Some(Reasons::NONE), "v1.3 with no bits set: no reason, not unknown");
        assert_eq!(power_scope("AMD Instinct MI250X", d.power_w), PowerScope::OtherGcd);
        assert_eq!(power_scope("AMD Instinct MI250X", Some(498.0)), PowerScope::Module);
        assert_eq!(power_scope("AMD Instinct MI210", Some(250.0)), PowerScope::Device);
        assert_eq!(power_scope("AMD Instinct MI300X", None), PowerScope::Device);
        assert_eq!(PowerScope::OtherGcd.describe(), "power measured per module (read on the first GCD)");
        // No hotspot sensor: the edge one.
        let edge_only = GpuMetrics { temperature_hotspot: u16::MAX, ..mi250x_first_gcd() };
        assert_eq!(decode(&edge_only).temperature_c, Some(48.0));
    }

    /// Format fixture: an MI300X table (gpu_metrics v1.5): per-XCD clocks only, current socket power, and the
    /// ASIC-dependent throttle status alone.
    #[test]
    fn an_mi300x_table_uses_its_own_fields() {
        let mut clocks = [u16::MAX; 8];
        clocks[0] = 2100;
        let m = GpuMetrics {
            format_revision: 1,
            content_revision: 5,
            temperature_edge: u16::MAX,
            temperature_hotspot: 64,
            average_socket_power: u16::MAX,
            current_socket_power: 712,
            current_gfxclk: u16::MAX,
            current_gfxclks: clocks,
            current_uclk: 1300,
            throttle_status: 0,
            indep_throttle_status: 0,
            ..GpuMetrics::default()
        };
        let d = decode(&m);
        assert_eq!((d.sm_clock_mhz, d.mem_clock_mhz, d.power_w), (Some(2100), Some(1300), Some(712.0)));
        assert_eq!(d.temperature_c, Some(64.0));
        assert_eq!(d.reasons, Some(Reasons::NONE));
        let throttled = GpuMetrics { throttle_status: 0x40, ..m.clone() };
        assert_eq!(decode(&throttled).reasons.map(|r| r.to_string()).as_deref(), Some("other"));
        let unknown = GpuMetrics { throttle_status: u32::MAX, indep_throttle_status: u64::MAX, ..m };
        assert_eq!(decode(&unknown).reasons, None);
    }

    #[test]
    fn every_indep_throttle_bit_maps_as_the_table_says() {
        let cases: [(u64, &str); 12] = [
            (0, "none"),
            (1 << 0, "power_cap"),
            (1 << 7, "power_cap"),
            (1 << 16, "power_cap"),
            (1 << 23, "power_cap"),
            (1 << 32, "thermal"),
            (1 << 43, "thermal"),
            (1 << 44, "thermal+hw_slowdown"),
            (1 << 47, "thermal+hw_slowdown"),
            (1 << 56, "power_cap"),
            (1 << 57, "other"),
            (1 << 10 | 1 << 1, "power_cap+other"),
        ];
        for (bits, want) in cases {
            assert_eq!(reasons_from_indep_bits(bits).to_string(), want, "{bits:#x}");
        }
        // Every kernel bit MI250X sets (aldebaran_throttler_map) is one the table names.
        for name in [
            "PPT0",
            "PPT1",
            "TDC_GFX",
            "TDC_SOC",
            "TDC_MEM",
            "TEMP_GPU",
            "TEMP_MEM",
            "TEMP_VR_GFX",
            "TEMP_VR_SOC",
            "TEMP_VR_MEM0",
            "APCC",
        ] {
            let (_, _, reasons) = INDEP_THROTTLE_BITS.iter().find(|(_, n, _)| *n == name).expect(name);
            assert!(Reasons::of(reasons).throttling(), "{name} is a limit");
        }
        assert_eq!(INDEP_THROTTLE_BITS.len(), 34, "the 34 bits of amdgpu_smu.h");
    }

    #[test]
    fn power_caps_read_in_watts_whatever_the_unit() {
        assert_eq!(power_cap_watts(500_000_000), Some(500.0), "hwmon's µW, as documented");
        assert_eq!(power_cap_watts(560), Some(560.0), "W, should a release report them");
        assert_eq!(power_cap_watts(0), None, "the second GCD of an MI250X");
        assert_eq!(power_cap_watts(50_000), None, "neither 50 mW nor 50 kW is a GPU's cap");
        assert_eq!(power_cap_watts(u64::MAX), None);
    }

    #[test]
    fn pci_addresses_pack_as_amdsmi_bdf_t() {
        let cases = [
            ("0000:c1:00.0", Some(0xc1 << 8)),
            ("0000:d6:00.0", Some(0xd6 << 8)),
            ("0001:03:1f.7", Some(1 << 16 | 0x03 << 8 | 0x1f << 3 | 7)),
            ("c1:00.0", Some(0xc1 << 8)),
            ("0000:c1:00", None),
            ("0000:100:00.0", None),
            ("0000:c1:20.0", None),
            ("0000:c1:00.8", None),
            ("not a bus id", None),
        ];
        for (text, want) in cases {
            assert_eq!(parse_bdf(text), want, "{text}");
        }
    }
}
