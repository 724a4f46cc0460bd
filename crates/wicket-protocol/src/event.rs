//! One line of `log.jsonl`: [`Event`], with its [`EventBody`].

use serde::{Deserialize, Serialize};

use crate::card::{Answer, Card};
use crate::error::WireError;
use crate::ids::{CallId, CardId, QuestionId};
use crate::tools::ToolOutput;

/// A tool call as the model made it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallRequest {
    /// The model's id for the call.
    pub id: CallId,
    /// The tool's name.
    pub name: String,
    /// The raw JSON text of the arguments; it may not even be JSON.
    pub arguments: String,
}

/// Why a reply ended: the providers' words, read once here so that no
/// caller matches their strings.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StopReason {
    /// The model ended its reply (`stop`, `end_turn`, `stop_sequence`).
    EndTurn,
    /// It stopped to have its tool calls run (`tool_calls`, `tool_use`, `function_call`).
    ToolUse,
    /// The output limit cut it (`length`, `max_tokens`).
    MaxTokens,
    /// The provider's filter stopped it (`content_filter`, `refusal`).
    ContentFilter,
    /// A word this client does not know, as the provider sent it.
    Other(String),
}

impl StopReason {
    /// The reason a provider's word stands for.
    pub fn from_provider(word: &str) -> StopReason {
        match word {
            "stop" | "end_turn" | "stop_sequence" | "eos" => StopReason::EndTurn,
            "tool_calls" | "tool_use" | "function_call" => StopReason::ToolUse,
            "length" | "max_tokens" | "model_context_window_exceeded" => StopReason::MaxTokens,
            "content_filter" | "refusal" => StopReason::ContentFilter,
            other => StopReason::Other(other.to_string()),
        }
    }

    /// As the log records it: one word for each reason, whichever provider sent it.
    pub fn as_str(&self) -> &str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::ToolUse => "tool_use",
            StopReason::MaxTokens => "max_tokens",
            StopReason::ContentFilter => "content_filter",
            StopReason::Other(word) => word,
        }
    }
}

impl Serialize for StopReason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for StopReason {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let word = String::deserialize(deserializer)?;
        Ok(StopReason::from_provider(&word))
    }
}

/// Tokens a reply (or a turn, or a session) used, and what they cost.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct Usage {
    /// Input tokens, all of them (cached ones included).
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the provider's prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_read_input_tokens: u64,
    /// Input tokens written to the provider's prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_creation_input_tokens: u64,
    /// What they cost in US dollars, when the model's prices are known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// How full the model's context window was after this reply, in percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_used_percent: Option<f64>,
}

pub(crate) fn is_zero(value: &u64) -> bool {
    *value == 0
}

impl Usage {
    /// Input tokens neither read from nor written to the prompt cache
    /// (`input_tokens` counts both).
    pub fn uncached_input_tokens(&self) -> u64 {
        let cached = self
            .cache_read_input_tokens
            .saturating_add(self.cache_creation_input_tokens);
        self.input_tokens.saturating_sub(cached)
    }

    /// Adds another reply's tokens and cost (the context figure is the latest).
    pub fn add(&mut self, other: &Usage) {
        let fresh = self.input_tokens == 0 && self.output_tokens == 0 && self.cost_usd.is_none();
        let other_empty = other.input_tokens == 0 && other.output_tokens == 0;
        self.cost_usd = match (self.cost_usd, other.cost_usd) {
            (Some(a), Some(b)) => Some(a + b),
            (None, cost) if fresh => cost,
            (cost, None) if other_empty => cost,
            // Part of the sum has no price: no made-up total.
            _ => None,
        };
        // The counts come from a server: summed without overflow.
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_input_tokens = self
            .cache_read_input_tokens
            .saturating_add(other.cache_read_input_tokens);
        self.cache_creation_input_tokens = self
            .cache_creation_input_tokens
            .saturating_add(other.cache_creation_input_tokens);
        if other.context_used_percent.is_some() {
            self.context_used_percent = other.context_used_percent;
        }
    }
}

/// A hook's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookOutcome {
    /// Exit 0 with nothing to say against the call.
    Pass,
    /// Exit 2, or `"decision": "block"`, or a PreToolUse `deny`: its reason
    /// goes back to the model (to the person, for a prompt).
    Block,
    /// It failed (another exit, a signal, a timeout, bad output): its
    /// `on_error` says whether that blocks (the default for PreToolUse,
    /// UserPromptSubmit and Stop) or is ignored.
    Error,
    /// A workspace-declared hook the person did not allow to run: skipped.
    Denied,
    /// A PreToolUse `allow`: the call skips its card (a home hook only).
    Allow,
    /// A PreToolUse `ask`: the call raises its card even where a rule or a grant would pass it.
    Ask,
}

impl HookOutcome {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            HookOutcome::Pass => "pass",
            HookOutcome::Block => "block",
            HookOutcome::Error => "error",
            HookOutcome::Denied => "denied",
            HookOutcome::Allow => "allow",
            HookOutcome::Ask => "ask",
        }
    }
}

/// A hook's run in one line, as every front end shows it:
/// `PreToolUse hook no-rm: block (12 ms): rm is not allowed here`. The
/// caller makes it visible.
pub fn hook_line(
    event: HookEvent,
    name: &str,
    outcome: HookOutcome,
    duration_ms: Option<u64>,
    stderr: &str,
) -> String {
    let took = duration_ms.map_or(String::new(), |ms| format!(" ({ms} ms)"));
    let said = stderr
        .lines()
        .find(|line| !line.trim().is_empty())
        .unwrap_or("");
    let said: String = said.chars().take(200).collect();
    let said = if said.is_empty() {
        String::new()
    } else {
        format!(": {said}")
    };
    format!(
        "{} hook {name}: {}{took}{said}",
        event.as_str(),
        outcome.as_str()
    )
}

/// What a rewind changed: paths below the workspace root.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewoundFiles {
    /// Written back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restored: Vec<String>,
    /// Made again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub created: Vec<String>,
    /// Removed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deleted: Vec<String>,
    /// Left as they are, each `path: why`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_restored: Vec<String>,
    /// Paths the lists leave out (each names at most `REWOUND_MAX_PATHS`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more: u64,
}

impl RewoundFiles {
    /// The lists with their labels, in order, in the words of the plan
    /// the person said yes to (`restore`, `remove`, `keep`).
    pub fn lists(&self) -> [(&'static str, &[String]); 4] {
        [
            ("restored", &self.restored),
            ("put back", &self.created),
            ("removed", &self.deleted),
            ("kept", &self.not_restored),
        ]
    }

    /// The rewind to before event `to` in one line, as every front end
    /// shows it: `rewound to before event 12: restored a.txt; removed d/e, d`.
    /// The caller makes it visible.
    pub fn line(&self, to: u64) -> String {
        let mut line = format!("rewound to before event {to}:");
        let mut any = false;
        for (label, paths) in self.lists() {
            if !paths.is_empty() {
                line.push_str(&format!(
                    "{} {label} {}",
                    if any { ";" } else { "" },
                    paths.join(", ")
                ));
                any = true;
            }
        }
        if !any {
            line.push_str(" nothing had changed");
        }
        if self.more > 0 {
            line.push_str(&format!(" (and {} more)", self.more));
        }
        line
    }
}

/// When a hook runs, in Claude Code's names (`hook_event_name` on its stdin).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum HookEvent {
    /// Before a tool call, before the gate decides.
    PreToolUse,
    /// After a tool call, with its result.
    PostToolUse,
    /// When the person sends a message, before the model sees it.
    UserPromptSubmit,
    /// At a session's first turn in this process.
    SessionStart,
    /// When the process lets a session go.
    SessionEnd,
    /// Before a turn may finish.
    #[default]
    Stop,
    /// When a card or a question opens.
    Notification,
}

impl HookEvent {
    /// Claude Code's name.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::SessionStart => "SessionStart",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::Stop => "Stop",
            HookEvent::Notification => "Notification",
        }
    }
}

/// How a turn ended, as its `turn_ended` event says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnOutcome {
    /// A `result`: the model finished (a compaction asked for on its own
    /// ends this way too, after its `compacted`).
    Result,
    /// An `error` ended it.
    Error,
    /// The person cancelled it.
    Cancelled,
    /// The process running it died; the next process to open the session closed it.
    Interrupted,
    /// It reached its step limit.
    StepLimit,
    /// It would have passed a `[limits]` budget.
    Budget,
}

impl TurnOutcome {
    /// Its name in the log.
    pub fn as_str(self) -> &'static str {
        match self {
            TurnOutcome::Result => "result",
            TurnOutcome::Error => "error",
            TurnOutcome::Cancelled => "cancelled",
            TurnOutcome::Interrupted => "interrupted",
            TurnOutcome::StepLimit => "step_limit",
            TurnOutcome::Budget => "budget",
        }
    }

    /// Whether the turn did what was asked.
    pub fn succeeded(self) -> bool {
        self == TurnOutcome::Result
    }
}

/// What an MCP server did, as the log records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpState {
    /// It started and listed its tools.
    Started,
    /// It did not start in time, or failed to.
    Failed,
    /// It died.
    Died,
    /// It was started again after dying.
    Restarted,
    /// The person denied starting it.
    Denied,
}

impl McpState {
    /// Its name in the log.
    pub fn as_str(self) -> &'static str {
        match self {
            McpState::Started => "started",
            McpState::Failed => "failed",
            McpState::Died => "died",
            McpState::Restarted => "restarted",
            McpState::Denied => "denied",
        }
    }
}

/// The body of one `log.jsonl` event; `seq`, `ts` and `type` wrap it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventBody {
    /// The first event of every session.
    SessionStarted(SessionStartedEvent),
    /// A call, with its arguments as the model gave them (a string when
    /// they were not JSON, or nested too deep).
    ToolCall(ToolCallEvent),
    /// A call's result: `"ok": true` and its `output`, or `"ok": false`
    /// and the `error` that kept it from running or ended it.
    ToolResult(ToolResultEvent),
    /// A card went up.
    Card(CardEvent),
    /// The person answered a card.
    Answer(AnswerEvent),
    /// What the person asked; a turn starts with it.
    UserMessage(UserMessageEvent),
    /// One model reply: its text and the tool calls it made, with their raw
    /// argument text exactly as the model sent it.
    AssistantMessage(AssistantMessageEvent),
    /// The model's `ask`: the session waits for a reply.
    Question(QuestionEvent),
    /// The person's reply to a question.
    Reply(ReplyEvent),
    /// The turn's result (from `finish`, or a reply with no tool call),
    /// after the Stop hooks passed; `usage` is the turn's total.
    Result(ResultEvent),
    /// One Stop hook's run: `pass`, `block` (exit 2) or `error` (fail closed).
    Hook(HookRunEvent),
    /// A message sent while a turn ran; it starts when the turn ends.
    Queued(QueuedEvent),
    /// A `task` call started a sub-task: its own session, whose log holds
    /// its calls; its cards come here too, marked with the sub-task.
    Task(TaskEvent),
    /// The chat client is retrying a request.
    Retry(RetryEvent),
    /// The turn was cancelled; every call without a result has a synthetic one before this.
    Cancelled(CancelledEvent),
    /// The process running the turn died (a crash, a kill); the next process
    /// to load the session closed the turn. The card or question it left
    /// open can no longer be answered.
    Interrupted(InterruptedEvent),
    /// The conversation before `to_seq` was summarised to fit the model's window.
    Compacted(CompactedEvent),
    /// What an MCP server did.
    Mcp(McpEvent),
    /// The checkpoint before a write or a command could not be taken, or
    /// holds no copy of some files: a rewind cannot bring those back. The
    /// call's card (if it has one) says the same.
    Checkpoint(CheckpointEvent),
    /// A connection a command made through Wicket's proxy, when it closed:
    /// where it went, the bytes each way, and what allowed it (or why not).
    Net(NetEvent),
    /// The person rewound the workspace's files to how they were before
    /// event `to`. A checkpoint of the files as they were just before this
    /// event was taken first, so `wicket rewind --to` this event's seq
    /// (or `--undo`) takes it back.
    Rewound(RewoundEvent),
    /// Something the person should know that changes nothing in the turn:
    /// a part of the workspace's config that was ignored, and why.
    Notice(NoticeEvent),
    /// Something went wrong.
    Error(ErrorEvent),
    /// The last event of every turn, after its `result`, `error`,
    /// `cancelled` or `interrupted`: a front end knows a turn is over from
    /// this alone.
    TurnEnded(TurnEndedEvent),
    /// A log line that could not be read back (never written as such: the
    /// loader puts it in place of the line, so the session still loads).
    Unreadable(UnreadableEvent),
}

/// The first event of every session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionStartedEvent {
    /// The session id.
    pub session: String,
    /// The workspace.
    pub workspace: String,
}

/// A call, with its arguments as the model gave them (a string when
/// they were not JSON, or nested too deep).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallEvent {
    /// The model's id for the call.
    pub call_id: CallId,
    /// The tool's name.
    pub name: String,
    /// The arguments.
    pub arguments: serde_json::Value,
    /// Set when a rule of the person's own config let the call skip its card.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_allowed: Option<String>,
    /// Why the call went through without a card: a rule, a grant, a hook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_by: Option<crate::rules::AllowedBy>,
}

/// A call's result: `"ok": true` and its `output`, or `"ok": false`
/// and the `error` that kept it from running or ended it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResultEvent {
    /// The call.
    pub call_id: CallId,
    /// What it returned, or why it did not run or failed.
    #[serde(flatten, with = "call_result")]
    pub result: Result<ToolOutput, WireError>,
}

/// A card went up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CardEvent {
    /// The call it is for (a hook's or server's start has its own id).
    pub call_id: CallId,
    /// The card.
    #[serde(flatten)]
    pub card: Card,
    /// Every byte that was proposed for a write, whatever the card shows.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub proposed: Option<String>,
}

/// The person answered a card.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerEvent {
    /// The card's id.
    pub card: CardId,
    /// The answer.
    pub answer: Answer,
    /// True when the file changed after the card went up: the answer was dropped.
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub stale: bool,
    /// The rule an `allow_always` saved.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub rule: Option<crate::ids::RuleId>,
    /// Why the person denied, when they said (the model reads it too).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reason: Option<String>,
}

/// What the person asked; a turn starts with it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserMessageEvent {
    /// The message.
    pub text: String,
    /// Its turn started in plan mode: only reads, ask, finish and propose_plan.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub plan: bool,
}

/// One model reply: its text and the tool calls it made, with their raw
/// argument text exactly as the model sent it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssistantMessageEvent {
    /// The text.
    pub text: String,
    /// The calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallRequest>,
    /// Its tokens; `null` when the server reported none (unknown, not 0).
    #[serde(default)]
    pub usage: Option<Usage>,
    /// The provider's reason for ending the reply, when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
}

/// The model's `ask`: the session waits for a reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionEvent {
    /// Unique for the life of the session.
    pub id: QuestionId,
    /// The `ask` call.
    pub call_id: CallId,
    /// The question.
    pub question: String,
}

/// The person's reply to a question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplyEvent {
    /// The question's id.
    pub question: QuestionId,
    /// The reply.
    pub reply: String,
}

/// The turn's result (from `finish`, or a reply with no tool call),
/// after the Stop hooks passed; `usage` is the turn's total.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultEvent {
    /// The result.
    pub text: String,
    /// The turn's tokens and cost; `null` when no reply of the turn
    /// had its usage reported.
    #[serde(default)]
    pub usage: Option<Usage>,
}

/// One Stop hook's run: `pass`, `block` (exit 2) or `error` (fail closed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookRunEvent {
    /// When it ran (Stop for logs written before there were others).
    #[serde(default)]
    pub event: HookEvent,
    /// Its name in the config (its argv when it has none).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The call it judged: a tool call's for PreToolUse and PostToolUse,
    /// the `finish` call's for Stop; none for a Stop after a reply with
    /// no tool call (then a block goes back as a user message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<CallId>,
    /// The hook's argv.
    pub command: Vec<String>,
    /// Its verdict.
    pub outcome: HookOutcome,
    /// Its exit code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// How long it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Its stderr, or its reason (for a block, what the model reads).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stderr: String,
    /// The head of its stdout.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stdout: String,
    /// Its `additionalContext`: a note the model reads beside the call's
    /// result (PostToolUse) or the person's message (UserPromptSubmit, SessionStart).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// It failed, and its `on_error = "ignore"` let what it guarded go on.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ignored: bool,
}

/// A message sent while a turn ran; it starts when the turn ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueuedEvent {
    /// The message.
    pub text: String,
}

/// A sub-task started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskEvent {
    /// The `task` call that started it.
    pub call_id: CallId,
    /// Its session.
    pub session: String,
    /// What it is for.
    pub description: String,
    /// The tools it is offered.
    pub tools: crate::tools::TaskTools,
}

/// The chat client is retrying a request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetryEvent {
    /// The attempt about to start.
    pub attempt: u32,
    /// The wait before it.
    pub delay_ms: u64,
    /// Why.
    pub reason: String,
}

/// The turn was cancelled; every call without a result has a synthetic one before this.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CancelledEvent {}

/// The process running the turn died (a crash, a kill); the next process
/// to load the session closed the turn. The card or question it left
/// open can no longer be answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InterruptedEvent {
    /// The card left open, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card: Option<CardId>,
    /// The question left open, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<QuestionId>,
}

/// The conversation before `to_seq` was summarised to fit the model's window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactedEvent {
    /// The model's summary of events `from_seq..=to_seq`.
    pub summary: String,
    /// The first event it stands for.
    pub from_seq: u64,
    /// The last event it stands for.
    pub to_seq: u64,
    /// The estimated tokens of the conversation before.
    pub tokens_before: u64,
    /// The estimated tokens after.
    pub tokens_after: u64,
    /// What the summary itself cost.
    #[serde(default)]
    pub usage: Usage,
}

/// What an MCP server did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpEvent {
    /// The server's name.
    pub server: String,
    /// What happened.
    pub state: McpState,
    /// Details: why it failed, how many tools it offers.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// The checkpoint before a write or a command could not be taken, or
/// holds no copy of some files: a rewind cannot bring those back. The
/// call's card (if it has one) says the same.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckpointEvent {
    /// The call it came before.
    pub call_id: CallId,
    /// What has no copy, and why.
    pub message: String,
}

/// One connection through Wicket's proxy, as it closed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetEvent {
    /// The `run` call whose command made it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<CallId>,
    /// The MCP server that made it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The host, as rules name it.
    pub host: String,
    /// The port.
    pub port: u16,
    /// The address it went to (none when it was refused or never connected).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// The name resolved to a local address (loopback, private, link-local).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub local: bool,
    /// Bytes written to the host.
    pub sent: u64,
    /// Bytes read from the host.
    pub received: u64,
    /// What let it through: a rule, a grant, or a card's answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_by: Option<crate::AllowedBy>,
    /// Why it reached nothing: refused, a name that does not resolve, a
    /// connection that failed, a request Wicket could not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// How long it was open.
    pub duration_ms: u64,
}

/// The person rewound the workspace's files to how they were before
/// event `to`. A checkpoint of the files as they were just before this
/// event was taken first, so `wicket rewind --to` this event's seq
/// (or `--undo`) takes it back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RewoundEvent {
    /// The files are as they were just before this event.
    pub to: u64,
    /// What it changed, and what it could not.
    #[serde(flatten)]
    pub files: RewoundFiles,
}

/// Something the person should know that changes nothing in the turn:
/// a part of the workspace's config that was ignored, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoticeEvent {
    /// What, why, and what to do if the person wants it otherwise.
    pub message: String,
    /// The file it is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The key or table it is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The call whose result it adds to (a folder's instructions, read
    /// when a call first reached that folder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<CallId>,
    /// What the model reads with that result (the notice's own words are
    /// for the person).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// The key of the notice that says how far the whole walk of a
/// checkpoint still being taken got (a large workspace's first): sent
/// every second while a card is up over it, so front ends show the
/// newest on the open card and keep one line of it in the transcript.
pub const CHECKPOINT_WALK: &str = "checkpoint_walk";

impl NoticeEvent {
    /// Whether it says how far a checkpoint's walk got ([`CHECKPOINT_WALK`]).
    pub fn is_walk(&self) -> bool {
        self.key.as_deref() == Some(CHECKPOINT_WALK)
    }
}

/// Something went wrong.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorEvent {
    /// What, and what to do.
    pub message: String,
    /// True when this error ended the turn.
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub ends_turn: bool,
}

/// The last event of every turn, after its `result`, `error`,
/// `cancelled` or `interrupted`: a front end knows a turn is over from
/// this alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnEndedEvent {
    /// How it ended.
    pub outcome: TurnOutcome,
}

/// A log line that could not be read back (never written as such: the
/// loader puts it in place of the line, so the session still loads).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnreadableEvent {
    /// The line's number in the file.
    pub line: u64,
    /// Why it could not be read.
    pub error: String,
}

/// A call's result on the wire: `ok` beside `output` or `error`, as
/// every log since the first has it. A line with `ok` and no `output` (or
/// no `ok` and no `error`) reads as the failure it must have been.
mod call_result {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::error::{ErrorKind, WireError};
    use crate::tools::ToolOutput;

    #[derive(Serialize)]
    struct Written<'a> {
        ok: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        output: Option<&'a ToolOutput>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<&'a WireError>,
    }

    #[derive(Deserialize)]
    struct Read {
        ok: bool,
        #[serde(default)]
        output: Option<ToolOutput>,
        #[serde(default)]
        error: Option<WireError>,
    }

    pub(super) fn serialize<S: Serializer>(
        result: &Result<ToolOutput, WireError>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match result {
            Ok(output) => Written {
                ok: true,
                output: Some(output),
                error: None,
            },
            Err(error) => Written {
                ok: false,
                output: None,
                error: Some(error),
            },
        }
        .serialize(serializer)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Result<ToolOutput, WireError>, D::Error> {
        let wire = Read::deserialize(deserializer)?;
        Ok(match (wire.ok, wire.output, wire.error) {
            (true, Some(output), _) => Ok(output),
            (_, _, Some(error)) => Err(error),
            (true, None, None) => Err(WireError::new(
                ErrorKind::Io,
                "the log records this call as done but holds no output for it",
            )),
            (false, _, None) => Err(WireError::new(
                ErrorKind::Io,
                "the log records this call as failed but holds no error for it",
            )),
        })
    }
}

impl EventBody {
    /// Every kind of event, by its `type` on the wire, in declaration order.
    pub const KINDS: [&'static str; 25] = [
        "session_started",
        "tool_call",
        "tool_result",
        "card",
        "answer",
        "user_message",
        "assistant_message",
        "question",
        "reply",
        "result",
        "hook",
        "queued",
        "retry",
        "cancelled",
        "interrupted",
        "compacted",
        "mcp",
        "checkpoint",
        "net",
        "rewound",
        "notice",
        "error",
        "turn_ended",
        "unreadable",
        "task",
    ];

    /// Its `type` on the wire; the match is exhaustive, so a new kind is
    /// named here (and in [`EventBody::KINDS`]) before it compiles.
    pub fn kind(&self) -> &'static str {
        match self {
            EventBody::SessionStarted(SessionStartedEvent { .. }) => "session_started",
            EventBody::ToolCall(ToolCallEvent { .. }) => "tool_call",
            EventBody::ToolResult(ToolResultEvent { .. }) => "tool_result",
            EventBody::Card(CardEvent { .. }) => "card",
            EventBody::Answer(AnswerEvent { .. }) => "answer",
            EventBody::UserMessage(UserMessageEvent { .. }) => "user_message",
            EventBody::AssistantMessage(AssistantMessageEvent { .. }) => "assistant_message",
            EventBody::Question(QuestionEvent { .. }) => "question",
            EventBody::Reply(ReplyEvent { .. }) => "reply",
            EventBody::Result(ResultEvent { .. }) => "result",
            EventBody::Hook(HookRunEvent { .. }) => "hook",
            EventBody::Queued(QueuedEvent { .. }) => "queued",
            EventBody::Task(TaskEvent { .. }) => "task",
            EventBody::Retry(RetryEvent { .. }) => "retry",
            EventBody::Cancelled(CancelledEvent { .. }) => "cancelled",
            EventBody::Interrupted(InterruptedEvent { .. }) => "interrupted",
            EventBody::Compacted(CompactedEvent { .. }) => "compacted",
            EventBody::Mcp(McpEvent { .. }) => "mcp",
            EventBody::Checkpoint(CheckpointEvent { .. }) => "checkpoint",
            EventBody::Net(NetEvent { .. }) => "net",
            EventBody::Rewound(RewoundEvent { .. }) => "rewound",
            EventBody::Notice(NoticeEvent { .. }) => "notice",
            EventBody::Error(ErrorEvent { .. }) => "error",
            EventBody::TurnEnded(TurnEndedEvent { .. }) => "turn_ended",
            EventBody::Unreadable(UnreadableEvent { .. }) => "unreadable",
        }
    }

    /// An error that does not end the turn.
    pub fn error(message: impl Into<String>) -> EventBody {
        EventBody::Error(ErrorEvent {
            message: message.into(),
            ends_turn: false,
        })
    }
}

/// One line of `log.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// 1, 2, 3, …: one more per line.
    pub seq: u64,
    /// RFC 3339.
    pub ts: String,
    /// The event itself.
    #[serde(flatten)]
    pub body: EventBody,
}
