//! `counters.csv`: one row per profiled point, joined to the experiment's row by `experiment` and `key`, with the
//! model's figure beside each measured one (theoretical beside achieved occupancy, counted beside DRAM bytes,
//! counted FLOP beside the FP instruction counts), then the shared-memory and FP64-pipe figures (NVIDIA). Written
//! whole by each counter pass: the rows of experiments the pass did not profile are kept, so profiling matmul and
//! then occupancy into one folder keeps both.

use std::collections::BTreeMap;
use std::path::Path;

use super::Error;

/// The file name, beside the experiments' CSVs.
pub const CSV: &str = "counters.csv";

/// What became of a point in the counter pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Profiled: its kernels' counters are in the row.
    Ok,
    /// Profiled, but it launches no kernel (a driver copy; a host step alone): nothing to count.
    NoKernel,
    /// Not in the profile: the child did not profile it (`message` says why).
    Missing,
    /// In the profile, but its counters could not be read or joined (`message` says why).
    Error,
}

impl Status {
    /// The CSV value.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::NoKernel => "no_kernel",
            Status::Missing => "missing",
            Status::Error => "error",
        }
    }
}

/// One row of `counters.csv`. Numbers are empty where the profiler or the metric set gives none.
#[derive(Debug, Clone, PartialEq)]
pub struct CounterRow {
    /// The experiment, as in its CSV's `experiment` column.
    pub experiment: String,
    /// Platform (`amd`, `nvidia`).
    pub platform: String,
    /// Device name.
    pub device: String,
    /// Architecture.
    pub arch: String,
    /// Items per wave.
    pub wave_size: u32,
    /// The point's key, as in the experiment's CSV.
    pub key: String,
    /// What became of it.
    pub status: Status,
    /// The profiler and its version.
    pub profiler: String,
    /// The caches at the profiled launch: `flushed` (ncu) or `warm` (rocprofv3).
    pub cache: String,
    /// Kernel launches of the point's profiled launch.
    pub kernels: Option<usize>,
    /// The longest of them.
    pub main_kernel: String,
    /// Its time, µs.
    pub main_kernel_us: Option<f64>,
    /// Its achieved occupancy, % of the CU's/SM's wave slots.
    pub occupancy_achieved_pct: Option<f64>,
    /// The theoretical occupancy beside it, %: the experiment's own figure where its row has one, else the suite's
    /// calculator over the main kernel's resources as the profiler reported them.
    pub occupancy_theoretical_pct: Option<f64>,
    /// Where that figure is from: `row` or `calculator` (empty with none).
    pub theoretical_from: String,
    /// The profiler's own theoretical occupancy, % (ncu only).
    pub occupancy_profiler_theoretical_pct: Option<f64>,
    /// DRAM bytes read, summed over the point's kernels.
    pub dram_read_bytes: Option<f64>,
    /// DRAM bytes written, likewise.
    pub dram_write_bytes: Option<f64>,
    /// The bytes the experiment counts for one launch (its row's `byte_count`).
    pub byte_count: Option<f64>,
    /// (read + written) / `byte_count`.
    pub dram_over_counted: Option<f64>,
    /// The main kernel's L2 hit rate, %.
    pub l2_hit_pct: Option<f64>,
    /// FP32 vector instructions per lane, summed.
    pub fp32_inst: Option<f64>,
    /// FP64 vector instructions per lane, summed.
    pub fp64_inst: Option<f64>,
    /// FP32 vector FLOP, summed.
    pub fp32_vector_flop: Option<f64>,
    /// FP64 vector FLOP, summed.
    pub fp64_vector_flop: Option<f64>,
    /// FP32 matrix FLOP, summed (AMD).
    pub fp32_matrix_flop: Option<f64>,
    /// FP64 matrix FLOP, summed (AMD).
    pub fp64_matrix_flop: Option<f64>,
    /// FP64 matrix (DMMA) warp instructions, summed (NVIDIA).
    pub fp64_matrix_inst: Option<f64>,
    /// The FLOP the experiment counts for one launch (its row's `flop_count`).
    pub flop_count: Option<f64>,
    /// Shared-memory (LDS) wavefronts, loads and stores, summed (NVIDIA).
    pub lds_wavefronts: Option<f64>,
    /// The main kernel's shared-memory wavefronts over the L1 data pipe's peak in its time, % (NVIDIA).
    pub lds_busy_pct: Option<f64>,
    /// Shared-memory wavefronts that bank conflicts added, summed (NVIDIA).
    pub lds_bank_conflict_wavefronts: Option<f64>,
    /// The main kernel's FP64 pipe busy over the SM's active cycles, % (NVIDIA).
    pub fp64_pipe_pct: Option<f64>,
    /// Why a point has no counters, or what to heed in them.
    pub message: String,
}

/// The columns of `counters.csv`, in order.
pub const HEADER: &[&str] = &[
    "experiment",
    "platform",
    "device",
    "arch",
    "wave_size",
    "key",
    "status",
    "profiler",
    "cache",
    "kernels",
    "main_kernel",
    "main_kernel_us",
    "occupancy_achieved_pct",
    "occupancy_theoretical_pct",
    "theoretical_from",
    "occupancy_profiler_theoretical_pct",
    "dram_read_bytes",
    "dram_write_bytes",
    "byte_count",
    "dram_over_counted",
    "l2_hit_pct",
    "fp32_inst",
    "fp64_inst",
    "fp32_vector_flop",
    "fp64_vector_flop",
    "fp32_matrix_flop",
    "fp64_matrix_flop",
    "fp64_matrix_inst",
    "flop_count",
    "lds_wavefronts",
    "lds_busy_pct",
    "lds_bank_conflict_wavefronts",
    "fp64_pipe_pct",
    "message",
];

/// `v` with `decimals` places, or empty.
fn fixed(v: Option<f64>, decimals: usize) -> String {
    v.map(|v| format!("{v:.decimals$}")).unwrap_or_default()
}

impl CounterRow {
    /// The row's fields, in [`HEADER`] order.
    pub fn fields(&self) -> Vec<String> {
        let count = |v: Option<f64>| fixed(v, 0);
        vec![
            self.experiment.clone(),
            self.platform.clone(),
            self.device.clone(),
            self.arch.clone(),
            self.wave_size.to_string(),
            self.key.clone(),
            self.status.as_str().to_string(),
            self.profiler.clone(),
            self.cache.clone(),
            self.kernels.map(|k| k.to_string()).unwrap_or_default(),
            self.main_kernel.clone(),
            fixed(self.main_kernel_us, 3),
            fixed(self.occupancy_achieved_pct, 2),
            fixed(self.occupancy_theoretical_pct, 2),
            self.theoretical_from.clone(),
            fixed(self.occupancy_profiler_theoretical_pct, 2),
            count(self.dram_read_bytes),
            count(self.dram_write_bytes),
            count(self.byte_count),
            fixed(self.dram_over_counted, 4),
            fixed(self.l2_hit_pct, 2),
            count(self.fp32_inst),
            count(self.fp64_inst),
            count(self.fp32_vector_flop),
            count(self.fp64_vector_flop),
            count(self.fp32_matrix_flop),
            count(self.fp64_matrix_flop),
            count(self.fp64_matrix_inst),
            count(self.flop_count),
            count(self.lds_wavefronts),
            fixed(self.lds_busy_pct, 2),
            count(self.lds_bank_conflict_wavefronts),
            fixed(self.fp64_pipe_pct, 2),
            self.message.clone(),
        ]
    }
}

/// Writes `rows` as `<dir>/counters.csv`, keeping the rows already there of every experiment `rows` has none of;
/// written to a temporary file and renamed, so a reader never sees half a table. With no row at all nothing is
/// written: a header alone would read as a table of no experiment to whoever lists the folder's CSVs.
pub fn write(dir: &Path, rows: &[CounterRow]) -> Result<(), Error> {
    let path = dir.join(CSV);
    let replaced: std::collections::BTreeSet<&str> = rows.iter().map(|r| r.experiment.as_str()).collect();
    let kept: Vec<BTreeMap<String, String>> = read(dir)?
        .unwrap_or_default()
        .into_iter()
        .filter(|r| r.get("experiment").is_some_and(|e| !replaced.contains(e.as_str())))
        .collect();
    if kept.is_empty() && rows.is_empty() {
        return Ok(());
    }
    let csv_error = |source: ::csv::Error| Error::Report(crate::report::Error::Csv { path: path.clone(), source });
    let mut out = ::csv::Writer::from_writer(Vec::new());
    out.write_record(HEADER).map_err(csv_error)?;
    for row in &kept {
        out.write_record(HEADER.iter().map(|c| row.get(*c).map(String::as_str).unwrap_or(""))).map_err(csv_error)?;
    }
    for row in rows {
        out.write_record(row.fields()).map_err(csv_error)?;
    }
    let bytes = out.into_inner().map_err(|e| Error::Io {
        action: "cannot write",
        path: path.clone(),
        source: std::io::Error::other(e.to_string()),
    })?;
    // A fresh temporary name of its own beside it, renamed over it: never a fixed name another user could plant a
    // link under (crate::safe_fs).
    crate::safe_fs::write_whole(&path, &bytes).map_err(|source| Error::Io { action: "cannot write", path, source })
}

/// The rows of `<dir>/counters.csv` (column → value), or `None` when the folder has none.
pub fn read(dir: &Path) -> Result<Option<Vec<BTreeMap<String, String>>>, Error> {
    let path = dir.join(CSV);
    if !path.exists() {
        return Ok(None);
    }
    Ok(Some(crate::report::csv::read_rows(&path)?))
}

/// The rows of `<dir>/counters.csv` by (experiment, key), for readers that join them to an experiment's rows
/// (empty when there is no file or it cannot be read: a plot without counters is still a plot).
pub fn by_point(dir: &Path) -> BTreeMap<(String, String), BTreeMap<String, String>> {
    read(dir)
        .ok()
        .flatten()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|r| Some(((r.get("experiment")?.clone(), r.get("key")?.clone()), r)))
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::counters::metrics::COLUMNS;

    pub(crate) fn row(experiment: &str, key: &str) -> CounterRow {
        CounterRow {
            experiment: experiment.into(),
            platform: "nvidia".into(),
            device: "Test GPU, with a comma".into(),
            arch: "sm_90".into(),
            wave_size: 32,
            key: key.into(),
            status: Status::Ok,
            profiler: "Nsight Compute (ncu) Version 2025.3.1.0".into(),
            cache: "flushed".into(),
            kernels: Some(1),
            main_kernel: "occupancy_add".into(),
            main_kernel_us: Some(71.232),
            occupancy_achieved_pct: Some(87.21),
            occupancy_theoretical_pct: Some(100.0),
            theoretical_from: "row".into(),
            occupancy_profiler_theoretical_pct: Some(100.0),
            dram_read_bytes: Some(134_217_728.0),
            dram_write_bytes: Some(67_108_864.0),
            byte_count: Some(201_326_592.0),
            dram_over_counted: Some(1.0),
            l2_hit_pct: Some(0.52),
            fp32_inst: None,
            fp64_inst: None,
            fp32_vector_flop: None,
            fp64_vector_flop: None,
            fp32_matrix_flop: None,
            fp64_matrix_flop: None,
            fp64_matrix_inst: None,
            flop_count: Some(16_777_216.0),
            lds_wavefronts: None,
            lds_busy_pct: None,
            lds_bank_conflict_wavefronts: None,
            fp64_pipe_pct: None,
            message: String::new(),
        }
    }

    #[test]
    fn the_header_holds_every_measured_column_once() {
        // Every measured column of the metric table is a column of the CSV.
        for column in COLUMNS {
            assert!(HEADER.contains(&column.name), "{}", column.name);
        }
        let unique: std::collections::BTreeSet<&&str> = HEADER.iter().collect();
        assert_eq!(unique.len(), HEADER.len());
        assert_eq!(row("e", "k").fields().len(), HEADER.len());
    }

    #[test]
    fn shared_memory_and_pipe_figures_are_formatted_like_their_peers() {
        let mut r = row("matmul", "fp64_vector/m=4096");
        r.lds_wavefronts = Some(1_572_864.0);
        r.lds_busy_pct = Some(41.256);
        r.lds_bank_conflict_wavefronts = Some(0.0);
        r.fp64_pipe_pct = Some(77.5);
        let at = |name: &str| HEADER.iter().position(|c| *c == name).unwrap();
        let fields = r.fields();
        assert_eq!(fields[at("lds_wavefronts")], "1572864");
        assert_eq!(fields[at("lds_busy_pct")], "41.26");
        assert_eq!(fields[at("lds_bank_conflict_wavefronts")], "0", "no conflict is a zero, not an empty field");
        assert_eq!(fields[at("fp64_pipe_pct")], "77.50");
        // After the columns that were there before them; `message` stays last.
        assert!(at("flop_count") < at("lds_wavefronts") && at("fp64_pipe_pct") + 1 == at("message"));
        assert_eq!(row("e", "k").fields()[at("lds_busy_pct")], "", "not profiled: empty");
    }

    #[test]
    fn rows_kept_from_a_file_without_the_shared_memory_columns_leave_them_empty() {
        let dir = tempfile::tempdir().unwrap();
        let old_header = HEADER.iter().filter(|c| !c.starts_with("lds_") && **c != "fp64_pipe_pct");
        let old_header: Vec<&str> = old_header.copied().collect();
        let old_row: Vec<String> = old_header
            .iter()
            .map(|c| match *c {
                "experiment" => "occupancy".to_string(),
                "key" => "group_size/g=64,n=1".to_string(),
                "status" => "ok".to_string(),
                _ => String::new(),
            })
            .collect();
        let mut old = ::csv::Writer::from_path(dir.path().join(CSV)).unwrap();
        old.write_record(&old_header).unwrap();
        old.write_record(&old_row).unwrap();
        old.flush().unwrap();
        let mut matmul = row("matmul", "fp64_vector/m=4096");
        matmul.fp64_pipe_pct = Some(12.0);
        write(dir.path(), &[matmul]).unwrap();
        let rows = read(dir.path()).unwrap().unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].keys().count(), HEADER.len(), "the kept row is written with every column");
        assert_eq!((rows[0]["key"].as_str(), rows[0]["fp64_pipe_pct"].as_str()), ("group_size/g=64,n=1", ""));
        assert_eq!(rows[1]["fp64_pipe_pct"], "12.00");
    }

    #[test]
    fn a_pass_replaces_its_experiments_rows_and_keeps_the_others() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()).unwrap(), None);
        write(dir.path(), &[]).unwrap();
        assert_eq!(read(dir.path()).unwrap(), None, "no rows, no file");
        write(dir.path(), &[row("matmul", "naive/m=64"), row("occupancy", "group_size/g=64,n=1")]).unwrap();
        // A second pass over occupancy alone.
        let mut again = row("occupancy", "group_size/g=128,n=1");
        again.status = Status::Missing;
        again.message = "the child could not prepare it: out of memory".into();
        write(dir.path(), &[again]).unwrap();
        let rows = read(dir.path()).unwrap().unwrap();
        let keys: Vec<(&str, &str)> = rows.iter().map(|r| (r["experiment"].as_str(), r["key"].as_str())).collect();
        assert_eq!(keys, [("matmul", "naive/m=64"), ("occupancy", "group_size/g=128,n=1")]);
        assert_eq!(rows[0]["device"], "Test GPU, with a comma");
        assert_eq!(rows[0]["dram_read_bytes"], "134217728");
        assert_eq!(rows[0]["occupancy_achieved_pct"], "87.21");
        assert_eq!(rows[0]["fp32_inst"], "");
        assert_eq!(rows[1]["status"], "missing");
        let by = by_point(dir.path());
        assert_eq!(by[&("matmul".to_string(), "naive/m=64".to_string())]["main_kernel"], "occupancy_add");
        assert!(!dir.path().join(".counters.csv.tmp").exists());
    }
}
