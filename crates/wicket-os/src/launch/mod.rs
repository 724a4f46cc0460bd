//! The sandbox launcher: the process between Wicket and every command it
//! starts, one file per layer under a small contract (`contract.rs`: the
//! arguments and the JSON that cross the process boundary, re-exported
//! here). Wicket starts its small sibling `wicket-launch` (or, without one,
//! re-executes itself) with [`LAUNCH_ARG`] and a [`Launch`], and
//! [`dispatch`], called first thing in `main` (before any thread exists:
//! `unshare` of a user namespace needs a single-threaded process), runs one
//! of:
//!
//! - **stage 1** (`stage1.rs`), the launcher, Wicket's child, for every
//!   command: a session of its own, tied to Wicket's life, then the command
//!   `execve`d or, in the sandbox, its cgroup (`limits.rs`) and namespaces
//!   (`namespaces.rs`) and stage 2 in them;
//! - **stage 2** (`stage2.rs`), PID 1 of the command's namespaces: the
//!   jail's layers in order — the file tree (`mounts.rs`), every capability
//!   dropped (`capabilities.rs`), the rlimits without a cgroup
//!   (`limits.rs`), Landlock (`landlock.rs`), seccomp (`seccomp.rs`) — then
//!   the argv, and after it the settle of the guarded entries
//!   ([`crate::guard`]);
//! - **the probe** (`probe.rs`), which tells Wicket what this kernel can do
//!   ([`availability`]).
//!
//! Both stages tie their life to their parent's (`parent.rs`). No `unsafe`,
//! no shell, no `pre_exec`: each stage is a process of its own.

mod capabilities;
mod contract;
mod egress;
mod landlock;
mod limits;
mod mounts;
mod namespaces;
mod parent;
mod probe;
mod seccomp;
mod stage1;
mod stage2;

use std::ffi::OsString;

use contract::PROBE_MOUNTS_ARG;
pub use contract::{
    INIT_ARG, LAUNCH_ARG, Launch, Overlay, PROBE_ARG, Policy, REPORT_MAX_BYTES, Report,
    SETUP_FAILED, install_launcher, launcher, read_report_file, report_file,
};
pub use limits::{ResourceLimits, half_the_memory_mb};
pub use probe::{Availability, availability};

/// Runs a launcher stage if `args` (the process's own) ask for one, and
/// returns its exit code; `None` for an ordinary `wicket` command line.
pub fn dispatch(args: &[OsString]) -> Option<u8> {
    let stage = args.get(1)?.to_str()?;
    let rest = args.get(2..).unwrap_or_default();
    match stage {
        LAUNCH_ARG => Some(stage1::run(rest)),
        INIT_ARG => Some(stage2::run(rest)),
        PROBE_ARG => Some(probe::run()),
        PROBE_MOUNTS_ARG => Some(probe::run_mounts()),
        _ => None,
    }
}
