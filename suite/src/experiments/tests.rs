//! The runner and timing, checked on a CPU with a device whose events report exact times.

use super::*;
use crate::device::{Arch, Arg, Kernel, Module, Platform, Props, RawAlloc, Replay, WaveSize};
use crate::device::{Device, LaunchConfig};
use crate::gpu::Gpu;
use crate::report::csv::header;
use crate::report::run_json;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

/// What the fake device's `capture` does.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Capture {
    Works,
    Unsupported,
    Fails,
}

/// A device whose events report, exactly, `latency` per timed region plus `kernel` per launch enqueued in it
/// (`gap` more per launch on the stream than in a graph), so the runner's arithmetic can be checked on a CPU.
pub(super) struct FakeDevice {
    props: Props,
    pub(super) enqueued: AtomicU32,
    capture: Capture,
    latency_ms: f64,
    kernel_ms: f64,
    stream_gap_ms: f64,
}

struct FakeReplay<'d> {
    dev: &'d FakeDevice,
    launches: u32,
}

impl Replay for FakeReplay<'_> {
    fn launch(&self) -> device::Result<()> {
        // A graph's launches are counted from bit 16 up, where `time_ms` charges them no stream gap.
        self.dev.enqueued.fetch_add(self.launches << 16, Ordering::SeqCst);
        Ok(())
    }
}

impl Device for FakeDevice {
    fn props(&self) -> &Props {
        &self.props
    }
    fn time_ms(&self, work: &mut dyn FnMut() -> device::Result<()>) -> device::Result<f32> {
        self.enqueued.store(0, Ordering::SeqCst);
        work()?;
        let n = self.enqueued.load(Ordering::SeqCst);
        let (stream, graph) = (f64::from(n & 0xffff), f64::from(n >> 16));
        Ok((self.latency_ms + stream * (self.kernel_ms + self.stream_gap_ms) + graph * self.kernel_ms) as f32)
    }
    fn capture(
        &self,
        times: u32,
        work: &mut dyn FnMut() -> device::Result<()>,
    ) -> device::Result<Option<Box<dyn Replay + '_>>> {
        match self.capture {
            Capture::Unsupported => Ok(None),
            Capture::Fails => Err(device::Error::Api {
                api: "cuStreamEndCapture",
                code: 901,
                code_name: "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED".into(),
                text: "capture invalidated".into(),
            }),
            Capture::Works => {
                for _ in 0..times {
                    work()?;
                }
                Ok(Some(Box::new(FakeReplay { dev: self, launches: times })))
            }
        }
    }
    fn synchronize(&self) -> device::Result<()> {
        Ok(())
    }
    fn memory_info(&self) -> device::Result<(u64, u64)> {
        unreachable!("not used by the timer")
    }
    fn alloc(&self, _: usize) -> device::Result<Box<dyn RawAlloc>> {
        unreachable!("not used by the timer")
    }
    fn copy_to_device(&self, _: &dyn RawAlloc, _: &[u8]) -> device::Result<()> {
        unreachable!("not used by the timer")
    }
    fn copy_to_host(&self, _: &dyn RawAlloc, _: &mut [u8]) -> device::Result<()> {
        unreachable!("not used by the timer")
    }
    fn copy_on_device(&self, _: &dyn RawAlloc, _: &dyn RawAlloc, _: usize) -> device::Result<()> {
        unreachable!("not used by the timer")
    }
    fn fill_bytes(&self, _: &dyn RawAlloc, _: u8) -> device::Result<()> {
        unreachable!("not used by the timer")
    }
    fn load_module(&self, _: &[u8]) -> device::Result<Module> {
        unreachable!("not used by the timer")
    }
    fn kernel(&self, _: &Module, _: &str) -> device::Result<Kernel> {
        unreachable!("not used by the timer")
    }
    fn launch(&self, _: &Kernel, _: &LaunchConfig, _: &[Arg]) -> device::Result<()> {
        unreachable!("not used by the timer")
    }
    fn launch_cooperative(&self, _: &Kernel, _: &LaunchConfig, _: &[Arg]) -> device::Result<()> {
        unreachable!("not used by the timer")
    }
    fn occupancy_groups_per_cu(&self, _: &Kernel, _: u32, _: u32) -> device::Result<u32> {
        unreachable!("not used by the timer")
    }
    fn blas(&self) -> device::Result<String> {
        Err(device::Error::BlasNotFound { library: "fake BLAS", hint: "the test double has none", tried: vec![] })
    }
    fn blas_call(&self, _: device::BlasCall<'_>) -> device::Result<()> {
        unreachable!("not used by the timer")
    }
}

struct FakeCase<'d>(&'d FakeDevice);

impl Case for FakeCase<'_> {
    fn launch(&mut self) -> device::Result<()> {
        self.0.enqueued.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
    fn verify(&mut self) -> Result<Verification, Error> {
        unreachable!("the timer does not verify")
    }
    fn work(&self) -> f64 {
        1.0
    }
}

pub(super) fn fake(capture: Capture, latency_ms: f64, kernel_ms: f64, stream_gap_ms: f64) -> FakeDevice {
    let props = Props {
        platform: Platform::Nvidia,
        ordinal: 0,
        name: "fake".into(),
        arch: Arch::parse("sm_90").expect("valid"),
        arch_full: "sm_90".into(),
        wave_size: WaveSize(32),
        cu_count: 1,
        max_items_per_cu: 2048,
        max_group_size: 1024,
        max_groups_per_cu: None,
        lds_bytes_per_cu: 1 << 16,
        lds_bytes_per_group: 1 << 16,
        lds_bytes_per_group_optin: 1 << 16,
        registers_per_cu: 1 << 16,
        clock_mhz: None,
        memory_clock_mhz: None,
        memory_bus_bits: None,
        l2_bytes: None,
        memory_bytes: 1 << 30,
        runtime_version: String::new(),
        driver_version: String::new(),
        test_runtime: false,
    };
    FakeDevice { props, enqueued: AtomicU32::new(0), capture, latency_ms, kernel_ms, stream_gap_ms }
}

/// A sequence with a host step: it sleeps `ms` on the host (a stand-in for a readback and a relaunch).
struct HostSequence<'d> {
    dev: &'d FakeDevice,
    ms: u64,
    calls: u32,
}

impl Case for HostSequence<'_> {
    fn launch(&mut self) -> device::Result<()> {
        self.calls += 1;
        self.dev.enqueued.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(std::time::Duration::from_millis(self.ms));
        Ok(())
    }
    fn verify(&mut self) -> Result<Verification, Error> {
        unreachable!("the timer does not verify")
    }
    fn work(&self) -> f64 {
        1.0
    }
    fn clock(&self) -> Clock {
        Clock::Host
    }
}

#[test]
fn the_shared_slot_reuses_what_fits_and_frees_the_old_value_before_making_the_next() {
    let cache = Shared::default();
    let made = std::cell::Cell::new(0);
    let make = |v: u32| {
        made.set(made.get() + 1);
        Ok::<u32, ()>(v)
    };
    let first = cache.get_or_make(|v: &u32| *v == 1, || make(1)).unwrap();
    assert_eq!((*cache.get_or_make(|v: &u32| *v == 1, || make(1)).unwrap(), made.get()), (1, 1));
    // A value that does not fit is dropped before the next is made: only `first` still holds it.
    let second = cache
        .get_or_make(
            |v: &u32| *v == 2,
            || {
                assert_eq!(std::rc::Rc::strong_count(&first), 1, "the old value is freed first");
                make(2)
            },
        )
        .unwrap();
    assert_eq!((*second, made.get()), (2, 2));
    // A value of another type does not fit either: it replaces the old one.
    let text = cache.get_or_make(|_: &String| true, || Ok::<String, ()>("clock".into())).unwrap();
    assert_eq!((text.as_str(), made.get()), ("clock", 2));
    assert_eq!(std::rc::Rc::strong_count(&second), 1, "the u32 is no longer kept");
    // A failed make leaves the slot empty.
    assert!(cache.get_or_make(|v: &u32| *v == 3, || Err(())).is_err());
    assert_eq!(format!("{cache:?}"), "Shared(empty)");
}

#[test]
fn host_clock_cases_are_timed_one_whole_sequence_per_repetition() {
    // The fake device's events would read 5 µs per launch; a host-clock case must not be timed by them.
    let dev = fake(Capture::Works, 0.0, 0.005, 0.0);
    let mut case = HostSequence { dev: &dev, ms: 3, calls: 0 };
    for timing in [Timing::Graph, Timing::Stream] {
        case.calls = 0;
        let timed = time_case(&dev, &mut case, &options(timing)).unwrap();
        assert_eq!((timed.timing, timed.launches_per_rep, timed.note), (TimedBy::Host, 1, None));
        assert_eq!(timed.timing.name(), "host");
        // One sizing call, 2 more warm-ups (3 asked), 7 repetitions: never batched, never captured.
        assert_eq!((timed.stats.reps, case.calls), (7, 10));
        // A sleep lasts at least what was asked, so every repetition reads at least 3 ms.
        assert!(timed.stats.min_ms >= 3.0, "{:?}", timed.stats);
    }
}

/// [`run`] of one experiment into a results folder taken for it alone, as `suite run EXPERIMENT` takes it.
pub(super) fn run_in_own_folder(gpu: &Gpu, exp: &dyn Experiment, opts: &RunOptions) -> Result<Summary, Error> {
    use crate::report::{folder::ResultsFolder, lock::Wait};
    let mut folder = ResultsFolder::take(&opts.out_dir, opts.shard, "suite run", Wait::No)?;
    run(gpu, exp, opts, &mut folder)
}

/// The options of a short run into `dir` on the fake device (3 repetitions after 1 warm-up, 50 ms of time budget,
/// no telemetry), for the tests that run a whole sweep through [`run`].
pub(super) fn short_run_into(dir: &std::path::Path) -> RunOptions {
    RunOptions {
        out_dir: dir.to_path_buf(),
        reps: 3,
        warmup: 1,
        time_budget_s: 0.05,
        telemetry: false,
        ..options(Timing::Stream)
    }
}

pub(super) fn options(timing: Timing) -> RunOptions {
    RunOptions {
        out_dir: PathBuf::new(),
        resume: false,
        shard: None,
        warmup: 3,
        reps: 7,
        time_budget_s: 2.0,
        timing,
        max_point_s: 60.0,
        telemetry: true,
    }
}

#[test]
fn batches_remove_the_launch_latency_and_graphs_the_gap() {
    // A 5 µs kernel, 20 µs of latency per timed region, 2 µs of gap per launch on the stream.
    let dev = fake(Capture::Works, 0.020, 0.005, 0.002);
    let timed = time_case(&dev, &mut FakeCase(&dev), &options(Timing::Graph)).unwrap();
    let b = timed.launches_per_rep;
    // A single launch reads 27 µs, so the probe batch has ceil(1 ms / 27 µs) = 38 launches; it reads
    // (20 + 38 · 7) µs, 7.53 µs per launch, which sets B = ceil(1 ms / 7.53 µs) = 133.
    assert_eq!(launches_per_rep(0.027, 2.0), 38);
    assert_eq!(b, 133);
    assert!(f64::from(b) * 0.005 >= 0.5, "a batch of {b} launches is too short");
    assert_eq!((timed.timing, timed.note.as_deref(), timed.stats.reps), (TimedBy::Device(Timing::Graph), None, 7));
    // One region's latency spread over B launches, no stream gap: 5 µs + 20 µs / B.
    let want = 0.005 + 0.020 / f64::from(b);
    assert!((timed.stats.median_ms - want).abs() < 1e-6, "{} vs {want}", timed.stats.median_ms);

    let timed = time_case(&dev, &mut FakeCase(&dev), &options(Timing::Stream)).unwrap();
    let want = 0.007 + 0.020 / f64::from(timed.launches_per_rep);
    assert_eq!(timed.timing, TimedBy::Device(Timing::Stream));
    assert!((timed.stats.median_ms - want).abs() < 1e-6, "{} vs {want}", timed.stats.median_ms);
}

#[test]
fn a_graph_that_cannot_be_made_falls_back_to_the_stream_and_says_so() {
    let dev = fake(Capture::Unsupported, 0.0, 0.01, 0.0);
    let timed = time_case(&dev, &mut FakeCase(&dev), &options(Timing::Graph)).unwrap();
    assert_eq!((timed.timing, timed.note), (TimedBy::Device(Timing::Stream), None));
    let dev = fake(Capture::Fails, 0.0, 0.01, 0.0);
    let timed = time_case(&dev, &mut FakeCase(&dev), &options(Timing::Graph)).unwrap();
    assert_eq!(timed.timing, TimedBy::Device(Timing::Stream));
    let note = timed.note.expect("the fallback is noted");
    assert!(note.contains("graph capture failed") && note.contains("INVALIDATED"), "{note}");
}

#[test]
fn long_kernels_run_alone_and_slow_ones_get_fewer_reps() {
    // 300 ms per launch, 2 s budget: B = 1, and 6 repetitions fit (after the sizing launch), of 7 asked.
    let dev = fake(Capture::Works, 0.0, 300.0, 0.0);
    let timed = time_case(&dev, &mut FakeCase(&dev), &options(Timing::Graph)).unwrap();
    assert_eq!((timed.launches_per_rep, timed.stats.reps), (1, 6));
    assert!((timed.stats.median_ms - 300.0).abs() < 1e-3);
}

#[test]
fn events_that_see_no_time_are_an_error_not_a_rate() {
    let dev = fake(Capture::Works, 0.0, 0.0, 0.0);
    let err = time_case(&dev, &mut FakeCase(&dev), &options(Timing::Graph)).unwrap_err();
    assert!(matches!(err, Error::Timing(_)), "{err}");
    assert!(err.to_string().contains("saw no time"), "{err}");
}

#[test]
fn shards_parse_and_reject_nonsense() {
    assert_eq!("0/8".parse::<Shard>(), Ok(Shard { index: 0, count: 8 }));
    assert_eq!(" 7 / 8 ".parse::<Shard>().map(|s| s.to_string()), Ok("7/8".to_string()));
    for bad in ["8/8", "1/0", "x/2", "3", "-1/2"] {
        assert!(bad.parse::<Shard>().is_err(), "{bad}");
    }
    assert_eq!(csv_name("matmul", None), "matmul.csv");
    assert_eq!(csv_name("matmul", Some(Shard { index: 1, count: 4 })), "matmul.shard-1-of-4.csv");
}

#[test]
fn a_run_succeeds_only_when_something_was_measured_and_nothing_failed() {
    let s = |ok, fail, error, invalid, skipped, skipped_ok, skipped_failed| Summary {
        ok,
        fail,
        error,
        invalid,
        skipped,
        skipped_ok,
        skipped_failed,
    };
    let cases = [
        (s(3, 0, 0, 2, 0, 0, 0), true),
        (s(0, 0, 0, 0, 0, 0, 0), true),
        // Every point invalid, or invalid and error: nothing measured.
        (s(0, 0, 0, 4, 0, 0, 0), false),
        (s(0, 0, 1, 4, 0, 0, 0), false),
        (s(3, 1, 0, 0, 0, 0, 0), false),
        (s(3, 0, 1, 0, 0, 0, 0), false),
        // Resumed: the kept rows count.
        (s(0, 0, 0, 0, 5, 5, 0), true),
        (s(0, 0, 0, 1, 5, 4, 0), true),
        (s(2, 0, 0, 0, 5, 4, 1), false),
        (s(0, 0, 0, 0, 3, 0, 0), false),
    ];
    for (summary, success) in cases {
        assert_eq!(summary.success(), success, "{summary:?}");
    }
}

#[test]
#[ignore = "needs a GPU"]
fn a_resumed_run_adds_nothing_and_other_options_are_refused_before_writing() {
    let gpu = Gpu::open(None, 0, None).unwrap_or_else(|e| panic!("this test needs a GPU: {e}"));
    let dir = tempfile::tempdir().unwrap();
    let sweep = smoke::SmokeSweep { sizes: vec![1000, 4096], group_size: 256 };
    let opts = RunOptions {
        out_dir: dir.path().to_path_buf(),
        resume: false,
        shard: None,
        warmup: 1,
        reps: 3,
        time_budget_s: 1.0,
        timing: crate::device::Timing::Graph,
        max_point_s: 60.0,
        telemetry: true,
    };
    let first = run_in_own_folder(&gpu, &sweep, &opts).unwrap();
    assert_eq!((first.ok, first.fail, first.error), (2, 0, 0));
    let csv = dir.path().join("smoke.csv");
    let text = std::fs::read_to_string(&csv).unwrap();
    let resumed = RunOptions { resume: true, ..opts.clone() };
    let again = run_in_own_folder(&gpu, &sweep, &resumed).unwrap();
    assert_eq!((again.ok, again.skipped, again.skipped_ok), (0, 2, 2));
    assert!(again.success());
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), text);
    let err = run_in_own_folder(&gpu, &sweep, &RunOptions { reps: 5, ..resumed.clone() }).unwrap_err();
    assert!(err.to_string().contains("its options differs"), "{err}");
    let other = smoke::SmokeSweep { group_size: 128, ..sweep.clone() };
    let err = run_in_own_folder(&gpu, &other, &resumed).unwrap_err();
    assert!(err.to_string().contains("its options differs"), "{err}");
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), text);
    let run_json = run_json::read(dir.path()).unwrap().unwrap();
    assert_eq!(run_json.invocations.len(), 2, "refused runs record nothing");
    let fingerprint = run_json.invocations[0].fingerprint.clone().unwrap();
    assert!(fingerprint.compiler.starts_with("smoke: "), "{fingerprint:?}");
    assert_eq!(fingerprint.csv_header, header(sweep.results().param_columns(), "gbps").join(","));
}

#[test]
fn slow_points_get_fewer_launches_but_at_least_three_timed() {
    // Fast: everything asked for.
    assert_eq!(launches_within_budget(0.01, 2, 20, 2.0), (2, 20));
    // 100 ms each, 2 s budget: 20 launches fit, all timed, no further warm-up.
    assert_eq!(launches_within_budget(100.0, 2, 20, 2.0), (0, 20));
    // 150 ms: 13 fit.
    assert_eq!(launches_within_budget(150.0, 2, 20, 2.0), (0, 13));
    // 5 s each: still 3 timed.
    assert_eq!(launches_within_budget(5000.0, 2, 20, 2.0), (0, 3));
    // Fewer asked than the floor: what was asked.
    assert_eq!(launches_within_budget(5000.0, 0, 1, 2.0), (0, 1));
    assert_eq!(launches_within_budget(0.0, 1, 5, 0.0), (1, 5));
}

#[test]
fn batches_last_a_millisecond_within_the_budget() {
    // A 5 µs kernel: 200 launches make 1 ms.
    assert_eq!(launches_per_rep(0.005, 2.0), 200);
    // Rounding up: 3 launches of 0.4 ms.
    assert_eq!(launches_per_rep(0.4, 2.0), 3);
    // Already long: alone.
    assert_eq!(launches_per_rep(1.0, 2.0), 1);
    assert_eq!(launches_per_rep(250.0, 2.0), 1);
    // An empty kernel in a batch (~2 µs) would want 500; a 1 ns launch is capped.
    assert_eq!(launches_per_rep(0.000_001, 2.0), MAX_LAUNCHES_PER_REP);
    // The events saw nothing, or nonsense: the most launches, so the batch becomes visible.
    assert_eq!(launches_per_rep(0.0, 2.0), MAX_LAUNCHES_PER_REP);
    assert_eq!(launches_per_rep(f64::NAN, 2.0), MAX_LAUNCHES_PER_REP);
    // A tight budget: three repetitions of the batch must fit (3 × 33 × 0.01 ms ≤ 1 ms).
    assert_eq!(launches_per_rep(0.01, 0.001), 33);
    assert_eq!(launches_per_rep(0.01, 0.0), 1);
}

// ---------------------------------------------------------------------------------------------------------------
// Clocks and power per point: the runner's sampling around the timed repetitions, on a CPU.

use crate::device::telemetry::{Limits, PowerScope, Reason, Reasons, Sample, Telemetry};
use point_telemetry::{PointClocks, PointTelemetry};
use std::sync::Arc;

/// A case on the fake device that also counts its launches where another thread can read them, and spends
/// `sleep_us` of host time in each, so a timed section lasts long enough for several readings.
struct CountingCase<'d> {
    dev: &'d FakeDevice,
    launches: Arc<AtomicU32>,
    sleep_us: u64,
}

impl Case for CountingCase<'_> {
    fn launch(&mut self) -> device::Result<()> {
        self.dev.enqueued.fetch_add(1, Ordering::SeqCst);
        self.launches.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(std::time::Duration::from_micros(self.sleep_us));
        Ok(())
    }
    fn verify(&mut self) -> Result<Verification, Error> {
        unreachable!("the timer does not verify")
    }
    fn work(&self) -> f64 {
        1.0
    }
}

/// A timed section that notes how many launches the case had made when it began and when it ended.
struct Watch(Arc<AtomicU32>, Option<u32>, Option<u32>);

impl TimedSection for Watch {
    fn begin(&mut self) {
        self.1 = Some(self.0.load(Ordering::SeqCst));
    }
    fn end(&mut self) {
        self.2 = Some(self.0.load(Ordering::SeqCst));
    }
}

#[test]
fn the_sampled_section_holds_the_timed_repetitions_and_not_the_warm_up() {
    // On the stream, every launch is the case's own: 1 sizing launch, then a probe batch of B0, then the warm-up
    // batches (3 asked, 2 of them done by the sizing), then 7 timed batches of B.
    let dev = fake(Capture::Works, 0.0, 0.25, 0.0);
    let launches = Arc::new(AtomicU32::new(0));
    let mut case = CountingCase { dev: &dev, launches: Arc::clone(&launches), sleep_us: 0 };
    let mut watch = Watch(Arc::clone(&launches), None, None);
    let timed = time_case_within(&dev, &mut case, &options(Timing::Stream), &mut watch).unwrap();
    let b = timed.launches_per_rep;
    // 0.25 ms per launch: B0 = ceil(1 / 0.25) = 4 and B = 4.
    assert_eq!(b, 4);
    let (begin, end) = (watch.1.expect("begun"), watch.2.expect("ended"));
    assert_eq!(begin, 1 + 4 + b, "the section begins after the sizing launch, the probe and the warm-up batch");
    assert_eq!(end - begin, 7 * b, "and holds the 7 timed batches, nothing else");
    assert_eq!(end, launches.load(Ordering::SeqCst), "nothing is launched after it");
    // With a graph the repetitions are replays, and the section is still around them alone.
    let mut watch = Watch(Arc::clone(&launches), None, None);
    time_case_within(&dev, &mut case, &options(Timing::Graph), &mut watch).unwrap();
    assert_eq!(watch.2, Some(launches.load(Ordering::SeqCst)));
    assert_eq!(watch.1, watch.2, "replays launch nothing of the case's own, and the capture is before the section");
    // A host-clock sequence: after its sizing call and 2 warm-ups, around its 7 timed calls.
    let mut host = HostSequence { dev: &dev, ms: 0, calls: 0 };
    let before = dev.enqueued.load(Ordering::SeqCst);
    struct Calls<'a>(&'a FakeDevice, u32, Option<u32>, Option<u32>);
    impl TimedSection for Calls<'_> {
        fn begin(&mut self) {
            self.2 = Some(self.0.enqueued.load(Ordering::SeqCst) - self.1);
        }
        fn end(&mut self) {
            self.3 = Some(self.0.enqueued.load(Ordering::SeqCst) - self.1);
        }
    }
    let mut calls = Calls(&dev, before, None, None);
    time_case_within(&dev, &mut host, &options(Timing::Graph), &mut calls).unwrap();
    assert_eq!((calls.2, calls.3), (Some(3), Some(10)));
}

/// A test double of the GPU's management library (NVML, AMD SMI): it reads no hardware. It answers every reading
/// with a fixture sample (`first` for the first reading, `rest` after it), or fails every reading; its limits are an
/// H100 SXM's (1980 MHz, 700 W).
struct FixtureTelemetry {
    first: Sample,
    rest: Sample,
    fail: bool,
    readings: Arc<AtomicU32>,
}

impl Telemetry for FixtureTelemetry {
    fn sample(&self) -> device::Result<Sample> {
        let n = self.readings.fetch_add(1, Ordering::SeqCst);
        if self.fail {
            return Err(device::telemetry::unavailable("fixture: every reading fails"));
        }
        Ok(if n == 0 { self.first.clone() } else { self.rest.clone() })
    }
    fn limits(&self) -> Limits {
        Limits {
            max_sm_clock_mhz: Some(1980),
            max_mem_clock_mhz: Some(2619),
            power_limit_w: Some(700.0),
            power_scope: PowerScope::Device,
        }
    }
    fn source(&self) -> String {
        "fixture telemetry (test double)".into()
    }
}

/// A fixture reading: SM clock, power and reasons as given, memory at 2619 MHz, `temp` °C.
fn reading(sm: u32, power: f64, temp: f64, reasons: &[Reason]) -> Sample {
    Sample {
        t_ms: 0.0,
        sm_clock_mhz: Some(sm),
        mem_clock_mhz: Some(2619),
        power_w: Some(power),
        temperature_c: Some(temp),
        reasons: Some(Reasons::of(reasons)),
    }
}

/// One point timed by the runner's functions with `telemetry` sampling (every ms) around its repetitions on the
/// fake device, its row written to a CSV and read back: the row's columns, and the readings taken.
fn sampled_row(mut telemetry: PointTelemetry) -> BTreeMap<String, String> {
    // 0.5 ms of host time per launch: 7 repetitions of 2 launches keep the sampler busy for 7 ms or more.
    let dev = fake(Capture::Works, 0.0, 0.5, 0.0);
    let mut case = CountingCase { dev: &dev, launches: Arc::new(AtomicU32::new(0)), sleep_us: 500 };
    let (timed, clocks) =
        runner::time_sampled(&dev, &mut case, &options(Timing::Stream), &mut telemetry, &Default::default()).unwrap();
    assert!(!format!("{telemetry:?}").is_empty());
    let mut row = crate::report::csv::Row::unmeasured("fixture/point", vec![], crate::report::csv::Status::Ok, "");
    runner::record_timed(&mut row, timed, 1.0, clocks);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fixture.csv");
    let context = crate::report::csv::Context {
        experiment: "fixture".into(),
        platform: "nvidia".into(),
        device: "fake".into(),
        arch: "sm_90".into(),
        wave_size: 32,
    };
    let mut log = crate::report::csv::CsvLog::open(&path, context, &header(&[], "gbps"), false).unwrap();
    log.append(&row).unwrap();
    drop(log);
    crate::report::csv::read_rows(&path).unwrap().remove(0)
}

fn fixture(first: Sample, rest: Sample, fail: bool) -> (PointTelemetry, Arc<AtomicU32>) {
    let readings = Arc::new(AtomicU32::new(0));
    let double = FixtureTelemetry { first, rest, fail, readings: Arc::clone(&readings) };
    (PointTelemetry::sampling(Box::new(double), std::time::Duration::from_millis(1)), readings)
}

fn columns(row: &BTreeMap<String, String>) -> Vec<(&str, &str)> {
    crate::report::csv::TELEMETRY_COLUMNS.iter().map(|c| (*c, row[*c].as_str())).collect()
}

#[test]
fn the_throttle_flag_is_set_from_a_reading_that_says_so_and_not_otherwise() {
    // A point whose first reading is calm and every later one reports the power cap, at 1755 MHz: throttled, and
    // below the steady clock (1755 < 0.95 x 1980 = 1881 MHz).
    let (telemetry, readings) =
        fixture(reading(1980, 400.0, 55.0, &[]), reading(1755, 699.0, 71.0, &[Reason::PowerCap]), false);
    let row = sampled_row(telemetry);
    let n = readings.load(Ordering::SeqCst);
    assert!(n >= 3, "a reading at start, at stop and every ms between: {n}");
    let samples = n.to_string();
    assert_eq!(
        columns(&row),
        [
            ("sm_clock_mhz", "1755"),
            ("mem_clock_mhz", "2619"),
            ("power_w", "699"),
            ("temperature_c", "71"),
            ("throttled", "true"),
            ("throttle_reasons", "power_cap"),
            ("below_steady_clock", "true"),
            ("telemetry_samples", samples.as_str()),
        ]
    );
    assert_eq!((row["status"].as_str(), row["message"].as_str(), row["timing"].as_str()), ("ok", "", "stream"));

    // The same GPU at its maximum clock, idle-and-sync-boost readings included: not throttled, not below.
    let (telemetry, _) =
        fixture(reading(1980, 120.0, 40.0, &[Reason::Idle]), reading(1980, 450.0, 52.0, &[Reason::SyncBoost]), false);
    let row = sampled_row(telemetry);
    assert_eq!((row["throttled"].as_str(), row["below_steady_clock"].as_str()), ("false", "false"));
    assert_eq!((row["sm_clock_mhz"].as_str(), row["throttle_reasons"].as_str()), ("1980", "sync_boost+idle"));

    // A thermal limit at full clock: throttled, not below the steady clock.
    let (telemetry, _) =
        fixture(reading(1980, 300.0, 80.0, &[Reason::Thermal]), reading(1965, 310.0, 87.0, &[Reason::Thermal]), false);
    let row = sampled_row(telemetry);
    assert_eq!((row["throttled"].as_str(), row["below_steady_clock"].as_str()), ("true", "false"));
    assert_eq!(row["temperature_c"], "87");

    // No telemetry (no NVML, or --no-telemetry): the columns are empty, the point is timed all the same.
    let row = sampled_row(PointTelemetry::off("not available: fixture".into()));
    assert!(columns(&row).iter().all(|(_, v)| v.is_empty()), "{:?}", columns(&row));
    assert_eq!((row["status"].as_str(), row["message"].as_str()), ("ok", ""));

    // Readings that all fail: empty columns, and the row says why.
    let (telemetry, readings) = fixture(reading(1980, 1.0, 1.0, &[]), reading(1980, 1.0, 1.0, &[]), true);
    let row = sampled_row(telemetry);
    assert!(readings.load(Ordering::SeqCst) >= 2);
    assert!(columns(&row).iter().all(|(_, v)| v.is_empty()), "{:?}", columns(&row));
    assert_eq!(row["message"], "no clock readings: telemetry not available: fixture: every reading fails");
}

#[test]
fn a_failed_repetition_stops_the_sampler_and_run_json_gets_the_source_and_readings() {
    // Events that see no time fail the point after its repetitions: the sampler is stopped, nothing is summarised.
    let (mut telemetry, readings) = fixture(reading(1980, 1.0, 1.0, &[]), reading(1980, 1.0, 1.0, &[]), false);
    let dev = fake(Capture::Works, 0.0, 0.0, 0.0);
    let err =
        runner::time_sampled(&dev, &mut FakeCase(&dev), &options(Timing::Graph), &mut telemetry, &Default::default())
            .unwrap_err();
    assert!(err.to_string().contains("saw no time"), "{err}");
    let after = readings.load(Ordering::SeqCst);
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(readings.load(Ordering::SeqCst), after, "no reading after the point ended");
    assert_eq!(telemetry.finish_point(), PointClocks::default());
    // What run.json records at the start: the source, the period, the limits and a reading.
    let record = telemetry.record();
    assert_eq!(record.source, "fixture telemetry (test double)");
    assert_eq!(record.period_ms, Some(1.0));
    assert_eq!(record.limits.as_ref().and_then(|l| l.max_sm_clock_mhz), Some(1980));
    let start = record.start.expect("a reading at the start");
    assert_eq!((start.sm_clock_mhz, start.power_w, start.reasons.as_deref()), (Some(1980), Some(1.0), Some("none")));
    assert!(start.date.ends_with('Z'), "{}", start.date);
    // Off: one line says why, and nothing is read.
    let off = PointTelemetry::off("off: --no-telemetry".into());
    assert_eq!((off.record().source.as_str(), off.record().start, off.reading()), ("off: --no-telemetry", None, None));
}
