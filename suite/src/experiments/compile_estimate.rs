//! How long a run's compiles will take, from the kernel cache's state: a code object the store can give without a
//! compile (prebuilt with `--kernels-dir`, or in the cache: [`Gpu::holds`]) costs nothing; a missing one costs the
//! measured cold compile of its source with the platform's compiler ([`CompileFigures`]: each experiment declares
//! its sources' figures, [`super::Experiment::compile_figures`]). The sources are compiled before the first point,
//! in parallel on the host's cores, longest first ([`crate::code_objects::KernelStore::code_objects_for_device`]):
//! they cost the schedule's longest thread ([`parallel_seconds`]). Run-time specialisations (fusion's generated and
//! staged kernels) are compiled the same way when the experiment's first point starts
//! ([`crate::gpu::Gpu::compile_specialised`]); every task compiles all of its experiment's.

use super::Experiment;
use crate::code_objects::{self, DeviceShape};
use crate::device::Platform;
use crate::gpu::Gpu;

/// Seconds one cold compile of a source takes with each platform's compiler (its flags: `-O3`, the device's
/// architecture), measured and cited where a figure is declared.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompileFigures {
    /// With nvcc (a cubin for sm_90).
    pub nvcc_s: f64,
    /// With hipcc (a code object for gfx90a).
    pub hipcc_s: f64,
}

impl CompileFigures {
    /// The figure of `platform`'s compiler.
    pub fn on(&self, platform: Platform) -> f64 {
        match platform {
            Platform::Nvidia => self.nvcc_s,
            Platform::Amd => self.hipcc_s,
        }
    }
}

/// The figure of a source whose experiment declares none: the slowest source measured, so an undeclared one errs
/// long: nvcc 13.5.37 on `kernels/matmul.hip` at commit 7ef0cdd, 126.9 s, and hipcc 5.2 (gfx90a) on
/// `kernels/pt.hip`, 5.6 s, on this repository's two-core build machine (one ptxas or clang process per source is
/// single-threaded, so a node's core count does not shorten one compile; the H100 node's cold quick run at d896d23
/// took 23.7 s for all sources in parallel, where the same matmul.hip took about 20 s on the build machine).
pub const UNDECLARED: CompileFigures = CompileFigures { nvcc_s: 126.9, hipcc_s: 5.6 };

/// The launch-gap kernel's source (`kernels/launch.hip`), which every run compiles: nvcc 0.8 s, hipcc 1.1 s on the
/// build machine (as [`UNDECLARED`]).
const LAUNCH_FIGURES: CompileFigures = CompileFigures { nvcc_s: 0.8, hipcc_s: 1.1 };

/// One code object a run needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Compile {
    /// Its source's name (a specialisation's carries a hash of its text).
    pub name: String,
    /// Seconds its cold compile takes.
    pub seconds: f64,
    /// Whether the store gives it without a compile.
    pub held: bool,
}

/// The code objects a run needs, and which of them it must compile.
#[derive(Debug, Clone, PartialEq)]
pub struct CompilePlan {
    /// The sources compiled before the first point.
    pub sources: Vec<Compile>,
    /// The specialisations compiled at run time.
    pub specialisations: Vec<Compile>,
    /// Threads the sources are compiled on: the host's cores.
    pub threads: usize,
}

impl CompilePlan {
    /// The plan of a run of `experiments` on `gpu`, from the store's state now (call it before anything is loaded:
    /// loading compiles what is missing). Each source once, the launch gap's too.
    pub fn of(gpu: &Gpu, experiments: &[Box<dyn Experiment>]) -> CompilePlan {
        let platform = gpu.device.props().platform;
        let held = |name: &str| code_objects::source(name).is_ok_and(|s| gpu.holds(s, &[]));
        let mut sources = vec![Compile {
            name: code_objects::LAUNCH_SOURCE.to_string(),
            seconds: LAUNCH_FIGURES.on(platform),
            held: held(code_objects::LAUNCH_SOURCE),
        }];
        let mut specialisations: Vec<Compile> = Vec::new();
        let shape = DeviceShape::of(gpu.device.props());
        for exp in experiments {
            let figure = |name: &str| exp.compile_figures(name).unwrap_or(UNDECLARED).on(platform);
            for name in exp.sources() {
                if !sources.iter().any(|s| s.name == *name) {
                    sources.push(Compile { name: name.to_string(), seconds: figure(name), held: held(name) });
                }
            }
            for spec in exp.specialisations(shape) {
                let name = format!("{}[{}]", spec.name, spec.defines.join(" "));
                if !specialisations.iter().any(|s| s.name == name) {
                    let held = gpu.holds(&spec.source(), &spec.defines);
                    specialisations.push(Compile { seconds: figure(&spec.name), name, held });
                }
            }
        }
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        CompilePlan { sources, specialisations, threads }
    }

    /// Seconds of compiles a task pays with the store as it is: the missing sources on [`CompilePlan::threads`],
    /// then, later, the missing specialisations on as many.
    pub fn seconds(&self) -> f64 {
        let missing = |list: &[Compile]| list.iter().filter(|c| !c.held).map(|c| c.seconds).collect::<Vec<f64>>();
        parallel_seconds(&missing(&self.sources), self.threads)
            + parallel_seconds(&missing(&self.specialisations), self.threads)
    }

    /// [`CompilePlan::seconds`] with nothing held: a cold cache.
    pub fn cold_seconds(&self) -> f64 {
        let cold = |list: &[Compile]| list.iter().map(|c| Compile { held: false, ..c.clone() }).collect();
        CompilePlan { sources: cold(&self.sources), specialisations: cold(&self.specialisations), ..self.clone() }
            .seconds()
    }

    /// Code objects missing and needed, in words: `3 of 7 sources and 24 of 24 run-time specialisations`.
    pub fn missing_text(&self) -> String {
        let count = |list: &[Compile]| list.iter().filter(|c| !c.held).count();
        format!(
            "{} of {} sources and {} of {} run-time specialisations",
            count(&self.sources),
            self.sources.len(),
            count(&self.specialisations),
            self.specialisations.len()
        )
    }
}

/// Seconds `jobs` take on `threads` threads, each taking the longest job left when it is free (as the store's
/// compiles do): the busiest thread's sum.
pub fn parallel_seconds(jobs: &[f64], threads: usize) -> f64 {
    let mut jobs = jobs.to_vec();
    jobs.sort_by(|a, b| b.total_cmp(a));
    let mut busy = vec![0.0f64; threads.max(1)];
    for job in jobs {
        let free = busy.iter_mut().min_by(|a, b| a.total_cmp(b)).expect("at least one thread");
        *free += job;
    }
    busy.into_iter().fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compile(name: &str, seconds: f64, held: bool) -> Compile {
        Compile { name: name.into(), seconds, held }
    }

    fn plan(held: bool) -> CompilePlan {
        CompilePlan {
            sources: vec![compile("a", 20.0, held), compile("b", 8.0, held), compile("c", 1.0, held)],
            specialisations: (0..4).map(|i| compile(&format!("s{i}"), 0.5, held)).collect(),
            threads: 16,
        }
    }

    #[test]
    fn a_cache_holding_every_object_costs_no_compile() {
        let warm = plan(true);
        assert_eq!(warm.seconds(), 0.0);
        assert_eq!(warm.missing_text(), "0 of 3 sources and 0 of 4 run-time specialisations");
        // Cold, the sources run at once (the longest is the cost), then the specialisations at once.
        assert_eq!(warm.cold_seconds(), 20.0 + 0.5);
        // On one core, one after the other.
        assert_eq!(CompilePlan { threads: 1, ..warm }.cold_seconds(), 29.0 + 4.0 * 0.5);
    }

    #[test]
    fn each_missing_object_adds_its_own_cost() {
        let mut p = plan(true);
        p.sources[1].held = false;
        assert_eq!(p.seconds(), 8.0);
        p.specialisations[3].held = false;
        assert_eq!(p.seconds(), 8.5);
        assert_eq!(p.missing_text(), "1 of 3 sources and 1 of 4 run-time specialisations");
        // The longest missing source is the cost while threads are free.
        p.sources[0].held = false;
        assert_eq!(p.seconds(), 20.5);
        // The cold figure does not depend on what is held.
        assert_eq!(p.cold_seconds(), plan(false).seconds());
    }

    #[test]
    fn sources_share_the_threads_longest_first() {
        assert_eq!(parallel_seconds(&[20.0, 8.0, 1.0], 16), 20.0);
        assert_eq!(parallel_seconds(&[20.0, 8.0, 1.0], 1), 29.0);
        // Two threads: 20 on one, 8 + 1 on the other.
        assert_eq!(parallel_seconds(&[1.0, 20.0, 8.0], 2), 20.0);
        assert_eq!(parallel_seconds(&[5.0, 5.0, 5.0, 5.0], 2), 10.0);
        assert_eq!(parallel_seconds(&[], 4), 0.0);
    }
}
