//! GPU experiment suite: measure how GPU code behaves on AMD (HIP, wave64) and NVIDIA (CUDA, warp32).
//!
//! Layers, bottom up: [`device`] (one interface, one module per platform; the only place with `unsafe`),
//! [`kernels`] (compile, cache, inspect and load the HIP C++ sources), the experiments, and [`report`]
//! (CSV rows, `run.json`, plots).
#![deny(unsafe_code)]

pub mod device;
pub mod kernels;
