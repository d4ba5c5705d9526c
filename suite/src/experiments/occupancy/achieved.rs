//! Achieved beside theoretical occupancy along the sweeps: the profiler's active waves per CU/SM for each point
//! (`counters.csv`, written beside the CSV by `suite run --counters`) against the calculator's figure the row
//! carries. No counters, no plots.

use std::collections::BTreeMap;
use std::path::Path;

use crate::experiments::num;
use crate::report::plot::{Axis, LinePlot, Series};

/// A row of the CSV, column → value.
type Row = BTreeMap<String, String>;

/// One plot: its file, what it shows, its sweeps (name, legend), its x column with the scale that turns it into
/// the axis' unit, the axis label and scale.
struct Along {
    file: &'static str,
    what: &'static str,
    sweeps: &'static [(&'static str, &'static str)],
    x: (&'static str, f64),
    x_label: &'static str,
    x_axis: Axis,
    /// Whether the grid can be smaller than the device: then the calculator's figure per CU holds only where
    /// enough groups are launched, and the plot adds it at the grid's size ([`at_grid`]).
    small_grids: bool,
}

/// The theoretical occupancy of a CU that runs `row`'s grid, %: the calculator's resident groups per CU, or fewer
/// where the grid spread evenly over the CUs gives each fewer (`groups` below the device's `capacity` of resident
/// groups), each holding the same waves. The CU count is capacity over groups per CU.
fn at_grid(row: &Row, capacity: f64) -> Option<f64> {
    let (groups, per_cu, pct) = (num(row, "groups")?, num(row, "groups_per_cu")?, num(row, "occupancy_pct")?);
    if per_cu <= 0.0 || capacity <= 0.0 {
        return None;
    }
    let cus = (capacity / per_cu).round().max(1.0);
    Some(pct * per_cu.min((groups / cus).ceil()) / per_cu)
}

/// The groups the device holds at once, from a sweep's rows: groups / rounds of the row with the most groups,
/// whose `rounds` has the most significant digits.
fn capacity(rows: &[&&Row]) -> Option<f64> {
    rows.iter()
        .filter_map(|r| Some((num(r, "groups")?, num(r, "rounds")?)))
        .filter(|(_, rounds)| *rounds > 0.0)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(groups, rounds)| (groups / rounds).round())
}

const ALONG: &[Along] = &[
    Along {
        file: "occupancy-group-size-achieved.png",
        what: "vector add vs group size",
        sweeps: &[("group_size", "one element per item"), ("group_size_x4", "four elements per item")],
        x: ("group_size", 1.0),
        x_label: "items per group (log2 axis)",
        x_axis: Axis::Log2,
        small_grids: false,
    },
    Along {
        file: "occupancy-group-count-achieved.png",
        what: "group count",
        sweeps: &[
            ("group_count", "vector add, fixed work per group"),
            ("group_count_spin", "residency probe, every wave waits a fixed time"),
        ],
        x: ("groups", 1.0),
        x_label: "groups in the grid (log2 axis)",
        x_axis: Axis::Log2,
        small_grids: true,
    },
    Along {
        file: "occupancy-lds-achieved.png",
        what: "vector add vs LDS per group",
        sweeps: &[("lds", "one element per item"), ("lds_x4", "four elements per item")],
        x: ("dynamic_lds_bytes", 1024.0),
        x_label: "dynamic LDS per group (KiB, log2 axis)",
        x_axis: Axis::Log2,
        small_grids: false,
    },
    Along {
        file: "occupancy-registers-achieved.png",
        what: "register pressure",
        sweeps: &[("registers", "live values per item")],
        x: ("registers_per_item", 1.0),
        x_label: "registers per item (as allocated by the compiler)",
        x_axis: Axis::Linear,
        small_grids: false,
    },
];

/// The achieved-occupancy plots of the `ok` rows `ok`, from the `counters.csv` in `dir`, on `device`.
pub(super) fn plots(ok: &[&Row], dir: &Path, device: &str) -> Vec<(String, LinePlot)> {
    let counters = crate::counters::table::by_point(dir);
    if counters.is_empty() {
        return Vec::new();
    }
    let counter_of = |r: &Row| counters.get(&(r.get("experiment")?.clone(), r.get("key")?.clone()));
    let achieved = |r: &Row| counter_of(r).and_then(|c| c.get("occupancy_achieved_pct")?.parse::<f64>().ok());
    let profiler = ok.iter().find_map(|r| counter_of(r)?.get("profiler").cloned()).unwrap_or_default();
    let mut out = Vec::new();
    for along in ALONG {
        let (x, scale) = along.x;
        let points = |sweep: &str, y: &dyn Fn(&Row) -> Option<f64>| {
            let mut pts: Vec<(f64, f64)> = ok
                .iter()
                .filter(|r| r.get("sweep").is_some_and(|s| s == sweep))
                .filter_map(|r| Some((num(r, x)? / scale, y(r)?)))
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            pts
        };
        let mut series = Vec::new();
        let mut theoretical: Option<Vec<(f64, f64)>> = None;
        for (sweep, label) in along.sweeps {
            let measured = points(sweep, &achieved);
            if measured.is_empty() {
                continue;
            }
            series.push(Series::line(format!("achieved: {label}"), measured));
            let model = points(sweep, &|r| num(r, "occupancy_pct"));
            // One theoretical line is the plot's focus; a second sweep's is drawn only where it differs (its kernel
            // may use other registers).
            match &theoretical {
                None => theoretical = Some(model),
                Some(first) if *first != model => {
                    series.push(Series::reference(format!("theoretical: {label}"), model));
                }
                Some(_) => {}
            }
        }
        let Some(model) = theoretical else { continue };
        if along.small_grids {
            // The first sweep with rows: its groups spread over the CUs.
            let model = along.sweeps.iter().find_map(|(sweep, _)| {
                let rows: Vec<&&Row> = ok.iter().filter(|r| r.get("sweep").is_some_and(|s| s == sweep)).collect();
                let cap = capacity(&rows)?;
                Some(points(sweep, &|r| at_grid(r, cap))).filter(|p| !p.is_empty())
            });
            if let Some(model) = model {
                series.push(Series::reference(
                    "theoretical at this grid: the groups spread evenly over the CUs/SMs",
                    model,
                ));
            }
        }
        series.push(Series::focus("theoretical occupancy (the suite's calculator)", model));
        out.push((
            along.file.to_string(),
            LinePlot {
                title: format!("Occupancy achieved vs theoretical: {} on {device}", along.what),
                subtitle: Some(format!(
                    "achieved: active waves per CU/SM over the kernel's active cycles, % of the wave slots, in one \
                     profiled launch ({profiler}; counters.csv); theoretical: the calculator's resident waves"
                )),
                x_label: along.x_label.into(),
                y_label: "% of the CU's/SM's wave slots".into(),
                x_axis: along.x_axis,
                y_axis: Axis::Linear,
                series,
                y_max: None,
                note: Some(
                    "Achieved stays under theoretical where the grid's last round of groups leaves CUs idle (tail), \
                     where a short kernel spends much of its time filling and draining the device, and where groups \
                     end unevenly (docs/occupancy.md, achieved and theoretical occupancy)."
                        .into(),
                ),
                ..LinePlot::default()
            },
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(sweep: &str, key: &str, group: u32, occupancy: f64) -> Row {
        [
            ("experiment", "occupancy".to_string()),
            ("sweep", sweep.to_string()),
            ("key", key.to_string()),
            ("group_size", group.to_string()),
            ("occupancy_pct", occupancy.to_string()),
            ("status", "ok".to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    #[test]
    fn a_grid_smaller_than_the_device_holds_fewer_groups_per_cu() {
        // 132 CUs x 4 groups of 512 items resident at 100%: the residency probe's rows.
        let row = |groups: f64, rounds: f64| -> Row {
            [("groups", groups), ("rounds", rounds), ("groups_per_cu", 4.0), ("occupancy_pct", 100.0)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        // Rounds as the CSV writes them (three decimals): the capacity comes from the largest grid.
        let rows = [row(1.0, 0.002), row(2112.0, 4.0)];
        let refs: Vec<&Row> = rows.iter().collect();
        let cap = capacity(&refs.iter().collect::<Vec<_>>()).unwrap();
        assert_eq!(cap, 528.0);
        let at = |groups: f64| at_grid(&row(groups, 0.0), cap);
        assert_eq!(at(1.0), Some(25.0));
        assert_eq!(at(132.0), Some(25.0));
        assert_eq!(at(133.0), Some(50.0));
        assert_eq!(at(528.0), Some(100.0));
        assert_eq!(at(2112.0), Some(100.0));
    }

    /// Format-sample counters (made-up values) beside fixture rows: the plot holds the measured line and the
    /// theoretical focus, and draws.
    #[test]
    fn achieved_is_drawn_beside_theoretical_from_the_counters_beside_the_csv() {
        let dir = tempfile::tempdir().unwrap();
        let rows = [row("group_size", "g=64", 64, 100.0), row("group_size", "g=768", 768, 75.0)];
        let ok: Vec<&Row> = rows.iter().collect();
        assert!(plots(&ok, dir.path(), "GPU").is_empty(), "no counters.csv: no plot");
        let mut a = crate::counters::table::tests::row("occupancy", "g=64");
        a.occupancy_achieved_pct = Some(91.0);
        let mut b = crate::counters::table::tests::row("occupancy", "g=768");
        b.occupancy_achieved_pct = Some(70.5);
        crate::counters::table::write(dir.path(), &[a, b]).unwrap();
        let plots = plots(&ok, dir.path(), "GPU");
        assert_eq!(plots.len(), 1);
        let (file, plot) = &plots[0];
        assert_eq!(file, "occupancy-group-size-achieved.png");
        assert_eq!(plot.series[0].points, vec![(64.0, 91.0), (768.0, 70.5)]);
        assert_eq!(plot.series.last().unwrap().points, vec![(64.0, 100.0), (768.0, 75.0)]);
        assert!(plot.subtitle.as_deref().unwrap().contains("Nsight Compute"), "{:?}", plot.subtitle);
        crate::report::plot::render_png(plot, &dir.path().join(file), 1600, 1000).unwrap();
    }
}
