//! `suite merge DIR`: the shards of a sharded run joined into one CSV per experiment, its plots, roofline and
//! `summary.md`. The merge is strict: every planned point must have a row (the plan in `run.json` says how many
//! each shard holds), or `--partial` must say that an incomplete run is to be merged, and then the merge says how
//! incomplete it is. A complete run never reads as partial.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use super::{emit, Error};
use crate::experiments::{self, registry};
use crate::report::folder::ResultsFolder;
use crate::report::lock::Wait;
use crate::report::merge_record::{self, MergeRecord, MergeState, MergedExperiment};
use crate::report::summary::{self, Section};
use crate::report::{merge, run_json, status};

/// `suite merge DIR [--partial] [--wait]`.
pub(super) fn merge(dir: &Path, partial: bool, wait: Wait) -> Result<ExitCode, Error> {
    merge_with(dir, partial, wait, &mut |_| Ok(()))
}

/// [`merge`], calling `step` after each file is in place (with its name), so a test can stop the merge at any of
/// them. The merge is atomic for its readers: every merged CSV is written beside its final name first, then all are
/// renamed into place, then the plots, roofline and `summary.md` are made (each written beside its name and
/// renamed), and run.json records the merge last. Stopped anywhere before that record, the folder's status says
/// `merge incomplete: run suite merge DIR` (its merged files are not the recorded merge of its shards), and the next
/// merge makes every file again.
pub(super) fn merge_with(
    dir: &Path,
    partial: bool,
    wait: Wait,
    step: &mut dyn FnMut(&str) -> Result<(), Error>,
) -> Result<ExitCode, Error> {
    // One writer of the folder at a time: refused while the shards of its run are being written (each holds the
    // folder's lock shared) or while another merge runs.
    // And only by the job that owns the folder (or once it has ended).
    // Held until the merge returns; the merge's record in run.json goes through it.
    let owner = ResultsFolder::take(dir, None, "suite merge", wait)?;
    let groups = merge::shard_files(dir)?;
    if groups.is_empty() {
        return Err(Error::Options(format!(
            "{}: no <experiment>.shard-<i>-of-<n>.csv files to merge (`suite status {}` says what it holds)",
            dir.display(),
            dir.display()
        )));
    }
    let run = run_json::read(dir)?;
    let mut folder = status::read(dir)?;
    // Every set is checked before anything is written.
    let mut gaps = Vec::new();
    for (experiment, shards) in &groups {
        let planned = folder.experiment(experiment).and_then(|e| e.planned);
        gaps.push(merge::check(experiment, shards, run.as_ref(), &run_json::path(dir), partial, planned)?);
    }
    if folder.plan_recorded && !folder.rows_complete() && !partial {
        return Err(crate::report::Error::Incomplete { dir: dir.to_path_buf(), status: folder.line() }.into());
    }
    // Every merged CSV beside its name, then all renamed into place.
    let mut staged = Vec::new();
    for (experiment, shards) in &groups {
        let out = dir.join(experiments::csv_name(experiment, None));
        let inputs = shards
            .iter()
            .map(|s| Ok((file_name(&s.path), merge::shard_rows(&s.path)?)))
            .collect::<Result<Vec<_>, crate::report::Error>>()?;
        staged.push((experiment, out.clone(), inputs, merge::merge(shards, &out)?));
    }
    let mut merged = Vec::new();
    for (experiment, out, inputs, file) in staged {
        let rows = file.rows;
        file.place()?;
        step(&file_name(&out))?;
        merged.push((experiment, out, inputs, rows));
    }
    // What this merge makes the folder: its merged files are now the merge of its shards.
    folder.merge = Some(MergeState::Current);
    let mut text = String::new();
    let mut sections = Vec::new();
    let mut record = MergeRecord {
        date: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        host: gethostname::gethostname().to_string_lossy().into_owned(),
        partial,
        experiments: Vec::new(),
    };
    for ((experiment, out, inputs, count), gaps) in merged.into_iter().zip(gaps) {
        let shards = &groups[experiment.as_str()];
        let _ = writeln!(text, "{}: {count} rows from {} shards", out.display(), shards.len());
        record.experiments.push(MergedExperiment {
            name: experiment.clone(),
            inputs,
            output: file_name(&out),
            rows: count,
            sha256: merge_record::file_sha256(&out)?,
        });
        // Counted against the plan where one is recorded; in an older folder, from what the shards prove.
        let counts = folder.experiment(experiment).filter(|e| e.planned.is_some() && !e.complete()).map(|e| e.counts());
        let missing = match (&counts, gaps.is_empty()) {
            (Some(counts), _) => Some(format!("incomplete: {counts}")),
            (None, false) => Some(format!("incomplete: {gaps}")),
            (None, true) => None,
        };
        if let Some(missing) = &missing {
            let _ = writeln!(text, "{}: {missing}", out.display());
        }
        // The read side alone: a merge reads rows and builds no sweep.
        let entry = registry::find(experiment)?;
        let note = missing.as_ref().map(|m| format!("{}: {m}", dir.display()));
        for path in experiments::render_plots_noted(entry.results, &out, dir, note.as_deref())? {
            step(&file_name(&path))?;
            let _ = writeln!(text, "{}", path.display());
        }
        let rows = crate::report::csv::read_rows(&out)?;
        let missing = missing.map(|m| format!("; {m}")).unwrap_or_default();
        let points =
            format!("{}, merged from {} shards{missing}", experiments::Summary::of_rows(&rows).line(), shards.len());
        sections.push(Section::new(entry.name, None, Ok(points), entry.results.headlines(&rows), &rows, dir));
    }
    // Planned experiments no shard reached: said in the summary as not run.
    for e in folder.experiments.iter().filter(|e| !groups.contains_key(&e.name)) {
        if let Ok(entry) = registry::find(&e.name) {
            let why = format!("no shard reached it: {}", e.counts());
            sections.push(Section::new(entry.name, None, Err(why), Vec::new(), &[], dir));
        }
    }
    for path in crate::report::roofline::write(dir, &registry::roofline_roles())? {
        step(&file_name(&path))?;
        let _ = writeln!(text, "{}", path.display());
    }
    // The merged run's summary, as `suite run` writes for an unsharded one (its seconds are the shards').
    if let Some(run) = &run {
        let path = dir.join(summary::file_name(None));
        let markdown = summary::markdown(&run.device, "merged shards", &folder, &sections, None);
        summary::write(&path, &(markdown + &summary::roofline_note(dir)))?;
        step(&file_name(&path))?;
        let _ = writeln!(text, "{}", path.display());
        // Last: the record that makes the merged files the folder's (status reads it).
        owner.record_merge(&run.device, record)?;
    }
    let _ = writeln!(text, "{}", folder.line());
    emit(&text);
    Ok(ExitCode::SUCCESS)
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::occupancy_calculator::tests::h100;
    use crate::report::csv::{header, Context, Row, Status};
    use crate::report::run_json::{Fingerprint, Invocation, PlannedExperiment};

    /// A sharded folder of smoke over `count` shards planning `points` points, whose shards hold the points below
    /// `upto`, recorded as `suite run --shard` records them.
    fn shards(dir: &Path, count: usize, points: usize, upto: usize) {
        let results = registry::find("smoke").unwrap().results;
        let columns = header(results.param_columns(), results.metric().column);
        for index in 0..count {
            let shard = crate::options::Shard { index, count };
            let planned = PlannedExperiment {
                name: "smoke".into(),
                sweep_points: points,
                points: merge::shard_points(points, index, count),
            };
            let mut folder = ResultsFolder::take(dir, Some(shard), "suite run", Wait::No).unwrap();
            folder.record_plan(&h100(), experiments::plan_record(dir, Some(shard), vec![planned])).unwrap();
            let mut invocation = Invocation::now(serde_json::json!({}), Some(shard.to_string()));
            invocation.experiment = "smoke".into();
            invocation.fingerprint = Some(Fingerprint::new(&serde_json::json!({}), &["smoke"], &[], &h100(), &columns));
            let context = Context {
                experiment: "smoke".into(),
                platform: "nvidia".into(),
                device: "d".into(),
                arch: "sm_90".into(),
                wave_size: 32,
            };
            let mut writer = folder.begin(&h100(), invocation, context, &columns, true).unwrap();
            for point in (index..upto).step_by(count) {
                let key = format!("p{point}");
                if writer.recorded(&key).is_none() {
                    writer.row(&invalid_row(results.param_columns().len(), &key)).unwrap();
                }
            }
        }
    }

    fn invalid_row(params: usize, key: &str) -> Row {
        Row::unmeasured(key, vec!["1".into(); params], Status::Invalid, "not measured (merge test)")
    }

    /// The files a whole merge puts in place, in order.
    fn steps_of_a_whole_merge(dir: &Path, partial: bool) -> Vec<String> {
        let copy = tempfile::tempdir().unwrap();
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), copy.path().join(entry.file_name())).unwrap();
        }
        let mut steps = Vec::new();
        merge_with(copy.path(), partial, Wait::No, &mut |s| {
            steps.push(s.to_string());
            Ok(())
        })
        .unwrap();
        steps
    }

    /// Issue 31, item 1: a merge stopped at any instant (after any of its files is in place) leaves the folder
    /// saying `merge incomplete: run suite merge DIR`, never complete over a mix of old and new files, both for a
    /// first merge and for the merge of a continuation whose shards gained rows; the next merge completes it.
    #[test]
    fn a_merge_stopped_after_any_file_says_merge_incomplete_and_the_next_merge_completes_it() {
        let template = tempfile::tempdir().unwrap();
        // A run stopped early (4 of 8 points), merged partially as node.sbatch does; then continued: its shards now
        // hold every point, and its merge is due.
        shards(template.path(), 2, 8, 4);
        merge(template.path(), true, Wait::No).unwrap();
        let before = status::read(template.path()).unwrap();
        assert!(before.line().starts_with("incomplete: smoke 4 of 8 points"), "{}", before.line());
        shards(template.path(), 2, 8, 8);
        let due = status::read(template.path()).unwrap();
        assert!(!due.complete(), "the shards gained rows the merged CSV lacks: {}", due.line());
        assert!(due.line().starts_with("merge incomplete: run suite merge"), "{}", due.line());
        assert!(due.line().contains("smoke.csv holds 4 rows of an earlier merge; its shards hold 8 rows now"));
        let steps = steps_of_a_whole_merge(template.path(), false);
        assert!(steps.len() >= 2 && steps[0] == "smoke.csv" && steps.last().unwrap() == "summary.md", "{steps:?}");
        for (k, stopped_after) in steps.iter().enumerate() {
            let dir = tempfile::tempdir().unwrap();
            for entry in std::fs::read_dir(template.path()).unwrap() {
                let entry = entry.unwrap();
                std::fs::copy(entry.path(), dir.path().join(entry.file_name())).unwrap();
            }
            let mut done = 0;
            let stopped = merge_with(dir.path(), false, Wait::No, &mut |_| {
                done += 1;
                if done > k {
                    Err(Error::Options("stopped (test)".into()))
                } else {
                    Ok(())
                }
            });
            assert!(stopped.is_err(), "after {stopped_after}");
            let status = status::read(dir.path()).unwrap();
            assert!(!status.complete(), "stopped after {stopped_after}: {}", status.line());
            let expected = format!("merge incomplete: run suite merge {}", dir.path().display());
            assert!(status.line().starts_with(&expected), "stopped after {stopped_after}: {}", status.line());
            merge(dir.path(), false, Wait::No).unwrap();
            let status = status::read(dir.path()).unwrap();
            assert!(status.complete(), "{}", status.line());
            let rows = crate::report::csv::read_rows(&dir.path().join("smoke.csv")).unwrap();
            assert_eq!(rows.len(), 8);
        }
    }
}
