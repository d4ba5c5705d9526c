//! The table derived from PT's rows: `pt-speedup.csv`, one line per non-PT/PT pair, written beside `pt.csv` by
//! [`crate::experiments::Results::derived_tables`] (after a run, by `suite plot` and by `suite merge`).

use super::pairing::{pairs, CsvRow, Pair};
use crate::experiments::ok_rows;

/// The derived table's file name.
pub const SPEEDUP_CSV: &str = "pt-speedup.csv";

/// The derived tables of `rows`: (file name, CSV text); none when no row is verified (as there are no plots then).
pub fn tables(rows: &[CsvRow]) -> Vec<(String, String)> {
    if ok_rows(rows).next().is_none() {
        return Vec::new();
    }
    vec![(SPEEDUP_CSV.to_string(), speedup_csv(&pairs(rows)))]
}

/// The pairs as CSV text (`pt-speedup.csv`).
pub fn speedup_csv(pairs: &[Pair]) -> String {
    let mut s = String::from("use_case,variant,flavour,items,fmas,levels,steps,clock,non_pt_ms,pt_ms,speedup\n");
    for p in pairs {
        s.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{}\n",
            p.use_case,
            p.variant,
            p.flavour,
            p.items,
            p.fmas,
            p.levels,
            p.steps,
            p.clock,
            p.non_pt_ms,
            p.pt_ms,
            p.speedup()
        ));
    }
    s
}
