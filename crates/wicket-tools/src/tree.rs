//! The workspace as a tree of entries, for checkpoints and rewinds.
//!
//! [`Workspace::scan`] walks every folder from the held root, folder by
//! folder (each one's names in byte order, then the folders among them,
//! going down first), following no link: a link is an entry (its target
//! is text), never a way somewhere else. [`Workspace::scan_parallel`]
//! makes the same walk with a walker a thread (each folder's names, in
//! batches of up to 1,024, met by one). `.git` and `.wicket` are never
//! entered, at any depth, and what
//! the ignore files ignore (as grep reads them: [`crate::ignore_files`]) is
//! skipped, as is whatever the caller's own test skips.
//!
//! The changes a rewind makes ([`Workspace::put_file`], [`Workspace::put_link`],
//! [`Workspace::make_dir`], [`Workspace::set_dir_mode`], [`Workspace::remove`])
//! reach their folder by opening one component at a time from the root with
//! `O_NOFOLLOW | O_DIRECTORY`: a link anywhere on the way is an error, never
//! followed, so a link a command left behind cannot carry a restore out of
//! the workspace. A file or link is written under a temporary name in its
//! folder and renamed over the old entry, so a reader sees the old bytes or
//! the new, never a torn file.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::Arc;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;

use crate::ignore_files::{Level, Rules};
use crate::resolve::{Workspace, file_type};
use wicket_os::walk::Tasks;

/// What kind of entry a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A folder.
    Dir,
    /// A symbolic link (not followed).
    Link,
}

/// One entry met by a scan.
pub struct Found<'a> {
    /// Its path below the root, `/` between names (bytes: a name need not be UTF-8).
    pub path: &'a [u8],
    /// Its metadata, not following a link.
    pub stat: &'a Stat,
    /// What it is.
    pub kind: Kind,
    dir: BorrowedFd<'a>,
    name: &'a OsStr,
}

impl Found<'_> {
    /// Opens the file for reading (never following a link, never blocking
    /// on a special file that replaced it since the scan looked).
    pub fn open(&self) -> std::io::Result<(File, Stat)> {
        let fd = rustix::fs::openat(
            self.dir,
            self.name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let stat = rustix::fs::fstat(&fd)?;
        if file_type(&stat) != FileType::RegularFile {
            return Err(std::io::Error::other("it is no longer a regular file"));
        }
        Ok((File::from(fd), stat))
    }

    /// Reads up to `cap` bytes of the file (one more than `cap` says it is bigger).
    pub fn read(&self, cap: u64) -> std::io::Result<(Vec<u8>, Stat)> {
        let (file, stat) = self.open()?;
        let mut bytes = Vec::with_capacity(usize::try_from(stat.st_size).unwrap_or(0).min(1 << 24));
        file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
        Ok((bytes, stat))
    }

    /// The link's target, as written.
    pub fn link_target(&self) -> std::io::Result<Vec<u8>> {
        Ok(rustix::fs::readlinkat(self.dir, self.name, Vec::new())?.into_bytes())
    }
}

/// What a scan met.
pub enum Met<'a> {
    /// An entry.
    Entry(Found<'a>),
    /// A folder that could not be opened (its entries are not seen).
    Unreadable {
        /// Its path below the root.
        path: &'a [u8],
        /// Why.
        error: std::io::Error,
    },
}

/// Whether the scan goes on.
pub enum Go {
    /// Next entry (into the folder, when it is one).
    On,
    /// Next entry, but not into this folder.
    Over,
    /// Stop the whole scan.
    Stop,
}

/// What a walk asks of its caller.
pub trait Visitor {
    /// True leaves `path` (a path below the root; `is_dir` when it is a
    /// folder) out, and all below it.
    fn skip(&self, path: &[u8], is_dir: bool) -> bool;
    /// An entry, or a folder that could not be read: what next.
    fn visit(&mut self, met: Met<'_>) -> Go;
    /// A folder was opened (the root as `b""`), before its names are read:
    /// a watch added here sees every change made after the listing.
    fn entered(&mut self, _path: &[u8], _dir: BorrowedFd<'_>) {}
}

fn sorted_names(fd: &OwnedFd) -> std::io::Result<Vec<Box<OsStr>>> {
    let mut names = Vec::new();
    wicket_os::walk::list(fd, |name, _| {
        names.push(Box::<OsStr>::from(OsStr::from_bytes(name)));
    })?;
    names.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    Ok(names)
}

fn open_dir_at(dir: impl AsFd, name: &OsStr) -> std::io::Result<OwnedFd> {
    Ok(rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

fn kind_of(stat: &Stat) -> Option<Kind> {
    match file_type(stat) {
        FileType::RegularFile => Some(Kind::File),
        FileType::Directory => Some(Kind::Dir),
        FileType::Symlink => Some(Kind::Link),
        // FIFOs, sockets and devices are no one's source: not kept.
        _ => None,
    }
}

/// A path below the root as names: each must be a plain name (no `.`,
/// `..`, empty part or leading `/`).
fn names_of(path: &[u8]) -> std::io::Result<Vec<&OsStr>> {
    let names: Vec<&OsStr> = path
        .split(|byte| *byte == b'/')
        .map(OsStr::from_bytes)
        .collect();
    let plain =
        |name: &&OsStr| !name.is_empty() && name.as_bytes() != b"." && name.as_bytes() != b"..";
    if names.is_empty() || !names.iter().all(plain) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "'{}' is not a plain path below the workspace",
                String::from_utf8_lossy(path)
            ),
        ));
    }
    Ok(names)
}

/// Renames `temp` to `name` in `dir`; without `replace`, an entry already
/// there is kept and the rename refused.
fn rename_into(dir: &OwnedFd, temp: &str, name: &OsStr, replace: bool) -> std::io::Result<()> {
    if replace {
        return Ok(rustix::fs::renameat(dir, temp, dir, name)?);
    }
    match rustix::fs::renameat_with(dir, temp, dir, name, rustix::fs::RenameFlags::NOREPLACE) {
        Ok(()) => Ok(()),
        Err(Errno::EXIST) => Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "something the checkpoints skip (an ignored file?) stands there now; it was left as it is",
        )),
        Err(error) => Err(error.into()),
    }
}

fn temp_name() -> String {
    format!(".wicket-rewind-{:016x}", wicket_os::ids::random_u64())
}

/// `.git` or `.wicket`: what git and Wicket run later is never copied nor restored.
fn guarded_name(name: &OsStr) -> bool {
    wicket_protocol::guarded::GUARDED_NAMES
        .iter()
        .any(|guarded| name.as_bytes() == guarded.as_bytes())
}

/// A folder whose names are met next: held open, with every rule that
/// applies in it (its own level too). A large folder is met in several.
struct Batch {
    dir: Arc<OwnedFd>,
    absolute: PathBuf,
    /// Its path below the root, with a trailing `/` unless it is the root.
    prefix: Vec<u8>,
    rules: Rules,
    names: Vec<Box<OsStr>>,
}

/// A folder met, opened and listed by whichever walker takes it next.
struct Open {
    parent: Arc<OwnedFd>,
    name: Box<OsStr>,
    /// Its path below the root.
    path: Vec<u8>,
    absolute: PathBuf,
    /// The rules of the folders above it.
    rules: Rules,
}

enum Task {
    Open(Open),
    Batch(Batch),
}

/// A folder of more names than this is met in batches of this many, so
/// one large folder is shared between the walkers too.
const BATCH: usize = 1024;

/// One walker: takes folders until none is left, telling `visitor` of what
/// it meets in them.
fn walk(tasks: &Tasks<Task>, visitor: &mut dyn Visitor) {
    let mut done = None;
    while let Some(task) = tasks.next(done.take()) {
        let mut found = Vec::new();
        let go = match task {
            Task::Open(open) => opened(open, visitor, &mut found),
            Task::Batch(batch) => meet(batch, visitor, &mut found),
        };
        if let Go::Stop = go {
            tasks.stop();
        }
        done = Some(found);
    }
}

/// Opens and lists a folder met (its watch first), then meets its first
/// batch of names; the others go to `found`.
fn opened(open: Open, visitor: &mut dyn Visitor, found: &mut Vec<Task>) -> Go {
    let listed = open_dir_at(&*open.parent, &open.name).and_then(|fd| {
        visitor.entered(&open.path, fd.as_fd());
        let names = sorted_names(&fd)?;
        Ok((fd, names))
    });
    drop(open.parent);
    let (fd, names) = match listed {
        Ok(listed) => listed,
        Err(error) => {
            return visitor.visit(Met::Unreadable {
                path: &open.path,
                error,
            });
        }
    };
    let mut rules = open.rules;
    rules.push(Level::read(&fd, &open.absolute));
    let mut prefix = open.path;
    prefix.push(b'/');
    let mut batches = batches(Arc::new(fd), open.absolute, prefix, rules, names);
    let first = batches.remove(0);
    found.extend(batches.into_iter().map(Task::Batch));
    meet(first, visitor, found)
}

/// A listed folder's names as batches of at most [`BATCH`] (one, when it
/// is empty).
fn batches(
    dir: Arc<OwnedFd>,
    absolute: PathBuf,
    prefix: Vec<u8>,
    rules: Rules,
    mut names: Vec<Box<OsStr>>,
) -> Vec<Batch> {
    let mut batches = Vec::with_capacity(names.len() / BATCH + 1);
    while names.len() > BATCH {
        let rest = names.split_off(BATCH);
        let batch = std::mem::replace(&mut names, rest);
        batches.push(Batch {
            dir: dir.clone(),
            absolute: absolute.clone(),
            prefix: prefix.clone(),
            rules: rules.clone(),
            names: batch,
        });
    }
    batches.push(Batch {
        dir,
        absolute,
        prefix,
        rules,
        names,
    });
    batches
}

/// Meets each name of a batch; the folders the visitor goes into go to `found`.
fn meet(batch: Batch, visitor: &mut dyn Visitor, found: &mut Vec<Task>) -> Go {
    let Batch {
        dir,
        absolute,
        prefix,
        rules,
        names,
    } = batch;
    let any_rules = rules.any();
    let mut path = Vec::new();
    for name in names {
        if guarded_name(&name) {
            continue;
        }
        path.clear();
        path.extend_from_slice(&prefix);
        path.extend_from_slice(name.as_bytes());
        let stat = match rustix::fs::statat(&*dir, &*name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => stat,
            // Gone since the listing: not there for this scan.
            Err(Errno::NOENT) => continue,
            Err(error) => {
                let error = error.into();
                if let Go::Stop = visitor.visit(Met::Unreadable { path: &path, error }) {
                    return Go::Stop;
                }
                continue;
            }
        };
        let Some(kind) = kind_of(&stat) else {
            continue;
        };
        let is_dir = kind == Kind::Dir;
        if visitor.skip(&path, is_dir)
            || (any_rules && rules.ignored(&absolute.join(&*name), is_dir))
        {
            continue;
        }
        let entry = Found {
            path: &path,
            stat: &stat,
            kind,
            dir: dir.as_fd(),
            name: &name,
        };
        match visitor.visit(Met::Entry(entry)) {
            Go::Stop => return Go::Stop,
            Go::Over => continue,
            Go::On if !is_dir => continue,
            Go::On => {}
        }
        found.push(Task::Open(Open {
            parent: dir.clone(),
            absolute: absolute.join(&*name),
            name,
            path: path.clone(),
            rules: rules.clone(),
        }));
    }
    Go::On
}

impl Workspace {
    /// Walks the workspace (see the module's docs), telling `visitor` of
    /// each entry and each folder that cannot be read: a folder's entries
    /// in name order, before what is below them.
    pub fn scan(&self, visitor: &mut dyn Visitor) -> std::io::Result<()> {
        let root = self.root_batch(visitor)?;
        walk(&Tasks::new(vec![Task::Batch(root)]), visitor);
        Ok(())
    }

    /// [`Workspace::scan`] by as many walkers as `visitors`, each on a
    /// thread of its own with its own visitor: each folder's entries go
    /// to one of them, in name order; which one, and in what order the
    /// folders come, is the scheduler's.
    pub fn scan_parallel<V: Visitor + Send>(&self, visitors: &mut [V]) -> std::io::Result<()> {
        let Some(first) = visitors.first_mut() else {
            return Ok(());
        };
        let tasks = Tasks::new(vec![Task::Batch(self.root_batch(first)?)]);
        wicket_os::walk::share(visitors, |visitor| walk(&tasks, visitor));
        Ok(())
    }

    /// The root, opened (`visitor` told first) and listed, as the first batch.
    fn root_batch(&self, visitor: &mut dyn Visitor) -> std::io::Result<Batch> {
        let root = open_dir_at(self.root_fd(), OsStr::new("."))?;
        visitor.entered(b"", root.as_fd());
        let mut rules = Rules::above(self.root());
        rules.push(Level::read(&root, self.root()));
        let names = sorted_names(&root)?;
        Ok(Batch {
            dir: Arc::new(root),
            absolute: self.root().to_path_buf(),
            prefix: Vec::new(),
            rules,
            names,
        })
    }

    /// Walks one entry, `path` below the root, as [`Workspace::scan`] would
    /// meet it (and, when it is a folder the visitor enters, all below it),
    /// with the ignore rules of every folder above it. The visitor hears
    /// nothing of it when it is not there, or a folder above it is not
    /// (gone, a link, skipped or ignored).
    pub fn scan_below(&self, path: &[u8], visitor: &mut dyn Visitor) -> std::io::Result<()> {
        let names = names_of(path)?;
        let Some((last, above)) = names.split_last() else {
            return Ok(());
        };
        let mut dir = open_dir_at(self.root_fd(), OsStr::new("."))?;
        let mut absolute = self.root().to_path_buf();
        let mut rules = Rules::above(self.root());
        rules.push(Level::read(&dir, &absolute));
        let mut prefix = Vec::new();
        for name in above {
            prefix.extend_from_slice(name.as_bytes());
            if guarded_name(name)
                || visitor.skip(&prefix, true)
                || (rules.any() && rules.ignored(&absolute.join(name), true))
            {
                return Ok(());
            }
            dir = match open_dir_at(&dir, name) {
                Ok(fd) => fd,
                Err(error)
                    if matches!(
                        error.raw_os_error(),
                        Some(code) if [Errno::NOENT, Errno::NOTDIR, Errno::LOOP]
                            .iter()
                            .any(|errno| errno.raw_os_error() == code)
                    ) =>
                {
                    return Ok(());
                }
                Err(error) => return Err(error),
            };
            absolute.push(name);
            rules.push(Level::read(&dir, &absolute));
            prefix.push(b'/');
        }
        let batch = Batch {
            dir: Arc::new(dir),
            absolute,
            prefix,
            rules,
            names: vec![Box::<OsStr>::from(*last)],
        };
        walk(&Tasks::new(vec![Task::Batch(batch)]), visitor);
        Ok(())
    }

    /// Whether the workspace's ignore files (and git's) ignore `path`, a
    /// folder when `is_dir`, as [`Workspace::scan`] would judge it: a
    /// folder above it that is ignored ignores it too. A folder that is not
    /// in the workspace (yet) adds no rules of its own.
    pub fn ignored(&self, path: &[u8], is_dir: bool) -> bool {
        let Ok(names) = names_of(path) else {
            return false;
        };
        let Some((last, above)) = names.split_last() else {
            return false;
        };
        let mut absolute = self.root().to_path_buf();
        let mut rules = Rules::above(self.root());
        let mut dir = open_dir_at(self.root_fd(), OsStr::new(".")).ok();
        if let Some(fd) = &dir {
            rules.push(Level::read(fd, &absolute));
        }
        for name in above {
            absolute.push(name);
            if rules.any() && rules.ignored(&absolute, true) {
                return true;
            }
            dir = dir.and_then(|fd| open_dir_at(&fd, name).ok());
            if let Some(fd) = &dir {
                rules.push(Level::read(fd, &absolute));
            }
        }
        absolute.push(last);
        rules.any() && rules.ignored(&absolute, is_dir)
    }

    /// Whether something (a file, folder or link) stands at `path`, reached
    /// without following a link.
    pub fn holds(&self, path: &[u8]) -> bool {
        self.parent_of(path).is_ok_and(|(dir, name)| {
            rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW).is_ok()
        })
    }

    /// What stands at `path` (not following a link), `None` when nothing
    /// does, reached as [`Workspace::holds`] reaches it; a `.git` path
    /// too (a preview that may change git reads what it had).
    pub fn stat_at(&self, path: &[u8]) -> std::io::Result<Option<Stat>> {
        let (dir, name) = match self.parent_of(path) {
            Ok(found) => found,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(error),
        };
        match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(Some(stat)),
            Err(Errno::NOENT) => Ok(None),
            Err(error) => Err(error.into()),
        }
    }

    /// The regular file at `path`, opened to read, and its metadata; never
    /// through a link, never blocking on a special file.
    pub fn open_at(&self, path: &[u8]) -> std::io::Result<(File, Stat)> {
        let (dir, name) = self.parent_of(path)?;
        let found = Found {
            path,
            stat: &rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW)?,
            kind: Kind::File,
            dir: dir.as_fd(),
            name,
        };
        found.open()
    }

    /// The target of the link at `path`, as written.
    pub fn link_at(&self, path: &[u8]) -> std::io::Result<Vec<u8>> {
        let (dir, name) = self.parent_of(path)?;
        Ok(rustix::fs::readlinkat(&dir, name, Vec::new())?.into_bytes())
    }

    /// The names in the folder at `path` (`b""`: the root), sorted; never through a link.
    pub fn names_at(&self, path: &[u8]) -> std::io::Result<Vec<Vec<u8>>> {
        let dir = match path.is_empty() {
            true => open_dir_at(self.root_fd(), OsStr::new("."))?,
            false => {
                let (parent, name) = self.parent_of(path)?;
                open_dir_at(&parent, name)?
            }
        };
        Ok(sorted_names(&dir)?
            .into_iter()
            .map(|name| name.as_bytes().to_vec())
            .collect())
    }

    /// The folder `path` is in, reached from the root one real folder at a
    /// time (no link followed), and its last name.
    fn parent_of<'p>(&self, path: &'p [u8]) -> std::io::Result<(OwnedFd, &'p OsStr)> {
        let mut names = names_of(path)?;
        let last = names.pop().unwrap_or_default();
        let mut dir = open_dir_at(self.root_fd(), OsStr::new("."))?;
        for name in names {
            dir = open_dir_at(&dir, name).map_err(|error| match error.raw_os_error() {
                Some(code)
                    if code == Errno::LOOP.raw_os_error()
                        || code == Errno::NOTDIR.raw_os_error() =>
                {
                    std::io::Error::other(format!(
                        "'{}' is not a folder (a link or a file stands there)",
                        name.to_string_lossy()
                    ))
                }
                _ => error,
            })?;
        }
        Ok((dir, last))
    }

    /// Writes `bytes` as the file `path` with `mode` (permission bits),
    /// replacing a file or link there only when `replace` says so.
    pub fn put_file(
        &self,
        path: &[u8],
        bytes: &[u8],
        mode: u32,
        replace: bool,
    ) -> std::io::Result<()> {
        let (dir, name) = self.parent_of(path)?;
        let temp = temp_name();
        let fd = rustix::fs::openat(
            &dir,
            temp.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )?;
        let written = (|| {
            let mut file = File::from(fd);
            file.write_all(bytes)?;
            rustix::fs::fchmod(
                &file,
                Mode::from_raw_mode(mode & wicket_os::files::WRITTEN_MODE_BITS),
            )?;
            rename_into(&dir, &temp, name, replace)
        })();
        if written.is_err() {
            // The temporary file goes; if that fails it is a stray file, said nowhere else.
            let _ = rustix::fs::unlinkat(&dir, temp.as_str(), AtFlags::empty());
        }
        written
    }

    /// Makes `path` a link to `target`, replacing a file or link there only
    /// when `replace` says so.
    pub fn put_link(&self, path: &[u8], target: &[u8], replace: bool) -> std::io::Result<()> {
        let (dir, name) = self.parent_of(path)?;
        let temp = temp_name();
        rustix::fs::symlinkat(OsStr::from_bytes(target), &dir, temp.as_str())?;
        let renamed = rename_into(&dir, &temp, name, replace);
        if renamed.is_err() {
            // As in put_file.
            let _ = rustix::fs::unlinkat(&dir, temp.as_str(), AtFlags::empty());
        }
        renamed
    }

    /// Makes the folder `path` (0700 until [`Workspace::set_dir_mode`]);
    /// a folder already there is kept.
    pub fn make_dir(&self, path: &[u8]) -> std::io::Result<()> {
        let (dir, name) = self.parent_of(path)?;
        match rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(0o700)) {
            Ok(()) => Ok(()),
            Err(Errno::EXIST) => {
                let stat = rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
                if kind_of(&stat) == Some(Kind::Dir) {
                    Ok(())
                } else {
                    Err(std::io::Error::other(
                        "something that is not a folder stands there",
                    ))
                }
            }
            Err(error) => Err(error.into()),
        }
    }

    /// Sets the folder `path`'s permission bits.
    pub fn set_dir_mode(&self, path: &[u8], mode: u32) -> std::io::Result<()> {
        let (dir, name) = self.parent_of(path)?;
        let fd = open_dir_at(&dir, name)?;
        Ok(rustix::fs::fchmod(
            &fd,
            Mode::from_raw_mode(mode & wicket_os::files::WRITTEN_MODE_BITS),
        )?)
    }

    /// Removes the entry `path`: a file or link, or an empty folder.
    pub fn remove(&self, path: &[u8], kind: Kind) -> std::io::Result<()> {
        let (dir, name) = self.parent_of(path)?;
        let flags = match kind {
            Kind::Dir => AtFlags::REMOVEDIR,
            Kind::File | Kind::Link => AtFlags::empty(),
        };
        match rustix::fs::unlinkat(&dir, name, flags) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(Errno::NOTEMPTY | Errno::EXIST) => Err(std::io::Error::other(
                "the folder still holds files the checkpoints skip (ignored ones)",
            )),
            Err(error) => Err(error.into()),
        }
    }
}

/// `path` (bytes) as a path, for messages.
pub fn shown(path: &[u8]) -> String {
    String::from_utf8_lossy(path).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records every path met, and stops at `stop_at` when given.
    #[derive(Default)]
    struct Paths {
        met: Vec<Vec<u8>>,
        entered: Vec<Vec<u8>>,
        stop_at: Option<Vec<u8>>,
    }

    impl Visitor for Paths {
        fn skip(&self, path: &[u8], _is_dir: bool) -> bool {
            path == b"skipped"
        }

        fn visit(&mut self, met: Met<'_>) -> Go {
            let Met::Entry(found) = met else {
                return Go::On;
            };
            self.met.push(found.path.to_vec());
            match &self.stop_at {
                Some(stop) if stop == found.path => Go::Stop,
                _ => Go::On,
            }
        }

        fn entered(&mut self, path: &[u8], _dir: BorrowedFd<'_>) {
            self.entered.push(path.to_vec());
        }
    }

    /// A tree with a folder of more names than a batch, nested folders,
    /// an ignored file, a skipped folder and a `.git`.
    fn tree() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("wide")).unwrap();
        for n in 0..(BATCH * 2 + 7) {
            std::fs::write(root.join(format!("wide/f{n:05}")), b"x").unwrap();
        }
        for deep in ["a/b/c", "a/d", "skipped/x", ".git/objects"] {
            std::fs::create_dir_all(root.join(deep)).unwrap();
            std::fs::write(root.join(deep).join("file"), b"y").unwrap();
        }
        std::fs::write(root.join(".gitignore"), b"*.log\n").unwrap();
        std::fs::write(root.join("a/b/out.log"), b"z").unwrap();
        let workspace = Workspace::open(root).unwrap();
        (dir, workspace)
    }

    fn sorted(mut paths: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        paths.sort();
        paths
    }

    #[test]
    fn walkers_in_parallel_meet_what_one_walker_meets_each_once() {
        let (_dir, workspace) = tree();
        let mut one = Paths::default();
        workspace.scan(&mut one).unwrap();
        assert_eq!(one.met.len(), BATCH * 2 + 7 + 8, "{:?}", &one.met[..12]);
        assert!(!one.met.iter().any(|path| path.ends_with(b".log")));
        assert!(!one.met.iter().any(|path| path.starts_with(b"skipped/")));
        assert!(
            !one.met
                .iter()
                .any(|path| path.starts_with(b".git/") || path == b".git")
        );
        // One walker: a folder's entries in name order, the folder before them.
        let wide: Vec<_> = one.met.iter().filter(|p| p.starts_with(b"wide/")).collect();
        assert!(wide.windows(2).all(|pair| pair[0] < pair[1]));
        let mut four: Vec<Paths> = (0..4).map(|_| Paths::default()).collect();
        workspace.scan_parallel(&mut four).unwrap();
        let met: Vec<_> = four.iter().flat_map(|paths| paths.met.clone()).collect();
        let entered: Vec<_> = four
            .iter()
            .flat_map(|paths| paths.entered.clone())
            .collect();
        assert_eq!(sorted(met), sorted(one.met));
        assert_eq!(sorted(entered), sorted(one.entered));
    }

    #[test]
    fn a_stop_ends_every_walker() {
        let (_dir, workspace) = tree();
        let mut two: Vec<Paths> = (0..2)
            .map(|_| Paths {
                stop_at: Some(b"a".to_vec()),
                ..Paths::default()
            })
            .collect();
        workspace.scan_parallel(&mut two).unwrap();
        let met: usize = two.iter().map(|paths| paths.met.len()).sum();
        // "a" is the root's first name: nothing below it is met, and at
        // most one batch more by the other walker.
        assert!(met <= 2 + BATCH, "{met}");
        assert!(
            !two.iter()
                .any(|paths| paths.met.iter().any(|p| p.starts_with(b"a/")))
        );
    }
}
