//! The probe: what this kernel (and process) can confine a command with,
//! found once by starting the launcher with [`PROBE_ARG`] (namespaces
//! cannot be tried in a process with threads) and read back as JSON.

use std::process::Command;
use std::sync::OnceLock;

use landlock::{LandlockStatus, RestrictSelf};
use serde::{Deserialize, Serialize};

use super::capabilities::pass_mount_capability;
use super::contract::{PROBE_ARG, PROBE_MOUNTS_ARG, launcher};
use super::limits::Cgroup;
use super::mounts;
use super::namespaces::{Namespaces, enter_namespaces};

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
    /// An overlay can be mounted in the jail's namespaces: a run can be previewed.
    #[serde(default)]
    pub overlay: bool,
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

/// The probe: what this kernel gives, as JSON on stdout. Landlock is tried
/// last: once this process is restricted, it can no longer mount.
pub(super) fn run() -> u8 {
    Cgroup::sweep();
    let cgroup = Cgroup::can_make();
    let seccomp = std::fs::read_to_string("/proc/self/status")
        .is_ok_and(|status| status.lines().any(|line| line.starts_with("Seccomp:")));
    let namespaces = enter_namespaces(Namespaces::Sandbox { network: false }).is_ok();
    let built = (namespaces && pass_mount_capability().is_ok())
        .then(|| {
            Command::new("/proc/self/exe")
                .arg(PROBE_MOUNTS_ARG)
                .stdin(std::process::Stdio::null())
                .status()
                .ok()?
                .code()
        })
        .flatten();
    let mounts = matches!(built, Some(MOUNTS_AND_OVERLAY | MOUNTS_ONLY));
    let overlay = built == Some(MOUNTS_AND_OVERLAY);
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
        overlay,
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

/// The probe's second stage's exit: the jail's tree and an overlay can be built.
const MOUNTS_AND_OVERLAY: i32 = 0;
/// The tree, but no overlay (no preview).
const MOUNTS_ONLY: i32 = 2;

/// The probe's second stage, in the namespaces the first one made: can the
/// jail's file tree be built here, and an overlay mounted in it?
pub(super) fn run_mounts() -> u8 {
    if let Err(message) = mounts::try_build() {
        eprintln!("wicket probe: {message}");
        return 1;
    }
    match mounts::try_overlay() {
        Ok(()) => MOUNTS_AND_OVERLAY as u8,
        Err(message) => {
            eprintln!("wicket probe: {message}");
            MOUNTS_ONLY as u8
        }
    }
}
