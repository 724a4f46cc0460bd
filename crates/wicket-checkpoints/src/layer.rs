//! A preview's upper layer walked without recursion: depth first, in
//! name order (a folder, then what is below it), holding one folder open
//! at a time. A tree as deep as a command could make it costs neither
//! stack nor descriptors; a folder is found again through its child's
//! `..`, checked to be the one left. Nothing is followed.

use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

/// What a walk does with what it meets.
pub(crate) trait Visit {
    /// Whether a name is met at all (a folder not met is not walked, so
    /// what is below one met passed this at each step).
    fn keep(&self, name: &[u8]) -> bool;
    /// `name` in the folder `parent`, at `path` below the root: a folder
    /// to walk next is handed back, held.
    fn visit(&mut self, parent: &OwnedFd, name: &[u8], path: &[u8]) -> Option<OwnedFd>;
    /// What could not be read, and why.
    fn unread(&mut self, path: &[u8], why: String);
}

/// A folder being walked, and its names still to meet.
struct Frame {
    /// Held while its own names are met; let go while a folder below it
    /// is walked, and held again through that one's `..`.
    fd: Option<OwnedFd>,
    /// Its device and inode: the folder `..` leads back to must be it.
    id: (u64, u64),
    path: Vec<u8>,
    names: std::vec::IntoIter<Vec<u8>>,
}

/// A path below the root, joined.
pub(crate) fn joined(parent: &[u8], name: &[u8]) -> Vec<u8> {
    if parent.is_empty() {
        name.to_vec()
    } else {
        [parent, b"/", name].concat()
    }
}

/// Opens `path` as a folder, never through a link.
pub(crate) fn open_root(path: &Path) -> rustix::io::Result<OwnedFd> {
    rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// Walks the tree below `root` (held), meeting each name with `visitor`.
pub(crate) fn walk(root: OwnedFd, visitor: &mut impl Visit) {
    // One buffer for every folder's listing.
    let mut buffer = vec![std::mem::MaybeUninit::<u8>::uninit(); 32 * 1024];
    let Some(first) = frame(visitor, &mut buffer, root, b"") else {
        return;
    };
    let mut stack = vec![first];
    while let Some(top) = stack.last_mut() {
        let Some(name) = top.names.next() else {
            let Some(done) = stack.pop() else {
                break;
            };
            if let Some(above) = stack.last_mut()
                && above.fd.is_none()
                && !climb(visitor, &done, above)
            {
                // Nothing more can be met in order: said, and what was met stands.
                break;
            }
            continue;
        };
        let Some(fd) = top.fd.as_ref() else {
            break;
        };
        let path = joined(&top.path, &name);
        let Some(below) = visitor.visit(fd, &name, &path) else {
            continue;
        };
        if let Some(frame) = frame(visitor, &mut buffer, below, &path) {
            if let Some(top) = stack.last_mut() {
                top.fd = None;
            }
            stack.push(frame);
        }
    }
}

/// Holds `above` again through `done`'s `..`: false, and said, when that
/// is not the folder it was.
fn climb(visitor: &mut impl Visit, done: &Frame, above: &mut Frame) -> bool {
    let Some(fd) = done.fd.as_ref() else {
        return false;
    };
    let parent = rustix::fs::openat(
        fd,
        "..",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .and_then(|parent| Ok((rustix::fs::fstat(&parent)?, parent)));
    match parent {
        Ok((stat, parent)) if (stat.st_dev, stat.st_ino) == above.id => {
            above.fd = Some(parent);
            true
        }
        Ok(_) => {
            visitor.unread(
                &above.path,
                "the folder moved while it was read; what follows it was not read".into(),
            );
            false
        }
        Err(error) => {
            visitor.unread(&above.path, error.to_string());
            false
        }
    }
}

/// A folder (held) at `path`, its kept names read in order.
fn frame(
    visitor: &mut impl Visit,
    buffer: &mut [std::mem::MaybeUninit<u8>],
    fd: OwnedFd,
    path: &[u8],
) -> Option<Frame> {
    let listed = rustix::fs::fstat(&fd).and_then(|stat| {
        let mut names = Vec::new();
        let mut listing = rustix::fs::RawDir::new(&fd, buffer);
        while let Some(entry) = listing.next() {
            let entry = entry?;
            let name = entry.file_name().to_bytes();
            if name != b"." && name != b".." && visitor.keep(name) {
                names.push(name.to_vec());
            }
        }
        Ok((stat, names))
    });
    let (stat, mut names) = match listed {
        Ok(listed) => listed,
        Err(error) => {
            visitor.unread(path, error.to_string());
            return None;
        }
    };
    names.sort();
    Some(Frame {
        fd: Some(fd),
        id: (stat.st_dev, stat.st_ino),
        path: path.to_vec(),
        names: names.into_iter(),
    })
}

/// Adds up blocks, walking every folder.
struct Blocks(u64);

impl Visit for Blocks {
    fn keep(&self, _name: &[u8]) -> bool {
        true
    }

    fn visit(&mut self, parent: &OwnedFd, name: &[u8], _path: &[u8]) -> Option<OwnedFd> {
        let name = std::ffi::OsStr::from_bytes(name);
        let stat = rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
        let blocks = u64::try_from(stat.st_blocks).unwrap_or(0);
        self.0 = self.0.saturating_add(blocks.saturating_mul(512));
        if FileType::from_raw_mode(stat.st_mode) != FileType::Directory {
            return None;
        }
        rustix::fs::openat(
            parent,
            name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .ok()
    }

    fn unread(&mut self, _path: &[u8], _why: String) {
        // A name gone between the listing and its stat costs nothing on disk.
    }
}

/// The bytes on disk below `folder` (blocks, not sizes: a sparse file
/// costs what it holds), at any depth, never following a link: what a
/// preview's command has written into its layer so far.
pub fn on_disk(folder: &Path) -> u64 {
    let Ok(root) = open_root(folder) else {
        return 0;
    };
    let mut blocks = Blocks(0);
    walk(root, &mut blocks);
    blocks.0
}
