//! Random inputs drawn on all the host's cores: a vector is cut into blocks of [`BLOCK`] values, each drawn by its
//! own generator seeded from the vector's seed and the block's index, so the values depend on the seed alone (not
//! on how many cores drew them) and a 2^26-element input takes a fraction of one core's time.

/// Values per block: each block has its own generator.
pub const BLOCK: usize = 1 << 16;

/// `len` values uniform in [`low`, `high`), from a fresh seed; an allocation the host cannot make is an error
/// (naming the size), not an abort.
pub fn uniform_f32(len: usize, low: f32, high: f32) -> Result<Vec<f32>, String> {
    uniform_f32_seeded(len, low, high, fastrand::u64(..))
}

/// [`uniform_f32`] from `seed`: the same seed gives the same values.
pub fn uniform_f32_seeded(len: usize, low: f32, high: f32, seed: u64) -> Result<Vec<f32>, String> {
    // Reserved first so that a size the host cannot hold is a message; the vector itself is allocated zeroed (pages
    // the kernel maps on first touch, so the cores below touch them in parallel).
    Vec::<f32>::new().try_reserve_exact(len).map_err(|_| format!("cannot allocate {len} values on the host"))?;
    let mut values = vec![0.0f32; len];
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per_thread = len.div_ceil(cores).div_ceil(BLOCK).max(1) * BLOCK;
    std::thread::scope(|scope| {
        for (t, part) in values.chunks_mut(per_thread).enumerate() {
            scope.spawn(move || {
                for (b, block) in part.chunks_mut(BLOCK).enumerate() {
                    let index = (t * per_thread / BLOCK + b) as u64;
                    let mut rng = fastrand::Rng::with_seed(seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15));
                    block.iter_mut().for_each(|v| *v = low + (high - low) * rng.f32());
                }
            });
        }
    });
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_depend_on_the_seed_alone_and_stay_in_range() {
        let len = 3 * BLOCK + 17;
        let a = uniform_f32_seeded(len, -1.0, 1.0, 7).unwrap();
        assert_eq!(a, uniform_f32_seeded(len, -1.0, 1.0, 7).unwrap());
        assert_ne!(a, uniform_f32_seeded(len, -1.0, 1.0, 8).unwrap());
        assert!(a.iter().all(|v| (-1.0..1.0).contains(v)), "in [-1, 1)");
        // Blocks are drawn by generators of their own: no two blocks repeat each other.
        assert_ne!(a[..BLOCK], a[BLOCK..2 * BLOCK]);
        // A prefix of a longer vector is the shorter one: the values do not depend on the length either.
        assert_eq!(a[..BLOCK + 5], uniform_f32_seeded(BLOCK + 5, -1.0, 1.0, 7).unwrap()[..]);
        let unit = uniform_f32_seeded(1000, 1.0, 2.0, 1).unwrap();
        assert!(unit.iter().all(|v| (1.0..2.0).contains(v)), "in [1, 2)");
        assert!(uniform_f32(usize::MAX / 8, 0.0, 1.0).unwrap_err().contains("cannot allocate"));
    }
}
