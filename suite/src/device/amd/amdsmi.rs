//! AMD SMI (`libamd_smi.so`, ROCm 6), loaded at run time: the AMD side of [`telemetry`](crate::device::telemetry).
//!
//! Layers as in `nvidia/nvml.rs`: hip-sys's [`AmdSmi`] is the table of raw AMD SMI functions (with the structs and
//! status names beside HIP's declarations), loaded once per process and never linked at build time; [`Lib`] turns
//! each status into a `Result` in one place (`amdsmi_call!`, with AMD SMI's own text for it,
//! `amdsmi_status_code_to_string`); [`AmdSmiTelemetry`] holds an initialised AMD SMI and one GPU's handle and
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
//! tags rocm-6.0.0, rocm-6.1.0, rocm-6.2.0, and commit 0ceca28 for 24.7) and pinned by `hip-sys/tests/rocm63_abi.rs`,
//! as are the other structs passed. Later releases append fields, so the struct is filled into a buffer of
//! [`METRICS_BUFFER_BYTES`], many times its largest known size (1832 bytes). The library's soname version is its year
//! (23, 24), which AMD raises when the ABI changes, so a library of another year is not read: its telemetry is not
//! available, with the version named.
//!
//! Units, the power of an MI250X's two GCDs and the throttle-reason table are in `gpu_metrics.rs`, which turns the
//! table into readings.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::{Mutex, OnceLock, PoisonError};

use hip_sys::amdsmi::{
    amdsmi_clk_info_t, amdsmi_power_cap_info_t, amdsmi_processor_handle, amdsmi_status_name, amdsmi_status_t,
    amdsmi_version_t, AmdSmi, AMDSMI_CLK_TYPE_GFX, AMDSMI_CLK_TYPE_MEM, AMDSMI_INIT_AMD_GPUS, AMDSMI_STATUS_SUCCESS,
};
use hip_sys::loader::{self, SearchEnv};

use super::gpu_metrics::{decode, parse_bdf, power_cap_watts, power_scope, GpuMetrics, METRICS_BUFFER_BYTES};
use super::hip::Hip;
use crate::device::telemetry::{Limits, PowerScope, Sample, Telemetry};
use crate::device::{Error, Props, Result};

type Status = amdsmi_status_t;

/// The library years whose ABI was checked (see the module documentation).
const CHECKED_YEARS: std::ops::RangeInclusive<u32> = 23..=24;

/// File names tried, in `$ROCM_PATH/lib`, `$HIP_PATH/lib`, `/opt/rocm/lib` and then through the loader's own path:
/// the unversioned name every ROCm 6 install has in `lib/`, then the sonames of the checked years.
const FILE_NAMES: &[&str] = &["libamd_smi.so", "libamd_smi.so.24", "libamd_smi.so.23"];

/// What to do when AMD SMI is missing.
const HINT: &str = "ROCm 6 ships libamd_smi.so in its lib folder: load the rocm module or set ROCM_PATH";

/// AMD SMI's name for a status (hip-sys's table), or its number for one no checked release defines.
fn status_name(status: Status) -> String {
    amdsmi_status_name(status).map_or_else(|| format!("AMDSMI_STATUS {status}"), str::to_string)
}

/// A failed AMD SMI call: the function and its status.
#[derive(Debug, Clone, Copy)]
struct Failure {
    api: &'static str,
    status: Status,
}

/// Calls the AMD SMI function `$api` of the loaded table with the arguments, naming it once: the one place an AMD
/// SMI status becomes a `Result` (its error the [`Failure`], described by [`Lib::describe`]). Used inside an `unsafe`
/// block whose `SAFETY:` comment covers the arguments.
macro_rules! amdsmi_call {
    ($lib:expr, $api:ident($($arg:expr),* $(,)?)) => {{
        let status = ($lib.raw.$api)($($arg),*);
        if status == AMDSMI_STATUS_SUCCESS {
            Ok(())
        } else {
            Err(Failure { api: stringify!($api), status })
        }
    }};
}

/// The process's AMD SMI (hip-sys's table of its functions) with the result layer over it.
pub(super) struct Lib {
    /// The candidate that loaded, for messages.
    path: String,
    raw: AmdSmi,
}

impl Lib {
    /// AMD SMI's text for a status.
    fn status_text(&self, status: Status) -> String {
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: the call writes a pointer to a static NUL-terminated string (or leaves null) into the live local.
        if unsafe { amdsmi_call!(self, amdsmi_status_code_to_string(status, &mut text)) }.is_err() || text.is_null() {
            return "no description".to_string();
        }
        // SAFETY: non-null, static and NUL-terminated, as above.
        unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
    }

    /// `api: AMDSMI_STATUS_X (n): text`.
    fn describe(&self, failure: Failure) -> String {
        let Failure { api, status } = failure;
        format!("{api}: {} ({status}): {}", status_name(status), self.status_text(status))
    }

    /// [`Error::Api`] for a failed call.
    fn api_error(&self, failure: Failure) -> Error {
        let Failure { api, status } = failure;
        Error::Api { api, code: i64::from(status), code_name: status_name(status), text: self.status_text(status) }
    }

    /// The library's version: (year, `year.major.minor.release`).
    fn version(&self) -> std::result::Result<(u32, String), Failure> {
        let mut v = amdsmi_version_t { year: 0, major: 0, minor: 0, release: 0, build: std::ptr::null() };
        // SAFETY: the call fills the live amdsmi_version_t (its layout is the same in every checked release); the
        // build string is not read.
        unsafe { amdsmi_call!(self, amdsmi_get_lib_version(&mut v)) }?;
        Ok((v.year, format!("{}.{}.{}.{}", v.year, v.major, v.minor, v.release)))
    }
}

/// The error for a library that could not be loaded: every candidate with its reason, on one line.
fn not_found(e: &loader::LoadError) -> Error {
    let list: Vec<String> = e.tried.iter().map(|(path, why)| format!("tried {path}: {why}")).collect();
    Error::TelemetryUnavailable { why: format!("AMD SMI not found ({HINT}); {}", list.join("; ")) }
}

fn load_from(candidates: &[std::path::PathBuf]) -> std::result::Result<Lib, loader::LoadError> {
    let open = |path: &std::path::Path| AmdSmi::open(path).map(|raw| Lib { path: path.display().to_string(), raw });
    loader::load_first("libamd_smi (AMD SMI)", candidates, open).map(|(lib, _)| lib)
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
            if let Err(failure) = unsafe { amdsmi_call!(lib, amdsmi_init(AMDSMI_INIT_AMD_GPUS)) } {
                return Err(Error::TelemetryUnavailable {
                    why: format!("AMD SMI ({}) did not start: {}", lib.path, lib.describe(failure)),
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
            if let Err(failure) = unsafe { amdsmi_call!(self.lib, amdsmi_shut_down()) } {
                eprintln!("warning: {}", self.lib.describe(failure));
            }
        }
    }
}

/// One AMD GPU's readings through AMD SMI.
pub(super) struct AmdSmiTelemetry {
    lib: &'static Lib,
    handle: amdsmi_processor_handle,
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
            Err(failure) => return Err(Error::TelemetryUnavailable { why: lib.describe(failure) }),
        };
        let mut handle: amdsmi_processor_handle = std::ptr::null_mut();
        // SAFETY: AMD SMI is initialised (the session); the bdf is passed as the uint64_t its union holds, and one
        // handle is written to the live local.
        if let Err(failure) = unsafe { amdsmi_call!(lib, amdsmi_get_processor_handle_from_bdf(bdf, &mut handle)) } {
            return Err(Error::TelemetryUnavailable {
                why: format!("AMD SMI has no GPU at PCI bus id {pci_bus_id}: {}", lib.describe(failure)),
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
            Err(failure) => {
                return Err(Error::TelemetryUnavailable { why: format!("GPU {pci_bus_id}: {}", lib.describe(failure)) })
            }
        };
        telemetry.limits = Limits {
            max_sm_clock_mhz: telemetry.max_clock(AMDSMI_CLK_TYPE_GFX),
            max_mem_clock_mhz: telemetry.max_clock(AMDSMI_CLK_TYPE_MEM),
            power_limit_w: telemetry.power_cap(),
            power_scope: power_scope(&props.name, first.power_w),
        };
        if telemetry.limits.power_scope != PowerScope::Device {
            telemetry.source = format!("{}; {}", telemetry.source, telemetry.limits.power_scope.describe());
        }
        Ok(telemetry)
    }

    /// `amdsmi_get_gpu_metrics_info` into a buffer with room for later releases' larger struct.
    fn metrics(&self) -> std::result::Result<GpuMetrics, Failure> {
        // u64 elements: 8-byte aligned, as the struct's u64 fields need.
        let mut buffer = vec![0u64; METRICS_BUFFER_BYTES / 8];
        let _one_call = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        // SAFETY: the handle is live (the session holds AMD SMI initialised); the library writes at most its own
        // amdsmi_gpu_metrics_t, at most 1832 bytes in the checked releases, into the zeroed 16 KiB buffer.
        unsafe {
            amdsmi_call!(self.lib, amdsmi_get_gpu_metrics_info(self.handle, buffer.as_mut_ptr().cast::<c_void>()))
        }?;
        // SAFETY: the buffer is larger than GpuMetrics and 8-byte aligned, every bit pattern is a valid GpuMetrics
        // (integers only), and its layout is the checked prefix of what the library wrote.
        Ok(unsafe { std::ptr::read(buffer.as_ptr().cast::<GpuMetrics>()) })
    }

    fn max_clock(&self, clock: c_int) -> Option<u32> {
        let mut info = amdsmi_clk_info_t::default();
        let _one_call = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        // SAFETY: the handle is live; `clock` is an amdsmi_clk_type_t value and the library fills the live struct.
        let read = unsafe { amdsmi_call!(self.lib, amdsmi_get_clock_info(self.handle, clock, &mut info)) };
        (read.is_ok() && info.max_clk > 0).then_some(info.max_clk)
    }

    fn power_cap(&self) -> Option<f64> {
        let mut info = amdsmi_power_cap_info_t::default();
        let _one_call = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        // SAFETY: the handle is live; sensor 0 is the GPU's; the library fills the live struct.
        unsafe { amdsmi_call!(self.lib, amdsmi_get_power_cap_info(self.handle, 0, &mut info)) }.ok()?;
        power_cap_watts(info.power_cap)
    }
}

impl Telemetry for AmdSmiTelemetry {
    fn sample(&self) -> Result<Sample> {
        let d = match self.metrics() {
            Ok(m) => decode(&m),
            Err(failure) => return Err(self.lib.api_error(failure)),
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
