//! The cases of the sweep: inputs, launches and verification against the host's replay of each kernel, and the
//! device clock's rate the timelines are read with.

use std::path::PathBuf;

use super::specs::{bytes_moved, elements_of, geometry, symbol, Spec};
use super::timeline::{parse_records, timeline_file, write_records, RECORD_WORDS};
use super::{OccupancySweep, BARRIER_CONFIGS, SOURCE, SPIN_TIMELINE};
use crate::device::{Arg, Buffer, Kernel, LaunchConfig};
use crate::experiments::{Case, Error, RunContext};
use crate::gpu::Gpu;
use crate::verify::{self, Verification};

/// The case of one point: its inputs made and uploaded, its output poisoned, its arguments made once.
/// Timelines go into the run's results folder (none while planning).
pub(super) fn prepare<'g>(
    sweep: &OccupancySweep,
    ctx: &RunContext<'g>,
    spec: Spec,
) -> Result<Box<dyn Case + 'g>, Error> {
    let gpu = ctx.gpu;
    let props = gpu.device.props();
    let dev = gpu.device.as_ref();
    // The points were checked by `size_problem`; these conversions cannot fail for a valid point.
    let too_big = || Error::Unsupported(format!("{spec:?}: sizes beyond what this host can address"));
    let elements = elements_of(sweep, props, spec).and_then(|e| usize::try_from(e).ok()).ok_or_else(too_big)?;
    let n = u32::try_from(elements).unwrap_or(u32::MAX);
    let bytes = bytes_moved(sweep, spec, elements as u64).ok_or_else(too_big)? as f64;
    let mut rng = fastrand::Rng::new();
    // The register kernels need inputs in [1, 2], where their updates (v = 3 - v) are exact.
    let a: Vec<f32> = match spec {
        Spec::Registers { .. } => host_vec(elements, |_| 1.0 + rng.f32())?,
        _ => host_vec(elements, |_| rng.f32() * 2.0 - 1.0)?,
    };
    if spec == Spec::Copy {
        let src = dev.upload(&a)?;
        let dst = dev.alloc_buffer::<f32>(elements)?;
        dev.fill_bytes(dst.raw(), 0xff)?;
        return Ok(Box::new(CopyCase { gpu, src, dst, host: a, bytes }));
    }
    let (groups, group, dynamic_lds) = geometry(sweep, props, spec);
    let groups =
        u32::try_from(groups).map_err(|_| Error::Unsupported(format!("{groups} groups do not fit in one launch")))?;
    let config = LaunchConfig { grid: [groups, 1, 1], group: [group, 1, 1], dynamic_lds_bytes: dynamic_lds };
    if matches!(spec, Spec::SpinCount { .. } | Spec::SpinTimeline { .. }) {
        let kernel = gpu.kernel(SOURCE, &symbol(spec))?;
        let waves = u64::from(groups) * u64::from(props.wave_size.waves_for(group));
        let words = usize::try_from(waves).ok().and_then(|w| w.checked_mul(RECORD_WORDS)).ok_or_else(too_big)?;
        let buf = dev.alloc_buffer::<u64>(words)?;
        dev.fill_bytes(buf.raw(), 0xff)?;
        let hz = clock_rate(ctx)?;
        let file = match spec {
            Spec::SpinTimeline { .. } => ctx.results_dir.as_ref().map(|d| d.join(timeline_file(SPIN_TIMELINE, "spin"))),
            _ => None,
        };
        let slots = u64::from(props.max_items_per_cu / props.wave_size.0) * u64::from(props.cu_count);
        let timeline = Timeline { buf, file, recorded: false, clock_hz: hz, device_wave_slots: slots };
        let ticks = (sweep.spin_us * 1e-6 * hz).round() as u64;
        return Ok(Box::new(SpinCase { gpu, kernel, config, ticks, timeline }));
    }
    let kernel = gpu.kernel(SOURCE, &symbol(spec))?;
    let a_buf = dev.upload(&a)?;
    let out = dev.alloc_buffer::<f32>(elements)?;
    dev.fill_bytes(out.raw(), 0xff)?;
    let kind = match spec {
        Spec::Registers { values } => Kind::Registers { values, rounds: sweep.register_rounds },
        Spec::CopyKernel { .. } => Kind::Copy,
        _ => {
            let b: Vec<f32> = host_vec(elements, |_| rng.f32() * 2.0 - 1.0)?;
            let b_buf = dev.upload(&b)?;
            let timeline = match spec {
                Spec::Barrier { config: c, barrier } => {
                    let waves = u64::from(groups) * u64::from(props.wave_size.waves_for(group));
                    let words =
                        usize::try_from(waves).ok().and_then(|w| w.checked_mul(RECORD_WORDS)).ok_or_else(too_big)?;
                    let buf = dev.alloc_buffer::<u64>(words)?;
                    dev.fill_bytes(buf.raw(), 0xff)?;
                    let file = ctx.results_dir.as_ref().map(|d| {
                        d.join(timeline_file(BARRIER_CONFIGS[c].name, if barrier { "barrier" } else { "none" }))
                    });
                    let slots = props.max_items_per_cu / props.wave_size.0;
                    Some(Timeline {
                        buf,
                        file,
                        recorded: false,
                        clock_hz: clock_rate(ctx)?,
                        device_wave_slots: u64::from(slots) * u64::from(props.cu_count),
                    })
                }
                _ => None,
            };
            match spec {
                Spec::Lds { width, .. } => Kind::Lds { b: b_buf, host_b: b, width },
                Spec::GroupCount { .. } | Spec::Barrier { .. } => {
                    Kind::Chunks { b: b_buf, host_b: b, chunk: sweep.chunk, passes: sweep.passes, timeline }
                }
                _ => Kind::VectorAdd { b: b_buf, host_b: b },
            }
        }
    };
    let (a_arg, out_arg, n) = (a_buf.arg(), out.arg(), Arg::U32(n));
    // Arguments are made here, once: a launch does no host work beyond handing them over.
    let (args, record_slot) = match &kind {
        Kind::VectorAdd { b, .. } | Kind::Lds { b, .. } => (vec![a_arg, b.arg(), out_arg, n], None),
        Kind::Copy => (vec![a_arg, out_arg, n], None),
        Kind::Chunks { b, chunk, passes, timeline, .. } => {
            // Only the first launch (the one verified) records; timed launches pass null.
            let record = timeline.as_ref().map_or(Arg::Ptr(0), |t| t.buf.arg());
            let args = vec![a_arg, b.arg(), out_arg, Arg::U32(*chunk), Arg::U32(*passes), record];
            (args, timeline.as_ref().map(|_| 5))
        }
        Kind::Registers { rounds, .. } => (vec![a_arg, out_arg, n, Arg::U32(*rounds)], None),
    };
    Ok(Box::new(KernelCase { gpu, kernel, config, a: a_buf, host_a: a, out, kind, bytes, args, record_slot }))
}

/// A host vector of `len` values from `f`; an allocation the host cannot make is an error, not an abort.
fn host_vec<T>(len: usize, f: impl FnMut(usize) -> T) -> Result<Vec<T>, Error> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| Error::Unsupported(format!("cannot allocate {len} values on the host")))?;
    v.extend((0..len).map(f));
    Ok(v)
}

struct CopyCase<'g> {
    gpu: &'g Gpu,
    src: Buffer<f32>,
    dst: Buffer<f32>,
    host: Vec<f32>,
    bytes: f64,
}

impl Case for CopyCase<'_> {
    fn launch(&mut self) -> crate::device::Result<()> {
        self.gpu.device.copy_on_device(self.src.raw(), self.dst.raw(), self.src.bytes())
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        let got = self.gpu.device.download(&self.dst)?;
        Ok(verify::compare(&got, &self.host, 1.0, 0.0))
    }

    fn work(&self) -> f64 {
        self.bytes
    }

    fn footprint_bytes(&self) -> Option<u64> {
        Some((self.src.bytes() + self.dst.bytes()) as u64)
    }
}

/// The residency probe: its records are both its output and its timeline.
struct SpinCase<'g> {
    gpu: &'g Gpu,
    kernel: Kernel,
    config: LaunchConfig,
    ticks: u64,
    timeline: Timeline,
}

impl Case for SpinCase<'_> {
    fn launch(&mut self) -> crate::device::Result<()> {
        let args = [Arg::U64(self.ticks), self.timeline.buf.arg()];
        self.gpu.device.launch(&self.kernel, &self.config, &args)
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        let raw = self.gpu.device.download(&self.timeline.buf)?;
        let records = parse_records(&raw).map_err(Error::Measurement)?;
        // Every wave must have waited its full time; a shorter one means the clock or the loop is wrong.
        let short: Vec<(usize, f64, f64)> = records
            .iter()
            .enumerate()
            .filter(|(_, r)| r.end - r.start < self.ticks)
            .map(|(i, r)| (i, (r.end - r.start) as f64, self.ticks as f64))
            .collect();
        if !self.timeline.recorded {
            self.timeline.recorded = true;
            if let Some(path) = &self.timeline.file {
                write_records(path, &records, self.timeline.clock_hz, self.timeline.device_wave_slots)?;
            }
        }
        Ok(Verification {
            max_rel_err: if short.is_empty() { 0.0 } else { 1.0 },
            tolerance: 0.0,
            checked: records.len(),
            failures: short.len(),
            first_failures: short.into_iter().take(5).collect(),
        })
    }

    fn work(&self) -> f64 {
        0.0
    }

    fn footprint_bytes(&self) -> Option<u64> {
        Some(self.timeline.buf.bytes() as u64)
    }
}

/// A recorded timeline: one record per wave, written on the first (verification) launch.
struct Timeline {
    buf: Buffer<u64>,
    file: Option<PathBuf>,
    recorded: bool,
    /// Ticks per second of the device clock the records use.
    clock_hz: f64,
    /// Wave slots of the whole device, to express resident waves as occupancy.
    device_wave_slots: u64,
}

enum Kind {
    Copy,
    VectorAdd { b: Buffer<f32>, host_b: Vec<f32> },
    Lds { b: Buffer<f32>, host_b: Vec<f32>, width: u32 },
    Chunks { b: Buffer<f32>, host_b: Vec<f32>, chunk: u32, passes: u32, timeline: Option<Timeline> },
    Registers { values: u32, rounds: u32 },
}

struct KernelCase<'g> {
    gpu: &'g Gpu,
    kernel: Kernel,
    config: LaunchConfig,
    /// The input, owned here for as long as the kernel may read it.
    a: Buffer<f32>,
    host_a: Vec<f32>,
    out: Buffer<f32>,
    kind: Kind,
    bytes: f64,
    /// The kernel's arguments.
    args: Vec<Arg>,
    /// The argument that points at the timeline until the first launch has recorded it; null after.
    record_slot: Option<usize>,
}

impl Case for KernelCase<'_> {
    fn launch(&mut self) -> crate::device::Result<()> {
        self.gpu.device.launch(&self.kernel, &self.config, &self.args)?;
        if let Some(slot) = self.record_slot.take() {
            self.args[slot] = Arg::Ptr(0);
        }
        Ok(())
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        let dev = self.gpu.device.as_ref();
        let check = self.check_output()?;
        let Kind::Chunks { timeline: Some(t), .. } = &mut self.kind else { return Ok(check) };
        if !t.recorded {
            t.recorded = true;
            let raw = dev.download(&t.buf)?;
            let records = parse_records(&raw).map_err(Error::Measurement)?;
            if let Some(path) = &t.file {
                write_records(path, &records, t.clock_hz, t.device_wave_slots)?;
            }
        }
        if !check.passed() {
            return Ok(check);
        }
        // The launch just checked recorded the timeline; the timed launches run without it (a null pointer, a
        // different branch of the kernel), so that path is checked too, on a poisoned output.
        dev.fill_bytes(self.out.raw(), 0xff)?;
        self.launch()?;
        dev.synchronize()?;
        let mut timed = self.check_output()?;
        timed.checked += check.checked;
        Ok(timed)
    }

    fn work(&self) -> f64 {
        self.bytes
    }

    fn footprint_bytes(&self) -> Option<u64> {
        let b = match &self.kind {
            Kind::VectorAdd { b, .. } | Kind::Lds { b, .. } | Kind::Chunks { b, .. } => b.bytes(),
            Kind::Copy | Kind::Registers { .. } => 0,
        };
        Some((self.a.bytes() + b + self.out.bytes()) as u64)
    }
}

impl KernelCase<'_> {
    /// The output of the last launch against the host's replay of the kernel's formula.
    fn check_output(&self) -> Result<Verification, Error> {
        let got = self.gpu.device.download(&self.out)?;
        let a = &self.host_a;
        Ok(match &self.kind {
            Kind::Copy => verify::compare(&got, a, 1.0, 0.0),
            Kind::VectorAdd { host_b, .. } | Kind::Chunks { host_b, .. } => {
                // a + b rounds once in FP32 on both sides: exact agreement.
                let want: Vec<f32> = a.iter().zip(host_b.iter()).map(|(x, y)| x + y).collect();
                verify::compare(&got, &want, 1.0, 0.0)
            }
            Kind::Lds { host_b, width, .. } => {
                let want = lds_expected(a, host_b, self.config.group[0] as usize, *width as usize);
                verify::compare(&got, &want, 1.0, 0.0)
            }
            Kind::Registers { values, rounds } => {
                let want = registers_expected(a, *values as usize, *rounds as usize);
                verify::compare(&got, &want, 1.0, 0.0)
            }
        })
    }
}

/// What `occupancy_lds` (`width` 1) and `occupancy_lds_x4` (`width` 4) write (`kernels/occupancy.hip`): item t of
/// group g, holding elements `width`·(g·B + t) + j, takes the values of its mirror item g·B + (B − 1 − t) in the
/// same group: a[m] + b[m] with m = `width`·(g·B + B − 1 − t) + j, or 0 where m lies past the end. Exact in FP32.
pub fn lds_expected(a: &[f32], b: &[f32], group: usize, width: usize) -> Vec<f32> {
    let n = a.len();
    (0..n)
        .map(|i| {
            let (q, j) = (i / width, i % width);
            let m = width * ((q / group) * group + (group - 1 - q % group)) + j;
            if m < n {
                a[m] + b[m]
            } else {
                0.0
            }
        })
        .collect()
}

/// What `occupancy_registers_r<R>` writes (`kernels/occupancy.hip`), replayed in FP32 in the kernel's order:
/// R values from a window of `a` starting at min(i, n − R), each updated `rounds` times by v = 3 − v (exact for
/// inputs in [1, 2]), then summed in order. The result is exact, so the comparison allows no error.
pub fn registers_expected(a: &[f32], values: usize, rounds: usize) -> Vec<f32> {
    let n = a.len();
    (0..n)
        .map(|i| {
            let mut sum = 0.0f32;
            for j in 0..values {
                let x = if n >= values { a[i.min(n - values) + j] } else { a[i] };
                let w = if rounds.is_multiple_of(2) { x } else { 3.0 - x };
                sum += w;
            }
            sum
        })
        .collect()
}

/// The rate of the device-wide clock the kernels read (`gpu_wall_clock()`), measured: two one-item launches read
/// it 200 ms apart on the host. The same on both vendors, needing no runtime attribute (HIP 5.2 has none for it);
/// on NVIDIA the answer must be 1 GHz (`%globaltimer` counts nanoseconds), which checks the method. Measured once
/// per run and kept in the run's shared slot: no other occupancy point keeps anything there, so it stays for the
/// whole sweep.
fn clock_rate(ctx: &RunContext) -> Result<f64, Error> {
    ctx.shared(|_: &DeviceClock| true, || measure_clock(ctx.gpu)).map(|clock| clock.hz)
}

/// The device clock's rate as measured, kept for the run.
struct DeviceClock {
    /// Ticks per second.
    hz: f64,
}

/// Measures [`clock_rate`].
fn measure_clock(gpu: &Gpu) -> Result<DeviceClock, Error> {
    let dev = gpu.device.as_ref();
    let kernel = gpu.kernel(SOURCE, "occupancy_clock")?;
    let out = dev.alloc_buffer::<u64>(1)?;
    let read = || -> Result<(u64, std::time::Instant), Error> {
        dev.launch(&kernel, &LaunchConfig::linear(1, 1), &[out.arg()])?;
        dev.synchronize()?;
        let at = std::time::Instant::now();
        Ok((dev.download(&out)?[0], at))
    };
    let (t0, h0) = read()?;
    std::thread::sleep(std::time::Duration::from_millis(200));
    let (t1, h1) = read()?;
    let hz = (t1.wrapping_sub(t0)) as f64 / h1.duration_since(h0).as_secs_f64();
    if !(hz.is_finite() && hz > 1e5) {
        return Err(Error::Measurement(format!("the device clock did not advance as expected ({t0} then {t1})")));
    }
    Ok(DeviceClock { hz })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lds_and_register_formulas_on_small_cases() {
        let a = [1.0f32, 2.0, 3.0, 4.0, 5.0];
        let b = [10.0f32, 20.0, 30.0, 40.0, 50.0];
        // Groups of 2: [0,1] mirrored, [2,3] mirrored; item 4's mirror (5) is past the end.
        assert_eq!(lds_expected(&a, &b, 2, 1), vec![22.0, 11.0, 44.0, 33.0, 0.0]);
        // Two elements per item, groups of 2 items: item 0 (elements 0, 1) takes item 1's (2, 3); item 2's mirror
        // (item 3, elements 6 and 7) is past the end.
        assert_eq!(lds_expected(&a, &b, 2, 2), vec![33.0, 44.0, 11.0, 22.0, 0.0]);
        // Windows of 2 starting at min(i, n - 2); odd rounds flip each value to 3 - v.
        let a = [1.0f32, 1.5, 2.0];
        assert_eq!(registers_expected(&a, 2, 2), vec![2.5, 3.5, 3.5]);
        assert_eq!(registers_expected(&a, 2, 1), vec![3.5, 2.5, 2.5]);
        // Fewer elements than values: every value is a[i].
        assert_eq!(registers_expected(&a[..1], 2, 0), vec![2.0]);
    }
}
