//! One tree walked by several threads: a stack of the folders not yet
//! taken, shared by the walkers, each of which gives back what it found
//! in the folder it took. The checkpoint's full walk
//! (`wicket_tools::tree`) and the jail's scan for `.git` and `.wicket`
//! ([`crate::guard`]) both walk this way: on a large tree, most of the
//! time is the kernel listing folders and reading inodes, and two cores
//! do that faster than one.

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};

use rustix::fs::{FileType, RawDir};
use rustix::io::Errno;

/// A folder's listing is read this many bytes at a time: a folder of a
/// few hundred names in one call (an ext4 folder's listing is hashed and
/// sorted again by the kernel for each call).
const LIST_BYTES: usize = 32 * 1024;

/// Local filesystems that keep an exact account of every change: the
/// kernel reports each change of a watched inode to inotify, and stamps
/// a folder's ctime whenever a name in it is made, removed or renamed
/// (ext2/3/4, XFS, Btrfs, tmpfs, F2FS, ZFS, overlayfs, bcachefs, by
/// `statfs`'s magic number; each fits in 32 bits).
pub const LOCAL_FILESYSTEMS: [u32; 8] = [
    0xEF53,
    0x5846_5342,
    0x9123_683E,
    0x0102_1994,
    0xF2F5_2010,
    0x2FC1_2FC1,
    0x794C_7630,
    0xCA45_1A4E,
];

/// Tells `each` of every name in the folder `dir` (not `.` and `..`), with
/// the type its listing gives (`FileType::Unknown` where the file system
/// gives none). It reads from the descriptor's own position: the caller
/// opened `dir` for this listing. A folder removed meanwhile lists as
/// empty.
pub fn list(dir: &OwnedFd, mut each: impl FnMut(&[u8], FileType)) -> std::io::Result<()> {
    let mut buf: Vec<u8> = Vec::with_capacity(LIST_BYTES);
    let mut listing = RawDir::new(dir, buf.spare_capacity_mut());
    while let Some(entry) = listing.next() {
        let entry = match entry {
            Ok(entry) => entry,
            Err(Errno::NOENT) => break,
            Err(error) => return Err(error.into()),
        };
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            each(name, entry.file_type());
        }
    }
    Ok(())
}

/// The tasks of one walk: those not yet taken, and how many are being
/// walked (none left and none busy: the walk is over).
pub struct Tasks<T> {
    queue: Mutex<(Vec<T>, usize)>,
    woken: Condvar,
    stopped: AtomicBool,
}

impl<T> Tasks<T> {
    /// A walk that starts with `first`.
    pub fn new(first: Vec<T>) -> Tasks<T> {
        Tasks {
            queue: Mutex::new((first, 0)),
            woken: Condvar::new(),
            stopped: AtomicBool::new(false),
        }
    }

    /// Gives back what the last task found (`done`: `None` before the
    /// first), and takes the next task: `None` when the walk is over or
    /// stopped. The first of `done` is taken next (a walker goes down in
    /// the order it found things).
    pub fn next(&self, done: Option<Vec<T>>) -> Option<T> {
        let mut queue = crate::sync::lock(&self.queue);
        if let Some(found) = done {
            queue.1 -= 1;
            let woke = !found.is_empty();
            queue.0.extend(found.into_iter().rev());
            if woke || queue.1 == 0 {
                self.woken.notify_all();
            }
        }
        loop {
            if self.stopped.load(Ordering::Relaxed) {
                self.woken.notify_all();
                return None;
            }
            if let Some(task) = queue.0.pop() {
                queue.1 += 1;
                return Some(task);
            }
            if queue.1 == 0 {
                self.woken.notify_all();
                return None;
            }
            queue = crate::sync::wait(&self.woken, queue);
        }
    }

    /// Ends the walk: every walker's next [`Tasks::next`] is `None`.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
    }
}

/// How many walkers a walk gets: one a core, at most `most`.
pub fn walkers(most: usize) -> usize {
    std::thread::available_parallelism()
        .map_or(1, |cpus| cpus.get())
        .clamp(1, most.max(1))
}

/// Runs `walk` once for each of `walkers`, each on a thread of its own
/// (the first on this one), and returns when all are done. A thread the
/// system cannot start leaves its share to the others.
pub fn share<W: Send>(walkers: &mut [W], walk: impl Fn(&mut W) + Sync) {
    let Some((first, rest)) = walkers.split_first_mut() else {
        return;
    };
    let walk = &walk;
    std::thread::scope(|scope| {
        for walker in rest {
            std::thread::Builder::new()
                .name("wicket-walk".into())
                .spawn_scoped(scope, move || walk(walker))
                .ok();
        }
        walk(first);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_names_every_entry_of_a_large_folder_once_with_its_type() {
        let dir = tempfile::tempdir().unwrap();
        // Past one read's worth of names (each 200 bytes long).
        for n in 0..400 {
            std::fs::write(dir.path().join(format!("{n:0>200}")), "").unwrap();
        }
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let fd = rustix::fs::open(
            dir.path(),
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY,
            rustix::fs::Mode::empty(),
        )
        .unwrap();
        let mut names = Vec::new();
        list(&fd, |name, kind| names.push((name.to_vec(), kind))).unwrap();
        names.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(names.len(), 401);
        names.dedup_by(|a, b| a.0 == b.0);
        assert_eq!(names.len(), 401);
        let sub = names.iter().find(|(name, _)| name == b"sub").unwrap();
        assert!(matches!(sub.1, FileType::Directory | FileType::Unknown));
    }

    /// A tree of numbers: `n`'s children are `n * 4 + 1 ..= n * 4 + 4`, below 4,000.
    fn children(n: u32) -> Vec<u32> {
        (n * 4 + 1..=n * 4 + 4)
            .filter(|child| *child < 4000)
            .collect()
    }

    #[test]
    fn walkers_sharing_a_stack_take_every_task_once() {
        let tasks = Tasks::new(vec![0u32]);
        let mut taken: Vec<Vec<u32>> = vec![Vec::new(); 4];
        share(&mut taken, |mine| {
            let mut done = None;
            while let Some(n) = tasks.next(done.take()) {
                mine.push(n);
                done = Some(children(n));
            }
        });
        let mut all: Vec<u32> = taken.concat();
        all.sort_unstable();
        assert_eq!(all, (0..4000).collect::<Vec<_>>());
    }

    #[test]
    fn a_stop_ends_the_walk_for_every_walker() {
        let tasks = Tasks::new(vec![0u32]);
        let mut taken = vec![0usize; 3];
        share(&mut taken, |count| {
            let mut done = None;
            while let Some(n) = tasks.next(done.take()) {
                *count += 1;
                if n == 50 {
                    tasks.stop();
                }
                done = Some(children(n));
            }
        });
        assert!(taken.iter().sum::<usize>() < 4000, "{taken:?}");
    }
}
