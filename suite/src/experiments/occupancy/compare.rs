//! How `suite compare` compares occupancy runs: bandwidth as % of each run's own copy, the theoretical occupancy
//! against group size, and the residency probe against rounds of groups.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::experiments::copy_reference::{copy_gbps, copy_or_reason};
use crate::experiments::rate_spread;
use crate::report::compare::{
    devices_in_title, fmt_num, is_ok, key, level, num, per_run_plot, runs_subtitle, sorted_points, table, text,
    Comparison, Headline, Rec, Run, Values,
};
use crate::report::plot::{Axis, Series};

/// Occupancy: bandwidth as % of the run's copy, and the theoretical occupancy, against group size and LDS; the
/// residency probe's time against rounds (groups / groups the device holds), which removes the device's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OccupancyComparison;

fn sweep_rows<'r>(run: &'r Run, experiment: &str, sweep: &str) -> Vec<&'r Rec> {
    run.rows(experiment).iter().filter(|r| is_ok(r) && r.get("sweep").map(String::as_str) == Some(sweep)).collect()
}

impl Comparison for OccupancyComparison {
    fn values(&self, experiment: &str, run: &Run) -> Result<Values, String> {
        let copy = copy_or_reason(run)?;
        let mut times = std::collections::BTreeSet::new();
        let by_key = run
            .rows(experiment)
            .iter()
            .filter(|r| is_ok(r))
            .filter_map(|r| {
                let g = num(r, "gbps")?;
                // Rows that move no bytes (the residency probe) are compared by their median time.
                let v = if g > 0.0 {
                    g / copy * 100.0
                } else {
                    times.insert(key(r)?);
                    num(r, "time_ms_median")?
                };
                Some((key(r)?, v))
            })
            .collect();
        let unit = "% of the run's copy bandwidth (rows without bytes: median time, ms)".into();
        Ok(Values { unit, by_key, times })
    }

    fn headline(&self, experiment: &str, runs: &[&Run]) -> Headline {
        let mut md = String::new();
        let copies: Vec<Option<f64>> = runs.iter().map(|r| copy_gbps(r)).collect();
        let pct = |g: f64, c: Option<f64>| c.map(|c| format!(" ({:.0}%)", g / c * 100.0)).unwrap_or_default();

        // The bandwidth references.
        let mut labels: Vec<(String, String)> = Vec::new();
        for r in runs {
            for row in ["copy", "copy_kernel"].iter().flat_map(|s| sweep_rows(r, experiment, s)) {
                let id = (text(row, "sweep"), text(row, "kernel"));
                if !labels.contains(&id) {
                    labels.push(id);
                }
            }
        }
        let mut head = vec!["reference".to_string()];
        head.extend(runs.iter().map(|r| format!("run {} GB/s (% of copy)", r.index)));
        let rows: Vec<Vec<String>> = labels
            .iter()
            .map(|(sweep, kernel)| {
                let mut row = vec![format!("{sweep} `{kernel}`")];
                for (r, c) in runs.iter().zip(&copies) {
                    let g = sweep_rows(r, experiment, sweep)
                        .into_iter()
                        .find(|x| text(x, "kernel") == *kernel)
                        .and_then(|x| num(x, "gbps"));
                    row.push(g.map_or_else(|| "-".into(), |g| format!("{}{}", fmt_num(g), pct(g, *c))));
                }
                row
            })
            .collect();
        if !rows.is_empty() {
            let _ = writeln!(md, "Bandwidth references (the driver's copy is each run's 100%):\n");
            md.push_str(&table(&head, &rows));
        }

        // Group size: theoretical occupancy and % of copy, one and four elements per item.
        let by_group = |r: &Run, sweep: &str, column: &str| -> BTreeMap<u64, (f64, String)> {
            sweep_rows(r, experiment, sweep)
                .into_iter()
                .filter_map(|x| {
                    let g = x.get("group_size")?.parse().ok()?;
                    Some((g, (num(x, column)?, text(x, "limiter"))))
                })
                .collect()
        };
        let mut groups: Vec<u64> = runs
            .iter()
            .flat_map(|r| {
                by_group(r, "group_size", "occupancy_pct")
                    .into_keys()
                    .chain(by_group(r, "group_size_x4", "gbps").into_keys())
            })
            .collect();
        groups.sort_unstable();
        groups.dedup();
        if !groups.is_empty() {
            let mut head = vec!["group size".to_string()];
            for r in runs {
                head.push(format!("run {} occupancy (limiter)", r.index));
                head.push(format!("run {} % of copy, 1 / 4 per item", r.index));
            }
            let rows: Vec<Vec<String>> = groups
                .iter()
                .map(|g| {
                    let mut row = vec![g.to_string()];
                    for (r, c) in runs.iter().zip(&copies) {
                        let occ = by_group(r, "group_size", "occupancy_pct")
                            .remove(g)
                            .or_else(|| by_group(r, "group_size_x4", "occupancy_pct").remove(g))
                            .map(|(o, l)| format!("{o:.1}% ({l})"));
                        row.push(occ.unwrap_or_else(|| "-".into()));
                        let p = |sweep: &str| {
                            let g = by_group(r, sweep, "gbps").get(g).map(|x| x.0);
                            match (g, c) {
                                (Some(g), Some(c)) => format!("{:.0}%", g / c * 100.0),
                                (Some(g), None) => format!("{} GB/s", fmt_num(g)),
                                _ => "-".into(),
                            }
                        };
                        row.push(format!("{} / {}", p("group_size"), p("group_size_x4")));
                    }
                    row
                })
                .collect();
            let _ = writeln!(
                md,
                "Group size: theoretical occupancy (% of the CU's/SM's wave slots) and the vector add's bandwidth as % \
                 of the same run's copy, one element (`group_size`) and four elements (`group_size_x4`) per item:\n"
            );
            md.push_str(&table(&head, &rows));
        }

        let mut plots = Vec::new();
        let subtitle = runs_subtitle(runs);
        // A sweep's % of the run's copy `c` over `x` (scaled by `x_scale`), as error bars from each row's
        // repetitions.
        let spread_of = |r: &Run, sweep: &str, x: &str, x_scale: f64, c: f64| -> Vec<(f64, f64, f64)> {
            sweep_rows(r, experiment, sweep)
                .into_iter()
                .filter_map(|row| {
                    let (lo, hi) = rate_spread(row, num(row, "gbps")? / c * 100.0)?;
                    Some((num(row, x)? / x_scale, lo, hi))
                })
                .filter(|b| b.0 > 0.0)
                .collect()
        };
        let xs: Vec<f64> = groups.iter().map(|&g| g as f64).collect();
        let occ_series: Vec<Series> = runs
            .iter()
            .map(|r| {
                let pts =
                    by_group(r, "group_size", "occupancy_pct").into_iter().map(|(g, (o, _))| (g as f64, o)).collect();
                Series::line(r.label(), pts)
            })
            .collect();
        let wave_note = "a group fills whole waves: on wave64 a group of 96 is two waves with 32 idle lanes, on warp32 three full warps";
        if let Some(p) = per_run_plot(
            format!("occupancy: theoretical occupancy vs group size ({})", devices_in_title(runs)),
            subtitle.clone(),
            ("items per group", Axis::Log2, "theoretical occupancy, % of wave slots", Axis::Linear),
            occ_series,
            Some(wave_note.into()),
        ) {
            plots.push(("occupancy-theoretical-vs-group-size.png".to_string(), p));
        }
        let mut bw_series = Vec::new();
        for (r, c) in runs.iter().zip(&copies) {
            let Some(c) = c else { continue };
            for (sweep, what) in [("group_size", "1 per item"), ("group_size_x4", "4 per item")] {
                let pts = by_group(r, sweep, "gbps").into_iter().map(|(g, (b, _))| (g as f64, b / c * 100.0)).collect();
                let spread = spread_of(r, sweep, "group_size", 1.0, *c);
                bw_series.push(Series::line(format!("{}, {what}", r.label()), pts).with_spread(spread));
            }
        }
        bw_series.extend(level("100% = the run's own driver copy", 100.0, &xs));
        if let Some(p) = per_run_plot(
            format!("occupancy: vector add as % of the run's copy bandwidth ({})", devices_in_title(runs)),
            subtitle.clone(),
            ("items per group", Axis::Log2, "% of the same run's driver copy GB/s", Axis::Linear),
            bw_series,
            None,
        ) {
            plots.push(("occupancy-group-size-percent-of-copy.png".to_string(), p));
        }

        // LDS per group: % of copy.
        let by_lds = |r: &Run, sweep: &str| -> Vec<(f64, f64)> {
            sweep_rows(r, experiment, sweep)
                .into_iter()
                .filter_map(|x| Some((num(x, "dynamic_lds_bytes")? / 1024.0, num(x, "gbps")?)))
                .filter(|p| p.0 > 0.0)
                .collect()
        };
        let mut lds_series = Vec::new();
        let mut lds_x = Vec::new();
        for (r, c) in runs.iter().zip(&copies) {
            let Some(c) = c else { continue };
            for (sweep, what) in [("lds", "1 per item"), ("lds_x4", "4 per item")] {
                let pts: Vec<(f64, f64)> = by_lds(r, sweep).into_iter().map(|(k, g)| (k, g / c * 100.0)).collect();
                lds_x.extend(pts.iter().map(|p| p.0));
                let spread = spread_of(r, sweep, "dynamic_lds_bytes", 1024.0, *c);
                lds_series.push(Series::line(format!("{}, {what}", r.label()), sorted_points(pts)).with_spread(spread));
            }
        }
        lds_series.extend(level("100% = the run's own driver copy", 100.0, &lds_x));
        if let Some(p) = per_run_plot(
            format!("occupancy: bandwidth vs dynamic LDS per group ({})", devices_in_title(runs)),
            subtitle.clone(),
            ("dynamic LDS per group, KiB", Axis::Log2, "% of the same run's driver copy GB/s", Axis::Linear),
            lds_series,
            Some(
                "LDS per CU: 64 KiB on gfx90a, up to 228 KiB per SM on sm_90: the steps fall at different sizes".into(),
            ),
        ) {
            plots.push(("occupancy-lds-percent-of-copy.png".to_string(), p));
        }

        // Residency probe: time vs rounds, which removes the device's size.
        let spin_series: Vec<Series> = runs
            .iter()
            .map(|r| {
                let rows = sweep_rows(r, experiment, "group_count_spin");
                let pts =
                    rows.iter().filter_map(|x| Some((num(x, "rounds")?, num(x, "time_ms_median")? * 1e3))).collect();
                let spread = rows
                    .iter()
                    .filter_map(|x| {
                        Some((num(x, "rounds")?, num(x, "time_ms_min")? * 1e3, num(x, "time_ms_max")? * 1e3))
                    })
                    .collect();
                Series::line(r.label(), sorted_points(pts)).with_spread(spread)
            })
            .collect();
        if let Some(p) = per_run_plot(
            format!("occupancy: residency probe vs rounds of groups ({})", devices_in_title(runs)),
            subtitle,
            ("rounds = groups / groups the device holds at once", Axis::Linear, "median time, µs", Axis::Linear),
            spin_series,
            Some("every wave spins 20 µs: each whole round of groups adds one step; group counts differ per device, rounds compare".into()),
        ) {
            plots.push(("occupancy-spin-vs-rounds.png".to_string(), p));
        }
        if copies.iter().any(Option::is_none) {
            let missing: Vec<String> = runs
                .iter()
                .zip(&copies)
                .filter(|(_, c)| c.is_none())
                .map(|(r, _)| format!("run {}", r.index))
                .collect();
            let _ = writeln!(
                md,
                "No copy reference in {}: its bandwidth is left out of the % plots.\n",
                missing.join(", ")
            );
        }
        Headline { markdown: md, plots }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::compare_tests::two_runs;
    use crate::report::compare::read_run;

    #[test]
    fn group_sizes_compare_by_occupancy_and_percent_of_each_runs_own_copy() {
        let root = tempfile::tempdir().unwrap();
        let (amd, nv) = two_runs(root.path());
        let runs = [read_run(&amd, 1).unwrap(), read_run(&nv, 2).unwrap()];
        let runs: Vec<&Run> = runs.iter().collect();
        // 520 GB/s over the MI250X run's 1300 GB/s copy; 1800 over the H100 run's 3000.
        let values = OccupancyComparison.values("occupancy", runs[0]).unwrap();
        assert_eq!(values.by_key.get("group_size/g=96,n=64"), Some(&40.0));
        assert_eq!(OccupancyComparison.values("occupancy", runs[1]).unwrap().by_key["group_size/g=96,n=64"], 60.0);
        let Headline { markdown, plots } = OccupancyComparison.headline("occupancy", &runs);
        // Group size 96: 75% occupancy on wave64 (two waves, 32 lanes idle) vs 98.4% on warp32.
        assert!(markdown.contains("| 96 | 75.0% (waves) | 40% / - | 98.4% (waves) | 60% / - |"), "{markdown}");
        assert!(markdown.contains("| 64 | 100.0% (waves) | 50% / - | - | - / - |"), "{markdown}");
        let names: Vec<&str> = plots.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(names, ["occupancy-theoretical-vs-group-size.png", "occupancy-group-size-percent-of-copy.png"]);
        // One line per run, labelled with device and wave size, on the same axes.
        let (_, occ_plot) = &plots[0];
        let labels: Vec<&str> = occ_plot.series.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["1: Instinct MI250X, wave64 [mi250x]", "2: H100 80GB HBM3, warp32 [h100]"]);
        assert_eq!(occ_plot.series[0].points, [(64.0, 100.0), (96.0, 75.0)]);
        assert!(occ_plot.subtitle.as_deref().unwrap().contains("(gfx90a, wave64)  vs  run 2"));
        // The bandwidth plot: % of each run's copy, with the 100% line.
        let (_, bw) = &plots[1];
        assert_eq!(bw.series[0].points, [(64.0, 50.0), (96.0, 40.0)]);
        assert!(bw.series.iter().any(|s| s.label.starts_with("100% = the run's own driver copy")));
    }

    #[test]
    fn a_run_without_its_copy_reference_is_named() {
        let root = tempfile::tempdir().unwrap();
        let (amd, _) = two_runs(root.path());
        let mut run = read_run(&amd, 1).unwrap();
        run.tables.get_mut("occupancy").unwrap().rows.retain(|r| r.get("sweep").map(String::as_str) != Some("copy"));
        let err = OccupancyComparison.values("occupancy", &run).unwrap_err();
        assert!(err.contains("run 1 has no copy reference"), "{err}");
        let Headline { markdown, .. } = OccupancyComparison.headline("occupancy", &[&run]);
        assert!(markdown.contains("No copy reference in run 1"), "{markdown}");
    }
}
