//! The comparison report: the runs' table, each experiment's joined section, the roofline of every run.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::*;
use crate::report::plot::{render_png, LinePlot, DEFAULT_SIZE};

/// The experiments `suite compare` knows, in the order it reports them: how each is compared (see [`Comparison`])
/// and how its rows go on the roofline. The app makes it from the experiment registry; an experiment not in it is
/// compared by its metric column, after the known ones, and drawn on the roofline by default.
pub struct Known {
    /// Each experiment's comparison, in report order.
    pub comparisons: Vec<(&'static str, Box<dyn Comparison>)>,
    /// Each experiment's place on the roofline.
    pub roofline: Vec<(&'static str, crate::report::roofline::Role)>,
}

/// How `experiment` is compared: its own [`Comparison`] where `known` has it, its metric column otherwise.
pub fn comparison_for<'k>(known: &'k Known, experiment: &str) -> &'k dyn Comparison {
    static BY_METRIC: MetricComparison = MetricComparison { column: None };
    known.comparisons.iter().find(|(name, _)| *name == experiment).map_or(&BY_METRIC, |(_, c)| c.as_ref())
}

/// What [`compare`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    /// The Markdown report.
    pub report: PathBuf,
    /// The PNGs.
    pub plots: Vec<PathBuf>,
}

/// Compares the results folders `dirs` (run 1 first: the baseline of every ratio) and writes `report.md` and the
/// plots into `out` (created if needed). Every folder is read before anything is written.
pub fn compare(dirs: &[PathBuf], out: &Path, known: &Known) -> Result<Written, Error> {
    let runs = dirs.iter().enumerate().map(|(i, d)| read_run(d, i + 1)).collect::<Result<Vec<_>, _>>()?;
    let (markdown, plots) = report(&runs, known);
    std::fs::create_dir_all(out).map_err(io("cannot create", out))?;
    let mut written = Vec::new();
    for (file, plot) in &plots {
        let path = out.join(file);
        render_png(plot, &path, DEFAULT_SIZE.0, DEFAULT_SIZE.1)?;
        written.push(path);
    }
    let report = out.join("report.md");
    crate::safe_fs::write_whole(&report, markdown.as_bytes()).map_err(io("cannot write", &report))?;
    Ok(Written { report, plots: written })
}

/// The experiments in the runs: `known`'s order, then others by name.
fn experiment_order(runs: &[Run], known: &Known) -> Vec<String> {
    let all: BTreeSet<&String> = runs.iter().flat_map(|r| r.tables.keys()).collect();
    let mut order: Vec<String> = known
        .comparisons
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| all.contains(&n.to_string()))
        .map(str::to_string)
        .collect();
    let others: Vec<String> = all.into_iter().filter(|n| !order.contains(n)).cloned().collect();
    order.extend(others);
    order
}

/// The Markdown report and the plots (file name, plot) for `runs`.
pub fn report(runs: &[Run], known: &Known) -> (String, Vec<(String, LinePlot)>) {
    let mut md = String::new();
    let mut plots = Vec::new();
    let _ = writeln!(md, "# Comparison of {} runs\n", runs.len());
    let _ = writeln!(
        md,
        "Written by `suite compare` (suite {} {}). Run 1 is the baseline: every ratio is run N / run 1. Points are \
         joined by their `key`; only `ok` rows are compared.\n",
        crate::report::run_json::SUITE_VERSION,
        crate::report::run_json::git_describe()
    );
    // A run that holds fewer points than it planned says so before any of its figures.
    for r in runs.iter().filter(|r| !r.complete) {
        let _ = writeln!(md, "**Run {} ({}) is not known to be complete: {}.**\n", r.index, r.name(), r.completeness);
    }
    // Runs at different clocks, or throttled, compare less than their figures suggest: said before any figure.
    let clocked: Vec<crate::report::throttling::ClockedRun> = runs
        .iter()
        .map(|r| crate::report::throttling::ClockedRun {
            index: r.index,
            device: format!("{} ({})", r.device.name, r.device.arch),
            clocks: r.clocks(),
        })
        .collect();
    for line in crate::report::throttling::clock_warnings(&clocked) {
        let _ = writeln!(md, "{line}\n");
    }
    runs_section(&mut md, runs);
    for experiment in experiment_order(runs, known) {
        let holding: Vec<&Run> = runs.iter().filter(|r| r.tables.contains_key(&experiment)).collect();
        let _ = writeln!(md, "## {experiment}\n");
        if holding.len() < 2 {
            let which: Vec<String> = holding.iter().map(|r| format!("run {}", r.index)).collect();
            let _ = writeln!(md, "Only in {}: nothing to compare.\n", which.join(", "));
            continue;
        }
        let comparison = comparison_for(known, &experiment);
        // First what to read the figures against: how many points differ beyond their noise, and what the runs
        // did not both run.
        for line in class_counts(&experiment, &holding, comparison) {
            let _ = writeln!(md, "{line}\n");
        }
        for line in set_differences(&experiment, &holding, comparison) {
            let _ = writeln!(md, "{line}\n");
        }
        let headline = comparison.headline(&experiment, &holding);
        md.push_str(&headline.markdown);
        for (file, plot) in headline.plots {
            let _ = writeln!(md, "![{}]({file})\n", plot.title.replace(['[', ']'], ""));
            plots.push((file, plot));
        }
        joined_section(&mut md, &experiment, &holding, comparison);
    }
    roofline_section(&mut md, &mut plots, runs, &known.roofline);
    (md, plots)
}

/// The runs' rooflines in one plot, and per run its ceilings and how close its kernels come to their roof.
fn roofline_section(
    md: &mut String,
    plots: &mut Vec<(String, LinePlot)>,
    runs: &[Run],
    roles: &crate::report::roofline::Roles,
) {
    let _ = writeln!(md, "## Roofline\n");
    let mut drawn: Vec<(String, crate::report::roofline::Roofline)> = Vec::new();
    let _ = writeln!(
        md,
        "| run | memory ceiling GB/s | compute ceilings TFLOP/s | kernels placed | median share of their roof | \
         within 80% of it |\n|---|---:|---|---:|---:|---:|"
    );
    for r in runs {
        match crate::report::roofline::of_run(&r.dir, roles) {
            Ok(Some(roof)) => {
                let mut shares: Vec<f64> =
                    roof.points.iter().map(|p| p.gflops() / roof.roof.attainable(p.intensity(), p.rate)).collect();
                shares.sort_by(f64::total_cmp);
                let median = shares.get(shares.len() / 2).copied().unwrap_or(f64::NAN);
                let near = shares.iter().filter(|s| **s >= 0.8).count();
                let compute: Vec<String> =
                    roof.roof.compute.iter().map(|(n, g)| format!("{n} {:.1}", g / 1e3)).collect();
                let _ = writeln!(
                    md,
                    "| {} | {:.0} ({}) | {} | {} | {:.2} | {near} |",
                    r.index,
                    roof.roof.memory_gbps,
                    if roof.roof.memory_source.contains("measured") { "measured" } else { "datasheet" },
                    compute.join(", "),
                    roof.points.len(),
                    median
                );
                drawn.push((format!("run {}", r.index), roof));
            }
            Ok(None) => {
                let _ = writeln!(md, "| {} | - | - | 0 | - | - |", r.index);
            }
            Err(e) => {
                let _ = writeln!(md, "| {} | cannot read: {e} | - | - | - | - |", r.index);
            }
        }
    }
    let _ = writeln!(md);
    if drawn.is_empty() {
        let _ = writeln!(md, "No run has rows with flop_count and byte_count: nothing to place.\n");
        return;
    }
    let plot = crate::report::roofline::plot(&drawn.iter().map(|(l, r)| (l.clone(), r)).collect::<Vec<_>>());
    let _ = writeln!(md, "![{}](roofline.png)\n", plot.title.replace(['[', ']'], ""));
    plots.push(("roofline.png".into(), plot));
}

fn runs_section(md: &mut String, runs: &[Run]) {
    let _ = writeln!(md, "## Runs\n");
    let _ = writeln!(
        md,
        "| run | folder | device | platform, arch | wave | CUs/SMs | clock MHz | FP32 peak | commits | dates |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---:|---:|---:|---|---|");
    for r in runs {
        let commits: BTreeSet<&str> = r.invocations.iter().map(|i| i.commit.as_str()).collect();
        let dates: BTreeSet<&str> = r.invocations.iter().map(|i| i.date.get(..10).unwrap_or(&i.date)).collect();
        let opt = |v: Option<u32>| v.map(|v| v.to_string()).unwrap_or_else(|| "?".into());
        let peak =
            fp32_peak(&r.device).map(|p| format!("{} TFLOP/s", p.fp32_vector_tflops)).unwrap_or_else(|| "?".into());
        let _ = writeln!(
            md,
            "| {} | `{}` | {} | {}, {} | {} | {} | {} | {} | {} | {} |",
            r.index,
            r.dir.display(),
            r.device.name,
            r.device.platform,
            r.device.arch,
            r.wave(),
            opt(r.device.cu_count),
            opt(r.device.clock_mhz),
            peak,
            commits.into_iter().collect::<Vec<_>>().join(", "),
            dates.into_iter().collect::<Vec<_>>().join(", "),
        );
    }
    let _ = writeln!(md, "\nEach run's rows against its plan (`suite status`):\n");
    for r in runs {
        let _ = writeln!(md, "- run {}: {}", r.index, r.completeness);
    }
    let _ = writeln!(md, "\nEach run's clocks (`sm_clock_mhz` over its timed rows; source from run.json):\n");
    for r in runs {
        let clocks = r.clocks();
        let sources: BTreeSet<&str> = r.invocations.iter().filter_map(|i| i.telemetry_source.as_deref()).collect();
        let source = if sources.is_empty() {
            "not recorded".to_string()
        } else {
            sources.into_iter().collect::<Vec<_>>().join("; ")
        };
        let median = match clocks.median_sm_clock_mhz {
            Some(mhz) => format!(
                "median SM clock {mhz:.0} MHz over {} of {} timed rows, {} throttled",
                clocks.sampled, clocks.timed, clocks.throttled
            ),
            None => "no clock readings".to_string(),
        };
        let _ = writeln!(md, "- run {}: {median} ({source})", r.index);
    }
    let mut waves: Vec<String> = Vec::new();
    for w in runs.iter().map(Run::wave) {
        if !waves.contains(&w) {
            waves.push(w);
        }
    }
    let _ = writeln!(
        md,
        "\nWave size: {}.\n",
        if waves.len() == 1 {
            format!("every run is {}", waves[0])
        } else {
            let each: Vec<String> = runs.iter().map(|r| format!("run {} {}", r.index, r.wave())).collect();
            format!("{} ({}): group sizes fill waves differently", waves.join(" vs "), each.join(", "))
        }
    );
    for r in runs {
        if let Some(runtime) = &r.device.test_runtime {
            let _ = writeln!(
                md,
                "Run {} ran the AMD code path (HIP, rocBLAS) on an NVIDIA GPU over the {}, not on AMD hardware: {runtime}.\n",
                r.index,
                crate::device::amd::TEST_RUNTIME_LABEL,
            );
        }
    }
    let _ = writeln!(md, "Timing method per run and experiment (the `timing` column; launch gap from run.json):\n");
    let _ = writeln!(md, "| run | experiment | timing | launch gap µs, graph / stream |");
    let _ = writeln!(md, "|---|---|---|---|");
    for r in runs {
        for experiment in r.tables.keys() {
            let gap = r
                .invocations
                .iter()
                .rev()
                .find(|i| &i.experiment == experiment && (i.launch_gap_us.is_some() || i.graph_launch_gap_us.is_some()))
                .map(|i| {
                    let f = |v: Option<f64>| v.map(|v| format!("{v:.2}")).unwrap_or_else(|| "-".into());
                    format!("{} / {}", f(i.graph_launch_gap_us), f(i.launch_gap_us))
                })
                .unwrap_or_else(|| "not recorded".into());
            let _ = writeln!(md, "| {} | {experiment} | {} | {gap} |", r.index, r.timing(experiment));
        }
    }
    // Host-timed figures (round trips, end-to-end times) depend on the CPU a process ran on: say where each ran.
    let _ = writeln!(md, "\nWhere each run ran (per process: host, CPU affinity, GPU variables, Slurm):\n");
    let _ = writeln!(md, "| run | host | placement | experiments |");
    let _ = writeln!(md, "|---|---|---|---|");
    for r in runs {
        let mut places: Vec<((&str, &str), BTreeSet<&str>)> = Vec::new();
        for i in &r.invocations {
            let place = (i.host.as_str(), i.placement.as_str());
            match places.iter_mut().find(|(p, _)| *p == place) {
                Some((_, experiments)) => {
                    experiments.insert(&i.experiment);
                }
                None => places.push((place, BTreeSet::from([i.experiment.as_str()]))),
            }
        }
        for ((host, placement), experiments) in places {
            let experiments: Vec<&str> = experiments.into_iter().collect();
            let _ = writeln!(md, "| {} | {host} | {placement} | {} |", r.index, experiments.join(", "));
        }
    }
    let unknown: Vec<String> =
        runs.iter().filter(|r| fp32_peak(&r.device).is_none()).map(|r| format!("run {}", r.index)).collect();
    let peaks: BTreeSet<String> = runs
        .iter()
        .filter_map(|r| fp32_peak(&r.device))
        .map(|p| format!("{} {} TFLOP/s ({})", p.name, p.fp32_vector_tflops, p.source))
        .collect();
    if !peaks.is_empty() || !unknown.is_empty() {
        let _ = writeln!(md);
    }
    for p in peaks {
        let _ = writeln!(md, "FP32 peak: {p}.");
    }
    if !unknown.is_empty() {
        let _ = writeln!(
            md,
            "FP32 peak unknown for {} (its arch and CU count are not in the suite's table): % of peak is omitted there.",
            unknown.join(", ")
        );
    }
    let notes: Vec<String> =
        runs.iter().flat_map(|r| r.notes.iter().map(move |n| format!("- run {}: {n}", r.index))).collect();
    if !notes.is_empty() {
        let _ = writeln!(md, "\nNotes:\n\n{}", notes.join("\n"));
    }
    let _ = writeln!(md);
}

/// Most keys listed per run in "points in some runs only".
const MAX_LISTED: usize = 40;
/// Rows in the table of largest differences.
const MAX_DIFFERENCES: usize = 10;

/// The values `experiment` is compared by in each run, keys joined: its comparison's, or where a run lacks what
/// they are normalised by, the raw rate with the reason (`Err`: no values at all, and why).
fn compared_values(
    experiment: &str,
    runs: &[&Run],
    comparison: &dyn Comparison,
) -> Result<(Vec<Values>, Option<String>), String> {
    let attempt: Result<Vec<Values>, String> = runs.iter().map(|r| comparison.values(experiment, r)).collect();
    let (values, fallback) = match attempt {
        Ok(v) => (v, None),
        Err(reason) => {
            (runs.iter().map(|r| metric_values(experiment, r, None)).collect::<Result<Vec<_>, _>>()?, Some(reason))
        }
    };
    Ok((joined(values, comparison), fallback))
}

/// `values` with their keys joined across runs ([`Comparison::join_key`]).
fn joined(values: Vec<Values>, comparison: &dyn Comparison) -> Vec<Values> {
    values
        .into_iter()
        .map(|v| Values {
            unit: v.unit,
            by_key: v.by_key.into_iter().map(|(k, x)| (comparison.join_key(&k), x)).collect(),
            times: v.times.iter().map(|k| comparison.join_key(k)).collect(),
        })
        .collect()
}

/// Each run's spreads of `experiment`, keys joined.
fn joined_spreads(experiment: &str, runs: &[&Run], comparison: &dyn Comparison) -> Vec<BTreeMap<String, f64>> {
    runs.iter()
        .map(|r| comparison.spreads(experiment, r).into_iter().map(|(k, s)| (comparison.join_key(&k), s)).collect())
        .collect()
}

/// The class of every point run `i` and run 1 both hold, by key.
fn classes(values: &[Values], spreads: &[BTreeMap<String, f64>], i: usize) -> BTreeMap<String, Class> {
    values[0]
        .by_key
        .iter()
        .filter_map(|(k, a)| {
            let b = values[i].by_key.get(k)?;
            // Faster is a higher rate, or a shorter time.
            let faster = if values[0].times.contains(k) { a / b } else { b / a };
            let class = classify(faster, spreads[0].get(k).copied(), spreads[i].get(k).copied());
            (*a > 0.0 && *b > 0.0).then(|| (k.clone(), class))
        })
        .collect()
}

/// The line at the top of an experiment's section: per run after the first, how many of the points it shares with
/// run 1 are faster, slower, the same or noisy, read against both runs' spreads.
fn class_counts(experiment: &str, runs: &[&Run], comparison: &dyn Comparison) -> Vec<String> {
    let Ok((values, _)) = compared_values(experiment, runs, comparison) else { return Vec::new() };
    let spreads = joined_spreads(experiment, runs, comparison);
    let unit = values.first().map(|v| v.unit.clone()).unwrap_or_default();
    let per_run: Vec<String> = (1..runs.len())
        .map(|i| {
            let classes: Vec<Class> = classes(&values, &spreads, i).into_values().collect();
            format!(
                "run {} against run 1: {} (of {} points both hold)",
                runs[i].index,
                counts_text(&classes),
                classes.len()
            )
        })
        .collect();
    if per_run.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "**Against the noise** ({unit}; each point's spread is the half-range of its repetitions around the median; \
         faster or slower: the difference exceeds both runs' spreads together; same: within them, and they are within \
         {:.0}%; noisy: within them, and they are wider, or not recorded): {}.",
        100.0 * SAME_WITHIN,
        per_run.join("; ")
    )]
}

/// The joined values: summary of ratios, largest differences, points in some runs only.
fn joined_section(md: &mut String, experiment: &str, runs: &[&Run], comparison: &dyn Comparison) {
    let (values, fallback) = match compared_values(experiment, runs, comparison) {
        Ok(v) => v,
        Err(reason) => {
            let _ = writeln!(md, "No values to compare: {reason}.\n");
            return;
        }
    };
    if let Some(reason) = fallback {
        let _ = writeln!(md, "Not normalised ({reason}): the raw rate is compared instead.\n");
    }
    let normalised = values
        .first()
        .is_some_and(|v| Some(v.unit.as_str()) != runs[0].tables.get(experiment).and_then(Table::metric_column));
    let spreads = joined_spreads(experiment, runs, comparison);
    let keys_of = |r: &Run| -> Vec<String> {
        r.rows(experiment).iter().filter_map(key).map(|k| comparison.join_key(&k)).collect()
    };
    // Keys in run 1's CSV order, then the others' new keys in theirs.
    let mut order: Vec<String> = Vec::new();
    let mut seen = BTreeSet::new();
    for r in runs {
        for k in keys_of(r) {
            if seen.insert(k.clone()) {
                order.push(k);
            }
        }
    }
    let mismatched = timing_mismatches(experiment, runs, comparison);
    let flagged: BTreeSet<String> = mismatched.iter().map(|(k, _)| k.clone()).collect();
    differences(md, runs, &values, &spreads, &order, &flagged, "### Points");
    if !mismatched.is_empty() {
        let listed: Vec<String> =
            mismatched.iter().take(MAX_LISTED).map(|(k, t)| format!("`{k}` ({})", t.join(" / "))).collect();
        let more = mismatched.len().saturating_sub(MAX_LISTED);
        let _ = writeln!(
            md,
            "**Timed differently** in the runs ({} points, each run's `timing` in run order): their figures and ratios \
             compare timing methods as well as devices: {}{}.\n",
            mismatched.len(),
            listed.join(", "),
            if more > 0 { format!(" and {more} more") } else { String::new() }
        );
    }
    // On one device the raw rate means the same in every run, so it is compared too (e.g. a change of method).
    let same_device = runs.iter().all(|r| r.device.name == runs[0].device.name && r.device.arch == runs[0].device.arch);
    if normalised && same_device && comparison.compares_raw_rate() {
        if let Ok(raw) = runs.iter().map(|r| metric_values(experiment, r, None)).collect::<Result<Vec<_>, _>>() {
            differences(
                md,
                runs,
                &joined(raw, comparison),
                &spreads,
                &order,
                &flagged,
                "#### Same device in every run, so the raw rate compares too: points",
            );
        }
    }
    // Points that some runs lack, or hold without an ok row.
    let mut listed = false;
    let key_sets: Vec<BTreeSet<String>> = runs.iter().map(|r| keys_of(r).into_iter().collect()).collect();
    for (i, r) in runs.iter().enumerate() {
        let only: Vec<&String> = order
            .iter()
            .filter(|k| key_sets[i].contains(*k))
            .filter(|k| key_sets.iter().any(|other| !other.contains(*k)))
            .collect();
        if !only.is_empty() {
            listed = true;
            let whose = if runs.len() == 2 {
                format!("Only in run {}", r.index)
            } else {
                format!("In run {} but missing from another run", r.index)
            };
            let _ = writeln!(md, "{whose} ({} points): {}\n", only.len(), key_list(&only));
        }
        let not_ok: Vec<String> = r
            .rows(experiment)
            .iter()
            .filter(|x| !is_ok(x))
            .filter_map(|x| Some(format!("{} ({})", key(x)?, text(x, "status"))))
            .collect();
        if !not_ok.is_empty() {
            listed = true;
            let refs: Vec<&String> = not_ok.iter().collect();
            let _ = writeln!(md, "Not `ok` in run {} ({} points): {}\n", r.index, not_ok.len(), key_list(&refs));
        }
    }
    if !listed {
        let _ = writeln!(md, "Every run holds the same points, all `ok`.\n");
    }
}

/// The points of `experiment` that every run holds `ok` but timed by different methods (the `timing` column:
/// `graph`, `stream`, `host`, or none in CSVs from before it), each with its method per run in run order. Their
/// ratios mix a change of method into the change of device.
pub fn timing_mismatches(experiment: &str, runs: &[&Run], comparison: &dyn Comparison) -> Vec<(String, Vec<String>)> {
    let per_run: Vec<BTreeMap<String, String>> = runs
        .iter()
        .map(|r| {
            r.rows(experiment)
                .iter()
                .filter(|x| is_ok(x))
                .filter_map(|x| Some((comparison.join_key(&key(x)?), text(x, "timing"))))
                .collect()
        })
        .collect();
    let Some(first) = per_run.first() else { return Vec::new() };
    let named = |t: &String| if t.is_empty() { "unrecorded".to_string() } else { t.clone() };
    let mut out = Vec::new();
    for (k, timing) in first {
        let Some(all) = per_run.iter().map(|m| m.get(k)).collect::<Option<Vec<&String>>>() else { continue };
        if all.iter().any(|t| *t != timing) {
            out.push((k.clone(), all.into_iter().map(named).collect()));
        }
    }
    out
}

/// The ratios of `values` (one per run, joined keys) over the points every run holds: a summary per run and the
/// largest differences, where points in `flagged` (timed differently) are marked. `heading` starts the heading line.
fn differences(
    md: &mut String,
    runs: &[&Run],
    values: &[Values],
    spreads: &[BTreeMap<String, f64>],
    order: &[String],
    flagged: &BTreeSet<String>,
    heading: &str,
) {
    let unit = values.first().map(|v| v.unit.clone()).unwrap_or_default();
    let common: Vec<&String> = order.iter().filter(|k| values.iter().all(|v| v.by_key.contains_key(*k))).collect();
    let _ = writeln!(md, "{heading} in every run ({}), compared by {unit}\n", common.len());
    let ratio = |k: &str, i: usize| -> Option<f64> {
        let (a, b) = (values[0].by_key.get(k)?, values[i].by_key.get(k)?);
        (*a > 0.0 && *b > 0.0).then(|| b / a)
    };
    for (i, run) in runs.iter().enumerate().skip(1) {
        let mut ratios: Vec<f64> = common.iter().filter_map(|k| ratio(k, i)).collect();
        ratios.sort_by(f64::total_cmp);
        if let (Some(lo), Some(hi)) = (ratios.first(), ratios.last()) {
            let median = ratios[ratios.len() / 2];
            let _ = writeln!(
                md,
                "Run {} / run 1 over {} points: median {median:.3}, from {lo:.3} to {hi:.3}.",
                run.index,
                ratios.len()
            );
        }
    }
    let mut largest: Vec<(&String, f64)> = common
        .iter()
        .filter_map(|k| {
            let worst = (1..runs.len())
                .filter_map(|i| ratio(k, i))
                .map(|r| r.ln().abs())
                .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))?;
            Some((*k, worst))
        })
        .collect();
    largest.sort_by(|a, b| b.1.total_cmp(&a.1));
    largest.truncate(MAX_DIFFERENCES);
    let classes: Vec<BTreeMap<String, Class>> = (0..runs.len()).map(|i| classes(values, spreads, i)).collect();
    if !largest.is_empty() {
        let _ = writeln!(
            md,
            "\nLargest differences, in {unit}, each value with its spread over the repetitions (± half their range, of \
             the median) and the class read from both runs' spreads:\n"
        );
        let mut head = String::from("| point |");
        let mut rule = String::from("|---|");
        for r in runs {
            let _ = write!(head, " run {} |", r.index);
            rule.push_str("---:|");
        }
        for r in &runs[1..] {
            let _ = write!(head, " run {} / run 1 | class |", r.index);
            rule.push_str("---:|---|");
        }
        let _ = writeln!(md, "{head}\n{rule}");
        for (k, _) in &largest {
            let mark = if flagged.contains(*k) { " (timed differently)" } else { "" };
            let mut line = format!("| `{k}`{mark} |");
            for (v, s) in values.iter().zip(spreads) {
                let value = v.by_key.get(*k).map(|x| fmt_num(*x)).unwrap_or_default();
                let _ = write!(line, " {value} {} |", spread_text(s.get(*k).copied()));
            }
            for (i, c) in classes.iter().enumerate().skip(1) {
                let r = ratio(k, i).map(|r| format!("{r:.2}")).unwrap_or_else(|| "-".into());
                let _ = write!(line, " {r} | {} |", c.get(*k).map_or("-", |c| c.name()));
            }
            let _ = writeln!(md, "{line}");
        }
    }
    // The points beyond their noise, all of them (up to a limit): the table above shows only the largest ratios.
    for (i, c) in classes.iter().enumerate().skip(1) {
        for class in [Class::Faster, Class::Slower] {
            let keys: Vec<&String> = common.iter().copied().filter(|k| c.get(*k) == Some(&class)).collect();
            if !keys.is_empty() {
                let _ = writeln!(
                    md,
                    "\n{} in run {} than in run 1 beyond both spreads ({} points): {}",
                    if class == Class::Faster { "Faster" } else { "Slower" },
                    runs[i].index,
                    keys.len(),
                    key_list(&keys)
                );
            }
        }
    }
    let _ = writeln!(md);
}

fn key_list(keys: &[&String]) -> String {
    let mut shown: Vec<String> = keys.iter().take(MAX_LISTED).map(|k| format!("`{k}`")).collect();
    if keys.len() > MAX_LISTED {
        shown.push(format!("and {} more", keys.len() - MAX_LISTED));
    }
    shown.join(", ")
}

// ---- Shared pieces of the headline comparisons ----
