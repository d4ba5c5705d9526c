//! What each command does. `main.rs` parses the command line and prints the error chain; everything else is here,
//! testable as a library.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use crate::cli::{
    BenchCommand, Cli, Command, KernelsCommand, OccupancyArgs, OccupancyCommand, RunAll, RunArgs, RunCommand,
};
use crate::device::{self, Arch, LaunchConfig, Platform, Props};
use crate::experiments::{self, registry, Error, Experiment, RunOptions};
use crate::gpu::Gpu;
use crate::kernels::{self, KernelStore};
use crate::measure::Stats;
use crate::occupancy::{self, Input, Limiter, Occupancy, Profile, Resources};
use crate::options;
use crate::report::run_json::git_describe;
use crate::report::summary::Section;

/// Appends a formatted line to a command's output text (writing to a `String` cannot fail).
macro_rules! outln {
    ($out:expr, $($arg:tt)*) => {{
        let _ = writeln!($out, $($arg)*);
    }};
}

/// Appends formatted text to a command's output text.
macro_rules! outp {
    ($out:expr, $($arg:tt)*) => {{
        let _ = write!($out, $($arg)*);
    }};
}

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
        Command::Kernels(KernelsCommand::Compare { arch, sources, out }) => {
            let archs = parse_archs(arch)?;
            let sources = select_sources(sources)?;
            compare_kernels(cli, &archs, &sources, out)
        }
        Command::Kernels(KernelsCommand::Inspect { arch, sources }) => {
            let sources = select_sources(sources)?;
            inspect(cli, arch.as_deref(), &sources)
        }
        Command::Run(RunAll { experiment: Some(RunCommand { experiment, matches, run }), full, .. }) => {
            if *full {
                return Err(Error::Options(format!(
                    "--full runs every experiment's complete sweep and cannot name one: `suite run {}` alone runs \
                     its complete sweep, its own flags narrow it",
                    experiment.name
                )));
            }
            let exp = (experiment.sweep)(matches)?;
            run_experiment(cli, exp, run)
        }
        Command::Run(RunAll { experiment: None, full, run }) => run_all(cli, *full, run),
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
        Command::Merge { dir, partial } => {
            use crate::report::{merge, run_json};
            let groups = merge::shard_files(dir)?;
            if groups.is_empty() {
                return Err(Error::Options(format!("{}: no <experiment>.shard-<i>-of-<n>.csv files", dir.display())));
            }
            let run = run_json::read(dir)?;
            // Every set is checked before anything is written.
            let mut gaps = Vec::new();
            for (experiment, shards) in &groups {
                gaps.push(merge::check(experiment, shards, run.as_ref(), &run_json::path(dir), *partial)?);
            }
            let mut text = String::new();
            let mut sections = Vec::new();
            for ((experiment, shards), gaps) in groups.iter().zip(gaps) {
                let out = dir.join(experiments::csv_name(experiment, None));
                let count = merge::merge(shards, &out)?;
                outln!(text, "{}: {count} rows from {} shards", out.display(), shards.len());
                if !gaps.is_empty() {
                    outln!(text, "{}: partial, {gaps}", out.display());
                }
                let entry = registry::find(experiment)?;
                let exp = (entry.default)();
                for path in experiments::render_plots(exp.as_ref(), &out, dir)? {
                    outln!(text, "{}", path.display());
                }
                let rows = crate::report::csv::read_rows(&out)?;
                let status = |s: &str| rows.iter().filter(|r| r.get("status").is_some_and(|v| v == s)).count();
                let partial = if gaps.is_empty() { String::new() } else { format!(", {gaps}") };
                let points = format!(
                    "{} ok, {} failed verification, {} errors, {} invalid, merged from {} shards{partial}",
                    status("ok"),
                    status("fail"),
                    status("error"),
                    status("invalid"),
                    shards.len()
                );
                sections.push(Section {
                    name: entry.name,
                    seconds: None,
                    outcome: Ok(points),
                    headlines: exp.headlines(&rows),
                });
            }
            for path in crate::report::roofline::write(dir)? {
                outln!(text, "{}", path.display());
            }
            // The merged run's summary, as `suite run` writes for an unsharded one (its seconds are the shards').
            if let Some(run) = &run {
                let path = dir.join(crate::report::summary::file_name(None));
                crate::report::summary::write(
                    &path,
                    &crate::report::summary::markdown(&run.device, "merged shards", &sections, None),
                )?;
                outln!(text, "{}", path.display());
            }
            emit(&text);
            Ok(ExitCode::SUCCESS)
        }
        Command::Compare { runs, out } => {
            let out = out.clone().unwrap_or_else(|| compare_out_dir(runs));
            let written = crate::report::compare::compare(runs, &out)?;
            let mut text = String::new();
            outln!(text, "{}", written.report.display());
            for path in written.plots {
                outln!(text, "{}", path.display());
            }
            emit(&text);
            Ok(ExitCode::SUCCESS)
        }
        Command::Plot { experiment, csv, out } => {
            let exp = registry::default_experiment(experiment)?;
            let out_dir = out.clone().unwrap_or_else(|| csv.parent().map(Path::to_path_buf).unwrap_or_default());
            let written = experiments::render_plots(exp.as_ref(), csv, &out_dir)?;
            if written.is_empty() {
                return Err(Error::NothingToPlot { csv: csv.clone() });
            }
            let mut text = String::new();
            for path in written {
                outln!(text, "{}", path.display());
            }
            emit(&text);
            Ok(ExitCode::SUCCESS)
        }
    }
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

/// Every kernel the quick and full presets of the experiments using `sources` compile at run time on a device of
/// `arch` with `cus` compute units (default: the known part of that architecture), and a line saying for which
/// device they were made.
fn run_time_specialisations(
    arch: &Arch,
    cus: Option<u32>,
    sources: &[&'static kernels::Source<'static>],
) -> Result<(Vec<kernels::Specialisation>, String), Error> {
    let Some(cu_count) = cus.or_else(|| crate::peaks::default_part(arch.as_str()).map(|p| p.cu_count)) else {
        return Ok((
            Vec::new(),
            format!("no run-time specialisations built: the suite knows no part of {arch}; pass --cus N"),
        ));
    };
    let profile = Profile::for_arch(arch, None).map_err(|e| Error::Options(format!("--arch {arch}: {e}")))?;
    let shape = kernels::DeviceShape {
        cu_count,
        max_items_per_cu: profile.simds_per_cu * profile.max_waves_per_simd * profile.wave_size.0,
    };
    let mut specs = Vec::new();
    for entry in registry::EXPERIMENTS {
        for exp in [(entry.quick)(), (entry.default)()] {
            if exp.sources().iter().any(|s| sources.iter().any(|src| src.name == *s)) {
                specs.extend(exp.specialisations(shape));
            }
        }
    }
    specs.sort();
    specs.dedup();
    let note = format!(
        "{} run-time specialisations for a device of {cu_count} CUs ({} resident items per CU); a device with another count \
         needs `--cus N`",
        specs.len(),
        shape.max_items_per_cu
    );
    Ok((specs, note))
}

fn parse_archs(names: &[String]) -> Result<Vec<Arch>, Error> {
    names.iter().map(|a| Arch::parse(a).map_err(|e| Error::Options(format!("--arch: {e}")))).collect()
}

fn select_sources(names: &[String]) -> Result<Vec<&'static kernels::Source<'static>>, Error> {
    if names.is_empty() {
        return Ok(kernels::all().iter().collect());
    }
    names.iter().map(|n| kernels::source(n).map_err(Error::from)).collect()
}

fn open_gpu(cli: &Cli) -> Result<Gpu, Error> {
    Ok(Gpu::open(cli.platform.platform(), cli.device, cli.kernels_dir.clone())?)
}

/// Runs `exp` on the device the command line names, into `--out` or the default results folder.
/// The runner's options from the shared flags, checked, for results in `out_dir`.
fn run_options(args: &RunArgs, out_dir: &Path) -> Result<RunOptions, Error> {
    let reps = options::check_reps(args.reps)?;
    if args.time_budget.is_nan() || args.time_budget <= 0.0 {
        return Err(Error::Options(format!("--time-budget: {} is not a positive number of seconds", args.time_budget)));
    }
    if args.max_point_seconds.is_nan() || args.max_point_seconds <= 0.0 {
        return Err(Error::Options(format!(
            "--max-point-seconds: {} is not a positive number of seconds",
            args.max_point_seconds
        )));
    }
    Ok(RunOptions {
        max_point_s: args.max_point_seconds,
        out_dir: out_dir.to_path_buf(),
        resume: args.resume,
        shard: args.shard,
        warmup: args.warmup,
        reps,
        time_budget_s: args.time_budget,
        timing: args.timing,
    })
}

fn run_experiment(cli: &Cli, mut exp: Box<dyn Experiment>, args: &RunArgs) -> Result<ExitCode, Error> {
    // Options are checked before the GPU is opened, so a bad flag fails at once.
    let mut opts = run_options(args, Path::new(""))?;
    let gpu = open_gpu(cli)?;
    opts.out_dir = args.out.clone().unwrap_or_else(|| experiments::default_out_dir(&gpu));
    exp.set_results_dir(&opts.out_dir);
    exp.fit_to_device(gpu.device.props());
    let exp = exp.as_ref();
    let props = gpu.device.props();
    eprintln!("{} on {} ({}, wave {}), {}", exp.name(), props.name, props.arch, props.wave_size, props.runtime_version);
    let summary = experiments::run(&gpu, exp, &opts)?;
    eprintln!("{}: {}; results in {}", exp.name(), summary_line(&summary), opts.out_dir.display());
    Ok(if summary.success() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// `suite run` with no experiment: every experiment of the registry, its quick preset (or `--full` sweep), into one
/// results folder, then `summary.md` with each experiment's headline figures. An experiment that cannot run (its
/// kernels do not build, say) is reported and the others still run; the exit code is non-zero if any failed.
fn run_all(cli: &Cli, full: bool, args: &RunArgs) -> Result<ExitCode, Error> {
    let mut opts = run_options(args, Path::new(""))?;
    let started = Instant::now();
    let gpu = open_gpu(cli)?;
    opts.out_dir = args.out.clone().unwrap_or_else(|| experiments::default_out_dir(&gpu));
    let out_dir = opts.out_dir.clone();
    let props = gpu.device.props();
    let preset = if full { "full sweeps" } else { "quick preset" };
    let mut experiments = Vec::new();
    for entry in registry::EXPERIMENTS {
        let mut exp = if full { (entry.default)() } else { (entry.quick)() };
        exp.set_results_dir(&out_dir);
        exp.fit_to_device(props);
        experiments.push((entry, exp));
    }
    // Every point of every experiment, estimated before anything runs (points a resumed CSV holds included).
    let estimate: f64 = experiments
        .iter()
        .flat_map(|(_, exp)| experiments::plan(&gpu, exp.as_ref(), &opts))
        .map(|p| p.estimate_s)
        .sum();
    let ceilings = crate::peaks::ceilings(props);
    eprintln!(
        "suite run ({preset}): {} experiments on {} ({}, wave {}) into {}\nestimate: about {} for every point \
         (from each point's operations and bytes at the {} ceilings: {})",
        registry::EXPERIMENTS.len(),
        props.name,
        props.arch,
        props.wave_size,
        out_dir.display(),
        experiments::estimate::seconds_text(estimate),
        ceilings.part,
        ceilings.source
    );
    let mut sections = Vec::new();
    let mut success = true;
    for (entry, exp) in experiments {
        let exp_started = Instant::now();
        let outcome = experiments::run(&gpu, exp.as_ref(), &opts);
        let seconds = exp_started.elapsed().as_secs_f64();
        let csv = out_dir.join(experiments::csv_name(entry.name, opts.shard));
        let section = match outcome {
            Ok(summary) => {
                success &= summary.success();
                eprintln!("{}: {} in {seconds:.1} s", entry.name, summary_line(&summary));
                // A shard's CSV holds only its points: its headlines wait for `suite merge`.
                let headlines = match (opts.shard, crate::report::csv::read_rows(&csv)) {
                    (None, Ok(rows)) => exp.headlines(&rows),
                    (None, Err(e)) => vec![format!("cannot read {}: {e}", csv.display())],
                    (Some(_), _) => Vec::new(),
                };
                Section { name: entry.name, seconds: Some(seconds), outcome: Ok(summary_line(&summary)), headlines }
            }
            Err(e) => {
                success = false;
                let text =
                    error_text(std::iter::successors(Some(&e as &(dyn std::error::Error + 'static)), |e| e.source()));
                eprintln!("{}: could not run: {text}", entry.name);
                Section { name: entry.name, seconds: Some(seconds), outcome: Err(text), headlines: Vec::new() }
            }
        };
        sections.push(section);
    }
    let total = started.elapsed().as_secs_f64();
    let summary_path = out_dir.join(crate::report::summary::file_name(opts.shard));
    let text = crate::report::summary::markdown(props, preset, &sections, Some(total));
    crate::report::summary::write(&summary_path, &text)?;
    eprintln!(
        "done in {total:.1} s (estimate {}); read {} first",
        experiments::estimate::seconds_text(estimate),
        summary_path.display()
    );
    Ok(if success { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// What became of an experiment's points, in one line.
fn summary_line(s: &experiments::Summary) -> String {
    format!(
        "{} ok, {} failed verification, {} errors, {} invalid, {} already in the CSV ({} of them failed or errored)",
        s.ok, s.fail, s.error, s.invalid, s.skipped, s.skipped_failed
    )
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

/// `suite info`: one block per platform; exit code 0 only when some GPU is visible.
pub fn info(only: Option<Platform>) -> ExitCode {
    let (text, code) = info_text(only);
    emit(&text);
    code
}

/// The text of `suite info` and its exit code.
pub fn info_text(only: Option<Platform>) -> (String, ExitCode) {
    let mut out = String::new();
    outln!(out, "suite {} (commit {})", env!("CARGO_PKG_VERSION"), git_describe());
    let mut any_device = false;
    for platform in Platform::ALL.into_iter().filter(|p| only.is_none_or(|o| o == *p)) {
        let survey = device::survey(platform);
        let blas_name = match platform {
            Platform::Amd => "rocBLAS",
            Platform::Nvidia => "cuBLAS",
        };
        outln!(out, "\n{} ({})", platform.name().to_uppercase(), platform.runtime());
        match &survey.runtime {
            Ok(rt) => outln!(
                out,
                "  runtime:  {} {} loaded from {}{}",
                platform.runtime(),
                rt.version,
                rt.library,
                if rt.driver_version.is_empty() { String::new() } else { format!(", driver {}", rt.driver_version) }
            ),
            Err(e) => outln!(out, "  runtime:  {}", indent(&e.to_string())),
        }
        match &survey.devices {
            Ok(devices) => {
                any_device |= !devices.is_empty();
                for p in devices {
                    outp!(out, "{}", describe_device(p));
                }
            }
            // The runtime line already says why when the library is missing; repeat only other reasons.
            Err(e) if survey.runtime.is_ok() => outln!(out, "  devices:  {}", indent(&e.to_string())),
            Err(_) => {}
        }
        match &survey.blas {
            Ok(path) => outln!(out, "  {blas_name}:  loaded from {path}"),
            Err(e) => outln!(out, "  {blas_name}:  {}", indent(&e.to_string())),
        }
        match kernels::find(platform) {
            Ok(c) => outln!(out, "  compiler: {c}"),
            Err(e) => outln!(out, "  compiler: {}", indent(&e.to_string())),
        }
    }
    outp!(out, "{}", describe_host());
    if any_device {
        (out, ExitCode::SUCCESS)
    } else {
        outln!(out, "\nno GPU visible on any platform");
        (out, ExitCode::FAILURE)
    }
}

/// The host block of `suite info`: the memory this process may use (every figure, the smallest binds) and where
/// it runs (CPUs, GPU variables, Slurm).
fn describe_host() -> String {
    let placement = crate::host::Placement::read();
    let memory = crate::host::HostMemory { figures: placement.host_memory.clone() };
    let gib = |b: u64| b as f64 / f64::from(1u32 << 30);
    let mut s = String::new();
    outln!(s, "\nHOST ({})", gethostname::gethostname().to_string_lossy());
    match memory.available() {
        Some(binding) => {
            outln!(
                s,
                "  memory:   {:.1} GiB available to this process, the smallest of:",
                gib(binding.available_bytes)
            );
            for f in &memory.figures {
                outln!(s, "            {:>7.1} GiB  {}", gib(f.available_bytes), f.source);
            }
        }
        None => outln!(s, "  memory:   not readable (no /proc/meminfo, cgroup or Slurm figure): not checked"),
    }
    outln!(
        s,
        "  CPUs:     {}{}",
        placement.cpus_allowed.as_deref().unwrap_or("not readable"),
        placement.cpu_mask.as_deref().map(|m| format!(" (mask {m})")).unwrap_or_default()
    );
    let gpus: Vec<String> = placement.gpu_variables.iter().map(|(k, v)| format!("{k}={v}")).collect();
    outln!(s, "  GPU vars: {}", if gpus.is_empty() { "none set".to_string() } else { gpus.join(" ") });
    if let Ok(job) = std::env::var("SLURM_JOB_ID") {
        let or_unknown = |v: &Option<String>| v.clone().unwrap_or_else(|| "?".into());
        outln!(
            s,
            "  Slurm:    job {job}, partition {}, node {}, task {}",
            or_unknown(&placement.slurm_partition),
            or_unknown(&placement.slurm_node),
            or_unknown(&placement.slurm_task)
        );
    }
    s
}

fn indent(text: &str) -> String {
    text.replace('\n', "\n            ")
}

/// The device block of `suite info`.
pub fn describe_device(p: &Props) -> String {
    let mut s = String::new();
    let mib = |b: u64| b / (1 << 20);
    let kib = |b: u64| b / 1024;
    let opt = |v: Option<u32>, unit: &str| v.map(|v| format!("{v} {unit}")).unwrap_or_else(|| "not reported".into());
    let arch =
        if p.arch_full == p.arch.as_str() { p.arch_full.clone() } else { format!("{}, {}", p.arch, p.arch_full) };
    let _ = writeln!(s, "  device {}: {} ({arch})", p.ordinal, p.name);
    let _ = writeln!(s, "    wave size        {}", p.wave_size);
    let _ = writeln!(s, "    compute units    {}", p.cu_count);
    let _ = writeln!(
        s,
        "    per CU           {} items, {} groups, {} KiB LDS, {} registers",
        p.max_items_per_cu,
        p.max_groups_per_cu.map(|g| g.to_string()).unwrap_or_else(|| "?".into()),
        kib(p.lds_bytes_per_cu),
        p.registers_per_cu
    );
    let _ = writeln!(
        s,
        "    per group        {} items, {} KiB LDS ({} KiB opt-in)",
        p.max_group_size,
        kib(p.lds_bytes_per_group),
        kib(p.lds_bytes_per_group_optin)
    );
    let _ = writeln!(
        s,
        "    clocks           shader {}, memory {}",
        opt(p.clock_mhz, "MHz"),
        opt(p.memory_clock_mhz, "MHz")
    );
    let _ = writeln!(
        s,
        "    memory           {} MiB, bus {}, L2 {}",
        mib(p.memory_bytes),
        opt(p.memory_bus_bits, "bits"),
        p.l2_bytes.map(|b| format!("{} KiB", kib(b))).unwrap_or_else(|| "not reported".into())
    );
    let _ = writeln!(s, "    versions         {}; driver {}", p.runtime_version, p.driver_version);
    s
}

/// `suite kernels inspect`.
fn inspect(cli: &Cli, arch: Option<&str>, sources: &[&'static kernels::Source<'static>]) -> Result<ExitCode, Error> {
    let store = KernelStore::new(cli.kernels_dir.clone());
    let mut out = String::new();
    let mut notes = Vec::new();
    let arch = match arch {
        Some(a) => Arch::parse(a).map_err(|e| Error::Options(format!("--arch: {e}")))?,
        None => open_gpu(cli)?.device.props().arch.clone(),
    };
    match arch.platform() {
        Platform::Amd => {
            outln!(
                out,
                "{:<10} {:<38} {:>5} {:>5} {:>5} {:>9} {:>9} {:>5} {:>9} {:>7} {OCCUPANCY_HEADER}",
                "source",
                "kernel",
                "vgpr",
                "agpr",
                "sgpr",
                "lds_bytes",
                "scratch_b",
                "wave",
                "max_group",
                "spills"
            );
            for source in sources {
                let object = store.code_object(source, &arch)?;
                for k in &object.info.amd_kernels {
                    // Statically, for groups of the kernel's largest size, on the profile for its wave size.
                    let occ = Profile::for_arch(&arch, Some(k.wave_size))
                        .and_then(|p| p.occupancy(&Resources::from_amd_kernel(k)));
                    outln!(
                        out,
                        "{:<10} {:<38} {:>5} {:>5} {:>5} {:>9} {:>9} {:>5} {:>9} {:>7} {}",
                        source.name,
                        k.name,
                        k.vgpr_count,
                        k.agpr_count.map(|a| a.to_string()).unwrap_or_else(|| "-".into()),
                        k.sgpr_count,
                        k.lds_bytes,
                        k.scratch_bytes,
                        k.wave_size.0,
                        k.max_group_size,
                        k.vgpr_spill_count.unwrap_or(0) + k.sgpr_spill_count.unwrap_or(0),
                        occupancy_columns(k.max_group_size, occ, &mut notes)
                    );
                }
            }
            out.extend(notes);
            emit(&out);
            Ok(ExitCode::SUCCESS)
        }
        Platform::Nvidia => {
            // A cubin's resource use is reported by the driver, which needs the GPU.
            let gpu = Gpu::open(Some(Platform::Nvidia), cli.device, cli.kernels_dir.clone())?;
            if gpu.device.props().arch != arch {
                return Err(Error::Options(format!(
                    "--arch {arch}: the NVIDIA driver reports resources only for the device's own architecture ({})",
                    gpu.device.props().arch
                )));
            }
            outln!(
                out,
                "{:<10} {:<38} {:>9} {:>9} {:>13} {:>9} {OCCUPANCY_HEADER}",
                "source",
                "kernel",
                "registers",
                "lds_bytes",
                "local_bytes",
                "max_group"
            );
            for source in sources {
                let object = store.code_object(source, &arch)?;
                for name in kernels::cubin_kernel_names(&object.bytes)? {
                    let k = gpu.kernel(source.name, &name)?;
                    let group = k.attrs.max_group_size;
                    let occ = Profile::for_arch(&arch, None)
                        .and_then(|p| p.occupancy(&Resources::from_attrs(&k.attrs, group, 0)));
                    outln!(
                        out,
                        "{:<10} {:<38} {:>9} {:>9} {:>13} {:>9} {}",
                        source.name,
                        k.name,
                        k.attrs.registers_per_item,
                        k.attrs.static_lds_bytes,
                        k.attrs.scratch_bytes_per_item,
                        k.attrs.max_group_size,
                        occupancy_columns(group, occ, &mut notes)
                    );
                }
            }
            out.extend(notes);
            emit(&out);
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `suite occupancy calc`: the occupancy, then what each resource allows on its own.
fn occupancy_calc(args: &OccupancyArgs) -> Result<ExitCode, Error> {
    let wave = args.wave.map(device::WaveSize);
    let profile = Profile::find(&args.arch, wave).map_err(|e| occupancy_flag_error(e, "--vgprs"))?;
    let regs_flag = if profile.platform == Platform::Nvidia { "--regs" } else { "--vgprs" };
    let flagged = |e| occupancy_flag_error(e, regs_flag);
    let res = Resources {
        group_size: args.wg,
        registers_per_item: profile.unified_vgprs(args.vgprs, args.agprs).map_err(flagged)?,
        sgprs: args.sgprs,
        lds_bytes_per_group: args.lds,
    };
    let occ = profile.occupancy(&res).map_err(flagged)?;
    let mut out = String::new();
    outln!(out, "profile        {} ({}, wave{})", profile.name, profile.platform, profile.wave_size);
    let plural = if occ.waves_per_group == 1 { "" } else { "s" };
    outln!(out, "group          {} items, {} wave{plural}", res.group_size, occ.waves_per_group);
    outln!(out, "groups_per_cu  {}", occ.groups_per_cu);
    outln!(out, "waves_per_cu   {} of {}", occ.waves_per_cu, occ.wave_slots_per_cu);
    outln!(out, "occupancy      {:.1}%", occ.percent);
    outln!(out, "limiter        {}\n\nlimit          groups_per_cu", occ.limiter);
    for limiter in Limiter::ALL {
        let groups = occ.limits.get(limiter).map_or_else(|| "-".to_string(), |n| n.to_string());
        let binds = if limiter == occ.limiter { "  <- binds" } else { "" };
        outln!(out, "{:<14} {groups:>13}{binds}", limiter.name());
    }
    outln!(out, "(-: does not limit)");
    emit(&out);
    Ok(ExitCode::SUCCESS)
}

/// An occupancy error as an option error naming the flag to fix (`regs_flag`: `--vgprs` or `--regs`).
fn occupancy_flag_error(e: occupancy::Error, regs_flag: &str) -> Error {
    use occupancy::Error as E;
    let flag = match &e {
        E::UnknownArch { .. } => "--arch",
        E::NoWaveSize { .. } => "--wave",
        E::TooLarge { input, .. } | E::Unsupported { input, .. } => match input {
            Input::GroupSize => "--wg",
            Input::Registers => regs_flag,
            Input::Agprs => "--agprs",
            Input::Sgprs => "--sgprs",
            Input::Lds => "--lds",
        },
        E::DoesNotFit { limiter: Limiter::Registers, .. } => regs_flag,
        E::DoesNotFit { limiter: Limiter::Sgprs, .. } => "--sgprs",
        E::DoesNotFit { limiter: Limiter::Lds, .. } => "--lds",
        E::EmptyGroup | E::DoesNotFit { .. } => "--wg",
    };
    Error::Options(format!("{flag}: {e}"))
}

/// Header of the occupancy columns of `suite kernels inspect`.
/// `suite kernels compare`: compiles `sources` for every target of `archs`, writes the tables and plots into
/// `out` and prints the files written.
fn compare_kernels(
    cli: &Cli,
    archs: &[Arch],
    sources: &[&'static kernels::Source],
    out: &std::path::Path,
) -> Result<ExitCode, Error> {
    use crate::kernels::compare as cmp;
    let store = KernelStore::new(cli.kernels_dir.clone());
    let targets = cmp::targets(archs);
    let cuobjdump = if archs.iter().any(|a| a.platform() == Platform::Nvidia) {
        let nvcc = store.compiler(Platform::Nvidia).ok().map(|c| c.path);
        Some(cmp::find_cuobjdump(nvcc.as_deref()).ok_or_else(|| {
            Error::Options(
                "NVIDIA architectures need cuobjdump to read resources without a GPU: `pip install \
                 nvidia-cuda-cuobjdump` (or the CUDA toolkit), then put it on PATH or set CUOBJDUMP"
                    .into(),
            )
        })?)
    } else {
        None
    };
    let mut rows = Vec::new();
    for t in &targets {
        eprintln!("compiling {} for {}", sources.iter().map(|s| s.name).collect::<Vec<_>>().join(", "), t.label());
        let found = cmp::rows(&store, t, sources, cuobjdump.as_deref()).map_err(|e| {
            let hint = if cmp::is_rdna(&t.arch) && e.to_string().contains("device library") {
                "\nDebian's HIP 5.2 has no device library for RDNA3: make one with `scripts/rdna-device-libs.sh DIR` \
                 and run again with DEVICE_LIB_PATH=DIR (ROCm 5.5 and later ship it)"
            } else {
                ""
            };
            Error::Options(format!("{}: {e}{hint}", t.label()))
        })?;
        rows.extend(found);
    }
    std::fs::create_dir_all(out).map_err(|e| Error::Options(format!("--out {}: {e}", out.display())))?;
    // What a reader needs to repeat it: the device-library folder (RDNA on Debian's HIP 5.2), the command, and
    // the compilers that built the objects.
    let lib_path = std::env::var("DEVICE_LIB_PATH").map(|p| format!("DEVICE_LIB_PATH={p} ")).unwrap_or_default();
    let mut command = format!("{lib_path}{}", std::env::args().collect::<Vec<_>>().join(" "));
    for platform in [Platform::Amd, Platform::Nvidia] {
        if archs.iter().any(|a| a.platform() == platform) {
            if let Ok(c) = store.compiler(platform) {
                command.push_str(&format!("\n# {platform}: {} {}", c.path.display(), c.version));
            }
        }
    }
    if let Some(tool) = &cuobjdump {
        command.push_str(&format!("\n# resources of cubins: {} --dump-resource-usage", tool.display()));
    }
    let mut written = Vec::new();
    for (name, text) in [("kernels.csv", cmp::csv(&rows)), ("kernels.md", cmp::markdown(&rows, &targets, &command))] {
        let path = out.join(name);
        std::fs::write(&path, text).map_err(|e| Error::Options(format!("cannot write {}: {e}", path.display())))?;
        written.push(path);
    }
    for (name, plot) in cmp::group_size_plots(&targets) {
        let path = out.join(name);
        crate::report::plot::render_png(&plot, &path, 1400, 900).map_err(|e| Error::Options(e.to_string()))?;
        written.push(path);
    }
    let mut text = String::new();
    for path in written {
        outln!(text, "{}", path.display());
    }
    emit(&text);
    Ok(ExitCode::SUCCESS)
}

const OCCUPANCY_HEADER: &str = "occ_group groups_per_cu occupancy_% limiter";

/// The occupancy columns of `suite kernels inspect` for groups of `group` items; an error leaves `-` (0 where no
/// group fits, with the binding resource) and its message, once, in `notes`.
fn occupancy_columns(group: u32, occ: Result<Occupancy, occupancy::Error>, notes: &mut Vec<String>) -> String {
    match occ {
        Ok(o) => format!("{group:>9} {:>13} {:>11.1} {}", o.groups_per_cu, o.percent, o.limiter),
        Err(e) => {
            let (groups, limiter) = match &e {
                occupancy::Error::DoesNotFit { limiter, .. } => ("0", limiter.name()),
                _ => ("-", "-"),
            };
            let note = format!("note: occupancy: {e}\n");
            if !notes.contains(&note) {
                notes.push(note);
            }
            format!("{group:>9} {groups:>13} {groups:>11} {limiter}")
        }
    }
}

/// Does `count` operations on the device with the kernel, then synchronises: one trial of a `suite bench`.
type BenchOperation = dyn FnMut(&(dyn device::Device + 'static), &device::Kernel, u32) -> Result<(), Error>;

/// What a `suite bench` measures against its C++ driver-API baseline, for the shared driver [`bench_against`].
struct BenchSpec {
    /// Name of one operation in the output, e.g. `launch` (`launches=`, `us_per_launch_median=`).
    unit: &'static str,
    /// Its plural, e.g. `launches`.
    units: &'static str,
    /// Kernel source and kernel the operation launches.
    source: &'static str,
    kernel: &'static str,
    /// The ratio suite / baseline the suite aims at.
    goal: f64,
}

/// `suite bench launch`: host time per launch of an empty kernel (`smoke_empty`), `count` launches back to back per
/// trial and one synchronisation, median of trials, beside `scripts/bench/launch_overhead.cpp` (goal ≤ 1.02).
fn bench_launch(
    cli: &Cli,
    count: u32,
    trials: u32,
    baseline: Option<&Path>,
    cubin: Option<&Path>,
) -> Result<ExitCode, Error> {
    let spec = BenchSpec { unit: "launch", units: "launches", source: "smoke", kernel: "smoke_empty", goal: 1.02 };
    bench_against(cli, &spec, count, trials, baseline, cubin, &mut |dev, kernel, count| {
        let config = LaunchConfig::linear(1, 1);
        for _ in 0..count {
            dev.launch(kernel, &config, &[])?;
        }
        dev.synchronize()?;
        Ok(())
    })
}

/// `suite bench roundtrip`: host time per bare round trip of the persistent-threads experiment (`pt_empty`, a
/// blocking 4-byte readback, `pt_empty`, synchronize), `count` per trial, median of trials, beside
/// `scripts/bench/pt_roundtrip.cpp` (goal ≤ 1.05).
fn bench_roundtrip(
    cli: &Cli,
    count: u32,
    trials: u32,
    baseline: Option<&Path>,
    cubin: Option<&Path>,
) -> Result<ExitCode, Error> {
    let spec = BenchSpec { unit: "round_trip", units: "round_trips", source: "pt", kernel: "pt_empty", goal: 1.05 };
    bench_against(cli, &spec, count, trials, baseline, cubin, &mut |dev, kernel, count| {
        let config = LaunchConfig::linear(1, 1);
        // One 4-byte buffer per trial (its allocation is ~0.05% of a trial of 2000 round trips).
        let word = dev.upload(&[0u32])?;
        let mut host = [0u8; 4];
        for _ in 0..count {
            dev.launch(kernel, &config, &[])?;
            dev.copy_to_host(word.raw(), &mut host)?;
            dev.launch(kernel, &config, &[])?;
            dev.synchronize()?;
        }
        Ok(())
    })
}

/// Host time per operation, `count` operations per trial (`run(dev, kernel, count)` does them and synchronises),
/// median of `trials`. With a baseline (the compiled C++ program of `scripts/bench/`), one trial of it runs as a
/// child process after each of the suite's, on the same cubin, so drift in clocks or load hits both alike; both
/// medians and their ratio are printed. `--cubin` makes the suite launch from the very file the baseline loads.
#[allow(clippy::too_many_arguments)]
fn bench_against(
    cli: &Cli,
    spec: &BenchSpec,
    count: u32,
    trials: u32,
    baseline: Option<&Path>,
    cubin: Option<&Path>,
    run: &mut BenchOperation,
) -> Result<ExitCode, Error> {
    if count == 0 || trials == 0 {
        return Err(Error::Options("--count and --trials must be at least 1".into()));
    }
    let gpu = open_gpu(cli)?;
    let dev = gpu.device.as_ref();
    if baseline.is_some() && dev.props().platform != Platform::Nvidia {
        return Err(Error::Options(
            "--baseline drives the CUDA driver API: use it on an NVIDIA device (--platform nvidia)".into(),
        ));
    }
    let kernel = match cubin {
        Some(path) => {
            let image = std::fs::read(path)
                .map_err(|e| Error::Bench(format!("cannot read the cubin {}: {e}", path.display())))?;
            dev.kernel(&dev.load_module(&image)?, spec.kernel)?
        }
        None => gpu.kernel(spec.source, spec.kernel)?,
    };
    // Warm-up: first launches pay for lazy loading in the driver.
    run(dev, &kernel, 100)?;
    let field = format!("us_per_{}_median=", spec.unit);
    let (mut suite_us, mut baseline_us) = (Vec::with_capacity(trials as usize), Vec::new());
    for _ in 0..trials {
        let start = Instant::now();
        run(dev, &kernel, count)?;
        suite_us.push(start.elapsed().as_secs_f64() * 1e6 / f64::from(count));
        if let (Some(program), Some(cubin)) = (baseline, cubin) {
            baseline_us.push(run_baseline(program, cubin, count, dev.props().ordinal, &field)?);
        }
    }
    let median = |us: &[f64]| Stats::from_ms(us).ok_or_else(|| Error::Bench(format!("unusable timings {us:?}")));
    let stats = median(&suite_us)?;
    let mut out = String::new();
    outln!(
        out,
        "{}={count} trials={trials} {field}{:.4} min={:.4} max={:.4} device=\"{}\"",
        spec.units,
        stats.median_ms,
        stats.min_ms,
        stats.max_ms,
        dev.props().name
    );
    if let Some(program) = baseline {
        let base = median(&baseline_us)?;
        outln!(
            out,
            "baseline {}: {field}{:.4} min={:.4} max={:.4}",
            program.display(),
            base.median_ms,
            base.min_ms,
            base.max_ms
        );
        outln!(
            out,
            "ratio suite/baseline = {:.3} (medians, trials interleaved; goal <= {})",
            stats.median_ms / base.median_ms,
            spec.goal
        );
    }
    emit(&out);
    Ok(ExitCode::SUCCESS)
}

/// Runs one trial of a C++ baseline (`PROGRAM CUBIN COUNT 1 ORDINAL`) and returns the value it prints after
/// `field` (µs per operation).
fn run_baseline(program: &Path, cubin: &Path, count: u32, ordinal: u32, field: &str) -> Result<f64, Error> {
    let output = std::process::Command::new(program)
        .arg(cubin)
        .arg(count.to_string())
        .arg("1")
        .arg(ordinal.to_string())
        .output()
        .map_err(|e| Error::Bench(format!("cannot run {}: {e}", program.display())))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(Error::Bench(format!(
            "{} failed ({}): {}{}",
            program.display(),
            output.status,
            stdout.trim(),
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    baseline_value(&stdout, field)
        .ok_or_else(|| Error::Bench(format!("{} printed no {field}: {}", program.display(), stdout.trim())))
}

/// The `us_per_launch_median=` value of the baseline's output line.
#[cfg(test)]
fn baseline_us_per_launch(stdout: &str) -> Option<f64> {
    baseline_value(stdout, "us_per_launch_median=")
}

/// The value after `field` (e.g. `us_per_round_trip_median=`) in a baseline's output line.
fn baseline_value(stdout: &str, field: &str) -> Option<f64> {
    let value = stdout.split_whitespace().find_map(|w| w.strip_prefix(field))?;
    value.parse::<f64>().ok().filter(|v| v.is_finite() && *v > 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let kernels = kernels::Error::Io { action: "write cache file", path: "/c/k".into(), source: io(), hint: "" };
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
        use crate::kernels::{Compiler, CompilerKind, Error as KernelsError};
        crate::kernels::test_support::compiler(Platform::Amd);
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("kernels-build");
        let arch = Arch::parse("gfx90a").unwrap();
        let all: Vec<&kernels::Source> = kernels::all().iter().collect();
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
        let shape = kernels::DeviceShape { cu_count: 110, max_items_per_cu: 2048 };
        let mut specialised = 0;
        for entry in registry::EXPERIMENTS {
            for exp in [(entry.quick)(), (entry.default)()] {
                for source in exp.sources() {
                    node.code_object(kernels::source(source).unwrap(), &arch).unwrap();
                }
                for spec in exp.specialisations(shape) {
                    let object = node.specialised(&spec.source(), &arch, &spec.defines).unwrap();
                    assert!(matches!(object.origin, kernels::Origin::Prebuilt(_)), "{:?}", object.origin);
                    specialised += 1;
                }
            }
        }
        assert!(specialised > 0);
        assert!(!log.exists(), "a compiler ran: {}", std::fs::read_to_string(&log).unwrap_or_default());

        // A device of another CU count needs other specialisations: the error names the command that makes them.
        let other = kernels::DeviceShape { cu_count: 104, ..shape };
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
        assert!(matches!(poisoned, Error::Gpu(_)), "{poisoned:?}");
        assert!(poisoned.to_string().contains("start the command again"), "{poisoned}");
        let nothing = Error::NothingToPlot { csv: "r/matmul.csv".into() };
        assert_eq!(nothing.to_string(), "r/matmul.csv: no verified rows to plot");
        let plot = crate::report::plot::Error::NoSeries { path: "p.png".into() };
        assert!(matches!(Error::from(plot), Error::Plot(_)));
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
