//! What a results folder holds against what its writers planned.
//!
//! Every process that writes into a folder records its plan in `run.json` before it measures anything: the points
//! of every experiment it is about to run ([`super::run_json::Plan`]). A run stopped early (a time limit, a killed
//! task, `scancel`) leaves fewer rows than that, and every shard of a node job stopped by its time limit stops at
//! about the same row count, so only the plan tells a truncated run from a complete one. `suite merge`,
//! `summary.md`, `suite compare`, `suite status` and the job scripts' last lines all read it from here.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use super::csv::read_rows;
use super::merge::{self, shard_points};
use super::merge_record::MergeState;
use super::run_json::{self, Layout};
use super::Result;

/// One shard of a sharded experiment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardStatus {
    /// The shard, 0-based.
    pub index: usize,
    /// Points planned for it.
    pub planned: usize,
    /// Points its CSV holds.
    pub rows: usize,
}

/// One experiment of a folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExperimentStatus {
    /// The experiment.
    pub name: String,
    /// Points planned (the whole sweep); `None` when no plan names the experiment (a folder from before plans).
    pub planned: Option<usize>,
    /// Points with a row (any status), over every shard.
    pub rows: usize,
    /// Of them, rows that failed verification or errored.
    pub failed: usize,
    /// The shards, when the folder is sharded.
    pub shards: Vec<ShardStatus>,
}

impl ExperimentStatus {
    /// Whether every planned point has a row (and, sharded, every shard holds its own points).
    pub fn complete(&self) -> bool {
        self.planned.is_some_and(|p| self.rows >= p) && self.shards.iter().all(|s| s.rows >= s.planned)
    }

    /// `matmul 8 of 40 points`, with the short shards when sharded.
    pub fn counts(&self) -> String {
        let planned = self.planned.map(|p| p.to_string()).unwrap_or_else(|| "?".into());
        let mut text = format!("{} {} of {planned} points", self.name, self.rows);
        let short: Vec<String> = self
            .shards
            .iter()
            .filter(|s| s.rows < s.planned)
            .map(|s| format!("{} of {} in shard {}", s.rows, s.planned, s.index))
            .collect();
        // The shards that fell short, when only some did (a task that died); every shard short is a run stopped
        // as a whole (a time limit), and the count says it.
        if !short.is_empty() && short.len() < self.shards.len() {
            text.push_str(&format!(" ({})", short.join(", ")));
        }
        text
    }
}

/// A folder's rows against its plans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FolderStatus {
    /// The folder.
    pub dir: PathBuf,
    /// Whether the folder has a run.json at all.
    pub run_json: bool,
    /// For a sharded folder, whether its merged files (what readers read) are the merge of its shards as they are
    /// now; `None` for an unsharded one.
    pub merge: Option<MergeState>,
    /// How it was written, where run.json says.
    pub layout: Option<Layout>,
    /// Whether run.json records any plan (folders written before plans were recorded have none).
    pub plan_recorded: bool,
    /// Every experiment planned or holding rows, planned ones first in plan order.
    pub experiments: Vec<ExperimentStatus>,
    /// The command that continues the run, as its latest plan recorded it.
    pub continue_with: Option<String>,
}

impl FolderStatus {
    /// Whether the folder holds a row for every planned point, in the files readers read (a sharded folder's merge
    /// is current); false when no plan is recorded (unknown).
    pub fn complete(&self) -> bool {
        self.rows_complete() && self.merge.as_ref().is_none_or(|m| *m == MergeState::Current)
    }

    /// Whether every planned point has a row (in a sharded folder, in its shards), whatever became of the merge.
    pub fn rows_complete(&self) -> bool {
        self.plan_recorded && self.experiments.iter().all(ExperimentStatus::complete)
    }

    /// Rows that failed verification or errored, over every experiment.
    pub fn failed(&self) -> usize {
        self.experiments.iter().map(|e| e.failed).sum()
    }

    /// The experiment called `name`, if the folder plans or holds it.
    pub fn experiment(&self, name: &str) -> Option<&ExperimentStatus> {
        self.experiments.iter().find(|e| e.name == name)
    }

    /// One line a person reads first: `complete: ...`, `incomplete: matmul 8 of 40 points, ...; continue with ...`,
    /// or that completeness is unknown.
    pub fn line(&self) -> String {
        if !self.run_json {
            return format!(
                "no run.json in {}: nothing here records a run (not a results folder, or no run has started in it)",
                self.dir.display()
            );
        }
        if !self.plan_recorded {
            return "completeness unknown: run.json records no plan (the folder was written by an older suite), so \
                    the rows cannot be checked against what was meant to run"
                .into();
        }
        if let (true, Some(MergeState::Incomplete(why))) = (self.rows_complete(), &self.merge) {
            return format!(
                "merge incomplete: run suite merge {} (every planned point has a row in the shards, but {why})",
                self.dir.display()
            );
        }
        if self.complete() {
            let counts: Vec<String> = self.experiments.iter().map(|e| format!("{} {}", e.name, e.rows)).collect();
            return format!("complete: every planned point has a row ({})", counts.join(", "));
        }
        let missing: Vec<String> = self.experiments.iter().filter(|e| !e.complete()).map(|e| e.counts()).collect();
        let done: Vec<&str> = self.experiments.iter().filter(|e| e.complete()).map(|e| e.name.as_str()).collect();
        let mut line = format!("incomplete: {}", missing.join(", "));
        if !done.is_empty() {
            line.push_str(&format!(" ({} complete)", done.join(", ")));
        }
        if let Some(command) = &self.continue_with {
            line.push_str(&format!("; continue with: {}", super::printable(command)));
        }
        line
    }
}

/// Keys of the complete rows of a CSV, and how many of them failed or errored; a missing file holds none; a row that
/// does not parse is an error naming it.
fn rows_of(path: &Path) -> Result<(usize, usize)> {
    if !path.exists() {
        return Ok((0, 0));
    }
    let rows = read_rows(path)?;
    let mut keys = HashSet::new();
    let mut failed = 0;
    for row in &rows {
        if keys.insert(row.get("key").cloned().unwrap_or_default())
            && row.get("status").is_some_and(|s| s == "fail" || s == "error")
        {
            failed += 1;
        }
    }
    Ok((keys.len(), failed))
}

/// The status of the folder `dir`: its plans (run.json) against the rows of its CSVs (the shards' when sharded).
pub fn read(dir: &Path) -> Result<FolderStatus> {
    if !dir.exists() {
        // Nothing written yet (a job that ended before its plan): no plan, no rows.
        return Ok(FolderStatus {
            dir: dir.to_path_buf(),
            run_json: false,
            merge: None,
            layout: None,
            plan_recorded: false,
            experiments: Vec::new(),
            continue_with: None,
        });
    }
    let run = run_json::read(dir)?;
    let layout = run.as_ref().and_then(|r| r.layout().ok().flatten());
    // The latest plan of each experiment wins: plans of one folder agree (one fingerprint per experiment).
    let mut planned: Vec<(String, usize)> = Vec::new();
    for plan in run.iter().flat_map(|r| &r.plans) {
        for e in &plan.experiments {
            match planned.iter_mut().find(|(name, _)| *name == e.name) {
                Some(slot) => slot.1 = e.sweep_points,
                None => planned.push((e.name.clone(), e.sweep_points)),
            }
        }
    }
    // Experiments holding rows without a plan (older folders), in name order after the planned ones.
    let mut unplanned: BTreeMap<String, ()> = BTreeMap::new();
    let shard_groups = merge::shard_files(dir)?;
    for name in shard_groups.keys() {
        unplanned.insert(name.clone(), ());
    }
    // Older folders name their experiments only in their invocations.
    for invocation in run.iter().flat_map(|r| &r.invocations) {
        if !invocation.experiment.is_empty() {
            unplanned.insert(invocation.experiment.clone(), ());
        }
    }
    unplanned.retain(|name, _| !planned.iter().any(|(p, _)| p == name));
    let mut experiments = Vec::new();
    let all = planned.iter().map(|(n, p)| (n.clone(), Some(*p))).chain(unplanned.into_keys().map(|n| (n, None)));
    for (name, sweep) in all {
        let mut status = ExperimentStatus { name: name.clone(), planned: sweep, rows: 0, failed: 0, shards: vec![] };
        match layout {
            Some(Layout::Sharded { count }) => {
                for index in 0..count {
                    let file = dir.join(merge::shard_file_name(&name, index, count));
                    let (rows, failed) = rows_of(&file)?;
                    let planned = sweep.map_or(0, |p| shard_points(p, index, count));
                    status.shards.push(ShardStatus { index, planned, rows });
                    status.rows += rows;
                    status.failed += failed;
                }
            }
            _ => {
                let (rows, failed) = rows_of(&dir.join(format!("{name}.csv")))?;
                (status.rows, status.failed) = (rows, failed);
            }
        }
        experiments.push(status);
    }
    let merge = match layout {
        Some(Layout::Sharded { .. }) => Some(super::merge_record::state(dir, run.as_ref())?),
        _ => None,
    };
    Ok(FolderStatus {
        dir: dir.to_path_buf(),
        run_json: run.is_some(),
        merge,
        layout,
        plan_recorded: run.as_ref().is_some_and(|r| !r.plans.is_empty()),
        experiments,
        continue_with: run.as_ref().and_then(|r| r.continue_with().map(str::to_string)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::occupancy_calculator::tests::h100;
    use crate::report::csv::{header, Context, CsvLog, Row, Status};
    use crate::report::folder::ResultsFolder;
    use crate::report::lock::Wait;
    use crate::report::run_json::{Plan, PlannedExperiment};

    /// `plan` recorded as its process records it: through the folder taken for its shard.
    fn record_plan(dir: &Path, device: &crate::device::Props, plan: Plan) -> Result<()> {
        let shard = plan.shard.as_deref().map(|s| s.parse().expect("a shard i/n"));
        ResultsFolder::take(dir, shard, "suite run", Wait::No)?.record_plan(device, plan)
    }

    fn plan(shard: Option<&str>, experiments: &[(&str, usize)]) -> Plan {
        let count = shard.and_then(|s| s.split_once('/')).map_or(1, |(_, n)| n.parse().unwrap());
        let index = shard.and_then(|s| s.split_once('/')).map_or(0, |(i, _)| i.parse().unwrap());
        Plan {
            date: "2026-11-25T10:00:00Z".into(),
            host: "nid001".into(),
            command: vec![],
            shard: shard.map(str::to_string),
            slurm: None,
            continue_with: "SUITE_OUT=r sbatch scripts/lumi/gcd.sbatch".into(),
            experiments: experiments
                .iter()
                .map(|(name, points)| PlannedExperiment {
                    name: name.to_string(),
                    sweep_points: *points,
                    points: shard_points(*points, index, count),
                })
                .collect(),
        }
    }

    /// Writes rows `keys` (with `statuses`) into `file` of `dir`, as the runner does.
    fn rows(dir: &Path, file: &str, keys: &[(&str, Status)]) {
        let context = Context {
            experiment: "m".into(),
            platform: "nvidia".into(),
            device: "d".into(),
            arch: "sm_90".into(),
            wave_size: 32,
        };
        let mut log = CsvLog::open(&dir.join(file), context, &header(&[], "gbps"), true).unwrap();
        for (key, status) in keys {
            let row = Row::unmeasured(*key, vec![], *status, "");
            log.append(&row).unwrap();
        }
    }

    #[test]
    fn shards_hold_every_nth_point() {
        let cases = [(10, 0, 3, 4), (10, 1, 3, 3), (10, 2, 3, 3), (2, 5, 8, 0), (0, 0, 1, 0), (12, 7, 8, 1)];
        for (points, index, count, expected) in cases {
            assert_eq!(shard_points(points, index, count), expected, "{points} {index}/{count}");
        }
        for count in 1..10 {
            assert_eq!((0..count).map(|i| shard_points(37, i, count)).sum::<usize>(), 37);
        }
    }

    #[test]
    fn a_run_that_stopped_early_is_incomplete_with_counts_for_every_planned_experiment() {
        let dir = tempfile::tempdir().unwrap();
        record_plan(dir.path(), &h100(), plan(None, &[("smoke", 2), ("matmul", 40), ("pt", 5)])).unwrap();
        rows(dir.path(), "smoke.csv", &[("a", Status::Ok), ("b", Status::Fail)]);
        rows(dir.path(), "matmul.csv", &[("a", Status::Ok), ("b", Status::Ok), ("c", Status::Invalid)]);
        let status = read(dir.path()).unwrap();
        assert!(!status.complete());
        assert_eq!(
            status.line(),
            "incomplete: matmul 3 of 40 points, pt 0 of 5 points (smoke complete); continue with: SUITE_OUT=r sbatch \
             scripts/lumi/gcd.sbatch"
        );
        assert_eq!(status.failed(), 1);
        // The rest written: complete, and no longer partial anywhere.
        let more: Vec<String> = (0..37).map(|i| format!("k{i}")).collect();
        rows(dir.path(), "matmul.csv", &more.iter().map(|k| (k.as_str(), Status::Ok)).collect::<Vec<_>>());
        rows(dir.path(), "pt.csv", &["1", "2", "3", "4", "5"].map(|k| (k, Status::Ok)));
        let status = read(dir.path()).unwrap();
        assert!(status.complete(), "{}", status.line());
        assert_eq!(status.line(), "complete: every planned point has a row (smoke 2, matmul 40, pt 5)");
    }

    #[test]
    fn shards_that_stopped_together_are_incomplete_although_none_is_shorter_than_the_others() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..4 {
            record_plan(dir.path(), &h100(), plan(Some(&format!("{i}/4")), &[("matmul", 40), ("fusion", 8)])).unwrap();
            // Every task stopped after its first point: the rows alone look even.
            rows(dir.path(), &merge::shard_file_name("matmul", i, 4), &[(&format!("p{i}"), Status::Ok)]);
        }
        let status = read(dir.path()).unwrap();
        assert_eq!(status.layout, Some(Layout::Sharded { count: 4 }));
        let matmul = status.experiment("matmul").unwrap();
        assert_eq!((matmul.rows, matmul.planned), (4, Some(40)));
        assert_eq!(matmul.shards.iter().map(|s| (s.planned, s.rows)).collect::<Vec<_>>(), [(10, 1); 4]);
        assert!(
            status.line().starts_with("incomplete: matmul 4 of 40 points, fusion 0 of 8 points;"),
            "{}",
            status.line()
        );
        // One task short where the others are complete: the shard is named.
        let dir = tempfile::tempdir().unwrap();
        for i in 0..2 {
            record_plan(dir.path(), &h100(), plan(Some(&format!("{i}/2")), &[("smoke", 4)])).unwrap();
        }
        rows(dir.path(), &merge::shard_file_name("smoke", 0, 2), &[("a", Status::Ok), ("c", Status::Ok)]);
        rows(dir.path(), &merge::shard_file_name("smoke", 1, 2), &[("b", Status::Ok)]);
        assert_eq!(
            read(dir.path()).unwrap().experiment("smoke").unwrap().counts(),
            "smoke 3 of 4 points (1 of 2 in shard 1)"
        );
    }

    #[test]
    fn a_folder_without_a_plan_is_of_unknown_completeness_never_complete() {
        let dir = tempfile::tempdir().unwrap();
        rows(dir.path(), "smoke.csv", &[("a", Status::Ok)]);
        let status = read(dir.path()).unwrap();
        assert!(!status.complete() && !status.plan_recorded);
        let no_run_json = format!("no run.json in {}: nothing here records a run", dir.path().display());
        assert!(status.line().starts_with(&no_run_json), "{}", status.line());
        let run =
            crate::report::run_json::RunJson { device: h100(), invocations: vec![], plans: vec![], merges: vec![] };
        std::fs::write(dir.path().join("run.json"), serde_json::to_string(&run).unwrap()).unwrap();
        let status = read(dir.path()).unwrap();
        assert!(!status.complete() && !status.plan_recorded);
        assert!(status.line().starts_with("completeness unknown: run.json records no plan"), "{}", status.line());
        let missing = read(&dir.path().join("nothing-here")).unwrap();
        assert!(!missing.plan_recorded && missing.experiments.is_empty());
    }
}
