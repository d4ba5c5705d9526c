//! Use case 1, CPU-GPU synchronisation (also the queue-granularity study), and the bare round trip.

use crate::device::{self, Arg, Buffer, Kernel, LaunchConfig};
use crate::experiments::{Case, Clock, Error};
use crate::gpu::Gpu;
use crate::verify::{self, Verification};

use super::super::reference::{par_map, unit, work_ci, work_cmi};
use super::super::spec::{Flavour, Part, Queue, Variant};
use super::super::{CMI_TABLE, GROUP, SOURCE};
use super::{maximal_launch, tiles, u32_of};

/// Use case 1: producer, then consumer (non-PT: after a readback of the count; PT: at once, at maximal launch).
pub(super) struct SyncCase<'g> {
    gpu: &'g Gpu,
    variant: Variant,
    clock: Clock,
    produce: Kernel,
    consume: Kernel,
    items: Buffer<f32>,
    out: Buffer<f32>,
    table: Buffer<f32>,
    mask: u32,
    /// [count, done] of the producer.
    count_done: Buffer<u32>,
    terminal: Buffer<u32>,
    head: Buffer<u32>,
    n: u32,
    fmas: i64,
    flavour: Flavour,
    pt_groups: u32,
    queue: (u32, u32),
}

impl<'g> SyncCase<'g> {
    pub(super) fn new(
        gpu: &'g Gpu,
        variant: Variant,
        queue: Queue,
        flavour: Flavour,
        items: u64,
        fmas: i64,
        clock: Clock,
    ) -> Result<Self, Error> {
        let dev = gpu.device.as_ref();
        let n = u32_of(items, "items")?;
        let produce = gpu.kernel(SOURCE, "pt_produce")?;
        let v = if variant == Variant::NonPt { "nonpt" } else { "pt" };
        let consume = gpu.kernel(SOURCE, &format!("pt_sync_{v}_{}_f{fmas}", flavour.name()))?;
        let pt_kernel = gpu.kernel(SOURCE, &format!("pt_sync_pt_{}_f{fmas}", flavour.name()))?;
        let (pt_groups, _) = maximal_launch(gpu, &pt_kernel)?;
        let (table, mask) = if flavour == Flavour::Cmi {
            let table = dev.alloc_buffer::<f32>(CMI_TABLE)?;
            let fill = gpu.kernel(SOURCE, "pt_fill_table")?;
            let m = CMI_TABLE as u32;
            dev.launch(&fill, &LaunchConfig::linear(tiles(CMI_TABLE as u64)?, GROUP), &[table.arg(), Arg::U32(m)])?;
            (table, m - 1)
        } else {
            (dev.alloc_buffer::<f32>(1)?, 0)
        };
        let items_buf = dev.alloc_buffer::<f32>(n as usize)?;
        let out = dev.alloc_buffer::<f32>(n as usize)?;
        // All-ones bytes are NaN: an item nobody consumed fails verification.
        dev.fill_bytes(out.raw(), 0xff)?;
        let count_done = dev.alloc_buffer::<u32>(2)?;
        dev.fill_bytes(count_done.raw(), 0)?;
        let terminal = dev.alloc_buffer::<u32>(1)?;
        let head = dev.alloc_buffer::<u32>(1)?;
        Ok(SyncCase {
            gpu,
            variant,
            clock,
            produce,
            consume,
            items: items_buf,
            out,
            table,
            mask,
            count_done,
            terminal,
            head,
            n,
            fmas,
            flavour,
            pt_groups,
            queue: queue.code(),
        })
    }

    fn count_arg(&self) -> Arg {
        Arg::Ptr(self.count_done.raw().device_ptr())
    }

    fn done_arg(&self) -> Arg {
        Arg::Ptr(self.count_done.raw().device_ptr() + 4)
    }
}

impl Case for SyncCase<'_> {
    fn launch(&mut self) -> device::Result<()> {
        let dev = self.gpu.device.as_ref();
        let produce_args = [self.items.arg(), Arg::U32(self.n), self.count_arg(), self.done_arg(), self.terminal.arg()];
        let consume_args =
            [self.items.arg(), self.terminal.arg(), self.out.arg(), self.table.arg(), Arg::U32(self.mask)];
        if self.variant == Variant::NonPt {
            dev.launch(&self.produce, &LaunchConfig::linear(self.n.div_ceil(GROUP), GROUP), &produce_args)?;
            // The host learns how much was produced (blocking readback), then sizes the consumer to it.
            let mut count = [0u8; 4];
            dev.copy_to_host(self.terminal.raw(), &mut count)?;
            let count = u32::from_ne_bytes(count);
            if count > 0 {
                dev.launch(&self.consume, &LaunchConfig::linear(count.div_ceil(GROUP), GROUP), &consume_args)?;
            }
            return Ok(());
        }
        dev.fill_bytes(self.head.raw(), 0)?;
        dev.launch(&self.produce, &LaunchConfig::linear(self.n.div_ceil(GROUP), GROUP), &produce_args)?;
        let mut args = consume_args.to_vec();
        args.extend([self.head.arg(), Arg::U32(self.queue.0), Arg::U32(self.queue.1)]);
        dev.launch(&self.consume, &LaunchConfig::linear(self.pt_groups, GROUP), &args)
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        let got = self.gpu.device.download(&self.out)?;
        let (fmas, mask, flavour) = (self.fmas, self.mask, self.flavour);
        let want = par_map(self.n as usize, |i| {
            let x = unit(i as u32);
            match flavour {
                Flavour::Ci => work_ci(x, fmas),
                Flavour::Cmi => work_cmi(x, fmas, i as u32, mask),
            }
        });
        // The same chain of fused multiply-adds on the same FP32 values, in the same order: bit-exact.
        Ok(verify::compare(&got, &want, 1.0, 0.0))
    }

    fn work(&self) -> f64 {
        f64::from(self.n)
    }

    fn clock(&self) -> Clock {
        self.clock
    }
}

/// The bare round trip and its parts, with `pt_empty`.
pub(super) struct RoundTrip<'g> {
    gpu: &'g Gpu,
    part: Part,
    empty: Kernel,
    word: Buffer<u32>,
}

impl<'g> RoundTrip<'g> {
    pub(super) fn new(gpu: &'g Gpu, part: Part) -> Result<Self, Error> {
        let word = gpu.device.upload(&[7u32])?;
        Ok(RoundTrip { gpu, part, empty: gpu.kernel(SOURCE, "pt_empty")?, word })
    }
}

impl Case for RoundTrip<'_> {
    fn launch(&mut self) -> device::Result<()> {
        let dev = self.gpu.device.as_ref();
        let one = LaunchConfig::linear(1, 1);
        let mut word = [0u8; 4];
        match self.part {
            Part::Launch => dev.launch(&self.empty, &one, &[]),
            Part::Readback => dev.copy_to_host(self.word.raw(), &mut word),
            Part::Full => {
                dev.launch(&self.empty, &one, &[])?;
                dev.copy_to_host(self.word.raw(), &mut word)?;
                dev.launch(&self.empty, &one, &[])
            }
        }
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        // Nothing is computed; the readback must still bring the word back.
        let got = self.gpu.device.download(&self.word)?;
        Ok(verify::compare(&got, &[7u32], 1.0, 0.0))
    }

    fn work(&self) -> f64 {
        1.0
    }

    fn clock(&self) -> Clock {
        Clock::Host
    }
}
