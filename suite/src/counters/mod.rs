//! Hardware counters beside the model: what the vendor profiler read while each point's kernel ran once more, in a
//! pass of its own after the timed run (`suite run --counters`), never mixed with the timed rows.
//!
//! The pass (`app/counter_pass.rs`) runs the suite itself once more as a child process under the profiler users
//! already have: Nsight Compute (`ncu`) on NVIDIA, `rocprofv3` on AMD. The child prepares every point, launches its
//! case once unprofiled and verifies it (as the runner does before timing), then launches a tiny marker kernel
//! whose grid size encodes the point's index ([`markers`]) and the case once more. Every kernel the profiler reports
//! between a point's marker and the next marker is that point's, whatever it launches (vendor BLAS calls launch
//! kernels of their own). This module is the vendor-neutral part and the parsers, with no GPU: where the profilers
//! live ([`locate`]), their command lines and output formats ([`ncu`], [`rocprof`]), the metric table with its
//! formulas and sources ([`metrics`]), the markers, one point's figures from its kernels ([`per_point`]) and the
//! `counters.csv` it writes ([`table`]).

pub mod locate;
pub mod markers;
pub mod metrics;
pub mod ncu;
pub mod per_point;
pub mod rocprof;
pub mod table;

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::device::Platform;

pub use table::{CounterRow, CSV};

/// Errors of the counter pass's parts. None of them touches the timed rows: the pass reports them and the run
/// goes on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The platform's profiler is not installed where the suite looks.
    #[error(
        "no {profiler} found (tried: {tried}): the run goes on without counters, and its timed rows are \
         untouched. {install}"
    )]
    NotFound {
        /// The profiler, e.g. `Nsight Compute (ncu)`.
        profiler: &'static str,
        /// Every place looked at, in order.
        tried: String,
        /// What to do.
        install: &'static str,
    },
    /// The profiler's output does not have the layout the parser knows.
    #[error("{what}: {problem}")]
    Parse {
        /// The file or part read.
        what: String,
        /// What is wrong, with what to do where there is something.
        problem: String,
    },
    /// The profiled markers do not fit the plan the child was given.
    #[error("the profile's markers do not match the plan: {0}")]
    Markers(String),
    /// A file could not be read or written.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A results file could not be read or written.
    #[error(transparent)]
    Report(#[from] crate::report::Error),
}

/// The vendor profiler of a platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profiler {
    /// NVIDIA Nsight Compute's command line, `ncu`.
    Ncu,
    /// AMD's `rocprofv3` (rocprofiler-sdk; ROCm 6.2 and later, 6.3 on LUMI).
    Rocprofv3,
}

impl Profiler {
    /// The profiler users of `platform` already have.
    pub fn of(platform: Platform) -> Profiler {
        match platform {
            Platform::Nvidia => Profiler::Ncu,
            Platform::Amd => Profiler::Rocprofv3,
        }
    }

    /// The executable's file name.
    pub fn command(self) -> &'static str {
        match self {
            Profiler::Ncu => "ncu",
            Profiler::Rocprofv3 => "rocprofv3",
        }
    }

    /// Its name for people.
    pub fn label(self) -> &'static str {
        match self {
            Profiler::Ncu => "Nsight Compute (ncu)",
            Profiler::Rocprofv3 => "rocprofv3",
        }
    }

    /// The environment variable that names the executable, ahead of every place searched.
    pub fn override_variable(self) -> &'static str {
        match self {
            Profiler::Ncu => "SUITE_NCU",
            Profiler::Rocprofv3 => "SUITE_ROCPROFV3",
        }
    }

    /// Whether the child closes each point with a second marker. `ncu` profiles only between the child's
    /// `cuProfilerStart` and `cuProfilerStop` (`--profile-from-start off`), so nothing the child launches between
    /// points (the next point's preparation and verification) is profiled, and the next start marker ends a point.
    /// `rocprofv3` profiles every dispatch, so each point ends with a marker of its own.
    pub fn end_markers(self) -> bool {
        match self {
            Profiler::Ncu => false,
            Profiler::Rocprofv3 => true,
        }
    }

    /// The cache state of the profiled launch, for the `cache` column: `ncu --cache-control all` flushes the caches
    /// before each profiled kernel (and each replay pass), so its DRAM bytes are a cold launch's; `rocprofv3`
    /// flushes nothing, so the profiled launch finds the caches as the verified launch before it left them.
    pub fn cache_state(self) -> &'static str {
        match self {
            Profiler::Ncu => "flushed",
            Profiler::Rocprofv3 => "warm",
        }
    }
}

impl std::fmt::Display for Profiler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// What a profiled kernel asked of one CU/SM, as the profiler reports it: the calculator's inputs
/// ([`crate::occupancy_calculator::Resources`]), where the profiler gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KernelResources {
    /// Items per group.
    pub group_size: u32,
    /// 32-bit registers per item (NVIDIA registers per thread; AMD VGPRs, architectural plus accumulation).
    pub registers_per_item: Option<u32>,
    /// SGPRs per wave (AMD).
    pub sgprs: Option<u32>,
    /// LDS (shared memory) per group, static plus dynamic, bytes.
    pub lds_bytes_per_group: Option<u32>,
}

/// One profiled kernel launch, vendor-neutral.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct KernelRecord {
    /// Its place in the profile's launch order (ncu's `ID`, rocprofv3's `Dispatch_Id`).
    pub seq: u64,
    /// The kernel's name as the profiler prints it.
    pub name: String,
    /// Groups in the grid (ncu: the product of `Grid Size`; rocprofv3: `Grid_Size`, which its samples give in
    /// work-items: markers launch groups of one item, so for them both read the same).
    pub grid: u64,
    /// Items per group.
    pub group_items: u64,
    /// Time on the GPU, ns, where the profiler gives it.
    pub duration_ns: Option<f64>,
    /// Metric or counter name → value in base units (bytes, ns, %, instructions, cycles).
    pub values: BTreeMap<String, f64>,
    /// What it asked of a CU/SM, where the profiler says.
    pub resources: KernelResources,
}

impl KernelRecord {
    /// The value of metric or counter `name`, when the profiler reported one.
    pub fn value(&self, name: &str) -> Option<f64> {
        self.values.get(name).copied()
    }
}

/// A number as profilers print it: thousands separators (`"12,589,056"`) removed; `None` for an empty or
/// non-numeric field (`n/a`).
pub(crate) fn number(text: &str) -> Option<f64> {
    let cleaned: String = text.trim().chars().filter(|c| *c != ',').collect();
    if cleaned.is_empty() {
        return None;
    }
    cleaned.parse::<f64>().ok().filter(|v| v.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_lose_their_thousands_separators() {
        for (text, want) in [
            ("12,589,056", Some(12_589_056.0)),
            ("4,096", Some(4096.0)),
            ("16384.000000", Some(16384.0)),
            ("93.75", Some(93.75)),
            (" 7 ", Some(7.0)),
            ("1,234.5", Some(1234.5)),
            ("", None),
            ("n/a", None),
            ("inf", None),
        ] {
            assert_eq!(number(text), want, "{text:?}");
        }
    }

    #[test]
    fn each_platform_has_its_profiler() {
        assert_eq!(Profiler::of(Platform::Nvidia), Profiler::Ncu);
        assert_eq!(Profiler::of(Platform::Amd), Profiler::Rocprofv3);
        assert!(Profiler::Rocprofv3.end_markers() && !Profiler::Ncu.end_markers());
        assert_eq!(Profiler::Ncu.command(), "ncu");
        assert_eq!(Profiler::Rocprofv3.override_variable(), "SUITE_ROCPROFV3");
    }
}
