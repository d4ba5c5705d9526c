//! The cases of the sweep: inputs, launches and verification against the host's replay of each kernel, and the
//! device clock's rate the timelines are read with.

use std::path::PathBuf;
use std::rc::Rc;

use super::inputs::{run_state, Inputs, Range};
use super::specs::{bytes_moved, elements_of, geometry, symbol, Spec};
use super::timeline::{parse_records, timeline_file, write_records, RECORD_WORDS};
use super::{OccupancySweep, BARRIER_CONFIGS, SOURCE, SPIN_TIMELINE};
use crate::device::{Arg, Buffer, Kernel, LaunchConfig};
use crate::experiments::{Case, Error, RunContext};
use crate::gpu::Gpu;
use crate::verify::{self, Verification};

/// The case of one point: its inputs (shared with the points before it where they fit: [`super::inputs`]), its
/// output poisoned, its arguments made once. Timelines go into the run's results folder (none while planning).
pub(super) fn prepare<'g>(
    sweep: &OccupancySweep,
    ctx: &RunContext<'g>,
    spec: Spec,
) -> Result<Box<dyn Case + 'g>, Error> {
    let gpu = ctx.gpu;
    let props = gpu.device.props();
    let dev = gpu.device.as_ref();
    let state = run_state(ctx)?;
    // The points were checked by `size_problem`; these conversions cannot fail for a valid point.
    let too_big = || Error::Unsupported(format!("{spec:?}: sizes beyond what this host can address"));
    let elements = elements_of(sweep, props, spec).and_then(|e| usize::try_from(e).ok()).ok_or_else(too_big)?;
    let n = u32::try_from(elements).unwrap_or(u32::MAX);
    let bytes = bytes_moved(sweep, spec, elements as u64).ok_or_else(too_big)? as f64;
    if spec == Spec::Copy {
        let inputs = state.inputs(ctx, elements, Range::Signed)?;
        inputs.poisoned_out(dev)?;
        return Ok(Box::new(CopyCase { gpu, inputs, n: elements, bytes }));
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
        let hz = state.clock_hz(gpu)?;
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
    let range = if matches!(spec, Spec::Registers { .. }) { Range::Unit } else { Range::Signed };
    let inputs = state.inputs(ctx, elements, range)?;
    let kind = match spec {
        Spec::Registers { values } => Kind::Registers { values, rounds: sweep.register_rounds },
        Spec::CopyKernel { .. } => Kind::Copy,
        Spec::Lds { width, .. } => Kind::Lds { width },
        Spec::GroupCount { .. } => Kind::Chunks { chunk: sweep.chunk, passes: sweep.passes, timeline: None },
        Spec::Barrier { config: c, barrier } => {
            let waves = u64::from(groups) * u64::from(props.wave_size.waves_for(group));
            let words = usize::try_from(waves).ok().and_then(|w| w.checked_mul(RECORD_WORDS)).ok_or_else(too_big)?;
            let buf = dev.alloc_buffer::<u64>(words)?;
            dev.fill_bytes(buf.raw(), 0xff)?;
            let file = ctx
                .results_dir
                .as_ref()
                .map(|d| d.join(timeline_file(BARRIER_CONFIGS[c].name, if barrier { "barrier" } else { "none" })));
            let slots = props.max_items_per_cu / props.wave_size.0;
            let timeline = Timeline {
                buf,
                file,
                recorded: false,
                clock_hz: state.clock_hz(gpu)?,
                device_wave_slots: u64::from(slots) * u64::from(props.cu_count),
            };
            Kind::Chunks { chunk: sweep.chunk, passes: sweep.passes, timeline: Some(timeline) }
        }
        _ => Kind::VectorAdd,
    };
    let (a_arg, out_arg, n) = (inputs.a.arg(), inputs.poisoned_out(dev)?.arg(), Arg::U32(n));
    // Arguments are made here, once: a launch does no host work beyond handing them over.
    let (args, record_slot) = match &kind {
        Kind::VectorAdd | Kind::Lds { .. } => (vec![a_arg, inputs.b()?.1.arg(), out_arg, n], None),
        Kind::Copy => (vec![a_arg, out_arg, n], None),
        Kind::Chunks { chunk, passes, timeline } => {
            // Only the first launch (the one verified) records; timed launches pass null.
            let record = timeline.as_ref().map_or(Arg::Ptr(0), |t| t.buf.arg());
            let args = vec![a_arg, inputs.b()?.1.arg(), out_arg, Arg::U32(*chunk), Arg::U32(*passes), record];
            (args, timeline.as_ref().map(|_| 5))
        }
        Kind::Registers { rounds, .. } => (vec![a_arg, out_arg, n, Arg::U32(*rounds)], None),
    };
    Ok(Box::new(KernelCase { gpu, kernel, config, inputs, n: elements, kind, bytes, args, record_slot }))
}

struct CopyCase<'g> {
    gpu: &'g Gpu,
    /// `a` is the source; the output the destination.
    inputs: Rc<Inputs>,
    n: usize,
    bytes: f64,
}

impl Case for CopyCase<'_> {
    fn launch(&mut self) -> crate::device::Result<()> {
        let bytes = self.n * std::mem::size_of::<f32>();
        self.gpu.device.copy_on_device(self.inputs.a.raw(), self.inputs.out().raw(), bytes)
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        let a = &self.inputs.host_a;
        self.inputs
            .with_output(self.gpu.device.as_ref(), self.n, |got| verify::compare_by(got, |i| f64::from(a[i]), 1.0, 0.0))
    }

    fn work(&self) -> f64 {
        self.bytes
    }

    fn footprint_bytes(&self) -> Option<u64> {
        Some(2 * (self.n * std::mem::size_of::<f32>()) as u64)
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
    VectorAdd,
    Lds { width: u32 },
    Chunks { chunk: u32, passes: u32, timeline: Option<Timeline> },
    Registers { values: u32, rounds: u32 },
}

struct KernelCase<'g> {
    gpu: &'g Gpu,
    kernel: Kernel,
    config: LaunchConfig,
    /// The inputs and the output, owned here (with the run's shared slot) for as long as the kernel may use them.
    inputs: Rc<Inputs>,
    /// Elements of the point: the start of the inputs and the output.
    n: usize,
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
        self.inputs.poisoned_out(dev)?;
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
        let arrays = match &self.kind {
            Kind::VectorAdd | Kind::Lds { .. } | Kind::Chunks { .. } => 3,
            Kind::Copy | Kind::Registers { .. } => 2,
        };
        Some((arrays * self.n * std::mem::size_of::<f32>()) as u64)
    }
}

impl KernelCase<'_> {
    /// The output of the last launch against the host's replay of the kernel's formula, element by element on the
    /// host's cores (every element checked; no reference vector is stored).
    fn check_output(&self) -> Result<Verification, Error> {
        let n = self.n;
        let a = &self.inputs.host_a[..n];
        let group = self.config.group[0] as usize;
        self.inputs.with_output(self.gpu.device.as_ref(), n, |got| -> Result<Verification, Error> {
            Ok(match &self.kind {
                Kind::Copy => verify::compare_by(got, |i| f64::from(a[i]), 1.0, 0.0),
                Kind::VectorAdd | Kind::Chunks { .. } => {
                    // a + b rounds once in FP32 on both sides: exact agreement.
                    let b = &self.inputs.b()?.0[..n];
                    verify::compare_by(got, |i| f64::from(a[i] + b[i]), 1.0, 0.0)
                }
                Kind::Lds { width } => {
                    let (b, width) = (&self.inputs.b()?.0[..n], *width as usize);
                    verify::compare_by(got, |i| f64::from(lds_expected_at(a, b, group, width, i)), 1.0, 0.0)
                }
                Kind::Registers { values, rounds } => {
                    let (values, rounds) = (*values as usize, *rounds as usize);
                    let fill = |range, out: &mut Vec<f64>| registers_expected_into(a, values, rounds, range, out);
                    verify::compare_blocks(got, fill, 1.0, 0.0)
                }
            })
        })?
    }
}

/// What `occupancy_lds` (`width` 1) and `occupancy_lds_x4` (`width` 4) write (`kernels/occupancy.hip`): item t of
/// group g, holding elements `width`·(g·B + t) + j, takes the values of its mirror item g·B + (B − 1 − t) in the
/// same group: a[m] + b[m] with m = `width`·(g·B + B − 1 − t) + j, or 0 where m lies past the end. Exact in FP32.
pub fn lds_expected(a: &[f32], b: &[f32], group: usize, width: usize) -> Vec<f32> {
    (0..a.len()).map(|i| lds_expected_at(a, b, group, width, i)).collect()
}

/// Element `i` of [`lds_expected`].
pub fn lds_expected_at(a: &[f32], b: &[f32], group: usize, width: usize, i: usize) -> f32 {
    let n = a.len();
    let (q, j) = (i / width, i % width);
    let m = width * ((q / group) * group + (group - 1 - q % group)) + j;
    if m < n {
        a[m] + b[m]
    } else {
        0.0
    }
}

/// What `occupancy_registers_r<R>` writes (`kernels/occupancy.hip`), replayed in FP32 in the kernel's order:
/// R values from a window of `a` starting at min(i, n − R), each updated `rounds` times by v = 3 − v (exact for
/// inputs in [1, 2]), then summed in order. The result is exact, so the comparison allows no error.
pub fn registers_expected(a: &[f32], values: usize, rounds: usize) -> Vec<f32> {
    (0..a.len()).map(|i| registers_expected_at(a, values, rounds, i)).collect()
}

/// [`registers_expected`] of the elements in `range`, appended to `out`: the same sums in the same order, made
/// [`LANES`] elements at a time (independent sums the compiler keeps in vector registers: one pass of the window
/// serves them all) where their windows are not clipped by the end of `a`, one at a time elsewhere.
pub fn registers_expected_into(
    a: &[f32],
    values: usize,
    rounds: usize,
    range: std::ops::Range<usize>,
    out: &mut Vec<f64>,
) {
    let n = a.len();
    let flip = !rounds.is_multiple_of(2);
    let mut i = range.start;
    while i < range.end {
        if n >= values && i + LANES <= range.end && i + LANES <= n - values + 1 {
            let mut sums = [0.0f32; LANES];
            for j in 0..values {
                let window = &a[i + j..i + j + LANES];
                for (sum, &x) in sums.iter_mut().zip(window) {
                    *sum += if flip { 3.0 - x } else { x };
                }
            }
            out.extend(sums.iter().map(|&s| f64::from(s)));
            i += LANES;
        } else {
            out.push(f64::from(registers_expected_at(a, values, rounds, i)));
            i += 1;
        }
    }
}

/// Elements [`registers_expected_into`] sums at once.
const LANES: usize = 16;

/// Element `i` of [`registers_expected`].
pub fn registers_expected_at(a: &[f32], values: usize, rounds: usize, i: usize) -> f32 {
    let n = a.len();
    let mut sum = 0.0f32;
    for j in 0..values {
        let x = if n >= values { a[i.min(n - values) + j] } else { a[i] };
        let w = if rounds.is_multiple_of(2) { x } else { 3.0 - x };
        sum += w;
    }
    sum
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

    #[test]
    fn register_sums_made_many_at_a_time_are_bit_for_bit_the_one_at_a_time_ones() {
        let mut rng = fastrand::Rng::with_seed(3);
        for (n, values, rounds) in
            [(1000usize, 16, 8), (1000, 192, 7), (100, 192, 8), (37, 16, 1), (16, 16, 0), (5, 16, 2)]
        {
            let a: Vec<f32> = (0..n).map(|_| 1.0 + rng.f32()).collect();
            let want = registers_expected(&a, values, rounds);
            for range in [0..n, 3..n, 0..n.min(17), n.saturating_sub(20)..n] {
                let mut got = Vec::new();
                registers_expected_into(&a, values, rounds, range.clone(), &mut got);
                let want: Vec<f64> = want[range.clone()].iter().map(|&w| f64::from(w)).collect();
                assert!(
                    got.iter().zip(&want).all(|(g, w)| g.to_bits() == w.to_bits()),
                    "{n} {values} {rounds} {range:?}"
                );
                assert_eq!(got.len(), range.len());
            }
        }
    }
}
