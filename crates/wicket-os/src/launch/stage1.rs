//! Stage 1: the launcher itself, Wicket's child, for every command. It
//! marks every inherited descriptor above 2 close-on-exec, starts a session
//! of its own (`setsid`: no controlling terminal), asks to be killed when
//! Wicket dies and checks Wicket is still its parent (`parent.rs`). An
//! unconfined command is `execve`d directly, `$WICKET_HOME` read-only
//! around it (`mounts::protect`); a sandboxed one where namespaces cannot
//! be made gets Landlock and seccomp here and is `execve`d. Otherwise it
//! makes the command's cgroup (`Cgroup`), unshares a user, PID and (without
//! network) network namespace, passes `CAP_SYS_ADMIN` to stage 2 as an
//! ambient capability, starts stage 2 in them, forwards TERM and mirrors
//! stage 2's end, a signal as a signal, then removes the cgroup.

use std::ffi::OsString;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus};

use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};
use signal_hook::consts::signal::{SIGCHLD, SIGHUP, SIGINT, SIGQUIT, SIGTERM};
use signal_hook::iterator::Signals;

use super::capabilities::pass_mount_capability;
use super::contract::{INIT_ARG, Launch, SIGNAL_NAME, fail, parse};
use super::limits::Cgroup;
use super::namespaces::{Namespaces, enter_namespaces, enter_pid_namespace};
use super::parent::die_with_parent;
use super::{egress, landlock, mounts, seccomp};
use wicket_protocol::Network;

/// Runs stage 1 with its arguments (after `LAUNCH_ARG`); its exit code.
pub(super) fn run(args: &[OsString]) -> u8 {
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
            && !(launch.protect.is_empty() && launch.mask.is_empty())
            && let Err(message) = mounts::protect(&launch.protect, &launch.mask)
        {
            return fail(message);
        }
        return exec(&argv);
    };
    if !launch.isolate {
        // Landlock alone (no namespaces here): confined files and TCP,
        // then the argv in this very process.
        if let Err(message) = landlock::apply(&policy, None) {
            return fail(message);
        }
        if launch.seccomp
            && let Err(message) = seccomp::apply(policy.network == Network::Direct)
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
    network: Network,
    limited_by_cgroup: bool,
    argv: &[OsString],
) -> Result<(Option<i32>, std::io::Result<ExitStatus>), String> {
    // Wicket's socket is reached before the namespaces, where its path is the host's.
    let wicket = match (&launch.egress, network) {
        (Some(path), Network::Proxied) => Some(egress::connect(path)?),
        _ => None,
    };
    let proxy_port = match wicket {
        Some(wicket) => {
            enter_namespaces(Namespaces::Network)?;
            let port = egress::listen(wicket)?;
            enter_pid_namespace()?;
            Some(port)
        }
        None => {
            enter_namespaces(Namespaces::Sandbox {
                network: network == Network::Direct,
            })?;
            None
        }
    };
    if launch.mounts {
        pass_mount_capability()?;
    }
    let mut signals = Signals::new([SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGCHLD])
        .map_err(|error| format!("signal handlers: {error}"))?;
    // Stage 2 must die with this stage: it checks its parent is this pid.
    let init = Launch {
        parent: std::process::id(),
        cgroup: limited_by_cgroup,
        proxy_port,
        ..launch.clone()
    };
    let mut command = Command::new("/proc/self/exe");
    if let Some(port) = proxy_port {
        // No host is for the command to reach around the proxy.
        command.env_remove("NO_PROXY").env_remove("no_proxy");
        command.envs(egress::proxy_env(port));
    }
    let mut child = command
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
