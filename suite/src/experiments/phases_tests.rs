//! A whole run on a CPU, with a test double for the device and the experiment, to check where the runner says its
//! time went: every phase named, the phases of each point within its wall time, run.json's record and the rows of
//! `phases.csv`.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use super::tests::{fake, run_in_own_folder, short_run_into, Capture, FakeDevice};
use super::*;
use crate::gpu::Gpu;
use crate::phases::{csv_columns, Phase, PHASES_CSV, POINT_PHASES};
use crate::report::run_json;

/// Host time each step of the test double's points spends, ms: long against the clock's resolution and the runner's
/// own bookkeeping, so each phase is seen where it is spent.
const PREPARE_MS: u64 = 4;
const VERIFY_MS: u64 = 3;
const LAUNCH_MS: u64 = 1;

/// The read side of the test double: one parameter column.
struct PhasedResults;

impl Results for PhasedResults {
    fn name(&self) -> &'static str {
        "phased"
    }
    fn param_columns(&self) -> &'static [&'static str] {
        &["n"]
    }
    fn metric(&self) -> Metric {
        Metric { column: "gbps", formula: "test double" }
    }
}

/// An experiment of `points` points whose cases sleep in `prepare`, `launch` and `verify`, on the fake device.
struct PhasedSweep {
    points: usize,
}

impl Experiment for PhasedSweep {
    fn results(&self) -> &'static dyn Results {
        &PhasedResults
    }
    fn options(&self, _: &crate::device::Props) -> serde_json::Value {
        serde_json::json!({ "points": self.points })
    }
    fn sources(&self) -> &'static [&'static str] {
        &[]
    }
}

impl Points for PhasedSweep {
    type Spec = usize;

    fn points(&self, _: &RunContext) -> Vec<Point<usize>> {
        (0..self.points)
            .map(|i| Point {
                spec: i,
                key: format!("n={i}"),
                params: Params::of(&PhasedResults).set("n", i).row(),
                invalid: None,
                work: Work::kernel(0.0, 1e6, 1.0),
            })
            .collect()
    }
    fn prepare<'g>(&self, ctx: &RunContext<'g>, _: &usize) -> Result<Box<dyn Case + 'g>, Error> {
        std::thread::sleep(Duration::from_millis(PREPARE_MS));
        // An input drawn inside prepare, as a size's shared inputs are: its own phase, not prepare's.
        ctx.phases.scope(Phase::Inputs, || std::thread::sleep(Duration::from_millis(PREPARE_MS)));
        Ok(Box::new(SleepyCase))
    }
}

/// A case whose every launch takes [`LAUNCH_MS`] of host time (so the timed repetitions take time on the host
/// clock), and whose verification takes [`VERIFY_MS`] and passes.
struct SleepyCase;

impl Case for SleepyCase {
    fn launch(&mut self) -> crate::device::Result<()> {
        std::thread::sleep(Duration::from_millis(LAUNCH_MS));
        Ok(())
    }
    fn verify(&mut self) -> Result<crate::verify::Verification, Error> {
        std::thread::sleep(Duration::from_millis(VERIFY_MS));
        Ok(crate::verify::compare(&[1.0f32], &[1.0f32], 1.0, 0.0))
    }
    fn work(&self) -> f64 {
        1e6
    }
}

fn read_csv(path: &Path) -> Vec<BTreeMap<String, String>> {
    crate::report::csv::read_rows(path).unwrap()
}

#[test]
fn a_run_records_each_points_phases_within_its_wall_time_and_names_every_phase() {
    let dir = tempfile::tempdir().unwrap();
    // No prebuilt code objects: the launch gap cannot be measured (a note in run.json), and nothing compiles.
    let kernels = tempfile::tempdir().unwrap();
    // Its events read 2 ms for any timed region: one launch per batch, no probe batch.
    let device: FakeDevice = fake(Capture::Works, 2.0, 0.0, 0.0);
    let gpu = Gpu::with_device(Box::new(device), Some(kernels.path().to_path_buf()));
    let opts = short_run_into(dir.path());
    let sweep = PhasedSweep { points: 3 };
    let started = std::time::Instant::now();
    let summary = run_in_own_folder(&gpu, &sweep, &opts).unwrap();
    let wall_s = started.elapsed().as_secs_f64();
    assert_eq!((summary.ok, summary.fail, summary.error), (3, 0, 0), "{summary:?}");

    let run = run_json::read(dir.path()).unwrap().unwrap();
    let record = run.invocations[0].phases.clone().expect("the invocation records its phases");
    assert_eq!(record.points, 3);
    assert!(record.wall_s <= wall_s && record.points_wall_s <= record.wall_s, "{record:?}");
    assert!(record.per_point_s.total() <= record.points_wall_s, "{record:?}");
    assert!(record.outside_points_s.total() + record.points_wall_s <= record.wall_s + 1e-6, "{record:?}");
    // Each step is in its own phase, at least as long as it slept.
    let at_least = |phase: Phase, ms: u64| {
        let s = record.per_point_s.get(phase);
        assert!(s >= 3.0 * ms as f64 * 1e-3, "{}: {s} s over 3 points, below {ms} ms each: {record:?}", phase.name());
    };
    at_least(Phase::Prepare, PREPARE_MS);
    at_least(Phase::Inputs, PREPARE_MS);
    at_least(Phase::Verify, VERIFY_MS);
    at_least(Phase::FirstLaunch, LAUNCH_MS);
    // Three timed repetitions of at least one launch each; the sizing launch and the warm-up before them.
    at_least(Phase::Timed, 3 * LAUNCH_MS);
    at_least(Phase::Calibrate, LAUNCH_MS);
    // Prepare holds its own sleep and not the input's nested in it.
    assert!(record.per_point_s.get(Phase::Prepare) < 3.0 * (2 * PREPARE_MS) as f64 * 1e-3, "{record:?}");
    // Outside the points: set-up (run.json, the CSV) and the plan, and no point phase.
    assert!(record.outside_points_s.get(Phase::Setup) > 0.0, "{record:?}");
    for phase in [Phase::Prepare, Phase::Verify, Phase::Timed] {
        assert_eq!(record.outside_points_s.get(phase), 0.0, "{record:?}");
    }
    // In run.json every phase is named.
    let text = std::fs::read_to_string(run_json::path(dir.path())).unwrap();
    for phase in Phase::ALL {
        assert!(text.contains(&format!("\"{}\":", phase.name())), "{} missing from {text}", phase.name());
    }
    // The line on stderr names every phase with time in it.
    let line = record.line("phased");
    for (phase, _) in record.per_point_s.nonzero() {
        assert!(line.contains(phase.name()), "{line}");
    }

    // phases.csv: one row per point, each within its wall time, every column named.
    let rows = read_csv(&dir.path().join(PHASES_CSV));
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0].keys().len(), csv_columns().len());
    for row in &rows {
        assert_eq!(
            (row["experiment"].as_str(), row["status"].as_str(), row["invocation"].as_str()),
            ("phased", "ok", "0")
        );
        let wall: f64 = row["wall_s"].parse().unwrap();
        let sum: f64 = POINT_PHASES.iter().map(|p| row[&format!("{}_s", p.name())].parse::<f64>().unwrap()).sum();
        assert!(sum <= wall && sum > 0.9 * wall - 0.002, "{row:?}: phases {sum} s of {wall} s");
    }
    assert_eq!(rows.iter().map(|r| r["key"].as_str()).collect::<Vec<_>>(), ["n=0", "n=1", "n=2"]);
}
