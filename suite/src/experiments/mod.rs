//! Experiments and the one runner they share.
//!
//! An experiment is data plus three small pieces of code: its sweep expands into [`Point`]s (each with a stable
//! key), `prepare` allocates and initialises one point's buffers, and the resulting [`Case`] launches, verifies and
//! says how much work one launch does. The runner does the rest the same way for every experiment: skip points a
//! resumed CSV already holds, verify before timing, warm up, time repetitions with device events, and append each
//! row as it finishes.

pub mod matmul;
pub mod occupancy;
pub mod registry;
pub mod smoke;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use crate::device;
use crate::gpu::Gpu;
use crate::measure::Stats;
use crate::report::csv::{header, read_rows, Context, CsvLog, Row, Status};
use crate::report::plot::{render_png, LinePlot};
use crate::report::run_json::{self, Invocation};
use crate::verify::Verification;

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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Point {
    /// Index into the experiment's own list of specs.
    pub index: usize,
    /// Stable identity, e.g. `naive/m=1024,n=1024,k=1024`: the same point has the same key in every run.
    pub key: String,
    /// Values of the experiment's parameter columns.
    pub params: Vec<String>,
    /// Why the point cannot run, when it cannot (written as an `invalid` row).
    pub invalid: Option<String>,
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
    /// Enqueues one launch of the kernel under test.
    fn launch(&mut self) -> device::Result<()>;
    /// Compares the device result of the launch before with the reference.
    fn verify(&mut self) -> Result<Verification, Error>;
    /// Work done by one launch, in the metric's unit before scaling: bytes for GB/s, FLOP for GFLOP/s.
    fn work(&self) -> f64;
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
    /// Tells the experiment its results folder before the run starts, for side files beside the CSV (e.g.
    /// occupancy's timelines). Most experiments write none.
    fn set_results_dir(&mut self, dir: &Path) {
        let _ = dir;
    }
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
}

/// Warm-up and timed launch counts for a point whose launch takes `launch_ms`: as asked, unless that overruns
/// `budget_s`, but at least 3 timed launches (a median of fewer means little) and no warm-up beyond the one that
/// measured `launch_ms`.
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
    /// Already in a resumed CSV.
    pub skipped: usize,
}

impl Summary {
    /// Whether every point that ran verified (failed verification or a point error fails the run).
    pub fn success(&self) -> bool {
        self.fail == 0 && self.error == 0
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
    let mut invocation = Invocation::now(
        serde_json::json!({ exp.name(): exp.options(), "warmup": opts.warmup, "reps": opts.reps, "metric": exp.metric() }),
        opts.shard.map(|s| s.to_string()),
    );
    invocation.compilers = gpu.compiler_records();
    invocation.blas = match gpu.device.blas() {
        Ok(path) => path,
        Err(e) => e.to_string(),
    };
    let context = Context {
        experiment: exp.name().to_string(),
        platform: props.platform.name().to_string(),
        device: props.name.clone(),
        arch: props.arch.to_string(),
        wave_size: props.wave_size.0,
    };
    let columns = header(exp.param_columns(), exp.metric().column);
    let csv_path = opts.out_dir.join(csv_name(exp.name(), opts.shard));
    let mut log = CsvLog::open(&csv_path, context, &columns, opts.resume)?;
    run_json::record(&opts.out_dir, props, invocation)?;

    let points: Vec<Point> = exp
        .points(gpu)
        .into_iter()
        .enumerate()
        .filter(|(i, _)| opts.shard.is_none_or(|s| i % s.count == s.index))
        .map(|(_, p)| p)
        .collect();
    let bar = ProgressBar::new(points.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {elapsed_precise} {wide_msg}")
            .expect("the progress template is valid")
            .progress_chars("=> "),
    );
    bar.set_prefix(exp.name());
    let mut summary = Summary::default();
    for point in &points {
        if log.is_done(&point.key) {
            summary.skipped += 1;
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
    }
    Ok(summary)
}

/// One progress line for a finished row.
fn describe(exp: &dyn Experiment, row: &Row) -> String {
    let rate = row.rate.map(|r| format!("{r:.1} {}", exp.metric().column)).unwrap_or_default();
    let time = row.time_ms.map(|(m, lo, hi)| format!("{m:.4} ms [{lo:.4}, {hi:.4}]")).unwrap_or_default();
    let msg = if row.message.is_empty() { String::new() } else { format!(": {}", row.message) };
    format!("{} {} {time} {rate}{msg}", row.status.as_str(), row.key)
}

fn measure_point(gpu: &Gpu, exp: &dyn Experiment, point: &Point, opts: &RunOptions) -> Row {
    let mut row = Row {
        params: point.params.clone(),
        reps: 0,
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
    // The first warm-up launch is timed to size the rest to the point's time budget.
    let first_ms = f64::from(gpu.device.time_ms(&mut || case.launch())?);
    let (warmup, reps) = launches_within_budget(first_ms, opts.warmup.saturating_sub(1), opts.reps, opts.time_budget_s);
    for _ in 0..warmup {
        case.launch()?;
    }
    let mut times = Vec::with_capacity(reps as usize);
    for _ in 0..reps {
        let ms = gpu.device.time_ms(&mut || case.launch())?;
        times.push(f64::from(ms));
    }
    let stats = Stats::from_ms(&times).ok_or_else(|| Error::Measurement(format!("no valid timings from {times:?}")))?;
    row.reps = stats.reps;
    row.time_ms = Some((stats.median_ms, stats.min_ms, stats.max_ms));
    row.rate = Some(stats.giga_per_second(case.work()));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
