//! The seccomp filters, the last layer before the command starts: no
//! `socket(AF_UNIX)` without network (so no daemon's socket file is
//! reachable), no `io_uring`; never a mount, never `TIOCSTI`, never a
//! set-id bit ([`apply`]).

use std::collections::BTreeMap;

type Result<T> = std::result::Result<T, String>;

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
///
/// Longer than 80 lines because it is the table itself: every refused
/// syscall and its rule in one list, read top to bottom.
pub(super) fn apply(network: bool) -> Result<()> {
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
