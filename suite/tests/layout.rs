//! The shape of the code, checked (issue 19): layers point down, every experiment lives in its own folder and is
//! registered by one line, and no hand-written file grows past what a person can hold. Each test reads the sources
//! as text, so a change that breaks the shape fails here with the file and line to fix.

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

/// The layers below the experiments: the results and reports, the kernel store, the GPU wrapper and the devices.
const BELOW_EXPERIMENTS: [&str; 4] = ["report", "kernels", "gpu.rs", "device"];

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
    for (file, text) in lower_layer_files() {
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

#[test]
fn every_registered_experiment_is_one_registry_line_and_one_folder_exporting_its_entry() {
    let registry = std::fs::read_to_string(src().join("experiments/registry.rs")).unwrap();
    let start = registry.find("pub const EXPERIMENTS: &[Entry] = &[").expect("the registry's table");
    let table = &registry[start..start + registry[start..].find("];").unwrap()];
    let lines: Vec<&str> = table.lines().skip(1).map(str::trim).filter(|l| !l.is_empty()).collect();
    let names: Vec<String> = suite::experiments::registry::names().map(str::to_string).collect();
    assert_eq!(lines.len(), names.len(), "one line per experiment in the table:\n{table}");
    for (line, name) in lines.iter().zip(&names) {
        assert_eq!(*line, format!("{name}::ENTRY,"), "the table's line for {name}");
        let module = src().join("experiments").join(name).join("mod.rs");
        let text = std::fs::read_to_string(&module).unwrap_or_else(|e| panic!("{}: {e}", module.display()));
        assert!(text.contains("pub const ENTRY: Entry = Entry::of::<"), "{} exports its entry", module.display());
        assert!(
            !src().join("experiments").join(format!("{name}.rs")).exists(),
            "{name} lives in its folder, not in experiments/{name}.rs"
        );
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
/// (app/mod.rs), `suite merge` (app/merge.rs) and what the registry gives them (`known`, `roofline_roles`,
/// `results`) build no sweep, so a sweep's options and run state cannot leak into how results are read.
#[test]
fn reading_results_builds_no_sweep() {
    let mut found = Vec::new();
    for rel in ["app/mod.rs", "app/merge.rs", "experiments/registry.rs"] {
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
