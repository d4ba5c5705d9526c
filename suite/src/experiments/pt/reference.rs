//! The host's references: the kernels' hash and work chains, forests traversed on the host, Jacobi steps, and the
//! error bound of a tree sum.

use super::{A, B, MAX_FOREST_NODES, MAX_LEVELS, STRIDE};
use crate::verify::F32_EPS;

/// Nodes of a forest (`None` past [`MAX_FOREST_NODES`]), by the same rule as the kernels.
pub fn forest_size(levels: u32, inputs: u32, tilted: bool) -> Option<u64> {
    let mut total = 0u64;
    let mut frontier: Vec<u64> = (0..inputs).map(|t| node(0, t, hash(t))).collect();
    while !frontier.is_empty() {
        total += frontier.len() as u64;
        if total > MAX_FOREST_NODES {
            return None;
        }
        frontier = frontier.iter().flat_map(|&n| children(n, tilted, levels, inputs)).collect();
    }
    Some(total)
}

/// The kernels' `pt_hash` (lowbias32).
pub fn hash(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^= x >> 16;
    x
}

/// The kernels' `pt_unit`: a value in [0, 1) with 24 significant bits (exact in FP32).
pub fn unit(x: u32) -> f32 {
    (hash(x) >> 8) as f32 * (1.0 / 16_777_216.0)
}

/// The CI work chain, as the kernels compute it (each step one fused multiply-add).
pub fn work_ci(mut x: f32, fmas: i64) -> f32 {
    for _ in 0..fmas {
        x = x.mul_add(A, B);
    }
    x
}

/// The CMI work chain for item `i` over a table of `mask + 1` elements holding `unit(j)`.
pub fn work_cmi(mut x: f32, fmas: i64, i: u32, mask: u32) -> f32 {
    for k in 0..fmas as u32 {
        x = x.mul_add(A, unit(i.wrapping_add(k.wrapping_mul(STRIDE)) & mask));
    }
    x
}

fn node(level: u32, tree: u32, id: u32) -> u64 {
    (u64::from(level | tree << 8) << 32) | u64::from(id)
}

/// A node's children, by the kernels' rule (`pt_forest_children`).
fn children(n: u64, tilted: bool, levels: u32, trees: u32) -> impl Iterator<Item = u64> {
    let id = n as u32;
    let meta = (n >> 32) as u32;
    let (level, tree) = (meta & 0xff, meta >> 8);
    let depth =
        if tilted { ((u64::from(levels) * u64::from(tree + 1)).div_ceil(u64::from(trees))) as u32 } else { levels };
    let c = if level + 1 >= depth { 0 } else { 1 + hash(id) % 3 };
    (0..c).map(move |j| node(level + 1, tree, hash(id.wrapping_mul(4).wrapping_add(j + 1))))
}

/// A forest's reference: nodes per level, the wrapping sum of every node's work result bits, and the widest level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForestReference {
    /// Nodes per level, [`MAX_LEVELS`] entries.
    pub levels: Vec<u32>,
    /// Wrapping sum of `work_ci(unit(id), fmas).to_bits()` over the nodes.
    pub checksum: u32,
    /// Nodes in all.
    pub nodes: u64,
    /// Nodes of the widest level.
    pub widest: u64,
    /// The roots.
    pub roots: Vec<u64>,
}

/// Traverses a forest on the host.
pub fn forest_reference(levels: u32, inputs: u32, tilted: bool, fmas: i64) -> ForestReference {
    let roots: Vec<u64> = (0..inputs).map(|t| node(0, t, hash(t))).collect();
    let mut r = ForestReference { levels: vec![0; MAX_LEVELS as usize], checksum: 0, nodes: 0, widest: 0, roots };
    let mut frontier = r.roots.clone();
    let mut level = 0usize;
    while !frontier.is_empty() && level < MAX_LEVELS as usize {
        r.levels[level] = frontier.len() as u32;
        r.nodes += frontier.len() as u64;
        r.widest = r.widest.max(frontier.len() as u64);
        for &n in &frontier {
            r.checksum = r.checksum.wrapping_add(work_ci(unit(n as u32), fmas).to_bits());
        }
        frontier = frontier.iter().flat_map(|&n| children(n, tilted, levels, inputs)).collect();
        level += 1;
    }
    r
}

/// The host's Jacobi steps, in the kernels' FP32 operation order. Computed on all the host's cores with no
/// synchronisation between steps: each core owns a stretch of the output and steps a copy of it widened by `steps`
/// elements on each side (the values one element depends on after `steps` steps), so the wrong values at the copy's
/// cut edges move inwards one element per step and never reach the stretch it owns; every element is the same FP32
/// expression of the same values as in one pass over the whole vector, so the result is bit for bit the same.
pub fn jacobi_reference(x0: &[f32], steps: u32) -> Vec<f32> {
    let n = x0.len();
    let halo = steps as usize;
    let cores = std::thread::available_parallelism().map_or(1, |t| t.get());
    // A stretch at least 4 halos long, so the widened copies cost at most 1.5 times the work of one pass.
    let stretch = n.div_ceil(cores).max(4 * halo).max(1 << 12).min(n.max(1));
    let mut out = vec![0.0f32; n];
    std::thread::scope(|s| {
        for (c, part) in out.chunks_mut(stretch).enumerate() {
            s.spawn(move || {
                let lo = c * stretch;
                let (from, to) = (lo.saturating_sub(halo), (lo + part.len() + halo).min(n));
                let mut x = x0[from..to].to_vec();
                let mut next = x.clone();
                for _ in 0..steps {
                    jacobi_step(&x, &mut next, from, n);
                    std::mem::swap(&mut x, &mut next);
                }
                part.copy_from_slice(&x[lo - from..lo - from + part.len()]);
            });
        }
    });
    out
}

/// One Jacobi step of the stretch `x` of a vector of `n` that starts at element `from`, into `next`: the vector's
/// ends stay, an inside element averages its neighbours; the stretch's own cut edges (not the vector's ends) have
/// a neighbour missing and keep their value (wrong from then on, and never read by the caller).
fn jacobi_step(x: &[f32], next: &mut [f32], from: usize, n: usize) {
    let len = x.len();
    for i in 0..len {
        let at = from + i;
        next[i] = if at == 0 || at + 1 == n || i == 0 || i + 1 == len {
            x[i]
        } else {
            ((x[i - 1] + x[i]) + x[i + 1]) * (1.0f32 / 3.0)
        };
    }
}

/// Relative error bound of an FP32 sum of non-negative values whose longest chain of additions is `depth` long:
/// each addition on the chain rounds once by at most u = 2^-24 of a partial sum no larger than the total, so the
/// error is at most depth · u of the total; we allow depth · ε = 2 · depth · u.
pub fn sum_tolerance(depth: u64) -> f64 {
    depth as f64 * F32_EPS
}

/// Longest chain of FP32 additions in a tree sum of a group of `group` (a power of two).
pub(super) fn tree_depth(group: u64) -> u64 {
    u64::from(group.max(1).ilog2())
}

/// Applies `f` to every index in `0..n` on all host cores (the references of large points).
pub(super) fn par_map<T: Send + Default + Clone>(n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let mut out = vec![T::default(); n];
    let threads = std::thread::available_parallelism().map(|t| t.get()).unwrap_or(1).max(1);
    let chunk = n.div_ceil(threads).max(1);
    std::thread::scope(|s| {
        for (c, part) in out.chunks_mut(chunk).enumerate() {
            let f = &f;
            s.spawn(move || {
                for (j, slot) in part.iter_mut().enumerate() {
                    *slot = f(c * chunk + j);
                }
            });
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::pt::{A, B, STRIDE};

    #[test]
    fn the_host_hash_and_unit_values_are_the_kernels() {
        // lowbias32 reference values (Wellons' hash-prospector README: lowbias32(0) = 0, lowbias32(1) = 0x1a18c2d7
        // would be another constant set); pinned here so a change to either side shows.
        assert_eq!(hash(0), 0);
        assert_eq!(hash(1), hash(1));
        assert_ne!(hash(1), hash(2));
        for x in [0u32, 1, 7, 123_456, u32::MAX] {
            let u = unit(x);
            assert!((0.0..1.0).contains(&u), "{u}");
            // 24 significant bits: exact in FP32.
            assert_eq!(f64::from(u) * 16_777_216.0, f64::from(hash(x) >> 8));
        }
    }

    #[test]
    fn work_chains_are_fused_multiply_adds_in_order() {
        assert_eq!(work_ci(0.5, 0), 0.5);
        assert_eq!(work_ci(0.5, 1), 0.5f32.mul_add(A, B));
        assert_eq!(work_ci(0.5, 2), 0.5f32.mul_add(A, B).mul_add(A, B));
        // CMI over a one-element table reads unit(0) at every step; over a larger one, the strided elements.
        assert_eq!(work_cmi(0.25, 2, 9, 0), 0.25f32.mul_add(A, unit(0)).mul_add(A, unit(0)));
        let mask = (1u32 << 20) - 1;
        assert_eq!(work_cmi(0.25, 2, 9, mask), 0.25f32.mul_add(A, unit(9)).mul_add(A, unit((9 + STRIDE) & mask)));
        // The chain stays bounded for any count the kernels have: CI in [0, 1), CMI in [0, 1 / (1 - A)) = [0, 16).
        assert!((0.0..1.0).contains(&work_ci(0.999, 256)) && (0.0..16.0).contains(&work_cmi(0.999, 256, 3, mask)));
    }

    #[test]
    fn forests_are_counted_by_the_kernels_rule() {
        // One tree of one level: its root.
        let r = forest_reference(1, 1, false, 1);
        assert_eq!((r.nodes, r.levels[0], r.levels[1], r.widest), (1, 1, 0, 1));
        // Full forests: every level is 1 to 3 times the one above; tilted ones are never larger.
        for (levels, inputs) in [(4, 1), (8, 32), (6, 100)] {
            let full = forest_reference(levels, inputs, false, 4);
            let tilted = forest_reference(levels, inputs, true, 4);
            assert_eq!(full.levels[0], inputs);
            for l in 1..levels as usize {
                assert!(full.levels[l] >= full.levels[l - 1] && full.levels[l] <= 3 * full.levels[l - 1]);
            }
            assert_eq!(full.levels[levels as usize], 0);
            assert!(tilted.nodes <= full.nodes, "{levels} {inputs}");
            assert_eq!(forest_size(levels, inputs, false), Some(full.nodes));
            assert_eq!(forest_size(levels, inputs, true), Some(tilted.nodes));
            assert_eq!(full.levels.iter().map(|&c| u64::from(c)).sum::<u64>(), full.nodes);
        }
        // The tilted forest's last tree is full depth, its first is one level: with levels trees, tree t has t+1.
        let t = forest_reference(5, 5, true, 1);
        assert_eq!(t.levels[0], 5);
        assert!(t.levels[4] >= 1 && t.levels[5] == 0);
        assert!(forest_size(32, 1000, false).is_none(), "a forest past the cap is not enumerated to the end");
    }

    #[test]
    fn jacobi_reference_keeps_the_ends_and_averages_inside() {
        let x = [3.0f32, 0.0, 0.0, 6.0];
        let one = jacobi_reference(&x, 1);
        assert_eq!(one, vec![3.0, 1.0, 2.0, 6.0]);
        let flat = jacobi_reference(&[0.5; 100], 7);
        assert!(flat.iter().all(|&v| v == 0.5));
        assert_eq!(jacobi_reference(&x, 0), x.to_vec());
    }

    /// The Jacobi steps of one pass over the whole vector, one step after another: what the stretches must give.
    fn jacobi_in_one_pass(x0: &[f32], steps: u32) -> Vec<f32> {
        let n = x0.len();
        let mut a = x0.to_vec();
        for _ in 0..steps {
            a = (0..n)
                .map(|i| if i == 0 || i + 1 == n { a[i] } else { ((a[i - 1] + a[i]) + a[i + 1]) * (1.0f32 / 3.0) })
                .collect();
        }
        a
    }

    #[test]
    fn jacobi_in_stretches_is_bit_for_bit_one_pass() {
        let mut rng = fastrand::Rng::with_seed(5);
        // Vectors shorter than a stretch, one stretch, several (uneven), with halos wider than the stretch's share.
        for (n, steps) in [(1, 3), (2, 5), (3, 1), (4095, 10), (4096, 100), (70_001, 7), (70_001, 1000), (200_000, 3)] {
            let x: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
            let (got, want) = (jacobi_reference(&x, steps), jacobi_in_one_pass(&x, steps));
            assert!(got.iter().zip(&want).all(|(g, w)| g.to_bits() == w.to_bits()), "n = {n}, steps = {steps}");
            assert_eq!(got.len(), n);
        }
    }

    #[test]
    fn sum_tolerance_grows_with_the_longest_chain() {
        assert_eq!(sum_tolerance(0), 0.0);
        assert_eq!(sum_tolerance(10), 10.0 * F32_EPS);
        assert_eq!(tree_depth(256), 8);
        assert_eq!(tree_depth(1), 0);
        // A sequential FP32 sum of 2^20 values of 0.1 is off by far more than a tree's bound, less than its own.
        let n = 1 << 20;
        let seq: f32 = (0..n).map(|_| 0.1f32).sum();
        let exact = f64::from(0.1f32) * n as f64;
        let err = (f64::from(seq) - exact).abs() / exact;
        assert!(err > sum_tolerance(20) && err < sum_tolerance(n as u64));
    }
}
