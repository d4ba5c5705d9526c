//! The command-line interface, declared with clap. Validation of values lives in [`crate::options`].

use std::path::PathBuf;

use clap::builder::PossibleValuesParser;
use clap::error::ErrorKind;
use clap::{ArgMatches, Args, FromArgMatches, Parser, Subcommand, ValueEnum};

use crate::device::Platform;
use crate::experiments::registry::{self, Entry};
use crate::options::Shard;

/// GPU experiment suite: measure how kernels behave on AMD (HIP, wave64) and NVIDIA (CUDA, warp32) GPUs.
#[derive(Debug, Parser)]
#[command(name = "suite", version, about, long_about = None)]
pub struct Cli {
    /// Which platform to use: auto tries AMD, then NVIDIA.
    #[arg(long, global = true, value_enum, default_value_t = PlatformChoice::Auto, help_heading = GLOBAL_HEADING)]
    pub platform: PlatformChoice,

    /// Device index on that platform (under Slurm, one process per GPU usually sees device 0).
    #[arg(long, global = true, default_value_t = 0, help_heading = GLOBAL_HEADING)]
    pub device: u32,

    /// Folder of prebuilt code objects (from `suite kernels build --out`), for nodes without a compiler.
    #[arg(long, global = true, value_name = "DIR", help_heading = GLOBAL_HEADING)]
    pub kernels_dir: Option<PathBuf>,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// `--platform` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlatformChoice {
    /// AMD if it has a device, else NVIDIA.
    Auto,
    /// AMD GPUs through HIP.
    Amd,
    /// NVIDIA GPUs through CUDA.
    Nvidia,
}

impl PlatformChoice {
    /// The platform asked for, `None` for auto.
    pub fn platform(self) -> Option<Platform> {
        match self {
            PlatformChoice::Auto => None,
            PlatformChoice::Amd => Some(Platform::Amd),
            PlatformChoice::Nvidia => Some(Platform::Nvidia),
        }
    }
}

/// Top-level commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show platforms, devices, limits, runtime and driver versions, compilers and BLAS libraries.
    /// Exits non-zero when no GPU is visible.
    Info,
    /// Build or inspect the GPU kernels.
    #[command(subcommand)]
    Kernels(KernelsCommand),
    /// Run every experiment (the quick preset, or --full) into one results folder with a summary, or one
    /// experiment with its own flags: `suite run <experiment> --help`.
    Run(Box<RunAll>),
    /// List the experiments `suite run` knows, one name per line (scripts/run-all.sh runs each).
    Experiments,
    /// Micro-benchmarks of the suite itself.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Theoretical occupancy from a kernel's resources and an architecture profile (no GPU needed).
    #[command(subcommand)]
    Occupancy(OccupancyCommand),
    /// Join the CSVs of a sharded run (`--shard i/n`) in a results folder into one CSV per experiment, and plot it.
    /// Refuses a set with a shard missing, shards of different counts or fingerprints, or a point twice.
    Merge {
        /// Results folder holding `<experiment>.shard-<i>-of-<n>.csv` files and their run.json.
        dir: PathBuf,
        /// Merge a run that holds fewer points than it planned (it says how many are missing), e.g. after a node
        /// failed or the job reached its time limit.
        #[arg(long)]
        partial: bool,
        /// Wait for the folder's writers (the shards of a running job, another merge) to end instead of refusing.
        #[arg(long)]
        wait: bool,
    },
    /// What a results folder holds against what its runs planned: one line per experiment, then `complete` or
    /// `incomplete` with the command that continues it. Exit status: 0 complete, 4 incomplete, 5 no plan recorded (no
    /// folder yet, or one from an older suite), 6 complete but some points failed verification or errored, 1 the
    /// folder could not be read.
    Status {
        /// The results folder.
        dir: PathBuf,
    },
    /// Compare results folders side by side: report.md (devices, wave64 vs warp32, commits, timing; per experiment
    /// the headline figures, the largest differences, the points only some runs hold) and PNGs with one line per run.
    /// Run 1 is the baseline of every ratio; a run may be compared with itself.
    Compare {
        /// Results folders (each with run.json and <experiment>.csv files), run 1 first.
        #[arg(required = true, num_args = 2.., value_name = "RUN")]
        runs: Vec<PathBuf>,
        /// Output folder (default: results/compare-<run 1>-vs-<run 2>...).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Draw an experiment's plots again from its CSV (e.g. after `suite merge`, or on a laptop).
    Plot {
        /// Experiment whose plots to draw.
        #[arg(value_parser = PossibleValuesParser::new(registry::names()))]
        experiment: String,
        /// The experiment's CSV.
        csv: PathBuf,
        /// Folder for the PNGs (default: the CSV's folder).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Draw them although the folder holds fewer points than it planned (or has no run.json to tell): every
        /// plot's note then says so. Without it such a folder is refused.
        #[arg(long)]
        partial: bool,
    },
}

/// `suite kernels ...`
#[derive(Debug, Subcommand)]
pub enum KernelsCommand {
    /// Compile kernel sources ahead of time (e.g. on a login node) into a folder for --kernels-dir: every source,
    /// and every kernel the quick and full presets generate or specialise at run time (fusion's), so a run with
    /// --kernels-dir never starts a compiler.
    Build {
        /// Architectures, comma-separated: gfx90a, gfx942, sm_80, sm_90, ...
        #[arg(long, value_delimiter = ',', required = true)]
        arch: Vec<String>,
        /// Compute units (CUs, SMs) of the device the run-time specialisations are for (default: the part the suite
        /// knows for each architecture, e.g. 110 for gfx90a, LUMI's MI250X GCD; 132 for sm_90, H100/H200 SXM).
        #[arg(long)]
        cus: Option<u32>,
        /// Kernel sources to build (default: all).
        #[arg(long, value_delimiter = ',')]
        sources: Vec<String>,
        /// Output folder.
        #[arg(long, default_value = "kernels-build")]
        out: PathBuf,
    },
    /// Compare every kernel across architectures statically, with no GPU: registers, LDS, scratch and occupancy
    /// per kernel (AMD from the code-object metadata, NVIDIA from cuobjdump), and occupancy vs group size per
    /// architecture; RDNA is compiled as wave32 and wave64. Writes kernels.csv, kernels.md and PNGs into --out.
    Compare {
        /// Architectures, comma-separated, e.g. gfx90a,sm_90,gfx1100.
        #[arg(long, value_delimiter = ',', required = true)]
        arch: Vec<String>,
        /// AMD compilers, comma-separated: each AMD architecture is compiled by each, side by side (NVIDIA ones by
        /// nvcc); `hipcc,zig` shows how register use spreads between compilers.
        #[arg(long, value_enum, value_delimiter = ',', default_value = "hipcc")]
        compiler: Vec<AmdCompiler>,
        /// Kernel sources to compare (default: all).
        #[arg(long, value_delimiter = ',')]
        sources: Vec<String>,
        /// Output folder.
        #[arg(long, required = true)]
        out: PathBuf,
    },
    /// Show each kernel's resources: AMD registers, LDS and scratch read statically from the code object;
    /// NVIDIA registers and shared memory from the driver (needs a GPU).
    Inspect {
        /// Architecture to inspect (default: the device's).
        #[arg(long)]
        arch: Option<String>,
        /// AMD compiler that builds the code objects inspected.
        #[arg(long, value_enum, default_value_t = AmdCompiler::Hipcc)]
        compiler: AmdCompiler,
        /// Kernel sources to inspect (default: all).
        #[arg(long, value_delimiter = ',')]
        sources: Vec<String>,
    },
}

/// The AMD compiler of `suite kernels inspect|compare` (static figures only: `suite run` always uses the node's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AmdCompiler {
    /// The node's, as `suite run` finds it: $HIPCC, $ROCM_PATH/bin/hipcc, $HIP_PATH/bin/hipcc, /opt/rocm/bin/hipcc,
    /// hipcc on PATH.
    Hipcc,
    /// zig's clang (upstream clang 18.1.6 in `pip install ziglang==0.13.0`): $ZIG, the wheel, zig on PATH; with ROCm's
    /// HIP headers and device libraries ($ROCM_PATH, or Debian's).
    Zig,
}

/// The help heading of the options every command takes (`--platform`, `--device`, `--kernels-dir`).
pub const GLOBAL_HEADING: &str = "Global options (every command)";
/// The help heading of the options every `suite run` takes, whichever experiment it runs.
pub const RUN_HEADING: &str = "Run options (every experiment)";

/// The help heading of the flags of one experiment's sweep, e.g. `matmul options`.
pub fn experiment_heading(name: &str) -> String {
    format!("{name} options")
}

/// Options shared by every `suite run` experiment.
#[derive(Debug, Args)]
#[command(next_help_heading = RUN_HEADING)]
pub struct RunArgs {
    /// Timed repetitions per point (the median, min and max are recorded); each is a batch of launches back to
    /// back, sized to last about 1 ms, whose time / launches is the time per launch.
    #[arg(long, global = true, default_value_t = 20, allow_negative_numbers = true)]
    pub reps: u32,
    /// Untimed batches before timing (the first two size the batch).
    #[arg(long, global = true, default_value_t = 3, allow_negative_numbers = true)]
    pub warmup: u32,
    /// How a batch is enqueued: `graph` captures it once and replays it (CUDA or HIP graphs), `stream` launches
    /// each kernel on the stream.
    #[arg(long, global = true, value_enum, default_value_t = crate::device::Timing::Graph)]
    pub timing: crate::device::Timing,
    /// Seconds one point may spend in warm-up and timed launches: slow points get fewer repetitions (at least 3).
    #[arg(long, global = true, default_value_t = 2.0, allow_negative_numbers = true)]
    pub time_budget: f64,
    /// A point whose estimated time (from its operations and bytes at the device's peak, with its warm-up and
    /// repetitions) is longer than this many seconds is not run: it becomes an `invalid` row giving the estimate.
    #[arg(long, global = true, default_value_t = 60.0, value_name = "SECONDS", allow_negative_numbers = true)]
    pub max_point_seconds: f64,
    /// Results folder (default: results/<date>-<host>-<arch>).
    #[arg(long, global = true)]
    pub out: Option<PathBuf>,
    /// Keep the rows an earlier, interrupted run wrote and measure only the missing points.
    #[arg(long, global = true)]
    pub resume: bool,
    /// Run every n-th point starting at i (0-based), e.g. --shard $SLURM_LOCALID/8.
    #[arg(long, global = true, value_name = "I/N")]
    pub shard: Option<Shard>,
    /// Wait for another writer of the results folder to end instead of refusing at once.
    #[arg(long, global = true)]
    pub wait: bool,
    /// Do not sample the GPU's clocks, power and throttle reasons during each point (NVML, AMD SMI): the clock
    /// columns stay empty. For measuring what sampling costs; a resumed folder accepts runs with and without it.
    #[arg(long, global = true)]
    pub no_telemetry: bool,
    /// Plan the run without a GPU and measure nothing: parse the experiment and its flags as the run will, list the
    /// points per experiment, estimate the time on --part, suggest a Slurm --time, and say whether --out would
    /// accept the run (exit 3 when it would refuse it). With --shard i/n: the plan of n tasks.
    #[arg(long, global = true)]
    pub dry_run: bool,
    /// With --dry-run: the part to plan for (unless told: mi250x-gcd, LUMI's MI250X GCD, or h100-sxm with
    /// --platform nvidia, and the plan says it assumed it; the keys are listed in the error for an unknown one).
    #[arg(long, global = true, value_name = "PART")]
    pub part: Option<String>,
    /// After the timed run, run every verified point once more under the vendor profiler (Nsight Compute's ncu on
    /// NVIDIA, rocprofv3 on AMD) into counters.csv beside the rows: achieved occupancy, DRAM bytes, L2 hit rate,
    /// FP instructions (docs/counters.md). A pass of its own: the timed rows are untouched, and a missing profiler
    /// is a message while the run goes on.
    #[arg(long, global = true)]
    pub counters: bool,
    /// Internal: run as the counter pass's child, profiling the points of this plan once each.
    #[arg(long, global = true, hide = true, value_name = "PLAN")]
    pub counters_child: Option<PathBuf>,
}

/// `suite run [--full] [shared run flags]` (every experiment, one folder, `summary.md`) or
/// `suite run <experiment> [its flags] [shared run flags]`.
#[derive(Debug, Args)]
pub struct RunAll {
    /// One experiment, with its own flags; none: every experiment.
    #[command(subcommand)]
    pub experiment: Option<RunCommand>,
    /// Every experiment's complete sweep (its flags' defaults) instead of the quick preset. The quick preset, run
    /// without --full, holds the headline points and takes about a minute on an H100; the complete sweeps take far
    /// longer: `suite run --full --dry-run --part <PART>` estimates them.
    #[arg(long, help_heading = RUN_HEADING)]
    pub full: bool,
    /// The shared run options, for every experiment.
    #[command(flatten)]
    pub run: RunArgs,
}

/// `suite run <experiment> [its flags] [shared run flags]`: one subcommand per entry of
/// [`registry::EXPERIMENTS`], declared from the table rather than by hand.
#[derive(Debug)]
pub struct RunCommand {
    /// The experiment asked for.
    pub experiment: &'static Entry,
    /// Its parsed command line, for [`Entry::sweep`].
    pub matches: ArgMatches,
    /// The shared run options.
    pub run: RunArgs,
}

impl FromArgMatches for RunCommand {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let Some((name, sub)) = matches.subcommand() else {
            return Err(clap::Error::raw(ErrorKind::MissingSubcommand, "suite run needs an experiment\n"));
        };
        let experiment =
            registry::find(name).map_err(|e| clap::Error::raw(ErrorKind::InvalidSubcommand, e.to_string()))?;
        Ok(RunCommand { experiment, matches: sub.clone(), run: RunArgs::from_arg_matches(sub)? })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = RunCommand::from_arg_matches(matches)?;
        Ok(())
    }
}

impl Subcommand for RunCommand {
    fn augment_subcommands(cmd: clap::Command) -> clap::Command {
        // The help goes on last: the derived flag groups would otherwise put their own doc comments there. The
        // experiment's own flags get a heading of their own (the global and run options bring theirs), and a value
        // that starts with `-` is taken as the flag's value, so `--sizes -1` is refused by the flag's own check,
        // which names it, rather than read as an unknown flag `-1`.
        let cmd = registry::EXPERIMENTS.iter().fold(cmd, |cmd, e| {
            let heading = experiment_heading(e.name);
            let flags = (e.flags)(clap::Command::new(e.name)).mut_args(|a| {
                let takes_values = a.get_action().takes_values();
                a.help_heading(heading.clone()).allow_negative_numbers(takes_values)
            });
            cmd.subcommand(flags.about(e.help).long_about(None))
        });
        // A name that is no experiment reaches `from_arg_matches`, whose error lists the experiments, rather than
        // clap's "unrecognized subcommand".
        cmd.allow_external_subcommands(true)
    }

    fn augment_subcommands_for_update(cmd: clap::Command) -> clap::Command {
        RunCommand::augment_subcommands(cmd)
    }

    fn has_subcommand(name: &str) -> bool {
        // Every name is taken, so an unknown one is refused with the list of experiments (from_arg_matches) rather
        // than running every experiment.
        let _ = name;
        true
    }
}

/// `suite occupancy ...`
#[derive(Debug, Subcommand)]
pub enum OccupancyCommand {
    /// Groups and waves per CU/SM, occupancy, the binding resource, and how many groups each resource allows.
    Calc(OccupancyArgs),
}

/// `suite occupancy calc` options.
#[derive(Debug, Args)]
pub struct OccupancyArgs {
    /// Architecture: gfx90a, gfx942, gfx1100 (see --wave), sm_80, sm_90; or a profile name such as gfx1100-wave64.
    #[arg(long)]
    pub arch: String,
    /// Items per group (work-group or block size).
    #[arg(long)]
    pub wg: u32,
    /// VGPRs per item (AMD; the architectural ones when --agprs is given); as --regs, registers per thread (NVIDIA).
    #[arg(long, visible_alias = "regs")]
    pub vgprs: u32,
    /// AGPRs per item (gfx90a, gfx942: they share the VGPR file).
    #[arg(long, default_value_t = 0)]
    pub agprs: u32,
    /// SGPRs per wave (AMD; they limit on gfx9 only).
    #[arg(long)]
    pub sgprs: Option<u32>,
    /// LDS (shared memory) per group in bytes, static plus dynamic.
    #[arg(long, default_value_t = 0)]
    pub lds: u32,
    /// Items per wave, where the architecture has two wave sizes (gfx1100: 32, the default, or 64).
    #[arg(long)]
    pub wave: Option<u32>,
}

/// `suite bench ...`
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Launch an empty kernel many times and report the host time per launch (the suite's launch overhead).
    Launch {
        /// Launches per trial.
        #[arg(long, default_value_t = 10_000)]
        count: u32,
        /// Trials (the median is reported).
        #[arg(long, default_value_t = 7)]
        trials: u32,
        /// The compiled scripts/bench/launch_overhead.cpp: run as a child process between the suite's own trials,
        /// driving the same cubin, and reported beside them as a ratio (needs --cubin).
        #[arg(long, requires = "cubin")]
        baseline: Option<PathBuf>,
        /// The cubin holding `launch_empty` (from `suite kernels build --sources launch`) that both programs load.
        #[arg(long)]
        cubin: Option<PathBuf>,
    },
    /// The persistent-threads experiment's bare round trip (empty kernel, blocking 4-byte readback, empty kernel,
    /// synchronize): host time per round trip, median of trials.
    Roundtrip {
        /// Round trips per trial.
        #[arg(long, default_value_t = 2000)]
        count: u32,
        /// Trials (the median is reported).
        #[arg(long, default_value_t = 7)]
        trials: u32,
        /// The compiled scripts/bench/pt_roundtrip.cpp: run as a child process between the suite's own trials,
        /// driving the same cubin, and reported beside them as a ratio (needs --cubin).
        #[arg(long, requires = "cubin")]
        baseline: Option<PathBuf>,
        /// The cubin holding `launch_empty` (from `suite kernels build --sources launch`) that both programs load.
        #[arg(long)]
        cubin: Option<PathBuf>,
    },
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    /// The `suite run` of a parsed command line, if it is one.
    fn run_of(cli: Cli) -> Option<RunAll> {
        match cli.command {
            Command::Run(all) => Some(*all),
            _ => None,
        }
    }

    #[test]
    fn the_command_line_declares_exactly_the_registry() {
        let cmd = Cli::command();
        cmd.clone().debug_assert();
        let registry: Vec<&str> = registry::names().collect();
        let run = cmd.find_subcommand("run").expect("suite run exists");
        let runnable: Vec<&str> = run.get_subcommands().map(|c| c.get_name()).collect();
        assert_eq!(runnable, registry);
        let plot = cmd.find_subcommand("plot").expect("suite plot exists");
        let experiment = plot.get_arguments().find(|a| a.get_id() == "experiment").expect("plot's experiment argument");
        let plottable: Vec<String> =
            experiment.get_possible_values().iter().map(|v| v.get_name().to_string()).collect();
        assert_eq!(plottable, registry);
        for entry in registry::EXPERIMENTS {
            let help = run.find_subcommand(entry.name).and_then(|c| c.get_about()).map(|a| a.to_string());
            assert_eq!(help.as_deref(), Some(entry.help));
            // Each parses to its own entry, with the shared run options.
            let cli = Cli::try_parse_from(["suite", "run", entry.name, "--reps", "7"]).expect("a valid command line");
            let Some(RunAll { experiment: Some(run), .. }) = run_of(cli) else {
                panic!("`suite run {}` is not a run of one experiment", entry.name)
            };
            assert_eq!((run.experiment.name, run.run.reps), (entry.name, 7));
        }
        // No experiment: every one, quick or --full, with the shared options; they go before no experiment name.
        let cli = Cli::try_parse_from(["suite", "run", "--full", "--reps", "5"]).expect("a valid command line");
        let Some(all) = run_of(cli) else { panic!("`suite run --full` is not a run") };
        assert!(all.experiment.is_none() && all.full && all.run.reps == 5, "{all:?}");
        let cli = Cli::try_parse_from(["suite", "run"]).expect("a valid command line");
        assert!(matches!(run_of(cli), Some(RunAll { experiment: None, full: false, .. })));
        // The shared run options go before or after the experiment and its flags (a job script puts its own
        // `--out --resume` around whatever the user passed), with the same result.
        let parsed = |args: &[&str]| {
            let cli = Cli::try_parse_from(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
            let Some(RunAll { experiment: Some(run), .. }) = run_of(cli) else { panic!("{args:?}") };
            let sizes: Vec<String> =
                run.matches.get_raw("sizes").into_iter().flatten().map(|v| v.to_string_lossy().into_owned()).collect();
            (run.experiment.name, sizes, run.run.out, run.run.resume, run.run.reps, run.run.shard)
        };
        let before = parsed(&["suite", "run", "--out", "X", "--resume", "--reps", "4", "matmul", "--sizes", "4096"]);
        let after = parsed(&["suite", "run", "matmul", "--sizes", "4096", "--out", "X", "--resume", "--reps", "4"]);
        let around = parsed(&["suite", "run", "--out", "X", "matmul", "--sizes", "4096", "--resume", "--reps", "4"]);
        let want = ("matmul", vec!["4096".to_string()], Some(PathBuf::from("X")), true, 4, None);
        assert_eq!((&before, &after, &around), (&want, &want, &want));
        let sharded = parsed(&["suite", "run", "--out", "X", "pt", "--shard", "3/8"]);
        assert_eq!(sharded.5, Some(Shard { index: 3, count: 8 }));
        assert!(Cli::try_parse_from(["suite", "run", "nosuch"]).is_err());
        assert!(Cli::try_parse_from(["suite", "plot", "nosuch", "x.csv"]).is_err());
    }
}
