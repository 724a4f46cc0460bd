//! Stage 2: PID 1 of the command's new PID namespace. It asks to die with
//! stage 1 and checks stage 1 is still its parent (`parent.rs`), then
//! applies the jail's layers in order (`confine_init`): the file tree in a
//! mount namespace (`mounts.rs`), every capability dropped
//! (`capabilities.rs`), the rlimits when there is no cgroup (`limits.rs`),
//! Landlock (`landlock.rs`: writes only where the mounts allow, reads
//! anywhere but the denied paths, no TCP without network, no signals or
//! abstract sockets out of the sandbox) and seccomp (`seccomp.rs`). Then it
//! starts the argv, forwards TERM to every process of the namespace, reaps,
//! and exits when the argv does — which kills everything the command left
//! behind, `setsid` or not — after the settle (`settle`): what the command
//! made of the guarded entries undone, and what it changed that runs later
//! named on its stderr and in the report only stage 2 writes
//! ([`Launch::report`]).

use std::ffi::{CString, OsString};
use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::process::Command;

use rustix::process::{DumpableBehavior, Pid, Signal, WaitOptions};
use signal_hook::consts::signal::{SIGCHLD, SIGHUP, SIGINT, SIGQUIT, SIGTERM};
use signal_hook::iterator::Signals;

use super::capabilities::drop_capabilities;
use super::contract::{
    Launch, Policy, Report, SIGNAL_NAME, fail, parse, read_report_file, report_file,
};
use super::limits::set_rlimits;
use super::mounts::{self, canonical};
use super::parent::die_with_parent;
use super::{landlock, seccomp};
use crate::guard::Found;

/// Runs stage 2 with its arguments (after `INIT_ARG`); its exit code.
pub(super) fn run(args: &[OsString]) -> u8 {
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
    let (report, guarded) = match confine(&launch) {
        Ok(confined) => confined,
        Err(message) => return fail(message),
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
                        settle(policy, found, since, report.as_ref());
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

/// What stage 2 holds through the command: the report (opened while its
/// path is still the host's: the jail's tree masks it, and Landlock would
/// refuse it after), and with a policy the jail's layers applied and what
/// the tree's scan found; stage 2 then not dumpable.
fn confine(launch: &Launch) -> Result<(Option<File>, Guarded<'_>), String> {
    let report = match (&launch.report, launch.mounts && launch.policy.is_some()) {
        (Some(path), true) => Some(open_report(path)?),
        _ => None,
    };
    let kept = report.as_ref().map(read_kept).unwrap_or_default();
    let guarded = match &launch.policy {
        Some(policy) => Some((policy, confine_init(launch, policy, &kept)?)),
        None => None,
    };
    // Not dumpable: no process of the command may open this one's
    // descriptors through /proc/1/fd (the report), nor ptrace it and
    // change what the settle does. The command's own programs are
    // dumpable again at their exec.
    if guarded.is_some() {
        rustix::process::set_dumpable_behavior(DumpableBehavior::NotDumpable)
            .map_err(|error| format!("making the init not dumpable: {error}"))?;
    }
    Ok((report, guarded))
}

/// The policy of a sandboxed command and, with a tree, what its scan found.
type Guarded<'a> = Option<(&'a Policy, Option<Found>)>;

/// Stage 2's layers, in order: the file tree (it needs the capability
/// stage 1 passed), every capability dropped, the limits, Landlock, seccomp.
/// What the tree's scan found of `.git` and `.wicket` entries, when there is a tree.
fn confine_init(launch: &Launch, policy: &Policy, kept: &[u8]) -> Result<Option<Found>, String> {
    let mut policy = policy.clone();
    // Each denied path where it really is, and as written: a home's
    // toolchain bound back where the person's PATH names it is masked there too.
    let mut deny = canonical(&policy.deny_read);
    deny.extend(policy.deny_read.iter().cloned());
    // The report is stage 2's alone: masked wherever it lies (the jail's
    // own /tmp hides the host's already, unless `extra_write` shows it).
    deny.extend(launch.report.iter().cloned());
    let mut guarded = None;
    if launch.mounts {
        let built = mounts::build(&policy, &deny, kept)?;
        policy.writable.extend(built.private);
        guarded = Some(built.guarded);
    }
    drop_capabilities()?;
    if !launch.cgroup {
        set_rlimits(&policy.limits)?;
    }
    landlock::apply(&policy, launch.proxy_port)?;
    if launch.seccomp {
        seccomp::apply(policy.network == wicket_protocol::Network::Direct)?;
    }
    Ok(guarded)
}

/// After the command: everything it left in the namespace killed and
/// reaped (nothing may make a `.git` again behind the check), then what it
/// made of the guarded entries undone, and what it changed that runs later
/// named, each on a line of its stderr, and in the `report`.
fn settle(policy: &Policy, found: &Found, since: i128, report: Option<&File>) {
    // kill(-1): every process of the namespace but this one; each is this
    // init's child, so each is reaped here.
    let _ = rustix::process::kill_process_group(Pid::INIT, Signal::KILL);
    while let Ok(Some(_)) = rustix::process::waitpid(None, WaitOptions::empty()) {}
    let settled = found.settle(&policy.workspace, policy.write_git, since);
    for line in settled.lines() {
        eprintln!("{}", wicket_protocol::text::visible_line(&line));
    }
    if let Some(file) = report {
        let report = Report {
            runs_later: settled
                .runs_later
                .into_iter()
                .map(|(path, _)| path)
                .collect(),
        };
        if let Err(error) = write_report(file, &report, &settled.kept) {
            eprintln!("wicket: could not report what the command changed: {error}");
        }
    }
}

/// The report Wicket made at `path`, opened to be read and written: a
/// regular file, reached by no link, its descriptor closed at the command's exec.
fn open_report(path: &Path) -> Result<File, String> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|error| format!("opening the report {}: {error}", path.display()))?;
    match file.metadata() {
        Ok(meta) if meta.is_file() => Ok(file),
        Ok(_) => Err(format!("the report {} is not a file", path.display())),
        Err(error) => Err(format!("the report {}: {error}", path.display())),
    }
}

/// What the last scan of the workspace kept, as Wicket wrote it in the
/// report before the command ([`report_file`]): nothing when it cannot be
/// read whole (the scan then lists every folder).
fn read_kept(file: &File) -> Vec<u8> {
    use std::io::Read;
    let most =
        (crate::guard::KEPT_MAX_BYTES + super::contract::REPORT_MAX_BYTES as usize + 8) as u64;
    let mut bytes = Vec::new();
    match file.take(most).read_to_end(&mut bytes) {
        Ok(_) => read_report_file(&bytes).1.to_vec(),
        Err(_) => Vec::new(),
    }
}

/// Writes `report`, and what the scan after the command kept, over
/// whatever the file held (nothing of the command is left to have
/// written it, but no earlier bytes may stay either).
fn write_report(file: &File, report: &Report, kept: &[u8]) -> std::io::Result<()> {
    file.set_len(0)?;
    file.write_all_at(&report_file(Some(report), kept), 0)
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
