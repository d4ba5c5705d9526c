//! The runner's side of the GPU's telemetry ([`crate::device::telemetry`]): while a point's timed repetitions run,
//! a background thread reads the GPU's clocks, power, temperature and throttle reasons (NVML, AMD SMI), and the
//! readings become the point's clock columns ([`crate::report::csv::TELEMETRY_COLUMNS`]); `run.json` gets, per
//! invocation, where the readings came from (or why there are none), the device's limits, and a reading before the
//! first point and after the last ([`crate::report::run_json::TelemetryRecord`]).
//!
//! **The warm-up is outside the sampled interval.** The readings describe the interval the row's time describes:
//! from just before the first timed repetition is enqueued to just after the last one has been read
//! ([`super::timing::TimedSection`]). The warm-up exists to bring the GPU from idle to its working clock; its
//! readings would carry the idle clock and the `idle` reason of the moment before, and flag points whose timed part
//! ran at full clock. Even the shortest point gets two readings: one when the sampler starts and one when it stops.
//!
//! **What it costs.** One thread per run sleeps between readings ([`DEFAULT_PERIOD`], 20 ms); a reading is a handful
//! of NVML calls (tens of µs each) or one read of AMD SMI's metrics table, so the thread should be busy well under 1%
//! of one core (an estimate from the calls' cost; docs/method.md has the commands that measure the whole cost on a
//! GPU). Starting and stopping it costs a thread spawn and join per point (tens of µs), outside the timed
//! repetitions' events. The GPU itself does not
//! see the readings: NVML and AMD SMI read counters the driver and the power-management firmware keep anyway.
//! `suite run --no-telemetry` turns sampling off (the columns stay empty and `run.json` says `off`), to measure that
//! cost: the same preset with and without it.

use std::time::Duration;

use super::timing::TimedSection;
use crate::device::telemetry::{summarize, ClockReference, Recording, Sampler, Summary, Telemetry, DEFAULT_PERIOD};
use crate::device::{Device, Error as DeviceError};
use crate::report::run_json::{Reading, TelemetryRecord};

/// The flag that turns sampling off, as `run.json` names it.
pub const OFF_FLAG: &str = "--no-telemetry";

/// A run's telemetry: a [`Sampler`] of the device with the run's [`ClockReference`], or why there is none.
pub struct PointTelemetry {
    state: State,
    /// The current point's recording, from [`TimedSection::end`] until [`PointTelemetry::finish_point`].
    recording: Option<Recording>,
    /// Why the sampler could not start for the current point, when it could not.
    start_failure: Option<String>,
}

enum State {
    /// Nothing is sampled; `source` says why, as run.json records it.
    Off { source: String },
    /// Sampling.
    On { sampler: Sampler, reference: ClockReference },
}

/// What the readings during one point's timed repetitions came to.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PointClocks {
    /// The readings reduced to the row's columns; `None` when nothing was read.
    pub summary: Option<Summary>,
    /// Why a sampling device read nothing for this point (every reading failed, or the thread did not start), for
    /// the row's message.
    pub note: Option<String>,
}

impl PointTelemetry {
    /// The device's telemetry when `enabled` and available, else a record of why not: `off: --no-telemetry`, or
    /// `not available: <why>` (no NVML or AMD SMI, no permission, the HIP-over-CUDA test runtime, a planned part).
    pub fn open(device: &dyn Device, enabled: bool) -> PointTelemetry {
        if !enabled {
            return PointTelemetry::off(format!("off: {OFF_FLAG}"));
        }
        match device.telemetry() {
            Ok(telemetry) => PointTelemetry::sampling(telemetry, DEFAULT_PERIOD),
            Err(DeviceError::TelemetryUnavailable { why }) => PointTelemetry::off(format!("not available: {why}")),
            Err(e) => PointTelemetry::off(format!("not available: {e}")),
        }
    }

    /// Samples `telemetry` every `period` during each point's timed repetitions.
    pub fn sampling(telemetry: Box<dyn Telemetry>, period: Duration) -> PointTelemetry {
        let reference = ClockReference::new(&telemetry.limits());
        let sampler = Sampler::new(telemetry, period);
        PointTelemetry { state: State::On { sampler, reference }, recording: None, start_failure: None }
    }

    /// Samples nothing; `source` says why.
    pub fn off(source: String) -> PointTelemetry {
        PointTelemetry { state: State::Off { source }, recording: None, start_failure: None }
    }

    /// Whether readings are taken.
    pub fn is_sampling(&self) -> bool {
        matches!(self.state, State::On { .. })
    }

    /// One reading now, dated; `None` when nothing is sampled.
    pub fn reading(&self) -> Option<Reading> {
        let State::On { sampler, .. } = &self.state else { return None };
        Some(Reading::now(sampler.telemetry().sample().map_err(|e| e.to_string())))
    }

    /// What run.json records for an invocation at its start: the source, the period, the limits and a reading now.
    pub fn record(&self) -> TelemetryRecord {
        match &self.state {
            State::Off { source } => {
                TelemetryRecord { source: source.clone(), period_ms: None, limits: None, start: None, end: None }
            }
            State::On { sampler, .. } => TelemetryRecord {
                source: sampler.telemetry().source(),
                period_ms: Some(sampler.period().as_secs_f64() * 1e3),
                limits: Some(sampler.telemetry().limits()),
                start: self.reading(),
                end: None,
            },
        }
    }

    /// Ends the current point: stops a sampler a failed repetition left running (its readings are dropped, as the
    /// point has no time), and reduces the recording of its timed repetitions, if any, to its columns. Call it after
    /// every point that was timed, whether timing succeeded or not.
    pub fn finish_point(&mut self) -> PointClocks {
        let State::On { sampler, reference } = &mut self.state else { return PointClocks::default() };
        if sampler.is_running() {
            drop(sampler.stop());
        }
        let start_failure = self.start_failure.take();
        let Some(recording) = self.recording.take() else {
            let note = start_failure.map(|why| format!("no clock readings: {why}"));
            return PointClocks { summary: None, note };
        };
        if recording.samples.is_empty() {
            let why = recording.first_failure.unwrap_or_else(|| "no reading was taken".into());
            return PointClocks { summary: None, note: Some(format!("no clock readings: {why}")) };
        }
        PointClocks { summary: Some(summarize(&recording.samples, reference)), note: None }
    }
}

impl TimedSection for PointTelemetry {
    fn begin(&mut self) {
        self.recording = None;
        if let State::On { sampler, .. } = &mut self.state {
            if let Err(e) = sampler.start() {
                self.start_failure = Some(e.to_string());
            }
        }
    }

    fn end(&mut self) {
        if let State::On { sampler, .. } = &mut self.state {
            if sampler.is_running() {
                self.recording = Some(sampler.stop());
            }
        }
    }
}

impl std::fmt::Debug for PointTelemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.state {
            State::Off { source } => write!(f, "PointTelemetry({source})"),
            State::On { sampler, reference } => {
                write!(
                    f,
                    "PointTelemetry({}, every {:?}, {reference:?})",
                    sampler.telemetry().source(),
                    sampler.period()
                )
            }
        }
    }
}
