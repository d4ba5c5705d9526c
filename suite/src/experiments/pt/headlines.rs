//! PT's lines of `summary.md`: the bare round trip; per use case, PT variant and clock the range of the non-PT/PT
//! speedup with the parameters of its ends and those swept; the cost per step of global synchronisation.

use std::collections::BTreeMap;

use super::pairing::{longest, pairs, step_costs, sync_label, CsvRow, Pair, StepCost, SYNC_VARIANTS};
use super::plots::size_text;
use crate::experiments::{num, ok_rows};

/// The lines of [`crate::experiments::Results::headlines`]: the bare round trip, then per use case, PT variant
/// and clock the range of the non-PT/PT speedup over its pairs (above 1: PT is faster), each end with the
/// parameters that give it, then global synchronisation's costs per step.
pub(super) fn headlines(rows: &[CsvRow]) -> Vec<String> {
    let mut out = Vec::new();
    let round_trip = ok_rows(rows)
        .find(|r| {
            r.get("use_case").map(String::as_str) == Some("roundtrip")
                && r.get("queue").map(String::as_str) == Some("full")
        })
        .and_then(|r| num(r, "time_ms_median"));
    if let Some(ms) = round_trip {
        out.push(format!("bare round trip (launch, 4-byte readback, relaunch, sync): {:.1} µs", ms * 1e3));
    }
    let mut groups: BTreeMap<(String, String, String), Vec<Pair>> = BTreeMap::new();
    for p in pairs(rows) {
        groups.entry((p.use_case.clone(), p.variant.clone(), p.clock.clone())).or_default().push(p);
    }
    for ((use_case, variant, clock), group) in groups {
        out.push(format!("{use_case}, {variant} vs non_pt ({clock} clock): {}", speedup_range(&group)));
    }
    out.extend(barrier_headlines(&step_costs(rows)));
    out
}

/// The parameters that tell a pair of `use_case` apart, as (name, value).
fn parameters(p: &Pair) -> Vec<(&'static str, String)> {
    let size = |v: f64| size_text(&v.to_string());
    match p.use_case.as_str() {
        "sync" => vec![("items", size(p.items)), ("fmas", p.fmas.to_string()), ("flavour", p.flavour.clone())],
        "forest_full" | "forest_tilted" => vec![("inputs", size(p.items)), ("levels", p.levels.to_string())],
        "jacobi" => vec![("n", size(p.items)), ("steps", p.steps.to_string())],
        _ => vec![("n", size(p.items))],
    }
}

/// A pair's parameters in one phrase, e.g. `items 2^13, fmas 64, cmi`.
fn at(p: &Pair) -> String {
    parameters(p)
        .into_iter()
        .map(|(name, v)| if name == "flavour" { v } else { format!("{name} {v}") })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The parameters that vary over `group`, each as its range, e.g. `items 2^10..2^22, fmas 1..256, ci/cmi`.
fn swept(group: &[Pair]) -> String {
    let Some(first) = group.first() else { return String::new() };
    let mut out = Vec::new();
    for (i, (name, _)) in parameters(first).into_iter().enumerate() {
        let mut values: Vec<String> = group.iter().filter_map(|p| parameters(p).get(i).map(|v| v.1.clone())).collect();
        // Numeric order where the values are numbers (2^k sorts by k, which is its size's order).
        let order = |v: &String| {
            v.strip_prefix("2^")
                .map_or_else(|| v.parse::<f64>().unwrap_or(0.0), |k| 2f64.powf(k.parse().unwrap_or(0.0)))
        };
        values.sort_by(|a, b| order(a).total_cmp(&order(b)).then(a.cmp(b)));
        values.dedup();
        match values.as_slice() {
            [] | [_] => {}
            [lo, .., hi] if name == "flavour" => out.push(format!("{lo}/{hi}")),
            [lo, .., hi] => out.push(format!("{name} {lo}..{hi}")),
        }
    }
    out.join(", ")
}

/// The speedup range of one group of pairs with the parameters of its ends and those swept, e.g. `speedup 0.80x
/// (items 2^22, fmas 256, ci) to 3.10x (items 2^10, fmas 1, ci) over 10 points (items 2^10..2^22, fmas 1..256)`.
fn speedup_range(group: &[Pair]) -> String {
    let by_speedup = |a: &&Pair, b: &&Pair| a.speedup().total_cmp(&b.speedup());
    let (Some(lo), Some(hi)) = (group.iter().min_by(by_speedup), group.iter().max_by(by_speedup)) else {
        return "no pairs".into();
    };
    let n = group.len();
    let swept = swept(group);
    let swept = if swept.is_empty() { String::new() } else { format!(" ({swept})") };
    if n == 1 {
        format!("speedup {:.2}x at 1 point ({})", lo.speedup(), at(lo))
    } else if format!("{:.2}", lo.speedup()) == format!("{:.2}", hi.speedup()) {
        format!("speedup {:.2}x at all {n} points{swept}", lo.speedup())
    } else {
        format!("speedup {:.2}x ({}) to {:.2}x ({}) over {n} points{swept}", lo.speedup(), at(lo), hi.speedup(), at(hi))
    }
}

/// Headlines of global synchronisation: at the maximal launch, µs per step of each Jacobi size and of the barrier
/// alone; then the barrier alone and each Jacobi size by groups per CU.
pub(super) fn barrier_headlines(costs: &[StepCost]) -> Vec<String> {
    let mut out = Vec::new();
    let mut sizes: Vec<u64> = costs.iter().filter(|c| c.use_case == "jacobi").map(|c| c.n).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let cases: Vec<(&str, u64)> = std::iter::once(("barrier", 0)).chain(sizes.iter().map(|&n| ("jacobi", n))).collect();
    let what = |use_case: &str, n: u64, steps: u32| {
        if use_case == "barrier" {
            format!("barrier alone ({steps} steps)")
        } else {
            format!("Jacobi n = {n} ({steps} steps)")
        }
    };
    for &(use_case, n) in &cases {
        let Some(steps) = longest(costs, use_case, n) else { continue };
        let of = |c: &&StepCost| c.use_case == use_case && c.n == n && c.steps == steps;
        // At the maximal launch; Jacobi's relaunch is its one group per tile.
        let at_max: Vec<String> = SYNC_VARIANTS
            .iter()
            .filter_map(|&v| {
                let c = costs.iter().filter(of).find(|c| {
                    c.variant == v && (c.maximal || (use_case == "jacobi" && v == "non_pt" && c.per_cu.is_none()))
                })?;
                Some(format!("{} {:.2}", sync_label(v), c.us))
            })
            .collect();
        if !at_max.is_empty() {
            out.push(format!(
                "{}, µs per step at the maximal launch (device clock): {}",
                what(use_case, n, steps),
                at_max.join(", ")
            ));
        }
        // By groups per CU.
        let mut per_cu: Vec<u32> = costs.iter().filter(of).filter_map(|c| c.per_cu).collect();
        per_cu.sort_unstable();
        per_cu.dedup();
        if per_cu.len() > 1 {
            let by: Vec<String> = SYNC_VARIANTS
                .iter()
                .filter_map(|&v| {
                    let vals: Vec<String> = per_cu
                        .iter()
                        .map(|&k| {
                            costs
                                .iter()
                                .filter(of)
                                .find(|c| c.variant == v && c.per_cu == Some(k))
                                .map_or("-".to_string(), |c| format!("{:.2}", c.us))
                        })
                        .collect();
                    vals.iter().any(|v| v != "-").then(|| format!("{} {}", sync_label(v), vals.join("/")))
                })
                .collect();
            let ks: Vec<String> = per_cu.iter().map(u32::to_string).collect();
            out.push(format!(
                "{}, µs per step at {} groups per CU: {}",
                what(use_case, n, steps),
                ks.join("/"),
                by.join("; ")
            ));
        }
    }
    out
}
