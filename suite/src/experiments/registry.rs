//! The one list of experiments. `suite run <name>` (its subcommands, help and flags), `suite plot`, `suite merge`,
//! `suite compare`, `suite experiments` and `scripts/run-all.sh` all read this table, so adding an experiment is its
//! folder (which exports one [`Entry`]), its kernel file and one line here.

use clap::{ArgMatches, Args, FromArgMatches};

pub use super::entry::Entry;
use super::pt::{BarrierCounters, PerCu, PtSweep, MAX_BARRIER_COUNTERS, USE_CASES as PT_USE_CASES};
use super::{fusion, matmul, occupancy, smoke};
use super::{Error, Experiment};
use crate::options;

/// Every experiment, in the order `scripts/run-all.sh` runs them.
pub const EXPERIMENTS: &[Entry] = &[
    smoke::ENTRY,
    matmul::ENTRY,
    occupancy::ENTRY,
    fusion::ENTRY,
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

/// Every experiment's name and how `suite compare` compares it, in table order.
pub fn comparisons() -> Vec<(&'static str, Box<dyn crate::report::compare::Comparison>)> {
    EXPERIMENTS.iter().map(|e| (e.name, (e.default)().comparison())).collect()
}

/// The experiment called `name` with its default sweep, for commands that only read its CSV.
pub fn default_experiment(name: &str) -> Result<Box<dyn Experiment>, Error> {
    find(name).map(|e| (e.default)())
}

/// Reads an experiment's flags back from clap's matches (clap checked them against the same declaration).
pub(super) fn parsed<A: FromArgMatches>(matches: &ArgMatches) -> Result<A, Error> {
    A::from_arg_matches(matches).map_err(|e| Error::Options(e.to_string()))
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
