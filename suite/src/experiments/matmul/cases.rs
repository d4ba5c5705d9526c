//! What a matmul point runs: the inputs and FP64 reference of a shape (made once per shape), the vendor BLAS case
//! and the kernel case (a kernel of the ladder as planned), each verified at every element against the reference.

use std::rc::Rc;

use super::ladder::{Plan, Schedule, Variant, REFERENCE_SYMBOL, REFERENCE_TILE};
use super::shape::Shape;
use crate::device::{Arg, Buffer, Kernel, LaunchConfig};
use crate::experiments::{Case, Error};
use crate::gpu::Gpu;
use crate::measure::matmul_flops;
use crate::verify::{self, Verification};

/// Elements of the GPU reference checked against the host's own FP64 sums.
const HOST_SAMPLES: usize = 4096;

/// The `reference` column: what every point is checked against.
pub(super) const REFERENCE_NAME: &str = "gpu_f64";

/// Inputs as the experiment draws them: uniform in [−1, 1), fresh for every shape so no kernel can pass by
/// matching one fixed pattern ([`verify::matmul_tolerance`] is derived for this distribution). An allocation the
/// host cannot make is an error, not an abort.
pub fn draw_inputs(rng: &mut fastrand::Rng, len: usize) -> Result<Vec<f32>, Error> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| Error::Unsupported(format!("cannot allocate {len} floats of input on the host")))?;
    v.extend((0..len).map(|_| rng.f32() * 2.0 - 1.0));
    Ok(v)
}

/// Inputs and the reference result for one shape, shared by every point of that shape.
pub(super) struct Inputs {
    /// The shape the inputs are for.
    pub(super) shape: Shape,
    a: Buffer<f32>,
    b: Buffer<f32>,
    /// C computed by the FP64 reference kernel (checked on the host at sampled elements), on the host.
    reference: Vec<f32>,
}

impl Inputs {
    /// Draws the inputs, runs the reference kernel and checks it against the host at [`HOST_SAMPLES`] elements.
    pub(super) fn new(gpu: &Gpu, shape: Shape) -> Result<Inputs, Error> {
        let dev = gpu.device.as_ref();
        let (free, total) = dev.memory_info()?;
        let bytes = shape.bytes().unwrap_or(u64::MAX);
        if bytes > free {
            return Err(Error::Device(crate::device::Error::OutOfMemory { requested: bytes, free, total }));
        }
        let mut rng = fastrand::Rng::new();
        let host_a = draw_inputs(&mut rng, shape.m * shape.k)?;
        let host_b = draw_inputs(&mut rng, shape.k * shape.n)?;
        let a = dev.upload(&host_a)?;
        let b = dev.upload(&host_b)?;
        let c = dev.alloc_buffer::<f32>(shape.m * shape.n)?;
        dev.fill_bytes(c.raw(), 0xff)?;
        let kernel = gpu.kernel("matmul", REFERENCE_SYMBOL)?;
        let grid = |size: usize| u32::try_from(size.div_ceil(REFERENCE_TILE as usize));
        let (Ok(gx), Ok(gy)) = (grid(shape.n), grid(shape.m)) else {
            return Err(Error::Unsupported(format!("{shape} needs too many groups for the reference kernel")));
        };
        let config =
            LaunchConfig { grid: [gx, gy, 1], group: [REFERENCE_TILE, REFERENCE_TILE, 1], dynamic_lds_bytes: 0 };
        dev.launch(&kernel, &config, &[a.arg(), b.arg(), c.arg(), dims(shape)?[0], dims(shape)?[1], dims(shape)?[2]])?;
        dev.synchronize()?;
        let reference = dev.download(&c)?;
        drop(c);
        // The reference at sampled elements against the host's FP64 sums.
        let (mut got, mut want) = (Vec::new(), Vec::new());
        for _ in 0..HOST_SAMPLES.min(shape.m * shape.n) {
            let (i, j) = (rng.usize(..shape.m), rng.usize(..shape.n));
            let dot: f64 =
                (0..shape.k).map(|p| f64::from(host_a[i * shape.k + p]) * f64::from(host_b[p * shape.n + j])).sum();
            got.push(reference[i * shape.n + j]);
            want.push(dot);
        }
        let check = verify::check_matmul(&got, &want, shape.k);
        if !check.passed() {
            return Err(Error::Unsupported(format!(
                "the reference kernel {REFERENCE_SYMBOL} does not match the host at {shape}, so nothing can be checked \
                 against it: {}",
                check.summary()
            )));
        }
        Ok(Inputs { shape, a, b, reference })
    }

    /// C, read back from the device, checked at every element against the reference.
    fn check(&self, gpu: &Gpu, c: &Buffer<f32>) -> Result<Verification, Error> {
        let got = gpu.device.download(c)?;
        Ok(verify::check_matmul(&got, &self.reference, self.shape.k))
    }

    /// The FLOP of one product of this shape.
    fn flops(&self) -> f64 {
        matmul_flops(self.shape.m, self.shape.n, self.shape.k)
    }
}

/// C = A·B computed on the device by `v` (split-K into `split` ranges where it splits, by [`split_k_for`] when
/// `None`), launched `launches` times on the same buffers (workspace and counters included) before C is read back:
/// what a row measures, for tests that compare results bit for bit. `a` is M×K and `b` K×N, row-major.
pub fn multiply(
    gpu: &Gpu,
    v: &Variant,
    shape: Shape,
    a: &[f32],
    b: &[f32],
    split: Option<u32>,
    launches: u32,
) -> Result<Vec<f32>, Error> {
    if a.len() != shape.m * shape.k || b.len() != shape.k * shape.n {
        return Err(Error::Unsupported(format!(
            "multiply at {shape} needs {} and {} floats, not {} and {}",
            shape.m * shape.k,
            shape.k * shape.n,
            a.len(),
            b.len()
        )));
    }
    let dev = gpu.device.as_ref();
    let inputs = Inputs { shape, a: dev.upload(a)?, b: dev.upload(b)?, reference: Vec::new() };
    let plan = device_plan(gpu, v, shape, split).map_err(Error::Unsupported)?;
    let mut case = KernelCase::new(gpu, Rc::new(inputs), v, plan)?;
    for _ in 0..launches {
        case.launch()?;
    }
    dev.synchronize()?;
    Ok(dev.download(&case.c)?)
}

/// M, N and K as the kernels' `int` arguments.
fn dims(shape: Shape) -> Result<[Arg; 3], Error> {
    let int = |x: usize| {
        i32::try_from(x)
            .map(Arg::I32)
            .map_err(|_| Error::Unsupported(format!("{shape} exceeds the kernels' int sizes")))
    };
    Ok([int(shape.m)?, int(shape.n)?, int(shape.k)?])
}

/// The plan of `v` at `shape` on this device: its `groups_per_cu` from the occupancy the device reports for the
/// symbol launched.
pub(super) fn device_plan(gpu: &Gpu, v: &Variant, shape: Shape, split: Option<u32>) -> Result<Plan, String> {
    let props = gpu.device.props();
    let symbol = v.symbol_for(shape);
    let items = v.group[0] * v.group[1];
    let groups_per_cu = match v.schedule {
        Schedule::Tiles => 1,
        _ => gpu
            .kernel("matmul", &symbol)
            .map_err(|e| e.to_string())
            .and_then(|k| gpu.device.occupancy_groups_per_cu(&k, items, 0).map_err(|e| e.to_string()))?,
    };
    if groups_per_cu == 0 {
        return Err(format!("{symbol}: the device reports no group of {items} items fits a CU"));
    }
    v.plan(shape, props.cu_count, groups_per_cu, split)
}

/// The vendor BLAS at one shape, checked at every element against the reference.
pub(super) struct VendorCase<'g> {
    gpu: &'g Gpu,
    inputs: Rc<Inputs>,
    c: Buffer<f32>,
}

impl<'g> VendorCase<'g> {
    /// Allocates C, poisoned: all-ones bytes are NaN, so an element the vendor BLAS does not write fails.
    pub(super) fn new(gpu: &'g Gpu, inputs: Rc<Inputs>) -> Result<VendorCase<'g>, Error> {
        let dev = gpu.device.as_ref();
        let c = dev.alloc_buffer::<f32>(inputs.shape.m * inputs.shape.n)?;
        dev.fill_bytes(c.raw(), 0xff)?;
        Ok(VendorCase { gpu, inputs, c })
    }
}

impl Case for VendorCase<'_> {
    fn launch(&mut self) -> crate::device::Result<()> {
        let s = self.inputs.shape;
        self.gpu.device.sgemm(s.m, s.n, s.k, self.inputs.a.raw(), self.inputs.b.raw(), self.c.raw())
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        self.inputs.check(self.gpu, &self.c)
    }

    fn work(&self) -> f64 {
        self.inputs.flops()
    }

    fn footprint_bytes(&self) -> Option<u64> {
        Some((self.inputs.a.bytes() + self.inputs.b.bytes() + self.c.bytes()) as u64)
    }
}

/// One kernel of the ladder at one shape, as planned ([`Variant::plan`]), checked at every element against the
/// reference.
pub(super) struct KernelCase<'g> {
    gpu: &'g Gpu,
    inputs: Rc<Inputs>,
    c: Buffer<f32>,
    kernel: Kernel,
    config: LaunchConfig,
    /// M, N, K as kernel arguments.
    dims: [Arg; 3],
    /// The split-K and stream-K workspace (partial tiles) and tile counters; `None` where the plan has none.
    work: Option<(Buffer<f32>, Buffer<u32>)>,
    /// Whether the kernel takes the workspace arguments.
    takes_work: bool,
    /// `matmul_zero_c` and its grid, launched before the kernel where it adds into C.
    zero: Option<(Kernel, LaunchConfig)>,
    plan: Plan,
}

/// The kernel that zeroes C before the atomic split-K kernel adds into it.
const ZERO_SYMBOL: &str = "matmul_zero_c";

impl<'g> KernelCase<'g> {
    /// Allocates C (poisoned: all-ones bytes are NaN, so an element the kernel does not write fails; zero for the
    /// naive kernel, which adds into it) and the plan's workspace (counters zeroed: each launch leaves them zero).
    pub(super) fn new(gpu: &'g Gpu, inputs: Rc<Inputs>, v: &Variant, plan: Plan) -> Result<KernelCase<'g>, Error> {
        let dev = gpu.device.as_ref();
        let shape = inputs.shape;
        let c = dev.alloc_buffer::<f32>(shape.m * shape.n)?;
        dev.fill_bytes(c.raw(), if v.zero_c { 0 } else { 0xff })?;
        let kernel = gpu.kernel("matmul", &plan.symbol)?;
        let config = LaunchConfig { grid: plan.grid, group: [v.group[0], v.group[1], 1], dynamic_lds_bytes: 0 };
        let work = if plan.counters > 0 {
            let len = |n: u64| usize::try_from(n).map_err(|_| Error::Unsupported(format!("{n} floats of workspace")));
            let counters = dev.alloc_buffer::<u32>(len(plan.counters)?)?;
            dev.fill_bytes(counters.raw(), 0)?;
            Some((dev.alloc_buffer::<f32>(len(plan.work_floats.max(1))?)?, counters))
        } else {
            None
        };
        let zero = match v.schedule {
            Schedule::SplitKAtomic => {
                // A grid-stride loop: enough groups to fill the device, no more than the elements need.
                let groups = (shape.m * shape.n).div_ceil(256).clamp(1, 16 * gpu.device.props().cu_count as usize);
                Some((gpu.kernel("matmul", ZERO_SYMBOL)?, LaunchConfig::linear(groups as u32, 256)))
            }
            _ => None,
        };
        let takes_work = matches!(v.schedule, Schedule::SplitK | Schedule::StreamK);
        Ok(KernelCase { gpu, inputs, c, kernel, config, dims: dims(shape)?, work, takes_work, zero, plan })
    }
}

impl Case for KernelCase<'_> {
    fn launch(&mut self) -> crate::device::Result<()> {
        let [m, n, k] = self.dims;
        let dev = self.gpu.device.as_ref();
        if let Some((zero, config)) = &self.zero {
            dev.launch(zero, config, &[self.c.arg(), m, n])?;
        }
        let mut args = vec![self.inputs.a.arg(), self.inputs.b.arg(), self.c.arg(), m, n, k];
        if self.takes_work {
            // A split-K plan with S = 1 has no workspace: the kernel then writes C directly and never reads these.
            let (work, counters) = self.work.as_ref().map_or((Arg::Ptr(0), Arg::Ptr(0)), |(w, c)| (w.arg(), c.arg()));
            args.extend([work, counters]);
        }
        dev.launch(&self.kernel, &self.config, &args)
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        self.inputs.check(self.gpu, &self.c)
    }

    fn work(&self) -> f64 {
        self.inputs.flops()
    }

    fn footprint_bytes(&self) -> Option<u64> {
        let work = self.work.as_ref().map_or(0, |(w, c)| w.bytes() + c.bytes());
        Some((self.inputs.a.bytes() + self.inputs.b.bytes() + self.c.bytes() + work) as u64)
    }
}

/// The autotune step's pick at one shape: the pick's kernel case, with the pick named in the row.
pub(super) struct AutotuneCase<'g> {
    /// The pick, prepared as its own row would be.
    pub(super) inner: KernelCase<'g>,
    /// The kernel picked.
    pub(super) pick: &'static Variant,
}

impl Case for AutotuneCase<'_> {
    fn launch(&mut self) -> crate::device::Result<()> {
        self.inner.launch()
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        self.inner.verify()
    }

    fn work(&self) -> f64 {
        self.inner.work()
    }

    fn footprint_bytes(&self) -> Option<u64> {
        self.inner.footprint_bytes()
    }

    fn resolved_params(&self) -> Vec<(&'static str, String)> {
        let plan = &self.inner.plan;
        vec![
            ("group_x", self.pick.group[0].to_string()),
            ("group_y", self.pick.group[1].to_string()),
            ("split_k", plan.split_k.to_string()),
            ("groups", plan.groups().to_string()),
            ("symbol", plan.symbol.clone()),
            ("pick", self.pick.name.to_string()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 32×32 product of inner size `k`, inputs drawn as the experiment draws them, seeded for repeatability.
    struct Product {
        k: usize,
        a: Vec<f32>,
        b: Vec<f32>,
    }

    const SIDE: usize = 32;

    impl Product {
        fn draw(k: usize, seed: u64) -> Product {
            let mut rng = fastrand::Rng::with_seed(seed);
            let a = draw_inputs(&mut rng, SIDE * k).unwrap();
            let b = draw_inputs(&mut rng, k * SIDE).unwrap();
            Product { k, a, b }
        }

        /// C computed by `dot`, given the K products of an element in order.
        fn compute<T>(&self, dot: impl Fn(&[(f32, f32)]) -> T) -> Vec<T> {
            let mut c = Vec::new();
            for i in 0..SIDE {
                for j in 0..SIDE {
                    let terms: Vec<(f32, f32)> =
                        (0..self.k).map(|p| (self.a[i * self.k + p], self.b[p * SIDE + j])).collect();
                    c.push(dot(&terms));
                }
            }
            c
        }
    }

    /// FP32 FMA accumulation, in order: what every kernel of the ladder does for one element.
    fn sequential(terms: &[(f32, f32)]) -> f32 {
        terms.iter().fold(0.0f32, |acc, &(x, y)| x.mul_add(y, acc))
    }

    fn reversed(terms: &[(f32, f32)]) -> f32 {
        terms.iter().rev().fold(0.0f32, |acc, &(x, y)| x.mul_add(y, acc))
    }

    /// Blocks of 8 terms accumulated on their own, then the block sums pairwise: a BLAS-like order.
    fn blocked_tree(terms: &[(f32, f32)]) -> f32 {
        let mut sums: Vec<f32> = terms.chunks(8).map(sequential).collect();
        while sums.len() > 1 {
            sums = sums.chunks(2).map(|p| p.iter().sum()).collect();
        }
        sums[0]
    }

    fn exact(terms: &[(f32, f32)]) -> f64 {
        terms.iter().map(|&(x, y)| f64::from(x) * f64::from(y)).sum()
    }

    /// An f32 rounded to nearest (ties to even) at 10 mantissa bits, as TF32 keeps them.
    fn tf32(x: f32) -> f32 {
        let bits = x.to_bits();
        let lsb = (bits >> 13) & 1;
        f32::from_bits((bits + 0xfff + lsb) & !0x1fff)
    }

    const KS: [usize; 6] = [256, 512, 1024, 2048, 4096, 8192];

    #[test]
    fn tf32_rounding_keeps_ten_mantissa_bits() {
        assert_eq!(tf32(1.0), 1.0);
        assert_eq!(tf32(1.0 + 2f32.powi(-10)), 1.0 + 2f32.powi(-10));
        assert_eq!(tf32(1.0 + 2f32.powi(-12)), 1.0);
        assert_eq!(tf32(1.0 + 3.0 * 2f32.powi(-12)), 1.0 + 2f32.powi(-10));
        assert_eq!(tf32(-0.5), -0.5);
    }

    #[test]
    fn correct_fp32_products_in_any_order_pass_the_matmul_check() {
        for (seed, &k) in KS.iter().enumerate() {
            let p = Product::draw(k, seed as u64);
            let orders: [(&str, Vec<f32>); 3] = [
                ("sequential", p.compute(sequential)),
                ("reversed", p.compute(reversed)),
                ("blocked_tree", p.compute(blocked_tree)),
            ];
            let exact = p.compute(exact);
            for (name, got) in &orders {
                let v = verify::check_matmul(got, &exact, k);
                assert!(v.passed(), "{name} vs exact at K = {k}: {}", v.summary());
                for (ref_name, reference) in &orders {
                    let v = verify::check_matmul(got, reference, k);
                    assert!(v.passed(), "{name} vs {ref_name} at K = {k}: {}", v.summary());
                    // Not passing by a hair: correct products use at most half the tolerance.
                    assert!(v.max_rel_err < 0.5 * v.tolerance, "{name} vs {ref_name} at K = {k}: {}", v.max_rel_err);
                }
            }
        }
    }

    #[test]
    fn tf32_products_and_products_missing_a_term_fail_the_matmul_check() {
        for (seed, &k) in KS.iter().enumerate() {
            let p = Product::draw(k, 100 + seed as u64);
            let tf32_product = p.compute(|t| t.iter().fold(0.0f32, |acc, &(x, y)| tf32(x).mul_add(tf32(y), acc)));
            let missing_first = p.compute(|t| sequential(&t[1..]));
            let missing_middle = p.compute(|t| {
                let mut t = t.to_vec();
                t.remove(k / 2);
                sequential(&t)
            });
            let references = [
                ("exact", p.compute(exact)),
                ("blocked_tree", p.compute(blocked_tree).into_iter().map(f64::from).collect()),
            ];
            for (ref_name, reference) in &references {
                for (name, got) in
                    [("tf32", &tf32_product), ("missing k = 0", &missing_first), ("missing k = K/2", &missing_middle)]
                {
                    let v = verify::check_matmul(got, reference, k);
                    assert!(!v.passed(), "{name} passed against {ref_name} at K = {k}: worst {:e}", v.max_rel_err);
                    // Failing by a wide margin, not by luck.
                    assert!(v.max_rel_err > 4.0 * v.tolerance, "{name} vs {ref_name} at K = {k}: {}", v.max_rel_err);
                }
            }
        }
    }
}
