//! Packed operands for the `_packed` kernels (FP32 rungs 8 to 10, `kernels/include/matmul_wave_tile.h`, IO_PACKED):
//! which copies of A and B a plan makes ([`Pack`]), whether a plan packs ([`Packing`]) and the model of when packing
//! pays ([`pack_pays`]). The plan itself is `ladder.rs`'s ([`super::ladder::Plan::packed`]).

use serde::Serialize;

use super::shape::Shape;

/// The copies a `_packed` kernel reads (`kernels/include/matmul_wave_tile.h`, IO_PACKED): A (M×K) as M rows of
/// `a_ld` elements and B (K×N) as K rows of `b_ld`, each row padded with zeros to whole 16-byte accesses. An operand
/// whose rows are already aligned is read in place (`a` or `b` false: its `ld` is its own row length).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Pack {
    /// Whether A is copied (K is not a multiple of 4).
    pub a: bool,
    /// Whether B is copied (N is not a multiple of 4).
    pub b: bool,
    /// Elements per row of the A the kernel reads: K rounded up to a multiple of 4.
    pub a_ld: u64,
    /// Elements per row of the B the kernel reads: N rounded up to a multiple of 4.
    pub b_ld: u64,
    /// Elements of the copies: M rows of A's where A is copied, K rows of B's where B is.
    pub copy_elems: u64,
}

impl Pack {
    /// The copies for an FP32 product of `shape`.
    pub fn of(shape: Shape) -> Pack {
        let (m, n, k) = (shape.m as u64, shape.n as u64, shape.k as u64);
        let (a, b, a_ld, b_ld) = (k % 4 != 0, n % 4 != 0, k.next_multiple_of(4), n.next_multiple_of(4));
        Pack { a, b, a_ld, b_ld, copy_elems: u64::from(a) * m * a_ld + u64::from(b) * k * b_ld }
    }

    /// Bytes the copy moves in one launch (FP32): the source elements read and the padded ones written.
    pub fn bytes_moved(&self, shape: Shape) -> u64 {
        let (m, n, k) = (shape.m as u64, shape.n as u64, shape.k as u64);
        let read = u64::from(self.a) * m * k + u64::from(self.b) * k * n;
        4 * (read + self.copy_elems)
    }
}

/// Whether a plan packs A and B where it may ([`super::Variant::can_pack`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packing {
    /// Where [`pack_pays`] says it pays on the device (a kernel's own row).
    Model,
    /// Never: the `_unaligned` twin.
    Never,
    /// Always: the `_packed` twin (the autotune step measures both).
    Always,
}

/// Fixed cost of the copy's extra launch in a stream of back-to-back launches, seconds: the launch gap measured on
/// an H100 in a graph (about 1 µs, see [`super::ladder::IN_KERNEL_FIXUP_BYTES`]), doubled for the copy's own short tail.
const PACK_LAUNCH_S: f64 = 2e-6;

/// The share of a product's time that the `_unaligned` kernels lose to their 4-byte loads and that packing can win
/// back, at most: measured on an H200, the best `_unaligned` kernel at 2047³ took 403 µs where the aligned kernel
/// took 362 µs at 2048³ (10%; docs/matmul.md). Packing pays where its copy is estimated under this share of the
/// product's time at the FP32 vector peak.
const UNALIGNED_LOSS: f64 = 0.10;

/// Whether packing A and B pays at `shape` on a device with `fp32_tflops` of FP32 vector peak and `memory_gbps` of
/// memory bandwidth: the copy's time (its bytes at the memory bandwidth, plus [`PACK_LAUNCH_S`]) under
/// [`UNALIGNED_LOSS`] of the product's time at peak (a lower bound on the kernel's own time, so the rule packs only
/// where even a kernel at peak would lose more to unaligned loads than the copy costs).
pub fn pack_pays(shape: Shape, fp32_tflops: f64, memory_gbps: f64) -> bool {
    let copy_s = Pack::of(shape).bytes_moved(shape) as f64 / (memory_gbps * 1e9) + PACK_LAUNCH_S;
    let product_s = crate::measure::matmul_flops(shape.m, shape.n, shape.k) / (fp32_tflops * 1e12);
    copy_s < UNALIGNED_LOSS * product_s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::matmul::rungs::VARIANTS;
    use crate::experiments::matmul::Variant;
    use crate::precision::Precision::{F32, F64};

    fn variant(name: &str) -> &'static Variant {
        VARIANTS.iter().find(|v| v.name == name).unwrap()
    }

    #[test]
    fn packing_copies_only_unaligned_operands_and_keeps_the_grid() {
        // 2047³: both operands copied, rows of 2048; the copy reads 2·2047² elements and writes 2·2047·2048.
        let odd = Shape::square(2047);
        let pack = Pack::of(odd);
        assert_eq!((pack.a, pack.b, pack.a_ld, pack.b_ld), (true, true, 2048, 2048));
        assert_eq!(pack.copy_elems, 2 * 2047 * 2048);
        assert_eq!(pack.bytes_moved(odd), 4 * (2 * 2047 * 2047 + 2 * 2047 * 2048));
        // K aligned, N not: only B is copied (A is read in place).
        let b_only = Pack::of(Shape { m: 300, n: 515, k: 512 });
        assert_eq!(
            (b_only.a, b_only.b, b_only.a_ld, b_only.b_ld, b_only.copy_elems),
            (false, true, 512, 516, 512 * 516)
        );
        // A packed plan: the _packed symbol, the same grid and split, the copies counted in the workspace.
        for name in ["double_buffer", "splitk_64x128x8_t128", "streamk_128x128x8_t128"] {
            let v = variant(name);
            assert!(v.can_pack(odd, F32) && !v.can_pack(odd, F64) && !v.can_pack(Shape::square(2048), F32), "{name}");
            let plan = v.plan(odd, F32, 132, 2, None).unwrap();
            let packed = plan.clone().packed(v, odd);
            assert_eq!(packed.symbol, format!("{}_packed", v.symbol));
            assert_eq!((packed.grid, packed.split_k, packed.work_elems), (plan.grid, plan.split_k, plan.work_elems));
            assert_eq!(packed.workspace_bytes(), plan.workspace_bytes() + 4 * 2 * 2047 * 2048);
        }
        // No packed twin: the atomic split-K kernel (it measures determinism), and the rungs before 8.
        for name in ["splitk_atomic_64x128x16_t128", "warptile", "vectorized", "naive"] {
            assert!(!variant(name).can_pack(odd, F32), "{name}");
        }
    }

    #[test]
    fn packing_pays_where_the_product_does_enough_flop_per_byte_copied() {
        // An H200: 67 TFLOP/s of FP32, 4800 GB/s.
        let pays = |shape: Shape| pack_pays(shape, 66.9, 4800.0);
        // 2047³: 67 MB copied (14 µs + 2) against 10% of 256 µs at peak.
        assert!(pays(Shape::square(2047)));
        assert!(pays(Shape::square(4097)) && pays(Shape { m: 777, n: 5555, k: 1234 }));
        // 1023×1001×999: 16 MB (3.4 µs + 2) against 10% of 31 µs: not by this rule; small sizes never.
        assert!(!pays(Shape { m: 1023, n: 1001, k: 999 }));
        assert!(!pays(Shape::square(255)) && !pays(Shape { m: 3, n: 5, k: 7 }));
        // Skinny M: the copy of B (K×N) is as large as the product's work per row of A; it does not pay.
        assert!(!pays(Shape { m: 8, n: 4097, k: 4097 }));
    }
}
