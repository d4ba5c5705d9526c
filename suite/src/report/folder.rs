//! The one owner of a results folder while an experiment writes into it (nvbench's printer is the model): the
//! folder, its experiment's CSV writer (and the CSV's lock), `phases.csv` and every `run.json` update of the
//! invocation. The runner only tells it what happened: [`ResultsFolder::begin`] before the first point, a row per
//! point ([`ResultsFolder::row`], [`ResultsFolder::point_phases`]), and [`ResultsFolder::end`] after the last.

use std::path::{Path, PathBuf};

use super::csv::{append_shared_row, Context, CsvLog, Row, Status};
use super::run_json::{self, Invocation, Reading};
use super::Result;
use crate::device::Props;
use crate::options::Shard;
use crate::phases::{self, PhaseRecord, Times};

/// A results folder as one invocation of one experiment writes it.
pub struct ResultsFolder {
    dir: PathBuf,
    device: Props,
    experiment: String,
    shard: Option<Shard>,
    /// The invocation's index in run.json (invocations are only ever appended).
    invocation: usize,
    /// The experiment's CSV, open (and locked) for this writer alone.
    log: CsvLog,
}

/// The CSV file name of `experiment` in a results folder, with the shard in it when sharded (`suite merge` joins
/// them).
pub fn csv_name(experiment: &str, shard: Option<Shard>) -> String {
    match shard {
        None => format!("{experiment}.csv"),
        Some(s) => format!("{experiment}.shard-{}-of-{}.csv", s.index, s.count),
    }
}

impl std::fmt::Debug for ResultsFolder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResultsFolder")
            .field("dir", &self.dir)
            .field("experiment", &self.experiment)
            .finish_non_exhaustive()
    }
}

impl ResultsFolder {
    /// Opens `dir` for `invocation` (of `shard`, which it records) on `device`: checks that the folder may take it (run.json's device, layout and
    /// fingerprint) before the CSV is created or reopened, so a refused run leaves the folder as it was, then opens the
    /// CSV of `context`'s experiment with `columns` (resuming it when `resume`) and records the invocation.
    pub fn begin(
        dir: &Path,
        device: &Props,
        mut invocation: Invocation,
        shard: Option<Shard>,
        context: Context,
        columns: &[String],
        resume: bool,
    ) -> Result<ResultsFolder> {
        invocation.shard = shard.map(|s| s.to_string());
        let experiment = context.experiment.clone();
        let csv_path = dir.join(csv_name(&experiment, shard));
        let (log, invocation) = run_json::begin(dir, device, invocation, csv_path.exists(), || {
            CsvLog::open(&csv_path, context, columns, resume)
        })?;
        Ok(ResultsFolder { dir: dir.to_path_buf(), device: device.clone(), experiment, shard, invocation, log })
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The experiment's CSV.
    pub fn csv_path(&self) -> PathBuf {
        self.dir.join(csv_name(&self.experiment, self.shard))
    }

    /// The status of `key` in the CSV as it was when resumed; `None` when it has no row.
    pub fn recorded(&self, key: &str) -> Option<Status> {
        self.log.recorded(key)
    }

    /// Appends a point's row to the CSV.
    pub fn row(&mut self, row: &Row) -> Result<()> {
        self.log.append(row)
    }

    /// Appends the phases of the point `key` (ended with `status`, `wall_s` seconds) to the folder's `phases.csv`,
    /// which every writer of the folder shares.
    pub fn point_phases(&self, key: &str, status: Status, wall_s: f64, times: &Times) -> Result<()> {
        let row = phases::csv_row(self.invocation, &self.experiment, self.shard, key, status.as_str(), wall_s, times);
        append_shared_row(&self.dir.join(phases::PHASES_CSV), &phases::csv_columns(), &row)
    }

    /// Ends the invocation: its phases and, when the telemetry gave one, its reading after the last point go into
    /// run.json, in one update.
    pub fn end(self, telemetry_end: Option<Reading>, phases: PhaseRecord) -> Result<()> {
        run_json::end(&self.dir, &self.device, self.invocation, &self.experiment, telemetry_end, phases)
    }
}
