//! The fusion experiment's headline for `summary.md`: one Markdown table, a row per operation, size and precision
//! (FP64 right below FP32 of the same operation and size), with every variant's bandwidth and the ratios the seed
//! asks about, all from device time.

use std::collections::BTreeMap;

use super::derived::Table;
use super::{OPERATIONS, VARIANTS};

/// The lines of [`crate::experiments::Results::headlines`]: a caption, then one Markdown table (header,
/// separator, a row per operation, size and precision with a device-time row, FP64 below FP32). Columns: each
/// variant's GB/s, then fused over unfused, staged over generic fused and fused over the vendor BLAS as speed ratios
/// (time of the second / time of the first, in the row's precision: above 1, the first is faster). A point not
/// measured is `–`. Empty when no row is `ok`.
pub fn table(rows: &[BTreeMap<String, String>]) -> Vec<String> {
    let ok: Vec<&BTreeMap<String, String>> = crate::experiments::ok_rows(rows).collect();
    let Some(first) = ok.first() else { return Vec::new() };
    let vendor = if first.get("platform").is_some_and(|p| p == "amd") { "rocBLAS" } else { "cuBLAS" };
    let table = Table::new(&ok);
    let cell = |v: Option<f64>, digits: usize| v.map_or_else(|| "–".to_string(), |v| format!("{v:.digits$}"));
    let mut body = Vec::new();
    for op in OPERATIONS {
        let mut sizes: Vec<usize> = table.precisions().iter().flat_map(|p| table.elements(op, p)).collect();
        sizes.sort_unstable();
        sizes.dedup();
        for n in sizes {
            for p in table.precisions() {
                let t = |v: &str| table.time(op, p, v, n, "device");
                if VARIANTS.iter().all(|v| t(v).is_none()) {
                    continue;
                }
                let over = |a: &str, b: &str| Some(t(b)? / t(a)?);
                let mut cells = vec![op.to_string(), elements(n), p.to_string()];
                cells.extend(VARIANTS.iter().map(|v| cell(table.rate(op, p, v, n, "device"), 0)));
                cells.extend(
                    [over("fused", "unfused"), over("fused_staged", "fused"), over("fused", "vendor")]
                        .map(|r| cell(r, 2)),
                );
                body.push(format!("| {} |", cells.join(" | ")));
            }
        }
    }
    if body.is_empty() {
        return Vec::new();
    }
    let head = [
        "operation".to_string(),
        "n".to_string(),
        "precision".to_string(),
        "hand GB/s".to_string(),
        "unfused GB/s".to_string(),
        "fused GB/s".to_string(),
        "staged GB/s".to_string(),
        format!("{vendor} GB/s"),
        "fused/unfused".to_string(),
        "staged/fused".to_string(),
        "fused/vendor".to_string(),
    ];
    // Text columns (operation, precision) left, numbers right.
    let align: Vec<&str> =
        head.iter().enumerate().map(|(i, _)| if i == 0 || i == 2 { "---" } else { "---:" }).collect();
    let mut lines = vec![
        format!(
            "Device time, result left on the device. GB/s = bytes read / time (4 bytes per element in FP32, 8 in \
             FP64). {vendor}: sdot and sasum in FP32 rows, ddot and dasum in FP64 rows (for sum: sasum or dasum of \
             the same vector, a stand-in). Ratios are speeds (time of the second / time of the first; > 1: the \
             first is faster); staged = fused + run-time staged."
        ),
        format!("| {} |", head.join(" | ")),
        format!("|{}|", align.join("|")),
    ];
    lines.extend(body);
    lines
}

/// A size as the plots write it: 2^k for a power of two, the integer otherwise.
fn elements(n: usize) -> String {
    if n.is_power_of_two() {
        format!("2^{}", n.ilog2())
    } else {
        n.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(op: &str, v: &str, n: usize, m: &str, t: f64, gbps: f64) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("status".to_string(), "ok".to_string()),
            ("platform".into(), "nvidia".into()),
            ("operation".into(), op.into()),
            ("variant".into(), v.into()),
            ("elements".into(), n.to_string()),
            ("measure".into(), m.into()),
            ("time_ms_median".into(), t.to_string()),
            ("gbps".into(), gbps.to_string()),
        ])
    }

    #[test]
    fn the_headline_is_one_table_with_a_row_per_operation_and_size() {
        let mut rows = vec![
            row("dot", "hand", 1024, "device", 0.02, 400.0),
            row("dot", "unfused", 1024, "device", 0.04, 200.0),
            row("dot", "fused", 1024, "device", 0.02, 400.0),
            row("dot", "fused_staged", 1024, "device", 0.01, 800.0),
            row("dot", "vendor", 1024, "device", 0.03, 266.7),
            // End-to-end rows are not in the table; a size with only those has no row.
            row("dot", "fused", 1024, "end_to_end", 1.0, 8.0),
            row("dot", "fused", 4096, "end_to_end", 1.0, 32.0),
            row("sum", "fused", 1000, "device", 0.01, 400.0),
            row("copy", "device_copy", 1024, "device", 0.01, 800.0),
        ];
        let mut f64_rows = [
            row("dot", "fused", 1024, "device", 0.04, 400.0),
            row("dot", "vendor", 1024, "device", 0.05, 320.0),
            row("dot", "fused", 4096, "device", 0.1, 640.0),
        ];
        for r in &mut f64_rows {
            r.insert("precision".into(), "f64".into());
        }
        rows.extend(f64_rows);
        let mut failed = row("asum", "fused", 1024, "device", 0.01, 400.0);
        failed.insert("status".into(), "fail".into());
        rows.push(failed);
        let lines = table(&rows);
        assert!(lines[0].starts_with("Device time") && lines[0].contains("ddot and dasum in FP64 rows"), "{lines:?}");
        // Rows without a precision column (CSVs from before FP64) are FP32; FP64 sits below FP32 at each size.
        assert_eq!(
            lines[1..],
            [
                "| operation | n | precision | hand GB/s | unfused GB/s | fused GB/s | staged GB/s | cuBLAS GB/s \
                 | fused/unfused | staged/fused | fused/vendor |",
                "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
                "| sum | 1000 | f32 | – | – | 400 | – | – | – | – | – |",
                "| dot | 2^10 | f32 | 400 | 200 | 400 | 800 | 267 | 2.00 | 2.00 | 1.50 |",
                "| dot | 2^10 | f64 | – | – | 400 | – | 320 | – | – | 1.25 |",
                "| dot | 2^12 | f64 | – | – | 640 | – | – | – | – | – |",
            ]
        );
        assert!(table(&[]).is_empty());
        assert!(table(&rows[5..7]).is_empty(), "end-to-end rows alone make no table");
    }
}
