//! Matmul's headline lines for `summary.md`, and the note on what the vendor BLAS and the kernels run on that its
//! plots share.

use std::collections::BTreeMap;

use super::autotune::AUTOTUNE;
use super::vendor_name;
use crate::device::Platform;
use crate::peaks::Unit;
use crate::precision::Precision;

type Row = BTreeMap<String, String>;

/// What the vendor BLAS runs on and the device's ceilings in the rows' precision (all of `rows` are of one
/// precision), from their context and peak columns: "% of vendor" compares hardware units that may differ (rocBLAS
/// uses the MFMA matrix cores on CDNA, cuBLAS's DGEMM the FP64 tensor cores, the hand kernels mostly the vector
/// units).
pub(super) fn vendor_note(rows: &[&Row]) -> String {
    let Some(first) = rows.first() else { return String::new() };
    let get = |c: &str| first.get(c).cloned().unwrap_or_default();
    let (platform, arch) = (get("platform"), get("arch"));
    let precision = Precision::of_row(first);
    let units = Platform::ALL
        .into_iter()
        .find(|p| p.name() == platform)
        .map(|p| crate::peaks::vendor_gemm_units(p, &arch, precision).to_string())
        .unwrap_or_else(|| format!("the vendor BLAS of platform `{platform}`"));
    // On AMD (a gfx architecture; the HIP-over-CUDA test runtime reports an sm_ one) the matrix rung is MFMA.
    let amd = platform == "amd" && !arch.starts_with("sm_");
    let hand = match precision {
        Precision::F32 if amd => {
            "the hand kernels use plain (packed) FMA on the vector units, the MFMA rung the matrix units"
        }
        Precision::F32 => "the hand kernels use FMA on the vector units",
        Precision::F64 if amd => "the hand kernels use FMA on the vector units, the MFMA rung the matrix units",
        Precision::F64 => "the hand kernels use FMA on the vector units, the DMMA rung the FP64 tensor cores",
    };
    let peaks = match precision {
        Precision::F32 => match (get("fp32_vector_peak_tflops"), get("fp32_matrix_peak_tflops")) {
            (v, _) if v.is_empty() => String::new(),
            (v, m) if m.is_empty() => format!("; FP32 peak {v} TFLOP/s on the vector units, no FP32 matrix path"),
            (v, m) => format!("; FP32 peaks: vector {v} TFLOP/s, matrix {m} TFLOP/s"),
        },
        // Each FP64 row carries its own unit's peak: the vector rows give one, the matrix rows the other.
        Precision::F64 => {
            let peak = |unit: Unit| {
                let row = rows.iter().find(|r| r.get("unit").is_some_and(|u| u == unit.name()))?;
                let tflops = row.get("unit_peak_tflops").filter(|t| !t.is_empty())?;
                Some(format!("{} {tflops} TFLOP/s", unit.name()))
            };
            let known: Vec<String> = [Unit::Vector, Unit::Matrix].into_iter().filter_map(peak).collect();
            if known.is_empty() {
                String::new()
            } else {
                format!("; FP64 peaks: {}", known.join(", "))
            }
        }
    };
    format!("{units}; {hand}{peaks}")
}

/// One size's figures in one precision: the vendor BLAS and, per unit, the fastest hand kernel.
#[derive(Default)]
struct SizeFigures {
    /// The vendor BLAS: GFLOP/s, its unit's peak TFLOP/s.
    vendor: Option<(f64, Option<f64>)>,
    /// Per unit: the fastest kernel, its GFLOP/s, its unit's peak TFLOP/s.
    best: BTreeMap<Unit, (String, f64, Option<f64>)>,
}

/// The lines of [`crate::experiments::Results::headlines`], per precision in the CSV (FP32 first): what the vendor
/// BLAS runs on, then for each size (M×N×K, in the CSV's order) the fastest hand kernel on each unit with its GFLOP/s,
/// its share of the vendor BLAS's rate and of its unit's peak, and the vendor BLAS's GFLOP/s. Lines are prefixed with
/// the precision when the CSV holds both.
pub(super) fn headlines(rows: &[Row]) -> Vec<String> {
    let ok: Vec<&Row> = crate::experiments::ok_rows(rows).collect();
    let present: Vec<Precision> =
        Precision::ALL.into_iter().filter(|p| ok.iter().any(|r| Precision::of_row(r) == *p)).collect();
    let mut lines = Vec::new();
    for &precision in &present {
        let of: Vec<&Row> = ok.iter().copied().filter(|r| Precision::of_row(r) == precision).collect();
        let prefix = if present.len() > 1 { format!("{} ", precision.label()) } else { String::new() };
        lines.push(format!("{prefix}{}", vendor_note(&of)));
        lines.extend(size_lines(&of).into_iter().map(|l| format!("{prefix}{l}")));
    }
    lines
}

/// The per-size lines of one precision's rows.
fn size_lines(rows: &[&Row]) -> Vec<String> {
    let mut sizes: Vec<String> = Vec::new();
    let mut figures: BTreeMap<String, SizeFigures> = BTreeMap::new();
    for r in rows {
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
        let peak = crate::experiments::num(r, "unit_peak_tflops");
        let f = figures.entry(size).or_default();
        if [Platform::Amd, Platform::Nvidia].iter().any(|p| vendor_name(*p) == kernel) {
            f.vendor = Some((gflops, peak));
            continue;
        }
        // Rows from before the unit column ran on the vector units.
        let unit = r.get("unit").and_then(|u| Unit::parse(u)).unwrap_or(Unit::Vector);
        if f.best.get(&unit).is_none_or(|(_, g, _)| gflops > *g) {
            f.best.insert(unit, (kernel, gflops, peak));
        }
    }
    let of_peak = |gflops: f64, peak: Option<f64>, unit: Unit| match peak {
        Some(t) if t > 0.0 => format!("; {:.0}% of the {} peak", 100.0 * gflops / (t * 1e3), unit.name()),
        _ => String::new(),
    };
    let vendor_text = |gflops: f64, peak: Option<f64>| match peak {
        Some(t) if t > 0.0 => format!("{gflops:.0} GFLOP/s, {:.0}% of its unit's peak", 100.0 * gflops / (t * 1e3)),
        _ => format!("{gflops:.0} GFLOP/s"),
    };
    let mut lines = Vec::new();
    for size in &sizes {
        let Some(f) = figures.get(size) else { continue };
        let several_units = f.best.len() > 1;
        for (&unit, (kernel, gflops, peak)) in &f.best {
            let which = if several_units { format!("best {} kernel", unit.name()) } else { "best kernel".to_string() };
            let share = of_peak(*gflops, *peak, unit);
            lines.push(match f.vendor {
                Some((v, vendor_peak)) => format!(
                    "{size}: {which} {kernel} {gflops:.0} GFLOP/s = {:.2} of the vendor BLAS ({}){share}",
                    gflops / v,
                    vendor_text(v, vendor_peak)
                ),
                None => format!("{size}: {which} {kernel} {gflops:.0} GFLOP/s (no vendor BLAS row){share}"),
            });
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_matrix_rung_is_named_after_the_platforms_units() {
        let row = |platform: &str, arch: &str, precision: &str| -> Row {
            [("platform", platform), ("arch", arch), ("precision", precision)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        for (platform, arch, precision, rung) in [
            ("amd", "gfx90a", "f64", "the MFMA rung the matrix units"),
            ("amd", "gfx90a", "f32", "the MFMA rung the matrix units"),
            ("nvidia", "sm_90", "f64", "the DMMA rung the FP64 tensor cores"),
            // The HIP-over-CUDA test runtime: the AMD path on an NVIDIA GPU, whose rungs are NVIDIA's.
            ("amd", "sm_90", "f64", "the DMMA rung the FP64 tensor cores"),
        ] {
            let r = row(platform, arch, precision);
            let note = vendor_note(&[&r]);
            assert!(note.contains(rung), "{platform} {arch} {precision}: {note}");
        }
        assert!(!vendor_note(&[&row("nvidia", "sm_90", "f32")]).contains("rung"));
    }
}
