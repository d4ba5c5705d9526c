//! Matmul's headline lines for `summary.md`, and the note on what the vendor BLAS runs on that its plots share.

use std::collections::BTreeMap;

use super::autotune::AUTOTUNE;
use super::vendor_name;
use crate::device::Platform;

/// What the vendor BLAS runs on and the device's FP32 ceilings, from a row's context and peak columns: "% of
/// vendor" compares hardware units that may differ (rocBLAS uses the MFMA matrix cores on CDNA, the hand kernels
/// the vector units).
pub(super) fn vendor_note(row: &BTreeMap<String, String>) -> String {
    let get = |c: &str| row.get(c).cloned().unwrap_or_default();
    let (platform, arch) = (get("platform"), get("arch"));
    let units = Platform::ALL
        .into_iter()
        .find(|p| p.name() == platform)
        .map(|p| crate::peaks::vendor_sgemm_units(p, &arch).to_string())
        .unwrap_or_else(|| format!("the vendor BLAS of platform `{platform}`"));
    let peaks = match (get("fp32_vector_peak_tflops"), get("fp32_matrix_peak_tflops")) {
        (v, _) if v.is_empty() => String::new(),
        (v, m) if m.is_empty() => format!("; FP32 peak {v} TFLOP/s on the vector units, no FP32 matrix path"),
        (v, m) => format!("; FP32 peaks: vector {v} TFLOP/s, matrix {m} TFLOP/s"),
    };
    let hand = if platform == "amd" && !arch.starts_with("sm_") {
        "the hand kernels use plain (packed) FMA on the vector units"
    } else {
        "the hand kernels use FMA on the vector units"
    };
    format!("{units}; {hand}{peaks}")
}

/// The lines of [`crate::experiments::Results::headlines`]: what the vendor BLAS runs on, then for each size
/// (M×N×K, in the CSV's order) the vendor BLAS's GFLOP/s and the fastest hand kernel's, with their ratio.
pub(super) fn headlines(rows: &[BTreeMap<String, String>]) -> Vec<String> {
    let mut sizes: Vec<String> = Vec::new();
    let mut vendor: BTreeMap<String, f64> = BTreeMap::new();
    let mut best: BTreeMap<String, (f64, String)> = BTreeMap::new();
    for r in crate::experiments::ok_rows(rows) {
        let (Some(m), Some(n), Some(k), Some(gflops)) =
            (r.get("m"), r.get("n"), r.get("k"), crate::experiments::num(r, "gflops"))
        else {
            continue;
        };
        let size = if m == n && n == k { m.clone() } else { format!("{m}x{n}x{k}") };
        if !sizes.contains(&size) {
            sizes.push(size.clone());
        }
        let mut kernel = r.get("kernel").cloned().unwrap_or_default();
        if kernel == AUTOTUNE {
            kernel = format!("{AUTOTUNE} ({})", r.get("pick").map_or("?", String::as_str));
        }
        if [Platform::Amd, Platform::Nvidia].iter().any(|p| vendor_name(*p) == kernel) {
            vendor.insert(size, gflops);
        } else if best.get(&size).is_none_or(|(g, _)| gflops > *g) {
            best.insert(size, (gflops, kernel));
        }
    }
    let first = crate::experiments::ok_rows(rows).next().map(vendor_note);
    first
        .into_iter()
        .chain(sizes.iter().filter_map(|size| {
            let (gflops, kernel) = best.get(size)?;
            Some(match vendor.get(size) {
                Some(v) => format!(
                    "{size}: best kernel {kernel} {gflops:.0} GFLOP/s = {:.2} of the vendor BLAS ({v:.0} GFLOP/s)",
                    gflops / v
                ),
                None => format!("{size}: best kernel {kernel} {gflops:.0} GFLOP/s (no vendor BLAS row)"),
            })
        }))
        .collect()
}
