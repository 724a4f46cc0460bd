//! The jail's own file tree, built in a mount namespace by stage 2 before
//! the command starts (after it, Landlock and seccomp):
//!
//! - [`build`]: a mount namespace with the root read-only, the workspace
//!   writable but for `.git` and `.wicket`, private tmpfs at `/tmp`,
//!   `/var/tmp`, `/run` and `/dev/shm`, a minimal `/dev`, a fresh `/proc`,
//!   and `$WICKET_HOME` and the `deny_read` paths masked wherever they lie;
//! - [`try_build`]: the steps of [`build`] a kernel may refuse, tried by
//!   the probe;
//! - [`protect`]: the same masks' little sibling for an unconfined command
//!   (`mode = "off"`, in stage 1): `$WICKET_HOME` read-only, locked.
//!
//! The order of operations follows bubblewrap's: everything the new tree is
//! built from is opened first, then covered.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::mount::MsFlags;
use rustix::fs::{Mode, OFlags, StatVfsMountFlags};

use super::contract::{Overlay, Policy};
use super::limits::ResourceLimits;
use super::namespaces::{Namespaces, enter_namespaces};
use crate::guard::Found;

/// The folders that get a private, empty tmpfs.
const PRIVATE_TMPFS: [&str; 3] = ["/tmp", "/var/tmp", "/run"];

/// The devices a command finds in its `/dev`.
pub(super) const DEVICES: [&str; 5] = ["null", "zero", "full", "random", "urandom"];

type Result<T> = std::result::Result<T, String>;

fn mount(
    source: Option<&Path>,
    target: &Path,
    fstype: Option<&str>,
    flags: MsFlags,
    data: Option<&str>,
) -> Result<()> {
    nix::mount::mount(source, target, fstype, flags, data)
        .map_err(|error| format!("mount on {}: {error}", target.display()))
}

/// An `O_PATH` descriptor: what a bind is made from, held before anything covers it.
fn hold(path: &Path) -> Result<OwnedFd> {
    rustix::fs::open(path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty())
        .map_err(|error| format!("opening {}: {error}", path.display()))
}

fn fd_path(fd: &OwnedFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// The flags a remount must keep: a mount from the parent namespace has them locked.
fn kept_flags(path: &Path) -> Result<MsFlags> {
    let found = rustix::fs::statvfs(path)
        .map_err(|error| format!("statvfs {}: {error}", path.display()))?
        .f_flag;
    let pairs = [
        (StatVfsMountFlags::NOSUID, MsFlags::MS_NOSUID),
        (StatVfsMountFlags::NODEV, MsFlags::MS_NODEV),
        (StatVfsMountFlags::NOEXEC, MsFlags::MS_NOEXEC),
        (StatVfsMountFlags::NOATIME, MsFlags::MS_NOATIME),
        (StatVfsMountFlags::NODIRATIME, MsFlags::MS_NODIRATIME),
        (StatVfsMountFlags::RELATIME, MsFlags::MS_RELATIME),
    ];
    Ok(pairs
        .iter()
        .filter(|(statvfs, _)| found.contains(*statvfs))
        .fold(MsFlags::empty(), |flags, (_, ms)| flags | *ms))
}

/// Makes the mount at `path` read-only, or writable, keeping its other flags.
fn remount(path: &Path, writable: bool) -> Result<()> {
    let mut flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | kept_flags(path)?;
    if !writable {
        flags |= MsFlags::MS_RDONLY;
    }
    mount(None, path, None, flags, None)
}

/// Binds `source` (a held descriptor, or a path) over `target`, creating
/// `target` first when it is missing (it then lies in one of the jail's
/// own tmpfs), and sets it writable or read-only.
fn bind(source: &Path, target: &Path, writable: bool) -> Result<()> {
    mount_point(source, target)?;
    mount(
        Some(source),
        target,
        None,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None,
    )?;
    remount(target, writable)
}

/// Makes `target` when it is missing (it then lies in one of the jail's own
/// tmpfs), a folder or a file as `source` is.
fn mount_point(source: &Path, target: &Path) -> Result<()> {
    if std::fs::symlink_metadata(target).is_ok() {
        return Ok(());
    }
    let directory = std::fs::metadata(source)
        .map(|m| m.is_dir())
        .unwrap_or(true);
    let made = if directory {
        std::fs::create_dir_all(target)
    } else {
        target
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::File::create(target).map(drop))
    };
    made.map_err(|error| format!("making {} to bind over: {error}", target.display()))
}

/// The mount points of this namespace, parents first.
fn mount_points() -> Result<Vec<PathBuf>> {
    let text = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|error| format!("reading /proc/self/mountinfo: {error}"))?;
    Ok(text
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(|point| PathBuf::from(unescape(point)))
        .collect())
}

/// Mountinfo writes a space, tab, newline and backslash as `\ooo`.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let octal = bytes.get(index + 1..index + 4).and_then(|digits| {
            let text = std::str::from_utf8(digits).ok()?;
            u8::from_str_radix(text, 8).ok()
        });
        match (bytes[index], octal) {
            (b'\\', Some(byte)) => {
                out.push(byte);
                index += 4;
            }
            (byte, _) => {
                out.push(byte);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Nothing mounted in this namespace propagates back to the host's.
fn no_propagation() -> Result<()> {
    mount(
        None,
        Path::new("/"),
        None,
        MsFlags::MS_REC | MsFlags::MS_SLAVE,
        None,
    )
}

/// Every mount read-only. The root must take it; a mount below that will
/// not (a hidden or special one) is still under Landlock's write rules.
fn read_only_everything() -> Result<()> {
    for point in mount_points()? {
        let done = remount(&point, false);
        if point == Path::new("/") {
            done?;
        }
    }
    Ok(())
}

fn tmpfs(target: &Path, options: &str) -> Result<()> {
    mount(
        Some(Path::new("tmpfs")),
        target,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some(options),
    )
}

/// Each private tmpfs's share of `max_memory_mb`, as eighths: `/tmp` half,
/// `/dev/shm` a quarter, `/var/tmp` and `/run` an eighth each, so that
/// together they hold no more than the memory limit (a tmpfs without a size
/// takes half the machine's, each: where no cgroup counts them, four of
/// them reach twice its memory).
const TMPFS_EIGHTHS: [(&str, u64); 4] =
    [("/tmp", 4), ("/dev/shm", 2), ("/var/tmp", 1), ("/run", 1)];

/// The mount options of the private tmpfs at `folder`: its size and inode
/// count from `limits` (one inode a 4 KiB, at least 1,024).
fn tmpfs_options(folder: &str, limits: &ResourceLimits) -> String {
    let eighths = TMPFS_EIGHTHS
        .iter()
        .find(|(name, _)| *name == folder)
        .map_or(1, |(_, eighths)| *eighths);
    let bytes = limits
        .max_memory_mb
        .saturating_mul(1024 * 1024)
        .saturating_mul(eighths)
        / 8;
    let bytes = bytes.max(1024 * 1024);
    let inodes = (bytes / 4096).max(1024);
    format!("mode=1777,size={bytes},nr_inodes={inodes}")
}

/// A real folder (not a link to one, which another entry covers).
fn is_real_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_dir())
}

/// A `/dev` with only the harmless devices: no tty, no pts, no disk.
fn minimal_dev(devices: &[(&str, OwnedFd)], limits: &ResourceLimits) -> Result<()> {
    let dev = Path::new("/dev");
    mount(
        Some(Path::new("tmpfs")),
        dev,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
        Some("mode=0755,size=64k"),
    )?;
    for (name, fd) in devices {
        bind_device(fd, &dev.join(name))?;
    }
    let links = [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ];
    for (name, target) in links {
        std::os::unix::fs::symlink(target, dev.join(name))
            .map_err(|error| format!("making /dev/{name}: {error}"))?;
    }
    let shm = dev.join("shm");
    std::fs::create_dir(&shm).map_err(|error| format!("making /dev/shm: {error}"))?;
    tmpfs(&shm, &tmpfs_options("/dev/shm", limits))
}

/// Binds one of the host's devices into the jail's `/dev`: read-only,
/// `nosuid` and `noexec`, so that it reads and writes as a device does but
/// its inode (the host's own `/dev/null`) cannot be changed: no `chmod`,
/// no `chown`, no `utime`.
fn bind_device(fd: &OwnedFd, target: &Path) -> Result<()> {
    std::fs::File::create(target)
        .map_err(|error| format!("making {} to bind over: {error}", target.display()))?;
    mount(Some(&fd_path(fd)), target, None, MsFlags::MS_BIND, None)?;
    let flags = MsFlags::MS_BIND
        | MsFlags::MS_REMOUNT
        | MsFlags::MS_RDONLY
        | MsFlags::MS_NOSUID
        | MsFlags::MS_NOEXEC
        | (kept_flags(target)? - MsFlags::MS_NODEV);
    mount(None, target, None, flags, None)
}

/// Every `.wicket` read-only, and unless the call may write git, every
/// `.git` entry at any depth, where each points, every other git folder and
/// each repository's hooks folder and included config (see
/// [`crate::guard`]); and for every command, each folder the scan could
/// not list, which may hold any of them. What was found is kept, so that
/// what the command makes of them is undone after it
/// ([`crate::guard::Found::settle`]).
fn protect_workspace_folders(policy: &Policy, kept: &[u8]) -> Result<Found> {
    let found = crate::guard::scan_kept(&policy.workspace, kept);
    let unscanned: Vec<PathBuf> = found
        .unscanned
        .iter()
        .map(|(path, _)| policy.workspace.join(path))
        .collect();
    let mut protected: Vec<&PathBuf> = found.wicket_protected.iter().collect();
    protected.extend(&unscanned);
    if !policy.write_git {
        protected.extend(&found.git_protected);
    }
    for path in protected {
        // A link is protected where it leads; a missing one has nothing to protect.
        let Ok(real) = std::fs::canonicalize(path) else {
            continue;
        };
        bind(&real, &real, false)?;
    }
    Ok(found)
}

/// The paths as they really are (a link judged where it leads); those that do not exist drop out.
pub(super) fn canonical(paths: &[PathBuf]) -> Vec<PathBuf> {
    paths
        .iter()
        .filter_map(|path| std::fs::canonicalize(path).ok())
        .collect()
}

/// Covers a path nobody in the jail may see: an empty read-only tmpfs over
/// a folder, `/dev/null` over a file. A link is covered where it leads (the
/// caller lists that place too), never through the link.
fn mask(path: &Path, null: &OwnedFd) -> Result<()> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    if meta.is_symlink() {
        return Ok(());
    }
    if meta.is_dir() {
        mount(
            Some(Path::new("tmpfs")),
            path,
            Some("tmpfs"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC | MsFlags::MS_RDONLY,
            Some("mode=0000,size=4k"),
        )
    } else {
        bind(&fd_path(null), path, false)
    }
}

/// Every home folder as an empty one (`Policy::hidden`): a small tmpfs over
/// each, in which the mount points of what is bound back after it (the
/// toolchains, a call's `read`, the workspace, `extra_write`) are made
/// while it is writable; then it is made read-only, before anything is
/// bound into it.
fn hide_homes<'a>(
    hidden: &[PathBuf],
    bound_back: impl Iterator<Item = (&'a Path, &'a OwnedFd)>,
) -> Result<()> {
    let real: Vec<&PathBuf> = hidden.iter().filter(|home| is_real_dir(home)).collect();
    // A home inside another (`HOME=~/.cache/ci-home`) is hidden with it:
    // once the outer one is a tmpfs, the inner one's path is not there to
    // mount on. What is bound back of it gets its mount point all the same.
    let homes: Vec<&PathBuf> = real
        .iter()
        .filter(|home| {
            !real
                .iter()
                .any(|outer| outer != *home && home.starts_with(outer))
        })
        .copied()
        .collect();
    for home in &homes {
        mount(
            Some(Path::new("tmpfs")),
            home,
            Some("tmpfs"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
            Some("mode=0755,size=1m,nr_inodes=4096"),
        )?;
    }
    for (target, fd) in bound_back {
        if homes.iter().any(|home| target.starts_with(home)) {
            mount_point(&fd_path(fd), target)?;
        }
    }
    for home in &homes {
        remount(home, false)?;
    }
    Ok(())
}

/// Where the command starts, recorded before the tree changes under it
/// (not `spawn::Cwd`, which says where a command is to start).
struct RecordedCwd {
    path: PathBuf,
    device: u64,
    inode: u64,
}

impl RecordedCwd {
    fn record() -> Result<RecordedCwd> {
        let path = std::fs::read_link("/proc/self/cwd")
            .map_err(|error| format!("reading the command's folder: {error}"))?;
        let stat = rustix::fs::stat(".").map_err(|error| format!("stat of the folder: {error}"))?;
        Ok(RecordedCwd {
            path,
            device: stat.st_dev,
            inode: stat.st_ino,
        })
    }

    /// Enters the same folder in the new tree (the old one is read-only
    /// underneath it), and checks it is the same folder. Inside a
    /// preview's overlay (`overlaid`: the workspace) a folder is the
    /// overlay's, with its own device and inode: the overlay, built from
    /// the held workspace, is what makes it the same.
    fn restore(&self, overlaid: Option<&Path>) -> Result<()> {
        std::env::set_current_dir(&self.path)
            .map_err(|error| format!("entering {} in the jail: {error}", self.path.display()))?;
        if overlaid.is_some_and(|workspace| self.path.starts_with(workspace)) {
            return Ok(());
        }
        let stat = rustix::fs::stat(".").map_err(|error| format!("stat of the folder: {error}"))?;
        if (stat.st_dev, stat.st_ino) != (self.device, self.inode) {
            return Err(format!(
                "{} is another folder inside the jail; the command did not start",
                self.path.display()
            ));
        }
        Ok(())
    }
}

/// What [`build`] made, for the Landlock rules after it.
#[derive(Debug, Default)]
pub(super) struct Built {
    /// The private tmpfs the command may write.
    pub(super) private: Vec<PathBuf>,
    /// The guarded entries found in the workspace before the command.
    pub(super) guarded: Found,
}

/// Builds the jail's file tree in a new mount namespace. Runs in stage 2
/// (PID 1 of the command's PID namespace, so the new `/proc` is the
/// command's), with `CAP_SYS_ADMIN` in its user namespace. `kept` is what
/// the last scan of the workspace kept ([`crate::guard::scan_kept`]).
pub(super) fn build(policy: &Policy, deny: &[PathBuf], kept: &[u8]) -> Result<Built> {
    let cwd = RecordedCwd::record()?;
    nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNS)
        .map_err(|error| format!("unshare of the mount namespace: {error}"))?;
    no_propagation()?;
    let mut workspace = hold(&policy.workspace)?;
    if let Some(overlay) = &policy.overlay {
        // Over the workspace before anything is covered (the upper layer
        // lies under $WICKET_HOME, masked below); from here on the
        // workspace is the overlay, bound back as the workspace would be.
        overlay_workspace(&workspace, overlay, &policy.workspace)?;
        workspace = hold(&policy.workspace)?;
    }
    let held = |paths: &[PathBuf]| -> Vec<(PathBuf, OwnedFd)> {
        paths
            .iter()
            .filter_map(|path| Some((path.clone(), hold(path).ok()?)))
            .collect()
    };
    let writable = held(&policy.writable);
    let visible = held(&policy.visible);
    let devices: Vec<(&str, OwnedFd)> = DEVICES
        .iter()
        .map(|name| Ok((*name, hold(&Path::new("/dev").join(name))?)))
        .collect::<Result<_>>()?;
    let null = hold(Path::new("/dev/null"))?;
    read_only_everything()?;
    let mut built = Built::default();
    for name in PRIVATE_TMPFS {
        let folder = Path::new(name);
        if is_real_dir(folder) {
            tmpfs(folder, &tmpfs_options(name, &policy.limits))?;
            built.private.push(folder.to_path_buf());
        }
    }
    minimal_dev(&devices, &policy.limits)?;
    built.private.push(PathBuf::from("/dev/shm"));
    let bound_back = visible
        .iter()
        .chain(&writable)
        .map(|(path, fd)| (path.as_path(), fd))
        .chain([(policy.workspace.as_path(), &workspace)]);
    hide_homes(&policy.hidden, bound_back)?;
    for (path, fd) in &visible {
        bind(&fd_path(fd), path, false)?;
    }
    bind(&fd_path(&workspace), &policy.workspace, !policy.read_only)?;
    for (path, fd) in &writable {
        bind(&fd_path(fd), path, true)?;
    }
    built.guarded = protect_workspace_folders(policy, kept)?;
    for path in deny {
        mask(path, &null)?;
    }
    fresh_proc()?;
    cwd.restore(policy.overlay.as_ref().map(|_| policy.workspace.as_path()))?;
    Ok(built)
}

/// Mounts an overlay at `target`: `lower` (the workspace, held) below,
/// the preview's folders above. In a user namespace the overlay keeps its
/// own marks in `user.` attributes (`userxattr`).
fn overlay_workspace(lower: &OwnedFd, overlay: &Overlay, target: &Path) -> Result<()> {
    let upper = hold(&overlay.upper)?;
    let work = hold(&overlay.work)?;
    overlay_mount(&fd_path(lower), &fd_path(&upper), &fd_path(&work), target)
}

fn overlay_mount(lower: &Path, upper: &Path, work: &Path, target: &Path) -> Result<()> {
    let data = format!(
        "lowerdir={},upperdir={},workdir={},userxattr",
        lower.display(),
        upper.display(),
        work.display()
    );
    mount(
        Some(Path::new("overlay")),
        target,
        Some("overlay"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some(&data),
    )
    .map_err(|error| format!("the preview's overlay: {error}"))
}

/// Whether an overlay can be mounted here (in the probe's namespace, after
/// [`try_build`]): one over a folder of its `/tmp`, written through.
pub(super) fn try_overlay() -> Result<()> {
    let base = Path::new("/tmp/wicket-probe-overlay");
    let folder = |name: &str| {
        let path = base.join(name);
        std::fs::create_dir_all(&path)
            .map_err(|error| format!("making {}: {error}", path.display()))?;
        Ok::<PathBuf, String>(path)
    };
    let (lower, upper, work, merged) = (
        folder("lower")?,
        folder("upper")?,
        folder("work")?,
        folder("merged")?,
    );
    std::fs::write(lower.join("gone"), "x").map_err(|error| format!("writing: {error}"))?;
    overlay_mount(&lower, &upper, &work, &merged)?;
    std::fs::write(merged.join("made"), "x")
        .and_then(|()| std::fs::remove_file(merged.join("gone")))
        .map_err(|error| format!("writing through the overlay: {error}"))
}

/// What the probe tries, in a mount namespace of its own that it then
/// leaves: the steps of [`build`] that a kernel or a container might refuse
/// (the root read-only with its locked flags kept, a tmpfs, a fresh
/// `/proc`). Where one fails, commands get no mount namespace and the card
/// says so, rather than every command failing to start.
pub(super) fn try_build() -> Result<()> {
    nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNS)
        .map_err(|error| format!("unshare of the mount namespace: {error}"))?;
    no_propagation()?;
    remount(Path::new("/"), false)?;
    tmpfs(Path::new("/tmp"), "mode=1777")?;
    fresh_proc()
}

/// A `/proc` of this PID namespace: only its own processes, its own network.
fn fresh_proc() -> Result<()> {
    mount(
        Some(Path::new("proc")),
        Path::new("/proc"),
        Some("proc"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        None,
    )
}

/// For a command with no sandbox (`mode = "off"`, or a kernel that cannot
/// confine): `protected` read-only and `masked` empty, in a mount
/// namespace of its own. The user namespace is made twice, so the second
/// copies the binds as locked mounts that even a command with every
/// capability inside cannot undo.
pub(super) fn protect(protected: &[PathBuf], masked: &[PathBuf]) -> Result<()> {
    enter_namespaces(Namespaces::Mount)?;
    no_propagation()?;
    // Held in this mount namespace: a bind's source must be in the one it is made in.
    let null = hold(Path::new("/dev/null"))?;
    for path in protected {
        let Ok(real) = std::fs::canonicalize(path) else {
            continue;
        };
        bind(&real, &real, false)?;
    }
    for path in canonical(masked) {
        mask(&path, &null)?;
    }
    enter_namespaces(Namespaces::Mount)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_escapes_are_read_back() {
        assert_eq!(unescape(r"/home/a\040b"), "/home/a b");
        assert_eq!(unescape(r"/x\134y"), r"/x\y");
        assert_eq!(unescape(r"/plain"), "/plain");
        assert_eq!(unescape(r"/trailing\04"), r"/trailing\04");
    }
}
