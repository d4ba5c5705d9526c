//! Experiments and the one runner they share.
//!
//! An experiment has two sides. Its run side ([`Experiment`]) is data plus two small pieces of code: its sweep (the
//! options) expands into [`Point`]s (each with a stable key), `prepare` allocates and initialises one point's
//! buffers, and the resulting [`Case`] launches, verifies and says how much work one launch does; what the run keeps
//! meanwhile is in the [`RunContext`] the runner passes in. Its read side ([`Results`]) is stateless: its columns,
//! metric, plots, headlines, comparison and place on the roofline. The runner does the rest the same way for every
//! experiment: skip points a resumed CSV already holds, verify before timing, warm up, time repetitions with device
//! events, and append each row as it finishes.

pub mod compile_estimate;
mod context;
pub mod copy_reference;
pub mod entry;
pub mod estimate;
pub mod point_telemetry;
pub mod registry;
pub mod runner;
pub mod timing;

// The experiments, one folder each: one `pub mod <name>;` here per line of `registry::EXPERIMENTS` and nothing
// else in this block (`tests/layout.rs` checks both ways), so cargo fmt, rustdoc and every editor see their files.
pub mod fusion;
pub mod matmul;
pub mod occupancy;
pub mod pt;
pub mod smoke;

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::device::{self, Timing};
use crate::report::plot::LinePlot;
use crate::verify::Verification;

pub use crate::options::{RunOptions, Shard};
pub use context::{RunContext, Shared};
pub use estimate::Work;
pub use runner::{
    continue_command, csv_name, default_out_dir, plan, plan_record, render_plots, render_plots_noted, run, Planned,
    Summary, CONTINUE_VARIABLE,
};
pub use timing::{
    launch_gaps_us, launches_per_rep, launches_within_budget, time_case, time_case_within, timing_record, Timed,
    TimedSection, Unobserved, MAX_LAUNCHES_PER_REP, TARGET_BATCH_MS,
};

/// Errors that stop a run (as opposed to a point's failure, which becomes a row). The app wraps them in its own
/// [`crate::app::Error`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The device layer failed.
    #[error(transparent)]
    Device(#[from] device::Error),
    /// A kernel could not be built, found or loaded.
    #[error(transparent)]
    Kernels(#[from] crate::code_objects::Error),
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
    /// The device events gave no usable time.
    #[error("timing: {0}")]
    Timing(String),
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

/// A point's spec once the runner holds it: the experiment's own [`Points::Spec`], behind a type the runner need
/// not know ([`AnyPoints::prepare_any`] hands it back to the experiment as its own type).
pub type AnySpec = std::sync::Arc<dyn std::any::Any + Send + Sync>;

/// One point of a sweep: its typed spec (what [`Points::prepare`] receives) with its identity and row values.
#[derive(Debug, Clone)]
pub struct Point<S = AnySpec> {
    /// What the point is, in the experiment's own type: everything [`Points::prepare`] needs to set it up.
    pub spec: S,
    /// Stable identity, e.g. `naive/m=1024,n=1024,k=1024`: the same point has the same key in every run.
    pub key: String,
    /// Values of the experiment's parameter columns, in their order ([`Params`] builds them by column name).
    pub params: Vec<String>,
    /// Why the point cannot run, when it cannot (written as an `invalid` row).
    pub invalid: Option<String>,
    /// What one launch does, for the estimate of its time before it runs ([`estimate`]).
    pub work: Work,
}

impl<S: Send + Sync + 'static> Point<S> {
    /// The point with its spec behind [`AnySpec`], as the runner holds every experiment's points.
    pub fn erase(self) -> Point {
        Point {
            spec: std::sync::Arc::new(self.spec),
            key: self.key,
            params: self.params,
            invalid: self.invalid,
            work: self.work,
        }
    }
}

/// A point's parameter values, set by column name and checked against the experiment's columns
/// ([`Results::param_columns`]): each parameter is named where its value is given, so a row cannot put a value
/// under the wrong column, and a column no point sets (or a name no column has) is caught when the point is made.
#[derive(Debug, Clone)]
pub struct Params {
    experiment: &'static str,
    columns: &'static [&'static str],
    values: Vec<Option<String>>,
}

impl Params {
    /// No values yet, for the columns of `results`.
    pub fn of(results: &dyn Results) -> Params {
        let columns = results.param_columns();
        Params { experiment: results.name(), columns, values: vec![None; columns.len()] }
    }

    /// Sets `column` to `value` (an empty string where the point has none).
    ///
    /// # Panics
    /// When the experiment has no such column, or the column is set twice: the point is wrong in the code.
    pub fn set(mut self, column: &str, value: impl std::fmt::Display) -> Params {
        let Some(i) = self.columns.iter().position(|c| *c == column) else {
            panic!("{}: `{column}` is not one of its parameter columns {:?}", self.experiment, self.columns);
        };
        assert!(self.values[i].is_none(), "{}: parameter column `{column}` is set twice", self.experiment);
        self.values[i] = Some(value.to_string());
        self
    }

    /// The values in the columns' order.
    ///
    /// # Panics
    /// When a column was not set: the point is wrong in the code.
    pub fn row(self) -> Vec<String> {
        let unset: Vec<&str> =
            self.columns.iter().zip(&self.values).filter(|(_, v)| v.is_none()).map(|(c, _)| *c).collect();
        assert!(unset.is_empty(), "{}: parameter columns {unset:?} are not set", self.experiment);
        self.values.into_iter().flatten().collect()
    }
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

/// The read side of an experiment: what its rows are and how they are read, plotted, summarised and compared. It
/// holds no state (each experiment implements it on a unit struct, e.g. `SmokeResults`, exported in its
/// [`entry::Entry`]), so everything that only reads results (`suite plot`, `suite merge`, `suite compare`, the
/// summary's headlines, the run's roofline) uses it and never builds a sweep.
pub trait Results {
    /// Name, used for the CSV file and the `experiment` column.
    fn name(&self) -> &'static str;
    /// The experiment's parameter columns, in order.
    fn param_columns(&self) -> &'static [&'static str];
    /// The rate column and its formula.
    fn metric(&self) -> Metric;
    /// The experiment's plots, made from all rows of its CSV (as column → value) and any side files in the CSV's
    /// folder `dir`, as (file name, plot).
    fn plots(&self, rows: &[BTreeMap<String, String>], dir: &Path) -> Vec<(String, LinePlot)> {
        let _ = (rows, dir);
        Vec::new()
    }
    /// Tables derived from all rows of its CSV (and side files in its folder `dir`), as (file name, CSV text),
    /// written with the plots (beside the CSV, or into `suite plot --out`) before them (e.g. pt's speedups).
    /// Most experiments have none.
    fn derived_tables(&self, rows: &[BTreeMap<String, String>], dir: &Path) -> Vec<(String, String)> {
        let _ = (rows, dir);
        Vec::new()
    }
    /// The experiment's headline figures from all rows of its CSV, one line each, for the run's `summary.md`
    /// (what a person should read first; the plots and the CSV hold the rest): a line is a bullet, or a row of a
    /// Markdown table when it starts with `|`. Empty when no row says anything.
    fn headlines(&self, rows: &[BTreeMap<String, String>]) -> Vec<String> {
        let _ = rows;
        Vec::new()
    }
    /// How `suite compare` compares this experiment across runs (see [`crate::report::compare`]): by default its
    /// metric column as it is. An experiment overrides it to normalise (e.g. % of the vendor BLAS, a speedup) and to
    /// draw headline plots with one line per run.
    fn comparison(&self) -> Box<dyn crate::report::compare::Comparison> {
        Box::new(crate::report::compare::MetricComparison { column: Some(self.metric().column) })
    }
    /// How this experiment's rows go on the run's roofline ([`crate::report::roofline`]): by default every row,
    /// drawn in the family its key starts with. An experiment overrides it to name its families and its device
    /// copies, or to keep rows that are not one kernel's rate off the roofline.
    fn roofline(&self) -> crate::report::roofline::Role {
        crate::report::roofline::Role::default()
    }
}

/// The run side of an experiment: its sweep (the options, as data: the experiment's clap `Args` struct) and how to
/// run it. Everything a run learns or keeps while it runs (the device, the results folder, inputs shared by
/// consecutive points) is in the [`RunContext`] the runner passes in, never in the sweep.
pub trait Experiment: AnyPoints {
    /// The experiment's read side.
    fn results(&self) -> &'static dyn Results;
    /// The experiment's name (its read side's).
    fn name(&self) -> &'static str {
        self.results().name()
    }
    /// The sweep's options as run on a device of `device`'s kind, for `run.json` and its fingerprint: what the
    /// sweep's flags say, resolved where the device decides (e.g. matmul's default kernel set), so the fingerprint
    /// changes when what runs does.
    fn options(&self, device: &crate::device::Props) -> serde_json::Value;
    /// Kernel sources the experiment loads (compiled up front, so a compile error stops the run early).
    fn sources(&self) -> &'static [&'static str];
    /// Seconds a cold compile of the source called `name` takes (one of [`Experiment::sources`], or the name of one
    /// of its [`Experiment::specialisations`]), for the run's estimate ([`compile_estimate`]); `None`: not declared,
    /// estimated at [`compile_estimate::UNDECLARED`].
    fn compile_figures(&self, name: &str) -> Option<compile_estimate::CompileFigures> {
        let _ = name;
        None
    }
    /// Sources a run of this sweep compiles at run time on a device of `device`'s shape (generated or specialised
    /// kernels), so `suite kernels build` makes them ahead of time for `--kernels-dir`. Most experiments have none.
    fn specialisations(&self, device: crate::code_objects::DeviceShape) -> Vec<crate::code_objects::Specialisation> {
        let _ = device;
        Vec::new()
    }
    /// The sweep as it runs on `gpu`, where what it runs depends on the code objects built for the device (matmul's
    /// default kernel set on AMD, chosen from their metadata): the runner plans and runs that one. `None`: the sweep
    /// runs as it is (most experiments). An error says why it cannot run at all.
    fn on_device(&self, gpu: &crate::gpu::Gpu) -> Result<Option<Box<dyn Experiment>>, Error> {
        let _ = gpu;
        Ok(None)
    }
}

/// An experiment's points, each with its typed spec: `points` makes them, `prepare` receives the spec of one. Every
/// parameter is declared once, in the spec and in the row values [`Params`] sets by column name beside it: adding a
/// sweep dimension touches the experiment's folder alone.
pub trait Points {
    /// What one point is (e.g. matmul's precision, shape and kernel).
    type Spec: Send + Sync + 'static;
    /// The points of the sweep on the context's device, in a fixed order.
    fn points(&self, ctx: &RunContext) -> Vec<Point<Self::Spec>>;
    /// Allocates and initialises the point of `spec`. Outputs are poisoned so unwritten elements fail verification.
    fn prepare<'g>(&self, ctx: &RunContext<'g>, spec: &Self::Spec) -> Result<Box<dyn Case + 'g>, Error>;
}

/// [`Points`] with the spec's type hidden, as the runner holds any experiment ([`Experiment`]'s supertrait; every
/// [`Points`] has it). Called through `dyn Experiment`'s `points` and `prepare`.
pub trait AnyPoints {
    /// [`Points::points`], each spec behind [`AnySpec`].
    fn any_points(&self, ctx: &RunContext) -> Vec<Point>;
    /// [`Points::prepare`] of a point that [`AnyPoints::any_points`] made.
    fn prepare_any<'g>(&self, ctx: &RunContext<'g>, point: &Point) -> Result<Box<dyn Case + 'g>, Error>;
}

impl<P: Points> AnyPoints for P {
    fn any_points(&self, ctx: &RunContext) -> Vec<Point> {
        self.points(ctx).into_iter().map(Point::erase).collect()
    }

    fn prepare_any<'g>(&self, ctx: &RunContext<'g>, point: &Point) -> Result<Box<dyn Case + 'g>, Error> {
        let spec = point.spec.downcast_ref::<P::Spec>().ok_or_else(|| {
            Error::Unsupported(format!(
                "point {} was not made by this sweep ({})",
                point.key,
                std::any::type_name::<P>()
            ))
        })?;
        self.prepare(ctx, spec)
    }
}

impl<'a> dyn Experiment + 'a {
    /// The points of the sweep on the context's device, in a fixed order ([`Points::points`]).
    pub fn points(&self, ctx: &RunContext) -> Vec<Point> {
        self.any_points(ctx)
    }

    /// Allocates and initialises one point ([`Points::prepare`] of its spec).
    pub fn prepare<'g>(&self, ctx: &RunContext<'g>, point: &Point) -> Result<Box<dyn Case + 'g>, Error> {
        self.prepare_any(ctx, point)
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

/// The spread behind `value`, a rate (or a share of a fixed reference) a row reaches at its median time: the value
/// at its slowest and at its fastest repetition (`time_ms_max`, `time_ms_min`), (low, high), for error bars.
/// `None` where the row lacks those times.
pub fn rate_spread(row: &BTreeMap<String, String>, value: f64) -> Option<(f64, f64)> {
    let (median, fastest, slowest) = (num(row, "time_ms_median")?, num(row, "time_ms_min")?, num(row, "time_ms_max")?);
    (median > 0.0 && fastest > 0.0 && slowest >= fastest).then(|| (value * median / slowest, value * median / fastest))
}

/// The spread of the ratio of two rows' median times, `slow / fast` (a speedup of `fast` over `slow`): from the
/// least favourable pairing of their repetitions to the most, (low, high).
pub fn speedup_spread(slow: &BTreeMap<String, String>, fast: &BTreeMap<String, String>) -> Option<(f64, f64)> {
    let (slow_min, slow_max) = (num(slow, "time_ms_min")?, num(slow, "time_ms_max")?);
    let (fast_min, fast_max) = (num(fast, "time_ms_min")?, num(fast, "time_ms_max")?);
    (slow_min > 0.0 && fast_min > 0.0).then(|| (slow_min / fast_max, slow_max / fast_min))
}

#[cfg(test)]
pub(crate) mod compare_tests;
#[cfg(test)]
mod host_double_tests;
#[cfg(test)]
mod phases_tests;
#[cfg(test)]
mod planning_tests;
#[cfg(test)]
mod spec_tests;
#[cfg(test)]
mod tests;
