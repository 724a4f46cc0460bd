//! The `[[hooks.EVENT]]` tables of both configs, read into the hooks a
//! session runs: each checked when the config loads.

use serde::Deserialize;

use super::Owner;

/// What a hook's failure (an exit other than 0 and 2, a signal, a
/// timeout, output that is not what it should be) does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnError {
    /// It counts as a block: a policy hook that crashes fails closed.
    Block,
    /// It is logged and the call (or prompt, or turn) goes on.
    Ignore,
}

/// One `[[hooks.<event>]]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hook {
    /// When it runs.
    pub event: wicket_protocol::HookEvent,
    /// Its name (`name`, else its argv), as `allowed_by` and the log name it.
    pub name: String,
    /// A regex on the tool name, matched whole (`run|write_file`,
    /// `mcp__git__.*`); none, `""` or `"*"` matches every tool.
    pub matcher: Option<String>,
    /// The argv, run with no shell, in the workspace.
    pub command: Vec<String>,
    /// Seconds before it is stopped.
    pub timeout_s: Option<u64>,
    /// What its failure does.
    pub on_error: OnError,
    /// Which config declared it.
    pub owner: Owner,
}

/// A Stop hook (`[[hooks.stop]]`): a [`Hook`] whose event is Stop.
pub type StopHook = Hook;

impl Hook {
    /// A hook of `event` with the defaults of a table that gives only its
    /// command and timeout: named by its argv, every tool, and failing
    /// closed where it guards something (a call, a prompt, a turn's end).
    pub fn new(
        event: wicket_protocol::HookEvent,
        command: Vec<String>,
        timeout_s: Option<u64>,
        owner: Owner,
    ) -> Hook {
        use wicket_protocol::HookEvent;
        let guards = matches!(
            event,
            HookEvent::PreToolUse | HookEvent::UserPromptSubmit | HookEvent::Stop
        );
        Hook {
            event,
            name: wicket_protocol::text::shell_words(&command),
            matcher: None,
            command,
            timeout_s,
            on_error: if guards {
                OnError::Block
            } else {
                OnError::Ignore
            },
            owner,
        }
    }

    /// Whether it runs for `tool` (a tool's name; MCP tools as `mcp__S__T`;
    /// Claude Code's names for the same tools match too: `Bash` is `run`).
    pub fn matches(&self, tool: &str) -> bool {
        match self.matcher.as_deref() {
            None | Some("" | "*") => true,
            Some(pattern) => regex::Regex::new(&format!("^(?:{pattern})$")).is_ok_and(|matcher| {
                matcher.is_match(tool)
                    || claude_names(tool).iter().any(|name| matcher.is_match(name))
            }),
        }
    }
}

/// Claude Code's names for one of Wicket's tools, so that a matcher written
/// for Claude Code (`Bash`, `Edit|Write`, `LS|Glob`) matches here too; the
/// first is the name a hook's input gives ([`crate::hooks::claude_code_call`]).
pub fn claude_names(tool: &str) -> &'static [&'static str] {
    match tool {
        "run" => &["Bash"],
        "write_file" => &["Write"],
        "search_replace" => &["Edit", "MultiEdit"],
        "read_file" => &["Read"],
        "grep" => &["Grep"],
        "list_dir" => &["LS", "Glob"],
        _ => &[],
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileHook {
    command: Vec<String>,
    timeout_s: Option<u64>,
    name: Option<String>,
    matcher: Option<String>,
    on_error: Option<OnError>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Hooks {
    #[serde(default)]
    stop: Vec<FileHook>,
    #[serde(default)]
    pre_tool_use: Vec<FileHook>,
    #[serde(default)]
    post_tool_use: Vec<FileHook>,
    #[serde(default)]
    user_prompt_submit: Vec<FileHook>,
    #[serde(default)]
    session_start: Vec<FileHook>,
    #[serde(default)]
    session_end: Vec<FileHook>,
    #[serde(default)]
    notification: Vec<FileHook>,
}

impl Hooks {
    /// Every table, checked: a matcher must be a regex, a command an argv.
    pub(super) fn checked(self, owner: Owner) -> std::result::Result<Vec<Hook>, String> {
        use wicket_protocol::HookEvent;
        let tables = [
            (HookEvent::Stop, "stop", self.stop),
            (HookEvent::PreToolUse, "pre_tool_use", self.pre_tool_use),
            (HookEvent::PostToolUse, "post_tool_use", self.post_tool_use),
            (
                HookEvent::UserPromptSubmit,
                "user_prompt_submit",
                self.user_prompt_submit,
            ),
            (HookEvent::SessionStart, "session_start", self.session_start),
            (HookEvent::SessionEnd, "session_end", self.session_end),
            (HookEvent::Notification, "notification", self.notification),
        ];
        let mut hooks = Vec::new();
        for (event, key, tables) in tables {
            for table in tables {
                if table.command.is_empty() {
                    return Err(format!(
                        "[[hooks.{key}]] has an empty command; give an argv like [\"make\", \"check\"]"
                    ));
                }
                if let Some(pattern) = &table.matcher
                    && let Err(error) = regex::Regex::new(&format!("^(?:{pattern})$"))
                {
                    return Err(format!(
                        "[[hooks.{key}]] matcher {pattern:?} is not a regex: {error}"
                    ));
                }
                let mut hook = Hook::new(event, table.command, table.timeout_s, owner);
                if let Some(name) = table.name {
                    hook.name = name;
                }
                hook.matcher = table.matcher;
                if let Some(on_error) = table.on_error {
                    hook.on_error = on_error;
                }
                hooks.push(hook);
            }
        }
        Ok(hooks)
    }
}
