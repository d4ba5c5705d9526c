//! Placeholder until the platform module lands (same series of commits).
#![allow(unsafe_code)]
use super::{Device, Error, Platform, Result, Survey};

/// Surveys the platform.
pub fn survey() -> Survey {
    Survey { platform: Platform::Amd, runtime: Err(missing()), devices: Err(missing()), blas: Err(missing()) }
}

/// Opens a device.
pub fn open(_ordinal: u32) -> Result<Box<dyn Device>> {
    Err(missing())
}

fn missing() -> Error {
    Error::RuntimeNotFound { runtime: Platform::Amd.runtime(), hint: "platform module not built yet", tried: vec![] }
}
