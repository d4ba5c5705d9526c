//! Timing: batches of back-to-back launches between one pair of device events (or a graph replaying them), sized so
//! the events' resolution and the launch latency do not show, median with min and max; and the launch gap recorded
//! in `run.json`.

use super::{Case, Clock, Error, TimedBy};
use crate::device::{self, Device, LaunchConfig, Timing};
use crate::gpu::Gpu;
use crate::measure::Stats;
use crate::options::RunOptions;
use crate::report::run_json::TimingRecord;

/// A repetition's batch lasts at least this long (ms) where the budget allows: long against the events'
/// resolution (about 0.5 µs) and the host's cost of one launch, so neither shows in the time per launch.
pub const TARGET_BATCH_MS: f64 = 1.0;

/// Most launches in one batch: bounds the size of a captured graph (and the host's work to enqueue a batch).
pub const MAX_LAUNCHES_PER_REP: u32 = 4096;

/// Launches per repetition for a kernel whose one launch takes `launch_ms`: enough for a batch of
/// [`TARGET_BATCH_MS`], at most [`MAX_LAUNCHES_PER_REP`], few enough that three repetitions fit in `budget_s`, and at
/// least one (a kernel that is already long runs alone). A launch too short for the events to see gets the most.
pub fn launches_per_rep(launch_ms: f64, budget_s: f64) -> u32 {
    if !(launch_ms > 0.0 && launch_ms.is_finite()) {
        return MAX_LAUNCHES_PER_REP;
    }
    let target = (TARGET_BATCH_MS / launch_ms).ceil();
    let affordable = (budget_s * 1e3 / (3.0 * launch_ms)).floor();
    let b = target.min(affordable).min(f64::from(MAX_LAUNCHES_PER_REP));
    if b >= 1.0 {
        b as u32
    } else {
        1
    }
}

/// What [`time_case`] measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Timed {
    /// Time per launch (each repetition's batch time / `launches_per_rep`), ms.
    pub stats: Stats,
    /// Launches in each repetition's batch.
    pub launches_per_rep: u32,
    /// What timed it: device events around batches (enqueued as a graph or on the stream), or the host clock.
    pub timing: TimedBy,
    /// Why a graph was asked for but the stream used, when that happened.
    pub note: Option<String>,
}

/// What brackets a point's timed repetitions: [`TimedSection::begin`] is called after the warm-up, just before the
/// first timed repetition is enqueued, and [`TimedSection::end`] after the last one has been read (so the GPU has
/// finished it). The runner samples the GPU's clocks and power there ([`super::point_telemetry`]); a repetition
/// that fails returns before `end`, and the caller cleans up.
pub trait TimedSection {
    /// The timed repetitions are about to start.
    fn begin(&mut self);
    /// The timed repetitions are over.
    fn end(&mut self);
}

/// Nothing around the timed repetitions: [`time_case`]'s section, for timings that are not a row (autotune's
/// candidates, the GPU tests' timer checks).
pub struct Unobserved;

impl TimedSection for Unobserved {
    fn begin(&mut self) {}
    fn end(&mut self) {}
}

/// Times a prepared case the way the runner does: after one untimed-for-the-row launch that sizes the batch and a
/// probe batch that refines it, each repetition launches the case `B` times back to back between one pair of device
/// events (or replays a graph of those `B` launches) and records the batch time / `B`. Slow kernels get `B` = 1 and
/// fewer repetitions (at least 3) within `opts.time_budget_s`. The case must have been launched (and verified) once.
pub fn time_case(dev: &dyn Device, case: &mut dyn Case, opts: &RunOptions) -> Result<Timed, Error> {
    time_case_within(dev, case, opts, &mut Unobserved)
}

/// [`time_case`], with `section` begun just before the first timed repetition and ended after the last: the warm-up
/// (the sizing launch, the probe batch, the graph's capture and the untimed batches) is outside it.
pub fn time_case_within(
    dev: &dyn Device,
    case: &mut dyn Case,
    opts: &RunOptions,
    section: &mut dyn TimedSection,
) -> Result<Timed, Error> {
    if case.clock() == Clock::Host {
        return time_sequence(dev, case, opts, section);
    }
    let budget = opts.time_budget_s;
    // Warm-up 1: one launch, timed alone, which includes its launch latency, so B starts low.
    let single_ms = f64::from(dev.time_ms(&mut || case.launch())?);
    let mut b = launches_per_rep(single_ms, budget);
    let mut per_launch_ms = single_ms;
    let mut warmups_done = 1;
    if b > 1 {
        // Warm-up 2: a batch, whose time per launch no longer includes the latency; B is sized again from it.
        let batch_ms = f64::from(dev.time_ms(&mut || (0..b).try_for_each(|_| case.launch()))?);
        per_launch_ms = batch_ms / f64::from(b);
        b = launches_per_rep(per_launch_ms, budget);
        warmups_done += 1;
    }
    let (mut replay, mut note) = (None, None);
    if opts.timing == Timing::Graph {
        match dev.capture(b, &mut || case.launch()) {
            Ok(r) => replay = r,
            Err(e) => {
                // A case that cannot be captured (a library call that allocates, say) is still timed, on the stream.
                dev.synchronize()?;
                note = Some(format!("timed on the stream: the graph capture failed: {e}"));
            }
        }
    }
    let timing = TimedBy::Device(if replay.is_some() { Timing::Graph } else { Timing::Stream });
    let mut batch = || match &replay {
        Some(r) => r.launch(),
        None => (0..b).try_for_each(|_| case.launch()),
    };
    let batch_ms = per_launch_ms * f64::from(b);
    let (warmup, reps) = launches_within_budget(batch_ms, opts.warmup.saturating_sub(warmups_done), opts.reps, budget);
    // A fresh graph is replayed once untimed in any case: its first launch may still set up.
    let warmup = if replay.is_some() { warmup.max(1) } else { warmup };
    for _ in 0..warmup {
        batch()?;
    }
    let mut times = Vec::with_capacity(reps as usize);
    section.begin();
    for _ in 0..reps {
        times.push(f64::from(dev.time_ms(&mut batch)?) / f64::from(b));
    }
    section.end();
    let stats = Stats::from_ms(&times).ok_or_else(|| Error::Timing(format!("no valid timings from {times:?}")))?;
    if stats.median_ms <= 0.0 {
        return Err(Error::Timing(format!(
            "the median time per launch is {} ms ({} repetitions of {b} launches): the device events saw no time",
            stats.median_ms, stats.reps
        )));
    }
    Ok(Timed { stats, launches_per_rep: b, timing, note })
}

/// Times a [`Clock::Host`] case: each repetition is one whole sequence (`launch`, which may read back and launch
/// again, then a synchronisation) between two readings of the host's monotonic clock. The first call is untimed
/// and sizes the warm-up and repetitions to the budget, as for slow kernels.
fn time_sequence(
    dev: &dyn Device,
    case: &mut dyn Case,
    opts: &RunOptions,
    section: &mut dyn TimedSection,
) -> Result<Timed, Error> {
    let mut once = || -> Result<f64, Error> {
        let start = std::time::Instant::now();
        case.launch()?;
        dev.synchronize()?;
        Ok(start.elapsed().as_secs_f64() * 1e3)
    };
    let first_ms = once()?;
    let (warmup, reps) = launches_within_budget(first_ms, opts.warmup.saturating_sub(1), opts.reps, opts.time_budget_s);
    for _ in 0..warmup {
        once()?;
    }
    section.begin();
    let times = (0..reps).map(|_| once()).collect::<Result<Vec<f64>, Error>>()?;
    section.end();
    let stats = Stats::from_ms(&times).ok_or_else(|| Error::Timing(format!("no valid timings from {times:?}")))?;
    if stats.median_ms <= 0.0 {
        return Err(Error::Timing(format!("the host clock saw no time over {} sequences", stats.reps)));
    }
    Ok(Timed { stats, launches_per_rep: 1, timing: TimedBy::Host, note: None })
}

/// Launches of the empty kernel per repetition when measuring the launch gap.
const GAP_LAUNCHES: u32 = 1000;

/// Measures the launch gap both ways with the empty kernel ([`crate::code_objects::EMPTY_KERNEL`]); a failure is noted,
/// not fatal.
pub fn timing_record(gpu: &Gpu, method: Timing) -> TimingRecord {
    let mut record = TimingRecord { method, launch_gap_us: None, graph_launch_gap_us: None, note: String::new() };
    match launch_gaps_us(gpu) {
        Ok((stream, graph)) => (record.launch_gap_us, record.graph_launch_gap_us) = (Some(stream), graph),
        Err(e) => record.note = format!("launch gap not measured: {e}"),
    }
    record
}

/// Time per launch of the empty kernel, µs, in a batch on the stream and (where it can be captured) as a graph.
pub fn launch_gaps_us(gpu: &Gpu) -> Result<(f64, Option<f64>), Error> {
    let kernel = gpu.kernel(crate::code_objects::LAUNCH_SOURCE, crate::code_objects::EMPTY_KERNEL)?;
    let dev = gpu.device.as_ref();
    let config = LaunchConfig::linear(1, 1);
    let mut launch = || dev.launch(&kernel, &config, &[]);
    let median_us = |batch: &mut dyn FnMut() -> device::Result<()>| -> Result<f64, Error> {
        batch()?;
        let times = (0..5)
            .map(|_| Ok(f64::from(dev.time_ms(batch)?) * 1e3 / f64::from(GAP_LAUNCHES)))
            .collect::<Result<Vec<f64>, Error>>()?;
        Stats::from_ms(&times).map(|s| s.median_ms).ok_or_else(|| Error::Timing(format!("bad timings {times:?}")))
    };
    let stream = median_us(&mut || (0..GAP_LAUNCHES).try_for_each(|_| launch()))?;
    let graph = match dev.capture(GAP_LAUNCHES, &mut launch)? {
        Some(replay) => Some(median_us(&mut || replay.launch())?),
        None => None,
    };
    Ok((stream, graph))
}

/// Warm-up and timed repetition counts for a point whose repetition (one batch of launches) takes `launch_ms`: as
/// asked, unless that overruns `budget_s`, but at least 3 timed repetitions (a median of fewer means little) and no
/// warm-up beyond the batches that measured `launch_ms`.
pub fn launches_within_budget(launch_ms: f64, warmup: u32, reps: u32, budget_s: f64) -> (u32, u32) {
    let fits = if launch_ms > 0.0 { (budget_s * 1e3 / launch_ms).floor() } else { f64::INFINITY };
    let fits = if fits.is_finite() { fits as u64 } else { u64::MAX };
    if fits >= u64::from(warmup) + u64::from(reps) {
        return (warmup, reps);
    }
    let reps_fit = u32::try_from(fits).unwrap_or(u32::MAX).min(reps).max(3.min(reps));
    let warmup_fit = u32::try_from(fits.saturating_sub(u64::from(reps_fit))).unwrap_or(0).min(warmup);
    (warmup_fit, reps_fit)
}
