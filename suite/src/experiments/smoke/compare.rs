//! How `suite compare` compares smoke runs: the triad's bandwidth as % of each run's own driver copy, so devices
//! of different memory speeds compare by how close they come to their copy.

use std::fmt::Write as _;

use crate::experiments::copy_reference::{copy_gbps, copy_or_reason};
use crate::experiments::rate_spread;
use crate::report::compare::{
    devices_in_title, fmt_num, is_ok, key, level, num, per_run_plot, runs_subtitle, table, Comparison, Headline, Run,
    Values,
};
use crate::report::plot::{Axis, Series};

/// Smoke's triad: GB/s as % of the same run's copy bandwidth (occupancy's driver copy).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TriadComparison;

impl Comparison for TriadComparison {
    fn values(&self, experiment: &str, run: &Run) -> Result<Values, String> {
        let copy = copy_or_reason(run)?;
        let by_key = run
            .rows(experiment)
            .iter()
            .filter(|r| is_ok(r))
            .filter_map(|r| Some((key(r)?, num(r, "gbps")? / copy * 100.0)))
            .collect();
        Ok(Values { unit: "% of the run's copy bandwidth".into(), by_key, ..Values::default() })
    }

    fn headline(&self, experiment: &str, runs: &[&Run]) -> Headline {
        let copies: Vec<Option<f64>> = runs.iter().map(|r| copy_gbps(r)).collect();
        let mut ns: Vec<u64> = runs
            .iter()
            .flat_map(|r| r.rows(experiment).iter().filter(|x| is_ok(x)).filter_map(|x| x.get("n")?.parse().ok()))
            .collect();
        ns.sort_unstable();
        ns.dedup();
        let at = |r: &Run, n: u64| {
            r.rows(experiment)
                .iter()
                .find(|x| is_ok(x) && x.get("n") == Some(&n.to_string()))
                .and_then(|x| num(x, "gbps"))
        };
        let mut head = vec!["elements".to_string()];
        head.extend(runs.iter().map(|r| format!("run {} GB/s (% of copy)", r.index)));
        let mut rows: Vec<Vec<String>> = ns
            .iter()
            .map(|&n| {
                let mut row = vec![n.to_string()];
                for (r, c) in runs.iter().zip(&copies) {
                    row.push(match (at(r, n), c) {
                        (Some(g), Some(c)) => format!("{} ({:.0}%)", fmt_num(g), g / c * 100.0),
                        (Some(g), None) => fmt_num(g),
                        _ => "-".into(),
                    });
                }
                row
            })
            .collect();
        let mut copy_row = vec!["copy (driver)".to_string()];
        copy_row.extend(copies.iter().map(|c| c.map_or_else(|| "not measured".into(), fmt_num)));
        rows.push(copy_row);
        let mut md =
            format!("Triad bandwidth per run, and as % of the same run's driver copy:\n\n{}", table(&head, &rows));
        let xs: Vec<f64> = ns.iter().map(|&n| n as f64).collect();
        let mut series: Vec<Series> = runs
            .iter()
            .zip(&copies)
            .filter_map(|(r, c)| {
                let c = (*c)?;
                let pts = ns.iter().filter_map(|&n| Some((n as f64, at(r, n)? / c * 100.0))).collect();
                let spread = ns
                    .iter()
                    .filter_map(|&n| {
                        let row = r.rows(experiment).iter().find(|x| is_ok(x) && x.get("n") == Some(&n.to_string()))?;
                        let (lo, hi) = rate_spread(row, num(row, "gbps")? / c * 100.0)?;
                        Some((n as f64, lo, hi))
                    })
                    .collect();
                Some(Series::line(r.label(), pts).with_spread(spread))
            })
            .collect();
        series.extend(level("100% = the run's own driver copy", 100.0, &xs));
        let missing: Vec<String> =
            runs.iter().zip(&copies).filter(|(_, c)| c.is_none()).map(|(r, _)| format!("run {}", r.index)).collect();
        if !missing.is_empty() {
            let _ = writeln!(md, "No copy reference in {}: not in the plot.\n", missing.join(", "));
        }
        let plots = per_run_plot(
            format!("{experiment}: STREAM triad as % of the run's copy bandwidth ({})", devices_in_title(runs)),
            runs_subtitle(runs),
            ("elements per array", Axis::Log2, "% of the same run's driver copy GB/s", Axis::Linear),
            series,
            Some("sizes that fit in L2 can exceed 100%: back-to-back launches find their data there".into()),
        )
        .map(|p| vec![(format!("{experiment}-percent-of-copy.png"), p)])
        .unwrap_or_default();
        Headline { markdown: md, plots }
    }
}
