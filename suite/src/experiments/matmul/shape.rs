//! A matmul problem size (`--sizes`): parsing, bytes, and what about a size alone keeps a kernel from it (its
//! dimensions, a grid, the memory); [`super::point_problem`] puts them together for a point.

use std::fmt;

use serde::Serialize;

use crate::options::{Memory, MAX_GROUPS_X, MAX_GROUPS_YZ};
use crate::precision::Precision;

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

    /// Whether every row of FP32 A (K floats), B and C (N floats) starts 16-byte aligned in buffers that do: N and
    /// K multiples of 4. The 16-byte kernels need it; other sizes run their `_unaligned` twins.
    pub fn rows_aligned(&self) -> bool {
        self.rows_aligned_for(Precision::F32)
    }

    /// Whether every row of A, B and C of `precision` starts 16-byte aligned: N and K multiples of the elements in
    /// 16 bytes (4 floats, 2 doubles).
    pub fn rows_aligned_for(&self, precision: Precision) -> bool {
        let per_16 = 16 / precision.bytes() as usize;
        self.n.is_multiple_of(per_16) && self.k.is_multiple_of(per_16)
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

    /// Bytes an FP32 point needs ([`Shape::bytes_for`]).
    pub fn bytes(&self) -> Option<u64> {
        self.bytes_for(Precision::F32)
    }

    /// Bytes a point of `precision` needs, on the device (A, B, the kernel's C and the reference C) and equally on
    /// the host (the inputs as generated, the reference and the kernel's result downloaded); `None` if the count
    /// overflows.
    pub fn bytes_for(&self, precision: Precision) -> Option<u64> {
        let (m, n, k) = (self.m as u64, self.n as u64, self.k as u64);
        let mn = m.checked_mul(n)?;
        crate::options::bytes_of(&[m.checked_mul(k)?, k.checked_mul(n)?, mn, mn], precision.bytes())
    }

    /// Why no kernel can take this shape: a size of 0, or one past what the kernels index ([`KERNEL_DIM_MAX`]).
    pub fn size_problem(&self) -> Option<String> {
        let dims = [("M", self.m), ("N", self.n), ("K", self.k)];
        if let Some((dim, _)) = dims.iter().find(|(_, size)| *size == 0) {
            return Some(format!("{dim} = 0: every size must be at least 1"));
        }
        if let Some((dim, size)) = dims.iter().find(|(_, size)| *size > KERNEL_DIM_MAX) {
            return Some(format!(
                "{dim} = {size} exceeds what the kernels index with 32-bit ints (at most {KERNEL_DIM_MAX})"
            ));
        }
        None
    }

    /// Why the kernel `symbol`, whose groups each compute `block` (columns × rows) of C, cannot cover this shape in
    /// one grid.
    pub fn grid_problem(&self, symbol: &str, block: [u32; 2]) -> Option<String> {
        let (gx, gy) = (self.n.div_ceil(block[0] as usize) as u64, self.m.div_ceil(block[1] as usize) as u64);
        (gx > MAX_GROUPS_X || gy > MAX_GROUPS_YZ).then(|| {
            format!(
                "{symbol} needs a grid of {gx} x {gy} groups; a grid holds at most {MAX_GROUPS_X} x {MAX_GROUPS_YZ}"
            )
        })
    }

    /// Why this shape's matrices of `precision`, plus `workspace_bytes` on the device, do not fit `memory`.
    pub fn memory_problem(&self, memory: &Memory, workspace_bytes: u64, precision: Precision) -> Option<String> {
        let bytes = self.bytes_for(precision);
        let device_bytes = bytes.and_then(|b| b.checked_add(workspace_bytes));
        memory.problem(device_bytes, bytes).map(|why| format!("{self}: {why}"))
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

    #[test]
    fn shapes_parse_square_and_rectangular() {
        assert_eq!(Shape::parse("1000").unwrap(), Shape::square(1000));
        assert_eq!(Shape::parse("2^10").unwrap(), Shape::square(1024));
        assert_eq!(Shape::parse("64x32x16").unwrap(), Shape { m: 64, n: 32, k: 16 });
        for bad in ["", "0", "1x2", "1x2x3x4", "axbxc", "12x0x3"] {
            assert!(Shape::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Shape::square(2).bytes(), Some(4 * (4 + 4 + 8)));
        assert_eq!(Shape::square(2).bytes_for(Precision::F64), Some(8 * (4 + 4 + 8)));
        // FP64 rows are 16-byte aligned at even N and K, FP32 ones at multiples of 4.
        let (f32, f64) = (Precision::F32, Precision::F64);
        for (shape, fp32, fp64) in [("8", true, true), ("6", false, true), ("4x6x8", false, true), ("7", false, false)]
        {
            let s = Shape::parse(shape).unwrap();
            assert_eq!((s.rows_aligned_for(f32), s.rows_aligned_for(f64)), (fp32, fp64), "{shape}");
        }
    }
}
