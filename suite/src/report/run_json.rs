//! `run.json`: the context of a run, so its numbers can be interpreted and compared later.
//!
//! Several processes may write into one folder at once (`srun ... suite run X --shard $SLURM_PROCID/8`), so every
//! change to `run.json` is a read-modify-write under an exclusive lock on `.run.json.lock` in the same folder, and the
//! new text goes to a temporary file of its own that is renamed into place: a reader never sees half a file and no
//! writer loses another's invocation.
//!
//! Anyone may read it ([`read`]); a process changes it only through its results folder's owner
//! ([`super::folder::ResultsFolder`]), one [`Change`] per update.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::lock::{Wait, WriterLock};
use super::{Error, FieldDifference, Result};
use crate::device::Props;
use crate::phases::PhaseRecord;

pub use super::fingerprint::{git_describe, git_dirty, Fingerprint, GIT_COMMIT, SUITE_VERSION};
/// Moved to `kernels`, which knows what built each code object; re-exported here for `run.json`'s readers.
pub use crate::code_objects::CompilerRecord;

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
    /// Whether the binary was built from a tree with uncommitted changes to tracked files.
    #[serde(default)]
    pub git_dirty: bool,
    /// Slurm job id, when run under Slurm.
    pub slurm_job_id: Option<String>,
    /// Shard `i/n` this process ran, when sharded.
    pub shard: Option<String>,
    /// The experiment this invocation ran (empty in files from before it was recorded).
    #[serde(default)]
    pub experiment: String,
    /// What makes its rows comparable (absent in files from before it was recorded).
    #[serde(default)]
    pub fingerprint: Option<Fingerprint>,
    /// Experiments and their options as run.
    pub experiments: serde_json::Value,
    /// Code objects used.
    pub compilers: Vec<CompilerRecord>,
    /// Vendor BLAS library loaded, or why none.
    pub blas: String,
    /// How rows were timed and the GPU's gap between back-to-back kernels, measured at the start of the run.
    #[serde(default)]
    pub timing: Option<TimingRecord>,
    /// Where the process ran: CPU affinity, GPU visibility variables, Slurm partition and node, host memory
    /// (absent in files from before it was recorded).
    #[serde(default)]
    pub placement: crate::host::Placement,
    /// Where the GPU's clocks, power and temperature were read from, the device's limits, and a reading at the
    /// start and at the end of the invocation (absent in files from before it was recorded).
    #[serde(default)]
    pub telemetry: Option<TelemetryRecord>,
    /// Where the invocation's host time went, phase by phase, written when it ends ([`crate::phases`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phases: Option<crate::phases::PhaseRecord>,
}

/// What an invocation knew of the GPU's clocks and power: the CSV rows hold each point's medians; this says where
/// they came from, or once why there are none, and what the GPU did before the first point and after the last.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TelemetryRecord {
    /// Where readings came from, e.g. `NVML 13.580.82` or `AMD SMI 24.7.1.0`; `not available: <why>` where the
    /// vendor library is missing or refuses, `off: --no-telemetry` when sampling was turned off.
    pub source: String,
    /// The sampling period during a point's timed repetitions, ms (absent when nothing was sampled).
    pub period_ms: Option<f64>,
    /// The device's maximum clocks and power limit, as the library reports them.
    pub limits: Option<crate::device::telemetry::Limits>,
    /// A reading before the first point (the GPU is usually idle then).
    pub start: Option<Reading>,
    /// A reading after the last point; absent until the invocation ends (or when it stopped with an error).
    pub end: Option<Reading>,
}

/// One reading of the GPU at a moment of the run ([`crate::device::telemetry::Sample`] with its date).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reading {
    /// When, RFC 3339 (UTC).
    pub date: String,
    /// Shader clock, MHz (NVIDIA SM, AMD GFX).
    pub sm_clock_mhz: Option<u32>,
    /// Memory clock, MHz.
    pub mem_clock_mhz: Option<u32>,
    /// Power, W (of what [`crate::device::telemetry::Limits::power_scope`] says).
    pub power_w: Option<f64>,
    /// Temperature, °C.
    pub temperature_c: Option<f64>,
    /// Why clocks were held down at the time, e.g. `idle` or `power_cap+thermal`; `none`; absent where the
    /// device does not say.
    pub reasons: Option<String>,
    /// Why the reading failed, when it did (the other fields are then absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Reading {
    /// `sample` (or why it failed), dated now.
    pub fn now(sample: std::result::Result<crate::device::telemetry::Sample, String>) -> Reading {
        let date = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
        match sample {
            Ok(s) => Reading {
                date,
                sm_clock_mhz: s.sm_clock_mhz,
                mem_clock_mhz: s.mem_clock_mhz,
                power_w: s.power_w,
                temperature_c: s.temperature_c,
                reasons: s.reasons.map(|r| r.to_string()),
                error: None,
            },
            Err(why) => Reading {
                date,
                sm_clock_mhz: None,
                mem_clock_mhz: None,
                power_w: None,
                temperature_c: None,
                reasons: None,
                error: Some(why),
            },
        }
    }
}

/// The whole file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunJson {
    /// The device, as the runtime describes it (platform, name, arch, wave size, CUs, clocks, versions).
    pub device: Props,
    /// Every invocation that wrote into this folder, oldest first.
    pub invocations: Vec<Invocation>,
    /// What each process that wrote into the folder planned to measure, oldest first (absent in folders from before
    /// plans were recorded): every reader compares the rows with it.
    #[serde(default)]
    pub plans: Vec<Plan>,
    /// Every merge of the folder's shards (`suite merge`), oldest first, each recorded after its last file was
    /// renamed into place: the latest says what the merged files must be ([`super::merge_record`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merges: Vec<MergeRecord>,
}

/// One merge, as `run.json` records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergeRecord {
    /// When it ended, RFC 3339 (UTC).
    pub date: String,
    /// Host name.
    pub host: String,
    /// Whether it was a `--partial` merge of an incomplete run.
    pub partial: bool,
    /// Each experiment merged.
    pub experiments: Vec<MergedExperiment>,
}

/// One experiment of a [`MergeRecord`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergedExperiment {
    /// The experiment.
    pub name: String,
    /// The shard files merged, by name, with their whole rows then.
    pub inputs: Vec<(String, usize)>,
    /// The merged CSV, by name.
    pub output: String,
    /// Its rows.
    pub rows: usize,
    /// The SHA-256 (hex) of its bytes.
    pub sha256: String,
}

/// What one process (`suite run`, one shard of a sharded run) planned before it measured anything: the points of
/// every experiment it was about to run, so a run stopped before its end (a time limit, a killed task) is known to
/// be incomplete, even for experiments it never reached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Start time, RFC 3339 (UTC).
    pub date: String,
    /// Host name.
    pub host: String,
    /// The command line.
    pub command: Vec<String>,
    /// The shard `i/n` this process ran, when sharded.
    pub shard: Option<String>,
    /// The Slurm job it ran in, with the geometry that continues it.
    #[serde(default)]
    pub slurm: Option<SlurmJob>,
    /// The command that continues this run where it stopped, as its job script computed it (`SUITE_CONTINUE_COMMAND`),
    /// or built from the command line.
    pub continue_with: String,
    /// The experiments, in the order they run.
    pub experiments: Vec<PlannedExperiment>,
}

/// One experiment of a [`Plan`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedExperiment {
    /// The experiment.
    pub name: String,
    /// Points of the whole sweep (every shard).
    pub sweep_points: usize,
    /// Points this process runs: its shard's, or the whole sweep unsharded.
    pub points: usize,
}

/// The Slurm job a plan was made in.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SlurmJob {
    /// `SLURM_JOB_ID`.
    pub job_id: String,
    /// `SLURM_RESTART_COUNT` (0 when unset: not requeued).
    pub restart_count: u32,
    /// `SLURM_JOB_NUM_NODES`.
    pub nodes: Option<u32>,
    /// `SLURM_NTASKS`.
    pub tasks: Option<u32>,
    /// `SLURM_NTASKS_PER_NODE` (set only when the job asked for it).
    pub tasks_per_node: Option<String>,
    /// `SLURM_GPUS_PER_NODE` (set only when the job asked for it).
    pub gpus_per_node: Option<String>,
}

impl SlurmJob {
    /// The job this process runs in, from Slurm's variables; `None` outside Slurm.
    pub fn this_job() -> Option<SlurmJob> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        Some(SlurmJob {
            job_id: var("SLURM_JOB_ID")?,
            restart_count: var("SLURM_RESTART_COUNT").and_then(|c| c.parse().ok()).unwrap_or(0),
            nodes: var("SLURM_JOB_NUM_NODES").and_then(|c| c.parse().ok()),
            tasks: var("SLURM_NTASKS").and_then(|c| c.parse().ok()),
            tasks_per_node: var("SLURM_NTASKS_PER_NODE"),
            gpus_per_node: var("SLURM_GPUS_PER_NODE"),
        })
    }
}

/// How a folder's rows are split among the processes that write them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One process writes `<experiment>.csv` (`suite run`, `gcd.sbatch`, `dev.sbatch`).
    Unsharded,
    /// `count` processes each write `<experiment>.shard-<i>-of-<count>.csv` (`--shard i/count`, `node.sbatch`),
    /// joined by `suite merge`.
    Sharded {
        /// The number of shards.
        count: usize,
    },
}

impl Layout {
    /// The layout a process with this `--shard` writes.
    pub fn of(shard: Option<crate::options::Shard>) -> Layout {
        match shard {
            None => Layout::Unsharded,
            Some(s) => Layout::Sharded { count: s.count },
        }
    }

    /// The layout a recorded `i/n` shard (or none) means; `None` for a shard that does not parse.
    fn of_recorded(shard: Option<&str>) -> Option<Layout> {
        match shard {
            None => Some(Layout::Unsharded),
            Some(s) => s.parse::<crate::options::Shard>().ok().map(|s| Layout::Sharded { count: s.count }),
        }
    }
}

impl std::fmt::Display for Layout {
    /// `unsharded (one process)`, `sharded in 8 (--shard i/8, merged by suite merge)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Layout::Unsharded => f.write_str("unsharded (one process, no --shard)"),
            Layout::Sharded { count } => write!(f, "sharded in {count} (--shard i/{count}, joined by suite merge)"),
        }
    }
}

impl RunJson {
    /// The layout the folder was written with, from its plans and invocations; `Err` with the layouts found when
    /// they disagree (a folder written before layouts were checked); `Ok(None)` when nothing says.
    pub fn layout(&self) -> std::result::Result<Option<Layout>, String> {
        let shards =
            self.plans.iter().map(|p| p.shard.as_deref()).chain(self.invocations.iter().map(|i| i.shard.as_deref()));
        let mut found: Vec<Layout> = Vec::new();
        for layout in shards.filter_map(Layout::of_recorded) {
            if !found.contains(&layout) {
                found.push(layout);
            }
        }
        match found.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some(*one)),
            many => Err(many.iter().map(|l| l.to_string()).collect::<Vec<_>>().join(" and ")),
        }
    }

    /// The command that continues the folder's run, as its latest plan recorded it.
    pub fn continue_with(&self) -> Option<&str> {
        self.plans.last().map(|p| p.continue_with.as_str())
    }
}

impl Invocation {
    /// An invocation record for this process, now; the caller sets the experiment, fingerprint and compilers.
    pub fn now(experiments: serde_json::Value, shard: Option<String>) -> Invocation {
        Invocation {
            command: std::env::args().collect(),
            date: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            host: gethostname::gethostname().to_string_lossy().into_owned(),
            suite_version: SUITE_VERSION.to_string(),
            git_commit: GIT_COMMIT.to_string(),
            git_dirty: git_dirty(),
            slurm_job_id: std::env::var("SLURM_JOB_ID").ok(),
            shard,
            experiment: String::new(),
            fingerprint: None,
            experiments,
            compilers: Vec::new(),
            blas: String::new(),
            timing: None,
            placement: crate::host::Placement::read(),
            telemetry: None,
            phases: None,
        }
    }
}

/// The path of `run.json` in `dir`.
pub fn path(dir: &Path) -> PathBuf {
    dir.join("run.json")
}

/// Reads `run.json` in `dir`; `None` when there is none yet.
pub fn read(dir: &Path) -> Result<Option<RunJson>> {
    let path = path(dir);
    match std::fs::read_to_string(&path) {
        Ok(text) => parse(&text).map(Some).map_err(|source| Error::Json { path, source }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(Error::Io { action: "cannot read", path, source }),
    }
}

/// `text` as a [`RunJson`]; a file from before `device.test_runtime` gets it from its runtime text.
fn parse(text: &str) -> serde_json::Result<RunJson> {
    let mut run: RunJson = serde_json::from_str(text)?;
    run.device.test_runtime =
        super::test_runtime::recorded(&serde_json::from_str::<serde_json::Value>(text)?["device"]);
    Ok(run)
}

/// A change to `run.json`, as the results folder's owner ([`super::folder::ResultsFolder`]) makes it: each is
/// admitted against what the file holds, under its lock, or refused, leaving the file as it was.
#[derive(Debug)]
pub(super) enum Change {
    /// What a process plans to measure, before it measures anything: the folder must hold this device's results (or
    /// none) and have been written with the plan's layout.
    Plan(Plan),
    /// An invocation of one experiment begins: besides the device and the layout, its rows must compare with the
    /// experiment's earlier ones (the same fingerprint), so one folder never mixes results that do not compare.
    /// `has_csv`: the CSV it would resume exists, so the folder must record how its rows were measured.
    Begin {
        /// The invocation, appended to those already there (when resuming into the folder, or from another shard);
        /// boxed, as it is by far the largest change.
        invocation: Box<Invocation>,
        /// Whether the CSV it writes exists already.
        has_csv: bool,
    },
    /// The invocation at `index` (as its [`Change::Begin`] returned it) of `experiment` ends: its phases and the
    /// telemetry's reading after its last point, when there is one. An index that holds another invocation (a file
    /// replaced meanwhile) is left alone.
    End {
        /// Its index in the file.
        index: usize,
        /// Its experiment.
        experiment: String,
        /// The reading after its last point.
        telemetry_end: Option<Reading>,
        /// Where its host time went.
        phases: PhaseRecord,
    },
    /// A merge of the folder's shards, recorded after its last file is in place ([`super::merge_record`]).
    Merge(MergeRecord),
}

/// Read-modify-write of `dir`'s run.json under its lock: `change` is admitted against the file as it is (a new one
/// for `device` when there is none) and applied; then `alongside` makes what goes with it (a beginning invocation's
/// CSV), and only then is the file written. A refused change changes nothing, and one whose `alongside` fails is
/// not recorded. Returns what `alongside` made and the index of the invocation begun or ended (0 for the others).
pub(super) fn update<T>(
    dir: &Path,
    device: &Props,
    change: Change,
    alongside: impl FnOnce() -> Result<T>,
) -> Result<(T, usize)> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Io { action: "cannot create", path: dir.into(), source })?;
    let path = path(dir);
    // A separate lock file, because run.json itself is replaced by a rename (a lock on the old inode would not
    // exclude a writer that opens the new one). Held for a moment by each writer, so it is waited for; released
    // when `lock` is dropped, also on error.
    let lock = WriterLock::exclusive(&dir.join(".run.json.lock"), &path, "an update of run.json", Wait::Forever)?;
    let mut run = read(dir)?.unwrap_or_else(|| RunJson {
        device: device.clone(),
        invocations: vec![],
        plans: vec![],
        merges: vec![],
    });
    let index = apply(&mut run, &path, device, change)?;
    let made = alongside()?;
    run.device = device.clone();
    let text = serde_json::to_string_pretty(&run).map_err(|source| Error::Json { path: path.clone(), source })?;
    // A temporary file of this process's own, renamed over run.json (crate::safe_fs): readers see the old or the new
    // file, never a mix, and nothing is written through a link planted under the name.
    crate::safe_fs::write_whole(&path, (text + "\n").as_bytes())
        .map_err(|e| super::io_error("cannot write", &path, e))?;
    drop(lock);
    Ok((made, index))
}

/// `change` admitted into `run` (the file at `path`) and applied; the index of the invocation it begins or ends.
fn apply(run: &mut RunJson, path: &Path, device: &Props, change: Change) -> Result<usize> {
    match change {
        Change::Plan(plan) => {
            admit_device(run, path, device)?;
            admit_layout(run, path, Layout::of_recorded(plan.shard.as_deref()))?;
            run.plans.push(plan);
            Ok(0)
        }
        Change::Begin { invocation, has_csv } => {
            admit(run, path, device, &invocation)?;
            let recorded = run.invocations.iter().any(|i| i.experiment == invocation.experiment);
            if has_csv && !recorded {
                return Err(Error::FingerprintMismatch {
                    path: path.into(),
                    experiment: invocation.experiment.clone(),
                    diff: Box::new(FieldDifference {
                        field: "fingerprint",
                        old: "none (run.json does not record the rows there)".into(),
                        new: "recorded".into(),
                    }),
                });
            }
            run.invocations.push(*invocation);
            Ok(run.invocations.len() - 1)
        }
        Change::End { index, experiment, telemetry_end, phases } => {
            if let Some(invocation) = run.invocations.get_mut(index).filter(|i| i.experiment == experiment) {
                if let (Some(telemetry), Some(end)) = (invocation.telemetry.as_mut(), telemetry_end) {
                    telemetry.end = Some(end);
                }
                invocation.phases = Some(phases);
            }
            Ok(index)
        }
        Change::Merge(record) => {
            run.merges.push(record);
            Ok(0)
        }
    }
}

/// Whether `invocation` may join `run` (the file at `path`).
fn admit(run: &RunJson, path: &Path, device: &Props, invocation: &Invocation) -> Result<()> {
    admit_device(run, path, device)?;
    admit_layout(run, path, Layout::of_recorded(invocation.shard.as_deref()))?;
    let Some(new) = &invocation.fingerprint else { return Ok(()) };
    let mismatch = |diff: FieldDifference| Error::FingerprintMismatch {
        path: path.into(),
        experiment: invocation.experiment.clone(),
        diff: Box::new(diff),
    };
    let unrecorded =
        || FieldDifference { field: "fingerprint", old: "none (an older suite)".into(), new: "recorded".into() };
    for earlier in run.invocations.iter().filter(|i| i.experiment == invocation.experiment) {
        match &earlier.fingerprint {
            Some(old) => {
                if let Some(diff) = old.difference(new) {
                    return Err(mismatch(diff));
                }
            }
            None => return Err(mismatch(unrecorded())),
        }
    }
    // Files from before the experiment was recorded per invocation name it only in `experiments`.
    let older =
        run.invocations.iter().any(|i| i.experiment.is_empty() && i.experiments.get(&invocation.experiment).is_some());
    if older {
        return Err(mismatch(unrecorded()));
    }
    Ok(())
}

/// Whether the folder of `run` holds results of `device` (or none yet).
fn admit_device(run: &RunJson, path: &Path, device: &Props) -> Result<()> {
    if run.device.name != device.name || run.device.arch != device.arch || run.device.platform != device.platform {
        return Err(Error::OtherDevice {
            path: path.into(),
            held: format!("{} ({})", run.device.name, run.device.arch),
            this: format!("{} ({})", device.name, device.arch),
            planned: false,
        });
    }
    Ok(())
}

/// Whether a writer of `layout` may write into the folder of `run`: only with the layout it was written with.
fn admit_layout(run: &RunJson, path: &Path, layout: Option<Layout>) -> Result<()> {
    let Some(this) = layout else { return Ok(()) };
    let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    let found = match run.layout() {
        Ok(None) => return Ok(()),
        Ok(Some(found)) if found == this => return Ok(()),
        Ok(Some(found)) => found.to_string(),
        Err(mixed) => format!("both {mixed} (by an older suite)"),
    };
    let continue_with = run.continue_with().map(str::to_string).unwrap_or_else(|| match run.layout() {
        Ok(Some(Layout::Sharded { count })) => {
            format!("`suite run ... --shard i/{count} --resume` for every i below {count}, then `suite merge`")
        }
        _ => "`suite run ... --resume` without --shard".to_string(),
    });
    Err(Error::Layout { dir, found, this: this.to_string(), continue_with })
}

/// Checks, without writing anything, that a run of `layout` on `device` may write into `dir`: what
/// `suite run --dry-run --out DIR` tells before a job is queued.
pub fn check_layout(dir: &Path, device: Option<&Props>, layout: Layout) -> Result<()> {
    let Some(run) = read(dir)? else { return Ok(()) };
    if let Some(device) = device {
        admit_device(&run, &path(dir), device)?;
    }
    admit_layout(&run, &path(dir), Some(layout))
}

/// How a run was timed, for `run.json`: the method asked for and the GPU's gap between back-to-back kernels both
/// ways, measured at the start of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimingRecord {
    /// The method asked for (`--timing`); a row's `timing` column says what timed it.
    pub method: crate::device::Timing,
    /// Time per launch of an empty one-item kernel in a batch of 1000 launched back to back on the stream, µs
    /// (median of 5): the gap each batched launch adds to a kernel's own time.
    pub launch_gap_us: Option<f64>,
    /// The same batch replayed as a graph, µs; absent where the platform cannot capture.
    pub graph_launch_gap_us: Option<f64>,
    /// Why a gap could not be measured, when it could not.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::occupancy_calculator::tests::h100;

    /// A fingerprint as a smoke run on the test H100 would record.
    pub(crate) fn fingerprint() -> Fingerprint {
        let compilers = vec![CompilerRecord {
            source: "smoke".into(),
            origin: "cached /tmp/x".into(),
            compiler: "nvcc 13.0".into(),
            flags: vec!["-O3".into()],
            sha256: String::new(),
        }];
        let options = serde_json::json!({"smoke": {"sizes": [1024]}, "reps": 20, "warmup": 3, "time_budget_s": 2.0});
        Fingerprint::new(&options, &["smoke"], &compilers, &h100(), &["a".to_string(), "b".to_string()])
    }

    /// [`Change::Begin`] of `invocation`, with nothing alongside; its index.
    fn begin(dir: &Path, device: &Props, invocation: Invocation, has_csv: bool) -> Result<usize> {
        update(dir, device, Change::Begin { invocation: Box::new(invocation), has_csv }, || Ok(()))
            .map(|(_, index)| index)
    }

    /// [`begin`] where the invocation has no CSV yet.
    fn record(dir: &Path, device: &Props, invocation: Invocation) -> Result<usize> {
        begin(dir, device, invocation, false)
    }

    fn record_plan(dir: &Path, device: &Props, plan: Plan) -> Result<()> {
        update(dir, device, Change::Plan(plan), || Ok(())).map(|_| ())
    }

    fn end_at(dir: &Path, index: usize, experiment: &str, telemetry_end: Option<Reading>, phases: PhaseRecord) {
        let change = Change::End { index, experiment: experiment.into(), telemetry_end, phases };
        update(dir, &h100(), change, || Ok(())).unwrap();
    }

    fn invocation(experiment: &str, shard: Option<&str>, fingerprint: Fingerprint) -> Invocation {
        let mut inv = Invocation::now(serde_json::json!({ experiment: {} }), shard.map(str::to_string));
        inv.experiment = experiment.into();
        inv.fingerprint = Some(fingerprint);
        inv
    }

    /// This process's umask, from /proc (Linux); 0o022 where it cannot be read.
    #[cfg(unix)]
    fn umask() -> u32 {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| s.lines().find_map(|l| l.strip_prefix("Umask:").map(|v| v.trim().to_string())))
            .and_then(|v| u32::from_str_radix(&v, 8).ok())
            .unwrap_or(0o022)
    }

    #[test]
    fn invocations_accumulate_and_devices_do_not_mix() {
        let dir = tempfile::tempdir().unwrap();
        record(dir.path(), &h100(), invocation("smoke", Some("0/2"), fingerprint())).unwrap();
        record(dir.path(), &h100(), invocation("smoke", Some("1/2"), fingerprint())).unwrap();
        let run = read(dir.path()).unwrap().unwrap();
        assert_eq!(run.invocations.len(), 2);
        assert_eq!(run.invocations[1].shard.as_deref(), Some("1/2"));
        assert_eq!(run.invocations[1].fingerprint, Some(fingerprint()));
        assert_eq!(run.device.wave_size.0, 32);
        assert_eq!(run.invocations[0].git_commit, GIT_COMMIT);
        assert_eq!(run.invocations[0].git_dirty, git_dirty());
        assert!(!GIT_COMMIT.ends_with("-dirty"), "the dirty mark is its own field: {GIT_COMMIT}");
        // Others may read it (the default umask keeps read bits), not only its owner as with a temporary file.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(path(dir.path())).unwrap().permissions().mode();
            assert_eq!(mode & 0o044, 0o044 & !umask(), "run.json mode {mode:o}");
        }
        let text = std::fs::read_to_string(path(dir.path())).unwrap();
        assert!(text.contains(&format!("\"git_dirty\": {}", git_dirty())), "{text}");
        let mut other = h100();
        other.name = "Another GPU".into();
        let err = record(dir.path(), &other, invocation("smoke", None, fingerprint())).unwrap_err();
        assert!(err.to_string().contains("choose another --out"), "{err}");
        assert_eq!(read(dir.path()).unwrap().unwrap().invocations.len(), 2);
    }

    #[test]
    fn the_end_reading_goes_to_its_own_invocation_and_the_record_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let limits = crate::device::telemetry::Limits {
            max_sm_clock_mhz: Some(1980),
            max_mem_clock_mhz: Some(2619),
            power_limit_w: Some(700.0),
            power_scope: crate::device::telemetry::PowerScope::Device,
        };
        let idle = crate::device::telemetry::Sample {
            t_ms: 0.0,
            sm_clock_mhz: Some(345),
            mem_clock_mhz: Some(2619),
            power_w: Some(71.3),
            temperature_c: Some(31.0),
            reasons: Some(crate::device::telemetry::Reasons::of(&[crate::device::telemetry::Reason::Idle])),
        };
        let with_telemetry = |experiment: &str| {
            let mut inv = invocation(experiment, None, fingerprint());
            inv.telemetry = Some(TelemetryRecord {
                source: "NVML 13.580.82".into(),
                period_ms: Some(20.0),
                limits: Some(limits.clone()),
                start: Some(Reading::now(Ok(idle.clone()))),
                end: None,
            });
            inv
        };
        assert_eq!(record(dir.path(), &h100(), with_telemetry("smoke")).unwrap(), 0);
        assert_eq!(record(dir.path(), &h100(), with_telemetry("matmul")).unwrap(), 1);
        let end = Reading::now(Err("telemetry not available: the GPU is lost".into()));
        let phases = PhaseRecord { points: 3, ..PhaseRecord::default() };
        end_at(dir.path(), 1, "matmul", Some(end.clone()), phases.clone());
        // An index that holds another experiment's invocation is left alone.
        end_at(dir.path(), 0, "matmul", Some(end.clone()), phases.clone());
        let run = read(dir.path()).unwrap().unwrap();
        let (first, second) =
            (run.invocations[0].telemetry.clone().unwrap(), run.invocations[1].telemetry.clone().unwrap());
        assert_eq!((first.end, second.end), (None, Some(end)));
        assert_eq!((run.invocations[0].phases.as_ref(), run.invocations[1].phases.as_ref()), (None, Some(&phases)));
        assert_eq!(second.limits, Some(limits));
        let start = second.start.unwrap();
        assert_eq!(
            (start.sm_clock_mhz, start.power_w, start.reasons.as_deref()),
            (Some(345), Some(71.3), Some("idle"))
        );
        let text = std::fs::read_to_string(path(dir.path())).unwrap();
        assert!(
            text.contains("\"power_scope\": \"device\"") && text.contains("\"source\": \"NVML 13.580.82\""),
            "{text}"
        );
        assert!(text.contains("\"error\": \"telemetry not available: the GPU is lost\""), "{text}");
    }

    #[test]
    fn a_different_fingerprint_is_refused_naming_the_field_old_and_new() {
        type Edit = fn(&mut Fingerprint);
        let edits: [(&str, Edit); 6] = [
            ("options", |f| f.options = f.options.replace("20", "50")),
            ("kernel_sources", |f| f.kernel_sources = "0123abcd".into()),
            ("compiler", |f| f.compiler = f.compiler.replace("13.0", "12.4")),
            ("device", |f| f.device = "nvidia NVIDIA H200 (sm_90)".into()),
            ("suite", |f| f.suite = "0.2.0 abcdef-dirty".into()),
            ("csv_header", |f| f.csv_header.push_str(",extra")),
        ];
        for (field, edit) in edits {
            let dir = tempfile::tempdir().unwrap();
            record(dir.path(), &h100(), invocation("smoke", None, fingerprint())).unwrap();
            // Another experiment in the same folder has its own fingerprint.
            let mut changed = fingerprint();
            edit(&mut changed);
            record(dir.path(), &h100(), invocation("matmul", None, changed.clone())).unwrap();
            let (old, new) = (fingerprint(), changed.clone());
            let (old_value, new_value) = (
                old.fields().iter().find(|(n, _)| *n == field).unwrap().1.to_string(),
                new.fields().iter().find(|(n, _)| *n == field).unwrap().1.to_string(),
            );
            assert_ne!(old_value, new_value, "{field}");
            for err in [
                begin(dir.path(), &h100(), invocation("smoke", None, changed.clone()), true).unwrap_err(),
                record(dir.path(), &h100(), invocation("smoke", None, changed)).unwrap_err(),
            ] {
                let text = err.to_string();
                assert!(matches!(&err, Error::FingerprintMismatch { diff, .. } if diff.field == field), "{text}");
                assert!(text.contains(&format!("its {field} differs")), "{text}");
                assert!(text.contains(&old_value) && text.contains(&new_value), "{text}");
                assert!(text.contains("choose another --out") && text.contains("delete the folder"), "{text}");
            }
            assert_eq!(read(dir.path()).unwrap().unwrap().invocations.len(), 2, "a refused run records nothing");
        }
    }

    #[test]
    fn a_folder_from_before_fingerprints_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut old = Invocation::now(serde_json::json!({"smoke": {}}), None);
        old.fingerprint = None;
        record(dir.path(), &h100(), old).unwrap();
        let err = record(dir.path(), &h100(), invocation("smoke", None, fingerprint())).unwrap_err();
        assert!(err.to_string().contains("its fingerprint differs (recorded: none (an older suite)"), "{err}");
        // Other experiments are not affected.
        record(dir.path(), &h100(), invocation("matmul", None, fingerprint())).unwrap();
        // Rows whose run.json is missing, or does not mention them, are refused too; a new experiment is not.
        let empty = tempfile::tempdir().unwrap();
        let err = begin(empty.path(), &h100(), invocation("smoke", None, fingerprint()), true).unwrap_err();
        assert!(err.to_string().contains("run.json does not record the rows there"), "{err}");
        begin(empty.path(), &h100(), invocation("smoke", None, fingerprint()), false).unwrap();
        begin(dir.path(), &h100(), invocation("matmul", None, fingerprint()), true).unwrap();
        begin(dir.path(), &h100(), invocation("fusion", None, fingerprint()), false).unwrap();
    }

    #[test]
    fn the_fingerprint_covers_sources_compilers_options_and_header() {
        use crate::report::fingerprint::sources_hash;
        let f = fingerprint();
        assert_eq!(f.device, "nvidia NVIDIA H100 80GB HBM3 (sm_90)");
        assert_eq!(f.compiler, "smoke: nvcc 13.0 [-O3]");
        assert_eq!(f.csv_header, "a,b");
        assert_eq!(f.suite, format!("{SUITE_VERSION} {}", git_describe()));
        assert!(f.options.contains("\"reps\":20"), "{}", f.options);
        assert_eq!(f.kernel_sources.len(), 64);
        // The hash depends on which sources are loaded, not on their order.
        assert_eq!(sources_hash(&["smoke", "matmul"]), sources_hash(&["matmul", "smoke"]));
        assert_ne!(sources_hash(&["smoke"]), sources_hash(&["matmul"]));
        assert_eq!(f.difference(&fingerprint()), None);
        // Another experiment's kernels, loaded earlier by the same process, are not part of this one's.
        let mut compilers = vec![CompilerRecord {
            source: "matmul".into(),
            origin: "compiled".into(),
            compiler: "nvcc 13.0".into(),
            flags: vec!["-O3".into()],
            sha256: String::new(),
        }];
        compilers.push(CompilerRecord {
            source: "smoke".into(),
            origin: "cached /tmp/x".into(),
            compiler: "nvcc 13.0".into(),
            flags: vec!["-O3".into()],
            sha256: String::new(),
        });
        let options = serde_json::json!({"smoke": {"sizes": [1024]}, "reps": 20, "warmup": 3, "time_budget_s": 2.0});
        let both = Fingerprint::new(&options, &["smoke"], &compilers, &h100(), &["a".to_string(), "b".to_string()]);
        assert_eq!(both.difference(&f), None);
    }

    fn plan(shard: Option<&str>, continue_with: &str) -> Plan {
        Plan {
            date: "2026-11-25T10:00:00Z".into(),
            host: "nid001".into(),
            command: vec!["suite".into(), "run".into()],
            shard: shard.map(str::to_string),
            slurm: None,
            continue_with: continue_with.into(),
            experiments: vec![PlannedExperiment { name: "smoke".into(), sweep_points: 8, points: 8 }],
        }
    }

    #[test]
    fn a_folder_keeps_the_layout_it_was_written_with() {
        let continued = "SUITE_OUT=r sbatch --nodes=2 --ntasks-per-node=8 --gpus-per-node=8 scripts/lumi/node.sbatch";
        let sharded = tempfile::tempdir().unwrap();
        record_plan(sharded.path(), &h100(), plan(Some("3/16"), continued)).unwrap();
        record_plan(sharded.path(), &h100(), plan(Some("4/16"), continued)).unwrap();
        let run = read(sharded.path()).unwrap().unwrap();
        assert_eq!(run.layout(), Ok(Some(Layout::Sharded { count: 16 })));
        for (shard, this) in [(None, "unsharded"), (Some("0/8"), "sharded in 8")] {
            let err = record_plan(sharded.path(), &h100(), plan(shard, "x")).unwrap_err();
            let text = err.to_string();
            assert!(matches!(err, Error::Layout { .. }), "{text}");
            assert!(text.contains("holds a run written sharded in 16"), "{text}");
            assert!(text.contains(&format!("this run would write it {this}")), "{text}");
            assert!(text.contains(&format!("continue it as it was written ({continued})")), "{text}");
            // A per-experiment record and the read-only check refuse it alike.
            let layout = Layout::of(shard.map(|s| s.parse().unwrap()));
            assert!(matches!(check_layout(sharded.path(), None, layout), Err(Error::Layout { .. })));
            let inv = invocation("smoke", shard, fingerprint());
            assert!(matches!(record(sharded.path(), &h100(), inv), Err(Error::Layout { .. })));
        }
        assert_eq!(read(sharded.path()).unwrap().unwrap().plans.len(), 2, "a refused plan is not recorded");
        let unsharded = tempfile::tempdir().unwrap();
        record_plan(unsharded.path(), &h100(), plan(None, "suite run --out r --resume")).unwrap();
        let err = record_plan(unsharded.path(), &h100(), plan(Some("0/8"), "x")).unwrap_err().to_string();
        assert!(err.contains("holds a run written unsharded") && err.contains("suite run --out r --resume"), "{err}");
        check_layout(unsharded.path(), None, Layout::Unsharded).unwrap();
        check_layout(tempfile::tempdir().unwrap().path(), None, Layout::Sharded { count: 8 }).unwrap();
    }

    /// Set by [`eight_processes_at_once_lose_no_invocation`] for the child processes it starts.
    const CHILD_DIR: &str = "SUITE_TEST_RUN_JSON_DIR";

    /// One writer: records one invocation and finds it in the file. On its own it writes into a folder of its own;
    /// as a child of [`eight_processes_at_once_lose_no_invocation`], into the shared folder named by `CHILD_DIR`,
    /// after waiting for the start signal (so the children write at the same moment).
    #[test]
    fn one_process_records_one_invocation() {
        let own = tempfile::tempdir().unwrap();
        let dir = std::env::var_os(CHILD_DIR).map(PathBuf::from).unwrap_or_else(|| own.path().to_path_buf());
        let token = std::env::var("SUITE_TEST_TOKEN").unwrap_or_else(|_| "alone".into());
        let shard = std::env::var("SUITE_TEST_SHARD").unwrap_or_else(|_| "0/1".into());
        if let Some(go) = std::env::var_os("SUITE_TEST_GO") {
            let go = PathBuf::from(go);
            // Bounded, so a lost signal ends in a failed count rather than a hung test.
            for _ in 0..60_000 {
                if go.exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        let mut inv = invocation("smoke", Some(&shard), fingerprint());
        inv.command = vec![token.clone()];
        record(&dir, &h100(), inv).unwrap();
        let run = read(&dir).unwrap().unwrap();
        assert_eq!(run.invocations.iter().filter(|i| i.command == [token.clone()]).count(), 1);
    }

    #[test]
    fn eight_processes_at_once_lose_no_invocation() {
        const PROCESSES: usize = 8;
        const ROUNDS: usize = 5;
        let exe = std::env::current_exe().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let token = |round: usize, i: usize| format!("round {round} shard {i}");
        for round in 0..ROUNDS {
            let go = dir.path().join(format!("go-{round}"));
            let children: Vec<_> = (0..PROCESSES)
                .map(|i| {
                    std::process::Command::new(&exe)
                        .args(["--exact", "report::run_json::tests::one_process_records_one_invocation"])
                        .args(["--test-threads=1", "--nocapture"])
                        .env(CHILD_DIR, dir.path())
                        .env("SUITE_TEST_TOKEN", token(round, i))
                        .env("SUITE_TEST_SHARD", format!("{i}/{PROCESSES}"))
                        .env("SUITE_TEST_GO", &go)
                        .stdout(std::process::Stdio::piped())
                        .stderr(std::process::Stdio::piped())
                        .spawn()
                        .unwrap()
                })
                .collect();
            std::fs::write(&go, b"").unwrap();
            for child in children {
                let out = child.wait_with_output().unwrap();
                let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
                assert!(out.status.success(), "a writer failed in round {round}:\n{text}");
                // The child really ran the writer (a renamed test would match nothing and pass).
                assert!(text.contains("1 passed"), "{text}");
            }
            let text = std::fs::read_to_string(path(dir.path())).unwrap();
            let run: RunJson = serde_json::from_str(&text).unwrap_or_else(|e| panic!("invalid JSON: {e}\n{text}"));
            assert_eq!(run.invocations.len(), PROCESSES * (round + 1));
            for r in 0..=round {
                for i in 0..PROCESSES {
                    let n = run.invocations.iter().filter(|inv| inv.command == [token(r, i)]).count();
                    assert_eq!(n, 1, "{} recorded {n} times", token(r, i));
                }
            }
        }
        // No temporary file is left behind.
        let mut names: Vec<String> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into()).collect();
        names.retain(|n| !n.starts_with("go-"));
        names.sort();
        assert_eq!(names, [".run.json.lock", "run.json"]);
    }
}
