//! TEST DOUBLE for one `suite run` task, for the Slurm job-script tests (`suite/tests/slurm.rs`) on a machine with no
//! GPU. It measures nothing: it stands in only for the GPU work of a task, and everything on its outside is the
//! suite's own.
//!
//! - Its command line is parsed by the suite's real parser (`suite::cli::Cli`), so a job script that passes its
//!   arguments in an order `suite run` rejects fails here too; an experiment's own flags are checked by the
//!   experiment's real sweep (`registry` entry), whose options go into the fingerprint as `suite run` records them.
//! - It writes as `suite run` does, through the suite's own code: it takes the results folder
//!   (`ResultsFolder::take`: the folder's claim and locks, refused when another job or writer holds them), records
//!   its plan in `run.json` through it (refused for a folder of another layout) before any point, and then, for its
//!   shard (`--shard i/n`) of a fixed list of points per experiment, begins each experiment with it and appends one
//!   row per point (same file names, header, lock, `--resume` semantics: a point already in the CSV is skipped, a
//!   cut row is dropped; its invocation recorded in `run.json`), so the real `suite merge` and `suite status` take the
//!   folder as they take a real run's. It exits with the suite's status for each error (2 bad arguments, 3 refused
//!   folder).
//! - Every row is `invalid`, with the message "slurm test double: nothing measured", on a device named as the test
//!   double (no figures at all: no time, no rate), so nothing it writes can pass for a measurement.
//!
//! What it does on request, through environment variables (the test sets them for `sbatch`, Slurm passes them on):
//! - `SUITE_DOUBLE_POINTS`: points per experiment (default 12);
//! - `SUITE_DOUBLE_SECONDS_PER_POINT`: seconds each point takes (default 0.2), so a job can run past its time limit;
//! - `SUITE_DOUBLE_FAIL=<shard index>:<points>`: the task of that shard (0 when unsharded) fails after writing that
//!   many rows in this process: it leaves the next row cut inside its last field, as a task killed while writing
//!   leaves it, and exits 1;
//! - `SUITE_DOUBLE_START_AFTER=<file>`: each task waits, before it touches the folder, until that file exists (so
//!   a test can start the tasks of two jobs at once, after both jobs' plans);
//! - `SUITE_DOUBLE_LOG=<file>`: one line per point written (results folder, experiment, key, shard, Slurm job id,
//!   restart count, node, `ROCR_VISIBLE_DEVICES`), appended, so a test can prove that no point was measured twice
//!   across requeues and see where each shard ran.
//!
//! Run through a `suite` wrapper (the test writes one) that sends `run` here and every other command to the real
//! `suite` binary.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser as _;
use suite::app::Error;
use suite::cli::{Cli, Command, RunAll, RunArgs, RunCommand};
use suite::device::{Arch, Platform, Props, WaveSize};
use suite::experiments::{plan_record, registry, Experiment, Results, Shard};
use suite::report::csv::{header, Context, CsvLog, Row, Status};
use suite::report::folder::ResultsFolder;
use suite::report::lock::Wait;
use suite::report::run_json::{Fingerprint, Invocation, PlannedExperiment};

/// The device every row and `run.json` name: a test double, with no properties that could be mistaken for a GPU's.
fn double_device() -> Props {
    Props {
        platform: Platform::Amd,
        ordinal: 0,
        name: "slurm test double (no GPU, nothing measured)".into(),
        arch: Arch::parse("gfx90a").expect("gfx90a is an architecture"),
        arch_full: "gfx90a".into(),
        wave_size: WaveSize(64),
        cu_count: 0,
        max_items_per_cu: 0,
        max_group_size: 0,
        max_groups_per_cu: None,
        lds_bytes_per_cu: 0,
        lds_bytes_per_group: 0,
        lds_bytes_per_group_optin: 0,
        registers_per_cu: 0,
        clock_mhz: None,
        memory_clock_mhz: None,
        memory_bus_bits: None,
        l2_bytes: None,
        memory_bytes: 0,
        runtime_version: "none (test double)".into(),
        driver_version: "none (test double)".into(),
        test_runtime: false,
    }
}

/// What the environment asks of this task.
struct Behaviour {
    points: usize,
    seconds_per_point: f64,
    /// (shard index, rows written before failing)
    fail: Option<(usize, usize)>,
    log: Option<PathBuf>,
}

impl Behaviour {
    fn from_env() -> Result<Behaviour, String> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        fn number<T: std::str::FromStr>(name: &str, value: Option<String>, default: T) -> Result<T, String>
        where
            T::Err: std::fmt::Display,
        {
            value.map_or(Ok(default), |v| v.parse().map_err(|e| format!("{name}={v}: {e}")))
        }
        let fail = match var("SUITE_DOUBLE_FAIL") {
            None => None,
            Some(v) => {
                let parsed = v.split_once(':').and_then(|(i, k)| Some((i.parse().ok()?, k.parse().ok()?)));
                Some(parsed.ok_or_else(|| format!("SUITE_DOUBLE_FAIL={v}: expected <shard index>:<points>"))?)
            }
        };
        Ok(Behaviour {
            points: number("SUITE_DOUBLE_POINTS", var("SUITE_DOUBLE_POINTS"), 12)?,
            seconds_per_point: number("SUITE_DOUBLE_SECONDS_PER_POINT", var("SUITE_DOUBLE_SECONDS_PER_POINT"), 0.2)?,
            fail,
            log: var("SUITE_DOUBLE_LOG").map(PathBuf::from),
        })
    }
}

/// How one task ended, as `suite run` would exit.
enum Outcome {
    Done,
    /// Failed on request.
    Failed,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // Exactly as the real binary: clap's message, status 2.
        Err(e) => e.exit(),
    };
    match run(&cli) {
        Ok(Outcome::Done) => ExitCode::SUCCESS,
        Ok(Outcome::Failed) => {
            eprintln!("slurm test double: failing on request (SUITE_DOUBLE_FAIL)");
            ExitCode::FAILURE
        }
        // As the real binary: the error chain, and the error's own status.
        Err(e) => {
            let (text, code) = suite::app::error_report(e);
            eprintln!("{text}");
            ExitCode::from(code)
        }
    }
}

fn run(cli: &Cli) -> Result<Outcome, Error> {
    let Command::Run(all) = &cli.command else {
        return Err(Error::Options(
            "the slurm test double stands in for `suite run` only; run the real suite for the rest".into(),
        ));
    };
    let behaviour = Behaviour::from_env().map_err(Error::Options)?;
    let device = double_device();
    // The experiments as `suite run` makes them: one with its own (checked) flags, or every one's quick or full sweep.
    let (experiments, args): (Vec<Box<dyn Experiment>>, &RunArgs) = match all.as_ref() {
        RunAll { experiment: Some(RunCommand { experiment, matches, run }), .. } => {
            (vec![(experiment.sweep)(matches)?], run)
        }
        RunAll { experiment: None, full, run } => {
            let make = |e: &registry::Entry| if *full { (e.default)() } else { (e.quick)() };
            (registry::EXPERIMENTS.iter().map(make).collect(), run)
        }
    };
    let out =
        args.out.clone().ok_or(Error::Options("the slurm test double needs --out (the job scripts pass it)".into()))?;
    // As `suite run`: the folder's locks first, then the plan of every experiment, then the points.
    let wait = if args.wait { Wait::Forever } else { Wait::No };
    // The test may hold every task here until it says go, so that two jobs' tasks start together.
    if let Some(go) = std::env::var_os("SUITE_DOUBLE_START_AFTER") {
        let go = PathBuf::from(go);
        while !go.exists() {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let mut folder =
        ResultsFolder::take(&out, args.shard, "suite run", wait).map_err(suite::experiments::Error::from)?;
    let shard = args.shard.unwrap_or(Shard { index: 0, count: 1 });
    let planned = experiments
        .iter()
        .map(|e| PlannedExperiment {
            name: e.name().to_string(),
            sweep_points: behaviour.points,
            points: (0..behaviour.points).filter(|p| p % shard.count == shard.index).count(),
        })
        .collect();
    folder.record_plan(&device, plan_record(&out, args.shard, planned)).map_err(suite::experiments::Error::from)?;
    let mut written = 0;
    for exp in experiments {
        let outcome = run_experiment(exp.as_ref(), args, &mut folder, &device, &behaviour, &mut written)
            .map_err(suite::experiments::Error::from)?;
        if let Outcome::Failed = outcome {
            return Ok(Outcome::Failed);
        }
    }
    Ok(Outcome::Done)
}

/// One experiment's shard of the double's points, as `experiments::run` writes a real one.
fn run_experiment(
    exp: &dyn Experiment,
    args: &RunArgs,
    folder: &mut ResultsFolder,
    device: &Props,
    behaviour: &Behaviour,
    written: &mut usize,
) -> Result<Outcome, suite::report::Error> {
    // As the runner records them: the options as run on this device, the read side's metric and columns.
    let results = exp.results();
    let options = serde_json::json!({
        exp.name(): exp.options(device),
        "warmup": args.warmup,
        "reps": args.reps,
        "time_budget_s": args.time_budget,
        "timing": args.timing,
        "metric": results.metric(),
    });
    let columns = header(results.param_columns(), results.metric().column);
    let mut invocation = Invocation::now(options.clone(), args.shard.map(|s| s.to_string()));
    invocation.experiment = exp.name().to_string();
    invocation.blas = "none (slurm test double)".into();
    invocation.fingerprint = Some(Fingerprint::new(&options, exp.sources(), &[], device, &columns));
    let context = Context {
        experiment: exp.name().to_string(),
        platform: device.platform.name().to_string(),
        device: device.name.clone(),
        arch: device.arch.to_string(),
        wave_size: device.wave_size.0,
    };
    // As the runner begins it with the folder's owner: run.json checked, the CSV opened, the invocation recorded.
    let out = folder.dir().to_path_buf();
    let mut writer = folder.begin(device, invocation, context.clone(), &columns, args.resume)?;
    let csv_path = writer.csv_path();

    let shard = args.shard.unwrap_or(Shard { index: 0, count: 1 });
    for point in (0..behaviour.points).filter(|p| p % shard.count == shard.index) {
        let row = double_row(results, point);
        if writer.recorded(&row.key).is_some() {
            continue;
        }
        if behaviour.fail.is_some_and(|(index, after)| index == shard.index && *written == after) {
            leave_cut_row(&csv_path, context, &columns, &row).map_err(double_error)?;
            return Ok(Outcome::Failed);
        }
        std::thread::sleep(Duration::from_secs_f64(behaviour.seconds_per_point));
        writer.row(&row)?;
        *written += 1;
        if let Some(path) = &behaviour.log {
            note_measured(path, &out, exp.name(), &row.key, shard).map_err(double_error)?;
        }
    }
    Ok(Outcome::Done)
}

/// A failure of the double's own bookkeeping, as a report error.
fn double_error(message: String) -> suite::report::Error {
    suite::report::Error::Io {
        action: "slurm test double:",
        path: PathBuf::new(),
        source: std::io::Error::other(message),
    }
}

/// The double's row for point `index`: `invalid`, saying it is the test double's, no figures.
fn double_row(results: &dyn Results, index: usize) -> Row {
    Row::unmeasured(
        format!("double-point-{index:03}"),
        results.param_columns().iter().map(|_| index.to_string()).collect(),
        Status::Invalid,
        "slurm test double: nothing measured",
    )
}

/// Appends `row` to `csv` cut inside its last field (the key), with no newline: what a task killed while writing
/// leaves. The bytes are the suite's own (`CsvLog` writes the row into a scratch file first).
fn leave_cut_row(csv: &Path, context: Context, columns: &[String], row: &Row) -> Result<(), String> {
    let scratch = tempfile::tempdir().map_err(|e| e.to_string())?;
    let path = scratch.path().join("row.csv");
    CsvLog::open(&path, context, columns, false).and_then(|mut log| log.append(row)).map_err(|e| e.to_string())?;
    let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
    let line = text.lines().last().ok_or("the scratch CSV has no row")?;
    let cut = &line[..line.len() - 1];
    let mut file = std::fs::OpenOptions::new().append(true).open(csv).map_err(|e| format!("{}: {e}", csv.display()))?;
    file.write_all(cut.as_bytes()).map_err(|e| format!("{}: {e}", csv.display()))
}

/// One line in the measured-points log; a single `write` on a file opened for appending, so the lines of tasks
/// writing at once do not interleave.
fn note_measured(path: &Path, out: &Path, experiment: &str, key: &str, shard: Shard) -> Result<(), String> {
    let env = |name: &str| std::env::var(name).unwrap_or_else(|_| "-".into());
    let line = format!(
        "{} {experiment} {key} shard={shard} job={} restart={} node={} rocr={}\n",
        out.display(),
        env("SLURM_JOB_ID"),
        std::env::var("SLURM_RESTART_COUNT").unwrap_or_else(|_| "0".into()),
        env("SLURMD_NODENAME"),
        env("ROCR_VISIBLE_DEVICES"),
    );
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    file.write_all(line.as_bytes()).map_err(|e| format!("{}: {e}", path.display()))
}
