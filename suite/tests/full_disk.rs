//! Issue 31, item 5: a full file system. Each test mounts a small tmpfs of its own (a real file system with a size
//! limit, so the kernel itself answers ENOSPC), which needs root, as the test command runs; elsewhere the test fails
//! saying so. The mount is removed when the test ends, passed or failed.

use std::path::{Path, PathBuf};
use std::process::Command;

use suite::report::csv::{complete_len, header, Context, CsvLog, Row, Status};

/// A tmpfs of `size` mounted on a fresh folder, unmounted when dropped.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn new(size: &str) -> SmallDisk {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .expect("mount runs");
        assert!(
            out.status.success(),
            "this test mounts a small tmpfs to fill it, which needs root (the test command runs as root): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        SmallDisk { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Makes the file system `size` large (its files kept).
    fn resize(&self, size: &str) {
        let out =
            Command::new("mount").args(["-o", &format!("remount,size={size}")]).arg(self.path()).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }

    /// Fills the file system with a file of its own until it is full.
    fn fill(&self) -> PathBuf {
        use std::io::Write as _;
        let filler = self.path().join("filler");
        let mut f = std::fs::File::create(&filler).unwrap();
        while f.write_all(&[0u8; 512]).is_ok() {}
        while f.write_all(&[0u8; 1]).is_ok() {}
        filler
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.path()).output();
    }
}

fn context() -> Context {
    Context {
        experiment: "smoke".into(),
        platform: "nvidia".into(),
        device: "Test GPU, with a comma".into(),
        arch: "sm_90".into(),
        wave_size: 32,
    }
}

fn row(key: &str) -> Row {
    Row {
        params: vec!["1024".into(), "256".into()],
        reps: 3,
        launches_per_rep: 40,
        timing: "graph".into(),
        l2_resident: Some(true),
        flop_count: Some(2.0),
        byte_count: Some(12.0),
        time_ms: Some((1.5, 1.0, 2.0)),
        rate: Some(8.0),
        max_rel_err: Some(0.0),
        tolerance: Some(1e-6),
        telemetry: None,
        status: Status::Ok,
        message: "a message long enough that a row spans many bytes, so the disk fills inside one".repeat(4),
        key: key.into(),
    }
}

/// Rows are all-or-nothing: the row that does not fit is cut back, so the file ends at its last whole row; the
/// append fails with the OS error; and once there is room again, a resumed run goes on from there.
#[test]
fn a_row_that_does_not_fit_on_the_disk_is_cut_back_and_the_folder_resumes() {
    let disk = SmallDisk::new("64k");
    let path = disk.path().join("smoke.csv");
    let columns = header(&["n", "group_size"], "gbps");
    let mut log = CsvLog::open(&path, context(), &columns, false).unwrap();
    let mut written = 0;
    let error = loop {
        match log.append(&row(&format!("k{written:04}"))) {
            Ok(()) => written += 1,
            Err(e) => break e,
        }
        assert!(written < 10_000, "a 64 KiB file system never filled");
    };
    drop(log);
    let text = error.to_string();
    assert!(text.contains("No space left on device"), "the OS error: {text}");
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(
        complete_len(&bytes),
        bytes.len(),
        "the file ends at its last whole row: {:?}",
        &bytes[bytes.len() - 60..]
    );
    assert!(bytes.ends_with(b"\n"));
    let keys: Vec<String> =
        suite::report::csv::read_rows(&path).unwrap().into_iter().map(|r| r["key"].clone()).collect();
    assert_eq!(keys.len(), written, "every row appended is whole, and only those");
    // The folder stays resumable: with room again, the run continues after the last whole row.
    disk.resize("1m");
    let mut log = CsvLog::open(&path, context(), &columns, true).unwrap();
    assert_eq!(log.done_count(), written);
    log.append(&row("after")).unwrap();
    drop(log);
    let rows = suite::report::csv::read_rows(&path).unwrap();
    assert_eq!(rows.len(), written + 1);
    assert_eq!(rows.last().unwrap()["key"], "after");
}

/// A merge on a full disk says so, naming the file system, and leaves the folder as it was.
#[test]
fn a_merge_on_a_full_disk_names_the_disk() {
    use suite::report::folder::ResultsFolder;
    use suite::report::lock::Wait;
    use suite::report::run_json::{Fingerprint, Invocation, PlannedExperiment};
    let disk = SmallDisk::new("256k");
    let dir = disk.path().join("results");
    let device = suite::planning::part("h100-sxm").unwrap().props();
    let results = suite::experiments::registry::find("smoke").unwrap().results;
    let columns = header(results.param_columns(), results.metric().column);
    for index in 0..2 {
        let shard = suite::options::Shard { index, count: 2 };
        let planned = PlannedExperiment { name: "smoke".into(), sweep_points: 40, points: 20 };
        let mut folder = ResultsFolder::take(&dir, Some(shard), "suite run", Wait::No).unwrap();
        folder.record_plan(&device, suite::experiments::plan_record(&dir, Some(shard), vec![planned])).unwrap();
        let mut invocation = Invocation::now(serde_json::json!({}), Some(shard.to_string()));
        invocation.experiment = "smoke".into();
        invocation.fingerprint = Some(Fingerprint::new(&serde_json::json!({}), &["smoke"], &[], &device, &columns));
        let context = Context { experiment: "smoke".into(), ..context() };
        let mut writer = folder.begin(&device, invocation, context, &columns, false).unwrap();
        for point in (index..40).step_by(2) {
            let mut r = row(&format!("p{point}"));
            r.params = vec!["1".into(); results.param_columns().len()];
            r.status = Status::Invalid;
            writer.row(&r).unwrap();
        }
    }
    let before: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    let filler = disk.fill();
    let out = Command::new(env!("CARGO_BIN_EXE_suite")).args(["merge"]).arg(&dir).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("No space left on device"), "{stderr}");
    let mount = disk.path().canonicalize().unwrap();
    assert!(
        stderr.contains(&format!("tmpfs mounted at {}", mount.display())) && stderr.contains("is full"),
        "the merge names the disk: {stderr}"
    );
    assert!(!stderr.contains("records no run that wrote it"), "{stderr}");
    std::fs::remove_file(filler).unwrap();
    let after: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    // The locks the merge took (the folder's, its owner record's) are left, empty, as every lock is; nothing else was
    // added.
    let mut sorted = (before, after.into_iter().filter(|n| !n.ends_with(".lock")).collect::<Vec<_>>());
    sorted.0.retain(|n| !n.ends_with(".lock"));
    sorted.0.sort();
    sorted.1.sort();
    assert_eq!(sorted.0, sorted.1, "no file left behind");
}
