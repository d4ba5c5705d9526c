//! A roofline of a run: every kernel it measured, placed by its arithmetic intensity (the FLOP it counts over the
//! bytes it must move) against the FLOP rate it reached, under the run's ceilings: the copy bandwidth measured in
//! the same run and the device's peaks per precision and unit ([`crate::peaks`]: FP32 vector, packed and matrix, FP64
//! vector and matrix). A point is held to the peak of its own precision and unit (its experiment's [`Role`] says
//! which; FP32 vector where it says nothing). A point near its ceiling is as fast as the hardware allows; a point far
//! under the roof left speed on the table.
//!
//! Read from a results folder (`run.json` and the experiments' CSVs, their `flop_count` and `byte_count` columns),
//! written as `roofline.csv` (one row per kernel point) and `roofline.png`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::csv::read_rows;
use super::plot::{
    measured_style, render_png, Axis, LegendEntry, LinePlot, PointLabel, Series, SeriesKind, Style, DEFAULT_SIZE,
    MARKERS,
};
use super::{Error, Result};
use crate::peaks::{Ceilings, Unit};
use crate::precision::Precision;

/// The file names a roofline is written to.
pub const CSV: &str = "roofline.csv";
/// The plot.
pub const PNG: &str = "roofline.png";

/// One measured kernel point on the roofline.
#[derive(Debug, Clone, PartialEq)]
pub struct Placed {
    /// The experiment, e.g. `matmul`.
    pub experiment: String,
    /// The kernel family the point is drawn with, e.g. `double_buffer`, `group_size_x4`, `fused_staged`.
    pub family: String,
    /// The row's key.
    pub key: String,
    /// FLOP of one launch.
    pub flops: f64,
    /// Bytes of one launch.
    pub bytes: f64,
    /// Median time of one launch, ms.
    pub time_ms: f64,
    /// The precision and unit its FLOP ran on, where its experiment says (FP32 vector otherwise).
    pub rate: Option<(Precision, Unit)>,
}

impl Placed {
    /// FLOP per byte.
    pub fn intensity(&self) -> f64 {
        self.flops / self.bytes
    }

    /// GFLOP/s at the median time.
    pub fn gflops(&self) -> f64 {
        self.flops / (self.time_ms * 1e6)
    }
}

/// The ceilings of a run, in the roofline's units.
#[derive(Debug, Clone, PartialEq)]
pub struct Roof {
    /// Memory bandwidth, GB/s.
    pub memory_gbps: f64,
    /// Where it comes from (measured in the run, or the datasheet's where the run measured no copy).
    pub memory_source: String,
    /// Compute ceilings as drawn, (label, GFLOP/s), lowest first; paths with the same peak share a line (on an
    /// H100, FP32 vector and FP64 matrix are both 66.9 TFLOP/s).
    pub compute: Vec<(String, f64)>,
    /// The peak of each precision and unit the device has, GFLOP/s.
    pub peaks: Vec<(Precision, Unit, f64)>,
    /// Where they come from.
    pub compute_source: String,
}

impl Roof {
    /// The compute ceiling of a point whose FLOP ran in `rate` (precision and unit), GFLOP/s, and its label: that
    /// path's peak, else the FP32 vector peak (rows that do not say, and paths the device lacks).
    pub fn ceiling(&self, rate: Option<(Precision, Unit)>) -> (f64, String) {
        let find = |p: Precision, u: Unit| self.peaks.iter().find(|(q, v, _)| *q == p && *v == u);
        let label = |p: Precision, u: Unit| format!("{} {}", p.label(), u.name());
        match rate.and_then(|(p, u)| find(p, u)).or_else(|| find(Precision::F32, Unit::Vector)) {
            Some(&(p, u, g)) => (g, label(p, u)),
            None => (f64::INFINITY, "none".into()),
        }
    }

    /// The rate a kernel of intensity `i` whose FLOP ran in `rate` can reach, GFLOP/s: the memory roof or its
    /// compute ceiling ([`Roof::ceiling`]), whichever is lower.
    pub fn attainable(&self, i: f64, rate: Option<(Precision, Unit)>) -> f64 {
        (self.memory_gbps * i).min(self.ceiling(rate).0)
    }
}

/// A run's roofline: its device, ceilings and points, and what was left out.
#[derive(Debug, Clone, PartialEq)]
pub struct Roofline {
    /// The device, e.g. `NVIDIA H200 (sm_90, warp32)`.
    pub device: String,
    /// The ceilings.
    pub roof: Roof,
    /// The points, in CSV order.
    pub points: Vec<Placed>,
    /// What was left out and why.
    pub left_out: Vec<String>,
}

/// A CSV row, column → value.
pub type Row = BTreeMap<String, String>;

/// How one experiment's rows go on the roofline. Each experiment gives its own (`Results::roofline`); the app
/// gathers them from the registry, so this module knows no experiment by name.
#[derive(Debug, Clone, Copy)]
pub struct Role {
    /// Why the experiment's rows stay off the roofline (rows that are not one kernel's rate), or `None`.
    pub off: Option<&'static str>,
    /// The family a row is drawn with (e.g. a kernel name without its shape).
    pub family: fn(&Row) -> String,
    /// Whether a row is a device copy, the measured memory ceiling.
    pub is_copy: fn(&Row) -> bool,
    /// The precision and unit a row's FLOP ran on, whose peak is its ceiling (`None`: FP32 vector).
    pub rate: fn(&Row) -> Option<(Precision, Unit)>,
}

impl Default for Role {
    /// On the roofline, each row in the family its key starts with (`family/...`), no copies, FP32 vector.
    fn default() -> Self {
        Role {
            off: None,
            family: |r| r.get("key").and_then(|k| k.split('/').next()).unwrap_or_default().to_string(),
            is_copy: |_| false,
            rate: |_| None,
        }
    }
}

/// Each experiment's [`Role`] by name; an experiment not listed gets the default.
pub type Roles = [(&'static str, Role)];

fn role_of(roles: &Roles, experiment: &str) -> Role {
    roles.iter().find(|(name, _)| *name == experiment).map_or_else(Role::default, |(_, r)| *r)
}

/// The copy bandwidth a run measured, GB/s, and where: the fastest row an experiment's [`Role`] calls a device
/// copy (occupancy's driver copy, fusion's copy rows), counting the bytes read and written. A copy whose data the
/// L2 held between back-to-back launches (`l2_resident` true) measured the cache, not the memory: it is no ceiling.
fn measured_copy(tables: &[(String, Vec<Row>)], roles: &Roles) -> Option<(f64, String)> {
    let mut best: Option<(f64, String)> = None;
    for (experiment, rows) in tables {
        let role = role_of(roles, experiment);
        for r in rows.iter().filter(|r| r.get("status").is_some_and(|s| s == "ok")) {
            let is_copy = (role.is_copy)(r) && r.get("l2_resident").is_none_or(|v| v != "true");
            let gbps = r.get("gbps").and_then(|v| v.parse::<f64>().ok());
            if let (true, Some(gbps)) = (is_copy, gbps) {
                if best.as_ref().is_none_or(|(b, _)| gbps > *b) {
                    best = Some((gbps, format!("{experiment} {}", r.get("key").cloned().unwrap_or_default())));
                }
            }
        }
    }
    best
}

/// The roof of a run: the copy it measured (else the datasheet's bandwidth, said so), and the device's peaks per
/// precision and unit.
fn roof(ceilings: &Ceilings, copy: Option<(f64, String)>) -> Roof {
    let (memory_gbps, memory_source) = match (copy, ceilings.memory_gbps) {
        (Some((gbps, key)), _) => (gbps, format!("the device copy measured in this run ({key}), bytes read + written")),
        (None, Some(gbps)) => (gbps, format!("{}'s datasheet: this run measured no copy", ceilings.part)),
        (None, None) => (0.0, "unknown: no copy measured and no datasheet figure".into()),
    };
    let paths = [
        (Precision::F32, Unit::Vector),
        (Precision::F32, Unit::Packed),
        (Precision::F32, Unit::Matrix),
        (Precision::F64, Unit::Vector),
        (Precision::F64, Unit::Matrix),
    ];
    let peaks: Vec<(Precision, Unit, f64)> =
        paths.iter().filter_map(|&(p, u)| Some((p, u, ceilings.peak_tflops(p, u)? * 1e3))).collect();
    // One line per distinct peak, lowest first, naming every path at it.
    let mut compute: Vec<(Vec<String>, f64)> = Vec::new();
    for &(p, u, g) in &peaks {
        let name = format!("{} {}", p.label(), u.name());
        match compute.iter_mut().find(|(_, c)| *c == g) {
            Some((names, _)) => names.push(name),
            None => compute.push((vec![name], g)),
        }
    }
    compute.sort_by(|a, b| a.1.total_cmp(&b.1));
    let compute = compute.into_iter().map(|(names, g)| (join_and(&names), g)).collect();
    Roof { memory_gbps, memory_source, compute, peaks, compute_source: ceilings.source.clone() }
}

/// `a`, `a and b`, `a, b and c`.
fn join_and(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The roofline of the results folder `dir`; `None` when it has no run.json or no row to place.
pub fn of_run(dir: &Path, roles: &Roles) -> Result<Option<Roofline>> {
    let Some(run) = super::run_json::read(dir)? else { return Ok(None) };
    let mut tables = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|source| Error::Io { action: "cannot read", path: dir.to_path_buf(), source })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "csv") && !p.to_string_lossy().contains(".shard-"))
        .collect();
    entries.sort();
    for path in entries {
        let rows = read_rows(&path)?;
        // The experiments' own CSVs: a context column names the experiment (derived tables have none).
        let Some(experiment) = rows.first().and_then(|r| r.get("experiment")).cloned() else { continue };
        if path.file_stem().is_some_and(|s| s.to_string_lossy() == experiment) {
            tables.push((experiment, rows));
        }
    }
    let mut points = Vec::new();
    let mut left_out: Vec<String> = Vec::new();
    let mut host_timed = 0;
    let mut no_count: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for (experiment, rows) in &tables {
        let role = role_of(roles, experiment);
        if let Some(why) = role.off {
            left_out.push(format!("{experiment}: {why}"));
            continue;
        }
        for r in rows.iter().filter(|r| r.get("status").is_some_and(|s| s == "ok")) {
            let num = |c: &str| r.get(c).and_then(|v| v.parse::<f64>().ok());
            if r.get("timing").is_some_and(|t| t == "host") {
                host_timed += 1;
                continue;
            }
            let (Some(flops), Some(bytes), Some(time_ms)) =
                (num("flop_count"), num("byte_count"), num("time_ms_median"))
            else {
                *no_count.entry(experiment.clone()).or_default() += 1;
                continue;
            };
            if flops > 0.0 && bytes > 0.0 && time_ms > 0.0 {
                let key = r.get("key").cloned().unwrap_or_default();
                points.push(Placed {
                    experiment: experiment.clone(),
                    family: (role.family)(r),
                    key,
                    flops,
                    bytes,
                    time_ms,
                    rate: (role.rate)(r),
                });
            }
        }
    }
    if host_timed > 0 {
        left_out.push(format!("{host_timed} rows timed by the host clock (end-to-end sequences, not one kernel)"));
    }
    if !no_count.is_empty() {
        let by: Vec<String> = no_count.iter().map(|(e, n)| format!("{n} {e}")).collect();
        left_out.push(format!(
            "rows with no counted FLOP and bytes ({}): spin waits and bare barriers do no counted work, and a CSV \
             from before these columns has none",
            by.join(", ")
        ));
    }
    left_out.push("copies: they do no FLOP; the fastest is the memory ceiling".into());
    if points.is_empty() {
        return Ok(None);
    }
    let props = &run.device;
    let wave = if props.platform == crate::device::Platform::Nvidia { "warp" } else { "wave" };
    let device = format!("{} ({}, {wave}{})", props.name, props.arch, props.wave_size.0);
    let roof = roof(&crate::peaks::ceilings(props), measured_copy(&tables, roles));
    Ok(Some(Roofline { device, roof, points, left_out }))
}

/// The roofline's rows as CSV text.
pub fn csv_text(r: &Roofline) -> String {
    let mut out = String::from(
        "experiment,family,key,flop_count,byte_count,intensity_flop_per_byte,time_ms_median,gflops,\
         attainable_gflops,share_of_attainable,bound,memory_ceiling_gbps,fp32_ceiling_gflops,ceiling,ceiling_gflops\n",
    );
    let fp32 = r.roof.ceiling(None).0;
    for p in &r.points {
        let i = p.intensity();
        let (compute, ceiling) = r.roof.ceiling(p.rate);
        let attainable = r.roof.attainable(i, p.rate);
        let bound = if r.roof.memory_gbps * i < compute { "memory" } else { "compute" };
        let key =
            if p.key.contains([',', '"']) { format!("\"{}\"", p.key.replace('"', "\"\"")) } else { p.key.clone() };
        out.push_str(&format!(
            "{},{},{key},{},{},{:.6},{},{:.3},{:.3},{:.4},{bound},{:.1},{:.1},{ceiling},{:.1}\n",
            p.experiment,
            p.family,
            p.flops,
            p.bytes,
            i,
            p.time_ms,
            p.gflops(),
            attainable,
            p.gflops() / attainable,
            r.roof.memory_gbps,
            fp32,
            compute
        ));
    }
    out
}

/// The roof's reference lines between intensities `x_lo` and `x_hi`, labelled with `prefix`: the memory roof
/// rises until the highest compute ceiling; each compute ceiling is flat from its ridge.
fn roof_series(prefix: &str, roof: &Roof, x_lo: f64, x_hi: f64) -> Vec<Series> {
    let top = roof.compute.last().map_or(f64::INFINITY, |c| c.1);
    let ridge = top / roof.memory_gbps;
    // Points all right of the ridge (FP64 matmul at 4096 and 8192): the axis still reaches left of it, so the
    // memory roof is drawn rising to the ridge rather than backwards from the leftmost point far above every roof.
    let x_lo = if ridge.is_finite() { x_lo.min(ridge / 2.0) } else { x_lo };
    let mut series = vec![Series::reference(
        format!("{prefix}memory {:.0} GB/s", roof.memory_gbps),
        vec![(x_lo, roof.memory_gbps * x_lo), (ridge.min(x_hi), roof.memory_gbps * ridge.min(x_hi))],
    )];
    for (name, gflops) in &roof.compute {
        let from = (gflops / roof.memory_gbps).max(x_lo);
        series.push(Series::reference(
            format!("{prefix}{name}: {:.1} TFLOP/s", gflops / 1e3),
            vec![(from, *gflops), (x_hi, *gflops)],
        ));
    }
    series
}

/// A group of a run's points drawn as one series: its experiment, its kernel family (none when several runs are
/// drawn) and whether it is FP64.
type GroupKey = (String, String, bool);

/// The roofline plot of one or more runs (labelled `run N` when several), with a legend grouped so it stays
/// readable however many kernels a run measured: a marker shape per experiment; one run's points in a colour per
/// family (FP64 hollow beside FP32 filled), several runs' in a colour per run (run 1 filled, later runs as rings
/// around them); the memory roof and the compute ceilings (one per distinct peak of a precision and unit) as reference
/// lines; and, per run and experiment, its point closest to its roof labelled.
pub fn plot(runs: &[(String, &Roofline)]) -> LinePlot {
    let several = runs.len() > 1;
    let all = runs.iter().flat_map(|(_, r)| r.points.iter());
    let (lo, hi) = all.fold((f64::INFINITY, 0.0f64), |(lo, hi), p| (lo.min(p.intensity()), hi.max(p.intensity())));
    let (x_lo, x_hi) = (lo / 2.0, hi * 2.0);
    // Experiments in order of first appearance, each with its marker.
    let mut experiments: Vec<&str> = Vec::new();
    for p in runs.iter().flat_map(|(_, r)| r.points.iter()) {
        if !experiments.contains(&p.experiment.as_str()) {
            experiments.push(&p.experiment);
        }
    }
    let marker_of = |e: &str| MARKERS[experiments.iter().position(|x| *x == e).unwrap_or(0) % MARKERS.len()];
    // FP64 by its rate, or (an experiment that names no rate, fusion) by its family's suffix.
    let is_fp64 = |p: &Placed| {
        p.rate.is_some_and(|(precision, _)| precision == Precision::F64)
            || [" (f64)", " f64", "_f64"].iter().any(|s| p.family.ends_with(s))
    };
    let mut series = Vec::new();
    let mut legend = Vec::new();
    let mut labels = Vec::new();
    for (i, (label, r)) in runs.iter().enumerate() {
        let prefix = if several { format!("{label}: ") } else { String::new() };
        // Groups of points, in order: (experiment, family or none, FP64), each one series in one style.
        let mut groups: Vec<(GroupKey, Vec<(f64, f64)>)> = Vec::new();
        for p in &r.points {
            // One colour for a family in both precisions: FP64's marker is hollow, so its name drops the suffix.
            let family = if several {
                String::new()
            } else if is_fp64(p) {
                let f = p.family.as_str();
                f.strip_suffix(" (f64)")
                    .or_else(|| f.strip_suffix(" f64"))
                    .or_else(|| f.strip_suffix("_f64"))
                    .unwrap_or(f)
                    .to_string()
            } else {
                p.family.clone()
            };
            let key = (p.experiment.clone(), family, is_fp64(p));
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, pts)) => pts.push((p.intensity(), p.gflops())),
                None => groups.push((key, vec![(p.intensity(), p.gflops())])),
            }
        }
        // A colour per family within its experiment (one run), or per run (several).
        let mut families: Vec<(String, String)> = Vec::new();
        for ((e, f, _), _) in &groups {
            if !families.contains(&(e.clone(), f.clone())) {
                families.push((e.clone(), f.clone()));
            }
        }
        let colour_of = |e: &str, f: &str| {
            let within = families.iter().filter(|(x, _)| x == e).position(|(_, y)| y == f).unwrap_or(0);
            measured_style(if several { i } else { within }).0
        };
        let kind = if i == 0 { SeriesKind::Points } else { SeriesKind::Rings };
        for ((e, f, fp64), pts) in groups {
            let style = Style { color: colour_of(&e, &f), marker: marker_of(&e), hollow: fp64 || i > 0 };
            let name = match (f.is_empty(), fp64) {
                (true, false) => format!("{prefix}{e}"),
                (true, true) => format!("{prefix}{e} FP64"),
                (false, false) => format!("{prefix}{e}: {f}"),
                (false, true) => format!("{prefix}{e}: {f} FP64"),
            };
            series.push(Series::of_kind(kind, name, pts).styled(style));
        }
        // The legend: per run (several) or per experiment (one), its markers.
        if several {
            let how = if i == 0 { "filled" } else { "rings" };
            legend.push(LegendEntry::heading(format!("{label}: {} ({how})", r.device)));
            for e in &experiments {
                if r.points.iter().any(|p| p.experiment == *e) {
                    let style = Style { color: colour_of(e, ""), marker: marker_of(e), hollow: i > 0 };
                    legend.push(LegendEntry::marker(e.to_string(), style));
                }
            }
        } else {
            for e in &experiments {
                legend.push(LegendEntry::heading(format!("{e}:")));
                for (_, f) in families.iter().filter(|(x, _)| x == e) {
                    let style = Style { color: colour_of(e, f), marker: marker_of(e), hollow: false };
                    legend.push(LegendEntry::marker(f.clone(), style));
                }
            }
            if r.points.iter().any(is_fp64) {
                legend.push(LegendEntry::heading("hollow: FP64, filled: FP32"));
            }
        }
        // Per experiment, its point closest to its roof, named.
        for e in &experiments {
            let best = r.points.iter().filter(|p| p.experiment == *e).max_by(|a, b| {
                let share = |p: &Placed| p.gflops() / r.roof.attainable(p.intensity(), p.rate);
                share(a).total_cmp(&share(b))
            });
            if let Some(p) = best {
                let share = p.gflops() / r.roof.attainable(p.intensity(), p.rate);
                let text = format!("{prefix}{e} {}: {:.0}% of its roof", short_key(&p.key), 100.0 * share);
                labels.push(PointLabel { x: p.intensity(), y: p.gflops(), text });
            }
        }
    }
    for (label, r) in runs {
        let prefix = if several { format!("{label}: ") } else { String::new() };
        series.extend(roof_series(&prefix, &r.roof, x_lo, x_hi));
    }
    let first = runs.first().map(|(_, r)| r);
    let title = match (several, first) {
        (false, Some(r)) => format!("Roofline of every kernel measured on {}", r.device),
        _ => format!(
            "Rooflines of {} runs: {}",
            runs.len(),
            runs.iter().map(|(l, r)| format!("{l} {}", r.device)).collect::<Vec<_>>().join(" vs ")
        ),
    };
    let mut note = String::from(
        "x = flop_count / byte_count of one launch (FLOP as each experiment counts them; bytes: each input read \
         once, each output written once); y = flop_count / median time. ",
    );
    for (label, r) in runs {
        let prefix = if several { format!("{label}: ") } else { String::new() };
        note.push_str(&format!(
            "{prefix}memory ceiling: {}; compute ceilings (each point is held to its precision and unit's): {}. Left \
             out: {}. ",
            r.roof.memory_source,
            r.roof.compute_source,
            r.left_out.join("; ")
        ));
    }
    LinePlot {
        title,
        legend: Some(legend),
        labels,
        // Its grouped legend and its note (the ceilings' sources, what was left out) take room under the chart.
        min_height: Some(1300),
        subtitle: Some(if several {
            "run 1's kernels filled, later runs' as rings (a filled point inside a ring: the runs agree); a point \
             under its roof left speed on the table"
                .into()
        } else {
            "a marker per experiment, a colour per kernel family, FP64 hollow; each experiment's point closest to its \
             roof is named; a point under its roof left speed on the table"
                .into()
        }),
        x_label: "arithmetic intensity, FLOP per byte (log scale)".into(),
        y_label: "GFLOP/s (log scale)".into(),
        x_axis: Axis::Log10,
        y_axis: Axis::Log10,
        series,
        y_max: None,
        x_categories: Vec::new(),
        note: Some(note.trim_end().to_string()),
    }
}

/// A point's key as a label: without the size parameters a reader sees on the axes (`double_buffer/m=4096,n=4096,
/// k=4096` reads `double_buffer 4096`).
fn short_key(key: &str) -> String {
    let (name, params) = key.split_once('/').unwrap_or((key, ""));
    let square = params.strip_prefix("m=").and_then(|rest| {
        let mut dims = rest.split(',').map(|d| d.split_once('=').map_or(d, |(_, v)| v));
        let m = dims.next()?;
        let n = dims.next()?.split('/').next()?;
        let k = dims.next()?.split('/').next()?;
        (m == n && n == k).then(|| m.to_string())
    });
    match square {
        Some(n) => format!("{name} {n}"),
        None => key.to_string(),
    }
}

/// The plot of the measured bytes beside the counted ones.
pub const DRAM_PNG: &str = "roofline-dram.png";

/// The roofline of `r` with each kernel the profiler measured drawn twice at the same GFLOP/s: filled at the
/// intensity its experiment counts (`flop_count / byte_count`), as a ring at the intensity of the DRAM bytes the
/// profiler read in one launch (`measured`: (experiment, key) → bytes read + written, from `counters.csv`). A ring
/// left of its dot moved more bytes than counted; right of it, fewer (data found in the caches). `None` when no
/// point has a measurement.
pub fn plot_dram(r: &Roofline, measured: &BTreeMap<(String, String), f64>, cache_note: &str) -> Option<LinePlot> {
    let pairs: Vec<(&Placed, f64)> = r
        .points
        .iter()
        .filter_map(|p| {
            let bytes = *measured.get(&(p.experiment.clone(), p.key.clone()))?;
            (bytes > 0.0).then_some((p, bytes))
        })
        .collect();
    if pairs.is_empty() {
        return None;
    }
    let counted: Vec<(f64, f64)> = pairs.iter().map(|(p, _)| (p.intensity(), p.gflops())).collect();
    let dram: Vec<(f64, f64)> = pairs.iter().map(|(p, bytes)| (p.flops / bytes, p.gflops())).collect();
    let (lo, hi) =
        counted.iter().chain(&dram).fold((f64::INFINITY, 0.0f64), |(lo, hi), (x, _)| (lo.min(*x), hi.max(*x)));
    let mut series = vec![
        Series::points(format!("{} kernels: intensity from the bytes each experiment counts", pairs.len()), counted),
        Series::rings("the same kernels: intensity from the DRAM bytes the profiler measured", dram),
    ];
    series.extend(roof_series("", &r.roof, lo / 2.0, hi * 2.0));
    Some(LinePlot {
        title: format!("Roofline with measured DRAM bytes on {}", r.device),
        subtitle: Some(
            "each kernel twice at its measured GFLOP/s: a ring left of its dot moved more DRAM bytes than its \
             experiment counts, right of it fewer (data the caches held)"
                .into(),
        ),
        x_label: "arithmetic intensity, FLOP per byte (log scale)".into(),
        y_label: "GFLOP/s (log scale)".into(),
        x_axis: Axis::Log10,
        y_axis: Axis::Log10,
        series,
        y_max: None,
        note: Some(format!(
            "counted: flop_count / byte_count (each input read once, each output written once); measured: \
             flop_count / (dram_read_bytes + dram_write_bytes) of counters.csv, summed over the point's kernels. \
             {cache_note} Memory ceiling: {}; FP32 ceilings: {}.",
            r.roof.memory_source, r.roof.compute_source
        )),
        ..LinePlot::default()
    })
}

/// Writes `roofline-dram.png` of the results folder `dir` ([`plot_dram`]); the file, or `None` when there is no
/// roofline or no measured point on it.
pub fn write_dram(
    dir: &Path,
    roles: &Roles,
    measured: &BTreeMap<(String, String), f64>,
    cache_note: &str,
) -> Result<Option<PathBuf>> {
    let Some(r) = of_run(dir, roles)? else { return Ok(None) };
    let Some(plot) = plot_dram(&r, measured, cache_note) else { return Ok(None) };
    let png = dir.join(DRAM_PNG);
    render_png(&plot, &png, DEFAULT_SIZE.0, DEFAULT_SIZE.1).map_err(|e| Error::Io {
        action: "cannot draw",
        path: png.clone(),
        source: std::io::Error::other(e.to_string()),
    })?;
    Ok(Some(png))
}

/// Writes `roofline.csv` and `roofline.png` of the results folder `dir`; the files written, none when the folder
/// has nothing to place.
pub fn write(dir: &Path, roles: &Roles) -> Result<Vec<PathBuf>> {
    let Some(r) = of_run(dir, roles)? else { return Ok(Vec::new()) };
    let csv = dir.join(CSV);
    crate::safe_fs::write_whole(&csv, csv_text(&r).as_bytes())
        .map_err(|source| super::io_error("cannot write", &csv, source))?;
    let png = dir.join(PNG);
    render_png(&plot(&[(String::new(), &r)]), &png, DEFAULT_SIZE.0, DEFAULT_SIZE.1).map_err(|e| Error::Io {
        action: "cannot draw",
        path: png.clone(),
        source: std::io::Error::other(e.to_string()),
    })?;
    Ok(vec![csv, png])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::lock::Wait;

    /// Roles standing in for the experiments' own (the registry's are tested with the experiments): rows of
    /// "kernels" drawn by their `kernel` column, "copies" rows with `sweep` = copy are copies, "sequences" off.
    fn fixture_roles() -> Vec<(&'static str, Role)> {
        vec![
            ("kernels", Role { family: |r| r["kernel"].clone(), ..Role::default() }),
            ("copies", Role { is_copy: |r| r.get("sweep").is_some_and(|s| s == "copy"), ..Role::default() }),
            ("sequences", Role { off: Some("rows time sequences"), ..Role::default() }),
        ]
    }

    fn h200() -> Ceilings {
        Ceilings {
            part: "H200 SXM (132 SMs)".into(),
            fp32_vector_tflops: 66.9,
            fp32_packed_tflops: None,
            fp32_matrix_tflops: None,
            fp64_vector_tflops: Some(33.5),
            fp64_matrix_tflops: Some(66.9),
            memory_gbps: Some(4800.0),
            vendor_sgemm_units: "",
            vendor_dgemm_units: "",
            source: "datasheet".into(),
        }
    }

    #[test]
    fn the_memory_roof_rises_to_the_ridge_even_when_every_point_is_right_of_it() {
        let roof = Roof {
            memory_gbps: 4800.0,
            memory_source: String::new(),
            compute: vec![("FP64 vector".into(), 33500.0), ("FP64 matrix".into(), 66900.0)],
            peaks: Vec::new(),
            compute_source: String::new(),
        };
        // Every point at 300 FLOP per byte or more; the ridge is at 66900 / 4800 = 13.9.
        let series = roof_series("", &roof, 300.0, 700.0);
        let memory = &series[0].points;
        assert!(memory[0].0 < memory[1].0, "{memory:?}");
        assert!(memory.iter().all(|p| p.1 <= 66900.0 + 1e-6), "{memory:?}");
        assert_eq!(memory[1], (66900.0 / 4800.0, 66900.0));
        for ceiling in &series[1..] {
            assert!(ceiling.points[0].0 < ceiling.points[1].0, "{:?}", ceiling.points);
        }
    }

    #[test]
    fn the_measured_copy_is_the_memory_roof_and_attainable_rates_follow_it() {
        let row = |key: &str, sweep: &str, gbps: f64| {
            BTreeMap::from([
                ("status".to_string(), "ok".to_string()),
                ("sweep".into(), sweep.into()),
                ("key".into(), key.into()),
                ("gbps".into(), gbps.to_string()),
            ])
        };
        let tables = vec![(
            "copies".to_string(),
            vec![row("copy/n=1", "copy", 4000.0), row("copy/n=2", "copy", 4200.0), row("add", "group_size", 4300.0)],
        )];
        let r = roof(&h200(), measured_copy(&tables, &fixture_roles()));
        assert_eq!(r.memory_gbps, 4200.0);
        assert!(r.memory_source.contains("measured in this run (copies copy/n=2)"), "{}", r.memory_source);
        // Without its role no row is a copy.
        assert_eq!(measured_copy(&tables, &[]), None);
        // A faster copy whose data the L2 held measured the cache: not the memory roof (the H100 quick run's FP64
        // copy of 2^20 elements gave 4832 GB/s, over HBM3's 3350).
        let mut cached = row("copy/n=3", "copy", 4832.0);
        cached.insert("l2_resident".into(), "true".into());
        let mut with_cache = tables.clone();
        with_cache[0].1.push(cached);
        assert_eq!(roof(&h200(), measured_copy(&with_cache, &fixture_roles())).memory_gbps, 4200.0);
        // Ridge at 66900 / 4200 = 15.9 FLOP/B.
        assert!((r.attainable(1.0, None) - 4200.0).abs() < 1e-9);
        assert!((r.attainable(100.0, None) - 66900.0).abs() < 1e-9);
        // An FP64 vector point is held to 33.5 TFLOP/s, an FP64 matrix one to 66.9; FP64 packed does not exist, so
        // it falls back to FP32 vector.
        let fp64 = |u| Some((Precision::F64, u));
        assert!((r.attainable(100.0, fp64(Unit::Vector)) - 33500.0).abs() < 1e-9);
        assert_eq!(r.ceiling(fp64(Unit::Matrix)), (66900.0, "FP64 matrix".to_string()));
        assert_eq!(r.ceiling(fp64(Unit::Packed)).1, "FP32 vector");
        let lines: Vec<&str> = r.compute.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(lines, ["FP64 vector", "FP32 vector and FP64 matrix"]);
        let none = roof(&h200(), None);
        assert!(none.memory_source.contains("datasheet: this run measured no copy"), "{}", none.memory_source);
        let gcd = Ceilings {
            fp32_vector_tflops: 23.9,
            fp32_packed_tflops: Some(47.9),
            fp32_matrix_tflops: Some(47.9),
            fp64_vector_tflops: Some(23.9),
            fp64_matrix_tflops: Some(47.9),
            ..h200()
        };
        let labels: Vec<String> = roof(&gcd, None).compute.into_iter().map(|c| c.0).collect();
        assert_eq!(labels, ["FP32 vector and FP64 vector", "FP32 packed, FP32 matrix and FP64 matrix"]);
    }

    /// The calculator's H100 with the clocks, memory and runtime its device reports.
    fn h100() -> crate::device::Props {
        crate::device::Props {
            clock_mhz: Some(1980),
            memory_clock_mhz: Some(2619),
            memory_bus_bits: Some(5120),
            l2_bytes: Some(50 << 20),
            runtime_version: "CUDA 13.0".into(),
            ..crate::occupancy_calculator::tests::h100()
        }
    }

    #[test]
    fn a_run_folder_gives_its_csv_and_plot() {
        let dir = tempfile::tempdir().unwrap();
        let props = h100();
        let invocation = super::super::run_json::Invocation::now(serde_json::json!({}), None);
        let folder = super::super::folder::ResultsFolder::take(dir.path(), None, "suite run", Wait::No);
        folder.unwrap().record_invocation(&props, invocation).unwrap();
        let ctx = "kernels,nvidia,NVIDIA H100 80GB HBM3,sm_90,32";
        let head = "experiment,platform,device,arch,wave_size,kernel,m,timing,flop_count,byte_count,time_ms_median,gflops,status,key";
        // 4096^3: 1.374e11 FLOP over 3 x 64 MiB; in 3 ms, 45.8 TFLOP/s.
        let f = 2.0 * 4096f64.powi(3);
        let b = 12.0 * 4096f64.powi(2);
        let csv = format!(
            "{head}\n{ctx},double_buffer_64x128x8_t128,4096,graph,{f},{b},3,45800,ok,k1\n\
             {ctx},cublas,4096,graph,{f},{b},2.7,50000,ok,k2\n{ctx},naive,4096,graph,{f},{b},,,invalid,k3\n\
             {ctx},naive,512,host,1,1,1,1,ok,k4\n"
        );
        std::fs::write(dir.path().join("kernels.csv"), csv).unwrap();
        std::fs::write(dir.path().join("sequences.csv"), "experiment,status,key\nsequences,ok,x\n").unwrap();
        let written = write(dir.path(), &fixture_roles()).unwrap();
        assert_eq!(written.len(), 2);
        let text = std::fs::read_to_string(dir.path().join(CSV)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[1].starts_with("kernels,double_buffer_64x128x8_t128,k1,"), "{text}");
        // Intensity 2*4096/12 = 682.7 FLOP/B: compute-bound under the H100's 66.9 TFLOP/s.
        assert!(lines[1].contains(",682.666667,3,45.8") || lines[1].contains(",682.666667,3,"), "{text}");
        assert!(lines[1].contains(",compute,"), "{text}");
        let r = of_run(dir.path(), &fixture_roles()).unwrap().unwrap();
        assert!(r.left_out.iter().any(|l| l == "sequences: rows time sequences"), "{:?}", r.left_out);
        assert!(r.left_out.iter().any(|l| l.starts_with("1 rows timed by the host")), "{:?}", r.left_out);
        assert!(r.roof.memory_source.contains("datasheet"), "{}", r.roof.memory_source);
        let p = plot(&[(String::new(), &r)]);
        assert!(p.title.contains("H100"), "{}", p.title);
        assert_eq!(p.series.iter().filter(|s| s.kind == super::super::plot::SeriesKind::Points).count(), 2);

        // Measured DRAM bytes beside the counted ones: k1 moved 1.5 times its counted bytes (format-sample values,
        // not a measurement), k2 has no measurement and is left off.
        let measured = BTreeMap::from([(("kernels".to_string(), "k1".to_string()), 1.5 * b)]);
        let d = plot_dram(&r, &measured, "caches flushed").unwrap();
        let of = |kind| d.series.iter().find(|s| s.kind == kind).unwrap();
        let counted = &of(super::super::plot::SeriesKind::Points).points;
        let dram = &of(super::super::plot::SeriesKind::Rings).points;
        assert_eq!(counted.len(), 1);
        assert!((counted[0].0 / dram[0].0 - 1.5).abs() < 1e-12, "{counted:?} {dram:?}");
        assert_eq!(counted[0].1, dram[0].1, "the same GFLOP/s");
        assert!(d.note.as_deref().is_some_and(|n| n.contains("caches flushed")));
        assert!(plot_dram(&r, &BTreeMap::new(), "").is_none());
        let png = write_dram(dir.path(), &fixture_roles(), &measured, "caches flushed").unwrap().unwrap();
        assert!(png.ends_with(DRAM_PNG) && png.exists());
    }
}
