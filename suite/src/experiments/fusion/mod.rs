//! Kernel fusion (seed: `composable-gpu-programming-steuwer.txt`): reductions written as composed patterns
//! ([`crate::fusion`]) against a hand-written kernel and the vendor BLAS.
//!
//! Three operations over FP32 vectors: **sum** `reduce(+, x)`, **dot** `reduce(+, map(mul, zip(x, y)))` and
//! **asum** `reduce(+, map(abs, x))`. Five variants of each:
//! - `hand`: the classic two-stage reduction in `kernels/fusion.hip` (partials per group, then one group adds
//!   them), the seed's CUDA baseline, which the speedups are relative to;
//! - `unfused`: the map is an eager action, a kernel of its own writing a temporary vector that the reduction reads
//!   back (Thrust's `transform` + `reduce`); sum has no map, so its `unfused` point is `invalid` (nothing to unfuse);
//! - `fused`: the map is a lazy view fused into the reduction: one kernel (single pass, see [`crate::fusion`]);
//! - `fused_staged`: the fused source compiled at run time with the size, the grid and the elements per item as
//!   constants (`-D` defines through the kernel cache): the seed's multi-staging. Its compile cost, cold and
//!   cached, goes to `fusion_compile.csv` beside the CSV;
//! - `vendor`: cuBLAS / rocBLAS `sdot` and `sasum`, the result left on the device. Sum has no BLAS routine: its
//!   vendor row is `sasum` of the same vector (same bytes read), checked against Σ|x|, its own result.
//!
//! Each point is measured twice (`measure` column): `device`, the reduction alone with its result left in device
//! memory, batched like every kernel (a CUDA graph of B launches); `end_to_end`, the call that returns the float to
//! the host (launches plus a 4-byte read back), timed by the host clock. A `copy` row per size
//! (`copy_on_device` of x, GB/s = 8n / time) gives the memory's practical bandwidth for the GB/s plots.
//!
//! **Verification.** Every result is compared with the f64 sum of the same terms (x, x·y or |x| of the FP32
//! inputs, exact in f64). A sum of terms tᵢ in FP32, in any order whose additions form a tree of depth D (the
//! longest chain of additions one term passes through), is within γ_D·Σ|tᵢ| of the exact sum, γ_D = D·u/(1 − D·u),
//! u = 2⁻²⁴ (Higham, *Accuracy and Stability of Numerical Algorithms*, §4.2); a term rounded itself (the product
//! x·y, a temporary stored in FP32) adds u·Σ|tᵢ|. So the error is measured **relative to Σ|tᵢ|** and allowed
//! γ_D + u. Our kernels' D is known from their geometry ([`Geometry::addition_depth`]: elements per item, two
//! 256-item trees and the partials loop: 148 at 2^25 on an H100); the vendor's order is not, so it gets D =
//! ⌈n/256⌉ + 2·⌈log2 n⌉ (at least 256 partial sums, which every GPU reduction has). Inputs are uniform in
//! [−1, 1], so sums cancel: |Σx| ~ √n while Σ|x| ~ n/2, and a tolerance relative to the result would be wrong.
//! The check catches a lost or doubled group, a wrong map, a stale ticket or a result never written (NaN); one
//! lost element of average size hides below the bound at these sizes, as in any FP32 sum check.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use serde::Serialize;

use super::entry::Entry;
use super::estimate::{LAUNCH_S, STREAMING_SHARE};
use super::registry::parsed;
use super::{Case, Clock, Error, Experiment, Metric, Point};
use crate::device::{Arg, Buffer, Kernel, LaunchConfig};
use crate::fusion::{input, zip, Binary, Geometry, Program, Reduce, Rendered, Unary, GROUP_SIZE};
use crate::gpu::Gpu;
use crate::kernels::{DeviceShape, Specialisation};
use crate::options;
use crate::options::{bytes_of, Memory};
use crate::report::plot::{Axis, LinePlot, Series};
use crate::verify::{self, Verification};
use clap::{ArgMatches, Args};

/// The operations, in sweep order.
pub const OPERATIONS: [&str; 3] = ["sum", "dot", "asum"];
/// The variants, in sweep (and legend) order.
pub const VARIANTS: [&str; 5] = ["hand", "unfused", "fused", "fused_staged", "vendor"];
/// The two measures of every point.
pub const MEASURES: [&str; 2] = ["device", "end_to_end"];

/// FP32 unit roundoff, 2⁻²⁴.
const U: f64 = f32::EPSILON as f64 / 2.0;

/// The fusion sweep. Each field is one flag of `suite run fusion`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FusionSweep {
    /// Elements per vector.
    pub sizes: Vec<usize>,
    /// Operations to run (of [`OPERATIONS`]).
    pub operations: Vec<String>,
    /// Variants to run (of [`VARIANTS`]).
    pub variants: Vec<String>,
    /// Results folder, for `fusion_compile.csv` (run state, not an option).
    #[serde(skip)]
    results_dir: Option<PathBuf>,
    /// The inputs of the size being run (run state).
    #[serde(skip)]
    inputs: super::RunCache<Inputs>,
}

impl Default for FusionSweep {
    /// Every power of two from 2^15 to 2^25 elements (128 KiB to 128 MiB per vector, from L2-resident to far past
    /// the 50 MiB L2 of an H100), all operations and variants: the seed's range.
    fn default() -> Self {
        FusionSweep::new((15..=25).map(|e| 1usize << e).collect(), Vec::new(), Vec::new())
    }
}

/// One operation: its fused and eager programs and what it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Sum,
    Dot,
    Asum,
}

impl Op {
    fn parse(s: &str) -> Option<Op> {
        match s {
            "sum" => Some(Op::Sum),
            "dot" => Some(Op::Dot),
            "asum" => Some(Op::Asum),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Op::Sum => "sum",
            Op::Dot => "dot",
            Op::Asum => "asum",
        }
    }

    /// The operation written with the patterns, the map a lazy view (fused) or an eager action (unfused; `None`
    /// for sum, which has no map).
    fn program(self, fused: bool) -> Option<Program> {
        Some(match (self, fused) {
            (Op::Sum, true) => input(0).reduce(Reduce::Add),
            (Op::Sum, false) => return None,
            (Op::Dot, true) => zip(input(0), input(1)).map(Binary::Mul).reduce(Reduce::Add),
            (Op::Dot, false) => zip(input(0), input(1)).map(Binary::Mul).transform(Unary::Identity).reduce(Reduce::Add),
            (Op::Asum, true) => input(0).map(Unary::Abs).reduce(Reduce::Add),
            (Op::Asum, false) => input(0).transform(Unary::Abs).reduce(Reduce::Add),
        })
    }

    /// Input vectors read.
    fn inputs(self) -> u64 {
        if self == Op::Dot {
            2
        } else {
            1
        }
    }

    /// The hand-written stage-1 kernel.
    fn hand_symbol(self) -> &'static str {
        match self {
            Op::Sum => "fusion_hand_sum",
            Op::Dot => "fusion_hand_dot",
            Op::Asum => "fusion_hand_asum",
        }
    }
}

/// Groups that fill the device: CUs × (resident items per CU / group size), at least one per CU.
fn resident_groups(device: DeviceShape) -> u32 {
    device.cu_count.saturating_mul((device.max_items_per_cu / GROUP_SIZE).max(1))
}

/// The generated source of `variant` (`unfused`, `fused` or `fused_staged`) of `op` and its `-D` values for
/// `geometry`: what a point compiles at run time, and what `suite kernels build` makes ahead of time.
fn generated(op: Op, variant: &str, geometry: &Geometry) -> Option<(Program, Rendered, Vec<String>)> {
    let program = match variant {
        "unfused" | "fused" | "fused_staged" => op.program(variant != "unfused")?,
        _ => return None,
    };
    let rendered = program.render(&format!("fusion_{}", op.name()));
    let defines = if variant == "fused_staged" { Program::stage_defines(geometry) } else { Vec::new() };
    Some((program, rendered, defines))
}

impl FusionSweep {
    /// A sweep of `sizes`; empty `operations` or `variants` mean all of them.
    pub fn new(sizes: Vec<usize>, operations: Vec<String>, variants: Vec<String>) -> FusionSweep {
        let all = |v: Vec<String>, names: &[&str]| {
            if v.is_empty() {
                names.iter().map(|s| s.to_string()).collect()
            } else {
                v
            }
        };
        FusionSweep {
            sizes,
            operations: all(operations, &OPERATIONS),
            variants: all(variants, &VARIANTS),
            results_dir: None,
            inputs: super::RunCache::default(),
        }
    }

    /// Checks the operation and variant names; the message names the flag.
    pub fn check(&self) -> Result<(), Error> {
        for (flag, given, known) in
            [("--operations", &self.operations, &OPERATIONS[..]), ("--variants", &self.variants, &VARIANTS[..])]
        {
            if let Some(bad) = given.iter().find(|g| !known.contains(&g.as_str())) {
                return Err(Error::Options(format!("{flag}: unknown `{bad}`; available: {}", known.join(", "))));
            }
        }
        Ok(())
    }

    /// Why `n` elements cannot run `op` as `variant` on a device with `resident` groups and `memory`: n = 0, an
    /// index that could pass 2^32, the vendor's 32-bit count, or memory: device: two input vectors, one temporary,
    /// the partials and the result (4 bytes each); host: the two input vectors. Needs no GPU.
    pub fn problem(n: usize, op: &str, variant: &str, resident: u32, memory: &Memory) -> Option<String> {
        if n == 0 {
            return Some("n must be at least 1".into());
        }
        let n64 = n as u64;
        let Some(geometry) = Geometry::for_elements(n64, resident) else {
            return Some(format!(
                "n = {n}: an index plus one grid stride ({resident} groups of {GROUP_SIZE}) must fit 32 bits"
            ));
        };
        if op == "sum" && variant == "unfused" {
            return Some("sum is one pattern (reduce), with no map to leave unfused; see the fused row".into());
        }
        if variant == "vendor" && i32::try_from(n).is_err() {
            return Some(format!("n = {n} exceeds the BLAS's 32-bit element count"));
        }
        let device = bytes_of(&[n64, n64, n64, u64::from(geometry.groups), 2], 4);
        memory.problem(device, bytes_of(&[n64, n64], 4))
    }

    /// The inputs of size `n`, made once and kept while the sweep stays at that size.
    fn inputs(&self, gpu: &Gpu, n: usize) -> Result<Rc<Inputs>, Error> {
        self.inputs.get_or_make(|i| i.host_x.len() == n, || Inputs::new(gpu, n))
    }

    /// Appends one specialisation's compile cost to `fusion_compile.csv` in the results folder.
    fn record_compile(&self, row: &[String]) -> Result<(), Error> {
        let Some(dir) = &self.results_dir else { return Ok(()) };
        let path = dir.join(COMPILE_CSV);
        let io = |source| crate::report::Error::Io { action: "append to", path: path.clone(), source };
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&path).map_err(io)?;
        // Shards of one run append to this file at once: the lock makes "empty, so write the header first" and the
        // write one step, so exactly one header leads the file.
        file.lock().map_err(io)?;
        let new = file.metadata().map_err(io)?.len() == 0;
        let mut text = String::new();
        if new {
            text.push_str(&COMPILE_COLUMNS.join(","));
            text.push('\n');
        }
        text.push_str(&row.join(","));
        text.push('\n');
        file.write_all(text.as_bytes()).map_err(io)?;
        Ok(())
    }
}

/// One sequence of a point, counted by the operation: FLOP = one addition per element, plus one multiplication
/// for dot (|x| is not counted); bytes = every input read once. The unfused form writes and reads temporaries too
/// (up to 3x the bytes), so the estimate credits it with a third of the bandwidth share; a staged kernel compiles
/// once where it is not cached.
fn point_work(c: &Coords, n: usize) -> super::Work {
    let op = Op::parse(&c.op);
    let (n, reads) = (n as f64, op.map_or(1, Op::inputs) as f64);
    let flops = if op == Some(Op::Dot) { 2.0 * n } else { n };
    let share = if c.variant == "unfused" { STREAMING_SHARE / 3.0 } else { STREAMING_SHARE };
    super::Work::kernel(flops, 4.0 * reads * n, share)
        .at_least(4.0 * LAUNCH_S)
        .with_setup(if c.variant == "fused_staged" { STAGED_COMPILE_S } else { 0.0 })
}

/// A cold compile of a staged kernel with nvcc or hipcc, seconds: 0.4 to 0.7 s on an H100 node, rounded up.
const STAGED_COMPILE_S: f64 = 1.0;

/// Side file with the staged kernels' compile cost.
pub const COMPILE_CSV: &str = "fusion_compile.csv";
const COMPILE_COLUMNS: [&str; 7] =
    ["operation", "elements", "defines", "origin", "object_ms", "load_ms", "cached_object_ms"];

/// Side file with the ratios derived from the CSV (written with the plots).
pub const RATIOS_CSV: &str = "fusion_ratios.csv";

/// A point's coordinates, decoded from its index.
struct Coords {
    n: usize,
    op: String,
    variant: String,
    measure: &'static str,
}

impl FusionSweep {
    /// Points per size: one copy row, then operation × variant × measure.
    fn per_size(&self) -> usize {
        1 + self.operations.len() * self.variants.len() * MEASURES.len()
    }

    /// `None` for the size's copy row.
    fn coords(&self, index: usize) -> (usize, Option<Coords>) {
        let per = self.per_size();
        let n = self.sizes[index / per];
        let slot = index % per;
        if slot == 0 {
            return (n, None);
        }
        let slot = slot - 1;
        let m = MEASURES.len();
        let v = self.variants.len();
        let op = self.operations[slot / (v * m)].clone();
        let variant = self.variants[(slot / m) % v].clone();
        (n, Some(Coords { n, op, variant, measure: MEASURES[slot % m] }))
    }
}

impl Experiment for FusionSweep {
    fn name(&self) -> &'static str {
        "fusion"
    }

    fn param_columns(&self) -> &'static [&'static str] {
        &["operation", "variant", "elements", "measure", "bytes_read"]
    }

    fn metric(&self) -> Metric {
        Metric {
            column: "gbps",
            formula: "GB/s = bytes the operation must read (4 per element per input vector; copy: 8 per element, read \
                      and write) / median time / 1e9; unfused's temporary is not counted",
        }
    }

    fn options(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    fn sources(&self) -> &'static [&'static str] {
        &["fusion"]
    }

    fn specialisations(&self, device: DeviceShape) -> Vec<Specialisation> {
        let resident = resident_groups(device);
        let mut specs = Vec::new();
        for &n in &self.sizes {
            let Some(geometry) = Geometry::for_elements(n as u64, resident) else { continue };
            for op in self.operations.iter().filter_map(|o| Op::parse(o)) {
                for variant in &self.variants {
                    if let Some((_, rendered, defines)) = generated(op, variant, &geometry) {
                        specs.push(Specialisation {
                            name: rendered.name.clone(),
                            file_name: rendered.file_name.clone(),
                            text: rendered.text.clone(),
                            defines,
                        });
                    }
                }
            }
        }
        specs.sort();
        specs.dedup();
        specs
    }

    fn set_results_dir(&mut self, dir: &Path) {
        self.results_dir = Some(dir.to_path_buf());
    }

    fn points(&self, gpu: &Gpu) -> Vec<Point> {
        let props = gpu.device.props();
        let memory = Memory::of(props.memory_bytes);
        let resident = resident_groups(DeviceShape::of(props));
        // Without the vendor BLAS (Debian has no rocBLAS) its rows say why instead of failing the run.
        let blas_missing = gpu.device.blas().err().map(|e| format!("no vendor BLAS: {e}"));
        (0..self.sizes.len() * self.per_size())
            .map(|index| {
                let (n, coords) = self.coords(index);
                let n64 = n as u64;
                match coords {
                    None => Point {
                        index,
                        key: format!("copy/device_copy/n={n}/device"),
                        params: vec![
                            "copy".into(),
                            "device_copy".into(),
                            n.to_string(),
                            "device".into(),
                            bytes_of(&[n64, n64], 4).map(|b| b.to_string()).unwrap_or_default(),
                        ],
                        invalid: if n == 0 {
                            Some("n must be at least 1".into())
                        } else {
                            memory.problem(bytes_of(&[n64, n64], 4), bytes_of(&[n64], 4))
                        },
                        work: super::Work::kernel(0.0, 8.0 * n as f64, STREAMING_SHARE).at_least(LAUNCH_S),
                    },
                    Some(c) => {
                        let reads = Op::parse(&c.op).map_or(1, Op::inputs);
                        Point {
                            index,
                            key: format!("{}/{}/n={n}/{}", c.op, c.variant, c.measure),
                            params: vec![
                                c.op.clone(),
                                c.variant.clone(),
                                n.to_string(),
                                c.measure.to_string(),
                                bytes_of(&[n64; 2][..reads as usize], 4).map(|b| b.to_string()).unwrap_or_default(),
                            ],
                            invalid: FusionSweep::problem(c.n, &c.op, &c.variant, resident, &memory)
                                .or_else(|| blas_missing.clone().filter(|_| c.variant == "vendor")),
                            work: point_work(&c, n),
                        }
                    }
                }
            })
            .collect()
    }

    fn prepare<'g>(&self, gpu: &'g Gpu, point: &Point) -> Result<Box<dyn Case + 'g>, Error> {
        let (n, coords) = self.coords(point.index);
        let inputs = self.inputs(gpu, n)?;
        let dev = gpu.device.as_ref();
        let Some(c) = coords else {
            let dst = dev.alloc_buffer::<f32>(n)?;
            dev.fill_bytes(dst.raw(), 0xff)?;
            return Ok(Box::new(CopyCase { gpu, inputs, dst }));
        };
        let op = Op::parse(&c.op).ok_or_else(|| Error::Options(format!("unknown operation `{}`", c.op)))?;
        let geometry = Geometry::for_elements(n as u64, resident_groups(DeviceShape::of(dev.props())))
            .ok_or_else(|| Error::Unsupported(format!("n = {n} does not fit the kernels' 32-bit indices")))?;
        let config = LaunchConfig::linear(geometry.groups, GROUP_SIZE);
        let result = dev.alloc_buffer::<f32>(1)?;
        // All-ones bytes are NaN: a launch that never writes the result fails verification.
        dev.fill_bytes(result.raw(), 0xff)?;
        let partials = dev.alloc_buffer::<f32>(geometry.groups as usize)?;
        let done = dev.alloc_buffer::<u32>(1)?;
        dev.fill_bytes(done.raw(), 0)?;
        let fused = op.program(true).expect("every operation has a fused program");
        let host: Vec<&[f32]> = if op == Op::Dot { vec![&inputs.host_x, &inputs.host_y] } else { vec![&inputs.host_x] };
        let (mut want, mut scale) = fused.reference(&host);
        // Rounding of the terms themselves: products (dot) and FP32 temporaries; |x| and x are exact.
        let term_rounding = if op == Op::Dot { U } else { 0.0 };
        let mut depth = geometry.addition_depth();
        let mut temps = Vec::new();
        let work = match c.variant.as_str() {
            "hand" => {
                let stage1 = gpu.kernel("fusion", op.hand_symbol())?;
                let finish = gpu.kernel("fusion", "fusion_hand_finish")?;
                let mut args1 = vec![inputs.x.arg()];
                if op == Op::Dot {
                    args1.push(inputs.y.arg());
                }
                args1.extend([partials.arg(), Arg::U32(geometry.n)]);
                let args2 = vec![partials.arg(), result.arg(), Arg::U32(geometry.groups)];
                Work::Kernels(vec![(stage1, config, args1), (finish, LaunchConfig::linear(1, GROUP_SIZE), args2)])
            }
            "unfused" | "fused" | "fused_staged" => {
                let (program, rendered, defines) = generated(op, &c.variant, &geometry)
                    .ok_or_else(|| Error::Unsupported(format!("{} has no unfused form", op.name())))?;
                temps = (0..program.temporaries()).map(|_| dev.alloc_buffer::<f32>(n)).collect::<Result<_, _>>()?;
                let mut args: Vec<Arg> = vec![inputs.x.arg()];
                if program.inputs() > 1 {
                    args.push(inputs.y.arg());
                }
                args.extend(temps.iter().map(Buffer::arg));
                args.extend([partials.arg(), done.arg(), result.arg(), Arg::U32(geometry.n)]);
                let mut kernels = Vec::new();
                for symbol in &rendered.kernels {
                    let (kernel, cost) = gpu.specialised_kernel(&rendered.source(), &defines, symbol)?;
                    if let (Some(cost), false) = (cost, defines.is_empty()) {
                        let (_, cached_ms) = gpu.specialised_lookup_ms(&rendered.source(), &defines)?;
                        let origin = match cost.origin {
                            crate::kernels::Origin::Compiled(_) => "compiled",
                            crate::kernels::Origin::Cached(_) => "cached",
                            crate::kernels::Origin::Prebuilt(_) => "prebuilt",
                        };
                        self.record_compile(&[
                            op.name().into(),
                            n.to_string(),
                            defines.join(" "),
                            origin.into(),
                            format!("{:.3}", cost.object_ms),
                            format!("{:.3}", cost.load_ms),
                            format!("{cached_ms:.3}"),
                        ])?;
                    }
                    kernels.push((kernel, config, args.clone()));
                }
                Work::Kernels(kernels)
            }
            "vendor" => {
                depth = (n as u64).div_ceil(256) + 2 * u64::from((n as u64).next_power_of_two().ilog2());
                if op == Op::Sum {
                    // sasum stands in: same bytes read, its own result Σ|x|.
                    (want, scale) = Op::Asum.program(true).expect("asum has a fused program").reference(&host);
                }
                Work::Vendor(op)
            }
            other => return Err(Error::Options(format!("unknown variant `{other}`"))),
        };
        let tolerance = sum_tolerance(depth, term_rounding);
        Ok(Box::new(Reduction {
            gpu,
            inputs,
            op,
            work,
            end_to_end: c.measure == "end_to_end",
            temps,
            _partials: partials,
            _done: done,
            result,
            want,
            scale,
            tolerance,
        }))
    }

    fn plots(&self, rows: &[BTreeMap<String, String>], dir: &Path) -> Vec<(String, LinePlot)> {
        plots(rows, dir)
    }

    fn headlines(&self, rows: &[BTreeMap<String, String>]) -> Vec<String> {
        headlines(rows)
    }

    fn comparison(&self) -> Box<dyn crate::report::compare::Comparison> {
        Box::new(crate::report::compare::FusionComparison)
    }
}

/// The lines of [`Experiment::headlines`]: per operation at each size, the device-time ratios the seed asks about
/// (fused over unfused, staged over generic fused, fused over the vendor BLAS), as speeds.
fn headlines(rows: &[BTreeMap<String, String>]) -> Vec<String> {
    let ok: Vec<&BTreeMap<String, String>> = super::ok_rows(rows).collect();
    let table = Table::new(&ok);
    let mut out = Vec::new();
    for op in OPERATIONS {
        for n in table.elements(op) {
            let t = |v: &str| table.time(op, v, n, "device");
            let over = |a: &str, b: &str| Some(t(b)? / t(a)?);
            let parts: Vec<String> = [
                ("fused/unfused", over("fused", "unfused")),
                ("staged/fused", over("fused_staged", "fused")),
                ("fused/vendor", over("fused", "vendor")),
            ]
            .iter()
            .filter_map(|(name, r)| r.map(|r| format!("{name} {r:.2}")))
            .collect();
            if !parts.is_empty() {
                out.push(format!("{op} at n = {n}: {} (speed ratios, device time)", parts.join(", ")));
            }
        }
    }
    out
}

/// Error allowed for an FP32 sum whose additions form a tree of depth `depth`, relative to Σ|tᵢ|: γ_depth =
/// depth·u / (1 − depth·u), plus `term_rounding` for terms that were rounded themselves (see the module doc).
pub fn sum_tolerance(depth: u64, term_rounding: f64) -> f64 {
    let d = depth as f64 * U;
    d / (1.0 - d) + term_rounding
}

/// The two input vectors of one size, uniform in [−1, 1] (so sums cancel), on the host and the device.
struct Inputs {
    host_x: Vec<f32>,
    host_y: Vec<f32>,
    x: Buffer<f32>,
    y: Buffer<f32>,
}

impl Inputs {
    fn new(gpu: &Gpu, n: usize) -> Result<Inputs, Error> {
        let mut rng = fastrand::Rng::new();
        let host_x: Vec<f32> = (0..n).map(|_| rng.f32() * 2.0 - 1.0).collect();
        let host_y: Vec<f32> = (0..n).map(|_| rng.f32() * 2.0 - 1.0).collect();
        let dev = gpu.device.as_ref();
        Ok(Inputs { x: dev.upload(&host_x)?, y: dev.upload(&host_y)?, host_x, host_y })
    }
}

/// What one reduction launches.
enum Work {
    /// Kernels in order, each with its geometry and arguments.
    Kernels(Vec<(Kernel, LaunchConfig, Vec<Arg>)>),
    /// The vendor BLAS routine for the operation (sasum for sum).
    Vendor(Op),
}

/// One reduction at one size, measured on the device or end to end.
struct Reduction<'g> {
    gpu: &'g Gpu,
    inputs: Rc<Inputs>,
    op: Op,
    work: Work,
    end_to_end: bool,
    /// The actions' temporaries (the kernels' arguments point into them).
    temps: Vec<Buffer<f32>>,
    /// Kept alive for the kernels' arguments: one partial per group, and the last-group ticket.
    _partials: Buffer<f32>,
    _done: Buffer<u32>,
    result: Buffer<f32>,
    want: f64,
    scale: f64,
    tolerance: f64,
}

impl Reduction<'_> {
    fn enqueue(&self) -> crate::device::Result<()> {
        let dev = self.gpu.device.as_ref();
        let n = self.inputs.host_x.len();
        match &self.work {
            Work::Kernels(kernels) => kernels.iter().try_for_each(|(k, config, args)| dev.launch(k, config, args)),
            Work::Vendor(Op::Dot) => dev.sdot(n, self.inputs.x.raw(), self.inputs.y.raw(), self.result.raw()),
            Work::Vendor(_) => dev.sasum(n, self.inputs.x.raw(), self.result.raw()),
        }
    }
}

impl Case for Reduction<'_> {
    fn launch(&mut self) -> crate::device::Result<()> {
        self.enqueue()?;
        if self.end_to_end {
            // The float comes back to the host: the read waits for the reduction.
            self.gpu.device.download(&self.result)?;
        }
        Ok(())
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        let got = self.gpu.device.download(&self.result)?;
        Ok(verify::compare(&got, &[self.want], self.scale, self.tolerance))
    }

    fn work(&self) -> f64 {
        (self.op.inputs() * 4) as f64 * self.inputs.host_x.len() as f64
    }

    fn footprint_bytes(&self) -> Option<u64> {
        let n = self.inputs.host_x.len() as u64;
        Some(4 * n * (self.op.inputs() + self.temps.len() as u64))
    }

    fn clock(&self) -> Clock {
        if self.end_to_end {
            Clock::Host
        } else {
            Clock::Device
        }
    }
}

/// A device-to-device copy of x: the bandwidth line of the GB/s plots.
struct CopyCase<'g> {
    gpu: &'g Gpu,
    inputs: Rc<Inputs>,
    dst: Buffer<f32>,
}

impl Case for CopyCase<'_> {
    fn launch(&mut self) -> crate::device::Result<()> {
        self.gpu.device.copy_on_device(self.inputs.x.raw(), self.dst.raw(), self.inputs.x.bytes())
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        let got = self.gpu.device.download(&self.dst)?;
        // A copy is exact.
        Ok(verify::compare(&got, &self.inputs.host_x, 1.0, 0.0))
    }

    fn work(&self) -> f64 {
        2.0 * self.inputs.x.bytes() as f64
    }

    fn footprint_bytes(&self) -> Option<u64> {
        Some(2 * self.inputs.x.bytes() as u64)
    }
}

/// The plots, and [`RATIOS_CSV`] beside the CSV: per operation, speedup over `hand` (device time) vs size, one line
/// per variant, 1.0 marked; GB/s vs size with the copy's bandwidth as a reference line.
pub fn plots(rows: &[BTreeMap<String, String>], dir: &Path) -> Vec<(String, LinePlot)> {
    let ok: Vec<&BTreeMap<String, String>> = super::ok_rows(rows).collect();
    let Some(first) = ok.first() else { return Vec::new() };
    let get = |c: &str| first.get(c).cloned().unwrap_or_default();
    let wave = if get("wave_size") == "64" { "wave64" } else { "warp32" };
    let vendor = if get("platform") == "amd" { "rocBLAS" } else { "cuBLAS" };
    let device = format!("{} ({}, {wave})", get("device"), get("arch"));
    let table = Table::new(&ok);
    let mut out = Vec::new();
    for op in OPERATIONS {
        let elements = table.elements(op);
        if elements.is_empty() {
            continue;
        }
        let label = |v: &str| match (v, op) {
            ("vendor", "sum") => format!("{vendor} sasum (stand-in: same bytes)"),
            ("vendor", "dot") => format!("{vendor} sdot"),
            ("vendor", _) => format!("{vendor} sasum"),
            ("fused_staged", _) => "fused + staged (multi-staging)".to_string(),
            ("unfused", _) => "unfused (eager action + reduce)".to_string(),
            ("hand", _) => "hand-written two-stage".to_string(),
            _ => "fused (lazy view)".to_string(),
        };
        let mut speed = Vec::new();
        let mut gbps = Vec::new();
        for v in VARIANTS {
            let s: Vec<(f64, f64)> = elements
                .iter()
                .filter_map(|&n| {
                    Some((n as f64, table.time(op, "hand", n, "device")? / table.time(op, v, n, "device")?))
                })
                .collect();
            let g: Vec<(f64, f64)> =
                elements.iter().filter_map(|&n| Some((n as f64, table.rate(op, v, n, "device")?))).collect();
            let make = if v == "fused" { Series::focus } else { Series::line };
            if !s.is_empty() && v != "hand" {
                speed.push(make(label(v), s));
            }
            if !g.is_empty() {
                gbps.push(make(label(v), g));
            }
        }
        let (lo, hi) = (elements[0] as f64, elements[elements.len() - 1] as f64);
        speed.push(Series::reference("1.0 = hand-written", vec![(lo, 1.0), (hi, 1.0)]));
        let copy: Vec<(f64, f64)> = elements
            .iter()
            .filter_map(|&n| Some((n as f64, table.rate("copy", "device_copy", n, "device")?)))
            .collect();
        if !copy.is_empty() {
            gbps.push(Series::reference("device copy (read + write)", copy));
        }
        out.push((
            format!("fusion_speedup_{op}.png"),
            LinePlot {
                title: format!("{op}: speedup over the hand-written reduction, {device}"),
                subtitle: Some(
                    "device time, result left on the device, CUDA-graph batches; > 1 is faster than hand-written"
                        .into(),
                ),
                x_label: "elements n (FP32)".into(),
                y_label: "speedup (hand time / variant time)".into(),
                x_axis: Axis::Log2,
                y_axis: Axis::Linear,
                series: speed,
                y_max: None,
                note: (op == "sum").then(|| "sum has no map: nothing to unfuse".to_string()),
            },
        ));
        out.push((
            format!("fusion_gbps_{op}.png"),
            LinePlot {
                title: format!("{op}: bandwidth, {device}"),
                subtitle: Some(
                    "GB/s = bytes the operation reads / device time; the copy line counts its read and its write".into(),
                ),
                x_label: "elements n (FP32)".into(),
                y_label: "GB/s (log scale)".into(),
                x_axis: Axis::Log2,
                y_axis: Axis::Log10,
                series: gbps,
                y_max: None,
                note: Some(
                    "back-to-back launches find inputs that fit the L2 cache there (the l2_resident column): small sizes \
                     can beat the HBM bandwidth"
                        .into(),
                ),
            },
        ));
    }
    // The seed's two claims side by side with ours: fusion (fused over unfused) and multi-staging (staged over
    // generic), device time, one line per operation.
    let mut ratios = Vec::new();
    for (what, a, b) in [("fused / unfused", "fused", "unfused"), ("staged / generic", "fused_staged", "fused")] {
        for op in OPERATIONS {
            let pts: Vec<(f64, f64)> = table
                .elements(op)
                .iter()
                .filter_map(|&n| Some((n as f64, table.time(op, b, n, "device")? / table.time(op, a, n, "device")?)))
                .collect();
            if !pts.is_empty() {
                ratios.push(Series::line(format!("{op}: {what}"), pts));
            }
        }
    }
    let all: Vec<usize> = OPERATIONS.iter().flat_map(|op| table.elements(op)).collect();
    if let (false, Some(&lo), Some(&hi)) = (ratios.is_empty(), all.iter().min(), all.iter().max()) {
        let (lo, hi) = (lo as f64, hi as f64);
        ratios.push(Series::reference("seed: multi-staging up to 1.35x (PACXX)", vec![(lo, 1.35), (hi, 1.35)]));
        ratios.push(Series::reference("1.0 = no gain", vec![(lo, 1.0), (hi, 1.0)]));
        out.push((
            "fusion_ratios.png".to_string(),
            LinePlot {
                title: format!("Fusion and multi-staging gains, {device}"),
                subtitle: Some(
                    "speed ratio from device times; the seed: fused ≈ Thrust/CUDA, unfused (two kernels) slower, \
                     staging up to 1.35x"
                        .into(),
                ),
                x_label: "elements n (FP32)".into(),
                y_label: "speedup (time of the second / time of the first)".into(),
                x_axis: Axis::Log2,
                y_axis: Axis::Linear,
                series: ratios,
                y_max: None,
                note: None,
            },
        ));
    }
    // The ratios are a by-product: a folder that cannot be written still gets its plots.
    if let Err(e) = std::fs::write(dir.join(RATIOS_CSV), ratios_csv(&table, &compile_costs(dir))) {
        eprintln!("warning: cannot write {}: {e}", dir.join(RATIOS_CSV).display());
    }
    out
}

/// Median times and rates by (operation, variant, elements, measure).
struct Table(BTreeMap<(String, String, usize, String), (f64, f64)>);

impl Table {
    fn new(rows: &[&BTreeMap<String, String>]) -> Table {
        let mut map = BTreeMap::new();
        for r in rows {
            let s = |c: &str| r.get(c).cloned().unwrap_or_default();
            let (Ok(n), Ok(t), Ok(g)) =
                (s("elements").parse::<usize>(), s("time_ms_median").parse::<f64>(), s("gbps").parse::<f64>())
            else {
                continue;
            };
            map.insert((s("operation"), s("variant"), n, s("measure")), (t, g));
        }
        Table(map)
    }

    fn elements(&self, op: &str) -> Vec<usize> {
        let mut e: Vec<usize> = self.0.keys().filter(|k| k.0 == op).map(|k| k.2).collect();
        e.sort_unstable();
        e.dedup();
        e
    }

    fn get(&self, op: &str, v: &str, n: usize, m: &str) -> Option<(f64, f64)> {
        self.0.get(&(op.to_string(), v.to_string(), n, m.to_string())).copied()
    }

    fn time(&self, op: &str, v: &str, n: usize, m: &str) -> Option<f64> {
        self.get(op, v, n, m).map(|x| x.0)
    }

    fn rate(&self, op: &str, v: &str, n: usize, m: &str) -> Option<f64> {
        self.get(op, v, n, m).map(|x| x.1)
    }
}

/// What getting the staged kernel cost, ms: a cold compile (with its load) and a cache hit (with its load).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct CompileCost {
    cold_ms: Option<f64>,
    cached_ms: Option<f64>,
}

/// The staged kernels' cost by (operation, elements), from [`COMPILE_CSV`]: the cold time from rows that compiled,
/// the cached time (a cache lookup plus the load) from every row.
fn compile_costs(dir: &Path) -> BTreeMap<(String, usize), CompileCost> {
    let Ok(rows) = crate::report::csv::read_rows(&dir.join(COMPILE_CSV)) else { return BTreeMap::new() };
    let mut out: BTreeMap<(String, usize), CompileCost> = BTreeMap::new();
    for r in &rows {
        let num = |c: &str| r.get(c).and_then(|v| v.parse::<f64>().ok());
        let (Some(op), Some(n), Some(object), Some(load), Some(cached)) = (
            r.get("operation"),
            r.get("elements").and_then(|v| v.parse::<usize>().ok()),
            num("object_ms"),
            num("load_ms"),
            num("cached_object_ms"),
        ) else {
            continue;
        };
        let entry = out.entry((op.clone(), n)).or_default();
        if r.get("origin").map(String::as_str) == Some("compiled") {
            entry.cold_ms = Some(object + load);
        }
        entry.cached_ms = Some(cached + load);
    }
    out
}

/// The derived ratios, one line per (operation, elements, measure): each is the first variant's speed over the
/// second's (time of the second / time of the first), plus the calls after which getting the staged kernel (cold:
/// compiled; cached: from the kernel cache) is paid back by its device-time saving per call over the generic fused
/// kernel (empty when it saves nothing).
fn ratios_csv(table: &Table, compile: &BTreeMap<(String, usize), CompileCost>) -> String {
    let mut text = String::from(
        "operation,elements,measure,fused_over_unfused,staged_over_fused,fused_over_vendor,staged_over_vendor,\
         fused_over_hand,vendor_over_hand,staged_compile_ms,staged_payoff_calls,staged_cached_ms,\
         staged_cached_payoff_calls\n",
    );
    let fmt = |x: Option<f64>| x.map(|v| format!("{v:.4}")).unwrap_or_default();
    for op in OPERATIONS {
        for n in table.elements(op) {
            for m in MEASURES {
                let t = |v: &str| table.time(op, v, n, m);
                let over = |a: &str, b: &str| Some(t(b)? / t(a)?);
                let cost = compile.get(&(op.to_string(), n)).copied().unwrap_or_default();
                let saving = t("fused").zip(t("fused_staged")).map(|(g, s)| g - s);
                let payoff = |c: Option<f64>| match (c, saving) {
                    (Some(c), Some(s)) if s > 0.0 && m == "device" => format!("{:.0}", (c / s).ceil()),
                    _ => String::new(),
                };
                let ms = |c: Option<f64>| c.map(|c| format!("{c:.3}")).unwrap_or_default();
                text.push_str(&format!(
                    "{op},{n},{m},{},{},{},{},{},{},{},{},{},{}\n",
                    fmt(over("fused", "unfused")),
                    fmt(over("fused_staged", "fused")),
                    fmt(over("fused", "vendor")),
                    fmt(over("fused_staged", "vendor")),
                    fmt(over("fused", "hand")),
                    fmt(over("vendor", "hand")),
                    ms(cost.cold_ms),
                    payoff(cost.cold_ms),
                    ms(cost.cached_ms),
                    payoff(cost.cached_ms),
                ));
            }
        }
    }
    text
}

/// `suite run fusion`.
pub const ENTRY: Entry = Entry {
    name: "fusion",
    help: "Kernel fusion: sum, dot and asum as composed patterns (unfused, fused, fused + run-time staged) vs a \
           hand-written reduction and the vendor BLAS; device and end-to-end time, GB/s per size.",
    flags: FusionArgs::augment_args,
    sweep: fusion_sweep,
    default: || Box::new(FusionSweep::default()),
    quick: || Box::new(FusionSweep::new(vec![1 << 15, 1 << 20, 1 << 25], Vec::new(), Vec::new())),
};

/// `suite run fusion` options.
#[derive(Debug, Args)]
pub struct FusionArgs {
    /// Elements per vector, comma-separated (integers, or 2^N; default: 2^15 to 2^25, every power of two).
    #[arg(long, value_delimiter = ',')]
    pub sizes: Vec<String>,
    /// Operations, comma-separated (default: all): sum, dot, asum.
    #[arg(long, value_delimiter = ',')]
    pub operations: Vec<String>,
    /// Variants, comma-separated (default: all): hand, unfused, fused, fused_staged, vendor.
    #[arg(long, value_delimiter = ',')]
    pub variants: Vec<String>,
}

fn fusion_sweep(matches: &ArgMatches) -> Result<Box<dyn Experiment>, Error> {
    let args: FusionArgs = parsed(matches)?;
    let defaults = FusionSweep::default();
    let sizes = options::parse_sizes("--sizes", &args.sizes, &defaults.sizes)?;
    let sweep = FusionSweep::new(sizes, args.operations, args.variants);
    sweep.check()?;
    Ok(Box::new(sweep))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compile_records_from_several_writers_share_one_header() {
        let dir = tempfile::tempdir().unwrap();
        let row = |op: &str| -> Vec<String> {
            [op, "1024", "FUSION_N=1024u", "compiled", "400.0", "0.2", "0.03"].map(str::to_string).to_vec()
        };
        // Two sweeps writing into one folder at once, as two shards of one run do.
        let path = dir.path();
        std::thread::scope(|scope| {
            for i in 0..2 {
                scope.spawn(move || {
                    let mut sweep = FusionSweep::default();
                    sweep.set_results_dir(path);
                    for _ in 0..50 {
                        sweep.record_compile(&row(if i == 0 { "sum" } else { "dot" })).unwrap();
                    }
                });
            }
        });
        let text = std::fs::read_to_string(dir.path().join(COMPILE_CSV)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 101, "{text}");
        assert_eq!(lines[0], COMPILE_COLUMNS.join(","));
        assert_eq!(lines.iter().filter(|l| l.starts_with("operation,")).count(), 1, "{text}");
        assert_eq!(lines.iter().filter(|l| l.starts_with("sum,1024,")).count(), 50);
    }

    #[test]
    fn points_cover_every_size_operation_variant_and_measure_in_a_fixed_order() {
        let sweep = FusionSweep::new(vec![1 << 15, (1 << 20) + 1], Vec::new(), Vec::new());
        assert_eq!(sweep.per_size(), 1 + 3 * 5 * 2);
        let (n, c) = sweep.coords(0);
        assert!(n == 1 << 15 && c.is_none());
        let c = sweep.coords(1).1.unwrap();
        assert_eq!((c.op.as_str(), c.variant.as_str(), c.measure), ("sum", "hand", "device"));
        let c = sweep.coords(sweep.per_size() + 2 * 5 + 3 * 2 + 2).1.unwrap();
        assert_eq!(
            (c.n, c.op.as_str(), c.variant.as_str(), c.measure),
            ((1 << 20) + 1, "dot", "fused_staged", "end_to_end")
        );
        let c = sweep.coords(2 * sweep.per_size() - 1).1.unwrap();
        assert_eq!((c.op.as_str(), c.variant.as_str(), c.measure), ("asum", "vendor", "end_to_end"));
    }

    #[test]
    fn bad_sizes_and_names_are_refused_with_a_reason() {
        let memory = Memory { device: 80 << 30, host: Some(64 << 30) };
        let p = |n: usize, op: &str, v: &str| FusionSweep::problem(n, op, v, 1056, &memory);
        assert_eq!(p(1 << 25, "dot", "fused"), None);
        assert_eq!(p((1 << 20) + 1, "asum", "fused_staged"), None);
        assert!(p(0, "dot", "fused").unwrap().contains("at least 1"));
        assert!(p(u32::MAX as usize, "dot", "fused").unwrap().contains("32 bits"));
        assert!(p(usize::MAX, "sum", "hand").unwrap().contains("32 bits"));
        assert!(p(1 << 20, "sum", "unfused").unwrap().contains("no map to leave unfused"));
        assert!(p(1 << 31, "dot", "vendor").unwrap().contains("32-bit"));
        assert_eq!(p(1 << 31, "dot", "fused"), None);
        let small = Memory { device: 16 << 30, host: Some(64 << 30) };
        // Two inputs and a temporary of 8 GiB each.
        assert!(FusionSweep::problem(1 << 31, "dot", "fused", 1056, &small).unwrap().contains("device memory"));
        let tiny = Memory { device: 1 << 20, host: None };
        assert!(FusionSweep::problem(1 << 20, "dot", "hand", 1056, &tiny).unwrap().contains("device memory"));
        let bad = FusionSweep::new(vec![1], vec!["dot".into(), "nrm2".into()], Vec::new());
        assert!(bad.check().unwrap_err().to_string().contains("--operations: unknown `nrm2`"));
        assert!(FusionSweep::default().check().is_ok());
    }

    /// The bound holds for FP32 sums in the orders our kernels use (each item's grid-stride run in order, then a
    /// pairwise tree over the items) on an input that cancels, where a tolerance relative to the result would not
    /// be the right scale.
    #[test]
    fn reordered_fp32_sums_stay_within_the_derived_bound() {
        let mut rng = fastrand::Rng::with_seed(7);
        let n: usize = 1 << 16;
        let x: Vec<f32> = (0..n).map(|_| rng.f32() * 2.0 - 1.0).collect();
        let exact: f64 = x.iter().map(|&v| f64::from(v)).sum();
        let abs: f64 = x.iter().map(|&v| f64::from(v).abs()).sum();
        assert!(exact.abs() < abs / 100.0, "the input cancels: |Σx| = {exact}, Σ|x| = {abs}");
        for threads in [1usize, 64, 256, 4096] {
            let mut partial: Vec<f32> =
                (0..threads).map(|t| x.iter().skip(t).step_by(threads).fold(0.0f32, |a, &v| a + v)).collect();
            while partial.len() > 1 {
                partial = partial.chunks(2).map(|p| p.iter().sum()).collect();
            }
            let depth = n.div_ceil(threads) as u64 + u64::from(threads.ilog2());
            let bound = sum_tolerance(depth, 0.0) * abs;
            let err = (f64::from(partial[0]) - exact).abs();
            assert!(err <= bound, "{threads} items: error {err:e} > {bound:e}");
        }
        // The bound shrinks with the depth: ~γ_n for one item, ~30x smaller with 4096 items of 16.
        assert!(sum_tolerance(1 << 16, 0.0) > 30.0 * sum_tolerance(16 + 12, 0.0));
    }

    #[test]
    fn ratios_and_payoff_come_from_the_rows() {
        let row = |op: &str, v: &str, n: usize, m: &str, t: f64| {
            BTreeMap::from([
                ("status".to_string(), "ok".to_string()),
                ("operation".into(), op.into()),
                ("variant".into(), v.into()),
                ("elements".into(), n.to_string()),
                ("measure".into(), m.into()),
                ("time_ms_median".into(), t.to_string()),
                ("gbps".into(), (1.0 / t).to_string()),
            ])
        };
        let rows = [
            row("dot", "hand", 1024, "device", 0.02),
            row("dot", "unfused", 1024, "device", 0.04),
            row("dot", "fused", 1024, "device", 0.02),
            row("dot", "fused_staged", 1024, "device", 0.01),
            row("dot", "vendor", 1024, "device", 0.03),
        ];
        let refs: Vec<&BTreeMap<String, String>> = rows.iter().collect();
        let table = Table::new(&refs);
        let cost = CompileCost { cold_ms: Some(500.0), cached_ms: Some(0.2) };
        let compile = BTreeMap::from([(("dot".to_string(), 1024), cost)]);
        let text = ratios_csv(&table, &compile);
        let line = text.lines().find(|l| l.starts_with("dot,1024,device")).unwrap();
        // Staging saves 0.01 ms per call: 500 ms pay back after 50000 calls, 0.2 ms after 20.
        assert_eq!(line, "dot,1024,device,2.0000,2.0000,1.5000,3.0000,1.0000,0.6667,500.000,50000,0.200,20");
        let e2e = text.lines().find(|l| l.starts_with("dot,1024,end_to_end")).unwrap();
        assert_eq!(e2e, "dot,1024,end_to_end,,,,,,,500.000,,0.200,");
        assert_eq!(
            headlines(&rows),
            ["dot at n = 1024: fused/unfused 2.00, staged/fused 2.00, fused/vendor 1.50 (speed ratios, device time)"]
        );
    }
}
