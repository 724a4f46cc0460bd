//! The namespaces a launcher stage unshares: a user namespace (so no
//! privilege is needed) with PID and, without network, network namespaces
//! for a sandboxed command (stage 1, and the probe), or a mount namespace
//! for an unconfined one's protecting binds.

/// Which namespaces [`enter_namespaces`] makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Namespaces {
    /// User and mount: `mounts::protect`.
    Mount,
    /// User and PID, and network unless the command has it: the sandbox.
    Sandbox {
        /// Keep the host's network.
        network: bool,
    },
    /// User and network only, the PID namespace after
    /// ([`enter_pid_namespace`]): a network through Wicket, whose listener
    /// thread must start in between (no thread can start once the PID
    /// namespace is unshared, and none may exist when the user one is).
    Network,
}

/// Unshares a user namespace and `which` others, mapping this uid and gid
/// to themselves.
pub(super) fn enter_namespaces(which: Namespaces) -> Result<(), String> {
    use nix::sched::CloneFlags;
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    let flags = match which {
        Namespaces::Mount => CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS,
        Namespaces::Sandbox { network: true } => {
            CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWPID
        }
        Namespaces::Sandbox { network: false } => {
            CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWPID | CloneFlags::CLONE_NEWNET
        }
        Namespaces::Network => CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNET,
    };
    nix::sched::unshare(flags).map_err(|error| format!("unshare: {error}"))?;
    std::fs::write("/proc/self/setgroups", "deny").map_err(|e| format!("setgroups: {e}"))?;
    std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1\n"))
        .map_err(|e| format!("uid_map: {e}"))?;
    std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1\n"))
        .map_err(|e| format!("gid_map: {e}"))?;
    Ok(())
}

/// The PID namespace, after [`Namespaces::Network`]: the next child this
/// process starts is its PID 1.
pub(super) fn enter_pid_namespace() -> Result<(), String> {
    nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWPID)
        .map_err(|error| format!("unshare of the PID namespace: {error}"))
}
