//! Nsight Compute's command line and its `--csv --page raw` output.
//!
//! The command: `ncu --clock-control none --profile-from-start off --cache-control all --replay-mode kernel --csv
//! --page raw --print-units base --metrics <m1,m2,...> --log-file <file> <suite> <its arguments>`. `--clock-control
//! none` leaves the clocks as the timed run had them (ncu locks them to base by default); `--profile-from-start off`
//! profiles only between the child's `cuProfilerStart` and `cuProfilerStop`, around each point's marker and
//! profiled launch, so the child's other launches (preparation, the verified launch, the FP64 references) cost no
//! profiling; `--cache-control all` (the default, said so) flushes the caches before each profiled kernel and replay
//! pass, so every point's DRAM bytes are those of one cold launch; kernel replay (the default) replays a kernel as
//! often as its metrics need passes, inside the one child process; `--log-file` keeps the table apart from the
//! child's own output.
//!
//! The output, as read from two real files on an H100 (Nsight Compute 2025.3.1): the profiler's `==PROF==` and
//! `==WARNING==` lines, then a header row (`"ID","Process ID","Process Name","Host Name","Kernel Name","Context",
//! "Stream","Block Size","Grid Size","Device","CC"`, then the metric columns in alphabetical order, requested or
//! not: `--page raw` adds `launch__*`, `device__attribute_*` and others), a units row (empty under the first 11
//! columns), and one row per profiled launch. Numbers carry thousands separators (`"12,589,056"`). Columns are
//! found by name, never by position.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;

use super::metrics::nvidia;
use super::{number, Error, KernelRecord, KernelResources};

/// ncu's options (before the application), collecting `metrics` into the CSV file `log_file`.
pub fn args(metrics: &[&str], log_file: &Path) -> Vec<OsString> {
    let mut args: Vec<OsString> = [
        "--clock-control",
        "none",
        "--profile-from-start",
        "off",
        "--cache-control",
        "all",
        "--replay-mode",
        "kernel",
        "--csv",
        "--page",
        "raw",
        "--print-units",
        "base",
        "--metrics",
    ]
    .iter()
    .map(OsString::from)
    .collect();
    args.push(metrics.join(",").into());
    args.push("--log-file".into());
    args.push(log_file.as_os_str().to_owned());
    args
}

/// What went wrong, from ncu's `==ERROR==` lines, with what to do where the cause is known; `None` when it
/// printed none.
pub fn diagnose(log: &str) -> Option<String> {
    let errors: Vec<&str> = log.lines().map(str::trim).filter(|l| l.starts_with("==ERROR==")).collect();
    if errors.is_empty() {
        return None;
    }
    let mut text = errors.join(" / ");
    if log.contains("ERR_NVGPUCTRPERM") {
        text.push_str(
            ". This user may not read the GPU's performance counters: run as root, or ask the administrator for \
             NVreg_RestrictProfilingToAdminUsers=0 (NVIDIA's ERR_NVGPUCTRPERM page)",
        );
    }
    Some(text)
}

/// The columns that say which launch a row is: every other column is a metric.
pub const IDENTITY: [&str; 11] = [
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
];

/// The factor that turns a value printed in `unit` into the base unit (bytes, ns); 1 for units that are already
/// base or are not scaled (`%`, `inst`, `cycle`, `register/thread`).
fn unit_scale(unit: &str) -> f64 {
    let (head, _) = unit.split_once('/').unwrap_or((unit, ""));
    match head.trim() {
        "Kbyte" | "KB" => 1e3,
        "Mbyte" | "MB" => 1e6,
        "Gbyte" | "GB" => 1e9,
        "Tbyte" | "TB" => 1e12,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        "usecond" | "us" => 1e3,
        "msecond" | "ms" => 1e6,
        "second" | "s" => 1e9,
        _ => 1.0,
    }
}

/// `(x, y, z)` as ncu prints a grid or block size, multiplied out.
fn dims(text: &str) -> Option<u64> {
    let inner = text.trim().trim_start_matches('(').trim_end_matches(')');
    inner.split(',').map(|d| d.trim().parse::<u64>().ok()).try_fold(1u64, |p, d| d.and_then(|d| p.checked_mul(d)))
}

/// Every profiled launch in `text` (a `--log-file` of `ncu --csv --page raw`), in the file's order. `what` names
/// the file in errors.
pub fn parse(text: &str, what: &str) -> Result<Vec<KernelRecord>, Error> {
    let parse_error = |problem: String| Error::Parse { what: what.to_string(), problem };
    // The profiler's own lines (`==PROF==`, `==WARNING==`) come before the table and may come between its rows.
    let table: Vec<&str> =
        text.lines().skip_while(|l| !l.trim_start().starts_with("\"ID\",")).filter(|l| !l.starts_with("==")).collect();
    if table.is_empty() {
        return Err(parse_error(match diagnose(text) {
            Some(errors) => format!("ncu wrote no table: {errors}"),
            None => "no table (a header row starting \"ID\",): is this `ncu --csv --page raw` output? An empty \
                     profile means no kernel ran between cuProfilerStart and cuProfilerStop"
                .into(),
        }));
    }
    let joined = table.join("\n");
    let mut reader = ::csv::ReaderBuilder::new().flexible(true).from_reader(joined.as_bytes());
    let header: Vec<String> =
        reader.headers().map_err(|e| parse_error(format!("header: {e}")))?.iter().map(str::to_string).collect();
    let col = |name: &str| header.iter().position(|h| h == name);
    let missing: Vec<&str> =
        ["ID", "Kernel Name", "Block Size", "Grid Size"].into_iter().filter(|n| col(n).is_none()).collect();
    if !missing.is_empty() {
        return Err(parse_error(format!("no column {}: not ncu's raw page", missing.join(", "))));
    }
    let (id, name, block, grid) = (col("ID"), col("Kernel Name"), col("Block Size"), col("Grid Size"));
    let metric_columns: Vec<usize> = (0..header.len()).filter(|i| !IDENTITY.contains(&header[*i].as_str())).collect();
    let mut scales: Vec<f64> = vec![1.0; header.len()];
    let mut records = Vec::new();
    for (n, row) in reader.records().enumerate() {
        let row = row.map_err(|e| parse_error(format!("row {}: {e}", n + 2)))?;
        let field = |i: Option<usize>| i.and_then(|i| row.get(i)).unwrap_or("");
        let id_text = field(id);
        if id_text.trim().is_empty() {
            // The units row: its cells under the metric columns say what each value is counted in.
            for &i in &metric_columns {
                scales[i] = unit_scale(row.get(i).unwrap_or(""));
            }
            continue;
        }
        let seq =
            number(id_text).map(|v| v as u64).ok_or_else(|| parse_error(format!("row {}: ID `{id_text}`", n + 2)))?;
        let grid_groups =
            dims(field(grid)).ok_or_else(|| parse_error(format!("launch {seq}: Grid Size `{}`", field(grid))))?;
        let group_items =
            dims(field(block)).ok_or_else(|| parse_error(format!("launch {seq}: Block Size `{}`", field(block))))?;
        let mut values = BTreeMap::new();
        for &i in &metric_columns {
            if let Some(v) = row.get(i).and_then(number) {
                values.insert(header[i].clone(), v * scales[i]);
            }
        }
        let as_u32 = |name: &str| values.get(name).and_then(|v: &f64| u32::try_from(v.round() as u64).ok());
        let lds = match (as_u32(nvidia::SHARED_STATIC), as_u32(nvidia::SHARED_DYNAMIC)) {
            (None, None) => None,
            (s, d) => Some(s.unwrap_or(0).saturating_add(d.unwrap_or(0))),
        };
        let resources = KernelResources {
            group_size: u32::try_from(group_items).unwrap_or(u32::MAX),
            registers_per_item: as_u32(nvidia::REGISTERS),
            sgprs: None,
            lds_bytes_per_group: lds,
        };
        records.push(KernelRecord {
            seq,
            name: field(name).to_string(),
            grid: grid_groups,
            group_items,
            duration_ns: values.get(nvidia::DURATION).copied(),
            values,
            resources,
        });
    }
    Ok(records)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A FORMAT SAMPLE, not a measurement: the layout of `ncu --csv --page raw` as research notes section 5.1
    /// describes two real files (profiler lines first, header, units row, every value quoted, thousands
    /// separators, metric columns alphabetical with `launch__*` printed unasked), with values made up to exercise
    /// the parser. `suite/tests/fixtures/counters/ncu-raw-format-sample.csv` holds the same text.
    pub(crate) const SAMPLE: &str = include_str!("../../tests/fixtures/counters/ncu-raw-format-sample.csv");

    #[test]
    fn the_raw_page_is_read_by_column_name_with_units_and_separators() {
        let records = parse(SAMPLE, "sample").unwrap();
        let names: Vec<&str> = records.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "launch_empty",
                "occupancy_add",
                "launch_empty",
                "matmul_naive(const float *, const float *, float *, int, int, int)"
            ]
        );
        let add = &records[1];
        assert_eq!((add.seq, add.grid, add.group_items), (1, 65_536, 256));
        assert_eq!(add.value(nvidia::DRAM_READ), Some(134_217_728.0), "thousands separators go");
        assert_eq!(add.value(nvidia::DRAM_WRITE), Some(67_108_864.0));
        assert_eq!(add.value(nvidia::ACHIEVED_PCT), Some(87.21));
        assert_eq!(add.duration_ns, Some(71_232.0));
        assert_eq!(add.resources.registers_per_item, Some(16));
        assert_eq!(add.resources.lds_bytes_per_group, Some(0));
        assert_eq!(add.resources.group_size, 256);
        assert_eq!(records[3].value(nvidia::DRAM_WRITE), Some(4_096_000.0));
        assert_eq!(records[3].resources.lds_bytes_per_group, Some(8192));
        assert_eq!((records[3].grid, records[3].group_items), (1024, 256));
        // Markers: the empty kernel in (2i + 1, 1, 1) groups of one item.
        assert_eq!((records[2].grid, records[2].group_items), (3, 1));
        // A string column (the device's name) is no metric.
        assert!(!add.values.contains_key("device__attribute_display_name"));
    }

    #[test]
    fn the_units_row_scales_values_to_bytes_and_ns() {
        // Printed without --print-units base, ncu may pick larger units per column: the units row says which.
        let text =
            "\"ID\",\"Kernel Name\",\"Block Size\",\"Grid Size\",\"dram__bytes_read.sum\",\"gpu__time_duration.sum\"\n\
                    \"\",\"\",\"\",\"\",\"Mbyte\",\"usecond\"\n\
                    \"0\",\"k\",\"(64, 1, 1)\",\"(2, 1, 1)\",\"1.50\",\"2.25\"\n";
        let r = &parse(text, "units").unwrap()[0];
        assert_eq!(r.value(nvidia::DRAM_READ), Some(1.5e6));
        assert_eq!(r.duration_ns, Some(2250.0));
    }

    #[test]
    fn shared_memory_and_pipe_metrics_are_read_where_printed() {
        use crate::counters::metrics::{figures, nvidia::*};
        use crate::counters::Profiler;
        // Made-up values in ncu's layout (wavefronts are counts, the shares of a peak in %).
        let text = format!(
            "\"ID\",\"Kernel Name\",\"Block Size\",\"Grid Size\",\"{LDS_BANK_CONFLICTS}\",\"{LDS_WAVEFRONTS}\",\
             \"{LDS_BUSY_PCT}\",\"{FP64_PIPE_PCT}\"\n\
             \"\",\"\",\"\",\"\",\"\",\"\",\"%\",\"%\"\n\
             \"0\",\"k\",\"(256, 1, 1)\",\"(64, 1, 1)\",\"65,536\",\"1,572,864\",\"41.25\",\"77.50\"\n"
        );
        let f = figures(Profiler::Ncu, &parse(&text, "lds").unwrap()[0], 32);
        assert_eq!((f.lds_wavefronts, f.lds_bank_conflict_wavefronts), (Some(1_572_864.0), Some(65_536.0)));
        assert_eq!((f.lds_busy_pct, f.fp64_pipe_pct), (Some(41.25), Some(77.5)));
        // The format sample predates them: it still reads, and they are empty.
        for record in parse(SAMPLE, "sample").unwrap() {
            let f = figures(Profiler::Ncu, &record, 32);
            assert_eq!((f.lds_wavefronts, f.lds_busy_pct, f.lds_bank_conflict_wavefronts), (None, None, None));
            assert_eq!(f.fp64_pipe_pct, None);
        }
    }

    #[test]
    fn output_without_a_table_says_why() {
        let err = parse("==PROF== Connected to process 581\n==PROF== Disconnected from process 581\n", "log")
            .unwrap_err()
            .to_string();
        assert!(err.contains("no table") && err.contains("cuProfilerStart"), "{err}");
        let denied = "==PROF== Connected to process 9\n==ERROR== ERR_NVGPUCTRPERM - The user does not have \
                      permission to access NVIDIA GPU Performance Counters on the target device 0.\n";
        let err = parse(denied, "log").unwrap_err().to_string();
        assert!(err.contains("ERR_NVGPUCTRPERM") && err.contains("NVreg_RestrictProfilingToAdminUsers=0"), "{err}");
        let err = parse("\"ID\",\"Kernel Name\"\n\"0\",\"k\"\n", "log").unwrap_err().to_string();
        assert!(err.contains("no column Block Size, Grid Size"), "{err}");
        assert_eq!(diagnose("==PROF== fine\n"), None);
    }

    #[test]
    fn the_command_keeps_clocks_and_profiles_only_the_windows() {
        let args: Vec<String> = args(&["a.sum", "b.pct"], Path::new("/r/counters.csv"))
            .into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let text = args.join(" ");
        for want in [
            "--clock-control none",
            "--profile-from-start off",
            "--cache-control all",
            "--csv --page raw --print-units base",
            "--metrics a.sum,b.pct",
            "--log-file /r/counters.csv",
        ] {
            assert!(text.contains(want), "{text}");
        }
    }

    #[test]
    fn sizes_and_units() {
        assert_eq!(dims("(4096, 1, 1)"), Some(4096));
        assert_eq!(dims("(16, 8, 2)"), Some(256));
        assert_eq!(dims("4096"), Some(4096));
        assert_eq!(dims("(a, 1, 1)"), None);
        assert_eq!(unit_scale("Kbyte"), 1e3);
        assert_eq!(unit_scale("Kbyte/block"), 1e3);
        assert_eq!(unit_scale("usecond"), 1e3);
        assert_eq!(unit_scale("byte"), 1.0);
        assert_eq!(unit_scale("%"), 1.0);
        assert_eq!(unit_scale("register/thread"), 1.0);
    }
}
