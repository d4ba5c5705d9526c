//! The one list of experiments. `suite run <name>` (its subcommands, help and flags), `suite plot`, `suite merge`,
//! `suite compare`, `suite experiments` and `scripts/run-all.sh` all read this table, so adding an experiment is its
//! folder (which exports one [`Entry`]), its kernel file, one line here and its `pub mod` line in `experiments/mod.rs`.

pub use super::entry::Entry;
use super::{fusion, matmul, occupancy, pt, smoke};
use super::{Error, Results};

/// Every experiment, in the order `scripts/run-all.sh` runs them: one line each (`tests/layout.rs` checks it).
#[rustfmt::skip]
pub const EXPERIMENTS: &[Entry] = &[
    smoke::ENTRY,
    matmul::ENTRY,
    occupancy::ENTRY,
    fusion::ENTRY,
    pt::ENTRY,
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

/// What `suite compare` needs of every experiment, in table order: how it is compared and how its rows go on the
/// roofline. From each entry's read side alone: no sweep is built.
pub fn known() -> crate::report::compare::Known {
    crate::report::compare::Known {
        comparisons: EXPERIMENTS.iter().map(|e| (e.name, e.results.comparison())).collect(),
        roofline: roofline_roles(),
    }
}

/// How every experiment's rows go on a run's roofline, for `suite run`, `suite merge` and `suite compare`.
pub fn roofline_roles() -> Vec<(&'static str, crate::report::roofline::Role)> {
    EXPERIMENTS.iter().map(|e| (e.name, e.results.roofline())).collect()
}

/// The read side of the experiment called `name`, for commands that only read its CSV.
pub fn results(name: &str) -> Result<&'static dyn Results, Error> {
    find(name).map(|e| e.results)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether a sweep's read side is its entry's (unit structs have no address to compare: their answers are).
    fn same(a: &dyn Results, b: &dyn Results) -> bool {
        (a.name(), a.param_columns(), a.metric()) == (b.name(), b.param_columns(), b.metric())
    }

    #[test]
    fn every_entry_builds_its_default_sweep_under_its_own_name() {
        let device = crate::occupancy_calculator::tests::h100();
        let mut seen = std::collections::BTreeSet::new();
        for entry in EXPERIMENTS {
            assert!(seen.insert(entry.name), "{} is listed twice", entry.name);
            assert_eq!(entry.results.name(), entry.name);
            assert!(same((entry.default)().results(), entry.results), "{}", entry.name);
            assert_eq!(results(entry.name).map(|r| r.name()).ok(), Some(entry.name));
            // No flags: the sweep the command line builds is the default one.
            let cmd = (entry.flags)(clap::Command::new(entry.name));
            let matches = cmd.try_get_matches_from([entry.name]).expect("no flags is a valid command line");
            let built = (entry.sweep)(&matches).expect("the defaults are valid");
            assert!(same(built.results(), entry.results), "{}", entry.name);
            assert_eq!(built.options(&device), (entry.default)().options(&device), "{}", entry.name);
            assert!(!entry.help.is_empty());
        }
    }

    #[test]
    fn every_quick_preset_is_a_smaller_sweep_of_its_own_experiment() {
        let device = crate::occupancy_calculator::tests::h100();
        for entry in EXPERIMENTS {
            let (quick, full) = ((entry.quick)(), (entry.default)());
            assert!(same(quick.results(), entry.results), "{}", entry.name);
            assert_ne!(
                quick.options(&device),
                full.options(&device),
                "{}: the quick preset is the full sweep",
                entry.name
            );
        }
    }

    #[test]
    fn an_unknown_name_lists_the_known_ones() {
        let err = find("nosuch").unwrap_err().to_string();
        assert!(err.contains("unknown experiment `nosuch`"), "{err}");
        // Every name of the table, in table order, and nothing else: read from the registry, so a new experiment
        // needs no edit here.
        let table: Vec<&str> = EXPERIMENTS.iter().map(|e| e.name).collect();
        assert!(!table.is_empty());
        assert_eq!(names().collect::<Vec<_>>(), table);
        let known = err.split_once("; known: ").map(|(_, known)| known);
        assert_eq!(known, Some(table.join(", ").as_str()), "{err}");
    }
}
