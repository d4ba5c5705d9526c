//! The one list of experiments. `suite run <name>` (its subcommands, help and flags), `suite plot`, `suite merge`,
//! `suite experiments` and `scripts/run-all.sh` all read this table, so adding an experiment is one row here plus
//! its module.

use clap::{ArgMatches, Args, FromArgMatches};

use super::matmul::{self, MatmulSweep, Shape};
use super::occupancy::{OccupancySweep, SWEEPS as OCCUPANCY_SWEEPS};
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
    /// The default sweep, for commands that only read the experiment's CSV (`suite plot`, `suite merge`).
    pub default: fn() -> Box<dyn Experiment>,
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
    },
    Entry {
        name: "matmul",
        help: "Matmul ladder (naive, accumulator, LDS tiles, register-blocked) vs the vendor BLAS: GFLOP/s per size.",
        flags: MatmulArgs::augment_args,
        sweep: matmul_sweep,
        default: || Box::new(MatmulSweep::default()),
    },
    Entry {
        name: "occupancy",
        help: "Occupancy: group size, group count, barriers, LDS and registers vs time and bandwidth, with the \
               theoretical occupancy of every point and timelines of resident waves recorded inside the kernels.",
        flags: OccupancyArgs::augment_args,
        sweep: occupancy_sweep,
        default: || Box::new(OccupancySweep::default()),
    },
];

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
    /// Problem sizes, comma-separated: N for M = N = K, or MxNxK (default: 256 to 8192, doubling).
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
    let sweep = MatmulSweep::new(shapes, kernels, !args.no_vendor);
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
    fn an_unknown_name_lists_the_known_ones() {
        let err = find("fusion").unwrap_err().to_string();
        assert!(err.contains("unknown experiment `fusion`"), "{err}");
        assert!(err.contains("smoke, matmul, occupancy"), "{err}");
    }
}
