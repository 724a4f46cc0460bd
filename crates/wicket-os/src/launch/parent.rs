//! Each stage's life tied to its parent's: stage 1 dies with Wicket, stage
//! 2 with stage 1, even by SIGKILL, and neither starts once its parent is
//! already gone.

use rustix::process::Signal;

/// Asks for SIGKILL when the parent dies, then checks the parent is still
/// `expected`: if it died before the request, nothing would ever come.
/// The parent is read from `/proc/self/status`, not `getppid()`, because
/// stage 2 is PID 1 of a new namespace, where `getppid()` is 0; the `/proc`
/// mount is still the outer one, so it names stage 1 by its outer pid (or
/// whoever adopted the orphan).
pub(super) fn die_with_parent(expected: u32) -> Result<(), String> {
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
