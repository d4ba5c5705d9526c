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
    /// `suite plot` of a folder that holds fewer points than it planned (or cannot tell), without `--partial`.
    #[error(
        "{status}: its plots would show what is there as if it were the whole run; continue the run (or merge it) \
         first, or pass --partial to draw what is there (every plot's note then says so)"
    )]
    PlotIncomplete {
        /// What the folder holds against its plan, naming it ([`crate::report::status::FolderStatus::line`]).
        status: String,
    },
    /// The experiment draws no plot from the verified rows the CSV holds (smoke draws none at all).
    #[error(
        "{}: {experiment} draws no plots from its {verified} verified rows (smoke has none; its figures are in the \
         run's summary.md and the CSV)",
        .csv.display()
    )]
    NoPlots {
        /// The CSV.
        csv: PathBuf,
        /// The experiment.
        experiment: String,
        /// Its `ok` rows.
        verified: usize,
    },
    /// An option is out of range; the message names the flag.
    #[error("{0}")]
    Options(String),
    /// The counter pass's child could not read its plan or write its outcomes.
    #[error(transparent)]
    Counters(#[from] crate::counters::Error),
}

impl Error {
    /// The exit status `suite` ends with for this error, picked by its type (never by its message): 2 for arguments
    /// or options it cannot use (as clap's own usage errors), 3 when a results folder refuses the run before anything
    /// is measured (another writer holds it, or it was written with another layout, device or fingerprint), 4 for
    /// `suite plot` of a folder that holds less than it planned, 1 for anything else. Job scripts read it: bad
    /// arguments are not worth submitting again, and a refused folder needs another one or its own writer.
    pub fn exit_code(&self) -> u8 {
        use crate::report::Error as Report;
        match self {
            Error::Options(_) | Error::Experiment(experiments::Error::Options(_)) => 2,
            Error::Experiment(experiments::Error::UnknownExperiment { .. })
            | Error::Experiment(experiments::Error::Device(crate::device::Error::UnknownPart { .. })) => 2,
            Error::Experiment(experiments::Error::Report(
                Report::Locked { .. }
                | Report::Owned { .. }
                | Report::Unwritable { .. }
                | Report::Layout { .. }
                | Report::FingerprintMismatch { .. }
                | Report::Exists { .. }
                | Report::HeaderMismatch { .. }
                | Report::OtherDevice { .. },
            )) => 3,
            Error::PlotIncomplete { .. } => 4,
            _ => 1,
        }
    }
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
    crate::code_objects::Error,
    crate::report::Error,
    crate::gpu::Error,
    crate::report::plot::Error,
    crate::options::Error
);

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder of another device refuses the run before anything is measured: exit status 3, chosen by the error's
    /// type, with the message it always had (job scripts and people read both).
    #[test]
    fn a_folder_of_another_device_refuses_the_run_with_status_3() {
        for (planned, verb) in [(false, "this is"), (true, "this run plans for")] {
            let refusal = crate::report::Error::OtherDevice {
                path: PathBuf::from("results/x/run.json"),
                held: "NVIDIA H100 80GB HBM3 (sm_90)".into(),
                this: "AMD Instinct MI250X (gfx90a)".into(),
                planned,
            };
            let error = Error::from(refusal);
            assert_eq!(error.exit_code(), 3, "{error}");
            assert_eq!(
                error.to_string(),
                format!(
                    "refusing to mix devices in results/x/run.json: it holds results from NVIDIA H100 80GB HBM3 \
                     (sm_90), {verb} AMD Instinct MI250X (gfx90a): choose another --out"
                )
            );
        }
        // Any other I/O failure is not a refusal.
        let io = crate::report::Error::Io {
            action: "cannot read",
            path: PathBuf::from("results/x/run.json"),
            source: std::io::Error::other("gone"),
        };
        assert_eq!(Error::from(io).exit_code(), 1);
    }
}
