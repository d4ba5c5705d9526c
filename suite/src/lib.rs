//! GPU experiment suite: measure how GPU code behaves on AMD (HIP, wave64) and NVIDIA (CUDA, warp32).
//!
//! Layers, bottom up: [`device`] (one interface, one module per platform; the only place with `unsafe`),
//! [`kernels`] (compile, cache, inspect and load the HIP C++ sources), [`gpu`] (a device with its kernels),
//! [`experiments`] (sweeps and the shared runner), and [`report`] (CSV rows, `run.json`, plots).
#![deny(unsafe_code)]

pub mod app;
pub mod cli;
pub mod device;
pub mod experiments;
pub mod fusion;
pub mod gpu;
pub mod host;
pub mod kernels;
pub mod measure;
pub mod occupancy;
pub mod options;
pub mod peaks;
pub mod report;
pub mod test_deps;
pub mod verify;
