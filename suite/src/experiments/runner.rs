//! The one runner every experiment shares: skip what a resumed CSV holds, estimate, verify before timing, time
//! with [`super::timing`], append each row as it finishes, and write `run.json` and the plots. It makes the run's
//! [`RunContext`] and passes it to the experiment; what the run means for the folder as a whole (its roofline, its
//! summary) is the caller's.

use std::path::{Path, PathBuf};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};

use super::estimate;
use super::point_telemetry::{PointClocks, PointTelemetry};
use super::timing::{time_case_within, timing_record, TimedSection};
use super::{Error, Experiment, Point, Results, RunContext, Shard};
use crate::gpu::Gpu;
use crate::options::RunOptions;
use crate::phases::{Guard, Phase, PhaseClock, PhaseRecord};
use crate::report::csv::{header, read_rows, Context, Row, Status};
use crate::report::folder::ResultsFolder;
use crate::report::plot::render_png;
use crate::report::run_json::{Fingerprint, Invocation};
use crate::report::throttling::ring_flagged;

/// Counts of what became of a run's points.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Verified and timed.
    pub ok: usize,
    /// Ran but did not verify.
    pub fail: usize,
    /// Could not run.
    pub error: usize,
    /// Not valid points.
    pub invalid: usize,
    /// Already in a resumed CSV (any status; not counted above).
    pub skipped: usize,
    /// Of the skipped points, those recorded `ok`.
    pub skipped_ok: usize,
    /// Of the skipped points, those recorded `fail` or `error`.
    pub skipped_failed: usize,
}

impl Summary {
    /// The counts of `rows` (a CSV's, as read by [`crate::report::csv::read_rows`]) by status, as a run that wrote
    /// them all would count them: what `suite merge` says of a merged CSV.
    pub fn of_rows(rows: &[std::collections::BTreeMap<String, String>]) -> Summary {
        let count = |s: &str| rows.iter().filter(|r| r.get("status").is_some_and(|v| v == s)).count();
        Summary {
            ok: count("ok"),
            fail: count("fail"),
            error: count("error"),
            invalid: count("invalid"),
            ..Summary::default()
        }
    }

    /// What became of the points, in one line: `3 ok, 0 failed verification, 0 errors, 1 invalid`, and the points a
    /// resumed run found in its CSV where there were any. The one wording of every command.
    pub fn line(&self) -> String {
        let mut line = format!(
            "{} ok, {} failed verification, {} errors, {} invalid",
            self.ok, self.fail, self.error, self.invalid
        );
        if self.skipped > 0 {
            line.push_str(&format!(
                ", {} already in the CSV ({} of them failed or errored)",
                self.skipped, self.skipped_failed
            ));
        }
        line
    }

    /// Whether the run succeeded: no point failed verification or errored (in this run or, for a resumed run, in
    /// the rows it kept), and something was measured, unless the sweep had no points at all. A run in which every
    /// point is `invalid` or `error` measured nothing and fails.
    pub fn success(&self) -> bool {
        let points = self.ok + self.fail + self.error + self.invalid + self.skipped;
        self.fail + self.error + self.skipped_failed == 0 && (self.ok + self.skipped_ok > 0 || points == 0)
    }
}

pub use crate::report::folder::csv_name;

/// The default results folder: `results/<date>-<host>-<arch>`.
pub fn default_out_dir(gpu: &Gpu) -> PathBuf {
    let date = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let host = gethostname::gethostname().to_string_lossy().into_owned();
    let host: String = host.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    PathBuf::from("results").join(format!("{}-{}-{}", &date[..10], host, gpu.device.props().arch))
}

/// Runs an experiment's sweep on `gpu` into `folder` (the results folder `opts.out_dir`, of `opts.shard`, held by
/// this process), which writes its rows to `<name>.csv` and the context to `run.json`, and (unsharded) its derived
/// tables and plots.
pub fn run(gpu: &Gpu, exp: &dyn Experiment, opts: &RunOptions, folder: &mut ResultsFolder) -> Result<Summary, Error> {
    assert!(
        folder.dir() == opts.out_dir && folder.shard() == opts.shard,
        "the runner writes into the folder its options name: {} (shard {:?}) was given for {} (shard {:?})",
        folder.dir().display(),
        folder.shard(),
        opts.out_dir.display(),
        opts.shard
    );
    let started = Instant::now();
    // The run's context, with its own phase clock: what an earlier experiment left is not in it.
    let ctx = RunContext::new(gpu, Some(folder.dir()));
    let clock = &ctx.phases;
    // The sweep as it runs on this device (its code objects read where they decide it: the plan phase).
    let settled = clock.scope(Phase::Plan, || exp.on_device(gpu))?;
    let exp = settled.as_deref().unwrap_or(exp);
    let results = exp.results();
    let props = gpu.device.props();
    // Compiled in parallel where the cache lacks them; loaded in order.
    clock.scope(Phase::Compile, || gpu.load_all(exp.sources()))?;
    let setup = clock.enter(Phase::Setup);
    // Everything that makes rows comparable goes into the fingerprint; the shard does not (shards share it).
    let options = serde_json::json!({
        exp.name(): exp.options(props),
        "warmup": opts.warmup,
        "reps": opts.reps,
        "time_budget_s": opts.time_budget_s,
        "timing": opts.timing,
        "max_point_s": opts.max_point_s,
        "metric": results.metric(),
    });
    // Its shard is the results folder's to record ([`ResultsFolder::begin`]).
    let mut invocation = Invocation::now(options.clone(), None);
    invocation.experiment = exp.name().to_string();
    invocation.compilers = gpu.compiler_records();
    invocation.blas = match gpu.device.blas() {
        Ok(path) => path,
        Err(e) => e.to_string(),
    };
    invocation.timing = Some(timing_record(gpu, opts.timing));
    // Opened once per experiment: its source and limits go into run.json with a reading now, before any point.
    let mut telemetry = PointTelemetry::open(gpu.device.as_ref(), opts.telemetry);
    let telemetry_record = telemetry.record();
    eprintln!("{}: clocks and power: {}", exp.name(), telemetry_record.source);
    invocation.telemetry = Some(telemetry_record);
    let context = Context {
        experiment: exp.name().to_string(),
        platform: props.platform.name().to_string(),
        device: props.name.clone(),
        arch: props.arch.to_string(),
        wave_size: props.wave_size.0,
    };
    let columns = header(results.param_columns(), results.metric().column);
    invocation.fingerprint = Some(Fingerprint::new(&options, exp.sources(), &invocation.compilers, props, &columns));
    // The folder's owner writes the experiment from here on: the CSV, phases.csv and run.json; it is told of each
    // row and of the end.
    let mut writer = folder.begin(props, invocation, context, &columns, opts.resume)?;
    drop(setup);

    let points = clock.scope(Phase::Plan, || plan_in(&ctx, exp, opts));
    let to_run: Vec<&Planned> = points.iter().filter(|p| writer.recorded(&p.point.key).is_none()).collect();
    let seconds: f64 = to_run.iter().map(|p| p.estimate_s).sum();
    let skipped = points.len() - to_run.len();
    eprintln!(
        "{}: {} points{}, estimate {} ({} over --max-point-seconds {} become invalid rows)",
        exp.name(),
        to_run.len(),
        if skipped > 0 { format!(" to run ({skipped} already in the CSV)") } else { String::new() },
        estimate::seconds_text(seconds),
        to_run.iter().filter(|p| p.over_limit).count(),
        opts.max_point_s
    );
    let points: Vec<Point> = points.into_iter().map(|p| p.point).collect();
    let bar = ProgressBar::new(points.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {elapsed_precise} {wide_msg}")
            .expect("the progress template is valid")
            .progress_chars("=> "),
    );
    bar.set_prefix(exp.name());
    let mut summary = Summary::default();
    let mut record = PhaseRecord::default();
    record.outside_points_s.add_all(&clock.take());
    for point in &points {
        if let Some(status) = writer.recorded(&point.key) {
            summary.skipped += 1;
            match status {
                Status::Ok => summary.skipped_ok += 1,
                Status::Fail | Status::Error => summary.skipped_failed += 1,
                Status::Invalid => {}
            }
            bar.inc(1);
            continue;
        }
        let point_started = Instant::now();
        bar.set_message(point.key.clone());
        let row = measure_point(&ctx, exp, point, opts, &mut telemetry);
        match row.status {
            Status::Ok => summary.ok += 1,
            Status::Fail => summary.fail += 1,
            Status::Error => summary.error += 1,
            Status::Invalid => summary.invalid += 1,
        }
        clock.scope(Phase::Record, || -> Result<(), Error> {
            writer.row(&row)?;
            let line = describe(results, &row);
            if bar.is_hidden() {
                eprintln!("{line}");
            } else {
                bar.println(line);
            }
            bar.inc(1);
            Ok(())
        })?;
        let mut times = clock.take();
        let wall_s = point_started.elapsed().as_secs_f64();
        // The phases row itself is written after its times were taken: its cost goes to the totals' record phase
        // (and the wall time of the points), not to its own row.
        let written = Instant::now();
        writer.point_phases(&point.key, row.status, wall_s, &times)?;
        let write_s = written.elapsed().as_secs_f64();
        times.add(Phase::Record, write_s);
        record.add_point(&times, wall_s + write_s);
    }
    bar.finish_and_clear();
    // The reading after the last point, before the plots; it goes into run.json with the phases, at the end.
    let telemetry_end = clock.scope(Phase::Setup, || telemetry.reading());
    // Plots are drawn from the whole CSV, so a resumed run plots the earlier rows too; a shard's CSV holds only its
    // points, so shards are plotted after `suite merge`.
    if opts.shard.is_none() {
        let _plots = clock.enter(Phase::Plots);
        for path in render_plots(results, &writer.csv_path(), writer.dir())? {
            eprintln!("plot: {}", path.display());
        }
    }
    record.outside_points_s.add_all(&clock.take());
    record.wall_s = started.elapsed().as_secs_f64();
    eprintln!("{}", record.line(exp.name()));
    writer.end(telemetry_end, record)?;
    Ok(summary)
}

/// The environment variable a job script sets to the command that continues it (its script, arguments, folder and
/// geometry), recorded with the plan so that every reader of the folder can print it.
pub const CONTINUE_VARIABLE: &str = "SUITE_CONTINUE_COMMAND";

/// The command that continues this run where it stops: the job script's, when it says (`SUITE_CONTINUE_COMMAND`),
/// else this command line with `--out` and `--resume` (for a shard: every shard of the run, then `suite merge`).
pub fn continue_command(out_dir: &Path, shard: Option<Shard>) -> String {
    if let Ok(command) = std::env::var(CONTINUE_VARIABLE) {
        if !command.trim().is_empty() {
            return command;
        }
    }
    let mut args: Vec<String> = std::env::args().collect();
    if let Some(first) = args.first_mut() {
        *first = "suite".into();
    }
    // Drop --shard (each shard's own) and --out/--resume (added back once).
    let mut kept = Vec::new();
    let mut skip = false;
    for arg in args {
        if skip {
            skip = false;
            continue;
        }
        match arg.as_str() {
            "--shard" | "--out" => skip = true,
            "--resume" => {}
            a if a.starts_with("--shard=") || a.starts_with("--out=") => {}
            _ => kept.push(arg),
        }
    }
    let quoted: Vec<String> = kept.iter().map(|a| shell_word(a)).collect();
    let base = format!("{} --out {} --resume", quoted.join(" "), shell_word(&out_dir.display().to_string()));
    match shard {
        None => base,
        Some(s) => format!(
            "{base} --shard i/{} for every i below {}, then suite merge {}",
            s.count,
            s.count,
            out_dir.display()
        ),
    }
}

/// `word` quoted for a POSIX shell where it needs it.
fn shell_word(word: &str) -> String {
    if !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,^+@%".contains(c)) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The plan record of this process, now: `experiments` as planned, for a writer of `out_dir` (of `shard`). Every
/// writer records one before it measures anything ([`ResultsFolder::record_plan`]).
pub fn plan_record(
    out_dir: &Path,
    shard: Option<Shard>,
    experiments: Vec<crate::report::run_json::PlannedExperiment>,
) -> crate::report::run_json::Plan {
    crate::report::run_json::Plan {
        date: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        host: gethostname::gethostname().to_string_lossy().into_owned(),
        command: std::env::args().collect(),
        shard: shard.map(|s| s.to_string()),
        slurm: crate::report::run_json::SlurmJob::this_job(),
        continue_with: continue_command(out_dir, shard),
        experiments,
    }
}

/// A point as the runner will treat it: with its estimate, and made `invalid` when that is over the limit.
#[derive(Debug, Clone)]
pub struct Planned {
    /// The point (its `invalid` set when over the limit).
    pub point: Point,
    /// Its estimated time, seconds (0 for an invalid point, which does not run).
    pub estimate_s: f64,
    /// Whether the estimate made it invalid.
    pub over_limit: bool,
}

/// The points this process runs (its shard of the sweep), each estimated on `gpu` under `opts`; a point estimated
/// past `opts.max_point_s` becomes `invalid` with the estimate and the flag to raise in its reason.
/// The sweep is the one that runs on `gpu` ([`Experiment::on_device`]); an experiment that cannot run there at all
/// is an error.
pub fn plan(gpu: &Gpu, exp: &dyn Experiment, opts: &RunOptions) -> Result<Vec<Planned>, Error> {
    let settled = exp.on_device(gpu)?;
    // A plan writes nothing: no results folder.
    Ok(plan_in(&RunContext::new(gpu, None), settled.as_deref().unwrap_or(exp), opts))
}

/// [`plan`] in the context `ctx`.
fn plan_in(ctx: &RunContext, exp: &dyn Experiment, opts: &RunOptions) -> Vec<Planned> {
    let ceilings = crate::peaks::ceilings(ctx.props());
    exp.points(ctx)
        .into_iter()
        .enumerate()
        .filter(|(i, _)| opts.shard.is_none_or(|s| i % s.count == s.index))
        .map(|(_, mut point)| {
            if point.invalid.is_some() {
                return Planned { point, estimate_s: 0.0, over_limit: false };
            }
            let e = estimate::estimate(&point.work, &ceilings, opts);
            let over = estimate::over_limit(&e, opts.max_point_s);
            let over_limit = over.is_some();
            point.invalid = over;
            Planned { point, estimate_s: if over_limit { 0.0 } else { e.point_s }, over_limit }
        })
        .collect()
}

/// One progress line for a finished row.
fn describe(results: &dyn Results, row: &Row) -> String {
    let rate = row.rate.map(|r| format!("{r:.1} {}", results.metric().column)).unwrap_or_default();
    let time = row
        .time_ms
        .map(|(m, lo, hi)| {
            format!("{m:.4} ms [{lo:.4}, {hi:.4}] ({}×{} {})", row.reps, row.launches_per_rep, row.timing)
        })
        .unwrap_or_default();
    let msg = if row.message.is_empty() { String::new() } else { format!(": {}", row.message) };
    format!("{} {} {time} {rate}{msg}", row.status.as_str(), row.key)
}

fn measure_point(
    ctx: &RunContext,
    exp: &dyn Experiment,
    point: &Point,
    opts: &RunOptions,
    telemetry: &mut PointTelemetry,
) -> Row {
    let mut row = Row {
        flop_count: point.work.counted.then_some(point.work.flops),
        byte_count: point.work.counted.then_some(point.work.bytes),
        ..Row::unmeasured(point.key.clone(), point.params.clone(), Status::Ok, "")
    };
    if let Some(why) = &point.invalid {
        row.status = Status::Invalid;
        row.message = why.clone();
        return row;
    }
    match time_point(ctx, exp, point, opts, telemetry, &mut row) {
        Ok(()) => {}
        Err(e) => {
            row.status = Status::Error;
            row.message = e.to_string();
        }
    }
    row
}

/// Verify, then warm up, then time, with the GPU's clocks sampled during the timed repetitions. A failed
/// verification sets the row's status and records no time.
fn time_point(
    ctx: &RunContext,
    exp: &dyn Experiment,
    point: &Point,
    opts: &RunOptions,
    telemetry: &mut PointTelemetry,
    row: &mut Row,
) -> Result<(), Error> {
    let (gpu, clock) = (ctx.gpu, &ctx.phases);
    let mut case = clock.scope(Phase::Prepare, || exp.prepare(ctx, point))?;
    for (column, value) in case.resolved_params() {
        if let Some(i) = exp.results().param_columns().iter().position(|c| *c == column) {
            row.params[i] = value;
        }
    }
    clock.scope(Phase::FirstLaunch, || -> Result<(), Error> {
        case.launch()?;
        gpu.device.synchronize()?;
        Ok(())
    })?;
    let check = clock.scope(Phase::Verify, || case.verify())?;
    row.max_rel_err = Some(check.max_rel_err);
    row.tolerance = Some(check.tolerance);
    if !check.passed() {
        row.status = Status::Fail;
        row.message = check.summary();
        return Ok(());
    }
    let l2 = gpu.device.props().l2_bytes;
    row.l2_resident = case.footprint_bytes().zip(l2).map(|(bytes, l2)| bytes <= l2);
    let (timed, clocks) = time_sampled(gpu.device.as_ref(), case.as_mut(), opts, telemetry, clock)?;
    let rate = timed
        .stats
        .giga_per_second(case.work())
        .ok_or_else(|| Error::Timing(format!("no rate from a median of {} ms per launch", timed.stats.median_ms)))?;
    record_timed(row, timed, rate, clocks);
    Ok(())
}

/// Times a verified case ([`time_case_within`]) with the GPU's clocks sampled during its timed repetitions, and
/// what the readings came to; the phases go on the run's `clock`.
pub(super) fn time_sampled(
    dev: &dyn crate::device::Device,
    case: &mut dyn super::Case,
    opts: &RunOptions,
    telemetry: &mut PointTelemetry,
    clock: &PhaseClock,
) -> Result<(super::Timed, PointClocks), Error> {
    let mut section = PhasedSection { telemetry, clock, open: Some(clock.enter(Phase::Calibrate)) };
    let timed = time_case_within(dev, case, opts, &mut section);
    drop(section.open.take());
    // Before `?`: a repetition that failed leaves the sampler running.
    let clocks = clock.scope(Phase::Telemetry, || telemetry.finish_point());
    Ok((timed?, clocks))
}

/// The telemetry's section around the timed repetitions, which also moves the point's phase on: calibration (the
/// sizing launches, the capture, the warm-up) until it begins, the timed repetitions until it ends, and the
/// sampler's own start and stop as telemetry.
struct PhasedSection<'t, 'c> {
    telemetry: &'t mut PointTelemetry,
    clock: &'c PhaseClock,
    /// The phase open now.
    open: Option<Guard<'c>>,
}

impl TimedSection for PhasedSection<'_, '_> {
    fn begin(&mut self) {
        self.open = None;
        self.clock.scope(Phase::Telemetry, || self.telemetry.begin());
        self.open = Some(self.clock.enter(Phase::Timed));
    }

    fn end(&mut self) {
        self.open = None;
        self.clock.scope(Phase::Telemetry, || self.telemetry.end());
    }
}

/// Writes a timed point's figures into its row: repetitions, batch, clock, times, `rate` (at the median), the clock
/// columns, and the notes of both (a graph that fell back to the stream, clocks that could not be read).
pub(super) fn record_timed(row: &mut Row, timed: super::Timed, rate: f64, clocks: PointClocks) {
    row.reps = timed.stats.reps;
    row.launches_per_rep = timed.launches_per_rep;
    row.timing = timed.timing.name().to_string();
    row.time_ms = Some((timed.stats.median_ms, timed.stats.min_ms, timed.stats.max_ms));
    row.rate = Some(rate);
    row.telemetry = clocks.summary;
    let notes: Vec<String> = timed.note.into_iter().chain(clocks.note).collect();
    row.message = notes.join("; ");
}

/// Writes an experiment's derived tables ([`Results::derived_tables`]) and then renders its plots from the CSV,
/// both into `out_dir` (the run, the merge and `suite plot` without `--out`: the CSV's own folder), with rings around the points measured throttled or below their steady clock
/// ([`ring_flagged`]); returns the files written. Only the read side is needed: `suite plot` and
/// `suite merge` build no sweep.
pub fn render_plots(results: &dyn Results, csv_path: &Path, out_dir: &Path) -> Result<Vec<PathBuf>, Error> {
    render_plots_noted(results, csv_path, out_dir, None)
}

/// [`render_plots`], with `note` (e.g. that the folder holds fewer points than it planned) added to every plot's
/// note, so no plot of an incomplete run reads as a complete one.
pub fn render_plots_noted(
    results: &dyn Results,
    csv_path: &Path,
    out_dir: &Path,
    note: Option<&str>,
) -> Result<Vec<PathBuf>, Error> {
    let rows = read_rows(csv_path)?;
    std::fs::create_dir_all(out_dir).map_err(|source| crate::report::io_error("cannot create", out_dir, source))?;
    let mut written = Vec::new();
    let dir = csv_path.parent().unwrap_or(Path::new("."));
    // Derived tables go with the plots, into `out_dir`: `suite plot --out D` writes nothing beside its input.
    for (file, text) in results.derived_tables(&rows, dir) {
        let path = out_dir.join(file);
        crate::safe_fs::write_whole(&path, text.as_bytes())
            .map_err(|source| crate::report::io_error("cannot write", &path, source))?;
        written.push(path);
    }
    // Points measured throttled or below their steady clock get a ring (every plot, however it is made).
    let plots = results.plots(&rows, dir);
    let plots = ring_flagged(plots, &rows, results.metric().column, |rows| results.plots(rows, dir));
    for (file, mut plot) in plots {
        if let Some(note) = note {
            plot.note = Some(match plot.note.take() {
                Some(own) => format!("{note}. {own}"),
                None => note.to_string(),
            });
        }
        let path = out_dir.join(file);
        render_png(&plot, &path, PLOT_WIDTH, PLOT_HEIGHT)?;
        written.push(path);
    }
    Ok(written)
}

/// Plot size in pixels: large enough for a dozen legend entries beside the data.
const PLOT_WIDTH: u32 = 1600;
const PLOT_HEIGHT: u32 = 1000;
