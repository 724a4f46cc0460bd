//! run: an argv with no shell, in its own process group, with a timeout; on
//! timeout or cancel the group gets SIGTERM, then SIGKILL [`RUN_KILL_GRACE_MS`]
//! later. stdout and stderr are drained concurrently and each kept to its head
//! and tail, [`RUN_STREAM_MAX_BYTES`] in all.

use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};
use wicket_protocol::{ErrorKind, RunArgs, RunOutput};

use crate::Cancel;
use crate::error::{Error, Result};
use crate::limits::{
    RUN_DEFAULT_TIMEOUT_S, RUN_KILL_GRACE_MS, RUN_MAX_TIMEOUT_S, RUN_STREAM_MAX_BYTES,
};
use crate::resolve::{Location, Workspace};

/// Environment variables holding the provider keys Wicket itself uses; a command never sees them.
pub const HIDDEN_ENV: [&str; 3] = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"];

/// How long output is still drained after the command exits and its group is
/// killed, for a grandchild that left the group but holds the pipes.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(2000);

/// The timeout a run call asks for, checked against the limits.
pub fn timeout_of(args: &RunArgs) -> Result<u64> {
    match args.timeout_s {
        None => Ok(RUN_DEFAULT_TIMEOUT_S),
        Some(0) => Err(Error::invalid("timeout_s must be at least 1")),
        Some(seconds) if seconds > RUN_MAX_TIMEOUT_S => Err(Error::invalid(format!(
            "timeout_s is {seconds}; the most a command may run is {RUN_MAX_TIMEOUT_S} s"
        ))),
        Some(seconds) => Ok(seconds),
    }
}

/// Checks a run call's arguments without running anything.
pub fn validate(args: &RunArgs) -> Result<()> {
    timeout_of(args)?;
    let Some(program) = args.argv.first() else {
        return Err(Error::invalid(
            "argv is empty; give the program and its arguments, e.g. [\"cargo\", \"test\"]",
        ));
    };
    if program.is_empty() {
        return Err(Error::invalid("argv[0] is empty; name the program to run"));
    }
    if args.argv.iter().any(|arg| arg.contains('\0')) {
        return Err(Error::invalid("an argv element contains a NUL byte"));
    }
    Ok(())
}

/// The first and last bytes of a stream, and how many were dropped between.
#[derive(Default)]
struct Capture {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    total: u64,
}

const HALF: usize = RUN_STREAM_MAX_BYTES / 2;

impl Capture {
    fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if self.head.len() < HALF {
            let take = bytes.len().min(HALF - self.head.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if bytes.len() >= HALF {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - HALF..]);
        } else {
            let overflow = (self.tail.len() + bytes.len()).saturating_sub(HALF);
            self.tail.drain(..overflow);
            self.tail.extend(bytes);
        }
    }

    /// The kept text, with a marker where bytes were cut, and the count cut.
    fn finish(&self) -> (String, u64) {
        let cut = self.total - self.head.len() as u64 - self.tail.len() as u64;
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        if cut == 0 {
            let mut all = self.head.clone();
            all.extend_from_slice(&tail);
            return (String::from_utf8_lossy(&all).into_owned(), 0);
        }
        // Cut on character boundaries so no half character turns into U+FFFD.
        let head_end = match std::str::from_utf8(&self.head) {
            Ok(_) => self.head.len(),
            Err(error) => error.valid_up_to(),
        };
        let tail_start = tail
            .iter()
            .take(3)
            .take_while(|byte| *byte & 0xC0 == 0x80)
            .count();
        let text = format!(
            "{}\n[… {cut} bytes cut …]\n{}",
            String::from_utf8_lossy(&self.head[..head_end]),
            String::from_utf8_lossy(&tail[tail_start..])
        );
        (text, cut)
    }
}

fn drain(
    mut stream: impl Read + Send + 'static,
    capture: Arc<Mutex<Capture>>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            match stream.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => {
                    if let Ok(mut capture) = capture.lock() {
                        capture.push(&buffer[..n]);
                    }
                }
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    })
}

#[derive(Default)]
struct Progress {
    exited: Option<ExitStatus>,
    cancelled: bool,
}

fn signal_group(pid: Option<Pid>, signal: Signal) {
    if let Some(pid) = pid {
        let _ = rustix::process::kill_process_group(pid, signal);
    }
}

pub fn run(workspace: &Workspace, args: &RunArgs, cancel: &Cancel) -> Result<RunOutput> {
    validate(args)?;
    let timeout = Duration::from_secs(timeout_of(args)?);
    let cwd_shown = args.cwd.as_deref().unwrap_or(".");
    let cwd_location = workspace.classify(cwd_shown)?;
    if let Location::Outside(path) = &cwd_location {
        return Err(Error::new(
            ErrorKind::OutsideWorkspace,
            format!(
                "cwd '{}' is outside the workspace; commands run inside it",
                path.display()
            ),
        ));
    }
    let cwd_fd = workspace.open_dir(&cwd_location, cwd_shown)?;

    let mut command = Command::new(&args.argv[0]);
    command
        .args(&args.argv[1..])
        // The folder the resolver opened, not a path that could be swapped since.
        .current_dir(format!("/proc/self/fd/{}", cwd_fd.as_raw_fd()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    for name in HIDDEN_ENV {
        command.env_remove(name);
    }
    let started = Instant::now();
    let mut child = command.spawn().map_err(|error| match error.kind() {
        std::io::ErrorKind::NotFound => Error::new(
            ErrorKind::NotFound,
            format!(
                "command '{}' was not found on PATH; check the name, or give its path",
                args.argv[0]
            ),
        ),
        _ => Error::io(&format!("starting '{}'", args.argv[0]), error),
    })?;
    drop(cwd_fd);
    let pid = Pid::from_raw(child.id() as i32);
    let stdout = Arc::new(Mutex::new(Capture::default()));
    let stderr = Arc::new(Mutex::new(Capture::default()));
    let mut readers = Vec::new();
    if let Some(out) = child.stdout.take() {
        readers.push(drain(out, stdout.clone()));
    }
    if let Some(err) = child.stderr.take() {
        readers.push(drain(err, stderr.clone()));
    }

    let progress = Arc::new((Mutex::new(Progress::default()), Condvar::new()));
    let waiter = {
        let progress = progress.clone();
        std::thread::spawn(move || {
            let status = child.wait();
            let (lock, condvar) = &*progress;
            if let Ok(mut state) = lock.lock() {
                state.exited = status.ok().or(Some(ExitStatus::from_raw(0x7f00)));
            }
            condvar.notify_all();
        })
    };
    let listener = {
        let progress = progress.clone();
        cancel.on_cancel(Box::new(move || {
            let (lock, condvar) = &*progress;
            if let Ok(mut state) = lock.lock() {
                state.cancelled = true;
            }
            condvar.notify_all();
        }))
    };

    let (lock, condvar) = &*progress;
    let deadline = started + timeout;
    let mut timed_out = false;
    let mut term_sent_at: Option<Instant> = None;
    let status = loop {
        let Ok(state) = lock.lock() else { break None };
        if let Some(status) = state.exited {
            break Some(status);
        }
        let now = Instant::now();
        if term_sent_at.is_none() && (state.cancelled || now >= deadline) {
            timed_out = !state.cancelled;
            drop(state);
            signal_group(pid, Signal::TERM);
            term_sent_at = Some(now);
            continue;
        }
        let wake = match term_sent_at {
            Some(at) => {
                let kill_at = at + Duration::from_millis(RUN_KILL_GRACE_MS);
                if now >= kill_at {
                    drop(state);
                    signal_group(pid, Signal::KILL);
                    term_sent_at = Some(now + Duration::from_secs(3600));
                    continue;
                }
                kill_at
            }
            None => deadline,
        };
        let _ = condvar.wait_timeout(state, wake.saturating_duration_since(now));
    };
    cancel.remove(listener);
    let _ = waiter.join();
    // The command is done; whatever it left in its group goes with it, so no
    // grandchild outlives the call or holds the pipes open.
    signal_group(pid, Signal::KILL);
    let drain_deadline = Instant::now() + DRAIN_AFTER_EXIT;
    for reader in readers {
        while !reader.is_finished() && Instant::now() < drain_deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        if reader.is_finished() {
            let _ = reader.join();
        }
    }
    let duration_ms = started.elapsed().as_millis() as u64;
    let status = status.ok_or_else(|| Error::io(&args.argv[0], "lost track of the command"))?;
    let (stdout, stdout_cut) = stdout.lock().map(|c| c.finish()).unwrap_or_default();
    let (stderr, stderr_cut) = stderr.lock().map(|c| c.finish()).unwrap_or_default();
    Ok(RunOutput {
        exit_code: status.code(),
        signal: status.signal(),
        timed_out,
        stdout,
        stderr,
        stdout_cut,
        stderr_cut,
        duration_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_keeps_everything_up_to_the_limit() {
        let mut capture = Capture::default();
        let data: Vec<u8> = (0..RUN_STREAM_MAX_BYTES)
            .map(|i| b'a' + (i % 26) as u8)
            .collect();
        for piece in data.chunks(1000) {
            capture.push(piece);
        }
        let (text, cut) = capture.finish();
        assert_eq!(cut, 0);
        assert_eq!(text.as_bytes(), &data[..]);
    }

    #[test]
    fn capture_keeps_head_and_tail_and_counts_the_cut() {
        let mut capture = Capture::default();
        let data: Vec<u8> = (0..RUN_STREAM_MAX_BYTES + 1)
            .map(|i| b'a' + (i % 26) as u8)
            .collect();
        for piece in data.chunks(777) {
            capture.push(piece);
        }
        let (text, cut) = capture.finish();
        assert_eq!(cut, 1);
        assert!(text.starts_with(std::str::from_utf8(&data[..HALF]).unwrap_or("")));
        assert!(text.ends_with(std::str::from_utf8(&data[data.len() - HALF..]).unwrap_or("")));
        assert!(text.contains("[… 1 bytes cut …]"));
    }
}
