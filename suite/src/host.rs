//! The host a run executes on, as the process sees it: how much memory it may still use, and where it runs.
//!
//! Memory: `/proc/meminfo` sees the whole machine, not the job. Under Slurm a job is held to its allocation by a
//! cgroup (v2 `memory.max`, v1 `memory.limit_in_bytes`), and the OOM killer ends a process that crosses it, so the
//! suite reads every figure it can find and uses the smallest: a point too large for the job then becomes an
//! `invalid` row instead of a killed task. Placement: CPU affinity, the GPU visibility variables and the Slurm job,
//! partition and node, for `run.json` (host-timed figures depend on the CPU a process runs on).
//!
//! Everything is read from files under a root (`/` on a live system, a folder in tests) and from the environment:
//! no unsafe code, no GPU.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One figure for the host memory this process may still use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryFigure {
    /// Bytes this source says the process may still allocate.
    pub available_bytes: u64,
    /// Where the figure comes from, with its parts, e.g. `cgroup v2 memory.max of /sys/fs/cgroup/job_12 (16.0 GiB
    /// limit, 3.2 GiB in use)`.
    pub source: String,
}

/// Every figure found for the host memory this process may use.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct HostMemory {
    /// In the order they were read: `/proc/meminfo`, cgroups (innermost first), Slurm.
    pub figures: Vec<MemoryFigure>,
}

impl HostMemory {
    /// The figures of this process, now.
    pub fn read() -> HostMemory {
        System::live().memory()
    }

    /// The smallest figure: what the process may still allocate. `None` when nothing could be read.
    pub fn available(&self) -> Option<&MemoryFigure> {
        self.figures.iter().min_by_key(|f| f.available_bytes)
    }
}

/// Where a process runs: what `run.json` records per invocation and `suite compare` shows.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Placement {
    /// CPUs the process may run on (`Cpus_allowed_list` of `/proc/self/status`), e.g. `49-55`.
    #[serde(default)]
    pub cpus_allowed: Option<String>,
    /// The same as a hexadecimal mask (`Cpus_allowed`), the form of Slurm's `--cpu-bind=mask_cpu:`.
    #[serde(default)]
    pub cpu_mask: Option<String>,
    /// The GPU visibility variables that are set ([`GPU_VARIABLES`]), name → value.
    #[serde(default)]
    pub gpu_variables: BTreeMap<String, String>,
    /// Slurm's partition (`SLURM_JOB_PARTITION`), under Slurm.
    #[serde(default)]
    pub slurm_partition: Option<String>,
    /// The node Slurm runs this task on (`SLURMD_NODENAME`).
    #[serde(default)]
    pub slurm_node: Option<String>,
    /// This task's global and node-local rank (`SLURM_PROCID`, `SLURM_LOCALID`), inside a job step.
    #[serde(default)]
    pub slurm_task: Option<String>,
    /// How often Slurm has requeued the job (`SLURM_RESTART_COUNT`), when it has.
    #[serde(default)]
    pub slurm_restart_count: Option<String>,
    /// The host memory figures at the start of the invocation.
    #[serde(default)]
    pub host_memory: Vec<MemoryFigure>,
}

impl Placement {
    /// This process's placement, now.
    pub fn read() -> Placement {
        System::live().placement()
    }

    /// One line for reports: CPUs, GPU variables, Slurm partition and node, e.g.
    /// `CPUs 49-55; ROCR_VISIBLE_DEVICES=0; small-g on nid005012, task 0/0`.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        if let Some(cpus) = &self.cpus_allowed {
            parts.push(format!("CPUs {cpus}"));
        }
        if !self.gpu_variables.is_empty() {
            parts.push(self.gpu_variables.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" "));
        }
        if self.slurm_partition.is_some() || self.slurm_node.is_some() {
            let mut slurm = format!(
                "{} on {}",
                self.slurm_partition.as_deref().unwrap_or("partition ?"),
                self.slurm_node.as_deref().unwrap_or("node ?")
            );
            if let Some(task) = &self.slurm_task {
                slurm.push_str(&format!(", task {task}"));
            }
            if let Some(n) = &self.slurm_restart_count {
                slurm.push_str(&format!(", requeued {n}x"));
            }
            parts.push(slurm);
        }
        if parts.is_empty() {
            "not recorded".into()
        } else {
            parts.join("; ")
        }
    }
}

/// The variables that decide which GPUs a process sees: ROCm's (`ROCR_VISIBLE_DEVICES`, then HIP's), CUDA's, and
/// `GPU_DEVICE_ORDINAL`, which Slurm sets for a GPU allocation.
pub const GPU_VARIABLES: [&str; 4] =
    ["ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL"];

/// Where files and variables are read from: the live system (`/` and this process's environment), or a folder and
/// a table in tests.
#[derive(Debug, Clone)]
pub struct System {
    /// Prefix of every absolute path read (`/` live).
    pub root: PathBuf,
    /// The environment.
    pub env: BTreeMap<String, String>,
}

impl System {
    /// This machine and this process.
    pub fn live() -> System {
        System { root: PathBuf::from("/"), env: std::env::vars().collect() }
    }

    fn read(&self, path: &Path) -> Option<String> {
        std::fs::read_to_string(self.root.join(path.strip_prefix("/").unwrap_or(path))).ok()
    }

    fn var(&self, name: &str) -> Option<&str> {
        self.env.get(name).map(String::as_str).filter(|v| !v.is_empty())
    }

    /// Every memory figure: `/proc/meminfo`, this process's memory cgroups, Slurm's allocation.
    pub fn memory(&self) -> HostMemory {
        let mut figures = Vec::new();
        if let Some(bytes) = self.read(Path::new("/proc/meminfo")).and_then(|t| mem_available(&t)) {
            figures.push(MemoryFigure { available_bytes: bytes, source: "MemAvailable in /proc/meminfo".into() });
        }
        figures.extend(self.cgroup_figures());
        figures.extend(slurm_figure(&|name| self.var(name)));
        HostMemory { figures }
    }

    /// The memory limits of this process's cgroups (v2, v1 or both), each as limit − usage, innermost first. A
    /// limit set on an ancestor (Slurm's job level above a step) binds too, so every level with a limit counts.
    fn cgroup_figures(&self) -> Vec<MemoryFigure> {
        let (Some(membership), Some(mounts)) =
            (self.read(Path::new("/proc/self/cgroup")), self.read(Path::new("/proc/self/mountinfo")))
        else {
            return Vec::new();
        };
        let mut figures = Vec::new();
        for (version, mount_point, dir) in cgroup_dirs(&membership, &mounts) {
            let (limit_file, usage_file, inactive_key) = match version {
                CgroupVersion::V2 => ("memory.max", "memory.current", "inactive_file"),
                CgroupVersion::V1 => ("memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"),
            };
            for level in dir.ancestors().take_while(|level| level.starts_with(&mount_point)) {
                let Some(limit) = self.read(&level.join(limit_file)).and_then(|t| limit_bytes(&t)) else {
                    continue;
                };
                let usage = self.read(&level.join(usage_file)).and_then(|t| t.trim().parse::<u64>().ok());
                // Inactive file pages are reclaimed before the OOM killer runs: they do not count against the room.
                let inactive = self.read(&level.join("memory.stat")).and_then(|t| stat_value(&t, inactive_key));
                let used = usage.unwrap_or(0).saturating_sub(inactive.unwrap_or(0));
                figures.push(MemoryFigure {
                    available_bytes: limit.saturating_sub(used),
                    source: format!(
                        "cgroup {} {limit_file} of {} ({} limit, {})",
                        version.name(),
                        level.display(),
                        gib(limit),
                        usage.map(|_| format!("{} in use", gib(used))).unwrap_or_else(|| "usage unknown".into())
                    ),
                });
            }
        }
        figures
    }

    /// Where this process runs.
    pub fn placement(&self) -> Placement {
        let status = self.read(Path::new("/proc/self/status")).unwrap_or_default();
        let field = |name: &str| {
            status.lines().find_map(|l| l.strip_prefix(name)).map(|v| v.trim().to_string()).filter(|v| !v.is_empty())
        };
        let var = |name: &str| self.var(name).map(str::to_string);
        let slurm_task = match (self.var("SLURM_PROCID"), self.var("SLURM_LOCALID")) {
            (Some(p), Some(l)) => Some(format!("{p}/{l}")),
            (Some(p), None) => Some(p.to_string()),
            _ => None,
        };
        Placement {
            cpus_allowed: field("Cpus_allowed_list:"),
            cpu_mask: field("Cpus_allowed:"),
            gpu_variables: GPU_VARIABLES
                .iter()
                .filter_map(|&name| self.env.get(name).map(|v| (name.to_string(), v.clone())))
                .collect(),
            slurm_partition: var("SLURM_JOB_PARTITION"),
            slurm_node: var("SLURMD_NODENAME"),
            slurm_task,
            slurm_restart_count: var("SLURM_RESTART_COUNT"),
            host_memory: self.memory().figures,
        }
    }
}

/// Bytes as GiB with one decimal, for messages.
fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30))
}

/// `MemAvailable` of `/proc/meminfo`, bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// A cgroup memory limit in bytes; `None` for no limit (`max` in v2, v1's page-counter maximum, about 2^63).
fn limit_bytes(text: &str) -> Option<u64> {
    let value: u64 = text.trim().parse().ok()?;
    // v1 reports "no limit" as PAGE_COUNTER_MAX pages (9223372036854771712 with 4 KiB pages); no machine has 2^60.
    (value < 1 << 60).then_some(value)
}

/// A `key value` line of a cgroup's `memory.stat`.
fn stat_value(stat: &str, key: &str) -> Option<u64> {
    stat.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CgroupVersion {
    V1,
    V2,
}

impl CgroupVersion {
    fn name(self) -> &'static str {
        match self {
            CgroupVersion::V1 => "v1",
            CgroupVersion::V2 => "v2",
        }
    }
}

/// The (version, mount point, folder) of this process's memory cgroups: from `/proc/self/cgroup` (`0::/path` for v2,
/// `N:...memory...:/path` for v1) and the mounts of `/proc/self/mountinfo` (a `cgroup2` mount, or a `cgroup` mount
/// with the `memory` option), each path taken relative to the root of the hierarchy its mount shows.
fn cgroup_dirs(membership: &str, mountinfo: &str) -> Vec<(CgroupVersion, PathBuf, PathBuf)> {
    let mut dirs = Vec::new();
    for line in membership.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next()) else { continue };
        let version = if id == "0" && controllers.is_empty() {
            CgroupVersion::V2
        } else if controllers.split(',').any(|c| c == "memory") {
            CgroupVersion::V1
        } else {
            continue;
        };
        let Some((mount_root, mount_point)) = cgroup_mount(mountinfo, version) else { continue };
        // Inside a container the mount may show a sub-tree: the process's path is relative to that sub-tree.
        let relative = Path::new(path).strip_prefix(&mount_root).unwrap_or(Path::new(""));
        let dir = if relative.as_os_str().is_empty() { mount_point.clone() } else { mount_point.join(relative) };
        dirs.push((version, mount_point, dir));
    }
    dirs
}

/// The (root of the hierarchy it shows, mount point) of the first mount of a memory cgroup hierarchy of `version`.
fn cgroup_mount(mountinfo: &str, version: CgroupVersion) -> Option<(PathBuf, PathBuf)> {
    mountinfo.lines().find_map(|line| {
        // "36 25 0:31 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory": fields, then " - ", then the
        // file system type, the source and the super options.
        let (mount, fs) = line.split_once(" - ")?;
        let fields: Vec<&str> = mount.split_whitespace().collect();
        let fs: Vec<&str> = fs.split_whitespace().collect();
        let wanted = match version {
            CgroupVersion::V2 => fs.first() == Some(&"cgroup2"),
            CgroupVersion::V1 => {
                fs.first() == Some(&"cgroup") && fs.get(2).is_some_and(|o| o.split(',').any(|o| o == "memory"))
            }
        };
        wanted.then(|| Some((PathBuf::from(fields.get(3)?), PathBuf::from(fields.get(4)?)))).flatten()
    })
}

/// Slurm's memory allocation for this task: the job's per-node memory (`SLURM_MEM_PER_NODE`, or per CPU or per GPU
/// times those on the node), shared by the tasks of this step on this node. Slurm's values are MiB. `None` outside a
/// job or without a memory request.
fn slurm_figure<'e>(var: &dyn Fn(&str) -> Option<&'e str>) -> Option<MemoryFigure> {
    const MIB: u64 = 1 << 20;
    let number = |name: &str| var(name).and_then(|v| v.trim().parse::<u64>().ok());
    let (per_node_mib, how) = if let Some(mib) = number("SLURM_MEM_PER_NODE") {
        (mib, format!("SLURM_MEM_PER_NODE={mib} MiB"))
    } else if let (Some(mib), Some(gpus)) = (number("SLURM_MEM_PER_GPU"), gpus_on_node(var)) {
        (mib.checked_mul(gpus)?, format!("SLURM_MEM_PER_GPU={mib} MiB x {gpus} GPU(s) on this node"))
    } else if let (Some(mib), Some(cpus)) = (number("SLURM_MEM_PER_CPU"), number("SLURM_CPUS_ON_NODE")) {
        (mib.checked_mul(cpus)?, format!("SLURM_MEM_PER_CPU={mib} MiB x {cpus} CPUs on this node"))
    } else {
        return None;
    };
    // Inside a step the step's own task count applies; in the batch script, the job's.
    let node = number("SLURM_NODEID").unwrap_or(0);
    let tasks = var("SLURM_STEP_TASKS_PER_NODE")
        .or_else(|| var("SLURM_TASKS_PER_NODE"))
        .and_then(|spec| tasks_on_node(spec, node))
        .unwrap_or(1)
        .max(1);
    let bytes = per_node_mib.checked_mul(MIB)?;
    Some(MemoryFigure {
        available_bytes: bytes / tasks,
        source: format!("Slurm allocation: {how}, shared by {tasks} task(s) of this step on this node"),
    })
}

/// GPUs of the job on this node: `SLURM_GPUS_ON_NODE`, or the entries of `SLURM_JOB_GPUS` / `GPU_DEVICE_ORDINAL`.
fn gpus_on_node<'e>(var: &dyn Fn(&str) -> Option<&'e str>) -> Option<u64> {
    if let Some(n) = var("SLURM_GPUS_ON_NODE").and_then(|v| v.trim().parse().ok()) {
        return Some(n);
    }
    let list = var("SLURM_JOB_GPUS").or_else(|| var("GPU_DEVICE_ORDINAL"))?;
    Some(list.split(',').filter(|s| !s.trim().is_empty()).count() as u64).filter(|&n| n > 0)
}

/// Tasks on node `node` from Slurm's compressed list, e.g. `8(x2),4`: 8 tasks on nodes 0 and 1, 4 on node 2.
fn tasks_on_node(spec: &str, node: u64) -> Option<u64> {
    let mut first = 0u64;
    for part in spec.split(',') {
        let (tasks, repeat) = match part.split_once("(x") {
            Some((t, r)) => (t.trim().parse::<u64>().ok()?, r.trim_end_matches(')').parse::<u64>().ok()?),
            None => (part.trim().parse::<u64>().ok()?, 1),
        };
        if node < first + repeat {
            return Some(tasks);
        }
        first += repeat;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake system: files under a temporary root, and an environment.
    fn system(files: &[(&str, &str)], env: &[(&str, &str)]) -> (tempfile::TempDir, System) {
        let root = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = root.path().join(path.trim_start_matches('/'));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let sys = System { root: root.path().to_path_buf(), env };
        (root, sys)
    }

    const GIB: u64 = 1 << 30;
    const MEMINFO: &str = "MemTotal: 527000000 kB\nMemFree: 1 kB\nMemAvailable: 500000000 kB\n";

    #[test]
    fn a_cgroup_v2_limit_binds_below_meminfo_and_counts_what_is_in_use() {
        // Slurm's cgroup/v2 layout: the job holds the limit, the step below it does not.
        let job = "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_77";
        let (_root, sys) = system(
            &[
                ("/proc/meminfo", MEMINFO),
                ("/proc/self/cgroup", "0::/system.slice/slurmstepd.scope/job_77/step_0/user/task_0\n"),
                ("/proc/self/mountinfo", "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n"),
                (&format!("{job}/memory.max"), &format!("{}\n", 60 * GIB)),
                (&format!("{job}/memory.current"), &format!("{}\n", 12 * GIB)),
                (&format!("{job}/memory.stat"), &format!("anon 1\ninactive_file {}\n", 2 * GIB)),
                (&format!("{job}/step_0/memory.max"), "max\n"),
                ("/sys/fs/cgroup/memory.max", "max\n"),
            ],
            &[],
        );
        let memory = sys.memory();
        assert_eq!(memory.figures.len(), 2, "{memory:?}");
        let binding = memory.available().unwrap();
        // 60 GiB limit, 12 GiB in use of which 2 GiB are reclaimable file pages: 50 GiB left.
        assert_eq!(binding.available_bytes, 50 * GIB);
        assert!(binding.source.starts_with(&format!("cgroup v2 memory.max of {job} (60.0 GiB limit")), "{binding:?}");
        assert!(binding.source.contains("10.0 GiB in use"), "{binding:?}");
    }

    #[test]
    fn a_cgroup_v1_limit_is_found_through_its_mount_and_no_limit_is_ignored() {
        let dir = "/sys/fs/cgroup/memory/slurm/uid_1/job_5/step_batch";
        let mounts = "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
                      32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n";
        let (_root, sys) = system(
            &[
                ("/proc/meminfo", MEMINFO),
                ("/proc/self/cgroup", "5:cpu,cpuacct:/\n4:memory:/slurm/uid_1/job_5/step_batch\n0::/\n"),
                ("/proc/self/mountinfo", mounts),
                (&format!("{dir}/memory.limit_in_bytes"), "9223372036854771712\n"),
                ("/sys/fs/cgroup/memory/slurm/uid_1/job_5/memory.limit_in_bytes", &format!("{}\n", 8 * GIB)),
                ("/sys/fs/cgroup/memory/slurm/uid_1/job_5/memory.usage_in_bytes", &format!("{}\n", GIB)),
            ],
            &[],
        );
        let memory = sys.memory();
        let binding = memory.available().unwrap();
        assert_eq!(binding.available_bytes, 7 * GIB, "{memory:?}");
        assert!(binding.source.contains("cgroup v1 memory.limit_in_bytes of /sys/fs/cgroup/memory/slurm/uid_1/job_5"));
        // No v2 mount: the `0::/` line alone adds nothing.
        assert_eq!(memory.figures.len(), 2, "{memory:?}");
    }

    #[test]
    fn a_container_mount_shows_a_sub_tree_of_the_hierarchy() {
        // The mount's root is /docker/abc, shown at /sys/fs/cgroup: the process's /docker/abc is the mount point.
        let (_root, sys) = system(
            &[
                ("/proc/self/cgroup", "0::/docker/abc\n"),
                ("/proc/self/mountinfo", "40 30 0:40 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"),
                ("/sys/fs/cgroup/memory.max", &format!("{}\n", 4 * GIB)),
            ],
            &[],
        );
        let figure = sys.memory().available().cloned().unwrap();
        assert_eq!(figure.available_bytes, 4 * GIB);
        assert!(figure.source.contains("of /sys/fs/cgroup (4.0 GiB limit, usage unknown)"), "{figure:?}");
    }

    #[test]
    fn slurm_allocations_are_shared_by_the_tasks_of_the_step_on_the_node() {
        let figure = |env: &[(&str, &str)]| {
            let (_root, sys) = system(&[], env);
            sys.memory().available().cloned()
        };
        assert_eq!(figure(&[]), None);
        let per_node = figure(&[("SLURM_MEM_PER_NODE", "4096")]).unwrap();
        assert_eq!(per_node.available_bytes, 4 * GIB);
        // 60 GiB per GPU, 8 GPUs, 8 tasks in the step on node 1 of "8(x2)".
        let per_gpu = figure(&[
            ("SLURM_MEM_PER_GPU", "61440"),
            ("SLURM_GPUS_ON_NODE", "8"),
            ("SLURM_STEP_TASKS_PER_NODE", "8(x2)"),
            ("SLURM_TASKS_PER_NODE", "1(x2)"),
            ("SLURM_NODEID", "1"),
        ])
        .unwrap();
        assert_eq!(per_gpu.available_bytes, 60 * GIB);
        assert!(per_gpu.source.contains("SLURM_MEM_PER_GPU=61440 MiB x 8 GPU(s)"), "{per_gpu:?}");
        assert!(per_gpu.source.contains("shared by 8 task(s)"), "{per_gpu:?}");
        let per_cpu =
            figure(&[("SLURM_MEM_PER_CPU", "1000"), ("SLURM_CPUS_ON_NODE", "7"), ("SLURM_TASKS_PER_NODE", "1")])
                .unwrap();
        assert_eq!(per_cpu.available_bytes, 7000 << 20);
        // GPUs counted from the job's list when the count is not given.
        let listed = figure(&[("SLURM_MEM_PER_GPU", "1024"), ("SLURM_JOB_GPUS", "4,5")]).unwrap();
        assert_eq!(listed.available_bytes, 2 * GIB);
    }

    #[test]
    fn the_smallest_figure_binds() {
        let (_root, sys) = system(&[("/proc/meminfo", MEMINFO)], &[("SLURM_MEM_PER_NODE", "1024")]);
        let memory = sys.memory();
        assert_eq!(memory.figures.len(), 2);
        assert_eq!(memory.available().unwrap().available_bytes, GIB);
        let (_root, sys) = system(&[("/proc/meminfo", "MemAvailable: 1024 kB\n")], &[("SLURM_MEM_PER_NODE", "1024")]);
        assert_eq!(sys.memory().available().unwrap().source, "MemAvailable in /proc/meminfo");
    }

    #[test]
    fn task_lists_expand_slurms_repeat_counts() {
        let cases = [("8", 0, Some(8)), ("8(x2),4", 1, Some(8)), ("8(x2),4", 2, Some(4)), ("8(x2),4", 3, None)];
        for (spec, node, want) in cases {
            assert_eq!(tasks_on_node(spec, node), want, "{spec} node {node}");
        }
        assert_eq!(tasks_on_node("x", 0), None);
        assert_eq!(limit_bytes("max\n"), None);
        assert_eq!(limit_bytes("9223372036854771712\n"), None);
        assert_eq!(limit_bytes("1024\n"), Some(1024));
        assert_eq!(mem_available("MemAvailable:    2048 kB\n"), Some(2 << 20));
    }

    #[test]
    fn placement_records_affinity_gpu_variables_and_slurm() {
        let (_root, sys) = system(
            &[("/proc/self/status", "Name: suite\nCpus_allowed:\tfe000000000000\nCpus_allowed_list:\t49-55\n")],
            &[
                ("ROCR_VISIBLE_DEVICES", "0"),
                ("SLURM_JOB_PARTITION", "small-g"),
                ("SLURMD_NODENAME", "nid005012"),
                ("SLURM_PROCID", "0"),
                ("SLURM_LOCALID", "0"),
                ("SLURM_RESTART_COUNT", "1"),
                ("PATH", "/bin"),
            ],
        );
        let p = sys.placement();
        assert_eq!(p.cpus_allowed.as_deref(), Some("49-55"));
        assert_eq!(p.cpu_mask.as_deref(), Some("fe000000000000"));
        assert_eq!(p.gpu_variables, BTreeMap::from([("ROCR_VISIBLE_DEVICES".to_string(), "0".to_string())]));
        assert_eq!(p.summary(), "CPUs 49-55; ROCR_VISIBLE_DEVICES=0; small-g on nid005012, task 0/0, requeued 1x");
        assert_eq!(Placement::default().summary(), "not recorded");
    }

    #[test]
    fn the_live_system_reads_without_failing() {
        // Whatever this machine is, its meminfo and status are readable on Linux.
        let live = System::live();
        assert!(live.memory().figures.iter().any(|f| f.source == "MemAvailable in /proc/meminfo"));
        assert!(live.placement().cpus_allowed.is_some());
    }
}
