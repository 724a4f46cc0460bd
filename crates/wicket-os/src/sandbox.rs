//! The sandbox launcher. Wicket starts its small sibling `wicket-launch`
//! (or, without one, re-executes itself) with [`crate::spawn::LAUNCH_ARG`]
//! as its first argument, and [`dispatch`],
//! called first thing in `main` (before any thread exists: `unshare` of a
//! user namespace needs a single-threaded process), runs one of:
//!
//! - **stage 1** (the launcher, Wicket's child), for every command: marks
//!   every inherited descriptor above 2 close-on-exec, starts a session of
//!   its own (`setsid`: no controlling terminal), asks to be killed when
//!   Wicket dies (`PR_SET_PDEATHSIG`) and checks Wicket is still its parent.
//!   An unconfined command is `execve`d directly, `$WICKET_HOME` read-only
//!   around it ([`mounts::protect`]). For a sandboxed one it makes the
//!   command's cgroup ([`Cgroup`]), unshares a user, PID and (without
//!   network) network namespace, passes `CAP_SYS_ADMIN` to stage 2 as an
//!   ambient capability, starts stage 2 in them, forwards TERM and mirrors
//!   stage 2's end, a signal as a signal, then removes the cgroup.
//! - **stage 2** (PID 1 of the new namespace): asks to die with stage 1 and
//!   checks stage 1 is still its parent, builds the jail's file tree in a
//!   mount namespace ([`mounts::build`]), drops every capability, sets the
//!   rlimits when there is no cgroup, applies Landlock (writes only where
//!   the mounts allow, reads anywhere but the denied paths, no TCP without
//!   network, no signals or abstract sockets out of the sandbox) and the
//!   seccomp filter ([`seccomp::apply`]), starts the argv, forwards TERM to
//!   every process of the namespace, reaps, and exits when the argv does —
//!   which kills everything the command left behind, `setsid` or not.
//! - **the probe**, which tells Wicket what this kernel can do.
//!
//! No `unsafe`, no shell, no `pre_exec`: each stage is a process of its own.

use std::collections::BTreeSet;
use std::ffi::{CString, OsString};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::OnceLock;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, LandlockStatus,
    PathBeneath, RestrictSelf, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};
use rustix::fs::{FileType, Mode, OFlags};
use rustix::process::{Pid, Signal, WaitId, WaitIdOptions, WaitOptions};
use serde::{Deserialize, Serialize};
use signal_hook::consts::signal::{SIGCHLD, SIGHUP, SIGINT, SIGQUIT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::launch::capabilities::{drop_capabilities, pass_mount_capability};
use crate::launch::contract::{
    INIT_ARG, LAUNCH_ARG, Launch, PROBE_ARG, PROBE_MOUNTS_ARG, Policy, SIGNAL_NAME, fail, launcher,
    parse,
};
use crate::launch::mounts;
use crate::launch::namespaces::{Namespaces, enter_namespaces};
use crate::launch::seccomp;
use crate::limits::Cgroup;

/// The Landlock ABI Wicket's rules are written for; older kernels get the
/// part they support (best effort), and the card says what is missing.
const LANDLOCK_ABI: ABI = ABI::V7;

/// What this kernel (and process) can confine a command with.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Availability {
    /// The `wicket` binary installed itself as the launcher.
    #[serde(default)]
    pub launcher: bool,
    /// The Landlock ABI, if Landlock is enabled.
    pub landlock_abi: Option<u32>,
    /// User, PID and network namespaces can be made.
    pub namespaces: bool,
    /// A mount namespace can be built in them (tmpfs, binds, a fresh `/proc`).
    #[serde(default)]
    pub mounts: bool,
    /// The kernel filters system calls (seccomp).
    #[serde(default)]
    pub seccomp: bool,
    /// A cgroup can be made for each command.
    #[serde(default)]
    pub cgroup: bool,
    /// Wicket runs as root (rlimits cannot hold root to a process count).
    #[serde(default)]
    pub root: bool,
}

impl Availability {
    /// Why a command cannot be confined, if it cannot.
    pub fn missing(&self) -> Option<String> {
        if !self.launcher {
            return Some("this process has no sandbox launcher".into());
        }
        match self.landlock_abi {
            None | Some(0) => {
                Some("this kernel has no Landlock, so file access cannot be confined".into())
            }
            Some(_) => None,
        }
    }

    /// Whether a sandboxed command gets the jail's own file tree (a mount
    /// namespace, built inside its user namespace).
    pub fn jail_tree(&self) -> bool {
        self.namespaces && self.mounts
    }

    /// Whether a sandboxed command's limits are held by a cgroup (made for
    /// its namespaces), not by rlimits.
    pub fn cgroup_limits(&self) -> bool {
        self.namespaces && self.cgroup
    }

    /// What the sandbox does not cover here, in words, if anything.
    pub fn note(&self) -> Option<String> {
        let mut gaps = Vec::new();
        if !self.namespaces {
            gaps.push("no PID or network namespace: processes a command leaves in the background may outlive it, and UDP is not blocked");
        }
        if self.landlock_abi.is_some_and(|abi| abi < 4) {
            gaps.push("Landlock before ABI 4 cannot block TCP");
        }
        if self.namespaces && !self.mounts {
            gaps.push("no mount namespace: .git and .wicket are writable, /tmp, /dev and /proc are the host's");
        }
        if !self.seccomp {
            gaps.push("no seccomp: a UNIX socket file outside the workspace can be reached");
        }
        if !self.cgroup && self.root {
            gaps.push("no process limit: running as root without a cgroup");
        }
        (!gaps.is_empty()).then(|| gaps.join("; "))
    }
}

/// What this process can confine commands with, probed once (by starting
/// the launcher in probe mode: namespaces cannot be tried in a process
/// with threads).
pub fn availability() -> &'static Availability {
    static PROBED: OnceLock<Availability> = OnceLock::new();
    PROBED.get_or_init(|| {
        let Some(exe) = launcher() else {
            return Availability::default();
        };
        let output = Command::new(exe)
            .arg(PROBE_ARG)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output();
        let mut found: Availability = output
            .ok()
            .and_then(|output| serde_json::from_slice(&output.stdout).ok())
            .unwrap_or_default();
        found.launcher = true;
        found
    })
}

/// Runs a launcher stage if `args` (the process's own) ask for one, and
/// returns its exit code; `None` for an ordinary `wicket` command line.
pub fn dispatch(args: &[OsString]) -> Option<u8> {
    let stage = args.get(1)?.to_str()?;
    let rest = args.get(2..).unwrap_or_default();
    match stage {
        LAUNCH_ARG => Some(stage1(rest)),
        INIT_ARG => Some(stage2(rest)),
        PROBE_ARG => Some(probe()),
        PROBE_MOUNTS_ARG => Some(probe_mounts()),
        _ => None,
    }
}

/// `execve`s the argv; returns only on failure, with the exit code.
fn exec(argv: &[OsString]) -> u8 {
    let error = Command::new(&argv[0]).args(&argv[1..]).exec();
    eprintln!(
        "wicket: cannot start '{}': {error}",
        argv[0].to_string_lossy()
    );
    if error.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    }
}

fn stage1(args: &[OsString]) -> u8 {
    let (launch, argv) = match parse(args) {
        Ok(parsed) => parsed,
        Err(message) => return fail(message),
    };
    // Nothing Wicket inherited goes further (fds 0-2 are the command's pipes).
    close_fds::set_fds_cloexec(3, &[]);
    // A session of its own: no controlling terminal, so no /dev/tty to
    // type into and no way to get the person's one back.
    if let Err(error) = rustix::process::setsid() {
        return fail(format!("setsid: {error}"));
    }
    // Die with Wicket, even by SIGKILL; if Wicket is already gone, stop here.
    if let Err(message) = die_with_parent(launch.parent) {
        return fail(message);
    }
    let Some(policy) = launch.policy.clone() else {
        if launch.mounts
            && !launch.protect.is_empty()
            && let Err(message) = mounts::protect(&launch.protect)
        {
            return fail(message);
        }
        return exec(&argv);
    };
    if !launch.isolate {
        // Landlock alone (no namespaces here): confined files and TCP,
        // then the argv in this very process.
        if let Err(message) = apply_landlock(&policy) {
            return fail(message);
        }
        if launch.seccomp
            && let Err(message) = seccomp::apply(policy.network)
        {
            return fail(message);
        }
        return exec(&argv);
    }
    let cgroup = if launch.cgroup {
        let made = Cgroup::make(std::process::id(), &policy.limits);
        match made.and_then(|cgroup| cgroup.join().map(|()| cgroup)) {
            Ok(cgroup) => Some(cgroup),
            Err(message) => return fail(message),
        }
    } else {
        None
    };
    let ended = supervise_init(&launch, policy.network, cgroup.is_some(), &argv);
    if let Some(cgroup) = cgroup {
        cgroup.remove();
    }
    match ended {
        Ok((signalled, status)) => mirror(signalled, status),
        Err(message) => fail(message),
    }
}

/// Enters the namespaces, starts stage 2 in them, forwards signals to it,
/// and returns how it ended (the signal its command died of, if any).
fn supervise_init(
    launch: &Launch,
    network: bool,
    limited_by_cgroup: bool,
    argv: &[OsString],
) -> Result<(Option<i32>, std::io::Result<ExitStatus>), String> {
    enter_namespaces(Namespaces::Sandbox { network })?;
    if launch.mounts {
        pass_mount_capability()?;
    }
    let mut signals = Signals::new([SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGCHLD])
        .map_err(|error| format!("signal handlers: {error}"))?;
    // Stage 2 must die with this stage: it checks its parent is this pid.
    let init = Launch {
        parent: std::process::id(),
        cgroup: limited_by_cgroup,
        ..launch.clone()
    };
    let mut child = Command::new("/proc/self/exe")
        .arg(INIT_ARG)
        .arg(
            init.to_arg()
                .map_err(|error| format!("encoding the launch for the init: {error}"))?,
        )
        .arg("--")
        .args(argv)
        .spawn()
        .map_err(|error| format!("starting the namespace's init: {error}"))?;
    let pid = Pid::from_raw(child.id() as i32).ok_or("the init has no pid")?;
    for signal in signals.forever() {
        if signal != SIGCHLD {
            if let Some(signal) = Signal::from_named_raw(signal) {
                // The init may be gone already; nothing to forward to then.
                let _ = rustix::process::kill_process(pid, signal);
            }
            continue;
        }
        // Before reaping, read the signal stage 2 left in its name (an
        // init cannot die of a signal it sends itself).
        let exited = rustix::process::waitid(
            WaitId::Pid(pid),
            WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT,
        );
        if !matches!(exited, Ok(Some(_))) {
            continue;
        }
        let signalled = std::fs::read_to_string(format!("/proc/{}/comm", child.id()))
            .ok()
            .and_then(|comm| comm.trim().strip_prefix(SIGNAL_NAME)?.parse::<i32>().ok());
        return Ok((signalled, child.wait()));
    }
    Err("the signal loop ended".into())
}

/// Asks for SIGKILL when the parent dies, then checks the parent is still
/// `expected`: if it died before the request, nothing would ever come.
/// The parent is read from `/proc/self/status`, not `getppid()`, because
/// stage 2 is PID 1 of a new namespace, where `getppid()` is 0; the `/proc`
/// mount is still the outer one, so it names stage 1 by its outer pid (or
/// whoever adopted the orphan).
fn die_with_parent(expected: u32) -> Result<(), String> {
    rustix::process::set_parent_process_death_signal(Some(Signal::KILL))
        .map_err(|error| format!("PR_SET_PDEATHSIG: {error}"))?;
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|error| format!("reading /proc/self/status: {error}"))?;
    if parent_in(&status) == Some(expected) {
        Ok(())
    } else {
        Err("Wicket ended before the command could start".to_owned())
    }
}

/// The `PPid:` of a `/proc/PID/status` text.
fn parent_in(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|line| line.strip_prefix("PPid:"))
        .and_then(|pid| pid.trim().parse().ok())
}

/// Ends stage 1 the way its command ended: by the same signal, or with the same code.
fn mirror(signalled: Option<i32>, status: std::io::Result<ExitStatus>) -> u8 {
    if let Some(signal) = signalled {
        die_of(signal);
    }
    match status {
        Ok(status) => match (status.code(), status.signal()) {
            (Some(code), _) => u8::try_from(code).unwrap_or(1),
            (None, Some(signal)) => {
                die_of(signal);
                128u8.saturating_add(signal as u8)
            }
            (None, None) => 1,
        },
        Err(error) => fail(format!("waiting for the init: {error}")),
    }
}

/// Dies of `signal` (stage 1 is no init, so it can).
fn die_of(signal: i32) {
    if signal == SIGKILL_RAW {
        if let Some(me) = Pid::from_raw(std::process::id() as i32) {
            // Dying of the signal the command died of; if even KILL fails, the exit code that follows says it.
            let _ = rustix::process::kill_process(me, Signal::KILL);
        }
    } else {
        // As above: the default action of the signal, and the exit that follows if it does not end us.
        let _ = signal_hook::low_level::emulate_default_handler(signal);
    }
}

const SIGKILL_RAW: i32 = 9;

fn stage2(args: &[OsString]) -> u8 {
    let (launch, argv) = match parse(args) {
        Ok(parsed) => parsed,
        Err(message) => return fail(message),
    };
    // Handlers first: an init gets only the signals it handles (and KILL).
    let mut signals = match Signals::new([SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGCHLD]) {
        Ok(signals) => signals,
        Err(error) => return fail(format!("signal handlers: {error}")),
    };
    if let Err(message) = die_with_parent(launch.parent) {
        return fail(message);
    }
    let guarded = match &launch.policy {
        Some(policy) => match confine_init(&launch, policy) {
            Ok(guarded) => Some((policy, guarded)),
            Err(message) => return fail(message),
        },
        None => None,
    };
    let since = nanoseconds_now();
    let child = match Command::new(&argv[0]).args(&argv[1..]).spawn() {
        Ok(child) => child,
        Err(error) => {
            eprintln!(
                "wicket: cannot start '{}': {error}",
                argv[0].to_string_lossy()
            );
            return if error.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
        }
    };
    let Some(main) = Pid::from_raw(child.id() as i32) else {
        return fail("the command has no pid");
    };
    for signal in signals.forever() {
        if signal != SIGCHLD {
            if let Some(signal) = Signal::from_named_raw(signal) {
                // kill(-1): every process of the namespace but this one.
                let _ = rustix::process::kill_process_group(Pid::INIT, signal);
            }
            continue;
        }
        loop {
            match rustix::process::waitpid(None, WaitOptions::NOHANG) {
                Ok(Some((pid, status))) if pid == main => {
                    if let Some((policy, Some(found))) = &guarded {
                        settle(policy, found, since);
                    }
                    if let Some(code) = status.exit_status() {
                        return u8::try_from(code).unwrap_or(1);
                    }
                    let signal = status.terminating_signal().unwrap_or(0);
                    if let Ok(name) = CString::new(format!("{SIGNAL_NAME}{signal}")) {
                        // Only a name: stage 1 then reads 128+N, less exact.
                        let _ = rustix::thread::set_name(&name);
                    }
                    return 128u8.saturating_add(signal as u8);
                }
                Ok(Some(_)) => continue,
                Ok(None) | Err(_) => break,
            }
        }
    }
    fail("the signal loop ended")
}

/// How far a file's ctime may lag the clock: the kernel stamps files from
/// its coarse clock, one tick (up to 10 ms) behind the one `now` reads.
const CTIME_LAG_NANOS: i128 = 50_000_000;

/// When the command starts, in nanoseconds since the epoch, as a file's
/// ctime would say it (a file changed after it has a ctime at or past it).
fn nanoseconds_now() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos() as i128)
        - CTIME_LAG_NANOS
}

/// After the command: everything it left in the namespace killed and
/// reaped (nothing may make a `.git` again behind the check), then what it
/// made of the guarded entries undone, and what it changed that runs later
/// named, each on a line of its stderr.
fn settle(policy: &Policy, found: &crate::guard::Found, since: i128) {
    // kill(-1): every process of the namespace but this one; each is this
    // init's child, so each is reaped here.
    let _ = rustix::process::kill_process_group(Pid::INIT, Signal::KILL);
    while let Ok(Some(_)) = rustix::process::waitpid(None, WaitOptions::empty()) {}
    let settled = found.settle(&policy.workspace, policy.write_git, since);
    for line in settled.lines() {
        eprintln!("{}", wicket_protocol::text::visible_line(&line));
    }
}

/// Stage 2's layers, in order: the file tree (it needs the capability
/// stage 1 passed), every capability dropped, the limits, Landlock, seccomp.
/// What the tree's scan found of `.git` and `.wicket` entries, when there is a tree.
fn confine_init(launch: &Launch, policy: &Policy) -> Result<Option<crate::guard::Found>, String> {
    let mut policy = policy.clone();
    let deny = canonical(&policy.deny_read);
    let mut guarded = None;
    if launch.mounts {
        let built = mounts::build(&policy, &deny)?;
        policy.writable.extend(built.private);
        guarded = Some(built.guarded);
    }
    drop_capabilities()?;
    if !launch.cgroup {
        crate::limits::set_rlimits(&policy.limits)?;
    }
    apply_landlock(&policy)?;
    if launch.seccomp {
        seccomp::apply(policy.network)?;
    }
    Ok(guarded)
}

/// The paths as they really are (a link judged where it leads); those that do not exist drop out.
fn canonical(paths: &[PathBuf]) -> Vec<PathBuf> {
    paths
        .iter()
        .filter_map(|path| std::fs::canonicalize(path).ok())
        .collect()
}

/// The probe's second stage, in the namespaces the first one made: can the
/// jail's file tree be built here?
fn probe_mounts() -> u8 {
    match mounts::try_build() {
        Ok(()) => 0,
        Err(message) => {
            eprintln!("wicket probe: {message}");
            1
        }
    }
}

/// The probe: what this kernel gives, as JSON on stdout. Landlock is tried
/// last: once this process is restricted, it can no longer mount.
fn probe() -> u8 {
    Cgroup::sweep();
    let cgroup = Cgroup::can_make();
    let seccomp = std::fs::read_to_string("/proc/self/status")
        .is_ok_and(|status| status.lines().any(|line| line.starts_with("Seccomp:")));
    let namespaces = enter_namespaces(Namespaces::Sandbox { network: false }).is_ok();
    let mounts = namespaces
        && pass_mount_capability().is_ok()
        && Command::new("/proc/self/exe")
            .arg(PROBE_MOUNTS_ARG)
            .stdin(std::process::Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
    let landlock_abi = match RestrictSelf::default().no_new_privs(false).apply() {
        Ok(status) => match status.landlock {
            LandlockStatus::Available { effective_abi, .. } => Some(effective_abi as u32),
            _ => None,
        },
        Err(_) => None,
    };
    let found = Availability {
        launcher: true,
        landlock_abi,
        namespaces,
        mounts,
        seccomp,
        cgroup,
        root: rustix::process::getuid().is_root(),
    };
    match serde_json::to_string(&found) {
        Ok(line) => {
            println!("{line}");
            0
        }
        Err(error) => {
            eprintln!("wicket: the probe's findings could not be encoded: {error}");
            1
        }
    }
}

fn is_dir(path: &Path) -> Option<bool> {
    let fd = rustix::fs::open(path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()).ok()?;
    let stat = rustix::fs::fstat(&fd).ok()?;
    Some(FileType::from_raw_mode(stat.st_mode) == FileType::Directory)
}

/// A rule granting `access` on `path`, narrowed to the rights a file can
/// have when it is not a folder (wider rights would make the whole
/// ruleset only partly enforced).
fn rule(path: &Path, access: BitFlags<AccessFs>) -> Option<PathBeneath<std::os::fd::OwnedFd>> {
    let directory = is_dir(path)?;
    let fd = rustix::fs::open(path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()).ok()?;
    let access = if directory {
        access
    } else {
        access & AccessFs::from_file(LANDLOCK_ABI)
    };
    Some(PathBeneath::new(fd, access))
}

/// What may be read: everything, except the denied paths. Landlock only
/// adds rights, so "everything but" is every sibling along the way down to
/// each denied path; the folders on the way get only their listing.
fn readable(deny: &[PathBuf]) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let deny: BTreeSet<PathBuf> = canonical(deny).into_iter().collect();
    if deny.is_empty() {
        return (vec![PathBuf::from("/")], Vec::new());
    }
    let ancestors: BTreeSet<PathBuf> = deny
        .iter()
        .flat_map(|denied| denied.ancestors().skip(1).map(Path::to_path_buf))
        .filter(|ancestor| !deny.iter().any(|denied| ancestor.starts_with(denied)))
        .collect();
    let mut allowed = Vec::new();
    for dir in &ancestors {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let link = entry.file_type().map(|t| t.is_symlink()).unwrap_or(true);
            // A link is judged where it leads, by that place's own rule.
            if link || ancestors.contains(&path) || deny.contains(&path) {
                continue;
            }
            allowed.push(path);
        }
    }
    (allowed, ancestors.into_iter().collect())
}

/// Restricts this process (and all it starts) to the policy.
fn apply_landlock(policy: &Policy) -> Result<(), String> {
    let abi = LANDLOCK_ABI;
    let error = |e: landlock::RulesetError| format!("Landlock: {e}");
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .map_err(error)?;
    if !policy.network {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(error)?;
    }
    let mut created = ruleset
        .scope(Scope::from_all(abi))
        .map_err(error)?
        .create()
        .map_err(error)?;
    let (readable, listable) = readable(&policy.deny_read);
    let read = AccessFs::from_read(abi);
    let mut rules: Vec<PathBeneath<std::os::fd::OwnedFd>> = Vec::new();
    rules.extend(readable.iter().filter_map(|path| rule(path, read)));
    rules.extend(
        listable
            .iter()
            .filter_map(|path| rule(path, BitFlags::from(AccessFs::ReadDir))),
    );
    let mut writable: Vec<&PathBuf> = policy.writable.iter().collect();
    if !policy.read_only {
        writable.push(&policy.workspace);
    } else {
        rules.extend(rule(&policy.workspace, read));
    }
    rules.extend(
        writable
            .into_iter()
            .filter_map(|path| rule(path, AccessFs::from_all(abi))),
    );
    let device = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate | AccessFs::IoctlDev;
    // The jail's devices, which every program expects to write (never
    // `/dev/tty`: a command has no terminal).
    rules.extend(
        mounts::DEVICES
            .iter()
            .filter_map(|name| rule(&Path::new("/dev").join(name), device)),
    );
    for rule in rules {
        created = created.add_rule(rule).map_err(error)?;
    }
    let status = created.restrict_self().map_err(error)?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err("Landlock could not be enforced on this kernel".into());
    }
    Ok(())
}
