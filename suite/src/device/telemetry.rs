//! What the GPU's clocks, power and temperature did while a point ran: sampled on a background thread between
//! [`Sampler::start`] and [`Sampler::stop`], then reduced to a [`Summary`] per point.
//!
//! This file is safe and vendor-neutral. The platform modules read the hardware through each vendor's management
//! library, loaded at run time: NVML on NVIDIA (`nvidia/nvml.rs`), AMD SMI on AMD (`amd/amdsmi.rs`). Each maps its
//! vendor's throttle bits onto the small set of [`Reason`]s here; the tables are in those files, next to the bits.
//! A device whose library is missing or refuses answers [`Device::telemetry`](super::Device::telemetry) with
//! [`Error::TelemetryUnavailable`], which the runner records instead of a sample.
//!
//! # The two flags
//! - `throttled`: some sample taken during the point reported a power cap, a thermal limit or a hardware slowdown
//!   ([`Reason::throttles`]). Reasons that lower clocks on purpose without a limit being hit (idle, sync boost,
//!   application clocks) do not set it.
//! - `below_steady_clock`: the point's median SM clock is more than [`STEADY_CLOCK_MARGIN`] (5%) below the
//!   [`ClockReference`]: the highest SM clock the device is known to reach, which is its maximum clock as the
//!   vendor library reports it, raised by any higher clock sampled earlier in the run or in the point itself; where
//!   the library reports no maximum, the highest clock sampled so far (this point's included).
//!
//!   Why the maximum and not only the highest clock seen so far: a row's flag must not depend on the order points
//!   ran in, on `--shard` (each shard sees other points) or on `--resume` (a resumed run starts with no history);
//!   the maximum is a property of the device, so every shard flags a point alike. In practice the two agree after
//!   the first light point anyway, since a GPU that is not at a limit boosts to its maximum (H100 SXM: 1980 MHz,
//!   MI250X: 1700 MHz). A power-capped point (H100 DGEMM near 700 W) is therefore flagged twice, `throttled` saying
//!   why; that is intended, as its time is not the time at the clock the peaks are quoted for.
//!
//!   Why 5%: a compute-bound kernel's time scales with 1/clock, so a median clock 5% low means a time about 5% long,
//!   the accuracy the runner's own timing is checked to (`suite/tests/gpu.rs`, a kernel of known duration within
//!   5%); smaller dips are within the clock's step size and the wander of a busy GPU's clock (an H100's supported
//!   clocks are 15 MHz apart), so flagging them would flag ordinary points.

use std::fmt;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::{Error, Result};

/// Why the GPU ran below its maximum clock, in vendor-neutral terms. Each platform module documents how its vendor's
/// bits map onto these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reason {
    /// A power or current limit of the board or package (NVIDIA software power cap; AMD PPT, TDC, EDC limits).
    PowerCap,
    /// A temperature limit (GPU, memory or voltage regulator too hot), by software or hardware.
    Thermal,
    /// A hardware slowdown or brake: the clock forced down by a hardware signal (NVIDIA HW slowdown and power
    /// brake, AMD PROCHOT and VRHOT), often by half or more.
    HwSlowdown,
    /// NVIDIA sync boost: clocks held to those of the slowest GPU in a sync-boost group.
    SyncBoost,
    /// Clocks held at application clocks set by an administrator (NVIDIA).
    AppClocks,
    /// The GPU was idle, so its clocks dropped.
    Idle,
    /// A reason the vendor reports that none of the above covers (or a bit this suite does not know).
    Other,
}

impl Reason {
    /// Every reason, in the order they are printed.
    pub const ALL: [Reason; 7] = [
        Reason::PowerCap,
        Reason::Thermal,
        Reason::HwSlowdown,
        Reason::SyncBoost,
        Reason::AppClocks,
        Reason::Idle,
        Reason::Other,
    ];

    /// Lower-case name, as written in CSV cells and `run.json`.
    pub fn name(self) -> &'static str {
        match self {
            Reason::PowerCap => "power_cap",
            Reason::Thermal => "thermal",
            Reason::HwSlowdown => "hw_slowdown",
            Reason::SyncBoost => "sync_boost",
            Reason::AppClocks => "app_clocks",
            Reason::Idle => "idle",
            Reason::Other => "other",
        }
    }

    /// Whether this reason means a limit was hit (power cap, thermal, hardware slowdown), which sets `throttled`.
    pub fn throttles(self) -> bool {
        matches!(self, Reason::PowerCap | Reason::Thermal | Reason::HwSlowdown)
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// A set of [`Reason`]s. Prints as names joined by `+` (`power_cap+thermal`), or `none` when empty.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(into = "String")]
pub struct Reasons(u8);

impl Reasons {
    /// The empty set.
    pub const NONE: Reasons = Reasons(0);

    /// The set holding `reasons`.
    pub fn of(reasons: &[Reason]) -> Reasons {
        reasons.iter().fold(Reasons::NONE, |set, &r| set.with(r))
    }

    /// This set with `reason` added.
    pub fn with(self, reason: Reason) -> Reasons {
        Reasons(self.0 | reason.bit())
    }

    /// Whether `reason` is in the set.
    pub fn contains(self, reason: Reason) -> bool {
        self.0 & reason.bit() != 0
    }

    /// Every reason in either set.
    pub fn union(self, other: Reasons) -> Reasons {
        Reasons(self.0 | other.0)
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The reasons in the set, in [`Reason::ALL`]'s order.
    pub fn iter(self) -> impl Iterator<Item = Reason> {
        Reason::ALL.into_iter().filter(move |&r| self.contains(r))
    }

    /// Whether any reason in the set means a limit was hit ([`Reason::throttles`]).
    pub fn throttling(self) -> bool {
        self.iter().any(Reason::throttles)
    }
}

impl fmt::Display for Reasons {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("none");
        }
        let names: Vec<&str> = self.iter().map(Reason::name).collect();
        f.write_str(&names.join("+"))
    }
}

impl From<Reasons> for String {
    fn from(r: Reasons) -> String {
        r.to_string()
    }
}

/// One reading of the GPU. A quantity the device does not report is `None`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sample {
    /// When the reading was taken, in ms since [`Sampler::start`] (host monotonic clock); 0 from
    /// [`Telemetry::sample`], which the sampler stamps.
    pub t_ms: f64,
    /// Shader clock in MHz: NVIDIA SM clock, AMD GFX clock.
    pub sm_clock_mhz: Option<u32>,
    /// Memory clock in MHz (NVIDIA memory clock, AMD UCLK), as the vendor library reports it.
    pub mem_clock_mhz: Option<u32>,
    /// Power in W, of what [`Limits::power_scope`] says. NVIDIA averages it over 1 s on Ampere and later, AMD
    /// MI200 over its own window: a short point sees mostly the power of what ran before it.
    pub power_w: Option<f64>,
    /// GPU temperature in °C (NVIDIA: the GPU die sensor; AMD: the junction/hotspot sensor).
    pub temperature_c: Option<f64>,
    /// Reasons the clocks were held down at the time of the reading; `None` where the device does not say.
    pub reasons: Option<Reasons>,
}

impl Sample {
    /// A reading with nothing in it, for a platform module to fill.
    pub fn empty() -> Sample {
        Sample { t_ms: 0.0, sm_clock_mhz: None, mem_clock_mhz: None, power_w: None, temperature_c: None, reasons: None }
    }
}

/// What [`Sample::power_w`] measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PowerScope {
    /// The device alone: an NVIDIA board (GPU and memory), or an AMD GPU that is one device per package.
    Device,
    /// The whole module that holds this device and its sibling (an MI250X OAM: two GCDs), read on this GCD, the
    /// module's first. It includes the other GCD's power, so it is not this device's alone.
    Module,
    /// Nothing: the module's power is read on its first GCD only, and this is the second (MI250X).
    OtherGcd,
}

impl PowerScope {
    /// A sentence for records and messages.
    pub fn describe(self) -> &'static str {
        match self {
            PowerScope::Device => "power of this device",
            PowerScope::Module => "power measured per module (read on this GCD, the module's first; both GCDs)",
            PowerScope::OtherGcd => "power measured per module (read on the first GCD)",
        }
    }
}

/// What the device allows, read once when telemetry is opened (and recorded in `run.json`, hence `Deserialize`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    /// Highest SM/GFX clock in MHz, where the library reports it.
    pub max_sm_clock_mhz: Option<u32>,
    /// Highest memory clock in MHz, where the library reports it.
    pub max_mem_clock_mhz: Option<u32>,
    /// Power limit in force in W (NVIDIA enforced limit; AMD power cap), where the library reports it.
    pub power_limit_w: Option<f64>,
    /// What the power readings measure.
    pub power_scope: PowerScope,
}

/// A device's clocks, power and temperature, read through its vendor's management library. Readings may be taken
/// from another thread than the one that opened the device ([`Sampler`]).
pub trait Telemetry: Send + Sync {
    /// One reading, now. Quantities the device does not report are `None`; an error means the reading failed.
    fn sample(&self) -> Result<Sample>;

    /// The device's maximum clocks and power limit.
    fn limits(&self) -> Limits;

    /// Where readings come from, e.g. `NVML 13.580.82` or `AMD SMI 24.7.1.0`.
    fn source(&self) -> String;
}

/// The sampling period the runner uses unless told otherwise. Each reading costs a few library calls (tens of µs
/// each on NVML, a sysfs read of the SMU's metrics table on AMD), so 20 ms keeps the sampler under about 1% of one
/// core while a 100 ms point still gets five readings.
pub const DEFAULT_PERIOD: Duration = Duration::from_millis(20);

/// What one [`Sampler::start`]..[`Sampler::stop`] recorded.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Recording {
    /// The readings, in time order: one at start, one every period, one at stop.
    pub samples: Vec<Sample>,
    /// Readings that failed.
    pub failures: u32,
    /// The first failure's message.
    pub first_failure: Option<String>,
    /// Host time from start to stop, ms.
    pub duration_ms: f64,
}

struct Running {
    stop: mpsc::Sender<()>,
    thread: JoinHandle<Recording>,
}

/// Reads a [`Telemetry`] every period on a background thread between [`Sampler::start`] and [`Sampler::stop`]. One
/// sampler serves a whole run: start it before a point's timed repetitions and stop it after them.
pub struct Sampler {
    telemetry: Arc<dyn Telemetry>,
    period: Duration,
    running: Option<Running>,
}

impl Sampler {
    /// A sampler of `telemetry` every `period` (at least 1 ms).
    pub fn new(telemetry: Box<dyn Telemetry>, period: Duration) -> Sampler {
        Sampler { telemetry: Arc::from(telemetry), period: period.max(Duration::from_millis(1)), running: None }
    }

    /// The telemetry sampled.
    pub fn telemetry(&self) -> &dyn Telemetry {
        self.telemetry.as_ref()
    }

    /// The sampling period.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// Whether a recording is under way.
    pub fn is_running(&self) -> bool {
        self.running.is_some()
    }

    /// Starts a recording: a reading now, then one every period. A recording still under way (a point that failed
    /// before [`Sampler::stop`]) is ended and discarded first, so one failed point never leaves the sampler stuck.
    pub fn start(&mut self) -> Result<()> {
        drop(self.stop());
        let (stop, stopped) = mpsc::channel();
        let (telemetry, period) = (Arc::clone(&self.telemetry), self.period);
        let thread = std::thread::Builder::new()
            .name("telemetry".into())
            .spawn(move || record(telemetry.as_ref(), period, &stopped))
            .map_err(|e| Error::TelemetryUnavailable { why: format!("cannot start the sampling thread: {e}") })?;
        self.running = Some(Running { stop, thread });
        Ok(())
    }

    /// Ends the recording with one last reading and returns it; an empty recording when none is under way.
    pub fn stop(&mut self) -> Recording {
        let Some(Running { stop, thread }) = self.running.take() else { return Recording::default() };
        // A send fails only if the thread has already ended, which the join below reports.
        let _ = stop.send(());
        thread.join().unwrap_or_else(|_| Recording {
            failures: 1,
            first_failure: Some("the sampling thread panicked".into()),
            ..Recording::default()
        })
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        drop(self.stop());
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The first multiple of `period` after `elapsed`: readings stay on a fixed grid, and a slow reading skips grid
/// points instead of making the next readings bunch up.
pub fn next_tick(elapsed: Duration, period: Duration) -> Duration {
    let period_ns = period.as_nanos().max(1);
    let ticks = elapsed.as_nanos() / period_ns + 1;
    Duration::from_nanos(u64::try_from(ticks.saturating_mul(period_ns)).unwrap_or(u64::MAX))
}

/// The sampling thread: reads at start, on every tick until told to stop (or the sampler is dropped), and once
/// more at stop.
fn record(telemetry: &dyn Telemetry, period: Duration, stop: &mpsc::Receiver<()>) -> Recording {
    let start = Instant::now();
    let mut rec = Recording::default();
    let read = |rec: &mut Recording| {
        let t_ms = ms(start.elapsed());
        match telemetry.sample() {
            Ok(sample) => rec.samples.push(Sample { t_ms, ..sample }),
            Err(e) => {
                rec.failures += 1;
                rec.first_failure.get_or_insert_with(|| e.to_string());
            }
        }
    };
    loop {
        read(&mut rec);
        let elapsed = start.elapsed();
        match stop.recv_timeout(next_tick(elapsed, period).saturating_sub(elapsed)) {
            Err(RecvTimeoutError::Timeout) => continue,
            Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    read(&mut rec);
    rec.duration_ms = ms(start.elapsed());
    rec
}

/// How far below the reference clock a point's median SM clock may be before `below_steady_clock` is set: 5%
/// (see the module documentation for why).
pub const STEADY_CLOCK_MARGIN: f64 = 0.05;

/// The SM clock a point's median is compared with: the device's maximum SM clock, raised by any higher clock sampled
/// so far in the run; without a maximum, the highest clock sampled so far. Keep one per run and pass it to
/// [`summarize`] for every point in order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ClockReference {
    /// The device's maximum SM clock in MHz, where known.
    pub max_mhz: Option<u32>,
    /// The highest SM clock sampled so far in the run, MHz.
    pub highest_seen_mhz: Option<u32>,
}

impl ClockReference {
    /// A reference for a device with these limits, before any point has run.
    pub fn new(limits: &Limits) -> ClockReference {
        ClockReference { max_mhz: limits.max_sm_clock_mhz.filter(|&m| m > 0), highest_seen_mhz: None }
    }

    /// Takes note of the SM clocks in `samples`.
    pub fn observe(&mut self, samples: &[Sample]) {
        let highest = samples.iter().filter_map(|s| s.sm_clock_mhz).max();
        self.highest_seen_mhz = self.highest_seen_mhz.max(highest);
    }

    /// The clock compared with, MHz: the larger of the maximum and the highest clock seen.
    pub fn reference_mhz(&self) -> Option<u32> {
        self.max_mhz.max(self.highest_seen_mhz)
    }
}

/// A point's readings reduced to what its CSV row records.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Readings summarised.
    pub samples: usize,
    /// Median SM/GFX clock, MHz.
    pub sm_clock_mhz_median: Option<f64>,
    /// Median memory clock, MHz.
    pub mem_clock_mhz_median: Option<f64>,
    /// Median power, W.
    pub power_w_median: Option<f64>,
    /// Highest power, W.
    pub power_w_max: Option<f64>,
    /// Highest temperature, °C.
    pub temperature_c_max: Option<f64>,
    /// Every reason reported by any reading; `None` when no reading reported reasons.
    pub reasons: Option<Reasons>,
    /// Whether any reading reported a power cap, thermal limit or hardware slowdown; `None` when no reading
    /// reported reasons.
    pub throttled: Option<bool>,
    /// Whether the median SM clock is more than [`STEADY_CLOCK_MARGIN`] below [`Summary::reference_sm_clock_mhz`];
    /// `None` when either is unknown.
    pub below_steady_clock: Option<bool>,
    /// The reference the median was compared with, MHz ([`ClockReference::reference_mhz`]).
    pub reference_sm_clock_mhz: Option<u32>,
}

/// The median of `values` (the mean of the middle two for an even count); `None` for none.
pub fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 { values[mid] } else { (values[mid - 1] + values[mid]) / 2.0 })
}

fn max_of(values: impl Iterator<Item = f64>) -> Option<f64> {
    values.max_by(f64::total_cmp)
}

/// Summarises one point's readings (those taken during its timed repetitions), after adding their clocks to
/// `reference`, so a point is compared with every clock seen up to and including itself.
pub fn summarize(samples: &[Sample], reference: &mut ClockReference) -> Summary {
    reference.observe(samples);
    let sm_clock_mhz_median = median(samples.iter().filter_map(|s| s.sm_clock_mhz).map(f64::from).collect());
    let powers = || samples.iter().filter_map(|s| s.power_w);
    let reasons = samples.iter().filter_map(|s| s.reasons).reduce(Reasons::union);
    let reference_sm_clock_mhz = reference.reference_mhz();
    Summary {
        samples: samples.len(),
        sm_clock_mhz_median,
        mem_clock_mhz_median: median(samples.iter().filter_map(|s| s.mem_clock_mhz).map(f64::from).collect()),
        power_w_median: median(powers().collect()),
        power_w_max: max_of(powers()),
        temperature_c_max: max_of(samples.iter().filter_map(|s| s.temperature_c)),
        reasons,
        throttled: reasons.map(Reasons::throttling),
        below_steady_clock: below_steady_clock(sm_clock_mhz_median, reference_sm_clock_mhz),
        reference_sm_clock_mhz,
    }
}

/// The clock rule: `median < (1 − STEADY_CLOCK_MARGIN) × reference`; `None` when either is unknown.
pub fn below_steady_clock(median_mhz: Option<f64>, reference_mhz: Option<u32>) -> Option<bool> {
    let (median, reference) = (median_mhz?, f64::from(reference_mhz?));
    Some(median < (1.0 - STEADY_CLOCK_MARGIN) * reference)
}

/// [`Error::TelemetryUnavailable`] with `why`: what a platform module returns when a device's readings cannot be
/// taken.
pub fn unavailable(why: impl Into<String>) -> Error {
    Error::TelemetryUnavailable { why: why.into() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Mutex;

    /// A fixture reading: clock, power and reasons as given, memory at 2619 MHz, 40 °C.
    fn sample(sm: u32, power: f64, reasons: &[Reason]) -> Sample {
        Sample {
            t_ms: 0.0,
            sm_clock_mhz: Some(sm),
            mem_clock_mhz: Some(2619),
            power_w: Some(power),
            temperature_c: Some(40.0),
            reasons: Some(Reasons::of(reasons)),
        }
    }

    fn h100_limits() -> Limits {
        Limits {
            max_sm_clock_mhz: Some(1980),
            max_mem_clock_mhz: Some(2619),
            power_limit_w: Some(700.0),
            power_scope: PowerScope::Device,
        }
    }

    #[test]
    fn reasons_are_a_set_with_stable_names() {
        let set = Reasons::of(&[Reason::Thermal, Reason::PowerCap, Reason::Thermal]);
        assert_eq!(set.to_string(), "power_cap+thermal");
        assert_eq!(Reasons::NONE.to_string(), "none");
        assert!(set.contains(Reason::PowerCap) && !set.contains(Reason::Idle));
        assert_eq!(set.union(Reasons::of(&[Reason::Idle])).iter().count(), 3);
        let all = Reasons::of(&Reason::ALL);
        assert_eq!(all.to_string(), "power_cap+thermal+hw_slowdown+sync_boost+app_clocks+idle+other");
        assert_eq!(serde_json::to_string(&set).unwrap(), "\"power_cap+thermal\"");
        let throttling: Vec<Reason> = Reason::ALL.into_iter().filter(|r| r.throttles()).collect();
        assert_eq!(throttling, [Reason::PowerCap, Reason::Thermal, Reason::HwSlowdown]);
    }

    #[test]
    fn medians_maxima_and_the_union_of_reasons() {
        let samples = [
            sample(1980, 300.0, &[]),
            sample(1950, 500.0, &[Reason::Idle]),
            sample(1965, 450.0, &[Reason::SyncBoost]),
            sample(1935, 700.0, &[]),
        ];
        let mut reference = ClockReference::new(&h100_limits());
        let s = summarize(&samples, &mut reference);
        assert_eq!(s.samples, 4);
        assert_eq!(s.sm_clock_mhz_median, Some(1957.5), "even count: mean of 1950 and 1965");
        assert_eq!(s.mem_clock_mhz_median, Some(2619.0));
        assert_eq!((s.power_w_median, s.power_w_max), (Some(475.0), Some(700.0)));
        assert_eq!(s.temperature_c_max, Some(40.0));
        assert_eq!(s.reasons, Some(Reasons::of(&[Reason::Idle, Reason::SyncBoost])));
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![]), None);
        // Quantities a device does not report stay unknown instead of reading as zero.
        let mut blank = Sample::empty();
        blank.power_w = Some(90.0);
        let s = summarize(&[blank.clone(), blank], &mut ClockReference::default());
        assert_eq!((s.sm_clock_mhz_median, s.temperature_c_max, s.power_w_median), (None, None, Some(90.0)));
        assert_eq!((s.reasons, s.throttled, s.below_steady_clock), (None, None, None));
    }

    #[test]
    fn throttled_is_set_by_a_sample_that_says_so_and_not_otherwise() {
        let reference = ClockReference::new(&h100_limits());
        let calm = [sample(1980, 300.0, &[]), sample(1980, 310.0, &[Reason::Idle, Reason::SyncBoost])];
        let s = summarize(&calm, &mut reference.clone());
        assert_eq!(s.throttled, Some(false), "idle and sync boost are not limits");
        for reason in [Reason::PowerCap, Reason::Thermal, Reason::HwSlowdown] {
            let mut one = calm.to_vec();
            one.push(sample(1980, 690.0, &[reason]));
            let s = summarize(&one, &mut reference.clone());
            assert_eq!(s.throttled, Some(true), "{reason:?} in one sample of three");
        }
        for reason in [Reason::AppClocks, Reason::Other] {
            let s = summarize(&[sample(1980, 300.0, &[reason])], &mut reference.clone());
            assert_eq!(s.throttled, Some(false), "{reason:?}");
        }
        // A device that reports no reasons: unknown, not "not throttled".
        let mut unknown = sample(1980, 300.0, &[]);
        unknown.reasons = None;
        assert_eq!(summarize(&[unknown], &mut reference.clone()).throttled, None);
    }

    #[test]
    fn below_steady_clock_compares_the_median_with_the_maximum_less_5_percent() {
        // H100 SXM: maximum 1980 MHz, so the line is 0.95 × 1980 = 1881 MHz.
        let cases: [(&[u32], bool); 5] = [
            (&[1980, 1980, 1980], false),
            (&[1890, 1881, 1900], false),
            (&[1880, 1875, 1870], true),
            // One dip does not move the median.
            (&[1980, 345, 1980], false),
            // A power-capped DGEMM: below, though every sample says why.
            (&[1755, 1740, 1770], true),
        ];
        for (clocks, want) in cases {
            let samples: Vec<Sample> = clocks.iter().map(|&c| sample(c, 650.0, &[])).collect();
            let mut reference = ClockReference::new(&h100_limits());
            let s = summarize(&samples, &mut reference);
            assert_eq!(s.below_steady_clock, Some(want), "{clocks:?}");
            assert_eq!(s.reference_sm_clock_mhz, Some(1980));
        }
        assert_eq!(below_steady_clock(Some(1881.0), Some(1980)), Some(false));
        assert_eq!(below_steady_clock(Some(1880.9), Some(1980)), Some(true));
        assert_eq!(below_steady_clock(None, Some(1980)), None);
        assert_eq!(below_steady_clock(Some(1000.0), None), None);
    }

    #[test]
    fn without_a_maximum_the_reference_is_the_highest_clock_seen_so_far() {
        let no_max = Limits { max_sm_clock_mhz: None, ..h100_limits() };
        let mut reference = ClockReference::new(&no_max);
        assert_eq!(reference.reference_mhz(), None);
        // The first point is compared with its own highest sample.
        let first = summarize(&[sample(1700, 1.0, &[]), sample(1700, 1.0, &[])], &mut reference);
        assert_eq!((first.reference_sm_clock_mhz, first.below_steady_clock), (Some(1700), Some(false)));
        // A later point that boosts higher raises the reference for itself and every point after it.
        let second =
            summarize(&[sample(1500, 1.0, &[]), sample(1800, 1.0, &[]), sample(1500, 1.0, &[])], &mut reference);
        assert_eq!((second.reference_sm_clock_mhz, second.below_steady_clock), (Some(1800), Some(true)));
        let third = summarize(&[sample(1720, 1.0, &[])], &mut reference);
        assert_eq!((third.reference_sm_clock_mhz, third.below_steady_clock), (Some(1800), Some(false)));
        // With a maximum, clocks below it never move the reference: the flag does not depend on point order.
        let mut with_max = ClockReference::new(&h100_limits());
        with_max.observe(&[sample(1500, 1.0, &[])]);
        assert_eq!(with_max.reference_mhz(), Some(1980));
        // A clock above the reported maximum (a maximum that is not one) is taken as the reference.
        with_max.observe(&[sample(2010, 1.0, &[])]);
        assert_eq!(with_max.reference_mhz(), Some(2010));
        // A maximum of 0 (a library that reports nothing there) counts as unknown.
        let zero = Limits { max_sm_clock_mhz: Some(0), ..h100_limits() };
        assert_eq!(ClockReference::new(&zero).reference_mhz(), None);
    }

    #[test]
    fn ticks_stay_on_the_period_grid() {
        let p = Duration::from_millis(20);
        assert_eq!(next_tick(Duration::ZERO, p), p);
        assert_eq!(next_tick(Duration::from_millis(3), p), p);
        assert_eq!(next_tick(Duration::from_millis(20), p), Duration::from_millis(40));
        // A reading that took 2.5 periods skips to the next grid point, not 20 ms after it finished.
        assert_eq!(next_tick(Duration::from_millis(55), p), Duration::from_millis(60));
    }

    /// A fixture telemetry: counts readings, fails every fifth, reports its reading number as the clock.
    struct Counting {
        readings: AtomicU32,
    }

    impl Telemetry for Counting {
        fn sample(&self) -> Result<Sample> {
            let n = self.readings.fetch_add(1, Ordering::SeqCst) + 1;
            if n.is_multiple_of(5) {
                return Err(unavailable(format!("reading {n} failed")));
            }
            Ok(Sample { sm_clock_mhz: Some(n), ..Sample::empty() })
        }
        fn limits(&self) -> Limits {
            Limits {
                max_sm_clock_mhz: None,
                max_mem_clock_mhz: None,
                power_limit_w: None,
                power_scope: PowerScope::Device,
            }
        }
        fn source(&self) -> String {
            "fixture".into()
        }
    }

    #[test]
    fn the_sampler_reads_at_start_every_period_and_at_stop() {
        let mut sampler = Sampler::new(Box::new(Counting { readings: AtomicU32::new(0) }), Duration::from_millis(10));
        assert_eq!(sampler.stop(), Recording::default(), "stop without start records nothing");
        sampler.start().expect("thread starts");
        assert!(sampler.is_running());
        std::thread::sleep(Duration::from_millis(105));
        let rec = sampler.stop();
        assert!(!sampler.is_running());
        let taken = rec.samples.len() as u32 + rec.failures;
        // About 105 / 10 + 2 readings. Only what no scheduling can change is asserted (the test machine may be
        // loaded, and tests assert no timings): the readings at start and stop, never more than the 10 ms grid
        // allows, in time order, and none between them before its grid point.
        assert!((2..=13).contains(&taken), "{taken} readings: {rec:?}");
        assert_eq!(rec.failures, taken / 5);
        assert_eq!(
            rec.first_failure.as_deref(),
            if taken >= 5 { Some("telemetry not available: reading 5 failed") } else { None }
        );
        assert!(rec.samples.windows(2).all(|w| w[0].t_ms < w[1].t_ms), "time order");
        let ticks = &rec.samples[1..rec.samples.len() - 1];
        assert!(ticks.iter().all(|s| s.t_ms >= 10.0), "{ticks:?}");
        // A second recording starts its clock again.
        sampler.start().expect("restart");
        let again = sampler.stop();
        assert!(!again.samples.is_empty() && again.samples[0].t_ms < 5.0);
    }

    #[test]
    fn starting_again_discards_a_recording_left_running() {
        struct Log(Mutex<Vec<f64>>);
        impl Telemetry for Log {
            fn sample(&self) -> Result<Sample> {
                self.0.lock().map_err(|_| unavailable("poisoned"))?.push(0.0);
                Ok(Sample::empty())
            }
            fn limits(&self) -> Limits {
                Limits {
                    max_sm_clock_mhz: None,
                    max_mem_clock_mhz: None,
                    power_limit_w: None,
                    power_scope: PowerScope::OtherGcd,
                }
            }
            fn source(&self) -> String {
                "log".into()
            }
        }
        let mut sampler = Sampler::new(Box::new(Log(Mutex::new(Vec::new()))), Duration::from_millis(5));
        sampler.start().expect("start");
        std::thread::sleep(Duration::from_millis(30));
        sampler.start().expect("a second start ends the first recording");
        let rec = sampler.stop();
        assert!(rec.duration_ms < 25.0, "the new recording began at the second start: {rec:?}");
        assert_eq!(sampler.telemetry().source(), "log");
        assert_eq!(
            sampler.telemetry().limits().power_scope.describe(),
            "power measured per module (read on the first GCD)"
        );
        // Dropping a running sampler ends its thread.
        sampler.start().expect("start");
        drop(sampler);
    }
}
