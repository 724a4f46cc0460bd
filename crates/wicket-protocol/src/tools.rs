//! The calls a model makes and what they return: the six workspace tools
//! ([`ToolCall`]), the three turn tools ([`CoreCall`]), both parsed at the
//! edge by [`Call::parse`], and their outputs ([`ToolOutput`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{ErrorKind, WireError};
use crate::event::is_zero;
use crate::limits::{ARGUMENTS_MAX_DEPTH, RUN_STREAM_MAX_BYTES};

/// read_file's arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileArgs {
    /// The file, relative to the workspace (or an absolute path outside it, which asks the person).
    #[serde(alias = "file_path")]
    pub path: String,
    /// The byte offset to start at (from a previous read's next_offset).
    #[serde(default)]
    pub offset: Option<u64>,
    /// The 1-based line to start at (from a previous read's next_line).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub line: Option<u64>,
    /// At most this many lines (the read still stops at its byte limit).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub limit: Option<u64>,
}

/// grep's arguments.
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
    /// Match without regard to case.
    #[serde(default)]
    pub case_insensitive: bool,
}

/// list_dir's arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListDirArgs {
    /// The folder; the workspace root when absent.
    #[serde(default)]
    pub path: Option<String>,
}

/// search_replace's arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchReplaceArgs {
    /// The file to edit.
    #[serde(alias = "file_path")]
    pub path: String,
    /// The exact text to find; it must occur exactly once unless replace_all.
    #[serde(alias = "old_string", alias = "old_str")]
    pub old: String,
    /// The text to put in its place.
    #[serde(alias = "new_string", alias = "new_str")]
    pub new: String,
    /// Replace every occurrence instead of requiring exactly one.
    #[serde(default)]
    pub replace_all: bool,
}

/// write_file's arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFileArgs {
    /// The file to create or replace; missing folders are created.
    #[serde(alias = "file_path")]
    pub path: String,
    /// The whole new content.
    pub content: String,
}

/// run's arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunArgs {
    /// The program and its arguments; there is no shell, so no pipes or globs
    /// unless you run ["sh", "-c", "..."] yourself.
    pub argv: Vec<String>,
    /// The folder to run in, inside the workspace; the workspace root when absent.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Seconds before the command is killed.
    #[serde(default)]
    pub timeout_s: Option<u64>,
    /// Ask for network access (the person sees it on the card); in the
    /// jail commands have none without it. true: through Wicket's proxy
    /// (HTTP_PROXY, HTTPS_PROXY and ALL_PROXY are set; the person approves
    /// each new host); "direct": the machine's own network.
    #[serde(default, skip_serializing_if = "Network::is_off")]
    pub network: Network,
    /// Ask to write .git (needed for git commit, checkout, branch; the
    /// person sees it on the card); in the jail .git is read-only without it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub git: bool,
    /// Paths outside the workspace to show the command read-only (absolute
    /// or `~/…`; the person sees them on the card). In the jail a command
    /// sees of the home folders only the toolchains without them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read: Vec<String>,
    /// Ask to preview it: it runs first over a copy-on-write layer of the
    /// workspace, with no network, and the person sees what it changed and
    /// applies or discards that (their card says you asked).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub preview: bool,
}

/// The network a command asks for: on the wire `false`, `true` (through
/// Wicket's proxy, each host decided in the gate) or `"direct"` (the
/// host's own network, around Wicket).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Network {
    /// No network: only the jail's own loopback.
    #[default]
    Off,
    /// Through Wicket: each new host is a decision, each connection counted.
    Proxied,
    /// The host's network as it is, not through Wicket.
    Direct,
}

impl Network {
    /// No network at all.
    pub fn is_off(&self) -> bool {
        *self == Network::Off
    }

    /// Some network, proxied or direct.
    pub fn any(self) -> bool {
        self != Network::Off
    }

    /// The wire word (`false`, `true`, `"direct"`) as text.
    pub fn as_str(self) -> &'static str {
        match self {
            Network::Off => "false",
            Network::Proxied => "true",
            Network::Direct => "direct",
        }
    }
}

impl From<bool> for Network {
    fn from(network: bool) -> Network {
        if network {
            Network::Proxied
        } else {
            Network::Off
        }
    }
}

impl Serialize for Network {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Network::Off => serializer.serialize_bool(false),
            Network::Proxied => serializer.serialize_bool(true),
            Network::Direct => serializer.serialize_str("direct"),
        }
    }
}

impl<'de> Deserialize<'de> for Network {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Network, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Wire {
            Flag(bool),
            Word(String),
        }
        match Wire::deserialize(deserializer)? {
            Wire::Flag(flag) => Ok(Network::from(flag)),
            Wire::Word(word) if word == "direct" => Ok(Network::Direct),
            Wire::Word(word) => Err(serde::de::Error::custom(format!(
                "network is true, false or \"direct\", not \"{word}\""
            ))),
        }
    }
}

impl JsonSchema for Network {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Network".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "anyOf": [{"type": "boolean"}, {"type": "string", "enum": ["direct"]}]
        })
    }
}

/// One call of one of the six tools, parsed from the model's JSON at the edge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "name", content = "arguments", rename_all = "snake_case")]
pub enum ToolCall {
    /// read_file
    ReadFile(ReadFileArgs),
    /// grep
    Grep(GrepArgs),
    /// list_dir
    ListDir(ListDirArgs),
    /// search_replace
    SearchReplace(SearchReplaceArgs),
    /// write_file
    WriteFile(WriteFileArgs),
    /// run
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

/// The core tools beside the six: they act on the turn, not the workspace.
pub const CORE_TOOL_NAMES: [&str; 5] = ["ask", "finish", "use_skill", "propose_plan", "task"];

/// How deep a JSON value nests (a scalar is 0).
pub fn depth(value: &serde_json::Value) -> usize {
    // Iterative, so a hostile value cannot overflow the stack here either.
    let mut deepest = 0;
    let mut stack = vec![(value, 0usize)];
    while let Some((value, level)) = stack.pop() {
        deepest = deepest.max(level);
        match value {
            serde_json::Value::Array(items) => {
                stack.extend(items.iter().map(|item| (item, level + 1)));
            }
            serde_json::Value::Object(map) => {
                stack.extend(map.values().map(|item| (item, level + 1)));
            }
            _ => {}
        }
    }
    deepest
}

/// Refuses arguments nested deeper than [`ARGUMENTS_MAX_DEPTH`].
pub fn check_depth(name: &str, arguments: &serde_json::Value) -> Result<(), WireError> {
    let found = depth(arguments);
    if found > ARGUMENTS_MAX_DEPTH {
        return Err(WireError::invalid(format!(
            "the arguments for {name} nest {found} levels deep; at most {ARGUMENTS_MAX_DEPTH} are accepted"
        )));
    }
    Ok(())
}

fn parse_args<T: serde::de::DeserializeOwned>(
    name: &str,
    arguments: serde_json::Value,
) -> Result<T, WireError> {
    check_depth(name, &arguments)?;
    serde_json::from_value(arguments)
        .map_err(|error| WireError::invalid(format!("bad arguments for {name}: {error}")))
}

/// run's arguments; a shell line given as `command` (as other agents' tools
/// take it) is answered with the argv that runs it, not a bare "missing
/// field".
fn run_args(arguments: serde_json::Value) -> Result<RunArgs, WireError> {
    if let Some(command) = arguments
        .get("command")
        .and_then(|command| command.as_str())
        && arguments.get("argv").is_none()
    {
        let example = serde_json::json!({"argv": ["sh", "-c", command]});
        return Err(WireError::invalid(format!(
            "run takes argv, the program and its arguments as a list, with no shell; \
             to run this line through a shell, call run with {example}"
        )));
    }
    parse_args("run", arguments)
}

/// Whether the tool named `name` may change the workspace's files:
/// `write_file`, `search_replace`, `run`.
pub fn changes_files(name: &str) -> bool {
    matches!(name, "write_file" | "search_replace" | "run")
}

impl ToolCall {
    /// Parses a tool call from its name and JSON arguments, as a model sends them.
    pub fn parse(name: &str, arguments: serde_json::Value) -> Result<ToolCall, WireError> {
        Ok(match name {
            "read_file" => ToolCall::ReadFile(parse_args(name, arguments)?),
            "grep" => ToolCall::Grep(parse_args(name, arguments)?),
            "list_dir" => ToolCall::ListDir(parse_args(name, arguments)?),
            "search_replace" => ToolCall::SearchReplace(parse_args(name, arguments)?),
            "write_file" => ToolCall::WriteFile(parse_args(name, arguments)?),
            "run" => ToolCall::Run(run_args(arguments)?),
            _ => {
                return Err(WireError::invalid(format!(
                    "there is no tool '{name}'; the tools are {}",
                    TOOL_NAMES.join(", ")
                )));
            }
        })
    }

    /// The tool's name.
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

    /// Whether the call may change the workspace's files (a checkpoint
    /// comes before it).
    pub fn changes_files(&self) -> bool {
        changes_files(self.name())
    }

    /// The arguments as JSON, for the log (plain structs, which always
    /// encode; [`crate::json::value`] says why if one ever did not).
    pub fn arguments(&self) -> serde_json::Value {
        match self {
            ToolCall::ReadFile(args) => crate::json::value(args),
            ToolCall::Grep(args) => crate::json::value(args),
            ToolCall::ListDir(args) => crate::json::value(args),
            ToolCall::SearchReplace(args) => crate::json::value(args),
            ToolCall::WriteFile(args) => crate::json::value(args),
            ToolCall::Run(args) => crate::json::value(args),
        }
    }
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

/// `propose_plan`: in plan mode, the plan the person approves before any
/// write or command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProposePlanArgs {
    /// The plan, in Markdown: what you will change and run, step by step.
    pub plan: String,
}

/// Which tools a sub-task is offered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskTools {
    /// read_file, grep, list_dir and finish.
    #[default]
    Read,
    /// Every tool but task, ask and propose_plan: its writes and commands
    /// raise cards as the parent's do.
    All,
}

/// One plain string enum, inline: what every provider's declarations take.
impl JsonSchema for TaskTools {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "TaskTools".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "enum": ["read", "all"]})
    }
}

impl TaskTools {
    /// Its name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskTools::Read => "read",
            TaskTools::All => "all",
        }
    }
}

/// `task`: a sub-task, a session of its own that works on `prompt` under
/// the same rules, hooks, grants and jail, and whose finish is the result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskArgs {
    /// A few words on what the sub-task is for; the person sees them on its cards.
    pub description: String,
    /// Everything the sub-task needs to know: it sees nothing of this conversation.
    pub prompt: String,
    /// `read` (read_file, grep, list_dir and finish; the default) or `all`
    /// (every tool but task, ask and propose_plan).
    #[serde(default)]
    pub tools: TaskTools,
}

/// One call of a core tool: it acts on the turn, not the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoreCall {
    /// ask
    Ask(AskArgs),
    /// finish
    Finish(FinishArgs),
    /// use_skill
    UseSkill(UseSkillArgs),
    /// propose_plan
    ProposePlan(ProposePlanArgs),
    /// task
    Task(TaskArgs),
}

/// A call of a tool an MCP server offers, named `mcp__SERVER__TOOL` to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpCall {
    /// The name the model called (`mcp__SERVER__TOOL`).
    pub name: String,
    /// The server's name in the config.
    pub server: String,
    /// The tool's own name on the server.
    pub tool: String,
    /// The arguments, passed through to the server.
    pub arguments: serde_json::Map<String, serde_json::Value>,
}

/// Any call a model makes, parsed at the edge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// One of the six workspace tools, through the gate.
    Tool(ToolCall),
    /// ask, finish or use_skill.
    Core(CoreCall),
    /// A tool of an MCP server, through the gate.
    Mcp(McpCall),
}

/// The prefix of every MCP tool name the model sees.
pub const MCP_PREFIX: &str = "mcp__";

impl Call {
    /// Parses a call from its name and the model's raw argument text. The
    /// error carries the arguments as they should be logged: the JSON
    /// value, or the raw text when it is not JSON or nests too deep.
    /// `mcp_tool` maps an `mcp__…` name to its server and tool.
    pub fn parse(
        name: &str,
        raw: &str,
        mcp_tool: &dyn Fn(&str) -> Option<(String, String)>,
    ) -> Result<Call, (serde_json::Value, WireError)> {
        let text = if raw.trim().is_empty() { "{}" } else { raw };
        let as_text = || serde_json::Value::String(raw.to_string());
        let value: serde_json::Value = serde_json::from_str(text).map_err(|_| {
            (
                as_text(),
                WireError::invalid(format!("the arguments for {name} are not valid JSON")),
            )
        })?;
        if let Err(error) = check_depth(name, &value) {
            return Err((as_text(), error));
        }
        let keep = value.clone();
        let fail = |error: WireError| (keep.clone(), error);
        match name {
            "ask" => Ok(Call::Core(CoreCall::Ask(
                parse_args(name, value).map_err(fail)?,
            ))),
            "finish" => Ok(Call::Core(CoreCall::Finish(
                parse_args(name, value).map_err(fail)?,
            ))),
            "use_skill" => Ok(Call::Core(CoreCall::UseSkill(
                parse_args(name, value).map_err(fail)?,
            ))),
            "propose_plan" => Ok(Call::Core(CoreCall::ProposePlan(
                parse_args(name, value).map_err(fail)?,
            ))),
            "task" => Ok(Call::Core(CoreCall::Task(
                parse_args(name, value).map_err(fail)?,
            ))),
            _ if name.starts_with(MCP_PREFIX) => {
                let Some((server, tool)) = mcp_tool(name) else {
                    return Err(fail(WireError::invalid(format!(
                        "there is no MCP tool '{name}' in this session"
                    ))));
                };
                let serde_json::Value::Object(arguments) = value else {
                    return Err(fail(WireError::invalid(format!(
                        "the arguments for {name} must be a JSON object"
                    ))));
                };
                Ok(Call::Mcp(McpCall {
                    name: name.to_string(),
                    server,
                    tool,
                    arguments,
                }))
            }
            _ => ToolCall::parse(name, value).map(Call::Tool).map_err(fail),
        }
    }
}

/// read_file's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadFileOutput {
    /// The text read (empty for a binary file).
    pub content: String,
    /// The file's size in bytes.
    pub size: u64,
    /// The byte offset the content starts at (a character boundary).
    pub offset: u64,
    /// The 1-based line the content starts on, when known.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub first_line: Option<u64>,
    /// Where to read on from, when there is more.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u64>,
    /// The line to read on from, when there is more and the content ends a line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_line: Option<u64>,
    /// The file's lines (a last line with no newline counts), when known.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub total_lines: Option<u64>,
    /// True for a binary file.
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub binary: bool,
    /// In words, what the model should know of this read (a binary file's
    /// content is not shown, and how to look at it instead).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub note: Option<String>,
}

/// grep's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrepOutput {
    /// `path:line:text`, in path order.
    pub matches: Vec<String>,
    /// True when it stopped at the limit.
    pub truncated: bool,
    /// When truncated, the line that says where it stopped.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub note: Option<String>,
    /// How many files and folders it left out unsearched because they are
    /// hidden from the tools (`deny_read` paths, credential stores).
    #[serde(skip_serializing_if = "is_zero", default)]
    pub hidden: u64,
}

/// list_dir's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListDirOutput {
    /// The names, sorted; folders end in `/`, links read `name -> target`.
    pub entries: Vec<String>,
    /// How many names were left out past the limit.
    pub omitted: u64,
    /// How many names it left out because they are hidden from the tools
    /// (`deny_read` paths, credential stores).
    #[serde(skip_serializing_if = "is_zero", default)]
    pub hidden: u64,
}

/// write_file's and search_replace's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteOutput {
    /// The resolved absolute path that was written.
    pub path: String,
    /// The bytes written.
    pub bytes: u64,
    /// Who runs the file later, when another tool does (its card said so too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs_later: Option<String>,
}

/// run's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunOutput {
    /// The exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    /// True when the timeout ended it.
    pub timed_out: bool,
    /// stdout, head and tail.
    pub stdout: String,
    /// stderr, head and tail.
    pub stderr: String,
    /// Bytes of stdout cut from the middle.
    pub stdout_cut: u64,
    /// Bytes of stderr cut from the middle.
    pub stderr_cut: u64,
    /// How long it ran.
    pub duration_ms: u64,
    /// What it sent and received through Wicket, host by host.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub net: Vec<NetUse>,
    /// The files it created or changed that another tool runs later
    /// (`Makefile`, `sub/.envrc`: [`crate::guarded::runs_later`]), relative
    /// to the workspace, in path order, at most ten: what the jail's scan
    /// after the command found, reported by the jail itself, not read from
    /// the command's output. Empty outside the jail's tree.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs_later: Vec<String>,
    /// What the model should know to do next, when the jail is the likely
    /// reason it failed (no network, a read-only `.git`, the timeout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One host a command reached through Wicket, and the bytes each way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetUse {
    /// The host, as rules name it.
    pub host: String,
    /// The port.
    pub port: u16,
    /// Bytes it sent to the host.
    pub sent: u64,
    /// Bytes it received from the host.
    pub received: u64,
}

impl RunOutput {
    /// What it sent where, a line a host: `sent 1.2 MB to example.com:443
    /// (received 3.4 kB)`, for every front end.
    pub fn net_lines(&self) -> Vec<String> {
        self.net.iter().map(NetUse::line).collect()
    }
}

impl NetUse {
    /// `sent 1.2 MB to example.com:443 (received 3.4 kB)`, as every front end says it.
    pub fn line(&self) -> String {
        format!(
            "sent {} to {}:{} (received {})",
            crate::summary::bytes(self.sent),
            self.host,
            self.port,
            crate::summary::bytes(self.received)
        )
    }
}

/// ask's result: what the person said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplyOutput {
    /// The person's reply.
    pub reply: String,
}

/// finish's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FinishOutput {
    /// The turn's result.
    pub result: String,
}

/// use_skill's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillOutput {
    /// The skill's name.
    pub name: String,
    /// The body of its SKILL.md.
    pub instructions: String,
}

/// One piece of an MCP tool's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum McpContent {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64.
    Image {
        /// Base64 bytes.
        data: String,
        /// Its MIME type.
        mime_type: String,
    },
    /// Audio, base64.
    Audio {
        /// Base64 bytes.
        data: String,
        /// Its MIME type.
        mime_type: String,
    },
    /// A link to a resource.
    ResourceLink {
        /// Its URI.
        uri: String,
        /// Its name.
        #[serde(default)]
        name: String,
    },
    /// An embedded resource: its text, or that it is binary.
    Resource {
        /// Its URI.
        uri: String,
        /// The text, when it is text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
}

/// An MCP tool's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpOutput {
    /// The server.
    pub server: String,
    /// The tool on the server.
    pub tool: String,
    /// What it returned.
    pub content: Vec<McpContent>,
    /// Its structured content, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<serde_json::Value>,
}

impl McpOutput {
    /// What the model is given: [`McpOutput::full_text`] cut to
    /// [`RUN_STREAM_MAX_BYTES`] head and tail, as `run` output is. The log
    /// keeps the whole result.
    pub fn model_text(&self) -> String {
        crate::text::head_tail(&self.full_text(), RUN_STREAM_MAX_BYTES)
    }

    /// The text blocks, a line for each image, sound or link, and the
    /// structured content when no text stands for it.
    pub fn full_text(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        for block in &self.content {
            parts.push(match block {
                McpContent::Text { text } => text.clone(),
                McpContent::Image { data, mime_type } => format!(
                    "[an image ({mime_type}, {} bytes of base64); this conversation takes text only, so it is not shown]",
                    data.len()
                ),
                McpContent::Audio { data, mime_type } => format!(
                    "[audio ({mime_type}, {} bytes of base64), not shown]",
                    data.len()
                ),
                McpContent::ResourceLink { uri, name } => format!("[resource link: {uri} ({name})]"),
                McpContent::Resource { uri, text } => match text {
                    Some(text) => format!("[resource {uri}]\n{text}"),
                    None => format!("[resource {uri}: binary, not shown]"),
                },
            });
        }
        let has_text = self
            .content
            .iter()
            .any(|block| matches!(block, McpContent::Text { .. }));
        if let (Some(structured), false) = (&self.structured, has_text) {
            parts.push(structured.to_string());
        }
        parts.join("\n")
    }
}

/// What a call returns when it ran. The wire shape is the output's own
/// fields, so the variants are told apart by the fields they require.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolOutput {
    /// read_file
    ReadFile(ReadFileOutput),
    /// grep
    Grep(GrepOutput),
    /// list_dir
    ListDir(ListDirOutput),
    /// write_file, search_replace
    Write(WriteOutput),
    /// run
    Run(RunOutput),
    /// ask
    Reply(ReplyOutput),
    /// task: before finish, whose one field it also has
    Task(TaskOutput),
    /// finish
    Finish(FinishOutput),
    /// use_skill
    Skill(SkillOutput),
    /// an MCP tool
    Mcp(McpOutput),
    /// run, previewed: what it changed, and whether that was applied
    Preview(PreviewOutput),
    /// propose_plan, approved
    Plan(PlanOutput),
}

/// A sub-task's end: its session, and what its finish said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskOutput {
    /// The sub-task: its session and description.
    pub task: crate::card::TaskRef,
    /// What its finish said (or its last reply).
    pub result: String,
    /// Its tokens and cost, added to this turn's and shown apart here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<crate::event::Usage>,
    /// Its calls that were denied (by the person, a rule, a hook or a
    /// policy): what `--fail-on-deny` counts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub denied: Vec<TaskDenial>,
}

/// A call of a sub-task that was denied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskDenial {
    /// The call, in the sub-task's session.
    pub call_id: crate::ids::CallId,
    /// Why, as the sub-task's model read it.
    pub why: String,
}

/// An approved plan: the turn goes on with every tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanOutput {
    /// Always `approved` (a denied plan is an error the model reads).
    pub plan: String,
    /// What to do now.
    pub next: String,
}

/// A previewed command's result: how it ended, what it changed over the
/// overlay, and whether the person applied that to the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreviewOutput {
    /// `applied` or `discarded`.
    pub preview: PreviewOutcome,
    /// How it ended.
    pub exit_code: Option<i32>,
    /// stdout, head and tail.
    pub stdout: String,
    /// stderr, head and tail.
    pub stderr: String,
    /// What it changed (diffs left out: the person saw them).
    pub changes: Vec<crate::card::Effect>,
    /// Changes that could not be applied, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<String>,
    /// What to know next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What became of a preview's changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PreviewOutcome {
    /// Written into the workspace.
    Applied,
    /// Thrown away: the workspace is as it was.
    Discarded,
}

/// What a call is about, in a few words, for every front end's one-line
/// view of it: a run's argv, a grep's pattern and path, a question, a
/// skill's name, else the path. Raw text: a printer makes it visible.
pub fn call_summary(name: &str, arguments: &serde_json::Value) -> String {
    let field = |key: &str| arguments.get(key).and_then(|v| v.as_str());
    match name {
        "run" => arguments
            .get("argv")
            .and_then(|argv| argv.as_array())
            .map(|argv| {
                let argv: Vec<&str> = argv.iter().map(|arg| arg.as_str().unwrap_or("?")).collect();
                crate::text::shell_words(&argv)
            })
            .unwrap_or_default(),
        "grep" => format!(
            "{:?} {}",
            field("pattern").unwrap_or(""),
            field("path").unwrap_or("")
        )
        .trim_end()
        .to_string(),
        "ask" => field("question").unwrap_or("").to_string(),
        "finish" => String::new(),
        "use_skill" => field("name").unwrap_or("").to_string(),
        "task" => format!(
            "{} ({})",
            field("description").unwrap_or(""),
            field("tools").unwrap_or("read")
        ),
        "propose_plan" => String::new(),
        _ => field("path").unwrap_or(".").to_string(),
    }
}

/// The result line of `wicket tool`: `{"type":"result","ok":true,...}` or
/// `{"type":"result","ok":false,"error":{...}}`.
pub fn result_line(result: &Result<ToolOutput, WireError>) -> serde_json::Value {
    match result {
        Ok(output) => match serde_json::to_value(output) {
            Ok(serde_json::Value::Object(mut map)) => {
                map.insert("ok".into(), true.into());
                map.insert("type".into(), "result".into());
                serde_json::Value::Object(map)
            }
            // Every output is an object; one that is not, or cannot be
            // encoded, is said as what it is rather than as nothing.
            Ok(other) => serde_json::json!({ "type": "result", "ok": true, "output": other }),
            Err(error) => serde_json::json!({
                "type": "result",
                "ok": true,
                "output": format!("(the output could not be encoded as JSON: {error})"),
            }),
        },
        Err(error) => serde_json::json!({ "type": "result", "ok": false, "error": error }),
    }
}

/// An error that names the kind, for a call that never reached a tool.
pub fn cancelled(message: &str) -> WireError {
    WireError::new(ErrorKind::Cancelled, message)
}

#[cfg(test)]
mod tests;
