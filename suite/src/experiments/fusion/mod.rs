//! Kernel fusion (seed: `composable-gpu-programming-steuwer.txt`): reductions written as composed patterns
//! ([`crate::patterns`]) against a hand-written kernel and the vendor BLAS.
//!
//! Three operations over FP32 or FP64 vectors (`--precision`): **sum** `reduce(+, x)`, **dot**
//! `reduce(+, map(mul, zip(x, y)))` and **asum** `reduce(+, map(abs, x))`. Five variants of each, in both
//! precisions from the same sources (the patterns' element type, the hand-written templates):
//! - `hand`: the classic two-stage reduction in `kernels/fusion.hip` (partials per group, then one group adds
//!   them), the seed's CUDA baseline, which the speedups are relative to;
//! - `unfused`: the map is an eager action, a kernel of its own writing a temporary vector that the reduction reads
//!   back (Thrust's `transform` + `reduce`); sum has no map, so its `unfused` point is `invalid` (nothing to unfuse);
//! - `fused`: the map is a lazy view fused into the reduction: one kernel (single pass, see [`crate::patterns`]);
//! - `fused_staged`: the fused source compiled at run time with the size, the grid and the elements per item as
//!   constants (`-D` defines through the kernel cache): the seed's multi-staging. Its compile cost, cold and
//!   cached, goes to `fusion_compile.csv` beside the CSV;
//! - `vendor`: cuBLAS / rocBLAS `sdot` and `sasum` (FP64: `ddot` and `dasum`), the result left on the device. Sum
//!   has no BLAS routine: its vendor row is `sasum` (`dasum`) of the same vector (same bytes read), checked against
//!   Σ|x|, its own result.
//!
//! Each point is measured twice (`measure` column): `device`, the reduction alone with its result left in device
//! memory, batched like every kernel (a CUDA graph of B launches); `end_to_end`, the call that returns the float to
//! the host (launches plus a 4- or 8-byte read back), timed by the host clock. A `copy` row per size and precision
//! (`copy_on_device` of x, GB/s = 2·n·(4 or 8) / time) gives the memory's practical bandwidth for the GB/s plots.
//! FP32 points keep the keys they had before FP64 existed (`dot/fused/n=1024/device`); FP64 points end in `/f64`.
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
//!
//! **FP64** takes the same bound with u = 2⁻⁵³ (and u for the rounded products of dot), plus the host reference's
//! own error: the terms of FP64 inputs are not exact in a plain f64 sum, so the reference splits each term exactly
//! and sums by Sum2/Dot2 ([`crate::patterns::Program::reference`]), within u + γ²₂ₙ of the exact sum
//! ([`crate::patterns::Program::reference_error`]). At 2^25 on an H100: 148·2⁻⁵³ + 2⁻⁵³ + 1.7·10⁻¹⁶ ≈ 1.7·10⁻¹⁴
//! (dot), so one lost element of average size (1/n of Σ|tᵢ|, 3·10⁻⁸) fails the FP64 check.

mod cases;
mod compare;
mod derived;
mod headlines;
mod plots;

use std::collections::BTreeMap;
use std::path::Path;
use std::rc::Rc;

use serde::Serialize;

use super::compile_estimate::CompileFigures;
use super::entry::{defaults, size_arg, Entry, Sweep};
use super::estimate::{LAUNCH_S, STREAMING_SHARE};
use super::{Case, Error, Experiment, Metric, Params, Point, Points, Results, RunContext};
use crate::code_objects::{DeviceShape, Specialisation};
use crate::device::Props;
use crate::options::{bytes_of, Memory};
use crate::patterns::{input, zip, Binary, Geometry, Program, Reduce, Rendered, Unary, GROUP_SIZE};
use crate::phases::Phase;
use crate::precision::Precision;
use crate::report::plot::LinePlot;
use cases::Inputs;
pub use compare::FusionComparison;

/// The operations, in sweep order.
pub const OPERATIONS: [&str; 3] = ["sum", "dot", "asum"];
/// The variants, in sweep (and legend) order.
pub const VARIANTS: [&str; 5] = ["hand", "unfused", "fused", "fused_staged", "vendor"];
/// The two measures of every point.
pub const MEASURES: [&str; 2] = ["device", "end_to_end"];
/// The precisions, in sweep order: FP32 first, so a sweep's FP32 points come in the order they had before FP64.
pub const PRECISIONS: [&str; 2] = ["f32", "f64"];

/// The fusion sweep: its fields are the flags of `suite run fusion`. The default is the seed's range: every power
/// of two from 2^15 to 2^25 elements (128 KiB to 128 MiB per vector, from L2-resident to far past the 50 MiB L2 of
/// an H100), all operations and variants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, clap::Args)]
pub struct FusionSweep {
    /// Elements per vector, comma-separated (integers, or 2^N; default: 2^15 to 2^25, every power of two).
    #[arg(long, value_delimiter = ',', value_parser = size_arg, hide_default_value = true, default_values = [
        "2^15", "2^16", "2^17", "2^18", "2^19", "2^20", "2^21", "2^22", "2^23", "2^24", "2^25",
    ])]
    pub sizes: Vec<usize>,
    /// Operations, comma-separated (default: all): sum, dot, asum.
    #[arg(long, value_delimiter = ',', hide_default_value = true, default_values = OPERATIONS)]
    pub operations: Vec<String>,
    /// Variants, comma-separated (default: all): hand, unfused, fused, fused_staged, vendor.
    #[arg(long, value_delimiter = ',', hide_default_value = true, default_values = VARIANTS)]
    pub variants: Vec<String>,
    /// Precision types, comma-separated (default: both): f32, f64.
    #[arg(long, value_delimiter = ',', hide_default_value = true, default_values = PRECISIONS)]
    pub precision: Vec<String>,
    /// Elements per vector of the FP64 points, comma-separated (integers, or 2^N; default: the same as --sizes).
    #[arg(long = "f64-sizes", value_delimiter = ',', value_parser = size_arg)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub f64_sizes: Option<Vec<usize>>,
}

impl Default for FusionSweep {
    fn default() -> Self {
        defaults()
    }
}

impl Sweep for FusionSweep {
    const NAME: &'static str = "fusion";
    const HELP: &'static str = "Kernel fusion: sum, dot and asum in FP32 and FP64 as composed patterns (unfused, \
                                fused, fused + run-time staged) vs a hand-written reduction and the vendor BLAS; \
                                device and end-to-end time, GB/s per size and precision.";
    const RESULTS: &'static dyn Results = &FusionResults;

    /// FP32 at the smallest size (L2-resident), one past the L2 and the largest; FP64 at the middle one, beside FP32
    /// there (see [`QUICK_F64_SIZES`]); every operation and variant.
    fn quick() -> Self {
        FusionSweep {
            sizes: vec![1 << 15, 1 << 20, 1 << 25],
            f64_sizes: Some(QUICK_F64_SIZES.to_vec()),
            ..FusionSweep::default()
        }
    }

    /// Checks the operation, variant and precision names, and that FP64 sizes come with FP64; the message names the
    /// flag.
    fn check(self) -> Result<Self, Error> {
        for (flag, given, known) in [
            ("--operations", &self.operations, &OPERATIONS[..]),
            ("--variants", &self.variants, &VARIANTS[..]),
            ("--precision", &self.precision, &PRECISIONS[..]),
        ] {
            if let Some(bad) = given.iter().find(|g| !known.contains(&g.as_str())) {
                return Err(Error::Options(format!("{flag}: unknown `{bad}`; available: {}", known.join(", "))));
            }
        }
        if self.f64_sizes.is_some() && !self.precision.iter().any(|p| p == "f64") {
            return Err(Error::Options(
                "--f64-sizes: FP64 is not among --precision, so no FP64 point would run; add f64 to --precision".into(),
            ));
        }
        Ok(self)
    }
}

/// `suite run fusion`.
pub const ENTRY: Entry = Entry::of::<FusionSweep>();

/// The quick preset's FP64 sizes: 2^20, one size of FP32's so the two sit side by side (8 MiB per vector: in an
/// H100's 50 MiB L2, past an MI250X GCD's 8 MiB). One size adds 31 points and, on an H100 SXM, 8.5 s to the quick
/// fusion estimate (29.9 to 38.4 s; 2^25 would add 19 s, mostly the estimate's host time per byte; both 27 s).
const QUICK_F64_SIZES: [usize; 1] = [1 << 20];

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

    /// The hand-written stage-1 kernel for elements of `element`.
    fn hand_symbol(self, element: Precision) -> String {
        format!("fusion_hand_{}{}", self.name(), symbol_suffix(element))
    }
}

/// What kernels/fusion.hip appends to an FP64 kernel's name: `_f64` (FP32 names have nothing appended).
fn symbol_suffix(element: Precision) -> &'static str {
    match element {
        Precision::F32 => "",
        Precision::F64 => "_f64",
    }
}

/// What an FP64 point's key ends in: `/f64` (FP32 keys are as they were before FP64: nothing appended).
fn key_suffix(element: Precision) -> &'static str {
    match element {
        Precision::F32 => "",
        Precision::F64 => "/f64",
    }
}

/// Groups that fill the device: CUs × (resident items per CU / group size), at least one per CU.
fn resident_groups(device: DeviceShape) -> u32 {
    device.cu_count.saturating_mul((device.max_items_per_cu / GROUP_SIZE).max(1))
}

/// The generated source of `variant` (`unfused`, `fused` or `fused_staged`) of `op` over `element` and its `-D`
/// values for `geometry`: what a point compiles at run time, and what `suite kernels build` makes ahead of time.
fn generated(
    op: Op,
    variant: &str,
    element: Precision,
    geometry: &Geometry,
) -> Option<(Program, Rendered, Vec<String>)> {
    let program = match variant {
        "unfused" | "fused" | "fused_staged" => op.program(variant != "unfused")?.with_element(element),
        _ => return None,
    };
    let rendered = program.render(&format!("fusion_{}", op.name()));
    let defines = if variant == "fused_staged" { Program::stage_defines(geometry) } else { Vec::new() };
    Some((program, rendered, defines))
}

impl FusionSweep {
    /// Why `n` elements of `element` cannot run `op` as `variant` on a device with `resident` groups and `memory`:
    /// n = 0, an index that could pass 2^32, the vendor's 32-bit count, or memory: device: two input vectors, one
    /// temporary, the partials and the result (4 or 8 bytes each); host: the two input vectors. Needs no GPU.
    pub fn problem(
        n: usize,
        element: Precision,
        op: &str,
        variant: &str,
        resident: u32,
        memory: &Memory,
    ) -> Option<String> {
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
        let bytes = element.bytes();
        let device = bytes_of(&[n64, n64, n64, u64::from(geometry.groups), 2], bytes);
        memory.problem(device, bytes_of(&[n64, n64], bytes))
    }

    /// The inputs of size `n` in `T`'s precision, made once and kept in the run's shared slot while the sweep stays
    /// at that size and precision.
    fn inputs<T: cases::Scalar>(ctx: &RunContext, n: usize) -> Result<Rc<Inputs<T>>, Error> {
        ctx.shared(|i: &Inputs<T>| i.host_x.len() == n, || Inputs::new(ctx.gpu, n, &ctx.phases))
    }

    /// The precisions asked for, in the order asked (names checked by [`Sweep::check`]).
    fn elements(&self) -> Vec<Precision> {
        self.precision.iter().filter_map(|p| Precision::parse(p).ok()).collect()
    }

    /// The sizes of `element`'s points: `--f64-sizes` for FP64 where given, else `--sizes`.
    fn sizes_of(&self, element: Precision) -> &[usize] {
        match (element, &self.f64_sizes) {
            (Precision::F64, Some(sizes)) => sizes,
            _ => &self.sizes,
        }
    }

    /// The sweep's blocks of points, (elements, precision), in order: every size of the first precision, then of
    /// the next.
    fn blocks(&self) -> Vec<(usize, Precision)> {
        self.elements().into_iter().flat_map(|e| self.sizes_of(e).iter().map(move |&n| (n, e))).collect()
    }
}

/// Appends one specialisation's compile cost to `fusion_compile.csv` in the results folder `dir` (shards of one
/// run append to it at once).
fn record_compile(dir: &Path, row: &[String]) -> Result<(), Error> {
    let header: Vec<String> = COMPILE_COLUMNS.iter().map(|c| c.to_string()).collect();
    Ok(crate::report::csv::append_shared_row(&dir.join(COMPILE_CSV), &header, row)?)
}

/// One sequence of a point, counted by the operation: FLOP = one addition per element, plus one multiplication
/// for dot (|x| is not counted); bytes = every input read once (4 or 8 bytes per element). The unfused form writes
/// and reads temporaries too (up to 3x the bytes), so the estimate credits it with a third of the bandwidth share.
/// The host reads back one scalar per point; it reads the inputs once per operation and size for the reference
/// (`first_of_op`: on the operation's first point of its block), as it draws them once per size (on the block's copy
/// row). A generated or staged kernel's compile is counted by the run ([`SPECIALISATION_COMPILE`]), not the point.
fn point_work(c: &Coords, n: usize, first_of_op: bool) -> super::Work {
    let op = Op::parse(&c.op);
    let (n, reads) = (n as f64, op.map_or(1, Op::inputs) as f64);
    let flops = if op == Some(Op::Dot) { 2.0 * n } else { n };
    let share = if c.variant == "unfused" { STREAMING_SHARE / 3.0 } else { STREAMING_SHARE };
    let bytes = c.element.bytes() as f64 * reads * n;
    super::Work::kernel(flops, bytes, share).at_least(4.0 * LAUNCH_S).with_host_bytes(if first_of_op {
        bytes
    } else {
        0.0
    })
}

/// A cold compile of one generated or staged kernel: nvcc 0.52 s, the H100 node's cold quick run at d896d23 (its
/// 22 specialisations took 11.37 s of `compile` phase,
/// results/2026-11-25-h100-sm_90-quick-cold-and-warm-issue26/cold/phases.csv; the staged ones' `object_ms` in its
/// fusion_compile.csv are 0.43 to 0.83 s); hipcc 1.3 s, as `kernels/fusion.hip` on the build machine.
const SPECIALISATION_COMPILE: CompileFigures = CompileFigures { nvcc_s: 0.52, hipcc_s: 1.3 };

/// Side file with the staged kernels' compile cost.
pub const COMPILE_CSV: &str = "fusion_compile.csv";
const COMPILE_COLUMNS: [&str; 8] =
    ["operation", "precision", "elements", "defines", "origin", "object_ms", "load_ms", "cached_object_ms"];

/// Side file with the ratios derived from the CSV ([`Results::derived_tables`]).
pub const RATIOS_CSV: &str = "fusion_ratios.csv";

/// One point of the fusion sweep: its size and precision (its block), and its coordinates (`None` for the block's
/// copy row).
#[derive(Debug, Clone)]
pub struct FusionPoint {
    n: usize,
    element: Precision,
    coords: Option<Coords>,
}

/// A point's coordinates, decoded from its index in the sweep.
#[derive(Debug, Clone)]
struct Coords {
    n: usize,
    element: Precision,
    op: String,
    variant: String,
    measure: &'static str,
}

impl FusionSweep {
    /// Points per block (one size in one precision): one copy row, then operation × variant × measure.
    fn per_size(&self) -> usize {
        1 + self.operations.len() * self.variants.len() * MEASURES.len()
    }

    /// The block's size and precision, and the point's coordinates (`None` for the block's copy row).
    fn coords(&self, index: usize) -> (usize, Precision, Option<Coords>) {
        let per = self.per_size();
        let (n, element) = self.blocks()[index / per];
        let slot = index % per;
        if slot == 0 {
            return (n, element, None);
        }
        let slot = slot - 1;
        let m = MEASURES.len();
        let v = self.variants.len();
        let op = self.operations[slot / (v * m)].clone();
        let variant = self.variants[(slot / m) % v].clone();
        (n, element, Some(Coords { n, element, op, variant, measure: MEASURES[slot % m] }))
    }
}

/// Fusion's read side: its columns, plots, ratios table, headlines, comparison and roofline families (its copy
/// rows are device copies).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FusionResults;

impl Results for FusionResults {
    fn name(&self) -> &'static str {
        FusionSweep::NAME
    }

    fn param_columns(&self) -> &'static [&'static str] {
        &["operation", "precision", "variant", "elements", "measure", "bytes_read"]
    }

    fn metric(&self) -> Metric {
        Metric {
            column: "gbps",
            formula: "GB/s = bytes the operation must read (4 per element per input vector in FP32, 8 in FP64; copy: \
                      twice that per element, read and write) / median time / 1e9; unfused's temporary is not counted",
        }
    }

    fn plots(&self, rows: &[BTreeMap<String, String>], _dir: &Path) -> Vec<(String, LinePlot)> {
        plots::plots(rows)
    }

    fn derived_tables(&self, rows: &[BTreeMap<String, String>], dir: &Path) -> Vec<(String, String)> {
        derived::tables(rows, dir)
    }

    fn headlines(&self, rows: &[BTreeMap<String, String>]) -> Vec<String> {
        headlines::table(rows)
    }

    fn roofline(&self) -> crate::report::roofline::Role {
        crate::report::roofline::Role {
            family: |r| {
                let variant = r.get("variant").cloned().unwrap_or_default();
                match r.get("precision").map(String::as_str) {
                    Some("f64") => format!("{variant} (f64)"),
                    _ => variant,
                }
            },
            is_copy: |r| r.get("operation").is_some_and(|s| s == "copy"),
            ..Default::default()
        }
    }

    fn comparison(&self) -> Box<dyn crate::report::compare::Comparison> {
        Box::new(FusionComparison)
    }
}

impl Experiment for FusionSweep {
    fn results(&self) -> &'static dyn Results {
        Self::RESULTS
    }

    fn options(&self, _device: &Props) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    fn sources(&self) -> &'static [&'static str] {
        &["fusion"]
    }

    /// `kernels/fusion.hip`'s cold compile (nvcc 0.9 s, hipcc 1.3 s, on this repository's two-core build machine (nvcc 13.5.37, sm_90; hipcc 5.2, gfx90a; commit 7ef0cdd)), and each generated
    /// or staged kernel's ([`SPECIALISATION_COMPILE`]).
    fn compile_figures(&self, name: &str) -> Option<CompileFigures> {
        Some(if name == Self::NAME { CompileFigures { nvcc_s: 0.9, hipcc_s: 1.3 } } else { SPECIALISATION_COMPILE })
    }

    fn specialisations(&self, device: DeviceShape) -> Vec<Specialisation> {
        let resident = resident_groups(device);
        let mut specs = Vec::new();
        for (n, element) in self.blocks() {
            let Some(geometry) = Geometry::for_elements(n as u64, resident) else { continue };
            for op in self.operations.iter().filter_map(|o| Op::parse(o)) {
                for variant in &self.variants {
                    if let Some((_, rendered, defines)) = generated(op, variant, element, &geometry) {
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
}

impl Points for FusionSweep {
    type Spec = FusionPoint;

    fn points(&self, ctx: &RunContext) -> Vec<Point<FusionPoint>> {
        let (gpu, props) = (ctx.gpu, ctx.props());
        let memory = Memory::of(props.memory_bytes);
        let resident = resident_groups(DeviceShape::of(props));
        // Without the vendor BLAS (Debian has no rocBLAS) its rows say why instead of failing the run.
        let blas_missing = gpu.device.blas().err().map(|e| format!("no vendor BLAS: {e}"));
        (0..self.blocks().len() * self.per_size())
            .map(|index| {
                let (n, element, coords) = self.coords(index);
                let spec = FusionPoint { n, element, coords: coords.clone() };
                let (n64, bytes, suffix) = (n as u64, element.bytes(), key_suffix(element));
                let params = Params::of(Self::RESULTS).set("precision", element.name()).set("elements", n);
                match coords {
                    None => Point {
                        spec,
                        key: format!("copy/device_copy/n={n}/device{suffix}"),
                        params: params
                            .set("operation", "copy")
                            .set("variant", "device_copy")
                            .set("measure", "device")
                            .set("bytes_read", bytes_of(&[n64, n64], bytes).map(|b| b.to_string()).unwrap_or_default())
                            .row(),
                        invalid: if n == 0 {
                            Some("n must be at least 1".into())
                        } else {
                            memory.problem(bytes_of(&[n64, n64], bytes), bytes_of(&[n64], bytes))
                        },
                        work: super::Work::kernel(0.0, 2.0 * (bytes * n64) as f64, STREAMING_SHARE).at_least(LAUNCH_S),
                    },
                    Some(c) => {
                        let reads = Op::parse(&c.op).map_or(1, Op::inputs);
                        Point {
                            key: format!("{}/{}/n={n}/{}{suffix}", c.op, c.variant, c.measure),
                            params: params
                                .set("operation", &c.op)
                                .set("variant", &c.variant)
                                .set("measure", c.measure)
                                .set(
                                    "bytes_read",
                                    bytes_of(&[n64; 2][..reads as usize], bytes)
                                        .map(|b| b.to_string())
                                        .unwrap_or_default(),
                                )
                                .row(),
                            spec,
                            invalid: FusionSweep::problem(c.n, element, &c.op, &c.variant, resident, &memory)
                                .or_else(|| blas_missing.clone().filter(|_| c.variant == "vendor")),
                            work: point_work(&c, n, c.variant == self.variants[0] && c.measure == MEASURES[0]),
                        }
                    }
                }
            })
            .collect()
    }

    /// The first point compiles every generated and staged kernel of the sweep at once (in parallel, bounded by the
    /// cores: [`crate::gpu::Gpu::compile_specialised`]), so a cold cache costs about the compiles over the cores
    /// rather than their sum; each kernel's own compile time still goes to `fusion_compile.csv` with its point.
    fn prepare<'g>(&self, ctx: &RunContext<'g>, spec: &FusionPoint) -> Result<Box<dyn Case + 'g>, Error> {
        let specs = self.specialisations(DeviceShape::of(ctx.props()));
        ctx.phases.scope(Phase::Compile, || ctx.gpu.compile_specialised(&specs))?;
        cases::prepare(ctx, spec)
    }
}

/// Error allowed for an FP32 sum whose additions form a tree of depth `depth`, relative to Σ|tᵢ|: γ_depth =
/// depth·u / (1 − depth·u), plus `term_rounding` for terms that were rounded themselves (see the module doc).
pub fn sum_tolerance(depth: u64, term_rounding: f64) -> f64 {
    element_sum_tolerance(Precision::F32, depth, term_rounding)
}

/// [`sum_tolerance`] for a sum in `element`'s precision: γ_depth with that precision's unit roundoff u (2⁻²⁴ or
/// 2⁻⁵³), plus `term_rounding`. The host reference's own error ([`Program::reference_error`]) is the caller's to
/// add.
pub fn element_sum_tolerance(element: Precision, depth: u64, term_rounding: f64) -> f64 {
    let d = depth as f64 * element.unit_roundoff();
    d / (1.0 - d) + term_rounding
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fusion's device copies are copies on the roofline (a ceiling candidate, not a kernel's point): its rows name
    /// the operation in `operation` (a check of `op`, a column fusion never had, left them all as kernels).
    #[test]
    fn the_roofline_takes_fusions_device_copies_as_copies() {
        let row = |operation: &str| -> crate::report::roofline::Row {
            [("operation", operation), ("variant", "device_copy")]
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect()
        };
        let role = FusionResults.roofline();
        assert!((role.is_copy)(&row("copy")));
        assert!(!(role.is_copy)(&row("dot")));
    }
    use crate::occupancy_calculator::tests::h100;
    use crate::verify;

    #[test]
    fn compile_records_from_several_writers_share_one_header() {
        let dir = tempfile::tempdir().unwrap();
        let row = |op: &str| -> Vec<String> {
            [op, "f32", "1024", "FUSION_N=1024u", "compiled", "400.0", "0.2", "0.03"].map(str::to_string).to_vec()
        };
        // Two writers into one folder at once, as two shards of one run are.
        let path = dir.path();
        std::thread::scope(|scope| {
            for i in 0..2 {
                scope.spawn(move || {
                    for _ in 0..50 {
                        record_compile(path, &row(if i == 0 { "sum" } else { "dot" })).unwrap();
                    }
                });
            }
        });
        let text = std::fs::read_to_string(dir.path().join(COMPILE_CSV)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 101, "{text}");
        assert_eq!(lines[0], COMPILE_COLUMNS.join(","));
        assert_eq!(lines.iter().filter(|l| l.starts_with("operation,")).count(), 1, "{text}");
        assert_eq!(lines.iter().filter(|l| l.starts_with("sum,f32,1024,")).count(), 50);
    }

    #[test]
    fn points_cover_every_size_operation_variant_and_measure_in_a_fixed_order() {
        let sweep = FusionSweep { sizes: vec![1 << 15, (1 << 20) + 1], ..FusionSweep::default() };
        assert_eq!(sweep.per_size(), 1 + 3 * 5 * 2);
        // Every FP32 size, then every FP64 size.
        assert_eq!(
            sweep.blocks(),
            [
                (1 << 15, Precision::F32),
                ((1 << 20) + 1, Precision::F32),
                (1 << 15, Precision::F64),
                ((1 << 20) + 1, Precision::F64)
            ]
        );
        let (n, e, c) = sweep.coords(0);
        assert!(n == 1 << 15 && e == Precision::F32 && c.is_none());
        let c = sweep.coords(1).2.unwrap();
        assert_eq!((c.op.as_str(), c.variant.as_str(), c.measure), ("sum", "hand", "device"));
        let c = sweep.coords(sweep.per_size() + 2 * 5 + 3 * 2 + 2).2.unwrap();
        assert_eq!(
            (c.n, c.element, c.op.as_str(), c.variant.as_str(), c.measure),
            ((1 << 20) + 1, Precision::F32, "dot", "fused_staged", "end_to_end")
        );
        let c = sweep.coords(2 * sweep.per_size() - 1).2.unwrap();
        assert_eq!((c.op.as_str(), c.variant.as_str(), c.measure), ("asum", "vendor", "end_to_end"));
        let c = sweep.coords(4 * sweep.per_size() - 1).2.unwrap();
        assert_eq!((c.n, c.element, c.op.as_str(), c.measure), ((1 << 20) + 1, Precision::F64, "asum", "end_to_end"));
        // FP64 at its own sizes; FP32 alone is the sweep of before FP64.
        let own = FusionSweep { f64_sizes: Some(vec![1000]), ..sweep.clone() };
        assert_eq!(own.blocks()[2..], [(1000, Precision::F64)]);
        let f32_only = FusionSweep { precision: vec!["f32".into()], ..sweep.clone() };
        assert_eq!(f32_only.blocks(), [(1 << 15, Precision::F32), ((1 << 20) + 1, Precision::F32)]);
    }

    /// The planned points: FP32 keys and their order exactly as before FP64 (so earlier runs resume and compare
    /// point by point), FP64 keys ending in `/f64`, the precision column, and FP64's bytes twice FP32's.
    #[test]
    fn fp32_points_keep_their_keys_and_fp64_points_have_their_own() {
        let gpu = crate::planning::gpu(crate::planning::part("h100-sxm").unwrap(), None);
        let ctx = RunContext::new(&gpu, None);
        let sweep = FusionSweep { sizes: vec![1 << 20], ..FusionSweep::default() };
        let points = sweep.points(&ctx);
        assert_eq!(points.len(), 2 * sweep.per_size());
        let f32_only = FusionSweep { precision: vec!["f32".into()], ..sweep.clone() };
        let f32_keys: Vec<String> = f32_only.points(&ctx).into_iter().map(|p| p.key).collect();
        let keys: Vec<&str> = points.iter().map(|p| p.key.as_str()).collect();
        assert_eq!(keys[..sweep.per_size()], f32_keys.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(
            keys[..3],
            ["copy/device_copy/n=1048576/device", "sum/hand/n=1048576/device", "sum/hand/n=1048576/end_to_end"]
        );
        assert_eq!(keys[sweep.per_size()], "copy/device_copy/n=1048576/device/f64");
        assert_eq!(keys[sweep.per_size() + 1], "sum/hand/n=1048576/device/f64");
        let by_key = |k: &str| points.iter().find(|p| p.key == k).unwrap();
        let dot32 = by_key("dot/fused/n=1048576/device");
        let dot64 = by_key("dot/fused/n=1048576/device/f64");
        assert_eq!(dot32.params, ["dot", "f32", "fused", "1048576", "device", "8388608"]);
        assert_eq!(dot64.params, ["dot", "f64", "fused", "1048576", "device", "16777216"]);
        assert_eq!(dot64.work.bytes, 2.0 * dot32.work.bytes);
        assert_eq!(by_key("copy/device_copy/n=1048576/device/f64").params[5], "16777216");
        assert!(by_key("sum/unfused/n=1048576/device/f64").invalid.is_some());
        // The staged FP64 sources are built ahead of time too, apart from FP32's.
        let specs = sweep.specialisations(DeviceShape::of(gpu.device.props()));
        assert_eq!(specs.iter().filter(|s| s.name.contains("_f64_")).count(), specs.len() / 2);
    }

    #[test]
    fn bad_sizes_and_names_are_refused_with_a_reason() {
        let memory = Memory { device: 80 << 30, host: Some(64 << 30) };
        let p = |n: usize, op: &str, v: &str| FusionSweep::problem(n, Precision::F32, op, v, 1056, &memory);
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
        let f32 = Precision::F32;
        assert!(FusionSweep::problem(1 << 31, f32, "dot", "fused", 1056, &small).unwrap().contains("device memory"));
        let tiny = Memory { device: 1 << 20, host: None };
        assert!(FusionSweep::problem(1 << 20, f32, "dot", "hand", 1056, &tiny).unwrap().contains("device memory"));
        // FP64 needs twice the memory: 2^30 elements fit 16 GiB in FP32 (12 GiB), not in FP64 (24 GiB).
        assert_eq!(FusionSweep::problem(1 << 30, f32, "dot", "fused", 1056, &small), None);
        let f64 = Precision::F64;
        assert!(FusionSweep::problem(1 << 30, f64, "dot", "fused", 1056, &small).unwrap().contains("device memory"));
        let bad = FusionSweep { operations: vec!["dot".into(), "nrm2".into()], ..FusionSweep::default() };
        assert!(bad.check().unwrap_err().to_string().contains("--operations: unknown `nrm2`"));
        let bad = FusionSweep { variants: vec!["fused".into(), "cub".into()], ..FusionSweep::default() };
        let err = bad.check().unwrap_err().to_string();
        assert!(
            err.contains("--variants: unknown `cub`; available: hand, unfused, fused, fused_staged, vendor"),
            "{err}"
        );
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

    /// The FP64 check as the experiment makes it (the Dot2 reference, γ_D with u = 2⁻⁵³, u for dot's products, the
    /// reference's own bound) passes FP64 sums in the kernels' order, with and without a fused multiply-add, and
    /// fails each planted error: one element lost, one group's partial counted twice, an FP32 accumulator, inputs
    /// read through FP32. The last passes the FP32 tolerance: FP64's check catches what FP32's cannot.
    #[test]
    fn the_fp64_check_passes_kernel_orders_and_fails_planted_errors() {
        let mut rng = fastrand::Rng::with_seed(11);
        let n: usize = 1 << 16;
        let x: Vec<f64> = (0..n).map(|_| rng.f64() * 2.0 - 1.0).collect();
        let y: Vec<f64> = (0..n).map(|_| rng.f64() * 2.0 - 1.0).collect();
        let geometry = Geometry::for_elements(n as u64, 16).unwrap();
        let threads = (geometry.groups * GROUP_SIZE) as usize;
        // The kernels' order: each item's grid-stride run in order, then a pairwise tree over the items.
        let device = |term: &dyn Fn(usize, f64) -> f64, skip: Option<usize>, fp32: bool, doubled: bool| -> f64 {
            let mut partial: Vec<f64> = (0..threads)
                .map(|t| {
                    (t..n).step_by(threads).filter(|&i| Some(i) != skip).fold(0.0, |a, i| {
                        let sum = term(i, a);
                        if fp32 {
                            f64::from(sum as f32)
                        } else {
                            sum
                        }
                    })
                })
                .collect();
            if doubled {
                partial[7] *= 2.0;
            }
            while partial.len() > 1 {
                partial = partial.chunks(2).map(|p| p.iter().sum()).collect();
            }
            partial[0]
        };
        for op in [Op::Sum, Op::Dot, Op::Asum] {
            let program = op.program(true).unwrap().with_element(Precision::F64);
            let inputs: Vec<&[f64]> = if op == Op::Dot { vec![&x, &y] } else { vec![&x] };
            let (want, scale) = program.reference(&inputs);
            let rounding = if op == Op::Dot { Precision::F64.unit_roundoff() } else { 0.0 };
            let tolerance = element_sum_tolerance(Precision::F64, geometry.addition_depth(), rounding)
                + program.reference_error(n as u64);
            let check = |got: f64| verify::compare(&[got], &[want], scale, tolerance);
            let plain = |i: usize, a: f64| match op {
                Op::Sum => a + x[i],
                Op::Dot => a + x[i] * y[i],
                Op::Asum => a + x[i].abs(),
            };
            let fused = |i: usize, a: f64| if op == Op::Dot { x[i].mul_add(y[i], a) } else { plain(i, a) };
            let single = |v: f64| f64::from(v as f32);
            let through_fp32 = |i: usize, a: f64| match op {
                Op::Sum => a + single(x[i]),
                Op::Dot => a + single(x[i]) * single(y[i]),
                Op::Asum => a + single(x[i]).abs(),
            };
            for (what, got) in
                [("plain", device(&plain, None, false, false)), ("with FMA", device(&fused, None, false, false))]
            {
                assert!(check(got).passed(), "{op:?} {what}: {}", check(got).summary());
            }
            for (what, got) in [
                ("one element lost", device(&plain, Some(12345), false, false)),
                ("one partial doubled", device(&plain, None, false, true)),
                ("an FP32 accumulator", device(&plain, None, true, false)),
                ("inputs read through FP32", device(&through_fp32, None, false, false)),
            ] {
                assert!(!check(got).passed(), "{op:?}: {what} passed the FP64 check ({})", check(got).summary());
            }
            // Inputs read through FP32 are well within FP32's tolerance of this geometry.
            let through = device(&through_fp32, None, false, false);
            let fp32_rounding = if op == Op::Dot { f64::from(f32::EPSILON) / 2.0 } else { 0.0 };
            let fp32_tolerance = sum_tolerance(geometry.addition_depth(), fp32_rounding);
            assert!(verify::compare(&[through], &[want], scale, fp32_tolerance).passed(), "{op:?}");
        }
    }

    /// The sweep is its own command line: flags as before (sizes as integers or 2^N), the defaults of an empty one
    /// and the options JSON that resume and merge compare are unchanged.
    #[test]
    fn the_command_line_and_the_options_are_those_of_before() {
        let parse = |args: &[&str]| {
            let cmd = <FusionSweep as clap::Args>::augment_args(clap::Command::new("fusion"));
            let matches = cmd.try_get_matches_from(std::iter::once("fusion").chain(args.iter().copied()))?;
            <FusionSweep as clap::FromArgMatches>::from_arg_matches(&matches)
        };
        let all = serde_json::json!({
            "sizes": (15..=25).map(|e| 1u64 << e).collect::<Vec<_>>(),
            "operations": ["sum", "dot", "asum"],
            "variants": ["hand", "unfused", "fused", "fused_staged", "vendor"],
            "precision": ["f32", "f64"],
        });
        assert_eq!(FusionSweep::default().options(&h100()), all);
        assert_eq!(parse(&[]).unwrap(), FusionSweep::default());
        let sweep = parse(&["--sizes", "2^10,1000", "--operations", "dot", "--variants", "fused,vendor"]).unwrap();
        assert_eq!(
            sweep.options(&h100()),
            serde_json::json!({
                "sizes": [1024, 1000], "operations": ["dot"], "variants": ["fused", "vendor"], "precision": ["f32", "f64"]
            })
        );
        let quick = FusionSweep::quick().options(&h100());
        assert_eq!(quick["sizes"], serde_json::json!([1 << 15, 1 << 20, 1 << 25]));
        assert_eq!((&quick["variants"], &quick["precision"]), (&all["variants"], &all["precision"]));
        assert_eq!(quick["f64_sizes"], serde_json::json!([1 << 20]));
        // The precision flags: names checked, FP64 sizes only with FP64.
        let sweep = parse(&["--precision", "f64", "--f64-sizes", "1048577,3"]).unwrap().check().unwrap();
        assert_eq!(sweep.blocks(), [(1048577, Precision::F64), (3, Precision::F64)]);
        let err = parse(&["--precision", "f32,f16"]).unwrap().check().unwrap_err().to_string();
        assert!(err.contains("--precision: unknown `f16`; available: f32, f64"), "{err}");
        let err = parse(&["--precision", "f32", "--f64-sizes", "1000"]).unwrap().check().unwrap_err().to_string();
        assert!(err.starts_with("--f64-sizes: FP64 is not among --precision"), "{err}");
        for bad in ["0", "abc", "2^x"] {
            let err = parse(&["--sizes", bad]).unwrap_err().to_string();
            assert!(
                err.contains("--sizes") && err.contains(if bad == "0" { "at least 1" } else { "not a size" }),
                "{err}"
            );
        }
    }
}
