//! rocprofv3's command line and its counter-collection CSV (ROCm 6.3 as on LUMI; rocprofiler-sdk).
//!
//! The command, one run per counter set ([`super::metrics::rocprof_passes`]): `rocprofv3 --pmc <c1> <c2> ...
//! --output-format csv -d <dir> -o <name> -- <suite> <its arguments>`. rocprofiler-sdk's documentation: "To supply
//! the counters in the command line, use: `rocprofv3 --pmc SQ_WAVES GRBM_COUNT GRBM_GUI_ACTIVE -- <application_path>`",
//! counters "separate[d] using space or a comma", and "Job fails if the entire set of counters can't be collected in
//! a single pass". Whether ROCm 6.3.0's build has `--pmc` is not confirmed from its source (its 6.2 documents show
//! only input files), so the pass asks `rocprofv3 --help` and, where `--pmc` is missing, writes the set into an
//! input file (`pmc: <c1> <c2> ...`) and passes `-i <file>` instead.
//!
//! The output: a file `*counter_collection.csv` somewhere under `<dir>` (rocprofv3 puts it under its own folder
//! layout, prefixed with the process id or `-o`), one row per (dispatch, counter): `Counter_Name`,
//! `Counter_Value`, and the dispatch's `Dispatch_Id`, `Kernel_Name`, `Grid_Size`, `Workgroup_Size`,
//! `LDS_Block_Size`, `VGPR_Count`, `SGPR_Count`; later versions add `Accum_VGPR_Count`, `Start_Timestamp` and
//! `End_Timestamp` (ns) and write `Agent_Id` as a string. Columns are found by name, so every version reads.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::{number, Error, KernelRecord, KernelResources};

/// How the counters of one run are handed to rocprofv3.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CounterInput {
    /// `--pmc <c1> <c2> ...` on the command line.
    Flag,
    /// `-i <file>`, a file holding `pmc: <c1> <c2> ...` ([`input_file_text`]).
    File(PathBuf),
}

/// Whether `rocprofv3 --help` offers `--pmc`.
pub fn has_pmc_flag(help: &str) -> bool {
    help.split(|c: char| c.is_whitespace() || c == ',' || c == '[' || c == ']').any(|w| w == "--pmc")
}

/// The input file that asks for `counters` in one pass.
pub fn input_file_text(counters: &[&str]) -> String {
    format!("pmc: {}\n", counters.join(" "))
}

/// rocprofv3's arguments, up to and including the `--` before the application: `counters` handed over as `input`
/// says, CSV output into `out_dir` with file names starting `name`.
pub fn args(counters: &[&str], input: &CounterInput, out_dir: &Path, name: &str) -> Vec<OsString> {
    let mut args: Vec<OsString> = Vec::new();
    match input {
        CounterInput::Flag => {
            args.push("--pmc".into());
            args.extend(counters.iter().map(OsString::from));
        }
        CounterInput::File(path) => {
            args.push("-i".into());
            args.push(path.as_os_str().to_owned());
        }
    }
    for a in ["--output-format", "csv", "-d"] {
        args.push(a.into());
    }
    args.push(out_dir.as_os_str().to_owned());
    args.push("-o".into());
    args.push(name.into());
    args.push("--".into());
    args
}

/// The one counter-collection CSV rocprofv3 wrote under `dir`, wherever its layout put it.
pub fn find_output(dir: &Path) -> Result<PathBuf, Error> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries =
            std::fs::read_dir(&d).map_err(|source| Error::Io { action: "cannot read", path: d.clone(), source })?;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| n.to_string_lossy().ends_with("counter_collection.csv")) {
                found.push(path);
            }
        }
    }
    found.sort();
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(Error::Parse {
            what: dir.display().to_string(),
            problem: "rocprofv3 wrote no *counter_collection.csv: see its log beside it".into(),
        }),
        n => Err(Error::Parse {
            what: dir.display().to_string(),
            problem: format!(
                "{n} counter-collection files ({}) where one run writes one: empty the folder and run again",
                found.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
            ),
        }),
    }
}

/// Every dispatch in `text` (a rocprofv3 counter-collection CSV), one record each with its counters, in dispatch
/// order. `what` names the file in errors. A counter a dispatch has twice (one row per hardware instance, in a
/// layout that keeps them apart) is summed.
pub fn parse(text: &str, what: &str) -> Result<Vec<KernelRecord>, Error> {
    let parse_error = |problem: String| Error::Parse { what: what.to_string(), problem };
    let mut reader = ::csv::ReaderBuilder::new().flexible(true).from_reader(text.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| parse_error(format!("header: {e}")))?
        .iter()
        .map(|h| h.trim().to_string())
        .collect();
    let col = |name: &str| header.iter().position(|h| h == name);
    let required = ["Kernel_Name", "Grid_Size", "Workgroup_Size", "Counter_Name", "Counter_Value"];
    let missing: Vec<&str> = required.into_iter().filter(|n| col(n).is_none()).collect();
    let dispatch = col("Dispatch_Id").or(col("Correlation_Id"));
    if !missing.is_empty() || dispatch.is_none() {
        let mut missing = missing;
        if dispatch.is_none() {
            missing.push("Dispatch_Id");
        }
        return Err(parse_error(format!(
            "no column {}: not a rocprofv3 counter-collection CSV (the suite reads its columns by name: {})",
            missing.join(", "),
            header.join(", ")
        )));
    }
    let mut by_dispatch: BTreeMap<u64, KernelRecord> = BTreeMap::new();
    for (n, row) in reader.records().enumerate() {
        let row = row.map_err(|e| parse_error(format!("row {}: {e}", n + 2)))?;
        let field = |name: &str| col(name).and_then(|i| row.get(i)).unwrap_or("").trim();
        let int = |name: &str| number(field(name)).filter(|v| *v >= 0.0).map(|v| v as u64);
        let line = n + 2;
        let id = dispatch.and_then(|i| row.get(i)).and_then(number).map(|v| v as u64);
        let id = id.ok_or_else(|| parse_error(format!("row {line}: no dispatch id")))?;
        let counter = field("Counter_Name").to_string();
        let value = number(field("Counter_Value"))
            .ok_or_else(|| parse_error(format!("row {line}: {counter} has value `{}`", field("Counter_Value"))))?;
        let record = match by_dispatch.entry(id) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => {
                let grid = int("Grid_Size").ok_or_else(|| parse_error(format!("row {line}: Grid_Size")))?;
                let group = int("Workgroup_Size").ok_or_else(|| parse_error(format!("row {line}: Workgroup_Size")))?;
                let as_u32 = |v: Option<u64>| v.and_then(|v| u32::try_from(v).ok());
                // The unified VGPR file of gfx90a holds both kinds; a version without the column prints one count.
                let vgprs =
                    as_u32(int("VGPR_Count")).map(|v| v.saturating_add(as_u32(int("Accum_VGPR_Count")).unwrap_or(0)));
                let duration_ns = match (number(field("Start_Timestamp")), number(field("End_Timestamp"))) {
                    (Some(start), Some(end)) if end >= start => Some(end - start),
                    _ => None,
                };
                e.insert(KernelRecord {
                    seq: id,
                    name: field("Kernel_Name").to_string(),
                    grid,
                    group_items: group,
                    duration_ns,
                    values: BTreeMap::new(),
                    resources: KernelResources {
                        group_size: u32::try_from(group).unwrap_or(u32::MAX),
                        registers_per_item: vgprs,
                        sgprs: as_u32(int("SGPR_Count")),
                        lds_bytes_per_group: as_u32(int("LDS_Block_Size")),
                    },
                })
            }
        };
        *record.values.entry(counter).or_insert(0.0) += value;
    }
    Ok(by_dispatch.into_values().collect())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::counters::markers;

    /// FORMAT SAMPLES, not measurements: rocprofv3's documentation's own samples (quoted verbatim in the files;
    /// sources in `suite/tests/fixtures/counters/README.md`).
    const ROCM63: &str =
        include_str!("../../tests/fixtures/counters/rocprofv3-counter-collection-rocm63-format-sample.csv");
    const LATER: &str =
        include_str!("../../tests/fixtures/counters/rocprofv3-counter-collection-later-format-sample.csv");
    /// A FORMAT SAMPLE in the ROCm 6.3 layout with made-up values: markers and the first run's counters.
    pub(crate) const MARKERS: &str = include_str!("../../tests/fixtures/counters/rocprofv3-markers-format-sample.csv");

    #[test]
    fn the_documentations_samples_parse_in_both_layouts() {
        let r = parse(ROCM63, "rocm63").unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].name, "void addition_kernel<float>(float*, float const*, float const*, int, int)");
        assert_eq!((r[0].seq, r[0].grid, r[0].group_items), (1, 1_048_576, 64));
        assert_eq!(r[0].value("SQ_WAVES"), Some(16384.0));
        assert_eq!(r[0].resources.registers_per_item, Some(8));
        assert_eq!(r[0].resources.sgprs, Some(16));
        assert_eq!(r[0].resources.lds_bytes_per_group, Some(0));
        assert_eq!(r[0].duration_ns, None, "the 6.3 layout has no timestamps");
        assert_eq!(r[1].name, "subtract_kernel(float*, float const*, float const*, int, int)");
        let l = parse(LATER, "later").unwrap();
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].value("SQ_WAVES"), Some(16384.0));
        assert_eq!(l[0].duration_ns, Some(317_095_766_775_957.0 - 317_095_766_765_717.0));
        assert_eq!(l[0].resources.registers_per_item, Some(8), "VGPR_Count + Accum_VGPR_Count");
        // Agent_Id as a string (the newest layout) is no obstacle: the column is not read.
        let string_agent = LATER.replace("1,1,4,1,225049", "1,1,\"Agent 4\",1,225049");
        assert_ne!(string_agent, LATER);
        assert_eq!(parse(&string_agent, "agent").unwrap()[0].value("SQ_WAVES"), Some(16384.0));
    }

    #[test]
    fn rows_per_counter_pivot_into_dispatches_and_markers_map_them_to_points() {
        let records = parse(MARKERS, "markers").unwrap();
        assert_eq!(records.len(), 8);
        assert_eq!(records[2].value("OccupancyPercent"), Some(71.5));
        assert_eq!(records[2].value("GRBM_GUI_ACTIVE"), Some(250_000.0));
        assert_eq!(records[5].resources.lds_bytes_per_group, Some(16384));
        // A counter printed once per hardware instance (two rows of one dispatch) is summed.
        let line = MARKERS.lines().nth(7).unwrap();
        assert!(line.contains("\"GRBM_GUI_ACTIVE\",250000"), "{line}");
        let twice = format!("{MARKERS}{line}\n");
        assert_eq!(parse(&twice, "twice").unwrap()[2].value("GRBM_GUI_ACTIVE"), Some(500_000.0));
        let w = markers::windows(&records, 2).unwrap();
        let names = |i: usize| w[i].as_ref().unwrap().iter().map(|k| k.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(0), ["occupancy_add"]);
        assert_eq!(names(1), ["Cijk_Ailk_Bljk_SB_MT64x64x16_MI32x32x2x1", "splitk_reduce"]);
    }

    #[test]
    fn a_file_of_another_layout_is_refused_by_name() {
        let err = parse("\"Kernel_Name\",\"Counter_Value\"\n\"k\",1\n", "x").unwrap_err().to_string();
        assert!(err.contains("no column Grid_Size, Workgroup_Size, Counter_Name, Dispatch_Id"), "{err}");
        let err = parse(&ROCM63.replace(",16384\n", ",lots\n"), "x").unwrap_err().to_string();
        assert!(err.contains("SQ_WAVES has value `lots`"), "{err}");
        // Correlation_Id stands in for a missing Dispatch_Id.
        let no_dispatch = ROCM63.replace("\"Dispatch_Id\"", "\"Other\"");
        assert_eq!(parse(&no_dispatch, "x").unwrap().len(), 2);
    }

    #[test]
    fn the_command_line_and_its_fallback() {
        let text = |v: Vec<OsString>| v.iter().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>().join(" ");
        let flag =
            text(args(&["GRBM_GUI_ACTIVE", "OccupancyPercent"], &CounterInput::Flag, Path::new("/r/raw"), "pass-1"));
        assert_eq!(flag, "--pmc GRBM_GUI_ACTIVE OccupancyPercent --output-format csv -d /r/raw -o pass-1 --");
        let file = CounterInput::File(PathBuf::from("/r/pass-1.txt"));
        assert_eq!(
            text(args(&["X"], &file, Path::new("/r/raw"), "p")),
            "-i /r/pass-1.txt --output-format csv -d /r/raw -o p --"
        );
        assert_eq!(input_file_text(&["A", "B"]), "pmc: A B\n");
        assert!(has_pmc_flag("usage: rocprofv3 [-h] [--pmc [PMC ...]] [-i INPUT]"));
        assert!(has_pmc_flag("  --pmc PMC [PMC ...]   Specify Performance Monitoring Counters"));
        assert!(!has_pmc_flag("usage: rocprofv3 [-h] [-i INPUT] [--pmc-lines]"));
    }

    #[test]
    fn the_output_file_is_found_wherever_rocprofv3_put_it() {
        let dir = tempfile::tempdir().unwrap();
        assert!(find_output(dir.path()).unwrap_err().to_string().contains("wrote no *counter_collection.csv"));
        let file = dir.path().join("host/30303/pass-1_counter_collection.csv");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, ROCM63).unwrap();
        assert_eq!(find_output(dir.path()).unwrap(), file);
        std::fs::write(dir.path().join("host/other_counter_collection.csv"), ROCM63).unwrap();
        assert!(find_output(dir.path()).unwrap_err().to_string().contains("2 counter-collection files"));
    }
}
