//! The fusion experiment's cases: a point's buffers and kernels ([`prepare`]), the reductions measured on the
//! device or end to end, and the copy that gives the memory's practical bandwidth, each over FP32 or FP64 elements
//! ([`Scalar`]).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use super::{
    element_sum_tolerance, generated, record_compile, resident_groups, symbol_suffix, FusionPoint, FusionSweep, Op,
};
use crate::code_objects::DeviceShape;
use crate::device::{Arg, Buffer, Kernel, LaunchConfig};
use crate::experiments::{Case, Clock, Error, RunContext};
use crate::gpu::Gpu;
use crate::patterns::{Geometry, GROUP_SIZE};
use crate::phases::{Phase, PhaseClock};
use crate::precision::Precision;
use crate::verify::{self, Verification};

/// An element type the experiment runs: what the device buffers hold, how inputs are drawn, which vendor routines
/// reduce it.
pub(super) trait Scalar: bytemuck::Pod + Into<f64> + Sync + 'static {
    /// The patterns' name for it.
    const ELEMENT: Precision;
    /// One input value, uniform in [−1, 1) with every significand bit random.
    fn draw(rng: &mut fastrand::Rng) -> Self;
}

impl Scalar for f32 {
    const ELEMENT: Precision = Precision::F32;
    fn draw(rng: &mut fastrand::Rng) -> f32 {
        rng.f32() * 2.0 - 1.0
    }
}

impl Scalar for f64 {
    const ELEMENT: Precision = Precision::F64;
    fn draw(rng: &mut fastrand::Rng) -> f64 {
        rng.f64() * 2.0 - 1.0
    }
}

/// [`crate::experiments::Points::prepare`] of the fusion sweep: the point's case over its precision.
pub(super) fn prepare<'g>(ctx: &RunContext<'g>, point: &FusionPoint) -> Result<Box<dyn Case + 'g>, Error> {
    match point.element {
        Precision::F32 => prepare_of::<f32>(ctx, point),
        Precision::F64 => prepare_of::<f64>(ctx, point),
    }
}

/// One point over elements of `T`: the size's shared inputs, then the point's result, partials and temporaries,
/// its kernels (compiled or specialised at run time) and the reference it is checked against with its derived
/// tolerance. A staged kernel's compile cost goes to the run's results folder (none while planning).
fn prepare_of<'g, T: Scalar>(ctx: &RunContext<'g>, point: &FusionPoint) -> Result<Box<dyn Case + 'g>, Error> {
    let gpu = ctx.gpu;
    let FusionPoint { n, element, coords } = point.clone();
    let inputs = FusionSweep::inputs::<T>(ctx, n)?;
    let dev = gpu.device.as_ref();
    let Some(c) = coords else {
        let dst = dev.alloc_buffer::<T>(n)?;
        dev.fill_bytes(dst.raw(), 0xff)?;
        return Ok(Box::new(CopyCase { gpu, inputs, dst }));
    };
    let op = Op::parse(&c.op).ok_or_else(|| Error::Options(format!("unknown operation `{}`", c.op)))?;
    let geometry = Geometry::for_elements(n as u64, resident_groups(DeviceShape::of(dev.props())))
        .ok_or_else(|| Error::Unsupported(format!("n = {n} does not fit the kernels' 32-bit indices")))?;
    let config = LaunchConfig::linear(geometry.groups, GROUP_SIZE);
    let result = dev.alloc_buffer::<T>(1)?;
    // All-ones bytes are NaN (in FP32 and FP64): a launch that never writes the result fails verification.
    dev.fill_bytes(result.raw(), 0xff)?;
    let partials = dev.alloc_buffer::<T>(geometry.groups as usize)?;
    let done = dev.alloc_buffer::<u32>(1)?;
    dev.fill_bytes(done.raw(), 0)?;
    let (mut want, mut scale) = inputs.reference(op, &ctx.phases);
    // Rounding of the terms themselves: products (dot) and temporaries (stored in the element type, exact for the
    // identity and |x| the unfused forms store); |x| and x are exact.
    let term_rounding = if op == Op::Dot { element.unit_roundoff() } else { 0.0 };
    let reference_error = op.program(true).expect("every operation has a fused program").with_element(element);
    let reference_error = reference_error.reference_error(n as u64);
    let mut depth = geometry.addition_depth();
    let mut temps = Vec::new();
    let work = match c.variant.as_str() {
        "hand" => {
            let stage1 = gpu.kernel("fusion", &op.hand_symbol(element))?;
            let finish = gpu.kernel("fusion", &format!("fusion_hand_finish{}", symbol_suffix(element)))?;
            let mut args1 = vec![inputs.x.arg()];
            if op == Op::Dot {
                args1.push(inputs.y.arg());
            }
            args1.extend([partials.arg(), Arg::U32(geometry.n)]);
            let args2 = vec![partials.arg(), result.arg(), Arg::U32(geometry.groups)];
            Work::Kernels(vec![(stage1, config, args1), (finish, LaunchConfig::linear(1, GROUP_SIZE), args2)])
        }
        "unfused" | "fused" | "fused_staged" => {
            let (program, rendered, defines) = generated(op, &c.variant, element, &geometry)
                .ok_or_else(|| Error::Unsupported(format!("{} has no unfused form", op.name())))?;
            temps = (0..program.temporaries()).map(|_| dev.alloc_buffer::<T>(n)).collect::<Result<_, _>>()?;
            let mut args: Vec<Arg> = vec![inputs.x.arg()];
            if program.inputs() > 1 {
                args.push(inputs.y.arg());
            }
            args.extend(temps.iter().map(Buffer::arg));
            args.extend([partials.arg(), done.arg(), result.arg(), Arg::U32(geometry.n)]);
            let mut kernels = Vec::new();
            for symbol in &rendered.kernels {
                let (kernel, cost) = ctx
                    .phases
                    .scope(Phase::Compile, || gpu.specialised_kernel(&rendered.source(), &defines, symbol))?;
                if let (Some(cost), false, Some(dir)) = (cost, defines.is_empty(), &ctx.results_dir) {
                    let (_, cached_ms) = gpu.specialised_lookup_ms(&rendered.source(), &defines)?;
                    let origin = match cost.origin {
                        crate::code_objects::Origin::Compiled(_) => "compiled",
                        crate::code_objects::Origin::Cached(_) => "cached",
                        crate::code_objects::Origin::Prebuilt(_) => "prebuilt",
                    };
                    record_compile(
                        dir,
                        &[
                            op.name().into(),
                            element.name().into(),
                            n.to_string(),
                            defines.join(" "),
                            origin.into(),
                            format!("{:.3}", cost.object_ms),
                            format!("{:.3}", cost.load_ms),
                            format!("{cached_ms:.3}"),
                        ],
                    )?;
                }
                kernels.push((kernel, config, args.clone()));
            }
            Work::Kernels(kernels)
        }
        "vendor" => {
            depth = (n as u64).div_ceil(256) + 2 * u64::from((n as u64).next_power_of_two().ilog2());
            if op == Op::Sum {
                // sasum (dasum) stands in: same bytes read, its own result Σ|x|.
                (want, scale) = inputs.reference(Op::Asum, &ctx.phases);
            }
            Work::Vendor(op)
        }
        other => return Err(Error::Options(format!("unknown variant `{other}`"))),
    };
    let tolerance = element_sum_tolerance(element, depth, term_rounding) + reference_error;
    Ok(Box::new(Reduction {
        gpu,
        inputs,
        op,
        work,
        end_to_end: c.measure == "end_to_end",
        temps,
        _partials: partials,
        _done: done,
        result,
        want,
        scale,
        tolerance,
    }))
}

/// The two input vectors of one size and precision, uniform in [−1, 1] (so sums cancel), on the host and the
/// device, with each operation's host reference once computed (the points of a size share it).
pub(super) struct Inputs<T: Scalar> {
    pub(super) host_x: Vec<T>,
    host_y: Vec<T>,
    x: Buffer<T>,
    y: Buffer<T>,
    references: RefCell<BTreeMap<&'static str, (f64, f64)>>,
}

impl<T: Scalar> Inputs<T> {
    pub(super) fn new(gpu: &Gpu, n: usize, clock: &PhaseClock) -> Result<Inputs<T>, Error> {
        let _inputs = clock.enter(Phase::Inputs);
        let mut rng = fastrand::Rng::new();
        let host_x: Vec<T> = (0..n).map(|_| T::draw(&mut rng)).collect();
        let host_y: Vec<T> = (0..n).map(|_| T::draw(&mut rng)).collect();
        let dev = gpu.device.as_ref();
        Ok(Inputs { x: dev.upload(&host_x)?, y: dev.upload(&host_y)?, host_x, host_y, references: RefCell::default() })
    }

    /// `op`'s value on the host and Σ|terms| ([`crate::patterns::Program::reference`] of its fused program in this
    /// precision), computed on first use.
    fn reference(&self, op: Op, clock: &PhaseClock) -> (f64, f64) {
        if let Some(&r) = self.references.borrow().get(op.name()) {
            return r;
        }
        let _reference = clock.enter(Phase::Reference);
        let program = op.program(true).expect("every operation has a fused program").with_element(T::ELEMENT);
        let host: Vec<&[T]> = if op == Op::Dot { vec![&self.host_x, &self.host_y] } else { vec![&self.host_x] };
        let r = program.reference(&host);
        self.references.borrow_mut().insert(op.name(), r);
        r
    }
}

/// What one reduction launches.
enum Work {
    /// Kernels in order, each with its geometry and arguments.
    Kernels(Vec<(Kernel, LaunchConfig, Vec<Arg>)>),
    /// The vendor BLAS routine for the operation (sasum for sum).
    Vendor(Op),
}

/// One reduction at one size, measured on the device or end to end.
struct Reduction<'g, T: Scalar> {
    gpu: &'g Gpu,
    inputs: Rc<Inputs<T>>,
    op: Op,
    work: Work,
    end_to_end: bool,
    /// The actions' temporaries (the kernels' arguments point into them).
    temps: Vec<Buffer<T>>,
    /// Kept alive for the kernels' arguments: one partial per group, and the last-group ticket.
    _partials: Buffer<T>,
    _done: Buffer<u32>,
    result: Buffer<T>,
    want: f64,
    scale: f64,
    tolerance: f64,
}

impl<T: Scalar> Reduction<'_, T> {
    fn enqueue(&self) -> crate::device::Result<()> {
        let dev = self.gpu.device.as_ref();
        let n = self.inputs.host_x.len();
        let (x, y, result) = (self.inputs.x.raw(), self.inputs.y.raw(), self.result.raw());
        match (&self.work, T::ELEMENT) {
            (Work::Kernels(kernels), _) => kernels.iter().try_for_each(|(k, config, args)| dev.launch(k, config, args)),
            (Work::Vendor(Op::Dot), precision) => dev.dot(precision, n, x, y, result),
            (Work::Vendor(_), precision) => dev.asum(precision, n, x, result),
        }
    }
}

impl<T: Scalar> Case for Reduction<'_, T> {
    fn launch(&mut self) -> crate::device::Result<()> {
        self.enqueue()?;
        if self.end_to_end {
            // The float comes back to the host: the read waits for the reduction.
            self.gpu.device.download(&self.result)?;
        }
        Ok(())
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        let got = self.gpu.device.download(&self.result)?;
        Ok(verify::compare(&got, &[self.want], self.scale, self.tolerance))
    }

    fn work(&self) -> f64 {
        (self.op.inputs() * T::ELEMENT.bytes()) as f64 * self.inputs.host_x.len() as f64
    }

    fn footprint_bytes(&self) -> Option<u64> {
        let n = self.inputs.host_x.len() as u64;
        Some(T::ELEMENT.bytes() * n * (self.op.inputs() + self.temps.len() as u64))
    }

    fn clock(&self) -> Clock {
        if self.end_to_end {
            Clock::Host
        } else {
            Clock::Device
        }
    }
}

/// A device-to-device copy of x: the bandwidth line of the GB/s plots.
struct CopyCase<'g, T: Scalar> {
    gpu: &'g Gpu,
    inputs: Rc<Inputs<T>>,
    dst: Buffer<T>,
}

impl<T: Scalar> Case for CopyCase<'_, T> {
    fn launch(&mut self) -> crate::device::Result<()> {
        self.gpu.device.copy_on_device(self.inputs.x.raw(), self.dst.raw(), self.inputs.x.bytes())
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        let got = self.gpu.device.download(&self.dst)?;
        // A copy is exact.
        Ok(verify::compare(&got, &self.inputs.host_x, 1.0, 0.0))
    }

    fn work(&self) -> f64 {
        2.0 * self.inputs.x.bytes() as f64
    }

    fn footprint_bytes(&self) -> Option<u64> {
        Some(2 * self.inputs.x.bytes() as u64)
    }
}
