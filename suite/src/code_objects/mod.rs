//! Kernel pipeline: embedded HIP C++ sources, compiler discovery and invocation, a code-object cache,
//! prebuilt objects, and a static reader for code-object metadata.
//!
//! The path from source to code object ([`KernelStore::code_object`]):
//! 1. `--kernels-dir` given: take `<dir>/<source>.<arch>.hsaco` (AMD) or `.cubin` (NVIDIA), nothing else;
//! 2. otherwise the cache, keyed by source, headers, architecture, compiler and flags ([`cache_key`]);
//! 3. otherwise find the platform's compiler ([`find`]), compile ([`compile()`]) and cache the result.
//!
//! Every object handed out has passed [`check_arch`], so a stale or corrupt file is an error that says what to do,
//! not a failure inside the GPU runtime. Metadata ([`inspect`]) is read statically, with no GPU: for AMD from the
//! `NT_AMDGPU_METADATA` note (through a clang offload bundle where there is one); for NVIDIA only the architecture
//! is read here, and resource use comes from the driver.

pub mod bundle;
pub mod cache;
pub mod compile;
pub mod cubin;
pub mod metadata;
pub mod msgpack_bounds;
pub mod sources;
pub mod zig;

use std::path::PathBuf;

use crate::device::{Arch, Platform};

pub use bundle::TargetId;
pub use cache::{
    cache_key, default_cache_dir, hash_file, prebuilt_file_name, sha256_hex, specialised_file_name, CodeObject,
    CompilerRecord, DeviceShape, KernelStore, Origin, Specialisation,
};
pub use compile::{compile, find, flags, Compiler, CompilerKind};
pub use cubin::{cubin_kernel_names, cubin_kernels, CubinKernel};
pub use metadata::{arg_sizes, check_arch, check_target, inspect, AmdKernelMeta, ArgMeta, CodeObjectInfo, Format};
pub use sources::{all, headers, source, Header, Source, EMPTY_KERNEL, LAUNCH_SOURCE};
pub use zig::find_zig;

/// Everything that can go wrong between a kernel source and a checked code object. Messages say what was sought
/// and what to do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A kernel source name that the binary does not embed.
    #[error("no kernel source named `{name}`: this build of the suite embeds {available}")]
    UnknownSource {
        /// The name asked for.
        name: String,
        /// The embedded names, comma-separated.
        available: String,
    },
    /// No usable compiler for a platform.
    #[error("no {platform} kernel compiler found: {hint}\n{}", tried_list(.tried))]
    CompilerNotFound {
        /// The platform a compiler was sought for.
        platform: Platform,
        /// Each candidate (a path, or an environment variable) with the reason it was rejected.
        tried: Vec<(String, String)>,
        /// What to do, on a cluster and in CI.
        hint: String,
    },
    /// zig's clang was asked for (`--compiler zig`) and not found ([`zig::find_zig`]).
    #[error("zig's clang (--compiler zig) not found: `python3 -m pip install {}` (scripts/install-test-deps.sh \
             installs it), or set ZIG to a zig binary\n{}", zig::ZIG_WHEEL, tried_list(.tried))]
    ZigNotFound {
        /// Each candidate (an environment variable, the wheel, `PATH`) with the reason it was rejected.
        tried: Vec<(String, String)>,
    },
    /// A compiler asked to build for another vendor's architecture.
    #[error("{compiler} cannot build for {arch}: use {} for {} architectures", .arch.platform().compiler_name(), .arch.platform())]
    WrongCompiler {
        /// The compiler's name, e.g. `nvcc`.
        compiler: &'static str,
        /// The architecture asked for.
        arch: Arch,
    },
    /// The compiler ran and failed.
    #[error("compiling kernel source `{source_name}` for {arch} failed:\n  {command}\n{stderr}\nfix kernels/{source_name}.hip or the compiler setup named above")]
    CompileFailed {
        /// The kernel source, e.g. `smoke`.
        source_name: String,
        /// The architecture it was compiled for.
        arch: Arch,
        /// The command line, as a shell would run it.
        command: String,
        /// What the compiler printed (stderr, and stdout where it said something).
        stderr: String,
    },
    /// A code object for another architecture.
    #[error(
        "code object is for {found}, but the device is {wanted}: rebuild with `suite kernels build --arch {wanted}`"
    )]
    WrongArch {
        /// The architecture wanted (the device's, or the one asked to build for).
        wanted: Arch,
        /// The architecture(s) the code object holds.
        found: String,
    },
    /// An AMD code object for the device's processor but for other target features (e.g. built for
    /// `gfx90a:xnack+`, the device runs `gfx90a:sramecc+:xnack-`): the HIP runtime would find no kernel image in it.
    #[error(
        "code object is for {found}, but the device runs {device}: rebuild it with `suite kernels build --arch \
         <processor>` (built without target features, code runs with xnack and sramecc either on or off), or for \
         the device's own setting, e.g. hipcc --offload-arch={device}"
    )]
    WrongTarget {
        /// The device's full target, e.g. `gfx90a:sramecc+:xnack-`.
        device: String,
        /// The target(s) the code object holds, naming the file where there is one.
        found: String,
    },
    /// Bytes that are not a GPU code object this suite can read.
    #[error("not a GPU code object: {reason}; delete it or rebuild it with `suite kernels build`")]
    Corrupt {
        /// What is wrong, naming the file where there is one.
        reason: String,
    },
    /// `--kernels-dir` was given but holds no object for this source and architecture.
    #[error("no prebuilt code object {}: build it with `suite kernels build --arch {arch} --out {}` on a machine with the {} compiler, or leave out --kernels-dir to compile here", .path.display(), .dir.display(), .arch.platform().compiler_name())]
    PrebuiltMissing {
        /// The file looked for.
        path: PathBuf,
        /// The `--kernels-dir` folder.
        dir: PathBuf,
        /// The kernel source.
        source_name: String,
        /// The architecture.
        arch: Arch,
    },
    /// `--kernels-dir` was given but holds no object for a source the run specialises at run time.
    #[error("{0}")]
    SpecialisationMissing(Box<MissingSpecialisation>),
    /// A file operation failed (cache, output folder, temporary build folder).
    #[error("cannot {action} {}: {source}{hint}", .path.display())]
    Io {
        /// What was being done, e.g. `write cache file`.
        action: &'static str,
        /// The path it was done to.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
        /// Advice, starting with `: ` when present.
        hint: &'static str,
    },
}

/// A specialisation that `--kernels-dir` lacks ([`Error::SpecialisationMissing`]).
#[derive(Debug, thiserror::Error)]
#[error("no prebuilt specialisation {} (`{source_name}` with {defines}) in --kernels-dir: build every specialisation the quick and full presets need with `suite kernels build --arch {arch}{} --out {}` on a machine with the {} compiler, or leave out --kernels-dir to compile here", .path.display(), .cu_count.map(|n| format!(" --cus {n}")).unwrap_or_default(), .dir.display(), .arch.platform().compiler_name())]
pub struct MissingSpecialisation {
    /// The file looked for.
    pub path: PathBuf,
    /// The `--kernels-dir` folder.
    pub dir: PathBuf,
    /// The (generated) source.
    pub source_name: String,
    /// Its `-D` definitions, space-separated.
    pub defines: String,
    /// The architecture.
    pub arch: Arch,
    /// The device's compute units, where known: the specialisations depend on them.
    pub cu_count: Option<u32>,
}

/// Result of a kernel-pipeline operation.
pub type Result<T, E = Error> = std::result::Result<T, E>;

fn tried_list(tried: &[(String, String)]) -> String {
    if tried.is_empty() {
        return "  (no candidates)".to_string();
    }
    tried.iter().map(|(what, why)| format!("  tried {what}: {why}")).collect::<Vec<_>>().join("\n")
}

/// The compiler each platform's kernels are built with, for messages.
trait CompilerName {
    fn compiler_name(self) -> &'static str;
}

impl CompilerName for Platform {
    fn compiler_name(self) -> &'static str {
        match self {
            Platform::Amd => "hipcc",
            Platform::Nvidia => "nvcc",
        }
    }
}

/// Shared by the tests of every file in this module: the tools they need, from [`crate::test_deps`]. A missing
/// tool fails the test with a message saying what to install.
#[cfg(test)]
pub(crate) mod test_support {
    use std::path::PathBuf;

    use super::compile::Compiler;
    use crate::device::Platform;
    use crate::test_deps;

    /// The platform's compiler; fails the calling test when it is missing.
    #[track_caller]
    pub fn compiler(platform: Platform) -> Compiler {
        match test_deps::compiler(platform) {
            Ok(c) => c,
            Err(missing) => panic!("{missing}"),
        }
    }

    /// zig's clang from the `ziglang` wheel; fails the calling test when it is missing.
    #[track_caller]
    pub fn zig() -> Compiler {
        match test_deps::zig() {
            Ok(c) => c,
            Err(missing) => panic!("{missing}"),
        }
    }

    /// The first of `names` that runs, e.g. an LLVM tool under one of its versioned names; fails the calling test
    /// when none does.
    #[track_caller]
    pub fn tool(names: &[&str]) -> PathBuf {
        match test_deps::llvm_tool(names) {
            Ok(path) => path,
            Err(missing) => panic!("{missing}"),
        }
    }

    /// `source` compiled by `compiler` for `arch`, compiled once per test process however many tests ask (matmul takes
    /// 15 s or more per compiler); fails the calling test when the compile fails.
    #[track_caller]
    pub fn compiled(compiler: &Compiler, source: &str, arch: &str) -> Vec<u8> {
        use std::collections::HashMap;
        use std::sync::{Arc, Mutex, OnceLock};
        type Slot = Arc<OnceLock<Result<Vec<u8>, String>>>;
        static BUILT: OnceLock<Mutex<HashMap<String, Slot>>> = OnceLock::new();
        let key = format!("{} {} {source} {arch}", compiler.path.display(), compiler.label());
        let slot = {
            let mut map = BUILT.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
            map.entry(key).or_default().clone()
        };
        // Outside the map's lock: other sources compile meanwhile; a second asker of this one waits for it.
        let built = slot.get_or_init(|| {
            let src = super::source(source).map_err(|e| e.to_string())?;
            let a = crate::device::Arch::parse(arch).map_err(|e| e.to_string())?;
            super::compile(compiler, src, &a).map_err(|e| e.to_string())
        });
        match built {
            Ok(bytes) => bytes.clone(),
            Err(e) => panic!("{e}"),
        }
    }

    /// A committed test fixture under `suite/tests/fixtures/kernels/`.
    pub fn fixture(name: &str) -> Vec<u8> {
        let path = crate::test_deps::crate_path("tests/fixtures/kernels").join(name);
        std::fs::read(&path).unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()))
    }
}
