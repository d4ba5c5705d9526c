//! What a merge of a sharded folder made, recorded in `run.json` after its last file is in place, and whether the
//! folder's merged files are that merge of its shards as they are now.
//!
//! A merge writes several files (one CSV per experiment, plots, the roofline, `summary.md`); a merge stopped at any
//! instant (`scancel`, a node failure) may have renamed some of them into place and not others. Readers read the
//! merged files, so a sharded folder is judged by them: its merge is *current* when run.json records a merge whose
//! outputs are the files there (each merged CSV's SHA-256) and whose inputs are the shards as they are now (their
//! whole rows). Anything else (no merge recorded, a merged CSV missing or not the one recorded, shards that gained
//! rows since) is an incomplete merge, which `suite status` and every reader say as `merge incomplete: run suite
//! merge DIR`, and which the next `suite merge` completes: it makes every file again from the shards.

use std::path::Path;

use sha2::{Digest, Sha256};

use super::merge::{shard_files, shard_rows};
use super::run_json::RunJson;
pub use super::run_json::{MergeRecord, MergedExperiment};
use super::Result;

/// Whether a sharded folder's merged files are the merge of its shards as they are now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeState {
    /// They are: readers read every row the shards hold.
    Current,
    /// They are not; why, e.g. `matmul.csv holds 17500 rows of an earlier merge; its shards hold 20000 now`.
    Incomplete(String),
}

/// The SHA-256 (hex) of the file at `path`.
pub fn file_sha256(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| super::io_error("cannot read", path, e))?;
    Ok(Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect())
}

/// The merge state of the sharded folder `dir` whose run.json is `run`.
pub fn state(dir: &Path, run: Option<&RunJson>) -> Result<MergeState> {
    let groups = shard_files(dir)?;
    if groups.is_empty() {
        return Ok(MergeState::Current);
    }
    let Some(record) = run.and_then(|r| r.merges.last()) else {
        return Ok(MergeState::Incomplete("no merge of its shards is recorded".into()));
    };
    for (name, shards) in &groups {
        let Some(merged) = record.experiments.iter().find(|e| e.name == *name) else {
            return Ok(MergeState::Incomplete(format!("the last merge did not merge {name}")));
        };
        let mut now = Vec::new();
        for shard in shards {
            let file = shard.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            now.push((file, shard_rows(&shard.path)?));
        }
        if now != merged.inputs {
            let rows = |v: &[(String, usize)]| v.iter().map(|(_, r)| r).sum::<usize>();
            return Ok(MergeState::Incomplete(format!(
                "{} holds {} rows of an earlier merge; its shards hold {} rows now",
                merged.output,
                merged.rows,
                rows(&now)
            )));
        }
        let out = dir.join(&merged.output);
        if !out.exists() {
            return Ok(MergeState::Incomplete(format!("{} is missing", merged.output)));
        }
        if file_sha256(&out)? != merged.sha256 {
            return Ok(MergeState::Incomplete(format!("{} is not the file the last merge wrote", merged.output)));
        }
    }
    Ok(MergeState::Current)
}
