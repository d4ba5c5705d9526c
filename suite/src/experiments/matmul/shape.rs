//! A matmul problem size (`--sizes`): parsing, bytes, and why a size cannot run ([`Shape::problem`]).

use std::fmt;

use serde::Serialize;

use super::cases::{REFERENCE_SYMBOL, REFERENCE_TILE};
use super::kernels::Variant;
use crate::options::{Memory, MAX_GROUPS_X, MAX_GROUPS_YZ};

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

    /// Whether every row of A (K floats), B and C (N floats) starts 16-byte aligned in buffers that do: N and K
    /// multiples of 4. The 16-byte kernels need it; other sizes run their `_unaligned` twins.
    pub fn rows_aligned(&self) -> bool {
        self.n.is_multiple_of(4) && self.k.is_multiple_of(4)
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
    /// kernels cannot index or launch, byte counts that overflow, memory that is not there (the point's matrices
    /// plus `workspace_bytes` on the device), and (for a kernel, `variant`) the kernel's own size requirements.
    /// `None`: the point is valid. Needs no GPU.
    pub fn problem(
        &self,
        variant: Option<&Variant>,
        max_group_size: u32,
        memory: &Memory,
        workspace_bytes: u64,
    ) -> Option<String> {
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
        let device_bytes = self.bytes().and_then(|b| b.checked_add(workspace_bytes));
        if let Some(why) = memory.problem(device_bytes, self.bytes()) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::matmul::kernels::VARIANTS;

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
            workspace in proptest::prop_oneof![proptest::strategy::Just(0u64), proptest::strategy::Just(1u64 << 30), proptest::arbitrary::any::<u64>()],
        ) {
            let shape = Shape { m, n, k };
            let variant = VARIANTS.get(kernel);
            let memory = Memory { device, host };
            let problem = shape.problem(variant, 1024, &memory, workspace);
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
                && bytes.saturating_add(u128::from(workspace)) <= u128::from(device)
                && host.is_none_or(|h| bytes <= u128::from(h));
            proptest::prop_assert_eq!(problem.is_none(), valid, "{}: {:?}", shape, problem);
        }
    }

    #[test]
    fn size_problems_name_their_cause() {
        let mem = Memory { device: 80 << 30, host: Some(1 << 40) };
        let why = |m, n, k| Shape { m, n, k }.problem(None, 1024, &mem, 0).unwrap();
        assert!(why(0, 4, 4).contains("M = 0"));
        assert!(why(4, 1 << 32, 4).contains("exceeds what the kernels index"));
        assert!(why(65_535 * 16 + 1, 1, 1).contains("grid"));
        assert!(why(1 << 17, 1 << 17, 1 << 17).contains("GiB of device memory"));
        assert!(Shape::square(1 << 20).bytes().is_some());
        assert_eq!(Shape { m: 1 << 40, n: 1 << 40, k: 1 }.bytes(), None);
        let host_small = Memory { device: u64::MAX, host: Some(1 << 30) };
        assert!(Shape::square(1 << 14).problem(None, 1024, &host_small, 0).unwrap().contains("host memory"));
        assert_eq!(Shape::square(8192).problem(Some(&VARIANTS[0]), 1024, &mem, 0), None);
        assert!(Shape::square(8192).problem(Some(&VARIANTS[0]), 128, &mem, 0).unwrap().contains("groups of 256"));
        // A workspace counts against the device only (the host never holds it).
        let tight = Memory { device: Shape::square(4096).bytes().unwrap() + 100, host: Some(1 << 40) };
        assert_eq!(Shape::square(4096).problem(None, 1024, &tight, 100), None);
        assert!(Shape::square(4096).problem(None, 1024, &tight, 101).unwrap().contains("GiB of device memory"));
    }
}
