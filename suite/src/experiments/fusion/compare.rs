//! How `suite compare` compares fusion runs: each variant as a share of the same run's vendor BLAS speed, in the
//! row's own precision (FP64 against ddot/dasum, FP32 against sdot/sasum), and a headline of the fused kernel's
//! bandwidth per run with FP64 beside FP32.

use std::collections::BTreeMap;

use super::derived::precision;
use super::OPERATIONS;
use crate::report::compare::{fmt_num, is_ok, key, num, table, text, Comparison, Headline, Rec, Run, Values};

/// Fusion: each variant's device time as % of the vendor BLAS's speed on the same operation, precision and size
/// in the same run (100% = as fast as cuBLAS/rocBLAS there), so GPUs of different bandwidth compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FusionComparison;

/// The fused kernel's (GB/s, % of the vendor BLAS) by run index.
type PerRun = BTreeMap<usize, (f64, Option<f64>)>;

/// A run's `ok` device-time rows of `experiment`.
fn device_rows<'r>(experiment: &str, run: &'r Run) -> Vec<&'r Rec> {
    run.rows(experiment).iter().filter(|r| is_ok(r) && r.get("measure").map(String::as_str) == Some("device")).collect()
}

impl Comparison for FusionComparison {
    fn values(&self, experiment: &str, run: &Run) -> Result<Values, String> {
        let rows = device_rows(experiment, run);
        let point = |r: &Rec| (text(r, "operation"), precision(r).to_string(), text(r, "elements"));
        let vendor: BTreeMap<(String, String, String), f64> = rows
            .iter()
            .filter(|r| r.get("variant").map(String::as_str) == Some("vendor"))
            .filter_map(|r| Some((point(r), num(r, "time_ms_median")?)))
            .collect();
        if vendor.is_empty() {
            return Err(format!("run {} has no vendor BLAS rows to normalise by", run.index));
        }
        let by_key = rows
            .iter()
            .filter(|r| !matches!(r.get("variant").map(String::as_str), Some("vendor" | "device_copy")))
            .filter_map(|r| Some((key(r)?, vendor.get(&point(r))? / num(r, "time_ms_median")? * 100.0)))
            .collect();
        Ok(Values {
            unit: "% of the run's vendor BLAS speed (device time, same operation, precision and size)".into(),
            by_key,
            ..Values::default()
        })
    }

    /// The fused kernel per run: GB/s and % of the same run's vendor BLAS, a row per operation, size and precision
    /// (FP64 below FP32), device time.
    fn headline(&self, experiment: &str, runs: &[&Run]) -> Headline {
        // (operation index, elements, precision) → per run index (GB/s, % of vendor).
        let mut cells: BTreeMap<(usize, u64, String), PerRun> = BTreeMap::new();
        for (i, run) in runs.iter().enumerate() {
            let rows = device_rows(experiment, run);
            let find = |op: &str, p: &str, n: &str, v: &str| {
                rows.iter().find(|r| {
                    text(r, "operation") == op
                        && precision(r) == p
                        && text(r, "elements") == n
                        && text(r, "variant") == v
                })
            };
            for r in rows.iter().filter(|r| text(r, "variant") == "fused") {
                let (op, p, n) = (text(r, "operation"), precision(r), text(r, "elements"));
                let (Some(o), Ok(elements), Some(gbps)) =
                    (OPERATIONS.iter().position(|x| *x == op), n.parse::<u64>(), num(r, "gbps"))
                else {
                    continue;
                };
                let vendor = find(&op, p, &n, "vendor").and_then(|v| num(v, "time_ms_median"));
                let share = vendor.zip(num(r, "time_ms_median")).map(|(v, t)| v / t * 100.0);
                cells.entry((o, elements, p.to_string())).or_default().insert(i, (gbps, share));
            }
        }
        if cells.is_empty() {
            return Headline::default();
        }
        let mut head = vec!["operation".to_string(), "n".to_string(), "precision".to_string()];
        head.extend(runs.iter().map(|r| format!("run {} fused GB/s (% of vendor)", r.index)));
        let rows: Vec<Vec<String>> = cells
            .iter()
            .map(|((o, n, p), per_run)| {
                let mut row = vec![OPERATIONS[*o].to_string(), n.to_string(), p.clone()];
                row.extend((0..runs.len()).map(|i| match per_run.get(&i) {
                    Some((g, Some(s))) => format!("{} ({s:.0}%)", fmt_num(*g)),
                    Some((g, None)) => fmt_num(*g),
                    None => "-".into(),
                }));
                row
            })
            .collect();
        Headline {
            markdown: format!(
                "The fused kernel (one launch, the map fused into the reduction's loads) per run, device time; % of \
                 the same run's vendor BLAS in the same precision (FP32: sdot/sasum, FP64: ddot/dasum; sum against \
                 sasum/dasum, a stand-in):\n\n{}",
                table(&head, &rows)
            ),
            plots: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::compare::read_run;

    #[test]
    fn fusion_is_compared_as_a_share_of_the_vendor_speed() {
        let root = tempfile::tempdir().unwrap();
        let (a, b) = (root.path().join("a"), root.path().join("b"));
        let csv = |vendor_ms: f64| {
            let row = |variant: &str, measure: &str, ms: f64| {
                format!(
                    "fusion,nvidia,X,sm_90,32,dot,{variant},1024,{measure},20,1,graph,true,,,{ms},{ms},{ms},1,0,0,ok,,\
                     dot/{variant}/n=1024/{measure}\n"
                )
            };
            format!(
                "experiment,platform,device,arch,wave_size,operation,variant,elements,measure,reps,launches_per_rep,\
                 timing,l2_resident,flop_count,byte_count,time_ms_median,time_ms_min,time_ms_max,gbps,max_rel_err,\
                 tolerance,status,message,key\n{}{}{}",
                row("vendor", "device", vendor_ms),
                row("fused", "device", 0.01),
                row("fused", "end_to_end", 0.02)
            )
        };
        for (dir, vendor_ms) in [(&a, 0.02), (&b, 0.01)] {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join("run.json"), "{}").unwrap();
            std::fs::write(dir.join("fusion.csv"), csv(vendor_ms)).unwrap();
        }
        let run = read_run(&a, 1).unwrap();
        let values = FusionComparison.values("fusion", &run).unwrap();
        // The fused kernel takes half the vendor's time: 200% of its speed; end-to-end rows are not compared.
        assert_eq!(values.by_key.into_iter().collect::<Vec<_>>(), [("dot/fused/n=1024/device".to_string(), 200.0)]);
        let other = read_run(&b, 2).unwrap();
        assert_eq!(FusionComparison.values("fusion", &other).unwrap().by_key["dot/fused/n=1024/device"], 100.0);
    }

    /// A run with FP64 rows (the precision column) beside a run from before FP64 (none): each FP64 row is measured
    /// against the FP64 vendor row, never the FP32 one, and the headline puts FP64 below FP32.
    #[test]
    fn fp64_is_compared_with_the_fp64_vendor_and_shown_beside_fp32() {
        let root = tempfile::tempdir().unwrap();
        let (a, b) = (root.path().join("a"), root.path().join("b"));
        let head =
            "experiment,platform,device,arch,wave_size,operation,variant,elements,measure,reps,launches_per_rep,\
                    timing,l2_resident,flop_count,byte_count,time_ms_median,time_ms_min,time_ms_max,gbps,max_rel_err,\
                    tolerance,status,message,key";
        let row = |precision: Option<&str>, variant: &str, ms: f64, gbps: f64| {
            let p = precision.map(|p| format!("{p},")).unwrap_or_default();
            let suffix = precision.filter(|p| *p == "f64").map(|p| format!("/{p}")).unwrap_or_default();
            format!(
                "fusion,nvidia,X,sm_90,32,dot,{p}{variant},1024,device,20,1,graph,true,,,{ms},{ms},{ms},{gbps},0,0,ok,,\
                 dot/{variant}/n=1024/device{suffix}\n"
            )
        };
        let old = format!("{head}\n{}{}", row(None, "vendor", 0.02, 200.0), row(None, "fused", 0.01, 400.0));
        let new = format!(
            "{}\n{}{}{}{}",
            head.replace("operation,variant", "operation,precision,variant"),
            row(Some("f32"), "vendor", 0.02, 200.0),
            row(Some("f32"), "fused", 0.01, 400.0),
            row(Some("f64"), "vendor", 0.05, 160.0),
            row(Some("f64"), "fused", 0.025, 320.0),
        );
        for (dir, csv) in [(&a, old), (&b, new)] {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join("run.json"), "{}").unwrap();
            std::fs::write(dir.join("fusion.csv"), csv).unwrap();
        }
        let (old, new) = (read_run(&a, 1).unwrap(), read_run(&b, 2).unwrap());
        let values = FusionComparison.values("fusion", &new).unwrap().by_key;
        // FP32 keys are those of before FP64, so the two runs join on them.
        assert_eq!(values["dot/fused/n=1024/device"], 200.0);
        assert_eq!(FusionComparison.values("fusion", &old).unwrap().by_key["dot/fused/n=1024/device"], 200.0);
        assert_eq!(values["dot/fused/n=1024/device/f64"], 200.0, "against ddot's 0.05 ms, not sdot's 0.02");
        let headline = FusionComparison.headline("fusion", &[&old, &new]);
        assert!(
            headline.markdown.contains(
                "| operation | n | precision | run 1 fused GB/s (% of vendor) | run 2 fused GB/s (% of vendor) |\n\
                 |---|---:|---:|---:|---:|\n\
                 | dot | 1024 | f32 | 400 (200%) | 400 (200%) |\n\
                 | dot | 1024 | f64 | - | 320 (200%) |\n"
            ),
            "{}",
            headline.markdown
        );
    }
}
