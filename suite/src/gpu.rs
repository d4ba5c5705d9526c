//! A GPU session: one opened device and the kernel store that feeds it code objects.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

use crate::code_objects::{self, CompilerRecord, KernelStore};
use crate::device::{self, Device, Kernel, Module, Platform};

/// Why a GPU could not be opened or a kernel not loaded on it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The device layer failed.
    #[error(transparent)]
    Device(#[from] device::Error),
    /// A kernel could not be built, found or loaded.
    #[error(transparent)]
    Kernels(#[from] code_objects::Error),
    /// No GPU could be opened on any platform; one line per platform says why.
    #[error("no GPU found:\n{0}")]
    NoGpu(String),
    /// A thread panicked while it held the table of loaded kernels, so the table may be half-written.
    #[error("the table of loaded kernels is unusable: a thread panicked while loading kernel source `{source_name}`; start the command again")]
    Poisoned {
        /// The kernel source being looked up when the poisoned table was found.
        source_name: String,
    },
}

/// A loaded code object with the metadata read from it (AMD: per-kernel argument layout).
struct Loaded {
    module: Module,
    object: code_objects::CodeObject,
    /// What getting it cost, when [`Gpu::compile_specialised`] got it ahead of its first use: handed to that use.
    pending: Option<LoadCost>,
}

/// What it cost to get a specialised kernel ([`Gpu::specialised_kernel`]) the first time in a session.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadCost {
    /// Where the code object came from: compiled now (a cold compile) or the on-disk cache.
    pub origin: code_objects::Origin,
    /// Time to get the code object (compile, or read and check a cache entry), ms, host clock.
    pub object_ms: f64,
    /// Time to load it into the device and look up the kernel, ms, host clock.
    pub load_ms: f64,
}

/// One device plus its kernels, loaded on first use and kept for the session.
pub struct Gpu {
    /// The device.
    pub device: Box<dyn Device>,
    store: KernelStore,
    modules: Mutex<HashMap<String, Loaded>>,
    /// Specialisations [`Gpu::compile_specialised`] has tried, so a failed one is not compiled again there.
    tried: Mutex<std::collections::HashSet<String>>,
}

impl Gpu {
    /// Opens device `ordinal` of `platform`, or of the first platform that has it when `platform` is `None`.
    pub fn open(platform: Option<Platform>, ordinal: u32, kernels_dir: Option<PathBuf>) -> Result<Gpu, Error> {
        let device = match platform {
            Some(p) => device::open(p, ordinal)?,
            None => device::open_any(ordinal).map_err(|reasons| {
                Error::NoGpu(
                    reasons
                        .iter()
                        .map(|(p, e)| format!("  {p}: {}", e.to_string().replace('\n', "\n    ")))
                        .collect::<Vec<_>>()
                        .join("\n"),
                )
            })?,
        };
        Ok(Gpu {
            device,
            store: KernelStore::new(kernels_dir),
            modules: Mutex::new(HashMap::new()),
            tried: Default::default(),
        })
    }

    /// `device` with the kernels of the store `Gpu::open` would make: prebuilt objects from `kernels_dir`
    /// (`--kernels-dir`), else compiled with the local compiler and cached. For a device that is not a platform's
    /// (the plan of a part that is not present, [`crate::planning::gpu`]).
    pub fn with_device(device: Box<dyn Device>, kernels_dir: Option<PathBuf>) -> Gpu {
        Gpu {
            device,
            store: KernelStore::new(kernels_dir),
            modules: Mutex::new(HashMap::new()),
            tried: Default::default(),
        }
    }

    /// Makes sure kernel source `source` is compiled (or found) for this device and loaded.
    pub fn module(&self, source: &str) -> Result<(), Error> {
        self.load_all(&[source])
    }

    /// Makes sure every kernel source in `sources` is compiled (or found) for this device and loaded, as
    /// [`Gpu::module`] does for one: the code objects are got in parallel ([`KernelStore::code_objects_for_device`]:
    /// on a cold cache the compiles run at once), then loaded in order on this thread, whose device context the
    /// launches use. The first source that fails, in `sources`' order, is the error; the others are loaded.
    pub fn load_all(&self, sources: &[&str]) -> Result<(), Error> {
        let mut missing: Vec<&'static code_objects::Source<'static>> = Vec::new();
        {
            let modules = self.modules.lock().map_err(|_| Error::Poisoned { source_name: sources.join(", ") })?;
            for name in sources.iter().filter(|s| !modules.contains_key(**s)) {
                let src = code_objects::source(name)?;
                if !missing.iter().any(|m| m.name == src.name) {
                    missing.push(src);
                }
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        let props = self.device.props();
        let objects = self.store.code_objects_for_device(&missing, &props.arch, &props.arch_full);
        let mut first_error = None;
        for (src, object) in missing.iter().zip(objects) {
            let loaded = object.map_err(Error::from).and_then(|object| self.insert_module(src.name, object));
            if let (Err(e), None) = (loaded, &first_error) {
                first_error = Some(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// `object` loaded into the device, its kernels named from its AMD metadata where the device names none.
    fn load(&self, object: &code_objects::CodeObject) -> Result<Module, Error> {
        let mut module = self.device.load_module(&object.bytes)?;
        if module.kernel_names.is_empty() {
            module.kernel_names = object.info.amd_kernels.iter().map(|k| k.name.clone()).collect();
        }
        Ok(module)
    }

    /// Loads `object`, the code object of source `name`, into the device and keeps it (unless the source was loaded
    /// meanwhile).
    fn insert_module(&self, name: &str, object: code_objects::CodeObject) -> Result<(), Error> {
        let mut modules = self.modules.lock().map_err(|_| Error::Poisoned { source_name: name.to_string() })?;
        if modules.contains_key(name) {
            return Ok(());
        }
        let module = self.load(&object)?;
        modules.insert(name.to_string(), Loaded { module, object, pending: None });
        Ok(())
    }

    /// Looks up kernel `name` from kernel source `source`, loading the source first if needed. On AMD, launches are
    /// then checked against the argument sizes in the code object's metadata.
    pub fn kernel(&self, source: &str, name: &str) -> Result<Kernel, Error> {
        self.with_loaded(source, |loaded| {
            let mut kernel = self.device.kernel(&loaded.module, name)?;
            if kernel.param_sizes.is_none() {
                if let Some(meta) = loaded.object.info.amd_kernels.iter().find(|k| k.name == name) {
                    kernel.param_sizes = Some(code_objects::arg_sizes(meta));
                }
            }
            Ok(kernel)
        })
    }

    /// Kernel `name` of `source` (an embedded or a generated source) compiled with the preprocessor `defines`
    /// (`NAME=VALUE`), for values known only at run time; compiled through the kernel store's cache like every other
    /// source ([`KernelStore::specialised`]) and loaded once per session. The cost is returned when this call
    /// compiled or read it (`None` when the session had it loaded already). Generated sources must carry a name
    /// unique to their text (e.g. with a hash in it): loaded modules are keyed by name and defines.
    pub fn specialised_kernel(
        &self,
        source: &code_objects::Source,
        defines: &[String],
        name: &str,
    ) -> Result<(Kernel, Option<LoadCost>), Error> {
        let key = format!("{}[{}]", source.name, defines.join(" "));
        let mut modules = self.modules.lock().map_err(|_| Error::Poisoned { source_name: key.clone() })?;
        let mut cost = None;
        if !modules.contains_key(&key) {
            let start = std::time::Instant::now();
            let object = self.store.specialised(source, &self.device.props().arch, defines).map_err(|e| match e {
                // Specialisations depend on the device's CUs: the command that makes them must say how many.
                code_objects::Error::SpecialisationMissing(mut missing) => {
                    missing.cu_count = Some(self.device.props().cu_count);
                    code_objects::Error::SpecialisationMissing(missing)
                }
                other => other,
            })?;
            let object_ms = start.elapsed().as_secs_f64() * 1e3;
            let start = std::time::Instant::now();
            let module = self.load(&object)?;
            cost = Some(LoadCost { origin: object.origin.clone(), object_ms, load_ms: 0.0 });
            modules.insert(key.clone(), Loaded { module, object, pending: None });
            if let Some(c) = cost.as_mut() {
                c.load_ms = start.elapsed().as_secs_f64() * 1e3;
            }
        }
        let loaded = modules.get_mut(&key).expect("inserted just above when missing");
        // Got ahead of this first use ([`Gpu::compile_specialised`]): its cost is this use's.
        if let Some(pending) = loaded.pending.take() {
            cost = Some(pending);
        }
        let loaded = &*loaded;
        let start = std::time::Instant::now();
        let mut kernel = self.device.kernel(&loaded.module, name)?;
        if let Some(c) = cost.as_mut() {
            c.load_ms += start.elapsed().as_secs_f64() * 1e3;
        }
        if kernel.param_sizes.is_none() {
            if let Some(meta) = loaded.object.info.amd_kernels.iter().find(|k| k.name == name) {
                kernel.param_sizes = Some(code_objects::arg_sizes(meta));
            }
        }
        Ok((kernel, cost))
    }

    /// Whether the kernel store can give `source` (with `defines`) for this device without a compile
    /// ([`KernelStore::holds`]): prebuilt, or in the cache.
    pub fn holds(&self, source: &code_objects::Source, defines: &[String]) -> bool {
        self.store.holds(source, &self.device.props().arch, defines)
    }

    /// Gets the code objects of `specs` (sources specialised at run time, with their defines) that this session has
    /// not loaded or tried yet, in parallel ([`KernelStore::specialised_all`]: on a cold cache their compiles run at
    /// once, up to the host's cores), then loads them in order on this thread. Each one's cost (its own thread's
    /// time) is handed to its first [`Gpu::specialised_kernel`], as if that call had got it: the objects are the
    /// same, the compiles only overlap. One that fails is left for that call, which gets it again and reports the
    /// error; none is tried twice here.
    pub fn compile_specialised(&self, specs: &[code_objects::Specialisation]) -> Result<(), Error> {
        let key = |s: &code_objects::Specialisation| format!("{}[{}]", s.name, s.defines.join(" "));
        let todo: Vec<&code_objects::Specialisation> = {
            let modules = self.modules.lock().map_err(|_| Error::Poisoned { source_name: "specialised".into() })?;
            let mut tried = self.tried.lock().map_err(|_| Error::Poisoned { source_name: "specialised".into() })?;
            specs.iter().filter(|s| !modules.contains_key(&key(s)) && tried.insert(key(s))).collect()
        };
        if todo.is_empty() {
            return Ok(());
        }
        let sources: Vec<code_objects::Source> = todo.iter().map(|s| s.source()).collect();
        let items: Vec<(&code_objects::Source, &[String])> =
            sources.iter().zip(&todo).map(|(source, s)| (source, s.defines.as_slice())).collect();
        let objects = self.store.specialised_all(&items, &self.device.props().arch);
        let mut modules = self.modules.lock().map_err(|_| Error::Poisoned { source_name: "specialised".into() })?;
        for (spec, (object, object_ms)) in todo.iter().zip(objects) {
            let Ok(object) = object else { continue };
            let start = std::time::Instant::now();
            let module = self.load(&object)?;
            let load_ms = start.elapsed().as_secs_f64() * 1e3;
            let pending = Some(LoadCost { origin: object.origin.clone(), object_ms, load_ms });
            modules.entry(key(spec)).or_insert(Loaded { module, object, pending });
        }
        Ok(())
    }

    /// Time to get `source` with `defines` from the kernel store again, ms, and where it came from: after
    /// [`Gpu::specialised_kernel`] this is a cache hit, the cost a later run pays for the same specialisation.
    pub fn specialised_lookup_ms(
        &self,
        source: &code_objects::Source,
        defines: &[String],
    ) -> Result<(code_objects::Origin, f64), Error> {
        let start = std::time::Instant::now();
        let object = self.store.specialised(source, &self.device.props().arch, defines)?;
        Ok((object.origin, start.elapsed().as_secs_f64() * 1e3))
    }

    /// Runs `f` on source `source`'s loaded code object, loading it first if needed.
    fn with_loaded<T>(&self, source: &str, f: impl FnOnce(&Loaded) -> Result<T, Error>) -> Result<T, Error> {
        self.module(source)?;
        let modules = self.modules.lock().map_err(|_| Error::Poisoned { source_name: source.to_string() })?;
        f(modules.get(source).expect("module() inserted the source just above"))
    }

    /// The AMD code-object metadata of kernel `name` in source `source` (registers as the compiler allocated them,
    /// LDS, scratch), loading the source first if needed. `None` on NVIDIA, whose cubins carry no such note.
    pub fn amd_kernel_meta(&self, source: &str, name: &str) -> Result<Option<code_objects::AmdKernelMeta>, Error> {
        self.with_loaded(source, |loaded| Ok(loaded.object.info.amd_kernels.iter().find(|k| k.name == name).cloned()))
    }

    /// Where each loaded code object came from and which compiler and flags built it, for `run.json`. A cached
    /// object was built by the compiler found now (the cache key holds its version); a prebuilt one by an unknown
    /// compiler.
    pub fn compiler_records(&self) -> Vec<CompilerRecord> {
        let Ok(modules) = self.modules.lock() else { return Vec::new() };
        let arch = &self.device.props().arch;
        let compiler = self.store.compiler(arch.platform());
        let mut records: Vec<CompilerRecord> = modules
            .iter()
            .map(|(source, loaded)| {
                let (compiler, flags) = match (&loaded.object.origin, &compiler) {
                    (code_objects::Origin::Prebuilt(_), _) => ("unknown: prebuilt object".to_string(), Vec::new()),
                    (_, Ok(c)) => (c.to_string(), code_objects::flags(c, arch)),
                    (_, Err(e)) => (e.to_string(), Vec::new()),
                };
                CompilerRecord {
                    source: source.clone(),
                    origin: loaded.object.origin.to_string(),
                    compiler,
                    flags,
                    sha256: code_objects::sha256_hex(&loaded.object.bytes),
                }
            })
            .collect();
        records.sort_by(|a, b| a.source.cmp(&b.source));
        records
    }
}
