//! `suite kernels` and `suite occupancy`: build, inspect and compare code objects, and the occupancy calculator;
//! no GPU needed.

use std::process::ExitCode;

use crate::cli::{AmdCompiler, Cli, OccupancyArgs};
use crate::code_objects::{self, KernelStore};
use crate::device::{self, Arch, Platform};
use crate::experiments::registry;
use crate::gpu::Gpu;
use crate::occupancy_calculator::{self, Agprs, Input, Limiter, Occupancy, Profile, RegisterFile, Resources};

use super::{emit, open_gpu, Error};

/// Every kernel the quick and full presets of the experiments using `sources` compile at run time on a device of
/// `arch` with `cus` compute units (default: the known part of that architecture), and a line saying for which
/// device they were made.
pub(super) fn run_time_specialisations(
    arch: &Arch,
    cus: Option<u32>,
    sources: &[&'static code_objects::Source<'static>],
) -> Result<(Vec<code_objects::Specialisation>, String), Error> {
    let Some(cu_count) = cus.or_else(|| crate::catalogue::default_of_arch(arch.as_str()).map(|p| p.cu_count)) else {
        return Ok((
            Vec::new(),
            format!("no run-time specialisations built: the suite knows no part of {arch}; pass --cus N"),
        ));
    };
    let profile = Profile::for_arch(arch, None).map_err(|e| Error::Options(format!("--arch {arch}: {e}")))?;
    let shape = code_objects::DeviceShape {
        cu_count,
        max_items_per_cu: profile.simds_per_cu * profile.max_waves_per_simd * profile.wave_size.0,
    };
    let mut specs = Vec::new();
    for entry in registry::EXPERIMENTS {
        for exp in [(entry.quick)(), (entry.default)()] {
            if exp.sources().iter().any(|s| sources.iter().any(|src| src.name == *s)) {
                specs.extend(exp.specialisations(shape));
            }
        }
    }
    specs.sort();
    specs.dedup();
    let note = format!(
        "{} run-time specialisations for a device of {cu_count} CUs ({} resident items per CU); a device with another count \
         needs `--cus N`",
        specs.len(),
        shape.max_items_per_cu
    );
    Ok((specs, note))
}

pub(super) fn parse_archs(names: &[String]) -> Result<Vec<Arch>, Error> {
    names.iter().map(|a| Arch::parse(a).map_err(|e| Error::Options(format!("--arch: {e}")))).collect()
}

pub(super) fn select_sources(names: &[String]) -> Result<Vec<&'static code_objects::Source<'static>>, Error> {
    if names.is_empty() {
        return Ok(code_objects::all().iter().collect());
    }
    names.iter().map(|n| code_objects::source(n).map_err(Error::from)).collect()
}

/// The kernel store for `compiler`'s AMD code objects: the node's compiler (or `--kernels-dir`) for `hipcc`, zig's
/// clang for `zig` (found now, so a missing wheel is reported before anything is compiled).
fn store_for(cli: &Cli, compiler: AmdCompiler) -> Result<KernelStore, Error> {
    match compiler {
        AmdCompiler::Hipcc => Ok(KernelStore::new(cli.kernels_dir.clone())),
        AmdCompiler::Zig if cli.kernels_dir.is_some() => Err(Error::Options(
            "--compiler zig compiles the kernels, --kernels-dir reads prebuilt ones: leave out one of them".into(),
        )),
        AmdCompiler::Zig => Ok(KernelStore::new(None).with_compiler(code_objects::find_zig()?)),
    }
}

/// `suite kernels inspect`.
pub(super) fn inspect(
    cli: &Cli,
    arch: Option<&str>,
    compiler: AmdCompiler,
    sources: &[&'static code_objects::Source<'static>],
) -> Result<ExitCode, Error> {
    let mut out = String::new();
    let mut notes = Vec::new();
    let arch = match arch {
        Some(a) => Arch::parse(a).map_err(|e| Error::Options(format!("--arch: {e}")))?,
        None => open_gpu(cli)?.device.props().arch.clone(),
    };
    if compiler != AmdCompiler::Hipcc && arch.platform() != Platform::Amd {
        return Err(Error::Options(format!(
            "--compiler zig builds AMD code objects; {arch} is NVIDIA's (nvcc builds it): leave out --compiler"
        )));
    }
    let store = store_for(cli, compiler)?;
    // Register counts depend on the compiler: the figures say which one built them.
    outln!(out, "# {arch}, compiler: {}", store.built_by(arch.platform())?);
    match arch.platform() {
        Platform::Amd => {
            outln!(
                out,
                "{:<10} {:<38} {:>5} {:>5} {:>5} {:>9} {:>9} {:>5} {:>9} {:>7} {OCCUPANCY_HEADER}",
                "source",
                "kernel",
                "vgpr",
                "agpr",
                "sgpr",
                "lds_bytes",
                "scratch_b",
                "wave",
                "max_group",
                "spills"
            );
            for source in sources {
                let object = store.code_object(source, &arch)?;
                for k in &object.info.amd_kernels {
                    // Statically, for groups of the kernel's largest size, on the profile for its wave size.
                    let occ = Profile::for_arch(&arch, Some(k.wave_size))
                        .and_then(|p| p.occupancy(&Resources::from_amd_kernel(k)));
                    outln!(
                        out,
                        "{:<10} {:<38} {:>5} {:>5} {:>5} {:>9} {:>9} {:>5} {:>9} {:>7} {}",
                        source.name,
                        k.name,
                        k.vgpr_count,
                        k.agpr_count.map(|a| a.to_string()).unwrap_or_else(|| "-".into()),
                        k.sgpr_count,
                        k.lds_bytes,
                        k.scratch_bytes,
                        k.wave_size.0,
                        k.max_group_size,
                        k.vgpr_spill_count.unwrap_or(0) + k.sgpr_spill_count.unwrap_or(0),
                        occupancy_columns(k.max_group_size, occ, &mut notes)
                    );
                }
            }
            let unified = Profile::for_arch(&arch, None)
                .is_ok_and(|p| matches!(p.registers, RegisterFile::PerLane { agprs: Agprs::Unified, .. }));
            if unified {
                notes.push(format!(
                    "note: on {arch} the AGPRs share the VGPR file: vgpr is VGPRs and AGPRs together, \
                     roundup(ArchVGPRs, 4) + AGPRs, as the code object's .vgpr_count records it and the occupancy \
                     counts it; agpr is the AGPRs among them\n"
                ));
            }
            out.extend(notes);
            emit(&out);
            Ok(ExitCode::SUCCESS)
        }
        Platform::Nvidia => {
            // A cubin's resource use is reported by the driver, which needs the GPU.
            let gpu = Gpu::open(Some(Platform::Nvidia), cli.device, cli.kernels_dir.clone())?;
            if gpu.device.props().arch != arch {
                return Err(Error::Options(format!(
                    "--arch {arch}: the NVIDIA driver reports resources only for the device's own architecture ({})",
                    gpu.device.props().arch
                )));
            }
            outln!(
                out,
                "{:<10} {:<38} {:>9} {:>9} {:>13} {:>9} {OCCUPANCY_HEADER}",
                "source",
                "kernel",
                "registers",
                "lds_bytes",
                "local_bytes",
                "max_group"
            );
            for source in sources {
                let object = store.code_object(source, &arch)?;
                for name in code_objects::cubin_kernel_names(&object.bytes)? {
                    let k = gpu.kernel(source.name, &name)?;
                    let group = k.attrs.max_group_size;
                    let occ = Profile::for_arch(&arch, None)
                        .and_then(|p| p.occupancy(&Resources::from_attrs(&k.attrs, group, 0)));
                    outln!(
                        out,
                        "{:<10} {:<38} {:>9} {:>9} {:>13} {:>9} {}",
                        source.name,
                        k.name,
                        k.attrs.registers_per_item,
                        k.attrs.static_lds_bytes,
                        k.attrs.scratch_bytes_per_item,
                        k.attrs.max_group_size,
                        occupancy_columns(group, occ, &mut notes)
                    );
                }
            }
            out.extend(notes);
            emit(&out);
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `suite occupancy calc`: the occupancy, then what each resource allows on its own.
pub(super) fn occupancy_calc(args: &OccupancyArgs) -> Result<ExitCode, Error> {
    let wave = args.wave.map(device::WaveSize);
    let profile = Profile::find(&args.arch, wave).map_err(|e| occupancy_flag_error(e, "--vgprs"))?;
    let regs_flag = if profile.platform == Platform::Nvidia { "--regs" } else { "--vgprs" };
    let flagged = |e| occupancy_flag_error(e, regs_flag);
    let res = Resources {
        group_size: args.wg,
        registers_per_item: profile.unified_vgprs(args.vgprs, args.agprs).map_err(flagged)?,
        sgprs: args.sgprs,
        lds_bytes_per_group: args.lds,
    };
    let occ = profile.occupancy(&res).map_err(flagged)?;
    let mut out = String::new();
    outln!(out, "profile        {} ({}, wave{})", profile.name, profile.platform, profile.wave_size);
    let plural = if occ.waves_per_group == 1 { "" } else { "s" };
    outln!(out, "group          {} items, {} wave{plural}", res.group_size, occ.waves_per_group);
    outln!(out, "groups_per_cu  {}", occ.groups_per_cu);
    outln!(out, "waves_per_cu   {} of {}", occ.waves_per_cu, occ.wave_slots_per_cu);
    outln!(out, "occupancy      {:.1}%", occ.percent);
    outln!(out, "limiter        {}\n\nlimit          groups_per_cu", occ.limiter);
    for limiter in Limiter::ALL {
        let groups = occ.limits.get(limiter).map_or_else(|| "-".to_string(), |n| n.to_string());
        let binds = if limiter == occ.limiter { "  <- binds" } else { "" };
        outln!(out, "{:<14} {groups:>13}{binds}", limiter.name());
    }
    outln!(out, "(-: does not limit)");
    emit(&out);
    Ok(ExitCode::SUCCESS)
}

/// An occupancy error as an option error naming the flag to fix (`regs_flag`: `--vgprs` or `--regs`).
pub(super) fn occupancy_flag_error(e: occupancy_calculator::Error, regs_flag: &str) -> Error {
    use occupancy_calculator::Error as E;
    let flag = match &e {
        E::UnknownArch { .. } => "--arch",
        E::NoWaveSize { .. } => "--wave",
        E::TooLarge { input, .. } | E::Unsupported { input, .. } => match input {
            Input::GroupSize => "--wg",
            Input::Registers => regs_flag,
            Input::Agprs => "--agprs",
            Input::Sgprs => "--sgprs",
            Input::Lds => "--lds",
        },
        E::DoesNotFit { limiter: Limiter::Registers, .. } => regs_flag,
        E::DoesNotFit { limiter: Limiter::Sgprs, .. } => "--sgprs",
        E::DoesNotFit { limiter: Limiter::Lds, .. } => "--lds",
        E::EmptyGroup | E::DoesNotFit { .. } => "--wg",
    };
    Error::Options(format!("{flag}: {e}"))
}

/// Header of the occupancy columns of `suite kernels inspect`.
/// `suite kernels compare`: compiles `sources` for every target of `archs`, writes the tables and plots into
/// `out` and prints the files written.
pub(super) fn compare_kernels(
    cli: &Cli,
    archs: &[Arch],
    compilers: &[AmdCompiler],
    sources: &[&'static code_objects::Source],
    out: &std::path::Path,
) -> Result<ExitCode, Error> {
    use crate::static_inspection as cmp;
    // One store per AMD compiler asked for; NVIDIA targets are built by the first store's nvcc.
    let mut amd_stores = Vec::new();
    for c in compilers {
        if !amd_stores.iter().any(|(seen, _)| seen == c) {
            amd_stores.push((*c, store_for(cli, *c)?));
        }
    }
    if amd_stores.is_empty() {
        amd_stores.push((AmdCompiler::Hipcc, store_for(cli, AmdCompiler::Hipcc)?));
    }
    let store = &amd_stores[0].1;
    let targets = cmp::targets(archs);
    let cuobjdump = if archs.iter().any(|a| a.platform() == Platform::Nvidia) {
        let nvcc = store.compiler(Platform::Nvidia).ok().map(|c| c.path);
        Some(cmp::find_cuobjdump(nvcc.as_deref()).ok_or_else(|| {
            Error::Options(
                "NVIDIA architectures need cuobjdump to read resources without a GPU: `pip install \
                 nvidia-cuda-cuobjdump` (or the CUDA toolkit), then put it on PATH or set CUOBJDUMP"
                    .into(),
            )
        })?)
    } else {
        None
    };
    let mut rows = Vec::new();
    for t in &targets {
        let stores: Vec<&KernelStore> = match t.arch.platform() {
            Platform::Amd => amd_stores.iter().map(|(_, s)| s).collect(),
            Platform::Nvidia => vec![store],
        };
        for s in stores {
            let names = sources.iter().map(|s| s.name).collect::<Vec<_>>().join(", ");
            eprintln!("compiling {names} for {} with {}", t.label(), s.built_by(t.arch.platform())?);
            let found = cmp::rows(s, t, sources, cuobjdump.as_deref()).map_err(|e| {
                // What clang says when the device library for the architecture is missing (its words, not ours).
                let no_device_library = matches!(&e, code_objects::Error::CompileFailed { stderr, .. }
                    if stderr.contains("device library"));
                let hint = if cmp::is_rdna(&t.arch) && no_device_library {
                    "\nDebian's HIP 5.2 has no device library for RDNA3: make one with `scripts/rdna-device-libs.sh \
                     DIR` and run again with DEVICE_LIB_PATH=DIR (ROCm 5.5 and later ship it)"
                } else {
                    ""
                };
                Error::Options(format!("{}: {e}{hint}", t.label()))
            })?;
            rows.extend(found);
        }
    }
    std::fs::create_dir_all(out).map_err(|e| Error::Options(format!("--out {}: {e}", out.display())))?;
    // What a reader needs to repeat it: the device-library folder (RDNA on Debian's HIP 5.2), the command, and
    // the compilers that built the objects.
    let lib_path = std::env::var("DEVICE_LIB_PATH").map(|p| format!("DEVICE_LIB_PATH={p} ")).unwrap_or_default();
    let mut command = format!("{lib_path}{}", std::env::args().collect::<Vec<_>>().join(" "));
    if archs.iter().any(|a| a.platform() == Platform::Amd) {
        for (_, s) in &amd_stores {
            command.push_str(&format!("\n# amd: {}", describe(s, Platform::Amd)));
        }
    }
    if archs.iter().any(|a| a.platform() == Platform::Nvidia) {
        command.push_str(&format!("\n# nvidia: {}", describe(store, Platform::Nvidia)));
    }
    if let Some(tool) = &cuobjdump {
        command.push_str(&format!("\n# resources of cubins: {} --dump-resource-usage", tool.display()));
    }
    let mut written = Vec::new();
    for (name, text) in [("kernels.csv", cmp::csv(&rows)), ("kernels.md", cmp::markdown(&rows, &targets, &command))] {
        let path = out.join(name);
        std::fs::write(&path, text).map_err(|e| Error::Options(format!("cannot write {}: {e}", path.display())))?;
        written.push(path);
    }
    for (name, plot) in cmp::group_size_plots(&targets) {
        let path = out.join(name);
        crate::report::plot::render_png(&plot, &path, 1400, 900).map_err(|e| Error::Options(e.to_string()))?;
        written.push(path);
    }
    let mut text = String::new();
    for path in written {
        outln!(text, "{}", path.display());
    }
    emit(&text);
    Ok(ExitCode::SUCCESS)
}

/// The compiler of `store` for `platform` with its path (`hipcc 5.2.21153-0 (clang 15.0.6) (/usr/bin/hipcc)`), or
/// what stands in for one, for the "Made with" lines.
fn describe(store: &KernelStore, platform: Platform) -> String {
    match (store.kernels_dir(), store.compiler(platform)) {
        (Some(_), _) => store.built_by(platform).unwrap_or_default(),
        (None, Ok(c)) => c.to_string(),
        (None, Err(e)) => e.to_string(),
    }
}

pub(super) const OCCUPANCY_HEADER: &str = "occ_group groups_per_cu occupancy_% limiter";

/// The occupancy columns of `suite kernels inspect` for groups of `group` items; an error leaves `-` (0 where no
/// group fits, with the binding resource) and its message, once, in `notes`.
pub(super) fn occupancy_columns(
    group: u32,
    occ: Result<Occupancy, occupancy_calculator::Error>,
    notes: &mut Vec<String>,
) -> String {
    match occ {
        Ok(o) => format!("{group:>9} {:>13} {:>11.1} {}", o.groups_per_cu, o.percent, o.limiter),
        Err(e) => {
            let (groups, limiter) = match &e {
                occupancy_calculator::Error::DoesNotFit { limiter, .. } => ("0", limiter.name()),
                _ => ("-", "-"),
            };
            let note = format!("note: occupancy: {e}\n");
            if !notes.contains(&note) {
                notes.push(note);
            }
            format!("{group:>9} {groups:>13} {groups:>11} {limiter}")
        }
    }
}
