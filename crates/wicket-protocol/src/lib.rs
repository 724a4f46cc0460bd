//! The serde types Wicket's parts exchange, with no I/O: the tool calls a model
//! makes ([`ToolCall`]), their results ([`ToolOutput`]), and the wire error
//! ([`WireError`] with its [`ErrorKind`]). Start from [`ToolCall`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The error kinds of the contract (DESIGN.md, "The contract that outside tests use").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    OutsideWorkspace,
    Denied,
    NotFound,
    TooLarge,
    NotUnique,
    NoMatch,
    SpecialFile,
    InvalidArgs,
    Stale,
    Io,
    /// A Stop hook blocked `finish`; the hook's stderr says why.
    Blocked,
    /// The turn was cancelled before this call ran or finished.
    Cancelled,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::OutsideWorkspace => "outside_workspace",
            ErrorKind::Denied => "denied",
            ErrorKind::NotFound => "not_found",
            ErrorKind::TooLarge => "too_large",
            ErrorKind::NotUnique => "not_unique",
            ErrorKind::NoMatch => "no_match",
            ErrorKind::SpecialFile => "special_file",
            ErrorKind::InvalidArgs => "invalid_args",
            ErrorKind::Stale => "stale",
            ErrorKind::Io => "io",
            ErrorKind::Blocked => "blocked",
            ErrorKind::Cancelled => "cancelled",
        }
    }
}

/// An error as it goes on the wire: `{"kind": "...", "message": "..."}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireError {
    pub kind: ErrorKind,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileArgs {
    /// The file, relative to the workspace (or an absolute path outside it, which asks the person).
    pub path: String,
    /// The byte offset to start at (from a previous read's next_offset).
    #[serde(default)]
    pub offset: Option<u64>,
    /// The 1-based line to start at (from a previous read's next_line).
    #[serde(default)]
    pub line: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrepArgs {
    /// A regular expression (Rust regex syntax).
    pub pattern: String,
    /// A folder or file to search in; the whole workspace when absent.
    #[serde(default)]
    pub path: Option<String>,
    /// Only files whose path matches this glob, such as "*.rs".
    #[serde(default)]
    pub glob: Option<String>,
    #[serde(default)]
    pub case_insensitive: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListDirArgs {
    /// The folder; the workspace root when absent.
    #[serde(default)]
    pub path: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchReplaceArgs {
    /// The file to edit.
    pub path: String,
    /// The exact text to find; it must occur exactly once unless replace_all.
    pub old: String,
    /// The text to put in its place.
    pub new: String,
    /// Replace every occurrence instead of requiring exactly one.
    #[serde(default)]
    pub replace_all: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFileArgs {
    /// The file to create or replace; missing folders are created.
    pub path: String,
    /// The whole new content (at most 256 KiB).
    pub content: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunArgs {
    /// The program and its arguments; there is no shell, so no pipes or globs
    /// unless you run ["sh", "-c", "..."] yourself.
    pub argv: Vec<String>,
    /// The folder to run in, inside the workspace; the workspace root when absent.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Seconds before the command is killed: 120 by default, 600 at most.
    #[serde(default)]
    pub timeout_s: Option<u64>,
}

/// One call of one of the six tools, parsed from the model's JSON at the edge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "name", content = "arguments", rename_all = "snake_case")]
pub enum ToolCall {
    ReadFile(ReadFileArgs),
    Grep(GrepArgs),
    ListDir(ListDirArgs),
    SearchReplace(SearchReplaceArgs),
    WriteFile(WriteFileArgs),
    Run(RunArgs),
}

/// The names of the six tools, in the spec's order.
pub const TOOL_NAMES: [&str; 6] = [
    "read_file",
    "grep",
    "list_dir",
    "search_replace",
    "write_file",
    "run",
];

impl ToolCall {
    /// Parses a tool call from its name and JSON arguments, as a model sends them.
    pub fn parse(name: &str, arguments: serde_json::Value) -> Result<ToolCall, WireError> {
        if !TOOL_NAMES.contains(&name) {
            return Err(WireError {
                kind: ErrorKind::InvalidArgs,
                message: format!(
                    "there is no tool '{name}'; the tools are {}",
                    TOOL_NAMES.join(", ")
                ),
            });
        }
        let tagged = serde_json::json!({ "name": name, "arguments": arguments });
        serde_json::from_value(tagged).map_err(|error| WireError {
            kind: ErrorKind::InvalidArgs,
            message: format!("bad arguments for {name}: {error}"),
        })
    }

    pub fn name(&self) -> &'static str {
        match self {
            ToolCall::ReadFile(_) => "read_file",
            ToolCall::Grep(_) => "grep",
            ToolCall::ListDir(_) => "list_dir",
            ToolCall::SearchReplace(_) => "search_replace",
            ToolCall::WriteFile(_) => "write_file",
            ToolCall::Run(_) => "run",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadFileOutput {
    pub content: String,
    pub size: u64,
    /// The byte offset the content starts at (a character boundary).
    pub offset: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_line: Option<u64>,
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub binary: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrepOutput {
    pub matches: Vec<String>,
    pub truncated: bool,
    /// When truncated, the line that says where it stopped.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListDirOutput {
    pub entries: Vec<String>,
    pub omitted: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteOutput {
    /// The resolved absolute path that was written.
    pub path: String,
    pub bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunOutput {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
    pub stdout_cut: u64,
    pub stderr_cut: u64,
    pub duration_ms: u64,
}

/// What a tool returns when it ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolOutput {
    ReadFile(ReadFileOutput),
    Grep(GrepOutput),
    ListDir(ListDirOutput),
    Write(WriteOutput),
    Run(RunOutput),
}

/// The result line of `wicket tool`: `{"type":"result","ok":true,...}` or
/// `{"type":"result","ok":false,"error":{...}}`.
pub fn result_line(result: &Result<ToolOutput, WireError>) -> serde_json::Value {
    match result {
        Ok(output) => {
            let mut value = serde_json::to_value(output).unwrap_or_default();
            if let Some(map) = value.as_object_mut() {
                map.insert("ok".into(), true.into());
                map.insert("type".into(), "result".into());
            }
            value
        }
        Err(error) => serde_json::json!({ "type": "result", "ok": false, "error": error }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_known_tools_and_rejects_unknown_ones() {
        let call = ToolCall::parse("read_file", serde_json::json!({"path": "a", "line": 3}));
        assert_eq!(
            call,
            Ok(ToolCall::ReadFile(ReadFileArgs {
                path: "a".into(),
                offset: None,
                line: Some(3)
            }))
        );
        let error = ToolCall::parse("rm", serde_json::json!({})).unwrap_err();
        assert_eq!(error.kind, ErrorKind::InvalidArgs);
        let error = ToolCall::parse("run", serde_json::json!({"argv": "ls"})).unwrap_err();
        assert_eq!(error.kind, ErrorKind::InvalidArgs);
        let error = ToolCall::parse("list_dir", serde_json::json!({"pth": "x"})).unwrap_err();
        assert!(error.message.contains("pth"), "{}", error.message);
    }

    #[test]
    fn result_lines_have_the_contract_shape() {
        let ok = result_line(&Ok(ToolOutput::Grep(GrepOutput {
            matches: vec!["a:1:x".into()],
            truncated: false,
            note: None,
        })));
        assert_eq!(
            ok,
            serde_json::json!({"type":"result","ok":true,"matches":["a:1:x"],"truncated":false})
        );
        let err = result_line(&Err(WireError {
            kind: ErrorKind::Denied,
            message: "no".into(),
        }));
        assert_eq!(err["error"]["kind"], "denied");
        assert_eq!(err["ok"], false);
    }
}

/// A person's answer to a card.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    AllowOnce,
    AllowSession,
    Deny,
}

impl Answer {
    pub fn as_str(self) -> &'static str {
        match self {
            Answer::AllowOnce => "allow_once",
            Answer::AllowSession => "allow_session",
            Answer::Deny => "deny",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CardKind {
    Write,
    OutsideRead,
    Run,
}

/// A permission card: what the person is asked to allow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Card {
    pub id: String,
    pub kind: CardKind,
    /// The tool call the card is for.
    pub tool: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub argv: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cwd: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub timeout_s: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub diff: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub diff_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub diff_truncated: Option<bool>,
    /// SHA-256 (hex) of the bytes on disk when the card went up, or "absent".
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub digest: Option<String>,
}

/// The body of one `log.jsonl` event; `seq`, `ts` and `type` wrap it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventBody {
    SessionStarted {
        session: String,
        workspace: String,
    },
    ToolCall {
        call_id: String,
        name: String,
        arguments: serde_json::Value,
    },
    ToolResult {
        call_id: String,
        ok: bool,
        #[serde(skip_serializing_if = "Option::is_none", default)]
        output: Option<serde_json::Value>,
        #[serde(skip_serializing_if = "Option::is_none", default)]
        error: Option<WireError>,
    },
    Card {
        call_id: String,
        #[serde(flatten)]
        card: Card,
        /// Every byte that was proposed for a write, whatever the card shows.
        #[serde(skip_serializing_if = "Option::is_none", default)]
        proposed: Option<String>,
    },
    Answer {
        card: String,
        answer: Answer,
        /// True when the file changed after the card went up: the answer was dropped.
        #[serde(skip_serializing_if = "std::ops::Not::not", default)]
        stale: bool,
    },
    /// What the person asked; a turn starts with it.
    UserMessage {
        text: String,
    },
    /// One model reply: its text and the tool calls it made, with their raw
    /// argument text exactly as the model sent it.
    AssistantMessage {
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<AssistantToolCall>,
        #[serde(default)]
        usage: Usage,
    },
    /// The model's `ask`: the session waits for a reply.
    Question {
        id: String,
        call_id: String,
        question: String,
    },
    Reply {
        question: String,
        reply: String,
    },
    /// The turn's result (from `finish`, or a reply with no tool call),
    /// after the Stop hooks passed; `usage` is the turn's total.
    Result {
        text: String,
        #[serde(default)]
        usage: Usage,
    },
    /// One Stop hook's run: `pass`, `block` (exit 2) or `error` (fail closed).
    Hook {
        /// The `finish` call the hook judged; none when the turn ended with a
        /// reply that had no tool call (then a block goes back as a user message).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
        command: Vec<String>,
        outcome: HookOutcome,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        stderr: String,
    },
    /// A message sent while a turn ran; it starts when the turn ends.
    Queued {
        text: String,
    },
    /// The chat client is retrying a request.
    Retry {
        attempt: u32,
        delay_ms: u64,
        reason: String,
    },
    /// The turn was cancelled; every call without a result has a synthetic one before this.
    Cancelled {},
    Error {
        message: String,
        /// True when this error ended the turn.
        #[serde(skip_serializing_if = "std::ops::Not::not", default)]
        ends_turn: bool,
    },
}

impl EventBody {
    /// An error that does not end the turn.
    pub fn error(message: impl Into<String>) -> EventBody {
        EventBody::Error {
            message: message.into(),
            ends_turn: false,
        }
    }
}

/// A tool call as the model made it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssistantToolCall {
    pub id: String,
    pub name: String,
    /// The raw JSON text of the arguments; it may not even be JSON.
    pub arguments: String,
}

/// Tokens a reply (or a turn, or a session) used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl Usage {
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookOutcome {
    Pass,
    Block,
    Error,
}

/// One line of `log.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub seq: u64,
    pub ts: String,
    #[serde(flatten)]
    pub body: EventBody,
}

/// `ask`: a question for the person; the turn waits for the reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskArgs {
    /// The question, as the person should read it.
    pub question: String,
}

/// `finish`: ends the turn once the Stop hooks pass.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FinishArgs {
    /// What was done, for the person.
    pub result: String,
}

/// `use_skill`: returns a skill's instructions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UseSkillArgs {
    /// The skill's name, as the system prompt lists it.
    pub name: String,
}

/// The core tools beside the six: they act on the turn, not the workspace.
pub const CORE_TOOL_NAMES: [&str; 3] = ["ask", "finish", "use_skill"];

/// One tool as a model is told about it: the JSON Schema comes from the very
/// type that parses the tool's arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSchema {
    pub name: &'static str,
    pub description: &'static str,
    pub parameters: serde_json::Value,
}

fn schema_of<T: JsonSchema>() -> serde_json::Value {
    let mut value = serde_json::to_value(schemars::schema_for!(T)).unwrap_or_default();
    if let Some(map) = value.as_object_mut() {
        map.remove("$schema");
        map.remove("title");
        map.remove("description");
    }
    value
}

/// The nine tools of a turn, in the spec's order.
pub fn tool_schemas() -> Vec<ToolSchema> {
    vec![
        ToolSchema {
            name: "read_file",
            description: "Read a file: up to 32 KiB from a byte offset or a 1-based line. When there is more, the result gives next_offset or next_line to continue from.",
            parameters: schema_of::<ReadFileArgs>(),
        },
        ToolSchema {
            name: "grep",
            description: "Search file contents with a regular expression; returns up to 200 matches as path:line:text, in path order, honouring .gitignore.",
            parameters: schema_of::<GrepArgs>(),
        },
        ToolSchema {
            name: "list_dir",
            description: "List one folder level (up to 500 names); folders end in '/', links are named as links.",
            parameters: schema_of::<ListDirArgs>(),
        },
        ToolSchema {
            name: "search_replace",
            description: "Replace an exact string in a file (at most 256 KiB). The person sees the diff and approves it before anything is written.",
            parameters: schema_of::<SearchReplaceArgs>(),
        },
        ToolSchema {
            name: "write_file",
            description: "Create or replace a whole file (at most 256 KiB). The person sees the diff and approves it before anything is written.",
            parameters: schema_of::<WriteFileArgs>(),
        },
        ToolSchema {
            name: "run",
            description: "Run a command (an argv, no shell) in the workspace after the person approves it. Returns exit_code, stdout and stderr (64 KiB of each, head and tail).",
            parameters: schema_of::<RunArgs>(),
        },
        ToolSchema {
            name: "ask",
            description: "Ask the person a question and wait for the reply. Use it when you need a decision only they can make.",
            parameters: schema_of::<AskArgs>(),
        },
        ToolSchema {
            name: "finish",
            description: "End the turn with a summary of what was done. Checks configured by the person may run first and can send you back to work.",
            parameters: schema_of::<FinishArgs>(),
        },
        ToolSchema {
            name: "use_skill",
            description: "Load the instructions of one of the skills the system prompt lists.",
            parameters: schema_of::<UseSkillArgs>(),
        },
    ]
}

#[cfg(test)]
mod schema_tests {
    use super::*;

    #[test]
    fn every_tool_has_an_object_schema_from_its_args_type() {
        let schemas = tool_schemas();
        let names: Vec<&str> = schemas.iter().map(|s| s.name).collect();
        let mut expected: Vec<&str> = TOOL_NAMES.to_vec();
        expected.extend(CORE_TOOL_NAMES);
        assert_eq!(names, expected);
        for schema in &schemas {
            assert_eq!(schema.parameters["type"], "object", "{}", schema.name);
        }
        let run = &schemas[5].parameters;
        assert_eq!(run["required"], serde_json::json!(["argv"]));
        assert_eq!(run["properties"]["argv"]["type"], "array");
        assert!(
            run["properties"]["timeout_s"]["description"]
                .as_str()
                .is_some_and(|d| d.contains("600"))
        );
        assert_eq!(schemas[0].parameters["additionalProperties"], false);
    }
}
