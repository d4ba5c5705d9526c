//! The one owner of a results folder while a process writes into it (nvbench's printer is the model). Taking the
//! folder ([`ResultsFolder::take`]) is the claim of its Slurm job and its writer locks ([`super::lock`]): a second
//! writer is refused there, naming the first, before anything is measured; dropping it lets go. Every `run.json`
//! update of the process goes through it: the plan ([`ResultsFolder::record_plan`]), each experiment's invocation
//! and its end, a merge ([`ResultsFolder::record_merge`]). The runner only tells it what happened:
//! [`ResultsFolder::begin`] before an experiment's first point (which opens its CSV), a row per point
//! ([`ExperimentWriter::row`], [`ExperimentWriter::point_phases`]), and [`ExperimentWriter::end`] after the last.

use std::path::{Path, PathBuf};

use super::csv::{append_shared_row, Context, CsvLog, Row, Status};
use super::lock::{claim_folder, FolderLock, Wait};
use super::run_json::{self, Change, Invocation, MergeRecord, Plan, Reading};
use super::Result;
use crate::device::Props;
use crate::options::Shard;
use crate::phases::{self, PhaseRecord, Times};

/// A results folder held by this process: its claim and locks, from [`ResultsFolder::take`] until it is dropped.
#[derive(Debug)]
pub struct ResultsFolder {
    dir: PathBuf,
    shard: Option<Shard>,
    /// The folder's writer locks (a shard's: the folder's shared and its own), released when dropped.
    _locks: FolderLock,
}

/// One experiment's invocation as its owner writes it, from [`ResultsFolder::begin`] to [`ExperimentWriter::end`]:
/// its CSV (open and locked for this writer alone), its rows' phases and its record in `run.json`.
pub struct ExperimentWriter<'f> {
    folder: &'f ResultsFolder,
    device: Props,
    experiment: String,
    /// The invocation's index in run.json (invocations are only ever appended).
    invocation: usize,
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

impl ResultsFolder {
    /// Takes `dir` (creating it) for `what` (`suite run`, `suite merge`), of `shard` when sharded: one Slurm job owns
    /// the folder (another job's writer is refused, [`super::Error::Owned`]), then the writer locks: an unsharded
    /// run or a merge holds the folder alone, the shards of one run share it (each holds its own shard's lock).
    /// A held lock refuses at once, naming its holder, or is waited for, as `wait` says.
    pub fn take(dir: &Path, shard: Option<Shard>, what: &str, wait: Wait) -> Result<ResultsFolder> {
        let claimant = match shard {
            Some(s) => format!("{what} (shard {s})"),
            None => what.to_string(),
        };
        claim_folder(dir, &claimant)?;
        let locks = FolderLock::take(dir, shard, what, wait)?;
        Ok(ResultsFolder { dir: dir.to_path_buf(), shard, _locks: locks })
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The shard this process writes, when sharded.
    pub fn shard(&self) -> Option<Shard> {
        self.shard
    }

    /// Records `plan` (every experiment this process is about to run) on `device`, after checking that the folder
    /// holds this device's results and was written with this process's layout: the one check every writer passes
    /// before it measures anything.
    pub fn record_plan(&self, device: &Props, mut plan: Plan) -> Result<()> {
        plan.shard = self.shard.map(|s| s.to_string());
        self.update(device, Change::Plan(plan), || Ok(())).map(|_| ())
    }

    /// Begins `invocation` of `context`'s experiment on `device`: run.json must admit it (the device, the layout,
    /// the fingerprint of the experiment's earlier rows) before its CSV with `columns` is created or reopened
    /// (resumed when `resume`), so a refused run leaves the folder as it was; the invocation is recorded once the
    /// CSV is open, in the same update.
    pub fn begin(
        &mut self,
        device: &Props,
        mut invocation: Invocation,
        context: Context,
        columns: &[String],
        resume: bool,
    ) -> Result<ExperimentWriter<'_>> {
        invocation.shard = self.shard.map(|s| s.to_string());
        let experiment = context.experiment.clone();
        let csv_path = self.dir.join(csv_name(&experiment, self.shard));
        let has_csv = csv_path.exists();
        let (log, index) = self.update(device, Change::Begin { invocation: Box::new(invocation), has_csv }, || {
            CsvLog::open(&csv_path, context, columns, resume)
        })?;
        Ok(ExperimentWriter { folder: self, device: device.clone(), experiment, invocation: index, log })
    }

    /// Records an invocation whose rows its caller writes itself (a folder made as a run leaves it, for tests and
    /// examples), refused as [`ResultsFolder::begin`] refuses one; its index in run.json.
    pub fn record_invocation(&self, device: &Props, mut invocation: Invocation) -> Result<usize> {
        invocation.shard = self.shard.map(|s| s.to_string());
        self.update(device, Change::Begin { invocation: Box::new(invocation), has_csv: false }, || Ok(()))
            .map(|(_, index)| index)
    }

    /// Records `record`, a merge of the folder's shards on `device`: a merge's last step, after its last file is
    /// in place ([`super::merge_record`]).
    pub fn record_merge(&self, device: &Props, record: MergeRecord) -> Result<()> {
        self.update(device, Change::Merge(record), || Ok(())).map(|_| ())
    }

    /// The one way this process changes run.json ([`run_json::update`]).
    fn update<T>(&self, device: &Props, change: Change, alongside: impl FnOnce() -> Result<T>) -> Result<(T, usize)> {
        run_json::update(&self.dir, device, change, alongside)
    }
}

impl std::fmt::Debug for ExperimentWriter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExperimentWriter")
            .field("dir", &self.folder.dir)
            .field("experiment", &self.experiment)
            .finish_non_exhaustive()
    }
}

impl ExperimentWriter<'_> {
    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.folder.dir
    }

    /// The experiment's CSV.
    pub fn csv_path(&self) -> PathBuf {
        self.folder.dir.join(csv_name(&self.experiment, self.folder.shard))
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
        let (shard, experiment) = (self.folder.shard, &self.experiment);
        let row = phases::csv_row(self.invocation, experiment, shard, key, status.as_str(), wall_s, times);
        append_shared_row(&self.folder.dir.join(phases::PHASES_CSV), &phases::csv_columns(), &row)
    }

    /// Ends the invocation: its phases and, when the telemetry gave one, its reading after the last point go into
    /// run.json, in one update.
    pub fn end(self, telemetry_end: Option<Reading>, phases: PhaseRecord) -> Result<()> {
        let change = Change::End { index: self.invocation, experiment: self.experiment.clone(), telemetry_end, phases };
        self.folder.update(&self.device, change, || Ok(())).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::occupancy_calculator::tests::h100;
    use crate::report::csv::header;
    use crate::report::lock::FolderLock;
    use crate::report::run_json::tests::fingerprint;
    use crate::report::Error;

    /// The text of `taken`'s refusal by a writer that holds the folder.
    fn refusal(taken: Result<ResultsFolder>) -> String {
        match taken {
            Err(e @ Error::Locked { .. }) => e.to_string(),
            other => panic!("not refused as held by another writer: {other:?}"),
        }
    }

    /// The folder's claim and locks live exactly as long as its owner: while one is held, another writer of the
    /// folder (the same shard again, a merge while a shard runs, a run while a merge runs) is refused, naming it;
    /// once it is dropped, the next writer takes the folder.
    #[test]
    fn the_owner_holds_the_folder_from_take_until_it_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let shard = Some(Shard { index: 0, count: 2 });
        let running = ResultsFolder::take(dir.path(), shard, "suite run", Wait::No).unwrap();
        let holders: Vec<String> = FolderLock::holders(dir.path()).into_iter().map(|h| h.what).collect();
        assert_eq!(holders, ["suite run (shard 0/2)"]);
        let merge = refusal(ResultsFolder::take(dir.path(), None, "suite merge", Wait::No));
        let pid = format!("pid {}", std::process::id());
        assert!(merge.contains("suite run (shard 0/2) on host") && merge.contains(&pid), "{merge}");
        let twin = refusal(ResultsFolder::take(dir.path(), shard, "suite run", Wait::No));
        assert!(twin.contains("suite run (shard 0/2) on host"), "{twin}");
        // Its plan goes through it while it holds the folder, with the folder's shard.
        let plan = Plan {
            date: "2026-11-28T10:00:00Z".into(),
            host: "nid001".into(),
            command: vec![],
            shard: None,
            slurm: None,
            continue_with: "suite run --out r --shard 0/2 --resume".into(),
            experiments: vec![],
        };
        running.record_plan(&h100(), plan).unwrap();
        drop(running);
        assert!(FolderLock::holders(dir.path()).is_empty(), "dropped, it lets go");
        let merging = ResultsFolder::take(dir.path(), None, "suite merge", Wait::No).unwrap();
        let run = refusal(ResultsFolder::take(dir.path(), shard, "suite run", Wait::No));
        assert!(run.contains("suite merge on host"), "{run}");
        drop(merging);
        ResultsFolder::take(dir.path(), shard, "suite run", Wait::No).unwrap();
        let run = run_json::read(dir.path()).unwrap().unwrap();
        assert_eq!(run.plans.iter().map(|p| p.shard.as_deref()).collect::<Vec<_>>(), [Some("0/2")]);
    }

    /// An experiment begins and ends through the owner, each in one update of run.json. Refused by run.json
    /// (another fingerprint) it does not touch the CSV; refused by its CSV (one is there, and this is no resume) it
    /// records nothing; its end goes to its own invocation.
    #[test]
    fn an_experiment_begins_and_ends_through_the_owner_and_a_refused_one_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut folder = ResultsFolder::take(dir.path(), None, "suite run", Wait::No).unwrap();
        let columns = header(&["size"], "gbps");
        let context = || Context {
            experiment: "smoke".into(),
            platform: "nvidia".into(),
            device: "d".into(),
            arch: "sm_90".into(),
            wave_size: 32,
        };
        let invocation = |fingerprint| {
            let mut invocation = Invocation::now(serde_json::json!({}), Some("3/4".into()));
            invocation.experiment = "smoke".into();
            invocation.fingerprint = Some(fingerprint);
            invocation
        };
        let mut writer = folder.begin(&h100(), invocation(fingerprint()), context(), &columns, false).unwrap();
        writer.row(&Row::unmeasured("k1", vec!["1".into()], Status::Invalid, "not measured (test)")).unwrap();
        writer.end(None, PhaseRecord { points: 1, ..PhaseRecord::default() }).unwrap();
        let csv = dir.path().join("smoke.csv");
        let text = std::fs::read_to_string(&csv).unwrap();
        let err = folder.begin(&h100(), invocation(fingerprint()), context(), &columns, false).unwrap_err();
        assert!(matches!(err, Error::Exists { .. }), "{err}");
        let mut other = fingerprint();
        other.options = "{\"reps\":5}".into();
        let err = folder.begin(&h100(), invocation(other), context(), &columns, true).unwrap_err();
        assert!(matches!(err, Error::FingerprintMismatch { .. }), "{err}");
        assert_eq!(std::fs::read_to_string(&csv).unwrap(), text, "a refused writer leaves the CSV as it was");
        let run = run_json::read(dir.path()).unwrap().unwrap();
        assert_eq!(run.invocations.len(), 1, "refused writers record nothing");
        // The folder records its own shard (none), whatever the invocation said.
        assert_eq!(run.invocations[0].shard, None);
        assert_eq!(run.invocations[0].phases.as_ref().map(|p| p.points), Some(1));
    }
}
