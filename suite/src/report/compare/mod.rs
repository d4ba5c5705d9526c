//! `suite compare RUN RUN [RUN...]`: several results folders side by side, e.g. an MI250X GCD (wave64) against an
//! H100 (warp32), or one GPU before and after a change of method.
//!
//! Each folder is read leniently (older `run.json` schemas and CSVs without the newer columns still compare), the
//! rows of each experiment are joined by their `key`, and the output folder gets `report.md` (the runs, their
//! devices, wave sizes, commits and timing methods; per experiment the headline figures side by side, the largest
//! differences and the points that only some runs hold) and PNGs with one line per run on the same axes.
//!
//! Raw rates mislead across GPUs (a kernel at 20 TFLOP/s is excellent on one GPU and poor on another), so each
//! experiment says how it is compared through `Results::comparison` (gathered by the app from the experiment registry into [`Known`]):
//! matmul as % of that run's vendor BLAS in the row's precision (and the vendor BLAS as % of its unit's peak in that
//! precision where the catalogue of parts, [`crate::catalogue::PARTS`], knows the device), memory kernels as % of that run's copy bandwidth, occupancy against group size. The default,
//! [`MetricComparison`], joins the experiment's rate column as it is.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::plot::LinePlot;

/// One CSV row, column → value.
pub type Rec = BTreeMap<String, String>;

/// Why a comparison could not be made. Messages name the folder or file and what to do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A folder given as a run is not one.
    #[error(
        "{}: not a results folder: {missing}; a run written by `suite run` holds run.json and one \
         <experiment>.csv per experiment",
        .dir.display()
    )]
    NotARun {
        /// The folder.
        dir: PathBuf,
        /// What is missing or unreadable.
        missing: String,
    },
    /// A CSV or the output folder could not be read or written.
    #[error(transparent)]
    Report(#[from] super::Error),
    /// A plot could not be drawn.
    #[error(transparent)]
    Plot(#[from] super::plot::Error),
}

/// What `run.json` and the CSVs say about the device of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceInfo {
    /// `amd` or `nvidia`.
    pub platform: String,
    /// Device name as the runtime reports it.
    pub name: String,
    /// Architecture, e.g. `gfx90a` or `sm_90`.
    pub arch: String,
    /// Items per wave, where known.
    pub wave_size: Option<u32>,
    /// Compute units (AMD CUs, NVIDIA SMs), where known.
    pub cu_count: Option<u32>,
    /// Peak shader clock, MHz, where known.
    pub clock_mhz: Option<u32>,
    /// The runtime as run.json names it, kept only for a run over the HIP-over-CUDA test runtime (the AMD code path
    /// on an NVIDIA GPU); `None` for a run on the hardware its platform names.
    pub test_runtime: Option<String>,
}

/// One invocation of `suite run` recorded in a run's `run.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct InvocationInfo {
    /// The experiment it ran.
    pub experiment: String,
    /// Git commit, with `-dirty` when the tree had uncommitted changes.
    pub commit: String,
    /// Start time, RFC 3339.
    pub date: String,
    /// `--timing` asked for (`graph`, `stream`), absent in files from before batched timing.
    pub timing: Option<String>,
    /// Time per launch of an empty kernel in a batch on the stream, µs.
    pub launch_gap_us: Option<f64>,
    /// The same as a graph, µs.
    pub graph_launch_gap_us: Option<f64>,
    /// Host name.
    pub host: String,
    /// Where the process ran (CPUs, GPU variables, Slurm job, partition and node), in one line; `not recorded` in
    /// files from before it was.
    pub placement: String,
    /// Where its clock readings came from (`NVML 13.580.82`, `not available: ...`); absent in files from before
    /// they were recorded.
    pub telemetry_source: Option<String>,
    /// The device's maximum SM clock as the management library reported it, MHz.
    pub max_sm_clock_mhz: Option<u32>,
}

/// One experiment's CSV in a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// The file.
    pub path: PathBuf,
    /// Its header.
    pub columns: Vec<String>,
    /// Its whole rows (rows cut short by a killed job are left out).
    pub rows: Vec<Rec>,
}

impl Table {
    /// Whether the CSV has `column`.
    pub fn has(&self, column: &str) -> bool {
        self.columns.iter().any(|c| c == column)
    }

    /// The rate column: the one before `max_rel_err` (see [`super::csv::MEASUREMENT_COLUMNS`]).
    pub fn metric_column(&self) -> Option<&str> {
        let i = self.columns.iter().position(|c| c == "max_rel_err")?;
        self.columns.get(i.checked_sub(1)?).map(String::as_str)
    }
}

/// A results folder, read for comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// 1-based position on the command line; run 1 is the baseline of every ratio.
    pub index: usize,
    /// The folder.
    pub dir: PathBuf,
    /// The device.
    pub device: DeviceInfo,
    /// Invocations recorded in run.json, oldest first.
    pub invocations: Vec<InvocationInfo>,
    /// What was read leniently or left out, for the report.
    pub notes: Vec<String>,
    /// Experiment name → its CSV.
    pub tables: BTreeMap<String, Table>,
    /// What the folder holds against its plan, in one line ([`super::status::FolderStatus::line`]).
    pub completeness: String,
    /// Whether every planned point has a row (false where no plan is recorded: unknown).
    pub complete: bool,
}

impl Run {
    /// The folder's own name.
    pub fn name(&self) -> String {
        self.dir
            .canonicalize()
            .unwrap_or_else(|_| self.dir.clone())
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.dir.display().to_string())
    }

    /// Whether the run measured AMD hardware: its platform is `amd` and it did not run over the HIP-over-CUDA test
    /// runtime (whose figures are an NVIDIA GPU's).
    pub fn on_amd_hardware(&self) -> bool {
        self.device.platform == "amd" && self.device.test_runtime.is_none()
    }

    /// `wave64`, `wave32` (AMD) or `warp32` (NVIDIA, also under the HIP-over-CUDA test runtime): how people name the
    /// wave size of the hardware.
    pub fn wave(&self) -> String {
        let warp = self.device.platform == "nvidia" || self.device.test_runtime.is_some();
        match self.device.wave_size {
            Some(w) if warp => format!("warp{w}"),
            Some(w) => format!("wave{w}"),
            None => "wave size unknown".into(),
        }
    }

    /// The device name without the vendor's prefix, e.g. `H100 80GB HBM3`.
    pub fn short_device(&self) -> String {
        let name = self.device.name.trim();
        let name = name.strip_prefix("NVIDIA ").or_else(|| name.strip_prefix("AMD ")).unwrap_or(name);
        if name.is_empty() {
            self.device.arch.clone()
        } else {
            name.to_string()
        }
    }

    /// Legend label: run number, device, wave size, `HIP over CUDA` for a run over the test runtime, and folder, so
    /// two runs of one GPU stay apart (the plot's subtitle says it in full, [`Run::over_test_runtime`]).
    pub fn label(&self) -> String {
        let over = if self.device.test_runtime.is_some() { ", HIP over CUDA" } else { "" };
        format!("{}: {}, {}{over} [{}]", self.index, self.short_device(), self.wave(), self.name())
    }

    /// `, AMD path over the HIP over CUDA test runtime` for a run over it, else nothing: for plot subtitles.
    pub fn over_test_runtime(&self) -> String {
        match self.device.test_runtime {
            Some(_) => format!(", AMD path over the {}", crate::device::amd::TEST_RUNTIME_LABEL),
            None => String::new(),
        }
    }

    /// What the run's rows say about its clocks: the median SM clock over every experiment's timed rows, the
    /// throttled rows, and the maximum clock its run.json records.
    pub fn clocks(&self) -> super::throttling::RunClocks {
        let max = self.invocations.iter().rev().find_map(|i| i.max_sm_clock_mhz);
        super::throttling::RunClocks::of(self.tables.values().flat_map(|t| &t.rows), max)
    }

    /// The rows of `experiment` (none when the run lacks it).
    pub fn rows(&self, experiment: &str) -> &[Rec] {
        self.tables.get(experiment).map(|t| t.rows.as_slice()).unwrap_or_default()
    }

    /// How this run's rows of `experiment` were timed, in words.
    pub fn timing(&self, experiment: &str) -> String {
        let Some(table) = self.tables.get(experiment) else { return "-".into() };
        if !table.has("timing") {
            return "one launch between two events (unbatched: the CSV predates the `timing` column)".into();
        }
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for r in table.rows.iter().filter(|r| is_ok(r)) {
            *counts.entry(r.get("timing").map(String::as_str).unwrap_or("")).or_default() += 1;
        }
        let graphs = if self.device.platform == "amd" { "HIP graphs" } else { "CUDA graphs" };
        let named = |t: &str| match t {
            "graph" => format!("batches as {graphs}"),
            "stream" => "batches on the stream".to_string(),
            "host" => "host clock around sequences".to_string(),
            "" => "not recorded".to_string(),
            other => other.to_string(),
        };
        let parts: Vec<String> = counts.iter().map(|(t, n)| format!("{} ({n} rows)", named(t))).collect();
        if parts.is_empty() {
            "no ok rows".into()
        } else {
            parts.join(", ")
        }
    }
}

/// A device's FP32 peak, for "% of peak": its part in the catalogue ([`crate::catalogue::PARTS`]).
pub type Peak = crate::catalogue::Part;

/// The FP32 peak of a run's device, where the suite knows its part (by architecture, CU count and name).
pub fn fp32_peak(device: &DeviceInfo) -> Option<&'static Peak> {
    crate::catalogue::of_device(&device.arch, device.cu_count?, &device.name)
}

/// The per-point values an experiment is compared by, joined across runs by key.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Values {
    /// What the values are, with the unit, e.g. "% of the run's vendor BLAS at that shape".
    pub unit: String,
    /// Point key → value. Points left out (not `ok`, or a reference row) are not joined.
    pub by_key: BTreeMap<String, f64>,
    /// Keys whose value is a time (lower is faster) rather than a rate or a share of one (higher is faster).
    pub times: std::collections::BTreeSet<String>,
}

/// Headline figures of one experiment over the runs that hold it: Markdown and plots.
#[derive(Debug, Clone, Default)]
pub struct Headline {
    /// Markdown, tables with one column per run.
    pub markdown: String,
    /// (file name, plot): one line per run on the same axes.
    pub plots: Vec<(String, LinePlot)>,
}

/// How an experiment is compared across runs. `Results::comparison`
/// returns it; the default, [`MetricComparison`], serves an experiment that defines none.
pub trait Comparison {
    /// The value of each point of `experiment` in `run`, joined by key across runs for the tables of largest
    /// differences. `Err(reason)` when this run lacks what the values are normalised by (e.g. no vendor BLAS rows):
    /// every run is then compared by the raw metric and the report gives the reason.
    fn values(&self, experiment: &str, run: &Run) -> Result<Values, String>;
    /// The key a point is joined by across runs: its own key by default. Points that are the same across platforms
    /// under different keys (matmul's `cublas/...` and `rocblas/...`) map to one.
    fn join_key(&self, key: &str) -> String {
        key.to_string()
    }
    /// Headline tables and plots over `runs` (each holds the experiment).
    fn headline(&self, experiment: &str, runs: &[&Run]) -> Headline {
        let _ = (experiment, runs);
        Headline::default()
    }
    /// The spread of each point of `experiment` in `run` over its repetitions, by key (relative half-range,
    /// [`spread_of_row`]): what the classes faster / slower / same / noisy read the differences against. By
    /// default each row's own; a comparison whose values come from two rows (pt's speedups) combines theirs.
    fn spreads(&self, experiment: &str, run: &Run) -> BTreeMap<String, f64> {
        row_spreads(experiment, run)
    }
    /// Whether, when every run is of one device, the raw rate column is compared as well as [`Comparison::values`]
    /// (yes by default). An experiment whose rate counts different things on different rows (pt's G items/s: 1
    /// item per round trip) says no: its raw rate would read 0.000 against 0.000.
    fn compares_raw_rate(&self) -> bool {
        true
    }
}

/// Compares the experiment's rate column as it is (the default for an experiment that defines no comparison).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MetricComparison {
    /// The rate column, e.g. `gbps`; `None`: the one the CSV has before `max_rel_err`.
    pub column: Option<&'static str>,
}

impl Comparison for MetricComparison {
    fn values(&self, experiment: &str, run: &Run) -> Result<Values, String> {
        metric_values(experiment, run, self.column)
    }
}

/// The rate column of every `ok` row of `experiment` in `run`, by key.
pub fn metric_values(experiment: &str, run: &Run, column: Option<&str>) -> Result<Values, String> {
    let table = run.tables.get(experiment).ok_or_else(|| format!("run {} has no {experiment}.csv", run.index))?;
    let column = column
        .or_else(|| table.metric_column())
        .ok_or_else(|| format!("{} has no rate column before max_rel_err", table.path.display()))?;
    let by_key = table.rows.iter().filter(|r| is_ok(r)).filter_map(|r| Some((key(r)?, num(r, column)?))).collect();
    Ok(Values { unit: column.to_string(), by_key, ..Values::default() })
}

/// Whether a row was verified and timed (`status` ok).
pub fn is_ok(r: &Rec) -> bool {
    r.get("status").map(String::as_str) == Some("ok")
}

/// A finite number in `column` of a row.
pub fn num(r: &Rec, column: &str) -> Option<f64> {
    r.get(column).and_then(|v| v.trim().parse::<f64>().ok()).filter(|v| v.is_finite())
}

/// The row's key, if it has one.
pub fn key(r: &Rec) -> Option<String> {
    r.get("key").filter(|k| !k.is_empty()).cloned()
}

/// The text in `column` of a row, empty if absent.
pub fn text(r: &Rec, column: &str) -> String {
    r.get(column).cloned().unwrap_or_default()
}

/// A number as the README writes them: thousands separated above 100, three significant digits below.
pub fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    if v.abs() >= 100.0 {
        let digits = format!("{:.0}", v.abs());
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        if v < 0.0 {
            out.insert(0, '-');
        }
        out
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

fn io<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> Error + 'a {
    move |source| Error::Report(super::io_error(action, path, source))
}

/// Reads the results folder `dir` as run number `index`: its `run.json` (any schema the suite has written: fields
/// it lacks are reported as unknown) and every `<experiment>.csv` (a CSV with `experiment` and `key` columns whose
/// rows are of that experiment; timelines, the roofline and other side files are skipped, shard files are noted). A folder without run.json, with a run.json
/// that is not JSON, or without any experiment CSV is [`Error::NotARun`], naming the folder and what is missing.
pub fn read_run(dir: &Path, index: usize) -> Result<Run, Error> {
    let not_a_run = |missing: String| Error::NotARun { dir: dir.to_path_buf(), missing };
    if !dir.is_dir() {
        return Err(not_a_run("no such folder".into()));
    }
    let json_path = super::run_json::path(dir);
    let json_text = match std::fs::read_to_string(&json_path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(not_a_run("no run.json".into())),
        Err(e) => return Err(not_a_run(format!("run.json cannot be read ({e})"))),
    };
    let json: serde_json::Value =
        serde_json::from_str(&json_text).map_err(|e| not_a_run(format!("run.json is not JSON ({e})")))?;
    let mut notes = Vec::new();
    if let Err(e) = serde_json::from_str::<super::run_json::RunJson>(&json_text) {
        notes.push(format!("run.json read leniently: it is not in this suite's schema ({e})"));
    }
    let invocations = invocations(&json);
    if !invocations.is_empty() && invocations.iter().all(|i| i.timing.is_none()) {
        notes.push("run.json has no timing records: written before batched timing".into());
    }

    let mut tables = BTreeMap::new();
    let mut shards = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io("cannot read", dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "csv"))
        .collect();
    entries.sort();
    for path in entries {
        let Some(stem) = path.file_stem().map(|s| s.to_string_lossy().into_owned()) else { continue };
        if stem.contains(".shard-") {
            shards.push(stem);
            continue;
        }
        let mut reader = ::csv::ReaderBuilder::new()
            .flexible(true)
            .from_path(&path)
            .map_err(|source| super::Error::Csv { path: path.clone(), source })?;
        let columns: Vec<String> = reader
            .headers()
            .map_err(|source| super::Error::Csv { path: path.clone(), source })?
            .iter()
            .map(str::to_string)
            .collect();
        // Side files (occupancy's timelines) have neither column.
        if !(columns.iter().any(|c| c == "experiment") && columns.iter().any(|c| c == "key")) {
            continue;
        }
        let rows = super::csv::read_rows(&path)?;
        // Tables derived from the rows (the roofline, one row per kernel point of every experiment) carry the
        // same columns; an experiment's own CSV is named after the experiment of its rows (as the roofline reads
        // them too).
        if rows.first().is_some_and(|r| r.get("experiment").is_some_and(|e| *e != stem)) {
            continue;
        }
        tables.insert(stem, Table { path, columns, rows });
    }
    if !shards.is_empty() {
        notes.push(format!("unmerged shard files left out ({}): run `suite merge` on the folder", shards.join(", ")));
    }
    if tables.is_empty() {
        let hint = if shards.is_empty() { "" } else { " (only shard files: run `suite merge` on it first)" };
        return Err(not_a_run(format!("no <experiment>.csv with experiment and key columns{hint}")));
    }
    let device = device_info(&json, &tables, &mut notes);
    let (completeness, complete) = match super::status::read(dir) {
        Ok(status) => (status.line(), status.complete()),
        Err(e) => (format!("completeness unknown: {e}"), false),
    };
    Ok(Run { index, dir: dir.to_path_buf(), device, invocations, notes, tables, completeness, complete })
}

/// The device from run.json, or from the CSVs' context columns where run.json lacks it.
fn device_info(json: &serde_json::Value, tables: &BTreeMap<String, Table>, notes: &mut Vec<String>) -> DeviceInfo {
    let d = &json["device"];
    let s = |v: &serde_json::Value| v.as_str().map(str::to_string);
    let u = |v: &serde_json::Value| v.as_u64().and_then(|x| u32::try_from(x).ok());
    let first_row = tables.values().flat_map(|t| t.rows.first()).next();
    let from_csv = |c: &str| first_row.map(|r| text(r, c)).filter(|v| !v.is_empty());
    let wave_size = u(&d["wave_size"]).or_else(|| from_csv("wave_size").and_then(|w| w.parse().ok()));
    if d.is_null() {
        notes.push("run.json has no device record: device, arch and wave size are read from the CSV rows".into());
    }
    DeviceInfo {
        platform: s(&d["platform"]).or_else(|| from_csv("platform")).unwrap_or_else(|| "unknown".into()),
        name: s(&d["name"]).or_else(|| from_csv("device")).unwrap_or_else(|| "unknown device".into()),
        arch: s(&d["arch"]).or_else(|| from_csv("arch")).unwrap_or_else(|| "unknown".into()),
        wave_size,
        cu_count: u(&d["cu_count"]),
        clock_mhz: u(&d["clock_mhz"]),
        test_runtime: s(&d["runtime_version"]).filter(|_| super::test_runtime::recorded(d)),
    }
}

/// The invocations in run.json, each field read where present.
fn invocations(json: &serde_json::Value) -> Vec<InvocationInfo> {
    let Some(list) = json["invocations"].as_array() else { return Vec::new() };
    list.iter()
        .map(|inv| {
            let s = |k: &str| inv[k].as_str().unwrap_or_default().to_string();
            // Files from before the experiment was recorded name it only as a key of `experiments`.
            let experiment = Some(s("experiment")).filter(|e| !e.is_empty()).unwrap_or_else(|| {
                const SHARED: [&str; 6] = ["metric", "reps", "warmup", "time_budget_s", "timing", "shard"];
                inv["experiments"]
                    .as_object()
                    .and_then(|o| o.keys().find(|k| !SHARED.contains(&k.as_str())).cloned())
                    .unwrap_or_default()
            });
            let dirty = inv["git_dirty"].as_bool() == Some(true);
            let timing = &inv["timing"];
            InvocationInfo {
                experiment,
                commit: format!("{}{}", s("git_commit"), if dirty { "-dirty" } else { "" }),
                date: s("date"),
                timing: timing["method"].as_str().map(str::to_string),
                launch_gap_us: timing["launch_gap_us"].as_f64(),
                graph_launch_gap_us: timing["graph_launch_gap_us"].as_f64(),
                host: s("host"),
                placement: placement_text(inv),
                telemetry_source: inv["telemetry"]["source"].as_str().map(str::to_string),
                max_sm_clock_mhz: inv["telemetry"]["limits"]["max_sm_clock_mhz"]
                    .as_u64()
                    .and_then(|m| u32::try_from(m).ok()),
            }
        })
        .collect()
}

/// An invocation's placement in one line: the Slurm job with [`crate::host::Placement::summary`].
fn placement_text(inv: &serde_json::Value) -> String {
    let placement: crate::host::Placement = serde_json::from_value(inv["placement"].clone()).unwrap_or_default();
    let text = placement.summary();
    match inv["slurm_job_id"].as_str() {
        Some(job) if text == "not recorded" => format!("Slurm job {job}"),
        Some(job) => format!("Slurm job {job}: {text}"),
        None => text,
    }
}

mod document;
mod noise;
mod parts;
pub use document::{compare, comparison_for, report, timing_mismatches, Known, Written};
pub use noise::{classify, counts_text, row_spreads, set_differences, spread_of_row, spread_text, Class, SAME_WITHIN};
pub use parts::{devices_in_title, level, per_run_plot, runs_subtitle, sorted_points, table};
