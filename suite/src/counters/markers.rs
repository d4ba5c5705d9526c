//! Which profiled kernels belong to which point. Before a point's profiled launch the child launches the empty
//! kernel of `kernels/launch.hip` ([`crate::code_objects::EMPTY_KERNEL`]) in groups of one item, with a grid that
//! encodes the point's index: `2i + 1` groups opens point `i`, `2i + 2` closes it (where the profiler needs closing
//! markers, [`super::Profiler::end_markers`]). Both profilers print each kernel's name and grid, so every kernel
//! between point `i`'s markers is point `i`'s, whatever it launches (a vendor BLAS call launches kernels of its own),
//! and no point's kernel can be taken for a marker: no experiment launches the empty kernel.

use super::{Error, KernelRecord};
use crate::code_objects::EMPTY_KERNEL;

/// Groups of the marker that opens point `index`.
pub fn start_grid(index: usize) -> u64 {
    2 * index as u64 + 1
}

/// Groups of the marker that closes point `index`.
pub fn end_grid(index: usize) -> u64 {
    2 * index as u64 + 2
}

/// A marker launch: the point it opens or closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// Point `i`'s kernels follow.
    Start(usize),
    /// Point `i`'s kernels ended.
    End(usize),
}

/// Whether `name`, as a profiler prints it, is the marker kernel's: `launch_empty`, with or without a parameter
/// list or the `.kd` of an AMD kernel descriptor.
fn is_marker_name(name: &str) -> bool {
    let name = name.trim();
    let name = name.strip_suffix(".kd").unwrap_or(name);
    let base = name.split('(').next().unwrap_or(name).trim();
    base == EMPTY_KERNEL
}

/// The marker `record` is, if it is one: the empty kernel in groups of one item.
pub fn decode(record: &KernelRecord) -> Option<Marker> {
    if !is_marker_name(&record.name) || record.group_items != 1 || record.grid == 0 {
        return None;
    }
    let index = usize::try_from((record.grid - 1) / 2).ok()?;
    Some(if record.grid % 2 == 1 { Marker::Start(index) } else { Marker::End(index) })
}

/// The kernels of each of `points` points, in launch order: `None` for a point whose start marker is not in the
/// profile (the child did not profile it, and its log says why), `Some` (possibly empty: a driver copy launches no
/// kernel) otherwise. Kernels outside every point (before the first marker, after a closing one) are left out.
/// A marker for a point the plan does not have, a point opened twice, or a closing marker of a point that is not
/// open are errors: the profile is not of this plan.
pub fn windows(records: &[KernelRecord], points: usize) -> Result<Vec<Option<Vec<KernelRecord>>>, Error> {
    let mut ordered: Vec<&KernelRecord> = records.iter().collect();
    ordered.sort_by_key(|r| r.seq);
    let mut out: Vec<Option<Vec<KernelRecord>>> = vec![None; points];
    let mut open: Option<usize> = None;
    for record in ordered {
        match decode(record) {
            Some(Marker::Start(i)) => {
                let slot = out.get_mut(i).ok_or_else(|| {
                    Error::Markers(format!("a marker for point {i}, but the plan has {points} points"))
                })?;
                if slot.is_some() {
                    return Err(Error::Markers(format!("point {i} is opened twice (launch {})", record.seq)));
                }
                *slot = Some(Vec::new());
                open = Some(i);
            }
            Some(Marker::End(i)) => {
                if open != Some(i) {
                    return Err(Error::Markers(format!(
                        "point {i} is closed at launch {} while {} is open",
                        record.seq,
                        open.map_or("no point".to_string(), |o| format!("point {o}"))
                    )));
                }
                open = None;
            }
            None => {
                if let Some(kernels) = open.and_then(|i| out[i].as_mut()) {
                    kernels.push(record.clone());
                }
            }
        }
    }
    Ok(out)
}

/// One point's kernels from several profiles of the same child (rocprofv3 collects a set of counters per run, so
/// each counter set is a run of its own): the first profile's kernels with every later profile's values added,
/// kernel by kernel in launch order. The runs launch the same kernels in the same order; where they do not (a
/// different count or names), the point's counters cannot be joined and the message says so.
pub fn join_passes(passes: &[Option<Vec<KernelRecord>>]) -> Result<Option<Vec<KernelRecord>>, String> {
    let mut present = passes.iter().flatten();
    let Some(first) = present.next() else { return Ok(None) };
    if passes.iter().any(Option::is_none) {
        let missing: Vec<String> =
            passes.iter().enumerate().filter(|(_, p)| p.is_none()).map(|(i, _)| (i + 1).to_string()).collect();
        return Err(format!("not profiled in pass {} of {} (see the pass's log)", missing.join(", "), passes.len()));
    }
    let mut joined = first.clone();
    for (n, pass) in present.enumerate() {
        let names = |ks: &[KernelRecord]| ks.iter().map(|k| k.name.clone()).collect::<Vec<_>>();
        if names(pass) != names(&joined) {
            return Err(format!(
                "pass {} launched [{}] where pass 1 launched [{}]",
                n + 2,
                names(pass).join(", "),
                names(&joined).join(", ")
            ));
        }
        for (kernel, other) in joined.iter_mut().zip(pass) {
            for (name, value) in &other.values {
                kernel.values.entry(name.clone()).or_insert(*value);
            }
            kernel.duration_ns = kernel.duration_ns.or(other.duration_ns);
        }
    }
    Ok(Some(joined))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(seq: u64, name: &str, grid: u64, group: u64) -> KernelRecord {
        KernelRecord { seq, name: name.into(), grid, group_items: group, ..KernelRecord::default() }
    }

    fn marker(seq: u64, grid: u64) -> KernelRecord {
        kernel(seq, "launch_empty", grid, 1)
    }

    #[test]
    fn markers_encode_the_point_and_its_end() {
        for i in [0usize, 1, 7, 1000] {
            assert_eq!(decode(&marker(0, start_grid(i))), Some(Marker::Start(i)));
            assert_eq!(decode(&marker(0, end_grid(i))), Some(Marker::End(i)));
        }
        // Only the empty kernel in groups of one item is a marker, under any of the names profilers print.
        assert_eq!(decode(&kernel(0, "launch_empty()", 3, 1)), Some(Marker::Start(1)));
        assert_eq!(decode(&kernel(0, "launch_empty.kd", 4, 1)), Some(Marker::End(1)));
        assert_eq!(decode(&kernel(0, "launch_empty", 3, 64)), None);
        assert_eq!(decode(&kernel(0, "launch_empty_not", 3, 1)), None);
        assert_eq!(decode(&kernel(0, "smoke_triad", 3, 1)), None);
        assert_eq!(decode(&kernel(0, "launch_empty", 0, 1)), None);
    }

    /// A fixture sequence as the child launches it under ncu (start markers only, the window closed between
    /// points, so kernels of the next point's preparation never show) and under rocprofv3 (every dispatch shows:
    /// preparation kernels before a start marker and after an end marker belong to no point).
    #[test]
    fn every_kernel_between_markers_is_that_points() {
        let ncu = vec![
            marker(0, start_grid(0)),
            kernel(1, "vector_add", 4096, 256),
            marker(2, start_grid(1)),
            kernel(3, "gemm_splitk", 128, 256),
            kernel(4, "gemm_splitk_reduce", 64, 256),
            // Point 2 is a driver copy: no kernel.
            marker(5, start_grid(2)),
            // Point 3 was not profiled (its verification failed in the child): no marker.
            marker(6, start_grid(4)),
            kernel(7, "sm90_xmma_gemm_f32f32", 132, 384),
        ];
        let w = windows(&ncu, 5).unwrap();
        let names =
            |p: &Option<Vec<KernelRecord>>| p.as_ref().map(|ks| ks.iter().map(|k| k.name.clone()).collect::<Vec<_>>());
        assert_eq!(names(&w[0]), Some(vec!["vector_add".to_string()]));
        assert_eq!(names(&w[1]), Some(vec!["gemm_splitk".to_string(), "gemm_splitk_reduce".to_string()]));
        assert_eq!(names(&w[2]), Some(vec![]));
        assert_eq!(names(&w[3]), None);
        assert_eq!(names(&w[4]), Some(vec!["sm90_xmma_gemm_f32f32".to_string()]));
        // Records in any order are put in launch order first.
        let mut shuffled = ncu.clone();
        shuffled.reverse();
        assert_eq!(windows(&shuffled, 5).unwrap(), w);

        let rocprof = vec![
            kernel(1, "fill_reference", 100, 256),
            marker(2, start_grid(0)),
            kernel(3, "vector_add", 4096, 256),
            marker(4, end_grid(0)),
            kernel(5, "verify_kernel", 100, 256),
            marker(6, start_grid(1)),
            kernel(7, "Cijk_Ailk_Bljk_SB_MT64x64", 64, 256),
            marker(8, end_grid(1)),
        ];
        let w = windows(&rocprof, 2).unwrap();
        assert_eq!(names(&w[0]), Some(vec!["vector_add".to_string()]));
        assert_eq!(names(&w[1]), Some(vec!["Cijk_Ailk_Bljk_SB_MT64x64".to_string()]));
    }

    #[test]
    fn markers_that_do_not_fit_the_plan_are_errors() {
        let err = windows(&[marker(0, start_grid(3))], 2).unwrap_err().to_string();
        assert!(err.contains("a marker for point 3, but the plan has 2 points"), "{err}");
        let err = windows(&[marker(0, start_grid(0)), marker(1, start_grid(0))], 2).unwrap_err().to_string();
        assert!(err.contains("point 0 is opened twice"), "{err}");
        let err = windows(&[marker(0, start_grid(0)), marker(1, end_grid(1))], 2).unwrap_err().to_string();
        assert!(err.contains("point 1 is closed at launch 1 while point 0 is open"), "{err}");
    }

    #[test]
    fn passes_join_kernel_by_kernel_or_say_why_not() {
        let with = |name: &str, counter: &str, v: f64| {
            let mut k = kernel(0, name, 10, 64);
            k.values.insert(counter.into(), v);
            k
        };
        let a = Some(vec![with("k1", "OccupancyPercent", 40.0), with("k2", "OccupancyPercent", 90.0)]);
        let b = Some(vec![with("k1", "FETCH_SIZE", 1.0), with("k2", "FETCH_SIZE", 2.0)]);
        let joined = join_passes(&[a.clone(), b]).unwrap().unwrap();
        assert_eq!(joined[1].value("OccupancyPercent"), Some(90.0));
        assert_eq!(joined[1].value("FETCH_SIZE"), Some(2.0));
        assert_eq!(join_passes(&[None, None]), Ok(None));
        let err = join_passes(&[a.clone(), None]).unwrap_err();
        assert!(err.contains("not profiled in pass 2 of 2"), "{err}");
        let other = Some(vec![with("k1", "FETCH_SIZE", 1.0)]);
        let err = join_passes(&[a, other]).unwrap_err();
        assert!(err.contains("pass 2 launched [k1] where pass 1 launched [k1, k2]"), "{err}");
    }
}
