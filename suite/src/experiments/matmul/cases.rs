//! What a matmul point runs: the inputs and reference of a shape and precision (made once per shape), the vendor
//! BLAS case and the kernel case (a kernel of the ladder as planned), each verified at every element against the
//! reference. The element type ([`Element`]) carries what differs between FP32 and FP64: how inputs are drawn, which
//! reference kernel and tolerance check them, and which vendor GEMM runs.

use std::rc::Rc;

use super::ladder::{
    Fixup, Plan, Schedule, Variant, REFERENCE_DOT2_SYMBOL, REFERENCE_SYMBOL, REFERENCE_TILE, SPLIT_SUFFIX,
};
use super::pack::{pack_pays, Packing};
use super::shape::Shape;
use crate::device::{Arg, Buffer, Device, Kernel, LaunchConfig, RawAlloc};
use crate::experiments::{Case, Error};
use crate::gpu::Gpu;
use crate::measure::matmul_flops;
use crate::phases::{Phase, PhaseClock};
use crate::precision::Precision;
use crate::verify::{self, Verification};

/// Elements of the GPU reference checked against the host's own sums.
const HOST_SAMPLES: usize = 4096;

/// An element type of the ladder, FP32 or FP64: what its points draw, run and are checked against.
pub trait Element: bytemuck::Pod + Into<f64> + std::fmt::Debug + 'static {
    /// Its precision.
    const PRECISION: Precision;
    /// The reference kernel its points are checked against.
    const REFERENCE_SYMBOL: &'static str;
    /// The `reference` column of its rows.
    const REFERENCE_NAME: &'static str;
    /// One input, uniform in [−1, 1).
    fn draw(rng: &mut fastrand::Rng) -> Self;
    /// The host's value of one element of C from its K products, to check the GPU reference with.
    fn host_dot(pairs: impl Iterator<Item = (Self, Self)>) -> f64;
    /// Checks the GPU reference at sampled elements against the host's values.
    fn check_reference(got: &[Self], host: &[f64], k: usize) -> Verification;
    /// Checks a product of inner size `k` against the reference, every element.
    fn check(got: &[Self], reference: &[Self], k: usize) -> Verification;
    /// The vendor BLAS's GEMM in this precision.
    fn gemm(
        dev: &dyn Device,
        shape: Shape,
        a: &dyn RawAlloc,
        b: &dyn RawAlloc,
        c: &dyn RawAlloc,
    ) -> crate::device::Result<()>;
}

impl Element for f32 {
    const PRECISION: Precision = Precision::F32;
    const REFERENCE_SYMBOL: &'static str = REFERENCE_SYMBOL;
    const REFERENCE_NAME: &'static str = "gpu_f64";

    fn draw(rng: &mut fastrand::Rng) -> f32 {
        rng.f32() * 2.0 - 1.0
    }

    /// The FP64 sum of the products (each exact in FP64): far inside any FP32 kernel's rounding.
    fn host_dot(pairs: impl Iterator<Item = (f32, f32)>) -> f64 {
        pairs.map(|(x, y)| f64::from(x) * f64::from(y)).sum()
    }

    fn check_reference(got: &[f32], host: &[f64], k: usize) -> Verification {
        verify::check_matmul(got, host, k)
    }

    fn check(got: &[f32], reference: &[f32], k: usize) -> Verification {
        verify::check_matmul(got, reference, k)
    }

    fn gemm(
        dev: &dyn Device,
        s: Shape,
        a: &dyn RawAlloc,
        b: &dyn RawAlloc,
        c: &dyn RawAlloc,
    ) -> crate::device::Result<()> {
        dev.gemm(Precision::F32, [s.m, s.n, s.k], a, b, c)
    }
}

impl Element for f64 {
    const PRECISION: Precision = Precision::F64;
    const REFERENCE_SYMBOL: &'static str = REFERENCE_DOT2_SYMBOL;
    const REFERENCE_NAME: &'static str = "gpu_dot2";

    fn draw(rng: &mut fastrand::Rng) -> f64 {
        rng.f64() * 2.0 - 1.0
    }

    /// The compensated (Dot2) sum, the same algorithm as the GPU reference.
    fn host_dot(pairs: impl Iterator<Item = (f64, f64)>) -> f64 {
        verify::dot2(pairs)
    }

    fn check_reference(got: &[f64], host: &[f64], k: usize) -> Verification {
        let scale = verify::max_abs(host).max((k as f64).sqrt());
        verify::compare(got, host, scale, verify::DOT2_AGREEMENT)
    }

    fn check(got: &[f64], reference: &[f64], k: usize) -> Verification {
        verify::check_matmul_f64(got, reference, k)
    }

    fn gemm(
        dev: &dyn Device,
        s: Shape,
        a: &dyn RawAlloc,
        b: &dyn RawAlloc,
        c: &dyn RawAlloc,
    ) -> crate::device::Result<()> {
        dev.gemm(Precision::F64, [s.m, s.n, s.k], a, b, c)
    }
}

/// FP32 inputs as the experiment draws them: uniform in [−1, 1), fresh for every shape so no kernel can pass by
/// matching one fixed pattern ([`verify::matmul_tolerance`] is derived for this distribution). An allocation the
/// host cannot make is an error, not an abort.
pub fn draw_inputs(rng: &mut fastrand::Rng, len: usize) -> Result<Vec<f32>, Error> {
    draw(rng, len)
}

/// Inputs of any element type, drawn as [`draw_inputs`] draws FP32 ones.
pub fn draw<T: Element>(rng: &mut fastrand::Rng, len: usize) -> Result<Vec<T>, Error> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| {
        Error::Unsupported(format!("cannot allocate {len} {} inputs on the host", T::PRECISION.label()))
    })?;
    v.extend((0..len).map(|_| T::draw(rng)));
    Ok(v)
}

/// Inputs and the reference result for one shape and precision, shared by every point of that shape.
pub(super) struct Inputs<T: Element> {
    /// The shape the inputs are for.
    pub(super) shape: Shape,
    a: Buffer<T>,
    b: Buffer<T>,
    /// C computed by the reference kernel (checked on the host at sampled elements), on the host.
    reference: Vec<T>,
}

impl<T: Element> Inputs<T> {
    /// Draws the inputs, runs the reference kernel and checks it against the host at [`HOST_SAMPLES`] elements.
    pub(super) fn new(gpu: &Gpu, shape: Shape, clock: &PhaseClock) -> Result<Inputs<T>, Error> {
        let dev = gpu.device.as_ref();
        let (free, total) = dev.memory_info()?;
        let bytes = shape.bytes_for(T::PRECISION).unwrap_or(u64::MAX);
        if bytes > free {
            return Err(Error::Device(crate::device::Error::OutOfMemory { requested: bytes, free, total }));
        }
        let inputs = clock.enter(Phase::Inputs);
        let mut rng = fastrand::Rng::new();
        let host_a: Vec<T> = draw(&mut rng, shape.m * shape.k)?;
        let host_b: Vec<T> = draw(&mut rng, shape.k * shape.n)?;
        let a = dev.upload(&host_a)?;
        let b = dev.upload(&host_b)?;
        drop(inputs);
        let _reference = clock.enter(Phase::Reference);
        let c = dev.alloc_buffer::<T>(shape.m * shape.n)?;
        dev.fill_bytes(c.raw(), 0xff)?;
        let kernel = gpu.kernel("matmul", T::REFERENCE_SYMBOL)?;
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
        // The reference at sampled elements against the host's sums.
        let (mut got, mut want) = (Vec::new(), Vec::new());
        for _ in 0..HOST_SAMPLES.min(shape.m * shape.n) {
            let (i, j) = (rng.usize(..shape.m), rng.usize(..shape.n));
            let pairs = (0..shape.k).map(|p| (host_a[i * shape.k + p], host_b[p * shape.n + j]));
            got.push(reference[i * shape.n + j]);
            want.push(T::host_dot(pairs));
        }
        let check = T::check_reference(&got, &want, shape.k);
        if !check.passed() {
            return Err(Error::Unsupported(format!(
                "the reference kernel {} does not match the host at {shape}, so nothing can be checked against it: {}",
                T::REFERENCE_SYMBOL,
                check.summary()
            )));
        }
        Ok(Inputs { shape, a, b, reference })
    }

    /// C, read back from the device, checked at every element against the reference.
    fn check(&self, gpu: &Gpu, c: &Buffer<T>) -> Result<Verification, Error> {
        let got = gpu.device.download(c)?;
        Ok(T::check(&got, &self.reference, self.shape.k))
    }

    /// The FLOP of one product of this shape.
    fn flops(&self) -> f64 {
        matmul_flops(self.shape.m, self.shape.n, self.shape.k)
    }
}

/// C = A·B computed on the device by `v` in the precision of `T` (split-K into `split` ranges where it splits, by
/// [`split_k_for`] when `None`; A and B packed for its `_packed` twin as `packing` says, where it may pack), launched
/// `launches` times on the same buffers (workspace and counters included) before C is read back: what a row
/// measures, for tests that compare results bit for bit. `a` is M×K and `b` K×N, row-major.
#[allow(clippy::too_many_arguments)]
pub fn multiply<T: Element>(
    gpu: &Gpu,
    v: &Variant,
    shape: Shape,
    a: &[T],
    b: &[T],
    split: Option<u32>,
    packing: Packing,
    launches: u32,
) -> Result<Vec<T>, Error> {
    if a.len() != shape.m * shape.k || b.len() != shape.k * shape.n {
        return Err(Error::Unsupported(format!(
            "multiply at {shape} needs {} and {} elements, not {} and {}",
            shape.m * shape.k,
            shape.k * shape.n,
            a.len(),
            b.len()
        )));
    }
    let dev = gpu.device.as_ref();
    let inputs = Inputs { shape, a: dev.upload(a)?, b: dev.upload(b)?, reference: Vec::new() };
    let plan = device_plan(gpu, v, shape, T::PRECISION, split, packing).map_err(Error::Unsupported)?;
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

/// The plan of `v` at `shape` in `precision` on this device: its `groups_per_cu` from the occupancy the device
/// reports for the symbol launched, and A and B packed where the kernel may pack and `packing` says so (by the model
/// [`pack_pays`] with the device's FP32 vector peak and memory bandwidth for [`Packing::Model`]).
pub(super) fn device_plan(
    gpu: &Gpu,
    v: &Variant,
    shape: Shape,
    precision: Precision,
    split: Option<u32>,
    packing: Packing,
) -> Result<Plan, String> {
    let props = gpu.device.props();
    let pack = v.can_pack(shape, precision)
        && match packing {
            Packing::Always => true,
            Packing::Never => false,
            Packing::Model => {
                let ceilings = crate::peaks::ceilings(props);
                let fp32 = ceilings.peak_tflops(Precision::F32, crate::peaks::Unit::Vector);
                // Without the device's figures, no packing: the `_unaligned` kernel is right at every size.
                matches!((fp32, ceilings.memory_gbps), (Some(t), Some(bw)) if pack_pays(shape, t, bw))
            }
        };
    // The occupancy (and so stream-K's group count) of the symbol that is launched: the `_packed` twin's registers
    // are not its `_unaligned` twin's.
    let symbol = if pack { v.packed_symbol() } else { v.symbol_for(shape, precision) };
    let items = v.group[0] * v.group[1];
    let groups_per_cu = match v.schedule {
        Schedule::Tiles => 1,
        _ => gpu.kernel(v.source, &symbol).map_err(|e| e.to_string()).and_then(|k| {
            gpu.device.occupancy_groups_per_cu(&k, items, v.dynamic_lds_bytes).map_err(|e| e.to_string())
        })?,
    };
    if groups_per_cu == 0 {
        return Err(format!("{symbol}: the device reports no group of {items} items fits a CU"));
    }
    let plan = v.plan(shape, precision, props.cu_count, groups_per_cu, split)?;
    Ok(if pack { plan.packed(v, shape) } else { plan })
}

/// The vendor BLAS at one shape, checked at every element against the reference.
pub(super) struct VendorCase<'g, T: Element> {
    gpu: &'g Gpu,
    inputs: Rc<Inputs<T>>,
    c: Buffer<T>,
}

impl<'g, T: Element> VendorCase<'g, T> {
    /// Allocates C, poisoned: all-ones bytes are NaN, so an element the vendor BLAS does not write fails.
    pub(super) fn new(gpu: &'g Gpu, inputs: Rc<Inputs<T>>) -> Result<VendorCase<'g, T>, Error> {
        let dev = gpu.device.as_ref();
        let c = dev.alloc_buffer::<T>(inputs.shape.m * inputs.shape.n)?;
        dev.fill_bytes(c.raw(), 0xff)?;
        Ok(VendorCase { gpu, inputs, c })
    }
}

impl<T: Element> Case for VendorCase<'_, T> {
    fn launch(&mut self) -> crate::device::Result<()> {
        let dev = self.gpu.device.as_ref();
        T::gemm(dev, self.inputs.shape, self.inputs.a.raw(), self.inputs.b.raw(), self.c.raw())
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
pub(super) struct KernelCase<'g, T: Element> {
    gpu: &'g Gpu,
    inputs: Rc<Inputs<T>>,
    c: Buffer<T>,
    /// What one launch of the case enqueues, in order: the kernel, and around it where the plan has them
    /// `matmul_pack_operands` (before a `_packed` kernel), `matmul_zero_c` (before the atomic split-K kernel, which
    /// adds into C), the DMMA rung's split instance over its last wave's tiles, and `matmul_splitk_reduce` (`_f64`,
    /// where the plan sums the partial tiles there).
    launches: Vec<(Kernel, LaunchConfig, Vec<Arg>)>,
    /// The split-K and stream-K workspace (partial tiles) and tile counters; `None` where the plan has none.
    work: Option<(Buffer<T>, Buffer<u32>)>,
    /// The packed copies of A and B a `_packed` kernel reads (each `None` where that operand is read in place).
    packed: (Option<Buffer<T>>, Option<Buffer<T>>),
    plan: Plan,
}

/// The kernel that copies A and B into rows padded to 16 bytes for a `_packed` kernel (FP32).
const PACK_SYMBOL: &str = "matmul_pack_operands";

/// Rows of the pack kernel's grid at most (its groups walk the rest, `kernels/matmul.hip`).
const PACK_GRID_ROWS: u32 = 65535;

/// Groups of 256 items per CU the pack kernel is launched with: 8 fill an SM of 2048 items (and a gfx90a CU's 40
/// waves of 64 five times over), each item with four rows' loads in flight.
const PACK_GROUPS_PER_CU: u32 = 8;

/// The kernel that zeroes C before the atomic split-K kernel adds into it (FP32 only: the atomic rung has no FP64
/// instance).
const ZERO_SYMBOL: &str = "matmul_zero_c";

/// The kernel that adds split-K's partial tiles into C where the plan says ([`Fixup::Kernel`]), in
/// `kernels/matmul.hip` whichever source the split kernel is in; FP64's is `<this>_f64`.
const REDUCE_SYMBOL: &str = "matmul_splitk_reduce";

/// Tile rows per group of the DMMA rung's tile order (`DMMA_GROUP_M` in `kernels/matmul_dmma.hip`; a test holds the
/// two equal): the reduction kernel finds a DMMA tile by it.
pub(super) const DMMA_GROUP_M: u32 = 8;

impl<'g, T: Element> KernelCase<'g, T> {
    /// Allocates C (poisoned: all-ones bytes are NaN, so an element the kernel does not write fails; zero for the
    /// naive kernel, which adds into it) and the plan's workspace (counters zeroed: each launch leaves them zero),
    /// and lays out the launches.
    pub(super) fn new(
        gpu: &'g Gpu,
        inputs: Rc<Inputs<T>>,
        v: &Variant,
        plan: Plan,
    ) -> Result<KernelCase<'g, T>, Error> {
        let dev = gpu.device.as_ref();
        let shape = inputs.shape;
        let c = dev.alloc_buffer::<T>(shape.m * shape.n)?;
        dev.fill_bytes(c.raw(), if v.zero_c { 0 } else { 0xff })?;
        let work = if plan.work_elems > 0 && plan.fixup != Fixup::None {
            let len = |n: u64| usize::try_from(n).map_err(|_| Error::Unsupported(format!("{n} elements of workspace")));
            let counters = dev.alloc_buffer::<u32>(len(plan.counters.max(1))?)?;
            dev.fill_bytes(counters.raw(), 0)?;
            Some((dev.alloc_buffer::<T>(len(plan.work_elems)?)?, counters))
        } else {
            None
        };
        let [m, n, k] = dims(shape)?;
        let int = |x: u64| {
            i32::try_from(x)
                .map(Arg::I32)
                .map_err(|_| Error::Unsupported(format!("{x} exceeds the kernels' int sizes")))
        };
        let work_arg = work.as_ref().map_or(Arg::Ptr(0), |(w, _)| w.arg());
        let group = [v.group[0], v.group[1], 1];
        let config = |grid| LaunchConfig { grid, group, dynamic_lds_bytes: plan.dynamic_lds_bytes };
        // A grid-stride loop over `elems`: enough groups of 256 to fill the device, no more than the elements need.
        let linear = |elems: usize| {
            LaunchConfig::linear(elems.div_ceil(256).clamp(1, 16 * dev.props().cu_count as usize) as u32, 256)
        };
        let mut launches = Vec::new();
        // A `_packed` kernel reads copies of A and B with padded rows, made in the same launch: first the copy.
        let mut packed = (None, None);
        if let Some(pack) = plan.pack {
            let copy = |yes: bool, elems: u64| -> Result<Option<Buffer<T>>, Error> {
                let len = usize::try_from(elems).map_err(|_| Error::Unsupported(format!("{elems} elements")))?;
                Ok(if yes { Some(dev.alloc_buffer::<T>(len)?) } else { None })
            };
            packed = (copy(pack.a, shape.m as u64 * pack.a_ld)?, copy(pack.b, shape.k as u64 * pack.b_ld)?);
            let cols = [(pack.a, pack.a_ld), (pack.b, pack.b_ld)].iter().filter(|p| p.0).map(|p| p.1).max();
            let rows = [(pack.a, shape.m), (pack.b, shape.k)].iter().filter(|p| p.0).map(|p| p.1).max();
            // A quad per item: groups of 256 cover 1024 columns; rows enough for about PACK_GROUPS_PER_CU groups
            // per CU, each item walking the rest.
            let x = cols.unwrap_or(1).div_ceil(1024) as u32;
            let y = (PACK_GROUPS_PER_CU * dev.props().cu_count / (2 * x)).clamp(1, PACK_GRID_ROWS);
            let grid = [x, y.min(rows.unwrap_or(1) as u32), 2];
            let ptr = |b: &Option<Buffer<T>>| b.as_ref().map_or(Arg::Ptr(0), |b| b.arg());
            let args = vec![
                inputs.a.arg(),
                inputs.b.arg(),
                ptr(&packed.0),
                ptr(&packed.1),
                m,
                n,
                k,
                Arg::I32(i32::from(pack.a)),
                Arg::I32(i32::from(pack.b)),
            ];
            let config = LaunchConfig { grid, group: [256, 1, 1], dynamic_lds_bytes: 0 };
            launches.push((gpu.kernel("matmul", PACK_SYMBOL)?, config, args));
        }
        let operand = |copy: &Option<Buffer<T>>, own: &Buffer<T>| copy.as_ref().unwrap_or(own).arg();
        let base = [operand(&packed.0, &inputs.a), operand(&packed.1, &inputs.b), c.arg(), m, n, k];
        if v.schedule == Schedule::SplitKAtomic {
            launches.push((gpu.kernel(v.source, ZERO_SYMBOL)?, linear(shape.m * shape.n), vec![c.arg(), m, n]));
        }
        // The kernel's own arguments after M, N, K: split-K's and stream-K's workspace and counters (no counters where
        // the reduction kernel sums; none of either with S = 1, which reads neither); the DMMA rung's split instance
        // takes the workspace and its first tile, the unsplit one nothing.
        let counters = match (&work, plan.fixup) {
            (Some((_, counters)), Fixup::InKernel) => counters.arg(),
            _ => Arg::Ptr(0),
        };
        let more = match v.schedule {
            Schedule::SplitK | Schedule::StreamK => vec![work_arg, counters],
            Schedule::GroupedSplitK if plan.split_k > 1 && plan.tail.is_none() => vec![work_arg, Arg::I32(0)],
            _ => vec![],
        };
        launches.push((gpu.kernel(v.source, &plan.symbol)?, config(plan.grid), [&base[..], &more].concat()));
        // The tiles the reduction kernel sums: from the DMMA tail's first, or all of them.
        let (tx, ty) = v.tiles(shape);
        let (first, tiles) = match plan.tail {
            Some(tail) => {
                let split = format!("{}{SPLIT_SUFFIX}", plan.symbol);
                let args = [&base[..], &[work_arg, int(u64::from(tail.first))?]].concat();
                launches.push((gpu.kernel(v.source, &split)?, config([tail.tiles, tail.split, 1]), args));
                (u64::from(tail.first), u64::from(tail.tiles))
            }
            None => (0, tx * ty),
        };
        if plan.fixup == Fixup::Kernel {
            let symbol = match T::PRECISION {
                Precision::F32 => REDUCE_SYMBOL.to_string(),
                Precision::F64 => format!("{REDUCE_SYMBOL}_f64"),
            };
            // The partial tiles' layout (kernels/include/matmul_split.h): the wave-tiled rungs' fragment order for a
            // group of their size, tiles along N first; or (0) the DMMA rung's row-major tiles in its grouped order.
            let (threads, group_m) = match v.schedule {
                Schedule::GroupedSplitK => (0, DMMA_GROUP_M),
                _ => (v.group[0] * v.group[1], 0),
            };
            let aligned = Arg::I32(i32::from(shape.rows_aligned_for(T::PRECISION)));
            let layout = [v.block[1], v.block[0], threads, group_m].map(|x| Arg::I32(x as i32));
            let args = [
                &[work_arg, c.arg(), m, n, Arg::I32(plan.split_k as i32), aligned][..],
                &layout,
                &[int(first)?, int(tiles)?],
            ]
            .concat();
            let quads = (tiles * u64::from(v.block[0]) * u64::from(v.block[1]) / 4) as usize;
            launches.push((gpu.kernel("matmul", &symbol)?, linear(quads * 4), args));
        }
        Ok(KernelCase { gpu, inputs, c, launches, work, packed, plan })
    }
}

impl<T: Element> Case for KernelCase<'_, T> {
    fn launch(&mut self) -> crate::device::Result<()> {
        let dev = self.gpu.device.as_ref();
        for (kernel, config, args) in &self.launches {
            dev.launch(kernel, config, args)?;
        }
        Ok(())
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        self.inputs.check(self.gpu, &self.c)
    }

    fn work(&self) -> f64 {
        self.inputs.flops()
    }

    fn footprint_bytes(&self) -> Option<u64> {
        let work = self.work.as_ref().map_or(0, |(w, c)| w.bytes() + c.bytes());
        let packed =
            [&self.packed.0, &self.packed.1].iter().filter_map(|b| b.as_ref()).map(|b| b.bytes()).sum::<usize>();
        Some((self.inputs.a.bytes() + self.inputs.b.bytes() + self.c.bytes() + work + packed) as u64)
    }
}

/// The autotune step's pick at one shape: the pick's kernel case, with the pick named in the row.
pub(super) struct AutotuneCase<'g, T: Element> {
    /// The pick, prepared as its own row would be.
    pub(super) inner: KernelCase<'g, T>,
    /// The kernel picked.
    pub(super) pick: &'static Variant,
}

impl<T: Element> Case for AutotuneCase<'_, T> {
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
        let props = self.inner.gpu.device.props();
        let unit = self.pick.unit(T::PRECISION, props.arch.as_str());
        let peak = crate::peaks::ceilings(props).peak_tflops(T::PRECISION, unit);
        vec![
            ("group_x", self.pick.group[0].to_string()),
            ("group_y", self.pick.group[1].to_string()),
            ("split_k", plan.split_k.to_string()),
            ("groups", plan.groups().to_string()),
            ("symbol", plan.symbol.clone()),
            ("pick", self.pick.name.to_string()),
            ("unit", unit.name().to_string()),
            ("unit_peak_tflops", peak.map(|t| t.to_string()).unwrap_or_default()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 32×32 product of inner size `k` in FP32 (`E` = f32) or FP64, inputs drawn as the experiment draws them,
    /// seeded for repeatability.
    struct Product<E> {
        k: usize,
        a: Vec<E>,
        b: Vec<E>,
    }

    const SIDE: usize = 32;

    impl Product<f32> {
        fn draw(k: usize, seed: u64) -> Product<f32> {
            let mut rng = fastrand::Rng::with_seed(seed);
            let a = draw_inputs(&mut rng, SIDE * k).unwrap();
            let b = draw_inputs(&mut rng, k * SIDE).unwrap();
            Product { k, a, b }
        }
    }

    impl Product<f64> {
        fn draw(k: usize, seed: u64) -> Product<f64> {
            let mut rng = fastrand::Rng::with_seed(seed);
            Product { k, a: draw(&mut rng, SIDE * k).unwrap(), b: draw(&mut rng, k * SIDE).unwrap() }
        }
    }

    impl<E: Copy> Product<E> {
        /// C computed by `dot`, given the K products of an element in order.
        fn compute<T>(&self, dot: impl Fn(&[(E, E)]) -> T) -> Vec<T> {
            let mut c = Vec::new();
            for i in 0..SIDE {
                for j in 0..SIDE {
                    let terms: Vec<(E, E)> =
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
            let p = Product::<f32>::draw(k, seed as u64);
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

    /// FP64 FMA accumulation in order, as the FP64 vector kernels and (per k step) the DMMA rung do.
    fn sequential64(terms: &[(f64, f64)]) -> f64 {
        terms.iter().fold(0.0f64, |acc, &(x, y)| x.mul_add(y, acc))
    }

    #[test]
    fn correct_fp64_products_in_any_order_pass_the_fp64_check_against_dot2() {
        for (seed, &k) in KS.iter().enumerate() {
            let p = Product::<f64>::draw(k, 200 + seed as u64);
            let reference = p.compute(|t| <f64 as Element>::host_dot(t.iter().copied()));
            let reversed = |t: &[(f64, f64)]| t.iter().rev().fold(0.0f64, |acc, &(x, y)| x.mul_add(y, acc));
            let blocked_tree = |t: &[(f64, f64)]| {
                let mut sums: Vec<f64> = t.chunks(8).map(sequential64).collect();
                while sums.len() > 1 {
                    sums = sums.chunks(2).map(|p| p.iter().sum()).collect();
                }
                sums[0]
            };
            let no_fma = |t: &[(f64, f64)]| t.iter().fold(0.0f64, |acc, &(x, y)| acc + x * y);
            for (name, got) in [
                ("sequential", p.compute(sequential64)),
                ("reversed", p.compute(reversed)),
                ("blocked_tree", p.compute(blocked_tree)),
                ("without FMA", p.compute(no_fma)),
            ] {
                let v = <f64 as Element>::check(&got, &reference, k);
                assert!(v.passed(), "{name} at K = {k}: {}", v.summary());
                // Not passing by a hair: correct products use at most half the tolerance.
                assert!(v.max_rel_err < 0.5 * v.tolerance, "{name} at K = {k}: {:e}", v.max_rel_err);
            }
            // The reference check: the host's Dot2 and a plain FP64 sum agree only to FP64's rounding, the GPU's
            // Dot2 (the same algorithm) to within DOT2_AGREEMENT.
            let again = p.compute(|t| verify::dot2(t.iter().copied()));
            assert!(<f64 as Element>::check_reference(&again, &reference, k).passed());
        }
    }

    #[test]
    fn fp32_arithmetic_a_missing_term_and_a_planted_error_fail_the_fp64_check() {
        for (seed, &k) in KS.iter().enumerate() {
            let p = Product::<f64>::draw(k, 300 + seed as u64);
            let reference = p.compute(|t| <f64 as Element>::host_dot(t.iter().copied()));
            let in_fp32 =
                p.compute(|t| f64::from(t.iter().fold(0.0f32, |acc, &(x, y)| (x as f32).mul_add(y as f32, acc))));
            let missing = p.compute(|t| sequential64(&t[1..]));
            for (name, got) in [("FP32 arithmetic", &in_fp32), ("missing k = 0", &missing)] {
                let v = <f64 as Element>::check(got, &reference, k);
                assert!(!v.passed(), "{name} passed at K = {k}: worst {:e}", v.max_rel_err);
                assert!(v.max_rel_err > 100.0 * v.tolerance, "{name} at K = {k}: {:e}", v.max_rel_err);
            }
            // One element off by 1.5 tolerances of the scale fails, at that element only; off by half of one passes.
            let scale = verify::max_abs(&reference).max((k as f64).sqrt());
            let tolerance = verify::matmul_tolerance_f64(k);
            let mut planted = p.compute(sequential64);
            planted[77] += 1.5 * tolerance * scale;
            let v = <f64 as Element>::check(&planted, &reference, k);
            assert_eq!((v.passed(), v.failures, v.first_failures[0].0), (false, 1, 77), "K = {k}: {}", v.summary());
            planted[77] = reference[77] + 0.5 * tolerance * scale;
            assert!(<f64 as Element>::check(&planted, &reference, k).passed(), "K = {k}");
            // The GPU reference's own check: a reference off by 2 ε of the scale at one element is refused.
            let mut bad_reference = reference.clone();
            bad_reference[5] += 2.0 * verify::DOT2_AGREEMENT * scale;
            assert!(!<f64 as Element>::check_reference(&bad_reference, &reference, k).passed(), "K = {k}");
        }
    }

    #[test]
    fn tf32_products_and_products_missing_a_term_fail_the_matmul_check() {
        for (seed, &k) in KS.iter().enumerate() {
            let p = Product::<f32>::draw(k, 100 + seed as u64);
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
