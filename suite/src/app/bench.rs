//! `suite bench`: the suite's own overheads (launch, round trip) against a plain C++ baseline on the same GPU.

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use crate::cli::Cli;
use crate::device::{self, LaunchConfig, Platform};
use crate::measure::Stats;

use super::{emit, open_gpu, Error};

/// Does `count` operations on the device with the kernel, then synchronises: one trial of a `suite bench`.
pub(super) type BenchOperation = dyn FnMut(&(dyn device::Device + 'static), &device::Kernel, u32) -> Result<(), Error>;

/// What a `suite bench` measures against its C++ driver-API baseline, for the shared driver [`bench_against`].
pub(super) struct BenchSpec {
    /// Name of one operation in the output, e.g. `launch` (`launches=`, `us_per_launch_median=`).
    unit: &'static str,
    /// Its plural, e.g. `launches`.
    units: &'static str,
    /// Kernel source and kernel the operation launches.
    source: &'static str,
    kernel: &'static str,
    /// The ratio suite / baseline the suite aims at.
    goal: f64,
}

/// `suite bench launch`: host time per launch of the empty kernel (`launch_empty`), `count` launches back to back per
/// trial and one synchronisation, median of trials, beside `scripts/bench/launch_overhead.cpp` (goal ≤ 1.02).
pub(super) fn bench_launch(
    cli: &Cli,
    count: u32,
    trials: u32,
    baseline: Option<&Path>,
    cubin: Option<&Path>,
) -> Result<ExitCode, Error> {
    let spec = BenchSpec {
        unit: "launch",
        units: "launches",
        source: crate::code_objects::LAUNCH_SOURCE,
        kernel: crate::code_objects::EMPTY_KERNEL,
        goal: 1.02,
    };
    bench_against(cli, &spec, count, trials, baseline, cubin, &mut |dev, kernel, count| {
        let config = LaunchConfig::linear(1, 1);
        for _ in 0..count {
            dev.launch(kernel, &config, &[])?;
        }
        dev.synchronize()?;
        Ok(())
    })
}

/// `suite bench roundtrip`: host time per bare round trip of the persistent-threads experiment (the empty kernel
/// of `kernels/launch.hip`, a blocking 4-byte readback, the empty kernel again, synchronize: what pt's own round
/// trip does with its empty kernel), `count` per trial, median of trials, beside
/// `scripts/bench/pt_roundtrip.cpp` (goal ≤ 1.05).
pub(super) fn bench_roundtrip(
    cli: &Cli,
    count: u32,
    trials: u32,
    baseline: Option<&Path>,
    cubin: Option<&Path>,
) -> Result<ExitCode, Error> {
    let spec = BenchSpec {
        unit: "round_trip",
        units: "round_trips",
        source: crate::code_objects::LAUNCH_SOURCE,
        kernel: crate::code_objects::EMPTY_KERNEL,
        goal: 1.05,
    };
    bench_against(cli, &spec, count, trials, baseline, cubin, &mut |dev, kernel, count| {
        let config = LaunchConfig::linear(1, 1);
        // One 4-byte buffer per trial (its allocation is ~0.05% of a trial of 2000 round trips).
        let word = dev.upload(&[0u32])?;
        let mut host = [0u8; 4];
        for _ in 0..count {
            dev.launch(kernel, &config, &[])?;
            dev.copy_to_host(word.raw(), &mut host)?;
            dev.launch(kernel, &config, &[])?;
            dev.synchronize()?;
        }
        Ok(())
    })
}

/// Host time per operation, `count` operations per trial (`run(dev, kernel, count)` does them and synchronises),
/// median of `trials`. With a baseline (the compiled C++ program of `scripts/bench/`), one trial of it runs as a
/// child process after each of the suite's, on the same cubin, so drift in clocks or load hits both alike; both
/// medians and their ratio are printed. `--cubin` makes the suite launch from the very file the baseline loads.
#[allow(clippy::too_many_arguments)]
pub(super) fn bench_against(
    cli: &Cli,
    spec: &BenchSpec,
    count: u32,
    trials: u32,
    baseline: Option<&Path>,
    cubin: Option<&Path>,
    run: &mut BenchOperation,
) -> Result<ExitCode, Error> {
    if count == 0 || trials == 0 {
        return Err(Error::Options("--count and --trials must be at least 1".into()));
    }
    let gpu = open_gpu(cli)?;
    let dev = gpu.device.as_ref();
    if baseline.is_some() && dev.props().platform != Platform::Nvidia {
        return Err(Error::Options(
            "--baseline drives the CUDA driver API: use it on an NVIDIA device (--platform nvidia)".into(),
        ));
    }
    let kernel = match cubin {
        Some(path) => {
            let image = std::fs::read(path)
                .map_err(|e| Error::Bench(format!("cannot read the cubin {}: {e}", path.display())))?;
            dev.kernel(&dev.load_module(&image)?, spec.kernel)?
        }
        None => gpu.kernel(spec.source, spec.kernel)?,
    };
    // Warm-up: first launches pay for lazy loading in the driver.
    run(dev, &kernel, 100)?;
    let field = format!("us_per_{}_median=", spec.unit);
    let (mut suite_us, mut baseline_us) = (Vec::with_capacity(trials as usize), Vec::new());
    for _ in 0..trials {
        let start = Instant::now();
        run(dev, &kernel, count)?;
        suite_us.push(start.elapsed().as_secs_f64() * 1e6 / f64::from(count));
        if let (Some(program), Some(cubin)) = (baseline, cubin) {
            baseline_us.push(run_baseline(program, cubin, count, dev.props().ordinal, &field)?);
        }
    }
    let median = |us: &[f64]| Stats::from_ms(us).ok_or_else(|| Error::Bench(format!("unusable timings {us:?}")));
    let stats = median(&suite_us)?;
    let mut out = String::new();
    outln!(
        out,
        "{}={count} trials={trials} {field}{:.4} min={:.4} max={:.4} device=\"{}\"",
        spec.units,
        stats.median_ms,
        stats.min_ms,
        stats.max_ms,
        dev.props().name
    );
    if let Some(program) = baseline {
        let base = median(&baseline_us)?;
        outln!(
            out,
            "baseline {}: {field}{:.4} min={:.4} max={:.4}",
            program.display(),
            base.median_ms,
            base.min_ms,
            base.max_ms
        );
        outln!(
            out,
            "ratio suite/baseline = {:.3} (medians, trials interleaved; goal <= {})",
            stats.median_ms / base.median_ms,
            spec.goal
        );
    }
    emit(&out);
    Ok(ExitCode::SUCCESS)
}

/// Runs one trial of a C++ baseline (`PROGRAM CUBIN COUNT 1 ORDINAL`) and returns the value it prints after
/// `field` (µs per operation).
pub(super) fn run_baseline(program: &Path, cubin: &Path, count: u32, ordinal: u32, field: &str) -> Result<f64, Error> {
    let output = std::process::Command::new(program)
        .arg(cubin)
        .arg(count.to_string())
        .arg("1")
        .arg(ordinal.to_string())
        .output()
        .map_err(|e| Error::Bench(format!("cannot run {}: {e}", program.display())))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(Error::Bench(format!(
            "{} failed ({}): {}{}",
            program.display(),
            output.status,
            stdout.trim(),
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    baseline_value(&stdout, field)
        .ok_or_else(|| Error::Bench(format!("{} printed no {field}: {}", program.display(), stdout.trim())))
}

/// The `us_per_launch_median=` value of the baseline's output line.
#[cfg(test)]
pub(super) fn baseline_us_per_launch(stdout: &str) -> Option<f64> {
    baseline_value(stdout, "us_per_launch_median=")
}

/// The value after `field` (e.g. `us_per_round_trip_median=`) in a baseline's output line.
pub(super) fn baseline_value(stdout: &str, field: &str) -> Option<f64> {
    let value = stdout.split_whitespace().find_map(|w| w.strip_prefix(field))?;
    value.parse::<f64>().ok().filter(|v| v.is_finite() && *v > 0.0)
}
