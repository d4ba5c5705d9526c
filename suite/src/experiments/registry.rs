//! The one list of experiments. `suite run <name>` (its subcommands, help and flags), `suite plot`, `suite merge`,
//! `suite experiments` and `scripts/run-all.sh` all read this table, so adding an experiment is one row here plus
//! its module.

use clap::{ArgMatches, Args, FromArgMatches};

use super::fusion::FusionSweep;
use super::matmul::{self, MatmulSweep, Shape};
use super::occupancy::{OccupancySweep, SWEEPS as OCCUPANCY_SWEEPS};
use super::pt::{BarrierCounters, PerCu, PtSweep, MAX_BARRIER_COUNTERS, USE_CASES as PT_USE_CASES};
use super::smoke::SmokeSweep;
use super::{Error, Experiment};
use crate::options;

/// One experiment: its name, its help line, its flags and how they become its sweep.
pub struct Entry {
    /// Name on the command line (`suite run <name>`), of its CSV (`<name>.csv`) and in its `experiment` column.
    pub name: &'static str,
    /// One line of help for `suite run --help`.
    pub help: &'static str,
    /// Declares the experiment's own flags on its `suite run <name>` subcommand.
    pub flags: fn(clap::Command) -> clap::Command,
    /// The sweep that the parsed flags ask for (the defaults where a flag is absent), checked.
    pub sweep: fn(&ArgMatches) -> Result<Box<dyn Experiment>, Error>,
    /// The default sweep, for commands that only read the experiment's CSV (`suite plot`, `suite merge`), and the
    /// one `suite run --full` runs.
    pub default: fn() -> Box<dyn Experiment>,
    /// The quick preset that `suite run` (no experiment named) runs: the points that carry the experiment's
    /// headline figures, small enough that every experiment together takes about a minute on one GPU.
    pub quick: fn() -> Box<dyn Experiment>,
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry").field("name", &self.name).finish_non_exhaustive()
    }
}

/// Every experiment, in the order `scripts/run-all.sh` runs them.
pub const EXPERIMENTS: &[Entry] = &[
    Entry {
        name: "smoke",
        help: "The pipeline end to end: STREAM triad a = b + s*c, verified on the host, GB/s per size.",
        flags: SmokeArgs::augment_args,
        sweep: smoke_sweep,
        default: || Box::new(SmokeSweep::default()),
        quick: || Box::new(SmokeSweep { sizes: vec![1 << 20, 1 << 26], ..SmokeSweep::default() }),
    },
    Entry {
        name: "matmul",
        help: "Matmul ladder (naive, accumulator, LDS tiles, register-blocked, split-K, stream-K) and an autotune \
               step vs the vendor BLAS: GFLOP/s per size.",
        flags: MatmulArgs::augment_args,
        sweep: matmul_sweep,
        default: || Box::new(MatmulSweep::default()),
        quick: quick_matmul,
    },
    Entry {
        name: "occupancy",
        help: "Occupancy: group size, group count, barriers, LDS and registers vs time and bandwidth, with the \
               theoretical occupancy of every point and timelines of resident waves recorded inside the kernels.",
        flags: OccupancyArgs::augment_args,
        sweep: occupancy_sweep,
        default: || Box::new(OccupancySweep::default()),
        quick: quick_occupancy,
    },
    Entry {
        name: "fusion",
        help: "Kernel fusion: sum, dot and asum as composed patterns (unfused, fused, fused + run-time staged) vs a \
               hand-written reduction and the vendor BLAS; device and end-to-end time, GB/s per size.",
        flags: FusionArgs::augment_args,
        sweep: fusion_sweep,
        default: || Box::new(FusionSweep::default()),
        quick: || Box::new(FusionSweep::new(vec![1 << 15, 1 << 20, 1 << 25], Vec::new(), Vec::new())),
    },
    Entry {
        name: "pt",
        help: "Persistent threads vs ordinary launches: the paper's four use cases (CPU-GPU sync, forest load \
               balancing, active state, global barriers), the bare round trip and the queue's granularity.",
        flags: PtArgs::augment_args,
        sweep: pt_sweep,
        default: || Box::new(PtSweep::default()),
        quick: quick_pt,
    },
];

/// Matmul's quick preset: one rung of each step of the ladder, the vendor BLAS and the autotune step at four sizes,
/// from one too small to fill the device with large tiles (512, where split-K matters) through one no tile divides
/// (1000) to one where the register-blocked kernels reach their plateau.
fn quick_matmul() -> Box<dyn Experiment> {
    let names: Vec<String> = [
        "accumulator",
        "tiled_m16",
        "blocktile_2d",
        "vectorized",
        "warptile",
        "double_buffer",
        "splitk_128x64x16_t128",
        "streamk_128x128x8_t128",
    ]
    .iter()
    .map(|n| n.to_string())
    .collect();
    let kernels = matmul::select_kernels(&names, &[]).expect("the quick preset names kernels of the ladder");
    let shapes = [512, 1000, 2048, 4096].into_iter().map(Shape::square).collect();
    Box::new(MatmulSweep::new(shapes, kernels, true).with_autotune(true))
}

/// Occupancy's quick preset: the copy references, the group-size sweeps with both widths, the LDS sweep and the
/// residency probe, over 2^24 elements (past any L2) and fewer group sizes.
fn quick_occupancy() -> Box<dyn Experiment> {
    let full = OccupancySweep::default();
    Box::new(OccupancySweep {
        elements: 1 << 24,
        group_sizes: vec![32, 64, 96, 128, 256, 512, 768, 1024],
        lds_bytes: vec![4096, 16384, 32768, 65536, 131072],
        sweeps: ["copy", "copy_kernel", "group_size", "group_size_x4", "lds", "group_count_spin"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        ..full
    })
}

/// Persistent threads' quick preset: every use case at one small and one large size (below and far above the
/// maximal launch), the paper's lightest and a heavy work per item.
fn quick_pt() -> Box<dyn Experiment> {
    Box::new(PtSweep {
        items: vec![1 << 13, 1 << 19],
        fmas: vec![1, 64],
        levels: vec![8],
        inputs: vec![1, 1024],
        sizes: vec![1 << 16, 1 << 24],
        jacobi_sizes: vec![1 << 16],
        steps: vec![100],
        queue_items: vec![1 << 22],
        queue_fmas: vec![1],
        chunks: vec![4],
        ..PtSweep::default()
    })
}

/// The experiments' names, in table order.
pub fn names() -> impl Iterator<Item = &'static str> {
    EXPERIMENTS.iter().map(|e| e.name)
}

/// The experiment called `name`.
pub fn find(name: &str) -> Result<&'static Entry, Error> {
    EXPERIMENTS.iter().find(|e| e.name == name).ok_or_else(|| Error::UnknownExperiment {
        name: name.to_string(),
        known: names().collect::<Vec<_>>().join(", "),
    })
}

/// The experiment called `name` with its default sweep, for commands that only read its CSV.
pub fn default_experiment(name: &str) -> Result<Box<dyn Experiment>, Error> {
    find(name).map(|e| (e.default)())
}

/// Reads an experiment's flags back from clap's matches (clap checked them against the same declaration).
fn parsed<A: FromArgMatches>(matches: &ArgMatches) -> Result<A, Error> {
    A::from_arg_matches(matches).map_err(|e| Error::Options(e.to_string()))
}

/// `suite run smoke` options.
#[derive(Debug, Args)]
pub struct SmokeArgs {
    /// Elements per array, comma-separated (integers, or 2^N).
    #[arg(long, value_delimiter = ',')]
    pub sizes: Vec<String>,
    /// Items per group.
    #[arg(long, default_value_t = 256)]
    pub group_size: u32,
}

fn smoke_sweep(matches: &ArgMatches) -> Result<Box<dyn Experiment>, Error> {
    let args: SmokeArgs = parsed(matches)?;
    let defaults = SmokeSweep::default();
    let sizes = options::parse_sizes("--sizes", &args.sizes, &defaults.sizes)?;
    Ok(Box::new(SmokeSweep { sizes, group_size: args.group_size }))
}

/// `suite run matmul` options.
#[derive(Debug, Args)]
pub struct MatmulArgs {
    /// Problem sizes, comma-separated: N for M = N = K, or MxNxK (default: 256 to 8192 with 768, 1000, 1023, 1536,
    /// 3072, 4097, 6144 and two rectangular products; see the README).
    #[arg(long, value_delimiter = ',')]
    pub sizes: Vec<String>,
    /// Kernels by name or family, comma-separated (default: the seed's ladder plus the register-blocked kernels
    /// suited to the device's architecture, see the README); `tiled` means every --tiles size.
    #[arg(long, value_delimiter = ',')]
    pub kernels: Vec<String>,
    /// Tile sizes M of the tiled kernel (default: 4,8,16,32).
    #[arg(long, value_delimiter = ',')]
    pub tiles: Vec<u32>,
    /// Skip the vendor BLAS (rocBLAS/cuBLAS) rows; it is still the reference where available.
    #[arg(long)]
    pub no_vendor: bool,
    /// Skip the autotune rows (the fastest verified kernel per size, picked by measurement).
    #[arg(long)]
    pub no_autotune: bool,
}

fn matmul_sweep(matches: &ArgMatches) -> Result<Box<dyn Experiment>, Error> {
    let args: MatmulArgs = parsed(matches)?;
    let defaults = MatmulSweep::default();
    let shapes = if args.sizes.is_empty() {
        defaults.shapes
    } else {
        args.sizes.iter().map(|s| Shape::parse(s)).collect::<Result<_, _>>()?
    };
    let kernels = matmul::select_kernels(&args.kernels, &args.tiles)?;
    let sweep = MatmulSweep::new(shapes, kernels, !args.no_vendor).with_autotune(!args.no_autotune);
    // No --kernels: the device's architecture picks the set (matmul::ARCH_DEFAULTS), within --tiles.
    Ok(Box::new(if args.kernels.is_empty() { sweep.with_arch_defaults(args.tiles) } else { sweep }))
}

/// `suite run occupancy` options (defaults in `OccupancySweep::default`).
#[derive(Debug, Args)]
pub struct OccupancyArgs {
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

fn occupancy_sweep(matches: &ArgMatches) -> Result<Box<dyn Experiment>, Error> {
    let args: OccupancyArgs = parsed(matches)?;
    let mut exp = OccupancySweep::default();
    if let Some(n) = &args.elements {
        exp.elements = options::parse_size("--elements", n)?;
    }
    if !args.group_sizes.is_empty() {
        exp.group_sizes = args.group_sizes;
    }
    if !args.lds_bytes.is_empty() {
        exp.lds_bytes = args.lds_bytes;
    }
    if let Some(bad) = args.sweeps.iter().find(|s| !OCCUPANCY_SWEEPS.contains(&s.as_str())) {
        return Err(Error::Options(format!(
            "--sweeps: unknown sweep `{bad}`; available: {}",
            OCCUPANCY_SWEEPS.join(", ")
        )));
    }
    exp.sweeps = args.sweeps;
    exp.chunk = args.chunk.unwrap_or(exp.chunk);
    exp.passes = args.passes.unwrap_or(exp.passes);
    if exp.chunk == 0 || exp.passes == 0 || exp.group_sizes.contains(&0) {
        return Err(Error::Options("--chunk, --passes and --group-sizes must be at least 1".into()));
    }
    Ok(Box::new(exp))
}

/// `suite run fusion` options.
#[derive(Debug, Args)]
pub struct FusionArgs {
    /// Elements per vector, comma-separated (integers, or 2^N; default: 2^15 to 2^25, every power of two).
    #[arg(long, value_delimiter = ',')]
    pub sizes: Vec<String>,
    /// Operations, comma-separated (default: all): sum, dot, asum.
    #[arg(long, value_delimiter = ',')]
    pub operations: Vec<String>,
    /// Variants, comma-separated (default: all): hand, unfused, fused, fused_staged, vendor.
    #[arg(long, value_delimiter = ',')]
    pub variants: Vec<String>,
}

fn fusion_sweep(matches: &ArgMatches) -> Result<Box<dyn Experiment>, Error> {
    let args: FusionArgs = parsed(matches)?;
    let defaults = FusionSweep::default();
    let sizes = options::parse_sizes("--sizes", &args.sizes, &defaults.sizes)?;
    let sweep = FusionSweep::new(sizes, args.operations, args.variants);
    sweep.check()?;
    Ok(Box::new(sweep))
}

/// `suite run pt` options (defaults in `PtSweep::default`).
#[derive(Debug, Args)]
pub struct PtArgs {
    /// Use cases, comma-separated (default: all): sync, roundtrip, forest, reduce, chain, jacobi, barrier, queue.
    #[arg(long, value_delimiter = ',')]
    pub use_cases: Vec<String>,
    /// Items the producer makes (sync), comma-separated (integers, or 2^N).
    #[arg(long, value_delimiter = ',')]
    pub items: Vec<String>,
    /// FMAs per item (sync), comma-separated: each one of 1, 4, 16, 64, 256 (others are invalid rows).
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true)]
    pub fmas: Vec<i64>,
    /// Forest levels, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub levels: Vec<u32>,
    /// Forest initial inputs (trees), comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub inputs: Vec<u32>,
    /// Elements of the reduction, chain and Jacobi vectors, comma-separated (integers, or 2^N).
    #[arg(long, value_delimiter = ',')]
    pub sizes: Vec<String>,
    /// Elements of the Jacobi vectors, comma-separated (integers, or 2^N).
    #[arg(long, value_delimiter = ',')]
    pub jacobi_sizes: Vec<String>,
    /// Jacobi steps, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub steps: Vec<u32>,
    /// Chunk sizes K (groups' worth of items per atomic pop) of the queue study, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub chunks: Vec<u32>,
    /// Groups per CU of the global-synchronisation points (jacobi, barrier), comma-separated: counts below the
    /// maximal launch's, and `max` (the maximal launch).
    #[arg(long, value_delimiter = ',')]
    pub groups_per_cu: Vec<String>,
    /// Arrival counters of the software grid barrier: `auto` (default: one per group per CU, 1 to 8) or 1 to 8;
    /// each group adds to counter group % counters and waits for all of them.
    #[arg(long)]
    pub barrier_counters: Option<String>,
    /// Idle iterations a device wait loop spins before it reports a timeout (an `error` row).
    #[arg(long)]
    pub spin_limit: Option<u32>,
}

fn pt_sweep(matches: &ArgMatches) -> Result<Box<dyn Experiment>, Error> {
    let args: PtArgs = parsed(matches)?;
    let mut exp = PtSweep::default();
    if let Some(bad) = args.use_cases.iter().find(|s| !PT_USE_CASES.contains(&s.as_str())) {
        return Err(Error::Options(format!(
            "--use-cases: unknown use case `{bad}`; available: {}",
            PT_USE_CASES.join(", ")
        )));
    }
    if !args.use_cases.is_empty() {
        exp.use_cases = args.use_cases;
    }
    let to_u64 = |v: Vec<usize>| v.into_iter().map(|n| n as u64).collect::<Vec<u64>>();
    let items: Vec<usize> = exp.items.iter().map(|&n| n as usize).collect();
    exp.items = to_u64(options::parse_sizes("--items", &args.items, &items)?);
    let sizes: Vec<usize> = exp.sizes.iter().map(|&n| n as usize).collect();
    exp.sizes = to_u64(options::parse_sizes("--sizes", &args.sizes, &sizes)?);
    let jacobi: Vec<usize> = exp.jacobi_sizes.iter().map(|&n| n as usize).collect();
    exp.jacobi_sizes = to_u64(options::parse_sizes("--jacobi-sizes", &args.jacobi_sizes, &jacobi)?);
    if !args.fmas.is_empty() {
        exp.fmas = args.fmas;
    }
    if !args.levels.is_empty() {
        exp.levels = args.levels;
    }
    if !args.inputs.is_empty() {
        exp.inputs = args.inputs;
    }
    if !args.steps.is_empty() {
        exp.steps = args.steps;
    }
    if !args.chunks.is_empty() {
        exp.chunks = args.chunks;
    }
    if !args.groups_per_cu.is_empty() {
        exp.groups_per_cu = args
            .groups_per_cu
            .iter()
            .map(|v| {
                PerCu::parse(v).ok_or_else(|| {
                    Error::Options(format!("--groups-per-cu: `{v}` is neither a positive count nor `max`"))
                })
            })
            .collect::<Result<_, _>>()?;
    }
    if let Some(text) = &args.barrier_counters {
        exp.barrier_counters = BarrierCounters::parse(text).ok_or_else(|| {
            Error::Options(format!(
                "--barrier-counters: `{text}` is neither `auto` nor a count from 1 to {MAX_BARRIER_COUNTERS}"
            ))
        })?;
    }
    exp.spin_limit = args.spin_limit.unwrap_or(exp.spin_limit);
    if exp.spin_limit == 0 {
        return Err(Error::Options("--spin-limit must be at least 1".into()));
    }
    Ok(Box::new(exp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_builds_its_default_sweep_under_its_own_name() {
        let mut seen = std::collections::BTreeSet::new();
        for entry in EXPERIMENTS {
            assert!(seen.insert(entry.name), "{} is listed twice", entry.name);
            assert_eq!((entry.default)().name(), entry.name);
            assert_eq!(default_experiment(entry.name).map(|e| e.name()).ok(), Some(entry.name));
            // No flags: the sweep the command line builds is the default one.
            let cmd = (entry.flags)(clap::Command::new(entry.name));
            let matches = cmd.try_get_matches_from([entry.name]).expect("no flags is a valid command line");
            let built = (entry.sweep)(&matches).expect("the defaults are valid");
            assert_eq!(built.name(), entry.name);
            assert_eq!(built.options(), (entry.default)().options(), "{}", entry.name);
            assert!(!entry.help.is_empty());
        }
    }

    #[test]
    fn every_quick_preset_is_a_smaller_sweep_of_its_own_experiment() {
        for entry in EXPERIMENTS {
            let (quick, full) = ((entry.quick)(), (entry.default)());
            assert_eq!(quick.name(), entry.name);
            assert_ne!(quick.options(), full.options(), "{}: the quick preset is the full sweep", entry.name);
        }
    }

    #[test]
    fn pt_groups_per_cu_and_barrier_counters_are_parsed_and_checked() {
        let entry = EXPERIMENTS.iter().find(|e| e.name == "pt").unwrap();
        let build = |args: &[&str]| {
            let cmd = (entry.flags)(clap::Command::new("pt"));
            let matches = cmd.try_get_matches_from(std::iter::once("pt").chain(args.iter().copied())).unwrap();
            (entry.sweep)(&matches).map(|e| e.options())
        };
        let options = build(&["--groups-per-cu", "1,max", "--barrier-counters", "8"]).unwrap();
        assert_eq!(options["groups_per_cu"], serde_json::json!([{"Groups": 1}, "Max"]));
        assert_eq!(options["barrier_counters"], serde_json::json!({"Fixed": 8}));
        let options = build(&["--barrier-counters", "auto"]).unwrap();
        assert_eq!(options["barrier_counters"], "PerGroupPerCu");
        for (args, message) in [
            (["--groups-per-cu", "0"], "`0` is neither a positive count nor `max`"),
            (["--groups-per-cu", "all"], "`all` is neither"),
            (["--barrier-counters", "0"], "`0` is neither `auto` nor a count from 1 to 8"),
            (["--barrier-counters", "9"], "`9` is neither"),
        ] {
            let err = build(&args).unwrap_err().to_string();
            assert!(err.contains(message), "{err}");
        }
    }

    #[test]
    fn an_unknown_name_lists_the_known_ones() {
        let err = find("nosuch").unwrap_err().to_string();
        assert!(err.contains("unknown experiment `nosuch`"), "{err}");
        assert!(err.contains("known: smoke, matmul, occupancy, fusion, pt"), "{err}");
    }
}
