//! Tests of the sweep, its pairing, derived table, plots and headlines, from rows written by hand.

use super::*;
use crate::experiments::pt::derived::speedup_csv;
use crate::experiments::pt::headlines::{barrier_headlines, headlines};
use crate::experiments::pt::pairing::CsvRow;

#[test]
fn the_default_sweep_has_unique_keys_and_pairs_for_every_pt_row() {
    let specs = PtSweep::default().specs();
    let keys: std::collections::BTreeSet<String> = specs.iter().map(Spec::key).collect();
    assert_eq!(keys.len(), specs.len(), "keys are unique");
    // Every PT row outside the queue study and the device-clock sync/forest rows has a non-PT partner.
    for s in &specs {
        if s.variant() == Variant::NonPt || matches!(s, Spec::Sync { study: true, .. } | Spec::RoundTrip { .. }) {
            continue;
        }
        let partner = specs.iter().any(|o| {
            o.variant() == Variant::NonPt
                && o.use_case() == s.use_case()
                && o.clock() == s.clock()
                && match (o, s) {
                    (
                        Spec::Sync { items: a, fmas: f, flavour: x, .. },
                        Spec::Sync { items: b, fmas: g, flavour: y, .. },
                    ) => a == b && f == g && x == y,
                    (Spec::Forest { levels: a, inputs: i, .. }, Spec::Forest { levels: b, inputs: j, .. }) => {
                        a == b && i == j
                    }
                    (Spec::Jacobi { n: a, steps: x, .. }, Spec::Jacobi { n: b, steps: y, per_cu, .. }) => {
                        a == b && x == y && *per_cu == PerCu::Max
                    }
                    (Spec::Reduce { n: a, .. }, Spec::Reduce { n: b, .. })
                    | (Spec::Chain { n: a, .. }, Spec::Chain { n: b, .. }) => a == b,
                    _ => false,
                }
        });
        // Non-PT sync and forest sequences hold a host readback: they have no device-clock rows. The barrier
        // alone and the PT rows at fewer groups per CU are read as costs per step, not as speedups.
        let readback = matches!(s, Spec::Sync { .. } | Spec::Forest { .. }) && s.clock() == ClockKind::Device;
        let unpaired = matches!(s, Spec::Barrier { .. } | Spec::Jacobi { per_cu: PerCu::Groups(_), .. });
        assert_eq!(partner, !readback && !unpaired, "{}", s.key());
    }
    let only: PtSweep = PtSweep { use_cases: vec!["jacobi".into()], ..PtSweep::default() };
    assert!(only.specs().iter().all(|s| s.use_case() == "jacobi"));
}

fn row(pairs: &[(&str, &str)]) -> CsvRow {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn sync_row(variant: &str, items: &str, fmas: &str, ms: &str, clock: &str) -> CsvRow {
    row(&[
        ("device", "NVIDIA H100 80GB HBM3"),
        ("arch", "sm_90"),
        ("wave_size", "32"),
        ("use_case", "sync"),
        ("variant", variant),
        ("queue", if variant == "pt" { "group" } else { "" }),
        ("flavour", "ci"),
        ("items", items),
        ("fmas", fmas),
        ("levels", ""),
        ("steps", ""),
        ("clock", clock),
        ("time_ms_median", ms),
        ("gitems_per_s", "1"),
        ("status", "ok"),
    ])
}

#[test]
fn speedups_pair_rows_by_their_parameters_whatever_file_they_came_from() {
    // Rows of one pair in either order, as two shards would write them; a failed row and a device-clock row
    // without a partner pair with nothing.
    let mut rows = vec![
        sync_row("pt", "1024", "16", "0.010", "host"),
        sync_row("non_pt", "4096", "16", "0.030", "host"),
        sync_row("non_pt", "1024", "16", "0.040", "host"),
        sync_row("pt", "4096", "16", "0.060", "host"),
        sync_row("pt", "1024", "16", "0.005", "device"),
    ];
    let mut failed = sync_row("pt", "4096", "64", "0.01", "host");
    failed.insert("status".into(), "fail".into());
    rows.push(failed);
    rows.push(sync_row("non_pt", "4096", "64", "0.02", "host"));
    let p = pairs(&rows);
    assert_eq!(p.len(), 2);
    let at = |items: f64| p.iter().find(|p| p.items == items).unwrap();
    assert_eq!(at(1024.0).speedup(), 4.0);
    assert_eq!(at(4096.0).speedup(), 0.5);
    let csv = speedup_csv(&p);
    assert!(csv.starts_with("use_case,variant,flavour,items,fmas,levels,steps,clock,non_pt_ms,pt_ms,speedup\n"));
    assert!(csv.contains("sync,pt,ci,1024,16,0,0,host,0.04,0.01,4\n"), "{csv}");
}

#[test]
fn plots_and_the_speedup_table_come_from_the_rows() {
    let dir = tempfile::tempdir().unwrap();
    let mut rows = Vec::new();
    for items in ["1024", "4096"] {
        for fmas in ["1", "16", "256"] {
            rows.push(sync_row("non_pt", items, fmas, "0.04", "host"));
            rows.push(sync_row("pt", items, fmas, "0.02", "host"));
        }
    }
    for (part, ms) in [("launch", "0.008"), ("readback", "0.012"), ("full", "0.030")] {
        rows.push(row(&[
            ("device", "H100"),
            ("arch", "sm_90"),
            ("wave_size", "32"),
            ("use_case", "roundtrip"),
            ("variant", "non_pt"),
            ("queue", part),
            ("time_ms_median", ms),
            ("status", "ok"),
        ]));
    }
    let plots = plots(&rows);
    let names: Vec<&str> = plots.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["pt-sync-ci.png", "pt-roundtrip.png"]);
    let (_, fig5) = &plots[0];
    assert!(fig5.title.contains("NVIDIA H100 80GB HBM3") && fig5.title.contains("warp32"), "{}", fig5.title);
    // One line per item count plus the 1.0 reference.
    assert_eq!(fig5.series.len(), 3);
    assert_eq!(fig5.series[0].points, vec![(1.0, 2.0), (16.0, 2.0), (256.0, 2.0)]);
    assert_eq!(fig5.series[2].points, vec![(1.0, 1.0), (256.0, 1.0)]);
    // The speedup table is a derived table (written by the runner, `suite plot` and `suite merge`), not a plot's
    // side effect.
    let tables = PtResults.derived_tables(&rows, dir.path());
    assert_eq!(tables.len(), 1);
    assert_eq!(tables[0].0, "pt-speedup.csv");
    assert_eq!(tables[0].1.lines().count(), 7);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing written by plots or derived_tables");
    let failed: Vec<CsvRow> = rows
        .iter()
        .cloned()
        .map(|mut r| {
            r.insert("status".into(), "fail".into());
            r
        })
        .collect();
    assert!(PtResults.derived_tables(&failed, dir.path()).is_empty(), "no verified row: no table");
    assert_eq!(
        headlines(&rows),
        [
            "bare round trip (launch, 4-byte readback, relaunch, sync): 30.0 µs",
            "sync, pt vs non_pt (host clock): speedup 2.00x at all 6 points (items 2^10..2^12, fmas 1..256)",
        ]
    );
    for (name, plot) in &plots {
        crate::report::plot::render_png(plot, &dir.path().join(name), 800, 500).unwrap();
    }
}

#[test]
fn groups_per_cu_give_grids_below_the_maximal_launch_and_keys_of_their_own() {
    assert_eq!(PerCu::parse("max"), Some(PerCu::Max));
    assert_eq!(PerCu::parse(" 4"), Some(PerCu::Groups(4)));
    assert_eq!(PerCu::parse("0"), None);
    assert_eq!(PerCu::parse("four"), None);
    // An H200: 132 SMs, 8 groups of 256 per SM at the maximal launch.
    assert_eq!(PerCu::Max.grid(132, 1056), Ok(1056));
    assert_eq!(PerCu::Groups(1).grid(132, 1056), Ok(132));
    assert_eq!(PerCu::Groups(4).grid(132, 1056), Ok(528));
    assert!(PerCu::Groups(8).grid(132, 1056).unwrap_err().contains("the `max` row measures it"));
    assert!(PerCu::Groups(9).grid(132, 1056).unwrap_err().contains("more than the 8 per CU"));
    // The maximal launch keeps the key earlier runs wrote, so `suite compare` joins them.
    let at = |per_cu| Spec::Jacobi { variant: Variant::PtSoft, n: 65536, steps: 100, clock: ClockKind::Device, per_cu };
    assert_eq!(at(PerCu::Max).key(), "jacobi/pt_soft/n=65536,steps=100/device");
    assert_eq!(at(PerCu::Groups(2)).key(), "jacobi/pt_soft/n=65536,steps=100,per_cu=2/device");
    let alone = Spec::Barrier { variant: Variant::NonPt, steps: 100, per_cu: PerCu::Groups(1) };
    assert_eq!(alone.key(), "barrier/non_pt/steps=100,per_cu=1/device");
    assert_eq!((alone.use_case(), alone.clock()), ("barrier", ClockKind::Device));
    // The sweep: per size and steps, non-PT and both PT variants at the maximal launch on both clocks, the PT
    // variants at each smaller count on the device clock; the barrier alone for all three at every count.
    let sweep = PtSweep {
        use_cases: vec!["jacobi".into(), "barrier".into()],
        jacobi_sizes: vec![1 << 16],
        steps: vec![100],
        ..PtSweep::default()
    };
    let specs = sweep.specs();
    assert_eq!(specs.iter().filter(|s| s.use_case() == "jacobi").count(), 6 + 2 * 3);
    assert_eq!(specs.iter().filter(|s| s.use_case() == "barrier").count(), 3 * 4);
    assert!(specs.iter().all(|s| s.per_cu().is_some() || s.variant() == Variant::NonPt));
}

fn sync_row_at(use_case: &str, variant: &str, n: &str, per_cu: &str, groups: &str, ms: &str) -> CsvRow {
    row(&[
        ("device", "NVIDIA H200"),
        ("arch", "sm_90"),
        ("wave_size", "32"),
        ("use_case", use_case),
        ("variant", variant),
        ("items", n),
        ("steps", "100"),
        ("groups", groups),
        ("max_groups", "1056"),
        ("groups_per_cu", per_cu),
        ("clock", "device"),
        ("time_ms_median", ms),
        ("status", "ok"),
    ])
}

#[test]
fn global_sync_rows_become_costs_per_step_headlines_and_a_plot_by_groups_per_cu() {
    let mut rows = Vec::new();
    for (k, groups, soft, coop, relaunch) in
        [("1", "132", "0.100", "0.098", "0.054"), ("8", "1056", "0.150", "0.222", "0.110")]
    {
        rows.push(sync_row_at("barrier", "pt_soft", "0", k, groups, soft));
        rows.push(sync_row_at("barrier", "pt_coop", "0", k, groups, coop));
        rows.push(sync_row_at("barrier", "non_pt", "0", k, groups, relaunch));
        rows.push(sync_row_at("jacobi", "pt_soft", "65536", k, groups, "0.200"));
        rows.push(sync_row_at("jacobi", "pt_coop", "65536", k, groups, "0.270"));
    }
    rows.push(sync_row_at("jacobi", "non_pt", "65536", "", "256", "0.115"));
    let costs = step_costs(&rows);
    assert_eq!(costs.len(), 11);
    let soft_max = costs.iter().find(|c| c.use_case == "barrier" && c.variant == "pt_soft" && c.maximal).unwrap();
    assert_eq!((soft_max.per_cu, soft_max.steps), (Some(8), 100));
    assert!((soft_max.us - 1.5).abs() < 1e-9);
    assert_eq!(
        barrier_headlines(&costs),
        [
            "barrier alone (100 steps), µs per step at the maximal launch (device clock): software barrier 1.50, \
             grid barrier (cooperative) 2.22, relaunch (graph) 1.10",
            "barrier alone (100 steps), µs per step at 1/8 groups per CU: software barrier 1.00/1.50; grid \
             barrier (cooperative) 0.98/2.22; relaunch (graph) 0.54/1.10",
            "Jacobi n = 65536 (100 steps), µs per step at the maximal launch (device clock): software barrier \
             2.00, grid barrier (cooperative) 2.70, relaunch (graph) 1.15",
            "Jacobi n = 65536 (100 steps), µs per step at 1/8 groups per CU: software barrier 2.00/2.00; grid \
             barrier (cooperative) 2.70/2.70",
        ]
    );
    // Only the maximal launch pairs with non-PT; the barrier alone pairs with nothing.
    let p = pairs(&rows);
    assert_eq!(p.len(), 2, "{p:?}");
    let dir = tempfile::tempdir().unwrap();
    let plots = plots(&rows);
    let (name, plot) = plots.iter().find(|(n, _)| n.starts_with("pt-barrier")).unwrap();
    assert_eq!(name, "pt-barrier-n65536.png");
    // Three barrier-alone lines, two Jacobi lines, Jacobi's relaunch as a reference.
    assert_eq!(plot.series.len(), 6);
    assert_eq!(plot.series[0].points, vec![(1.0, 1.0), (8.0, 1.5)]);
    assert_eq!(plot.series[5].points, vec![(1.0, 1.15), (8.0, 1.15)]);
    for (name, plot) in &plots {
        crate::report::plot::render_png(plot, &dir.path().join(name), 1000, 600).unwrap();
    }
}

#[test]
fn speedup_headlines_name_the_parameters_of_their_ends_and_the_ranges_swept() {
    let mut rows = Vec::new();
    for (items, fmas, non_pt, pt, flavour) in [
        ("8192", "1", "0.080", "0.100", "ci"),
        ("8192", "64", "0.080", "0.040", "cmi"),
        ("524288", "1", "0.310", "0.100", "ci"),
        ("524288", "64", "0.200", "0.100", "cmi"),
    ] {
        for (variant, ms) in [("non_pt", non_pt), ("pt", pt)] {
            let mut r = sync_row(variant, items, fmas, ms, "host");
            r.insert("flavour".into(), flavour.into());
            rows.push(r);
        }
    }
    let mut one = sync_row("non_pt", "1000", "4", "0.03", "device");
    one.insert("use_case".into(), "reduce".into());
    let mut pt = one.clone();
    pt.insert("variant".into(), "pt".into());
    pt.insert("time_ms_median".into(), "0.01".into());
    rows.extend([one, pt]);
    assert_eq!(
        headlines(&rows),
        [
            "reduce, pt vs non_pt (device clock): speedup 3.00x at 1 point (n 1000)",
            "sync, pt vs non_pt (host clock): speedup 0.80x (items 2^13, fmas 1, ci) to 3.10x (items 2^19, fmas 1, \
             ci) over 4 points (items 2^13..2^19, fmas 1..64, ci/cmi)",
        ]
    );
}

#[test]
fn every_queue_series_has_its_own_style_and_lines_on_each_other_are_named() {
    let mut rows = Vec::new();
    for (items, fmas, rates) in [
        ("4194304", "1", [("item", "30.1"), ("wave", "30.2"), ("group", "84.8"), ("static", "104.5")]),
        ("4194304", "16", [("item", "30.0"), ("wave", "30.1"), ("group", "84.7"), ("static", "104.2")]),
        ("65536", "1", [("item", "5.1"), ("wave", "5.0"), ("group", "9.9"), ("static", "11.6")]),
    ] {
        for (queue, rate) in rates {
            rows.push(row(&[
                ("device", "NVIDIA H100 80GB HBM3"),
                ("arch", "sm_90"),
                ("wave_size", "32"),
                ("use_case", "queue"),
                ("variant", "pt"),
                ("queue", queue),
                ("items", items),
                ("fmas", fmas),
                ("gitems_per_s", rate),
                ("status", "ok"),
            ]));
        }
    }
    let plots = plots(&rows);
    let (_, queue) = plots.iter().find(|(n, _)| n == "pt-queue.png").unwrap();
    // Three measured lines and three static schedules, every one a line (each takes its own colour and marker).
    assert_eq!(queue.series.len(), 6);
    assert!(queue.series.iter().all(|s| s.kind == crate::report::plot::SeriesKind::Line));
    assert_eq!(queue.series[0].label, "atomic pops, 2^16 items, 1 FMAs per item");
    assert_eq!(queue.series[3].label, "static schedule (no atomics), 2^16 items, 1 FMAs per item");
    assert_eq!(queue.series[3].points, vec![(1.0, 11.6), (32.0, 11.6), (256.0, 11.6)]);
    let note = queue.note.as_deref().unwrap_or_default();
    assert!(
        note.contains(
            "\"atomic pops, 2^22 items, 16 FMAs per item\" lies on \"atomic pops, 2^22 items, 1 FMAs per item\""
        ),
        "{note}"
    );
    assert!(note.contains("\"static schedule (no atomics), 2^22 items, 16 FMAs per item\" lies on"), "{note}");
    assert!(!note.contains("2^16 items, 1 FMAs per item\" lies"), "{note}");
    let dir = tempfile::tempdir().unwrap();
    crate::report::plot::render_png(queue, &dir.path().join("pt-queue.png"), 1600, 1000).unwrap();
}

#[test]
fn the_command_line_is_the_sweep_with_its_defaults_quick_preset_and_checks() {
    // The defaults and the quick preset are the values of the sweep before it was its own command line, so
    // resume and merge accept results written then.
    let old_defaults = PtSweep {
        use_cases: USE_CASES.iter().map(|s| s.to_string()).collect(),
        items: vec![1 << 10, 1 << 13, 1 << 16, 1 << 19, 1 << 22],
        fmas: FMAS.to_vec(),
        levels: vec![4, 8, 12],
        inputs: vec![1, 32, 1024],
        forest_fmas: 16,
        sizes: vec![1 << 12, 1 << 16, 1 << 20, 1 << 24],
        jacobi_sizes: vec![1 << 12, 1 << 16, 1 << 20],
        steps: vec![10, 100, 1000],
        queue_items: vec![1 << 16, 1 << 22],
        queue_fmas: vec![1, 16],
        chunks: vec![4, 16],
        groups_per_cu: vec![PerCu::Groups(1), PerCu::Groups(2), PerCu::Groups(4), PerCu::Max],
        barrier_counters: BarrierCounters::PerGroupPerCu,
        spin_limit: 1 << 22,
    };
    assert_eq!(PtSweep::default(), old_defaults);
    let quick = PtSweep::quick();
    assert_eq!(
        (quick.items.clone(), quick.fmas.clone(), quick.levels.clone()),
        (vec![1 << 13, 1 << 19], vec![1, 64], vec![8])
    );
    assert_eq!(
        (quick.inputs.clone(), quick.sizes.clone(), quick.jacobi_sizes.clone()),
        (vec![1, 1024], vec![1 << 16, 1 << 24], vec![1 << 16])
    );
    assert_eq!(
        (quick.steps.clone(), quick.queue_items.clone(), quick.queue_fmas.clone(), quick.chunks.clone()),
        (vec![100], vec![1 << 22], vec![1], vec![4])
    );
    assert_eq!(quick.groups_per_cu, old_defaults.groups_per_cu);
    let json = serde_json::to_value(&old_defaults).unwrap();
    assert_eq!(PtSweep::default().options(&crate::occupancy_calculator::tests::h100()), json);
    assert_eq!(json["groups_per_cu"], serde_json::json!([{"Groups": 1}, {"Groups": 2}, {"Groups": 4}, "Max"]));
    assert_eq!(json["barrier_counters"], "PerGroupPerCu");

    let build = |args: &[&str]| -> Result<serde_json::Value, String> {
        let cmd = (ENTRY.flags)(clap::Command::new("pt"));
        let matches =
            cmd.try_get_matches_from(std::iter::once("pt").chain(args.iter().copied())).map_err(|e| e.to_string())?;
        (ENTRY.sweep)(&matches)
            .map(|e| e.options(&crate::occupancy_calculator::tests::h100()))
            .map_err(|e| e.to_string())
    };
    let options = build(&["--groups-per-cu", "1,max", "--barrier-counters", "8"]).unwrap();
    assert_eq!(options["groups_per_cu"], serde_json::json!([{"Groups": 1}, "Max"]));
    assert_eq!(options["barrier_counters"], serde_json::json!({"Fixed": 8}));
    let options = build(&["--barrier-counters", "auto", "--items", "2^10,5000", "--fmas", "-4"]).unwrap();
    assert_eq!(options["barrier_counters"], "PerGroupPerCu");
    assert_eq!(options["items"], serde_json::json!([1024, 5000]));
    assert_eq!(options["fmas"], serde_json::json!([-4]), "a negative count is an invalid row, not a parse error");
    for (args, flag, message) in [
        (&["--groups-per-cu", "0"][..], "--groups-per-cu", "`0` is neither a positive count nor `max`"),
        (&["--groups-per-cu", "all"], "--groups-per-cu", "`all` is neither"),
        (&["--barrier-counters", "0"], "--barrier-counters", "`0` is neither `auto` nor a count from 1 to 8"),
        (&["--barrier-counters", "9"], "--barrier-counters", "`9` is neither"),
        (&["--use-cases", "sync,nosuch"], "--use-cases", "unknown use case `nosuch`; available: sync, roundtrip"),
        (&["--spin-limit", "0"], "--spin-limit", "must be at least 1"),
        (&["--items", "0"], "--items", "sizes must be at least 1"),
        (&["--sizes", "lots"], "--sizes", "`lots` is not a size"),
        (&["--jacobi-sizes", "2^x"], "--jacobi-sizes", "is not a size"),
    ] {
        let err = build(args).unwrap_err();
        assert!(err.contains(flag) && err.contains(message), "{args:?}: {err}");
    }
}
