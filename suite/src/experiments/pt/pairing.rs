//! The rows read back as what PT is about: non-PT/PT pairs (the speedup) and the global-synchronisation rows as
//! costs per step. Only the CSV counts: rows may come from different shards or resumed runs.

use std::collections::{BTreeMap, HashMap};

use crate::experiments::{num, ok_rows};

/// A CSV row as column → value.
pub type CsvRow = BTreeMap<String, String>;

/// One non-PT/PT pair: the rows' shared parameters, the PT variant (with its queue), and both median times.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    /// The PT row's key: the pair's identity across runs.
    pub key: String,
    /// Use case.
    pub use_case: String,
    /// PT variant, e.g. `pt`, `pt_coop`.
    pub variant: String,
    /// Flavour (`ci`, `cmi`, or empty).
    pub flavour: String,
    /// Items, nodes' initial inputs, or elements.
    pub items: f64,
    /// FMAs per item.
    pub fmas: f64,
    /// Forest levels (0 where none).
    pub levels: f64,
    /// Jacobi steps (0 where none).
    pub steps: f64,
    /// `host` or `device`.
    pub clock: String,
    /// Non-PT median time, ms.
    pub non_pt_ms: f64,
    /// PT median time, ms.
    pub pt_ms: f64,
    /// Non-PT fastest and slowest repetition, ms (the median where the CSV lacks them).
    pub non_pt_range: (f64, f64),
    /// PT fastest and slowest repetition, ms.
    pub pt_range: (f64, f64),
}

impl Pair {
    /// Non-PT time / PT time: above 1, PT is faster.
    pub fn speedup(&self) -> f64 {
        self.non_pt_ms / self.pt_ms
    }

    /// The speedup's spread over the repetitions: from the least favourable pairing (non-PT's fastest over PT's
    /// slowest) to the most, (low, high).
    pub fn speedup_spread(&self) -> (f64, f64) {
        (self.non_pt_range.0 / self.pt_range.1, self.non_pt_range.1 / self.pt_range.0)
    }
}

/// Pairs every verified non-PT row with the PT rows of the same use case, flavour, sizes and clock, at the maximal
/// launch (the queue study's and the barrier-alone rows have no non-PT partner; PT rows at fewer groups per CU are
/// read in [`step_costs`]). Rows may come from different shards or resumed runs: only the CSV counts.
pub fn pairs(rows: &[CsvRow]) -> Vec<Pair> {
    let get = |r: &CsvRow, c: &str| r.get(c).cloned().unwrap_or_default();
    let num = |r: &CsvRow, c: &str| num(r, c).unwrap_or(0.0);
    let ok: Vec<&CsvRow> = ok_rows(rows).collect();
    let key =
        |r: &CsvRow| ["use_case", "flavour", "items", "fmas", "levels", "steps", "clock"].map(|c| get(r, c)).join("|");
    // (min, max) of a row's repetitions, the median where the CSV lacks them.
    let range = |r: &CsvRow| {
        let median = num(r, "time_ms_median");
        let of = |c: &str| Some(num(r, c)).filter(|v| *v > 0.0).unwrap_or(median);
        (of("time_ms_min"), of("time_ms_max"))
    };
    let mut non_pt: HashMap<String, (f64, (f64, f64))> = HashMap::new();
    for r in ok.iter().filter(|r| get(r, "variant") == "non_pt") {
        non_pt.insert(key(r), (num(r, "time_ms_median"), range(r)));
    }
    let mut out = Vec::new();
    // A PT row is at the maximal launch when its grid is the maximal launch (rows of runs before the groups-per-CU
    // sweep have no groups_per_cu column and are all at the maximal launch).
    let maximal = |r: &CsvRow| get(r, "groups_per_cu").is_empty() || get(r, "groups") == get(r, "max_groups");
    for r in ok.iter().filter(|r| {
        get(r, "variant") != "non_pt" && !["queue", "barrier"].contains(&get(r, "use_case").as_str()) && maximal(r)
    }) {
        if let Some(&(base, base_range)) = non_pt.get(&key(r)) {
            out.push(Pair {
                key: get(r, "key"),
                use_case: get(r, "use_case"),
                variant: get(r, "variant"),
                flavour: get(r, "flavour"),
                items: num(r, "items"),
                fmas: num(r, "fmas"),
                levels: num(r, "levels"),
                steps: num(r, "steps"),
                clock: get(r, "clock"),
                non_pt_ms: base,
                pt_ms: num(r, "time_ms_median"),
                non_pt_range: base_range,
                pt_range: range(r),
            });
        }
    }
    out
}

/// One verified device-clock row of global synchronisation, as a cost per step.
#[derive(Debug, Clone, PartialEq)]
pub struct StepCost {
    /// `jacobi` or `barrier` (the barrier alone).
    pub use_case: String,
    /// `pt_soft`, `pt_coop` or `non_pt` (a launch per step).
    pub variant: String,
    /// Jacobi elements (0 for the barrier alone).
    pub n: u64,
    /// Steps of the sequence.
    pub steps: u32,
    /// Groups per CU of the PT grid (`None` for Jacobi's non-PT rows: one group per tile).
    pub per_cu: Option<u32>,
    /// Whether the grid is the maximal launch.
    pub maximal: bool,
    /// Median time of the sequence / steps, µs: the barrier (and the step's work) plus the sequence's launch and
    /// resets spread over its steps.
    pub us: f64,
    /// The same at the fastest and the slowest repetition, µs (the median where the CSV lacks them).
    pub us_range: (f64, f64),
}

/// The device-clock `jacobi` and `barrier` rows as costs per step (host-clock rows add the host's launch costs and
/// noise: the speedup pairs show them).
pub fn step_costs(rows: &[CsvRow]) -> Vec<StepCost> {
    let get = |r: &CsvRow, c: &str| r.get(c).cloned().unwrap_or_default();
    ok_rows(rows)
        .filter(|r| ["jacobi", "barrier"].contains(&get(r, "use_case").as_str()) && get(r, "clock") == "device")
        .filter_map(|r| {
            let steps: u32 = get(r, "steps").parse().ok().filter(|&s| s > 0)?;
            let per_cu = get(r, "groups_per_cu").parse().ok();
            Some(StepCost {
                use_case: get(r, "use_case"),
                variant: get(r, "variant"),
                n: get(r, "items").parse().unwrap_or(0),
                steps,
                per_cu,
                maximal: per_cu.is_some() && get(r, "groups") == get(r, "max_groups"),
                us: num(r, "time_ms_median")? * 1e3 / f64::from(steps),
                us_range: {
                    let median = num(r, "time_ms_median")?;
                    let of = |c: &str| num(r, c).filter(|v| *v > 0.0).unwrap_or(median) * 1e3 / f64::from(steps);
                    (of("time_ms_min"), of("time_ms_max"))
                },
            })
        })
        .collect()
}

/// What a variant is in the global-synchronisation lines.
pub(super) fn sync_label(variant: &str) -> &'static str {
    match variant {
        "pt_soft" => "software barrier",
        "pt_coop" => "grid barrier (cooperative)",
        _ => "relaunch (graph)",
    }
}

/// The variants of the global-synchronisation lines, in order.
pub(super) const SYNC_VARIANTS: [&str; 3] = ["pt_soft", "pt_coop", "non_pt"];

/// The longest sequence of `use_case` at `n` (the one whose launch is spread thinnest over its steps).
pub(super) fn longest(costs: &[StepCost], use_case: &str, n: u64) -> Option<u32> {
    costs.iter().filter(|c| c.use_case == use_case && c.n == n).map(|c| c.steps).max()
}
