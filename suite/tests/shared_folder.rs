//! Issue 31, item 8: a results folder (or cache, or Rust's folder) that other members of a project group can write
//! into must not be turned against its user. Each test plants what another member could (a link under a name the
//! suite writes, a recorded command with terminal escapes, a group-writable folder on PATH) and checks that the suite
//! neither writes through it nor prints or runs it.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;

fn suite() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_suite"));
    cmd.env("CUDA_VISIBLE_DEVICES", "-1").env("HIP_VISIBLE_DEVICES", "-1");
    cmd
}

/// A file another member cares about, and a link to it planted in the results folder under `name`.
fn planted(dir: &Path, name: &str) -> std::path::PathBuf {
    let victim = dir.join(format!("victim-of-{}", name.trim_start_matches('.')));
    std::fs::write(&victim, "precious").unwrap();
    symlink(&victim, dir.join(name)).unwrap();
    victim
}

fn assert_untouched(victim: &Path) {
    assert_eq!(std::fs::read_to_string(victim).unwrap(), "precious", "{} was written through a link", victim.display());
}

/// `suite merge` takes the folder's lock first: a link planted as `.suite-writer.lock` must not have the file it
/// points to cut and overwritten with the lock's record.
#[test]
fn a_link_planted_as_the_folders_lock_is_not_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let victim = planted(dir.path(), ".suite-writer.lock");
    let out = suite().arg("merge").arg(dir.path()).output().unwrap();
    assert_untouched(&victim);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("a symbolic link"), "{stderr}");
}

/// CSVs, whole-file writes (summary.md, the counter table) and their temporary files: never through a link, dangling
/// or not.
#[test]
fn results_files_are_never_written_through_a_planted_link() {
    use suite::report::csv::{header, Context, CsvLog};
    let dir = tempfile::tempdir().unwrap();
    let context = Context {
        experiment: "smoke".into(),
        platform: "amd".into(),
        device: "d".into(),
        arch: "gfx90a".into(),
        wave_size: 64,
    };
    let columns = header(&["n"], "gbps");
    // A dangling link: a writer following it would create the file where the planter chose.
    symlink(dir.path().join("made-by-the-suite"), dir.path().join("smoke.csv")).unwrap();
    assert!(CsvLog::open(&dir.path().join("smoke.csv"), context.clone(), &columns, false).is_err());
    assert!(!dir.path().join("made-by-the-suite").exists(), "a CSV was created through a dangling link");
    let victim = planted(dir.path(), "pt.csv");
    let e = CsvLog::open(&dir.path().join("pt.csv"), context, &columns, true).err().expect("refused");
    assert!(e.to_string().contains("a symbolic link"), "{e}");
    assert_untouched(&victim);
    let victim = planted(dir.path(), "summary.md");
    assert!(suite::report::summary::write(&dir.path().join("summary.md"), "# summary\n").is_err());
    assert_untouched(&victim);
    let victim = planted(dir.path(), ".counters.csv.tmp");
    let _ = suite::counters::table::write(dir.path(), &[]);
    assert_untouched(&victim);
    let victim = planted(dir.path(), "phases.csv");
    let e = suite::report::csv::append_shared_row(&dir.path().join("phases.csv"), &["a".into()], &["1".into()]);
    assert!(e.is_err());
    assert_untouched(&victim);
}

/// `suite status` prints a folder's recorded continuation: control characters in it (terminal escapes another
/// member wrote into run.json) are shown, not sent to the terminal.
#[test]
fn status_prints_a_recorded_command_without_its_control_characters() {
    use suite::report::folder::ResultsFolder;
    use suite::report::lock::Wait;
    use suite::report::run_json::{Plan, PlannedExperiment};
    let dir = tempfile::tempdir().unwrap();
    let device = suite::planning::part("h100-sxm").unwrap().props();
    let plan = Plan {
        date: "2026-11-25T10:00:00Z".into(),
        host: "nid001".into(),
        command: vec![],
        shard: None,
        slurm: None,
        continue_with: "SUITE_OUT=r sbatch x.sbatch\u{1b}]0;owned\u{7}\u{1b}[2J\rrm -rf ~".into(),
        experiments: vec![PlannedExperiment { name: "smoke".into(), sweep_points: 4, points: 4 }],
    };
    ResultsFolder::take(dir.path(), None, "suite run", Wait::No).unwrap().record_plan(&device, plan).unwrap();
    let out = suite().arg("status").arg(dir.path()).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(4), "{stdout}");
    assert!(stdout.contains("continue with: SUITE_OUT=r sbatch x.sbatch"), "{stdout}");
    assert!(!stdout.chars().any(|c| c.is_control() && c != '\n'), "control characters printed: {stdout:?}");
}

/// `scripts/lumi/env.sh` puts cargo's bin folder ahead of the system's PATH only when no one else can write it (or
/// a folder above it): a folder another member created first, or one open to the group, is refused.
#[test]
fn env_sh_puts_nothing_writable_by_others_ahead_of_the_system_path() {
    let scripts = suite::test_deps::crate_path("../scripts/lumi/env.sh");
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    // LUMI's `module` is not here.
    std::fs::write(bin.join("module"), "#!/bin/sh\nexit 0\n").unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(bin.join("module"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let source = |rust_home: &Path| {
        let out = Command::new("bash")
            .args(["-c", &format!("source {} && echo \"PATH=$PATH\"", scripts.display())])
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .env("SUITE_RUST_HOME", rust_home)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
        )
    };
    let make = |name: &str, mode: u32| {
        let home = tmp.path().join(name).join("rust");
        std::fs::create_dir_all(home.join("cargo/bin")).unwrap();
        for dir in [home.parent().unwrap().to_path_buf(), home.clone(), home.join("cargo"), home.join("cargo/bin")] {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        }
        std::fs::set_permissions(home.join("cargo/bin"), std::fs::Permissions::from_mode(mode)).unwrap();
        home
    };
    let private = make("private", 0o700);
    let (ok, text) = source(&private);
    assert!(ok && text.contains(&format!("PATH={}/cargo/bin:", private.display())), "{text}");
    let open = make("open", 0o777);
    let (ok, text) = source(&open);
    assert!(!ok, "a group-writable bin folder was put on PATH: {text}");
    assert!(text.contains("refusing to put") && text.contains(&format!("{}/cargo/bin", open.display())), "{text}");
    // A folder another member created first (here: given to nobody; only root can, as the test command runs).
    let theirs = make("theirs", 0o700);
    std::os::unix::fs::chown(theirs.parent().unwrap(), Some(65534), None).unwrap();
    let (ok, text) = source(&theirs);
    assert!(!ok && text.contains("is another user's or writable by others"), "{text}");
}
