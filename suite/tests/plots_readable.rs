//! Every plot the suite makes from the committed runs is checked for what makes it readable by a person (issue 35):
//! its legend has at most 12 entries or is grouped by the plot (a marker per experiment, a colour per family); no
//! drawn series lies on another unseen (identical ones are merged under a label naming each, a line covered in part
//! is drawn wider); and every repository path its title, subtitle, axis labels or note cites exists. The plots are
//! made exactly as `suite plot`, `suite compare` and `suite kernels compare` make them: each experiment's plots from
//! its CSV in every committed results folder, each run's roofline, each committed comparison made again from its
//! runs, and the static comparison's group-size plots. A person still looks at each PNG; these are the checks a
//! program can make.

use std::path::{Path, PathBuf};

use suite::experiments::registry;
use suite::report::plot::{self, LinePlot};

/// Most legend entries a plot may have without grouping them itself.
const MAX_LEGEND: usize = 12;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The committed results folders, sorted.
fn results_folders() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root().join("results"))
        .expect("results/ is readable")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// Run folders under `dir`: itself when it holds run.json, else its subfolders that do (a folder of two runs).
fn runs_in(dir: &Path) -> Vec<PathBuf> {
    if dir.join("run.json").is_file() {
        return vec![dir.to_path_buf()];
    }
    let mut subs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.join("run.json").is_file()).collect())
        .unwrap_or_default();
    subs.sort();
    subs
}

/// The repository paths a plot's text cites: words with a `/` that start at a folder of the repository's root or
/// end in a source, Markdown or data extension (`GB/s`, `FLOP/B` and keys such as `triad/n=1024` are not paths).
fn cited_paths(text: &str) -> Vec<String> {
    const ROOTS: [&str; 6] = ["suite/", "docs/", "kernels/", "results/", "scripts/", "hip-sys/"];
    const EXTENSIONS: [&str; 9] = [".rs", ".md", ".hip", ".h", ".csv", ".png", ".json", ".sh", ".cpp"];
    text.split(|c: char| c.is_whitespace() || "(),;:`'\"[]".contains(c))
        .map(|w| w.trim_end_matches('.'))
        .filter(|w| w.contains('/') && !w.contains('='))
        .filter(|w| ROOTS.iter().any(|r| w.starts_with(r)) || EXTENSIONS.iter().any(|e| w.ends_with(e)))
        .map(str::to_string)
        .collect()
}

/// What is wrong with `plot` (named `name`), one line each.
fn problems(name: &str, plot: &LinePlot) -> Vec<String> {
    let mut out = Vec::new();
    let entries = plot::legend_entries(plot);
    if entries > MAX_LEGEND && !plot::legend_is_grouped(plot) {
        out.push(format!("{name}: {entries} legend entries, more than {MAX_LEGEND}, and not grouped"));
    }
    for (a, b) in plot::hidden_series(plot) {
        out.push(format!("{name}: \"{b}\" is drawn over \"{a}\" where they coincide, and neither is told apart"));
    }
    let texts =
        [Some(&plot.title), plot.subtitle.as_ref(), Some(&plot.x_label), Some(&plot.y_label), plot.note.as_ref()];
    for text in texts.into_iter().flatten() {
        for path in cited_paths(text) {
            if !root().join(&path).exists() {
                out.push(format!("{name}: cites {path}, which does not exist"));
            }
        }
    }
    out
}

#[test]
fn cited_paths_are_what_the_plots_name_as_files() {
    let note = "Calculated, not measured: limits from suite/src/occupancy/profiles.rs. 2976 GB/s x FLOP/B; \
                key triad/n=1024,group=256; see docs/occupancy.md, and counters.csv.";
    assert_eq!(cited_paths(note), ["suite/src/occupancy/profiles.rs", "docs/occupancy.md"]);
    // The old static-comparison note's path is reported as missing.
    let plot = LinePlot { note: Some(note.to_string()), ..LinePlot::default() };
    let found = problems("old.png", &plot);
    assert_eq!(found, ["old.png: cites suite/src/occupancy/profiles.rs, which does not exist"]);
}

/// Every plot of every committed run, its roofline, every committed comparison (made again from its runs) and the
/// static comparison's plots.
#[test]
fn every_plot_of_the_committed_runs_is_readable() {
    let mut problems_found = Vec::new();
    let mut checked = 0;
    let roles = registry::roofline_roles();
    for folder in results_folders() {
        for run in runs_in(&folder) {
            let rel = run.strip_prefix(root()).unwrap_or(&run).display().to_string();
            for entry in registry::EXPERIMENTS {
                let csv = run.join(format!("{}.csv", entry.name));
                if !csv.is_file() {
                    continue;
                }
                let rows = suite::report::csv::read_rows(&csv).unwrap_or_else(|e| panic!("{e}"));
                for (file, p) in entry.results.plots(&rows, &run) {
                    problems_found.extend(problems(&format!("{rel}/{file}"), &p));
                    checked += 1;
                }
            }
            if let Some(r) = suite::report::roofline::of_run(&run, &roles).unwrap_or_else(|e| panic!("{e}")) {
                problems_found.extend(problems(
                    &format!("{rel}/roofline.png"),
                    &suite::report::roofline::plot(&[(String::new(), &r)]),
                ));
                checked += 1;
            }
        }
    }
    // Comparisons, made again from the runs their report names (a run not committed cannot be).
    let known = registry::known();
    let mut comparisons = 0;
    for folder in results_folders() {
        let Ok(report) = std::fs::read_to_string(folder.join("report.md")) else { continue };
        let dirs: Vec<PathBuf> = report
            .lines()
            .filter(|l| l.starts_with("| ") && l.contains(" | `results/"))
            .filter_map(|l| l.split('`').nth(1).map(|d| root().join(d)))
            .collect();
        if dirs.len() < 2 || !dirs.iter().all(|d| d.is_dir()) {
            continue;
        }
        let runs: Vec<_> = dirs
            .iter()
            .enumerate()
            .map(|(i, d)| suite::report::compare::read_run(d, i + 1).unwrap_or_else(|e| panic!("{e}")))
            .collect();
        let (_, plots) = suite::report::compare::report(&runs, &known);
        let name = folder.file_name().unwrap_or_default().to_string_lossy().into_owned();
        for (file, p) in plots {
            problems_found.extend(problems(&format!("results/{name}/{file}"), &p));
            checked += 1;
        }
        comparisons += 1;
    }
    let archs: Vec<suite::device::Arch> = ["gfx90a", "sm_90", "gfx1100"]
        .iter()
        .map(|a| suite::device::Arch::parse(a).expect("an architecture"))
        .collect();
    for (file, p) in suite::static_inspection::group_size_plots(&suite::static_inspection::targets(&archs)) {
        problems_found.extend(problems(&format!("results/static-compare/{file}"), &p));
        checked += 1;
    }
    assert!(checked > 150 && comparisons >= 5, "only {checked} plots and {comparisons} comparisons were checked");
    assert!(problems_found.is_empty(), "{} problems:\n{}", problems_found.len(), problems_found.join("\n"));
}
