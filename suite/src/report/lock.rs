//! One writer per results file: the locks a run holds for its whole life. A results folder's claim and locks are
//! taken by its owner alone ([`super::folder::ResultsFolder::take`]), which holds them until it is dropped.
//!
//! Two jobs given one results folder (a user resubmitting while the first still runs, a hand `suite run --resume`
//! beside a job) must not both append to one CSV: rows of different lengths written at once interleave into a
//! corrupt fragment, and both would measure every point. So each writer takes a lock before it measures anything
//! and keeps it until it exits, and a second writer is refused at once with a message naming the first (host, pid,
//! Slurm job, since when) and what to do.
//!
//! A lock is a small file beside what it guards (`.suite-writer.lock` for a folder, `.<file>.lock` for a CSV),
//! locked with `flock(2)`: the kernel releases it when its process dies, however it dies, so a killed job never
//! leaves a folder locked. The file also holds a record of its holder (JSON), written after the lock is taken and
//! cleared when it is released, so a refused writer can say who holds it.
//!
//! Two file systems need more than that:
//! - Lustre mounted with `localflock` (and BeeGFS without global locks) grants `flock` per node: two nodes can both
//!   "hold" it. A lock taken there whose record names a holder on another host is honoured only once that holder
//!   is provably gone (below).
//! - A file system that refuses `flock` (Lustre with `noflock`, NFS without a lock daemon): the lock is then a
//!   claim file created exclusively (`O_EXCL`, atomic on Lustre and NFSv3+) holding the record, removed on
//!   release. A claim left by a killed process is stale only when its holder is provably gone.
//!
//! A holder is provably gone when: it ran on this host and its pid is gone (or is another process now, told by its
//! start time, or the host has rebooted since); or it ran in a Slurm job that Slurm no longer runs (`squeue` does
//! not list it as running, or this process is the same job requeued since). Nothing else counts as proof: a holder
//! on another host outside Slurm is refused with the lock file to remove by hand once its owner is sure.

use std::fs::{File, OpenOptions};
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::{Error, Result};
use crate::options::Shard;

/// Who holds a lock: written into the lock file by its holder, read by a writer it refuses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// Host name.
    pub host: String,
    /// Process id on that host.
    pub pid: u32,
    /// The process's start time in clock ticks since boot (`/proc/<pid>/stat`), to tell a reused pid apart.
    #[serde(default)]
    pub process_start: Option<u64>,
    /// The host's boot id (`/proc/sys/kernel/random/boot_id`), to tell a rebooted host apart.
    #[serde(default)]
    pub boot_id: Option<String>,
    /// The Slurm job the process ran in (`SLURM_JOB_ID`), if any.
    #[serde(default)]
    pub slurm_job_id: Option<String>,
    /// How often Slurm had requeued that job when the lock was taken (`SLURM_RESTART_COUNT`, 0 when unset).
    #[serde(default)]
    pub slurm_restart_count: Option<u32>,
    /// When the lock was taken, RFC 3339 (UTC).
    pub since: String,
    /// What holds it, e.g. `suite run (shard 3/8)` or `suite merge`.
    pub what: String,
    /// The holder's command line.
    #[serde(default)]
    pub command: String,
}

impl Holder {
    /// A record of this process, now.
    pub fn this_process(what: &str) -> Holder {
        let pid = std::process::id();
        Holder {
            host: host_name(),
            pid,
            process_start: process_start(pid),
            boot_id: boot_id(),
            slurm_job_id: std::env::var("SLURM_JOB_ID").ok().filter(|v| !v.is_empty()),
            slurm_restart_count: std::env::var("SLURM_JOB_ID")
                .ok()
                .map(|_| std::env::var("SLURM_RESTART_COUNT").ok().and_then(|c| c.parse().ok()).unwrap_or(0)),
            since: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            what: what.to_string(),
            command: std::env::args().collect::<Vec<_>>().join(" "),
        }
    }

    /// `suite run (shard 3/8) on host nid001, pid 4711, Slurm job 123 (restart 0), since 2026-11-25T10:00:00Z`.
    pub fn describe(&self) -> String {
        let job = match (&self.slurm_job_id, self.slurm_restart_count) {
            (Some(id), Some(r)) if r > 0 => format!(", Slurm job {id} (requeued {r} times)"),
            (Some(id), _) => format!(", Slurm job {id}"),
            (None, _) => String::new(),
        };
        let command = if self.command.is_empty() { String::new() } else { format!(" (`{}`)", self.command) };
        format!("{} on host {}, pid {}{job}, since {}{command}", self.what, self.host, self.pid, self.since)
    }
}

impl Holder {
    /// A folder's owner as a refusal names it: `Slurm job 123 on host nid001, since 2026-11-25T10:00:00Z (suite run
    /// (shard 3/8))`, or a process outside Slurm as [`Holder::describe`] says.
    pub fn describe_owner(&self) -> String {
        match &self.slurm_job_id {
            Some(id) => format!("Slurm job {id} on host {}, since {} ({})", self.host, self.since, self.what),
            None => self.describe(),
        }
    }
}

/// The record of the Slurm job that owns a results folder (its first writer's job).
pub fn owner_path(dir: &Path) -> PathBuf {
    dir.join(".suite-owner.json")
}

/// The owner recorded for `dir`, if any (a record that does not parse counts as none: nothing can be told of it).
fn read_owner(dir: &Path) -> Option<Holder> {
    let mut file = crate::safe_fs::open_read(&owner_path(dir)).ok()?;
    read_record(&mut file)
}

/// Why `owner` (a folder's owner record) is provably gone, or `None` while it may run. A Slurm job is judged by
/// Slurm alone (a job's first task may end while its other tasks, and its merge, still run): requeued since, or no
/// longer running. A writer outside Slurm is judged as a lock's holder is ([`gone`]).
fn owner_gone(owner: &Holder) -> Option<String> {
    let Some(job) = &owner.slurm_job_id else { return gone(owner) };
    if std::env::var("SLURM_JOB_ID").ok().as_ref() == Some(job) {
        let ours: u32 = std::env::var("SLURM_RESTART_COUNT").ok().and_then(|c| c.parse().ok()).unwrap_or(0);
        return (ours > owner.slurm_restart_count.unwrap_or(0))
            .then(|| format!("Slurm requeued job {job} since: its earlier run has ended"));
    }
    slurm_job_ended(job)
}

/// The owner of `dir` that would refuse this process: a recorded Slurm job other than this process's own that is
/// not provably gone. For `suite run --dry-run`, which tells before a job is queued.
pub fn other_owner(dir: &Path) -> Option<Holder> {
    let owner = read_owner(dir)?;
    let ours = std::env::var("SLURM_JOB_ID").ok().filter(|v| !v.is_empty());
    if owner.slurm_job_id.is_some() && owner.slurm_job_id == ours {
        return None;
    }
    owner_gone(&owner).is_none().then_some(owner)
}

/// One job owns a results folder from its first write until it ends: before anything else touches `dir`, a writer
/// (`what`: `suite run`, a shard, `suite merge`) checks its owner record. Another Slurm job that has not provably
/// ended refuses it ([`Error::Owned`], naming the job, its host and since when); a writer of the owner's own job (its
/// other tasks, its merge, its requeued run) goes on; where there is no owner, or it is provably gone, a writer in
/// a Slurm job records its job as the owner, so the tasks of a second job are refused before they measure, even
/// when their shards' locks are free. The check and the record are one step under `.suite-owner.lock`.
pub(super) fn claim_folder(dir: &Path, what: &str) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(io("cannot create", dir))?;
    let record = owner_path(dir);
    let _lock = WriterLock::exclusive(&dir.join(".suite-owner.lock"), &record, "a claim of the folder", Wait::Forever)?;
    let me = Holder::this_process(what);
    if let Some(owner) = read_owner(dir) {
        let same_job = owner.slurm_job_id.is_some() && owner.slurm_job_id == me.slurm_job_id;
        match owner_gone(&owner) {
            // This job's own record (another of its tasks wrote it): nothing to change.
            None if same_job => return Ok(()),
            None => {
                return Err(Error::Owned {
                    dir: dir.to_path_buf(),
                    owner: super::printable(&owner.describe_owner()),
                    record,
                })
            }
            Some(why) if !same_job => {
                eprintln!("{}: taking over from {} ({why})", dir.display(), super::printable(&owner.describe_owner()));
            }
            Some(_) => {}
        }
    }
    if me.slurm_job_id.is_none() {
        // A writer outside Slurm owns the folder only while it holds its locks; an owner record of a job that has
        // ended is of no use to anyone.
        if record.exists() {
            std::fs::remove_file(&record).map_err(io("cannot remove", &record))?;
        }
        return Ok(());
    }
    let text = serde_json::to_string(&me).map_err(|source| Error::Json { path: record.clone(), source })?;
    crate::safe_fs::write_whole(&record, text.as_bytes()).map_err(io("cannot write", &record))
}

/// How a lock is held.
#[derive(Debug)]
enum Kind {
    /// `flock(2)` on the lock file, exclusive; the record is in the file.
    Exclusive,
    /// `flock(2)` on the lock file, shared with other holders; no record (there are several holders).
    Shared,
    /// The file system refuses `flock`: a claim file created exclusively holds the record.
    Claim(PathBuf),
}

/// A lock held until dropped (or until the process ends, whatever ends it).
#[derive(Debug)]
pub struct WriterLock {
    path: PathBuf,
    file: File,
    kind: Kind,
}

/// Whether to wait for a lock that another writer holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Refuse at once.
    No,
    /// Wait as long as it takes, saying who holds it once a minute.
    Forever,
}

/// The lock file that guards `file` (`dir/x.csv` → `dir/.x.csv.lock`).
pub fn lock_path_for(file: &Path) -> PathBuf {
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    file.with_file_name(format!(".{name}.lock"))
}

/// The folder lock of a results folder: exclusive for an unsharded run or a merge, shared by the shards of a
/// sharded run.
pub fn folder_lock_path(dir: &Path) -> PathBuf {
    dir.join(".suite-writer.lock")
}

/// The lock of one shard of a sharded run in `dir`.
pub fn shard_lock_path(dir: &Path, shard: Shard) -> PathBuf {
    dir.join(format!(".suite-writer.shard-{}-of-{}.lock", shard.index, shard.count))
}

impl WriterLock {
    /// Takes the exclusive lock at `path` for `what` (e.g. `suite run`), guarding `guarded` (named in messages),
    /// refusing at once or waiting as `wait` says.
    pub fn exclusive(path: &Path, guarded: &Path, what: &str, wait: Wait) -> Result<WriterLock> {
        with_wait(guarded, wait, || try_exclusive(path, guarded, what))
    }

    /// Takes the lock at `path` shared with other shared holders (the shards of one run), excluding an exclusive
    /// holder. Where the file system refuses locks there is no shared lock: `Ok(None)`, and the caller relies on
    /// its exclusive locks alone.
    pub fn shared(path: &Path, guarded: &Path, wait: Wait) -> Result<Option<WriterLock>> {
        with_wait(guarded, wait, || try_shared(path, guarded))
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for WriterLock {
    fn drop(&mut self) {
        // Clear the record before the lock goes: a reader never finds a record of a holder that has let go. Errors
        // are not worth a panic here: the kernel releases the lock anyway, and a stale record of a process that has
        // ended is recognised as such.
        match &self.kind {
            Kind::Exclusive => {
                let _ = self.file.set_len(0);
                let _ = self.file.unlock();
            }
            Kind::Shared => {
                let _ = self.file.unlock();
            }
            Kind::Claim(claim) => {
                let _ = std::fs::remove_file(claim);
            }
        }
    }
}

/// The locks a run holds on its results folder from before it measures anything until it exits: an unsharded run
/// (or a merge) holds the folder's lock alone; each shard of a sharded run holds it shared with the other shards,
/// and its own shard's lock alone. So two unsharded runs, a merge during a sharded run, an unsharded run beside a
/// sharded one, and two processes of one shard all exclude each other, while the shards of one run do not.
#[derive(Debug)]
pub struct FolderLock {
    _locks: Vec<WriterLock>,
}

impl FolderLock {
    /// Takes the locks of a writer of `dir` (of `shard`, when sharded) for `what` (e.g. `suite run`).
    pub(super) fn take(dir: &Path, shard: Option<Shard>, what: &str, wait: Wait) -> Result<FolderLock> {
        let folder = folder_lock_path(dir);
        let locks = match shard {
            None => vec![WriterLock::exclusive(&folder, dir, what, wait)?],
            Some(s) => {
                let mut locks: Vec<WriterLock> = WriterLock::shared(&folder, dir, wait)?.into_iter().collect();
                let what = format!("{what} (shard {s})");
                locks.push(WriterLock::exclusive(&shard_lock_path(dir, s), dir, &what, wait)?);
                locks
            }
        };
        Ok(FolderLock { _locks: locks })
    }

    /// Who writes into `dir` now, without taking anything: the holder of its folder lock, or those of its shard
    /// locks; empty when nobody does. For `suite run --dry-run`, which tells before a job is queued.
    pub fn holders(dir: &Path) -> Vec<Holder> {
        let folder = folder_lock_path(dir);
        if !folder.exists() {
            return Vec::new();
        }
        match probe(&folder) {
            Some(holder) if holder.what != SHARED_HOLDER => vec![holder],
            _ => held_shards(dir),
        }
    }
}

/// What [`probe`] calls a holder it cannot name: the lock is held shared, by writers that write no record.
const SHARED_HOLDER: &str = "writers holding it shared";

/// Runs `attempt` until it is not refused by a holder, or once when `wait` is `No`. Retries come quickly at first
/// (a lock held for a moment, like run.json's, is free again within milliseconds), then every half second.
fn with_wait<T>(guarded: &Path, wait: Wait, mut attempt: impl FnMut() -> Result<T>) -> Result<T> {
    let started = Instant::now();
    let mut said = None::<Instant>;
    let mut pause = Duration::from_millis(2);
    loop {
        match attempt() {
            Err(Error::Locked { holder, .. }) if wait == Wait::Forever => {
                if started.elapsed() > Duration::from_secs(2)
                    && said.is_none_or(|t| t.elapsed() >= Duration::from_secs(60))
                {
                    eprintln!(
                        "waiting for {} ({} s so far): held by {holder}",
                        guarded.display(),
                        started.elapsed().as_secs()
                    );
                    said = Some(Instant::now());
                }
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(500));
            }
            other => return other,
        }
    }
}

fn io<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> Error + 'a {
    move |source| super::io_error(action, path, source)
}

/// A lock file, opened without following a link and only when it is a regular file of this user: a link planted
/// under a lock's name in a shared folder would otherwise have the record written (and the file cut) where it
/// points.
fn open_lock_file(path: &Path) -> Result<File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io("cannot create", dir))?;
    }
    crate::safe_fs::open_lock(path).map_err(io("cannot open", path))
}

/// Whether an error from `flock` means the file system does not do locks (rather than a real failure).
fn locks_unsupported(e: &std::io::Error) -> bool {
    matches!(e.kind(), std::io::ErrorKind::Unsupported)
        || e.raw_os_error().is_some_and(|code| [ENOLCK, ENOSYS, EOPNOTSUPP, EINVAL].contains(&code))
}

// Linux's errno values (x86_64 and aarch64 share them), named here rather than pulling in libc for four constants:
// no lock manager (NFS), locks switched off (Lustre `noflock` returns ENOSYS), not supported, not a lockable file.
const ENOLCK: i32 = 37;
const ENOSYS: i32 = 38;
const EOPNOTSUPP: i32 = 95;
const EINVAL: i32 = 22;

fn try_exclusive(path: &Path, guarded: &Path, what: &str) -> Result<WriterLock> {
    let mut file = open_lock_file(path)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            return Err(locked(path, guarded, holder_of_kernel_lock(&mut file, path)));
        }
        Err(std::fs::TryLockError::Error(e)) if locks_unsupported(&e) => {
            return try_claim(path, guarded, what, file);
        }
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(Error::Io { action: "cannot lock", path: path.into(), source: e })
        }
    }
    // Ours. A record left in the file is of a holder whose lock the kernel has released (it died), unless the
    // kernel's lock does not reach other hosts and the record names another host.
    if let Some(previous) = read_record(&mut file) {
        if previous.host != host_name() && !flock_spans_hosts(path) && gone(&previous).is_none() {
            let _ = file.unlock();
            return Err(locked(
                path,
                guarded,
                format!(
                    "{} (the file system's locks do not reach other hosts, and that process is not provably gone)",
                    previous.describe()
                ),
            ));
        }
    }
    write_record(&mut file, path, &Holder::this_process(what))?;
    Ok(WriterLock { path: path.to_path_buf(), file, kind: Kind::Exclusive })
}

fn try_shared(path: &Path, guarded: &Path) -> Result<Option<WriterLock>> {
    let mut file = open_lock_file(path)?;
    match file.try_lock_shared() {
        Ok(()) => {
            // Records are written by exclusive holders only, and none holds it now: one left here is of a holder
            // that died. Cleared, so that a writer refused later names the real holders.
            if file.metadata().is_ok_and(|m| m.len() > 0) {
                let _ = file.set_len(0);
            }
            Ok(Some(WriterLock { path: path.to_path_buf(), file, kind: Kind::Shared }))
        }
        Err(std::fs::TryLockError::WouldBlock) => Err(locked(path, guarded, holder_of_kernel_lock(&mut file, path))),
        Err(std::fs::TryLockError::Error(e)) if locks_unsupported(&e) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(Error::Io { action: "cannot lock", path: path.into(), source: e }),
    }
}

/// The holder of a lock the kernel says is held: its record, or, for the folder lock held shared (the shards of a
/// run), the shard locks beside it that are held. Only the folder lock is ever held shared: any other lock without a
/// record was taken a moment ago. Its shard locks are not probed then: a probe takes each for a moment, and a shard
/// writer taking its own lock at that moment would be refused (eight shards waiting for run.json's lock at the start
/// of a run probed them over and over).
fn holder_of_kernel_lock(file: &mut File, path: &Path) -> String {
    if let Some(record) = read_record(file) {
        return record.describe();
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    if path.file_name() == folder_lock_path(dir).file_name() {
        let shards = held_shards(dir);
        if !shards.is_empty() {
            return shards.iter().map(Holder::describe).collect::<Vec<_>>().join("; ");
        }
    }
    // Taken a moment ago, its record not yet written; or held shared by writers that record nothing.
    "another process (it has not written its record yet, or holds the lock shared)".to_string()
}

/// The refusal of a writer by the holder of `path`; the holder's record (written by another process, maybe another
/// user's) is printed without its control characters.
fn locked(path: &Path, guarded: &Path, holder: String) -> Error {
    Error::Locked { guarded: guarded.to_path_buf(), lock: path.to_path_buf(), holder: super::printable(&holder) }
}

/// The lock where the file system refuses `flock`: a claim file beside the lock file, created exclusively.
fn try_claim(path: &Path, guarded: &Path, what: &str, file: File) -> Result<WriterLock> {
    let claim = claim_path(path);
    for _ in 0..3 {
        // O_EXCL: never through a link planted under the claim's name (create_new fails on any existing name).
        match OpenOptions::new().write(true).create_new(true).open(&claim) {
            Ok(mut f) => {
                write_record(&mut f, &claim, &Holder::this_process(what))?;
                return Ok(WriterLock { path: path.to_path_buf(), file, kind: Kind::Claim(claim) });
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let text = std::fs::read_to_string(&claim).unwrap_or_default();
                let Ok(previous) = serde_json::from_str::<Holder>(&text) else {
                    // Created a moment ago by a writer that has not written its record yet.
                    return Err(locked(&claim, guarded, "another process (it has not written its record yet)".into()));
                };
                let Some(why) = gone(&previous) else {
                    return Err(locked(&claim, guarded, previous.describe()));
                };
                // Stale. Move it aside under a name of our own, then check that what moved is the record judged
                // stale (another writer may have broken it and claimed anew in between: put that claim back).
                let aside = claim.with_extension(format!("stale-{}-{}", std::process::id(), nanos()));
                if std::fs::rename(&claim, &aside).is_ok() {
                    let moved = std::fs::read_to_string(&aside).unwrap_or_default();
                    if moved == text {
                        eprintln!("{}: removed a stale lock: {} ({why})", claim.display(), previous.describe());
                        let _ = std::fs::remove_file(&aside);
                    } else {
                        let _ = std::fs::hard_link(&aside, &claim);
                        let _ = std::fs::remove_file(&aside);
                    }
                }
            }
            Err(e) => return Err(Error::Io { action: "cannot create", path: claim, source: e }),
        }
    }
    Err(locked(&claim, guarded, "other writers, claiming it at the same moment".into()))
}

fn claim_path(path: &Path) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    path.with_file_name(format!("{name}.claim"))
}

fn nanos() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0)
}

/// The record in a lock file, if it holds a whole one.
fn read_record(file: &mut File) -> Option<Holder> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.read_to_string(&mut text).ok()?;
    serde_json::from_str(&text).ok()
}

fn write_record(file: &mut File, path: &Path, holder: &Holder) -> Result<()> {
    let text = serde_json::to_string(holder).map_err(|source| Error::Json { path: path.into(), source })?;
    file.set_len(0).map_err(io("cannot write", path))?;
    file.seek(SeekFrom::Start(0)).map_err(io("cannot write", path))?;
    file.write_all(text.as_bytes()).map_err(io("cannot write", path))?;
    // Other nodes read the record: it must be on the file system, not in this node's cache alone.
    file.sync_data().map_err(io("cannot write", path))
}

/// The holders of the shard locks in `dir` that are held now (each a record of a shard writer).
pub fn held_shards(dir: &Path) -> Vec<Holder> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut holders = Vec::new();
    let mut names: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(".suite-writer.shard-") && n.ends_with(".lock"))
        })
        .collect();
    names.sort();
    for path in names {
        if let Some(holder) = probe(&path) {
            holders.push(holder);
        }
    }
    holders
}

/// The holder of the lock at `path` if it is held now (without taking it), `None` when it is free or absent.
pub fn probe(path: &Path) -> Option<Holder> {
    // Read-only and not through a link: `flock` needs no write access, and a prober never changes the file.
    let mut file = crate::safe_fs::open_read(path).ok()?;
    match file.try_lock() {
        Ok(()) => {
            // Free: a record left in it is of a holder that died (or, on a file system whose locks stay on one
            // host, one on another host, judged as a claim is).
            let previous = read_record(&mut file);
            let _ = file.unlock();
            previous.filter(|p| p.host != host_name() && !flock_spans_hosts(path) && gone(p).is_none())
        }
        Err(std::fs::TryLockError::WouldBlock) => {
            read_record(&mut file).or_else(|| Some(Holder { what: SHARED_HOLDER.into(), ..Holder::this_process("") }))
        }
        Err(std::fs::TryLockError::Error(_)) => {
            let text = std::fs::read_to_string(claim_path(path)).ok()?;
            let holder: Holder = serde_json::from_str(&text).ok()?;
            gone(&holder).is_none().then_some(holder)
        }
    }
}

/// Why `holder` is provably gone, or `None` when it may still run.
pub fn gone(holder: &Holder) -> Option<String> {
    if holder.host == host_name() {
        if let (Some(then), Some(now)) = (&holder.boot_id, boot_id()) {
            if *then != now {
                return Some("this host has rebooted since".into());
            }
        }
        return match process_start(holder.pid) {
            None => Some(format!("no process {} runs on this host", holder.pid)),
            Some(start) if holder.process_start.is_some_and(|s| s != start) => {
                Some(format!("pid {} is another process now", holder.pid))
            }
            Some(_) => None,
        };
    }
    let job = holder.slurm_job_id.as_ref()?;
    if std::env::var("SLURM_JOB_ID").ok().as_ref() == Some(job) {
        let ours: u32 = std::env::var("SLURM_RESTART_COUNT").ok().and_then(|c| c.parse().ok()).unwrap_or(0);
        return (ours > holder.slurm_restart_count.unwrap_or(0))
            .then(|| format!("Slurm requeued job {job} since: its earlier run has ended"));
    }
    slurm_job_ended(job)
}

/// Why Slurm job `id` is provably not running, asking `squeue`; `None` when it runs or Slurm cannot be asked.
fn slurm_job_ended(id: &str) -> Option<String> {
    let out = std::process::Command::new("squeue").args(["-h", "-j", id, "-o", "%T"]).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let error = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        // squeue fails for a job id it no longer knows ("Invalid job id specified"): ended.
        return error.contains("Invalid job id").then(|| format!("Slurm no longer knows job {id}"));
    }
    match text.as_str() {
        "" => Some(format!("Slurm lists no job {id}: it has ended")),
        // Requeued: its processes were ended before it went back to the queue.
        "PENDING" | "REQUEUED" | "REQUEUE_HOLD" | "REQUEUE_FED" | "SPECIAL_EXIT" => {
            Some(format!("Slurm job {id} is {text}: its processes have ended"))
        }
        // Ended, and still listed for a while (MinJobAge).
        "COMPLETED" | "FAILED" | "CANCELLED" | "TIMEOUT" | "NODE_FAIL" | "OUT_OF_MEMORY" | "BOOT_FAIL" | "DEADLINE"
        | "PREEMPTED" | "REVOKED" => Some(format!("Slurm job {id} has ended ({text})")),
        // Running, completing (its processes may still write), suspended, ...
        _ => None,
    }
}

/// Whether `flock` on `path` excludes processes on other hosts too: not on Lustre mounted without `flock` (its
/// `localflock` grants locks per node) nor on BeeGFS (global locks are off by default); on every other file system
/// (local ones, NFS with its lock manager, GPFS) a lock the kernel grants is the only one.
fn flock_spans_hosts(path: &Path) -> bool {
    let Ok(mounts) = std::fs::read_to_string("/proc/self/mounts") else { return true };
    let path = path.parent().and_then(|d| d.canonicalize().ok()).unwrap_or_else(|| path.to_path_buf());
    mount_allows_cluster_flock(&mounts, &path)
}

/// The rule of [`flock_spans_hosts`] over the text of `/proc/self/mounts`: the mount holding `path` is the one with
/// the longest mount point that is a prefix of it.
fn mount_allows_cluster_flock(mounts: &str, path: &Path) -> bool {
    let best = mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_, point, fstype, options) = (f.next()?, f.next()?, f.next()?, f.next()?);
            path.starts_with(point).then_some((point.len(), fstype, options))
        })
        .max_by_key(|(len, _, _)| *len);
    match best {
        Some((_, "lustre", options)) => options.split(',').any(|o| o == "flock"),
        Some((_, fstype, _)) if fstype.contains("beegfs") => false,
        _ => true,
    }
}

fn host_name() -> String {
    gethostname::gethostname().to_string_lossy().into_owned()
}

fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok().map(|s| s.trim().to_string())
}

/// Field 22 of `/proc/<pid>/stat` (start time, clock ticks after boot), or `None` when no such process runs.
fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count fields after its closing one.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused_by(result: Result<impl std::fmt::Debug>) -> String {
        match result {
            Err(e @ Error::Locked { .. }) => e.to_string(),
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn a_second_writer_is_refused_naming_the_first_and_may_write_once_it_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let guarded = dir.path().join("smoke.csv");
        let path = lock_path_for(&guarded);
        assert_eq!(path, dir.path().join(".smoke.csv.lock"));
        let first = WriterLock::exclusive(&path, &guarded, "suite run", Wait::No).unwrap();
        let text = refused_by(WriterLock::exclusive(&path, &guarded, "suite run", Wait::No));
        let me = Holder::this_process("suite run");
        assert!(
            text.contains(&format!("{} is being written by suite run on host {}", guarded.display(), me.host)),
            "{text}"
        );
        assert!(text.contains(&format!("pid {}", std::process::id())), "{text}");
        assert!(
            text.contains("since ") && text.contains("add --wait") && text.contains("choose another --out"),
            "{text}"
        );
        drop(first);
        // Released: the record is gone with it, and the next writer takes it.
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
        let _second = WriterLock::exclusive(&path, &guarded, "suite run", Wait::No).unwrap();
    }

    #[test]
    fn the_shards_of_one_run_share_the_folder_and_exclude_an_unsharded_writer_a_merge_and_their_twin() {
        let dir = tempfile::tempdir().unwrap();
        let shard = |i| Some(Shard { index: i, count: 8 });
        let a = FolderLock::take(dir.path(), shard(0), "suite run", Wait::No).unwrap();
        let b = FolderLock::take(dir.path(), shard(1), "suite run", Wait::No).unwrap();
        // A second process of shard 1, an unsharded run, a merge: refused, naming the shard writers.
        let twin = refused_by(FolderLock::take(dir.path(), shard(1), "suite run", Wait::No));
        assert!(twin.contains("suite run (shard 1/8) on host"), "{twin}");
        let merge = refused_by(FolderLock::take(dir.path(), None, "suite merge", Wait::No));
        assert!(merge.contains("suite run (shard 0/8)") && merge.contains("suite run (shard 1/8)"), "{merge}");
        let holders = FolderLock::holders(dir.path());
        assert_eq!(
            holders.iter().map(|h| h.what.as_str()).collect::<Vec<_>>(),
            ["suite run (shard 0/8)", "suite run (shard 1/8)"]
        );
        drop((a, b));
        assert!(FolderLock::holders(dir.path()).is_empty());
        let merging = FolderLock::take(dir.path(), None, "suite merge", Wait::No).unwrap();
        // And while the merge runs, no shard starts.
        let text = refused_by(FolderLock::take(dir.path(), shard(2), "suite run", Wait::No));
        assert!(text.contains("suite merge on host"), "{text}");
        assert_eq!(FolderLock::holders(dir.path())[0].what, "suite merge");
        drop(merging);
    }

    /// A writer waiting for a lock other than the folder's (run.json's, a CSV's) whose holder has not written its
    /// record yet does not look at the shard locks: a look takes each for a moment, refusing a shard writer that
    /// takes its own at that moment, and the shard writers do not hold that lock anyway.
    #[test]
    fn a_lock_without_a_record_is_not_described_by_the_shard_locks_unless_it_is_the_folders() {
        let dir = tempfile::tempdir().unwrap();
        let shard = Some(Shard { index: 0, count: 2 });
        let _shard = FolderLock::take(dir.path(), shard, "suite run", Wait::No).unwrap();
        // Taken a moment ago by another writer, its record not yet written.
        let run_json_lock = dir.path().join(".run.json.lock");
        let taken = OpenOptions::new().create(true).truncate(false).write(true).open(&run_json_lock).unwrap();
        taken.lock().unwrap();
        let text = refused_by(WriterLock::exclusive(&run_json_lock, dir.path(), "an update of run.json", Wait::No));
        assert!(text.contains("it has not written its record yet"), "{text}");
        assert!(!text.contains("shard 0/2"), "the shard writer does not hold run.json's lock: {text}");
        drop(taken);
        // The folder lock, held shared by the shards, is described by them.
        let merge = refused_by(FolderLock::take(dir.path(), None, "suite merge", Wait::No));
        assert!(merge.contains("suite run (shard 0/2)"), "{merge}");
    }

    #[test]
    fn a_record_left_by_a_holder_that_died_does_not_block_and_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = folder_lock_path(dir.path());
        // A writer killed with -9 on this host leaves its record; the kernel has released its lock.
        let dead = Holder { pid: dead_pid(), process_start: Some(1), ..Holder::this_process("suite run") };
        std::fs::write(&path, serde_json::to_string(&dead).unwrap()).unwrap();
        assert_eq!(gone(&dead), Some(format!("no process {} runs on this host", dead.pid)));
        assert!(FolderLock::holders(dir.path()).is_empty(), "a dead holder is no holder");
        let _lock = FolderLock::take(dir.path(), None, "suite run", Wait::No).unwrap();
        let record: Holder = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(record.pid, std::process::id());
    }

    /// A pid that no process has now.
    fn dead_pid() -> u32 {
        let child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let mut child = child;
        child.wait().unwrap();
        pid
    }

    #[test]
    fn a_holder_is_gone_only_when_that_is_proven() {
        let me = Holder::this_process("suite run");
        assert_eq!(gone(&me), None, "this process runs");
        let reused = Holder { process_start: me.process_start.map(|s| s + 1), ..me.clone() };
        assert_eq!(gone(&reused), Some(format!("pid {} is another process now", me.pid)));
        let rebooted = Holder { boot_id: Some("another boot".into()), ..me.clone() };
        assert_eq!(gone(&rebooted), Some("this host has rebooted since".into()));
        // On another host and outside Slurm nothing proves it: it stands.
        let elsewhere = Holder { host: "nid999999".into(), slurm_job_id: None, ..me.clone() };
        assert_eq!(gone(&elsewhere), None);
    }

    #[test]
    fn where_the_file_system_refuses_locks_a_claim_file_holds_the_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = folder_lock_path(dir.path());
        let file = open_lock_file(&path).unwrap();
        let first = try_claim(&path, dir.path(), "suite run", file).unwrap();
        let claim = claim_path(&path);
        assert!(claim.exists());
        let text = refused_by(try_claim(&path, dir.path(), "suite run", open_lock_file(&path).unwrap()));
        assert!(text.contains(&format!("pid {}", std::process::id())), "{text}");
        assert_eq!(probe(&claim).map(|h| h.pid), None, "a claim file is not itself a lock file");
        drop(first);
        assert!(!claim.exists(), "released: the claim is removed");
        // A claim left by a holder that died is stale: removed, and the claim is taken.
        let dead = Holder { pid: dead_pid(), ..Holder::this_process("suite run") };
        std::fs::write(&claim, serde_json::to_string(&dead).unwrap()).unwrap();
        let _second = try_claim(&path, dir.path(), "suite run", open_lock_file(&path).unwrap()).unwrap();
        let record: Holder = serde_json::from_str(&std::fs::read_to_string(&claim).unwrap()).unwrap();
        assert_eq!(record.pid, std::process::id());
    }

    #[test]
    fn only_lustre_without_flock_and_beegfs_keep_locks_on_one_host() {
        let mounts = "\
/dev/vda1 / ext4 rw,relatime 0 0
10.0.0.1@o2ib:/scratch /scratch lustre rw,flock,lazystatfs 0 0
10.0.0.1@o2ib:/project /project lustre rw,localflock,lazystatfs 0 0
beegfs_nodev /beegfs beegfs rw,relatime 0 0
server:/home /home nfs4 rw,vers=4.2 0 0
";
        let cases = [
            ("/scratch/project_1/results/x", true),
            ("/project/project_1/results/x", false),
            ("/beegfs/u/results", false),
            ("/home/u/results", true),
            ("/tmp/results", true),
        ];
        for (path, spans) in cases {
            assert_eq!(mount_allows_cluster_flock(mounts, Path::new(path)), spans, "{path}");
        }
    }

    /// Set by [`eight_writers_at_once_one_wins_the_rest_are_refused_naming_it`] for the children it starts.
    const CHILD_DIR: &str = "SUITE_TEST_LOCK_DIR";

    /// One writer: takes the folder's lock, says so, holds it a moment. Alone, it takes a folder of its own.
    #[test]
    fn one_process_takes_the_folder_lock() {
        let own = tempfile::tempdir().unwrap();
        let dir = std::env::var_os(CHILD_DIR).map(PathBuf::from).unwrap_or_else(|| own.path().to_path_buf());
        if let Some(go) = std::env::var_os("SUITE_TEST_GO") {
            let go = PathBuf::from(go);
            for _ in 0..60_000 {
                if go.exists() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        match FolderLock::take(&dir, None, "suite run", Wait::No) {
            Ok(lock) => {
                println!("LOCK-TAKEN {}", std::process::id());
                // Held past the others' attempts.
                std::thread::sleep(Duration::from_millis(1500));
                drop(lock);
            }
            Err(e) => println!("LOCK-REFUSED {e}"),
        }
    }

    #[test]
    fn eight_writers_at_once_one_wins_the_rest_are_refused_naming_it() {
        let exe = std::env::current_exe().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let go = dir.path().join("go");
        let results = dir.path().join("results");
        let children: Vec<_> = (0..8)
            .map(|_| {
                std::process::Command::new(&exe)
                    .args(["--exact", "report::lock::tests::one_process_takes_the_folder_lock"])
                    .args(["--test-threads=1", "--nocapture"])
                    .env(CHILD_DIR, &results)
                    .env("SUITE_TEST_GO", &go)
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        std::fs::write(&go, b"").unwrap();
        let mut taken = Vec::new();
        let mut refused = Vec::new();
        for child in children {
            let out = child.wait_with_output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(out.status.success() && text.contains("1 passed"), "{text}");
            // libtest prints the test's name first, on the same line as its first output.
            for line in text.lines() {
                if let Some((_, pid)) = line.split_once("LOCK-TAKEN ") {
                    taken.push(pid.trim().to_string());
                } else if let Some((_, message)) = line.split_once("LOCK-REFUSED ") {
                    refused.push(message.to_string());
                }
            }
        }
        assert_eq!(taken.len(), 1, "one writer at a time: {taken:?} {refused:?}");
        assert_eq!(refused.len(), 7, "{refused:?}");
        for message in &refused {
            // Named: the winner's pid, or, in the instant before it wrote its record, a holder said to be unnamed.
            assert!(
                message.contains(&format!("pid {}", taken[0])) || message.contains("has not written its record yet"),
                "{message}"
            );
        }
    }
}
