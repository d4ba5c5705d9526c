//! What each command does. `main.rs` parses the command line and prints the error chain; everything else is here,
//! testable as a library.

/// Appends a formatted line to a command's output text (writing to a `String` cannot fail). Defined before the
/// command modules so each of them can use it.
macro_rules! outln {
    ($out:expr, $($arg:tt)*) => {{
        use std::fmt::Write as _;
        let _ = writeln!($out, $($arg)*);
    }};
}

mod bench;
mod counter_child;
pub mod counter_pass;
mod error;
mod info;
mod kernel_tools;
mod merge_shards;
mod run;
use bench::*;
pub use error::Error;
pub use info::{describe_device, info, info_text};
use kernel_tools::*;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::cli::{BenchCommand, Cli, Command, KernelsCommand, OccupancyCommand};
use crate::code_objects::KernelStore;
use crate::experiments::{self, registry};
use crate::gpu::Gpu;
use crate::report::lock::Wait;

/// Writes a command's output to stdout. A reader that went away (`suite info | head`) is not an error: there is
/// nobody left to tell, so the rest is dropped instead of panicking as `println!` would.
fn emit(text: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush());
}

/// Runs the parsed command line. `Ok` carries the exit code: non-zero when a check failed or, for `info`, when
/// no GPU is visible.
pub fn run(cli: &Cli) -> Result<ExitCode, Error> {
    match &cli.command {
        Command::Info => Ok(info(cli.platform.platform())),
        Command::Kernels(KernelsCommand::Build { arch, cus, sources, out }) => {
            let archs = parse_archs(arch)?;
            let sources = select_sources(sources)?;
            let store = KernelStore::new(cli.kernels_dir.clone());
            let mut text = String::new();
            for path in store.build(&sources, &archs, out)? {
                outln!(text, "{}", path.display());
            }
            for arch in &archs {
                let (specs, note) = run_time_specialisations(arch, *cus, &sources)?;
                for path in store.build_specialised(&specs, arch, out)? {
                    outln!(text, "{}", path.display());
                }
                eprintln!("{arch}: {note}");
            }
            emit(&text);
            Ok(ExitCode::SUCCESS)
        }
        Command::Kernels(KernelsCommand::Compare { arch, compiler, sources, out }) => {
            let archs = parse_archs(arch)?;
            let sources = select_sources(sources)?;
            compare_kernels(cli, &archs, compiler, &sources, out)
        }
        Command::Kernels(KernelsCommand::Inspect { arch, compiler, sources }) => {
            let sources = select_sources(sources)?;
            inspect(cli, arch.as_deref(), *compiler, &sources)
        }
        Command::Run(all) => run::run(cli, all),
        Command::Experiments => {
            let mut text = String::new();
            for name in registry::names() {
                outln!(text, "{name}");
            }
            emit(&text);
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench(BenchCommand::Launch { count, trials, baseline, cubin }) => {
            bench_launch(cli, *count, *trials, baseline.as_deref(), cubin.as_deref())
        }
        Command::Bench(BenchCommand::Roundtrip { count, trials, baseline, cubin }) => {
            bench_roundtrip(cli, *count, *trials, baseline.as_deref(), cubin.as_deref())
        }
        Command::Occupancy(OccupancyCommand::Calc(args)) => occupancy_calc(args),
        Command::Merge { dir, partial, wait } => {
            merge_shards::merge(dir, *partial, if *wait { Wait::Forever } else { Wait::No })
        }
        Command::Status { dir } => status(dir),
        Command::Compare { runs, out } => {
            let out = out.clone().unwrap_or_else(|| compare_out_dir(runs));
            let written = crate::report::compare::compare(runs, &out, &registry::known())?;
            let mut text = String::new();
            outln!(text, "{}", written.report.display());
            for path in written.plots {
                outln!(text, "{}", path.display());
            }
            emit(&text);
            Ok(ExitCode::SUCCESS)
        }
        Command::Plot { experiment, csv, out, partial } => plot(experiment, csv, out.as_deref(), *partial),
    }
}

/// `suite plot EXPERIMENT CSV [--out DIR] [--partial]`: the experiment's plots from its CSV. The read side never
/// guesses: the CSV's folder must say the rows are the whole run (its run.json's plan, and for a sharded folder a
/// current merge), or `--partial` must be given, and then every plot's note says what the folder holds.
fn plot(experiment: &str, csv: &Path, out: Option<&Path>, partial: bool) -> Result<ExitCode, Error> {
    let results = registry::results(experiment)?;
    let folder = csv.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let out_dir = out.map(Path::to_path_buf).unwrap_or_else(|| folder.to_path_buf());
    // A run.json that does not parse is an error naming it; none at all is said as such.
    let run = crate::report::run_json::read(folder)?;
    let status = crate::report::status::read(folder)?;
    let complete = run.is_some()
        && (!status.plan_recorded || status.experiment(experiment).is_none_or(|e| e.complete()))
        && status.merge.as_ref().is_none_or(|m| *m == crate::report::merge_record::MergeState::Current);
    let note = if complete {
        (!status.plan_recorded).then(|| format!("{}: {}", folder.display(), status.line()))
    } else if partial {
        Some(format!("partial: {}: {}", folder.display(), status.line()))
    } else {
        // Without a run.json the line names the folder itself.
        let line = status.line();
        let status = if status.run_json { format!("{}: {line}", folder.display()) } else { line };
        return Err(Error::PlotIncomplete { status });
    };
    let mut written = experiments::render_plots_noted(results, csv, &out_dir, note.as_deref())?;
    if written.is_empty() {
        let rows = crate::report::csv::read_rows(csv)?;
        let verified = experiments::ok_rows(&rows).count();
        return Err(if verified == 0 {
            Error::NothingToPlot { csv: csv.to_path_buf() }
        } else {
            Error::NoPlots { csv: csv.to_path_buf(), experiment: experiment.to_string(), verified }
        });
    }
    // Into the run's own folder, the folder-wide plots the experiment's rows are part of are drawn again too:
    // the roofline, and the one with measured DRAM bytes where the folder holds counters.
    let mut text = String::new();
    match (run, out_dir == folder) {
        (Some(run), true) => {
            let roles = registry::roofline_roles();
            written.extend(crate::report::roofline::write(&out_dir, &roles)?);
            if out_dir.join("counters.csv").exists() {
                written.extend(counter_pass::draw_dram_roofline(&out_dir, run.device.platform, &roles)?);
            }
        }
        (None, true) => eprintln!("roofline not drawn again: no run.json in {}", folder.display()),
        _ => {}
    }
    for path in written {
        outln!(text, "{}", path.display());
    }
    emit(&text);
    Ok(ExitCode::SUCCESS)
}

/// `results/compare-<run 1>-vs-<run 2>...`, from the folders' own names.
fn compare_out_dir(runs: &[PathBuf]) -> PathBuf {
    let names: Vec<String> = runs
        .iter()
        .map(|r| {
            let r = r.canonicalize().unwrap_or_else(|_| r.clone());
            r.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "run".into())
        })
        .collect();
    PathBuf::from("results").join(format!("compare-{}", names.join("-vs-")))
}

fn open_gpu(cli: &Cli) -> Result<Gpu, Error> {
    Ok(Gpu::open(cli.platform.platform(), cli.device, cli.kernels_dir.clone())?)
}

/// `suite status DIR`: the folder's rows against its plans, one line per experiment and the verdict.
fn status(dir: &Path) -> Result<ExitCode, Error> {
    let folder = crate::report::status::read(dir)?;
    let mut text = String::new();
    for e in &folder.experiments {
        let failed =
            if e.failed > 0 { format!(", {} failed verification or errored", e.failed) } else { String::new() };
        outln!(text, "{}{failed}", e.counts());
    }
    // The verdict names the folder it was given (a recorded continuation may name it as the job did).
    // Without a run.json the line names the folder itself.
    let line = folder.line();
    if folder.run_json {
        outln!(text, "{}: {line}", dir.display());
    } else {
        outln!(text, "{line}");
    }
    emit(&text);
    Ok(ExitCode::from(if !folder.plan_recorded {
        5
    } else if !folder.complete() {
        4
    } else if folder.failed() > 0 {
        6
    } else {
        0
    }))
}

/// What `suite` prints for an error that stops it, and its exit status: `error: <the chain>`, or for a results folder
/// that refused the run (status 3) `refused: <the chain>. Nothing was measured.`, the same words the job scripts
/// end with, so a refusal never reads as a failure of the run.
pub fn error_report(e: Error) -> (String, u8) {
    let code = e.exit_code();
    let text = error_text(std::iter::successors(Some(&e as &(dyn std::error::Error + 'static)), |e| e.source()));
    if code == 3 {
        (format!("refused: {text}. Nothing was measured."), code)
    } else {
        (format!("error: {text}"), code)
    }
}

/// An error and its causes as one line for the user, each cause once: most of our messages already quote their
/// cause (thiserror's `"cannot write {path}: {source}"`) while also returning it from `source()`, so a cause whose
/// text the line already holds is not appended again.
pub fn error_text<'a>(chain: impl IntoIterator<Item = &'a (dyn std::error::Error + 'static)>) -> String {
    let mut text = String::new();
    for cause in chain {
        let message = cause.to_string();
        if text.is_empty() {
            text = message;
        } else if !text.contains(&message) {
            text.push_str(": ");
            text.push_str(&message);
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code_objects;
    use crate::device::{Arch, Platform};

    /// The chain of `e`, as anyhow walks it in `main`.
    fn chain<'a>(e: &'a (dyn std::error::Error + 'static)) -> Vec<&'a (dyn std::error::Error + 'static)> {
        std::iter::successors(Some(e), |e| e.source()).collect()
    }

    #[test]
    fn each_cause_is_printed_once() {
        let io = || std::io::Error::new(std::io::ErrorKind::PermissionDenied, "Permission denied (os error 13)");
        let report = crate::report::Error::Io { action: "cannot create", path: "/results/x".into(), source: io() };
        let e = Error::from(report);
        assert_eq!(chain(&e).len(), 2, "the cause is also returned by source()");
        assert_eq!(error_text(chain(&e)), "cannot create /results/x: Permission denied (os error 13)");
        let kernels =
            code_objects::Error::Io { action: "write cache file", path: "/c/k".into(), source: io(), hint: "" };
        let text = error_text(chain(&Error::from(kernels)));
        assert_eq!(text.matches("Permission denied").count(), 1, "{text}");

        // A message that does not quote its cause gets it appended.
        #[derive(Debug, thiserror::Error)]
        #[error("cannot load the plot font")]
        struct Outer(#[source] std::io::Error);
        assert_eq!(error_text(chain(&Outer(io()))), "cannot load the plot font: Permission denied (os error 13)");
    }

    /// `suite kernels build` makes every code object a run can need, run-time specialisations included, so a run
    /// with `--kernels-dir` on a compute node never starts a compiler: here both compilers are scripts that record
    /// being run and fail, and every source and specialisation of every quick and full preset is still found.
    #[test]
    fn a_kernels_dir_from_kernels_build_serves_every_preset_without_a_compiler() {
        use crate::code_objects::{Compiler, CompilerKind, Error as KernelsError};
        crate::code_objects::test_support::compiler(Platform::Amd);
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("kernels-build");
        let arch = Arch::parse("gfx90a").unwrap();
        let all: Vec<&code_objects::Source> = code_objects::all().iter().collect();
        let builder = KernelStore::with_cache_dir(None, dir.path().join("cache"));
        builder.build(&all, std::slice::from_ref(&arch), &out).unwrap();
        let (specs, note) = run_time_specialisations(&arch, None, &all).unwrap();
        assert!(!specs.is_empty() && note.contains("for a device of 110 CUs"), "{note}");
        builder.build_specialised(&specs, &arch, &out).unwrap();

        let log = dir.path().join("compiler-ran");
        let fake = dir.path().join("fake-compiler");
        std::fs::write(&fake, format!("#!/bin/sh\necho \"$0 $*\" >> {}\nexit 1\n", log.display())).unwrap();
        std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let compiler = |kind| Compiler { kind, path: fake.clone(), version: "fake".into(), extra_flags: Vec::new() };
        let node = KernelStore::with_cache_dir(Some(out.clone()), dir.path().join("empty-cache"))
            .with_compiler(compiler(CompilerKind::Hipcc))
            .with_compiler(compiler(CompilerKind::Nvcc));
        let shape = code_objects::DeviceShape { cu_count: 110, max_items_per_cu: 2048 };
        let mut specialised = 0;
        for entry in registry::EXPERIMENTS {
            for exp in [(entry.quick)(), (entry.default)()] {
                for source in exp.sources() {
                    node.code_object(code_objects::source(source).unwrap(), &arch).unwrap();
                }
                for spec in exp.specialisations(shape) {
                    let object = node.specialised(&spec.source(), &arch, &spec.defines).unwrap();
                    assert!(matches!(object.origin, code_objects::Origin::Prebuilt(_)), "{:?}", object.origin);
                    specialised += 1;
                }
            }
        }
        assert!(specialised > 0);
        assert!(!log.exists(), "a compiler ran: {}", std::fs::read_to_string(&log).unwrap_or_default());

        // A device of another CU count needs other specialisations: the error names the command that makes them.
        let other = code_objects::DeviceShape { cu_count: 104, ..shape };
        let specs = registry::find("fusion").map(|e| (e.quick)()).unwrap().specialisations(other);
        let staged = specs.into_iter().find(|s| !s.defines.is_empty()).unwrap();
        let err = node.specialised(&staged.source(), &arch, &staged.defines).unwrap_err();
        assert!(matches!(err, KernelsError::SpecialisationMissing(_)), "{err}");
        let text = err.to_string();
        assert!(text.contains(&format!("suite kernels build --arch gfx90a --out {}", out.display())), "{text}");
        assert!(!log.exists());
    }

    #[test]
    fn failures_that_are_not_about_options_are_not_option_errors() {
        let poisoned = Error::from(crate::gpu::Error::Poisoned { source_name: "smoke".into() });
        assert!(matches!(poisoned, Error::Experiment(experiments::Error::Gpu(_))), "{poisoned:?}");
        assert!(poisoned.to_string().contains("start the command again"), "{poisoned}");
        let nothing = Error::NothingToPlot { csv: "r/matmul.csv".into() };
        assert_eq!(nothing.to_string(), "r/matmul.csv: no verified rows to plot");
        let plot = crate::report::plot::Error::NoSeries { path: "p.png".into() };
        assert!(matches!(Error::from(plot), Error::Experiment(experiments::Error::Plot(_))));
    }

    #[test]
    fn the_baselines_time_is_read_from_its_line() {
        let line = "launches=10000 trials=1 us_per_launch_median=2.1250 min=2.1250 max=2.1250 (C++ driver API)\n";
        assert_eq!(baseline_us_per_launch(line), Some(2.125));
        assert_eq!(baseline_us_per_launch("launches=1 min=2.0"), None);
        assert_eq!(baseline_us_per_launch("us_per_launch_median=nan"), None);
        assert_eq!(baseline_us_per_launch("us_per_launch_median=0"), None);
        let rt = "round_trips=2000 trials=1 us_per_round_trip_median=21.5 min=21.5 max=21.5 (C++ driver API)";
        assert_eq!(baseline_value(rt, "us_per_round_trip_median="), Some(21.5));
        assert_eq!(baseline_value(rt, "us_per_launch_median="), None);
    }
}
