//! The counter pass's child (`suite run ... --counters-child PLAN`, a hidden flag): the suite itself under the
//! profiler, rebuilding the sweeps of the invocation that started it (it gets the same arguments) and launching the
//! planned points once each between markers. It writes nothing into the results folder: only one line per planned
//! point into the plan's outcomes file, saying whether it was profiled and why not.
//!
//! Per point, as the runner does before timing: prepare, launch once and verify (unprofiled: that launch records
//! timelines and warms what the runner's warm-up warms). Then the profiled range: open it (CUDA's
//! `cuProfilerStart`, which `ncu --profile-from-start off` waits for), launch the marker that opens the point, the
//! case once (a launch like a timed one), the closing marker where the profiler needs one, synchronise, close the
//! range.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use super::counter_pass::{outcomes_path, read_plan, Outcome, Plan};
use super::Error;
use crate::cli::Cli;
use crate::code_objects::{EMPTY_KERNEL, LAUNCH_SOURCE};
use crate::counters::markers;
use crate::device::{Kernel, LaunchConfig};
use crate::experiments::{Experiment, Point, RunContext};
use crate::gpu::Gpu;

/// Runs the child: every point of `plan` among `experiments`' points, profiled once. Exits 0 when it went through
/// the plan (points it could not profile are outcomes, not failures), 1 when it could not start (no GPU, no plan).
pub(super) fn child(cli: &Cli, experiments: &[Box<dyn Experiment>], plan_path: &Path) -> Result<ExitCode, Error> {
    let plan = read_plan(plan_path)?;
    let gpu = super::open_gpu(cli)?;
    let marker = gpu.kernel(LAUNCH_SOURCE, EMPTY_KERNEL)?;
    let index: HashMap<(&str, &str), usize> =
        plan.points.iter().enumerate().map(|(i, p)| ((p.experiment.as_str(), p.key.as_str()), i)).collect();
    let path = outcomes_path(plan_path);
    // In the results folder: never through a link planted under the name, nor into another user's file.
    let _ = std::fs::remove_file(&path);
    let mut outcomes = crate::safe_fs::open_append(&path).map_err(|source| crate::counters::Error::Io {
        action: "cannot create",
        path: path.clone(),
        source,
    })?;
    let mut reached = vec![false; plan.points.len()];
    let mut record = |outcome: Outcome| {
        if let Ok(line) = serde_json::to_string(&outcome) {
            // A lost line only loses the reason a point was not profiled; the parent says it is missing anyway.
            let _ = writeln!(outcomes, "{line}");
        }
        if !outcome.profiled {
            eprintln!("counters child: point {}: not profiled: {}", outcome.index, outcome.message);
        }
    };
    for exp in experiments {
        if !plan.points.iter().any(|p| p.experiment == exp.name()) {
            continue;
        }
        // One context per experiment, as the runner makes: consecutive points share inputs the same way.
        let ctx = RunContext::new(&gpu, None);
        for point in exp.points(&ctx) {
            let Some(&i) = index.get(&(exp.name(), point.key.as_str())) else { continue };
            reached[i] = true;
            let result = profile(&ctx, exp.as_ref(), &point, &marker, i, &plan);
            record(Outcome { index: i, profiled: result.is_ok(), message: result.err().unwrap_or_default() });
        }
    }
    for (i, seen) in reached.iter().enumerate() {
        if !seen {
            record(Outcome {
                index: i,
                profiled: false,
                message: format!(
                    "{} is not among the points the child rebuilt from the same arguments (a sweep that depends on \
                     something other than its options and the device?)",
                    plan.points[i].key
                ),
            });
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One point: prepared, verified, then launched once inside the profiled range between its markers.
fn profile(
    ctx: &RunContext,
    exp: &dyn Experiment,
    point: &Point,
    marker: &Kernel,
    index: usize,
    plan: &Plan,
) -> Result<(), String> {
    let gpu: &Gpu = ctx.gpu;
    let dev = gpu.device.as_ref();
    let mut case = exp.prepare(ctx, point).map_err(|e| format!("could not prepare it: {e}"))?;
    case.launch().map_err(|e| format!("its first launch failed: {e}"))?;
    dev.synchronize().map_err(|e| e.to_string())?;
    let check = case.verify().map_err(|e| format!("could not verify it: {e}"))?;
    if !check.passed() {
        return Err(format!("it did not verify: {}", check.summary()));
    }
    let grid =
        |groups: u64| u32::try_from(groups).map_err(|_| format!("point {index} is past the markers' grid limit"));
    let (start, end) = (grid(markers::start_grid(index))?, grid(markers::end_grid(index))?);
    dev.profiler_range(true).map_err(|e| e.to_string())?;
    let profiled = (|| {
        dev.launch(marker, &LaunchConfig::linear(start, 1), &[])?;
        case.launch()?;
        if plan.end_markers {
            dev.launch(marker, &LaunchConfig::linear(end, 1), &[])?;
        }
        dev.synchronize()
    })();
    // The range is closed whatever happened, so a failed point does not leave the next one's preparation profiled.
    let closed = dev.profiler_range(false);
    profiled.map_err(|e| format!("its profiled launch failed: {e}"))?;
    closed.map_err(|e| e.to_string())
}
