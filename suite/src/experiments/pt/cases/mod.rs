//! The cases of the PT sweep, one file per use case or group of them, and what they share: building a point's
//! case, the maximal launch, the checks of a grid, and the kernels' status word.

mod active;
mod forest;
mod global;
mod sync;

use super::spec::{ClockKind, PerCu, SoftBarrier, Spec};
use super::{GROUP, SKIP_NONE, SOURCE, STATUS_OVERFLOW, STATUS_TIMEOUT};
use crate::device::{Buffer, Kernel};
use crate::experiments::{Case, Clock, Error, RunContext};
use crate::gpu::Gpu;
use crate::occupancy_calculator::{self, Resources};

use active::{ChainCase, ReduceCase};
use forest::ForestCase;
pub use global::{BarrierCase, JacobiCase, JacobiInputs};
use sync::{RoundTrip, SyncCase};

/// Refuses a grid that the occupancy query does not say is co-resident: a grid barrier in it would wait for groups
/// that cannot start until the waiting ones finish.
pub fn check_coresident(kernel: &str, groups: u32, maximal: u32) -> Result<(), Error> {
    if groups > maximal {
        return Err(Error::Unsupported(format!(
            "{kernel}: a grid of {groups} groups is more than the {maximal} groups the occupancy query says can be \
             resident at once; its grid barrier would wait forever for groups that cannot start: launch at most the \
             maximal launch"
        )));
    }
    Ok(())
}

/// Refuses an empty grid (0 groups per CU), which no launch accepts.
pub(super) fn check_nonempty(kernel: &str, groups: u32) -> Result<(), Error> {
    if groups == 0 {
        return Err(Error::Unsupported(format!("{kernel}: a grid of 0 groups: ask for at least 1 group per CU")));
    }
    Ok(())
}

/// The maximal launch of `kernel` at groups of [`GROUP`]: CUs × the runtime's resident groups per CU, and the
/// suite's calculator's value (`None` where it cannot tell).
pub fn maximal_launch(gpu: &Gpu, kernel: &Kernel) -> Result<(u32, Option<u32>), Error> {
    let props = gpu.device.props();
    let per_cu = gpu.device.occupancy_groups_per_cu(kernel, GROUP, 0)?;
    if per_cu == 0 {
        return Err(Error::Unsupported(format!("{}: no group of {GROUP} items fits on a CU", kernel.name)));
    }
    let meta = gpu.amd_kernel_meta(SOURCE, &kernel.name).ok().flatten();
    let res = Resources {
        group_size: GROUP,
        registers_per_item: meta.as_ref().map(|m| m.vgpr_count).unwrap_or(kernel.attrs.registers_per_item),
        sgprs: meta.as_ref().map(|m| m.sgpr_count),
        lds_bytes_per_group: meta.as_ref().map(|m| m.lds_bytes).unwrap_or(kernel.attrs.static_lds_bytes),
    };
    let calc =
        occupancy_calculator::theoretical(props, res).ok().map(|o| o.groups_per_cu.saturating_mul(props.cu_count));
    Ok((per_cu.saturating_mul(props.cu_count), calc))
}

/// Builds the case of one point. The Jacobi points of one size and step count share their inputs and reference
/// ([`JacobiInputs`]), kept in the run's shared slot while consecutive points use them.
pub fn prepare_spec<'g>(ctx: &RunContext<'g>, spec: Spec, barrier: SoftBarrier) -> Result<Box<dyn Case + 'g>, Error> {
    let gpu = ctx.gpu;
    let spin_limit = barrier.spin_limit;
    let cus = gpu.device.props().cu_count;
    let grid = |per_cu: PerCu| match per_cu {
        PerCu::Max => None,
        PerCu::Groups(k) => Some(k.saturating_mul(cus)),
    };
    let clock = match spec.clock() {
        ClockKind::Host => Clock::Host,
        ClockKind::Device => Clock::Device,
    };
    Ok(match spec {
        Spec::Sync { variant, queue, flavour, items, fmas, .. } => {
            Box::new(SyncCase::new(gpu, variant, queue, flavour, items, fmas, clock)?)
        }
        Spec::RoundTrip { part } => Box::new(RoundTrip::new(gpu, part)?),
        Spec::Forest { variant, tilted, levels, inputs, fmas, .. } => {
            Box::new(ForestCase::new(gpu, variant, tilted, levels, inputs, fmas, spin_limit, clock)?)
        }
        Spec::Reduce { variant, n, .. } => Box::new(ReduceCase::new(gpu, variant, n, clock)?),
        Spec::Chain { variant, n, .. } => Box::new(ChainCase::new(gpu, variant, n, clock)?),
        Spec::Jacobi { variant, n, steps, per_cu, .. } => {
            let inputs =
                ctx.shared(|i: &JacobiInputs| i.fits(n, steps), || JacobiInputs::new(gpu, n, steps, &ctx.phases))?;
            Box::new(JacobiCase::with_inputs(
                gpu,
                variant,
                (n, steps),
                inputs,
                grid(per_cu),
                barrier,
                SKIP_NONE,
                clock,
            )?)
        }
        Spec::Barrier { variant, steps, per_cu } => {
            Box::new(BarrierCase::new(gpu, variant, steps, grid(per_cu), barrier)?)
        }
    })
}

pub(super) fn u32_of(n: u64, what: &str) -> Result<u32, Error> {
    u32::try_from(n).map_err(|_| Error::Unsupported(format!("{what} = {n} exceeds the kernels' 32-bit count")))
}

pub(super) fn tiles(n: u64) -> Result<u32, Error> {
    u32_of(n.div_ceil(u64::from(GROUP)), "groups")
}

/// Random inputs in [0, 1) (non-negative, so a sum's error bound is relative to the sum itself).
pub(super) fn random_unit(n: usize) -> Vec<f32> {
    let mut rng = fastrand::Rng::new();
    (0..n).map(|_| rng.f32()).collect()
}

/// Reads a status word and turns the kernels' flags into an error.
pub(super) fn check_status(gpu: &Gpu, status: &Buffer<u32>, what: &str) -> Result<(), Error> {
    let s = gpu.device.download(status)?[0];
    if s & STATUS_TIMEOUT != 0 {
        return Err(Error::Measurement(format!(
            "{what}: a device wait loop timed out (status {s:#x}): a group never arrived or the queue stalled; the \
             kernel gave up instead of hanging the GPU (raise --spin-limit if the device is merely slow)"
        )));
    }
    if s & STATUS_OVERFLOW != 0 {
        return Err(Error::Measurement(format!("{what}: the work queue overflowed its capacity (status {s:#x})")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grid_larger_than_the_coresident_one_is_refused_with_a_reason() {
        assert!(check_coresident("k", 264, 264).is_ok());
        assert!(check_coresident("k", 1, 264).is_ok());
        let e = check_coresident("pt_jacobi_soft", 265, 264).unwrap_err().to_string();
        assert!(e.contains("265 groups") && e.contains("264 groups") && e.contains("resident at once"), "{e}");
    }

    /// The PT kernels' maximal launch on an MI250X GCD (110 CUs, wave64), computed from the gfx90a code object's
    /// static metadata at groups of 256: the table in docs/pt.md (`cargo test -p suite --lib mi250x -- --nocapture`).
    #[test]
    fn maximal_launch_on_an_mi250x_gcd_is_computed_from_static_metadata() {
        let store = crate::code_objects::KernelStore::new(None);
        let arch = crate::device::Arch::parse("gfx90a").unwrap();
        let source = crate::code_objects::source(SOURCE).unwrap();
        let object = store.code_object(source, &arch).unwrap_or_else(|e| panic!("{e}"));
        let mut seen = 0;
        for k in object.info.amd_kernels.iter().filter(|k| k.name.contains("_pt") || k.name.contains("jacobi_")) {
            let profile = occupancy_calculator::Profile::for_arch(&arch, Some(k.wave_size)).unwrap();
            let res = Resources { group_size: GROUP, ..Resources::from_amd_kernel(k) };
            let occ = profile.occupancy(&res).unwrap();
            let groups = occ.groups_per_cu * 110;
            println!(
                "{:<24} vgpr {:>3} sgpr {:>3} lds {:>5} -> {} groups/CU ({}) -> maximal launch {groups}",
                k.name,
                k.vgpr_count,
                k.sgpr_count,
                k.lds_bytes,
                occ.groups_per_cu,
                occ.limiter.name()
            );
            // 256 items are 4 waves of 64: at most 8 groups on a CU's 32 wave slots, and at least one.
            assert!((110..=8 * 110).contains(&groups), "{}: {groups}", k.name);
            seen += 1;
        }
        assert!(seen >= 14, "only {seen} PT kernels in the gfx90a object");
    }
}
