//! Clang offload bundles, as `hipcc --genco` writes them: one file holding a code object per target.
//!
//! Layout (all integers u64 little-endian): the magic `__CLANG_OFFLOAD_BUNDLE__`, the entry count, then per entry
//! its offset from the start of the file, its size and its target triple (length, then the bytes, no NUL). hipcc
//! writes an empty host entry (`host-x86_64-unknown-linux`) and one entry per `--offload-arch`, named
//! `hipv4-amdgcn-amd-amdhsa--gfx90a` (older ROCm: `hip-amdgcn-amd-amdhsa-gfx906`), possibly with target features
//! (`...--gfx90a:sramecc+:xnack-`). The compressed form (magic `CCOB`, `--offload-compress`) is not read here.

use super::{Error, Result};
use crate::device::Arch;

/// The magic at the start of an uncompressed bundle.
pub const MAGIC: &[u8] = b"__CLANG_OFFLOAD_BUNDLE__";
/// The magic at the start of a compressed bundle.
const COMPRESSED_MAGIC: &[u8] = b"CCOB";

/// One entry of a bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry<'a> {
    /// Offload kind and target, e.g. `hipv4-amdgcn-amd-amdhsa--gfx90a`.
    pub triple: String,
    /// The entry's bytes (for an AMD GPU entry, an ELF code object).
    pub bytes: &'a [u8],
}

impl Entry<'_> {
    /// The AMD GPU architecture of a HIP device entry, or `None` for the host entry and other kinds.
    pub fn amd_arch(&self) -> Option<Arch> {
        let target = self.triple.strip_prefix("hipv4-").or_else(|| self.triple.strip_prefix("hip-"))?;
        let processor = target.strip_prefix("amdgcn-amd-amdhsa")?.trim_start_matches('-');
        Arch::parse(processor).ok()
    }
}

/// Whether `bytes` start like an offload bundle (compressed or not).
pub fn is_bundle(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC) || bytes.starts_with(COMPRESSED_MAGIC)
}

/// The entries of a bundle, in file order, each checked to lie inside the file.
pub fn entries(bytes: &[u8]) -> Result<Vec<Entry<'_>>> {
    let corrupt = |why: String| Error::Corrupt { reason: format!("clang offload bundle: {why}") };
    if bytes.starts_with(COMPRESSED_MAGIC) {
        return Err(corrupt(
            "compressed (CCOB), which this suite does not read: build without --offload-compress".into(),
        ));
    }
    if !bytes.starts_with(MAGIC) {
        return Err(corrupt("missing the __CLANG_OFFLOAD_BUNDLE__ magic".into()));
    }
    let mut at = MAGIC.len();
    let u64_at = |at: &mut usize, what: &str| -> Result<u64> {
        let field = bytes.get(*at..*at + 8).ok_or_else(|| corrupt(format!("truncated in the {what} at byte {at}")))?;
        *at += 8;
        let mut le = [0u8; 8];
        le.copy_from_slice(field);
        Ok(u64::from_le_bytes(le))
    };
    let count = u64_at(&mut at, "entry count")?;
    // Each entry header takes at least 24 bytes: a count beyond that is garbage, not a reason to allocate.
    if count > (bytes.len() / 24) as u64 {
        return Err(corrupt(format!("claims {count} entries in {} bytes", bytes.len())));
    }
    let mut headers = Vec::new();
    for i in 0..count {
        let offset = u64_at(&mut at, "entry offset")?;
        let size = u64_at(&mut at, "entry size")?;
        let triple_len = u64_at(&mut at, "triple length")?;
        let triple = usize::try_from(triple_len)
            .ok()
            .and_then(|n| bytes.get(at..at.checked_add(n)?))
            .ok_or_else(|| corrupt(format!("entry {i}'s triple runs past the end")))?;
        at += triple.len();
        headers.push((i, offset, size, String::from_utf8_lossy(triple).into_owned()));
    }
    headers
        .into_iter()
        .map(|(i, offset, size, triple)| {
            let range = usize::try_from(offset)
                .ok()
                .zip(usize::try_from(size).ok())
                .and_then(|(o, s)| Some(o..o.checked_add(s)?))
                .filter(|r| r.end <= bytes.len());
            let range = range.ok_or_else(|| {
                corrupt(format!("entry {i} ({triple}) at {offset}+{size} runs past the end ({} bytes)", bytes.len()))
            })?;
            Ok(Entry { triple, bytes: &bytes[range] })
        })
        .collect()
}

/// The AMD GPU code objects of a bundle with their architectures, in file order.
pub fn amd_objects(bytes: &[u8]) -> Result<Vec<(Arch, &[u8])>> {
    let entries = entries(bytes)?;
    let found: Vec<(Arch, &[u8])> = entries.iter().filter_map(|e| Some((e.amd_arch()?, e.bytes))).collect();
    if found.is_empty() {
        let triples = entries.iter().map(|e| e.triple.as_str()).collect::<Vec<_>>().join(", ");
        return Err(Error::Corrupt {
            reason: format!("clang offload bundle with no AMD GPU code object (entries: {triples})"),
        });
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::test_support::fixture;

    /// A bundle built by hand: `entries` of (triple, bytes), laid out after the header.
    pub(crate) fn make(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let header_len: usize = MAGIC.len() + 8 + entries.iter().map(|(t, _)| 24 + t.len()).sum::<usize>();
        let mut out = MAGIC.to_vec();
        out.extend((entries.len() as u64).to_le_bytes());
        let mut offset = header_len;
        for (triple, bytes) in entries {
            out.extend((offset as u64).to_le_bytes());
            out.extend((bytes.len() as u64).to_le_bytes());
            out.extend((triple.len() as u64).to_le_bytes());
            out.extend(triple.as_bytes());
            offset += bytes.len();
        }
        for (_, bytes) in entries {
            out.extend(*bytes);
        }
        out
    }

    #[test]
    fn triples_name_their_architecture() {
        let cases = [
            ("hipv4-amdgcn-amd-amdhsa--gfx90a", Some("gfx90a")),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-", Some("gfx90a")),
            ("hip-amdgcn-amd-amdhsa-gfx906", Some("gfx906")),
            ("hipv4-amdgcn-amd-amdhsa--gfx1100", Some("gfx1100")),
            ("host-x86_64-unknown-linux", None),
            ("openmp-amdgcn-amd-amdhsa--gfx90a", None),
            ("hipv4-nvptx64-nvidia-cuda--sm_90", None),
        ];
        for (triple, want) in cases {
            let e = Entry { triple: triple.to_string(), bytes: &[] };
            assert_eq!(e.amd_arch().map(|a| a.to_string()).as_deref(), want, "{triple}");
        }
    }

    #[test]
    fn hipcc_bundle_has_host_and_device_entries() {
        let bytes = fixture("smoke.gfx90a.hsaco");
        let e = entries(&bytes).unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].triple, "host-x86_64-unknown-linux");
        assert!(e[0].bytes.is_empty());
        assert_eq!(e[1].triple, "hipv4-amdgcn-amd-amdhsa--gfx90a");
        assert!(e[1].bytes.starts_with(b"\x7fELF"));
        let objects = amd_objects(&bytes).unwrap();
        assert_eq!(objects.len(), 1);
        assert_eq!(objects[0].0.as_str(), "gfx90a");
    }

    #[test]
    fn hand_made_bundles_round_trip() {
        let b = make(&[
            ("host-x86_64-unknown-linux", b""),
            ("hipv4-amdgcn-amd-amdhsa--gfx908", b"abc"),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a", b"defg"),
        ]);
        let objects = amd_objects(&b).unwrap();
        assert_eq!(
            objects.iter().map(|(a, b)| (a.as_str(), *b)).collect::<Vec<_>>(),
            [("gfx908", &b"abc"[..]), ("gfx90a", &b"defg"[..])]
        );
    }

    #[test]
    fn broken_bundles_are_corrupt_with_a_reason() {
        let good = make(&[("hipv4-amdgcn-amd-amdhsa--gfx90a", b"0123456789")]);
        let mut huge_count = good.clone();
        huge_count[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
        let mut past_end = good.clone();
        past_end[40..48].copy_from_slice(&1000u64.to_le_bytes());
        let cases: Vec<(&str, Vec<u8>, &str)> = vec![
            ("magic only", MAGIC.to_vec(), "truncated in the entry count"),
            ("cut in the header", good[..40].to_vec(), "truncated in the entry size"),
            ("cut in the body", good[..good.len() - 1].to_vec(), "runs past the end"),
            ("absurd count", huge_count, "claims"),
            ("size past end", past_end, "runs past the end"),
            ("compressed", b"CCOB\x01\x00\x01\x00".to_vec(), "compressed (CCOB)"),
            ("host only", make(&[("host-x86_64-unknown-linux", b"")]), "no AMD GPU code object"),
        ];
        for (what, bytes, want) in cases {
            let e = amd_objects(&bytes).unwrap_err();
            assert!(matches!(e, Error::Corrupt { .. }), "{what}: {e}");
            assert!(e.to_string().contains(want), "{what}: {e}");
        }
    }
}
