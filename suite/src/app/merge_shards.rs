//! `suite merge DIR`: the shards of a sharded run joined into one CSV per experiment, its plots, roofline and
//! `summary.md`. The merge is strict: every planned point must have a row (the plan in `run.json` says how many
//! each shard holds), or `--partial` must say that an incomplete run is to be merged, and then the merge says how
//! incomplete it is. A complete run never reads as partial.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use super::{emit, Error};
use crate::experiments::{self, registry};
use crate::report::lock::{FolderLock, Wait};
use crate::report::summary::{self, Section};
use crate::report::{merge, run_json, status};

/// `suite merge DIR [--partial] [--wait]`.
pub(super) fn merge(dir: &Path, partial: bool, wait: Wait) -> Result<ExitCode, Error> {
    // One writer of the folder at a time: refused while the shards of its run are being written (each holds the
    // folder's lock shared) or while another merge runs.
    let _lock = FolderLock::take(dir, None, "suite merge", wait)?;
    let groups = merge::shard_files(dir)?;
    if groups.is_empty() {
        return Err(Error::Options(format!(
            "{}: no <experiment>.shard-<i>-of-<n>.csv files to merge (`suite status {}` says what it holds)",
            dir.display(),
            dir.display()
        )));
    }
    let run = run_json::read(dir)?;
    let folder = status::read(dir)?;
    // Every set is checked before anything is written.
    let mut gaps = Vec::new();
    for (experiment, shards) in &groups {
        let planned = folder.experiment(experiment).and_then(|e| e.planned);
        gaps.push(merge::check(experiment, shards, run.as_ref(), &run_json::path(dir), partial, planned)?);
    }
    if folder.plan_recorded && !folder.complete() && !partial {
        return Err(crate::report::Error::Incomplete { dir: dir.to_path_buf(), status: folder.line() }.into());
    }
    let mut text = String::new();
    let mut sections = Vec::new();
    for ((experiment, shards), gaps) in groups.iter().zip(gaps) {
        let out = dir.join(experiments::csv_name(experiment, None));
        let count = merge::merge(shards, &out)?;
        let _ = writeln!(text, "{}: {count} rows from {} shards", out.display(), shards.len());
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
        for path in experiments::render_plots(entry.results, &out, dir)? {
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
        let _ = writeln!(text, "{}", path.display());
    }
    // The merged run's summary, as `suite run` writes for an unsharded one (its seconds are the shards').
    if let Some(run) = &run {
        let path = dir.join(summary::file_name(None));
        let markdown = summary::markdown(&run.device, "merged shards", &folder, &sections, None);
        summary::write(&path, &(markdown + &summary::roofline_note(dir)))?;
        let _ = writeln!(text, "{}", path.display());
    }
    let _ = writeln!(text, "{}", folder.line());
    emit(&text);
    Ok(ExitCode::SUCCESS)
}
