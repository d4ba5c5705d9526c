//! Matmul: the seed's ladder (naive → accumulator → LDS tiles M = 4..32) up to register-blocked kernels, against
//! the vendor BLAS at every size (`kernels/matmul.hip`, FP32, row-major, C = A·B).
//!
//! Every point, the vendor BLAS's included, is verified at every element of C against a reference kernel that
//! accumulates in FP64 on the GPU (`matmul_reference_f64`), itself checked against the host's FP64 sums at sampled
//! elements, with the tolerance of [`verify::matmul_tolerance`]. GFLOP/s = 2·M·N·K / median time.
//!
//! Sizes: the ladder's first rungs (naive, accumulator, tiled) take any M, N, K: out-of-range loads read zero and
//! stores are guarded. The register-blocked kernels state what they need in [`VARIANTS`] (typically N and K
//! multiples of 4, for 16-byte loads); other sizes are `invalid` rows that say why.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::rc::Rc;

use serde::Serialize;

use super::estimate::{launch_seconds, LAUNCH_S};
use super::{Case, Error, Experiment, Metric, Point, Work};
use crate::device::{Arg, Buffer, Kernel, LaunchConfig, Platform};
use crate::gpu::Gpu;
use crate::measure::matmul_flops;
use crate::options::{Memory, MAX_GROUPS_X, MAX_GROUPS_YZ};
use crate::report::plot::{Axis, LinePlot, Series, SeriesKind};
use crate::verify::{self, Verification};

/// What a kernel needs of the sizes: each of M, N, K must be a multiple of the given number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Multiples {
    /// Rows of A and C.
    pub m: u32,
    /// Columns of B and C.
    pub n: u32,
    /// Columns of A, rows of B.
    pub k: u32,
}

/// Any size.
const ANY: Multiples = Multiples { m: 1, n: 1, k: 1 };

/// One matmul kernel: its symbol, launch geometry and size requirements. CLI values, CSV rows, plots and tests all
/// come from this table; the order is the ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Variant {
    /// Name on the command line and in the CSV, e.g. `tiled_m16`.
    pub name: &'static str,
    /// Family, for `--kernels`: `tiled` selects every `tiled_m*` allowed by `--tiles`.
    pub family: &'static str,
    /// Kernel symbol in `kernels/matmul.hip`.
    pub symbol: &'static str,
    /// LDS tile size M of the seed's tiled kernel, where it has one.
    pub tile_m: Option<u32>,
    /// Items per group along x (columns of C) and y (rows of C).
    pub group: [u32; 2],
    /// Elements of C one group computes: columns (BN) and rows (BM).
    pub block: [u32; 2],
    /// Whether C must be zero before the launch (the naive kernel accumulates into it).
    pub zero_c: bool,
    /// Size requirements.
    pub multiples: Multiples,
}

impl Variant {
    /// Launch geometry for an M×N result: groups tile C, `x` along columns and `y` along rows.
    pub fn launch_config(&self, shape: Shape) -> Option<LaunchConfig> {
        let gx = u32::try_from(shape.n.div_ceil(self.block[0] as usize)).ok()?;
        let gy = u32::try_from(shape.m.div_ceil(self.block[1] as usize)).ok()?;
        Some(LaunchConfig { grid: [gx, gy, 1], group: [self.group[0], self.group[1], 1], dynamic_lds_bytes: 0 })
    }

    /// Why this kernel cannot compute `shape`, if it cannot.
    pub fn check(&self, shape: Shape) -> Option<String> {
        let req = self.multiples;
        let bad: Vec<String> = [("M", shape.m, req.m), ("N", shape.n, req.n), ("K", shape.k, req.k)]
            .iter()
            .filter(|(_, size, multiple)| size % (*multiple as usize) != 0)
            .map(|(dim, size, multiple)| format!("{dim} = {size} is not a multiple of {multiple}"))
            .collect();
        if bad.is_empty() {
            None
        } else {
            Some(format!("{} needs {}: {}", self.name, req_text(req), bad.join(", ")))
        }
    }
}

fn req_text(r: Multiples) -> String {
    format!("M % {} = 0, N % {} = 0, K % {} = 0", r.m, r.n, r.k)
}

/// The ladder, in order.
pub const VARIANTS: &[Variant] = &[
    Variant {
        name: "naive",
        family: "naive",
        symbol: "matmul_naive",
        tile_m: None,
        group: [16, 16],
        block: [16, 16],
        zero_c: true,
        multiples: ANY,
    },
    Variant {
        name: "accumulator",
        family: "accumulator",
        symbol: "matmul_accumulator",
        tile_m: None,
        group: [16, 16],
        block: [16, 16],
        zero_c: false,
        multiples: ANY,
    },
    tiled("tiled_m4", "matmul_tiled_m4", 4),
    tiled("tiled_m8", "matmul_tiled_m8", 8),
    tiled("tiled_m16", "matmul_tiled_m16", 16),
    tiled("tiled_m32", "matmul_tiled_m32", 32),
    regblock("blocktile_1d", "blocktile_1d", "matmul_blocktile_1d", 512, [64, 64], ANY),
    regblock("blocktile_2d", "blocktile_2d", "matmul_blocktile_2d", 256, [128, 128], ANY),
    regblock("vectorized", "vectorized", "matmul_vectorized", 256, [128, 128], ALIGNED_ROWS),
    regblock("warptile", "warptile", "matmul_warptile", 256, [128, 128], ALIGNED_ROWS),
    // The double-buffered kernel in the shape that was fastest on the H100 (BM = 256, BN = 128, BK = 8), then the
    // other shapes of the autotuning sweep: the best shape differs between architectures.
    regblock("double_buffer", "double_buffer", "matmul_double_buffer", 256, [128, 256], ALIGNED_ROWS),
    regblock(
        "double_buffer_128x256x8_t256",
        "double_buffer",
        "matmul_double_buffer_128x256x8_t256",
        256,
        [256, 128],
        ALIGNED_ROWS,
    ),
    regblock(
        "double_buffer_128x128x8_t256",
        "double_buffer",
        "matmul_double_buffer_128x128x8_t256",
        256,
        [128, 128],
        ALIGNED_ROWS,
    ),
    regblock(
        "double_buffer_128x128x16_t256",
        "double_buffer",
        "matmul_double_buffer_128x128x16_t256",
        256,
        [128, 128],
        ALIGNED_ROWS,
    ),
    regblock(
        "double_buffer_64x128x16_t128",
        "double_buffer",
        "matmul_double_buffer_64x128x16_t128",
        128,
        [128, 64],
        ALIGNED_ROWS,
    ),
    // Wave64 shapes: at most 128 VGPRs+AGPRs and no scratch on gfx90a (4 waves per SIMD), LDS for 16 waves per CU.
    regblock(
        "double_buffer_256x128x8_t512",
        "double_buffer",
        "matmul_double_buffer_256x128x8_t512",
        512,
        [128, 256],
        ALIGNED_ROWS,
    ),
    regblock(
        "double_buffer_128x128x8_t512",
        "double_buffer",
        "matmul_double_buffer_128x128x8_t512",
        512,
        [128, 128],
        ALIGNED_ROWS,
    ),
];

/// The default kernel set of the architectures whose names start with one of `arch_prefixes` (first match in
/// [`ARCH_DEFAULTS`] wins), when `--kernels` is not given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ArchKernels {
    /// Prefixes of the architecture name, e.g. `gfx90` matches gfx908 and gfx90a.
    pub arch_prefixes: &'static [&'static str],
    /// Kernel names or families, as `--kernels` takes them.
    pub kernels: &'static [&'static str],
    /// Why this set, for the README and `run.json`.
    pub why: &'static str,
}

/// The seed's ladder and the single-shape register-blocked kernels: every architecture runs them.
macro_rules! ladder {
    ($($more:literal),* $(,)?) => {
        &["naive", "accumulator", "tiled", "blocktile_1d", "blocktile_2d", "vectorized", "warptile", $($more),*]
    };
}

/// Per-architecture default kernels, as data. Architectures no row matches get the whole table.
pub const ARCH_DEFAULTS: &[ArchKernels] = &[
    ArchKernels {
        arch_prefixes: &["gfx90", "gfx94", "gfx95"],
        kernels: ladder!["double_buffer_256x128x8_t512", "double_buffer_128x128x8_t512"],
        why: "CDNA (wave64, 512 VGPRs+AGPRs per lane per SIMD): the double_buffer shapes tuned on NVIDIA take \
              236-396 registers there (1-2 waves per SIMD); the wave64 shapes stay within 128 (4+ waves per SIMD)",
    },
    ArchKernels {
        arch_prefixes: &["sm_"],
        kernels: ladder!["double_buffer"],
        why: "NVIDIA (warp32, 255 registers per thread): every double_buffer shape of the autotuning sweep",
    },
];

/// The default kernels for `arch` (see [`ARCH_DEFAULTS`]), restricted to the tile sizes `tiles` (all if empty).
pub fn default_kernels(arch: &str, tiles: &[u32]) -> Result<Vec<&'static Variant>, crate::options::Error> {
    match ARCH_DEFAULTS.iter().find(|d| d.arch_prefixes.iter().any(|p| arch.starts_with(p))) {
        Some(d) => select_kernels(&d.kernels.iter().map(|k| k.to_string()).collect::<Vec<_>>(), tiles),
        None => select_kernels(&[], tiles),
    }
}

/// 16-byte loads of rows of A and B: N and K multiples of 4 (so every row starts 16-byte aligned); M is free.
const ALIGNED_ROWS: Multiples = Multiples { m: 1, n: 4, k: 4 };

/// A register-blocked kernel: a 1-D group of `items` computing a `block` = [BN, BM] tile of C.
const fn regblock(
    name: &'static str,
    family: &'static str,
    symbol: &'static str,
    items: u32,
    block: [u32; 2],
    multiples: Multiples,
) -> Variant {
    Variant { name, family, symbol, tile_m: None, group: [items, 1], block, zero_c: false, multiples }
}

const fn tiled(name: &'static str, symbol: &'static str, m: u32) -> Variant {
    Variant {
        name,
        family: "tiled",
        symbol,
        tile_m: Some(m),
        group: [m, m],
        block: [m, m],
        zero_c: false,
        multiples: ANY,
    }
}

/// A problem size: A is m×k, B is k×n, C is m×n.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Shape {
    /// Rows of A and C.
    pub m: usize,
    /// Columns of B and C.
    pub n: usize,
    /// Columns of A, rows of B.
    pub k: usize,
}

impl Shape {
    /// The square size N×N×N.
    pub fn square(n: usize) -> Shape {
        Shape { m: n, n, k: n }
    }

    /// Whether M = N = K.
    pub fn is_square(&self) -> bool {
        self.m == self.n && self.n == self.k
    }

    /// Parses `1024` (square) or `MxNxK`, e.g. `4096x1024x512`.
    pub fn parse(text: &str) -> Result<Shape, crate::options::Error> {
        let parts: Vec<&str> = text.trim().split('x').collect();
        let size = |t: &str| crate::options::parse_size("--sizes", t);
        match parts.as_slice() {
            [n] => Ok(Shape::square(size(n)?)),
            [m, n, k] => Ok(Shape { m: size(m)?, n: size(n)?, k: size(k)? }),
            _ => Err(crate::options::Error {
                flag: "--sizes",
                problem: format!("`{text}` is neither N (square) nor MxNxK"),
            }),
        }
    }

    /// Bytes a point needs, on the device (A, B, the kernel's C and the reference C) and equally on the host (the
    /// inputs as generated, the reference and the kernel's result downloaded); `None` if the count overflows.
    pub fn bytes(&self) -> Option<u64> {
        let (m, n, k) = (self.m as u64, self.n as u64, self.k as u64);
        let size = std::mem::size_of::<f32>() as u64;
        let mn = m.checked_mul(n)?;
        crate::options::bytes_of(&[m.checked_mul(k)?, k.checked_mul(n)?, mn, mn], size)
    }

    /// Why this shape cannot run on a device with `memory` and groups of at most `max_group_size` items: sizes the
    /// kernels cannot index or launch, byte counts that overflow, memory that is not there, and (for a kernel,
    /// `variant`) the kernel's own size requirements. `None`: the point is valid. Needs no GPU.
    pub fn problem(&self, variant: Option<&Variant>, max_group_size: u32, memory: &Memory) -> Option<String> {
        let dims = [("M", self.m), ("N", self.n), ("K", self.k)];
        if let Some((dim, _)) = dims.iter().find(|(_, size)| *size == 0) {
            return Some(format!("{dim} = 0: every size must be at least 1"));
        }
        if let Some((dim, size)) = dims.iter().find(|(_, size)| *size > KERNEL_DIM_MAX) {
            return Some(format!(
                "{dim} = {size} exceeds what the kernels index with 32-bit ints (at most {KERNEL_DIM_MAX})"
            ));
        }
        // The reference kernel runs at every shape; a kernel point also launches its own grid.
        let reference = (REFERENCE_SYMBOL, [REFERENCE_TILE, REFERENCE_TILE]);
        for (name, block) in std::iter::once(reference).chain(variant.map(|v| (v.symbol, v.block))) {
            let (gx, gy) = (self.n.div_ceil(block[0] as usize) as u64, self.m.div_ceil(block[1] as usize) as u64);
            if gx > MAX_GROUPS_X || gy > MAX_GROUPS_YZ {
                return Some(format!(
                    "{name} needs a grid of {gx} x {gy} groups; a grid holds at most {MAX_GROUPS_X} x {MAX_GROUPS_YZ}"
                ));
            }
        }
        if let Some(why) = memory.problem(self.bytes(), self.bytes()) {
            return Some(format!("{self}: {why}"));
        }
        let v = variant?;
        if let Some(why) = v.check(*self) {
            return Some(why);
        }
        let items = v.group[0] * v.group[1];
        (items > max_group_size)
            .then(|| format!("{} uses groups of {items} items; the device allows {max_group_size}", v.name))
    }
}

/// Largest M, N or K the kernels take: they are `int` arguments, and a tile's indices run up to one block (at most
/// 256) past the size before they are compared with it, so that must fit an int too.
pub const KERNEL_DIM_MAX: usize = i32::MAX as usize - 256;

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "m={},n={},k={}", self.m, self.n, self.k)
    }
}

/// The sweep: sizes × kernels, with the vendor BLAS at every size. Each field but `inputs` is one flag of
/// `suite run matmul`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MatmulSweep {
    /// Problem sizes, in order.
    pub shapes: Vec<Shape>,
    /// Kernels, in ladder order.
    pub kernels: Vec<&'static Variant>,
    /// Whether to run the vendor BLAS at every size.
    pub vendor: bool,
    /// `Some(tiles)`: `kernels` is replaced by the device's [`default_kernels`] (within these tile sizes) once the
    /// device is known ([`Experiment::fit_to_device`]).
    pub arch_defaults: Option<Vec<u32>>,
    /// The current shape's inputs, shared by the points of that shape (the runner prepares them in order).
    #[serde(skip)]
    inputs: super::RunCache<Inputs>,
}

impl Default for MatmulSweep {
    /// 256 to 8192, doubling; every kernel of the ladder; the vendor BLAS.
    fn default() -> Self {
        MatmulSweep::new((8..=13).map(|p| Shape::square(1 << p)).collect(), VARIANTS.iter().collect(), true)
    }
}

/// Selects kernels by name or family (`tiled` = every tile size in `tiles`), in ladder order.
pub fn select_kernels(names: &[String], tiles: &[u32]) -> Result<Vec<&'static Variant>, crate::options::Error> {
    for t in tiles {
        if !VARIANTS.iter().any(|v| v.tile_m == Some(*t)) {
            let have: Vec<String> = VARIANTS.iter().filter_map(|v| v.tile_m).map(|m| m.to_string()).collect();
            return Err(crate::options::Error {
                flag: "--tiles",
                problem: format!(
                    "no tiled kernel with M = {t} (M x M items per group); available: {}",
                    have.join(", ")
                ),
            });
        }
    }
    let tile_ok = |v: &Variant| v.tile_m.is_none_or(|m| tiles.is_empty() || tiles.contains(&m));
    if names.is_empty() {
        return Ok(VARIANTS.iter().filter(|v| tile_ok(v)).collect());
    }
    for name in names {
        if !VARIANTS.iter().any(|v| v.name == name || v.family == name) {
            let mut known: Vec<&str> = VARIANTS.iter().map(|v| v.name).collect();
            known.extend(VARIANTS.iter().map(|v| v.family).filter(|f| !known.contains(f)).collect::<Vec<_>>());
            return Err(crate::options::Error {
                flag: "--kernels",
                problem: format!("unknown kernel `{name}`; available: {}", known.join(", ")),
            });
        }
    }
    Ok(VARIANTS.iter().filter(|v| names.iter().any(|n| n == v.name || (n == v.family && tile_ok(v)))).collect())
}

/// The vendor BLAS's name on a platform.
pub fn vendor_name(platform: Platform) -> &'static str {
    match platform {
        Platform::Amd => "rocblas",
        Platform::Nvidia => "cublas",
    }
}

/// Elements of the GPU reference checked against the host's own FP64 sums.
const HOST_SAMPLES: usize = 4096;

/// The reference kernel (`kernels/matmul.hip`): FP64 accumulation in 16×16 tiles.
const REFERENCE_SYMBOL: &str = "matmul_reference_f64";

/// The `reference` column: what every point is checked against.
const REFERENCE_NAME: &str = "gpu_f64";

/// Rows and columns of C one group of the reference kernel computes.
const REFERENCE_TILE: u32 = 16;

/// Inputs as the experiment draws them: uniform in [−1, 1), fresh for every shape so no kernel can pass by
/// matching one fixed pattern ([`verify::matmul_tolerance`] is derived for this distribution). An allocation the
/// host cannot make is an error, not an abort.
pub fn draw_inputs(rng: &mut fastrand::Rng, len: usize) -> Result<Vec<f32>, Error> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| Error::Unsupported(format!("cannot allocate {len} floats of input on the host")))?;
    v.extend((0..len).map(|_| rng.f32() * 2.0 - 1.0));
    Ok(v)
}

/// Inputs and the reference result for one shape, shared by every point of that shape.
struct Inputs {
    shape: Shape,
    a: Buffer<f32>,
    b: Buffer<f32>,
    /// C computed by the FP64 reference kernel (checked on the host at sampled elements), on the host.
    reference: Vec<f32>,
}

impl Inputs {
    /// Draws the inputs, runs the reference kernel and checks it against the host at [`HOST_SAMPLES`] elements.
    fn new(gpu: &Gpu, shape: Shape) -> Result<Inputs, Error> {
        let dev = gpu.device.as_ref();
        let (free, total) = dev.memory_info()?;
        let bytes = shape.bytes().unwrap_or(u64::MAX);
        if bytes > free {
            return Err(Error::Device(crate::device::Error::OutOfMemory { requested: bytes, free, total }));
        }
        let mut rng = fastrand::Rng::new();
        let host_a = draw_inputs(&mut rng, shape.m * shape.k)?;
        let host_b = draw_inputs(&mut rng, shape.k * shape.n)?;
        let a = dev.upload(&host_a)?;
        let b = dev.upload(&host_b)?;
        let c = dev.alloc_buffer::<f32>(shape.m * shape.n)?;
        dev.fill_bytes(c.raw(), 0xff)?;
        let kernel = gpu.kernel("matmul", REFERENCE_SYMBOL)?;
        let grid = |size: usize| u32::try_from(size.div_ceil(REFERENCE_TILE as usize));
        let (Ok(gx), Ok(gy)) = (grid(shape.n), grid(shape.m)) else {
            return Err(Error::Unsupported(format!("{shape} needs too many groups for the reference kernel")));
        };
        let config =
            LaunchConfig { grid: [gx, gy, 1], group: [REFERENCE_TILE, REFERENCE_TILE, 1], dynamic_lds_bytes: 0 };
        dev.launch(&kernel, &config, &[a.arg(), b.arg(), c.arg(), dims(shape)?[0], dims(shape)?[1], dims(shape)?[2]])?;
        dev.synchronize()?;
        let reference = dev.download(&c)?;
        drop(c);
        // The reference at sampled elements against the host's FP64 sums.
        let (mut got, mut want) = (Vec::new(), Vec::new());
        for _ in 0..HOST_SAMPLES.min(shape.m * shape.n) {
            let (i, j) = (rng.usize(..shape.m), rng.usize(..shape.n));
            let dot: f64 =
                (0..shape.k).map(|p| f64::from(host_a[i * shape.k + p]) * f64::from(host_b[p * shape.n + j])).sum();
            got.push(reference[i * shape.n + j]);
            want.push(dot);
        }
        let check = verify::check_matmul(&got, &want, shape.k);
        if !check.passed() {
            return Err(Error::Unsupported(format!(
                "the reference kernel {REFERENCE_SYMBOL} does not match the host at {shape}, so nothing can be checked \
                 against it: {}",
                check.summary()
            )));
        }
        Ok(Inputs { shape, a, b, reference })
    }
}

/// M, N and K as the kernels' `int` arguments.
fn dims(shape: Shape) -> Result<[Arg; 3], Error> {
    let int = |x: usize| {
        i32::try_from(x)
            .map(Arg::I32)
            .map_err(|_| Error::Unsupported(format!("{shape} exceeds the kernels' int sizes")))
    };
    Ok([int(shape.m)?, int(shape.n)?, int(shape.k)?])
}

impl MatmulSweep {
    /// A sweep of `shapes` × `kernels`, with the vendor BLAS rows if `vendor`.
    pub fn new(shapes: Vec<Shape>, kernels: Vec<&'static Variant>, vendor: bool) -> MatmulSweep {
        MatmulSweep { shapes, kernels, vendor, arch_defaults: None, inputs: super::RunCache::default() }
    }

    /// This sweep with its kernels chosen by the device's architecture ([`ARCH_DEFAULTS`]) once it is known, within
    /// the tile sizes `tiles` (all if empty).
    pub fn with_arch_defaults(self, tiles: Vec<u32>) -> MatmulSweep {
        MatmulSweep { arch_defaults: Some(tiles), ..self }
    }

    /// The inputs for `shape`, made once per shape and kept until the sweep moves to the next one.
    fn inputs(&self, gpu: &Gpu, shape: Shape) -> Result<Rc<Inputs>, Error> {
        self.inputs.get_or_make(|i| i.shape == shape, || Inputs::new(gpu, shape))
    }
}

/// The kernel (`None`: the vendor BLAS) and shape of point `index`: shapes in order, and at each shape the vendor
/// BLAS first, then the kernels in ladder order.
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

fn point_kernel(sweep: &MatmulSweep, index: usize) -> (Option<&'static Variant>, Shape) {
    let per_shape = sweep.kernels.len() + usize::from(sweep.vendor);
    let shape = sweep.shapes[index / per_shape];
    let slot = index % per_shape;
    if sweep.vendor && slot == 0 {
        (None, shape)
    } else {
        (Some(sweep.kernels[slot - usize::from(sweep.vendor)]), shape)
    }
}

impl Experiment for MatmulSweep {
    fn comparison(&self) -> Box<dyn crate::report::compare::Comparison> {
        Box::new(crate::report::compare::MatmulComparison)
    }

    fn name(&self) -> &'static str {
        "matmul"
    }

    fn param_columns(&self) -> &'static [&'static str] {
        &["kernel", "tile_m", "m", "n", "k", "group_x", "group_y", "reference"]
    }

    fn metric(&self) -> Metric {
        Metric { column: "gflops", formula: "GFLOP/s = 2*M*N*K / median time / 1e9" }
    }

    fn options(&self) -> serde_json::Value {
        serde_json::json!({
            "shapes": self.shapes,
            "kernels": self.kernels.iter().map(|v| v.name).collect::<Vec<_>>(),
            "vendor": self.vendor,
            "reference": REFERENCE_SYMBOL,
            "tolerance": "2*sqrt(K)*eps_f32, relative to max(max |C|, sqrt(K)), every element",
        })
    }

    fn sources(&self) -> &'static [&'static str] {
        &["matmul"]
    }

    fn points(&self, gpu: &Gpu) -> Vec<Point> {
        let props = gpu.device.props();
        let vendor = vendor_name(props.platform);
        let blas = gpu.device.blas();
        let per_shape = self.kernels.len() + usize::from(self.vendor);
        let memory = Memory::of(props.memory_bytes);
        let ceilings = crate::peaks::ceilings(props);
        (0..self.shapes.len() * per_shape)
            .map(|index| {
                let (variant, shape) = point_kernel(self, index);
                let size_problem = shape.problem(variant, props.max_group_size, &memory);
                let mut work = point_work(shape, variant.map(|v| v.name));
                if index % per_shape == 0 {
                    // The first point of a shape makes its inputs and runs the FP64 reference kernel.
                    work = work.with_setup(launch_seconds(&reference_work(shape), &ceilings).0);
                }
                match variant {
                    None => Point {
                        invalid: size_problem.or_else(|| {
                            blas.as_ref()
                                .err()
                                .map(|e| format!("{e}; the kernels are still verified against the reference kernel"))
                        }),
                        index,
                        key: format!("{vendor}/{shape}"),
                        params: vec![
                            vendor.into(),
                            String::new(),
                            shape.m.to_string(),
                            shape.n.to_string(),
                            shape.k.to_string(),
                            String::new(),
                            String::new(),
                            REFERENCE_NAME.into(),
                        ],
                        work,
                    },
                    Some(v) => Point {
                        index,
                        key: format!("{}/{shape}", v.name),
                        params: vec![
                            v.name.into(),
                            v.tile_m.map(|m| m.to_string()).unwrap_or_default(),
                            shape.m.to_string(),
                            shape.n.to_string(),
                            shape.k.to_string(),
                            v.group[0].to_string(),
                            v.group[1].to_string(),
                            REFERENCE_NAME.into(),
                        ],
                        invalid: size_problem,
                        work,
                    },
                }
            })
            .collect()
    }

    fn prepare<'g>(&self, gpu: &'g Gpu, point: &Point) -> Result<Box<dyn Case + 'g>, Error> {
        let (variant, shape) = point_kernel(self, point.index);
        let inputs = self.inputs(gpu, shape)?;
        let dev = gpu.device.as_ref();
        let c = dev.alloc_buffer::<f32>(shape.m * shape.n)?;
        match variant {
            None => {
                dev.fill_bytes(c.raw(), 0xff)?;
                Ok(Box::new(VendorCase { gpu, inputs, c }))
            }
            Some(v) => {
                let kernel = gpu.kernel("matmul", v.symbol)?;
                let config = v
                    .launch_config(shape)
                    .ok_or_else(|| Error::Unsupported(format!("{shape} needs too many groups")))?;
                // All-ones bytes are NaN: an element the kernel does not write fails. The naive kernel adds into C,
                // so it starts from zero instead.
                dev.fill_bytes(c.raw(), if v.zero_c { 0 } else { 0xff })?;
                let dims = dims(shape)?;
                Ok(Box::new(KernelCase { gpu, inputs, c, kernel, config, dims }))
            }
        }
    }

    fn plots(&self, rows: &[BTreeMap<String, String>], _dir: &Path) -> Vec<(String, LinePlot)> {
        plots(rows)
    }

    /// Per size, the vendor BLAS and the best hand kernel with its share of the vendor's rate.
    fn headlines(&self, rows: &[BTreeMap<String, String>]) -> Vec<String> {
        headlines(rows)
    }

    fn fit_to_device(&mut self, props: &crate::device::Props) {
        if let Some(tiles) = self.arch_defaults.take() {
            // The tiles were checked when the sweep was made (select_kernels), so this cannot fail; keep the
            // sweep's kernels if it somehow does rather than run nothing.
            if let Ok(kernels) = default_kernels(props.arch.as_str(), &tiles) {
                self.kernels = kernels;
            }
        }
    }
}

/// The lines of [`Experiment::headlines`]: for each size (M×N×K, in the CSV's order), the vendor BLAS's GFLOP/s
/// and the fastest hand kernel's, with their ratio.
fn headlines(rows: &[BTreeMap<String, String>]) -> Vec<String> {
    let mut sizes: Vec<String> = Vec::new();
    let mut vendor: BTreeMap<String, f64> = BTreeMap::new();
    let mut best: BTreeMap<String, (f64, String)> = BTreeMap::new();
    for r in super::ok_rows(rows) {
        let (Some(m), Some(n), Some(k), Some(gflops)) = (r.get("m"), r.get("n"), r.get("k"), super::num(r, "gflops"))
        else {
            continue;
        };
        let size = if m == n && n == k { m.clone() } else { format!("{m}x{n}x{k}") };
        if !sizes.contains(&size) {
            sizes.push(size.clone());
        }
        let kernel = r.get("kernel").cloned().unwrap_or_default();
        if [Platform::Amd, Platform::Nvidia].iter().any(|p| vendor_name(*p) == kernel) {
            vendor.insert(size, gflops);
        } else if best.get(&size).is_none_or(|(g, _)| gflops > *g) {
            best.insert(size, (gflops, kernel));
        }
    }
    sizes
        .iter()
        .filter_map(|size| {
            let (gflops, kernel) = best.get(size)?;
            Some(match vendor.get(size) {
                Some(v) => format!(
                    "{size}: best kernel {kernel} {gflops:.0} GFLOP/s = {:.2} of the vendor BLAS ({v:.0} GFLOP/s)",
                    gflops / v
                ),
                None => format!("{size}: best kernel {kernel} {gflops:.0} GFLOP/s (no vendor BLAS row)"),
            })
        })
        .collect()
}

/// The vendor BLAS at one shape, checked at every element against the reference.
struct VendorCase<'g> {
    gpu: &'g Gpu,
    inputs: Rc<Inputs>,
    c: Buffer<f32>,
}

impl Case for VendorCase<'_> {
    fn launch(&mut self) -> crate::device::Result<()> {
        let s = self.inputs.shape;
        self.gpu.device.sgemm(s.m, s.n, s.k, self.inputs.a.raw(), self.inputs.b.raw(), self.c.raw())
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        let got = self.gpu.device.download(&self.c)?;
        Ok(verify::check_matmul(&got, &self.inputs.reference, self.inputs.shape.k))
    }

    fn work(&self) -> f64 {
        let s = self.inputs.shape;
        matmul_flops(s.m, s.n, s.k)
    }

    fn footprint_bytes(&self) -> Option<u64> {
        Some((self.inputs.a.bytes() + self.inputs.b.bytes() + self.c.bytes()) as u64)
    }
}

/// One kernel of the ladder at one shape, checked at every element against the reference.
struct KernelCase<'g> {
    gpu: &'g Gpu,
    inputs: Rc<Inputs>,
    c: Buffer<f32>,
    kernel: Kernel,
    config: LaunchConfig,
    /// M, N, K as kernel arguments.
    dims: [Arg; 3],
}

impl Case for KernelCase<'_> {
    fn launch(&mut self) -> crate::device::Result<()> {
        let [m, n, k] = self.dims;
        let args = [self.inputs.a.arg(), self.inputs.b.arg(), self.c.arg(), m, n, k];
        self.gpu.device.launch(&self.kernel, &self.config, &args)
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        let got = self.gpu.device.download(&self.c)?;
        Ok(verify::check_matmul(&got, &self.inputs.reference, self.inputs.shape.k))
    }

    fn work(&self) -> f64 {
        let s = self.inputs.shape;
        matmul_flops(s.m, s.n, s.k)
    }

    fn footprint_bytes(&self) -> Option<u64> {
        Some((self.inputs.a.bytes() + self.inputs.b.bytes() + self.c.bytes()) as u64)
    }
}

/// The three plots of a matmul CSV: GFLOP/s vs size, GFLOP/s vs tile M, % of the vendor BLAS vs size. Only `ok`
/// rows of square shapes are drawn (the x axis is N for M = N = K).
pub fn plots(rows: &[BTreeMap<String, String>]) -> Vec<(String, LinePlot)> {
    let num = super::num;
    let ok: Vec<&BTreeMap<String, String>> =
        super::ok_rows(rows).filter(|r| r.get("m") == r.get("n") && r.get("n") == r.get("k")).collect();
    let Some(first) = ok.first() else { return Vec::new() };
    let get = |c: &str| first.get(c).cloned().unwrap_or_default();
    let platform = get("platform");
    let vendor = if platform == "amd" { "rocblas" } else { "cublas" };
    let vendor_label = if platform == "amd" { "rocBLAS" } else { "cuBLAS" };
    let wave = get("wave_size");
    let title_device =
        format!("{} ({}, {})", get("device"), get("arch"), if wave == "64" { "wave64" } else { "warp32" });
    let note = (platform == "amd").then(|| {
        "rocBLAS SGEMM runs on the FP32 matrix cores (MFMA) of CDNA; these kernels use plain (packed) FMA on the vector units"
            .to_string()
    });
    // Kernels in ladder order, then anything else the CSV holds (e.g. from a newer suite) in name order.
    let mut kernels: Vec<String> = VARIANTS.iter().map(|v| v.name.to_string()).collect();
    for r in &ok {
        let k = r.get("kernel").cloned().unwrap_or_default();
        if k != vendor && !kernels.contains(&k) {
            kernels.push(k);
        }
    }
    let series_of = |kernel: &str, y: &dyn Fn(&BTreeMap<String, String>) -> Option<f64>| -> Vec<(f64, f64)> {
        let mut pts: Vec<(f64, f64)> = ok
            .iter()
            .filter(|r| r.get("kernel").map(String::as_str) == Some(kernel))
            .filter_map(|r| Some((num(r, "n")?, y(r)?)))
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        pts
    };
    let gflops = |r: &BTreeMap<String, String>| num(r, "gflops");
    // Fastest at the largest size first: the legend then lists the kernels in the order their lines end at the
    // right edge, which untangles 15 crossing lines, and both plots give each kernel the same colour (the % of the
    // vendor at one size orders the kernels as their GFLOP/s do). Kernels without points go last, in ladder order.
    let at_largest = |k: &str| series_of(k, &gflops).last().map(|&(n, g)| (n, g));
    kernels.sort_by(|a, b| match (at_largest(a), at_largest(b)) {
        (Some(pa), Some(pb)) => pb.0.total_cmp(&pa.0).then(pb.1.total_cmp(&pa.1)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    let vendor_at = |n: f64| {
        ok.iter()
            .find(|r| r.get("kernel").map(String::as_str) == Some(vendor) && num(r, "n") == Some(n))
            .and_then(|r| num(r, "gflops"))
    };

    let mut by_size: Vec<Series> = kernels
        .iter()
        .map(|k| Series { label: kernel_label(k), points: series_of(k, &gflops), kind: SeriesKind::Line })
        .filter(|s| !s.points.is_empty())
        .collect();
    let vendor_points = series_of(vendor, &gflops);
    if !vendor_points.is_empty() {
        by_size.push(Series { label: vendor_label.into(), points: vendor_points, kind: SeriesKind::Reference });
    }

    let mut sizes: Vec<f64> = ok.iter().filter_map(|r| num(r, "n")).collect();
    sizes.sort_by(f64::total_cmp);
    sizes.dedup();
    let by_tile: Vec<Series> = sizes
        .iter()
        .map(|&n| {
            let mut pts: Vec<(f64, f64)> = ok
                .iter()
                .filter(|r| num(r, "n") == Some(n))
                .filter_map(|r| Some((num(r, "tile_m")?, num(r, "gflops")?)))
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series { label: format!("N = {n}"), points: pts, kind: SeriesKind::Line }
        })
        .filter(|s| !s.points.is_empty())
        .collect();

    let mut percent: Vec<Series> = kernels
        .iter()
        .map(|k| {
            let pts = series_of(k, &|r| Some(100.0 * num(r, "gflops")? / vendor_at(num(r, "n")?)?));
            Series { label: kernel_label(k), points: pts, kind: SeriesKind::Line }
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    if let (false, Some(lo), Some(hi)) = (percent.is_empty(), sizes.first(), sizes.last()) {
        let label = format!("{vendor_label} = 100%");
        percent.push(Series { label, points: vec![(*lo, 100.0), (*hi, 100.0)], kind: SeriesKind::Reference });
    }

    let plot = |file: &str, what: &str, x_label: &str, axes: (Axis, Axis), y_label: &str, series: Vec<Series>| {
        (
            file.to_string(),
            LinePlot {
                title: format!("FP32 matmul {what} on {title_device}"),
                subtitle: Some("C = A*B, row-major, M = N = K; median of timed launches; every point verified".into()),
                x_label: x_label.into(),
                y_label: y_label.into(),
                x_axis: axes.0,
                y_axis: axes.1,
                series,
                note: note.clone(),
                y_max: None,
            },
        )
    };
    let mut out = Vec::new();
    let size_label = "matrix size N (M = N = K)";
    if !by_size.is_empty() {
        // The ladder spans three orders of magnitude (naive to vendor BLAS): a log y axis keeps every rung visible.
        let axes = (Axis::Log2, Axis::Log10);
        out.push(plot(
            "matmul-gflops-vs-size.png",
            "GFLOP/s vs size",
            size_label,
            axes,
            "GFLOP/s (log scale)",
            by_size,
        ));
    }
    if !by_tile.is_empty() {
        out.push(plot(
            "matmul-gflops-vs-tile.png",
            "tiled kernel vs tile size",
            "tile size M (M x M items per group, M x M LDS tiles)",
            (Axis::Log2, Axis::Linear),
            "GFLOP/s",
            by_tile,
        ));
    }
    if !percent.is_empty() {
        // The y axis stops a little above the vendor's 100%, and at most at PERCENT_TOP: one outlier (a small size
        // whose vendor call is slow to start) would otherwise squash every other kernel into the bottom band.
        let highest = percent.iter().flat_map(|s| s.points.iter().map(|p| p.1)).fold(0.0, f64::max);
        let top = highest.clamp(110.0, PERCENT_TOP);
        let clipped = percent.iter().flat_map(|s| &s.points).filter(|p| p.1 > top).count();
        let (file, mut p) = plot(
            "matmul-percent-of-vendor.png",
            &format!("% of {vendor_label}"),
            size_label,
            (Axis::Log2, Axis::Linear),
            &format!("% of {vendor_label} GFLOP/s"),
            percent,
        );
        p.y_max = Some(top);
        if clipped > 0 {
            let line = format!("{clipped} point(s) above {top:.0}% run off the top edge; the CSV has their values");
            p.note = Some(p.note.map_or(line.clone(), |n| format!("{n}\n{line}")));
        }
        out.push((file, p));
    }
    out
}

/// The highest % of the vendor BLAS the %-of-vendor plot shows, so an outlier cannot stretch its y axis.
const PERCENT_TOP: f64 = 150.0;

/// Legend label of a kernel: `tiled_m16` reads `tiled M=16`.
fn kernel_label(name: &str) -> String {
    match name.strip_prefix("tiled_m") {
        Some(m) => format!("tiled M={m}"),
        None => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_has_a_symbol_named_after_it_and_a_sane_geometry() {
        for v in VARIANTS {
            assert_eq!(v.symbol, format!("matmul_{}", v.name));
            let items = v.group[0] * v.group[1];
            assert!((1..=1024).contains(&items), "{}", v.name);
            // A group computes at least one element of C per item.
            assert!(v.block[0] * v.block[1] >= items, "{}", v.name);
        }
        // Names are keys of CSV rows and CLI values: no two kernels may share one (dedup alone would only catch
        // neighbours).
        let unique: std::collections::BTreeSet<&str> = VARIANTS.iter().map(|v| v.name).collect();
        assert_eq!(unique.len(), VARIANTS.len());
        assert!(!VARIANTS.iter().any(|v| v.symbol == REFERENCE_SYMBOL));
    }

    #[test]
    fn shapes_parse_square_and_rectangular() {
        assert_eq!(Shape::parse("1000").unwrap(), Shape::square(1000));
        assert_eq!(Shape::parse("2^10").unwrap(), Shape::square(1024));
        assert_eq!(Shape::parse("64x32x16").unwrap(), Shape { m: 64, n: 32, k: 16 });
        for bad in ["", "0", "1x2", "1x2x3x4", "axbxc", "12x0x3"] {
            assert!(Shape::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Shape::square(2).bytes(), Some(4 * (4 + 4 + 8)));
    }

    fn edge_dims() -> impl proptest::strategy::Strategy<Value = usize> {
        use proptest::prelude::*;
        prop_oneof![
            prop::sample::select(vec![
                0,
                1,
                4,
                255,
                65_535 * 16,
                65_535 * 16 + 1,
                KERNEL_DIM_MAX,
                KERNEL_DIM_MAX + 1,
                (1 << 31) - 1,
                1 << 31,
                1 << 32,
                (1 << 32) + 1,
                1 << 40,
                usize::MAX / 4,
                usize::MAX,
            ]),
            1usize..20_000,
            any::<usize>(),
        ]
    }

    proptest::proptest! {
        #[test]
        fn matmul_sizes_are_invalid_exactly_when_they_cannot_run(
            m in edge_dims(),
            n in edge_dims(),
            k in edge_dims(),
            kernel in 0..=VARIANTS.len(),
            device in proptest::prop_oneof![proptest::strategy::Just(80u64 << 30), proptest::strategy::Just(u64::MAX), proptest::arbitrary::any::<u64>()],
            host in proptest::option::of(proptest::prop_oneof![proptest::strategy::Just(2u64 << 40), proptest::arbitrary::any::<u64>()]),
        ) {
            let shape = Shape { m, n, k };
            let variant = VARIANTS.get(kernel);
            let memory = Memory { device, host };
            let problem = shape.problem(variant, 1024, &memory);
            // The same rules in u128, where nothing overflows.
            let (m1, n1, k1) = (m as u128, n as u128, k as u128);
            let bytes = [m1 * k1, k1 * n1, m1 * n1, m1 * n1].iter().fold(0u128, |sum, x| sum.saturating_add(x.saturating_mul(4)));
            let grid_ok = |block: [u32; 2]| {
                n1.div_ceil(block[0].into()) <= MAX_GROUPS_X.into() && m1.div_ceil(block[1].into()) <= MAX_GROUPS_YZ.into()
            };
            let valid = m.min(n).min(k) > 0
                && m.max(n).max(k) <= KERNEL_DIM_MAX
                && grid_ok([16, 16])
                && variant.is_none_or(|v| {
                    grid_ok(v.block)
                        && m % v.multiples.m as usize == 0
                        && n % v.multiples.n as usize == 0
                        && k % v.multiples.k as usize == 0
                })
                && bytes <= u128::from(device)
                && host.is_none_or(|h| bytes <= u128::from(h));
            proptest::prop_assert_eq!(problem.is_none(), valid, "{}: {:?}", shape, problem);
        }
    }

    #[test]
    fn size_problems_name_their_cause() {
        let mem = Memory { device: 80 << 30, host: Some(1 << 40) };
        let why = |m, n, k| Shape { m, n, k }.problem(None, 1024, &mem).unwrap();
        assert!(why(0, 4, 4).contains("M = 0"));
        assert!(why(4, 1 << 32, 4).contains("exceeds what the kernels index"));
        assert!(why(65_535 * 16 + 1, 1, 1).contains("grid"));
        assert!(why(1 << 17, 1 << 17, 1 << 17).contains("GiB of device memory"));
        assert!(Shape::square(1 << 20).bytes().is_some());
        assert_eq!(Shape { m: 1 << 40, n: 1 << 40, k: 1 }.bytes(), None);
        let host_small = Memory { device: u64::MAX, host: Some(1 << 30) };
        assert!(Shape::square(1 << 14).problem(None, 1024, &host_small).unwrap().contains("host memory"));
        assert_eq!(Shape::square(8192).problem(Some(&VARIANTS[0]), 1024, &mem), None);
        assert!(Shape::square(8192).problem(Some(&VARIANTS[0]), 128, &mem).unwrap().contains("groups of 256"));
    }

    #[test]
    fn launch_geometry_covers_ragged_edges() {
        let v = VARIANTS.iter().find(|v| v.name == "tiled_m16").unwrap();
        let cfg = v.launch_config(Shape { m: 33, n: 100, k: 7 }).unwrap();
        assert_eq!(cfg.grid, [7, 3, 1]);
        assert_eq!(cfg.group, [16, 16, 1]);
    }

    #[test]
    fn size_requirements_are_checked_and_explained() {
        let strict = Variant { multiples: Multiples { m: 128, n: 128, k: 4 }, ..VARIANTS[0] };
        assert_eq!(strict.check(Shape::square(1024)), None);
        let why = strict.check(Shape { m: 1000, n: 1024, k: 1002 }).unwrap();
        assert!(why.contains("M = 1000 is not a multiple of 128"), "{why}");
        assert!(why.contains("K = 1002 is not a multiple of 4"), "{why}");
        assert!(!why.contains("N ="), "{why}");
        for v in VARIANTS.iter().filter(|v| v.multiples == ANY) {
            assert_eq!(v.check(Shape { m: 1, n: 3, k: 1001 }), None, "{}", v.name);
        }
    }

    #[test]
    fn kernels_are_selected_by_name_family_and_tile() {
        let names = |v: Vec<&Variant>| v.iter().map(|v| v.name).collect::<Vec<_>>();
        assert_eq!(names(select_kernels(&[], &[]).unwrap()).len(), VARIANTS.len());
        assert_eq!(
            names(select_kernels(&["tiled".into(), "naive".into()], &[8, 32]).unwrap()),
            ["naive", "tiled_m8", "tiled_m32"]
        );
        assert_eq!(names(select_kernels(&["tiled_m4".into()], &[]).unwrap()), ["tiled_m4"]);
        let err = select_kernels(&["fast".into()], &[]).unwrap_err();
        assert!(err.to_string().contains("unknown kernel `fast`; available: naive"), "{err}");
        let err = select_kernels(&[], &[12]).unwrap_err();
        assert!(err.to_string().contains("--tiles: no tiled kernel with M = 12"), "{err}");
    }

    #[test]
    fn default_kernels_follow_the_architecture() {
        let names = |arch: &str, tiles: &[u32]| -> Vec<&str> {
            default_kernels(arch, tiles).unwrap().iter().map(|v| v.name).collect()
        };
        // Every name in the table is a kernel or a family.
        for d in ARCH_DEFAULTS {
            select_kernels(&d.kernels.iter().map(|k| k.to_string()).collect::<Vec<_>>(), &[]).unwrap();
        }
        let wave64 = ["double_buffer_256x128x8_t512", "double_buffer_128x128x8_t512"];
        let cdna = names("gfx90a", &[]);
        assert!(wave64.iter().all(|k| cdna.contains(k)), "{cdna:?}");
        // The NVIDIA-tuned shapes (236-396 registers on gfx90a) are not in CDNA's default set.
        assert!(!cdna.contains(&"double_buffer") && !cdna.contains(&"double_buffer_128x256x8_t256"), "{cdna:?}");
        assert_eq!(names("gfx942", &[]), cdna);
        // NVIDIA keeps every shape of the autotuning sweep, the wave64 ones included.
        let nvidia = names("sm_90", &[]);
        assert_eq!(nvidia.len(), VARIANTS.len(), "{nvidia:?}");
        assert_eq!(names("sm_80", &[]), nvidia);
        // An architecture no row names gets the whole table; --tiles still applies.
        assert_eq!(names("gfx1100", &[]).len(), VARIANTS.len());
        let with_tiles = names("gfx90a", &[16]);
        assert!(with_tiles.contains(&"tiled_m16") && !with_tiles.contains(&"tiled_m8"), "{with_tiles:?}");
    }

    #[test]
    fn the_sweep_takes_the_devices_defaults_only_without_kernels() {
        let props = |arch: &str| crate::device::Props {
            arch: crate::device::Arch::parse(arch).unwrap(),
            ..crate::occupancy::tests::h100()
        };
        let names = |s: &MatmulSweep| s.kernels.iter().map(|v| v.name).collect::<Vec<_>>();
        let shapes = vec![Shape::square(256)];
        let mut by_arch =
            MatmulSweep::new(shapes.clone(), select_kernels(&[], &[]).unwrap(), true).with_arch_defaults(vec![]);
        by_arch.fit_to_device(&props("gfx90a"));
        assert_eq!(
            names(&by_arch),
            names(&MatmulSweep::new(shapes.clone(), default_kernels("gfx90a", &[]).unwrap(), true))
        );
        assert!(by_arch.options()["kernels"].to_string().contains("double_buffer_256x128x8_t512"));
        // Kernels named on the command line are kept on any device.
        let mut named = MatmulSweep::new(shapes, select_kernels(&["double_buffer".into()], &[]).unwrap(), true);
        named.fit_to_device(&props("gfx90a"));
        assert!(names(&named).contains(&"double_buffer"), "{:?}", names(&named));
    }

    /// The wave64 shapes fit gfx90a as promised, read from the code object that hipcc writes: at most 128
    /// VGPRs+AGPRs per lane (`.vgpr_count` counts both on gfx90a), no scratch, and at least 50% occupancy (4 of 8
    /// waves per SIMD) by the suite's calculator, registers and LDS included. Every kernel the gfx90a default set
    /// holds beyond the seed's ladder must pass, so a shape added there later is checked too.
    #[test]
    fn wave64_shapes_fit_the_gfx90a_register_budget() {
        use crate::kernels::{compile, metadata, sources, test_support};
        use crate::occupancy::{Profile, Resources};
        let arch = crate::device::Arch::parse("gfx90a").unwrap();
        let hipcc = test_support::compiler(crate::device::Platform::Amd);
        let bytes = compile::compile(&hipcc, sources::source("matmul").unwrap(), &arch).unwrap();
        let info = metadata::check_arch(&bytes, &arch).unwrap();
        let profile = Profile::for_arch(&arch, None).unwrap();
        let wave64: Vec<&Variant> =
            default_kernels("gfx90a", &[]).unwrap().into_iter().filter(|v| v.family == "double_buffer").collect();
        assert!(wave64.len() >= 2, "{wave64:?}");
        for v in wave64 {
            let k = info.amd_kernel(v.symbol).unwrap_or_else(|| panic!("{} not in the code object", v.symbol));
            // On gfx90a `.vgpr_count` is the unified total: ArchVGPRs (rounded up to 4) plus AGPRs, e.g. 358 for
            // 256 + 102 in matmul_double_buffer.
            let registers = k.vgpr_count;
            assert!(k.agpr_count.unwrap_or(0) <= registers, "{}: {k:?}", v.name);
            assert!(registers <= 128, "{}: {} VGPRs+AGPRs per lane (AGPRs {:?})", v.name, k.vgpr_count, k.agpr_count);
            assert_eq!(k.scratch_bytes, 0, "{}: scratch", v.name);
            assert_eq!(k.max_group_size, v.group[0] * v.group[1], "{}: launch bounds vs VARIANTS", v.name);
            let occ = profile.occupancy(&Resources::from_amd_kernel(k)).unwrap();
            assert!(occ.percent >= 50.0, "{}: {occ:?}", v.name);
        }
    }

    /// A 32×32 product of inner size `k`, inputs drawn as the experiment draws them, seeded for repeatability.
    struct Product {
        k: usize,
        a: Vec<f32>,
        b: Vec<f32>,
    }

    const SIDE: usize = 32;

    impl Product {
        fn draw(k: usize, seed: u64) -> Product {
            let mut rng = fastrand::Rng::with_seed(seed);
            let a = draw_inputs(&mut rng, SIDE * k).unwrap();
            let b = draw_inputs(&mut rng, k * SIDE).unwrap();
            Product { k, a, b }
        }

        /// C computed by `dot`, given the K products of an element in order.
        fn compute<T>(&self, dot: impl Fn(&[(f32, f32)]) -> T) -> Vec<T> {
            let mut c = Vec::new();
            for i in 0..SIDE {
                for j in 0..SIDE {
                    let terms: Vec<(f32, f32)> =
                        (0..self.k).map(|p| (self.a[i * self.k + p], self.b[p * SIDE + j])).collect();
                    c.push(dot(&terms));
                }
            }
            c
        }
    }

    /// FP32 FMA accumulation, in order: what every kernel of the ladder does for one element.
    fn sequential(terms: &[(f32, f32)]) -> f32 {
        terms.iter().fold(0.0f32, |acc, &(x, y)| x.mul_add(y, acc))
    }

    fn reversed(terms: &[(f32, f32)]) -> f32 {
        terms.iter().rev().fold(0.0f32, |acc, &(x, y)| x.mul_add(y, acc))
    }

    /// Blocks of 8 terms accumulated on their own, then the block sums pairwise: a BLAS-like order.
    fn blocked_tree(terms: &[(f32, f32)]) -> f32 {
        let mut sums: Vec<f32> = terms.chunks(8).map(sequential).collect();
        while sums.len() > 1 {
            sums = sums.chunks(2).map(|p| p.iter().sum()).collect();
        }
        sums[0]
    }

    fn exact(terms: &[(f32, f32)]) -> f64 {
        terms.iter().map(|&(x, y)| f64::from(x) * f64::from(y)).sum()
    }

    /// An f32 rounded to nearest (ties to even) at 10 mantissa bits, as TF32 keeps them.
    fn tf32(x: f32) -> f32 {
        let bits = x.to_bits();
        let lsb = (bits >> 13) & 1;
        f32::from_bits((bits + 0xfff + lsb) & !0x1fff)
    }

    const KS: [usize; 6] = [256, 512, 1024, 2048, 4096, 8192];

    #[test]
    fn tf32_rounding_keeps_ten_mantissa_bits() {
        assert_eq!(tf32(1.0), 1.0);
        assert_eq!(tf32(1.0 + 2f32.powi(-10)), 1.0 + 2f32.powi(-10));
        assert_eq!(tf32(1.0 + 2f32.powi(-12)), 1.0);
        assert_eq!(tf32(1.0 + 3.0 * 2f32.powi(-12)), 1.0 + 2f32.powi(-10));
        assert_eq!(tf32(-0.5), -0.5);
    }

    #[test]
    fn correct_fp32_products_in_any_order_pass_the_matmul_check() {
        for (seed, &k) in KS.iter().enumerate() {
            let p = Product::draw(k, seed as u64);
            let orders: [(&str, Vec<f32>); 3] = [
                ("sequential", p.compute(sequential)),
                ("reversed", p.compute(reversed)),
                ("blocked_tree", p.compute(blocked_tree)),
            ];
            let exact = p.compute(exact);
            for (name, got) in &orders {
                let v = verify::check_matmul(got, &exact, k);
                assert!(v.passed(), "{name} vs exact at K = {k}: {}", v.summary());
                for (ref_name, reference) in &orders {
                    let v = verify::check_matmul(got, reference, k);
                    assert!(v.passed(), "{name} vs {ref_name} at K = {k}: {}", v.summary());
                    // Not passing by a hair: correct products use at most half the tolerance.
                    assert!(v.max_rel_err < 0.5 * v.tolerance, "{name} vs {ref_name} at K = {k}: {}", v.max_rel_err);
                }
            }
        }
    }

    #[test]
    fn tf32_products_and_products_missing_a_term_fail_the_matmul_check() {
        for (seed, &k) in KS.iter().enumerate() {
            let p = Product::draw(k, 100 + seed as u64);
            let tf32_product = p.compute(|t| t.iter().fold(0.0f32, |acc, &(x, y)| tf32(x).mul_add(tf32(y), acc)));
            let missing_first = p.compute(|t| sequential(&t[1..]));
            let missing_middle = p.compute(|t| {
                let mut t = t.to_vec();
                t.remove(k / 2);
                sequential(&t)
            });
            let references = [
                ("exact", p.compute(exact)),
                ("blocked_tree", p.compute(blocked_tree).into_iter().map(f64::from).collect()),
            ];
            for (ref_name, reference) in &references {
                for (name, got) in
                    [("tf32", &tf32_product), ("missing k = 0", &missing_first), ("missing k = K/2", &missing_middle)]
                {
                    let v = verify::check_matmul(got, reference, k);
                    assert!(!v.passed(), "{name} passed against {ref_name} at K = {k}: worst {:e}", v.max_rel_err);
                    // Failing by a wide margin, not by luck.
                    assert!(v.max_rel_err > 4.0 * v.tolerance, "{name} vs {ref_name} at K = {k}: {}", v.max_rel_err);
                }
            }
        }
    }

    #[test]
    fn points_follow_shape_then_vendor_then_ladder() {
        let sweep =
            MatmulSweep::new(vec![Shape::square(256), Shape::square(512)], VARIANTS.iter().take(2).collect(), true);
        let order: Vec<(Option<&str>, usize)> =
            (0..6).map(|i| point_kernel(&sweep, i)).map(|(v, s)| (v.map(|v| v.name), s.n)).collect();
        assert_eq!(
            order,
            [
                (None, 256),
                (Some("naive"), 256),
                (Some("accumulator"), 256),
                (None, 512),
                (Some("naive"), 512),
                (Some("accumulator"), 512)
            ]
        );
    }

    #[test]
    fn plots_come_from_csv_rows() {
        let row = |kernel: &str, tile: &str, n: u32, gflops: f64| {
            let mut r = BTreeMap::new();
            for (k, v) in [
                ("platform", "nvidia".to_string()),
                ("device", "Test GPU".into()),
                ("arch", "sm_90".into()),
                ("wave_size", "32".into()),
                ("kernel", kernel.into()),
                ("tile_m", tile.into()),
                ("m", n.to_string()),
                ("n", n.to_string()),
                ("k", n.to_string()),
                ("gflops", gflops.to_string()),
                ("status", "ok".into()),
            ] {
                r.insert(k.to_string(), v);
            }
            r
        };
        let rows = vec![
            row("cublas", "", 256, 1000.0),
            row("naive", "", 256, 100.0),
            row("tiled_m16", "16", 256, 400.0),
            row("tiled_m32", "32", 256, 500.0),
            row("cublas", "", 512, 2000.0),
            row("naive", "", 512, 100.0),
        ];
        assert_eq!(
            headlines(&rows),
            [
                "256: best kernel tiled_m32 500 GFLOP/s = 0.50 of the vendor BLAS (1000 GFLOP/s)",
                "512: best kernel naive 100 GFLOP/s = 0.05 of the vendor BLAS (2000 GFLOP/s)",
            ]
        );
        let plots = plots(&rows);
        let files: Vec<&str> = plots.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(files, ["matmul-gflops-vs-size.png", "matmul-gflops-vs-tile.png", "matmul-percent-of-vendor.png"]);
        let by_size = &plots[0].1;
        assert!(by_size.title.contains("Test GPU (sm_90, warp32)"));
        let cublas = by_size.series.iter().find(|s| s.label == "cuBLAS").unwrap();
        assert_eq!(cublas.kind, SeriesKind::Reference);
        assert_eq!(cublas.points, [(256.0, 1000.0), (512.0, 2000.0)]);
        let percent = &plots[2].1;
        let naive = percent.series.iter().find(|s| s.label == "naive").unwrap();
        assert_eq!(naive.points, [(256.0, 10.0), (512.0, 5.0)]);
        assert_eq!(plots[1].1.series[0].points, [(16.0, 400.0), (32.0, 500.0)]);
        assert!(by_size.note.is_none());
    }
}
