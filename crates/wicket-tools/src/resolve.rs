//! The resolver: every path a tool touches goes through [`Workspace`].
//!
//! A relative path (or an absolute one that starts inside the workspace) is
//! opened through directory file descriptors: first with `openat2` and
//! `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`, and when the kernel refuses that
//! (an absolute symlink, an old kernel, a seccomp filter) by walking one
//! component at a time from held directory fds with `O_NOFOLLOW`, reading each
//! symlink and resolving its target by the same rules. The check and the use
//! are the same open, so a folder swapped for a symlink between two steps is
//! seen as a symlink and judged again, never followed blindly.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags, Stat};
use rustix::io::Errno;
use wicket_protocol::ErrorKind;

use crate::error::{Error, Result};
use crate::limits::{PATH_MAX_BYTES, SYMLINK_MAX_FOLLOWS};

/// Set once openat2 turns out to be missing or filtered; then only the walk is used.
static OPENAT2_UNAVAILABLE: AtomicBool = AtomicBool::new(false);

/// Where a tool path lands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// Inside the workspace, relative to its root (not yet resolved through links).
    Inside(PathBuf),
    /// An absolute path elsewhere: a deliberate reach that the gate cards.
    Outside(PathBuf),
}

/// A workspace root held open, against which every tool path is resolved.
#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
    given: PathBuf,
    root_fd: OwnedFd,
    /// Paths no tool may read or list ([`Workspace::hide`]), canonical.
    hidden: std::sync::Mutex<std::sync::Arc<Vec<PathBuf>>>,
}

/// A path resolved to a held parent folder and a final name in it.
#[derive(Debug)]
pub struct Resolved {
    /// The folder the final name is in, held open.
    pub dir: OwnedFd,
    /// `None` when the path is the folder `dir` itself.
    pub name: Option<OsString>,
    /// The absolute path it resolved to (no symlinks left in it).
    pub absolute: PathBuf,
    /// The final entry's metadata (not following a link), or `None` when absent.
    pub stat: Option<Stat>,
    /// Folders that do not exist yet between `dir` and `name` (writes create them).
    pub missing: Vec<OsString>,
}

fn errno_kind(errno: Errno) -> ErrorKind {
    match errno {
        Errno::NOENT | Errno::NOTDIR => ErrorKind::NotFound,
        // Opening a socket gives ENXIO.
        Errno::NXIO => ErrorKind::SpecialFile,
        _ => ErrorKind::Io,
    }
}

pub(crate) fn file_type(stat: &Stat) -> FileType {
    FileType::from_raw_mode(stat.st_mode)
}

/// Refuses special files with `special_file` and folders with `invalid_args`.
pub(crate) fn require_regular(stat: &Stat, shown: &str) -> Result<()> {
    match file_type(stat) {
        FileType::RegularFile => Ok(()),
        FileType::Directory => Err(Error::invalid(format!(
            "'{shown}' is a folder, not a file; use list_dir to see what it holds"
        ))),
        other => Err(Error::new(
            ErrorKind::SpecialFile,
            format!(
                "'{shown}' is a special file ({other:?}), not a regular file; Wicket does not open FIFOs, sockets or devices"
            ),
        )),
    }
}

/// Checks a tool path before any resolution: NUL bytes, empty, absurd lengths.
pub fn validate_path(path: &str) -> Result<()> {
    if path.contains('\0') {
        return Err(Error::invalid(
            "the path contains a NUL byte; paths are plain text without NUL",
        ));
    }
    if path.len() > PATH_MAX_BYTES {
        return Err(Error::invalid(format!(
            "the path is {} bytes long, more than the {PATH_MAX_BYTES} a path may have",
            path.len()
        )));
    }
    Ok(())
}

/// `path` relative to `base` when `path` starts with `base`, compared by components.
fn strip_components(path: &Path, base: &Path) -> Option<PathBuf> {
    let mut path_components = path.components();
    for base_component in base.components() {
        if path_components.next() != Some(base_component) {
            return None;
        }
    }
    Some(path_components.as_path().to_path_buf())
}

fn display(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

impl Workspace {
    /// Opens the workspace root. This is the one place a path is canonicalized:
    /// the root is trusted, so a workspace reached through a symlink works.
    pub fn open(dir: &Path) -> Result<Workspace> {
        let root = std::fs::canonicalize(dir).map_err(|error| {
            Error::new(
                ErrorKind::NotFound,
                format!("workspace '{}' cannot be opened: {error}; pass --workspace with an existing folder", dir.display()),
            )
        })?;
        let root_fd = rustix::fs::open(
            &root,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|error| Error::io(&format!("workspace '{}'", root.display()), error))?;
        let given = if dir.is_absolute() {
            dir.to_path_buf()
        } else {
            std::env::current_dir()
                .map(|cwd| cwd.join(dir))
                .unwrap_or_else(|_| root.clone())
        };
        Ok(Workspace {
            root,
            given,
            root_fd,
            hidden: Default::default(),
        })
    }

    /// Hides `paths` (canonical: `deny_read` paths, credential stores) from
    /// every tool: a read, a write's look at what it replaces, or a folder
    /// listing that lands on one is refused (`forbidden`, naming it), and
    /// grep and list_dir leave them out and say how many.
    pub fn hide(&self, paths: Vec<PathBuf>) {
        let mut hidden = wicket_os::sync::lock(&self.hidden);
        if **hidden != paths {
            *hidden = std::sync::Arc::new(paths);
        }
    }

    /// The paths hidden from the tools ([`Workspace::hide`]).
    pub fn hidden(&self) -> std::sync::Arc<Vec<PathBuf>> {
        wicket_os::sync::lock(&self.hidden).clone()
    }

    /// Refuses `real` (where a path really is) when it is hidden, or lies in
    /// a hidden folder.
    pub(crate) fn refuse_hidden(&self, real: &Path, shown: &str) -> Result<()> {
        match self.hidden().iter().find(|hidden| real.starts_with(hidden)) {
            Some(hidden) => Err(Error::new(
                ErrorKind::Forbidden,
                format!(
                    "'{shown}' is hidden from the tools ({} is a deny_read path or a credential \
                     store); no tool reads it, and no card can allow it: ask the person for what \
                     the task needs from it",
                    hidden.display()
                ),
            )),
            None => Ok(()),
        }
    }

    /// The workspace root, held open.
    pub fn root_fd(&self) -> BorrowedFd<'_> {
        self.root_fd.as_fd()
    }

    /// The workspace root, canonical.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The workspace-relative form of an absolute path, if it starts inside the
    /// workspace (by components, as given or canonical).
    fn inside_relative(&self, absolute: &Path) -> Option<PathBuf> {
        strip_components(absolute, &self.root).or_else(|| strip_components(absolute, &self.given))
    }

    /// Says whether a tool path is meant to be inside the workspace or is an
    /// outside reach. `~` and `$VARS` are literal names.
    pub fn classify(&self, path: &str) -> Result<Location> {
        validate_path(path)?;
        let path = Path::new(path);
        if !path.is_absolute() {
            return Ok(Location::Inside(path.to_path_buf()));
        }
        if let Some(relative) = self.inside_relative(path) {
            return Ok(Location::Inside(relative));
        }
        // An outside reach: name it by where it really is, so the card says what
        // would be read. If it lands inside after all, it is an inside path.
        let real = canonical_or_parent(path);
        match self.inside_relative(&real) {
            Some(relative) => Ok(Location::Inside(relative)),
            None => Ok(Location::Outside(real)),
        }
    }

    fn escape_error(&self, shown: &str, why: &str) -> Error {
        Error::new(
            ErrorKind::OutsideWorkspace,
            format!(
                "path '{shown}' leaves the workspace {}{why}; use a path inside it, or an absolute path to ask for an outside read",
                self.root.display()
            ),
        )
    }

    /// Resolves a workspace-relative path to a held parent folder and a final
    /// name, following symlinks by the workspace's rules. With `create_dirs`,
    /// missing folders on the way are made (only after a write was allowed).
    pub fn walk(&self, relative: &Path, create_dirs: bool) -> Result<Resolved> {
        Walker::new(self, relative, create_dirs)?.run()
    }

    fn absolute_of(&self, stack: &[(OwnedFd, OsString)], name: Option<&OsString>) -> PathBuf {
        let mut path = self.root.clone();
        path.extend(stack.iter().map(|(_, part)| part));
        if let Some(name) = name {
            path.push(name);
        }
        path
    }

    /// Opens `flags` on a location: inside paths by the workspace's rules,
    /// outside ones as named. Returns the fd and its metadata.
    fn open_location(
        &self,
        location: &Location,
        flags: OFlags,
        shown: &str,
    ) -> Result<(OwnedFd, Stat)> {
        let flags = flags | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK;
        let fd = match location {
            Location::Outside(path) => open_outside(path, flags)?,
            Location::Inside(relative) => self.open_inside(relative, flags, shown)?,
        };
        let stat = rustix::fs::fstat(&fd).map_err(|e| Error::io(shown, e))?;
        if !self.hidden().is_empty() {
            let Some(real) = real_path(&fd) else {
                return Err(Error::new(
                    ErrorKind::Forbidden,
                    format!(
                        "'{shown}': where it lies cannot be read (/proc/self/fd), so whether it \
                         is hidden from the tools cannot be told; refused"
                    ),
                ));
            };
            self.refuse_hidden(&real, shown)?;
        }
        Ok((fd, stat))
    }

    fn open_inside(&self, relative: &Path, flags: OFlags, shown: &str) -> Result<OwnedFd> {
        let relative_or_dot = if relative.as_os_str().is_empty() {
            Path::new(".")
        } else {
            relative
        };
        if !OPENAT2_UNAVAILABLE.load(Ordering::Relaxed) {
            match rustix::fs::openat2(
                &self.root_fd,
                relative_or_dot,
                flags,
                Mode::empty(),
                ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
            ) {
                Ok(fd) => return Ok(fd),
                Err(Errno::NOENT) => {
                    return Err(Error::new(
                        ErrorKind::NotFound,
                        format!("'{shown}' does not exist"),
                    ));
                }
                Err(Errno::NOTDIR) => {
                    return Err(Error::new(
                        ErrorKind::NotFound,
                        format!("'{shown}': a part of it is not a folder"),
                    ));
                }
                Err(Errno::NOSYS | Errno::PERM | Errno::INVAL | Errno::TOOBIG) => {
                    OPENAT2_UNAVAILABLE.store(true, Ordering::Relaxed);
                }
                // EXDEV: a link leaves the subtree or is absolute; ELOOP: a loop or
                // a magic link. The walk tells which, and follows inside links.
                Err(_) => {}
            }
        }
        for _ in 0..8 {
            let resolved = self.walk(relative, false)?;
            if resolved.stat.is_none() {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    format!("'{shown}' does not exist"),
                ));
            }
            let name = resolved.name.as_deref().unwrap_or(OsStr::new("."));
            match rustix::fs::openat(&resolved.dir, name, flags | OFlags::NOFOLLOW, Mode::empty()) {
                Ok(fd) => return Ok(fd),
                // It became a symlink after the walk looked: walk again.
                Err(Errno::LOOP) => continue,
                Err(error) => {
                    return Err(Error::new(errno_kind(error), format!("'{shown}': {error}")));
                }
            }
        }
        Err(Error::io(
            shown,
            "the path kept changing while it was opened",
        ))
    }

    /// Opens a regular file for reading. Special files are refused before any
    /// blocking read could happen (the open itself is non-blocking).
    pub fn open_file(&self, location: &Location, shown: &str) -> Result<(File, Stat)> {
        let (fd, stat) = self.open_location(location, OFlags::RDONLY, shown)?;
        require_regular(&stat, shown)?;
        Ok((File::from(fd), stat))
    }

    /// Opens a folder for listing.
    pub fn open_dir(&self, location: &Location, shown: &str) -> Result<OwnedFd> {
        let opened = self.open_location(location, OFlags::RDONLY | OFlags::DIRECTORY, shown);
        let (fd, stat) = match opened {
            Ok(opened) => opened,
            Err(error) => {
                // Say what is there instead: an O_PATH open reads nothing and
                // starts no device, so it is safe on anything the path names.
                let what = self
                    .open_location(location, OFlags::PATH, shown)
                    .ok()
                    .map(|(_, stat)| file_type(&stat));
                return Err(match what {
                    Some(FileType::RegularFile) => Error::invalid(format!(
                        "'{shown}' is a file, not a folder; use read_file to read it"
                    )),
                    Some(FileType::Directory) | None => error,
                    Some(_) => Error::invalid(format!("'{shown}' is not a folder")),
                });
            }
        };
        if file_type(&stat) != FileType::Directory {
            return Err(Error::invalid(format!("'{shown}' is not a folder")));
        }
        Ok(fd)
    }

    /// Reads a file the runtime itself needs from the workspace (its config,
    /// AGENTS.md, a SKILL.md) by the same rules as a tool: a link out is not
    /// followed, a FIFO or device is refused, and a file over `cap` bytes is
    /// `too_large`. `None` when it does not exist.
    pub fn read_runtime_file(&self, relative: &Path, cap: u64) -> Result<Option<Vec<u8>>> {
        let shown = display(relative);
        if relative.is_absolute() {
            return Err(Error::invalid(format!("'{shown}' is not a relative path")));
        }
        let location = Location::Inside(relative.to_path_buf());
        let (mut file, stat) = match self.open_file(&location, &shown) {
            Ok(opened) => opened,
            Err(error) if error.kind == ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(error),
        };
        if stat.st_size as u64 > cap {
            return Err(Error::new(
                ErrorKind::TooLarge,
                format!(
                    "'{shown}' is {} bytes; Wicket reads at most {cap} bytes of it",
                    stat.st_size
                ),
            ));
        }
        read_up_to(&mut file, cap, &shown).map(Some)
    }

    /// The names of the folders in an inside folder, sorted (for skills);
    /// empty when it does not exist.
    pub fn runtime_subfolders(&self, relative: &Path) -> Result<Vec<String>> {
        let shown = display(relative);
        let location = Location::Inside(relative.to_path_buf());
        let fd = match self.open_dir(&location, &shown) {
            Ok(fd) => fd,
            Err(error) if error.kind == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(error),
        };
        let mut dir = rustix::fs::Dir::read_from(&fd).map_err(|e| Error::io(&shown, e))?;
        let mut names = Vec::new();
        while let Some(Ok(entry)) = dir.read() {
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            // Links are not followed, here as anywhere.
            let is_dir = match entry.file_type() {
                FileType::Directory => true,
                FileType::Unknown => {
                    rustix::fs::statat(&fd, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW)
                        .is_ok_and(|stat| file_type(&stat) == FileType::Directory)
                }
                _ => false,
            };
            if is_dir {
                names.push(String::from_utf8_lossy(name).into_owned());
            }
        }
        names.sort();
        Ok(names)
    }

    /// Opens an inside folder by the workspace's rules and says where it
    /// really is (a command's cwd).
    pub fn open_folder(&self, relative: &Path, shown: &str) -> Result<(OwnedFd, PathBuf)> {
        for _ in 0..8 {
            let resolved = self.walk(relative, false)?;
            let Some(stat) = resolved.stat else {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    format!("'{shown}' does not exist"),
                ));
            };
            if file_type(&stat) != FileType::Directory {
                return Err(Error::invalid(format!("'{shown}' is not a folder")));
            }
            let name = resolved.name.as_deref().unwrap_or(OsStr::new("."));
            match rustix::fs::openat(
                &resolved.dir,
                name,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            ) {
                Ok(fd) => return Ok((fd, resolved.absolute)),
                // Swapped after the walk looked: walk again.
                Err(Errno::LOOP | Errno::NOTDIR) => continue,
                Err(error) => {
                    return Err(Error::new(errno_kind(error), format!("'{shown}': {error}")));
                }
            }
        }
        Err(Error::io(
            shown,
            "the path kept changing while it was opened",
        ))
    }

    /// Resolves where a write to `location` would land, without changing anything.
    pub fn resolve_write(&self, location: &Location, create_dirs: bool) -> Result<Resolved> {
        let resolved = match location {
            Location::Inside(relative) => self.walk(relative, create_dirs)?,
            Location::Outside(path) => resolve_outside_write(path)?,
        };
        if resolved.name.is_none() {
            return Err(Error::invalid(format!(
                "'{}' is a folder; give the path of a file to write",
                resolved.absolute.display()
            )));
        }
        if let Some(stat) = &resolved.stat {
            require_regular(stat, &display(&resolved.absolute))?;
        }
        self.refuse_hidden(&resolved.absolute, &display(&resolved.absolute))?;
        Ok(resolved)
    }
}

/// Where an open descriptor's file really is (its `/proc/self/fd` link).
pub(crate) fn real_path(fd: impl AsFd) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_fd().as_raw_fd())).ok()
}

/// The names of a relative path, `..` kept as a name.
fn components_of(path: &Path) -> VecDeque<OsString> {
    path.components()
        .filter_map(|component| match component {
            Component::Normal(name) => Some(name.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => None,
        })
        .collect()
}

/// Whether a path as written names a folder (`a/`, `a/.`): POSIX then
/// requires the last component to be one.
fn names_a_folder(path: &Path) -> bool {
    let bytes = path.as_os_str().as_bytes();
    bytes.ends_with(b"/") || bytes.ends_with(b"/.") || bytes == b"."
}

/// One walk of a workspace-relative path: the names still to go, the
/// folders held so far, and one method per kind of entry met on the way.
/// Every result is made by [`Walker::resolved`].
struct Walker<'w> {
    workspace: &'w Workspace,
    shown: String,
    pending: VecDeque<OsString>,
    stack: Vec<(OwnedFd, OsString)>,
    follows: usize,
    retries: usize,
    create_dirs: bool,
    /// The path as written ends in `/`: its last entry must be a folder.
    folder_wanted: bool,
}

/// What one step of the walk decided: `None` to go on, or the result.
type Step = Option<Resolved>;

impl<'w> Walker<'w> {
    fn new(workspace: &'w Workspace, relative: &Path, create_dirs: bool) -> Result<Walker<'w>> {
        let shown = display(relative);
        if relative.is_absolute() {
            return Err(Error::invalid(format!("'{shown}' is not a relative path")));
        }
        Ok(Walker {
            workspace,
            pending: components_of(relative),
            folder_wanted: names_a_folder(relative),
            shown,
            stack: Vec::new(),
            follows: 0,
            retries: 0,
            create_dirs,
        })
    }

    fn top(&self) -> BorrowedFd<'_> {
        match self.stack.last() {
            Some((fd, _)) => fd.as_fd(),
            None => self.workspace.root_fd.as_fd(),
        }
    }

    fn run(mut self) -> Result<Resolved> {
        loop {
            let step = match self.pending.pop_front() {
                None => self.at_end()?,
                Some(name) if name == ".." => self.up()?,
                Some(name) => self.enter(name)?,
            };
            if let Some(resolved) = step {
                return Ok(resolved);
            }
        }
    }

    /// The one constructor of a result: `dir` is the folder on top of the
    /// stack, `name` the entry in it (none: that folder itself).
    fn resolved(
        &self,
        name: Option<OsString>,
        stat: Option<Stat>,
        missing: Vec<OsString>,
    ) -> Result<Resolved> {
        let dir = rustix::io::dup(self.top()).map_err(|e| Error::io(&self.shown, e))?;
        let mut absolute = self.workspace.absolute_of(&self.stack, None);
        absolute.extend(missing.iter());
        if let Some(name) = &name {
            absolute.push(name);
        }
        let stat = match (&name, stat) {
            (None, _) => rustix::fs::fstat(&dir).ok(),
            (Some(_), stat) => stat,
        };
        if self.folder_wanted
            && let Some(stat) = &stat
            && file_type(stat) != FileType::Directory
        {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "'{}' ends in '/' but is not a folder; drop the '/' to name the file",
                    self.shown
                ),
            ));
        }
        Ok(Resolved {
            dir,
            name,
            absolute,
            stat,
            missing,
        })
    }

    /// Nothing left: the path names the folder on top of the stack.
    fn at_end(&mut self) -> Result<Step> {
        Ok(Some(self.resolved(None, None, Vec::new())?))
    }

    /// `..`: one folder up, or above the root, where only a path that comes
    /// straight back in (a link like `../ws/file`) stays inside.
    fn up(&mut self) -> Result<Step> {
        if self.stack.pop().is_some() {
            return Ok(None);
        }
        let root = &self.workspace.root;
        let mut above = root.parent().map(Path::to_path_buf).unwrap_or_default();
        above.extend(self.pending.drain(..));
        match self.workspace.inside_relative(&canonical_or_parent(&above)) {
            Some(relative) => {
                self.pending = components_of(&relative);
                Ok(None)
            }
            None => Err(self.workspace.escape_error(&self.shown, " by '..'")),
        }
    }

    /// A name: look at what it is without following it, then act on that.
    fn enter(&mut self, name: OsString) -> Result<Step> {
        let stat = match rustix::fs::statat(self.top(), name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW)
        {
            Ok(stat) => stat,
            Err(Errno::NOENT) => return self.missing(name),
            Err(error) => {
                return Err(Error::new(
                    errno_kind(error),
                    format!("'{}': {error}", self.shown),
                ));
            }
        };
        match file_type(&stat) {
            FileType::Symlink => self.symlink(name),
            FileType::Directory if !self.pending.is_empty() => self.folder(name),
            _ if self.pending.is_empty() => {
                Ok(Some(self.resolved(Some(name), Some(stat), Vec::new())?))
            }
            _ => Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "'{}': '{}' is not a folder",
                    self.shown,
                    name.to_string_lossy()
                ),
            )),
        }
    }

    /// A name that does not exist: the end of the path (a new file), a
    /// folder to create (a write that was allowed), or the folders a write
    /// would create, which must be plain names.
    fn missing(&mut self, name: OsString) -> Result<Step> {
        if self.pending.is_empty() {
            return Ok(Some(self.resolved(Some(name), None, Vec::new())?));
        }
        if self.create_dirs {
            match rustix::fs::mkdirat(self.top(), name.as_os_str(), Mode::from_raw_mode(0o755)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(error) => {
                    return Err(Error::io(
                        &format!("creating a folder for '{}'", self.shown),
                        error,
                    ));
                }
            }
            self.pending.push_front(name);
            return Ok(None);
        }
        let mut missing = vec![name];
        let mut last = None;
        while let Some(next) = self.pending.pop_front() {
            if next == ".." {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    format!(
                        "'{}' goes up out of a folder that does not exist",
                        self.shown
                    ),
                ));
            }
            if let Some(previous) = last.replace(next) {
                missing.push(previous);
            }
        }
        match last {
            Some(last) => Ok(Some(self.resolved(Some(last), None, missing)?)),
            None => Err(Error::new(
                ErrorKind::NotFound,
                format!("'{}' does not exist", self.shown),
            )),
        }
    }

    /// A symlink: its target is spliced into the names still to go. An
    /// absolute target must land inside the workspace, or the path escapes.
    fn symlink(&mut self, name: OsString) -> Result<Step> {
        self.follows += 1;
        if self.follows > SYMLINK_MAX_FOLLOWS {
            return Err(Error::invalid(format!(
                "'{}' goes through more than {SYMLINK_MAX_FOLLOWS} symlinks (a loop?)",
                self.shown
            )));
        }
        let target = rustix::fs::readlinkat(self.top(), name.as_os_str(), Vec::new())
            .map_err(|e| Error::io(&self.shown, e))?;
        let target = PathBuf::from(OsStr::from_bytes(target.as_bytes()));
        let spliced = if target.is_absolute() {
            let workspace = self.workspace;
            let inside = workspace
                .inside_relative(&target)
                .or_else(|| workspace.inside_relative(&canonical_or_parent(&target)));
            let Some(relative) = inside else {
                return Err(workspace.escape_error(
                    &self.shown,
                    &format!(
                        " through the symlink '{}' -> '{}'",
                        name.to_string_lossy(),
                        target.display()
                    ),
                ));
            };
            self.stack.clear();
            components_of(&relative)
        } else {
            components_of(&target)
        };
        for part in spliced.into_iter().rev() {
            self.pending.push_front(part);
        }
        Ok(None)
    }

    /// A folder with more names after it: hold it open and go in. One that
    /// was swapped since the stat is judged again.
    fn folder(&mut self, name: OsString) -> Result<Step> {
        match rustix::fs::openat(
            self.top(),
            name.as_os_str(),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => self.stack.push((fd, name)),
            Err(Errno::LOOP | Errno::NOTDIR | Errno::NOENT) if self.retries < 64 => {
                self.retries += 1;
                self.pending.push_front(name);
            }
            Err(error) => {
                return Err(Error::new(
                    errno_kind(error),
                    format!("'{}': {error}", self.shown),
                ));
            }
        }
        Ok(None)
    }
}

/// The canonical form of a path; for a path that does not exist, its
/// canonical parent joined with its name.
fn canonical_or_parent(path: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => match std::fs::canonicalize(parent) {
            Ok(real_parent) => real_parent.join(name),
            Err(_) => path.to_path_buf(),
        },
        _ => path.to_path_buf(),
    }
}

/// Opens an outside path that the person allowed by name. It was canonicalized
/// for the card, so it must open without following any symlink now.
fn open_outside(path: &Path, flags: OFlags) -> Result<OwnedFd> {
    let shown = display(path);
    let result = if OPENAT2_UNAVAILABLE.load(Ordering::Relaxed) {
        rustix::fs::open(path, flags | OFlags::NOFOLLOW, Mode::empty())
    } else {
        match rustix::fs::openat2(
            rustix::fs::CWD,
            path,
            flags,
            Mode::empty(),
            ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
        ) {
            Err(Errno::NOSYS | Errno::PERM | Errno::TOOBIG) => {
                OPENAT2_UNAVAILABLE.store(true, Ordering::Relaxed);
                rustix::fs::open(path, flags | OFlags::NOFOLLOW, Mode::empty())
            }
            other => other,
        }
    };
    result.map_err(|error| match error {
        Errno::NOENT => Error::new(ErrorKind::NotFound, format!("'{shown}' does not exist")),
        Errno::LOOP | Errno::XDEV => Error::io(
            &shown,
            "it changed into a symlink after it was shown on the card",
        ),
        other => Error::new(errno_kind(other), format!("'{shown}': {other}")),
    })
}

fn resolve_outside_write(path: &Path) -> Result<Resolved> {
    let shown = display(path);
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(Error::invalid(format!(
            "'{shown}' has no file name to write"
        )));
    };
    let dir = open_outside(parent, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC)?;
    let stat = match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => Some(stat),
        Err(Errno::NOENT) => None,
        Err(error) => return Err(Error::io(&shown, error)),
    };
    Ok(Resolved {
        dir,
        name: Some(name.to_os_string()),
        absolute: path.to_path_buf(),
        stat,
        missing: Vec::new(),
    })
}

/// Reads a regular file opened by the resolver, up to `limit` bytes (never
/// more, so a sparse or endless file is not slurped).
pub(crate) fn read_up_to(file: &mut File, limit: u64, shown: &str) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    file.take(limit)
        .read_to_end(&mut bytes)
        .map_err(|error| Error::io(shown, error))?;
    Ok(bytes)
}
