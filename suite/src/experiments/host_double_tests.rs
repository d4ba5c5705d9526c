//! A test double for the GPU that runs on the host: an MI250X GCD as planned ([`crate::planning::PlanningDevice`]:
//! its properties, the gfx90a code objects' kernels and the calculator's occupancy), with device memory in host
//! memory and a few kernels replayed in Rust, so the experiments' own `prepare` and `verify` run unchanged on a CPU.
//! It measures nothing about a GPU: it is here to check what points share (a shared buffer re-initialised where a
//! kernel wrote it, a shared reference used only where it fits) and to time the host's part of a point
//! ([`host_phases`]). A kernel it does not replay, or one named broken, writes nothing, so its point fails
//! verification.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Instant;

use super::{Experiment, RunContext};
use crate::device::{
    self, Arg, BlasCall, Device, Kernel, LaunchConfig, Module, Props, RawAlloc, Replay, Result as DeviceResult,
};
use crate::experiments::occupancy::{lds_expected, registers_expected, RECORD_WORDS};
use crate::gpu::Gpu;
use crate::planning::PlanningDevice;

/// One allocation: its words (8-byte aligned, so any element type can be cast from them) and its size.
type Memory = Arc<Mutex<Vec<u64>>>;

/// Memory freed on the double, handed out again as it was left, the last freed first (as a GPU's allocator may hand back the memory of
/// the buffer just freed, with its contents), at most [`POOL`] blocks.
type Pool = Arc<Mutex<Vec<Vec<u64>>>>;

/// Freed blocks the double keeps for reuse.
const POOL: usize = 8;

/// Device memory of the double: a fake address and the host memory behind it.
struct HostAlloc {
    ptr: u64,
    bytes: usize,
    memory: Memory,
    pool: Pool,
}

impl Drop for HostAlloc {
    fn drop(&mut self) {
        if let Ok(memory) = Arc::try_unwrap(std::mem::take(&mut self.memory)) {
            let mut pool = self.pool.lock().unwrap();
            pool.push(memory.into_inner().unwrap());
            if pool.len() > POOL {
                pool.remove(0);
            }
        }
    }
}

impl RawAlloc for HostAlloc {
    fn device_ptr(&self) -> u64 {
        self.ptr
    }
    fn bytes(&self) -> usize {
        self.bytes
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The host-memory double of an MI250X GCD (see the module's comment).
pub(super) struct HostDevice {
    plan: PlanningDevice,
    next_ptr: AtomicU64,
    allocations: Mutex<HashMap<u64, Weak<Mutex<Vec<u64>>>>>,
    pool: Pool,
    /// Kernels that write nothing when launched (a broken kernel, for the tests).
    broken: BTreeSet<String>,
    /// Launches made, replayed or not.
    pub(super) launches: AtomicU64,
    started: Instant,
}

impl HostDevice {
    /// The double, with `broken` kernels writing nothing.
    pub(super) fn new(broken: &[&str]) -> HostDevice {
        let part = crate::planning::part("mi250x-gcd").expect("the catalogue has the MI250X GCD");
        HostDevice {
            plan: PlanningDevice::new(part),
            next_ptr: AtomicU64::new(1 << 40),
            allocations: Mutex::default(),
            pool: Pool::default(),
            broken: broken.iter().map(|s| s.to_string()).collect(),
            launches: AtomicU64::new(0),
            started: Instant::now(),
        }
    }

    /// A session on the double, with its kernels from the local compiler's cache.
    pub(super) fn gpu(broken: &[&str]) -> Gpu {
        Gpu::with_device(Box::new(HostDevice::new(broken)), None)
    }

    fn own<'a>(&self, alloc: &'a dyn RawAlloc) -> &'a HostAlloc {
        alloc.as_any().downcast_ref::<HostAlloc>().expect("memory of the host double")
    }

    /// The memory behind a pointer argument.
    fn memory(&self, arg: &Arg) -> Memory {
        let Arg::Ptr(ptr) = arg else { panic!("{arg:?} is not a pointer") };
        let allocations = self.allocations.lock().unwrap();
        allocations.get(ptr).and_then(Weak::upgrade).unwrap_or_else(|| panic!("{ptr:#x} is not an allocation"))
    }

    fn replay(&self, kernel: &Kernel, config: &LaunchConfig, args: &[Arg]) {
        self.launches.fetch_add(1, Ordering::SeqCst);
        if self.broken.contains(&kernel.name) {
            return;
        }
        let u32_at = |i: usize| match args[i] {
            Arg::U32(v) => v as usize,
            other => panic!("argument {i} of {}: {other:?}", kernel.name),
        };
        let name = kernel.name.as_str();
        match name {
            "occupancy_vector_add" | "occupancy_vector_add_x4" | "occupancy_lds" | "occupancy_lds_x4" => {
                let (a, b, out) = (self.memory(&args[0]), self.memory(&args[1]), self.memory(&args[2]));
                let n = u32_at(3);
                let (a, b, mut out) = (lock(&a), lock(&b), lock(&out));
                let (a, b) = (&floats(&a)[..n], &floats(&b)[..n]);
                let want = match name.strip_prefix("occupancy_lds") {
                    Some(x4) => lds_expected(a, b, config.group[0] as usize, if x4.is_empty() { 1 } else { 4 }),
                    None => a.iter().zip(b).map(|(x, y)| x + y).collect(),
                };
                floats_mut(&mut out)[..n].copy_from_slice(&want);
            }
            "occupancy_copy" | "occupancy_copy_x4" => {
                let (a, out, n) = (self.memory(&args[0]), self.memory(&args[1]), u32_at(2));
                let (a, mut out) = (lock(&a), lock(&out));
                floats_mut(&mut out)[..n].copy_from_slice(&floats(&a)[..n]);
            }
            "occupancy_chunks" | "occupancy_chunks_barrier" => {
                let (a, b, out) = (self.memory(&args[0]), self.memory(&args[1]), self.memory(&args[2]));
                let n = config.grid[0] as usize * u32_at(3);
                {
                    let (a, b, mut out) = (lock(&a), lock(&b), lock(&out));
                    let (a, b) = (&floats(&a)[..n], &floats(&b)[..n]);
                    floats_mut(&mut out)[..n].iter_mut().zip(a.iter().zip(b)).for_each(|(o, (x, y))| *o = x + y);
                }
                if args[5] != Arg::Ptr(0) {
                    self.record(&args[5], config, 1);
                }
            }
            "occupancy_spin" => {
                let Arg::U64(ticks) = args[0] else { panic!("occupancy_spin's ticks") };
                self.record(&args[1], config, ticks);
            }
            "occupancy_clock" => {
                let out = self.memory(&args[0]);
                lock(&out)[0] = self.started.elapsed().as_nanos() as u64;
            }
            _ if name.starts_with("occupancy_registers_r") => {
                let values = name["occupancy_registers_r".len()..].parse::<usize>().expect("R");
                let (a, out, n, rounds) = (self.memory(&args[0]), self.memory(&args[1]), u32_at(2), u32_at(3));
                let (a, mut out) = (lock(&a), lock(&out));
                floats_mut(&mut out)[..n].copy_from_slice(&registers_expected(&floats(&a)[..n], values, rounds));
            }
            "smoke_triad" => {
                let (a, b, c) = (self.memory(&args[0]), self.memory(&args[1]), self.memory(&args[2]));
                let (Arg::F32(s), n) = (args[3], u32_at(4)) else { panic!("smoke_triad's scalar") };
                let (mut a, b, c) = (lock(&a), lock(&b), lock(&c));
                let (b, c) = (&floats(&b)[..n], &floats(&c)[..n]);
                floats_mut(&mut a)[..n].iter_mut().zip(b.iter().zip(c)).for_each(|(a, (b, c))| *a = b + s * c);
            }
            "pt_jacobi_step" => {
                let (src, dst, n) = (self.memory(&args[0]), self.memory(&args[1]), u32_at(2));
                jacobi_step(&floats(&lock(&src))[..n], &mut floats_mut(&mut lock(&dst))[..n]);
            }
            "pt_jacobi_coop" | "pt_jacobi_soft" => {
                let (a, b, n, steps) = (self.memory(&args[0]), self.memory(&args[1]), u32_at(2), u32_at(3));
                let (mut a, mut b) = (lock(&a), lock(&b));
                for s in 0..steps {
                    let (src, dst) = if s % 2 == 0 { (&a, &mut b) } else { (&b, &mut a) };
                    jacobi_step(&floats(src)[..n], &mut floats_mut(dst)[..n]);
                }
            }
            _ => {}
        }
    }

    /// A timeline's records, one per wave: CU 0, its group, starting at 0 and lasting `ticks`.
    fn record(&self, arg: &Arg, config: &LaunchConfig, ticks: u64) {
        let memory = self.memory(arg);
        let mut words = lock(&memory);
        let waves = self.plan.props().wave_size.waves_for(config.group[0]) as usize;
        for (w, record) in words.chunks_mut(RECORD_WORDS).take(config.grid[0] as usize * waves).enumerate() {
            record.copy_from_slice(&[0, (w / waves) as u64, 0, ticks][..RECORD_WORDS]);
        }
    }
}

/// `x` after one Jacobi step in the kernels' order ([`crate::experiments::pt::jacobi_reference`]'s step).
fn jacobi_step(x: &[f32], out: &mut [f32]) {
    let n = x.len();
    for (i, o) in out.iter_mut().enumerate() {
        *o = if i == 0 || i + 1 == n { x[i] } else { ((x[i - 1] + x[i]) + x[i + 1]) * (1.0f32 / 3.0) };
    }
}

fn lock(memory: &Memory) -> MutexGuard<'_, Vec<u64>> {
    memory.lock().unwrap()
}

fn floats(words: &[u64]) -> &[f32] {
    bytemuck::cast_slice(words)
}

fn floats_mut(words: &mut [u64]) -> &mut [f32] {
    bytemuck::cast_slice_mut(words)
}

impl Device for HostDevice {
    fn props(&self) -> &Props {
        self.plan.props()
    }
    fn memory_info(&self) -> DeviceResult<(u64, u64)> {
        self.plan.memory_info()
    }
    fn alloc(&self, bytes: usize) -> DeviceResult<Box<dyn RawAlloc>> {
        let words = bytes.div_ceil(8);
        let reused = {
            let mut pool = self.pool.lock().unwrap();
            pool.iter().rposition(|m| m.len() == words).map(|i| pool.remove(i))
        };
        // Memory of a freed buffer of the same size comes back as it was left; new memory is zeroed.
        let memory: Memory = Arc::new(Mutex::new(reused.unwrap_or_else(|| vec![0u64; words])));
        let ptr = self.next_ptr.fetch_add((bytes as u64).div_ceil(4096) * 4096 + 4096, Ordering::SeqCst);
        let mut allocations = self.allocations.lock().unwrap();
        allocations.retain(|_, m| m.strong_count() > 0);
        allocations.insert(ptr, Arc::downgrade(&memory));
        Ok(Box::new(HostAlloc { ptr, bytes, memory, pool: self.pool.clone() }))
    }
    fn copy_to_device(&self, dst: &dyn RawAlloc, src: &[u8]) -> DeviceResult<()> {
        let mut words = lock(&self.own(dst).memory);
        bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..src.len()].copy_from_slice(src);
        Ok(())
    }
    fn copy_to_host(&self, src: &dyn RawAlloc, dst: &mut [u8]) -> DeviceResult<()> {
        let words = lock(&self.own(src).memory);
        dst.copy_from_slice(&bytemuck::cast_slice::<u64, u8>(&words)[..dst.len()]);
        Ok(())
    }
    fn copy_on_device(&self, src: &dyn RawAlloc, dst: &dyn RawAlloc, bytes: usize) -> DeviceResult<()> {
        let (src, dst) = (lock(&self.own(src).memory), &mut lock(&self.own(dst).memory));
        bytemuck::cast_slice_mut::<u64, u8>(dst)[..bytes].copy_from_slice(&bytemuck::cast_slice(&src)[..bytes]);
        Ok(())
    }
    fn fill_bytes(&self, dst: &dyn RawAlloc, value: u8) -> DeviceResult<()> {
        lock(&self.own(dst).memory).fill(u64::from_ne_bytes([value; 8]));
        Ok(())
    }
    fn load_module(&self, image: &[u8]) -> DeviceResult<Module> {
        self.plan.load_module(image)
    }
    fn kernel(&self, module: &Module, name: &str) -> DeviceResult<Kernel> {
        self.plan.kernel(module, name)
    }
    fn launch(&self, kernel: &Kernel, config: &LaunchConfig, args: &[Arg]) -> DeviceResult<()> {
        kernel.check_args(args)?;
        self.replay(kernel, config, args);
        Ok(())
    }
    fn launch_cooperative(&self, kernel: &Kernel, config: &LaunchConfig, args: &[Arg]) -> DeviceResult<()> {
        self.launch(kernel, config, args)
    }
    fn occupancy_groups_per_cu(&self, kernel: &Kernel, group_size: u32, dynamic_lds: u32) -> DeviceResult<u32> {
        self.plan.occupancy_groups_per_cu(kernel, group_size, dynamic_lds)
    }
    fn time_ms(&self, work: &mut dyn FnMut() -> DeviceResult<()>) -> DeviceResult<f32> {
        work()?;
        Ok(1.0)
    }
    fn capture(
        &self,
        _times: u32,
        _work: &mut dyn FnMut() -> DeviceResult<()>,
    ) -> DeviceResult<Option<Box<dyn Replay + '_>>> {
        Ok(None)
    }
    fn synchronize(&self) -> DeviceResult<()> {
        Ok(())
    }
    fn blas(&self) -> DeviceResult<String> {
        Err(device::Error::BlasNotFound { library: "no BLAS", hint: "the host double has none", tried: vec![] })
    }
    fn blas_call(&self, _: BlasCall<'_>) -> DeviceResult<()> {
        Err(device::Error::BlasNotFound { library: "no BLAS", hint: "the host double has none", tried: vec![] })
    }
}

/// One point's host phases on the double: (key, prepare ms, verify ms, passed).
pub(super) type PointPhases = (String, f64, f64, bool);

/// Every valid point of `exp` on `gpu` (a [`HostDevice`] session): prepared, launched once and verified in order,
/// as the runner does, with the host time of `prepare` and of `verify` (the launch, replayed on the host, is not
/// counted).
pub(super) fn host_phases(gpu: &Gpu, exp: &dyn Experiment) -> Vec<PointPhases> {
    gpu.load_all(exp.sources()).expect("the kernels build");
    let ctx = RunContext::new(gpu, None);
    let mut out = Vec::new();
    for point in exp.points(&ctx).into_iter().filter(|p| p.invalid.is_none()) {
        let started = Instant::now();
        let mut case = exp.prepare(&ctx, &point).unwrap_or_else(|e| panic!("{}: {e}", point.key));
        let prepare_ms = started.elapsed().as_secs_f64() * 1e3;
        case.launch().unwrap();
        let started = Instant::now();
        let passed = case.verify().is_ok_and(|v| v.passed());
        out.push((point.key, prepare_ms, started.elapsed().as_secs_f64() * 1e3, passed));
    }
    out
}

/// `cargo test --release -p suite --lib host_phases_per_point -- --ignored --nocapture`: the host time of `prepare`
/// and `verify` per point of the full sweeps of occupancy, pt's Jacobi points and smoke on the host double. A
/// benchmark (it prints, it asserts only that the points pass), ignored because it takes minutes.
#[test]
#[ignore = "benchmark: host phases of the full sweeps on the host double (minutes, a release build)"]
fn host_phases_per_point() {
    use super::entry::Sweep;
    let pt = super::pt::PtSweep { use_cases: vec!["jacobi".into()], ..Default::default() };
    let sweeps: [(&str, Box<dyn Experiment>); 3] = [
        ("occupancy", Box::new(super::occupancy::OccupancySweep::default().check().unwrap())),
        ("pt jacobi", Box::new(pt)),
        ("smoke", Box::new(super::smoke::SmokeSweep::default())),
    ];
    for (name, exp) in sweeps {
        let gpu = HostDevice::gpu(&[]);
        let points = host_phases(&gpu, exp.as_ref());
        for (key, prepare, verify, passed) in &points {
            println!(
                "{name:<10} {key:<60} prepare {prepare:>8.1} ms  verify {verify:>8.1} ms  {}",
                if *passed { "ok" } else { "FAIL" }
            );
        }
        let n = points.len() as f64;
        let (prepare, verify): (f64, f64) = points.iter().fold((0.0, 0.0), |(p, v), x| (p + x.1, v + x.2));
        println!(
            "{name}: {} points, per point: prepare {:.1} ms, verify {:.1} ms, host {:.1} ms",
            points.len(),
            prepare / n,
            verify / n,
            (prepare + verify) / n
        );
        assert!(points.iter().all(|p| p.3), "{name}: every point passes on the double");
    }
}

/// The occupancy sweep of `args` (its command line after `suite run occupancy`).
fn occupancy(args: &[&str]) -> Box<dyn Experiment> {
    let entry = &super::occupancy::ENTRY;
    let matches = (entry.flags)(clap::Command::new("occupancy"))
        .try_get_matches_from(std::iter::once("occupancy").chain(args.iter().copied()))
        .unwrap();
    (entry.sweep)(&matches).unwrap()
}

/// The keys of the points that passed, and of those that did not.
fn outcome(points: &[PointPhases]) -> (Vec<&str>, Vec<&str>) {
    let (passed, failed): (Vec<_>, Vec<_>) = points.iter().partition(|p| p.3);
    (passed.iter().map(|p| p.0.as_str()).collect(), failed.iter().map(|p| p.0.as_str()).collect())
}

#[test]
fn a_point_whose_kernel_writes_nothing_fails_after_a_point_that_left_the_right_values_in_the_shared_output() {
    // Every point of these sweeps shares the inputs and the output buffer; each point before the broken one leaves
    // exactly the values the broken one should write (a + b, or a) in that output.
    let sweep = occupancy(&[
        "--elements",
        "5000",
        "--group-sizes",
        "64,128",
        "--sweeps",
        "copy,copy_kernel,group_size,group_size_x4",
    ]);
    let gpu = HostDevice::gpu(&["occupancy_copy_x4", "occupancy_vector_add_x4"]);
    let points = host_phases(&gpu, sweep.as_ref());
    let (passed, failed) = outcome(&points);
    assert_eq!(passed, ["copy/n=5000", "copy_kernel/w=1,n=5000", "group_size/g=64,n=5000", "group_size/g=128,n=5000"]);
    assert_eq!(failed, ["copy_kernel/w=4,n=5000", "group_size_x4/g=64,n=5000", "group_size_x4/g=128,n=5000"]);
}

#[test]
fn points_of_several_sizes_and_ranges_each_pass_on_the_inputs_they_fit() {
    // The whole sweep, small: the vector adds at --elements, the group counts and barriers on the start of the same
    // inputs (shorter), the register kernels on inputs of their own range, the probes between them keeping nothing.
    let sweep = occupancy(&[
        "--elements",
        "20000",
        "--group-sizes",
        "64,96",
        "--lds-bytes",
        "4096",
        "--chunk",
        "64",
        "--passes",
        "2",
    ]);
    let gpu = HostDevice::gpu(&[]);
    let points = host_phases(&gpu, sweep.as_ref());
    let (_, failed) = outcome(&points);
    assert!(failed.is_empty(), "{failed:?}");
    for sweep in ["copy", "group_size_x4", "group_count", "group_count_spin", "barrier", "lds_x4", "registers"] {
        assert!(points.iter().any(|p| p.0.starts_with(&format!("{sweep}/"))), "{sweep} ran");
    }
}

#[test]
fn jacobi_points_share_a_reference_only_with_their_own_steps_and_a_kernel_writing_nothing_fails() {
    let pt = |steps: Vec<u32>| super::pt::PtSweep {
        use_cases: vec!["jacobi".into()],
        jacobi_sizes: vec![5000],
        steps,
        groups_per_cu: vec![super::pt::PerCu::Max],
        ..Default::default()
    };
    // Two step counts in a row: each reference is its own (one shared across them fails the second's points).
    let points = host_phases(&HostDevice::gpu(&[]), &pt(vec![3, 5]));
    assert_eq!(points.len(), 12);
    assert!(outcome(&points).1.is_empty(), "{:?}", outcome(&points).1);
    // An odd step count ends in `b`: the software-barrier kernel that writes nothing is caught although the points
    // before it left the reference in a buffer of the same size (the double hands freed memory back as it was).
    let points = host_phases(&HostDevice::gpu(&["pt_jacobi_soft"]), &pt(vec![3]));
    let (passed, failed) = outcome(&points);
    assert_eq!(failed, ["jacobi/pt_soft/n=5000,steps=3/host", "jacobi/pt_soft/n=5000,steps=3/device"]);
    assert_eq!(passed.len(), 4);
}
