//! Kernel fusion (seed: `composable-gpu-programming-steuwer.txt`): reductions written as composed patterns
//! ([`crate::patterns`]) against a hand-written kernel and the vendor BLAS.
//!
//! Three operations over FP32 vectors: **sum** `reduce(+, x)`, **dot** `reduce(+, map(mul, zip(x, y)))` and
//! **asum** `reduce(+, map(abs, x))`. Five variants of each:
//! - `hand`: the classic two-stage reduction in `kernels/fusion.hip` (partials per group, then one group adds
//!   them), the seed's CUDA baseline, which the speedups are relative to;
//! - `unfused`: the map is an eager action, a kernel of its own writing a temporary vector that the reduction reads
//!   back (Thrust's `transform` + `reduce`); sum has no map, so its `unfused` point is `invalid` (nothing to unfuse);
//! - `fused`: the map is a lazy view fused into the reduction: one kernel (single pass, see [`crate::patterns`]);
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

mod cases;
mod compare;
mod derived;
mod headlines;
mod plots;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;
use std::rc::Rc;

use serde::Serialize;

use super::entry::{defaults, size_arg, Entry, Sweep};
use super::estimate::{LAUNCH_S, STREAMING_SHARE};
use super::{Case, Error, Experiment, Metric, Point, Results, RunContext};
use crate::code_objects::{DeviceShape, Specialisation};
use crate::device::Props;
use crate::options::{bytes_of, Memory};
use crate::patterns::{input, zip, Binary, Geometry, Program, Reduce, Rendered, Unary, GROUP_SIZE};
use crate::report::plot::LinePlot;
use cases::Inputs;
pub use compare::FusionComparison;

/// The operations, in sweep order.
pub const OPERATIONS: [&str; 3] = ["sum", "dot", "asum"];
/// The variants, in sweep (and legend) order.
pub const VARIANTS: [&str; 5] = ["hand", "unfused", "fused", "fused_staged", "vendor"];
/// The two measures of every point.
pub const MEASURES: [&str; 2] = ["device", "end_to_end"];

/// FP32 unit roundoff, 2⁻²⁴.
const U: f64 = f32::EPSILON as f64 / 2.0;

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
}

impl Default for FusionSweep {
    fn default() -> Self {
        defaults()
    }
}

impl Sweep for FusionSweep {
    const NAME: &'static str = "fusion";
    const HELP: &'static str = "Kernel fusion: sum, dot and asum as composed patterns (unfused, fused, fused + \
                                run-time staged) vs a hand-written reduction and the vendor BLAS; device and \
                                end-to-end time, GB/s per size.";
    const RESULTS: &'static dyn Results = &FusionResults;

    /// The smallest size (L2-resident), one past the L2 and the largest, every operation and variant.
    fn quick() -> Self {
        FusionSweep { sizes: vec![1 << 15, 1 << 20, 1 << 25], ..FusionSweep::default() }
    }

    /// Checks the operation and variant names; the message names the flag.
    fn check(self) -> Result<Self, Error> {
        for (flag, given, known) in
            [("--operations", &self.operations, &OPERATIONS[..]), ("--variants", &self.variants, &VARIANTS[..])]
        {
            if let Some(bad) = given.iter().find(|g| !known.contains(&g.as_str())) {
                return Err(Error::Options(format!("{flag}: unknown `{bad}`; available: {}", known.join(", "))));
            }
        }
        Ok(self)
    }
}

/// `suite run fusion`.
pub const ENTRY: Entry = Entry::of::<FusionSweep>();

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

    /// The inputs of size `n`, made once and kept in the run's shared slot while the sweep stays at that size.
    fn inputs(ctx: &RunContext, n: usize) -> Result<Rc<Inputs>, Error> {
        ctx.shared(|i: &Inputs| i.host_x.len() == n, || Inputs::new(ctx.gpu, n))
    }
}

/// Appends one specialisation's compile cost to `fusion_compile.csv` in the results folder `dir`.
fn record_compile(dir: &Path, row: &[String]) -> Result<(), Error> {
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

/// Side file with the ratios derived from the CSV ([`Results::derived_tables`]).
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

/// Fusion's read side: its columns, plots, ratios table, headlines, comparison and roofline families (its copy
/// rows are device copies).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FusionResults;

impl Results for FusionResults {
    fn name(&self) -> &'static str {
        FusionSweep::NAME
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
            family: |r| r.get("variant").cloned().unwrap_or_default(),
            is_copy: |r| r.get("op").is_some_and(|s| s == "copy"),
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

    fn points(&self, ctx: &RunContext) -> Vec<Point> {
        let (gpu, props) = (ctx.gpu, ctx.props());
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

    fn prepare<'g>(&self, ctx: &RunContext<'g>, point: &Point) -> Result<Box<dyn Case + 'g>, Error> {
        cases::prepare(self, ctx, point)
    }
}

/// Error allowed for an FP32 sum whose additions form a tree of depth `depth`, relative to Σ|tᵢ|: γ_depth =
/// depth·u / (1 − depth·u), plus `term_rounding` for terms that were rounded themselves (see the module doc).
pub fn sum_tolerance(depth: u64, term_rounding: f64) -> f64 {
    let d = depth as f64 * U;
    d / (1.0 - d) + term_rounding
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::occupancy_calculator::tests::h100;

    #[test]
    fn compile_records_from_several_writers_share_one_header() {
        let dir = tempfile::tempdir().unwrap();
        let row = |op: &str| -> Vec<String> {
            [op, "1024", "FUSION_N=1024u", "compiled", "400.0", "0.2", "0.03"].map(str::to_string).to_vec()
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
        assert_eq!(lines.iter().filter(|l| l.starts_with("sum,1024,")).count(), 50);
    }

    #[test]
    fn points_cover_every_size_operation_variant_and_measure_in_a_fixed_order() {
        let sweep = FusionSweep { sizes: vec![1 << 15, (1 << 20) + 1], ..FusionSweep::default() };
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
        });
        assert_eq!(FusionSweep::default().options(&h100()), all);
        assert_eq!(parse(&[]).unwrap(), FusionSweep::default());
        let sweep = parse(&["--sizes", "2^10,1000", "--operations", "dot", "--variants", "fused,vendor"]).unwrap();
        assert_eq!(
            sweep.options(&h100()),
            serde_json::json!({"sizes": [1024, 1000], "operations": ["dot"], "variants": ["fused", "vendor"]})
        );
        assert_eq!(FusionSweep::quick().options(&h100())["sizes"], serde_json::json!([1 << 15, 1 << 20, 1 << 25]));
        assert_eq!(FusionSweep::quick().options(&h100())["variants"], all["variants"]);
        for bad in ["0", "abc", "2^x"] {
            let err = parse(&["--sizes", bad]).unwrap_err().to_string();
            assert!(
                err.contains("--sizes") && err.contains(if bad == "0" { "at least 1" } else { "not a size" }),
                "{err}"
            );
        }
    }
}
