//! Results on disk: one folder per run with `run.json` and one tidy CSV per experiment.

pub mod compare;
pub mod csv;
pub mod fingerprint;
pub mod folder;
pub mod lock;
pub mod merge;
pub mod merge_record;
pub mod plot;
pub mod roofline;
pub mod run_json;
pub mod status;
pub mod summary;
pub mod test_runtime;
pub mod throttling;

use std::path::PathBuf;

/// Errors writing or reading results. Messages name the file and what to do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file or folder could not be read or written.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done, e.g. "cannot create".
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A write failed because the file system is full or over quota; the note names the file system.
    #[error("{action} {path}: {source}{note}")]
    DiskFull {
        /// What was being done, e.g. "cannot write".
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// Which file system, and what is free on it ([`crate::safe_fs::disk_note`]).
        note: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A row could not be appended whole (the disk is full, say): the file was cut back to its last whole row and
    /// the run stops, resumable.
    #[error(
        "cannot write a row to {path}: {source}{note}; the file ends at its last whole row, so the folder stays \
         resumable: make room, then run the same command again with --resume"
    )]
    RowWrite {
        /// The CSV.
        path: PathBuf,
        /// Which file system, where it is full ([`crate::safe_fs::disk_note`]).
        note: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A row of a CSV does not parse: the folder's files were damaged (or edited), and a reader would guess.
    #[error("{path}: line {line}, column {column}: {what}; the file was damaged or edited: restore it, or remove the line (then a resumed run measures its point again)")]
    BadRow {
        /// The CSV.
        path: PathBuf,
        /// The line (1-based) where the bad row starts.
        line: u64,
        /// The column (1-based) where it goes wrong.
        column: usize,
        /// What is wrong.
        what: String,
    },
    /// A CSV could not be parsed or written.
    #[error("CSV {path}: {source}")]
    Csv {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: ::csv::Error,
    },
    /// An existing CSV has another header than this version of the suite writes.
    #[error("{path} has columns [{found}], but this suite writes [{expected}]: move the old file away or choose another --out")]
    HeaderMismatch {
        /// The file.
        path: PathBuf,
        /// Header found.
        found: String,
        /// Header expected.
        expected: String,
    },
    /// The folder holds results of another device: its rows and this process's would read as one device's run.
    #[error(
        "refusing to mix devices in {path}: it holds results from {held}, {} {this}: choose another --out",
        if *.planned { "this run plans for" } else { "this is" }
    )]
    OtherDevice {
        /// The folder's run.json.
        path: PathBuf,
        /// The device its results come from: name and architecture, e.g. `NVIDIA H100 80GB HBM3 (sm_90)`.
        held: String,
        /// This process's device, the same way.
        this: String,
        /// Whether `this` is the device a run plans for (`--resume` of a recorded run, checked before the device
        /// opens) rather than the one it opened.
        planned: bool,
    },
    /// Results exist and `--resume` was not given.
    #[error("{path} already exists: pass --resume to skip the points it holds, or choose another --out")]
    Exists {
        /// The file.
        path: PathBuf,
    },
    /// The folder holds rows of the experiment measured with another fingerprint (options, kernel sources,
    /// compiler, device, suite or columns): rows measured now would not compare with them.
    #[error(
        "{path}: refusing to add {experiment} rows: its {} differs (recorded: {}; this run: {}); rows measured so \
         would not compare with those there: choose another --out, or delete the folder to measure again",
        .diff.field, .diff.old, .diff.new
    )]
    FingerprintMismatch {
        /// run.json of the folder.
        path: PathBuf,
        /// The experiment.
        experiment: String,
        /// The field that differs: recorded (`old`) and this run's (`new`).
        diff: Box<FieldDifference>,
    },
    /// A file name has `.shard-` but not the pattern `suite run --shard` writes.
    #[error("cannot tell the shard from the file name {path}: expected <experiment>.shard-<i>-of-<n>.csv with i < n; rename it or move it out of the folder")]
    ShardName {
        /// The file.
        path: PathBuf,
    },
    /// Shard files of one experiment were written with different `--shard` counts.
    #[error("{experiment}: shards of different counts ({found}) come from different runs: move one run's files into a folder of their own and merge there")]
    ShardCounts {
        /// The experiment.
        experiment: String,
        /// The shard files found.
        found: String,
    },
    /// Shards of a set are missing.
    #[error("{experiment}: incomplete set of {count} shards, missing {missing}: run them (with --resume) into this folder, or pass --partial to merge what is there")]
    MissingShards {
        /// The experiment.
        experiment: String,
        /// Shards in the set.
        count: usize,
        /// The missing files.
        missing: String,
    },
    /// Shards of a set hold fewer rows than the other shards prove they should: their tasks stopped early.
    #[error("{experiment}: shards with rows missing (their tasks stopped early): {incomplete}: run them again (with --resume) into this folder, or pass --partial to merge what is there")]
    IncompleteShards {
        /// The experiment.
        experiment: String,
        /// The incomplete files, each with its rows and the least it should hold.
        incomplete: String,
    },
    /// The merged CSV to be replaced holds rows that the shards do not: it is not an earlier merge of them.
    #[error("{path} holds {rows} rows that the shards do not (point `{key}`, for one), so it is not an earlier merge of them and replacing it would lose them: move it out of the folder and merge again")]
    MergeWouldLoseRows {
        /// The existing merged CSV.
        path: PathBuf,
        /// How many of its rows the shards lack.
        rows: usize,
        /// The key of one of them.
        key: String,
    },
    /// Two shards of a set were measured with different fingerprints.
    #[error(
        "{experiment}: {first} and {second} were measured with different {} ({} vs {}), so their rows do not \
         compare: merge only the shards of one run",
        .diff.field, .diff.old, .diff.new
    )]
    ShardFingerprints {
        /// The experiment.
        experiment: String,
        /// The first shard's file.
        first: String,
        /// The other shard's file.
        second: String,
        /// The field that differs: in `first` (`old`) and in `second` (`new`).
        diff: Box<FieldDifference>,
    },
    /// A shard file that no invocation in run.json wrote.
    #[error("{file}: {run_json} records no run that wrote it, so it cannot be checked against the other shards: merge in the folder the shards were run into")]
    ShardUnrecorded {
        /// The shard file.
        file: PathBuf,
        /// The folder's run.json.
        run_json: PathBuf,
    },
    /// The same point appears twice among the files merged.
    #[error("point `{key}` appears twice, in {first} and in {second}: remove one of the rows and merge again")]
    DuplicateKey {
        /// The point's key.
        key: String,
        /// The file where it appeared first.
        first: PathBuf,
        /// The file where it appeared again.
        second: PathBuf,
    },
    /// Another process writes the file or folder: a file has one writer at a time.
    #[error(
        "{guarded} is being written by {holder}. One writer at a time: wait for it to end (add --wait to wait for \
         it), or choose another --out (the lock is {lock})"
    )]
    Locked {
        /// The file or folder the lock guards.
        guarded: PathBuf,
        /// The lock file.
        lock: PathBuf,
        /// Who holds it, as [`lock::Holder::describe`] says.
        holder: String,
    },
    /// The results folder (or the parent it would be created in) cannot be written by this user.
    #[error("{dir} cannot be written: a probe file could not be created in {probed} ({source}): a job into it would stop at its first write: choose another --out (SUITE_OUT), or make it writable")]
    Unwritable {
        /// The results folder.
        dir: PathBuf,
        /// Where the probe was tried: the folder, or its nearest existing parent.
        probed: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The folder belongs to another Slurm job, which still runs (or is not provably gone): one job owns a folder
    /// from its first write until it ends.
    #[error(
        "{dir} belongs to {owner}, which has not ended: one job writes a folder from its first row to its end. Wait \
         for it to end (then continue the folder), or choose another SUITE_OUT/--out (its record is {record}; \
         remove it by hand only once you are sure that job has ended)"
    )]
    Owned {
        /// The results folder.
        dir: PathBuf,
        /// The owner, as [`lock::Holder::describe_owner`] says.
        owner: String,
        /// The owner's record.
        record: PathBuf,
    },
    /// The folder was written with another layout (unsharded, or sharded in another count) than this run's: its
    /// rows and this run's would neither merge nor resume.
    #[error(
        "{dir} holds a run written {found}; this run would write it {this}, which would neither resume nor merge \
         with it: continue it as it was written ({continue_with}), or choose another --out"
    )]
    Layout {
        /// The results folder.
        dir: PathBuf,
        /// The folder's layout, in words.
        found: String,
        /// This run's layout, in words.
        this: String,
        /// How to continue the folder as it was written.
        continue_with: String,
    },
    /// A merge of a run that holds fewer points than it planned, without `--partial`.
    #[error(
        "{dir}: {status}. `suite merge --partial {dir}` joins what is there and says it is incomplete; or continue \
         the run first"
    )]
    Incomplete {
        /// The results folder.
        dir: PathBuf,
        /// What it holds against its plan ([`status::FolderStatus::line`]).
        status: String,
    },
    /// run.json could not be encoded or decoded.
    #[error("{path}: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: serde_json::Error,
    },
}

/// The error of a failed file operation: [`Error::DiskFull`], naming the file system, where it is full or over
/// quota; [`Error::Io`] otherwise.
pub fn io_error(action: &'static str, path: &std::path::Path, source: std::io::Error) -> Error {
    let note = crate::safe_fs::disk_note(path, &source);
    if note.is_empty() {
        Error::Io { action, path: path.to_path_buf(), source }
    } else {
        Error::DiskFull { action, path: path.to_path_buf(), note, source }
    }
}

/// `text` read from a file others may write (a recorded command, a lock's holder), fit to print: every control
/// character (terminal escapes, carriage returns, line breaks) is shown as `\u{..}` instead of acting on the
/// terminal that prints it.
pub fn printable(text: &str) -> String {
    text.chars().map(|c| if c.is_control() { c.escape_unicode().to_string() } else { c.to_string() }).collect()
}

/// A fingerprint field whose value differs between two records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldDifference {
    /// The field, e.g. `options`.
    pub field: &'static str,
    /// The value recorded first (in the folder, or in the first shard).
    pub old: String,
    /// The other value.
    pub new: String,
}

/// Result of a report operation.
pub type Result<T, E = Error> = std::result::Result<T, E>;
