//! `summary.md`: what `suite run` (every experiment) writes last, the page a person reads first: the device, then
//! per experiment what became of its points, how long it took and its headline figures, with its CSV and plots
//! named for the rest.

use std::path::Path;

use super::{Error, Result};
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
    /// Its headline figures, one line each: a bullet, or a row of a Markdown table when it starts with `|`.
    pub headlines: Vec<String>,
}

/// The summary's file name: `summary.md`, or one per shard (`summary.shard-<i>-of-<n>.md`), since shards of one
/// run write into one folder at once.
pub fn file_name(shard: Option<Shard>) -> String {
    match shard {
        None => "summary.md".to_string(),
        Some(s) => format!("summary.shard-{}-of-{}.md", s.index, s.count),
    }
}

/// The summary's Markdown text; `total_s` is the whole run's time, where known.
pub fn markdown(device: &Props, preset: &str, sections: &[Section], total_s: Option<f64>) -> String {
    let wave = if device.wave_size.0 == 64 { "wave64" } else { "warp32" };
    let took = |s: Option<f64>| s.map(|s| format!(" in {s:.1} s")).unwrap_or_default();
    let mut text = format!(
        "# suite run: {} ({}, {wave}, {} CUs)\n\n{preset}, {} experiments{}; {}, driver {}.\n\
         Every figure below was verified against a reference before it was timed; `run.json` holds the context.\n",
        device.name,
        device.arch,
        device.cu_count,
        sections.len(),
        took(total_s),
        device.runtime_version,
        device.driver_version,
    );
    for s in sections {
        let took = s.seconds.map(|s| format!(" ({s:.1} s)")).unwrap_or_default();
        text.push_str(&format!("\n## {}{took}\n\n", s.name));
        match &s.outcome {
            Ok(points) => text.push_str(&format!("Points: {points}. Rows: `{}.csv`.\n", s.name)),
            Err(why) => text.push_str(&format!("**Could not run**: {why}\n")),
        }
        if !s.headlines.is_empty() {
            text.push('\n');
            // A line starting with `|` is a row of a Markdown table, written as it is; a blank line parts a table
            // from the bullets around it.
            let mut was_row = None;
            for line in &s.headlines {
                let row = line.starts_with('|');
                if was_row.is_some_and(|was| was != row) {
                    text.push('\n');
                }
                was_row = Some(row);
                text.push_str(&format!("{}{line}\n", if row { "" } else { "- " }));
            }
        }
    }
    text
}

/// Writes the summary to `path`.
pub fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|source| Error::Io { action: "cannot write", path: path.to_path_buf(), source })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::occupancy::tests::h100;

    #[test]
    fn the_summary_names_the_device_each_experiment_and_its_headlines() {
        let sections = [
            Section {
                name: "smoke",
                seconds: Some(2.25),
                outcome: Ok("2 ok, 0 failed verification".into()),
                headlines: vec!["triad at n = 67108864: 2755 GB/s".into()],
            },
            Section { name: "matmul", seconds: Some(0.5), outcome: Err("nvcc not found".into()), headlines: vec![] },
        ];
        let text = markdown(&h100(), "quick preset", &sections, Some(2.75));
        assert!(text.starts_with("# suite run: NVIDIA H100 80GB HBM3 (sm_90, warp32, 132 CUs)\n"), "{text}");
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
        let text = markdown(&h100(), "merged shards", &[merged], None);
        assert!(text.contains("\n\nmerged shards, 1 experiments; ") && text.contains("\n## smoke\n\n"), "{text}");
    }

    /// Table rows (lines starting with `|`) are written as they are, set apart from the bullets by blank lines.
    #[test]
    fn headline_lines_of_a_table_are_written_as_a_table() {
        let lines = ["caption", "| a | b |", "|---|---:|", "| x | 1 |", "after"].map(String::from).to_vec();
        let section = Section { name: "fusion", seconds: None, outcome: Ok("1 ok".into()), headlines: lines };
        let text = markdown(&h100(), "quick preset", &[section], None);
        assert!(
            text.ends_with("`fusion.csv`.\n\n- caption\n\n| a | b |\n|---|---:|\n| x | 1 |\n\n- after\n"),
            "{text}"
        );
    }
}
