//! Matmul: the seed's ladder (naive → accumulator → LDS tiles M = 4..32) up to register-blocked kernels, against
//! the vendor BLAS at every size (`kernels/matmul.hip`, row-major, C = A·B), in FP32 and FP64 (`--precision`), and in
//! FP64 on NVIDIA one rung further, to the tensor cores the vendor BLAS uses (`kernels/matmul_dmma.hip`).
//!
//! Every point, the vendor BLAS's included, is verified at every element of C against a reference kernel on the GPU
//! (FP32: `matmul_reference_f64`, accumulating in FP64; FP64: `matmul_reference_dot2_f64`, compensated), itself
//! checked against the host at sampled elements, with the tolerance of [`verify::matmul_tolerance`] or
//! [`verify::matmul_tolerance_f64`]. GFLOP/s = 2·M·N·K / median time. Each row names the unit its kernel uses
//! (`unit`: vector, packed, matrix) and that unit's peak in its precision (`unit_peak_tflops`).
//!
//! Sizes: every kernel takes any M, N, K: out-of-range loads read zero and stores are guarded, and the kernels with
//! 16-byte accesses launch their `_unaligned` twins (guarded element accesses) where rows are not 16-byte aligned
//! ([`Variant::symbol_for`]). A size the kernels cannot index, launch or fit in memory is an `invalid` row that says
//! why ([`point_problem`]), and so is a kernel with no instance in a precision or on an architecture
//! ([`Variant::problem_on`]).
//!
//! Beyond the ladder: split-K and stream-K kernels give small sizes enough groups for the device ([`Variant::plan`]),
//! and at every size an `autotune` row names the fastest kernel that verified, picked by measurement
//! ([`autotune_candidates`], [`autotune_pick`]). docs/matmul.md has the method and the figures.

mod autotune;
mod cases;
pub mod compare;
pub mod fit;
mod headlines;
mod ladder;
mod pack;
mod plots;
mod rungs;
mod selection;
mod shape;

use std::collections::BTreeMap;
use std::path::Path;

use super::entry::{defaults, Entry, Sweep};
use super::estimate::{launch_seconds, LAUNCH_S};
use super::{Case, Error, Experiment, Metric, Params, Point, Points, Results, RunContext, Work};
use crate::device::{Platform, Props};
use crate::measure::matmul_flops;
use crate::options::Memory;
use crate::peaks::{Ceilings, Unit};
use crate::precision::Precision;
use crate::report::plot::LinePlot;
use cases::{device_plan, Element, Inputs, KernelCase, VendorCase};
use ladder::{GroupLimits, REFERENCE_DOT2_SYMBOL, REFERENCE_SYMBOL};

pub use autotune::{autotune_candidates, autotune_pick, AUTOTUNE, AUTOTUNE_SPLITS};
pub use cases::{draw, draw_inputs, multiply};
pub use compare::MatmulComparison;
pub use fit::DeviceSet;
pub use ladder::{
    point_problem, split_k_for, tail_split, ArchKernels, Arith, Exists, Fixup, Instance, Multiples, Plan, Schedule,
    Tail, Variant, MAX_SPLIT_K,
};
pub use pack::{pack_pays, Pack, Packing};
pub use plots::plots;
pub use rungs::{ARCH_DEFAULTS, VARIANTS};
pub use selection::{default_kernels, default_names, family_absent, select_kernels, selected};
pub use shape::{Shape, KERNEL_DIM_MAX};

/// The sweep: precisions × sizes × kernels, with the vendor BLAS and the autotune step at every size. Its fields are
/// the flags of `suite run matmul`.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct MatmulSweep {
    /// Problem sizes, comma-separated: N (integer or 2^N) for M = N = K, or MxNxK. The default runs 256 to 8192 with
    /// 768, 1000, 1023, 1536, 3072, 4097, 6144 and two rectangular products (see docs/matmul.md).
    #[arg(long, value_delimiter = ',', value_parser = Shape::parse, default_values = FULL_SIZES.iter().copied())]
    pub sizes: Vec<Shape>,
    /// Kernels by name or family, comma-separated (default: the seed's ladder plus the register-blocked kernels
    /// suited to the device's architecture, see docs/matmul.md); `tiled` means every --tiles size.
    #[arg(long, value_delimiter = ',')]
    pub kernels: Vec<String>,
    /// Tile sizes M of the tiled kernel (default: 4,8,16,32).
    #[arg(long, value_delimiter = ',')]
    pub tiles: Vec<u32>,
    /// Skip the vendor BLAS (rocBLAS/cuBLAS) rows; it is still the reference where available.
    #[arg(long)]
    pub no_vendor: bool,
    /// Skip the autotune rows (the fastest verified kernel per size, picked by measurement).
    #[arg(long)]
    pub no_autotune: bool,
    /// Precisions, comma-separated: f32, f64 (default both: LUMI's codes are FP64, and the FP32 rows are the same
    /// points, keys and values as before FP64 existed).
    #[arg(long, value_delimiter = ',', value_parser = parse_precision, default_values = ["f32", "f64"])]
    pub precision: Vec<Precision>,
    /// FP64 sizes, as --sizes (default: the --sizes).
    #[arg(long, value_delimiter = ',', value_parser = Shape::parse)]
    pub f64_sizes: Vec<Shape>,
    /// FP64 kernels, as --kernels (default: the --kernels, else the architecture's FP64 set).
    #[arg(long, value_delimiter = ',')]
    pub f64_kernels: Vec<String>,
    /// The device's default sets, once settled from the code objects built for it ([`Experiment::on_device`]);
    /// `None` before, when the table ([`ARCH_DEFAULTS`]) serves.
    #[arg(skip)]
    pub device_set: Option<DeviceSet>,
}

/// `--precision`'s values.
fn parse_precision(text: &str) -> Result<Precision, String> {
    Precision::parse(text)
}

/// The full sweep's sizes: 256 to 8192 with the sizes between the powers of two where the number of tiles per SM
/// changes most (768, 1536, 3072, 6144), sizes that no tile divides (1000, 1023, 4097: 1023 and 4097 also leave rows
/// unaligned for 16-byte loads), and two rectangular products.
pub const FULL_SIZES: &[&str] = &[
    "256",
    "512",
    "768",
    "1000",
    "1023",
    "1024",
    "1536",
    "2048",
    "3072",
    "4096",
    "4097",
    "6144",
    "8192",
    "1000x1500x700",
    "2000x500x3000",
];

impl Default for MatmulSweep {
    /// [`FULL_SIZES`] in FP32 and FP64; the device's default kernels; the vendor BLAS; the autotune step.
    fn default() -> Self {
        defaults()
    }
}

impl Sweep for MatmulSweep {
    const NAME: &'static str = "matmul";
    const HELP: &'static str = "Matmul ladder (naive, accumulator, LDS tiles, register-blocked, split-K, stream-K, \
                                FP64 tensor cores) and an autotune step vs the vendor BLAS, FP32 and FP64: GFLOP/s \
                                per size.";
    const RESULTS: &'static dyn Results = &MatmulResults;

    /// FP32: one rung of each step of the ladder, the vendor BLAS and the autotune step at four sizes, from one too
    /// small to fill the device with large tiles (512, where split-K matters) through one no tile divides (1000) to
    /// one where the register-blocked kernels reach their plateau. FP64: the same rungs in their FP64 shapes plus the
    /// DMMA rung at 1024 and 2048, sizes of its two regimes (too few 128×128 tiles for the device, and enough), small
    /// enough that FP64 adds a fraction of the FP32 part's time (`suite run --dry-run`'s estimate).
    fn quick() -> Self {
        let kernels = [
            "accumulator",
            "tiled_m16",
            "blocktile_2d",
            "vectorized",
            "warptile",
            "double_buffer",
            "splitk_128x64x16_t128",
            "streamk_128x128x8_t128",
            // The matrix rungs: on NVIDIA one row per size each, saying that it has no FP32 matrix path and that
            // MFMA is AMD's; on CDNA the MFMA rung runs.
            "dmma",
            "mfma_128x128x8_t256",
        ];
        let f64_kernels = [
            "accumulator",
            "tiled_m16",
            "blocktile_2d",
            "vectorized",
            "warptile",
            "double_buffer_128x128x8_t256",
            "splitk_64x128x8_t128",
            "streamk_64x64x16_t128",
            "dmma",
            "mfma_128x128x8_t512",
        ];
        let sizes = [512, 1000, 2048, 4096].into_iter().map(Shape::square).collect();
        let f64_sizes = [1024, 2048].into_iter().map(Shape::square).collect();
        MatmulSweep::new(sizes, &kernels, true).with_autotune(true).with_f64(f64_sizes, &f64_kernels)
    }

    /// Kernel names and tile sizes must each select something (the message names the flag and lists what exists).
    fn check(self) -> Result<Self, Error> {
        select_kernels(&self.kernels, &self.tiles)?;
        select_kernels(&self.f64_kernels, &self.tiles)
            .map_err(|e| crate::options::Error { flag: "--f64-kernels", problem: e.problem })?;
        if self.precision.is_empty() {
            return Err(crate::options::Error { flag: "--precision", problem: "name f32, f64 or both".into() }.into());
        }
        Ok(self)
    }
}

/// `suite run matmul`.
pub const ENTRY: Entry = Entry::of::<MatmulSweep>();

impl MatmulSweep {
    /// An FP32 sweep of `sizes` × the kernels `kernels` names (kernel names or families, as `--kernels` takes them;
    /// the device's default set if empty), with the vendor BLAS rows if `vendor` and no autotune rows. (FP32 only, as
    /// the sweeps of the tests and benchmarks written before FP64; [`MatmulSweep::with_f64`] adds FP64.)
    pub fn new(sizes: Vec<Shape>, kernels: &[&str], vendor: bool) -> MatmulSweep {
        MatmulSweep {
            sizes,
            kernels: selection::owned(kernels),
            no_vendor: !vendor,
            no_autotune: true,
            precision: vec![Precision::F32],
            ..defaults()
        }
    }

    /// This sweep with (or without) an `autotune` row at every size.
    pub fn with_autotune(self, autotune: bool) -> MatmulSweep {
        MatmulSweep { no_autotune: !autotune, ..self }
    }

    /// This sweep in FP64 too, at `sizes` (the FP32 sizes if empty) with `kernels` (the FP32 ones if empty).
    pub fn with_f64(self, sizes: Vec<Shape>, kernels: &[&str]) -> MatmulSweep {
        let mut precision = self.precision.clone();
        if !precision.contains(&Precision::F64) {
            precision.push(Precision::F64);
        }
        MatmulSweep { precision, f64_sizes: sizes, f64_kernels: selection::owned(kernels), ..self }
    }

    /// This sweep in FP64 only, at its FP64 sizes and kernels.
    pub fn only_f64(self) -> MatmulSweep {
        MatmulSweep { precision: vec![Precision::F64], ..self }
    }

    /// The precisions it runs, FP32 first (so FP32 points keep the indexes and shards they had before FP64).
    fn precisions(&self) -> Vec<Precision> {
        Precision::ALL.into_iter().filter(|p| self.precision.contains(p)).collect()
    }

    /// The sizes it runs in `precision`.
    fn sizes_for(&self, precision: Precision) -> &[Shape] {
        match precision {
            Precision::F64 if !self.f64_sizes.is_empty() => &self.f64_sizes,
            _ => &self.sizes,
        }
    }

    /// The kernels the sweep runs on a device of architecture `arch` in `precision`, in ladder order: those
    /// `--kernels` (FP64: `--f64-kernels`, else `--kernels`) and `--tiles` select or, without them, the architecture's
    /// default set for the precision ([`ARCH_DEFAULTS`]). A rung with no instance at all in the precision on `arch`
    /// (the DMMA rung in FP32, the atomic split-K rung in FP64) keeps one row per size, its first kernel's, which
    /// says why; a shape that lacks one where others of its rung have one keeps its own row.
    pub fn variants(&self, arch: &str, precision: Precision) -> Vec<&'static Variant> {
        let named = match precision {
            Precision::F64 if !self.f64_kernels.is_empty() => &self.f64_kernels,
            _ => &self.kernels,
        };
        let chosen = if named.is_empty() {
            selected(&self.default_set(arch, precision), &self.tiles)
        } else {
            selected(named, &self.tiles)
        };
        let mut seen_absent: Vec<&str> = Vec::new();
        chosen
            .into_iter()
            .filter(|v| {
                if !family_absent(v.family, precision, arch) {
                    return true;
                }
                let first = !seen_absent.contains(&v.family);
                seen_absent.push(v.family);
                first
            })
            .collect()
    }

    /// The device's default set in `precision` (names as `--kernels` takes them): settled from its code objects
    /// ([`DeviceSet`]) or, before that, the table's for `arch`.
    fn default_set(&self, arch: &str, precision: Precision) -> Vec<String> {
        match &self.device_set {
            Some(set) => set.names(precision).to_vec(),
            None => selection::owned(default_names(arch, precision)),
        }
    }

    /// The autotune step's candidates at `shape` in `precision` on the device `props` describes, from its default
    /// set (whatever `--kernels` says).
    fn autotune_candidates(&self, props: &Props, shape: Shape, precision: Precision) -> Vec<autotune::Candidate> {
        let arch = props.arch.as_str();
        let set = select_kernels(&self.default_set(arch, precision), &[]).unwrap_or_else(|_| VARIANTS.iter().collect());
        autotune_candidates(&set, arch, shape, props.cu_count, precision)
    }

    /// Every point of the sweep on `arch`, in order: precisions (FP32 first), then shapes, and at each shape the
    /// vendor BLAS first, then the kernels in ladder order, then the autotune step.
    fn slots(&self, arch: &str) -> Vec<(Precision, Shape, Slot)> {
        let mut out = Vec::new();
        for precision in self.precisions() {
            let kernels = self.variants(arch, precision);
            for &shape in self.sizes_for(precision) {
                if !self.no_vendor {
                    out.push((precision, shape, Slot::Vendor));
                }
                out.extend(kernels.iter().map(|v| (precision, shape, Slot::Kernel(v))));
                if !self.no_autotune {
                    out.push((precision, shape, Slot::Autotune));
                }
            }
        }
        out
    }
}

/// The vendor BLAS's name on a platform.
pub fn vendor_name(platform: Platform) -> &'static str {
    match platform {
        Platform::Amd => "rocblas",
        Platform::Nvidia => "cublas",
    }
}

/// A point's key: `<kernel>/<shape>` in FP32 (the keys of every run before FP64), `<kernel>/<shape>/f64` in FP64.
pub fn point_key(kernel: &str, shape: Shape, precision: Precision) -> String {
    match precision {
        Precision::F32 => format!("{kernel}/{shape}"),
        Precision::F64 => format!("{kernel}/{shape}/{precision}"),
    }
}

/// One launch of `kernel` (the vendor BLAS for `None`) at `shape`, for the estimate: 2·M·N·K FLOP in `precision` on
/// `unit` over A, B and C once, at the share of that unit's peak its rung reaches in the reference runs (rounded
/// down: the estimate errs long; the FP32 shares serve FP64, whose rungs reach about the same share of their peak).
fn point_work(shape: Shape, kernel: Option<&str>, precision: Precision, unit: Unit) -> Work {
    let share = match kernel {
        None => 0.5,
        Some("naive") => 0.005,
        Some("tiled_m4") => 0.02,
        Some("accumulator" | "tiled_m8") => 0.05,
        Some(k) if k.starts_with("tiled_") => 0.1,
        Some("blocktile_1d") => 0.15,
        Some("blocktile_2d") => 0.2,
        Some(k) if k.starts_with("dmma_") => 0.5,
        Some(_) => 0.3,
    };
    let (m, n, k) = (shape.m as f64, shape.n as f64, shape.k as f64);
    let bytes = precision.bytes() as f64 * (m * k + k * n + m * n);
    Work::kernel(matmul_flops(shape.m, shape.n, shape.k), bytes, share).on(precision, unit).at_least(LAUNCH_S)
}

/// The reference kernel at `shape` (16×16 tiles): the FP32 one accumulating in FP64 is credited with 2% of the FP32
/// peak; the FP64 one (Dot2, about ten FP64 operations per product instead of one FMA) with 1% of the FP64 vector
/// peak.
fn reference_work(shape: Shape, precision: Precision) -> Work {
    let flops = matmul_flops(shape.m, shape.n, shape.k);
    match precision {
        Precision::F32 => Work::kernel(flops, 0.0, 0.02),
        Precision::F64 => Work::kernel(flops, 0.0, 0.01).on(Precision::F64, Unit::Vector),
    }
}

/// What a point measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// The vendor BLAS.
    Vendor,
    /// One kernel of the ladder.
    Kernel(&'static Variant),
    /// The fastest of the autotune candidates.
    Autotune,
}

/// Matmul's read side: its columns, plots, headlines, comparison (% of the vendor BLAS) and roofline families.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MatmulResults;

impl Results for MatmulResults {
    fn roofline(&self) -> crate::report::roofline::Role {
        crate::report::roofline::Role {
            family: |r| {
                let family = plots::kernel_family(r.get("kernel").map_or("", String::as_str));
                match Precision::of_row(r) {
                    Precision::F32 => family,
                    p => format!("{family} {p}"),
                }
            },
            rate: |r| {
                let unit = r.get("unit").and_then(|u| Unit::parse(u))?;
                Some((Precision::of_row(r), unit))
            },
            ..Default::default()
        }
    }

    fn comparison(&self) -> Box<dyn crate::report::compare::Comparison> {
        Box::new(MatmulComparison)
    }

    fn name(&self) -> &'static str {
        "matmul"
    }

    fn param_columns(&self) -> &'static [&'static str] {
        &[
            "kernel",
            "tile_m",
            "m",
            "n",
            "k",
            "group_x",
            "group_y",
            "reference",
            "split_k",
            "groups",
            "symbol",
            "pick",
            "fp32_vector_peak_tflops",
            "fp32_matrix_peak_tflops",
            "precision",
            "unit",
            "unit_peak_tflops",
        ]
    }

    fn metric(&self) -> Metric {
        Metric { column: "gflops", formula: "GFLOP/s = 2*M*N*K / median time / 1e9" }
    }

    fn plots(&self, rows: &[BTreeMap<String, String>], _dir: &Path) -> Vec<(String, LinePlot)> {
        plots(rows)
    }

    /// Per precision and size, the vendor BLAS and the best hand kernel per unit, with its share of the vendor's
    /// rate and of its unit's peak.
    fn headlines(&self, rows: &[BTreeMap<String, String>]) -> Vec<String> {
        headlines::headlines(rows)
    }
}

/// A point's parameter columns (in [`MatmulResults::param_columns`]'s order).
struct RowParams<'a> {
    shape: Shape,
    precision: Precision,
    ceilings: &'a Ceilings,
}

impl RowParams<'_> {
    fn row(
        &self,
        kernel: &str,
        tile_m: String,
        group: [String; 2],
        plan: Option<&Plan>,
        unit: Option<Unit>,
    ) -> Vec<String> {
        let [gx, gy] = group;
        let (split_k, groups, symbol) =
            plan.map_or_else(Default::default, |p| (p.split_k.to_string(), p.groups().to_string(), p.symbol.clone()));
        let reference = match self.precision {
            Precision::F32 => <f32 as Element>::REFERENCE_NAME,
            Precision::F64 => <f64 as Element>::REFERENCE_NAME,
        };
        let peak = unit.and_then(|u| self.ceilings.peak_tflops(self.precision, u));
        Params::of(MatmulSweep::RESULTS)
            .set("kernel", kernel)
            .set("tile_m", tile_m)
            .set("m", self.shape.m)
            .set("n", self.shape.n)
            .set("k", self.shape.k)
            .set("group_x", gx)
            .set("group_y", gy)
            .set("reference", reference)
            .set("split_k", split_k)
            .set("groups", groups)
            .set("symbol", symbol)
            // Filled in once an autotune step has run (Case::resolved_params).
            .set("pick", "")
            // The device's FP32 ceilings beside every row (as before FP64); the row's own unit and its peak in the
            // row's precision follow.
            .set("fp32_vector_peak_tflops", self.ceilings.fp32_vector_tflops)
            .set("fp32_matrix_peak_tflops", self.ceilings.fp32_matrix_tflops.map(|t| t.to_string()).unwrap_or_default())
            .set("precision", self.precision.name())
            .set("unit", unit.map(|u| u.name().to_string()).unwrap_or_default())
            .set("unit_peak_tflops", peak.map(|t| t.to_string()).unwrap_or_default())
            .row()
    }
}

/// One point of the matmul sweep: its precision, its shape and what it measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MatmulPoint {
    precision: Precision,
    shape: Shape,
    slot: Slot,
}

impl Experiment for MatmulSweep {
    fn results(&self) -> &'static dyn Results {
        Self::RESULTS
    }

    /// The kernels are those that run on `device` ([`MatmulSweep::variants`]): without `--kernels` they depend on
    /// its architecture, and the fingerprint must change when they do.
    fn options(&self, device: &Props) -> serde_json::Value {
        let arch = device.arch.as_str();
        let names = |p: Precision| self.variants(arch, p).iter().map(|v| v.name).collect::<Vec<_>>();
        let mut options = serde_json::json!({
            "shapes": self.sizes,
            "kernels": names(Precision::F32),
            "vendor": !self.no_vendor,
            "autotune": !self.no_autotune,
            "autotune_splits": AUTOTUNE_SPLITS,
            "split_k": "largest S with tiles*S <= CUs * groups per CU, S <= 16, >= 4 slabs of K per range",
            "streamk_groups": "CUs * groups per CU, at most one per slab",
            "reference": REFERENCE_SYMBOL,
            "tolerance": "2*sqrt(K)*eps_f32, relative to max(max |C|, sqrt(K)), every element",
            "precisions": self.precisions(),
        });
        if let Some(set) = &self.device_set {
            options["default_set"] = serde_json::json!(set.origin);
            // Said in summary.md under the experiment (Section::notes reads them from run.json).
            options["notes"] = serde_json::json!(set
                .left_out
                .iter()
                .map(|l| format!("left out of the default set: {l}"))
                .collect::<Vec<_>>());
        }
        if self.precisions().contains(&Precision::F64) {
            options["f64"] = serde_json::json!({
                "shapes": self.sizes_for(Precision::F64),
                "kernels": names(Precision::F64),
                "reference": REFERENCE_DOT2_SYMBOL,
                "tolerance": "2*sqrt(K)*eps_f64, relative to max(max |C|, sqrt(K)), every element",
            });
        }
        options
    }

    fn sources(&self) -> &'static [&'static str] {
        &["matmul", "matmul_dmma"]
    }

    /// On AMD, the default sets chosen from the code objects built for the device ([`DeviceSet::of`]).
    fn on_device(&self, gpu: &crate::gpu::Gpu) -> Result<Option<Box<dyn Experiment>>, Error> {
        if self.device_set.is_some() {
            return Ok(None);
        }
        Ok(DeviceSet::of(gpu)?.map(|set| Box::new(MatmulSweep { device_set: Some(set), ..self.clone() }) as _))
    }
}

impl Points for MatmulSweep {
    type Spec = MatmulPoint;

    fn points(&self, ctx: &RunContext) -> Vec<Point<MatmulPoint>> {
        let (gpu, props) = (ctx.gpu, ctx.props());
        let arch = props.arch.as_str();
        let vendor = vendor_name(props.platform);
        let blas = gpu.device.blas();
        let memory = Memory::of(props.memory_bytes);
        let ceilings = crate::peaks::ceilings(props);
        let limits = GroupLimits { items: props.max_group_size, lds_bytes: props.lds_bytes_per_group_optin };
        let slots = self.slots(arch);
        slots
            .iter()
            .enumerate()
            .map(|(index, &(precision, shape, slot))| {
                let spec = MatmulPoint { precision, shape, slot };
                let params = RowParams { shape, precision, ceilings: &ceilings };
                let basic = point_problem(shape, precision, None, limits, &memory, 0);
                let vendor_unit = crate::peaks::vendor_gemm_unit(props.platform, arch, precision);
                let mut work = match slot {
                    Slot::Vendor => point_work(shape, None, precision, vendor_unit),
                    Slot::Kernel(v) => point_work(shape, Some(v.name), precision, v.unit(precision, arch)),
                    // Every candidate is verified and timed: as many launches' worth as there are candidates.
                    Slot::Autotune => {
                        let candidates = self.autotune_candidates(props, shape, precision);
                        let unit = candidates.first().map_or(Unit::Vector, |(v, _, _)| v.unit(precision, arch));
                        let one = point_work(shape, Some(AUTOTUNE), precision, unit);
                        Work { share_of_peak: one.share_of_peak / candidates.len().max(1) as f64, ..one }
                    }
                };
                let first_of_shape = index == 0 || slots[index - 1].0 != precision || slots[index - 1].1 != shape;
                if first_of_shape {
                    // The first point of a shape makes its inputs and runs the reference kernel.
                    work = work.with_setup(launch_seconds(&reference_work(shape, precision), &ceilings).0);
                }
                match slot {
                    Slot::Vendor => Point {
                        invalid: basic.or_else(|| {
                            blas.as_ref()
                                .err()
                                .map(|e| format!("{e}; the kernels are still verified against the reference kernel"))
                        }),
                        spec,
                        key: point_key(vendor, shape, precision),
                        params: params.row(vendor, String::new(), Default::default(), None, Some(vendor_unit)),
                        work,
                    },
                    Slot::Kernel(v) => {
                        let tile_m = v.tile_m.map(|m| m.to_string()).unwrap_or_default();
                        let group = [v.group[0].to_string(), v.group[1].to_string()];
                        // The plan needs a kernel that exists and a launchable size, and its workspace counts
                        // against the memory.
                        let plan = match v
                            .problem_on(precision, arch)
                            .or_else(|| point_problem(shape, precision, Some(v), limits, &memory, 0))
                        {
                            Some(why) => Err(why),
                            None => device_plan(gpu, v, shape, precision, None, Packing::Model),
                        };
                        let invalid = match &plan {
                            Ok(p) => point_problem(shape, precision, Some(v), limits, &memory, p.workspace_bytes()),
                            Err(why) => Some(why.clone()),
                        };
                        let unit = Some(v.unit(precision, arch));
                        Point {
                            spec,
                            key: point_key(v.name, shape, precision),
                            params: params.row(v.name, tile_m, group, plan.as_ref().ok(), unit),
                            invalid,
                            work,
                        }
                    }
                    Slot::Autotune => Point {
                        invalid: basic,
                        spec,
                        key: point_key(AUTOTUNE, shape, precision),
                        // The pick's columns are filled in once the step has run (Case::resolved_params).
                        params: params.row(AUTOTUNE, String::new(), Default::default(), None, None),
                        work,
                    },
                }
            })
            .collect()
    }

    fn prepare<'g>(&self, ctx: &RunContext<'g>, spec: &MatmulPoint) -> Result<Box<dyn Case + 'g>, Error> {
        let MatmulPoint { precision, shape, slot } = *spec;
        let candidates = match slot {
            Slot::Autotune => self.autotune_candidates(ctx.props(), shape, precision),
            _ => Vec::new(),
        };
        match precision {
            Precision::F32 => prepare_in::<f32>(ctx, shape, slot, candidates),
            Precision::F64 => prepare_in::<f64>(ctx, shape, slot, candidates),
        }
    }
}

/// The case of a point in the precision of `T`. The inputs are made once per shape and precision and kept in the
/// run's shared slot until the sweep moves on (the runner prepares points in order, and a shape's points are
/// consecutive).
fn prepare_in<'g, T: Element>(
    ctx: &RunContext<'g>,
    shape: Shape,
    slot: Slot,
    candidates: Vec<autotune::Candidate>,
) -> Result<Box<dyn Case + 'g>, Error> {
    let gpu = ctx.gpu;
    let inputs = ctx.shared(|i: &Inputs<T>| i.shape == shape, || Inputs::<T>::new(gpu, shape, &ctx.phases))?;
    match slot {
        Slot::Vendor => Ok(Box::new(VendorCase::new(gpu, inputs)?)),
        Slot::Kernel(v) => {
            let plan = device_plan(gpu, v, shape, T::PRECISION, None, Packing::Model).map_err(Error::Unsupported)?;
            Ok(Box::new(KernelCase::new(gpu, inputs, v, plan)?))
        }
        Slot::Autotune => Ok(Box::new(autotune::autotune(gpu, inputs, candidates)?)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const F32: Precision = Precision::F32;
    const F64: Precision = Precision::F64;

    fn props(arch: &str) -> Props {
        Props { arch: crate::device::Arch::parse(arch).unwrap(), ..crate::occupancy_calculator::tests::h100() }
    }

    fn names(s: &MatmulSweep, arch: &str, precision: Precision) -> Vec<&'static str> {
        s.variants(arch, precision).iter().map(|v| v.name).collect()
    }

    #[test]
    fn the_sweep_takes_the_devices_defaults_only_without_kernels() {
        let shapes = vec![Shape::square(256)];
        let by_arch = MatmulSweep::new(shapes.clone(), &[], true);
        let want: Vec<&str> = default_kernels("gfx90a", F32, &[]).unwrap().iter().map(|v| v.name).collect();
        assert_eq!(names(&by_arch, "gfx90a", F32), want);
        assert!(by_arch.options(&props("gfx90a"))["kernels"].to_string().contains("double_buffer_256x128x8_t512"));
        // The options say which kernels ran, so another device's set is another fingerprint.
        let sm90 = names(&by_arch, "sm_90", F32);
        assert_ne!(want, sm90);
        assert_eq!(by_arch.options(&props("sm_90"))["kernels"], serde_json::json!(sm90));
        // --tiles still applies to the device's set.
        let tiled = MatmulSweep { tiles: vec![16], ..MatmulSweep::new(shapes.clone(), &[], true) };
        let want: Vec<&str> = default_kernels("gfx90a", F32, &[16]).unwrap().iter().map(|v| v.name).collect();
        assert_eq!(names(&tiled, "gfx90a", F32), want);
        // Kernels named on the command line are kept on any device.
        let named = MatmulSweep::new(shapes, &["double_buffer"], true);
        assert!(names(&named, "gfx90a", F32).contains(&"double_buffer"), "{:?}", names(&named, "gfx90a", F32));
        assert_eq!(named.options(&props("gfx90a")), named.options(&props("sm_90")));
    }

    #[test]
    fn a_rung_with_no_instance_keeps_one_row_and_a_shape_without_one_its_own() {
        let sweep = MatmulSweep::new(vec![Shape::square(256)], &[], true).with_f64(Vec::new(), &[]);
        // FP32 on NVIDIA: the DMMA rung's first shape says, once, that NVIDIA has no FP32 matrix path.
        let fp32 = names(&sweep, "sm_90", F32);
        assert_eq!(fp32.iter().filter(|n| n.starts_with("dmma")).collect::<Vec<_>>(), [&"dmma_128x128x16_t256"]);
        // FP64 on NVIDIA: every DMMA shape; the shapes of a rung without an FP64 instance keep their rows (each says
        // why); the atomic rung, which has none at all, keeps one.
        let fp64 = names(&sweep, "sm_90", F64);
        assert_eq!(fp64.iter().filter(|n| n.starts_with("dmma")).count(), 4);
        assert!(fp64.contains(&"double_buffer") && fp64.contains(&"splitk_128x64x16_t128"), "{fp64:?}");
        assert!(fp64.contains(&"splitk_atomic_64x128x16_t128"), "{fp64:?}");
        // FP64 on gfx90a: the FP64 shapes of CDNA's set, and one DMMA row saying AMD's matrix rung is MFMA.
        let cdna = names(&sweep, "gfx90a", F64);
        assert_eq!(cdna.iter().filter(|n| n.starts_with("dmma")).count(), 1, "{cdna:?}");
        for v in sweep.variants("gfx90a", F64).iter().filter(|v| !v.name.starts_with("dmma")) {
            assert_eq!(v.problem_on(F64, "gfx90a"), None, "{}: CDNA's FP64 set holds only kernels it runs", v.name);
        }
    }

    #[test]
    fn fp32_points_keep_their_keys_and_order_and_fp64_points_follow_with_theirs() {
        let shapes = vec![Shape::square(256), Shape::square(512)];
        let label = |(p, s, slot): (Precision, Shape, Slot)| {
            let name = match slot {
                Slot::Vendor => "vendor",
                Slot::Kernel(v) => v.name,
                Slot::Autotune => AUTOTUNE,
            };
            point_key(name, s, p)
        };
        let sweep = MatmulSweep::new(shapes.clone(), &["naive", "accumulator"], true).with_autotune(true);
        let keys: Vec<String> = sweep.slots("sm_90").into_iter().map(label).collect();
        assert_eq!(
            keys,
            [
                "vendor/m=256,n=256,k=256",
                "naive/m=256,n=256,k=256",
                "accumulator/m=256,n=256,k=256",
                "autotune/m=256,n=256,k=256",
                "vendor/m=512,n=512,k=512",
                "naive/m=512,n=512,k=512",
                "accumulator/m=512,n=512,k=512",
                "autotune/m=512,n=512,k=512",
            ]
        );
        // FP64 at one size with its own kernels: the FP32 points keep their indexes, FP64 keys end in /f64.
        let both = sweep.clone().with_f64(vec![Shape::square(1024)], &["naive", "dmma_128x64x16_t128"]);
        let keys64: Vec<String> = both.slots("sm_90").into_iter().map(label).collect();
        assert_eq!(keys64[..8], keys[..]);
        assert_eq!(
            keys64[8..],
            [
                "vendor/m=1024,n=1024,k=1024/f64",
                "naive/m=1024,n=1024,k=1024/f64",
                "dmma_128x64x16_t128/m=1024,n=1024,k=1024/f64",
                "autotune/m=1024,n=1024,k=1024/f64",
            ]
        );
        assert_eq!(both.clone().only_f64().slots("sm_90").len(), 4);
        let plain = MatmulSweep::new(shapes.clone(), &["naive"], false);
        assert_eq!(plain.slots("sm_90").len(), 2);
        assert!(!MatmulSweep::default().no_autotune && plain.no_autotune);
        assert_eq!(plain.clone().with_autotune(true).options(&props("sm_90"))["autotune"], true);
        // The full preset runs both precisions at every size; FP64's options say what it ran.
        let full = MatmulSweep::default();
        assert_eq!(full.precisions(), [F32, F64]);
        assert_eq!(full.sizes_for(F64), full.sizes_for(F32));
        let options = full.options(&props("sm_90"));
        assert_eq!(options["precisions"], serde_json::json!(["f32", "f64"]));
        assert!(options["f64"]["kernels"].to_string().contains("dmma_128x128x16_t256"), "{options}");
        assert_eq!(options["f64"]["reference"], "matmul_reference_dot2_f64");
    }

    #[test]
    fn the_quick_preset_adds_fp64_at_two_sizes_and_keeps_its_fp32_points() {
        let quick = MatmulSweep::quick();
        let slots = quick.slots("sm_90");
        let fp32: Vec<_> = slots.iter().filter(|s| s.0 == F32).collect();
        let fp64: Vec<_> = slots.iter().filter(|s| s.0 == F64).collect();
        // FP32: the four sizes with the vendor BLAS, 18 kernels (`double_buffer` names its family: 11 shapes) and the
        // autotune step, and the two matrix rungs, one row each per size that says why not here.
        assert_eq!(fp32.len(), 4 * 22);
        let matrix = |set: &[&(Precision, Shape, Slot)], p: Precision| -> Vec<String> {
            let rows = set.iter().filter_map(|s| match s.2 {
                Slot::Kernel(v) if v.family == "dmma" || v.family == "mfma" => v.problem_on(p, "sm_90"),
                _ => None,
            });
            rows.collect()
        };
        let why = matrix(&fp32, F32);
        assert_eq!(why.len(), 4 * 2, "{why:?}");
        assert!(why.iter().any(|w| w.contains("no FP32 matrix path")) && why.iter().any(|w| w.contains("CDNA2/3")));
        let sizes: std::collections::BTreeSet<usize> = fp64.iter().map(|s| s.1.n).collect();
        assert_eq!(sizes.into_iter().collect::<Vec<_>>(), [1024, 2048]);
        // FP64: every kernel but MFMA's row has an FP64 instance on sm_90, the DMMA rung in its four shapes.
        for (_, _, slot) in &fp64 {
            if let Slot::Kernel(v) = slot {
                assert_eq!(v.problem_on(F64, "sm_90").is_some(), v.family == "mfma", "{}", v.name);
            }
        }
        assert_eq!(fp64.iter().filter(|s| matches!(s.2, Slot::Kernel(v) if v.family == "dmma")).count(), 2 * 4);
    }

    #[test]
    fn the_command_line_checks_kernels_and_tiles_and_parses_sizes() {
        let parse = |args: &[&str]| {
            let cmd = (ENTRY.flags)(clap::Command::new("matmul"));
            let matches = cmd.try_get_matches_from(std::iter::once("matmul").chain(args.iter().copied()));
            matches.map_err(|e| e.to_string()).and_then(|m| (ENTRY.sweep)(&m).map_err(|e| e.to_string()))
        };
        let options = parse(&["--sizes", "512,2^10,100x200x300", "--no-vendor"]).unwrap().options(&props("sm_90"));
        assert_eq!(
            options["shapes"],
            serde_json::json!([{"m": 512, "n": 512, "k": 512}, {"m": 1024, "n": 1024, "k": 1024},
                {"m": 100, "n": 200, "k": 300}])
        );
        assert_eq!((options["vendor"].clone(), options["autotune"].clone()), (false.into(), true.into()));
        let options = parse(&["--precision", "f64", "--f64-sizes", "4096", "--f64-kernels", "dmma"])
            .unwrap()
            .options(&props("sm_90"));
        assert_eq!(options["precisions"], serde_json::json!(["f64"]));
        assert_eq!(options["f64"]["shapes"], serde_json::json!([{"m": 4096, "n": 4096, "k": 4096}]));
        assert_eq!(options["f64"]["kernels"].as_array().map(Vec::len), Some(4));
        for (args, message) in [
            (vec!["--kernels", "naive,fastest"], "--kernels: unknown kernel `fastest`; available: naive"),
            (vec!["--f64-kernels", "fastest"], "--f64-kernels: unknown kernel `fastest`"),
            (vec!["--tiles", "12"], "--tiles: no tiled kernel with M = 12"),
            (vec!["--sizes", "1024x512"], "--sizes: `1024x512` is neither N (square) nor MxNxK"),
            (vec!["--sizes", "0"], "--sizes: sizes must be at least 1"),
            (vec!["--sizes", "many"], "--sizes: `many` is not a size"),
            (vec!["--precision", "f16"], "`f16` is not a precision; use f32 or f64"),
        ] {
            let err = parse(&args).err().unwrap_or_else(|| panic!("{args:?} was accepted"));
            assert!(err.contains(message), "{args:?}: {err}");
        }
    }

    #[test]
    fn fp64_points_are_estimated_at_the_fp64_peak_of_their_unit() {
        // 4096³ on an H100 SXM at the vendor's share (0.5): FP32 SGEMM on the vector units (66.9), FP64 DGEMM on the
        // tensor cores (66.9), the FP64 vector kernels at 33.5.
        let ceilings = crate::peaks::ceilings(&props("sm_90"));
        let shape = Shape::square(4096);
        let seconds = |w: Work| launch_seconds(&w, &ceilings).0;
        let flops = matmul_flops(4096, 4096, 4096);
        let sgemm = seconds(point_work(shape, None, F32, Unit::Vector));
        let dgemm = seconds(point_work(shape, None, F64, Unit::Matrix));
        assert!((sgemm - flops / (66.9e12 * 0.5)).abs() / sgemm < 1e-9, "{sgemm}");
        assert!((dgemm - sgemm).abs() / sgemm < 1e-9);
        let vector = seconds(point_work(shape, Some("double_buffer_128x128x8_t256"), F64, Unit::Vector));
        assert!((vector - flops / (33.5e12 * 0.3)).abs() / vector < 1e-9, "{vector}");
        let dmma = seconds(point_work(shape, Some("dmma_128x128x16_t256"), F64, Unit::Matrix));
        assert!((dmma - flops / (66.9e12 * 0.5)).abs() / dmma < 1e-9, "{dmma}");
        // The Dot2 reference: 1% of the FP64 vector peak.
        let reference = seconds(reference_work(shape, F64));
        assert!((reference - flops / (33.5e12 * 0.01)).abs() / reference < 1e-9, "{reference}");
    }
}
