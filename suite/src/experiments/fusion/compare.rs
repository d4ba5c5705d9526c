//! How `suite compare` compares fusion runs: each variant as a share of the same run's vendor BLAS speed.

use std::collections::BTreeMap;

use crate::report::compare::{is_ok, key, num, text, Comparison, Rec, Run, Values};

/// Fusion: each variant's device time as % of the vendor BLAS's speed on the same operation and size in the same
/// run (100% = as fast as cuBLAS/rocBLAS there), so GPUs of different bandwidth compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FusionComparison;

impl Comparison for FusionComparison {
    fn values(&self, experiment: &str, run: &Run) -> Result<Values, String> {
        let rows: Vec<&Rec> = run
            .rows(experiment)
            .iter()
            .filter(|r| is_ok(r) && r.get("measure").map(String::as_str) == Some("device"))
            .collect();
        let point = |r: &Rec| (text(r, "operation"), text(r, "elements"));
        let vendor: BTreeMap<(String, String), f64> = rows
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
        Ok(Values { unit: "% of the run's vendor BLAS speed (device time, same operation and size)".into(), by_key })
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
}
