//! zig's clang: upstream clang from the `ziglang` wheel (pip), a second, newer AMD compiler for CI.
//!
//! Why: register use on gfx90a moves a lot between compilers (Debian's HIP 5.2 with clang 15, ROCm 6.3's back end,
//! upstream clang 18 give different VGPR counts for most matmul kernels, and a kernel that fits one may spill under
//! another), so the kernels that run are chosen from the code objects actually built (docs/matmul.md), and CI
//! builds the gfx90a kernels with a second compiler to show the spread. The `ziglang` 0.13.0 wheel carries upstream
//! clang 18.1.6 with the AMDGPU back end and lld, in one static binary; Debian's HIP packages give the HIP headers
//! and the device libraries it compiles against. It is a static tool: `suite run` never picks it (LUMI compiles
//! with its own hipcc); `suite kernels inspect|compare --compiler zig` and the CPU tests do.
//!
//! Found by [`find_zig`]: `$ZIG` (a zig binary), then the wheel's `zig` beside the `ziglang` module of `$PYTHON`
//! (else `python3`), then `zig` on `PATH`. Run as (the flags of [`super::flags`] plus [`Compiler::extra_flags`]):
//!
//! ```text
//! zig clang -x hip --cuda-device-only --no-gpu-bundle-output --offload-arch=gfx90a -O3 -Iinclude
//!     --rocm-path=/usr --hip-path=/usr --rocm-device-lib-path=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode
//!     -resource-dir <wheel>/ziglang/lib -isystem <wheel>/ziglang/lib/include -Bzig-lld
//! ```
//!
//! The linker: clang's HIP toolchain links each device object with `lld -flavor gnu ...`, looked up in the `-B`
//! folders and beside clang. zig has no `lld` program; it carries lld's ELF driver as `zig ld.lld`, which takes no
//! `-flavor`. So every compile writes `zig-lld/lld` (and `zig-lld/ld.lld`, the name other clang toolchains ask
//! for) into its own temporary folder (`compile::write_linker`): a shell script that drops `-flavor gnu` and runs `zig
//! ld.lld`. `-Bzig-lld` is relative (each compile runs in its folder), so the flags, and the cache key, are the
//! same from one compile to the next.
//!
//! The version ([`Compiler::version`]) is zig's and its clang's, as hipcc's is HIP's and its clang's: `0.13.0
//! (clang 18.1.6)` from `zig version` and `zig clang --version`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::compile::{parse_clang_version, resolve, search_path, Compiler, CompilerKind, LINKER_DIR};
use super::{Error, Result};

/// The wheel the test command installs (scripts/install-test-deps.sh), for messages.
pub const ZIG_WHEEL: &str = "ziglang==0.13.0";

/// Finds zig's clang: `$ZIG`, the `ziglang` wheel of `$PYTHON` (else `python3`), `zig` on `PATH`. The first that
/// runs `zig version` and `zig clang --version` and finds ROCm's HIP headers and device libraries wins; the error
/// lists every candidate with its reason and says how to install the wheel.
pub fn find_zig() -> Result<Compiler> {
    find_zig_with(&|name| std::env::var_os(name))
}

/// [`find_zig`] with the environment passed in, so tests need not change the process's environment.
pub(crate) fn find_zig_with(env: &dyn Fn(&str) -> Option<OsString>) -> Result<Compiler> {
    let mut tried = Vec::new();
    for (label, candidate) in candidates(env) {
        let path = match candidate {
            Ok(path) => path,
            Err(why) => {
                tried.push((label, why));
                continue;
            }
        };
        match resolve(&path, env).and_then(|path| probe(&path, env)) {
            Ok(compiler) => return Ok(compiler),
            Err(why) => tried.push((format!("{label} = {}", path.display()), why)),
        }
    }
    Err(Error::ZigNotFound { tried })
}

/// The places to look, in order, each labelled for the error message, with a path or why there is none.
fn candidates(env: &dyn Fn(&str) -> Option<OsString>) -> Vec<(String, std::result::Result<PathBuf, String>)> {
    let set = |name: &str| env(name).filter(|v| !v.is_empty());
    let python = set("PYTHON").unwrap_or_else(|| OsString::from("python3"));
    vec![
        ("$ZIG".to_string(), set("ZIG").map(PathBuf::from).ok_or_else(|| "not set".to_string())),
        (format!("the ziglang wheel of {}", python.to_string_lossy()), wheel_zig(&python)),
        (
            "zig on PATH".to_string(),
            env("PATH").and_then(|p| search_path(&p, "zig")).ok_or_else(|| "not found".to_string()),
        ),
    ]
}

/// The `zig` binary of the `ziglang` module that `python` imports.
fn wheel_zig(python: &OsString) -> std::result::Result<PathBuf, String> {
    let out = Command::new(python)
        .args(["-c", "import os, ziglang; print(os.path.dirname(ziglang.__file__))"])
        .output()
        .map_err(|e| format!("cannot run it: {e}"))?;
    if !out.status.success() {
        let said = String::from_utf8_lossy(&out.stderr);
        let last = said.lines().last().unwrap_or("").trim().to_string();
        return Err(format!("no ziglang module ({last})"));
    }
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    Ok(dir.join("zig"))
}

/// What `super::compile::probe` finds of other compilers, for zig: its version and its clang's, and the flags this
/// machine needs.
pub(crate) fn probe(path: &Path, env: &dyn Fn(&str) -> Option<OsString>) -> std::result::Result<Compiler, String> {
    let run = |args: &[&str]| -> std::result::Result<String, String> {
        let out = Command::new(path).args(args).output().map_err(|e| format!("cannot run it: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() {
            let said = String::from_utf8_lossy(&out.stderr);
            let first = said.lines().next().unwrap_or("(nothing)").to_string();
            return Err(format!("`zig {}` exited with {}: {first}", args.join(" "), out.status));
        }
        Ok(text)
    };
    let zig = run(&["version"])?;
    let zig = zig.lines().next().map(str::trim).filter(|v| !v.is_empty()).ok_or("`zig version` printed nothing")?;
    let clang_said = run(&["clang", "--version"])?;
    let clang = parse_clang_version(&clang_said).ok_or_else(|| {
        format!("`zig clang --version` did not name a clang: {}", clang_said.lines().next().unwrap_or("(nothing)"))
    })?;
    let mut extra_flags = rocm_flags(env)?;
    extra_flags.extend(resource_flags(path)?);
    extra_flags.push(format!("-B{LINKER_DIR}"));
    Ok(Compiler {
        kind: CompilerKind::ZigClang,
        path: path.to_path_buf(),
        version: format!("{zig} (clang {clang})"),
        extra_flags,
    })
}

/// Where ROCm's HIP headers and device libraries are: `$ROCM_PATH` (its `amdgcn/bitcode`, or the one under its
/// LLVM's clang), else Debian's packages (`/usr/include/hip`, `/usr/lib/<multiarch>/amdgcn/bitcode`). zig's clang
/// finds neither by itself.
fn rocm_flags(env: &dyn Fn(&str) -> Option<OsString>) -> std::result::Result<Vec<String>, String> {
    let flags = |root: &Path, bitcode: &Path| {
        vec![
            format!("--rocm-path={}", root.display()),
            format!("--hip-path={}", root.display()),
            format!("--rocm-device-lib-path={}", bitcode.display()),
        ]
    };
    if let Some(root) = env("ROCM_PATH").filter(|v| !v.is_empty()).map(PathBuf::from) {
        let mut bitcode = vec![root.join("amdgcn/bitcode")];
        // ROCm 6.2 and later keep the device libraries under their clang's resource folder.
        if let Ok(versions) = std::fs::read_dir(root.join("lib/llvm/lib/clang")) {
            let mut found: Vec<PathBuf> = versions.flatten().map(|v| v.path().join("lib/amdgcn/bitcode")).collect();
            found.sort();
            bitcode.extend(found);
        }
        return match bitcode.iter().find(|b| b.join("ockl.bc").is_file()) {
            Some(b) => Ok(flags(&root, b)),
            None => Err(format!(
                "ROCM_PATH={} has no device libraries (ockl.bc) in amdgcn/bitcode or lib/llvm/lib/clang/*/lib/amdgcn/bitcode",
                root.display()
            )),
        };
    }
    let debian = PathBuf::from(format!("/usr/lib/{}-linux-gnu/amdgcn/bitcode", std::env::consts::ARCH));
    if debian.join("ockl.bc").is_file() && Path::new("/usr/include/hip/hip_runtime.h").is_file() {
        return Ok(flags(Path::new("/usr"), &debian));
    }
    Err(format!(
        "zig's clang needs ROCm's HIP headers and device libraries: set ROCM_PATH, or on Debian `apt-get install \
         hipcc libamdhip64-dev rocm-device-libs` ({} not found)",
        debian.display()
    ))
}

/// zig keeps clang's own headers (the HIP wrappers among them) in `lib/` beside its binary, where its clang does
/// not look by itself when driven for HIP: name it as the resource folder and its `include` as a system folder.
fn resource_flags(zig: &Path) -> std::result::Result<Vec<String>, String> {
    // A zig on PATH may be a link to the real install: its lib/ is beside the real binary.
    let real = std::fs::canonicalize(zig).unwrap_or_else(|_| zig.to_path_buf());
    let lib = real.parent().map(|d| d.join("lib")).unwrap_or_default();
    let include = lib.join("include");
    if !include.join("__clang_hip_runtime_wrapper.h").is_file() {
        return Err(format!("{} has no clang HIP headers (__clang_hip_runtime_wrapper.h)", include.display()));
    }
    Ok(vec!["-resource-dir".into(), lib.display().to_string(), "-isystem".into(), include.display().to_string()])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code_objects::compile::write_linker;
    use crate::code_objects::{check_arch, compile, flags, source, Format};
    use crate::device::Arch;

    /// What `zig clang --version` of the ziglang 0.13.0 wheel prints (read here).
    const ZIG_CLANG_18: &str = "clang version 18.1.6 (https://github.com/ziglang/zig-bootstrap \
                                98bc6bf4fc4009888d33941daf6b600d20a42a56)\nTarget: x86_64-unknown-linux-musl\n\
                                Thread model: posix\nInstalledDir: /work\n";

    #[test]
    fn zigs_clang_version_parses() {
        assert_eq!(parse_clang_version(ZIG_CLANG_18).as_deref(), Some("18.1.6"));
    }

    #[test]
    fn flags_put_zigs_extras_after_the_clang_ones() {
        let zig = Compiler {
            kind: CompilerKind::ZigClang,
            path: "/w/ziglang/zig".into(),
            version: "0.13.0 (clang 18.1.6)".into(),
            extra_flags: vec!["--rocm-path=/usr".into(), "-Bzig-lld".into()],
        };
        assert_eq!(
            flags(&zig, &Arch::parse("gfx90a").unwrap()).join(" "),
            "-x hip --cuda-device-only --no-gpu-bundle-output --offload-arch=gfx90a -O3 -Iinclude --rocm-path=/usr \
             -Bzig-lld"
        );
        assert_eq!(CompilerKind::ZigClang.subcommand(), ["clang"]);
        assert_eq!(CompilerKind::ZigClang.name(), "zig-clang");
    }

    /// The script drops exactly the leading `-flavor gnu` and passes everything else, quoted paths included.
    #[test]
    fn the_linker_script_drops_the_flavor_and_runs_zig_ld_lld() {
        let dir = tempfile::tempdir().unwrap();
        // A stand-in for zig that prints its arguments, one per line, at a path with a space and a quote.
        let fake = dir.path().join("it's zig");
        std::fs::write(&fake, "#!/bin/sh\nfor a in \"$@\"; do echo \"$a\"; done\n").unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        write_linker(&fake, dir.path()).unwrap();
        for (name, args, want) in [
            ("lld", &["-flavor", "gnu", "-m", "elf64_amdgpu", "a b.o"][..], "ld.lld\n-m\nelf64_amdgpu\na b.o\n"),
            ("ld.lld", &["-shared", "-o", "x"][..], "ld.lld\n-shared\n-o\nx\n"),
        ] {
            let out = Command::new(dir.path().join(LINKER_DIR).join(name)).args(args).output().unwrap();
            assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
            assert_eq!(String::from_utf8_lossy(&out.stdout), want, "{name}");
        }
    }

    #[test]
    fn not_found_lists_every_place_and_says_how_to_install() {
        let env = |name: &str| match name {
            "ZIG" => Some(OsString::from("/nonexistent/zig")),
            "PYTHON" => Some(OsString::from("/nonexistent/python3")),
            "PATH" => Some(OsString::from("/nonexistent/bin")),
            _ => None,
        };
        let text = find_zig_with(&env).unwrap_err().to_string();
        assert!(text.contains("pip install ziglang==0.13.0"), "{text}");
        assert!(text.contains("tried $ZIG = /nonexistent/zig: no such file"), "{text}");
        assert!(text.contains("tried the ziglang wheel of /nonexistent/python3: cannot run it"), "{text}");
        assert!(text.contains("tried zig on PATH: not found"), "{text}");
    }

    /// The wheel's clang builds every kernel source into a plain gfx90a ELF with the suite's own linker scripts, and
    /// says its version.
    #[test]
    fn every_source_compiles_for_gfx90a_with_zigs_clang() {
        let zig = crate::code_objects::test_support::zig();
        assert!(zig.version.contains("(clang 18."), "{zig}");
        let a = Arch::parse("gfx90a").unwrap();
        for s in crate::code_objects::all() {
            let bytes = crate::code_objects::test_support::compiled(&zig, s.name, "gfx90a");
            let info = check_arch(&bytes, &a).unwrap_or_else(|e| panic!("{}: {e}", s.name));
            assert_eq!(info.format, Format::AmdElf, "{}", s.name);
            // matmul_dmma holds NVIDIA's FP64 tensor-core rung only: for AMD its object is empty (its header says so).
            assert_eq!(info.amd_kernels.is_empty(), s.name == "matmul_dmma", "{}", s.name);
        }
        let smoke = compile(&zig, source("smoke").unwrap(), &a).unwrap_or_else(|e| panic!("{e}"));
        assert!(check_arch(&smoke, &a).unwrap().amd_kernel("smoke_triad").is_some());
    }
}
