//! Tests of the AMD device: the survey, opening, launch checks, argument packing and clock text.
use super::*;

/// Without an AMD GPU the survey names the runtime's version and `hipErrorNoDevice`; with one, it lists it.
#[test]
fn survey_reports_the_runtime_version_and_what_it_sees() {
    crate::test_deps::hip_runtime().unwrap_or_else(|missing| panic!("{missing}"));
    let survey = survey();
    assert_eq!(survey.platform, Platform::Amd);
    let runtime = survey.runtime.expect("the runtime loaded, so its version is readable");
    // The version is the runtime's own, in HIP's major.minor.patch form (5.2.21153 in Debian's package here
    // and in CI; 5.7.31921 was seen on the H100 machine's image).
    let parts: Vec<&str> = runtime.version.split('.').collect();
    assert!(parts.len() == 3 && parts.iter().all(|p| p.parse::<u32>().is_ok()), "{}", runtime.version);
    assert!(survey.blas.is_err() || survey.blas.as_ref().is_ok_and(|p| p.contains("rocblas")));
    match survey.devices {
        Ok(devices) => {
            assert!(!devices.is_empty(), "a device list without an error holds at least one device");
            for d in &devices {
                assert_eq!((d.platform, d.arch.platform()), (Platform::Amd, Platform::Amd), "{d:?}");
            }
        }
        Err(devices) => {
            let text = devices.to_string();
            let Error::NoDevice { runtime: "HIP", vendor: "AMD", code_name, version, .. } = &devices else {
                panic!("expected NoDevice, got {devices:?}")
            };
            assert_eq!(code_name, "hipErrorNoDevice");
            assert_eq!(version, &runtime.version);
            let head = format!("HIP runtime {version} loaded: no AMD GPU visible (hipErrorNoDevice): ");
            assert!(text.starts_with(&head), "{text}");
        }
    }
}

#[test]
fn open_gives_an_amd_device_or_no_device() {
    crate::test_deps::hip_runtime().unwrap_or_else(|missing| panic!("{missing}"));
    match open(0) {
        Ok(dev) => assert_eq!(dev.props().platform, Platform::Amd),
        Err(Error::NoDevice { code_name, .. }) => assert_eq!(code_name, "hipErrorNoDevice"),
        Err(e) => panic!("expected an AMD device or NoDevice, got {e}"),
    }
    // An ordinal past any node's devices is refused either way, never opened.
    assert!(open(4096).is_err());
}

fn gfx90a_props() -> Props {
    Props {
        platform: Platform::Amd,
        ordinal: 0,
        name: "AMD Instinct MI250X".into(),
        arch: Arch::parse("gfx90a").expect("valid"),
        arch_full: "gfx90a:sramecc+:xnack-".into(),
        wave_size: WaveSize(64),
        cu_count: 110,
        max_items_per_cu: 2048,
        max_group_size: 1024,
        max_groups_per_cu: None,
        lds_bytes_per_cu: 65536,
        lds_bytes_per_group: 65536,
        lds_bytes_per_group_optin: 65536,
        registers_per_cu: 65536,
        clock_mhz: Some(1700),
        memory_clock_mhz: Some(1600),
        memory_bus_bits: Some(4096),
        l2_bytes: Some(8 << 20),
        memory_bytes: 64 << 30,
        runtime_version: "HIP 6.3.42134 (ROCm 6; gcnArchName via hipGetDevicePropertiesR0600)".into(),
        driver_version: "HIP driver API 6.3.42134".into(),
        test_runtime: false,
    }
}

fn kernel(max_group_size: u32, static_lds_bytes: u32) -> Kernel {
    Kernel {
        name: "k".into(),
        attrs: KernelAttrs { max_group_size, static_lds_bytes, ..KernelAttrs::default() },
        param_sizes: None,
        inner: Arc::new(()),
    }
}

#[test]
fn launches_are_checked_against_kernel_and_device() {
    let props = gfx90a_props();
    let cfg = |grid: [u32; 3], group: [u32; 3], lds: u32| LaunchConfig { grid, group, dynamic_lds_bytes: lds };
    let cases = [
        (kernel(1024, 0), cfg([1, 1, 1], [64, 1, 1], 0), None),
        (kernel(1024, 0), cfg([0, 1, 1], [64, 1, 1], 0), Some("an empty grid")),
        (kernel(1024, 0), cfg([1, 1, 1], [64, 0, 1], 0), Some("every group dimension")),
        (kernel(256, 0), cfg([1, 1, 1], [512, 1, 1], 0), Some("groups of 512 items: gfx90a allows at most 256")),
        (kernel(0, 0), cfg([1, 1, 1], [32, 32, 2], 0), Some("groups of 2048 items")),
        (kernel(1024, 0), cfg([1 << 23, 1, 1], [1024, 1, 1], 0), Some("along x")),
        (kernel(1024, 32768), cfg([1, 1, 1], [64, 1, 1], 32768), None),
        (kernel(1024, 32768), cfg([1, 1, 1], [64, 1, 1], 32769), Some("65537 bytes of LDS")),
    ];
    for (k, c, want) in cases {
        let got = check_launch(&props, &k, &c);
        match want {
            None => assert!(got.is_ok(), "{c:?}: {got:?}"),
            Some(part) => {
                let text = got.expect_err("must be refused").to_string();
                assert!(text.starts_with("kernel `k`: cannot launch "), "{text}");
                assert!(text.contains(part), "{c:?}: {text}");
            }
        }
    }
}

#[test]
fn arguments_sit_at_the_start_of_aligned_slots() {
    let values = pack_args(&[Arg::I32(-2), Arg::F32(1.5), Arg::Ptr(0xdead_beef_0000), Arg::F64(2.0)]);
    assert_eq!(values.len(), 4);
    assert_eq!(&values[0].to_ne_bytes()[..4], &(-2i32).to_ne_bytes());
    assert_eq!(&values[1].to_ne_bytes()[..4], &1.5f32.to_ne_bytes());
    assert_eq!(values[2], 0xdead_beef_0000);
    assert_eq!(values[3], 2.0f64.to_bits());
}

#[test]
fn clocks_and_driver_text() {
    assert_eq!(khz_to_mhz(Some(1_700_000)), Some(1700));
    assert_eq!(khz_to_mhz(Some(1_599_600)), Some(1600));
    assert_eq!(positive(Some(0)), None);
    assert_eq!(positive(Some(-3)), None);
    assert_eq!(positive(None), None);
    let v = HipVersion::from_raw(60342134);
    assert_eq!(driver_text(v, Some("6.8.5".into())), "amdgpu 6.8.5; HIP driver API 6.3.42134");
    assert_eq!(driver_text(v, None), "HIP driver API 6.3.42134");
    assert_eq!(driver_text(None, None), "unknown");
}

/// Compiles the smoke kernel for GPU 0 with the node's compiler (hipcc for a gfx device; nvcc for the CUDA
/// device behind the HIP-over-CUDA test runtime), then exercises every device operation on it.
#[test]
#[ignore = "needs an AMD GPU, or an NVIDIA GPU with ROCM_PATH at the HIP-over-CUDA test runtime (scripts/gpu-check.sh)"]
fn gpu_every_operation() {
    let dev = open(0).expect("an AMD GPU, or the HIP-over-CUDA test runtime on an NVIDIA GPU");
    let props = dev.props().clone();
    let over_cuda = Hip::load().expect("loaded").test_runtime().is_some();
    // ROCm answers with a gfx architecture; only the test runtime may answer with a CUDA one, and it must say
    // so in every record.
    assert_eq!(props.arch.platform(), if over_cuda { Platform::Nvidia } else { Platform::Amd }, "{props:?}");
    assert_eq!(props.runtime_version.contains("HIP over CUDA test runtime"), over_cuda, "{props:?}");
    assert_eq!(dev.blas().is_ok_and(|b| b.contains("HIP over CUDA test runtime")), over_cuda);
    assert!(props.wave_size.0 == 32 || props.wave_size.0 == 64, "{props:?}");
    assert!(props.cu_count > 0 && props.lds_bytes_per_cu >= props.lds_bytes_per_group, "{props:?}");
    // Memory: upload, fill, device copy, download, at an odd size.
    let n = 1_000_003usize;
    let host: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let a = dev.upload(&host).expect("upload");
    let b = dev.alloc_buffer::<f32>(n).expect("alloc");
    dev.fill_bytes(b.raw(), 0).expect("fill");
    assert!(dev.download(&b).expect("download").iter().all(|&x| x == 0.0));
    dev.copy_on_device(a.raw(), b.raw(), a.bytes()).expect("d2d");
    assert_eq!(dev.download(&b).expect("download"), host);
    let (free, _) = dev.memory_info().expect("meminfo");
    assert!(matches!(dev.alloc(usize::try_from(free).unwrap_or(usize::MAX) + 1), Err(Error::OutOfMemory { .. })));

    // Kernels: build smoke.hip for this device through the suite's kernel store, load, look up, launch, time.
    let store = crate::code_objects::KernelStore::new(None);
    let src = crate::code_objects::source("smoke").expect("smoke is embedded");
    let object = store.code_object_for_device(src, &props.arch, &props.arch_full).expect("smoke builds");
    let module = dev.load_module(&object.bytes).expect("load");
    assert!(matches!(dev.kernel(&module, "no_such_kernel"), Err(Error::KernelNotFound { .. })));
    if over_cuda {
        // Not a code object: the CUDA driver's refusal arrives as HIP's, then as the suite's clear error.
        let junk = dev.load_module(b"not a code object, not a cubin either");
        assert!(matches!(junk, Err(Error::BadCodeObject { .. })), "{:?}", junk.err());
    }
    let triad = dev.kernel(&module, "smoke_triad").expect("smoke_triad");
    drop(module); // the kernel keeps the module loaded
    let c = dev.upload(&vec![2.0f32; n]).expect("upload");
    let out_buf = dev.alloc_buffer::<f32>(n).expect("alloc");
    let groups = u32::try_from(n.div_ceil(256)).expect("fits");
    let args = [out_buf.arg(), a.arg(), c.arg(), Arg::F32(3.0), Arg::U32(u32::try_from(n).expect("fits"))];
    let ms = dev.time_ms(&mut || dev.launch(&triad, &LaunchConfig::linear(groups, 256), &args)).expect("timed launch");
    assert!(ms > 0.0);
    let got = dev.download(&out_buf).expect("download");
    assert!(got.iter().enumerate().all(|(i, &x)| x == i as f32 + 6.0));
    assert!(dev.occupancy_groups_per_cu(&triad, 256, 0).expect("occupancy") > 0);
    assert!(matches!(dev.launch(&triad, &LaunchConfig::linear(0, 256), &args), Err(Error::BadLaunch { .. })));
    dev.synchronize().expect("sync");

    // Graphs: three launches captured once, nothing run while capturing, then replayed whole, twice.
    dev.fill_bytes(out_buf.raw(), 0).expect("fill");
    let scaled = [out_buf.arg(), a.arg(), c.arg(), Arg::F32(5.0), Arg::U32(u32::try_from(n).expect("fits"))];
    let replay = dev
        .capture(3, &mut || dev.launch(&triad, &LaunchConfig::linear(groups, 256), &scaled))
        .expect("capture")
        .expect("HIP graphs are bound");
    assert!(dev.download(&out_buf).expect("download").iter().all(|&x| x == 0.0), "capturing ran the kernel");
    let ms = dev.time_ms(&mut || replay.launch()).expect("replay");
    replay.launch().expect("replay again");
    assert!(ms > 0.0);
    let got = dev.download(&out_buf).expect("download");
    assert!(got.iter().enumerate().all(|(i, &x)| x == i as f32 + 10.0));
    drop(replay);
    // A capture whose work fails ends the capture: the stream still works after it.
    let failed = dev.capture(2, &mut || dev.launch(&triad, &LaunchConfig::linear(0, 256), &scaled));
    assert!(matches!(failed, Err(Error::BadLaunch { .. })), "{:?}", failed.err());
    dev.launch(&triad, &LaunchConfig::linear(groups, 256), &args).expect("launch after a failed capture");
    dev.synchronize().expect("sync");

    // rocBLAS SGEMM at an odd size against a host reference (every ROCm install ships rocBLAS).
    {
        dev.blas().expect("rocBLAS on an AMD GPU node");
        let (m, k, nn) = (33usize, 17usize, 29usize);
        let ha: Vec<f32> = (0..m * k).map(|i| (i % 7) as f32).collect();
        let hb: Vec<f32> = (0..k * nn).map(|i| (i % 5) as f32 - 2.0).collect();
        let (da, db) = (dev.upload(&ha).expect("A"), dev.upload(&hb).expect("B"));
        let dc = dev.alloc_buffer::<f32>(m * nn).expect("C");
        dev.gemm(Precision::F32, [m, nn, k], da.raw(), db.raw(), dc.raw()).expect("sgemm");
        let hc = dev.download(&dc).expect("download");
        for i in 0..m {
            for j in 0..nn {
                let want: f32 = (0..k).map(|p| ha[i * k + p] * hb[p * nn + j]).sum();
                assert_eq!(hc[i * nn + j], want, "C[{i}][{j}]");
            }
        }
    }
}
