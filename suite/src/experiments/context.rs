//! Run state: what one run of a sweep knows and keeps besides the sweep's options. The runner makes a
//! [`RunContext`] for each run (and one for each plan) and passes it to [`super::Experiment::points`] and
//! [`super::Experiment::prepare`]. A sweep holds only its options, so two sweeps with the same options are the same
//! sweep, and nothing that only reads results ever needs one.

use std::any::Any;
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::device::Props;
use crate::gpu::Gpu;

/// The device a sweep runs on, its results folder, and what its consecutive points share.
pub struct RunContext<'g> {
    /// The device, with its kernels.
    pub gpu: &'g Gpu,
    /// The results folder, for side files beside the CSV (occupancy's timelines, fusion's compile costs); `None`
    /// when the sweep is only planned and nothing is written.
    pub results_dir: Option<PathBuf>,
    /// What consecutive points share.
    shared: Shared,
    /// Where the run's host time goes, phase by phase ([`crate::phases`]): the runner and the experiments' cases
    /// mark their parts on it.
    pub phases: crate::phases::PhaseClock,
}

impl<'g> RunContext<'g> {
    /// The context of a run on `gpu` writing into `results_dir` (`None`: a plan, which writes nothing).
    pub fn new(gpu: &'g Gpu, results_dir: Option<&Path>) -> RunContext<'g> {
        RunContext {
            gpu,
            results_dir: results_dir.map(Path::to_path_buf),
            shared: Shared::default(),
            phases: Default::default(),
        }
    }

    /// The device's properties.
    pub fn props(&self) -> &'g Props {
        self.gpu.device.props()
    }

    /// What consecutive points share ([`Shared::get_or_make`]): matmul's matrices per shape, fusion's vectors per
    /// size, occupancy's measured clock rate.
    pub fn shared<T: 'static, E>(
        &self,
        fits: impl Fn(&T) -> bool,
        make: impl FnOnce() -> Result<T, E>,
    ) -> Result<Rc<T>, E> {
        self.shared.get_or_make(fits, make)
    }
}

impl std::fmt::Debug for RunContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunContext")
            .field("device", &self.props().name)
            .field("results_dir", &self.results_dir)
            .field("shared", &self.shared)
            .finish()
    }
}

/// One value that consecutive points of a sweep share, of whatever type the experiment keeps there (the runner
/// prepares points in order, so a value made for one point serves the next while it fits): made by the first point
/// that needs it and dropped when a point needs another, so one value is alive at a time.
#[derive(Default)]
pub struct Shared(RefCell<Option<Rc<dyn Any>>>);

impl Shared {
    /// The value kept if it is a `T` that `fits` accepts; otherwise the old value is freed first (a point's buffers
    /// before the next one's are allocated) and `make` makes the new one, which is kept unless it failed.
    pub fn get_or_make<T: 'static, E>(
        &self,
        fits: impl Fn(&T) -> bool,
        make: impl FnOnce() -> Result<T, E>,
    ) -> Result<Rc<T>, E> {
        let kept = self.0.borrow().clone().and_then(|value| value.downcast::<T>().ok()).filter(|value| fits(value));
        if let Some(value) = kept {
            return Ok(value);
        }
        *self.0.borrow_mut() = None;
        let value = Rc::new(make()?);
        *self.0.borrow_mut() = Some(value.clone());
        Ok(value)
    }
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.borrow().is_some() { "Shared(filled)" } else { "Shared(empty)" })
    }
}
