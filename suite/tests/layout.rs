//! The shape of the code, checked (issue 19): layers point down, every experiment lives in its own folder and is
//! registered by one line, and no hand-written file grows past what a person can hold. Each test reads the sources
//! as text, so a change that breaks the shape fails here with the file and line to fix. The kernel sources too
//! (issue 24): no kernel file past the same length, and every header a kernel includes is embedded in the binary
//! and hashed into the kernel cache key and the run fingerprint.

use std::path::{Path, PathBuf};

/// The crate's source folder.
fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The lines of `text` that are code: comments (`//`, `//!`, `///`) dropped.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().map(|(i, l)| (i + 1, l)).filter(|(_, l)| !l.trim_start().starts_with("//"))
}

/// The layers below the experiments: the devices, the kernel pipeline (code objects), the occupancy calculator, the
/// catalogue of parts, the profilers' parts (counters), the GPU wrapper, the planning device, the results and
/// reports, the pattern library, the static inspection of kernels and the shared helpers. None of them may reach up
/// into the experiments or the app.
const BELOW_EXPERIMENTS: [&str; 18] = [
    "device",
    "code_objects",
    "occupancy_calculator",
    "catalogue",
    "counters",
    "gpu.rs",
    "planning.rs",
    "report",
    "patterns",
    "static_inspection.rs",
    "peaks.rs",
    "precision.rs",
    "options.rs",
    "host.rs",
    "measure.rs",
    "verify.rs",
    "random.rs",
    "phases.rs",
];

/// Every Rust file of the layers below the experiments, with its text.
fn lower_layer_files() -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    for layer in BELOW_EXPERIMENTS {
        let path = src().join(layer);
        files.extend(if path.is_dir() { rust_files(&path) } else { vec![path] });
    }
    files
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(&f).unwrap();
            (f, text)
        })
        .collect()
}

#[test]
fn report_kernels_gpu_and_device_import_nothing_from_the_experiments() {
    let mut found = Vec::new();
    for (file, text) in lower_layer_files() {
        for (n, line) in code_lines(&text) {
            if line.contains("experiments::") || line.contains("crate::experiments") || line.contains("app::") {
                found.push(format!("{}:{n}: {}", file.display(), line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "a lower layer reaches up into experiments or the app:\n{}", found.join("\n"));
}

/// Nor do they know an experiment by name: what report needs of one (its comparison, its place on the roofline)
/// comes from the registry, so a new experiment changes nothing there. Tests below a file's `#[cfg(test)]` may
/// use names as fixtures.
#[test]
fn report_kernels_gpu_and_device_name_no_experiment() {
    let mut found = Vec::new();
    // Files that are test modules as a whole (`#[cfg(test)] mod tests;` in tests.rs) are tests too.
    for (file, text) in lower_layer_files().into_iter().filter(|(f, _)| !f.ends_with("tests.rs")) {
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (n, line) in code_lines(code) {
            for name in suite::experiments::registry::names() {
                if line.contains(&format!("\"{name}\"")) {
                    found.push(format!("{}:{n}: {}", file.display(), line.trim()));
                }
            }
        }
    }
    assert!(found.is_empty(), "a lower layer names an experiment (ask the registry instead):\n{}", found.join("\n"));
}

/// Hand-written files allowed past [`MAX_LINES`], each with why.
const LONG_FILES: &[(&str, &str)] = &[(
    "report/plot.rs",
    "the PNG renderer: axes, ticks, text layout and drawing in one place, with its tests of each",
)];

/// About 900 lines: a file one person can read in a sitting.
const MAX_LINES: usize = 950;

#[test]
fn no_hand_written_file_is_longer_than_a_person_can_hold() {
    let mut long = Vec::new();
    for file in rust_files(&src()) {
        let rel = file.strip_prefix(src()).unwrap().to_string_lossy().replace('\\', "/");
        let lines = std::fs::read_to_string(&file).unwrap().lines().count();
        if lines > MAX_LINES && !LONG_FILES.iter().any(|(f, _)| *f == rel) {
            long.push(format!("{rel}: {lines} lines"));
        }
    }
    assert!(long.is_empty(), "split these files by concern (or list one in LONG_FILES with why):\n{}", long.join("\n"));
}

/// The module declarations of `experiments/mod.rs` (its code, less its tests): each `mod` line's module name, with
/// its line number and the line.
fn experiment_module_lines() -> Vec<(usize, String, String)> {
    let code = code_of("experiments/mod.rs");
    code_lines(&code)
        .filter_map(|(n, line)| {
            let rest = line.trim().strip_prefix("pub ").unwrap_or(line.trim()).strip_prefix("mod ")?;
            Some((n, rest.trim_end_matches(';').trim().to_string(), line.trim().to_string()))
        })
        .collect()
}

/// An experiment is one folder, one line of the registry's table and, since the module tree is plain Rust (cargo fmt
/// and rustdoc follow it), one `pub mod <name>;` line in experiments/mod.rs. Both ways: every folder of
/// `experiments/` is a registered, declared experiment (a folder without its `pub mod` line would not be compiled at
/// all, so the test says so instead of the build staying silent).
#[test]
fn every_registered_experiment_is_one_registry_line_one_module_line_and_one_folder_exporting_its_entry() {
    let registry = std::fs::read_to_string(src().join("experiments/registry.rs")).unwrap();
    let start = registry.find("pub const EXPERIMENTS: &[Entry] = &[").expect("the registry's table");
    let table = &registry[start..start + registry[start..].find("];").unwrap()];
    let lines: Vec<&str> = table.lines().skip(1).map(str::trim).filter(|l| !l.is_empty()).collect();
    let names: Vec<String> = suite::experiments::registry::names().map(str::to_string).collect();
    assert_eq!(lines.len(), names.len(), "one line per experiment in the table:\n{table}");
    let declared = experiment_module_lines();
    for (line, name) in lines.iter().zip(&names) {
        assert_eq!(*line, format!("{name}::ENTRY,"), "the table's line for {name}");
        let module = src().join("experiments").join(name).join("mod.rs");
        let text = std::fs::read_to_string(&module).unwrap_or_else(|e| panic!("{}: {e}", module.display()));
        assert!(text.contains("pub const ENTRY: Entry = Entry::of::<"), "{} exports its entry", module.display());
        assert!(
            !src().join("experiments").join(format!("{name}.rs")).exists(),
            "{name} lives in its folder, not in experiments/{name}.rs"
        );
        let lines: Vec<&String> = declared.iter().filter(|(_, m, _)| m == name).map(|(_, _, l)| l).collect();
        assert_eq!(
            lines,
            [&format!("pub mod {name};")],
            "experiments/mod.rs declares {name} once, as `pub mod {name};`"
        );
    }
    for entry in std::fs::read_dir(src().join("experiments")).unwrap() {
        let folder = entry.unwrap().path();
        let name = folder.file_name().unwrap().to_string_lossy().into_owned();
        if folder.join("mod.rs").is_file() {
            assert!(
                names.contains(&name),
                "experiments/{name}/ is an experiment's folder: add `pub mod {name};` to experiments/mod.rs and \
                 `{name}::ENTRY,` to the registry's table (or move it out of experiments/)"
            );
        }
    }
}

/// The code of a file, less its tests (everything from its first `#[cfg(test)]` on).
fn code_of(rel: &str) -> String {
    let text = std::fs::read_to_string(src().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    text.split("#[cfg(test)]").next().unwrap_or_default().to_string()
}

/// What builds a sweep: an entry's run side.
const SWEEP_BUILDERS: [&str; 4] = [".default)(", ".quick)(", ".sweep)(", "dyn Experiment"];

/// Reading results needs an experiment's read side only (`Entry::results`): `suite plot` and `suite compare`
/// (app/mod.rs), `suite merge` (app/merge_shards.rs) and what the registry gives them (`known`, `roofline_roles`,
/// `results`) build no sweep, so a sweep's options and run state cannot leak into how results are read.
#[test]
fn reading_results_builds_no_sweep() {
    let mut found = Vec::new();
    for rel in ["app/mod.rs", "app/merge_shards.rs", "experiments/registry.rs"] {
        for (n, line) in code_lines(&code_of(rel)) {
            if SWEEP_BUILDERS.iter().any(|b| line.contains(b)) {
                found.push(format!("{rel}:{n}: {}", line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "a read-only path builds a sweep (use Entry::results):\n{}", found.join("\n"));
}

/// The runner and what it uses run one experiment; what a run means for the folder as a whole (the roofline over
/// every experiment, the summary) is the caller's, which knows the registry.
#[test]
fn the_runner_does_not_reach_up_into_the_registry() {
    let mut found = Vec::new();
    for rel in ["experiments/runner.rs", "experiments/timing.rs", "experiments/estimate.rs", "experiments/context.rs"] {
        for (n, line) in code_lines(&code_of(rel)) {
            if line.contains("registry") {
                found.push(format!("{rel}:{n}: {}", line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "the runner reaches up into the registry:\n{}", found.join("\n"));
}

/// The text of the item that starts at `start` in `text`, up to its closing brace at the start of a line.
fn item<'t>(text: &'t str, start: &str) -> Option<&'t str> {
    let at = text.find(start)?;
    let end = text[at..].find("\n}")?;
    Some(&text[at..at + end + 2])
}

/// Words that mark run state: what a run learns or keeps, which lives in the `RunContext`, not in the sweep.
const RUN_STATE: [&str; 7] = ["#[serde(skip)]", "RunCache", "Cell<", "Rc<", "PathBuf", "Path>", "Gpu"];

/// A sweep is its options and nothing else (run state lives in the runner's `RunContext`), and an experiment's
/// read side is a unit struct: nothing in it can depend on a sweep or a run.
#[test]
fn sweeps_hold_only_options_and_read_sides_hold_nothing() {
    let mut found = Vec::new();
    for name in suite::experiments::registry::names() {
        let folder = src().join("experiments").join(name);
        let module = std::fs::read_to_string(folder.join("mod.rs")).unwrap();
        let sweep = module
            .split("pub const ENTRY: Entry = Entry::of::<")
            .nth(1)
            .and_then(|rest| rest.split(">()").next())
            .unwrap_or_else(|| panic!("{name}: no entry"));
        let fields = item(&module, &format!("pub struct {sweep} {{")).unwrap_or_else(|| panic!("{name}: no {sweep}"));
        for word in RUN_STATE {
            if fields.contains(word) {
                found.push(format!("{name}: {sweep} holds `{word}`: run state belongs in the RunContext"));
            }
        }
        let texts: Vec<String> = rust_files(&folder).iter().map(|f| std::fs::read_to_string(f).unwrap()).collect();
        let read_sides: Vec<&str> = texts
            .iter()
            .flat_map(|t| t.split("impl Results for ").skip(1))
            .filter_map(|rest| rest.split_whitespace().next())
            .collect();
        if read_sides.len() != 1 {
            found.push(format!("{name}: {} read sides (impl Results for ...), not one", read_sides.len()));
        }
        for unit in read_sides {
            if !texts.iter().any(|t| t.contains(&format!("pub struct {unit};"))) {
                found.push(format!("{name}: its read side {unit} is not a unit struct (`pub struct {unit};`)"));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The kernels folder.
fn kernels() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels")
}

/// Every file under `dir`, as its path relative to `dir` with `/` separators, sorted.
fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path.strip_prefix(dir).unwrap().to_string_lossy().replace('\\', "/"));
            }
        }
    }
    out.sort();
    out
}

/// The kernel sources and their headers, as paths under kernels/: every `*.hip` there and every file in `include/`.
fn kernel_files() -> Vec<String> {
    let sources = files_under(&kernels()).into_iter().filter(|f| !f.contains('/') && f.ends_with(".hip"));
    let headers = files_under(&kernels().join("include")).into_iter().map(|f| format!("include/{f}"));
    let files: Vec<String> = sources.chain(headers).collect();
    assert!(files.iter().any(|f| f == "matmul.hip") && files.iter().any(|f| f == "include/gpu.h"), "{files:?}");
    files
}

/// The longest a kernel source or header may be: the same as a Rust file ([`MAX_LINES`]), because a kernel file is
/// read the same way, as one piece, and each file holds one experiment's kernels. kernels/matmul.hip, the longest,
/// is a ladder of rungs (each with its idea, limit and launch in its header comment); with the wave tile its
/// rungs 6 to 10 share moved into include/ (issue 24) it is about 810 lines, which leaves room for a rung or two
/// before the next one has to move something out. A header has the same limit.
const MAX_KERNEL_LINES: usize = MAX_LINES;

#[test]
fn no_kernel_file_is_longer_than_a_person_can_hold() {
    let long: Vec<String> = kernel_files()
        .into_iter()
        .map(|f| {
            let lines = std::fs::read_to_string(kernels().join(&f)).unwrap().lines().count();
            (f, lines)
        })
        .filter(|(_, lines)| *lines > MAX_KERNEL_LINES)
        .map(|(f, lines)| format!("kernels/{f}: {lines} lines"))
        .collect();
    assert!(
        long.is_empty(),
        "move what several kernels share into a header under kernels/include/ (one kernel per step stays in the \
         source), at most {MAX_KERNEL_LINES} lines each:\n{}",
        long.join("\n")
    );
}

/// Quoted includes that name no embedded header, each with why: (the including file, the header, why).
const INCLUDES_FROM_ELSEWHERE: &[(&str, &str, &str)] = &[(
    "include/gpu.h",
    "gpu_cpu.h",
    "the CPU emulation (suite/tests/gpu_cpu/gpu_cpu.h), included only under GPU_CPU_EMULATION, which only the \
     tests' g++ build defines; the suite never compiles it",
)];

/// The compiler finds a kernel's quoted includes only among the headers the suite writes out for it, which are the
/// embedded ones; and only embedded headers are hashed into the cache key and the run fingerprint. So every
/// `#include "x"` in a kernel source or header must name a file of kernels/include/ that is embedded.
#[test]
fn every_header_a_kernel_includes_exists_and_is_embedded() {
    let embedded: Vec<&str> = suite::code_objects::headers().iter().map(|h| h.name).collect();
    let mut wrong = Vec::new();
    let mut found = 0;
    for file in kernel_files() {
        let text = std::fs::read_to_string(kernels().join(&file)).unwrap();
        for name in suite::code_objects::sources::includes(&text) {
            found += 1;
            if let Some((_, _, why)) = INCLUDES_FROM_ELSEWHERE.iter().find(|(f, h, _)| *f == file && *h == name) {
                let emulation = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/gpu_cpu").join(name);
                assert!(emulation.is_file(), "{file} includes {name} ({why}): {} is missing", emulation.display());
            } else if !kernels().join("include").join(name).is_file() {
                wrong.push(format!("kernels/{file}: #include \"{name}\": no kernels/include/{name}"));
            } else if !embedded.contains(&name) {
                wrong.push(format!("kernels/{file}: #include \"{name}\": not embedded (suite/build.rs: *.h, *.hpp)"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "includes the compiler will not find or the cache key will not cover:\n{}",
        wrong.join("\n")
    );
    assert!(found >= 8, "the scan finds the includes ({found})");
}

/// Every file in kernels/include/ is embedded (suite/build.rs embeds `*.h` and `*.hpp` directly in the folder), so
/// none can be left out of the cache key and the run fingerprint: a header with another name or in a subfolder
/// fails here rather than being compiled from a stale copy or not at all.
#[test]
fn every_header_in_kernels_include_is_embedded() {
    let on_disk = files_under(&kernels().join("include"));
    let mut embedded: Vec<String> = suite::code_objects::headers().iter().map(|h| h.name.to_string()).collect();
    embedded.sort();
    assert_eq!(on_disk, embedded, "kernels/include/ against the headers embedded in the binary");
    for header in suite::code_objects::headers() {
        let disk = std::fs::read_to_string(kernels().join("include").join(header.name)).unwrap();
        assert_eq!(disk, header.text, "include/{} is embedded stale: rebuild", header.name);
    }
}

/// Names that say one thing: a module's name is used once in the crate, so `occupancy` cannot be both the
/// calculator and an experiment, nor `kernels` both the kernel sources and a Rust module. The one exception is the
/// parts every experiment folder may have, which play the same role in each (its cases, its part of `suite
/// compare`, its derived tables, its summary lines, its plots) and `tests`, Rust's name for a module of tests.
#[test]
fn no_module_name_is_used_for_two_things() {
    const EXPERIMENT_PARTS: [&str; 5] = ["cases", "compare", "derived", "headlines", "plots"];
    let mut by_name: std::collections::BTreeMap<String, Vec<String>> = std::collections::BTreeMap::new();
    for file in rust_files(&src()) {
        let relative = file.strip_prefix(src()).unwrap().to_string_lossy().into_owned();
        let parts: Vec<&str> = relative.split('/').collect();
        let stem = parts[parts.len() - 1].trim_end_matches(".rs");
        let name = match stem {
            "lib" | "main" => continue,
            "mod" => parts[parts.len() - 2],
            other => other,
        };
        by_name.entry(name.to_string()).or_default().push(relative);
    }
    let experiment_part = |path: &str| path.starts_with("experiments/") && path.matches('/').count() >= 2;
    let mut found = Vec::new();
    for (name, paths) in &by_name {
        if name == "kernels" {
            found.push(format!("`kernels` names the kernel sources (kernels/), not a module: {paths:?}"));
        }
        if paths.len() < 2 || name == "tests" {
            continue;
        }
        let parts_only = EXPERIMENT_PARTS.contains(&name.as_str())
            && paths.iter().filter(|p| !experiment_part(p)).count() <= usize::from(name == "compare");
        if !parts_only {
            found.push(format!("`{name}` names {} modules: {}", paths.len(), paths.join(", ")));
        }
    }
    // An experiment's name is its folder's alone.
    for experiment in suite::experiments::registry::names() {
        if let Some(paths) = by_name.get(experiment) {
            let other: Vec<&String> =
                paths.iter().filter(|p| !p.starts_with(&format!("experiments/{experiment}/"))).collect();
            if !other.is_empty() {
                found.push(format!("`{experiment}` is an experiment and also names {other:?}"));
            }
        }
    }
    assert!(found.is_empty(), "module names used for two things:\n{}", found.join("\n"));
}

/// The module names a `use` item brings in (`use super::{fusion, matmul};`, `use crate::experiments::pt;`), with
/// the line each starts on: a `use` list names an experiment without `::` after it, and may span lines.
fn used_names(code: &str) -> Vec<(usize, String, Vec<String>)> {
    let lines: Vec<(usize, &str)> = code_lines(code).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let (n, line) = lines[i];
        // `use`, `pub use`, `pub(crate) use`, ...
        let item_start = line.trim_start().strip_prefix("pub").unwrap_or(line.trim_start());
        let item_start = match item_start.strip_prefix('(') {
            Some(rest) => rest.split_once(')').map_or("", |(_, after)| after),
            None => item_start,
        };
        if item_start.trim_start().starts_with("use ") {
            let mut item = String::from(line);
            while !item.contains(';') && i + 1 < lines.len() {
                i += 1;
                item.push(' ');
                item.push_str(lines[i].1);
            }
            let words = item
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|w| !w.is_empty())
                .map(str::to_string)
                .collect();
            out.push((n, item.trim().to_string(), words));
        }
        i += 1;
    }
    out
}

/// Adding an experiment is its folder, its kernel file, its one registry line and its `pub mod` line: no other
/// file of the crate names an experiment, as a module path, a `use` of it, a `mod` declaration or a string,
/// outside its tests.
#[test]
fn an_experiment_is_named_only_in_its_folder_its_registry_line_and_its_module_line() {
    let mut found = Vec::new();
    for file in rust_files(&src()) {
        let relative = file.strip_prefix(src()).unwrap().to_string_lossy().into_owned();
        // The registry, and files that are test modules as a whole (`#[cfg(test)] mod ..._tests;`).
        if relative == "experiments/registry.rs" || relative.ends_with("tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        let uses = used_names(code);
        for name in suite::experiments::registry::names() {
            if relative.starts_with(&format!("experiments/{name}/")) {
                continue;
            }
            for (n, line) in code_lines(code) {
                // experiments/mod.rs declares each experiment's module, and only that.
                if relative == "experiments/mod.rs" && line.trim() == format!("pub mod {name};") {
                    continue;
                }
                let as_path = line.contains(&format!("{name}::")) && !line.contains(&format!("_{name}::"));
                let words: Vec<&str> =
                    line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).collect();
                let as_module = words.windows(2).any(|w| w[0] == "mod" && w[1] == name);
                if as_path || as_module || line.contains(&format!("\"{name}\"")) {
                    found.push(format!("{relative}:{n}: {}", line.trim()));
                }
            }
            for (n, item, words) in &uses {
                if words.iter().any(|w| w == name) && !item.contains(&format!("{name}::")) {
                    found.push(format!("{relative}:{n}: {item}"));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "experiments named outside their folder, registry line and module line:\n{}",
        found.join("\n")
    );
    // The registry names each experiment once, in its table.
    let registry = std::fs::read_to_string(src().join("experiments/registry.rs")).unwrap();
    for name in suite::experiments::registry::names() {
        let code = registry.split("#[cfg(test)]").next().unwrap_or_default();
        assert_eq!(code.matches(&format!("{name}::ENTRY")).count(), 1, "{name}");
    }
}
