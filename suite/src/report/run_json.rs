//! `run.json`: the context of a run, so its numbers can be interpreted and compared later.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{Error, Result};
use crate::device::Props;

/// Version of the suite that wrote the results.
pub const SUITE_VERSION: &str = env!("CARGO_PKG_VERSION");
/// Git commit the binary was built from (`-dirty` when the tree had uncommitted changes).
pub const GIT_COMMIT: &str = env!("SUITE_GIT_COMMIT");

/// Moved to `kernels`, which knows what built each code object; re-exported here for `run.json`'s readers.
pub use crate::kernels::CompilerRecord;

/// One invocation of `suite run` that wrote into the folder (a resumed run has several).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Invocation {
    /// The command line.
    pub command: Vec<String>,
    /// Start time, RFC 3339 (UTC).
    pub date: String,
    /// Host name.
    pub host: String,
    /// Suite version.
    pub suite_version: String,
    /// Git commit of the binary.
    pub git_commit: String,
    /// Slurm job id, when run under Slurm.
    pub slurm_job_id: Option<String>,
    /// Shard `i/n` this process ran, when sharded.
    pub shard: Option<String>,
    /// Experiments and their options as run.
    pub experiments: serde_json::Value,
    /// Code objects used.
    pub compilers: Vec<CompilerRecord>,
    /// Vendor BLAS library loaded, or why none.
    pub blas: String,
}

/// The whole file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunJson {
    /// The device, as the runtime describes it (platform, name, arch, wave size, CUs, clocks, versions).
    pub device: Props,
    /// Every invocation that wrote into this folder, oldest first.
    pub invocations: Vec<Invocation>,
}

impl Invocation {
    /// An invocation record for this process, now.
    pub fn now(experiments: serde_json::Value, shard: Option<String>) -> Invocation {
        Invocation {
            command: std::env::args().collect(),
            date: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            host: gethostname::gethostname().to_string_lossy().into_owned(),
            suite_version: SUITE_VERSION.to_string(),
            git_commit: GIT_COMMIT.to_string(),
            slurm_job_id: std::env::var("SLURM_JOB_ID").ok(),
            shard,
            experiments,
            compilers: Vec::new(),
            blas: String::new(),
        }
    }
}

/// Writes `run.json` in `dir`, appending `invocation` to those already there (when resuming into the folder).
/// A folder measured on another device is refused, so one folder never mixes machines.
pub fn record(dir: &Path, device: &Props, invocation: Invocation) -> Result<()> {
    let path = dir.join("run.json");
    let mut run = match std::fs::read_to_string(&path) {
        Ok(text) => {
            serde_json::from_str::<RunJson>(&text).map_err(|source| Error::Json { path: path.clone(), source })?
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => RunJson { device: device.clone(), invocations: vec![] },
        Err(source) => return Err(Error::Io { action: "cannot read", path, source }),
    };
    if run.device.name != device.name || run.device.arch != device.arch || run.device.platform != device.platform {
        return Err(Error::Io {
            action: "refusing to mix devices in",
            path,
            source: std::io::Error::other(format!(
                "it holds results from {} ({}), this is {} ({}): choose another --out",
                run.device.name, run.device.arch, device.name, device.arch
            )),
        });
    }
    run.device = device.clone();
    run.invocations.push(invocation);
    std::fs::create_dir_all(dir).map_err(|source| Error::Io { action: "cannot create", path: dir.into(), source })?;
    let text = serde_json::to_string_pretty(&run).map_err(|source| Error::Json { path: path.clone(), source })?;
    let tmp = dir.join(".run.json.tmp");
    std::fs::write(&tmp, text + "\n").map_err(|source| Error::Io {
        action: "cannot write",
        path: tmp.clone(),
        source,
    })?;
    std::fs::rename(&tmp, &path).map_err(|source| Error::Io { action: "cannot write", path, source })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::occupancy::tests::h100;

    #[test]
    fn invocations_accumulate_and_devices_do_not_mix() {
        let dir = tempfile::tempdir().unwrap();
        record(dir.path(), &h100(), Invocation::now(serde_json::json!({"smoke": {}}), None)).unwrap();
        record(dir.path(), &h100(), Invocation::now(serde_json::json!({"smoke": {}}), Some("1/2".into()))).unwrap();
        let run: RunJson =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("run.json")).unwrap()).unwrap();
        assert_eq!(run.invocations.len(), 2);
        assert_eq!(run.invocations[1].shard.as_deref(), Some("1/2"));
        assert_eq!(run.device.wave_size.0, 32);
        assert!(!run.invocations[0].git_commit.is_empty());
        let mut other = h100();
        other.name = "Another GPU".into();
        let err = record(dir.path(), &other, Invocation::now(serde_json::json!({}), None)).unwrap_err();
        assert!(err.to_string().contains("choose another --out"), "{err}");
    }
}
