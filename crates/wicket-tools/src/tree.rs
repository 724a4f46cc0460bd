//! The workspace as a tree of entries, for checkpoints and rewinds.
//!
//! [`Workspace::scan`] walks every folder from the held root, depth first,
//! names in byte order, following no link: a link is an entry (its target
//! is text), never a way somewhere else. `.git` and `.wicket` are never
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

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;

use crate::ignore_files::{Level, Rules};
use crate::resolve::{Workspace, file_type};

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

struct Frame {
    fd: OwnedFd,
    absolute: PathBuf,
    /// Its path below the root, with a trailing `/` unless it is the root.
    prefix: Vec<u8>,
    names: std::vec::IntoIter<Box<OsStr>>,
}

impl Frame {
    /// The frame of the folder `name` in this one (at `path` below the
    /// root), with its ignore rules, to walk next.
    fn child(
        &self,
        name: &OsStr,
        path: &[u8],
        visitor: &mut dyn Visitor,
    ) -> std::io::Result<(Frame, Level)> {
        let fd = open_dir_at(&self.fd, name)?;
        visitor.entered(path, fd.as_fd());
        let names = sorted_names(&fd)?;
        let absolute = self.absolute.join(name);
        let level = Level::read(&fd, &absolute);
        let mut prefix = path.to_vec();
        prefix.push(b'/');
        let frame = Frame {
            fd,
            absolute,
            prefix,
            names: names.into_iter(),
        };
        Ok((frame, level))
    }
}

fn sorted_names(fd: &OwnedFd) -> std::io::Result<Vec<Box<OsStr>>> {
    let mut dir = rustix::fs::Dir::read_from(fd)?;
    let mut names = Vec::new();
    while let Some(entry) = dir.read() {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        names.push(Box::<OsStr>::from(OsStr::from_bytes(name)));
    }
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

/// The walk of [`Workspace::scan`] from `stack`, depth first.
fn walk(mut stack: Vec<Frame>, mut rules: Rules, visitor: &mut dyn Visitor) -> std::io::Result<()> {
    let mut path = Vec::new();
    while let Some(frame) = stack.last_mut() {
        let Some(name) = frame.names.next() else {
            stack.pop();
            rules.pop();
            continue;
        };
        if guarded_name(&name) {
            continue;
        }
        path.clear();
        path.extend_from_slice(&frame.prefix);
        path.extend_from_slice(name.as_bytes());
        let stat = match rustix::fs::statat(&frame.fd, &*name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => stat,
            // Gone since the listing: not there for this scan.
            Err(Errno::NOENT) => continue,
            Err(error) => {
                let error = error.into();
                if let Go::Stop = visitor.visit(Met::Unreadable { path: &path, error }) {
                    return Ok(());
                }
                continue;
            }
        };
        let Some(kind) = kind_of(&stat) else {
            continue;
        };
        let is_dir = kind == Kind::Dir;
        if visitor.skip(&path, is_dir)
            || (rules.any() && rules.ignored(&frame.absolute.join(&*name), is_dir))
        {
            continue;
        }
        let found = Found {
            path: &path,
            stat: &stat,
            kind,
            dir: frame.fd.as_fd(),
            name: &name,
        };
        match visitor.visit(Met::Entry(found)) {
            Go::Stop => return Ok(()),
            Go::Over => continue,
            Go::On if !is_dir => continue,
            Go::On => {}
        }
        match frame.child(&name, &path, visitor) {
            Ok((child, level)) => {
                rules.push(level);
                stack.push(child);
            }
            Err(error) => {
                if let Go::Stop = visitor.visit(Met::Unreadable { path: &path, error }) {
                    return Ok(());
                }
            }
        }
    }
    Ok(())
}

impl Workspace {
    /// Walks the workspace (see the module's docs), telling `visitor` of
    /// each entry and each folder that cannot be read.
    pub fn scan(&self, visitor: &mut dyn Visitor) -> std::io::Result<()> {
        let root = open_dir_at(self.root_fd(), OsStr::new("."))?;
        visitor.entered(b"", root.as_fd());
        let mut rules = Rules::above(self.root());
        rules.push(Level::read(&root, self.root()));
        let names = sorted_names(&root)?;
        let frame = Frame {
            fd: root,
            absolute: self.root().to_path_buf(),
            prefix: Vec::new(),
            names: names.into_iter(),
        };
        walk(vec![frame], rules, visitor)
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
        let frame = Frame {
            fd: dir,
            absolute,
            prefix,
            names: vec![Box::<OsStr>::from(*last)].into_iter(),
        };
        walk(vec![frame], rules, visitor)
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
