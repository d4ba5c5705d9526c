//! The fusion experiment's cases: a point's buffers and kernels ([`prepare`]), the reductions measured on the
//! device or end to end, and the copy that gives the memory's practical bandwidth.

use std::rc::Rc;

use super::{generated, record_compile, resident_groups, sum_tolerance, FusionSweep, Op, U};
use crate::code_objects::DeviceShape;
use crate::device::{Arg, Buffer, Kernel, LaunchConfig};
use crate::experiments::{Case, Clock, Error, Point, RunContext};
use crate::gpu::Gpu;
use crate::patterns::{Geometry, GROUP_SIZE};
use crate::verify::{self, Verification};

/// [`crate::experiments::Experiment::prepare`] of the fusion sweep: the size's shared inputs, then the point's
/// result, partials and temporaries, its kernels (compiled or specialised at run time) and the reference it is
/// checked against with its derived tolerance. A staged kernel's compile cost goes to the run's results folder (none
/// while planning).
pub(super) fn prepare<'g>(
    sweep: &FusionSweep,
    ctx: &RunContext<'g>,
    point: &Point,
) -> Result<Box<dyn Case + 'g>, Error> {
    let gpu = ctx.gpu;
    let (n, coords) = sweep.coords(point.index);
    let inputs = FusionSweep::inputs(ctx, n)?;
    let dev = gpu.device.as_ref();
    let Some(c) = coords else {
        let dst = dev.alloc_buffer::<f32>(n)?;
        dev.fill_bytes(dst.raw(), 0xff)?;
        return Ok(Box::new(CopyCase { gpu, inputs, dst }));
    };
    let op = Op::parse(&c.op).ok_or_else(|| Error::Options(format!("unknown operation `{}`", c.op)))?;
    let geometry = Geometry::for_elements(n as u64, resident_groups(DeviceShape::of(dev.props())))
        .ok_or_else(|| Error::Unsupported(format!("n = {n} does not fit the kernels' 32-bit indices")))?;
    let config = LaunchConfig::linear(geometry.groups, GROUP_SIZE);
    let result = dev.alloc_buffer::<f32>(1)?;
    // All-ones bytes are NaN: a launch that never writes the result fails verification.
    dev.fill_bytes(result.raw(), 0xff)?;
    let partials = dev.alloc_buffer::<f32>(geometry.groups as usize)?;
    let done = dev.alloc_buffer::<u32>(1)?;
    dev.fill_bytes(done.raw(), 0)?;
    let fused = op.program(true).expect("every operation has a fused program");
    let host: Vec<&[f32]> = if op == Op::Dot { vec![&inputs.host_x, &inputs.host_y] } else { vec![&inputs.host_x] };
    let (mut want, mut scale) = fused.reference(&host);
    // Rounding of the terms themselves: products (dot) and FP32 temporaries; |x| and x are exact.
    let term_rounding = if op == Op::Dot { U } else { 0.0 };
    let mut depth = geometry.addition_depth();
    let mut temps = Vec::new();
    let work = match c.variant.as_str() {
        "hand" => {
            let stage1 = gpu.kernel("fusion", op.hand_symbol())?;
            let finish = gpu.kernel("fusion", "fusion_hand_finish")?;
            let mut args1 = vec![inputs.x.arg()];
            if op == Op::Dot {
                args1.push(inputs.y.arg());
            }
            args1.extend([partials.arg(), Arg::U32(geometry.n)]);
            let args2 = vec![partials.arg(), result.arg(), Arg::U32(geometry.groups)];
            Work::Kernels(vec![(stage1, config, args1), (finish, LaunchConfig::linear(1, GROUP_SIZE), args2)])
        }
        "unfused" | "fused" | "fused_staged" => {
            let (program, rendered, defines) = generated(op, &c.variant, &geometry)
                .ok_or_else(|| Error::Unsupported(format!("{} has no unfused form", op.name())))?;
            temps = (0..program.temporaries()).map(|_| dev.alloc_buffer::<f32>(n)).collect::<Result<_, _>>()?;
            let mut args: Vec<Arg> = vec![inputs.x.arg()];
            if program.inputs() > 1 {
                args.push(inputs.y.arg());
            }
            args.extend(temps.iter().map(Buffer::arg));
            args.extend([partials.arg(), done.arg(), result.arg(), Arg::U32(geometry.n)]);
            let mut kernels = Vec::new();
            for symbol in &rendered.kernels {
                let (kernel, cost) = gpu.specialised_kernel(&rendered.source(), &defines, symbol)?;
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
                // sasum stands in: same bytes read, its own result Σ|x|.
                (want, scale) = Op::Asum.program(true).expect("asum has a fused program").reference(&host);
            }
            Work::Vendor(op)
        }
        other => return Err(Error::Options(format!("unknown variant `{other}`"))),
    };
    let tolerance = sum_tolerance(depth, term_rounding);
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

/// The two input vectors of one size, uniform in [−1, 1] (so sums cancel), on the host and the device.
pub(super) struct Inputs {
    pub(super) host_x: Vec<f32>,
    host_y: Vec<f32>,
    x: Buffer<f32>,
    y: Buffer<f32>,
}

impl Inputs {
    pub(super) fn new(gpu: &Gpu, n: usize) -> Result<Inputs, Error> {
        let mut rng = fastrand::Rng::new();
        let host_x: Vec<f32> = (0..n).map(|_| rng.f32() * 2.0 - 1.0).collect();
        let host_y: Vec<f32> = (0..n).map(|_| rng.f32() * 2.0 - 1.0).collect();
        let dev = gpu.device.as_ref();
        Ok(Inputs { x: dev.upload(&host_x)?, y: dev.upload(&host_y)?, host_x, host_y })
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
struct Reduction<'g> {
    gpu: &'g Gpu,
    inputs: Rc<Inputs>,
    op: Op,
    work: Work,
    end_to_end: bool,
    /// The actions' temporaries (the kernels' arguments point into them).
    temps: Vec<Buffer<f32>>,
    /// Kept alive for the kernels' arguments: one partial per group, and the last-group ticket.
    _partials: Buffer<f32>,
    _done: Buffer<u32>,
    result: Buffer<f32>,
    want: f64,
    scale: f64,
    tolerance: f64,
}

impl Reduction<'_> {
    fn enqueue(&self) -> crate::device::Result<()> {
        let dev = self.gpu.device.as_ref();
        let n = self.inputs.host_x.len();
        match &self.work {
            Work::Kernels(kernels) => kernels.iter().try_for_each(|(k, config, args)| dev.launch(k, config, args)),
            Work::Vendor(Op::Dot) => dev.sdot(n, self.inputs.x.raw(), self.inputs.y.raw(), self.result.raw()),
            Work::Vendor(_) => dev.sasum(n, self.inputs.x.raw(), self.result.raw()),
        }
    }
}

impl Case for Reduction<'_> {
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
        (self.op.inputs() * 4) as f64 * self.inputs.host_x.len() as f64
    }

    fn footprint_bytes(&self) -> Option<u64> {
        let n = self.inputs.host_x.len() as u64;
        Some(4 * n * (self.op.inputs() + self.temps.len() as u64))
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
struct CopyCase<'g> {
    gpu: &'g Gpu,
    inputs: Rc<Inputs>,
    dst: Buffer<f32>,
}

impl Case for CopyCase<'_> {
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
