//! Timelines of resident waves: the record every wave writes (its CU, its group, and the device clock at its start
//! and end), the file they are kept in beside the CSV, and their analysis (resident waves over time, phases).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;

use crate::experiments::Error;

/// One `u64` record per wave in a timeline: CU, group, start and end ticks of the device clock.
pub const RECORD_WORDS: usize = 4;

/// The file holding a recorded timeline.
pub fn timeline_file(config: &str, variant: &str) -> String {
    format!("occupancy-timeline-{config}-{variant}.csv")
}

/// One wave's record from a timeline: the CU it ran on, its group, and its start and end on the device clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaveRecord {
    /// CU (SM) id.
    pub cu: u64,
    /// Group index.
    pub group: u64,
    /// Start, device clock ticks.
    pub start: u64,
    /// End, device clock ticks.
    pub end: u64,
}

/// Reads records from the kernel's buffer; every record must have been written (the buffer was poisoned with
/// all-ones) and end no earlier than it started.
pub fn parse_records(raw: &[u64]) -> Result<Vec<WaveRecord>, String> {
    if !raw.len().is_multiple_of(RECORD_WORDS) {
        return Err(format!("timeline of {} words is not whole records of {RECORD_WORDS}", raw.len()));
    }
    raw.chunks(RECORD_WORDS)
        .enumerate()
        .map(|(i, r)| {
            let rec = WaveRecord { cu: r[0], group: r[1], start: r[2], end: r[3] };
            if r.contains(&u64::MAX) {
                Err(format!("timeline record {i} was not written: a wave did not record itself"))
            } else if rec.end < rec.start {
                Err(format!("timeline record {i} ends ({}) before it starts ({})", rec.end, rec.start))
            } else {
                Ok(rec)
            }
        })
        .collect()
}

/// Columns of a timeline file: one row per wave, raw ticks and the clock rate that turns them into time.
pub const TIMELINE_HEADER: &str = "cu,group,start_ticks,end_ticks,clock_hz,device_wave_slots";

pub(super) fn write_records(path: &Path, records: &[WaveRecord], clock_hz: f64, slots: u64) -> Result<(), Error> {
    let io = |source| crate::report::Error::Io { action: "cannot write", path: path.to_path_buf(), source };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).map_err(io)?);
    writeln!(f, "{TIMELINE_HEADER}").map_err(io)?;
    for r in records {
        writeln!(f, "{},{},{},{},{clock_hz},{slots}", r.cu, r.group, r.start, r.end).map_err(io)?;
    }
    f.flush().map_err(io)?;
    Ok(())
}

/// A timeline file: its records, clock rate (Hz) and device wave slots.
pub fn read_timeline(path: &Path) -> Option<(Vec<WaveRecord>, f64, u64)> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut lines = text.lines();
    if lines.next()? != TIMELINE_HEADER {
        return None;
    }
    let mut records = Vec::new();
    let (mut hz, mut slots) = (0.0, 0);
    for line in lines {
        let v: Vec<&str> = line.split(',').collect();
        if v.len() != 6 {
            return None;
        }
        let n = |i: usize| v[i].parse::<u64>().ok();
        records.push(WaveRecord { cu: n(0)?, group: n(1)?, start: n(2)?, end: n(3)? });
        hz = v[4].parse().ok()?;
        slots = n(5)?;
    }
    Some((records, hz, slots))
}

/// Resident waves and groups at one instant of a timeline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    /// Time since the first wave started, in the clock's ticks.
    pub t: u64,
    /// Waves resident from `t` on.
    pub waves: u32,
    /// Groups resident from `t` on (a group is resident from its first wave's start to its last wave's end).
    pub groups: u32,
}

/// Resident waves and groups over time, device-wide or for one CU (`cu`), as a step function.
pub fn resident_over_time(records: &[WaveRecord], cu: Option<u64>) -> Vec<Step> {
    let recs: Vec<&WaveRecord> = records.iter().filter(|r| cu.is_none_or(|c| r.cu == c)).collect();
    let Some(t0) = recs.iter().map(|r| r.start).min() else { return Vec::new() };
    let mut groups: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    for r in &recs {
        let e = groups.entry(r.group).or_insert((r.start, r.end));
        e.0 = e.0.min(r.start);
        e.1 = e.1.max(r.end);
    }
    // Events: +1 at a start, -1 at an end; ends before starts at the same tick (a slot freed and refilled).
    let mut events: Vec<(u64, i32, i32)> = Vec::new();
    for r in &recs {
        events.push((r.start, 1, 0));
        events.push((r.end, -1, 0));
    }
    for (s, e) in groups.values() {
        events.push((*s, 0, 1));
        events.push((*e, 0, -1));
    }
    events.sort_by_key(|&(t, w, g)| (t, w + g));
    let mut steps: Vec<Step> = Vec::new();
    let (mut waves, mut grps) = (0i64, 0i64);
    for (t, w, g) in events {
        waves += i64::from(w);
        grps += i64::from(g);
        let step = Step { t: t - t0, waves: waves.max(0) as u32, groups: grps.max(0) as u32 };
        match steps.last_mut() {
            Some(last) if last.t == step.t => *last = step,
            _ => steps.push(step),
        }
    }
    steps
}

/// A stretch of time at one level of resident waves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Phase {
    /// Start, ticks since the first wave started.
    pub start: u64,
    /// End, ticks.
    pub end: u64,
    /// Resident waves (the time-weighted mean over the phase, rounded).
    pub waves: u32,
}

/// The phases of a timeline: maximal stretches where the resident waves stay within `tolerance` (a fraction of
/// the peak) of the stretch's first level, at least `min_fraction` of the whole duration long. Short transitions
/// in between (waves starting and ending one by one) are not phases.
pub fn phases(steps: &[Step], tolerance: f64, min_fraction: f64) -> Vec<Phase> {
    let Some(total) = steps.last().map(|s| s.t).filter(|&t| t > 0) else { return Vec::new() };
    let peak = steps.iter().map(|s| s.waves).max().unwrap_or(0).max(1);
    let band = (tolerance * f64::from(peak)).max(0.5);
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < steps.len() {
        let level = f64::from(steps[i].waves);
        let mut j = i;
        let mut weighted = 0.0;
        while j + 1 < steps.len() && (f64::from(steps[j].waves) - level).abs() <= band {
            weighted += f64::from(steps[j].waves) * (steps[j + 1].t - steps[j].t) as f64;
            j += 1;
        }
        let (start, end) = (steps[i].t, steps[j].t);
        if end > start && (end - start) as f64 >= min_fraction * total as f64 && level > 0.0 {
            out.push(Phase { start, end, waves: (weighted / (end - start) as f64).round() as u32 });
        }
        i = j.max(i + 1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(cu: u64, group: u64, start: u64, end: u64) -> WaveRecord {
        WaveRecord { cu, group, start, end }
    }

    #[test]
    fn records_must_all_be_written_and_ordered() {
        let raw = [1, 0, 10, 20, 2, 1, 15, 30];
        assert_eq!(parse_records(&raw).unwrap(), vec![rec(1, 0, 10, 20), rec(2, 1, 15, 30)]);
        assert!(parse_records(&[1, 0, 10, u64::MAX]).unwrap_err().contains("not written"));
        assert!(parse_records(&[1, 0, 30, 20]).unwrap_err().contains("before it starts"));
        assert!(parse_records(&[1, 2, 3]).is_err());
    }

    #[test]
    fn resident_waves_and_groups_step_with_starts_and_ends() {
        // Group 0: two waves 0..100 on CU 1; group 1: one wave 50..150 on CU 2; group 2 starts as group 0 ends.
        let records = [rec(1, 0, 0, 100), rec(1, 0, 0, 100), rec(2, 1, 50, 150), rec(1, 2, 100, 200)];
        let steps = resident_over_time(&records, None);
        let compact: Vec<(u64, u32, u32)> = steps.iter().map(|s| (s.t, s.waves, s.groups)).collect();
        assert_eq!(compact, [(0, 2, 1), (50, 3, 2), (100, 2, 2), (150, 1, 1), (200, 0, 0)]);
        let cu1: Vec<(u64, u32)> = resident_over_time(&records, Some(1)).iter().map(|s| (s.t, s.waves)).collect();
        assert_eq!(cu1, [(0, 2), (100, 1), (200, 0)]);
    }

    #[test]
    fn phases_find_the_plateaus_not_the_ramps() {
        // 100 waves for 1000 ticks, a ramp, then 30 waves for 500 ticks.
        let mut steps = vec![Step { t: 0, waves: 100, groups: 10 }];
        for (i, w) in [90, 70, 50].iter().enumerate() {
            steps.push(Step { t: 1000 + 5 * i as u64, waves: *w, groups: 5 });
        }
        steps.push(Step { t: 1015, waves: 30, groups: 3 });
        steps.push(Step { t: 1515, waves: 0, groups: 0 });
        let p = phases(&steps, 0.05, 0.1);
        assert_eq!(p.len(), 2, "{p:?}");
        assert_eq!((p[0].start, p[0].end, p[0].waves), (0, 1000, 100));
        assert_eq!((p[1].start, p[1].end, p[1].waves), (1015, 1515, 30));
    }
}
