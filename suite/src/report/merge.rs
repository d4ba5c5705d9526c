//! Joining the CSVs of a sharded run (`suite run --shard i/n`, one process per GPU) into one CSV per experiment.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{Error, Result};

/// Shard files in `dir`, grouped by experiment: `<experiment>.shard-<i>-of-<n>.csv`.
pub fn shard_files(dir: &Path) -> Result<BTreeMap<String, Vec<PathBuf>>> {
    let entries =
        std::fs::read_dir(dir).map_err(|source| Error::Io { action: "cannot read", path: dir.into(), source })?;
    let mut groups: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for entry in entries {
        let path = entry.map_err(|source| Error::Io { action: "cannot read", path: dir.into(), source })?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else { continue };
        if let Some((experiment, rest)) = name.split_once(".shard-") {
            if rest.ends_with(".csv") {
                groups.entry(experiment.to_string()).or_default().push(path.clone());
            }
        }
    }
    for files in groups.values_mut() {
        files.sort();
    }
    Ok(groups)
}

/// Writes `out` with the header of the shards and every complete row of each, in shard order. Shards must share
/// one header; `out` must not exist yet (a merge never overwrites results).
pub fn merge(shards: &[PathBuf], out: &Path) -> Result<usize> {
    if out.exists() {
        return Err(Error::Exists { path: out.into() });
    }
    let mut header: Option<csv::StringRecord> = None;
    let mut rows = Vec::new();
    for path in shards {
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
        for record in reader.records() {
            let record = record.map_err(|source| Error::Csv { path: path.clone(), source })?;
            // A row cut short by a killed shard is not a measurement.
            if record.len() == h.len() {
                rows.push(record);
            }
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

    #[test]
    fn shards_merge_in_order_and_skip_cut_rows() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("matmul.shard-1-of-2.csv"), "a,b\n3,4\n5").unwrap();
        std::fs::write(dir.path().join("matmul.shard-0-of-2.csv"), "a,b\n1,2\n").unwrap();
        std::fs::write(dir.path().join("smoke.csv"), "x\n1\n").unwrap();
        let groups = shard_files(dir.path()).unwrap();
        assert_eq!(groups.keys().collect::<Vec<_>>(), ["matmul"]);
        let out = dir.path().join("matmul.csv");
        assert_eq!(merge(&groups["matmul"], &out).unwrap(), 2);
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "a,b\n1,2\n3,4\n");
        // Never overwrites.
        assert!(matches!(merge(&groups["matmul"], &out), Err(Error::Exists { .. })));
    }

    #[test]
    fn shards_with_different_columns_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("m.shard-0-of-2.csv"), dir.path().join("m.shard-1-of-2.csv"));
        std::fs::write(&a, "a,b\n1,2\n").unwrap();
        std::fs::write(&b, "a,c\n1,2\n").unwrap();
        let err = merge(&[a, b], &dir.path().join("m.csv")).unwrap_err();
        assert!(matches!(err, Error::HeaderMismatch { .. }), "{err}");
    }
}
