//! Joining the CSVs of a sharded run (`suite run --shard i/n`, one process per GPU) into one CSV per experiment.
//!
//! A merge is strict, because a merged CSV looks complete whatever went in: every shard `0..n` must be there and
//! complete (or `--partial` says which are missing or incomplete), all of one count `n`, measured alike (their
//! fingerprints in `run.json` agree), and no point may appear twice. Only whole rows are merged: a row cut by a
//! killed task is left out. Merging again after the shards gained rows (a resumed or requeued job) replaces the
//! earlier merged CSV, never losing a row it held.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::run_json::{Fingerprint, RunJson};
use super::{Error, Result};

/// One shard's CSV, `<experiment>.shard-<index>-of-<count>.csv`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardFile {
    /// The shard, 0-based.
    pub index: usize,
    /// Number of shards in its run.
    pub count: usize,
    /// The file.
    pub path: PathBuf,
}

/// The file name of shard `index` of `count` of `experiment` (as `suite run --shard` writes it).
pub fn shard_file_name(experiment: &str, index: usize, count: usize) -> String {
    format!("{experiment}.shard-{index}-of-{count}.csv")
}

/// Points of shard `index` of `count` in a sweep of `points`: the shard runs points index, index + count, ...
pub fn shard_points(points: usize, index: usize, count: usize) -> usize {
    if count == 0 || index >= points {
        0
    } else {
        (points - index - 1) / count + 1
    }
}

/// `(experiment, index, count)` from a shard file name; `None` for other files. A name that has `.shard-` but not
/// the rest of the pattern is an error, so a mangled file is never left out of a merge unnoticed.
fn parse_name(path: &Path) -> Result<Option<(String, usize, usize)>> {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else { return Ok(None) };
    let Some((experiment, rest)) = name.split_once(".shard-") else { return Ok(None) };
    let Some(rest) = rest.strip_suffix(".csv") else { return Ok(None) };
    let parsed = rest
        .split_once("-of-")
        .and_then(|(i, n)| Some((i.parse::<usize>().ok()?, n.parse::<usize>().ok()?)))
        .filter(|(i, n)| i < n && !experiment.is_empty());
    match parsed {
        Some((index, count)) => Ok(Some((experiment.to_string(), index, count))),
        None => Err(Error::ShardName { path: path.into() }),
    }
}

/// Shard files in `dir`, grouped by experiment, each group sorted by count, then index as a number (shard-10 after
/// shard-2).
pub fn shard_files(dir: &Path) -> Result<BTreeMap<String, Vec<ShardFile>>> {
    let entries =
        std::fs::read_dir(dir).map_err(|source| Error::Io { action: "cannot read", path: dir.into(), source })?;
    let mut groups: BTreeMap<String, Vec<ShardFile>> = BTreeMap::new();
    for entry in entries {
        let path = entry.map_err(|source| Error::Io { action: "cannot read", path: dir.into(), source })?.path();
        if let Some((experiment, index, count)) = parse_name(&path)? {
            groups.entry(experiment).or_default().push(ShardFile { index, count, path });
        }
    }
    for files in groups.values_mut() {
        files.sort_by_key(|f| (f.count, f.index));
    }
    Ok(groups)
}

/// What a set of shards lacks, for a partial merge (empty for a complete set).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Gaps {
    /// Shard files absent from the folder, by name.
    pub missing: Vec<String>,
    /// Shards that hold fewer rows than the others prove they should (a task that stopped early), each as
    /// `<file> (<rows> of at least <expected> rows)`.
    pub incomplete: Vec<String>,
}

impl Gaps {
    /// Whether nothing is known to be missing.
    pub fn is_empty(&self) -> bool {
        self.missing.is_empty() && self.incomplete.is_empty()
    }
}

impl std::fmt::Display for Gaps {
    /// `missing a, b; incomplete c (1 of at least 2 rows)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if !self.missing.is_empty() {
            parts.push(format!("missing {}", self.missing.join(", ")));
        }
        if !self.incomplete.is_empty() {
            parts.push(format!("incomplete {}", self.incomplete.join(", ")));
        }
        f.write_str(&parts.join("; "))
    }
}

/// Checks that `shards` (one experiment's files, from [`shard_files`]) form one complete run: one shard count, no
/// shard missing or incomplete, and every shard recorded in `run` (the folder's `run.json`) with the same
/// fingerprint. `planned` is the sweep's points as the run's plan records them: each shard must then hold exactly
/// its share ([`shard_points`]); a folder from before plans were recorded has none, and a shard is
/// then incomplete only where the others prove it ([`incomplete`]). With `partial`, missing and incomplete shards
/// are allowed and returned.
pub fn check(
    experiment: &str,
    shards: &[ShardFile],
    run: Option<&RunJson>,
    run_path: &Path,
    partial: bool,
    planned: Option<usize>,
) -> Result<Gaps> {
    let mut counts: Vec<usize> = shards.iter().map(|s| s.count).collect();
    counts.dedup();
    if counts.len() > 1 {
        let found = shards.iter().map(|s| display_name(&s.path)).collect::<Vec<_>>().join(", ");
        return Err(Error::ShardCounts { experiment: experiment.into(), found });
    }
    let Some(&count) = counts.first() else { return Ok(Gaps::default()) };
    // A shard with no point of its own (more shards than points) writes no rows, but its file is still expected:
    // every task opens its CSV before its first point.
    let missing: Vec<String> = (0..count)
        .filter(|i| !shards.iter().any(|s| s.index == *i))
        .map(|i| shard_file_name(experiment, i, count))
        .collect();
    if !missing.is_empty() && !partial {
        return Err(Error::MissingShards { experiment: experiment.into(), count, missing: missing.join(", ") });
    }
    let mut first: Option<(&ShardFile, &Fingerprint)> = None;
    for shard in shards {
        let shard_id = format!("{}/{}", shard.index, shard.count);
        let recorded: Vec<&Fingerprint> = run
            .iter()
            .flat_map(|r| &r.invocations)
            .filter(|i| i.experiment == experiment && i.shard.as_deref() == Some(shard_id.as_str()))
            .filter_map(|i| i.fingerprint.as_ref())
            .collect();
        if recorded.is_empty() {
            // A task that created its CSV and then could not record itself (a full disk) wrote no row: nothing of it
            // to merge, and the plan counts its points as missing.
            if read_shard(&shard.path)?.rows.is_empty() {
                continue;
            }
            return Err(Error::ShardUnrecorded { file: shard.path.clone(), run_json: run_path.into() });
        }
        for fingerprint in recorded {
            match first {
                None => first = Some((shard, fingerprint)),
                Some((first_shard, first_fingerprint)) => {
                    if let Some(diff) = first_fingerprint.difference(fingerprint) {
                        return Err(Error::ShardFingerprints {
                            experiment: experiment.into(),
                            first: display_name(&first_shard.path),
                            second: display_name(&shard.path),
                            diff: Box::new(diff),
                        });
                    }
                }
            }
        }
    }
    let mut rows = Vec::new();
    for shard in shards {
        rows.push((shard, read_shard(&shard.path)?.rows.len()));
    }
    let incomplete = match planned {
        Some(points) => rows
            .iter()
            .filter_map(|(s, r)| {
                let expected = shard_points(points, s.index, s.count);
                (*r < expected).then(|| format!("{} ({r} of {expected} planned rows)", display_name(&s.path)))
            })
            .collect(),
        None => incomplete(&rows),
    };
    if !incomplete.is_empty() && !partial {
        return Err(Error::IncompleteShards { experiment: experiment.into(), incomplete: incomplete.join(", ") });
    }
    Ok(Gaps { missing, incomplete })
}

/// The shards among `rows` (each shard with its number of complete rows) that provably lack rows. `suite run
/// --shard i/n` writes one row for every point it is given (invalid and failed points too), and shard i is given
/// points i, i + n, i + 2n, ...: so a shard holding r rows proves the sweep has at least i + (r - 1)·n + 1 points,
/// and every shard must then hold each of its points below that. A shard that holds fewer stopped early. A shard
/// that lost only points past every other shard's last one cannot be told from a complete one: the task's exit
/// status says that (the job scripts merge partially whenever a task failed).
pub fn incomplete(rows: &[(&ShardFile, usize)]) -> Vec<String> {
    let points = rows.iter().filter(|(_, r)| *r > 0).map(|(s, r)| s.index + (r - 1) * s.count + 1).max().unwrap_or(0);
    rows.iter()
        .filter_map(|(s, r)| {
            let expected = if points > s.index { (points - s.index - 1) / s.count + 1 } else { 0 };
            (*r < expected).then(|| format!("{} ({r} of at least {expected} rows)", display_name(&s.path)))
        })
        .collect()
}

fn display_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| path.display().to_string())
}

/// A CSV's header and whole rows, read strictly ([`super::csv::parse_table`]): a row cut by a killed task (at any
/// byte of the last row) is never read, and any other row that does not parse is an error naming its line. A file
/// cut before its header was written has neither.
struct ShardRows {
    header: Option<csv::StringRecord>,
    rows: Vec<csv::StringRecord>,
}

fn read_shard(path: &Path) -> Result<ShardRows> {
    let table = super::csv::read_table(path)?;
    if table.header.is_empty() {
        return Ok(ShardRows { header: None, rows: Vec::new() });
    }
    Ok(ShardRows { header: Some(csv::StringRecord::from(table.header)), rows: table.rows })
}

/// The number of whole rows of a shard (0 for a file cut before its header).
pub fn shard_rows(path: &Path) -> Result<usize> {
    Ok(read_shard(path)?.rows.len())
}

/// Writes the merge of `shards` beside `out`: the header of the shards and every complete row of each, in shard
/// order. Shards must share one header and no point (`key`) may appear twice. Check the set with [`check`] first.
/// Nothing is in place until [`Merged::place`]: a merge of several experiments writes every file first and renames
/// them after, and records the merge in run.json last.
///
/// An `out` already there is replaced only when it is an earlier merge of these shards (every row it holds is among
/// the rows merged now: after a resumed or requeued job, whose shards gained rows), so a merge never loses a row;
/// any other file is refused.
pub fn merge(shards: &[ShardFile], out: &Path) -> Result<Merged> {
    let mut header: Option<csv::StringRecord> = None;
    let mut rows = Vec::new();
    let mut seen: HashMap<String, PathBuf> = HashMap::new();
    for shard in shards {
        let path = &shard.path;
        let read = read_shard(path)?;
        let Some(h) = read.header else { continue };
        match &header {
            None => header = Some(h.clone()),
            Some(first) if *first != h => {
                return Err(Error::HeaderMismatch {
                    path: path.clone(),
                    found: h.iter().collect::<Vec<_>>().join(","),
                    expected: first.iter().collect::<Vec<_>>().join(","),
                })
            }
            Some(_) => {}
        }
        let key_column = h.iter().position(|c| c == "key");
        for record in read.rows {
            if let Some(key) = key_column.and_then(|k| record.get(k)) {
                if let Some(earlier) = seen.insert(key.to_string(), path.clone()) {
                    return Err(Error::DuplicateKey { key: key.into(), first: earlier, second: path.clone() });
                }
            }
            rows.push(record);
        }
    }
    let Some(header) = header else { return Ok(Merged { rows: 0, staged: None }) };
    if out.exists() {
        keeps_every_row(out, &header, &rows)?;
    }
    let mut staged = crate::safe_fs::Staged::new(out).map_err(|e| super::io_error("cannot write", out, e))?;
    let tmp_path = staged.tmp_path().to_path_buf();
    let mut writer = csv::Writer::from_writer(staged.file());
    writer.write_record(&header).map_err(|source| Error::Csv { path: out.into(), source })?;
    for row in &rows {
        writer.write_record(row).map_err(|source| match source.into_kind() {
            csv::ErrorKind::Io(e) => super::io_error("cannot write", &tmp_path, e),
            kind => Error::Io {
                action: "cannot write",
                path: out.into(),
                source: std::io::Error::other(format!("{kind:?}")),
            },
        })?;
    }
    writer.flush().map_err(|e| super::io_error("cannot write", &tmp_path, e))?;
    drop(writer);
    Ok(Merged { rows: rows.len(), staged: Some(staged) })
}

/// A merged CSV written beside its final name, not yet in place: [`Merged::place`] renames it there.
pub struct Merged {
    /// Its rows.
    pub rows: usize,
    staged: Option<crate::safe_fs::Staged>,
}

impl Merged {
    /// Renames the merged file over its final name (nothing when the shards held no header).
    pub fn place(self) -> Result<()> {
        match self.staged {
            Some(staged) => {
                let path = staged.path().to_path_buf();
                staged.commit().map_err(|e| super::io_error("cannot write", &path, e))
            }
            None => Ok(()),
        }
    }
}

/// Refuses to replace `out` unless it has `header` and each of its complete rows is among `rows`.
fn keeps_every_row(out: &Path, header: &csv::StringRecord, rows: &[csv::StringRecord]) -> Result<()> {
    let existing = read_shard(out)?;
    let Some(found) = existing.header else { return Ok(()) };
    if found != *header {
        return Err(Error::HeaderMismatch {
            path: out.into(),
            found: found.iter().collect::<Vec<_>>().join(","),
            expected: header.iter().collect::<Vec<_>>().join(","),
        });
    }
    let fields = |r: &csv::StringRecord| r.iter().map(str::to_string).collect::<Vec<String>>();
    let new: HashSet<Vec<String>> = rows.iter().map(fields).collect();
    let lost: Vec<&csv::StringRecord> = existing.rows.iter().filter(|r| !new.contains(&fields(r))).collect();
    if let Some(first) = lost.first() {
        let key = header.iter().position(|c| c == "key").and_then(|k| first.get(k)).unwrap_or("?");
        return Err(Error::MergeWouldLoseRows { path: out.into(), rows: lost.len(), key: key.into() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::occupancy_calculator::tests::h100;
    use crate::report::run_json::tests::fingerprint;
    use crate::report::run_json::{self, Invocation};

    /// Records that shard `i/n` of `experiment` ran with `fingerprint` in `dir`'s run.json. Written as it is, without
    /// `record`'s checks: merge must refuse by itself what older suites let into a folder (shards of two counts).
    fn recorded(dir: &Path, experiment: &str, shard: &str, fingerprint: Fingerprint) {
        let mut inv = Invocation::now(serde_json::json!({}), Some(shard.into()));
        inv.experiment = experiment.into();
        inv.fingerprint = Some(fingerprint);
        let mut run = run_json::read(dir).unwrap().unwrap_or(run_json::RunJson {
            device: h100(),
            invocations: vec![],
            plans: vec![],
            merges: vec![],
        });
        run.invocations.push(inv);
        std::fs::write(run_json::path(dir), serde_json::to_string(&run).unwrap()).unwrap();
    }

    /// Writes shard `i` of `n` of `m` with rows for `keys`, and records it.
    fn shard(dir: &Path, i: usize, n: usize, keys: &[&str]) -> PathBuf {
        let path = dir.join(shard_file_name("m", i, n));
        let rows: String = keys.iter().map(|k| format!("{i},{k}\n")).collect();
        std::fs::write(&path, format!("shard,key\n{rows}")).unwrap();
        recorded(dir, "m", &format!("{i}/{n}"), fingerprint());
        path
    }

    /// Merges and places the merged file; its rows.
    fn placed(shards: &[ShardFile], out: &Path) -> usize {
        let merged = merge(shards, out).unwrap();
        let rows = merged.rows;
        merged.place().unwrap();
        rows
    }

    fn check_dir(dir: &Path, partial: bool) -> Result<Gaps> {
        let groups = shard_files(dir)?;
        let run = run_json::read(dir)?;
        check("m", &groups["m"], run.as_ref(), &run_json::path(dir), partial, None)
    }

    #[test]
    fn shard_files_sort_numerically_and_mangled_names_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        for i in [10, 2, 0, 1, 11] {
            std::fs::write(dir.path().join(shard_file_name("m", i, 12)), "a\n").unwrap();
        }
        std::fs::write(dir.path().join("smoke.csv"), "x\n1\n").unwrap();
        std::fs::write(dir.path().join("m.shard-notes.txt"), "").unwrap();
        let groups = shard_files(dir.path()).unwrap();
        assert_eq!(groups.keys().collect::<Vec<_>>(), ["m"]);
        assert_eq!(groups["m"].iter().map(|s| s.index).collect::<Vec<_>>(), [0, 1, 2, 10, 11]);
        assert_eq!(groups["m"][3].path, dir.path().join("m.shard-10-of-12.csv"));
        for bad in ["m.shard-x-of-2.csv", "m.shard-2-of-2.csv", "m.shard-1of2.csv", ".shard-0-of-1.csv"] {
            let other = tempfile::tempdir().unwrap();
            std::fs::write(other.path().join(bad), "a\n").unwrap();
            let err = shard_files(other.path()).unwrap_err();
            assert!(matches!(err, Error::ShardName { .. }), "{bad}: {err}");
            assert!(err.to_string().contains(bad) && err.to_string().contains("<i>-of-<n>"), "{err}");
        }
    }

    #[test]
    fn a_complete_set_merges_in_numeric_order_and_skips_cut_rows() {
        let dir = tempfile::tempdir().unwrap();
        for i in (0..11).rev() {
            shard(dir.path(), i, 11, &[&format!("k{i}")]);
        }
        // Cut last rows from killed tasks: after a few bytes, and inside the last field (every column is there,
        // but the key is not whole: counting columns would take it for a row).
        std::fs::write(dir.path().join(shard_file_name("m", 3, 11)), "shard,key\n3,k3\n3").unwrap();
        std::fs::write(dir.path().join(shard_file_name("m", 4, 11)), "shard,key\n4,k4\n4,k1").unwrap();
        assert_eq!(check_dir(dir.path(), false).unwrap(), Gaps::default());
        let out = dir.path().join("m.csv");
        assert_eq!(placed(&shard_files(dir.path()).unwrap()["m"], &out), 11);
        let expected: String = (0..11).map(|i| format!("{i},k{i}\n")).collect();
        assert_eq!(std::fs::read_to_string(&out).unwrap(), format!("shard,key\n{expected}"));
        // Merging the same shards again gives the same file.
        assert_eq!(placed(&shard_files(dir.path()).unwrap()["m"], &out), 11);
        assert_eq!(std::fs::read_to_string(&out).unwrap(), format!("shard,key\n{expected}"));
    }

    #[test]
    fn a_merge_after_the_shards_gained_rows_replaces_the_earlier_one_and_never_drops_a_row() {
        let dir = tempfile::tempdir().unwrap();
        shard(dir.path(), 0, 2, &["a"]);
        shard(dir.path(), 1, 2, &["b"]);
        let out = dir.path().join("m.csv");
        assert_eq!(placed(&shard_files(dir.path()).unwrap()["m"], &out), 2);
        // A resumed job measured the rest: the merged file is made again from the shards.
        std::fs::write(dir.path().join(shard_file_name("m", 0, 2)), "shard,key\n0,a\n0,c\n").unwrap();
        std::fs::write(dir.path().join(shard_file_name("m", 1, 2)), "shard,key\n1,b\n1,d\n").unwrap();
        assert_eq!(placed(&shard_files(dir.path()).unwrap()["m"], &out), 4);
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "shard,key\n0,a\n0,c\n1,b\n1,d\n");
        // A file with a row the shards lack (not a merge of them) is never replaced.
        std::fs::write(&out, "shard,key\n0,a\n9,z\n").unwrap();
        let err = merge(&shard_files(dir.path()).unwrap()["m"], &out).err().unwrap();
        assert!(matches!(&err, Error::MergeWouldLoseRows { rows: 1, key, .. } if key == "z"), "{err}");
        assert!(err.to_string().contains("move it out of the folder"), "{err}");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "shard,key\n0,a\n9,z\n");
        // Nor one of other columns.
        std::fs::write(&out, "other\n1\n").unwrap();
        let err = merge(&shard_files(dir.path()).unwrap()["m"], &out).err().unwrap();
        assert!(matches!(err, Error::HeaderMismatch { .. }), "{err}");
        // No temporary file is left behind.
        let names: Vec<String> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into()).collect();
        assert!(names.iter().all(|n| !n.starts_with(".m.csv.")), "{names:?}");
    }

    #[test]
    fn an_incomplete_set_is_refused_naming_what_is_missing_unless_partial() {
        let dir = tempfile::tempdir().unwrap();
        shard(dir.path(), 0, 3, &["a"]);
        shard(dir.path(), 2, 3, &["c"]);
        let err = check_dir(dir.path(), false).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, Error::MissingShards { count: 3, .. }), "{text}");
        assert!(text.contains("missing m.shard-1-of-3.csv") && text.contains("--partial"), "{text}");
        let gaps = check_dir(dir.path(), true).unwrap();
        assert_eq!(gaps, Gaps { missing: vec!["m.shard-1-of-3.csv".into()], incomplete: vec![] });
        assert_eq!(gaps.to_string(), "missing m.shard-1-of-3.csv");
    }

    #[test]
    fn a_shard_that_stopped_early_is_refused_unless_partial_and_none_of_its_rows_is_lost() {
        let dir = tempfile::tempdir().unwrap();
        // Points 0..8 over 4 shards: two each. Shard 1's task died after one point, leaving a cut row; shard 2's
        // was killed before it wrote even the header.
        shard(dir.path(), 0, 4, &["p0", "p4"]);
        shard(dir.path(), 1, 4, &["p1"]);
        let cut = dir.path().join(shard_file_name("m", 1, 4));
        let text = std::fs::read_to_string(&cut).unwrap();
        std::fs::write(&cut, text + "1,p").unwrap();
        shard(dir.path(), 2, 4, &[]);
        std::fs::write(dir.path().join(shard_file_name("m", 2, 4)), "sha").unwrap();
        shard(dir.path(), 3, 4, &["p3", "p7"]);
        let err = check_dir(dir.path(), false).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, Error::IncompleteShards { .. }), "{text}");
        assert!(
            text.contains("m.shard-1-of-4.csv (1 of at least 2 rows), m.shard-2-of-4.csv (0 of at least 2 rows)"),
            "{text}"
        );
        assert!(text.contains("--resume") && text.contains("--partial"), "{text}");
        let gaps = check_dir(dir.path(), true).unwrap();
        assert_eq!(
            gaps.to_string(),
            "incomplete m.shard-1-of-4.csv (1 of at least 2 rows), m.shard-2-of-4.csv (0 of at least 2 rows)"
        );
        let out = dir.path().join("m.csv");
        assert_eq!(placed(&shard_files(dir.path()).unwrap()["m"], &out), 5);
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "shard,key\n0,p0\n0,p4\n1,p1\n3,p3\n3,p7\n");
    }

    #[test]
    fn only_shards_that_provably_lack_rows_are_incomplete() {
        // (rows per shard of 4, the incomplete ones): a complete shard i of n holds ceil((points - i) / n) rows.
        let cases: &[(&[usize], &[usize])] = &[
            (&[2, 2, 2, 2], &[]),
            (&[3, 3, 2, 2], &[]),
            (&[1, 0, 0, 0], &[]),
            (&[0, 0, 0, 0], &[]),
            (&[2, 2, 2, 1], &[]),
            (&[2, 1, 2, 2], &[1]),
            (&[2, 2, 1, 1], &[]),
            (&[1, 2, 2, 2], &[0]),
            (&[3, 1, 2, 2], &[1]),
            (&[0, 0, 1, 0], &[0, 1]),
            (&[5, 2, 2, 2], &[1, 2, 3]),
        ];
        for (rows, expected) in cases {
            let files: Vec<ShardFile> =
                (0..4).map(|i| ShardFile { index: i, count: 4, path: shard_file_name("m", i, 4).into() }).collect();
            let counted: Vec<(&ShardFile, usize)> = files.iter().zip(rows.iter().copied()).collect();
            let found = incomplete(&counted);
            let names: Vec<String> = expected.iter().map(|i| shard_file_name("m", *i, 4)).collect();
            assert_eq!(found.len(), names.len(), "{rows:?}: {found:?}");
            for (f, n) in found.iter().zip(&names) {
                assert!(f.starts_with(n.as_str()), "{rows:?}: {found:?}");
            }
        }
    }

    #[test]
    fn shards_of_different_counts_are_refused_even_with_partial() {
        let dir = tempfile::tempdir().unwrap();
        shard(dir.path(), 0, 2, &["a"]);
        shard(dir.path(), 1, 2, &["b"]);
        shard(dir.path(), 0, 3, &["a"]);
        for partial in [false, true] {
            let err = check_dir(dir.path(), partial).unwrap_err();
            let text = err.to_string();
            assert!(matches!(err, Error::ShardCounts { .. }), "{text}");
            assert!(text.contains("m.shard-1-of-2.csv") && text.contains("m.shard-0-of-3.csv"), "{text}");
        }
    }

    #[test]
    fn shards_with_different_fingerprints_are_refused_naming_the_field_and_files() {
        let dir = tempfile::tempdir().unwrap();
        shard(dir.path(), 0, 2, &["a"]);
        std::fs::write(dir.path().join(shard_file_name("m", 1, 2)), "shard,key\n1,b\n").unwrap();
        // Written elsewhere with other options, then copied in (record would refuse it in one folder).
        let mut run = run_json::read(dir.path()).unwrap().unwrap();
        let mut other = run.invocations[0].clone();
        other.shard = Some("1/2".into());
        let mut changed = fingerprint();
        changed.options = changed.options.replace("\"reps\":20", "\"reps\":50");
        other.fingerprint = Some(changed);
        run.invocations.push(other);
        std::fs::write(run_json::path(dir.path()), serde_json::to_string(&run).unwrap()).unwrap();
        let err = check_dir(dir.path(), false).unwrap_err();
        let text = err.to_string();
        assert!(matches!(&err, Error::ShardFingerprints { diff, .. } if diff.field == "options"), "{text}");
        assert!(text.contains("m.shard-0-of-2.csv and m.shard-1-of-2.csv"), "{text}");
        assert!(text.contains("\"reps\":20") && text.contains("\"reps\":50"), "{text}");
    }

    #[test]
    fn a_shard_that_run_json_does_not_record_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        shard(dir.path(), 0, 2, &["a"]);
        std::fs::write(dir.path().join(shard_file_name("m", 1, 2)), "shard,key\n1,b\n").unwrap();
        let err = check_dir(dir.path(), false).unwrap_err();
        assert!(matches!(&err, Error::ShardUnrecorded { file, .. } if file.ends_with("m.shard-1-of-2.csv")), "{err}");
        // No run.json at all: the same.
        let bare = tempfile::tempdir().unwrap();
        std::fs::write(bare.path().join(shard_file_name("m", 0, 1)), "shard,key\n0,a\n").unwrap();
        let err = check_dir(bare.path(), false).unwrap_err();
        assert!(err.to_string().contains("run.json records no run that wrote it"), "{err}");
    }

    #[test]
    fn a_key_twice_is_refused_naming_the_key_and_files() {
        let dir = tempfile::tempdir().unwrap();
        let a = shard(dir.path(), 0, 2, &["k1", "k2"]);
        let b = shard(dir.path(), 1, 2, &["k3", "k2"]);
        check_dir(dir.path(), false).unwrap();
        let out = dir.path().join("m.csv");
        let err = merge(&shard_files(dir.path()).unwrap()["m"], &out).err().unwrap();
        let text = err.to_string();
        assert!(matches!(err, Error::DuplicateKey { ref key, .. } if key == "k2"), "{text}");
        assert!(text.contains(&a.display().to_string()) && text.contains(&b.display().to_string()), "{text}");
        assert!(!out.exists(), "nothing is written");
        // Twice in one file (an older suite's resume) is refused too.
        let other = tempfile::tempdir().unwrap();
        let c = shard(other.path(), 0, 1, &["x", "x"]);
        let err = merge(&[ShardFile { index: 0, count: 1, path: c }], &out).err().unwrap();
        assert!(matches!(err, Error::DuplicateKey { ref key, .. } if key == "x"), "{err}");
    }

    #[test]
    fn shards_with_different_columns_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("m.shard-0-of-2.csv"), dir.path().join("m.shard-1-of-2.csv"));
        std::fs::write(&a, "a,b\n1,2\n").unwrap();
        std::fs::write(&b, "a,c\n1,2\n").unwrap();
        let files = [ShardFile { index: 0, count: 2, path: a }, ShardFile { index: 1, count: 2, path: b }];
        let err = merge(&files, &dir.path().join("m.csv")).err().unwrap();
        assert!(matches!(err, Error::HeaderMismatch { .. }), "{err}");
    }
}
