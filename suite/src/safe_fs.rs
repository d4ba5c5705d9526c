//! Files in folders other people can write into: the only way the suite writes a results folder or a cache.
//!
//! On LUMI, results and caches live in project directories that every member of a group may write. Another member
//! can plant a symbolic link (or a file of their own) under a name the suite is about to write, and a plain
//! `open`/`File::create` would then write through it: truncate the file it points to, append rows to it, or load
//! code the planter chose. So every file the suite writes there is:
//! - opened with `O_NOFOLLOW` (a symbolic link at the name is refused, dangling or not), and only when it is a
//!   regular file owned by this process's user; anything else is refused with a message naming the file and its
//!   owner ([`open_append`], [`open_lock`]);
//! - or, when written whole, written to a fresh temporary name of its own (created exclusively, random) and renamed
//!   over the final name, after checking that whatever is at that name is a regular file of this user's
//!   ([`write_whole`]);
//! - in a folder that, when the suite creates it for itself alone (the kernel cache), is private (0700) and
//!   refused when another user owns it ([`private_dir`]).
//!
//! A write that fails because the file system is full or over its quota says which file system
//! ([`disk_note`]), so a merge on a full disk names the disk rather than a symptom further on.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

/// `O_NOFOLLOW` (and `O_CLOEXEC`, so no child process inherits a results file), as `open(2)` takes them.
fn flags() -> i32 {
    (rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::CLOEXEC).bits() as i32
}

/// This process's effective user id: the owner every file the suite writes must have.
pub fn user() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// `uid 1001 (alice)`: a user as a message names it; the name where the system can tell it (`getent`, which also
/// asks LDAP, as on LUMI), asked only when a message needs it.
pub fn describe_user(uid: u32) -> String {
    let name = std::process::Command::new("getent")
        .args(["passwd", &uid.to_string()])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8_lossy(&o.stdout).split(':').next().map(str::to_string))
        .filter(|n| !n.is_empty());
    match name {
        Some(name) => format!("uid {uid} ({name})"),
        None => format!("uid {uid}"),
    }
}

/// The refusal of `path`, whose metadata (not followed) is `meta`: an `io::Error` of kind `PermissionDenied` whose
/// text names the file, what it is and who owns it.
fn refused(path: &Path, meta: &std::fs::Metadata) -> std::io::Error {
    let what = if meta.file_type().is_symlink() {
        let target = std::fs::read_link(path).map(|t| format!(" to {}", t.display())).unwrap_or_default();
        format!("a symbolic link{target}")
    } else if !meta.is_file() {
        "not a regular file".to_string()
    } else {
        "a file of another user".to_string()
    };
    std::io::Error::new(
        std::io::ErrorKind::PermissionDenied,
        format!(
            "refusing to use {}: it is {what}, owned by {} (this is {}); in a shared folder the suite writes only \
             regular files of its own user, never through a link: remove it, or choose another folder",
            path.display(),
            describe_user(meta.uid()),
            describe_user(user())
        ),
    )
}

/// Whether `meta` (of an open file, or of a name not followed) is a regular file of this user.
fn is_own_regular(meta: &std::fs::Metadata) -> bool {
    meta.file_type().is_file() && meta.uid() == user()
}

/// Checks an opened file: regular and this user's, else the refusal.
fn checked(file: File, path: &Path) -> std::io::Result<File> {
    let meta = file.metadata()?;
    if is_own_regular(&meta) {
        Ok(file)
    } else {
        Err(refused(path, &meta))
    }
}

/// The error of an `open` with `O_NOFOLLOW` that met a symbolic link (`ELOOP`), said as a refusal naming the link.
fn explain(path: &Path, e: std::io::Error) -> std::io::Error {
    if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            return refused(path, &meta);
        }
    }
    e
}

/// Opens `path` for reading and appending (created when absent, 0666 less the umask), never through a link, and
/// only a regular file of this user.
pub fn open_append(path: &Path) -> std::io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .create(true)
        .append(true)
        .custom_flags(flags())
        .mode(0o666)
        .open(path)
        .map_err(|e| explain(path, e))?;
    checked(file, path)
}

/// Opens a lock file for reading and writing (created when absent, never truncated), never through a link, and
/// only a regular file of this user.
pub fn open_lock(path: &Path) -> std::io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(flags())
        .mode(0o666)
        .open(path)
        .map_err(|e| explain(path, e))?;
    checked(file, path)
}

/// Opens an existing file for reading without following a link (to read another writer's lock record: any owner).
pub fn open_read(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().read(true).custom_flags(flags()).open(path).map_err(|e| explain(path, e))
}

/// Reads the whole of `path`, never through a link, and only a regular file of this user (a file another user put
/// in a shared folder is refused, naming its owner).
pub fn read_own(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let mut file = checked(open_read(path)?, path)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Checks that `path` may be replaced: absent, or a regular file of this user (a link at the name is refused, not
/// followed and not replaced).
pub fn check_replaceable(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if is_own_regular(&meta) => Ok(()),
        Ok(meta) => Err(refused(path, &meta)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// A file being written beside its final name, renamed over it by [`Staged::commit`]; removed when dropped
/// uncommitted.
pub struct Staged {
    tmp: tempfile::NamedTempFile,
    path: PathBuf,
}

impl Staged {
    /// A fresh temporary file (`.<name>.<random>`, created exclusively, 0666 less the umask like any results file)
    /// in the folder of `path`, after checking that `path` may be replaced.
    pub fn new(path: &Path) -> std::io::Result<Staged> {
        check_replaceable(path)?;
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .permissions(std::fs::Permissions::from_mode(0o666))
            .tempfile_in(dir)?;
        Ok(Staged { tmp, path: path.to_path_buf() })
    }

    /// The temporary file, to write into.
    pub fn file(&mut self) -> &mut File {
        self.tmp.as_file_mut()
    }

    /// The temporary file's path.
    pub fn tmp_path(&self) -> &Path {
        self.tmp.path()
    }

    /// The final name.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flushes the bytes to disk and renames the file over its final name (checked again: a link planted meanwhile
    /// is refused, not replaced).
    pub fn commit(self) -> std::io::Result<()> {
        self.tmp.as_file().sync_data()?;
        check_replaceable(&self.path)?;
        self.tmp.persist(&self.path).map(|_| ()).map_err(|e| e.error)
    }
}

/// Writes `bytes` as the whole of `path`: into a fresh temporary file beside it, renamed over it, so a reader sees
/// the old file or the new one, and nothing is ever written through a link or into another user's file.
pub fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut staged = Staged::new(path)?;
    staged.file().write_all(bytes)?;
    staged.commit()
}

/// Creates `dir` (and its parents) for this user alone (0700), or checks the one there: a folder (not a link) owned
/// by this user; another user's folder is refused, naming its owner.
pub fn private_dir(dir: &Path) -> std::io::Result<()> {
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(dir)?;
    if meta.file_type().is_dir() && meta.uid() == user() {
        return Ok(());
    }
    let what = if meta.file_type().is_symlink() { "a symbolic link" } else { "a folder of another user" };
    Err(std::io::Error::new(
        std::io::ErrorKind::PermissionDenied,
        format!(
            "refusing to use {}: it is {what}, owned by {} (this is {}); another user could swap what the suite \
             reads there: set SUITE_CACHE_DIR to a folder of your own",
            dir.display(),
            describe_user(meta.uid()),
            describe_user(user())
        ),
    ))
}

/// Whether `e` says the file system is full (`ENOSPC`) or the user over quota (`EDQUOT`).
pub fn is_disk_full(e: &std::io::Error) -> bool {
    let code = e.raw_os_error();
    code == Some(rustix::io::Errno::NOSPC.raw_os_error()) || code == Some(rustix::io::Errno::DQUOT.raw_os_error())
}

/// For a write into `path` that failed with `e`: where the file system is full or over quota, which one (its mount
/// point, type and the bytes still free), e.g. ` (the file system of /scratch, lustre, mounted at /scratch, is
/// full: 0 bytes free for this user)`; empty for any other error.
pub fn disk_note(path: &Path, e: &std::io::Error) -> String {
    if !is_disk_full(e) {
        return String::new();
    }
    let existing = path.ancestors().find(|p| p.exists()).unwrap_or(Path::new("/"));
    let real = existing.canonicalize().unwrap_or_else(|_| existing.to_path_buf());
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let mount = mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_, point, fstype) = (f.next()?, f.next()?, f.next()?);
            real.starts_with(point).then(|| (point.to_string(), fstype.to_string()))
        })
        .max_by_key(|(p, _)| p.len());
    let (point, fstype) = mount.unwrap_or_else(|| ("/".into(), "?".into()));
    let free = rustix::fs::statvfs(&real)
        .map(|s| format!("{} bytes free for this user", s.f_bavail.saturating_mul(s.f_frsize)))
        .unwrap_or_else(|_| "free space unknown".into());
    let quota = if e.raw_os_error() == Some(rustix::io::Errno::DQUOT.raw_os_error()) {
        "is over this user's quota"
    } else {
        "is full"
    };
    format!(" (the file system holding {}, {fstype} mounted at {point}, {quota}: {free})", existing.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_and_other_users_files_are_refused_naming_them() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let link = dir.path().join("smoke.csv");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        for result in [open_append(&link).map(|_| ()), open_lock(&link).map(|_| ()), write_whole(&link, b"x")] {
            let e = result.unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied, "{e}");
            let text = e.to_string();
            assert!(text.contains(&link.display().to_string()) && text.contains("a symbolic link to"), "{text}");
            assert!(text.contains(&format!("owned by uid {}", user())), "{text}");
        }
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link is left alone");
        // A dangling link: not created through.
        let dangling = dir.path().join("pt.csv");
        std::os::unix::fs::symlink(dir.path().join("made-by-the-planter"), &dangling).unwrap();
        assert!(open_append(&dangling).is_err());
        assert!(!dir.path().join("made-by-the-planter").exists());
        // Whole-file writes leave no temporary file, and replace a file of this user's.
        write_whole(&dir.path().join("summary.md"), b"one").unwrap();
        write_whole(&dir.path().join("summary.md"), b"two").unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("summary.md")).unwrap(), "two");
        let names: Vec<String> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into()).collect();
        assert!(names.iter().all(|n| !n.starts_with(".summary.md.")), "{names:?}");
    }

    #[test]
    fn another_users_file_is_refused_where_ownership_can_be_given_away() {
        // Only root can give a file to another user: elsewhere the case cannot be made, and the test says so.
        assert_eq!(
            user(),
            0,
            "this test gives a file to another user, which needs root (the test command runs as root)"
        );
        let dir = tempfile::tempdir().unwrap();
        let theirs = dir.path().join("matmul.csv");
        std::fs::write(&theirs, "a,b\n").unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), None).unwrap();
        let text = open_append(&theirs).unwrap_err().to_string();
        assert!(text.contains("a file of another user, owned by uid 65534"), "{text}");
        assert!(write_whole(&theirs, b"x").is_err());
        let cache = dir.path().join("cache");
        std::fs::create_dir(&cache).unwrap();
        std::os::unix::fs::chown(&cache, Some(65534), None).unwrap();
        let text = private_dir(&cache).unwrap_err().to_string();
        assert!(text.contains("a folder of another user, owned by uid 65534") && text.contains("SUITE_CACHE_DIR"));
        let mine = dir.path().join("mine/kernels");
        private_dir(&mine).unwrap();
        assert_eq!(std::fs::metadata(&mine).unwrap().permissions().mode() & 0o777, 0o700);
    }
}
