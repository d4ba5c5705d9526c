//! The fusion experiment's plots, drawn from its rows alone (no files written): per operation and precision, the
//! speedup over the hand-written reduction and the bandwidth against the device copy; per precision the seed's two
//! gains side by side; and, where a run has both, FP64's bandwidth beside FP32's. FP32 plots keep the names they had
//! before FP64 (`fusion_speedup_dot.png`); FP64's end in `_f64` (`fusion_speedup_dot_f64.png`), one set per
//! precision because both in one plot would double its lines.

use std::collections::BTreeMap;

use super::derived::Table;
use super::{OPERATIONS, VARIANTS};
use crate::report::plot::{Axis, LinePlot, Series};

/// What a plot's file name gets for precision `p`: nothing for FP32, `_f64` for FP64.
fn file_suffix(p: &str) -> String {
    if p == "f32" {
        String::new()
    } else {
        format!("_{p}")
    }
}

/// `FP32` or `FP64`, as titles and axes say it.
fn upper(p: &str) -> String {
    p.to_uppercase().replace('F', "FP")
}

/// The plots: per operation and precision, speedup over `hand` (device time) vs size, one line per variant, 1.0
/// marked; GB/s vs size with the copy's bandwidth (in the same precision) as a reference line; per precision the
/// fusion and multi-staging gains of every operation; and FP64 GB/s over FP32 GB/s at the same size where the rows
/// hold both.
pub fn plots(rows: &[BTreeMap<String, String>]) -> Vec<(String, LinePlot)> {
    let ok: Vec<&BTreeMap<String, String>> = crate::experiments::ok_rows(rows).collect();
    let Some(first) = ok.first() else { return Vec::new() };
    let get = |c: &str| first.get(c).cloned().unwrap_or_default();
    let wave = if get("wave_size") == "64" { "wave64" } else { "warp32" };
    let vendor = if get("platform") == "amd" { "rocBLAS" } else { "cuBLAS" };
    let device = format!("{} ({}, {wave})", get("device"), get("arch"));
    let table = Table::new(&ok);
    let mut out = Vec::new();
    for p in table.precisions() {
        for op in OPERATIONS {
            out.extend(operation_plots(&table, op, p, vendor, &device));
        }
        out.extend(ratios_plot(&table, p, &device));
    }
    out.extend(precision_plot(&table, vendor, &device));
    out
}

/// The speedup and GB/s plots of `op` in precision `p`; none without rows.
fn operation_plots(table: &Table, op: &str, p: &str, vendor: &str, device: &str) -> Vec<(String, LinePlot)> {
    let elements = table.elements(op, p);
    if elements.is_empty() {
        return Vec::new();
    }
    let blas = if p == "f64" { 'd' } else { 's' };
    let label = |v: &str| match (v, op) {
        ("vendor", "sum") => format!("{vendor} {blas}asum (stand-in: same bytes)"),
        ("vendor", "dot") => format!("{vendor} {blas}dot"),
        ("vendor", _) => format!("{vendor} {blas}asum"),
        ("fused_staged", _) => "fused + staged (multi-staging)".to_string(),
        ("unfused", _) => "unfused (eager action + reduce)".to_string(),
        ("hand", _) => "hand-written two-stage".to_string(),
        _ => "fused (lazy view)".to_string(),
    };
    let mut speed = Vec::new();
    let mut gbps = Vec::new();
    for v in VARIANTS {
        let s: Vec<(f64, f64)> = elements
            .iter()
            .filter_map(|&n| {
                Some((n as f64, table.time(op, p, "hand", n, "device")? / table.time(op, p, v, n, "device")?))
            })
            .collect();
        let s_spread: Vec<(f64, f64, f64)> = elements
            .iter()
            .filter_map(|&n| {
                let (lo, hi) = table.speedup_spread((op, p, "hand", n, "device"), (op, p, v, n, "device"))?;
                Some((n as f64, lo, hi))
            })
            .collect();
        let g: Vec<(f64, f64)> =
            elements.iter().filter_map(|&n| Some((n as f64, table.rate(op, p, v, n, "device")?))).collect();
        let g_spread: Vec<(f64, f64, f64)> = elements
            .iter()
            .filter_map(|&n| {
                let (lo, hi) = table.rate_spread(op, p, v, n, "device")?;
                Some((n as f64, lo, hi))
            })
            .collect();
        let make = if v == "fused" { Series::focus } else { Series::line };
        if !s.is_empty() && v != "hand" {
            speed.push(make(label(v), s).with_spread(s_spread));
        }
        if !g.is_empty() {
            gbps.push(make(label(v), g).with_spread(g_spread));
        }
    }
    let (lo, hi) = (elements[0] as f64, elements[elements.len() - 1] as f64);
    speed.push(Series::reference("1.0 = hand-written", vec![(lo, 1.0), (hi, 1.0)]));
    let copy: Vec<(f64, f64)> =
        elements.iter().filter_map(|&n| Some((n as f64, table.rate("copy", p, "device_copy", n, "device")?))).collect();
    if !copy.is_empty() {
        gbps.push(Series::reference("device copy (read + write)", copy));
    }
    // FP32 titles are as before FP64; FP64 ones say so.
    let (suffix, titled) = (file_suffix(p), if p == "f32" { String::new() } else { format!(" {}", upper(p)) });
    vec![
        (
            format!("fusion_speedup_{op}{suffix}.png"),
            LinePlot {
                title: format!("{op}{titled}: speedup over the hand-written reduction, {device}"),
                subtitle: Some(
                    "device time, result left on the device, CUDA-graph batches; > 1 is faster than hand-written; error bars: \
                     the least to the most favourable pairing of the two variants' repetitions"
                        .into(),
                ),
                x_label: format!("elements n ({})", upper(p)),
                y_label: "speedup (hand time / variant time)".into(),
                x_axis: Axis::Log2,
                y_axis: Axis::Linear,
                series: speed,
                y_max: None,
                note: (op == "sum").then(|| "sum has no map: nothing to unfuse".to_string()),
                ..LinePlot::default()
            },
        ),
        (
            format!("fusion_gbps_{op}{suffix}.png"),
            LinePlot {
                title: format!("{op}{titled}: bandwidth, {device}"),
                subtitle: Some(
                    "GB/s = bytes the operation reads / device time (median; error bars: the slowest to the fastest \
                     repetition); the copy line counts its read and its write"
                        .into(),
                ),
                x_label: format!("elements n ({})", upper(p)),
                y_label: "GB/s (log scale)".into(),
                x_axis: Axis::Log2,
                y_axis: Axis::Log10,
                series: gbps,
                y_max: None,
                note: Some(
                    "back-to-back launches find inputs that fit the L2 cache there (the l2_resident column): small sizes \
                     can beat the HBM bandwidth"
                        .into(),
                ),
                ..LinePlot::default()
            },
        ),
    ]
}

/// The seed's two claims side by side with ours in precision `p`: fusion (fused over unfused) and multi-staging
/// (staged over generic), device time, one line per operation; none without such ratios.
fn ratios_plot(table: &Table, p: &str, device: &str) -> Option<(String, LinePlot)> {
    let mut ratios = Vec::new();
    for (what, a, b) in [("fused / unfused", "fused", "unfused"), ("staged / generic", "fused_staged", "fused")] {
        for op in OPERATIONS {
            let pts: Vec<(f64, f64)> = table
                .elements(op, p)
                .iter()
                .filter_map(|&n| {
                    Some((n as f64, table.time(op, p, b, n, "device")? / table.time(op, p, a, n, "device")?))
                })
                .collect();
            let spread: Vec<(f64, f64, f64)> = table
                .elements(op, p)
                .iter()
                .filter_map(|&n| {
                    let (lo, hi) = table.speedup_spread((op, p, b, n, "device"), (op, p, a, n, "device"))?;
                    Some((n as f64, lo, hi))
                })
                .collect();
            if !pts.is_empty() {
                ratios.push(Series::line(format!("{op}: {what}"), pts).with_spread(spread));
            }
        }
    }
    let all: Vec<usize> = OPERATIONS.iter().flat_map(|op| table.elements(op, p)).collect();
    let (false, Some(&lo), Some(&hi)) = (ratios.is_empty(), all.iter().min(), all.iter().max()) else { return None };
    let (lo, hi) = (lo as f64, hi as f64);
    ratios.push(Series::reference("seed: multi-staging up to 1.35x (PACXX)", vec![(lo, 1.35), (hi, 1.35)]));
    ratios.push(Series::reference("1.0 = no gain", vec![(lo, 1.0), (hi, 1.0)]));
    let titled = if p == "f32" { String::new() } else { format!(" ({})", upper(p)) };
    Some((
        format!("fusion_ratios{}.png", file_suffix(p)),
        LinePlot {
            title: format!("Fusion and multi-staging gains{titled}, {device}"),
            subtitle: Some(
                "speed ratio from device times; the seed: fused ≈ Thrust/CUDA, unfused (two kernels) slower, \
                 staging up to 1.35x"
                    .into(),
            ),
            x_label: format!("elements n ({})", upper(p)),
            y_label: "speedup (time of the second / time of the first)".into(),
            x_axis: Axis::Log2,
            y_axis: Axis::Linear,
            series: ratios,
            y_max: None,
            note: None,
            ..LinePlot::default()
        },
    ))
}

/// FP64 beside FP32: for each operation, the fused kernel's and the vendor BLAS's FP64 GB/s over their FP32 GB/s
/// at the same n (1.0: FP64 moves its twice-as-many bytes at the same rate, as a bandwidth-bound reduction should;
/// 2.0: it takes as long as FP32, as a launch-bound one does). None unless the rows hold both precisions at a size.
fn precision_plot(table: &Table, vendor: &str, device: &str) -> Option<(String, LinePlot)> {
    let mut series = Vec::new();
    let mut all = Vec::new();
    for op in OPERATIONS {
        let routine = if op == "dot" { "ddot / sdot" } else { "dasum / sasum" };
        for (v, name) in [("fused", "fused".to_string()), ("vendor", format!("{vendor} {routine}"))] {
            let pts: Vec<(f64, f64)> = table
                .elements(op, "f64")
                .iter()
                .filter_map(|&n| {
                    let r = table.rate(op, "f64", v, n, "device")? / table.rate(op, "f32", v, n, "device")?;
                    all.push(n);
                    Some((n as f64, r))
                })
                .collect();
            let spread: Vec<(f64, f64, f64)> = table
                .elements(op, "f64")
                .iter()
                .filter_map(|&n| {
                    let (lo64, hi64) = table.rate_spread(op, "f64", v, n, "device")?;
                    let (lo32, hi32) = table.rate_spread(op, "f32", v, n, "device")?;
                    Some((n as f64, lo64 / hi32, hi64 / lo32))
                })
                .collect();
            if !pts.is_empty() {
                series.push(Series::line(format!("{op}: {name}"), pts).with_spread(spread));
            }
        }
    }
    let (Some(&lo), Some(&hi)) = (all.iter().min(), all.iter().max()) else { return None };
    let (lo, hi) = (lo as f64, hi as f64);
    series.push(Series::reference("1.0 = same bandwidth (bound by memory)", vec![(lo, 1.0), (hi, 1.0)]));
    series.push(Series::reference("2.0 = same time (bound by launch and latency)", vec![(lo, 2.0), (hi, 2.0)]));
    Some((
        "fusion_precision.png".to_string(),
        LinePlot {
            title: format!("FP64 beside FP32: bandwidth ratio at the same n, {device}"),
            subtitle: Some(
                "FP64 GB/s / FP32 GB/s, device time; GB/s counts 8 bytes per FP64 element and 4 per FP32 one".into(),
            ),
            x_label: "elements n".into(),
            y_label: "FP64 GB/s / FP32 GB/s".into(),
            x_axis: Axis::Log2,
            y_axis: Axis::Linear,
            series,
            y_max: None,
            note: Some(format!("vendor: {vendor} ddot/dasum over sdot/sasum (sum: dasum over sasum, a stand-in)")),
            ..LinePlot::default()
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(op: &str, p: &str, v: &str, n: usize, t: f64) -> BTreeMap<String, String> {
        let bytes = if p == "f64" { 8.0 } else { 4.0 };
        BTreeMap::from([
            ("status".to_string(), "ok".to_string()),
            ("platform".into(), "nvidia".into()),
            ("device".into(), "H100".into()),
            ("arch".into(), "sm_90".into()),
            ("wave_size".into(), "32".into()),
            ("operation".into(), op.into()),
            ("precision".into(), p.into()),
            ("variant".into(), v.into()),
            ("elements".into(), n.to_string()),
            ("measure".into(), "device".into()),
            ("time_ms_median".into(), t.to_string()),
            ("gbps".into(), (bytes * n as f64 / (t * 1e6)).to_string()),
        ])
    }

    /// FP32 plots keep their names and titles; FP64 gets its own set, and the precision plot divides FP64's GB/s
    /// by FP32's at the same size.
    #[test]
    fn each_precision_has_its_plots_and_fp64_is_drawn_beside_fp32() {
        let mut rows = Vec::new();
        for (p, scale) in [("f32", 1.0), ("f64", 2.0)] {
            for v in VARIANTS {
                rows.push(row("dot", p, v, 1 << 20, 0.01 * scale));
            }
            rows.push(row("copy", p, "device_copy", 1 << 20, 0.01 * scale));
        }
        // The FP64 fused dot at 2^21 only: no FP32 to set it beside.
        rows.push(row("dot", "f64", "fused", 1 << 21, 0.04));
        let plots = plots(&rows);
        let names: Vec<&str> = plots.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "fusion_speedup_dot.png",
                "fusion_gbps_dot.png",
                "fusion_ratios.png",
                "fusion_speedup_dot_f64.png",
                "fusion_gbps_dot_f64.png",
                "fusion_ratios_f64.png",
                "fusion_precision.png"
            ]
        );
        assert_eq!(plots[0].1.title, "dot: speedup over the hand-written reduction, H100 (sm_90, warp32)");
        assert_eq!(plots[3].1.title, "dot FP64: speedup over the hand-written reduction, H100 (sm_90, warp32)");
        assert_eq!(plots[3].1.x_label, "elements n (FP64)");
        assert!(plots[4].1.series.iter().any(|s| s.label == "cuBLAS ddot"), "{:?}", plots[4].1.series);
        assert!(plots[1].1.series.iter().any(|s| s.label == "cuBLAS sdot"), "{:?}", plots[1].1.series);
        // Twice the bytes in twice the time: the same bandwidth, 1.0, where both precisions were measured.
        let fused = plots[6].1.series.iter().find(|s| s.label == "dot: fused").expect("a fused line");
        assert_eq!(fused.points.len(), 1);
        assert!((fused.points[0].1 - 1.0).abs() < 1e-9, "{:?}", fused.points);
        // FP32 alone: no FP64 plots and no precision plot.
        let f32_only: Vec<_> = rows.iter().filter(|r| r["precision"] == "f32").cloned().collect();
        assert_eq!(plots_names(&f32_only), ["fusion_speedup_dot.png", "fusion_gbps_dot.png", "fusion_ratios.png"]);
    }

    fn plots_names(rows: &[BTreeMap<String, String>]) -> Vec<String> {
        plots(rows).into_iter().map(|(n, _)| n).collect()
    }
}
