//! The run's copy reference: the driver's device-to-device copy that occupancy measures (the `copy` row of its
//! CSV), which smoke's and occupancy's comparisons take as each run's 100% and occupancy's roofline role calls the
//! run's memory ceiling. It has this home of its own, below both experiments, so neither reaches into the other.

use crate::report::compare::{is_ok, num, Rec, Run};

/// The driver's device-to-device copy in `run`, GB/s: its verified driver-copy row, wherever the run holds one
/// (occupancy's `copy` sweep writes it), the reference of every memory-bound comparison. Found by what the row is,
/// not by which experiment wrote it.
pub fn copy_gbps(run: &Run) -> Option<f64> {
    run.tables
        .values()
        .flat_map(|t| t.rows.iter())
        .find(|r| is_ok(r) && is_driver_copy(r))
        .and_then(|r| num(r, "gbps"))
        .filter(|g| *g > 0.0)
}

/// Whether an occupancy row is the driver's device-to-device copy (the `copy` sweep): the reference of the
/// comparisons and the memory ceiling of the run's roofline.
pub fn is_driver_copy(row: &Rec) -> bool {
    row.get("sweep").is_some_and(|s| s == "copy")
}

/// [`copy_gbps`], or why the run has none.
pub fn copy_or_reason(run: &Run) -> Result<f64, String> {
    copy_gbps(run).ok_or_else(|| {
        format!(
            "run {} has no copy reference (the `copy` row of occupancy.csv; `suite run occupancy --sweeps copy`)",
            run.index
        )
    })
}
