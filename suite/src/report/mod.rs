//! Results on disk: one folder per run with `run.json` and one tidy CSV per experiment.

pub mod csv;
pub mod merge;
pub mod plot;
pub mod run_json;

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
    /// Results exist and `--resume` was not given.
    #[error("{path} already exists: pass --resume to skip the points it holds, or choose another --out")]
    Exists {
        /// The file.
        path: PathBuf,
    },
    /// The folder holds rows of the experiment measured with another fingerprint (options, kernel sources,
    /// compiler, device, suite or columns): rows measured now would not compare with them.
    #[error(
        "{path}: refusing to add {experiment} rows: its {field} differs (recorded: {old}; this run: {new}); rows \
         measured so would not compare with those there: choose another --out, or delete the folder to measure again"
    )]
    FingerprintMismatch {
        /// run.json of the folder.
        path: PathBuf,
        /// The experiment.
        experiment: String,
        /// The fingerprint field that differs, e.g. `options`.
        field: &'static str,
        /// Its value recorded in the folder.
        old: String,
        /// Its value for this run.
        new: String,
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

/// Result of a report operation.
pub type Result<T, E = Error> = std::result::Result<T, E>;
