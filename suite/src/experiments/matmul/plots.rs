//! Matmul's plots, drawn from the rows of its CSV, one set per precision: GFLOP/s vs size, GFLOP/s vs tile M, % of
//! the vendor BLAS and % of each kernel's unit's peak.

use std::collections::BTreeMap;

use super::autotune::AUTOTUNE;
use super::headlines::vendor_note;
use super::rungs::VARIANTS;
use crate::experiments::rate_spread;
use crate::precision::Precision;
use crate::report::plot::{Axis, LegendEntry, LinePlot, Series, SeriesKind};

/// The plots of a matmul CSV, per precision it holds (FP32: `matmul-*.png`, as before FP64; FP64:
/// `matmul-f64-*.png`): GFLOP/s vs size, GFLOP/s vs tile M, % of the vendor BLAS vs size, and % of the peak of each
/// line's unit in that precision vs size. Only `ok` rows of square shapes are drawn (the x axis is N for M = N = K).
/// The size plots draw one line per family of the ladder (its fastest kernel at each size, e.g. the best of the
/// double_buffer shapes) and one for the autotune step: some 30 kernels would not fit one legend, and the CSV keeps
/// every row. A family on the matrix units says so in its label.
pub fn plots(rows: &[BTreeMap<String, String>]) -> Vec<(String, LinePlot)> {
    let mut out = Vec::new();
    for precision in Precision::ALL {
        let of: Vec<BTreeMap<String, String>> =
            rows.iter().filter(|r| Precision::of_row(r) == precision).cloned().collect();
        out.extend(plots_of(&of, precision));
        out.extend(shapes_plot(&of, precision));
    }
    out
}

/// `matmul-shapes.png` (`matmul-f64-shapes.png`): where a CSV holds shapes other than squares (odd, skinny,
/// K-heavy: the size plots draw only M = N = K), each shape the vendor BLAS was timed at is a slot on the x axis,
/// named M x N x K, in the sweep's order, with the fastest hand kernel there as % of the vendor (its value written
/// beside it), the fastest on the vector units apart where some kernel ran on the matrix units, and the autotune
/// step's pick.
fn shapes_plot(rows: &[BTreeMap<String, String>], precision: Precision) -> Option<(String, LinePlot)> {
    let num = crate::experiments::num;
    let ok: Vec<&BTreeMap<String, String>> = crate::experiments::ok_rows(rows).collect();
    let shape = |r: &BTreeMap<String, String>| Some((num(r, "m")? as u64, num(r, "n")? as u64, num(r, "k")? as u64));
    if ok.iter().filter_map(|r| shape(r)).all(|(m, n, k)| m == n && n == k) {
        return None;
    }
    let first = ok.first()?;
    let (vendor, vendor_label, title_device) = run_facts(first);
    let kernel = |r: &BTreeMap<String, String>| r.get("kernel").cloned().unwrap_or_default();
    let mut shapes: Vec<(u64, u64, u64)> = Vec::new();
    for r in ok.iter().filter(|r| kernel(r) == vendor) {
        if let Some(s) = shape(r).filter(|s| !shapes.contains(s)) {
            shapes.push(s);
        }
    }
    if shapes.is_empty() {
        return None;
    }
    let vendor_at = |s: (u64, u64, u64)| {
        ok.iter().find(|r| kernel(r) == vendor && shape(r) == Some(s)).and_then(|r| num(r, "gflops"))
    };
    let share = |r: &BTreeMap<String, String>| Some(100.0 * num(r, "gflops")? / vendor_at(shape(r)?)?);
    // The fastest row at each shape among those `pick` keeps, as a series with its spread.
    let fastest = |label: &str, kind: SeriesKind, pick: &dyn Fn(&BTreeMap<String, String>) -> bool| {
        let (mut points, mut spread) = (Vec::new(), Vec::new());
        for (i, &s) in shapes.iter().enumerate() {
            let best = ok
                .iter()
                .filter(|r| shape(r) == Some(s) && pick(r))
                .filter_map(|r| Some((share(r)?, *r)))
                .max_by(|a, b| a.0.total_cmp(&b.0));
            if let Some((y, r)) = best {
                points.push((i as f64, y));
                if let Some((lo, hi)) = rate_spread(r, y) {
                    spread.push((i as f64, lo, hi));
                }
            }
        }
        Series::of_kind(kind, label, points).with_spread(spread)
    };
    let hand = |r: &BTreeMap<String, String>| ![vendor, AUTOTUNE].contains(&kernel(r).as_str());
    let on_matrix = |r: &BTreeMap<String, String>| r.get("unit").is_some_and(|u| u == "matrix");
    let any_matrix = ok.iter().any(|r| hand(r) && on_matrix(r));
    let best = fastest("fastest hand kernel", SeriesKind::Points, &hand);
    let labels =
        best.points.iter().map(|&(x, y)| crate::report::plot::PointLabel { x, y, text: format!("{y:.0}%") }).collect();
    // Each series styled here, since they are drawn in their order and the legend lists them so: the autotune
    // pick (often the fastest kernel itself, timed again) first and hollow, so the fastest drawn over it shows
    // inside its outline.
    let style = |i: usize, hollow: bool| {
        let (color, marker) = crate::report::plot::measured_style(i);
        crate::report::plot::Style { color, marker, hollow }
    };
    let mut series = vec![
        fastest("autotune (the plan it picked, timed)", SeriesKind::Points, &|r| kernel(r) == AUTOTUNE)
            .styled(style(1, true)),
        best.styled(style(0, false)),
    ];
    if any_matrix {
        series.push(
            fastest("fastest on the vector units", SeriesKind::Points, &|r| hand(r) && !on_matrix(r))
                .styled(style(2, false)),
        );
    }
    series.retain(|s| !s.points.is_empty());
    let last = (shapes.len() - 1) as f64;
    series.push(Series::reference(format!("{vendor_label} = 100%"), vec![(0.0, 100.0), (last, 100.0)]));
    let highest = series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).fold(0.0, f64::max);
    Some((
        format!("{}shapes.png", file_prefix(precision)),
        LinePlot {
            title: format!("{} matmul at every shape, % of {vendor_label}, on {title_device}", precision.label()),
            subtitle: Some(
                "C = A*B, row-major, M x N x K; the fastest verified hand kernel at each shape; median of the timed \
                 repetitions, error bars from the slowest to the fastest"
                    .into(),
            ),
            x_label: "shape M x N x K, in the sweep's order".into(),
            y_label: format!("% of {vendor_label} GFLOP/s at the same shape"),
            x_axis: Axis::Linear,
            y_axis: Axis::Linear,
            series,
            y_max: Some(highest.clamp(110.0, PERCENT_TOP)),
            note: Some(vendor_note(&ok)),
            labels,
            x_categories: shapes.iter().map(|(m, n, k)| format!("{m} x {n} x {k}")).collect(),
            ..LinePlot::default()
        },
    ))
}

/// What a CSV's rows say of their run, from one of them: the vendor BLAS's kernel name and label, and the device
/// as plot titles name it (`NVIDIA H200 (sm_90, warp32)`).
fn run_facts(row: &BTreeMap<String, String>) -> (&'static str, &'static str, String) {
    let get = |c: &str| row.get(c).cloned().unwrap_or_default();
    let (vendor, label) = if get("platform") == "amd" { ("rocblas", "rocBLAS") } else { ("cublas", "cuBLAS") };
    let wave = if get("wave_size") == "64" { "wave64" } else { "warp32" };
    (vendor, label, format!("{} ({}, {wave})", get("device"), get("arch")))
}

/// The start of a precision's plot files: FP32's keep the names they had before FP64 (`matmul-*.png`).
fn file_prefix(precision: Precision) -> &'static str {
    match precision {
        Precision::F32 => "matmul-",
        Precision::F64 => "matmul-f64-",
    }
}

/// The plots of the rows of one precision.
fn plots_of(rows: &[BTreeMap<String, String>], precision: Precision) -> Vec<(String, LinePlot)> {
    let num = crate::experiments::num;
    let ok: Vec<&BTreeMap<String, String>> =
        crate::experiments::ok_rows(rows).filter(|r| r.get("m") == r.get("n") && r.get("n") == r.get("k")).collect();
    let Some(first) = ok.first() else { return Vec::new() };
    let (vendor, vendor_label, title_device) = run_facts(first);
    let note = Some(vendor_note(&ok));
    // Families in ladder order, then the autotune step, then anything else the CSV holds (e.g. from a newer suite)
    // as a family of its own.
    let family_of = |kernel: &str| -> String {
        VARIANTS.iter().find(|v| v.name == kernel).map_or_else(|| kernel.to_string(), |v| v.family.to_string())
    };
    let mut kernels: Vec<String> = Vec::new();
    for f in VARIANTS.iter().map(|v| v.family.to_string()).chain([AUTOTUNE.to_string()]) {
        if !kernels.contains(&f) {
            kernels.push(f);
        }
    }
    let mut members: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in &ok {
        let k = r.get("kernel").cloned().unwrap_or_default();
        if k == vendor {
            continue;
        }
        let f = family_of(&k);
        if !kernels.contains(&f) {
            kernels.push(f.clone());
        }
        let m = members.entry(f).or_default();
        if !m.contains(&k) {
            m.push(k);
        }
    }
    // A family's rows drawn: its fastest at each size.
    let best_rows = |family: &str| -> Vec<(f64, &BTreeMap<String, String>)> {
        let mut best: BTreeMap<u64, (f64, &BTreeMap<String, String>)> = BTreeMap::new();
        for r in ok.iter().filter(|r| r.get("kernel").is_some_and(|k| k != vendor && family_of(k) == family)) {
            let (Some(n), Some(g)) = (num(r, "n"), num(r, "gflops")) else { continue };
            if best.get(&(n as u64)).is_none_or(|(b, _)| g > *b) {
                best.insert(n as u64, (g, r));
            }
        }
        best.into_iter().map(|(n, (_, r))| (n as f64, r)).collect()
    };
    let vendor_rows = || -> Vec<(f64, &BTreeMap<String, String>)> {
        let mut rows: Vec<(f64, &BTreeMap<String, String>)> = ok
            .iter()
            .filter(|r| r.get("kernel").map(String::as_str) == Some(vendor))
            .filter_map(|r| Some((num(r, "n")?, *r)))
            .collect();
        rows.sort_by(|a, b| a.0.total_cmp(&b.0));
        rows
    };
    // A series of rows, `y` mapping a row to its plotted value (a rate, or a share of a fixed reference), with the
    // spread of its repetitions as error bars.
    let drawn = |label: String,
                 rows: Vec<(f64, &BTreeMap<String, String>)>,
                 y: &dyn Fn(&BTreeMap<String, String>) -> Option<f64>| {
        let points = rows.iter().filter_map(|(n, r)| Some((*n, y(r)?))).collect();
        let spread = rows
            .iter()
            .filter_map(|(n, r)| {
                let (lo, hi) = rate_spread(r, y(r)?)?;
                Some((*n, lo, hi))
            })
            .collect();
        Series::line(label, points).with_spread(spread)
    };
    let series_of = |family: &str, y: &dyn Fn(&BTreeMap<String, String>) -> Option<f64>| -> Vec<(f64, f64)> {
        best_rows(family).into_iter().filter_map(|(n, r)| Some((n, y(r)?))).collect()
    };
    // A family whose rows ran on the matrix units says so (the others are on the vector or packed path).
    let on_matrix = |family: &str| {
        ok.iter().any(|r| {
            r.get("kernel").is_some_and(|k| k != vendor && family_of(k) == family)
                && r.get("unit").is_some_and(|u| u == "matrix")
        })
    };
    let family_label = |family: &str| -> String {
        let label = match members.get(family).map_or(0, Vec::len) {
            0 | 1 => {
                members.get(family).and_then(|m| m.first()).map_or_else(|| family.to_string(), |k| kernel_label(k))
            }
            n => format!("{family} (best of {n})"),
        };
        if on_matrix(family) {
            format!("{label}, matrix units")
        } else {
            label
        }
    };
    let gflops = |r: &BTreeMap<String, String>| num(r, "gflops");
    // Fastest at the largest size first: the legend then lists the lines in the order they end at the right edge,
    // which untangles crossing lines, and both plots give each family the same colour (the % of the vendor at one
    // size orders them as their GFLOP/s do). Families without points go last, in ladder order.
    let at_largest = |k: &str| series_of(k, &gflops).last().map(|&(n, g)| (n, g));
    kernels.sort_by(|a, b| match (at_largest(a), at_largest(b)) {
        (Some(pa), Some(pb)) => pb.0.total_cmp(&pa.0).then(pb.1.total_cmp(&pa.1)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    let vendor_at = |n: f64| {
        ok.iter()
            .find(|r| r.get("kernel").map(String::as_str) == Some(vendor) && num(r, "n") == Some(n))
            .and_then(|r| num(r, "gflops"))
    };

    let mut by_size: Vec<Series> = kernels
        .iter()
        .map(|k| drawn(family_label(k), best_rows(k), &gflops))
        .filter(|s| !s.points.is_empty())
        .collect();
    let vendor = drawn(vendor_label.into(), vendor_rows(), &gflops);
    if !vendor.points.is_empty() {
        by_size.push(Series { kind: SeriesKind::Reference, ..vendor });
    }

    let mut sizes: Vec<f64> = ok.iter().filter_map(|r| num(r, "n")).collect();
    sizes.sort_by(f64::total_cmp);
    sizes.dedup();
    // One line per size: with many (odd sizes among them), the powers of two, and the note names the rest.
    let tile_sizes: Vec<f64> =
        ok.iter().filter(|r| num(r, "tile_m").is_some()).filter_map(|r| num(r, "n")).fold(Vec::new(), |mut v, n| {
            if !v.contains(&n) {
                v.push(n);
            }
            v
        });
    let (tile_lines, tile_left_out): (Vec<f64>, Vec<f64>) = if tile_sizes.len() > MAX_LEGEND {
        tile_sizes.iter().partition(|n| (**n as u64).is_power_of_two())
    } else {
        (tile_sizes.clone(), Vec::new())
    };
    let by_tile: Vec<Series> = sizes
        .iter()
        .filter(|n| tile_lines.contains(n))
        .map(|&n| {
            let mut rows: Vec<(f64, &BTreeMap<String, String>)> =
                ok.iter().filter(|r| num(r, "n") == Some(n)).filter_map(|r| Some((num(r, "tile_m")?, *r))).collect();
            rows.sort_by(|a, b| a.0.total_cmp(&b.0));
            drawn(format!("N = {n}"), rows, &gflops)
        })
        .filter(|s| !s.points.is_empty())
        .collect();

    let mut percent: Vec<Series> = kernels
        .iter()
        .map(|k| drawn(family_label(k), best_rows(k), &|r| Some(100.0 * num(r, "gflops")? / vendor_at(num(r, "n")?)?)))
        .filter(|s| !s.points.is_empty())
        .collect();
    if let (false, Some(lo), Some(hi)) = (percent.is_empty(), sizes.first(), sizes.last()) {
        let label = format!("{vendor_label} = 100%");
        percent.push(Series::of_kind(SeriesKind::Reference, label, vec![(*lo, 100.0), (*hi, 100.0)]));
    }

    // % of the peak of each row's unit in this precision (`unit_peak_tflops`), the vendor BLAS's too.
    let of_peak = |r: &BTreeMap<String, String>| Some(100.0 * num(r, "gflops")? / (num(r, "unit_peak_tflops")? * 1e3));
    let mut peak_share: Vec<Series> = kernels
        .iter()
        .map(|k| drawn(family_label(k), best_rows(k), &of_peak))
        .filter(|s| !s.points.is_empty())
        .collect();
    let vendor_peak = drawn(vendor_label.into(), vendor_rows(), &of_peak);
    if !vendor_peak.points.is_empty() {
        peak_share.push(Series { kind: SeriesKind::Reference, ..vendor_peak });
    }
    // The peaks of the units the rows ran on, on the GFLOP/s plot (as lines, not only in the note).
    let mut peaks: Vec<(String, f64)> = Vec::new();
    for r in &ok {
        let unit = r.get("unit").filter(|u| !u.is_empty()).map_or("vector", String::as_str);
        let tflops = num(r, "unit_peak_tflops")
            .or_else(|| (unit == "vector").then(|| num(r, "fp32_vector_peak_tflops")).flatten());
        if let Some(t) = tflops.filter(|t| *t > 0.0) {
            let label = format!("{} {unit} peak {t} TFLOP/s", precision.label());
            if !peaks.iter().any(|(l, _)| *l == label) {
                peaks.push((label, t));
            }
        }
    }
    if let (Some(lo), Some(hi)) = (sizes.first(), sizes.last()) {
        for (label, t) in peaks {
            by_size.push(Series::reference(label, vec![(*lo, t * 1e3), (*hi, t * 1e3)]));
        }
    }

    let prefix = file_prefix(precision);
    // The family each line's label stands for, to group a long legend by the ladder's stages.
    let label_family: Vec<(String, String)> = kernels.iter().map(|k| (family_label(k), k.clone())).collect();
    let legend_of = |series: &[Series]| -> Option<Vec<LegendEntry>> {
        if series.len() <= MAX_LEGEND {
            return None;
        }
        let stage_of = |s: &Series| -> &'static str {
            if !s.is_measured() {
                return "references";
            }
            let family = label_family.iter().find(|(l, _)| *l == s.label).map_or(s.label.as_str(), |(_, f)| f.as_str());
            STAGES.iter().find(|(_, families)| families.contains(&family)).map_or("others", |(stage, _)| stage)
        };
        let mut entries = Vec::new();
        for stage in STAGES.iter().map(|(stage, _)| *stage).chain(["others", "references"]) {
            let members: Vec<&Series> = series.iter().filter(|s| stage_of(s) == stage).collect();
            if !members.is_empty() {
                entries.push(LegendEntry::heading(format!("{stage}:")));
                entries.extend(members.iter().map(|s| LegendEntry::series(s.label.clone())));
            }
        }
        Some(entries)
    };
    let plot = |file: &str, what: &str, x_label: &str, axes: (Axis, Axis), y_label: &str, series: Vec<Series>| {
        (
            format!("{prefix}{}", file.trim_start_matches("matmul-")),
            LinePlot {
                legend: legend_of(&series),
                title: format!("{} matmul {what} on {title_device}", precision.label()),
                subtitle: Some(
                    "C = A*B, row-major, M = N = K; median of the timed repetitions, error bars from the slowest to \
                     the fastest; every point verified"
                        .into(),
                ),
                x_label: x_label.into(),
                y_label: y_label.into(),
                x_axis: axes.0,
                y_axis: axes.1,
                series,
                note: note.clone(),
                y_max: None,
                ..LinePlot::default()
            },
        )
    };
    let mut out = Vec::new();
    let size_label = "matrix size N (M = N = K)";
    if !by_size.is_empty() {
        // The ladder spans three orders of magnitude (naive to vendor BLAS): a log y axis keeps every rung visible.
        let axes = (Axis::Log2, Axis::Log10);
        out.push(plot(
            "matmul-gflops-vs-size.png",
            "GFLOP/s vs size",
            size_label,
            axes,
            "GFLOP/s (log scale)",
            by_size,
        ));
    }
    if !by_tile.is_empty() {
        let mut left_out = tile_left_out;
        left_out.sort_by(f64::total_cmp);
        let left_out: Vec<String> = left_out.iter().map(|n| n.to_string()).collect();
        let (file, mut p) = plot(
            "matmul-gflops-vs-tile.png",
            "tiled kernel vs tile size",
            "tile size M (M x M items per group, M x M LDS tiles)",
            (Axis::Log2, Axis::Linear),
            "GFLOP/s",
            by_tile,
        );
        if !left_out.is_empty() {
            let line = format!(
                "Sizes that are not powers of two ({}) are left out of this plot to keep it readable; the CSV has them.",
                left_out.join(", ")
            );
            p.note = Some(p.note.map_or(line.clone(), |n| format!("{n}\n{line}")));
        }
        out.push((file, p));
    }
    if !percent.is_empty() {
        // The y axis stops a little above the vendor's 100%, and at most at PERCENT_TOP: one outlier (a small size
        // whose vendor call is slow to start) would otherwise squash every other kernel into the bottom band.
        let highest = percent.iter().flat_map(|s| s.points.iter().map(|p| p.1)).fold(0.0, f64::max);
        let top = highest.clamp(110.0, PERCENT_TOP);
        let clipped = percent.iter().flat_map(|s| &s.points).filter(|p| p.1 > top).count();
        let (file, mut p) = plot(
            "matmul-percent-of-vendor.png",
            &format!("% of {vendor_label}"),
            size_label,
            (Axis::Log2, Axis::Linear),
            &format!("% of {vendor_label} GFLOP/s"),
            percent,
        );
        p.y_max = Some(top);
        if clipped > 0 {
            let line = format!("{clipped} point(s) above {top:.0}% run off the top edge; the CSV has their values");
            p.note = Some(p.note.map_or(line.clone(), |n| format!("{n}\n{line}")));
        }
        out.push((file, p));
    }
    if !peak_share.is_empty() {
        let (file, mut p) = plot(
            "matmul-percent-of-peak.png",
            &format!("as % of each unit's {} peak", precision.label()),
            size_label,
            (Axis::Log2, Axis::Linear),
            &format!("% of the {} peak of the kernel's unit", precision.label()),
            peak_share,
        );
        p.y_max = Some(100.0);
        out.push((file, p));
    }
    out
}

/// Most lines a matmul plot lists one by one; with more, its legend is grouped by the ladder's stages.
const MAX_LEGEND: usize = 12;

/// The ladder's stages and their families, in the legend's order when it is grouped.
const STAGES: [(&str, &[&str]); 5] = [
    ("the seed's ladder", &["naive", "accumulator", "tiled", "coalesced"]),
    ("register-blocked", &["blocktile_1d", "blocktile_2d", "vectorized", "warptile", "double_buffer"]),
    ("K split across groups", &["splitk", "splitk_atomic", "streamk"]),
    ("matrix units", &["dmma", "mfma"]),
    ("picked by measurement", &["autotune"]),
];

/// The highest % of the vendor BLAS the %-of-vendor plot shows, so an outlier cannot stretch its y axis.
const PERCENT_TOP: f64 = 150.0;

/// Legend label of a kernel: `tiled_m16` reads `tiled M=16`.
fn kernel_label(name: &str) -> String {
    match name.strip_prefix("tiled_m") {
        Some(m) => format!("tiled M={m}"),
        None => name.to_string(),
    }
}

/// The family a matmul kernel belongs to on the roofline: its name up to its shape suffix
/// (`double_buffer_64x128x8_t128` → `double_buffer`, `tiled_m16` → `tiled`, `splitk_atomic_64x128x16_t128` →
/// `splitk_atomic`).
pub(super) fn kernel_family(kernel: &str) -> String {
    let parts: Vec<&str> = kernel.split('_').collect();
    let shape = |p: &str| {
        (p.contains('x') && p.chars().all(|c| c.is_ascii_digit() || c == 'x'))
            || (p.len() > 1 && p.starts_with(['m', 't']) && p[1..].chars().all(|c| c.is_ascii_digit()))
            || p == "unaligned"
    };
    let end = parts.iter().position(|p| shape(p)).unwrap_or(parts.len()).max(1);
    parts[..end].join("_")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::matmul::headlines::headlines;

    #[test]
    fn size_plots_draw_each_familys_fastest_kernel_and_headlines_name_the_autotune_pick() {
        let row = |kernel: &str, n: u32, gflops: f64, pick: &str| -> BTreeMap<String, String> {
            [
                ("platform", "nvidia"),
                ("device", "Test GPU"),
                ("arch", "sm_90"),
                ("wave_size", "32"),
                ("kernel", kernel),
                ("tile_m", ""),
                ("pick", pick),
                ("status", "ok"),
            ]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .chain(["m", "n", "k"].iter().map(|c| (c.to_string(), n.to_string())))
            .chain([("gflops".to_string(), gflops.to_string())])
            .collect()
        };
        let rows = vec![
            row("cublas", 512, 2000.0, ""),
            row("double_buffer", 512, 300.0, ""),
            row("double_buffer_64x128x8_t128", 512, 700.0, ""),
            row("splitk_128x64x16_t128", 512, 1800.0, ""),
            row(AUTOTUNE, 512, 1850.0, "splitk_128x64x16_t128"),
            row("cublas", 1024, 4000.0, ""),
            row("double_buffer", 1024, 3500.0, ""),
            row("double_buffer_64x128x8_t128", 1024, 3000.0, ""),
        ];
        let plots = plots(&rows);
        let by_size = &plots[0].1;
        let series = |label: &str| by_size.series.iter().find(|s| s.label == label).map(|s| s.points.clone());
        // double_buffer's line takes the faster shape at each size.
        assert_eq!(series("double_buffer (best of 2)"), Some(vec![(512.0, 700.0), (1024.0, 3500.0)]));
        // A family with one kernel in the CSV is labelled by that kernel.
        assert_eq!(series("splitk_128x64x16_t128"), Some(vec![(512.0, 1800.0)]));
        assert_eq!(series(AUTOTUNE), Some(vec![(512.0, 1850.0)]));
        assert_eq!(by_size.series.iter().filter(|s| s.kind == SeriesKind::Line).count(), 3);
        assert_eq!(
            headlines(&rows)[1],
            "512: best kernel autotune (splitk_128x64x16_t128) 1850 GFLOP/s = 0.93 of the vendor BLAS (2000 GFLOP/s)"
        );
    }

    #[test]
    fn a_csv_of_shapes_other_than_squares_has_a_plot_of_every_shape_in_the_sweeps_order() {
        let row = |kernel: &str, (m, n, k): (u32, u32, u32), gflops: f64, unit: &str| -> BTreeMap<String, String> {
            [
                ("platform", "nvidia".to_string()),
                ("device", "Test GPU".into()),
                ("arch", "sm_90".into()),
                ("wave_size", "32".into()),
                ("precision", "f64".into()),
                ("kernel", kernel.into()),
                ("unit", unit.into()),
                ("m", m.to_string()),
                ("n", n.to_string()),
                ("k", k.to_string()),
                ("gflops", gflops.to_string()),
                ("status", "ok".into()),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
        };
        let (skinny, square) = ((16384, 96, 2048), (512, 512, 512));
        let rows = vec![
            row("cublas", skinny, 2000.0, "matrix"),
            row("double_buffer_64x128x8_t128", skinny, 500.0, "vector"),
            row("dmma_128x64x16_t128", skinny, 1800.0, "matrix"),
            row(AUTOTUNE, skinny, 1700.0, "matrix"),
            row("cublas", square, 1000.0, "matrix"),
            row("double_buffer_64x128x8_t128", square, 450.0, "vector"),
            row("dmma_128x64x16_t128", square, 1100.0, "matrix"),
            // Not timed for the vendor: no slot.
            row("dmma_128x64x16_t128", (100, 100, 7), 10.0, "matrix"),
        ];
        let plots = plots(&rows);
        let (_, shapes) = plots.iter().find(|(f, _)| f == "matmul-f64-shapes.png").expect("a shapes plot");
        assert_eq!(shapes.x_categories, ["16384 x 96 x 2048", "512 x 512 x 512"]);
        let series = |label: &str| shapes.series.iter().find(|s| s.label == label).map(|s| s.points.clone());
        assert_eq!(series("fastest hand kernel"), Some(vec![(0.0, 90.0), (1.0, 110.0)]));
        assert_eq!(series("fastest on the vector units"), Some(vec![(0.0, 25.0), (1.0, 45.0)]));
        assert_eq!(series("autotune (the plan it picked, timed)"), Some(vec![(0.0, 85.0)]));
        assert_eq!(shapes.labels.iter().map(|l| l.text.as_str()).collect::<Vec<_>>(), ["90%", "110%"]);
        // Squares only: the size plots say it all, and there is no shapes plot.
        let squares: Vec<_> = rows.iter().filter(|r| r.get("m") == r.get("k")).cloned().collect();
        assert!(super::plots(&squares).iter().all(|(f, _)| !f.ends_with("shapes.png")));
    }

    #[test]
    fn plots_come_from_csv_rows() {
        let row = |kernel: &str, tile: &str, n: u32, gflops: f64| {
            let mut r = BTreeMap::new();
            for (k, v) in [
                ("platform", "nvidia".to_string()),
                ("device", "Test GPU".into()),
                ("arch", "sm_90".into()),
                ("wave_size", "32".into()),
                ("kernel", kernel.into()),
                ("tile_m", tile.into()),
                ("m", n.to_string()),
                ("n", n.to_string()),
                ("k", n.to_string()),
                ("gflops", gflops.to_string()),
                ("status", "ok".into()),
            ] {
                r.insert(k.to_string(), v);
            }
            r
        };
        let rows = vec![
            row("cublas", "", 256, 1000.0),
            row("naive", "", 256, 100.0),
            row("tiled_m16", "16", 256, 400.0),
            row("tiled_m32", "32", 256, 500.0),
            row("cublas", "", 512, 2000.0),
            row("naive", "", 512, 100.0),
        ];
        assert_eq!(
            headlines(&rows),
            [
                "cuBLAS SGEMM uses the FP32 vector units (the suite pins CUBLAS_DEFAULT_MATH: no TF32); the hand \
                 kernels use FMA on the vector units",
                "256: best kernel tiled_m32 500 GFLOP/s = 0.50 of the vendor BLAS (1000 GFLOP/s)",
                "512: best kernel naive 100 GFLOP/s = 0.05 of the vendor BLAS (2000 GFLOP/s)",
            ]
        );
        let plots = plots(&rows);
        let files: Vec<&str> = plots.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(files, ["matmul-gflops-vs-size.png", "matmul-gflops-vs-tile.png", "matmul-percent-of-vendor.png"]);
        let by_size = &plots[0].1;
        assert!(by_size.title.contains("Test GPU (sm_90, warp32)"));
        let cublas = by_size.series.iter().find(|s| s.label == "cuBLAS").unwrap();
        assert_eq!(cublas.kind, SeriesKind::Reference);
        assert_eq!(cublas.points, [(256.0, 1000.0), (512.0, 2000.0)]);
        let percent = &plots[2].1;
        let naive = percent.series.iter().find(|s| s.label == "naive").unwrap();
        assert_eq!(naive.points, [(256.0, 10.0), (512.0, 5.0)]);
        assert_eq!(plots[1].1.series[0].points, [(16.0, 400.0), (32.0, 500.0)]);
        // Every plot says what the vendor BLAS runs on: on NVIDIA the vector units, as the hand kernels.
        let note = percent.note.as_deref().unwrap();
        assert!(note.starts_with("cuBLAS SGEMM uses the FP32 vector units"), "{note}");
        let mut amd: Vec<_> = rows.clone();
        for r in &mut amd {
            r.insert("platform".into(), "amd".into());
            r.insert("arch".into(), "gfx90a".into());
            r.insert("fp32_vector_peak_tflops".into(), "23.9".into());
            r.insert("fp32_matrix_peak_tflops".into(), "47.9".into());
        }
        let note = super::plots(&amd)[0].1.note.clone().unwrap();
        assert!(note.contains("MFMA") && note.contains("FP32 peaks: vector 23.9 TFLOP/s, matrix 47.9"), "{note}");
    }

    #[test]
    fn each_precision_gets_its_plots_and_each_line_its_units_peak_share() {
        let row = |kernel: &str, n: u32, gflops: f64, precision: &str, unit: &str, peak: &str| {
            [
                ("platform", "nvidia"),
                ("device", "Test GPU"),
                ("arch", "sm_90"),
                ("wave_size", "32"),
                ("kernel", kernel),
                ("status", "ok"),
                ("precision", precision),
                ("unit", unit),
                ("unit_peak_tflops", peak),
            ]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .chain(["m", "n", "k"].iter().map(|c| (c.to_string(), n.to_string())))
            .chain([("gflops".to_string(), gflops.to_string())])
            .collect::<BTreeMap<String, String>>()
        };
        let rows = vec![
            row("cublas", 4096, 50000.0, "f32", "vector", "66.9"),
            row("double_buffer", 4096, 46830.0, "f32", "vector", "66.9"),
            row("cublas", 4096, 55000.0, "f64", "matrix", "66.9"),
            row("double_buffer_128x128x8_t256", 4096, 23450.0, "f64", "vector", "33.5"),
            row("dmma_128x128x16_t256", 4096, 53520.0, "f64", "matrix", "66.9"),
        ];
        let plots = plots(&rows);
        let files: Vec<&str> = plots.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            files,
            [
                "matmul-gflops-vs-size.png",
                "matmul-percent-of-vendor.png",
                "matmul-percent-of-peak.png",
                "matmul-f64-gflops-vs-size.png",
                "matmul-f64-percent-of-vendor.png",
                "matmul-f64-percent-of-peak.png",
            ]
        );
        let f64_peak = &plots[5].1;
        assert!(f64_peak.title.starts_with("FP64 matmul"), "{}", f64_peak.title);
        let line = |label: &str| f64_peak.series.iter().find(|s| s.label == label).map(|s| s.points.clone());
        // 23.45 of 33.5 TFLOP/s is 70%; the DMMA rung, labelled as on the matrix units, 80% of 66.9.
        let vector = line("double_buffer_128x128x8_t256").unwrap();
        assert!((vector[0].1 - 70.0).abs() < 1e-9, "{vector:?}");
        let matrix = line("dmma_128x128x16_t256, matrix units").unwrap();
        assert!((matrix[0].1 - 80.0).abs() < 1e-9, "{matrix:?}");
        // FP32 keeps its files and titles; its lines are FP32 rows only.
        assert!(plots[0].1.title.starts_with("FP32 matmul"));
        assert_eq!(plots[0].1.series.len(), 3, "{:?}", plots[0].1.series);
        // The peak of the unit the rows ran on is a line on the GFLOP/s plot, not only in the note.
        let peak = plots[0].1.series.iter().find(|s| s.label == "FP32 vector peak 66.9 TFLOP/s").expect("the peak");
        assert_eq!((peak.kind, peak.points[0].1), (SeriesKind::Reference, 66_900.0));
        let note = f64_peak.note.as_deref().unwrap();
        assert!(note.contains("cuBLAS DGEMM uses the FP64 tensor cores"), "{note}");
        // summary.md: per precision, the best kernel on each unit as a share of the vendor and of its unit's peak.
        assert_eq!(
            headlines(&rows),
            [
                "FP32 cuBLAS SGEMM uses the FP32 vector units (the suite pins CUBLAS_DEFAULT_MATH: no TF32); the hand \
                 kernels use FMA on the vector units",
                "FP32 4096: best kernel double_buffer 46830 GFLOP/s = 0.94 of the vendor BLAS (50000 GFLOP/s, 75% of \
                 its unit's peak); 70% of the vector peak",
                "FP64 cuBLAS DGEMM uses the FP64 tensor cores (DMMA); the hand kernels use FMA on the vector units, the \
                 DMMA rung the FP64 tensor cores; FP64 peaks: vector 33.5 TFLOP/s, matrix 66.9 TFLOP/s",
                "FP64 4096: best vector kernel double_buffer_128x128x8_t256 23450 GFLOP/s = 0.43 of the vendor BLAS \
                 (55000 GFLOP/s, 82% of its unit's peak); 70% of the vector peak",
                "FP64 4096: best matrix kernel dmma_128x128x16_t256 53520 GFLOP/s = 0.97 of the vendor BLAS (55000 \
                 GFLOP/s, 82% of its unit's peak); 80% of the matrix peak",
            ]
        );
    }

    /// Every median drawn carries the spread of its repetitions: the rate at the slowest and the fastest.
    #[test]
    fn the_gflops_points_carry_the_spread_of_their_repetitions() {
        let row = |kernel: &str, gflops: f64, times: [f64; 3]| -> BTreeMap<String, String> {
            [("platform", "nvidia"), ("device", "Test GPU"), ("arch", "sm_90"), ("wave_size", "32"), ("status", "ok")]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .chain([("kernel".to_string(), kernel.to_string())])
                .chain(["m", "n", "k"].iter().map(|c| (c.to_string(), "1024".to_string())))
                .chain([("gflops".to_string(), gflops.to_string())])
                .chain(
                    ["time_ms_median", "time_ms_min", "time_ms_max"]
                        .iter()
                        .zip(times)
                        .map(|(c, t)| (c.to_string(), t.to_string())),
                )
                .collect()
        };
        let rows = vec![row("cublas", 2000.0, [1.0, 0.9, 1.25]), row("naive", 100.0, [20.0, 16.0, 25.0])];
        let plots = plots(&rows);
        let by_size = &plots[0].1;
        let naive = by_size.series.iter().find(|s| s.label == "naive").expect("naive");
        // 100 GFLOP/s at 20 ms: 80 at the slowest (25 ms), 125 at the fastest (16 ms).
        assert_eq!(naive.spread, [(1024.0, 80.0, 125.0)]);
        let vendor = by_size.series.iter().find(|s| s.label == "cuBLAS").expect("cuBLAS");
        assert_eq!(vendor.spread, [(1024.0, 1600.0, 2000.0 / 0.9)]);
    }

    #[test]
    fn kernel_families_drop_the_shape() {
        let cases = [
            ("double_buffer_64x128x8_t128", "double_buffer"),
            ("double_buffer", "double_buffer"),
            ("tiled_m16", "tiled"),
            ("splitk_atomic_64x128x16_t128", "splitk_atomic"),
            ("streamk_128x128x8_t128_unaligned", "streamk"),
            ("cublas", "cublas"),
            ("autotune", "autotune"),
            ("blocktile_2d", "blocktile_2d"),
        ];
        for (kernel, want) in cases {
            assert_eq!(super::kernel_family(kernel), want, "{kernel}");
        }
    }
}
