//! The jail's layers beside Landlock, each applied by a launcher stage
//! ([`crate::sandbox`]) before the command starts:
//!
//! - [`build`]: a mount namespace with the root read-only, the workspace
//!   writable but for `.git` and `.wicket`, private tmpfs at `/tmp`,
//!   `/var/tmp`, `/run` and `/dev/shm`, a minimal `/dev`, a fresh `/proc`,
//!   and `$WICKET_HOME` and the `deny_read` paths masked wherever they lie;
//! - [`protect`]: the same masks' little sibling for an unconfined command
//!   (`mode = "off"`): `$WICKET_HOME` read-only, locked;
//! - [`seccomp`]: no `socket(AF_UNIX)` (so no daemon's socket file is
//!   reachable) and no `io_uring` without network; never a mount, never
//!   `TIOCSTI`;
//! - [`drop_capabilities`]: what stage 2 needed to mount, gone before the
//!   command starts.
//!
//! The order of operations follows bubblewrap's: everything the new tree is
//! built from is opened first, then covered.

use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::mount::MsFlags;
use rustix::fs::{Mode, OFlags, StatVfsMountFlags};

use crate::sandbox::Policy;

/// The folders that get a private, empty tmpfs.
pub const PRIVATE_TMPFS: [&str; 3] = ["/tmp", "/var/tmp", "/run"];

/// The devices a command finds in its `/dev`.
pub const DEVICES: [&str; 5] = ["null", "zero", "full", "random", "urandom"];

/// The folders inside the workspace a command may not write unless asked.
const GIT: &str = ".git";
const WICKET: &str = ".wicket";

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
    if std::fs::symlink_metadata(target).is_err() {
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
        made.map_err(|error| format!("making {} to bind over: {error}", target.display()))?;
    }
    mount(
        Some(source),
        target,
        None,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None,
    )?;
    remount(target, writable)
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

/// A real folder (not a link to one, which another entry covers).
fn is_real_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_dir())
}

/// A `/dev` with only the harmless devices: no tty, no pts, no disk.
fn minimal_dev(devices: &[(&str, OwnedFd)]) -> Result<()> {
    let dev = Path::new("/dev");
    mount(
        Some(Path::new("tmpfs")),
        dev,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
        Some("mode=0755,size=64k"),
    )?;
    for (name, fd) in devices {
        bind(&fd_path(fd), &dev.join(name), true)?;
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
    tmpfs(&shm, "mode=1777")
}

/// The git folder a `.git` file points to (`gitdir: PATH`), for worktrees and submodules.
fn git_file_target(workspace: &Path, file: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(file).ok()?;
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    std::fs::canonicalize(workspace.join(target)).ok()
}

/// `.git` (and where a `.git` file points) and `.wicket`, read-only.
fn protect_workspace_folders(policy: &Policy) -> Result<()> {
    let mut protected = vec![policy.workspace.join(WICKET)];
    if !policy.write_git {
        let git = policy.workspace.join(GIT);
        if std::fs::symlink_metadata(&git).is_ok_and(|meta| meta.is_file()) {
            protected.extend(git_file_target(&policy.workspace, &git));
        }
        protected.push(git);
    }
    for path in protected {
        // A link is protected where it leads; a missing folder has nothing to protect.
        let Ok(real) = std::fs::canonicalize(&path) else {
            continue;
        };
        bind(&real, &real, false)?;
    }
    Ok(())
}

/// Covers a path nobody in the jail may see: an empty read-only tmpfs over
/// a folder, `/dev/null` over a file.
fn mask(path: &Path, null: &OwnedFd) -> Result<()> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
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

/// Where the command starts, recorded before the tree changes under it.
struct Cwd {
    path: PathBuf,
    device: u64,
    inode: u64,
}

impl Cwd {
    fn record() -> Result<Cwd> {
        let path = std::fs::read_link("/proc/self/cwd")
            .map_err(|error| format!("reading the command's folder: {error}"))?;
        let stat = rustix::fs::stat(".").map_err(|error| format!("stat of the folder: {error}"))?;
        Ok(Cwd {
            path,
            device: stat.st_dev,
            inode: stat.st_ino,
        })
    }

    /// Enters the same folder in the new tree (the old one is read-only
    /// underneath it), and checks it is the same folder.
    fn restore(&self) -> Result<()> {
        std::env::set_current_dir(&self.path)
            .map_err(|error| format!("entering {} in the jail: {error}", self.path.display()))?;
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
pub struct Built {
    /// The private tmpfs the command may write.
    pub private: Vec<PathBuf>,
}

/// Builds the jail's file tree in a new mount namespace. Runs in stage 2
/// (PID 1 of the command's PID namespace, so the new `/proc` is the
/// command's), with `CAP_SYS_ADMIN` in its user namespace.
pub fn build(policy: &Policy, deny: &[PathBuf]) -> Result<Built> {
    let cwd = Cwd::record()?;
    nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNS)
        .map_err(|error| format!("unshare of the mount namespace: {error}"))?;
    no_propagation()?;
    let workspace = hold(&policy.workspace)?;
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
    for folder in PRIVATE_TMPFS.iter().map(Path::new) {
        if is_real_dir(folder) {
            tmpfs(folder, "mode=1777")?;
            built.private.push(folder.to_path_buf());
        }
    }
    minimal_dev(&devices)?;
    built.private.push(PathBuf::from("/dev/shm"));
    for (path, fd) in &visible {
        bind(&fd_path(fd), path, false)?;
    }
    bind(&fd_path(&workspace), &policy.workspace, !policy.read_only)?;
    for (path, fd) in &writable {
        bind(&fd_path(fd), path, true)?;
    }
    protect_workspace_folders(policy)?;
    for path in deny {
        mask(path, &null)?;
    }
    fresh_proc()?;
    cwd.restore()?;
    Ok(built)
}

/// What the probe tries, in a mount namespace of its own that it then
/// leaves: the steps of [`build`] that a kernel or a container might refuse
/// (the root read-only with its locked flags kept, a tmpfs, a fresh
/// `/proc`). Where one fails, commands get no mount namespace and the card
/// says so, rather than every command failing to start.
pub fn try_build() -> Result<()> {
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
/// confine): `protected` read-only, in a mount namespace of its own. The
/// user namespace is made twice, so the second copies the binds as locked
/// mounts that even a command with every capability inside cannot undo.
pub fn protect(protected: &[PathBuf]) -> Result<()> {
    crate::sandbox::enter_namespaces(Namespaces::Mount)?;
    no_propagation()?;
    for path in protected {
        let Ok(real) = std::fs::canonicalize(path) else {
            continue;
        };
        bind(&real, &real, false)?;
    }
    crate::sandbox::enter_namespaces(Namespaces::Mount)
}

/// Which namespaces [`crate::sandbox::enter_namespaces`] makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Namespaces {
    /// User and mount: [`protect`].
    Mount,
    /// User and PID, and network unless the command has it: the sandbox.
    Sandbox {
        /// Keep the host's network.
        network: bool,
    },
}

/// Gives stage 2 what it needs across its `execve`, as ambient
/// capabilities in the new user namespace: `CAP_SYS_ADMIN` to mount, and
/// `CAP_SETPCAP` to empty the bounding set afterwards (a uid other than 0
/// keeps nothing else through an `execve`). [`drop_capabilities`] takes
/// both away again.
pub fn pass_mount_capability() -> Result<()> {
    use rustix::thread::CapabilitySet;
    let passed = [CapabilitySet::SYS_ADMIN, CapabilitySet::SETPCAP];
    let mut sets = rustix::thread::capabilities(None)
        .map_err(|error| format!("reading capabilities: {error}"))?;
    for capability in passed {
        sets.inheritable |= capability;
    }
    rustix::thread::set_capabilities(None, sets)
        .map_err(|error| format!("setting capabilities: {error}"))?;
    for capability in passed {
        rustix::thread::configure_capability_in_ambient_set(capability, true)
            .map_err(|error| format!("PR_CAP_AMBIENT: {error}"))?;
    }
    Ok(())
}

/// No capability left, in any set, for this process or what it starts
/// (the bounding set too, so not even a root inside gets one back).
pub fn drop_capabilities() -> Result<()> {
    use rustix::thread::{CapabilitySet, CapabilitySets};
    rustix::thread::clear_ambient_capability_set()
        .map_err(|error| format!("clearing the ambient capabilities: {error}"))?;
    for bit in 0..64u32 {
        let Some(capability) = CapabilitySet::from_bits(1u64 << bit) else {
            continue;
        };
        match rustix::thread::remove_capability_from_bounding_set(capability) {
            Ok(()) => {}
            // Past the kernel's last capability: nothing more to drop.
            Err(rustix::io::Errno::INVAL) => break,
            Err(error) => {
                return Err(format!(
                    "dropping {capability:?} from the bounding set: {error}"
                ));
            }
        }
    }
    rustix::thread::set_capabilities(
        None,
        CapabilitySets {
            effective: CapabilitySet::empty(),
            permitted: CapabilitySet::empty(),
            inheritable: CapabilitySet::empty(),
        },
    )
    .map_err(|error| format!("dropping capabilities: {error}"))
}

/// The x32 ABI's syscall numbers are the native ones with this bit, under
/// the same audit arch: a filter that names only the native number would
/// let the x32 one through.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: i64 = 0x4000_0000;

/// The seccomp filter: mounts and `TIOCSTI` always refused; without
/// network, `socket(AF_UNIX)` and `io_uring` too (`socketpair` stays, so
/// programs that talk to their own children still work).
pub fn seccomp(network: bool) -> Result<()> {
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };
    let error = |error: seccompiler::Error| format!("seccomp: {error}");
    let backend = |error: seccompiler::BackendError| format!("seccomp: {error}");
    let equal = |arg: u8, value: u64| -> Result<Vec<SeccompRule>> {
        let condition =
            SeccompCondition::new(arg, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, value)
                .map_err(backend)?;
        Ok(vec![SeccompRule::new(vec![condition]).map_err(backend)?])
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for number in [
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_move_mount,
        libc::SYS_open_tree,
        libc::SYS_fsopen,
        libc::SYS_fsmount,
        libc::SYS_fsconfig,
        libc::SYS_fspick,
        libc::SYS_mount_setattr,
    ] {
        rules.insert(number, Vec::new());
    }
    // TIOCSTI is a c_ulong on glibc and a c_int on musl.
    #[allow(clippy::unnecessary_cast)]
    let tiocsti = libc::TIOCSTI as u64;
    rules.insert(libc::SYS_ioctl, equal(1, tiocsti)?);
    if !network {
        rules.insert(libc::SYS_socket, equal(0, libc::AF_UNIX as u64)?);
        for number in [
            libc::SYS_io_uring_setup,
            libc::SYS_io_uring_enter,
            libc::SYS_io_uring_register,
        ] {
            rules.insert(number, Vec::new());
        }
    }
    #[cfg(target_arch = "x86_64")]
    {
        let x32: Vec<(i64, Vec<SeccompRule>)> = rules
            .iter()
            .map(|(number, rule)| (number | X32_SYSCALL_BIT, rule.clone()))
            .collect();
        rules.extend(x32);
    }
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(backend)?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(backend)?;
    let program: BpfProgram = filter.try_into().map_err(backend)?;
    seccompiler::apply_filter(&program).map_err(error)
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
