//! What a reader sees of an occupancy CSV: its headline lines and its plots (the timelines found beside it
//! included).

use std::collections::BTreeMap;
use std::path::Path;

use super::timeline::{read_timeline, resident_over_time, timeline_file};
use super::{BARRIER_CONFIGS, SPIN_TIMELINE};
use crate::experiments::{num, ok_rows, rate_spread};
use crate::report::plot::{Axis, LinePlot, Series};

/// The lines of [`crate::experiments::Results::headlines`]: the copy bandwidth, then for each memory-bound sweep its range of
/// bandwidth over the copy's at full (100%) theoretical occupancy, and the residency probe's groups per round.
pub(super) fn headlines(rows: &[BTreeMap<String, String>]) -> Vec<String> {
    let ok: Vec<&BTreeMap<String, String>> = ok_rows(rows).collect();
    let of = |sweep: &'static str| ok.iter().copied().filter(move |r| r.get("sweep").is_some_and(|s| s == sweep));
    let Some(copy) = of("copy").find_map(|r| num(r, "gbps")) else { return Vec::new() };
    let mut out = vec![format!("device copy (driver memcpy): {copy:.0} GB/s, the reference of the ratios below")];
    for (sweep, what) in [
        ("copy_kernel", "copy kernel"),
        ("group_size", "vector add, one element per item"),
        ("group_size_x4", "vector add, four elements per item"),
        ("lds", "LDS vector add, one element per item"),
        ("lds_x4", "LDS vector add, four elements per item"),
    ] {
        let ratios: Vec<f64> = of(sweep)
            .filter(|r| num(r, "occupancy_pct") == Some(100.0))
            .filter_map(|r| Some(num(r, "gbps")? / copy))
            .collect();
        let (lo, hi) = ratios.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), r| (lo.min(*r), hi.max(*r)));
        if !ratios.is_empty() {
            out.push(format!("{what} at 100% occupancy: {lo:.2} to {hi:.2} of the copy ({} points)", ratios.len()));
        }
    }
    let probe: Vec<(f64, f64)> =
        of("group_count_spin").filter_map(|r| Some((num(r, "groups")?, num(r, "rounds")?))).collect();
    if let Some((groups, rounds)) = probe.iter().copied().max_by(|a, b| a.0.total_cmp(&b.0)) {
        out.push(format!("residency probe: {:.0} groups resident at once", (groups / rounds).round()));
    }
    out
}

/// Plots of an occupancy CSV, plus the timelines found beside it.
pub fn plots(rows: &[BTreeMap<String, String>], dir: &Path) -> Vec<(String, LinePlot)> {
    let ok: Vec<&BTreeMap<String, String>> = ok_rows(rows).collect();
    let Some(first) = ok.first() else { return Vec::new() };
    let get = |c: &str| first.get(c).cloned().unwrap_or_default();
    let wave = get("wave_size");
    let device = format!("{} ({}, {})", get("device"), get("arch"), if wave == "64" { "wave64" } else { "warp32" });
    let copy = ok.iter().find(|r| r.get("sweep").map(String::as_str) == Some("copy")).and_then(|r| num(r, "gbps"));
    let of = |sweep: &str| -> Vec<&&BTreeMap<String, String>> {
        ok.iter().filter(|r| r.get("sweep").map(String::as_str) == Some(sweep)).collect()
    };
    let series =
        |rows: &[&&BTreeMap<String, String>], x: &str, y: &dyn Fn(&BTreeMap<String, String>) -> Option<f64>| {
            let mut pts: Vec<(f64, f64)> = rows.iter().filter_map(|r| Some((num(r, x)?, y(r)?))).collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            pts
        };
    // The spread of `y` (a rate, or a share of a fixed reference) over each row's repetitions, for error bars.
    let spread_of =
        |rows: &[&&BTreeMap<String, String>], x: &str, y: &dyn Fn(&BTreeMap<String, String>) -> Option<f64>| {
            rows.iter()
                .filter_map(|r| {
                    let (lo, hi) = rate_spread(r, y(r)?)?;
                    Some((num(r, x)?, lo, hi))
                })
                .collect::<Vec<(f64, f64, f64)>>()
        };
    // The spread of a row's time itself: its fastest and slowest repetition.
    let time_spread =
        |rows: &[&&BTreeMap<String, String>], x: &str| {
            rows.iter()
                .filter_map(|r| Some((num(r, x)?, num(r, "time_ms_min")?, num(r, "time_ms_max")?)))
                .collect::<Vec<(f64, f64, f64)>>()
        };
    let mut out = Vec::new();
    // `x_scale` turns the CSV's x column into the axis' unit (e.g. bytes to KiB).
    let percent_plot = |file: &str,
                        what: &str,
                        caveat: &str,
                        rows: Vec<&&BTreeMap<String, String>>,
                        x4_rows: Vec<&&BTreeMap<String, String>>,
                        (x, x_scale): (&str, f64),
                        x_label: &str,
                        x_axis| {
        // A partial wave holds a whole wave slot: the share of lane slots doing work shows the quantisation.
        let lanes = |r: &BTreeMap<String, String>| {
            let waves_per_group = num(r, "waves_per_cu")? / num(r, "groups_per_cu")?;
            Some(num(r, "occupancy_pct")? * num(r, "group_size")? / (waves_per_group * num(r, "wave_size")?))
        };
        let scaled = |pts: Vec<(f64, f64)>| pts.into_iter().map(|(x, y)| (x / x_scale, y)).collect::<Vec<_>>();
        let bandwidth_file = file.replace(".png", "-bandwidth.png");
        let mut plots = Vec::new();
        // One unit per axis: the occupancy (shares of the CU's slots) and the bandwidth (shares of the copy) are
        // two plots over the same x axis.
        // The theoretical occupancy is what this plot is about: the focus, drawn over the lane line.
        let occupancy = vec![
            Series::focus(
                "theoretical occupancy (% of wave slots)",
                scaled(series(&rows, x, &|r| num(r, "occupancy_pct"))),
            ),
            Series::line(
                "occupied lanes (% of lane slots: partial waves waste lanes)",
                scaled(series(&rows, x, &lanes)),
            ),
        ];
        if occupancy.iter().any(|s| !s.points.is_empty()) {
            plots.push((
                file.to_string(),
                LinePlot {
                    title: format!("Occupancy: {what} on {device}"),
                    subtitle: Some(format!(
                        "theoretical, from the suite's calculator; the measured bandwidth of these points is in \
                         {bandwidth_file}"
                    )),
                    x_label: x_label.into(),
                    y_label: "% of the CU's/SM's resident slots".into(),
                    x_axis,
                    y_axis: Axis::Linear,
                    series: occupancy.into_iter().filter(|s| !s.points.is_empty()).collect(),
                    note: None,
                    y_max: None,
                    ..LinePlot::default()
                },
            ));
        }
        let Some(copy) = copy else { return plots };
        let percent_of_copy = |r: &BTreeMap<String, String>| Some(100.0 * num(r, "gbps")? / copy);
        let scaled_spread =
            |b: Vec<(f64, f64, f64)>| b.into_iter().map(|(x, lo, hi)| (x / x_scale, lo, hi)).collect::<Vec<_>>();
        let mut bandwidth = vec![
            Series::line(
                if x4_rows.is_empty() { "one float per item".to_string() } else { "one element per item".to_string() },
                scaled(series(&rows, x, &percent_of_copy)),
            )
            .with_spread(scaled_spread(spread_of(&rows, x, &percent_of_copy))),
            // The same kernel with four elements per item (16-byte accesses, a quarter of the groups): what the
            // memory system gives once the rate of instructions and new groups no longer limits.
            Series::line("four elements per item (one float4)", scaled(series(&x4_rows, x, &percent_of_copy)))
                .with_spread(scaled_spread(spread_of(&x4_rows, x, &percent_of_copy))),
        ];
        bandwidth.retain(|s| !s.points.is_empty());
        let xs: Vec<f64> = bandwidth.iter().flat_map(|s| s.points.iter().map(|p| p.0)).collect();
        let (lo, hi) = xs.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| (lo.min(*x), hi.max(*x)));
        if !bandwidth.is_empty() {
            bandwidth.push(Series::reference(
                format!("100% = the driver's device copy, {copy:.0} GB/s"),
                vec![(lo, 100.0), (hi, 100.0)],
            ));
            plots.push((
                bandwidth_file.clone(),
                LinePlot {
                    title: format!("Occupancy: {what}, bandwidth on {device}"),
                    subtitle: Some(format!(
                        "measured{caveat} (median; error bars: the slowest to the fastest repetition); the theoretical \
                         occupancy of these points is in {file}"
                    )),
                    x_label: x_label.into(),
                    y_label: format!("bandwidth, % of the device copy ({copy:.0} GB/s)"),
                    x_axis,
                    y_axis: Axis::Linear,
                    series: bandwidth,
                    note: None,
                    y_max: None,
                    ..LinePlot::default()
                },
            ));
        }
        plots
    };
    out.extend(percent_plot(
        "occupancy-group-size.png",
        "vector add vs group size",
        "",
        of("group_size"),
        of("group_size_x4"),
        ("group_size", 1.0),
        "items per group (log2 axis)",
        Axis::Log2,
    ));
    out.extend(percent_plot(
        "occupancy-lds.png",
        "vector add vs LDS per group",
        "",
        of("lds"),
        of("lds_x4"),
        ("dynamic_lds_bytes", 1024.0),
        "dynamic LDS per group (KiB, log2 axis)",
        Axis::Log2,
    ));
    out.extend(percent_plot(
        "occupancy-registers.png",
        "register pressure",
        " (8 bytes per item); R live values also mean R cached loads and R x rounds FMAs per item, so work grows too",
        of("registers"),
        Vec::new(),
        ("registers_per_item", 1.0),
        "registers per item (as allocated by the compiler)",
        Axis::Linear,
    ));
    for (sweep, file, what) in [
        ("group_count", "occupancy-group-count.png", "vector add, fixed work per group (the seed's VectorAdd2/3)"),
        ("group_count_spin", "occupancy-group-count-spin.png", "residency probe, every wave waits a fixed time"),
    ] {
        let rows = of(sweep);
        let times = series(&rows, "groups", &|r| num(r, "time_ms_median"));
        if times.is_empty() {
            continue;
        }
        let mut s = vec![Series::line("time per launch (ms)", times.clone()).with_spread(time_spread(&rows, "groups"))];
        // Resident capacity = groups / rounds, the same on every row; the row with the most groups has the most
        // significant digits in its rounds column.
        let capacity = rows
            .iter()
            .filter_map(|r| Some((num(r, "groups")?, num(r, "rounds")?)))
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(groups, rounds)| (groups / rounds).round());
        if let Some(cap) = capacity {
            let top = times.iter().map(|p| p.1).fold(0.0, f64::max);
            for (k, label) in [(1.0, "1 round: every group resident"), (2.0, "2 rounds")] {
                s.push(Series::reference(
                    format!("{label} ({:.0} groups)", k * cap),
                    vec![(k * cap, 0.0), (k * cap, top)],
                ));
            }
        }
        out.push((
            file.into(),
            LinePlot {
                title: format!("Occupancy: time vs group count on {device}"),
                subtitle: Some(format!(
                    "{what}; groups of {} items; median time, error bars: the fastest to the slowest repetition",
                    get_group(&rows)
                )),
                x_label: "groups in the grid".into(),
                y_label: "median time per launch (ms)".into(),
                x_axis: Axis::Log2,
                y_axis: Axis::Linear,
                series: s,
                note: None,
                y_max: None,
                ..LinePlot::default()
            },
        ));
    }
    // (name, what it shows, [(timeline file, legend label)]) per plot.
    type TimelinePlot<'a> = (String, String, Vec<(String, &'a str)>);
    let timelines: Vec<TimelinePlot> = BARRIER_CONFIGS
        .iter()
        .map(|c| {
            (
                c.name.to_string(),
                format!("{} groups per CU of {} items", f64::from(c.groups_per_cu_quarters) / 4.0, c.group),
                vec![
                    (timeline_file(c.name, "none"), "no barrier (VectorAdd3)"),
                    (timeline_file(c.name, "barrier"), "barriers (VectorAdd4)"),
                ],
            )
        })
        .chain(std::iter::once((
            SPIN_TIMELINE.to_string(),
            "residency probe: 2.5 times the groups the device holds at once".to_string(),
            vec![(timeline_file(SPIN_TIMELINE, "spin"), "every wave waits a fixed time")],
        )))
        .collect();
    for (name, what, files) in timelines {
        let mut series = Vec::new();
        let mut slots_seen = 0;
        for (file, label) in files {
            let Some((records, hz, slots)) = read_timeline(&dir.join(file)) else { continue };
            slots_seen = slots;
            let cus = records.iter().map(|r| r.cu).collect::<std::collections::BTreeSet<_>>().len();
            let mut pts = Vec::new();
            let mut prev = 0.0;
            for s in resident_over_time(&records, None) {
                let t = s.t as f64 / hz * 1e6;
                pts.push((t, prev));
                prev = 100.0 * f64::from(s.waves) / slots.max(1) as f64;
                pts.push((t, prev));
            }
            series.push(Series::line(format!("{label}, {cus} CUs used"), pts));
        }
        if !series.is_empty() {
            out.push((
                format!("occupancy-timeline-{name}.png"),
                LinePlot {
                    title: format!("Occupancy over time: {name} on {device}"),
                    subtitle: Some(format!(
                        "{what}; every wave records its CU and the device clock (first, verified launch); \
                         100% = {slots_seen} wave slots"
                    )),
                    x_label: "time since the first wave started (us)".into(),
                    y_label: "resident waves (% of the device's wave slots)".into(),
                    x_axis: Axis::Linear,
                    y_axis: Axis::Linear,
                    series,
                    note: None,
                    y_max: None,
                    ..LinePlot::default()
                },
            ));
        }
    }
    // With counters beside the CSV (`suite run --counters`): achieved beside theoretical occupancy.
    out.extend(super::achieved::plots(&ok, dir, &device));
    out
}

fn get_group(rows: &[&&BTreeMap<String, String>]) -> String {
    rows.first().and_then(|r| r.get("group_size").cloned()).unwrap_or_default()
}
