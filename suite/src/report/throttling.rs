//! Points measured while the GPU was throttled or below its steady clock, as the CSV rows say
//! ([`super::csv::TELEMETRY_COLUMNS`]): how many and which, for `summary.md`; rings around them in the plots; and
//! each run's clocks for `suite compare`'s warning. Rows from before the columns existed are simply unflagged.
//!
//! A point is **flagged** when its row says `throttled` (a reading during its timed repetitions reported a power
//! cap, a thermal limit or a hardware slowdown) or `below_steady_clock` (its median SM clock was more than 5% under
//! the device's maximum): its time is not the time at the clock the peaks are quoted for.

use std::collections::{BTreeMap, BTreeSet};

use super::plot::{LinePlot, Series};

/// One CSV row, column → value.
pub type Rec = BTreeMap<String, String>;

/// How far two runs' median SM clocks may differ before `suite compare` warns: the same 5% as a point's
/// `below_steady_clock` ([`crate::device::telemetry::STEADY_CLOCK_MARGIN`]), the accuracy the timing is checked to.
pub const CLOCK_MARGIN: f64 = crate::device::telemetry::STEADY_CLOCK_MARGIN;

/// Keys listed per experiment in `summary.md`; the CSV's columns hold every one.
pub const KEYS_LISTED: usize = 5;

/// The legend label of the rings around flagged points.
pub const RING_LABEL: &str = "ringed: throttled or below steady clock";

fn is_true(row: &Rec, column: &str) -> bool {
    row.get(column).is_some_and(|v| v == "true")
}

/// Whether a row's point ran throttled.
pub fn throttled(row: &Rec) -> bool {
    is_true(row, "throttled")
}

/// Whether a row's point ran more than 5% below its steady SM clock.
pub fn below_steady_clock(row: &Rec) -> bool {
    is_true(row, "below_steady_clock")
}

/// Whether a row's point is flagged: throttled or below its steady clock.
pub fn flagged(row: &Rec) -> bool {
    throttled(row) || below_steady_clock(row)
}

/// A finite number in `column`.
fn num(row: &Rec, column: &str) -> Option<f64> {
    row.get(column).and_then(|v| v.trim().parse::<f64>().ok()).filter(|v| v.is_finite())
}

/// What an experiment's rows say about the clocks they ran at.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Flags {
    /// Whether the CSV has the clock columns at all (no: written before they existed).
    pub has_columns: bool,
    /// Timed (`ok`) rows.
    pub timed: usize,
    /// Timed rows with an SM clock reading.
    pub sampled: usize,
    /// Keys of throttled rows, in CSV order.
    pub throttled: Vec<String>,
    /// Keys of rows below their steady clock, in CSV order.
    pub below: Vec<String>,
    /// Keys of flagged rows (either), in CSV order.
    pub flagged: Vec<String>,
    /// The throttle reasons of the throttled rows, e.g. `power_cap`.
    pub reasons: BTreeSet<String>,
}

impl Flags {
    /// The flags of `rows` (an experiment's CSV).
    pub fn of(rows: &[Rec]) -> Flags {
        let mut f = Flags { has_columns: rows.iter().any(|r| r.contains_key("sm_clock_mhz")), ..Flags::default() };
        for row in rows.iter().filter(|r| r.get("status").is_some_and(|s| s == "ok")) {
            f.timed += 1;
            f.sampled += usize::from(num(row, "sm_clock_mhz").is_some());
            let key = row.get("key").cloned().unwrap_or_default();
            if throttled(row) {
                f.throttled.push(key.clone());
                let reasons = row.get("throttle_reasons").map_or("", String::as_str);
                f.reasons.extend(reasons.split('+').filter(|r| !r.is_empty() && *r != "none").map(str::to_string));
            }
            if below_steady_clock(row) {
                f.below.push(key.clone());
            }
            if flagged(row) {
                f.flagged.push(key);
            }
        }
        f
    }

    /// The experiment's line in `summary.md`: how many of its timed points were flagged and the first few keys;
    /// that every one ran at its steady clock; or that none was sampled. `None` for a CSV without the columns or
    /// without timed rows.
    pub fn line(&self) -> Option<String> {
        if !self.has_columns || self.timed == 0 {
            return None;
        }
        if self.sampled == 0 {
            return Some(
                "Clocks: not sampled (run.json's `telemetry.source` says why); the clock columns are empty.".into(),
            );
        }
        let unsampled = self.timed - self.sampled;
        let unsampled =
            if unsampled > 0 { format!("; {unsampled} timed points have no reading") } else { String::new() };
        if self.flagged.is_empty() {
            return Some(format!(
                "Clocks: every sampled point ran at its steady SM clock, none throttled ({} of {} timed points \
                 sampled{unsampled}).",
                self.sampled, self.timed
            ));
        }
        let reasons = if self.reasons.is_empty() {
            String::new()
        } else {
            format!(": {}", self.reasons.iter().cloned().collect::<Vec<_>>().join(", "))
        };
        let listed: Vec<String> = self.flagged.iter().take(KEYS_LISTED).map(|k| format!("`{k}`")).collect();
        let more = self.flagged.len().saturating_sub(KEYS_LISTED);
        let more = if more > 0 { format!(" and {more} more") } else { String::new() };
        Some(format!(
            "**Clocks: {} of {} timed points flagged** ({} throttled{reasons}; {} more than 5% below the steady SM \
             clock{unsampled}): {}{more}. Their times are longer than at the steady clock; they are ringed in the \
             plots, and the columns `throttled`, `throttle_reasons`, `below_steady_clock` and `sm_clock_mhz` of \
             the CSV say which and why.",
            self.flagged.len(),
            self.timed,
            self.throttled.len(),
            self.below.len(),
            listed.join(", ")
        ))
    }
}

/// The note near the top of `summary.md` over every experiment's flags: a warning when any point was flagged, a
/// line when every sampled point ran at its steady clock, nothing when no CSV has the columns.
pub fn run_note(experiments: &[(&str, &Flags)]) -> Option<String> {
    let with: Vec<&(&str, &Flags)> = experiments.iter().filter(|(_, f)| f.has_columns && f.timed > 0).collect();
    if with.is_empty() {
        return None;
    }
    let (timed, sampled): (usize, usize) = with.iter().fold((0, 0), |(t, s), (_, f)| (t + f.timed, s + f.sampled));
    let flagged: Vec<String> = with
        .iter()
        .filter(|(_, f)| !f.flagged.is_empty())
        .map(|(name, f)| format!("{name} {}", f.flagged.len()))
        .collect();
    if sampled == 0 {
        return Some(
            "Clocks and power were not sampled in this run (run.json's `telemetry.source` says why), so nothing \
             says whether a point ran throttled."
                .into(),
        );
    }
    if flagged.is_empty() {
        return Some(format!(
            "Clocks: no point ran throttled or below its steady SM clock ({sampled} of {timed} timed points sampled)."
        ));
    }
    let total: usize = with.iter().map(|(_, f)| f.flagged.len()).sum();
    let throttled: usize = with.iter().map(|(_, f)| f.throttled.len()).sum();
    Some(format!(
        "**Warning: {total} of {timed} timed points ran throttled ({throttled}) or more than 5% below their steady \
         SM clock** ({}): their figures understate the hardware. Each experiment below lists them; the plots ring \
         them.",
        flagged.join(", ")
    ))
}

/// Rings around the flagged points of `plots`, made by `make` from `rows` (an experiment's plots from its rows):
/// each plot that shows a point depending on a flagged row gets one more series, [`Series::flagged`], with a ring
/// at each such point.
///
/// Which points depend on a flagged row is found without knowing how the experiment builds its plots: the plots are
/// made a second time from the rows with each flagged row's time columns scaled by a factor of its own (and its
/// rate `metric` by its inverse), and every point that moved is ringed. So a point is ringed when its value comes
/// from a flagged row, its own or one it is a ratio of (a speedup over a flagged baseline, a share of a flagged
/// vendor BLAS or copy); figures that do not depend on a time (a theoretical occupancy, a datasheet peak, a level
/// line from one end of the data to the other) stay unringed.
pub fn ring_flagged(
    plots: Vec<(String, LinePlot)>,
    rows: &[Rec],
    metric: &str,
    make: impl Fn(&[Rec]) -> Vec<(String, LinePlot)>,
) -> Vec<(String, LinePlot)> {
    if !rows.iter().any(flagged) {
        return plots;
    }
    let moved = make(&perturbed(rows, metric));
    plots
        .into_iter()
        .map(|(file, mut plot)| {
            if let Some((_, other)) = moved.iter().find(|(f, _)| *f == file) {
                let rings = moved_points(&plot, other);
                if !rings.is_empty() {
                    plot.series.push(Series::flagged(RING_LABEL, rings));
                }
            }
            (file, plot)
        })
        .collect()
}

/// `rows` with every flagged row's times multiplied, and its `metric` divided, by 1.5 + 0.001 × its position: a
/// factor of its own, so a ratio of two flagged rows moves too.
fn perturbed(rows: &[Rec], metric: &str) -> Vec<Rec> {
    const TIMES: [&str; 3] = ["time_ms_median", "time_ms_min", "time_ms_max"];
    rows.iter()
        .enumerate()
        .map(|(i, row)| {
            let mut row = row.clone();
            if flagged(&row) {
                let factor = 1.5 + 0.001 * i as f64;
                for column in TIMES {
                    if let Some(v) = num(&row, column) {
                        row.insert(column.to_string(), (v * factor).to_string());
                    }
                }
                if let Some(v) = num(&row, metric) {
                    row.insert(metric.to_string(), (v / factor).to_string());
                }
            }
            row
        })
        .collect()
}

/// The points of `plot` that `moved` (the same plot from perturbed rows) does not have in its matching series
/// (the same label at the same place, else the same label, else the same place when the series count is the same);
/// each once.
fn moved_points(plot: &LinePlot, moved: &LinePlot) -> Vec<(f64, f64)> {
    let same = |a: (f64, f64), b: (f64, f64)| a.0.to_bits() == b.0.to_bits() && a.1.to_bits() == b.1.to_bits();
    let mut rings: Vec<(f64, f64)> = Vec::new();
    for (i, series) in plot.series.iter().enumerate() {
        let counterpart = moved
            .series
            .get(i)
            .filter(|s| s.label == series.label)
            .or_else(|| moved.series.iter().find(|s| s.label == series.label))
            .or_else(|| moved.series.get(i).filter(|_| moved.series.len() == plot.series.len()));
        let Some(counterpart) = counterpart else { continue };
        for &p in &series.points {
            let finite = p.0.is_finite() && p.1.is_finite();
            if finite && !counterpart.points.iter().any(|&q| same(p, q)) && !rings.iter().any(|&q| same(p, q)) {
                rings.push(p);
            }
        }
    }
    rings
}

/// What a run's rows say about the clocks it ran at, for `suite compare`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunClocks {
    /// The median of its timed rows' median SM clocks, MHz; `None` when no row has one.
    pub median_sm_clock_mhz: Option<f64>,
    /// Timed rows with a clock reading.
    pub sampled: usize,
    /// Timed rows.
    pub timed: usize,
    /// Throttled rows.
    pub throttled: usize,
    /// Their reasons.
    pub reasons: BTreeSet<String>,
    /// The device's maximum SM clock as its run.json recorded it, MHz.
    pub max_sm_clock_mhz: Option<u32>,
}

impl RunClocks {
    /// The clocks of every experiment's `rows` of a run, with the maximum clock its run.json recorded.
    pub fn of<'r>(rows: impl IntoIterator<Item = &'r Rec>, max_sm_clock_mhz: Option<u32>) -> RunClocks {
        let mut clocks = Vec::new();
        let mut c = RunClocks { max_sm_clock_mhz, ..RunClocks::default() };
        for row in rows.into_iter().filter(|r| r.get("status").is_some_and(|s| s == "ok")) {
            c.timed += 1;
            if let Some(mhz) = num(row, "sm_clock_mhz") {
                clocks.push(mhz);
            }
            if throttled(row) {
                c.throttled += 1;
                let reasons = row.get("throttle_reasons").map_or("", String::as_str);
                c.reasons.extend(reasons.split('+').filter(|r| !r.is_empty() && *r != "none").map(str::to_string));
            }
        }
        c.sampled = clocks.len();
        c.median_sm_clock_mhz = crate::device::telemetry::median(clocks);
        c
    }

    /// The median clock as a share of the device's maximum, where both are known.
    pub fn share_of_max(&self) -> Option<f64> {
        Some(self.median_sm_clock_mhz? / f64::from(self.max_sm_clock_mhz.filter(|&m| m > 0)?))
    }
}

/// One run for [`clock_warnings`]: its number, device (name and architecture) and clocks.
#[derive(Debug, Clone, PartialEq)]
pub struct ClockedRun {
    /// 1-based run number.
    pub index: usize,
    /// The device, e.g. `NVIDIA H100 80GB HBM3 (sm_90)`.
    pub device: String,
    /// What its rows say.
    pub clocks: RunClocks,
}

/// `suite compare`'s lines at the top of `report.md` on the runs' clocks: a warning when runs of one device ran at
/// median SM clocks more than [`CLOCK_MARGIN`] apart (runs of different devices: at shares of their maximum clocks
/// more than that apart), or when a run has throttled rows; a note when some runs have clock readings and others
/// none. Nothing when every run ran at the same clocks unthrottled, or none has readings (older runs).
pub fn clock_warnings(runs: &[ClockedRun]) -> Vec<String> {
    let mut lines = Vec::new();
    let sampled: Vec<&ClockedRun> = runs.iter().filter(|r| r.clocks.median_sm_clock_mhz.is_some()).collect();
    if sampled.is_empty() {
        return lines;
    }
    let one_device = sampled.iter().all(|r| r.device == sampled[0].device);
    let describe = |r: &ClockedRun| {
        let mhz = r.clocks.median_sm_clock_mhz.unwrap_or(f64::NAN);
        let share = r.clocks.share_of_max().map(|s| format!(", {:.0}% of its maximum", 100.0 * s)).unwrap_or_default();
        format!("run {} {mhz:.0} MHz{share}", r.index)
    };
    // Same device: the clocks themselves; different devices: each as a share of its own maximum, where known.
    let values: Vec<Option<f64>> = sampled
        .iter()
        .map(|r| if one_device { r.clocks.median_sm_clock_mhz } else { r.clocks.share_of_max() })
        .collect();
    if values.iter().all(Option::is_some) && sampled.len() > 1 {
        let (lo, hi) = values.iter().flatten().fold((f64::INFINITY, 0.0f64), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
        if lo < (1.0 - CLOCK_MARGIN) * hi {
            let measure = if one_device { "median SM clocks" } else { "median SM clocks as shares of their maximum" };
            lines.push(format!(
                "**Warning: the runs ran at different clocks**: {measure} differ by {:.0}%, more than the {:.0}% \
                 margin ({}; median over each run's timed rows, column `sm_clock_mhz`). Times of compute-bound \
                 kernels scale with the clock: compare their ratios with that in mind.",
                100.0 * (1.0 - lo / hi),
                100.0 * CLOCK_MARGIN,
                sampled.iter().map(|r| describe(r)).collect::<Vec<_>>().join(", ")
            ));
        }
    } else if !one_device && sampled.len() > 1 {
        lines.push(format!(
            "Clocks of different devices, not compared (a run's run.json records no maximum SM clock): {}.",
            sampled.iter().map(|r| describe(r)).collect::<Vec<_>>().join(", ")
        ));
    }
    for r in runs.iter().filter(|r| r.clocks.throttled > 0) {
        let reasons = r.clocks.reasons.iter().cloned().collect::<Vec<_>>().join(", ");
        let reasons = if reasons.is_empty() { String::new() } else { format!(" ({reasons})") };
        lines.push(format!(
            "**Warning: run {} was throttled**{reasons} on {} of its {} timed rows: those figures understate its GPU \
             (column `throttled`).",
            r.index, r.clocks.throttled, r.clocks.timed
        ));
    }
    let unsampled: Vec<String> =
        runs.iter().filter(|r| r.clocks.median_sm_clock_mhz.is_none()).map(|r| format!("run {}", r.index)).collect();
    if !unsampled.is_empty() {
        lines.push(format!(
            "Clocks unknown for {} (no clock readings in its rows: an older suite, --no-telemetry, or no NVML/AMD SMI), \
             so whether it ran at the clocks of the others cannot be told.",
            unsampled.join(", ")
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::plot::{Axis, SeriesKind};

    /// A fixture row of a streaming kernel: key, size, median time (ms), GB/s, and its clock columns as given
    /// (`sm` empty: not sampled).
    fn row(key: &str, n: u32, time_ms: f64, sm: &str, throttled: &str, reasons: &str, below: &str) -> Rec {
        [
            ("key", key.to_string()),
            ("n", n.to_string()),
            ("status", "ok".into()),
            ("time_ms_median", time_ms.to_string()),
            ("gbps", (1e-6 * f64::from(n) * 12.0 / time_ms).to_string()),
            ("sm_clock_mhz", sm.into()),
            ("throttled", throttled.into()),
            ("throttle_reasons", reasons.into()),
            ("below_steady_clock", below.into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    /// Rows of a triad at four sizes and a copy baseline, two of them flagged: 2^22 capped, the copy below its clock.
    fn rows() -> Vec<Rec> {
        vec![
            row("copy", 1 << 20, 0.01, "1755", "false", "none", "true"),
            row("triad/20", 1 << 20, 0.012, "1980", "false", "none", "false"),
            row("triad/21", 1 << 21, 0.02, "1980", "false", "sync_boost", "false"),
            row("triad/22", 1 << 22, 0.04, "1770", "true", "power_cap", "true"),
            row("triad/23", 1 << 23, 0.08, "1980", "false", "none", "false"),
        ]
    }

    #[test]
    fn flags_count_and_list_throttled_and_below_steady_clock_points() {
        let mut rows = rows();
        let mut skipped = row("triad/24", 1 << 24, 1.0, "1500", "true", "thermal", "true");
        skipped.insert("status".into(), "fail".into());
        rows.push(skipped);
        let f = Flags::of(&rows);
        assert_eq!((f.has_columns, f.timed, f.sampled), (true, 5, 5), "a failed row has no time to flag");
        assert_eq!(f.throttled, ["triad/22"]);
        assert_eq!(f.below, ["copy", "triad/22"]);
        assert_eq!(f.flagged, ["copy", "triad/22"]);
        assert_eq!(f.reasons.iter().collect::<Vec<_>>(), ["power_cap"]);
        let line = f.line().unwrap();
        assert!(
            line.starts_with("**Clocks: 2 of 5 timed points flagged** (1 throttled: power_cap; 2 more than 5%"),
            "{line}"
        );
        assert!(line.contains("): `copy`, `triad/22`. Their times"), "{line}");
        // More than five: the first five keys and a count.
        let many: Vec<Rec> =
            (0..8).map(|i| row(&format!("k{i}"), 1 << 20, 0.01, "1700", "false", "none", "true")).collect();
        let line = Flags::of(&many).line().unwrap();
        assert!(line.contains("`k0`, `k1`, `k2`, `k3`, `k4` and 3 more."), "{line}");
        // Nothing flagged; nothing sampled; columns absent (an older CSV).
        let calm: Vec<Rec> = rows.iter().filter(|r| !flagged(r)).cloned().collect();
        let line = Flags::of(&calm).line().unwrap();
        assert!(
            line.starts_with("Clocks: every sampled point ran at its steady SM clock, none throttled (3 of 3"),
            "{line}"
        );
        let unsampled: Vec<Rec> = (0..2).map(|i| row(&format!("k{i}"), 1 << 20, 0.01, "", "", "", "")).collect();
        assert!(Flags::of(&unsampled)
            .line()
            .unwrap()
            .starts_with("Clocks: not sampled (run.json's `telemetry.source`"));
        let mut old = rows[1].clone();
        for c in crate::report::csv::TELEMETRY_COLUMNS {
            old.remove(c);
        }
        assert_eq!(Flags::of(&[old]).line(), None);
    }

    #[test]
    fn the_run_note_warns_when_any_point_was_flagged() {
        let flagged = Flags::of(&rows());
        let calm = Flags::of(&rows()[1..3]);
        let note = run_note(&[("triad", &flagged), ("copy", &calm)]).unwrap();
        assert!(note.starts_with("**Warning: 2 of 7 timed points ran throttled (1) or more than 5% below"), "{note}");
        assert!(note.contains("(triad 2)"), "{note}");
        let note = run_note(&[("copy", &calm)]).unwrap();
        assert_eq!(note, "Clocks: no point ran throttled or below its steady SM clock (2 of 2 timed points sampled).");
        assert_eq!(run_note(&[("old", &Flags::default())]), None);
    }

    /// A toy experiment's plots: each triad's GB/s against n, its share of the copy (a ratio of two rows), the copy
    /// as a level line across the data, and a figure that depends on no time.
    fn toy_plots(rows: &[Rec]) -> Vec<(String, LinePlot)> {
        let n = |r: &Rec| num(r, "n").unwrap();
        let triads: Vec<&Rec> = rows.iter().filter(|r| r["key"].starts_with("triad")).collect();
        let copy = rows.iter().find(|r| r["key"] == "copy").and_then(|r| num(r, "gbps")).unwrap();
        let gbps: Vec<(f64, f64)> = triads.iter().map(|r| (n(r), num(r, "gbps").unwrap())).collect();
        let (lo, hi) = (gbps[0].0, gbps[gbps.len() - 1].0);
        let plot = |series: Vec<Series>| LinePlot {
            title: "toy".into(),
            subtitle: None,
            x_label: "n".into(),
            y_label: "y".into(),
            x_axis: Axis::Log2,
            y_axis: Axis::Linear,
            series,
            y_max: None,
            note: None,
            ..LinePlot::default()
        };
        vec![
            (
                "toy-gbps.png".into(),
                plot(vec![
                    Series::line("triad", gbps.clone()),
                    Series::reference("1.0 = level", vec![(lo, 1.0), (hi, 1.0)]),
                    Series::focus("bytes / 1e6", triads.iter().map(|r| (n(r), n(r) * 12e-6)).collect()),
                ]),
            ),
            (
                "toy-share.png".into(),
                plot(vec![Series::line("triad / copy", gbps.iter().map(|&(x, g)| (x, g / copy)).collect())]),
            ),
        ]
    }

    #[test]
    fn rings_go_around_the_points_that_come_from_a_flagged_row_and_only_those() {
        let rows = rows();
        let plots = ring_flagged(toy_plots(&rows), &rows, "gbps", toy_plots);
        let rings = |file: &str| -> Vec<(f64, f64)> {
            let (_, plot) = plots.iter().find(|(f, _)| f == file).unwrap();
            let flagged: Vec<&Series> = plot.series.iter().filter(|s| s.kind == SeriesKind::Flagged).collect();
            assert!(flagged.len() <= 1 && flagged.iter().all(|s| s.label == RING_LABEL), "{file}");
            flagged.first().map(|s| s.points.clone()).unwrap_or_default()
        };
        // The triad's own flagged point (2^22), not the level line's ends nor the time-free figure at 2^22.
        let triad22 = toy_plots(&rows)[0].1.series[0].points[2];
        assert_eq!(rings("toy-gbps.png"), [triad22]);
        // Every share of the copy, since the copy is flagged: each is divided by it.
        assert_eq!(rings("toy-share.png").len(), 4);
        // Without flagged rows the plots are as made.
        let calm: Vec<Rec> = rows
            .iter()
            .map(|r| {
                let mut r = r.clone();
                r.insert("throttled".into(), "false".into());
                r.insert("below_steady_clock".into(), "false".into());
                r
            })
            .collect();
        assert_eq!(ring_flagged(toy_plots(&calm), &calm, "gbps", toy_plots), toy_plots(&calm));
        // The copy alone flagged: the share plot is all ringed, the GB/s plot not at all.
        let copy_only: Vec<Rec> =
            calm.iter().enumerate().map(|(i, r)| if i == 0 { rows[0].clone() } else { r.clone() }).collect();
        let plots = ring_flagged(toy_plots(&copy_only), &copy_only, "gbps", toy_plots);
        assert_eq!(plots[0].1.series.len(), 3, "no ring in the GB/s plot");
        assert_eq!(plots[1].1.series.last().map(|s| (s.kind, s.points.len())), Some((SeriesKind::Flagged, 4)));
    }

    fn clocked(index: usize, device: &str, median: Option<f64>, throttled: usize, max: Option<u32>) -> ClockedRun {
        ClockedRun {
            index,
            device: device.into(),
            clocks: RunClocks {
                median_sm_clock_mhz: median,
                sampled: 10,
                timed: 10,
                throttled,
                reasons: if throttled > 0 { BTreeSet::from(["power_cap".to_string()]) } else { BTreeSet::new() },
                max_sm_clock_mhz: max,
            },
        }
    }

    #[test]
    fn compare_warns_of_runs_at_different_clocks_or_throttled() {
        let h100 = "NVIDIA H100 80GB HBM3 (sm_90)";
        // Within 5%: nothing to say.
        assert!(clock_warnings(&[
            clocked(1, h100, Some(1980.0), 0, Some(1980)),
            clocked(2, h100, Some(1890.0), 0, Some(1980))
        ])
        .is_empty());
        // Just past the margin: 1860 against 1980 is 6% apart.
        let lines = clock_warnings(&[
            clocked(1, h100, Some(1980.0), 0, Some(1980)),
            clocked(2, h100, Some(1860.0), 0, Some(1980)),
        ]);
        assert!(lines.len() == 1 && lines[0].contains("differ by 6%, more than the 5% margin"), "{lines:?}");
        // 1755 against 1980: 11% apart.
        let lines = clock_warnings(&[
            clocked(1, h100, Some(1980.0), 0, Some(1980)),
            clocked(2, h100, Some(1755.0), 3, Some(1980)),
        ]);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].starts_with("**Warning: the runs ran at different clocks**: median SM clocks differ by 11%, more than the 5% margin (run 1 1980 MHz, 100% of its maximum, run 2 1755 MHz, 89% of its maximum;"), "{}", lines[0]);
        assert_eq!(lines[1], "**Warning: run 2 was throttled** (power_cap) on 3 of its 10 timed rows: those figures understate its GPU (column `throttled`).");
        // Different devices: compared as shares of their maxima (an MI250X GCD at 1700 of 1700 against an H100 at
        // 1980 of 1980: the same), and without maxima not compared.
        let mi250x = "AMD Instinct MI250X (gfx90a)";
        assert!(clock_warnings(&[
            clocked(1, mi250x, Some(1700.0), 0, Some(1700)),
            clocked(2, h100, Some(1980.0), 0, Some(1980))
        ])
        .is_empty());
        let lines = clock_warnings(&[
            clocked(1, mi250x, Some(1500.0), 0, Some(1700)),
            clocked(2, h100, Some(1980.0), 0, Some(1980)),
        ]);
        assert!(lines[0].contains("median SM clocks as shares of their maximum differ by 12%"), "{lines:?}");
        let lines =
            clock_warnings(&[clocked(1, mi250x, Some(1700.0), 0, None), clocked(2, h100, Some(1980.0), 0, Some(1980))]);
        assert!(lines[0].starts_with("Clocks of different devices, not compared"), "{lines:?}");
        // One run without readings: said; none with readings (older runs): nothing.
        let lines = clock_warnings(&[clocked(1, h100, Some(1980.0), 0, Some(1980)), clocked(2, h100, None, 0, None)]);
        assert_eq!(lines.len(), 1);
        assert!(lines[0].starts_with("Clocks unknown for run 2 (no clock readings"), "{lines:?}");
        assert!(clock_warnings(&[clocked(1, h100, None, 0, None), clocked(2, h100, None, 0, None)]).is_empty());
        // The run's clocks from its rows: the median over timed rows, the throttled rows and their reasons.
        let c = RunClocks::of(&rows(), Some(1980));
        assert_eq!((c.median_sm_clock_mhz, c.sampled, c.timed, c.throttled), (Some(1980.0), 5, 5, 1));
        assert_eq!(c.share_of_max(), Some(1.0));
    }

    /// `suite compare` over two fixture runs of one H100 (made-up rows of a made-up experiment): the second ran at
    /// 1755 MHz, power-capped, and report.md says so at its top, before any figure.
    #[test]
    fn report_md_starts_with_the_clock_warning() {
        let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
        let head = crate::report::csv::header(&["n"], "gbps").join(",");
        for (dir, (sm, throttled, reasons)) in dirs.iter().zip([(1980, "false", "none"), (1755, "true", "power_cap")]) {
            let json = serde_json::json!({
                "device": {"platform": "nvidia", "name": "NVIDIA H100 80GB HBM3", "arch": "sm_90", "wave_size": 32,
                           "cu_count": 132},
                "invocations": [{"experiment": "fixture", "git_commit": "abc", "date": "2026-11-23T10:00:00Z",
                                 "telemetry": {"source": "NVML 13.580.82", "period_ms": 20.0, "start": null, "end": null,
                                               "limits": {"max_sm_clock_mhz": 1980, "max_mem_clock_mhz": 2619,
                                                          "power_limit_w": 700.0, "power_scope": "device"}}}]
            });
            std::fs::write(dir.path().join("run.json"), json.to_string()).unwrap();
            let mut csv = format!("{head}\n");
            for n in [1, 2, 3] {
                csv.push_str(&format!(
                    "fixture,nvidia,NVIDIA H100 80GB HBM3,sm_90,32,{n},20,1,graph,,,,1,1,1,{},0,1,{sm},2619,600,60,\
                     {throttled},{reasons},{},20,ok,,k{n}\n",
                    100 * n,
                    sm < 1881
                ));
            }
            std::fs::write(dir.path().join("fixture.csv"), csv).unwrap();
        }
        let runs: Vec<crate::report::compare::Run> =
            dirs.iter().enumerate().map(|(i, d)| crate::report::compare::read_run(d.path(), i + 1).unwrap()).collect();
        assert_eq!(runs[1].invocations[0].max_sm_clock_mhz, Some(1980));
        assert_eq!(runs[1].invocations[0].telemetry_source.as_deref(), Some("NVML 13.580.82"));
        let known = crate::report::compare::Known { comparisons: vec![], roofline: vec![] };
        let (md, _) = crate::report::compare::report(&runs, &known);
        let warning = md.find("**Warning: the runs ran at different clocks**: median SM clocks differ by 11%").unwrap();
        let throttled = md.find("**Warning: run 2 was throttled** (power_cap) on 3 of its 3 timed rows").unwrap();
        let first_section = md.find("\n## ").unwrap();
        assert!(warning < throttled && throttled < first_section, "{md}");
        assert!(
            md.contains("- run 2: median SM clock 1755 MHz over 3 of 3 timed rows, 3 throttled (NVML 13.580.82)\n"),
            "{md}"
        );
        // The same runs at one clock: no warning.
        let (md, _) =
            crate::report::compare::report(&runs[..1].iter().chain(&runs[..1]).cloned().collect::<Vec<_>>(), &known);
        assert!(!md.contains("Warning"), "{md}");
    }
}
