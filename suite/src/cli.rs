//! The command-line interface, declared with clap. Validation of values lives in [`crate::options`].

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::device::Platform;
use crate::experiments::Shard;

/// GPU experiment suite: measure how kernels behave on AMD (HIP, wave64) and NVIDIA (CUDA, warp32) GPUs.
#[derive(Debug, Parser)]
#[command(name = "suite", version, about, long_about = None)]
pub struct Cli {
    /// Which platform to use: auto tries AMD, then NVIDIA.
    #[arg(long, global = true, value_enum, default_value_t = PlatformChoice::Auto)]
    pub platform: PlatformChoice,

    /// Device index on that platform (under Slurm, one process per GPU usually sees device 0).
    #[arg(long, global = true, default_value_t = 0)]
    pub device: u32,

    /// Folder of prebuilt code objects (from `suite kernels build --out`), for nodes without a compiler.
    #[arg(long, global = true, value_name = "DIR")]
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
    /// Run an experiment and write CSV rows and run.json.
    #[command(subcommand)]
    Run(RunCommand),
    /// Micro-benchmarks of the suite itself.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Theoretical occupancy from a kernel's resources and an architecture profile (no GPU needed).
    #[command(subcommand)]
    Occupancy(OccupancyCommand),
    /// Join the CSVs of a sharded run (`--shard i/n`) in a results folder into one CSV per experiment, and plot it.
    Merge {
        /// Results folder holding `<experiment>.shard-<i>-of-<n>.csv` files.
        dir: PathBuf,
    },
    /// Draw an experiment's plots again from its CSV (e.g. after `suite merge`, or on a laptop).
    Plot {
        /// Experiment whose plots to draw: matmul, occupancy or smoke.
        experiment: String,
        /// The experiment's CSV.
        csv: PathBuf,
        /// Folder for the PNGs (default: the CSV's folder).
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

/// `suite kernels ...`
#[derive(Debug, Subcommand)]
pub enum KernelsCommand {
    /// Compile kernel sources ahead of time (e.g. on a login node) into a folder for --kernels-dir.
    Build {
        /// Architectures, comma-separated: gfx90a, gfx942, sm_80, sm_90, ...
        #[arg(long, value_delimiter = ',', required = true)]
        arch: Vec<String>,
        /// Kernel sources to build (default: all).
        #[arg(long, value_delimiter = ',')]
        sources: Vec<String>,
        /// Output folder.
        #[arg(long, default_value = "kernels-build")]
        out: PathBuf,
    },
    /// Show each kernel's resources: AMD registers, LDS and scratch read statically from the code object;
    /// NVIDIA registers and shared memory from the driver (needs a GPU).
    Inspect {
        /// Architecture to inspect (default: the device's).
        #[arg(long)]
        arch: Option<String>,
        /// Kernel sources to inspect (default: all).
        #[arg(long, value_delimiter = ',')]
        sources: Vec<String>,
    },
}

/// Options shared by every `suite run` experiment.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Timed repetitions per point (the median, min and max are recorded).
    #[arg(long, default_value_t = 20)]
    pub reps: u32,
    /// Untimed launches before timing.
    #[arg(long, default_value_t = 3)]
    pub warmup: u32,
    /// Seconds one point may spend in warm-up and timed launches: slow points get fewer repetitions (at least 3).
    #[arg(long, default_value_t = 2.0)]
    pub time_budget: f64,
    /// Results folder (default: results/<date>-<host>-<arch>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Keep the rows an earlier, interrupted run wrote and measure only the missing points.
    #[arg(long)]
    pub resume: bool,
    /// Run every n-th point starting at i (0-based), e.g. --shard $SLURM_LOCALID/8.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<Shard>,
}

/// `suite run ...`
#[derive(Debug, Subcommand)]
pub enum RunCommand {
    /// The pipeline end to end: STREAM triad a = b + s*c, verified on the host, GB/s per size.
    Smoke {
        /// Elements per array, comma-separated (integers, or 2^N).
        #[arg(long, value_delimiter = ',')]
        sizes: Vec<String>,
        /// Items per group.
        #[arg(long, default_value_t = 256)]
        group_size: u32,
        /// Shared run options.
        #[command(flatten)]
        run: RunArgs,
    },
    /// Occupancy: group size, group count, barriers, LDS and registers vs time and bandwidth, with the theoretical
    /// occupancy of every point and timelines of resident waves recorded inside the kernels.
    Occupancy {
        /// What to sweep.
        #[command(flatten)]
        sweep: OccupancySweepArgs,
        /// Shared run options.
        #[command(flatten)]
        run: RunArgs,
    },
    /// Matmul ladder (naive, accumulator, LDS tiles, register-blocked) vs the vendor BLAS: GFLOP/s per size.
    Matmul {
        /// What to sweep.
        #[command(flatten)]
        sweep: MatmulArgs,
        /// Shared run options.
        #[command(flatten)]
        run: RunArgs,
    },
}

/// `suite run matmul` options.
#[derive(Debug, Args)]
pub struct MatmulArgs {
    /// Problem sizes, comma-separated: N for M = N = K, or MxNxK (default: 256 to 8192, doubling).
    #[arg(long, value_delimiter = ',')]
    pub sizes: Vec<String>,
    /// Kernels by name or family, comma-separated (default: the whole ladder); `tiled` means every --tiles size.
    #[arg(long, value_delimiter = ',')]
    pub kernels: Vec<String>,
    /// Tile sizes M of the tiled kernel (default: 4,8,16,32).
    #[arg(long, value_delimiter = ',')]
    pub tiles: Vec<u32>,
    /// Skip the vendor BLAS (rocBLAS/cuBLAS) rows; it is still the reference where available.
    #[arg(long)]
    pub no_vendor: bool,
}

/// `suite run occupancy` options (defaults in `OccupancySweep::default`).
#[derive(Debug, Args)]
pub struct OccupancySweepArgs {
    /// Elements per array for the copy, group-size, LDS and register sweeps (integer or 2^N).
    #[arg(long)]
    pub elements: Option<String>,
    /// Group sizes of the group-size sweep, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub group_sizes: Vec<u32>,
    /// Elements each group adds per pass in the group-count and barrier sweeps.
    #[arg(long)]
    pub chunk: Option<u32>,
    /// Passes each group makes over its chunk in the group-count and barrier sweeps.
    #[arg(long)]
    pub passes: Option<u32>,
    /// Dynamic LDS per group of the LDS sweep, bytes, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub lds_bytes: Vec<u32>,
    /// Sweeps to run, comma-separated (default: all): copy, copy_kernel, group_size, group_size_x4, group_count,
    /// group_count_spin, spin_timeline, barrier, lds, lds_x4, registers.
    #[arg(long, value_delimiter = ',')]
    pub sweeps: Vec<String>,
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
    },
}
