//! Issue 31 under a real Slurm (the site of `slurm.rs`: a cluster of its own, the real job scripts, the test double for
//! the GPU work): a job cancelled during its merge, two jobs given one folder, a refused task, jobs that cannot
//! succeed, and continuations of any geometry. Each test fails on the code before issue 31 (the closing note says
//! which claim).

mod slurm_site;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use slurm_site::*;

/// Item 1: `scancel` while a node job merges. The job ends cancelled, and its last lines say what `suite status`
/// says, `merge incomplete: run suite merge DIR`, never `done`; `suite status` says so (status 4) until `suite merge`
/// completes the folder.
#[test]
fn a_node_job_cancelled_during_its_merge_says_merge_incomplete_and_suite_merge_completes_it() {
    let site = site(1);
    let started = site._tmp.path().join("merge-started");
    let started_text = started.display().to_string();
    let env = [
        ("SUITE_DOUBLE_POINTS", "8"),
        ("SUITE_DOUBLE_SECONDS_PER_POINT", "0"),
        ("SUITE_TEST_MERGE_PAUSE", "30"),
        ("SUITE_TEST_MERGE_STARTED", started_text.as_str()),
    ];
    let job = site.submit(&[], "node.sbatch", &["smoke"], &env);
    let start = Instant::now();
    while !started.exists() {
        assert!(start.elapsed() < MINUTE, "the merge did not start:\n{}", site.output(&job));
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = site.cluster.client("scancel", &[&job.id.to_string()]);
    assert!(out.status.success(), "scancel: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(site.ended(&job, MINUTE).0, "CANCELLED", "{}", site.output(&job));
    let output = site.output(&job);
    let folder = format!("results/lumi-node-{}", job.id);
    assert!(!output.contains("done; results in"), "a cancelled merge ends `done`:\n{output}");
    assert!(output.contains(&format!("merge incomplete: run suite merge {folder}")), "{output}");
    let status = site.shell(&format!("suite status {folder}"), &[]);
    let text = String::from_utf8_lossy(&status.stdout).into_owned();
    assert_eq!(status.status.code(), Some(4), "suite status of a folder whose merge did not finish: {text}");
    assert!(text.contains(&format!("merge incomplete: run suite merge {folder}")), "{text}");
    // What the status says to run completes it.
    let merged = site.shell(&format!("suite merge {folder}"), &[]);
    assert!(merged.status.success(), "{}", String::from_utf8_lossy(&merged.stderr));
    let status = site.shell(&format!("suite status {folder}"), &[]);
    assert_eq!(status.status.code(), Some(0), "{}", String::from_utf8_lossy(&status.stdout));
    assert_eq!(keys(&site.folder(&folder).join("smoke.csv")).iter().cloned().collect::<BTreeSet<_>>(), points(8));
}

/// Items 2 and 3: two node jobs of one geometry given one `SUITE_OUT`, their tasks starting together (after both
/// jobs' plans passed). One job owns the folder from its first write: it measures every point; the other's tasks
/// are refused before measuring, naming the owner (job id, host, since), and that job's last line says it was
/// refused and measured nothing, not that a task died, with no continuation to run.
#[test]
fn two_node_jobs_on_one_folder_one_owns_it_and_the_other_is_refused_as_such() {
    let site = site(2);
    let go = site._tmp.path().join("go");
    let go_text = go.display().to_string();
    let env = [
        ("SUITE_DOUBLE_POINTS", "16"),
        ("SUITE_DOUBLE_SECONDS_PER_POINT", "0.2"),
        ("SUITE_OUT", "results/shared"),
        ("SUITE_DOUBLE_START_AFTER", go_text.as_str()),
    ];
    let a = site.submit(&[], "node.sbatch", &["smoke"], &env);
    let b = site.submit(&[], "node.sbatch", &["smoke"], &env);
    let start = Instant::now();
    while ![&a, &b].iter().all(|j| site.output(j).contains("results folder results/shared: ")) {
        assert!(start.elapsed() < MINUTE, "both plans did not pass:\n{}\n{}", site.output(&a), site.output(&b));
        std::thread::sleep(Duration::from_millis(200));
    }
    std::fs::write(&go, b"").unwrap();
    let states = [site.ended(&a, 2 * MINUTE), site.ended(&b, 2 * MINUTE)];
    let measured = site.measured_in("results/shared");
    let jobs: BTreeSet<&str> = measured.iter().map(|w| field(w, "job")).collect();
    assert_eq!(jobs.len(), 1, "one job owns the folder; these measured in it: {jobs:?}\n{measured:?}");
    let owner = if jobs.contains(a.id.to_string().as_str()) { &a } else { &b };
    let other = if owner.id == a.id { &b } else { &a };
    let (owner_state, other_state) = if owner.id == a.id { (&states[0], &states[1]) } else { (&states[1], &states[0]) };
    assert_eq!(owner_state, &("COMPLETED".to_string(), "0:0".to_string()), "{}", site.output(owner));
    assert_eq!(measured.len(), 16, "{measured:?}");
    assert_eq!(other_state.0, "FAILED", "{}", site.output(other));
    let output = site.output(other);
    assert!(
        output.contains(&format!("results/shared belongs to Slurm job {} on host", owner.id))
            && output.contains("since"),
        "the owner is named: {output}"
    );
    let last = output.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
    assert!(last.contains("refused:") && last.contains("Nothing was measured."), "{output}");
    assert!(!output.contains("a task died") && !output.contains("a task failed"), "{output}");
    assert!(!output.contains("SUITE_OUT="), "a refused job has nothing to continue: {output}");
    assert!(suite::report::status::read(&site.folder("results/shared")).unwrap().complete());
}

/// Item 4: jobs that cannot succeed are not queued. submit.sh refuses, with nothing queued: a folder on a read-only
/// file system (status 3), a plan whose every point is invalid, a missing kernels-build/, and each sbatch option of
/// a bad form, named (status 2); a folder holding another device's or another preset's run (status 3).
#[test]
fn submit_queues_nothing_that_cannot_succeed() {
    let site = site(1);
    let env = [("SUITE_DOUBLE_POINTS", "4"), ("SUITE_DOUBLE_SECONDS_PER_POINT", "0")];
    // A read-only file system: a tmpfs mounted read-only (the tests run as root, whom permissions do not stop).
    let readonly = site.repo.join("readonly");
    std::fs::create_dir_all(&readonly).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "ro,size=64k", "tmpfs"])
        .arg(&readonly)
        .output()
        .unwrap();
    assert!(
        mounted.status.success(),
        "mounting a read-only tmpfs needs root: {}",
        String::from_utf8_lossy(&mounted.stderr)
    );
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).output();
        }
    }
    let _unmount = Unmount(readonly.clone());
    // (command, extra environment, exit status, message)
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], i32, &'a str);
    let cases: &[Case] = &[
        ("scripts/lumi/submit.sh gcd smoke", &[("SUITE_OUT", "readonly/run")], 3, "readonly/run cannot be written"),
        ("scripts/lumi/submit.sh gcd matmul --sizes 1000000000", &[], 2, "no point of this plan can run"),
        (
            "scripts/lumi/submit.sh gcd smoke",
            &[("SUITE_KERNELS", "no-kernels-build")],
            2,
            "--kernels-dir no-kernels-build: no such folder",
        ),
        (
            "scripts/lumi/submit.sh --ntasks-per-node=abc node smoke",
            &[],
            2,
            "--ntasks-per-node=abc: expected a whole number",
        ),
        ("scripts/lumi/submit.sh --nodes=0 node smoke", &[], 2, "--nodes=0: expected a whole number of at least 1"),
        ("scripts/lumi/submit.sh --time=abc gcd smoke", &[], 2, "--time=abc: expected minutes"),
        (
            "scripts/lumi/submit.sh --partition=nosuch gcd smoke",
            &[],
            2,
            "sbatch refuses the options --partition=nosuch",
        ),
    ];
    for (command, extra, code, message) in cases {
        let mut all: Vec<(&str, &str)> = env.to_vec();
        all.extend_from_slice(extra);
        let out = site.shell(command, &all);
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(*code), "{command}: {text}");
        assert!(text.contains(message) && text.contains("nothing queued"), "{command}: {text}");
        assert!(!text.contains("unbound variable"), "{text}");
        assert!(site.jobs().is_empty(), "{command}: a job was queued: {:?}", site.jobs());
    }
    // A folder with a run of smoke's whole sweep: the quick preset into it is another preset's run, refused; so is a
    // folder of another device. The same arguments continue it.
    let job = site.submit(&[], "gcd.sbatch", &["smoke"], &env);
    assert_eq!(site.ended(&job, MINUTE), ("COMPLETED".into(), "0:0".into()), "{}", site.output(&job));
    let folder = format!("results/lumi-gcd-{}", job.id);
    let into = [("SUITE_OUT", folder.as_str()), env[0], env[1]];
    let out = site.shell("scripts/lumi/submit.sh gcd smoke --sizes 1024", &into);
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "another preset: {text}");
    assert!(text.contains("refusing to add smoke rows: its options (another preset or other flags) differ"), "{text}");
    let jobs_before = site.jobs().len();
    assert_eq!(jobs_before, 1);
    let other_device = site.folder("results/other-device");
    std::fs::create_dir_all(&other_device).unwrap();
    let run = suite::report::run_json::RunJson {
        device: suite::planning::part("h100-sxm").unwrap().props(),
        invocations: vec![],
        plans: vec![],
        merges: vec![],
    };
    std::fs::write(other_device.join("run.json"), serde_json::to_string(&run).unwrap()).unwrap();
    let out = site.shell("scripts/lumi/submit.sh gcd smoke", &[("SUITE_OUT", "results/other-device"), env[0], env[1]]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "another device: {text}");
    assert!(text.contains("refusing to mix devices") && text.contains("sm_90"), "{text}");
    assert_eq!(site.jobs().len(), jobs_before, "nothing queued");
    let out = site.shell("scripts/lumi/submit.sh gcd smoke", &into);
    assert!(out.status.success(), "the same arguments continue it: {}", String::from_utf8_lossy(&out.stderr));
}

/// Item 6: continuations reproduce any geometry. Node jobs of `--nodes=2 --ntasks=12` (8 and 4: uneven per node), of
/// `--ntasks=4` alone and of `--gpus-per-task=1`, each with a failing task, print a continuation that runs as many
/// tasks with the GPUs asked for;
/// run as printed, it completes the folder, measuring each point once.
#[test]
fn continuations_of_any_geometry_run_as_printed_and_complete_the_folder() {
    let site = site(2);
    let geometries: [(&[&str], usize, &str); 3] = [
        (&["--nodes=2", "--ntasks=12"], 12, "--nodes=2 --ntasks=12"),
        (&["--ntasks=4"], 4, "--nodes=1 --ntasks=4 "),
        (&["--ntasks=8", "--gpus-per-task=1"], 8, "--gpus-per-task=1"),
    ];
    for (options, tasks, printed) in geometries {
        let env =
            [("SUITE_DOUBLE_POINTS", "24"), ("SUITE_DOUBLE_SECONDS_PER_POINT", "0"), ("SUITE_DOUBLE_FAIL", "1:0")];
        let job = site.submit(options, "node.sbatch", &["smoke"], &env);
        assert_eq!(site.ended(&job, MINUTE).0, "FAILED", "{options:?}: {}", site.output(&job));
        let output = site.output(&job);
        let command = continue_command(&output);
        assert!(command.contains(&format!("--ntasks={tasks}")) && command.contains(printed), "{options:?}: {command}");
        let next = site.submit_line(&command, &env[..2]);
        assert_eq!(site.ended(&next, MINUTE), ("COMPLETED".into(), "0:0".into()), "{command}: {}", site.output(&next));
        let folder = format!("results/lumi-node-{}", job.id);
        let dir = site.folder(&folder);
        assert_eq!(keys(&dir.join("smoke.csv")).iter().cloned().collect::<BTreeSet<_>>(), points(24));
        for i in 0..tasks {
            let expected = (i..24).step_by(tasks).count();
            assert_eq!(keys(&dir.join(format!("smoke.shard-{i}-of-{tasks}.csv"))).len(), expected, "shard {i}");
        }
        let measured = site.measured_in(&folder);
        assert_eq!(measured.len(), 24, "each point once: {measured:?}");
    }
}
