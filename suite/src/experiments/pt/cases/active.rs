//! Use case 3, maintaining active state: a global sum and a two-stage producer-consumer chain.

use crate::device::{self, Arg, Buffer, Kernel, LaunchConfig};
use crate::experiments::{Case, Clock, Error};
use crate::gpu::Gpu;
use crate::verify::{self, Verification};

use super::super::reference::{par_map, sum_tolerance, tree_depth, work_ci};
use super::super::spec::Variant;
use super::super::{CHAIN_FMAS, GROUP, SOURCE};
use super::{maximal_launch, random_unit, tiles, u32_of};

/// Use case 3a: a global sum.
pub(super) struct ReduceCase<'g> {
    gpu: &'g Gpu,
    variant: Variant,
    clock: Clock,
    kernels: (Kernel, Kernel),
    x: Buffer<f32>,
    partials: Buffer<f32>,
    done: Buffer<u32>,
    out: Buffer<f32>,
    n: u32,
    groups: u32,
    want: f64,
    tolerance: f64,
}

impl<'g> ReduceCase<'g> {
    pub(super) fn new(gpu: &'g Gpu, variant: Variant, n: u64, clock: Clock) -> Result<Self, Error> {
        let dev = gpu.device.as_ref();
        let n32 = u32_of(n, "n")?;
        let pt = gpu.kernel(SOURCE, "pt_reduce_pt")?;
        let (max, _) = maximal_launch(gpu, &pt)?;
        let host = random_unit(n as usize);
        let want: f64 = host.iter().map(|&v| f64::from(v)).sum();
        let g = u64::from(GROUP);
        let (kernels, groups, depth) = if variant == Variant::NonPt {
            let m = u64::from(tiles(n)?);
            let k = (gpu.kernel(SOURCE, "pt_reduce_tiles")?, gpu.kernel(SOURCE, "pt_reduce_final")?);
            // Tile tree, then each final item's sequential sum over the partials, then the final tree.
            (k, tiles(n)?, tree_depth(g) + m.div_ceil(g) + tree_depth(g))
        } else {
            let per_item = n.div_ceil(u64::from(max) * g);
            let last = u64::from(max).div_ceil(g);
            ((pt.clone(), pt), max, per_item + tree_depth(g) + last + tree_depth(g))
        };
        let partials = dev.alloc_buffer::<f32>(groups as usize)?;
        let done = dev.alloc_buffer::<u32>(1)?;
        dev.fill_bytes(done.raw(), 0)?;
        let out = dev.alloc_buffer::<f32>(1)?;
        dev.fill_bytes(out.raw(), 0xff)?;
        Ok(ReduceCase {
            gpu,
            variant,
            clock,
            kernels,
            x: dev.upload(&host)?,
            partials,
            done,
            out,
            n: n32,
            groups,
            want,
            tolerance: sum_tolerance(depth + 1),
        })
    }
}

impl Case for ReduceCase<'_> {
    fn launch(&mut self) -> device::Result<()> {
        let dev = self.gpu.device.as_ref();
        if self.variant == Variant::NonPt {
            let args = [self.x.arg(), Arg::U32(self.n), self.partials.arg()];
            dev.launch(&self.kernels.0, &LaunchConfig::linear(self.groups, GROUP), &args)?;
            // The partials go through global memory to a second pass.
            let args = [self.partials.arg(), Arg::U32(self.groups), self.out.arg()];
            return dev.launch(&self.kernels.1, &LaunchConfig::linear(1, GROUP), &args);
        }
        let args = [self.x.arg(), Arg::U32(self.n), self.partials.arg(), self.done.arg(), self.out.arg()];
        dev.launch(&self.kernels.0, &LaunchConfig::linear(self.groups, GROUP), &args)
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        let got = self.gpu.device.download(&self.out)?;
        Ok(verify::compare(&got, &[self.want], self.want, self.tolerance))
    }

    fn work(&self) -> f64 {
        f64::from(self.n)
    }

    fn footprint_bytes(&self) -> Option<u64> {
        Some(self.x.bytes() as u64)
    }

    fn clock(&self) -> Clock {
        self.clock
    }
}

/// Use case 3b: a producer -> consumer chain.
pub(super) struct ChainCase<'g> {
    gpu: &'g Gpu,
    variant: Variant,
    clock: Clock,
    kernels: (Kernel, Kernel),
    x: Buffer<f32>,
    mid: Buffer<f32>,
    out: Buffer<f32>,
    n: u32,
    groups: u32,
    host: Vec<f32>,
}

impl<'g> ChainCase<'g> {
    pub(super) fn new(gpu: &'g Gpu, variant: Variant, n: u64, clock: Clock) -> Result<Self, Error> {
        let dev = gpu.device.as_ref();
        let n32 = u32_of(n, "n")?;
        let pt = gpu.kernel(SOURCE, "pt_chain_pt")?;
        let (max, _) = maximal_launch(gpu, &pt)?;
        let (kernels, groups, mid_len) = if variant == Variant::NonPt {
            ((gpu.kernel(SOURCE, "pt_chain_a")?, gpu.kernel(SOURCE, "pt_chain_b")?), tiles(n)?, n as usize)
        } else {
            ((pt.clone(), pt), max, 1)
        };
        let host = random_unit(n as usize);
        let out = dev.alloc_buffer::<f32>(n as usize)?;
        dev.fill_bytes(out.raw(), 0xff)?;
        Ok(ChainCase {
            gpu,
            variant,
            clock,
            kernels,
            x: dev.upload(&host)?,
            mid: dev.alloc_buffer::<f32>(mid_len)?,
            out,
            n: n32,
            groups,
            host,
        })
    }
}

impl Case for ChainCase<'_> {
    fn launch(&mut self) -> device::Result<()> {
        let dev = self.gpu.device.as_ref();
        let n = Arg::U32(self.n);
        let grid = LaunchConfig::linear(self.groups, GROUP);
        if self.variant == Variant::NonPt {
            dev.launch(&self.kernels.0, &grid, &[self.x.arg(), self.mid.arg(), n])?;
            return dev.launch(&self.kernels.1, &grid, &[self.mid.arg(), self.out.arg(), n]);
        }
        dev.launch(&self.kernels.0, &grid, &[self.x.arg(), self.out.arg(), n])
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        let got = self.gpu.device.download(&self.out)?;
        let a = par_map(self.host.len(), |i| work_ci(self.host[i], i64::from(CHAIN_FMAS)));
        let g = GROUP as usize;
        let want = par_map(a.len(), |i| {
            let j = i - i % g + (i % g + 1) % g;
            a[i] + if j < a.len() { a[j] } else { 0.0 }
        });
        // The same FMA chain and one FP32 addition of the same two values: bit-exact.
        Ok(verify::compare(&got, &want, 1.0, 0.0))
    }

    fn work(&self) -> f64 {
        f64::from(self.n)
    }

    fn footprint_bytes(&self) -> Option<u64> {
        Some((self.x.bytes() + self.mid.bytes() + self.out.bytes()) as u64)
    }

    fn clock(&self) -> Clock {
        self.clock
    }
}
