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

use crate::guard::Found;
use crate::launch::Policy;
use crate::limits::ResourceLimits;

/// The folders that get a private, empty tmpfs.
pub const PRIVATE_TMPFS: [&str; 3] = ["/tmp", "/var/tmp", "/run"];

/// The devices a command finds in its `/dev`.
pub const DEVICES: [&str; 5] = ["null", "zero", "full", "random", "urandom"];

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

/// Each private tmpfs's share of `max_memory_mb`, as eighths: `/tmp` half,
/// `/dev/shm` a quarter, `/var/tmp` and `/run` an eighth each, so that
/// together they hold no more than the memory limit (a tmpfs without a size
/// takes half the machine's, each: where no cgroup counts them, four of
/// them reach twice its memory).
pub const TMPFS_EIGHTHS: [(&str, u64); 4] =
    [("/tmp", 4), ("/dev/shm", 2), ("/var/tmp", 1), ("/run", 1)];

/// The mount options of the private tmpfs at `folder`: its size and inode
/// count from `limits` (one inode a 4 KiB, at least 1,024).
pub fn tmpfs_options(folder: &str, limits: &ResourceLimits) -> String {
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
/// [`crate::guard`]). What was found is kept, so that what the command
/// makes of them is undone after it ([`crate::guard::Found::settle`]).
fn protect_workspace_folders(policy: &Policy) -> Result<Found> {
    let found = crate::guard::scan(&policy.workspace);
    let mut protected: Vec<&PathBuf> = found.wicket_protected.iter().collect();
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
    /// The guarded entries found in the workspace before the command.
    pub guarded: Found,
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
    for name in PRIVATE_TMPFS {
        let folder = Path::new(name);
        if is_real_dir(folder) {
            tmpfs(folder, &tmpfs_options(name, &policy.limits))?;
            built.private.push(folder.to_path_buf());
        }
    }
    minimal_dev(&devices, &policy.limits)?;
    built.private.push(PathBuf::from("/dev/shm"));
    for (path, fd) in &visible {
        bind(&fd_path(fd), path, false)?;
    }
    bind(&fd_path(&workspace), &policy.workspace, !policy.read_only)?;
    for (path, fd) in &writable {
        bind(&fd_path(fd), path, true)?;
    }
    built.guarded = protect_workspace_folders(policy)?;
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

/// The socket families a command may open: the internet ones (which reach
/// nothing but the jail's own loopback without network), and
/// `AF_NETLINK`, which `ip`, glibc's `getaddrinfo` (`AI_ADDRCONFIG`) and
/// Node.js's `os.networkInterfaces` use to read the jail's own interfaces
/// and routes. `AF_UNIX` only with network (a daemon's socket file is a way
/// out); `socketpair` stays, so programs that talk to their own children
/// work. Everything else (`AF_VSOCK` to a VM's host, `AF_PACKET`,
/// Bluetooth, …) is refused.
const SOCKET_FAMILIES: [i32; 3] = [libc::AF_INET, libc::AF_INET6, libc::AF_NETLINK];

/// The mode bits no file may leave the jail with.
const SET_ID_BITS: [u64; 2] = [libc::S_ISUID as u64, libc::S_ISGID as u64];

/// The seccomp filters:
/// - mounts, `TIOCSTI`, the kernel keyring (`keyctl`, `add_key`,
///   `request_key`: the person's keys, and a quota a command could fill)
///   and `io_uring` (whose operations no filter sees) always refused;
/// - sockets only of [`SOCKET_FAMILIES`] (and `AF_UNIX` with network);
/// - no setuid or setgid bit, on any file: `chmod`, `fchmod`, `fchmodat`,
///   `fchmodat2` with one in the mode, `open`/`openat`/`creat` that create
///   with one, `mkdir`/`mknod` asking for one; `openat2` (whose mode lies
///   in a struct no filter can read) says `ENOSYS`, so that programs fall
///   back to `openat`.
pub fn seccomp(network: bool) -> Result<()> {
    use seccompiler::{SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompRule};
    let backend = |error: seccompiler::BackendError| format!("seccomp: {error}");
    let condition = |arg: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value).map_err(backend)
    };
    let rule = |conditions: Vec<SeccompCondition>| SeccompRule::new(conditions).map_err(backend);
    // A mode argument with a set-id bit: one rule a bit (rules are or-ed).
    let set_id = |arg: u8| -> Result<Vec<SeccompRule>> {
        SET_ID_BITS
            .iter()
            .map(|bit| rule(vec![condition(arg, SeccompCmpOp::MaskedEq(*bit), *bit)?]))
            .collect()
    };
    // A creating open (`O_CREAT`, or `O_TMPFILE`, later linked in) with a set-id bit.
    let creating = |flags: u8, mode: u8| -> Result<Vec<SeccompRule>> {
        let mut rules = Vec::new();
        for create in [libc::O_CREAT as u64, libc::O_TMPFILE as u64] {
            for bit in SET_ID_BITS {
                rules.push(rule(vec![
                    condition(flags, SeccompCmpOp::MaskedEq(create), create)?,
                    condition(mode, SeccompCmpOp::MaskedEq(bit), bit)?,
                ])?);
            }
        }
        Ok(rules)
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
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ] {
        rules.insert(number, Vec::new());
    }
    // TIOCSTI is a c_ulong on glibc and a c_int on musl.
    #[allow(clippy::unnecessary_cast)]
    let tiocsti = libc::TIOCSTI as u64;
    rules.insert(
        libc::SYS_ioctl,
        vec![rule(vec![condition(1, SeccompCmpOp::Eq, tiocsti)?])?],
    );
    let mut families: Vec<i32> = SOCKET_FAMILIES.to_vec();
    if network {
        families.push(libc::AF_UNIX);
    }
    rules.insert(
        libc::SYS_socket,
        vec![rule(
            families
                .iter()
                .map(|family| condition(0, SeccompCmpOp::Ne, *family as u64))
                .collect::<Result<_>>()?,
        )?],
    );
    rules.insert(libc::SYS_fchmod, set_id(1)?);
    rules.insert(libc::SYS_fchmodat, set_id(2)?);
    rules.insert(libc::SYS_fchmodat2, set_id(2)?);
    rules.insert(libc::SYS_mkdirat, set_id(2)?);
    rules.insert(libc::SYS_mknodat, set_id(2)?);
    rules.insert(libc::SYS_openat, creating(2, 3)?);
    // The older calls, which only some architectures still have.
    #[cfg(target_arch = "x86_64")]
    {
        rules.insert(libc::SYS_chmod, set_id(1)?);
        rules.insert(libc::SYS_creat, set_id(1)?);
        rules.insert(libc::SYS_mkdir, set_id(1)?);
        rules.insert(libc::SYS_mknod, set_id(1)?);
        rules.insert(libc::SYS_open, creating(1, 2)?);
    }
    install(rules, libc::EPERM)?;
    let mut unknown: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    unknown.insert(libc::SYS_openat2, Vec::new());
    install(unknown, libc::ENOSYS)
}

/// Installs one filter: the syscalls of `rules` fail with `errno`.
fn install(mut rules: BTreeMap<i64, Vec<seccompiler::SeccompRule>>, errno: i32) -> Result<()> {
    use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, TargetArch};
    let backend = |error: seccompiler::BackendError| format!("seccomp: {error}");
    #[cfg(target_arch = "x86_64")]
    {
        let x32: Vec<(i64, Vec<seccompiler::SeccompRule>)> = rules
            .iter()
            .map(|(number, rule)| (number | X32_SYSCALL_BIT, rule.clone()))
            .collect();
        rules.extend(x32);
    }
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(backend)?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        arch,
    )
    .map_err(backend)?;
    let program: BpfProgram = filter.try_into().map_err(backend)?;
    seccompiler::apply_filter(&program).map_err(|error| format!("seccomp: {error}"))
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
