//! Static reading of code objects, with no GPU: which architecture they are for and, for AMD, each kernel's
//! resource use from the `NT_AMDGPU_METADATA` note.
//!
//! AMD (ELF `e_machine` = `EM_AMDGPU` 224): the note named `AMDGPU` of type 32 holds a msgpack map (code object
//! v3 and later) with `amdhsa.target` (e.g. `amdgcn-amd-amdhsa--gfx90a:xnack-`) and `amdhsa.kernels`, one map per
//! kernel with keys such as `.vgpr_count` (LLVM's AMDGPUUsage, "Code Object V3 to V5 Metadata").
//!
//! NVIDIA (ELF `e_machine` = `EM_CUDA` 190): the SM number is in `e_flags`, laid out by the cubin ABI version
//! (`e_ident[EI_ABIVERSION]`), as found with nvcc 13.5 / ptxas 12.9 here (fixtures and their commands in
//! `suite/tests/fixtures/kernels/README.md`):
//! - ABI 7 (`EI_OSABI` 0x33; CUDA 12 and older): SM in bits 0..8, the `a` variant (sm_90a) is bit 11 (0x800),
//!   the virtual SM in bits 16..24: sm_80 → `0x500550`, sm_90 → `0x5a055a`, sm_90a → `0x5a0d5a`.
//! - ABI 8 (`EI_OSABI` 0x41; CUDA 13): SM in bits 8..16: sm_80 → `0x6005004`, sm_86 → `0x6005604`, sm_89 →
//!   `0x6005904`, sm_90 and sm_90a → `0x6005a04`, sm_100 → `0x6006402`. nvcc 13.5 sets no `e_flags` bit for the
//!   `a` variant (LLVM's `EF_CUDA_ACCELERATORS`, 0x8, is honoured if present): the variant is attribute 0x09 = 1
//!   in the `.nv.compat` section, which is what `cuobjdump -elf` reads (patching that byte turns its `sm=90a`
//!   into `sm=90`; setting 0x8 in `e_flags` does not change it).

use object::elf::{FileHeader64, EM_AMDGPU, EM_CUDA, SHT_NOTE};
use object::read::elf::{FileHeader, ProgramHeader, SectionHeader};
use object::Endianness;
use rmpv::Value;
use serde::Serialize;

use super::bundle::{self, TargetId};
use super::{Error, Result};
use crate::device::{Arch, WaveSize};

/// Note type of the AMDGPU msgpack metadata (`NT_AMDGPU_METADATA`).
const NT_AMDGPU_METADATA: u32 = 32;
/// Note name (owner) of the AMDGPU metadata.
const AMDGPU_NOTE_NAME: &[u8] = b"AMDGPU";

/// What kind of file a code object is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Format {
    /// A plain AMD GPU ELF (clang `--no-gpu-bundle-output`, or unbundled).
    AmdElf,
    /// A clang offload bundle holding AMD GPU ELFs (`hipcc --genco`).
    AmdBundle,
    /// An NVIDIA cubin.
    Cubin,
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Format::AmdElf => "AMD ELF",
            Format::AmdBundle => "AMD offload bundle",
            Format::Cubin => "NVIDIA cubin",
        })
    }
}

/// What a code object is and, for AMD, what its kernels use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CodeObjectInfo {
    /// The file's kind.
    pub format: Format,
    /// The architecture it was compiled for (without target features such as `:xnack-`).
    pub arch: Arch,
    /// The target it was compiled for, with the target features it fixes (`gfx90a:xnack+`); no features where
    /// it runs with either setting, and always none for a cubin.
    pub target: TargetId,
    /// Each kernel's metadata, in the note's order. Empty for cubins: NVIDIA resource use comes from the driver.
    pub amd_kernels: Vec<AmdKernelMeta>,
}

impl CodeObjectInfo {
    /// The AMD kernel whose name (or symbol without `.kd`) is `name`.
    pub fn amd_kernel(&self, name: &str) -> Option<&AmdKernelMeta> {
        self.amd_kernels.iter().find(|k| k.name == name || k.symbol.strip_suffix(".kd") == Some(name))
    }
}

/// One AMD kernel's metadata, as the compiler recorded it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AmdKernelMeta {
    /// Source-level name, e.g. `smoke_triad`.
    pub name: String,
    /// Symbol of the kernel descriptor, e.g. `smoke_triad.kd`.
    pub symbol: String,
    /// VGPRs per work-item (`.vgpr_count`): where AGPRs share the VGPR file (gfx90a, gfx94x), the allocated total,
    /// ArchVGPRs rounded up to 4 plus AGPRs (checked against the kernel descriptor by a static_inspection test).
    pub vgpr_count: u32,
    /// Accumulation VGPRs per work-item (`.agpr_count`), where the architecture has them (gfx90a and later).
    pub agpr_count: Option<u32>,
    /// SGPRs per wave (`.sgpr_count`).
    pub sgpr_count: u32,
    /// Static LDS per group in bytes (`.group_segment_fixed_size`).
    pub lds_bytes: u32,
    /// Private (scratch) memory per work-item in bytes (`.private_segment_fixed_size`): spills and stack arrays.
    pub scratch_bytes: u32,
    /// Work-items per wave (`.wavefront_size`).
    pub wave_size: WaveSize,
    /// Largest group the kernel may be launched with, in work-items (`.max_flat_workgroup_size`).
    pub max_group_size: u32,
    /// Size of the kernel argument block in bytes, hidden arguments included (`.kernarg_segment_size`).
    pub kernarg_bytes: u32,
    /// VGPRs spilled to scratch (`.vgpr_spill_count`), where recorded.
    pub vgpr_spill_count: Option<u32>,
    /// SGPRs spilled (`.sgpr_spill_count`), where recorded.
    pub sgpr_spill_count: Option<u32>,
    /// Every argument in the block, explicit ones first, then the runtime's hidden ones.
    pub args: Vec<ArgMeta>,
}

/// One kernel argument in the argument block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArgMeta {
    /// Source-level name, where the compiler recorded it.
    pub name: Option<String>,
    /// Byte offset in the argument block.
    pub offset: u32,
    /// Size in bytes.
    pub size: u32,
    /// What it is: `global_buffer`, `by_value`, ... or `hidden_*` for arguments the runtime fills in.
    pub value_kind: String,
}

impl ArgMeta {
    /// Whether the runtime fills it in (the launcher passes only the others).
    pub fn is_hidden(&self) -> bool {
        self.value_kind.starts_with("hidden_")
    }
}

/// The sizes in bytes of the arguments a launch must pass, in order (hidden arguments left out), to check a
/// launch's arguments against.
pub fn arg_sizes(meta: &AmdKernelMeta) -> Vec<usize> {
    meta.args.iter().filter(|a| !a.is_hidden()).map(|a| a.size as usize).collect()
}

/// Reads a code object: an AMD ELF, a clang offload bundle of them (the first AMD entry is read), or a cubin.
pub fn inspect(bytes: &[u8]) -> Result<CodeObjectInfo> {
    inspect_for(bytes, None, None)
}

/// [`check_arch`], and for AMD also the target features: the code object (for a bundle, the entry chosen) must run
/// in the mode the device reports, e.g. `gfx90a:sramecc+:xnack-` (see [`TargetId::runs_on`]). An object built for
/// `gfx90a:xnack+` is refused on that device with [`Error::WrongTarget`] here, where the HIP runtime would only
/// say that it found no kernel image. `device` is the runtime's full architecture string.
pub fn check_target(bytes: &[u8], wanted: &Arch, device: &str) -> Result<CodeObjectInfo> {
    let Ok(device_target) = TargetId::parse(device) else {
        // Not a target ID (an NVIDIA name is one, so this is a runtime string we do not understand): the
        // processor check is all there is to do.
        return check_arch(bytes, wanted);
    };
    if wanted.platform() != crate::device::Platform::Amd {
        return check_arch(bytes, wanted);
    }
    let info = inspect_for(bytes, Some(wanted), Some(&device_target))?;
    if info.arch != *wanted {
        return Err(Error::WrongArch { wanted: wanted.clone(), found: info.arch.to_string() });
    }
    if !info.target.runs_on(&device_target) {
        return Err(Error::WrongTarget { device: device.to_string(), found: info.target.to_string() });
    }
    Ok(info)
}

/// Reads a code object and checks that it is for `wanted`; for a bundle, the entry for `wanted` is read.
///
/// AMD: the processor must be the same (target features are not compared: an `Arch` has none). NVIDIA: the SM
/// number must be the same, and an `a` variant is wanted only where it was asked for (`sm_90a` code runs on an
/// sm_90 device, `sm_90` code lacks what `sm_90a` asks for). This is stricter than the CUDA driver, which runs
/// sm_80 code on sm_86: the suite builds for the exact architecture, so anything else is a stale file.
pub fn check_arch(bytes: &[u8], wanted: &Arch) -> Result<CodeObjectInfo> {
    let info = inspect_for(bytes, Some(wanted), None)?;
    let a_build_of_wanted =
        wanted.as_str().starts_with("sm_") && info.arch.as_str().strip_suffix('a') == Some(wanted.as_str());
    let same = info.arch == *wanted || a_build_of_wanted;
    if !same {
        return Err(Error::WrongArch { wanted: wanted.clone(), found: info.arch.to_string() });
    }
    Ok(info)
}

pub(super) fn corrupt(reason: impl Into<String>) -> Error {
    Error::Corrupt { reason: reason.into() }
}

/// Reads a code object; for a bundle (compressed or not), the first entry for `wanted` whose target runs on
/// `device` (where given), else the first entry for `wanted`, else the first AMD entry.
fn inspect_for(bytes: &[u8], wanted: Option<&Arch>, device: Option<&TargetId>) -> Result<CodeObjectInfo> {
    if bundle::is_bundle(bytes) {
        let bundle = bundle::decompressed(bytes)?;
        let objects = bundle::amd_targets(&bundle)?;
        let found = || objects.iter().map(|(t, _)| t.to_string()).collect::<Vec<_>>().join(", ");
        let (entry_target, elf) = match wanted {
            Some(w) => {
                let mut of_arch = objects.iter().filter(|(t, _)| t.arch == *w).peekable();
                let first = *of_arch.peek().ok_or_else(|| Error::WrongArch { wanted: w.clone(), found: found() })?;
                match device {
                    Some(d) => of_arch
                        .find(|(t, _)| t.runs_on(d))
                        .ok_or_else(|| Error::WrongTarget { device: d.to_string(), found: found() })?,
                    None => first,
                }
            }
            None => objects.first().ok_or_else(|| corrupt("offload bundle with no AMD GPU entry"))?,
        };
        let entry_arch = &entry_target.arch;
        let mut info = inspect_elf(elf, Some(entry_target))?;
        if info.format != Format::AmdElf {
            return Err(corrupt(format!("offload bundle entry for {entry_arch} holds a {}", info.format)));
        }
        if info.arch != *entry_arch {
            return Err(corrupt(format!("offload bundle entry for {entry_arch} holds code for {}", info.arch)));
        }
        info.format = Format::AmdBundle;
        return Ok(info);
    }
    inspect_elf(bytes, None)
}

/// Reads a plain ELF code object; `bundle_target` is the target its bundle entry names, used where the metadata
/// has no `amdhsa.target` (code object v3).
fn inspect_elf(bytes: &[u8], bundle_target: Option<&TargetId>) -> Result<CodeObjectInfo> {
    if !bytes.starts_with(b"\x7fELF") {
        // A CUDA fatbinary is a common mix-up: nvcc -fatbin rather than -cubin.
        let what = if bytes.starts_with(&[0x50, 0xed, 0x55, 0xba]) {
            "a CUDA fatbinary, not a cubin (build with nvcc -cubin)"
        } else {
            "neither an ELF nor a clang offload bundle"
        };
        return Err(corrupt(format!("{what} ({} bytes starting {})", bytes.len(), hex_prefix(bytes))));
    }
    let header = FileHeader64::<Endianness>::parse(bytes)
        .map_err(|e| corrupt(format!("not a 64-bit ELF this suite can read: {e}")))?;
    let endian = header.endian().map_err(|e| corrupt(format!("ELF header: {e}")))?;
    match header.e_machine(endian) {
        EM_AMDGPU => amd_elf(bytes, header, endian, bundle_target),
        EM_CUDA => {
            let arch = cubin_arch(bytes, header, endian)?;
            let target = TargetId { arch: arch.clone(), features: Vec::new() };
            Ok(CodeObjectInfo { format: Format::Cubin, arch, target, amd_kernels: Vec::new() })
        }
        other => Err(corrupt(format!(
            "an ELF for machine {other}{}, not for an AMD GPU ({EM_AMDGPU}) or an NVIDIA GPU ({EM_CUDA})",
            if other == object::elf::EM_X86_64 { " (x86-64)" } else { "" }
        ))),
    }
}

fn hex_prefix(bytes: &[u8]) -> String {
    bytes.iter().take(8).map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(" ")
}

fn amd_elf(
    bytes: &[u8],
    header: &FileHeader64<Endianness>,
    endian: Endianness,
    bundle_target: Option<&TargetId>,
) -> Result<CodeObjectInfo> {
    let desc = amdgpu_note(bytes, header, endian)?;
    // Every declared length bounded by the bytes present first: the decoder allocates for what is declared.
    super::msgpack_bounds::check(desc).map_err(|e| corrupt(format!("the AMDGPU metadata note: {e}")))?;
    let value = rmpv::decode::read_value(&mut &desc[..])
        .map_err(|e| corrupt(format!("the AMDGPU metadata note is not msgpack: {e}")))?;
    let root = as_map(&value, "the metadata")?;
    let target = match get(root, "amdhsa.target") {
        Some(target) => {
            let target = target.as_str().ok_or_else(|| corrupt("amdhsa.target is not a string"))?;
            // `amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`: the target ID follows the empty environment field.
            let id = target.rsplit("--").next().unwrap_or(target);
            TargetId::parse(id)
                .ok()
                .filter(|t| t.arch.platform() == crate::device::Platform::Amd)
                .ok_or_else(|| corrupt(format!("amdhsa.target `{target}` names no gfx processor")))?
        }
        None => bundle_target.cloned().ok_or_else(|| {
            corrupt("the AMDGPU metadata has no amdhsa.target (code object v3 or older): rebuild with a current hipcc")
        })?,
    };
    let kernels = match get(root, "amdhsa.kernels") {
        Some(Value::Array(list)) => list.iter().map(kernel_meta).collect::<Result<Vec<_>>>()?,
        Some(_) => return Err(corrupt("amdhsa.kernels is not a list")),
        None => Vec::new(),
    };
    Ok(CodeObjectInfo { format: Format::AmdElf, arch: target.arch.clone(), target, amd_kernels: kernels })
}

/// The description of the `AMDGPU` note of type `NT_AMDGPU_METADATA`, from the note sections or, where the
/// sections are stripped, the note segments.
fn amdgpu_note<'a>(bytes: &'a [u8], header: &FileHeader64<Endianness>, endian: Endianness) -> Result<&'a [u8]> {
    let elf_err = |e: object::read::Error| corrupt(format!("AMD GPU ELF: {e}"));
    let sections = header.sections(endian, bytes).map_err(elf_err)?;
    for section in sections.iter().filter(|s| s.sh_type(endian) == SHT_NOTE) {
        if let Some(mut notes) = section.notes(endian, bytes).map_err(elf_err)? {
            while let Some(note) = notes.next().map_err(elf_err)? {
                if note.name() == AMDGPU_NOTE_NAME && note.n_type(endian) == NT_AMDGPU_METADATA {
                    return Ok(note.desc());
                }
            }
        }
    }
    for segment in header.program_headers(endian, bytes).map_err(elf_err)? {
        if let Some(mut notes) = segment.notes(endian, bytes).map_err(elf_err)? {
            while let Some(note) = notes.next().map_err(elf_err)? {
                if note.name() == AMDGPU_NOTE_NAME && note.n_type(endian) == NT_AMDGPU_METADATA {
                    return Ok(note.desc());
                }
            }
        }
    }
    Err(corrupt("AMD GPU ELF without an AMDGPU metadata note (code object v2 or stripped): rebuild it"))
}

type Map = [(Value, Value)];

fn as_map<'a>(value: &'a Value, what: &str) -> Result<&'a Map> {
    match value {
        Value::Map(m) => Ok(m),
        _ => Err(corrupt(format!("{what} is not a msgpack map"))),
    }
}

fn get<'a>(map: &'a Map, key: &str) -> Option<&'a Value> {
    map.iter().find(|(k, _)| k.as_str() == Some(key)).map(|(_, v)| v)
}

fn get_u32(map: &Map, key: &str, kernel: &str) -> Result<Option<u32>> {
    match get(map, key) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| corrupt(format!("kernel `{kernel}`: {key} is {v}, not a count"))),
    }
}

fn need_u32(map: &Map, key: &str, kernel: &str) -> Result<u32> {
    get_u32(map, key, kernel)?.ok_or_else(|| corrupt(format!("kernel `{kernel}`: metadata has no {key}")))
}

fn get_string(map: &Map, key: &str) -> Option<String> {
    get(map, key).and_then(Value::as_str).map(str::to_string)
}

fn kernel_meta(value: &Value) -> Result<AmdKernelMeta> {
    let map = as_map(value, "a kernel's metadata")?;
    let name = get_string(map, ".name").ok_or_else(|| corrupt("a kernel's metadata has no .name"))?;
    let k = name.as_str();
    let args = match get(map, ".args") {
        Some(Value::Array(list)) => list
            .iter()
            .map(|a| {
                let arg = as_map(a, "an argument's metadata")?;
                Ok(ArgMeta {
                    name: get_string(arg, ".name"),
                    offset: need_u32(arg, ".offset", k)?,
                    size: need_u32(arg, ".size", k)?,
                    value_kind: get_string(arg, ".value_kind")
                        .ok_or_else(|| corrupt(format!("kernel `{k}`: an argument has no .value_kind")))?,
                })
            })
            .collect::<Result<Vec<_>>>()?,
        Some(_) => return Err(corrupt(format!("kernel `{k}`: .args is not a list"))),
        None => Vec::new(),
    };
    Ok(AmdKernelMeta {
        symbol: get_string(map, ".symbol").ok_or_else(|| corrupt(format!("kernel `{k}`: metadata has no .symbol")))?,
        vgpr_count: need_u32(map, ".vgpr_count", k)?,
        agpr_count: get_u32(map, ".agpr_count", k)?,
        sgpr_count: need_u32(map, ".sgpr_count", k)?,
        lds_bytes: need_u32(map, ".group_segment_fixed_size", k)?,
        scratch_bytes: need_u32(map, ".private_segment_fixed_size", k)?,
        wave_size: WaveSize(need_u32(map, ".wavefront_size", k)?),
        max_group_size: need_u32(map, ".max_flat_workgroup_size", k)?,
        kernarg_bytes: need_u32(map, ".kernarg_segment_size", k)?,
        vgpr_spill_count: get_u32(map, ".vgpr_spill_count", k)?,
        sgpr_spill_count: get_u32(map, ".sgpr_spill_count", k)?,
        args,
        name,
    })
}

/// `e_ident[EI_ABIVERSION]` from which a cubin keeps its SM in bits 8..16 (CUDA 13).
const CUDA_ABI_V2: u8 = 8;
/// ABI 7 (CUDA 12 and older): the `a` variant bit.
const EF_CUDA_ACCELERATORS_V1: u32 = 0x800;
/// ABI 8: the `a` variant bit as LLVM defines it (`EF_CUDA_ACCELERATORS`); nvcc 13.5 does not set it.
const EF_CUDA_ACCELERATORS: u32 = 0x8;
/// `.nv.compat` attribute that is 1 in `a`-variant cubins (seen with nvcc 13.5; see the module comment).
const COMPAT_ARCH_SPECIFIC: u8 = 0x09;

fn cubin_arch(bytes: &[u8], header: &FileHeader64<Endianness>, endian: Endianness) -> Result<Arch> {
    let abi = header.e_ident().abi_version;
    let flags = header.e_flags(endian);
    let compat_accel = if abi >= CUDA_ABI_V2 { compat_arch_specific(bytes, header, endian)? } else { false };
    let (sm, accel) = cubin_sm(abi, flags, compat_accel);
    let name = format!("sm_{sm}{}", if accel { "a" } else { "" });
    // sm_20 is the oldest SM a cubin has named; anything below means the layout was misread.
    if sm < 20 {
        return Err(corrupt(format!("cubin (ABI {abi}) with e_flags {flags:#x} names no SM architecture")));
    }
    Arch::parse(&name).map_err(|_| corrupt(format!("cubin e_flags {flags:#x} give `{name}`")))
}

/// The SM number and the `a` variant from a cubin's ABI version and `e_flags` (see the module comment), given
/// whether `.nv.compat` marks the `a` variant.
fn cubin_sm(abi_version: u8, e_flags: u32, compat_arch_specific: bool) -> (u32, bool) {
    if abi_version >= CUDA_ABI_V2 {
        ((e_flags >> 8) & 0xff, e_flags & EF_CUDA_ACCELERATORS != 0 || compat_arch_specific)
    } else {
        (e_flags & 0xff, e_flags & EF_CUDA_ACCELERATORS_V1 != 0)
    }
}

/// Whether the `.nv.compat` section says the code is for an `a` variant. The section is a list of records
/// `[format, attribute, value...]` in the layout of `.nv.info`: formats 1 to 3 take 4 bytes (the value in bytes
/// 2..4), format 4 has a u16 size and that many bytes.
fn compat_arch_specific(bytes: &[u8], header: &FileHeader64<Endianness>, endian: Endianness) -> Result<bool> {
    let elf_err = |e: object::read::Error| corrupt(format!("cubin: {e}"));
    let sections = header.sections(endian, bytes).map_err(elf_err)?;
    let Some((_, section)) = sections.section_by_name(endian, b".nv.compat") else { return Ok(false) };
    let data = section.data(endian, bytes).map_err(elf_err)?;
    Ok(compat_attr(data, COMPAT_ARCH_SPECIFIC).is_some_and(|v| v == 1))
}

/// The value of `attribute` in `.nv.compat`-style records, or `None` where it is absent or the records end early.
fn compat_attr(mut data: &[u8], attribute: u8) -> Option<u16> {
    while let [format, attr, rest @ ..] = data {
        let (value, len) = match format {
            1..=3 => (u16::from_le_bytes([*rest.first()?, *rest.get(1)?]), 4),
            4 => (0, 4 + usize::from(u16::from_le_bytes([*rest.first()?, *rest.get(1)?]))),
            _ => return None,
        };
        if *attr == attribute && *format != 4 {
            return Some(value);
        }
        data = data.get(len..)?;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code_objects::compile::{compile, compile_with_flags, flags};
    use crate::code_objects::test_support::{compiler, fixture, tool};
    use crate::device::Platform;
    use std::collections::BTreeMap;
    use std::process::Command;

    fn arch(s: &str) -> Arch {
        Arch::parse(s).unwrap()
    }

    /// The fields a test compares, as strings, keyed as llvm-readelf prints them.
    fn fields(k: &AmdKernelMeta) -> BTreeMap<String, String> {
        let opt = |v: Option<u32>| v.map(|n| n.to_string());
        [
            (".name", Some(k.name.clone())),
            (".symbol", Some(k.symbol.clone())),
            (".vgpr_count", Some(k.vgpr_count.to_string())),
            (".agpr_count", opt(k.agpr_count)),
            (".sgpr_count", Some(k.sgpr_count.to_string())),
            (".group_segment_fixed_size", Some(k.lds_bytes.to_string())),
            (".private_segment_fixed_size", Some(k.scratch_bytes.to_string())),
            (".wavefront_size", Some(k.wave_size.0.to_string())),
            (".max_flat_workgroup_size", Some(k.max_group_size.to_string())),
            (".kernarg_segment_size", Some(k.kernarg_bytes.to_string())),
            (".vgpr_spill_count", opt(k.vgpr_spill_count)),
            (".sgpr_spill_count", opt(k.sgpr_spill_count)),
        ]
        .into_iter()
        .filter_map(|(key, v)| Some((key.to_string(), v?)))
        .collect()
    }

    /// One kernel as `llvm-readelf --notes` prints it: its scalar fields and its arguments' fields.
    #[derive(Debug, Default)]
    struct ReadelfKernel {
        fields: BTreeMap<String, String>,
        args: Vec<BTreeMap<String, String>>,
    }

    /// Parses the YAML that `llvm-readelf --notes` prints for `NT_AMDGPU_METADATA`: kernels at `  - `, their
    /// keys at 4 spaces, arguments at `      - ` with keys at 8 spaces; other lists are skipped.
    fn parse_readelf(text: &str) -> (Vec<ReadelfKernel>, Option<String>) {
        let mut kernels: Vec<ReadelfKernel> = Vec::new();
        let mut target = None;
        let (mut in_kernels, mut in_args) = (false, false);
        let key_value = |s: &str| {
            let (k, v) = s.split_once(':').unwrap_or((s, ""));
            (k.trim().to_string(), v.trim().to_string())
        };
        for line in text.lines() {
            let body = line.trim_start();
            let indent = line.len() - body.len();
            if indent == 0 {
                in_kernels = body.starts_with("amdhsa.kernels:");
                if let Some(t) = body.strip_prefix("amdhsa.target:") {
                    target = Some(t.trim().to_string());
                }
                continue;
            }
            if !in_kernels {
                continue;
            }
            match (indent, body.strip_prefix("- ")) {
                (2, Some(rest)) => {
                    kernels.push(ReadelfKernel::default());
                    in_args = false;
                    let (k, v) = key_value(rest);
                    kernels.last_mut().unwrap().fields.insert(k, v);
                }
                (4, None) => {
                    let (k, v) = key_value(body);
                    in_args = k == ".args" && v.is_empty();
                    kernels.last_mut().unwrap().fields.insert(k, v);
                }
                (6, Some(rest)) if in_args => {
                    let (k, v) = key_value(rest);
                    kernels.last_mut().unwrap().args.push(BTreeMap::from([(k, v)]));
                }
                (8, None) if in_args => {
                    let (k, v) = key_value(body);
                    kernels.last_mut().unwrap().args.last_mut().unwrap().insert(k, v);
                }
                _ => {}
            }
        }
        (kernels, target)
    }

    /// Checks our reading of `elf` against llvm-readelf's, field by field.
    fn agrees_with_readelf(elf: &[u8]) {
        let readelf = tool(&["llvm-readelf-15", "llvm-readelf", "/opt/rocm/llvm/bin/llvm-readelf"]);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("code.o");
        std::fs::write(&path, elf).unwrap();
        let out = Command::new(readelf).arg("--notes").arg(&path).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let (theirs, target) = parse_readelf(&String::from_utf8_lossy(&out.stdout));
        let ours = inspect(elf).unwrap();
        assert_eq!(Some(format!("amdgcn-amd-amdhsa--{}", ours.target)), target);
        assert_eq!(ours.amd_kernels.len(), theirs.len());
        for (mine, theirs) in ours.amd_kernels.iter().zip(&theirs) {
            for (key, value) in fields(mine) {
                assert_eq!(Some(&value), theirs.fields.get(&key), "{} {key}", mine.name);
            }
            assert_eq!(mine.args.len(), theirs.args.len(), "{} args", mine.name);
            for (a, b) in mine.args.iter().zip(&theirs.args) {
                assert_eq!(Some(&a.offset.to_string()), b.get(".offset"));
                assert_eq!(Some(&a.size.to_string()), b.get(".size"));
                assert_eq!(Some(&a.value_kind), b.get(".value_kind"));
                assert_eq!(a.name.as_ref(), b.get(".name"));
            }
        }
    }

    /// What every reading of smoke.hip for gfx90a must give, whatever the code-object version.
    fn assert_smoke_gfx90a(info: &CodeObjectInfo) {
        assert_eq!(info.arch.as_str(), "gfx90a");
        let triad = info.amd_kernel("smoke_triad").expect("smoke_triad");
        assert_eq!(triad.symbol, "smoke_triad.kd");
        assert_eq!(triad.wave_size, WaveSize(64));
        assert_eq!(arg_sizes(triad), [8, 8, 8, 4, 4]);
        assert_eq!(triad.args[3].value_kind, "by_value");
        assert_eq!(triad.max_group_size, 1024);
        assert_eq!((triad.lds_bytes, triad.scratch_bytes), (0, 0));
        assert!(triad.vgpr_count > 0 && triad.agpr_count.is_some());
        assert!(triad.kernarg_bytes >= 32);
    }

    #[test]
    fn bundle_fixture_reads_as_expected() {
        let info = inspect(&fixture("smoke.gfx90a.hsaco")).unwrap();
        assert_eq!(info.format, Format::AmdBundle);
        assert_smoke_gfx90a(&info);
        // Values for this fixture (HIP 5.2, clang 15, code object v4), as llvm-readelf-15 --notes printed them.
        let triad = info.amd_kernel("smoke_triad").unwrap();
        assert_eq!((triad.vgpr_count, triad.agpr_count, triad.sgpr_count), (5, Some(0), 11));
        assert_eq!((triad.kernarg_bytes, triad.vgpr_spill_count, triad.sgpr_spill_count), (32, Some(0), Some(0)));
        assert_eq!(triad.args.len(), 5, "v4 from clang 15 lists no hidden arguments for this kernel");
        let empty = info.amd_kernel("smoke_empty").unwrap();
        assert_eq!((empty.vgpr_count, empty.kernarg_bytes, empty.args.len()), (0, 0, 0));
    }

    /// ROCm 6.3 writes code object v5, and recent clang may compress the bundle: the v5 object in a real
    /// compressed bundle (zstd, CCOB format version 2) reads exactly like the plain object.
    #[test]
    fn compressed_v5_bundle_reads_like_its_plain_object() {
        let bundled = check_arch(&fixture("smoke.gfx90a.v5.ccob.hsaco"), &arch("gfx90a")).unwrap();
        let plain = inspect(&fixture("smoke.gfx90a.v5.o")).unwrap();
        assert_eq!(bundled.format, Format::AmdBundle);
        assert_eq!(CodeObjectInfo { format: Format::AmdElf, ..bundled.clone() }, plain);
        assert_smoke_gfx90a(&bundled);
        let e = check_arch(&fixture("smoke.gfx90a.v5.ccob.hsaco"), &arch("gfx908")).unwrap_err();
        assert!(matches!(&e, Error::WrongArch { found, .. } if found == "gfx90a"), "{e}");
    }

    /// hipcc --offload-arch=gfx90a:xnack+ (a real bundle): the feature is kept from the bundle entry and from
    /// the object's own amdhsa.target, and decides whether the object runs on a device's mode.
    #[test]
    fn target_features_are_kept_and_checked() {
        let xnack_on = fixture("smoke.gfx90a-xnack+.hsaco");
        let info = inspect(&xnack_on).unwrap();
        assert_eq!((info.arch.as_str(), info.target.to_string().as_str()), ("gfx90a", "gfx90a:xnack+"));
        assert_smoke_gfx90a(&info);
        let elf = bundle::amd_objects(&xnack_on).unwrap()[0].1.to_vec();
        assert_eq!(inspect(&elf).unwrap().target.to_string(), "gfx90a:xnack+");
        let gfx90a = arch("gfx90a");
        for bytes in [&xnack_on, &elf] {
            let e = check_target(bytes, &gfx90a, "gfx90a:sramecc+:xnack-").unwrap_err();
            assert!(
                matches!(&e, Error::WrongTarget { device, found }
                    if device == "gfx90a:sramecc+:xnack-" && found.contains("gfx90a:xnack+")),
                "{e}"
            );
            assert!(check_target(bytes, &gfx90a, "gfx90a:sramecc+:xnack+").is_ok());
            assert!(check_arch(bytes, &gfx90a).is_ok(), "the processor alone matches");
        }
        // Built without features (what the suite builds): runs in any mode.
        let any = fixture("smoke.gfx90a.hsaco");
        assert_eq!(inspect(&any).unwrap().target.to_string(), "gfx90a");
        for mode in ["gfx90a:sramecc+:xnack-", "gfx90a:sramecc-:xnack+", "gfx90a"] {
            assert!(check_target(&any, &gfx90a, mode).is_ok(), "{mode}");
        }
        // A bundle with both variants: the entry that runs in the device's mode is read.
        let any_elf = bundle::amd_objects(&any).unwrap()[0].1.to_vec();
        let both = bundle::tests::make(&[
            ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+", &elf),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a", &any_elf),
        ]);
        assert_eq!(check_target(&both, &gfx90a, "gfx90a:sramecc+:xnack-").unwrap().target.to_string(), "gfx90a");
        assert_eq!(check_target(&both, &gfx90a, "gfx90a:sramecc+:xnack+").unwrap().target.to_string(), "gfx90a:xnack+");
        // NVIDIA names carry no features: the processor check is all.
        assert!(check_target(&fixture("smoke.sm_90.cubin"), &arch("sm_90"), "sm_90").is_ok());
    }

    #[test]
    fn v5_fixture_reads_with_hidden_arguments() {
        let info = inspect(&fixture("smoke.gfx90a.v5.o")).unwrap();
        assert_eq!(info.format, Format::AmdElf);
        assert_smoke_gfx90a(&info);
        let triad = info.amd_kernel("smoke_triad").unwrap();
        assert!(triad.args.len() > 5 && triad.args[5..].iter().all(ArgMeta::is_hidden), "{:?}", triad.args);
        assert!(triad.args.iter().any(|a| a.value_kind == "hidden_block_count_x"), "v5's implicit arguments");
    }

    #[test]
    fn bundle_and_its_plain_elf_give_the_same_metadata() {
        let bundled = fixture("smoke.gfx90a.hsaco");
        let (_, elf) = bundle::amd_objects(&bundled).unwrap()[0];
        let (a, b) = (inspect(&bundled).unwrap(), inspect(elf).unwrap());
        assert_eq!((a.format, b.format), (Format::AmdBundle, Format::AmdElf));
        assert_eq!((a.arch, a.amd_kernels), (b.arch, b.amd_kernels));
    }

    #[test]
    fn fixtures_agree_with_llvm_readelf() {
        let bundled = fixture("smoke.gfx90a.hsaco");
        agrees_with_readelf(bundle::amd_objects(&bundled).unwrap()[0].1);
        agrees_with_readelf(&fixture("smoke.gfx90a.v5.o"));
    }

    /// Compiles smoke.hip for `arch_name` with hipcc's flags plus `extra`.
    fn hipcc_smoke(arch_name: &str, extra: &[&str]) -> Vec<u8> {
        let c = compiler(Platform::Amd);
        let a = arch(arch_name);
        let mut f = flags(&c, &a);
        f.extend(extra.iter().map(|s| s.to_string()));
        compile_with_flags(&c, crate::code_objects::source("smoke").unwrap(), &a, &f).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn smoke_triad_matches_llvm_readelf_v4() {
        let bundled = hipcc_smoke("gfx90a", &[]);
        let info = inspect(&bundled).unwrap();
        assert_eq!(info.format, Format::AmdBundle);
        assert_smoke_gfx90a(&info);
        let (_, elf) = bundle::amd_objects(&bundled).unwrap()[0];
        let plain = inspect(elf).unwrap();
        assert_eq!((plain.format, &plain.amd_kernels), (Format::AmdElf, &info.amd_kernels));
        agrees_with_readelf(elf);
        // clang-offload-bundler, the toolchain's own unbundler, gives the same bytes as ours.
        let bundler = tool(&[
            "/usr/lib/llvm-15/bin/clang-offload-bundler",
            "clang-offload-bundler",
            "/opt/rocm/llvm/bin/clang-offload-bundler",
        ]);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.hsaco"), &bundled).unwrap();
        let status = Command::new(bundler)
            .current_dir(dir.path())
            .args([
                "--type=o",
                "--targets=hipv4-amdgcn-amd-amdhsa--gfx90a",
                "--input=b.hsaco",
                "--output=u.o",
                "--unbundle",
            ])
            .status()
            .unwrap();
        assert!(status.success());
        assert_eq!(std::fs::read(dir.path().join("u.o")).unwrap(), elf);
    }

    #[test]
    fn smoke_triad_matches_llvm_readelf_v5() {
        let bundled = hipcc_smoke("gfx90a", &["-mcode-object-version=5"]);
        let info = inspect(&bundled).unwrap();
        assert_smoke_gfx90a(&info);
        let (_, elf) = bundle::amd_objects(&bundled).unwrap()[0];
        agrees_with_readelf(elf);
    }

    #[test]
    fn wrong_architecture_compiled_here() {
        let gfx908 = hipcc_smoke("gfx908", &[]);
        let e = check_arch(&gfx908, &arch("gfx90a")).unwrap_err();
        assert!(matches!(&e, Error::WrongArch { found, .. } if found == "gfx908"), "{e}");
        assert_eq!(check_arch(&gfx908, &arch("gfx908")).unwrap().arch.as_str(), "gfx908");
        let nvcc = compiler(Platform::Nvidia);
        let sm80 = compile(&nvcc, crate::code_objects::source("smoke").unwrap(), &arch("sm_80")).unwrap();
        let e = check_arch(&sm80, &arch("sm_90")).unwrap_err();
        assert!(matches!(&e, Error::WrongArch { found, .. } if found == "sm_80"), "{e}");
    }

    #[test]
    fn cubin_architectures_compiled_here() {
        let nvcc = compiler(Platform::Nvidia);
        for name in ["sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"] {
            let bytes = compile(&nvcc, crate::code_objects::source("smoke").unwrap(), &arch(name)).unwrap();
            let info = inspect(&bytes).unwrap();
            assert_eq!((info.format, info.arch.as_str()), (Format::Cubin, name));
            assert!(info.amd_kernels.is_empty());
        }
    }

    #[test]
    fn cubin_e_flags_both_layouts() {
        // (ABI version, e_flags, .nv.compat marks `a`) → (SM, a): values read from the fixtures' headers.
        let cases = [
            (7, 0x0050_0550, false, (80, false)),
            (7, 0x0056_0556, false, (86, false)),
            (7, 0x0059_0559, false, (89, false)),
            (7, 0x005a_055a, false, (90, false)),
            (7, 0x005a_0d5a, false, (90, true)),
            (8, 0x0600_5004, false, (80, false)),
            (8, 0x0600_5604, false, (86, false)),
            (8, 0x0600_5904, false, (89, false)),
            (8, 0x0600_5a04, false, (90, false)),
            (8, 0x0600_5a04, true, (90, true)),
            (8, 0x0600_5a0c, false, (90, true)),
            (8, 0x0600_6402, false, (100, false)),
            (8, 0x0600_7802, true, (120, true)),
        ];
        for (abi, flags, compat, want) in cases {
            assert_eq!(cubin_sm(abi, flags, compat), want, "ABI {abi}, e_flags {flags:#x}");
        }
    }

    #[test]
    fn cubin_fixtures_name_their_architecture() {
        let cases = [
            ("smoke.sm_80.cubin", "sm_80"),
            ("smoke.sm_86.cubin", "sm_86"),
            ("smoke.sm_89.cubin", "sm_89"),
            ("smoke.sm_90.cubin", "sm_90"),
            ("smoke.sm_90a.cubin", "sm_90a"),
            ("smoke.sm_80.abi7.cubin", "sm_80"),
            ("smoke.sm_90.abi7.cubin", "sm_90"),
            ("smoke.sm_90a.abi7.cubin", "sm_90a"),
        ];
        for (file, want) in cases {
            let info = inspect(&fixture(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
            assert_eq!((info.format, info.arch.as_str()), (Format::Cubin, want), "{file}");
        }
    }

    #[test]
    fn compat_records_are_walked() {
        // .nv.compat of the nvcc 13.5 sm_90a fixture.
        let sm90a = [
            0x02, 0x09, 0x01, 0x00, 0x02, 0x0c, 0x00, 0x00, 0x02, 0x02, 0x01, 0x00, 0x03, 0x0d, 0x01, 0x01, 0x02, 0x03,
            0x00, 0x00, 0x04, 0x0b, 0x08, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0x03, 0x0e, 0x40, 0x04,
        ];
        assert_eq!(compat_attr(&sm90a, 0x09), Some(1));
        assert_eq!(compat_attr(&sm90a, 0x0e), Some(0x0440));
        assert_eq!(compat_attr(&sm90a, 0x0b), None, "a sized record is not a value");
        assert_eq!(compat_attr(&sm90a[..6], 0x0c), None, "records that end early");
        assert_eq!(compat_attr(&[0x07, 0x09, 0x01, 0x00], 0x09), None, "unknown format");
    }

    #[test]
    fn wrong_architecture_is_named() {
        let cases = [
            ("smoke.gfx908.hsaco", "gfx90a", "gfx908"),
            ("smoke.gfx90a.hsaco", "gfx908", "gfx90a"),
            ("smoke.sm_80.cubin", "sm_90", "sm_80"),
            ("smoke.sm_90.cubin", "sm_90a", "sm_90"),
            ("smoke.sm_90.cubin", "gfx90a", "sm_90"),
            ("smoke.gfx90a.v5.o", "gfx942", "gfx90a"),
        ];
        for (file, wanted, found) in cases {
            let e = check_arch(&fixture(file), &arch(wanted)).unwrap_err();
            assert!(matches!(&e, Error::WrongArch { found: f, .. } if f == found), "{file}: {e}");
            assert_eq!(
                e.to_string(),
                format!("code object is for {found}, but the device is {wanted}: rebuild with `suite kernels build --arch {wanted}`")
            );
        }
        // An `a` build runs on its base architecture's devices.
        assert_eq!(check_arch(&fixture("smoke.sm_90a.cubin"), &arch("sm_90")).unwrap().arch.as_str(), "sm_90a");
        assert_eq!(check_arch(&fixture("smoke.sm_90.cubin"), &arch("sm_90")).unwrap().arch.as_str(), "sm_90");
    }

    #[test]
    fn corrupt_objects_say_so() {
        let true_elf = std::fs::read("/bin/true").unwrap_or_default();
        let cubin = fixture("smoke.sm_90.cubin");
        let hsaco = fixture("smoke.gfx90a.hsaco");
        let elf = bundle::amd_objects(&hsaco).unwrap()[0].1.to_vec();
        // Pseudo-random bytes from a fixed LCG: the same every run.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let random: Vec<u8> = (0..4096)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (x >> 56) as u8
            })
            .collect();
        let mut no_note = elf.clone();
        let pos = no_note.windows(6).position(|w| w == b"AMDGPU").unwrap();
        no_note[pos..pos + 6].copy_from_slice(b"XXXXXX");
        let mut cases: Vec<(&str, Vec<u8>, &str)> = vec![
            ("empty", vec![], "neither an ELF nor a clang offload bundle"),
            ("random", random, "neither an ELF nor a clang offload bundle"),
            ("fatbin", vec![0x50, 0xed, 0x55, 0xba, 1, 0, 0x10, 0], "a CUDA fatbinary"),
            ("ELF header cut", elf[..40].to_vec(), "not a 64-bit ELF"),
            ("AMD ELF cut", elf[..elf.len() / 2].to_vec(), "AMD GPU ELF"),
            ("cubin cut", cubin[..cubin.len() / 2].to_vec(), "cubin"),
            ("bundle cut", hsaco[..hsaco.len() - 100].to_vec(), "runs past the end"),
            ("no metadata note", no_note, "without an AMDGPU metadata note"),
        ];
        if true_elf.len() > 4096 {
            cases.push(("/bin/true", true_elf[..4096].to_vec(), "an ELF for machine"));
        }
        for (what, bytes, want) in cases {
            let e = check_arch(&bytes, &arch("gfx90a")).unwrap_err();
            let text = e.to_string();
            assert!(matches!(e, Error::Corrupt { .. }), "{what}: {text}");
            assert!(text.starts_with("not a GPU code object: "), "{what}: {text}");
            assert!(text.contains(want), "{what}: {text}");
            assert!(text.ends_with("; delete it or rebuild it with `suite kernels build`"), "{what}: {text}");
        }
    }

    #[test]
    fn arg_sizes_skip_hidden_arguments() {
        let arg = |size, kind: &str| ArgMeta { name: None, offset: 0, size, value_kind: kind.to_string() };
        let meta = AmdKernelMeta {
            name: "k".into(),
            symbol: "k.kd".into(),
            vgpr_count: 1,
            agpr_count: None,
            sgpr_count: 1,
            lds_bytes: 0,
            scratch_bytes: 0,
            wave_size: WaveSize(64),
            max_group_size: 256,
            kernarg_bytes: 48,
            vgpr_spill_count: None,
            sgpr_spill_count: None,
            args: vec![
                arg(8, "global_buffer"),
                arg(4, "by_value"),
                arg(4, "hidden_block_count_x"),
                arg(8, "hidden_hostcall_buffer"),
            ],
        };
        assert_eq!(arg_sizes(&meta), [8, 4]);
    }

    #[test]
    fn readelf_parser_reads_its_own_format() {
        let text = concat!(
            "amdhsa.kernels:\n",
            "  - .agpr_count:     0\n",
            "    .args:\n",
            "      - .address_space:  global\n",
            "        .offset:         0\n",
            "        .size:           8\n",
            "        .value_kind:     global_buffer\n",
            "    .language_version:\n",
            "      - 2\n",
            "      - 0\n",
            "    .name:           k\n",
            "  - .args:           []\n",
            "    .name:           e\n",
            "amdhsa.target:   amdgcn-amd-amdhsa--gfx90a\n",
            "amdhsa.version:\n",
            "  - 1\n",
            "  - 1\n",
        );
        let (kernels, target) = parse_readelf(text);
        assert_eq!(target.as_deref(), Some("amdgcn-amd-amdhsa--gfx90a"));
        assert_eq!(kernels.len(), 2);
        assert_eq!(kernels[0].fields[".name"], "k");
        assert_eq!(kernels[0].args.len(), 1);
        assert_eq!(kernels[0].args[0][".value_kind"], "global_buffer");
        assert_eq!(kernels[1].args.len(), 0);
    }
}
