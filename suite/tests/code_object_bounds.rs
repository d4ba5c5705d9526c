//! Issue 31, item 8 (code-object parsing): a crafted code object of a few kilobytes must not make the suite allocate
//! gigabytes. Each case runs `suite kernels inspect --kernels-dir` on the crafted object as its own process with its
//! address space limited (`prlimit --as`) to far more than a real code object needs: a parser that trusts a
//! declared length fails to allocate and aborts, where a bounded one refuses the object with a message.

use std::process::Command;

/// The address space the inspecting process may use: the suite and a real code object's parse need far less.
const ADDRESS_SPACE: u64 = 256 << 20;

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(suite::test_deps::crate_path("tests/fixtures/kernels").join(name)).unwrap()
}

/// `suite kernels inspect` of `object` as smoke's prebuilt gfx90a object (with the hash `suite kernels build`
/// records beside it, so the bytes themselves are parsed), in a process limited to [`ADDRESS_SPACE`]: its exit code
/// and stderr.
fn inspect(object: &[u8]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("smoke.gfx90a.hsaco");
    std::fs::write(&path, object).unwrap();
    let hash: String = <sha2::Sha256 as sha2::Digest>::digest(object).iter().map(|b| format!("{b:02x}")).collect();
    std::fs::write(dir.path().join("smoke.gfx90a.hsaco.sha256"), hash + "\n").unwrap();
    let out = Command::new("prlimit")
        .arg(format!("--as={ADDRESS_SPACE}"))
        .arg(env!("CARGO_BIN_EXE_suite"))
        .arg("--kernels-dir")
        .arg(dir.path())
        .args(["kernels", "inspect", "--arch", "gfx90a", "--sources", "smoke"])
        .env("SUITE_CACHE_DIR", dir.path().join("cache"))
        .output()
        .expect("prlimit (util-linux) runs the suite");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn assert_refused(case: &str, (code, stderr): (Option<i32>, String), message: &str) {
    assert!(
        !stderr.contains("memory allocation") && !stderr.contains("out of memory"),
        "{case}: the parser tried to allocate what was declared: {stderr}"
    );
    assert_eq!(code, Some(1), "{case}: {stderr}");
    assert!(stderr.contains("not a GPU code object") && stderr.contains(message), "{case}: {stderr}");
}

/// The real smoke object for gfx90a with its metadata note's msgpack replaced, byte for byte, by arrays that each
/// declare 2^32 - 1 elements, nested as deep as the note is long: a few KB that ask a trusting decoder for
/// gigabytes.
#[test]
fn a_metadata_note_declaring_huge_lengths_is_refused_without_allocating_for_them() {
    let mut elf = fixture("smoke.gfx90a.v5.o");
    let name = elf.windows(8).position(|w| w == b"AMDGPU\0\0").expect("the AMDGPU note's name");
    let descsz = u32::from_le_bytes(elf[name - 8..name - 4].try_into().unwrap()) as usize;
    let desc = name + 8;
    let crafted: Vec<u8> = [0xdd, 0xff, 0xff, 0xff, 0xff].iter().copied().cycle().take(descsz).collect();
    elf[desc..desc + descsz].copy_from_slice(&crafted);
    assert!(elf.len() < 16 << 10, "{} bytes", elf.len());
    assert_refused("nested huge arrays", inspect(&elf), "declares 4294967295 items");
}

/// A zlib stream of `size` zero bytes, written directly as one fixed-Huffman deflate block of 258-byte copies (13 bits
/// each: far quicker to make than compressing, about 1/160 of the size); its checksum is not written (a reader stops
/// at the size it was promised).
fn zlib_zeros(size: u64) -> Vec<u8> {
    struct Bits {
        out: Vec<u8>,
        acc: u64,
        used: u32,
    }
    impl Bits {
        /// `count` bits of `value`, least significant first.
        fn lsb(&mut self, value: u64, count: u32) {
            self.acc |= value << self.used;
            self.used += count;
            while self.used >= 8 {
                self.out.push(self.acc as u8);
                self.acc >>= 8;
                self.used -= 8;
            }
        }
        /// A Huffman code of `count` bits, most significant first.
        fn code(&mut self, code: u64, count: u32) {
            let reversed = (0..count).fold(0, |r, i| r | (((code >> i) & 1) << (count - 1 - i)));
            self.lsb(reversed, count);
        }
    }
    let mut bits = Bits { out: vec![0x78, 0x01], acc: 0, used: 0 };
    bits.lsb(1, 1); // the last block
    bits.lsb(1, 2); // fixed Huffman codes
    bits.code(0x30, 8); // literal 0
    for _ in 0..(size - 1) / 258 {
        bits.code(0xc5, 8); // length 258
        bits.code(0, 5); // distance 1
    }
    for _ in 0..(size - 1) % 258 {
        bits.code(0x30, 8);
    }
    bits.code(0, 7); // end of block
    bits.lsb(0, 7);
    bits.out
}

/// A compressed bundle whose header claims about 1 GB (under the old 1 GiB cap), its zlib stream filling that much:
/// refused from its header, before anything is decompressed.
#[test]
fn a_compressed_bundle_that_expands_past_any_code_object_is_refused_before_decompressing() {
    let size: u64 = 1000 << 20;
    let stream = zlib_zeros(size);
    // CCOB version 2: magic, version, method (0: zlib), file size, uncompressed size, hash, stream.
    let mut bundle = b"CCOB".to_vec();
    bundle.extend(2u16.to_le_bytes());
    bundle.extend(0u16.to_le_bytes());
    bundle.extend(((4 + 2 + 2 + 4 + 4 + 8 + stream.len()) as u32).to_le_bytes());
    bundle.extend((size as u32).to_le_bytes());
    bundle.extend(0u64.to_le_bytes());
    bundle.extend(&stream);
    assert!(bundle.len() < 8 << 20, "{} bytes", bundle.len());
    assert_refused("a 1000 MiB zlib stream", inspect(&bundle), "more than any code object");
}
