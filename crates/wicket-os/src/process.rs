//! Whether a process is alive, and this process's own signal dispositions.

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

/// Lets this process outlive a write past its file-size limit
/// (`RLIMIT_FSIZE`, `ulimit -f`): the write fails with `EFBIG` and the
/// caller handles it (a session's turn ends with an error, its log whole)
/// instead of SIGXFSZ killing the process mid-turn. A handler, not an
/// ignore: a command it starts gets the default back at exec.
pub fn survive_file_size_limit() -> std::io::Result<()> {
    let hit = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGXFSZ, hit).map(drop)
}

/// How much nicer than the rest of the process a turn's thread runs: the
/// most there is. A turn's own CPU time is small beside its fsyncs, and
/// with a thousand turns at +5 the server's two async workers still got so
/// small a share that answers waited hundreds of milliseconds (BENCHMARKS.md).
pub const TURN_NICENESS: i32 = 19;

/// Lowers this thread's priority by [`TURN_NICENESS`]: a turn's thread
/// (its log writes and their fsyncs are accounted to it) yields the CPU to
/// the threads that answer the person (the server's, the UI's), so an
/// answer is not queued behind a thousand turns' bookkeeping. Commands are
/// not affected: they are forked by the spawn keeper thread, which is
/// started first, at the process's priority.
pub fn yield_to_front_ends() {
    // The keeper must not be born of a thread made nicer: it would pass
    // that on to every command (and a priority, once lowered, cannot be
    // raised again without privilege).
    crate::keeper::start();
    let thread = rustix::thread::gettid();
    let now = rustix::process::getpriority_process(Some(thread)).unwrap_or(0);
    // A thread that cannot be made nicer runs as it was: only the order in
    // which the CPU is shared is at stake, never what runs.
    let _ = rustix::process::setpriority_process(Some(thread), now + TURN_NICENESS);
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
