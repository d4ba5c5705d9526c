//! How long a point will take, before it runs: from the operations and bytes of one launch ([`Work`], counted by
//! each experiment), the device's ceilings ([`crate::peaks`]) and the runner's timing policy. `suite run` prints
//! the sum before it starts, and a point estimated past `--max-point-seconds` (a typo such as 70000 for 7000) becomes
//! an `invalid` row naming its estimate and the flag, instead of running for hours.
//!
//! The model errs long: each kind of kernel is credited with a share of the device's peak it reaches in the
//! reference runs, rounded down (a naive matmul about 1% of FP32, a copy about 70% of memory bandwidth). The peak is
//! the one of the precision and hardware unit the work runs on (FP32 vector unless the work says otherwise: FP64
//! work is counted at the FP64 peaks).

use crate::peaks::{Ceilings, Unit};
use crate::precision::Precision;

use super::TARGET_BATCH_MS;
use crate::options::RunOptions;

/// What one launch (or, for a host-timed case, one sequence) of a point does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Work {
    /// Floating-point operations, as the experiment counts them (matmul: 2·M·N·K).
    pub flops: f64,
    /// Bytes through device memory at the least: each input read once, each output written once.
    pub bytes: f64,
    /// The share of the peak of `precision` on `unit` and of the memory bandwidth this kind of kernel reaches, in
    /// (0, 1].
    pub share_of_peak: f64,
    /// The precision of the FLOP (FP32 unless set with [`Work::on`]).
    pub precision: Precision,
    /// The unit they run on (the vector units unless set with [`Work::on`]).
    pub unit: Unit,
    /// Seconds one launch takes whatever the device: a spin kernel's wait, launches and host round trips.
    pub floor_s: f64,
    /// Seconds of work the point does once before it is timed, beyond its own launches (matmul's FP64 reference
    /// at a new shape, say), already at the device's speed.
    pub setup_s: f64,
    /// Whether `flops` and `bytes` are the launch's counted work (written to the CSV's `flop_count` and
    /// `byte_count`, read by the roofline), rather than a bound good only for the estimate.
    pub counted: bool,
}

impl Work {
    /// A kernel of `flops` and `bytes` that reaches `share_of_peak` of the device's ceilings.
    pub fn kernel(flops: f64, bytes: f64, share_of_peak: f64) -> Work {
        Work {
            flops,
            bytes,
            share_of_peak,
            precision: Precision::F32,
            unit: Unit::Vector,
            floor_s: 0.0,
            setup_s: 0.0,
            counted: true,
        }
    }

    /// Work that takes `seconds` whatever the device (waits, host round trips).
    pub fn fixed(seconds: f64) -> Work {
        Work { floor_s: seconds, counted: false, ..Work::kernel(0.0, 0.0, 1.0) }
    }

    /// This work's FLOP in `precision` on `unit`: counted at that peak ([`Ceilings::peak_tflops`]).
    pub fn on(self, precision: Precision, unit: Unit) -> Work {
        Work { precision, unit, ..self }
    }

    /// Nothing to estimate (an `invalid` point, which never runs).
    pub fn none() -> Work {
        Work::fixed(0.0)
    }

    /// This work with `floor_s` raised to at least `seconds`.
    pub fn at_least(self, seconds: f64) -> Work {
        Work { floor_s: self.floor_s.max(seconds), ..self }
    }

    /// This work with its FLOP and bytes marked as a bound for the estimate, not a count for the CSV.
    pub fn bound(self) -> Work {
        Work { counted: false, ..self }
    }

    /// This work with `seconds` of one-off setup added.
    pub fn with_setup(self, seconds: f64) -> Work {
        Work { setup_s: self.setup_s + seconds, ..self }
    }
}

/// Share of the memory bandwidth a streaming kernel (a copy, a triad, a reduction) is credited with: the reference
/// runs reach 0.6 to 1.0 of the device copy at large sizes and less at small ones.
pub const STREAMING_SHARE: f64 = 0.5;

/// Seconds one launch costs at the least, for kernels so short that only the launch shows (about 2 to 5 µs on the
/// stream in the reference runs).
pub const LAUNCH_S: f64 = 5e-6;

/// Seconds of host work per point besides launches: allocation, initialisation, download and comparison. From the
/// reference runs: the quick preset's 259 points took 37.7 s on an H100, about 0.15 s each with their timing.
pub const POINT_OVERHEAD_S: f64 = 0.05;

/// The host writes inputs and checks outputs at about this rate, bytes per second (single-threaded loops).
pub const HOST_BYTES_PER_S: f64 = 1e9;

/// Memory bandwidth assumed where the device reports none, GB/s: low, so estimates err long.
pub const UNKNOWN_MEMORY_GBPS: f64 = 500.0;

/// FP64's share of the FP32 vector peak assumed where the FP64 rate is not known (a part not in the peaks table):
/// 1/64, the slowest ratio of current parts (NVIDIA's consumer GPUs), so estimates err long.
pub const UNKNOWN_FP64_SHARE: f64 = 1.0 / 64.0;

/// The peak `work` is counted at, TFLOP/s, and its name: the peak of its precision and unit, else (a path the device
/// lacks or whose rate is unknown) the vector peak of its precision, else FP64 at [`UNKNOWN_FP64_SHARE`] of FP32.
fn peak_of(work: &Work, ceilings: &Ceilings) -> (f64, String) {
    let (p, u) = (work.precision, work.unit);
    let name = |unit: Unit| format!("{} {}", p.label(), unit.name());
    match (ceilings.peak_tflops(p, u), ceilings.peak_tflops(p, Unit::Vector)) {
        (Some(t), _) => (t, name(u)),
        (None, Some(t)) => (t, name(Unit::Vector)),
        (None, None) => (
            ceilings.fp32_vector_tflops * UNKNOWN_FP64_SHARE,
            format!("{} (1/64 of FP32 assumed: its rate is not known)", name(Unit::Vector)),
        ),
    }
}

/// The estimate of one point.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// One launch, seconds.
    pub launch_s: f64,
    /// The whole point: setup, host work, the verified launch and the timing, seconds.
    pub point_s: f64,
    /// How `launch_s` was reached, in words, for the `invalid` row.
    pub reason: String,
}

/// Seconds one launch of `work` takes on a device with `ceilings`: the slower of its operations at the peak of its
/// precision and unit and its bytes at the memory bandwidth, each at the kind's share, and never less than its floor.
pub fn launch_seconds(work: &Work, ceilings: &Ceilings) -> (f64, String) {
    let share = work.share_of_peak.clamp(1e-6, 1.0);
    let (peak_tflops, peak_name) = peak_of(work, ceilings);
    let flop_rate = peak_tflops * 1e12 * share;
    let byte_rate = ceilings.memory_gbps.unwrap_or(UNKNOWN_MEMORY_GBPS) * 1e9 * share;
    let compute_s = work.flops / flop_rate;
    let memory_s = work.bytes / byte_rate;
    let percent = share * 100.0;
    let (s, why) = if compute_s >= memory_s && work.flops > 0.0 {
        (
            compute_s,
            format!("{:.3e} FLOP at {percent:.0}% of the {peak_tflops:.1} TFLOP/s {peak_name} peak", work.flops),
        )
    } else if work.bytes > 0.0 {
        (
            memory_s,
            format!(
                "{:.3e} bytes at {percent:.0}% of {:.0} GB/s",
                work.bytes,
                ceilings.memory_gbps.unwrap_or(UNKNOWN_MEMORY_GBPS)
            ),
        )
    } else {
        (0.0, String::new())
    };
    if work.floor_s > s {
        (work.floor_s, format!("at least {} by its waits and launches", seconds_text(work.floor_s)))
    } else {
        (s, why)
    }
}

/// The estimate of a point under the runner's policy ([`super::time_case`]): one verified launch, then a sizing
/// launch and batches of at least [`TARGET_BATCH_MS`] for the warm-up and repetitions within `--time-budget`, but
/// never fewer than 3 timed launches; plus the point's setup and host work.
pub fn estimate(work: &Work, ceilings: &Ceilings, opts: &RunOptions) -> Estimate {
    let (launch_s, why) = launch_seconds(work, ceilings);
    let batch_s = launch_s.max(TARGET_BATCH_MS / 1e3);
    let timing_s = (f64::from(opts.warmup + opts.reps) * batch_s).min(opts.time_budget_s).max(4.0 * launch_s);
    let host_s = POINT_OVERHEAD_S + work.bytes / HOST_BYTES_PER_S;
    let point_s = work.setup_s + host_s + launch_s + timing_s;
    let mut reason = format!("one launch about {}", seconds_text(launch_s));
    if !why.is_empty() {
        reason.push_str(&format!(" ({why})"));
    }
    reason.push_str(", 1 to verify and at least 4 to time");
    if work.setup_s > 0.0 {
        reason.push_str(&format!(", {} of setup", seconds_text(work.setup_s)));
    }
    Estimate { launch_s, point_s, reason }
}

/// Why a point estimated at `estimate` does not run under a limit of `max_point_s`, or `None` when it does.
pub fn over_limit(estimate: &Estimate, max_point_s: f64) -> Option<String> {
    (estimate.point_s > max_point_s).then(|| {
        format!(
            "estimated {} for this point, over --max-point-seconds {}: {}; raise --max-point-seconds to run it",
            seconds_text(estimate.point_s),
            max_point_s,
            estimate.reason
        )
    })
}

/// Seconds as people read them: `850 µs`, `12.3 ms`, `4.2 s`, `1.5 h`.
pub fn seconds_text(s: f64) -> String {
    if s < 1e-3 {
        format!("{:.0} µs", s * 1e6)
    } else if s < 1.0 {
        format!("{:.1} ms", s * 1e3)
    } else if s < 3600.0 {
        format!("{s:.1} s")
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Timing;

    fn h200() -> Ceilings {
        Ceilings {
            part: "H200".into(),
            fp32_vector_tflops: 66.9,
            fp32_packed_tflops: None,
            fp32_matrix_tflops: None,
            fp64_vector_tflops: Some(33.5),
            fp64_matrix_tflops: Some(66.9),
            memory_gbps: Some(4800.0),
            vendor_sgemm_units: "",
            vendor_dgemm_units: "",
            source: String::new(),
        }
    }

    fn opts() -> RunOptions {
        RunOptions {
            out_dir: Default::default(),
            resume: false,
            shard: None,
            warmup: 3,
            reps: 20,
            time_budget_s: 2.0,
            timing: Timing::Graph,
            max_point_s: 60.0,
            telemetry: true,
        }
    }

    #[test]
    fn the_issues_typo_is_refused_and_its_intended_size_is_not() {
        // `--sizes 70000` for 7000: the naive kernel at 1% of the peak.
        let naive = |n: f64| Work::kernel(2.0 * n * n * n, 12.0 * n * n, 0.01);
        let e = estimate(&naive(70000.0), &h200(), &opts());
        // 6.86e14 FLOP at 0.669 TFLOP/s: 1025 s per launch, 5 launches.
        assert!((e.launch_s - 6.86e14 / 0.669e12).abs() / e.launch_s < 1e-3, "{e:?}");
        assert!(e.point_s > 5.0 * e.launch_s);
        let why = over_limit(&e, 60.0).unwrap();
        assert!(why.starts_with("estimated 1.4 h for this point, over --max-point-seconds 60"), "{why}");
        assert!(why.contains("6.860e14 FLOP at 1% of the 66.9 TFLOP/s FP32 vector peak"), "{why}");
        assert!(why.ends_with("raise --max-point-seconds to run it"), "{why}");
        // 7000: 1.0 s per launch, about 5 s in all.
        let e = estimate(&naive(7000.0), &h200(), &opts());
        assert!(e.point_s < 10.0 && over_limit(&e, 60.0).is_none(), "{e:?}");
    }

    #[test]
    fn fast_points_cost_their_batches_within_the_budget() {
        // A 10 µs kernel: 23 batches of 1 ms, well inside the 2 s budget.
        let copy = Work::kernel(0.0, 0.7 * 4.8e12 * 10e-6, 0.7);
        let e = estimate(&copy, &h200(), &opts());
        assert!((e.launch_s - 10e-6).abs() < 1e-9, "{e:?}");
        let want = POINT_OVERHEAD_S + copy.bytes / HOST_BYTES_PER_S + 10e-6 + 23.0 * 1e-3;
        assert!((e.point_s - want).abs() < 1e-9, "{} vs {want}", e.point_s);
        // A 300 ms kernel: the budget caps the timing, but 4 launches are the least.
        let slow = Work::fixed(0.3);
        let e = estimate(&slow, &h200(), &opts());
        assert!((e.point_s - (POINT_OVERHEAD_S + 0.3 + 2.0)).abs() < 1e-9, "{e:?}");
        let e = estimate(&Work::fixed(1.0), &h200(), &opts());
        assert!((e.point_s - (POINT_OVERHEAD_S + 1.0 + 4.0)).abs() < 1e-9, "{e:?}");
        assert!(e.reason.contains("at least 1.0 s by its waits"), "{e:?}");
    }

    #[test]
    fn fp64_work_is_counted_at_the_fp64_peak_of_its_unit() {
        // 8192³ in FP64: 1.1 PFLOP. On the vector units (33.5 TFLOP/s) at 50%: 65.6 ms; on the tensor cores
        // (66.9) at 50%: 32.9 ms; the same FLOP in FP32 (66.9 vector): 32.9 ms.
        let flops = 2.0 * 8192f64.powi(3);
        let at = |p, u| launch_seconds(&Work::kernel(flops, 0.0, 0.5).on(p, u), &h200());
        let (vector, why) = at(Precision::F64, Unit::Vector);
        assert!((vector - flops / (33.5e12 * 0.5)).abs() < 1e-9, "{vector}");
        assert!(why.contains("33.5 TFLOP/s FP64 vector peak"), "{why}");
        let (matrix, why) = at(Precision::F64, Unit::Matrix);
        assert!((matrix - flops / (66.9e12 * 0.5)).abs() < 1e-9, "{matrix}");
        assert!(why.contains("FP64 matrix peak"), "{why}");
        assert!((at(Precision::F32, Unit::Vector).0 - matrix).abs() < 1e-12);
        // A path the device lacks (FP32 matrix on NVIDIA) counts at its precision's vector peak; an unknown FP64 rate
        // at 1/64 of FP32.
        assert!((at(Precision::F32, Unit::Matrix).0 - flops / (66.9e12 * 0.5)).abs() < 1e-9);
        let unknown = Ceilings { fp64_vector_tflops: None, fp64_matrix_tflops: None, ..h200() };
        let (s, why) = launch_seconds(&Work::kernel(flops, 0.0, 0.5).on(Precision::F64, Unit::Matrix), &unknown);
        assert!((s - flops / (66.9e12 / 64.0 * 0.5)).abs() / s < 1e-12, "{s}");
        assert!(why.contains("1/64 of FP32 assumed"), "{why}");
    }

    #[test]
    fn memory_bound_work_uses_the_bandwidth_and_unknown_bandwidth_errs_low() {
        let w = Work::kernel(1e9, 4.8e9, 1.0);
        assert!((launch_seconds(&w, &h200()).0 - 1e-3).abs() < 1e-12);
        let unknown = Ceilings { memory_gbps: None, ..h200() };
        assert!((launch_seconds(&w, &unknown).0 - 4.8e9 / (UNKNOWN_MEMORY_GBPS * 1e9)).abs() < 1e-12);
        assert_eq!(seconds_text(850e-6), "850 µs");
        assert_eq!(seconds_text(0.0123), "12.3 ms");
        assert_eq!(seconds_text(4.24), "4.2 s");
        assert_eq!(seconds_text(5400.0), "1.5 h");
        assert!(estimate(&Work::kernel(1.0, 1.0, 1.0).with_setup(3.0), &h200(), &opts())
            .reason
            .contains("3.0 s of setup"));
    }
}
