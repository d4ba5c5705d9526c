//! Tidy CSV: one row per measured point, written and flushed as each point finishes.
//!
//! Every file starts with the same context columns (so CSVs from different machines concatenate), then the
//! experiment's own parameter columns, then the measurement columns. Units are in the column names.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{Error, Result};

/// Columns every row starts with.
pub const CONTEXT_COLUMNS: [&str; 5] = ["experiment", "platform", "device", "arch", "wave_size"];

/// Columns every row ends with; `{metric}` is replaced by the experiment's rate column (`gbps`, `gflops`).
pub const MEASUREMENT_COLUMNS: [&str; 13] = [
    "reps",
    "launches_per_rep",
    "timing",
    "l2_resident",
    "time_ms_median",
    "time_ms_min",
    "time_ms_max",
    "{metric}",
    "max_rel_err",
    "tolerance",
    "status",
    "message",
    "key",
];

/// What became of a sweep point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Verified and timed.
    Ok,
    /// Ran, but the result did not match the reference: no time is recorded.
    Fail,
    /// Could not run (out of memory, launch refused, ...): the message says why.
    Error,
    /// Not a valid point (e.g. the tile does not divide the size): the message says why.
    Invalid,
}

impl Status {
    /// Lower-case name as written in the CSV.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Fail => "fail",
            Status::Error => "error",
            Status::Invalid => "invalid",
        }
    }
}

/// The context columns' values, the same for every row of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Context {
    /// Experiment name, e.g. `matmul`.
    pub experiment: String,
    /// `amd` or `nvidia`.
    pub platform: String,
    /// Device name.
    pub device: String,
    /// Architecture, e.g. `gfx90a`.
    pub arch: String,
    /// Items per wave.
    pub wave_size: u32,
}

/// One row: parameter values in the experiment's column order, then the measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Values of the experiment's parameter columns, in order.
    pub params: Vec<String>,
    /// Timed repetitions (0 when not timed).
    pub reps: usize,
    /// Launches back to back in each repetition; a repetition's time is its batch's time divided by this (0 when
    /// not timed).
    pub launches_per_rep: u32,
    /// How the batches were enqueued, `stream` or `graph` (empty when not timed).
    pub timing: String,
    /// Whether the point's data fits in the device's L2, so back-to-back launches find it there (absent when the
    /// footprint or the L2 size is unknown).
    pub l2_resident: Option<bool>,
    /// Median, min and max time in ms (absent when not timed).
    pub time_ms: Option<(f64, f64, f64)>,
    /// The rate at the median time (GB/s or GFLOP/s).
    pub rate: Option<f64>,
    /// Largest relative error against the reference.
    pub max_rel_err: Option<f64>,
    /// Relative error allowed.
    pub tolerance: Option<f64>,
    /// What became of the point.
    pub status: Status,
    /// Why a point failed or errored, or a note.
    pub message: String,
    /// The point's stable key, for `--resume` and `--shard`.
    pub key: String,
}

/// The full header for an experiment with these parameter columns and rate column.
pub fn header(param_columns: &[&str], metric: &str) -> Vec<String> {
    CONTEXT_COLUMNS
        .iter()
        .map(|c| c.to_string())
        .chain(param_columns.iter().map(|c| c.to_string()))
        .chain(MEASUREMENT_COLUMNS.iter().map(|c| if *c == "{metric}" { metric.to_string() } else { c.to_string() }))
        .collect()
}

fn opt(x: Option<f64>) -> String {
    x.map(|v| format!("{v}")).unwrap_or_default()
}

fn io<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> Error + 'a {
    move |source| Error::Io { action, path: path.to_path_buf(), source }
}

/// An experiment's CSV, open for appending rows.
pub struct CsvLog {
    path: PathBuf,
    context: Context,
    width: usize,
    writer: ::csv::Writer<File>,
    done: HashSet<String>,
}

impl CsvLog {
    /// Creates `path` with its header, or with `resume` reopens it after checking the header and collects the keys
    /// of the rows already measured (status `ok`), so the caller can skip them. Failed or errored points are run
    /// again on resume.
    pub fn open(path: &Path, context: Context, header: &[String], resume: bool) -> Result<CsvLog> {
        let exists = path.exists();
        if exists && !resume {
            return Err(Error::Exists { path: path.to_path_buf() });
        }
        let mut done = HashSet::new();
        let mut write_header = true;
        if exists {
            let mut reader =
                ::csv::Reader::from_path(path).map_err(|source| Error::Csv { path: path.into(), source })?;
            let found: Vec<String> = reader
                .headers()
                .map_err(|source| Error::Csv { path: path.into(), source })?
                .iter()
                .map(str::to_string)
                .collect();
            if found.is_empty() {
                // An empty file (killed before the header was flushed) is started afresh.
            } else if found != header {
                return Err(Error::HeaderMismatch {
                    path: path.into(),
                    found: found.join(","),
                    expected: header.join(","),
                });
            } else {
                write_header = false;
                let status = header.iter().position(|c| c == "status").expect("the header has a status column");
                let key = header.iter().position(|c| c == "key").expect("the header has a key column");
                for record in reader.records() {
                    // A row cut short by a killed job is not a measurement: skip it, and its point runs again.
                    let Ok(record) = record else { continue };
                    if record.get(status) == Some("ok") {
                        if let Some(k) = record.get(key) {
                            done.insert(k.to_string());
                        }
                    }
                }
            }
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io("cannot create", dir))?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(exists && !write_header)
            .write(true)
            .truncate(!exists || write_header)
            .open(path)
            .map_err(io("cannot open", path))?;
        if exists && !write_header && !ends_with_newline(path)? {
            // A job killed mid-row left a partial line: end it, so the next row starts on its own line and the
            // partial one stays a short record that readers skip.
            (&file).write_all(b"\n").map_err(io("cannot write", path))?;
        }
        let mut writer = ::csv::WriterBuilder::new().has_headers(false).from_writer(file);
        if write_header {
            writer.write_record(header).map_err(|source| Error::Csv { path: path.into(), source })?;
            writer.flush().map_err(io("cannot write", path))?;
        }
        Ok(CsvLog { path: path.to_path_buf(), context, width: header.len(), writer, done })
    }

    /// Whether a point with this key was already measured (status `ok`) in a resumed file.
    pub fn is_done(&self, key: &str) -> bool {
        self.done.contains(key)
    }

    /// Number of measured points found in a resumed file.
    pub fn done_count(&self) -> usize {
        self.done.len()
    }

    /// Path of the file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one row and flushes it to disk, so a killed job keeps it.
    pub fn append(&mut self, row: &Row) -> Result<()> {
        let c = &self.context;
        let (median, min, max) = match row.time_ms {
            Some((a, b, c)) => (Some(a), Some(b), Some(c)),
            None => (None, None, None),
        };
        let mut fields: Vec<String> =
            vec![c.experiment.clone(), c.platform.clone(), c.device.clone(), c.arch.clone(), c.wave_size.to_string()];
        fields.extend(row.params.iter().cloned());
        fields.extend([
            row.reps.to_string(),
            row.launches_per_rep.to_string(),
            row.timing.clone(),
            row.l2_resident.map(|r| r.to_string()).unwrap_or_default(),
            opt(median),
            opt(min),
            opt(max),
            opt(row.rate),
            opt(row.max_rel_err),
            opt(row.tolerance),
            row.status.as_str().to_string(),
            row.message.clone(),
            row.key.clone(),
        ]);
        assert_eq!(fields.len(), self.width, "a row has one value per column (experiment bug)");
        let path = self.path.clone();
        self.writer.write_record(&fields).map_err(|source| Error::Csv { path: path.clone(), source })?;
        self.writer.flush().map_err(io("cannot write", &path))?;
        if row.status == Status::Ok {
            self.done.insert(row.key.clone());
        }
        Ok(())
    }
}

fn ends_with_newline(path: &Path) -> Result<bool> {
    let bytes = std::fs::read(path).map_err(io("cannot read", path))?;
    Ok(bytes.last().is_none_or(|&b| b == b'\n'))
}

/// Reads a CSV written by [`CsvLog`] into rows of (column → value), for plots and merges. Rows cut short by a
/// killed job are skipped.
pub fn read_rows(path: &Path) -> Result<Vec<std::collections::BTreeMap<String, String>>> {
    let mut reader = ::csv::ReaderBuilder::new()
        .flexible(true)
        .from_path(path)
        .map_err(|source| Error::Csv { path: path.into(), source })?;
    let header: Vec<String> = reader
        .headers()
        .map_err(|source| Error::Csv { path: path.into(), source })?
        .iter()
        .map(str::to_string)
        .collect();
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|source| Error::Csv { path: path.into(), source })?;
        if record.len() == header.len() {
            rows.push(header.iter().cloned().zip(record.iter().map(str::to_string)).collect());
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context() -> Context {
        Context {
            experiment: "smoke".into(),
            platform: "nvidia".into(),
            device: "Test GPU, with a comma".into(),
            arch: "sm_90".into(),
            wave_size: 32,
        }
    }

    fn row(key: &str, status: Status) -> Row {
        Row {
            params: vec!["1024".into(), "256".into()],
            reps: 3,
            launches_per_rep: 40,
            timing: "graph".into(),
            l2_resident: Some(true),
            time_ms: Some((1.5, 1.0, 2.0)),
            rate: Some(8.0),
            max_rel_err: Some(0.0),
            tolerance: Some(1e-6),
            status,
            message: String::new(),
            key: key.into(),
        }
    }

    #[test]
    fn header_puts_context_params_and_measurement_in_order() {
        let h = header(&["n", "group_size"], "gbps");
        assert_eq!(&h[..5], &CONTEXT_COLUMNS);
        assert_eq!(&h[5..7], &["n", "group_size"]);
        assert_eq!(
            h[7..].join(","),
            "reps,launches_per_rep,timing,l2_resident,time_ms_median,time_ms_min,time_ms_max,gbps,max_rel_err,tolerance,\
             status,message,key"
        );
    }

    #[test]
    fn rows_are_flushed_and_resume_skips_only_ok_points() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/smoke.csv");
        let h = header(&["n", "group_size"], "gbps");
        {
            let mut log = CsvLog::open(&path, context(), &h, false).unwrap();
            log.append(&row("a", Status::Ok)).unwrap();
            log.append(&row("b", Status::Fail)).unwrap();
            // No drop needed: each append is on disk already.
            let text = std::fs::read_to_string(&path).unwrap();
            assert_eq!(text.lines().count(), 3, "{text}");
            assert!(text.contains("\"Test GPU, with a comma\""), "{text}");
        }
        assert!(matches!(CsvLog::open(&path, context(), &h, false), Err(Error::Exists { .. })));
        let mut log = CsvLog::open(&path, context(), &h, true).unwrap();
        assert!(log.is_done("a"));
        assert!(!log.is_done("b"));
        log.append(&row("b", Status::Ok)).unwrap();
        let rows = read_rows(&path).unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[2]["key"], "b");
        assert_eq!(rows[2]["status"], "ok");
        assert_eq!(rows[0]["time_ms_median"], "1.5");
        assert_eq!((rows[0]["launches_per_rep"].as_str(), rows[0]["timing"].as_str()), ("40", "graph"));
        assert_eq!(rows[0]["l2_resident"], "true");
    }

    #[test]
    fn resume_refuses_a_file_with_other_columns_and_keeps_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("smoke.csv");
        std::fs::write(&path, "a,b\n1,2\n").unwrap();
        let err = CsvLog::open(&path, context(), &header(&["n"], "gbps"), true).err().unwrap();
        assert!(err.to_string().contains("move the old file away"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a,b\n1,2\n");
    }

    #[test]
    fn resume_ignores_a_row_cut_short() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("smoke.csv");
        let h = header(&["n", "group_size"], "gbps");
        let mut log = CsvLog::open(&path, context(), &h, false).unwrap();
        log.append(&row("a", Status::Ok)).unwrap();
        drop(log);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("smoke,nvidia,x,sm_90,32,99");
        std::fs::write(&path, text).unwrap();
        let mut log = CsvLog::open(&path, context(), &h, true).unwrap();
        assert_eq!(log.done_count(), 1);
        log.append(&row("b", Status::Ok)).unwrap();
        let keys: Vec<String> = read_rows(&path).unwrap().into_iter().map(|r| r["key"].clone()).collect();
        assert_eq!(keys, ["a", "b"]);
    }
}
