//! Use case 2, load balancing: a forest traversed level by level (non-PT) or through one device queue (PT).

use crate::device::{self, Arg, Buffer, Kernel, LaunchConfig};
use crate::experiments::{Case, Clock, Error};
use crate::gpu::Gpu;
use crate::verify::{self, Verification};

use super::super::reference::{forest_reference, ForestReference};
use super::super::spec::Variant;
use super::super::{GROUP, MAX_LEVELS, SOURCE};
use super::{check_status, maximal_launch, u32_of};

/// Use case 2: forest traversal.
pub(super) struct ForestCase<'g> {
    gpu: &'g Gpu,
    variant: Variant,
    clock: Clock,
    kernel: Kernel,
    reference: ForestReference,
    tilted: bool,
    levels: u32,
    inputs: u32,
    spin_limit: u32,
    groups: u32,
    cap: u32,
    /// Non-PT: the current frontier; PT: the queue.
    a: Buffer<u64>,
    /// Non-PT: the next frontier; PT: the queue's pristine copy (the roots, then empty slots).
    b: Buffer<u64>,
    /// Non-PT: the roots, copied into `a` at the start of every sequence.
    roots: Option<Buffer<u64>>,
    /// Non-PT: [n_out]; PT: [head, tail, pending].
    counters: Buffer<u32>,
    /// PT: the counters' starting values, copied into `counters` at the start of every sequence.
    pristine_counters: Option<Buffer<u32>>,
    level_counts: Buffer<u32>,
    checksum: Buffer<u32>,
    status: Buffer<u32>,
}

impl<'g> ForestCase<'g> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        gpu: &'g Gpu,
        variant: Variant,
        tilted: bool,
        levels: u32,
        inputs: u32,
        fmas: i64,
        spin_limit: u32,
        clock: Clock,
    ) -> Result<Self, Error> {
        let dev = gpu.device.as_ref();
        let reference = forest_reference(levels, inputs, tilted, fmas);
        let cap = u32_of(reference.nodes, "forest nodes")?;
        let pt_kernel = gpu.kernel(SOURCE, &format!("pt_forest_pt_f{fmas}"))?;
        let (groups, _) = maximal_launch(gpu, &pt_kernel)?;
        let pristine_counters = if variant == Variant::NonPt { None } else { Some(dev.upload(&[0, inputs, inputs])?) };
        let (kernel, a, b, roots, counters) = if variant == Variant::NonPt {
            let widest = reference.widest as usize;
            (
                gpu.kernel(SOURCE, &format!("pt_forest_level_f{fmas}"))?,
                dev.alloc_buffer::<u64>(widest)?,
                dev.alloc_buffer::<u64>(widest)?,
                Some(dev.upload(&reference.roots)?),
                dev.alloc_buffer::<u32>(1)?,
            )
        } else {
            let mut pristine = vec![u64::MAX; cap as usize];
            pristine[..reference.roots.len()].copy_from_slice(&reference.roots);
            (
                pt_kernel,
                dev.alloc_buffer::<u64>(cap as usize)?,
                dev.upload(&pristine)?,
                None,
                dev.upload(&[0, inputs, inputs])?,
            )
        };
        Ok(ForestCase {
            gpu,
            variant,
            clock,
            kernel,
            tilted,
            levels,
            inputs,
            spin_limit,
            groups,
            cap,
            a,
            b,
            roots,
            counters,
            pristine_counters,
            level_counts: dev.alloc_buffer::<u32>(MAX_LEVELS as usize)?,
            checksum: dev.alloc_buffer::<u32>(1)?,
            status: dev.alloc_buffer::<u32>(1)?,
            reference,
        })
    }

    fn sequence_nonpt(&mut self) -> device::Result<()> {
        let dev = self.gpu.device.as_ref();
        if let Some(roots) = &self.roots {
            dev.copy_on_device(roots.raw(), self.a.raw(), roots.bytes())?;
        }
        let (mut src, mut dst) = (&self.a, &self.b);
        let mut n_in = self.inputs;
        // A forest has at most MAX_LEVELS levels; a count that keeps coming back non-zero is a bug, not a hang.
        for _ in 0..MAX_LEVELS {
            if n_in == 0 {
                return Ok(());
            }
            dev.fill_bytes(self.counters.raw(), 0)?;
            let args = [
                src.arg(),
                Arg::U32(n_in),
                dst.arg(),
                self.counters.arg(),
                Arg::U32(self.reference.widest as u32),
                self.level_counts.arg(),
                self.checksum.arg(),
                Arg::U32(u32::from(self.tilted)),
                Arg::U32(self.levels),
                Arg::U32(self.inputs),
                self.status.arg(),
            ];
            dev.launch(&self.kernel, &LaunchConfig::linear(n_in.div_ceil(GROUP), GROUP), &args)?;
            // The host reads the next level's size back to size the next launch.
            let mut count = [0u8; 4];
            dev.copy_to_host(self.counters.raw(), &mut count)?;
            n_in = u32::from_ne_bytes(count).min(self.reference.widest as u32);
            std::mem::swap(&mut src, &mut dst);
        }
        Ok(())
    }
}

impl Case for ForestCase<'_> {
    fn launch(&mut self) -> device::Result<()> {
        let dev = self.gpu.device.as_ref();
        dev.fill_bytes(self.level_counts.raw(), 0)?;
        dev.fill_bytes(self.checksum.raw(), 0)?;
        dev.fill_bytes(self.status.raw(), 0)?;
        if self.variant == Variant::NonPt {
            return self.sequence_nonpt();
        }
        dev.copy_on_device(self.b.raw(), self.a.raw(), self.a.bytes())?;
        if let Some(pristine) = &self.pristine_counters {
            dev.copy_on_device(pristine.raw(), self.counters.raw(), pristine.bytes())?;
        }
        let args = [
            self.a.arg(),
            Arg::U32(self.cap),
            self.counters.arg(),
            self.level_counts.arg(),
            self.checksum.arg(),
            Arg::U32(u32::from(self.tilted)),
            Arg::U32(self.levels),
            Arg::U32(self.inputs),
            Arg::U32(self.spin_limit),
            self.status.arg(),
        ];
        dev.launch(&self.kernel, &LaunchConfig::linear(self.groups, GROUP), &args)
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        check_status(self.gpu, &self.status, "forest traversal")?;
        let dev = self.gpu.device.as_ref();
        let mut got: Vec<u32> = dev.download(&self.level_counts)?;
        got.extend(dev.download(&self.checksum)?);
        let mut want = self.reference.levels.clone();
        want.push(self.reference.checksum);
        // Node counts and the wrapping sum of the results' bits are integers: exact.
        Ok(verify::compare(&got, &want, 1.0, 0.0))
    }

    fn work(&self) -> f64 {
        self.reference.nodes as f64
    }

    fn clock(&self) -> Clock {
        self.clock
    }
}
