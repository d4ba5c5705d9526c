//! Tidy CSV: one row per measured point, written and flushed as each point finishes.
//!
//! Every file starts with the same context columns (so CSVs from different machines concatenate), then the
//! experiment's own parameter columns, then the measurement columns. Units are in the column names.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::lock::{lock_path_for, Wait, WriterLock};
use super::{Error, Result};

/// Columns every row starts with.
pub const CONTEXT_COLUMNS: [&str; 5] = ["experiment", "platform", "device", "arch", "wave_size"];

/// Columns every row ends with; `{metric}` is replaced by the experiment's rate column (`gbps`, `gflops`). The
/// clock and power columns (`sm_clock_mhz` to `telemetry_samples`) are the GPU's readings during the point's timed
/// repetitions ([`TELEMETRY_COLUMNS`]).
pub const MEASUREMENT_COLUMNS: [&str; 23] = [
    "reps",
    "launches_per_rep",
    "timing",
    "l2_resident",
    "flop_count",
    "byte_count",
    "time_ms_median",
    "time_ms_min",
    "time_ms_max",
    "{metric}",
    "max_rel_err",
    "tolerance",
    "sm_clock_mhz",
    "mem_clock_mhz",
    "power_w",
    "temperature_c",
    "throttled",
    "throttle_reasons",
    "below_steady_clock",
    "telemetry_samples",
    "status",
    "message",
    "key",
];

/// The measurement columns that hold what the GPU's management library (NVML, AMD SMI) read while the point's timed
/// repetitions ran, empty where it was not read: median SM clock (MHz), median memory clock (MHz), median power (W),
/// highest temperature (°C), whether a reading reported a power, thermal or hardware limit (`true`/`false`), the
/// reasons reported (`power_cap+thermal`, `none`), whether the median SM clock was more than 5% under the device's
/// maximum, and the number of readings.
pub const TELEMETRY_COLUMNS: [&str; 8] = [
    "sm_clock_mhz",
    "mem_clock_mhz",
    "power_w",
    "temperature_c",
    "throttled",
    "throttle_reasons",
    "below_steady_clock",
    "telemetry_samples",
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

    /// The status written as `name` in a CSV, if it is one.
    pub fn parse(name: &str) -> Option<Status> {
        [Status::Ok, Status::Fail, Status::Error, Status::Invalid].into_iter().find(|s| s.as_str() == name)
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
    /// FLOP one launch does, as the experiment counts them (matmul 2·M·N·K); absent where the count is only a bound
    /// or the point did not run.
    pub flop_count: Option<f64>,
    /// Bytes one launch moves through device memory at the least (each input read once, each output written once);
    /// absent like `flop_count`. The roofline places a row at `flop_count / byte_count`.
    pub byte_count: Option<f64>,
    /// Median, min and max time in ms (absent when not timed).
    pub time_ms: Option<(f64, f64, f64)>,
    /// The rate at the median time (GB/s or GFLOP/s).
    pub rate: Option<f64>,
    /// Largest relative error against the reference.
    pub max_rel_err: Option<f64>,
    /// Relative error allowed.
    pub tolerance: Option<f64>,
    /// What the GPU's clocks, power and temperature did during the timed repetitions ([`TELEMETRY_COLUMNS`]);
    /// absent when not timed or not read.
    pub telemetry: Option<crate::device::telemetry::Summary>,
    /// What became of the point.
    pub status: Status,
    /// Why a point failed or errored, or a note.
    pub message: String,
    /// The point's stable key, for `--resume` and `--shard`.
    pub key: String,
}

impl Row {
    /// A row with no figures: a point that was not measured (`invalid`, or not yet run), with `status` and why in
    /// `message`. The runner starts every row from it and fills in what the point gives; the one way to write a row
    /// that measured nothing.
    pub fn unmeasured(key: impl Into<String>, params: Vec<String>, status: Status, message: impl Into<String>) -> Row {
        Row {
            params,
            reps: 0,
            launches_per_rep: 0,
            timing: String::new(),
            l2_resident: None,
            flop_count: None,
            byte_count: None,
            time_ms: None,
            rate: None,
            max_rel_err: None,
            tolerance: None,
            telemetry: None,
            status,
            message: message.into(),
            key: key.into(),
        }
    }
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
    move |source| super::io_error(action, path, source)
}

/// One CSV record of `fields` for the file at `path`, as bytes, fields quoted where they need it.
/// A line break inside a field (a compiler's message) becomes a space: every record is one line, so a quote that
/// never closes is told from a cut last row by the line breaks after it ([`parse_table`]).
fn record_bytes<I: AsRef<[u8]>>(path: &Path, fields: impl IntoIterator<Item = I>) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    {
        let mut writer = ::csv::WriterBuilder::new().has_headers(false).from_writer(&mut bytes);
        let one_line = fields
            .into_iter()
            .map(|f| f.as_ref().iter().map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b }).collect::<Vec<u8>>());
        writer.write_record(one_line).map_err(|source| Error::Csv { path: path.to_path_buf(), source })?;
        writer.flush().map_err(io("cannot write", path))?;
    }
    Ok(bytes)
}

/// Appends `row` to a side table that several processes of one run append to at once (the shards of a run:
/// `phases.csv`, fusion's compile costs): under the file's lock, the header (when the file is empty) and the row are
/// one write, so exactly one header leads the file and no two rows interleave.
pub fn append_shared_row(path: &Path, header: &[String], row: &[String]) -> Result<()> {
    let mut file = crate::safe_fs::open_append(path).map_err(io("cannot open", path))?;
    file.lock().map_err(io("cannot lock", path))?;
    let mut bytes = Vec::new();
    if file.metadata().map_err(io("cannot read", path))?.len() == 0 {
        bytes = record_bytes(path, header)?;
    }
    bytes.extend(record_bytes(path, row)?);
    write_whole_record(&mut file, path, &bytes)
}

/// Appends `bytes` (whole records) to `file` (opened for appending, its writer alone under a lock) with one `write`,
/// or, when they cannot all be written (a full disk), cuts the file back to where it ended, so it ends at its last
/// whole row, and returns the OS error with the file system named.
fn write_whole_record(file: &mut File, path: &Path, bytes: &[u8]) -> Result<()> {
    let before = file.metadata().map_err(io("cannot read", path))?.len();
    match file.write_all(bytes) {
        Ok(()) => Ok(()),
        Err(source) => {
            // A failed cut leaves a cut row, which every reader and --resume already drop.
            let _ = file.set_len(before);
            Err(Error::RowWrite { path: path.to_path_buf(), note: crate::safe_fs::disk_note(path, &source), source })
        }
    }
}

/// An experiment's CSV, open for appending rows, with its lock held: one writer per file.
pub struct CsvLog {
    path: PathBuf,
    context: Context,
    width: usize,
    file: File,
    done: HashMap<String, Status>,
    _lock: WriterLock,
}

impl CsvLog {
    /// Creates `path` with its header, or with `resume` reopens it after checking the header and collects the keys
    /// of the rows already there, whatever their status, so the caller skips them: a resumed run writes each key
    /// once, as an uninterrupted one does. A row cut short by a killed process (at any byte, inside a quoted field
    /// too) is removed from the file, and its point runs again.
    ///
    /// The file's lock (`.<name>.lock` beside it, [`super::lock`]) is taken first and held until the log is
    /// dropped: a second writer is refused, naming the first, before it reads or changes anything.
    pub fn open(path: &Path, context: Context, header: &[String], resume: bool) -> Result<CsvLog> {
        let lock = WriterLock::exclusive(&lock_path_for(path), path, "a writer of this CSV", Wait::No)?;
        let exists = std::fs::symlink_metadata(path).is_ok();
        if exists && !resume {
            return Err(Error::Exists { path: path.to_path_buf() });
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io("cannot create", dir))?;
        }
        // O_APPEND: every write lands at the end of the file as it is then, whoever else wrote since. Never through
        // a link planted under the name, and only a file of this user's (crate::safe_fs).
        let file = crate::safe_fs::open_append(path).map_err(io("cannot open", path))?;
        let mut done = HashMap::new();
        let mut write_header = true;
        let mut keep = 0;
        if exists {
            let mut bytes = Vec::new();
            (&file).read_to_end(&mut bytes).map_err(io("cannot read", path))?;
            // Only whole records count: a cut last row is dropped; a row that does not parse is an error.
            let table = parse_table(path, &bytes)?;
            keep = table.complete_bytes;
            if !table.header.is_empty() && table.header != header {
                return Err(Error::HeaderMismatch {
                    path: path.into(),
                    found: table.header.join(","),
                    expected: header.join(","),
                });
            } else if !table.header.is_empty() {
                write_header = false;
                let status = header.iter().position(|c| c == "status").expect("the header has a status column");
                let key = header.iter().position(|c| c == "key").expect("the header has a key column");
                for record in &table.rows {
                    if let (Some(k), Some(s)) = (record.get(key), record.get(status).and_then(Status::parse)) {
                        done.insert(k.to_string(), s);
                    }
                }
            }
        }
        // Drop the cut row (or everything, when even the header was cut): under the lock, nobody else writes.
        file.set_len(keep as u64).map_err(io("cannot truncate", path))?;
        let mut log = CsvLog { path: path.to_path_buf(), context, width: header.len(), file, done, _lock: lock };
        if write_header {
            log.write_record(header)?;
        }
        Ok(log)
    }

    /// Writes one record with one `write` call, so a reader (or a writer that ignored the lock) never sees part of
    /// one record followed by another's bytes.
    fn write_record<I: AsRef<[u8]>>(&mut self, fields: impl IntoIterator<Item = I>) -> Result<()> {
        let bytes = record_bytes(&self.path, fields)?;
        write_whole_record(&mut self.file, &self.path, &bytes)
    }

    /// Whether a point with this key is already in the file (any status).
    pub fn is_done(&self, key: &str) -> bool {
        self.done.contains_key(key)
    }

    /// The status recorded for this key, if the file holds it.
    pub fn recorded(&self, key: &str) -> Option<Status> {
        self.done.get(key).copied()
    }

    /// Number of points in the file.
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
            opt(row.flop_count),
            opt(row.byte_count),
            opt(median),
            opt(min),
            opt(max),
            opt(row.rate),
            opt(row.max_rel_err),
            opt(row.tolerance),
        ]);
        fields.extend(telemetry_fields(row.telemetry.as_ref()));
        fields.extend([row.status.as_str().to_string(), row.message.clone(), row.key.clone()]);
        assert_eq!(fields.len(), self.width, "a row has one value per column (experiment bug)");
        self.write_record(&fields)?;
        self.done.insert(row.key.clone(), row.status);
        Ok(())
    }
}

/// The cells of [`TELEMETRY_COLUMNS`] for a point's summary, all empty without one. A quantity the device did not
/// report stays empty rather than reading as 0.
pub fn telemetry_fields(summary: Option<&crate::device::telemetry::Summary>) -> [String; TELEMETRY_COLUMNS.len()] {
    let Some(s) = summary else { return Default::default() };
    let flag = |b: Option<bool>| b.map(|b| b.to_string()).unwrap_or_default();
    [
        opt(s.sm_clock_mhz_median),
        opt(s.mem_clock_mhz_median),
        // W to 0.1: NVML reports mW, AMD SMI whole W; more digits would be noise of the averaging window.
        opt(s.power_w_median.map(|w| (w * 10.0).round() / 10.0)),
        opt(s.temperature_c_max),
        flag(s.throttled),
        s.reasons.map(|r| r.to_string()).unwrap_or_default(),
        flag(s.below_steady_clock),
        s.samples.to_string(),
    ]
}

/// The length of the longest prefix of `bytes` that ends with a whole CSV record: up to and including the last
/// newline outside quotes. A quote inside a field is written doubled (`""`), which toggles twice, so counting quotes
/// tells whether a byte is inside a quoted field.
pub fn complete_len(bytes: &[u8]) -> usize {
    let mut quoted = false;
    let mut end = 0;
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'"' => quoted = !quoted,
            b'\n' if !quoted => end = i + 1,
            _ => {}
        }
    }
    end
}

/// A CSV's header and whole rows, read strictly ([`parse_table`]).
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// The header; empty for an empty file or a header cut short.
    pub header: Vec<String>,
    /// The whole rows, each of the header's width.
    pub rows: Vec<::csv::StringRecord>,
    /// Bytes up to the end of the last whole row: what is left of the file once a cut last row is dropped.
    pub complete_bytes: usize,
}

/// Line (1-based) and column (1-based, in bytes) of byte `at` of `bytes`.
fn line_and_column(bytes: &[u8], at: usize) -> (u64, usize) {
    let before = &bytes[..at.min(bytes.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
    let column = at - before.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1) + 1;
    (line, column)
}

/// Reads the bytes of the CSV at `path` (named in errors) as [`CsvLog`] writes it, without guessing: the header, then
/// every row, each of the header's width and (in an experiment's CSV) with a status the suite writes. Only a last row cut by a killed writer (the bytes after the last line break outside quotes, on one
/// line, as every record is) is left out; a row of another width, a status that is none, or a quote that opens and
/// never closes with rows after it is an error naming the file, the line and the column.
pub fn parse_table(path: &Path, bytes: &[u8]) -> Result<Table> {
    let keep = complete_len(bytes);
    if bytes[keep..].contains(&b'\n') {
        // The bytes after the last whole record span lines: a quote opened and never closed, hiding every later row.
        // Each record is one line ([`record_bytes`]): the culprit is the first line after the last whole record
        // whose quotes do not pair up, at its last opening quote.
        let mut opened = keep;
        let mut start = keep;
        for line in bytes[keep..].split(|&b| b == b'\n') {
            if line.iter().filter(|&&b| b == b'"').count() % 2 == 1 {
                let mut quoted = false;
                for (i, &b) in line.iter().enumerate() {
                    if b == b'"' {
                        quoted = !quoted;
                        if quoted {
                            opened = start + i;
                        }
                    }
                }
                break;
            }
            start += line.len() + 1;
        }
        let (line, column) = line_and_column(bytes, opened);
        return Err(Error::BadRow {
            path: path.into(),
            line,
            column,
            what: "a quoted field opens here and never closes, so every row after it would be hidden".into(),
        });
    }
    let bad = |source: ::csv::Error| match source.position() {
        Some(pos) => Error::BadRow { path: path.into(), line: pos.line(), column: 1, what: source.to_string() },
        None => Error::Csv { path: path.into(), source },
    };
    let mut reader = ::csv::ReaderBuilder::new().flexible(true).from_reader(&bytes[..keep]);
    let header: Vec<String> = reader.headers().map_err(bad)?.iter().map(str::to_string).collect();
    if keep == 0 || header.iter().all(String::is_empty) {
        // An empty file, or a header cut short (killed before it was written whole).
        return Ok(Table::default());
    }
    // An experiment's CSV (the context columns, then its own, then the measurement columns) has a status per row the
    // suite writes; side tables (counters.csv) have their own.
    let experiment_csv = header.len() >= CONTEXT_COLUMNS.len() + MEASUREMENT_COLUMNS.len()
        && header[..CONTEXT_COLUMNS.len()] == CONTEXT_COLUMNS
        && header[header.len() - 3..] == MEASUREMENT_COLUMNS[MEASUREMENT_COLUMNS.len() - 3..];
    let status = header.iter().position(|c| c == "status").filter(|_| experiment_csv);
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(bad)?;
        let line = record.position().map_or(0, |p| p.line());
        if record.len() != header.len() {
            return Err(Error::BadRow {
                path: path.into(),
                line,
                column: record.len().min(header.len()) + 1,
                what: format!("the row has {} fields, the header {}", record.len(), header.len()),
            });
        }
        if let Some(s) = status.filter(|&s| Status::parse(&record[s]).is_none()) {
            return Err(Error::BadRow {
                path: path.into(),
                line,
                column: s + 1,
                what: format!("status `{}` is none of ok, fail, error, invalid", &record[s]),
            });
        }
        rows.push(record);
    }
    Ok(Table { header, rows, complete_bytes: keep })
}

/// Reads the CSV at `path` strictly ([`parse_table`]).
pub fn read_table(path: &Path) -> Result<Table> {
    let bytes = std::fs::read(path).map_err(io("cannot read", path))?;
    parse_table(path, &bytes)
}

/// Reads a CSV written by [`CsvLog`] into rows of (column → value), for plots and merges: strictly
/// ([`parse_table`]): a cut last row is left out, any other row that does not parse is an error.
pub fn read_rows(path: &Path) -> Result<Vec<std::collections::BTreeMap<String, String>>> {
    let table = read_table(path)?;
    Ok(table.rows.iter().map(|r| table.header.iter().cloned().zip(r.iter().map(str::to_string)).collect()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Eight writers appending to one side table at once: one header leads it, and every row is whole.
    #[test]
    fn a_shared_side_table_gets_one_header_and_whole_rows_from_eight_writers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("side.csv");
        let header = vec!["writer".to_string(), "note".to_string()];
        std::thread::scope(|s| {
            for w in 0..8 {
                let (path, header) = (&path, &header);
                s.spawn(move || {
                    for r in 0..25 {
                        append_shared_row(path, header, &[w.to_string(), format!("row {r}, quoted")]).unwrap();
                    }
                });
            }
        });
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.matches("writer,note").count(), 1, "{text}");
        assert!(text.starts_with("writer,note\n"), "{text}");
        let rows = read_rows(&path).unwrap();
        assert_eq!(rows.len(), 8 * 25);
        assert!(rows.iter().all(|r| r["note"].starts_with("row ") && r["note"].ends_with(", quoted")), "{rows:?}");
    }

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
            flop_count: Some(2.0),
            byte_count: Some(12.0),
            time_ms: Some((1.5, 1.0, 2.0)),
            rate: Some(8.0),
            max_rel_err: Some(0.0),
            tolerance: Some(1e-6),
            telemetry: None,
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
            "reps,launches_per_rep,timing,l2_resident,flop_count,byte_count,time_ms_median,time_ms_min,time_ms_max,gbps,max_rel_err,tolerance,\
             sm_clock_mhz,mem_clock_mhz,power_w,temperature_c,throttled,throttle_reasons,below_steady_clock,telemetry_samples,\
             status,message,key"
        );
        // The rate column stays right before max_rel_err, where `suite compare` finds it.
        let rate = h.iter().position(|c| c == "gbps").unwrap();
        assert_eq!(h[rate + 1], "max_rel_err");
        assert!(TELEMETRY_COLUMNS.iter().all(|c| h.contains(&c.to_string())));
    }

    fn read(path: &Path) -> String {
        std::fs::read_to_string(path).unwrap()
    }

    const HEADER_LINE: &str = "experiment,platform,device,arch,wave_size,n,group_size,reps,launches_per_rep,timing,\
                               l2_resident,flop_count,byte_count,time_ms_median,time_ms_min,time_ms_max,gbps,max_rel_err,tolerance,\
                               sm_clock_mhz,mem_clock_mhz,power_w,temperature_c,throttled,throttle_reasons,below_steady_clock,\
                               telemetry_samples,status,message,key\n";

    #[test]
    fn rows_are_flushed_as_written_and_a_file_is_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/smoke.csv");
        let h = header(&["n", "group_size"], "gbps");
        let mut log = CsvLog::open(&path, context(), &h, false).unwrap();
        // A timed point with its clocks: an H100 held at its power cap, 11% under its 1980 MHz.
        let mut timed = row("a", Status::Ok);
        timed.telemetry = Some(crate::device::telemetry::Summary {
            samples: 4,
            sm_clock_mhz_median: Some(1755.0),
            mem_clock_mhz_median: Some(2619.0),
            power_w_median: Some(699.456),
            power_w_max: Some(702.0),
            temperature_c_max: Some(61.0),
            reasons: Some(crate::device::telemetry::Reasons::of(&[crate::device::telemetry::Reason::PowerCap])),
            throttled: Some(true),
            below_steady_clock: Some(true),
            reference_sm_clock_mhz: Some(1980),
        });
        log.append(&timed).unwrap();
        let mut failed = row("b", Status::Fail);
        failed.time_ms = None;
        failed.rate = None;
        failed.message = "3 of 1024 differ, first at 7: 2.5 vs 2".into();
        log.append(&failed).unwrap();
        // Each append is on disk already, before the log is dropped; fields with a comma are quoted.
        let expected = HEADER_LINE.to_string()
            + "smoke,nvidia,\"Test GPU, with a comma\",sm_90,32,1024,256,3,40,graph,true,2,12,1.5,1,2,8,0,0.000001,\
               1755,2619,699.5,61,true,power_cap,true,4,ok,,a\n"
            + "smoke,nvidia,\"Test GPU, with a comma\",sm_90,32,1024,256,3,40,graph,true,2,12,,,,,0,0.000001,\
               ,,,,,,,,fail,\"3 of 1024 differ, first at 7: 2.5 vs 2\",b\n";
        assert_eq!(read(&path), expected);
        drop(log);
        assert!(matches!(CsvLog::open(&path, context(), &h, false), Err(Error::Exists { .. })));
        assert_eq!(read(&path), expected);
        let rows = read_rows(&path).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0]["device"], "Test GPU, with a comma");
        assert_eq!(rows[0]["time_ms_median"], "1.5");
        assert_eq!((rows[0]["launches_per_rep"].as_str(), rows[0]["timing"].as_str()), ("40", "graph"));
        assert_eq!(rows[0]["l2_resident"], "true");
        assert_eq!(rows[1]["message"], "3 of 1024 differ, first at 7: 2.5 vs 2");
        assert_eq!(rows[1]["gbps"], "");
        assert_eq!((rows[0]["sm_clock_mhz"].as_str(), rows[0]["throttle_reasons"].as_str()), ("1755", "power_cap"));
        assert_eq!((rows[1]["sm_clock_mhz"].as_str(), rows[1]["throttled"].as_str()), ("", ""));
    }

    #[test]
    fn resume_skips_every_recorded_point_whatever_its_status_and_twice_adds_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("smoke.csv");
        let h = header(&["n", "group_size"], "gbps");
        let statuses = [("a", Status::Ok), ("b", Status::Fail), ("c", Status::Error), ("d", Status::Invalid)];
        // What the runner does: append every key the file does not hold yet.
        let run = |keys: &[(&str, Status)], resume: bool| {
            let mut log = CsvLog::open(&path, context(), &h, resume).unwrap();
            for (key, status) in keys {
                if !log.is_done(key) {
                    log.append(&row(key, *status)).unwrap();
                }
            }
            log
        };
        drop(run(&statuses[..3], false));
        let log = run(&statuses, true);
        for (key, status) in statuses {
            assert_eq!(log.recorded(key), Some(status), "{key}");
        }
        assert_eq!(log.recorded("e"), None);
        drop(log);
        let once = read(&path);
        for _ in 0..2 {
            let log = run(&statuses, true);
            assert_eq!(log.done_count(), 4);
            drop(log);
            assert_eq!(read(&path), once, "a resume of a complete file adds nothing");
        }
        let keys: Vec<String> = read_rows(&path).unwrap().into_iter().map(|r| r["key"].clone()).collect();
        assert_eq!(keys, ["a", "b", "c", "d"]);
        // A row cut inside its last field (here: a repeat of the first row, cut before its key) has every column
        // but is not a row: nothing reads it.
        let whole = read(&path);
        let first = whole.lines().nth(1).unwrap();
        std::fs::write(&path, format!("{whole}{}", &first[..first.len() - 1])).unwrap();
        let keys: Vec<String> = read_rows(&path).unwrap().into_iter().map(|r| r["key"].clone()).collect();
        assert_eq!(keys, ["a", "b", "c", "d"]);
    }

    #[test]
    fn a_second_writer_of_one_csv_is_refused_naming_the_first_and_rows_stay_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("smoke.csv");
        let h = header(&["n", "group_size"], "gbps");
        let mut first = CsvLog::open(&path, context(), &h, false).unwrap();
        first.append(&row("a", Status::Ok)).unwrap();
        // A second writer, as a resumed run beside a running job would open it.
        let err = CsvLog::open(&path, context(), &h, true).err().expect("a second writer is refused");
        let text = err.to_string();
        assert!(matches!(err, Error::Locked { .. }), "{text}");
        assert!(text.contains(&format!("{} is being written by", path.display())), "{text}");
        assert!(text.contains(&format!("pid {}", std::process::id())), "{text}");
        // Rows of different lengths, as real timings give: each whole, in order, nothing interleaved.
        let mut long = row("b", Status::Fail);
        long.message = "a long message, with commas, quoted: ".repeat(40);
        first.append(&long).unwrap();
        first.append(&row("c", Status::Ok)).unwrap();
        drop(first);
        let rows = read_rows(&path).unwrap();
        assert_eq!(rows.iter().map(|r| r["key"].as_str()).collect::<Vec<_>>(), ["a", "b", "c"]);
        assert_eq!(rows[1]["message"], long.message);
        // Once the first has let go, the second may resume.
        let log = CsvLog::open(&path, context(), &h, true).unwrap();
        assert_eq!(log.done_count(), 3);
    }

    #[test]
    fn resume_refuses_a_file_with_other_columns_and_keeps_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("smoke.csv");
        std::fs::write(&path, "a,b\n1,2\n3,").unwrap();
        let err = CsvLog::open(&path, context(), &header(&["n"], "gbps"), true).err().unwrap();
        assert!(err.to_string().contains("has columns [a,b], but this suite writes [experiment,"), "{err}");
        assert!(err.to_string().contains("move the old file away"), "{err}");
        // Not even the cut row is touched.
        assert_eq!(read(&path), "a,b\n1,2\n3,");
    }

    #[test]
    fn resume_after_a_cut_at_any_byte_of_the_last_row_gives_the_uninterrupted_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("smoke.csv");
        let h = header(&["n", "group_size"], "gbps");
        let mut last = row("b", Status::Fail);
        last.message = "max error 0.5, at element 7".into();
        let mut log = CsvLog::open(&path, context(), &h, false).unwrap();
        log.append(&row("a", Status::Ok)).unwrap();
        let before_last = read(&path).len();
        log.append(&last).unwrap();
        drop(log);
        let whole = std::fs::read(&path).unwrap();
        let last_row = std::str::from_utf8(&whole[before_last..]).unwrap();
        // The last row has quoted fields with commas (device and message) and no newline inside a field.
        assert!(last_row.contains(",\"max error 0.5, at element 7\",b\n"), "{last_row}");
        for cut in before_last..whole.len() {
            std::fs::write(&path, &whole[..cut]).unwrap();
            let mut log = CsvLog::open(&path, context(), &h, true).unwrap();
            assert!(log.is_done("a"), "cut at {cut}");
            assert!(!log.is_done("b"), "cut at {cut}: a cut row is not a measurement");
            assert_eq!(std::fs::read(&path).unwrap(), &whole[..before_last], "cut at {cut}: the cut row is removed");
            log.append(&last).unwrap();
            drop(log);
            assert_eq!(std::fs::read(&path).unwrap(), whole, "cut at {cut}: {:?}", &whole[before_last..cut]);
        }
        // Uncut, both points are done and nothing changes.
        let log = CsvLog::open(&path, context(), &h, true).unwrap();
        assert_eq!((log.recorded("a"), log.recorded("b")), (Some(Status::Ok), Some(Status::Fail)));
        assert_eq!(std::fs::read(&path).unwrap(), whole);
    }

    #[test]
    fn a_header_cut_short_starts_the_file_afresh() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("smoke.csv");
        let h = header(&["n", "group_size"], "gbps");
        for cut in [0, 1, 20, HEADER_LINE.len() - 1] {
            std::fs::write(&path, &HEADER_LINE[..cut]).unwrap();
            let log = CsvLog::open(&path, context(), &h, true).unwrap();
            assert_eq!(log.done_count(), 0);
            assert_eq!(read(&path), HEADER_LINE, "cut at {cut}");
        }
    }

    /// Issue 31, item 7: a row damaged in the middle of a CSV was dropped silently, and an unclosed quote hid every
    /// later row. Now every reader (and --resume) stops at it, naming the file, the line and the column; only a last
    /// row cut by a killed writer is left out.
    #[test]
    fn a_row_that_does_not_parse_is_an_error_naming_the_file_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("smoke.csv");
        let h = header(&["n", "group_size"], "gbps");
        let mut log = CsvLog::open(&path, context(), &h, false).unwrap();
        for key in ["a", "b", "c"] {
            log.append(&row(key, Status::Ok)).unwrap();
        }
        drop(log);
        let whole = read(&path);
        let lines: Vec<&str> = whole.lines().collect();
        let damaged = |replace: usize, with: &str| {
            let mut l = lines.clone();
            l[replace] = with;
            l.join("\n") + "\n"
        };
        let short = "smoke,nvidia,x,sm_90,32,99".to_string();
        let bad_status = lines[2].replace(",ok,,b", ",okay,,b");
        let unclosed = lines[2].replace(",ok,,b", ",ok,\"never closed,b");
        let cases = [
            (damaged(2, &short), 3, 7, "the row has 6 fields, the header 30"),
            (damaged(2, &bad_status), 3, 28, "status `okay` is none of ok, fail, error, invalid"),
            (damaged(2, &unclosed), 3, lines[2].len() - 1, "a quoted field opens here and never closes"),
        ];
        for (text, line, column, what) in cases {
            std::fs::write(&path, &text).unwrap();
            for err in [read_rows(&path).err().unwrap(), CsvLog::open(&path, context(), &h, true).err().unwrap()] {
                let message = err.to_string();
                let expected = format!("{}: line {line}, column {column}: {what}", path.display());
                assert!(message.starts_with(&expected), "{message}\nexpected: {expected}");
            }
            assert_eq!(read(&path), text, "a refused resume leaves the file as it was");
        }
        // A last row cut by a killed writer is not damage: left out, and resumed.
        std::fs::write(&path, format!("{whole}{}", &lines[1][..20])).unwrap();
        assert_eq!(read_rows(&path).unwrap().len(), 3);
        assert_eq!(CsvLog::open(&path, context(), &h, true).unwrap().done_count(), 3);
        assert_eq!(read(&path), whole);
    }

    #[test]
    fn complete_len_ends_at_the_last_newline_outside_quotes() {
        let cases: [(&str, usize); 7] = [
            ("", 0),
            ("a,b", 0),
            ("a,b\n", 4),
            ("a,b\nc,\"d\ne\"\n", 12),
            ("a,b\nc,\"d\ne", 4),
            ("a,b\nc,\"say \"\"hi\"\"\n", 4),
            ("a,b\nc,\"say \"\"hi\"\"\"\n", 19),
        ];
        for (text, len) in cases {
            assert_eq!(complete_len(text.as_bytes()), len, "{text:?}");
        }
        for s in [Status::Ok, Status::Fail, Status::Error, Status::Invalid] {
            assert_eq!(Status::parse(s.as_str()), Some(s));
        }
        assert_eq!(Status::parse("OK"), None);
    }
}
