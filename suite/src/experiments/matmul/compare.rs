//! How `suite compare` compares matmul runs, per precision: each kernel as % of the same run's vendor BLAS at the
//! same shape and precision (so runs on different devices compare), the fastest kernel on each unit as % of the
//! vendor and of that unit's peak, and the vendor BLAS itself in GFLOP/s and as % of its unit's peak.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::experiments::rate_spread;
use crate::peaks::Unit;
use crate::precision::Precision;
use crate::report::compare::{
    devices_in_title, fmt_num, fp32_peak, is_ok, key, level, num, per_run_plot, runs_subtitle, sorted_points, table,
    text, Comparison, Headline, Peak, Rec, Run, Values,
};
use crate::report::plot::{Axis, Series};

/// Matmul: each kernel as % of that run's vendor BLAS at the same shape and precision; per precision, the vendor BLAS
/// itself in GFLOP/s and as % of its unit's peak, and the fastest kernel on each unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MatmulComparison;

fn is_vendor(r: &Rec) -> bool {
    matches!(r.get("kernel").map(String::as_str), Some("cublas" | "rocblas"))
}

fn vendor_name(run: &Run) -> &'static str {
    match (run.device.platform.as_str(), run.device.test_runtime.is_some()) {
        ("amd", false) => "rocBLAS",
        ("amd", true) => "rocBLAS over cuBLAS",
        _ => "cuBLAS",
    }
}

/// (m, n, k) of a matmul row.
fn shape(r: &Rec) -> Option<(u64, u64, u64)> {
    let p = |c: &str| r.get(c).and_then(|v| v.parse::<u64>().ok());
    Some((p("m")?, p("n")?, p("k")?))
}

fn shape_name((m, n, k): (u64, u64, u64)) -> String {
    if m == n && n == k {
        m.to_string()
    } else {
        format!("{m}x{n}x{k}")
    }
}

type Shape3 = (u64, u64, u64);

/// Per unit, the fastest kernel: (kernel, GFLOP/s, % of its unit's peak).
type BestByUnit = BTreeMap<Unit, (String, f64, Option<f64>)>;

/// The `ok` rows of `run` in `precision`.
fn rows_in<'r>(run: &'r Run, experiment: &str, precision: Precision) -> impl Iterator<Item = &'r Rec> {
    run.rows(experiment).iter().filter(move |r| is_ok(r) && Precision::of_row(r) == precision)
}

/// The peak a row's rate is a share of, TFLOP/s: its `unit_peak_tflops`, else (a CSV from before that column, all
/// FP32 on the vector units) the device's FP32 vector peak.
fn row_peak(r: &Rec, device_peak: Option<&Peak>) -> Option<f64> {
    num(r, "unit_peak_tflops").or_else(|| {
        (Precision::of_row(r) == Precision::F32 && r.get("unit").is_none())
            .then(|| device_peak.map(|p| p.fp32_vector_tflops))
            .flatten()
    })
}

/// Vendor GFLOP/s and its share of its unit's peak (%) by shape in `run`, in `precision`.
fn vendor_by_shape(run: &Run, experiment: &str, precision: Precision) -> BTreeMap<Shape3, (f64, Option<f64>)> {
    let peak = fp32_peak(&run.device);
    rows_in(run, experiment, precision)
        .filter(|r| is_vendor(r))
        .filter_map(|r| {
            let g = num(r, "gflops")?;
            Some((shape(r)?, (g, row_peak(r, peak).map(|t| g / (t * 1e3) * 100.0))))
        })
        .collect()
}

/// The fastest kernel (not the vendor BLAS) by shape and unit: (kernel, GFLOP/s, % of its unit's peak).
fn best_by_shape(run: &Run, experiment: &str, precision: Precision) -> BTreeMap<Shape3, BestByUnit> {
    let peak = fp32_peak(&run.device);
    let mut best: BTreeMap<Shape3, BestByUnit> = BTreeMap::new();
    for r in rows_in(run, experiment, precision).filter(|r| !is_vendor(r)) {
        let (Some(s), Some(g)) = (shape(r), num(r, "gflops")) else { continue };
        let unit = r.get("unit").and_then(|u| Unit::parse(u)).unwrap_or(Unit::Vector);
        let of_peak = row_peak(r, peak).map(|t| g / (t * 1e3) * 100.0);
        let at = best.entry(s).or_default();
        if at.get(&unit).is_none_or(|b| g > b.1) {
            at.insert(unit, (text(r, "kernel"), g, of_peak));
        }
    }
    best
}

/// The fastest of any unit: (kernel, GFLOP/s).
fn fastest(by_unit: &BestByUnit) -> Option<(&str, f64)> {
    by_unit.values().map(|(k, g, _)| (k.as_str(), *g)).fold(None, |b, x| match b {
        Some(b) if b.1 >= x.1 => Some(b),
        _ => Some(x),
    })
}

impl Comparison for MatmulComparison {
    fn join_key(&self, key: &str) -> String {
        // The vendor BLAS at a shape (and precision: FP64 keys end in /f64) is one point whichever vendor's it is.
        match key.split_once('/') {
            Some(("cublas" | "rocblas", rest)) => format!("vendor/{rest}"),
            _ => key.to_string(),
        }
    }

    fn values(&self, experiment: &str, run: &Run) -> Result<Values, String> {
        let mut by_key = BTreeMap::new();
        let mut any_vendor = false;
        for precision in Precision::ALL {
            let vendor = vendor_by_shape(run, experiment, precision);
            any_vendor |= !vendor.is_empty();
            by_key.extend(
                rows_in(run, experiment, precision)
                    .filter(|r| !is_vendor(r))
                    .filter_map(|r| Some((key(r)?, num(r, "gflops")? / vendor.get(&shape(r)?)?.0 * 100.0))),
            );
        }
        if !any_vendor {
            return Err(format!("run {} has no vendor BLAS rows (run without --no-vendor to get them)", run.index));
        }
        Ok(Values {
            unit: "% of the run's vendor BLAS at the same shape and precision".into(),
            by_key,
            ..Values::default()
        })
    }

    fn headline(&self, experiment: &str, runs: &[&Run]) -> Headline {
        let mut headline = Headline { markdown: String::new(), plots: Vec::new() };
        let present: Vec<Precision> = Precision::ALL
            .into_iter()
            .filter(|&p| runs.iter().any(|r| rows_in(r, experiment, p).next().is_some()))
            .collect();
        for precision in present {
            precision_headline(&mut headline, experiment, runs, precision);
        }
        headline
    }
}

/// The tables and plots of one precision.
fn precision_headline(out: &mut Headline, experiment: &str, runs: &[&Run], precision: Precision) {
    let md = &mut out.markdown;
    let vendors: Vec<_> = runs.iter().map(|r| vendor_by_shape(r, experiment, precision)).collect();
    let bests: Vec<_> = runs.iter().map(|r| best_by_shape(r, experiment, precision)).collect();
    let mut shapes: Vec<Shape3> =
        vendors.iter().flat_map(|v| v.keys()).chain(bests.iter().flat_map(|b| b.keys())).copied().collect();
    shapes.sort_by_key(|&(m, n, k)| (u128::from(m) * u128::from(n) * u128::from(k), m, n, k));
    shapes.dedup();
    let dash = || "-".to_string();
    let gemm = match precision {
        Precision::F32 => "FP32 SGEMM",
        Precision::F64 => "FP64 DGEMM",
    };

    // Vendor BLAS: GFLOP/s, % of its unit's peak, ratio to run 1.
    let mut head = vec!["size".to_string()];
    for r in runs {
        head.push(format!("run {} {} GFLOP/s (% of its unit's peak)", r.index, vendor_name(r)));
    }
    for r in &runs[1..] {
        head.push(format!("run {} / run 1", r.index));
    }
    let rows: Vec<Vec<String>> = shapes
        .iter()
        .map(|s| {
            let mut row = vec![shape_name(*s)];
            for v in &vendors {
                row.push(v.get(s).map_or_else(dash, |(g, peak)| match peak {
                    Some(p) => format!("{} ({p:.0}%)", fmt_num(*g)),
                    None => fmt_num(*g),
                }));
            }
            for v in &vendors[1..] {
                row.push(match (vendors[0].get(s), v.get(s)) {
                    (Some(a), Some(b)) if a.0 > 0.0 => format!("{:.2}", b.0 / a.0),
                    _ => dash(),
                });
            }
            row
        })
        .collect();
    let _ = writeln!(md, "Vendor BLAS ({gemm}) per run:\n");
    md.push_str(&table(&head, &rows));

    // Best kernel per size, as % of that run's vendor BLAS; then per unit, with % of the unit's peak.
    let mut head = vec!["size".to_string()];
    for r in runs {
        head.push(format!("run {}: best kernel, % of {}", r.index, vendor_name(r)));
    }
    let rows: Vec<Vec<String>> = shapes
        .iter()
        .map(|s| {
            let mut row = vec![shape_name(*s)];
            for (b, v) in bests.iter().zip(&vendors) {
                row.push(match (b.get(s).and_then(fastest), v.get(s)) {
                    (Some((k, g)), Some(vg)) if vg.0 > 0.0 => format!("{k} {:.0}%", g / vg.0 * 100.0),
                    (Some((k, g)), _) => format!("{k} {} GFLOP/s", fmt_num(g)),
                    _ => dash(),
                });
            }
            row
        })
        .collect();
    let _ = writeln!(
        md,
        "Fastest {} kernel of the ladder per size, as % of the same run's vendor BLAS:\n",
        precision.label()
    );
    md.push_str(&table(&head, &rows));
    let mut head = vec!["size".to_string()];
    head.extend(
        runs.iter().map(|r| format!("run {}: per unit, best kernel: % of vendor, % of the unit's peak", r.index)),
    );
    let rows: Vec<Vec<String>> = shapes
        .iter()
        .map(|s| {
            let mut row = vec![shape_name(*s)];
            for (b, v) in bests.iter().zip(&vendors) {
                let cells: Vec<String> = b
                    .get(s)
                    .into_iter()
                    .flatten()
                    .map(|(unit, (k, g, peak))| {
                        let of_vendor = v
                            .get(s)
                            .filter(|vg| vg.0 > 0.0)
                            .map_or_else(dash, |vg| format!("{:.0}%", g / vg.0 * 100.0));
                        let of_peak = peak.map_or_else(dash, |p| format!("{p:.0}%"));
                        format!("{}: {k} {of_vendor}, {of_peak}", unit.name())
                    })
                    .collect();
                row.push(if cells.is_empty() { dash() } else { cells.join("; ") });
            }
            row
        })
        .collect();
    let _ = writeln!(
        md,
        "Fastest {} kernel on each unit, as % of the vendor BLAS and of that unit's peak:\n",
        precision.label()
    );
    md.push_str(&table(&head, &rows));

    // Every kernel at the largest size all runs measured against their vendor BLAS.
    let common = shapes.iter().rev().find(|s| vendors.iter().all(|v| v.contains_key(s)));
    if let Some(s) = common {
        let mut kernels: Vec<String> = Vec::new();
        for r in runs {
            for row in rows_in(r, experiment, precision).filter(|x| !is_vendor(x) && shape(x) == Some(*s)) {
                let k = text(row, "kernel");
                if !kernels.contains(&k) {
                    kernels.push(k);
                }
            }
        }
        let mut head = vec!["kernel".to_string()];
        head.extend(runs.iter().map(|r| format!("run {} % of {}", r.index, vendor_name(r))));
        let rows: Vec<Vec<String>> = kernels
            .iter()
            .map(|k| {
                let mut row = vec![k.clone()];
                for (r, v) in runs.iter().zip(&vendors) {
                    let g = rows_in(r, experiment, precision)
                        .find(|x| text(x, "kernel") == *k && shape(x) == Some(*s))
                        .and_then(|x| num(x, "gflops"));
                    row.push(match (g, v.get(s)) {
                        (Some(g), Some(vg)) if vg.0 > 0.0 => format!("{:.0}%", g / vg.0 * 100.0),
                        _ => dash(),
                    });
                }
                row
            })
            .collect();
        let _ = writeln!(
            md,
            "Every {} kernel at size {}, as % of the same run's vendor BLAS:\n",
            precision.label(),
            shape_name(*s)
        );
        md.push_str(&table(&head, &rows));
    }
    if runs.iter().any(|r| r.on_amd_hardware()) {
        let _ = writeln!(
            md,
            "On AMD, rocBLAS ({gemm}) runs on the matrix cores (MFMA) of CDNA while the ladder's vector kernels use the \
             vector units: % of rocBLAS there is a harder target than % of cuBLAS in FP32.\n"
        );
    }

    // Plots: square shapes, x = N.
    let prefix = match precision {
        Precision::F32 => "matmul-",
        Precision::F64 => "matmul-f64-",
    };
    let square = |s: &Shape3| s.0 == s.1 && s.1 == s.2;
    let xs: Vec<f64> = shapes.iter().filter(|s| square(s)).map(|s| s.0 as f64).collect();
    let subtitle = runs_subtitle(runs);
    let mut vendor_series = Vec::new();
    let mut notes = Vec::new();
    // One reference line per distinct peak of the vendor's unit, naming the runs it belongs to.
    let mut peak_lines: Vec<(f64, String, Vec<String>)> = Vec::new();
    // The spread of a kernel's GFLOP/s (or a share of a fixed reference) at a square shape, from its row.
    let spread_at = |r: &Run, kernel: &dyn Fn(&Rec) -> bool, s: &Shape3, value: f64| {
        let row = rows_in(r, experiment, precision).find(|x| kernel(x) && shape(x) == Some(*s))?;
        let (lo, hi) = rate_spread(row, value)?;
        Some((s.0 as f64, lo, hi))
    };
    for (r, v) in runs.iter().zip(&vendors) {
        let spread =
            v.iter().filter(|(s, _)| square(s)).filter_map(|(s, g)| spread_at(r, &is_vendor, s, g.0)).collect();
        vendor_series.push(
            Series::line(
                format!("{} ({})", r.label(), vendor_name(r)),
                sorted_points(v.iter().filter(|(s, _)| square(s)).map(|(s, g)| (s.0 as f64, g.0)).collect()),
            )
            .with_spread(spread),
        );
        let vendor_peak = rows_in(r, experiment, precision).filter(|x| is_vendor(x)).find_map(|x| {
            let unit = x.get("unit").cloned().unwrap_or_else(|| "vector".into());
            Some((row_peak(x, fp32_peak(&r.device))?, unit))
        });
        match vendor_peak {
            Some((tflops, unit)) => match peak_lines.iter_mut().find(|(t, u, _)| *t == tflops && *u == unit) {
                Some((_, _, owners)) => owners.push(r.index.to_string()),
                None => peak_lines.push((tflops, unit, vec![r.index.to_string()])),
            },
            None => notes.push(format!("run {}: the vendor's {} peak unknown, not drawn", r.index, precision.label())),
        }
    }
    for (tflops, unit, owners) in peak_lines {
        let label = format!("{} {unit} peak {tflops} TFLOP/s (run {})", precision.label(), owners.join(", "));
        vendor_series.extend(level(&label, tflops * 1e3, &xs));
    }
    let title = format!("matmul: vendor BLAS {gemm} per run ({})", devices_in_title(runs));
    if let Some(p) = per_run_plot(
        title,
        subtitle.clone(),
        ("matrix size N (M = N = K)", Axis::Log2, "GFLOP/s", Axis::Linear),
        vendor_series,
        (!notes.is_empty()).then(|| notes.join("; ")),
    ) {
        out.plots.push((format!("{prefix}vendor-gflops.png"), p));
    }
    let mut best_series: Vec<Series> = runs
        .iter()
        .zip(bests.iter().zip(&vendors))
        .map(|(r, (b, v))| {
            let pts: Vec<(f64, f64, String)> = b
                .iter()
                .filter(|(s, _)| square(s))
                .filter_map(|(s, by_unit)| {
                    let (k, g) = fastest(by_unit)?;
                    Some((s.0 as f64, g / v.get(s).filter(|vg| vg.0 > 0.0)?.0 * 100.0, k.to_string()))
                })
                .collect();
            let spread = pts
                .iter()
                .filter_map(|(n, share, k)| {
                    let n = *n as u64;
                    spread_at(r, &|x: &Rec| text(x, "kernel") == *k, &(n, n, n), *share)
                })
                .collect();
            Series::line(r.label(), sorted_points(pts.into_iter().map(|(n, share, _)| (n, share)).collect()))
                .with_spread(spread)
        })
        .collect();
    best_series.extend(level("100% = the run's own vendor BLAS", 100.0, &xs));
    let note = runs.iter().any(|r| r.on_amd_hardware()).then(|| {
        format!("rocBLAS {gemm} runs on the CDNA matrix cores (MFMA); the vector kernels use the vector units")
    });
    if let Some(p) = per_run_plot(
        format!(
            "matmul: fastest {} ladder kernel as % of the run's vendor BLAS ({})",
            precision.label(),
            devices_in_title(runs)
        ),
        subtitle,
        ("matrix size N (M = N = K)", Axis::Log2, "% of the same run's vendor BLAS", Axis::Linear),
        best_series,
        note,
    ) {
        out.plots.push((format!("{prefix}best-percent-of-vendor.png"), p));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_are_compared_as_a_share_of_the_runs_vendor_blas_at_the_same_shape() {
        assert_eq!(MatmulComparison.join_key("rocblas/m=8,n=8,k=8"), "vendor/m=8,n=8,k=8");
        assert_eq!(MatmulComparison.join_key("cublas/m=8,n=8,k=8"), "vendor/m=8,n=8,k=8");
        assert_eq!(MatmulComparison.join_key("naive/m=8,n=8,k=8"), "naive/m=8,n=8,k=8");
        let dir = tempfile::tempdir().unwrap();
        let row = |kernel: &str, n: u32, gflops: f64| {
            format!("matmul,nvidia,X,sm_90,32,{kernel},{n},{n},{n},{gflops},ok,\"{kernel}/m={n},n={n},k={n}\"\n")
        };
        let head = "experiment,platform,device,arch,wave_size,kernel,m,n,k,gflops,status,key\n";
        let csv = [head.to_string(), row("cublas", 256, 1000.0), row("naive", 256, 50.0), row("naive", 512, 80.0)];
        std::fs::write(dir.path().join("run.json"), "{}").unwrap();
        std::fs::write(dir.path().join("matmul.csv"), csv.concat()).unwrap();
        let run = crate::report::compare::read_run(dir.path(), 1).unwrap();
        let values = MatmulComparison.values("matmul", &run).unwrap();
        // 512 has no vendor row, so no share; the vendor rows themselves are not kernels.
        assert_eq!(values.by_key.into_iter().collect::<Vec<_>>(), [("naive/m=256,n=256,k=256".to_string(), 5.0)]);
        let no_vendor = [head.to_string(), row("naive", 256, 50.0)].concat();
        std::fs::write(dir.path().join("matmul.csv"), no_vendor).unwrap();
        let run = crate::report::compare::read_run(dir.path(), 1).unwrap();
        let err = MatmulComparison.values("matmul", &run).unwrap_err();
        assert!(err.contains("no vendor BLAS rows (run without --no-vendor"), "{err}");
    }

    #[test]
    fn each_precision_is_compared_against_its_own_vendor_gemm_and_its_units_peaks() {
        let dir = tempfile::tempdir().unwrap();
        let head = "experiment,platform,device,arch,wave_size,kernel,m,n,k,precision,unit,unit_peak_tflops,gflops,\
                    status,key\n";
        let row = |kernel: &str, precision: &str, unit: &str, peak: f64, gflops: f64| {
            let suffix = if precision == "f64" { "/f64" } else { "" };
            format!(
                "matmul,nvidia,NVIDIA H100 80GB HBM3,sm_90,32,{kernel},4096,4096,4096,{precision},{unit},{peak},\
                 {gflops},ok,\"{kernel}/m=4096,n=4096,k=4096{suffix}\"\n"
            )
        };
        let csv = [
            head.to_string(),
            row("cublas", "f32", "vector", 66.9, 50000.0),
            row("double_buffer", "f32", "vector", 66.9, 46000.0),
            row("cublas", "f64", "matrix", 66.9, 55000.0),
            row("double_buffer_128x128x8_t256", "f64", "vector", 33.5, 23450.0),
            row("dmma_128x128x16_t256", "f64", "matrix", 66.9, 55000.0),
        ];
        std::fs::write(dir.path().join("run.json"), "{}").unwrap();
        std::fs::write(dir.path().join("matmul.csv"), csv.concat()).unwrap();
        let run = crate::report::compare::read_run(dir.path(), 1).unwrap();
        // Each kernel against the vendor GEMM of its own precision: 46000 / 50000 and 55000 / 55000.
        let values = MatmulComparison.values("matmul", &run).unwrap().by_key;
        assert_eq!(values["double_buffer/m=4096,n=4096,k=4096"], 92.0);
        assert_eq!(values["dmma_128x128x16_t256/m=4096,n=4096,k=4096/f64"], 100.0);
        assert_eq!(values["double_buffer_128x128x8_t256/m=4096,n=4096,k=4096/f64"], 23450.0 / 55000.0 * 100.0);
        assert_eq!(MatmulComparison.join_key("cublas/m=8,n=8,k=8/f64"), "vendor/m=8,n=8,k=8/f64");
        let headline = MatmulComparison.headline("matmul", &[&run]);
        let md = &headline.markdown;
        assert!(md.contains("Vendor BLAS (FP64 DGEMM) per run"), "{md}");
        assert!(md.contains("| 4096 | 55,000 (82%) |"), "{md}");
        assert!(
            md.contains("vector: double_buffer_128x128x8_t256 43%, 70%; matrix: dmma_128x128x16_t256 100%, 82%"),
            "{md}"
        );
        let files: Vec<&str> = headline.plots.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            files,
            [
                "matmul-vendor-gflops.png",
                "matmul-best-percent-of-vendor.png",
                "matmul-f64-vendor-gflops.png",
                "matmul-f64-best-percent-of-vendor.png"
            ]
        );
    }
}
