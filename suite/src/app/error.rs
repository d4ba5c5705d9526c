//! The command line's error type: what stops a `suite` command, whichever layer it came from.

use std::path::PathBuf;

use crate::experiments;

/// Errors that stop a command (as opposed to a point's failure, which becomes a row).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A run, its kernels, its device or its results failed.
    #[error(transparent)]
    Experiment(#[from] experiments::Error),
    /// `suite compare` could not read a run or write its report.
    #[error(transparent)]
    Compare(#[from] crate::report::compare::Error),
    /// A benchmark of the suite itself could not run.
    #[error("bench: {0}")]
    Bench(String),
    /// A CSV holds no verified rows, so there is nothing to plot.
    #[error("{}: no verified rows to plot", .csv.display())]
    NothingToPlot {
        /// The CSV.
        csv: PathBuf,
    },
    /// An option is out of range; the message names the flag.
    #[error("{0}")]
    Options(String),
}

/// The layers below reach the app through [`experiments::Error`], which names each of them.
macro_rules! through_experiments {
    ($($from:ty),*) => {$(
        impl From<$from> for Error {
            fn from(e: $from) -> Error {
                Error::Experiment(e.into())
            }
        }
    )*};
}

through_experiments!(
    crate::device::Error,
    crate::kernels::Error,
    crate::report::Error,
    crate::gpu::Error,
    crate::report::plot::Error,
    crate::options::Error
);
