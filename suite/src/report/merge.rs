//! Joining the CSVs of a sharded run (`suite run --shard i/n`, one process per GPU) into one CSV per experiment.
//!
//! A merge is strict, because a merged CSV looks complete whatever went in: every shard `0..n` must be there (or
//! `--partial` says which are not), all of one count `n`, measured alike (their fingerprints in `run.json` agree),
//! and no point may appear twice.

use std::collections::{BTreeMap, HashMap};
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

/// Checks that `shards` (one experiment's files, from [`shard_files`]) form one complete run: one shard count, no
/// shard missing, and every shard recorded in `run` (the folder's `run.json`) with the same fingerprint. With
/// `partial`, missing shards are allowed; returns their file names.
pub fn check(
    experiment: &str,
    shards: &[ShardFile],
    run: Option<&RunJson>,
    run_path: &Path,
    partial: bool,
) -> Result<Vec<String>> {
    let mut counts: Vec<usize> = shards.iter().map(|s| s.count).collect();
    counts.dedup();
    if counts.len() > 1 {
        let found = shards.iter().map(|s| display_name(&s.path)).collect::<Vec<_>>().join(", ");
        return Err(Error::ShardCounts { experiment: experiment.into(), found });
    }
    let Some(&count) = counts.first() else { return Ok(Vec::new()) };
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
    Ok(missing)
}

fn display_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| path.display().to_string())
}

/// Writes `out` with the header of the shards and every complete row of each, in shard order; returns the number of
/// rows. Shards must share one header and no point (`key`) may appear twice; `out` must not exist yet (a merge never
/// overwrites results). Check the set with [`check`] first.
pub fn merge(shards: &[ShardFile], out: &Path) -> Result<usize> {
    if out.exists() {
        return Err(Error::Exists { path: out.into() });
    }
    let mut header: Option<csv::StringRecord> = None;
    let mut rows = Vec::new();
    let mut seen: HashMap<String, PathBuf> = HashMap::new();
    for shard in shards {
        let path = &shard.path;
        let mut reader = csv::ReaderBuilder::new()
            .flexible(true)
            .from_path(path)
            .map_err(|source| Error::Csv { path: path.clone(), source })?;
        let h = reader.headers().map_err(|source| Error::Csv { path: path.clone(), source })?.clone();
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
        for record in reader.records() {
            let record = record.map_err(|source| Error::Csv { path: path.clone(), source })?;
            // A row cut short by a killed shard is not a measurement.
            if record.len() != h.len() {
                continue;
            }
            if let Some(key) = key_column.and_then(|k| record.get(k)) {
                if let Some(earlier) = seen.insert(key.to_string(), path.clone()) {
                    return Err(Error::DuplicateKey { key: key.into(), first: earlier, second: path.clone() });
                }
            }
            rows.push(record);
        }
    }
    let Some(header) = header else { return Ok(0) };
    let mut writer = csv::Writer::from_path(out).map_err(|source| Error::Csv { path: out.into(), source })?;
    writer.write_record(&header).map_err(|source| Error::Csv { path: out.into(), source })?;
    for row in &rows {
        writer.write_record(row).map_err(|source| Error::Csv { path: out.into(), source })?;
    }
    writer.flush().map_err(|source| Error::Io { action: "cannot write", path: out.into(), source })?;
    Ok(rows.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::occupancy::tests::h100;
    use crate::report::run_json::tests::fingerprint;
    use crate::report::run_json::{self, record, Invocation};

    /// Records that shard `i/n` of `experiment` ran with `fingerprint` in `dir`'s run.json.
    fn recorded(dir: &Path, experiment: &str, shard: &str, fingerprint: Fingerprint) {
        let mut inv = Invocation::now(serde_json::json!({}), Some(shard.into()));
        inv.experiment = experiment.into();
        inv.fingerprint = Some(fingerprint);
        record(dir, &h100(), inv).unwrap();
    }

    /// Writes shard `i` of `n` of `m` with rows for `keys`, and records it.
    fn shard(dir: &Path, i: usize, n: usize, keys: &[&str]) -> PathBuf {
        let path = dir.join(shard_file_name("m", i, n));
        let rows: String = keys.iter().map(|k| format!("{i},{k}\n")).collect();
        std::fs::write(&path, format!("shard,key\n{rows}")).unwrap();
        recorded(dir, "m", &format!("{i}/{n}"), fingerprint());
        path
    }

    fn check_dir(dir: &Path, partial: bool) -> Result<Vec<String>> {
        let groups = shard_files(dir)?;
        let run = run_json::read(dir)?;
        check("m", &groups["m"], run.as_ref(), &run_json::path(dir), partial)
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
        // A cut last row from a killed shard.
        let cut = dir.path().join(shard_file_name("m", 3, 11));
        std::fs::write(&cut, "shard,key\n3,k3\n3").unwrap();
        assert_eq!(check_dir(dir.path(), false).unwrap(), Vec::<String>::new());
        let out = dir.path().join("m.csv");
        assert_eq!(merge(&shard_files(dir.path()).unwrap()["m"], &out).unwrap(), 11);
        let expected: String = (0..11).map(|i| format!("{i},k{i}\n")).collect();
        assert_eq!(std::fs::read_to_string(&out).unwrap(), format!("shard,key\n{expected}"));
        // Never overwrites.
        assert!(matches!(merge(&shard_files(dir.path()).unwrap()["m"], &out), Err(Error::Exists { .. })));
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
        assert_eq!(check_dir(dir.path(), true).unwrap(), ["m.shard-1-of-3.csv"]);
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
        let err = merge(&shard_files(dir.path()).unwrap()["m"], &out).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, Error::DuplicateKey { ref key, .. } if key == "k2"), "{text}");
        assert!(text.contains(&a.display().to_string()) && text.contains(&b.display().to_string()), "{text}");
        assert!(!out.exists(), "nothing is written");
        // Twice in one file (an older suite's resume) is refused too.
        let c = shard(dir.path(), 0, 1, &["x", "x"]);
        let err = merge(&[ShardFile { index: 0, count: 1, path: c }], &out).unwrap_err();
        assert!(matches!(err, Error::DuplicateKey { ref key, .. } if key == "x"), "{err}");
    }

    #[test]
    fn shards_with_different_columns_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("m.shard-0-of-2.csv"), dir.path().join("m.shard-1-of-2.csv"));
        std::fs::write(&a, "a,b\n1,2\n").unwrap();
        std::fs::write(&b, "a,c\n1,2\n").unwrap();
        let files = [ShardFile { index: 0, count: 2, path: a }, ShardFile { index: 1, count: 2, path: b }];
        let err = merge(&files, &dir.path().join("m.csv")).unwrap_err();
        assert!(matches!(err, Error::HeaderMismatch { .. }), "{err}");
    }
}
