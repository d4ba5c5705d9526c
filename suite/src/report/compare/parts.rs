//! Pieces the experiments' own comparisons share: per-run plots and Markdown tables.

use std::fmt::Write as _;

use super::*;
use crate::report::plot::{Axis, LinePlot, Series};

/// The devices of `runs` for a plot's subtitle, saying which is wave64 and which warp32.
pub fn runs_subtitle(runs: &[&Run]) -> String {
    runs.iter()
        .map(|r| {
            format!("run {}: {} ({}, {}{})", r.index, r.device.name, r.device.arch, r.wave(), r.over_test_runtime())
        })
        .collect::<Vec<_>>()
        .join("  vs  ")
}

/// A horizontal reference line at `y` across `xs`.
pub fn level(label: &str, y: f64, xs: &[f64]) -> Option<Series> {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lo.is_finite() && hi.is_finite()).then(|| Series::reference(label, vec![(lo, y), (hi, y)]))
}

/// How close (a share of the y axis) two lines must be everywhere to hide one another: about a line's width.
const COINCIDE: f64 = 0.01;

/// A plot of one line per run (and reference lines), or `None` when no run has a point.
pub fn per_run_plot(
    title: String,
    subtitle: String,
    axes: (&str, Axis, &str, Axis),
    mut series: Vec<Series>,
    note: Option<String>,
) -> Option<LinePlot> {
    series.retain(|s| !s.points.is_empty());
    if !series.iter().any(|s| s.kind == crate::report::plot::SeriesKind::Line) {
        return None;
    }
    let y_max = series.iter().flat_map(|s| &s.points).map(|p| p.1).filter(|y| y.is_finite()).fold(0.0, f64::max);
    // A line drawn over an identical one, or one closer than a line's width, hides it: say so, so a missing colour
    // is not read as a missing run.
    let near = |a: &Series, b: &Series| {
        a.points.len() == b.points.len()
            && a.points.iter().zip(&b.points).all(|(p, q)| {
                let gap = match axes.3 {
                    // On a log axis a line's width is a ratio.
                    Axis::Log2 | Axis::Log10 => (p.1 / q.1 - 1.0).abs() <= 2.0 * COINCIDE,
                    Axis::Linear => (p.1 - q.1).abs() <= COINCIDE * y_max,
                };
                p.0 == q.0 && gap
            })
    };
    // (Identical lines need no note: the plot draws them as one, labelled with both names.)
    let mut coincide = Vec::new();
    for (i, a) in series.iter().enumerate() {
        if let Some(b) = series[..i].iter().find(|b| b.kind == a.kind && near(a, b) && a.points != b.points) {
            coincide.push(format!("\"{}\" lies on \"{}\" (closer than a line's width)", a.label, b.label));
        }
    }
    let note = match (note, coincide.is_empty()) {
        (note, true) => note,
        (Some(n), false) => Some(format!("{n}; {}", coincide.join("; "))),
        (None, false) => Some(coincide.join("; ")),
    };
    Some(LinePlot {
        title,
        subtitle: Some(subtitle),
        x_label: axes.0.into(),
        x_axis: axes.1,
        y_label: axes.2.into(),
        y_axis: axes.3,
        series,
        y_max: (y_max > 0.0).then_some(y_max * 1.08),
        note,
        ..LinePlot::default()
    })
}

/// A Markdown table: `head` then rows.
pub fn table(head: &[String], rows: &[Vec<String>]) -> String {
    let mut out = format!("| {} |\n|", head.join(" | "));
    for (i, _) in head.iter().enumerate() {
        out.push_str(if i == 0 { "---|" } else { "---:|" });
    }
    out.push('\n');
    for r in rows {
        let _ = writeln!(out, "| {} |", r.join(" | "));
    }
    out.push('\n');
    out
}

/// Points in order of x.
pub fn sorted_points(mut pts: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    pts
}

/// Each run's device with its wave size, for titles: `run 1 H100 80GB HBM3 warp32 vs run 2 H200 warp32`. Every run
/// is named, so a comparison of two devices (or of one device over the HIP-over-CUDA test runtime) says so in its
/// title.
pub fn devices_in_title(runs: &[&Run]) -> String {
    runs.iter()
        .map(|r| {
            let over = if r.device.test_runtime.is_some() { ", HIP over CUDA" } else { "" };
            format!("run {} {} {}{over}", r.index, r.short_device(), r.wave())
        })
        .collect::<Vec<_>>()
        .join(" vs ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plot_of(a: Vec<(f64, f64)>, b: Vec<(f64, f64)>, y_axis: Axis) -> LinePlot {
        let series = vec![Series::line("run 1", a), Series::line("run 2", b)];
        per_run_plot("t".into(), "s".into(), ("x", Axis::Log2, "y", y_axis), series, None).expect("a plot")
    }

    /// A line closer to another than a line's width would hide it: the note says which lies on which (the plot
    /// also draws the one underneath wider); lines apart by more get no note.
    #[test]
    fn lines_that_hide_one_another_are_named_in_the_note() {
        let xs = [32.0, 64.0, 128.0];
        let run = |ys: [f64; 3]| xs.iter().copied().zip(ys).collect::<Vec<_>>();
        // Identical lines are drawn as one, named for both, and need no note.
        let same = plot_of(run([10.0, 60.0, 100.0]), run([10.0, 60.0, 100.0]), Axis::Linear);
        assert_eq!(same.note, None);
        assert_eq!(crate::report::plot::normalised(&same).series[0].label, "run 1 and run 2 (identical)");
        let close = plot_of(run([10.0, 60.0, 100.0]), run([10.5, 59.5, 100.0]), Axis::Linear);
        assert_eq!(close.note.as_deref(), Some("\"run 2\" lies on \"run 1\" (closer than a line's width)"));
        let apart = plot_of(run([10.0, 60.0, 100.0]), run([10.0, 63.0, 100.0]), Axis::Linear);
        assert_eq!(apart.note, None);
        // On a log axis closeness is a ratio: 1000 vs 1010 is close, 10 vs 11 is not.
        let log_close = plot_of(run([10.0, 100.0, 1000.0]), run([10.1, 100.0, 1010.0]), Axis::Log10);
        assert!(log_close.note.is_some_and(|n| n.contains("closer than")));
        let log_apart = plot_of(run([10.0, 100.0, 1000.0]), run([11.0, 100.0, 1000.0]), Axis::Log10);
        assert_eq!(log_apart.note, None);
    }
}
