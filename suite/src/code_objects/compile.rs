//! Finding the node's kernel compiler and running it.
//!
//! AMD: `hipcc --genco` (ROCm's driver; on LUMI after `module load rocm`), or a HIP-capable clang named by
//! `$HIPCC`; for static comparisons only, upstream clang from the `ziglang` wheel ([`super::zig`]). NVIDIA: `nvcc
//! -cubin`. Each compile runs in a fresh temporary folder holding the source and the embedded headers, so it needs
//! nothing from the source tree.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::sources::{self, Source};
use super::{CompilerName as _, Error, Result};
use crate::device::{Arch, Platform};

/// Which compiler driver builds the kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompilerKind {
    /// ROCm's `hipcc` (AMD); `--genco` writes a clang offload bundle.
    Hipcc,
    /// A clang with HIP support used directly (AMD), e.g. `/opt/rocm/llvm/bin/clang++`; writes a plain ELF.
    ClangHip,
    /// Upstream clang as the `ziglang` wheel (pip) carries it, run as `zig clang` (AMD; clang 18.1.6 in zig 0.13.0)
    /// with ROCm's HIP headers and device libraries; writes a plain ELF. A second, newer compiler for static
    /// comparisons in CI (`--compiler zig` of `suite kernels inspect|compare`, [`super::zig::find_zig`]); `suite
    /// run` never picks it.
    ZigClang,
    /// NVIDIA's `nvcc`; writes a cubin.
    Nvcc,
}

impl CompilerKind {
    /// Short name for messages and the cache key.
    pub fn name(self) -> &'static str {
        match self {
            CompilerKind::Hipcc => "hipcc",
            CompilerKind::ClangHip => "clang-hip",
            CompilerKind::ZigClang => "zig-clang",
            CompilerKind::Nvcc => "nvcc",
        }
    }

    /// Words between the program and the flags: `clang` for `zig clang`, none otherwise.
    pub fn subcommand(self) -> &'static [&'static str] {
        match self {
            CompilerKind::ZigClang => &["clang"],
            CompilerKind::Hipcc | CompilerKind::ClangHip | CompilerKind::Nvcc => &[],
        }
    }

    /// The platform whose code objects it writes.
    pub fn platform(self) -> Platform {
        match self {
            CompilerKind::Hipcc | CompilerKind::ClangHip | CompilerKind::ZigClang => Platform::Amd,
            CompilerKind::Nvcc => Platform::Nvidia,
        }
    }
}

/// A compiler found on this node.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Compiler {
    /// Which driver it is.
    pub kind: CompilerKind,
    /// Where it is (a name given without a folder is resolved through `PATH`).
    pub path: PathBuf,
    /// Version read from `--version`, e.g. `5.2.21153-0 (clang 15.0.6)` for hipcc or `13.5.37` for nvcc.
    pub version: String,
    /// Flags this installation needs on top of [`flags`]: for [`CompilerKind::ClangHip`], where ROCm's headers and
    /// device libraries are when clang cannot find them itself (Debian's packages). Empty otherwise.
    pub extra_flags: Vec<String>,
}

impl Compiler {
    /// Its kind and version, without its path: `hipcc 5.2.21153-0 (clang 15.0.6)`, `zig-clang 0.13.0 (clang
    /// 18.1.6)`, `nvcc 13.5.37`. Static figures (registers, LDS, occupancy) name the compiler this way.
    pub fn label(&self) -> String {
        format!("{} {}", self.kind.name(), self.version)
    }
}

impl std::fmt::Display for Compiler {
    /// E.g. `nvcc 13.5.37 (/usr/local/cuda/bin/nvcc)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} ({})", self.kind.name(), self.version, self.path.display())
    }
}

/// What to do when no compiler is found, by platform: on a cluster, and in CI on Debian.
fn hint(platform: Platform) -> String {
    match platform {
        Platform::Amd => "on LUMI run `module load rocm` (or set HIPCC, ROCM_PATH or HIP_PATH); on Debian/CI \
                          `apt-get install hipcc libamdhip64-dev rocm-device-libs`; or pass --kernels-dir with \
                          objects from `suite kernels build`"
            .to_string(),
        Platform::Nvidia => "install the CUDA toolkit or set CUDA_PATH (or NVCC); in CI `pip install nvidia-cuda-nvcc \
                             nvidia-cuda-runtime nvidia-cuda-cccl nvidia-cuda-crt` and put its nvidia/cu13/bin on \
                             PATH; or pass --kernels-dir with objects from `suite kernels build`"
            .to_string(),
    }
}

/// Finds the platform's compiler, in this order. AMD: `$HIPCC`, `$ROCM_PATH/bin/hipcc`, `$HIP_PATH/bin/hipcc`,
/// `/opt/rocm/bin/hipcc`, `hipcc` on `PATH`. NVIDIA: `$NVCC`, `$CUDA_PATH/bin/nvcc`, `/usr/local/cuda/bin/nvcc`,
/// `nvcc` on `PATH`. The first candidate whose `--version` runs and is recognised wins; the error lists every
/// candidate with its reason.
pub fn find(platform: Platform) -> Result<Compiler> {
    find_with(platform, &|name| std::env::var_os(name))
}

/// [`find`] with the environment passed in, so tests need not change the process's environment.
pub(crate) fn find_with(platform: Platform, env: &dyn Fn(&str) -> Option<OsString>) -> Result<Compiler> {
    let mut tried = Vec::new();
    for (label, candidate) in candidates(platform, env) {
        let Some((kind, path)) = candidate else {
            tried.push((label, "not set".to_string()));
            continue;
        };
        match probe(kind, &path, env) {
            Ok(compiler) => return Ok(compiler),
            Err(why) => tried.push((format!("{label} = {}", path.display()), why)),
        }
    }
    Err(Error::CompilerNotFound { platform, tried, hint: hint(platform) })
}

type Candidate = (String, Option<(CompilerKind, PathBuf)>);

/// The places to look, in order, each labelled for the error message; `None` where an environment variable is
/// unset or a program is not on `PATH`.
fn candidates(platform: Platform, env: &dyn Fn(&str) -> Option<OsString>) -> Vec<Candidate> {
    let var = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let (own_var, root_vars, default, program): (&str, &[&str], &str, &str) = match platform {
        Platform::Amd => ("HIPCC", &["ROCM_PATH", "HIP_PATH"], "/opt/rocm/bin/hipcc", "hipcc"),
        Platform::Nvidia => ("NVCC", &["CUDA_PATH"], "/usr/local/cuda/bin/nvcc", "nvcc"),
    };
    let default_kind = match platform {
        Platform::Amd => CompilerKind::Hipcc,
        Platform::Nvidia => CompilerKind::Nvcc,
    };
    let mut out = Vec::new();
    out.push((format!("${own_var}"), var(own_var).map(|p| (kind_of(platform, &p), p))));
    for root in root_vars {
        out.push((format!("${root}/bin/{program}"), var(root).map(|r| (default_kind, r.join("bin").join(program)))));
    }
    out.push((default.to_string(), Some((default_kind, PathBuf::from(default)))));
    let on_path = env("PATH").and_then(|p| search_path(&p, program));
    out.push((format!("{program} on PATH"), on_path.map(|p| (default_kind, p))));
    out
}

/// `$HIPCC` may name a clang rather than hipcc; it is driven differently (see [`flags`]).
fn kind_of(platform: Platform, path: &Path) -> CompilerKind {
    let name = path.file_name().map(|n| n.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    match platform {
        Platform::Amd if name.contains("clang") => CompilerKind::ClangHip,
        Platform::Amd => CompilerKind::Hipcc,
        Platform::Nvidia => CompilerKind::Nvcc,
    }
}

/// The first `dir/program` in a `PATH` value that is a file.
pub(crate) fn search_path(path_var: &OsString, program: &str) -> Option<PathBuf> {
    std::env::split_paths(path_var).map(|dir| dir.join(program)).find(|p| p.is_file())
}

/// `path` as a file to run: a bare name (`clang++-15`) is looked up on `PATH`, so the compiler's recorded path is
/// where it really is.
pub(crate) fn resolve(path: &Path, env: &dyn Fn(&str) -> Option<OsString>) -> std::result::Result<PathBuf, String> {
    let resolved = if path.components().count() == 1 {
        env("PATH").and_then(|p| search_path(&p, &path.to_string_lossy())).ok_or("not found on PATH")?
    } else {
        path.to_path_buf()
    };
    if !resolved.is_file() {
        return Err("no such file".to_string());
    }
    Ok(resolved)
}

/// Runs `path --version` and recognises the output; the error says why the candidate was rejected.
pub(crate) fn probe(
    kind: CompilerKind,
    path: &Path,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> std::result::Result<Compiler, String> {
    let resolved = resolve(path, env)?;
    let path = resolved.as_path();
    if kind == CompilerKind::ZigClang {
        // zig's version and flags come from two commands and the machine's HIP install: code_objects/zig.rs.
        return Err("zig's clang is probed by find_zig".to_string());
    }
    let mut cmd = Command::new(path);
    cmd.arg("--version");
    pin_platform(kind, &mut cmd);
    let out = cmd.output().map_err(|e| format!("cannot run it: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let parsed = match kind {
        CompilerKind::Hipcc => parse_hipcc_version(&stdout),
        CompilerKind::ClangHip | CompilerKind::ZigClang => parse_clang_version(&stdout),
        CompilerKind::Nvcc => parse_nvcc_version(&stdout),
    };
    let Some(version) = parsed else {
        let said = if stdout.trim().is_empty() { stderr.trim() } else { stdout.trim() };
        let first = said.lines().next().unwrap_or("(nothing)");
        return Err(format!("`--version` ({}) did not look like {}: {first}", out.status, kind.name()));
    };
    let extra_flags = match kind {
        CompilerKind::ClangHip => clang_rocm_flags(path, env),
        CompilerKind::Hipcc | CompilerKind::ZigClang | CompilerKind::Nvcc => Vec::new(),
    };
    Ok(Compiler { kind, path: path.to_path_buf(), version, extra_flags })
}

/// hipcc picks its platform by itself and prefers NVIDIA when it finds nvcc but no `clang++` next to it (Debian's
/// hipcc does exactly that when the CUDA wheels are on `PATH`): pin AMD, which is what `--genco` is for here.
fn pin_platform(kind: CompilerKind, cmd: &mut Command) {
    if kind == CompilerKind::Hipcc {
        cmd.env("HIP_PLATFORM", "amd");
    }
}

/// ROCm's clang finds its headers and device libraries from its own location. A distribution's clang (Debian's
/// `clang++-15`) does not: point it at `$ROCM_PATH`, or at Debian's layout when that is where they are.
fn clang_rocm_flags(path: &Path, env: &dyn Fn(&str) -> Option<OsString>) -> Vec<String> {
    if let Some(root) = env("ROCM_PATH").filter(|v| !v.is_empty()) {
        return vec![format!("--rocm-path={}", PathBuf::from(root).display())];
    }
    let in_rocm = path.ancestors().any(|a| a.join("amdgcn/bitcode").is_dir() || a.join("lib/llvm").is_dir());
    let multiarch = format!("/usr/lib/{}-linux-gnu/amdgcn/bitcode", std::env::consts::ARCH);
    if !in_rocm && Path::new(&multiarch).is_dir() && Path::new("/usr/include/hip/hip_runtime.h").is_file() {
        return vec!["--rocm-path=/usr".to_string(), format!("--hip-device-lib-path={multiarch}")];
    }
    Vec::new()
}

/// hipcc's version: the `HIP version:` line, plus the clang it drives, e.g. `5.2.21153-0 (clang 15.0.6)`.
pub fn parse_hipcc_version(text: &str) -> Option<String> {
    let hip = text.lines().find_map(|l| l.trim().strip_prefix("HIP version:"))?.trim();
    if hip.is_empty() {
        return None;
    }
    Some(match parse_clang_version(text) {
        Some(clang) => format!("{hip} (clang {clang})"),
        None => hip.to_string(),
    })
}

/// clang's version from its `... clang version X ...` line, e.g. `15.0.6` or `18.0.0git`.
pub fn parse_clang_version(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let (_, rest) = l.split_once("clang version ")?;
        rest.split_whitespace().next().map(str::to_string)
    })
}

/// nvcc's version from `Cuda compilation tools, release 13.5, V13.5.37`: `13.5.37`.
pub fn parse_nvcc_version(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let (_, rest) = l.split_once("Cuda compilation tools, release ")?;
        let (release, build) = rest.split_once(", V").unwrap_or((rest, ""));
        let build = build.trim();
        Some(if build.is_empty() { release.trim().to_string() } else { build.to_string() })
    })
}

/// The flags that select the architecture and optimisation (the input and output are added by [`compile`]).
///
/// - hipcc: `--genco --offload-arch=<arch> -O3 -Iinclude` (device code only: a clang offload bundle).
/// - clang: `-x hip --cuda-device-only --no-gpu-bundle-output --offload-arch=<arch> -O3 -Iinclude` plus the
///   compiler's [`Compiler::extra_flags`] (a plain ELF, as `clang-offload-bundler --unbundle` would give).
/// - zig's clang: the same after `zig clang`, with its extra flags naming ROCm's headers and device libraries, the
///   wheel's clang resource folder and the linker's folder ([`super::zig`]).
/// - nvcc: `-x cu -cubin -arch=<arch> -O3 -Iinclude` (`-x cu` because the files end in `.hip`).
///
/// `-Iinclude` is relative because each compile runs in its own temporary folder, and a fixed spelling keeps the
/// flags, and so the cache key, the same from one compile to the next. The default code-object version of the
/// compiler is kept (v4 with ROCm 5, v5 with ROCm 6): the HIP runtime of the same ROCm loads it.
pub fn flags(compiler: &Compiler, arch: &Arch) -> Vec<String> {
    let mut flags: Vec<String> = match compiler.kind {
        CompilerKind::Hipcc => vec!["--genco".into(), format!("--offload-arch={arch}")],
        CompilerKind::ClangHip | CompilerKind::ZigClang => vec![
            "-x".into(),
            "hip".into(),
            "--cuda-device-only".into(),
            "--no-gpu-bundle-output".into(),
            format!("--offload-arch={arch}"),
        ],
        CompilerKind::Nvcc => vec!["-x".into(), "cu".into(), "-cubin".into(), format!("-arch={arch}")],
    };
    flags.push("-O3".into());
    flags.push(format!("-I{INCLUDE_DIR}"));
    flags.extend(compiler.extra_flags.iter().cloned());
    flags
}

/// The include folder's name inside a compile's temporary folder.
const INCLUDE_DIR: &str = "include";

/// Compiles `source` for `arch` with [`flags`] and returns the code object: for hipcc a clang offload bundle, for
/// clang a plain AMD ELF, for nvcc a cubin. The bytes are not checked here; [`super::KernelStore`] checks them.
pub fn compile(compiler: &Compiler, source: &Source, arch: &Arch) -> Result<Vec<u8>> {
    compile_with_flags(compiler, source, arch, &flags(compiler, arch))
}

/// [`compile`] with the flags given (tests use it for `-mcode-object-version=5`).
pub(crate) fn compile_with_flags(
    compiler: &Compiler,
    source: &Source,
    arch: &Arch,
    flags: &[String],
) -> Result<Vec<u8>> {
    if compiler.kind.platform() != arch.platform() {
        return Err(Error::WrongCompiler { compiler: compiler.kind.platform().compiler_name(), arch: arch.clone() });
    }
    let io = |action: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io { action, path, source, hint: ": check that TMPDIR is writable and has space" }
    };
    let tmp = std::env::temp_dir();
    let work = tempfile::Builder::new().prefix("suite-kernel-").tempdir().map_err(io("create a folder in", &tmp))?;
    let include = work.path().join(INCLUDE_DIR);
    std::fs::create_dir(&include).map_err(io("create", &include))?;
    sources::write_headers(&include)?;
    let input = work.path().join(source.file_name);
    std::fs::write(&input, source.text).map_err(io("write", &input))?;
    let output_name = format!("{}.{arch}.out", source.name);

    if compiler.kind == CompilerKind::ZigClang {
        write_linker(&compiler.path, work.path())?;
    }
    let mut cmd = Command::new(&compiler.path);
    cmd.args(compiler.kind.subcommand());
    cmd.args(flags).arg(source.file_name).arg("-o").arg(&output_name).current_dir(work.path());
    pin_platform(compiler.kind, &mut cmd);
    let command = shell_line(compiler, flags, source.file_name, &output_name, work.path());
    let failed = |stderr: String| Error::CompileFailed {
        source_name: source.name.to_string(),
        arch: arch.clone(),
        command: command.clone(),
        stderr,
    };
    // A compile takes seconds to tens of seconds (matmul.hip: about 30 s for gfx90a), and a first run or dry run
    // on a machine compiles every source: a compile still running after a second says so, once, so a silent
    // wait is not taken for a hang. Fast compiles (and cache hits, which never get here) stay quiet.
    let notice = format!(
        "compiling {} for {arch} with {} (not in the kernel cache yet: later runs take it from there) ...",
        source.file_name,
        compiler.label()
    );
    let out = after_a_while(SLOW_COMPILE, &notice, || cmd.output())
        .map_err(|e| failed(format!("cannot run {}: {e}", compiler.path.display())))?;
    if !out.status.success() {
        return Err(failed(compiler_said(&out.stdout, &out.stderr, &format!("exited with {}", out.status))));
    }
    let output = work.path().join(&output_name);
    match std::fs::read(&output) {
        Ok(bytes) if !bytes.is_empty() => Ok(bytes),
        Ok(_) => Err(failed(compiler_said(&out.stdout, &out.stderr, "it succeeded but wrote an empty file"))),
        Err(e) => Err(failed(compiler_said(&out.stdout, &out.stderr, &format!("it succeeded but {output_name}: {e}")))),
    }
}

/// How long a compile runs before the suite says it is compiling.
const SLOW_COMPILE: std::time::Duration = std::time::Duration::from_secs(1);

/// Runs `work`; when it is still running after `after`, prints `notice` on stderr (once).
fn after_a_while<T>(after: std::time::Duration, notice: &str, work: impl FnOnce() -> T) -> T {
    let (done, waiting) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|scope| {
        scope.spawn(move || {
            // Disconnected (the work ended first) says nothing; only a timeout does.
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = waiting.recv_timeout(after) {
                eprintln!("{notice}");
            }
        });
        let result = work();
        drop(done);
        result
    })
}

/// Longest compiler output quoted in an error, in bytes: enough for the first errors of a bad kernel.
const MAX_QUOTED: usize = 16 * 1024;

/// The compiler's own words for an error: stderr, then stdout where it has something, capped at [`MAX_QUOTED`].
fn compiler_said(stdout: &[u8], stderr: &[u8], fallback: &str) -> String {
    let mut text = String::from_utf8_lossy(stderr).trim().to_string();
    let stdout = String::from_utf8_lossy(stdout);
    if !stdout.trim().is_empty() {
        text = format!("{}\n{}", stdout.trim(), text).trim().to_string();
    }
    if text.is_empty() {
        return format!("({fallback}, printing nothing)");
    }
    if text.len() > MAX_QUOTED {
        let mut cut = MAX_QUOTED;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("\n[... cut]");
    }
    text
}

/// The command as a shell would run it, to paste when reproducing a failure.
fn shell_line(compiler: &Compiler, flags: &[String], input: &str, output: &str, dir: &Path) -> String {
    let env = if compiler.kind == CompilerKind::Hipcc { "HIP_PLATFORM=amd " } else { "" };
    let mut words = vec![compiler.path.display().to_string()];
    words.extend(compiler.kind.subcommand().iter().map(|w| w.to_string()));
    words.extend(flags.iter().cloned());
    words.extend([input.to_string(), "-o".to_string(), output.to_string()]);
    format!("(cd {} && {env}{})", dir.display(), words.join(" "))
}

/// The folder, in a compile's own temporary folder, where zig's clang finds its linker (`-Bzig-lld`, relative, so
/// the flags and the cache key are the same from one compile to the next): zig carries lld's ELF driver as `zig
/// ld.lld`, not as an `lld` program (code_objects/zig.rs).
pub(crate) const LINKER_DIR: &str = "zig-lld";

/// The linker scripts' text: drop the `-flavor gnu` that clang's HIP toolchain passes, and run `zig ld.lld`.
pub fn linker_script(zig: &Path) -> String {
    // Single quotes keep every byte of the path; a quote in it is closed, escaped and reopened.
    let quoted = format!("'{}'", zig.display().to_string().replace('\'', r"'\''"));
    format!(
        "#!/bin/sh\n# Written by the suite (code_objects/compile.rs): clang's HIP toolchain runs `lld -flavor gnu ...`; \
         zig's lld is `zig ld.lld`, which takes no -flavor.\nif [ \"$1\" = \"-flavor\" ]; then shift 2; fi\nexec \
         {quoted} ld.lld \"$@\"\n"
    )
}

/// Writes the linker scripts (`lld` and `ld.lld`, see [`linker_script`]) into `<work>/zig-lld`, executable, for a
/// compile that runs in `work` with `-Bzig-lld`.
pub(crate) fn write_linker(zig: &Path, work: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = work.join(LINKER_DIR);
    let io = |action: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io { action, path, source, hint: ": check that TMPDIR is writable and has space" }
    };
    std::fs::create_dir_all(&dir).map_err(io("create", &dir))?;
    let text = linker_script(zig);
    for name in ["lld", "ld.lld"] {
        let path = dir.join(name);
        std::fs::write(&path, &text).map_err(io("write", &path))?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .map_err(io("make executable", &path))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code_objects::sources::all;
    use crate::code_objects::test_support::{compiler, tool};
    use crate::code_objects::{check_arch, Format};

    fn arch(s: &str) -> Arch {
        Arch::parse(s).unwrap()
    }

    // Real `--version` output: hipcc and clang from Debian 12's packages (here), hipcc 6.2 as quoted in
    // kokkos/kokkos#8708, nvcc 13.5 from the pip wheel (here), and the same line from ptxas 12.9 (pip cu12 wheel).
    const HIPCC_5_2: &str = "HIP version: 5.2.21153-0\nDebian clang version 15.0.6\nTarget: x86_64-pc-linux-gnu\n\
                             Thread model: posix\nInstalledDir: /usr/bin\n";
    const HIPCC_6_2: &str = "HIP version: 6.2.41134-0\nAMD clang version 18.0.0git\nTarget: x86_64-unknown-linux-gnu\n\
                             Thread model: posix\nInstalledDir: /rocm/bin\n";
    const CLANG_15: &str = "Debian clang version 15.0.6\nTarget: x86_64-pc-linux-gnu\nThread model: posix\n\
                            InstalledDir: /usr/bin\n";
    const NVCC_13_5: &str = "nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2026 NVIDIA Corporation\n\
                             Built on Mon_Oct_12_19:25:48_PDT_2026\nCuda compilation tools, release 13.5, V13.5.37\n\
                             Build cuda_13.5.r13.5/compiler.39125733_0\n";
    const PTXAS_12_9: &str = "ptxas: NVIDIA (R) Ptx optimizing assembler\nCopyright (c) 2005-2025 NVIDIA Corporation\n\
                              Cuda compilation tools, release 12.9, V12.9.86\nBuild cuda_12.9.r12.9/compiler.36037853_0\n";

    #[test]
    fn versions_parse_from_real_output() {
        type Parser = fn(&str) -> Option<String>;
        let cases: &[(Parser, &str, Option<&str>)] = &[
            (parse_hipcc_version, HIPCC_5_2, Some("5.2.21153-0 (clang 15.0.6)")),
            (parse_hipcc_version, HIPCC_6_2, Some("6.2.41134-0 (clang 18.0.0git)")),
            (parse_hipcc_version, CLANG_15, None),
            (parse_hipcc_version, NVCC_13_5, None),
            (parse_hipcc_version, "HIP version: \n", None),
            (parse_clang_version, CLANG_15, Some("15.0.6")),
            (parse_clang_version, HIPCC_6_2, Some("18.0.0git")),
            (parse_clang_version, NVCC_13_5, None),
            (parse_nvcc_version, NVCC_13_5, Some("13.5.37")),
            (parse_nvcc_version, PTXAS_12_9, Some("12.9.86")),
            (parse_nvcc_version, "Cuda compilation tools, release 11.0", Some("11.0")),
            (parse_nvcc_version, HIPCC_5_2, None),
            (parse_nvcc_version, "", None),
        ];
        for (i, (parse, text, want)) in cases.iter().enumerate() {
            assert_eq!(parse(text).as_deref(), *want, "case {i}: {text:?}");
        }
    }

    #[test]
    fn flags_per_compiler() {
        let hipcc =
            Compiler { kind: CompilerKind::Hipcc, path: "hipcc".into(), version: "x".into(), extra_flags: vec![] };
        let nvcc = Compiler { kind: CompilerKind::Nvcc, path: "nvcc".into(), version: "x".into(), extra_flags: vec![] };
        let clang = Compiler {
            kind: CompilerKind::ClangHip,
            path: "clang++".into(),
            version: "x".into(),
            extra_flags: vec!["--rocm-path=/usr".into()],
        };
        let cases = [
            (&hipcc, "gfx90a", "--genco --offload-arch=gfx90a -O3 -Iinclude"),
            (&nvcc, "sm_90", "-x cu -cubin -arch=sm_90 -O3 -Iinclude"),
            (&nvcc, "sm_90a", "-x cu -cubin -arch=sm_90a -O3 -Iinclude"),
            (
                &clang,
                "gfx908",
                "-x hip --cuda-device-only --no-gpu-bundle-output --offload-arch=gfx908 -O3 -Iinclude --rocm-path=/usr",
            ),
        ];
        for (c, a, want) in cases {
            assert_eq!(flags(c, &arch(a)).join(" "), want);
        }
    }

    #[test]
    fn candidates_come_in_the_documented_order() {
        let env = |name: &str| match name {
            "ROCM_PATH" => Some(OsString::from("/appl/rocm")),
            "HIPCC" => Some(OsString::from("/opt/rocm/llvm/bin/clang++")),
            "CUDA_PATH" => Some(OsString::from("/usr/local/cuda-13.0")),
            _ => None,
        };
        let labels = |p| candidates(p, &env);
        let amd = labels(Platform::Amd);
        assert_eq!(
            amd.iter().map(|(l, _)| l.as_str()).collect::<Vec<_>>(),
            ["$HIPCC", "$ROCM_PATH/bin/hipcc", "$HIP_PATH/bin/hipcc", "/opt/rocm/bin/hipcc", "hipcc on PATH"]
        );
        assert_eq!(amd[0].1, Some((CompilerKind::ClangHip, PathBuf::from("/opt/rocm/llvm/bin/clang++"))));
        assert_eq!(amd[1].1, Some((CompilerKind::Hipcc, PathBuf::from("/appl/rocm/bin/hipcc"))));
        assert_eq!(amd[2].1, None);
        let nv = labels(Platform::Nvidia);
        assert_eq!(
            nv.iter().map(|(l, _)| l.as_str()).collect::<Vec<_>>(),
            ["$NVCC", "$CUDA_PATH/bin/nvcc", "/usr/local/cuda/bin/nvcc", "nvcc on PATH"]
        );
        assert_eq!(nv[1].1, Some((CompilerKind::Nvcc, PathBuf::from("/usr/local/cuda-13.0/bin/nvcc"))));
    }

    #[test]
    fn not_found_lists_candidates_and_says_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let env = |name: &str| match name {
            "PATH" => Some(dir.path().as_os_str().to_owned()),
            "CUDA_PATH" => Some(dir.path().join("cuda").into_os_string()),
            _ => None,
        };
        // The only candidates left are the fixed install paths: where one exists the search rightly finds it.
        match (find_with(Platform::Nvidia, &env), Path::new("/usr/local/cuda/bin/nvcc").exists()) {
            (Ok(c), true) => assert_eq!(c.path, Path::new("/usr/local/cuda/bin/nvcc")),
            (Ok(c), false) => panic!("found {} with nothing to find", c.path.display()),
            (Err(e), exists) => {
                assert!(!exists, "/usr/local/cuda/bin/nvcc exists but was not found: {e}");
                let text = e.to_string();
                assert!(
                    text.starts_with("no nvidia kernel compiler found: install the CUDA toolkit or set CUDA_PATH"),
                    "{text}"
                );
                assert!(text.contains("tried $NVCC: not set"), "{text}");
                let cuda = format!("tried $CUDA_PATH/bin/nvcc = {}/cuda/bin/nvcc: no such file", dir.path().display());
                assert!(text.contains(&cuda), "{text}");
                assert!(text.contains("pip install nvidia-cuda-nvcc"), "{text}");
            }
        }
        match (find_with(Platform::Amd, &env), Path::new("/opt/rocm/bin/hipcc").exists()) {
            (Ok(c), true) => assert_eq!(c.path, Path::new("/opt/rocm/bin/hipcc")),
            (Ok(c), false) => panic!("found {} with nothing to find", c.path.display()),
            (Err(e), exists) => {
                assert!(!exists, "/opt/rocm/bin/hipcc exists but was not found: {e}");
                let text = e.to_string();
                assert!(text.contains("module load rocm") && text.contains("apt-get install hipcc"), "{text}");
                assert!(text.contains("tried hipcc on PATH: not set"), "{text}");
            }
        }
    }

    #[test]
    fn a_program_that_is_not_the_compiler_is_rejected() {
        // `true` prints nothing for --version: a wrapper or a broken install, not a compiler.
        let why = probe(CompilerKind::Nvcc, Path::new("/bin/true"), &|_| None).unwrap_err();
        assert!(why.contains("did not look like nvcc"), "{why}");
    }

    #[test]
    fn the_wrong_platform_is_refused_before_running_anything() {
        let nvcc = Compiler {
            kind: CompilerKind::Nvcc,
            path: "/nonexistent".into(),
            version: "x".into(),
            extra_flags: vec![],
        };
        let e = compile(&nvcc, &all()[0], &arch("gfx90a")).unwrap_err();
        assert!(matches!(e, Error::WrongCompiler { .. }), "{e}");
        assert!(e.to_string().contains("use hipcc for amd"), "{e}");
    }

    /// Every embedded source compiles for `arch` and gives an object for it.
    fn every_source_compiles(arch_name: &str, platform: Platform, want: Format) {
        let c = compiler(platform);
        let a = arch(arch_name);
        for source in all() {
            let bytes = crate::code_objects::test_support::compiled(&c, source.name, arch_name);
            let info = check_arch(&bytes, &a).unwrap_or_else(|e| panic!("{}: {e}", source.name));
            assert_eq!(info.format, want, "{}", source.name);
        }
    }

    #[test]
    fn every_source_compiles_for_gfx90a() {
        every_source_compiles("gfx90a", Platform::Amd, Format::AmdBundle);
    }

    #[test]
    fn every_source_compiles_for_sm_90() {
        every_source_compiles("sm_90", Platform::Nvidia, Format::Cubin);
    }

    #[test]
    fn clang_writes_a_plain_elf() {
        // Debian's hipcc brings clang++-15, ROCm has its own clang; either needs the HIP device libraries.
        compiler(Platform::Amd);
        let path = tool(&["/opt/rocm/llvm/bin/clang++", "clang++-15", "clang++"]);
        let env = |name: &str| std::env::var_os(name);
        let c = probe(CompilerKind::ClangHip, &path, &env).unwrap();
        let smoke = crate::code_objects::source("smoke").unwrap();
        let bytes = compile(&c, smoke, &arch("gfx90a")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(check_arch(&bytes, &arch("gfx90a")).unwrap().format, Format::AmdElf);
    }

    #[test]
    fn a_compile_error_quotes_the_compiler() {
        let c = compiler(Platform::Nvidia);
        let bad =
            Source { name: "bad", file_name: "bad.hip", text: "#include \"gpu.h\"\nGPU_KERNEL void k() { nope; }\n" };
        let e = compile(&c, &bad, &arch("sm_90")).unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, Error::CompileFailed { .. }), "{text}");
        assert!(text.contains("compiling kernel source `bad` for sm_90 failed"), "{text}");
        assert!(text.contains("-arch=sm_90") && text.contains("nope"), "{text}");
    }
}
