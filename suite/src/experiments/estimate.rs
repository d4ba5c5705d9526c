//! How long a point will take, before it runs: from the operations and bytes of one launch ([`Work`], counted by
//! each experiment), the device's ceilings ([`crate::peaks`]) and the runner's timing policy. `suite run` prints
//! the sum before it starts (with the compiles the kernel cache lacks, [`super::compile_estimate`]), and a point
//! estimated past `--max-point-seconds` (a typo such as 70000 for 7000) becomes an `invalid` row naming its estimate
//! and the flag, instead of running for hours.
//!
//! A point costs what the runner does with it: its setup, its host work ([`POINT_HOST_S`] and its
//! [`Work::host_bytes`] at [`HOST_BYTES_PER_S`]) and its launches as [`super::time_case`] makes them (one verified, a
//! sizing launch and a probe batch, the warm-up and the timed batches within `--time-budget`). One launch is its work
//! at a share of the device's peak that kind of kernel reaches in the reference runs, rounded down (a naive matmul
//! about 1% of FP32, a copy about 50% of memory bandwidth): kernels err long. The peak is the one of the precision
//! and hardware unit the work runs on (FP32 vector unless the work says otherwise: FP64 work is counted at the FP64
//! peaks). docs/method.md compares the model with measured runs, term by term.

use crate::peaks::{Ceilings, Unit};
use crate::precision::Precision;

use super::{launches_per_rep, launches_within_budget};
use crate::device::Timing;
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
    /// Bytes the host makes, reads back or checks for this point alone ([`HOST_BYTES_PER_S`]): `bytes` unless the
    /// experiment says otherwise ([`Work::with_host_bytes`]): inputs shared by several points count once, on the point
    /// that draws them, and a scalar read back counts as nothing.
    pub host_bytes: f64,
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
            host_bytes: bytes,
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

    /// This work with `bytes` as the bytes the host makes, reads back or checks for it.
    pub fn with_host_bytes(self, bytes: f64) -> Work {
        Work { host_bytes: bytes, ..self }
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

/// Seconds of host work every point costs besides its bytes: its progress line, CSV and phases rows, the clock and
/// power readings around it, its small allocations. Measured on an H200 node (16 cores): pt's 36 barrier points,
/// which draw and check nothing, cost 0.9 ms a point outside their launches (results/2026-11-29-h200-sm_90-host-share-
/// before-after-issue36/pt-after/phases.csv); fusion's 40 asum points, which read back one scalar, 0.6 ms.
pub const POINT_HOST_S: f64 = 1e-3;

/// The host draws inputs, reads outputs back and checks them at about this rate, bytes per second (the checks run
/// on all cores since issue 36). Measured on an H200 node (16 cores): occupancy's 16 group_size points each read back
/// and check a 2^26-element FP32 output (268 MB) in 62.9 ms outside their launches, 4.3 GB/s
/// (results/2026-11-29-h200-sm_90-host-share-before-after-issue36/occupancy-after/phases.csv).
pub const HOST_BYTES_PER_S: f64 = 4.3e9;

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

/// Seconds the runner's timing ([`super::time_case`]) spends on a point whose launch takes `launch_s`: the verified
/// launch, a sizing launch timed alone, a probe batch where a batch holds more than one launch, then the warm-up
/// batches left (a graph's first replay at least) and the timed ones, as many as fit in `--time-budget` (at least
/// 3), each of B launches ([`launches_per_rep`]). A host-timed sequence is timed the same way with B = 1.
pub fn device_seconds(launch_s: f64, opts: &RunOptions) -> f64 {
    let launch_ms = launch_s * 1e3;
    let budget = opts.time_budget_s;
    let b = launches_per_rep(launch_ms, budget);
    let (probe, warmups_done) = if b > 1 { (f64::from(b) * launch_ms, 2) } else { (0.0, 1) };
    let batch_ms = f64::from(b) * launch_ms;
    let (warmup, reps) = launches_within_budget(batch_ms, opts.warmup.saturating_sub(warmups_done), opts.reps, budget);
    let warmup = if opts.timing == Timing::Graph { warmup.max(1) } else { warmup };
    (2.0 * launch_ms + probe + f64::from(warmup + reps) * batch_ms) / 1e3
}

/// Seconds of host work of a point of `work`: [`POINT_HOST_S`] and its host bytes at [`HOST_BYTES_PER_S`].
pub fn host_seconds(work: &Work) -> f64 {
    POINT_HOST_S + work.host_bytes / HOST_BYTES_PER_S
}

/// The estimate of a point under the runner's policy: its setup, its host work ([`host_seconds`]) and its launches
/// ([`device_seconds`]).
pub fn estimate(work: &Work, ceilings: &Ceilings, opts: &RunOptions) -> Estimate {
    let (launch_s, why) = launch_seconds(work, ceilings);
    let point_s = work.setup_s + host_seconds(work) + device_seconds(launch_s, opts);
    let mut reason = format!("one launch about {}", seconds_text(launch_s));
    if !why.is_empty() {
        reason.push_str(&format!(" ({why})"));
    }
    reason.push_str(", 1 to verify, 1 to size its batch, then its warm-up and at least 3 timed");
    if work.setup_s > 0.0 {
        reason.push_str(&format!(", {} of setup", seconds_text(work.setup_s)));
    }
    Estimate { launch_s, point_s, reason }
}

/// Seconds a run spends before its first experiment besides compiles: the device opened, the code objects loaded,
/// every point planned. The H100 node's warm quick run at d896d23: 0.36 s of its 30.7 s were outside the
/// experiments, their roofline and summary (results/2026-11-25-h100-sm_90-quick-cold-and-warm-issue26/warm/
/// stderr.log).
pub const RUN_START_S: f64 = 0.4;

/// Seconds each experiment spends outside its points: the launch gap, `run.json`'s records, its derived tables and
/// plots, the roofline redrawn, `summary.md`. The same warm run: 0.13 to 1.0 s, 2.88 s over its 5 experiments.
pub const EXPERIMENT_OUTSIDE_S: f64 = 0.6;

/// A run's estimate: its points and what surrounds them, and its compiles with the kernel cache as it is and cold.
#[derive(Debug, Clone, PartialEq)]
pub struct RunEstimate {
    /// With every code object at hand, seconds: [`RUN_START_S`], [`EXPERIMENT_OUTSIDE_S`] per experiment and the
    /// points.
    pub warm_s: f64,
    /// The compiles the store lacks now, seconds.
    pub compile_s: f64,
    /// The compiles of an empty cache, seconds.
    pub cold_compile_s: f64,
    /// What is missing, in words ([`super::compile_estimate::CompilePlan::missing_text`]).
    pub missing: String,
}

impl RunEstimate {
    /// The task of `experiments` experiments whose points are estimated at `points_s` and whose compiles are
    /// `compiles`.
    pub fn new(points_s: f64, experiments: usize, compiles: &super::compile_estimate::CompilePlan) -> RunEstimate {
        RunEstimate {
            warm_s: RUN_START_S + experiments as f64 * EXPERIMENT_OUTSIDE_S + points_s,
            compile_s: compiles.seconds(),
            cold_compile_s: compiles.cold_seconds(),
            missing: compiles.missing_text(),
        }
    }

    /// Seconds with the kernel cache as it is.
    pub fn now_s(&self) -> f64 {
        self.warm_s + self.compile_s
    }

    /// Seconds with an empty kernel cache.
    pub fn cold_s(&self) -> f64 {
        self.warm_s + self.cold_compile_s
    }

    /// One line: `about 40.1 s (3.2 s of compiles: 1 of 7 sources and 0 of 24 run-time specialisations not in the
    /// kernel cache); 36.9 s with every code object cached, 160.4 s with none` (or `(no compile: ...)`).
    pub fn line(&self) -> String {
        let compiles = if self.compile_s > 0.0 {
            format!("{} of compiles: {} not in the kernel cache", seconds_text(self.compile_s), self.missing)
        } else {
            "no compile: every code object it needs is in the kernel cache".to_string()
        };
        format!(
            "about {} ({compiles}); {} with every code object cached, {} with none",
            seconds_text(self.now_s()),
            seconds_text(self.warm_s),
            seconds_text(self.cold_s())
        )
    }
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
        // 6.86e14 FLOP at 0.669 TFLOP/s: 1025 s per launch.
        assert!((e.launch_s - 6.86e14 / 0.669e12).abs() / e.launch_s < 1e-3, "{e:?}");
        let host = host_seconds(&naive(70000.0));
        assert!((e.point_s - host - 6.0 * e.launch_s).abs() < 1e-6 * e.point_s, "{e:?}");
        let why = over_limit(&e, 60.0).unwrap();
        // 6 launches: verified, sized, the graph's first replay and 3 timed.
        assert!(why.starts_with("estimated 1.7 h for this point, over --max-point-seconds 60"), "{why}");
        assert!(why.contains("6.860e14 FLOP at 1% of the 66.9 TFLOP/s FP32 vector peak"), "{why}");
        assert!(why.ends_with("raise --max-point-seconds to run it"), "{why}");
        // 7000: 1.0 s per launch, about 6 s in all.
        let e = estimate(&naive(7000.0), &h200(), &opts());
        assert!(e.point_s < 10.0 && over_limit(&e, 60.0).is_none(), "{e:?}");
    }

    #[test]
    fn fast_points_cost_their_batches_as_the_runner_sizes_them() {
        // A 10 µs kernel: B = 100 launches make a 1 ms batch; the verified and the sizing launch, the probe batch,
        // then 1 warm-up batch (3 asked, 2 done) and 20 timed ones: 22.02 ms on the device.
        let copy = Work::kernel(0.0, 0.7 * 4.8e12 * 10e-6, 0.7);
        let e = estimate(&copy, &h200(), &opts());
        assert!((e.launch_s - 10e-6).abs() < 1e-9, "{e:?}");
        assert!((device_seconds(10e-6, &opts()) - 22.02e-3).abs() < 1e-9, "{}", device_seconds(10e-6, &opts()));
        let want = POINT_HOST_S + copy.bytes / HOST_BYTES_PER_S + 22.02e-3;
        assert!((e.point_s - want).abs() < 1e-9, "{} vs {want}", e.point_s);
        // A 300 ms kernel runs alone (B = 1): 6 timed launches fit in the 2 s budget, no warm-up left but the
        // graph's first replay: 2 + 1 + 6 launches.
        let e = estimate(&Work::fixed(0.3), &h200(), &opts());
        assert!((e.point_s - (POINT_HOST_S + 9.0 * 0.3)).abs() < 1e-9, "{e:?}");
        // A 1 s kernel: 3 timed launches at the least.
        let e = estimate(&Work::fixed(1.0), &h200(), &opts());
        assert!((e.point_s - (POINT_HOST_S + 6.0)).abs() < 1e-9, "{e:?}");
        assert!(e.reason.contains("at least 1.0 s by its waits"), "{e:?}");
        // On the stream there is no graph to replay first: 2 + 3 launches.
        let stream = RunOptions { timing: Timing::Stream, ..opts() };
        assert!((device_seconds(1.0, &stream) - 5.0).abs() < 1e-9);
    }

    #[test]
    fn host_work_is_the_points_own_bytes_not_its_launches() {
        // Inputs shared with other points, a scalar read back: the launch's gigabyte costs the host nothing.
        let launch = Work::kernel(0.0, 1e9, STREAMING_SHARE);
        let shared = launch.with_host_bytes(0.0);
        assert_eq!(host_seconds(&shared), POINT_HOST_S);
        assert!((host_seconds(&launch) - (POINT_HOST_S + 1e9 / HOST_BYTES_PER_S)).abs() < 1e-12);
        let (a, b) = (estimate(&launch, &h200(), &opts()), estimate(&shared, &h200(), &opts()));
        assert!((a.point_s - b.point_s - 1e9 / HOST_BYTES_PER_S).abs() < 1e-12, "{a:?} {b:?}");
        // Setup adds as it is.
        let setup = estimate(&shared.with_setup(2.0), &h200(), &opts());
        assert!((setup.point_s - b.point_s - 2.0).abs() < 1e-12);
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
