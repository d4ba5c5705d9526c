//! GPU experiment suite: measure how GPU code behaves on AMD (HIP, wave64) and NVIDIA (CUDA, warp32).
//!
//! Layers, bottom up: [`device`] (one interface, one module per platform; the only place with `unsafe`),
//! [`code_objects`] (compile the HIP C++ sources of `kernels/`, cache, inspect and load their code objects),
//! [`occupancy_calculator`] (theoretical occupancy from a kernel's resources), [`catalogue`] (the
//! GPUs the suite knows: each part's architecture profile, peaks and planning data), [`gpu`] (a device with its
//! kernels), [`planning`] (a device that stands for a part that is not present), [`report`] (CSV rows, `run.json`,
//! plots), [`counters`] (the vendor profilers' command lines and output: hardware counters per point, beside the
//! rows), [`patterns`] (composable patterns that render HIP source), [`static_inspection`] (every kernel's
//! resources across architectures, no GPU), [`experiments`] (sweeps and the shared runner) and [`app`].
#![deny(unsafe_code)]

pub mod app;
pub mod catalogue;
pub mod cli;
pub mod code_objects;
pub mod counters;
pub mod device;
pub mod experiments;
pub mod gpu;
pub mod host;
pub mod measure;
pub mod occupancy_calculator;
pub mod options;
pub mod patterns;
pub mod peaks;
pub mod phases;
pub mod planning;
pub mod precision;
pub mod random;
pub mod report;
pub mod safe_fs;
pub mod static_inspection;
pub mod test_deps;
pub mod verify;
