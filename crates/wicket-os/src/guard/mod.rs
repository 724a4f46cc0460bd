//! What git and Wicket run later, found in a workspace at any depth: every
//! `.git` entry (a folder, a `gitdir:` file, a link) and where it points,
//! every git folder under another name (a bare repository, a submodule's
//! gitdir), every `.wicket`, and the hooks folder and included config files
//! a repository's config names. Stage 2 of the launcher scans before the
//! command starts (each found entry is bound read-only, unless the call may
//! write git) and again after it ends, with nothing of it left running: an
//! entry the command made is removed, a link it replaced is put back, and
//! what it changed that other tools run later is named, each on a line of
//! the command's stderr, which the model and the person read.
//!
//! The walk reads names only (one `getdents` a folder, no `stat` but for a
//! `.git` file and the few files [`runs_later`] names), and every folder is
//! entered from its parent's descriptor with `O_NOFOLLOW`, so no link leads
//! it out of the workspace.

use std::collections::BTreeMap;
use std::ffi::{CStr, CString, OsStr};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rustix::fs::{Access, AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use rustix::process::Uid;
use wicket_protocol::guarded::{GUARDED_NAMES, may_run_later, runs_later};

use crate::walk::{self, Tasks};

/// At most this much of a `.git` file is read (`gitdir: PATH` is one short line).
pub const GIT_FILE_MAX_BYTES: usize = 4096;

/// At most this much of a repository's `config` is read for its hooks
/// folder and includes.
const GIT_CONFIG_MAX_BYTES: usize = 256 * 1024;

/// At most this many entries are walked; past it, the scan stops (what it
/// found so far is still protected) and says so.
pub const SCAN_MAX_ENTRIES: usize = 2_000_000;

/// At most this many changed files that run later are named after a command.
const RUNS_LATER_NAMED: usize = 10;

/// What a guarded entry was before the command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A real folder.
    Folder,
    /// A regular file (a `.git` file: `gitdir: PATH`).
    File,
    /// A link, and what it held.
    Link(PathBuf),
    /// Something else (a FIFO, a socket, a device).
    Other,
}

/// What the scan before a command read of one folder. The scan after it
/// takes this instead of listing the folder again when the folder is the
/// same inode with the same ctime, older than the command: a name made,
/// removed or renamed in a folder sets its ctime, which no command can
/// set back, so its names are the same.
#[derive(Debug, Clone)]
pub(crate) struct Listed {
    ino: u64,
    ctime: i128,
    /// How many names it held.
    names: usize,
    /// Its `.git` and `.wicket` entries.
    guarded: Vec<(std::ffi::OsString, Kind)>,
    /// Its folders, not walked below when it is a git folder.
    folders: Vec<CString>,
    /// Its files a tool runs later: name, path, who runs it.
    later: Vec<(Vec<u8>, String, String)>,
    /// A git folder under another name: not walked below.
    git_folder: bool,
}

impl Kind {
    /// The type of file it is.
    fn file_type(&self) -> FileType {
        match self {
            Kind::Folder => FileType::Directory,
            Kind::File => FileType::RegularFile,
            Kind::Link(_) => FileType::Symlink,
            Kind::Other => FileType::Unknown,
        }
    }
}

/// What a scan read of each folder, by its path below the workspace
/// (hashed: a path's order is nothing to a lookup, and comparing paths
/// component by component cost more than the folder's own stat).
pub(crate) type Kept = std::collections::HashMap<PathBuf, Arc<Listed>>;

/// One scan of a workspace.
#[derive(Debug, Default, Clone)]
pub struct Found {
    /// Every entry named `.git` or `.wicket`, below the workspace.
    pub entries: BTreeMap<PathBuf, Kind>,
    /// Git folders not named `.git` (a bare repository, a gitdir), below the workspace.
    pub git_folders: Vec<PathBuf>,
    /// What must be read-only for a command that may not write git: the
    /// `.git` entries, where their files and links point, the other git
    /// folders, each repository's hooks folder and included config files
    /// inside the workspace. Absolute.
    pub git_protected: Vec<PathBuf>,
    /// `.wicket` entries, absolute: read-only for every command.
    pub wicket_protected: Vec<PathBuf>,
    /// What a repository's config names inside the workspace that is not
    /// there yet (a hooks folder, an included file), relative: one a
    /// command makes is removed after it.
    pub absent: Vec<PathBuf>,
    /// Folders the walk could not open or list (no read or search
    /// permission for this process, say), below the workspace, and why:
    /// what they hold is not known, so before a command each is bound
    /// read-only whole, for every command.
    pub unscanned: Vec<(PathBuf, String)>,
    /// For a scan after a command: folders it made or changed so that no
    /// one could list them, opened for their owner to be walked (`u+rx`
    /// added), each with the mode it had, put back after the settle.
    pub reopened: Vec<(PathBuf, u32)>,
    /// True when the walk stopped at [`SCAN_MAX_ENTRIES`].
    pub truncated: bool,
    /// What it read of each folder older than the scan, for a later scan
    /// to take as it is where the folder did not change: the scan after a
    /// command, and the scan before the next one ([`Found::kept`]).
    pub(crate) listed: Kept,
    /// For a scan after a command: how many folders it took from the
    /// scan before, unlisted.
    pub reused: usize,
    /// For a scan after a command: the files it changed (ctime at or past
    /// its start) that other tools run later, and who runs each. A hooks
    /// folder's files are not among them: they are read-only, or removed.
    pub changed_later: Vec<(String, String)>,
}

/// A folder by its path (the workspace, a git folder it names).
fn open_root(path: &Path) -> Option<OwnedFd> {
    rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()
}

fn open_dir(parent: impl AsFd, name: &CStr) -> Option<OwnedFd> {
    open_folder(parent, name, rustix::process::geteuid())
        .ok()
        .map(|(folder, _)| folder)
}

/// The folder `name` in `parent`, no link followed, when this process
/// (whose effective uid is `uid`) may list it and look inside it; with
/// its stat.
fn open_folder(
    parent: impl AsFd,
    name: &CStr,
    uid: Uid,
) -> rustix::io::Result<(OwnedFd, rustix::fs::Stat)> {
    let folder = rustix::fs::openat(
        parent,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let stat = rustix::fs::fstat(&folder)?;
    // Read permission lists it; search permission reaches what it holds.
    // Its owner's is its owner's mode bit (no ACL entry is asked for the
    // owner); anyone else's the kernel judges, a capability standing in.
    let owner_searches = stat.st_uid == uid.as_raw() && stat.st_mode & 0o100 != 0;
    if !owner_searches {
        rustix::fs::accessat(&folder, c".", Access::EXEC_OK, AtFlags::EACCESS)?;
    }
    Ok((folder, stat))
}

/// The names in a folder with their types (a type the folder does not
/// say is asked for); an error when the listing failed part-way.
fn names(folder: &OwnedFd) -> (Vec<(Vec<u8>, FileType)>, std::io::Result<()>) {
    let mut names = Vec::new();
    let listed = walk::list(folder, |name, kind| {
        let kind = match kind {
            FileType::Unknown => std::ffi::CString::new(name)
                .ok()
                .and_then(|name| {
                    rustix::fs::statat(folder, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW).ok()
                })
                .map_or(FileType::Unknown, |stat| {
                    FileType::from_raw_mode(stat.st_mode)
                }),
            kind => kind,
        };
        names.push((name.to_vec(), kind));
    });
    (names, listed)
}

/// At most `max` bytes of the regular file `name` in `folder`, without
/// blocking on a FIFO or following a link; `None` for anything else.
fn read_small(folder: impl AsFd, name: &OsStr, max: usize) -> Option<Vec<u8>> {
    use std::io::Read;
    let fd = rustix::fs::openat(
        folder,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let stat = rustix::fs::fstat(&fd).ok()?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return None;
    }
    let mut bytes = Vec::new();
    std::fs::File::from(fd)
        .take(max as u64)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(bytes)
}

/// The folder a `.git` file points to (`gitdir: PATH`), read from a small
/// regular file only: a 2 GB sparse `.git` costs nothing.
pub fn git_file_target(folder: &Path, bytes: &[u8]) -> Option<PathBuf> {
    let text = std::str::from_utf8(bytes).ok()?;
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    (!target.is_empty()).then(|| folder.join(target))
}

/// A repository's `config`: its `core.hooksPath` and `include.path`s
/// (`includeIf` too), as written. A plain reading of git's format: sections,
/// case-insensitive keys, quotes.
fn config_paths(text: &str) -> Vec<(bool, String)> {
    let mut section = String::new();
    let mut found = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix('[') {
            let name = rest.split([']', ' ', '"', '.']).next().unwrap_or("");
            section = name.to_ascii_lowercase();
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim().to_ascii_lowercase();
        let value = value
            .split(['#', ';'])
            .next()
            .unwrap_or("")
            .trim()
            .trim_matches('"')
            .to_string();
        match (section.as_str(), key.as_str()) {
            ("core", "hookspath") => found.push((true, value)),
            ("include" | "includeif", "path") => found.push((false, value)),
            _ => {}
        }
    }
    found
}

/// `path` with its `.` and `..` taken away by their words (no link read):
/// where a path that does not exist yet would be.
fn lexical(path: &Path) -> Option<PathBuf> {
    use std::path::Component;
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    Some(out)
}

/// Scans `workspace` for what git and Wicket run later.
pub fn scan(workspace: &Path) -> Found {
    scan_since(workspace, None, None)
}

/// [`scan`], taking from what an earlier scan of `workspace` kept
/// ([`Found::kept`]) each folder that is as it was then: not listed
/// again, only opened and its `.git` files and links read again. Bytes
/// that are not a scan's record are as nothing kept: every folder listed.
pub fn scan_kept(workspace: &Path, kept: &[u8]) -> Found {
    let earlier = kept::decode(kept).map(|listed| Found {
        listed,
        ..Found::default()
    });
    scan_since(workspace, None, earlier.as_ref())
}

impl Found {
    /// What this scan read of each folder, as bytes to hand the next scan
    /// of the workspace ([`scan_kept`]); empty past [`KEPT_MAX_BYTES`].
    pub fn kept(&self) -> Vec<u8> {
        kept::encode(&self.listed)
    }
}

/// Whether the file `name` in `folder` changed at or after `since`
/// (nanoseconds since the epoch, by its ctime, which no command can set back).
fn changed_since(folder: impl AsFd, name: &OsStr, since: i128) -> bool {
    rustix::fs::statat(folder, name, AtFlags::SYMLINK_NOFOLLOW)
        .is_ok_and(|stat| ctime_nanos(&stat) >= since)
}

/// The kernel's coarse clock, which stamps a file's ctime, in nanoseconds
/// since the epoch: a change made after this is read has a ctime at or past it.
fn coarse_now() -> i128 {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::RealtimeCoarse);
    i128::from(now.tv_sec) * 1_000_000_000 + i128::from(now.tv_nsec)
}

/// A file's ctime, in nanoseconds since the epoch.
fn ctime_nanos(stat: &rustix::fs::Stat) -> i128 {
    i128::from(stat.st_ctime) * 1_000_000_000 + i128::from(stat.st_ctime_nsec)
}

/// A folder the scan walks, opened by the walker that takes it (so the
/// folders waiting hold no descriptor of their own: a folder of thousands
/// of folders cannot run the scan out of descriptors and skip some).
struct Folder {
    /// The root, open; or the folder's parent (held) and its name.
    at: At,
    /// Its path below the workspace.
    relative: PathBuf,
    /// Whether it lies in `node_modules`: what a package manager unpacks
    /// is not the person's to run later.
    packages: bool,
}

/// A folder of the scan, opened.
#[derive(Clone, Copy)]
struct Opened<'a> {
    folder: &'a Arc<OwnedFd>,
    relative: &'a Path,
    /// Whether it lies in `node_modules`.
    packages: bool,
}

impl Opened<'_> {
    /// The folder `name` in this one, to be walked.
    fn child(&self, name: CString) -> Folder {
        let os_name = OsStr::from_bytes(name.as_bytes());
        Folder {
            relative: self.relative.join(os_name),
            packages: self.packages || os_name == "node_modules",
            at: At::Below(self.folder.clone(), name),
        }
    }
}

/// Where a folder of the scan is.
enum At {
    Open(OwnedFd),
    Below(Arc<OwnedFd>, CString),
}

/// At most this many threads walk one scan.
const SCAN_WALKERS: usize = 4;

/// What every walker of one scan shares.
struct Scan<'a> {
    workspace: &'a Path,
    /// A command's start, for a scan after it.
    since: Option<i128>,
    /// An earlier scan (before a command, the last one's; after it, the
    /// one before it), when its folders' ctimes can be trusted to say
    /// every change (a local filesystem): a folder on the workspace's
    /// device as it was then is not listed again.
    before: Option<(&'a Found, u64)>,
    /// The kernel's coarse clock when this scan began: a folder whose
    /// ctime is older is kept for a later scan, one at or past it is not
    /// (a name made in it after it was listed, within the same tick,
    /// would leave its ctime as it was).
    began: i128,
    tasks: Tasks<Folder>,
    /// Names listed so far, by every walker.
    walked: AtomicUsize,
    /// This process's effective uid.
    uid: Uid,
}

impl Scan<'_> {
    /// What an earlier scan read of the folder at `relative` (whose
    /// `stat` this is), when the folder is as it was then: the same inode
    /// on the workspace's device, its ctime the same (a name made, removed
    /// or renamed in it sets its ctime, which no process can set back),
    /// older than the scan that read it ([`Scan::began`]) and, after a
    /// command, than the command.
    fn unchanged(&self, relative: &Path, stat: Option<&rustix::fs::Stat>) -> Option<&Arc<Listed>> {
        let ((before, device), stat) = (self.before?, stat?);
        let listed = before.listed.get(relative)?;
        let ctime = ctime_nanos(stat);
        (stat.st_dev == device
            && stat.st_ino == listed.ino
            && ctime == listed.ctime
            && self.since.is_none_or(|since| ctime < since))
        .then_some(listed)
    }
}

/// What one walker of a scan found.
#[derive(Default)]
struct Walker {
    found: Found,
    git_dirs: Vec<PathBuf>,
    /// A file's path as text, made in place.
    text: String,
}

/// [`scan`], and with `since` (a command's start) the files the command
/// changed that other tools run later, in the same walk: by a walker a
/// core, their finds put together in path order.
fn scan_since(workspace: &Path, since: Option<i128>, before: Option<&Found>) -> Found {
    let Some(root) = open_root(workspace) else {
        return Found::default();
    };
    let before = before.and_then(|before| {
        let local = rustix::fs::fstatfs(&root)
            .is_ok_and(|fs| walk::LOCAL_FILESYSTEMS.contains(&(fs.f_type as u32)));
        let device = rustix::fs::fstat(&root).ok()?.st_dev;
        local.then_some((before, device))
    });
    let scan = Scan {
        workspace,
        since,
        before,
        tasks: Tasks::new(vec![Folder {
            at: At::Open(root),
            relative: PathBuf::new(),
            packages: false,
        }]),
        walked: AtomicUsize::new(0),
        uid: rustix::process::geteuid(),
        began: coarse_now(),
    };
    let mut walkers: Vec<Walker> = (0..walk::walkers(SCAN_WALKERS))
        .map(|_| Walker::default())
        .collect();
    walk::share(&mut walkers, |walker| {
        let mut done = None;
        while let Some(folder) = scan.tasks.next(done.take()) {
            let mut below = Vec::new();
            walker.folder(&scan, folder, &mut below);
            done = Some(below);
        }
    });
    let mut found = Found::default();
    let mut git_dirs = Vec::new();
    for walker in walkers {
        let part = walker.found;
        found.entries.extend(part.entries);
        found.git_folders.extend(part.git_folders);
        found.git_protected.extend(part.git_protected);
        found.wicket_protected.extend(part.wicket_protected);
        found.changed_later.extend(part.changed_later);
        found.unscanned.extend(part.unscanned);
        found.reopened.extend(part.reopened);
        found.listed.extend(part.listed);
        found.reused += part.reused;
        found.truncated |= part.truncated;
        git_dirs.extend(walker.git_dirs);
    }
    // Which walker met what is the scheduler's: the same find, in path order.
    found.git_folders.sort();
    found.git_protected.sort();
    found.wicket_protected.sort();
    git_dirs.sort();
    found.changed_later.sort();
    found.changed_later.truncate(RUNS_LATER_NAMED);
    found.unscanned.sort();
    found.reopened.sort();
    for git_dir in git_dirs {
        config_named(&mut found, workspace, &git_dir);
    }
    found.git_protected = bindable(std::mem::take(&mut found.git_protected), workspace);
    found
}

impl Walker {
    /// Lists one folder: what it holds of `.git` and `.wicket` (and, after
    /// a command, of the files that run later) into this walker's find,
    /// the folders in it into `below`; after a command, one as it was
    /// before is taken from the scan before ([`Walker::reuse`]).
    fn folder(&mut self, scan: &Scan<'_>, folder: Folder, below: &mut Vec<Folder>) {
        let Folder {
            at,
            relative,
            packages,
        } = folder;
        if let At::Below(parent, name) = &at
            && self.leaf_as_kept(scan, parent, name, &relative)
        {
            return;
        }
        let (folder, stat) = match at {
            At::Open(fd) => {
                let stat = rustix::fs::fstat(&fd).ok();
                (fd, stat)
            }
            At::Below(parent, name) => match self.enter(scan, &parent, &name, &relative) {
                Some((fd, stat)) => (fd, Some(stat)),
                None => return,
            },
        };
        let folder = Arc::new(folder);
        if let Some(listed) = scan.unchanged(&relative, stat.as_ref()) {
            let opened = Opened {
                folder: &folder,
                relative: &relative,
                packages,
            };
            self.reuse(scan, opened, listed, below);
            return;
        }
        let (names, listed) = names(&folder);
        if let Err(error) = listed {
            // What it holds past the error is not known: as one not opened.
            self.found.unscanned.push((relative, error.to_string()));
            return;
        }
        let walked = scan.walked.fetch_add(names.len(), Ordering::Relaxed) + names.len();
        if walked > SCAN_MAX_ENTRIES {
            self.found.truncated = true;
            scan.tasks.stop();
            return;
        }
        // What it read is kept for a later scan (after the command, the
        // next one's), unless the folder changed within this scan's tick.
        let mut record = stat
            .filter(|stat| ctime_nanos(stat) < scan.began)
            .map(|stat| Listed {
                ino: stat.st_ino,
                ctime: ctime_nanos(&stat),
                names: names.len(),
                guarded: Vec::new(),
                folders: Vec::new(),
                later: Vec::new(),
                git_folder: false,
            });
        if git_folder_named_otherwise(&relative, &names) {
            self.found.git_folders.push(relative.clone());
            self.git_dirs.push(scan.workspace.join(&relative));
            if let Some(mut record) = record {
                record.git_folder = true;
                self.found.listed.insert(relative, Arc::new(record));
            }
            return;
        }
        let opened = Opened {
            folder: &folder,
            relative: &relative,
            packages,
        };
        self.names(scan, opened, names, &mut record, below);
        if let Some(record) = record {
            self.found.listed.insert(relative, Arc::new(record));
        }
    }

    /// The names of a folder listed, each where it belongs: a guarded
    /// entry into the find, a folder into `below`, and a file a tool runs
    /// later kept (before a command) or named when the command changed it.
    fn names(
        &mut self,
        scan: &Scan<'_>,
        opened: Opened<'_>,
        names: Vec<(Vec<u8>, FileType)>,
        record: &mut Option<Listed>,
        below: &mut Vec<Folder>,
    ) {
        let Opened {
            folder,
            relative,
            packages,
        } = opened;
        // The folder as text, once: a file's path is made only when a tool may run it later.
        let prefix = relative.to_string_lossy();
        for (name, kind) in names {
            let os_name = OsStr::from_bytes(&name);
            let guarded = GUARDED_NAMES
                .iter()
                .any(|guarded| name == guarded.as_bytes());
            if guarded {
                let entry = guarded_entry(
                    &mut self.found,
                    &mut self.git_dirs,
                    Where {
                        workspace: scan.workspace,
                        relative,
                        folder,
                    },
                    os_name,
                    kind,
                );
                if let Some(record) = record.as_mut() {
                    record.guarded.push((os_name.to_owned(), entry.clone()));
                }
                self.found.entries.insert(relative.join(os_name), entry);
                continue;
            }
            if kind == FileType::Directory {
                if let Ok(child) = CString::new(name) {
                    if let Some(record) = record.as_mut() {
                        record.folders.push(child.clone());
                    }
                    below.push(opened.child(child));
                }
            } else if !packages {
                self.file(scan, folder, &prefix, name, record);
            }
        }
    }

    /// A file of a folder listed, at `prefix`, when a tool runs it later:
    /// kept with the folder's record, and after a command named when the
    /// command changed it.
    fn file(
        &mut self,
        scan: &Scan<'_>,
        folder: &OwnedFd,
        prefix: &str,
        name: Vec<u8>,
        record: &mut Option<Listed>,
    ) {
        let wanted = record.is_some()
            || (scan.since.is_some() && self.found.changed_later.len() < RUNS_LATER_NAMED);
        if !wanted {
            return;
        }
        let Some((path, who)) = self.runs_later(prefix, &name) else {
            return;
        };
        if let Some(since) = scan.since
            && self.found.changed_later.len() < RUNS_LATER_NAMED
            && changed_since(folder, OsStr::from_bytes(&name), since)
        {
            self.found.changed_later.push((path.clone(), who.clone()));
        }
        if let Some(record) = record {
            record.later.push((name, path, who));
        }
    }

    /// Before a command, a folder an earlier scan kept that holds no
    /// folder and no guarded entry, as it was then: taken by its stat
    /// alone, never opened (there is nothing in it to open anything for).
    fn leaf_as_kept(
        &mut self,
        scan: &Scan<'_>,
        parent: &OwnedFd,
        name: &CStr,
        relative: &Path,
    ) -> bool {
        let Some((before, _)) = scan.before.filter(|_| scan.since.is_none()) else {
            return false;
        };
        let Some(listed) = before.listed.get(relative) else {
            return false;
        };
        if !listed.folders.is_empty() || !listed.guarded.is_empty() || listed.git_folder {
            return false;
        }
        let Ok(stat) = rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) else {
            return false;
        };
        if FileType::from_raw_mode(stat.st_mode) != FileType::Directory {
            return false;
        }
        let Some(listed) = scan.unchanged(relative, Some(&stat)) else {
            return false;
        };
        self.found.reused += 1;
        scan.walked.fetch_add(listed.names, Ordering::Relaxed);
        self.found
            .listed
            .insert(relative.to_path_buf(), Arc::clone(listed));
        true
    }

    /// A folder as an earlier scan read it (`listed`), kept for the next:
    /// its guarded entries and folders as they were (before a command,
    /// each `.git` file and link read again: a file rewritten in place
    /// leaves its folder's ctime alone), and after a command, of its files
    /// that run later those the command changed. No listing, no name compared.
    fn reuse(
        &mut self,
        scan: &Scan<'_>,
        opened: Opened<'_>,
        listed: &Arc<Listed>,
        below: &mut Vec<Folder>,
    ) {
        let Opened {
            folder,
            relative,
            packages,
        } = opened;
        self.found.reused += 1;
        scan.walked.fetch_add(listed.names, Ordering::Relaxed);
        self.found
            .listed
            .insert(relative.to_path_buf(), Arc::clone(listed));
        for (name, kind) in &listed.guarded {
            let kind = match scan.since {
                Some(_) => kind.clone(),
                None => guarded_entry(
                    &mut self.found,
                    &mut self.git_dirs,
                    Where {
                        workspace: scan.workspace,
                        relative,
                        folder,
                    },
                    name,
                    kind.file_type(),
                ),
            };
            self.found.entries.insert(relative.join(name), kind);
        }
        if listed.git_folder {
            if scan.since.is_none() {
                self.found.git_folders.push(relative.to_path_buf());
                self.git_dirs.push(scan.workspace.join(relative));
            }
            return;
        }
        if let Some(since) = scan.since
            && !packages
        {
            for (name, path, who) in &listed.later {
                if self.found.changed_later.len() < RUNS_LATER_NAMED
                    && changed_since(&**folder, OsStr::from_bytes(name), since)
                {
                    self.found.changed_later.push((path.clone(), who.clone()));
                }
            }
        }
        below.extend(
            listed
                .folders
                .iter()
                .map(|child| opened.child(child.clone())),
        );
    }

    /// The folder `name` in `parent` (at `relative`), opened to be walked;
    /// one this process may not list or look inside is `unscanned`, but
    /// after a command see [`Walker::reopen`].
    fn enter(
        &mut self,
        scan: &Scan<'_>,
        parent: &OwnedFd,
        name: &CStr,
        relative: &Path,
    ) -> Option<(OwnedFd, rustix::fs::Stat)> {
        let error = match open_folder(parent, name, scan.uid) {
            Ok(opened) => return Some(opened),
            // Gone, or no longer a folder: nothing to walk.
            Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => return None,
            Err(error) => error,
        };
        if let Some(since) = scan.since
            && matches!(error, Errno::ACCESS | Errno::PERM)
        {
            return self.reopen(scan, parent, name, relative, since);
        }
        self.found
            .unscanned
            .push((relative.to_path_buf(), error.to_string()));
        None
    }

    /// After a command that started at `since`, a folder this process
    /// may not list or look inside: one the command made or changed since
    /// (by its ctime, which no command sets back) is opened for its owner,
    /// `u+rx` added and its mode kept in `reopened` to be put back, so a
    /// command cannot hide a `.git` from the settle in a folder no one
    /// can list. One it did not change it could not enter either, having
    /// this process's credentials and no capability: it is left alone.
    fn reopen(
        &mut self,
        scan: &Scan<'_>,
        parent: &OwnedFd,
        name: &CStr,
        relative: &Path,
        since: i128,
    ) -> Option<(OwnedFd, rustix::fs::Stat)> {
        let stat = rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::Directory
            || ctime_nanos(&stat) < since
        {
            return None;
        }
        let mode = stat.st_mode & 0o7777;
        let opened = rustix::fs::chmodat(
            parent,
            name,
            Mode::from_raw_mode(mode | 0o500),
            AtFlags::empty(),
        )
        .and_then(|()| {
            self.found.reopened.push((relative.to_path_buf(), mode));
            open_folder(parent, name, scan.uid)
        });
        match opened {
            Ok(opened) => Some(opened),
            Err(error) => {
                self.found
                    .unscanned
                    .push((relative.to_path_buf(), error.to_string()));
                None
            }
        }
    }

    /// The path of the file `name` in the folder at `prefix`, and who
    /// runs it, when a tool runs it later ([`runs_later`]); the path is
    /// made in this walker's buffer, a new string only then.
    fn runs_later(&mut self, prefix: &str, name: &[u8]) -> Option<(String, String)> {
        if !may_run_later(prefix, name) {
            return None;
        }
        self.text.clear();
        if !prefix.is_empty() {
            self.text.push_str(prefix);
            self.text.push('/');
        }
        self.text.push_str(&String::from_utf8_lossy(name));
        runs_later(&self.text).map(|who| (self.text.clone(), who))
    }
}

/// Whether the folder at `relative` holding `names` is a git folder under
/// another name than `.git`: HEAD, and objects (or a worktree's commondir).
fn git_folder_named_otherwise(relative: &Path, names: &[(Vec<u8>, FileType)]) -> bool {
    let has = |wanted: &[u8], kind: FileType| {
        names
            .iter()
            .any(|(name, found)| name == wanted && *found == kind)
    };
    !relative.as_os_str().is_empty()
        && relative.file_name().is_none_or(|name| name != ".git")
        && has(b"HEAD", FileType::RegularFile)
        && (has(b"objects", FileType::Directory) || has(b"commondir", FileType::RegularFile))
}

/// Where a walk stands: the workspace, the folder below it, and that folder open.
struct Where<'a> {
    workspace: &'a Path,
    relative: &'a Path,
    folder: &'a OwnedFd,
}

/// A `.git` or `.wicket` entry met by the walk: what it is, with what it
/// protects (and, for git, the git folder it is or names) recorded in `found`.
fn guarded_entry(
    found: &mut Found,
    git_dirs: &mut Vec<PathBuf>,
    at: Where<'_>,
    os_name: &OsStr,
    kind: FileType,
) -> Kind {
    let Where {
        workspace,
        relative,
        folder,
    } = at;
    let absolute = workspace.join(relative).join(os_name);
    let wicket = os_name == ".wicket";
    let protected = if wicket {
        &mut found.wicket_protected
    } else {
        &mut found.git_protected
    };
    match kind {
        FileType::Directory => {
            if !wicket {
                git_dirs.push(absolute.clone());
            }
            protected.push(absolute);
            Kind::Folder
        }
        FileType::RegularFile => {
            protected.push(absolute);
            if !wicket
                && let Some(bytes) = read_small(folder, os_name, GIT_FILE_MAX_BYTES)
                && let Some(target) = git_file_target(&workspace.join(relative), &bytes)
            {
                git_dirs.push(target.clone());
                found.git_protected.push(target);
            }
            Kind::File
        }
        FileType::Symlink => {
            let target = rustix::fs::readlinkat(folder, os_name, Vec::new())
                .map(|target| PathBuf::from(OsStr::from_bytes(target.to_bytes())))
                .unwrap_or_default();
            // The link itself is not a mount point: it is put back after
            // the command; where it leads is read-only.
            let leads = workspace.join(relative).join(&target);
            if !wicket {
                git_dirs.push(leads.clone());
            }
            protected.push(leads);
            Kind::Link(target)
        }
        _ => Kind::Other,
    }
}

/// What the config of the git folder `git_dir` names inside the workspace
/// (its hooks folder, its includes), recorded in `found`: protected when it
/// exists, removed after the command when it does not yet.
fn config_named(found: &mut Found, workspace: &Path, git_dir: &Path) {
    let Some(bytes) = open_root(git_dir)
        .and_then(|folder| read_small(&folder, OsStr::new("config"), GIT_CONFIG_MAX_BYTES))
    else {
        return;
    };
    // Relative paths in a repository's config: a hooks folder is the
    // work tree's (the folder holding `.git`), an include the config's.
    let work_tree = git_dir.parent().map(Path::to_path_buf).unwrap_or_default();
    for (hooks, value) in config_paths(&String::from_utf8_lossy(&bytes)) {
        let path = match value.strip_prefix("~/") {
            Some(rest) => match std::env::var_os("HOME") {
                Some(home) => PathBuf::from(home).join(rest),
                None => continue,
            },
            None if hooks => work_tree.join(&value),
            None => git_dir.join(&value),
        };
        let Ok(real) = std::fs::canonicalize(&path) else {
            // Not there yet: a command that makes it (a hooks folder
            // with a pre-commit, an included config with an fsmonitor)
            // has it removed after it.
            if let Some(relative) = lexical(&path)
                .as_deref()
                .and_then(|path| path.strip_prefix(workspace).ok())
                .filter(|relative| !relative.as_os_str().is_empty())
            {
                found.absent.push(relative.to_path_buf());
            }
            continue;
        };
        if real.starts_with(workspace) {
            found.git_protected.push(real);
        }
    }
}

/// Of the paths to bind read-only, those that can be: a git folder that is
/// the workspace itself (or holds it) is not bound whole, which would leave
/// no command a workspace to write: what git runs of it is, its config and
/// hooks. One above the workspace is read-only already.
fn bindable(paths: Vec<PathBuf>, workspace: &Path) -> Vec<PathBuf> {
    let mut kept = Vec::new();
    for path in paths {
        match std::fs::canonicalize(&path) {
            Ok(real) if workspace.starts_with(&real) => {
                if real == workspace {
                    kept.extend(["config", "hooks", "info"].map(|name| real.join(name)));
                }
            }
            _ => kept.push(path),
        }
    }
    kept
}

mod kept;
mod settle;
pub use kept::KEPT_MAX_BYTES;
pub use settle::Settled;

#[cfg(test)]
mod tests;
