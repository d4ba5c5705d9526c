//! No kernel hard-codes the wave size. Kernels name it GPU_WAVE_SIZE (kernels/include/gpu.h: 64 on AMD CDNA, 32 on
//! NVIDIA and RDNA's default) so that one source is right at both sizes; a literal 32 or 64 (or a lane mask 31, 63,
//! 0x1f, 0x3f) where the wave size is meant is right on one vendor and silently wrong on the other. This test reads
//! every `kernels/*.hip`, every `kernels/include/*.h` and the prelude of the kernels `suite::patterns` generates,
//! with comments and string contents removed, and fails on any such literal that is not in [`ALLOWED`], where each literal use that
//! means something else is listed with its reason. A stale entry (its line is gone) fails too, so the list stays
//! exactly the literal uses there are.

use std::path::Path;

use suite::patterns::{input, Reduce};
use suite::precision::Precision;

/// The values that are, or are derived from, a wave size.
const WAVE_VALUES: [u64; 4] = [31, 32, 63, 64];

/// A literal use that is not the wave size: the file, a piece of code its (comment-free) line contains, and why.
struct Allowed {
    file: &'static str,
    code: &'static str,
    why: &'static str,
}

const ALLOWED: &[Allowed] = &[
    Allowed {
        file: "include/matmul_wave_tile.h",
        code: "(n & ~31) | ((n & 2) << 3)",
        why: "the FP64 B slab's regroup works in groups of 32 doubles, the wave's sub-tile width WSUBN (32 columns on \
              either wave size), not the wave size",
    },
    Allowed {
        file: "include/matmul_wave_tile.h",
        code: "return bn % 64 == 0 ? 2 : 3;",
        why: "64 columns are two of the wave tile's sub-tiles of 32 (WSUBN: 8 lanes of 4 columns on either wave \
              size), not the wave size",
    },
    Allowed {
        file: "include/gpu.h",
        code: "#define GPU_WAVE_SIZE 64",
        why: "the definition itself, on AMD CDNA (wave64)",
    },
    Allowed {
        file: "include/gpu.h",
        code: "#define GPU_WAVE_SIZE 32",
        why: "the definition itself, on NVIDIA and RDNA's default (wave32)",
    },
    Allowed {
        file: "include/gpu.h",
        code: "GPU_HWREG(23, 0, 32)",
        why: "s_getreg's field width: all 32 bits of the hardware register",
    },
    Allowed {
        file: "pt.hip",
        code: "#define PT_BARRIER_LINE_WORDS 32u",
        why: "the software barrier's counters lie 128 bytes (32 four-byte words) apart, one per cache line, so \
              groups adding to different counters do not contend for one line",
    },
    Allowed {
        file: "include/matmul_wave_tile.h",
        code: "#define LDS_BANKS 32",
        why: "the LDS/shared-memory bank count (32 on gfx90a and NVIDIA), not the wave size",
    },
    Allowed {
        file: "matmul.hip",
        code: "KERNEL_PAIR(matmul_tiled_m32, 32 * 32, tiled, 32)",
        why: "the 32 x 32 item tile of the tiled rung (one item per C element of the tile) and its tile edge",
    },
    Allowed { file: "matmul.hip", code: "#define BT1_BM 64", why: "the 1-D block tile's rows of C" },
    Allowed { file: "matmul.hip", code: "#define BT1_BN 64", why: "the 1-D block tile's columns of C" },
    Allowed {
        file: "matmul.hip",
        code: "DOUBLE_BUFFER_KERNEL(",
        why: "tile shapes (BM, BN, BK, items) of the autotuning ladder; items are whole waves by static_assert",
    },
    Allowed {
        file: "matmul.hip",
        code: "DOUBLE_BUFFER_KERNEL_F64(",
        why: "the FP64 instances' tile shapes (BM, BN, BK, items); items are whole waves by static_assert",
    },
    Allowed { file: "matmul.hip", code: "SPLITK_KERNEL(", why: "split-K tile shapes (BM, BN, BK, items, slab)" },
    Allowed { file: "matmul.hip", code: "SPLITK_ATOMIC_KERNEL(", why: "split-K (atomic) tile shapes" },
    Allowed { file: "matmul.hip", code: "STREAMK_KERNEL(", why: "stream-K tile shapes" },
    Allowed { file: "matmul.hip", code: "SPLITK_KERNEL_F32(", why: "split-K tile shapes (FP32, with _packed twins)" },
    Allowed { file: "matmul.hip", code: "STREAMK_KERNEL_F32(", why: "stream-K tile shapes (FP32, with _packed twins)" },
    Allowed {
        file: "include/matmul_mfma.h",
        code: "static constexpr int M = 32, N = 32, K = 2, REGS = 16;",
        why: "the 32×32×2 block of v_mfma_f32_32x32x2f32 (its M and N), not the wave size",
    },
    Allowed {
        file: "include/matmul_mfma.h",
        code: "#define MFMA_LDS_BANKS 32",
        why: "the LDS bank count (32 on gfx90a), as LDS_BANKS in matmul_wave_tile.h",
    },
    Allowed {
        file: "matmul_dmma.hip",
        code: "DMMA_KERNELS(",
        why: "the DMMA rung's tile shapes (BM, BN, BK, warps, stages): NVIDIA only, whose warp is 32 by definition",
    },
    Allowed {
        file: "matmul_dmma.hip",
        code: "static_assert(dmma_smem_bytes<",
        why: "the DMMA shapes' dynamic shared memory checked against the table's figure: tile edges, not wave sizes",
    },
    Allowed {
        file: "occupancy.hip",
        code: "OCCUPANCY_REGISTERS(",
        why: "the register-pressure ladder: live floats per item (16, 32, 64, ...)",
    },
    Allowed {
        file: "pt.hip",
        code: "#define PT_MAX_LEVELS 32",
        why: "the most levels a task forest may have (per-level counters in LDS)",
    },
    Allowed {
        file: "pt.hip",
        code: "<< 32 | id",
        why: "packs a node's (level, tree) into the high half of a 64-bit word",
    },
    Allowed { file: "pt.hip", code: "(node >> 32)", why: "reads that high half back" },
    Allowed { file: "pt.hip", code: "PT_WRAPPERS(", why: "the FMAs per item of the work ladder (1, 4, 16, 64, 256)" },
];

/// `text` without its comments (`//` to the end of the line, `/* ... */`) and with the contents of its string and
/// character literals blanked (a static_assert's message is prose; a `//` inside a string is not a comment); line
/// breaks kept so lines still count.
fn without_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                while chars.peek().is_some_and(|&c| c != '\n') {
                    chars.next();
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                    }
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
            }
            '"' | '\'' => {
                out.push(c);
                while let Some(d) = chars.next() {
                    if d == '\\' {
                        chars.next();
                        out.push_str("  ");
                    } else if d == c || d == '\n' {
                        out.push(d);
                        break;
                    } else {
                        out.push(' ');
                    }
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// The value of a C++ numeric literal token (decimal, hex, float; suffixes u, l, f dropped), when it has one.
fn literal_value(token: &str) -> Option<f64> {
    let lower = token.to_ascii_lowercase();
    if let Some(hex) = lower.strip_prefix("0x") {
        return u64::from_str_radix(hex.trim_end_matches(['u', 'l']), 16).ok().map(|v| v as f64);
    }
    let digits = lower.trim_end_matches(['u', 'l']);
    let digits = if digits.contains(['.', 'e']) { digits.trim_end_matches('f') } else { digits };
    digits.parse::<f64>().ok()
}

/// Every line of `text` (1-based number, comment-free line) holding a literal whose value is a wave value.
fn wave_literals(text: &str) -> Vec<(usize, String)> {
    let mut hits = Vec::new();
    for (index, line) in without_comments(text).lines().enumerate() {
        let bytes = line.as_bytes();
        let mut i = 0;
        let mut hit = false;
        while i < bytes.len() {
            let c = bytes[i];
            if c.is_ascii_alphabetic() || c == b'_' {
                // An identifier (uint64_t, float4, matmul_tiled_m32): its digits are part of its name.
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
            } else if c.is_ascii_digit() || (c == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)) {
                let start = i;
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'.' || bytes[i] == b'_') {
                    i += 1;
                }
                hit |= literal_value(&line[start..i]).is_some_and(|v| WAVE_VALUES.iter().any(|&w| v == w as f64));
            } else {
                i += 1;
            }
        }
        if hit {
            hits.push((index + 1, line.trim().to_string()));
        }
    }
    hits
}

/// The kernel sources: every kernels/*.hip and kernels/include/*.h (as `include/NAME`), read from disk so that a
/// new file is covered without touching this test, and the generated fusion kernels' prelude.
fn kernel_sources() -> Vec<(String, String)> {
    let root = suite::test_deps::crate_path("../kernels");
    let mut sources = Vec::new();
    for (folder, ext, prefix) in [("", "hip", ""), ("include", "h", "include/")] {
        let dir = root.join(folder);
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| Path::new(name).extension().is_some_and(|x| x == ext))
            .collect();
        names.sort();
        for name in names {
            let text = std::fs::read_to_string(dir.join(&name)).unwrap();
            sources.push((format!("{prefix}{name}"), text));
        }
    }
    assert!(sources.len() >= 6, "kernels/*.hip and kernels/include/*.h: {:?}", sources.iter().map(|s| &s.0));
    // The prelude in both element types: FP64's takes `double` where FP32's has `float`, and nothing else.
    for element in Precision::ALL {
        let generated = input(0).reduce(Reduce::Add).with_element(element).render("fusion_probe");
        sources.push(("generated fusion kernel".to_string(), generated.text));
    }
    sources
}

/// Every literal 32, 64, 31, 63 in the lines of `sources` that no entry of `allowed` explains, and every entry
/// that explains nothing.
fn check(sources: &[(String, String)], allowed: &[Allowed]) -> (Vec<String>, Vec<String>) {
    let mut used = vec![false; allowed.len()];
    let mut unexplained = Vec::new();
    for (file, text) in sources {
        for (line, code) in wave_literals(text) {
            match allowed.iter().position(|a| a.file == file && code.contains(a.code)) {
                Some(i) => used[i] = true,
                None => unexplained.push(format!("{file}:{line}: {code}")),
            }
        }
    }
    let stale = allowed
        .iter()
        .zip(used)
        .filter(|(_, used)| !used)
        .map(|(a, _)| format!("{}: `{}` ({})", a.file, a.code, a.why))
        .collect();
    (unexplained, stale)
}

#[test]
fn no_kernel_hard_codes_the_wave_size() {
    let (unexplained, stale) = check(&kernel_sources(), ALLOWED);
    assert!(
        unexplained.is_empty(),
        "literal 32/64 (or a 31/63 lane mask) in kernel code: write GPU_WAVE_SIZE (or GPU_WAVE_SIZE - 1) where the \
         wave size is meant, or add the line to ALLOWED in this file with the reason it is not the wave size:\n  {}",
        unexplained.join("\n  ")
    );
    assert!(stale.is_empty(), "ALLOWED entries that match no line any more (remove them):\n  {}", stale.join("\n  "));
}

/// The scan itself: it finds each form a hard-coded wave size takes, and not what only looks like one.
#[test]
fn the_scan_finds_wave_literals_and_nothing_else() {
    let source = "\
const int lane = threadIdx.x % 64;          // a wave64 lane
const int w = threadIdx.x / 32u;
v += __shfl_xor(v, 16, 32);
if ((threadIdx.x & 0x3f) == 0) {}
x = y & 31;
float s = 64.0f;
// 64 in a comment
/* 32 in a
   block comment */ uint64_t a; float4 b; int c = 128; int d = 0x41; matmul_tiled_m32();
const char* t = \"// not a comment, 64\"; int e = 64;
static_assert(ACC % 16 == 0, \"ACC: a multiple of 32\");
";
    let hits: Vec<usize> = wave_literals(source).iter().map(|(line, _)| *line).collect();
    assert_eq!(hits, [1, 2, 3, 4, 5, 6, 10]);
    let sources = [("x.hip".to_string(), source.to_string())];
    let allowed = [
        Allowed { file: "x.hip", code: "threadIdx.x % 64", why: "test" },
        Allowed { file: "x.hip", code: "no such line", why: "test" },
        Allowed { file: "other.hip", code: "threadIdx.x / 32u", why: "test: another file" },
    ];
    let (unexplained, stale) = check(&sources, &allowed);
    assert_eq!(unexplained.len(), 6, "{unexplained:?}");
    assert!(unexplained[0].starts_with("x.hip:2: "), "{unexplained:?}");
    assert_eq!(stale.len(), 2, "{stale:?}");
}
