//! Hooks, in Claude Code's shapes: each `[[hooks.<event>]]` argv runs (no
//! shell) in the workspace with Claude Code's JSON on its stdin
//! (`session_id`, `cwd`, `hook_event_name`, `tool_name`, `tool_input`,
//! `tool_response`, `prompt`, …), and says what it wants the way Claude
//! Code's hooks do: exit 0 goes on (its stdout may be `{"decision":
//! "block", "reason"}` or `{"hookSpecificOutput": {"permissionDecision":
//! "allow"|"deny"|"ask", "permissionDecisionReason", "additionalContext"}}`),
//! exit 2 blocks with its stderr as the reason, and anything else — another
//! exit code, a signal, a timeout, a command that will not start — is a
//! failure that its `on_error` turns into a block or ignores. A hook starts
//! through the one spawning module, like `run`: no provider keys, its own
//! process group, TERM then KILL, and the same jail.

use std::time::{Duration, Instant};

use wicket_os::spawn::{self, Confine, Cwd, Input, Limits, Spec};
use wicket_protocol::{HookEvent, HookOutcome};
use wicket_tools::Cancel;

use crate::config::{DEFAULT_HOOK_TIMEOUT_S, Hook};

/// The most of a hook's stderr (and stdout) that is kept (head and tail).
pub const HOOK_STDERR_MAX_BYTES: usize = 16 * 1024;

/// The most of a hook's stdout its event keeps in the log.
pub const HOOK_STDOUT_SHOWN_BYTES: usize = 1024;

/// A call as Claude Code's hooks see it: `tool_name` in Claude Code's
/// names (`Bash`, `Write`, `Edit`, `Read`, `Grep`, `LS`; an MCP tool as
/// `mcp__S__T`, which both name the same), `tool_input` in Claude Code's
/// shapes, and Wicket's own name and arguments beside them
/// (`wicket_tool`, `wicket_input`), so that a hook copied from Claude
/// Code's documentation (`if tool_name != "Bash": exit 0`, then
/// `tool_input.command`) guards Wicket's calls unchanged. Paths are
/// absolute, as Claude Code's are; a command is its argv shell-quoted.
pub fn claude_code_call(
    tool: &str,
    input: &serde_json::Value,
    workspace: &std::path::Path,
) -> serde_json::Map<String, serde_json::Value> {
    use serde_json::{Value, json};
    let text = |key: &str| input.get(key).and_then(Value::as_str);
    let absolute =
        |key: &str| text(key).map(|path| Value::from(workspace.join(path).display().to_string()));
    let mut shaped = serde_json::Map::new();
    let mut put = |key: &str, value: Option<Value>| {
        if let Some(value) = value {
            shaped.insert(key.to_string(), value);
        }
    };
    match tool {
        "run" => {
            let words: Vec<&str> = input
                .get("argv")
                .and_then(Value::as_array)
                .map(|argv| argv.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let command = wicket_protocol::text::shell_words(&words);
            put("description", Some(json!(format!("Run {command}"))));
            put("command", Some(json!(command)));
            // Claude Code's timeout is in milliseconds.
            put(
                "timeout",
                input
                    .get("timeout_s")
                    .and_then(Value::as_u64)
                    .map(|seconds| json!(seconds.saturating_mul(1000))),
            );
        }
        "write_file" => {
            put("file_path", absolute("path"));
            put("content", input.get("content").cloned());
        }
        "search_replace" => {
            put("file_path", absolute("path"));
            put("old_string", input.get("old").cloned());
            put("new_string", input.get("new").cloned());
            put("replace_all", input.get("replace_all").cloned());
        }
        "read_file" => {
            put("file_path", absolute("path"));
            put("offset", input.get("line").cloned());
        }
        "grep" => {
            put("pattern", input.get("pattern").cloned());
            put("path", absolute("path"));
            put("glob", input.get("glob").cloned());
            put("-i", input.get("case_insensitive").cloned());
        }
        "list_dir" => {
            put(
                "path",
                Some(absolute("path").unwrap_or_else(|| json!(workspace.display().to_string()))),
            );
        }
        // An MCP tool (`mcp__S__T`) is named alike and takes its own arguments.
        _ => shaped = input.as_object().cloned().unwrap_or_default(),
    }
    let name = crate::config::claude_names(tool)
        .first()
        .copied()
        .unwrap_or(tool);
    let mut call = serde_json::Map::new();
    call.insert("tool_name".into(), json!(name));
    call.insert("tool_input".into(), Value::Object(shaped));
    call.insert("wicket_tool".into(), json!(tool));
    call.insert("wicket_input".into(), input.clone());
    call
}

/// What one hook did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookRun {
    /// Its verdict.
    pub outcome: HookOutcome,
    /// Its exit code.
    pub exit_code: Option<i32>,
    /// For a block, the reason (what the model, or for a prompt the
    /// person, reads); for a failure, what went wrong; else its stderr.
    pub stderr: String,
    /// Its stdout.
    pub stdout: String,
    /// Its `additionalContext` (plain stdout, for UserPromptSubmit and
    /// SessionStart, as Claude Code reads it).
    pub context: Option<String>,
    /// How long it ran.
    pub duration: Duration,
}

impl HookRun {
    /// A run that never started or could not be read.
    pub fn failed(message: String) -> HookRun {
        HookRun {
            outcome: HookOutcome::Error,
            exit_code: None,
            stderr: message,
            stdout: String::new(),
            context: None,
            duration: Duration::ZERO,
        }
    }
}

/// Runs one hook with `input` on its stdin, in `cwd`, confined by `confine`.
pub fn run_hook(
    hook: &Hook,
    cwd: Cwd,
    input: &serde_json::Value,
    confine: Confine,
    cancel: &Cancel,
) -> HookRun {
    let Some(program) = hook.command.first() else {
        return HookRun::failed(
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
        cut_note: Default::default(),
        timeout,
        keep_bytes: HOOK_STDERR_MAX_BYTES,
    };
    let started = Instant::now();
    let finished = match spawn::run(spec, limits, cancel) {
        Ok(finished) => finished,
        Err(spawn) => {
            return HookRun::failed(format!(
                "the hook {program:?} did not start: {}",
                wicket_tools::tools::run::not_started(spawn).message
            ));
        }
    };
    let mut run = HookRun {
        outcome: HookOutcome::Pass,
        exit_code: finished.code(),
        stderr: finished.stderr.0.clone(),
        stdout: finished.stdout.0.clone(),
        context: None,
        duration: started.elapsed(),
    };
    if finished.timed_out {
        run.outcome = HookOutcome::Error;
        run.stderr = format!(
            "the hook {program:?} ran longer than its {} s timeout and was killed",
            timeout.as_secs()
        );
        return run;
    }
    match finished.code() {
        Some(0) => read_reply(hook.event, &mut run),
        Some(2) => run.outcome = HookOutcome::Block,
        Some(_) => run.outcome = HookOutcome::Error,
        None => {
            run.outcome = HookOutcome::Error;
            run.stderr = format!(
                "the hook {program:?} was killed by signal {}",
                finished.signal().unwrap_or(0)
            );
        }
    }
    run
}

/// What an exit 0 says on its stdout, read as Claude Code reads it.
fn read_reply(event: HookEvent, run: &mut HookRun) {
    let text = run.stdout.trim();
    let plain_context = matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart);
    if !text.starts_with('{') {
        if plain_context && !text.is_empty() {
            run.context = Some(text.to_string());
        }
        return;
    }
    let Ok(reply) = serde_json::from_str::<serde_json::Value>(text) else {
        run.outcome = HookOutcome::Error;
        run.stderr = format!(
            "its stdout starts like JSON but is not: {}",
            wicket_protocol::text::head_tail(text, 200)
        );
        return;
    };
    let said = |value: &serde_json::Value, key: &str| {
        value.get(key).and_then(|v| v.as_str()).map(str::to_string)
    };
    let specific = reply.get("hookSpecificOutput").cloned().unwrap_or_default();
    run.context =
        said(&specific, "additionalContext").or_else(|| said(&reply, "additionalContext"));
    let reason = said(&specific, "permissionDecisionReason")
        .or_else(|| said(&reply, "reason"))
        .or_else(|| said(&reply, "stopReason"));
    let decision = said(&specific, "permissionDecision").or_else(|| said(&reply, "decision"));
    run.outcome = match decision.as_deref() {
        Some("block" | "deny") => HookOutcome::Block,
        Some("allow" | "approve") if event == HookEvent::PreToolUse => HookOutcome::Allow,
        Some("ask") if event == HookEvent::PreToolUse => HookOutcome::Ask,
        _ if reply.get("continue") == Some(&serde_json::Value::Bool(false)) => HookOutcome::Block,
        _ => HookOutcome::Pass,
    };
    if let Some(reason) = reason {
        run.stderr = reason;
    }
}

/// A run with its failure read through `on_error`: a failure that blocks
/// is a block whose reason says the hook failed; one that is ignored passes.
pub fn settled(hook: &Hook, run: &HookRun) -> HookOutcome {
    match (run.outcome, hook.on_error) {
        (HookOutcome::Error, crate::config::OnError::Block) => HookOutcome::Block,
        (HookOutcome::Error, crate::config::OnError::Ignore) => HookOutcome::Pass,
        (outcome, _) => outcome,
    }
}

/// What the model reads of a hook's note beside a result or a message.
pub fn note(name: &str, text: &str) -> String {
    format!("[hook {name}] {text}")
}

/// The note a hook's run leaves for the model, live and rebuilt from its
/// event alike: its `additionalContext`, and for a PostToolUse block (the
/// call already ran) its reason.
pub fn model_note(
    event: HookEvent,
    name: &str,
    outcome: HookOutcome,
    ignored: bool,
    stderr: &str,
    context: Option<&str>,
) -> Option<String> {
    let mut said = Vec::new();
    if let Some(context) = context.filter(|context| !context.trim().is_empty()) {
        said.push(context.trim().to_string());
    }
    let blocked = outcome == HookOutcome::Block || (outcome == HookOutcome::Error && !ignored);
    if event == HookEvent::PostToolUse && blocked && !stderr.trim().is_empty() {
        said.push(stderr.trim().to_string());
    }
    (!said.is_empty()).then(|| note(name, &said.join("\n")))
}

/// The head of a hook's stdout, as its event keeps it.
pub fn stdout_head(stdout: &str) -> String {
    wicket_protocol::text::head_tail(stdout, HOOK_STDOUT_SHOWN_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_reaches_a_hook_in_claude_codes_names_and_shapes() {
        let ws = std::path::Path::new("/w");
        let call = |tool: &str, input: serde_json::Value| {
            serde_json::Value::Object(claude_code_call(tool, &input, ws))
        };
        let bash = call(
            "run",
            serde_json::json!({"argv": ["rm", "-f", "a b.txt"], "timeout_s": 30}),
        );
        assert_eq!(bash["tool_name"], "Bash");
        assert_eq!(bash["tool_input"]["command"], "rm -f 'a b.txt'");
        assert_eq!(bash["tool_input"]["timeout"], 30_000);
        assert_eq!(bash["wicket_tool"], "run");
        assert_eq!(bash["wicket_input"]["argv"][0], "rm");
        let edit = call(
            "search_replace",
            serde_json::json!({"path": "src/a.rs", "old": "x", "new": "y"}),
        );
        assert_eq!(edit["tool_name"], "Edit");
        assert_eq!(edit["tool_input"]["file_path"], "/w/src/a.rs");
        assert_eq!(edit["tool_input"]["old_string"], "x");
        assert_eq!(edit["tool_input"]["new_string"], "y");
        let write = call(
            "write_file",
            serde_json::json!({"path": "/etc/x", "content": "c"}),
        );
        assert_eq!(write["tool_name"], "Write");
        assert_eq!(write["tool_input"]["file_path"], "/etc/x");
        assert_eq!(write["tool_input"]["content"], "c");
        assert_eq!(
            call("read_file", serde_json::json!({"path": "a"}))["tool_name"],
            "Read"
        );
        assert_eq!(
            call("list_dir", serde_json::json!({}))["tool_input"]["path"],
            "/w"
        );
        let grep = call("grep", serde_json::json!({"pattern": "fn"}));
        assert_eq!(grep["tool_input"]["pattern"], "fn");
        let mcp = call("mcp__git__status", serde_json::json!({"repo": "."}));
        assert_eq!(mcp["tool_name"], "mcp__git__status");
        assert_eq!(mcp["tool_input"]["repo"], ".");
    }
    use crate::config::{OnError, Owner};

    fn hook(command: &[&str], timeout_s: Option<u64>) -> Hook {
        Hook {
            event: HookEvent::Stop,
            name: "h".into(),
            matcher: None,
            command: command.iter().map(|s| s.to_string()).collect(),
            timeout_s,
            on_error: OnError::Block,
            owner: Owner::Home,
        }
    }

    fn run(hook: &Hook) -> HookRun {
        let input = serde_json::json!({"result": "done"});
        run_hook(
            hook,
            Cwd::Path(std::env::temp_dir()),
            &input,
            Confine::none(),
            &Cancel::default(),
        )
    }

    /// What an exit 0 with `stdout` comes to, for `event`.
    fn reply(event: HookEvent, stdout: &str) -> HookRun {
        let mut run = HookRun {
            outcome: HookOutcome::Pass,
            exit_code: Some(0),
            stderr: String::new(),
            stdout: stdout.into(),
            context: None,
            duration: Duration::ZERO,
        };
        read_reply(event, &mut run);
        run
    }

    #[test]
    fn claude_code_replies_are_read_as_claude_code_reads_them() {
        let specific = |decision: &str| {
            serde_json::json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                "permissionDecision": decision, "permissionDecisionReason": "because",
                "additionalContext": "note"}})
            .to_string()
        };
        let deny = reply(HookEvent::PreToolUse, &specific("deny"));
        assert_eq!(
            (deny.outcome, deny.stderr.as_str(), deny.context.as_deref()),
            (HookOutcome::Block, "because", Some("note"))
        );
        assert_eq!(
            reply(HookEvent::PreToolUse, &specific("allow")).outcome,
            HookOutcome::Allow
        );
        assert_eq!(
            reply(HookEvent::PreToolUse, &specific("ask")).outcome,
            HookOutcome::Ask
        );
        // Only PreToolUse can allow or ask.
        assert_eq!(
            reply(HookEvent::PostToolUse, &specific("allow")).outcome,
            HookOutcome::Pass
        );
        let block = reply(
            HookEvent::Stop,
            r#"{"decision": "block", "reason": "tests fail"}"#,
        );
        assert_eq!(
            (block.outcome, block.stderr.as_str()),
            (HookOutcome::Block, "tests fail")
        );
        assert_eq!(
            reply(HookEvent::Stop, r#"{"continue": false}"#).outcome,
            HookOutcome::Block
        );
        assert_eq!(
            reply(HookEvent::PreToolUse, "{}").outcome,
            HookOutcome::Pass
        );
        assert_eq!(
            reply(HookEvent::PreToolUse, "{not json").outcome,
            HookOutcome::Error
        );
        // Plain stdout is context where Claude Code reads it so, and nothing elsewhere.
        assert_eq!(
            reply(HookEvent::UserPromptSubmit, "today is Friday\n")
                .context
                .as_deref(),
            Some("today is Friday")
        );
        assert_eq!(
            reply(HookEvent::PreToolUse, "hello").outcome,
            HookOutcome::Pass
        );
        assert_eq!(reply(HookEvent::PreToolUse, "hello").context, None);
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
