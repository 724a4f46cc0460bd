//! Stop hooks: each `[[hooks.stop]]` argv runs (no shell) in the workspace with
//! a JSON object on stdin before a turn may finish. Exit 0 passes; exit 2
//! blocks and its stderr goes back to the model; anything else — another exit
//! code, a signal, a timeout, a command that will not start — is an error
//! that counts as a block. A hook never passes by failing. It starts through
//! the one spawning module, like `run`: no provider keys, its own process
//! group, TERM then KILL, and the same sandbox.

use std::time::Duration;

use wicket_os::spawn::{self, Confine, Cwd, Input, Limits, Spec};
use wicket_protocol::HookOutcome;
use wicket_tools::Cancel;

use crate::config::{DEFAULT_HOOK_TIMEOUT_S, StopHook};

/// The most of a hook's stderr that is kept (head and tail).
pub const HOOK_STDERR_MAX_BYTES: usize = 16 * 1024;

/// What one hook did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookRun {
    /// Its verdict.
    pub outcome: HookOutcome,
    /// Its exit code.
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

/// Runs one Stop hook with `input` on its stdin, in `cwd`, confined by `confine`.
pub fn run_stop_hook(
    hook: &StopHook,
    cwd: Cwd,
    input: &serde_json::Value,
    confine: Confine,
    cancel: &Cancel,
) -> HookRun {
    let Some(program) = hook.command.first() else {
        return error(
            "the hook's command is empty; give it an argv like [\"make\", \"check\"]".into(),
        );
    };
    let timeout = Duration::from_secs(hook.timeout_s.unwrap_or(DEFAULT_HOOK_TIMEOUT_S));
    let spec = Spec {
        input: Input::Bytes(input.to_string().into_bytes()),
        confine,
        ..Spec::new(hook.command.clone(), cwd)
    };
    let limits = Limits {
        timeout,
        keep_bytes: HOOK_STDERR_MAX_BYTES,
    };
    let finished = match spawn::run(spec, limits, cancel) {
        Ok(finished) => finished,
        Err(spawn) => {
            return error(format!(
                "the hook {program:?} did not start: {}",
                wicket_tools::tools::run::not_started(spawn).message
            ));
        }
    };
    let stderr = finished.stderr.0.clone();
    if finished.timed_out {
        return error(format!(
            "the hook {program:?} ran longer than its {} s timeout and was killed",
            timeout.as_secs()
        ));
    }
    match finished.code() {
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
        None => error(format!(
            "the hook {program:?} was killed by signal {}",
            finished.signal().unwrap_or(0)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Owner;

    fn hook(command: &[&str], timeout_s: Option<u64>) -> StopHook {
        StopHook {
            command: command.iter().map(|s| s.to_string()).collect(),
            timeout_s,
            owner: Owner::Home,
        }
    }

    fn run(hook: &StopHook) -> HookRun {
        let input = serde_json::json!({"result": "done"});
        run_stop_hook(
            hook,
            Cwd::Path(std::env::temp_dir()),
            &input,
            Confine::none(),
            &Cancel::default(),
        )
    }

    #[test]
    fn exit_codes_pass_block_and_fail_closed() {
        assert_eq!(
            run(&hook(&["sh", "-c", "cat >/dev/null"], None)).outcome,
            HookOutcome::Pass
        );
        let block = run(&hook(
            &["sh", "-c", "grep -q done && echo 'tests fail' >&2; exit 2"],
            None,
        ));
        assert_eq!(
            (block.outcome, block.stderr.as_str()),
            (HookOutcome::Block, "tests fail\n")
        );
        let other = run(&hook(&["sh", "-c", "exit 1"], None));
        assert_eq!(
            (other.outcome, other.exit_code),
            (HookOutcome::Error, Some(1))
        );
        let missing = run(&hook(&["/no/such/hook"], None));
        assert_eq!(missing.outcome, HookOutcome::Error);
        assert!(
            missing.stderr.contains("did not start"),
            "{}",
            missing.stderr
        );
        let empty = run(&hook(&[], None));
        assert_eq!(empty.outcome, HookOutcome::Error);
        let slow = run(&hook(&["sleep", "30"], Some(1)));
        assert_eq!(slow.outcome, HookOutcome::Error);
        assert!(slow.stderr.contains("1 s timeout"), "{}", slow.stderr);
    }
}
