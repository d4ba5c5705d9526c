//! `suite compare RUN RUN [RUN...]`: several results folders side by side, e.g. an MI250X GCD (wave64) against an
//! H100 (warp32), or one GPU before and after a change of method.
//!
//! Each folder is read leniently (older `run.json` schemas and CSVs without the newer columns still compare), the
//! rows of each experiment are joined by their `key`, and the output folder gets `report.md` (the runs, their
//! devices, wave sizes, commits and timing methods; per experiment the headline figures side by side, the largest
//! differences and the points that only some runs hold) and PNGs with one line per run on the same axes.
//!
//! Raw rates mislead across GPUs (a kernel at 20 TFLOP/s is excellent on one GPU and poor on another), so each
//! experiment says how it is compared through `Experiment::comparison` (gathered by the app from the experiment registry into [`Known`]):
//! matmul as % of that run's vendor BLAS (and the vendor BLAS as % of the device's FP32 peak where [`crate::peaks::KNOWN_PARTS`]
//! knows the device), memory kernels as % of that run's copy bandwidth, occupancy against group size. The default,
//! [`MetricComparison`], joins the experiment's rate column as it is.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::plot::{render_png, Axis, LinePlot, Series, DEFAULT_SIZE};

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

/// A device's FP32 peak, for "% of peak": its known part ([`crate::peaks::KNOWN_PARTS`]).
pub type Peak = crate::peaks::KnownPart;

/// The FP32 peak of a run's device, where the suite knows its part (by architecture, CU count and name).
pub fn fp32_peak(device: &DeviceInfo) -> Option<&'static Peak> {
    crate::peaks::known_part(&device.arch, device.cu_count?, &device.name)
}

/// The per-point values an experiment is compared by, joined across runs by key.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Values {
    /// What the values are, with the unit, e.g. "% of the run's vendor BLAS at that shape".
    pub unit: String,
    /// Point key → value. Points left out (not `ok`, or a reference row) are not joined.
    pub by_key: BTreeMap<String, f64>,
}

/// Headline figures of one experiment over the runs that hold it: Markdown and plots.
#[derive(Debug, Clone, Default)]
pub struct Headline {
    /// Markdown, tables with one column per run.
    pub markdown: String,
    /// (file name, plot): one line per run on the same axes.
    pub plots: Vec<(String, LinePlot)>,
}

/// How an experiment is compared across runs. `Experiment::comparison`
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
    Ok(Values { unit: column.to_string(), by_key })
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
    move |source| Error::Report(super::Error::Io { action, path: path.to_path_buf(), source })
}

/// Reads the results folder `dir` as run number `index`: its `run.json` (any schema the suite has written: fields
/// it lacks are reported as unknown) and every `<experiment>.csv` (a CSV with `experiment` and `key` columns;
/// timelines and other side files are skipped, shard files are noted). A folder without run.json, with a run.json
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
    Ok(Run { index, dir: dir.to_path_buf(), device, invocations, notes, tables })
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
        test_runtime: s(&d["runtime_version"]).filter(|r| r.contains(crate::device::amd::TEST_RUNTIME_LABEL)),
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

/// The experiments `suite compare` knows, in the order it reports them, each with how it is compared (see
/// [`Comparison`]). The app makes it from the experiment registry; an experiment not in it is compared by its
/// metric column, after the known ones.
pub type Known = [(&'static str, Box<dyn Comparison>)];

/// How `experiment` is compared: its own [`Comparison`] where `known` has it, its metric column otherwise.
fn comparison_for<'k>(known: &'k Known, experiment: &str) -> &'k dyn Comparison {
    static BY_METRIC: MetricComparison = MetricComparison { column: None };
    known.iter().find(|(name, _)| *name == experiment).map_or(&BY_METRIC, |(_, c)| c.as_ref())
}

/// What [`compare`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    /// The Markdown report.
    pub report: PathBuf,
    /// The PNGs.
    pub plots: Vec<PathBuf>,
}

/// Compares the results folders `dirs` (run 1 first: the baseline of every ratio) and writes `report.md` and the
/// plots into `out` (created if needed). Every folder is read before anything is written.
pub fn compare(dirs: &[PathBuf], out: &Path, known: &Known) -> Result<Written, Error> {
    let runs = dirs.iter().enumerate().map(|(i, d)| read_run(d, i + 1)).collect::<Result<Vec<_>, _>>()?;
    let (markdown, plots) = report(&runs, known);
    std::fs::create_dir_all(out).map_err(io("cannot create", out))?;
    let mut written = Vec::new();
    for (file, plot) in &plots {
        let path = out.join(file);
        render_png(plot, &path, DEFAULT_SIZE.0, DEFAULT_SIZE.1)?;
        written.push(path);
    }
    let report = out.join("report.md");
    std::fs::write(&report, markdown).map_err(io("cannot write", &report))?;
    Ok(Written { report, plots: written })
}

/// The experiments in the runs: `known`'s order, then others by name.
fn experiment_order(runs: &[Run], known: &Known) -> Vec<String> {
    let all: BTreeSet<&String> = runs.iter().flat_map(|r| r.tables.keys()).collect();
    let mut order: Vec<String> =
        known.iter().map(|(n, _)| *n).filter(|n| all.contains(&n.to_string())).map(str::to_string).collect();
    let others: Vec<String> = all.into_iter().filter(|n| !order.contains(n)).cloned().collect();
    order.extend(others);
    order
}

/// The Markdown report and the plots (file name, plot) for `runs`.
pub fn report(runs: &[Run], known: &Known) -> (String, Vec<(String, LinePlot)>) {
    let mut md = String::new();
    let mut plots = Vec::new();
    let _ = writeln!(md, "# Comparison of {} runs\n", runs.len());
    let _ = writeln!(
        md,
        "Written by `suite compare` (suite {} {}). Run 1 is the baseline: every ratio is run N / run 1. Points are \
         joined by their `key`; only `ok` rows are compared.\n",
        super::run_json::SUITE_VERSION,
        super::run_json::git_describe()
    );
    runs_section(&mut md, runs);
    for experiment in experiment_order(runs, known) {
        let holding: Vec<&Run> = runs.iter().filter(|r| r.tables.contains_key(&experiment)).collect();
        let _ = writeln!(md, "## {experiment}\n");
        if holding.len() < 2 {
            let which: Vec<String> = holding.iter().map(|r| format!("run {}", r.index)).collect();
            let _ = writeln!(md, "Only in {}: nothing to compare.\n", which.join(", "));
            continue;
        }
        let comparison = comparison_for(known, &experiment);
        let headline = comparison.headline(&experiment, &holding);
        md.push_str(&headline.markdown);
        for (file, plot) in headline.plots {
            let _ = writeln!(md, "![{}]({file})\n", plot.title.replace(['[', ']'], ""));
            plots.push((file, plot));
        }
        joined_section(&mut md, &experiment, &holding, comparison);
    }
    roofline_section(&mut md, &mut plots, runs);
    (md, plots)
}

/// The runs' rooflines in one plot, and per run its ceilings and how close its kernels come to their roof.
fn roofline_section(md: &mut String, plots: &mut Vec<(String, LinePlot)>, runs: &[Run]) {
    let _ = writeln!(
        md,
        "## Roofline
"
    );
    let mut drawn: Vec<(String, super::roofline::Roofline)> = Vec::new();
    let _ = writeln!(
        md,
        "| run | memory ceiling GB/s | FP32 ceilings TFLOP/s | kernels placed | median share of their roof | within          80% of it |\n|---|---:|---|---:|---:|---:|"
    );
    for r in runs {
        match super::roofline::of_run(&r.dir) {
            Ok(Some(roof)) => {
                let mut shares: Vec<f64> =
                    roof.points.iter().map(|p| p.gflops() / roof.roof.attainable(p.intensity())).collect();
                shares.sort_by(f64::total_cmp);
                let median = shares.get(shares.len() / 2).copied().unwrap_or(f64::NAN);
                let near = shares.iter().filter(|s| **s >= 0.8).count();
                let compute: Vec<String> =
                    roof.roof.compute.iter().map(|(n, g)| format!("{n} {:.1}", g / 1e3)).collect();
                let _ = writeln!(
                    md,
                    "| {} | {:.0} ({}) | {} | {} | {:.2} | {near} |",
                    r.index,
                    roof.roof.memory_gbps,
                    if roof.roof.memory_source.contains("measured") { "measured" } else { "datasheet" },
                    compute.join(", "),
                    roof.points.len(),
                    median
                );
                drawn.push((format!("run {}", r.index), roof));
            }
            Ok(None) => {
                let _ = writeln!(md, "| {} | - | - | 0 | - | - |", r.index);
            }
            Err(e) => {
                let _ = writeln!(md, "| {} | cannot read: {e} | - | - | - | - |", r.index);
            }
        }
    }
    let _ = writeln!(md);
    if drawn.is_empty() {
        let _ = writeln!(md, "No run has rows with flop_count and byte_count: nothing to place.\n");
        return;
    }
    let plot = super::roofline::plot(&drawn.iter().map(|(l, r)| (l.clone(), r)).collect::<Vec<_>>());
    let _ = writeln!(md, "![{}](roofline.png)\n", plot.title.replace(['[', ']'], ""));
    plots.push(("roofline.png".into(), plot));
}

fn runs_section(md: &mut String, runs: &[Run]) {
    let _ = writeln!(md, "## Runs\n");
    let _ = writeln!(
        md,
        "| run | folder | device | platform, arch | wave | CUs/SMs | clock MHz | FP32 peak | commits | dates |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---:|---:|---:|---|---|");
    for r in runs {
        let commits: BTreeSet<&str> = r.invocations.iter().map(|i| i.commit.as_str()).collect();
        let dates: BTreeSet<&str> = r.invocations.iter().map(|i| i.date.get(..10).unwrap_or(&i.date)).collect();
        let opt = |v: Option<u32>| v.map(|v| v.to_string()).unwrap_or_else(|| "?".into());
        let peak =
            fp32_peak(&r.device).map(|p| format!("{} TFLOP/s", p.fp32_vector_tflops)).unwrap_or_else(|| "?".into());
        let _ = writeln!(
            md,
            "| {} | `{}` | {} | {}, {} | {} | {} | {} | {} | {} | {} |",
            r.index,
            r.dir.display(),
            r.device.name,
            r.device.platform,
            r.device.arch,
            r.wave(),
            opt(r.device.cu_count),
            opt(r.device.clock_mhz),
            peak,
            commits.into_iter().collect::<Vec<_>>().join(", "),
            dates.into_iter().collect::<Vec<_>>().join(", "),
        );
    }
    let mut waves: Vec<String> = Vec::new();
    for w in runs.iter().map(Run::wave) {
        if !waves.contains(&w) {
            waves.push(w);
        }
    }
    let _ = writeln!(
        md,
        "\nWave size: {}.\n",
        if waves.len() == 1 {
            format!("every run is {}", waves[0])
        } else {
            let each: Vec<String> = runs.iter().map(|r| format!("run {} {}", r.index, r.wave())).collect();
            format!("{} ({}): group sizes fill waves differently", waves.join(" vs "), each.join(", "))
        }
    );
    for r in runs {
        if let Some(runtime) = &r.device.test_runtime {
            let _ = writeln!(
                md,
                "Run {} ran the AMD code path (HIP, rocBLAS) on an NVIDIA GPU over the {}, not on AMD hardware: {runtime}.\n",
                r.index,
                crate::device::amd::TEST_RUNTIME_LABEL,
            );
        }
    }
    let _ = writeln!(md, "Timing method per run and experiment (the `timing` column; launch gap from run.json):\n");
    let _ = writeln!(md, "| run | experiment | timing | launch gap µs, graph / stream |");
    let _ = writeln!(md, "|---|---|---|---|");
    for r in runs {
        for experiment in r.tables.keys() {
            let gap = r
                .invocations
                .iter()
                .rev()
                .find(|i| &i.experiment == experiment && (i.launch_gap_us.is_some() || i.graph_launch_gap_us.is_some()))
                .map(|i| {
                    let f = |v: Option<f64>| v.map(|v| format!("{v:.2}")).unwrap_or_else(|| "-".into());
                    format!("{} / {}", f(i.graph_launch_gap_us), f(i.launch_gap_us))
                })
                .unwrap_or_else(|| "not recorded".into());
            let _ = writeln!(md, "| {} | {experiment} | {} | {gap} |", r.index, r.timing(experiment));
        }
    }
    // Host-timed figures (round trips, end-to-end times) depend on the CPU a process ran on: say where each ran.
    let _ = writeln!(md, "\nWhere each run ran (per process: host, CPU affinity, GPU variables, Slurm):\n");
    let _ = writeln!(md, "| run | host | placement | experiments |");
    let _ = writeln!(md, "|---|---|---|---|");
    for r in runs {
        let mut places: Vec<((&str, &str), BTreeSet<&str>)> = Vec::new();
        for i in &r.invocations {
            let place = (i.host.as_str(), i.placement.as_str());
            match places.iter_mut().find(|(p, _)| *p == place) {
                Some((_, experiments)) => {
                    experiments.insert(&i.experiment);
                }
                None => places.push((place, BTreeSet::from([i.experiment.as_str()]))),
            }
        }
        for ((host, placement), experiments) in places {
            let experiments: Vec<&str> = experiments.into_iter().collect();
            let _ = writeln!(md, "| {} | {host} | {placement} | {} |", r.index, experiments.join(", "));
        }
    }
    let unknown: Vec<String> =
        runs.iter().filter(|r| fp32_peak(&r.device).is_none()).map(|r| format!("run {}", r.index)).collect();
    let peaks: BTreeSet<String> = runs
        .iter()
        .filter_map(|r| fp32_peak(&r.device))
        .map(|p| format!("{} {} TFLOP/s ({})", p.name, p.fp32_vector_tflops, p.source))
        .collect();
    if !peaks.is_empty() || !unknown.is_empty() {
        let _ = writeln!(md);
    }
    for p in peaks {
        let _ = writeln!(md, "FP32 peak: {p}.");
    }
    if !unknown.is_empty() {
        let _ = writeln!(
            md,
            "FP32 peak unknown for {} (its arch and CU count are not in the suite's table): % of peak is omitted there.",
            unknown.join(", ")
        );
    }
    let notes: Vec<String> =
        runs.iter().flat_map(|r| r.notes.iter().map(move |n| format!("- run {}: {n}", r.index))).collect();
    if !notes.is_empty() {
        let _ = writeln!(md, "\nNotes:\n\n{}", notes.join("\n"));
    }
    let _ = writeln!(md);
}

/// Most keys listed per run in "points in some runs only".
const MAX_LISTED: usize = 40;
/// Rows in the table of largest differences.
const MAX_DIFFERENCES: usize = 10;

/// The joined values: summary of ratios, largest differences, points in some runs only.
fn joined_section(md: &mut String, experiment: &str, runs: &[&Run], comparison: &dyn Comparison) {
    let attempt: Result<Vec<Values>, String> = runs.iter().map(|r| comparison.values(experiment, r)).collect();
    let values = match attempt {
        Ok(v) => v,
        Err(reason) => {
            let _ = writeln!(md, "Not normalised ({reason}): the raw rate is compared instead.\n");
            match runs.iter().map(|r| metric_values(experiment, r, None)).collect::<Result<Vec<_>, _>>() {
                Ok(v) => v,
                Err(reason) => {
                    let _ = writeln!(md, "No values to compare: {reason}.\n");
                    return;
                }
            }
        }
    };
    let normalised = values
        .first()
        .is_some_and(|v| Some(v.unit.as_str()) != runs[0].tables.get(experiment).and_then(Table::metric_column));
    let joined = |values: Vec<Values>| -> Vec<Values> {
        values
            .into_iter()
            .map(|v| Values {
                unit: v.unit,
                by_key: v.by_key.into_iter().map(|(k, x)| (comparison.join_key(&k), x)).collect(),
            })
            .collect()
    };
    let values = joined(values);
    let keys_of = |r: &Run| -> Vec<String> {
        r.rows(experiment).iter().filter_map(key).map(|k| comparison.join_key(&k)).collect()
    };
    // Keys in run 1's CSV order, then the others' new keys in theirs.
    let mut order: Vec<String> = Vec::new();
    let mut seen = BTreeSet::new();
    for r in runs {
        for k in keys_of(r) {
            if seen.insert(k.clone()) {
                order.push(k);
            }
        }
    }
    let mismatched = timing_mismatches(experiment, runs, comparison);
    let flagged: BTreeSet<String> = mismatched.iter().map(|(k, _)| k.clone()).collect();
    differences(md, runs, &values, &order, &flagged, "### Points");
    if !mismatched.is_empty() {
        let listed: Vec<String> =
            mismatched.iter().take(MAX_LISTED).map(|(k, t)| format!("`{k}` ({})", t.join(" / "))).collect();
        let more = mismatched.len().saturating_sub(MAX_LISTED);
        let _ = writeln!(
            md,
            "**Timed differently** in the runs ({} points, each run's `timing` in run order): their figures and ratios \
             compare timing methods as well as devices: {}{}.\n",
            mismatched.len(),
            listed.join(", "),
            if more > 0 { format!(" and {more} more") } else { String::new() }
        );
    }
    // On one device the raw rate means the same in every run, so it is compared too (e.g. a change of method).
    let same_device = runs.iter().all(|r| r.device.name == runs[0].device.name && r.device.arch == runs[0].device.arch);
    if normalised && same_device && comparison.compares_raw_rate() {
        if let Ok(raw) = runs.iter().map(|r| metric_values(experiment, r, None)).collect::<Result<Vec<_>, _>>() {
            differences(
                md,
                runs,
                &joined(raw),
                &order,
                &flagged,
                "#### Same device in every run, so the raw rate compares too: points",
            );
        }
    }
    // Points that some runs lack, or hold without an ok row.
    let mut listed = false;
    let key_sets: Vec<BTreeSet<String>> = runs.iter().map(|r| keys_of(r).into_iter().collect()).collect();
    for (i, r) in runs.iter().enumerate() {
        let only: Vec<&String> = order
            .iter()
            .filter(|k| key_sets[i].contains(*k))
            .filter(|k| key_sets.iter().any(|other| !other.contains(*k)))
            .collect();
        if !only.is_empty() {
            listed = true;
            let whose = if runs.len() == 2 {
                format!("Only in run {}", r.index)
            } else {
                format!("In run {} but missing from another run", r.index)
            };
            let _ = writeln!(md, "{whose} ({} points): {}\n", only.len(), key_list(&only));
        }
        let not_ok: Vec<String> = r
            .rows(experiment)
            .iter()
            .filter(|x| !is_ok(x))
            .filter_map(|x| Some(format!("{} ({})", key(x)?, text(x, "status"))))
            .collect();
        if !not_ok.is_empty() {
            listed = true;
            let refs: Vec<&String> = not_ok.iter().collect();
            let _ = writeln!(md, "Not `ok` in run {} ({} points): {}\n", r.index, not_ok.len(), key_list(&refs));
        }
    }
    if !listed {
        let _ = writeln!(md, "Every run holds the same points, all `ok`.\n");
    }
}

/// The points of `experiment` that every run holds `ok` but timed by different methods (the `timing` column:
/// `graph`, `stream`, `host`, or none in CSVs from before it), each with its method per run in run order. Their
/// ratios mix a change of method into the change of device.
pub fn timing_mismatches(experiment: &str, runs: &[&Run], comparison: &dyn Comparison) -> Vec<(String, Vec<String>)> {
    let per_run: Vec<BTreeMap<String, String>> = runs
        .iter()
        .map(|r| {
            r.rows(experiment)
                .iter()
                .filter(|x| is_ok(x))
                .filter_map(|x| Some((comparison.join_key(&key(x)?), text(x, "timing"))))
                .collect()
        })
        .collect();
    let Some(first) = per_run.first() else { return Vec::new() };
    let named = |t: &String| if t.is_empty() { "unrecorded".to_string() } else { t.clone() };
    let mut out = Vec::new();
    for (k, timing) in first {
        let Some(all) = per_run.iter().map(|m| m.get(k)).collect::<Option<Vec<&String>>>() else { continue };
        if all.iter().any(|t| *t != timing) {
            out.push((k.clone(), all.into_iter().map(named).collect()));
        }
    }
    out
}

/// The ratios of `values` (one per run, joined keys) over the points every run holds: a summary per run and the
/// largest differences, where points in `flagged` (timed differently) are marked. `heading` starts the heading line.
fn differences(
    md: &mut String,
    runs: &[&Run],
    values: &[Values],
    order: &[String],
    flagged: &BTreeSet<String>,
    heading: &str,
) {
    let unit = values.first().map(|v| v.unit.clone()).unwrap_or_default();
    let common: Vec<&String> = order.iter().filter(|k| values.iter().all(|v| v.by_key.contains_key(*k))).collect();
    let _ = writeln!(md, "{heading} in every run ({}), compared by {unit}\n", common.len());
    let ratio = |k: &str, i: usize| -> Option<f64> {
        let (a, b) = (values[0].by_key.get(k)?, values[i].by_key.get(k)?);
        (*a > 0.0 && *b > 0.0).then(|| b / a)
    };
    for (i, run) in runs.iter().enumerate().skip(1) {
        let mut ratios: Vec<f64> = common.iter().filter_map(|k| ratio(k, i)).collect();
        ratios.sort_by(f64::total_cmp);
        if let (Some(lo), Some(hi)) = (ratios.first(), ratios.last()) {
            let median = ratios[ratios.len() / 2];
            let _ = writeln!(
                md,
                "Run {} / run 1 over {} points: median {median:.3}, from {lo:.3} to {hi:.3}.",
                run.index,
                ratios.len()
            );
        }
    }
    let mut largest: Vec<(&String, f64)> = common
        .iter()
        .filter_map(|k| {
            let worst = (1..runs.len())
                .filter_map(|i| ratio(k, i))
                .map(|r| r.ln().abs())
                .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))?;
            Some((*k, worst))
        })
        .collect();
    largest.sort_by(|a, b| b.1.total_cmp(&a.1));
    largest.truncate(MAX_DIFFERENCES);
    if !largest.is_empty() {
        let _ = writeln!(md, "\nLargest differences, in {unit}:\n");
        let mut head = String::from("| point |");
        let mut rule = String::from("|---|");
        for r in runs {
            let _ = write!(head, " run {} |", r.index);
            rule.push_str("---:|");
        }
        for r in &runs[1..] {
            let _ = write!(head, " run {} / run 1 |", r.index);
            rule.push_str("---:|");
        }
        let _ = writeln!(md, "{head}\n{rule}");
        for (k, _) in &largest {
            let mark = if flagged.contains(*k) { " (timed differently)" } else { "" };
            let mut line = format!("| `{k}`{mark} |");
            for v in values {
                let _ = write!(line, " {} |", v.by_key.get(*k).map(|x| fmt_num(*x)).unwrap_or_default());
            }
            for i in 1..runs.len() {
                let _ = write!(line, " {} |", ratio(k, i).map(|r| format!("{r:.2}")).unwrap_or_else(|| "-".into()));
            }
            let _ = writeln!(md, "{line}");
        }
    }
    let _ = writeln!(md);
}

fn key_list(keys: &[&String]) -> String {
    let mut shown: Vec<String> = keys.iter().take(MAX_LISTED).map(|k| format!("`{k}`")).collect();
    if keys.len() > MAX_LISTED {
        shown.push(format!("and {} more", keys.len() - MAX_LISTED));
    }
    shown.join(", ")
}

// ---- Shared pieces of the headline comparisons ----

/// The devices of `runs` for a plot's subtitle, saying which is wave64 and which warp32.
pub fn runs_subtitle(runs: &[&Run]) -> String {
    runs.iter()
        .map(|r| {
            format!("run {}: {} ({}, {}{})", r.index, r.device.name, r.device.arch, r.wave(), r.over_test_runtime())
        })
        .collect::<Vec<_>>()
        .join("  vs  ")
}

/// A horizontal reference line at `y` across `xs`.
pub fn level(label: &str, y: f64, xs: &[f64]) -> Option<Series> {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lo.is_finite() && hi.is_finite()).then(|| Series::reference(label, vec![(lo, y), (hi, y)]))
}

/// A plot of one line per run (and reference lines), or `None` when no run has a point.
pub fn per_run_plot(
    title: String,
    subtitle: String,
    axes: (&str, Axis, &str, Axis),
    mut series: Vec<Series>,
    note: Option<String>,
) -> Option<LinePlot> {
    series.retain(|s| !s.points.is_empty());
    if !series.iter().any(|s| s.kind == super::plot::SeriesKind::Line) {
        return None;
    }
    // A line drawn over an identical one hides it: say so, so a missing colour is not read as a missing run.
    let mut coincide = Vec::new();
    for (i, a) in series.iter().enumerate() {
        if let Some(b) = series[..i].iter().find(|b| b.kind == a.kind && b.points == a.points) {
            coincide.push(format!("\"{}\" lies on \"{}\"", a.label, b.label));
        }
    }
    let note = match (note, coincide.is_empty()) {
        (note, true) => note,
        (Some(n), false) => Some(format!("{n}; {}", coincide.join("; "))),
        (None, false) => Some(coincide.join("; ")),
    };
    let y_max = series.iter().flat_map(|s| &s.points).map(|p| p.1).filter(|y| y.is_finite()).fold(0.0, f64::max);
    Some(LinePlot {
        title,
        subtitle: Some(subtitle),
        x_label: axes.0.into(),
        x_axis: axes.1,
        y_label: axes.2.into(),
        y_axis: axes.3,
        series,
        y_max: (y_max > 0.0).then_some(y_max * 1.08),
        note,
    })
}

/// A Markdown table: `head` then rows.
pub fn table(head: &[String], rows: &[Vec<String>]) -> String {
    let mut out = format!("| {} |\n|", head.join(" | "));
    for (i, _) in head.iter().enumerate() {
        out.push_str(if i == 0 { "---|" } else { "---:|" });
    }
    out.push('\n');
    for r in rows {
        let _ = writeln!(out, "| {} |", r.join(" | "));
    }
    out.push('\n');
    out
}

/// Points in order of x.
pub fn sorted_points(mut pts: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    pts
}

/// The distinct devices of `runs` with their wave sizes, for titles.
pub fn devices_in_title(runs: &[&Run]) -> String {
    let mut seen: Vec<String> = Vec::new();
    for r in runs {
        let d = format!("{} {}", r.short_device(), r.wave());
        if !seen.contains(&d) {
            seen.push(d);
        }
    }
    seen.join(" vs ")
}

// ---- memory kernels: smoke (and occupancy, below) as % of the run's copy bandwidth ----

/// The driver's device-to-device copy in `run`, GB/s: the `copy` row of its occupancy CSV.
pub fn copy_gbps(run: &Run) -> Option<f64> {
    run.rows("occupancy")
        .iter()
        .find(|r| is_ok(r) && r.get("sweep").map(String::as_str) == Some("copy"))
        .and_then(|r| num(r, "gbps"))
        .filter(|g| *g > 0.0)
}

/// [`copy_gbps`], or why the run has none.
pub fn copy_or_reason(run: &Run) -> Result<f64, String> {
    copy_gbps(run).ok_or_else(|| {
        format!(
            "run {} has no copy reference (the `copy` row of occupancy.csv; `suite run occupancy --sweeps copy`)",
            run.index
        )
    })
}

/// A memory-bound experiment (smoke's triad): GB/s as % of the same run's copy bandwidth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemoryComparison;

impl Comparison for MemoryComparison {
    fn values(&self, experiment: &str, run: &Run) -> Result<Values, String> {
        let copy = copy_or_reason(run)?;
        let by_key = run
            .rows(experiment)
            .iter()
            .filter(|r| is_ok(r))
            .filter_map(|r| Some((key(r)?, num(r, "gbps")? / copy * 100.0)))
            .collect();
        Ok(Values { unit: "% of the run's copy bandwidth".into(), by_key })
    }

    fn headline(&self, experiment: &str, runs: &[&Run]) -> Headline {
        let copies: Vec<Option<f64>> = runs.iter().map(|r| copy_gbps(r)).collect();
        let mut ns: Vec<u64> = runs
            .iter()
            .flat_map(|r| r.rows(experiment).iter().filter(|x| is_ok(x)).filter_map(|x| x.get("n")?.parse().ok()))
            .collect();
        ns.sort_unstable();
        ns.dedup();
        let at = |r: &Run, n: u64| {
            r.rows(experiment)
                .iter()
                .find(|x| is_ok(x) && x.get("n") == Some(&n.to_string()))
                .and_then(|x| num(x, "gbps"))
        };
        let mut head = vec!["elements".to_string()];
        head.extend(runs.iter().map(|r| format!("run {} GB/s (% of copy)", r.index)));
        let mut rows: Vec<Vec<String>> = ns
            .iter()
            .map(|&n| {
                let mut row = vec![n.to_string()];
                for (r, c) in runs.iter().zip(&copies) {
                    row.push(match (at(r, n), c) {
                        (Some(g), Some(c)) => format!("{} ({:.0}%)", fmt_num(g), g / c * 100.0),
                        (Some(g), None) => fmt_num(g),
                        _ => "-".into(),
                    });
                }
                row
            })
            .collect();
        let mut copy_row = vec!["copy (driver)".to_string()];
        copy_row.extend(copies.iter().map(|c| c.map_or_else(|| "not measured".into(), fmt_num)));
        rows.push(copy_row);
        let mut md =
            format!("Triad bandwidth per run, and as % of the same run's driver copy:\n\n{}", table(&head, &rows));
        let xs: Vec<f64> = ns.iter().map(|&n| n as f64).collect();
        let mut series: Vec<Series> = runs
            .iter()
            .zip(&copies)
            .filter_map(|(r, c)| {
                let c = (*c)?;
                let pts = ns.iter().filter_map(|&n| Some((n as f64, at(r, n)? / c * 100.0))).collect();
                Some(Series::line(r.label(), pts))
            })
            .collect();
        series.extend(level("100% = the run's own driver copy", 100.0, &xs));
        let missing: Vec<String> =
            runs.iter().zip(&copies).filter(|(_, c)| c.is_none()).map(|(r, _)| format!("run {}", r.index)).collect();
        if !missing.is_empty() {
            let _ = writeln!(md, "No copy reference in {}: not in the plot.\n", missing.join(", "));
        }
        let plots = per_run_plot(
            format!("{experiment}: STREAM triad as % of the run's copy bandwidth ({})", devices_in_title(runs)),
            runs_subtitle(runs),
            ("elements per array", Axis::Log2, "% of the same run's driver copy GB/s", Axis::Linear),
            series,
            Some("sizes that fit in L2 can exceed 100%: back-to-back launches find their data there".into()),
        )
        .map(|p| vec![(format!("{experiment}-percent-of-copy.png"), p)])
        .unwrap_or_default();
        Headline { markdown: md, plots }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::experiments::matmul::MatmulComparison;

    /// The experiments as the app's registry knows them (the comparisons the fixtures need).
    fn known() -> Vec<(&'static str, Box<dyn Comparison>)> {
        vec![
            ("smoke", Box::new(MemoryComparison)),
            ("matmul", Box::new(MatmulComparison)),
            ("occupancy", Box::new(crate::experiments::occupancy::OccupancyComparison)),
            ("fusion", Box::new(crate::experiments::fusion::FusionComparison)),
        ]
    }

    const CTX: &str = "experiment,platform,device,arch,wave_size";
    const MEAS: &str =
        "reps,launches_per_rep,timing,l2_resident,flop_count,byte_count,time_ms_median,time_ms_min,time_ms_max";

    /// A run.json of this suite's schema for a device.
    fn run_json(platform: &str, name: &str, arch: &str, wave: u32, cus: u32) -> String {
        serde_json::json!({
            "device": {
                "platform": platform, "ordinal": 0, "name": name, "arch": arch, "arch_full": arch,
                "wave_size": wave, "cu_count": cus, "max_items_per_cu": 2048, "max_group_size": 1024,
                "max_groups_per_cu": 32, "lds_bytes_per_cu": 65536, "lds_bytes_per_group": 65536,
                "lds_bytes_per_group_optin": 65536, "registers_per_cu": 65536, "clock_mhz": 1700,
                "memory_clock_mhz": null, "memory_bus_bits": null, "l2_bytes": null, "memory_bytes": 1u64 << 34,
                "runtime_version": "test", "driver_version": "test"
            },
            "invocations": [{
                "command": ["suite"], "date": "2026-11-23T10:00:00Z", "host": "h", "suite_version": "0.1.0",
                "git_commit": "abc123", "git_dirty": true, "slurm_job_id": null, "shard": null,
                "experiment": "matmul", "fingerprint": null, "experiments": {}, "compilers": [], "blas": "",
                "timing": {"method": "graph", "launch_gap_us": 3.0, "graph_launch_gap_us": 1.0}
            }]
        })
        .to_string()
    }

    /// A matmul CSV: (kernel, n, gflops) rows, all ok.
    fn matmul_csv(ctx: &str, rows: &[(&str, u64, f64)]) -> String {
        let mut s = format!("{CTX},kernel,tile_m,m,n,k,group_x,group_y,reference,{MEAS},gflops,max_rel_err,tolerance,status,message,key\n");
        for (k, n, g) in rows {
            let _ = writeln!(
                s,
                "{ctx},{k},,{n},{n},{n},,,gpu_f64,20,8,graph,true,,,1,1,1,{g},0,1,ok,,\"{k}/m={n},n={n},k={n}\""
            );
        }
        s
    }

    fn occupancy_csv(ctx: &str, copy: f64, groups: &[(u32, f64, f64)]) -> String {
        let mut s = format!(
            "{CTX},sweep,config,kernel,group_size,groups,dynamic_lds_bytes,registers_per_item,elements,bytes,groups_per_cu,\
             waves_per_cu,occupancy_pct,limiter,rounds,{MEAS},gbps,max_rel_err,tolerance,status,message,key\n"
        );
        let _ =
            writeln!(s, "{ctx},copy,,device_copy,,,0,,64,512,,,,,,20,6,graph,false,,,1,1,1,{copy},0,0,ok,,copy/n=64");
        for (g, occ, gbps) in groups {
            let _ = writeln!(
                s,
                "{ctx},group_size,,occupancy_vector_add,{g},9,0,12,64,768,4,32,{occ},waves,1.5,20,6,graph,false,,,1,1,1,{gbps},0,0,ok,,\"group_size/g={g},n=64\""
            );
        }
        s
    }

    fn write_run(dir: &Path, json: Option<&str>, files: &[(&str, String)]) {
        std::fs::create_dir_all(dir).unwrap();
        if let Some(j) = json {
            std::fs::write(dir.join("run.json"), j).unwrap();
        }
        for (name, text) in files {
            std::fs::write(dir.join(name), text).unwrap();
        }
    }

    /// An MI250X GCD run and an H100 run with different sweeps: matmul at 256/512 vs 512/1024, group sizes 64/96
    /// vs 96/128.
    pub(crate) fn two_runs(root: &Path) -> (PathBuf, PathBuf) {
        let (amd, nv) = (root.join("mi250x"), root.join("h100"));
        let actx = "matmul,amd,AMD Instinct MI250X,gfx90a,64";
        write_run(
            &amd,
            Some(&run_json("amd", "AMD Instinct MI250X", "gfx90a", 64, 110)),
            &[
                (
                    "matmul.csv",
                    matmul_csv(
                        actx,
                        &[
                            ("rocblas", 256, 10000.0),
                            ("tiled_m16", 256, 2000.0),
                            ("rocblas", 512, 20000.0),
                            ("tiled_m16", 512, 5000.0),
                        ],
                    ),
                ),
                (
                    "occupancy.csv",
                    occupancy_csv(
                        "occupancy,amd,AMD Instinct MI250X,gfx90a,64",
                        1300.0,
                        &[(64, 100.0, 650.0), (96, 75.0, 520.0)],
                    ),
                ),
                // A side file without experiment/key columns is not an experiment.
                ("occupancy-timeline-x.csv", "cu,group\n1,2\n".into()),
            ],
        );
        let nctx = "matmul,nvidia,NVIDIA H100 80GB HBM3,sm_90,32";
        write_run(
            &nv,
            Some(&run_json("nvidia", "NVIDIA H100 80GB HBM3", "sm_90", 32, 132)),
            &[
                (
                    "matmul.csv",
                    matmul_csv(
                        nctx,
                        &[
                            ("cublas", 512, 40000.0),
                            ("tiled_m16", 512, 8000.0),
                            ("cublas", 1024, 50000.0),
                            ("tiled_m16", 1024, 9000.0),
                        ],
                    ),
                ),
                (
                    "occupancy.csv",
                    occupancy_csv(
                        "occupancy,nvidia,NVIDIA H100 80GB HBM3,sm_90,32",
                        3000.0,
                        &[(96, 98.4, 1800.0), (128, 100.0, 2400.0)],
                    ),
                ),
            ],
        );
        (amd, nv)
    }

    #[test]
    fn different_sweeps_compare_on_their_intersection_and_list_the_rest() {
        let root = tempfile::tempdir().unwrap();
        let (amd, nv) = two_runs(root.path());
        let runs = vec![read_run(&amd, 1).unwrap(), read_run(&nv, 2).unwrap()];
        assert_eq!(runs[0].tables.keys().collect::<Vec<_>>(), ["matmul", "occupancy"], "the timeline is no experiment");
        assert_eq!((runs[0].wave(), runs[1].wave()), ("wave64".to_string(), "warp32".to_string()));
        let (md, plots) = report(&runs, &known());
        assert!(md.contains("wave64 vs warp32"), "{md}");
        assert!(!md.contains("raw rate compares too"), "raw rates of two devices are not compared: {md}");
        assert!(md.contains("abc123-dirty"), "{md}");
        // matmul: the common kernel point at 512 is compared as % of each run's vendor BLAS: 25% vs 20%.
        let matmul = &md[md.find("## matmul").unwrap()..md.find("## occupancy").unwrap()];
        assert!(matmul.contains("### Points in every run (1), compared by % of the run's vendor BLAS"), "{matmul}");
        assert!(matmul.contains("| `tiled_m16/m=512,n=512,k=512` | 25.0 | 20.0 | 0.80 |"), "{matmul}");
        // The vendor itself: 20,000 vs 40,000 GFLOP/s, with % of each device's peak (23.9 and 66.9 TFLOP/s).
        assert!(matmul.contains("| 512 | 20,000 (84%) | 40,000 (60%) | 2.00 |"), "{matmul}");
        assert!(matmul.contains("| 256 | 10,000 (42%) | - | - |"), "{matmul}");
        // Points one run lacks are listed under the run that has them.
        assert!(
            matmul.contains("Only in run 1 (2 points): `vendor/m=256,n=256,k=256`, `tiled_m16/m=256,n=256,k=256`"),
            "{matmul}"
        );
        assert!(
            matmul
                .contains("Only in run 2 (2 points): `vendor/m=1024,n=1024,k=1024`, `tiled_m16/m=1024,n=1024,k=1024`"),
            "{matmul}"
        );
        // Every kernel at the largest size both runs measured: 512.
        assert!(matmul.contains("Every kernel at size 512"), "{matmul}");
        assert!(matmul.contains("| tiled_m16 | 25% | 20% |"), "{matmul}");
        // occupancy (its own tables and plots: experiments::occupancy::compare): the common group size is joined.
        let occ = &md[md.find("## occupancy").unwrap()..];
        assert!(occ.contains("`group_size/g=96,n=64` | 40.0 | 60.0 | 1.50 |"), "{occ}");
        assert!(occ.contains("Only in run 1 (1 points): `group_size/g=64,n=64`"), "{occ}");
        let names: Vec<&str> = plots.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            names,
            [
                "matmul-vendor-gflops.png",
                "matmul-best-percent-of-vendor.png",
                "occupancy-theoretical-vs-group-size.png",
                "occupancy-group-size-percent-of-copy.png"
            ]
        );
        let (_, best) = &plots[1];
        assert_eq!(best.series[0].points, [(256.0, 20.0), (512.0, 25.0)]);
        assert_eq!(best.series[1].points, [(512.0, 20.0), (1024.0, 18.0)]);
        assert!(best
            .series
            .iter()
            .any(|s| s.kind == crate::report::plot::SeriesKind::Reference && s.points[0].1 == 100.0));
    }

    #[test]
    fn a_run_compared_with_itself_has_ratios_of_one_and_no_missing_points() {
        let root = tempfile::tempdir().unwrap();
        let (amd_dir, _) = two_runs(root.path());
        let out = root.path().join("out");
        let written = compare(&[amd_dir.clone(), amd_dir.clone()], &out, &known()).unwrap();
        let md = std::fs::read_to_string(&written.report).unwrap();
        assert!(md.contains("Run 2 / run 1 over 2 points: median 1.000, from 1.000 to 1.000."), "{md}");
        assert!(md.contains("every run is wave64"), "{md}");
        // One device: the raw rate is compared as well as the normalised one.
        assert!(md.contains("#### Same device in every run, so the raw rate compares too: points in every run (4), compared by gflops"), "{md}");
        assert!(!md.contains("Only in run"), "{md}");
        assert!(md.contains("Every run holds the same points, all `ok`."), "{md}");
        assert_eq!(written.plots.len(), 4);
        let (_, plots) = report(&[read_run(&amd_dir, 1).unwrap(), read_run(&amd_dir, 2).unwrap()], &known());
        for (file, plot) in &plots {
            let note = plot.note.as_deref().unwrap_or_default();
            assert!(
                note.contains("\"2: Instinct MI250X, wave64 [mi250x]") && note.contains("lies on \"1: Instinct"),
                "{file}: {note}"
            );
        }
        for p in &written.plots {
            assert!(std::fs::metadata(p).unwrap().len() > 1000, "{}", p.display());
            assert!(md.contains(&format!("]({})", p.file_name().unwrap().to_string_lossy())), "{md}");
        }
    }

    #[test]
    fn a_folder_that_is_not_a_run_is_an_error_naming_it_and_what_is_missing() {
        let root = tempfile::tempdir().unwrap();
        let (amd, _) = two_runs(root.path());
        // (folder, run.json, files, what the error says is missing)
        type Case<'a> = (&'a str, Option<&'a str>, Vec<(&'a str, String)>, &'a str);
        let cases: [Case; 5] = [
            ("nothing", None, vec![], "no run.json"),
            ("json-only", Some("{}"), vec![], "no <experiment>.csv"),
            ("bad-json", Some("{not json"), vec![("matmul.csv", "a\n".into())], "run.json is not JSON"),
            (
                "timeline-only",
                Some("{}"),
                vec![("occupancy-timeline-x.csv", "cu,group\n".into())],
                "no <experiment>.csv",
            ),
            ("shards-only", Some("{}"), vec![("matmul.shard-0-of-2.csv", "experiment,key\n".into())], "suite merge"),
        ];
        for (name, json, files, missing) in cases {
            let dir = root.path().join(name);
            write_run(&dir, json, &files);
            let out = root.path().join(format!("out-{name}"));
            let err = compare(&[amd.clone(), dir.clone()], &out, &known()).unwrap_err();
            let text = err.to_string();
            assert!(matches!(err, Error::NotARun { .. }), "{name}: {text}");
            assert!(text.contains(&dir.display().to_string()) && text.contains(missing), "{name}: {text}");
            assert!(!out.exists(), "{name}: nothing is written when a folder is not a run");
        }
        let err = read_run(&root.path().join("absent"), 1).unwrap_err().to_string();
        assert!(err.contains("absent: not a results folder: no such folder"), "{err}");
    }

    #[test]
    fn an_older_run_json_and_csv_are_read_leniently() {
        let root = tempfile::tempdir().unwrap();
        let old = root.path().join("old");
        // run.json from before git_dirty, experiment, fingerprint and timing were recorded; CSV without timing.
        let json = serde_json::json!({
            "device": {"platform": "nvidia", "name": "NVIDIA H100 80GB HBM3", "arch": "sm_90", "wave_size": 32, "cu_count": 132},
            "invocations": [{"git_commit": "2283546", "date": "2026-11-22T05:18:49Z", "experiments": {"matmul": {}, "reps": 20}}]
        });
        let csv = format!(
            "{CTX},kernel,tile_m,m,n,k,group_x,group_y,reference,reps,time_ms_median,time_ms_min,time_ms_max,gflops,\
             max_rel_err,tolerance,status,message,key\n\
             matmul,nvidia,NVIDIA H100 80GB HBM3,sm_90,32,cublas,,256,256,256,,,host,20,1,1,1,1631,0,1,ok,,\"cublas/m=256,n=256,k=256\"\n\
             matmul,nvidia,NVIDIA H100 80GB HBM3,sm_90,32,naive,,256,256,256,16,16,cublas,20,1,1,1,88,0,1,ok,,\"naive/m=256,n=256,k=256\"\n"
        );
        write_run(&old, Some(&json.to_string()), &[("matmul.csv", csv)]);
        let run = read_run(&old, 1).unwrap();
        assert_eq!(run.invocations[0].experiment, "matmul");
        assert_eq!(run.invocations[0].commit, "2283546");
        assert!(run.notes.iter().any(|n| n.contains("read leniently")), "{:?}", run.notes);
        assert!(run.notes.iter().any(|n| n.contains("before batched timing")), "{:?}", run.notes);
        assert!(run.timing("matmul").contains("unbatched"), "{}", run.timing("matmul"));
        let values = MatmulComparison.values("matmul", &run).unwrap();
        assert_eq!(values.by_key.len(), 1);
        assert!((values.by_key["naive/m=256,n=256,k=256"] - 88.0 / 1631.0 * 100.0).abs() < 1e-9);
        assert_eq!(fp32_peak(&run.device).map(|p| p.fp32_vector_tflops), Some(66.9));
        assert_eq!(run.invocations[0].placement, "not recorded");
    }

    #[test]
    fn the_report_says_where_each_process_ran() {
        let root = tempfile::tempdir().unwrap();
        let (a, _) = two_runs(root.path());
        // Run 2: two shards of one Slurm job on two nodes of LUMI's standard-g, one GCD and 7 cores each.
        let b = root.path().join("lumi");
        let mut json: serde_json::Value = serde_json::from_str(&run_json("amd", "", "gfx90a", 64, 110)).unwrap();
        let first = json["invocations"][0].clone();
        let shard = |node: &str, cpus: &str, gcd: &str| {
            let mut inv = first.clone();
            inv["slurm_job_id"] = "4242".into();
            inv["placement"] = serde_json::json!({
                "cpus_allowed": cpus, "gpu_variables": {"ROCR_VISIBLE_DEVICES": gcd},
                "slurm_partition": "standard-g", "slurm_node": node, "slurm_task": format!("{gcd}/{gcd}")
            });
            inv
        };
        json["invocations"] = serde_json::json!([shard("nid1", "49-55", "0"), shard("nid2", "57-63", "1")]);
        let csv = matmul_csv("matmul,amd,,gfx90a,64", &[("naive", 1024, 100.0), ("rocblas", 1024, 1000.0)]);
        write_run(&b, Some(&json.to_string()), &[("matmul.csv", csv)]);
        let runs = [read_run(&a, 1).unwrap(), read_run(&b, 2).unwrap()];
        let (md, _) = report(&runs, &known());
        let table = &md[md.find("Where each run ran").unwrap()..];
        assert!(
            table.contains(
                "| 2 | h | Slurm job 4242: CPUs 49-55; ROCR_VISIBLE_DEVICES=0; standard-g on nid1, task 0/0 | matmul |"
            ),
            "{table}"
        );
        assert!(table.contains("standard-g on nid2, task 1/1 | matmul |"), "{table}");
        assert!(table.contains("| 1 | h | not recorded | matmul |"), "{table}");
    }

    #[test]
    fn without_its_reference_an_experiment_is_compared_by_the_raw_metric_and_says_why() {
        let root = tempfile::tempdir().unwrap();
        let (a, b) = (root.path().join("a"), root.path().join("b"));
        let smoke = |gbps: f64| {
            format!(
                "{CTX},kernel,n,group_size,bytes,{MEAS},gbps,max_rel_err,tolerance,status,message,key\n\
                 smoke,amd,X,gfx90a,64,triad,1024,256,12288,20,9,graph,true,,,1,1,1,{gbps},0,1,ok,,\"triad/n=1024,group=256\"\n"
            )
        };
        write_run(&a, Some("{}"), &[("smoke.csv", smoke(1000.0))]);
        write_run(&b, Some("{}"), &[("smoke.csv", smoke(1500.0))]);
        let runs = vec![read_run(&a, 1).unwrap(), read_run(&b, 2).unwrap()];
        // The device comes from the CSV rows when run.json lacks it.
        assert_eq!((runs[0].device.arch.as_str(), runs[0].device.wave_size), ("gfx90a", Some(64)));
        assert_eq!(fp32_peak(&runs[0].device), None);
        let (md, plots) = report(&runs, &known());
        assert!(md.contains("Not normalised (run 1 has no copy reference"), "{md}");
        assert!(md.contains("compared by gbps"), "{md}");
        assert!(md.contains("| `triad/n=1024,group=256` | 1,000 | 1,500 | 1.50 |"), "{md}");
        assert!(md.contains("FP32 peak unknown for run 1, run 2"), "{md}");
        assert!(plots.is_empty(), "no copy reference, no % plot");
    }

    #[test]
    fn an_experiment_without_a_comparison_of_its_own_compares_its_metric_column() {
        let root = tempfile::tempdir().unwrap();
        let (a, b) = (root.path().join("a"), root.path().join("b"));
        let csv = |speedup: f64| {
            format!(
                "{CTX},variant,{MEAS},speedup,max_rel_err,tolerance,status,message,key\n\
                 future,nvidia,X,sm_90,32,pt,20,1,host,,,,1,1,1,{speedup},0,0,ok,,pt/1\n"
            )
        };
        write_run(&a, Some("{}"), &[("future.csv", csv(2.0))]);
        write_run(&b, Some("{}"), &[("future.csv", csv(3.0))]);
        let runs = vec![read_run(&a, 1).unwrap(), read_run(&b, 2).unwrap()];
        assert_eq!(runs[0].tables["future"].metric_column(), Some("speedup"));
        let (md, _) = report(&runs, &known());
        assert!(md.contains("## future"), "{md}");
        assert!(md.contains("| `pt/1` | 2.00 | 3.00 | 1.50 |"), "{md}");
        assert!(md.contains("host clock around sequences (1 rows)"), "{md}");
    }

    /// The same GPU through the CUDA path and through the AMD path over the HIP-over-CUDA test runtime, one matmul
    /// point of the second timed on the stream.
    fn cuda_and_test_runtime_runs(root: &Path) -> (PathBuf, PathBuf) {
        let (cuda, hip) = (root.join("cuda"), root.join("hip-over-cuda"));
        let name = "NVIDIA H200";
        write_run(
            &cuda,
            Some(&run_json("nvidia", name, "sm_90", 32, 132)),
            &[(
                "matmul.csv",
                matmul_csv(
                    "matmul,nvidia,NVIDIA H200,sm_90,32",
                    &[("cublas", 512, 40000.0), ("tiled_m16", 512, 8000.0), ("tiled_m16", 1024, 9000.0)],
                ),
            )],
        );
        let runtime =
            "HIP over CUDA test runtime /x/lib/libhip-over-cuda-test-runtime.so: the HIP 6.3 API implemented \
                       over the CUDA driver API, on NVIDIA hardware (not an AMD GPU); CUDA driver /usr/lib/libcuda.so";
        let mut json: serde_json::Value = serde_json::from_str(&run_json("amd", name, "sm_90", 32, 132)).unwrap();
        json["device"]["runtime_version"] = runtime.into();
        let csv = matmul_csv(
            "matmul,amd,NVIDIA H200,sm_90,32",
            &[("rocblas", 512, 40400.0), ("tiled_m16", 512, 7900.0), ("tiled_m16", 1024, 9100.0)],
        )
        .replace(",graph,true,,,1,1,1,9100,", ",stream,true,,,1,1,1,9100,");
        write_run(&hip, Some(&json.to_string()), &[("matmul.csv", csv)]);
        (cuda, hip)
    }

    #[test]
    fn a_run_over_the_test_runtime_is_named_as_such_and_never_as_amd_hardware() {
        let root = tempfile::tempdir().unwrap();
        let (cuda, hip) = cuda_and_test_runtime_runs(root.path());
        let runs = [read_run(&cuda, 1).unwrap(), read_run(&hip, 2).unwrap()];
        assert!(runs[1].device.test_runtime.is_some() && !runs[1].on_amd_hardware());
        assert!(runs[0].device.test_runtime.is_none());
        assert_eq!((runs[0].wave(), runs[1].wave()), ("warp32".to_string(), "warp32".to_string()));
        assert!(runs[1].label().contains("warp32, HIP over CUDA ["), "{}", runs[1].label());
        assert!(runs[1].over_test_runtime().contains("AMD path over the HIP over CUDA test runtime"));
        assert_eq!(runs[0].over_test_runtime(), "");
        let (md, _) = report(&runs, &known());
        assert!(
            md.contains("Run 2 ran the AMD code path (HIP, rocBLAS) on an NVIDIA GPU over the HIP over CUDA test runtime, not on AMD hardware: HIP over CUDA test runtime /x/lib/libhip-over-cuda-test-runtime.so"),
            "{md}"
        );
        assert!(!md.contains("MFMA") && !md.contains("matrix cores"), "no AMD hardware note for NVIDIA figures:\n{md}");
        assert!(md.contains("batches as HIP graphs"), "{md}");
        // Same GPU, so the raw rates compare too, vendor BLAS included (cublas and rocblas join on one key).
        assert!(md.contains("Same device in every run, so the raw rate compares too"), "{md}");
        // A real AMD run stays AMD hardware.
        let (amd, _) = two_runs(root.path());
        assert!(read_run(&amd, 1).unwrap().on_amd_hardware());
    }

    #[test]
    fn points_timed_by_different_methods_are_flagged() {
        let root = tempfile::tempdir().unwrap();
        let (cuda, hip) = cuda_and_test_runtime_runs(root.path());
        let runs = [read_run(&cuda, 1).unwrap(), read_run(&hip, 2).unwrap()];
        let refs: Vec<&Run> = runs.iter().collect();
        let experiments = known();
        let comparison = comparison_for(&experiments, "matmul");
        let flagged = timing_mismatches("matmul", &refs, comparison);
        let key = "tiled_m16/m=1024,n=1024,k=1024".to_string();
        assert_eq!(flagged, [(key.clone(), vec!["graph".to_string(), "stream".to_string()])]);
        let (md, _) = report(&runs, &known());
        assert!(
            md.contains(&format!("**Timed differently** in the runs (1 points, each run's `timing` in run order): their figures and ratios compare timing methods as well as devices: `{key}` (graph / stream).")),
            "{md}"
        );
        assert!(md.contains(&format!("| `{key}` (timed differently) |")), "{md}");
        // The same run twice: nothing differs, nothing is flagged.
        let same = [read_run(&cuda, 1).unwrap(), read_run(&cuda, 2).unwrap()];
        assert!(!report(&same, &known()).0.contains("Timed differently"));
    }

    #[test]
    fn numbers_read_as_in_the_readme() {
        let cases = [
            (51686.4, "51,686"),
            (5345.0, "5,345"),
            (100.0, "100"),
            (99.94, "99.9"),
            (1.5, "1.50"),
            (0.0123, "0.012"),
            (-1234.0, "-1,234"),
            (f64::NAN, "-"),
        ];
        for (v, s) in cases {
            assert_eq!(fmt_num(v), s, "{v}");
        }
    }
}
