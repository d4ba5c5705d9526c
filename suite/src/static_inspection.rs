//! `suite kernels compare`: a static comparison of every kernel across architectures, with no GPU.
//!
//! Each kernel source is compiled for each architecture; the resources come from the code object (AMD: the
//! `NT_AMDGPU_METADATA` note, as `suite kernels inspect` reads it) or from `cuobjdump --dump-resource-usage` on the
//! cubin (NVIDIA: the driver is not needed), and the theoretical occupancy from the suite's calculator
//! ([`crate::occupancy_calculator`]), for groups of the kernel's largest size (its launch bounds; 1024 without).
//!
//! RDNA architectures (gfx10, gfx11, gfx12) run wave32 or wave64: each is compiled twice, as the compiler builds it
//! by default (wave32) and with `-mwavefrontsize64`, so the same code is compared in both wave sizes on one
//! architecture. Everything here is static: nothing is measured.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use object::elf::FileHeader64;
use object::read::elf::{FileHeader, SectionHeader};
use object::Endianness;

use crate::code_objects::{compile, Error, KernelStore, Result, Source};
use crate::device::{Arch, Platform, WaveSize};
use crate::occupancy_calculator::{Occupancy, Profile, Resources};
use crate::report::plot::{Axis, LinePlot, Series};

/// One architecture as compiled for the comparison: RDNA appears twice, once per wave size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The architecture.
    pub arch: Arch,
    /// Whether `-mwavefrontsize64` is added (RDNA only).
    pub wave64: bool,
}

impl Target {
    /// `gfx90a`, `sm_90`, `gfx1100-wave32`, `gfx1100-wave64`: the column name in the tables and the plot legend.
    pub fn label(&self) -> String {
        match (is_rdna(&self.arch), self.wave64) {
            (false, _) => self.arch.to_string(),
            (true, false) => format!("{}-wave32", self.arch),
            (true, true) => format!("{}-wave64", self.arch),
        }
    }

    /// The wave size the code is built for.
    pub fn wave_size(&self) -> WaveSize {
        match self.arch.platform() {
            Platform::Nvidia => WaveSize(32),
            Platform::Amd if is_rdna(&self.arch) && !self.wave64 => WaveSize(32),
            Platform::Amd => WaveSize(64),
        }
    }
}

/// Whether `arch` is RDNA (gfx10, gfx11, gfx12: wave32 by default, wave64 on request).
pub fn is_rdna(arch: &Arch) -> bool {
    ["gfx10", "gfx11", "gfx12"].iter().any(|p| arch.as_str().starts_with(p))
}

/// The targets for `archs`, in order: each RDNA architecture as wave32 then wave64.
pub fn targets(archs: &[Arch]) -> Vec<Target> {
    archs
        .iter()
        .flat_map(|a| {
            let both = if is_rdna(a) { vec![false, true] } else { vec![false] };
            both.into_iter().map(move |wave64| Target { arch: a.clone(), wave64 })
        })
        .collect()
}

/// One kernel on one target.
#[derive(Debug, Clone)]
pub struct Row {
    /// [`Target::label`].
    pub target: String,
    /// Items per wave.
    pub wave_size: WaveSize,
    /// Kernel source, e.g. `matmul`.
    pub source: String,
    /// Kernel symbol.
    pub kernel: String,
    /// Group size the occupancy is computed for: the kernel's largest (launch bounds).
    pub group_size: u32,
    /// VGPRs (AMD: on gfx90a and gfx942 VGPRs and AGPRs together, as the metadata counts them) or registers per
    /// thread (NVIDIA).
    pub registers: u32,
    /// AGPRs of those (gfx90a, gfx942), where the architecture has them.
    pub agprs: Option<u32>,
    /// SGPRs per wave (AMD).
    pub sgprs: Option<u32>,
    /// Static LDS / shared memory per group in bytes (NVIDIA: without the 1 KiB the system reserves per block,
    /// which the calculator adds).
    pub lds_bytes: u32,
    /// Scratch per item in bytes (AMD private segment; NVIDIA local memory plus stack): spills live here.
    pub scratch_bytes: u32,
    /// The compiler that built the code object, with its version ([`KernelStore::built_by`]), e.g. `hipcc
    /// 5.2.21153-0 (clang 15.0.6)`: register counts depend on it.
    pub compiler: String,
    /// Where the resources were read.
    pub read_from: &'static str,
    /// The calculator's occupancy, or why none fits.
    pub occupancy: std::result::Result<Occupancy, String>,
}

/// Compiles `sources` for `target` and reads every kernel's resources. `cuobjdump` is needed for NVIDIA targets.
pub fn rows(store: &KernelStore, target: &Target, sources: &[&Source], cuobjdump: Option<&Path>) -> Result<Vec<Row>> {
    let mut out = Vec::new();
    let compiler = store.built_by(target.arch.platform())?;
    for source in sources {
        match target.arch.platform() {
            Platform::Amd => {
                let bytes = if target.wave64 {
                    let compiler = store.compiler(Platform::Amd)?;
                    let mut flags = compile::flags(&compiler, &target.arch);
                    flags.push("-mwavefrontsize64".into());
                    compile::compile_with_flags(&compiler, source, &target.arch, &flags)?
                } else {
                    store.code_object(source, &target.arch)?.bytes
                };
                let info = crate::code_objects::check_arch(&bytes, &target.arch)?;
                for k in &info.amd_kernels {
                    let occupancy = Profile::for_arch(&target.arch, Some(k.wave_size))
                        .and_then(|p| p.occupancy(&Resources::from_amd_kernel(k)))
                        .map_err(|e| e.to_string());
                    out.push(Row {
                        target: target.label(),
                        wave_size: k.wave_size,
                        source: source.name.to_string(),
                        kernel: k.name.clone(),
                        group_size: k.max_group_size,
                        registers: k.vgpr_count,
                        agprs: k.agpr_count,
                        sgprs: Some(k.sgpr_count),
                        lds_bytes: k.lds_bytes,
                        scratch_bytes: k.scratch_bytes,
                        compiler: compiler.clone(),
                        read_from: "code-object metadata",
                        occupancy,
                    });
                }
            }
            Platform::Nvidia => {
                let tool = cuobjdump.ok_or_else(|| Error::Corrupt {
                    reason: "reading NVIDIA resources statically needs cuobjdump: install the CUDA toolkit or `pip \
                             install nvidia-cuda-cuobjdump`, and put it on PATH or next to nvcc"
                        .into(),
                })?;
                let object = store.code_object(source, &target.arch)?;
                let usage = run_cuobjdump(tool, &object.bytes)?;
                let profile =
                    Profile::for_arch(&target.arch, None).map_err(|e| Error::Corrupt { reason: e.to_string() });
                for (name, u) in usage {
                    let group_size = nv_max_threads(&object.bytes, &name).unwrap_or(1024);
                    // cuobjdump counts the 1 KiB the system reserves per block into SHARED (a kernel with 2 KiB of
                    // tiles reads 3072); the calculator adds that reserve itself.
                    let reserved = profile.as_ref().map_or(0, |p| p.lds_reserved_bytes_per_group);
                    let lds_bytes = if u.shared > 0 { u.shared.saturating_sub(reserved) } else { 0 };
                    let res = Resources {
                        group_size,
                        registers_per_item: u.registers,
                        sgprs: None,
                        lds_bytes_per_group: lds_bytes,
                    };
                    let occupancy = match &profile {
                        Ok(p) => p.occupancy(&res).map_err(|e| e.to_string()),
                        Err(e) => Err(e.to_string()),
                    };
                    out.push(Row {
                        target: target.label(),
                        wave_size: WaveSize(32),
                        source: source.name.to_string(),
                        kernel: name,
                        group_size,
                        registers: u.registers,
                        agprs: None,
                        sgprs: None,
                        lds_bytes,
                        scratch_bytes: u.local.saturating_add(u.stack),
                        compiler: compiler.clone(),
                        read_from: "cuobjdump --dump-resource-usage",
                        occupancy,
                    });
                }
            }
        }
    }
    Ok(out)
}

/// One function's line of `cuobjdump --dump-resource-usage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NvUsage {
    /// Registers per thread (`REG`).
    pub registers: u32,
    /// Shared memory per block in bytes (`SHARED`), the system's reserve included where there is any.
    pub shared: u32,
    /// Local memory per thread in bytes (`LOCAL`).
    pub local: u32,
    /// Stack per thread in bytes (`STACK`).
    pub stack: u32,
}

/// Parses `cuobjdump --dump-resource-usage` output: ` Function NAME:` lines, each followed by a line of `KEY:value`
/// pairs. Functions in output order.
pub fn parse_resource_usage(text: &str) -> Vec<(String, NvUsage)> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(name) = line.strip_prefix("Function ").and_then(|l| l.strip_suffix(':')) {
            current = Some(name.to_string());
            continue;
        }
        let Some(name) = current.take() else { continue };
        let fields: BTreeMap<&str, u32> = line
            .split_whitespace()
            .filter_map(|kv| kv.split_once(':'))
            .filter_map(|(k, v)| Some((k, v.parse().ok()?)))
            .collect();
        let get = |k: &str| fields.get(k).copied().unwrap_or(0);
        out.push((
            name,
            NvUsage { registers: get("REG"), shared: get("SHARED"), local: get("LOCAL"), stack: get("STACK") },
        ));
    }
    out
}

fn run_cuobjdump(tool: &Path, cubin: &[u8]) -> Result<Vec<(String, NvUsage)>> {
    let dir = tempfile::tempdir().map_err(|source| Error::Io {
        action: "create a temporary folder for",
        path: std::env::temp_dir(),
        source,
        hint: ": set TMPDIR to a writable folder",
    })?;
    let path = dir.path().join("kernels.cubin");
    std::fs::write(&path, cubin).map_err(|source| Error::Io {
        action: "write",
        path: path.clone(),
        source,
        hint: ": set TMPDIR to a writable folder",
    })?;
    let out = Command::new(tool).arg("--dump-resource-usage").arg(&path).output().map_err(|source| Error::Io {
        action: "run",
        path: tool.to_path_buf(),
        source,
        hint: ": install cuobjdump (pip install nvidia-cuda-cuobjdump) or put it on PATH",
    })?;
    if !out.status.success() {
        return Err(Error::Corrupt {
            reason: format!("cuobjdump failed on a cubin the suite built: {}", String::from_utf8_lossy(&out.stderr)),
        });
    }
    Ok(parse_resource_usage(&String::from_utf8_lossy(&out.stdout)))
}

/// cuobjdump: `$CUOBJDUMP`, next to nvcc (the pip wheels put both in one folder), then `PATH`.
pub fn find_cuobjdump(nvcc: Option<&Path>) -> Option<PathBuf> {
    let candidates = std::env::var_os("CUOBJDUMP")
        .map(PathBuf::from)
        .into_iter()
        .chain(nvcc.and_then(|p| p.parent()).map(|d| d.join("cuobjdump")))
        .chain(
            std::env::var_os("PATH")
                .into_iter()
                .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
                .map(|d| d.join("cuobjdump")),
        );
    candidates.into_iter().find(|p| p.is_file())
}

/// The largest block a cubin's kernel `name` was built for (`__launch_bounds__`): the `EIATTR_MAX_THREADS`
/// attribute (0x05, three u32: x, y, z) of its `.nv.info.<name>` section. `None` without launch bounds.
pub fn nv_max_threads(cubin: &[u8], name: &str) -> Option<u32> {
    let header = FileHeader64::<Endianness>::parse(cubin).ok()?;
    let endian = header.endian().ok()?;
    let sections = header.sections(endian, cubin).ok()?;
    let wanted = format!(".nv.info.{name}");
    let section = sections.iter().find(|s| sections.section_name(endian, s).ok() == Some(wanted.as_bytes()))?;
    let data = section.data(endian, cubin).ok()?;
    // Records: u8 format, u8 attribute, u16 value; format 4 (EIFMT_SVAL) has that many bytes of value after it.
    let mut at = 0;
    while at + 4 <= data.len() {
        let (format, attribute) = (data[at], data[at + 1]);
        let half = u16::from_le_bytes([data[at + 2], data[at + 3]]) as usize;
        let value = if format == 4 { data.get(at + 4..at + 4 + half)? } else { &[][..] };
        if attribute == 0x05 && value.len() == 12 {
            let dim = |i: usize| u32::from_le_bytes([value[i], value[i + 1], value[i + 2], value[i + 3]]);
            return dim(0).checked_mul(dim(4))?.checked_mul(dim(8));
        }
        at += 4 + if format == 4 { half } else { 0 };
    }
    None
}

/// A light kernel (16 registers per item, no LDS; AMD: 16 SGPRs) in groups of `group` items: what the wave size
/// and the group limits alone allow.
fn light(group: u32, platform: Platform) -> Resources {
    let sgprs = (platform == Platform::Amd).then_some(16);
    Resources { group_size: group, registers_per_item: 16, sgprs, lds_bytes_per_group: 0 }
}

/// Resident items over item slots (groups per CU × group size over wave slots × wave size), in percent: the seed's
/// definition of occupancy (resident threads / thread contexts). A group of 96 items takes two waves of 64 (32 lanes
/// idle) but three warps of 32 (none idle).
pub fn item_occupancy(o: &Occupancy, group: u32, wave: WaveSize) -> f64 {
    let slots = f64::from(o.wave_slots_per_cu) * f64::from(wave.0);
    100.0 * f64::from(o.groups_per_cu) * f64::from(group) / slots
}

/// Plots against group size 1..1024 for a light kernel: resident items over item slots for the wave64 vs warp32
/// architectures (every non-RDNA target), the same for each RDNA architecture in wave32 and wave64, and the
/// calculator's wave occupancy for every target.
pub fn group_size_plots(targets: &[Target]) -> Vec<(String, LinePlot)> {
    let curve = |t: &Target, y: &dyn Fn(&Occupancy, u32) -> f64| -> Vec<(f64, f64)> {
        let Ok(p) = Profile::for_arch(&t.arch, Some(t.wave_size())) else { return Vec::new() };
        (1..=1024u32)
            .filter_map(|g| p.occupancy(&light(g, t.arch.platform())).ok().map(|o| (f64::from(g), y(&o, g))))
            .collect()
    };
    let label = |t: &Target| {
        let wave = match (t.arch.platform(), t.wave_size().0) {
            (Platform::Nvidia, _) => "warp32",
            (_, 64) => "wave64",
            _ => "wave32",
        };
        if is_rdna(&t.arch) {
            t.label()
        } else {
            format!("{} ({wave})", t.label())
        }
    };
    let plot = |group: &[&Target], title: &str, y_label: &str, y: &dyn Fn(&Occupancy, u32, WaveSize) -> f64| {
        let names = group.iter().map(|t| label(t)).collect::<Vec<_>>().join(" vs ");
        LinePlot {
            title: format!("{title}: {names} (static: the suite's occupancy calculator, no GPU)"),
            subtitle: Some("a light kernel (16 registers per item, no LDS) at every group size 1..1024".into()),
            x_label: "items per group".into(),
            y_label: y_label.into(),
            x_axis: Axis::Linear,
            y_axis: Axis::Linear,
            series: group.iter().map(|t| Series::line(label(t), curve(t, &|o, g| y(o, g, t.wave_size())))).collect(),
            y_max: Some(100.0),
            note: Some(
                "Calculated, not measured: limits from suite/src/occupancy_calculator/profiles.rs. A group takes whole waves: \
                 96 items are 2 waves of 64 (32 lanes idle) or 3 warps of 32."
                    .into(),
            ),
            ..LinePlot::default()
        }
    };
    let items = |o: &Occupancy, g: u32, w: WaveSize| item_occupancy(o, g, w);
    let items_label = "resident items / item slots (%)";
    let mut plots = Vec::new();
    let fixed: Vec<&Target> = targets.iter().filter(|t| !is_rdna(&t.arch)).collect();
    if !fixed.is_empty() {
        plots.push((
            "occupancy-items-vs-group-size.png".to_string(),
            plot(&fixed, "Resident items", items_label, &items),
        ));
    }
    let mut rdna: Vec<&Arch> = targets.iter().filter(|t| is_rdna(&t.arch)).map(|t| &t.arch).collect();
    rdna.dedup();
    for arch in rdna {
        let pair: Vec<&Target> = targets.iter().filter(|t| &t.arch == arch).collect();
        plots.push((
            format!("occupancy-items-vs-group-size-{arch}.png"),
            plot(&pair, "Resident items", items_label, &items),
        ));
    }
    let all: Vec<&Target> = targets.iter().collect();
    plots.push((
        "occupancy-waves-vs-group-size.png".to_string(),
        plot(&all, "Wave occupancy", "resident waves / wave slots (%)", &|o, _, _| o.percent),
    ));
    plots
}

/// The CSV header of `kernels.csv`.
pub const CSV_HEADER: &str = "target,wave_size,source,kernel,group_size,registers,agprs,sgprs,lds_bytes,scratch_bytes,\
waves_per_group,groups_per_cu,waves_per_cu,wave_slots_per_cu,occupancy_percent,limiter,compiler,read_from,note";

/// `rows` as CSV lines under [`CSV_HEADER`].
pub fn csv(rows: &[Row]) -> String {
    let mut text = format!("{CSV_HEADER}\n");
    for r in rows {
        let opt = |v: Option<u32>| v.map(|v| v.to_string()).unwrap_or_default();
        let (occ, note) = match &r.occupancy {
            Ok(o) => (
                format!(
                    "{},{},{},{},{:.1},{}",
                    o.waves_per_group, o.groups_per_cu, o.waves_per_cu, o.wave_slots_per_cu, o.percent, o.limiter
                ),
                String::new(),
            ),
            Err(e) => (",,,,,".to_string(), e.replace(['"', '\n'], "'")),
        };
        text.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{},\"{}\",{},\"{}\"\n",
            r.target,
            r.wave_size,
            r.source,
            r.kernel,
            r.group_size,
            r.registers,
            opt(r.agprs),
            opt(r.sgprs),
            r.lds_bytes,
            r.scratch_bytes,
            occ,
            r.compiler.replace('"', "'"),
            r.read_from,
            note
        ));
    }
    text
}

/// A Markdown report: per kernel, one row per target with registers, LDS, scratch and occupancy.
pub fn markdown(rows: &[Row], targets: &[Target], commands: &str) -> String {
    let labels: Vec<String> = targets.iter().map(Target::label).collect();
    let mut md = format!(
        "# Static kernel comparison: {}\n\nStatic: compiled here, resources read from the code objects (AMD: \
         code-object metadata; NVIDIA: `cuobjdump --dump-resource-usage`), occupancy from the suite's calculator \
         for groups of each kernel's largest size (its launch bounds, 1024 without). Nothing here is measured.\n\n\
         Made with (the compiler of each row is in its `compiler` column: register counts depend on it):\n\n```\n{commands}\n```\n\n",
        labels.join(", ")
    );
    md.push_str("Columns: registers per item (AMD VGPRs, on gfx90a VGPRs+AGPRs with the AGPRs in brackets; NVIDIA registers per thread), LDS bytes per group, scratch bytes per item (spills), waves per CU/SM resident and occupancy % with the binding limit.\n\n");
    md.push_str(
        "| source | kernel | group | target | compiler | registers | LDS B | scratch B | waves/CU | occupancy | limiter |\n",
    );
    md.push_str("|---|---|---:|---|---|---:|---:|---:|---:|---:|---|\n");
    let mut keys: Vec<(String, String)> = Vec::new();
    for r in rows {
        let key = (r.source.clone(), r.kernel.clone());
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    for (source, kernel) in &keys {
        // One row per target and compiler (`--compiler hipcc,zig` builds each AMD target twice).
        for label in &labels {
            for r in rows.iter().filter(|r| &r.source == source && &r.kernel == kernel && &r.target == label) {
                let regs = match r.agprs {
                    Some(a) if a > 0 => format!("{} ({a})", r.registers),
                    _ => r.registers.to_string(),
                };
                let (waves, occ, limiter) = match &r.occupancy {
                    Ok(o) => (
                        format!("{}/{}", o.waves_per_cu, o.wave_slots_per_cu),
                        format!("{:.1}%", o.percent),
                        o.limiter.to_string(),
                    ),
                    Err(e) => ("-".into(), "-".into(), e.clone()),
                };
                md.push_str(&format!(
                    "| {source} | {kernel} | {} | {label} | {} | {regs} | {} | {} | {waves} | {occ} | {limiter} |\n",
                    r.group_size, r.compiler, r.lds_bytes, r.scratch_bytes
                ));
            }
        }
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code_objects::test_support::compiler;

    fn arch(s: &str) -> Arch {
        Arch::parse(s).unwrap()
    }

    #[test]
    fn rdna_is_compared_in_both_wave_sizes() {
        let t = targets(&[arch("gfx90a"), arch("gfx1100"), arch("sm_90")]);
        let labels: Vec<String> = t.iter().map(Target::label).collect();
        assert_eq!(labels, ["gfx90a", "gfx1100-wave32", "gfx1100-wave64", "sm_90"]);
        let waves: Vec<u32> = t.iter().map(|t| t.wave_size().0).collect();
        assert_eq!(waves, [64, 32, 64, 32]);
        assert!(is_rdna(&arch("gfx1030")) && is_rdna(&arch("gfx1201")) && !is_rdna(&arch("gfx942")));
    }

    #[test]
    fn resource_usage_lines_parse() {
        let text = "\nResource usage:\n Common:\n  GLOBAL:0\n Function matmul_naive:\n  REG:30 STACK:0 SHARED:0 \
                    LOCAL:0 CONSTANT[0]:564 TEXTURE:0 SURFACE:0 SAMPLER:0\n Function k2:\n  REG:255 STACK:8 \
                    SHARED:25856 LOCAL:4 CONSTANT[0]:564\n";
        let got = parse_resource_usage(text);
        assert_eq!(
            got,
            [
                ("matmul_naive".to_string(), NvUsage { registers: 30, shared: 0, local: 0, stack: 0 }),
                ("k2".to_string(), NvUsage { registers: 255, shared: 25856, local: 4, stack: 8 }),
            ]
        );
    }

    /// The seed's occupancy (resident items / item slots) shows the wave quantisation: 96 items are 2 waves of 64
    /// with 32 lanes idle on gfx90a (16 groups per CU: 75%), 3 warps on an H100 (21 blocks: 98.4%).
    #[test]
    fn a_group_of_96_wastes_lanes_in_wave64_only() {
        let at = |a: &str, wave: u32, g: u32| {
            let p = Profile::for_arch(&arch(a), Some(WaveSize(wave))).unwrap();
            let o = p.occupancy(&light(g, arch(a).platform())).unwrap();
            item_occupancy(&o, g, WaveSize(wave))
        };
        assert_eq!(at("gfx90a", 64, 96), 75.0);
        assert!((at("sm_90", 32, 96) - 100.0 * 21.0 * 96.0 / 2048.0).abs() < 1e-9);
        assert_eq!(at("gfx90a", 64, 128), 100.0);
        assert_eq!(at("sm_90", 32, 128), 100.0);
        let plots = group_size_plots(&targets(&[arch("gfx90a"), arch("sm_90"), arch("gfx1100")]));
        let names: Vec<&str> = plots.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "occupancy-items-vs-group-size.png",
                "occupancy-items-vs-group-size-gfx1100.png",
                "occupancy-waves-vs-group-size.png"
            ]
        );
        assert!(plots.iter().all(|(_, p)| p.series.iter().all(|s| s.points.len() == 1024)));
    }

    /// The kernel descriptor `<name>.kd` of an AMD ELF code object (LLVM AMDGPUUsage, "Kernel Descriptor", code
    /// object v3 and later: 64 bytes): its compute_pgm_rsrc1 (bytes 48..52) and compute_pgm_rsrc3 (44..48).
    fn kernel_descriptor(elf: &[u8], name: &str) -> (u32, u32) {
        use object::{Object, ObjectSection, ObjectSymbol};
        let file = object::read::elf::ElfFile64::<Endianness>::parse(elf).unwrap();
        let symbol_name = format!("{name}.kd");
        let symbol = file.symbols().find(|s| s.name() == Ok(symbol_name.as_str())).unwrap_or_else(|| panic!("{name}"));
        let section = file.section_by_index(symbol.section_index().unwrap()).unwrap();
        let at = (symbol.address() - section.address()) as usize;
        let bytes = &section.data().unwrap()[at..at + 64];
        let word = |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        (word(48), word(44))
    }

    /// matmul's matrix rungs on gfx90a, statically, from the code object hipcc writes (no AMD GPU has run them),
    /// read as `suite kernels compare` and `suite kernels inspect` read them: both are present, neither uses scratch,
    /// and each reaches at least 50% occupancy at its group size (its launch bounds) with its registers counted as
    /// the hardware allocates them, AGPRs included.
    ///
    /// That the metadata's `.vgpr_count`, which the occupancy uses, is that allocation on gfx90a (VGPRs and AGPRs in
    /// one file) is checked for every kernel of the source against its kernel descriptor, which is what the
    /// hardware reads: compute_pgm_rsrc1's GRANULATED_WORKITEM_VGPR_COUNT (bits 5:0) is roundup(.vgpr_count, 8) / 8
    /// − 1, and where a kernel has AGPRs, compute_pgm_rsrc3's ACCUM_OFFSET (bits 5:0, the first AGPR / 4 − 1) puts
    /// them after the ArchVGPRs: .vgpr_count = (ACCUM_OFFSET + 1)·4 + .agpr_count. Some kernel of the source must
    /// have AGPRs (the NVIDIA-tuned double_buffer shapes spill into them), so the AGPR path is exercised; with hipcc
    /// 5.2 the matrix rungs keep their accumulators in ArchVGPRs (`.agpr_count` 0) under
    /// GPU_AMD_MIN_WAVES_PER_SIMD(4).
    #[test]
    fn mfma_rungs_fit_gfx90a_without_scratch_at_half_occupancy_counting_agprs() {
        let hipcc = compiler(Platform::Amd);
        let cache = tempfile::tempdir().unwrap();
        let store = KernelStore::with_cache_dir(None, cache.path().to_path_buf()).with_compiler(hipcc);
        let matmul = crate::code_objects::source("matmul").unwrap();
        let gfx90a = arch("gfx90a");
        let rows = rows(&store, &Target { arch: gfx90a.clone(), wave64: false }, &[matmul], None).unwrap();
        let object = store.code_object(matmul, &gfx90a).unwrap();
        let objects = crate::code_objects::bundle::amd_objects(&object.bytes).unwrap();
        let elf = objects.iter().find(|(a, _)| *a == gfx90a).map(|(_, bytes)| *bytes).unwrap_or(&object.bytes);
        let mut with_agprs = 0;
        for k in &object.info.amd_kernels {
            let (rsrc1, rsrc3) = kernel_descriptor(elf, &k.name);
            assert_eq!((rsrc1 & 63) + 1, k.vgpr_count.div_ceil(8), "{}: descriptor vs .vgpr_count: {k:?}", k.name);
            let agprs = k.agpr_count.unwrap_or(0);
            if agprs > 0 {
                with_agprs += 1;
                assert_eq!(((rsrc3 & 63) + 1) * 4 + agprs, k.vgpr_count, "{}: ACCUM_OFFSET + AGPRs", k.name);
            }
        }
        assert!(with_agprs > 0, "no kernel of matmul uses AGPRs on gfx90a: the unified count is not exercised");
        let mfma: Vec<&Row> = rows.iter().filter(|r| r.kernel.starts_with("matmul_mfma_")).collect();
        let names: Vec<&str> = mfma.iter().map(|r| r.kernel.as_str()).collect();
        assert_eq!(names, ["matmul_mfma_128x128x8_t256", "matmul_mfma_128x128x8_t512_f64"]);
        for (row, group) in mfma.iter().zip([256, 512]) {
            assert_eq!(row.group_size, group, "{row:?}");
            assert_eq!(row.scratch_bytes, 0, "{}: scratch (spills or a stack array): {row:?}", row.kernel);
            let occupancy = row.occupancy.as_ref().unwrap_or_else(|e| panic!("{}: {e}", row.kernel));
            assert!(occupancy.percent >= 50.0, "{}: {occupancy:?} at {} registers", row.kernel, row.registers);
        }
    }

    /// The NVIDIA side, statically: nvcc's cubin, cuobjdump's registers, our reading of the launch bounds.
    #[test]
    fn nvidia_resources_come_from_the_cubin_without_a_gpu() {
        let nvcc = compiler(Platform::Nvidia);
        let tool = find_cuobjdump(Some(&nvcc.path))
            .unwrap_or_else(|| panic!("this test needs cuobjdump: pip install nvidia-cuda-cuobjdump"));
        let cache = tempfile::tempdir().unwrap();
        let store = KernelStore::with_cache_dir(None, cache.path().to_path_buf()).with_compiler(nvcc);
        let matmul = crate::code_objects::source("matmul").unwrap();
        let rows = rows(&store, &Target { arch: arch("sm_90"), wave64: false }, &[matmul], Some(&tool)).unwrap();
        let row = |k: &str| rows.iter().find(|r| r.kernel == k).unwrap_or_else(|| panic!("{k}"));
        // __launch_bounds__ of the kernels: 512, 256 (16×16), and the reference's 16×16.
        assert_eq!(row("matmul_double_buffer_256x128x8_t512").group_size, 512);
        assert_eq!(row("matmul_naive").group_size, 256);
        // 512 threads fit an SM only at <= 128 registers; LDS without the system's 1 KiB reserve.
        let db = row("matmul_double_buffer_256x128x8_t512");
        assert!(db.registers <= 128 && db.scratch_bytes == 0, "{db:?}");
        assert_eq!(db.lds_bytes, 24832);
        assert_eq!(row("matmul_reference_f64").lds_bytes, 2 * 16 * 16 * 4);
        assert_eq!(row("matmul_naive").lds_bytes, 0);
        assert!(rows.iter().all(|r| r.occupancy.is_ok()), "{rows:?}");
    }
}
