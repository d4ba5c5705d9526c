//! PT's plots, made from the rows of `pt.csv` alone: the speedups per use case (the paper's figure 5 for CPU-GPU
//! synchronisation), the queue's granularity, the round trip's parts, and global synchronisation's cost per step.

use super::pairing::{longest, pairs, step_costs, sync_label, CsvRow, Pair, StepCost, SYNC_VARIANTS};
use super::spec::Queue;
use crate::experiments::{num, ok_rows, rate_spread};
use crate::report::plot::{Axis, LinePlot, Series, SeriesKind};

/// A line of the speedups of `pairs` against `x`, with each speedup's spread over the repetitions as error bars.
fn speedup_line(label: String, pairs: Vec<&Pair>, x: impl Fn(&Pair) -> f64) -> Series {
    let mut pts: Vec<(f64, f64)> = pairs.iter().map(|p| (x(p), p.speedup())).collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let spread = pairs
        .iter()
        .map(|p| {
            let (lo, hi) = p.speedup_spread();
            (x(p), lo, hi)
        })
        .collect();
    Series::line(label, pts).with_spread(spread)
}

/// The smallest and largest x of `xs`.
fn x_range(xs: &[(f64, f64)]) -> (f64, f64) {
    let lo = xs.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let hi = xs.iter().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
    (lo, hi)
}

/// The experiment's plots: PT speedup vs FMAs per item (one line per item count) per flavour, as the paper's
/// figure 5; the forest, active-state and global-synchronisation speedups; the queue's granularity; the round
/// trip's parts; the cost per step of global synchronisation by groups per CU.
pub fn plots(rows: &[CsvRow]) -> Vec<(String, LinePlot)> {
    let ok: Vec<&CsvRow> = ok_rows(rows).collect();
    let Some(first) = ok.first() else { return Vec::new() };
    let get = |c: &str| first.get(c).cloned().unwrap_or_default();
    let wave = get("wave_size");
    let device = format!("{} ({}, {})", get("device"), get("arch"), if wave == "64" { "wave64" } else { "warp32" });
    let pairs = pairs(rows);
    let mut out = Vec::new();
    let unity = |pts: &[(f64, f64)]| {
        let (lo, hi) = x_range(pts);
        Series::reference("1.0 = PT as fast as non-PT", vec![(lo, 1.0), (hi, 1.0)])
    };
    let plot = |title: String, x_label: &str, x_axis: Axis, series: Vec<Series>, note: Option<String>| {
        LinePlot {
        title,
        subtitle: Some("speedup = non-PT median time / PT median time, both timed by the host clock from the first launch to the final synchronisation; above 1: PT wins; error bars: the least to the most favourable pairing of their repetitions".into()),
        x_label: x_label.into(),
        y_label: "speedup non-PT / PT (x)".into(),
        x_axis,
        y_axis: Axis::Log2,
        series,
        y_max: None,
        note,
        ..LinePlot::default()
    }
    };
    // Figure 5: one plot per flavour, speedup vs FMAs, one line per item count.
    for flavour in ["ci", "cmi"] {
        let mut items: Vec<f64> = pairs
            .iter()
            .filter(|p| p.use_case == "sync" && p.flavour == flavour && p.clock == "host")
            .map(|p| p.items)
            .collect();
        items.sort_by(f64::total_cmp);
        items.dedup();
        let mut series: Vec<Series> = items
            .iter()
            .map(|&n| {
                let of = pairs
                    .iter()
                    .filter(|p| p.use_case == "sync" && p.flavour == flavour && p.clock == "host" && p.items == n);
                speedup_line(format!("{n} items"), of.collect(), |p| p.fmas)
            })
            .collect();
        if let Some(all) = series.first().map(|s| s.points.clone()) {
            series.push(unity(&all));
            let what = if flavour == "ci" { "compute only (CI)" } else { "compute + strided memory (CMI)" };
            out.push((
                format!("pt-sync-{flavour}.png"),
                plot(
                    format!("PT vs non-PT, CPU-GPU synchronisation, {what}, on {device}"),
                    "FMAs per item",
                    Axis::Log2,
                    series,
                    Some("non-PT: producer, 4-byte readback, consumer sized to it; PT: producer, then a persistent consumer at maximal launch popping one group of 256 items per atomic".into()),
                ),
            ));
        }
    }
    // Forest: speedup vs levels, one line per forest shape and initial inputs.
    let mut forest: Vec<Series> = Vec::new();
    for shape in ["forest_full", "forest_tilted"] {
        let mut inputs: Vec<f64> =
            pairs.iter().filter(|p| p.use_case == shape && p.clock == "host").map(|p| p.items).collect();
        inputs.sort_by(f64::total_cmp);
        inputs.dedup();
        for n in inputs {
            let of = pairs.iter().filter(|p| p.use_case == shape && p.clock == "host" && p.items == n);
            forest
                .push(speedup_line(format!("{} forest, {n} initial inputs", &shape[7..]), of.collect(), |p| p.levels));
        }
    }
    if let Some(all) = forest.first().map(|s| s.points.clone()) {
        forest.push(unity(&all));
        out.push((
            "pt-forest.png".into(),
            plot(
                format!("PT vs non-PT, load balancing (forest traversal), on {device}"),
                "levels",
                Axis::Linear,
                forest,
                Some("non-PT: one launch and one readback per level; PT: one launch, a device work queue with one atomic pop per node".into()),
            ),
        ));
    }
    // Active state and global synchronisation: speedup vs size (or steps).
    let mut active: Vec<Series> = Vec::new();
    for (use_case, label) in [("reduce", "global sum"), ("chain", "producer-consumer chain via LDS")] {
        for clock in ["host", "device"] {
            let of = pairs.iter().filter(|p| p.use_case == use_case && p.clock == clock);
            active.push(speedup_line(format!("{label}, {clock} clock"), of.collect(), |p| p.items));
        }
    }
    active.retain(|s| !s.points.is_empty());
    if let Some(all) = active.first().map(|s| s.points.clone()) {
        active.push(unity(&all));
        let mut p = plot(
            format!("PT vs non-PT, maintaining active state, on {device}"),
            "elements",
            Axis::Log2,
            active,
            Some("device clock: batches of back-to-back sequences between device events".into()),
        );
        p.subtitle = Some(
            "speedup = non-PT median time / PT median time; above 1: PT wins; error bars: the least to the most \
             favourable pairing of their repetitions"
                .into(),
        );
        out.push(("pt-active-state.png".into(), p));
    }
    let mut sync: Vec<Series> = Vec::new();
    let mut sizes: Vec<f64> = pairs.iter().filter(|p| p.use_case == "jacobi").map(|p| p.items).collect();
    sizes.sort_by(f64::total_cmp);
    sizes.dedup();
    // Host clock for both barriers; the device clock (non-PT then replays its launches as a graph) for the
    // cooperative one, to show what is left once the host's launch cost is gone.
    for (variant, clock) in [("pt_coop", "host"), ("pt_soft", "host"), ("pt_coop", "device")] {
        for &n in &sizes {
            let of = pairs
                .iter()
                .filter(|p| p.use_case == "jacobi" && p.variant == variant && p.items == n && p.clock == clock);
            let how = if variant == "pt_coop" { "cooperative launch + grid sync" } else { "software barrier" };
            sync.push(speedup_line(format!("{how}, n = {n}, {clock} clock"), of.collect(), |p| p.steps));
        }
    }
    sync.retain(|s| !s.points.is_empty());
    if let Some(all) = sync.first().map(|s| s.points.clone()) {
        sync.push(unity(&all));
        let mut p = plot(
            format!("PT vs non-PT, global synchronisation (Jacobi steps), on {device}"),
            "steps",
            Axis::Log10,
            sync,
            Some("non-PT: one launch per step; PT: one launch at maximal launch with a grid barrier per step; device clock: batches between device events, non-PT's launches replayed as a graph".into()),
        );
        // Speedups between 0.2 and 2: a linear axis labels them; a log-2 one would label only 1.
        p.y_axis = Axis::Linear;
        p.subtitle = Some(
            "speedup = non-PT median time / PT median time; above 1: PT wins; error bars: the least to the most \
             favourable pairing of their repetitions"
                .into(),
        );
        out.push(("pt-global-sync.png".into(), p));
    }
    out.extend(barrier_plots(&step_costs(rows), &device));
    // Queue granularity: items per second vs items per pop.
    let wave_size = first.get("wave_size").and_then(|w| w.parse::<u32>().ok()).unwrap_or(32);
    let per_pop = |q: &str| -> Option<f64> {
        let q = match q {
            "item" => Queue::Item,
            "wave" => Queue::Wave,
            "group" => Queue::Group,
            "static" => Queue::Static,
            other => Queue::Chunk(other.strip_prefix("chunk")?.parse().ok()?),
        };
        q.items_per_pop(wave_size).map(|v| v as f64)
    };
    let queue_rows: Vec<&&CsvRow> =
        ok.iter().filter(|r| r.get("use_case").map(String::as_str) == Some("queue")).collect();
    let mut combos: Vec<(String, String)> = queue_rows
        .iter()
        .map(|r| (r.get("items").cloned().unwrap_or_default(), r.get("fmas").cloned().unwrap_or_default()))
        .collect();
    // By items, then FMAs, as numbers.
    let as_num = |v: &String| v.parse::<f64>().unwrap_or(f64::NAN);
    combos.sort_by(|a, b| as_num(&a.0).total_cmp(&as_num(&b.0)).then(as_num(&a.1).total_cmp(&as_num(&b.1))));
    combos.dedup();
    // Every series is a line of its own colour and marker (the static schedules too: as dashed references they
    // shared three greys and hid each other), and lines that lie on each other are named in the note.
    let mut qs: Vec<Series> = Vec::new();
    let mut statics: Vec<Series> = Vec::new();
    for (items, fmas) in &combos {
        let of: Vec<&&&CsvRow> =
            queue_rows.iter().filter(|r| r.get("items") == Some(items) && r.get("fmas") == Some(fmas)).collect();
        let mut pts: Vec<(f64, f64)> =
            of.iter().filter_map(|r| Some((per_pop(r.get("queue")?)?, num(r, "gitems_per_s")?))).collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let spread: Vec<(f64, f64, f64)> = of
            .iter()
            .filter_map(|r| {
                let (lo, hi) = rate_spread(r, num(r, "gitems_per_s")?)?;
                Some((per_pop(r.get("queue")?)?, lo, hi))
            })
            .collect();
        let what = format!("{} items, {fmas} FMAs per item", size_text(items));
        if let Some(st) = of.iter().find(|r| r.get("queue").map(String::as_str) == Some("static")) {
            if let Some(v) = num(st, "gitems_per_s") {
                // One measurement, drawn flat across the pop sizes of its measured line.
                statics.push(Series::line(
                    format!("static schedule (no atomics), {what}"),
                    pts.iter().map(|p| (p.0, v)).collect(),
                ));
            }
        }
        qs.push(Series::line(format!("atomic pops, {what}"), pts).with_spread(spread));
    }
    qs.extend(statics);
    qs.retain(|s| !s.points.is_empty());
    if !qs.is_empty() {
        out.push((
            "pt-queue.png".into(),
            LinePlot {
                title: format!("PT queue granularity on {device}: one atomic pop per item, wave ({wave_size}), group (256), chunk of K groups"),
                subtitle: Some("CI consumer at maximal launch, device-event time of producer + consumer; pops per second = rate / items per pop; flat lines: the static schedule (no atomics, one rate per line)".into()),
                x_label: "items per atomic pop".into(),
                y_label: "G items/s".into(),
                x_axis: Axis::Log2,
                y_axis: Axis::Linear,
                note: overlaps(&qs),
                series: qs,
                y_max: None,
                ..LinePlot::default()
            },
        ));
    }
    // The round trip: its parts against the whole.
    // A part's median, fastest and slowest time, µs.
    let rt_times = |part: &str| {
        let r = ok.iter().find(|r| {
            r.get("use_case").map(String::as_str) == Some("roundtrip")
                && r.get("queue").map(String::as_str) == Some(part)
        })?;
        let median = num(r, "time_ms_median")?;
        let of = |c: &str| num(r, c).filter(|v| *v > 0.0).unwrap_or(median) * 1e3;
        Some((median * 1e3, of("time_ms_min"), of("time_ms_max")))
    };
    let rt = |part: &str| rt_times(part).map(|t| t.0);
    if let (Some(launch), Some(readback), Some(full)) = (rt("launch"), rt("readback"), rt("full")) {
        let stacked = vec![(1.0, launch), (2.0, launch + readback), (3.0, 2.0 * launch + readback)];
        // The sums of the parts' fastest and of their slowest repetitions.
        let stacked_spread: Vec<(f64, f64, f64)> = match (rt_times("launch"), rt_times("readback")) {
            (Some(l), Some(b)) => {
                vec![(1.0, l.1, l.2), (2.0, l.1 + b.1, l.2 + b.2), (3.0, 2.0 * l.1 + b.1, 2.0 * l.2 + b.2)]
            }
            _ => Vec::new(),
        };
        out.push((
            "pt-roundtrip.png".into(),
            LinePlot {
                title: format!("Bare round trip on {device}: empty kernel -> 4-byte readback -> empty kernel"),
                subtitle: Some(format!(
                    "parts stacked: launch+sync {launch:.1} us, + readback {readback:.1} us, + relaunch+sync {launch:.1} us; measured whole: {full:.1} us (paper, GTX 295: ~400 us)"
                )),
                x_label: "parts stacked (1: launch, 2: + readback, 3: + relaunch)".into(),
                y_label: "us".into(),
                x_axis: Axis::Linear,
                y_axis: Axis::Linear,
                series: vec![
                    Series::line("sum of the parts measured alone (error bars: their fastest and slowest)", stacked)
                        .with_spread(stacked_spread),
                    Series::reference(format!("whole round trip measured: {full:.1} us"), vec![(1.0, full), (3.0, full)]),
                ],
                y_max: None,
                note: None,
                ..LinePlot::default()
            },
        ));
    }
    out
}

/// µs per step against groups per CU: the barrier alone (software, cooperative, relaunch) and, one plot per Jacobi
/// size, the Jacobi steps with each barrier, with Jacobi's own relaunch (one group per tile) as a reference.
fn barrier_plots(costs: &[StepCost], device: &str) -> Vec<(String, LinePlot)> {
    let points = |use_case: &str, n: u64, steps: u32, variant: &str| -> Vec<(f64, f64)> {
        let mut pts: Vec<(f64, f64)> = costs
            .iter()
            .filter(|c| c.use_case == use_case && c.n == n && c.steps == steps && c.variant == variant)
            .filter_map(|c| Some((f64::from(c.per_cu?), c.us)))
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        pts
    };
    let spread = |use_case: &str, n: u64, steps: u32, variant: &str| -> Vec<(f64, f64, f64)> {
        costs
            .iter()
            .filter(|c| c.use_case == use_case && c.n == n && c.steps == steps && c.variant == variant)
            .filter_map(|c| Some((f64::from(c.per_cu?), c.us_range.0, c.us_range.1)))
            .collect()
    };
    let alone_steps = longest(costs, "barrier", 0);
    let alone: Vec<Series> = alone_steps
        .map(|steps| {
            SYNC_VARIANTS
                .iter()
                .map(|&v| {
                    Series::line(format!("{}, barrier alone", sync_label(v)), points("barrier", 0, steps, v))
                        .with_spread(spread("barrier", 0, steps, v))
                })
                .filter(|s| !s.points.is_empty())
                .collect()
        })
        .unwrap_or_default();
    let mut sizes: Vec<u64> = costs.iter().filter(|c| c.use_case == "jacobi").map(|c| c.n).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let plot = |name: String, series: Vec<Series>, what: String| {
        (
            name,
            LinePlot {
                title: format!("Global synchronisation on {device}: cost per step by groups per CU"),
                subtitle: Some(format!(
                    "device clock; µs per step = median sequence time / steps (the sequence's one launch and \
                     counter resets spread over them; error bars: the fastest to the slowest repetition); {what}"
                )),
                x_label: "groups per CU (the last point of each line: the maximal launch)".into(),
                y_label: "µs per step".into(),
                x_axis: Axis::Log2,
                y_axis: Axis::Linear,
                series,
                y_max: None,
                note: Some(
                    "software barrier: release atomic adds on the run's arrival counters (barrier_counters), polled; grid \
                     barrier: the platform's cooperative grid sync; relaunch: one launch per step, replayed as a graph"
                        .into(),
                ),
                ..LinePlot::default()
            },
        )
    };
    let mut out = Vec::new();
    let alone_text = alone_steps.map(|s| format!("barrier alone: {s} barriers, no work")).unwrap_or_default();
    for &n in &sizes {
        let Some(steps) = longest(costs, "jacobi", n) else { continue };
        let mut series = alone.clone();
        for v in ["pt_soft", "pt_coop"] {
            let pts = points("jacobi", n, steps, v);
            if !pts.is_empty() {
                let line = Series::line(format!("{}, Jacobi step", sync_label(v)), pts);
                series.push(line.with_spread(spread("jacobi", n, steps, v)));
            }
        }
        let relaunch =
            costs.iter().find(|c| c.use_case == "jacobi" && c.n == n && c.steps == steps && c.variant == "non_pt");
        let xs: Vec<f64> = series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).collect();
        let (lo, hi) = (xs.iter().copied().fold(f64::INFINITY, f64::min), xs.iter().copied().fold(0.0, f64::max));
        if let (Some(r), true) = (relaunch, lo.is_finite()) {
            series.push(Series::reference(
                format!("Jacobi relaunched per step (one group per tile, graph): {:.2} µs", r.us),
                vec![(lo, r.us), (hi, r.us)],
            ));
        }
        if series.iter().any(|s| s.kind == SeriesKind::Line) {
            let what = format!("Jacobi n = {n}, {steps} steps: the step's work plus its barrier; {alone_text}");
            out.push(plot(format!("pt-barrier-n{n}.png"), series, what));
        }
    }
    if sizes.is_empty() && !alone.is_empty() {
        out.push(plot("pt-barrier.png".into(), alone, alone_text));
    }
    out
}

/// An item count as people read it: 2^k for powers of two from 2^10 on, else the number.
pub(super) fn size_text(text: &str) -> String {
    match text.parse::<u64>() {
        Ok(n) if n >= 1 << 10 && n.is_power_of_two() => format!("2^{}", n.ilog2()),
        _ => text.to_string(),
    }
}

/// Lines within 2% of an earlier line at every x (so drawn over it), named so a hidden line is not read as a
/// missing one; `None` when no line hides another.
fn overlaps(series: &[Series]) -> Option<String> {
    let close = |a: &Series, b: &Series| {
        a.points.len() == b.points.len()
            && a.points
                .iter()
                .zip(&b.points)
                .all(|(p, q)| p.0 == q.0 && (p.1 - q.1).abs() <= 0.02 * p.1.abs().max(q.1.abs()))
    };
    let hidden: Vec<String> = series
        .iter()
        .enumerate()
        .filter_map(|(i, a)| {
            let b = series[..i].iter().find(|b| close(a, b))?;
            Some(format!("\"{}\" lies on \"{}\" (within 2%)", a.label, b.label))
        })
        .collect();
    (!hidden.is_empty()).then(|| hidden.join("; "))
}
