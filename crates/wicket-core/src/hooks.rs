//! Stop hooks: each `[[hooks.stop]]` argv runs (no shell) in the workspace with
//! a JSON object on stdin before a turn may finish. Exit 0 passes; exit 2
//! blocks and its stderr goes back to the model; anything else — another exit
//! code, a signal, a timeout, a command that will not start — is an error
//! that counts as a block. A hook never passes by failing.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use wicket_protocol::HookOutcome;

use crate::config::{DEFAULT_HOOK_TIMEOUT_S, StopHook};

/// The most of a hook's stderr that is kept.
pub const HOOK_STDERR_MAX_BYTES: usize = 16 * 1024;

/// What one hook did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookRun {
    pub outcome: HookOutcome,
    pub exit_code: Option<i32>,
    /// For a block, what goes back to the model; for an error, what went wrong.
    pub stderr: String,
}

fn error(message: String) -> HookRun {
    HookRun {
        outcome: HookOutcome::Error,
        exit_code: None,
        stderr: message,
    }
}

/// Runs one Stop hook with `input` on its stdin.
pub fn run_stop_hook(hook: &StopHook, workspace: &Path, input: &serde_json::Value) -> HookRun {
    let Some((program, args)) = hook.command.split_first() else {
        return error(
            "the hook's command is empty; give it an argv like [\"make\", \"check\"]".into(),
        );
    };
    let timeout = Duration::from_secs(hook.timeout_s.unwrap_or(DEFAULT_HOOK_TIMEOUT_S));
    let mut child = match Command::new(program)
        .args(args)
        .current_dir(workspace)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
    {
        Ok(child) => child,
        Err(spawn) => return error(format!("the hook {program:?} did not start: {spawn}")),
    };
    let pid = child.id();
    if let Some(mut stdin) = child.stdin.take() {
        let bytes = input.to_string().into_bytes();
        // A hook need not read its input; a closed pipe is not an error.
        std::thread::spawn(move || {
            let _ = stdin.write_all(&bytes);
        });
    }
    let stderr_pipe = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut kept = Vec::new();
        if let Some(pipe) = stderr_pipe {
            let mut limited = pipe.take(HOOK_STDERR_MAX_BYTES as u64);
            let _ = limited.read_to_end(&mut kept);
            // Drain the rest so the hook never blocks on a full pipe.
            let mut rest = limited.into_inner();
            let _ = std::io::copy(&mut rest, &mut std::io::sink());
        }
        String::from_utf8_lossy(&kept).into_owned()
    });
    let (done, waited) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait());
    });
    let status = match waited.recv_timeout(timeout) {
        Ok(Ok(status)) => status,
        Ok(Err(wait)) => return error(format!("waiting for the hook {program:?}: {wait}")),
        Err(_) => {
            kill_group(pid);
            let _ = waited.recv();
            let _ = reader.join();
            return error(format!(
                "the hook {program:?} ran longer than its {} s timeout and was killed",
                timeout.as_secs()
            ));
        }
    };
    // The hook is gone; anything it left running in its group goes too.
    kill_group(pid);
    let stderr = reader.join().unwrap_or_default();
    match status.code() {
        Some(0) => HookRun {
            outcome: HookOutcome::Pass,
            exit_code: Some(0),
            stderr,
        },
        Some(2) => HookRun {
            outcome: HookOutcome::Block,
            exit_code: Some(2),
            stderr,
        },
        Some(code) => HookRun {
            outcome: HookOutcome::Error,
            exit_code: Some(code),
            stderr,
        },
        None => error(format!("the hook {program:?} was killed by a signal")),
    }
}

fn kill_group(pid: u32) {
    if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(command: &[&str], timeout_s: Option<u64>) -> StopHook {
        StopHook {
            command: command.iter().map(|s| s.to_string()).collect(),
            timeout_s,
        }
    }

    #[test]
    fn exit_codes_pass_block_and_fail_closed() {
        let ws = std::env::temp_dir();
        let input = serde_json::json!({"result": "done"});
        let pass = run_stop_hook(&hook(&["sh", "-c", "cat >/dev/null"], None), &ws, &input);
        assert_eq!(pass.outcome, HookOutcome::Pass);
        let block = run_stop_hook(
            &hook(
                &["sh", "-c", "grep -q done && echo 'tests fail' >&2; exit 2"],
                None,
            ),
            &ws,
            &input,
        );
        assert_eq!(
            (block.outcome, block.stderr.as_str()),
            (HookOutcome::Block, "tests fail\n")
        );
        let other = run_stop_hook(&hook(&["sh", "-c", "exit 1"], None), &ws, &input);
        assert_eq!(
            (other.outcome, other.exit_code),
            (HookOutcome::Error, Some(1))
        );
        let missing = run_stop_hook(&hook(&["/no/such/hook"], None), &ws, &input);
        assert_eq!(missing.outcome, HookOutcome::Error);
        let empty = run_stop_hook(&hook(&[], None), &ws, &input);
        assert_eq!(empty.outcome, HookOutcome::Error);
        let slow = run_stop_hook(&hook(&["sleep", "30"], Some(0)), &ws, &input);
        assert_eq!(slow.outcome, HookOutcome::Error);
        assert!(slow.stderr.contains("timeout"), "{}", slow.stderr);
    }
}
