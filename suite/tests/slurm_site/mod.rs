//! The real-Slurm test site shared by the job-script tests (`slurm.rs`, `slurm_folders.rs`): a cluster of its own
//! (`scripts/slurm-test-cluster.sh`), a scratch checkout whose `scripts/` is the repository's, LUMI's `module`, and a
//! `suite` that sends `run` to the test double `examples/slurm_task_double.rs` (see `slurm.rs`).
#![allow(dead_code)] // each test file uses a part of it

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// A Slurm cluster of its own, stopped (with whatever runs on it) when dropped.
pub struct Cluster {
    pub dir: PathBuf,
    pub conf: PathBuf,
}

pub fn harness() -> PathBuf {
    suite::test_deps::crate_path("../scripts/slurm-test-cluster.sh")
}

impl Cluster {
    pub fn up(dir: &Path, nodes: usize) -> Cluster {
        // The path the harness marks the cluster's processes with (it resolves links): the same one here.
        std::fs::create_dir_all(dir).expect("the cluster's folder");
        let dir = &dir.canonicalize().expect("the cluster's folder");
        let out = Command::new(harness())
            .args(["up", &dir.display().to_string(), &nodes.to_string()])
            .output()
            .expect("scripts/slurm-test-cluster.sh runs");
        // The cluster is stopped by Drop from here on, even when starting it failed halfway.
        let cluster = Cluster { dir: dir.into(), conf: dir.join("slurm.conf") };
        assert!(
            out.status.success(),
            "the Slurm test cluster did not start:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        cluster
    }

    /// A Slurm client command for this cluster, bounded in time.
    pub fn client(&self, program: &str, args: &[&str]) -> Output {
        Command::new("timeout")
            .arg("30")
            .arg(program)
            .args(args)
            .env("SLURM_CONF", &self.conf)
            .output()
            .unwrap_or_else(|e| panic!("{program}: {e}"))
    }

    /// `scontrol show job` as key → value.
    pub fn job(&self, id: u32) -> BTreeMap<String, String> {
        let out = self.client("scontrol", &["show", "job", "-o", &id.to_string()]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.split_whitespace()
            .filter_map(|pair| pair.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// The slurmctld log's last lines, for a failure message.
    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.join("log/slurmctld.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        match Command::new(harness()).args(["down", &self.dir.display().to_string()]).output() {
            Ok(out) if out.status.success() => {}
            Ok(out) => eprintln!("stopping the Slurm test cluster: {}", String::from_utf8_lossy(&out.stderr)),
            Err(e) => eprintln!("stopping the Slurm test cluster: {e}"),
        }
    }
}

/// Where a test submits from: a scratch checkout (`scripts/` is the repository's) with the LUMI-only pieces, a
/// cluster, and the log of every point the double measured.
pub struct Site {
    pub cluster: Cluster,
    pub repo: PathBuf,
    pub bin: PathBuf,
    pub measured: PathBuf,
    pub modules: PathBuf,
    pub _tmp: tempfile::TempDir,
}

/// A submitted job.
pub struct Job {
    pub id: u32,
}

/// Slurm's states of a job that has ended.
pub const ENDED: [&str; 7] = ["COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL"];

pub fn double_binary() -> PathBuf {
    // target/<profile>/deps/<this test> → target/<profile>/examples/slurm_task_double
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile = exe.parent().and_then(Path::parent).expect("the test binary lies in target/<profile>/deps");
    let double = profile.join("examples/slurm_task_double");
    assert!(
        double.is_file(),
        "the test double {} is missing: `cargo test` builds it with the other targets; alone: cargo build --example \
         slurm_task_double",
        double.display()
    );
    double
}

pub fn site(nodes: usize) -> Site {
    let tmp = tempfile::tempdir().expect("a scratch folder");
    let repo = tmp.path().join("repo");
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::create_dir_all(&bin).unwrap();
    let scripts = suite::test_deps::crate_path("../scripts").canonicalize().expect("the repository's scripts/");
    std::os::unix::fs::symlink(&scripts, repo.join("scripts")).unwrap();
    let modules = tmp.path().join("modules.log");
    let measured = tmp.path().join("measured.log");
    // LUMI's `module` (Lmod) is not here: this one records what the scripts load.
    write_executable(&bin.join("module"), &format!("#!/usr/bin/env bash\necho \"$*\" >>'{}'\n", modules.display()));
    // `suite` as the scripts see it: `run` (after the global options) goes to the test double, the rest to the real
    // binary.
    let wrapper = format!(
        r#"#!/usr/bin/env bash
# The Slurm tests' suite: `run` goes to the test double (no GPU here), every other command to the real suite.
args=("$@")
i=0
while [ "$i" -lt $# ]; do
    case ${{args[i]}} in
    --platform | --device | --kernels-dir) i=$((i + 2)) ;;
    --*) i=$((i + 1)) ;;
    *) break ;;
    esac
done
dry_run=""
for arg in "$@"; do [ "$arg" != --dry-run ] || dry_run=1; done
# A dry run needs no GPU: the real suite plans it (and checks its arguments and folder).
if [ "${{args[i]:-}}" = run ] && [ -z "$dry_run" ]; then exec '{double}' "$@"; fi
# A test may hold `suite merge` for a moment, to signal the job while it merges.
if [ "${{args[i]:-}}" = merge ] && [ -n "${{SUITE_TEST_MERGE_PAUSE:-}}" ]; then
    touch "$SUITE_TEST_MERGE_STARTED"
    sleep "$SUITE_TEST_MERGE_PAUSE"
fi
# The real suite sees no GPU, even where the tests run on a GPU machine.
export CUDA_VISIBLE_DEVICES=-1 HIP_VISIBLE_DEVICES=-1 ROCR_VISIBLE_DEVICES=-1
exec '{suite}' "$@"
"#,
        double = double_binary().display(),
        suite = env!("CARGO_BIN_EXE_suite"),
    );
    write_executable(&bin.join("suite"), &wrapper);
    // What scripts/lumi/build.sh leaves on LUMI: the folder of prebuilt code objects, which the plan at the start of
    // a job requires. Empty here: the double loads no code object (its plan says so, as approximate).
    std::fs::create_dir_all(repo.join("kernels-build")).unwrap();
    let cluster = Cluster::up(&tmp.path().join("cluster"), nodes);
    Site { cluster, repo, bin, measured, modules, _tmp: tmp }
}

pub fn write_executable(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

impl Site {
    /// Runs `command` (an `sbatch` line, as a user types it) with bash from the checkout, with the double asked
    /// for `env`; returns the job.
    pub fn submit_line(&self, command: &str, env: &[(&str, &str)]) -> Job {
        let path = format!("{}:{}", self.bin.display(), std::env::var("PATH").unwrap_or_default());
        let mut cmd = Command::new("timeout");
        cmd.args(["30", "bash", "-c", command]).current_dir(&self.repo);
        // Nothing of a Slurm job this test may itself run in, nor a folder or double setting from outside.
        for (name, _) in std::env::vars() {
            if name.starts_with("SLURM_") || name.starts_with("SBATCH_") || name.starts_with("SUITE_") {
                cmd.env_remove(name);
            }
        }
        cmd.env("PATH", path)
            .env("SLURM_CONF", &self.cluster.conf)
            // Job steps and tasks carry the cluster's marker, so stopping the cluster finds every one of them.
            .env("SUITE_SLURM_TEST_CLUSTER", &self.cluster.dir)
            .env("SUITE_BIN", self.bin.join("suite"))
            .env("SUITE_KERNELS", self.repo.join("kernels-build"))
            .env("SUITE_DOUBLE_LOG", &self.measured);
        for (name, value) in env {
            cmd.env(name, value);
        }
        let out = cmd.output().expect("bash runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let id =
            stdout.trim().strip_prefix("Submitted batch job ").and_then(|id| id.parse().ok()).unwrap_or_else(|| {
                panic!("`{command}` did not submit: {stdout}{}", String::from_utf8_lossy(&out.stderr))
            });
        Job { id }
    }

    /// Runs `command` with bash from the checkout as a user on the login node would (the cluster's client
    /// commands, the wrapper `suite`), with `env`; returns its output, whatever its status.
    pub fn shell(&self, command: &str, env: &[(&str, &str)]) -> Output {
        let path = format!("{}:{}", self.bin.display(), std::env::var("PATH").unwrap_or_default());
        let mut cmd = Command::new("timeout");
        cmd.args(["60", "bash", "-c", command]).current_dir(&self.repo);
        for (name, _) in std::env::vars() {
            if name.starts_with("SLURM_") || name.starts_with("SBATCH_") || name.starts_with("SUITE_") {
                cmd.env_remove(name);
            }
        }
        cmd.env("PATH", path)
            .env("SLURM_CONF", &self.cluster.conf)
            .env("SUITE_SLURM_TEST_CLUSTER", &self.cluster.dir)
            .env("SUITE_BIN", self.bin.join("suite"))
            .env("SUITE_KERNELS", self.repo.join("kernels-build"))
            .env("SUITE_DOUBLE_LOG", &self.measured);
        for (name, value) in env {
            cmd.env(name, value);
        }
        cmd.output().expect("bash runs")
    }

    /// Job ids Slurm knows (queued, running or recently ended).
    pub fn jobs(&self) -> Vec<String> {
        let out = self.cluster.client("squeue", &["-h", "-t", "all", "-o", "%i"]);
        String::from_utf8_lossy(&out.stdout).split_whitespace().map(str::to_string).collect()
    }

    /// `sbatch [options] scripts/lumi/<script> [args]`.
    pub fn submit(&self, options: &[&str], script: &str, args: &[&str], env: &[(&str, &str)]) -> Job {
        let mut line = vec!["sbatch".to_string()];
        line.extend(options.iter().map(|o| o.to_string()));
        line.push(format!("scripts/lumi/{script}"));
        line.extend(args.iter().map(|a| a.to_string()));
        self.submit_line(&line.join(" "), env)
    }

    /// Waits (at most `limit`) until `done` holds for the job's state; panics with the job's log otherwise.
    pub fn wait(&self, job: &Job, limit: Duration, what: &str, done: impl Fn(&BTreeMap<String, String>) -> bool) {
        let start = Instant::now();
        loop {
            let info = self.cluster.job(job.id);
            if done(&info) {
                return;
            }
            if start.elapsed() > limit {
                panic!(
                    "job {} not {what} after {limit:?}: {info:?}\n--- its output:\n{}\n--- slurmctld:\n{}",
                    job.id,
                    self.output(job),
                    self.cluster.log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    /// Waits until the job has ended; returns its state and exit code (`COMPLETED`, `0:0`).
    pub fn ended(&self, job: &Job, limit: Duration) -> (String, String) {
        self.wait(job, limit, "ended", |i| i.get("JobState").is_some_and(|s| ENDED.contains(&s.as_str())));
        let info = self.cluster.job(job.id);
        (info["JobState"].clone(), info["ExitCode"].clone())
    }

    /// The job's output file (`--output=suite-<kind>-%j.out` in the checkout).
    pub fn output(&self, job: &Job) -> String {
        let info = self.cluster.job(job.id);
        let path = info.get("StdOut").map(PathBuf::from).unwrap_or_default();
        std::fs::read_to_string(&path).unwrap_or_else(|e| format!("(no output at {}: {e})", path.display()))
    }

    /// The lines of the measured-points log for one results folder (as the script named it), split in words.
    pub fn measured_in(&self, folder: &str) -> Vec<Vec<String>> {
        let text = std::fs::read_to_string(&self.measured).unwrap_or_default();
        text.lines()
            .map(|l| l.split_whitespace().map(str::to_string).collect::<Vec<_>>())
            .filter(|w| w.first().is_some_and(|f| f == folder))
            .collect()
    }

    pub fn folder(&self, relative: &str) -> PathBuf {
        self.repo.join(relative)
    }
}

/// `key` of every complete row of a CSV written by the suite.
pub fn keys(csv: &Path) -> Vec<String> {
    suite::report::csv::read_rows(csv)
        .unwrap_or_else(|e| panic!("{}: {e}", csv.display()))
        .into_iter()
        .map(|r| r["key"].clone())
        .collect()
}

/// The points the double runs, `SUITE_DOUBLE_POINTS` of them.
pub fn points(count: usize) -> BTreeSet<String> {
    (0..count).map(|i| format!("double-point-{i:03}")).collect()
}

/// A value of a measured-log line (`shard=0/8` → `0/8`).
pub fn field<'a>(words: &'a [String], name: &str) -> &'a str {
    words.iter().find_map(|w| w.strip_prefix(name).and_then(|v| v.strip_prefix('='))).unwrap_or("")
}

/// The continue command a job printed as its last lines (`SUITE_OUT=... sbatch ...`).
pub fn continue_command(output: &str) -> String {
    let last = output.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("").trim();
    assert!(last.starts_with("SUITE_OUT="), "the job's last line is not the command that continues it:\n{output}");
    last.to_string()
}

/// The last lines of a job given bad arguments: they name the arguments and the suite's message, once, say that
/// nothing was measured, and advise no resubmission of the same command.
pub fn assert_bad_arguments_named(output: &str, args: &str, message: &str) {
    assert_eq!(output.matches(message).count(), 1, "the suite's message, once:\n{output}");
    let last = output.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
    assert!(last.contains(&format!("bad arguments: {args}")) && last.contains("Nothing was measured."), "{output}");
    assert!(!output.contains("SUITE_OUT=") && !output.contains("a task died"), "{output}");
}

pub const MINUTE: Duration = Duration::from_secs(60);
