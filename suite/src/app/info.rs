//! `suite info`: the host, the runtimes found and every device they see.

use std::fmt::Write as _;
use std::process::ExitCode;

use crate::code_objects;
use crate::device::{self, Platform, Props};
use crate::report::run_json::git_describe;

/// Appends formatted text to a command's output text.
macro_rules! outp {
    ($out:expr, $($arg:tt)*) => {{
        let _ = write!($out, $($arg)*);
    }};
}
use super::emit;

/// `suite info`: one block per platform; exit code 0 only when some GPU is visible.
pub fn info(only: Option<Platform>) -> ExitCode {
    let (text, code) = info_text(only);
    emit(&text);
    code
}

/// The text of `suite info` and its exit code.
pub fn info_text(only: Option<Platform>) -> (String, ExitCode) {
    let mut out = String::new();
    outln!(out, "suite {} (commit {})", env!("CARGO_PKG_VERSION"), git_describe());
    let mut any_device = false;
    for platform in Platform::ALL.into_iter().filter(|p| only.is_none_or(|o| o == *p)) {
        let survey = device::survey(platform);
        let blas_name = match platform {
            Platform::Amd => "rocBLAS",
            Platform::Nvidia => "cuBLAS",
        };
        outln!(out, "\n{} ({})", platform.name().to_uppercase(), platform.runtime());
        match &survey.runtime {
            Ok(rt) => outln!(
                out,
                "  runtime:  {} {} loaded from {}{}",
                platform.runtime(),
                rt.version,
                rt.library,
                if rt.driver_version.is_empty() { String::new() } else { format!(", driver {}", rt.driver_version) }
            ),
            Err(e) => outln!(out, "  runtime:  {}", indent(&e.to_string())),
        }
        match &survey.devices {
            Ok(devices) => {
                any_device |= !devices.is_empty();
                for p in devices {
                    outp!(out, "{}", describe_device(p));
                }
            }
            // The runtime line already says why when the library is missing; repeat only other reasons.
            Err(e) if survey.runtime.is_ok() => outln!(out, "  devices:  {}", indent(&e.to_string())),
            Err(_) => {}
        }
        match &survey.blas {
            Ok(path) => outln!(out, "  {blas_name}:  loaded from {path}"),
            Err(e) => outln!(out, "  {blas_name}:  {}", indent(&e.to_string())),
        }
        match code_objects::find(platform) {
            Ok(c) => outln!(out, "  compiler: {c}"),
            Err(e) => outln!(out, "  compiler: {}", indent(&e.to_string())),
        }
    }
    outp!(out, "{}", describe_host());
    if any_device {
        (out, ExitCode::SUCCESS)
    } else {
        outln!(out, "\nno GPU visible on any platform");
        (out, ExitCode::FAILURE)
    }
}

/// The host block of `suite info`: the memory this process may use (every figure, the smallest binds) and where
/// it runs (CPUs, GPU variables, Slurm).
pub(super) fn describe_host() -> String {
    let placement = crate::host::Placement::read();
    let memory = crate::host::HostMemory { figures: placement.host_memory.clone() };
    let gib = |b: u64| b as f64 / f64::from(1u32 << 30);
    let mut s = String::new();
    outln!(s, "\nHOST ({})", gethostname::gethostname().to_string_lossy());
    match memory.available() {
        Some(binding) => {
            outln!(
                s,
                "  memory:   {:.1} GiB available to this process, the smallest of:",
                gib(binding.available_bytes)
            );
            for f in &memory.figures {
                outln!(s, "            {:>7.1} GiB  {}", gib(f.available_bytes), f.source);
            }
        }
        None => outln!(s, "  memory:   not readable (no /proc/meminfo, cgroup or Slurm figure): not checked"),
    }
    outln!(
        s,
        "  CPUs:     {}{}",
        placement.cpus_allowed.as_deref().unwrap_or("not readable"),
        placement.cpu_mask.as_deref().map(|m| format!(" (mask {m})")).unwrap_or_default()
    );
    let gpus: Vec<String> = placement.gpu_variables.iter().map(|(k, v)| format!("{k}={v}")).collect();
    outln!(s, "  GPU vars: {}", if gpus.is_empty() { "none set".to_string() } else { gpus.join(" ") });
    if let Ok(job) = std::env::var("SLURM_JOB_ID") {
        let or_unknown = |v: &Option<String>| v.clone().unwrap_or_else(|| "?".into());
        outln!(
            s,
            "  Slurm:    job {job}, partition {}, node {}, task {}",
            or_unknown(&placement.slurm_partition),
            or_unknown(&placement.slurm_node),
            or_unknown(&placement.slurm_task)
        );
    }
    s
}

pub(super) fn indent(text: &str) -> String {
    text.replace('\n', "\n            ")
}

/// The device block of `suite info`.
pub fn describe_device(p: &Props) -> String {
    let mut s = String::new();
    let mib = |b: u64| b / (1 << 20);
    let kib = |b: u64| b / 1024;
    let opt = |v: Option<u32>, unit: &str| v.map(|v| format!("{v} {unit}")).unwrap_or_else(|| "not reported".into());
    let arch =
        if p.arch_full == p.arch.as_str() { p.arch_full.clone() } else { format!("{}, {}", p.arch, p.arch_full) };
    let _ = writeln!(s, "  device {}: {} ({arch})", p.ordinal, p.name);
    let _ = writeln!(s, "    wave size        {}", p.wave_size);
    let _ = writeln!(s, "    compute units    {}", p.cu_count);
    let _ = writeln!(
        s,
        "    per CU           {} items, {} groups, {} KiB LDS, {} registers",
        p.max_items_per_cu,
        p.max_groups_per_cu.map(|g| g.to_string()).unwrap_or_else(|| "?".into()),
        kib(p.lds_bytes_per_cu),
        p.registers_per_cu
    );
    let _ = writeln!(
        s,
        "    per group        {} items, {} KiB LDS ({} KiB opt-in)",
        p.max_group_size,
        kib(p.lds_bytes_per_group),
        kib(p.lds_bytes_per_group_optin)
    );
    let _ = writeln!(
        s,
        "    clocks           shader {}, memory {}",
        opt(p.clock_mhz, "MHz"),
        opt(p.memory_clock_mhz, "MHz")
    );
    let _ = writeln!(
        s,
        "    memory           {} MiB, bus {}, L2 {}",
        mib(p.memory_bytes),
        opt(p.memory_bus_bits, "bits"),
        p.l2_bytes.map(|b| format!("{} KiB", kib(b))).unwrap_or_else(|| "not reported".into())
    );
    let _ = writeln!(s, "    versions         {}; driver {}", p.runtime_version, p.driver_version);
    s
}
