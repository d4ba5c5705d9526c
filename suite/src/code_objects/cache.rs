//! Where code objects come from: prebuilt files, the on-disk cache, or the compiler.
//!
//! The cache key covers everything that changes the compiler's output: the source, every header, the
//! architecture, the compiler (kind and version) and the flags. Entries are written to a temporary file in the
//! cache folder and renamed into place, so a crash or a concurrent run (one process per GCD under `srun`) never
//! leaves a partial file under a valid name.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::compile::{self, compile_with_flags, flags, Compiler};
use super::metadata::{check_arch, check_target, CodeObjectInfo};
use super::sources::{headers, Header, Source};
use super::{Error, Result};
use crate::device::{Arch, Platform};

/// Where a code object came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A file from `--kernels-dir`.
    Prebuilt(PathBuf),
    /// The cache, from an earlier compile.
    Cached(PathBuf),
    /// Compiled now; the path is its new cache entry.
    Compiled(PathBuf),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Prebuilt(p) => write!(f, "prebuilt {}", p.display()),
            Origin::Cached(p) => write!(f, "cached {}", p.display()),
            Origin::Compiled(p) => write!(f, "compiled into {}", p.display()),
        }
    }
}

/// A code object, checked to be for the architecture it was asked for.
#[derive(Debug, Clone)]
pub struct CodeObject {
    /// The bytes to hand to the runtime (`hipModuleLoadData` / `cuModuleLoadData`).
    pub bytes: Vec<u8>,
    /// Where they came from.
    pub origin: Origin,
    /// What they are, read from the bytes.
    pub info: CodeObjectInfo,
}

/// A source a run compiles at run time (generated from patterns, or specialised with `-D` values known only then),
/// listed ahead of time so `suite kernels build` can make it for `--kernels-dir`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Specialisation {
    /// The source's name, unique to its text (a generated source carries a hash of it).
    pub name: String,
    /// Its file name, `<name>.hip`.
    pub file_name: String,
    /// The HIP C++ text.
    pub text: String,
    /// Preprocessor definitions `NAME=VALUE`, possibly none.
    pub defines: Vec<String>,
}

impl Specialisation {
    /// The source, as the kernel store takes it.
    pub fn source(&self) -> Source<'_> {
        Source { name: &self.name, file_name: &self.file_name, text: &self.text }
    }
}

/// What specialisations depend on besides the architecture: the device's compute units and resident items per
/// CU (a staged kernel's grid fills the device).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceShape {
    /// Compute units (AMD CUs, NVIDIA SMs).
    pub cu_count: u32,
    /// Items resident per CU at most.
    pub max_items_per_cu: u32,
}

impl DeviceShape {
    /// The shape of an opened device.
    pub fn of(props: &crate::device::Props) -> DeviceShape {
        DeviceShape { cu_count: props.cu_count, max_items_per_cu: props.max_items_per_cu }
    }
}

/// The file name of a specialisation in a `--kernels-dir`: the prebuilt name for no defines, else
/// `<source>.<12 hex digits of SHA-256 over the defines>.<arch>.<ext>`.
pub fn specialised_file_name(source_name: &str, defines: &[String], arch: &Arch) -> String {
    if defines.is_empty() {
        return prebuilt_file_name(source_name, arch);
    }
    let digest = Sha256::digest(defines.join("\n").as_bytes());
    let hex: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
    format!("{source_name}.{hex}.{arch}.{}", extension(arch))
}

/// The file name of a prebuilt object: `<source>.<arch>.hsaco` for AMD, `<source>.<arch>.cubin` for NVIDIA.
pub fn prebuilt_file_name(source_name: &str, arch: &Arch) -> String {
    format!("{source_name}.{arch}.{}", extension(arch))
}

fn extension(arch: &Arch) -> &'static str {
    match arch.platform() {
        Platform::Amd => "hsaco",
        Platform::Nvidia => "cubin",
    }
}

/// The cache folder: `$SUITE_CACHE_DIR`, else `$XDG_CACHE_HOME/suite/kernels`, else `$HOME/.cache/suite/kernels`.
/// With none of them set, a fresh private folder of this process (created 0700 under a random name, so nobody can
/// have planted it) that later runs do not find: no fixed folder in the temporary directory, which anyone could
/// create first and fill.
pub fn default_cache_dir() -> PathBuf {
    let var = |name| std::env::var_os(name);
    cache_dir_from(var("SUITE_CACHE_DIR"), var("XDG_CACHE_HOME"), var("HOME")).unwrap_or_else(|| {
        match tempfile::Builder::new().prefix("suite-kernels-").tempdir() {
            Ok(dir) => {
                let dir = dir.keep();
                eprintln!(
                    "kernel cache: none of SUITE_CACHE_DIR, XDG_CACHE_HOME or HOME is set: code objects are cached in \
                     {} for this run only (set SUITE_CACHE_DIR to keep them)",
                    dir.display()
                );
                dir
            }
            // Nowhere to make one: a name no file can have, so every cache write fails saying what to set.
            Err(_) => PathBuf::from("/nonexistent/set SUITE_CACHE_DIR to a folder of your own"),
        }
    })
}

/// The file beside a code object that holds the SHA-256 (hex) of its bytes, written when it was built.
pub fn hash_file(object: &Path) -> PathBuf {
    let name = object.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    object.with_file_name(format!("{name}.sha256"))
}

/// The SHA-256 (hex) of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads the code object at `path` only when it and its hash file are regular files of this user (no link) and its
/// bytes have the hash recorded when it was built: a file swapped into a shared cache or `--kernels-dir` (another
/// kernel, another user's code) is never loaded. `Ok(None)` when the object is absent.
fn read_verified(path: &Path) -> std::result::Result<Option<Vec<u8>>, String> {
    let bytes = match crate::safe_fs::read_own(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let recorded = crate::safe_fs::read_own(&hash_file(path)).map_err(|e| {
        format!(
            "its hash file {}: {e} (objects are loaded only with the hash recorded when they were built)",
            hash_file(path).display()
        )
    })?;
    let recorded = String::from_utf8_lossy(&recorded).trim().to_string();
    let found = sha256_hex(&bytes);
    if recorded != found {
        return Err(format!(
            "its bytes (SHA-256 {found}) are not those recorded when it was built ({recorded}): the file was replaced \
             or damaged"
        ));
    }
    Ok(Some(bytes))
}

/// Writes a code object and, beside it, the hash of its bytes (after it: a reader that finds the new object with the
/// old hash reads a mismatch and compiles, never the reverse).
fn write_object(path: &Path, bytes: &[u8], hint: &'static str) -> Result<()> {
    write_atomically(path, bytes, hint)?;
    write_atomically(&hash_file(path), (sha256_hex(bytes) + "\n").as_bytes(), hint)
}

/// [`default_cache_dir`]'s rule over the three variables; empty values count as unset.
fn cache_dir_from(suite: Option<OsString>, xdg: Option<OsString>, home: Option<OsString>) -> Option<PathBuf> {
    let set = |v: Option<OsString>| v.filter(|v| !v.is_empty()).map(PathBuf::from);
    set(suite)
        .or_else(|| set(xdg).map(|x| x.join("suite/kernels")))
        .or_else(|| set(home).map(|h| h.join(".cache/suite/kernels")))
}

/// The cache key, as 64 hex digits: SHA-256 over the source text, every header's name and text, the
/// architecture, the compiler's kind and version, and the flags. Each field is length-prefixed, so no two
/// different inputs run together into the same bytes.
pub fn cache_key(source: &Source, headers: &[Header], arch: &Arch, compiler: &Compiler, flags: &[String]) -> String {
    let mut hash = Sha256::new();
    let mut field = |bytes: &[u8]| {
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(bytes);
    };
    // Bump when the meaning of an entry changes, so old entries are not reused.
    field(b"suite kernel cache v1");
    field(source.text.as_bytes());
    let mut sorted: Vec<&Header> = headers.iter().collect();
    sorted.sort_by_key(|h| h.name);
    for h in sorted {
        field(h.name.as_bytes());
        field(h.text.as_bytes());
    }
    field(arch.as_str().as_bytes());
    field(compiler.kind.name().as_bytes());
    field(compiler.version.as_bytes());
    for f in flags {
        field(f.as_bytes());
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Hands out code objects: prebuilt, cached or freshly compiled. Compilers are found once per store.
#[derive(Debug)]
pub struct KernelStore {
    kernels_dir: Option<PathBuf>,
    cache_dir: PathBuf,
    compilers: Mutex<HashMap<Platform, Compiler>>,
}

impl KernelStore {
    /// A store that reads prebuilt objects from `kernels_dir` (`--kernels-dir`) when given, and otherwise uses the
    /// cache in [`default_cache_dir`] and the node's compiler.
    pub fn new(kernels_dir: Option<PathBuf>) -> Self {
        Self::with_cache_dir(kernels_dir, default_cache_dir())
    }

    /// As [`KernelStore::new`], with the cache in `cache_dir`.
    pub fn with_cache_dir(kernels_dir: Option<PathBuf>, cache_dir: PathBuf) -> Self {
        KernelStore { kernels_dir, cache_dir, compilers: Mutex::new(HashMap::new()) }
    }

    /// Uses `compiler` for its platform instead of searching for one.
    pub fn with_compiler(self, compiler: Compiler) -> Self {
        self.compilers_map().insert(compiler.kind.platform(), compiler);
        self
    }

    /// The `--kernels-dir` folder, if any.
    pub fn kernels_dir(&self) -> Option<&Path> {
        self.kernels_dir.as_deref()
    }

    /// The cache folder.
    pub fn cache_dir(&self) -> &Path {
        &self.cache_dir
    }

    fn compilers_map(&self) -> std::sync::MutexGuard<'_, HashMap<Platform, Compiler>> {
        // The map holds only finished values, so one left by a panicking thread is still valid.
        self.compilers.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The platform's compiler: the one given or found before, else [`compile::find`]'s.
    pub fn compiler(&self, platform: Platform) -> Result<Compiler> {
        let mut map = self.compilers_map();
        if let Some(c) = map.get(&platform) {
            return Ok(c.clone());
        }
        let found = compile::find(platform)?;
        map.insert(platform, found.clone());
        Ok(found)
    }

    /// What builds this store's code objects for `platform`, for static figures: the compiler's
    /// [`Compiler::label`], or for `--kernels-dir` `unknown: prebuilt objects from DIR` (no object records its
    /// compiler).
    pub fn built_by(&self, platform: Platform) -> Result<String> {
        match &self.kernels_dir {
            Some(dir) => Ok(format!("unknown: prebuilt objects from {}", dir.display())),
            None => Ok(self.compiler(platform)?.label()),
        }
    }

    /// The code object of `source` for `arch`: from `--kernels-dir` when the store has one (and only from there),
    /// else from the cache, else compiled and cached. Whatever its origin, it has passed [`check_arch`].
    pub fn code_object(&self, source: &Source, arch: &Arch) -> Result<CodeObject> {
        match &self.kernels_dir {
            Some(dir) => prebuilt(dir, source, arch),
            None => self.cached_or_compiled(source, arch, &[]),
        }
    }

    /// The code object of a source specialised at run time: `source` (embedded or generated) compiled with the
    /// preprocessor `defines` (`NAME=VALUE`, passed as `-DNAME=VALUE` after the usual [`flags`]). With
    /// `--kernels-dir` it is read from there only ([`specialised_file_name`], made by `suite kernels build`), so a
    /// run on a compute node never starts a compiler; otherwise through the cache, whose key covers the source text
    /// and every flag, so each specialisation is compiled once per compiler and architecture.
    pub fn specialised(&self, source: &Source, arch: &Arch, defines: &[String]) -> Result<CodeObject> {
        match &self.kernels_dir {
            Some(dir) => prebuilt_at(dir, &specialised_file_name(source.name, defines, arch), source.name, arch)
                .map_err(|e| match e {
                    Error::PrebuiltMissing { path, dir, source_name, arch } => {
                        Error::SpecialisationMissing(Box::new(super::MissingSpecialisation {
                            path,
                            dir,
                            source_name,
                            defines: defines.join(" "),
                            arch,
                            cu_count: None,
                        }))
                    }
                    other => other,
                }),
            None => self.cached_or_compiled(source, arch, defines),
        }
    }

    /// Whether the code object of `source` for `arch` with the preprocessor `defines` (none for a plain source) can
    /// be had without a compile: with `--kernels-dir`, its prebuilt file is there and matches its hash; otherwise the
    /// cache holds a verified entry for it under this compiler and flags. A run's estimate counts a compile for
    /// each object that cannot. No compiler found: nothing is held.
    pub fn holds(&self, source: &Source, arch: &Arch, defines: &[String]) -> bool {
        let path = match &self.kernels_dir {
            Some(dir) if defines.is_empty() => dir.join(prebuilt_file_name(source.name, arch)),
            Some(dir) => dir.join(specialised_file_name(source.name, defines, arch)),
            None => {
                let Ok(compiler) = self.compiler(arch.platform()) else { return false };
                let mut flags = flags(&compiler, arch);
                flags.extend(defines.iter().map(|d| format!("-D{d}")));
                self.cache_file(source, arch, &compiler, &flags)
            }
        };
        matches!(read_verified(&path), Ok(Some(bytes)) if check_arch(&bytes, arch).is_ok())
    }

    /// Compiles (or takes from the cache) each specialisation for `arch` and writes it into `out_dir` under its
    /// [`specialised_file_name`], for `suite kernels build`. Returns the files written.
    pub fn build_specialised(&self, specs: &[Specialisation], arch: &Arch, out_dir: &Path) -> Result<Vec<PathBuf>> {
        let mut written = Vec::new();
        for spec in specs {
            let object = self.cached_or_compiled(&spec.source(), arch, &spec.defines)?;
            let path = out_dir.join(specialised_file_name(&spec.name, &spec.defines, arch));
            write_object(&path, &object.bytes, ": choose another --out")?;
            written.push(path);
        }
        Ok(written)
    }

    /// [`KernelStore::code_object`] for a device that reports the full target `device_target` (on AMD e.g.
    /// `gfx90a:sramecc+:xnack-`): the object, or for a bundle the entry read, must also run in that mode
    /// ([`check_target`]), so a prebuilt object for the wrong xnack/sramecc variant is refused with its file named.
    pub fn code_object_for_device(&self, source: &Source, arch: &Arch, device_target: &str) -> Result<CodeObject> {
        let mut object = self.code_object(source, arch)?;
        let file = match &object.origin {
            Origin::Prebuilt(p) | Origin::Cached(p) | Origin::Compiled(p) => p.display().to_string(),
        };
        object.info = check_target(&object.bytes, arch, device_target).map_err(|e| match e {
            Error::WrongTarget { device, found } => {
                Error::WrongTarget { device, found: format!("{found} (in {file})") }
            }
            other => other,
        })?;
        Ok(object)
    }

    /// Compiles (or takes from the cache) every source for every architecture and writes them into `out_dir` under
    /// their prebuilt names, for `suite kernels build --arch gfx90a,sm_90 --out DIR`. Returns the files written,
    /// architecture by architecture. `--kernels-dir` is not read: this is how its contents are made.
    pub fn build(&self, sources: &[&Source], archs: &[Arch], out_dir: &Path) -> Result<Vec<PathBuf>> {
        std::fs::create_dir_all(out_dir).map_err(|source| Error::Io {
            action: "create output folder",
            path: out_dir.to_path_buf(),
            source,
            hint: ": choose another --out",
        })?;
        let mut written = Vec::new();
        for arch in archs {
            for source in sources {
                let object = self.cached_or_compiled(source, arch, &[])?;
                let path = out_dir.join(prebuilt_file_name(source.name, arch));
                write_object(&path, &object.bytes, ": choose another --out")?;
                written.push(path);
            }
        }
        Ok(written)
    }

    /// [`KernelStore::code_object_for_device`] of every source in `sources`, in parallel: each source's compile (a
    /// compiler process of its own where the cache lacks it) runs on a thread of its own, up to the host's cores, the
    /// longest sources first, so a cold cache costs about its longest compile rather than the sum. The cache is safe
    /// to fill from several threads and processes at once: each entry is written to a temporary file and renamed
    /// into place, and two compiles of one key write the same bytes. Results are in `sources`' order.
    pub fn code_objects_for_device(
        &self,
        sources: &[&Source],
        arch: &Arch,
        device_target: &str,
    ) -> Vec<Result<CodeObject>> {
        in_parallel(sources.iter().map(|s| (s.text.len(), move || self.code_object_for_device(s, arch, device_target))))
    }

    /// [`KernelStore::specialised`] of every `(source, defines)` in `specs`, in parallel as
    /// [`KernelStore::code_objects_for_device`] compiles sources (a compiler process per thread, up to the host's
    /// cores; the cache's entries are written to a temporary file and renamed, so threads and processes may fill it
    /// at once), each with the milliseconds it took on its thread. Results are in `specs`' order.
    pub fn specialised_all(&self, specs: &[(&Source, &[String])], arch: &Arch) -> Vec<(Result<CodeObject>, f64)> {
        in_parallel(specs.iter().map(|&(source, defines)| {
            (source.text.len(), move || {
                let start = std::time::Instant::now();
                let object = self.specialised(source, arch, defines);
                (object, start.elapsed().as_secs_f64() * 1e3)
            })
        }))
    }

    fn cache_file(&self, source: &Source, arch: &Arch, compiler: &Compiler, flags: &[String]) -> PathBuf {
        let key = cache_key(source, headers(), arch, compiler, flags);
        self.cache_dir.join(format!("{}.{arch}.{key}.{}", source.name, extension(arch)))
    }

    fn cached_or_compiled(&self, source: &Source, arch: &Arch, defines: &[String]) -> Result<CodeObject> {
        let compiler = self.compiler(arch.platform())?;
        let mut flags = flags(&compiler, arch);
        flags.extend(defines.iter().map(|d| format!("-D{d}")));
        let path = self.cache_file(source, arch, &compiler, &flags);
        // The cache folder is this user's alone: created 0700, and another user's refused.
        crate::safe_fs::private_dir(&self.cache_dir).map_err(|source| Error::Io {
            action: "use the kernel cache",
            path: self.cache_dir.clone(),
            source,
            hint: "",
        })?;
        if let Ok(Some(bytes)) = read_verified(&path) {
            // An entry that does not check out (a damaged disk, a hand-edited or swapped file: its hash differs) is
            // compiled again and replaced: the cache is only ever a shortcut.
            if let Ok(info) = check_arch(&bytes, arch) {
                return Ok(CodeObject { bytes, origin: Origin::Cached(path), info });
            }
        }
        let bytes = compile_with_flags(&compiler, source, arch, &flags)?;
        let info = check_arch(&bytes, arch)?;
        write_object(&path, &bytes, ": set SUITE_CACHE_DIR to a writable folder")?;
        Ok(CodeObject { bytes, origin: Origin::Compiled(path), info })
    }
}

/// Runs `jobs`, each given with its expected cost, on up to as many threads as the host has cores, the costliest
/// first; returns their results in the order given.
fn in_parallel<T: Send>(jobs: impl IntoIterator<Item = (usize, impl FnOnce() -> T + Send)>) -> Vec<T> {
    let mut jobs: Vec<(usize, usize, _)> =
        jobs.into_iter().enumerate().map(|(i, (cost, job))| (cost, i, job)).collect();
    let count = jobs.len();
    jobs.sort_by_key(|job| std::cmp::Reverse(job.0));
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(count).max(1);
    let queue = Mutex::new(jobs.into_iter().map(|(_, i, job)| (i, job)));
    let done: Mutex<Vec<Option<T>>> = Mutex::new((0..count).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                // A poisoned lock means another job panicked; the scope re-raises that panic when it ends.
                let Some((i, job)) = queue.lock().ok().and_then(|mut q| q.next()) else { break };
                let result = job();
                if let Ok(mut done) = done.lock() {
                    done[i] = Some(result);
                }
            });
        }
    });
    done.into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .into_iter()
        .map(|r| r.expect("every job ran: a job that panicked ends the scope with its panic"))
        .collect()
}

/// Reads and checks `<dir>/<source>.<arch>.<ext>`; the errors name the file.
fn prebuilt(dir: &Path, source: &Source, arch: &Arch) -> Result<CodeObject> {
    prebuilt_at(dir, &prebuilt_file_name(source.name, arch), source.name, arch)
}

/// Reads and checks `<dir>/<file>`, the code object of `source_name` for `arch`; the errors name the file.
fn prebuilt_at(dir: &Path, file: &str, source_name: &str, arch: &Arch) -> Result<CodeObject> {
    let path = dir.join(file);
    let bytes = match read_verified(&path) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => {
            return Err(Error::PrebuiltMissing {
                path,
                dir: dir.to_path_buf(),
                source_name: source_name.to_string(),
                arch: arch.clone(),
            })
        }
        Err(why) => {
            return Err(Error::Io {
                action: "refusing the prebuilt code object",
                source: std::io::Error::new(std::io::ErrorKind::InvalidData, why),
                path,
                hint: ": build --kernels-dir again with `suite kernels build` (on LUMI: scripts/lumi/build.sh)",
            })
        }
    };
    match check_arch(&bytes, arch) {
        Ok(info) => Ok(CodeObject { bytes, origin: Origin::Prebuilt(path), info }),
        Err(Error::WrongArch { wanted, found }) => {
            Err(Error::WrongArch { wanted, found: format!("{found} (in {})", path.display()) })
        }
        Err(Error::Corrupt { reason }) => Err(Error::Corrupt { reason: format!("{}: {reason}", path.display()) }),
        Err(other) => Err(other),
    }
}

/// Writes `bytes` to `path` through a fresh temporary file in the same folder and a rename, creating the folder;
/// never through a link planted under the name, nor over another user's file (crate::safe_fs).
fn write_atomically(path: &Path, bytes: &[u8], hint: &'static str) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        action: "create folder",
        path: dir.into(),
        source,
        hint,
    })?;
    crate::safe_fs::write_whole(path, bytes).map_err(|source| Error::Io {
        action: "write",
        path: path.to_path_buf(),
        source,
        hint,
    })
}

/// The compiler that built a code object, as `run.json` records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompilerRecord {
    /// Kernel source, e.g. `smoke`.
    pub source: String,
    /// Where the code object came from: `compiled`, `cached` or `prebuilt`, with its path.
    pub origin: String,
    /// Compiler path and version, where known (a prebuilt object's compiler is not known).
    pub compiler: String,
    /// Flags used.
    pub flags: Vec<String>,
    /// SHA-256 (hex) of the code object loaded: the hash recorded beside it when it was built, which its bytes
    /// matched (empty in files from before it was recorded).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sha256: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code_objects::compile::CompilerKind;
    use crate::code_objects::metadata::Format;
    use crate::code_objects::sources::{all, source};
    use crate::code_objects::test_support::{compiler, fixture};

    fn arch(s: &str) -> Arch {
        Arch::parse(s).unwrap()
    }

    fn fake(kind: CompilerKind, version: &str) -> Compiler {
        Compiler { kind, path: "/nonexistent/compiler".into(), version: version.into(), extra_flags: vec![] }
    }

    #[test]
    fn cache_key_covers_every_input() {
        let src = Source { name: "s", file_name: "s.hip", text: "kernel A" };
        let hdrs = [Header { name: "gpu.h", text: "H1" }];
        let nvcc = fake(CompilerKind::Nvcc, "13.5.37");
        let base_flags = flags(&nvcc, &arch("sm_90"));
        let base = cache_key(&src, &hdrs, &arch("sm_90"), &nvcc, &base_flags);
        assert_eq!(base.len(), 64);
        assert!(base.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(base, cache_key(&src, &hdrs, &arch("sm_90"), &nvcc, &base_flags), "same inputs, same key");

        let other_src = Source { text: "kernel B", ..src };
        let other_hdr = [Header { name: "gpu.h", text: "H2" }];
        let renamed_hdr = [Header { name: "gpu2.h", text: "H1" }];
        let more_hdrs = [hdrs[0], Header { name: "extra.h", text: "" }];
        let mut more_flags = base_flags.clone();
        more_flags.push("-lineinfo".into());
        let changed = [
            ("source text", cache_key(&other_src, &hdrs, &arch("sm_90"), &nvcc, &base_flags)),
            ("header text", cache_key(&src, &other_hdr, &arch("sm_90"), &nvcc, &base_flags)),
            ("header name", cache_key(&src, &renamed_hdr, &arch("sm_90"), &nvcc, &base_flags)),
            ("a new header", cache_key(&src, &more_hdrs, &arch("sm_90"), &nvcc, &base_flags)),
            ("arch", cache_key(&src, &hdrs, &arch("sm_90a"), &nvcc, &base_flags)),
            (
                "compiler version",
                cache_key(&src, &hdrs, &arch("sm_90"), &fake(CompilerKind::Nvcc, "13.0.48"), &base_flags),
            ),
            (
                "compiler kind",
                cache_key(&src, &hdrs, &arch("sm_90"), &fake(CompilerKind::Hipcc, "13.5.37"), &base_flags),
            ),
            ("flags", cache_key(&src, &hdrs, &arch("sm_90"), &nvcc, &more_flags)),
            ("flags split differently", cache_key(&src, &hdrs, &arch("sm_90"), &nvcc, &[base_flags.concat()])),
        ];
        for (what, key) in changed {
            assert_ne!(key, base, "{what} must change the key");
        }
        // The compiler's path is not part of it: the same compiler version elsewhere gives the same objects.
        let moved = Compiler { path: "/elsewhere/nvcc".into(), ..nvcc.clone() };
        assert_eq!(base, cache_key(&src, &hdrs, &arch("sm_90"), &moved, &base_flags));
    }

    #[test]
    fn cache_dir_follows_the_documented_order() {
        let s = |v: &str| Some(OsString::from(v));
        let cases = [
            ((s("/scratch/c"), s("/x"), s("/home/u")), Some("/scratch/c")),
            ((None, s("/x"), s("/home/u")), Some("/x/suite/kernels")),
            ((s(""), s(""), s("/home/u")), Some("/home/u/.cache/suite/kernels")),
            ((None, None, s("/home/u")), Some("/home/u/.cache/suite/kernels")),
            ((None, None, None), None),
        ];
        for ((suite, xdg, home), want) in cases {
            assert_eq!(cache_dir_from(suite, xdg, home), want.map(PathBuf::from));
        }
    }

    #[test]
    fn prebuilt_names() {
        assert_eq!(prebuilt_file_name("smoke", &arch("gfx90a")), "smoke.gfx90a.hsaco");
        assert_eq!(prebuilt_file_name("matmul", &arch("sm_90")), "matmul.sm_90.cubin");
    }

    #[test]
    fn missing_prebuilt_says_how_to_build_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = KernelStore::with_cache_dir(Some(dir.path().to_path_buf()), dir.path().join("cache"));
        let e = store.code_object(source("smoke").unwrap(), &arch("gfx90a")).unwrap_err();
        assert!(matches!(e, Error::PrebuiltMissing { .. }), "{e}");
        let text = e.to_string();
        let want_path = dir.path().join("smoke.gfx90a.hsaco");
        assert!(text.starts_with(&format!("no prebuilt code object {}", want_path.display())), "{text}");
        assert!(
            text.contains(&format!("`suite kernels build --arch gfx90a --out {}`", dir.path().display())),
            "{text}"
        );
        assert!(text.contains("hipcc") && text.contains("leave out --kernels-dir"), "{text}");
    }

    #[test]
    fn prebuilt_files_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let store = KernelStore::with_cache_dir(Some(dir.path().to_path_buf()), dir.path().join("cache"));
        let smoke = source("smoke").unwrap();
        let put = |name: &str, bytes: &[u8]| write_object(&dir.path().join(name), bytes, "").unwrap();

        put("smoke.gfx90a.hsaco", &fixture("smoke.gfx90a.hsaco"));
        let ok = store.code_object(smoke, &arch("gfx90a")).unwrap();
        assert_eq!(ok.origin, Origin::Prebuilt(dir.path().join("smoke.gfx90a.hsaco")));
        assert_eq!(ok.info.format, Format::AmdBundle);

        put("smoke.sm_90.cubin", &fixture("smoke.sm_80.cubin"));
        let e = store.code_object(smoke, &arch("sm_90")).unwrap_err();
        assert!(matches!(e, Error::WrongArch { .. }), "{e}");
        assert!(e.to_string().contains("is for sm_80 (in ") && e.to_string().contains("smoke.sm_90.cubin"), "{e}");

        put("smoke.gfx908.hsaco", b"not a code object at all");
        let e = store.code_object(smoke, &arch("gfx908")).unwrap_err();
        assert!(matches!(e, Error::Corrupt { .. }), "{e}");
        assert!(e.to_string().contains("smoke.gfx908.hsaco: neither an ELF"), "{e}");
    }

    /// A prebuilt object for the wrong xnack variant gets the suite's own error, naming the file; compressed
    /// bundles (ROCm's --offload-compress) load like any other.
    #[test]
    fn prebuilt_objects_must_match_the_devices_target_features() {
        let dir = tempfile::tempdir().unwrap();
        let store = KernelStore::with_cache_dir(Some(dir.path().to_path_buf()), dir.path().join("cache"));
        let smoke = source("smoke").unwrap();
        let path = dir.path().join("smoke.gfx90a.hsaco");
        let device = "gfx90a:sramecc+:xnack-";

        write_object(&path, &fixture("smoke.gfx90a-xnack+.hsaco"), "").unwrap();
        let e = store.code_object_for_device(smoke, &arch("gfx90a"), device).unwrap_err();
        assert!(matches!(e, Error::WrongTarget { .. }), "{e}");
        let text = e.to_string();
        assert!(text.contains("is for gfx90a:xnack+ (in ") && text.contains("smoke.gfx90a.hsaco"), "{text}");
        assert!(text.contains("the device runs gfx90a:sramecc+:xnack-"), "{text}");
        assert!(text.contains("suite kernels build --arch"), "{text}");
        // The same file on a device running with xnack on is fine, and so is the processor check alone.
        assert!(store.code_object_for_device(smoke, &arch("gfx90a"), "gfx90a:sramecc+:xnack+").is_ok());
        assert!(store.code_object(smoke, &arch("gfx90a")).is_ok());

        write_object(&path, &fixture("smoke.gfx90a.v5.ccob.hsaco"), "").unwrap();
        let ok = store.code_object_for_device(smoke, &arch("gfx90a"), device).unwrap();
        assert_eq!(ok.info.format, Format::AmdBundle);
        assert!(ok.info.amd_kernel("smoke_triad").is_some());
    }

    #[test]
    fn cache_hit_needs_no_compile() {
        // A compiler that cannot run: a hit must not try, a miss must fail trying.
        let dir = tempfile::tempdir().unwrap();
        let store = KernelStore::with_cache_dir(None, dir.path().to_path_buf())
            .with_compiler(fake(CompilerKind::Nvcc, "13.5.37"));
        let smoke = source("smoke").unwrap();
        let sm90 = arch("sm_90");
        let e = store.code_object(smoke, &sm90).unwrap_err();
        assert!(matches!(e, Error::CompileFailed { .. }), "{e}");
        assert!(e.to_string().contains("cannot run /nonexistent/compiler"), "{e}");

        let compiler = store.compiler(Platform::Nvidia).unwrap();
        let path = store.cache_file(smoke, &sm90, &compiler, &flags(&compiler, &sm90));
        assert!(path.starts_with(dir.path()));
        write_object(&path, &fixture("smoke.sm_90.cubin"), "").unwrap();
        let hit = store.code_object(smoke, &sm90).unwrap();
        assert_eq!(hit.origin, Origin::Cached(path.clone()));
        assert_eq!(hit.bytes, fixture("smoke.sm_90.cubin"));

        // A damaged entry is not handed out: it is compiled again (here, and failing, since nothing can run).
        std::fs::write(&path, b"damaged").unwrap();
        assert!(matches!(store.code_object(smoke, &sm90), Err(Error::CompileFailed { .. })));
    }

    /// What a run's estimate counts as a compile: an object the store holds (a verified cache entry of this
    /// compiler and these flags, or a prebuilt file) is not one; a missing, damaged or differently specialised one is.
    #[test]
    fn the_store_says_which_objects_it_holds_without_compiling() {
        let dir = tempfile::tempdir().unwrap();
        let store = KernelStore::with_cache_dir(None, dir.path().join("cache"))
            .with_compiler(fake(CompilerKind::Nvcc, "13.5.37"));
        let (smoke, sm90) = (source("smoke").unwrap(), arch("sm_90"));
        assert!(!store.holds(smoke, &sm90, &[]), "an empty cache holds nothing");
        let compiler = store.compiler(Platform::Nvidia).unwrap();
        let path = store.cache_file(smoke, &sm90, &compiler, &flags(&compiler, &sm90));
        write_object(&path, &fixture("smoke.sm_90.cubin"), "").unwrap();
        assert!(store.holds(smoke, &sm90, &[]));
        assert!(!store.holds(smoke, &sm90, &["N=1".to_string()]), "another specialisation is another object");
        assert!(!store.holds(source("launch").unwrap(), &sm90, &[]));
        std::fs::write(&path, b"damaged").unwrap();
        assert!(!store.holds(smoke, &sm90, &[]), "a damaged entry is compiled again");
        // With --kernels-dir: its file, and only it, counts.
        let out = dir.path().join("kernels-build");
        let prebuilt = KernelStore::with_cache_dir(Some(out.clone()), dir.path().join("cache"));
        assert!(!prebuilt.holds(smoke, &sm90, &[]));
        std::fs::create_dir_all(&out).unwrap();
        write_object(&out.join(prebuilt_file_name("smoke", &sm90)), &fixture("smoke.sm_90.cubin"), "").unwrap();
        assert!(prebuilt.holds(smoke, &sm90, &[]));
        assert!(!prebuilt.holds(smoke, &sm90, &["N=1".to_string()]));
    }

    /// Issue 31, item 8: a code object swapped into a shared `--kernels-dir` or kernel cache (another kernel's,
    /// valid for the same architecture: here a smoke object built otherwise) is never loaded: a prebuilt one is
    /// refused, naming the file and the hash recorded when it was built; a cached one is compiled again.
    #[test]
    fn a_code_object_swapped_after_it_was_built_is_never_loaded() {
        let c = compiler(Platform::Amd);
        let dir = tempfile::tempdir().unwrap();
        let store = KernelStore::with_cache_dir(None, dir.path().join("cache")).with_compiler(c);
        let smoke = source("smoke").unwrap();
        let gfx90a = arch("gfx90a");
        let out = dir.path().join("kernels-build");
        store.build(&[smoke], std::slice::from_ref(&gfx90a), &out).unwrap();
        let built = out.join(prebuilt_file_name("smoke", &gfx90a));
        let original = std::fs::read(&built).unwrap();
        let other = fixture("smoke.gfx90a.v5.o");
        assert_ne!(original, other);
        check_arch(&other, &gfx90a).expect("the swapped-in object is a valid gfx90a code object");
        std::fs::write(&built, &other).unwrap();
        let prebuilt = KernelStore::with_cache_dir(Some(out.clone()), dir.path().join("unused"));
        let e = prebuilt.code_object(smoke, &gfx90a).expect_err("a swapped prebuilt object is refused");
        let text = e.to_string();
        assert!(
            text.contains(&built.display().to_string()) && text.contains("not those recorded when it was built"),
            "{text}"
        );
        // In the cache: the swapped entry is compiled again, and what is loaded is the real compile.
        let first = store.code_object(smoke, &gfx90a).unwrap();
        let entry = match &first.origin {
            Origin::Cached(p) | Origin::Compiled(p) => p.clone(),
            other => panic!("{other:?}"),
        };
        std::fs::write(&entry, &other).unwrap();
        let again = store.code_object(smoke, &gfx90a).unwrap();
        assert_eq!(again.origin, Origin::Compiled(entry.clone()), "the swapped entry was loaded");
        assert_eq!(again.bytes, original);
        // A link planted under an entry's name is not read through.
        std::fs::remove_file(&entry).unwrap();
        std::os::unix::fs::symlink(&built, &entry).unwrap();
        let e = store.code_object(smoke, &gfx90a).expect_err("a link in the cache is refused");
        assert!(e.to_string().contains("a symbolic link"), "{e}");
    }

    /// The cache folder is created for this user alone, and one another user owns is refused (item 8).
    #[test]
    fn the_cache_folder_is_private_and_another_users_is_refused() {
        let c = compiler(Platform::Amd);
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("shared/cache");
        let store = KernelStore::with_cache_dir(None, cache.clone()).with_compiler(c.clone());
        store.code_object(source("smoke").unwrap(), &arch("gfx90a")).unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(std::fs::metadata(&cache).unwrap().permissions().mode() & 0o777, 0o700);
        assert_eq!(
            crate::safe_fs::user(),
            0,
            "giving the folder to another user needs root (the test command runs as root)"
        );
        let theirs = dir.path().join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), None).unwrap();
        let store = KernelStore::with_cache_dir(None, theirs).with_compiler(c);
        let e = store.code_object(source("smoke").unwrap(), &arch("gfx90a")).err().unwrap();
        assert!(e.to_string().contains("owned by uid 65534"), "{e}");
    }

    /// Compiles for real into an empty cache, then hits it; `build` then writes prebuilt files a second store reads.
    fn round_trip(platform: Platform, arch_name: &str) {
        let c = compiler(platform);
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        let store = KernelStore::with_cache_dir(None, cache.clone()).with_compiler(c);
        let smoke = source("smoke").unwrap();
        let a = arch(arch_name);
        let first = store.code_object(smoke, &a).unwrap_or_else(|e| panic!("{e}"));
        let Origin::Compiled(path) = &first.origin else { panic!("{:?}", first.origin) };
        assert_eq!(std::fs::read(path).unwrap(), first.bytes);
        let second = store.code_object(smoke, &a).unwrap();
        assert_eq!(second.origin, Origin::Cached(path.clone()));
        assert_eq!(second.bytes, first.bytes);
        let names: Vec<_> = std::fs::read_dir(&cache).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 2, "the entry and its hash, no temporary files left behind: {names:?}");

        let out = dir.path().join("out");
        let sources: Vec<&Source> = all().iter().collect();
        let written = store.build(&sources, std::slice::from_ref(&a), &out).unwrap();
        assert_eq!(written.len(), sources.len());
        let prebuilt = KernelStore::with_cache_dir(Some(out.clone()), dir.path().join("unused"));
        let from_dir = prebuilt.code_object(smoke, &a).unwrap();
        assert_eq!(from_dir.origin, Origin::Prebuilt(out.join(prebuilt_file_name("smoke", &a))));
        assert_eq!(from_dir.bytes, first.bytes);

        // Every source compiled at once into another empty cache (threads of one process; the cache is also shared
        // by processes, through the same temporary files and renames): the same entries, byte for byte, as the
        // compiles one after the other above, but for nvcc's module id (below).
        let parallel_cache = dir.path().join("parallel");
        let parallel = KernelStore::with_cache_dir(None, parallel_cache.clone()).with_compiler(compiler(platform));
        let target = if platform == Platform::Amd { "gfx90a:sramecc+:xnack-" } else { arch_name };
        let objects = parallel.code_objects_for_device(&sources, &a, target);
        assert_eq!(objects.len(), sources.len());
        for (source, object) in sources.iter().zip(objects) {
            let object = object.unwrap_or_else(|e| panic!("{}: {e}", source.name));
            let Origin::Compiled(path) = &object.origin else { panic!("{}: {:?}", source.name, object.origin) };
            let sequential = std::fs::read(cache.join(path.file_name().unwrap())).unwrap();
            let same = without_module_ids(&sequential) == without_module_ids(&object.bytes);
            assert!(same, "{}: the parallel compile differs from the sequential one", source.name);
            assert!(
                std::fs::read(path).unwrap() == object.bytes,
                "{}: the entry is not what was compiled",
                source.name
            );
        }
        let names = |dir: &Path| {
            let mut names: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name()).collect();
            names.sort();
            names
        };
        assert_eq!(names(&parallel_cache), names(&cache), "the same entries, and no temporary file left");
    }

    /// `bytes` with nvcc's module ids zeroed: the 8 hex digits after `_INTERNAL_` in the names of internal-linkage
    /// symbols (libcu++'s, in pt.hip's cubin), which nvcc derives from the path it compiled, a temporary folder of
    /// its own for every compile, sequential or not (two compiles of pt.hip from two folders differ there alone).
    fn without_module_ids(bytes: &[u8]) -> Vec<u8> {
        const MARK: &[u8] = b"_INTERNAL_";
        let mut out = bytes.to_vec();
        let mut i = 0;
        while let Some(at) = out[i..].windows(MARK.len()).position(|w| w == MARK) {
            let start = i + at + MARK.len();
            let end = (start + 8).min(out.len());
            if out[start..end].iter().all(u8::is_ascii_hexdigit) {
                out[start..end].fill(b'0');
            }
            i = end;
        }
        out
    }

    #[test]
    fn cache_round_trip_gfx90a() {
        round_trip(Platform::Amd, "gfx90a");
    }

    #[test]
    fn cache_round_trip_sm_90() {
        round_trip(Platform::Nvidia, "sm_90");
    }
}
