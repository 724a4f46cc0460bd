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
    pub matcher: Option<ToolMatcher>,
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
        self.matcher
            .as_ref()
            .is_none_or(|matcher| matcher.matches(tool))
    }
}

/// A hook's `matcher`, compiled once when the config loads: it is asked
/// for every tool call, and a pattern that is not a regex is the config's
/// error, not a hook that silently never runs.
#[derive(Clone)]
pub struct ToolMatcher {
    /// As written, for comparing and showing.
    pattern: String,
    /// The pattern anchored at both ends, so it matches the whole name.
    regex: regex::Regex,
}

impl ToolMatcher {
    /// The matcher a pattern stands for, or why it is not a regex.
    pub fn new(pattern: &str) -> std::result::Result<ToolMatcher, regex::Error> {
        // `*` alone is Claude Code's "every tool", and no regex: it is
        // compiled as the regex that matches anything.
        let regex = match pattern {
            "*" => regex::Regex::new(".*")?,
            _ => regex::Regex::new(&format!("^(?:{pattern})$"))?,
        };
        Ok(ToolMatcher {
            regex,
            pattern: pattern.to_string(),
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.pattern
    }

    /// Whether `tool`, or one of Claude Code's names for it, matches;
    /// `""` and `"*"` match every tool, as in Claude Code.
    pub fn matches(&self, tool: &str) -> bool {
        matches!(self.pattern.as_str(), "" | "*")
            || self.regex.is_match(tool)
            || claude_names(tool)
                .iter()
                .any(|name| self.regex.is_match(name))
    }
}

/// Two matchers are the same when their patterns are: a compiled regex
/// cannot be compared, and it follows from the pattern.
impl PartialEq for ToolMatcher {
    fn eq(&self, other: &ToolMatcher) -> bool {
        self.pattern == other.pattern
    }
}

impl Eq for ToolMatcher {}

/// Shown as its pattern: the compiled regex adds nothing a reader needs.
impl std::fmt::Debug for ToolMatcher {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.pattern.fmt(formatter)
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
                let matcher = table
                    .matcher
                    .as_deref()
                    .map(|pattern| {
                        ToolMatcher::new(pattern).map_err(|error| {
                            format!("[[hooks.{key}]] matcher {pattern:?} is not a regex: {error}")
                        })
                    })
                    .transpose()?;
                let mut hook = Hook::new(event, table.command, table.timeout_s, owner);
                if let Some(name) = table.name {
                    hook.name = name;
                }
                hook.matcher = matcher;
                if let Some(on_error) = table.on_error {
                    hook.on_error = on_error;
                }
                hooks.push(hook);
            }
        }
        Ok(hooks)
    }
}
