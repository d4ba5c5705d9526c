//! `suite run --counters`: after the timed run, the counter pass into the same folder, never mixed with the timed
//! rows ([`crate::counters`] has the parts and the metric table).
//!
//! The pass takes the `ok` rows of every experiment the invocation ran, splits them by metric set (experiments
//! rated in GFLOP/s also get the FP instruction counts) and, per set, runs the suite once more as a child process
//! ([`super::counter_child`]) under the platform's profiler: one `ncu` run per set on NVIDIA (kernel replay inside
//! the one child), one `rocprofv3` run per counter set on AMD. The child gets this invocation's own arguments, so it
//! rebuilds exactly the sweeps that were timed, and a plan file naming the points to profile. Then the profiles
//! are read, each kernel mapped to its point by the markers, and `counters.csv` written with the model's figures
//! beside the measured ones; the plots that read it are drawn again. A missing profiler is one message, and
//! nothing else happens: the timed rows are never touched.
//!
//! Cost: one child per metric set (plus one per extra counter set on AMD), each preparing its points as the timed
//! run did but launching each case twice (the verified launch, then the profiled one) instead of warming up and
//! timing repetitions; ncu profiles only between markers (`--profile-from-start off`), so preparation, verification
//! and the FP64 references run at full speed; only the metrics in the table are collected. `counters-pass.json`
//! records the pass's time beside the timed run's.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::counters::locate::Found;
use crate::counters::metrics::{self, Set};
use crate::counters::per_point::{counter_row, PassContext, Profiled};
use crate::counters::rocprof::CounterInput;
use crate::counters::table::{self, CounterRow, Status};
use crate::counters::{locate, markers, ncu, rocprof, Error as CounterError, KernelRecord, Profiler};
use crate::device::Props;
use crate::experiments::{self, ok_rows, Results};

/// The folder, inside the results folder, for the profilers' raw output, the plans and the logs.
pub const RAW_DIR: &str = "counters-raw";
/// The record of the pass: profiler, times, counts.
pub const PASS_RECORD: &str = "counters-pass.json";

/// What the child profiles: the points, in marker order (point `i` is opened by a marker of `2i + 1` groups).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// Whether each point also ends with a marker ([`Profiler::end_markers`]).
    pub end_markers: bool,
    /// The points.
    pub points: Vec<PlanPoint>,
}

/// One point of a [`Plan`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanPoint {
    /// Its experiment.
    pub experiment: String,
    /// Its key.
    pub key: String,
}

/// What became of one planned point in the child, one JSON line each in [`outcomes_path`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    /// The point's index in the plan.
    pub index: usize,
    /// Whether its marker and profiled launch ran.
    pub profiled: bool,
    /// Why not.
    pub message: String,
}

/// Where the child writes its outcomes: beside the plan.
pub fn outcomes_path(plan: &Path) -> PathBuf {
    let mut name = plan.as_os_str().to_owned();
    name.push(".outcomes");
    PathBuf::from(name)
}

/// What the pass needs of the invocation.
pub struct PassInput<'a> {
    /// The device the timed run measured.
    pub props: &'a Props,
    /// The results folder.
    pub out_dir: &'a Path,
    /// The experiments the invocation ran, in order.
    pub experiments: Vec<&'a dyn Results>,
    /// The child's program (the suite itself) and its arguments up to the plan: this invocation's own, less
    /// `--counters`.
    pub child: (PathBuf, Vec<OsString>),
    /// How long the timed run took, seconds.
    pub timed_s: f64,
}

/// What a pass did, for the summary and the caller.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PassRecord {
    /// The profiler, its executable and version; or why there is none.
    pub profiler: String,
    /// The profiler's command lines, one per child run.
    pub commands: Vec<String>,
    /// Seconds the pass took, children and reading included.
    pub pass_s: f64,
    /// Seconds the timed run of the same invocation took.
    pub timed_s: f64,
    /// Points planned (the `ok` rows).
    pub points: usize,
    /// Of them: with counters, launching no kernel, missing, in error.
    pub ok: usize,
    /// Points that launch no kernel.
    pub no_kernel: usize,
    /// Points the profile lacks.
    pub missing: usize,
    /// Points whose counters could not be read.
    pub error: usize,
}

impl PassRecord {
    /// One line for the log and the summary.
    pub fn line(&self) -> String {
        format!(
            "{} of {} points with counters ({} launch no kernel, {} missing, {} errors) in {:.1} s; the timed run took \
             {:.1} s (pass / run = {:.2})",
            self.ok,
            self.points,
            self.no_kernel,
            self.missing,
            self.error,
            self.pass_s,
            self.timed_s,
            if self.timed_s > 0.0 { self.pass_s / self.timed_s } else { f64::NAN }
        )
    }
}

/// The child's arguments: this process's own, less `--counters` (the child must not start a pass of its own).
pub fn child_args(own: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    own.into_iter().skip(1).filter(|a| a != "--counters").collect()
}

/// Runs the counter pass and reports it on stderr: every failure is a message (the `Err`), and the timed rows are
/// untouched. `find` locates the profiler ([`locate::locate`] in a run).
pub fn run_pass(
    input: &PassInput,
    find: impl FnOnce(Profiler) -> Result<Found, CounterError>,
) -> Result<PassRecord, String> {
    let started = Instant::now();
    let profiler = Profiler::of(input.props.platform);
    let found = find(profiler).map_err(|e| e.to_string());
    let outcome = found.and_then(|found| {
        eprintln!("counters: {} at {} ({})", profiler, found.path.display(), found.version);
        pass(input, &found, started).map_err(|e| format!("the pass failed: {e}; the timed rows are untouched"))
    });
    match &outcome {
        Ok(record) => eprintln!("counters: {}; rows in {}", record.line(), input.out_dir.join(table::CSV).display()),
        Err(why) => eprintln!("counters: {why}"),
    }
    outcome
}

/// Draws again every plot that reads `counters.csv`: the experiments' (occupancy's achieved occupancy) and the
/// roofline with measured DRAM bytes. Returns the files written; a plot that fails is a message.
pub fn draw(input: &PassInput, roles: &crate::report::roofline::Roles) -> Vec<PathBuf> {
    let mut written = Vec::new();
    for results in &input.experiments {
        let csv = input.out_dir.join(experiments::csv_name(results.name(), None));
        if csv.exists() {
            match experiments::render_plots(*results, &csv, input.out_dir) {
                Ok(paths) => written.extend(paths.into_iter().filter(|p| p.extension().is_some_and(|x| x == "png"))),
                Err(e) => eprintln!("counters: cannot draw {}'s plots again: {e}", results.name()),
            }
        }
    }
    match draw_dram_roofline(input.out_dir, input.props.platform, roles) {
        Ok(Some(path)) => written.push(path),
        Ok(None) => {}
        Err(e) => eprintln!("counters: cannot draw the roofline with measured bytes: {e}"),
    }
    written
}

/// The roofline with measured DRAM bytes (`roofline-dram.png`) from the `counters.csv` in `dir`, which a profiler
/// of `platform` wrote; `None` where no point has its bytes.
pub fn draw_dram_roofline(
    dir: &Path,
    platform: crate::device::Platform,
    roles: &crate::report::roofline::Roles,
) -> Result<Option<PathBuf>, crate::report::Error> {
    let measured: BTreeMap<(String, String), f64> = table::by_point(dir)
        .into_iter()
        .filter_map(|(point, row)| {
            let num = |c: &str| row.get(c).and_then(|v| v.parse::<f64>().ok());
            Some((point, num("dram_read_bytes")? + num("dram_write_bytes")?))
        })
        .collect();
    crate::report::roofline::write_dram(dir, roles, &measured, cache_note(Profiler::of(platform)))
}

/// What the cache state of `profiler`'s launches means for the bytes it measures.
fn cache_note(profiler: Profiler) -> &'static str {
    match profiler {
        Profiler::Ncu => {
            "ncu flushed the caches before each profiled kernel: measured bytes are a cold launch's, whereas the \
             timed rows ran back to back (L2-resident points read from L2 there); writes still dirty in L2 when \
             a kernel ends are not counted as its DRAM writes."
        }
        Profiler::Rocprofv3 => {
            "rocprofv3 flushes nothing: the profiled launch found the caches as the verified launch before it \
             left them, as back-to-back timed launches do."
        }
    }
}

/// Appends the pass's section to the run's `summary.md`.
pub fn append_summary(path: &Path, outcome: &Result<PassRecord, String>) -> Result<(), CounterError> {
    let mut text = std::fs::read_to_string(path).map_err(|source| CounterError::Io {
        action: "cannot read",
        path: path.to_path_buf(),
        source,
    })?;
    text.push_str("\n## Counters\n\n");
    match outcome {
        Ok(record) => text.push_str(&format!(
            "{} ({PASS_RECORD}). Each verified point ran once more under {}, in a pass of its own: `{}` holds, per \
             point, achieved beside theoretical occupancy, DRAM bytes beside the bytes counted, the L2 hit rate and \
             the FP instructions of GFLOP/s experiments; `{}` draws the measured bytes on the roofline. What each \
             column is and how it is measured: docs/counters.md.\n",
            record.line(),
            record.profiler,
            table::CSV,
            crate::report::roofline::DRAM_PNG
        )),
        Err(why) => text.push_str(&format!("No counters: {why}\n")),
    }
    crate::safe_fs::write_whole(path, text.as_bytes()).map_err(|source| CounterError::Io {
        action: "cannot write",
        path: path.to_path_buf(),
        source,
    })
}

/// The line `suite run --dry-run --counters` prints: where the profiler of `platform` is, or what is missing.
pub fn dry_run_line(platform: crate::device::Platform) -> String {
    let profiler = Profiler::of(platform);
    match locate::find(profiler, &|name| std::env::var_os(name), Path::new("/")) {
        Ok(path) => {
            format!("counters: {profiler} at {} would profile every verified point once more\n", path.display())
        }
        Err(e) => format!("counters: {e}\n"),
    }
}

/// The pass proper, with its profiler found.
fn pass(input: &PassInput, found: &Found, started: Instant) -> Result<PassRecord, CounterError> {
    let raw = input.out_dir.join(RAW_DIR);
    std::fs::create_dir_all(&raw).map_err(|source| CounterError::Io {
        action: "cannot create",
        path: raw.clone(),
        source,
    })?;
    // The ok rows of every experiment, grouped by the metric set its rating needs.
    let mut jobs: BTreeMap<Set, Vec<(String, Row)>> = BTreeMap::new();
    for results in &input.experiments {
        let csv = input.out_dir.join(experiments::csv_name(results.name(), None));
        if !csv.exists() {
            continue;
        }
        let rows = crate::report::csv::read_rows(&csv)?;
        let set = if results.metric().column == "gflops" { Set::Flop } else { Set::Memory };
        jobs.entry(set).or_default().extend(ok_rows(&rows).map(|r| (results.name().to_string(), r.clone())));
    }
    let label = format!("{} {}", found.profiler, found.version);
    let context = PassContext { props: input.props, profiler: found.profiler, profiler_label: label.clone() };
    let timeout = Duration::from_secs_f64((10.0 * input.timed_s).max(600.0));
    let mut rows: Vec<CounterRow> = Vec::new();
    let mut commands = Vec::new();
    for (set, points) in &jobs {
        let plan = Plan {
            end_markers: found.profiler.end_markers(),
            points: points
                .iter()
                .map(|(e, r)| PlanPoint { experiment: e.clone(), key: r.get("key").cloned().unwrap_or_default() })
                .collect(),
        };
        let plan_path = raw.join(format!("{}.plan.json", set.name()));
        write_json(&plan_path, &plan)?;
        let _ = std::fs::remove_file(outcomes_path(&plan_path));
        let profiled = match found.profiler {
            Profiler::Ncu => profile_ncu(input, found, *set, &plan, &plan_path, timeout, &mut commands),
            Profiler::Rocprofv3 => profile_rocprof(input, found, *set, &plan, &plan_path, timeout, &mut commands),
        };
        let outcomes = read_outcomes(&plan_path);
        for (i, (experiment, row)) in points.iter().enumerate() {
            let state = match &profiled {
                Err(why) => Profiled::Error(why.clone()),
                Ok(per_point) => match &per_point[i] {
                    Ok(Some(kernels)) => Profiled::Kernels(kernels.clone()),
                    Ok(None) => Profiled::Missing(outcomes.get(&i).cloned().unwrap_or_else(|| {
                        format!("not in the profile: the child did not reach it (see {})", raw.display())
                    })),
                    Err(why) => Profiled::Error(why.clone()),
                },
            };
            rows.push(counter_row(&context, experiment, &plan.points[i].key, row, state));
        }
    }
    table::write(input.out_dir, &rows)?;
    let count = |s: Status| rows.iter().filter(|r| r.status == s).count();
    let record = PassRecord {
        profiler: format!("{label} ({})", found.path.display()),
        commands,
        pass_s: started.elapsed().as_secs_f64(),
        timed_s: input.timed_s,
        points: rows.len(),
        ok: count(Status::Ok),
        no_kernel: count(Status::NoKernel),
        missing: count(Status::Missing),
        error: count(Status::Error),
    };
    write_json(&input.out_dir.join(PASS_RECORD), &record)?;
    Ok(record)
}

/// A row of an experiment's CSV, column → value.
type Row = BTreeMap<String, String>;

/// Each point's kernels (`Ok(None)`: not in the profile), or why the profile cannot be read at all.
type PerPoint = Result<Vec<Result<Option<Vec<KernelRecord>>, String>>, String>;

/// One ncu run of the child over `plan`.
fn profile_ncu(
    input: &PassInput,
    found: &Found,
    set: Set,
    plan: &Plan,
    plan_path: &Path,
    timeout: Duration,
    commands: &mut Vec<String>,
) -> PerPoint {
    let raw = input.out_dir.join(RAW_DIR);
    let csv = raw.join(format!("{}.ncu.csv", set.name()));
    let log = raw.join(format!("{}.log", set.name()));
    let _ = std::fs::remove_file(&csv);
    let mut args = ncu::args(&metrics::ncu_metrics(set), &csv);
    args.extend(child_command(input, plan_path));
    commands.push(command_line(&found.path, &args));
    run_child(&found.path, &args, &log, timeout)?;
    let text = std::fs::read_to_string(&csv).map_err(|e| {
        let log_text = std::fs::read_to_string(&log).unwrap_or_default();
        let why = ncu::diagnose(&log_text).unwrap_or_else(|| format!("see {}", log.display()));
        format!("ncu wrote no {} ({e}): {why}", csv.display())
    })?;
    let records = ncu::parse(&text, &csv.display().to_string()).map_err(|e| e.to_string())?;
    let windows = markers::windows(&records, plan.points.len()).map_err(|e| e.to_string())?;
    Ok(windows.into_iter().map(Ok).collect())
}

/// rocprofv3 runs of the child over `plan`, one per counter set, joined point by point.
fn profile_rocprof(
    input: &PassInput,
    found: &Found,
    set: Set,
    plan: &Plan,
    plan_path: &Path,
    timeout: Duration,
    commands: &mut Vec<String>,
) -> PerPoint {
    let raw = input.out_dir.join(RAW_DIR);
    let help = Command::new(&found.path)
        .arg("--help")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr));
    let pmc = help.as_deref().is_ok_and(rocprof::has_pmc_flag);
    let mut passes = Vec::new();
    for (n, counters) in metrics::rocprof_passes(set).iter().enumerate() {
        let name = format!("{}-pass-{}", set.name(), n + 1);
        let out = raw.join(&name);
        let _ = std::fs::remove_dir_all(&out);
        let input_kind = if pmc {
            CounterInput::Flag
        } else {
            let file = raw.join(format!("{name}.txt"));
            std::fs::write(&file, rocprof::input_file_text(counters))
                .map_err(|e| format!("{}: {e}", file.display()))?;
            CounterInput::File(file)
        };
        let mut args = rocprof::args(counters, &input_kind, &out, &name);
        args.extend(child_command(input, plan_path));
        commands.push(command_line(&found.path, &args));
        let log = raw.join(format!("{name}.log"));
        run_child(&found.path, &args, &log, timeout)?;
        let file = rocprof::find_output(&out).map_err(|e| format!("{e} ({})", log.display()))?;
        let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        let records = rocprof::parse(&text, &file.display().to_string()).map_err(|e| e.to_string())?;
        passes.push(markers::windows(&records, plan.points.len()).map_err(|e| e.to_string())?);
    }
    Ok((0..plan.points.len())
        .map(|i| {
            let of_point: Vec<Option<Vec<KernelRecord>>> = passes.iter().map(|p| p[i].clone()).collect();
            markers::join_passes(&of_point)
        })
        .collect())
}

/// The child's program and arguments, ending with the plan.
fn child_command(input: &PassInput, plan: &Path) -> Vec<OsString> {
    let mut args = vec![input.child.0.as_os_str().to_owned()];
    args.extend(input.child.1.iter().cloned());
    args.push("--counters-child".into());
    args.push(plan.as_os_str().to_owned());
    args
}

/// `program args...` as one line for people (not for a shell).
fn command_line(program: &Path, args: &[OsString]) -> String {
    std::iter::once(program.display().to_string())
        .chain(args.iter().map(|a| a.to_string_lossy().into_owned()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs `program args` with its output into `log`, stopping it past `timeout`; an error says why and where to
/// read more.
fn run_child(program: &Path, args: &[OsString], log: &Path, timeout: Duration) -> Result<(), String> {
    let file = std::fs::File::create(log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
    let err = file.try_clone().map_err(|e| format!("{}: {e}", log.display()))?;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => {
                return Err(format!("{} ended with {status}: see {}", program.display(), log.display()));
            }
            Ok(None) if started.elapsed() > timeout => {
                // Our own child, past the limit: stop it so the run can end.
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{} ran past {:.0} s and was stopped: see {}",
                    program.display(),
                    timeout.as_secs_f64(),
                    log.display()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(100)),
            Err(e) => return Err(format!("waiting for {}: {e}", program.display())),
        }
    }
}

/// The child's outcomes by point index (why a point was not profiled), from its outcomes file.
fn read_outcomes(plan: &Path) -> BTreeMap<usize, String> {
    let text = std::fs::read_to_string(outcomes_path(plan)).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Outcome>(l).ok())
        .filter(|o| !o.profiled)
        .map(|o| (o.index, format!("not profiled: {}", o.message)))
        .collect()
}

fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), CounterError> {
    let text = serde_json::to_string_pretty(value).map_err(|e| CounterError::Io {
        action: "cannot encode",
        path: path.to_path_buf(),
        source: std::io::Error::other(e),
    })?;
    crate::safe_fs::write_whole(path, (text + "\n").as_bytes()).map_err(|source| CounterError::Io {
        action: "cannot write",
        path: path.to_path_buf(),
        source,
    })
}

/// The plan of a child run, read from `path`.
pub fn read_plan(path: &Path) -> Result<Plan, CounterError> {
    let text = std::fs::read_to_string(path).map_err(|source| CounterError::Io {
        action: "cannot read",
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|e| CounterError::Parse {
        what: path.display().to_string(),
        problem: format!("not a counter plan: {e}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters::metrics::nvidia;
    use crate::experiments::registry;
    use crate::report::folder::ResultsFolder;
    use crate::report::lock::Wait;

    /// Rows from the committed H100 quick run (results/2026-11-25-h100-sm_90-quick-after-issue24), as fixtures of
    /// what the pass reads: occupancy's driver copy, a vector add and an LDS point; matmul's cuBLAS at 512.
    const OCCUPANCY: &str = "experiment,platform,device,arch,wave_size,sweep,config,kernel,group_size,groups,dynamic_lds_bytes,registers_per_item,elements,bytes,groups_per_cu,waves_per_cu,occupancy_pct,limiter,rounds,reps,launches_per_rep,timing,l2_resident,flop_count,byte_count,time_ms_median,time_ms_min,time_ms_max,gbps,max_rel_err,tolerance,status,message,key
occupancy,nvidia,NVIDIA H100 80GB HBM3,sm_90,32,copy,,device_copy,,,0,,16777216,134217728,,,,,,20,21,graph,false,0,134217728,0.046153142338707334,0.046006858348846436,0.04623085828054519,2908.0951198296934,0,0,ok,,copy/n=16777216
occupancy,nvidia,NVIDIA H100 80GB HBM3,sm_90,32,group_size,,occupancy_vector_add,256,65536,0,12,16777216,201326592,8,64,100.0,waves,62.061,20,14,graph,false,16777216,201326592,0.07409028496061053,0.07397485630852836,0.07452343191419329,2717.3143160001823,0,0,ok,,\"group_size/g=256,n=16777216\"
occupancy,nvidia,NVIDIA H100 80GB HBM3,sm_90,32,lds,,occupancy_lds,256,65536,16384,12,16777216,201326592,8,64,100.0,waves,62.061,20,14,graph,false,16777216,201326592,0.07528685671942575,0.07523428542273385,0.0754262890134539,2674.1266772537874,0,0,ok,,\"lds/bytes=16384,n=16777216\"
";
    const MATMUL: &str = "experiment,platform,device,arch,wave_size,kernel,tile_m,m,n,k,group_x,group_y,reference,split_k,groups,symbol,pick,fp32_vector_peak_tflops,fp32_matrix_peak_tflops,reps,launches_per_rep,timing,l2_resident,flop_count,byte_count,time_ms_median,time_ms_min,time_ms_max,gflops,max_rel_err,tolerance,status,message,key
matmul,nvidia,NVIDIA H100 80GB HBM3,sm_90,32,cublas,,512,512,512,,,gpu_f64,,,,,66.9,,20,66,graph,true,268435456,3145728,0.01254012097011913,0.012527515490849813,0.01256581779682275,21406.12970477986,0.00000032434034849073086,0.0000053947966093944364,ok,,\"cublas/m=512,n=512,k=512\"
";

    /// One launch of a stand-in table: kernel name, block size, grid size, metric values.
    type Launch<'a> = (&'a str, u64, u64, Vec<(&'a str, f64)>);

    /// A table in ncu's raw layout (FORMAT SAMPLE: made-up values) of `launches`.
    fn ncu_table(launches: &[Launch]) -> String {
        let mut metrics: Vec<&str> = launches.iter().flat_map(|l| l.3.iter().map(|m| m.0)).collect();
        metrics.sort();
        metrics.dedup();
        let quote = |cells: Vec<String>| cells.iter().map(|c| format!("\"{c}\"")).collect::<Vec<_>>().join(",");
        let ident = crate::counters::ncu::IDENTITY;
        let mut text = String::from("==PROF== Connected to process 7 (suite)\n");
        text.push_str(&quote(
            ident.iter().map(|s| s.to_string()).chain(metrics.iter().map(|m| m.to_string())).collect(),
        ));
        text.push('\n');
        text.push_str(&quote(vec![String::new(); ident.len() + metrics.len()]));
        text.push('\n');
        for (id, (name, block, grid, values)) in launches.iter().enumerate() {
            let mut cells: Vec<String> = vec![
                id.to_string(),
                "7".into(),
                "suite".into(),
                "h".into(),
                name.to_string(),
                "1".into(),
                "7".into(),
                format!("({block}, 1, 1)"),
                format!("({grid}, 1, 1)"),
                "0".into(),
                "9.0".into(),
            ];
            cells.extend(
                metrics.iter().map(|m| values.iter().find(|v| v.0 == *m).map(|v| v.1.to_string()).unwrap_or_default()),
            );
            text.push_str(&quote(cells));
            text.push('\n');
        }
        text
    }

    fn input<'a>(props: &'a Props, dir: &'a Path, child: Vec<&str>) -> PassInput<'a> {
        let experiments = vec![registry::results("matmul").unwrap(), registry::results("occupancy").unwrap()];
        PassInput {
            props,
            out_dir: dir,
            experiments,
            child: (PathBuf::from("/bin/suite"), child.into_iter().map(OsString::from).collect()),
            timed_s: 68.0,
        }
    }

    /// The pass end to end on a CPU: a stand-in `ncu` (a script, not the profiler) records its arguments and writes
    /// prepared tables in ncu's raw layout (format samples, no measurement), as the child's profiles would come
    /// back. Points are split by metric set, mapped by their markers, joined to their rows, written, and drawn.
    #[test]
    fn the_pass_profiles_each_metric_set_once_and_joins_the_counters_to_the_rows() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join("occupancy.csv"), OCCUPANCY).unwrap();
        std::fs::write(out.join("matmul.csv"), MATMUL).unwrap();
        let props = crate::device::Props { l2_bytes: Some(50 << 20), ..crate::occupancy_calculator::tests::h100() };
        let invocation = crate::report::run_json::Invocation::now(serde_json::json!({}), None);
        ResultsFolder::take(&out, None, "suite run", Wait::No).unwrap().record_invocation(&props, invocation).unwrap();
        let memory = ncu_table(&[
            // Point 0, the driver copy: its marker and no kernel.
            ("launch_empty", 1, markers::start_grid(0), vec![(nvidia::DURATION, 1500.0)]),
            ("launch_empty", 1, markers::start_grid(1), vec![(nvidia::DURATION, 1500.0)]),
            (
                "occupancy_vector_add",
                256,
                65_536,
                vec![
                    (nvidia::DURATION, 74_000.0),
                    (nvidia::ACHIEVED_PCT, 88.0),
                    (nvidia::THEORETICAL_PCT, 100.0),
                    (nvidia::DRAM_READ, 134_217_728.0),
                    (nvidia::DRAM_WRITE, 66_000_000.0),
                    (nvidia::L2_HIT_PCT, 0.5),
                ],
            ),
            // Point 2 (LDS) is not in the profile: the child says why in its outcomes.
        ]);
        let flop = ncu_table(&[
            ("launch_empty", 1, markers::start_grid(0), vec![(nvidia::DURATION, 1500.0)]),
            (
                "sm90_xmma_gemm_f32f32_f32f32_f32_nn_n",
                128,
                64,
                vec![
                    (nvidia::DURATION, 12_000.0),
                    (nvidia::ACHIEVED_PCT, 12.4),
                    (nvidia::DRAM_READ, 2_097_152.0),
                    (nvidia::DRAM_WRITE, 1_048_576.0),
                    (nvidia::FFMA, 134_217_728.0),
                    (nvidia::FADD, 0.0),
                    (nvidia::FMUL, 0.0),
                    (nvidia::DFMA, 0.0),
                    (nvidia::DADD, 0.0),
                    (nvidia::DMUL, 0.0),
                    (nvidia::DMMA, 0.0),
                    (nvidia::REGISTERS, 168.0),
                    (nvidia::SHARED_STATIC, 0.0),
                    (nvidia::SHARED_DYNAMIC, 98_304.0),
                ],
            ),
        ]);
        std::fs::write(dir.path().join("memory.csv"), memory).unwrap();
        std::fs::write(dir.path().join("flop.csv"), flop).unwrap();
        let args_log = dir.path().join("ncu-args");
        let fake = dir.path().join("ncu");
        std::fs::write(
            &fake,
            format!(
                "#!/bin/sh\necho \"$*\" >> {args}\nlog=; plan=\nwhile [ $# -gt 0 ]; do\n  case \"$1\" in\n    --log-file) \
                 log=$2; shift;;\n    --counters-child) plan=$2; shift;;\n  esac\n  shift\ndone\ncase \"$plan\" in\n  \
                 *memory.plan.json) cp {d}/memory.csv \"$log\"; echo '{{\"index\":2,\"profiled\":false,\"message\":\"could \
                 not prepare it: out of memory\"}}' > \"$plan.outcomes\";;\n  *flop.plan.json) cp {d}/flop.csv \"$log\";;\n\
                 esac\n",
                args = args_log.display(),
                d = dir.path().display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let before =
            (std::fs::read(out.join("occupancy.csv")).unwrap(), std::fs::read(out.join("matmul.csv")).unwrap());

        let input = input(&props, &out, vec!["run", "--out", "run"]);
        let found =
            Found { profiler: Profiler::Ncu, path: fake.clone(), version: "Version 2025.3.1.0 (stand-in)".into() };
        let record = run_pass(&input, |_| Ok(found)).unwrap();
        assert_eq!(
            (record.points, record.ok, record.no_kernel, record.missing, record.error),
            (4, 2, 1, 1, 0),
            "{record:?}"
        );
        assert_eq!(record.commands.len(), 2, "one profiler run per metric set");

        // One ncu run per set, with the clocks left alone, only the ranges profiled, each set's metrics, and the
        // child: this invocation's arguments, then its plan.
        let calls = std::fs::read_to_string(&args_log).unwrap();
        let calls: Vec<&str> = calls.lines().collect();
        assert_eq!(calls.len(), 2, "{calls:?}");
        for call in &calls {
            assert!(call.contains("--clock-control none --profile-from-start off"), "{call}");
            assert!(call.contains("/bin/suite run --out run --counters-child"), "{call}");
        }
        assert!(calls[0].contains("memory.plan.json") && !calls[0].contains(nvidia::FFMA), "{}", calls[0]);
        assert!(calls[1].contains("flop.plan.json") && calls[1].contains(nvidia::FFMA), "{}", calls[1]);

        let rows = table::read(&out).unwrap().unwrap();
        let of = |key: &str| rows.iter().find(|r| r["key"] == key).unwrap_or_else(|| panic!("no row {key}"));
        let copy = of("copy/n=16777216");
        assert_eq!((copy["status"].as_str(), copy["kernels"].as_str()), ("no_kernel", "0"));
        let add = of("group_size/g=256,n=16777216");
        assert_eq!(add["status"], "ok");
        assert_eq!(
            (add["occupancy_achieved_pct"].as_str(), add["occupancy_theoretical_pct"].as_str()),
            ("88.00", "100.00")
        );
        assert_eq!(add["theoretical_from"], "row");
        assert_eq!((add["dram_read_bytes"].as_str(), add["byte_count"].as_str()), ("134217728", "201326592"));
        assert_eq!(add["dram_over_counted"], format!("{:.4}", (134_217_728.0 + 66_000_000.0) / 201_326_592.0));
        assert_eq!(add["cache"], "flushed");
        let lds = of("lds/bytes=16384,n=16777216");
        assert_eq!(lds["status"], "missing");
        assert_eq!(lds["message"], "not profiled: could not prepare it: out of memory");
        let gemm = of("cublas/m=512,n=512,k=512");
        assert_eq!((gemm["status"].as_str(), gemm["experiment"].as_str()), ("ok", "matmul"));
        assert_eq!(gemm["fp32_vector_flop"], "268435456");
        assert_eq!(gemm["flop_count"], "268435456");
        assert_eq!(gemm["theoretical_from"], "calculator");
        assert!(gemm["profiler"].contains("2025.3.1.0"), "{}", gemm["profiler"]);

        // The timed rows are untouched; the pass is recorded beside them.
        let after = (std::fs::read(out.join("occupancy.csv")).unwrap(), std::fs::read(out.join("matmul.csv")).unwrap());
        assert!(before == after, "the pass changed the experiments' CSVs");
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join(PASS_RECORD)).unwrap()).unwrap();
        assert_eq!(json["timed_s"], 68.0);
        assert!(json["pass_s"].as_f64().unwrap() > 0.0);

        // The plots that read the counters.
        let drawn = draw(&input, &registry::roofline_roles());
        let names: Vec<String> = drawn.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert!(names.contains(&crate::report::roofline::DRAM_PNG.to_string()), "{names:?}");
        assert!(names.contains(&"occupancy-group-size-achieved.png".to_string()), "{names:?}");
        for path in &drawn {
            assert!(std::fs::metadata(path).unwrap().len() > 1000, "{}", path.display());
        }
        let summary = out.join("summary.md");
        std::fs::write(&summary, "# suite run\n").unwrap();
        append_summary(&summary, &Ok(record)).unwrap();
        let text = std::fs::read_to_string(&summary).unwrap();
        assert!(
            text.contains("## Counters\n\n2 of 4 points with counters (1 launch no kernel, 1 missing, 0 errors)"),
            "{text}"
        );
    }

    #[test]
    fn a_missing_profiler_is_a_message_and_the_run_keeps_its_rows() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("occupancy.csv"), OCCUPANCY).unwrap();
        let props = crate::occupancy_calculator::tests::h100();
        let input = input(&props, dir.path(), vec!["run"]);
        let empty = tempfile::tempdir().unwrap();
        let nowhere = |p: Profiler| {
            let path = empty.path().as_os_str().to_owned();
            let env = move |name: &str| (name == "PATH").then(|| path.clone());
            locate::find(p, &env, empty.path()).map(|path| Found { profiler: p, path, version: String::new() })
        };
        let why = run_pass(&input, nowhere).unwrap_err();
        assert!(why.starts_with("no Nsight Compute (ncu) found (tried: "), "{why}");
        assert!(why.contains("the run goes on without counters, and its timed rows are untouched"), "{why}");
        assert!(!dir.path().join(table::CSV).exists() && !dir.path().join(RAW_DIR).exists());
        assert_eq!(std::fs::read_to_string(dir.path().join("occupancy.csv")).unwrap(), OCCUPANCY);
        let summary = dir.path().join("summary.md");
        std::fs::write(&summary, "# run\n").unwrap();
        append_summary(&summary, &Err(why.clone())).unwrap();
        assert!(std::fs::read_to_string(&summary).unwrap().ends_with(&format!("## Counters\n\nNo counters: {why}\n")));
    }

    #[test]
    fn the_child_gets_this_invocations_arguments_without_counters() {
        let own = ["/x/suite", "--platform", "nvidia", "run", "matmul", "--sizes", "512", "--counters", "--out", "r"];
        let args: Vec<String> =
            child_args(own.iter().map(OsString::from)).iter().map(|a| a.to_string_lossy().into_owned()).collect();
        assert_eq!(args, ["--platform", "nvidia", "run", "matmul", "--sizes", "512", "--out", "r"]);
        let plan_path = Path::new("/r/counters-raw/memory.plan.json");
        assert_eq!(outcomes_path(plan_path), Path::new("/r/counters-raw/memory.plan.json.outcomes"));
    }

    #[test]
    fn a_profiler_that_fails_or_hangs_is_stopped_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        let err =
            run_child(Path::new("/bin/sh"), &["-c".into(), "echo bad; exit 3".into()], &log, Duration::from_secs(5))
                .unwrap_err();
        assert!(err.contains("exit status: 3") && err.contains(&log.display().to_string()), "{err}");
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "bad\n");
        let started = Instant::now();
        let err = run_child(Path::new("/bin/sh"), &["-c".into(), "sleep 30".into()], &log, Duration::from_millis(300))
            .unwrap_err();
        assert!(err.contains("ran past") && started.elapsed() < Duration::from_secs(10), "{err}");
    }
}
