//! How `suite compare` compares PT across runs: per use case, PT variant and clock the non-PT/PT speedup over the
//! pairs every run holds, and the median times (µs) of the points every run holds, each with run N / run 1. Points
//! are joined by their median time in µs: PT's rate column counts different things on different rows (1 item per
//! round trip), so it is not compared.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::pairing::{pairs, CsvRow};
use crate::report::compare::{fmt_num, is_ok, key, num, table, text, Comparison, Headline, Run, Values};

/// PT's comparison: speedups and median times (see the module's documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PtComparison;

/// The median of `xs` (the upper one of an even count), or `None` when it is empty.
fn median(mut xs: Vec<f64>) -> Option<f64> {
    xs.sort_by(f64::total_cmp);
    xs.get(xs.len() / 2).copied()
}

/// What a row is compared within: use case, variant (with the round trip's part or the queue study's pop size) and
/// clock, e.g. `sync, pt (host clock)` or `roundtrip full`.
fn group_of(r: &CsvRow) -> String {
    let use_case = text(r, "use_case");
    match use_case.as_str() {
        "roundtrip" => format!("roundtrip {}", text(r, "queue")),
        "queue" => format!("queue, pop per {} ({} clock)", text(r, "queue"), text(r, "clock")),
        _ => format!("{use_case}, {} ({} clock)", text(r, "variant"), text(r, "clock")),
    }
}

/// A value per run and the median of the per-point ratios run N / run 1, as table cells.
fn ratio_cells(per_run: &[BTreeMap<String, f64>], keys: &[&String], cell: impl Fn(&[f64]) -> String) -> Vec<String> {
    let mut row: Vec<String> = per_run.iter().map(|m| cell(&keys.iter().map(|k| m[*k]).collect::<Vec<_>>())).collect();
    for m in &per_run[1..] {
        let ratios: Vec<f64> = keys.iter().map(|k| m[*k] / per_run[0][*k]).filter(|r| r.is_finite()).collect();
        row.push(median(ratios).map_or_else(|| "-".into(), |r| format!("{r:.2}")));
    }
    row
}

/// Groups of `keys` (each with its group label), in first-seen order, keeping only keys every run holds.
fn common_groups<'k>(
    labels: &'k [(String, String)],
    per_run: &[BTreeMap<String, f64>],
) -> Vec<(&'k str, Vec<&'k String>)> {
    let mut groups: Vec<(&str, Vec<&String>)> = Vec::new();
    let mut seen = BTreeSet::new();
    for (k, group) in labels {
        if !per_run.iter().all(|m| m.contains_key(k)) || !seen.insert(k) {
            continue;
        }
        match groups.iter_mut().find(|(g, _)| g == group) {
            Some((_, ks)) => ks.push(k),
            None => groups.push((group, vec![k])),
        }
    }
    groups
}

impl Comparison for PtComparison {
    fn values(&self, experiment: &str, run: &Run) -> Result<Values, String> {
        let table = run.tables.get(experiment).ok_or_else(|| format!("run {} has no {experiment}.csv", run.index))?;
        let by_key: BTreeMap<String, f64> = table
            .rows
            .iter()
            .filter(|r| is_ok(r))
            .filter_map(|r| Some((key(r)?, num(r, "time_ms_median")? * 1e3)))
            .collect();
        // Every value is a time: lower is faster.
        let times = by_key.keys().cloned().collect();
        Ok(Values { unit: "median time per sequence, µs (a ratio above 1: slower than run 1)".into(), by_key, times })
    }

    fn compares_raw_rate(&self) -> bool {
        false
    }

    fn headline(&self, experiment: &str, runs: &[&Run]) -> Headline {
        let mut md = String::new();
        let run_heads = |what: &str| {
            let mut head = vec![what.to_string(), "points".to_string()];
            head.extend(runs.iter().map(|r| format!("run {} {}", r.index, r.short_device())));
            head.extend(runs[1..].iter().map(|r| format!("run {} / run 1", r.index)));
            head
        };

        // Speedups, joined by the PT row's key.
        let mut labels: Vec<(String, String)> = Vec::new();
        let per_run: Vec<BTreeMap<String, f64>> = runs
            .iter()
            .map(|r| {
                let ps = pairs(r.rows(experiment));
                for p in &ps {
                    labels
                        .push((p.key.clone(), format!("{}, {} vs non_pt ({} clock)", p.use_case, p.variant, p.clock)));
                }
                ps.into_iter().map(|p| (p.key.clone(), p.speedup())).collect()
            })
            .collect();
        let rows: Vec<Vec<String>> = common_groups(&labels, &per_run)
            .into_iter()
            .map(|(group, keys)| {
                let mut row = vec![group.to_string(), keys.len().to_string()];
                row.extend(ratio_cells(&per_run, &keys, |xs| {
                    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
                    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    let mid = median(xs.to_vec()).unwrap_or(f64::NAN);
                    if xs.len() == 1 {
                        format!("{mid:.2}x")
                    } else {
                        format!("{mid:.2}x ({lo:.2} to {hi:.2})")
                    }
                }));
                row
            })
            .collect();
        if rows.is_empty() {
            let _ = writeln!(md, "No non-PT/PT pair is in every run: no speedups to compare.\n");
        } else {
            let _ = writeln!(
                md,
                "Speedup non-PT / PT (above 1: PT is faster) over the pairs every run holds: each run's median (its \
                 range), and the median of the per-pair ratios run N / run 1:\n"
            );
            md.push_str(&table(&run_heads("use case, PT variant"), &rows));
        }

        // Median times, joined by the row's key.
        let mut labels: Vec<(String, String)> = Vec::new();
        let per_run: Vec<BTreeMap<String, f64>> = runs
            .iter()
            .map(|r| {
                r.rows(experiment)
                    .iter()
                    .filter(|x| is_ok(x))
                    .filter_map(|x| {
                        let k = key(x)?;
                        labels.push((k.clone(), group_of(x)));
                        Some((k, num(x, "time_ms_median")? * 1e3))
                    })
                    .collect()
            })
            .collect();
        let rows: Vec<Vec<String>> = common_groups(&labels, &per_run)
            .into_iter()
            .map(|(group, keys)| {
                let mut row = vec![group.to_string(), keys.len().to_string()];
                row.extend(ratio_cells(&per_run, &keys, |xs| fmt_num(median(xs.to_vec()).unwrap_or(f64::NAN))));
                row
            })
            .collect();
        if !rows.is_empty() {
            let _ = writeln!(
                md,
                "Median time per sequence, µs, over the points every run holds (each run's median over the group's \
                 points), and the median of the per-point ratios run N / run 1 (above 1: slower than run 1):\n"
            );
            md.push_str(&table(&run_heads("use case, variant"), &rows));
        }
        Headline { markdown: md, plots: Vec::new() }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::report::compare::report;

    /// A run folder holding `pt.csv` (fixture rows: the round trip's parts and sync pairs at two sizes) measured on
    /// `device` with every time scaled by `scale` and PT's by `pt_scale` on top.
    fn write_pt_run(dir: &Path, device: &str, scale: f64, pt_scale: f64) {
        std::fs::create_dir_all(dir).unwrap();
        let json = serde_json::json!({
            "device": {"platform": "nvidia", "name": device, "arch": "sm_90", "wave_size": 32, "cu_count": 132},
            "invocations": [{"experiment": "pt", "git_commit": "abc", "date": "2026-11-24T10:00:00Z", "host": "h"}]
        });
        std::fs::write(dir.join("run.json"), json.to_string()).unwrap();
        let mut csv = String::from(
            "experiment,device,arch,wave_size,key,use_case,variant,queue,flavour,items,fmas,levels,steps,groups,\
             max_groups,groups_per_cu,clock,timing,time_ms_median,gitems_per_s,max_rel_err,status\n",
        );
        for (part, ms) in [("launch", 0.008), ("readback", 0.012), ("full", 0.030)] {
            let ms = ms * scale;
            let rate = 1.0 / (ms * 1e-3) / 1e9;
            csv.push_str(&format!(
                "pt,{device},sm_90,32,roundtrip/{part},roundtrip,non_pt,{part},,1,0,,,1,,,host,host,{ms},{rate},0,ok\n"
            ));
        }
        for items in [8192u32, 524288] {
            for (variant, queue, ms) in [("non_pt", "", 0.040), ("pt", "group", 0.020)] {
                let ms = ms * scale * if variant == "pt" { pt_scale } else { 1.0 };
                let key = format!("sync/{variant}/{queue}/ci/items={items},fmas=1/host");
                csv.push_str(&format!(
                    "pt,{device},sm_90,32,\"{key}\",sync,{variant},{queue},ci,{items},1,,,,,,host,host,{ms},1,0,ok\n"
                ));
            }
        }
        std::fs::write(dir.join("pt.csv"), csv).unwrap();
    }

    #[test]
    fn pt_is_compared_on_its_speedups_and_times_not_on_its_rate() {
        let root = tempfile::tempdir().unwrap();
        let (a, b) = (root.path().join("h100"), root.path().join("h200"));
        // Run 2: every time 0.8x run 1's, PT's a further 0.5x: its speedup doubles.
        write_pt_run(&a, "NVIDIA H100 80GB HBM3", 1.0, 1.0);
        write_pt_run(&b, "NVIDIA H200", 0.8, 0.5);
        let runs = [crate::report::compare::read_run(&a, 1).unwrap(), crate::report::compare::read_run(&b, 2).unwrap()];
        let known =
            crate::report::compare::Known { comparisons: vec![("pt", Box::new(PtComparison))], roofline: vec![] };
        let (md, _) = report(&runs, &known);
        let pt = &md[md.find("## pt").unwrap()..];
        assert!(!pt.contains("0.000 | 0.000") && !pt.contains("0.000 vs 0.000"), "{pt}");
        assert!(pt.contains("compared by median time per sequence, µs"), "{pt}");
        // The speedups: 2x in run 1, 4x in run 2, ratio 2 per pair.
        assert!(
            pt.contains("| sync, pt vs non_pt (host clock) | 2 | 2.00x (2.00 to 2.00) | 4.00x (4.00 to 4.00) | 2.00 |"),
            "{pt}"
        );
        // The round trip in µs: 30 against 24, ratio 0.80.
        assert!(pt.contains("| roundtrip full | 1 | 30.0 | 24.0 | 0.80 |"), "{pt}");
        assert!(pt.contains("| sync, pt (host clock) | 2 | 20.0 | 8.00 | 0.40 |"), "{pt}");
        // One device in both runs: the raw rate is still not compared.
        write_pt_run(&b, "NVIDIA H100 80GB HBM3", 0.8, 0.5);
        let runs = [crate::report::compare::read_run(&a, 1).unwrap(), crate::report::compare::read_run(&b, 2).unwrap()];
        let (md, _) = report(&runs, &known);
        assert!(!md.contains("raw rate compares too") && !md.contains("0.000 | 0.000"), "{md}");
    }
}
