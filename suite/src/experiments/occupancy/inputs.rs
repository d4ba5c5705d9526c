//! What the sweep's points share for the whole run, kept in the run's shared slot ([`RunContext::shared`]): the
//! device clock's rate, measured once, and one set of inputs (the vectors `a` and `b` on the host and the device,
//! the output buffer and the host buffer it is read back into), made once and used by every point whose size and
//! input range they fit. Every point of the copy, group-size, LDS and register sweeps has the sweep's `--elements`,
//! and the group-count and barrier points' arrays are shorter: they use the start of the same vectors. No kernel
//! writes `a` or `b`; the output is the one buffer every kernel writes, and it is poisoned again for every point
//! ([`Inputs::poisoned_out`]), so what one point wrote can never pass for the next point's result.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::device::{Buffer, Device, LaunchConfig};
use crate::experiments::{Error, RunContext};
use crate::gpu::Gpu;
use crate::phases::Phase;

/// The range the inputs are drawn from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Range {
    /// [−1, 1): the copies and vector adds (sums cancel, and a + b rounds once in FP32).
    Signed,
    /// [1, 2): the register kernels, whose updates v = 3 − v are exact there; they read no `b`.
    Unit,
}

/// The sweep's state for one run: its measured clock and its current inputs.
#[derive(Default)]
pub(super) struct RunState {
    clock_hz: Cell<Option<f64>>,
    inputs: RefCell<Option<Rc<Inputs>>>,
}

/// The run's state, made by the first point that needs it. No other value goes in occupancy's shared slot, so it
/// stays for the whole sweep.
pub(super) fn run_state(ctx: &RunContext) -> Result<Rc<RunState>, Error> {
    ctx.shared(|_: &RunState| true, || Ok::<_, Error>(RunState::default()))
}

impl RunState {
    /// The rate of the device-wide clock the kernels read, measured on first use ([`measure_clock`]).
    pub(super) fn clock_hz(&self, gpu: &Gpu) -> Result<f64, Error> {
        if let Some(hz) = self.clock_hz.get() {
            return Ok(hz);
        }
        let hz = measure_clock(gpu)?;
        self.clock_hz.set(Some(hz));
        Ok(hz)
    }

    /// Inputs of at least `elements` values in `range`: the ones kept when they fit, else new ones of exactly
    /// `elements` (the old ones freed first, so two sets are never alive at once), drawn in the inputs phase.
    pub(super) fn inputs(&self, ctx: &RunContext, elements: usize, range: Range) -> Result<Rc<Inputs>, Error> {
        let kept = self.inputs.borrow().clone().filter(|i| i.range == range && i.len() >= elements);
        if let Some(inputs) = kept {
            return Ok(inputs);
        }
        *self.inputs.borrow_mut() = None;
        let made = ctx.phases.scope(Phase::Inputs, || Inputs::new(ctx.gpu, elements, range))?;
        let made = Rc::new(made);
        *self.inputs.borrow_mut() = Some(made.clone());
        Ok(made)
    }
}

/// One set of inputs with the output buffer of their length.
pub(super) struct Inputs {
    range: Range,
    /// `a` on the host, the reference's operand.
    pub(super) host_a: Vec<f32>,
    /// `a` on the device.
    pub(super) a: Buffer<f32>,
    /// `b` on the host and the device ([`Range::Signed`] only).
    b: Option<(Vec<f32>, Buffer<f32>)>,
    /// The output every kernel writes; poisoned for each point.
    out: Buffer<f32>,
    /// The host buffer outputs are read back into, reused by every point (allocated on first use).
    got: RefCell<Vec<f32>>,
}

impl Inputs {
    fn new(gpu: &Gpu, len: usize, range: Range) -> Result<Inputs, Error> {
        let dev = gpu.device.as_ref();
        let draw = |low, high| crate::random::uniform_f32(len, low, high).map_err(Error::Unsupported);
        let (low, high) = match range {
            Range::Signed => (-1.0, 1.0),
            Range::Unit => (1.0, 2.0),
        };
        let host_a = draw(low, high)?;
        let b = match range {
            Range::Signed => {
                let host_b = draw(-1.0, 1.0)?;
                let b = dev.upload(&host_b)?;
                Some((host_b, b))
            }
            Range::Unit => None,
        };
        Ok(Inputs { range, a: dev.upload(&host_a)?, host_a, b, out: dev.alloc_buffer(len)?, got: RefCell::default() })
    }

    /// Values in each vector.
    pub(super) fn len(&self) -> usize {
        self.host_a.len()
    }

    /// `b` on the host and the device.
    pub(super) fn b(&self) -> Result<(&[f32], &Buffer<f32>), Error> {
        let (host, buf) = self.b.as_ref().ok_or_else(|| Error::Unsupported("register inputs have no `b`".into()))?;
        Ok((host, buf))
    }

    /// The output, every byte set to 0xff (NaN as f32) for a new point: an element the point's kernel does not
    /// write fails verification, even where the point before wrote the same value.
    pub(super) fn poisoned_out(&self, dev: &dyn Device) -> Result<&Buffer<f32>, Error> {
        dev.fill_bytes(self.out.raw(), 0xff)?;
        Ok(&self.out)
    }

    /// The first `n` values of the output, read back into the host buffer the points share, handed to `check`.
    pub(super) fn with_output<R>(
        &self,
        dev: &dyn Device,
        n: usize,
        check: impl FnOnce(&[f32]) -> R,
    ) -> Result<R, Error> {
        let mut got = self.got.borrow_mut();
        if got.len() < n {
            *got = Vec::new();
            *got = vec![0.0; self.len()];
        }
        dev.copy_to_host(self.out.raw(), bytemuck::cast_slice_mut(&mut got[..n]))?;
        Ok(check(&got[..n]))
    }

    /// The output buffer (for the driver copy's destination and the footprint).
    pub(super) fn out(&self) -> &Buffer<f32> {
        &self.out
    }
}

/// The rate of the device-wide clock the kernels read (`gpu_wall_clock()`), measured: two one-item launches read
/// it 200 ms apart on the host. The same on both vendors, needing no runtime attribute (HIP 5.2 has none for it);
/// on NVIDIA the answer must be 1 GHz (`%globaltimer` counts nanoseconds), which checks the method.
fn measure_clock(gpu: &Gpu) -> Result<f64, Error> {
    let dev = gpu.device.as_ref();
    let kernel = gpu.kernel(super::SOURCE, "occupancy_clock")?;
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
    Ok(hz)
}
