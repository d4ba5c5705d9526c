//! One point's row of `counters.csv` from its profiled kernels and the experiment's row: the main kernel (the
//! longest) for occupancy, L2 hit rate, time and the shares of a peak (shared-memory pipe, FP64 pipe), sums over
//! every kernel for bytes, instructions and shared-memory wavefronts, and beside them
//! the model's figures (theoretical occupancy, counted bytes and FLOP).

use std::collections::BTreeMap;

use super::metrics::{figures, KernelFigures};
use super::table::{CounterRow, Status};
use super::{KernelRecord, KernelResources, Profiler};
use crate::device::Props;
use crate::occupancy_calculator::{self, Resources};

/// What a pass learned of one point.
#[derive(Debug, Clone, PartialEq)]
pub enum Profiled {
    /// Its kernels, in launch order (none: it launches none).
    Kernels(Vec<KernelRecord>),
    /// It is not in the profile; why.
    Missing(String),
    /// It is in the profile but cannot be read; why.
    Error(String),
}

/// What every row of one pass shares.
#[derive(Debug, Clone)]
pub struct PassContext<'a> {
    /// The device the run measured (its platform, name, arch and wave size go into every row; its limits into the
    /// calculator).
    pub props: &'a Props,
    /// The profiler.
    pub profiler: Profiler,
    /// The profiler and its version, for the `profiler` column.
    pub profiler_label: String,
}

/// The theoretical occupancy of a kernel with `resources` on `props`, %, from the suite's calculator; or why none.
pub fn calculated(props: &Props, resources: &KernelResources) -> Result<f64, String> {
    let registers = resources.registers_per_item.ok_or("the profiler did not report its registers")?;
    let lds = resources.lds_bytes_per_group.ok_or("the profiler did not report its LDS")?;
    let res = Resources {
        group_size: resources.group_size,
        registers_per_item: registers,
        sgprs: resources.sgprs,
        lds_bytes_per_group: lds,
    };
    occupancy_calculator::theoretical(props, res).map(|o| o.percent).map_err(|e| e.to_string())
}

/// The sum of `f` over `all`, when every one has it.
fn sum(all: &[KernelFigures], f: impl Fn(&KernelFigures) -> Option<f64>) -> Option<f64> {
    all.iter().map(f).sum()
}

/// The row of point `key` of `experiment`, whose row in the experiment's CSV is `row` (column → value).
pub fn counter_row(
    pass: &PassContext,
    experiment: &str,
    key: &str,
    row: &BTreeMap<String, String>,
    profiled: Profiled,
) -> CounterRow {
    let num = |c: &str| row.get(c).and_then(|v| v.parse::<f64>().ok());
    let props = pass.props;
    let mut out = CounterRow {
        experiment: experiment.to_string(),
        platform: props.platform.name().to_string(),
        device: props.name.clone(),
        arch: props.arch.to_string(),
        wave_size: props.wave_size.0,
        key: key.to_string(),
        status: Status::Ok,
        profiler: pass.profiler_label.clone(),
        cache: pass.profiler.cache_state().to_string(),
        kernels: None,
        main_kernel: String::new(),
        main_kernel_us: None,
        occupancy_achieved_pct: None,
        occupancy_theoretical_pct: None,
        theoretical_from: String::new(),
        occupancy_profiler_theoretical_pct: None,
        dram_read_bytes: None,
        dram_write_bytes: None,
        byte_count: num("byte_count"),
        dram_over_counted: None,
        l2_hit_pct: None,
        fp32_inst: None,
        fp64_inst: None,
        fp32_vector_flop: None,
        fp64_vector_flop: None,
        fp32_matrix_flop: None,
        fp64_matrix_flop: None,
        fp64_matrix_inst: None,
        flop_count: num("flop_count"),
        lds_wavefronts: None,
        lds_busy_pct: None,
        lds_bank_conflict_wavefronts: None,
        fp64_pipe_pct: None,
        message: String::new(),
    };
    let kernels = match profiled {
        Profiled::Missing(why) => {
            out.status = Status::Missing;
            out.message = why;
            return out;
        }
        Profiled::Error(why) => {
            out.status = Status::Error;
            out.message = why;
            return out;
        }
        Profiled::Kernels(kernels) => kernels,
    };
    out.kernels = Some(kernels.len());
    if kernels.is_empty() {
        out.status = Status::NoKernel;
        out.message = "the point launches no kernel (e.g. a copy by the driver's copy engine): nothing to count".into();
        return out;
    }
    let all: Vec<KernelFigures> = kernels.iter().map(|k| figures(pass.profiler, k, props.wave_size.0)).collect();
    let mut notes = Vec::new();
    // The longest kernel is the point's main one; with no length at all, the first.
    let main = (0..all.len()).fold(0, |best, i| match (all[i].length, all[best].length) {
        (Some(l), Some(b)) if l > b => i,
        (Some(_), None) => i,
        _ => best,
    });
    if all[main].length.is_none() {
        notes.push(
            "the profiler gave no kernel time nor active cycles: the first kernel is taken as the main one".to_string(),
        );
    }
    let m = &all[main];
    out.main_kernel = kernels[main].name.clone();
    out.main_kernel_us = m.duration_ns.map(|ns| ns / 1e3);
    out.occupancy_achieved_pct = m.achieved_pct;
    out.occupancy_profiler_theoretical_pct = m.profiler_theoretical_pct;
    out.l2_hit_pct = m.l2_hit_pct;
    out.lds_busy_pct = m.lds_busy_pct;
    out.fp64_pipe_pct = m.fp64_pipe_pct;
    match num("occupancy_pct") {
        Some(pct) => {
            out.occupancy_theoretical_pct = Some(pct);
            out.theoretical_from = "row".into();
        }
        None => match calculated(props, &kernels[main].resources) {
            Ok(pct) => {
                out.occupancy_theoretical_pct = Some(pct);
                out.theoretical_from = "calculator".into();
            }
            Err(why) => notes.push(format!("no theoretical occupancy for {}: {why}", out.main_kernel)),
        },
    }
    out.dram_read_bytes = sum(&all, |f| f.dram_read_bytes);
    out.dram_write_bytes = sum(&all, |f| f.dram_write_bytes);
    out.dram_over_counted = match (out.dram_read_bytes, out.dram_write_bytes, out.byte_count) {
        (Some(r), Some(w), Some(c)) if c > 0.0 => Some((r + w) / c),
        _ => None,
    };
    out.fp32_inst = sum(&all, |f| f.fp32_inst);
    out.fp64_inst = sum(&all, |f| f.fp64_inst);
    out.fp32_vector_flop = sum(&all, |f| f.fp32_vector_flop);
    out.fp64_vector_flop = sum(&all, |f| f.fp64_vector_flop);
    out.fp32_matrix_flop = sum(&all, |f| f.fp32_matrix_flop);
    out.fp64_matrix_flop = sum(&all, |f| f.fp64_matrix_flop);
    out.fp64_matrix_inst = sum(&all, |f| f.fp64_matrix_inst);
    out.lds_wavefronts = sum(&all, |f| f.lds_wavefronts);
    out.lds_bank_conflict_wavefronts = sum(&all, |f| f.lds_bank_conflict_wavefronts);
    out.message = notes.join("; ");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters::metrics::nvidia;
    use crate::counters::{markers, ncu};

    fn pass() -> PassContext<'static> {
        static PROPS: std::sync::OnceLock<Props> = std::sync::OnceLock::new();
        let props = PROPS.get_or_init(crate::occupancy_calculator::tests::h100);
        PassContext { props, profiler: Profiler::Ncu, profiler_label: "ncu 2025.3.1 (format sample)".into() }
    }

    fn csv_row(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn kernel(name: &str, ns: f64, read: f64, write: f64, achieved: f64) -> KernelRecord {
        let values = [
            (nvidia::DURATION, ns),
            (nvidia::DRAM_READ, read),
            (nvidia::DRAM_WRITE, write),
            (nvidia::ACHIEVED_PCT, achieved),
            (nvidia::L2_HIT_PCT, 12.5),
        ];
        KernelRecord {
            name: name.into(),
            duration_ns: Some(ns),
            values: values.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            resources: KernelResources {
                group_size: 256,
                registers_per_item: Some(32),
                sgprs: None,
                lds_bytes_per_group: Some(0),
            },
            ..KernelRecord::default()
        }
    }

    /// The format sample of ncu's output, through markers, into rows joined with the experiments' rows.
    #[test]
    fn the_ncu_sample_joins_to_its_points_rows() {
        let records = ncu::parse(ncu::tests::SAMPLE, "sample").unwrap();
        let windows = markers::windows(&records, 2).unwrap();
        let occupancy = csv_row(&[("occupancy_pct", "100.0"), ("byte_count", "201326592"), ("flop_count", "16777216")]);
        let mut w = windows.into_iter();
        let kernels = w.next().unwrap().unwrap();
        let r =
            counter_row(&pass(), "occupancy", "group_size/g=256,n=16777216", &occupancy, Profiled::Kernels(kernels));
        assert_eq!(r.status, Status::Ok, "{}", r.message);
        assert_eq!((r.kernels, r.main_kernel.as_str()), (Some(1), "occupancy_add"));
        assert_eq!(r.occupancy_achieved_pct, Some(87.21));
        assert_eq!((r.occupancy_theoretical_pct, r.theoretical_from.as_str()), (Some(100.0), "row"));
        assert_eq!(r.dram_over_counted, Some(1.0));
        assert_eq!(r.main_kernel_us, Some(71.232));
        // No occupancy_pct in matmul's row: the calculator on the kernel's registers (40) and shared memory (8 KiB)
        // in groups of 256.
        let kernels = w.next().unwrap().unwrap();
        let matmul = csv_row(&[("byte_count", "12582912"), ("flop_count", "67108864")]);
        let r = counter_row(&pass(), "matmul", "naive/m=128", &matmul, Profiled::Kernels(kernels));
        let want = crate::occupancy_calculator::theoretical(
            pass().props,
            Resources { group_size: 256, registers_per_item: 40, sgprs: None, lds_bytes_per_group: 8192 },
        )
        .unwrap()
        .percent;
        assert_eq!((r.occupancy_theoretical_pct, r.theoretical_from.as_str()), (Some(want), "calculator"));
        assert_eq!(r.occupancy_profiler_theoretical_pct, Some(100.0));
        assert_eq!(r.fp32_inst, None, "a memory-set profile counts no instructions");
        // The sample has no shared-memory or pipe metric: those columns are empty, and the row is still `ok`.
        assert_eq!((r.status, r.lds_wavefronts, r.lds_busy_pct), (Status::Ok, None, None));
        assert_eq!((r.lds_bank_conflict_wavefronts, r.fp64_pipe_pct), (None, None));
    }

    #[test]
    fn shared_memory_wavefronts_are_summed_and_the_shares_of_a_peak_are_the_main_kernels() {
        let with = |mut k: KernelRecord, wavefronts: f64, busy: f64, conflicts: f64, fp64: f64| {
            for (name, v) in [
                (nvidia::LDS_WAVEFRONTS, wavefronts),
                (nvidia::LDS_BUSY_PCT, busy),
                (nvidia::LDS_BANK_CONFLICTS, conflicts),
                (nvidia::FP64_PIPE_PCT, fp64),
            ] {
                k.values.insert(name.to_string(), v);
            }
            k
        };
        let kernels = vec![
            with(kernel("reduce", 100.0, 1.0, 1.0, 90.0), 10.0, 5.0, 1.0, 2.0),
            with(kernel("splitk", 900.0, 1.0, 1.0, 40.0), 1000.0, 60.0, 32.0, 75.0),
        ];
        let r = counter_row(&pass(), "matmul", "k", &csv_row(&[]), Profiled::Kernels(kernels.clone()));
        assert_eq!(r.main_kernel, "splitk");
        assert_eq!((r.lds_wavefronts, r.lds_bank_conflict_wavefronts), (Some(1010.0), Some(33.0)));
        assert_eq!((r.lds_busy_pct, r.fp64_pipe_pct), (Some(60.0), Some(75.0)));
        // A kernel without the count makes the sum unknown, not smaller.
        let mut partial = kernels;
        partial[0].values.remove(nvidia::LDS_WAVEFRONTS);
        let r = counter_row(&pass(), "matmul", "k", &csv_row(&[]), Profiled::Kernels(partial));
        assert_eq!((r.lds_wavefronts, r.lds_bank_conflict_wavefronts), (None, Some(33.0)));
    }

    #[test]
    fn the_longest_kernel_is_the_main_one_and_bytes_are_summed() {
        let kernels = vec![kernel("splitk", 900.0, 100.0, 10.0, 40.0), kernel("reduce", 100.0, 20.0, 5.0, 90.0)];
        let row = csv_row(&[("byte_count", "100")]);
        let r = counter_row(&pass(), "matmul", "k", &row, Profiled::Kernels(kernels.clone()));
        assert_eq!(r.main_kernel, "splitk");
        assert_eq!(r.occupancy_achieved_pct, Some(40.0));
        assert_eq!((r.dram_read_bytes, r.dram_write_bytes), (Some(120.0), Some(15.0)));
        assert_eq!(r.dram_over_counted, Some(1.35));
        assert_eq!(r.l2_hit_pct, Some(12.5));
        // A kernel without a byte count makes the sum unknown, not smaller.
        let mut partial = kernels;
        partial[1].values.remove(nvidia::DRAM_WRITE);
        let r = counter_row(&pass(), "matmul", "k", &row, Profiled::Kernels(partial));
        assert_eq!((r.dram_read_bytes, r.dram_write_bytes, r.dram_over_counted), (Some(120.0), None, None));
    }

    #[test]
    fn points_without_kernels_or_counters_say_why() {
        let row = csv_row(&[("byte_count", "8")]);
        let r = counter_row(&pass(), "occupancy", "copy/n=1", &row, Profiled::Kernels(Vec::new()));
        assert_eq!((r.status, r.kernels), (Status::NoKernel, Some(0)));
        assert!(r.message.contains("launches no kernel"), "{}", r.message);
        assert_eq!(r.byte_count, Some(8.0));
        let r = counter_row(&pass(), "pt", "x", &row, Profiled::Missing("skipped: verification failed".into()));
        assert_eq!((r.status, r.message.as_str()), (Status::Missing, "skipped: verification failed"));
        let mut k = kernel("k", 1.0, 1.0, 1.0, 1.0);
        k.resources.registers_per_item = None;
        let r = counter_row(&pass(), "fusion", "y", &row, Profiled::Kernels(vec![k]));
        assert_eq!(r.occupancy_theoretical_pct, None);
        assert!(
            r.message.contains("no theoretical occupancy for k: the profiler did not report its registers"),
            "{}",
            r.message
        );
    }
}
