//! The LUMI job scripts (`scripts/lumi/*.sbatch`) under a real Slurm: each test starts a cluster of its own on this
//! machine (`scripts/slurm-test-cluster.sh`: Debian's slurmctld, slurmd and munged, nodes and partitions shaped like
//! LUMI-G's) and submits the real scripts with `sbatch` from a scratch checkout whose `scripts/` is the
//! repository's. What only LUMI has is supplied here: a `module` command that records what is loaded, and, for the
//! GPU work of `suite run`, the test double `examples/slurm_task_double.rs` (it parses its command line with the
//! suite's parser and writes rows and `run.json` through the suite's own code, and measures nothing). The `suite`
//! the scripts call is a wrapper that sends `run` to the double and everything else (`merge`) to the real binary.
//!
//! The cluster needs root and Slurm; without them a test fails with the reason (scripts/test.sh installs Slurm).
//! Every wait is bounded; the cluster is stopped when a test ends, passed or failed.

mod slurm_site;

use std::collections::BTreeSet;
use std::process::Command;
use std::time::{Duration, Instant};

use slurm_site::*;

/// A job requeued while it runs (as LUMI does after a node failure) runs again with the same id into the same
/// folder and measures only what the first run had not: every point once, the rows of both runs in one CSV.
#[test]
fn a_requeued_job_resumes_into_its_folder_and_measures_nothing_twice() {
    let site = site(1);
    let env = [("SUITE_DOUBLE_POINTS", "8"), ("SUITE_DOUBLE_SECONDS_PER_POINT", "1")];
    let job = site.submit(&[], "gcd.sbatch", &["smoke"], &env);
    let folder = format!("results/lumi-gcd-{}", job.id);
    let start = Instant::now();
    while site.measured_in(&folder).len() < 3 {
        assert!(start.elapsed() < MINUTE, "3 points not measured in a minute:\n{}", site.output(&job));
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = site.cluster.client("scontrol", &["requeue", &job.id.to_string()]);
    assert!(out.status.success(), "scontrol requeue: {}", String::from_utf8_lossy(&out.stderr));
    // Slurm holds a requeued job for cred_expire (10 s in the test cluster, 2 minutes by default) and then starts
    // it again by itself, as on LUMI.
    site.wait(&job, MINUTE, "pending after its requeue", |i| i.get("Restarts").is_some_and(|r| r == "1"));
    assert_eq!(site.ended(&job, 2 * MINUTE), ("COMPLETED".into(), "0:0".into()), "{}", site.output(&job));

    let csv = site.folder(&folder).join("smoke.csv");
    let rows = keys(&csv);
    assert_eq!(rows.iter().cloned().collect::<BTreeSet<_>>(), points(8), "{rows:?}");
    assert_eq!(rows.len(), 8, "a point twice in {}: {rows:?}", csv.display());
    let measured = site.measured_in(&folder);
    let first: Vec<&Vec<String>> = measured.iter().filter(|w| field(w, "restart") == "0").collect();
    let second: Vec<&Vec<String>> = measured.iter().filter(|w| field(w, "restart") == "1").collect();
    assert!(first.len() >= 3 && !second.is_empty(), "both runs measured: {measured:?}");
    let measured_keys: Vec<&String> = measured.iter().map(|w| &w[2]).collect();
    let distinct: BTreeSet<&String> = measured_keys.iter().copied().collect();
    assert_eq!(distinct.len(), measured_keys.len(), "a point measured twice: {measured:?}");
    assert_eq!(distinct.len(), 8, "{measured:?}");
    assert!(measured.iter().all(|w| field(w, "job") == job.id.to_string()), "{measured:?}");

    // Both runs' lines are in the output (--open-mode=append): the first run's end (Slurm's TERM) with the command
    // that would continue it, the second's start, and last that it is done.
    let output = site.output(&job);
    let continued = format!("SUITE_OUT={folder} sbatch scripts/lumi/gcd.sbatch smoke");
    assert!(output.contains("ended by Slurm (SIGTERM") && output.contains(&continued), "{output}");
    assert!(
        output.contains(&format!("suite-gcd {} (restart 0)", job.id))
            && output.contains(&format!("suite-gcd {} (restart 1)", job.id)),
        "{output}"
    );
    assert!(output.trim_end().ends_with(&format!("done; results in {folder}")), "{output}");
    // run.json records both invocations, with the job's id.
    let run = suite::report::run_json::read(&site.folder(&folder)).unwrap().expect("run.json");
    assert_eq!(run.invocations.len(), 2);
    assert!(run.invocations.iter().all(|i| i.slurm_job_id.as_deref() == Some(job.id.to_string().as_str())));
    // The memory asked for one GCD (LUMI's small-g default is less) and the modules loaded.
    let info = site.cluster.job(job.id);
    assert!(info["TRES"].contains("mem=60G"), "{info:?}");
    let modules = std::fs::read_to_string(&site.modules).unwrap();
    assert!(modules.lines().all(|l| l == "load LUMI/25.03 partition/G rocm/6.3.4") && !modules.is_empty());
}

/// A job that would run past its time limit stops before it (Slurm's USR1), keeps its rows, and says as its last
/// line how to continue it; that command, as printed, finishes the run in the same folder, measuring each point
/// once.
#[test]
fn a_job_past_its_time_limit_says_how_to_continue_and_the_continued_job_finishes() {
    let site = site(1);
    // 60 points of 2 s: two minutes of work in a one-minute job, warned 45 s before its end (Slurm sends it within a minute of that).
    let slow = [("SUITE_DOUBLE_POINTS", "60"), ("SUITE_DOUBLE_SECONDS_PER_POINT", "2")];
    let job = site.submit(&["--time=1", "--signal=B:USR1@45"], "gcd.sbatch", &["smoke"], &slow);
    let (state, exit) = site.ended(&job, 2 * MINUTE);
    let output = site.output(&job);
    assert_eq!((state.as_str(), exit.as_str()), ("FAILED", "1:0"), "stopped by the script, not by Slurm:\n{output}");
    assert!(output.contains("the time limit is near: stopping the step"), "{output}");
    assert!(output.contains("stopped before its time limit; the rows written are kept"), "{output}");
    let folder = format!("results/lumi-gcd-{}", job.id);
    let command = continue_command(&output);
    assert_eq!(command, format!("SUITE_OUT={folder} sbatch scripts/lumi/gcd.sbatch smoke"));
    let kept = keys(&site.folder(&folder).join("smoke.csv"));
    assert!(!kept.is_empty() && kept.len() < 60, "{kept:?}");

    let fast = [("SUITE_DOUBLE_POINTS", "60"), ("SUITE_DOUBLE_SECONDS_PER_POINT", "0.02")];
    let next = site.submit_line(&command, &fast);
    assert_eq!(site.ended(&next, MINUTE), ("COMPLETED".into(), "0:0".into()), "{}", site.output(&next));
    let rows = keys(&site.folder(&folder).join("smoke.csv"));
    assert_eq!(rows.len(), 60);
    assert_eq!(rows.iter().cloned().collect::<BTreeSet<_>>(), points(60));
    assert_eq!(rows[..kept.len()], kept[..], "the first job's rows are kept as they were");
    let measured = site.measured_in(&folder);
    let by_job = |id: u32| measured.iter().filter(|w| field(w, "job") == id.to_string()).count();
    assert_eq!((by_job(job.id), by_job(next.id)), (kept.len(), 60 - kept.len()), "{measured:?}");
    // No new folder: the continued job wrote into the first one.
    assert!(!site.folder(&format!("results/lumi-gcd-{}", next.id)).exists());
}

/// One experiment with its own flags goes through every script to `suite run <experiment> <flags>` (the suite's
/// own parser checks the command line), and a bad flag fails the job with the suite's message; `--full` passes too.
/// A script whose other command fails (dev.sbatch's `suite info` with no GPU) still ends with the continue line.
#[test]
fn an_experiment_with_its_own_flags_reaches_the_suite_through_every_script() {
    let site = site(1);
    let env = [("SUITE_DOUBLE_POINTS", "4"), ("SUITE_DOUBLE_SECONDS_PER_POINT", "0")];
    let gcd = site.submit(&[], "gcd.sbatch", &["matmul", "--sizes", "4096", "--kernels", "naive"], &env);
    let node = site.submit(&[], "node.sbatch", &["matmul", "--sizes", "4096,8192"], &env);
    let full = site.submit(&[], "gcd.sbatch", &["--full"], &env);
    let bad = site.submit(&[], "gcd.sbatch", &["matmul", "--sizes", "0"], &env);
    // dev.sbatch starts with `suite info`, the real one, which finds no GPU here.
    let dev = site.submit(&[], "dev.sbatch", &["smoke"], &env);
    for job in [&gcd, &node, &full] {
        assert_eq!(site.ended(job, MINUTE), ("COMPLETED".into(), "0:0".into()), "{}", site.output(job));
    }
    let options = |folder: &str| {
        let run = suite::report::run_json::read(&site.folder(folder)).unwrap().expect("run.json");
        run.invocations
            .iter()
            .map(|i| i.fingerprint.as_ref().expect("a fingerprint").options.clone())
            .collect::<Vec<_>>()
    };
    let gcd_folder = format!("results/lumi-gcd-{}", gcd.id);
    let recorded = options(&gcd_folder);
    assert_eq!(recorded.len(), 1);
    assert!(recorded[0].contains("4096") && recorded[0].contains("naive"), "{recorded:?}");
    let files: Vec<String> = std::fs::read_dir(site.folder(&gcd_folder))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".csv"))
        .collect();
    assert_eq!(files, ["matmul.csv"]);
    let node_folder = format!("results/lumi-node-{}", node.id);
    assert!(options(&node_folder).iter().all(|o| o.contains("8192")), "{:?}", options(&node_folder));
    assert_eq!(keys(&site.folder(&node_folder).join("matmul.csv")).len(), 4);
    // --full: every experiment, its full sweep's options.
    let full_folder = format!("results/lumi-gcd-{}", full.id);
    assert_eq!(options(&full_folder).len(), suite::experiments::registry::EXPERIMENTS.len());

    assert_eq!(site.ended(&bad, MINUTE).0, "FAILED");
    let output = site.output(&bad);
    assert_bad_arguments_named(&output, "matmul --sizes 0", "--sizes: sizes must be at least 1");

    assert_eq!(site.ended(&dev, MINUTE).0, "FAILED");
    let output = site.output(&dev);
    assert!(output.contains("no GPU visible") && output.contains("ended early: a command failed"), "{output}");
    assert_eq!(
        continue_command(&output),
        format!("SUITE_OUT=results/lumi-dev-{} sbatch scripts/lumi/dev.sbatch smoke", dev.id)
    );
}

/// A node job whose task fails still merges what every task wrote (partially, naming what is missing), fails, and
/// loses no row; the printed continue command measures the rest and merges completely.
#[test]
fn a_node_job_with_a_failing_task_merges_partially_fails_and_keeps_every_row() {
    let site = site(1);
    // Shard 1 of 8 fails after its first point (smoke's point 1), leaving its next row cut inside the key.
    let env = [("SUITE_DOUBLE_POINTS", "12"), ("SUITE_DOUBLE_SECONDS_PER_POINT", "0.05"), ("SUITE_DOUBLE_FAIL", "1:1")];
    let job = site.submit(&[], "node.sbatch", &[], &env);
    let (state, exit) = site.ended(&job, MINUTE);
    let output = site.output(&job);
    assert_eq!((state.as_str(), exit.as_str()), ("FAILED", "1:0"), "{output}");
    assert!(output.contains("task 1: Exited with exit code 1"), "{output}");
    let folder = format!("results/lumi-node-{}", job.id);
    // The merge and the last lines say how many planned points are missing, and where.
    assert!(
        output.contains(&format!("{folder}/smoke.csv: incomplete: smoke 11 of 12 points (1 of 2 in shard 1)")),
        "{output}"
    );
    assert!(
        output.contains(&format!("{folder}/matmul.csv: incomplete: matmul 10 of 12 points (0 of 2 in shard 1)")),
        "{output}"
    );
    assert!(output.contains("incomplete: smoke 11 of 12 points (1 of 2 in shard 1), matmul 10 of 12"), "{output}");
    let dir = site.folder(&folder);
    assert!(dir.join("summary.md").is_file());
    // Every complete row a task wrote is in the merged CSV, once; the cut row is not.
    for entry in suite::experiments::registry::EXPERIMENTS {
        let merged = keys(&dir.join(format!("{}.csv", entry.name)));
        let mut written = Vec::new();
        for i in 0..8 {
            let shard = dir.join(format!("{}.shard-{i}-of-8.csv", entry.name));
            if shard.exists() {
                written.extend(keys(&shard));
            }
        }
        let expected = if entry.name == "smoke" { 11 } else { 10 };
        assert_eq!(merged.len(), expected, "{}: {merged:?}", entry.name);
        assert_eq!(merged.iter().collect::<BTreeSet<_>>(), written.iter().collect::<BTreeSet<_>>(), "{}", entry.name);
        assert!(merged.iter().all(|k| points(12).contains(k)), "{}: a cut row merged: {merged:?}", entry.name);
    }
    let summary = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    let first = summary.lines().find(|l| l.starts_with("**")).unwrap_or_default();
    assert!(first.starts_with("**Incomplete: smoke 11 of 12 points"), "summary.md does not say so first:\n{summary}");
    let cut = std::fs::read_to_string(dir.join("smoke.shard-1-of-8.csv")).unwrap();
    assert!(cut.ends_with("double-point-00"), "the failing task left a cut row: {cut}");

    // Continue as the job said: the failed shard resumes, the merge is complete, the merged CSVs are made again.
    let next = site.submit_line(&continue_command(&output), &env[..2]);
    assert_eq!(site.ended(&next, MINUTE), ("COMPLETED".into(), "0:0".into()), "{}", site.output(&next));
    for entry in suite::experiments::registry::EXPERIMENTS {
        let merged = keys(&dir.join(format!("{}.csv", entry.name)));
        assert_eq!(merged.iter().cloned().collect::<BTreeSet<_>>(), points(12), "{}", entry.name);
        assert_eq!(merged.len(), 12, "{}", entry.name);
    }
    let measured = site.measured_in(&folder);
    let pairs: BTreeSet<(&String, &String)> = measured.iter().map(|w| (&w[1], &w[2])).collect();
    assert_eq!(pairs.len(), measured.len(), "a point measured twice: {measured:?}");
    assert_eq!(measured.len(), 12 * suite::experiments::registry::EXPERIMENTS.len());
}

/// Two nodes, 16 tasks: shards 0..15 of 16, tasks 0-7 on the first node and 8-15 on the second, each with its
/// node-local GCD; a continuation with another node count is refused before it measures anything.
#[test]
fn a_two_node_job_numbers_its_shards_across_the_nodes() {
    let site = site(2);
    let env = [("SUITE_DOUBLE_POINTS", "32"), ("SUITE_DOUBLE_SECONDS_PER_POINT", "0.05")];
    let job = site.submit(&["--nodes=2"], "node.sbatch", &["matmul", "--sizes", "4096"], &env);
    assert_eq!(site.ended(&job, MINUTE), ("COMPLETED".into(), "0:0".into()), "{}", site.output(&job));
    let folder = format!("results/lumi-node-{}", job.id);
    let dir = site.folder(&folder);
    for i in 0..16 {
        assert_eq!(keys(&dir.join(format!("matmul.shard-{i}-of-16.csv"))).len(), 2, "shard {i}");
    }
    assert_eq!(keys(&dir.join("matmul.csv")).iter().cloned().collect::<BTreeSet<_>>(), points(32));
    let measured = site.measured_in(&folder);
    assert_eq!(measured.len(), 32);
    for words in &measured {
        let shard: usize = field(words, "shard").split('/').next().unwrap().parse().unwrap();
        assert_eq!(field(words, "shard"), format!("{shard}/16"));
        let node = if shard < 8 { "nid001" } else { "nid002" };
        assert_eq!((field(words, "node"), field(words, "rocr")), (node, (shard % 8).to_string().as_str()));
    }
    let one_node = site.submit_line(&format!("SUITE_OUT={folder} sbatch scripts/lumi/node.sbatch matmul"), &env);
    assert_eq!(site.ended(&one_node, MINUTE).0, "FAILED");
    let output = site.output(&one_node);
    // Refused before any task starts, naming how the folder was written and the command that continues it.
    assert!(output.contains("holds a run written sharded in 16"), "{output}");
    assert!(output.contains("this run would write it sharded in 8"), "{output}");
    assert!(
        output.contains(&format!(
            "SUITE_OUT={folder} sbatch --nodes=2 --ntasks=16 --ntasks-per-node=8 --gpus-per-node=8 scripts/lumi/node.sbatch matmul"
        )),
        "{output}"
    );
    assert!(output.contains("refused:") && output.contains("Nothing was measured."), "{output}");
    assert!(!output.contains("task 0:"), "a task started: {output}");
    assert_eq!(site.measured_in(&folder).len(), 32, "nothing measured by the refused job");
}

/// Two jobs given one results folder (a user resubmitting while the first still runs): the second is refused before
/// it measures anything, naming the first job; the first completes; every point is measured once and the CSV parses.
#[test]
fn a_second_job_into_a_folder_being_written_is_refused_naming_the_first() {
    let site = site(1);
    let folder = "results/shared";
    let env = [("SUITE_OUT", folder), ("SUITE_DOUBLE_POINTS", "8"), ("SUITE_DOUBLE_SECONDS_PER_POINT", "1")];
    let first = site.submit(&[], "gcd.sbatch", &["smoke"], &env);
    let start = Instant::now();
    while site.measured_in(folder).is_empty() {
        assert!(start.elapsed() < MINUTE, "the first job measured nothing in a minute:\n{}", site.output(&first));
        std::thread::sleep(Duration::from_millis(200));
    }
    let second = site.submit(&[], "gcd.sbatch", &["smoke"], &env);
    assert_eq!(site.ended(&second, MINUTE).0, "FAILED", "{}", site.output(&second));
    let output = site.output(&second);
    // The folder belongs to the first job (its owner record), which is named with its host and since when.
    assert!(output.contains(&format!("{folder} belongs to Slurm job {} on host", first.id)), "{output}");
    assert!(output.contains("since 20"), "the owner is named: {output}");
    assert!(output.contains("refused:") && output.contains("Nothing was measured."), "{output}");
    assert_eq!(site.ended(&first, MINUTE), ("COMPLETED".into(), "0:0".into()), "{}", site.output(&first));
    let rows = keys(&site.folder(folder).join("smoke.csv"));
    assert_eq!(rows.len(), 8, "{rows:?}");
    assert_eq!(rows.iter().cloned().collect::<BTreeSet<_>>(), points(8));
    let measured = site.measured_in(folder);
    assert_eq!(measured.len(), 8, "{measured:?}");
    assert!(measured.iter().all(|w| field(w, "job") == first.id.to_string()), "the second job measured: {measured:?}");
}

/// A folder written by one process refuses a node job's shards, and a node job's folder refuses one process: before
/// anything is measured, saying how the folder was written and how to continue it.
#[test]
fn a_gcd_job_into_a_node_folder_and_the_reverse_are_refused_before_measuring() {
    let site = site(1);
    let env = [("SUITE_DOUBLE_POINTS", "4"), ("SUITE_DOUBLE_SECONDS_PER_POINT", "0")];
    let node = site.submit(&[], "node.sbatch", &["smoke"], &env);
    let gcd = site.submit(&[], "gcd.sbatch", &["smoke"], &env);
    for job in [&node, &gcd] {
        assert_eq!(site.ended(job, MINUTE), ("COMPLETED".into(), "0:0".into()), "{}", site.output(job));
    }
    let (node_folder, gcd_folder) = (format!("results/lumi-node-{}", node.id), format!("results/lumi-gcd-{}", gcd.id));
    let before = (site.measured_in(&node_folder).len(), site.measured_in(&gcd_folder).len());
    assert_eq!(before, (4, 4));

    let into_node = site.submit(&[], "gcd.sbatch", &["smoke"], &[("SUITE_OUT", &node_folder), env[0], env[1]]);
    let into_gcd = site.submit(&[], "node.sbatch", &["smoke"], &[("SUITE_OUT", &gcd_folder), env[0], env[1]]);
    for (job, found, this, how) in [
        (
            &into_node,
            "sharded in 8",
            "unsharded",
            format!(
                "SUITE_OUT={node_folder} sbatch --nodes=1 --ntasks=8 --ntasks-per-node=8 --gpus-per-node=8 \
                 scripts/lumi/node.sbatch smoke"
            ),
        ),
        (
            &into_gcd,
            "unsharded",
            "sharded in 8",
            format!("SUITE_OUT={gcd_folder} sbatch scripts/lumi/gcd.sbatch smoke"),
        ),
    ] {
        assert_eq!(site.ended(job, MINUTE).0, "FAILED", "{}", site.output(job));
        let output = site.output(job);
        assert!(output.contains(&format!("holds a run written {found}")), "{output}");
        assert!(output.contains(&format!("this run would write it {this}")), "{output}");
        assert!(output.contains(&how), "the command that continues the folder as written: {output}");
        assert!(output.contains("Nothing was measured."), "{output}");
    }
    let after = (site.measured_in(&node_folder).len(), site.measured_in(&gcd_folder).len());
    assert_eq!(after, before, "a refused job measured");
    // Neither folder gained a file of the other layout.
    assert!(!site.folder(&node_folder).join(".smoke.csv.lock").exists());
    assert!(!site.folder(&gcd_folder).join("smoke.shard-0-of-8.csv").exists());
}

/// A node job stopped by its time-limit warning mid-step: every task stops at about the same row count, so only the
/// plan tells it is incomplete. The merge, summary.md and the last lines say how many points each experiment
/// holds of how many, and the printed continuation completes it, measuring no point twice.
#[test]
fn a_node_job_stopped_by_its_time_limit_says_incomplete_and_its_continuation_completes_it() {
    let site = site(1);
    // 96 points per experiment, 12 per task, 2 s each: two minutes of work per task in a one-minute job.
    let slow = [("SUITE_DOUBLE_POINTS", "96"), ("SUITE_DOUBLE_SECONDS_PER_POINT", "2")];
    let job = site.submit(&["--time=1", "--signal=B:USR1@45"], "node.sbatch", &[], &slow);
    let (state, exit) = site.ended(&job, 2 * MINUTE);
    let output = site.output(&job);
    assert_eq!((state.as_str(), exit.as_str()), ("FAILED", "1:0"), "{output}");
    assert!(output.contains("stopped before its time limit"), "{output}");
    let folder = format!("results/lumi-node-{}", job.id);
    let dir = site.folder(&folder);
    // Every experiment is counted against its plan, the ones no task reached included.
    let status = suite::report::status::read(&dir).unwrap();
    assert!(!status.complete(), "{}", status.line());
    let names: Vec<&str> = suite::experiments::registry::names().collect();
    assert_eq!(status.experiments.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), names);
    let incomplete: Vec<String> = status.experiments.iter().filter(|e| !e.complete()).map(|e| e.counts()).collect();
    assert!(!incomplete.is_empty());
    let line = status.line();
    assert!(line.starts_with("incomplete: ") && line.contains(" of 96 points"), "{line}");
    for counts in &incomplete {
        assert!(output.contains(counts.as_str()), "the job's last lines lack `{counts}`:\n{output}");
    }
    let summary = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    let first = summary.lines().find(|l| l.starts_with("**")).unwrap_or_default();
    assert!(first.starts_with("**Incomplete: "), "summary.md does not say so first:\n{summary}");
    for counts in &incomplete {
        assert!(first.contains(counts.as_str()), "summary.md's first line lacks `{counts}`: {first}");
    }
    let kept = site.measured_in(&folder).len();
    assert!(kept > 0 && kept < 96 * names.len(), "{kept}");

    let fast = [("SUITE_DOUBLE_POINTS", "96"), ("SUITE_DOUBLE_SECONDS_PER_POINT", "0.01")];
    let next = site.submit_line(&continue_command(&output), &fast);
    assert_eq!(site.ended(&next, 2 * MINUTE), ("COMPLETED".into(), "0:0".into()), "{}", site.output(&next));
    for name in &names {
        let merged = keys(&dir.join(format!("{name}.csv")));
        assert_eq!(merged.len(), 96, "{name}");
        assert_eq!(merged.iter().cloned().collect::<BTreeSet<_>>(), points(96), "{name}");
    }
    let measured = site.measured_in(&folder);
    let pairs: BTreeSet<(&String, &String)> = measured.iter().map(|w| (&w[1], &w[2])).collect();
    assert_eq!(pairs.len(), measured.len(), "a point measured twice");
    assert_eq!(measured.len(), 96 * names.len());
    assert!(suite::report::status::read(&dir).unwrap().complete());
    // Its last lines, after the plan (which said how incomplete the folder was when it started): complete.
    let output = site.output(&next);
    let end: Vec<&str> = output.lines().rev().take(2).collect();
    assert!(end[1].contains(": complete: every planned point has a row"), "{output}");
    assert!(end[0].contains("done; results in"), "{output}");
}

/// The time-limit warning that arrives while a complete run merges: the merge finishes and the job succeeds (so
/// `afterok` dependencies start).
#[test]
fn a_time_limit_warning_during_a_complete_merge_does_not_fail_the_job() {
    let site = site(1);
    let started = site._tmp.path().join("merge-started");
    let started_text = started.display().to_string();
    let env = [
        ("SUITE_DOUBLE_POINTS", "8"),
        ("SUITE_DOUBLE_SECONDS_PER_POINT", "0"),
        ("SUITE_TEST_MERGE_PAUSE", "6"),
        ("SUITE_TEST_MERGE_STARTED", started_text.as_str()),
    ];
    let job = site.submit(&[], "node.sbatch", &["smoke"], &env);
    let start = Instant::now();
    while !started.exists() {
        assert!(start.elapsed() < MINUTE, "the merge did not start:\n{}", site.output(&job));
        std::thread::sleep(Duration::from_millis(100));
    }
    // What Slurm's --signal=B:USR1@120 sends: USR1 to the batch shell.
    let out = site.cluster.client("scancel", &["--signal=USR1", "--batch", &job.id.to_string()]);
    assert!(out.status.success(), "scancel: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(site.ended(&job, MINUTE), ("COMPLETED".into(), "0:0".into()), "{}", site.output(&job));
    let output = site.output(&job);
    assert!(output.trim_end().ends_with("summary.md first"), "{output}");
    assert!(keys(&site.folder(&format!("results/lumi-node-{}", job.id)).join("smoke.csv")).len() == 8);
}

/// A node job of 4 tasks per node that fails is continued exactly as its last line prints, with its geometry: the
/// shards split the points as before, and the run completes.
#[test]
fn the_continuation_of_a_four_task_per_node_job_runs_as_printed() {
    let site = site(1);
    let env = [("SUITE_DOUBLE_POINTS", "8"), ("SUITE_DOUBLE_SECONDS_PER_POINT", "0"), ("SUITE_DOUBLE_FAIL", "1:1")];
    let job = site.submit(&["--ntasks-per-node=4"], "node.sbatch", &["smoke"], &env);
    assert_eq!(site.ended(&job, MINUTE).0, "FAILED", "{}", site.output(&job));
    let output = site.output(&job);
    let folder = format!("results/lumi-node-{}", job.id);
    let command = continue_command(&output);
    assert_eq!(
        command,
        format!(
            "SUITE_OUT={folder} sbatch --nodes=1 --ntasks=4 --ntasks-per-node=4 --gpus-per-node=8 scripts/lumi/node.sbatch smoke"
        )
    );
    let next = site.submit_line(&command, &env[..2]);
    assert_eq!(site.ended(&next, MINUTE), ("COMPLETED".into(), "0:0".into()), "{}", site.output(&next));
    let dir = site.folder(&folder);
    assert_eq!(keys(&dir.join("smoke.csv")).iter().cloned().collect::<BTreeSet<_>>(), points(8));
    for i in 0..4 {
        assert_eq!(keys(&dir.join(format!("smoke.shard-{i}-of-4.csv"))).len(), 2, "shard {i}");
    }
    let measured = site.measured_in(&folder);
    assert_eq!(measured.len(), 8, "{measured:?}");
}

/// Bad arguments are caught on the login node by submit.sh, which queues nothing; given to sbatch directly, the job
/// names them as bad arguments once, measures nothing and does not advise submitting them again. Good arguments go
/// through submit.sh with the plan and a suggested --time printed first.
#[test]
fn bad_arguments_are_caught_before_the_queue_and_named_by_the_job() {
    let site = site(1);
    let env = [("SUITE_DOUBLE_POINTS", "4"), ("SUITE_DOUBLE_SECONDS_PER_POINT", "0")];
    for (args, message) in [
        ("gcd matmul --sizes 0", "--sizes: sizes must be at least 1"),
        ("node nosuch", "unknown experiment `nosuch`; known: smoke, matmul"),
        ("gcd.sbatch smoke --reps 0", "--reps: at least 1 timed repetition is needed"),
    ] {
        let out = site.shell(&format!("scripts/lumi/submit.sh {args}"), &env);
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args}: {text}");
        assert!(text.contains(message) && text.contains("bad arguments") && text.contains("nothing queued"), "{text}");
        assert!(site.jobs().is_empty(), "{args}: a job was queued: {:?}", site.jobs());
    }
    let bad = site.submit(&[], "node.sbatch", &["matmul", "--sizes", "0"], &env);
    assert_eq!(site.ended(&bad, MINUTE).0, "FAILED");
    let output = site.output(&bad);
    assert_bad_arguments_named(&output, "matmul --sizes 0", "--sizes: sizes must be at least 1");
    assert!(!output.contains("task 0:"), "a task started: {output}");
    assert!(site.measured_in(&format!("results/lumi-node-{}", bad.id)).is_empty());

    let out = site.shell("scripts/lumi/submit.sh gcd smoke", &env);
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("plan: smoke, 1 experiment on MI250X GCD (110 CUs)"), "{text}");
    assert!(text.contains("suggested --time=00:"), "{text}");
    let id: u32 = text
        .lines()
        .find_map(|l| l.strip_prefix("Submitted batch job "))
        .and_then(|id| id.trim().parse().ok())
        .unwrap_or_else(|| panic!("not submitted: {text}"));
    let job = Job { id };
    assert_eq!(site.ended(&job, MINUTE), ("COMPLETED".into(), "0:0".into()), "{}", site.output(&job));
    // The job printed the same plan when it started.
    assert!(site.output(&job).contains("plan: smoke, 1 experiment on MI250X GCD (110 CUs)"), "{}", site.output(&job));
}

/// `scripts/slurm-test-cluster.sh down` ends the cluster's processes and no others: not its caller, nor a process
/// that inherited the cluster's marker from a shell that used the cluster.
#[test]
fn stopping_the_test_cluster_spares_its_caller_and_processes_outside_its_jobs() {
    let site = site(1);
    let env = [("SUITE_DOUBLE_POINTS", "60"), ("SUITE_DOUBLE_SECONDS_PER_POINT", "1")];
    let job = site.submit(&[], "gcd.sbatch", &["smoke"], &env);
    site.wait(&job, MINUTE, "running", |i| i.get("JobState").is_some_and(|s| s == "RUNNING"));
    let marker = format!("SUITE_SLURM_TEST_CLUSTER={}", site.cluster.dir.display());
    // A process of a user's shell that used the cluster: it carries the marker, but is not Slurm's.
    let mut bystander = Command::new("bash")
        .args(["-c", "sleep 120"])
        .env("SUITE_SLURM_TEST_CLUSTER", &site.cluster.dir)
        .spawn()
        .unwrap();
    // `down`, run from a shell carrying the marker, as such a user would.
    let out = Command::new("timeout")
        .args([
            "60",
            "bash",
            "-c",
            &format!("{} down {}; echo \"caller survived: $?\"", harness().display(), site.cluster.dir.display()),
        ])
        .env("SUITE_SLURM_TEST_CLUSTER", &site.cluster.dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && text.contains("caller survived: 0"), "{marker}: {text}");
    assert!(bystander.try_wait().unwrap().is_none(), "the bystander was killed: {text}");
    bystander.kill().unwrap();
    let _ = bystander.wait();
    // The job's processes are gone: nothing else carries the marker with a Slurm job id.
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read(e.path().join("environ")).ok().map(|env| (e.file_name(), env)))
        .filter(|(_, env)| {
            let vars: Vec<&[u8]> = env.split(|b| *b == 0).collect();
            vars.contains(&marker.as_bytes()) && vars.iter().any(|v| v.starts_with(b"SLURM_JOB_ID="))
        })
        .map(|(pid, _)| pid.to_string_lossy().into_owned())
        .collect();
    assert!(left.is_empty(), "job processes left: {left:?}");
}
