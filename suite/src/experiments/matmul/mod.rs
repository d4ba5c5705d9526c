//! Matmul: the seed's ladder (naive → accumulator → LDS tiles M = 4..32) up to register-blocked kernels, against
//! the vendor BLAS at every size (`kernels/matmul.hip`, FP32, row-major, C = A·B).
//!
//! Every point, the vendor BLAS's included, is verified at every element of C against a reference kernel that
//! accumulates in FP64 on the GPU (`matmul_reference_f64`), itself checked against the host's FP64 sums at sampled
//! elements, with the tolerance of [`verify::matmul_tolerance`]. GFLOP/s = 2·M·N·K / median time.
//!
//! Sizes: every kernel takes any M, N, K: out-of-range loads read zero and stores are guarded, and the kernels with
//! 16-byte accesses launch their `_unaligned` twins (guarded 4-byte accesses) where N or K is not a multiple of 4
//! ([`Variant::symbol_for`]). A size the kernels cannot index, launch or fit in memory is an `invalid` row that says
//! why ([`point_problem`]).
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
mod plots;
mod shape;

use std::collections::BTreeMap;
use std::path::Path;

use super::entry::{defaults, Entry, Sweep};
use super::estimate::{launch_seconds, LAUNCH_S};
use super::{Case, Error, Experiment, Metric, Point, Results, RunContext, Work};
use crate::device::{Platform, Props};
use crate::measure::matmul_flops;
use crate::options::Memory;
use crate::report::plot::LinePlot;
use cases::{device_plan, Inputs, KernelCase, VendorCase, REFERENCE_NAME};
use ladder::REFERENCE_SYMBOL;

pub use autotune::{autotune_candidates, autotune_pick, AUTOTUNE, AUTOTUNE_SPLITS};
pub use cases::{draw_inputs, multiply};
pub use compare::MatmulComparison;
pub use ladder::{
    default_kernels, default_names, point_problem, select_kernels, selected, split_k_for, ArchKernels, Multiples, Plan,
    Schedule, Variant, ARCH_DEFAULTS, MAX_SPLIT_K, VARIANTS,
};
pub use plots::plots;
pub use shape::{Shape, KERNEL_DIM_MAX};

/// The sweep: sizes × kernels, with the vendor BLAS and the autotune step at every size. Its fields are the flags of
/// `suite run matmul`.
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
    /// [`FULL_SIZES`]; the device's default kernels; the vendor BLAS; the autotune step.
    fn default() -> Self {
        defaults()
    }
}

impl Sweep for MatmulSweep {
    const NAME: &'static str = "matmul";
    const HELP: &'static str = "Matmul ladder (naive, accumulator, LDS tiles, register-blocked, split-K, stream-K) \
                                and an autotune step vs the vendor BLAS: GFLOP/s per size.";
    const RESULTS: &'static dyn Results = &MatmulResults;

    /// One rung of each step of the ladder, the vendor BLAS and the autotune step at four sizes, from one too small
    /// to fill the device with large tiles (512, where split-K matters) through one no tile divides (1000) to one
    /// where the register-blocked kernels reach their plateau.
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
        ];
        let sizes = [512, 1000, 2048, 4096].into_iter().map(Shape::square).collect();
        MatmulSweep::new(sizes, &kernels, true).with_autotune(true)
    }

    /// Kernel names and tile sizes must each select something (the message names the flag and lists what exists).
    fn check(self) -> Result<Self, Error> {
        select_kernels(&self.kernels, &self.tiles)?;
        Ok(self)
    }
}

/// `suite run matmul`.
pub const ENTRY: Entry = Entry::of::<MatmulSweep>();

impl MatmulSweep {
    /// A sweep of `sizes` × the kernels `kernels` names (kernel names or families, as `--kernels` takes them; the
    /// device's default set if empty), with the vendor BLAS rows if `vendor` and no autotune rows.
    pub fn new(sizes: Vec<Shape>, kernels: &[&str], vendor: bool) -> MatmulSweep {
        MatmulSweep { sizes, kernels: ladder::owned(kernels), no_vendor: !vendor, no_autotune: true, ..defaults() }
    }

    /// This sweep with (or without) an `autotune` row at every size.
    pub fn with_autotune(self, autotune: bool) -> MatmulSweep {
        MatmulSweep { no_autotune: !autotune, ..self }
    }

    /// The kernels the sweep runs on a device of architecture `arch`, in ladder order: those `--kernels` and
    /// `--tiles` select or, without `--kernels`, the default set of the architecture ([`ARCH_DEFAULTS`]).
    pub fn variants(&self, arch: &str) -> Vec<&'static Variant> {
        if self.kernels.is_empty() {
            selected(&ladder::owned(default_names(arch)), &self.tiles)
        } else {
            selected(&self.kernels, &self.tiles)
        }
    }

    /// The inputs for `shape`, made once per shape and kept in the run's shared slot until the sweep moves to the
    /// next one (the runner prepares points in order, and a shape's points are consecutive).
    fn inputs(&self, ctx: &RunContext, shape: Shape) -> Result<std::rc::Rc<Inputs>, Error> {
        ctx.shared(|i: &Inputs| i.shape == shape, || Inputs::new(ctx.gpu, shape))
    }

    /// Points per shape with `kernels` kernels: the vendor BLAS, the kernels, the autotune step.
    fn per_shape(&self, kernels: usize) -> usize {
        usize::from(!self.no_vendor) + kernels + usize::from(!self.no_autotune)
    }

    /// What point `index` measures with the kernels `kernels`, and at which shape: shapes in order, and at each shape
    /// the vendor BLAS first, then the kernels in ladder order, then the autotune step.
    fn point_kernel(&self, kernels: &[&'static Variant], index: usize) -> (Slot, Shape) {
        let per_shape = self.per_shape(kernels.len());
        let shape = self.sizes[index / per_shape];
        let slot = index % per_shape;
        let first_kernel = usize::from(!self.no_vendor);
        if slot < first_kernel {
            (Slot::Vendor, shape)
        } else if slot < first_kernel + kernels.len() {
            (Slot::Kernel(kernels[slot - first_kernel]), shape)
        } else {
            (Slot::Autotune, shape)
        }
    }
}

/// The vendor BLAS's name on a platform.
pub fn vendor_name(platform: Platform) -> &'static str {
    match platform {
        Platform::Amd => "rocblas",
        Platform::Nvidia => "cublas",
    }
}

/// One launch of `kernel` (the vendor BLAS for `None`) at `shape`, for the estimate: 2·M·N·K FLOP over A, B and C
/// once, at the share of the FP32 peak its rung reaches in the reference runs (rounded down: the estimate errs long).
fn point_work(shape: Shape, kernel: Option<&str>) -> Work {
    let share = match kernel {
        None => 0.5,
        Some("naive") => 0.005,
        Some("tiled_m4") => 0.02,
        Some("accumulator" | "tiled_m8") => 0.05,
        Some(k) if k.starts_with("tiled_") => 0.1,
        Some("blocktile_1d") => 0.15,
        Some("blocktile_2d") => 0.2,
        Some(_) => 0.3,
    };
    let (m, n, k) = (shape.m as f64, shape.n as f64, shape.k as f64);
    let bytes = 4.0 * (m * k + k * n + m * n);
    Work::kernel(matmul_flops(shape.m, shape.n, shape.k), bytes, share).at_least(LAUNCH_S)
}

/// The FP64 reference kernel at `shape` (16×16 tiles accumulating in FP64): credited with 2% of the FP32 peak.
fn reference_work(shape: Shape) -> Work {
    Work::kernel(matmul_flops(shape.m, shape.n, shape.k), 0.0, 0.02)
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
            family: |r| plots::kernel_family(r.get("kernel").map_or("", String::as_str)),
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
        ]
    }

    fn metric(&self) -> Metric {
        Metric { column: "gflops", formula: "GFLOP/s = 2*M*N*K / median time / 1e9" }
    }

    fn plots(&self, rows: &[BTreeMap<String, String>], _dir: &Path) -> Vec<(String, LinePlot)> {
        plots(rows)
    }

    /// Per size, the vendor BLAS and the best hand kernel with its share of the vendor's rate.
    fn headlines(&self, rows: &[BTreeMap<String, String>]) -> Vec<String> {
        headlines::headlines(rows)
    }
}

impl Experiment for MatmulSweep {
    fn results(&self) -> &'static dyn Results {
        Self::RESULTS
    }

    /// The kernels are those that run on `device` ([`MatmulSweep::variants`]): without `--kernels` they depend on
    /// its architecture, and the fingerprint must change when they do.
    fn options(&self, device: &Props) -> serde_json::Value {
        serde_json::json!({
            "shapes": self.sizes,
            "kernels": self.variants(device.arch.as_str()).iter().map(|v| v.name).collect::<Vec<_>>(),
            "vendor": !self.no_vendor,
            "autotune": !self.no_autotune,
            "autotune_splits": AUTOTUNE_SPLITS,
            "split_k": "largest S with tiles*S <= CUs * groups per CU, S <= 16, >= 4 slabs of K per range",
            "streamk_groups": "CUs * groups per CU, at most one per slab",
            "reference": REFERENCE_SYMBOL,
            "tolerance": "2*sqrt(K)*eps_f32, relative to max(max |C|, sqrt(K)), every element",
        })
    }

    fn sources(&self) -> &'static [&'static str] {
        &["matmul"]
    }

    fn points(&self, ctx: &RunContext) -> Vec<Point> {
        let (gpu, props) = (ctx.gpu, ctx.props());
        let vendor = vendor_name(props.platform);
        let blas = gpu.device.blas();
        let memory = Memory::of(props.memory_bytes);
        let ceilings = crate::peaks::ceilings(props);
        let max_group = props.max_group_size;
        let kernels = self.variants(props.arch.as_str());
        let per_shape = self.per_shape(kernels.len());
        (0..self.sizes.len() * per_shape)
            .map(|index| {
                let (slot, shape) = self.point_kernel(&kernels, index);
                let dims = [shape.m.to_string(), shape.n.to_string(), shape.k.to_string()];
                let row = |kernel: &str, tile_m: String, group: [String; 2], plan: Option<&Plan>| {
                    let [m, n, k] = dims.clone();
                    let [gx, gy] = group;
                    let (split_k, groups, symbol) = plan.map_or_else(Default::default, |p| {
                        (p.split_k.to_string(), p.groups().to_string(), p.symbol.clone())
                    });
                    vec![
                        kernel.into(),
                        tile_m,
                        m,
                        n,
                        k,
                        gx,
                        gy,
                        REFERENCE_NAME.into(),
                        split_k,
                        groups,
                        symbol,
                        String::new(),
                        // The device's FP32 ceilings beside every row: the hand kernels use the vector units, the
                        // vendor BLAS may use the matrix cores (AMD MFMA), and "% of vendor" compares the two.
                        format!("{}", ceilings.fp32_vector_tflops),
                        ceilings.fp32_matrix_tflops.map(|t| t.to_string()).unwrap_or_default(),
                    ]
                };
                let basic = point_problem(shape, None, max_group, &memory, 0);
                let mut work = match slot {
                    Slot::Vendor => point_work(shape, None),
                    Slot::Kernel(v) => point_work(shape, Some(v.name)),
                    // Every candidate is verified and timed: as many launches' worth as there are candidates.
                    Slot::Autotune => {
                        let candidates = autotune_candidates(props.arch.as_str(), shape, props.cu_count).len();
                        let one = point_work(shape, Some(AUTOTUNE));
                        Work { share_of_peak: one.share_of_peak / candidates.max(1) as f64, ..one }
                    }
                };
                if index % per_shape == 0 {
                    // The first point of a shape makes its inputs and runs the FP64 reference kernel.
                    work = work.with_setup(launch_seconds(&reference_work(shape), &ceilings).0);
                }
                match slot {
                    Slot::Vendor => Point {
                        invalid: basic.or_else(|| {
                            blas.as_ref()
                                .err()
                                .map(|e| format!("{e}; the kernels are still verified against the reference kernel"))
                        }),
                        index,
                        key: format!("{vendor}/{shape}"),
                        params: row(vendor, String::new(), Default::default(), None),
                        work,
                    },
                    Slot::Kernel(v) => {
                        let tile_m = v.tile_m.map(|m| m.to_string()).unwrap_or_default();
                        let group = [v.group[0].to_string(), v.group[1].to_string()];
                        // The plan needs a launchable size, and its workspace counts against the memory.
                        let plan = match point_problem(shape, Some(v), max_group, &memory, 0) {
                            Some(why) => Err(why),
                            None => device_plan(gpu, v, shape, None),
                        };
                        let invalid = match &plan {
                            Ok(p) => point_problem(shape, Some(v), max_group, &memory, p.workspace_bytes()),
                            Err(why) => Some(why.clone()),
                        };
                        Point {
                            index,
                            key: format!("{}/{shape}", v.name),
                            params: row(v.name, tile_m, group, plan.as_ref().ok()),
                            invalid,
                            work,
                        }
                    }
                    Slot::Autotune => Point {
                        invalid: basic,
                        index,
                        key: format!("{AUTOTUNE}/{shape}"),
                        // The pick's columns are filled in once the step has run (Case::resolved_params).
                        params: row(AUTOTUNE, String::new(), Default::default(), None),
                        work,
                    },
                }
            })
            .collect()
    }

    fn prepare<'g>(&self, ctx: &RunContext<'g>, point: &Point) -> Result<Box<dyn Case + 'g>, Error> {
        let gpu = ctx.gpu;
        let (slot, shape) = self.point_kernel(&self.variants(ctx.props().arch.as_str()), point.index);
        let inputs = self.inputs(ctx, shape)?;
        match slot {
            Slot::Vendor => Ok(Box::new(VendorCase::new(gpu, inputs)?)),
            Slot::Kernel(v) => {
                let plan = device_plan(gpu, v, shape, None).map_err(Error::Unsupported)?;
                Ok(Box::new(KernelCase::new(gpu, inputs, v, plan)?))
            }
            Slot::Autotune => Ok(Box::new(autotune::autotune(gpu, inputs)?)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(arch: &str) -> Props {
        Props { arch: crate::device::Arch::parse(arch).unwrap(), ..crate::occupancy_calculator::tests::h100() }
    }

    #[test]
    fn the_sweep_takes_the_devices_defaults_only_without_kernels() {
        let names = |s: &MatmulSweep, arch: &str| s.variants(arch).iter().map(|v| v.name).collect::<Vec<_>>();
        let shapes = vec![Shape::square(256)];
        let by_arch = MatmulSweep::new(shapes.clone(), &[], true);
        let want: Vec<&str> = default_kernels("gfx90a", &[]).unwrap().iter().map(|v| v.name).collect();
        assert_eq!(names(&by_arch, "gfx90a"), want);
        assert!(by_arch.options(&props("gfx90a"))["kernels"].to_string().contains("double_buffer_256x128x8_t512"));
        // The options say which kernels ran, so another device's set is another fingerprint.
        let sm90: Vec<&str> = default_kernels("sm_90", &[]).unwrap().iter().map(|v| v.name).collect();
        assert_ne!(want, sm90);
        assert_eq!(by_arch.options(&props("sm_90"))["kernels"], serde_json::json!(sm90));
        // --tiles still applies to the device's set.
        let tiled = MatmulSweep { tiles: vec![16], ..MatmulSweep::new(shapes.clone(), &[], true) };
        let want: Vec<&str> = default_kernels("gfx90a", &[16]).unwrap().iter().map(|v| v.name).collect();
        assert_eq!(names(&tiled, "gfx90a"), want);
        // Kernels named on the command line are kept on any device.
        let named = MatmulSweep::new(shapes, &["double_buffer"], true);
        assert!(names(&named, "gfx90a").contains(&"double_buffer"), "{:?}", names(&named, "gfx90a"));
        assert_eq!(named.options(&props("gfx90a")), named.options(&props("sm_90")));
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
        for (args, message) in [
            (vec!["--kernels", "naive,fastest"], "--kernels: unknown kernel `fastest`; available: naive"),
            (vec!["--tiles", "12"], "--tiles: no tiled kernel with M = 12"),
            (vec!["--sizes", "1024x512"], "--sizes: `1024x512` is neither N (square) nor MxNxK"),
            (vec!["--sizes", "0"], "--sizes: sizes must be at least 1"),
            (vec!["--sizes", "many"], "--sizes: `many` is not a size"),
        ] {
            let err = parse(&args).err().unwrap_or_else(|| panic!("{args:?} was accepted"));
            assert!(err.contains(message), "{args:?}: {err}");
        }
    }

    #[test]
    fn points_follow_shape_then_vendor_then_ladder_then_autotune() {
        let shapes = vec![Shape::square(256), Shape::square(512)];
        let name = |slot: Slot| match slot {
            Slot::Vendor => "vendor",
            Slot::Kernel(v) => v.name,
            Slot::Autotune => AUTOTUNE,
        };
        let order = |sweep: &MatmulSweep| -> Vec<(&str, usize)> {
            let kernels = sweep.variants("sm_90");
            (0..shapes.len() * sweep.per_shape(kernels.len()))
                .map(|i| sweep.point_kernel(&kernels, i))
                .map(|(v, s)| (name(v), s.n))
                .collect()
        };
        let sweep = MatmulSweep::new(shapes.clone(), &["naive", "accumulator"], true).with_autotune(true);
        assert_eq!(
            order(&sweep),
            [
                ("vendor", 256),
                ("naive", 256),
                ("accumulator", 256),
                (AUTOTUNE, 256),
                ("vendor", 512),
                ("naive", 512),
                ("accumulator", 512),
                (AUTOTUNE, 512),
            ]
        );
        let plain = MatmulSweep::new(shapes.clone(), &["naive"], false);
        assert_eq!(order(&plain), [("naive", 256), ("naive", 512)]);
        assert!(!MatmulSweep::default().no_autotune && plain.no_autotune);
        assert_eq!(plain.clone().with_autotune(true).options(&props("sm_90"))["autotune"], true);
    }
}
