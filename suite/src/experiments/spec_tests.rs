//! A test fixture experiment with a sweep of two dimensions, run whole on a CPU with the fake device: each
//! parameter is declared once, in the point's typed spec and by its column name beside it, and `prepare` receives the
//! spec `points` made. Its second dimension, `width`, shows what adding a sweep dimension takes: a field of the spec,
//! a loop in `points`, a column of the read side, and its value set by name; all in the experiment's own code.

use std::sync::Mutex;

use super::tests::{fake, run_in_own_folder, short_run_into, Capture};
use super::*;
use crate::gpu::Gpu;

/// The fixture's read side: its columns, `width` the dimension added to `n`.
struct GridResults;

impl Results for GridResults {
    fn name(&self) -> &'static str {
        "grid"
    }
    fn param_columns(&self) -> &'static [&'static str] {
        &["n", "width"]
    }
    fn metric(&self) -> Metric {
        Metric { column: "gbps", formula: "test double" }
    }
}

/// One point of the fixture: its size and its width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct GridPoint {
    n: usize,
    width: u32,
}

/// The fixture's sweep: every size at every width; it keeps the specs `prepare` received, to check them.
struct GridSweep {
    sizes: Vec<usize>,
    widths: Vec<u32>,
    prepared: Mutex<Vec<GridPoint>>,
}

impl Experiment for GridSweep {
    fn results(&self) -> &'static dyn Results {
        &GridResults
    }
    fn options(&self, _: &crate::device::Props) -> serde_json::Value {
        serde_json::json!({ "sizes": self.sizes, "widths": self.widths })
    }
    fn sources(&self) -> &'static [&'static str] {
        &[]
    }
}

impl Points for GridSweep {
    type Spec = GridPoint;

    fn points(&self, _: &RunContext) -> Vec<Point<GridPoint>> {
        let mut points = Vec::new();
        for &n in &self.sizes {
            for &width in &self.widths {
                points.push(Point {
                    spec: GridPoint { n, width },
                    key: format!("grid/n={n},width={width}"),
                    // In any order: by name, checked against the read side's columns.
                    params: Params::of(&GridResults).set("width", width).set("n", n).row(),
                    invalid: (width as usize > n).then(|| format!("width {width} exceeds n = {n}")),
                    work: Work::kernel(0.0, 1e6, 1.0),
                });
            }
        }
        points
    }

    fn prepare<'g>(&self, _: &RunContext<'g>, spec: &GridPoint) -> Result<Box<dyn Case + 'g>, Error> {
        self.prepared.lock().unwrap().push(*spec);
        Ok(Box::new(PassingCase))
    }
}

/// A case that launches nothing and verifies.
struct PassingCase;

impl Case for PassingCase {
    fn launch(&mut self) -> crate::device::Result<()> {
        Ok(())
    }
    fn verify(&mut self) -> Result<crate::verify::Verification, Error> {
        Ok(crate::verify::compare(&[1.0f32], &[1.0f32], 1.0, 0.0))
    }
    fn work(&self) -> f64 {
        1e6
    }
}

#[test]
fn a_second_dimension_reaches_the_rows_by_name_and_prepare_gets_each_points_spec() {
    let dir = tempfile::tempdir().unwrap();
    let kernels = tempfile::tempdir().unwrap();
    let gpu = Gpu::with_device(Box::new(fake(Capture::Works, 2.0, 0.0, 0.0)), Some(kernels.path().to_path_buf()));
    let opts = short_run_into(dir.path());
    let sweep = GridSweep { sizes: vec![1, 4], widths: vec![2, 1], prepared: Mutex::new(Vec::new()) };
    let summary = run_in_own_folder(&gpu, &sweep, &opts).unwrap();
    assert_eq!((summary.ok, summary.invalid, summary.error), (3, 1, 0), "{summary:?}");

    // prepare received the specs of the valid points, in the sweep's order.
    let prepared = sweep.prepared.lock().unwrap().clone();
    let valid = [GridPoint { n: 1, width: 1 }, GridPoint { n: 4, width: 2 }, GridPoint { n: 4, width: 1 }];
    assert_eq!(prepared, valid);

    // Each row holds its point's values under their own columns, the invalid one too.
    let rows = crate::report::csv::read_rows(&dir.path().join("grid.csv")).unwrap();
    let cells: Vec<(&str, &str, &str, &str)> =
        rows.iter().map(|r| (r["key"].as_str(), r["n"].as_str(), r["width"].as_str(), r["status"].as_str())).collect();
    assert_eq!(
        cells,
        [
            ("grid/n=1,width=2", "1", "2", "invalid"),
            ("grid/n=1,width=1", "1", "1", "ok"),
            ("grid/n=4,width=2", "4", "2", "ok"),
            ("grid/n=4,width=1", "4", "1", "ok"),
        ]
    );
}

#[test]
fn the_runner_refuses_a_point_another_sweep_made() {
    let kernels = tempfile::tempdir().unwrap();
    let gpu = Gpu::with_device(Box::new(fake(Capture::Works, 2.0, 0.0, 0.0)), Some(kernels.path().to_path_buf()));
    let ctx = RunContext::new(&gpu, None);
    let sweep = GridSweep { sizes: vec![1], widths: vec![1], prepared: Mutex::new(Vec::new()) };
    let exp: &dyn Experiment = &sweep;
    let mut foreign = exp.points(&ctx).remove(0);
    foreign.spec = std::sync::Arc::new(7usize);
    let err = exp.prepare(&ctx, &foreign).err().expect("a spec of another type is refused");
    assert!(err.to_string().contains("was not made by this sweep"), "{err}");
    assert!(exp.prepare(&ctx, &exp.points(&ctx)[0]).is_ok());
}

#[test]
#[should_panic(expected = "`size` is not one of its parameter columns")]
fn a_parameter_under_a_column_the_experiment_lacks_is_refused() {
    Params::of(&GridResults).set("size", 1).set("n", 1).set("width", 1).row();
}

#[test]
#[should_panic(expected = "parameter columns [\"width\"] are not set")]
fn a_column_left_unset_is_refused() {
    Params::of(&GridResults).set("n", 1).row();
}

#[test]
#[should_panic(expected = "parameter column `n` is set twice")]
fn a_column_set_twice_is_refused() {
    Params::of(&GridResults).set("n", 1).set("n", 2).set("width", 1).row();
}
