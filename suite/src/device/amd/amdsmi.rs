//! AMD SMI (`libamd_smi.so`, ROCm 6), loaded at run time: the AMD side of [`telemetry`](crate::device::telemetry).
//!
//! Layers as in `nvidia/nvml.rs`: [`Lib`] is the table of raw AMD SMI functions, loaded once per process and never
//! linked at build time; its methods turn each status into a `Result` with AMD SMI's own text for it
//! (`amdsmi_status_code_to_string`); [`AmdSmiTelemetry`] holds an initialised AMD SMI and one GPU's handle and
//! implements [`Telemetry`]. The GPU is found by the PCI address HIP gives for it (`hipDeviceGetPCIBusId`), since AMD
//! SMI ignores `ROCR_VISIBLE_DEVICES` and numbers GPUs its own way.
//!
//! Each reading is one call, `amdsmi_get_gpu_metrics_info`, which copies the SMU's metrics table (the kernel's
//! `gpu_metrics` file): clocks, power, temperature and throttle status from one snapshot. The maximum clocks
//! (`amdsmi_get_clock_info`) and the power cap (`amdsmi_get_power_cap_info`) are read once, when opened.
//!
//! # Which AMD SMI
//! The part of `amdsmi_gpu_metrics_t` read ([`GpuMetrics`], up to `current_gfxclks`) has the same layout in AMD SMI
//! 23.4 (ROCm 6.0), 24.5 (6.1), 24.6 (6.2) and 24.7 (6.3): checked by compiling each one's `amdsmi.h` (ROCm/amdsmi
//! tags rocm-6.0.0, rocm-6.1.0, rocm-6.2.0, and commit 0ceca28 for 24.7) and pinned by a test in `gpu_metrics.rs`,
//! as are the other structs here. Later releases append fields, so the struct is filled into a buffer of
//! [`METRICS_BUFFER_BYTES`], many times its largest known size (1832 bytes). The library's soname version is its year
//! (23, 24), which AMD raises when the ABI changes, so a library of another year is not read: its telemetry is not
//! available, with the version named.
//!
//! Units, the power of an MI250X's two GCDs and the throttle-reason table are in `gpu_metrics.rs`, which turns the
//! table into readings.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::{Mutex, OnceLock, PoisonError};

use hip_sys::loader::{self, SearchEnv};

use super::gpu_metrics::{decode, parse_bdf, power_cap_watts, power_scope, GpuMetrics, METRICS_BUFFER_BYTES};
use super::hip::Hip;
use crate::device::telemetry::{Limits, PowerScope, Sample, Telemetry};
use crate::device::{Error, Props, Result};

/// `amdsmi_status_t`: a C enum with values up to `0xFFFFFFFF`, so unsigned.
type Status = u32;
/// `amdsmi_processor_handle`: an opaque pointer.
type Handle = *mut c_void;

const AMDSMI_STATUS_SUCCESS: Status = 0;
/// `AMDSMI_INIT_AMD_GPUS`.
const INIT_AMD_GPUS: u64 = 1 << 1;
/// `amdsmi_clk_type_t`: `AMDSMI_CLK_TYPE_GFX` (= SYS) and `AMDSMI_CLK_TYPE_MEM` (`CLK_TYPE_*` in 23.4, same values).
const CLK_TYPE_GFX: c_int = 0;
const CLK_TYPE_MEM: c_int = 4;

/// `amdsmi_clk_info_t` as 24.x declares it; 23.4 names the fields `cur_clk, min_clk, max_clk, sleep_clk` with the
/// same offsets and size (32 bytes), and only `max_clk` is read.
#[repr(C)]
#[derive(Default)]
struct ClkInfo {
    clk: u32,
    min_clk: u32,
    max_clk: u32,
    clk_locked: u8,
    clk_deep_sleep: u8,
    reserved: [u32; 4],
}

/// `amdsmi_power_cap_info_t` (64 bytes in 23.4–24.7).
#[repr(C)]
#[derive(Default)]
struct PowerCapInfo {
    power_cap: u64,
    default_power_cap: u64,
    dpm_cap: u64,
    min_power_cap: u64,
    max_power_cap: u64,
    reserved: [u64; 3],
}

/// `amdsmi_version_t` (24 bytes in 23.4–24.7).
#[repr(C)]
struct Version {
    year: u32,
    major: u32,
    minor: u32,
    release: u32,
    build: *const c_char,
}

/// The library years whose ABI was checked (see the module documentation).
const CHECKED_YEARS: std::ops::RangeInclusive<u32> = 23..=24;

/// File names tried, in `$ROCM_PATH/lib`, `$HIP_PATH/lib`, `/opt/rocm/lib` and then through the loader's own path:
/// the unversioned name every ROCm 6 install has in `lib/`, then the sonames of the checked years.
const FILE_NAMES: &[&str] = &["libamd_smi.so", "libamd_smi.so.24", "libamd_smi.so.23"];

/// What to do when AMD SMI is missing.
const HINT: &str = "ROCm 6 ships libamd_smi.so in its lib folder: load the rocm module or set ROCM_PATH";

/// AMD SMI's names for its statuses (`amdsmi_status_t`, `amdsmi.h` 24.7).
fn status_name(status: Status) -> String {
    let name = match status {
        0 => "SUCCESS",
        1 => "INVAL",
        2 => "NOT_SUPPORTED",
        3 => "NOT_YET_IMPLEMENTED",
        4 => "FAIL_LOAD_MODULE",
        5 => "FAIL_LOAD_SYMBOL",
        6 => "DRM_ERROR",
        7 => "API_FAILED",
        8 => "TIMEOUT",
        9 => "RETRY",
        10 => "NO_PERM",
        11 => "INTERRUPT",
        12 => "IO",
        13 => "ADDRESS_FAULT",
        14 => "FILE_ERROR",
        15 => "OUT_OF_RESOURCES",
        16 => "INTERNAL_EXCEPTION",
        17 => "INPUT_OUT_OF_BOUNDS",
        18 => "INIT_ERROR",
        19 => "REFCOUNT_OVERFLOW",
        30 => "BUSY",
        31 => "NOT_FOUND",
        32 => "NOT_INIT",
        33 => "NO_SLOT",
        40 => "NO_DATA",
        41 => "INSUFFICIENT_SIZE",
        42 => "UNEXPECTED_SIZE",
        43 => "UNEXPECTED_DATA",
        0xFFFF_FFFE => "MAP_ERROR",
        0xFFFF_FFFF => "UNKNOWN_ERROR",
        other => return format!("AMDSMI_STATUS {other}"),
    };
    format!("AMDSMI_STATUS_{name}")
}

type InitFn = unsafe extern "C" fn(u64) -> Status;
type ShutDownFn = unsafe extern "C" fn() -> Status;
type StatusStringFn = unsafe extern "C" fn(Status, *mut *const c_char) -> Status;
type LibVersionFn = unsafe extern "C" fn(*mut Version) -> Status;
/// `amdsmi_bdf_t` is passed by value: a union of bit fields in one `uint64_t`, which the C ABI passes as a
/// `uint64_t`.
type HandleFromBdfFn = unsafe extern "C" fn(u64, *mut Handle) -> Status;
type ClockInfoFn = unsafe extern "C" fn(Handle, c_int, *mut ClkInfo) -> Status;
type PowerCapInfoFn = unsafe extern "C" fn(Handle, u32, *mut PowerCapInfo) -> Status;
type GpuMetricsFn = unsafe extern "C" fn(Handle, *mut c_void) -> Status;

/// The AMD SMI functions the suite calls (present in every release from 23.4), resolved once (the sys layer).
pub(super) struct Lib {
    /// The candidate that loaded.
    path: String,
    init: InitFn,
    shut_down: ShutDownFn,
    status_string: StatusStringFn,
    lib_version: LibVersionFn,
    handle_from_bdf: HandleFromBdfFn,
    clock_info: ClockInfoFn,
    power_cap_info: PowerCapInfoFn,
    gpu_metrics: GpuMetricsFn,
    /// Keeps the functions above mapped: the library is never unloaded.
    _library: libloading::Library,
}

impl Lib {
    /// Opens `path` and resolves every function, or says why it cannot be used.
    fn open(path: &std::path::Path) -> std::result::Result<Lib, String> {
        // SAFETY: loading runs libamd_smi's initialisers, which set up only its own state; AMD SMI is made to be
        // loaded at run time (its Python and Go bindings do so).
        let library = unsafe { libloading::Library::new(path) }.map_err(|e| loader::dlopen_reason(path, &e))?;
        macro_rules! required {
            ($name:literal) => {
                // SAFETY: the symbol is AMD SMI's function of that name, whose C prototype (amdsmi.h 23.4-24.7)
                // the target type spells out; the pointer is used only while `library` stays loaded (kept in the
                // same struct, never unloaded).
                *unsafe { library.get(concat!($name, "\0").as_bytes()) }
                    .map_err(|_| format!("loaded, but it does not export {} (not AMD SMI?)", $name))?
            };
        }
        Ok(Lib {
            path: path.display().to_string(),
            init: required!("amdsmi_init"),
            shut_down: required!("amdsmi_shut_down"),
            status_string: required!("amdsmi_status_code_to_string"),
            lib_version: required!("amdsmi_get_lib_version"),
            handle_from_bdf: required!("amdsmi_get_processor_handle_from_bdf"),
            clock_info: required!("amdsmi_get_clock_info"),
            power_cap_info: required!("amdsmi_get_power_cap_info"),
            gpu_metrics: required!("amdsmi_get_gpu_metrics_info"),
            _library: library,
        })
    }

    /// AMD SMI's text for a status.
    fn status_text(&self, status: Status) -> String {
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: the call writes a pointer to a static NUL-terminated string (or leaves null) into the live local.
        let ok = unsafe { (self.status_string)(status, &mut text) } == AMDSMI_STATUS_SUCCESS;
        if !ok || text.is_null() {
            return "no description".to_string();
        }
        // SAFETY: non-null, static and NUL-terminated, as above.
        unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
    }

    /// `api: AMDSMI_STATUS_X (n): text`.
    fn describe(&self, api: &str, status: Status) -> String {
        format!("{api}: {} ({status}): {}", status_name(status), self.status_text(status))
    }

    /// [`Error::Api`] for a failed call.
    fn api_error(&self, api: &'static str, status: Status) -> Error {
        Error::Api { api, code: i64::from(status), code_name: status_name(status), text: self.status_text(status) }
    }

    /// The library's version: (year, `year.major.minor.release`).
    fn version(&self) -> std::result::Result<(u32, String), Status> {
        let mut v = Version { year: 0, major: 0, minor: 0, release: 0, build: std::ptr::null() };
        // SAFETY: the call fills the live amdsmi_version_t (its layout is the same in every checked release); the
        // build string is not read.
        let status = unsafe { (self.lib_version)(&mut v) };
        if status != AMDSMI_STATUS_SUCCESS {
            return Err(status);
        }
        Ok((v.year, format!("{}.{}.{}.{}", v.year, v.major, v.minor, v.release)))
    }
}

/// The error for a library that could not be loaded: every candidate with its reason, on one line.
fn not_found(e: &loader::LoadError) -> Error {
    let list: Vec<String> = e.tried.iter().map(|(path, why)| format!("tried {path}: {why}")).collect();
    Error::TelemetryUnavailable { why: format!("AMD SMI not found ({HINT}); {}", list.join("; ")) }
}

fn load_from(candidates: &[std::path::PathBuf]) -> std::result::Result<Lib, loader::LoadError> {
    loader::load_first("libamd_smi (AMD SMI)", candidates, Lib::open).map(|(lib, _)| lib)
}

/// The process's AMD SMI, loaded on first use.
pub(super) fn load() -> Result<&'static Lib> {
    static LIB: OnceLock<std::result::Result<Lib, loader::LoadError>> = OnceLock::new();
    LIB.get_or_init(|| load_from(&loader::candidates(&SearchEnv::from_process(), FILE_NAMES)))
        .as_ref()
        .map_err(not_found)
}

/// The telemetry of HIP device `ordinal`: AMD SMI's, for the GPU at the PCI address HIP gives. Over the HIP-over-CUDA
/// test runtime the GPU is an NVIDIA one: not available, and no NVML in AMD SMI's place ([`test_runtime_refusal`]).
pub(super) fn open(hip: Hip, ordinal: i32, props: &Props) -> Result<Box<dyn Telemetry>> {
    if let Some(description) = hip.test_runtime() {
        return Err(test_runtime_refusal(description));
    }
    let bus_id = hip.pci_bus_id(ordinal).map_err(|e| Error::TelemetryUnavailable {
        why: format!("the GPU's PCI bus id, which AMD SMI finds it by, could not be read: {e}"),
    })?;
    Ok(Box::new(AmdSmiTelemetry::open(&bus_id, props)?))
}

/// Why a library of a year whose ABI was not checked is not read.
fn unchecked_version(version: &str, path: &str) -> Error {
    Error::TelemetryUnavailable {
        why: format!(
            "AMD SMI {version} ({path}) is not read: the layout of its GPU metrics was checked for AMD SMI 23.x and \
             24.x (ROCm 6.0 to 6.3) only (suite/src/device/amd/amdsmi.rs)"
        ),
    }
}

/// Why the HIP-over-CUDA test runtime's device has no telemetry: it has no AMD SMI, and the NVIDIA GPU under it is
/// not read through NVML in AMD SMI's place, so no record of the AMD code path mixes in NVIDIA's readings unlabelled.
pub(super) fn test_runtime_refusal(description: &str) -> Error {
    Error::TelemetryUnavailable {
        why: format!(
            "AMD SMI is not read over the test runtime ({description}): it has no AMD SMI, and its NVIDIA GPU is not \
             read through NVML in AMD SMI's place"
        ),
    }
}

/// AMD SMI initialisations held by this process. AMD SMI does not count them (`amdsmi_shut_down` ends every user's
/// handles), so the suite counts them here: initialised by the first [`Session`], shut down after the last.
static SESSIONS: Mutex<u32> = Mutex::new(0);

/// One hold on the process's AMD SMI initialisation.
struct Session {
    lib: &'static Lib,
}

impl Session {
    fn acquire(lib: &'static Lib) -> Result<Session> {
        let mut sessions = SESSIONS.lock().unwrap_or_else(PoisonError::into_inner);
        if *sessions == 0 {
            // SAFETY: plain call with a flag amdsmi_init_flags_t defines; balanced by the shut-down in `drop`.
            let status = unsafe { (lib.init)(INIT_AMD_GPUS) };
            if status != AMDSMI_STATUS_SUCCESS {
                return Err(Error::TelemetryUnavailable {
                    why: format!(
                        "AMD SMI ({}) did not start: {}",
                        lib.path,
                        lib.describe("amdsmi_init(AMDSMI_INIT_AMD_GPUS)", status)
                    ),
                });
            }
        }
        *sessions += 1;
        Ok(Session { lib })
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let mut sessions = SESSIONS.lock().unwrap_or_else(PoisonError::into_inner);
        *sessions = sessions.saturating_sub(1);
        if *sessions == 0 {
            // SAFETY: the last holder is gone, so no handle is used after this.
            let status = unsafe { (self.lib.shut_down)() };
            if status != AMDSMI_STATUS_SUCCESS {
                eprintln!("warning: {}", self.lib.describe("amdsmi_shut_down", status));
            }
        }
    }
}

/// One AMD GPU's readings through AMD SMI.
pub(super) struct AmdSmiTelemetry {
    lib: &'static Lib,
    handle: Handle,
    /// Held for every call on the handle, so this object never makes two at once (the sampler's thread and the
    /// runner's may both read).
    calls: Mutex<()>,
    limits: Limits,
    source: String,
    /// Declared last, so the handle's users are gone before AMD SMI may shut down.
    _session: Session,
}

// SAFETY: the handle is an opaque token, valid on any thread while the session lives (which `self` holds), and
// every call on it is made under `calls`.
unsafe impl Send for AmdSmiTelemetry {}
// SAFETY: as above; shared references only pass the handle to AMD SMI, one call at a time.
unsafe impl Sync for AmdSmiTelemetry {}

impl AmdSmiTelemetry {
    /// Initialises AMD SMI and finds the GPU at `pci_bus_id` (as `hipDeviceGetPCIBusId` writes it).
    pub(super) fn open(pci_bus_id: &str, props: &Props) -> Result<AmdSmiTelemetry> {
        let bdf = parse_bdf(pci_bus_id).ok_or_else(|| Error::TelemetryUnavailable {
            why: format!("HIP gave the PCI bus id {pci_bus_id:?}, not domain:bus:device.function, to find the GPU by"),
        })?;
        let lib = load()?;
        // amdsmi_get_lib_version needs the library initialised; an early return below drops the session.
        let session = Session::acquire(lib)?;
        let version = match lib.version() {
            Ok((year, text)) if CHECKED_YEARS.contains(&year) => text,
            Ok((_, text)) => return Err(unchecked_version(&text, &lib.path)),
            Err(status) => {
                return Err(Error::TelemetryUnavailable { why: lib.describe("amdsmi_get_lib_version", status) })
            }
        };
        let mut handle: Handle = std::ptr::null_mut();
        // SAFETY: AMD SMI is initialised (the session); the bdf is passed as the uint64_t its union holds, and one
        // handle is written to the live local.
        let status = unsafe { (lib.handle_from_bdf)(bdf, &mut handle) };
        if status != AMDSMI_STATUS_SUCCESS {
            return Err(Error::TelemetryUnavailable {
                why: format!(
                    "AMD SMI has no GPU at PCI bus id {pci_bus_id}: {}",
                    lib.describe("amdsmi_get_processor_handle_from_bdf", status)
                ),
            });
        }
        let mut telemetry = AmdSmiTelemetry {
            lib,
            handle,
            calls: Mutex::new(()),
            limits: Limits {
                max_sm_clock_mhz: None,
                max_mem_clock_mhz: None,
                power_limit_w: None,
                power_scope: PowerScope::Device,
            },
            source: format!("AMD SMI {version}"),
            _session: session,
        };
        let first = match telemetry.metrics() {
            Ok(m) => decode(&m),
            // Not supported, no permission, or a failure: either way this GPU has no readings for the run.
            Err(status) => {
                return Err(Error::TelemetryUnavailable {
                    why: format!("GPU {pci_bus_id}: {}", lib.describe("amdsmi_get_gpu_metrics_info", status)),
                })
            }
        };
        telemetry.limits = Limits {
            max_sm_clock_mhz: telemetry.max_clock(CLK_TYPE_GFX),
            max_mem_clock_mhz: telemetry.max_clock(CLK_TYPE_MEM),
            power_limit_w: telemetry.power_cap(),
            power_scope: power_scope(&props.name, first.power_w),
        };
        if telemetry.limits.power_scope != PowerScope::Device {
            telemetry.source = format!("{}; {}", telemetry.source, telemetry.limits.power_scope.describe());
        }
        Ok(telemetry)
    }

    /// `amdsmi_get_gpu_metrics_info` into a buffer with room for later releases' larger struct.
    fn metrics(&self) -> std::result::Result<GpuMetrics, Status> {
        // u64 elements: 8-byte aligned, as the struct's u64 fields need.
        let mut buffer = vec![0u64; METRICS_BUFFER_BYTES / 8];
        let _one_call = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        // SAFETY: the handle is live (the session holds AMD SMI initialised); the library writes at most its own
        // amdsmi_gpu_metrics_t, at most 1832 bytes in the checked releases, into the zeroed 16 KiB buffer.
        let status = unsafe { (self.lib.gpu_metrics)(self.handle, buffer.as_mut_ptr().cast::<c_void>()) };
        if status != AMDSMI_STATUS_SUCCESS {
            return Err(status);
        }
        // SAFETY: the buffer is larger than GpuMetrics and 8-byte aligned, every bit pattern is a valid GpuMetrics
        // (integers only), and its layout is the checked prefix of what the library wrote.
        Ok(unsafe { std::ptr::read(buffer.as_ptr().cast::<GpuMetrics>()) })
    }

    fn max_clock(&self, clock: c_int) -> Option<u32> {
        let mut info = ClkInfo::default();
        let _one_call = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        // SAFETY: the handle is live; `clock` is an amdsmi_clk_type_t value and the library fills the live struct.
        let status = unsafe { (self.lib.clock_info)(self.handle, clock, &mut info) };
        (status == AMDSMI_STATUS_SUCCESS && info.max_clk > 0).then_some(info.max_clk)
    }

    fn power_cap(&self) -> Option<f64> {
        let mut info = PowerCapInfo::default();
        let _one_call = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        // SAFETY: the handle is live; sensor 0 is the GPU's; the library fills the live struct.
        let status = unsafe { (self.lib.power_cap_info)(self.handle, 0, &mut info) };
        if status != AMDSMI_STATUS_SUCCESS {
            return None;
        }
        power_cap_watts(info.power_cap)
    }
}

impl Telemetry for AmdSmiTelemetry {
    fn sample(&self) -> Result<Sample> {
        let d = match self.metrics() {
            Ok(m) => decode(&m),
            Err(status) => return Err(self.lib.api_error("amdsmi_get_gpu_metrics_info", status)),
        };
        Ok(Sample {
            t_ms: 0.0,
            sm_clock_mhz: d.sm_clock_mhz,
            mem_clock_mhz: d.mem_clock_mhz,
            // The second GCD of a module reads 0, already unknown; never another GCD's figure.
            power_w: d.power_w.filter(|_| self.limits.power_scope != PowerScope::OtherGcd),
            temperature_c: d.temperature_c,
            reasons: d.reasons,
        })
    }

    fn limits(&self) -> Limits {
        self.limits.clone()
    }

    fn source(&self) -> String {
        self.source.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    /// Format fixture: the sizes `gcc` gives for these structs in the same headers as `gpu_metrics.rs`'s offsets.
    #[test]
    fn the_structs_passed_match_amd_smi_6_0_to_6_3() {
        assert_eq!((size_of::<ClkInfo>(), offset_of!(ClkInfo, max_clk)), (32, 8));
        assert_eq!(size_of::<PowerCapInfo>(), 64);
        assert_eq!(size_of::<Version>(), 24);
    }

    #[test]
    fn statuses_are_named() {
        assert_eq!(status_name(2), "AMDSMI_STATUS_NOT_SUPPORTED");
        assert_eq!(status_name(10), "AMDSMI_STATUS_NO_PERM");
        assert_eq!(status_name(0xFFFF_FFFF), "AMDSMI_STATUS_UNKNOWN_ERROR");
        assert_eq!(status_name(77), "AMDSMI_STATUS 77");
    }

    #[test]
    fn a_missing_library_is_not_available_with_every_candidate_named() {
        let env = SearchEnv { rocm_path: Some("/nonexistent-rocm".into()), hip_path: None };
        let candidates = loader::candidates(&env, FILE_NAMES);
        let Err(e) = load_from(&candidates) else { panic!("AMD SMI loaded from a nonexistent folder") };
        let text = not_found(&e).to_string();
        assert!(
            text.starts_with(
                "telemetry not available: AMD SMI not found (ROCm 6 ships libamd_smi.so in its lib folder"
            ),
            "{text}"
        );
        assert!(text.contains("tried /nonexistent-rocm/lib/libamd_smi.so: "), "{text}");
        assert!(text.contains("tried /opt/rocm/lib/libamd_smi.so.24: "), "{text}");
        assert!(text.contains("tried libamd_smi.so.23: "), "{text}");
        assert!(!text.contains('\n'), "one line, for a record: {text}");
    }

    /// Here (Debian has no AMD SMI) the process-wide search fails and says where it looked; on a ROCm 6 node it
    /// finds the library.
    #[test]
    fn the_process_search_finds_amd_smi_or_says_where_it_looked() {
        match load() {
            Ok(lib) => assert!(lib.path.contains("libamd_smi.so"), "{}", lib.path),
            Err(e) => {
                let text = e.to_string();
                assert!(matches!(e, Error::TelemetryUnavailable { .. }), "{e:?}");
                assert!(text.contains("tried /opt/rocm/lib/libamd_smi.so: "), "{text}");
                assert!(text.contains("tried libamd_smi.so: "), "{text}");
            }
        }
    }

    #[test]
    fn only_the_checked_years_are_read() {
        assert!(CHECKED_YEARS.contains(&23) && CHECKED_YEARS.contains(&24) && !CHECKED_YEARS.contains(&25));
        let text = unchecked_version("25.3.0.0", "/opt/rocm-6.4.0/lib/libamd_smi.so").to_string();
        assert!(text.starts_with("telemetry not available: AMD SMI 25.3.0.0 (/opt/rocm-6.4.0/lib/libamd_smi.so)"));
        assert!(text.contains("checked for AMD SMI 23.x and 24.x (ROCm 6.0 to 6.3) only"), "{text}");
    }

    #[test]
    fn the_test_runtime_says_it_has_no_amd_smi() {
        let description = "HIP over CUDA test runtime /x/libamdhip64.so: the HIP 6.3 API implemented over the CUDA \
                           driver API, on NVIDIA hardware (not an AMD GPU); CUDA driver libcuda.so.1, driver API 13.0";
        let text = test_runtime_refusal(description).to_string();
        assert!(text.starts_with("telemetry not available: AMD SMI is not read over the test runtime (HIP over CUDA"));
        assert!(text.contains(crate::device::amd::TEST_RUNTIME_LABEL), "{text}");
        assert!(text.ends_with("it has no AMD SMI, and its NVIDIA GPU is not read through NVML in AMD SMI's place"));
    }

    /// On GPU 0 of the AMD code path: AMD SMI's readings on an AMD GPU, sampled every 10 ms for 100 ms; over the
    /// HIP-over-CUDA test runtime, not available, saying why.
    #[test]
    #[ignore = "needs an AMD GPU, or an NVIDIA GPU with ROCM_PATH at the HIP-over-CUDA test runtime (scripts/gpu-check.sh)"]
    fn gpu_telemetry_reads_amd_smi_or_says_the_test_runtime_has_none() {
        use crate::device::telemetry::Sampler;
        let dev = crate::device::amd::open(0).expect("an AMD GPU, or the HIP-over-CUDA test runtime on an NVIDIA GPU");
        let over_cuda = Hip::load().expect("loaded").test_runtime().is_some();
        let telemetry = match dev.telemetry() {
            Ok(telemetry) => telemetry,
            Err(e) => {
                let text = e.to_string();
                assert!(over_cuda, "AMD SMI on an AMD GPU node: {text}");
                assert!(text.starts_with("telemetry not available: AMD SMI is not read over the test runtime"));
                assert!(text.contains(crate::device::amd::TEST_RUNTIME_LABEL), "{text}");
                return;
            }
        };
        assert!(!over_cuda, "the test runtime has no AMD SMI");
        assert!(telemetry.source().starts_with("AMD SMI 2"), "{}", telemetry.source());
        let limits = telemetry.limits();
        let max = limits.max_sm_clock_mhz.expect("AMD SMI reports the maximum GFX clock");
        let mut sampler = Sampler::new(telemetry, std::time::Duration::from_millis(10));
        sampler.start().expect("sampling starts");
        std::thread::sleep(std::time::Duration::from_millis(100));
        let rec = sampler.stop();
        assert_eq!(rec.failures, 0, "{:?}", rec.first_failure);
        assert!(rec.samples.len() >= 6, "{rec:?}");
        for s in &rec.samples {
            assert!(s.sm_clock_mhz.is_some_and(|mhz| mhz > 0 && mhz <= max), "{s:?}");
            assert!(s.temperature_c.is_some_and(|c| (5.0..110.0).contains(&c)), "{s:?}");
            // The second GCD of an MI250X reads no power; every other GPU reads some, below its cap.
            let cap = limits.power_limit_w.unwrap_or(f64::MAX);
            match limits.power_scope {
                PowerScope::OtherGcd => assert_eq!(s.power_w, None, "{s:?}"),
                _ => assert!(s.power_w.is_some_and(|w| w > 0.0 && w < cap), "{s:?} (cap {cap} W)"),
            }
        }
    }
}
