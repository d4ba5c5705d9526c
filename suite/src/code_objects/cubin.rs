//! What a cubin (nvcc's code object) says of its kernels without the CUDA driver: their names and the resources
//! ptxas recorded for each, read from its ELF sections as `cuobjdump --dump-resource-usage` reads them (a dry run
//! plans an NVIDIA part from them, [`crate::planning`]).

use object::elf::{FileHeader64, EM_CUDA};
use object::read::elf::{FileHeader, SectionHeader, SectionTable};
use object::Endianness;

use super::metadata::corrupt;
use super::Result;

/// The kernels a cubin defines, from its section names: nvcc puts each kernel's code in `.text.<name>`. The CUDA
/// driver has no call that lists a module's functions, and `suite kernels inspect` needs the names to ask it for
/// each kernel's resources.
pub fn cubin_kernel_names(bytes: &[u8]) -> Result<Vec<String>> {
    let (endian, sections) = cubin_sections(bytes)?;
    text_names(endian, &sections)
}

type Sections<'data> = SectionTable<'data, FileHeader64<Endianness>>;

/// A cubin's section table, after checking that `bytes` are a 64-bit ELF for EM_CUDA.
fn cubin_sections(bytes: &[u8]) -> Result<(Endianness, Sections<'_>)> {
    let header = FileHeader64::<Endianness>::parse(bytes).map_err(|e| corrupt(format!("not a 64-bit ELF: {e}")))?;
    let endian = header.endian().map_err(|e| corrupt(format!("ELF header: {e}")))?;
    if header.e_machine(endian) != EM_CUDA {
        return Err(corrupt("not a cubin (the ELF machine is not EM_CUDA)"));
    }
    let sections = header.sections(endian, bytes).map_err(|e| corrupt(format!("cubin section table: {e}")))?;
    Ok((endian, sections))
}

/// The kernels named by `.text.<name>` sections, sorted.
fn text_names(endian: Endianness, sections: &Sections<'_>) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for section in sections.iter() {
        let name = sections.section_name(endian, section).map_err(|e| corrupt(format!("cubin section name: {e}")))?;
        if let Some(kernel) = name.strip_prefix(b".text.") {
            names.push(String::from_utf8_lossy(kernel).into_owned());
        }
    }
    names.sort();
    Ok(names)
}

/// What a cubin records of one kernel's resources, as `cuobjdump --dump-resource-usage` reads them: the registers
/// per thread ptxas allocated (`EIATTR_REGCOUNT` in `.nv.info`, keyed by the kernel's symbol), its static shared
/// memory (the size of `.nv.shared.<name>`) and its launch bounds' largest block (`EIATTR_MAX_THREADS` in
/// `.nv.info.<name>`, x·y·z), where it has some.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CubinKernel {
    /// The kernel's name.
    pub name: String,
    /// 32-bit registers per thread.
    pub registers: u32,
    /// Static shared memory per block, bytes.
    pub shared_bytes: u32,
    /// The largest block its launch bounds allow.
    pub max_threads: Option<u32>,
}

/// `.nv.info` attributes read here (the CUDA toolkit's `EIATTR_*` numbers).
const EIATTR_MAX_THREADS: u8 = 0x05;
const EIATTR_REGCOUNT: u8 = 0x2f;
/// `.nv.info` value formats: a header of 4 bytes (format, attribute, a 16-bit value or size), and for
/// `EIFMT_SVAL` that many bytes after it.
const EIFMT_SVAL: u8 = 0x04;

/// The `(attribute, payload)` entries of an `.nv.info` section (payloads of `EIFMT_SVAL` entries only).
fn nv_info_entries(data: &[u8]) -> Result<Vec<(u8, &[u8])>> {
    let mut entries = Vec::new();
    let mut at = 0;
    while at + 4 <= data.len() {
        let (format, attribute) = (data[at], data[at + 1]);
        let value = usize::from(u16::from_le_bytes([data[at + 2], data[at + 3]]));
        at += 4;
        if format == EIFMT_SVAL {
            let payload = data.get(at..at + value).ok_or_else(|| corrupt("cubin .nv.info entry past its section"))?;
            entries.push((attribute, payload));
            at += value;
        }
    }
    Ok(entries)
}

/// Each kernel's resources in a cubin ([`CubinKernel`]), in name order. A kernel with no register count recorded
/// is left out (the caller then knows only its name).
pub fn cubin_kernels(bytes: &[u8]) -> Result<Vec<CubinKernel>> {
    let (endian, sections) = cubin_sections(bytes)?;
    let symbols = sections
        .symbols(endian, bytes, object::elf::SHT_SYMTAB)
        .map_err(|e| corrupt(format!("cubin symbol table: {e}")))?;
    let u32_at = |b: &[u8], i: usize| b.get(i..i + 4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
    let mut registers: Vec<(String, u32)> = Vec::new();
    let mut shared: Vec<(String, u32)> = Vec::new();
    let mut max_threads: Vec<(String, u32)> = Vec::new();
    for section in sections.iter() {
        let name = sections.section_name(endian, section).map_err(|e| corrupt(format!("cubin section name: {e}")))?;
        let data = || section.data(endian, bytes).map_err(|e| corrupt(format!("cubin section data: {e}")));
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        if name == b".nv.info" {
            for (attribute, payload) in nv_info_entries(data()?)? {
                let (Some(symbol), Some(count)) = (u32_at(payload, 0), u32_at(payload, 4)) else { continue };
                if attribute == EIATTR_REGCOUNT {
                    let symbol = symbols
                        .symbol(object::read::SymbolIndex(symbol as usize))
                        .map_err(|e| corrupt(format!("cubin register count of symbol {symbol}: {e}")))?;
                    let kernel = symbols.symbol_name(endian, symbol).map_err(|e| corrupt(format!("{e}")))?;
                    registers.push((text(kernel), count));
                }
            }
        } else if let Some(kernel) = name.strip_prefix(b".nv.info.") {
            for (attribute, payload) in nv_info_entries(data()?)? {
                if let (EIATTR_MAX_THREADS, Some(x), Some(y), Some(z)) =
                    (attribute, u32_at(payload, 0), u32_at(payload, 4), u32_at(payload, 8))
                {
                    max_threads.push((text(kernel), x.saturating_mul(y).saturating_mul(z)));
                }
            }
        } else if let Some(kernel) = name.strip_prefix(b".nv.shared.") {
            let size = u32::try_from(section.sh_size(endian)).unwrap_or(u32::MAX);
            shared.push((text(kernel), size));
        }
    }
    let find = |list: &[(String, u32)], name: &str| list.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
    // In name order, as text_names gives them.
    let kernels: Vec<CubinKernel> = text_names(endian, &sections)?
        .into_iter()
        .filter_map(|name| {
            Some(CubinKernel {
                registers: find(&registers, &name)?,
                shared_bytes: find(&shared, &name).unwrap_or(0),
                max_threads: find(&max_threads, &name),
                name,
            })
        })
        .collect();
    Ok(kernels)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code_objects::test_support::fixture;
    use crate::code_objects::Error;

    #[test]
    fn cubin_kernel_names_come_from_text_sections() {
        for file in ["smoke.sm_90.cubin", "smoke.sm_80.abi7.cubin"] {
            assert_eq!(cubin_kernel_names(&fixture(file)).unwrap(), ["smoke_empty", "smoke_triad"], "{file}");
        }
        assert!(matches!(cubin_kernel_names(&fixture("smoke.gfx90a.v5.o")), Err(Error::Corrupt { .. })));
        assert!(matches!(cubin_kernel_names(b"junk"), Err(Error::Corrupt { .. })));
    }

    /// The registers `cuobjdump --dump-resource-usage` prints for the fixture (nvcc 13, sm_90): smoke_empty REG:4,
    /// smoke_triad REG:12, no shared memory, no launch bounds.
    #[test]
    fn cubin_kernels_read_their_registers_and_shared_memory() {
        let kernels = cubin_kernels(&fixture("smoke.sm_90.cubin")).unwrap();
        let got: Vec<(&str, u32, u32, Option<u32>)> =
            kernels.iter().map(|k| (k.name.as_str(), k.registers, k.shared_bytes, k.max_threads)).collect();
        assert_eq!(got, [("smoke_empty", 4, 0, None), ("smoke_triad", 12, 0, None)]);
        assert!(matches!(cubin_kernels(&fixture("smoke.gfx90a.v5.o")), Err(Error::Corrupt { .. })));
        assert!(matches!(cubin_kernels(b"junk"), Err(Error::Corrupt { .. })));
    }
}
