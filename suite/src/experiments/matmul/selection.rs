//! Which kernels of the ladder a sweep runs: by name or family (`--kernels`, `--tiles`), and each architecture's
//! default set per precision from the table (`rungs.rs`). The types are in `ladder.rs`, the rows in `rungs.rs`.

use super::ladder::Variant;
use super::rungs::{ARCH_DEFAULTS, VARIANTS};
use crate::precision::Precision;

/// The `--kernels` names of `arch`'s default set in `precision` (see [`ARCH_DEFAULTS`]); none (every kernel) where no
/// row matches.
pub fn default_names(arch: &str, precision: Precision) -> &'static [&'static str] {
    ARCH_DEFAULTS.iter().find(|d| d.arch_prefixes.iter().any(|p| arch.starts_with(p))).map_or(
        &[],
        |d| match precision {
            Precision::F32 => d.kernels,
            Precision::F64 => d.f64_kernels,
        },
    )
}

/// The default kernels for `arch` in `precision` (see [`ARCH_DEFAULTS`]), restricted to the tile sizes `tiles` (all
/// if empty).
pub fn default_kernels(
    arch: &str,
    precision: Precision,
    tiles: &[u32],
) -> Result<Vec<&'static Variant>, crate::options::Error> {
    select_kernels(&owned(default_names(arch, precision)), tiles)
}

/// Names as `--kernels` holds them.
pub fn owned(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

/// Whether no kernel of `family` can run in `precision` on `arch` (the whole rung lacks an instance or is not
/// compiled there): its rows then say so once per size, not once per shape.
pub fn family_absent(family: &str, precision: Precision, arch: &str) -> bool {
    VARIANTS.iter().filter(|v| v.family == family).all(|v| v.problem_on(precision, arch).is_some())
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
    Ok(selected(names, tiles))
}

/// The kernels `names` select, in ladder order, unchecked: a kernel by its name, or a family's kernels within the
/// tile sizes `tiles` (all if empty); every kernel within `tiles` if `names` is empty. A name or tile size no kernel
/// has selects nothing ([`select_kernels`] refuses them).
pub fn selected(names: &[String], tiles: &[u32]) -> Vec<&'static Variant> {
    let tile_ok = |v: &Variant| v.tile_m.is_none_or(|m| tiles.is_empty() || tiles.contains(&m));
    if names.is_empty() {
        return VARIANTS.iter().filter(|v| tile_ok(v)).collect();
    }
    VARIANTS.iter().filter(|v| names.iter().any(|n| n == v.name || (n == v.family && tile_ok(v)))).collect()
}
