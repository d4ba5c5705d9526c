//! Where a run's host time goes: each point's phases (preparing, drawing inputs, the reference, the first launch,
//! verification, calibration, the timed repetitions, telemetry, recording) and an experiment's own (compiling and
//! loading kernels, setting up, planning, plots), measured with the host's monotonic clock.
//!
//! A run's [`PhaseClock`] is a value the runner makes and hands down in its run context: code marks a phase with
//! [`PhaseClock::enter`] (a guard that ends it when dropped) or [`PhaseClock::scope`]; phases nest, and a phase's
//! time is its own, without the phases entered inside it, so the phases of a span never add up to more than its
//! wall time. The runner takes the table ([`PhaseClock::take`]) at the end of each point and of each stage of an
//! experiment. Nothing here knows of experiments or of results folders.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// One phase of a run's host time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// A point's allocations and per-point initialisation: the experiment's `prepare`, less the phases below that
    /// it contains (an autotuning step that times candidates inside `prepare` counts here).
    Prepare,
    /// Drawing a size's inputs on the host and uploading them (once per size where points share them).
    Inputs,
    /// Computing the reference a point is checked against (once per size where points share it).
    Reference,
    /// Getting a code object (compiled now, or read from the cache) and loading it into the device.
    Compile,
    /// The point's first launch and the synchronisation after it, whose result is verified.
    FirstLaunch,
    /// Reading the result back and comparing it with the reference.
    Verify,
    /// Sizing the batch (a single launch, a probe batch), capturing the graph and the warm-up batches.
    Calibrate,
    /// The timed repetitions.
    Timed,
    /// Starting and stopping the clock and power sampler around the timed repetitions, and summarising it.
    Telemetry,
    /// Appending the row to the CSV, the progress line and this table's own row.
    Record,
    /// An experiment's set-up before its first point: the launch-gap measurement, the telemetry's first reading,
    /// run.json's check and record, the CSV opened.
    Setup,
    /// Expanding the sweep into points and estimating each.
    Plan,
    /// Derived tables and plots, drawn from the CSV after the last point.
    Plots,
}

impl Phase {
    /// Every phase, in the order they are reported.
    pub const ALL: [Phase; 13] = [
        Phase::Prepare,
        Phase::Inputs,
        Phase::Reference,
        Phase::Compile,
        Phase::FirstLaunch,
        Phase::Verify,
        Phase::Calibrate,
        Phase::Timed,
        Phase::Telemetry,
        Phase::Record,
        Phase::Setup,
        Phase::Plan,
        Phase::Plots,
    ];

    /// The phase's name in `run.json`, `phases.csv` (with `_s`) and the breakdown line.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Prepare => "prepare",
            Phase::Inputs => "inputs",
            Phase::Reference => "reference",
            Phase::Compile => "compile",
            Phase::FirstLaunch => "first_launch",
            Phase::Verify => "verify",
            Phase::Calibrate => "calibrate",
            Phase::Timed => "timed",
            Phase::Telemetry => "telemetry",
            Phase::Record => "record",
            Phase::Setup => "setup",
            Phase::Plan => "plan",
            Phase::Plots => "plots",
        }
    }

    /// Its place in [`Phase::ALL`], which lists the phases in the order they are declared (a test checks it).
    fn index(self) -> usize {
        self as usize
    }
}

/// Seconds spent in each phase ([`Phase::ALL`]'s order), each without the phases nested in it; in JSON, an object
/// of every phase's name and seconds.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(into = "BTreeMap<String, f64>", from = "BTreeMap<String, f64>")]
pub struct Times([f64; Phase::ALL.len()]);

impl From<Times> for BTreeMap<String, f64> {
    fn from(t: Times) -> BTreeMap<String, f64> {
        Phase::ALL.iter().map(|p| (p.name().to_string(), t.get(*p))).collect()
    }
}

impl From<BTreeMap<String, f64>> for Times {
    /// Phases it does not name (a newer suite's) are dropped; phases it lacks are 0.
    fn from(map: BTreeMap<String, f64>) -> Times {
        let mut t = Times::default();
        for p in Phase::ALL {
            t.add(p, map.get(p.name()).copied().unwrap_or(0.0));
        }
        t
    }
}

impl Times {
    /// Seconds in `phase`.
    pub fn get(&self, phase: Phase) -> f64 {
        self.0[phase.index()]
    }

    /// Adds `seconds` to `phase`.
    pub fn add(&mut self, phase: Phase, seconds: f64) {
        self.0[phase.index()] += seconds;
    }

    /// Adds every phase of `other`.
    pub fn add_all(&mut self, other: &Times) {
        for (mine, theirs) in self.0.iter_mut().zip(other.0) {
            *mine += theirs;
        }
    }

    /// Seconds over every phase.
    pub fn total(&self) -> f64 {
        self.0.iter().sum()
    }

    /// The phases with time in them, as (phase, seconds), in [`Phase::ALL`]'s order.
    pub fn nonzero(&self) -> impl Iterator<Item = (Phase, f64)> + '_ {
        Phase::ALL.iter().map(|p| (*p, self.get(*p))).filter(|(_, s)| *s > 0.0)
    }
}

/// An open phase: when it started and how long the phases entered inside it took.
#[derive(Debug)]
struct Frame {
    phase: Phase,
    start: Instant,
    nested_s: f64,
}

/// One run's phase clock: the phases open now (innermost last) and what closed phases have taken since the last
/// [`PhaseClock::take`]. The runner prepares, launches and times a point on one thread, so it is not shared between
/// threads.
#[derive(Debug, Default)]
pub struct PhaseClock {
    stack: RefCell<Vec<Frame>>,
    times: RefCell<Times>,
}

/// A phase that is open until this guard is dropped ([`PhaseClock::enter`]).
#[must_use = "the phase ends when the guard is dropped"]
pub struct Guard<'c> {
    clock: &'c PhaseClock,
    /// The stack's depth under this phase: dropping the guard closes it and anything left open inside it.
    depth: usize,
}

impl PhaseClock {
    /// Opens `phase` until the returned guard is dropped.
    pub fn enter(&self, phase: Phase) -> Guard<'_> {
        let mut stack = self.stack.borrow_mut();
        let depth = stack.len();
        stack.push(Frame { phase, start: Instant::now(), nested_s: 0.0 });
        Guard { clock: self, depth }
    }

    /// Runs `f` inside `phase`.
    pub fn scope<T>(&self, phase: Phase, f: impl FnOnce() -> T) -> T {
        let _guard = self.enter(phase);
        f()
    }

    /// What the phases closed have taken since the last call, and a fresh table. Phases still open are counted when
    /// they close.
    pub fn take(&self) -> Times {
        std::mem::take(&mut *self.times.borrow_mut())
    }
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        let now = Instant::now();
        let mut stack = self.clock.stack.borrow_mut();
        // Innermost first, so a phase left open inside this one (a guard kept too long) still counts once.
        while stack.len() > self.depth {
            let Some(frame) = stack.pop() else { break };
            let elapsed = now.duration_since(frame.start).as_secs_f64();
            self.clock.times.borrow_mut().add(frame.phase, (elapsed - frame.nested_s).max(0.0));
            if let Some(parent) = stack.last_mut() {
                parent.nested_s += elapsed;
            }
        }
    }
}

/// Where an experiment's host time went, as `run.json` records it for each invocation
/// and the runner prints it when the experiment ends.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PhaseRecord {
    /// The experiment's wall time in the runner, from its first compile to its last plot, s.
    pub wall_s: f64,
    /// Points run (skipped ones, already in a resumed CSV, not counted).
    pub points: usize,
    /// The wall time of those points, s: from preparing each to its row written.
    pub points_wall_s: f64,
    /// Each phase summed over the points, s.
    pub per_point_s: Times,
    /// The points' time in no phase (the runner's own bookkeeping between phases), s: `points_wall_s` less the sum
    /// of `per_point_s`, never negative.
    pub points_other_s: f64,
    /// Each phase outside the points (compiling and loading the sources, set-up, planning, plots), s.
    pub outside_points_s: Times,
}

impl PhaseRecord {
    /// Adds a point that took `wall_s` with its phases `times`.
    pub fn add_point(&mut self, times: &Times, wall_s: f64) {
        self.points += 1;
        self.points_wall_s += wall_s;
        self.per_point_s.add_all(times);
        self.points_other_s = (self.points_wall_s - self.per_point_s.total()).max(0.0);
    }

    /// One line for the end of an experiment: each phase's time per point, ms, then the phases outside the points.
    pub fn line(&self, experiment: &str) -> String {
        let per = |s: f64| s * 1e3 / self.points.max(1) as f64;
        let mut inside: Vec<String> =
            self.per_point_s.nonzero().map(|(p, s)| format!("{} {:.1}", p.name(), per(s))).collect();
        inside.push(format!("other {:.1}", per(self.points_other_s)));
        let outside: Vec<String> =
            self.outside_points_s.nonzero().map(|(p, s)| format!("{} {s:.2}", p.name())).collect();
        format!(
            "{experiment}: phases: {} points in {:.2} s, {:.1} ms a point ({} ms); outside the points {:.2} s ({} s); \
             {:.2} s in all",
            self.points,
            self.points_wall_s,
            per(self.points_wall_s),
            inside.join(", "),
            self.outside_points_s.total(),
            if outside.is_empty() { "none".to_string() } else { outside.join(", ") },
            self.wall_s
        )
    }
}

/// The phases a point's row in `phases.csv` has a column for: [`Phase::ALL`] up to [`Phase::Record`] (the others,
/// from [`Phase::Setup`] on, never happen inside a point).
pub const POINT_PHASES: &[Phase] = Phase::ALL.split_at(Phase::Record as usize + 1).0;

/// The file in a results folder that holds each point's phases, one row per point run.
pub const PHASES_CSV: &str = "phases.csv";

/// The columns of [`PHASES_CSV`]: the invocation (its index in `run.json`'s invocations), the experiment, the shard
/// (`i/n`, empty unsharded), the point's key and status, its wall time, then each of [`POINT_PHASES`], s.
pub fn csv_columns() -> Vec<String> {
    let fixed = ["invocation", "experiment", "shard", "key", "status", "wall_s"].map(String::from);
    fixed.into_iter().chain(POINT_PHASES.iter().map(|p| format!("{}_s", p.name()))).collect()
}

/// One point's row of [`PHASES_CSV`] ([`csv_columns`]): invocation `invocation` (its index in run.json) of
/// `experiment` (shard `shard`), the point's key and status, its wall time and `times`.
pub fn csv_row(
    invocation: usize,
    experiment: &str,
    shard: Option<crate::options::Shard>,
    key: &str,
    status: &str,
    wall_s: f64,
    times: &Times,
) -> Vec<String> {
    let shard = shard.map(|s| s.to_string()).unwrap_or_default();
    let fixed = [invocation.to_string(), experiment.to_string(), shard, key.to_string(), status.to_string()];
    let times = POINT_PHASES.iter().map(|p| format!("{:.6}", times.get(*p)));
    fixed.into_iter().chain(std::iter::once(format!("{wall_s:.6}"))).chain(times).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn sleep_ms(ms: u64) {
        std::thread::sleep(Duration::from_millis(ms));
    }

    // The sleeps bound each phase from below; nothing here bounds a time from above but the wall time around it
    // (tests assert no timings).
    #[test]
    fn nested_phases_count_once_and_never_more_than_the_wall_time() {
        let clock = PhaseClock::default();
        let start = Instant::now();
        clock.scope(Phase::Prepare, || {
            sleep_ms(5);
            clock.scope(Phase::Inputs, || sleep_ms(10));
            clock.scope(Phase::Reference, || {
                sleep_ms(5);
                clock.scope(Phase::Compile, || sleep_ms(5));
            });
        });
        let wall = start.elapsed().as_secs_f64();
        let t = clock.take();
        // Each phase has its own time and not its children's: were a child's time also its parent's, the total
        // would pass the wall time (15 ms of children counted twice).
        assert!(t.total() <= wall, "{t:?} over {wall} s");
        assert!(t.get(Phase::Prepare) >= 0.005 && t.get(Phase::Inputs) >= 0.010, "{t:?}");
        assert!(t.get(Phase::Reference) >= 0.005 && t.get(Phase::Compile) >= 0.005, "{t:?}");
        assert_eq!(clock.take(), Times::default(), "taken once");
    }

    #[test]
    fn a_guard_dropped_early_closes_what_was_left_open_inside_it() {
        let clock = PhaseClock::default();
        let outer = clock.enter(Phase::Calibrate);
        let inner = clock.enter(Phase::Telemetry);
        sleep_ms(3);
        drop(outer);
        // Already closed by `outer`: dropping it now changes nothing.
        drop(inner);
        let t = clock.take();
        assert!(t.get(Phase::Telemetry) >= 0.003, "{t:?}");
        assert!(t.get(Phase::Calibrate) < t.get(Phase::Telemetry), "{t:?}");
        assert!(clock.stack.borrow().is_empty());
    }

    #[test]
    fn two_runs_clocks_do_not_mix() {
        let (a, b) = (PhaseClock::default(), PhaseClock::default());
        a.scope(Phase::Verify, || b.scope(Phase::Timed, || sleep_ms(2)));
        let (ta, tb) = (a.take(), b.take());
        assert!(ta.get(Phase::Timed) == 0.0 && tb.get(Phase::Verify) == 0.0, "{ta:?} {tb:?}");
        assert!(ta.get(Phase::Verify) >= 0.002 && tb.get(Phase::Timed) >= 0.002, "{ta:?} {tb:?}");
    }

    #[test]
    fn every_phase_has_its_own_name() {
        let names: std::collections::BTreeSet<&str> = Phase::ALL.iter().map(|p| p.name()).collect();
        assert_eq!(names.len(), Phase::ALL.len());
        assert!(names.iter().all(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_lowercase() || c == '_')));
        for (i, p) in Phase::ALL.iter().enumerate() {
            assert_eq!(p.index(), i);
        }
    }
}
