//! NVML (`libnvidia-ml.so.1`, shipped with the NVIDIA driver), loaded at run time: the NVIDIA side of
//! [`telemetry`](crate::device::telemetry).
//!
//! Three layers in one file, after cudarc: [`Lib`] is the table of raw NVML functions, loaded once per process and
//! never linked at build time; its methods and `NvmlTelemetry`'s small readers (`clock`, `uint`, `temperature`,
//! `reasons`) turn each return code into a `Result`, an error carrying NVML's own name and text for the code
//! (`nvmlErrorString`); [`NvmlTelemetry`] owns an initialised NVML and one device handle and implements [`Telemetry`].
//!
//! The device is found by its PCI bus id, which the CUDA driver gives (`cuDeviceGetPCIBusId`, `nvidia/mod.rs`):
//! NVML numbers devices its own way and ignores `CUDA_VISIBLE_DEVICES`, so a CUDA ordinal is not an NVML index.
//!
//! Units, from `nvml.h` (CUDA 13.0): clocks in MHz; power usage and the enforced power limit in mW (power "averaged
//! over 1 sec" on Ampere and later, except GA100); temperature in °C.
//!
//! # Throttle reasons
//! `nvmlDeviceGetCurrentClocksEventReasons` (the newer name, preferred when exported) or
//! `nvmlDeviceGetCurrentClocksThrottleReasons` (deprecated in CUDA 13.0, still exported) returns a 64-bit mask:
//!
//! | NVML bit | name | reasons |
//! |---|---|---|
//! | `0x001` | GpuIdle | idle |
//! | `0x002` | ApplicationsClocksSetting | app_clocks |
//! | `0x004` | SwPowerCap | power_cap |
//! | `0x008` | HwSlowdown | hw_slowdown |
//! | `0x010` | SyncBoost | sync_boost |
//! | `0x020` | SwThermalSlowdown | thermal |
//! | `0x040` | HwThermalSlowdown | thermal + hw_slowdown |
//! | `0x080` | HwPowerBrakeSlowdown | hw_slowdown |
//! | `0x100` | DisplayClockSetting | other |
//! | any other bit | (unknown to this suite) | other |
//!
//! HwThermalSlowdown counts as both thermal (its cause) and hardware slowdown (its mechanism): NVML sets HwSlowdown
//! with it, and says HwSlowdown may mean "temperature being too high". The power brake is an external signal (the
//! system's power supply) that forces a hardware slowdown, so it is not the GPU's own power cap.
//!
//! # When NVML cannot be used
//! A missing library, a library without the functions named in [`Lib`], a failed `nvmlInit_v2` (no driver, no
//! permission), or no NVML device at the bus id: [`Error::TelemetryUnavailable`] saying which, never a panic. A
//! quantity NVML answers with `NVML_ERROR_NOT_SUPPORTED` or `NVML_ERROR_NO_PERMISSION` when opened is left out of
//! every sample (and named in [`Telemetry::source`]); when every one is, telemetry is unavailable.

use std::ffi::{c_char, c_int, c_uint, c_ulonglong, c_void, CStr, CString};
use std::sync::OnceLock;

use crate::device::telemetry::{Limits, PowerScope, Reason, Reasons, Sample, Telemetry};
use crate::device::{Error, Result};

/// `nvmlReturn_t`, a C enum.
type Return = c_int;
/// `nvmlDevice_t`: an opaque `struct nvmlDevice_st*`.
type Device = *mut c_void;

const NVML_SUCCESS: Return = 0;
const NVML_ERROR_NOT_SUPPORTED: Return = 3;
const NVML_ERROR_NO_PERMISSION: Return = 4;
const NVML_ERROR_FUNCTION_NOT_FOUND: Return = 13;

/// `nvmlClockType_t`.
const NVML_CLOCK_GRAPHICS: c_int = 0;
const NVML_CLOCK_SM: c_int = 1;
const NVML_CLOCK_MEM: c_int = 2;
/// `nvmlTemperatureSensors_t`: the GPU die.
const NVML_TEMPERATURE_GPU: c_int = 0;

/// `NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE`.
const VERSION_BUFFER: usize = 80;

/// `nvmlTemperature_v1_t`.
#[repr(C)]
struct TemperatureV1 {
    version: c_uint,
    sensor_type: c_int,
    temperature: c_int,
}

/// `nvmlTemperature_v1`: `NVML_STRUCT_VERSION(Temperature, 1)` = the struct's size | (1 << 24).
const TEMPERATURE_V1: c_uint = std::mem::size_of::<TemperatureV1>() as c_uint | (1 << 24);

/// NVML's names for the return codes the suite may meet (`nvmlReturn_t` in `nvml.h`, CUDA 13.0).
fn return_name(code: Return) -> String {
    let name = match code {
        0 => "NVML_SUCCESS",
        1 => "NVML_ERROR_UNINITIALIZED",
        2 => "NVML_ERROR_INVALID_ARGUMENT",
        3 => "NVML_ERROR_NOT_SUPPORTED",
        4 => "NVML_ERROR_NO_PERMISSION",
        6 => "NVML_ERROR_NOT_FOUND",
        9 => "NVML_ERROR_DRIVER_NOT_LOADED",
        12 => "NVML_ERROR_LIBRARY_NOT_FOUND",
        13 => "NVML_ERROR_FUNCTION_NOT_FOUND",
        15 => "NVML_ERROR_GPU_IS_LOST",
        999 => "NVML_ERROR_UNKNOWN",
        other => return format!("NVML error {other}"),
    };
    name.to_string()
}

/// NVML clocks-event reason bits and the reasons each maps to (the table in the module documentation).
pub(super) const REASON_BITS: &[(u64, &str, &[Reason])] = &[
    (0x001, "GpuIdle", &[Reason::Idle]),
    (0x002, "ApplicationsClocksSetting", &[Reason::AppClocks]),
    (0x004, "SwPowerCap", &[Reason::PowerCap]),
    (0x008, "HwSlowdown", &[Reason::HwSlowdown]),
    (0x010, "SyncBoost", &[Reason::SyncBoost]),
    (0x020, "SwThermalSlowdown", &[Reason::Thermal]),
    (0x040, "HwThermalSlowdown", &[Reason::Thermal, Reason::HwSlowdown]),
    (0x080, "HwPowerBrakeSlowdown", &[Reason::HwSlowdown]),
    (0x100, "DisplayClockSetting", &[Reason::Other]),
];

/// The reasons an NVML clocks-event mask holds; a bit not in [`REASON_BITS`] is [`Reason::Other`].
pub(super) fn reasons_from_bits(mask: u64) -> Reasons {
    let mut known = 0u64;
    let mut set = Reasons::NONE;
    for &(bit, _, reasons) in REASON_BITS {
        known |= bit;
        if mask & bit != 0 {
            set = set.union(Reasons::of(reasons));
        }
    }
    if mask & !known != 0 {
        set = set.with(Reason::Other);
    }
    set
}

type InitFn = unsafe extern "C" fn() -> Return;
type ErrorStringFn = unsafe extern "C" fn(Return) -> *const c_char;
type VersionFn = unsafe extern "C" fn(*mut c_char, c_uint) -> Return;
type HandleByPciFn = unsafe extern "C" fn(*const c_char, *mut Device) -> Return;
type ClockFn = unsafe extern "C" fn(Device, c_int, *mut c_uint) -> Return;
type UintFn = unsafe extern "C" fn(Device, *mut c_uint) -> Return;
type TemperatureFn = unsafe extern "C" fn(Device, c_int, *mut c_uint) -> Return;
type TemperatureVFn = unsafe extern "C" fn(Device, *mut TemperatureV1) -> Return;
type ReasonsFn = unsafe extern "C" fn(Device, *mut c_ulonglong) -> Return;

/// An NVML function as resolved from the library, with the name it was resolved by: a message about a call takes
/// the name from here, so each function is named once, where [`Lib::open`] resolves it.
#[derive(Debug, Clone, Copy)]
struct Api<F> {
    name: &'static str,
    f: F,
}

/// A failed NVML call: the function, the clock domain it was asked for (where it takes one) and its return code.
#[derive(Debug, Clone, Copy)]
struct Failed {
    api: &'static str,
    domain: Option<&'static str>,
    code: Return,
}

impl<F> Api<F> {
    /// `code`, as this function returned it, as a result: a failure names the function (and `domain`).
    fn check(&self, domain: Option<&'static str>, code: Return) -> std::result::Result<(), Failed> {
        if code == NVML_SUCCESS {
            Ok(())
        } else {
            Err(Failed { api: self.name, domain, code })
        }
    }
}

/// NVML's name for a clock domain (`nvmlClockType_t`), for messages.
fn domain_name(domain: c_int) -> &'static str {
    match domain {
        NVML_CLOCK_GRAPHICS => "GRAPHICS",
        NVML_CLOCK_SM => "SM",
        NVML_CLOCK_MEM => "MEM",
        _ => "another domain",
    }
}

/// The NVML functions the suite calls, resolved once from the loaded library (the sys layer). The versioned names
/// (`_v2`) are the ones `nvml.h` maps the plain names to.
pub(super) struct Lib {
    /// The candidate that loaded.
    path: String,
    init: Api<InitFn>,
    shutdown: Api<InitFn>,
    error_string: ErrorStringFn,
    handle_by_pci_bus_id: Api<HandleByPciFn>,
    clock_info: Api<ClockFn>,
    max_clock_info: Api<ClockFn>,
    power_usage: Api<UintFn>,
    enforced_power_limit: Api<UintFn>,
    nvml_version: Option<VersionFn>,
    temperature_v: Option<Api<TemperatureVFn>>,
    temperature: Option<Api<TemperatureFn>>,
    clocks_event_reasons: Option<Api<ReasonsFn>>,
    clocks_throttle_reasons: Option<Api<ReasonsFn>>,
    /// Keeps the functions above mapped: the library is never unloaded.
    _library: libloading::Library,
}

/// File names tried, each in `$CUDA_PATH/lib64`, `$CUDA_PATH/lib`, `/usr/local/cuda/lib64` and then through the
/// system loader's own path, where the driver installs it. Only the versioned name: the unversioned
/// `libnvidia-ml.so` may be the CUDA toolkit's link stub, which loads but answers nothing.
const FILE_NAMES: &[&str] = &["libnvidia-ml.so.1"];

/// What to do when NVML is missing.
const HINT: &str = "libnvidia-ml.so.1 comes with the NVIDIA driver: install the driver or add its folder to \
                    LD_LIBRARY_PATH";

impl Lib {
    /// Opens `path` and resolves every function, or says why it cannot be used.
    fn open(path: &str) -> std::result::Result<Lib, String> {
        // SAFETY: loading runs libnvidia-ml's initialisers, which set up only its own state; NVML is made to be
        // loaded at run time (nvidia-smi and DCGM do so).
        let library = unsafe { libloading::Library::new(path) }
            .map_err(|e| e.to_string().trim_start_matches(&format!("{path}: ")).to_string())?;
        macro_rules! optional_fn {
            ($name:ident) => {
                // SAFETY: the symbol is NVML's function of that name, whose C prototype (nvml.h, CUDA 13.0) the
                // target type spells out; the pointer is used only while `library` stays loaded (it is kept in
                // the same struct and never unloaded).
                unsafe { library.get(concat!(stringify!($name), "\0").as_bytes()) }.ok().map(|f| *f)
            };
        }
        macro_rules! required_fn {
            ($name:ident) => {
                optional_fn!($name)
                    .ok_or_else(|| format!("loaded, but it does not export {} (not NVML?)", stringify!($name)))?
            };
        }
        // Each function as an `Api`: its pointer with the name it was resolved by.
        macro_rules! required {
            ($name:ident) => {
                Api { name: stringify!($name), f: required_fn!($name) }
            };
        }
        macro_rules! optional {
            ($name:ident) => {
                optional_fn!($name).map(|f| Api { name: stringify!($name), f })
            };
        }
        Ok(Lib {
            path: path.to_string(),
            init: required!(nvmlInit_v2),
            shutdown: required!(nvmlShutdown),
            error_string: required_fn!(nvmlErrorString),
            handle_by_pci_bus_id: required!(nvmlDeviceGetHandleByPciBusId_v2),
            clock_info: required!(nvmlDeviceGetClockInfo),
            max_clock_info: required!(nvmlDeviceGetMaxClockInfo),
            power_usage: required!(nvmlDeviceGetPowerUsage),
            enforced_power_limit: required!(nvmlDeviceGetEnforcedPowerLimit),
            nvml_version: optional_fn!(nvmlSystemGetNVMLVersion),
            temperature_v: optional!(nvmlDeviceGetTemperatureV),
            temperature: optional!(nvmlDeviceGetTemperature),
            clocks_event_reasons: optional!(nvmlDeviceGetCurrentClocksEventReasons),
            clocks_throttle_reasons: optional!(nvmlDeviceGetCurrentClocksThrottleReasons),
            _library: library,
        })
    }

    /// NVML's text for a return code.
    fn error_text(&self, code: Return) -> String {
        // SAFETY: nvmlErrorString takes any code and returns a pointer to a static NUL-terminated string; null is
        // checked below.
        let text = unsafe { (self.error_string)(code) };
        if text.is_null() {
            return "no description".to_string();
        }
        // SAFETY: non-null, static and NUL-terminated, as above.
        unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
    }

    /// [`Error::Api`] for a failed call, with NVML's name and text for the code.
    fn api_error(&self, failed: Failed) -> Error {
        let Failed { api, domain, code } = failed;
        let text = match domain {
            Some(domain) => format!("{} (clock domain {domain})", self.error_text(code)),
            None => self.error_text(code),
        };
        Error::Api { api, code: i64::from(code), code_name: return_name(code), text }
    }

    /// `api(DOMAIN): CODE (n): text`, for messages that collect several failures.
    fn describe(&self, failed: Failed) -> String {
        let Failed { api, domain, code } = failed;
        let domain = domain.map(|d| format!("({d})")).unwrap_or_default();
        format!("{api}{domain}: {} ({code}): {}", return_name(code), self.error_text(code))
    }

    /// The NVML version, e.g. `13.580.82`, where the library says.
    fn version(&self) -> Option<String> {
        let f = self.nvml_version?;
        let mut buf = [0 as c_char; VERSION_BUFFER];
        // SAFETY: NVML writes a NUL-terminated string of at most `length` bytes into the live buffer.
        let code = unsafe { f(buf.as_mut_ptr(), VERSION_BUFFER as c_uint) };
        (code == NVML_SUCCESS).then(|| c_string(&buf))
    }
}

/// The text of a NUL-terminated C string in `buf` (all of `buf` if no NUL).
pub(super) fn c_string(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Tries each candidate in order; every failure is kept with its reason.
fn load_from(candidates: &[String]) -> std::result::Result<Lib, Vec<(String, String)>> {
    let mut tried = Vec::new();
    for path in candidates {
        match Lib::open(path) {
            Ok(lib) => return Ok(lib),
            Err(why) => tried.push((path.clone(), why)),
        }
    }
    Err(tried)
}

/// The error for a library that could not be loaded: every candidate with its reason, on one line.
fn not_found(tried: &[(String, String)]) -> Error {
    let list: Vec<String> = tried.iter().map(|(path, why)| format!("tried {path}: {why}")).collect();
    Error::TelemetryUnavailable { why: format!("NVML not found ({HINT}); {}", list.join("; ")) }
}

/// The process's NVML, loaded on first use.
pub(super) fn load() -> Result<&'static Lib> {
    static LIB: OnceLock<std::result::Result<Lib, Vec<(String, String)>>> = OnceLock::new();
    let cuda_path = std::env::var("CUDA_PATH").ok();
    LIB.get_or_init(|| load_from(&super::cuda::candidates(cuda_path.as_deref(), FILE_NAMES)))
        .as_ref()
        .map_err(|tried| not_found(tried))
}

/// Which function reads the temperature.
#[derive(Debug, Clone, Copy)]
enum TemperatureSource {
    /// `nvmlDeviceGetTemperatureV` (the CUDA 13 name).
    Versioned(Api<TemperatureVFn>),
    /// `nvmlDeviceGetTemperature` (deprecated in CUDA 13.0, still exported).
    Legacy(Api<TemperatureFn>),
}

/// What each reading reads: decided once when the telemetry is opened.
#[derive(Debug, Clone, Copy)]
struct Plan {
    /// The clock domain read as the SM clock: `NVML_CLOCK_SM`, or `NVML_CLOCK_GRAPHICS` where SM is not reported.
    sm_clock: Option<c_int>,
    mem_clock: bool,
    power: bool,
    temperature: Option<TemperatureSource>,
    reasons: Option<Api<ReasonsFn>>,
}

/// One NVIDIA GPU's readings through NVML. NVML is initialised while it lives (NVML counts initialisations, so
/// other users in the process are not affected by its `nvmlShutdown`).
pub(super) struct NvmlTelemetry {
    lib: &'static Lib,
    device: Device,
    plan: Plan,
    limits: Limits,
    source: String,
}

// SAFETY: NVML is thread-safe, so calls may be made from several threads at once (NVML API reference, "Thread
// Safety"); the device handle is an opaque token NVML owns, valid until nvmlShutdown, which only `Drop` calls.
unsafe impl Send for NvmlTelemetry {}
// SAFETY: as above; shared references only pass the handle to NVML.
unsafe impl Sync for NvmlTelemetry {}

/// Whether a probe of `api` answered: `Ok(true)` if so; `Ok(false)`, noted in `missing`, if NVML does not support or
/// allow it here; the error otherwise.
fn keep(lib: &Lib, missing: &mut Vec<String>, probe: std::result::Result<(), Failed>) -> Result<bool> {
    match probe {
        Ok(()) => Ok(true),
        Err(failed) if not_available(failed.code) => {
            missing.push(lib.describe(failed));
            Ok(false)
        }
        Err(failed) => Err(lib.api_error(failed)),
    }
}

/// Whether a code means "this reading is not available here" rather than a failure.
fn not_available(code: Return) -> bool {
    matches!(code, NVML_ERROR_NOT_SUPPORTED | NVML_ERROR_NO_PERMISSION | NVML_ERROR_FUNCTION_NOT_FOUND)
}

impl NvmlTelemetry {
    /// Initialises NVML and finds the GPU at `pci_bus_id` (`dddd:bb:dd.f`, as `cuDeviceGetPCIBusId` writes it).
    pub(super) fn open(pci_bus_id: &str) -> Result<NvmlTelemetry> {
        let lib = load()?;
        // SAFETY: nvmlInit_v2 takes nothing; NVML counts initialisations, and each success is paired with the
        // nvmlShutdown in `Drop` (or just below on failure).
        let code = unsafe { (lib.init.f)() };
        if let Err(failed) = lib.init.check(None, code) {
            return Err(Error::TelemetryUnavailable {
                why: format!("NVML ({}) did not start: {}", lib.path, lib.describe(failed)),
            });
        }
        // From here `telemetry` owns the initialisation: every early return drops it, which shuts NVML down.
        let mut telemetry = NvmlTelemetry {
            lib,
            device: std::ptr::null_mut(),
            plan: Plan { sm_clock: None, mem_clock: false, power: false, temperature: None, reasons: None },
            limits: Limits {
                max_sm_clock_mhz: None,
                max_mem_clock_mhz: None,
                power_limit_w: None,
                power_scope: PowerScope::Device,
            },
            source: String::new(),
        };
        let bus = CString::new(pci_bus_id).map_err(|_| Error::TelemetryUnavailable {
            why: format!("the PCI bus id {pci_bus_id:?} holds a NUL byte"),
        })?;
        let mut device: Device = std::ptr::null_mut();
        // SAFETY: `bus` is a live NUL-terminated string and NVML writes one handle to the live local.
        let code = unsafe { (lib.handle_by_pci_bus_id.f)(bus.as_ptr(), &mut device) };
        if let Err(failed) = lib.handle_by_pci_bus_id.check(None, code) {
            return Err(Error::TelemetryUnavailable {
                why: format!("NVML has no GPU at PCI bus id {pci_bus_id}: {}", lib.describe(failed)),
            });
        }
        telemetry.device = device;
        let mut missing = Vec::new();
        // Any failure while opening leaves the run without readings, never without its rows.
        telemetry.plan = telemetry
            .plan_readings(&mut missing)
            .map_err(|e| Error::TelemetryUnavailable { why: format!("NVML could not read GPU {pci_bus_id}: {e}") })?;
        let p = telemetry.plan;
        if p.sm_clock.is_none() && !p.mem_clock && !p.power && p.temperature.is_none() && p.reasons.is_none() {
            return Err(Error::TelemetryUnavailable {
                why: format!("NVML answers none of its readings for GPU {pci_bus_id}: {}", missing.join("; ")),
            });
        }
        telemetry.limits = telemetry.read_limits();
        let version = lib.version().unwrap_or_else(|| "(version unknown)".into());
        telemetry.source = if missing.is_empty() {
            format!("NVML {version}")
        } else {
            format!("NVML {version}; not read: {}", missing.join("; "))
        };
        Ok(telemetry)
    }

    /// Calls `api` through `call` with the device handle and a value for NVML to write (of `domain`, where it takes
    /// one), and returns what it wrote.
    fn read<T: Default, F: Copy>(
        &self,
        api: Api<F>,
        domain: Option<&'static str>,
        call: impl FnOnce(F, Device, *mut T) -> Return,
    ) -> std::result::Result<T, Failed> {
        let mut value = T::default();
        api.check(domain, call(api.f, self.device, &mut value))?;
        Ok(value)
    }

    fn clock(&self, api: Api<ClockFn>, domain: c_int) -> std::result::Result<c_uint, Failed> {
        // SAFETY: the handle is live (NVML initialised for as long as `self`), `domain` is an nvmlClockType_t value
        // and NVML writes one unsigned int.
        self.read(api, Some(domain_name(domain)), |f, device, out| unsafe { f(device, domain, out) })
    }

    fn uint(&self, api: Api<UintFn>) -> std::result::Result<c_uint, Failed> {
        // SAFETY: the handle is live and NVML writes one unsigned int.
        self.read(api, None, |f, device, out| unsafe { f(device, out) })
    }

    fn temperature(&self, source: TemperatureSource) -> std::result::Result<f64, Failed> {
        match source {
            TemperatureSource::Versioned(api) => {
                let mut t =
                    TemperatureV1 { version: TEMPERATURE_V1, sensor_type: NVML_TEMPERATURE_GPU, temperature: 0 };
                // SAFETY: the handle is live; `t` is an nvmlTemperature_v1_t with its version and sensor set, which
                // NVML fills in place.
                api.check(None, unsafe { (api.f)(self.device, &mut t) })?;
                Ok(f64::from(t.temperature))
            }
            TemperatureSource::Legacy(api) => {
                // SAFETY: the handle is live, the sensor is NVML_TEMPERATURE_GPU, NVML writes one unsigned int.
                self.read(api, None, |f, device, out| unsafe { f(device, NVML_TEMPERATURE_GPU, out) }).map(f64::from)
            }
        }
    }

    fn reasons(&self, api: Api<ReasonsFn>) -> std::result::Result<u64, Failed> {
        // SAFETY: the handle is live and NVML writes one unsigned long long.
        self.read(api, None, |f, device, out| unsafe { f(device, out) })
    }

    /// Tries each reading once and keeps those NVML answers. One it does not support or allow is noted in
    /// `missing`; any other failure fails the open.
    fn plan_readings(&self, missing: &mut Vec<String>) -> Result<Plan> {
        let lib = self.lib;
        let sm_clock = if keep(lib, missing, self.clock(lib.clock_info, NVML_CLOCK_SM).map(drop))? {
            Some(NVML_CLOCK_SM)
        } else if keep(lib, missing, self.clock(lib.clock_info, NVML_CLOCK_GRAPHICS).map(drop))? {
            Some(NVML_CLOCK_GRAPHICS)
        } else {
            None
        };
        let mem_clock = keep(lib, missing, self.clock(lib.clock_info, NVML_CLOCK_MEM).map(drop))?;
        let power = keep(lib, missing, self.uint(lib.power_usage).map(drop))?;
        // The newer function where it answers; otherwise the deprecated one, whose failure is the one reported.
        let versioned = lib.temperature_v.map(TemperatureSource::Versioned);
        let mut temperature = versioned.filter(|&source| self.temperature(source).is_ok());
        if temperature.is_none() {
            match lib.temperature.map(TemperatureSource::Legacy) {
                Some(legacy) => {
                    if keep(lib, missing, self.temperature(legacy).map(drop))? {
                        temperature = Some(legacy);
                    }
                }
                None => missing.push(
                    "temperature: nvmlDeviceGetTemperatureV did not answer, nvmlDeviceGetTemperature is not exported"
                        .into(),
                ),
            }
        }
        let mut reasons = lib.clocks_event_reasons.filter(|&api| self.reasons(api).is_ok());
        if reasons.is_none() {
            match lib.clocks_throttle_reasons {
                Some(api) => {
                    if keep(lib, missing, self.reasons(api).map(drop))? {
                        reasons = Some(api);
                    }
                }
                None => missing.push(
                    "throttle reasons: nvmlDeviceGetCurrentClocksEventReasons did not answer, \
                     nvmlDeviceGetCurrentClocksThrottleReasons is not exported"
                        .into(),
                ),
            }
        }
        Ok(Plan { sm_clock, mem_clock, power, temperature, reasons })
    }

    /// Maximum clocks and the enforced power limit; whatever NVML does not answer is `None`.
    fn read_limits(&self) -> Limits {
        let lib = self.lib;
        let max = |domain| self.clock(lib.max_clock_info, domain).ok().filter(|&mhz| mhz > 0);
        Limits {
            max_sm_clock_mhz: self.plan.sm_clock.and_then(max),
            max_mem_clock_mhz: max(NVML_CLOCK_MEM),
            power_limit_w: self.uint(lib.enforced_power_limit).ok().filter(|&mw| mw > 0).map(milliwatts_to_watts),
            power_scope: PowerScope::Device,
        }
    }

    /// A reading's value: `None` when NVML stopped supporting it, an error when the call failed.
    fn value<T>(&self, result: std::result::Result<T, Failed>) -> Result<Option<T>> {
        match result {
            Ok(v) => Ok(Some(v)),
            Err(failed) if not_available(failed.code) => Ok(None),
            Err(failed) => Err(self.lib.api_error(failed)),
        }
    }
}

/// NVML reports power in mW.
fn milliwatts_to_watts(mw: c_uint) -> f64 {
    f64::from(mw) / 1000.0
}

impl Telemetry for NvmlTelemetry {
    fn sample(&self) -> Result<Sample> {
        let (lib, plan) = (self.lib, self.plan);
        let mut sample = Sample::empty();
        if let Some(domain) = plan.sm_clock {
            sample.sm_clock_mhz = self.value(self.clock(lib.clock_info, domain))?;
        }
        if plan.mem_clock {
            sample.mem_clock_mhz = self.value(self.clock(lib.clock_info, NVML_CLOCK_MEM))?;
        }
        if plan.power {
            let mw = self.value(self.uint(lib.power_usage))?;
            sample.power_w = mw.map(milliwatts_to_watts);
        }
        if let Some(source) = plan.temperature {
            sample.temperature_c = self.value(self.temperature(source))?;
        }
        if let Some(api) = plan.reasons {
            sample.reasons = self.value(self.reasons(api))?.map(reasons_from_bits);
        }
        Ok(sample)
    }

    fn limits(&self) -> Limits {
        self.limits.clone()
    }

    fn source(&self) -> String {
        self.source.clone()
    }
}

impl Drop for NvmlTelemetry {
    fn drop(&mut self) {
        let shutdown = self.lib.shutdown;
        // SAFETY: balances the successful nvmlInit_v2 in `open`; the handle is not used after this.
        let code = unsafe { (shutdown.f)() };
        if let Err(failed) = shutdown.check(None, code) {
            eprintln!("warning: {}", self.lib.describe(failed));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_nvml_reason_bit_maps_as_the_table_says() {
        let cases: [(u64, &str); 13] = [
            (0x0, "none"),
            (0x1, "idle"),
            (0x2, "app_clocks"),
            (0x4, "power_cap"),
            (0x8, "hw_slowdown"),
            (0x10, "sync_boost"),
            (0x20, "thermal"),
            (0x40, "thermal+hw_slowdown"),
            (0x80, "hw_slowdown"),
            (0x100, "other"),
            // Measured on an H100 at rest (research notes, section 3.3): GpuIdle alone.
            (0x1, "idle"),
            // A power-capped GPU that is also hot: the union.
            (0x4 | 0x20 | 0x8, "power_cap+thermal+hw_slowdown"),
            // Bits NVML may add later are not dropped.
            (1 << 40 | 0x4, "power_cap+other"),
        ];
        for (mask, want) in cases {
            assert_eq!(reasons_from_bits(mask).to_string(), want, "{mask:#x}");
        }
        // The table covers each of nvml.h's nine bits once.
        let bits: Vec<u64> = REASON_BITS.iter().map(|&(b, _, _)| b).collect();
        assert_eq!(bits, (0..9).map(|i| 1u64 << i).collect::<Vec<_>>());
        // Only power cap, thermal and hardware slowdown throttle.
        let throttling: Vec<&str> =
            REASON_BITS.iter().filter(|(b, _, _)| reasons_from_bits(*b).throttling()).map(|(_, n, _)| *n).collect();
        assert_eq!(
            throttling,
            ["SwPowerCap", "HwSlowdown", "SwThermalSlowdown", "HwThermalSlowdown", "HwPowerBrakeSlowdown"]
        );
    }

    #[test]
    fn units_and_codes() {
        assert_eq!(milliwatts_to_watts(76_855), 76.855);
        assert_eq!(milliwatts_to_watts(700_000), 700.0);
        assert_eq!(TEMPERATURE_V1, 12 | 1 << 24);
        assert_eq!(return_name(4), "NVML_ERROR_NO_PERMISSION");
        assert_eq!(return_name(3), "NVML_ERROR_NOT_SUPPORTED");
        assert_eq!(return_name(77), "NVML error 77");
        assert!(not_available(NVML_ERROR_NOT_SUPPORTED) && not_available(NVML_ERROR_NO_PERMISSION));
        assert!(!not_available(15), "a lost GPU is a failure, not a missing reading");
        let buf: Vec<c_char> = b"13.580.82\0junk".iter().map(|&b| b as c_char).collect();
        assert_eq!(c_string(&buf), "13.580.82");
    }

    #[test]
    fn a_missing_library_is_not_available_with_every_candidate_named() {
        let candidates = vec!["/nonexistent/lib64/libnvidia-ml.so.1".to_string(), "libnvidia-ml-absent.so.1".into()];
        let tried = load_from(&candidates).err().expect("nothing to load");
        let text = not_found(&tried).to_string();
        assert!(
            text.starts_with("telemetry not available: NVML not found (libnvidia-ml.so.1 comes with the NVIDIA driver")
        );
        assert!(text.contains("tried /nonexistent/lib64/libnvidia-ml.so.1: "), "{text}");
        assert!(text.contains("tried libnvidia-ml-absent.so.1: "), "{text}");
        assert!(text.contains("cannot open shared object file"), "{text}");
        assert!(!text.contains('\n'), "one line, for a record: {text}");
    }

    /// The process-wide search: here (no NVIDIA driver) it fails and says where it looked; on a node with the
    /// driver it finds NVML.
    #[test]
    fn the_process_search_finds_nvml_or_says_where_it_looked() {
        match load() {
            Ok(lib) => assert!(lib.path.contains("libnvidia-ml.so.1"), "{}", lib.path),
            Err(e) => {
                let text = e.to_string();
                assert!(matches!(e, Error::TelemetryUnavailable { .. }), "{e:?}");
                assert!(text.contains("tried /usr/local/cuda/lib64/libnvidia-ml.so.1: "), "{text}");
                assert!(text.contains("tried libnvidia-ml.so.1: "), "{text}");
                // Opening telemetry fails the same way, without a panic.
                let open = NvmlTelemetry::open("0000:00:06.0").err().expect("no NVML, no telemetry");
                assert_eq!(open.to_string(), text);
            }
        }
    }

    /// On an NVIDIA GPU (run by `cargo test -- --ignored` on the node): opens device 0's telemetry, samples every
    /// 10 ms for 200 ms while the GPU idles and while `smoke_spin` keeps every SM busy for 200 ms, and checks that the
    /// readings are plausible and taken at about the period asked.
    #[test]
    #[ignore = "needs a GPU"]
    fn gpu_readings_are_plausible_idle_and_busy() {
        use crate::device::telemetry::{median, summarize, ClockReference, Sampler};
        use crate::device::{Arg, LaunchConfig, Platform};
        use std::time::Duration;

        let gpu = crate::gpu::Gpu::open(Some(Platform::Nvidia), 0, None)
            .unwrap_or_else(|e| panic!("this test needs an NVIDIA GPU: {e}"));
        let telemetry = gpu.device.telemetry().unwrap_or_else(|e| panic!("NVML on an NVIDIA node: {e}"));
        let source = telemetry.source();
        assert!(source.starts_with("NVML ") && !source.contains("not read"), "{source}");
        let limits = telemetry.limits();
        assert_eq!(limits.power_scope, PowerScope::Device);
        let max_sm = limits.max_sm_clock_mhz.expect("NVML reports the maximum SM clock");
        let power_limit = limits.power_limit_w.expect("NVML reports the enforced power limit");
        assert!((500..=4000).contains(&max_sm) && limits.max_mem_clock_mhz.is_some_and(|m| m > 0), "{limits:?}");
        assert!((10.0..=2000.0).contains(&power_limit), "{limits:?}");
        // Built before sampling, so the compile does not fall inside either recording.
        let spin = gpu.kernel("smoke", "smoke_spin").unwrap_or_else(|e| panic!("smoke_spin builds: {e}"));
        gpu.device.synchronize().expect("idle");

        let period = Duration::from_millis(10);
        let mut sampler = Sampler::new(telemetry, period);
        sampler.start().expect("sampling starts");
        std::thread::sleep(Duration::from_millis(200));
        let idle = sampler.stop();
        sampler.start().expect("sampling starts again");
        // Four groups of 256 per SM are all resident at once; each item spins 200 ms of the device clock (ns).
        let groups = gpu.device.props().cu_count * 4;
        gpu.device.launch(&spin, &LaunchConfig::linear(groups, 256), &[Arg::U64(200_000_000)]).expect("launch");
        gpu.device.synchronize().expect("the spin ends");
        let busy = sampler.stop();

        let mut reference = ClockReference::new(&limits);
        let mut medians = Vec::new();
        for (name, rec) in [("idle", &idle), ("busy", &busy)] {
            assert_eq!(rec.failures, 0, "{name}: {:?}", rec.first_failure);
            assert!(rec.duration_ms >= 195.0, "{name}: {} ms", rec.duration_ms);
            // A reading at start, one per period, one at stop: about duration / period + 2.
            let expected = rec.duration_ms / 10.0 + 2.0;
            let n = rec.samples.len() as f64;
            assert!(n >= 0.5 * expected && n <= expected + 1.0, "{name}: {n} readings in {} ms", rec.duration_ms);
            let gaps: Vec<f64> = rec.samples.windows(2).map(|w| w[1].t_ms - w[0].t_ms).collect();
            let gap = median(gaps).expect("several readings");
            assert!((7.0..=15.0).contains(&gap), "{name}: median gap {gap} ms for a 10 ms period");
            for s in &rec.samples {
                assert!(s.sm_clock_mhz.is_some_and(|mhz| mhz > 0 && mhz <= max_sm), "{name}: {s:?}");
                assert!(s.mem_clock_mhz.is_some_and(|mhz| mhz > 0), "{name}: {s:?}");
                assert!(s.power_w.is_some_and(|w| w > 0.0 && w < power_limit), "{name}: {s:?} (limit {power_limit} W)");
                assert!(s.temperature_c.is_some_and(|c| (5.0..100.0).contains(&c)), "{name}: {s:?}");
                assert!(s.reasons.is_some(), "{name}: {s:?}");
            }
            let summary = summarize(&rec.samples, &mut reference);
            eprintln!("{name}: {summary:?}");
            medians.push(summary.sm_clock_mhz_median.expect("clocks were read"));
        }
        assert!(medians[1] >= medians[0], "busy SM clock {} MHz below idle {} MHz", medians[1], medians[0]);
    }
}
