//! Whether a process is still there, read from `/proc` directly: a check
//! built on `pgrep` passes wherever `pgrep` is missing.

use std::time::{Duration, Instant};

/// The pids of processes whose command line contains `marker`, this
/// process excluded.
pub fn processes_with(marker: &str) -> Vec<u32> {
    let me = std::process::id();
    let entries = std::fs::read_dir("/proc").expect("/proc is readable");
    entries
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|bytes| {
                    let line = String::from_utf8_lossy(&bytes).replace('\0', " ");
                    line.contains(marker)
                })
                .unwrap_or(false)
        })
        .collect()
}

/// Whether any process carries `marker` in its command line.
pub fn alive(marker: &str) -> bool {
    !processes_with(marker).is_empty()
}

/// Waits until `done` holds, up to `patience`; false if it never did.
pub fn wait_until(patience: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + patience;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A unique marker for one test's processes.
pub fn marker(name: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    format!(
        "wicket-test-{name}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alive_finds_a_running_process_and_not_a_finished_one() {
        let marker = marker("alive");
        // `read` is a builtin: no child of the shell outlives the kill.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "read line", &marker])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        assert!(wait_until(Duration::from_secs(5), || alive(&marker)));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!alive(&marker));
    }
}
