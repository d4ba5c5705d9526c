//! The fusion experiment's plots, drawn from its rows alone (no files written): per operation, the speedup over
//! the hand-written reduction and the bandwidth against the device copy, and the seed's two gains side by side.

use std::collections::BTreeMap;

use super::derived::Table;
use super::{OPERATIONS, VARIANTS};
use crate::report::plot::{Axis, LinePlot, Series};

/// The plots: per operation, speedup over `hand` (device time) vs size, one line per variant, 1.0 marked; GB/s vs
/// size with the copy's bandwidth as a reference line; and the fusion and multi-staging gains of every operation.
pub fn plots(rows: &[BTreeMap<String, String>]) -> Vec<(String, LinePlot)> {
    let ok: Vec<&BTreeMap<String, String>> = crate::experiments::ok_rows(rows).collect();
    let Some(first) = ok.first() else { return Vec::new() };
    let get = |c: &str| first.get(c).cloned().unwrap_or_default();
    let wave = if get("wave_size") == "64" { "wave64" } else { "warp32" };
    let vendor = if get("platform") == "amd" { "rocBLAS" } else { "cuBLAS" };
    let device = format!("{} ({}, {wave})", get("device"), get("arch"));
    let table = Table::new(&ok);
    let mut out = Vec::new();
    for op in OPERATIONS {
        let elements = table.elements(op);
        if elements.is_empty() {
            continue;
        }
        let label = |v: &str| match (v, op) {
            ("vendor", "sum") => format!("{vendor} sasum (stand-in: same bytes)"),
            ("vendor", "dot") => format!("{vendor} sdot"),
            ("vendor", _) => format!("{vendor} sasum"),
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
                    Some((n as f64, table.time(op, "hand", n, "device")? / table.time(op, v, n, "device")?))
                })
                .collect();
            let g: Vec<(f64, f64)> =
                elements.iter().filter_map(|&n| Some((n as f64, table.rate(op, v, n, "device")?))).collect();
            let make = if v == "fused" { Series::focus } else { Series::line };
            if !s.is_empty() && v != "hand" {
                speed.push(make(label(v), s));
            }
            if !g.is_empty() {
                gbps.push(make(label(v), g));
            }
        }
        let (lo, hi) = (elements[0] as f64, elements[elements.len() - 1] as f64);
        speed.push(Series::reference("1.0 = hand-written", vec![(lo, 1.0), (hi, 1.0)]));
        let copy: Vec<(f64, f64)> = elements
            .iter()
            .filter_map(|&n| Some((n as f64, table.rate("copy", "device_copy", n, "device")?)))
            .collect();
        if !copy.is_empty() {
            gbps.push(Series::reference("device copy (read + write)", copy));
        }
        out.push((
            format!("fusion_speedup_{op}.png"),
            LinePlot {
                title: format!("{op}: speedup over the hand-written reduction, {device}"),
                subtitle: Some(
                    "device time, result left on the device, CUDA-graph batches; > 1 is faster than hand-written"
                        .into(),
                ),
                x_label: "elements n (FP32)".into(),
                y_label: "speedup (hand time / variant time)".into(),
                x_axis: Axis::Log2,
                y_axis: Axis::Linear,
                series: speed,
                y_max: None,
                note: (op == "sum").then(|| "sum has no map: nothing to unfuse".to_string()),
            },
        ));
        out.push((
            format!("fusion_gbps_{op}.png"),
            LinePlot {
                title: format!("{op}: bandwidth, {device}"),
                subtitle: Some(
                    "GB/s = bytes the operation reads / device time; the copy line counts its read and its write".into(),
                ),
                x_label: "elements n (FP32)".into(),
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
            },
        ));
    }
    // The seed's two claims side by side with ours: fusion (fused over unfused) and multi-staging (staged over
    // generic), device time, one line per operation.
    let mut ratios = Vec::new();
    for (what, a, b) in [("fused / unfused", "fused", "unfused"), ("staged / generic", "fused_staged", "fused")] {
        for op in OPERATIONS {
            let pts: Vec<(f64, f64)> = table
                .elements(op)
                .iter()
                .filter_map(|&n| Some((n as f64, table.time(op, b, n, "device")? / table.time(op, a, n, "device")?)))
                .collect();
            if !pts.is_empty() {
                ratios.push(Series::line(format!("{op}: {what}"), pts));
            }
        }
    }
    let all: Vec<usize> = OPERATIONS.iter().flat_map(|op| table.elements(op)).collect();
    if let (false, Some(&lo), Some(&hi)) = (ratios.is_empty(), all.iter().min(), all.iter().max()) {
        let (lo, hi) = (lo as f64, hi as f64);
        ratios.push(Series::reference("seed: multi-staging up to 1.35x (PACXX)", vec![(lo, 1.35), (hi, 1.35)]));
        ratios.push(Series::reference("1.0 = no gain", vec![(lo, 1.0), (hi, 1.0)]));
        out.push((
            "fusion_ratios.png".to_string(),
            LinePlot {
                title: format!("Fusion and multi-staging gains, {device}"),
                subtitle: Some(
                    "speed ratio from device times; the seed: fused ≈ Thrust/CUDA, unfused (two kernels) slower, \
                     staging up to 1.35x"
                        .into(),
                ),
                x_label: "elements n (FP32)".into(),
                y_label: "speedup (time of the second / time of the first)".into(),
                x_axis: Axis::Log2,
                y_axis: Axis::Linear,
                series: ratios,
                y_max: None,
                note: None,
            },
        ));
    }
    out
}
