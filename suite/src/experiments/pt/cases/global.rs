//! Use case 4, global synchronisation: Jacobi steps with a barrier between them, and the barrier alone.

use std::rc::Rc;

use crate::device::{self, Arg, Buffer, Kernel, LaunchConfig};
use crate::experiments::{Case, Clock, Error};
use crate::gpu::Gpu;
use crate::phases::{Phase, PhaseClock};
use crate::verify::{self, Verification};

use super::super::reference::jacobi_reference;
use super::super::spec::{SoftBarrier, Variant};
use super::super::{BARRIER_LINE_WORDS, GROUP, MAX_BARRIER_COUNTERS, SOURCE, STATUS_ORDER};
use super::{check_coresident, check_nonempty, check_status, maximal_launch, random_unit, tiles, u32_of};

/// What the Jacobi points of one size and step count share: the start vector on the host and the device, and the
/// host's reference after the steps, computed once for them all (the points differ only in how the steps are
/// synchronised, so they must all reach the same values). No kernel writes the start vector: each launch copies it
/// into the vector the steps begin from.
pub struct JacobiInputs {
    n: u32,
    steps: u32,
    x0: Buffer<f32>,
    want: Vec<f32>,
}

impl JacobiInputs {
    /// A random start vector of `n` elements in [0, 1) and its reference after `steps` steps ([`jacobi_reference`]),
    /// each in its phase on `clock`.
    pub fn new(gpu: &Gpu, n: u64, steps: u32, clock: &PhaseClock) -> Result<JacobiInputs, Error> {
        let n32 = u32_of(n, "n")?;
        let (host, x0) = clock.scope(Phase::Inputs, || -> Result<_, Error> {
            let host = random_unit(n as usize);
            let x0 = gpu.device.upload(&host)?;
            Ok((host, x0))
        })?;
        let want = clock.scope(Phase::Reference, || jacobi_reference(&host, steps));
        Ok(JacobiInputs { n: n32, steps, x0, want })
    }

    /// Whether these are the inputs of `n` elements and `steps` steps.
    pub fn fits(&self, n: u64, steps: u32) -> bool {
        u64::from(self.n) == n && self.steps == steps
    }
}

/// Use case 4: Jacobi steps with a barrier between them.
pub struct JacobiCase<'g> {
    gpu: &'g Gpu,
    variant: Variant,
    clock: Clock,
    kernel: Kernel,
    /// The start vector and the reference the point's result is checked against.
    inputs: Rc<JacobiInputs>,
    a: Buffer<f32>,
    b: Buffer<f32>,
    bar: Buffer<u32>,
    status: Buffer<u32>,
    n: u32,
    steps: u32,
    groups: u32,
    barrier: SoftBarrier,
    skip_group: u32,
}

impl<'g> JacobiCase<'g> {
    /// Prepares `steps` steps over `n` elements, with inputs of its own ([`JacobiCase::with_inputs`]).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        gpu: &'g Gpu,
        variant: Variant,
        n: u64,
        steps: u32,
        groups: Option<u32>,
        barrier: SoftBarrier,
        skip_group: u32,
        clock: Clock,
    ) -> Result<Self, Error> {
        let inputs = Rc::new(JacobiInputs::new(gpu, n, steps, &PhaseClock::default())?);
        JacobiCase::with_inputs(gpu, variant, (n, steps), inputs, groups, barrier, skip_group, clock)
    }

    /// Prepares `steps` steps over `n` elements from the start vector of `inputs`, whose reference the result is
    /// checked against (inputs of another size or step count fail verification). `groups` overrides the PT variants' grid (default: the maximal launch); a
    /// grid the occupancy query does not call co-resident is refused here, before any launch. `skip_group` < the
    /// grid makes that group of `pt_soft` never arrive at the barrier (the timeout path's test). The vectors the
    /// steps go back and forth between are the point's own: `a` is set from the start vector by every launch, `b`
    /// is poisoned, so a result the kernel did not write fails verification.
    #[allow(clippy::too_many_arguments)]
    pub fn with_inputs(
        gpu: &'g Gpu,
        variant: Variant,
        (n, steps): (u64, u32),
        inputs: Rc<JacobiInputs>,
        groups: Option<u32>,
        barrier: SoftBarrier,
        skip_group: u32,
        clock: Clock,
    ) -> Result<Self, Error> {
        let dev = gpu.device.as_ref();
        let n32 = u32_of(n, "n")?;
        let name = match variant {
            Variant::NonPt => "pt_jacobi_step",
            Variant::PtCoop => "pt_jacobi_coop",
            Variant::PtSoft | Variant::Pt => "pt_jacobi_soft",
        };
        let kernel = gpu.kernel(SOURCE, name)?;
        let groups = if variant == Variant::NonPt {
            tiles(n)?
        } else {
            let (max, _) = maximal_launch(gpu, &kernel)?;
            let groups = groups.unwrap_or(max);
            check_coresident(name, groups, max)?;
            check_nonempty(name, groups)?;
            groups
        };
        let b = dev.alloc_buffer::<f32>(n as usize)?;
        dev.fill_bytes(b.raw(), 0xff)?;
        Ok(JacobiCase {
            gpu,
            variant,
            clock,
            kernel,
            a: dev.alloc_buffer::<f32>(n as usize)?,
            b,
            inputs,
            bar: dev.alloc_buffer::<u32>(MAX_BARRIER_COUNTERS as usize * BARRIER_LINE_WORDS)?,
            status: dev.alloc_buffer::<u32>(1)?,
            n: n32,
            steps,
            groups,
            barrier,
            skip_group,
        })
    }
}

impl Case for JacobiCase<'_> {
    fn launch(&mut self) -> device::Result<()> {
        let dev = self.gpu.device.as_ref();
        dev.copy_on_device(self.inputs.x0.raw(), self.a.raw(), self.a.bytes())?;
        let grid = LaunchConfig::linear(self.groups, GROUP);
        let (n, steps) = (Arg::U32(self.n), self.steps);
        match self.variant {
            Variant::NonPt => {
                for s in 0..steps {
                    let (src, dst) = if s.is_multiple_of(2) { (&self.a, &self.b) } else { (&self.b, &self.a) };
                    dev.launch(&self.kernel, &grid, &[src.arg(), dst.arg(), n])?;
                }
                Ok(())
            }
            Variant::PtCoop => {
                let args = [self.a.arg(), self.b.arg(), n, Arg::U32(steps)];
                dev.launch_cooperative(&self.kernel, &grid, &args)
            }
            Variant::PtSoft | Variant::Pt => {
                dev.fill_bytes(self.bar.raw(), 0)?;
                dev.fill_bytes(self.status.raw(), 0)?;
                let args = [
                    self.a.arg(),
                    self.b.arg(),
                    n,
                    Arg::U32(steps),
                    self.bar.arg(),
                    Arg::U32(self.barrier.counters(self.groups, self.gpu.device.props().cu_count)),
                    Arg::U32(self.barrier.spin_limit),
                    self.status.arg(),
                    Arg::U32(self.skip_group),
                ];
                dev.launch(&self.kernel, &grid, &args)
            }
        }
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        if self.variant == Variant::PtSoft {
            check_status(self.gpu, &self.status, "Jacobi with the software grid barrier")?;
        }
        let result = if self.steps.is_multiple_of(2) { &self.a } else { &self.b };
        let got = self.gpu.device.download(result)?;
        // The same FP32 operations in the same order, no contraction possible: bit-exact.
        Ok(verify::compare(&got, &self.inputs.want, 1.0, 0.0))
    }

    fn work(&self) -> f64 {
        f64::from(self.n) * f64::from(self.steps)
    }

    fn clock(&self) -> Clock {
        self.clock
    }
}

/// The barrier alone: `steps` software barriers, grid barriers, or relaunches of an otherwise empty kernel, with no
/// work between them. The first launch (the verified one) runs the kernels' check: every group marks its step in a
/// slot before each barrier and reads its neighbour's after it, so a barrier that lets a group through early sets
/// a status bit, and every slot ends at `steps`. The timed launches skip the check (one store and one load per
/// group and step, a round trip to L2 that would be counted as barrier), so they time the barrier alone.
pub struct BarrierCase<'g> {
    gpu: &'g Gpu,
    variant: Variant,
    kernel: Kernel,
    bar: Buffer<u32>,
    status: Buffer<u32>,
    slots: Buffer<u32>,
    steps: u32,
    groups: u32,
    barrier: SoftBarrier,
    launches: u64,
}

impl<'g> BarrierCase<'g> {
    /// Prepares `steps` barriers at `groups` groups (default: the maximal launch of the barrier kernel; the
    /// relaunch equivalent takes the software barrier's). A grid that is not co-resident is refused.
    pub fn new(
        gpu: &'g Gpu,
        variant: Variant,
        steps: u32,
        groups: Option<u32>,
        barrier: SoftBarrier,
    ) -> Result<Self, Error> {
        let dev = gpu.device.as_ref();
        let (name, pt_name) = match variant {
            Variant::NonPt => ("pt_barrier_relaunch", "pt_barrier_soft"),
            Variant::PtCoop => ("pt_barrier_coop", "pt_barrier_coop"),
            Variant::PtSoft | Variant::Pt => ("pt_barrier_soft", "pt_barrier_soft"),
        };
        let kernel = gpu.kernel(SOURCE, name)?;
        let (max, _) = maximal_launch(gpu, &gpu.kernel(SOURCE, pt_name)?)?;
        let groups = groups.unwrap_or(max);
        check_coresident(pt_name, groups, max)?;
        check_nonempty(name, groups)?;
        let slots = dev.alloc_buffer::<u32>(groups as usize)?;
        dev.fill_bytes(slots.raw(), 0)?;
        let status = dev.alloc_buffer::<u32>(1)?;
        dev.fill_bytes(status.raw(), 0)?;
        Ok(BarrierCase {
            gpu,
            variant,
            kernel,
            bar: dev.alloc_buffer::<u32>(MAX_BARRIER_COUNTERS as usize * BARRIER_LINE_WORDS)?,
            status,
            slots,
            steps,
            groups,
            barrier,
            launches: 0,
        })
    }
}

impl Case for BarrierCase<'_> {
    fn launch(&mut self) -> device::Result<()> {
        let dev = self.gpu.device.as_ref();
        let check = Arg::U32(u32::from(self.launches == 0));
        self.launches += 1;
        let grid = LaunchConfig::linear(self.groups, GROUP);
        match self.variant {
            Variant::NonPt => {
                for step in 0..self.steps {
                    dev.launch(&self.kernel, &grid, &[Arg::U32(step), self.status.arg(), self.slots.arg(), check])?;
                }
                Ok(())
            }
            Variant::PtCoop => dev.launch_cooperative(
                &self.kernel,
                &grid,
                &[Arg::U32(self.steps), self.status.arg(), self.slots.arg(), check],
            ),
            Variant::PtSoft | Variant::Pt => {
                dev.fill_bytes(self.bar.raw(), 0)?;
                dev.fill_bytes(self.status.raw(), 0)?;
                let args = [
                    Arg::U32(self.steps),
                    self.bar.arg(),
                    Arg::U32(self.barrier.counters(self.groups, self.gpu.device.props().cu_count)),
                    Arg::U32(self.barrier.spin_limit),
                    self.status.arg(),
                    self.slots.arg(),
                    check,
                ];
                dev.launch(&self.kernel, &grid, &args)
            }
        }
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        check_status(self.gpu, &self.status, "the barrier alone")?;
        let status = self.gpu.device.download(&self.status)?[0];
        // Every slot at `steps`, and one more element: the early-release bit, which must be 0.
        let mut got = self.gpu.device.download(&self.slots)?;
        got.push(status & STATUS_ORDER);
        let mut want = vec![self.steps; self.groups as usize];
        want.push(0);
        Ok(verify::compare(&got, &want, 1.0, 0.0))
    }

    fn work(&self) -> f64 {
        f64::from(self.steps)
    }

    fn footprint_bytes(&self) -> Option<u64> {
        Some((self.bar.bytes() + self.slots.bytes() + self.status.bytes()) as u64)
    }
}
