//! [`choose`] on fixtures (each rule alone, the twin rule, the AGPRs counted), then on the real `kernels/matmul.hip`
//! built for gfx90a by two compilers, Debian's hipcc 5.2 (clang 15) and zig's clang 18.1.6: the spread per kernel as
//! a table (`cargo test -p suite --lib spread -- --nocapture` shows it) and the default set each would choose.

use super::*;
use crate::code_objects::{test_support, Compiler};
use crate::device::{Arch, WaveSize};
use crate::experiments::matmul::VARIANTS;

fn gfx90a() -> &'static Profile {
    Profile::for_arch(&Arch::parse("gfx90a").unwrap(), Some(WaveSize(64))).unwrap()
}

/// A kernel's metadata as a compiler would write it: `vgprs` is `.vgpr_count`, the unified VGPR+AGPR total.
fn meta(name: &str, vgprs: u32, agprs: u32, scratch: u32, spills: (u32, u32)) -> AmdKernelMeta {
    AmdKernelMeta {
        name: name.into(),
        symbol: format!("{name}.kd"),
        vgpr_count: vgprs,
        agpr_count: Some(agprs),
        sgpr_count: 40,
        lds_bytes: 8192,
        scratch_bytes: scratch,
        wave_size: WaveSize(64),
        max_group_size: 256,
        kernarg_bytes: 64,
        vgpr_spill_count: Some(spills.0),
        sgpr_spill_count: Some(spills.1),
        args: Vec::new(),
    }
}

fn candidate(name: &str, symbols: &[&str], group_size: u32) -> Candidate {
    Candidate { name: name.into(), symbols: symbols.iter().map(|s| s.to_string()).collect(), group_size }
}

#[test]
fn each_rule_leaves_a_kernel_out_with_its_reason() {
    let kernels = [
        meta("k_good", 128, 0, 0, (0, 0)),
        // 5 VGPRs spilled to 20 bytes of scratch per item, though its registers would allow 50%.
        meta("k_spills", 128, 0, 20, (5, 0)),
        // Scratch with nothing spilled: a stack array.
        meta("k_stack", 64, 0, 256, (0, 0)),
        // 96 ArchVGPRs + 64 AGPRs = 160 per item: 3 waves per SIMD, 37.5%. The ArchVGPRs alone would allow 5
        // (62.5%): only counting the AGPRs leaves it out.
        meta("k_agprs", 160, 64, 0, (0, 0)),
        // The aligned kernel fits, its twin does not: the kernel launches both, so it is left out.
        meta("k_twin", 120, 0, 0, (0, 0)),
        meta("k_twin_unaligned", 120, 0, 16, (4, 0)),
    ];
    let candidates = [
        candidate("good", &["k_good"], 256),
        candidate("spills", &["k_spills"], 256),
        candidate("stack", &["k_stack"], 256),
        candidate("agprs", &["k_agprs"], 256),
        candidate("twin", &["k_twin", "k_twin_unaligned"], 256),
        candidate("missing", &["k_missing"], 256),
        // 128 VGPRs fit 4 waves per SIMD; groups of 1024 items (16 waves) fit once: 16 of 32 waves, 50%. Groups of
        // 768 (12 waves) also fit only once: 37.5%. The launch size, not the launch bounds, decides.
        candidate("good_at_1024", &["k_good"], 1024),
        candidate("good_at_768", &["k_good"], 768),
    ];
    let fit = choose(&candidates, &kernels, gfx90a());
    assert_eq!(fit.names(), ["good", "good_at_1024"]);
    assert_eq!(fit.chosen[0], Kept { name: "good".into(), registers: 128, occupancy_percent: 50.0 });
    let why = |name: &str| {
        let left = fit.left_out.iter().find(|l| l.name == name).unwrap_or_else(|| panic!("{name} kept: {fit:?}"));
        (left.reasons.clone(), left.to_string())
    };

    let (reasons, text) = why("spills");
    assert_eq!(
        reasons,
        [
            ("k_spills".into(), Reason::Spills { vgprs: 5, sgprs: 0 }),
            ("k_spills".into(), Reason::Scratch { bytes: 20 })
        ]
    );
    assert_eq!(
        text,
        "spills: k_spills spills 5 registers (5 VGPRs, 0 SGPRs); k_spills uses 20 bytes of scratch per item"
    );
    assert_eq!(why("stack").0, [("k_stack".into(), Reason::Scratch { bytes: 256 })]);

    let (reasons, text) = why("agprs");
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    let Reason::LowOccupancy { percent, registers, agprs, waves_per_cu, wave_slots_per_cu, limiter } = reasons[0].1
    else {
        panic!("{reasons:?}")
    };
    assert_eq!((percent, registers, agprs, waves_per_cu, wave_slots_per_cu), (37.5, 160, 64, 12, 32));
    assert_eq!(limiter, Limiter::Registers);
    assert!(
        text.starts_with(
            "agprs: k_agprs reaches only 37.5% occupancy counting AGPRs (160 VGPRs+AGPRs, 64 of them AGPRs: 12 of \
             32 waves per CU, limited by registers"
        ),
        "{text}"
    );

    let (reasons, text) = why("twin");
    assert!(reasons.iter().all(|(s, _)| s == "k_twin_unaligned"), "{reasons:?}");
    assert!(text.starts_with("twin: k_twin_unaligned spills 4 registers"), "{text}");
    assert_eq!(why("missing").1, "missing: k_missing is not in the code object");
    assert!(why("good_at_768").1.contains("reaches only 37.5% occupancy"), "{}", why("good_at_768").1);
    assert_eq!(fit.chosen.len() + fit.left_out.len(), candidates.len());
}

/// The ladder's candidates: every kernel, its `_unaligned` and `_packed` twins where it has them, at its launch group.
#[test]
fn candidates_of_the_ladder_name_every_symbol_launched() {
    let by_name = |n: &str| Candidate::of(VARIANTS.iter().find(|v| v.name == n).unwrap(), Precision::F32);
    assert_eq!(by_name("naive"), candidate("naive", &["matmul_naive"], 256));
    assert_eq!(
        by_name("double_buffer_256x128x8_t512"),
        candidate(
            "double_buffer_256x128x8_t512",
            &[
                "matmul_double_buffer_256x128x8_t512",
                "matmul_double_buffer_256x128x8_t512_unaligned",
                "matmul_double_buffer_256x128x8_t512_packed"
            ],
            512
        )
    );
    // FP64 has no packed twin, nor has the atomic split-K kernel.
    let f64_twins =
        Candidate::of(VARIANTS.iter().find(|v| v.name == "double_buffer_64x128x8_t128").unwrap(), Precision::F64);
    assert_eq!(f64_twins.symbols.len(), 2, "{f64_twins:?}");
    assert_eq!(by_name("splitk_atomic_64x128x16_t128").symbols.len(), 2);
    assert_eq!(by_name("tiled_m32").group_size, 1024);
}

/// One compiler's build of `kernels/matmul.hip` for gfx90a: its name and version, and its kernels' metadata.
struct Build {
    compiler: Compiler,
    kernels: Vec<AmdKernelMeta>,
}

impl Build {
    fn of(compiler: Compiler) -> Build {
        let arch = Arch::parse("gfx90a").unwrap();
        let bytes = test_support::compiled(&compiler, "matmul", "gfx90a");
        let info = crate::code_objects::check_arch(&bytes, &arch).unwrap_or_else(|e| panic!("{compiler}: {e}"));
        Build { compiler, kernels: info.amd_kernels }
    }

    /// `hipcc 5.2.21153-0 (clang 15.0.6)`, `zig-clang 0.13.0 (clang 18.1.6)`.
    fn label(&self) -> String {
        self.compiler.label()
    }

    fn kernel(&self, symbol: &str) -> Option<&AmdKernelMeta> {
        self.kernels.iter().find(|k| k.name == symbol)
    }
}

/// A table cell: the figure under each compiler, `a` or `a / b` where they differ.
fn pair<T: PartialEq + fmt::Display>(a: Option<T>, b: Option<T>) -> String {
    let show = |v: Option<T>| v.map_or("-".to_string(), |v| v.to_string());
    match (&a, &b) {
        (Some(x), Some(y)) if x == y => x.to_string(),
        _ => format!("{} / {}", show(a), show(b)),
    }
}

/// The spread between the two compilers for every kernel of `kernels/matmul.hip`, as a Markdown table.
fn spread_table(builds: [&Build; 2], group_of: &dyn Fn(&AmdKernelMeta) -> u32) -> String {
    let [a, b] = builds;
    let occupancy = |k: Option<&AmdKernelMeta>| {
        let k = k?;
        let res = Resources { group_size: group_of(k), ..Resources::from_amd_kernel(k) };
        Some(gfx90a().occupancy(&res).map_or_else(|_| "none fits".to_string(), |o| format!("{:.1}%", o.percent)))
    };
    let mut text = format!(
        "gfx90a, kernels/matmul.hip: {} / {} (one figure where both agree; occupancy at the launch group)\n\n\
         | kernel | group | VGPRs+AGPRs | AGPRs | SGPRs | LDS B | scratch B | spills | occupancy |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        a.label(),
        b.label()
    );
    let mut names: Vec<&str> = a.kernels.iter().map(|k| k.name.as_str()).collect();
    names.extend(b.kernels.iter().map(|k| k.name.as_str()).filter(|n| a.kernel(n).is_none()));
    for name in names {
        let (ka, kb) = (a.kernel(name), b.kernel(name));
        let field = |f: &dyn Fn(&AmdKernelMeta) -> u32| pair(ka.map(f), kb.map(f));
        let group = ka.or(kb).map_or(0, group_of);
        text.push_str(&format!(
            "| {name} | {group} | {} | {} | {} | {} | {} | {} | {} |\n",
            field(&|k| k.vgpr_count),
            field(&|k| k.agpr_count.unwrap_or(0)),
            field(&|k| k.sgpr_count),
            field(&|k| k.lds_bytes),
            field(&|k| k.scratch_bytes),
            field(&|k| k.vgpr_spill_count.unwrap_or(0) + k.sgpr_spill_count.unwrap_or(0)),
            pair(occupancy(ka), occupancy(kb)),
        ));
    }
    text
}

/// Checks `fit` against `build`'s own metadata, independently of how [`choose`] decides: every kept kernel's
/// symbols spill nothing, use no scratch and reach the occupancy; every reason given for a kernel left out holds.
/// Returns the problems found.
fn check_against_metadata(fit: &Fit, candidates: &[Candidate], build: &Build) -> Vec<String> {
    let mut problems = Vec::new();
    let label = build.label();
    for kept in &fit.chosen {
        let c = candidates.iter().find(|c| c.name == kept.name).expect("a kept kernel is a candidate");
        for symbol in &c.symbols {
            let Some(k) = build.kernel(symbol) else {
                problems.push(format!("{label}: {} kept, but {symbol} is not in the code object", kept.name));
                continue;
            };
            let spilled = k.vgpr_spill_count.unwrap_or(0) + k.sgpr_spill_count.unwrap_or(0);
            if spilled > 0 || k.scratch_bytes > 0 {
                problems.push(format!(
                    "{label}: {} is in the default set, but {symbol} spills {spilled} registers and uses {} bytes of \
                     scratch",
                    kept.name, k.scratch_bytes
                ));
            }
            let res = Resources { group_size: c.group_size, ..Resources::from_amd_kernel(k) };
            let percent = gfx90a().occupancy(&res).map_or(0.0, |o| o.percent);
            if percent < MIN_OCCUPANCY_PERCENT {
                problems.push(format!(
                    "{label}: {} is in the default set, but {symbol} reaches {percent:.1}% at {} VGPRs+AGPRs",
                    kept.name, k.vgpr_count
                ));
            }
        }
    }
    for left in &fit.left_out {
        if left.reasons.is_empty() {
            problems.push(format!("{label}: {} left out with no reason", left.name));
        }
        for (symbol, reason) in &left.reasons {
            let k = build.kernel(symbol);
            let holds = match (reason, k) {
                (Reason::Missing, None) => true,
                (Reason::Spills { vgprs, sgprs }, Some(k)) => {
                    vgprs + sgprs > 0
                        && (Some(*vgprs), Some(*sgprs)) == (k.vgpr_spill_count, k.sgpr_spill_count.or(Some(0)))
                }
                (Reason::Scratch { bytes }, Some(k)) => *bytes > 0 && *bytes == k.scratch_bytes,
                (Reason::LowOccupancy { percent, registers, .. }, Some(k)) => {
                    *percent < MIN_OCCUPANCY_PERCENT && *registers == k.vgpr_count
                }
                (Reason::DoesNotFit(_), Some(_)) => true,
                _ => false,
            };
            if !holds {
                problems.push(format!("{label}: {left} does not hold: {k:?}"));
            }
        }
    }
    let mut accounted: Vec<&str> =
        fit.chosen.iter().map(|k| k.name.as_str()).chain(fit.left_out.iter().map(|l| l.name.as_str())).collect();
    accounted.sort();
    let mut all: Vec<&str> = candidates.iter().map(|c| c.name.as_str()).collect();
    all.sort();
    if accounted != all {
        problems.push(format!("{label}: candidates {all:?}, accounted for {accounted:?}"));
    }
    if fit.chosen.is_empty() {
        problems.push(format!("{label}: the default set is empty"));
    }
    problems
}

/// The spread between the two compilers for every kernel of `kernels/matmul.hip` on gfx90a, and the default set
/// [`choose`] takes from each compiler's own code object. Fails when a kernel of either set spills, uses scratch or
/// falls below the occupancy under the compiler whose object chose it, when a reason given for a kernel left out
/// does not hold, or when a set is empty. `--nocapture` prints the table and both sets.
#[test]
fn spread_between_two_compilers_and_the_default_set_each_chooses() {
    let hipcc = test_support::compiler(crate::device::Platform::Amd);
    let zig = test_support::zig();
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| Build::of(hipcc));
        let b = s.spawn(|| Build::of(zig));
        (a.join().expect("the hipcc build panicked"), b.join().expect("the zig build panicked"))
    });
    let candidates: Vec<Candidate> = VARIANTS.iter().map(|v| Candidate::of(v, Precision::F32)).collect();
    let group_of = |k: &AmdKernelMeta| {
        candidates.iter().find(|c| c.symbols.contains(&k.name)).map_or(k.max_group_size, |c| c.group_size)
    };
    let mut report = spread_table([&a, &b], &group_of);
    let mut problems = Vec::new();
    let fits: Vec<Fit> = [&a, &b].iter().map(|build| choose(&candidates, &build.kernels, gfx90a())).collect();
    for (build, fit) in [&a, &b].iter().zip(&fits) {
        report.push_str(&format!(
            "\nDefault set chosen from {}'s code object ({} of {} kernels): {}\nLeft out:\n",
            build.label(),
            fit.chosen.len(),
            candidates.len(),
            fit.chosen
                .iter()
                .map(|k| format!("{} ({}, {:.1}%)", k.name, k.registers, k.occupancy_percent))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        for left in &fit.left_out {
            report.push_str(&format!("- {left}\n"));
        }
        problems.extend(check_against_metadata(fit, &candidates, build));
    }
    let only = |x: &Fit, y: &Fit| -> Vec<String> {
        x.names().into_iter().filter(|n| !y.names().contains(n)).map(str::to_string).collect()
    };
    report.push_str(&format!(
        "\nChosen under {} only: {:?}\nChosen under {} only: {:?}\n",
        a.label(),
        only(&fits[0], &fits[1]),
        b.label(),
        only(&fits[1], &fits[0])
    ));
    println!("{report}");
    assert!(problems.is_empty(), "{}\n\n{report}", problems.join("\n"));
}
