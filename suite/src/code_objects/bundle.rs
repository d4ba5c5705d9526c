//! Clang offload bundles, as `hipcc --genco` writes them: one file holding a code object per target.
//!
//! Layout (all integers u64 little-endian): the magic `__CLANG_OFFLOAD_BUNDLE__`, the entry count, then per entry
//! its offset from the start of the file, its size and its target triple (length, then the bytes, no NUL). hipcc
//! writes an empty host entry (`host-x86_64-unknown-linux`) and one entry per `--offload-arch`, named
//! `hipv4-amdgcn-amd-amdhsa--gfx90a` (older ROCm: `hip-amdgcn-amd-amdhsa-gfx906`), possibly with target features
//! (`...--gfx90a:sramecc+:xnack-`).
//!
//! Compressed bundles (`hipcc --offload-compress`, `clang-offload-bundler -compress`; recent ROCm may write them by
//! default) wrap a whole uncompressed bundle. Layout, from clang's `CompressedOffloadBundle` (OffloadBundler.cpp),
//! integers little-endian: the magic `CCOB`, a u16 format version, a u16 method (0 = zlib, 1 = zstd: LLVM's
//! `compression::Format`), then
//! - version 1: u32 uncompressed size, u64 hash (LLVM 18);
//! - version 2: u32 total file size, u32 uncompressed size, u64 hash (LLVM 19);
//! - version 3: u64 total file size, u64 uncompressed size, u64 hash (LLVM 20 and later);
//!
//! and the compressed bytes up to the total size (version 1: to the end of the file). The hash is the low 64 bits
//! of the MD5 of the uncompressed bundle; it is not checked here (the uncompressed size and the bundle's own
//! structure are). [`decompressed`] turns either form into the uncompressed bytes that [`entries`] reads.

use std::borrow::Cow;
use std::io::Read;

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
        self.amd_target().map(|t| t.arch)
    }

    /// The AMD GPU target of a HIP device entry, target features included (`gfx90a:xnack+`), or `None` for the
    /// host entry and other kinds.
    pub fn amd_target(&self) -> Option<TargetId> {
        let target = self.triple.strip_prefix("hipv4-").or_else(|| self.triple.strip_prefix("hip-"))?;
        let processor = target.strip_prefix("amdgcn-amd-amdhsa")?.trim_start_matches('-');
        TargetId::parse(processor).ok()
    }
}

/// An AMD target ID: a processor and the target features a code object was built for or a device runs with, e.g.
/// `gfx90a:sramecc+:xnack-` (LLVM AMDGPUUsage, "Target ID"). A feature left out (`gfx90a`) means either setting.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(into = "String")]
pub struct TargetId {
    /// The processor.
    pub arch: Arch,
    /// Target features with their setting (`xnack+` is `("xnack", true)`), sorted by name.
    pub features: Vec<(String, bool)>,
}

impl TargetId {
    /// Parses `gfx90a`, `gfx90a:xnack+` or `gfx90a:sramecc+:xnack-` (also an NVIDIA name, with no features).
    pub fn parse(text: &str) -> std::result::Result<TargetId, crate::device::ArchError> {
        let bad = || crate::device::ArchError(text.to_string());
        let mut parts = text.trim().split(':');
        let arch = Arch::parse(parts.next().unwrap_or_default())?;
        let mut features = Vec::new();
        for part in parts {
            let (name, on) = match (part.strip_suffix('+'), part.strip_suffix('-')) {
                (Some(name), _) => (name, true),
                (_, Some(name)) => (name, false),
                _ => return Err(bad()),
            };
            if name.is_empty() || features.iter().any(|(n, _): &(String, bool)| n == name) {
                return Err(bad());
            }
            features.push((name.to_string(), on));
        }
        features.sort();
        Ok(TargetId { arch, features })
    }

    /// Whether code built for this target runs on a device that reports `device`: the same processor, and every
    /// feature this target sets set the same way on the device (clang's rule for picking a bundle entry,
    /// `isCodeObjectCompatible`). A feature this target leaves out matches either setting.
    pub fn runs_on(&self, device: &TargetId) -> bool {
        self.arch == device.arch && self.features.iter().all(|f| device.features.contains(f))
    }
}

impl From<TargetId> for String {
    fn from(t: TargetId) -> String {
        t.to_string()
    }
}

impl std::fmt::Display for TargetId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.arch)?;
        for (name, on) in &self.features {
            write!(f, ":{name}{}", if *on { '+' } else { '-' })?;
        }
        Ok(())
    }
}

/// Whether `bytes` start like an offload bundle (compressed or not).
pub fn is_bundle(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC) || bytes.starts_with(COMPRESSED_MAGIC)
}

/// Largest uncompressed bundle accepted (64 MiB): far above any real one (this repository's largest, matmul.hip with
/// every rung for one architecture, is a few MB), so a size field beyond it is garbage or a trap, not a reason to
/// allocate and decompress.
pub const MAX_UNCOMPRESSED: u64 = 64 << 20;

/// The most zlib can expand (deflate's limit is about 1032:1): a zlib stream that claims more is not one.
const ZLIB_MAX_RATIO: u64 = 1032;

/// The header of a compressed bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompressedHeader {
    /// Format version: 1, 2 or 3.
    pub version: u16,
    /// Compression method: 0 = zlib, 1 = zstd.
    pub method: u16,
    /// Bytes of the whole compressed file, header included, where the version records it (2 and later).
    pub total_bytes: Option<u64>,
    /// Bytes of the bundle once decompressed.
    pub uncompressed_bytes: u64,
    /// Bytes of the header; the compressed stream follows.
    pub header_bytes: usize,
}

/// Reads the header of a compressed bundle (`bytes` start with `CCOB`).
pub fn compressed_header(bytes: &[u8]) -> Result<CompressedHeader> {
    let corrupt = |why: String| Error::Corrupt { reason: format!("compressed clang offload bundle (CCOB): {why}") };
    let field = |at: usize, len: usize, what: &str| -> Result<u64> {
        let b = bytes.get(at..at + len).ok_or_else(|| corrupt(format!("truncated in the {what} at byte {at}")))?;
        let mut le = [0u8; 8];
        le[..len].copy_from_slice(b);
        Ok(u64::from_le_bytes(le))
    };
    let at = COMPRESSED_MAGIC.len();
    let version = field(at, 2, "version")? as u16;
    let method = field(at + 2, 2, "method")? as u16;
    let (total_bytes, uncompressed_bytes, header_bytes) = match version {
        1 => (None, field(at + 4, 4, "uncompressed size")?, at + 4 + 4 + 8),
        2 => (Some(field(at + 4, 4, "file size")?), field(at + 8, 4, "uncompressed size")?, at + 4 + 8 + 8),
        3 => (Some(field(at + 4, 8, "file size")?), field(at + 12, 8, "uncompressed size")?, at + 4 + 16 + 8),
        v => {
            return Err(corrupt(format!(
                "format version {v}, which this suite does not know (it reads 1 to 3): unbundle it with the \
                 clang-offload-bundler that wrote it (--unbundle --type=o), or rebuild without --offload-compress"
            )))
        }
    };
    field(header_bytes - 8, 8, "hash")?;
    if !matches!(method, 0 | 1) {
        return Err(corrupt(format!("compression method {method}: known are 0 (zlib) and 1 (zstd)")));
    }
    if let Some(total) = total_bytes {
        if total < header_bytes as u64 || total > bytes.len() as u64 {
            return Err(corrupt(format!("records {total} bytes, but the file has {} bytes", bytes.len())));
        }
    }
    if uncompressed_bytes > MAX_UNCOMPRESSED {
        return Err(corrupt(format!(
            "claims {uncompressed_bytes} bytes uncompressed, more than any code object ({MAX_UNCOMPRESSED} bytes at most)"
        )));
    }
    let stream = total_bytes.unwrap_or(bytes.len() as u64).saturating_sub(header_bytes as u64);
    if method == 0 && uncompressed_bytes > stream.saturating_mul(ZLIB_MAX_RATIO) + 64 {
        return Err(corrupt(format!(
            "claims {uncompressed_bytes} bytes uncompressed from a zlib stream of {stream} bytes, more than zlib can expand"
        )));
    }
    Ok(CompressedHeader { version, method, total_bytes, uncompressed_bytes, header_bytes })
}

/// The uncompressed bundle: `bytes` themselves, or for a compressed bundle (`CCOB`) its decompressed contents,
/// checked to have the recorded size and to be an uncompressed bundle.
pub fn decompressed(bytes: &[u8]) -> Result<Cow<'_, [u8]>> {
    if !bytes.starts_with(COMPRESSED_MAGIC) {
        return Ok(Cow::Borrowed(bytes));
    }
    let corrupt = |why: String| Error::Corrupt { reason: format!("compressed clang offload bundle (CCOB): {why}") };
    let header = compressed_header(bytes)?;
    // Version 1 has no total size: the stream runs to the end of the file. Bytes past a recorded total (a bundle
    // embedded in a larger file) are not part of it.
    let end = header.total_bytes.map_or(bytes.len(), |t| t as usize);
    let stream = &bytes[header.header_bytes..end];
    // One byte more than promised is read, so a stream longer than its header says is caught.
    let limit = header.uncompressed_bytes + 1;
    let mut out = Vec::new();
    let read = match header.method {
        0 => flate2::read::ZlibDecoder::new(stream).take(limit).read_to_end(&mut out).map_err(|e| e.to_string()),
        _ => match ruzstd::decoding::StreamingDecoder::new(stream) {
            Ok(decoder) => decoder.take(limit).read_to_end(&mut out).map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        },
    };
    let method = if header.method == 0 { "zlib" } else { "zstd" };
    read.map_err(|e| corrupt(format!("the {method} stream does not decompress: {e}")))?;
    if out.len() as u64 != header.uncompressed_bytes {
        return Err(corrupt(format!(
            "the {method} stream holds {} bytes, the header says {}",
            out.len(),
            header.uncompressed_bytes
        )));
    }
    if !out.starts_with(MAGIC) {
        return Err(corrupt("its contents are not an offload bundle (no __CLANG_OFFLOAD_BUNDLE__ magic)".into()));
    }
    Ok(Cow::Owned(out))
}

/// The entries of an uncompressed bundle, in file order, each checked to lie inside the file. A compressed
/// bundle goes through [`decompressed`] first.
pub fn entries(bytes: &[u8]) -> Result<Vec<Entry<'_>>> {
    let corrupt = |why: String| Error::Corrupt { reason: format!("clang offload bundle: {why}") };
    if bytes.starts_with(COMPRESSED_MAGIC) {
        return Err(corrupt("compressed (CCOB): decompress it first (bundle::decompressed)".into()));
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

/// The AMD GPU code objects of an uncompressed bundle with their architectures, in file order.
pub fn amd_objects(bytes: &[u8]) -> Result<Vec<(Arch, &[u8])>> {
    Ok(amd_targets(bytes)?.into_iter().map(|(t, b)| (t.arch, b)).collect())
}

/// The AMD GPU code objects of an uncompressed bundle with their target IDs, in file order.
pub fn amd_targets(bytes: &[u8]) -> Result<Vec<(TargetId, &[u8])>> {
    let entries = entries(bytes)?;
    let found: Vec<(TargetId, &[u8])> = entries.iter().filter_map(|e| Some((e.amd_target()?, e.bytes))).collect();
    if found.is_empty() {
        let triples = entries.iter().map(|e| e.triple.as_str()).collect::<Vec<_>>().join(", ");
        return Err(Error::Corrupt {
            reason: format!("clang offload bundle with no AMD GPU code object (entries: {triples})"),
        });
    }
    Ok(found)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::code_objects::test_support::fixture;

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

    #[test]
    fn target_ids_parse_and_match_like_clang() {
        let t = |s: &str| TargetId::parse(s).unwrap();
        assert_eq!(t("gfx90a:xnack-:sramecc+").to_string(), "gfx90a:sramecc+:xnack-");
        assert_eq!(t("gfx90a").features, []);
        assert_eq!(t("sm_90").to_string(), "sm_90");
        for bad in ["gfx90a:xnack", "gfx90a:+", "gfx90a:xnack+:xnack-", "cuda", "gfx90a::"] {
            assert!(TargetId::parse(bad).is_err(), "{bad}");
        }
        // (code object, device, runs): a feature the object leaves out matches either setting; one it sets
        // must be set the same way on the device.
        let cases = [
            ("gfx90a", "gfx90a:sramecc+:xnack-", true),
            ("gfx90a:xnack-", "gfx90a:sramecc+:xnack-", true),
            ("gfx90a:sramecc+:xnack-", "gfx90a:sramecc+:xnack-", true),
            ("gfx90a:xnack+", "gfx90a:sramecc+:xnack-", false),
            ("gfx90a:sramecc-", "gfx90a:sramecc+:xnack-", false),
            ("gfx90a:xnack+", "gfx90a:sramecc+:xnack+", true),
            ("gfx90a:xnack-", "gfx90a", false),
            ("gfx908", "gfx90a:sramecc+:xnack-", false),
        ];
        for (object, device, runs) in cases {
            assert_eq!(t(object).runs_on(&t(device)), runs, "{object} on {device}");
        }
        let e = Entry { triple: "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+".into(), bytes: &[] };
        assert_eq!(e.amd_target().unwrap().to_string(), "gfx90a:xnack+");
    }

    /// A compressed bundle as clang lays it out (see the module doc), of `bundle`, by `method` (0 zlib, 1 zstd
    /// is not written here: no encoder), in header `version`.
    fn ccob(bundle: &[u8], version: u16, extra_tail: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(bundle).unwrap();
        let stream = z.finish().unwrap();
        let mut out = COMPRESSED_MAGIC.to_vec();
        out.extend(version.to_le_bytes());
        out.extend(0u16.to_le_bytes());
        let header = match version {
            1 => 4 + 4 + 4 + 8,
            2 => 4 + 4 + 4 + 4 + 8,
            _ => 4 + 4 + 8 + 8 + 8,
        };
        let total = (header + stream.len()) as u64;
        match version {
            1 => out.extend((bundle.len() as u32).to_le_bytes()),
            2 => {
                out.extend((total as u32).to_le_bytes());
                out.extend((bundle.len() as u32).to_le_bytes());
            }
            _ => {
                out.extend(total.to_le_bytes());
                out.extend((bundle.len() as u64).to_le_bytes());
            }
        }
        out.extend(0x0123_4567_89ab_cdefu64.to_le_bytes()); // the hash, not checked
        out.extend(stream);
        out.extend(extra_tail);
        out
    }

    /// Made by clang-offload-bundler 19 with -compress (zstd, format version 2) from smoke.gfx90a.v5.o: see the
    /// fixtures' README.
    #[test]
    fn real_compressed_bundle_decompresses_to_its_code_object() {
        let bytes = fixture("smoke.gfx90a.v5.ccob.hsaco");
        assert!(is_bundle(&bytes));
        let h = compressed_header(&bytes).unwrap();
        assert_eq!((h.version, h.method, h.total_bytes, h.header_bytes), (2, 1, Some(bytes.len() as u64), 24));
        let plain = decompressed(&bytes).unwrap();
        assert_eq!(plain.len() as u64, h.uncompressed_bytes);
        let objects = amd_targets(&plain).unwrap();
        assert_eq!(objects.len(), 1);
        assert_eq!(objects[0].0.to_string(), "gfx90a");
        assert_eq!(objects[0].1, fixture("smoke.gfx90a.v5.o"));
        // An uncompressed bundle passes through untouched.
        let raw = fixture("smoke.gfx90a.hsaco");
        assert!(matches!(decompressed(&raw).unwrap(), Cow::Borrowed(b) if b == &raw[..]));
    }

    #[test]
    fn zlib_bundles_of_every_header_version_decompress() {
        let bundle = make(&[("host-x86_64-unknown-linux-gnu", b""), ("hipv4-amdgcn-amd-amdhsa--gfx90a", b"elf")]);
        for version in 1..=3 {
            let c = ccob(&bundle, version, &[]);
            assert_eq!(compressed_header(&c).unwrap().version, version);
            assert_eq!(&decompressed(&c).unwrap()[..], &bundle[..], "version {version}");
        }
        // Version 2 and 3 record the file size: bytes after it (the bundle embedded in a larger file) are not read.
        let c = ccob(&bundle, 3, b"trailing bytes of an enclosing file");
        assert_eq!(&decompressed(&c).unwrap()[..], &bundle[..]);
    }

    #[test]
    fn broken_compressed_bundles_are_corrupt_with_a_reason() {
        let bundle = make(&[("hipv4-amdgcn-amd-amdhsa--gfx90a", b"0123456789")]);
        let good = ccob(&bundle, 2, &[]);
        let with = |at: usize, bytes: &[u8]| {
            let mut b = good.clone();
            b[at..at + bytes.len()].copy_from_slice(bytes);
            b
        };
        let mut garbage = good.clone();
        let n = garbage.len();
        garbage[24..n].fill(0x55);
        let cases: Vec<(&str, Vec<u8>, &str)> = vec![
            ("magic only", b"CCOB".to_vec(), "truncated in the version"),
            ("cut header", good[..20].to_vec(), "truncated in the hash"),
            ("version 4", with(4, &4u16.to_le_bytes()), "format version 4"),
            ("method 2", with(6, &2u16.to_le_bytes()), "compression method 2"),
            ("file size past end", with(8, &100_000u32.to_le_bytes()), "records 100000 bytes"),
            ("size too small", with(12, &5u32.to_le_bytes()), "holds 6 bytes, the header says 5"),
            ("size too large", with(12, &200u32.to_le_bytes()), "the header says 200"),
            ("huge size", ccob_with_size(&bundle), "claims"),
            ("garbage stream", garbage, "does not decompress"),
            ("not a bundle inside", ccob(b"hello", 2, &[]), "not an offload bundle"),
        ];
        for (what, bytes, want) in cases {
            let e = decompressed(&bytes).unwrap_err();
            assert!(matches!(e, Error::Corrupt { .. }), "{what}: {e}");
            assert!(e.to_string().contains(want), "{what}: {e}");
        }
    }

    /// A version-3 header claiming more than [`MAX_UNCOMPRESSED`] bytes.
    fn ccob_with_size(bundle: &[u8]) -> Vec<u8> {
        let mut c = ccob(bundle, 3, &[]);
        c[16..24].copy_from_slice(&(MAX_UNCOMPRESSED + 1).to_le_bytes());
        c
    }
}
