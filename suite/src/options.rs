//! Turning command-line values into validated options. Errors name the flag to fix.

use std::path::PathBuf;

/// A flag's value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{flag}: {problem}")]
pub struct Error {
    /// The flag, e.g. `--sizes`.
    pub flag: &'static str,
    /// What is wrong and what is accepted.
    pub problem: String,
}

/// Parses one size: a positive integer (`1000`) or a power of two (`2^20`).
pub fn parse_size(flag: &'static str, text: &str) -> Result<usize, Error> {
    let text = text.trim();
    let bad = || Error { flag, problem: format!("`{text}` is not a size: use a positive integer or 2^N") };
    let value = if let Some(exp) = text.strip_prefix("2^") {
        let exp: u32 = exp.parse().map_err(|_| bad())?;
        1usize.checked_shl(exp).filter(|_| exp < usize::BITS).ok_or_else(bad)?
    } else {
        text.parse::<usize>().map_err(|_| bad())?
    };
    if value == 0 {
        return Err(Error { flag, problem: "sizes must be at least 1".into() });
    }
    Ok(value)
}

/// Parses a list of sizes; an empty list gives `default`.
pub fn parse_sizes(flag: &'static str, texts: &[String], default: &[usize]) -> Result<Vec<usize>, Error> {
    if texts.is_empty() {
        return Ok(default.to_vec());
    }
    texts.iter().map(|t| parse_size(flag, t)).collect()
}

/// Checks the repetition count: at least one timed launch, so there is a median to report.
pub fn check_reps(reps: u32) -> Result<u32, Error> {
    if reps == 0 {
        return Err(Error { flag: "--reps", problem: "at least 1 timed repetition is needed".into() });
    }
    Ok(reps)
}

/// Most groups a 1-D grid may have: NVIDIA's `gridDim.x` limit, 2³¹ − 1 (HIP allows more groups, but not more than
/// 2³² − 1 items in all, which the 32-bit index rule below already enforces).
pub const MAX_GROUPS_X: u64 = (1 << 31) - 1;

/// Most groups along y or z: NVIDIA's `gridDim.y` / `gridDim.z` limit.
pub const MAX_GROUPS_YZ: u64 = 65_535;

/// Why `n` elements, one per item in groups of `group` items, cannot be run by a kernel that takes `unsigned n`
/// and computes its index as `blockIdx.x * blockDim.x + threadIdx.x` in 32 bits: n must fit a u32, and the grid's
/// last index, groups · group − 1, must too (a larger one wraps around and writes a wrong element).
pub fn index_u32_problem(n: u64, group: u32) -> Option<String> {
    if group == 0 {
        return Some("groups of 0 items".into());
    }
    let groups = n.div_ceil(u64::from(group));
    let items = groups.checked_mul(u64::from(group));
    if n > u64::from(u32::MAX) || items.is_none_or(|items| items - 1 > u64::from(u32::MAX)) {
        return Some(format!(
            "n = {n} in groups of {group} exceeds the kernel's 32-bit element index (at most {} elements)",
            ((1u64 << 32) / u64::from(group) * u64::from(group)).min(u64::from(u32::MAX))
        ));
    }
    if groups > MAX_GROUPS_X {
        return Some(format!("n = {n} needs {groups} groups of {group}; a grid holds at most {MAX_GROUPS_X}"));
    }
    None
}

/// Bytes of arrays of `counts` elements of `size` bytes each, or `None` if the total does not fit a u64.
pub fn bytes_of(counts: &[u64], size: u64) -> Option<u64> {
    counts.iter().try_fold(0u64, |sum, &c| sum.checked_add(c.checked_mul(size)?))
}

/// The memory a run may use: the device's (total, in bytes) and the host's (what this process may still allocate,
/// in bytes; `None` where it cannot be read, and then not checked).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Memory {
    /// Device memory, bytes.
    pub device: u64,
    /// Host memory available, bytes.
    pub host: Option<u64>,
}

impl Memory {
    /// The device's memory and the host memory this process may still use now: the smallest of `/proc/meminfo`,
    /// its cgroup's limit and Slurm's allocation ([`crate::host::HostMemory`]).
    pub fn of(device_bytes: u64) -> Memory {
        Memory { device: device_bytes, host: crate::host::HostMemory::read().available().map(|f| f.available_bytes) }
    }

    /// Why a point needing `device` bytes on the device and `host` bytes on the host does not fit (`None` for a
    /// byte count that overflowed).
    pub fn problem(&self, device: Option<u64>, host: Option<u64>) -> Option<String> {
        let gib = |b: u64| b as f64 / f64::from(1u32 << 30);
        let (Some(device), Some(host)) = (device, host) else {
            return Some("its byte count overflows 64 bits".into());
        };
        if device > self.device {
            return Some(format!(
                "needs {:.1} GiB of device memory; the device has {:.1} GiB",
                gib(device),
                gib(self.device)
            ));
        }
        match self.host {
            Some(have) if host > have => Some(format!(
                "needs {:.1} GiB of host memory for its inputs and checks; {:.1} GiB are available to this process \
                 (the smallest of MemAvailable, its cgroup's limit and the Slurm allocation: `suite info` lists \
                 them; under Slurm ask for more with --mem-per-gpu)",
                gib(host),
                gib(have)
            )),
            _ => None,
        }
    }
}

/// How to run a sweep: the shared flags of `suite run`, checked. The runner, the timing of each point and the
/// estimate all read it, so it lives here, below them.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Results folder.
    pub out_dir: PathBuf,
    /// Skip points already measured in an existing CSV instead of refusing to overwrite it.
    pub resume: bool,
    /// Run only this shard of the points.
    pub shard: Option<Shard>,
    /// Untimed launches before timing.
    pub warmup: u32,
    /// Timed launches (at most; see `time_budget_s`).
    pub reps: u32,
    /// Time one point may spend in warm-up and timed launches, in seconds. A point whose single launch is slow
    /// gets fewer launches (never fewer than 3 timed), so a naive kernel at 8192 does not take minutes.
    pub time_budget_s: f64,
    /// How each repetition's batch of launches is enqueued.
    pub timing: crate::device::Timing,
    /// A point estimated to take longer than this, in seconds, is not run but written as an `invalid` row.
    pub max_point_s: f64,
    /// Whether the GPU's clocks, power and throttle reasons are sampled during each point's timed repetitions
    /// (`--no-telemetry` turns it off). Not part of the fingerprint: it changes no timed figure, only whether the
    /// clock columns are filled.
    pub telemetry: bool,
}

/// Every `n`-th point starting at `index` (`--shard index/count`, 0-based), for one process per GPU under `srun`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This process's shard, 0-based.
    pub index: usize,
    /// Number of shards.
    pub count: usize,
}

impl std::str::FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || format!("--shard wants i/n with 0 <= i < n (e.g. 0/8 for $SLURM_LOCALID/8), not `{s}`");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count) = (i.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_accept_integers_and_powers_of_two() {
        let cases: [(&str, Option<usize>); 8] = [
            ("1000", Some(1000)),
            (" 3000 ", Some(3000)),
            ("2^10", Some(1024)),
            ("2^0", Some(1)),
            ("0", None),
            ("-5", None),
            ("2^99", None),
            ("1e3", None),
        ];
        for (text, want) in cases {
            assert_eq!(parse_size("--sizes", text).ok(), want, "{text}");
        }
        let err = parse_size("--sizes", "abc").unwrap_err();
        assert_eq!(err.to_string(), "--sizes: `abc` is not a size: use a positive integer or 2^N");
    }

    #[test]
    fn the_32_bit_index_rule_is_exact_at_its_edges() {
        let max = u64::from(u32::MAX);
        assert_eq!(index_u32_problem(max, 4), None);
        assert!(index_u32_problem(max + 1, 4).is_some());
        // Groups of 256 tile 2^32 exactly: every n < 2^32 fits.
        assert_eq!(index_u32_problem(max, 256), None);
        // Groups of 1000: at most 4294967 whole groups fit 2^32 items, so n up to 4294967000.
        assert_eq!(index_u32_problem(4_294_967_000, 1000), None);
        let why = index_u32_problem(4_294_967_001, 1000).unwrap();
        assert!(why.contains("at most 4294967000 elements"), "{why}");
        assert!(index_u32_problem(u64::MAX, 1024).is_some());
        assert!(index_u32_problem(5, 0).is_some());
        // Groups of one item: the index fits, the grid does not.
        assert!(index_u32_problem(MAX_GROUPS_X + 1, 1).unwrap().contains("grid"));
    }

    #[test]
    fn byte_counts_and_memory_checks_never_wrap() {
        assert_eq!(bytes_of(&[1, 2, 3], 4), Some(24));
        assert_eq!(bytes_of(&[u64::MAX / 4 + 1], 4), None);
        assert_eq!(bytes_of(&[u64::MAX / 8 + 1, u64::MAX / 8 + 1], 4), None);
        assert_eq!(bytes_of(&[u64::MAX / 8, u64::MAX / 8 + 1], 4), Some(u64::MAX - 3));
        let mem = Memory { device: 1000, host: Some(500) };
        assert_eq!(mem.problem(Some(1000), Some(500)), None);
        assert!(mem.problem(Some(1001), Some(1)).unwrap().contains("device memory"));
        assert!(mem.problem(Some(1), Some(501)).unwrap().contains("host memory"));
        assert!(mem.problem(None, Some(1)).unwrap().contains("overflows"));
        assert_eq!(Memory { device: 10, host: None }.problem(Some(10), Some(u64::MAX)), None);
    }

    #[test]
    fn empty_list_means_default() {
        assert_eq!(parse_sizes("--sizes", &[], &[7]).unwrap(), vec![7]);
        assert_eq!(parse_sizes("--sizes", &["1".into(), "2^3".into()], &[7]).unwrap(), vec![1, 8]);
        assert!(check_reps(0).is_err());
    }
}
