//! `summary.md`: what `suite run` (every experiment) writes last, the page a person reads first: the device, then
//! per experiment what became of its points, how long it took and its headline figures, with its CSV and plots
//! named for the rest.

use std::path::Path;

use super::Result;
use crate::device::Props;
use crate::options::Shard;

/// One experiment's part of the summary.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    /// Experiment name.
    pub name: &'static str,
    /// Seconds it took, compilation included (unknown for a merge of shards).
    pub seconds: Option<f64>,
    /// What became of its points (one line), or why it could not run.
    pub outcome: std::result::Result<String, String>,
    /// Its headline figures, one line each; lines starting with `|` are a Markdown table, written as they are.
    pub headlines: Vec<String>,
    /// Why its `invalid` rows could not run: each distinct reason with its count, most frequent first.
    pub invalid: Vec<(String, usize)>,
    /// Its plots, file names in the results folder.
    pub plots: Vec<String>,
    /// What its rows say about the clocks they ran at.
    pub clocks: super::throttling::Flags,
    /// What the experiment said about how it ran on this device (its options' `notes` in run.json, e.g. matmul's
    /// kernels left out of the default set and why).
    pub notes: Vec<String>,
}

impl Section {
    /// A section of `name` with what its CSV rows and its results folder `dir` say: the reasons of its invalid rows
    /// and its plots (`<name>.png`, `<name>-*.png`).
    pub fn new(
        name: &'static str,
        seconds: Option<f64>,
        outcome: std::result::Result<String, String>,
        headlines: Vec<String>,
        rows: &[std::collections::BTreeMap<String, String>],
        dir: &Path,
    ) -> Section {
        let mut reasons: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
        for row in rows.iter().filter(|r| r.get("status").is_some_and(|s| s == "invalid")) {
            *reasons.entry(row.get("message").map_or("", String::as_str)).or_default() += 1;
        }
        let mut invalid: Vec<(String, usize)> = reasons.into_iter().map(|(m, n)| (m.to_string(), n)).collect();
        invalid.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let mut plots: Vec<String> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|f| {
                f.ends_with(".png")
                    && (f == &format!("{name}.png")
                        || f.starts_with(&format!("{name}-"))
                        || f.starts_with(&format!("{name}_")))
            })
            .collect();
        plots.sort();
        let clocks = super::throttling::Flags::of(rows);
        let notes = notes_of(name, dir);
        Section { name, seconds, outcome, headlines, invalid, plots, clocks, notes }
    }
}

/// The `notes` of experiment `name`'s options in the latest invocation of `dir`'s run.json that ran it (none where
/// there is no run.json or no such invocation).
fn notes_of(name: &str, dir: &Path) -> Vec<String> {
    let Ok(Some(run)) = super::run_json::read(dir) else { return Vec::new() };
    let Some(invocation) = run.invocations.iter().rev().find(|i| i.experiment == name) else { return Vec::new() };
    let notes = invocation.experiments.get(name).and_then(|o| o.get("notes")).and_then(|n| n.as_array());
    notes.into_iter().flatten().filter_map(|n| n.as_str().map(str::to_string)).collect()
}

/// Most distinct invalid reasons listed per experiment; the CSV's `message` column holds every one.
const MAX_INVALID_REASONS: usize = 6;

/// The summary's file name: `summary.md`, or one per shard (`summary.shard-<i>-of-<n>.md`), since shards of one
/// run write into one folder at once.
pub fn file_name(shard: Option<Shard>) -> String {
    match shard {
        None => "summary.md".to_string(),
        Some(s) => format!("summary.shard-{}-of-{}.md", s.index, s.count),
    }
}

/// The summary's Markdown text; `status` is the folder's rows against its plan, said first (a run that holds fewer
/// points than it planned says so before anything else); `total_s` is the whole run's time, where known.
pub fn markdown(
    device: &Props,
    preset: &str,
    status: &super::status::FolderStatus,
    sections: &[Section],
    total_s: Option<f64>,
) -> String {
    let wave = if device.wave_size.0 == 64 { "wave64" } else { "warp32" };
    // Each vendor's word for its compute units: streaming multiprocessors on NVIDIA, compute units on AMD.
    let units = match device.platform {
        crate::device::Platform::Nvidia => "SMs",
        crate::device::Platform::Amd => "CUs",
    };
    let took = |s: Option<f64>| s.map(|s| format!(" in {s:.1} s")).unwrap_or_default();
    let first = if status.complete() {
        format!("**Complete**: {}.\n\n", status.line().trim_start_matches("complete: "))
    } else {
        format!("**{}**\n\n", capitalised(&status.line()))
    };
    let mut text = format!(
        "# suite run: {} ({}, {wave}, {} {units})\n\n{first}{preset}, {} experiments{}; {}, driver {}.\n\
         Every figure below was verified against a reference before it was timed; `run.json` holds the context.\n",
        device.name,
        device.arch,
        device.cu_count,
        sections.len(),
        took(total_s),
        device.runtime_version,
        device.driver_version,
    );
    let flags: Vec<(&str, &super::throttling::Flags)> = sections.iter().map(|s| (s.name, &s.clocks)).collect();
    if let Some(note) = super::throttling::run_note(&flags) {
        text.push_str(&format!("\n{note}\n"));
    }
    for s in sections {
        let took = s.seconds.map(|s| format!(" ({s:.1} s)")).unwrap_or_default();
        text.push_str(&format!("\n## {}{took}\n\n", s.name));
        match &s.outcome {
            Ok(points) => text.push_str(&format!("Points: {points}. Rows: `{}.csv`.\n", s.name)),
            Err(why) => text.push_str(&format!("**Could not run**: {why}\n")),
        }
        if let Some(line) = s.clocks.line() {
            text.push_str(&format!("\n{line}\n"));
        }
        if !s.headlines.is_empty() {
            text.push('\n');
            let mut in_table = false;
            for line in &s.headlines {
                let is_table = line.starts_with('|');
                if is_table != in_table && !text.ends_with("\n\n") {
                    text.push('\n');
                }
                in_table = is_table;
                text.push_str(&if is_table { format!("{line}\n") } else { format!("- {line}\n") });
            }
        }
        if !s.notes.is_empty() {
            text.push('\n');
            for note in &s.notes {
                text.push_str(&format!("- {note}\n"));
            }
        }
        if !s.invalid.is_empty() {
            let total: usize = s.invalid.iter().map(|(_, n)| n).sum();
            text.push_str(&format!(
                "\n**{total} invalid** (points the sweep names but this device or these sizes cannot run; not \
                 measured, so not a failure):\n"
            ));
            for (reason, n) in s.invalid.iter().take(MAX_INVALID_REASONS) {
                text.push_str(&format!("- {n} x {reason}\n"));
            }
            if s.invalid.len() > MAX_INVALID_REASONS {
                text.push_str(&format!(
                    "- and {} other reasons: see the `message` column of `{}.csv`\n",
                    s.invalid.len() - MAX_INVALID_REASONS,
                    s.name
                ));
            }
        }
        if !s.plots.is_empty() {
            let links: Vec<String> = s.plots.iter().map(|p| format!("[{p}]({p})")).collect();
            text.push_str(&format!("\nPlots: {}\n", links.join(", ")));
        }
    }
    text
}

/// `text` with its first letter in upper case.
fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

/// The closing lines for a results folder `dir` that holds a roofline of the run (see [`super::roofline`]).
pub fn roofline_note(dir: &Path) -> String {
    if dir.join("roofline.png").is_file() {
        "\n## Roofline\n\nEvery measured kernel of the run by arithmetic intensity (counted FLOP / counted bytes) \
         against its achieved rate, under the copy bandwidth measured in this run and the device's FP32 peak(s): \
         [roofline.png](roofline.png), rows in `roofline.csv`.\n"
            .to_string()
    } else {
        String::new()
    }
}

/// Writes the summary to `path`.
pub fn write(path: &Path, text: &str) -> Result<()> {
    crate::safe_fs::write_whole(path, text.as_bytes()).map_err(|source| super::io_error("cannot write", path, source))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::occupancy_calculator::tests::h100;

    #[test]
    fn the_summary_names_the_device_each_experiment_and_its_headlines() {
        let sections = [
            Section {
                name: "smoke",
                seconds: Some(2.25),
                outcome: Ok("2 ok, 0 failed verification".into()),
                headlines: vec!["triad at n = 67108864: 2755 GB/s".into()],
                invalid: vec![],
                plots: vec![],
                clocks: Default::default(),
                notes: vec!["left out of the default set: FP32: warptile: matmul_warptile spills 2 registers".into()],
            },
            Section {
                name: "matmul",
                seconds: Some(0.5),
                outcome: Err("nvcc not found".into()),
                headlines: vec![],
                invalid: vec![],
                plots: vec![],
                clocks: Default::default(),
                notes: vec![],
            },
        ];
        let text =
            markdown(&h100(), "quick preset", &status(&[("smoke", 2, 2), ("matmul", 0, 40)]), &sections, Some(2.75));
        // What the experiment said about how it ran is said under its headlines.
        assert!(
            text.contains("2755 GB/s\n\n- left out of the default set: FP32: warptile: matmul_warptile spills 2"),
            "{text}"
        );
        assert!(text.starts_with("# suite run: NVIDIA H100 80GB HBM3 (sm_90, warp32, 132 SMs)\n"), "{text}");
        // What the folder holds against its plan comes first.
        assert!(
            text.contains("132 SMs)\n\n**Incomplete: matmul 0 of 40 points (smoke complete)**\n\nquick preset"),
            "{text}"
        );
        let complete = markdown(&h100(), "quick preset", &status(&[("smoke", 2, 2)]), &sections[..1], None);
        assert!(
            complete.contains("SMs)\n\n**Complete**: every planned point has a row (smoke 2).\n\nquick preset"),
            "{complete}"
        );
        assert!(text.contains("quick preset, 2 experiments in 2.8 s"), "{text}");
        assert!(text.contains("\n## smoke (2.2 s)\n\nPoints: 2 ok, 0 failed verification. Rows: `smoke.csv`.\n\n- triad at n = 67108864: 2755 GB/s\n"), "{text}");
        assert!(text.contains("\n## matmul (0.5 s)\n\n**Could not run**: nvcc not found\n"), "{text}");
        assert_eq!(file_name(None), "summary.md");
        assert_eq!(file_name(Some(Shard { index: 2, count: 8 })), "summary.shard-2-of-8.md");
        let dir = tempfile::tempdir().unwrap();
        write(&dir.path().join("summary.md"), &text).unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("summary.md")).unwrap(), text);
        // A merge knows no times.
        let merged = Section { seconds: None, ..sections[0].clone() };
        let text = markdown(&h100(), "merged shards", &status(&[("smoke", 2, 2)]), &[merged], None);
        assert!(text.contains("\n\nmerged shards, 1 experiments; ") && text.contains("\n## smoke\n\n"), "{text}");
    }

    /// A folder's status with experiments of (name, rows, planned points), unsharded.
    fn status(experiments: &[(&str, usize, usize)]) -> crate::report::status::FolderStatus {
        crate::report::status::FolderStatus {
            dir: "r".into(),
            run_json: true,
            merge: None,
            layout: None,
            plan_recorded: true,
            experiments: experiments
                .iter()
                .map(|(name, rows, planned)| crate::report::status::ExperimentStatus {
                    name: name.to_string(),
                    planned: Some(*planned),
                    rows: *rows,
                    failed: 0,
                    shards: vec![],
                })
                .collect(),
            continue_with: None,
        }
    }

    #[test]
    fn a_section_explains_its_invalid_rows_links_its_plots_and_keeps_tables_whole() {
        let dir = tempfile::tempdir().unwrap();
        for f in ["matmul-percent-of-vendor.png", "matmul.png", "smoke.png", "matmul.csv", "matmulx.png"] {
            std::fs::write(dir.path().join(f), b"x").unwrap();
        }
        let row = |status: &str, message: &str| {
            [("status", status), ("message", message)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let rows = vec![
            row("ok", ""),
            row("invalid", "needs 96 GiB, the device has 80"),
            row("invalid", "tile 128 does not divide 1000"),
            row("invalid", "needs 96 GiB, the device has 80"),
        ];
        let headlines =
            vec!["best: 0.93x".to_string(), "| size | x |".into(), "|---|---|".into(), "| 512 | 1 |".into()];
        let section = Section::new("matmul", Some(1.0), Ok("1 ok, 3 invalid".into()), headlines, &rows, dir.path());
        assert_eq!(section.plots, ["matmul-percent-of-vendor.png", "matmul.png"]);
        assert_eq!(
            section.invalid,
            [("needs 96 GiB, the device has 80".to_string(), 2), ("tile 128 does not divide 1000".to_string(), 1)]
        );
        let mut amd = h100();
        amd.platform = crate::device::Platform::Amd;
        let text = markdown(&amd, "quick preset", &status(&[("matmul", 4, 4)]), &[section], None);
        assert!(text.contains(" CUs)\n"), "{text}");
        assert!(text.contains("- best: 0.93x\n\n| size | x |\n|---|---|\n| 512 | 1 |\n"), "{text}");
        assert!(text.contains("**3 invalid**"), "{text}");
        assert!(
            text.contains("- 2 x needs 96 GiB, the device has 80\n- 1 x tile 128 does not divide 1000\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "Plots: [matmul-percent-of-vendor.png](matmul-percent-of-vendor.png), [matmul.png](matmul.png)\n"
            ),
            "{text}"
        );
    }

    /// Points measured throttled or below their steady clock: a warning near the top, a line in their experiment's
    /// section with the count and the first keys; a calm experiment says so in a line of its own.
    #[test]
    fn throttled_points_are_flagged_near_the_top_and_in_their_section() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("fixture.csv");
        // A fixture CSV as the runner writes it (header from csv::header), made up: two rows flagged.
        let head = crate::report::csv::header(&["n"], "gbps").join(",");
        let body = [
            "ok,1,1980,2619,310.2,55,false,none,false,12,a",
            "ok,2,1755,2619,699.5,71,true,power_cap,true,40,b",
            "ok,3,1860,2619,520,66,false,none,true,25,c",
            "invalid,4,,,,,,,,,d",
        ];
        let mut text = format!("{head}\n");
        for line in body {
            let f: Vec<&str> = line.split(',').collect();
            // context, n, 12 timing columns, the 8 clock columns, status, message, key
            text.push_str(&format!(
                "fixture,nvidia,H100,sm_90,32,{},20,1,graph,,,,1,1,1,1,0,1,{},{},,{}\n",
                f[1],
                f[2..10].join(","),
                f[0],
                f[10]
            ));
        }
        std::fs::write(&csv, text).unwrap();
        let rows = crate::report::csv::read_rows(&csv).unwrap();
        assert_eq!(rows[1]["throttle_reasons"], "power_cap", "the fixture's columns line up");
        let flagged = Section::new("fixture", Some(1.0), Ok("3 ok".into()), vec![], &rows, dir.path());
        let calm = Section::new("calm", Some(1.0), Ok("1 ok".into()), vec![], &rows[..1], dir.path());
        let text =
            markdown(&h100(), "quick preset", &status(&[("fixture", 4, 4), ("calm", 1, 1)]), &[flagged, calm], None);
        let note = "\n**Warning: 2 of 4 timed points ran throttled (1) or more than 5% below their steady SM clock** \
                    (fixture 2)";
        let first_section = text.find("\n## fixture").unwrap();
        assert!(text.find(note).is_some_and(|at| at < first_section), "{text}");
        assert!(
            text.contains(
                "Rows: `fixture.csv`.\n\n**Clocks: 2 of 3 timed points flagged** (1 throttled: power_cap; 2 more than 5% \
                 below the steady SM clock): `b`, `c`."
            ),
            "{text}"
        );
        assert!(text.contains("Rows: `calm.csv`.\n\nClocks: every sampled point ran at its steady SM clock, none throttled (1 of 1 timed points sampled).\n"), "{text}");
        // Without clock columns (an older CSV, a section not run): no clock line at all.
        let old = markdown(
            &h100(),
            "quick preset",
            &status(&[("smoke", 2, 2)]),
            &[Section {
                clocks: Default::default(),
                ..Section::new("smoke", None, Ok("2 ok".into()), vec![], &[], dir.path())
            }],
            None,
        );
        assert!(!old.contains("Clocks"), "{old}");
    }
}
