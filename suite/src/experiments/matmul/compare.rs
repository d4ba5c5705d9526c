//! How `suite compare` compares matmul runs: each kernel as % of the same run's vendor BLAS at the same shape (so
//! runs on different devices compare), the vendor BLAS itself in GFLOP/s and as % of the device's FP32 peak.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::report::compare::{
    devices_in_title, fmt_num, fp32_peak, is_ok, key, level, num, per_run_plot, runs_subtitle, sorted_points, table,
    text, Comparison, Headline, Peak, Rec, Run, Values,
};
use crate::report::plot::{Axis, Series};

/// Matmul: each kernel as % of that run's vendor BLAS at the same shape; the vendor BLAS itself in GFLOP/s and as %
/// of the device's FP32 peak.
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

/// Vendor GFLOP/s by shape in `run`.
fn vendor_by_shape(run: &Run, experiment: &str) -> BTreeMap<(u64, u64, u64), f64> {
    run.rows(experiment)
        .iter()
        .filter(|r| is_ok(r) && is_vendor(r))
        .filter_map(|r| Some((shape(r)?, num(r, "gflops")?)))
        .collect()
}

/// The fastest kernel (not the vendor BLAS) by shape: (kernel, GFLOP/s).
fn best_by_shape(run: &Run, experiment: &str) -> BTreeMap<(u64, u64, u64), (String, f64)> {
    let mut best: BTreeMap<(u64, u64, u64), (String, f64)> = BTreeMap::new();
    for r in run.rows(experiment).iter().filter(|r| is_ok(r) && !is_vendor(r)) {
        let (Some(s), Some(g)) = (shape(r), num(r, "gflops")) else { continue };
        if best.get(&s).is_none_or(|b| g > b.1) {
            best.insert(s, (text(r, "kernel"), g));
        }
    }
    best
}

impl Comparison for MatmulComparison {
    fn join_key(&self, key: &str) -> String {
        // The vendor BLAS at a shape is one point whichever vendor's it is.
        match key.split_once('/') {
            Some(("cublas" | "rocblas", rest)) => format!("vendor/{rest}"),
            _ => key.to_string(),
        }
    }

    fn values(&self, experiment: &str, run: &Run) -> Result<Values, String> {
        let vendor = vendor_by_shape(run, experiment);
        if vendor.is_empty() {
            return Err(format!("run {} has no vendor BLAS rows (run without --no-vendor to get them)", run.index));
        }
        let by_key = run
            .rows(experiment)
            .iter()
            .filter(|r| is_ok(r) && !is_vendor(r))
            .filter_map(|r| Some((key(r)?, num(r, "gflops")? / vendor.get(&shape(r)?)? * 100.0)))
            .collect();
        Ok(Values { unit: "% of the run's vendor BLAS at the same shape".into(), by_key })
    }

    fn headline(&self, experiment: &str, runs: &[&Run]) -> Headline {
        let mut md = String::new();
        let vendors: Vec<_> = runs.iter().map(|r| vendor_by_shape(r, experiment)).collect();
        let bests: Vec<_> = runs.iter().map(|r| best_by_shape(r, experiment)).collect();
        let mut shapes: Vec<(u64, u64, u64)> =
            vendors.iter().flat_map(|v| v.keys()).chain(bests.iter().flat_map(|b| b.keys())).copied().collect();
        shapes.sort_by_key(|&(m, n, k)| (u128::from(m) * u128::from(n) * u128::from(k), m, n, k));
        shapes.dedup();
        let peaks: Vec<Option<&Peak>> = runs.iter().map(|r| fp32_peak(&r.device)).collect();
        let dash = || "-".to_string();

        // Vendor BLAS: GFLOP/s, % of peak, ratio to run 1.
        let mut head = vec!["size".to_string()];
        for r in runs {
            head.push(format!("run {} {} GFLOP/s (% of FP32 peak)", r.index, vendor_name(r)));
        }
        for r in &runs[1..] {
            head.push(format!("run {} / run 1", r.index));
        }
        let rows: Vec<Vec<String>> = shapes
            .iter()
            .map(|s| {
                let mut row = vec![shape_name(*s)];
                for (v, peak) in vendors.iter().zip(&peaks) {
                    row.push(v.get(s).map_or_else(dash, |g| match peak {
                        Some(p) => format!("{} ({:.0}%)", fmt_num(*g), g / (p.fp32_vector_tflops * 1e3) * 100.0),
                        None => fmt_num(*g),
                    }));
                }
                for v in &vendors[1..] {
                    row.push(match (vendors[0].get(s), v.get(s)) {
                        (Some(a), Some(b)) if *a > 0.0 => format!("{:.2}", b / a),
                        _ => dash(),
                    });
                }
                row
            })
            .collect();
        let _ = writeln!(md, "Vendor BLAS (FP32 SGEMM) per run:\n");
        md.push_str(&table(&head, &rows));

        // Best kernel per size, as % of that run's vendor BLAS.
        let mut head = vec!["size".to_string()];
        for r in runs {
            head.push(format!("run {}: best kernel, % of {}", r.index, vendor_name(r)));
        }
        let rows: Vec<Vec<String>> = shapes
            .iter()
            .map(|s| {
                let mut row = vec![shape_name(*s)];
                for (b, v) in bests.iter().zip(&vendors) {
                    row.push(match (b.get(s), v.get(s)) {
                        (Some((k, g)), Some(vg)) if *vg > 0.0 => format!("{k} {:.0}%", g / vg * 100.0),
                        (Some((k, g)), _) => format!("{k} {} GFLOP/s", fmt_num(*g)),
                        _ => dash(),
                    });
                }
                row
            })
            .collect();
        let _ = writeln!(md, "Fastest kernel of the ladder per size, as % of the same run's vendor BLAS:\n");
        md.push_str(&table(&head, &rows));

        // Every kernel at the largest size all runs measured against their vendor BLAS.
        let common = shapes.iter().rev().find(|s| vendors.iter().all(|v| v.contains_key(s)));
        if let Some(s) = common {
            let mut kernels: Vec<String> = Vec::new();
            for r in runs {
                for row in r.rows(experiment).iter().filter(|x| is_ok(x) && !is_vendor(x) && shape(x) == Some(*s)) {
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
                        let g = r
                            .rows(experiment)
                            .iter()
                            .find(|x| is_ok(x) && text(x, "kernel") == *k && shape(x) == Some(*s))
                            .and_then(|x| num(x, "gflops"));
                        row.push(match (g, v.get(s)) {
                            (Some(g), Some(vg)) if *vg > 0.0 => format!("{:.0}%", g / vg * 100.0),
                            _ => dash(),
                        });
                    }
                    row
                })
                .collect();
            let _ = writeln!(md, "Every kernel at size {}, as % of the same run's vendor BLAS:\n", shape_name(*s));
            md.push_str(&table(&head, &rows));
        }
        if runs.iter().any(|r| r.on_amd_hardware()) {
            let _ = writeln!(
                md,
                "On AMD, rocBLAS SGEMM runs on the FP32 matrix cores (MFMA) of CDNA while the ladder's kernels use the \
                 vector units: % of rocBLAS there is a harder target than % of cuBLAS.\n"
            );
        }

        // Plots: square shapes, x = N.
        let square = |s: &(u64, u64, u64)| s.0 == s.1 && s.1 == s.2;
        let xs: Vec<f64> = shapes.iter().filter(|s| square(s)).map(|s| s.0 as f64).collect();
        let subtitle = runs_subtitle(runs);
        let mut vendor_series = Vec::new();
        let mut notes = Vec::new();
        // One reference line per distinct peak, naming the runs it belongs to.
        let mut peak_lines: Vec<(&Peak, Vec<String>)> = Vec::new();
        for ((r, v), peak) in runs.iter().zip(&vendors).zip(&peaks) {
            vendor_series.push(Series::line(
                format!("{} ({})", r.label(), vendor_name(r)),
                sorted_points(v.iter().filter(|(s, _)| square(s)).map(|(s, g)| (s.0 as f64, *g)).collect()),
            ));
            match peak {
                Some(p) => match peak_lines.iter_mut().find(|(q, _)| q.fp32_vector_tflops == p.fp32_vector_tflops) {
                    Some((_, owners)) => owners.push(r.index.to_string()),
                    None => peak_lines.push((p, vec![r.index.to_string()])),
                },
                None => notes.push(format!("run {}: FP32 peak unknown, not drawn", r.index)),
            }
        }
        for (p, owners) in peak_lines {
            let label = format!("FP32 peak {} TFLOP/s, {} (run {})", p.fp32_vector_tflops, p.name, owners.join(", "));
            vendor_series.extend(level(&label, p.fp32_vector_tflops * 1e3, &xs));
        }
        let mut plots = Vec::new();
        let title = format!("matmul: vendor BLAS SGEMM per run ({})", devices_in_title(runs));
        if let Some(p) = per_run_plot(
            title,
            subtitle.clone(),
            ("matrix size N (M = N = K)", Axis::Log2, "GFLOP/s", Axis::Linear),
            vendor_series,
            (!notes.is_empty()).then(|| notes.join("; ")),
        ) {
            plots.push(("matmul-vendor-gflops.png".to_string(), p));
        }
        let mut best_series: Vec<Series> = runs
            .iter()
            .zip(bests.iter().zip(&vendors))
            .map(|(r, (b, v))| {
                let pts = b
                    .iter()
                    .filter(|(s, _)| square(s))
                    .filter_map(|(s, (_, g))| Some((s.0 as f64, g / v.get(s).filter(|vg| **vg > 0.0)? * 100.0)))
                    .collect();
                Series::line(r.label(), sorted_points(pts))
            })
            .collect();
        best_series.extend(level("100% = the run's own vendor BLAS", 100.0, &xs));
        let note = runs.iter().any(|r| r.on_amd_hardware()).then(|| {
            "rocBLAS SGEMM runs on the CDNA matrix cores (MFMA); the kernels use the vector units".to_string()
        });
        if let Some(p) = per_run_plot(
            format!("matmul: fastest ladder kernel as % of the run's vendor BLAS ({})", devices_in_title(runs)),
            subtitle,
            ("matrix size N (M = N = K)", Axis::Log2, "% of the same run's vendor BLAS", Axis::Linear),
            best_series,
            note,
        ) {
            plots.push(("matmul-best-percent-of-vendor.png".to_string(), p));
        }
        Headline { markdown: md, plots }
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
}
