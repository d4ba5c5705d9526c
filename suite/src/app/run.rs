//! `suite run`: one experiment with its own flags, or every experiment's quick preset (or `--full` sweep), measured
//! into one results folder; or, with `--dry-run`, only planned for a part that need not be present.
//!
//! A measuring run takes its results folder first ([`ResultsFolder`]: the folder's claim and locks), then plans
//! every experiment it will run and records the plan in `run.json` through it (which also refuses a folder written with another layout), and
//! only then measures: so a second writer, or a writer of the wrong layout, is refused before anything is measured,
//! and a run stopped before its end is known to be incomplete by every reader.

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use super::{error_text, Error};
use crate::cli::{Cli, RunAll, RunArgs, RunCommand};
use crate::experiments::compile_estimate::CompilePlan;
use crate::experiments::estimate::{seconds_text, RunEstimate};
use crate::experiments::{self, registry, Experiment, Planned, RunOptions, Shard};
use crate::gpu::Gpu;
use crate::options;
use crate::report::folder::ResultsFolder;
use crate::report::lock::{FolderLock, Wait};
use crate::report::run_json::{self, Layout, Plan, PlannedExperiment};
use crate::report::summary::{self, Section};

/// What `suite run` was asked to run.
struct Selection {
    /// The experiments, in the order they run.
    experiments: Vec<Box<dyn Experiment>>,
    /// `quick preset` or `full sweeps` when every experiment runs (the run then writes `summary.md`); `None` for one
    /// experiment.
    preset: Option<&'static str>,
}

/// `suite run ...`.
pub(super) fn run(cli: &Cli, all: &RunAll) -> Result<ExitCode, Error> {
    let (selection, args) = select(all)?;
    check_args(args)?;
    if let Some(plan) = &args.counters_child {
        return super::counter_child::child(cli, &selection.experiments, plan);
    }
    if args.dry_run {
        return dry_run(cli, selection, args);
    }
    if args.part.is_some() {
        return Err(Error::Options("--part names the part a --dry-run plans for: add --dry-run".into()));
    }
    measure(cli, selection, args)
}

fn select(all: &RunAll) -> Result<(Selection, &RunArgs), Error> {
    match all {
        RunAll { experiment: Some(RunCommand { experiment, matches, run }), full, .. } => {
            if *full {
                return Err(Error::Options(format!(
                    "--full runs every experiment's complete sweep and cannot name one: `suite run {}` alone runs \
                     its complete sweep, its own flags narrow it",
                    experiment.name
                )));
            }
            Ok((Selection { experiments: vec![(experiment.sweep)(matches)?], preset: None }, run))
        }
        RunAll { experiment: None, full, run } => {
            let make = |e: &registry::Entry| if *full { (e.default)() } else { (e.quick)() };
            let experiments = registry::EXPERIMENTS.iter().map(make).collect();
            let preset = if *full { "full sweeps" } else { "quick preset" };
            Ok((Selection { experiments, preset: Some(preset) }, run))
        }
    }
}

/// Checks the shared flags' values before anything else, so a bad one fails at once (with status 2).
fn check_args(args: &RunArgs) -> Result<(), Error> {
    options::check_reps(args.reps)?;
    if args.time_budget.is_nan() || args.time_budget <= 0.0 {
        return Err(Error::Options(format!("--time-budget: {} is not a positive number of seconds", args.time_budget)));
    }
    if args.max_point_seconds.is_nan() || args.max_point_seconds <= 0.0 {
        return Err(Error::Options(format!(
            "--max-point-seconds: {} is not a positive number of seconds",
            args.max_point_seconds
        )));
    }
    if args.counters && args.shard.is_some() {
        return Err(Error::Options(
            "--counters profiles an unsharded run: the counter pass writes one counters.csv for the folder; run the \
             sweep you want counters of without --shard (one GPU), with --counters"
                .into(),
        ));
    }
    Ok(())
}

/// The runner's options from the shared flags ([`check_args`] first) for results in `out_dir`: `--out`, or the
/// default folder of the device (`results/<date>-<host>-<arch>`).
fn run_options(args: &RunArgs, gpu: &Gpu) -> RunOptions {
    RunOptions {
        max_point_s: args.max_point_seconds,
        out_dir: args.out.clone().unwrap_or_else(|| experiments::default_out_dir(gpu)),
        resume: args.resume,
        shard: args.shard,
        warmup: args.warmup,
        reps: args.reps,
        time_budget_s: args.time_budget,
        timing: args.timing,
        telemetry: !args.no_telemetry,
    }
}

/// Every point of each experiment (all shards), estimated on `gpu`: what the run plans. An experiment that cannot
/// run on this device at all (matmul with an empty default set) stops the run here, before anything is measured.
fn plan_all(
    gpu: &Gpu,
    experiments: &[Box<dyn Experiment>],
    opts: &RunOptions,
) -> Result<Vec<Vec<Planned>>, experiments::Error> {
    let whole = RunOptions { shard: None, ..opts.clone() };
    experiments.iter().map(|e| experiments::plan(gpu, e.as_ref(), &whole)).collect()
}

/// Refuses (status 2) a plan none of whose points can run: every one `invalid` (a size no device holds, a point over
/// --max-point-seconds), naming the most frequent reasons. Such a run would measure nothing and fail; a job of it
/// would wait in the queue for that.
fn some_point_runs(selection: &Selection, plans: &[Vec<Planned>]) -> Result<(), Error> {
    if plans.iter().flatten().any(|p| p.point.invalid.is_none()) {
        return Ok(());
    }
    let mut reasons: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for p in plans.iter().flatten() {
        *reasons.entry(p.point.invalid.as_deref().unwrap_or_default()).or_default() += 1;
    }
    let mut reasons: Vec<(&str, usize)> = reasons.into_iter().collect();
    reasons.sort_by_key(|r| std::cmp::Reverse(r.1));
    let names: Vec<&str> = selection.experiments.iter().map(|e| e.name()).collect();
    let listed: Vec<String> = reasons.iter().take(3).map(|(why, n)| format!("{n} x {why}")).collect();
    Err(Error::Options(format!(
        "no point of this plan can run ({}: {} points, every one invalid: {}): the run would measure nothing; change \
         the experiment's flags",
        names.join(", "),
        plans.iter().map(Vec::len).sum::<usize>(),
        listed.join("; ")
    )))
}

/// The points of `points` (a whole sweep) that `shard` runs.
fn of_shard(points: &[Planned], shard: Option<Shard>) -> impl Iterator<Item = &Planned> {
    points.iter().enumerate().filter(move |(i, _)| shard.is_none_or(|s| i % s.count == s.index)).map(|(_, p)| p)
}

/// The plan record of this process: every experiment's points (whole sweep, and this process's share).
fn plan_record(selection: &Selection, plans: &[Vec<Planned>], opts: &RunOptions) -> Plan {
    let experiments = selection
        .experiments
        .iter()
        .zip(plans)
        .map(|(e, points)| PlannedExperiment {
            name: e.name().to_string(),
            sweep_points: points.len(),
            points: of_shard(points, opts.shard).count(),
        })
        .collect();
    experiments::plan_record(&opts.out_dir, opts.shard, experiments)
}

fn measure(cli: &Cli, selection: Selection, args: &RunArgs) -> Result<ExitCode, Error> {
    let started = Instant::now();
    let gpu = super::open_gpu(cli)?;
    let opts = run_options(args, &gpu);
    let out_dir = opts.out_dir.clone();
    let wait = if args.wait { Wait::Forever } else { Wait::No };
    // Before anything else touches the folder: one job owns it (another job's tasks are refused here, before they
    // measure), and one writer at a time, refused at once (or waited for). Held until this function returns.
    let mut folder = ResultsFolder::take(&out_dir, opts.shard, "suite run", wait)?;
    let props = gpu.device.props();
    // What the kernel cache lacks, before anything is loaded (loading compiles it).
    let compiles = CompilePlan::of(&gpu, &selection.experiments);
    if compiles.seconds() > 0.0 {
        eprintln!(
            "compiles: {} not in the kernel cache: about {} (in parallel on {} cores: the sources first, the \
             specialisations when their experiment starts)",
            compiles.missing_text(),
            seconds_text(compiles.seconds()),
            compiles.threads
        );
    }
    let compiled = Instant::now();
    // Every experiment's kernel sources (and the empty kernel of the launch gap), compiled in parallel where the cache
    // lacks them, so a cold cache costs about its longest compile rather than the sum. A source that fails is left
    // out here: its experiment tries it again and reports the error when it runs.
    let mut sources: Vec<&str> = vec![crate::code_objects::LAUNCH_SOURCE];
    sources.extend(selection.experiments.iter().flat_map(|e| e.sources().iter().copied()));
    let _ = gpu.load_all(&sources);
    let compile_s = compiled.elapsed().as_secs_f64();
    let planned = Instant::now();
    // Every point of every experiment, planned before anything is measured and recorded in run.json, which
    // refuses a folder of another device or layout.
    let plans = plan_all(&gpu, &selection.experiments, &opts)?;
    some_point_runs(&selection, &plans)?;
    eprintln!(
        "phases: kernels compiled or loaded in {compile_s:.2} s, {} experiments planned in {:.2} s",
        selection.experiments.len(),
        planned.elapsed().as_secs_f64()
    );
    folder.record_plan(props, plan_record(&selection, &plans, &opts))?;
    let points_s: f64 = plans.iter().flat_map(|p| of_shard(p, opts.shard)).map(|p| p.estimate_s).sum();
    let estimate = RunEstimate::new(points_s, selection.experiments.len(), &compiles);
    let ceilings = crate::peaks::ceilings(props);
    let Some(preset) = selection.preset else {
        let exp = selection.experiments[0].as_ref();
        eprintln!(
            "{} on {} ({}, wave {}), {}",
            exp.name(),
            props.name,
            props.arch,
            props.wave_size,
            props.runtime_version
        );
        let outcome = run_one(&gpu, exp, &opts, &mut folder)?;
        eprintln!("{}: {}; results in {}", exp.name(), outcome.line(), out_dir.display());
        if args.counters {
            // The child opens the GPU anew: this process's context and its memory go first.
            let props = props.clone();
            drop(gpu);
            counters_after(&selection, &props, &out_dir, started.elapsed().as_secs_f64(), None);
        }
        return Ok(if outcome.success() { ExitCode::SUCCESS } else { ExitCode::FAILURE });
    };
    eprintln!(
        "suite run ({preset}): {} experiments on {} ({}, wave {}) into {}\nestimate: {} (each point's launches, \
         host work and compiles, from its operations and bytes at the {} ceilings: {})",
        selection.experiments.len(),
        props.name,
        props.arch,
        props.wave_size,
        out_dir.display(),
        estimate.line(),
        ceilings.part,
        ceilings.source
    );
    let summary_path = out_dir.join(summary::file_name(opts.shard));
    // Written now and after every experiment, so a run stopped midway leaves a summary that says how far it got.
    let pending = |name: &'static str| Section::new(name, None, Err("not run yet".into()), Vec::new(), &[], &out_dir);
    let mut sections: Vec<Section> = selection.experiments.iter().map(|e| pending(e.name())).collect();
    write_summary(&out_dir, &summary_path, props, preset, &sections, None)?;
    let mut success = true;
    for (i, exp) in selection.experiments.iter().enumerate() {
        let name = exp.name();
        let exp_started = Instant::now();
        let outcome = run_one(&gpu, exp.as_ref(), &opts, &mut folder);
        let seconds = exp_started.elapsed().as_secs_f64();
        let csv = out_dir.join(experiments::csv_name(name, opts.shard));
        sections[i] = match outcome {
            Ok(outcome) => {
                success &= outcome.success();
                eprintln!("{name}: {} in {seconds:.1} s", outcome.line());
                // A shard's CSV holds only its points: its headlines wait for `suite merge`.
                let (headlines, rows) = match (opts.shard, crate::report::csv::read_rows(&csv)) {
                    (None, Ok(rows)) => (exp.results().headlines(&rows), rows),
                    (None, Err(e)) => (vec![format!("cannot read {}: {e}", csv.display())], Vec::new()),
                    (Some(_), _) => (Vec::new(), Vec::new()),
                };
                Section::new(name, Some(seconds), Ok(outcome.line()), headlines, &rows, &out_dir)
            }
            // Another writer or another layout, or a row that could not be written (a full disk): nothing of this
            // run may go on. The folder stays resumable: its CSVs end at their last whole row.
            Err(e) if is_refusal(&e) || is_write_failure(&e) => {
                return Err(e.into());
            }
            Err(e) => {
                success = false;
                let text =
                    error_text(std::iter::successors(Some(&e as &(dyn std::error::Error + 'static)), |e| e.source()));
                eprintln!("{name}: could not run: {text}");
                Section::new(name, Some(seconds), Err(text), Vec::new(), &[], &out_dir)
            }
        };
        write_summary(&out_dir, &summary_path, props, preset, &sections, None)?;
        // What follows the experiment's own time (its runner and the roofline): its headlines and summary.md.
        eprintln!("{name}: phases: headlines and summary.md {:.2} s", exp_started.elapsed().as_secs_f64() - seconds);
    }
    let total = started.elapsed().as_secs_f64();
    write_summary(&out_dir, &summary_path, props, preset, &sections, Some(total))?;
    eprintln!(
        "done in {total:.1} s (estimate {}); read {} first",
        seconds_text(estimate.now_s()),
        summary_path.display()
    );
    if args.counters {
        let props = props.clone();
        drop(gpu);
        counters_after(&selection, &props, &out_dir, total, Some(&summary_path));
    }
    Ok(if success { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// `--counters`: the counter pass over what this invocation ran, into its folder, after the timed run of
/// `timed_s` seconds; then the plots that read `counters.csv` are drawn again and (with every experiment) the
/// summary gets a section. Whatever happens is a message: the exit status stays the timed run's.
fn counters_after(
    selection: &Selection,
    props: &crate::device::Props,
    out_dir: &Path,
    timed_s: f64,
    summary: Option<&Path>,
) {
    use super::counter_pass;
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            eprintln!("counters: cannot find this program to run it under the profiler ({e}); no counters");
            return;
        }
    };
    let input = counter_pass::PassInput {
        props,
        out_dir,
        experiments: selection.experiments.iter().map(|e| e.results()).collect(),
        child: (exe, counter_pass::child_args(std::env::args_os())),
        timed_s,
    };
    let outcome = counter_pass::run_pass(&input, crate::counters::locate::locate);
    if outcome.is_ok() {
        for path in counter_pass::draw(&input, &registry::roofline_roles()) {
            eprintln!("plot: {}", path.display());
        }
    }
    if let Some(path) = summary {
        if let Err(e) = counter_pass::append_summary(path, &outcome) {
            eprintln!("counters: {e}");
        }
    }
}

/// Runs one experiment into `folder` (`opts.out_dir`), then (unsharded) redraws the folder's roofline over every
/// experiment in it so far; a shard's waits for `suite merge`, as its plots do.
fn run_one(
    gpu: &Gpu,
    exp: &dyn Experiment,
    opts: &RunOptions,
    folder: &mut ResultsFolder,
) -> Result<experiments::Summary, experiments::Error> {
    let outcome = experiments::run(gpu, exp, opts, folder)?;
    if opts.shard.is_none() {
        let started = Instant::now();
        for path in crate::report::roofline::write(&opts.out_dir, &registry::roofline_roles())? {
            eprintln!("roofline: {}", path.display());
        }
        eprintln!("{}: phases: roofline redrawn in {:.2} s", exp.name(), started.elapsed().as_secs_f64());
    }
    Ok(outcome)
}

/// Whether `e` refuses the whole run (another writer, another layout or fingerprint), rather than one experiment.
fn is_refusal(e: &experiments::Error) -> bool {
    matches!(
        e,
        experiments::Error::Report(
            crate::report::Error::Locked { .. }
                | crate::report::Error::Owned { .. }
                | crate::report::Error::Layout { .. }
                | crate::report::Error::FingerprintMismatch { .. }
        )
    )
}

/// Whether `e` is a results file that could not be written (a row cut back on a full disk, say): the run stops with
/// it rather than going on to the next experiment, whose rows would not be written either.
fn is_write_failure(e: &experiments::Error) -> bool {
    matches!(
        e,
        experiments::Error::Report(crate::report::Error::RowWrite { .. } | crate::report::Error::DiskFull { .. })
    )
}

/// Writes `summary.md` (or a shard's summary): the folder's status against its plan first, then the sections.
fn write_summary(
    dir: &Path,
    path: &Path,
    props: &crate::device::Props,
    preset: &str,
    sections: &[Section],
    total_s: Option<f64>,
) -> Result<(), Error> {
    let status = crate::report::status::read(dir)?;
    let text = summary::markdown(props, preset, &status, sections, total_s) + &summary::roofline_note(dir);
    summary::write(path, &text)?;
    Ok(())
}

/// Margin of the suggested `--time` over the estimate (compiles included, with the kernel cache as the plan finds
/// it): the estimate is within 25% of the measured runs (docs/method.md's table), so x 1.5 leaves a job whose node
/// is half again as slow as the reference ones (a slower host, a busier file system) time to finish.
const TIME_FACTOR: f64 = 1.5;
/// Seconds added to the suggested `--time` for what no estimate holds: the job's start on its node, the merge.
const TIME_FIXED_S: f64 = 300.0;

/// The suggested Slurm `--time` for a task estimated at `seconds`: `seconds × 1.5 + 5 min`, rounded up to whole
/// 5 minutes, as `HH:MM:SS`.
pub fn suggested_time(seconds: f64) -> String {
    let total = (seconds.max(0.0) * TIME_FACTOR + TIME_FIXED_S) / 60.0;
    let minutes = ((total / 5.0).ceil() * 5.0) as u64;
    format!("{:02}:{:02}:00", minutes / 60, minutes % 60)
}

/// `suite run --dry-run`: the plan of the run on `--part` (unless told, the platform's default part: the MI250X GCD,
/// or the H100 SXM with `--platform nvidia`, named as assumed in the plan's first line), from its datasheet and the
/// kernels' static metadata, with no GPU: points per experiment, the estimate per task, a suggested `--time`, and
/// whether `--out` would accept the run. Exits 3 when the folder would refuse it, 2 when `--part` is of another
/// platform than `--platform`.
fn dry_run(cli: &Cli, selection: Selection, args: &RunArgs) -> Result<ExitCode, Error> {
    let platform = cli.platform.platform();
    let key = args.part.as_deref().unwrap_or(crate::planning::default_key(platform));
    let part = crate::planning::part(key)?;
    if let Some(asked) = platform.filter(|&p| p != part.profile.platform) {
        return Err(Error::Options(format!(
            "--part {key} is a part for --platform {}, not {asked}: a plan is for one platform; drop one of the two or \
             name a part for {asked}: {}",
            part.profile.platform,
            crate::planning::PARTS
                .iter()
                .filter(|p| p.profile.platform == asked)
                .map(|p| p.key)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let gpu = crate::planning::gpu(part, cli.kernels_dir.clone());
    let opts = run_options(args, &gpu);
    let props = gpu.device.props().clone();
    // What the kernel cache (or --kernels-dir) lacks, before the plan loads the sources (which compiles them).
    let compiles = CompilePlan::of(&gpu, &selection.experiments);
    // The kernels' code objects tell registers and LDS, which decide some points (and occupancy's group counts):
    // without them the plan is only approximate, and says so.
    // Each distinct error once, with the sources it stopped: a missing compiler stops them all with the same
    // several-line text, which would otherwise be printed once per source and once per reason of invalid points.
    let mut unreadable: Vec<(String, Vec<&str>)> = Vec::new();
    for exp in &selection.experiments {
        for source in exp.sources() {
            if let Err(e) = gpu.module(source) {
                let text = e.to_string();
                match unreadable.iter_mut().find(|(t, _)| *t == text) {
                    Some((_, sources)) if sources.contains(source) => {}
                    Some((_, sources)) => sources.push(source),
                    None => unreadable.push((text, vec![source])),
                }
            }
        }
    }
    // Where the node can get no code object at all (a --kernels-dir that is not there, as on a LUMI login node
    // before scripts/lumi/build.sh; or no --kernels-dir and no compiler), every point of the job would error: nothing
    // is queued (status 2).
    match &cli.kernels_dir {
        Some(dir) if !dir.is_dir() => {
            return Err(Error::Options(format!(
                "--kernels-dir {}: no such folder, so the job would load no kernel and measure nothing: build the \
                 code objects first (on LUMI: scripts/lumi/build.sh writes kernels-build/; elsewhere: suite kernels \
                 build --arch {} --out {})",
                dir.display(),
                props.arch,
                dir.display()
            )))
        }
        None => {
            if let Err(e) = crate::code_objects::KernelStore::new(None).compiler(props.platform) {
                return Err(Error::Options(format!(
                    "no code objects can be had for {}: no --kernels-dir was given and {e}; build them where a \
                     compiler is (suite kernels build --arch {} --out DIR) and pass --kernels-dir DIR",
                    props.arch, props.arch
                )));
            }
        }
        Some(_) => {}
    }
    let without_unreadable = |why: &str| {
        unreadable.iter().fold(why.to_string(), |why, (text, _)| {
            why.replace(text.as_str(), "its code object could not be read (the warning below says why)")
        })
    };
    let plans = plan_all(&gpu, &selection.experiments, &opts)?;
    some_point_runs(&selection, &plans)?;
    let ceilings = crate::peaks::ceilings(&props);
    let tasks = opts.shard.map_or(1, |s| s.count);
    let what = selection.preset.map_or_else(|| selection.experiments[0].name().to_string(), str::to_string);
    let assumed = if args.part.is_some() { "" } else { "; assumed, as no --part was given: --part names another" };
    let mut text = format!(
        "plan: {what}, {} experiment{} on {} ({}, wave {}{assumed}), {tasks} task{}; from the part's datasheet and \
         the kernels' code objects: nothing runs\n",
        selection.experiments.len(),
        if selection.experiments.len() == 1 { "" } else { "s" },
        ceilings.part,
        props.arch,
        props.wave_size,
        if tasks == 1 { "" } else { "s" },
    );
    let mut task_s = vec![0.0; tasks];
    let mut total_points = 0;
    let mut reasons: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for (exp, points) in selection.experiments.iter().zip(&plans) {
        let invalid = points.iter().filter(|p| p.point.invalid.is_some()).count();
        let seconds: f64 = points.iter().map(|p| p.estimate_s).sum();
        for (i, p) in points.iter().enumerate() {
            task_s[i % tasks] += p.estimate_s;
            if let Some(why) = &p.point.invalid {
                *reasons.entry(without_unreadable(why)).or_default() += 1;
            }
        }
        total_points += points.len();
        let invalid = if invalid > 0 { format!(" ({invalid} invalid: not run)") } else { String::new() };
        text.push_str(&format!(
            "  {:<10} {:>5} points{invalid:<24} estimate {}\n",
            exp.name(),
            points.len(),
            seconds_text(seconds)
        ));
    }
    let slowest = task_s.iter().copied().fold(0.0, f64::max);
    let all: f64 = task_s.iter().sum();
    text.push_str(&format!(
        "  {:<10} {total_points:>5} points{:<24} estimate {} of points",
        "total",
        "",
        seconds_text(all)
    ));
    if tasks > 1 {
        text.push_str(&format!("; the slowest of the {tasks} tasks about {}", seconds_text(slowest)));
    }
    text.push('\n');
    let run = RunEstimate::new(slowest, selection.experiments.len(), &compiles);
    // Points the plan cannot count (a cubin kernel with no register count recorded) are not in the estimate.
    let uncounted = plans.iter().flatten().filter(|p| p.point.invalid.as_deref().is_some_and(needs_the_node)).count();
    if !reasons.is_empty() {
        let mut reasons: Vec<(String, usize)> = reasons.into_iter().collect();
        reasons.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        text.push_str("invalid points, by reason (they are rows, not measured):\n");
        for (why, n) in reasons.iter().take(5) {
            text.push_str(&format!("  {n} x {why}\n"));
        }
    }
    text.push_str(&format!(
        "estimate{}: {}\n\
         (each point's launches as the runner times them, from its operations and bytes at the {} ceilings ({}); its \
         host work; each experiment's setup and plots; the compiles of what the kernel cache lacks now)\n\
         suggested --time={} (that estimate, {}, x {TIME_FACTOR} + {} min for the job's start and the merge, rounded \
         up to 5 min)\n",
        if tasks > 1 { " of the slowest task" } else { "" },
        run.line()
            + &if uncounted > 0 {
                format!(
                    "; without the {uncounted} points whose kernels' registers only the driver knows (invalid above: \
                     a run on the node plans and counts them)"
                )
            } else {
                String::new()
            },
        ceilings.part,
        ceilings.source,
        suggested_time(run.now_s()),
        seconds_text(run.now_s()),
        TIME_FIXED_S / 60.0,
    ));
    if !unreadable.is_empty() {
        let sources: Vec<&str> = unreadable.iter().flat_map(|(_, s)| s.iter().copied()).collect();
        text.push_str(&format!(
            "warning: this plan is approximate: the code objects of {} could not be read, so the points that depend \
             on their registers and LDS are counted as invalid above and left out of the estimate (occupancy's \
             group counts depend on them too). Build them first (on LUMI: scripts/lumi/build.sh; elsewhere: suite \
             kernels build --arch {}):\n",
            sources.join(", "),
            props.arch
        ));
        for (why, sources) in &unreadable {
            let why = why.replace('\n', "\n    ");
            let which = if unreadable.len() > 1 { format!("{}: ", sources.join(", ")) } else { String::new() };
            text.push_str(&format!("  {which}{why}\n"));
        }
    }
    if args.counters {
        text.push_str(&super::counter_pass::dry_run_line(props.platform));
    }
    let mut refused = None;
    let out = &opts.out_dir;
    match folder_verdict(out, opts.shard, &selection, args, &props) {
        Ok(line) => text.push_str(&format!("results folder {}: {line}\n", out.display())),
        Err(e) => refused = Some(e),
    }
    super::emit(&text);
    match refused {
        Some(e) => Err(e),
        None => Ok(ExitCode::SUCCESS),
    }
}

/// Whether a point is invalid in a plan only because the plan cannot know what the node's driver would tell
/// ([`crate::device::Error::PlanningNeedsDriver`]): it runs on the node.
fn needs_the_node(why: &str) -> bool {
    why.contains("is known only to the NVIDIA driver")
}

/// What a run of `shard`'s layout (the experiments of `selection`, with `args`, on `props`) would find in `dir`: a
/// line when it may write there, or the refusal it would meet: `dir` (or, where it does not exist yet, its nearest
/// existing parent) cannot be written; another job owns it or another writer holds it; it was written with another
/// layout; it holds rows of these experiments and this is no `--resume`; or, resumed, it holds another device's or
/// another preset's run of them.
fn folder_verdict(
    dir: &Path,
    shard: Option<Shard>,
    selection: &Selection,
    args: &RunArgs,
    props: &crate::device::Props,
) -> Result<String, Error> {
    probe_writable(dir)?;
    if !dir.exists() {
        return Ok("new".into());
    }
    if let Some(owner) = crate::report::lock::other_owner(dir) {
        return Err(crate::report::Error::Owned {
            dir: dir.to_path_buf(),
            owner: crate::report::printable(&owner.describe_owner()),
            record: crate::report::lock::owner_path(dir),
        }
        .into());
    }
    let holders = FolderLock::holders(dir);
    if !holders.is_empty() {
        return Err(crate::report::Error::Locked {
            guarded: dir.to_path_buf(),
            lock: crate::report::lock::folder_lock_path(dir),
            holder: crate::report::printable(&holders.iter().map(|h| h.describe()).collect::<Vec<_>>().join("; ")),
        }
        .into());
    }
    run_json::check_layout(dir, None, Layout::of(shard))?;
    if let Some(run) = run_json::read(dir)? {
        same_run(dir, &run, selection, args, props)?;
    }
    let status = crate::report::status::read(dir)?;
    Ok(format!("accepts this run; it holds {}", status.line()))
}

/// Refuses (status 3) a results folder this user cannot write: a probe file is created in `dir`, or in its nearest
/// existing parent where it does not exist yet, and removed. A job into such a folder would wait in the queue to die
/// at its first write.
fn probe_writable(dir: &Path) -> Result<(), Error> {
    let existing = dir.ancestors().find(|p| p.is_dir()).unwrap_or(Path::new("."));
    let existing = if existing.as_os_str().is_empty() { Path::new(".") } else { existing };
    let probe = existing.join(format!(".suite-write-probe-{}", std::process::id()));
    let created = std::fs::OpenOptions::new().write(true).create_new(true).open(&probe);
    match created {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(source) => {
            Err(crate::report::Error::Unwritable { dir: dir.to_path_buf(), probed: existing.into(), source }.into())
        }
    }
}

/// For a folder that already holds a run (`run`): this run must be its continuation. Without `--resume` a folder
/// holding rows of these experiments refuses it (as the run would); resumed, it must be the same device (platform
/// and architecture: the plan's part stands for the node's device) and the same preset (each experiment's options
/// as the recorded command line gives them, worked out here on the same part, so only the arguments can differ).
fn same_run(
    dir: &Path,
    run: &run_json::RunJson,
    selection: &Selection,
    args: &RunArgs,
    props: &crate::device::Props,
) -> Result<(), Error> {
    let recorded: Vec<&run_json::Invocation> = run.invocations.iter().collect();
    let names: Vec<&str> = selection.experiments.iter().map(|e| e.name()).collect();
    if !args.resume {
        if let Some(i) = recorded.iter().find(|i| names.contains(&i.experiment.as_str())) {
            let csv = dir.join(experiments::csv_name(&i.experiment, args.shard));
            return Err(crate::report::Error::Exists { path: csv }.into());
        }
        return Ok(());
    }
    if run.device.platform != props.platform || run.device.arch != props.arch {
        return Err(crate::report::Error::OtherDevice {
            path: run_json::path(dir),
            held: format!("{} ({})", run.device.name, run.device.arch),
            this: format!("{} ({})", props.name, props.arch),
            planned: true,
        }
        .into());
    }
    for exp in &selection.experiments {
        let Some(earlier) = recorded.iter().rev().find(|i| i.experiment == exp.name()) else { continue };
        let Some((options, timing)) = options_of(&earlier.command, exp.name(), props) else { continue };
        let ours = (exp.options(props), (args.reps, args.warmup, args.time_budget.to_string(), args.timing));
        if (options.clone(), timing.clone()) != ours {
            let printable = |v: &serde_json::Value, t: &(u32, u32, String, crate::device::Timing)| {
                format!("{v}, reps {}, warmup {}, time budget {} s, timing {:?}", t.0, t.1, t.2, t.3)
            };
            return Err(crate::report::Error::FingerprintMismatch {
                path: run_json::path(dir),
                experiment: exp.name().to_string(),
                diff: Box::new(crate::report::FieldDifference {
                    field: "options (another preset or other flags)",
                    old: format!(
                        "`{}`: {}",
                        crate::report::printable(&earlier.command.join(" ")),
                        printable(&options, &timing)
                    ),
                    new: printable(&ours.0, &ours.1),
                }),
            }
            .into());
        }
    }
    Ok(())
}

/// The options of experiment `name` and the timing flags as the recorded command line `command` gives them, on
/// `props`; `None` where the command does not parse with this suite (then nothing can be told from it).
fn options_of(
    command: &[String],
    name: &str,
    props: &crate::device::Props,
) -> Option<(serde_json::Value, (u32, u32, String, crate::device::Timing))> {
    use clap::Parser as _;
    let cli = Cli::try_parse_from(command).ok()?;
    let crate::cli::Command::Run(all) = &cli.command else { return None };
    let (selection, args) = select(all).ok()?;
    let exp = selection.experiments.iter().find(|e| e.name() == name)?;
    Some((exp.options(props), (args.reps, args.warmup, args.time_budget.to_string(), args.timing)))
}
