//! Whether a process is alive.

/// True when a process with this pid exists (it may belong to another user).
pub fn alive(pid: u32) -> bool {
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    let Some(pid) = rustix::process::Pid::from_raw(raw) else {
        return false;
    };
    rustix::process::test_kill_process(pid) != Err(rustix::io::Errno::SRCH)
}

#[cfg(test)]
mod tests {
    #[test]
    fn this_process_is_alive_and_a_reaped_child_is_not() {
        assert!(super::alive(std::process::id()));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!super::alive(pid));
        assert!(!super::alive(0));
    }
}
