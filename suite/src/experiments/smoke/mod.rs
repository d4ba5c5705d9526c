//! Smoke test of the whole pipeline: the STREAM triad `a = b + s·c` (`kernels/smoke.hip`), verified against the
//! host and timed, one CSV row per size.

use serde::Serialize;

mod compare;

use super::entry::{defaults, size_arg, Entry, Sweep};
use super::estimate::{LAUNCH_S, STREAMING_SHARE};
use super::{Case, Error, Experiment, Metric, Params, Point, Points, Results, RunContext, Work};
use crate::device::{Buffer, LaunchConfig, Props};
use crate::gpu::Gpu;
use crate::options::{bytes_of, index_u32_problem, Memory};
use crate::verify::{self, Verification, F32_EPS};

/// The triad's sweep: its fields are the flags of `suite run smoke`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, clap::Args)]
pub struct SmokeSweep {
    /// Elements per array, comma-separated (integers, or 2^N). The default runs from cache-resident (1 Mi elements,
    /// 4 MiB per array) to well past any L2 (64 Mi, 256 MiB per array).
    #[arg(long, value_delimiter = ',', value_parser = size_arg, default_values = ["2^20", "2^24", "2^26"])]
    pub sizes: Vec<usize>,
    /// Items per group.
    #[arg(long, default_value_t = 256)]
    pub group_size: u32,
}

impl Default for SmokeSweep {
    fn default() -> Self {
        defaults()
    }
}

impl Sweep for SmokeSweep {
    const NAME: &'static str = "smoke";
    const HELP: &'static str =
        "The pipeline end to end: STREAM triad a = b + s*c, verified on the host, GB/s per size.";
    const RESULTS: &'static dyn Results = &SmokeResults;

    /// One size in L2 and one far past it.
    fn quick() -> Self {
        SmokeSweep { sizes: vec![1 << 20, 1 << 26], ..SmokeSweep::default() }
    }
}

/// `suite run smoke`.
pub const ENTRY: Entry = Entry::of::<SmokeSweep>();

/// Bytes the triad moves per element: reads b and c, writes a, 4 bytes each.
pub const TRIAD_BYTES_PER_ELEMENT: usize = 3 * std::mem::size_of::<f32>();

/// The scalar of the triad (the STREAM benchmark's value).
const SCALAR: f32 = 0.4;

impl SmokeSweep {
    /// Why `n` elements cannot run in groups of `self.group_size` on a device allowing `max_group` items per group
    /// with `memory`: the kernel's 32-bit count and index, the device's three arrays (12n bytes), and the host's
    /// b, c, the result and its f64 reference (20n bytes). Needs no GPU.
    pub fn problem(&self, n: usize, max_group: u32, memory: &Memory) -> Option<String> {
        let n = n as u64;
        if n == 0 {
            return Some("n must be at least 1".to_string());
        }
        if self.group_size == 0 || self.group_size > max_group {
            return Some(format!("group size {} is outside 1..={max_group}", self.group_size));
        }
        index_u32_problem(n, self.group_size).or_else(|| {
            memory.problem(
                bytes_of(&[n; 3], 4),
                bytes_of(&[n, n, n], 4).zip(bytes_of(&[n], 8)).and_then(|(a, b)| a.checked_add(b)),
            )
        })
    }
}

/// Smoke's read side: the triad's columns, its bandwidth headlines, its comparison as % of each run's copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SmokeResults;

impl Results for SmokeResults {
    fn roofline(&self) -> crate::report::roofline::Role {
        crate::report::roofline::Role { family: |_| "triad".into(), ..Default::default() }
    }

    fn comparison(&self) -> Box<dyn crate::report::compare::Comparison> {
        Box::new(compare::TriadComparison)
    }

    fn name(&self) -> &'static str {
        SmokeSweep::NAME
    }

    /// The triad's bandwidth at each size, the largest last (the one past any L2).
    fn headlines(&self, rows: &[std::collections::BTreeMap<String, String>]) -> Vec<String> {
        let mut sized: Vec<(f64, f64, bool)> = super::ok_rows(rows)
            .filter_map(|r| Some((super::num(r, "n")?, super::num(r, "gbps")?, r.get("l2_resident")? == "true")))
            .collect();
        sized.sort_by(|a, b| a.0.total_cmp(&b.0));
        sized
            .iter()
            .map(|(n, gbps, l2)| {
                format!("triad at n = {n}: {gbps:.0} GB/s{}", if *l2 { " (fits in L2: a cache rate)" } else { "" })
            })
            .collect()
    }

    fn param_columns(&self) -> &'static [&'static str] {
        &["kernel", "n", "group_size", "bytes"]
    }

    fn metric(&self) -> Metric {
        Metric { column: "gbps", formula: "GB/s = 12 bytes per element (read b, c; write a) * n / median time / 1e9" }
    }
}

impl Experiment for SmokeSweep {
    fn results(&self) -> &'static dyn Results {
        Self::RESULTS
    }

    fn options(&self, _device: &Props) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    fn sources(&self) -> &'static [&'static str] {
        &["smoke"]
    }

    /// `kernels/smoke.hip`'s cold compile: nvcc 0.6 s, hipcc 1.2 s, on this repository's two-core build machine (nvcc 13.5.37, sm_90; hipcc 5.2, gfx90a; commit 7ef0cdd).
    fn compile_figures(&self, _name: &str) -> Option<crate::experiments::compile_estimate::CompileFigures> {
        Some(crate::experiments::compile_estimate::CompileFigures { nvcc_s: 0.6, hipcc_s: 1.2 })
    }
}

/// One point of the smoke sweep: the triad over `n` elements (the sweep's group size for all).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TriadPoint {
    /// Elements per array.
    pub n: usize,
}

impl Points for SmokeSweep {
    type Spec = TriadPoint;

    fn points(&self, ctx: &RunContext) -> Vec<Point<TriadPoint>> {
        let props = ctx.props();
        let memory = Memory::of(props.memory_bytes);
        self.sizes
            .iter()
            .map(|&n| Point {
                spec: TriadPoint { n },
                key: format!("triad/n={n},group={}", self.group_size),
                params: Params::of(Self::RESULTS)
                    .set("kernel", "triad")
                    .set("n", n)
                    .set("group_size", self.group_size)
                    .set(
                        "bytes",
                        bytes_of(&[n as u64], TRIAD_BYTES_PER_ELEMENT as u64)
                            .map(|b| b.to_string())
                            .unwrap_or_default(),
                    )
                    .row(),
                invalid: self.problem(n, props.max_group_size, &memory),
                // One FMA per element over three arrays.
                work: Work::kernel(2.0 * n as f64, (n * TRIAD_BYTES_PER_ELEMENT) as f64, STREAMING_SHARE)
                    .at_least(LAUNCH_S),
            })
            .collect()
    }

    fn prepare<'g>(&self, ctx: &RunContext<'g>, spec: &TriadPoint) -> Result<Box<dyn Case + 'g>, Error> {
        let gpu = ctx.gpu;
        let n = spec.n;
        let kernel = gpu.kernel("smoke", "smoke_triad")?;
        // Fresh random inputs for every check, so a kernel cannot pass by matching one fixed pattern.
        // Drawn on all the host's cores (crate::random).
        let draw = || crate::random::uniform_f32(n, -1.0, 1.0).map_err(Error::Unsupported);
        let (b, c) = ctx.phases.scope(crate::phases::Phase::Inputs, || Ok::<_, Error>((draw()?, draw()?)))?;
        let dev = gpu.device.as_ref();
        let a_buf = dev.alloc_buffer::<f32>(n)?;
        // All-ones bytes are NaN as f32: any element the kernel does not write fails verification.
        dev.fill_bytes(a_buf.raw(), 0xff)?;
        let b_buf = dev.upload(&b)?;
        let c_buf = dev.upload(&c)?;
        let groups = u32::try_from(n.div_ceil(self.group_size as usize))
            .map_err(|_| Error::Unsupported(format!("n = {n} needs more than 2^32 groups")))?;
        let n_arg =
            u32::try_from(n).map_err(|_| Error::Unsupported(format!("n = {n} exceeds the kernel's u32 count")))?;
        Ok(Box::new(Triad {
            gpu,
            kernel,
            config: LaunchConfig::linear(groups, self.group_size),
            n,
            n_arg: n_arg.into(),
            a: a_buf,
            b: b_buf,
            c: c_buf,
            host_b: b,
            host_c: c,
        }))
    }
}

struct Triad<'g> {
    gpu: &'g Gpu,
    kernel: crate::device::Kernel,
    config: LaunchConfig,
    n: usize,
    /// `n` as the kernel's `unsigned` argument.
    n_arg: crate::device::Arg,
    a: Buffer<f32>,
    b: Buffer<f32>,
    c: Buffer<f32>,
    host_b: Vec<f32>,
    host_c: Vec<f32>,
}

impl Case for Triad<'_> {
    fn launch(&mut self) -> crate::device::Result<()> {
        let args = [self.a.arg(), self.b.arg(), self.c.arg(), crate::device::Arg::F32(SCALAR), self.n_arg];
        self.gpu.device.launch(&self.kernel, &self.config, &args)
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        let got = self.gpu.device.download(&self.a)?;
        let (b, c) = (&self.host_b, &self.host_c);
        // The exact triad in f64, element by element on the host's cores (no reference vector is stored).
        let want = |i: usize| f64::from(b[i]) + f64::from(SCALAR) * f64::from(c[i]);
        // One multiply and one add in FP32 (fused or not): at most two roundings of values no larger than
        // max |b| + |s·c|, so a few ulps of that scale.
        Ok(verify::compare_by(&got, want, verify::max_abs_by(got.len(), want), 4.0 * F32_EPS))
    }

    fn work(&self) -> f64 {
        self.n as f64 * TRIAD_BYTES_PER_ELEMENT as f64
    }

    fn footprint_bytes(&self) -> Option<u64> {
        Some((self.a.bytes() + self.b.bytes() + self.c.bytes()) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn triad_sizes_are_invalid_exactly_when_they_cannot_run(
            n in proptest::prop_oneof![
                proptest::sample::select(vec![0usize, 1, 255, 256, (1 << 31) - 1, 1 << 31, u32::MAX as usize, 1 << 32,
                    (1 << 32) + 1, 1 << 40, usize::MAX / 4, usize::MAX]),
                1usize..1 << 30,
                proptest::arbitrary::any::<usize>(),
            ],
            group_size in proptest::prop_oneof![proptest::strategy::Just(0u32), 1u32..=2048],
            device in proptest::prop_oneof![proptest::strategy::Just(80u64 << 30), proptest::arbitrary::any::<u64>()],
            host in proptest::option::of(proptest::arbitrary::any::<u64>()),
        ) {
            let sweep = SmokeSweep { sizes: vec![n], group_size };
            let memory = Memory { device, host };
            let problem = sweep.problem(n, 1024, &memory);
            let (n1, g) = (n as u128, u128::from(group_size));
            let valid = n1 > 0
                && (1..=1024).contains(&group_size)
                && n1 <= u128::from(u32::MAX)
                && n1.div_ceil(g) * g <= 1 << 32
                && 12 * n1 <= u128::from(device)
                && host.is_none_or(|h| 20 * n1 <= u128::from(h));
            proptest::prop_assert_eq!(problem.is_none(), valid, "n = {}, group {}: {:?}", n, group_size, problem);
        }
    }
}
