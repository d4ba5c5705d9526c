//! Experiments and the one runner they share.
//!
//! An experiment is data plus three small pieces of code: its sweep expands into [`Point`]s (each with a stable
//! key), `prepare` allocates and initialises one point's buffers, and the resulting [`Case`] launches, verifies and
//! says how much work one launch does. The runner does the rest the same way for every experiment: skip points a
//! resumed CSV already holds, verify before timing, warm up, time repetitions with device events, and append each
//! row as it finishes.

pub mod estimate;
pub mod fusion;
pub mod matmul;
pub mod occupancy;
pub mod pt;
pub mod registry;
pub mod smoke;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use crate::device::{self, Device, LaunchConfig, Timing};
use crate::gpu::Gpu;
use crate::measure::Stats;
use crate::report::csv::{header, read_rows, Context, CsvLog, Row, Status};
use crate::report::plot::{render_png, LinePlot};
use crate::report::run_json::{self, Fingerprint, Invocation};
use crate::verify::Verification;

pub use estimate::Work;

/// Errors that stop a run (as opposed to a point's failure, which becomes a row).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The device layer failed.
    #[error(transparent)]
    Device(#[from] device::Error),
    /// A kernel could not be built, found or loaded.
    #[error(transparent)]
    Kernels(#[from] crate::kernels::Error),
    /// Results could not be written.
    #[error(transparent)]
    Report(#[from] crate::report::Error),
    /// The GPU could not be opened, or its kernels not loaded.
    #[error(transparent)]
    Gpu(#[from] crate::gpu::Error),
    /// An option is out of range; the message names the flag.
    #[error("{0}")]
    Options(String),
    /// A point cannot be launched as asked, e.g. it needs more groups than one launch takes.
    #[error("{0}")]
    Unsupported(String),
    /// A measurement could not be made or used: no valid timings, a device clock that does not advance,
    /// timeline records that do not parse.
    #[error("{0}")]
    Measurement(String),
    /// The reference a point is checked against failed its own check (e.g. the vendor BLAS against the host).
    #[error("{0}")]
    Reference(String),
    /// A plot could not be drawn.
    #[error(transparent)]
    Plot(#[from] crate::report::plot::Error),
    /// `suite compare` could not read a run or write its report.
    #[error(transparent)]
    Compare(#[from] crate::report::compare::Error),
    /// The device events gave no usable time.
    #[error("timing: {0}")]
    Timing(String),
    /// A benchmark of the suite itself could not run.
    #[error("bench: {0}")]
    Bench(String),
    /// A CSV holds no verified rows, so there is nothing to plot.
    #[error("{}: no verified rows to plot", .csv.display())]
    NothingToPlot {
        /// The CSV.
        csv: PathBuf,
    },
    /// An experiment name that is not in [`registry::EXPERIMENTS`].
    #[error("unknown experiment `{name}`; known: {known}")]
    UnknownExperiment {
        /// The name asked for.
        name: String,
        /// The registry's names, comma-separated.
        known: String,
    },
}

impl From<crate::options::Error> for Error {
    fn from(e: crate::options::Error) -> Error {
        Error::Options(e.to_string())
    }
}

/// One point of a sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Index into the experiment's own list of specs.
    pub index: usize,
    /// Stable identity, e.g. `naive/m=1024,n=1024,k=1024`: the same point has the same key in every run.
    pub key: String,
    /// Values of the experiment's parameter columns.
    pub params: Vec<String>,
    /// Why the point cannot run, when it cannot (written as an `invalid` row).
    pub invalid: Option<String>,
    /// What one launch does, for the estimate of its time before it runs ([`estimate`]).
    pub work: Work,
}

/// The rate an experiment reports and how it is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Metric {
    /// CSV column, with its unit: `gbps` or `gflops`.
    pub column: &'static str,
    /// What is counted, e.g. "GB/s = (bytes read + bytes written) / median time".
    pub formula: &'static str,
}

/// One prepared sweep point, ready to launch.
pub trait Case {
    /// Enqueues one launch of the kernel under test. The runner calls it many times back to back, and may capture
    /// the calls into a graph that replays them, so it must only enqueue: no copies to or from the host, no
    /// synchronisation, and the same arguments every time once the first (verified) launch is done.
    fn launch(&mut self) -> device::Result<()>;
    /// Compares the device result of the launch before with the reference.
    fn verify(&mut self) -> Result<Verification, Error>;
    /// Work done by one launch, in the metric's unit before scaling: bytes for GB/s, FLOP for GFLOP/s.
    fn work(&self) -> f64;
    /// Bytes of device memory one launch touches (inputs and outputs), so the runner can tell whether back-to-back
    /// launches find them in L2. `None` when unknown.
    fn footprint_bytes(&self) -> Option<u64> {
        None
    }
    /// Which clock times the case. [`Clock::Device`] (the default): `launch` only enqueues, and batches of launches
    /// are timed with device events. [`Clock::Host`]: `launch` runs a whole sequence with host steps in it (a
    /// readback, then a launch sized by it) and the runner times each call, up to a final synchronisation, with the
    /// host's monotonic clock.
    fn clock(&self) -> Clock {
        Clock::Device
    }
    /// Values of the experiment's parameter columns known only once the case is prepared (e.g. the kernel an
    /// autotuning step picked), as (column, value): they replace the point's own values in the row.
    fn resolved_params(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
}

/// The clock that times a case (see [`Case::clock`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// Device events around batches of back-to-back launches.
    Device,
    /// The host's monotonic clock around one whole sequence and a final synchronisation.
    Host,
}

/// What timed a row, as written in its `timing` column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimedBy {
    /// Device events, around batches enqueued this way.
    Device(Timing),
    /// The host clock, around whole sequences (one per repetition).
    Host,
}

impl TimedBy {
    /// The CSV value: `graph` or `stream` (device events), or `host`.
    pub fn name(self) -> &'static str {
        match self {
            TimedBy::Device(timing) => timing.name(),
            TimedBy::Host => "host",
        }
    }
}

impl std::fmt::Display for TimedBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// An experiment: a sweep and how to prepare each of its points.
pub trait Experiment {
    /// Name, used for the CSV file and the `experiment` column.
    fn name(&self) -> &'static str;
    /// The experiment's parameter columns, in order.
    fn param_columns(&self) -> &'static [&'static str];
    /// The rate column and its formula.
    fn metric(&self) -> Metric;
    /// The sweep's options as run, for `run.json`.
    fn options(&self) -> serde_json::Value;
    /// Kernel sources the experiment loads (compiled up front, so a compile error stops the run early).
    fn sources(&self) -> &'static [&'static str];
    /// The points of the sweep, in a fixed order.
    fn points(&self, gpu: &Gpu) -> Vec<Point>;
    /// Allocates and initialises one point. Outputs are poisoned so unwritten elements fail verification.
    fn prepare<'g>(&self, gpu: &'g Gpu, point: &Point) -> Result<Box<dyn Case + 'g>, Error>;
    /// The experiment's plots, made from all rows of its CSV (as column → value) and any side files in the CSV's
    /// folder `dir`, as (file name, plot).
    fn plots(&self, rows: &[BTreeMap<String, String>], dir: &Path) -> Vec<(String, LinePlot)> {
        let _ = (rows, dir);
        Vec::new()
    }
    /// How `suite compare` compares this experiment across runs (see [`crate::report::compare`]): by default its
    /// metric column as it is. An experiment overrides it to normalise (e.g. % of the vendor BLAS, a speedup) and to
    /// draw headline plots with one line per run.
    fn comparison(&self) -> Box<dyn crate::report::compare::Comparison> {
        Box::new(crate::report::compare::MetricComparison { column: Some(self.metric().column) })
    }
    /// Tells the experiment its results folder before the run starts, for side files beside the CSV (e.g.
    /// occupancy's timelines). Most experiments write none.
    fn set_results_dir(&mut self, dir: &Path) {
        let _ = dir;
    }
    /// The experiment's headline figures from all rows of its CSV, one line each, for the run's `summary.md`
    /// (what a person should read first; the plots and the CSV hold the rest). Empty when no row says anything.
    fn headlines(&self, rows: &[BTreeMap<String, String>]) -> Vec<String> {
        let _ = rows;
        Vec::new()
    }
    /// Sources a run of this sweep compiles at run time on a device of `device`'s shape (generated or specialised
    /// kernels), so `suite kernels build` makes them ahead of time for `--kernels-dir`. Most experiments have none.
    fn specialisations(&self, device: crate::kernels::DeviceShape) -> Vec<crate::kernels::Specialisation> {
        let _ = device;
        Vec::new()
    }
    /// Fits the sweep to the device it is about to run on, before `options` and `points` are read: e.g. matmul's
    /// default kernel set depends on the architecture. Most experiments need nothing.
    fn fit_to_device(&mut self, props: &crate::device::Props) {
        let _ = props;
    }
}

/// Inputs shared by consecutive points of a sweep (matmul's matrices per shape, fusion's vectors per size): made at
/// the first point that needs them and dropped when the sweep moves on, so one set is alive at a time. Run state, not
/// an option: a clone starts empty and every cache compares equal (sweeps compare by their options).
pub struct RunCache<T>(std::cell::RefCell<Option<std::rc::Rc<T>>>);

impl<T> RunCache<T> {
    /// The cached value if `fits` accepts it; otherwise the old one is freed first and `make` makes the new one.
    pub fn get_or_make<E>(
        &self,
        fits: impl Fn(&T) -> bool,
        make: impl FnOnce() -> Result<T, E>,
    ) -> Result<std::rc::Rc<T>, E> {
        if let Some(value) = self.0.borrow().as_ref().filter(|v| fits(v)) {
            return Ok(value.clone());
        }
        // Free the previous point's buffers before allocating the next.
        *self.0.borrow_mut() = None;
        let value = std::rc::Rc::new(make()?);
        *self.0.borrow_mut() = Some(value.clone());
        Ok(value)
    }
}

impl<T> Default for RunCache<T> {
    fn default() -> Self {
        RunCache(std::cell::RefCell::new(None))
    }
}

impl<T> Clone for RunCache<T> {
    fn clone(&self) -> Self {
        RunCache::default()
    }
}

impl<T> PartialEq for RunCache<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<T> Eq for RunCache<T> {}

impl<T> std::fmt::Debug for RunCache<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.borrow().is_some() { "RunCache(filled)" } else { "RunCache(empty)" })
    }
}

/// The `ok` rows of a CSV read by [`read_rows`].
pub fn ok_rows(rows: &[BTreeMap<String, String>]) -> impl Iterator<Item = &BTreeMap<String, String>> {
    rows.iter().filter(|r| r.get("status").is_some_and(|s| s == "ok"))
}

/// A row's numeric column, when it has one.
pub fn num(row: &BTreeMap<String, String>, column: &str) -> Option<f64> {
    row.get(column).and_then(|v| v.parse::<f64>().ok())
}

/// Renders an experiment's plots from its CSV into `out_dir`; returns the files written.
pub fn render_plots(exp: &dyn Experiment, csv_path: &Path, out_dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let rows = read_rows(csv_path)?;
    std::fs::create_dir_all(out_dir).map_err(|source| crate::report::Error::Io {
        action: "cannot create",
        path: out_dir.to_path_buf(),
        source,
    })?;
    let mut written = Vec::new();
    let dir = csv_path.parent().unwrap_or(Path::new("."));
    for (file, plot) in exp.plots(&rows, dir) {
        let path = out_dir.join(file);
        render_png(&plot, &path, PLOT_WIDTH, PLOT_HEIGHT)?;
        written.push(path);
    }
    Ok(written)
}

/// Plot size in pixels: large enough for a dozen legend entries beside the data.
const PLOT_WIDTH: u32 = 1600;
const PLOT_HEIGHT: u32 = 1000;

/// Every `n`-th point starting at `index` (`--shard index/count`, 0-based), for one process per GPU under `srun`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This process's shard, 0-based.
    pub index: usize,
    /// Number of shards.
    pub count: usize,
}

impl std::str::FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || format!("--shard wants i/n with 0 <= i < n (e.g. 0/8 for $SLURM_LOCALID/8), not `{s}`");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count) = (i.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// How to run a sweep.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Results folder.
    pub out_dir: PathBuf,
    /// Skip points already measured in an existing CSV instead of refusing to overwrite it.
    pub resume: bool,
    /// Run only this shard of the points.
    pub shard: Option<Shard>,
    /// Untimed launches before timing.
    pub warmup: u32,
    /// Timed launches (at most; see `time_budget_s`).
    pub reps: u32,
    /// Time one point may spend in warm-up and timed launches, in seconds. A point whose single launch is slow
    /// gets fewer launches (never fewer than 3 timed), so a naive kernel at 8192 does not take minutes.
    pub time_budget_s: f64,
    /// How each repetition's batch of launches is enqueued.
    pub timing: Timing,
    /// A point estimated to take longer than this, in seconds, is not run but written as an `invalid` row.
    pub max_point_s: f64,
}

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

/// Times a prepared case the way the runner does: after one untimed-for-the-row launch that sizes the batch and a
/// probe batch that refines it, each repetition launches the case `B` times back to back between one pair of device
/// events (or replays a graph of those `B` launches) and records the batch time / `B`. Slow kernels get `B` = 1 and
/// fewer repetitions (at least 3) within `opts.time_budget_s`. The case must have been launched (and verified) once.
pub fn time_case(dev: &dyn Device, case: &mut dyn Case, opts: &RunOptions) -> Result<Timed, Error> {
    if case.clock() == Clock::Host {
        return time_sequence(dev, case, opts);
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
    for _ in 0..reps {
        times.push(f64::from(dev.time_ms(&mut batch)?) / f64::from(b));
    }
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
fn time_sequence(dev: &dyn Device, case: &mut dyn Case, opts: &RunOptions) -> Result<Timed, Error> {
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
    let times = (0..reps).map(|_| once()).collect::<Result<Vec<f64>, Error>>()?;
    let stats = Stats::from_ms(&times).ok_or_else(|| Error::Timing(format!("no valid timings from {times:?}")))?;
    if stats.median_ms <= 0.0 {
        return Err(Error::Timing(format!("the host clock saw no time over {} sequences", stats.reps)));
    }
    Ok(Timed { stats, launches_per_rep: 1, timing: TimedBy::Host, note: None })
}

/// Launches of the empty kernel per repetition when measuring the launch gap.
const GAP_LAUNCHES: u32 = 1000;

/// How a run was timed, for `run.json`: the method asked for and the GPU's gap between back-to-back kernels both
/// ways, measured at the start of the run.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct TimingRecord {
    /// The method asked for (`--timing`); a row's `timing` column says what timed it.
    pub method: Timing,
    /// Time per launch of an empty one-item kernel in a batch of 1000 launched back to back on the stream, µs
    /// (median of 5): the gap each batched launch adds to a kernel's own time.
    pub launch_gap_us: Option<f64>,
    /// The same batch replayed as a graph, µs; absent where the platform cannot capture.
    pub graph_launch_gap_us: Option<f64>,
    /// Why a gap could not be measured, when it could not.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// Measures the launch gap both ways with `smoke_empty`; a failure is noted, not fatal.
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
    let kernel = gpu.kernel("smoke", "smoke_empty")?;
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

/// Counts of what became of a run's points.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Verified and timed.
    pub ok: usize,
    /// Ran but did not verify.
    pub fail: usize,
    /// Could not run.
    pub error: usize,
    /// Not valid points.
    pub invalid: usize,
    /// Already in a resumed CSV (any status; not counted above).
    pub skipped: usize,
    /// Of the skipped points, those recorded `ok`.
    pub skipped_ok: usize,
    /// Of the skipped points, those recorded `fail` or `error`.
    pub skipped_failed: usize,
}

impl Summary {
    /// Whether the run succeeded: no point failed verification or errored (in this run or, for a resumed run, in
    /// the rows it kept), and something was measured, unless the sweep had no points at all. A run in which every
    /// point is `invalid` or `error` measured nothing and fails.
    pub fn success(&self) -> bool {
        let points = self.ok + self.fail + self.error + self.invalid + self.skipped;
        self.fail + self.error + self.skipped_failed == 0 && (self.ok + self.skipped_ok > 0 || points == 0)
    }
}

/// CSV file name for an experiment, with the shard in it when sharded (`suite merge` joins them).
pub fn csv_name(experiment: &str, shard: Option<Shard>) -> String {
    match shard {
        None => format!("{experiment}.csv"),
        Some(s) => format!("{experiment}.shard-{}-of-{}.csv", s.index, s.count),
    }
}

/// The default results folder: `results/<date>-<host>-<arch>`.
pub fn default_out_dir(gpu: &Gpu) -> PathBuf {
    let date = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let host = gethostname::gethostname().to_string_lossy().into_owned();
    let host: String = host.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    PathBuf::from("results").join(format!("{}-{}-{}", &date[..10], host, gpu.device.props().arch))
}

/// Runs an experiment's sweep on `gpu`, writing rows to `<out_dir>/<name>.csv` and the context to `run.json`.
pub fn run(gpu: &Gpu, exp: &dyn Experiment, opts: &RunOptions) -> Result<Summary, Error> {
    let props = gpu.device.props();
    for source in exp.sources() {
        gpu.module(source)?;
    }
    // Everything that makes rows comparable goes into the fingerprint; the shard does not (shards share it).
    let options = serde_json::json!({
        exp.name(): exp.options(),
        "warmup": opts.warmup,
        "reps": opts.reps,
        "time_budget_s": opts.time_budget_s,
        "timing": opts.timing,
        "max_point_s": opts.max_point_s,
        "metric": exp.metric(),
    });
    let mut invocation = Invocation::now(options.clone(), opts.shard.map(|s| s.to_string()));
    invocation.experiment = exp.name().to_string();
    invocation.compilers = gpu.compiler_records();
    invocation.blas = match gpu.device.blas() {
        Ok(path) => path,
        Err(e) => e.to_string(),
    };
    invocation.timing = Some(timing_record(gpu, opts.timing));
    let context = Context {
        experiment: exp.name().to_string(),
        platform: props.platform.name().to_string(),
        device: props.name.clone(),
        arch: props.arch.to_string(),
        wave_size: props.wave_size.0,
    };
    let columns = header(exp.param_columns(), exp.metric().column);
    invocation.fingerprint = Some(Fingerprint::new(&options, exp.sources(), &invocation.compilers, props, &columns));
    let csv_path = opts.out_dir.join(csv_name(exp.name(), opts.shard));
    // Checked before the CSV is created or reopened, so a refused run leaves the folder as it was.
    run_json::check(&opts.out_dir, props, &invocation, csv_path.exists())?;
    let mut log = CsvLog::open(&csv_path, context, &columns, opts.resume)?;
    run_json::record(&opts.out_dir, props, invocation)?;

    let points = plan(gpu, exp, opts);
    let to_run: Vec<&Planned> = points.iter().filter(|p| log.recorded(&p.point.key).is_none()).collect();
    let seconds: f64 = to_run.iter().map(|p| p.estimate_s).sum();
    let skipped = points.len() - to_run.len();
    eprintln!(
        "{}: {} points{}, estimate {} ({} over --max-point-seconds {} become invalid rows)",
        exp.name(),
        to_run.len(),
        if skipped > 0 { format!(" to run ({skipped} already in the CSV)") } else { String::new() },
        estimate::seconds_text(seconds),
        to_run.iter().filter(|p| p.over_limit).count(),
        opts.max_point_s
    );
    let points: Vec<Point> = points.into_iter().map(|p| p.point).collect();
    let bar = ProgressBar::new(points.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {elapsed_precise} {wide_msg}")
            .expect("the progress template is valid")
            .progress_chars("=> "),
    );
    bar.set_prefix(exp.name());
    let mut summary = Summary::default();
    for point in &points {
        if let Some(status) = log.recorded(&point.key) {
            summary.skipped += 1;
            match status {
                Status::Ok => summary.skipped_ok += 1,
                Status::Fail | Status::Error => summary.skipped_failed += 1,
                Status::Invalid => {}
            }
            bar.inc(1);
            continue;
        }
        bar.set_message(point.key.clone());
        let row = measure_point(gpu, exp, point, opts);
        match row.status {
            Status::Ok => summary.ok += 1,
            Status::Fail => summary.fail += 1,
            Status::Error => summary.error += 1,
            Status::Invalid => summary.invalid += 1,
        }
        log.append(&row)?;
        let line = describe(exp, &row);
        if bar.is_hidden() {
            eprintln!("{line}");
        } else {
            bar.println(line);
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    // Plots are drawn from the whole CSV, so a resumed run plots the earlier rows too; a shard's CSV holds only its
    // points, so shards are plotted after `suite merge`.
    if opts.shard.is_none() {
        for path in render_plots(exp, &csv_path, &opts.out_dir)? {
            eprintln!("plot: {}", path.display());
        }
        // The run's roofline, over every experiment in the folder so far.
        for path in crate::report::roofline::write(&opts.out_dir)? {
            eprintln!("roofline: {}", path.display());
        }
    }
    Ok(summary)
}

/// A point as the runner will treat it: with its estimate, and made `invalid` when that is over the limit.
#[derive(Debug, Clone)]
pub struct Planned {
    /// The point (its `invalid` set when over the limit).
    pub point: Point,
    /// Its estimated time, seconds (0 for an invalid point, which does not run).
    pub estimate_s: f64,
    /// Whether the estimate made it invalid.
    pub over_limit: bool,
}

/// The points this process runs (its shard of the sweep), each estimated on `gpu` under `opts`; a point estimated
/// past `opts.max_point_s` becomes `invalid` with the estimate and the flag to raise in its reason.
pub fn plan(gpu: &Gpu, exp: &dyn Experiment, opts: &RunOptions) -> Vec<Planned> {
    let ceilings = crate::peaks::ceilings(gpu.device.props());
    exp.points(gpu)
        .into_iter()
        .enumerate()
        .filter(|(i, _)| opts.shard.is_none_or(|s| i % s.count == s.index))
        .map(|(_, mut point)| {
            if point.invalid.is_some() {
                return Planned { point, estimate_s: 0.0, over_limit: false };
            }
            let e = estimate::estimate(&point.work, &ceilings, opts);
            let over = estimate::over_limit(&e, opts.max_point_s);
            let over_limit = over.is_some();
            point.invalid = over;
            Planned { point, estimate_s: if over_limit { 0.0 } else { e.point_s }, over_limit }
        })
        .collect()
}

/// One progress line for a finished row.
fn describe(exp: &dyn Experiment, row: &Row) -> String {
    let rate = row.rate.map(|r| format!("{r:.1} {}", exp.metric().column)).unwrap_or_default();
    let time = row
        .time_ms
        .map(|(m, lo, hi)| {
            format!("{m:.4} ms [{lo:.4}, {hi:.4}] ({}×{} {})", row.reps, row.launches_per_rep, row.timing)
        })
        .unwrap_or_default();
    let msg = if row.message.is_empty() { String::new() } else { format!(": {}", row.message) };
    format!("{} {} {time} {rate}{msg}", row.status.as_str(), row.key)
}

fn measure_point(gpu: &Gpu, exp: &dyn Experiment, point: &Point, opts: &RunOptions) -> Row {
    let mut row = Row {
        params: point.params.clone(),
        reps: 0,
        launches_per_rep: 0,
        timing: String::new(),
        l2_resident: None,
        flop_count: point.work.counted.then_some(point.work.flops),
        byte_count: point.work.counted.then_some(point.work.bytes),
        time_ms: None,
        rate: None,
        max_rel_err: None,
        tolerance: None,
        status: Status::Ok,
        message: String::new(),
        key: point.key.clone(),
    };
    if let Some(why) = &point.invalid {
        row.status = Status::Invalid;
        row.message = why.clone();
        return row;
    }
    match time_point(gpu, exp, point, opts, &mut row) {
        Ok(()) => {}
        Err(e) => {
            row.status = Status::Error;
            row.message = e.to_string();
        }
    }
    row
}

/// Verify, then warm up, then time. A failed verification sets the row's status and records no time.
fn time_point(gpu: &Gpu, exp: &dyn Experiment, point: &Point, opts: &RunOptions, row: &mut Row) -> Result<(), Error> {
    let mut case = exp.prepare(gpu, point)?;
    for (column, value) in case.resolved_params() {
        if let Some(i) = exp.param_columns().iter().position(|c| *c == column) {
            row.params[i] = value;
        }
    }
    case.launch()?;
    gpu.device.synchronize()?;
    let check = case.verify()?;
    row.max_rel_err = Some(check.max_rel_err);
    row.tolerance = Some(check.tolerance);
    if !check.passed() {
        row.status = Status::Fail;
        row.message = check.summary();
        return Ok(());
    }
    let l2 = gpu.device.props().l2_bytes;
    row.l2_resident = case.footprint_bytes().zip(l2).map(|(bytes, l2)| bytes <= l2);
    let timed = time_case(gpu.device.as_ref(), case.as_mut(), opts)?;
    let rate = timed
        .stats
        .giga_per_second(case.work())
        .ok_or_else(|| Error::Timing(format!("no rate from a median of {} ms per launch", timed.stats.median_ms)))?;
    row.reps = timed.stats.reps;
    row.launches_per_rep = timed.launches_per_rep;
    row.timing = timed.timing.name().to_string();
    row.time_ms = Some((timed.stats.median_ms, timed.stats.min_ms, timed.stats.max_ms));
    row.rate = Some(rate);
    if let Some(note) = timed.note {
        row.message = note;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{Arch, Arg, Kernel, Module, Platform, Props, RawAlloc, Replay, WaveSize};
    use std::sync::atomic::{AtomicU32, Ordering};

    /// What the fake device's `capture` does.
    #[derive(Clone, Copy, PartialEq)]
    enum Capture {
        Works,
        Unsupported,
        Fails,
    }

    /// A device whose events report, exactly, `latency` per timed region plus `kernel` per launch enqueued in it
    /// (`gap` more per launch on the stream than in a graph), so the runner's arithmetic can be checked on a CPU.
    struct FakeDevice {
        props: Props,
        enqueued: AtomicU32,
        capture: Capture,
        latency_ms: f64,
        kernel_ms: f64,
        stream_gap_ms: f64,
    }

    struct FakeReplay<'d> {
        dev: &'d FakeDevice,
        launches: u32,
    }

    impl Replay for FakeReplay<'_> {
        fn launch(&self) -> device::Result<()> {
            // A graph's launches are counted from bit 16 up, where `time_ms` charges them no stream gap.
            self.dev.enqueued.fetch_add(self.launches << 16, Ordering::SeqCst);
            Ok(())
        }
    }

    impl Device for FakeDevice {
        fn props(&self) -> &Props {
            &self.props
        }
        fn time_ms(&self, work: &mut dyn FnMut() -> device::Result<()>) -> device::Result<f32> {
            self.enqueued.store(0, Ordering::SeqCst);
            work()?;
            let n = self.enqueued.load(Ordering::SeqCst);
            let (stream, graph) = (f64::from(n & 0xffff), f64::from(n >> 16));
            Ok((self.latency_ms + stream * (self.kernel_ms + self.stream_gap_ms) + graph * self.kernel_ms) as f32)
        }
        fn capture(
            &self,
            times: u32,
            work: &mut dyn FnMut() -> device::Result<()>,
        ) -> device::Result<Option<Box<dyn Replay + '_>>> {
            match self.capture {
                Capture::Unsupported => Ok(None),
                Capture::Fails => Err(device::Error::Api {
                    api: "cuStreamEndCapture",
                    code: 901,
                    code_name: "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED".into(),
                    text: "capture invalidated".into(),
                }),
                Capture::Works => {
                    for _ in 0..times {
                        work()?;
                    }
                    Ok(Some(Box::new(FakeReplay { dev: self, launches: times })))
                }
            }
        }
        fn synchronize(&self) -> device::Result<()> {
            Ok(())
        }
        fn memory_info(&self) -> device::Result<(u64, u64)> {
            unreachable!("not used by the timer")
        }
        fn alloc(&self, _: usize) -> device::Result<Box<dyn RawAlloc>> {
            unreachable!("not used by the timer")
        }
        fn copy_to_device(&self, _: &dyn RawAlloc, _: &[u8]) -> device::Result<()> {
            unreachable!("not used by the timer")
        }
        fn copy_to_host(&self, _: &dyn RawAlloc, _: &mut [u8]) -> device::Result<()> {
            unreachable!("not used by the timer")
        }
        fn copy_on_device(&self, _: &dyn RawAlloc, _: &dyn RawAlloc, _: usize) -> device::Result<()> {
            unreachable!("not used by the timer")
        }
        fn fill_bytes(&self, _: &dyn RawAlloc, _: u8) -> device::Result<()> {
            unreachable!("not used by the timer")
        }
        fn load_module(&self, _: &[u8]) -> device::Result<Module> {
            unreachable!("not used by the timer")
        }
        fn kernel(&self, _: &Module, _: &str) -> device::Result<Kernel> {
            unreachable!("not used by the timer")
        }
        fn launch(&self, _: &Kernel, _: &LaunchConfig, _: &[Arg]) -> device::Result<()> {
            unreachable!("not used by the timer")
        }
        fn launch_cooperative(&self, _: &Kernel, _: &LaunchConfig, _: &[Arg]) -> device::Result<()> {
            unreachable!("not used by the timer")
        }
        fn occupancy_groups_per_cu(&self, _: &Kernel, _: u32, _: u32) -> device::Result<u32> {
            unreachable!("not used by the timer")
        }
        fn blas(&self) -> device::Result<String> {
            unreachable!("not used by the timer")
        }
        fn sgemm(
            &self,
            _: usize,
            _: usize,
            _: usize,
            _: &dyn RawAlloc,
            _: &dyn RawAlloc,
            _: &dyn RawAlloc,
        ) -> device::Result<()> {
            unreachable!("not used by the timer")
        }
        fn sdot(&self, _: usize, _: &dyn RawAlloc, _: &dyn RawAlloc, _: &dyn RawAlloc) -> device::Result<()> {
            unreachable!("not used by the timer")
        }
        fn sasum(&self, _: usize, _: &dyn RawAlloc, _: &dyn RawAlloc) -> device::Result<()> {
            unreachable!("not used by the timer")
        }
    }

    struct FakeCase<'d>(&'d FakeDevice);

    impl Case for FakeCase<'_> {
        fn launch(&mut self) -> device::Result<()> {
            self.0.enqueued.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
        fn verify(&mut self) -> Result<Verification, Error> {
            unreachable!("the timer does not verify")
        }
        fn work(&self) -> f64 {
            1.0
        }
    }

    fn fake(capture: Capture, latency_ms: f64, kernel_ms: f64, stream_gap_ms: f64) -> FakeDevice {
        let props = Props {
            platform: Platform::Nvidia,
            ordinal: 0,
            name: "fake".into(),
            arch: Arch::parse("sm_90").expect("valid"),
            arch_full: "sm_90".into(),
            wave_size: WaveSize(32),
            cu_count: 1,
            max_items_per_cu: 2048,
            max_group_size: 1024,
            max_groups_per_cu: None,
            lds_bytes_per_cu: 1 << 16,
            lds_bytes_per_group: 1 << 16,
            lds_bytes_per_group_optin: 1 << 16,
            registers_per_cu: 1 << 16,
            clock_mhz: None,
            memory_clock_mhz: None,
            memory_bus_bits: None,
            l2_bytes: None,
            memory_bytes: 1 << 30,
            runtime_version: String::new(),
            driver_version: String::new(),
        };
        FakeDevice { props, enqueued: AtomicU32::new(0), capture, latency_ms, kernel_ms, stream_gap_ms }
    }

    /// A sequence with a host step: it sleeps `ms` on the host (a stand-in for a readback and a relaunch).
    struct HostSequence<'d> {
        dev: &'d FakeDevice,
        ms: u64,
        calls: u32,
    }

    impl Case for HostSequence<'_> {
        fn launch(&mut self) -> device::Result<()> {
            self.calls += 1;
            self.dev.enqueued.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(self.ms));
            Ok(())
        }
        fn verify(&mut self) -> Result<Verification, Error> {
            unreachable!("the timer does not verify")
        }
        fn work(&self) -> f64 {
            1.0
        }
        fn clock(&self) -> Clock {
            Clock::Host
        }
    }

    #[test]
    fn a_run_cache_reuses_what_fits_and_frees_the_old_value_before_making_the_next() {
        let cache: RunCache<u32> = RunCache::default();
        let made = std::cell::Cell::new(0);
        let make = |v: u32| {
            made.set(made.get() + 1);
            Ok::<u32, ()>(v)
        };
        let first = cache.get_or_make(|v| *v == 1, || make(1)).unwrap();
        assert_eq!((*cache.get_or_make(|v| *v == 1, || make(1)).unwrap(), made.get()), (1, 1));
        // A value that does not fit is dropped before the next is made: only `first` still holds it.
        let second = cache.get_or_make(
            |v| *v == 2,
            || {
                assert_eq!(std::rc::Rc::strong_count(&first), 1, "the old value is freed first");
                make(2)
            },
        );
        assert_eq!((*second.unwrap(), made.get()), (2, 2));
        // A failed make leaves the cache empty, and clones start empty and compare equal.
        assert!(cache.get_or_make(|v| *v == 3, || Err(())).is_err());
        assert_eq!(format!("{cache:?}"), "RunCache(empty)");
        assert!(cache == cache.clone());
    }

    #[test]
    fn host_clock_cases_are_timed_one_whole_sequence_per_repetition() {
        // The fake device's events would read 5 µs per launch; a host-clock case must not be timed by them.
        let dev = fake(Capture::Works, 0.0, 0.005, 0.0);
        let mut case = HostSequence { dev: &dev, ms: 3, calls: 0 };
        for timing in [Timing::Graph, Timing::Stream] {
            case.calls = 0;
            let timed = time_case(&dev, &mut case, &options(timing)).unwrap();
            assert_eq!((timed.timing, timed.launches_per_rep, timed.note), (TimedBy::Host, 1, None));
            assert_eq!(timed.timing.name(), "host");
            // One sizing call, 2 more warm-ups (3 asked), 7 repetitions: never batched, never captured.
            assert_eq!((timed.stats.reps, case.calls), (7, 10));
            // A sleep lasts at least what was asked, so every repetition reads at least 3 ms.
            assert!(timed.stats.min_ms >= 3.0, "{:?}", timed.stats);
        }
    }

    fn options(timing: Timing) -> RunOptions {
        RunOptions {
            out_dir: PathBuf::new(),
            resume: false,
            shard: None,
            warmup: 3,
            reps: 7,
            time_budget_s: 2.0,
            timing,
            max_point_s: 60.0,
        }
    }

    #[test]
    fn batches_remove_the_launch_latency_and_graphs_the_gap() {
        // A 5 µs kernel, 20 µs of latency per timed region, 2 µs of gap per launch on the stream.
        let dev = fake(Capture::Works, 0.020, 0.005, 0.002);
        let timed = time_case(&dev, &mut FakeCase(&dev), &options(Timing::Graph)).unwrap();
        let b = timed.launches_per_rep;
        // A single launch reads 27 µs, so the probe batch has ceil(1 ms / 27 µs) = 38 launches; it reads
        // (20 + 38 · 7) µs, 7.53 µs per launch, which sets B = ceil(1 ms / 7.53 µs) = 133.
        assert_eq!(launches_per_rep(0.027, 2.0), 38);
        assert_eq!(b, 133);
        assert!(f64::from(b) * 0.005 >= 0.5, "a batch of {b} launches is too short");
        assert_eq!((timed.timing, timed.note.as_deref(), timed.stats.reps), (TimedBy::Device(Timing::Graph), None, 7));
        // One region's latency spread over B launches, no stream gap: 5 µs + 20 µs / B.
        let want = 0.005 + 0.020 / f64::from(b);
        assert!((timed.stats.median_ms - want).abs() < 1e-6, "{} vs {want}", timed.stats.median_ms);

        let timed = time_case(&dev, &mut FakeCase(&dev), &options(Timing::Stream)).unwrap();
        let want = 0.007 + 0.020 / f64::from(timed.launches_per_rep);
        assert_eq!(timed.timing, TimedBy::Device(Timing::Stream));
        assert!((timed.stats.median_ms - want).abs() < 1e-6, "{} vs {want}", timed.stats.median_ms);
    }

    #[test]
    fn a_graph_that_cannot_be_made_falls_back_to_the_stream_and_says_so() {
        let dev = fake(Capture::Unsupported, 0.0, 0.01, 0.0);
        let timed = time_case(&dev, &mut FakeCase(&dev), &options(Timing::Graph)).unwrap();
        assert_eq!((timed.timing, timed.note), (TimedBy::Device(Timing::Stream), None));
        let dev = fake(Capture::Fails, 0.0, 0.01, 0.0);
        let timed = time_case(&dev, &mut FakeCase(&dev), &options(Timing::Graph)).unwrap();
        assert_eq!(timed.timing, TimedBy::Device(Timing::Stream));
        let note = timed.note.expect("the fallback is noted");
        assert!(note.contains("graph capture failed") && note.contains("INVALIDATED"), "{note}");
    }

    #[test]
    fn long_kernels_run_alone_and_slow_ones_get_fewer_reps() {
        // 300 ms per launch, 2 s budget: B = 1, and 6 repetitions fit (after the sizing launch), of 7 asked.
        let dev = fake(Capture::Works, 0.0, 300.0, 0.0);
        let timed = time_case(&dev, &mut FakeCase(&dev), &options(Timing::Graph)).unwrap();
        assert_eq!((timed.launches_per_rep, timed.stats.reps), (1, 6));
        assert!((timed.stats.median_ms - 300.0).abs() < 1e-3);
    }

    #[test]
    fn events_that_see_no_time_are_an_error_not_a_rate() {
        let dev = fake(Capture::Works, 0.0, 0.0, 0.0);
        let err = time_case(&dev, &mut FakeCase(&dev), &options(Timing::Graph)).unwrap_err();
        assert!(matches!(err, Error::Timing(_)), "{err}");
        assert!(err.to_string().contains("saw no time"), "{err}");
    }

    #[test]
    fn shards_parse_and_reject_nonsense() {
        assert_eq!("0/8".parse::<Shard>(), Ok(Shard { index: 0, count: 8 }));
        assert_eq!(" 7 / 8 ".parse::<Shard>().map(|s| s.to_string()), Ok("7/8".to_string()));
        for bad in ["8/8", "1/0", "x/2", "3", "-1/2"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        assert_eq!(csv_name("matmul", None), "matmul.csv");
        assert_eq!(csv_name("matmul", Some(Shard { index: 1, count: 4 })), "matmul.shard-1-of-4.csv");
    }

    #[test]
    fn a_run_succeeds_only_when_something_was_measured_and_nothing_failed() {
        let s = |ok, fail, error, invalid, skipped, skipped_ok, skipped_failed| Summary {
            ok,
            fail,
            error,
            invalid,
            skipped,
            skipped_ok,
            skipped_failed,
        };
        let cases = [
            (s(3, 0, 0, 2, 0, 0, 0), true),
            (s(0, 0, 0, 0, 0, 0, 0), true),
            // Every point invalid, or invalid and error: nothing measured.
            (s(0, 0, 0, 4, 0, 0, 0), false),
            (s(0, 0, 1, 4, 0, 0, 0), false),
            (s(3, 1, 0, 0, 0, 0, 0), false),
            (s(3, 0, 1, 0, 0, 0, 0), false),
            // Resumed: the kept rows count.
            (s(0, 0, 0, 0, 5, 5, 0), true),
            (s(0, 0, 0, 1, 5, 4, 0), true),
            (s(2, 0, 0, 0, 5, 4, 1), false),
            (s(0, 0, 0, 0, 3, 0, 0), false),
        ];
        for (summary, success) in cases {
            assert_eq!(summary.success(), success, "{summary:?}");
        }
    }

    #[test]
    #[ignore = "needs a GPU"]
    fn a_resumed_run_adds_nothing_and_other_options_are_refused_before_writing() {
        let gpu = Gpu::open(None, 0, None).unwrap_or_else(|e| panic!("this test needs a GPU: {e}"));
        let dir = tempfile::tempdir().unwrap();
        let sweep = smoke::SmokeSweep { sizes: vec![1000, 4096], group_size: 256 };
        let opts = RunOptions {
            out_dir: dir.path().to_path_buf(),
            resume: false,
            shard: None,
            warmup: 1,
            reps: 3,
            time_budget_s: 1.0,
            timing: crate::device::Timing::Graph,
            max_point_s: 60.0,
        };
        let first = run(&gpu, &sweep, &opts).unwrap();
        assert_eq!((first.ok, first.fail, first.error), (2, 0, 0));
        let csv = dir.path().join("smoke.csv");
        let text = std::fs::read_to_string(&csv).unwrap();
        let resumed = RunOptions { resume: true, ..opts.clone() };
        let again = run(&gpu, &sweep, &resumed).unwrap();
        assert_eq!((again.ok, again.skipped, again.skipped_ok), (0, 2, 2));
        assert!(again.success());
        assert_eq!(std::fs::read_to_string(&csv).unwrap(), text);
        let err = run(&gpu, &sweep, &RunOptions { reps: 5, ..resumed.clone() }).unwrap_err();
        assert!(err.to_string().contains("its options differs"), "{err}");
        let other = smoke::SmokeSweep { group_size: 128, ..sweep.clone() };
        let err = run(&gpu, &other, &resumed).unwrap_err();
        assert!(err.to_string().contains("its options differs"), "{err}");
        assert_eq!(std::fs::read_to_string(&csv).unwrap(), text);
        let run_json = run_json::read(dir.path()).unwrap().unwrap();
        assert_eq!(run_json.invocations.len(), 2, "refused runs record nothing");
        let fingerprint = run_json.invocations[0].fingerprint.clone().unwrap();
        assert!(fingerprint.compiler.starts_with("smoke: "), "{fingerprint:?}");
        assert_eq!(fingerprint.csv_header, header(sweep.param_columns(), "gbps").join(","));
    }

    #[test]
    fn slow_points_get_fewer_launches_but_at_least_three_timed() {
        // Fast: everything asked for.
        assert_eq!(launches_within_budget(0.01, 2, 20, 2.0), (2, 20));
        // 100 ms each, 2 s budget: 20 launches fit, all timed, no further warm-up.
        assert_eq!(launches_within_budget(100.0, 2, 20, 2.0), (0, 20));
        // 150 ms: 13 fit.
        assert_eq!(launches_within_budget(150.0, 2, 20, 2.0), (0, 13));
        // 5 s each: still 3 timed.
        assert_eq!(launches_within_budget(5000.0, 2, 20, 2.0), (0, 3));
        // Fewer asked than the floor: what was asked.
        assert_eq!(launches_within_budget(5000.0, 0, 1, 2.0), (0, 1));
        assert_eq!(launches_within_budget(0.0, 1, 5, 0.0), (1, 5));
    }

    #[test]
    fn batches_last_a_millisecond_within_the_budget() {
        // A 5 µs kernel: 200 launches make 1 ms.
        assert_eq!(launches_per_rep(0.005, 2.0), 200);
        // Rounding up: 3 launches of 0.4 ms.
        assert_eq!(launches_per_rep(0.4, 2.0), 3);
        // Already long: alone.
        assert_eq!(launches_per_rep(1.0, 2.0), 1);
        assert_eq!(launches_per_rep(250.0, 2.0), 1);
        // An empty kernel in a batch (~2 µs) would want 500; a 1 ns launch is capped.
        assert_eq!(launches_per_rep(0.000_001, 2.0), MAX_LAUNCHES_PER_REP);
        // The events saw nothing, or nonsense: the most launches, so the batch becomes visible.
        assert_eq!(launches_per_rep(0.0, 2.0), MAX_LAUNCHES_PER_REP);
        assert_eq!(launches_per_rep(f64::NAN, 2.0), MAX_LAUNCHES_PER_REP);
        // A tight budget: three repetitions of the batch must fit (3 × 33 × 0.01 ms ≤ 1 ms).
        assert_eq!(launches_per_rep(0.01, 0.001), 33);
        assert_eq!(launches_per_rep(0.01, 0.0), 1);
    }
}
