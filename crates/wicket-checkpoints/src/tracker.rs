//! What changed in the workspace since the last checkpoint, told by the
//! kernel: an inotify watch on every folder a full scan walked, held for
//! the session's process, so a checkpoint after a small change looks only
//! at the paths named since (a command in the jail changes the same
//! inodes, so its changes are heard too).
//!
//! The tracker is trusted only while it can be: a queue that overflowed, a
//! watch that could not be added, the workspace's root moved, or a
//! filesystem whose changes the kernel may not hear (a network or FUSE
//! one) each make the next checkpoint a full scan. The watches are added
//! before a folder is listed, so a change made while it is walked is heard.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
use rustix::io::Errno;

/// What the kernel said since the last drain.
#[derive(Debug, Default, Clone)]
pub(crate) struct Heard {
    /// Paths below the root that may have changed (a file, a link, a
    /// folder's own metadata, or a name made or removed in a folder).
    pub paths: BTreeSet<Vec<u8>>,
    /// The tracker lost count: the next checkpoint is a full scan.
    pub lost: bool,
}

pub(crate) struct Tracker {
    fd: OwnedFd,
    /// The folder each watch is on, by watch descriptor.
    folders: HashMap<i32, Vec<u8>>,
    /// The watch on each folder, and the folder's inode.
    watches: BTreeMap<Vec<u8>, (i32, u64)>,
    /// The filesystem the root is on: a folder on another is not trusted.
    device: u64,
    lost: bool,
    /// Heard by a plan, which records nothing: kept for the next checkpoint.
    pending: Heard,
}

/// What a [`Watcher`] added, or that it lost count.
pub(crate) struct Added {
    lost: bool,
    watches: Vec<(Vec<u8>, i32, u64)>,
}

/// Adds watches on a tracker's descriptor from one walker's thread.
pub(crate) struct Watcher<'t> {
    fd: BorrowedFd<'t>,
    device: u64,
    added: Added,
}

impl Watcher<'_> {
    /// Watches the folder at `path` (held open as `dir`), before it is listed.
    pub(crate) fn watch(&mut self, path: &[u8], dir: BorrowedFd<'_>) {
        if self.added.lost {
            return;
        }
        let stat = match rustix::fs::fstat(dir) {
            Ok(stat) => stat,
            Err(_) => {
                self.added.lost = true;
                return;
            }
        };
        // Another filesystem mounted inside: its changes may go unheard.
        if stat.st_dev != self.device {
            self.added.lost = true;
            return;
        }
        // The folder itself, as held: no path to race with.
        let proc_path = format!("/proc/self/fd/{}", dir.as_raw_fd());
        match inotify::add_watch(self.fd, proc_path.as_str(), watch_flags()) {
            Ok(wd) => self.added.watches.push((path.to_vec(), wd, stat.st_ino)),
            // Out of watches (fs.inotify.max_user_watches) or no /proc: full scans.
            Err(_) => self.added.lost = true,
        }
    }

    /// What it added, for [`Tracker::adopt`].
    pub(crate) fn added(self) -> Added {
        self.added
    }
}

fn watch_flags() -> WatchFlags {
    WatchFlags::CREATE
        | WatchFlags::DELETE
        | WatchFlags::MODIFY
        | WatchFlags::ATTRIB
        | WatchFlags::MOVED_FROM
        | WatchFlags::MOVED_TO
        // A file written through a mapping says so only when it is closed.
        | WatchFlags::CLOSE_WRITE
        | WatchFlags::DELETE_SELF
        | WatchFlags::MOVE_SELF
        | WatchFlags::ONLYDIR
        | WatchFlags::EXCL_UNLINK
}

fn joined(folder: &[u8], name: &[u8]) -> Vec<u8> {
    let mut path = Vec::with_capacity(folder.len() + 1 + name.len());
    if !folder.is_empty() {
        path.extend_from_slice(folder);
        path.push(b'/');
    }
    path.extend_from_slice(name);
    path
}

/// Whether `path` is `folder` or lies below it.
pub(crate) fn within(path: &[u8], folder: &[u8]) -> bool {
    path.starts_with(folder) && (path.len() == folder.len() || path[folder.len()] == b'/')
}

impl Tracker {
    /// A tracker for the workspace whose root folder is `root`; `None` when
    /// the kernel cannot give one, or the root's filesystem is not one
    /// whose changes it always hears.
    pub(crate) fn new(root: BorrowedFd<'_>) -> Option<Tracker> {
        let fs = rustix::fs::fstatfs(root).ok()?;
        // Every magic number fits in 32 bits; f_type's width differs between targets.
        if !wicket_os::walk::LOCAL_FILESYSTEMS.contains(&(fs.f_type as u32)) {
            return None;
        }
        let device = rustix::fs::fstat(root).ok()?.st_dev;
        let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).ok()?;
        Some(Tracker {
            fd,
            folders: HashMap::new(),
            watches: BTreeMap::new(),
            device,
            lost: false,
            pending: Heard::default(),
        })
    }

    /// Watches the folder at `path` (held open as `dir`), before it is listed.
    pub(crate) fn watch(&mut self, path: &[u8], dir: BorrowedFd<'_>) {
        let mut watcher = self.watcher();
        watcher.watch(path, dir);
        let added = watcher.added();
        self.adopt(added);
    }

    /// A watcher for one walker of a full scan: it adds watches on this
    /// tracker's descriptor; [`Tracker::adopt`] takes them in after.
    pub(crate) fn watcher(&self) -> Watcher<'_> {
        Watcher {
            fd: self.fd.as_fd(),
            device: self.device,
            added: Added {
                lost: self.lost,
                watches: Vec::new(),
            },
        }
    }

    /// Takes in the watches a [`Watcher`] added, in their order.
    pub(crate) fn adopt(&mut self, added: Added) {
        self.lost |= added.lost;
        for (path, wd, ino) in added.watches {
            self.record(path, wd, ino);
        }
    }

    /// Records the watch `wd` on the folder at `path`, inode `ino`.
    fn record(&mut self, path: Vec<u8>, wd: i32, ino: u64) {
        // The same folder under a name it had before (it moved): the watch is the new name's.
        if let Some(previous) = self.folders.insert(wd, path.clone())
            && previous != path
            && self.watches.get(&previous).map(|watch| watch.0) == Some(wd)
        {
            self.watches.remove(&previous);
        }
        if let Some((old, _)) = self.watches.insert(path.clone(), (wd, ino))
            && old != wd
            && self.folders.get(&old).is_some_and(|folder| *folder == path)
        {
            self.folders.remove(&old);
            // Another folder stood here.
            self.unwatch(old);
        }
    }

    /// Stops watching `path` and every folder below it (they are walked
    /// again, or are gone). A watch a folder took with it under a new
    /// name is left to that name.
    pub(crate) fn forget(&mut self, path: &[u8]) {
        let below: Vec<(Vec<u8>, i32)> = self
            .watches
            .range(path.to_vec()..)
            .take_while(|(folder, _)| folder.starts_with(path))
            .filter(|(folder, _)| within(folder, path))
            .map(|(folder, watch)| (folder.clone(), watch.0))
            .collect();
        for (folder, wd) in below {
            self.watches.remove(&folder);
            if self.folders.get(&wd) != Some(&folder) {
                continue;
            }
            self.folders.remove(&wd);
            self.unwatch(wd);
        }
    }

    /// Removes the watch `wd` from the kernel.
    fn unwatch(&self, wd: i32) {
        // A watch the kernel already dropped (its folder removed) is gone either way.
        let _ = inotify::remove_watch(&self.fd, wd);
    }

    /// Keeps what a plan heard for the next checkpoint.
    pub(crate) fn keep(&mut self, heard: Heard) {
        self.pending = heard;
    }

    /// Whether the folder at `path`, inode `ino`, is the one watched there.
    pub(crate) fn watches(&self, path: &[u8], ino: u64) -> bool {
        self.watches.get(path).is_some_and(|watch| watch.1 == ino)
    }

    /// How many folders below the workspace's root are watched: while
    /// nothing is lost, every folder of the state.
    pub(crate) fn folders(&self) -> usize {
        self.watches.len() - usize::from(self.watches.contains_key(&b""[..]))
    }

    /// Everything the kernel said since the last drain.
    pub(crate) fn drain(&mut self) -> Heard {
        let mut heard = std::mem::take(&mut self.pending);
        heard.lost |= self.lost;
        let mut buffer = vec![MaybeUninit::<u8>::uninit(); 64 * 1024];
        let mut reader = inotify::Reader::new(self.fd.as_fd(), &mut buffer);
        loop {
            let event = match reader.next() {
                Ok(event) => event,
                Err(Errno::AGAIN | Errno::INTR) => break,
                Err(_) => {
                    heard.lost = true;
                    break;
                }
            };
            let flags = event.events();
            if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
                heard.lost = true;
                continue;
            }
            let Some(folder) = self.folders.get(&event.wd()) else {
                // A watch forgotten since: its folder is walked again or gone.
                continue;
            };
            if flags.contains(ReadFlags::IGNORED) {
                let folder = folder.clone();
                self.folders.remove(&event.wd());
                if self.watches.get(&folder).map(|watch| watch.0) == Some(event.wd()) {
                    self.watches.remove(&folder);
                }
                continue;
            }
            match event.file_name() {
                Some(name) => {
                    heard.paths.insert(joined(folder, name.to_bytes()));
                }
                // The root moved or went, or was unmounted: nothing it says can be trusted.
                None if folder.is_empty()
                    && flags.intersects(
                        ReadFlags::DELETE_SELF | ReadFlags::MOVE_SELF | ReadFlags::UNMOUNT,
                    ) =>
                {
                    heard.lost = true;
                }
                None if folder.is_empty() => {}
                None => {
                    heard.paths.insert(folder.clone());
                }
            }
        }
        self.lost |= heard.lost;
        heard
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(path: &std::path::Path) -> OwnedFd {
        rustix::fs::open(
            path,
            rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::RDONLY,
            rustix::fs::Mode::empty(),
        )
        .unwrap()
    }

    #[test]
    fn changes_in_watched_folders_are_heard_by_path() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("a")).unwrap();
        let root_fd = open(root);
        let Some(mut tracker) = Tracker::new(root_fd.as_fd()) else {
            eprintln!("skipped: this filesystem is not one the tracker trusts");
            return;
        };
        tracker.watch(b"", root_fd.as_fd());
        let a = open(&root.join("a"));
        tracker.watch(b"a", a.as_fd());
        std::fs::write(root.join("a/f"), "x").unwrap();
        std::fs::write(root.join("top"), "y").unwrap();
        std::fs::rename(root.join("a/f"), root.join("a/g")).unwrap();
        let heard = tracker.drain();
        assert!(!heard.lost);
        let paths: Vec<&[u8]> = heard.paths.iter().map(Vec::as_slice).collect();
        assert_eq!(paths, [b"a/f".as_slice(), b"a/g", b"top"]);
        tracker.forget(b"a");
        std::fs::write(root.join("a/h"), "z").unwrap();
        assert!(tracker.drain().paths.is_empty());
        let ino = |path: &std::path::Path| {
            std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(path).unwrap())
        };
        assert!(!tracker.watches(b"a", ino(&root.join("a"))));
        assert!(tracker.watches(b"", ino(root)));
    }
}
