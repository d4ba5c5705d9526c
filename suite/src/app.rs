//! What each command does. `main.rs` parses the command line and prints the error chain; everything else is here,
//! testable as a library.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use crate::cli::{BenchCommand, Cli, Command, KernelsCommand, OccupancyArgs, OccupancyCommand, RunArgs, RunCommand};
use crate::device::{self, Arch, LaunchConfig, Platform, Props};
use crate::experiments::matmul::{self, MatmulSweep, Shape};
use crate::experiments::occupancy::{OccupancySweep, SWEEPS as OCCUPANCY_SWEEPS};
use crate::experiments::{self, smoke::SmokeSweep, Error, Experiment, RunOptions};
use crate::gpu::Gpu;
use crate::kernels::{self, KernelStore};
use crate::measure::Stats;
use crate::occupancy::{self, Input, Limiter, Occupancy, Profile, Resources};
use crate::options;
use crate::report::run_json::GIT_COMMIT;

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
        Command::Kernels(KernelsCommand::Build { arch, sources, out }) => {
            let archs = parse_archs(arch)?;
            let sources = select_sources(sources)?;
            let store = KernelStore::new(cli.kernels_dir.clone());
            let mut text = String::new();
            for path in store.build(&sources, &archs, out)? {
                outln!(text, "{}", path.display());
            }
            emit(&text);
            Ok(ExitCode::SUCCESS)
        }
        Command::Kernels(KernelsCommand::Inspect { arch, sources }) => {
            let sources = select_sources(sources)?;
            inspect(cli, arch.as_deref(), &sources)
        }
        Command::Run(RunCommand::Smoke { sizes, group_size, run }) => {
            let defaults = SmokeSweep::default();
            let sweep =
                SmokeSweep { sizes: options::parse_sizes("--sizes", sizes, &defaults.sizes)?, group_size: *group_size };
            run_experiment(cli, &sweep, run)
        }
        Command::Run(RunCommand::Matmul { sweep, run }) => {
            let defaults = MatmulSweep::default();
            let shapes = if sweep.sizes.is_empty() {
                defaults.shapes
            } else {
                sweep.sizes.iter().map(|s| Shape::parse(s)).collect::<Result<_, _>>()?
            };
            let kernels = matmul::select_kernels(&sweep.kernels, &sweep.tiles)?;
            run_experiment(cli, &MatmulSweep::new(shapes, kernels, !sweep.no_vendor), run)
        }
        Command::Run(RunCommand::Occupancy { sweep, run }) => {
            let mut exp = OccupancySweep::default();
            if let Some(n) = &sweep.elements {
                exp.elements = options::parse_size("--elements", n)?;
            }
            if !sweep.group_sizes.is_empty() {
                exp.group_sizes = sweep.group_sizes.clone();
            }
            if !sweep.lds_bytes.is_empty() {
                exp.lds_bytes = sweep.lds_bytes.clone();
            }
            if let Some(bad) = sweep.sweeps.iter().find(|s| !OCCUPANCY_SWEEPS.contains(&s.as_str())) {
                return Err(Error::Options(format!(
                    "--sweeps: unknown sweep `{bad}`; available: {}",
                    OCCUPANCY_SWEEPS.join(", ")
                )));
            }
            exp.sweeps = sweep.sweeps.clone();
            exp.chunk = sweep.chunk.unwrap_or(exp.chunk);
            exp.passes = sweep.passes.unwrap_or(exp.passes);
            if exp.chunk == 0 || exp.passes == 0 || exp.group_sizes.contains(&0) {
                return Err(Error::Options("--chunk, --passes and --group-sizes must be at least 1".into()));
            }
            run_experiment_with(cli, &mut exp, run, |exp, dir| exp.timeline_dir = Some(dir.to_path_buf()))
        }
        Command::Bench(BenchCommand::Launch { count, trials }) => bench_launch(cli, *count, *trials),
        Command::Occupancy(OccupancyCommand::Calc(args)) => occupancy_calc(args),
        Command::Merge { dir } => {
            let groups = crate::report::merge::shard_files(dir)?;
            if groups.is_empty() {
                return Err(Error::Options(format!("{}: no <experiment>.shard-<i>-of-<n>.csv files", dir.display())));
            }
            let mut text = String::new();
            for (experiment, shards) in &groups {
                let out = dir.join(experiments::csv_name(experiment, None));
                let rows = crate::report::merge::merge(shards, &out)?;
                outln!(text, "{}: {rows} rows from {} shards", out.display(), shards.len());
                for path in experiments::render_plots(experiment_named(experiment)?.as_ref(), &out, dir)? {
                    outln!(text, "{}", path.display());
                }
            }
            emit(&text);
            Ok(ExitCode::SUCCESS)
        }
        Command::Plot { experiment, csv, out } => {
            let exp = experiment_named(experiment)?;
            let out_dir = out.clone().unwrap_or_else(|| csv.parent().map(Path::to_path_buf).unwrap_or_default());
            let written = experiments::render_plots(exp.as_ref(), csv, &out_dir)?;
            if written.is_empty() {
                return Err(Error::Options(format!("{}: no verified rows to plot", csv.display())));
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

/// An experiment with its default sweep, by name (for commands that only read its CSV).
fn experiment_named(name: &str) -> Result<Box<dyn Experiment>, Error> {
    match name {
        "matmul" => Ok(Box::new(MatmulSweep::default())),
        "smoke" => Ok(Box::new(SmokeSweep::default())),
        "occupancy" => Ok(Box::new(OccupancySweep::default())),
        other => Err(Error::Options(format!("unknown experiment `{other}`; known: matmul, occupancy, smoke"))),
    }
}

fn parse_archs(names: &[String]) -> Result<Vec<Arch>, Error> {
    names.iter().map(|a| Arch::parse(a).map_err(|e| Error::Options(format!("--arch: {e}")))).collect()
}

fn select_sources(names: &[String]) -> Result<Vec<&'static kernels::Source>, Error> {
    if names.is_empty() {
        return Ok(kernels::all().iter().collect());
    }
    names.iter().map(|n| kernels::source(n).map_err(Error::from)).collect()
}

fn open_gpu(cli: &Cli) -> Result<Gpu, Error> {
    Gpu::open(cli.platform.platform(), cli.device, cli.kernels_dir.clone())
}

fn run_experiment(cli: &Cli, exp: &dyn Experiment, args: &RunArgs) -> Result<ExitCode, Error> {
    run_experiment_inner(cli, exp, args, None)
}

/// Runs an experiment that wants to know its results folder before it starts (e.g. for side files).
fn run_experiment_with<E: Experiment>(
    cli: &Cli,
    exp: &mut E,
    args: &RunArgs,
    set_dir: impl FnOnce(&mut E, &Path),
) -> Result<ExitCode, Error> {
    if let Some(dir) = &args.out {
        set_dir(exp, dir);
        return run_experiment_inner(cli, exp, args, None);
    }
    let gpu = open_gpu(cli)?;
    let dir = experiments::default_out_dir(&gpu);
    set_dir(exp, &dir);
    run_experiment_inner(cli, exp, args, Some((gpu, dir)))
}

fn run_experiment_inner(
    cli: &Cli,
    exp: &dyn Experiment,
    args: &RunArgs,
    opened: Option<(Gpu, std::path::PathBuf)>,
) -> Result<ExitCode, Error> {
    let reps = options::check_reps(args.reps)?;
    let (gpu, default_dir) = match opened {
        Some((gpu, dir)) => (gpu, Some(dir)),
        None => (open_gpu(cli)?, None),
    };
    let props = gpu.device.props();
    eprintln!("{} on {} ({}, wave {}), {}", exp.name(), props.name, props.arch, props.wave_size, props.runtime_version);
    let out_dir = args.out.clone().or(default_dir).unwrap_or_else(|| experiments::default_out_dir(&gpu));
    if args.time_budget.is_nan() || args.time_budget <= 0.0 {
        return Err(Error::Options(format!("--time-budget: {} is not a positive number of seconds", args.time_budget)));
    }
    let opts = RunOptions {
        out_dir: out_dir.clone(),
        resume: args.resume,
        shard: args.shard,
        warmup: args.warmup,
        reps,
        time_budget_s: args.time_budget,
    };
    let summary = experiments::run(&gpu, exp, &opts)?;
    eprintln!(
        "{}: {} ok, {} failed verification, {} errors, {} invalid, {} already measured; results in {}",
        exp.name(),
        summary.ok,
        summary.fail,
        summary.error,
        summary.invalid,
        summary.skipped,
        out_dir.display()
    );
    Ok(if summary.success() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
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
    outln!(out, "suite {} (commit {GIT_COMMIT})", env!("CARGO_PKG_VERSION"));
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
    if any_device {
        (out, ExitCode::SUCCESS)
    } else {
        outln!(out, "\nno GPU visible on any platform");
        (out, ExitCode::FAILURE)
    }
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
fn inspect(cli: &Cli, arch: Option<&str>, sources: &[&'static kernels::Source]) -> Result<ExitCode, Error> {
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

/// `suite bench launch`: host time per launch of an empty kernel, `count` launches per trial, median of trials.
fn bench_launch(cli: &Cli, count: u32, trials: u32) -> Result<ExitCode, Error> {
    if count == 0 || trials == 0 {
        return Err(Error::Options("--count and --trials must be at least 1".into()));
    }
    let gpu = open_gpu(cli)?;
    let kernel = gpu.kernel("smoke", "smoke_empty")?;
    let config = LaunchConfig::linear(1, 1);
    let dev = gpu.device.as_ref();
    // Warm-up: first launches pay for lazy loading in the driver.
    for _ in 0..100 {
        dev.launch(&kernel, &config, &[])?;
    }
    dev.synchronize()?;
    let mut per_launch_us = Vec::with_capacity(trials as usize);
    for _ in 0..trials {
        let start = Instant::now();
        for _ in 0..count {
            dev.launch(&kernel, &config, &[])?;
        }
        dev.synchronize()?;
        per_launch_us.push(start.elapsed().as_secs_f64() * 1e6 / f64::from(count));
    }
    let stats = Stats::from_ms(&per_launch_us).expect("timings are finite and non-negative");
    let mut out = String::new();
    outln!(
        out,
        "launches={count} trials={trials} us_per_launch_median={:.4} min={:.4} max={:.4} device=\"{}\"",
        stats.median_ms,
        stats.min_ms,
        stats.max_ms,
        dev.props().name
    );
    emit(&out);
    Ok(ExitCode::SUCCESS)
}

impl From<options::Error> for Error {
    fn from(e: options::Error) -> Error {
        Error::Options(e.to_string())
    }
}
