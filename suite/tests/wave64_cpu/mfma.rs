//! The MFMA builtins of the CPU emulation (`tests/gpu_cpu/gpu_cpu.h`, its MFMA section) against AMD's Matrix
//! Instruction Calculator, and matmul's matrix rungs (`matmul_mfma_128x128x8_t256`, `matmul_mfma_128x128x8_t512_f64`: kernels/matmul.hip,
//! section 11, and kernels/include/matmul_mfma.h) run on them at 64 lanes against a host reference. None of this is
//! an AMD measurement: no AMD GPU has run these kernels.
//!
//! The calculator's outputs below are quoted verbatim from AMD Matrix Instruction Calculator 1.3.2
//! (ROCm/amd_matrix_instruction_calculator, commit 2ef91896bcdc4d26624f952e5c905c787cd9bc9e, `-a cdna2`), as
//! recorded with the command of each in the project's research notes (section 1.4 "Spot values produced by the
//! calculator"; section 1.2 for the forward formulas). The README's own published examples use other instructions
//! (`v_mfma_f32_4x4x4f16`, `v_mfma_f64_4x4x4f64`, ...) that the rungs do not use and the emulation does not have.

use super::emulation::{self, Arg, Memory};

/// The three emulated instructions, as the test knows them: shape, registers of C/D per lane, element type, the
/// self-test kernel that runs one of it, and the calculator's forward formulas ("Matrix element to register mapping
/// with no modifiers", `--detail-instruction`), written here independently of the emulation's C++.
struct Instruction {
    name: &'static str,
    m: usize,
    n: usize,
    k: usize,
    /// C/D vector elements per lane (FP64: VGPR pairs).
    regs: usize,
    f64: bool,
    /// The self-test kernel below that runs one instruction.
    kernel: &'static str,
    /// Lane of A[i][k].
    a_lane: fn(usize, usize) -> usize,
    /// Lane of B[k][j].
    b_lane: fn(usize, usize) -> usize,
    /// (vector element, lane) of C/D[i][j].
    d_slot: fn(usize, usize) -> (usize, usize),
}

const INSTRUCTIONS: [Instruction; 3] = [
    Instruction {
        name: "v_mfma_f32_32x32x2f32",
        m: 32,
        n: 32,
        k: 2,
        regs: 16,
        f64: false,
        kernel: "mfma_once_f32_32x32x2",
        // "A[i][k].block Lane: 32 * k + i"; "B[k][j].block Lane: 32 * k + j"
        a_lane: |i, k| 32 * k + i,
        b_lane: |k, j| 32 * k + j,
        // "C or D[i][j].block GPR: 4 * floor(i / 8) + (i % 4)", "Lane: (32 * floor(i / 4)) % 64 + j"
        d_slot: |i, j| (4 * (i / 8) + i % 4, (32 * (i / 4)) % 64 + j),
    },
    Instruction {
        name: "v_mfma_f32_16x16x4f32",
        m: 16,
        n: 16,
        k: 4,
        regs: 4,
        f64: false,
        kernel: "mfma_once_f32_16x16x4",
        // "A[i][k].block Lane: 16 * k + i"; "B[k][j].block Lane: 16 * k + j"
        a_lane: |i, k| 16 * k + i,
        b_lane: |k, j| 16 * k + j,
        // "C or D[i][j].block GPR: (i % 4)", "Lane: 16 * floor(i / 4) + j"
        d_slot: |i, j| (i % 4, 16 * (i / 4) + j),
    },
    Instruction {
        name: "v_mfma_f64_16x16x4f64",
        m: 16,
        n: 16,
        k: 4,
        regs: 4,
        f64: true,
        kernel: "mfma_once_f64_16x16x4",
        // "A[i][k].block GPR: [1:0]", "Lane: 16 * k + i"; "B[k][j].block GPR: [1:0]", "Lane: 16 * k + j"
        a_lane: |i, k| 16 * k + i,
        b_lane: |k, j| 16 * k + j,
        // "C or D[i][j].block GPR: [2*floor(i / 4)+1 : 2*floor(i / 4)]" (vector element floor(i/4)),
        // "Lane: 16 * (i % 4) + j". Not the printed inverse "C or D i: 4 * floor(GPR_num / 2)", which drops
        // "+ floor(lane / 16)" and would put D[5][1] in v[3:2] of lane 1 instead of lane 17.
        d_slot: |i, j| (i / 4, 16 * (i % 4) + j),
    },
];

/// The calculator's answers, verbatim (instruction, output line after the `Architecture:`/`Instruction:` lines).
/// Each line equates a matrix element and a register of a lane (`v5{37}`: VGPR 5, lane 37; `v[3:2]{17}`: the FP64
/// VGPR pair 3:2, lane 17), and with `--output-calculation` gives D's sum: in registers (`Src0_v0{13}*Src1_v0{5}`:
/// A operand of lane 13 times B operand of lane 5) or in matrix elements.
const CALCULATOR: [(&str, &str); 12] = [
    // ./matrix_calculator.py -a cdna2 -i v_mfma_f32_32x32x2f32 --get-register -I 13 -J 5 -D --output-calculation
    (
        "v_mfma_f32_32x32x2f32",
        "D[13][5] = Vdst_v5{37} = Src0_v0{13}*Src1_v0{5} + Src0_v0{45}*Src1_v0{37} + Src2_v5{37}",
    ),
    // ... --matrix-entry --register 7 --lane 40 -D --output-calculation
    ("v_mfma_f32_32x32x2f32", "v7{40} = D[15][8] = A[15][0]*B[0][8] + A[15][1]*B[1][8] + C[15][8]"),
    // ... --get-register -I 31 -J 31 -D
    ("v_mfma_f32_32x32x2f32", "D[31][31] = v15{63}"),
    // ... --get-register -I 4 -J 0 -D
    ("v_mfma_f32_32x32x2f32", "D[4][0] = v0{32}"),
    // ... --matrix-entry --register 0 --lane 40 -A
    ("v_mfma_f32_32x32x2f32", "v0{40} = A[8][1]"),
    // ./matrix_calculator.py -a cdna2 -i v_mfma_f32_16x16x4f32 --get-register -I 6 -J 9 -D --output-calculation
    (
        "v_mfma_f32_16x16x4f32",
        "D[6][9] = Vdst_v2{25} = Src0_v0{6}*Src1_v0{9} + Src0_v0{22}*Src1_v0{25} + Src0_v0{38}*Src1_v0{41} + \
         Src0_v0{54}*Src1_v0{57} + Src2_v2{25}",
    ),
    // ... --matrix-entry --register 3 --lane 63 -D
    ("v_mfma_f32_16x16x4f32", "v3{63} = D[15][15]"),
    // ... --get-register -K 3 -J 7 -B
    ("v_mfma_f32_16x16x4f32", "B[3][7] = v0{55}"),
    // ./matrix_calculator.py -a cdna2 -i v_mfma_f64_16x16x4f64 --get-register -I 6 -J 9 -D --output-calculation
    (
        "v_mfma_f64_16x16x4f64",
        "D[6][9] = Vdst_v[3:2]{41} = Src0_v[1:0]{6}*Src1_v[1:0]{9} + Src0_v[1:0]{22}*Src1_v[1:0]{25} + \
         Src0_v[1:0]{38}*Src1_v[1:0]{41} + Src0_v[1:0]{54}*Src1_v[1:0]{57} + Src2_v[3:2]{41}",
    ),
    // ... --matrix-entry --register 2 --lane 17 -D --output-calculation
    (
        "v_mfma_f64_16x16x4f64",
        "v[3:2]{17} = D[5][1] = A[5][0]*B[0][1] + A[5][1]*B[1][1] + A[5][2]*B[2][1] + A[5][3]*B[3][1] + C[5][1]",
    ),
    // ... --matrix-entry --register 6 --lane 63 -D
    ("v_mfma_f64_16x16x4f64", "v[7:6]{63} = D[15][15]"),
    // ... --get-register -I 3 -K 2 -A
    ("v_mfma_f64_16x16x4f64", "A[3][2] = v[1:0]{35}"),
];

/// A register of a lane as the calculator writes it: `v7{40}` (FP32: VGPR 7) or `v[3:2]{17}` (FP64: a VGPR pair),
/// with an optional role prefix (`Vdst_`, `Src0_`, `Src1_`, `Src2_`). Returns (role, vector element, lane): the
/// element is the VGPR for FP32 and the pair's low VGPR / 2 for FP64 ([2r+1:2r] is element r of the double4).
fn parse_register(text: &str) -> Option<(&str, usize, usize)> {
    let (role, rest) = match text.split_once('_') {
        Some((role, rest)) if role.starts_with("Src") || role == "Vdst" => (role, rest),
        _ => ("", text),
    };
    let rest = rest.strip_prefix('v')?;
    let (register, lane) = rest.strip_suffix('}')?.split_once('{')?;
    let element = match register.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        Some(pair) => {
            let (high, low) = pair.split_once(':')?;
            let (high, low): (usize, usize) = (high.parse().ok()?, low.parse().ok()?);
            if high != low + 1 || low % 2 != 0 {
                return None;
            }
            low / 2
        }
        None => register.parse().ok()?,
    };
    Some((role, element, lane.parse().ok()?))
}

/// A matrix element as the calculator writes it: `D[13][5]` is ('D', 13, 5).
fn parse_element(text: &str) -> Option<(char, usize, usize)> {
    let matrix = text.chars().next()?;
    let (row, col) = text[1..].strip_prefix('[')?.strip_suffix(']')?.split_once("][")?;
    Some((matrix, row.parse().ok()?, col.parse().ok()?))
}

/// A register of a lane: (vector element, lane).
type Slot = (usize, usize);

/// One calculator line, parsed.
struct Answer {
    /// The matrix element the line is about: ('A' | 'B' | 'D', row, column).
    element: (char, usize, usize),
    /// The register holding it.
    slot: Slot,
    /// D's sum in registers, where given: the (A lane, B lane) of each product in order, and C's register.
    sum: Option<(Vec<(usize, usize)>, Slot)>,
}

fn parse_answer(line: &str) -> Answer {
    let parts: Vec<&str> = line.split(" = ").collect();
    let (element, slot) = match (parse_element(parts[0]), parse_element(parts[1])) {
        (Some(e), _) => (e, parse_register(parts[1])),
        (None, Some(e)) => (e, parse_register(parts[0])),
        (None, None) => panic!("no matrix element in `{line}`"),
    };
    let (_, element_index, lane) = slot.unwrap_or_else(|| panic!("no register in `{line}`"));
    let sum = parts.get(2).filter(|s| s.starts_with("Src0_")).map(|sum| {
        let terms: Vec<&str> = sum.split(" + ").collect();
        let (products, c) = terms.split_at(terms.len() - 1);
        let lane_of = |t: &str, role: &str| {
            let (r, _, l) = parse_register(t).unwrap_or_else(|| panic!("`{t}` in `{line}`"));
            assert_eq!(r, role, "`{t}` in `{line}`");
            l
        };
        let products = products
            .iter()
            .map(|p| {
                let (a, b) = p.split_once('*').unwrap_or_else(|| panic!("`{p}` in `{line}`"));
                (lane_of(a, "Src0"), lane_of(b, "Src1"))
            })
            .collect();
        let (role, c_element, c_lane) = parse_register(c[0]).unwrap_or_else(|| panic!("`{}` in `{line}`", c[0]));
        assert_eq!(role, "Src2", "`{line}`");
        (products, (c_element, c_lane))
    });
    Answer { element, slot: (element_index, lane), sum }
}

/// One instruction on every lane, with per-lane operands: lane l's A element a_in[l], B element b_in[l], C register
/// r c_in[64·r + l]; d_out[64·r + l] is D register r of lane l.
const ONCE_KERNELS: &str = r#"
#include "gpu.h"
#define MFMA_ONCE(NAME, T, V, REGS, BUILTIN)                                                                       \
    GPU_KERNEL void NAME(const T* a_in, const T* b_in, const T* c_in, T* d_out) {                                 \
        const int l = threadIdx.x;                                                                                 \
        V c;                                                                                                       \
        for (int r = 0; r < REGS; ++r) c[r] = c_in[GPU_WAVE_SIZE * r + l];                                        \
        const V d = BUILTIN(a_in[l], b_in[l], c, 0, 0, 0);                                                        \
        for (int r = 0; r < REGS; ++r) d_out[GPU_WAVE_SIZE * r + l] = d[r];                                       \
    }
MFMA_ONCE(mfma_once_f32_32x32x2, float, gpu_floatx16, 16, __builtin_amdgcn_mfma_f32_32x32x2f32)
MFMA_ONCE(mfma_once_f32_16x16x4, float, gpu_floatx4, 4, __builtin_amdgcn_mfma_f32_16x16x4f32)
MFMA_ONCE(mfma_once_f64_16x16x4, double, gpu_doublex4, 4, __builtin_amdgcn_mfma_f64_16x16x4f64)
"#;

/// Lanes of a wave: the MFMA instructions are defined on waves of 64.
const LANES: usize = 64;

/// Runs `ins` once in the emulation on integer operands (distinct per lane, small enough that every sum is exact in
/// FP32 and FP64, so any order of the arithmetic gives the same bits) and returns (a_in, b_in, c_in, d_out), the
/// registers of `ONCE_KERNELS`, as f64.
fn run_once(program: &emulation::Program, ins: &Instruction) -> [Vec<f64>; 4] {
    let a: Vec<f64> = (0..LANES).map(|l| (l as f64) - 20.0).collect();
    let b: Vec<f64> = (0..LANES).map(|l| ((l * 37) % LANES) as f64 - 31.0).collect();
    let c: Vec<f64> = (0..ins.regs * LANES).map(|x| ((x * 11) % 97) as f64 - 48.0).collect();
    let memory = Memory::new();
    let f32s = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
    if ins.f64 {
        memory.put("a", &a);
        memory.put("b", &b);
        memory.put("c", &c);
        memory.put("d", &vec![f64::NAN; ins.regs * LANES]);
    } else {
        memory.put("a", &f32s(&a));
        memory.put("b", &f32s(&b));
        memory.put("c", &f32s(&c));
        memory.put("d", &vec![f32::NAN; ins.regs * LANES]);
    }
    let args = [Arg::Buf("a"), Arg::Buf("b"), Arg::Buf("c"), Arg::Buf("d")];
    program.launch(&memory, ins.kernel, [1, 1, 1], [LANES as u32, 1, 1], &args);
    let d = if ins.f64 { memory.get::<f64>("d") } else { memory.get::<f32>("d").into_iter().map(f64::from).collect() };
    [a, b, c, d]
}

/// The emulated MFMA builtins follow the calculator's layouts. For each instruction, one MFMA runs at 64 lanes on
/// integer operands (exact in any order), and:
/// 1. every calculator line that gives D's sum in registers is checked directly on the emulation's registers: D
///    register r of lane l equals the sum of the listed A-operand lanes times B-operand lanes plus the listed C
///    register;
/// 2. the calculator's forward formulas (in [`INSTRUCTIONS`]) give every calculator line (the register and lane of
///    each quoted A, B and D element, and the operand lanes of each quoted sum);
/// 3. through those formulas, the A, B and C blocks the lanes held are read back and D = A·B + C is checked at
///    every element, in the register and lane where the formulas put it (and the formulas place D one element per
///    register of each lane).
///
/// It fails when a layout of the emulation is wrong. To see it: in tests/gpu_cpu/gpu_cpu.h, exchange lanes 0 and 1
/// of the A operand of v_mfma_f32_16x16x4f32 by changing `F32_16x16x4::a_lane` to
/// `return (16 * k + i) ^ (16 * k + i < 2);`, and run this test.
#[test]
fn mfma_builtins_follow_the_calculators_layouts() {
    let build = tempfile::tempdir().unwrap();
    let kernels: Vec<&str> = INSTRUCTIONS.iter().map(|i| i.kernel).collect();
    let program =
        emulation::build(build.path(), "mfma_once", ONCE_KERNELS, &emulation::entries(&kernels), 64, build.path());
    let mut answers_checked = 0;
    for ins in &INSTRUCTIONS {
        let [a, b, c, d] = run_once(&program, ins);
        let reg = |v: &[f64], (r, l): (usize, usize)| v[r * LANES + l];

        // 1 and 2: the calculator's own lines.
        for (_, line) in CALCULATOR.iter().filter(|(name, _)| *name == ins.name) {
            let answer = parse_answer(line);
            let (matrix, row, col) = answer.element;
            let formula = match matrix {
                'A' => (0, (ins.a_lane)(row, col)),
                'B' => (0, (ins.b_lane)(row, col)),
                'D' => (ins.d_slot)(row, col),
                other => panic!("{}: `{line}` is about matrix {other}", ins.name),
            };
            assert_eq!(formula, answer.slot, "{}: the formulas vs the calculator's `{line}`", ins.name);
            if let Some((products, c_slot)) = &answer.sum {
                assert_eq!(matrix, 'D', "{line}");
                assert_eq!(*c_slot, answer.slot, "{}: C and D share registers: `{line}`", ins.name);
                let want: f64 = products.iter().map(|&(la, lb)| a[la] * b[lb]).sum::<f64>() + reg(&c, *c_slot);
                assert_eq!(
                    reg(&d, answer.slot),
                    want,
                    "{}: the emulation's D register {} of lane {} vs the calculator's `{line}`",
                    ins.name,
                    answer.slot.0,
                    answer.slot.1
                );
                let lanes: Vec<(usize, usize)> =
                    (0..ins.k).map(|k| ((ins.a_lane)(row, k), (ins.b_lane)(k, col))).collect();
                assert_eq!(*products, lanes, "{}: the formulas' operand lanes vs `{line}`", ins.name);
            }
            answers_checked += 1;
        }

        // 3: every element of D, through the formulas.
        let mut placed = vec![false; ins.regs * LANES];
        for i in 0..ins.m {
            for j in 0..ins.n {
                let slot = (ins.d_slot)(i, j);
                assert!(
                    !std::mem::replace(&mut placed[slot.0 * LANES + slot.1], true),
                    "{}: D {slot:?} twice",
                    ins.name
                );
                let want =
                    (0..ins.k).map(|k| a[(ins.a_lane)(i, k)] * b[(ins.b_lane)(k, j)]).sum::<f64>() + reg(&c, slot);
                let got = reg(&d, slot);
                assert_eq!(
                    got, want,
                    "{}: D[{i}][{j}] in register {} of lane {} is {got}; the calculator's layout gives {want}",
                    ins.name, slot.0, slot.1
                );
            }
        }
    }
    assert_eq!(answers_checked, CALCULATOR.len(), "every calculator line names one of the instructions");
}

/// The parser reads the calculator's notations as documented, and the FP64 correction matters: the printed inverse
/// formula (`4 * floor(GPR_num / 2)`, without `+ floor(lane / 16)`) would put D[5][1] at row 4, not 5.
#[test]
fn calculator_lines_parse_and_the_printed_f64_inverse_is_wrong() {
    assert_eq!(parse_register("v[3:2]{17}"), Some(("", 1, 17)));
    assert_eq!(parse_register("Src1_v0{9}"), Some(("Src1", 0, 9)));
    assert_eq!(parse_register("Vdst_v5{37}"), Some(("Vdst", 5, 37)));
    assert_eq!(parse_register("v[2:1]{0}"), None, "a pair starts at an even VGPR");
    assert_eq!(parse_element("D[13][5]"), Some(('D', 13, 5)));
    let answer = parse_answer(CALCULATOR[0].1);
    assert_eq!((answer.element, answer.slot), (('D', 13, 5), (5, 37)));
    assert_eq!(answer.sum, Some((vec![(13, 5), (45, 37)], (5, 37))));
    let printed_inverse = |register_pair_low: usize, _lane: usize| 4 * (register_pair_low / 2);
    let corrected = |register_pair_low: usize, lane: usize| 4 * (register_pair_low / 2) + lane / 16;
    // v[3:2]{17} = D[5][1]
    assert_eq!((printed_inverse(2, 17), corrected(2, 17)), (4, 5));
    let f64_instruction = &INSTRUCTIONS[2];
    for i in 0..16 {
        for j in 0..16 {
            let (element, lane) = (f64_instruction.d_slot)(i, j);
            assert_eq!((corrected(2 * element, lane), lane % 16), (i, j));
        }
    }
}

/// The host's C = A·B in f64, summed in k order, and Σ|a||b| per element (the scale of the FP64 rounding bound).
fn product(a: &[f64], b: &[f64], (m, n, k): (usize, usize, usize)) -> (Vec<f64>, Vec<f64>) {
    let (mut c, mut size) = (vec![0.0; m * n], vec![0.0; m * n]);
    for i in 0..m {
        for p in 0..k {
            let x = a[i * k + p];
            for j in 0..n {
                c[i * n + j] += x * b[p * n + j];
                size[i * n + j] += (x * b[p * n + j]).abs();
            }
        }
    }
    (c, size)
}

/// How an input is drawn: uniform in [−1, 1) (as the matmul experiment draws its inputs), or small integers, whose
/// products and sums every kernel computes exactly, in any order, so C must equal the host's bit for bit.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Draw {
    Uniform,
    Integers,
}

fn draw(rng: &mut fastrand::Rng, len: usize, how: Draw) -> Vec<f64> {
    match how {
        Draw::Uniform => (0..len).map(|_| rng.f64() * 2.0 - 1.0).collect(),
        Draw::Integers => (0..len).map(|_| f64::from(rng.i32(-4..=4))).collect(),
    }
}

/// matmul's matrix rungs, `matmul_mfma_128x128x8_t256` (v_mfma_f32_32x32x2f32, 128×128 tiles of 4 waves, slabs of 8) and
/// `matmul_mfma_128x128x8_t512_f64` (v_mfma_f64_16x16x4f64, 128×128 tiles of 8 waves, slabs of 8), run at 64 lanes on the emulated
/// builtins: their global loads, LDS staging, operand indexing and C stores, at sizes that are whole tiles, that cut
/// partial tiles in M, N and K, that are smaller than one MFMA block, and with K = 0 (C comes out zero). Each C is
/// checked against the host's f64 product:
/// - FP32, uniform inputs: the matmul experiment's own check (`verify::check_matmul`, its derived tolerance);
/// - FP64, uniform inputs: every element within 2·γ_K·Σ|a||b| of the host's, γ_K = K·u/(1 − K·u), u = 2⁻⁵³: the
///   classic bound on a K-term dot product in any order, with or without fused multiply-adds (Higham, "Accuracy and
///   Stability of Numerical Algorithms", 2nd ed., eq. 3.5 and its remark on summation order), once for the kernel
///   and once for the host's own sum;
/// - both, integer inputs in [−4, 4]: every product and sum is exact in FP32 and FP64, so C must equal the host's
///   exactly (a wrong index anywhere shows, however small its effect on a norm).
///
/// C starts as NaN, so an element the kernel does not write fails every check, and one it writes wrongly (a store
/// meant for another element) fails its own. (A store past the end of C is not caught here: the guards that skip
/// them are what the partial tiles exercise, and a wrong guard shows as a wrong or missing element inside C.)
#[test]
fn matmul_mfma_rungs_are_right_at_wave64() {
    let build = tempfile::tempdir().unwrap();
    let kernels = ["matmul_mfma_128x128x8_t256", "matmul_mfma_128x128x8_t512_f64"];
    let program = emulation::build(
        build.path(),
        "matmul_mfma",
        "#include \"matmul.hip\"",
        &emulation::entries(&kernels),
        64,
        build.path(),
    );
    // (symbol, group size, block tile BM = BN) as kernels/matmul.hip documents them.
    let rungs = [("matmul_mfma_128x128x8_t256", 256u32, 128usize), ("matmul_mfma_128x128x8_t512_f64", 512, 128)];
    let shapes = [(256, 128, 16), (133, 70, 21), (5, 3, 2), (1, 1, 1), (130, 257, 9), (7, 5, 0)];
    let mut rng = fastrand::Rng::with_seed(25);
    for (symbol, group, tile) in rungs {
        let is_f64 = symbol.ends_with("f64");
        for (m, n, k) in shapes {
            for how in [Draw::Uniform, Draw::Integers] {
                let context = format!("{symbol} at M={m} N={n} K={k}, {how:?} inputs");
                let (a, b) = (draw(&mut rng, m * k, how), draw(&mut rng, k * n, how));
                let memory = Memory::new();
                if is_f64 {
                    memory.put("A", &a);
                    memory.put("B", &b);
                    memory.put("C", &vec![f64::NAN; m * n]);
                } else {
                    let f32s = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
                    memory.put("A", &f32s(&a));
                    memory.put("B", &f32s(&b));
                    memory.put("C", &vec![f32::NAN; m * n]);
                }
                let grid = [n.div_ceil(tile) as u32, m.div_ceil(tile) as u32, 1];
                let args = [
                    Arg::Buf("A"),
                    Arg::Buf("B"),
                    Arg::Buf("C"),
                    Arg::I32(m as i32),
                    Arg::I32(n as i32),
                    Arg::I32(k as i32),
                ];
                program.launch(&memory, symbol, grid, [group, 1, 1], &args);
                let c: Vec<f64> =
                    if is_f64 { memory.get("C") } else { memory.get::<f32>("C").into_iter().map(f64::from).collect() };
                // The inputs as the kernel saw them (FP32 rounds the uniform draws).
                let seen = |v: &[f64]| -> Vec<f64> {
                    v.iter().map(|&x| if is_f64 { x } else { f64::from(x as f32) }).collect()
                };
                let (want, size) = product(&seen(&a), &seen(&b), (m, n, k));
                if how == Draw::Integers {
                    let wrong = (0..m * n).find(|&e| c[e] != want[e]);
                    assert!(
                        wrong.is_none(),
                        "{context}: C[{e}] is {}, should be {}",
                        c[wrong.unwrap()],
                        want[wrong.unwrap()],
                        e = wrong.unwrap()
                    );
                } else if is_f64 {
                    let u = f64::EPSILON / 2.0;
                    let gamma = k as f64 * u / (1.0 - k as f64 * u);
                    for e in 0..m * n {
                        let bound = 2.0 * gamma * size[e];
                        assert!(
                            (c[e] - want[e]).abs() <= bound,
                            "{context}: C[{e}] is {}, host {}, bound {bound:e}",
                            c[e],
                            want[e]
                        );
                    }
                } else {
                    let check = suite::verify::check_matmul(&c, &want, k.max(1));
                    assert!(check.passed(), "{context}: {}", check.summary());
                }
            }
        }
    }
}

/// What the emulated MFMA cannot run stops the kernel with a message (exit status 3) instead of computing
/// something: a wave with fewer than 64 lanes (the instruction reads all of them), a lane that has returned, and
/// the CBSZ/ABID/BLGP modifiers, which it does not model.
#[test]
fn the_emulated_mfma_refuses_short_waves_returned_lanes_and_modifiers() {
    let source = r#"
#include "gpu.h"
GPU_KERNEL void mfma_short(float* out) {
    gpu_floatx4 c = {0, 0, 0, 0};
    c = __builtin_amdgcn_mfma_f32_16x16x4f32(1.0f, 1.0f, c, 0, 0, 0);
    out[threadIdx.x] = c[0];
}
GPU_KERNEL void mfma_after_return(float* out) {
    if (threadIdx.x == 3) return;
    gpu_floatx4 c = {0, 0, 0, 0};
    c = __builtin_amdgcn_mfma_f32_16x16x4f32(1.0f, 1.0f, c, 0, 0, 0);
    out[threadIdx.x] = c[0];
}
GPU_KERNEL void mfma_blgp(double* out) {
    gpu_doublex4 c = {0, 0, 0, 0};
    c = __builtin_amdgcn_mfma_f64_16x16x4f64(1.0, 1.0, c, 0, 0, 1);
    out[threadIdx.x] = c[0];
}
"#;
    let build = tempfile::tempdir().unwrap();
    let kernels = ["mfma_short", "mfma_after_return", "mfma_blgp"];
    let program =
        emulation::build(build.path(), "mfma_refuses", source, &emulation::entries(&kernels), 64, build.path());
    for (kernel, group, says) in [
        ("mfma_short", 48, "this wave is short"),
        ("mfma_after_return", 64, "one has returned"),
        ("mfma_blgp", 64, "CBSZ, ABID and BLGP other than 0 are not modelled"),
    ] {
        let memory = Memory::new();
        memory.put("out", &vec![0f64; LANES]);
        let err = program
            .try_launch(&memory, kernel, [1, 1, 1], [group, 1, 1], &[Arg::Buf("out")], &[("GPU_CPU_TIMEOUT_S", "5")])
            .expect_err(kernel);
        assert!(err.contains("exit status: 3") && err.contains(says), "{kernel}: {err}");
    }
}
