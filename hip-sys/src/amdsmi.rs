//! The few AMD SMI (`libamd_smi.so`, ROCm 6) items the suite uses, declared by hand beside HIP's: the status codes
//! and their names, the structs passed, the functions' prototypes, and a table of them loaded at run time.
//!
//! There is no AMD SMI on Debian to generate bindings from, so each item follows ROCm/amdsmi's `amdsmi.h`: the
//! structs and enum values are the same in AMD SMI 23.4 (ROCm 6.0), 24.5 (6.1), 24.6 (6.2) and 24.7 (6.3), checked
//! by compiling each one's header (tags rocm-6.0.0, rocm-6.1.0, rocm-6.2.0, and commit 0ceca28 for 24.7); the
//! offsets `gcc` gave are pinned in `tests/rocm63_abi.rs`. Names follow the C header (hence the relaxed naming lints
//! in this file). Nothing here checks a status or owns a handle: that is the suite's result and safe layers
//! (`suite/src/device/amd/amdsmi.rs`).
#![allow(non_camel_case_types, non_upper_case_globals)]

use std::ffi::{c_char, c_int, c_void};
use std::path::{Path, PathBuf};

use libloading::Library;

use crate::loader::dlopen_reason;

/// `amdsmi_status_t`: a C enum with values up to `0xFFFFFFFF`, so unsigned.
pub type amdsmi_status_t = u32;
/// `amdsmi_processor_handle`: an opaque pointer.
pub type amdsmi_processor_handle = *mut c_void;

/// `AMDSMI_STATUS_SUCCESS`.
pub const AMDSMI_STATUS_SUCCESS: amdsmi_status_t = 0;
/// `AMDSMI_INIT_AMD_GPUS` (`amdsmi_init_flags_t`).
pub const AMDSMI_INIT_AMD_GPUS: u64 = 1 << 1;
/// `AMDSMI_CLK_TYPE_GFX` (= `SYS`; `CLK_TYPE_*` in 23.4, same values).
pub const AMDSMI_CLK_TYPE_GFX: c_int = 0;
/// `AMDSMI_CLK_TYPE_MEM`.
pub const AMDSMI_CLK_TYPE_MEM: c_int = 4;

/// Every `amdsmi_status_t` value with its name (`amdsmi.h` 24.7; 23.4 has the same values, fewer of them).
pub const AMDSMI_STATUSES: &[(amdsmi_status_t, &str)] = &[
    (0, "AMDSMI_STATUS_SUCCESS"),
    (1, "AMDSMI_STATUS_INVAL"),
    (2, "AMDSMI_STATUS_NOT_SUPPORTED"),
    (3, "AMDSMI_STATUS_NOT_YET_IMPLEMENTED"),
    (4, "AMDSMI_STATUS_FAIL_LOAD_MODULE"),
    (5, "AMDSMI_STATUS_FAIL_LOAD_SYMBOL"),
    (6, "AMDSMI_STATUS_DRM_ERROR"),
    (7, "AMDSMI_STATUS_API_FAILED"),
    (8, "AMDSMI_STATUS_TIMEOUT"),
    (9, "AMDSMI_STATUS_RETRY"),
    (10, "AMDSMI_STATUS_NO_PERM"),
    (11, "AMDSMI_STATUS_INTERRUPT"),
    (12, "AMDSMI_STATUS_IO"),
    (13, "AMDSMI_STATUS_ADDRESS_FAULT"),
    (14, "AMDSMI_STATUS_FILE_ERROR"),
    (15, "AMDSMI_STATUS_OUT_OF_RESOURCES"),
    (16, "AMDSMI_STATUS_INTERNAL_EXCEPTION"),
    (17, "AMDSMI_STATUS_INPUT_OUT_OF_BOUNDS"),
    (18, "AMDSMI_STATUS_INIT_ERROR"),
    (19, "AMDSMI_STATUS_REFCOUNT_OVERFLOW"),
    (30, "AMDSMI_STATUS_BUSY"),
    (31, "AMDSMI_STATUS_NOT_FOUND"),
    (32, "AMDSMI_STATUS_NOT_INIT"),
    (33, "AMDSMI_STATUS_NO_SLOT"),
    (40, "AMDSMI_STATUS_NO_DATA"),
    (41, "AMDSMI_STATUS_INSUFFICIENT_SIZE"),
    (42, "AMDSMI_STATUS_UNEXPECTED_SIZE"),
    (43, "AMDSMI_STATUS_UNEXPECTED_DATA"),
    (0xFFFF_FFFE, "AMDSMI_STATUS_MAP_ERROR"),
    (0xFFFF_FFFF, "AMDSMI_STATUS_UNKNOWN_ERROR"),
];

/// The name of a status, e.g. `AMDSMI_STATUS_NOT_SUPPORTED`; `None` for a value no checked release defines.
pub fn amdsmi_status_name(status: amdsmi_status_t) -> Option<&'static str> {
    AMDSMI_STATUSES.iter().find(|(value, _)| *value == status).map(|(_, name)| *name)
}

/// `amdsmi_clk_info_t` as 24.x declares it; 23.4 names the fields `cur_clk, min_clk, max_clk, sleep_clk` with the
/// same offsets and size (32 bytes).
#[repr(C)]
#[derive(Debug, Clone, Default)]
pub struct amdsmi_clk_info_t {
    pub clk: u32,
    pub min_clk: u32,
    pub max_clk: u32,
    pub clk_locked: u8,
    pub clk_deep_sleep: u8,
    pub reserved: [u32; 4],
}

/// `amdsmi_power_cap_info_t` (64 bytes in 23.4–24.7); `power_cap` in µW.
#[repr(C)]
#[derive(Debug, Clone, Default)]
pub struct amdsmi_power_cap_info_t {
    pub power_cap: u64,
    pub default_power_cap: u64,
    pub dpm_cap: u64,
    pub min_power_cap: u64,
    pub max_power_cap: u64,
    pub reserved: [u64; 3],
}

/// `amdsmi_version_t` (24 bytes in 23.4–24.7). The year is the library's soname version, which AMD raises when the
/// ABI changes.
#[repr(C)]
#[derive(Debug)]
pub struct amdsmi_version_t {
    pub year: u32,
    pub major: u32,
    pub minor: u32,
    pub release: u32,
    pub build: *const c_char,
}

/// The leading part of `amdsmi_gpu_metrics_t`, field for field as AMD SMI 23.4–24.7 declare it (every version's
/// fields from v1.0 through the v1.4 additions that end with `current_gfxclks`). `tests/rocm63_abi.rs` pins each
/// offset read to the C compiler's.
#[repr(C)]
#[derive(Debug, Clone, Default)]
pub struct amdsmi_gpu_metrics_t {
    // amd_metrics_table_header_t common_header: the kernel table's size and version (1.3 on MI200).
    pub structure_size: u16,
    pub format_revision: u8,
    pub content_revision: u8,
    // v1.0
    pub temperature_edge: u16,
    pub temperature_hotspot: u16,
    pub temperature_mem: u16,
    pub temperature_vrgfx: u16,
    pub temperature_vrsoc: u16,
    pub temperature_vrmem: u16,
    pub average_gfx_activity: u16,
    pub average_umc_activity: u16,
    pub average_mm_activity: u16,
    pub average_socket_power: u16,
    pub energy_accumulator: u64,
    pub system_clock_counter: u64,
    pub average_clocks: [u16; 7],
    pub current_gfxclk: u16,
    pub current_socclk: u16,
    pub current_uclk: u16,
    pub current_vclk0: u16,
    pub current_dclk0: u16,
    pub current_vclk1: u16,
    pub current_dclk1: u16,
    pub throttle_status: u32,
    pub current_fan_speed: u16,
    pub pcie_link_width: u16,
    pub pcie_link_speed: u16,
    // v1.1
    pub gfx_activity_acc: u32,
    pub mem_activity_acc: u32,
    pub temperature_hbm: [u16; 4],
    // v1.2
    pub firmware_timestamp: u64,
    // v1.3
    pub voltage_soc: u16,
    pub voltage_gfx: u16,
    pub voltage_mem: u16,
    pub indep_throttle_status: u64,
    // v1.4
    pub current_socket_power: u16,
    pub vcn_activity: [u16; 4],
    pub gfxclk_lock_status: u32,
    pub xgmi_link_width: u16,
    pub xgmi_link_speed: u16,
    pub pcie_bandwidth_acc: u64,
    pub pcie_bandwidth_inst: u64,
    pub pcie_l0_to_recov_count_acc: u64,
    pub pcie_replay_count_acc: u64,
    pub pcie_replay_rover_count_acc: u64,
    pub xgmi_read_data_acc: [u64; 8],
    pub xgmi_write_data_acc: [u64; 8],
    pub current_gfxclks: [u16; 8],
}

/// `amdsmi_init(uint64_t init_flags)`.
pub type amdsmi_init_fn = unsafe extern "C" fn(u64) -> amdsmi_status_t;
/// `amdsmi_shut_down(void)`.
pub type amdsmi_shut_down_fn = unsafe extern "C" fn() -> amdsmi_status_t;
/// `amdsmi_status_code_to_string(amdsmi_status_t status, const char** status_string)`.
pub type amdsmi_status_code_to_string_fn = unsafe extern "C" fn(amdsmi_status_t, *mut *const c_char) -> amdsmi_status_t;
/// `amdsmi_get_lib_version(amdsmi_version_t* version)`.
pub type amdsmi_get_lib_version_fn = unsafe extern "C" fn(*mut amdsmi_version_t) -> amdsmi_status_t;
/// `amdsmi_get_processor_handle_from_bdf(amdsmi_bdf_t bdf, amdsmi_processor_handle* handle)`: `amdsmi_bdf_t` is
/// passed by value, a union of bit fields in one `uint64_t`, which the C ABI passes as a `uint64_t`.
pub type amdsmi_get_processor_handle_from_bdf_fn =
    unsafe extern "C" fn(u64, *mut amdsmi_processor_handle) -> amdsmi_status_t;
/// `amdsmi_get_clock_info(amdsmi_processor_handle, amdsmi_clk_type_t, amdsmi_clk_info_t*)`.
pub type amdsmi_get_clock_info_fn =
    unsafe extern "C" fn(amdsmi_processor_handle, c_int, *mut amdsmi_clk_info_t) -> amdsmi_status_t;
/// `amdsmi_get_power_cap_info(amdsmi_processor_handle, uint32_t sensor_ind, amdsmi_power_cap_info_t*)`.
pub type amdsmi_get_power_cap_info_fn =
    unsafe extern "C" fn(amdsmi_processor_handle, u32, *mut amdsmi_power_cap_info_t) -> amdsmi_status_t;
/// `amdsmi_get_gpu_metrics_info(amdsmi_processor_handle, amdsmi_gpu_metrics_t*)`: the struct is passed as a buffer,
/// since later releases append fields to it.
pub type amdsmi_get_gpu_metrics_info_fn = unsafe extern "C" fn(amdsmi_processor_handle, *mut c_void) -> amdsmi_status_t;

/// A loaded AMD SMI: the functions the suite calls (present in every release from 23.4). The pointers are valid while
/// this value lives (it owns the library).
pub struct AmdSmi {
    /// The file it was loaded from.
    pub path: PathBuf,
    pub amdsmi_init: amdsmi_init_fn,
    pub amdsmi_shut_down: amdsmi_shut_down_fn,
    pub amdsmi_status_code_to_string: amdsmi_status_code_to_string_fn,
    pub amdsmi_get_lib_version: amdsmi_get_lib_version_fn,
    pub amdsmi_get_processor_handle_from_bdf: amdsmi_get_processor_handle_from_bdf_fn,
    pub amdsmi_get_clock_info: amdsmi_get_clock_info_fn,
    pub amdsmi_get_power_cap_info: amdsmi_get_power_cap_info_fn,
    pub amdsmi_get_gpu_metrics_info: amdsmi_get_gpu_metrics_info_fn,
    /// Keeps the functions above mapped: never unloaded while they may be called.
    _library: Library,
}

impl AmdSmi {
    /// Opens `path` and resolves every function, or says why it cannot be used (for [`crate::loader::load_first`]).
    pub fn open(path: &Path) -> Result<AmdSmi, String> {
        // SAFETY: loading runs libamd_smi's initialisers, which set up only its own state; AMD SMI is made to be
        // loaded at run time (its Python and Go bindings do so).
        let library = unsafe { Library::new(path) }.map_err(|e| dlopen_reason(path, &e))?;
        macro_rules! required {
            ($name:ident) => {
                // SAFETY: the symbol is AMD SMI's function of that name, whose C prototype (amdsmi.h 23.4-24.7) the
                // field's type spells out; the pointer is used only while `library` stays loaded (kept in the same
                // struct).
                *unsafe { library.get(concat!(stringify!($name), "\0").as_bytes()) }
                    .map_err(|_| format!("loaded, but it does not export {} (not AMD SMI?)", stringify!($name)))?
            };
        }
        Ok(AmdSmi {
            path: path.to_path_buf(),
            amdsmi_init: required!(amdsmi_init),
            amdsmi_shut_down: required!(amdsmi_shut_down),
            amdsmi_status_code_to_string: required!(amdsmi_status_code_to_string),
            amdsmi_get_lib_version: required!(amdsmi_get_lib_version),
            amdsmi_get_processor_handle_from_bdf: required!(amdsmi_get_processor_handle_from_bdf),
            amdsmi_get_clock_info: required!(amdsmi_get_clock_info),
            amdsmi_get_power_cap_info: required!(amdsmi_get_power_cap_info),
            amdsmi_get_gpu_metrics_info: required!(amdsmi_get_gpu_metrics_info),
            _library: library,
        })
    }
}
