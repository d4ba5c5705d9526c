//! What an experiment exports: one [`Entry`] value, made from its sweep type by [`Entry::of`]: its read side
//! ([`Results`], which `suite plot`, `suite merge` and `suite compare` use alone) and its run side, the sweep. The
//! sweep struct is its own command line (a `clap::Args`, one declaration per knob, defaults included), so
//! `suite run <name>`, `--full` and the quick preset all come from the same declaration.

use clap::{ArgMatches, Args, FromArgMatches};

use super::{Error, Experiment, Results};

/// One experiment: its name, its help line, its flags and how they become its sweep.
pub struct Entry {
    /// Name on the command line (`suite run <name>`), of its CSV (`<name>.csv`) and in its `experiment` column.
    pub name: &'static str,
    /// One line of help for `suite run --help`.
    pub help: &'static str,
    /// The experiment's read side: everything that only reads its results uses this, and builds no sweep.
    pub results: &'static dyn Results,
    /// Declares the experiment's own flags on its `suite run <name>` subcommand.
    pub flags: fn(clap::Command) -> clap::Command,
    /// The sweep that the parsed flags ask for (the defaults where a flag is absent), checked.
    pub sweep: fn(&ArgMatches) -> Result<Box<dyn Experiment>, Error>,
    /// The default sweep: the one `suite run --full` runs.
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

/// A sweep that is its own command line: clap parses it (every field a flag with its default), [`Sweep::check`]
/// rejects what clap cannot see (e.g. a combination), and [`Entry::of`] makes the experiment's entry from it and
/// its read side.
pub trait Sweep: Experiment + Args + FromArgMatches + 'static {
    /// The experiment's name (also [`Experiment::name`]).
    const NAME: &'static str;
    /// One line of help.
    const HELP: &'static str;
    /// The experiment's read side (also [`Experiment::results`]).
    const RESULTS: &'static dyn Results;
    /// The quick preset (see [`Entry::quick`]).
    fn quick() -> Self;
    /// Rejects a sweep clap accepted but the experiment cannot run as a whole; the message names the flag.
    fn check(self) -> Result<Self, Error> {
        Ok(self)
    }
}

impl Entry {
    /// The entry of sweep type `S`.
    pub const fn of<S: Sweep>() -> Entry {
        Entry {
            name: S::NAME,
            help: S::HELP,
            results: S::RESULTS,
            flags: S::augment_args,
            sweep: sweep_of::<S>,
            default: default_of::<S>,
            quick: quick_of::<S>,
        }
    }
}

/// The sweep of parsed flags, checked.
fn sweep_of<S: Sweep>(matches: &ArgMatches) -> Result<Box<dyn Experiment>, Error> {
    let sweep = S::from_arg_matches(matches).map_err(|e| Error::Options(e.to_string()))?;
    Ok(Box::new(sweep.check()?))
}

fn default_of<S: Sweep>() -> Box<dyn Experiment> {
    Box::new(defaults::<S>())
}

fn quick_of<S: Sweep>() -> Box<dyn Experiment> {
    Box::new(S::quick())
}

/// The sweep an empty command line gives: every flag at its declared default. A sweep's `Default` is this.
pub fn defaults<S: Args + FromArgMatches>() -> S {
    let cmd = S::augment_args(clap::Command::new("defaults").no_binary_name(true));
    let matches = cmd.try_get_matches_from(std::iter::empty::<&str>()).expect("a sweep's defaults parse");
    S::from_arg_matches(&matches).expect("a sweep's defaults parse")
}

/// Parses one size flag value (an integer or 2^N, at least 1), for `value_parser` on a sweep's size flags.
pub fn size_arg(text: &str) -> Result<usize, String> {
    crate::options::parse_size("size", text).map_err(|e| e.problem)
}

/// [`size_arg`] as a u64.
pub fn size_arg_u64(text: &str) -> Result<u64, String> {
    size_arg(text).map(|n| n as u64)
}
