//! Smoke test of the whole pipeline: the STREAM triad `a = b + s·c` (`kernels/smoke.hip`), verified against the
//! host and timed, one CSV row per size.

use serde::Serialize;

use super::{Case, Error, Experiment, Metric, Point};
use crate::device::{Buffer, LaunchConfig};
use crate::gpu::Gpu;
use crate::verify::{self, Verification, F32_EPS};

/// The triad's sweep. Each field is one flag of `suite run smoke`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SmokeSweep {
    /// Elements per array.
    pub sizes: Vec<usize>,
    /// Items per group.
    pub group_size: u32,
}

impl Default for SmokeSweep {
    /// 1 Mi to 64 Mi elements (4 MiB to 256 MiB per array): from cache-resident to well past any L2.
    fn default() -> Self {
        SmokeSweep { sizes: vec![1 << 20, 1 << 24, 1 << 26], group_size: 256 }
    }
}

/// Bytes the triad moves per element: reads b and c, writes a, 4 bytes each.
pub const TRIAD_BYTES_PER_ELEMENT: usize = 3 * std::mem::size_of::<f32>();

/// The scalar of the triad (the STREAM benchmark's value).
const SCALAR: f32 = 0.4;

impl Experiment for SmokeSweep {
    fn name(&self) -> &'static str {
        "smoke"
    }

    fn param_columns(&self) -> &'static [&'static str] {
        &["kernel", "n", "group_size", "bytes"]
    }

    fn metric(&self) -> Metric {
        Metric { column: "gbps", formula: "GB/s = 12 bytes per element (read b, c; write a) * n / median time / 1e9" }
    }

    fn options(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    fn sources(&self) -> &'static [&'static str] {
        &["smoke"]
    }

    fn points(&self, gpu: &Gpu) -> Vec<Point> {
        let max_group = gpu.device.props().max_group_size;
        self.sizes
            .iter()
            .enumerate()
            .map(|(index, &n)| {
                let invalid = if n == 0 {
                    Some("n must be at least 1".to_string())
                } else if n > u32::MAX as usize {
                    Some(format!("n = {n} exceeds the kernel's 32-bit index"))
                } else if self.group_size == 0 || self.group_size > max_group {
                    Some(format!("group size {} is outside 1..={max_group}", self.group_size))
                } else {
                    None
                };
                Point {
                    index,
                    key: format!("triad/n={n},group={}", self.group_size),
                    params: vec![
                        "triad".into(),
                        n.to_string(),
                        self.group_size.to_string(),
                        (n * TRIAD_BYTES_PER_ELEMENT).to_string(),
                    ],
                    invalid,
                }
            })
            .collect()
    }

    fn prepare<'g>(&self, gpu: &'g Gpu, point: &Point) -> Result<Box<dyn Case + 'g>, Error> {
        let n = self.sizes[point.index];
        let kernel = gpu.kernel("smoke", "smoke_triad")?;
        // Fresh random inputs for every check, so a kernel cannot pass by matching one fixed pattern.
        let mut rng = fastrand::Rng::new();
        let b: Vec<f32> = (0..n).map(|_| rng.f32() * 2.0 - 1.0).collect();
        let c: Vec<f32> = (0..n).map(|_| rng.f32() * 2.0 - 1.0).collect();
        let dev = gpu.device.as_ref();
        let a_buf = dev.alloc_buffer::<f32>(n)?;
        // All-ones bytes are NaN as f32: any element the kernel does not write fails verification.
        dev.fill_bytes(a_buf.raw(), 0xff)?;
        let b_buf = dev.upload(&b)?;
        let c_buf = dev.upload(&c)?;
        let groups = u32::try_from(n.div_ceil(self.group_size as usize))
            .map_err(|_| Error::Unsupported(format!("n = {n} needs more than 2^32 groups")))?;
        Ok(Box::new(Triad {
            gpu,
            kernel,
            config: LaunchConfig::linear(groups, self.group_size),
            n,
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
    a: Buffer<f32>,
    b: Buffer<f32>,
    c: Buffer<f32>,
    host_b: Vec<f32>,
    host_c: Vec<f32>,
}

impl Case for Triad<'_> {
    fn launch(&mut self) -> crate::device::Result<()> {
        let args = [self.a.arg(), self.b.arg(), self.c.arg(), crate::device::Arg::F32(SCALAR), (self.n as u32).into()];
        self.gpu.device.launch(&self.kernel, &self.config, &args)
    }

    fn verify(&mut self) -> Result<Verification, Error> {
        let got = self.gpu.device.download(&self.a)?;
        let want: Vec<f64> = self
            .host_b
            .iter()
            .zip(&self.host_c)
            .map(|(&b, &c)| f64::from(b) + f64::from(SCALAR) * f64::from(c))
            .collect();
        // One multiply and one add in FP32 (fused or not): at most two roundings of values no larger than
        // max |b| + |s·c|, so a few ulps of that scale.
        Ok(verify::compare(&got, &want, verify::max_abs(&want), 4.0 * F32_EPS))
    }

    fn work(&self) -> f64 {
        (self.n * TRIAD_BYTES_PER_ELEMENT) as f64
    }

    fn footprint_bytes(&self) -> Option<u64> {
        Some((self.a.bytes() + self.b.bytes() + self.c.bytes()) as u64)
    }
}
